"""``ember.ops.aten``: PyTorch's ``torch.ops.aten`` over Ember's one op registry.

``ember.ops.aten.add.Tensor(a, b)``, ``ember.ops.aten.mm.default(a, b)``,
``ember.ops.aten.relu(x)`` (a packet called directly picks the overload whose schema takes the
arguments), ``ember.ops.aten.sum.dim_IntList(x, [0])``, ``ember.ops.aten.add_.Tensor(x, y)``,
``ember.ops.aten.add.out(a, b, out=c)``: each overload binds its arguments to ATen's schema
(``native_functions.yaml``: argument order, keyword-only arguments, defaults), then calls the
Ember op of that name:

* the registry op (``OPS[name].fn``), an in-place variant (``add_``: ``OPS["add"].inplace``),
  a Tensor method that is not a function (``view``, ``expand``, ``copy_``, ``fill_``,
  ``new_zeros``) or a factory (``zeros``, ``arange``), each behind ``ember.overrides``'
  dispatch as Ember's public API is, so ``__torch_function__`` modes, subclasses and the
  capture of ``ember.export`` see the Ember op that an overload runs;
* the ATen ops that have no Ember name or another signature (``convolution``,
  ``native_layer_norm``, ``_softmax``, ``_to_copy``, ``native_batch_norm``, ``slice``, ...)
  are the functions of this module (``ATEN_ONLY``), written with public Ember ops.

Schema arguments reach the Ember function by position while both agree, then by name
(``self`` is Ember's ``input``; ATen's ``int reduction`` becomes ``F``'s string where the
Ember function takes that); an ``out`` overload passes ``out=`` (a tuple for several),
or copies into the given tensors when the Ember function has no ``out=``. Arguments Ember's
function does not take (``memory_format``, ``layout``, ``pin_memory``) are accepted at their
defaults. Results are ATen's: a tuple for several returns, a list for ``Tensor[]``.

The schemas below are PyTorch's (the ones Ember runs, Dimname overloads left out), one per
line in the order of ``torch.ops.aten.<op>.overloads()``. Two short forms spare repeating one:
``<name>.<overload><<ref>`` is the out variant of ``<name>.<ref>`` (its arguments plus
``*, Tensor(a!) out``, returning ``Tensor(a!)``) and ``<name>_.<overload><<ref>`` the in-place
variant of ``<name>.<ref>`` (``Tensor(a!) self``, returning ``Tensor(a!)``).
``tests/core/test_ops_aten.py`` checks every line against the schemas PyTorch registers.

Nothing here is built at ``import ember``: the namespace is made on first access of
``ember.ops.aten``, each packet on first access of its name, each call plan on first call.
"""

from __future__ import annotations

import inspect
import threading

from .._dtype import scalar_type_name
from .._forksafe import reinit_in_child
from .._library.ops import OpNamespace, OpOverload, OpOverloadPacket
from .._library.schema import FunctionSchema, parse_schema

__all__ = ["namespace", "schema_text", "op_names", "ATEN_ONLY", "AtenOp", "AtenOverload",
           "AtenNamespace"]

_LOCK = reinit_in_child(threading.RLock())


# -- the ATen ops that Ember has under no name of its own ----------------------------------------

def _ember():
    import ember

    return ember


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    """ATen's ``convolution``: ``conv{1,2,3}d`` or ``conv_transpose{1,2,3}d`` by the
    weight's rank."""
    n = weight.dim() - 2
    if n not in (1, 2, 3):
        raise RuntimeError(f"Expected 3D, 4D or 5D (batch mode) weight for convolution, but "
                           f"got weight of size {list(weight.shape)}")
    if transposed:
        fn = _registry_fn(f"conv_transpose{n}d")
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    return _registry_fn(f"conv{n}d")(input, weight, bias, stride, padding, dilation, groups)


def _stats(input, dims, eps):
    """The mean and the reciprocal standard deviation (biased) over ``dims``, kept, outside
    the graph (ATen's saved statistics are not differentiable outputs)."""
    x = input.detach()
    mean = x.mean(dims, keepdim=True)
    var = x.var(dims, keepdim=True, correction=0)
    return mean, (var + eps).rsqrt()


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """``(layer_norm(...), mean, rstd)``, the statistics shaped ``input.shape[:axis] +
    (1,) * len(normalized_shape)``."""
    out = _ember().layer_norm(input, normalized_shape, weight, bias, eps)
    dims = tuple(range(input.dim() - len(normalized_shape), input.dim()))
    mean, rstd = _stats(input, dims, eps)
    return out, mean, rstd


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
                      eps):
    """``(batch_norm(...), save_mean, save_invstd)``: the batch's statistics per channel in
    training (running statistics updated), empty tensors in evaluation."""
    out = _ember().batch_norm(input, weight, bias, running_mean, running_var, training,
                              momentum, eps)
    if not training:
        empty = input.new_empty((0,))
        return out, empty, empty.clone()
    dims = (0, *range(2, input.dim()))
    mean, invstd = _stats(input, dims, eps)
    return out, mean.reshape(-1), invstd.reshape(-1)


def _native_batch_norm_legit(input, weight, bias, running_mean=None, running_var=None,
                             training=False, momentum=0.1, eps=1e-5):
    return native_batch_norm(input, weight, bias, running_mean, running_var, training,
                             momentum, eps)


def _native_batch_norm_legit_no_training(input, weight, bias, running_mean, running_var,
                                         momentum, eps):
    return native_batch_norm(input, weight, bias, running_mean, running_var, False, momentum,
                             eps)


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """``(group_norm(...), mean, rstd)``, the statistics shaped ``(N, group)``."""
    out = _ember().group_norm(input, group, weight, bias, eps)
    mean, rstd = _stats(input.reshape(N, group, -1), (2,), eps)
    return out, mean.reshape(N, group), rstd.reshape(N, group)


def native_dropout(input, p, train):
    """``(output, mask)``: the kept elements scaled by ``1 / (1 - p)`` and the boolean mask
    of the kept ones (all of them when not ``train``)."""
    ember = _ember()
    if train is False or p == 0:
        return input.clone(), ember.ones_like(input, dtype=ember.bool)
    if p == 1:
        return input * 0, ember.zeros_like(input, dtype=ember.bool)
    mask = ember.bernoulli(ember.full_like(input, 1 - p)).to(ember.bool)
    return input * mask * (1.0 / (1 - p)), mask


def _softmax(self, dim, half_to_float):
    ember = _ember()
    return ember.softmax(self, dim, ember.float32 if half_to_float else None)


def _log_softmax(self, dim, half_to_float):
    ember = _ember()
    return ember.log_softmax(self, dim, ember.float32 if half_to_float else None)


def _to_copy(self, *, dtype=None, layout=None, device=None, pin_memory=None,
             non_blocking=False, memory_format=None):
    """A copy of ``self`` in ``dtype`` on ``device`` (ATen's ``Tensor.to``)."""
    kwargs = {"copy": True, "non_blocking": non_blocking}
    if memory_format is not None:
        kwargs["memory_format"] = memory_format
    return self.to(device=device if device is not None else self.device,
                   dtype=dtype if dtype is not None else self.dtype, **kwargs)


def _unsafe_view(self, size):
    return self.reshape(size)


def lift_fresh(self):
    return self


def lift_fresh_copy(self):
    return self.clone()


def copy(self, src, non_blocking=False):
    """``self.clone().copy_(src)``: ``src`` broadcast to ``self``'s shape, dtype, device."""
    return self.clone().copy_(src, non_blocking)


def index(self, indices):
    """``self[indices]``, a ``None`` index taking all of its dimension (ATen's ``index``)."""
    return self[tuple(slice(None) if i is None else i for i in indices)]


def _local_scalar_dense(self):
    return self.item()


def constant_pad_nd(self, pad, value=0):
    return _registry_fn("pad")(self, pad, "constant", value)


def _adaptive_avg_pool2d(self, output_size):
    return _registry_fn("adaptive_avg_pool2d")(self, output_size)


def stft(self, n_fft, hop_length=None, win_length=None, window=None, center=False,
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None,
         align_to_window=None):
    """ATen's ``stft``: not centred unless ``center`` is given (``stft.center``), the
    centring being ``torch.stft``'s Python padding."""
    return _registry_fn("stft")(self, n_fft, hop_length, win_length, window, center, pad_mode,
                                normalized, onesided, return_complex, align_to_window)


def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
    """``(output, inverse_indices, counts)``, the ones not asked for empty."""
    res = _registry_fn("unique_consecutive")(self, True, True, dim)
    empty = self.new_empty((0,), dtype=res[1].dtype)
    return (res[0], res[1] if return_inverse else empty,
            res[2] if return_counts else empty.clone())


def tensordot(self, other, dims_self, dims_other):
    """ATen's ``tensordot``: the contracted dimensions of each side as two lists."""
    return _registry_fn("tensordot")(self, other, (dims_self, dims_other))


def fractional_max_pool2d(self, kernel_size, output_size, random_samples):
    """``(output, indices)`` at the given ``random_samples``."""
    return _registry_fn("fractional_max_pool2d")(self, kernel_size, output_size, None, True,
                                                 random_samples)


def fractional_max_pool3d(self, kernel_size, output_size, random_samples):
    """``(output, indices)`` at the given ``random_samples``."""
    return _registry_fn("fractional_max_pool3d")(self, kernel_size, output_size, None, True,
                                                 random_samples)


def slice_view(self, dim=0, start=None, end=None, step=1):
    """ATen's ``slice``: ``self[..., start:end:step]`` along ``dim``, a view."""
    if self.dim() == 0:
        raise RuntimeError("slice() cannot be applied to a 0-dim tensor.")
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    dim = dim + self.dim() if dim < 0 else dim
    return self[(slice(None),) * dim + (slice(start, end, step),)]


def alias(self):
    """A view of all of ``self``."""
    return self[...]


_FLASH = "scaled_dot_product_attention_flash_attention: "


