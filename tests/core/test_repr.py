"""``repr``/``str`` of tensors: PyTorch's exact text (written out here; the PyTorch
comparison itself lives in tests/parity/test_factory_repr.py)."""

import numpy as np
import pytest

import ember
from ember._tensor_str import get_printoptions, printoptions


@pytest.fixture(autouse=True)
def _default_printoptions():
    ember.set_printoptions(profile="default")
    yield
    ember.set_printoptions(profile="default")


@pytest.mark.parametrize("data,dtype,text", [
    ([1, 2, 3], None, "tensor([1, 2, 3])"),
    ([-1, 100], None, "tensor([ -1, 100])"),
    ([True, False], None, "tensor([ True, False])"),
    ([1.0, 2.0], None, "tensor([1., 2.])"),
    ([0.0, 100.0], None, "tensor([  0., 100.])"),
    ([-0.0], None, "tensor([-0.])"),
    ([1.5, 2.25], None, "tensor([1.5000, 2.2500])"),
    ([1.12345], None, "tensor([1.1235])"),
    ([0.0, 0.0], None, "tensor([0., 0.])"),
    ([float("nan"), 1.0], None, "tensor([nan, 1.])"),
    ([1.5, float("inf")], None, "tensor([1.5000,    inf])"),
    ([float("-inf"), 2.0], None, "tensor([-inf, 2.])"),
    ([1e-5, 1.0], None, "tensor([1.0000e-05, 1.0000e+00])"),
    ([0.1, 100.0], None, "tensor([  0.1000, 100.0000])"),
    ([0.1, 1000.0], None, "tensor([1.0000e-01, 1.0000e+03])"),
    ([123456789.0], None, "tensor([1.2346e+08])"),
    ([1e8, 1.0], None, "tensor([1.0000e+08, 1.0000e+00])"),
    ([[1.0, 2.0], [3.0, 4.0]], None, "tensor([[1., 2.],\n        [3., 4.]])"),
    ([[[1, 2], [3, 4]], [[5, 6], [7, 8]]], None,
     "tensor([[[1, 2],\n         [3, 4]],\n\n        [[5, 6],\n         [7, 8]]])"),
    (3, None, "tensor(3)"),
    (3.5, None, "tensor(3.5000)"),
    (True, None, "tensor(True)"),
    (float("nan"), None, "tensor(nan)"),
    ([1, 2], ember.int32, "tensor([1, 2], dtype=ember.int32)"),
    ([1, 2], ember.float64, "tensor([1., 2.], dtype=ember.float64)"),
    ([1.5], ember.float16, "tensor([1.5000], dtype=ember.float16)"),
    ([200], ember.uint8, "tensor([200], dtype=ember.uint8)"),
    (5, ember.int16, "tensor(5, dtype=ember.int16)"),
    ([], None, "tensor([])"),
    ([], ember.int64, "tensor([], dtype=ember.int64)"),
    ([], ember.bool, "tensor([], dtype=ember.bool)"),
    ([[]], None, "tensor([], size=(1, 0))"),
])
def test_repr(data, dtype, text):
    t = ember.tensor(data, dtype=dtype)
    assert repr(t) == text and str(t) == text


def test_repr_of_empty_shapes():
    assert repr(ember.zeros(0, 3)) == "tensor([], size=(0, 3))"
    assert repr(ember.zeros(2, 0, 1, dtype=ember.int64)) == \
        "tensor([], size=(2, 0, 1), dtype=ember.int64)"


def test_repr_wraps_long_rows():
    t = ember.arange(30.0) / 7
    assert repr(t) == (
        "tensor([0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000, 1.1429,\n"
        "        1.2857, 1.4286, 1.5714, 1.7143, 1.8571, 2.0000, 2.1429, 2.2857, 2.4286,\n"
        "        2.5714, 2.7143, 2.8571, 3.0000, 3.1429, 3.2857, 3.4286, 3.5714, 3.7143,\n"
        "        3.8571, 4.0000, 4.1429])")


def test_repr_summarises_above_the_threshold():
    assert repr(ember.arange(2000)) == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"
    text = repr(ember.arange(2000.0).reshape(20, 100))
    lines = text.split("\n")
    assert lines[0] == ("tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 9.7000e+01, "
                        "9.8000e+01,")
    assert lines[1] == "         9.9000e+01],"
    assert "        ...," in lines
    assert lines[-1] == "         1.9990e+03]])"
    # 1000 elements exactly is not summarised
    assert "..." not in repr(ember.arange(1000))


