"""``ember.autograd.forward_ad``: forward-mode automatic differentiation with dual tensors,
PyTorch's ``torch.autograd.forward_ad``.

Inside a ``dual_level``, ``make_dual(x, v)`` gives a tensor that carries the tangent ``v``;
every op on it gives a result carrying the Jacobian-vector product ``J v``, which
``unpack_dual`` reads back::

    with forward_ad.dual_level():
        y = f(forward_ad.make_dual(x, v))
        jvp = forward_ad.unpack_dual(y).tangent

How it works. A dual tensor takes part in the recorded graph (it requires grad), so every
differentiable op records its backward node, whichever way the op records it. While a level
is active, recording calls a hook (``graph._FW_HOOK``) that notes the node's inputs'
tangents; the output's tangent is derived from the node's own backward
(``_forward_rules``), when it is first needed: the next recorded op or ``unpack_dual``. A
tangent belongs to the node and output number (``grad_fn``, ``_nr``) of the tensor that
carries it, so in-place ops, which give their tensor a new ``grad_fn``, carry the new
tangent with it; they also write it into the old tangent's memory, as PyTorch does. A view
reads its tangent as the same view of its base's tangent.

Under ``no_grad`` (a ``no_grad``/``set_grad_enabled(False)`` block, or a level entered
while grad mode is off) ops still compute tangents, as in PyTorch: while such a block is
open inside a level, a ``TorchFunctionMode`` (``_TangentsWithoutGrad``) runs each op that
reads a tangent with recording on, then cuts the recorded node's edges, so the result
carries its tangent but no backward path to the op's inputs. ``inference_mode`` computes no
tangents (PyTorch's as well).

Differences from PyTorch, all following from riding on the recorded graph: a dual tensor
and the results computed from it report ``requires_grad=True`` (under ``no_grad`` as well:
their backward stops there); under ``no_grad``, an in-place op into a leaf that requires
grad (an optimizer's ``p.add_(...)``, ``p.copy_(dual)``) gives it no tangent, and the plain
call ``set_grad_enabled(False)`` (not as a block) turns tangents off with recording. A
custom ``autograd.Function`` gives its outputs the tangents its ``jvp`` staticmethod
returns.
"""

from __future__ import annotations

import collections
import weakref
from typing import NamedTuple

from .._format import shape_str
from .._tensor import Tensor, _make
from ..overrides import TorchFunctionMode, remove_mode
from . import grad_mode as _grad_mode
from . import graph as _graph
from ._forward_rules import output_tangent
from .grad_mode import GRAD, _DecoratorContextManager

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual",
           "unpack_dual", "dual_level"]

#: the active level's index (PyTorch keeps the same module global): -1 when none is active
_current_level = -1


class _Level:
    """One dual level: the nodes that hold its tangents (cleared at exit) and the nodes whose
    output tangent is still to be computed."""

    __slots__ = ("idx", "nodes", "pending", "busy", "nograd", "snapshots")

    def __init__(self, idx: int):
        self.idx = idx
        self.nodes: list = []  # weak references to the nodes holding a tangent record
        self.pending: collections.deque = collections.deque()
        self.busy = False  # computing a tangent: ops run then are not forward-differentiated
        self.nograd = None  # takes off the mode entered with the level under no_grad
        #: id -> (snapshot, tangent): an in-place op's snapshot of a view (``snapshot_view``)
        self.snapshots: dict = {}


_LEVEL: list = [None]  # the active _Level


class _Record:
    """A node's forward-AD state at one level: its inputs' tangents and its outputs'."""

    __slots__ = ("level", "inputs", "outs", "final", "dtype", "split")

    def __init__(self, level, inputs, outs=None, final=False, dtype=None, split=False):
        self.level = level
        self.inputs = inputs  # one tangent (or None) per input of the node
        self.outs = {} if outs is None else outs  # output number -> tangent (or None)
        self.final = final  # outs is complete: nothing is computed from inputs
        #: the output tangents' dtype where a tangent's dtype is not its primal's
        #: (``_mixed_tangent_dtype``); None: the output's own dtype
        self.dtype = dtype
        #: some input is real and its tangent complex: the tangent is pushed through the
        #: (real) op by its real and imaginary parts apart, ``J(a + ib) = Ja + i Jb``
        self.split = split


def _attach(level: _Level, node, rec: _Record) -> None:
    node._fw = rec
    level.nodes.append(weakref.ref(node))


# -- levels ----------------------------------------------------------------------------------

def enter_dual_level() -> int:
    """Enter a new forward grad level (returned) and make it the default of the other
    functions of this module. Only one level can be active at a time, as in PyTorch."""
    global _current_level
    if _LEVEL[0] is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    level = _Level(_current_level + 1)
    _LEVEL[0] = level
    _current_level = level.idx
    _graph._FW_HOOK = _on_record
    _grad_mode.FW_NOGRAD[0] = _nograd_enter
    if not GRAD.enabled and not GRAD.inference:
        level.nograd = _nograd_enter()
    return level.idx


