"""FSDP2's ``fully_shard``: a module's parameters kept as DTensor shards, gathered per forward.

``fully_shard(module)`` turns each parameter of ``module`` (those not already managed by a
``fully_shard`` call on a submodule: call it bottom-up, layer by layer, then on the root)
into a DTensor parameter ``Shard(0)`` over the data-parallel mesh (``(Replicate(),
Shard(0))`` on a 2-d mesh: HSDP), so each rank holds, and its optimizer updates, one chunk.
A forward pre-hook all-gathers the group's parameters and registers the whole tensors on
their modules for the forward; a forward hook puts the shards back. The all-gather is
differentiable: its backward sums each parameter's gradient over the data-parallel ranks,
keeps this rank's chunk (a reduce-scatter; an all-reduce across HSDP's replicas) and divides
by the number of ranks, so a step is the average gradient over the ranks' batches, as with
DDP. ``MixedPrecisionPolicy`` casts the gathered parameters to ``param_dtype`` (and float
inputs with ``cast_forward_inputs``), reduces gradients in ``reduce_dtype`` and casts outputs
to ``output_dtype``; ``set_requires_gradient_sync(False)`` accumulates whole gradients
locally until a synchronised backward reduces their sum.

As in PyTorch, ``reshard_after_forward`` (by default every module but the root, the
outermost FSDP forward) frees a module's gathered parameters after its forward: while the
forward runs, saved-tensor hooks (``ember.autograd.graph.saved_tensors_hooks``) store what
the ops save of them as marks, and the backward gathers the group again at the first mark it
unpacks (every rank's backward meets the marks in the same order, so the collectives pair
up), dropping the copies once the group's gradients are reduced. A parameter an op saves as
a view of the gathered tensor stays in the graph. With ``reshard_after_forward=False`` (and
for the root) the gathered parameters stay in the graph until backward. Over tensor
parallelism (a DTensor parameter on a TP mesh sliced from the same root mesh), each rank keeps
its dp chunk of its TP shard, on the concatenated ``(dp, tp)`` mesh; the forward gathers the
TP-local tensor and registers it as tensor parallelism's DTensor.

Differences from PyTorch: the prefetching setters are accepted as hints with nothing to do
(the collectives complete when called); an int ``reshard_after_forward`` frees as True does
(no smaller resharding world); ``CPUOffloadPolicy`` is the default state of CPU parameters
here.
"""

from __future__ import annotations

import threading

import ember
from ember import nn
from ember.autograd import Function
from ember.distributed.tensor import DTensor, Partial, Replicate, Shard
from ember.distributed.tensor.placement_types import _StridedShard

__all__ = ["fully_shard", "FSDPModule", "UnshardHandle", "register_fsdp_forward_method"]


class UnshardHandle:
    """What ``FSDPModule.unshard(async_op=True)`` returns: the gather is already done."""

    def wait(self) -> None:
        return None


class _Group:
    """One ``fully_shard`` call's parameters and state."""

    def __init__(self, mesh, placements, mp_policy, reshard_after_forward: bool) -> None:
        self.mesh = mesh
        self.placements = placements
        self.mp = mp_policy
        self.reshard_after_forward = reshard_after_forward
        self.params: list = []  # the DTensor parameters (one per distinct parameter)
        # per parameter, for a tensor-parallel one (a DTensor before fully_shard): its TP
        # mesh, placements and shape; the data-parallel gather gives its TP-local tensor
        self.tp_specs: list = []
        self.slots: list = []  # (module, name, index into params) per registration
        self.sync = True
        self.pending: dict = {}  # index -> whole gradient accumulated without sync
        self.divide_factor: float | None = None
        self.unsharded = False
        self.root = False  # run as the outermost FSDP forward (kept gathered until backward)
        # while the forward runs: id(gathered tensor) -> (index, tensor), what the pack hook
        # swaps for a _Regather; in backward, index -> the tensor gathered again
        self.live: dict = {}
        self.regathered: dict = {}
        self.hooks = None

    def frees_after_forward(self) -> bool:
        """Whether the forward's gathered parameters leave the autograd graph, gathered
        again in backward (``reshard_after_forward``; None: all but the root module)."""
        ra = self.reshard_after_forward
        return bool(ra) if ra is not None else not self.root

    def gather(self, index: int):
        """Parameter ``index`` gathered again for backward (the whole group the first time,
        in index order, so every rank runs the same collectives)."""
        if index not in self.regathered:
            with ember.no_grad():
                for i, p in enumerate(self.params):
                    if i not in self.regathered:
                        self.regathered[i] = _gathered(self, i, p.to_local())
        return self.regathered[index]

    def divisor(self) -> float:
        return float(self.divide_factor if self.divide_factor is not None
                     else self.mesh.size())


