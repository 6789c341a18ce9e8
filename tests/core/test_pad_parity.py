"""``F.pad`` against PyTorch 2.13: the same result, or the same exception type and message, over
a sample of every mode (constant, reflect, replicate, circular), 1-3 padded dims, batched and
unbatched inputs, empty inputs and crops past the size (compared with torch when it is
installed); then hand-picked errors with their exact messages and NumPy reference values,
which need no torch.

Where PyTorch itself misbehaves Ember deliberately differs (see ``_torch_misbehaves``):

* circular padding wider than what a crop leaves: PyTorch's copy reads memory it never wrote
  (garbage values), or fails inside the copy ("unsupported operation: some elements ...
  refer to a single memory location", "The size of tensor a (0) must match ..."). Ember wraps
  around the kept part again (what PyTorch's copy happens to give for a right pad, and what
  NumPy's ``wrap`` gives), raises a clear error when nothing is kept, and returns the empty
  result when the output has no elements;
* reflect padding of 2 dims with a negative output size: PyTorch's reflection_pad2d fails
  with "numel: integer multiplication overflow"; Ember raises the error of PyTorch's other
  pad kernels ("Trying to create tensor with negative dimension ...").
"""

import itertools
import random
import re

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck
from ember.ops.opdb.nn_ops import _pad_ref

MODES = ("constant", "reflect", "replicate", "circular")
SHAPES = [(2, 5), (1, 2, 5), (1, 4, 5), (1, 1, 3, 4, 5), (2, 3, 4, 5), (3,), (0, 5), (1, 0, 5),
          (2, 1, 1), (2, 3, 2)]
PADS = (-6, -5, -3, -2, -1, 0, 1, 2, 4, 5, 6)
EXTRA = ((0, 0), (1, -1), (-2, 3), (-1, -1), (2, 2))  # the pads of the outer padded dims

TORCH_INTERNAL = ("numel: integer multiplication overflow", "The size of tensor a",
                  "unsupported operation: some elements of the input tensor")