def exit_dual_level(*, level: int | None = None) -> None:
    """Exit the forward grad level ``level`` (default: the current one), deleting every
    tangent made at it. Only the last level entered can be exited."""
    global _current_level
    if level is None:
        level = _current_level
    if level != _current_level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that "
                           "was created. This is not supported.")
    active = _LEVEL[0]
    if level < 0 or active is None:
        raise RuntimeError("Dual level must be a positive number.")
    _graph._FW_HOOK = None
    _grad_mode.FW_NOGRAD[0] = None
    _LEVEL[0] = None
    _current_level = level - 1
    if active.nograd is not None:
        active.nograd()
    active.pending.clear()
    for ref in active.nodes:
        node = ref()
        if node is not None and node.__dict__.get("_fw") is not None:
            del node.__dict__["_fw"]
    active.nodes.clear()


class dual_level(_DecoratorContextManager):
    """Context manager (and decorator) for forward AD: every forward AD computation happens
    inside it. Entering it enters a new level (``enter_dual_level``), leaving it exits the
    level and deletes its tangents. Nested ``dual_level`` blocks are not supported, as in
    PyTorch; use ``ember.func.jvp`` for higher-order forward derivatives."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        exit_dual_level()


# -- dual tensors ------------------------------------------------------------------------------

class UnpackedDualTensor(NamedTuple):
    """What ``unpack_dual`` returns: the ``primal`` and its ``tangent`` (None without one)."""

    primal: Tensor
    tangent: Tensor | None


def _alias_bw(node, grad):
    return (grad,)


#: make_dual's and unpack_dual's node (a view of the input in PyTorch, named so there)
_DualViewBackward0 = _graph.make_node_class("ViewBackward0", _alias_bw)


def _alias(tensor: Tensor) -> Tensor:
    """A tensor sharing ``tensor``'s memory and version counter, recorded as a view of it
    (its gradient flows to ``tensor``) but not tracked as a view: it is a new root."""
    out = tensor.detach()
    node = _graph.new_node(_DualViewBackward0)
    node.next_functions = (_graph.edge(tensor),)
    node.saved = ()
    node.versions = None
    node.ctx = None
    node.device = tensor._device
    node._fw_real = _edge_real(node.next_functions[0])
    out.grad_fn = node
    out.requires_grad = True
    return out


def _edge_real(edge) -> bool:
    """Whether a backward edge leads to a tensor that really requires grad (``_fw_real``)."""
    node = edge[0]
    return node is not None and node._fw_real


def _is_inexact(t) -> bool:
    return t.is_floating_point() or t.is_complex()


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A dual tensor: a new tensor sharing ``tensor``'s memory, whose forward gradient at
    ``level`` (default: the current level) is ``tangent``. The tangent is kept as it is when
    it has the primal's memory layout, and copied into that layout otherwise. Backward
    differentiable: gradients of the result flow to ``tensor``."""
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                           "make sure to enter_dual_level() first.")
    if not _is_inexact(tensor):
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"{tensor.dtype}")
    if not _is_inexact(tangent):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: "
                         f"{tangent.dtype}")
    active = _LEVEL[0]
    if active is None or level != active.idx:
        raise RuntimeError("Invalid level given to _make_dual")
    if _tangent_of(tensor) is not None:
        raise RuntimeError("Making a dual Tensor based on a Tensor that already has a forward "
                           f"gradient at the same level {level} is not supported.")
    if _tangent_of(tangent) is not None:
        raise RuntimeError("Setting a forward grad that itself has a forward gradient at the "
                           f"same level{level} is not supported.")
    if tangent._data.shape != tensor._data.shape:
        raise RuntimeError("Trying to set a forward gradient that has a different size than "
                           "that of the original Tensor, this is not supported. Tensor is of "
                           f"size [{shape_str(tensor._data.shape)}] while the given forward "
                           f"gradient is of size [{shape_str(tangent._data.shape)}].")
    if tangent._device != tensor._device:
        raise RuntimeError("Expected the tangent to be on the primal's device, but the primal "
                           f"is on {tensor._device} and the tangent on {tangent._device}")
    if not tangent.requires_grad and tangent.stride() != tensor.stride():
        tangent = _same_layout(tensor, tangent)
    out = _alias(tensor)
    _attach(active, out.grad_fn, _Record(active, None, {0: tangent}, final=True))
    return out


