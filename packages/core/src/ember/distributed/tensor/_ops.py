"""Sharding rules: ops that run on the local tensors of sharded DTensors, without gathering.

PyTorch's sharding strategies (``torch.distributed.tensor._ops``), as ember runs them: a rule
reads its operands' placements (one per mesh dim) and global shapes, decides where the result
lies, moves an operand only where it must (a differentiable redistribution; a replicated
operand sliced to this rank's part costs no communication), runs the op on the local tensors
and wraps the local result with its global shape. A rule returns ``NotImplemented`` for what
it does not handle, and ``_api._dispatch`` then gathers the operands. Every decision reads
only global shapes, placements and mesh sizes, never the rank, so all ranks take one path.

The rules (``HANDLERS``, by op key, and :func:`pointwise`):

- views (``view``, ``reshape``, ``flatten``, ``unflatten``, ``view_as``, ``squeeze``,
  ``unsqueeze``, ``expand``, ``view_as_complex``/``view_as_real``) map each output dim to the
  input dims it comes from (PyTorch's ``view_groups``): a kept dim keeps its shard; a split
  ``(a*b) -> (a, b)`` keeps it on ``a`` when ``a`` and the dim divide by the mesh size;
  merging ``(a, b) -> a*b`` keeps a shard of ``a`` (``a`` even) and turns one of ``b`` into
  ``_StridedShard`` (split factor ``a``), which the inverse split turns back into ``Shard``;
  any other shard is gathered on its mesh dim first. Permutations (``transpose``,
  ``permute``, ``t``, ``movedim``, ``swapaxes``) move the shard dims;
- elementwise ops with broadcasting or mixed placements: the result keeps the operands' shard
  that moves the fewest elements (PyTorch's cheapest strategy), the other operands follow: a
  replicated one is sliced to the shard when its dim is the result's, used whole where it
  broadcasts; ``Partial`` survives the linear cases (``add``/``sub`` of partials, ``mul``/
  ``div`` by replicated values, ``neg``, casts) and is reduced otherwise;
- reductions: ``sum`` over a sharded dim gives ``Partial("sum")``, ``mean``
  ``Partial("avg")`` (even shards), ``amax``/``amin``/``max()``/``min()``
  ``Partial("max"/"min")`` (no rank's part empty); ``norm``/``vector_norm`` sum the local
  p-th powers in one all-reduce to a replicated norm (PyTorch keeps a ``_NormPartial``,
  which ember does not have); ``var``, ``std``, ``softmax``, ``log_softmax``,
  ``logsumexp``, ``cumsum``, ``argmax``, ``max(dim)`` ... gather a sharded reduced dim;
  shards of other dims stay;
- ``scaled_dot_product_attention`` with q, k, v sharded alike on a batch or head dim,
  ``embedding`` (weight ``Shard(0)``: a masked lookup giving ``Partial``; ``Shard(1)``:
  ``Shard(-1)``; indices sharded), ``matmul``/``mm``/``bmm`` (batch shards, Megatron's column
  and row patterns), ``linear`` (tensor parallelism's and a batch shard), ``cat``/``stack``,
  basic indexing, ``narrow``, ``select``, ``index_select``, ``split``, ``chunk``, ``unbind``
  along unsharded dims.

Gradients run on the local tensors, so a rule keeps each operand's local gradient right: a
replicated operand sliced to a shard gets the all-gather of the redistribution's backward; a
replicated operand used whole beside a sharded one (a broadcast, a matmul's weight) gets one
term of its gradient on each rank, summed over the mesh dim in the backward (``_rd.GradTo``,
as ``linear``'s column-wise input). The gradient reaching a ``Partial`` result's local term is
the gradient of the whole value, replicated (``_redistribute``'s convention), so a rule that
makes ``Partial("avg")`` scales its term's gradient by 1/n, and one that makes
``Partial("max")``/``("min")`` sends it to the ranks that hold the extremum (split among the
ties, as the plain op splits it).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ... import autograd
from ..._tensor import Tensor
from ...ops._promotion import wrap_dim
from . import _redistribute as _rd
from ._api import DTensor, _swap, _walk, _wrap
from .placement_types import Partial, Replicate, Shard, _chunk_bounds, _StridedShard

__all__ = ["HANDLERS", "pointwise"]

_R = Replicate()


# -- shared pieces -----------------------------------------------------------------------------
def _is_shard(p) -> bool:
    return isinstance(p, (Shard, _StridedShard))


def _moved(p, dim: int):
    """The shard ``p`` on tensor dim ``dim``."""
    if isinstance(p, Shard):
        return Shard(dim)
    return _StridedShard(dim, split_factor=p.split_factor)


def _sharded(d) -> bool:
    return isinstance(d, DTensor) and not all(p.is_replicate() for p in d._spec.placements)


def _same_mesh(*ds) -> bool:
    mesh = ds[0]._spec.mesh
    return all(d._spec.mesh == mesh for d in ds[1:])


def _local(d: DTensor, target=None, terms=None):
    """``d``'s local tensor placed as ``target`` (a differentiable redistribution; None: as it
    lies). ``terms`` (a Partial or None per mesh dim) marks the mesh dims where this rank's
    gradient of the result is one term of the operand's gradient: the backward reduces it
    over them."""
    spec = d._spec
    local = d._local_tensor
    target = spec.placements if target is None else tuple(target)
    if target != spec.placements:
        local = _rd.Redistribute.apply(local, spec.mesh, spec.placements, target, spec.shape)
    if terms is not None and local.requires_grad and any(t is not None for t in terms):
        want = _rd.grad_placements(target)
        arrive = tuple(g if t is None else t for t, g in zip(terms, want))
        local = _rd.GradTo.apply(local, spec.mesh, arrive, want, spec.shape)
    return local


def _make(local, mesh, placements, shape) -> DTensor:
    return DTensor._make(local, mesh, tuple(placements), tuple(int(s) for s in shape))


def _local_shape(shape, mesh, placements) -> tuple:
    """This rank's part of a tensor of global ``shape`` placed as ``placements``."""
    if any(isinstance(p, _StridedShard) for p in placements):
        return _rd.local_shape(shape, mesh, placements, _rd._coordinate(mesh))
    coordinate = _rd._coordinate(mesh)
    out = list(shape)
    for i, p in enumerate(placements):
        if isinstance(p, Shard):
            out[p.dim] = _chunk_bounds(out[p.dim], mesh.size(i), coordinate[i])[1]
    return tuple(out)


def _broadcast(shapes) -> tuple | None:
    """The broadcast of ``shapes`` (None when they do not broadcast)."""
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


def _dim(d, ndim: int) -> int:
    """``d`` wrapped into ``ndim`` dims; TypeError/IndexError send the op to the gathered path
    (which raises PyTorch's error)."""
    if not isinstance(d, numbers.Integral) or isinstance(d, bool):
        raise TypeError(d)
    return wrap_dim(int(d), ndim)