NOT_SUPPORTED = ("Padding size {} is not supported for {}D input tensor.\nSupported "
                 "combinations for non-constant padding:\n"
                 "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                 "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                 "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
ARG = ("Argument #{}: Padding size should be less than the corresponding input dimension, but "
       "got: padding ({}, {}) at dimension {} of input [{}]")
EMPTY_DIM = ("Expected {}D or {}D (batch mode) tensor with possibly 0 batch size and other "
             "non-zero dimensions for input, but got: [{}]")


def _all_cases():
    out = []
    for shape in SHAPES:
        for k, mode, (lo, hi), extra in itertools.product((1, 2, 3), MODES,
                                                          itertools.product(PADS, repeat=2),
                                                          EXTRA):
            if k <= len(shape):
                out.append((shape, (lo, hi) + extra * (k - 1), mode, None))
    return sorted(set(out))


# The compared sample: drawn once (seeded) from the 43,000-odd combinations, plus the
# hand-picked cases below (every error class, every value rule).
SAMPLE = random.Random(0).sample(_all_cases(), 360)

# (shape, pad, mode, value, dtype) -> (exception type, exact message): PyTorch 2.13's.
ERRORS = [
    ((2, 5), (1,), "constant", None, RuntimeError, "Padding length must be divisible by 2"),
    ((2, 5), (1,) * 6, "constant", None, RuntimeError,
     "Padding length should be less than or equal to two times the input dimension but got "
     "padding length 6 and input of dimension 2"),
    ((2, 5), (1,), "bogus", None, NotImplementedError, "Unrecognised padding mode bogus"),
    ((2, 5), (1, 1), "reflect", 2.0, RuntimeError,
     'Padding mode "reflect" doesn\'t take in value argument'),
    ((2, 5), (1, 1), "circular", -1.0, RuntimeError,
     'Padding mode "circular" doesn\'t take in value argument'),
    ((5,), (1, 1), "reflect", None, NotImplementedError, NOT_SUPPORTED.format(2, 1)),
    ((2, 5), (), "replicate", None, NotImplementedError, NOT_SUPPORTED.format(0, 2)),
    ((1, 1, 1, 2, 5), (1, 1), "circular", None, NotImplementedError,
     NOT_SUPPORTED.format(2, 5)),
    ((1, 2, 5), (-6, 4), "constant", None, RuntimeError,
     "narrow(): length must be non-negative."),
    ((2, 5), (1, -6), "constant", None, RuntimeError, "narrow(): length must be non-negative."),
    ((1, 2, 5), (-3, -3), "constant", None, RuntimeError,
     "narrow(): length must be non-negative."),
    ((1, 2, 5), (5, 1), "reflect", None, RuntimeError, ARG.format(4, 5, 1, 2, "1, 2, 5")),
    ((1, 2, 5), (-6, 1, 2, 0), "reflect", None, RuntimeError,
     ARG.format(6, 2, 0, 1, "1, 2, 5")),
    ((1, 1, 3, 4, 5), (0, 0, 0, 0, 3, 0), "reflect", None, RuntimeError,
     ARG.format(8, 3, 0, 2, "1, 1, 3, 4, 5")),
    ((1, 0, 5), (1, 1), "reflect", None, RuntimeError, EMPTY_DIM.format(2, 3, "1, 0, 5")),
    ((0, 5), (-6, 1), "replicate", None, RuntimeError, EMPTY_DIM.format(2, 3, "0, 5")),
    ((1, 0, 5), (1, 1, 1, 1), "replicate", None, RuntimeError,
     EMPTY_DIM.format(3, 4, "1, 0, 5")),
    ((1, 1, 0, 4, 5), (1, 1, 1, 1, 1, 1), "reflect", None, RuntimeError,
     EMPTY_DIM.format(4, 5, "1, 1, 0, 4, 5")),
    ((2, 5), (-3, -3), "reflect", None, RuntimeError,
     "input (W: 5) is too small. Calculated output W: -1"),
    ((3, 2, 5), (-6, 1), "replicate", None, RuntimeError,
     "input (W: 5) is too small. Calculated output W: 0"),
    ((1, 2, 5), (-5, 0, -2, 0), "reflect", None, RuntimeError,
     "input (H: 2, W: 5) is too small. Calculated output H: 0 W: 0"),
    ((1, 2, 5), (-5, 0, -2, 0), "replicate", None, RuntimeError,
     "input (H: 2, W: 5 ) is too small. Calculated output H: 0 W: 0"),
    ((1, 1, 3, 4, 5), (-6, -6, -3, -3, -2, -2), "reflect", None, RuntimeError,
     "input (D: 3 H: 4, W: 5) is too small. Calculated output D: -1 H: -2 W: -7"),
    ((1, 2, 5), (-6, -6, 0, 0), "replicate", None, RuntimeError,
     "Trying to create tensor with negative dimension -7: [1, 2, -7]"),
    ((1, 1, 3, 4, 5), (0, 0, -3, -3, -2, -2), "reflect", None, RuntimeError,
     "Trying to create tensor with negative dimension -1: [1, 1, -1, -2, 5]"),
    ((1, 1, 3, 4, 5), (0, 0, 0, 0, -3, -3), "replicate", None, RuntimeError,
     "Trying to create tensor with negative dimension -3: [1, 1, -3, 4, 5]"),
    ((1, 2, 5), (6, 0), "circular", None, RuntimeError,
     "Padding value causes wrapping around more than once."),
    ((2, 0, 5), (1, 1, 1, 1), "circular", None, RuntimeError,
     "Padding value causes wrapping around more than once."),
    ((1, 2, 5), (-6, -6), "circular", None, RuntimeError,
     "Negative padding value is resulting in an empty dimension"),
    ((2, 3, 4, 5), (0, 0, -2, -3), "circular", None, RuntimeError,
     "Negative padding value is resulting in an empty dimension"),
]

# Where PyTorch misbehaves (module docstring): Ember's own error ...
DEVIATING_ERRORS = [
    ((1, 2, 5), (-6, -6, 0, 0), "reflect", RuntimeError,  # PyTorch: numel overflow
     "Trying to create tensor with negative dimension -7: [1, 2, -7]"),
    ((2, 5), (-5, 2), "circular", RuntimeError,  # PyTorch: values of unwritten memory
     "Negative padding (-5, 2) leaves nothing of the size 5 of dimension 1 to wrap around"),
    ((2, 5), (-6, 4), "circular", RuntimeError,  # PyTorch: The size of tensor a ... must match
     "Negative padding (-6, 4) leaves nothing of the size 5 of dimension 1 to wrap around"),
]
# ... or its wrapped-around-again / empty result (checked against NumPy).
DEVIATING_VALUES = [
    ((1, 2, 5), (5, -3), "circular"),  # PyTorch: unwritten memory on the left
    ((1, 2, 5), (-3, 3), "circular"),  # PyTorch's overlapping copy gives the same here
    ((2, 3, 4, 5), (1, 1, -2, 3), "circular"),
]

# Results PyTorch defines, against NumPy (crop, then np.pad).
VALID = [
    ((2, 5), (1, 2), "constant", None),
    ((1, 3, 4), (-1, 2, 1, -1), "constant", 2.5),
    ((2, 5), (-2, -3), "constant", None),  # cropped to nothing
    ((0, 5), (-2, 2, 1, 0), "constant", None),  # padding an empty dim
    ((1, 3, 4), (2, -1, 1, 1), "reflect", None),
    ((2, 3, 4, 5), (-2, 4, 1, 2), "reflect", None),
    ((1, 1, 3, 4, 5), (1, 1, -1, 3, 2, 2), "reflect", None),
    ((1, 2, 5), (-1, -2, -1, -1), "reflect", None),  # H comes out empty: allowed
    ((0, 2, 5), (1, 1), "reflect", 0.0),  # a batch of 0 and value 0 are fine
    ((2, 5), (-2, 3), "replicate", None),
    ((1, 4, 5), (-4, 2, 0, 0), "replicate", None),
    ((2, 3, 4, 5), (3, -1, -2, 4), "replicate", None),
    ((1, 2, 5), (-1, 2, 1, 0), "circular", None),
    ((1, 2, 5), (-2, -3), "circular", None),  # cropped to nothing
    ((1, 1, 3, 4, 5), (1, 2, -1, 3, 1, 1), "circular", None),
]


def _np_pad(a, pad, mode, value=None):
    """NumPy's reference (opdb's, which grows then crops for reflect/replicate)."""
    return _pad_ref(a, pad, mode, value)


def _x(shape, dtype=np.float64):
    return np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape).astype(dtype)