def _attention_scores(query, key, attn_mask, is_causal, scale, bool_adds: bool = False):
    """``query @ key^T`` scaled, causal entries and masked-out ones ``-inf``, a float mask
    added: what the softmax of attention sees. ``bool_adds``: a bool mask is added as 0/1
    (the math kernel's reading: the public function converts bool masks before calling
    it)."""
    ember = _ember()
    s = scale if scale is not None else query.size(-1) ** -0.5
    scores = ember.matmul(query, key.transpose(-2, -1)) * s
    L, S = scores.size(-2), scores.size(-1)
    if is_causal:
        keep = ember.ones(L, S, dtype=ember.bool, device=query.device).tril()
        scores = scores.masked_fill(keep.logical_not(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == ember.bool and not bool_adds:
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            scores = scores + attn_mask
    return scores


def _scaled_dot_product_flash_attention_for_cpu(query, key, value, dropout_p=0.0,
                                                is_causal=False, *, attn_mask=None,
                                                scale=None):
    """``(output, logsumexp)``: attention as PyTorch's CPU flash kernel computes it, for
    4-D ``(B, H, L, E)`` inputs of one head size (heads and batch broadcast), no dropout,
    a mask of the query's dtype (2-D or 4-D) that may go with ``is_causal``. ``logsumexp``
    (``(B, H, L)``, float32 for half inputs) is that of each query's scores, without
    gradient."""
    ember = _ember()
    if query.dtype not in (ember.float32, ember.float64, ember.bfloat16, ember.float16):
        raise RuntimeError(f"{_FLASH}Expected data type in FP32, FP64, BF16, FP16, but got "
                           f"{scalar_type_name(query.dtype)} instead.")
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise RuntimeError(_FLASH + "Accept only 4 dims inputs shape of {B, H, T, K}")
    if dropout_p > 0:
        raise RuntimeError(_FLASH + "Currently do not support dropout > 0")
    if not query.size(3) == key.size(3) == value.size(3):
        raise RuntimeError(_FLASH + "Q/K/V should have the same head size")
    if attn_mask is not None:
        if attn_mask.dtype != query.dtype:
            raise RuntimeError(_FLASH + "Attention mask is the same data type as query")
        if attn_mask.dim() not in (2, 4):
            raise RuntimeError(_FLASH + "Attention mask dim in {2, 4}")
    if key.dtype != query.dtype or value.dtype != query.dtype:
        other = key.dtype if key.dtype != query.dtype else value.dtype
        raise RuntimeError(f"expected scalar type {scalar_type_name(query.dtype)} but found "
                           f"{scalar_type_name(other)}")
    low = query.dtype in (ember.float16, ember.bfloat16)
    q, k, v = (t.float() for t in (query, key, value)) if low else (query, key, value)
    mask = attn_mask.float() if low and attn_mask is not None else attn_mask
    scores = _attention_scores(q, k, mask, is_causal, scale)
    out = ember.matmul(scores.softmax(-1), v)
    lse = scores.detach().logsumexp(-1)
    return (out.to(query.dtype) if low else out), lse


def _scaled_dot_product_attention_math(query, key, value, attn_mask=None, dropout_p=0.0,
                                       is_causal=False, dropout_mask=None, *, scale=None,
                                       enable_gqa=False):
    """``(output, attention weights)``: attention written out (PyTorch's reference path),
    the weights after dropout; with ``dropout_mask`` (the elements kept, for tests) the
    weights come back masked but not rescaled, the value rescaled instead, as PyTorch's."""
    ember = _ember()
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    if enable_gqa and query.dim() >= 3 and key.size(-3) != query.size(-3):
        groups = query.size(-3) // key.size(-3)
        key = key.repeat_interleave(groups, -3)
        value = value.repeat_interleave(groups, -3)
    attn = _attention_scores(query, key, attn_mask, is_causal, scale, True).softmax(-1)
    if dropout_p > 0:
        if dropout_mask is not None:
            attn = attn.masked_fill(dropout_mask.logical_not(), 0)
            return ember.matmul(attn, value * (1.0 / (1 - dropout_p))), attn
        attn = _registry_fn("dropout")(attn, dropout_p, True)
    return ember.matmul(attn, value), attn


def _pin_memory(self, device=None):
    """A copy of ``self`` in page-locked host memory (``Tensor.pin_memory``)."""
    return self.pin_memory(device) if device is not None else self.pin_memory()


def _sparse_addmm(self, mat1, mat2, *, beta=1, alpha=1):
    """``beta * self + alpha * (mat1 @ mat2)`` with ``mat1`` sparse (``sparse.addmm``)."""
    return _ember().sparse.addmm(self, mat1, mat2, beta=beta, alpha=alpha)


def _sparse_mm_reduce_impl(self, other, reduce):
    """``(sparse.mm(self, other, reduce), arg_out)`` for a CSR ``self``; ``arg_out`` is
    PyTorch's saved argmax/argmin for its own backward, which Ember's autograd does not need:
    it is empty, as PyTorch's is when no input requires grad."""
    ember = _ember()
    if reduce not in ("sum", "mean", "amax", "amin", "max", "min"):
        raise RuntimeError(f"reduce argument must be either sum, mean, amax or amin, got "
                           f"{reduce}")
    out = ember.sparse.mm(self, other, reduce)
    return out, ember.empty(0, dtype=ember.int64, device=other.device)


def _registry_fn(name: str):
    """The registry op ``name`` as Ember's public function (it dispatches, as PyTorch's ops
    do, to ``__torch_function__`` modes and subclasses: a capture records it)."""
    from .registry import OPS

    return _dispatching(OPS[name].fn, name)


_DISPATCHING: dict = {}


def _dispatching(fn, name: str):
    """``fn`` behind ``ember.overrides``' dispatch, as the public ``ember.<name>`` is once
    dispatch is on (made once per function)."""
    public = _DISPATCHING.get(fn)
    if public is None:
        from ..overrides import _dispatching as make

        public = _DISPATCHING[fn] = make(fn, name)
    return public


#: what the overloads of ATen's ops call where no Ember function takes ATen's arguments (no
#: Ember name: ``convolution``; another signature: ``tensordot``, ``stft``, ``slice``)
ATEN_ONLY = {f.__name__: f for f in (
    convolution, native_layer_norm, native_batch_norm, _native_batch_norm_legit,
    _native_batch_norm_legit_no_training, native_group_norm, native_dropout, _softmax,
    _log_softmax, _to_copy, _unsafe_view, lift_fresh, lift_fresh_copy, copy, index,
    _local_scalar_dense, constant_pad_nd, _adaptive_avg_pool2d, stft, unique_consecutive,
    tensordot, fractional_max_pool2d, fractional_max_pool3d, alias,
    _scaled_dot_product_flash_attention_for_cpu, _scaled_dot_product_attention_math,
    _pin_memory, _sparse_addmm, _sparse_mm_reduce_impl)}
ATEN_ONLY["slice"] = slice_view


# -- the schema table ---------------------------------------------------------------------------

#: op name -> {overload name ("" for default): its line of ``_SCHEMAS``}, made on first use
_INDEX: dict | None = None


def _index() -> dict:
    global _INDEX
    if _INDEX is None:
        with _LOCK:
            if _INDEX is None:
                index: dict = {}
                for line in _SCHEMAS.splitlines():
                    if line:
                        name, _, overload = line.partition("(")[0].partition("<")[0] \
                            .partition(".")
                        index.setdefault(name, {})[overload] = line
                _INDEX = index
    return _INDEX


def op_names() -> list:
    """The names of ``ember.ops.aten``'s ops."""
    return sorted(_index())


def _is_inplace_name(name: str) -> bool:
    return name.endswith("_") and not name.endswith("__")


def schema_text(name: str, overload: str = "") -> str:
    """The schema of ``aten::<name>.<overload>`` as PyTorch prints it (KeyError if none)."""
    line = _index()[name][overload]
    if "(" in line:
        return "aten::" + line
    head, _, ref = line.partition("<")
    if _is_inplace_name(name):
        args, _ = _split(schema_text(name[:-1], ref))
        args = "Tensor(a!) self" + args[len("Tensor self"):]
    else:
        args, _ = _split(schema_text(name, ref))
        if "*" in args.split(", "):
            args += ", Tensor(a!) out"
        else:
            args += ", *, Tensor(a!) out" if args else "*, Tensor(a!) out"
    return f"aten::{head}({args}) -> Tensor(a!)"


def _split(text: str) -> tuple[str, str]:
    """``(arguments, returns)`` of a schema's text."""
    rest = text.partition("(")[2]
    args, _, returns = rest.rpartition(") -> ")
    return args, returns


# -- what an overload calls ---------------------------------------------------------------------

def _target(name: str):
    """``(callable, the function whose signature names its parameters)`` of op ``name``.

    The callable dispatches as Ember's public API does (``__torch_function__`` modes and
    subclasses see the Ember op, so ``ember.export`` records it); the functions of
    ``ATEN_ONLY`` are run as they are, their bodies calling public ops."""
    from .registry import METHODS, OPS

    fn = ATEN_ONLY.get(name)
    if fn is not None:
        return fn, fn
    info = OPS.get(name)
    if info is not None:
        return _dispatching(info.fn, name), info.fn
    if _is_inplace_name(name):
        base = OPS.get(name[:-1])
        if base is not None and base.inplace is not None:
            return _dispatching(base.inplace, name), base.fn
    method = METHODS.get(name)
    if isinstance(method, property):  # ``mT``, ``mH``
        method = method.fget
    if method is not None:
        return _dispatching(method, name), method
    fn = getattr(getattr(_ember(), name, None), "_ember_original", None) \
        or getattr(_ember(), name, None)
    if getattr(fn, "__module__", None) in _FACTORY_MODULES:
        return _dispatching(fn, name), fn
    raise NotImplementedError(f"aten::{name}: Ember has no op of that name")


#: the modules of ``ember``'s factories (``ember.export._ops.FACTORY_MODULES``, not imported:
#: the export package is not loaded for a lookup)
_FACTORY_MODULES = ("ember._factory", "ember._creation", "ember._random")
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_KEYWORD = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


class _Plan:
    """How one overload's bound arguments reach the Ember function.

    ``steps`` has one ``(how, name, convert, keep)`` per schema argument that is not an
    output: ``how`` is ``"pos"`` (positional), ``"kw"`` (by ``name``) or ``"drop"`` (the
    function has no such parameter: only the schema's default is accepted); ``convert`` (or
    None) turns ATen's value into Ember's (the ``reduction`` enum into ``F``'s string). An
    argument at the schema's default is left to the function's own default (which says the
    same, if in another form: ``stride=1`` for ``[1, 1]``) unless ``keep``: the function has
    none, or another value of the same type (``reduction=0`` for ATen's ``Mean``).
    ``outs`` are the output arguments; ``out_kw``: the function takes them as ``out=``."""

    __slots__ = ("target", "steps", "outs", "out_kw")

    def __init__(self, op: AtenOp):
        target, named = _target(op.name)
        self.target = target
        try:
            params = list(inspect.signature(named).parameters.values())
        except (TypeError, ValueError):  # a builtin: everything by position
            params = [inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL)]
        by_name = {p.name: p for p in params}
        positional = [p for p in params if p.kind in _POSITIONAL]
        var_pos = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
        var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
        args = op.schema.arguments
        self.outs = [a for a in args if a.kwarg_only and a.is_write]
        ins = [a for a in args if not (a.kwarg_only and a.is_write)]
        names = [_ember_name(a.name, by_name) for a in ins]
        self.steps = []
        open_prefix = True
        for i, (a, name) in enumerate(zip(ins, names)):
            p = by_name.get(name)
            convert = _reduction_name if a.name == "reduction" and p is not None \
                and isinstance(p.default, str) else None  # ATen's enum, F's string
            if open_prefix and not a.kwarg_only:
                if i < len(positional):
                    q = positional[i]
                    # the same parameter: the same name, or (the first, or a required one
                    # of another name) neither name known to the other side
                    if q.name == name or i == 0 or (
                            q.default is inspect.Parameter.empty and name not in by_name
                            and q.name not in names):
                        self.steps.append(("pos", None, convert, _keep(a, q, convert)))
                        continue
                elif var_pos:  # ``fn(self, *args)``: the rest by position too
                    self.steps.append(("pos", None, convert, False))
                    continue
                open_prefix = False
            if p is not None and p.kind in _KEYWORD:
                self.steps.append(("kw", name, convert, _keep(a, p, convert)))
            elif var_kw:
                self.steps.append(("kw", name, convert, False))
            elif a.has_default:
                self.steps.append(("drop", None, None, False))
            else:
                raise NotImplementedError(
                    f"{op.schema.qualname}.{op.overload_name or 'default'}: Ember's "
                    f"{getattr(named, '__name__', op.name)} takes no argument '{a.name}'")
        p = by_name.get("out")
        self.out_kw = bool(self.outs) and (p is not None and p.kind in _KEYWORD or var_kw)


def _keep(a, p: inspect.Parameter, convert) -> bool:
    """Whether schema argument ``a`` is passed at its default to Ember's parameter ``p``."""
    if p.default is inspect.Parameter.empty:
        return True
    if not a.has_default:
        return False
    default = a.default if convert is None else convert(a.default)
    return type(default) is type(p.default) and isinstance(default, (int, float, str)) \
        and default != p.default


def _reduction_name(value: int) -> str:
    """ATen's ``int reduction`` (``at::Reduction``) as ``torch.nn.functional``'s string."""
    return ("none", "mean", "sum")[value]


#: ``c10::ScalarType``'s numbering, in which schemas print a dtype default (``dtype=4``)
_SCALAR_TYPES = ("uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
                 "complex32", "complex64", "complex128", "bool", "qint8", "quint8", "qint32",
                 "bfloat16")


def _ember_name(name: str, params: dict) -> str:
    """The Ember parameter a schema argument is: ATen's ``self`` is Ember's ``input``."""
    if name == "self" and "self" not in params and "input" in params:
        return "input"
    return name


def _at_default(a, value) -> bool:
    if not a.has_default:
        return False
    default = a.default
    if default is None or value is None:
        return value is default
    return type(value) is type(default) and value == default


class AtenSchema(FunctionSchema):
    """A parsed ATen schema that prints as PyTorch does (the parser reads an alias set such
    as ``Tensor(a -> *)`` as ``Tensor(a)``; the text keeps it)."""

    text = ""

    def __str__(self) -> str:
        return self.text or super().__str__()

    def _convert(self, a, value, position: int):
        t = a.type
        if t.base == "Tensor" and not t.is_list and value.__class__ in _NUMBERS \
                and self.name in NUMBER_AS_TENSOR:
            return value  # PyTorch wraps the number (``add.Tensor(x, 2)``); Ember's op takes
        return super()._convert(a, value, position)  # it as it is


_NUMBERS = (bool, int, float, complex)
#: the ATen ops whose overloads take a Python number for a Tensor argument (PyTorch's
#: ``should_allow_numbers_as_tensors``: ``aten.add.Tensor(x, 2)`` runs, ``aten.eq.Tensor(x,
#: 2)`` is refused), and whose Python bindings have no Scalar overload (``x + 1`` dispatches
#: ``add.Tensor``)
NUMBER_AS_TENSOR = frozenset(f"aten::{n}{suffix}" for n in (
    "add", "sub", "mul", "div", "true_divide", "floor_divide") for suffix in ("", "_"))


class AtenOp:
    """One overload of an ATen op: what ``ember._library.ops.OpOverload`` and
    ``OpOverloadPacket`` read of an op (``OpDef``'s interface), calling Ember's op."""

    ns = "aten"
    tags = ()
    custom = None

    def __init__(self, name: str, overload_name: str):
        text = schema_text(name, overload_name)
        schema = parse_schema(text[len("aten::"):])
        schema.__class__ = AtenSchema
        schema.text = text
        schema.qualname = schema.name = f"aten::{name}"  # (PyTorch's ``_schema.name``)
        for a in schema.arguments:
            if a.type.base == "ScalarType" and a.default.__class__ is int:  # ``dtype=4``
                a.default = getattr(_ember(), _SCALAR_TYPES[a.default])
        self.name = name
        self.overload_name = overload_name
        self.qualname = schema.qualname
        self.key = self.qualname + (f".{overload_name}" if overload_name else "")
        self.schema = schema
        self._plan: _Plan | None = None
        self.entry = self._make_entry()
        self.overload = AtenOverload(self)

    def __repr__(self) -> str:
        return f"<AtenOp {self.key}>"

    def _make_entry(self):
        op = self

        def entry(*args, **kwargs):
            return op.call(args, kwargs)

        entry.__name__ = entry.__qualname__ = self.key
        entry.__module__ = "ember.ops.aten"
        entry.__doc__ = f"ATen's {self.schema}, run by Ember."
        return entry

    def plan(self) -> _Plan:
        """How this overload calls Ember (made on first call)."""
        plan = self._plan
        if plan is None:
            plan = self._plan = _Plan(self)
        return plan

    def call(self, args: tuple, kwargs: dict):
        """Bind the arguments to the schema, then call the Ember op."""
        args, kwargs = self.schema.bind(args, kwargs)
        plan = self.plan()
        pos, kw, pending = [], {}, []
        i = 0
        for a, (how, name, convert, keep) in zip(
                (a for a in self.schema.arguments if not (a.kwarg_only and a.is_write)),
                plan.steps):
            if a.kwarg_only:
                value = kwargs[a.name]
            else:
                value = args[i]
                i += 1
            default = not keep and _at_default(a, value)
            if convert is not None:
                value = convert(value)
            if how == "pos":
                if default:  # left to the function's default unless a later one follows
                    pending.append(value)
                else:
                    pos += pending
                    pending.clear()
                    pos.append(value)
            elif how == "kw":
                if not default:
                    kw[name] = value
            elif not default:
                raise NotImplementedError(f"{self.schema.qualname}: Ember does not support "
                                          f"argument '{a.name}'={value!r}")
        if not plan.outs:
            return self._result(plan.target(*pos, **kw))
        outs = [kwargs[a.name] for a in plan.outs]
        if plan.out_kw:
            kw["out"] = outs[0] if len(outs) == 1 else tuple(outs)
            plan.target(*pos, **kw)
        else:
            from ._inplace import write_out

            res = plan.target(*pos, **kw)
            for o, r in zip(outs, res if len(outs) > 1 else (res,)):
                write_out(o, r, self.name)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _result(self, res):
        """ATen's form of a result: a tuple for several returns, a list for ``Tensor[]``."""
        returns = self.schema.returns
        if len(returns) > 1 and isinstance(res, tuple):
            return tuple(list(r) if ret.type.is_list and isinstance(r, tuple) else r
                         for r, ret in zip(res, returns))
        if len(returns) == 1 and returns[0].type.is_list and isinstance(res, tuple):
            return list(res)
        return res


class AtenOverload(OpOverload):
    """``ember.ops.aten.<op>.<overload>`` (``torch._ops.OpOverload``)."""

    def __init__(self, op: AtenOp):
        super().__init__(op)
        self.__doc__ = f"ATen's {op.schema}, run by Ember."

    @property
    def overloadpacket(self) -> OpOverloadPacket:
        """The packet this overload belongs to (``ember.ops.aten.<op>``)."""
        return getattr(namespace(), self._opdef.name)

    def __reduce__(self):
        return (_overload, (self._opdef.name, self._opdef.overload_name))


def _overload(name: str, overload_name: str) -> AtenOverload:
    return getattr(getattr(namespace(), name), overload_name or "default")


class AtenNamespace(OpNamespace):
    """``ember.ops.aten`` (``torch.ops.aten``): a packet per ATen op that Ember runs, made on
    first access."""

    def __init__(self):
        super().__init__("aten")

    def __getattr__(self, op_name: str):
        if op_name.startswith("__") and op_name not in _index():
            raise AttributeError(op_name)
        with _LOCK:
            packet = self.__dict__["_packets"].get(op_name)
            if packet is None:
                packet = self._make_packet(op_name)
        return packet

    def _make_packet(self, op_name: str) -> OpOverloadPacket:
        overloads = _index().get(op_name)
        if overloads is None:  # (``ember.library`` defines no op in ``aten``)
            raise AttributeError(f"'_OpNamespace' 'aten' object has no attribute '{op_name}'")
        packet = OpOverloadPacket("aten", op_name)
        for overload_name in overloads:
            packet._overloads[overload_name or "default"] = AtenOp(op_name, overload_name)
        self._packets[op_name] = packet
        setattr(self, op_name, packet)
        return packet

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(_index()))


