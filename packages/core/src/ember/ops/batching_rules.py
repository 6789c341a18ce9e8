"""vmap's batching rules, registered per op (``registry.register_batch_rule``).

A rule is ``rule(ctx, func, args, kwargs)``: ``func`` is the public function or Tensor method
that was called (so ``Tensor.__rsub__`` stays reflected), ``args``/``kwargs`` as given, with
the arguments batched at the vmap level ``ctx`` as BatchedTensors. ``ctx.value(x)`` is the
physical tensor of a batched ``x`` (the batch in dim 0, the logical dims after it),
``ctx.ldim(x)`` its logical rank, ``ctx.materialize(x)`` a physical tensor for any ``x``
(an unbatched one expanded over the batch). The rule calls ember functions on physical
tensors (they reach outer vmap levels, or the kernels) and returns the result with the
batch in dim 0 of every output tensor, or ``NotImplemented`` to leave the call to the
per-example loop (``ember._functorch._batched._loop``: slice, call, stack), which is what
an op without a rule gets. ``registry.batch_rules()`` lists the ops that have one.

Every rule keeps examples independent (no op mixes examples), so the sum of per-example
outputs has per-example gradients: what ``vmap(grad(f))`` relies on.

The families:

- pointwise ops (unary, binary, ternary, with broadcasting): batched operands get their
  logical dims aligned right (ones inserted after the batch dim), unbatched ones broadcast
  as they are; in-place variants write through the physical tensor;
- reductions and dim-wise ops: logical dims shifted by one;
- shape ops: the batch dim prepended to sizes and permutations;
- matmul family, ``linear``, ``conv``: the batch as a matmul batch, as rows, or (a batched
  conv weight) as groups;
- pooling, interpolation, normalization over a leading batch: the vmap batch folded into
  the op's batch; batch and instance norm with per-example statistics (training mode, or
  batched running statistics or affine parameters): folded into the channels instead,
  ``(B, N, C, *) -> (N, B*C, *)``;
- ``ember.nn``'s recurrent layer (RNN, LSTM, GRU and their cells): the vmap batch folded
  into the layer's batch;
- losses: computed per element (``reduction="none"``), reduced per example.
"""

from __future__ import annotations

import inspect
import math

from .. import _dtype
from .._device import xp_of
from .._tensor import Tensor, _make
from ..autograd.grad_mode import GRAD
from ..autograd.graph import make_node_class, result
from .linalg import BmmBackward0, matmul_arrays
from .reduction import ALL_DIMS
from .registry import OPS, register_batch_rule

__all__: list = []


def _ember():
    import ember

    return ember


# -- helpers --------------------------------------------------------------------------------------

_SIGNATURES: dict = {}


def _signature(func):
    fn = getattr(func, "_ember_original", func)
    sig = _SIGNATURES.get(fn, False)
    if sig is False:
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            sig = None
        _SIGNATURES[fn] = sig
    return sig


def _bind(func, args, kwargs):
    """``inspect.BoundArguments`` of the call with defaults applied; None if it cannot bind
    (a varargs method called with several ints is packed into its list parameter).

    Most calls bind on the fast path (:class:`_Bound`, what ``Signature.bind`` and
    ``apply_defaults`` would give, without their per-parameter work: a rule's binding was
    a tenth of a vmapped op's cost); anything it does not take for sure (varargs, a
    missing or unknown argument) goes to ``inspect``."""
    plan = _BIND_PLANS.get(func)
    if plan is None:
        plan = _bind_plan(func)
    if plan and len(args) <= len(plan.positional):
        arguments = plan.defaults.copy()  # every name, in signature order
        arguments.update(zip(plan.positional, args))
        ok = True
        if kwargs:
            keyword = plan.keyword
            n = len(args)
            for k in kwargs:
                i = keyword.get(k)
                if i is None or i < n:  # unknown, positional-only, or given twice
                    ok = False
                    break
            if ok:
                arguments.update(kwargs)
        if ok and (plan.required is None
                   or all(arguments[r] is not _REQUIRED for r in plan.required)):
            return _Bound(arguments, plan)
    return _bind_inspect(func, args, kwargs)


def _bind_inspect(func, args, kwargs):
    """``_bind`` by ``inspect.Signature.bind`` (every call the fast path does not take)."""
    sig = _signature(func)
    if sig is None:
        return None
    try:
        ba = sig.bind(*args, **kwargs)
    except TypeError:
        if len(args) < 2:
            return None
        try:
            ba = sig.bind(args[0], tuple(args[1:]), **kwargs)
        except TypeError:
            return None
    ba.apply_defaults()
    return ba


class _BindPlan:
    """A signature without varargs, as the fast path of ``_bind`` reads it: the positional
    parameter names, each keyword-passable name's position (keyword-only ones after all
    positional ones), every name with its default (``_REQUIRED`` if none) in order, and the
    required names (None if there are none)."""

    __slots__ = ("positional", "keyword_only", "keyword", "defaults", "required")

    def __init__(self, sig):
        P = inspect.Parameter
        params = list(sig.parameters.values())
        self.positional = tuple(p.name for p in params
                                if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD))
        self.keyword_only = tuple(p.name for p in params if p.kind is P.KEYWORD_ONLY)
        self.keyword = {p.name: i for i, p in enumerate(params)
                        if p.kind is not P.POSITIONAL_ONLY}
        self.defaults = {p.name: _REQUIRED if p.default is P.empty else p.default
                         for p in params}
        required = tuple(p.name for p in params if p.default is P.empty)
        self.required = required or None


class _Bound:
    """What ``inspect.BoundArguments`` gives a rule after ``apply_defaults``: ``arguments``
    (every parameter, in order, mutable) and the ``args`` and ``kwargs`` to call with."""

    __slots__ = ("arguments", "_plan")

    def __init__(self, arguments: dict, plan: _BindPlan):
        self.arguments = arguments
        self._plan = plan

    @property
    def args(self) -> tuple:
        a = self.arguments
        return tuple([a[n] for n in self._plan.positional])

    @property
    def kwargs(self) -> dict:
        a = self.arguments
        return {n: a[n] for n in self._plan.keyword_only}

    def apply_defaults(self) -> None:
        """Defaults are applied already."""


#: a parameter without a default (what the fast path of ``_bind`` fills in last)
_REQUIRED = object()
#: per callable, its ``_BindPlan``, or False (a signature with varargs, or none)
_BIND_PLANS: dict = {}


def _bind_plan(func):
    sig = _signature(func)
    P = inspect.Parameter
    if sig is None or any(p.kind in (P.VAR_POSITIONAL, P.VAR_KEYWORD)
                          for p in sig.parameters.values()):
        plan = False
    else:
        plan = _BindPlan(sig)
    if len(_BIND_PLANS) > 4096:  # callables made on the fly: stay small
        _BIND_PLANS.clear()
    _BIND_PLANS[func] = plan
    return plan


def _call(func, ba):
    return func(*ba.args, **ba.kwargs)


def _pad(v, rank: int):
    """Physical ``v`` (batch in dim 0) with ones inserted after the batch so that its logical
    rank is ``rank``."""
    r = v.dim() - 1
    if r >= rank:
        return v
    shape = tuple(v.shape)
    return v.reshape((shape[0],) + (1,) * (rank - r) + shape[1:])


def _flat(v):
    """Physical ``v`` as (batch, every logical element) (also when there are none)."""
    return v.reshape(v.shape[0], math.prod(v.shape[1:]))


