"""Ops of ``torch.nn.functional``: activations, softmax, losses, normalizations, dropout,
embedding, padding, resampling, distances, attention and ``linear``.

Most of these ops exist in PyTorch only as ``torch.nn.functional.<name>`` or as an ATen
``torch.<name>`` with another signature (integer reductions, ``train=`` for ``training=``);
``torch=`` names the one whose signature the ember op has.

Two kinds of sample need more than ``op(input, *args)``; :class:`NNSample` carries them:

- ``clone=True``: the op writes into its input (``threshold_``, ``inplace=True``). Each call
  gets a fresh copy, so that one sample serves every check and a leaf that requires grad can
  go through it (PyTorch's ``test_ops`` clones before in-place variants too); the call then
  asserts that the op returned that copy.
- ``seed=<int>``: the op draws random numbers (dropout, rrelu, gumbel_softmax). Each call
  reseeds ember's default generators, as PyTorch's ``wrapper_set_seed`` does, so that
  gradcheck's repeated calls and the other devices see the same draws (ember draws on the
  host, so every device gets the same numbers); the generators' states are restored after.

The losses registered in their ATen form (``torch.kl_div(input, target, reduction=0)``, an
integer reduction) are compared with ``nn.functional``: :class:`AtenSample` keeps F's
arguments for PyTorch and converts them for ember's call (see ``aten_form``).
"""

from __future__ import annotations

import contextlib
import math
from functools import partial

import numpy as np

from . import FLOAT, FLOAT_AND_INT, SampleInput, define, make

_SEED = 1234


# -- samples that copy their input or fix the random draws ------------------------------------

class NNSample(SampleInput):
    """A :class:`SampleInput` whose call can copy the input first (in-place ops) and fix the
    random generators' seed (random ops); see the module doc."""

    __slots__ = ("clone", "seed")

    def __init__(self, input, *args, name: str = "", clone: bool = False,
                 seed: int | None = None, **kwargs):
        super().__init__(input, *args, name=name, **kwargs)
        self.clone, self.seed = clone, seed

    def call(self, fn):
        inp = _fresh(self.input) if self.clone else self.input
        with _seeded(self.seed) if self.seed is not None else contextlib.nullcontext():
            r = fn(inp, *self.args, **self.kwargs)
        if self.clone and not isinstance(inp, np.ndarray):
            assert r is inp, f"{self}: an in-place op must return its input"
        return r

    def map_tensors(self, f):
        s = SampleInput.map_tensors(self, f)
        out = NNSample.__new__(NNSample)
        out.input, out.args, out.kwargs, out.name = s.input, s.args, s.kwargs, s.name
        out.clone, out.seed = self.clone, self.seed
        return out


#: ATen's integer reductions
_REDUCTION_ENUM = {"none": 0, "mean": 1, "sum": 2}


class AtenSample(NNSample):
    """A loss sample written in ``torch.nn.functional``'s form, which PyTorch (the entry's
    oracle, ``nn.functional.<name>``) is called with, whose ember call takes ``torch.<name>``'s
    ATen form, the registered op: after the ``lead`` tensors, the parameters ``params``
    (names and F's defaults, in ATen's order) positionally, the reduction as ATen's
    integer. F's positional parameters are a prefix of ATen's in every loss here; ATen's
    keyword-only ones stay keywords. ``kl_div(x, t, 2)`` is so checked against
    ``F.kl_div(x, t, reduction="sum")``, and ``kl_div(x, t, 1)`` against ``F.kl_div(x, t)``
    (PyTorch's ATen forms default to no reduction, F's to the mean)."""

    __slots__ = ("lead", "params")

    def call(self, fn):
        given = (self.input, *self.args)[self.lead:]
        kw = dict(self.kwargs)
        pos = list(given)
        for p, default in self.params[len(given):]:
            pos.append(kw.pop(p, default))
        # (F's "batchmean" has no integer: the ATen form takes the string too)
        pos = [_REDUCTION_ENUM.get(v, v) if p == "reduction" and isinstance(v, str) else v
               for (p, _), v in zip(self.params, pos)]
        return fn(*(self.input, *self.args)[:self.lead], *pos, **kw)

    def map_tensors(self, f):
        s = SampleInput.map_tensors(self, f)
        out = AtenSample.__new__(AtenSample)
        out.input, out.args, out.kwargs, out.name = s.input, s.args, s.kwargs, s.name
        out.clone, out.seed, out.lead, out.params = self.clone, self.seed, self.lead, self.params
        return out


def aten_form(samples, lead: int, params: tuple):
    """``samples`` (F's form) as samples calling the ATen form (:class:`AtenSample`)."""

    def aten_samples(device, dtype, requires_grad=False):
        for s in samples(device, dtype, requires_grad):
            out = AtenSample.__new__(AtenSample)
            out.input, out.args, out.kwargs = s.input, s.args, s.kwargs
            out.name = s.name + " (ATen form)"
            out.clone, out.seed = s.clone, s.seed
            out.lead, out.params = lead, params
            yield out

    return aten_samples


def _define_aten_loss(name: str, samples, lead: int, params: tuple, **kwargs) -> None:
    """``define`` the loss ``name``, whose registered op is PyTorch's ATen form, from the
    samples of ``nn.functional.<name>`` (see :func:`aten_form`)."""
    define(name, aten_form(samples, lead, params), torch=f"nn.functional.{name}", **kwargs)


def _fresh(x):
    """A copy of an ember or torch tensor (``clone``) or a NumPy array."""
    return x.copy() if isinstance(x, np.ndarray) else x.clone()


@contextlib.contextmanager
def _seeded(seed):
    import ember

    from ... import _random

    gens = [_random.default_generator, *_random._device_generators.values()]
    states = [g.get_state() for g in gens]
    later = dict(_random._later_seeds)
    ember.manual_seed(seed)
    try:
        yield
    finally:
        for g, st in zip(gens, states):
            g.set_state(st)
        _random._later_seeds.clear()
        _random._later_seeds.update(later)


def _maker(dtype, device, requires_grad):
    """``t(shape, ...)``: a sample tensor of ``dtype`` (``dt=`` another), requiring grad when
    the samples do and ``grad`` is left True."""

    def t(shape, low=None, high=None, *, dt=None, grad=True, **kw):
        return make(shape, dt or dtype, device, low=low, high=high,
                    requires_grad=requires_grad and grad, **kw)

    return t


def _ints(values, device, dt="int64"):
    import ember

    return ember.tensor(np.asarray(values, dtype=dt), device=device)


def _is_int(dtype):
    return not str(dtype).startswith("float")


def _sign(shape, dtype, device):
    """A target of -1 and 1 (``dtype``)."""
    import ember

    return make(shape, "int64", device, low=0, high=2).to(getattr(ember, dtype)) * 2 - 1


# -- NumPy helpers for references -------------------------------------------------------------

def _np_float(a):
    return a if a.dtype.kind == "f" else a.astype(np.float32)


def _np_sigmoid(a):
    return 1 / (1 + np.exp(-a))


def _np_softplus(a):
    return np.maximum(a, 0) + np.log1p(np.exp(-np.abs(a)))


_np_erf = np.vectorize(math.erf, otypes=[np.float64])


def _legacy(reduction, size_average=None, reduce=None):
    """The reduction the deprecated ``size_average`` and ``reduce`` pair asks for."""
    if size_average is None and reduce is None:
        return reduction
    if reduce is False:
        return "none"
    return "sum" if size_average is False else "mean"


def _np_reduce(loss, reduction="mean"):
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


def _typed(f):
    """A reference computed in float64 and returned in the input's dtype."""

    def ref(a, *args, **kwargs):
        r = f(np.asarray(a, dtype=np.float64) if a.dtype.kind == "f" else a, *args, **kwargs)
        return np.asarray(r).astype(a.dtype) if a.dtype.kind == "f" else r

    return ref


# -- elementwise activations ------------------------------------------------------------------

_SHAPES = ((), (5,), (2, 3), (2, 0, 3))


def activation_samples(*extra, low=-3.0, high=3.0, inplace=False, int_extra=None, base=()):
    """The shapes of ``unary_samples`` (0-d, 1-d, 2-d, empty, non-contiguous) with the
    parameters ``base`` (positional; the defaults when empty), then each of ``extra``
    (``(args, kwargs)``) on a 3-d tensor, and with ``inplace`` an ``inplace=True`` call (on a
    copy). ``int_extra`` replaces ``extra`` for integer dtypes."""

    def samples(device, dtype, requires_grad=False):
        t = _maker(dtype, device, requires_grad)
        for shape in _SHAPES:
            yield NNSample(t(shape, low, high), *base, name=f"shape{shape}")
        yield NNSample(t((3, 4), low, high, noncontiguous=True), *base, name="noncontiguous")
        params = int_extra if int_extra is not None and _is_int(dtype) else extra
        for args, kwargs in params:
            yield NNSample(t((2, 3, 4), low, high), *args, name=f"{args} {kwargs}", **kwargs)
        if inplace:
            args, kwargs = params[0] if params else ((), {})
            yield NNSample(t((2, 3), low, high), *args, name="inplace=True", clone=True,
                           **kwargs, inplace=True)

    return samples


def _hardtanh_ref(a, min_val=-1.0, max_val=1.0, inplace=False):
    if a.dtype.kind != "f":  # integer limits, as PyTorch converts them to the input's type
        min_val, max_val = int(min_val), int(max_val)
    return np.clip(a, min_val, max_val).astype(a.dtype)


def _leaky_ref(a, negative_slope=0.01, inplace=False):
    return np.where(a > 0, a, a * negative_slope)


def _threshold_ref(a, threshold, value, inplace=False):
    return np.where(a > threshold, a, value).astype(a.dtype)


def _elu_ref(a, alpha=1.0, inplace=False):
    return np.where(a > 0, a, alpha * np.expm1(np.minimum(a, 0)))


def _selu_ref(a, inplace=False):
    return 1.0507009873554804934193349852946 * _elu_ref(a, 1.6732632423543772848170429916717)