def _arg(args, kwargs, pos: int, name: str, default=None):
    if len(args) > pos:
        return args[pos]
    return kwargs.get(name, default)


def _sizes(values) -> tuple | None:
    """Sizes given as ``*sizes`` or one sequence (None when they are not ints)."""
    if len(values) == 1 and isinstance(values[0], (tuple, list)):
        values = tuple(values[0])
    if all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in values):
        return tuple(int(v) for v in values)
    return None


def _infer(total: int, sizes) -> tuple | None:
    """``sizes`` with its -1 filled in for ``total`` elements (None when they do not fit: the
    gathered op raises the error)."""
    sizes = list(sizes)
    free = [i for i, s in enumerate(sizes) if s == -1]
    known = math.prod(s for s in sizes if s != -1)
    if len(free) > 1 or any(s < -1 for s in sizes):
        return None
    if free:
        if known == 0 or total % known:
            return None
        sizes[free[0]] = total // known
    return tuple(sizes) if math.prod(sizes) == total else None


# -- views -------------------------------------------------------------------------------------
# A rule maps each output dim to (input dims flattened, the sizes the flattened dims are split
# into (ones left out), its index among them): ((d,), (size,), 0) keeps input dim d; ((), (),
# None) is a new or broadcast dim (PyTorch's DimSpec: InputDim, Flatten, Split, Singleton).
_NEW = ((), (), None)


def _view_groups(src, dst) -> list:
    """PyTorch's ``view_groups``: how ``src`` reshaped to ``dst`` regroups the dims."""
    rule: list = []
    i = j = 0
    while i < len(src) or j < len(dst):
        dims, group = [], []
        f = 1 if i >= len(src) else src[i]
        if i < len(src):
            dims.append(i)
            i += 1
        t = 1 if j >= len(dst) else dst[j]
        if j < len(dst):
            group.append(t)
            j += 1
        if f == 1 and t != 1:  # an input dim of size 1 that goes away
            j -= len(group)
            group = []
        elif f != 1 and t == 1:  # a new output dim of size 1
            i -= len(dims)
            dims = []
        else:
            while f != t:
                if i < len(src) and (j >= len(dst) or t > f):
                    f *= src[i]
                    dims.append(i)
                    i += 1
                elif j < len(dst) and (i >= len(src) or f > t):
                    t *= dst[j]
                    group.append(dst[j])
                    j += 1
                else:
                    break
        if not group:
            continue
        kept = tuple(g for g in group if g != 1)
        k = 0
        for g in group:
            if len(group) > 1 and g == 1:
                rule.append(_NEW)
                continue
            rule.append((tuple(dims), kept if len(group) > 1 else (g,), k))
            k += 1
    return rule


def _map_shard(p, entries, shape, n: int):
    """Where the shard ``p`` of an input dim goes under a view (None: it must be gathered).
    ``entries``: the output dims ``(e, dims, group, k)`` made from its dim's group."""
    if not entries:
        return None
    _, dims, group, _ = entries[0]
    first = next((e for e, _, _, k in entries if k == 0), None)
    if first is None:
        return None
    if len(dims) == 1 and len(group) == 1:  # the dim itself, maybe moved
        return _moved(p, first)
    pos = dims.index(p.dim)
    size = shape[p.dim]
    if isinstance(p, _StridedShard):  # a merged dim split again: a Shard where it lands
        if len(dims) == 1:
            for e, _, g, k in entries:
                if math.prod(g[:k]) == p.split_factor and g[k] % n == 0:
                    return Shard(e)
        return None
    if len(group) == 1:  # merged dims
        factor = math.prod(shape[d] for d in dims[:pos])
        if factor == 1:
            return Shard(first) if size % n == 0 or pos == len(dims) - 1 else None
        if pos == 0 or not (size % n == 0 or pos == len(dims) - 1):
            return None
        return _StridedShard(first, split_factor=factor)
    if pos == 0 and group[0] % n == 0 and size % n == 0:  # split: the first part keeps it
        return Shard(first)
    return None


def _propagate(rule, shape, placements, mesh):
    """(the input placements the view needs, the output's) under ``rule``."""
    where: dict = {}
    for e, (dims, group, k) in enumerate(rule):
        for d in dims:
            where.setdefault(d, []).append((e, dims, group, k))
    owners: dict = {}
    for i, p in enumerate(placements):
        if _is_shard(p):
            entries = where.get(p.dim)
            owners.setdefault(entries[0][1] if entries else (p.dim,), []).append(i)
    target, out = [], []
    for i, p in enumerate(placements):
        q = None
        if _is_shard(p):
            entries = where.get(p.dim)
            key = entries[0][1] if entries else (p.dim,)
            simple = entries and len(entries[0][1]) == 1 and len(entries[0][2]) == 1
            if len(owners[key]) == 1 or simple:
                q = _map_shard(p, entries, shape, mesh.size(i))
            if q is None:
                target.append(_R)
                out.append(_R)
                continue
        target.append(p)
        out.append(p if q is None else q)
    return tuple(target), tuple(out)


def _run_view(x: DTensor, rule, out_shape, call):
    spec = x._spec
    target, out = _propagate(rule, spec.shape, spec.placements, spec.mesh)
    local = _local(x, target)
    result = call(local, _local_shape(out_shape, spec.mesh, out) if call in _SIZED else None)
    return _make(result, spec.mesh, out, out_shape)


def _view_to(local, lshape):
    return local.view(lshape)


def _reshape_to(local, lshape):
    return local.reshape(lshape)


def _expand_to(local, lshape):
    return local.expand(lshape)


#: the calls that take this rank's output shape
_SIZED = (_view_to, _reshape_to, _expand_to)


