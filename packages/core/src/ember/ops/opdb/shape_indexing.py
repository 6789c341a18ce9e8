"""Shape and indexing ops: views (reshape, transpose, squeeze, narrow, select, diagonal,
as_strided, ...), splits and joins, copying rearrangements (flip, roll, tile, tril/triu,
diag), index builders (tril_indices, meshgrid, combinations), and the indexing family
(gather/scatter, index_*, masked_*, take/put, nonzero, searchsorted, isin).

Index arguments are fixed lists (so that ``scatter``/``index_copy``/``put`` never write one
place twice, where the result would depend on the order), value tensors are random; the
inputs of ``scatter_reduce``/``index_reduce`` stay away from zero and from ties so that their
gradients are well defined.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from . import ALL, FLOAT_AND_INT, SampleInput, define, make

#: Samples that expose a known bug in Ember are kept out of the run until it is fixed, so
#: that the op's other samples stay checked (a skip would turn the whole check off): each
#: key here names one (``KNOWN_BUGS[key]`` describes it), and ``if _bug(key):`` guards its
#: samples. ``EXPOSE_KNOWN_BUGS = True`` (or a set of keys) runs them; delete an entry, and
#: its guard, once fixed. None is open.
EXPOSE_KNOWN_BUGS: bool | set = False
KNOWN_BUGS: dict[str, str] = {}


def _bug(key: str) -> bool:
    """Whether to run the samples that expose ``KNOWN_BUGS[key]``."""
    assert key in KNOWN_BUGS, key
    return EXPOSE_KNOWN_BUGS is True or (isinstance(EXPOSE_KNOWN_BUGS, set) and
                                         key in EXPOSE_KNOWN_BUGS)


#: every dtype but bool (arithmetic: diff, index_add, scatter_add, ...)
NUMERIC = tuple(d for d in ALL if d != "bool")
#: the dtypes that order (searchsorted, bucketize, isin: PyTorch refuses bool)
ORDERED = FLOAT_AND_INT + ("int16", "int8", "uint8", "float16")


def _ix(values, device, dtype="int64"):
    """An index tensor holding ``values``."""
    import ember

    return ember.tensor(np.asarray(values, dtype=dtype), device=device)


def _mask(values, device):
    import ember

    return ember.tensor(np.asarray(values, dtype=bool), device=device)


def _like(arr, dtype, device):
    """A tensor of ``dtype`` holding the host array ``arr``."""
    import ember

    return ember.tensor(np.asarray(arr).astype(dtype), device=device)


def _scalar(dtype, f=1.5):
    """A Python number of ``dtype``'s kind."""
    if dtype == "bool":
        return True
    if dtype == "uint8":
        f = abs(f)
    return f if dtype.startswith("float") else int(round(f))


def sampler(gen):
    """``samples(device, dtype, requires_grad)`` from ``gen(T, device, dtype, rg)``, where
    ``T(shape, **make_kwargs)`` makes an input of the sample's dtype."""

    def samples(device, dtype, requires_grad=False):
        def T(shape, empty_out=False, transposed=False, **kw):
            # empty_out (a sample whose result is empty) only documents the sample
            kw.setdefault("requires_grad", requires_grad)
            if transposed:  # a leaf laid out as the transpose of a contiguous tensor
                rg = kw.pop("requires_grad")
                base = make(tuple(reversed(shape)), dtype, device, **kw)
                t = base.permute(tuple(reversed(range(len(shape))))).detach()
                return t.requires_grad_(True) if rg and dtype.startswith("float") else t
            return make(shape, dtype, device, **kw)

        yield from gen(T, device, dtype, requires_grad)

    return samples


def _shape_op(name, calls, ref=None, dtypes=ALL, **kw):
    """An op of one input tensor: ``calls`` is a list of ``(shape, args, kwargs)``; a shape
    ``("nc", shape)`` makes a non-contiguous input (every other element of a wider tensor),
    ``("tr", shape)`` a transposed one (no view can flatten it), ``("empty_out", shape)`` one
    whose result is empty."""

    def gen(T, device, dtype, rg):
        for shape, args, kwargs in calls:
            tag = shape[0] if isinstance(shape, tuple) and shape[:1] in (
                ("nc",), ("tr",), ("empty_out",)) else None
            s = shape[1] if tag else shape
            yield SampleInput(T(s, noncontiguous=tag == "nc", transposed=tag == "tr",
                                empty_out=tag == "empty_out"), *args,
                              name=f"{tag or ''} {s} {args} {kwargs}", **kwargs)

    return define(name, sampler(gen), dtypes=dtypes, ref=ref, **kw)


# -- views and reshapes ----------------------------------------------------------------------

def _flatten_ref(a, start_dim=0, end_dim=-1):
    if a.ndim == 0:
        return a.reshape(1)
    s, e = start_dim % a.ndim, end_dim % a.ndim
    return a.reshape(a.shape[:s] + (math.prod(a.shape[s:e + 1]),) + a.shape[e + 1:])


