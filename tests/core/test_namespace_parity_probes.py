"""``ember.Size``'s element checks, ``iinfo``'s refusals and the device-index message, as
PyTorch's (found by differential probes)."""

import re

import numpy as np
import pytest

import ember


def test_size_takes_ints_and_index_likes():
    assert ember.Size([np.int64(2), True, ember.tensor(3), ember.tensor([4])]) == (2, 1, 3, 4)
    assert all(type(s) is int for s in ember.Size([ember.tensor(2), True]))
    assert ember.Size([-1]) == (-1,) and ember.Size(()) == ()


@pytest.mark.parametrize("sizes, item, name", [
    ([2.5], 0, "float"), ([2, None], 1, "NoneType"), ("ab", 0, "str"),
    ([ember.tensor(2.0)], 0, "Tensor"),
])
def test_size_refuses_non_integers(sizes, item, name):
    with pytest.raises(TypeError, match=re.escape(
            f"Size() takes an iterable of 'int' (item {item} is '{name}')")):
        ember.Size(sizes)


def test_iinfo_refusals():
    with pytest.raises(TypeError, match=re.escape(
            "torch.iinfo() requires an integer input type. Use torch.finfo to handle "
            "'torch.iinfo'")):
        ember.iinfo(ember.float32)
    with pytest.raises(TypeError, match=re.escape("torch.bool is not supported by torch.iinfo")):
        ember.iinfo(ember.bool)
    assert ember.iinfo(ember.uint8).max == 255


def test_negative_device_index_message():
    for args in ((-1,), ("cuda", -1)):
        with pytest.raises(RuntimeError, match=r"^Device index must not be negative$"):
            ember.device(*args)


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    for mod in (torch, ember):
        with pytest.raises(TypeError) as info:
            mod.Size([2.5])
        msg = str(info.value).replace("torch.", "").replace("ember.", "")
        if mod is torch:
            want = msg
    assert msg == want