def _celu_ref(a, alpha=1.0, inplace=False):
    return np.maximum(a, 0) + np.minimum(0, alpha * np.expm1(np.minimum(a, 0) / alpha))


def _gelu_ref(a, approximate="none"):
    if approximate == "tanh":
        return 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3)))
    return 0.5 * a * (1 + _np_erf(a / math.sqrt(2)))


def _softplus_ref(a, beta=1.0, threshold=20.0):
    return np.where(a * beta > threshold, a, _np_softplus(a * beta) / beta)


def _softshrink_ref(a, lambd=0.5):
    return np.where(a > lambd, a - lambd, np.where(a < -lambd, a + lambd, 0))


def _hardshrink_ref(a, lambd=0.5):
    return np.where(np.abs(a) > lambd, a, 0)


_ACTIVATIONS = {
    # name: (samples, dtypes, NumPy reference); PyTorch's is nn.functional.<name>
    "hardtanh": (activation_samples(((-0.5, 2.0), {}), ((), {"min_val": -2.0, "max_val": 0.5}),
                                    inplace=True,
                                    int_extra=(((-2, 4), {}), ((), {"min_val": -5, "max_val": 0}))),
                 FLOAT_AND_INT, _hardtanh_ref),
    "relu6": (activation_samples(low=-3, high=9, inplace=True), FLOAT_AND_INT + ("uint8",),
              lambda a, inplace=False: np.clip(a, 0, 6).astype(a.dtype)),
    "leaky_relu": (activation_samples(((0.2,), {}), ((), {"negative_slope": 1.5}),
                                      ((0.0,), {}), inplace=True),
                   FLOAT, _typed(_leaky_ref)),
    "threshold": (activation_samples(((0.5, -2.0), {}), ((-1.0, 3.0), {}), inplace=True,
                                     int_extra=(((2, 1), {}), ((4, 0), {})), base=(1, 0)),
                  FLOAT_AND_INT + ("uint8",), _threshold_ref),
    "elu": (activation_samples(((0.5,), {}), ((), {"alpha": 2.0}), inplace=True), FLOAT,
            _typed(_elu_ref)),
    "selu": (activation_samples(inplace=True), FLOAT, _typed(_selu_ref)),
    "celu": (activation_samples(((0.5,), {}), ((), {"alpha": 2.0}), inplace=True), FLOAT,
             _typed(_celu_ref)),
    "gelu": (activation_samples(((), {"approximate": "tanh"}), ((), {"approximate": "none"})),
             FLOAT, _typed(_gelu_ref)),
    "silu": (activation_samples(low=-8, high=8), FLOAT, _typed(lambda a: a * _np_sigmoid(a))),
    "softplus": (activation_samples(((2.0,), {}), ((), {"beta": 0.5, "threshold": 1.0}),
                                    low=-5, high=5),
                 FLOAT, _typed(_softplus_ref)),
    "mish": (activation_samples(low=-8, high=8), FLOAT,
             _typed(lambda a: a * np.tanh(_np_softplus(a)))),
    "logsigmoid": (activation_samples(low=-30, high=30), FLOAT,
                   _typed(lambda a: -_np_softplus(-a))),
    "hardswish": (activation_samples(low=-5, high=5), FLOAT,
                  _typed(lambda a: a * np.clip(a + 3, 0, 6) / 6)),
    "hardsigmoid": (activation_samples(low=-5, high=5), FLOAT,
                    _typed(lambda a: np.clip(a + 3, 0, 6) / 6)),
    "softshrink": (activation_samples(((1.0,), {}), ((), {"lambd": 0.0})), FLOAT,
                   _typed(_softshrink_ref)),
    "hardshrink": (activation_samples(((1.0,), {}), ((), {"lambd": 2.0})), FLOAT,
                   _typed(_hardshrink_ref)),
    "softsign": (activation_samples(), FLOAT_AND_INT + ("uint8",),
                 lambda a: (_np_float(a) / (1 + np.abs(_np_float(a)))).astype(_np_float(a).dtype)),
    "tanhshrink": (activation_samples(), FLOAT_AND_INT + ("uint8",),
                   lambda a: (_np_float(a) - np.tanh(_np_float(a))).astype(_np_float(a).dtype)),
}

for _name, (_samples, _dtypes, _ref) in _ACTIVATIONS.items():
    define(_name, _samples, dtypes=_dtypes, ref=_ref, torch=f"nn.functional.{_name}")


# the ``torch.<name>_`` forms of four of them: ``(input, *params)``, writing into input
def inplace_activation_samples(*params, low=-3.0, high=3.0, int_params=None):
    """``op_(input, *params)`` on copies of 0-d, 1-d, 2-d, empty and non-contiguous inputs."""

    def samples(device, dtype, requires_grad=False):
        t = _maker(dtype, device, requires_grad)
        ps = int_params if int_params is not None and _is_int(dtype) else params
        first = ps[0] if ps else ()
        for shape in _SHAPES:
            yield NNSample(t(shape, low, high), *first, name=f"shape{shape}", clone=True)
        yield NNSample(t((3, 4), low, high, noncontiguous=True), *first, name="noncontiguous",
                       clone=True)
        for p in ps[1:]:
            yield NNSample(t((2, 3, 4), low, high), *p, name=f"{p}", clone=True)

    return samples


define("threshold_", inplace_activation_samples((0.5, -2.0), (-1.0, 3.0),
                                                int_params=((2, 1), (4, 0))),
       dtypes=FLOAT_AND_INT + ("uint8",), ref=_threshold_ref)
define("selu_", inplace_activation_samples(), ref=_typed(_selu_ref))
define("celu_", inplace_activation_samples((), (0.5,), (2.0,)), ref=_typed(_celu_ref))


# -- prelu, rrelu, glu ------------------------------------------------------------------------

def prelu_samples(device, dtype, requires_grad=False):
    t = _maker(dtype, device, requires_grad)
    yield NNSample(t((2, 3, 4)), t((3,), 0.05, 0.5), name="per channel")
    yield NNSample(t((2, 3, 4)), t((1,), 0.05, 0.5), name="one weight")
    yield NNSample(t((2, 3)), t((3,), 0.05, 0.5), name="2-d")
    yield NNSample(t((2, 3, 2, 2)), t((3,), -0.5, 0.5), name="4-d, negative slopes")
    yield NNSample(t((5,)), t((1,), 0.05, 0.5), name="1-d")
    yield NNSample(t(()), t((1,), 0.05, 0.5), name="0-d")
    yield NNSample(t((0, 3)), t((3,), 0.05, 0.5), name="empty")
    yield NNSample(t((3, 4), noncontiguous=True), t((4,), 0.05, 0.5, noncontiguous=True),
                   name="noncontiguous")


def _prelu_ref(a, w):
    w = w.reshape((-1,) + (1,) * (a.ndim - 2)) if a.ndim >= 2 and w.size > 1 else w.reshape(())
    return np.where(a > 0, a, w * a).astype(a.dtype)


define("prelu", prelu_samples, ref=_prelu_ref, torch="nn.functional.prelu")


def rrelu_samples(device, dtype, requires_grad=False):
    """Evaluation mode (the mean slope) and training mode with ``lower == upper``: the slopes
    are drawn (seeded), but all equal, so PyTorch's values match; draws from a real range are
    checked by distribution in tests/core/test_activation.py."""
    t = _maker(dtype, device, requires_grad)
    for shape in _SHAPES:
        yield NNSample(t(shape), name=f"shape{shape}")
    yield NNSample(t((3, 4), noncontiguous=True), name="noncontiguous")
    yield NNSample(t((2, 3, 4)), 0.1, 0.3, name="eval, bounds")
    yield NNSample(t((2, 3, 4)), 0.2, 0.2, True, name="training, lower == upper", seed=_SEED)
    yield NNSample(t((2, 3)), name="training by keyword", lower=0.25, upper=0.25,
                   training=True, seed=_SEED)


def _rrelu_ref(a, lower=1 / 8, upper=1 / 3, training=False):
    return np.where(a >= 0, a, a * ((lower + upper) / 2)).astype(a.dtype)


# the op is torch.rrelu (ATen's generator= where F.rrelu has inplace=: F's own function,
# tested in tests/core/test_activation.py)
define("rrelu", rrelu_samples, ref=_rrelu_ref, torch="rrelu")


def rrelu_inplace_samples(device, dtype, requires_grad=False):
    t = _maker(dtype, device, requires_grad)
    for shape in _SHAPES:
        yield NNSample(t(shape), name=f"shape{shape}", clone=True)
    yield NNSample(t((3, 4), noncontiguous=True), 0.1, 0.3, name="noncontiguous", clone=True)
    yield NNSample(t((2, 3, 4)), 0.2, 0.2, True, name="training, lower == upper", clone=True,
                   seed=_SEED)


define("rrelu_", rrelu_inplace_samples, ref=_rrelu_ref)


def glu_samples(device, dtype, requires_grad=False):
    t = _maker(dtype, device, requires_grad)
    yield NNSample(t((4,)), name="1-d")
    yield NNSample(t((2, 6)), name="default dim -1")
    yield NNSample(t((4, 3)), 0, name="dim 0")
    yield NNSample(t((2, 4, 3)), dim=1, name="dim=1")
    yield NNSample(t((2, 3, 4)), 2, name="dim 2")
    yield NNSample(t((0, 4)), name="empty")
    yield NNSample(t((3, 8), noncontiguous=True), name="noncontiguous")


def _glu_ref(a, dim=-1):
    x, y = np.split(a, 2, axis=dim)
    return x * _np_sigmoid(y)


define("glu", glu_samples, ref=_typed(_glu_ref), torch="nn.functional.glu")


# -- softmax family ---------------------------------------------------------------------------