def _same_layout(primal: Tensor, tangent: Tensor) -> Tensor:
    """``tangent`` copied into a tensor with ``primal``'s strides."""
    from .. import empty_like

    t = empty_like(primal, dtype=tangent.dtype)
    t._data[...] = tangent._data
    return t


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of ``tensor`` at ``level`` (default: the current level): the
    primal a tensor sharing ``tensor``'s memory without the tangent (``tensor`` itself when it
    has none), the tangent as it is, or None. Backward differentiable."""
    if level is None:
        level = _current_level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    active = _LEVEL[0]
    tangent = _tangent_of(tensor) if active is not None and level == active.idx else None
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    primal = _alias(tensor)
    _attach(active, primal.grad_fn, _Record(active, None, {0: None}, final=True))
    return UnpackedDualTensor(primal, tangent)


# -- tangents ------------------------------------------------------------------------------------

def _tangent_of(t: Tensor):
    """``t``'s tangent at the active level, or None."""
    active = _LEVEL[0]
    if active is None or not isinstance(t, Tensor):
        return None
    if active.pending and not active.busy:
        _flush(active)
    return _lookup(active, t)


def _lookup(active: _Level, t: Tensor):
    if active.snapshots:
        hit = active.snapshots.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
    base = t._base
    if base is not None:  # a view: the same view of its base's tangent, when it replays
        root = _lookup(active, base)
        if root is not None:
            view = _view_of_tangent(t, root)
            if view is not None:
                return view
    gf = t.grad_fn
    if gf is not None:
        rec = gf._fw
        if rec is not None and rec.level is active:
            return _output_tangent(gf, rec, t._nr, t)
    return None


def _output_tangent(node, rec: _Record, nr: int, out: Tensor):
    outs = rec.outs
    if nr in outs:
        return outs[nr]
    if rec.final:
        return None
    active = rec.level
    was = active.busy
    active.busy = True
    try:
        if rec.split:
            tangent = _split_tangent(node, nr, out, rec.inputs)
        else:
            tangent = output_tangent(node, nr, out, rec.inputs)
        if rec.dtype is not None and tangent is not None and tangent.dtype != rec.dtype:
            if tangent.is_complex() and not rec.dtype.is_complex:
                tangent = tangent.real  # a real tangent's image under a linear op
            tangent = tangent.to(rec.dtype)
    finally:
        active.busy = was
    outs[nr] = tangent
    if node._n_out == 1:
        rec.inputs = None  # the only output is done: let the inputs' tangents go
        rec.final = True
    return tangent


def _split_tangent(node, nr: int, out: Tensor, tangents):
    """``output_tangent`` when a real input carries a complex tangent: PyTorch's formulas are
    linear in the tangents with real coefficients there, so the op's real Jacobian is pushed
    the real and the imaginary parts apart and the results joined."""
    from ._forward_rules import _linear_rule, _product_rule, _rules

    if _rules().get(type(node)) in (_product_rule, _linear_rule):  # PyTorch's dtype error
        return output_tangent(node, nr, out, tangents)
    real = [t.real if t is not None and t.is_complex() else t for t in tangents]
    imag = [t.imag if t is not None and t.is_complex() else None for t in tangents]
    re = output_tangent(node, nr, out, real)
    im = output_tangent(node, nr, out, imag)
    if re is None or im is None:
        return re if im is None else im * 1j
    return re + im * 1j


def _view_of_tangent(view: Tensor, root_tangent: Tensor):
    """The tangent of ``view``: the same view of its base's tangent (None when the view
    cannot be replayed on another tensor)."""
    if not _replayable(view, view._base, root_tangent):
        return None
    return _replay(view._extra["view_fn"], root_tangent)


def _replayable(view: Tensor, base: Tensor, root_tangent: Tensor) -> bool:
    """Whether ``view`` replays on its base's tangent: by a chain of view ops, or by storage
    geometry (``as_strided``) when the tangent lays its elements out as the base does."""
    extra = view._extra
    if not extra or "view_fn" not in extra:
        return False
    if not extra.get("strided"):
        return True
    return (root_tangent._data.dtype == base._data.dtype and
            root_tangent.stride() == base.stride() and base.storage_offset() == 0 and
            root_tangent._base is None and root_tangent.storage_offset() == 0)


def _replay(chain, tangent: Tensor) -> Tensor:
    active = _LEVEL[0]
    was, prev = active.busy, GRAD.enabled
    active.busy = True
    GRAD.enabled = tangent.requires_grad
    try:
        return chain(tangent)
    finally:
        active.busy = was
        GRAD.enabled = prev


def _flush(active: _Level) -> None:
    """Compute the output tangents noted by earlier records (their ops have returned)."""
    pending = active.pending
    while pending:
        node, out = pending.popleft()
        rec = node._fw
        if rec is not None and rec.level is active:
            _output_tangent(node, rec, out._nr, out)


def _on_record(node, out: Tensor, inputs) -> None:
    """``graph.record``'s hook while a level is active: note the inputs' tangents."""
    active = _LEVEL[0]
    if active is None or active.busy:
        return
    if active.pending:
        _flush(active)
    tangents = None
    mixed = split = False
    for i, t in enumerate(inputs):
        if t is not None and t.requires_grad:
            tg = _lookup(active, t)
            if tg is not None:
                if tangents is None:
                    tangents = [None] * len(inputs)
                tangents[i] = tg
                if tg._data.dtype != t._data.dtype:
                    mixed = True
                    split = split or (tg.is_complex() and not t.is_complex())
    if tangents is None:
        return
    base = out._base
    if base is not None:
        root = _lookup(active, base)
        if root is not None and _replayable(out, base, root):
            return  # a view: its tangent is read from its base's (``_lookup``)
    node._fw_real = any(_edge_real(e) for e in node.next_functions)
    dtype = None
    if mixed:
        _check_mixed(node, out, inputs, tangents)
        dtype = _mixed_tangent_dtype(node, out, inputs, tangents)
    _attach(active, node, _Record(active, tuple(tangents), dtype=dtype, split=split))
    active.pending.append((node, out))


