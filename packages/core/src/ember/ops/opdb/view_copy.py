"""The view-copy ops (``permute_copy``, ``view_copy``, ...), ``slice_inverse`` and
``is_distributed``.

A copy takes its view's samples where the view has an entry (``permute_copy`` runs
``permute``'s), so the two stay exercised alike; the views without an entry of their own
(``alias``, ``expand``, ``slice``, ``unfold``, ``view``) get theirs here. PyTorch's
``*_copy`` function is the oracle.

``slice_inverse`` views ``input``'s memory with ``src``'s geometry: its samples here are
whole-dimension slices (``input`` laid out as ``src``), which survive the moves to the test
devices; slices of a larger base, and their gradients, are tested in
``tests/core/test_view_copy.py``.
"""

from __future__ import annotations

from . import ALL, SampleInput, define, entry, make


def _from_view(view: str, keep=None):
    """The samples of op ``view``'s entry (those ``keep(sample)`` accepts)."""

    def samples(device, dtype, requires_grad=False):
        for s in entry(view).samples(device, dtype, requires_grad):
            if keep is None or keep(s):
                yield s

    return samples


def _copy_of(name: str, view: str, keep=None, **kwargs) -> None:
    """``name``'s entry: ``view``'s samples, dtypes and output picker."""
    e = entry(view)
    define(name, _from_view(view, keep), dtypes=e.dtypes, output=e.output,
           skip=dict(e.skip), **kwargs)


def _alias_samples(device, dtype, requires_grad=False):
    for shape in ((), (4,), (2, 3), (0, 3)):
        yield SampleInput(make(shape, dtype, device, requires_grad=requires_grad),
                          name=f"shape{shape}")
    yield SampleInput(make((3, 4), dtype, device, requires_grad=requires_grad,
                           noncontiguous=True), name="noncontiguous")


def _expand_samples(device, dtype, requires_grad=False):
    def t(shape, **kw):
        return make(shape, dtype, device, requires_grad=requires_grad, **kw)

    yield SampleInput(t((3, 1)), (3, 4))
    yield SampleInput(t((3, 1)), [2, 3, -1], name="new leading dim, -1 keeps")
    yield SampleInput(t(()), (2, 2), name="0-d")
    yield SampleInput(t((1, 3)), (0, 3), name="empty")
    yield SampleInput(t((1, 3)), (2, 3), implicit=True, name="implicit")
    yield SampleInput(t((2, 3)), (2, 3), name="same shape")


def _slice_samples(device, dtype, requires_grad=False):
    def t(shape, **kw):
        return make(shape, dtype, device, requires_grad=requires_grad, **kw)

    yield SampleInput(t((4, 5)), name="defaults: all of dim 0")
    yield SampleInput(t((4, 5)), 1, 1, 4)
    yield SampleInput(t((4, 5)), 1, None, None, 2, name="step")
    yield SampleInput(t((4, 5)), -1, -3, 100, name="negative dim and start, end past it")
    yield SampleInput(t((4, 5)), 0, 3, 1, name="start after end: empty")
    yield SampleInput(t((2, 3, 4)), dim=2, start=1, step=3, name="keywords")
    yield SampleInput(t((4, 6), noncontiguous=True), 1, 1, 5, 2, name="noncontiguous")


def _unfold_samples(device, dtype, requires_grad=False):
    def t(shape, **kw):
        return make(shape, dtype, device, requires_grad=requires_grad, **kw)

    yield SampleInput(t((7,)), 0, 2, 1)
    yield SampleInput(t((3, 7)), 1, 3, 2, name="step 2")
    yield SampleInput(t((3, 7)), -2, 3, 1, name="whole dim")
    yield SampleInput(t((3, 7)), 1, 0, 1, name="size 0")
    yield SampleInput(t(()), 0, 1, 1, name="0-d")
    yield SampleInput(t((4, 6), noncontiguous=True), 0, 2, 2, name="noncontiguous")


def _view_samples(device, dtype, requires_grad=False):
    import ember

    def t(shape, **kw):
        return make(shape, dtype, device, requires_grad=requires_grad, **kw)

    yield SampleInput(t((2, 3)), (3, 2))
    yield SampleInput(t((2, 3)), (-1,), name="-1")
    yield SampleInput(t((2, 3, 4)), [6, -1], name="list")
    yield SampleInput(t(()), (1, 1), name="0-d")
    yield SampleInput(t((0, 3)), (3, 0), name="empty")
    same_size = {"float32": "int32", "float64": "int64", "int64": "float64", "int32": "float32",
                 "float16": "int16", "int16": "float16", "bool": "int8", "int8": "uint8",
                 "uint8": "bool"}
    if not requires_grad:  # a view as another dtype does not differentiate
        yield SampleInput(t((2, 3)), getattr(ember, same_size[dtype]), name="as a dtype")


def _slice_inverse_samples(device, dtype, requires_grad=False):
    def t(shape):
        return make(shape, dtype, device, requires_grad=requires_grad)

    yield SampleInput(t((3, 4)), t((3, 4)), 1, name="whole dim")
    yield SampleInput(t((3, 4)), t((3, 4)), 0, 0, 100, name="end past the dim")
    yield SampleInput(t((2, 3)), t((2, 3)), -1, None, None, 1, name="all defaults spelled")


def _is_distributed_samples(device, dtype, requires_grad=False):
    yield SampleInput(make((2, 3), dtype, device, requires_grad=requires_grad))
    yield SampleInput(make((), dtype, device, requires_grad=requires_grad), name="0-d")


for _name, _view in (("diagonal_copy", "diagonal"), ("permute_copy", "permute"),
                     ("select_copy", "select"), ("split_with_sizes_copy", "split_with_sizes"),
                     ("squeeze_copy", "squeeze"), ("t_copy", "t"),
                     ("transpose_copy", "transpose"), ("unbind_copy", "unbind"),
                     ("unsqueeze_copy", "unsqueeze"), ("view_as_complex_copy", "view_as_complex"),
                     ("view_as_real_copy", "view_as_real"), ("as_strided_copy", "as_strided")):
    _copy_of(_name, _view)
# split.Tensor takes one size (a list is split_with_sizes)
_copy_of("split_copy", "split", keep=lambda s: isinstance(s.args[0], int))
# PyTorch's detach_copy result requires grad with a NotImplemented history when its input
# does (checked in tests/core/test_view_copy.py), though nothing differentiates it
_copy_of("detach_copy", "detach")
entry("detach_copy").skip["gradcheck"] = (
    "not differentiable; as in PyTorch its result requires grad through a NotImplemented node "
    "(tests/core/test_view_copy.py)")

# PyTorch refuses to differentiate into view_as_complex_copy's complex result (an error;
# tests/core/test_view_copy.py): registered as not differentiable
entry("view_as_complex_copy").skip["gradcheck"] = (
    "PyTorch does not differentiate it: 'view_as_complex_copy does not support automatic "
    "differentiation for outputs with complex dtype.' (tests/core/test_view_copy.py)")

define("alias_copy", _alias_samples, dtypes=ALL)
define("expand_copy", _expand_samples, dtypes=ALL)
define("slice_copy", _slice_samples, dtypes=ALL)
define("unfold_copy", _unfold_samples, dtypes=ALL)
define("view_copy", _view_samples, dtypes=ALL)
define("slice_inverse", _slice_inverse_samples, dtypes=ALL)
define("is_distributed", _is_distributed_samples, dtypes=ALL)