def _dp_layout(group: _Group, index: int) -> tuple:
    """(mesh, placements, shape) of the data-parallel sharding of parameter ``index``: the
    parameter's own for a plain one; for a tensor-parallel one, the data-parallel mesh's
    sharding of its TP-local tensor."""
    sharded = group.params[index]
    tp = group.tp_specs[index]
    if tp is None:
        return sharded.device_mesh, sharded.placements, sharded.shape
    n = len(group.placements)
    placements = tuple(Shard(p.dim) if isinstance(p, _StridedShard) else p
                       for p in sharded.placements[:n])
    return group.mesh, placements, tp[3]


class _Unshard(Function):
    """The whole parameter (a TP-local tensor for a tensor-parallel one) from this rank's
    shard; backward: reduce-scatter / data-parallel world."""

    @staticmethod
    def forward(ctx, local, group: _Group, index: int, dtype):
        ctx.args = (group, index, local.dtype)
        return _gathered(group, index, local)

    @staticmethod
    def backward(ctx, grad):
        group, index, dtype = ctx.args
        group.regathered.pop(index, None)  # every use of the gathered tensor is done
        if index in group.pending:
            grad = grad + group.pending.pop(index).to(grad.dtype)
        if not group.sync:
            group.pending[index] = grad.detach().clone()
            return None, None, None, None
        reduce_dtype = group.mp.reduce_dtype
        if reduce_dtype is not None and grad.dtype != reduce_dtype:
            grad = grad.to(reduce_dtype)
        mesh, placements, shape = _dp_layout(group, index)
        terms = DTensor.from_local(grad.contiguous(), mesh, [Partial()] * mesh.ndim,
                                   shape=shape)
        mine = terms.redistribute(mesh, placements).to_local()
        mine = mine / group.divisor()
        return mine.to(dtype), None, None, None


def _cast(obj, dtype):
    if isinstance(obj, ember.Tensor) and not isinstance(obj, DTensor):
        return obj.to(dtype) if obj.is_floating_point() and obj.dtype != dtype else obj
    if type(obj) in (list, tuple):
        return type(obj)(_cast(o, dtype) for o in obj)
    if isinstance(obj, dict):
        return {k: _cast(v, dtype) for k, v in obj.items()}
    return obj


def _gathered(group: _Group, index: int, local):
    """The whole parameter (its TP-local tensor for a tensor-parallel one) from this rank's
    shard ``local``, cast to the mixed-precision ``param_dtype``."""
    mesh, placements, shape = _dp_layout(group, index)
    whole = DTensor.from_local(local.detach(), mesh, placements, shape=shape).full_tensor()
    dtype = group.mp.param_dtype
    if dtype is not None and whole.dtype != dtype:
        whole = whole.to(dtype)
    return whole.contiguous() if whole._base is not None else whole


class _Regather:
    """What the autograd graph keeps of a gathered parameter an op saved: gathered again
    when the backward needs it (``reshard_after_forward``)."""

    __slots__ = ("group", "index")

    def __init__(self, group: _Group, index: int) -> None:
        self.group, self.index = group, index


def _pack(group: _Group):
    def pack(t):
        found = group.live.get(id(t))
        if found is not None and found[1] is t:
            return _Regather(group, found[0])
        return t

    return pack


def _unpack(x):
    if x.__class__ is _Regather:
        return x.group.gather(x.index)
    return x


_ACTIVE = threading.local()  # how many FSDP forwards run in this thread (the outermost: root)


def _unshard(group: _Group) -> None:
    for module, name, i in group.slots:  # a parameter replaced on its module (a
        current = module._parameters.get(name)  # load_state_dict(assign=True)) is the shard now
        if current is not group.params[i] and isinstance(current, DTensor):
            group.params[i] = current
    whole = [_Unshard.apply(p.to_local(), group, i, group.mp.param_dtype) if p.requires_grad
             else _Unshard.apply(p.to_local(), group, i, group.mp.param_dtype).detach()
             for i, p in enumerate(group.params)]
    group.regathered.clear()
    group.live = {id(w): (i, w) for i, w in enumerate(whole)}
    for i, tp in enumerate(group.tp_specs):
        if tp is not None:  # the TP-local tensor as tensor parallelism's DTensor
            whole[i] = DTensor.from_local(whole[i], tp[0], tp[1], shape=tp[2])
    for module, name, i in group.slots:
        module._parameters[name] = whole[i]
    group.unsharded = True


