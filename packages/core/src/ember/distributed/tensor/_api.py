"""``DTensor``: a tensor laid over a ``DeviceMesh`` by one placement per mesh dimension.

PyTorch's ``torch.distributed.tensor.DTensor``: each rank holds a local tensor (its shard, a
replica or a partial term); the DTensor reports the global shape and runs ember's functions
and Tensor methods as the global tensor would. How ops run (``__torch_function__``, on the
local tensors; ``_dispatch``):

- an op with a sharding rule (``_ops.HANDLERS``, looked up by op key) runs on the local
  tensors and gives PyTorch's placements: views and permutations move the shards
  (``view(b, s, h, d)`` of a ``Shard(2)`` stays ``Shard(2)``), reductions over a sharded
  dim give ``Partial`` terms, ``scaled_dot_product_attention`` runs per head shard,
  ``embedding`` of a row-sharded weight is a masked lookup giving ``Partial``, ``matmul``
  and ``linear`` follow tensor parallelism's column- and row-wise patterns (a replicated
  input times a weight ``Shard(0)`` gives ``Shard(-1)``; an input ``Shard(-1)`` times a
  weight ``Shard(1)`` gives ``Partial`` terms, summed before a bias is added), and ``cat``,
  ``stack``, indexing and ``split`` keep the shards of the dims they leave whole (``_ops``
  lists the rules). A dim a rule cannot keep sharded is gathered on its mesh dim first;
- elementwise ops (the vmap batching rules' pointwise list: ``add``, ``relu``, ``where``,
  casts, ``clone``, their in-place forms, ...) whose DTensor operands share placements and
  shape run on the local tensors and keep the placements; with broadcasting or mixed
  placements ``_ops.pointwise`` aligns the operands (a replicated one sliced to the shard or
  used whole) and keeps ``Partial`` terms where the op is linear in them;
- any other op of replicated DTensors runs on the local tensors; its results are replicated;
- every other op, and what a rule leaves (conflicting shards, some multi-dim mesh cases),
  gathers its DTensor operands to replicas (differentiably) and runs on them: the values are
  the global op's, the result replicated (PyTorch's strategies may keep such a result
  sharded; ``full_tensor()`` is the same).

Autograd runs on the local tensors: ``from_local`` keeps the given tensor as the local one,
so gradients reach it; redistributions send the gradient back to the source placements
(``_redistribute``). Plain tensors of more than 0 dims mixed with DTensors raise PyTorch's
error. ``DTensor`` turns ``__torch_function__`` dispatch on (``ember.overrides``) with the
first DTensor made, not at import, so a program that imports this module (HuggingFace
transformers does) and never makes one pays nothing for it.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np

from ... import overrides
from ..._tensor import Tensor
from ...ops.registry import op_key
from ..device_mesh import _CURRENT, DeviceMesh
from . import _redistribute as _rd
from . import experimental as _experimental
from .placement_types import Partial, Placement, Replicate, Shard, _StridedShard

__all__ = ["DTensor", "distribute_tensor", "distribute_module", "DTensorSpec"]

_NO_GLOBAL = ("a DTensor has no global array on a rank (each holds its local tensor): use "
              "dt.to_local() for this rank's part or dt.full_tensor() for the whole")


class _NoGlobalArray(AttributeError):
    pass


class _GlobalMeta:
    """What a DTensor's ``_data`` slot holds: the global shape and dtype, no elements. Any
    use as an array (a NumPy call, indexing) raises, so no code path computes on it."""

    __slots__ = ("shape", "dtype", "ndim", "size", "itemsize", "strides")
    __array_ufunc__ = None  # NumPy ufuncs refuse it

    def __init__(self, shape, dtype):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.ndim = len(self.shape)
        self.size = math.prod(self.shape)
        self.itemsize = self.dtype.itemsize
        strides, step = [], self.itemsize
        for s in reversed(self.shape):
            strides.append(step)
            step *= max(s, 1)
        self.strides = tuple(reversed(strides))

    def __array__(self, *args, **kwargs):
        raise RuntimeError(_NO_GLOBAL)

    def __array_function__(self, func, types, args, kwargs):
        raise RuntimeError(_NO_GLOBAL)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, item):
        raise RuntimeError(_NO_GLOBAL)

    def __getattr__(self, name: str):
        raise _NoGlobalArray(f"{_NO_GLOBAL} (needed: .{name})")


@dataclass(frozen=True)
class DTensorSpec:
    """A DTensor's mesh, placements and global shape."""

    mesh: DeviceMesh
    placements: tuple
    shape: tuple

    @property
    def ndim(self) -> int:
        return len(self.shape)


