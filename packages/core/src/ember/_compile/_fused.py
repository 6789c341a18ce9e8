"""Fused ops: one autograd node and one compiled-graph node around two array kernels.

``ember.ops.api.fused_op(name, forward, backward, reference=...)`` (the public hook) returns
a :class:`FusedOp`. A distribution uses it for a computation that it runs as a hand-written
array kernel with a hand-written array backward (ember-nn's recurrent layers): eagerly the
call records ONE autograd node; inside an ``ember.compile`` capture it records ONE graph
node (``compile.fused.<name>``) that the replay runs as the two kernels on arrays; inside
``ember.export`` / ``ember.jit`` (graphs of registry ops only) it runs ``reference``, the
same computation written with Tensor ops.
"""

from __future__ import annotations

from .. import overrides as _overrides
from .._device import check_same_device
from .._tensor import _make
from ..autograd.graph import GRAD, record

__all__ = ["FusedOp"]


#: ``(current_compile, export's current)``: the two capture probes a call checks, bound on
#: the first call (importing them at module import would be circular); a fused op runs once
#: per step in a cell's Python loop, so its per-call imports showed in profiles
_CAPTURES: tuple = ()


def _captures() -> tuple:
    global _CAPTURES
    from ..export._capture import current as current_export
    from ._capture import current_compile

    _CAPTURES = (current_compile, current_export)
    return _CAPTURES


def _arrays(tensors):
    return [None if t is None else t._data for t in tensors]


class FusedOp:
    """A fused op (see :func:`ember.ops.api.fused_op`). Call it with tensors (or None)."""

    def __init__(self, name: str, forward, backward, reference=None):
        from ..autograd.graph import make_node_class

        if not name.isidentifier():
            raise ValueError(f"fused_op: name must be an identifier, got {name!r}")
        self.name = name
        self.forward = forward
        self.backward = backward
        self.reference = reference
        camel = "".join(p[:1].upper() + p[1:] for p in name.split("_"))
        self._node_classes: dict = {}
        self._node_name = camel + "Backward0"
        self._make_node_class = make_node_class

        # the op as a function named as it is, for the modes that see fused ops
        def public(*tensors):
            return self(*tensors)

        public.__name__ = public.__qualname__ = name
        self._public = public

    def __repr__(self) -> str:
        return f"<fused op {self.name}>"

    def __call__(self, *tensors):
        current_compile, current_export = _CAPTURES or _captures()
        cap = current_compile()
        if cap is not None:
            return cap.record_fused(self, tensors)
        if current_export() is not None:  # export / jit: registry ops only
            if self.reference is None:
                raise RuntimeError(f"{self.name} is a fused op without a Tensor-op reference: "
                                   "it cannot be exported or traced")
            return tuple(self.reference(*tensors))
        if _overrides.mode_wants("_ember_sees_fused_layers"):  # (the flop counter's mode)
            return _overrides.handle_torch_function(
                self._public, [t for t in tensors if t is not None], *tensors)
        return self.eager(tensors)


    # -- eager ------------------------------------------------------------------------------
    def node_class(self, n_out: int):
        cls = self._node_classes.get(n_out)
        if cls is None:
            cls = self._make_node_class(self._node_name, _fused_backward, n_out)
            self._node_classes[n_out] = cls
        return cls

    def eager(self, tensors):
        """The op on real tensors: the forward kernel, and one autograd node when needed."""
        present = [t for t in tensors if t is not None]
        if not present:
            raise TypeError(f"{self.name}() expects at least one Tensor argument")
        dev = present[0]._device
        if any(t._device is not dev for t in present):
            check_same_device(*present)
        ctx: dict = {}
        outs = tuple(self.forward(ctx, *_arrays(tensors)))
        wrapped = [None if o is None else _make(o, dev) for o in outs]
        if GRAD.enabled and any(t.requires_grad for t in present):
            first = next(i for i, o in enumerate(wrapped) if o is not None)
            record(self.node_class(len(outs)), wrapped[first], tensors, tuple(tensors),
                   (self, ctx, [None if o is None else o.shape for o in outs]))
            node = wrapped[first].grad_fn
            for nr, t in enumerate(wrapped):
                if t is not None and nr != first:
                    t.requires_grad = True
                    t.grad_fn = node
                    t._nr = nr
            wrapped[first]._nr = first
        return tuple(wrapped)


def _fused_backward(node, grads):
    """The autograd node's backward: the array backward kernel, or (with create_graph=True)
    autograd through the Tensor-op reference."""
    op, ctx, shapes = node.ctx
    grads = list(grads) if isinstance(grads, (list, tuple)) else [grads]
    inputs = node.saved
    if GRAD.enabled:  # create_graph: differentiate the reference
        if op.reference is None:
            raise RuntimeError(f"{op.name}: double backward needs a Tensor-op reference")
        from ..autograd import grad as autograd_grad

        outs = op.reference(*inputs)
        pairs = [(o, g) for o, g in zip(outs, grads) if o is not None and g is not None]
        wanted = [i for i, t in enumerate(inputs) if node.needs_grad(i)]
        res = autograd_grad([o for o, _ in pairs], [inputs[i] for i in wanted],
                            [g for _, g in pairs], create_graph=True, allow_unused=True)
        out = [None] * len(inputs)
        for i, r in zip(wanted, res):
            out[i] = r
        return tuple(out)
    got = op.backward(ctx, tuple(None if g is None else g._data for g in grads))
    dev = node.device
    return tuple(None if g is None or not node.needs_grad(i) else _make(g, dev)
                 for i, g in enumerate(got))