def _reshard(group: _Group) -> None:
    for module, name, i in group.slots:
        module._parameters[name] = group.params[i]
    group.unsharded = False
    group.live = {}


def _pre_forward(module, args, kwargs):
    group = module._fsdp_group
    depth = getattr(_ACTIVE, "depth", 0)
    group.root = depth == 0
    _ACTIVE.depth = depth + 1
    if not group.unsharded:
        _unshard(group)
    if group.frees_after_forward() and ember.is_grad_enabled():
        # ops save the gathered parameters as _Regather marks (gathered again in backward)
        group.hooks = ember.autograd.graph.saved_tensors_hooks(_pack(group), _unpack)
        group.hooks.__enter__()
    mp = group.mp
    if mp.param_dtype is not None and mp.cast_forward_inputs:
        return _cast(args, mp.param_dtype), _cast(kwargs, mp.param_dtype)
    return args, kwargs


def _post_forward(module, args, kwargs, output):
    group = module._fsdp_group
    _ACTIVE.depth = max(getattr(_ACTIVE, "depth", 1) - 1, 0)
    if group.hooks is not None:
        group.hooks.__exit__(None, None, None)
        group.hooks = None
    _reshard(group)
    if group.mp.output_dtype is not None:
        return _cast(output, group.mp.output_dtype)
    return output


class FSDPModule:
    """The class ``fully_shard`` mixes into a module: ``FSDP<Class>``."""

    _orig_cls_mro_index = 2

    def __new__(cls, *args, **kwargs):
        # a container indexed into (model.layers[0:2]) builds its own class, not FSDP's
        orig = cls.__mro__[cls._orig_cls_mro_index]
        self = orig.__new__(orig)
        self.__init__(*args, **kwargs)
        return self

    def _groups(self, recurse: bool):
        mods = self.modules() if recurse else [self]
        return [m._fsdp_group for m in mods if isinstance(m, FSDPModule)]

    def reshard(self) -> None:
        """Register the sharded parameters again (after ``unshard``)."""
        _reshard(self._fsdp_group)

    def unshard(self, async_op: bool = False):
        """Gather and register the whole parameters now (the next forward uses them)."""
        group = self._fsdp_group
        if not group.unsharded:
            _unshard(group)
        return UnshardHandle() if async_op else None

    def set_requires_gradient_sync(self, requires_gradient_sync: bool, *,
                                   recurse: bool = True) -> None:
        """False: backward accumulates whole gradients locally (no collective); the next
        synchronised backward reduces their sum (gradient accumulation)."""
        for group in self._groups(recurse):
            group.sync = bool(requires_gradient_sync)

    def set_requires_all_reduce(self, requires_all_reduce: bool, *,
                                recurse: bool = True) -> None:
        self.set_requires_gradient_sync(requires_all_reduce, recurse=recurse)

    def set_reshard_after_forward(self, reshard_after_forward: bool, recurse: bool = True
                                  ) -> None:
        if not isinstance(reshard_after_forward, bool):
            raise ValueError(f"reshard_after_forward should be a bool, got "
                             f"{type(reshard_after_forward)}")
        for group in self._groups(recurse):
            group.reshard_after_forward = reshard_after_forward

    def set_reshard_after_backward(self, reshard_after_backward: bool, *,
                                   recurse: bool = True) -> None:
        """Accepted: the parameters are sharded again after every forward here."""

    def set_is_last_backward(self, is_last_backward: bool) -> None:
        """Accepted: nothing waits for the last backward here."""

    def set_modules_to_forward_prefetch(self, modules) -> None:
        """Accepted as a hint: gathers complete when called, nothing is prefetched."""
        for m in modules:
            if not isinstance(m, FSDPModule):
                raise ValueError(f"Expects FSDPModule but got {type(m)}")

    set_modules_to_backward_prefetch = set_modules_to_forward_prefetch

    def set_gradient_divide_factor(self, factor: float) -> None:
        """Divide the summed gradients by ``factor`` instead of the number of ranks."""
        self._fsdp_group.divide_factor = float(factor)

    set_reduce_scatter_divide_factor = set_gradient_divide_factor

    def reset_iter_state(self) -> None:
        """Forget a failed iteration: shards registered, accumulated gradients dropped."""
        for group in self._groups(True):
            _reshard(group)
            group.pending.clear()

    def __deepcopy__(self, memo):
        raise AssertionError("FSDP does not support deepcopy. Please use state dict for "
                             "serialization.")


_FSDP_CLASSES: dict = {}