def _unflatten_ref(a, dim, sizes):
    dim %= a.ndim
    n = a.shape[dim]
    known = math.prod(s for s in sizes if s != -1)
    sizes = tuple(n // known if s == -1 else s for s in sizes)
    return a.reshape(a.shape[:dim] + sizes + a.shape[dim + 1:])


def _broadcast_to_ref(a, size):
    lead = len(size) - a.ndim
    return np.broadcast_to(a, tuple(a.shape[i - lead] if s == -1 else s
                                    for i, s in enumerate(size)))


def _squeeze_ref(a, dim=None):
    if dim is None:
        return np.squeeze(a)
    dims = (dim,) if isinstance(dim, int) else dim
    axes = tuple(d % max(a.ndim, 1) for d in dims if a.ndim and a.shape[d] == 1)
    return np.squeeze(a, axes) if axes else a


def _transpose_ref(a, d0, d1):
    return a if a.ndim < 2 else np.swapaxes(a, d0, d1)


def _narrow_ref(a, dim, start, length):
    start = int(start) % a.shape[dim] if int(start) < 0 else int(start)
    return a[(slice(None),) * (dim % a.ndim) + (slice(start, start + length),)]


_shape_op("reshape", [((2, 3, 4), ((6, 4),), {}), ((2, 3, 4), ((-1,),), {}),
                      ((2, 3, 4), ((4, -1, 2),), {}), (("nc", (3, 4)), ((12,),), {}),
                      (("nc", (3, 4)), ((3, 2, 2),), {}), (("tr", (3, 4)), ((2, 6),), {}),
                      (("tr", (2, 3, 4)), ((-1, 2),), {}), ((), ((1, 1),), {}),
                      ((1,), ((),), {}), ((2, 0, 3), ((0, 6),), {}), ((0, 3), ((-1,),), {})],
          ref=lambda a, shape: np.reshape(a, shape))
_shape_op("ravel", [((2, 3, 4), (), {}), (("nc", (3, 4)), (), {}), (("tr", (3, 4)), (), {}),
                    (("nc", (5,)), (), {}), ((), (), {}), ((2, 0), (), {})], ref=np.ravel)
_shape_op("flatten", [((2, 3, 4), (), {}), ((2, 3, 4), (1,), {}), ((2, 3, 4, 2), (1, 2), {}),
                      ((2, 3, 4), (), {"start_dim": -2, "end_dim": -1}),
                      ((2, 3, 4), (1, 1), {}), (("nc", (3, 4)), (), {}),
                      (("nc", (2, 3, 4)), (0, 1), {}), (("tr", (2, 3, 4)), (1,), {}),
                      ((), (), {}), ((2, 0, 3), (1,), {})],
          ref=_flatten_ref)
_shape_op("unflatten", [((2, 12), (1, (3, 4)), {}), ((2, 12), (-1, (2, -1, 3)), {}),
                        ((6, 4), (0, (2, 3)), {}), ((6,), (0, (6,)), {}),
                        (("nc", (3, 4)), (1, (2, 2)), {}), ((2, 0), (1, (0, 5)), {})],
          ref=_unflatten_ref)
_shape_op("broadcast_to", [((3, 1), ((2, 3, 4),), {}), ((1,), ((5,),), {}),
                           ((), ((2, 2),), {}), ((2, 1), ((-1, 4),), {}),
                           ((0, 1), ((0, 3),), {}), (("nc", (3, 4)), ((2, 3, 4),), {})],
          ref=_broadcast_to_ref)
_shape_op("unsqueeze", [((2, 3), (0,), {}), ((2, 3), (-1,), {}), ((2, 3), (1,), {}),
                        ((), (0,), {}), ((), (-1,), {}), ((0, 3), (1,), {}),
                        (("nc", (3, 4)), (2,), {})],
          ref=lambda a, dim: np.expand_dims(a, dim))
_shape_op("squeeze", [((1, 3, 1, 2), (), {}), ((1, 3, 1, 2), (0,), {}),
                      ((1, 3, 1, 2), (-2,), {}), ((1, 3, 1, 2), (1,), {}),
                      ((1, 3, 1, 2), ((0, 2),), {}), ((1, 3, 1, 2), ((1, -1),), {}),
                      ((), (), {}), ((), (0,), {}), ((1, 0), (), {}),
                      (("nc", (1, 4)), (), {"dim": 0}), (("tr", (2, 1, 3)), (1,), {})],
          ref=_squeeze_ref)
_shape_op("transpose", [((2, 3, 4), (0, 1), {}), ((2, 3, 4), (-1, 0), {}),
                        ((2, 3, 4), (1, 1), {}), ((5,), (0, -1), {}), ((), (0, -1), {}),
                        ((0, 3), (0, 1), {}), (("nc", (3, 4)), (1, 0), {}),
                        (("tr", (3, 4)), (0, 1), {})],
          ref=_transpose_ref)
for _name in ("swapaxes", "swapdims"):
    _a0, _a1 = ("axis0", "axis1") if _name == "swapaxes" else ("dim0", "dim1")
    _shape_op(_name, [((2, 3, 4), (0, 2), {}), ((2, 3, 4), (-1, 1), {}), ((5,), (0, 0), {}),
                      ((2, 3), (), {_a0: 1, _a1: 0}), ((0, 3), (0, 1), {}),
                      (("nc", (3, 4)), (1, 0), {})],
              ref=lambda a, *dims, **kw: _transpose_ref(a, *(dims or tuple(kw.values()))))
_shape_op("t", [((2, 3), (), {}), ((3,), (), {}), ((), (), {}), ((0, 3), (), {}),
                (("nc", (3, 4)), (), {})], ref=lambda a: a.T)
_shape_op("adjoint", [((2, 3), (), {}), ((2, 3, 4), (), {}), ((0, 3), (), {}),
                      (("nc", (3, 4)), (), {})], ref=lambda a: np.swapaxes(a, -1, -2))
_shape_op("permute", [((2, 3, 4), ((2, 0, 1),), {}), ((2, 3, 4), ((-1, 0, 1),), {}),
                      ((2, 3), ((0, 1),), {}), ((), ((),), {}), ((2, 0, 3), ((1, 2, 0),), {}),
                      (("nc", (3, 4)), ((1, 0),), {}), (("tr", (2, 3, 4)), ((0, 2, 1),), {})],
          ref=lambda a, dims: np.transpose(a, dims))
_shape_op("movedim", [((2, 3, 4, 5), (0, -1), {}), ((2, 3, 4, 5), ((0, 1), (-1, 0)), {}),
                      ((2, 3, 4), (1, 1), {}), ((2, 3, 4), ([2], [0]), {}),
                      ((2, 0, 3), (0, 2), {}), (("nc", (3, 4)), (0, 1), {})],
          ref=lambda a, s, d: np.moveaxis(a, s, d))


def _narrow_like(name):
    def gen(T, device, dtype, rg):
        yield SampleInput(T((4, 5)), 0, 1, 2)
        yield SampleInput(T((4, 5)), -1, -3, 2, name="negative dim and start")
        yield SampleInput(T((4, 5), empty_out=True), 1, 2, 0, name="length 0")
        yield SampleInput(T((4, 5), empty_out=True), 1, 5, 0, name="start at the end")
        yield SampleInput(T((2, 3, 4)), 1, 0, 3, name="whole dim")
        yield SampleInput(T((4, 5), noncontiguous=True), 1, 1, 3, name="noncontiguous")
        yield SampleInput(T((0, 3)), 1, 1, 2, name="empty")
        yield SampleInput(T((4, 5)), 0, _ix(1, device), 2, name="0-d tensor start")

    define(name, sampler(gen), dtypes=ALL, ref=_narrow_ref)


_narrow_like("narrow")
_narrow_like("narrow_copy")


def _select_samples(T, device, dtype, rg):
    yield SampleInput(T((3, 4)), 0, 1)
    yield SampleInput(T((3, 4)), -1, -1, name="negative dim and index")
    yield SampleInput(T((2, 3, 4)), 1, 2)
    yield SampleInput(T((5,)), 0, 3, name="1-D: a 0-d view")
    yield SampleInput(T((2, 0)), 0, 1, name="empty")
    yield SampleInput(T((3, 4), noncontiguous=True), 1, 2, name="noncontiguous")


define("select", sampler(_select_samples), dtypes=ALL,
       ref=lambda a, dim, i: np.take(a, i, axis=dim))


def _unbind_samples(T, device, dtype, rg):
    yield SampleInput(T((3, 4)))
    yield SampleInput(T((3, 4)), 1)
    yield SampleInput(T((2, 3, 4)), dim=-1)
    yield SampleInput(T((5,)), name="1-D: 0-d views")
    yield SampleInput(T((2, 0)), 1, name="no parts")
    yield SampleInput(T((3, 4), noncontiguous=True), -1, name="noncontiguous")


define("unbind", sampler(_unbind_samples), dtypes=ALL,
       ref=lambda a, dim=0: tuple(np.moveaxis(a, dim, 0)))


# -- splits ----------------------------------------------------------------------------------

def _split_samples(sizes_only=False):
    def gen(T, device, dtype, rg):
        if not sizes_only:
            yield SampleInput(T((5, 4)), 2, name="uneven")
            yield SampleInput(T((5, 4)), 3, -1, name="dim -1")
            yield SampleInput(T((5, 4)), 10, name="one part")
            yield SampleInput(T((0, 3)), 2, name="empty dim")
            yield SampleInput(T((3, 6), noncontiguous=True), 2, 1, name="noncontiguous")
        yield SampleInput(T((5, 4)), [1, 4], name="sizes")
        yield SampleInput(T((5, 4), empty_out=True), [2, 0, 2], 1, name="with an empty part")
        yield SampleInput(T((2, 5)), (3, 2), dim=-1, name="tuple sizes")
        yield SampleInput(T((3, 6), noncontiguous=True), [4, 2], 1, name="noncontiguous")

    return sampler(gen)


define("split", _split_samples(), dtypes=ALL)
define("split_with_sizes", _split_samples(sizes_only=True), dtypes=ALL)


def _tensor_split_samples(T, device, dtype, rg):
    yield SampleInput(T((7, 3)), 3, name="sections")
    yield SampleInput(T((7, 3)), 5, 0, name="more sections than a size divides")
    yield SampleInput(T((2, 7)), [1, 4], 1, name="indices")
    yield SampleInput(T((2, 7)), (-2,), -1, name="negative index")
    yield SampleInput(T((7,), empty_out=True), [2, 10], name="index past the end")
    yield SampleInput(T((7,), empty_out=True), [4, 1], name="descending indices")
    yield SampleInput(T((2, 7)), sections=3, dim=1, name="sections=")
    yield SampleInput(T((7, 2)), indices=[2, 5], name="indices=")
    yield SampleInput(T((7,)), tensor_indices_or_sections=_ix([3], device),
                      name="tensor_indices_or_sections=")
    yield SampleInput(T((7,)), _ix(3, device), name="0-d tensor sections")
    yield SampleInput(T((7,)), _ix([1, 5], device), name="tensor indices")
    yield SampleInput(T((3, 6), noncontiguous=True), 4, 1, name="noncontiguous")
    yield SampleInput(T((0, 2)), 2, name="empty")


define("tensor_split", sampler(_tensor_split_samples), dtypes=ALL)


def _chunk_samples(T, device, dtype, rg):
    yield SampleInput(T((5, 4)), 3)
    yield SampleInput(T((6, 4)), 4, name="fewer chunks than asked")
    yield SampleInput(T((2, 5)), 2, 1)
    yield SampleInput(T((2, 5)), 7, dim=-1, name="more chunks than elements")
    yield SampleInput(T((0, 3)), 2, name="empty dim")
    yield SampleInput(T((3, 6), noncontiguous=True), 3, 1, name="noncontiguous")


define("chunk", sampler(_chunk_samples), dtypes=ALL)


def _hvd_split(name, dim_shapes):
    def gen(T, device, dtype, rg):
        for shape in dim_shapes:
            yield SampleInput(T(shape), 2, name=f"{shape} sections")
            yield SampleInput(T(shape), [1, 3], name=f"{shape} indices")
        yield SampleInput(T(dim_shapes[0], noncontiguous=True), 2, name="noncontiguous")
        yield SampleInput(T(dim_shapes[0]), sections=2, name="sections=")
        yield SampleInput(T(dim_shapes[0]), indices=[3, 1], name="indices=, descending")

    define(name, sampler(gen), dtypes=ALL)


_hvd_split("hsplit", [(3, 4), (4,), (2, 4, 3)])
_hvd_split("vsplit", [(4, 3), (4, 2, 3)])
_hvd_split("dsplit", [(2, 3, 4), (1, 2, 4, 2)])


def _unsafe_samples(kind):
    def gen(T, device, dtype, rg):
        if kind == "sizes":
            yield SampleInput(T((5, 4)), [1, 4])
            yield SampleInput(T((5, 4), empty_out=True), [2, 0, 2], 1, name="with an empty part")
            yield SampleInput(T((3, 6), noncontiguous=True), (4, 2), dim=1,
                              name="noncontiguous")
        else:
            yield SampleInput(T((5, 4)), 2)
            yield SampleInput(T((5, 4)), 3, -1, name="dim -1")
            yield SampleInput(T((3, 6), noncontiguous=True), 2, dim=1, name="noncontiguous")
            yield SampleInput(T((0, 3)), 2, name="empty dim")

    return sampler(gen)


define("unsafe_split", _unsafe_samples("size"), dtypes=ALL)
define("unsafe_split_with_sizes", _unsafe_samples("sizes"), dtypes=ALL)
define("unsafe_chunk", _unsafe_samples("chunks"), dtypes=ALL)


# -- joins -----------------------------------------------------------------------------------

def _other_dtype(dtype):
    return "float64" if dtype != "float64" else "float32"


def _cat_samples(T, device, dtype, rg):
    yield SampleInput([T((2, 3)), T((4, 3))], name="dim 0")
    yield SampleInput([T((2, 3)), T((2, 1)), T((2, 2))], 1, name="three, dim 1")
    yield SampleInput([T((2, 3, 2)), T((2, 3, 1))], -1, name="dim -1")
    yield SampleInput((T((2, 3)),), name="one tensor")
    yield SampleInput([T((2, 3)), T((0,)), T((1, 3))], name="legacy empty 1-D is skipped")
    yield SampleInput([T((0, 3)), T((2, 3))], name="empty")
    yield SampleInput([T((3, 2), noncontiguous=True), T((3, 4), transposed=True)], 1,
                      name="noncontiguous")
    yield SampleInput([T((2, 3)), T((2, 2))], axis=1, name="axis=")
    yield SampleInput([T((2, 3)), make((1, 3), _other_dtype(dtype), device,
                                       requires_grad=rg)], name="promotion")


def _cat_ref(ts, dim=0, axis=None):
    dim = dim if axis is None else axis
    ts = [t for t in ts if not (t.ndim == 1 and t.size == 0)] or ts
    dt = np.result_type(*ts)
    return np.concatenate([t.astype(dt) for t in ts], axis=dim)


define("cat", sampler(_cat_samples), dtypes=ALL, ref=_cat_ref)


def _stack_samples(T, device, dtype, rg):
    yield SampleInput([T((2, 3)), T((2, 3))])
    yield SampleInput([T((2, 3)), T((2, 3)), T((2, 3))], 1)
    yield SampleInput([T((2, 3)), T((2, 3))], -1, name="dim -1")
    yield SampleInput([T(()), T(())], name="0-d")
    yield SampleInput([T((0, 3)), T((0, 3))], 1, name="empty")
    yield SampleInput([T((3, 2), noncontiguous=True), T((3, 2))], 2, name="noncontiguous")
    yield SampleInput((T((2,)), make((2,), _other_dtype(dtype), device, requires_grad=rg)),
                      name="promotion")


def _promoted(f):
    """A NumPy join as the reference (NumPy promotes the same way on these samples)."""
    return lambda ts, *args: f([np.asarray(t) for t in ts], *args)


define("stack", sampler(_stack_samples), dtypes=ALL, ref=_promoted(np.stack))


def _stack_like_samples(shapes_list):
    def gen(T, device, dtype, rg):
        for shapes in shapes_list:
            yield SampleInput([T(s) for s in shapes], name=str(shapes))
        yield SampleInput([T((3, 2), noncontiguous=True), T((3, 2))], name="noncontiguous")
        yield SampleInput([T(shapes_list[0][0]), make(shapes_list[0][-1], _other_dtype(dtype),
                                                      device, requires_grad=rg)],
                          name="promotion")

    return sampler(gen)


define("hstack", _stack_like_samples([((2, 3), (2, 1)), ((3,), (2,)), ((), (2,)),
                                      ((2, 3, 1), (2, 2, 1))]), dtypes=ALL,
       ref=_promoted(np.hstack))
define("vstack", _stack_like_samples([((2, 3), (1, 3)), ((3,), (3,)), ((3,), (2, 3)),
                                      ((), ()), ((2, 3, 1), (1, 3, 1))]), dtypes=ALL,
       ref=_promoted(np.vstack))
define("dstack", _stack_like_samples([((2, 3), (2, 3)), ((3,), (3,)), ((), ()),
                                      ((2, 3, 1), (2, 3, 2))]), dtypes=ALL,
       ref=_promoted(np.dstack))
define("column_stack", _stack_like_samples([((3,), (3, 2)), ((3,), (3,)), ((), ()),
                                            ((2, 3), (2, 1))]), dtypes=ALL,
       ref=_promoted(np.column_stack))


def _atleast_samples(T, device, dtype, rg):
    for shape in ((), (3,), (2, 3), (2, 3, 4), (0,)):
        yield SampleInput(T(shape), name=str(shape))
    yield SampleInput(T(()), T((3,)), T((2, 3)), T((1, 2, 3, 1)), name="several")
    yield SampleInput([T(()), T((2,))], name="a list")
    yield SampleInput(T((3, 2), noncontiguous=True), name="noncontiguous")


for _name in ("atleast_1d", "atleast_2d", "atleast_3d"):
    define(_name, sampler(_atleast_samples), dtypes=ALL)


def _block_diag_samples(T, device, dtype, rg):
    yield SampleInput(T((2, 2)), T((3,)), T(()), name="2-D, 1-D, 0-d")
    yield SampleInput(T((2, 3)), T((1, 2)))
    yield SampleInput(T((2, 3)), name="one")
    yield SampleInput(T((0, 2)), T((2, 0)), T((1, 1)), name="empty blocks")
    yield SampleInput(T((3, 2), noncontiguous=True), T((2, 2)), name="noncontiguous")
    yield SampleInput(T((2, 2)), make((1, 2), _other_dtype(dtype), device, requires_grad=rg),
                      name="promotion")


define("block_diag", sampler(_block_diag_samples), dtypes=ALL)


# -- broadcasting ----------------------------------------------------------------------------

def _broadcast_shapes_samples(device, dtype, requires_grad=False):
    yield SampleInput((2, 1), (1, 3))
    yield SampleInput((5,), (3, 1), ())
    yield SampleInput(3, (2, 1), name="an int")
    yield SampleInput((0, 1), (3,), name="empty")
    yield SampleInput((4, 1, 2), name="one shape")


define("broadcast_shapes", _broadcast_shapes_samples, dtypes=("float32",),
       ref=lambda *shapes: np.broadcast_shapes(*shapes),
       skip={"torch": "a Size: test_forward_matches_torch compares tensors only; the ref "
                      "(np.broadcast_shapes) checks it",
             "testdev": "shapes in, a shape out: no tensor to place on a device",
             "strict": "shapes in, a shape out: no tensor to place on a device"})


def _broadcast_tensors_samples(T, device, dtype, rg):
    yield SampleInput(T((2, 1)), T((3,)))
    yield SampleInput(T(()), T((2, 3)), name="0-d")
    yield SampleInput(T((0, 1)), T((3,)), T((1, 1, 1)), name="empty, three")
    yield SampleInput(T((3, 4), noncontiguous=True), T((4,)), name="noncontiguous")
    yield SampleInput(T((2, 3)), name="one")


define("broadcast_tensors", sampler(_broadcast_tensors_samples), dtypes=ALL,
       ref=lambda *arrs: tuple(np.broadcast_arrays(*arrs)))


def _meshgrid_samples(T, device, dtype, rg):
    for indexing in ("ij", "xy"):
        yield SampleInput(T((3,)), T((4,)), indexing=indexing, name=indexing)
        yield SampleInput(T((2,)), T((3,)), T(()), indexing=indexing, name=f"three {indexing}")
        yield SampleInput(T((3,)), indexing=indexing, name=f"one {indexing}")
        yield SampleInput([T((3,)), T((0,))], indexing=indexing, name=f"a list {indexing}")


def _meshgrid_ref(*arrs, indexing):
    if len(arrs) == 1 and isinstance(arrs[0], list):
        arrs = arrs[0]
    return tuple(np.meshgrid(*arrs, indexing=indexing))


define("meshgrid", sampler(_meshgrid_samples), dtypes=ALL, ref=_meshgrid_ref)


def _cartesian_samples(T, device, dtype, rg):
    yield SampleInput(T((2,)), T((3,)))
    yield SampleInput(T((2,)), T((1,)), T((3,)), name="three")
    yield SampleInput(T((3,)), name="one: returned as it is")
    yield SampleInput(T((2,)), T((0,)), name="empty")


def _cartesian_ref(*arrs):
    if len(arrs) == 1:
        return arrs[0]
    return np.array(list(itertools.product(*arrs)), dtype=arrs[0].dtype).reshape(-1, len(arrs))


define("cartesian_prod", sampler(_cartesian_samples), dtypes=ALL, ref=_cartesian_ref)


def _combinations_samples(T, device, dtype, rg):
    yield SampleInput(T((4,)))
    yield SampleInput(T((4,)), 3)
    yield SampleInput(T((3,)), r=2, with_replacement=True)
    yield SampleInput(T((3,), empty_out=True), 4, name="r > n: no rows")
    if not rg:  # an empty result without history, as in PyTorch
        yield SampleInput(T((3,)), 0, name="r = 0")


def _combinations_ref(a, r=2, with_replacement=False):
    if r == 0:
        return np.empty((0,), a.dtype)
    gen = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    return np.array(list(gen(a.tolist(), r)), dtype=a.dtype).reshape(-1, r)


define("combinations", sampler(_combinations_samples), dtypes=ALL, ref=_combinations_ref)


# -- copying rearrangements ------------------------------------------------------------------

_shape_op("tile", [((2, 3), ((2,),), {}), ((2, 3), ((2, 2),), {}), ((2, 3), ((2, 1, 2),), {}),
                   ((), ((3,),), {}), (("empty_out", (2, 3)), ((0, 1),), {}),
                   ((0, 2), ((2, 2),), {}),
                   (("nc", (3, 2)), ((1, 2),), {})],
          ref=lambda a, dims: np.tile(a, dims))
_shape_op("flip", [((2, 3, 4), ((0,),), {}), ((2, 3, 4), ((0, 2),), {}),
                   ((2, 3, 4), ((-1,),), {}), ((2, 3), ((),), {}), ((), ((),), {}),
                   ((0, 3), ((1,),), {}), (("nc", (3, 4)), ((0, 1),), {}),
                   (("tr", (3, 4)), ((1,),), {})],
          ref=lambda a, dims: np.flip(a, dims) if dims else a)
_shape_op("fliplr", [((2, 3), (), {}), ((2, 3, 4), (), {}), ((0, 3), (), {}),
                     (("nc", (3, 4)), (), {})], ref=np.fliplr)
_shape_op("flipud", [((3,), (), {}), ((2, 3), (), {}), ((0, 3), (), {}),
                     (("nc", (3, 4)), (), {})], ref=np.flipud)
_shape_op("roll", [((2, 3, 4), (1,), {}), ((2, 3, 4), (-5,), {}), ((2, 3, 4), (2, 1), {}),
                   ((2, 3, 4), ((1, -2), (0, -1)), {}), ((2, 3), (7,), {"dims": 1}),
                   ((0, 3), (1, 1), {}), (("nc", (3, 4)), (1, 0), {}),
                   (("tr", (3, 4)), (2,), {})],
          ref=lambda a, shifts, dims=None: np.roll(a, shifts, dims))
_shape_op("rot90", [((2, 3), (), {}), ((2, 3), (2,), {}), ((2, 3), (-1,), {}),
                    ((2, 3), (5,), {}), ((2, 3, 4), (1, (1, 2)), {}),
                    ((2, 3, 4), (), {"k": 3, "dims": (-1, 0)}), ((0, 3), (1,), {}),
                    (("nc", (3, 4)), (1,), {})],
          ref=lambda a, k=1, dims=(0, 1): np.rot90(a, k, dims))

_TRI_CALLS = [((4, 5), (), {}), ((4, 5), (1,), {}), ((4, 5), (-1,), {}),
              ((4, 5), (), {"diagonal": 10}), ((4, 5), (-10,), {}), ((2, 3, 3), (), {}),
              ((0, 3), (), {}), (("nc", (3, 4)), (1,), {}), (("tr", (3, 4)), (-1,), {})]
_shape_op("tril", _TRI_CALLS, ref=lambda a, diagonal=0: np.tril(a, diagonal))
_shape_op("triu", _TRI_CALLS, ref=lambda a, diagonal=0: np.triu(a, diagonal))


def _repeat_interleave_samples(T, device, dtype, rg):
    yield SampleInput(T((3,)), 2)
    yield SampleInput(T((2, 3)), 2, name="flattened")
    yield SampleInput(T((2, 3)), _ix([1, 2], device), 0, name="tensor repeats")
    yield SampleInput(T((2, 3)), _ix([0, 2, 1], device), dim=-1, name="a zero repeat")
    yield SampleInput(T((2, 3)), _ix(2, device), 1, name="0-d tensor repeats")
    yield SampleInput(T((2, 3)), 3, 0, output_size=6, name="output_size")
    yield SampleInput(T(()), 3, name="0-d input")
    yield SampleInput(T((0, 2)), 2, 0, name="empty")
    yield SampleInput(T((3, 4), noncontiguous=True), 2, 1, name="noncontiguous")
    if dtype in ("int32", "int64"):
        yield SampleInput(_like([1, 0, 3], dtype, device), name="repeats only")


def _repeat_interleave_ref(a, repeats=None, dim=None, output_size=None):
    if repeats is None:
        return np.repeat(np.arange(a.size, dtype=a.dtype), a)
    if dim is None:
        a, dim = a.reshape(-1), 0
    if isinstance(repeats, np.ndarray) and repeats.ndim == 0:
        repeats = int(repeats)
    return np.repeat(a, repeats, axis=dim)


define("repeat_interleave", sampler(_repeat_interleave_samples), dtypes=ALL,
       ref=_repeat_interleave_ref)


def _diff_samples(T, device, dtype, rg):
    yield SampleInput(T((5,)))
    yield SampleInput(T((2, 5)), 1, 0, name="dim 0")
    yield SampleInput(T((2, 5)), 2, name="n=2")
    yield SampleInput(T((2, 5)), 0, name="n=0")
    yield SampleInput(T((3,), empty_out=True), 4, name="n > size: empty")
    yield SampleInput(T((2, 4)), 1, -1, T((2, 1)), T((2, 2)), name="prepend, append")
    yield SampleInput(T((2, 4)), dim=0, append=T((1, 4)), name="append")
    yield SampleInput(T((0, 3)), dim=0, name="empty")
    yield SampleInput(T((3, 4), noncontiguous=True), name="noncontiguous")


define("diff", sampler(_diff_samples), dtypes=ALL,
       ref=lambda a, n=1, dim=-1, prepend=None, append=None: np.diff(
           a, n, dim, **({"prepend": prepend} if prepend is not None else {}),
           **({"append": append} if append is not None else {})))


# -- diagonals -------------------------------------------------------------------------------

_shape_op("diagonal", [((3, 4), (), {}), ((3, 4), (1,), {}), ((3, 4), (-1,), {}),
                       (("empty_out", (3, 4)), (5,), {}), ((2, 3, 4), (0, 1, 2), {}),
                       ((2, 3, 4), (), {"offset": 1, "dim1": -1, "dim2": 0}),
                       ((0, 3), (), {}), (("nc", (3, 4)), (), {}),
                       (("tr", (3, 4)), (1,), {})],
          ref=lambda a, offset=0, dim1=0, dim2=1: np.diagonal(a, offset, dim1, dim2))
_shape_op("diag_embed", [((3,), (), {}), ((2, 3), (1,), {}), ((2, 3), (-1, 0, 2), {}),
                         ((2, 3), (), {"offset": 2, "dim1": -1, "dim2": 0}),
                         ((2, 0), (), {}), (("nc", (3, 4)), (), {})])
_shape_op("diag", [((3,), (), {}), ((3,), (1,), {}), ((3,), (-2,), {}), ((3, 4), (), {}),
                   ((3, 4), (1,), {}), ((3, 4), (-2,), {}), ((0,), (), {}),
                   (("nc", (3, 4)), (), {})],
          ref=lambda a, diagonal=0: np.diag(a, diagonal))
_shape_op("diagflat", [((3,), (), {}), ((2, 2), (), {}), ((3,), (1,), {}), ((3,), (-2,), {}),
                       ((), (), {}), (("nc", (2, 2)), (), {})],
          ref=lambda a, offset=0: np.diagflat(a, offset))


def _diagonal_scatter_samples(T, device, dtype, rg):
    yield SampleInput(T((3, 4)), T((3,)))
    yield SampleInput(T((3, 4)), T((3,)), 1, name="offset 1")
    yield SampleInput(T((3, 4)), T((2,)), -1, name="offset -1")
    yield SampleInput(T((2, 3, 4)), T((2, 3)), 0, 1, 2, name="dims 1, 2")
    yield SampleInput(T((2, 3, 4)), T((3, 2)), offset=0, dim1=-1, dim2=0, name="dims -1, 0")
    yield SampleInput(T((3, 4), noncontiguous=True), T((3,)), name="noncontiguous")


def _select_scatter_samples(T, device, dtype, rg):
    yield SampleInput(T((3, 4)), T((4,)), 0, 1)
    yield SampleInput(T((3, 4)), T((3,)), 1, -1, name="negative index")
    yield SampleInput(T((2, 3, 4)), T((2, 4)), -2, 0, name="negative dim")
    yield SampleInput(T((5,)), T(()), 0, 2, name="1-D")
    yield SampleInput(T((3, 4), noncontiguous=True), T((4,)), 0, 2, name="noncontiguous")


def _slice_scatter_samples(T, device, dtype, rg):
    yield SampleInput(T((6, 4)), T((2, 4)), 0, 1, 3)
    yield SampleInput(T((6, 4)), T((6, 2)), 1, step=2, name="step 2")
    yield SampleInput(T((6, 4)), T((6, 4)), name="everything")
    yield SampleInput(T((6, 4)), T((3, 4)), start=-3, name="negative start")
    yield SampleInput(T((6, 4)), T((6, 0)), 1, 2, 2, name="empty slice")
    yield SampleInput(T((3, 4), noncontiguous=True), T((3, 2)), 1, 0, 4, 2,
                      name="noncontiguous")


define("diagonal_scatter", sampler(_diagonal_scatter_samples), dtypes=ALL)
define("select_scatter", sampler(_select_scatter_samples), dtypes=ALL)
define("slice_scatter", sampler(_slice_scatter_samples), dtypes=ALL)


# -- as_strided ------------------------------------------------------------------------------

def _as_strided_samples(T, device, dtype, rg):
    # contiguous inputs: the oracle sees a contiguous copy, so only their storage is shared
    yield SampleInput(T((4, 5)), (3, 3), (5, 1), name="a block")
    yield SampleInput(T((4, 5)), (2, 3), (1, 2), 1, name="storage_offset")
    yield SampleInput(T((2, 3)), (2, 3), (1, 2), name="same shape, other strides")
    yield SampleInput(T((10,)), (4, 3), (2, 1), name="overlapping windows")
    yield SampleInput(T((6,)), (2, 3), (0, 1), name="stride 0")
    yield SampleInput(T((3,)), (), (), 2, name="0-d")
    yield SampleInput(T((3, 2), empty_out=True), (0, 2), (2, 1), name="empty")


def _as_strided_scatter_samples(T, device, dtype, rg):
    yield SampleInput(T((4, 5)), T((2, 2)), (2, 2), (1, 2), 1)
    yield SampleInput(T((4, 5)), T((3, 3)), (3, 3), (5, 1), name="a block")
    yield SampleInput(T((2, 3)), T((2, 3)), (2, 3), (1, 2), name="all, other strides")
    yield SampleInput(T((6,)), T(()), (), (), 4, name="0-d")
    yield SampleInput(T((3, 2)), T((0, 2)), (0, 2), (2, 1), name="empty")


define("as_strided", sampler(_as_strided_samples), dtypes=ALL)
define("as_strided_scatter", sampler(_as_strided_scatter_samples), dtypes=ALL)


# -- predicates and in-place resizing --------------------------------------------------------

_BOOL_RESULT = "a Python bool: test_forward_matches_torch compares tensors only; the ref checks it"


def _is_same_size_samples(T, device, dtype, rg):
    yield SampleInput(T((2, 3)), T((2, 3)), name="same")
    yield SampleInput(T((2, 3)), T((3, 2)), name="transposed shape")
    yield SampleInput(T(()), T((1,)), name="0-d and 1-D")
    yield SampleInput(T((2, 3)), make((2, 3), _other_dtype(dtype), device), name="dtypes")


define("is_same_size", sampler(_is_same_size_samples), dtypes=ALL,
       ref=lambda a, b: a.shape == b.shape,
       skip={"torch": _BOOL_RESULT})


def _is_inference_samples(T, device, dtype, rg):
    yield SampleInput(T((2, 3)))
    yield SampleInput(T(()))


define("is_inference", sampler(_is_inference_samples), dtypes=ALL, ref=lambda a: False,
       skip={"torch": _BOOL_RESULT})


def _resize_as_samples(T, device, dtype, rg):
    # shrinking or same-numel only: growing leaves uninitialised memory in PyTorch; the input
    # never requires grad: resizing refuses a tensor that does (PyTorch too)
    def U(shape):
        return T(shape, requires_grad=False)

    yield SampleInput(U((2, 3)), T((3, 2)), name="same numel")
    yield SampleInput(U((2, 3)), T((4,)), name="fewer elements")
    yield SampleInput(U((2, 3)), T(()), name="0-d template")
    yield SampleInput(U((2, 3)), T((0, 3)), name="empty template")


def _resize_as_ref(a, template):
    return a.reshape(-1)[:template.size].reshape(template.shape)


define("resize_as_", sampler(_resize_as_samples), dtypes=ALL, ref=_resize_as_ref)


# -- index builders --------------------------------------------------------------------------

def _tri_indices_samples(device, dtype, requires_grad=False):
    yield SampleInput(3, 3)
    yield SampleInput(4, 3, 1, name="offset 1")
    yield SampleInput(3, 5, -1, name="offset -1")
    yield SampleInput(3, 4, offset=-10, name="nothing")
    yield SampleInput(0, 0, name="empty")


for _name, _np_fn in (("tril_indices", np.tril_indices), ("triu_indices", np.triu_indices)):
    define(_name, _tri_indices_samples, dtypes=("int64",),
           ref=lambda row, col, offset=0, f=_np_fn: np.stack(f(row, offset, col)).reshape(2, -1),
           skip={"testdev": "a factory (no tensor input): the generic test only moves tensors",
                 "strict": "a factory (no tensor input): the generic test only moves tensors"})


# -- gather / scatter ------------------------------------------------------------------------

def _gather_ref(a, dim, index, sparse_grad=False):
    if a.ndim == 0:
        return a.reshape(1)[index.reshape(-1)].reshape(index.shape)
    dim %= a.ndim
    part = a[tuple(slice(None) if k == dim else slice(0, n) for k, n in enumerate(index.shape))]
    return np.take_along_axis(part, index, dim)


def _gather_samples(T, device, dtype, rg):
    yield SampleInput(T((3, 4)), 0, _ix([[0, 2, 1, 2], [1, 0, 0, 2]], device))
    yield SampleInput(T((3, 4)), 1, _ix([[3, 0], [1, 1], [2, 3]], device), name="dim 1")
    yield SampleInput(T((3, 4)), -1, _ix([[1], [0]], device), name="smaller index")
    yield SampleInput(T((2, 3, 2)), 1, _ix(np.array([0, 2, 1, 1, 0, 2]).reshape(2, 3, 1),
                                           device), name="3-D")
    yield SampleInput(T(()), 0, _ix(0, device), name="0-d")
    yield SampleInput(T((3, 4), empty_out=True), 0, _ix(np.zeros((0, 4)), device),
                      name="empty index")
    yield SampleInput(T((3, 4), noncontiguous=True), 1, _ix([[0, 3], [2, 2], [1, 0]], device),
                      sparse_grad=False, name="noncontiguous")


define("gather", sampler(_gather_samples), dtypes=ALL, ref=_gather_ref)

# per column, distinct rows: scatter writes every place at most once
_SCATTER_IDX = [[0, 1, 2, 0, 1], [1, 2, 0, 2, 0]]


def _scatter_samples(T, device, dtype, rg):
    yield SampleInput(T((3, 5)), 0, _ix(_SCATTER_IDX, device), T((2, 5)))
    yield SampleInput(T((5, 3)), 1, _ix([[2, 0], [1, 2], [0, 1], [1, 0], [2, 1]], device),
                      T((5, 3)), name="dim 1, larger src")
    yield SampleInput(T((3, 5)), -2, _ix(_SCATTER_IDX, device), _scalar(dtype),
                      name="a number")
    yield SampleInput(T((3, 5)), 0, _ix(_SCATTER_IDX, device), value=_scalar(dtype, 2.5),
                      name="value=")
    yield SampleInput(T(()), 0, _ix(0, device), T(()), name="0-d")
    yield SampleInput(T((3, 5), noncontiguous=True), 0, _ix(_SCATTER_IDX, device),
                      T((2, 5), noncontiguous=True), name="noncontiguous")
    yield SampleInput(T((3, 5)), 0, _ix(np.zeros((0, 5)), device), T((0, 5)),
                      name="empty index")
    # PyTorch has no derivative for the legacy reductions
    if not rg:
        dup = _ix([[0, 0, 1, 1, 2], [0, 1, 1, 2, 2]], device)
        yield SampleInput(T((3, 5)), 0, dup, T((2, 5)), reduce="add", name="reduce add")
        yield SampleInput(T((3, 5)), 0, dup, T((2, 5)), reduce="multiply",
                          name="reduce multiply")
        yield SampleInput(T((3, 5)), 0, dup, _scalar(dtype, 2), reduce="multiply",
                          name="a number, reduce multiply")


define("scatter", sampler(_scatter_samples), dtypes=ALL)


def _scatter_add_samples(T, device, dtype, rg):
    dup = [[0, 0, 1, 1, 2], [0, 1, 1, 2, 2]]
    yield SampleInput(T((3, 5)), 0, _ix(dup, device), T((2, 5)), name="repeated indices")
    yield SampleInput(T((5, 3)), 1, _ix([[2, 2], [1, 2], [0, 0], [1, 0], [2, 1]], device),
                      T((5, 3)), name="dim 1, larger src")
    yield SampleInput(T((3, 5)), -2, _ix(_SCATTER_IDX, device), T((2, 5)), name="dim -2")
    yield SampleInput(T(()), 0, _ix(0, device), T(()), name="0-d")
    yield SampleInput(T((3, 5), noncontiguous=True), 0, _ix(dup, device), T((2, 5)),
                      name="noncontiguous")


define("scatter_add", sampler(_scatter_add_samples), dtypes=ALL)


def _reduce_samples(kind):
    """``scatter_reduce`` (``kind='scatter'``) or ``index_reduce`` samples: repeated indices,
    each reduction with and without ``include_self``; values in [0.5, 2) (no zeros for prod,
    no ties for amax/amin)."""

    def gen(T, device, dtype, rg):
        reduces = ("sum", "prod", "mean", "amax", "amin") if kind == "scatter" else \
            ("prod", "mean", "amax", "amin")
        if dtype == "bool":  # PyTorch has no bool mean
            reduces = tuple(r for r in reduces if r != "mean")
        for r in reduces:
            lo, hi = (0.5, 2) if dtype.startswith("float") else (1, 4)
            for include_self in (True, False):
                name = f"{r} include_self={include_self}"
                if kind == "scatter":
                    yield SampleInput(T((3, 4), low=lo, high=hi),
                                      0, _ix([[0, 0, 2, 1], [0, 1, 2, 1]], device),
                                      T((2, 4), low=lo, high=hi), r,
                                      include_self=include_self, name=name)
                else:
                    yield SampleInput(T((4, 3), low=lo, high=hi), 0,
                                      _ix([0, 3, 0, 1], device), T((4, 3), low=lo, high=hi), r,
                                      include_self=include_self, name=name)
        if kind == "scatter":
            yield SampleInput(T((3, 4), low=0.5, high=2), -1, _ix([[0, 0], [3, 1]], device),
                              T((2, 3), low=0.5, high=2), "sum", name="dim -1, larger src")
            yield SampleInput(T((3, 4), low=0.5, high=2, noncontiguous=True), 0,
                              _ix([[0, 0, 2, 1]], device), T((1, 4), low=0.5, high=2), "amax",
                              name="noncontiguous")
        else:
            yield SampleInput(T((3, 4), low=0.5, high=2), -1, _ix([1, 1, 3], device),
                              T((3, 3), low=0.5, high=2), "mean", name="dim -1")
            yield SampleInput(T((3, 4), low=0.5, high=2, noncontiguous=True), 1,
                              _ix([0, 0], device, "int32"), T((3, 2), low=0.5, high=2),
                              "amin", include_self=False, name="noncontiguous, int32 index")

    return sampler(gen)


define("scatter_reduce", _reduce_samples("scatter"), dtypes=ALL)
define("index_reduce", _reduce_samples("index"), dtypes=NUMERIC)


# -- index_* ---------------------------------------------------------------------------------

def _index_select_samples(T, device, dtype, rg):
    yield SampleInput(T((5, 3)), 0, _ix([0, 4, 2, 2], device))
    yield SampleInput(T((5, 3)), 1, _ix([2, 0], device), name="dim 1")
    yield SampleInput(T((2, 3, 4)), -1, _ix([3, 0, 3], device, "int32"), name="int32 index")
    yield SampleInput(T((4,)), 0, _ix(1, device), name="0-d index")
    yield SampleInput(T(()), 0, _ix([0], device), name="0-d input")
    yield SampleInput(T(()), -1, _ix(0, device), name="0-d input, 0-d index")
    yield SampleInput(T((5, 3), empty_out=True), 0, _ix([], device), name="empty index")
    yield SampleInput(T((3, 4), noncontiguous=True), 1, _ix([1, 3], device),
                      name="noncontiguous")


define("index_select", sampler(_index_select_samples), dtypes=ALL,
       ref=lambda a, dim, index: a.copy() if a.ndim == 0 else np.take(
           a, index.reshape(-1), axis=dim).reshape(
           a.shape[:dim % a.ndim] + (index.size,) + a.shape[dim % a.ndim + 1:]))


def _index_source_samples(cases, extra=None):
    """Samples ``(input, dim, index, source)`` of index_add / index_copy from ``cases``, each
    ``(input shape, dim, index values, source shape, name)`` (non-contiguous input and
    source where the name says so), then those of ``extra(T, device, dtype)``."""

    def gen(T, device, dtype, rg):
        for shape, dim, index, source, name in cases:
            nc = name == "noncontiguous"
            yield SampleInput(T(shape, noncontiguous=nc), dim, _ix(index, device),
                              T(source, noncontiguous=nc), name=name)
        if extra is not None:
            yield from extra(T, device, dtype)

    return sampler(gen)


def _index_add_alpha(T, device, dtype):
    yield SampleInput(T((5, 3)), -2, _ix([1, 3], device, "int32"), T((2, 3)),
                      alpha=_scalar(dtype, 2), name="alpha, int32 index")


define("index_add", _index_source_samples((
    ((5, 3), 0, [0, 4, 2, 0], (4, 3), "repeated indices"),
    ((5, 3), 1, [2, 0], (5, 2), "dim 1"),
    ((4,), 0, [3, 3], (2,), "1-D"),
    ((), 0, [0], (), "0-d"),
    ((3, 4), 1, [1, 3], (3, 2), "noncontiguous"),
), _index_add_alpha), dtypes=ALL)
define("index_copy", _index_source_samples((  # unique indices: the copies do not collide
    ((5, 3), 0, [4, 0, 2], (3, 3), ""),
    ((5, 3), 1, [2, 0], (5, 2), "dim 1"),
    ((5, 3), -1, [1], (5, 1), "dim -1"),
    ((4,), 0, [3, 1], (2,), "1-D"),
    ((), 0, [0], (), "0-d"),
    ((3, 4), 1, [3, 1], (3, 2), "noncontiguous"),
)), dtypes=ALL)


def _index_fill_samples(T, device, dtype, rg):
    yield SampleInput(T((5, 3)), 1, _ix([0, 2], device), _scalar(dtype, -1.5))
    yield SampleInput(T((5, 3)), 0, _ix([-1, 1], device), _scalar(dtype, 2.5),
                      name="negative index")
    yield SampleInput(T((5, 3)), 0, _ix([1, 3], device), T(()), name="0-d tensor value")
    yield SampleInput(T((4,)), -1, _ix([2], device), _scalar(dtype), name="1-D")
    yield SampleInput(T(()), 0, _ix([0], device), _scalar(dtype), name="0-d")
    yield SampleInput(T(()), -1, _ix([-1], device), T(()), name="0-d, negative index")
    yield SampleInput(T((5, 3)), 0, _ix([], device), _scalar(dtype), name="empty index")
    yield SampleInput(T((3, 4), noncontiguous=True), 1, _ix([3, 0], device), _scalar(dtype),
                      name="noncontiguous")


define("index_fill", sampler(_index_fill_samples), dtypes=ALL)


def _index_put_samples(T, device, dtype, rg):
    yield SampleInput(T((5, 3)), (_ix([0, 2], device),), T((2, 3)), name="rows")
    yield SampleInput(T((5, 3)), (_ix([0, 2, 4], device), _ix([1, 1, 0], device)), T((3,)),
                      name="points")
    yield SampleInput(T((5, 3)), (_ix([0, 0, 2], device),), T((3, 3)), True,
                      name="accumulate, repeated rows")
    yield SampleInput(T((5, 3)), (_ix([1, 1], device), _ix([2, 2], device)), T((2,)),
                      accumulate=True, name="accumulate, repeated points")
    yield SampleInput(T((5, 3)), (_ix([-1, 1], device),), T(()), name="broadcast 0-d value")
    yield SampleInput(T((2, 3)), (_mask([[True, False, True], [False, False, True]], device),),
                      T((3,)), name="bool mask")
    yield SampleInput(T((3, 4), noncontiguous=True), (_ix([2, 0], device),), T((2, 4)),
                      name="noncontiguous")


define("index_put", sampler(_index_put_samples), dtypes=ALL)


# -- masked ops ------------------------------------------------------------------------------

_M34 = [[True, False, False, True], [False, False, False, False], [True, True, False, True]]


def _masked_fill_samples(T, device, dtype, rg):
    yield SampleInput(T((3, 4)), _mask(_M34, device), _scalar(dtype, -1.5))
    yield SampleInput(T((3, 4)), _mask([True, False, True, False], device),
                      _scalar(dtype, 2.5), name="broadcast mask")
    yield SampleInput(T((3, 1)), _mask(_M34, device), _scalar(dtype), name="broadcast input")
    yield SampleInput(T((3, 4)), _mask(_M34, device), T(()), name="0-d tensor value")
    yield SampleInput(T((3, 4)), _mask(False, device), _scalar(dtype), name="0-d mask")
    yield SampleInput(T(()), _mask(True, device), _scalar(dtype), name="0-d")
    yield SampleInput(T((0, 4)), _mask([True] * 4, device), _scalar(dtype), name="empty")
    yield SampleInput(T((3, 4), noncontiguous=True), _mask(_M34, device), _scalar(dtype),
                      name="noncontiguous")


def _masked_fill_ref(a, mask, value):
    return np.where(mask, np.asarray(value).astype(a.dtype), a)


define("masked_fill", sampler(_masked_fill_samples), dtypes=ALL, ref=_masked_fill_ref)


def _masked_scatter_samples(T, device, dtype, rg):
    yield SampleInput(T((3, 4)), _mask(_M34, device), T((3, 4)))
    yield SampleInput(T((3, 4)), _mask([False, True, True, False], device), T((7,)),
                      name="broadcast mask, 1-D source")
    yield SampleInput(T((3, 1)), _mask(_M34, device), T((6,)), name="broadcast input")
    yield SampleInput(T((3, 4)), _mask(np.zeros((3, 4)), device), T((2,)), name="no True")
    yield SampleInput(T(()), _mask(True, device), T((2,)), name="0-d")
    yield SampleInput(T((3, 4), noncontiguous=True), _mask(_M34, device),
                      T((2, 4), noncontiguous=True), name="noncontiguous")


def _masked_scatter_ref(a, mask, source):
    a, mask = np.broadcast_arrays(a, mask)
    out = a.copy()
    out[mask] = source.reshape(-1)[:int(mask.sum())]
    return out


define("masked_scatter", sampler(_masked_scatter_samples), dtypes=ALL, ref=_masked_scatter_ref)


def _masked_select_samples(T, device, dtype, rg):
    yield SampleInput(T((3, 4)), _mask(_M34, device))
    yield SampleInput(T((3, 4)), _mask([True, False, True, True], device),
                      name="broadcast mask")
    yield SampleInput(T((4,)), _mask(_M34, device), name="broadcast input")
    yield SampleInput(T(()), _mask(True, device), name="0-d")
    yield SampleInput(T((0, 4)), _mask([True] * 4, device), name="empty")
    yield SampleInput(T((3, 4), noncontiguous=True), _mask(_M34, device),
                      name="noncontiguous")


def _masked_select_ref(a, mask):
    a, mask = np.broadcast_arrays(a, mask)
    return a[mask]


define("masked_select", sampler(_masked_select_samples), dtypes=ALL, ref=_masked_select_ref)


# -- take / put / take_along_dim -------------------------------------------------------------

def _take_samples(T, device, dtype, rg):
    yield SampleInput(T((3, 4)), _ix([[0, 11, 5], [-1, -12, 3]], device))
    yield SampleInput(T((5,)), _ix(2, device), name="0-d index")
    yield SampleInput(T(()), _ix([0, -1, 0], device), name="0-d input")
    yield SampleInput(T((3, 4), empty_out=True), _ix([], device), name="empty index")
    yield SampleInput(T((3, 4), noncontiguous=True), _ix([1, 6, 11], device),
                      name="noncontiguous")


define("take", sampler(_take_samples), dtypes=ALL,
       ref=lambda a, index: np.take(a.reshape(-1), index))


def _put_samples(T, device, dtype, rg):
    yield SampleInput(T((3, 4)), _ix([0, 11, 5], device), T((3,)))
    yield SampleInput(T((3, 4)), _ix([[-1, 2], [4, 7]], device), T((4,)),
                      name="2-D index, negative index")
    yield SampleInput(T((3, 4)), _ix([1, 1, 5], device), T((3,)), True,
                      name="accumulate, repeated")
    yield SampleInput(T(()), _ix([0], device), T((1,)), accumulate=True, name="0-d")
    yield SampleInput(T((3, 4)), _ix([], device), T((0,)), name="empty")
    yield SampleInput(T((3, 4), noncontiguous=True), _ix([3, 0, 8], device), T((3,)),
                      name="noncontiguous")


define("put", sampler(_put_samples), dtypes=ALL)


def _take_along_dim_samples(T, device, dtype, rg):
    yield SampleInput(T((3, 4)), _ix([[0, 3], [1, 1], [2, 0]], device), 1)
    yield SampleInput(T((3, 4)), _ix([[2, 0, 1, 1]], device), 0, name="broadcast indices")
    yield SampleInput(T((3, 1)), _ix([[0, 0, 0]], device), -1, name="broadcast input")
    yield SampleInput(T((3, 4)), _ix([[0, 11], [5, 2]], device), name="dim None")
    yield SampleInput(T((3, 4), noncontiguous=True), _ix([[3], [0], [2]], device), dim=1,
                      name="noncontiguous")


def _take_along_dim_ref(a, indices, dim=None):
    if dim is None:
        return a.reshape(-1)[indices.reshape(-1)]
    dim %= a.ndim
    shape = list(np.broadcast_shapes(
        tuple(1 if k == dim else n for k, n in enumerate(a.shape)),
        tuple(1 if k == dim else n for k, n in enumerate(indices.shape))))
    sa, si = list(shape), list(shape)
    sa[dim], si[dim] = a.shape[dim], indices.shape[dim]
    return np.take_along_axis(np.broadcast_to(a, sa), np.broadcast_to(indices, si), dim)


define("take_along_dim", sampler(_take_along_dim_samples), dtypes=ALL,
       ref=_take_along_dim_ref)


# -- nonzero, searchsorted, bucketize, isin --------------------------------------------------

def _with_zeros(T, shape, dtype, device):
    """An input whose every third element is zero (False)."""
    a = np.array(T(shape).detach().numpy())
    a.reshape(-1)[::3] = 0
    return _like(a, dtype, device)


def _nonzero_samples(T, device, dtype, rg):
    for shape in ((3, 4), (5,), (2, 3, 2), (0, 3)):
        yield SampleInput(_with_zeros(T, shape, dtype, device), name=str(shape))
    yield SampleInput(_like(1, dtype, device), name="0-d nonzero")
    yield SampleInput(_like(0, dtype, device), name="0-d zero")
    yield SampleInput(T((3, 4), noncontiguous=True), name="noncontiguous")


def _nonzero_ref(a, as_tuple=False):
    if as_tuple:
        return np.nonzero(a.reshape(-1) if a.ndim == 0 else a)
    return np.argwhere(a)


def _nonzero_tuple_samples(T, device, dtype, rg):
    yield from _nonzero_samples(T, device, dtype, rg)
    for shape in ((3, 4), (5,)):
        yield SampleInput(_with_zeros(T, shape, dtype, device), as_tuple=True,
                          name=f"{shape} as_tuple")


define("nonzero", sampler(_nonzero_tuple_samples), dtypes=ALL, ref=_nonzero_ref)
define("argwhere", sampler(_nonzero_samples), dtypes=ALL, ref=np.argwhere)


def _nonzero_static_samples(T, device, dtype, rg):
    x = _with_zeros(T, (3, 4), dtype, device)
    yield SampleInput(x, size=12, name="padded")
    yield SampleInput(x, size=3, name="cut off")
    yield SampleInput(x, size=5, fill_value=7, name="fill_value")
    yield SampleInput(_with_zeros(T, (5,), dtype, device), size=0, name="size 0")
    yield SampleInput(_like(2, dtype, device), size=2, name="0-d")
    yield SampleInput(T((0, 3)), size=2, name="empty")
    yield SampleInput(T((3, 4), noncontiguous=True), size=4, name="noncontiguous")


def _nonzero_static_ref(a, *, size, fill_value=-1):
    found = np.argwhere(a)[:size]
    pad = np.full((size - len(found), a.ndim), fill_value, dtype=np.int64)
    return np.concatenate([found, pad]).astype(np.int64)


define("nonzero_static", sampler(_nonzero_static_samples), dtypes=ALL, ref=_nonzero_static_ref)


def _hash_tensor_samples(T, device, dtype, rg):
    yield SampleInput(T((3, 4)))
    yield SampleInput(T((3, 4)), 1, name="dim 1")
    yield SampleInput(T((2, 3, 4)), (0, 2), keepdim=True, name="dims (0, 2), keepdim")
    yield SampleInput(T((2, 3)), -1, mode=0, name="mode=0")
    yield SampleInput(T(()), name="0-d")
    yield SampleInput(T((0, 3)), 1, name="empty, dim 1")
    yield SampleInput(T((3, 4), noncontiguous=True), 0, name="noncontiguous")


def _hash_tensor_ref(a, dim=None, *, keepdim=False, mode=0):
    bits = a.astype(np.float64).view(np.int64) if a.dtype.kind == "f" else a.astype(np.int64)
    axis = tuple(range(a.ndim)) if dim is None else dim
    return np.bitwise_xor.reduce(bits, axis=axis, keepdims=keepdim)


define("hash_tensor", sampler(_hash_tensor_samples), dtypes=ALL, ref=_hash_tensor_ref,
       skip={"torch": "PyTorch returns uint64, which Ember lacks: Ember returns the same 64 "
                      "bits as int64 (its documented choice); the ref checks the bits"})


def _sorted(T, shape, dtype, device):
    return _like(np.sort(np.array(T(shape, requires_grad=False).numpy()), axis=-1), dtype,
                 device)


def _searchsorted_samples(T, device, dtype, rg):
    seq = _sorted(T, (6,), dtype, device)
    yield SampleInput(seq, T((2, 3)))
    yield SampleInput(seq, T((2, 3)), right=True, name="right")
    yield SampleInput(seq, T((4,)), side="right", name="side='right'")
    yield SampleInput(seq, T((4,)), out_int32=True, name="out_int32")
    yield SampleInput(seq, seq, name="values equal to boundaries")
    yield SampleInput(seq, seq, side="left", right=False, name="equal values, left")
    yield SampleInput(seq, _scalar(dtype, 2), name="a number")
    yield SampleInput(_sorted(T, (2, 5), dtype, device), T((2, 3)), name="N-D")
    perm = np.random.default_rng(0).permutation(6)
    unsorted = _like(np.array(seq.numpy())[perm], dtype, device)
    yield SampleInput(unsorted, T((3,)), sorter=_ix(np.argsort(perm), device), name="sorter")
    yield SampleInput(seq, T((0,)), name="empty values")


def _searchsorted_ref(seq, values, *, out_int32=False, right=False, side=None, sorter=None):
    side = side or ("right" if right else "left")
    if sorter is not None:
        seq = np.take_along_axis(seq, sorter, -1)
    if seq.ndim == 1:
        r = np.searchsorted(seq, values, side=side)
    else:
        r = np.stack([np.searchsorted(s, v, side=side) for s, v in zip(seq, values)])
    return np.asarray(r).astype(np.int32 if out_int32 else np.int64)


define("searchsorted", sampler(_searchsorted_samples), dtypes=ORDERED, ref=_searchsorted_ref)


def _bucketize_samples(T, device, dtype, rg):
    b = _sorted(T, (5,), dtype, device)
    yield SampleInput(T((2, 3)), b)
    yield SampleInput(T((2, 3)), b, right=True, name="right")
    yield SampleInput(b, b, name="values equal to boundaries")
    yield SampleInput(b, b, right=True, name="equal values, right")
    yield SampleInput(T((4,), noncontiguous=True), b, out_int32=True,
                      name="noncontiguous, out_int32")
    yield SampleInput(T(()), b, name="0-d")
    yield SampleInput(T((0, 2)), b, name="empty")


define("bucketize", sampler(_bucketize_samples), dtypes=ORDERED,
       ref=lambda a, b, out_int32=False, right=False: np.searchsorted(
           b, a, side="right" if right else "left").astype(np.int32 if out_int32 else np.int64))


def _isin_samples(T, device, dtype, rg):
    def small(shape):  # values 0..4, so that elements and test elements meet
        return _like(np.random.default_rng(sum(shape) + 7).integers(0, 5, shape), dtype,
                     device)

    yield SampleInput(small((3, 4)), small((3,)))
    yield SampleInput(small((3, 4)), small((2, 2)), invert=True, name="invert")
    yield SampleInput(small((3, 4)), _like([1, 3], dtype, device), assume_unique=True,
                      name="assume_unique")
    yield SampleInput(small((3, 4)), _scalar(dtype, 2), name="a number")
    yield SampleInput(_scalar(dtype, 2), small((4,)), name="number elements")
    yield SampleInput(small(()), small((0,)), name="0-d, empty test")
    yield SampleInput(T((3, 4), noncontiguous=True), small((5,)), name="noncontiguous")


define("isin", sampler(_isin_samples), dtypes=ORDERED,
       ref=lambda e, t, assume_unique=False, invert=False: np.isin(e, t, invert=invert))

del _name, _np_fn, _a0, _a1
__all__ = ["sampler", "NUMERIC", "ORDERED"]