def _outcome(lib, shape, pad, mode, value):
    """``("ok", array)`` or ``(exception type name, message)``."""
    kw = {} if value is None else {"value": value}
    try:
        r = lib.nn.functional.pad(lib.tensor(_x(shape)), list(pad), mode=mode, **kw)
    except Exception as e:  # the exception is what is compared
        return type(e).__name__, str(e)
    return "ok", np.asarray(r.numpy())


def _wraps_past_crop(shape, pad, mode):
    """A circular pad wider than what its dim's crop keeps (PyTorch reads unwritten memory)."""
    if mode != "circular":
        return False
    for i in range(len(pad) // 2):
        n, lo, hi = shape[-1 - i], pad[2 * i], pad[2 * i + 1]
        kept = n - max(-lo, 0) - max(-hi, 0)
        if lo > kept or hi > kept:
            return True
    return False


def _out_shape(shape, pad):
    k = len(pad) // 2
    return tuple(shape[:len(shape) - k]) + tuple(
        shape[-1 - i] + pad[2 * i] + pad[2 * i + 1] for i in reversed(range(k)))


def _torch_misbehaves(t, shape, pad, mode):
    """PyTorch's outcome ``t`` is one of its misbehaviours (module docstring)."""
    if t[0] != "ok":
        return t[1].startswith(TORCH_INTERNAL)
    return _wraps_past_crop(shape, pad, mode) and t[1].size > 0


def _ids(cases):
    return [f"{mode}-{'x'.join(map(str, shape))}-{','.join(map(str, pad))}"
            + ("" if value is None else f"-v{value}") for shape, pad, mode, value in cases]


PARITY = SAMPLE + [c[:4] for c in ERRORS] + [c[:3] + (None,) for c in DEVIATING_ERRORS] \
    + [c + (None,) for c in DEVIATING_VALUES] + VALID


@pytest.mark.parametrize("shape, pad, mode, value", PARITY, ids=_ids(PARITY))
def test_pad_matches_torch(shape, pad, mode, value):
    torch = pytest.importorskip("torch")
    t = _outcome(torch, shape, pad, mode, value)
    e = _outcome(ember, shape, pad, mode, value)
    if _torch_misbehaves(t, shape, pad, mode):
        # Ember's own error, or the wrapped-around-again result NumPy's "wrap" gives
        if e[0] == "ok" and e[1].size == 0:
            assert e[1].shape == _out_shape(shape, pad)
        elif e[0] == "ok":
            np.testing.assert_array_equal(e[1], _np_pad(_x(shape), pad, mode))
        else:
            assert e[0] == "RuntimeError"
            assert "leaves nothing" in e[1] or "negative dimension" in e[1], e[1]
        return
    assert e[0] == t[0], (t, e)
    if t[0] == "ok":
        assert e[1].shape == t[1].shape
        np.testing.assert_array_equal(e[1], t[1])
    else:
        assert e[1] == t[1]


# -- without torch -------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, pad, mode, value, exc, message", ERRORS,
                         ids=_ids([c[:4] for c in ERRORS]))
def test_pad_error_messages(shape, pad, mode, value, exc, message):
    kw = {} if value is None else {"value": value}
    with pytest.raises(exc) as info:
        F.pad(ember.tensor(_x(shape)), pad, mode=mode, **kw)
    assert type(info.value) is exc and str(info.value) == message


@pytest.mark.parametrize("shape, pad, mode, exc, message", DEVIATING_ERRORS,
                         ids=_ids([c[:3] + (None,) for c in DEVIATING_ERRORS]))
def test_pad_clear_errors_where_torch_misbehaves(shape, pad, mode, exc, message):
    with pytest.raises(exc) as info:
        F.pad(ember.tensor(_x(shape)), pad, mode=mode)
    assert str(info.value) == message