def _view(func, name, args, kwargs):
    """view, reshape, view_as, flatten, unflatten, squeeze, unsqueeze, expand, expand_as."""
    x = args[0] if args else kwargs.get("input", kwargs.get("self"))
    if not _sharded(x):
        return NotImplemented
    shape = x._spec.shape
    ndim = len(shape)
    total = math.prod(shape)
    try:
        if name in ("view", "reshape"):
            given = args[1:] or (kwargs.get("size", kwargs.get("shape")),)
            if given == (None,):
                return NotImplemented
            sizes = _sizes(given)
            out_shape = None if sizes is None else _infer(total, sizes)
            call = _view_to if name == "view" else _reshape_to
        elif name in ("view_as", "expand_as"):
            other = _arg(args, kwargs, 1, "other")
            if not isinstance(other, DTensor) or not _same_mesh(x, other):
                return NotImplemented
            out_shape = other._spec.shape
            if name == "expand_as":
                return _expand(x, out_shape)
            call = _view_to
        elif name == "flatten":
            if ndim == 0:
                out_shape = (1,)
            else:
                start = _dim(_arg(args, kwargs, 1, "start_dim", 0), ndim)
                end = _dim(_arg(args, kwargs, 2, "end_dim", -1), ndim)
                if start > end:
                    return NotImplemented
                out_shape = (*shape[:start], math.prod(shape[start:end + 1]), *shape[end + 1:])
            call = _reshape_to
        elif name == "unflatten":
            d = _dim(_arg(args, kwargs, 1, "dim"), ndim)
            sizes = _sizes((_arg(args, kwargs, 2, "sizes"),))
            sizes = None if sizes is None else _infer(shape[d], sizes)
            out_shape = None if sizes is None else (*shape[:d], *sizes, *shape[d + 1:])
            call = _reshape_to
        elif name == "squeeze":
            dim = _arg(args, kwargs, 1, "dim")
            dims = (range(ndim) if dim is None else
                    [_dim(d, ndim) for d in (dim if isinstance(dim, (tuple, list)) else (dim,))])
            gone = tuple(sorted({d for d in dims if shape[d] == 1}))
            out_shape = tuple(s for d, s in enumerate(shape) if d not in gone)
            call = _squeezer(gone)
        elif name == "unsqueeze":
            d = _dim(_arg(args, kwargs, 1, "dim"), ndim + 1)
            out_shape = (*shape[:d], 1, *shape[d:])
            call = _same_call(func, args, kwargs)
        elif name == "expand":
            sizes = _sizes(args[1:] or (kwargs.get("size"),))
            return NotImplemented if sizes is None else _expand(x, sizes)
        else:
            return NotImplemented
    except (TypeError, IndexError):
        return NotImplemented
    if out_shape is None:
        return NotImplemented
    return _run_view(x, _view_groups(shape, out_shape), out_shape, call)


def _expand(x: DTensor, sizes):
    """``x`` expanded to ``sizes`` (-1 keeps a dim): an expanded dim of one is a new dim."""
    shape = x._spec.shape
    lead = len(sizes) - len(shape)
    if lead < 0:
        return NotImplemented
    out_shape = tuple(sizes[:lead]) + tuple(
        s if sizes[lead + d] == -1 else sizes[lead + d] for d, s in enumerate(shape))
    if any(s < 0 for s in out_shape) or any(
            s != 1 and out_shape[lead + d] != s for d, s in enumerate(shape)):
        return NotImplemented
    rule = [_NEW] * lead + [((d,), (s,), 0) if out_shape[lead + d] == s else _NEW
                            for d, s in enumerate(shape)]
    return _run_view(x, rule, out_shape, _expand_to)


def _squeezer(dims):
    def call(local, lshape):
        return local.squeeze(dims)

    return call


def _same_call(func, args, kwargs):
    """The op itself on the local tensor (its other arguments name dims, not sizes)."""

    def call(local, lshape):
        return func(local, *args[1:], **{k: v for k, v in kwargs.items()
                                         if k not in ("input", "self")})

    return call


def _permutation(name: str, args, kwargs, ndim: int):
    """The input dim of each output dim of a dim permutation."""
    dims = list(range(ndim))
    if name == "t":
        return dims[::-1] if ndim == 2 else dims
    if name in ("transpose", "swapaxes", "swapdims"):
        a = _dim(_arg(args, kwargs, 1, "dim0", kwargs.get("axis0")), ndim)
        b = _dim(_arg(args, kwargs, 2, "dim1", kwargs.get("axis1")), ndim)
        dims[a], dims[b] = dims[b], dims[a]
        return dims
    if name == "permute":
        given = args[1:] or (kwargs.get("dims"),)
        order = _sizes(given)
        if order is None or len(order) != ndim:
            raise TypeError(order)
        order = [_dim(d, ndim) for d in order]
        if sorted(order) != dims:
            raise IndexError(order)
        return order
    # movedim / moveaxis
    src = _arg(args, kwargs, 1, "source")
    dst = _arg(args, kwargs, 2, "destination")
    src = [src] if not isinstance(src, (tuple, list)) else list(src)
    dst = [dst] if not isinstance(dst, (tuple, list)) else list(dst)
    src = [_dim(d, ndim) for d in src]
    dst = [_dim(d, ndim) for d in dst]
    if len(src) != len(dst) or len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise IndexError(src)
    out = [-1] * ndim
    for s, d in zip(src, dst):
        out[d] = s
    rest = iter(d for d in range(ndim) if d not in src)
    return [next(rest) if o == -1 else o for o in out]


def _permute(func, name, args, kwargs):
    """transpose, swapaxes, permute, t, movedim: the shard dims move with the dims."""
    x = args[0] if args else kwargs.get("input")
    if not _sharded(x):
        return NotImplemented
    shape = x._spec.shape
    try:
        perm = _permutation(name, args, kwargs, len(shape))
    except (TypeError, IndexError):
        return NotImplemented
    where = {d: e for e, d in enumerate(perm)}
    out = tuple(_moved(p, where[p.dim]) if _is_shard(p) else p for p in x._spec.placements)
    local = func(x._local_tensor, *args[1:], **{k: v for k, v in kwargs.items()
                                                  if k != "input"})
    return _make(local, x._spec.mesh, out, tuple(shape[d] for d in perm))


def _complex_view(func, name, args, kwargs):
    """view_as_complex (the last dim, of two, goes) and view_as_real (a last dim of two)."""
    x = args[0] if args else kwargs.get("input")
    if not _sharded(x):
        return NotImplemented
    shape = x._spec.shape
    if name == "view_as_complex":
        if not shape or shape[-1] != 2:
            return NotImplemented
        rule = [((d,), (s,), 0) for d, s in enumerate(shape[:-1])]
        out_shape = shape[:-1]
    else:
        rule = [((d,), (s,), 0) for d, s in enumerate(shape)] + [_NEW]
        out_shape = (*shape, 2)
    return _run_view(x, rule, out_shape, _same_call(func, args, kwargs))


# -- elementwise -------------------------------------------------------------------------------
_ADDITIVE = frozenset(("add", "add_", "sub", "sub_", "subtract"))
_SUBTRACTION = frozenset(("sub", "sub_", "subtract"))
_MULTIPLICATIVE = frozenset(("mul", "mul_", "multiply", "div", "div_", "divide", "true_divide"))
_DIVISION = frozenset(("div", "div_", "divide", "true_divide"))
_NEGATION = frozenset(("neg", "neg_", "negative"))
#: conversions and copies: a partial term converts term by term (PyTorch's to.dtype rule)
_COPIES = frozenset(("to", "float", "double", "half", "bfloat16", "type_as", "clone", "detach",
                     "contiguous", "positive", "alias", "cfloat", "cdouble", "chalf", "cpu",
                     "cuda"))