#: ops whose forward formula in PyTorch is the op itself applied to the tangents (linear in
#: their differentiable inputs), or that select or zero the tangent's elements (``sort``,
#: ``clamp``, ``floor``): their output tangent has the dtype the op gives the tangents
_LINEAR_NODES = frozenset((
    "NegBackward0", "CloneBackward0", "SumBackward0", "SumBackward1", "MeanBackward0",
    "MeanBackward1", "AddBackward0", "AddBackward1", "SubBackward0", "SubBackward1",
    "RsubBackward0", "RsubBackward1", "CatBackward0", "StackBackward0", "WhereBackward0",
    "MaxBackward1", "MinBackward1", "AmaxBackward0", "AminBackward0", "FlipBackward0",
    "RollBackward0", "CumsumBackward0", "TrilBackward0", "TriuBackward0",
    "ConstantPadNdBackward0", "GatherBackward0", "IndexBackward0", "IndexSelectBackward0",
    "RepeatBackward0", "TraceBackward0", "DiagEmbedBackward0", "MaskedFillBackward0",
    "ClampBackward0", "ClampBackward1", "ClampMinBackward0", "ClampMaxBackward0",
    "SignBackward0", "FloorBackward0", "CeilBackward0", "RoundBackward0", "TruncBackward0",
    "SortBackward0", "TopkBackward0", "KthvalueBackward0", "MedianBackward0",
    "MedianBackward1", "CummaxBackward0", "CumminBackward0", "TBackward0", "MaxBackward0",
    "MinBackward0", "NativeBatchNormBackward0", "NativeGroupNormBackward0", "NllLossBackward0",
    "MaskedSelectBackward0", "TakeBackward0", "EmbeddingBackward0", "NansumBackward0",
    "FmodBackward0", "RemainderBackward0", "Im2ColBackward0", "PixelShuffleBackward0",
    "PixelUnshuffleBackward0", *(f"{p}{n}DBackward0" for n in "123" for p in (
        "AvgPool", "AdaptiveAvgPool", "UpsampleNearest")),
    *(f"MaxPool{n}DWithIndicesBackward0" for n in "123"), "UpsampleLinear1DBackward0",
    "UpsampleBilinear2DBackward0", "UpsampleBicubic2DBackward0", "UpsampleTrilinear3DBackward0"))

#: zero-derivative ops: a complex tangent on a real input gives real zeros
_ZERO_DERIVATIVE = frozenset(("SignBackward0", "FloorBackward0", "CeilBackward0",
                              "RoundBackward0", "TruncBackward0"))

#: ops whose formula mixes a real input's complex tangent with real-only helpers (or takes
#: its real part): PyTorch's tangent is real, in the output's dtype
_REAL_ON_SPLIT = frozenset((
    "SiluBackward0", "MishBackward0", "ErfBackward0", "ErfinvBackward0", "LogitBackward0",
    "DigammaBackward0", "LgammaBackward0", "SgnBackward0", "PowBackward0", "PowBackward1",
    "PowBackward2", "ProdBackward0", "ProdBackward1", "StdBackward0", "VarBackward0",
    "LinalgVectorNormBackward0", "CumprodBackward0"))

#: ops whose tangent PyTorch computes in the output's dtype whatever the tangents' dtypes
_OUTPUT_DTYPE_NODES = frozenset(("ToCopyBackward0", "LogsumexpBackward0", "MseLossBackward0",
                                 "CumprodBackward0", "LogcumsumexpBackward0",
                                 "SmoothL1LossBackward0", "SgnBackward0", "AngleBackward0"))

#: elementwise ops whose forward formula PyTorch derives from the backward one
#: (``auto_element_wise``, through conjugates): where a complex number takes part (a complex
#: tangent, or a complex input) the tangent has the output's dtype (``sin`` of a complex64
#: dual with a complex128 tangent: complex64; of a float32 one with a complex64 tangent: its
#: real part in float32)
_AUTO_ELEMENTWISE = frozenset((
    "SinBackward0", "CosBackward0", "TanBackward0", "ExpBackward0", "Exp2Backward0",
    "Expm1Backward0", "TanhBackward0", "SigmoidBackward0", "SqrtBackward0", "RsqrtBackward0",
    "PowBackward0", "ReciprocalBackward0", "LogBackward0", "Log2Backward0", "Log10Backward0",
    "Log1PBackward0", "AbsBackward0", "AngleBackward0", "SinhBackward0", "CoshBackward0",
    "AtanBackward0", "AsinBackward0", "AcosBackward0", "AsinhBackward0", "AcoshBackward0",
    "AtanhBackward0", "ProdBackward0", "ProdBackward1", "SiluBackward0"))