_NAMESPACE: list = []


def namespace() -> AtenNamespace:
    """``ember.ops.aten`` (made on first use)."""
    if not _NAMESPACE:
        with _LOCK:
            if not _NAMESPACE:
                _NAMESPACE.append(AtenNamespace())
    return _NAMESPACE[0]


#: PyTorch's schemas of the ATen ops Ember runs (see the module's doc for the short forms)
_SCHEMAS = """\
__and__.Scalar(Tensor self, Scalar other) -> Tensor
__and__.Tensor(Tensor self, Tensor other) -> Tensor
__iand__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
__iand__.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
__ilshift__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
__ilshift__.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
__ior__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
__ior__.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
__irshift__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
__irshift__.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
__ixor__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
__ixor__.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)
__lshift__.Tensor(Tensor self, Tensor other) -> Tensor
__lshift__.Scalar(Tensor self, Scalar other) -> Tensor
__lshift__.Scalar_out<Scalar
__lshift__.Tensor_out<Tensor
__or__.Tensor(Tensor self, Tensor other) -> Tensor
__or__.Scalar(Tensor self, Scalar other) -> Tensor
__rshift__.Tensor(Tensor self, Tensor other) -> Tensor
__rshift__.Scalar(Tensor self, Scalar other) -> Tensor
__rshift__.Scalar_out<Scalar
__rshift__.Tensor_out<Tensor
__xor__.Tensor(Tensor self, Tensor other) -> Tensor
__xor__.Scalar(Tensor self, Scalar other) -> Tensor
_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor
_adaptive_avg_pool2d.out<
_indices(Tensor(a) self) -> Tensor(a)
_local_scalar_dense(Tensor self) -> Scalar
_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor
_log_softmax.out<
_native_batch_norm_legit(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!) running_mean, Tensor(b!) running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)
_native_batch_norm_legit.no_stats(Tensor input, Tensor? weight, Tensor? bias, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)
_native_batch_norm_legit.out(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!) running_mean, Tensor(b!) running_var, bool training, float momentum, float eps, *, Tensor(d!) out, Tensor(e!) save_mean, Tensor(f!) save_invstd) -> (Tensor(d!), Tensor(e!), Tensor(f!))
_native_batch_norm_legit.no_stats_out(Tensor input, Tensor? weight, Tensor? bias, bool training, float momentum, float eps, *, Tensor(a!) out, Tensor(b!) save_mean, Tensor(c!) save_invstd) -> (Tensor(a!), Tensor(b!), Tensor(c!))
_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor)
_native_batch_norm_legit_no_training.out(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, float momentum, float eps, *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2) -> (Tensor(a!), Tensor(b!), Tensor(c!))
_nnz(Tensor self) -> int
_pin_memory(Tensor self, Device? device=None) -> Tensor
_pin_memory.out<
_scaled_dot_product_attention_math(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0., bool is_causal=False, Tensor? dropout_mask=None, *, float? scale=None, bool enable_gqa=False) -> (Tensor, Tensor)
_scaled_dot_product_flash_attention_for_cpu(Tensor query, Tensor key, Tensor value, float dropout_p=0., bool is_causal=False, *, Tensor? attn_mask=None, float? scale=None) -> (Tensor output, Tensor logsumexp)
_softmax(Tensor self, int dim, bool half_to_float) -> Tensor
_softmax.out<
_sparse_addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor
_sparse_addmm.out<
_sparse_mm_reduce_impl(Tensor self, Tensor other, str reduce) -> (Tensor, Tensor)
_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor
_to_copy.out(Tensor self, *, bool non_blocking=False, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)
_unsafe_view(Tensor self, SymInt[] size) -> Tensor
_unsafe_view.out<
_values(Tensor(a) self) -> Tensor(a)
abs(Tensor self) -> Tensor
abs.out<
abs_<
acos(Tensor self) -> Tensor
acos.out<
acos_<
acosh(Tensor self) -> Tensor
acosh.out<
acosh_<
adaptive_avg_pool1d(Tensor self, int[1] output_size) -> Tensor
adaptive_avg_pool1d.out<
adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor
adaptive_avg_pool2d.out<
adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor
adaptive_avg_pool3d.out<
adaptive_max_pool1d(Tensor self, int[1] output_size) -> (Tensor, Tensor)
adaptive_max_pool2d(Tensor self, int[2] output_size) -> (Tensor, Tensor)
adaptive_max_pool2d.out(Tensor self, int[2] output_size, *, Tensor(a!) out, Tensor(b!) indices) -> (Tensor(a!), Tensor(b!))
adaptive_max_pool3d(Tensor self, int[3] output_size) -> (Tensor, Tensor)
adaptive_max_pool3d.out(Tensor self, int[3] output_size, *, Tensor(a!) out, Tensor(b!) indices) -> (Tensor(a!), Tensor(b!))
add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
add.out<Tensor
add.Scalar_out<Scalar
add_.Tensor<Tensor
add_.Scalar<Scalar
addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor
addbmm.out<
addbmm_<
addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor
addcdiv.out<
addcdiv_<
addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor
addcmul.out<
addcmul_<
addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor
addmm.out<
addmm_<
addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1) -> Tensor
addmv.out<
addmv_<
addr(Tensor self, Tensor vec1, Tensor vec2, *, Scalar beta=1, Scalar alpha=1) -> Tensor
addr.out<
addr_<
adjoint(Tensor(a) self) -> Tensor(a)
affine_grid_generator(Tensor theta, SymInt[] size, bool align_corners) -> Tensor
affine_grid_generator.out<
alias(Tensor(a) self) -> Tensor(a)
alias_copy(Tensor self) -> Tensor
alias_copy.out<
all(Tensor self) -> Tensor
all.dim(Tensor self, int dim, bool keepdim=False) -> Tensor
all.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor
all.out<dim
all.dims_out<dims
all.all_out<
allclose(Tensor self, Tensor other, float rtol=1.0000000000000001e-05, float atol=1e-08, bool equal_nan=False) -> bool
alpha_dropout(Tensor input, float p, bool train) -> Tensor
alpha_dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)
amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor
amax.out<
amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor
amin.out<
aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> (Tensor min, Tensor max)
aminmax.out(Tensor self, *, int? dim=None, bool keepdim=False, Tensor(a!) min, Tensor(b!) max) -> (Tensor(a!) min, Tensor(b!) max)
angle(Tensor self) -> Tensor
angle.out<
any(Tensor self) -> Tensor
any.dim(Tensor self, int dim, bool keepdim=False) -> Tensor
any.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor
any.out<dim
any.dims_out<dims
any.all_out<
arange(Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
arange.start(Scalar start, Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
arange.start_out(Scalar start, Scalar end, Scalar step=1, *, Tensor(a!) out) -> Tensor(a!)
arange.out(Scalar end, *, Tensor(a!) out) -> Tensor(a!)
argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor
argmax.out<
argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor
argmin.out<
argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor
argsort.stable(Tensor self, *, bool stable, int dim=-1, bool descending=False) -> Tensor
argsort.stable_out<stable
argwhere(Tensor self) -> Tensor
as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)
as_strided_(Tensor(a!) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a!)
as_strided_copy(Tensor self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor
as_strided_copy.out<
as_strided_scatter(Tensor self, Tensor src, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor
as_strided_scatter.out<
asin(Tensor self) -> Tensor
asin.out<
asin_<
asinh(Tensor self) -> Tensor
asinh.out<
asinh_<
atan(Tensor self) -> Tensor
atan.out<
atan2(Tensor self, Tensor other) -> Tensor
atan2.out<
atan2_<
atan_<
atanh(Tensor self) -> Tensor
atanh.out<
atanh_<
atleast_1d(Tensor self) -> Tensor
atleast_1d.Sequence(Tensor[] tensors) -> Tensor[]
atleast_2d(Tensor self) -> Tensor
atleast_2d.Sequence(Tensor[] tensors) -> Tensor[]
atleast_3d(Tensor self) -> Tensor
atleast_3d.Sequence(Tensor[] tensors) -> Tensor[]
avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], bool ceil_mode=False, bool count_include_pad=True) -> Tensor
avg_pool1d.out<
avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor
avg_pool2d.out<
avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor
avg_pool3d.out<
baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor
baddbmm.out<
baddbmm_<
bartlett_window(int window_length, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
bartlett_window.periodic(int window_length, bool periodic, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
bartlett_window.out(int window_length, *, Tensor(a!) out) -> Tensor(a!)
bartlett_window.periodic_out(int window_length, bool periodic, *, Tensor(a!) out) -> Tensor(a!)
batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor
bernoulli(Tensor self, *, Generator? generator=None) -> Tensor
bernoulli.out<
bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> Tensor
bernoulli.Tensor(Tensor self, Tensor p, *, Generator? generator=None) -> Tensor
bernoulli.Tensor_out<Tensor
bernoulli.float_out(Tensor self, float p=0.5, *, Generator? generator=None, Tensor(a!) out) -> Tensor(a!)
bernoulli_.Tensor<Tensor
bernoulli_.float(Tensor(a!) self, float p=0.5, *, Generator? generator=None) -> Tensor(a!)
bilinear(Tensor input1, Tensor input2, Tensor weight, Tensor? bias=None) -> Tensor
binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, int reduction=1) -> Tensor
binary_cross_entropy.out<
binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, Tensor? pos_weight=None, int reduction=1) -> Tensor
binary_cross_entropy_with_logits.out<
bincount(Tensor self, Tensor? weights=None, SymInt minlength=0) -> Tensor
bincount.out<
binomial(Tensor count, Tensor prob, Generator? generator=None) -> Tensor
binomial.out<
bitwise_and.Tensor(Tensor self, Tensor other) -> Tensor
bitwise_and.Scalar(Tensor self, Scalar other) -> Tensor
bitwise_and.Scalar_Tensor(Scalar self, Tensor other) -> Tensor
bitwise_and.Tensor_out<Tensor
bitwise_and.Scalar_out<Scalar
bitwise_and.Scalar_Tensor_out<Scalar_Tensor
bitwise_and_.Tensor<Tensor
bitwise_and_.Scalar<Scalar
bitwise_left_shift.Tensor(Tensor self, Tensor other) -> Tensor
bitwise_left_shift.Tensor_Scalar(Tensor self, Scalar other) -> Tensor
bitwise_left_shift.Scalar_Tensor(Scalar self, Tensor other) -> Tensor
bitwise_left_shift.Tensor_out<Tensor
bitwise_left_shift.Tensor_Scalar_out<Tensor_Scalar
bitwise_left_shift.Scalar_Tensor_out<Scalar_Tensor
bitwise_left_shift_.Tensor_Scalar<Tensor_Scalar
bitwise_left_shift_.Tensor<Tensor
bitwise_not(Tensor self) -> Tensor
bitwise_not.out<
bitwise_not_<
bitwise_or.Tensor(Tensor self, Tensor other) -> Tensor
bitwise_or.Scalar(Tensor self, Scalar other) -> Tensor
bitwise_or.Scalar_Tensor(Scalar self, Tensor other) -> Tensor
bitwise_or.Tensor_out<Tensor
bitwise_or.Scalar_out<Scalar
bitwise_or.Scalar_Tensor_out<Scalar_Tensor
bitwise_or_.Tensor<Tensor
bitwise_or_.Scalar<Scalar
bitwise_right_shift.Tensor(Tensor self, Tensor other) -> Tensor
bitwise_right_shift.Tensor_Scalar(Tensor self, Scalar other) -> Tensor
bitwise_right_shift.Scalar_Tensor(Scalar self, Tensor other) -> Tensor
bitwise_right_shift.Tensor_out<Tensor
bitwise_right_shift.Tensor_Scalar_out<Tensor_Scalar
bitwise_right_shift.Scalar_Tensor_out<Scalar_Tensor
bitwise_right_shift_.Tensor_Scalar<Tensor_Scalar
bitwise_right_shift_.Tensor<Tensor
bitwise_xor.Tensor(Tensor self, Tensor other) -> Tensor
bitwise_xor.Scalar(Tensor self, Scalar other) -> Tensor
bitwise_xor.Scalar_Tensor(Scalar self, Tensor other) -> Tensor
bitwise_xor.Tensor_out<Tensor
bitwise_xor.Scalar_out<Scalar
bitwise_xor.Scalar_Tensor_out<Scalar_Tensor
bitwise_xor_.Tensor<Tensor
bitwise_xor_.Scalar<Scalar
blackman_window(int window_length, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
blackman_window.periodic(int window_length, bool periodic, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
blackman_window.out(int window_length, *, Tensor(a!) out) -> Tensor(a!)
blackman_window.periodic_out(int window_length, bool periodic, *, Tensor(a!) out) -> Tensor(a!)
block_diag(Tensor[] tensors) -> Tensor
block_diag.out<
bmm(Tensor self, Tensor mat2) -> Tensor
bmm.out<
bmm.dtype_out<dtype
bmm.dtype(Tensor self, Tensor mat2, ScalarType out_dtype) -> Tensor
broadcast_tensors(Tensor[] tensors) -> Tensor[]
broadcast_to(Tensor(a) self, SymInt[] size) -> Tensor(a)
bucketize.Tensor(Tensor self, Tensor boundaries, *, bool out_int32=False, bool right=False) -> Tensor
bucketize.Scalar(Scalar self, Tensor boundaries, *, bool out_int32=False, bool right=False) -> Tensor
bucketize.Tensor_out<Tensor
bucketize.Scalar_out<Scalar
cartesian_prod(Tensor[] tensors) -> Tensor
cat(Tensor[] tensors, int dim=0) -> Tensor
cat.out<
cauchy_(Tensor(a!) self, float median=0., float sigma=1., *, Generator? generator=None) -> Tensor(a!)
ccol_indices(Tensor(a) self) -> Tensor(a)
cdist(Tensor x1, Tensor x2, float p=2., int? compute_mode=None) -> Tensor
ceil(Tensor self) -> Tensor
ceil.out<
ceil_<
celu(Tensor self, Scalar alpha=1.) -> Tensor
celu.out<
celu_<
chain_matmul(Tensor[] matrices) -> Tensor
chain_matmul.out<
channel_shuffle(Tensor self, SymInt groups) -> Tensor
channel_shuffle.out<
cholesky(Tensor self, bool upper=False) -> Tensor
cholesky.out<
cholesky_inverse(Tensor self, bool upper=False) -> Tensor
cholesky_inverse.out<
cholesky_solve(Tensor self, Tensor input2, bool upper=False) -> Tensor
cholesky_solve.out<
chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]
clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor
clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor
clamp.out<
clamp.Tensor_out<Tensor
clamp_<
clamp_.Tensor<Tensor
clamp_max(Tensor self, Scalar max) -> Tensor
clamp_max.Tensor(Tensor self, Tensor max) -> Tensor
clamp_max.out<
clamp_max.Tensor_out<Tensor
clamp_max_<
clamp_max_.Tensor<Tensor
clamp_min(Tensor self, Scalar min) -> Tensor
clamp_min.Tensor(Tensor self, Tensor min) -> Tensor
clamp_min.out<
clamp_min.Tensor_out<Tensor
clamp_min_<
clamp_min_.Tensor<Tensor
clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor
clone.out<
coalesce(Tensor(a) self) -> Tensor(a)
col2im(Tensor self, SymInt[2] output_size, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> Tensor
col2im.out<
col_indices(Tensor(a) self) -> Tensor(a)
column_stack(Tensor[] tensors) -> Tensor
column_stack.out<
combinations(Tensor self, int r=2, bool with_replacement=False) -> Tensor
complex(Tensor real, Tensor imag) -> Tensor
complex.out<
conj(Tensor(a) self) -> Tensor(a)
conj_physical(Tensor self) -> Tensor
conj_physical.out<
conj_physical_<
constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor
constant_pad_nd.out<
conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], SymInt[1] padding=[0], SymInt[1] dilation=[1], SymInt groups=1) -> Tensor
conv1d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], str padding="valid", SymInt[1] dilation=[1], SymInt groups=1) -> Tensor
conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0], SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor
conv2d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], str padding="valid", SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor
conv3d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], SymInt[3] padding=[0, 0, 0], SymInt[3] dilation=[1, 1, 1], SymInt groups=1) -> Tensor
conv3d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], str padding="valid", SymInt[3] dilation=[1, 1, 1], SymInt groups=1) -> Tensor
conv_tbc(Tensor self, Tensor weight, Tensor bias, int pad=0) -> Tensor
conv_tbc.out<
conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], SymInt[1] padding=[0], SymInt[1] output_padding=[0], SymInt groups=1, SymInt[1] dilation=[1]) -> Tensor
conv_transpose2d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0], SymInt[2] output_padding=[0, 0], SymInt groups=1, SymInt[2] dilation=[1, 1]) -> Tensor
conv_transpose3d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], SymInt[3] padding=[0, 0, 0], SymInt[3] output_padding=[0, 0, 0], SymInt groups=1, SymInt[3] dilation=[1, 1, 1]) -> Tensor
convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor
convolution.out<
copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor
copy.out<
copy_<
copysign.Tensor(Tensor self, Tensor other) -> Tensor
copysign.Scalar(Tensor self, Scalar other) -> Tensor
copysign.out<Tensor
copysign.Scalar_out<Scalar
copysign_.Tensor<Tensor
copysign_.Scalar<Scalar
corrcoef(Tensor self) -> Tensor
cos(Tensor self) -> Tensor
cos.out<
cos_<
cosh(Tensor self) -> Tensor
cosh.out<
cosh_<
cosine_embedding_loss(Tensor input1, Tensor input2, Tensor target, float margin=0., int reduction=1) -> Tensor
cosine_similarity(Tensor x1, Tensor x2, int dim=1, float eps=1e-08) -> Tensor
count_nonzero(Tensor self, int? dim=None) -> Tensor
count_nonzero.dim_IntList(Tensor self, int[] dim) -> Tensor
count_nonzero.dim_IntList_out<dim_IntList
count_nonzero.out<
cov(Tensor self, *, int correction=1, Tensor? fweights=None, Tensor? aweights=None) -> Tensor
cross(Tensor self, Tensor other, int? dim=None) -> Tensor
cross.out<
crow_indices(Tensor(a) self) -> Tensor(a)
ctc_loss.IntList(Tensor log_probs, Tensor targets, int[] input_lengths, int[] target_lengths, int blank=0, int reduction=1, bool zero_infinity=False) -> Tensor
ctc_loss.Tensor(Tensor log_probs, Tensor targets, Tensor input_lengths, Tensor target_lengths, int blank=0, int reduction=1, bool zero_infinity=False) -> Tensor
cummax(Tensor self, int dim) -> (Tensor values, Tensor indices)
cummax.out(Tensor self, int dim, *, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)
cummin(Tensor self, int dim) -> (Tensor values, Tensor indices)
cummin.out(Tensor self, int dim, *, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)
cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor
cumprod.out<
cumprod_<
cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor
cumsum.out<
cumsum_<
cumulative_trapezoid.x(Tensor y, Tensor x, *, int dim=-1) -> Tensor
cumulative_trapezoid.dx(Tensor y, *, Scalar dx=1, int dim=-1) -> Tensor
deg2rad(Tensor self) -> Tensor
deg2rad.out<
deg2rad_<
dense_dim(Tensor self) -> int
det(Tensor self) -> Tensor
detach(Tensor(a) self) -> Tensor(a)
detach_copy(Tensor self) -> Tensor
detach_copy.out<
diag(Tensor self, int diagonal=0) -> Tensor
diag.out<
diag_embed(Tensor self, int offset=0, int dim1=-2, int dim2=-1) -> Tensor
diag_embed.out<
diagflat(Tensor self, int offset=0) -> Tensor
diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)
diagonal_copy(Tensor self, int offset=0, int dim1=0, int dim2=1) -> Tensor
diagonal_copy.out<
diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, int dim2=1) -> Tensor
diagonal_scatter.out<
diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None) -> Tensor
diff.out<
digamma(Tensor self) -> Tensor
digamma.out<
digamma_<
dist(Tensor self, Tensor other, Scalar p=2) -> Tensor
dist.out<
div.Tensor(Tensor self, Tensor other) -> Tensor
div.Scalar(Tensor self, Scalar other) -> Tensor
div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor
div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> Tensor
div.out<Tensor
div.out_mode<Tensor_mode
div.Scalar_out<Scalar
div.Scalar_mode_out<Scalar_mode
div_.Tensor<Tensor
div_.Tensor_mode<Tensor_mode
div_.Scalar<Scalar
div_.Scalar_mode<Scalar_mode
dot(Tensor self, Tensor tensor) -> Tensor
dot.out<
dropout(Tensor input, float p, bool train) -> Tensor
dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)
dsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]
dsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]
dstack(Tensor[] tensors) -> Tensor
dstack.out<
einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor
elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor
elu.out<
embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, bool sparse=False) -> Tensor
embedding.out<
embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq=False, int mode=0, bool sparse=False, Tensor? per_sample_weights=None, bool include_last_offset=False) -> (Tensor, Tensor, Tensor, Tensor)
embedding_bag.padding_idx(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq, int mode, bool sparse, Tensor? per_sample_weights, bool include_last_offset, int? padding_idx) -> (Tensor, Tensor, Tensor, Tensor)
embedding_renorm_(Tensor(a!) self, Tensor indices, float max_norm, float norm_type) -> Tensor(a!)
empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
empty.out(SymInt[] size, *, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)
empty_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
empty_like.out(Tensor self, *, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)
empty_permuted(SymInt[] size, int[] physical_layout, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
empty_permuted.out(SymInt[] size, int[] physical_layout, *, Tensor(a!) out) -> Tensor(a!)
empty_strided(SymInt[] size, SymInt[] stride, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
empty_strided.out(SymInt[] size, SymInt[] stride, *, Tensor(a!) out) -> Tensor(a!)
eq.Tensor(Tensor self, Tensor other) -> Tensor
eq.Scalar(Tensor self, Scalar other) -> Tensor
eq.Scalar_out<Scalar
eq.Tensor_out<Tensor
eq_.Scalar<Scalar
eq_.Tensor<Tensor
equal(Tensor self, Tensor other) -> bool
erf(Tensor self) -> Tensor
erf.out<
erf_<
erfc(Tensor self) -> Tensor
erfc.out<
erfc_<
erfinv(Tensor self) -> Tensor
erfinv.out<
erfinv_<
exp(Tensor self) -> Tensor
exp.out<
exp2(Tensor self) -> Tensor
exp2.out<
exp2_<
exp_<
expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)
expand_as(Tensor(a) self, Tensor other) -> Tensor(a)
expand_copy(Tensor self, SymInt[] size, *, bool implicit=False) -> Tensor
expand_copy.out<
expm1(Tensor self) -> Tensor
expm1.out<
expm1_<
exponential_(Tensor(a!) self, float lambd=1., *, Generator? generator=None) -> Tensor(a!)
eye(SymInt n, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
eye.m(SymInt n, SymInt m, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
eye.out(SymInt n, *, Tensor(a!) out) -> Tensor(a!)
eye.m_out(SymInt n, SymInt m, *, Tensor(a!) out) -> Tensor(a!)
feature_alpha_dropout(Tensor input, float p, bool train) -> Tensor
feature_alpha_dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)
feature_dropout(Tensor input, float p, bool train) -> Tensor
feature_dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)
fft_fft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor
fft_fft.out<
fft_fft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None) -> Tensor
fft_fft2.out<
fft_fftfreq(int n, float d=1., *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
fft_fftfreq.out(int n, float d=1., *, Tensor(a!) out) -> Tensor(a!)
fft_fftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor
fft_fftn.out<
fft_fftshift(Tensor self, int[1]? dim=None) -> Tensor
fft_hfft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor
fft_hfft.out<
fft_hfft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None) -> Tensor
fft_hfft2.out<
fft_hfftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor
fft_hfftn.out<
fft_ifft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor
fft_ifft.out<
fft_ifft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None) -> Tensor
fft_ifft2.out<
fft_ifftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor
fft_ifftn.out<
fft_ifftshift(Tensor self, int[1]? dim=None) -> Tensor
fft_ihfft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor
fft_ihfft.out<
fft_ihfft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None) -> Tensor
fft_ihfft2.out<
fft_ihfftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor
fft_ihfftn.out<
fft_irfft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor
fft_irfft.out<
fft_irfft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None) -> Tensor
fft_irfft2.out<
fft_irfftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor
fft_irfftn.out<
fft_rfft(Tensor self, SymInt? n=None, int dim=-1, str? norm=None) -> Tensor
fft_rfft.out<
fft_rfft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2, -1], str? norm=None) -> Tensor
fft_rfft2.out<
fft_rfftfreq(int n, float d=1., *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
fft_rfftfreq.out(int n, float d=1., *, Tensor(a!) out) -> Tensor(a!)
fft_rfftn(Tensor self, SymInt[1]? s=None, int[1]? dim=None, str? norm=None) -> Tensor
fft_rfftn.out<
fill.Scalar(Tensor self, Scalar value) -> Tensor
fill.Scalar_out<Scalar
fill.Tensor(Tensor self, Tensor value) -> Tensor
fill.Tensor_out<Tensor
fill_.Scalar<Scalar
fill_.Tensor<Tensor
fill_diagonal_(Tensor(a!) self, Scalar fill_value, bool wrap=False) -> Tensor(a!)
flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)
flip(Tensor self, int[] dims) -> Tensor
flip.out<
fliplr(Tensor self) -> Tensor
flipud(Tensor self) -> Tensor
float_power.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor
float_power.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor
float_power.Scalar(Scalar self, Tensor exponent) -> Tensor
float_power.Tensor_Tensor_out<Tensor_Tensor
float_power.Scalar_out<Scalar
float_power.Tensor_Scalar_out<Tensor_Scalar
float_power_.Tensor(Tensor(a!) self, Tensor exponent) -> Tensor(a!)
float_power_.Scalar(Tensor(a!) self, Scalar exponent) -> Tensor(a!)
floor(Tensor self) -> Tensor
floor.out<
floor_<
floor_divide(Tensor self, Tensor other) -> Tensor
floor_divide.Scalar(Tensor self, Scalar other) -> Tensor
floor_divide.out<
floor_divide.Scalar_out<Scalar
floor_divide_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)
floor_divide_.Scalar<Scalar
fmax(Tensor self, Tensor other) -> Tensor
fmax.out<
fmin(Tensor self, Tensor other) -> Tensor
fmin.out<
fmod.Tensor(Tensor self, Tensor other) -> Tensor
fmod.Scalar(Tensor self, Scalar other) -> Tensor
fmod.Tensor_out<Tensor
fmod.Scalar_out<Scalar
fmod_.Tensor<Tensor
fmod_.Scalar<Scalar
frac(Tensor self) -> Tensor
frac.out<
frac_<
fractional_max_pool2d(Tensor self, int[2] kernel_size, int[2] output_size, Tensor random_samples) -> (Tensor, Tensor)
fractional_max_pool2d.output(Tensor self, int[2] kernel_size, int[2] output_size, Tensor random_samples, *, Tensor(a!) output, Tensor(b!) indices) -> (Tensor(a!), Tensor(b!))
fractional_max_pool3d(Tensor self, int[3] kernel_size, int[3] output_size, Tensor random_samples) -> (Tensor, Tensor)
fractional_max_pool3d.output(Tensor self, int[3] kernel_size, int[3] output_size, Tensor random_samples, *, Tensor(a!) output, Tensor(b!) indices) -> (Tensor(a!), Tensor(b!))
frexp.Tensor(Tensor self) -> (Tensor mantissa, Tensor exponent)
frexp.Tensor_out(Tensor self, *, Tensor(a!) mantissa, Tensor(b!) exponent) -> (Tensor(a!) mantissa, Tensor(b!) exponent)
frobenius_norm.dim(Tensor self, int[1] dim, bool keepdim=False) -> Tensor
frobenius_norm.out<dim
from_file(str filename, bool? shared=None, int? size=0, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
from_file.out(str filename, bool? shared=None, int? size=0, *, Tensor(a!) out) -> Tensor(a!)
full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
full.out(SymInt[] size, Scalar fill_value, *, Tensor(a!) out) -> Tensor(a!)
full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
full_like.out(Tensor self, Scalar fill_value, *, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)
gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor
gather.out<
gcd(Tensor self, Tensor other) -> Tensor
gcd.out<
gcd_<
ge.Tensor(Tensor self, Tensor other) -> Tensor
ge.Scalar(Tensor self, Scalar other) -> Tensor
ge.Scalar_out<Scalar
ge.Tensor_out<Tensor
ge_.Scalar<Scalar
ge_.Tensor<Tensor
gelu(Tensor self, *, str approximate="none") -> Tensor
gelu.out<
geometric_(Tensor(a!) self, float p, *, Generator? generator=None) -> Tensor(a!)
geqrf(Tensor self) -> (Tensor a, Tensor tau)
geqrf.a(Tensor self, *, Tensor(a!) a, Tensor(b!) tau) -> (Tensor(a!) a, Tensor(b!) tau)
glu(Tensor self, int dim=-1) -> Tensor
glu.out<
gradient.scalarint(Tensor self, *, Scalar? spacing=None, int? dim=None, int edge_order=1) -> Tensor[]
gradient.scalararray(Tensor self, *, Scalar spacing, int[] dim, int edge_order=1) -> Tensor[]
gradient.array(Tensor self, *, int[] dim, int edge_order=1) -> Tensor[]
gradient.scalarrayint(Tensor self, *, Scalar[] spacing, int? dim=None, int edge_order=1) -> Tensor[]
gradient.scalarrayarray(Tensor self, *, Scalar[] spacing, int[] dim, int edge_order=1) -> Tensor[]
gradient.tensorarrayint(Tensor self, *, Tensor[] spacing, int? dim=None, int edge_order=1) -> Tensor[]
gradient.tensorarray(Tensor self, *, Tensor[] spacing, int[] dim, int edge_order=1) -> Tensor[]
grid_sampler(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners) -> Tensor
grid_sampler_2d(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners) -> Tensor
grid_sampler_2d.out<
grid_sampler_3d(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, bool align_corners) -> Tensor
grid_sampler_3d.out<
group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1.0000000000000001e-05, bool cudnn_enabled=True) -> Tensor
gru.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)
gru.data(Tensor data, Tensor batch_sizes, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional) -> (Tensor, Tensor)
gru_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None) -> Tensor
gt.Tensor(Tensor self, Tensor other) -> Tensor
gt.Scalar(Tensor self, Scalar other) -> Tensor
gt.Scalar_out<Scalar
gt.Tensor_out<Tensor
gt_.Scalar<Scalar
gt_.Tensor<Tensor
hamming_window(int window_length, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
hamming_window.periodic(int window_length, bool periodic, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
hamming_window.periodic_alpha(int window_length, bool periodic, float alpha, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
hamming_window.periodic_alpha_beta(int window_length, bool periodic, float alpha, float beta, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
hamming_window.out(int window_length, *, Tensor(a!) out) -> Tensor(a!)
hamming_window.periodic_out(int window_length, bool periodic, *, Tensor(a!) out) -> Tensor(a!)
hamming_window.periodic_alpha_out(int window_length, bool periodic, float alpha, *, Tensor(a!) out) -> Tensor(a!)
hamming_window.periodic_alpha_beta_out(int window_length, bool periodic, float alpha, float beta, *, Tensor(a!) out) -> Tensor(a!)
hann_window(int window_length, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
hann_window.periodic(int window_length, bool periodic, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
hann_window.out(int window_length, *, Tensor(a!) out) -> Tensor(a!)
hann_window.periodic_out(int window_length, bool periodic, *, Tensor(a!) out) -> Tensor(a!)
hardshrink(Tensor self, Scalar lambd=0.5) -> Tensor
hardshrink.out<
hardsigmoid(Tensor self) -> Tensor
hardsigmoid.out<
hardswish(Tensor self) -> Tensor
hardswish.out<
hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor
hardtanh.out<
hash_tensor(Tensor self, int[1] dim=[], *, bool keepdim=False, int mode=0) -> Tensor
hash_tensor.out<
heaviside(Tensor self, Tensor values) -> Tensor
heaviside.out<
heaviside_<
hinge_embedding_loss(Tensor self, Tensor target, float margin=1., int reduction=1) -> Tensor
histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> Tensor
histc.out<
histogram.bins_tensor(Tensor self, Tensor bins, *, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor bin_edges)
histogram.bins_tensor_out(Tensor self, Tensor bins, *, Tensor? weight=None, bool density=False, Tensor(a!) hist, Tensor(b!) bin_edges) -> (Tensor(a!) hist, Tensor(b!) bin_edges)
histogram.bin_ct(Tensor self, int bins=100, *, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor bin_edges)
histogram.bin_ct_out(Tensor self, int bins=100, *, float[]? range=None, Tensor? weight=None, bool density=False, Tensor(a!) hist, Tensor(b!) bin_edges) -> (Tensor(a!) hist, Tensor(b!) bin_edges)
histogramdd(Tensor self, int[] bins, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor[] bin_edges)
histogramdd.int_bins(Tensor self, int bins, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor[] bin_edges)
histogramdd.TensorList_bins(Tensor self, Tensor[] bins, float[]? range=None, Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor[] bin_edges)
hsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]
hsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]
hstack(Tensor[] tensors) -> Tensor
hstack.out<
huber_loss(Tensor self, Tensor target, int reduction=1, float delta=1.) -> Tensor
huber_loss.out<
hypot(Tensor self, Tensor other) -> Tensor
hypot.out<
hypot_<
i0(Tensor self) -> Tensor
i0.out<
i0_<
igamma(Tensor self, Tensor other) -> Tensor
igamma.out<
igamma_<
igammac(Tensor self, Tensor other) -> Tensor
igammac.out<
igammac_<
im2col(Tensor self, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> Tensor
im2col.out<
imag(Tensor(a) self) -> Tensor(a)
index.Tensor(Tensor self, Tensor?[] indices) -> Tensor
index.Tensor_out<Tensor
index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor
index_add.out<
index_add_<
index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor
index_copy.out<
index_copy_<
index_fill.int_Tensor(Tensor self, int dim, Tensor index, Tensor value) -> Tensor
index_fill.int_Scalar(Tensor self, int dim, Tensor index, Scalar value) -> Tensor
index_fill.int_Scalar_out<int_Scalar
index_fill.int_Tensor_out<int_Tensor
index_fill_.int_Tensor<int_Tensor
index_fill_.int_Scalar<int_Scalar
index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor
index_put.out<
index_put_<
index_reduce(Tensor self, int dim, Tensor index, Tensor source, str reduce, *, bool include_self=True) -> Tensor
index_reduce.out<
index_reduce_<
index_select(Tensor self, int dim, Tensor index) -> Tensor
index_select.out<
indices(Tensor(a) self) -> Tensor(a)
inner(Tensor self, Tensor other) -> Tensor
inner.out<
instance_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool use_input_stats, float momentum, float eps, bool cudnn_enabled) -> Tensor
inverse(Tensor self) -> Tensor
inverse.out<
is_coalesced(Tensor self) -> bool
is_conj(Tensor self) -> bool
is_distributed(Tensor self) -> bool
is_inference(Tensor self) -> bool
is_neg(Tensor self) -> bool
is_nonzero(Tensor self) -> bool
is_same_size(Tensor self, Tensor other) -> bool
is_set_to(Tensor self, Tensor tensor) -> bool
isclose(Tensor self, Tensor other, float rtol=1.0000000000000001e-05, float atol=1e-08, bool equal_nan=False) -> Tensor
isfinite(Tensor self) -> Tensor
isin.Tensor_Tensor(Tensor elements, Tensor test_elements, *, bool assume_unique=False, bool invert=False) -> Tensor
isin.Tensor_Tensor_out<Tensor_Tensor
isin.Tensor_Scalar(Tensor elements, Scalar test_element, *, bool assume_unique=False, bool invert=False) -> Tensor
isin.Tensor_Scalar_out<Tensor_Scalar
isin.Scalar_Tensor(Scalar element, Tensor test_elements, *, bool assume_unique=False, bool invert=False) -> Tensor
isin.Scalar_Tensor_out<Scalar_Tensor
isinf(Tensor self) -> Tensor
isinf.out<
isnan(Tensor self) -> Tensor
isnan.out<
isneginf(Tensor self) -> Tensor
isneginf.out<
isposinf(Tensor self) -> Tensor
isposinf.out<
isreal(Tensor self) -> Tensor
istft(Tensor self, int n_fft, int? hop_length=None, int? win_length=None, Tensor? window=None, bool center=True, bool normalized=False, bool? onesided=None, int? length=None, bool return_complex=False) -> Tensor
kaiser_window(int window_length, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
kaiser_window.periodic(int window_length, bool periodic, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
kaiser_window.beta(int window_length, bool periodic, float beta, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
kaiser_window.out(int window_length, *, Tensor(a!) out) -> Tensor(a!)
kaiser_window.periodic_out(int window_length, bool periodic, *, Tensor(a!) out) -> Tensor(a!)
kaiser_window.beta_out(int window_length, bool periodic, float beta, *, Tensor(a!) out) -> Tensor(a!)
kl_div(Tensor self, Tensor target, int reduction=1, *, bool log_target=False) -> Tensor
kron(Tensor self, Tensor other) -> Tensor
kron.out<
kthvalue(Tensor self, SymInt k, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)
kthvalue.values(Tensor self, SymInt k, int dim=-1, bool keepdim=False, *, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)
l1_loss(Tensor self, Tensor target, int reduction=1) -> Tensor
layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1.0000000000000001e-05, bool cudnn_enable=True) -> Tensor
lcm(Tensor self, Tensor other) -> Tensor
lcm.out<
lcm_<
ldexp.Tensor(Tensor self, Tensor other) -> Tensor
ldexp.out<Tensor
ldexp_(Tensor(a!) self, Tensor other) -> Tensor(a!)
le.Tensor(Tensor self, Tensor other) -> Tensor
le.Scalar(Tensor self, Scalar other) -> Tensor
le.Scalar_out<Scalar
le.Tensor_out<Tensor
le_.Scalar<Scalar
le_.Tensor<Tensor
leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor
leaky_relu.out<
lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor
lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor
lerp.Scalar_out<Scalar
lerp.Tensor_out<Tensor
lerp_.Scalar<Scalar
lerp_.Tensor<Tensor
lgamma(Tensor self) -> Tensor
lgamma.out<
lgamma_<
lift_fresh(Tensor(a) self) -> Tensor(a)
lift_fresh_copy(Tensor self) -> Tensor
lift_fresh_copy.out<
linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor
linear.out<
linspace.Tensor_Tensor(Tensor start, Tensor end, int steps, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
linspace.Tensor_Scalar(Tensor start, Scalar end, int steps, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
linspace.Scalar_Tensor(Scalar start, Tensor end, int steps, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
linspace.out(Scalar start, Scalar end, int steps, *, Tensor(a!) out) -> Tensor(a!)
linspace.Tensor_Tensor_out(Tensor start, Tensor end, int steps, *, Tensor(a!) out) -> Tensor(a!)
linspace.Tensor_Scalar_out(Tensor start, Scalar end, int steps, *, Tensor(a!) out) -> Tensor(a!)
linspace.Scalar_Tensor_out(Scalar start, Tensor end, int steps, *, Tensor(a!) out) -> Tensor(a!)
log(Tensor self) -> Tensor
log.out<
log10(Tensor self) -> Tensor
log10.out<
log10_<
log1p(Tensor self) -> Tensor
log1p.out<
log1p_<
log2(Tensor self) -> Tensor
log2.out<
log2_<
log_<
log_normal_(Tensor(a!) self, float mean=1., float std=2., *, Generator? generator=None) -> Tensor(a!)
log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor
log_softmax.int_out<int
logaddexp(Tensor self, Tensor other) -> Tensor
logaddexp.out<
logaddexp2(Tensor self, Tensor other) -> Tensor
logaddexp2.out<
logcumsumexp(Tensor self, int dim) -> Tensor
logcumsumexp.out<
logdet(Tensor self) -> Tensor
logical_and(Tensor self, Tensor other) -> Tensor
logical_and.out<
logical_and_<
logical_not(Tensor self) -> Tensor
logical_not.out<
logical_not_<
logical_or(Tensor self, Tensor other) -> Tensor
logical_or.out<
logical_or_<
logical_xor(Tensor self, Tensor other) -> Tensor
logical_xor.out<
logical_xor_<
logit(Tensor self, float? eps=None) -> Tensor
logit.out<
logit_<
logspace.Tensor_Tensor(Tensor start, Tensor end, int steps, float base=10., *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
logspace.Tensor_Scalar(Tensor start, Scalar end, int steps, float base=10., *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
logspace.Scalar_Tensor(Scalar start, Tensor end, int steps, float base=10., *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
logspace(Scalar start, Scalar end, int steps, float base=10., *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
logspace.out(Scalar start, Scalar end, int steps, float base=10., *, Tensor(a!) out) -> Tensor(a!)
logspace.Tensor_Tensor_out(Tensor start, Tensor end, int steps, float base=10., *, Tensor(a!) out) -> Tensor(a!)
logspace.Tensor_Scalar_out(Tensor start, Scalar end, int steps, float base=10., *, Tensor(a!) out) -> Tensor(a!)
logspace.Scalar_Tensor_out(Scalar start, Tensor end, int steps, float base=10., *, Tensor(a!) out) -> Tensor(a!)
logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor
logsumexp.out<
lstm.input(Tensor input, Tensor[] hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor, Tensor)
lstm.data(Tensor data, Tensor batch_sizes, Tensor[] hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional) -> (Tensor, Tensor, Tensor)
lstm_cell(Tensor input, Tensor[] hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None) -> (Tensor, Tensor)
lt.Tensor(Tensor self, Tensor other) -> Tensor
lt.Scalar(Tensor self, Scalar other) -> Tensor
lt.Scalar_out<Scalar
lt.Tensor_out<Tensor
lt_.Scalar<Scalar
lt_.Tensor<Tensor
lu_solve(Tensor self, Tensor LU_data, Tensor LU_pivots) -> Tensor
lu_solve.out<
lu_unpack(Tensor LU_data, Tensor LU_pivots, bool unpack_data=True, bool unpack_pivots=True) -> (Tensor P, Tensor L, Tensor U)
lu_unpack.out(Tensor LU_data, Tensor LU_pivots, bool unpack_data=True, bool unpack_pivots=True, *, Tensor(a!) P, Tensor(b!) L, Tensor(c!) U) -> (Tensor(a!) P, Tensor(b!) L, Tensor(c!) U)
mH(Tensor(a) self) -> Tensor(a)
mT(Tensor(a) self) -> Tensor(a)
margin_ranking_loss(Tensor input1, Tensor input2, Tensor target, float margin=0., int reduction=1) -> Tensor
masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor
masked_fill.Scalar_out<Scalar
masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor
masked_fill.Tensor_out<Tensor
masked_fill_.Scalar<Scalar
masked_fill_.Tensor<Tensor
masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor
masked_scatter.out<
masked_scatter_<
masked_select(Tensor self, Tensor mask) -> Tensor
masked_select.out<
matmul(Tensor self, Tensor other) -> Tensor
matmul.out<
matrix_exp(Tensor self) -> Tensor
matrix_power(Tensor self, int n) -> Tensor
matrix_power.out<
max.other(Tensor self, Tensor other) -> Tensor
max(Tensor self) -> Tensor
max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) max_values) -> (Tensor(a!) values, Tensor(b!) indices)
max.unary_out<
max.out<other
max_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], int[1] dilation=[1], bool ceil_mode=False) -> Tensor
max_pool1d_with_indices(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], int[1] dilation=[1], bool ceil_mode=False) -> (Tensor, Tensor)
max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor
max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)
max_pool2d_with_indices.out(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False, *, Tensor(a!) out, Tensor(b!) indices) -> (Tensor(a!), Tensor(b!))
max_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, int[3] dilation=1, bool ceil_mode=False) -> Tensor
max_pool3d_with_indices(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, int[3] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)
max_pool3d_with_indices.out(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, int[3] dilation=1, bool ceil_mode=False, *, Tensor(a!) out, Tensor(b!) indices) -> (Tensor(a!), Tensor(b!))
max_unpool2d(Tensor self, Tensor indices, SymInt[2] output_size) -> Tensor
max_unpool2d.out<
max_unpool3d(Tensor self, Tensor indices, SymInt[3] output_size, int[3] stride, int[3] padding) -> Tensor
max_unpool3d.out<
maximum(Tensor self, Tensor other) -> Tensor
maximum.out<
mean(Tensor self, *, ScalarType? dtype=None) -> Tensor
mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
mean.out<dim
mean.dtype_out<
median(Tensor self) -> Tensor
median.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
median.dim_values(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)
median.out<
meshgrid(Tensor[] tensors) -> Tensor[]
meshgrid.indexing(Tensor[] tensors, *, str indexing) -> Tensor[]
min.other(Tensor self, Tensor other) -> Tensor
min(Tensor self) -> Tensor
min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
min.dim_min(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) min, Tensor(b!) min_indices) -> (Tensor(a!) values, Tensor(b!) indices)
min.unary_out<
min.out<other
minimum(Tensor self, Tensor other) -> Tensor
minimum.out<
mish(Tensor self) -> Tensor
mish.out<
mm(Tensor self, Tensor mat2) -> Tensor
mm.out<
mm.dtype_out<dtype
mm.dtype(Tensor self, Tensor mat2, ScalarType out_dtype) -> Tensor
mode(Tensor self, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)
mode.values(Tensor self, int dim=-1, bool keepdim=False, *, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)
movedim.int(Tensor(a) self, int source, int destination) -> Tensor(a)
movedim.intlist(Tensor(a) self, int[] source, int[] destination) -> Tensor(a)
mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor
mse_loss.out<
msort(Tensor self) -> Tensor
msort.out<
mul.Tensor(Tensor self, Tensor other) -> Tensor
mul.Scalar(Tensor self, Scalar other) -> Tensor
mul.out<Tensor
mul.Scalar_out<Scalar
mul_.Tensor<Tensor
mul_.Scalar<Scalar
multi_margin_loss(Tensor self, Tensor target, Scalar p=1, Scalar margin=1, Tensor? weight=None, int reduction=1) -> Tensor
multi_margin_loss.out<
multilabel_margin_loss(Tensor self, Tensor target, int reduction=1) -> Tensor
multilabel_margin_loss.out<
multinomial(Tensor self, SymInt num_samples, bool replacement=False, *, Generator? generator=None) -> Tensor
multinomial.out<
mv(Tensor self, Tensor vec) -> Tensor
mv.out<
mvlgamma(Tensor self, int p) -> Tensor
mvlgamma.out<
mvlgamma_<
nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor
nan_to_num.out<
nan_to_num_<
nanmean(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
nanmean.out<
nanmedian(Tensor self) -> Tensor
nanmedian.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
nanmedian.dim_values(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)
nanmedian.out<
nanquantile(Tensor self, Tensor q, int? dim=None, bool keepdim=False, *, str interpolation="linear") -> Tensor
nanquantile.scalar(Tensor self, float q, int? dim=None, bool keepdim=False, *, str interpolation="linear") -> Tensor
nanquantile.out<
nanquantile.scalar_out<scalar
nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
nansum.out<
narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)
narrow.Tensor(Tensor(a) self, int dim, Tensor start, SymInt length) -> Tensor(a)
narrow_copy(Tensor self, int dim, SymInt start, SymInt length) -> Tensor
narrow_copy.out<
native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)
native_batch_norm.out(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps, *, Tensor(a!) out, Tensor(b!) save_mean, Tensor(c!) save_invstd) -> (Tensor(a!), Tensor(b!), Tensor(c!))
native_channel_shuffle(Tensor self, SymInt groups) -> Tensor
native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)
native_dropout.out(Tensor input, float p, bool? train, *, Tensor(a!) out0, Tensor(b!) out1) -> (Tensor(a!), Tensor(b!))
native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, SymInt HxW, int group, float eps) -> (Tensor, Tensor, Tensor)
native_group_norm.out(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, SymInt HxW, int group, float eps, *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2) -> (Tensor(a!), Tensor(b!), Tensor(c!))
native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)
native_layer_norm.out(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps, *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2) -> (Tensor(a!), Tensor(b!), Tensor(c!))
ne.Tensor(Tensor self, Tensor other) -> Tensor
ne.Scalar(Tensor self, Scalar other) -> Tensor
ne.Scalar_out<Scalar
ne.Tensor_out<Tensor
ne_.Scalar<Scalar
ne_.Tensor<Tensor
neg(Tensor self) -> Tensor
neg.out<
neg_<
new_empty(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
new_empty.out(Tensor self, SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)
new_empty_strided(Tensor self, SymInt[] size, SymInt[] stride, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
new_empty_strided.out(Tensor self, SymInt[] size, SymInt[] stride, *, Tensor(a!) out) -> Tensor(a!)
new_full(Tensor self, SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
new_full.out(Tensor self, SymInt[] size, Scalar fill_value, *, Tensor(a!) out) -> Tensor(a!)
new_ones(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
new_ones.out(Tensor self, SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)
new_zeros(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
new_zeros.out(Tensor self, SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)
nextafter(Tensor self, Tensor other) -> Tensor
nextafter.out<
nextafter_<
nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, SymInt ignore_index=-100) -> Tensor
nll_loss.out<
nonzero(Tensor self) -> Tensor
nonzero.out<
nonzero_static(Tensor self, *, SymInt size, int fill_value=-1) -> Tensor
nonzero_static.out<
norm.Scalar(Tensor self, Scalar p=2) -> Tensor
norm.ScalarOpt_dim(Tensor self, Scalar? p, int[1] dim, bool keepdim=False) -> Tensor
norm.ScalarOpt_dim_dtype(Tensor self, Scalar? p, int[1] dim, bool keepdim, *, ScalarType dtype) -> Tensor
norm.dtype_out<ScalarOpt_dim_dtype
norm.out<ScalarOpt_dim
norm.ScalarOpt_dtype(Tensor self, Scalar? p, *, ScalarType dtype) -> Tensor
norm.ScalarOpt_dtype_out<ScalarOpt_dtype
norm.Scalar_out<Scalar
norm_except_dim(Tensor v, int pow=2, int dim=0) -> Tensor
normal.Tensor_float(Tensor mean, float std=1., *, Generator? generator=None) -> Tensor
normal.Tensor_float_out<Tensor_float
normal.float_Tensor_out<float_Tensor
normal.float_Tensor(float mean, Tensor std, *, Generator? generator=None) -> Tensor
normal.Tensor_Tensor(Tensor mean, Tensor std, *, Generator? generator=None) -> Tensor
normal.Tensor_Tensor_out<Tensor_Tensor
normal.float_float(float mean, float std, SymInt[] size, *, Generator? generator=None, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
normal.float_float_out(float mean, float std, SymInt[] size, *, Generator? generator=None, Tensor(a!) out) -> Tensor(a!)
normal.out(Tensor self, float mean=0., float std=1., *, Generator? generator=None, Tensor(a!) out) -> Tensor(a!)
normal_(Tensor(a!) self, float mean=0., float std=1., *, Generator? generator=None) -> Tensor(a!)
nuclear_norm(Tensor self, bool keepdim=False) -> Tensor
nuclear_norm.dim(Tensor self, int[2] dim, bool keepdim=False) -> Tensor
nuclear_norm.out<
nuclear_norm.dim_out<dim
one_hot(Tensor self, int num_classes=-1) -> Tensor
ones(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
ones.out(SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)
ones_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
ones_like.out(Tensor self, *, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)
orgqr(Tensor self, Tensor input2) -> Tensor
orgqr.out<
ormqr(Tensor self, Tensor input2, Tensor input3, bool left=True, bool transpose=False) -> Tensor
ormqr.out<
outer(Tensor self, Tensor vec2) -> Tensor
outer.out<
pad(Tensor self, SymInt[] pad, str mode="constant", float? value=None) -> Tensor
pairwise_distance(Tensor x1, Tensor x2, float p=2., float eps=9.9999999999999995e-07, bool keepdim=False) -> Tensor
pdist(Tensor self, float p=2.) -> Tensor
permute(Tensor(a) self, int[] dims) -> Tensor(a)
permute_copy(Tensor self, int[] dims) -> Tensor
permute_copy.out<
pinverse(Tensor self, float rcond=1.0000000000000001e-15) -> Tensor
pixel_shuffle(Tensor self, int upscale_factor) -> Tensor
pixel_shuffle.out<
pixel_unshuffle(Tensor self, int downscale_factor) -> Tensor
pixel_unshuffle.out<
poisson(Tensor self, Generator? generator=None) -> Tensor
poisson.out<
poisson_nll_loss(Tensor input, Tensor target, bool log_input, bool full, float eps, int reduction) -> Tensor
polar(Tensor abs, Tensor angle) -> Tensor
polar.out<
polygamma(int n, Tensor self) -> Tensor
polygamma.out<
polygamma_(Tensor(a!) self, int n) -> Tensor(a!)
positive(Tensor(a) self) -> Tensor(a)
pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor
pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor
pow.Scalar(Scalar self, Tensor exponent) -> Tensor
pow.Tensor_Tensor_out<Tensor_Tensor
pow.Scalar_out<Scalar
pow.Tensor_Scalar_out<Tensor_Scalar
pow_.Scalar(Tensor(a!) self, Scalar exponent) -> Tensor(a!)
pow_.Tensor(Tensor(a!) self, Tensor exponent) -> Tensor(a!)
prelu(Tensor self, Tensor weight) -> Tensor
prod(Tensor self, *, ScalarType? dtype=None) -> Tensor
prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
prod.int_out<dim_int
prod.out<
put(Tensor self, Tensor index, Tensor source, bool accumulate=False) -> Tensor
put.out<
put_<
qr(Tensor self, bool some=True) -> (Tensor Q, Tensor R)
qr.Q(Tensor self, bool some=True, *, Tensor(a!) Q, Tensor(b!) R) -> (Tensor(a!) Q, Tensor(b!) R)
quantile(Tensor self, Tensor q, int? dim=None, bool keepdim=False, *, str interpolation="linear") -> Tensor
quantile.scalar(Tensor self, float q, int? dim=None, bool keepdim=False, *, str interpolation="linear") -> Tensor
quantile.out<
quantile.scalar_out<scalar
rad2deg(Tensor self) -> Tensor
rad2deg.out<
rad2deg_<
rand(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
rand.generator(SymInt[] size, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
rand.out(SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)
rand.generator_out(SymInt[] size, *, Generator? generator, Tensor(a!) out) -> Tensor(a!)
rand_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
rand_like.out(Tensor self, *, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)
randint(SymInt high, SymInt[] size, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
randint.generator(SymInt high, SymInt[] size, *, Generator? generator, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
randint.low(SymInt low, SymInt high, SymInt[] size, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
randint.low_generator(SymInt low, SymInt high, SymInt[] size, *, Generator? generator, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
randint.out(SymInt high, SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)
randint.generator_out(SymInt high, SymInt[] size, *, Generator? generator, Tensor(a!) out) -> Tensor(a!)
randint.low_out(SymInt low, SymInt high, SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)
randint.low_generator_out(SymInt low, SymInt high, SymInt[] size, *, Generator? generator, Tensor(a!) out) -> Tensor(a!)
randint_like(Tensor self, SymInt high, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
randint_like.Tensor(Tensor self, Tensor high, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
randint_like.low_dtype(Tensor self, SymInt low, SymInt high, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
randint_like.out(Tensor self, SymInt high, *, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)
randint_like.Tensor_out(Tensor self, Tensor high, *, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)
randint_like.low_dtype_out(Tensor self, SymInt low, SymInt high, *, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)
randn(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
randn.generator(SymInt[] size, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
randn.out(SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)
randn.generator_out(SymInt[] size, *, Generator? generator, Tensor(a!) out) -> Tensor(a!)
randn_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
randn_like.out(Tensor self, *, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)
random_.from(Tensor(a!) self, int from, int? to, *, Generator? generator=None) -> Tensor(a!)
random_.to(Tensor(a!) self, int to, *, Generator? generator=None) -> Tensor(a!)
random_(Tensor(a!) self, *, Generator? generator=None) -> Tensor(a!)
randperm(SymInt n, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
randperm.generator(SymInt n, *, Generator? generator, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
randperm.out(SymInt n, *, Tensor(a!) out) -> Tensor(a!)
randperm.generator_out(SymInt n, *, Generator? generator, Tensor(a!) out) -> Tensor(a!)
range.step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
range(Scalar start, Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
range.out(Scalar start, Scalar end, Scalar step=1, *, Tensor(a!) out) -> Tensor(a!)
range.out_(Scalar start, Scalar end, *, Tensor(a!) out) -> Tensor(a!)
ravel(Tensor(a) self) -> Tensor(a)
real(Tensor(a) self) -> Tensor(a)
reciprocal(Tensor self) -> Tensor
reciprocal.out<
reciprocal_<
relu(Tensor self) -> Tensor
relu.out<
relu6(Tensor self) -> Tensor
relu_<
remainder.Tensor(Tensor self, Tensor other) -> Tensor
remainder.Scalar(Tensor self, Scalar other) -> Tensor
remainder.Scalar_Tensor(Scalar self, Tensor other) -> Tensor
remainder.Tensor_out<Tensor
remainder.Scalar_out<Scalar
remainder.Scalar_Tensor_out<Scalar_Tensor
remainder_.Tensor<Tensor
remainder_.Scalar<Scalar
renorm(Tensor self, Scalar p, int dim, Scalar maxnorm) -> Tensor
renorm.out<
renorm_<
repeat(Tensor self, SymInt[] repeats) -> Tensor
repeat.out<
repeat_interleave.Tensor(Tensor repeats, *, SymInt? output_size=None) -> Tensor
repeat_interleave.self_Tensor(Tensor self, Tensor repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor
repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor
repeat_interleave.Tensor_out<Tensor
reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)
reshape_as(Tensor(a) self, Tensor other) -> Tensor(a)
resize_(Tensor(a!) self, SymInt[] size, *, MemoryFormat? memory_format=None) -> Tensor(a!)
resize_as_(Tensor(a!) self, Tensor the_template, *, MemoryFormat? memory_format=None) -> Tensor(a!)
resize_as_sparse_(Tensor(a!) self, Tensor the_template) -> Tensor(a!)
resolve_conj(Tensor(a) self) -> Tensor(a)
resolve_neg(Tensor(a) self) -> Tensor(a)
rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor
rnn_relu.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)
rnn_relu.data(Tensor data, Tensor batch_sizes, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional) -> (Tensor, Tensor)
rnn_relu_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None) -> Tensor
rnn_tanh.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)
rnn_tanh.data(Tensor data, Tensor batch_sizes, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, bool train, bool bidirectional) -> (Tensor, Tensor)
rnn_tanh_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None) -> Tensor
roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor
roll.out<
rot90(Tensor self, int k=1, int[] dims=[0, 1]) -> Tensor
rot90.out<
round(Tensor self) -> Tensor
round.decimals(Tensor self, *, int decimals) -> Tensor
round.out<
round.decimals_out<decimals
round_<
round_.decimals<decimals
row_indices(Tensor(a) self) -> Tensor(a)
rrelu(Tensor self, Scalar lower=0.125, Scalar upper=0.33333333333333331, bool training=False, Generator? generator=None) -> Tensor
rrelu_<
rsqrt(Tensor self) -> Tensor
rsqrt.out<
rsqrt_<
rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
rsub.Tensor_out<Tensor
rsub.Scalar_out<Scalar
scalar_tensor(Scalar s, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
scalar_tensor.out(Scalar s, *, Tensor(a!) out) -> Tensor(a!)
scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0., bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor
scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor
scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor
scatter.reduce(Tensor self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor
scatter.value_reduce(Tensor self, int dim, Tensor index, Scalar value, *, str reduce) -> Tensor
scatter.src_out<src
scatter.value_out<value
scatter.reduce_out<reduce
scatter.value_reduce_out<value_reduce
scatter_.src<src
scatter_.value<value
scatter_.reduce<reduce
scatter_.value_reduce<value_reduce
scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor
scatter_add.out<
scatter_add_<
scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) -> Tensor
scatter_reduce.two_out<two
scatter_reduce_.two<two
searchsorted.Tensor(Tensor sorted_sequence, Tensor self, *, bool out_int32=False, bool right=False, str? side=None, Tensor? sorter=None) -> Tensor
searchsorted.Tensor_out<Tensor
searchsorted.Scalar(Tensor sorted_sequence, Scalar self, *, bool out_int32=False, bool right=False, str? side=None, Tensor? sorter=None) -> Tensor
searchsorted.Scalar_out<Scalar
segment_reduce(Tensor data, str reduce, *, Tensor? lengths=None, Tensor? indices=None, Tensor? offsets=None, int axis=0, bool unsafe=False, Scalar? initial=None) -> Tensor
segment_reduce.out<
select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)
select_copy.int(Tensor self, int dim, SymInt index) -> Tensor
select_copy.int_out<int
select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor
select_scatter.out<
selu(Tensor self) -> Tensor
selu_<
set_.source_Tensor(Tensor(a!) self, Tensor source) -> Tensor(a!)
set_(Tensor(a!) self) -> Tensor(a!)
set_.source_Tensor_storage_offset(Tensor(a!) self, Tensor source, SymInt storage_offset, SymInt[] size, SymInt[] stride=[]) -> Tensor(a!)
sgn(Tensor self) -> Tensor
sgn.out<
sgn_<
sigmoid(Tensor self) -> Tensor
sigmoid.out<
sigmoid_<
sign(Tensor self) -> Tensor
sign.out<
sign_<
signbit(Tensor self) -> Tensor
signbit.out<
silu(Tensor self) -> Tensor
silu.out<
sin(Tensor self) -> Tensor
sin.out<
sin_<
sinc(Tensor self) -> Tensor
sinc.out<
sinc_<
sinh(Tensor self) -> Tensor
sinh.out<
sinh_<
slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)
slice_copy.Tensor(Tensor self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor
slice_copy.Tensor_out<Tensor
slice_inverse(Tensor(a) self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)
slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor
slice_scatter.out<
slogdet(Tensor self) -> (Tensor sign, Tensor logabsdet)
slogdet.out(Tensor self, *, Tensor(a!) sign, Tensor(b!) logabsdet) -> (Tensor(a!) sign, Tensor(b!) logabsdet)
smm(Tensor self, Tensor mat2) -> Tensor
smooth_l1_loss(Tensor self, Tensor target, int reduction=1, float beta=1.) -> Tensor
smooth_l1_loss.out<
soft_margin_loss(Tensor self, Tensor target, int reduction=1) -> Tensor
soft_margin_loss.out<
softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor
softmax.int_out<int
softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor
softplus.out<
softshrink(Tensor self, Scalar lambd=0.5) -> Tensor
softshrink.out<
sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)
sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)
sort.values_stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)
sort.values(Tensor self, int dim=-1, bool descending=False, *, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)
sparse_dim(Tensor self) -> int
sparse_mask.out<
sparse_mask(Tensor self, Tensor mask) -> Tensor
sparse_resize_(Tensor(a!) self, int[] size, int sparse_dim, int dense_dim) -> Tensor(a!)
sparse_resize_and_clear_(Tensor(a!) self, int[] size, int sparse_dim, int dense_dim) -> Tensor(a!)
special_airy_ai(Tensor x) -> Tensor
special_airy_ai.out<
special_bessel_j0(Tensor self) -> Tensor
special_bessel_j0.out<
special_bessel_j1(Tensor self) -> Tensor
special_bessel_j1.out<
special_bessel_y0(Tensor self) -> Tensor
special_bessel_y0.out<
special_bessel_y1(Tensor self) -> Tensor
special_bessel_y1.out<
special_chebyshev_polynomial_t(Tensor x, Tensor n) -> Tensor
special_chebyshev_polynomial_t.out<
special_chebyshev_polynomial_t.x_scalar(Scalar x, Tensor n) -> Tensor
special_chebyshev_polynomial_t.x_scalar_out<x_scalar
special_chebyshev_polynomial_t.n_scalar(Tensor x, Scalar n) -> Tensor
special_chebyshev_polynomial_t.n_scalar_out<n_scalar
special_chebyshev_polynomial_u(Tensor x, Tensor n) -> Tensor
special_chebyshev_polynomial_u.out<
special_chebyshev_polynomial_u.x_scalar(Scalar x, Tensor n) -> Tensor
special_chebyshev_polynomial_u.x_scalar_out<x_scalar
special_chebyshev_polynomial_u.n_scalar(Tensor x, Scalar n) -> Tensor
special_chebyshev_polynomial_u.n_scalar_out<n_scalar
special_chebyshev_polynomial_v(Tensor x, Tensor n) -> Tensor
special_chebyshev_polynomial_v.out<
special_chebyshev_polynomial_v.x_scalar(Scalar x, Tensor n) -> Tensor
special_chebyshev_polynomial_v.x_scalar_out<x_scalar
special_chebyshev_polynomial_v.n_scalar(Tensor x, Scalar n) -> Tensor
special_chebyshev_polynomial_v.n_scalar_out<n_scalar
special_chebyshev_polynomial_w(Tensor x, Tensor n) -> Tensor
special_chebyshev_polynomial_w.out<
special_chebyshev_polynomial_w.x_scalar(Scalar x, Tensor n) -> Tensor
special_chebyshev_polynomial_w.x_scalar_out<x_scalar
special_chebyshev_polynomial_w.n_scalar(Tensor x, Scalar n) -> Tensor
special_chebyshev_polynomial_w.n_scalar_out<n_scalar
special_entr(Tensor self) -> Tensor
special_entr.out<
special_erfcx(Tensor self) -> Tensor
special_erfcx.out<
special_hermite_polynomial_h(Tensor x, Tensor n) -> Tensor
special_hermite_polynomial_h.out<
special_hermite_polynomial_h.x_scalar(Scalar x, Tensor n) -> Tensor
special_hermite_polynomial_h.x_scalar_out<x_scalar
special_hermite_polynomial_h.n_scalar(Tensor x, Scalar n) -> Tensor
special_hermite_polynomial_h.n_scalar_out<n_scalar
special_hermite_polynomial_he(Tensor x, Tensor n) -> Tensor
special_hermite_polynomial_he.out<
special_hermite_polynomial_he.x_scalar(Scalar x, Tensor n) -> Tensor
special_hermite_polynomial_he.x_scalar_out<x_scalar
special_hermite_polynomial_he.n_scalar(Tensor x, Scalar n) -> Tensor
special_hermite_polynomial_he.n_scalar_out<n_scalar
special_i0e(Tensor self) -> Tensor
special_i0e.out<
special_i1(Tensor self) -> Tensor
special_i1.out<
special_i1e(Tensor self) -> Tensor
special_i1e.out<
special_laguerre_polynomial_l(Tensor x, Tensor n) -> Tensor
special_laguerre_polynomial_l.out<
special_laguerre_polynomial_l.x_scalar(Scalar x, Tensor n) -> Tensor
special_laguerre_polynomial_l.x_scalar_out<x_scalar
special_laguerre_polynomial_l.n_scalar(Tensor x, Scalar n) -> Tensor
special_laguerre_polynomial_l.n_scalar_out<n_scalar
special_legendre_polynomial_p(Tensor x, Tensor n) -> Tensor
special_legendre_polynomial_p.out<
special_legendre_polynomial_p.x_scalar(Scalar x, Tensor n) -> Tensor
special_legendre_polynomial_p.x_scalar_out<x_scalar
special_legendre_polynomial_p.n_scalar(Tensor x, Scalar n) -> Tensor
special_legendre_polynomial_p.n_scalar_out<n_scalar
special_log_ndtr(Tensor self) -> Tensor
special_log_ndtr.out<
special_modified_bessel_i0(Tensor self) -> Tensor
special_modified_bessel_i0.out<
special_modified_bessel_i1(Tensor self) -> Tensor
special_modified_bessel_i1.out<
special_modified_bessel_k0(Tensor self) -> Tensor
special_modified_bessel_k0.out<
special_modified_bessel_k1(Tensor self) -> Tensor
special_modified_bessel_k1.out<
special_ndtr(Tensor self) -> Tensor
special_ndtr.out<
special_ndtri(Tensor self) -> Tensor
special_ndtri.out<
special_scaled_modified_bessel_k0(Tensor x) -> Tensor
special_scaled_modified_bessel_k0.out<
special_scaled_modified_bessel_k1(Tensor x) -> Tensor
special_scaled_modified_bessel_k1.out<
special_shifted_chebyshev_polynomial_t(Tensor x, Tensor n) -> Tensor
special_shifted_chebyshev_polynomial_t.out<
special_shifted_chebyshev_polynomial_t.x_scalar(Scalar x, Tensor n) -> Tensor
special_shifted_chebyshev_polynomial_t.x_scalar_out<x_scalar
special_shifted_chebyshev_polynomial_t.n_scalar(Tensor x, Scalar n) -> Tensor
special_shifted_chebyshev_polynomial_t.n_scalar_out<n_scalar
special_shifted_chebyshev_polynomial_u(Tensor x, Tensor n) -> Tensor
special_shifted_chebyshev_polynomial_u.out<
special_shifted_chebyshev_polynomial_u.x_scalar(Scalar x, Tensor n) -> Tensor
special_shifted_chebyshev_polynomial_u.x_scalar_out<x_scalar
special_shifted_chebyshev_polynomial_u.n_scalar(Tensor x, Scalar n) -> Tensor
special_shifted_chebyshev_polynomial_u.n_scalar_out<n_scalar
special_shifted_chebyshev_polynomial_v(Tensor x, Tensor n) -> Tensor
special_shifted_chebyshev_polynomial_v.out<
special_shifted_chebyshev_polynomial_v.x_scalar(Scalar x, Tensor n) -> Tensor
special_shifted_chebyshev_polynomial_v.x_scalar_out<x_scalar
special_shifted_chebyshev_polynomial_v.n_scalar(Tensor x, Scalar n) -> Tensor
special_shifted_chebyshev_polynomial_v.n_scalar_out<n_scalar
special_shifted_chebyshev_polynomial_w(Tensor x, Tensor n) -> Tensor
special_shifted_chebyshev_polynomial_w.out<
special_shifted_chebyshev_polynomial_w.x_scalar(Scalar x, Tensor n) -> Tensor
special_shifted_chebyshev_polynomial_w.x_scalar_out<x_scalar
special_shifted_chebyshev_polynomial_w.n_scalar(Tensor x, Scalar n) -> Tensor
special_shifted_chebyshev_polynomial_w.n_scalar_out<n_scalar
special_spherical_bessel_j0(Tensor x) -> Tensor
special_spherical_bessel_j0.out<
special_xlog1py(Tensor self, Tensor other) -> Tensor
special_xlog1py.other_scalar(Tensor self, Scalar other) -> Tensor
special_xlog1py.self_scalar(Scalar self, Tensor other) -> Tensor
special_xlog1py.out<
special_xlog1py.self_scalar_out<self_scalar
special_xlog1py.other_scalar_out<other_scalar
special_zeta(Tensor self, Tensor other) -> Tensor
special_zeta.other_scalar(Tensor self, Scalar other) -> Tensor
special_zeta.self_scalar(Scalar self, Tensor other) -> Tensor
special_zeta.out<
special_zeta.self_scalar_out<self_scalar
special_zeta.other_scalar_out<other_scalar
split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]
split.sizes(Tensor(a -> *) self, SymInt[] split_size, int dim=0) -> Tensor(a)[]
split_copy.Tensor(Tensor self, SymInt split_size, int dim=0) -> Tensor[]
split_copy.Tensor_out(Tensor self, SymInt split_size, int dim=0, *, Tensor(a!)[] out) -> ()
split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]
split_with_sizes_copy(Tensor self, SymInt[] split_sizes, int dim=0) -> Tensor[]
split_with_sizes_copy.out(Tensor self, SymInt[] split_sizes, int dim=0, *, Tensor(a!)[] out) -> ()
sqrt(Tensor self) -> Tensor
sqrt.out<
sqrt_<
square(Tensor self) -> Tensor
square.out<
square_<
squeeze(Tensor(a) self) -> Tensor(a)
squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)
squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)
squeeze_(Tensor(a!) self) -> Tensor(a!)
squeeze_.dim(Tensor(a!) self, int dim) -> Tensor(a!)
squeeze_.dims(Tensor(a!) self, int[] dim) -> Tensor(a!)
squeeze_copy(Tensor self) -> Tensor
squeeze_copy.dim(Tensor self, int dim) -> Tensor
squeeze_copy.dims(Tensor self, int[] dim) -> Tensor
squeeze_copy.out<
squeeze_copy.dim_out<dim
squeeze_copy.dims_out<dims
sspaddmm.out<
sspaddmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor
stack(Tensor[] tensors, int dim=0) -> Tensor
stack.out<
std(Tensor self, bool unbiased=True) -> Tensor
std.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor
std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor
std.correction_out<correction
std.out<dim
std_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)
std_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)
std_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)
std_mean.correction_out(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False, Tensor(a!) out0, Tensor(b!) out1) -> (Tensor(a!), Tensor(b!))
stft(Tensor self, int n_fft, int? hop_length=None, int? win_length=None, Tensor? window=None, bool normalized=False, bool? onesided=None, bool? return_complex=None, bool? align_to_window=None) -> Tensor
stft.center(Tensor self, int n_fft, int? hop_length=None, int? win_length=None, Tensor? window=None, bool center=True, str pad_mode="reflect", bool normalized=False, bool? onesided=None, bool? return_complex=None, bool? align_to_window=None) -> Tensor
sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor
sub.out<Tensor
sub.Scalar_out<Scalar
sub_.Tensor<Tensor
sub_.Scalar<Scalar
sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
sum(Tensor self, *, ScalarType? dtype=None) -> Tensor
sum.IntList_out<dim_IntList
sum.out<
sum_to_size(Tensor self, SymInt[] size) -> Tensor
svd(Tensor self, bool some=True, bool compute_uv=True) -> (Tensor U, Tensor S, Tensor V)
svd.U(Tensor self, bool some=True, bool compute_uv=True, *, Tensor(a!) U, Tensor(b!) S, Tensor(c!) V) -> (Tensor(a!) U, Tensor(b!) S, Tensor(c!) V)
swapaxes(Tensor(a) self, int axis0, int axis1) -> Tensor(a)
swapaxes_(Tensor(a!) self, int axis0, int axis1) -> Tensor(a!)
swapdims(Tensor(a) self, int dim0, int dim1) -> Tensor(a)
swapdims_(Tensor(a!) self, int dim0, int dim1) -> Tensor(a!)
t(Tensor(a) self) -> Tensor(a)
t_(Tensor(a!) self) -> Tensor(a!)
t_copy(Tensor self) -> Tensor
t_copy.out<
take(Tensor self, Tensor index) -> Tensor
take.out<
take_along_dim(Tensor self, Tensor indices, int? dim=None) -> Tensor
take_along_dim.out<
tan(Tensor self) -> Tensor
tan.out<
tan_<
tanh(Tensor self) -> Tensor
tanh.out<
tanh_<
tensor_split.sections(Tensor(a -> *) self, SymInt sections, int dim=0) -> Tensor(a)[]
tensor_split.indices(Tensor(a -> *) self, SymInt[] indices, int dim=0) -> Tensor(a)[]
tensor_split.tensor_indices_or_sections(Tensor(a -> *) self, Tensor tensor_indices_or_sections, int dim=0) -> Tensor(a)[]
tensordot(Tensor self, Tensor other, int[] dims_self, int[] dims_other) -> Tensor
tensordot.out<
threshold(Tensor self, Scalar threshold, Scalar value) -> Tensor
threshold.out<
threshold_<
threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor
threshold_backward.grad_input(Tensor grad_output, Tensor self, Scalar threshold, *, Tensor(a!) grad_input) -> Tensor(a!)
tile(Tensor self, SymInt[] dims) -> Tensor
to_dense(Tensor self, ScalarType? dtype=None, *, bool? masked_grad=None) -> Tensor
to_sparse.sparse_dim(Tensor self, int sparse_dim) -> Tensor
to_sparse(Tensor self, *, Layout? layout=None, int[2]? blocksize=None, int? dense_dim=None) -> Tensor
to_sparse_bsc(Tensor self, int[2] blocksize, int? dense_dim=None) -> Tensor
to_sparse_bsr(Tensor self, int[2] blocksize, int? dense_dim=None) -> Tensor
to_sparse_csc(Tensor self, int? dense_dim=None) -> Tensor
to_sparse_csr(Tensor self, int? dense_dim=None) -> Tensor
topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)
topk.values(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True, *, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)
trace(Tensor self) -> Tensor
trace.out<
transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)
transpose_(Tensor(a!) self, int dim0, int dim1) -> Tensor(a!)
transpose_copy.int(Tensor self, int dim0, int dim1) -> Tensor
transpose_copy.int_out<int
trapezoid.x(Tensor y, Tensor x, *, int dim=-1) -> Tensor
trapezoid.dx(Tensor y, *, Scalar dx=1, int dim=-1) -> Tensor
trapz.x(Tensor y, Tensor x, *, int dim=-1) -> Tensor
trapz.dx(Tensor y, *, float dx=1., int dim=-1) -> Tensor
triangular_solve(Tensor self, Tensor A, bool upper=True, bool transpose=False, bool unitriangular=False) -> (Tensor solution, Tensor cloned_coefficient)
triangular_solve.X(Tensor self, Tensor A, bool upper=True, bool transpose=False, bool unitriangular=False, *, Tensor(a!) X, Tensor(b!) M) -> (Tensor(a!) solution, Tensor(b!) cloned_coefficient)
tril(Tensor self, SymInt diagonal=0) -> Tensor
tril.out<
tril_<
tril_indices(int row, int col, int offset=0, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
tril_indices.out(int row, int col, int offset=0, *, Tensor(a!) out) -> Tensor(a!)
triplet_margin_loss(Tensor anchor, Tensor positive, Tensor negative, float margin=1., float p=2., float eps=9.9999999999999995e-07, bool swap=False, int reduction=1) -> Tensor
triu(Tensor self, SymInt diagonal=0) -> Tensor
triu.out<
triu_<
triu_indices(int row, int col, int offset=0, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
triu_indices.out(int row, int col, int offset=0, *, Tensor(a!) out) -> Tensor(a!)
true_divide.Tensor(Tensor self, Tensor other) -> Tensor
true_divide.Scalar(Tensor self, Scalar other) -> Tensor
true_divide.out<Tensor
true_divide_.Tensor<Tensor
true_divide_.Scalar<Scalar
trunc(Tensor self) -> Tensor
trunc.out<
trunc_<
type_as(Tensor self, Tensor other) -> Tensor
unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]
unbind_copy.int(Tensor self, int dim=0) -> Tensor[]
unbind_copy.int_out(Tensor self, int dim=0, *, Tensor(a!)[] out) -> ()
unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a)
unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)
unfold_copy(Tensor self, int dimension, int size, int step) -> Tensor
unfold_copy.out<
uniform_(Tensor(a!) self, float from=0., float to=1., *, Generator? generator=None) -> Tensor(a!)
unique_consecutive(Tensor self, bool return_inverse=False, bool return_counts=False, int? dim=None) -> (Tensor, Tensor, Tensor)
unique_consecutive.out(Tensor self, bool return_inverse=False, bool return_counts=False, int? dim=None, *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2) -> (Tensor(a!), Tensor(b!), Tensor(c!))
unsafe_chunk(Tensor self, int chunks, int dim=0) -> Tensor[]
unsafe_split.Tensor(Tensor self, SymInt split_size, int dim=0) -> Tensor[]
unsafe_split.Tensor_out(Tensor self, SymInt split_size, int dim=0, *, Tensor(a!)[] out) -> ()
unsafe_split_with_sizes(Tensor self, SymInt[] split_sizes, int dim=0) -> Tensor[]
unsafe_split_with_sizes.out(Tensor self, SymInt[] split_sizes, int dim=0, *, Tensor(a!)[] out) -> ()
unsqueeze(Tensor(a) self, int dim) -> Tensor(a)
unsqueeze_(Tensor(a!) self, int dim) -> Tensor(a!)
unsqueeze_copy(Tensor self, int dim) -> Tensor
unsqueeze_copy.out<
values(Tensor(a) self) -> Tensor(a)
vander(Tensor x, int? N=None, bool increasing=False) -> Tensor
var(Tensor self, bool unbiased=True) -> Tensor
var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor
var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor
var.correction_out<correction
var.out<dim
var_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)
var_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)
var_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> (Tensor, Tensor)
var_mean.correction_out(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False, Tensor(a!) out0, Tensor(b!) out1) -> (Tensor(a!), Tensor(b!))
vdot(Tensor self, Tensor other) -> Tensor
vdot.out<
view(Tensor(a) self, SymInt[] size) -> Tensor(a)
view.dtype(Tensor(a) self, ScalarType dtype) -> Tensor(a)
view_as(Tensor(a) self, Tensor other) -> Tensor(a)
view_as_complex(Tensor(a) self) -> Tensor(a)
view_as_complex_copy(Tensor self) -> Tensor
view_as_complex_copy.out<
view_as_real(Tensor(a) self) -> Tensor(a)
view_as_real_copy(Tensor self) -> Tensor
view_as_real_copy.out<
view_copy(Tensor self, SymInt[] size) -> Tensor
view_copy.dtype(Tensor self, ScalarType dtype) -> Tensor
view_copy.out<
view_copy.dtype_out<dtype
vsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]
vsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]
vstack(Tensor[] tensors) -> Tensor
vstack.out<
where.self(Tensor condition, Tensor self, Tensor other) -> Tensor
where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor
where.ScalarSelf(Tensor condition, Scalar self, Tensor other) -> Tensor
where.Scalar(Tensor condition, Scalar self, Scalar other) -> Tensor
where(Tensor condition) -> Tensor[]
where.self_out<self
xlogy.Tensor(Tensor self, Tensor other) -> Tensor
xlogy.Scalar_Other(Tensor self, Scalar other) -> Tensor
xlogy.Scalar_Self(Scalar self, Tensor other) -> Tensor
xlogy.OutTensor<Tensor
xlogy.OutScalar_Self<Scalar_Self
xlogy.OutScalar_Other<Scalar_Other
xlogy_.Tensor<Tensor
xlogy_.Scalar_Other<Scalar_Other
zero_(Tensor(a!) self) -> Tensor(a!)
zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor
zeros.out(SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)
zeros_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor
zeros_like.out(Tensor self, *, MemoryFormat? memory_format=None, Tensor(a!) out) -> Tensor(a!)
"""  # noqa: E501