#: ops whose other tensor arguments give only a dtype or device
_DTYPE_ONLY = frozenset(("to", "type_as"))
_FLIP = {"max": "min", "min": "max"}


def _has_scalar(args) -> bool:
    return any((isinstance(a, numbers.Number) and not isinstance(a, bool))
               or (isinstance(a, Tensor) and not isinstance(a, DTensor)) for a in args)


def _partial_rule(name, func, args, data, pls, targets, terms, i):
    """The placement on mesh dim ``i`` of an elementwise op with ``Partial`` operands (and no
    shard there): kept where the op is linear in them, else the partials are reduced."""
    partial = [k for k, p in enumerate(pls) if isinstance(p, Partial)]
    ops = {pls[k].reduce_op for k in partial}
    reflected = getattr(func, "__name__", "").startswith("__r")
    kept = None
    if len(data) == 1 and name in _COPIES:
        kept = pls[0]
    elif len(data) == 1 and name in _NEGATION and pls[0].reduce_op in ("sum", "avg", "max",
                                                                         "min"):
        op = pls[0].reduce_op
        kept = Partial(_FLIP.get(op, op))
    elif name in _ADDITIVE and len(ops) == 1 and not _has_scalar(args):
        op = next(iter(ops))
        if op == "sum":  # replicated operands join as terms: r/n on each rank
            for k, p in enumerate(pls):
                if p.is_replicate():
                    targets[k][i] = Partial()
            kept = Partial()
        elif op == "avg":
            kept = Partial("avg")
        elif (op in ("max", "min") and len(partial) == 1 and data[partial[0]] is args[0]
              and not (reflected and name in _SUBTRACTION)):
            kept = Partial(op)
    elif name in _MULTIPLICATIVE:
        first = partial[0]
        op = pls[first].reduce_op
        twice = sum(1 for a in args if a is data[first]) > 1  # p * p is not linear in p
        if op in ("sum", "avg") and not twice and not (name in _DIVISION and (
                data[first] is not args[0] or reflected)):
            for k in partial[1:]:
                targets[k][i] = _R
            for k in range(len(data)):
                if k != first:  # their gradient here is a term (times this rank's term)
                    terms[k][i] = Partial(op)
            kept = Partial(op)
    if kept is None:
        for k in partial:
            targets[k][i] = _R
        return _R
    return kept


def _output_dim_of(d, p, shape):
    """The output shard that operand ``d``'s shard ``p`` gives (None where its dim
    broadcasts)."""
    e = p.dim + len(shape) - d.ndim
    return _moved(p, e) if d._spec.shape[p.dim] == shape[e] else None


def _output_shard(data, pls, shape, n: int):
    """The shard an elementwise result keeps on a mesh dim of size ``n``: of the operands'
    shards, the one that moves the fewest elements of the others (PyTorch's cheapest
    strategy; ties go to the lower dim), among those that slice no operand into parts of a
    dim smaller than ``n`` (PyTorch's shardable check). None: no shard can stay."""
    best, best_key = None, None
    for d, p in zip(data, pls):
        q = _output_dim_of(d, p, shape) if _is_shard(p) else None
        if q is None:
            continue
        cost = 0
        for d2, p2 in zip(data, pls):
            if _is_shard(p2) and _output_dim_of(d2, p2, shape) == q:
                continue
            a = q.dim - (len(shape) - d2.ndim)
            if a >= 0 and d2._spec.shape[a] != 1 and d2._spec.shape[a] < n:
                break  # it would be sliced into empty parts
            if _is_shard(p2):
                cost += math.prod(d2._spec.shape)
        else:
            key = (cost, q.dim, isinstance(q, _StridedShard))
            if best_key is None or key < best_key:
                best, best_key = q, key
    return best


def pointwise(func, name: str, args, kwargs, found: list, mesh, inplace: bool):
    """An elementwise op whose DTensor operands differ in placements or (broadcast) shape."""
    if kwargs.get("out") is not None:
        return NotImplemented
    data = [args[0]] if name in _DTYPE_ONLY and args and isinstance(args[0], DTensor) else []
    if not data:
        seen: set = set()
        for d in found:
            if id(d) not in seen:
                seen.add(id(d))
                data.append(d)
    shape = _broadcast([d._spec.shape for d in data])
    if shape is None:
        return NotImplemented
    ndim = len(shape)
    targets = [list(d._spec.placements) for d in data]
    terms: list = [[None] * mesh.ndim for _ in data]
    out = []
    for i in range(mesh.ndim):
        pls = [d._spec.placements[i] for d in data]
        shard = _output_shard(data, pls, shape, mesh.size(i))
        if shard is None:
            if any(_is_shard(p) for p in pls):  # no shard can stay: gathered
                for k, p in enumerate(pls):
                    if _is_shard(p):
                        targets[k][i] = pls[k] = _R
            if any(isinstance(p, Partial) for p in pls):
                out.append(_partial_rule(name, func, args, data, pls, targets, terms, i))
            else:
                out.append(_R)
            continue
        for k, (d, p) in enumerate(zip(data, pls)):
            if _is_shard(p) and _output_dim_of(d, p, shape) == shard:
                continue
            a = shard.dim - (ndim - d.ndim)
            if a >= 0 and d._spec.shape[a] != 1:  # this rank's part of it
                if isinstance(shard, _StridedShard):
                    return NotImplemented
                targets[k][i] = Shard(a)
            else:  # broadcast along the shard: used whole, its gradient a term here
                if not p.is_replicate():
                    targets[k][i] = _R
                terms[k][i] = Partial()
        out.append(shard)
    out = tuple(out)
    if inplace:
        target = args[0]
        k = next((k for k, d in enumerate(data) if d is target), None)
        if (k is None or tuple(targets[k]) != target._spec.placements or any(terms[k])
                or out != target._spec.placements or shape != target._spec.shape):
            return NotImplemented
    locals_ = {id(d): _local(d, targets[k], terms[k]) for k, d in enumerate(data)}

    def swap(d):
        return locals_.get(id(d), d._local_tensor)

    result = func(*_swap(args, swap), **{k: _swap(v, swap) for k, v in kwargs.items()})
    if inplace:
        return args[0]
    return _wrap(result, mesh, out, shape)


# -- reductions --------------------------------------------------------------------------------
class _ScaleGrad(autograd.Function):
    """The identity, its gradient scaled: a ``Partial("avg")`` term's share of the value."""

    @staticmethod
    def forward(ctx, local, factor):
        ctx.factor = factor
        return local.view_as(local)

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.factor, None