def _fsdp_class(cls: type) -> type:
    out = _FSDP_CLASSES.get(cls)
    if out is None:
        out = type(f"FSDP{cls.__name__}", (FSDPModule, cls), {"__module__": cls.__module__})
        _FSDP_CLASSES[cls] = out
    return out


def _collect(modules, ignored: set) -> tuple[list, list]:
    """(managed modules, [(module, name, parameter)]) below ``modules``, not descending into
    submodules a ``fully_shard`` call already manages."""
    managed, found, seen = [], [], set()
    stack = list(reversed(modules))
    roots = {id(m) for m in modules}
    while stack:
        m = stack.pop()
        if id(m) in seen:
            continue
        seen.add(id(m))
        if id(m) not in roots and isinstance(m, FSDPModule):
            continue
        managed.append(m)
        for name, p in m._parameters.items():
            if p is not None and id(p) not in ignored:
                found.append((m, name, p))
        stack.extend(reversed(list(m._modules.values())))
    return managed, found


def _shard_tp_param(p, dp_mesh, dp_placements, owner, name) -> tuple:
    """A tensor-parallel parameter (a DTensor on a TP mesh sliced from the same root mesh as
    ``dp_mesh``) sharded over ``dp_mesh`` too: this rank's chunk of its TP-local tensor, as a
    DTensor on the concatenated mesh ``(dp..., tp...)`` (PyTorch's 2-d FSDP + TP layout: the
    data-parallel dim is a ``_StridedShard`` where TP shards the same tensor dim). Returns it
    and the TP spec ``_unshard`` needs."""
    from ember.distributed.device_mesh import DeviceMesh

    tp_mesh, tp_placements = p.device_mesh, p.placements
    if len(tp_placements) > 2:
        raise NotImplementedError(f"FSDP only supports 1D TP/EP or 2D EP+TP, not "
                                  f"{tp_placements}")
    if any(isinstance(q, Partial) for q in tp_placements):
        raise ValueError(f"fully_shard: parameter {name} of {type(owner).__name__} is a "
                         f"Partial DTensor")
    try:
        spmd = DeviceMesh._concatenate([dp_mesh, tp_mesh])
    except (RuntimeError, KeyError) as e:
        raise ValueError(f"fully_shard: parameter {name} of {type(owner).__name__} is a DTensor "
                         f"on {tp_mesh}, which FSDP can only combine with the data-parallel "
                         f"mesh {dp_mesh} when both are named slices of one root mesh, the "
                         f"data-parallel dims first ({e})") from None
    fsdp = dp_placements[-1]
    split = 1
    for i, q in enumerate(tp_placements):
        if isinstance(q, (Shard, _StridedShard)) and q.dim == fsdp.dim:
            split *= tp_mesh.size(i)
    if split > 1 and p.shape[fsdp.dim] % split:
        # the strided layout is the dp chunks of equal TP pieces; PyTorch pads instead
        raise NotImplementedError(f"fully_shard: parameter {name} of {type(owner).__name__} "
                                  f"(shape {tuple(p.shape)}) is sharded on dim {fsdp.dim} by "
                                  f"tensor parallelism into {split} uneven pieces; FSDP over "
                                  f"it needs dim {fsdp.dim} divisible by {split}")
    dp_last = _StridedShard(fsdp.dim, split_factor=split) if split > 1 else fsdp
    placements = (*dp_placements[:-1], dp_last, *tp_placements)
    tp_local = p.to_local().detach()
    whole = DTensor.from_local(tp_local, dp_mesh, [Replicate()] * dp_mesh.ndim,
                               shape=tuple(tp_local.shape))
    local = whole.redistribute(dp_mesh, dp_placements).to_local().contiguous()
    if local is tp_local or local._base is tp_local:
        local = local.clone()
    return (DTensor.from_local(local, spmd, placements, shape=tuple(p.shape)),
            (tp_mesh, tp_placements, tuple(p.shape), tuple(tp_local.shape)))


def _add_param(group: _Group, p, mesh, placements, owner, name: str) -> int:
    """Shard ``p`` (``owner.<name>``) over ``mesh`` as ``placements`` into ``group``'s
    parameters (a tensor-parallel DTensor over its TP mesh too); its index there."""
    with ember.no_grad():
        if isinstance(p, DTensor):
            dt, tp = _shard_tp_param(p, mesh, placements, owner, name)
        else:
            dt, tp = ember.distributed.tensor.distribute_tensor(
                p.detach(), mesh, placements, src_data_rank=None), None
    group.params.append(nn.Parameter(dt, requires_grad=p.requires_grad))
    group.tp_specs.append(tp)
    return len(group.params) - 1