def softmax_samples(device, dtype, requires_grad=False):
    """Every dim (positive, negative) of 0-d to 3-d inputs, empty and non-contiguous ones, and
    large logits (stability)."""
    t = _maker(dtype, device, requires_grad)
    yield NNSample(t(()), 0, name="0-d")
    yield NNSample(t((5,)), 0, name="1-d")
    yield NNSample(t((2, 3)), 1, name="dim 1")
    yield NNSample(t((2, 3)), -2, name="dim -2")
    yield NNSample(t((2, 3, 4)), dim=1, name="3-d, dim=1")
    yield NNSample(t((2, 3, 4)), -1, name="3-d, dim -1")
    yield NNSample(t((2, 0, 3)), -1, name="empty")
    yield NNSample(t((3, 4), noncontiguous=True), 1, name="noncontiguous")
    yield NNSample(t((2, 5), 50, 90), 1, name="large logits")
    yield NNSample(t((3, 1)), 1, name="a dim of size 1")


def _softmax_ref(a, dim, log=False):
    if a.ndim == 0:
        return np.zeros_like(a) if log else np.ones_like(a)
    if a.size == 0:
        return a.copy()
    s = a - a.max(dim, keepdims=True)
    lse = np.log(np.exp(s).sum(dim, keepdims=True))
    return (s - lse) if log else np.exp(s - lse)


define("softmax", softmax_samples, ref=_typed(lambda a, dim: _softmax_ref(a, dim)),
       torch="nn.functional.softmax")
define("log_softmax", softmax_samples, ref=_typed(lambda a, dim: _softmax_ref(a, dim, True)),
       torch="nn.functional.log_softmax")
define("softmin", softmax_samples, ref=_typed(lambda a, dim: _softmax_ref(-a, dim)),
       torch="nn.functional.softmin")


# -- classification losses --------------------------------------------------------------------

_REDUCTIONS = ("mean", "sum", "none")


def nll_samples(device, dtype, requires_grad=False):
    """``(N, C)``, ``(C,)`` with a 0-d target, ``(N, C, d1, d2)``, an empty batch, class
    weights, ``ignore_index`` and every reduction."""
    t = _maker(dtype, device, requires_grad)

    def target(shape, high=5):
        return make(shape, "int64", device, low=0, high=high)

    for r in _REDUCTIONS:
        yield NNSample(t((3, 5)), target((3,)), reduction=r, name=f"(N, C) {r}")
    yield NNSample(t((5,)), target(()), name="(C,)")
    yield NNSample(t((2, 5, 3, 2)), target((2, 3, 2)), name="(N, C, d1, d2)")
    yield NNSample(t((2, 5, 3)), target((2, 3)), reduction="none", name="(N, C, d) none")
    yield NNSample(t((3, 5)), target((3,)), t((5,), 0.2, 2, grad=False), name="weight")
    yield NNSample(t((4, 5)), _ints([1, 3, 1, 0], device), t((5,), 0.2, 2, grad=False),
                   ignore_index=1, name="weight, ignore_index")
    yield NNSample(t((4, 5)), _ints([1, 3, 1, 0], device), ignore_index=1, reduction="sum",
                   name="ignore_index, sum")
    yield NNSample(t((0, 5)), target((0,)), reduction="sum", name="empty batch")
    yield NNSample(t((3, 10), noncontiguous=True), target((3,)), name="noncontiguous")
    yield NNSample(t((3, 5)), target((3,)), reduce=False, name="deprecated reduce=False")
    yield NNSample(t((3, 5)), _ints([1, 4, 0], device, "uint8"), name="uint8 target")


