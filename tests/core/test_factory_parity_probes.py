"""Tensor-factory behaviours found to differ from PyTorch by differential probes: each a plain
assertion, and the same program run against torch where it is installed."""

import warnings

import numpy as np
import pytest

import ember
from ember import _factory


def _describe(out):
    if hasattr(out, "stride") and hasattr(out, "tolist"):
        return (str(out.dtype).split(".")[-1], tuple(out.shape), tuple(out.stride()),
                out.requires_grad, out.tolist())
    if isinstance(out, tuple):
        return tuple(_describe(o) for o in out)
    return repr(out).replace("ember", "torch")


def _outcome(mod, program):
    """What ``program(mod)`` gives: its value, dtype, shape, strides and requires_grad, or
    its error's type and first line; and the warnings it raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = _describe(program(mod))
        except Exception as exc:
            result = (type(exc).__name__, str(exc).split("\n")[0].replace("ember", "torch"))
    msgs = sorted({str(w.message).split(" (Triggered internally")[0].replace("ember", "torch")
                   for w in caught})
    return result, msgs


def _asarray(make, **kw):
    """``(requires_grad, is obj, shares memory, has grad_fn)`` of ``asarray(make(m), **kw)``."""
    def run(m):
        src = make(m)
        kw2 = {k: (getattr(m, v) if k == "dtype" else v) for k, v in kw.items()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # its once-a-program warning: tested below
            out = m.asarray(src, **kw2)
        return (out.requires_grad, out is src, out.data_ptr() == src.data_ptr(),
                out.grad_fn is None, src.requires_grad)
    return run


def _leaf(m):
    return m.ones(2, requires_grad=True)


def _nonleaf(m):
    return m.ones(2, requires_grad=True) * 2


def _plain(m):
    return m.arange(3.0)


PROGRAMS = {
    # sizes: PyTorch's argument parser's words
    "zeros float": lambda m: m.zeros(2.0),
    "zeros ndarray": lambda m: m.zeros(np.array([2, 3])),
    "zeros 2-el tensor": lambda m: m.zeros(m.tensor([2, 3])),
    "ones bool": lambda m: m.ones(True),
    "empty None": lambda m: m.empty(None).shape,
    "zeros (2.5,)": lambda m: m.zeros((2.5,)),
    "zeros (2, 3.5)": lambda m: m.zeros((2, 3.5)),
    "zeros 2, 3.5": lambda m: m.zeros(2, 3.5),
    "zeros np.float64": lambda m: m.zeros(np.float64(2)),
    "zeros (2,), 3": lambda m: m.zeros((2,), 3),
    "zeros True, 2": lambda m: m.zeros(True, 2),
    "zeros size=int": lambda m: m.zeros(size=2),
    "zeros size= and args": lambda m: m.zeros(2, size=(3,)),
    "zeros negative": lambda m: m.zeros(-1),
    "ones negative": lambda m: m.ones(2, -1),
    "zeros 0-dim tensor": lambda m: m.zeros(m.tensor(2), 3),
    "full [2.5]": lambda m: m.full([2.5], 1.0),
    "full ndarray size": lambda m: m.full(np.array([2]), 1.0),
    "full int size": lambda m: m.full(2, 1.0),
    "rand size=int": lambda m: m.rand(size=3),
    "randn 2.5": lambda m: m.randn(2.5),
    # out=: its dtype, the dtype check, a silent resize
    "zeros out long": lambda m: m.zeros(2, out=m.empty(3, dtype=m.int64)),
    "ones out dtype mismatch": lambda m: m.ones(2, dtype=m.float64, out=m.empty(2)),
    "full out long": lambda m: m.full((2,), 1.5, out=m.empty(3, dtype=m.int64)),
    "eye out resized": lambda m: m.eye(2, out=m.empty(5)),
    "linspace out resized": lambda m: m.linspace(0, 1, 3, out=m.empty(1)),
    "arange out warns": lambda m: m.arange(3, out=m.empty(5)),
    "arange out long": lambda m: m.arange(3.0, out=m.empty(3, dtype=m.int64)),
    "arange out dtype mismatch": lambda m: m.arange(3, dtype=m.float64, out=m.empty(1)),
    "randint out float": lambda m: m.randint(3, (2,), out=m.empty(1)).dtype,
    "randn out mismatch": lambda m: m.randn(2, dtype=m.float32, out=m.empty(1, dtype=m.float64)),
    # fill values
    "full np.bool_": lambda m: m.full((2,), np.bool_(True)),
    "full 1-d tensor": lambda m: m.full((2,), m.tensor([1.5])),
    "full str": lambda m: m.full((2,), "a"),
    "full None": lambda m: m.full((2,), None),
    "full_like str": lambda m: m.full_like(m.zeros(2), "a"),
    "zeros_like ndarray": lambda m: m.zeros_like(np.ones(2)),
    "empty_like list": lambda m: m.empty_like([1, 2]),
    # empty_strided
    "empty_strided mismatch": lambda m: m.empty_strided((2, 3), (1,)),
    "empty_strided negative stride": lambda m: m.empty_strided((2, 3), (-1, 2)),
    "empty_strided int size": lambda m: m.empty_strided(2, 1),
    "empty_strided int stride": lambda m: m.empty_strided((2, 2), 1),
    "empty_strided float stride": lambda m: m.empty_strided((2, 2), (1, 1.5)),
    # ranges
    "arange complex dtype": lambda m: m.arange(3, dtype=m.complex64),
    "arange 2**63": lambda m: m.arange(2**63),
    "arange str": lambda m: m.arange("a"),
    "arange 1-d tensor": lambda m: m.arange(m.tensor([3])),
    "range one argument": lambda m: m.range(3),
    "range bool": lambda m: m.range(0, 1, dtype=m.bool),
    "linspace bool": lambda m: m.linspace(0, 1, 3, dtype=m.bool),
    "logspace bool": lambda m: m.logspace(0, 1, 3, dtype=m.bool),
    "linspace 1-d start": lambda m: m.linspace(m.tensor([0.0]), 1.0, 3),
    "eye float": lambda m: m.eye(2.0),
    "eye bool": lambda m: m.eye(True),
    "eye str m": lambda m: m.eye(2, "3"),
    # random factories' argument checks
    "randint 5.5": lambda m: m.randint(5.5, (3,)),
    "randint one argument": lambda m: m.randint(5),
    "randint 3 ints": lambda m: m.randint(5, 3, 3),
    "randint [3.5]": lambda m: m.randint(5, [3.5]),
    "randint 2**63": lambda m: m.randint(2**63, (2,)),
    "randint 0, 2**63": lambda m: m.randint(0, 2**63, (2,)),
    "randperm 3.0": lambda m: m.randperm(3.0),
    "randperm True": lambda m: m.randperm(True),
    "randperm bool": lambda m: m.randperm(3, dtype=m.bool),
    "randperm int8 129": lambda m: m.randperm(129, dtype=m.int8),
    "randperm int8 128": lambda m: m.randperm(128, dtype=m.int8).shape,
    "randperm uint8 257": lambda m: m.randperm(257, dtype=m.uint8),
    "randperm half 2050": lambda m: m.randperm(2050, dtype=m.float16),
    "randperm half 2049": lambda m: m.randperm(2049, dtype=m.float16).shape,
    "randperm complex": lambda m: m.randperm(3, dtype=m.complex64),
    # asarray
    "asarray ndarray copy=False dtype": lambda m: m.asarray(np.ones(2), dtype=m.float32,
                                                            copy=False),
    "asarray tensor copy=False dtype": lambda m: m.asarray(m.ones(2), dtype=m.float64,
                                                           copy=False),
    "asarray list copy=False": lambda m: m.asarray([1, 2], copy=False),
    "asarray scalar copy=False": lambda m: m.asarray(3, copy=False),
    "asarray np scalar copy=False": lambda m: m.asarray(np.float32(3), copy=False),
    "asarray bytearray": lambda m: m.asarray(bytearray(b"abcd")),
    "asarray memoryview": lambda m: m.asarray(memoryview(np.arange(3, dtype=np.int16))),
    "asarray memoryview int16": lambda m: m.asarray(memoryview(bytearray(b"abcd")),
                                                                 dtype=m.int16),
    "asarray int tensor requires_grad": lambda m: m.asarray(m.tensor([1]), requires_grad=True),
}
for _name, _make in (("leaf", _leaf), ("nonleaf", _nonleaf), ("plain", _plain)):
    for _kw in ({}, {"requires_grad": False}, {"requires_grad": True}, {"copy": True},
                {"copy": True, "requires_grad": False}, {"dtype": "float64"},
                {"dtype": "float64", "requires_grad": False},
                {"copy": False, "requires_grad": True}):
        PROGRAMS[f"asarray {_name} {_kw}"] = _asarray(_make, **_kw)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_matches_torch(name):
    torch = pytest.importorskip("torch")
    assert _outcome(ember, PROGRAMS[name]) == _outcome(torch, PROGRAMS[name])


def test_size_argument_errors_name_the_argument():
    with pytest.raises(TypeError, match=r"^zeros\(\): argument 'size' \(position 1\) must be "
                                        r"tuple of ints, not float$"):
        ember.zeros(2.0)
    with pytest.raises(TypeError, match=r"not numpy\.ndarray$"):
        ember.ones(np.array([2, 3]))
    with pytest.raises(TypeError, match=r"but found element of type float at pos 0$"):
        ember.full([2.5], 1.0)
    with pytest.raises(TypeError, match=r"^zeros\(\) takes 1 positional argument but 2 were"):
        ember.zeros((2,), 3)
    with pytest.raises(TypeError, match=r"^rand\(\): argument 'size' must be tuple of ints, "
                                        r"not int$"):
        ember.rand(size=3)
    with pytest.raises(TypeError, match="got multiple values for argument 'size'"):
        ember.zeros(2, size=(3,))
    with pytest.raises(TypeError, match=r"at pos 2 with error \"type must be tuple of ints,"
                                        r"but got numpy\.float64\""):
        ember.zeros(2, np.float64(2))
    with pytest.raises(RuntimeError, match=r"negative dimension -1: \[2, -1\]"):
        ember.ones(2, -1)
    assert ember.zeros(np.int32(2), ember.tensor(3)).shape == (2, 3)
    assert ember.empty(ember.Size([2, 3])).shape == (2, 3)
    assert ember.zeros(size=[2]).shape == (2,)


def test_out_gives_the_dtype_and_is_resized_silently():
    out = ember.empty(3, dtype=ember.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ember.zeros(2, out=out) is out
        ember.eye(2, out=ember.empty(1))
    assert out.dtype is ember.int64 and out.tolist() == [0, 0]
    with pytest.raises(RuntimeError, match=r"dtype Double does not match dtype of out "
                                           r"parameter \(Float\)"):
        ember.ones(2, dtype=ember.float64, out=ember.empty(2))
    with pytest.warns(UserWarning, match="The number of elements in the out tensor of shape "
                                         r"\[5\] is 5 which does not match the computed"):
        assert ember.arange(3, out=ember.empty(5)).tolist() == [0.0, 1.0, 2.0]
    assert ember.randint(3, (2,), out=ember.empty(1)).dtype is ember.float32


def test_fill_values_and_like_inputs_are_checked():
    assert ember.full((2,), np.bool_(True)).dtype is ember.float32
    assert ember.full((2,), True).dtype is ember.bool
    with pytest.raises(TypeError, match=r"argument 'fill_value' \(position 2\) must be Number, "
                                        r"not Tensor"):
        ember.full((2,), ember.tensor([1.5]))
    with pytest.raises(TypeError, match=r"must be Number, not str"):
        ember.full_like(ember.zeros(2), "a")
    with pytest.raises(TypeError, match=r"^zeros_like\(\): argument 'input' \(position 1\) "
                                        r"must be Tensor, not numpy\.ndarray$"):
        ember.zeros_like(np.ones(2))


def test_empty_strided_checks():
    with pytest.raises(RuntimeError, match=r"dimensionality of sizes \(2\) must match "
                                           r"dimensionality of strides \(1\)"):
        ember.empty_strided((2, 3), (1,))
    with pytest.raises(RuntimeError, match=r"overflowed with sizes=\[2, 3\] and "
                                           r"strides=\[-1, 2\]"):
        ember.empty_strided((2, 3), (-1, 2))
    with pytest.raises(TypeError, match=r"argument 'stride' \(position 2\) must be tuple"):
        ember.empty_strided((2, 2), 1)
    assert ember.empty_strided((2, 3), (1, 2)).stride() == (1, 2)


def test_range_factories_refuse_bad_arguments():
    for make in (lambda: ember.arange(3, dtype=ember.complex64),
                 lambda: ember.linspace(0, 1, 3, dtype=ember.bool),
                 lambda: ember.logspace(0, 1, 3, dtype=ember.bool)):
        with pytest.raises(NotImplementedError, match="not implemented for"):
            make()
    with pytest.raises(RuntimeError, match="int64_t without overflow"):
        ember.arange(2**63)
    with pytest.raises(TypeError, match=r"argument 'end' \(position 1\) must be Number"):
        ember.arange(ember.tensor([3]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the error comes before the deprecation warning
        with pytest.raises(TypeError, match='missing 1 required positional arguments: "end"'):
            ember.range(3)
    with pytest.raises(RuntimeError, match="only supports 0-dimensional start and end"):
        ember.linspace(ember.tensor([0.0]), 1.0, 3)
    with pytest.raises(TypeError, match=r"eye\(\): argument 'n' \(position 1\) must be int, "
                                        r"not float"):
        ember.eye(2.0)
    with pytest.raises(TypeError, match=r"eye\(\) received an invalid combination of arguments "
                                        r"- got \(int, str\)"):
        ember.eye(2, "3")
    assert ember.eye(np.int64(2), ember.tensor(3)).shape == (2, 3)


def test_random_factory_argument_checks():
    with pytest.raises(TypeError, match=r"^randperm\(\): argument 'n' \(position 1\) must be "
                                        r"int, not float$"):
        ember.randperm(3.0)
    with pytest.raises(TypeError, match=r"randint\(\): argument 'high' \(position 1\) must be "
                                        r"int, not float"):
        ember.randint(5.5, (3,))
    with pytest.raises(TypeError, match=r"received an invalid combination of arguments - got "
                                        r"\(int\)"):
        ember.randint(5)
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        ember.randint(0, 2**63, (2,))
    with pytest.raises(RuntimeError, match="cannot be converted to type int8_t"):
        ember.randperm(129, dtype=ember.int8)
    with pytest.raises(RuntimeError, match="n cannot be greater than 2049 for Half type."):
        ember.randperm(2050, dtype=ember.float16)
    with pytest.raises(NotImplementedError, match="\"randperm\" not implemented for 'Bool'"):
        ember.randperm(3, dtype=ember.bool)
    assert sorted(ember.randperm(128, dtype=ember.int8).tolist()) == list(range(128))


def test_asarray_requires_grad_follows_obj_and_is_set_in_place():
    leaf = ember.ones(2, requires_grad=True)
    out = ember.asarray(leaf, requires_grad=False)
    assert out is leaf and not leaf.requires_grad  # set on obj itself, as PyTorch does
    x = ember.arange(3.0)
    assert ember.asarray(x, requires_grad=True) is x and x.requires_grad
    y = ember.ones(2, requires_grad=True) * 2
    assert ember.asarray(y) is y and ember.asarray(y, requires_grad=True) is y
    d = ember.asarray(y, requires_grad=False)
    assert not d.requires_grad and d.grad_fn is None and d.data_ptr() == y.data_ptr()
    c = ember.asarray(y, copy=True)
    assert c.requires_grad and c.grad_fn is not None and c.data_ptr() != y.data_ptr()
    assert ember.asarray(y, dtype=ember.float64).grad_fn is not None
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex"):
        ember.asarray(ember.tensor([1]), requires_grad=True)


def test_asarray_copy_false_and_buffers():
    with pytest.raises(ValueError, match=r"can't alias tensor with dtype 'Double' into dtype "
                                         r"'Float'\."):
        ember.asarray(np.ones(2), dtype=ember.float32, copy=False)
    with pytest.raises(ValueError, match="can't alias arbitrary sequence into a tensor."):
        ember.asarray([1, 2], copy=False)
    with pytest.raises(RuntimeError, match="can't alias NumPy scalars"):
        ember.asarray(np.float32(3), copy=False)
    assert ember.asarray(np.float32(3)).dtype is ember.float32
    buf = bytearray(b"\x01\x00\x02\x00")
    t = ember.asarray(buf, dtype=ember.int16)
    assert t.tolist() == [1, 2]
    buf[0] = 5
    assert t.tolist() == [5, 2]  # a buffer is shared
    with pytest.raises(ValueError, match="must be a multiple of element size"):
        ember.asarray(memoryview(np.arange(3, dtype=np.int16)))


def test_once_warnings(monkeypatch):
    monkeypatch.setitem(_factory._ONCE, "asarray requires_grad", False)
    monkeypatch.setitem(_factory._ONCE, "not writable", False)
    leaf = ember.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="unspecified requires_grad now defaults to "
                                         "obj.requires_grad"):
        assert ember.asarray(leaf) is leaf and leaf.requires_grad
    readonly = np.ones(2)
    readonly.flags.writeable = False
    with pytest.warns(UserWarning, match="The given NumPy array is not writable"):
        ember.from_numpy(readonly)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once a program
        ember.asarray(ember.ones(2, requires_grad=True))
        ember.as_tensor(readonly)
        ember.asarray(readonly)
    assert ember.tensor(readonly).tolist() == [1.0, 1.0]


@pytest.mark.parametrize("program", [
    lambda m: m.as_tensor(np.frombuffer(b"\x00" * 8, dtype=np.int32)),
    lambda m: m.from_numpy(np.frombuffer(b"\x00" * 8, dtype=np.int32)),
    lambda m: m.asarray(np.frombuffer(b"\x00" * 8, dtype=np.int32)),
])
def test_not_writable_warning_matches_torch_when_fresh(program, monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setitem(_factory._ONCE, "not writable", False)
    result, msgs = _outcome(ember, program)
    assert result == _outcome(torch, program)[0]
    assert msgs == ["The given NumPy array is not writable, and PyTorch does not support "
                    "non-writable tensors. This means writing to this tensor will result in "
                    "undefined behavior. You may want to copy the array to protect its data or "
                    "make it writable before converting it to a tensor. This type of warning "
                    "will be suppressed for the rest of this program."]