@pytest.mark.parametrize("shape, pad, mode, value",
                         VALID + [c + (None,) for c in DEVIATING_VALUES],
                         ids=_ids(VALID + [c + (None,) for c in DEVIATING_VALUES]))
def test_pad_values_against_numpy(shape, pad, mode, value):
    x = _x(shape, np.float32)
    kw = {} if value is None else {"value": value}
    out = F.pad(ember.tensor(x), pad, mode=mode, **kw)
    ref = _np_pad(x, pad, mode, value)
    assert out.shape == ref.shape and out.dtype == ember.float32
    np.testing.assert_array_equal(out.numpy(), ref)


def test_replicate_cropping_past_the_size_repeats_the_edge():
    """PyTorch clamps each output position into the input: a crop past the size leaves the
    last (or first) column."""
    x = ember.tensor(_x((1, 4, 5)))
    assert F.pad(x, (-6, 2, 0, 0), mode="replicate").tolist() == [[[4.0], [9.0], [14.0], [19.0]]]
    assert F.pad(x, (2, -6), mode="replicate").tolist() == [[[0.0], [5.0], [10.0], [15.0]]]


def test_pad_dtype_checked_after_shapes():
    """PyTorch's reflection/replication kernels check the shapes before the dtype."""
    x = ember.tensor(np.ones((2, 5), dtype=np.uint16))
    with pytest.raises(NotImplementedError) as info:
        F.pad(x, (1, 1), mode="reflect")
    assert str(info.value) == "\"reflection_pad1d\" not implemented for 'UInt16'"
    with pytest.raises(RuntimeError) as info:
        F.pad(x, (-6, 1), mode="reflect")
    assert str(info.value) == "input (W: 5) is too small. Calculated output W: 0"
    assert F.pad(x, (1, 2), mode="circular").tolist() == [[1] * 8] * 2


def test_circular_empty_result_past_the_crop():
    """The result has no values: Ember returns it (PyTorch: "The size of tensor a (0) must
    match the size of tensor b (4)", from inside its copy)."""
    assert F.pad(ember.tensor(_x((1, 2, 5))), (1, -6), mode="circular").shape == (1, 2, 0)


# Every error PyTorch's pad raises (by message pattern) occurs in the compared sample.
ERROR_CLASSES = [r"Padding length must be divisible", r"Padding length should be less",
                 r"Unrecognised padding mode", r"doesn't take in value argument",
                 r"Padding size \d+ is not supported", r"narrow\(\): length",
                 r"Argument #4:", r"Argument #6:", r"Argument #8:",
                 r"Expected 2D or 3D", r"Expected 3D or 4D", r"Expected 4D or 5D",
                 r"input \(W: \d+\) is too small", r"input \(H: \d+, W: \d+\) is too small",
                 r"input \(H: \d+, W: \d+ \) is too small", r"input \(D: ",
                 r"negative dimension", r"wrapping around more than once",
                 r"Negative padding value is resulting", r"leaves nothing"]


def test_pad_sample_covers_every_error():
    seen = {o[1] for c in PARITY if (o := _outcome(ember, *c))[0] != "ok"}
    for pattern in ERROR_CLASSES:
        assert any(re.search(pattern, m) for m in seen), pattern
    assert sum(_outcome(ember, *c)[0] == "ok" for c in PARITY) > 100


@pytest.mark.parametrize("mode, shape, pad", [
    ("constant", (1, 3, 4), (-1, 2, 1, -1)), ("reflect", (2, 3, 4), (2, -1)),
    ("replicate", (1, 3, 4), (-2, 3, 2, -1)), ("circular", (1, 2, 3, 4), (-1, 2, 1, 0)),
    ("circular", (1, 2, 5), (-2, -3))])
def test_pad_gradcheck(mode, shape, pad):
    x = ember.tensor(np.random.default_rng(0).normal(size=shape), dtype=ember.float64,
                     requires_grad=True)
    assert gradcheck(lambda t: F.pad(t, pad, mode=mode), (x,))


@pytest.mark.parametrize("mode,kernel", [("reflect", "reflection"), ("replicate", "replication")])
def test_bool_reflect_and_replicate_have_no_kernel(mode, kernel):
    """PyTorch's reflection/replication kernels have no bool case (constant and circular do)."""
    for shape, pad in (((1, 2, 4), (1, 1)), ((1, 2, 3, 4), (1, 1, 1, 1)),
                       ((1, 1, 2, 3, 4), (1,) * 6)):
        k = len(pad) // 2
        with pytest.raises(NotImplementedError,
                           match=f'"{kernel}_pad{k}d" not implemented for \'Bool\''):
            F.pad(ember.ones(shape, dtype=ember.bool), pad, mode)
    assert F.pad(ember.ones(2, 3, dtype=ember.bool), (1, 1), "circular").all()