_new = object.__new__


def _normalize(placements, ndim: int, mesh: DeviceMesh) -> tuple:
    if placements is None:
        return (Replicate(),) * mesh.ndim
    placements = tuple(placements)
    if len(placements) != mesh.ndim:
        raise ValueError(f"`placements` must have the same length as `device_mesh.ndim`! "
                         f"Found placements length: {len(placements)}, and device_mesh.ndim: "
                         f"{mesh.ndim}.")
    out = []
    for p in placements:
        if not isinstance(p, Placement):
            raise TypeError(f"placements must be Shard, Replicate or Partial, got {p!r}")
        if isinstance(p, (Shard, _StridedShard)):
            if not -max(ndim, 1) <= p.dim < max(ndim, 1):
                raise IndexError(f"{p!r} is out of range for a tensor of {ndim} dims")
            if p.dim < 0:
                p = (Shard(p.dim % ndim) if isinstance(p, Shard)
                     else _StridedShard(p.dim % ndim, split_factor=p.split_factor))
        out.append(p)
    return tuple(out)


def _mesh_or_current(device_mesh) -> DeviceMesh:
    if device_mesh is not None:
        if not isinstance(device_mesh, DeviceMesh):
            raise TypeError(f"device_mesh must be a DeviceMesh, got "
                            f"{type(device_mesh).__name__}")
        return device_mesh
    if _CURRENT:
        return _CURRENT[-1]
    raise RuntimeError("No device mesh is currently active! pass device_mesh=, or enter one "
                       "with `with mesh:`")


def _replicated(n: int) -> tuple:
    return (Replicate(),) * n