#: linear ``auto_element_wise`` ops: a complex tangent gives the output's dtype, a real one
#: the linear ops' rule
_AUTO_LINEAR = frozenset(("NegBackward0", "RsubBackward1", "ClampBackward1", "ClampBackward0",
                          "ClampMinBackward0", "ClampMaxBackward0"))


def _mixed_tangent_dtype(node, out: Tensor, inputs, tangents):
    """The output tangent's dtype when some input's tangent has another dtype than the input
    (``make_dual(x32, t64)``): PyTorch keeps a tangent's dtype and lets its formulas promote.
    A linear op's tangent is the op applied to the tangents (an input without one counts as
    zeros of its dtype: ``x + c`` with a float16 tangent and a float32 ``c`` is float32);
    another op's mixes the tangents with primal values (``t * cos(x)``): the output's dtype
    promoted with the tangents' (``x32 * 2`` with a complex64 tangent: complex64), except
    for the ``auto_element_wise`` ops where a complex number takes part (``_AUTO_*``).
    ``to(dtype)``: the output's dtype."""
    from .._dtype import promote_types, result_type

    od = out.dtype
    name = node.name()
    if name in _OUTPUT_DTYPE_NODES:
        return od
    if name == "NativeLayerNormBackward0":  # layer_norm_jvp updates the input's tangent
        return (inputs[0] if tangents[0] is None else tangents[0]).dtype
    if _reciprocal_of(name, inputs):
        name = "ReciprocalBackward0"
    complex_tangent = any(tg is not None and tg.dtype.is_complex for tg in tangents)
    real_input = not od.is_complex
    if complex_tangent and real_input and name in _REAL_ON_SPLIT:
        return od
    if complex_tangent and real_input and name in _ZERO_DERIVATIVE:
        return result_type(*[tg if tg is not None else t for t, tg in zip(inputs, tangents)
                             if tg is not None or t is not None]).to_real()
    if complex_tangent and name in _AUTO_LINEAR:
        return od
    if name in _AUTO_ELEMENTWISE and (complex_tangent or any(
            t is not None and t.dtype.is_complex for t in inputs)):
        return od
    if name in _LINEAR_NODES:
        ops = [tg if tg is not None else t for t, tg in zip(inputs, tangents)
               if tg is not None or t is not None]
        return result_type(*ops)
    r = od
    for tg in tangents:
        if tg is not None:
            r = promote_types(r, tg.dtype)
    return r



def _reciprocal_of(name: str, inputs) -> bool:
    """``2 / d``: PyTorch computes it as ``reciprocal(d) * 2``, an ``auto_element_wise`` op."""
    return name == "DivBackward0" and inputs[0] is None


# -- PyTorch's errors for a tangent of another dtype than its primal ----------------------------
# PyTorch computes an op's tangent eagerly from formulas that call kernels on the tangents
# beside the primals, so a tangent whose dtype differs from the primal's reaches a kernel
# that refuses mixed dtypes (``mm``, ``bmm``, ``convolution``, ``lerp``, ``index_add``) or a
# real-only kernel (a complex tangent on a real input); its error comes at the op's call.

def _sname(d) -> str:
    from .._dtype import scalar_type_name

    return scalar_type_name(d)


def _cname(d) -> str:
    from .._dtype import options_type_name

    return options_type_name(d)


#: real-only backward kernels PyTorch's formulas run on a real input's complex tangent
_REAL_KERNELS = {
    "ReluBackward0": "threshold_cpu", "ThresholdBackward0": "threshold_cpu",
    "SoftplusBackward0": "softplus_backward_cpu", "EluBackward0": "elu_backward_cpu",
    "CeluBackward0": "elu_backward_cpu", "LeakyReluBackward0": "leaky_relu_backward_cpu",
    "HardtanhBackward0": "hardshrink_backward_cpu", "HardswishBackward0": "hardswish_backward_cpu",
    "HardsigmoidBackward0": "hardsigmoid_backward", "SoftshrinkBackward0": "shrink_backward_cpu",
    "XlogyBackward0": "xlogy_cpu", "AvgPool2DBackward0": "avg_pool2d",
    "AvgPool1DBackward0": "avg_pool2d", "AdaptiveAvgPool1DBackward0": "adaptive_avg_pool2d",
    "AdaptiveAvgPool2DBackward0": "adaptive_avg_pool2d",
    "UpsampleNearest1DBackward0": "compute_indices_weights_nearest",
    "UpsampleNearest2DBackward0": "compute_indices_weights_nearest",
    "UpsampleBilinear2DBackward0": "upsample_bilinear2d_channels_last",
    "NllLossBackward0": "nll_loss_out_frame",
}