class _ExtremumGrad(autograd.Function):
    """The identity on a ``Partial("max"/"min")`` term whose backward keeps the gradient on
    the ranks that hold the extremum, split among all ties as the whole op splits it (``ties``:
    how many local elements reached this rank's extremum)."""

    @staticmethod
    def forward(ctx, local, ties, mesh, mesh_dims, op):
        ctx.state = (local.detach(), ties, mesh, mesh_dims, op)
        return local.view_as(local)

    @staticmethod
    def backward(ctx, grad):
        import ember

        term, ties, mesh, mesh_dims, op = ctx.state
        best = term
        for i in mesh_dims:
            best = _rd._reduce_dim(best, mesh, i, Partial(op))
        share = ember.where(term == best, ties, ember.zeros_like(ties))
        total = share
        for i in mesh_dims:
            total = _rd._reduce_dim(total, mesh, i, Partial("sum"))
        return grad * share / total.clamp_min(1), None, None, None, None


#: op key -> (position of its dim argument, how a sharded reduced dim reduces: None gathers)
_REDUCTIONS = {
    "sum": (1, "sum"), "nansum": (1, "sum"), "mean": (1, "avg"),
    "amax": (1, "max"), "amin": (1, "min"), "max": (1, "max"), "min": (1, "min"),
    "var": (1, None), "std": (1, None), "logsumexp": (1, None), "argmax": (1, None),
    "argmin": (1, None), "norm": (2, "norm"), "linalg_vector_norm": (2, "norm"),
}
#: ops along one dim that keep the shape: that dim must be whole
_ALONG = frozenset(("softmax", "log_softmax", "cumsum", "cumprod", "logcumsumexp"))


def _reduced_dims(dim, ndim: int) -> tuple:
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    if isinstance(dim, (tuple, list)):
        return tuple(sorted({_dim(d, ndim) for d in dim}))
    return (_dim(dim, ndim),)


def _norm_order(name, args, kwargs):
    p = _arg(args, kwargs, 1, "ord" if name == "linalg_vector_norm" else "p",
             2 if name == "linalg_vector_norm" else "fro")
    if p == "fro":
        return 2.0
    if isinstance(p, numbers.Real) and not isinstance(p, bool) and 0 < p < math.inf:
        return float(p)
    return None


def _even_chunks(size: int, n: int) -> bool:
    return _chunk_bounds(size, n, n - 1)[1] > 0


def _reduction(func, name, args, kwargs):
    """sum, mean, amax, amin, max, min, var, std, norm, vector_norm, logsumexp, argmax, ..."""
    x = args[0] if args else kwargs.get("input")
    pos, kind = _REDUCTIONS[name]
    if name in ("max", "min"):
        other = args[1] if len(args) > 1 else kwargs.get("other")
        if isinstance(other, Tensor):  # max(a, b): elementwise
            found: list = []
            _walk(list(args), found)
            _walk(list(kwargs.values()), found)
            if (len(found) != 2 or not _same_mesh(*found)
                    or all(not _sharded(d) for d in found)):
                return NotImplemented
            return pointwise(func, name, args, kwargs, found, found[0]._spec.mesh, False)
        if _arg(args, kwargs, 1, "dim") is not None:
            kind = None  # (values, indices): the indices need the whole dim
    if not _sharded(x):
        return NotImplemented
    if kwargs.get("out") is not None:
        return NotImplemented
    spec = x._spec
    mesh, shape, ndim = spec.mesh, spec.shape, len(spec.shape)
    try:
        dims = _reduced_dims(_arg(args, kwargs, pos, "dim", None), ndim)
    except (TypeError, IndexError):
        return NotImplemented
    order = None
    if kind == "norm":
        order = _norm_order(name, args, kwargs)
        if order is None:
            kind = None
    shard_count: dict = {}
    for p in spec.placements:
        if _is_shard(p):
            shard_count[p.dim] = shard_count.get(p.dim, 0) + 1
    target, made = [], []  # made: per mesh dim, what reduces it (a Partial) or None
    for i, p in enumerate(spec.placements):
        n = mesh.size(i)
        if isinstance(p, Partial):
            keep = (kind == "sum" and p.reduce_op == "sum") or (kind == "avg"
                                                                and p.reduce_op == "avg")
            target.append(p if keep else _R)
            made.append(None)
        elif _is_shard(p) and p.dim in dims:
            single = shard_count[p.dim] == 1 and isinstance(p, Shard)
            if kind == "sum" or (kind == "norm" and single):
                target.append(p)
                made.append(Partial())
            elif kind == "avg" and single and shape[p.dim] % n == 0:
                target.append(p)
                made.append(Partial("avg"))
            elif kind in ("max", "min") and single and _even_chunks(shape[p.dim], n):
                target.append(p)
                made.append(Partial(kind))
            else:
                target.append(_R)
                made.append(None)
        else:
            target.append(p)
            made.append(None)
    local_x = _local(x, target)
    result = func(local_x, *args[1:], **{k: v for k, v in kwargs.items() if k != "input"})
    first = result[0] if isinstance(result, tuple) else result
    keepdim = ndim > 0 and first.ndim == ndim
    if keepdim:
        out_shape = tuple(1 if d in dims else s for d, s in enumerate(shape))
    else:
        out_shape = tuple(s for d, s in enumerate(shape) if d not in dims)
    out = []
    for p, m in zip(target, made):
        if m is not None:
            out.append(m)
        elif _is_shard(p):
            out.append(_moved(p, p.dim if keepdim else p.dim - sum(g < p.dim for g in dims)))
        else:
            out.append(p)
    reduced = [i for i, m in enumerate(made) if m is not None]
    if reduced and kind == "avg":
        result = _ScaleGrad.apply(result, 1 / math.prod(mesh.size(i) for i in reduced))
    elif reduced and kind in ("max", "min"):
        result = _ExtremumGrad.apply(result, _ties(local_x, result, dims, keepdim), mesh,
                                     tuple(reduced), kind)
    elif reduced and kind == "norm":  # the p-th powers of the local norms sum to the whole's
        powers = _make(result ** order, mesh, out, out_shape)
        for i in reduced:
            out[i] = _R
        whole = powers._redistribute(tuple(out))
        return _make(whole._local_tensor ** (1 / order), mesh, out, out_shape)
    return _wrap(result, mesh, tuple(out), out_shape)


def _ties(x, extreme, dims, keepdim: bool):
    """How many elements of ``x`` equal the extremum of its reduced ``dims``."""
    import ember

    with ember.no_grad():
        kept = [1 if d in dims else s for d, s in enumerate(x.shape)]
        mark = (x.detach() == extreme.detach().reshape(kept))
        count = mark.sum(dims) if dims else mark
        if keepdim:
            count = count.reshape(extreme.shape)
        return count.to(extreme.dtype)