def test_repr_summary_width_comes_from_the_shown_elements():
    a = np.zeros(2000, dtype=np.int64)
    a[1000] = 10 ** 9  # hidden in the summary: does not widen the shown elements
    assert repr(ember.from_numpy(a)) == "tensor([0, 0, 0,  ..., 0, 0, 0])"


def test_repr_suffixes(testdev):
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    assert repr(x) == "tensor([1., 2.], requires_grad=True)"
    assert repr(x * 2) == "tensor([2., 4.], grad_fn=<MulBackward0>)"
    y = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True) + 1
    assert repr(y) == "tensor([2., 3.], dtype=ember.float64, grad_fn=<AddBackward0>)"
    assert repr(ember.tensor([1, 2], device=testdev)) == "tensor([1, 2], device='testdev:0')"
    assert repr(ember.tensor([1.5], dtype=ember.float64, device=ember.device("testdev", 1))) \
        == "tensor([1.5000], device='testdev:1', dtype=ember.float64)"
    assert repr(ember.zeros(0, device=testdev)) == "tensor([], device='testdev:0')"
    assert repr(ember.zeros(0, requires_grad=True)) == "tensor([], requires_grad=True)"


def test_suffixes_wrap_at_the_line_width():
    t = ember.arange(20, dtype=ember.int32)
    assert repr(t) == ("tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, "
                       "15, 16, 17,\n        18, 19], dtype=ember.int32)")
    u = ember.arange(17, dtype=ember.int32)
    assert repr(u) == ("tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, "
                       "15, 16],\n       dtype=ember.int32)")


def test_default_dtype_changes_the_suffix():
    ember.set_default_dtype(ember.float64)
    try:
        assert repr(ember.tensor([1.5])) == "tensor([1.5000])"
        assert repr(ember.tensor([1.5], dtype=ember.float32)) == \
            "tensor([1.5000], dtype=ember.float32)"
        assert repr(ember.zeros(0, dtype=ember.float32)) == "tensor([], dtype=ember.float32)"
    finally:
        ember.set_default_dtype(ember.float32)


def test_set_printoptions():
    ember.set_printoptions(precision=2)
    assert repr(ember.tensor([1.12345])) == "tensor([1.12])"
    ember.set_printoptions(threshold=5)
    assert repr(ember.arange(10)) == "tensor([0, 1, 2,  ..., 7, 8, 9])"
    ember.set_printoptions(edgeitems=1)
    assert repr(ember.arange(10)) == "tensor([0,  ..., 9])"
    ember.set_printoptions(profile="default")
    assert repr(ember.tensor([1.12345])) == "tensor([1.1235])"
    assert repr(ember.arange(10)) == "tensor([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])"


def test_sci_mode_and_linewidth():
    ember.set_printoptions(sci_mode=True)
    assert repr(ember.tensor([1.0, 2.5])) == "tensor([1.0000e+00, 2.5000e+00])"
    ember.set_printoptions(sci_mode=False)
    assert repr(ember.tensor([1e-5, 1.0])) == "tensor([0.0000, 1.0000])"
    ember.set_printoptions(linewidth=20)
    assert repr(ember.arange(6)) == "tensor([0, 1, 2, 3,\n        4, 5])"
    ember.set_printoptions(sci_mode=None, linewidth=80)


def test_profiles_and_edgeitems_zero():
    ember.set_printoptions(profile="short")
    assert get_printoptions()["precision"] == 2 and get_printoptions()["edgeitems"] == 2
    assert repr(ember.tensor([1.12345])) == "tensor([1.12])"
    ember.set_printoptions(profile="full")
    assert "..." not in repr(ember.arange(5000))
    ember.set_printoptions(profile="default", edgeitems=0, threshold=3)
    assert repr(ember.arange(10)) == "tensor([...], size=(10,))"


def test_printoptions_context_restores():
    with printoptions(precision=1):
        assert repr(ember.tensor([1.25])) == "tensor([1.2])"
    assert get_printoptions()["precision"] == 4
    assert repr(ember.tensor([1.25])) == "tensor([1.2500])"


def test_subclass_prefix():
    class MyTensor(ember.Tensor):
        pass

    t = MyTensor([1.0, 2.0])
    assert repr(t) == "MyTensor([1., 2.])"


def test_tensor_contents_override():
    from ember._tensor_str import tensor_repr

    assert tensor_repr(ember.tensor([1, 2]), tensor_contents="[...]") == "tensor([...])"


def test_format_of_zero_dim_tensors():
    assert f"{ember.tensor(3.14159):.2f}" == "3.14"