def _nll_ref(a, t, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    reduction = _legacy(reduction, size_average, reduce)
    ca = 0 if a.ndim == 1 else 1
    C = a.shape[ca]
    w = np.ones(C, a.dtype) if weight is None else weight
    valid = t != ignore_index
    tc = np.where(valid, t, 0)
    picked = np.take_along_axis(a, np.expand_dims(tc, ca), ca).squeeze(ca) if a.ndim > 1 \
        else a[tc]
    wt = w[tc] * valid
    loss = -picked * wt
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / wt.sum()


define("nll_loss", nll_samples, ref=_nll_ref, torch="nn.functional.nll_loss")


def cross_entropy_samples(device, dtype, requires_grad=False):
    """nll_loss's samples, label smoothing (with weights and ignored entries), and class
    probabilities as the target."""
    yield from nll_samples(device, dtype, requires_grad)
    t = _maker(dtype, device, requires_grad)
    yield NNSample(t((3, 5)), make((3,), "int64", device, low=0, high=5), label_smoothing=0.1,
                   name="label_smoothing")
    yield NNSample(t((4, 5)), _ints([1, 3, 1, 0], device), t((5,), 0.2, 2, grad=False),
                   ignore_index=1, label_smoothing=0.2, name="smoothing, weight, ignore_index")
    yield NNSample(t((2, 5, 3)), make((2, 3), "int64", device, low=0, high=5),
                   label_smoothing=0.3, reduction="sum", name="smoothing, (N, C, d), sum")
    probs = t((3, 5), 0.0, 1.0)
    yield NNSample(t((3, 5)), probs, name="probability target")
    yield NNSample(t((2, 4, 3)), t((2, 4, 3), 0.0, 1.0), t((4,), 0.2, 2, grad=False),
                   label_smoothing=0.1, reduction="none",
                   name="probability target, weight, smoothing")
    yield NNSample(t((5,)), t((5,), 0.0, 1.0), name="(C,) probability target")


define("cross_entropy", cross_entropy_samples, torch="nn.functional.cross_entropy")


def _pairwise_loss_samples(low=None, high=None, tlow=None, thigh=None, kwargs=(),
                           target_grad=True, sign_target=False, weight=False,
                           legacy=("size_average",), broadcast=True):
    """``loss(input, target)`` of one shape: 0-d, 1-d, 2-d, 3-d, empty, non-contiguous, every
    reduction and each of ``kwargs``; ``sign_target``: a target of -1 and 1; ``weight``: the
    ``weight=`` keyword (mse, l1, huber); ``legacy``: the deprecated ``size_average`` it
    takes; ``broadcast``: a target that broadcasts (PyTorch warns, then broadcasts)."""

    def samples(device, dtype, requires_grad=False):
        t = _maker(dtype, device, requires_grad)

        def target(shape, **kw):
            if sign_target:
                return _sign(shape, dtype, device)
            return t(shape, tlow, thigh, grad=target_grad, **kw)

        yield NNSample(t((), low, high), target(()), name="0-d")
        yield NNSample(t((5,), low, high), target((5,)), name="1-d")
        for r in _REDUCTIONS:
            yield NNSample(t((2, 3), low, high), target((2, 3)), reduction=r, name=r)
        yield NNSample(t((2, 3, 2), low, high), target((2, 3, 2)), name="3-d")
        yield NNSample(t((0, 3), low, high), target((0, 3)), reduction="sum", name="empty")
        yield NNSample(t((3, 4), low, high, noncontiguous=True),
                       target((3, 4), noncontiguous=True), name="noncontiguous")
        for kw in kwargs:
            yield NNSample(t((2, 3), low, high), target((2, 3)), name=str(kw), **kw)
        if broadcast:
            yield NNSample(t((2, 3), low, high), target((3,)), reduction="none",
                           name="broadcast target")
        if "size_average" in legacy:
            yield NNSample(t((2, 3), low, high), target((2, 3)), size_average=False,
                           name="deprecated size_average=False")
        if weight:
            for r in _REDUCTIONS:
                yield NNSample(t((2, 3), low, high), target((2, 3)),
                               weight=t((2, 3), 0.1, 2, grad=False), reduction=r,
                               name=f"weight, {r}")

    return samples


def _mse_ref(a, b, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = _legacy(reduction, size_average, reduce)
    loss = (a - b) ** 2
    if weight is None:
        return _np_reduce(loss, reduction)
    if reduction == "mean":
        return (loss * weight).sum() / weight.sum()
    return _np_reduce(loss * weight, reduction)


def _l1_ref(a, b, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = _legacy(reduction, size_average, reduce)
    loss = np.abs(a - b)
    if weight is None:
        return _np_reduce(loss, reduction)
    if reduction == "mean":
        return (loss * weight).sum() / weight.sum()
    return _np_reduce(loss * weight, reduction)


def _smooth_l1_ref(a, b, size_average=None, reduce=None, reduction="mean", beta=1.0):
    reduction = _legacy(reduction, size_average, reduce)
    d = np.abs(a - b)
    loss = d if beta == 0 else np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
    return _np_reduce(loss, reduction)


def _huber_ref(a, b, reduction="mean", delta=1.0, weight=None):
    d = np.abs(a - b)
    loss = np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    return _np_reduce(loss if weight is None else loss * weight, reduction)


def _soft_margin_ref(a, y, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy(reduction, size_average, reduce)
    return _np_reduce(np.log1p(np.exp(-y * a)), reduction)


define("mse_loss", _pairwise_loss_samples(weight=True), ref=_typed(_mse_ref),
       torch="nn.functional.mse_loss")
define("l1_loss", _pairwise_loss_samples(weight=True), ref=_typed(_l1_ref),
       torch="nn.functional.l1_loss")
define("smooth_l1_loss", _pairwise_loss_samples(kwargs=({"beta": 0.5}, {"beta": 2.0},
                                                        {"beta": 0.0})),
       ref=_typed(_smooth_l1_ref), torch="nn.functional.smooth_l1_loss")
define("huber_loss", _pairwise_loss_samples(kwargs=({"delta": 0.5}, {"delta": 2.0}),
                                            weight=True, legacy=()),
       ref=_typed(_huber_ref), torch="nn.functional.huber_loss")
define("soft_margin_loss", _pairwise_loss_samples(sign_target=True), ref=_typed(_soft_margin_ref),
       torch="nn.functional.soft_margin_loss")


def bce_weight_samples(device, dtype, requires_grad=False):
    """``binary_cross_entropy``'s samples plus class weights (broadcast)."""
    yield from _pairwise_loss_samples(0.05, 0.95, 0.0, 1.0, broadcast=False)(
        device, dtype, requires_grad)
    t = _maker(dtype, device, requires_grad)
    for r in _REDUCTIONS:
        yield NNSample(t((2, 3), 0.05, 0.95), t((2, 3), 0.0, 1.0), t((2, 3), 0.2, 2, grad=False),
                       reduction=r, name=f"weight, {r}")
    yield NNSample(t((4, 3), 0.05, 0.95), t((4, 3), 0.0, 1.0), t((3,), 0.2, 2, grad=False),
                   name="broadcast weight")


define("binary_cross_entropy", bce_weight_samples, torch="nn.functional.binary_cross_entropy")


def bce_logits_samples(device, dtype, requires_grad=False):
    yield from _pairwise_loss_samples(-4, 4, 0.0, 1.0, broadcast=False, legacy=())(
        device, dtype, requires_grad)
    t = _maker(dtype, device, requires_grad)
    for r in _REDUCTIONS:
        yield NNSample(t((2, 3)), t((2, 3), 0.0, 1.0), t((2, 3), 0.2, 2, grad=False),
                       reduction=r, name=f"weight, {r}")
        yield NNSample(t((4, 3)), t((4, 3), 0.0, 1.0), pos_weight=t((3,), 0.2, 3, grad=False),
                       reduction=r, name=f"pos_weight, {r}")
    yield NNSample(t((4, 3), -30, 30), t((4, 3), 0.0, 1.0), t((3,), 0.2, 2, grad=False),
                   pos_weight=t((3,), 0.2, 3, grad=False), name="large logits, both weights")


# the registered ops below are the ATen forms (``torch.<name>``, integer reductions); their
# samples are F's, which the PyTorch oracle takes, converted for ember's call (AtenSample)
_define_aten_loss("binary_cross_entropy_with_logits", bce_logits_samples, 2,
                  (("weight", None), ("pos_weight", None), ("reduction", "mean")))


def kl_div_samples(device, dtype, requires_grad=False):
    t = _maker(dtype, device, requires_grad)
    for r in ("mean", "sum", "none", "batchmean"):
        yield NNSample(t((3, 4), -3, -0.1), t((3, 4), 0.05, 1), reduction=r, name=r)
        yield NNSample(t((3, 4), -3, -0.1), t((3, 4), -3, -0.1), reduction=r, log_target=True,
                       name=f"log_target, {r}")
    yield NNSample(t((), -3, -0.1), t((), 0.05, 1), name="0-d")
    yield NNSample(t((2, 3, 2), -3, -0.1), t((2, 3, 2), 0.05, 1), reduction="batchmean",
                   name="3-d")
    yield NNSample(t((3, 4), -3, -0.1, noncontiguous=True), t((3, 4), 0.05, 1),
                   reduction="sum", name="noncontiguous")


_define_aten_loss("kl_div", kl_div_samples, 2, (("reduction", "mean"),))


def poisson_nll_samples(device, dtype, requires_grad=False):
    t = _maker(dtype, device, requires_grad)
    for r in _REDUCTIONS:
        yield NNSample(t((2, 3), -2, 2), t((2, 3), 0, 4), reduction=r, name=r)
    yield NNSample(t((2, 3), 0.2, 3), t((2, 3), 0, 4), log_input=False, name="log_input=False")
    yield NNSample(t((2, 3), -2, 2), t((2, 3), 0, 4), full=True, name="full")
    yield NNSample(t((2, 3), 0.2, 3), t((2, 3), 0, 4), False, True, eps=1e-3,
                   reduction="sum", name="log_input=False, full, eps")
    yield NNSample(t((5,), -2, 2), t((5,), 0, 4), name="1-d")
    yield NNSample(t((3, 4), -2, 2, noncontiguous=True), t((3, 4), 0, 4), name="noncontiguous")


_define_aten_loss("poisson_nll_loss", poisson_nll_samples, 2,
                  (("log_input", True), ("full", False), ("eps", 1e-8), ("reduction", "mean")))


def gaussian_nll_samples(device, dtype, requires_grad=False):
    t = _maker(dtype, device, requires_grad)
    for r in _REDUCTIONS:
        yield NNSample(t((3, 4)), t((3, 4)), t((3, 4), 0.2, 2), reduction=r, name=r)
    yield NNSample(t((3, 4)), t((3, 4)), t((3, 1), 0.2, 2), name="var (N, 1)")
    yield NNSample(t((3, 4)), t((3, 4)), t((3,), 0.2, 2), name="var (N,)")
    yield NNSample(t((3, 4)), t((3, 4)), 0.7, name="float var")
    yield NNSample(t((3, 4)), t((3, 4)), t((3, 4), 0.2, 2), full=True, eps=1e-3, name="full, eps")
    yield NNSample(t((5,)), t((5,)), t((5,), 0.2, 2), name="1-d")


define("gaussian_nll_loss", gaussian_nll_samples, torch="nn.functional.gaussian_nll_loss")


def margin_ranking_samples(device, dtype, requires_grad=False):
    t, sign = _maker(dtype, device, requires_grad), partial(_sign, dtype=dtype, device=device)
    for r in _REDUCTIONS:
        yield NNSample(t((5,)), t((5,)), sign((5,)), reduction=r, name=r)
    yield NNSample(t((5,)), t((5,)), sign((5,)), 0.5, name="margin")
    yield NNSample(t(()), t(()), sign(()), margin=0.3, name="0-d")
    yield NNSample(t((2, 3)), t((2, 3)), sign((2, 3)), name="2-d")


_define_aten_loss("margin_ranking_loss", margin_ranking_samples, 3,
                  (("margin", 0.0), ("reduction", "mean")))


def hinge_embedding_samples(device, dtype, requires_grad=False):
    t, sign = _maker(dtype, device, requires_grad), partial(_sign, dtype=dtype, device=device)
    for r in _REDUCTIONS:
        yield NNSample(t((2, 3), 0, 2), sign((2, 3)), reduction=r, name=r)
    yield NNSample(t((5,), 0, 2), sign((5,)), 1.5, name="margin")
    yield NNSample(t((), 0, 2), sign(()), name="0-d")
    yield NNSample(t((3, 4), 0, 2, noncontiguous=True), sign((3, 4)), name="noncontiguous")


_define_aten_loss("hinge_embedding_loss", hinge_embedding_samples, 2,
                  (("margin", 1.0), ("reduction", "mean")))


def cosine_embedding_samples(device, dtype, requires_grad=False):
    t, sign = _maker(dtype, device, requires_grad), partial(_sign, dtype=dtype, device=device)
    for r in _REDUCTIONS:
        yield NNSample(t((4, 3)), t((4, 3)), sign((4,)), reduction=r, name=r)
    yield NNSample(t((4, 3)), t((4, 3)), sign((4,)), 0.2, name="margin")
    yield NNSample(t((3,)), t((3,)), sign(()), margin=-0.5, name="1-d")


_define_aten_loss("cosine_embedding_loss", cosine_embedding_samples, 3,
                  (("margin", 0.0), ("reduction", "mean")))


def triplet_samples(device, dtype, requires_grad=False):
    t = _maker(dtype, device, requires_grad)
    for r in _REDUCTIONS:
        yield NNSample(t((4, 3)), t((4, 3)), t((4, 3)), reduction=r, name=r)
    yield NNSample(t((4, 3)), t((4, 3)), t((4, 3)), 2.0, 1, name="margin, p=1")
    yield NNSample(t((4, 3)), t((4, 3)), t((4, 3)), p=3, eps=1e-3, name="p=3, eps")
    yield NNSample(t((4, 3)), t((4, 3)), t((4, 3)), swap=True, margin=5.0, name="swap")
    yield NNSample(t((3,)), t((3,)), t((3,)), margin=5.0, name="1-d")


_define_aten_loss("triplet_margin_loss", triplet_samples, 3,
                  (("margin", 1.0), ("p", 2), ("eps", 1e-6), ("swap", False),
                   ("reduction", "mean")))


def _squared_distance(a, b):
    """A distance function written with operators only, so ember and PyTorch both run it."""
    return ((a - b) ** 2).sum(-1)


def triplet_distance_samples(device, dtype, requires_grad=False):
    t = _maker(dtype, device, requires_grad)
    for r in _REDUCTIONS:
        yield NNSample(t((4, 3)), t((4, 3)), t((4, 3)), reduction=r, name=r)
    yield NNSample(t((4, 3)), t((4, 3)), t((4, 3)), distance_function=_squared_distance,
                   margin=3.0, name="distance_function")
    yield NNSample(t((4, 3)), t((4, 3)), t((4, 3)), distance_function=_squared_distance,
                   swap=True, margin=10.0, name="swap")
    yield NNSample(t((3,)), t((3,)), t((3,)), margin=5.0, name="1-d")


define("triplet_margin_with_distance_loss", triplet_distance_samples,
       torch="nn.functional.triplet_margin_with_distance_loss")


def multilabel_soft_margin_samples(device, dtype, requires_grad=False):
    t = _maker(dtype, device, requires_grad)

    def labels(shape):
        return (_sign(shape, dtype, device) + 1) / 2

    for r in _REDUCTIONS:
        yield NNSample(t((3, 4)), labels((3, 4)), reduction=r, name=r)
    yield NNSample(t((3, 4)), labels((3, 4)), t((4,), 0.2, 2, grad=False), name="weight")
    yield NNSample(t((3, 4)), t((3, 4), 0, 1), name="soft labels")


define("multilabel_soft_margin_loss", multilabel_soft_margin_samples,
       torch="nn.functional.multilabel_soft_margin_loss")


def multi_margin_samples(device, dtype, requires_grad=False):
    t = _maker(dtype, device, requires_grad)

    def target(shape):
        return make(shape, "int64", device, low=0, high=5)

    for r in _REDUCTIONS:
        yield NNSample(t((3, 5)), target((3,)), reduction=r, name=r)
    yield NNSample(t((3, 5)), target((3,)), 2, name="p=2")
    yield NNSample(t((3, 5)), target((3,)), margin=0.5, weight=t((5,), 0.2, 2, grad=False),
                   name="margin, weight")
    yield NNSample(t((3, 5)), target((3,)), p=2, margin=2.0, weight=t((5,), 0.2, 2, grad=False),
                   reduction="sum", name="p=2, margin, weight, sum")
    yield NNSample(t((5,)), target(()), name="1-d")


define("multi_margin_loss", multi_margin_samples, torch="nn.functional.multi_margin_loss")


def multilabel_margin_samples(device, dtype, requires_grad=False):
    t = _maker(dtype, device, requires_grad)
    tg = _ints([[3, 0, -1, 1], [0, 1, 2, 3], [1, -1, 0, 0]], device)
    for r in _REDUCTIONS:
        yield NNSample(t((3, 4)), tg, reduction=r, name=r)
    yield NNSample(t((4,)), _ints([2, 1, -1, 3], device), name="1-d")


define("multilabel_margin_loss", multilabel_margin_samples,
       torch="nn.functional.multilabel_margin_loss")


def ctc_samples(device, dtype, requires_grad=False):
    """Log-probabilities (``log_softmax`` of logits, as CTC expects) of ``(T, N, C)`` and
    ``(T, C)``, padded and concatenated targets, every reduction, repeated labels (a blank
    between them), an impossible alignment with ``zero_infinity`` and lengths as tuples."""
    import ember

    def logp(shape):
        x = make(shape, dtype, device, low=-2, high=2)
        lp = ember.log_softmax(x, -1).detach()
        return lp.requires_grad_(True) if requires_grad else lp

    targets = _ints([[1, 2, 2], [3, 1, 0]], device)
    il, tl = _ints([6, 5], device), _ints([3, 2], device)
    for r in _REDUCTIONS:
        yield NNSample(logp((6, 2, 4)), targets, il, tl, reduction=r, name=r)
    yield NNSample(logp((6, 2, 4)), _ints([1, 2, 2, 3, 1], device), (6, 5), (3, 2),
                   name="concatenated targets, tuple lengths")
    yield NNSample(logp((6, 2, 4)), _ints([[1, 2, 0], [0, 1, 0]], device), il, tl, blank=3,
                   reduction="sum", name="blank=3")
    yield NNSample(logp((5, 3)), _ints([1, 2], device), _ints(5, device), _ints(2, device),
                   name="unbatched")
    yield NNSample(logp((6, 2, 4)), _ints([[1, 2, 2], [3, 1, 0]], device, "int32"),
                   _ints([6, 5], device, "int32"), _ints([3, 2], device, "int32"),
                   name="int32 targets and lengths")
    yield NNSample(logp((3, 2, 4)), _ints([[1, 1, 1], [2, 0, 0]], device), _ints([3, 3], device),
                   _ints([3, 1], device), reduction="sum", zero_infinity=True,
                   name="impossible alignment, zero_infinity")


_define_aten_loss("ctc_loss", ctc_samples, 4,
                  (("blank", 0), ("reduction", "mean"), ("zero_infinity", False)),
                  skip={"gradgradcheck": "not twice differentiable, as in PyTorch: a backward "
                                         "through the gradient raises 'derivative for "
                                         "aten::_ctc_loss_backward is not implemented' "
                                         "(tests/core/test_loss.py)"})


# -- normalizations ---------------------------------------------------------------------------

def batch_norm_samples(device, dtype, requires_grad=False):
    """``torch.batch_norm``'s positional form: training (batch statistics; running ones
    updated in place) and evaluation (running statistics), with and without affine
    parameters, on ``(N, C)`` to ``(N, C, D, H, W)`` inputs."""
    t = _maker(dtype, device, requires_grad)

    def stats(c):
        return t((c,), -1, 1, grad=False), t((c,), 0.5, 2, grad=False)

    for shape in ((4, 3), (2, 3, 4), (2, 3, 2, 2), (2, 3, 2, 1, 2)):
        rm, rv = stats(3)
        yield NNSample(t(shape), t((3,), 0.5, 2), t((3,)), rm, rv, True, 0.1, 1e-5, False,
                       name=f"training {shape}")
        rm, rv = stats(3)
        yield NNSample(t(shape), t((3,), 0.5, 2), t((3,)), rm, rv, False, 0.1, 1e-5, False,
                       name=f"eval {shape}")
    yield NNSample(t((4, 3, 2)), None, None, None, None, True, 0.1, 1e-3, False,
                   name="training, no affine, no running stats")
    rm, rv = stats(3)
    yield NNSample(t((4, 3, 2)), None, None, rm, rv, False, 0.1, 1e-5, False,
                   name="eval, no affine")
    yield NNSample(t((4, 3, 2), noncontiguous=True), t((3,), 0.5, 2), None, None, None, True,
                   0.1, 1e-5, False, name="noncontiguous, weight only")


define("batch_norm", batch_norm_samples)


def instance_norm_samples(device, dtype, requires_grad=False):
    t = _maker(dtype, device, requires_grad)
    for shape in ((2, 3, 4), (2, 3, 2, 3), (1, 3, 2, 2, 2)):
        yield NNSample(t(shape), t((3,), 0.5, 2), t((3,)), None, None, True, 0.1, 1e-5, False,
                       name=f"{shape}")
    yield NNSample(t((2, 3, 4)), None, None, t((3,), -1, 1, grad=False),
                   t((3,), 0.5, 2, grad=False), True, 0.1, 1e-5, False,
                   name="running stats updated")
    yield NNSample(t((2, 3, 4)), t((3,), 0.5, 2), None, t((3,), -1, 1, grad=False),
                   t((3,), 0.5, 2, grad=False), False, 0.1, 1e-5, False,
                   name="use_input_stats=False")
    yield NNSample(t((2, 3, 8), noncontiguous=True), None, None, None, None, True, 0.1, 1e-3,
                   False, name="noncontiguous")


define("instance_norm", instance_norm_samples)


def layer_norm_samples(device, dtype, requires_grad=False):
    t = _maker(dtype, device, requires_grad)
    yield NNSample(t((2, 3, 4)), [4], t((4,), 0.5, 2), t((4,)), name="last dim, affine")
    yield NNSample(t((2, 3, 4)), (3, 4), t((3, 4), 0.5, 2), t((3, 4)), 1e-3, name="two dims")
    yield NNSample(t((2, 3, 4)), [2, 3, 4], name="all dims, no affine")
    yield NNSample(t((5,)), [5], t((5,), 0.5, 2), None, name="1-d, weight only")
    yield NNSample(t((0, 4)), [4], t((4,), 0.5, 2), t((4,)), name="empty batch")
    yield NNSample(t((3, 4), noncontiguous=True), [4], None, t((4,)), name="noncontiguous")


def _layer_norm_ref(a, shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    axes = tuple(range(a.ndim - len(shape), a.ndim))
    if a.size == 0:
        r = a.copy()
    else:
        r = (a - a.mean(axes, keepdims=True)) / np.sqrt(a.var(axes, keepdims=True) + eps)
    if weight is not None:
        r = r * weight
    if bias is not None:
        r = r + bias
    return r


# float16: PyTorch normalizes in float32 and rounds once, as ember does
define("layer_norm", layer_norm_samples, dtypes=FLOAT + ("float16",), ref=_typed(_layer_norm_ref))


def group_norm_samples(device, dtype, requires_grad=False):
    t = _maker(dtype, device, requires_grad)
    yield NNSample(t((2, 6, 3)), 3, t((6,), 0.5, 2), t((6,)), name="3 groups")
    yield NNSample(t((2, 4)), 2, name="(N, C), no affine")
    yield NNSample(t((2, 6, 2, 2)), 1, t((6,), 0.5, 2), t((6,)), 1e-3, name="1 group")
    yield NNSample(t((2, 6, 2, 2)), 6, None, t((6,)), name="a group per channel")
    yield NNSample(t((1, 4, 2, 1, 2)), 2, t((4,), 0.5, 2), None, name="5-d")
    yield NNSample(t((2, 4, 6), noncontiguous=True), 2, name="noncontiguous")


define("group_norm", group_norm_samples, dtypes=FLOAT + ("float16",))


def rms_norm_samples(device, dtype, requires_grad=False):
    t = _maker(dtype, device, requires_grad)
    yield NNSample(t((2, 3, 4)), [4], t((4,), 0.5, 2), name="last dim, weight")
    yield NNSample(t((2, 3, 4)), (3, 4), None, 1e-3, name="two dims, eps")
    yield NNSample(t((5,)), [5], name="1-d")
    yield NNSample(t((2, 3, 4)), [2, 3, 4], t((2, 3, 4), 0.5, 2), eps=1e-6, name="all dims")
    yield NNSample(t((0, 4)), [4], name="empty batch")
    yield NNSample(t((3, 4), noncontiguous=True), [4], t((4,), 0.5, 2), name="noncontiguous")


def _rms_norm_ref(a, shape, weight=None, eps=None):
    if a.dtype == np.float16:  # in float32 (its epsilon the default), rounded once
        w = None if weight is None else weight.astype(np.float32)
        return _rms_norm_ref(a.astype(np.float32), shape, w, eps).astype(np.float16)
    eps = np.finfo(a.dtype).eps if eps is None else eps
    axes = tuple(range(a.ndim - len(shape), a.ndim))
    r = a / np.sqrt((a * a).mean(axes, keepdims=True) + eps) if a.size else a.copy()
    return r if weight is None else r * weight


define("rms_norm", rms_norm_samples, dtypes=FLOAT + ("float16",), ref=_rms_norm_ref)


def local_response_norm_samples(device, dtype, requires_grad=False):
    t = _maker(dtype, device, requires_grad)
    yield NNSample(t((2, 5, 3)), 2, name="3-d, size 2")
    yield NNSample(t((2, 5, 3, 2)), 3, 1e-2, 0.5, 2.0, name="4-d, size 3, alpha, beta, k")
    yield NNSample(t((1, 4, 2, 2, 2)), 5, alpha=0.1, name="5-d, window wider than channels")
    yield NNSample(t((2, 5, 6), noncontiguous=True), 1, name="noncontiguous, size 1")


# int64: PyTorch averages the squares in int64 (avg_pool truncates) before the float power,
# and so does ember
define("local_response_norm", local_response_norm_samples, dtypes=FLOAT + ("int64",),
       torch="nn.functional.local_response_norm")


# -- dropout family ---------------------------------------------------------------------------

_RANDOM = "random: the masks come from ember's generator, whose stream is not PyTorch's " \
          "(distributions are checked in tests/core/test_nn_misc.py); the samples are seeded, " \
          "so devices and gradcheck still compare them"


def dropout_samples(feature=False):
    """``torch.<name>(input, p, train)``: training with ``p`` in (0, 1) (random, seeded),
    evaluation, ``p = 0`` and ``p = 1``. ``feature``: ``(N, C, *)`` inputs. (The
    ``nn.functional`` forms, with ``training`` and ``inplace``, are tested in
    tests/core/test_nn_misc.py.)"""

    def samples(device, dtype, requires_grad=False):
        t = _maker(dtype, device, requires_grad)
        shapes = ((2, 3, 4), (2, 3, 2, 2), (2, 3)) if feature else ((), (5,), (2, 3, 4), (0, 3))
        for shape in shapes:
            yield NNSample(t(shape), 0.4, True, name=f"training {shape}", seed=_SEED)
        yield NNSample(t((3, 4), noncontiguous=True), p=0.5, train=True,
                       name="noncontiguous, keywords", seed=_SEED)
        yield NNSample(t((2, 3, 4)), 0.5, False, name="eval")
        yield NNSample(t((2, 3, 4)), 0.0, True, name="p=0")
        yield NNSample(t((2, 3, 4)), 1.0, True, name="p=1")
        yield NNSample(t((2, 3, 4)), name="defaults", seed=_SEED)

    return samples


def inplace_dropout_samples(feature=False):
    """``torch.<name>_(input, p, train)`` on copies."""

    def samples(device, dtype, requires_grad=False):
        t = _maker(dtype, device, requires_grad)
        shapes = ((2, 3, 4), (2, 3)) if feature else ((5,), (2, 3, 4), (0, 3))
        for shape in shapes:
            yield NNSample(t(shape), 0.4, True, name=f"training {shape}", clone=True, seed=_SEED)
        yield NNSample(t((2, 3, 4)), 0.4, False, name="eval", clone=True)
        yield NNSample(t((2, 3, 4)), 1.0, True, name="p=1", clone=True)

    return samples


for _name, _feature in (("dropout", False), ("alpha_dropout", False), ("feature_dropout", True),
                        ("feature_alpha_dropout", True)):
    define(_name, dropout_samples(_feature), skip={"torch": _RANDOM})
    define(_name + "_", inplace_dropout_samples(_feature), skip={"torch": _RANDOM})


def native_dropout_samples(device, dtype, requires_grad=False):
    """``torch.native_dropout(input, p, train)`` (``train`` required; None: training): the
    dropout samples but the defaults, and ``train=None``."""
    for s in dropout_samples()(device, dtype, requires_grad):
        if s.name != "defaults":
            yield s
    t = _maker(dtype, device, requires_grad)
    yield NNSample(t((2, 3)), 0.4, None, name="train=None", seed=_SEED)


define("native_dropout", native_dropout_samples, skip={"torch": _RANDOM})


# -- embedding --------------------------------------------------------------------------------

def embedding_samples(device, dtype, requires_grad=False):
    """``torch.embedding(weight, indices, padding_idx, scale_grad_by_freq)``: indices of every
    rank, int32 indices, repeated indices, a non-contiguous weight; ``padding_idx`` and
    ``scale_grad_by_freq`` change the gradient on purpose (it is not the derivative of the
    forward), so their weights take no gradient here (tests/core/test_nn_misc.py checks them)."""
    t = _maker(dtype, device, requires_grad)

    def idx(shape, dt="int64"):
        return make(shape, dt, device, low=0, high=10)

    yield NNSample(t((10, 3)), idx((4,)), name="1-d indices")
    yield NNSample(t((10, 3)), idx((2, 3)), name="2-d indices")
    yield NNSample(t((10, 3)), idx(()), name="0-d index")
    # an empty output: gradgradcheck cannot take it (PyTorch's cannot either), forward only
    yield NNSample(t((10, 3), grad=False), idx((0,)), name="no indices")
    yield NNSample(t((10, 3)), idx((5,), "int32"), name="int32 indices")
    yield NNSample(t((10, 3)), _ints([1, 1, 4, 1], device), name="repeated indices")
    yield NNSample(t((10, 4), noncontiguous=True), idx((2, 2)), name="noncontiguous weight")
    yield NNSample(t((10, 3), grad=False), _ints([2, 0, 2, 5], device), 2,
                   name="padding_idx (forward only)")
    yield NNSample(t((10, 3), grad=False), _ints([2, 0, 2, 5], device), -1, True,
                   name="scale_grad_by_freq (forward only)")


define("embedding", embedding_samples, dtypes=FLOAT_AND_INT)


def embedding_bag_samples(device, dtype, requires_grad=False):
    """``torch.embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
    per_sample_weights, include_last_offset, padding_idx)``: every mode, an empty bag, the
    last offset included, per-sample weights and ``padding_idx`` (its four outputs are
    compared with PyTorch's)."""
    t = _maker(dtype, device, requires_grad)
    idx = _ints([1, 4, 2, 2, 9, 0, 4], device)
    for mode in (0, 1, 2):
        yield NNSample(t((10, 3)), idx, _ints([0, 2, 5], device), False, mode,
                       name=f"mode {mode}")
        yield NNSample(t((10, 3)), idx, _ints([0, 2, 2, 7], device), mode=mode,
                       name=f"mode {mode}, empty bags")
        yield NNSample(t((10, 3)), idx, _ints([0, 3, 7], device), mode=mode,
                       include_last_offset=True, name=f"mode {mode}, include_last_offset")
    yield NNSample(t((10, 3)), idx, _ints([0, 2, 5], device), False, 0, False,
                   t((7,), 0.2, 2), name="per_sample_weights")
    yield NNSample(t((10, 3), grad=False), idx, _ints([0, 2, 5], device), False, 1, False,
                   None, False, 2, name="padding_idx (forward only)")
    yield NNSample(t((10, 3), grad=False), idx, _ints([0, 2, 5], device), True, 0,
                   name="scale_grad_by_freq (forward only)")
    yield NNSample(t((10, 4), noncontiguous=True), idx, _ints([0, 4], device), mode=1,
                   name="noncontiguous weight")


define("embedding_bag", embedding_bag_samples, output=lambda r: r[0])


def bilinear_samples(device, dtype, requires_grad=False):
    t = _maker(dtype, device, requires_grad)
    yield NNSample(t((3, 4)), t((3, 5)), t((2, 4, 5)), t((2,)), name="bias")
    yield NNSample(t((3, 4)), t((3, 5)), t((2, 4, 5)), name="no bias")
    yield NNSample(t((2, 3, 4)), t((2, 3, 5)), t((2, 4, 5)), t((2,)), name="batch dims")
    yield NNSample(t((4,)), t((5,)), t((2, 4, 5)), t((2,)), name="1-d")
    yield NNSample(t((3, 4), noncontiguous=True), t((3, 5)), t((2, 4, 5)), name="noncontiguous")


define("bilinear", bilinear_samples, dtypes=FLOAT_AND_INT,
       ref=lambda a, b, w, bias=None: np.einsum("...i,oij,...j->...o", a, w, b) +
       (0 if bias is None else bias))


def one_hot_samples(device, dtype, requires_grad=False):
    def idx(shape, high=5):
        return make(shape, "int64", device, low=0, high=high)

    yield NNSample(_ints([0, 3, 1, 4], device), name="inferred classes")
    yield NNSample(idx((2, 3)), 6, name="2-d, num_classes")
    yield NNSample(_ints(2, device), 3, name="0-d")
    yield NNSample(idx((0,)), 4, name="empty")
    yield NNSample(make((3, 4), "int64", device, low=0, high=5, noncontiguous=True),
                   num_classes=5, name="noncontiguous")


def _one_hot_ref(a, num_classes=-1):
    n = a.max() + 1 if num_classes == -1 else num_classes
    return (a[..., None] == np.arange(n)).astype(np.int64)


define("one_hot", one_hot_samples, dtypes=("int64",), ref=_one_hot_ref,
       torch="nn.functional.one_hot")


# -- pad, interpolate, pixel and channel shuffles ---------------------------------------------

def pad_samples(device, dtype, requires_grad=False):
    """Constant padding (a value, cropping by negative pads, 1 to 3 dims, 0-d to 4-d inputs)
    and the reflect, replicate and circular modes on 2-d to 5-d inputs."""
    t = _maker(dtype, device, requires_grad)
    yield NNSample(t((3,)), (1, 2), name="1-d")
    yield NNSample(t((2, 3)), [1, 0, 2, 1], name="2 dims")
    yield NNSample(t((2, 3, 4)), (1, 1, 0, 2, 1, 0), value=1, name="3 dims, value")
    yield NNSample(t((2, 3, 4)), (-1, 2, 1, -1), name="negative pads crop")
    yield NNSample(t((2, 0, 3)), (1, 1), name="empty")
    yield NNSample(t((3, 4), noncontiguous=True), (2, 1, 1, 0), name="noncontiguous")
    yield NNSample(t(()), (), name="0-d, no padding")
    if dtype != "bool":
        yield NNSample(t((2, 5)), (2, 1), "reflect", name="reflect 2-d")
        yield NNSample(t((1, 2, 4)), (3, 1), mode="reflect", name="reflect 3-d")
        yield NNSample(t((2, 3, 4)), (1, 1, 2, 1), "reflect", name="reflect 2 dims, no batch")
        yield NNSample(t((1, 2, 3, 4)), (1, 2, 2, 0), "reflect", name="reflect 4-d")
        yield NNSample(t((1, 2, 3, 3, 3)), (1, 1, 2, 0, 0, 1), "reflect", name="reflect 5-d")
        yield NNSample(t((2, 3)), (2, 3), "replicate", name="replicate 2-d")
        yield NNSample(t((1, 2, 3, 4)), (1, 2, 3, 0), "replicate", name="replicate 4-d")
        yield NNSample(t((1, 1, 2, 2, 3)), (1, 1, 1, 1, 2, 0), "replicate",
                       name="replicate 5-d")
    yield NNSample(t((2, 4)), (2, 3), "circular", name="circular 2-d")
    yield NNSample(t((1, 2, 3, 4)), (1, 2, 3, 0), "circular", name="circular 4-d")
    yield NNSample(t((1, 2, 3, 4)), (-1, 2, 1, -1), "circular", name="circular, negative")
    yield NNSample(t((1, 1, 2, 2, 3)), (1, 1, 1, 1, 2, 0), "circular", name="circular 5-d")


_NP_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
                 "circular": "wrap"}


def _pad_ref(a, pad, mode="constant", value=None):
    """``np.pad`` with PyTorch's negative pads: circular padding wraps around what the crop
    keeps (crop, then grow); reflect and replicate map every output position into the whole
    input (grow, then crop); for constant padding the two orders agree."""
    if not a.ndim:
        return a.copy()
    k = len(pad) // 2
    widths = [(0, 0)] * (a.ndim - k) + [(pad[2 * i], pad[2 * i + 1])
                                        for i in reversed(range(k))]
    grow = [(max(lo, 0), max(hi, 0)) for lo, hi in widths]

    def crop(b):
        return b[tuple(slice(-min(lo, 0), n + min(hi, 0))
                       for n, (lo, hi) in zip(b.shape, widths))]

    kw = {"constant_values": 0 if value is None else value} if mode == "constant" else {}
    if mode == "circular":
        return np.pad(crop(a), grow, mode="wrap")
    return crop(np.pad(a, grow, mode=_NP_PAD_MODES[mode], **kw))


define("pad", pad_samples, dtypes=FLOAT_AND_INT + ("uint8", "bool"), ref=_pad_ref,
       torch="nn.functional.pad")


def constant_pad_nd_samples(device, dtype, requires_grad=False):
    """``constant_pad_nd``: pad's constant mode (a value, negative pads crop)."""
    t = _maker(dtype, device, requires_grad)
    yield NNSample(t((3,)), (1, 2), name="1-d")
    yield NNSample(t((2, 3, 4)), (1, 1, 0, 2, 1, 0), 1, name="3 dims, value")
    yield NNSample(t((2, 3, 4)), (-1, 2, 1, -1), name="negative pads crop")
    yield NNSample(t((3, 4), noncontiguous=True), (2, 1, 1, 0), name="noncontiguous")


define("constant_pad_nd", constant_pad_nd_samples, dtypes=FLOAT_AND_INT + ("uint8", "bool"),
       ref=lambda a, pad, value=0: _pad_ref(a, pad, "constant", value))


def interpolate_samples(device, dtype, requires_grad=False):
    """Every mode, up and down, by ``size`` and by ``scale_factor`` (with and without
    ``recompute_scale_factor``), ``align_corners`` both ways, ``antialias`` for bilinear,
    bicubic and lanczos, and ``area``; uint8 takes the nearest modes and bilinear, bicubic
    and lanczos, as PyTorch's CPU kernels do."""
    t = _maker(dtype, device, requires_grad)
    nearest = [
        NNSample(t((1, 2, 3)), scale_factor=2, name="nearest 1-d x2"),
        NNSample(t((1, 2, 5)), size=3, name="nearest 1-d down"),
        NNSample(t((2, 1, 2, 3)), size=(3, 5), name="nearest 2-d size"),
        NNSample(t((1, 2, 3, 4)), scale_factor=(1.5, 0.5), name="nearest 2-d scales"),
        NNSample(t((1, 1, 2, 2, 3)), scale_factor=2, name="nearest 3-d"),
        NNSample(t((1, 2, 3)), scale_factor=1.7, mode="nearest-exact", name="nearest-exact"),
        NNSample(t((1, 2, 5, 4)), size=(3, 7), mode="nearest-exact", name="nearest-exact 2-d"),
        NNSample(t((1, 2, 3, 8), noncontiguous=True), scale_factor=2, name="noncontiguous"),
    ]
    yield from nearest
    # PyTorch's CPU kernels take uint8 for these in fixed-point arithmetic
    u8 = [NNSample(t((1, 3, 9, 11)), size=(4, 17), mode="bilinear", name="bilinear uint8"),
          NNSample(t((2, 2, 6, 5)), size=(13, 3), mode="bicubic", align_corners=True,
                   name="bicubic uint8"),
          NNSample(t((1, 3, 20, 14)), size=(7, 9), mode="bilinear", antialias=True,
                   name="bilinear antialias uint8"),
          NNSample(t((1, 2, 12, 9)), size=(5, 20), mode="bicubic", antialias=True,
                   name="bicubic antialias uint8"),
          NNSample(t((1, 1, 15, 8)), size=(4, 5), mode="lanczos", antialias=True,
                   name="lanczos uint8")]
    if str(dtype) == "uint8":
        yield from u8
    if _is_int(dtype):
        return
    yield from _antialias_samples(t, dtype)
    yield NNSample(t((1, 2, 7)), size=3, mode="area", name="area 1-d")
    yield NNSample(t((1, 2, 7, 5)), scale_factor=0.6, mode="area", name="area 2-d scale")
    yield NNSample(t((1, 1, 4, 5, 3)), size=(2, 3, 2), mode="area", name="area 3-d")
    for ac in (False, True):
        yield NNSample(t((1, 2, 4)), size=7, mode="linear", align_corners=ac,
                       name=f"linear, align_corners={ac}")
        yield NNSample(t((1, 2, 3, 4)), scale_factor=(2, 0.75), mode="bilinear",
                       align_corners=ac, name=f"bilinear, align_corners={ac}")
        yield NNSample(t((1, 1, 4, 4)), size=(3, 6), mode="bicubic", align_corners=ac,
                       name=f"bicubic, align_corners={ac}")
        yield NNSample(t((1, 1, 2, 3, 2)), scale_factor=1.5, mode="trilinear",
                       align_corners=ac, name=f"trilinear, align_corners={ac}")
    yield NNSample(t((1, 2, 5)), scale_factor=1.7, mode="linear", recompute_scale_factor=True,
                   name="linear, recompute_scale_factor")
    yield NNSample(t((1, 2, 6)), size=4, mode="linear", name="linear down")
    yield NNSample(t((1, 2, 5, 6)), size=(3, 4), mode="bilinear", name="bilinear down")
    yield NNSample(t((1, 1, 5, 5)), scale_factor=0.6, mode="bicubic", name="bicubic down")
    yield NNSample(t((2, 1, 4, 5)), scale_factor=(1.5, 2.5), mode="bicubic",
                   recompute_scale_factor=False, name="bicubic, two scales")


def _antialias_samples(t, dtype):
    if str(dtype) not in ("float32", "float64"):  # PyTorch's antialias kernels have no others
        return
    for mode in ("bilinear", "bicubic", "lanczos"):
        yield NNSample(t((2, 2, 9, 7)), size=(4, 10), mode=mode, antialias=True,
                       name=f"{mode} antialias")
    yield NNSample(t((1, 2, 11, 6)), scale_factor=(0.4, 0.5), mode="bicubic", antialias=True,
                   align_corners=True, name="bicubic antialias, align_corners")
    yield NNSample(t((1, 1, 5, 6)), size=(5, 6), mode="bilinear", antialias=True,
                   name="antialias, same size")


define("interpolate", interpolate_samples, dtypes=FLOAT + ("uint8",),
       torch="nn.functional.interpolate")


_SHUFFLE_DTYPES = FLOAT_AND_INT + ("uint8", "bool")


#: pixel_shuffle's ``(input shape, upscale factor, name)``; pixel_unshuffle takes their results
#: but the empty batch's (PyTorch 2.13's pixel_unshuffle returns an empty input unchanged: a
#: ``(0, 1, 4, 4)`` result where Ember's is ``(0, 4, 2, 2)``)
_SHUFFLE_CASES = (((1, 8, 2, 3), 2, "r=2"), ((2, 9, 2, 2), 3, "r=3"), ((4, 2, 2), 2, "no batch"),
                  ((2, 2, 4, 2, 1), 2, "two batch dims"), ((1, 3, 2, 2), 1, "r=1"),
                  ((0, 4, 2, 2), 2, "empty batch"), ((1, 4, 2, 3), 2, "noncontiguous"))


def _shuffled(shape, r):
    *lead, c, h, w = shape
    return (*lead, c // (r * r), h * r, w * r)


def _shuffle_samples(unshuffle: bool):
    def samples(device, dtype, requires_grad=False):
        t = _maker(dtype, device, requires_grad)
        for shape, r, name in _SHUFFLE_CASES:
            if unshuffle:
                if name == "empty batch":
                    continue
                shape = _shuffled(shape, r)
            yield NNSample(t(shape, noncontiguous=name == "noncontiguous"), r, name=name)

    return samples


def channel_shuffle_samples(device, dtype, requires_grad=False):
    t = _maker(dtype, device, requires_grad)
    yield NNSample(t((2, 6, 3)), 3, name="3-d")
    yield NNSample(t((1, 4, 2, 2)), 2, name="4-d")
    yield NNSample(t((1, 6, 1, 2, 2)), 2, name="5-d")
    yield NNSample(t((2, 4, 3)), 1, name="1 group")
    yield NNSample(t((2, 4, 3)), 4, name="a group per channel")
    yield NNSample(t((2, 6, 4), noncontiguous=True), 3, name="noncontiguous")


define("pixel_shuffle", _shuffle_samples(False), dtypes=_SHUFFLE_DTYPES)
define("pixel_unshuffle", _shuffle_samples(True), dtypes=_SHUFFLE_DTYPES)
define("channel_shuffle", channel_shuffle_samples, dtypes=_SHUFFLE_DTYPES)
define("native_channel_shuffle", channel_shuffle_samples, dtypes=_SHUFFLE_DTYPES)


# -- distances --------------------------------------------------------------------------------

def cosine_similarity_samples(device, dtype, requires_grad=False):
    t = _maker(dtype, device, requires_grad)
    yield NNSample(t((3, 5)), t((3, 5)), name="default dim 1")
    yield NNSample(t((3, 5)), t((1, 5)), name="broadcast")
    yield NNSample(t((2, 3, 4)), t((2, 3, 4)), dim=-1, name="dim=-1")
    yield NNSample(t((4, 3)), t((4, 3)), 0, 1e-6, name="dim 0, eps")
    yield NNSample(t((5,)), t((5,)), 0, name="1-d")
    yield NNSample(t((3, 4), noncontiguous=True), t((3, 4)), name="noncontiguous")


def _cosine_ref(a, b, dim=1, eps=1e-8):
    na = np.maximum(np.sqrt((a * a).sum(dim, keepdims=True)), eps)
    nb = np.maximum(np.sqrt((b * b).sum(dim, keepdims=True)), eps)
    return ((a / na) * (b / nb)).sum(dim)


define("cosine_similarity", cosine_similarity_samples, ref=_typed(_cosine_ref))


def pairwise_distance_samples(device, dtype, requires_grad=False):
    t = _maker(dtype, device, requires_grad)
    yield NNSample(t((3, 5)), t((3, 5)), name="p=2")
    yield NNSample(t((3, 5)), t((3, 5)), 1.0, name="p=1")
    yield NNSample(t((3, 5)), t((1, 5)), 3.0, 1e-3, name="p=3, broadcast, eps")
    yield NNSample(t((2, 3, 4)), t((2, 3, 4)), keepdim=True, name="3-d, keepdim")
    yield NNSample(t((5,)), t((5,)), name="1-d")
    yield NNSample(t((3, 4), noncontiguous=True), t((3, 4)), name="noncontiguous")


def _pairwise_ref(a, b, p=2.0, eps=1e-6, keepdim=False):
    d = _np_float(a) - _np_float(b) + eps
    return (np.abs(d) ** p).sum(-1, keepdims=keepdim) ** (1 / p)


define("pairwise_distance", pairwise_distance_samples, dtypes=FLOAT_AND_INT,
       ref=lambda a, b, *args, **kw: _pairwise_ref(a, b, *args, **kw).astype(
           _np_float(a).dtype))


def cdist_samples(device, dtype, requires_grad=False):
    t = _maker(dtype, device, requires_grad)
    yield NNSample(t((3, 4)), t((5, 4)), name="p=2")
    for p in (1.0, 3.0, 0.0, float("inf")):
        yield NNSample(t((3, 4)), t((2, 4)), p, name=f"p={p}")
    yield NNSample(t((2, 3, 4)), t((2, 5, 4)), name="batched")
    yield NNSample(t((2, 3, 4)), t((1, 2, 4)), 1.5, name="broadcast batch, p=1.5")
    yield NNSample(t((3, 4)), t((5, 4)), compute_mode="donot_use_mm_for_euclid_dist",
                   name="compute_mode")
    yield NNSample(t((0, 4)), t((2, 4)), name="empty")
    yield NNSample(t((3, 4), noncontiguous=True), t((2, 4)), name="noncontiguous")


def _cdist_ref(a, b, p=2.0, compute_mode=None):
    d = np.abs(a[..., :, None, :] - b[..., None, :, :])
    if p == 0:
        return (d != 0).sum(-1).astype(a.dtype)
    if p == float("inf"):
        return d.max(-1) if d.shape[-1] else d.sum(-1)
    return (d ** p).sum(-1) ** (1 / p)


define("cdist", cdist_samples, ref=_typed(_cdist_ref))


def pdist_samples(device, dtype, requires_grad=False):
    t = _maker(dtype, device, requires_grad)
    yield NNSample(t((4, 3)), name="p=2")
    for p in (1.0, 3.0, 0.0, float("inf")):
        yield NNSample(t((4, 3)), p, name=f"p={p}")
    # an empty output: gradgradcheck cannot take it (PyTorch's cannot either), forward only
    yield NNSample(t((1, 3), grad=False), name="one row")
    yield NNSample(t((4, 6), noncontiguous=True), name="noncontiguous")


def _pdist_ref(a, p=2.0):
    i, j = np.triu_indices(a.shape[0], 1)
    return _cdist_ref(a[i][:, None, :], a[j][:, None, :], p)[:, 0, 0]


define("pdist", pdist_samples, ref=_typed(_pdist_ref))


def gumbel_softmax_samples(device, dtype, requires_grad=False):
    """Seeded draws (see the module doc); ``hard=True`` is the straight-through estimator,
    whose gradient is not the forward's derivative on purpose: forward only."""
    t = _maker(dtype, device, requires_grad)
    yield NNSample(t((5,)), name="1-d", seed=_SEED)
    yield NNSample(t((3, 4)), 0.5, name="tau", seed=_SEED)
    yield NNSample(t((2, 3, 4)), dim=1, name="dim=1", seed=_SEED)
    yield NNSample(t((3, 4), grad=False), hard=True, name="hard (forward only)", seed=_SEED)
    yield NNSample(t((3, 8), noncontiguous=True), 2.0, name="noncontiguous", seed=_SEED)


define("gumbel_softmax", gumbel_softmax_samples,
       skip={"torch": "random: the Gumbel noise comes from ember's generator, whose stream "
                      "is not PyTorch's (the samples are seeded: devices and gradcheck still "
                      "compare them)"})


def conv_tbc_samples(device, dtype, requires_grad=False):
    t = _maker(dtype, device, requires_grad)
    yield NNSample(t((5, 2, 3)), t((3, 3, 4)), t((4,)), name="no pad")
    yield NNSample(t((5, 2, 3)), t((3, 3, 4)), t((4,)), 1, name="pad 1")
    yield NNSample(t((4, 1, 2)), t((1, 2, 3)), t((3,)), pad=2, name="kernel 1, pad 2")
    yield NNSample(t((3, 2, 3)), t((3, 3, 2)), t((2,)), 0, name="one step")
    yield NNSample(t((5, 2, 3), noncontiguous=True), t((2, 3, 2)), t((2,)), name="noncontiguous")


define("conv_tbc", conv_tbc_samples, dtypes=FLOAT_AND_INT)


# -- attention, linear ------------------------------------------------------------------------

def sdpa_samples(device, dtype, requires_grad=False):
    """Unbatched to 4-d, a bool and a float mask (broadcast), causal, a custom scale, grouped
    query heads and a fully masked row (zeros, as PyTorch's CPU kernel gives). Dropout is
    random: only ``dropout_p = 1`` (all weights dropped) is deterministic."""
    t = _maker(dtype, device, requires_grad)
    yield NNSample(t((3, 4)), t((5, 4)), t((5, 6)), name="2-d")
    yield NNSample(t((2, 3, 4)), t((2, 5, 4)), t((2, 5, 6)), name="3-d")
    yield NNSample(t((2, 2, 3, 4)), t((2, 2, 5, 4)), t((2, 2, 5, 6)), name="4-d")
    mask = make((3, 5), "bool", device)
    mask[:, 0] = True
    yield NNSample(t((2, 3, 4)), t((2, 5, 4)), t((2, 5, 6)), mask, name="bool mask")
    yield NNSample(t((2, 2, 3, 4)), t((2, 2, 5, 4)), t((2, 2, 5, 6)),
                   attn_mask=t((1, 3, 5), -1, 1, grad=False), name="float mask, broadcast")
    yield NNSample(t((2, 4, 4)), t((2, 4, 4)), t((2, 4, 3)), is_causal=True, name="causal")
    yield NNSample(t((2, 3, 4)), t((2, 5, 4)), t((2, 5, 6)), scale=0.3, name="scale")
    yield NNSample(t((1, 4, 3, 2)), t((1, 2, 5, 2)), t((1, 2, 5, 3)), enable_gqa=True,
                   name="grouped query attention")
    dead = make((3, 5), "bool", device)
    dead[1] = False
    dead[0, 0] = dead[2, 1] = True
    yield NNSample(t((2, 3, 4)), t((2, 5, 4)), t((2, 5, 6)), dead, name="fully masked row")
    yield NNSample(t((2, 3, 4)), t((2, 5, 4)), t((2, 5, 6)), dropout_p=1.0, name="dropout_p=1")
    yield NNSample(t((2, 3, 4), noncontiguous=True), t((2, 5, 4)), t((2, 5, 6)),
                   name="noncontiguous")


define("scaled_dot_product_attention", sdpa_samples,
       torch="nn.functional.scaled_dot_product_attention")


def linear_samples(device, dtype, requires_grad=False):
    t = _maker(dtype, device, requires_grad)
    yield NNSample(t((3, 4)), t((5, 4)), t((5,)), name="2-d, bias")
    yield NNSample(t((3, 4)), t((5, 4)), name="no bias")
    yield NNSample(t((4,)), t((5, 4)), t((5,)), name="1-d input")
    yield NNSample(t((2, 3, 4)), t((5, 4)), bias=t((5,)), name="3-d input")
    yield NNSample(t((3, 4)), t((5, 4)), t(()), name="0-d bias")
    yield NNSample(t((4,)), t((4,)), name="1-d weight")
    yield NNSample(t((3, 4)), t((4,)), name="2-d input, 1-d weight")
    yield NNSample(t((2, 3, 4)), t((4,)), t(()), name="3-d input, 1-d weight, 0-d bias")
    yield NNSample(t((4,)), t((4,)), t(()), name="1-d input and weight, 0-d bias")
    yield NNSample(t((0, 4)), t((5, 4)), t((5,)), name="empty batch")
    yield NNSample(t((3, 4), noncontiguous=True), t((5, 4), noncontiguous=True), t((5,)),
                   name="noncontiguous")
    w = make((4, 5), dtype, device).T  # a column-major weight (a transposed leaf)
    yield NNSample(t((3, 4)), w.requires_grad_(True) if requires_grad else w, t((5,)),
                   name="transposed weight")


def _linear_ref(a, w, bias=None):
    r = a @ w.T
    return r if bias is None else r + bias


define("linear", linear_samples, dtypes=FLOAT_AND_INT, ref=_linear_ref,
       torch="nn.functional.linear")

del _name, _samples, _dtypes, _ref, _feature
__all__ = ["NNSample", "AtenSample", "aten_form", "activation_samples",
           "inplace_activation_samples", "dropout_samples"]