def _along(func, name, args, kwargs):
    """softmax, log_softmax, cumsum, ...: the dim they run along must be whole."""
    x = args[0] if args else kwargs.get("input")
    if not _sharded(x) or kwargs.get("out") is not None:
        return NotImplemented
    spec = x._spec
    try:
        d = _dim(_arg(args, kwargs, 1, "dim"), len(spec.shape))
    except (TypeError, IndexError):
        return NotImplemented
    target = tuple(_R if isinstance(p, Partial) or (_is_shard(p) and p.dim == d) else p
                   for p in spec.placements)
    local = func(_local(x, target), *args[1:], **{k: v for k, v in kwargs.items()
                                                  if k != "input"})
    return _make(local, spec.mesh, target, spec.shape)


# -- attention, embedding, products ------------------------------------------------------------
_SDPA = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale",
         "enable_gqa")


def _named(args, kwargs, names) -> dict:
    values = dict(zip(names, args))
    values.update(kwargs)
    return values


def _scaled_dot_product_attention(func, name, args, kwargs):
    """q, k, v sharded alike on a batch or head dim: attention runs on each rank's part."""
    v = _named(args, kwargs, _SDPA)
    q, k, val, mask = v.get("query"), v.get("key"), v.get("value"), v.get("attn_mask")
    qkv = (q, k, val)
    if not all(isinstance(t, DTensor) for t in qkv) or not any(_sharded(t) for t in qkv):
        return NotImplemented
    if mask is not None and not isinstance(mask, DTensor):
        return NotImplemented
    if not _same_mesh(*qkv, *([mask] if mask is not None else [])):
        return NotImplemented
    mesh = q._spec.mesh
    ndim = q.ndim
    if k.ndim != ndim or val.ndim != ndim:
        return NotImplemented
    mask_target = None if mask is None else list(mask._spec.placements)
    mask_terms = [None] * mesh.ndim
    out = []
    for i in range(mesh.ndim):
        pq, pk, pv = (t._spec.placements[i] for t in qkv)
        if pq.is_replicate() and pk.is_replicate() and pv.is_replicate():
            out.append(_R)
            if mask is not None and not mask._spec.placements[i].is_replicate():
                mask_target[i] = _R
            continue
        if not (isinstance(pq, Shard) and pq == pk == pv and pq.dim < ndim - 2):
            return NotImplemented
        d = pq.dim
        sizes = [t._spec.shape[d] for t in qkv]
        n = mesh.size(i)
        gqa = v.get("enable_gqa") and d == ndim - 3
        if len(set(sizes)) != 1 and not (gqa and all(s % n == 0 for s in sizes)):
            return NotImplemented
        out.append(pq)
        if mask is not None:
            pm = mask._spec.placements[i]
            a = d - (ndim - mask.ndim)
            if a >= 0 and mask._spec.shape[a] != 1:
                if mask._spec.shape[a] != sizes[0] or not (pm.is_replicate() or pm == Shard(a)):
                    return NotImplemented
                mask_target[i] = Shard(a)
            elif pm.is_replicate():
                mask_terms[i] = Partial()
            else:
                return NotImplemented
    loc = {id(t): t._local_tensor for t in qkv}
    if mask is not None:
        loc[id(mask)] = _local(mask, mask_target, mask_terms)
    result = func(*_swap(args, lambda t: loc[id(t)]),
                  **{key: _swap(value, lambda t: loc[id(t)]) for key, value in kwargs.items()})
    shape = (*q._spec.shape[:-1], val._spec.shape[-1])
    return _make(result, mesh, out, shape)


_EMBEDDING = ("input", "weight", "padding_idx", "max_norm", "norm_type", "scale_grad_by_freq",
              "sparse")


def _embedding(func, name, args, kwargs):
    """embedding with a row-sharded weight (a masked lookup: ``Partial``), a column-sharded
    weight (``Shard(-1)``) or sharded indices and a replicated weight."""
    v = _named(args, kwargs, _EMBEDDING)
    idx, w = v.get("input"), v.get("weight")
    if not (isinstance(idx, DTensor) and isinstance(w, DTensor)) or w.ndim != 2:
        return NotImplemented
    mesh = w._spec.mesh
    if mesh.ndim != 1 or idx._spec.mesh != mesh or not (_sharded(idx) or _sharded(w)):
        return NotImplemented
    (ip,), (wp,) = idx._spec.placements, w._spec.placements
    pad = v.get("padding_idx")
    vocab, width = w._spec.shape
    extras = v.get("max_norm") is not None or v.get("scale_grad_by_freq") or v.get("sparse")
    out_shape = (*idx._spec.shape, width)
    if ip.is_replicate() and wp == Shard(0):
        n = mesh.size(0)
        if extras or not _even_chunks(vocab, n):
            return NotImplemented
        start, length = _chunk_bounds(vocab, n, _rd._coordinate(mesh)[0])
        ids = idx._local_tensor
        outside = (ids < start) | (ids >= start + length)
        local_ids = (ids - start).masked_fill(outside, 0)
        if pad is not None:
            pad = int(pad) % vocab if -vocab <= int(pad) < vocab else None
            pad = pad - start if pad is not None and start <= pad < start + length else None
        rows = func(local_ids, w._local_tensor, pad)
        rows = rows.masked_fill(outside.unsqueeze(-1), 0)
        return _make(rows, mesh, (Partial(),), out_shape)
    if ip.is_replicate() and wp == Shard(1):
        if v.get("max_norm") is not None:
            return NotImplemented
        out = func(idx._local_tensor, w._local_tensor, *args[2:], **{
            k: val for k, val in kwargs.items() if k not in ("input", "weight")})
        return _make(out, mesh, (Shard(len(out_shape) - 1),), out_shape)
    if isinstance(ip, Shard) and wp.is_replicate():
        if extras:
            return NotImplemented
        wl = _local(w, None, (Partial(),))
        out = func(idx._local_tensor, wl, *args[2:], **{
            k: val for k, val in kwargs.items() if k not in ("input", "weight")})
        return _make(out, mesh, (ip,), out_shape)
    return NotImplemented


