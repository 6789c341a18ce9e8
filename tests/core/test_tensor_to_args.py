"""``Tensor.to``'s argument parsing: PyTorch's three overloads, positional ``non_blocking``
and ``copy``, and PyTorch's TypeError for a call that fits none of them."""

import re

import pytest

import ember

_INVALID = "to() received an invalid combination of arguments - got "


def _torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("args, kwargs, got", [
    (("cpu", "cpu"), {}, "(str, str)"),
    ((ember.float32, "cpu"), {}, "(torch.dtype, str)"),
    (("cpu",), {"dtype": "float"}, "(str, dtype=str)"),
    ((ember.float32,), {"dtype": ember.float64}, "(torch.dtype, dtype=torch.dtype)"),
    (("cpu", 5), {}, "(str, int)"),
    ((ember.float16, 1), {}, "(torch.dtype, int)"),
])
def test_invalid_combinations(args, kwargs, got):
    x = ember.zeros(3)
    with pytest.raises(TypeError, match=re.escape(_INVALID + got + ", but expected one of:")):
        x.to(*args, **kwargs)


def test_invalid_combinations_match_pytorch():
    torch = _torch()
    for mod in (torch, ember):
        with pytest.raises(TypeError) as info:
            mod.zeros(3).to("cpu", "cpu")
        if mod is torch:
            want = str(info.value)
    assert str(info.value) == want


@pytest.mark.parametrize("kwargs, got", [
    ({"requires_grad": True}, "(requires_grad=bool, )"),  # no positional: PyTorch's ", "
    ({"foo": 1, "requires_grad": True}, "(requires_grad=bool, foo=int, )"),  # last first
])
def test_invalid_keywords(kwargs, got):
    with pytest.raises(TypeError, match=re.escape(_INVALID + got + ", but expected one of:")):
        ember.zeros(3).to(**kwargs)


def test_invalid_keywords_match_pytorch():
    torch = _torch()
    for call in (lambda m: m.zeros(3).to(foo=1, requires_grad=True),
                 lambda m: m.zeros(3).to(m.float64, a=1, b=2.0)):
        with pytest.raises(TypeError) as want:
            call(torch)
        with pytest.raises(TypeError) as got:
            call(ember)
        assert str(got.value) == str(want.value)


def test_a_python_number_is_the_tensor_overload():
    # PyTorch's parser wraps a number as a CPU tensor: to(1.5) is to(float64), to(True) is
    # to(bool); an int is a device index (the current accelerator's, none here)
    x = ember.zeros(3, device="cpu")
    assert x.to(1.5).dtype == ember.float64 and x.to(True).dtype == ember.bool
    assert x.to(1j).dtype == ember.complex128
    y = x.to(1.5, False, True)  # non_blocking, copy
    assert y.dtype == ember.float64 and y.device.type == "cpu"
    z = x.double()
    assert z.to(2.0) is z and z.to(2.0, copy=True) is not z
    if not ember.backends.cuda.is_built():
        for call in (lambda: x.to(2), lambda: ember.device(0), lambda: ember.zeros(1, device=1),
                     lambda: x.cuda(0)):
            with pytest.raises(RuntimeError, match="Cannot access accelerator device when none "
                                                   "is available."):
                call()


def test_too_many_positional():
    with pytest.raises(TypeError, match=re.escape(
            "to() takes from 0 to 4 positional arguments but 5 were given")):
        ember.zeros(3).to("cpu", ember.float64, False, True, 5)


def test_positional_copy_and_non_blocking():
    x = ember.zeros(3)
    assert x.to(ember.float32, False, True) is not x  # copy=True, positional
    assert x.to(ember.float32, False, False) is x
    assert x.to(x, False, True) is not x
    y = x.to(x.device, ember.float64, False, True)
    assert y.dtype == ember.float64
    assert x.to(dtype=ember.int32, copy=True).dtype == ember.int32
    assert x.to(None, ember.int8).dtype == ember.int8
    assert x.to() is x and x.to(None) is x
    assert x.to(x.device, non_blocking=True) is x


def test_python_types_as_dtypes():
    x = ember.zeros(3)
    assert x.to(float).dtype == ember.float64
    assert x.to(int).dtype == ember.int64
    assert x.to(bool).dtype == ember.bool


def test_module_to_uses_the_same_overloads():
    lin = ember.nn.Linear(2, 2)
    assert lin.to("cpu", ember.float64).weight.dtype == ember.float64
    assert lin.to(ember.zeros(2, dtype=ember.float16)).weight.dtype == ember.float16
    with pytest.raises(TypeError, match=re.escape(_INVALID + "(str, str)")):
        lin.to("cpu", "cpu")


def test_inplace_on_expanded_tensor_message():
    msg = ("unsupported operation: more than one element of the written-to tensor refers to a "
           "single memory location. Please clone() the tensor before performing the operation.")
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        ember.zeros(3, 1).expand(3, 4).add_(1)


def test_complex_scalars_to_python_numbers():
    # PyTorch: the real part when the imaginary part is zero, else its overflow error
    assert float(ember.tensor(1 + 0j)) == 1.0 and int(ember.tensor(1 + 0j)) == 1
    with pytest.raises(RuntimeError, match=re.escape(
            "value cannot be converted to type double without overflow")):
        float(ember.tensor(1 + 2j))
    with pytest.raises(RuntimeError, match=re.escape(
            "value cannot be converted to type int64_t without overflow")):
        int(ember.tensor(1 + 2j))
