"""Indexing and index-op behaviours found to differ from PyTorch by differential probes:
each a plain assertion, and the same program run against torch where it is installed."""

import warnings

import numpy as np
import pytest

import ember
from ember.ops import indexing


def _outcome(mod, program):
    """What ``program(mod)`` gives: its value as a list (and dtype name), or its error."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = program(mod)
        except Exception as exc:
            msg = str(exc).split(" (Triggered internally")[0].replace("ember", "torch")
            result = (type(exc).__name__, msg)
        else:
            result = (str(out.dtype).split(".")[-1], out.tolist())
    msgs = sorted({str(w.message).split(" (Triggered internally")[0] for w in caught})
    return result, [m.replace("ember", "torch") for m in msgs]


def _x(mod, n=60, shape=(3, 4, 5)):
    return mod.arange(n).reshape(shape)


def _set(index, value_fn, dtype="float32"):
    def run(mod):
        x = mod.zeros(3, dtype=getattr(mod, dtype))
        x[index(mod)] = value_fn(mod)
        return x
    return run


PROGRAMS = {
    "int16 index tensor": lambda m: m.arange(6)[m.tensor([1, 2], dtype=m.int16)],
    "int8 index in tuple": lambda m: m.arange(6).reshape(2, 3)[0, m.tensor([1], dtype=m.int8)],
    "int16 index_put_": lambda m: m.arange(6).index_put_(
        (m.tensor([1], dtype=m.int16),), m.tensor(3)),
    "0-dim uint8 index": lambda m: m.arange(6).reshape(2, 3)[m.tensor(1, dtype=m.uint8)],
    "oob after slice": lambda m: _x(m)[:, :, [1, 9]],
    "oob second tensor": lambda m: _x(m)[[0, 1], :, [1, 9]],
    "oob empty dim": lambda m: m.zeros(3, 0)[:, [0]],
    "two ellipses": lambda m: m.arange(24).reshape(2, 3, 4)[..., 1, ...],
    "ellipses around tensor": lambda m: m.arange(24).reshape(2, 3, 4)[..., [0, 1], ...],
    "0-dim by 0-dim tensor": lambda m: m.tensor(5)[m.tensor(0)],
    "non-tuple sequence": lambda m: m.arange(6).reshape(2, 3)[[[0, 1], [1, 2]]],
    "mask = 0-dim float into long": _set(lambda m: m.tensor([True, False, True]),
                                         lambda m: m.tensor(2.7), "long"),
    "mask = 1-elt double": _set(lambda m: m.tensor([True, False, True]),
                                lambda m: m.tensor([2.5], dtype=m.float64)),
    "mask = too few": _set(lambda m: m.tensor([True, False, True]), lambda m: m.tensor([1.])),
    "300 into int8": _set(lambda m: 0, lambda m: 300, "int8"),
    "nan into long": _set(lambda m: [0], lambda m: float("nan"), "long"),
    "complex into float": _set(lambda m: 0, lambda m: 1j),
    "np.float32 value": _set(lambda m: 0, lambda m: np.float32(2.5), "long"),
    "ndarray value": _set(lambda m: [0], lambda m: np.array([1.0])),
    "scatter_add scalar": lambda m: m.zeros(2, 2).scatter_add(1, m.tensor([[0], [1]]), 1.0),
    "scatter_reduce max": lambda m: m.zeros(2, 3).scatter_reduce(
        1, m.tensor([[0, 0], [1, 2]]), m.tensor([[5., -1.], [3., 4.]]), "max"),
    "scatter_reduce min": lambda m: m.zeros(2, 3).scatter_reduce(
        1, m.tensor([[0, 0], [1, 2]]), m.tensor([[5., -1.], [3., 4.]]), "min"),
    "take int32": lambda m: m.take(m.arange(6.), m.tensor([1], dtype=m.int32)),
    "put_ int32": lambda m: m.zeros(6).put_(m.tensor([1], dtype=m.int32), m.tensor([1.])),
    "masked_scatter long mask": lambda m: m.zeros(3).masked_scatter(m.tensor([1, 0, 1]),
                                                                  m.ones(3)),
    "index_put_ too many": lambda m: m.zeros(2, 3).index_put_((m.tensor([0]),) * 3,
                                                             m.tensor(1.)),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_matches_torch(name):
    torch = pytest.importorskip("torch")
    assert _outcome(ember, PROGRAMS[name]) == _outcome(torch, PROGRAMS[name])


def test_small_index_dtypes_are_refused():
    x = ember.arange(6)
    for dt in (ember.int8, ember.int16):
        with pytest.raises(IndexError, match="must be long, int, byte or bool"):
            x[ember.tensor([1], dtype=dt)]
        with pytest.raises(IndexError, match="must be long, int, byte or bool"):
            x[ember.tensor([1], dtype=dt)] = 0
    assert x[ember.tensor(2, dtype=ember.int16)].item() == 2  # a 0-dim one is an int


def test_zero_dim_uint8_index_is_a_silent_mask():
    x = ember.arange(6).reshape(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x[ember.tensor(1, dtype=ember.uint8)].shape == (1, 2, 3)
        assert x[ember.tensor(0, dtype=ember.uint8)].shape == (0, 2, 3)


def test_out_of_bounds_names_the_index_tensor_position():
    x = ember.arange(60).reshape(3, 4, 5)
    with pytest.raises(IndexError, match=r"^index 9 is out of bounds for dimension 0 with size 5$"):
        x[:, :, [1, 9]]
    with pytest.raises(IndexError, match=r"^index 9 is out of bounds for dimension 1 with size 5$"):
        x[[0, 1], :, [1, 9]] = 0
    with pytest.raises(IndexError, match=r"^index is out of bounds for dimension with size 0$"):
        ember.zeros(3, 0)[:, [0]]


def test_several_ellipses():
    x = ember.arange(24).reshape(2, 3, 4)
    assert x[..., 1, ...].tolist() == x[:, :, 1].tolist()
    assert x[1, ..., ...].tolist() == x[1].tolist()
    x[..., 1, ...] = 0
    assert x[:, :, 1].abs().sum().item() == 0


def test_non_tuple_sequence_warns():
    x = ember.arange(6).reshape(2, 3)
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        y = x[[[0, 1], [1, 2]]]
    assert y.tolist() == [1, 5]


def test_mask_fill_with_one_element_value_casts():
    x = ember.zeros(3, dtype=ember.long)
    x[ember.tensor([True, False, True])] = ember.tensor(2.7)
    assert x.tolist() == [2, 0, 2]
    y = ember.zeros(2, 3)
    y[:, ember.tensor([True, False, True])] = ember.tensor([[1.5]], dtype=ember.float64)
    assert y.tolist() == [[1.5, 0, 1.5], [1.5, 0, 1.5]]
    with pytest.raises(RuntimeError, match="dtypes match"):
        x[ember.tensor([0, 1])] = ember.tensor(2.7)
    with pytest.raises(RuntimeError, match=r"value tensor of shape \[2\] cannot be broadcast "
                                           r"to indexing result of shape \[3\]"):
        ember.zeros(3)[ember.ones(3, dtype=ember.bool)] = ember.tensor([1., 2.])


def test_mask_fill_value_gradient():
    x = ember.zeros(3, requires_grad=True)
    v = ember.tensor([2.5], requires_grad=True)
    y = x * 1
    y[y == 0] = v
    y.sum().backward()
    assert v.grad.tolist() == [3.0]
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_setitem_value_checks():
    with pytest.raises(RuntimeError, match="cannot be converted to type int8_t without overflow"):
        ember.zeros(3, dtype=ember.int8)[0] = 300
    with pytest.raises(RuntimeError, match="int64_t without overflow"):
        ember.zeros(3, dtype=ember.long)[[0]] = float("inf")
    with pytest.raises(TypeError, match="can't assign a numpy.float32 to a ember.LongTensor"):
        ember.zeros(3, dtype=ember.long)[0] = np.float32(2.5)
    with pytest.raises(TypeError, match="can't assign a numpy.ndarray"):
        ember.zeros(3)[[0]] = np.array([1.0])
    x = ember.zeros(3, dtype=ember.long)
    x[0] = np.int32(4)
    x[1] = ember.tensor(1.5, requires_grad=True)
    assert x.tolist() == [4, 1, 0] and not x.requires_grad


def test_scatter_reduce_argument_warns_once():
    indexing._WARNED["scatter_reduce"] = False
    idx = ember.tensor([[0, 0]])
    with pytest.warns(UserWarning, match="reduce argument of ember.scatter"):
        out = ember.zeros(1, 2).scatter(1, idx, ember.ones(1, 2), reduce="add")
    assert out.tolist() == [[2.0, 0.0]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.zeros(1, 2).scatter(1, idx, ember.ones(1, 2), reduce="add")
        ember.zeros(1, 2).scatter(1, idx, 1.0, reduce="add")  # a scalar never warns


def test_index_op_argument_errors():
    with pytest.raises(TypeError, match="argument 'src' \\(position 3\\) must be Tensor"):
        ember.zeros(2).scatter_add(0, ember.tensor([0]), 1.0)
    with pytest.raises(RuntimeError, match="Expected a long tensor for index, but got Int"):
        ember.take(ember.arange(3), ember.tensor([0], dtype=ember.int32))
    with pytest.raises(RuntimeError, match="mask with dtype Long$"):
        ember.zeros(3).masked_scatter(ember.tensor([1, 0, 1]), ember.ones(3))
    with pytest.raises(IndexError, match=r"dimension 2 \(got 3\)"):
        ember.zeros(2, 3).index_put_((ember.tensor([0]),) * 3, ember.tensor(1.))
    out = ember.zeros(3).scatter_reduce(0, ember.tensor([0, 0]), ember.tensor([5., 7.]), "max")
    assert out.tolist() == [7.0, 0.0, 0.0]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 0"):
        ember.tensor(5)[ember.tensor(0)]


@pytest.mark.parametrize("dtype, want", [("float16", "inf"), ("bfloat16", "inf"),
                                         ("float32", "error")])
@pytest.mark.parametrize("index", [0, slice(None), "long", "mask"])
def test_setitem_of_a_huge_number_rounds_to_inf_in_the_half_types(dtype, want, index):
    # PyTorch's setitem converts without its overflow check for float16/bfloat16 only
    def run(lib):
        idx = index
        if index == "long":
            idx = lib.tensor([0, 1])
        elif index == "mask":
            idx = lib.tensor([True, False])
        y = lib.zeros(2, dtype=getattr(lib, dtype))
        try:
            y[idx] = 1e300
        except RuntimeError as exc:
            return ("error", str(exc).split(" without")[0])
        return ("inf", y.tolist())

    got = run(ember)
    assert got[0] == want
    torch = pytest.importorskip("torch")
    assert got == run(torch)