def _matmul(func, name, args, kwargs):
    """matmul, mm, bmm: batch shards, a row shard of the left or a column shard of the right
    operand (the other used whole), the contracted dim sharded on both (``Partial``)."""
    if getattr(func, "__name__", "").startswith("__r"):
        return NotImplemented
    a = _arg(args, kwargs, 0, "input")
    b = _arg(args, kwargs, 1, "mat2" if name != "matmul" else "other")
    if not (isinstance(a, DTensor) and isinstance(b, DTensor)) or not (_sharded(a)
                                                                       or _sharded(b)):
        return NotImplemented
    if not _same_mesh(a, b) or a.ndim < 2 or b.ndim < 2 or kwargs.get("out") is not None:
        return NotImplemented
    sa, sb = a._spec.shape, b._spec.shape
    if name == "mm" and (a.ndim != 2 or b.ndim != 2):
        return NotImplemented
    if name == "bmm" and (a.ndim != 3 or b.ndim != 3 or sa[0] != sb[0]):
        return NotImplemented
    batch = _broadcast([sa[:-2], sb[:-2]])
    if batch is None:
        return NotImplemented
    if sa[-1] != sb[-2]:
        return NotImplemented
    nd = len(batch) + 2
    out_shape = (*batch, sa[-2], sb[-1])
    mesh = a._spec.mesh
    ta, tb = list(a._spec.placements), list(b._spec.placements)
    terms_a, terms_b = [None] * mesh.ndim, [None] * mesh.ndim

    def role(p, t, last: str, second: str):
        if p.is_replicate():
            return "R", None
        if isinstance(p, Partial):
            return ("P", p.reduce_op) if p.reduce_op in ("sum", "avg") else (None, None)
        if not isinstance(p, Shard):
            return None, None
        if p.dim == t.ndim - 1:
            return last, None
        if p.dim == t.ndim - 2:
            return second, None
        e = p.dim + nd - t.ndim
        return ("b", e) if t._spec.shape[p.dim] == out_shape[e] else (None, None)

    def batch_part(t, e: int):
        """The dim of ``t`` aligned with output batch dim ``e`` (None where it broadcasts)."""
        d = e - (nd - t.ndim)
        return d if 0 <= d < t.ndim - 2 and t._spec.shape[d] != 1 else None

    out = []
    for i in range(mesh.ndim):
        (ra, xa), (rb, xb) = role(ta[i], a, "k", "m"), role(tb[i], b, "n", "k")
        if (ra, rb) == ("R", "R"):
            out.append(_R)
        elif (ra, rb) == ("k", "k"):
            out.append(Partial())
        elif (ra, rb) == ("k", "R"):
            tb[i] = Shard(b.ndim - 2)
            out.append(Partial())
        elif (ra, rb) == ("R", "k"):
            ta[i] = Shard(a.ndim - 1)
            out.append(Partial())
        elif (ra, rb) == ("m", "R"):
            terms_b[i] = Partial()
            out.append(Shard(nd - 2))
        elif (ra, rb) == ("R", "n"):
            terms_a[i] = Partial()
            out.append(Shard(nd - 1))
        elif ra == "b" and rb == "b" and xa == xb:
            out.append(Shard(xa))
        elif ra == "b" and rb == "R":
            d = batch_part(b, xa)
            if d is None:
                terms_b[i] = Partial()
            else:
                tb[i] = Shard(d)
            out.append(Shard(xa))
        elif ra == "R" and rb == "b":
            d = batch_part(a, xb)
            if d is None:
                terms_a[i] = Partial()
            else:
                ta[i] = Shard(d)
            out.append(Shard(xb))
        elif ra == "P" and rb == "R":
            terms_b[i] = Partial(xa)
            out.append(Partial(xa))
        elif ra == "R" and rb == "P":
            terms_a[i] = Partial(xb)
            out.append(Partial(xb))
        else:
            return NotImplemented
    la, lb = _local(a, ta, terms_a), _local(b, tb, terms_b)
    rest = {k: val for k, val in kwargs.items() if k not in ("input", "other", "mat2")}
    return _make(func(la, lb, *args[2:], **rest), mesh, out, out_shape)


def _linear(func, name, args, kwargs):
    """Tensor parallelism's shardings of ``linear`` on a 1-d mesh (and a batch shard)."""
    v = _named(args, kwargs, ("input", "weight", "bias"))
    x, w, b = v.get("input"), v.get("weight"), v.get("bias")
    if not (isinstance(x, DTensor) and isinstance(w, DTensor)) or w.ndim != 2:
        return NotImplemented
    mesh = w._spec.mesh
    if mesh.ndim != 1 or x._spec.mesh != mesh or (b is not None and not isinstance(b, DTensor)):
        return NotImplemented
    if b is not None and b._spec.mesh != mesh:
        return NotImplemented
    (xp,), (wp,) = x._spec.placements, w._spec.placements
    bp = b._spec.placements[0] if b is not None else None
    shape = (*x._spec.shape[:-1], w._spec.shape[0])
    last = x.ndim - 1
    if xp.is_replicate() and wp == Shard(0) and bp in (None, Shard(0)):  # column-wise
        # each rank's gradient of the replicated input is a term of the whole (its columns'
        # part): summed over the ranks in the backward, as PyTorch's sharding gives it Partial
        xl = _local(x, None, (Partial(),))
        out = func(xl, w._local_tensor, None if b is None else b._local_tensor)
        return _make(out, mesh, (Shard(len(shape) - 1),), shape)
    if xp == Shard(last) and wp in (Shard(1), _R) and bp in (None, _R):  # row-wise
        wl = _local(w, (Shard(1),))
        terms = _make(func(x._local_tensor, wl, None), mesh, (Partial(),), shape)
        if b is None:
            return terms
        full = terms._redistribute((_R,))
        return _make(full._local_tensor + b._local_tensor, mesh, (_R,), shape)
    if isinstance(xp, Shard) and xp.dim < last and wp.is_replicate() and bp in (None, _R):
        out = func(x._local_tensor, _local(w, None, (Partial(),)),
                   None if b is None else _local(b, None, (Partial(),)))
        return _make(out, mesh, (xp,), shape)
    return NotImplemented


# -- joining, indexing, splitting --------------------------------------------------------------
def _join(func, name, args, kwargs):
    """cat and stack of DTensors placed alike, along a dim none of them is sharded on."""
    tensors = _arg(args, kwargs, 0, "tensors")
    if not isinstance(tensors, (list, tuple)) or not tensors or kwargs.get("out") is not None:
        return NotImplemented
    if not all(isinstance(t, DTensor) for t in tensors) or not _sharded(tensors[0]):
        return NotImplemented
    first = tensors[0]._spec
    if any(t._spec.placements != first.placements or t._spec.mesh != first.mesh
           or t.ndim != len(first.shape) for t in tensors):
        return NotImplemented
    if any(isinstance(p, Partial) for p in first.placements):
        return NotImplemented
    stack = name == "stack"
    ndim = len(first.shape)
    try:
        d = _dim(_arg(args, kwargs, 1, "dim", kwargs.get("axis", 0)), ndim + stack)
    except (TypeError, IndexError):
        return NotImplemented
    shapes = [t._spec.shape for t in tensors]
    if stack:
        if any(s != first.shape for s in shapes):
            return NotImplemented
        out_shape = (*first.shape[:d], len(tensors), *first.shape[d:])
        out = tuple(_moved(p, p.dim + (p.dim >= d)) if _is_shard(p) else p
                    for p in first.placements)
    else:
        if ndim == 0 or any(_is_shard(p) and p.dim == d for p in first.placements):
            return NotImplemented
        if any(s[:d] != first.shape[:d] or s[d + 1:] != first.shape[d + 1:] for s in shapes):
            return NotImplemented
        out_shape = (*first.shape[:d], sum(s[d] for s in shapes), *first.shape[d + 1:])
        out = first.placements
    result = func(*_swap(args, lambda t: t._local_tensor),
                  **{k: _swap(v, lambda t: t._local_tensor) for k, v in kwargs.items()})
    return _make(result, first.mesh, out, out_shape)