#: ops whose formula writes a real input's complex tangent into a real result
_REAL_RESULT = frozenset((
    "NativeLayerNormBackward0", "NativeBatchNormBackward0", "NativeGroupNormBackward0",
    "SoftmaxBackward0", "LogSoftmaxBackward0", "SmoothL1LossBackward0", "MseLossBackward0",
    "LogsumexpBackward0", "LogcumsumexpBackward0"))

#: ``Found dtype <tangent> but expected <primal>`` (``False``: the other way round)
_FOUND_DTYPE = {"LogSigmoidBackward0": True, "GluBackward0": True, "HuberLossBackward0": True,
                "BinaryCrossEntropyBackward0": False}


def _check_mixed(node, out: Tensor, inputs, tangents) -> None:
    """Raise PyTorch's error where its formula for ``node`` refuses the dtypes of the
    tangents (some tangent's dtype is not its primal's)."""
    name = node.name()
    eff = [None if t is None else (t if tg is None else tg).dtype
           for t, tg in zip(inputs, tangents)]
    prim = [None if t is None else t.dtype for t in inputs]
    split = [tg is not None and tg.dtype.is_complex and not t.dtype.is_complex
             for t, tg in zip(inputs, tangents)]
    if any(split):
        kernel = _REAL_KERNELS.get(name)
        if kernel is not None:
            from .._dtype import no_kernel

            raise no_kernel(kernel, eff[split.index(True)].np)
        if name in _REAL_RESULT:
            raise RuntimeError(f"result type {_sname(eff[split.index(True)])} can't be cast to "
                               f"the desired output type {_sname(out.dtype)}")
    if name in _FOUND_DTYPE:
        t, p = eff[0], prim[0]
        if tangents[0] is not None and t != p:
            a, b = (t, p) if _FOUND_DTYPE[name] else (p, t)
            raise RuntimeError(f"Found dtype {_sname(a)} but expected {_sname(b)}")
        return
    check = _MIXED_CHECKS.get(name)
    if check is not None:
        check(node, out, eff, prim, tangents, inputs)


def _pairs(prim, eff, tangents, i, j):
    """The operand dtypes of each product a formula computes: ``(t_i, p_j)`` and
    ``(p_i, t_j)`` where those tangents exist."""
    if tangents[i] is not None:
        yield eff[i], prim[j]
    if tangents[j] is not None:
        yield prim[i], eff[j]


def _check_addmm(node, out, eff, prim, tangents, inputs):
    for a, b in _pairs(prim, eff, tangents, 1, 2):
        if a != b:
            raise RuntimeError("expected m1 and m2 to have the same dtype, but got: "
                               f"{_cname(a)} != {_cname(b)}")


def _check_addmv(node, out, eff, prim, tangents, inputs):
    for a, b in _pairs(prim, eff, tangents, 1, 2):
        if a != b or a != out.dtype:
            raise RuntimeError("addmv input tensors must have the same dtype, but got "
                               f"{_sname(out.dtype)}, {_sname(a)}, and {_sname(b)}")


def _scalar_type_error(a, b):
    return RuntimeError(f"expected scalar type {_sname(a)} but found {_sname(b)}")


def _check_bmm(node, out, eff, prim, tangents, inputs):
    for a, b in _pairs(prim, eff, tangents, 1, 2):
        if a != b:
            raise _scalar_type_error(a, b)


def _check_einsum(node, out, eff, prim, tangents, inputs):
    for i, tg in enumerate(tangents):
        if tg is None:
            continue
        dts = [eff[k] if k == i else prim[k] for k in range(len(prim)) if prim[k] is not None]
        for d in dts[1:]:
            if d != dts[0]:
                raise _scalar_type_error(dts[0], d)


def _check_tensordot(node, out, eff, prim, tangents, inputs):
    for a, b in _pairs(prim, eff, tangents, 0, 1):
        if a == b:
            continue
        if all(t is not None and t.ndim == 1 for t in inputs):  # inner: a dot
            raise RuntimeError("dot : expected both vectors to have same dtype, but found "
                               f"{_sname(a)} and {_sname(b)}")
        raise RuntimeError("expected m1 and m2 to have the same dtype, but got: "
                           f"{_cname(a)} != {_cname(b)}")


def _check_convolution(node, out, eff, prim, tangents, inputs):
    geom, transposed = node.ctx[0], node.ctx[1]
    for a, b in _pairs(prim, eff, tangents, 0, 1):
        if a == b:
            continue
        if a.is_complex and not b.is_complex:  # a complex input through real kernels
            from .._dtype import no_kernel

            nd = len(geom.k)
            kernel = ("compute_columns3d" if nd == 3 else
                      "slow_conv_transpose2d_out_cpu" if transposed else "slow_conv2d_cpu")
            raise no_kernel(kernel, a.np)
        if a.is_complex and b.is_complex:  # PyTorch convolves the real and imaginary parts
            a, b = a.to_real(), b.to_real()
        raise _scalar_type_error(a, b)