class DTensor(Tensor):
    """A global tensor whose elements lie on the ranks of ``device_mesh`` as ``placements``
    say. Make one with :func:`distribute_tensor` or :meth:`DTensor.from_local`."""

    #: nn.Parameter(dtensor) is the DTensor itself, marked as a parameter
    _ember_wrapper_subclass = True
    # off until the first DTensor is made (``_activate`` installs the dispatching one)
    __torch_function__ = overrides.disabled_torch_function_impl

    def __new__(cls, local_tensor, spec: DTensorSpec, *, requires_grad: bool = False):
        if requires_grad != local_tensor.requires_grad:
            local_tensor = local_tensor.detach().requires_grad_(requires_grad)
        return DTensor._make(local_tensor, spec.mesh, spec.placements, spec.shape)

    @staticmethod
    def _make(local, mesh: DeviceMesh, placements, shape) -> DTensor:
        _activate()
        t = _new(DTensor)
        t._data = _GlobalMeta(shape, local._data.dtype)
        t._device = local._device
        t.__dict__["_local_tensor"] = local
        t.__dict__["_spec"] = DTensorSpec(mesh, tuple(placements), tuple(int(s)
                                                                          for s in shape))
        return t

    # -- autograd fields live on the local tensor ------------------------------------------
    @property
    def requires_grad(self) -> bool:  # type: ignore[override]
        return self._local_tensor.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self._local_tensor.requires_grad = value

    @property
    def grad_fn(self):  # type: ignore[override]
        return self._local_tensor.grad_fn

    @grad_fn.setter
    def grad_fn(self, value) -> None:
        self._local_tensor.grad_fn = value

    @property
    def is_leaf(self) -> bool:
        return self._local_tensor.is_leaf

    @property
    def grad(self):
        g = self._local_tensor.grad
        if g is None:
            return None
        spec = self._spec
        return DTensor._make(g, spec.mesh, _rd.grad_placements(spec.placements), spec.shape)

    @grad.setter
    def grad(self, value) -> None:
        if value is not None and isinstance(value, DTensor):
            value = value.redistribute(self._spec.mesh,
                                       _rd.grad_placements(self._spec.placements)).to_local()
        self._local_tensor.grad = value

    @grad.deleter
    def grad(self) -> None:
        self._local_tensor.grad = None

    @property
    def data(self):
        spec = self._spec
        return DTensor._make(self._local_tensor.detach(), spec.mesh, spec.placements,
                             spec.shape)

    @data.setter
    def data(self, value) -> None:
        """Swap in another DTensor's local data (``Module.to``/``double``: the parameter
        object stays, as optimizers hold it); a plain tensor is refused."""
        if not isinstance(value, DTensor):
            raise RuntimeError(f"a DTensor's data must be a DTensor, got "
                               f"{type(value).__name__}")
        self._local_tensor.data = value._local_tensor
        self._data = _GlobalMeta(value._spec.shape, value._local_tensor._data.dtype)
        self._device = value._local_tensor._device
        self.__dict__["_spec"] = value._spec

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        if isinstance(gradient, DTensor):
            gradient = gradient.redistribute(self._spec.mesh, _rd.grad_placements(
                self._spec.placements)).to_local()
        if inputs is not None:
            inputs = [i._local_tensor if isinstance(i, DTensor) else i
                      for i in ([inputs] if isinstance(inputs, Tensor) else inputs)]
        if gradient is None and not all(p.is_replicate() for p in self._spec.placements):
            # the gradient of the global sum is 1 everywhere, each rank seeds its part
            gradient = self._local_tensor.new_ones(self._local_tensor.shape)
        self._local_tensor.backward(gradient, retain_graph, create_graph, inputs)

    def retain_grad(self) -> None:
        self._local_tensor.retain_grad()

    def register_hook(self, hook):
        spec = self._spec

        def local_hook(grad):
            out = hook(DTensor._make(grad, spec.mesh, _rd.grad_placements(spec.placements),
                                     spec.shape))
            return out.to_local() if isinstance(out, DTensor) else out

        return self._local_tensor.register_hook(local_hook)

    # -- what it is ------------------------------------------------------------------------
    @property
    def device_mesh(self) -> DeviceMesh:
        return self._spec.mesh

    @property
    def placements(self) -> tuple:
        return self._spec.placements

    def stride(self, dim: int | None = None):
        strides = tuple(s // max(self._data.itemsize, 1) for s in self._data.strides)
        return strides if dim is None else strides[dim]

    def is_contiguous(self, *, memory_format=None) -> bool:
        return self._local_tensor.is_contiguous()

    def data_ptr(self) -> int:
        return self._local_tensor.data_ptr()

    def __repr__(self) -> str:
        return (f"DTensor(local_tensor={self._local_tensor}, device_mesh={self._spec.mesh}, "
                f"placements={self._spec.placements})")

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        local = copy.deepcopy(self._local_tensor, memo)
        out = DTensor._make(local, self._spec.mesh, self._spec.placements, self._spec.shape)
        if type(self) is not DTensor:  # a DTensor parameter stays one
            out.__class__ = type(self)
        memo[id(self)] = out
        return out

    def __reduce_ex__(self, protocol):
        raise RuntimeError("a DTensor is not picklable as one object: save "
                           "dt.full_tensor() (or each rank's dt.to_local())")

    # -- values as Python objects go through the whole tensor -----------------------------
    def item(self):
        return self.full_tensor().item()

    def tolist(self):
        return self.full_tensor().tolist()

    def numpy(self, *, force: bool = False):
        return self.full_tensor().numpy(force=force)

    def __bool__(self) -> bool:
        return bool(self.full_tensor())

    def __int__(self) -> int:
        return int(self.full_tensor())

    def __float__(self) -> float:
        return float(self.full_tensor())

    def __index__(self) -> int:
        return self.full_tensor().__index__()

    def __array__(self, dtype=None, copy=None):
        return self.full_tensor().__array__(dtype)

    # -- the DTensor API -------------------------------------------------------------------
    @staticmethod
    def from_local(local_tensor, device_mesh=None, placements=None, *, run_check: bool = False,
                   shape=None, stride=None) -> DTensor:
        """A DTensor of this rank's ``local_tensor`` (its shard, replica or partial term).
        Without ``shape`` the global shape assumes even shards (each local size times the
        mesh dim's size), as PyTorch does. ``run_check=True`` broadcasts the replicated
        dims' tensor from each mesh dim's first rank. Gradients reach ``local_tensor``."""
        if not isinstance(local_tensor, Tensor) or isinstance(local_tensor, DTensor):
            raise TypeError(f"from_local expects a local torch.Tensor, got "
                            f"{type(local_tensor).__name__}")
        mesh = _mesh_or_current(device_mesh)
        placements = _normalize(placements, local_tensor.ndim, mesh)
        if shape is None:
            glob = list(local_tensor.shape)
            for i, p in enumerate(placements):
                if isinstance(p, (Shard, _StridedShard)):
                    glob[p.dim] *= mesh.size(i)
            shape = tuple(glob)
        elif len(tuple(shape)) != local_tensor.ndim:
            raise ValueError(f"from_local: shape {tuple(shape)} has {len(tuple(shape))} dims, "
                             f"the local tensor {local_tensor.ndim}")
        if run_check:
            from ... import no_grad
            from .. import distributed_c10d as c10d

            with no_grad():
                for i, p in enumerate(placements):
                    if p.is_replicate():
                        buf = local_tensor.detach().contiguous().clone()
                        c10d.broadcast(buf, group_src=mesh._group_rank(i, 0),
                                       group=mesh.get_group(i))
                        local_tensor.detach().copy_(buf)
        return DTensor._make(local_tensor, mesh, placements, shape)

    def to_local(self, *, grad_placements=None):
        """This rank's local tensor (its gradient flows back into the DTensor's graph).
        ``grad_placements`` says how the gradient that will reach the local tensor lies
        (``[Partial()]``: each rank's is a term of the sum, as tensor parallelism's
        column-wise input has); the backward then redistributes it to this DTensor's
        placements (an all-reduce for that one)."""
        if grad_placements is None:
            return self._local_tensor
        spec = self._spec
        grad_placements = _normalize(grad_placements, self.ndim, spec.mesh)
        target = _rd.grad_placements(spec.placements)
        if grad_placements == target:
            return self._local_tensor
        return _rd.GradTo.apply(self._local_tensor, spec.mesh, grad_placements, target,
                                spec.shape)

    def redistribute(self, device_mesh=None, placements=None, *, async_op: bool = False,
                     forward_dtype=None, backward_dtype=None) -> DTensor:
        """The same global tensor placed as ``placements`` (collectives as needed;
        differentiable)."""
        mesh = self._spec.mesh if device_mesh is None else device_mesh
        if mesh != self._spec.mesh:
            raise NotImplementedError("Cross device mesh comm not supported yet!")
        if placements is None:
            raise RuntimeError("placements is needed for redistribute!")
        placements = _normalize(placements, self.ndim, mesh)
        for cur, new in zip(self._spec.placements, placements):
            if isinstance(new, Partial) and cur != new:
                raise RuntimeError("Can not redistribute to Partial, redistributing to Partial "
                                   "is for internal use only!")
        return self._redistribute(placements, forward_dtype)

    def _redistribute(self, placements, dtype=None) -> DTensor:
        spec = self._spec
        local = self._local_tensor
        if dtype is not None and local.dtype != dtype:
            local = local.to(dtype)
        if tuple(placements) != spec.placements:
            local = _rd.Redistribute.apply(local, spec.mesh, spec.placements,
                                           tuple(placements), spec.shape)
        return DTensor._make(local, spec.mesh, placements, spec.shape)

    def full_tensor(self, *, grad_placements=None):
        """The whole global tensor on every rank (an all-gather/all-reduce;
        differentiable)."""
        return self._redistribute(_replicated(self._spec.mesh.ndim)).to_local(
            grad_placements=grad_placements)

    def _full(self):
        return self.full_tensor()


# -- __torch_function__: how ember's ops run on DTensors ---------------------------------------
_STATE = {"on": False}


_ops = None  # the sharding rules (``_ops``, which builds on this module): loaded by _activate


def _activate() -> None:
    global _ops
    if not _STATE["on"]:
        from . import _ops as rules

        _ops = rules
        DTensor.__torch_function__ = classmethod(_torch_function)  # type: ignore[assignment]
        overrides.activate()
        _STATE["on"] = True


def _pointwise_names() -> frozenset:
    from ...ops import batching_rules as br

    return frozenset(br._UNARY + br._BINARY + br._INPLACE) | {"requires_grad_", "detach_"}


_POINTWISE: list = []


def _walk(obj, found: list) -> None:
    if isinstance(obj, DTensor):
        found.append(obj)
    elif type(obj) in (list, tuple):
        for o in obj:
            _walk(o, found)


def _swap(obj, fn):
    if isinstance(obj, DTensor):
        return fn(obj)
    if type(obj) in (list, tuple):
        return type(obj)(_swap(o, fn) for o in obj)
    return obj


def _mixed(args, kwargs) -> bool:
    """Whether a plain (non-DTensor) tensor is among the arguments."""
    def plain(o):
        if isinstance(o, Tensor):
            return not isinstance(o, DTensor)
        return type(o) in (list, tuple) and any(plain(x) for x in o)

    return any(plain(a) for a in args) or any(plain(v) for v in kwargs.values())


def _check_mixed(name: str, args, kwargs) -> None:
    def check(o):
        if isinstance(o, Tensor) and not isinstance(o, DTensor) and o.ndim > 0:
            raise RuntimeError(f"aten.{name}: got mixed torch.Tensor and DTensor, need to "
                               f"convert all torch.Tensor to DTensor before calling "
                               f"distributed operators!")
        if type(o) in (list, tuple):
            for x in o:
                check(x)

    for a in args:
        check(a)
    for v in kwargs.values():
        check(v)


def _wrap(out, mesh, placements, shape):
    if isinstance(out, Tensor) and not isinstance(out, DTensor):
        return DTensor._make(out, mesh, placements, shape)
    if type(out) in (list, tuple):
        return type(out)(_wrap(o, mesh, placements, shape) for o in out)
    if isinstance(out, tuple) and hasattr(out, "_fields"):
        return type(out)(*(_wrap(o, mesh, placements, shape) for o in out))
    return out


def _wrap_replicated(out, mesh):
    if isinstance(out, Tensor) and not isinstance(out, DTensor):
        return DTensor._make(out, mesh, _replicated(mesh.ndim), out.shape)
    if type(out) in (list, tuple):
        return type(out)(_wrap_replicated(o, mesh) for o in out)
    if isinstance(out, tuple) and hasattr(out, "_fields"):
        return type(out)(*(_wrap_replicated(o, mesh) for o in out))
    return out


def _local(d: DTensor):
    return d._local_tensor


def _torch_function(cls, func, types, args=(), kwargs=None):
    kwargs = kwargs or {}
    if not all(issubclass(t, (DTensor, Tensor)) for t in types):
        return NotImplemented
    with overrides.DisableTorchFunctionSubclass():
        return _dispatch(func, op_key(func), args, kwargs)


_FOREACH = "_foreach_"


def _pick(obj, i: int, n: int):
    """Item ``i`` of a foreach op's per-tensor list (lists of length ``n``) as a 1-list."""
    if type(obj) in (list, tuple) and len(obj) == n:
        return [obj[i]]
    return obj


def _dispatch(func, name: str, args, kwargs):
    if _experimental.IMPLICIT.on and _mixed(args, kwargs):
        dtensors: list = []
        _walk(args, dtensors)
        _walk(list(kwargs.values()), dtensors)
        if dtensors:  # implicit_replication(): plain tensors join as replicas
            args, kwargs = _experimental.replicate_plain(dtensors[0]._spec.mesh, args, kwargs)
    handler = _ops.HANDLERS.get(name)
    if handler is not None:
        out = handler(func, name, args, kwargs)
        if out is not NotImplemented:
            return out
    found: list = []
    _walk(args, found)
    _walk(list(kwargs.values()), found)
    if not found:
        return func(*args, **kwargs)
    mesh = found[0]._spec.mesh
    for d in found[1:]:
        if d._spec.mesh != mesh:
            raise NotImplementedError(f"DTensor does not support cross-mesh operation on "
                                      f"{name} yet! Got meshes: {mesh} {d._spec.mesh}")
    _check_mixed(name, args, kwargs)
    foreach = name.startswith(_FOREACH)
    if foreach and args and type(args[0]) in (list, tuple) and len(args[0]) != 1:
        # one tensor at a time: each pairs its own placements (optimizers' and clipping's
        # _foreach_mul_ / _foreach_add_ over DTensor gradients)
        n = len(args[0])
        results = [_dispatch(func, name, [_pick(a, i, n) for a in args],
                             {k: _pick(v, i, n) for k, v in kwargs.items()})
                   for i in range(n)]
        if name.endswith("_"):
            return None
        return [r[0] if type(r) in (list, tuple) else r for r in results]
    core = name[len(_FOREACH):] if foreach else name
    inplace = core.endswith("_") and not core.startswith("_")
    target = args[0] if args else None
    if foreach and type(target) in (list, tuple):
        target = target[0] if target else None
    # the placements to keep: the first DTensor that is not a replicated scalar
    lead = next((d for d in found if d.ndim or not all(p.is_replicate()
                                                       for p in d._spec.placements)),
                found[0])
    spec = lead._spec
    if not _POINTWISE:
        _POINTWISE.append(_pointwise_names())
    pointwise = core in _POINTWISE[0] or (foreach and core.rstrip("_") in _POINTWISE[0])
    if (pointwise and not any(isinstance(p, Partial) for p in spec.placements)
            and all((d._spec.placements == spec.placements and d._spec.shape == spec.shape)
                    or (d.ndim == 0 and not d.requires_grad
                        and all(p.is_replicate() for p in d._spec.placements))
                    for d in found)):
        # elementwise: each rank's part of the result from its parts (a replicated scalar
        # is whole on every rank; one that needs a gradient takes the rule below, which sums
        # its gradient's terms over the ranks)
        out = func(*_swap(args, _local), **{k: _swap(v, _local) for k, v in kwargs.items()})
        if inplace and isinstance(target, DTensor):
            return None if foreach else args[0]
        return _wrap(out, mesh, spec.placements, spec.shape)
    if all(p.is_replicate() for d in found for p in d._spec.placements):
        out = func(*_swap(args, _local), **{k: _swap(v, _local) for k, v in kwargs.items()})
        if inplace and isinstance(target, DTensor):
            return None if foreach else args[0]
        return _wrap_replicated(out, mesh)
    if pointwise and not foreach:  # broadcasting, mixed placements, partial terms
        out = _ops.pointwise(func, core, args, kwargs, found, mesh, inplace)
        if out is not NotImplemented:
            return out
    # gather the operands to replicas and run the op on them
    full: dict = {}

    def gathered(d: DTensor):
        if id(d) not in full:
            full[id(d)] = d.full_tensor()
        return full[id(d)]

    out = func(*_swap(args, gathered), **{k: _swap(v, gathered) for k, v in kwargs.items()})
    if inplace and isinstance(target, DTensor):
        tspec = target._spec
        back = _rd.Redistribute.apply(full[id(target)], mesh, _replicated(mesh.ndim),
                                      tspec.placements, tspec.shape)
        target._local_tensor.copy_(back)
        return None if foreach else target
    return _wrap_replicated(out, mesh)


# -- making DTensors ---------------------------------------------------------------------------
def distribute_tensor(tensor, device_mesh=None, placements=None, *, src_data_rank: int | None = 0,
                      ) -> DTensor:
    """``tensor`` (the whole tensor, on every rank) placed over ``device_mesh``: each rank keeps
    its part. With ``src_data_rank`` (default 0) the data of that rank along each mesh dim is
    what every rank gets (a broadcast); with None each rank's own copy is used as is. The
    result is a leaf that requires grad when ``tensor`` does."""
    from ... import no_grad
    from .. import distributed_c10d as c10d

    if not isinstance(tensor, Tensor):
        raise TypeError(f"distribute_tensor expects a Tensor, got {type(tensor).__name__}")
    mesh = _mesh_or_current(device_mesh)
    if isinstance(tensor, DTensor):
        if tensor._spec.mesh != mesh:
            raise ValueError(f"Cannot distribute a DTensor with device mesh "
                             f"{tensor._spec.mesh} to a different device mesh {mesh}.")
        placements = _normalize(placements, tensor.ndim, mesh)
        if tensor._spec.placements != placements:
            raise ValueError(f"Cannot distribute a DTensor with placements "
                             f"{tensor._spec.placements} to a different placements "
                             f"{placements}. do you want to call `redistribute` instead?")
        return tensor
    placements = _normalize(placements, tensor.ndim, mesh)
    if any(isinstance(p, Partial) for p in placements):
        raise RuntimeError("distribute_tensor: Partial placements are not supported; "
                           "use DTensor.from_local with the local terms")
    with no_grad():
        full = tensor.detach()
        if src_data_rank is not None:
            full = full.contiguous().clone()
            for i in range(mesh.ndim):
                c10d.broadcast(full, group_src=mesh._group_rank(i, int(src_data_rank)),
                               group=mesh.get_group(i))
        local = _rd.redistribute_local(full, mesh, _replicated(mesh.ndim), placements,
                                       tuple(tensor.shape))
        if local is tensor or local._base is tensor or local is full and src_data_rank is None:
            local = local.clone()
        local = local.contiguous()
    local.requires_grad_(tensor.requires_grad)
    return DTensor._make(local, mesh, placements, tuple(tensor.shape))


def distribute_module(module, device_mesh=None, partition_fn=None, input_fn=None,
                      output_fn=None):
    """Distribute ``module``'s parameters and buffers: ``partition_fn(name, submodule,
    mesh)`` places each submodule's own (it may replace them with DTensor parameters);
    whatever is left a plain tensor is replicated. ``input_fn(module, inputs, mesh)`` and
    ``output_fn(module, outputs, mesh)`` become forward pre- and post-hooks."""
    import inspect

    mesh = _mesh_or_current(device_mesh)
    if getattr(module, "_distribute_module_applied", False):
        raise RuntimeError("distribute_module should only be called once on a module, but "
                           "it has already been called on this module!")

    def replicate(m):
        for key, p in list(m._parameters.items()):
            if p is not None and not isinstance(p, DTensor):
                # the parameter's own class (ember.nn.Parameter: core does not import nn)
                m.register_parameter(key, type(p)(
                    distribute_tensor(p.data, mesh, _replicated(mesh.ndim)),
                    requires_grad=p.requires_grad))
        for key, buf in list(m._buffers.items()):
            if buf is not None and not isinstance(buf, DTensor):
                m._buffers[key] = distribute_tensor(buf, mesh, _replicated(mesh.ndim))

    for name, sub in module.named_modules():
        if partition_fn is not None:
            partition_fn(name, sub, mesh)
        replicate(sub)
    if input_fn is not None:
        arity = len(inspect.signature(input_fn).parameters)
        if arity != 3:
            raise ValueError(f"input_fn should take (module, inputs, device_mesh), "
                             f"{arity} parameters found")
        module.register_forward_pre_hook(lambda mod, inputs: input_fn(mod, inputs, mesh))
    if output_fn is not None:
        arity = len(inspect.signature(output_fn).parameters)
        if arity != 3:
            raise ValueError(f"output_fn should take (module, outputs, device_mesh), "
                             f"{arity} parameters found")
        module.register_forward_hook(lambda mod, inputs, outputs: output_fn(mod, outputs,
                                                                              mesh))
    module._distribute_module_applied = True
    return module