def _basic_index(shape, index):
    """(output shape, {input dim: output dim} of the dims kept, {input dim: whole?}) of a basic
    index (ints, slices, None, Ellipsis), or None for any other index."""
    items = index if isinstance(index, tuple) else (index,)
    used = sum(1 for it in items if it is not None and it is not Ellipsis)
    if sum(1 for it in items if it is Ellipsis) > 1 or used > len(shape):
        return None
    expanded = []
    for it in items:
        if it is Ellipsis:
            expanded.extend([slice(None)] * (len(shape) - used))
        else:
            expanded.append(it)
    expanded.extend([slice(None)] * (len(shape) - sum(1 for it in expanded if it is not None)))
    out_shape, kept, whole = [], {}, {}
    d = 0
    for it in expanded:
        if it is None:
            out_shape.append(1)
        elif isinstance(it, slice):
            if not all(v is None or (isinstance(v, numbers.Integral) and not isinstance(v, bool))
                       for v in (it.start, it.stop, it.step)):
                return None
            if it.step is not None and it.step <= 0:
                return None
            start, stop, step = it.indices(shape[d])
            kept[d] = len(out_shape)
            whole[d] = (start, stop, step) == (0, shape[d], 1)
            out_shape.append(len(range(start, stop, step)))
            d += 1
        elif isinstance(it, numbers.Integral) and not isinstance(it, bool):
            if not -shape[d] <= int(it) < shape[d]:
                return None
            whole[d] = False
            d += 1
        else:
            return None
    return tuple(out_shape), kept, whole


def _index_like(x: DTensor, whole: dict, kept: dict):
    """(input target, output placements) when input dim d stays whole where ``whole[d]`` and
    moves to ``kept[d]``: shards of the other dims are gathered first."""
    target, out = [], []
    for p in x._spec.placements:
        if _is_shard(p) and not whole.get(p.dim, True):
            target.append(_R)
            out.append(_R)
        elif _is_shard(p):
            target.append(p)
            out.append(_moved(p, kept[p.dim]))
        else:
            target.append(p)
            out.append(p)
    return tuple(target), tuple(out)


def _getitem(func, name, args, kwargs):
    """Basic indexing (ints, slices, None, ...): shards of whole dims stay."""
    x = args[0] if args else None
    if not _sharded(x) or len(args) != 2 or kwargs:
        return NotImplemented
    found = _basic_index(x._spec.shape, args[1])
    if found is None:
        return NotImplemented
    out_shape, kept, whole = found
    target, out = _index_like(x, whole, kept)
    return _make(func(_local(x, target), args[1]), x._spec.mesh, out, out_shape)


def _narrow(func, name, args, kwargs):
    """narrow, select, index_select on a dim; the other dims' shards stay."""
    x = _arg(args, kwargs, 0, "input")
    if not _sharded(x) or kwargs.get("out") is not None:
        return NotImplemented
    shape = x._spec.shape
    try:
        d = _dim(_arg(args, kwargs, 1, "dim"), len(shape))
    except (TypeError, IndexError):
        return NotImplemented
    if name == "index_select":
        index = _arg(args, kwargs, 2, "index")
        if (not isinstance(index, DTensor) or index._spec.mesh != x._spec.mesh
                or _sharded(index) or index.ndim > 1):
            return NotImplemented
        rest = (index._local_tensor,)
        size = index._spec.shape[0] if index.ndim else 1
    elif name == "narrow":
        start, length = _arg(args, kwargs, 2, "start"), _arg(args, kwargs, 3, "length")
        if not all(isinstance(v, numbers.Integral) for v in (start, length)):
            return NotImplemented
        rest, size = (start, length), int(length)
    else:  # select
        index = _arg(args, kwargs, 2, "index")
        if not isinstance(index, numbers.Integral):
            return NotImplemented
        rest, size = (index,), None
    if size is None:
        kept = {e: e - (e > d) for e in range(len(shape)) if e != d}
        out_shape = shape[:d] + shape[d + 1:]
    else:
        kept = {e: e for e in range(len(shape))}
        out_shape = (*shape[:d], size, *shape[d + 1:])
    target, out = _index_like(x, {d: False}, kept)
    return _make(func(_local(x, target), d, *rest), x._spec.mesh, out, out_shape)


def _split(func, name, args, kwargs):
    """split, chunk, unbind: pieces along an unsharded dim keep the other dims' shards."""
    x = _arg(args, kwargs, 0, "input", kwargs.get("tensor"))
    if not _sharded(x):
        return NotImplemented
    shape = x._spec.shape
    pos = 1 if name == "unbind" else 2
    try:
        d = _dim(_arg(args, kwargs, pos, "dim", 0), len(shape))
    except (TypeError, IndexError):
        return NotImplemented
    drop = name == "unbind"
    kept = {e: e - (drop and e > d) for e in range(len(shape)) if not (drop and e == d)}
    target, out = _index_like(x, {d: False}, kept)
    pieces = func(_local(x, target), *args[1:], **{k: v for k, v in kwargs.items()
                                                   if k not in ("input", "tensor")})
    result = []
    for piece in pieces:
        if drop:
            piece_shape = shape[:d] + shape[d + 1:]
        else:
            piece_shape = (*shape[:d], piece.shape[d], *shape[d + 1:])
        result.append(_make(piece, x._spec.mesh, out, piece_shape))
    return tuple(result)


def _requires_grad_(func, name, args, kwargs):
    self = args[0]
    flag = args[1] if len(args) > 1 else kwargs.get("requires_grad", True)
    self._local_tensor.requires_grad_(flag)
    return self


HANDLERS = {"requires_grad_": _requires_grad_, "linear": _linear,
            "scaled_dot_product_attention": _scaled_dot_product_attention,
            "embedding": _embedding, "matmul": _matmul, "mm": _matmul, "bmm": _matmul,
            "cat": _join, "concat": _join, "concatenate": _join, "stack": _join,
            "index": _getitem, "narrow": _narrow, "select": _narrow,
            "index_select": _narrow, "split": _split, "chunk": _split, "unbind": _split,
            "view_as_complex": _complex_view, "view_as_real": _complex_view}
for _name in ("view", "reshape", "view_as", "flatten", "unflatten", "squeeze", "unsqueeze",
              "expand", "expand_as"):
    HANDLERS[_name] = _view
for _name in ("transpose", "swapaxes", "swapdims", "permute", "t", "movedim", "moveaxis"):
    HANDLERS[_name] = _permute
for _name in _REDUCTIONS:
    HANDLERS[_name] = _reduction
for _name in _ALONG:
    HANDLERS[_name] = _along