def _check_lerp(node, out, eff, prim, tangents, inputs):
    if (tangents[0] is not None or tangents[1] is not None) and eff[0] != eff[1]:
        raise RuntimeError(f"expected dtype {_cname(eff[0])} for `end` but got dtype "
                           f"{_cname(eff[1])}")


def _same_as_self(msg):
    def check(node, out, eff, prim, tangents, inputs):
        if eff[0] != eff[1]:
            raise RuntimeError(msg.format(self=_sname(eff[0]), src=_sname(eff[1])))
    return check


def _check_gelu(node, out, eff, prim, tangents, inputs):
    t, p = eff[0], prim[0]
    if t == p:
        return
    if node.ctx and node.ctx[0] == "tanh":
        if t.is_complex:
            from .._dtype import no_kernel

            raise no_kernel("GeluBackwardKernelImpl", t.np)
    elif p.name == "float32":  # PyTorch's oneDNN kernel gets the float32 primal's tangent
        raise RuntimeError("itensor_view_from_dense expects float/bfloat16/half/int8/fp8 tensor "
                           f"input{_sname(t)}")


_MIXED_CHECKS = {
    "AddmmBackward0": _check_addmm, "AddmvBackward0": _check_addmv,
    "BaddbmmBackward0": _check_bmm, "AddbmmBackward0": _check_bmm,
    "EinsumBackward0": _check_einsum, "TensordotBackward0": _check_tensordot,
    "ConvolutionBackward0": _check_convolution, "LerpBackward0": _check_lerp,
    "LerpBackward1": _check_lerp, "GeluBackward0": _check_gelu,
    "ScatterBackward0": _same_as_self("scatter(): Expected self.dtype to be equal to src.dtype"),
    "IndexAddBackward0": _same_as_self("index_add_(): self ({self}) and source ({src}) must "
                                       "have the same scalar type"),
    "IndexPutBackward0": _same_as_self("Index put requires the source and destination dtypes "
                                       "match, got {self} for the destination and {src} for "
                                       "the source."),
    "MaskedScatterBackward0": _same_as_self("masked_scatter: expected self and source to have "
                                            "same dtypes but got{self} and {src}"),
}

# -- tangents under no_grad -------------------------------------------------------------------

class _TangentsWithoutGrad(TorchFunctionMode):
    """While a block with grad mode off is open inside a dual level: an op that reads a
    tangent runs with recording on (so its output's tangent is noted as usual), then each
    node the call recorded loses its edges: the results carry tangents, but no backward
    reaches the op's inputs through them."""

    _ember_reads_types = False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        active = _LEVEL[0]
        if GRAD.enabled or GRAD.inference or active is None or active.busy:
            return func(*args, **kwargs)
        tensors = _tensors_in((args, kwargs))
        if not any(t.requires_grad and _tangent_of(t) is not None for t in tensors):
            return func(*args, **kwargs)
        name = getattr(func, "__name__", "")
        if kwargs.get("out") is not None:
            raise NotImplementedError(f"Trying to use forward AD with {name}_out that does not "
                                      "support it because it is an out= function")
        if _writes_first(name) and args and isinstance(args[0], Tensor) \
                and args[0].requires_grad and args[0].grad_fn is None:
            return func(*args, **kwargs)  # a leaf keeps no tangent: the module's docstring
        first = next(_graph._SEQ)
        GRAD.enabled = True
        try:
            out = func(*args, **kwargs)
        finally:
            GRAD.enabled = False
        for t in tensors + _tensors_in(out):
            for x in (t, t._base):
                node = None if x is None else x.grad_fn
                if node is not None and getattr(node, "seq", 0) > first:
                    node.next_functions = (_graph._NO_EDGE,) * len(node.next_functions)
                    node._fw_real = False  # its tangent records nothing either
        return out


def _writes_first(name: str) -> bool:
    """Whether a function of this name writes into its first argument (``add_``,
    ``__iadd__``, ``__setitem__``)."""
    if name.startswith("__"):
        return name == "__setitem__" or name.startswith("__i")
    return name.endswith("_")


def _tensors_in(obj) -> list:
    from .._functorch._pytree import tree_flatten

    return [t for t in tree_flatten(obj)[0] if isinstance(t, Tensor)]


def _nograd_enter():
    """Enter a ``_TangentsWithoutGrad`` mode in this thread; returns what takes it off."""
    mode = _TangentsWithoutGrad()
    mode.__enter__()
    return lambda: remove_mode(mode)


def snapshot_view(snap: Tensor, view: Tensor) -> None:
    """An in-place op on ``view`` runs on ``snap``, a copy of it with its history: the copy
    carries the view's tangent (read from its base's, which the copy has no link to) until
    the op's result replaces ``view`` (``_rebase_with_tangent``)."""
    active = _LEVEL[0]
    if active is None or active.busy or not view.requires_grad:
        return
    tangent = _tangent_of(view)
    if tangent is not None:
        active.snapshots[id(snap)] = (snap, tangent)