def _rows(t, B: int):
    """``t`` (the batch folded into its first dim) as (B, the rest)."""
    return t.reshape(B, t.numel() // B if B else 0)


def _wrap_dim(dim: int, rank: int) -> int:
    n = rank if rank else 1
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n


def _shift(dim, rank: int):
    """Logical ``dim`` (int or sequence) as physical dims (+1), range-checked."""
    if isinstance(dim, (list, tuple)):
        return type(dim)(_wrap_dim(int(d), rank) + 1 for d in dim)
    return _wrap_dim(int(dim), rank) + 1


def _only_first_batched(ctx, ba, first: str) -> bool:
    """Whether, of the call's tensors, only argument ``first`` is batched."""
    for name, v in ba.arguments.items():
        if name != first and _has_batched(ctx, v):
            return False
    return ctx.batched(ba.arguments[first])


def _has_batched(ctx, v) -> bool:
    if isinstance(v, (list, tuple)):
        return any(ctx.batched(x) for x in v)
    if isinstance(v, dict):
        return any(ctx.batched(x) for x in v.values())
    return ctx.batched(v)


# -- pointwise ------------------------------------------------------------------------------------

def _pointwise(ctx, func, args, kwargs):
    rank = 0
    dtype = None
    mixed = False
    for a in (*args, *kwargs.values()):
        if isinstance(a, Tensor):
            r = ctx.ldim(a)
            if r > rank:
                rank = r
            if dtype is None:
                dtype = a.dtype
            elif a.dtype != dtype:
                mixed = True
    cast = _zero_dim_casts(ctx, args, kwargs) if mixed and rank else None

    def align(a):
        if ctx.batched(a):
            v = a._value
            if cast is not None and id(a) in cast:
                v = v.to(cast[id(a)])
            return _pad(v, rank)
        return a

    new_args = [align(a) for a in args]
    new_kwargs = {k: align(v) for k, v in kwargs.items()} if kwargs else kwargs
    return func(*new_args, **new_kwargs)


def _zero_dim_casts(ctx, args, kwargs) -> dict:
    """PyTorch's promotion lets a 0-dim tensor decide the result dtype only when its category
    is higher; a batched 0-dim tensor is 1-dim physically, so cast it (by id) to the dtype the
    logical operands promote to, where that differs."""
    e = _ember()
    tensors = [a for a in (*args, *kwargs.values())
               if isinstance(a, Tensor) and a.dtype != e.bool]  # masks and conditions stay
    if not tensors:
        return {}
    reps = [e.empty(() if ctx.ldim(t) == 0 else (1,), dtype=t.dtype) for t in tensors]
    want = reps[0].dtype if len(reps) == 1 else _result_type(e, reps)
    return {id(t): want for t in tensors
            if ctx.batched(t) and ctx.ldim(t) == 0 and t.dtype != want}


def _result_type(e, reps):
    out = reps[0]
    for r in reps[1:]:
        out = e.empty(() if out.dim() == 0 and r.dim() == 0 else (1,),
                      dtype=e.result_type(out, r))
    return out.dtype


def _pointwise_inplace(ctx, func, args, kwargs):
    self = args[0]
    if not ctx.batched(self):
        return NotImplemented  # the loop raises PyTorch's error
    rank = ctx.ldim(self)
    for a in (*args[1:], *kwargs.values()):
        if isinstance(a, Tensor) and ctx.ldim(a) > rank:  # PyTorch aligns self too: a
            rank = ctx.ldim(a)  # higher-rank operand is its broadcast error, not a silent write

    def align(a):
        return _pad(a._value, rank) if ctx.batched(a) else a

    func(align(self), *[align(a) for a in args[1:]],
         **{k: align(v) for k, v in kwargs.items()})
    return self


_UNARY = (
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cos", "cosh", "deg2rad",
    "digamma", "erf", "erfc", "erfinv", "exp", "exp2", "expm1", "floor", "frac", "i0",
    "isfinite", "isinf", "isnan", "isneginf", "isposinf", "isreal", "lgamma", "log", "log10",
    "log1p", "log2", "logical_not", "logit", "nan_to_num", "neg", "positive", "rad2deg",
    "reciprocal", "round", "rsqrt", "sgn", "sigmoid", "sign", "signbit", "sin", "sinc", "sinh",
    "sqrt", "square", "tan", "tanh", "trunc", "bitwise_not", "relu", "relu6", "elu", "selu",
    "celu", "gelu", "silu", "softplus", "mish", "logsigmoid", "hardswish", "hardsigmoid",
    "softshrink", "hardshrink", "softsign", "tanhshrink", "hardtanh", "leaky_relu", "threshold",
    "clamp", "clamp_min", "clamp_max", "polygamma", "mvlgamma", "frexp", "conj", "conj_physical",
    "real", "imag", "angle", "fix", "absolute", "negative", "arccos", "arcsin", "arctan",
    "arccosh", "arcsinh", "arctanh", "clip", "expit", "special_entr", "special_erfcx",
    "special_i0e", "special_i1", "special_i1e", "special_log_ndtr", "special_ndtr",
    "special_ndtri", "special_airy_ai", "special_bessel_j0", "special_bessel_j1",
    "special_bessel_y0", "special_bessel_y1", "special_modified_bessel_i0",
    "special_modified_bessel_i1", "special_modified_bessel_k0", "special_modified_bessel_k1",
    "special_scaled_modified_bessel_k0", "special_scaled_modified_bessel_k1",
    "special_spherical_bessel_j0",
    # dtype/device/memory conversions and copies: no dims involved
    "to", "float", "double", "half", "bfloat16", "int", "long", "short", "char", "byte",
    "bool", "chalf", "cfloat", "cdouble", "type", "type_as", "contiguous", "clone", "detach",
    "cpu", "cuda", "alias", "zeros_like", "ones_like", "empty_like",
    "full_like",
    # random, elementwise: each element (so each example) draws its own numbers
    "dropout", "alpha_dropout", "bernoulli", "rand_like", "randn_like", "randint_like",
    "rrelu", "poisson", "binomial", "normal",
)
_BINARY = (
    "add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "pow",
    "float_power", "atan2", "hypot", "copysign", "nextafter", "ldexp", "xlogy",
    "special_xlog1py", "special_zeta", "igamma", "igammac", "logaddexp", "logaddexp2",
    "maximum", "minimum", "fmax", "fmin", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
    "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm", "heaviside", "rsub", "where",
    "lerp", "addcmul", "addcdiv", "isclose", "masked_fill", "multiply", "divide", "subtract",
    "greater", "greater_equal", "less", "less_equal", "not_equal", "arctan2",
    "special_chebyshev_polynomial_t", "special_chebyshev_polynomial_u",
    "special_chebyshev_polynomial_v", "special_chebyshev_polynomial_w",
    "special_hermite_polynomial_h", "special_hermite_polynomial_he",
    "special_laguerre_polynomial_l", "special_legendre_polynomial_p",
    "special_shifted_chebyshev_polynomial_t", "special_shifted_chebyshev_polynomial_u",
    "special_shifted_chebyshev_polynomial_v", "special_shifted_chebyshev_polynomial_w",
    "complex", "polar", "threshold_backward",
)
#: in-place variants (``add_``, ``__iadd__`` -> ``add_``) and in-place methods
_INPLACE = tuple(n + "_" for n in _UNARY + _BINARY
                 if n not in ("to", "type", "type_as", "float",
                              "double", "half", "bfloat16", "int", "long", "short", "char",
                              "byte", "bool", "chalf", "cfloat", "cdouble", "contiguous",
                              "clone", "cpu", "cuda", "alias", "rand_like", "randn_like",
                              "randint_like")) + (
    "copy_", "fill_", "zero_", "uniform_", "normal_", "bernoulli_", "random_", "exponential_",
    "cauchy_", "log_normal_", "geometric_")

register_batch_rule(*_UNARY, *_BINARY)(_pointwise)
register_batch_rule(*_INPLACE, "requires_grad_", "detach_")(_pointwise_inplace)


@register_batch_rule("masked_fill")
def _masked_fill(ctx, func, args, kwargs):
    """A batched (0-dim per example) fill value is ``where(mask, value, input)`` with the
    value as one number per example; otherwise pointwise."""
    if not args:
        return NotImplemented
    x = args[0]
    mask = args[1] if len(args) > 1 else kwargs.get("mask")
    value = args[2] if len(args) > 2 else kwargs.get("value")
    if not ctx.batched(value):
        return _pointwise(ctx, func, args, kwargs)
    if not isinstance(x, Tensor) or not isinstance(mask, Tensor) or ctx.ldim(value) != 0:
        return NotImplemented  # the loop raises the per-example error
    rank = max(ctx.ldim(x), ctx.ldim(mask))
    e = _ember()
    X = _pad(x._value, rank) if ctx.batched(x) else x
    M = _pad(mask._value, rank) if ctx.batched(mask) else mask
    V = _pad(value._value, rank).to(x.dtype)
    return e.where(M, V, X)  # V carries the batch: so does the result


# -- reductions and dim-wise ops ------------------------------------------------------------------

def _dims_rule(param: str = "dim", *, none: str = "all", keep: str | None = "keepdim",
               rank_plus: int = 0):
    """A rule for ops taking logical dim(s) in ``param``: ``none`` says what ``dim=None``
    means ("all": every logical dim, "flatten": the flattened tensor along dim 0,
    "keep": left to the loop); ``rank_plus``
    is how many dims the op adds before wrapping (``unsqueeze``: 1)."""

    def rule(ctx, func, args, kwargs):
        ba = _bind(func, args, kwargs)
        if ba is None or param not in ba.arguments:
            return NotImplemented
        first = next(iter(ba.arguments))
        if not _only_first_batched(ctx, ba, first):
            return NotImplemented
        x = ba.arguments[first]
        v = x._value
        rank = v.dim() - 1
        dim = ba.arguments[param]
        keepdim = bool(ba.arguments.get(keep, False)) if keep else False
        squeeze_back = False
        if isinstance(dim, (list, tuple)) and not dim and none == "all":
            dim = None  # PyTorch: an empty dim list reduces every dim
        if dim is None:
            if none == "all":
                if rank == 0:
                    return NotImplemented
                dim = tuple(range(1, rank + 1))
            elif none == "flatten":
                if keepdim:
                    return NotImplemented
                v = _flat(v)
                dim = 1
            else:  # what None means is the op's own business: the loop
                return NotImplemented
        else:
            if rank == 0 and rank_plus == 0:
                # a 0-dim tensor takes dim 0 or -1: run it as 1-d of one element
                _shift(dim, 0)
                v = v.reshape(v.shape[0], 1)
                dim = type(dim)(1 for _ in dim) if isinstance(dim, (list, tuple)) else 1
                squeeze_back = True
            else:
                dim = _shift(dim, rank + rank_plus)
        ba.arguments[first] = v
        ba.arguments[param] = dim
        out = _call(func, ba)
        if squeeze_back:
            out = _squeeze_last(out, keepdim)
        return out

    return rule


def _squeeze_last(out, keepdim: bool):
    if isinstance(out, Tensor):
        return out.reshape(out.shape[0]) if out.dim() > 1 else out
    if isinstance(out, tuple):
        vals = [_squeeze_last(o, keepdim) for o in out]
        return type(out)(*vals) if hasattr(out, "_fields") else type(out)(vals)
    return out


register_batch_rule("sum", "mean", "nansum", "nanmean", "amax", "amin", "std", "var",
                    "std_mean", "var_mean", "count_nonzero", "all", "any",
                    "logsumexp")(_dims_rule())
# (aminmax takes one int dim, as PyTorch's: over all dims, the flattened example)
register_batch_rule("argmax", "argmin", "prod", "aminmax")(_dims_rule(none="flatten"))
register_batch_rule("cumsum", "cumprod", "logcumsumexp", "cummax", "cummin", "sort",
                    "argsort", "kthvalue", "topk", "narrow", "select", "chunk", "unbind", "glu",
                    "unsafe_chunk")(_dims_rule(none="keep", keep=None))
register_batch_rule("split", "split_with_sizes", "unsafe_split",
                    "tensor_split")(_dims_rule(none="keep", keep=None))
register_batch_rule("unsqueeze")(_dims_rule(keep=None, rank_plus=1))
register_batch_rule("flip")(_dims_rule("dims", none="keep", keep=None))
register_batch_rule("diff")(_dims_rule(keep=None))
register_batch_rule("normalize")(_dims_rule(none="keep", keep=None))


@register_batch_rule("log_softmax", "softmax", "softmin")
def _softmax(ctx, func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is None or not _only_first_batched(ctx, ba, next(iter(ba.arguments))):
        return NotImplemented
    first = next(iter(ba.arguments))
    x = ba.arguments[first]
    rank = ctx.ldim(x)
    dim = ba.arguments.get("dim")
    if dim is None:  # PyTorch's legacy implicit dim
        dim = 0 if rank in (0, 1, 3) else 1
    v = x._value
    if rank == 0:
        v = v.reshape(v.shape[0], 1)
        ba.arguments[first], ba.arguments["dim"] = v, 1
        return _call(func, ba).reshape(v.shape[0])
    ba.arguments[first], ba.arguments["dim"] = v, _shift(dim, rank)
    return _call(func, ba)


@register_batch_rule("max", "min", "median", "nanmedian", "mode")
def _max_like(ctx, func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is None:
        return NotImplemented
    first = next(iter(ba.arguments))
    other = ba.arguments.get("other")
    if isinstance(other, Tensor):  # max(a, b): elementwise
        return _pointwise(ctx, func, args, kwargs)
    if not _only_first_batched(ctx, ba, first):
        return NotImplemented
    v = ba.arguments[first]._value
    dim = ba.arguments.get("dim")
    if dim is None or dim is ALL_DIMS:  # max/min's default dim: the whole tensor
        name = func.__name__
        flat = _flat(v)
        e = _ember()
        if name in ("max", "min"):
            return (e.amax if name == "max" else e.amin)(flat, 1)
        if name == "mode":
            return NotImplemented
        return getattr(e, name)(flat, 1)[0]
    return _dims_rule(none="keep")(ctx, func, args, kwargs)


@register_batch_rule("index_select")
def _index_select(ctx, func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is None:
        return NotImplemented
    x, dim, index = ba.arguments["input"], ba.arguments["dim"], ba.arguments["index"]
    if not ctx.batched(index):
        return _dims_rule(none="keep", keep=None)(ctx, func, args, kwargs)
    X = ctx.materialize(x)
    rank = X.dim() - 1
    d = _shift(dim, rank) if rank else 1
    if rank == 0:
        X = X.reshape(X.shape[0], 1)
    idx = _flat(index._value)  # (B, k)
    shape = list(X.shape)
    shape[d] = idx.shape[1]
    view = [idx.shape[0]] + [1] * (len(shape) - 1)
    view[d] = idx.shape[1]
    out = _ember().gather(X, d, idx.reshape(view).expand(shape))
    if rank == 0:  # a 0-dim input gives a 0-dim result (a 0-dim index keeps its dim)
        out = out.reshape(out.shape[0])
    return out


@register_batch_rule("msort")
def _msort(ctx, func, args, kwargs):
    v = ctx.value(args[0])
    if v.dim() < 2:
        return NotImplemented
    return _ember().sort(v, 1)[0]


@register_batch_rule("cross", "linalg_cross")
def _cross(ctx, func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is None:
        return NotImplemented
    a, b = (ba.arguments[n] for n in list(ba.arguments)[:2])
    rank = max(ctx.ldim(a), ctx.ldim(b))
    A, Bv = _pad(ctx.materialize(a), rank), _pad(ctx.materialize(b), rank)
    dim = ba.arguments.get("dim")
    if dim is None:  # the first dim of size 3 (of the broadcast logical shape)
        shape = [max(x, y) for x, y in zip(A.shape[1:], Bv.shape[1:])]
        if 3 not in shape:
            return NotImplemented
        dim = shape.index(3)
    names = list(ba.arguments)
    ba.arguments[names[0]], ba.arguments[names[1]] = A, Bv
    ba.arguments["dim"] = _shift(dim, rank)
    return _call(func, ba)


# -- shape ops ------------------------------------------------------------------------------------

@register_batch_rule("view", "reshape")
def _view(ctx, func, args, kwargs):
    x = args[0]
    if not ctx.batched(x) or len(args) < 2 and not kwargs:
        return NotImplemented
    rest = args[1:] if args[1:] else tuple(kwargs.values())
    if len(rest) == 1 and not isinstance(rest[0], (int, list, tuple)) \
            and not hasattr(rest[0], "__index__"):
        return func(x._value, rest[0]) if func.__name__ == "view" else NotImplemented
    shape = tuple(rest[0]) if len(rest) == 1 and isinstance(rest[0], (list, tuple)) \
        else tuple(rest)
    v = x._value
    return func(v, (v.shape[0], *shape))


@register_batch_rule("new_zeros", "new_ones", "new_empty", "new_full")
def _new_factory(ctx, func, args, kwargs):
    """``x.new_zeros(size)``: a batched result of that logical size (writable per example,
    as PyTorch's rule gives)."""
    x = args[0]
    if not ctx.batched(x) or any(ctx.batched(a) for a in (*args[1:], *kwargs.values())):
        return NotImplemented
    rest = list(args[1:])
    if "size" in kwargs:
        size = kwargs.pop("size")
    elif rest:
        size = rest.pop(0)
    else:
        return NotImplemented
    size = (size,) if isinstance(size, int) else tuple(size)
    if func.__name__ != "new_full":  # varargs sizes: x.new_zeros(2, 3)
        while rest and isinstance(rest[0], int):
            size += (rest.pop(0),)
    return func(x._value, (ctx.size, *size), *rest, **kwargs)


@register_batch_rule("view_as", "reshape_as")
def _view_as(ctx, func, args, kwargs):
    x, other = args[0], args[1] if len(args) > 1 else kwargs["other"]
    if not ctx.batched(x):
        return NotImplemented
    v = x._value
    return v.reshape((v.shape[0], *other.shape))


@register_batch_rule("flatten", "ravel")
def _flatten(ctx, func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is None or not _only_first_batched(ctx, ba, next(iter(ba.arguments))):
        return NotImplemented
    first = next(iter(ba.arguments))
    v = ba.arguments[first]._value
    rank = v.dim() - 1
    if rank == 0:
        return v.reshape(v.shape[0], 1)
    start = _shift(ba.arguments.get("start_dim", 0), rank)
    end = _shift(ba.arguments.get("end_dim", -1), rank)
    e = _ember()
    return e.flatten(v, start, end)


@register_batch_rule("unflatten")
def _unflatten(ctx, func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is None or not _only_first_batched(ctx, ba, next(iter(ba.arguments))):
        return NotImplemented
    first = next(iter(ba.arguments))
    v = ba.arguments[first]._value
    ba.arguments[first] = v
    ba.arguments["dim"] = _shift(ba.arguments["dim"], v.dim() - 1)
    return _call(func, ba)


@register_batch_rule("squeeze")
def _squeeze(ctx, func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is None or not _only_first_batched(ctx, ba, next(iter(ba.arguments))):
        return NotImplemented
    first = next(iter(ba.arguments))
    v = ba.arguments[first]._value
    rank = v.dim() - 1
    dim = ba.arguments.get("dim")
    if dim is None:
        dims = tuple(i + 1 for i, s in enumerate(v.shape[1:]) if s == 1)
    elif rank == 0:
        _shift(dim, 0)
        return v
    else:
        dims = _shift(dim, rank)
        if isinstance(dims, int):
            dims = (dims,)
    return _ember().squeeze(v, tuple(dims)) if dims else v


@register_batch_rule("permute")
def _permute(ctx, func, args, kwargs):
    x = args[0]
    if not ctx.batched(x):
        return NotImplemented
    rest = args[1:] or tuple(kwargs.values())
    dims = tuple(rest[0]) if len(rest) == 1 and isinstance(rest[0], (list, tuple)) \
        else tuple(rest)
    v = x._value
    rank = v.dim() - 1
    if len(dims) != rank:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {rank} is not equal to len(dims) = {len(dims)}")
    return v.permute((0, *(_shift(d, rank) for d in dims)))


@register_batch_rule("transpose", "swapaxes", "swapdims", "movedim", "moveaxis",
                     "diagonal", "diag_embed")
def _two_dims(ctx, func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is None or not _only_first_batched(ctx, ba, next(iter(ba.arguments))):
        return NotImplemented
    names = list(ba.arguments)
    first = names[0]
    v = ba.arguments[first]._value
    rank = v.dim() - 1
    if func.__name__ == "diag_embed":
        rank += 1
    for p in ("dim0", "dim1", "dim2", "axis0", "axis1", "source", "destination"):
        if p in ba.arguments and ba.arguments[p] is not None:
            ba.arguments[p] = _shift(ba.arguments[p], rank)
            if not rank:  # a 0-d example: its only dim is 0 (-1), the batch stays in front
                d = ba.arguments[p]
                ba.arguments[p] = type(d)(0 for _ in d) if isinstance(d, (list, tuple)) else 0
    if func.__name__ in ("diagonal", "diag_embed"):
        for p in ("dim1", "dim2"):
            if p not in ba.arguments:
                return NotImplemented
    ba.arguments[first] = v
    return _call(func, ba)


@register_batch_rule("t")
def _t(ctx, func, args, kwargs):
    v = ctx.value(args[0])
    if v.dim() - 1 < 2:
        return v
    return v.transpose(1, 2)


@register_batch_rule("T", "numpy_T")
def _big_t(ctx, func, args, kwargs):
    v = ctx.value(args[0])
    rank = v.dim() - 1
    return v.permute((0, *range(rank, 0, -1)))


@register_batch_rule("mT", "mH", "adjoint", "tril", "triu", "pixel_shuffle", "pixel_unshuffle")
def _last_two(ctx, func, args, kwargs):
    # ops on the last two dims: the batch is one more leading dim
    if any(ctx.batched(a) for a in (*args[1:], *kwargs.values())):
        return NotImplemented
    return func(ctx.value(args[0]), *args[1:], **kwargs)


@register_batch_rule("expand", "broadcast_to", "expand_as")
def _expand(ctx, func, args, kwargs):
    x = args[0]
    if not ctx.batched(x):
        return NotImplemented
    rest = args[1:] or tuple(kwargs.values())
    if func.__name__ == "expand_as":
        sizes = tuple(rest[0].shape)
    else:
        sizes = tuple(rest[0]) if len(rest) == 1 and isinstance(rest[0], (list, tuple)) \
            else tuple(rest)
    v = _pad(x._value, len(sizes))
    return v.expand((v.shape[0], *sizes))


@register_batch_rule("index")
def _getitem(ctx, func, args, kwargs):
    x, idx = args[0], args[1]
    idx = idx if isinstance(idx, tuple) else (idx,)
    for i in idx:  # a batched mask: PyTorch's refusal, whatever the examples' counts
        if isinstance(i, Tensor) and ctx.batched(i) and i.dtype == _ember().bool:
            raise RuntimeError("vmap: We do not support batching operators that can support "
                               "dynamic shape. Attempting to batch over indexing with a "
                               "boolean mask.")
    if not ctx.batched(x) or kwargs:
        return NotImplemented
    n_tensor = 0
    for i in idx:
        if isinstance(i, Tensor):
            if ctx.batched(i) or i.dtype == _ember().bool:
                return NotImplemented
            n_tensor += 1
        elif isinstance(i, (list, tuple)):
            return NotImplemented
    if n_tensor > 1:
        return NotImplemented
    return x._value[(slice(None), *idx)]


@register_batch_rule("index_put_")
def _setitem(ctx, func, args, kwargs):
    x, idx, value = args[0], args[1], args[2]
    if not ctx.batched(x) or kwargs:
        return NotImplemented
    tup = idx if isinstance(idx, tuple) else (idx,)
    if any(isinstance(i, (Tensor, list, tuple)) for i in tup):
        return NotImplemented
    full = (slice(None), *tup)
    v = x._value
    if isinstance(value, Tensor) and ctx.batched(value):
        region = v[full]
        value = _pad(value._value, region.dim() - 1)
    func(v, full, value)
    return x


# -- joining and gathering ------------------------------------------------------------------------

@register_batch_rule("cat", "concat", "concatenate", "stack")
def _cat(ctx, func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is None:
        return NotImplemented
    names = list(ba.arguments)
    tensors = ba.arguments[names[0]]
    if not isinstance(tensors, (list, tuple)) or not tensors:
        return NotImplemented
    dim_name = "dim" if "dim" in ba.arguments else "axis"
    rank = max(ctx.ldim(t) for t in tensors)
    ref = next(t for t in tensors if ctx.batched(t))
    rank = ctx.ldim(ref)
    if func.__name__ == "stack":
        dim = _shift(ba.arguments[dim_name], rank + 1)
    else:
        dim = _shift(ba.arguments[dim_name], rank) if rank else 1
    ba.arguments[names[0]] = [ctx.materialize(t) if ctx.ldim(t) or not rank
                              else ctx.value(t) for t in tensors]
    ba.arguments[dim_name] = dim
    return _call(func, ba)


class _Args:
    """``(input, dim, index, third)`` of the gather/scatter/index family, whose signatures
    are overloaded (``(input, *args, **kwargs)``), as bound arguments."""

    def __init__(self, args, kwargs):
        names = ["input", "dim", "index"]
        self.arguments = dict(zip(names, args))
        rest = list(args[3:])
        self.kwargs = dict(kwargs)
        for n in names:
            if n in self.kwargs:
                self.arguments[n] = self.kwargs.pop(n)
        for third in ("src", "source", "value"):
            if third in self.kwargs:
                self.arguments[third] = self.kwargs.pop(third)
                break
        else:
            if rest:
                self.arguments["src"] = rest.pop(0)
        self.rest = rest

    @property
    def args(self):
        return (*self.arguments.values(), *self.rest)


def _bind_overloaded(func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is not None and "dim" in ba.arguments:
        return ba
    if len(args) + len(kwargs) < 3:
        return None
    ba = _Args(args, kwargs)
    ba.apply_defaults = lambda: None
    return ba


def _call_overloaded(func, ba):
    if isinstance(ba, _Args):
        return func(*ba.args, **ba.kwargs)
    return _call(func, ba)


@register_batch_rule("gather", "scatter", "scatter_add", "scatter_reduce", "take_along_dim")
def _gather(ctx, func, args, kwargs):
    """Ops whose index has the input's rank: every tensor operand batched, the dim shifted."""
    ba = _bind_overloaded(func, args, kwargs)
    if ba is None or ba.arguments.get("dim") is None:
        return NotImplemented
    first = next(iter(ba.arguments))
    rank = ctx.ldim(ba.arguments[first])
    for name, v in ba.arguments.items():
        if isinstance(v, Tensor):
            if ctx.ldim(v) != rank:
                return NotImplemented
            ba.arguments[name] = ctx.materialize(v)
    ba.arguments["dim"] = _shift(ba.arguments["dim"], rank)
    if rank == 0:  # 0-dim operands: one element per example, as (B, 1)
        for name, v in ba.arguments.items():
            if isinstance(v, Tensor):
                ba.arguments[name] = v.reshape(v.shape[0], 1)
        out = _call_overloaded(func, ba)
        return out.reshape(out.shape[0]) if isinstance(out, Tensor) else out
    return _call_overloaded(func, ba)


@register_batch_rule("index_add", "index_copy", "index_fill")
def _index_add(ctx, func, args, kwargs):
    """Ops with a 1-d index along ``dim``: shared index, batched input and source."""
    ba = _bind_overloaded(func, args, kwargs)
    if ba is None or ctx.batched(ba.arguments.get("index")):
        return NotImplemented
    first = next(iter(ba.arguments))
    rank = ctx.ldim(ba.arguments[first])
    for name, v in ba.arguments.items():
        if isinstance(v, Tensor) and name != "index":
            if name != first and ctx.ldim(v) != rank:
                return NotImplemented  # a 0-dim fill value tensor: the loop
            ba.arguments[name] = ctx.materialize(v)
    if rank == 0:  # a 0-dim input: the loop
        return NotImplemented
    ba.arguments["dim"] = _shift(ba.arguments["dim"], rank)
    return _call_overloaded(func, ba)


# -- linear algebra -------------------------------------------------------------------------------

def _batched_matmul(ctx, a, b):
    """Logical ``a @ b`` (PyTorch's 1-D and broadcasting rules) on physical tensors."""
    e = _ember()
    ra, rb = ctx.ldim(a), ctx.ldim(b)
    xa, xb = ctx.batched(a), ctx.batched(b)
    A, Bm = ctx.value(a), ctx.value(b)
    squeeze_rows = squeeze_cols = False
    if ra == 1:
        A, ra, squeeze_rows = A.unsqueeze(-2), 2, True
    if rb == 1:
        Bm, rb, squeeze_cols = Bm.unsqueeze(-1), 2, True
    if xa and not xb and rb == 2:  # one product: the batch (and a's batch dims) as rows
        shape = tuple(A.shape)
        out = e.matmul(A.reshape(math.prod(shape[:-1]), shape[-1]), Bm)
        out = out.reshape((*shape[:-1], Bm.shape[-1]))
    else:
        rank = max(ra, rb)
        if xa:
            A = _pad(A, rank)
        if xb:
            Bm = _pad(Bm, rank)
        out = e.matmul(A, Bm)
    if squeeze_rows:
        out = out.squeeze(-2)
    if squeeze_cols:
        out = out.squeeze(-1)
    return out


@register_batch_rule("matmul", "mm", "bmm", "mv", "dot", "inner_1d", "vdot")
def _matmul(ctx, func, args, kwargs):
    if len(args) > 2 or "out_dtype" in kwargs:  # mm/bmm's out_dtype: the per-example loop
        return NotImplemented
    a = args[0]
    b = args[1] if len(args) > 1 else next(iter(kwargs.values()))
    if func.__name__ == "__rmatmul__":
        a, b = b, a
    if func.__name__ == "vdot":
        a = a.conj() if a.is_complex() else a
    return _batched_matmul(ctx, a, b)


def _shared(w) -> bool:
    """Whether physical ``w`` is one tensor expanded over the batch (stride 0 in dim 0): the
    per-example copy that ``grad`` inside ``vmap`` makes of an unbatched weight. A tensor
    batched at an inner level (``vmap(jacrev(f))``) has no array of its own: not shared."""
    if _is_batched_tensor(w):
        return False
    a = w._data
    if not a.ndim or a.shape[0] <= 1:
        return False
    if a.size:  # the array's own stride (Tensor.stride builds every dim's)
        return a.strides[0] == 0
    return w.stride(0) == 0  # no elements: PyTorch's strides, as Tensor.stride gives them


def _per_example_linear_bw(node, gy):
    x, w = node.saved  # x (B, M, in), w (B, out, in); gy (B, M, out)
    gx = gw = None
    if node.needs_grad(0):
        gx = _shared_product(gy, w) if _shared(w) else gy.matmul(w.contiguous())
    if node.needs_grad(1):
        gt = gy.transpose(1, 2)
        if x.shape[1] == 1:
            # an outer product, as a product of inner size 1 (the same numbers as ``gt * x``:
            # ``gemm`` multiplies them so): differentiated again (``jvp`` under ``vmap``), its
            # gradients are matrix-vector products, where a multiply's would materialize
            # ``g * x`` (the tangents' batch by out by in) only to sum it over ``in``
            gw = gt.matmul(x)
        elif _shared(x):  # one product: the examples' rows side by side
            gw = _shared_product(gt, x)
        else:
            gw = gt.matmul(x.contiguous())
    return gx, gw


def _shared_product(a, b):
    """``a @ b`` per example for physical ``a`` (B, P, K) and a shared ``b`` (B, K, N; one
    matrix expanded over the batch) as one (B*P, K) @ (K, N) product, recorded as the batched
    product it is (so ``create_graph`` differentiates it again exactly). An ensemble's weight
    gradient against its shared minibatch took 1.6 ms as ten products of copied inputs, 0.6 ms
    as one."""
    ad = a._data
    B, P, K = ad.shape
    arr = matmul_arrays(_xp(ad).ascontiguousarray(ad).reshape(B * P, K), b._data[0])
    return result(arr.reshape(B, P, arr.shape[-1]), a._device, BmmBackward0, (a, b), (a, b))


PerExampleLinearBackward0 = make_node_class("PerExampleLinearBackward0", _per_example_linear_bw)


def _per_example_linear_bias_bw(node, gy):
    # the bias's first, as the separate add's backward ran before the product's (so a
    # graph kept for higher derivatives is recorded, and summed, in the same order)
    gb = None
    if node.needs_grad(2):  # what the add's backward gave: the rows summed per example
        B, M, O = gy.shape
        gb = gy.reshape(B, O) if M == 1 else gy.sum(1)
    gx, gw = _per_example_linear_bw(node, gy)
    return gx, gw, gb


PerExampleLinearBiasBackward0 = make_node_class("PerExampleLinearBiasBackward0",
                                                _per_example_linear_bias_bw)


def _per_example_linear(x, w, b=None):
    """``x @ w.mT`` (``+ b``) per example for physical ``x`` (B, M, in), ``w`` (B, out, in)
    and ``b`` (B, out), as few matrix products as the sharing allows: a shared weight
    (expanded over the batch, what ``grad`` inside ``vmap`` makes of an unbatched one) is
    one product over all rows, a shared input (an ensemble's minibatch) one product against
    all weights side by side; per-example weight gradients (outer products) in the backward.
    The bias is added in the same node (the numbers of a separate ``add``: one rounding per
    element), which saves the add, its broadcast gradient's reduction and two reshapes."""
    xd, wd = x._data, w._data
    B, M, n = xd.shape
    O = wd.shape[1]
    xp = _xp(xd)
    if _shared(w):
        arr = matmul_arrays(xp.ascontiguousarray(xd).reshape(B * M, n), wd[0].T)
        arr = arr.reshape(B, M, O)
    elif _shared(x):
        arr = matmul_arrays(xd[0], wd.reshape(B * O, n).T).reshape(M, B, O).swapaxes(0, 1)
        arr = xp.ascontiguousarray(arr)
    else:
        arr = matmul_arrays(xp.ascontiguousarray(xd), wd.swapaxes(1, 2))
    if b is None:
        return result(arr, x._device, PerExampleLinearBackward0, (x, w), (x, w))
    xp.add(arr, b._data[:, None, :], out=arr)  # arr is the product's own new array
    return result(arr, x._device, PerExampleLinearBiasBackward0, (x, w, b), (x, w))


def _fused_bias(ctx, b, X, W):
    """The physical bias (B, out) to add inside ``_per_example_linear``, or None to add it
    apart: a bias batched at this level, one row per example, of the product's dtype
    (float32 or float64: where the add is one plain rounding) and device."""
    if not ctx.batched(b):
        return None
    v = b._value
    if type(v) is not Tensor or v._data.ndim != 2 or v._data.shape[1] != W._data.shape[1] \
            or v._data.dtype is not X._data.dtype or X._data.dtype not in _FUSED_DTYPES \
            or (v._device is not X._device and v._device != X._device):
        return None
    return v


_FUSED_DTYPES = (_dtype.float32.np, _dtype.float64.np)


def _xp(arr):
    return xp_of(arr)


@register_batch_rule("linear")
def _linear(ctx, func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is None:
        return NotImplemented
    x, w, b = (ba.arguments.get(n) for n in ("input", "weight", "bias"))
    if not ctx.batched(w) and not ctx.batched(b):
        return func(ctx.value(x), w, b)
    e = _ember()
    if ctx.batched(w) and not _is_batched_tensor(ctx.value(w)) \
            and not _is_batched_tensor(ctx.value(x)) and w.dim() == 2 and x.dim() >= 1 \
            and x.dtype == w.dtype:
        X = ctx.materialize(x)
        lead = tuple(X.shape[1:-1])
        if len(lead) != 1:  # (B, M, in) as it is: no view to make and differentiate
            X = X.reshape(X.shape[0], -1, X.shape[-1])
        fused = _fused_bias(ctx, b, X, w._value) if len(lead) <= 1 else None
        out = _per_example_linear(X, w._value, fused)
        if len(lead) != 1:
            out = out.reshape((X.shape[0], *lead, out.shape[-1]))
        if fused is not None:
            return out
    else:
        wt = ctx.value(w).transpose(-1, -2) if ctx.batched(w) else w.t()
        if ctx.batched(w):
            from .._functorch._batched import wrap

            wt = wrap(wt, ctx.level)  # the logical transpose, batched
        out = _batched_matmul(ctx, x, wt)
    if b is not None:
        rank = max(ctx.ldim(x), 1)
        out = e.add(out, _pad(b._value, rank) if ctx.batched(b) else b)
    return out


def _is_batched_tensor(t) -> bool:
    return type(t) is _batched_tensor_type()


def _batched_tensor_type():
    global _BATCHED_TENSOR
    if _BATCHED_TENSOR is None:
        from .._functorch._batched import BatchedTensor

        _BATCHED_TENSOR = BatchedTensor
    return _BATCHED_TENSOR


_BATCHED_TENSOR = None


@register_batch_rule("addmm", "addmv", "baddbmm")
def _addmm(ctx, func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is None:
        return NotImplemented
    names = list(ba.arguments)
    inp, m1, m2 = (ba.arguments[n] for n in names[:3])
    beta, alpha = ba.arguments.get("beta", 1), ba.arguments.get("alpha", 1)
    prod = _batched_matmul(ctx, m1, m2)
    prod_batched = ctx.batched(m1) or ctx.batched(m2)
    prod_rank = prod.dim() - (1 if prod_batched else 0)
    rank = max(ctx.ldim(inp), prod_rank)
    base = _pad(inp._value, rank) if ctx.batched(inp) else inp
    if prod_batched:
        prod = _pad(prod, rank)
    e = _ember()
    return e.add(e.mul(base, beta) if beta != 1 else base,
                 e.mul(prod, alpha) if alpha != 1 else prod)


@register_batch_rule("outer", "ger")
def _outer(ctx, func, args, kwargs):
    a, b = args[0], args[1] if len(args) > 1 else next(iter(kwargs.values()))
    A = ctx.materialize(a)
    Bv = ctx.materialize(b)
    return A.unsqueeze(-1) * Bv.unsqueeze(-2)


@register_batch_rule("einsum")
def _einsum(ctx, func, args, kwargs):
    eq = args[0]
    ops = list(args[1]) if len(args) == 2 and isinstance(args[1], (list, tuple)) \
        else list(args[1:])
    if kwargs or not isinstance(eq, str) or "..." in eq:
        return NotImplemented
    lhs, _, rhs = eq.replace(" ", "").partition("->")
    if not _:
        return NotImplemented
    terms = lhs.split(",")
    used = set(eq)
    letter = next(c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba"
                  if c not in used)
    new_terms = [(letter + t) if ctx.batched(o) else t for t, o in zip(terms, ops)]
    new_eq = ",".join(new_terms) + "->" + letter + rhs
    return _ember().einsum(new_eq, *[ctx.value(o) for o in ops])


@register_batch_rule("trace")
def _trace(ctx, func, args, kwargs):
    v = ctx.value(args[0])
    return _ember().diagonal(v, 0, 1, 2).sum(-1)


# -- convolution, pooling, normalization: the batch folded into the op's own batch ----------------

def _fold_batch(ctx, func, args, kwargs, spatial: int, first: str = "input",
                fold_names: tuple = ()):
    """Run ``func`` with the vmap batch folded into the op's leading batch dim of ``first``
    (and of the arguments ``fold_names`` of the same rank): an op that treats the examples
    of its batch independently. ``spatial`` is the number of dims after (N, C)."""
    ba = _bind(func, args, kwargs)
    if ba is None or first not in ba.arguments:
        return NotImplemented
    for name, v in ba.arguments.items():
        if name != first and name not in fold_names and _has_batched(ctx, v):
            return NotImplemented
    x = ba.arguments[first]
    if not ctx.batched(x):
        return NotImplemented
    v = x._value
    rank = v.dim() - 1
    if rank == spatial + 1:  # an unbatched input (C, *spatial): the vmap batch is N
        ba.arguments[first] = v
        for n in fold_names:
            if isinstance(ba.arguments.get(n), Tensor):
                ba.arguments[n] = ctx.materialize(ba.arguments[n])
        return _call(func, ba)
    if rank != spatial + 2:
        return NotImplemented
    B, N = v.shape[0], v.shape[1]
    ba.arguments[first] = v.reshape((B * N, *v.shape[2:]))
    for n in fold_names:
        t = ba.arguments.get(n)
        if isinstance(t, Tensor):
            m = ctx.materialize(t)
            ba.arguments[n] = m.reshape((B * N, *m.shape[2:]))
    out = _call(func, ba)
    return _unfold_out(out, B, N)


def _unfold_out(out, B, N):
    if isinstance(out, Tensor):
        return out.reshape((B, N, *out.shape[1:]))
    if isinstance(out, tuple):
        vals = [_unfold_out(o, B, N) for o in out]
        return type(out)(*vals) if hasattr(out, "_fields") else type(out)(vals)
    return out


def _fold_rule(spatial: int, fold_names: tuple = ()):
    def rule(ctx, func, args, kwargs):
        return _fold_batch(ctx, func, args, kwargs, spatial, fold_names=fold_names)

    return rule


for _n in (1, 2, 3):
    register_batch_rule(
        f"max_pool{_n}d", f"max_pool{_n}d_with_indices", f"avg_pool{_n}d",
        f"adaptive_avg_pool{_n}d", f"adaptive_max_pool{_n}d",
        f"adaptive_max_pool{_n}d_with_indices", f"lp_pool{_n}d")(_fold_rule(_n))
    register_batch_rule(f"max_unpool{_n}d")(_fold_rule(_n, ("indices",)))
del _n


@register_batch_rule("group_norm", "channel_shuffle", "native_channel_shuffle")
def _group_norm(ctx, func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is None or not _only_first_batched(ctx, ba, "input"):
        return NotImplemented
    v = ba.arguments["input"]._value
    B, N = v.shape[0], v.shape[1]
    ba.arguments["input"] = v.reshape((B * N, *v.shape[2:]))
    return _call(func, ba).reshape(tuple(v.shape))


@register_batch_rule("interpolate", "upsample", "upsample_nearest", "upsample_bilinear")
def _interpolate(ctx, func, args, kwargs):
    x = args[0] if args else kwargs.get("input")
    if not ctx.batched(x):
        return NotImplemented
    return _fold_batch(ctx, func, args, kwargs, ctx.ldim(x) - 2)


def _shared_conv_bw(node, gy):
    x, w = node.saved  # x (B*N, C, *x) folded, w (B, O, C/g, *k) shared; gy (B*N, O, *y)
    g, B = node.ctx
    from . import conv as _c

    gx = gw = None
    wg = None
    if node.needs_grad(0):
        if GRAD.enabled:  # create_graph: the exact per-example (grouped) transposed conv
            wg = w.reshape((-1, *w.shape[2:]))
            gx = _ungroup(_c._conv_transpose(_group(gy, B), wg, None, _grouped(g, B)), B)
        else:
            gx = _c._conv_transpose(gy, _make(w._data[0], w._device), None, g)
    if node.needs_grad(1):
        wshape = (w.shape[0] * w.shape[1], *w.shape[2:])
        gw = _c._weight_grad(_group(x, B), _group(gy, B), _grouped(g, B), wshape)
        gw = gw.reshape(tuple(w.shape))
    return gx, gw


PerExampleConvBackward0 = make_node_class("PerExampleConvBackward0", _shared_conv_bw)


def _grouped(g, B: int):
    return g._replace(groups=g.groups * B)


def _group(t, B: int):
    """(B*N, C, *s) -> (N, B*C, *s): the examples as channel groups."""
    N = t.shape[0] // B
    return t.reshape((B, N, *t.shape[1:])).transpose(0, 1).reshape((N, -1, *t.shape[2:]))


def _ungroup(t, B: int):
    """(N, B*C, *s) -> (B*N, C, *s)."""
    N = t.shape[0]
    return t.reshape((N, B, -1, *t.shape[2:])).transpose(0, 1).reshape((B * N, -1,
                                                                        *t.shape[2:]))


def _shared_weight_conv(func, ba, X, W):
    """A convolution of the folded batch ``X`` (B*N, C, *x) with a shared weight ``W``
    expanded over the batch (B, O, C/g, *k): one convolution with ``W[0]`` forward,
    per-example weight gradients (one grouped weight-gradient product) backward."""
    from ..autograd.grad_mode import enable_grad

    B = W.shape[0]
    w0 = _make(W._data[0], W._device).requires_grad_(True)
    ba.arguments["input"], ba.arguments["weight"], ba.arguments["bias"] = X.detach(), w0, None
    with enable_grad():
        probe = _call(func, ba)
    node = probe.grad_fn
    g = node.ctx[0] if node is not None else None
    if g is None or node.ctx[1]:
        return None
    return result(probe._data, X._device, PerExampleConvBackward0, (X, W), (X, W), (g, B))


def _conv_rule(per_example):
    """A convolution's batching rule around ``per_example(ctx, func, ba, X, W, b, spatial)``:
    an unbatched weight and bias fold the vmap batch into the convolution's own; otherwise
    the physical input ``X`` (B, N, C, *x) and weight ``W`` (B, ...) go to ``per_example``
    (an unbatched example, no N, gets one and loses it again)."""

    def rule(ctx, func, args, kwargs):
        ba = _bind(func, args, kwargs)
        if ba is None:
            return NotImplemented
        x, w, b = (ba.arguments.get(n) for n in ("input", "weight", "bias"))
        spatial = w.dim() - 2
        if not ctx.batched(w) and not ctx.batched(b):
            return _fold_batch(ctx, func, args, kwargs, spatial)
        W = ctx.materialize(w)
        X = ctx.materialize(x)
        unbatched_input = X.dim() - 1 == spatial + 1
        if unbatched_input:
            X = X.unsqueeze(1)
        out = per_example(ctx, func, ba, X, W, b, spatial)
        return out.squeeze(1) if unbatched_input else out

    return rule


def _examples_as_groups(ctx, func, ba, X, W, b, channels):
    """The examples of a batched weight as the groups of one grouped convolution: ``X``
    (B, N, C, *x) becomes (N, B*C, *x), ``W`` (B, ...) the B*groups groups' weights; the
    output (N, B*channels, *y) comes back as (B, N, channels, *y)."""
    B, N = X.shape[0], X.shape[1]
    ba.arguments["input"] = X.transpose(0, 1).reshape((N, -1, *X.shape[3:]))
    ba.arguments["weight"] = W.reshape((-1, *W.shape[2:]))
    ba.arguments["bias"] = ctx.materialize(b).reshape(B * channels) if b is not None else None
    ba.arguments["groups"] = B * int(ba.arguments.get("groups", 1))
    out = _call(func, ba)
    return out.reshape((N, B, channels, *out.shape[2:])).transpose(0, 1)


def _conv_per_example(ctx, func, ba, X, W, b, spatial):
    B, N, O = X.shape[0], X.shape[1], W.shape[1]  # W: (B, O, C/g, *k)
    if _shared(W) and not _is_batched_tensor(W) and not _is_batched_tensor(X):
        folded = _shared_weight_conv(func, ba, X.reshape((B * N, *X.shape[2:])), W)
        if folded is not None:
            out = folded.reshape((B, N, *folded.shape[1:]))
            if b is not None:
                out = _ember().add(out, ctx.materialize(b).reshape((B, 1, O) + (1,) * spatial))
            return out
    return _examples_as_groups(ctx, func, ba, X, W, b, O)


register_batch_rule("conv1d", "conv2d", "conv3d")(_conv_rule(_conv_per_example))


@register_batch_rule("layer_norm", "rms_norm")
def _layer_norm(ctx, func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is None:
        return NotImplemented
    x, w = ba.arguments["input"], ba.arguments.get("weight")
    b = ba.arguments.get("bias")
    if not ctx.batched(x):
        return NotImplemented
    rank = ctx.ldim(x)
    ba.arguments["input"] = x._value
    if not ctx.batched(w) and not ctx.batched(b):
        return _call(func, ba)
    ba.arguments["weight"] = None
    if "bias" in ba.arguments:
        ba.arguments["bias"] = None
    out = _call(func, ba)
    e = _ember()
    if w is not None:
        out = e.mul(out, _pad(w._value, rank) if ctx.batched(w) else w)
    if b is not None:
        out = e.add(out, _pad(b._value, rank) if ctx.batched(b) else b)
    return out


@register_batch_rule("embedding")
def _embedding(ctx, func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is None:
        return NotImplemented
    iname = "input" if "input" in ba.arguments else "indices"
    idx, w = ba.arguments[iname], ba.arguments["weight"]
    if not ctx.batched(w):
        ba.arguments[iname] = ctx.value(idx)
        return _call(func, ba)
    if ba.arguments.get("padding_idx") not in (None, -1) \
            or ba.arguments.get("max_norm") is not None:
        return NotImplemented
    e = _ember()
    W = w._value
    B, V = W.shape[0], W.shape[1]
    I = ctx.materialize(idx)
    offsets = e.arange(B, device=I.device).mul(V).reshape((B,) + (1,) * (I.dim() - 1))
    ba.arguments[iname] = I + offsets
    ba.arguments["weight"] = W.reshape((B * V, *W.shape[2:]))
    return _call(func, ba)


# -- losses: per element, then reduced per example ------------------------------------------------

def _reduce_per_example(loss, reduction: str, count=None):
    flat = _flat(loss)
    if reduction == "sum":
        return flat.sum(1)
    if reduction == "batchmean":
        return flat.sum(1) / count
    return flat.mean(1)


_ELEMENTWISE_LOSSES = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
                       "binary_cross_entropy", "binary_cross_entropy_with_logits",
                       "soft_margin_loss", "kl_div", "poisson_nll_loss")


@register_batch_rule(*_ELEMENTWISE_LOSSES)
def _elementwise_loss(ctx, func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is None or "reduction" not in ba.arguments:
        return NotImplemented
    if ba.arguments.get("size_average") is not None or ba.arguments.get("reduce") is not None:
        return NotImplemented
    reduction = ba.arguments["reduction"]
    as_int = isinstance(reduction, int)  # ATen's enum: 0 none, 1 mean, 2 sum
    if as_int:
        reduction = ("none", "mean", "sum")[reduction]
    tensors = [v for v in ba.arguments.values() if isinstance(v, Tensor)]
    rank = max(ctx.ldim(t) for t in tensors)
    names = list(ba.arguments)
    for name in names:
        v = ba.arguments[name]
        if isinstance(v, Tensor):
            if name in names[:2]:  # input and target: the same shape, both batched
                ba.arguments[name] = _pad(ctx.materialize(v), rank)
            else:
                ba.arguments[name] = _pad(v._value, rank) if ctx.batched(v) else v
    ba.arguments["reduction"] = 0 if as_int else "none"
    loss = _call(func, ba)
    if reduction == "none":
        return loss
    count = None
    if reduction == "batchmean":
        count = tensors[0].shape[0] if rank else 1
    return _reduce_per_example(loss, reduction, count)


@register_batch_rule("nll_loss", "cross_entropy")
def _nll(ctx, func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is None:
        return NotImplemented
    if ba.arguments.get("size_average") is not None or ba.arguments.get("reduce") is not None:
        return NotImplemented
    if ba.arguments.get("label_smoothing", 0.0):
        return NotImplemented
    inp, target, weight = ba.arguments["input"], ba.arguments["target"], \
        ba.arguments.get("weight")
    if ctx.batched(weight) or target.is_floating_point():
        return NotImplemented
    e = _ember()
    reduction = ba.arguments.get("reduction", "mean")
    ignore = ba.arguments.get("ignore_index", -100)
    X = ctx.materialize(inp)
    T = ctx.materialize(target)
    B = ctx.size
    single = X.dim() == 2  # logical (C,) with a 0-d target
    if not single:
        N = X.shape[1]
        X = X.reshape((B * N, *X.shape[2:]))
        T = T.reshape((B * N, *T.shape[2:]))
    ba.arguments["input"], ba.arguments["target"] = X, T
    ba.arguments["reduction"] = "none"
    loss = _call(func, ba)
    if reduction == "none":
        return loss if single else loss.reshape((B, N, *loss.shape[1:]))
    per = _rows(loss, B)
    if reduction == "sum":
        return per.sum(1)
    if weight is None and type(T) is Tensor and T._data.size // max(B, 1) < _COUNT_LIMIT:
        # each example's count of targets not ignored, counted on the array (what summing
        # the float mask gives, exactly, below 2**24): no graph to make for the mask
        td = T._data
        count = (td != ignore).reshape(B, td.size // B if B else 0).sum(axis=1)
        return per.sum(1) / _make(count.astype(per._data.dtype), per._device)
    valid = _rows(T != ignore, B)
    if weight is not None:
        safe = e.where(valid, _rows(T, B), e.zeros_like(_rows(T, B)))
        wt = weight[safe] * valid.to(weight.dtype)
    else:
        wt = valid.to(per.dtype)
    return per.sum(1) / wt.sum(1)


#: the examples' target counts are counted on the array below this many targets each (where
#: summing a float32 mask of ones is exact)
_COUNT_LIMIT = 2 ** 24


# -- more families --------------------------------------------------------------------------------

#: ops over the trailing (matrix) dims that broadcast leading batch dims: the pointwise
#: alignment (batched operands padded to one logical rank) is their rule
register_batch_rule(
    "det", "inverse", "logdet", "slogdet", "matrix_exp", "matrix_power", "pinverse", "qr",
    "svd", "cholesky", "cholesky_solve", "triangular_solve",
    "scaled_dot_product_attention", "linalg_inv", "linalg_det", "linalg_slogdet",
    "linalg_cholesky", "linalg_qr", "linalg_svd", "linalg_svdvals", "linalg_eigh",
    "linalg_eigvalsh", "linalg_eig", "linalg_eigvals", "linalg_pinv", "linalg_matrix_exp",
    "linalg_matrix_power", "linalg_inv_ex", "linalg_cholesky_ex", "pairwise_distance",
    "view_as_real", "view_as_complex", "resolve_conj", "resolve_neg")(_pointwise)


@register_batch_rule("linalg_solve")
def _linalg_solve(ctx, func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is None or ba.arguments.get("left", True) is not True:
        return NotImplemented
    A, Bm = ba.arguments["A"], ba.arguments["B"]
    ra, rb = ctx.ldim(A), ctx.ldim(Bm)
    vector = rb == 1 or rb == ra - 1  # PyTorch's rule: B is a (batch of) vector(s)
    Bv = ctx.value(Bm)
    if vector:
        Bv = Bv.unsqueeze(-1)
        if ctx.batched(Bm):
            Bm = _wrap_level(Bv, ctx)
        else:
            Bm = Bv
        rb += 1
    rank = max(ra, rb)
    ba.arguments["A"] = _pad(A._value, rank) if ctx.batched(A) else A
    ba.arguments["B"] = _pad(Bm._value, rank) if ctx.batched(Bm) else Bm
    out = _call(func, ba)
    return out.squeeze(-1) if vector else out


@register_batch_rule("cosine_similarity")
def _cosine_similarity(ctx, func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is None:
        return NotImplemented
    x1, x2 = ba.arguments["x1"], ba.arguments["x2"]
    rank = max(ctx.ldim(x1), ctx.ldim(x2))
    ba.arguments["x1"] = _pad(x1._value, rank) if ctx.batched(x1) else x1
    ba.arguments["x2"] = _pad(x2._value, rank) if ctx.batched(x2) else x2
    ba.arguments["dim"] = _shift(ba.arguments["dim"], rank)
    return _call(func, ba)


@register_batch_rule("norm", "linalg_vector_norm")
def _norm(ctx, func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is None or not _only_first_batched(ctx, ba, next(iter(ba.arguments))):
        return NotImplemented
    first = next(iter(ba.arguments))
    if ba.arguments.get("dim") is None and ba.arguments.get("p", ba.arguments.get("ord")) \
            not in ("nuc",) and not ba.arguments.get("keepdim"):
        v = ba.arguments[first]._value
        ba.arguments[first] = _flat(v)  # a norm of all elements
        ba.arguments["dim"] = 1
        return _call(func, ba)
    if ba.arguments.get("dim") is None:
        return NotImplemented
    return _dims_rule(none="keep")(ctx, func, args, kwargs)


register_batch_rule("fft_fft", "fft_ifft", "fft_rfft", "fft_irfft", "fft_hfft",
                    "fft_ihfft")(_dims_rule(none="keep", keep=None))


@register_batch_rule("fft_fft2", "fft_ifft2", "fft_rfft2", "fft_irfft2", "fft_hfft2",
                     "fft_ihfft2", "fft_fftn", "fft_ifftn", "fft_rfftn", "fft_irfftn",
                     "fft_hfftn", "fft_ihfftn", "fft_fftshift", "fft_ifftshift")
def _fftn(ctx, func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is None or not _only_first_batched(ctx, ba, "input"):
        return NotImplemented
    v = ba.arguments["input"]._value
    rank = v.dim() - 1
    dim = ba.arguments.get("dim")
    if dim is None:
        s_ = ba.arguments.get("s")
        if s_ is not None:  # the last len(s) dims
            dim = tuple(range(rank - len(s_), rank))
        else:
            dim = tuple(range(rank))
    ba.arguments["input"], ba.arguments["dim"] = v, _shift(dim, rank)
    return _call(func, ba)


@register_batch_rule("roll")
def _roll(ctx, func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is None or not _only_first_batched(ctx, ba, "input"):
        return NotImplemented
    v = ba.arguments["input"]._value
    rank = v.dim() - 1
    dims = ba.arguments.get("dims")
    if dims is None or (isinstance(dims, (list, tuple)) and not dims):
        shape = tuple(v.shape)
        return _ember().roll(_flat(v), ba.arguments["shifts"], 1).reshape(shape)
    ba.arguments["input"], ba.arguments["dims"] = v, _shift(dims, rank)
    return _call(func, ba)


register_batch_rule("rot90")(_dims_rule("dims", none="keep", keep=None))


@register_batch_rule("fliplr", "flipud")
def _flip_lr_ud(ctx, func, args, kwargs):
    v = ctx.value(args[0])
    return v.flip(2 if func.__name__ == "fliplr" else 1)


@register_batch_rule("tile")
def _tile(ctx, func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is None or not _only_first_batched(ctx, ba, "input"):
        return NotImplemented
    reps = tuple(ba.arguments["dims"]) if not isinstance(ba.arguments["dims"], int) \
        else (ba.arguments["dims"],)
    v = ba.arguments["input"]._value
    rank = v.dim() - 1
    v = _pad(v, len(reps))
    reps = (1,) * (rank - len(reps)) + reps
    return v.tile((1, *reps))


@register_batch_rule("repeat_interleave")
def _repeat_interleave(ctx, func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is None or isinstance(ba.arguments.get("repeats"), Tensor) \
            or ba.arguments.get("repeats") is None:  # repeat_interleave(repeats): the loop
        return NotImplemented
    return _dims_rule(none="flatten", keep=None)(ctx, func, args, kwargs)


@register_batch_rule("atleast_1d", "atleast_2d", "atleast_3d")
def _atleast(ctx, func, args, kwargs):
    if len(args) != 1 or kwargs or isinstance(args[0], (list, tuple)):
        return NotImplemented
    v = ctx.value(args[0])
    e = _ember()
    shape = func(e.empty(tuple(v.shape[1:]), dtype=v.dtype)).shape  # the logical result shape
    return v.reshape((v.shape[0], *shape))


@register_batch_rule("one_hot")
def _one_hot(ctx, func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is None or ba.arguments.get("num_classes", -1) == -1:
        return NotImplemented  # the number of classes would depend on each example's data
    first = next(iter(ba.arguments))
    ba.arguments[first] = ctx.value(ba.arguments[first])
    return _call(func, ba)


@register_batch_rule("pad")
def _pad_rule(ctx, func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is None or not _only_first_batched(ctx, ba, "input"):
        return NotImplemented
    v = ba.arguments["input"]._value
    rank = v.dim() - 1
    spatial = len(ba.arguments["pad"]) // 2
    if ba.arguments.get("mode", "constant") == "constant":
        if spatial > rank:
            return NotImplemented
        ba.arguments["input"] = v
        return _call(func, ba)
    return _fold_batch(ctx, func, args, kwargs, spatial)


@register_batch_rule("prelu")
def _prelu(ctx, func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is None or not _only_first_batched(ctx, ba, "input"):
        return NotImplemented
    v = ba.arguments["input"]._value
    if v.dim() - 1 >= 2:
        return _fold_batch(ctx, func, args, kwargs, v.dim() - 3)
    ba.arguments["input"] = v
    return _call(func, ba)


_BN_SHARED_STATS = (
    "Batch norm got a batched tensor as input while the running_mean or running_var, which "
    "will be updated in place, were not batched.\nIf you are using a module and do not need "
    "eval mode, please set `track_running_stats` to be False.If you are using a prebuilt "
    "module and do not need eval mode, please see the functorch website for resources on how "
    "to patch your module to work with vmap")


@register_batch_rule("batch_norm")
def _batch_norm(ctx, func, args, kwargs):
    """Batch norm per example. Evaluation mode with only the input batched folds the vmap
    batch into N (running statistics are per channel). Otherwise each example normalizes
    over its own (N, *) slice: the vmap batch folds into the channels, ``(B, N, C, *) ->
    (N, B*C, *)``, with weight, bias and running statistics as ``(B*C,)`` (each example's
    own running statistics, updated in place, when they are batched). As in PyTorch, a
    batched input in training mode with running statistics that are not batched is an error
    (they would be updated from every example: ``track_running_stats=False`` or
    ``replace_all_batch_norm_modules_``)."""
    ba = _bind(func, args, kwargs)
    if ba is None:
        return NotImplemented
    a = ba.arguments
    x, rm, rv = a.get("input"), a.get("running_mean"), a.get("running_var")
    w, b = a.get("weight"), a.get("bias")
    training = bool(a.get("training"))
    if not isinstance(x, Tensor):
        return NotImplemented
    stats_batched = [ctx.batched(t) for t in (rm, rv) if t is not None]
    if training and ctx.batched(x) and not all(stats_batched):
        raise RuntimeError(_BN_SHARED_STATS)
    rank = ctx.ldim(x)
    if rank < 2:
        return NotImplemented  # the loop raises the per-example error
    C = x.shape[1]
    for t in (rm, rv, w, b):
        if t is not None and (not isinstance(t, Tensor) or ctx.ldim(t) != 1 or t.shape[0] != C):
            return NotImplemented
    if training and "cudnn_enabled" not in a:  # F.batch_norm checks the (logical) size
        from .normalization import _verify_batch_size

        _verify_batch_size(tuple(x.shape))
    if not ctx.batched(x) and not any(stats_batched):
        # only weight or bias batched: normalize once, apply each example's affine after
        a["weight"] = None
        a["bias"] = None
        out = _call(func, ba)
        shape = (ctx.size, 1, C) + (1,) * (rank - 2)
        e = _ember()
        if w is not None:
            out = e.mul(out, ctx.materialize(w).reshape(shape))
        if b is not None:
            out = e.add(out, ctx.materialize(b).reshape(shape))
        return ctx.materialize(out) if out.dim() == rank else out
    if not ctx.batched(x) and training and len(stats_batched) == 2 and \
            stats_batched[0] != stats_batched[1]:
        return NotImplemented  # one shared statistic updated by every example: the loop
    if not training and ctx.batched(x) and not any(stats_batched) and \
            not ctx.batched(w) and not ctx.batched(b):
        return _fold_batch(ctx, func, args, kwargs, rank - 2)
    return _channel_fold(ctx, func, ba, training)


def _channel_fold(ctx, func, ba, update: bool):
    """A per-channel normalization (batch or instance norm) with the vmap batch folded into
    the channels: input ``(B, N, C, *) -> (N, B*C, *)``, running statistics, weight and bias
    ``(B, C) -> (B*C,)``; batched running statistics get each example's update (``update``)
    written back, also when their physical tensor is not contiguous."""
    a = ba.arguments
    x = a["input"]
    B, C = ctx.size, x.shape[1]
    X = ctx.materialize(x)
    N, spatial = X.shape[1], tuple(X.shape[3:])
    a["input"] = X.movedim(0, 1).reshape((N, B * C) + spatial)
    stats = []
    for name in ("running_mean", "running_var", "weight", "bias"):
        t = a.get(name)
        if t is not None:
            phys = ctx.materialize(t)
            a[name] = flat = phys.reshape(B * C)
            if update and name.startswith("running") and ctx.batched(t):
                stats.append((phys, flat))
    out = _call(func, ba)
    if stats:
        from ..autograd.grad_mode import no_grad

        with no_grad():
            for phys, flat in stats:  # each example's statistics, also when not a view
                phys.copy_(flat.reshape(phys.shape))
    return out.reshape((N, B, C) + spatial).movedim(1, 0)


@register_batch_rule("instance_norm")
def _instance_norm(ctx, func, args, kwargs):
    """Instance norm per example: only the input batched folds the vmap batch into N;
    batched running statistics, weight or bias fold it into the channels (as batch norm).
    Input statistics with running statistics that are not batched: PyTorch's batch-norm
    error (they would be updated from every example)."""
    ba = _bind(func, args, kwargs)
    if ba is None:
        return NotImplemented
    a = ba.arguments
    x, rm, rv = a.get("input"), a.get("running_mean"), a.get("running_var")
    if not isinstance(x, Tensor):
        return NotImplemented
    use_stats = bool(a.get("use_input_stats", True))
    stats_batched = [ctx.batched(t) for t in (rm, rv) if t is not None]
    if use_stats and ctx.batched(x) and not all(stats_batched):
        raise RuntimeError(_BN_SHARED_STATS)
    if _only_first_batched(ctx, ba, "input"):
        if use_stats and rm is not None:
            return NotImplemented
        return _fold_batch(ctx, func, args, kwargs, x._value.dim() - 3)
    rank = ctx.ldim(x)
    if rank < 2 or not ctx.batched(x) and use_stats and stats_batched and \
            not all(stats_batched):
        return NotImplemented
    C = x.shape[1]
    for name in ("running_mean", "running_var", "weight", "bias"):
        t = a.get(name)
        if t is not None and (not isinstance(t, Tensor) or ctx.ldim(t) != 1 or t.shape[0] != C):
            return NotImplemented
    if use_stats and "cudnn_enabled" not in a and math.prod(x.shape[2:]) == 1:
        from .normalization import _torch_size

        raise ValueError("Expected more than 1 spatial element when training, got input size "
                         f"{_torch_size(tuple(x.shape))}")
    return _channel_fold(ctx, func, ba, use_stats)


@register_batch_rule("local_response_norm")
def _lrn(ctx, func, args, kwargs):
    x = args[0] if args else kwargs.get("input")
    if not ctx.batched(x) or ctx.ldim(x) < 3:
        return NotImplemented
    return _fold_batch(ctx, func, args, kwargs, ctx.ldim(x) - 2)


@register_batch_rule("grid_sample")
def _grid_sample(ctx, func, args, kwargs):
    ba = _bind(func, args, kwargs)
    if ba is None:
        return NotImplemented
    x = ba.arguments["input"]
    if not ctx.batched(x) and not ctx.batched(ba.arguments["grid"]):
        return NotImplemented
    X = ctx.materialize(x)
    return _fold_batch(ctx, func, (), {**ba.arguments, "input": _wrap_level(X, ctx)},
                       X.dim() - 3, fold_names=("grid",))


def _wrap_level(phys, ctx):
    from .._functorch._batched import wrap

    return wrap(phys, ctx.level)


def _conv_transpose_per_example(ctx, func, ba, X, W, b, spatial):
    # W: (B, Cin, Cout/g, *k); the examples as groups
    return _examples_as_groups(ctx, func, ba, X, W, b,
                               W.shape[2] * int(ba.arguments.get("groups", 1)))


register_batch_rule("conv_transpose1d", "conv_transpose2d", "conv_transpose3d")(
    _conv_rule(_conv_transpose_per_example))


# -- recurrent layers ------------------------------------------------------------------------------

@register_batch_rule("_recurrent_layer")
def _recurrent_layer(ctx, func, args, kwargs):
    """``ember.nn``'s recurrent layer (one layer and direction of ``RNN``/``LSTM``/``GRU``
    and their cells: ``(mode, xw, h0, c0, w, b, w_hr, batch_sizes, reverse, lead=None)`` ->
    ``(output, h_n, c_n)``, ``xw`` the input projection of the steps in time-major rows,
    ``N x G``). With shared weights and equal batch sizes at every step (padded input) the
    vmap batch folds into the layer's batch, ``(V, T*B, G) -> (T*V*B, G)``: one fused layer
    for the whole vmap. Batched weights (an ensemble through ``functional_call``) and packed
    sequences run one fused layer per example (the loop)."""
    ba = _bind(func, args, kwargs)
    if ba is None:
        return NotImplemented
    a = ba.arguments
    if any(ctx.batched(a[n]) for n in ("w", "b", "w_hr")):
        return NotImplemented
    steps = list(a["batch_sizes"])
    if not steps or any(s != steps[0] for s in steps):
        return NotImplemented
    T, Bn, V = len(steps), steps[0], ctx.size
    lead = a["lead"]
    X = ctx.materialize(a["xw"])
    if X.dim() != 3 or X.shape[1] != T * Bn or (lead is not None and tuple(lead) != (T, Bn)):
        return NotImplemented
    G = X.shape[2]
    a["xw"] = X.reshape((V, T, Bn, G)).movedim(0, 1).reshape((T * V * Bn, G))
    for n in ("h0", "c0"):
        if a[n] is not None:
            H = ctx.materialize(a[n])
            if H.dim() != 3 or H.shape[1] != Bn:
                return NotImplemented
            a[n] = H.reshape((V * Bn, H.shape[2]))
    a["batch_sizes"] = [V * Bn] * T
    if lead is not None:
        a["lead"] = (T, V * Bn)
    out, h_n, c_n = _call(func, ba)
    P = out.shape[-1]
    out = out.reshape((T, V, Bn, P)).movedim(1, 0)
    if lead is None:
        out = out.reshape((V, T * Bn, P))
    h_n = h_n.reshape((V, Bn, h_n.shape[-1]))
    if c_n is not None:
        c_n = c_n.reshape((V, Bn, c_n.shape[-1]))
    return out, h_n, c_n


# -- what has a rule ------------------------------------------------------------------------------

def covered() -> list[str]:
    """Registered ops (``OPS``) that have a batching rule."""
    from .registry import BATCH_RULES

    return sorted(n for n in OPS if n in BATCH_RULES)
