"""``ember.Tag`` (``torch.Tag``, also ``torch._C.Tag``): the tags an operator's definition can
carry (``library.define(..., tags=...)``, ``custom_op(..., tags=...)``) and that
``OpOverload.tags`` reports. The members and their values are PyTorch's (its
``native_functions.yaml`` tags, in its order), so ``ember.Tag.pt2_compliant_tag``,
``ember.Tag.needs_fixed_stride_order`` and the rest resolve wherever PyTorch code names them.

PyTorch 2.13's ``inplace`` (6) and ``out`` (14) are left out: they make ``custom_op`` infer
aliasing return schemas (``Tensor(a0!)``) and keyword-only ``out=`` arguments, which Ember's
``custom_op`` does not do, and programs probe ``hasattr(torch.Tag, "inplace")`` to choose the
older way of writing such ops, which Ember runs."""

from __future__ import annotations

import enum

__all__ = ["Tag"]


class Tag(enum.Enum):
    """An operator tag, like ``torch.Tag``: ``ember.Tag.pt2_compliant_tag``,
    ``ember.Tag.needs_fixed_stride_order``, ... (compare with ``in op.tags``)."""

    core = 0
    cudagraph_unsafe = 1
    data_dependent_output = 2
    dynamic_output_shape = 3
    flexible_layout = 4
    generated = 5
    inplace_view = 7
    maybe_aliasing_or_mutating = 8
    needs_contiguous_strides = 9
    needs_exact_strides = 10
    needs_fixed_stride_order = 11
    nondeterministic_bitwise = 12
    nondeterministic_seeded = 13
    out_variant = 15
    pointwise = 16
    pt2_compliant_tag = 17
    reduction = 18
    view_copy = 19


Tag.__module__ = "ember"