def _rebase_with_tangent(self: Tensor, result: Tensor, rebase) -> None:
    """``rebase_history`` while a level is active: ``self`` was overwritten in place with
    ``result``; its tangent becomes ``result``'s, written into its old tangent's memory (so
    views of it see the change); a view's base gets the view's region of it."""
    active = _LEVEL[0]
    if active.pending:
        _flush(active)
    active.snapshots.clear()
    base = self._base
    if base is not None and (base.requires_grad or result.requires_grad):
        old_root = _lookup(active, base)
        new = _lookup(active, result)
        rebase(self, result)
        if old_root is None and new is None:
            return
        root_tangent = old_root
        if root_tangent is None:
            from .. import zeros_like

            root_tangent = zeros_like(base)
        region = _view_of_tangent(self, root_tangent)
        if region is None:
            raise RuntimeError("Trying to use forward AD with an in-place op on a view that "
                               "cannot be replayed on its base's tangent (as_strided or a "
                               "view reshaped in place); this is not supported")
        _write(region, new)
        if base.grad_fn is not None:
            _attach(active, base.grad_fn, _Record(active, None, {base._nr: root_tangent},
                                                  final=True))
        if self.grad_fn is not None and self.grad_fn._fw is not None:
            del self.grad_fn.__dict__["_fw"]  # the view reads the base's tangent
        return
    old = _lookup(active, self) if self.requires_grad else None
    rebase(self, result)
    if old is None:
        return
    new = _lookup(active, self)
    if new is old:
        return
    _write(old, new)
    if self.grad_fn is not None:
        _attach(active, self.grad_fn, _Record(active, None, {self._nr: old}, final=True))


def _write(target: Tensor, value) -> None:
    """Copy ``value`` (a tangent, or None: zeros) into ``target``'s memory."""
    d = target._data
    if value is None:
        d[...] = 0
    else:
        v = value._data
        d[...] = v if v.dtype == d.dtype else v.astype(d.dtype)


def input_tangents(args):
    """The tangents of a Function's inputs at the active level (None: no level, or busy)."""
    active = _LEVEL[0]
    if active is None or active.busy:
        return None
    if active.pending:
        _flush(active)
    return [_lookup(active, a) if isinstance(a, Tensor) and a.requires_grad else None
            for a in args]


def function_tangents(ctx, cls, args, outs, tangents=None) -> None:
    """``Function.apply``'s step while a level is active (its node is built without
    ``record``): when an input carries a tangent, the outputs' tangents are what the
    Function's ``jvp(ctx, *input_tangents)`` returns (None for a non-tensor input), as in
    PyTorch; without a ``jvp`` that is PyTorch's NotImplementedError. ``tangents``: the
    inputs' tangents read before the outputs were wrapped (``input_tangents``: an input
    marked dirty is then an output of ``ctx``), or None to read them now."""
    if tangents is None:
        tangents = input_tangents(args)
    if tangents is None:
        return
    active = _LEVEL[0]
    if all(t is None for t in tangents):
        return
    from .function import Function

    if getattr(cls.jvp, "__func__", cls.jvp) is getattr(Function.jvp, "__func__", Function.jvp):
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")
    was, prev = active.busy, GRAD.enabled
    active.busy = True
    # recorded (a differentiable tangent) when a tangent requires grad or the inputs really
    # do, as PyTorch's jvp runs in the caller's grad mode
    real = any(_edge_real(e) for e in getattr(ctx, "next_functions", ()))
    if hasattr(ctx, "next_functions"):
        ctx._fw_real = real
    GRAD.enabled = prev and (real or any(t is not None and t.requires_grad for t in tangents))
    ctx._jvp_saved = tuple(getattr(ctx, "saved_for_forward", ()))
    try:
        res = cls.jvp(ctx, *tangents)
    finally:
        active.busy = was
        GRAD.enabled = prev
        del ctx._jvp_saved
    res = res if isinstance(res, tuple) else (res,)
    if len(res) != len(outs):
        raise RuntimeError(f"Function's jvp returned an invalid number of forward gradients "
                           f"(expected {len(outs)} but got {len(res)})")
    found = {}
    for o, t in zip(outs, res):
        if t is None or not isinstance(o, Tensor) or o.grad_fn is not ctx:
            continue
        if t._data.shape != o._data.shape:
            raise RuntimeError("Trying to set a forward gradient that has a different size "
                               "than that of the original Tensor, this is not supported. "
                               f"Tensor is of size [{shape_str(o._data.shape)}] while the "
                               f"given forward gradient is of size "
                               f"[{shape_str(t._data.shape)}].")
        if not _is_inexact(t):
            raise RuntimeError("Expected both tensor and its forward grad to be floating "
                               f"point or complex, but the forward grad is {t.dtype}")
        found[o._nr] = t
    _attach(active, ctx, _Record(active, None, found, final=True))


def _make_plain(t: Tensor) -> Tensor:
    return _make(t._data, t._device)