def fully_shard(module, *, mesh=None, reshard_after_forward=None, shard_placement_fn=None,
                mp_policy=None, offload_policy=None, ignored_params=None):
    """Shard ``module``'s parameters over the data-parallel ``mesh`` (PyTorch's FSDP2; see
    the module docstring). Returns ``module``, now an ``FSDPModule``."""
    from ember.distributed import device_mesh as dm
    from ember.distributed import distributed_c10d as c10d

    from . import MixedPrecisionPolicy, OffloadPolicy

    mp_policy = MixedPrecisionPolicy() if mp_policy is None else mp_policy
    offload_policy = OffloadPolicy() if offload_policy is None else offload_policy
    modules = list(module) if isinstance(module, (list, tuple)) else [module]
    if not modules:
        raise ValueError("fully_shard expects at least one module")
    for m in modules:
        if not isinstance(m, nn.Module):
            raise ValueError(f"fully_shard does not support containers that do not implement "
                             f"forward: {m}" if isinstance(m, (nn.ModuleList, nn.ModuleDict))
                             else f"fully_shard expects an nn.Module, got {type(m)}")
        if isinstance(m, (nn.ModuleList, nn.ModuleDict)):
            raise ValueError(f"fully_shard does not support containers that do not implement "
                             f"forward: {m}")
        if isinstance(m, FSDPModule):
            raise ValueError(f"fully_shard was already applied to {type(m).__name__}")
    if mesh is None:
        if not c10d.is_initialized():
            raise RuntimeError("fully_shard needs the default process group: call "
                               "ember.distributed.init_process_group() first")
        device = next((p.device.type for m in modules for p in m.parameters()), "cpu")
        mesh = dm.init_device_mesh(device, (c10d.get_world_size(),))
    if mesh.ndim not in (1, 2):
        raise ValueError(f"fully_shard expects a 1D or 2D DeviceMesh but got {mesh}")
    placements_default = (Shard(0),) if mesh.ndim == 1 else (Replicate(), Shard(0))
    ignored = {id(p) for p in (ignored_params or ())}
    if reshard_after_forward is not None and not isinstance(reshard_after_forward, int):
        raise ValueError(f"reshard_after_forward should be a bool, an int or None, got "
                         f"{type(reshard_after_forward)}")
    group = _Group(mesh, placements_default, mp_policy, reshard_after_forward)
    managed, found = _collect(modules, ignored)
    made: dict = {}
    for owner, name, p in found:
        index = made.get(id(p))
        if index is None:
            placements = placements_default
            if shard_placement_fn is not None:
                chosen = shard_placement_fn(p)
                if chosen is not None:
                    if not isinstance(chosen, Shard):
                        raise ValueError(f"shard_placement_fn should return a Shard or None, "
                                         f"got {chosen!r}")
                    if chosen.dim < 0:
                        chosen = Shard(chosen.dim + p.ndim)
                    local_shape = p.to_local().shape if isinstance(p, DTensor) else p.shape
                    if local_shape[chosen.dim] % mesh.size(mesh.ndim - 1):
                        raise ValueError(f"Shard({chosen.dim}) of a parameter of shape "
                                         f"{tuple(local_shape)} needs its size divisible by "
                                         f"the mesh's {mesh.size(mesh.ndim - 1)} ranks")
                    placements = placements_default[:-1] + (chosen,)
            index = made[id(p)] = _add_param(group, p, mesh, placements, owner, name)
        owner._parameters[name] = group.params[index]
        group.slots.append((owner, name, index))
    for m in managed:
        m._is_fsdp_managed_module = True
        m._fsdp_use_orig_params = True
    for m in modules:
        m._fsdp_group = group
        m.register_forward_pre_hook(_pre_forward, with_kwargs=True)
        m.register_forward_hook(_post_forward, with_kwargs=True, always_call=True)
        m.__class__ = _fsdp_class(type(m))
    return module


def register_fsdp_forward_method(module, method_name: str) -> None:
    """Run ``module.<method_name>`` with the module's parameters gathered, as its forward
    runs (``generate`` of a sharded language model)."""
    if not isinstance(module, FSDPModule):
        return
    original = getattr(module, method_name)

    def wrapped(*args, **kwargs):
        args, kwargs = _pre_forward(module, args, kwargs)
        out = None
        try:
            out = original(*args, **kwargs)
        finally:
            out = _post_forward(module, args, kwargs, out)
        return out

    setattr(module, method_name, wrapped)
