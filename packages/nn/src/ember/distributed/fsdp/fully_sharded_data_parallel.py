"""FSDP1: ``FullyShardedDataParallel`` (``torch.distributed.fsdp.fully_sharded_data_parallel``),
built on FSDP2's machinery (``_fully_shard``).

``FullyShardedDataParallel(module, ...)`` is an ``nn.Module`` holding ``module`` as
``_fsdp_wrapped_module`` (``print(model)`` and ``model.module`` read as PyTorch's). With an
``auto_wrap_policy`` the submodules the policy picks are wrapped first, bottom-up, each in a
nested ``FullyShardedDataParallel`` that replaces it in its parent. Each instance then
shards the parameters it manages (those of its module tree not inside a nested instance,
nor ignored) as FSDP2 does: each parameter becomes a DTensor ``nn.Parameter`` over the
data-parallel mesh, the forward gathers the group's whole parameters (FSDP2's ``_Group``
and its forward hooks, registered on the wrapper) and the backward reduce-scatters and
averages the gradients. The sharding strategies map onto it:

- ``FULL_SHARD``: ``Shard(0)`` on a 1-d mesh, gathered parameters freed after the forward
  of every instance but the root and gathered again in backward;
- ``SHARD_GRAD_OP``: the same, kept gathered from forward to backward;
- ``NO_SHARD``: ``Replicate()``: each rank holds whole parameters, the backward all-reduces
  and averages the gradients (DDP's arithmetic);
- ``HYBRID_SHARD`` / ``_HYBRID_SHARD_ZERO2``: ``(Replicate(), Shard(0))`` on a 2-d
  (replicate, shard) mesh: ``device_mesh=``, ``process_group=(intra_node, inter_node)``, or
  by default the world split by node (``LOCAL_WORLD_SIZE`` ranks a node; one machine:
  ``(1, world)``).

Differences from PyTorch: there are no flat parameters. ``model.parameters()`` are the
original parameters as FSDP2's DTensor shards (``param.to_local()`` is this rank's chunk,
``param.full_tensor()`` the whole one), with or without ``use_orig_params``, and the
optimizer state is DTensors too; ``LOCAL_STATE_DICT`` gives each parameter's local shard
under its own key (PyTorch gives a ``flat_param``). ``backward_prefetch``,
``forward_prefetch``, ``limit_all_gathers`` and ``cpu_offload`` are accepted with nothing to
do (collectives complete when called; parameters are on the CPU already).
``MixedPrecision.keep_low_precision_grads`` is accepted but gradients take the parameters'
dtype. ``register_comm_hook`` is not provided.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
from collections import OrderedDict
from collections.abc import Callable

import ember
import ember.distributed as dist
from ember import nn
from ember.distributed.tensor import DTensor, Replicate, Shard, distribute_tensor

from ._fully_shard import _add_param, _cast, _Group, _post_forward, _pre_forward, _reshard
from .api import (
    BackwardPrefetch,
    FullOptimStateDictConfig,
    FullStateDictConfig,
    LocalOptimStateDictConfig,
    LocalStateDictConfig,
    ShardedOptimStateDictConfig,
    ShardedStateDictConfig,
    ShardingStrategy,
    StateDictSettings,
    StateDictType,
)
from .wrap import _auto_wrap

__all__ = ["FullyShardedDataParallel", "OptimStateKeyType"]

FSDP_WRAPPED_MODULE = "_fsdp_wrapped_module"
FSDP_PREFIX = FSDP_WRAPPED_MODULE + "."

HYBRID_SHARDING_STRATEGIES = (ShardingStrategy.HYBRID_SHARD,
                              ShardingStrategy._HYBRID_SHARD_ZERO2)

_STATE_DICT_CONFIGS = {
    StateDictType.FULL_STATE_DICT: (FullStateDictConfig, FullOptimStateDictConfig),
    StateDictType.LOCAL_STATE_DICT: (LocalStateDictConfig, LocalOptimStateDictConfig),
    StateDictType.SHARDED_STATE_DICT: (ShardedStateDictConfig, ShardedOptimStateDictConfig),
}

_IN_STATE_DICT = threading.local()  # depth of FSDP state_dict calls (the outermost cleans)


class OptimStateKeyType:
    """How an optimizer state dict names parameters: by ID or by name."""

    PARAM_NAME = 1
    PARAM_ID = 2


def _clean(name: str) -> str:
    return name.replace(FSDP_PREFIX, "")


def _default_hybrid_mesh(device_type: str):
    """The world as (nodes, ranks per node): ``LOCAL_WORLD_SIZE`` ranks a node (one node
    when unset)."""
    from ember.distributed.device_mesh import init_device_mesh

    world = dist.get_world_size()
    local = int(os.environ.get("LOCAL_WORLD_SIZE", world) or world)
    if local <= 0 or world % local:
        local = world
    return init_device_mesh(device_type, (world // local, local))


def _resolve_mesh(process_group, device_mesh, strategy, policy, device_type: str):
    """The data-parallel DeviceMesh this instance shards over."""
    from ember.distributed.device_mesh import DeviceMesh, init_device_mesh

    if process_group is not None and device_mesh is not None:
        raise ValueError("Cannot pass both process_group and device_mesh at the same time. "
                         "Please just pass only one of them.")
    if strategy in HYBRID_SHARDING_STRATEGIES:
        if process_group is None and policy is None and device_mesh is None:
            raise ValueError(f"Manual wrapping with {strategy} requires explicit "
                             "specification of process group or device_mesh.")
        if device_mesh is not None:
            if device_mesh.ndim != 2:
                raise ValueError(f"Expected device_mesh to have ndim=2 but got "
                                 f"{device_mesh.ndim}")
            return device_mesh
        if process_group is None:
            return _default_hybrid_mesh(device_type)
        if not (isinstance(process_group, tuple) and len(process_group) == 2):
            raise ValueError("Expected process_group to be passed in as either None or "
                             "Tuple[dist.ProcessGroup, dist.ProcessGroup] but got "
                             f"{type(process_group)}")
        intra, inter = process_group
        intra_ranks = dist.get_process_group_ranks(intra)
        inter_ranks = dist.get_process_group_ranks(inter)
        mesh = [[r - intra_ranks[0] + i for r in intra_ranks] for i in inter_ranks]
        return DeviceMesh(device_type, mesh, _groups=[inter, intra])
    if device_mesh is not None:
        return device_mesh
    if process_group is not None:
        return DeviceMesh.from_group(process_group, device_type)
    if not dist.is_initialized():
        raise RuntimeError("FullyShardedDataParallel needs the default process group: call "
                           "ember.distributed.init_process_group() first")
    return init_device_mesh(device_type, (dist.get_world_size(),))


def _placements(mesh, strategy) -> tuple:
    if strategy == ShardingStrategy.NO_SHARD:
        return (Replicate(),) * mesh.ndim
    return (Replicate(),) * (mesh.ndim - 1) + (Shard(0),)


def _managed_modules(module, ignored_modules: set) -> list:
    """``module``'s tree, not descending into nested FSDP instances nor ignored modules."""
    out, stack, seen = [], [module], set()
    while stack:
        m = stack.pop()
        if id(m) in seen or id(m) in ignored_modules:
            continue
        seen.add(id(m))
        if m is not module and isinstance(m, FullyShardedDataParallel):
            continue
        out.append(m)
        stack.extend(reversed(list(m._modules.values())))
    return out


def _fsdp1_pre_forward(wrapper, args, kwargs):
    args, kwargs = _pre_forward(wrapper, args, kwargs)
    mp = wrapper.mixed_precision
    if mp is not None and mp.param_dtype is not None:
        group = wrapper._fsdp_group
        if mp.cast_root_forward_inputs if group.root else mp.cast_forward_inputs:
            return _cast(args, mp.param_dtype), _cast(kwargs, mp.param_dtype)
    return args, kwargs


class FullyShardedDataParallel(nn.Module):
    """Shard ``module``'s parameters over the data-parallel ranks (PyTorch's FSDP1; see the
    module docstring for how it maps onto FSDP2 and where it differs)."""

    def __init__(self, module, process_group=None, sharding_strategy=None, cpu_offload=None,
                 auto_wrap_policy=None, backward_prefetch=BackwardPrefetch.BACKWARD_PRE,
                 mixed_precision=None, ignored_modules=None, param_init_fn=None,
                 device_id=None, sync_module_states=False, forward_prefetch=False,
                 limit_all_gathers=True, use_orig_params=False, ignored_states=None,
                 device_mesh=None):
        super().__init__()
        if not isinstance(module, nn.Module):
            raise TypeError(f"FullyShardedDataParallel expects an nn.Module, got "
                            f"{type(module)}")
        if ignored_modules is not None and ignored_states is not None:
            raise ValueError("Cannot pass both ignored_modules and ignored_states at the "
                             "same time. Please just pass ignored_states.")
        strategy = sharding_strategy or ShardingStrategy.FULL_SHARD
        ignored_mods, ignored_params = self._ignored(module, ignored_modules, ignored_states)
        device = self._compute_device(module, device_id)
        mesh = _resolve_mesh(process_group, device_mesh, strategy, auto_wrap_policy,
                             device.type)
        if auto_wrap_policy is not None:
            root_kwargs = {
                "process_group": None, "sharding_strategy": sharding_strategy,
                "cpu_offload": cpu_offload, "backward_prefetch": backward_prefetch,
                "mixed_precision": mixed_precision, "param_init_fn": param_init_fn,
                "device_id": device_id, "sync_module_states": sync_module_states,
                "forward_prefetch": forward_prefetch, "limit_all_gathers": limit_all_gathers,
                "use_orig_params": use_orig_params,
                "ignored_states": [p for p in module.parameters() if id(p) in ignored_params],
                "device_mesh": mesh,  # children share this instance's mesh and groups
            }
            _auto_wrap(module, auto_wrap_policy, ignored_mods, ignored_params, root_kwargs,
                       FullyShardedDataParallel)
        self.sharding_strategy = strategy
        self.mixed_precision = mixed_precision
        self.cpu_offload = cpu_offload
        self.backward_prefetch = backward_prefetch
        self.forward_prefetch = forward_prefetch
        self.limit_all_gathers = limit_all_gathers
        self._use_orig_params = use_orig_params
        self._device_mesh = mesh
        self.compute_device = device
        self.process_group = mesh.get_group(mesh.ndim - 1)
        self.rank = dist.get_rank()
        self.world_size = mesh.size()
        self._ignored_modules = ignored_mods
        self._ignored_params = ignored_params
        self._is_root = True
        self._summoned = 0
        self._state_dict_type = StateDictType.FULL_STATE_DICT
        self._state_dict_config = FullStateDictConfig()
        self._optim_state_dict_config = FullOptimStateDictConfig()
        for m in module.modules():  # instances inside this one are not roots
            if isinstance(m, FullyShardedDataParallel):
                m._is_root = False
        managed = _managed_modules(module, ignored_mods)
        self._materialize(managed, param_init_fn, device)
        if sync_module_states:
            self._sync_module_states(managed, mesh)
        if mixed_precision is not None and mixed_precision.buffer_dtype is not None:
            self._cast_buffers(managed, mixed_precision.buffer_dtype)
        self._fsdp_wrapped_module = module
        self._shard(managed, mesh, strategy, mixed_precision, ignored_params)

    # -- construction -----------------------------------------------------------------
    @staticmethod
    def _ignored(module, ignored_modules, ignored_states) -> tuple[set, set]:
        """(ids of the ignored modules and all below them, ids of the ignored
        parameters)."""
        states = list(ignored_states if ignored_states is not None else
                      ignored_modules if ignored_modules is not None else ())
        mods, params = set(), set()
        for s in states:
            if isinstance(s, FullyShardedDataParallel):
                raise ValueError("`ignored_modules` should not include FSDP modules")
            if isinstance(s, nn.Module):
                for m in s.modules():
                    mods.add(id(m))
                    params.update(id(p) for p in m.parameters(recurse=False))
            elif isinstance(s, ember.Tensor):
                params.add(id(s))
            else:
                raise TypeError(f"ignored_states expects nn.Module or nn.Parameter objects, "
                                f"got {type(s)}")
        return mods, params

    @staticmethod
    def _compute_device(module, device_id):
        if device_id is not None:
            device = (ember.device("cuda", device_id) if isinstance(device_id, int)
                      else ember.device(device_id))
            if device.type != "meta":
                module.to_empty(device=device) if any(
                    t.is_meta for t in itertools.chain(module.parameters(), module.buffers())
                ) else module.to(device)
            return device
        for t in itertools.chain(module.parameters(), module.buffers()):
            if not t.is_meta:
                return t.device
        return ember.device("cpu")

    @staticmethod
    def _materialize(managed: list, param_init_fn, device) -> None:
        """Meta-device modules get real tensors: ``param_init_fn(module)`` on each, or
        ``to_empty`` and ``reset_parameters()`` (as PyTorch)."""
        on_meta = any(t.is_meta for m in managed for t in itertools.chain(
            m.parameters(recurse=False), m.buffers(recurse=False)))
        if not on_meta:
            return
        if device.type == "meta":
            device = ember.device("cpu")
        for m in managed:
            if param_init_fn is not None:
                param_init_fn(m)
                continue
            own = list(itertools.chain(m.parameters(recurse=False), m.buffers(recurse=False)))
            if own:
                m.to_empty(device=device, recurse=False)
                if hasattr(m, "reset_parameters"):
                    with ember.no_grad():
                        m.reset_parameters()

    @staticmethod
    def _sync_module_states(managed: list, mesh) -> None:
        """Every rank of the mesh takes the mesh's first rank's parameters and buffers:
        a broadcast along each mesh dim in turn, from its first coordinate."""
        ranks = mesh._mesh
        coord = mesh.get_coordinate()
        tensors = [t.to_local() if isinstance(t, DTensor) else t
                   for m in managed
                   for t in itertools.chain(m.parameters(recurse=False),
                                            m.buffers(recurse=False))]
        with ember.no_grad():
            for dim in range(mesh.ndim):
                if mesh.size(dim) == 1:
                    continue
                index = list(coord)
                index[dim] = 0
                src = int(ranks[tuple(index)])
                for t in tensors:
                    dist.broadcast(t.detach(), src=src, group=mesh.get_group(dim))

    @staticmethod
    def _cast_buffers(managed: list, dtype) -> None:
        for m in managed:
            for name, buf in m._buffers.items():
                if buf is not None and buf.is_floating_point() and buf.dtype != dtype:
                    m.__dict__.setdefault("_fsdp_buffer_dtypes", {})[name] = buf.dtype
                    m._buffers[name] = buf.to(dtype)

    def _shard(self, managed, mesh, strategy, mixed_precision, ignored_params) -> None:
        from . import MixedPrecisionPolicy

        mp = MixedPrecisionPolicy(
            param_dtype=mixed_precision.param_dtype if mixed_precision else None,
            reduce_dtype=mixed_precision.reduce_dtype if mixed_precision else None,
            cast_forward_inputs=False)  # this wrapper's pre-forward casts, as FSDP1 says
        reshard = {ShardingStrategy.FULL_SHARD: None, ShardingStrategy.HYBRID_SHARD: None,
                   ShardingStrategy.SHARD_GRAD_OP: False, ShardingStrategy.NO_SHARD: False,
                   ShardingStrategy._HYBRID_SHARD_ZERO2: False}[strategy]
        placements = _placements(mesh, strategy)
        group = _Group(mesh, placements, mp, reshard)
        made: dict = {}
        for owner in managed:
            for name, p in list(owner._parameters.items()):
                if p is None or id(p) in ignored_params:
                    continue
                index = made.get(id(p))
                if index is None:
                    index = made[id(p)] = _add_param(group, p, mesh, placements, owner, name)
                owner._parameters[name] = group.params[index]
                group.slots.append((owner, name, index))
        for m in managed:
            m._is_fsdp_managed_module = True
            m._fsdp_use_orig_params = True
        self.__dict__["_fsdp_group"] = group
        self.register_forward_pre_hook(_fsdp1_pre_forward, with_kwargs=True)
        self.register_forward_hook(_post_forward, with_kwargs=True, always_call=True)

    # -- the wrapper --------------------------------------------------------------------
    @property
    def module(self):
        """The wrapped module."""
        return self._fsdp_wrapped_module

    def __getattr__(self, name: str):
        """Attributes the wrapper lacks come from the wrapped module."""
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name == FSDP_WRAPPED_MODULE:
                raise
            return getattr(self._fsdp_wrapped_module, name)

    def __getitem__(self, key):
        """Indexing reaches the wrapped module (an ``nn.Sequential``)."""
        return self._fsdp_wrapped_module.__getitem__(key)

    def forward(self, *args, **kwargs):
        """The wrapped module's forward, with this instance's parameters gathered."""
        return self._fsdp_wrapped_module(*args, **kwargs)

    def check_is_root(self) -> bool:
        """Whether no other FSDP instance holds this one."""
        return self._is_root

    def __deepcopy__(self, memo):
        raise AssertionError("FSDP does not support deepcopy. Please use state dict for "
                             "serialization.")

    @staticmethod
    def fsdp_modules(module, root_only: bool = False) -> list:
        """The FSDP instances in ``module``'s tree (``module`` included); with
        ``root_only``, only those no other instance holds."""
        found = [m for m in module.modules() if isinstance(m, FullyShardedDataParallel)]
        if not root_only:
            return found
        inner = {id(x) for m in found for x in m._fsdp_wrapped_module.modules()
                 if isinstance(x, FullyShardedDataParallel)}
        return [m for m in found if id(m) not in inner]

    def apply(self, fn: Callable):
        """``nn.Module.apply`` with this instance's whole parameters gathered (and written
        back to the shards afterwards): ``model.apply(init_weights)``."""
        with _summon([self], writeback=True, rank0_only=False, with_grads=False):
            return super().apply(fn)

    def named_parameters(self, *args, **kwargs):
        """As ``nn.Module``'s; inside ``summon_full_params`` the names lose the
        ``_fsdp_wrapped_module.`` prefixes (as PyTorch's)."""
        for name, p in super().named_parameters(*args, **kwargs):
            yield (_clean(name) if self._summoned else name), p

    def named_buffers(self, *args, **kwargs):
        """As ``nn.Module``'s; cleaned names inside ``summon_full_params``."""
        for name, b in super().named_buffers(*args, **kwargs):
            yield (_clean(name) if self._summoned else name), b

    def _require_root(self, what: str) -> None:
        if not self._is_root:
            raise RuntimeError(what)

    def _assert_idle(self) -> None:
        for m in FullyShardedDataParallel.fsdp_modules(self):
            if m._fsdp_group.unsharded:
                raise ValueError("expected to be in states [TrainingState.IDLE] but current "
                                 "state is TrainingState.FORWARD_BACKWARD")

    # -- gradients ----------------------------------------------------------------------
    @contextlib.contextmanager
    def no_sync(self):
        """Backward accumulates whole gradients locally, without communication; the first
        backward after the context reduces their sum (gradient accumulation)."""
        self._require_root("`no_sync()` on inner FSDP instances is not supported. Please "
                           "call `no_sync()` on root FSDP module.")
        self._assert_idle()
        groups = [m._fsdp_group for m in FullyShardedDataParallel.fsdp_modules(self)]
        old = [g.sync for g in groups]
        for g in groups:
            g.sync = False
        try:
            yield
        finally:
            for g, flag in zip(groups, old):
                g.sync = flag

    def clip_grad_norm_(self, max_norm, norm_type=2.0):
        """Scale every gradient so that their total ``norm_type``-norm (over all ranks'
        shards, as one vector) is at most ``max_norm``; returns the total norm."""
        self._require_root("`clip_grad_norm_()` should only be called on the root FSDP "
                           "instance")
        self._assert_idle()
        max_norm, norm_type = float(max_norm), float(norm_type)
        inf = norm_type == float("inf")
        grads, sums = [], {}
        dtype = None
        with ember.no_grad():
            for p in self.parameters():
                if p.grad is None:
                    continue
                g = p.grad
                dtype = g.dtype if dtype is None else ember.promote_types(dtype, g.dtype)
                local = g.to_local() if isinstance(g, DTensor) else g
                grads.append(local)
                shard_dims = ()
                mesh = None
                if isinstance(g, DTensor):
                    mesh = g.device_mesh
                    shard_dims = tuple(i for i, q in enumerate(g.placements)
                                       if not isinstance(q, Replicate))
                key = (id(mesh), shard_dims)
                x = local.detach().to(ember.float64).abs()
                part = (x.max() if x.numel() else ember.zeros((), dtype=ember.float64)) \
                    if inf else x.pow(norm_type).sum()
                if key in sums:
                    prev = sums[key][2]
                    sums[key][2] = ember.maximum(prev, part) if inf else prev + part
                else:
                    sums[key] = [mesh, shard_dims, part]
            total = ember.zeros((), dtype=ember.float64)
            op = dist.ReduceOp.MAX if inf else dist.ReduceOp.SUM
            for key in sorted(sums, key=lambda k: (k[1], k[0])):
                mesh, dims, part = sums[key]
                part = part.reshape(1).clone()
                for d in dims:
                    dist.all_reduce(part, op=op, group=mesh.get_group(d))
                total = ember.maximum(total, part[0]) if inf else total + part[0]
            if not inf:
                total = total ** (1.0 / norm_type)
            coef = max_norm / (float(total) + 1e-6)
            if coef < 1:
                for local in grads:
                    local.mul_(coef)
        return total.to(dtype if dtype is not None else ember.get_default_dtype())

    def register_comm_hook(self, state, hook) -> None:
        raise NotImplementedError(
            "FullyShardedDataParallel.register_comm_hook is not available in Ember: its "
            "gradients are reduced by FSDP2's DTensor reduce-scatter; use "
            "mixed_precision=MixedPrecision(reduce_dtype=...) for low-precision reduction, or "
            "DistributedDataParallel.register_comm_hook")

    # -- full parameters ----------------------------------------------------------------
    @staticmethod
    @contextlib.contextmanager
    def summon_full_params(module, recurse: bool = True, writeback: bool = True,
                           rank0_only: bool = False, offload_to_cpu: bool = False,
                           with_grads: bool = False):
        """Register every FSDP instance's whole parameters (``recurse=False``: only the
        outermost instances') for the context; ``writeback`` copies changes back into the
        shards; ``rank0_only`` gathers everywhere but registers on rank 0 only;
        ``with_grads`` gathers the gradients too."""
        if writeback and rank0_only:
            raise NotImplementedError("writeback=True and rank0_only=True is not supported yet")
        if recurse:
            fsdps = FullyShardedDataParallel.fsdp_modules(module)
        elif isinstance(module, FullyShardedDataParallel):
            fsdps = [module]
        else:
            fsdps = FullyShardedDataParallel.fsdp_modules(module, root_only=True)
        with _summon(fsdps, writeback, rank0_only, with_grads, offload_to_cpu):
            yield

    # -- state dicts ----------------------------------------------------------------------
    @staticmethod
    def set_state_dict_type(module, state_dict_type, state_dict_config=None,
                            optim_state_dict_config=None) -> StateDictSettings:
        """Set the state-dict type (and configs) of every FSDP instance in ``module``'s
        tree; returns the previous settings."""
        config_type, optim_config_type = _STATE_DICT_CONFIGS[state_dict_type]
        if state_dict_config is None:
            state_dict_config = config_type()
        if optim_state_dict_config is None:
            optim_state_dict_config = optim_config_type()
        if config_type is not type(state_dict_config):
            raise RuntimeError(f"Expected state_dict_config of type {config_type} but got "
                               f"{type(state_dict_config)}")
        if optim_config_type is not type(optim_state_dict_config):
            raise RuntimeError(f"Expected optim_state_dict_config of type {optim_config_type} "
                               f"but got {type(optim_state_dict_config)}")
        prev = None
        for m in FullyShardedDataParallel.fsdp_modules(module):
            if prev is None:
                prev = StateDictSettings(m._state_dict_type, m._state_dict_config,
                                         m._optim_state_dict_config)
            elif prev.state_dict_type != m._state_dict_type:
                raise AssertionError("All FSDP modules should have the same state_dict_type.")
            m._state_dict_type = state_dict_type
            m._state_dict_config = state_dict_config
            m._optim_state_dict_config = optim_state_dict_config
        if prev is None:
            prev = StateDictSettings(None, None, None)
        return prev

    @staticmethod
    def get_state_dict_type(module) -> StateDictSettings:
        """The state-dict settings of the FSDP instances in ``module``'s tree."""
        settings = None
        for m in FullyShardedDataParallel.fsdp_modules(module):
            mine = StateDictSettings(m._state_dict_type, m._state_dict_config,
                                     m._optim_state_dict_config)
            if settings is None:
                settings = mine
            elif settings != mine:
                raise AssertionError(f"All FSDP modules must have the same state dict "
                                     f"settings.Got {mine} and {settings}.")
        return settings

    @staticmethod
    @contextlib.contextmanager
    def state_dict_type(module, state_dict_type, state_dict_config=None,
                        optim_state_dict_config=None):
        """``set_state_dict_type`` for the context, the previous settings restored after."""
        prev = FullyShardedDataParallel.set_state_dict_type(
            module, state_dict_type, state_dict_config, optim_state_dict_config)
        try:
            yield
        finally:
            if prev.state_dict_type is not None:
                FullyShardedDataParallel.set_state_dict_type(
                    module, prev.state_dict_type, prev.state_dict_config,
                    prev.optim_state_dict_config)

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """The state dict with PyTorch's clean keys (no ``_fsdp_wrapped_module.``); its
        values as ``state_dict_type`` says: whole tensors (FULL, the default; empty on other
        ranks than 0 with ``rank0_only``), DTensors (SHARDED) or this rank's shards
        (LOCAL). Every rank must call it (FULL gathers)."""
        depth = getattr(_IN_STATE_DICT, "depth", 0)
        if depth:  # inside an outer FSDP's state_dict: it converts and cleans
            return super().state_dict(*args, destination=destination, prefix=prefix,
                                      keep_vars=keep_vars)
        if args:
            destination = args[0] if destination is None else destination
            prefix = args[1] if len(args) > 1 and not prefix else prefix
            keep_vars = args[2] if len(args) > 2 else keep_vars
        self._assert_idle()
        _IN_STATE_DICT.depth = 1
        try:
            raw = super().state_dict(prefix=prefix, keep_vars=keep_vars)
        finally:
            _IN_STATE_DICT.depth = 0
        kind, config = self._state_dict_type, self._state_dict_config
        buffer_dtypes = self._buffer_orig_dtypes(prefix)
        out = OrderedDict()
        out._metadata = OrderedDict((_clean(k), v) for k, v in raw._metadata.items())
        for key, value in raw.items():
            if isinstance(value, DTensor):
                if kind == StateDictType.FULL_STATE_DICT:
                    whole = value.full_tensor()
                    if all(isinstance(q, Replicate) for q in value.placements):
                        whole = whole.clone()
                    value = whole
                elif kind == StateDictType.LOCAL_STATE_DICT:
                    value = value.to_local()
            elif kind == StateDictType.FULL_STATE_DICT and key in buffer_dtypes:
                value = value.to(buffer_dtypes[key])
            if getattr(config, "offload_to_cpu", False) and isinstance(value, ember.Tensor):
                value = value.cpu()
            out[_clean(key)] = value
        if (kind == StateDictType.FULL_STATE_DICT and getattr(config, "rank0_only", False)
                and dist.get_rank() != 0):
            out = OrderedDict()
            out._metadata = OrderedDict()
        if destination is not None:
            destination.update(out)
            if hasattr(destination, "_metadata"):
                destination._metadata.update(out._metadata)
            return destination
        return out

    def _buffer_orig_dtypes(self, prefix: str) -> dict:
        out = {}
        for name, m in nn.Module.named_modules(self, prefix=prefix.rstrip(".")):
            for b, dtype in m.__dict__.get("_fsdp_buffer_dtypes", {}).items():
                out[f"{name}.{b}" if name else b] = dtype
        return out

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Load a state dict with clean keys (``_fsdp_wrapped_module.`` keys are taken
        too): whole tensors are cut into this rank's shards, DTensors taken as they are,
        and with ``LOCAL_STATE_DICT`` plain tensors are this rank's shards."""
        self._assert_idle()
        _IN_STATE_DICT.depth = 1
        try:
            targets = super().state_dict(keep_vars=True)
        finally:
            _IN_STATE_DICT.depth = 0
        by_clean = {_clean(k): k for k in targets}
        local = self._state_dict_type == StateDictType.LOCAL_STATE_DICT
        converted = OrderedDict()
        for key, value in state_dict.items():
            raw = key if key in targets else by_clean.get(key, key)
            target = targets.get(raw)
            if isinstance(target, DTensor) and isinstance(value, ember.Tensor):
                value = _as_dtensor_like(value, target, local)
            elif isinstance(target, ember.Tensor) and isinstance(value, ember.Tensor) and (
                    value.dtype != target.dtype and value.is_floating_point()):
                value = value.to(target.dtype)  # a buffer kept in MixedPrecision.buffer_dtype
            converted[raw] = value
        metadata = getattr(state_dict, "_metadata", None)
        if metadata is not None:
            by_clean_prefix = {_clean(k): k for k in (targets._metadata or {})}
            converted._metadata = OrderedDict((by_clean_prefix.get(k, k), v)
                                              for k, v in metadata.items())
        result = super().load_state_dict(converted, strict=False, assign=assign)
        missing = [_clean(k) for k in result.missing_keys]
        unexpected = [_clean(k) for k in result.unexpected_keys]
        if strict and (missing or unexpected):
            msgs = []
            if unexpected:
                msgs.append("Unexpected key(s) in state_dict: "
                            + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                msgs.append("Missing key(s) in state_dict: "
                            + ", ".join(f'"{k}"' for k in missing) + ". ")
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                self.__class__.__name__, "\n\t".join(msgs)))
        result.missing_keys[:] = missing
        result.unexpected_keys[:] = unexpected
        return result

    # -- optimizer state dicts --------------------------------------------------------------
    @staticmethod
    def optim_state_dict(model, optim, optim_state_dict=None, group=None) -> dict:
        """``optim``'s state keyed by parameter names (clean FQNs), its tensors as the
        model's state-dict type says: whole (FULL, the default; ``rank0_only`` in a
        ``FullOptimStateDictConfig`` leaves other ranks an empty dict), DTensors (SHARDED)
        or local shards (LOCAL)."""
        settings = FullyShardedDataParallel.get_state_dict_type(model) or StateDictSettings(
            StateDictType.FULL_STATE_DICT, FullStateDictConfig(), FullOptimStateDictConfig())
        return _optim_state_dict(model, optim, optim_state_dict, settings.state_dict_type,
                                 settings.optim_state_dict_config)

    @staticmethod
    def full_optim_state_dict(model, optim, optim_input=None, rank0_only: bool = True,
                              group=None) -> dict:
        """``optim``'s whole state keyed by parameter names (on rank 0 only with
        ``rank0_only``; the others get ``{}``)."""
        return _optim_state_dict(model, optim, None, StateDictType.FULL_STATE_DICT,
                                 FullOptimStateDictConfig(rank0_only=rank0_only))

    @staticmethod
    def sharded_optim_state_dict(model, optim, group=None) -> dict:
        """``optim``'s state keyed by parameter names, its tensors DTensors."""
        return _optim_state_dict(model, optim, None, StateDictType.SHARDED_STATE_DICT,
                                 ShardedOptimStateDictConfig())

    @staticmethod
    def optim_state_dict_to_load(model, optim, optim_state_dict, is_named_optimizer=False,
                                 load_directly=False, group=None) -> dict:
        """An ``optim.load_state_dict`` argument for this rank from ``optim_state_dict``
        (from ``optim_state_dict``: whole tensors are cut into this rank's shards)."""
        settings = FullyShardedDataParallel.get_state_dict_type(model)
        local = settings is not None and (
            settings.state_dict_type == StateDictType.LOCAL_STATE_DICT)
        out = _optim_state_dict_to_load(model, optim, optim_state_dict, local)
        if load_directly:
            optim.load_state_dict(out)
        return out

    @staticmethod
    def shard_full_optim_state_dict(full_optim_state_dict, model, optim_input=None,
                                    optim=None) -> dict:
        """This rank's optimizer state dict from a full one every rank holds."""
        return _optim_state_dict_to_load(model, optim, full_optim_state_dict, False)

    @staticmethod
    def scatter_full_optim_state_dict(full_optim_state_dict, model, optim_input=None,
                                      optim=None, group=None) -> dict:
        """This rank's optimizer state dict from a full one rank 0 holds (the others may
        pass None): rank 0's is broadcast, then sharded."""
        box = [full_optim_state_dict if dist.get_rank() == 0 else None]
        dist.broadcast_object_list(box, src=0)
        return _optim_state_dict_to_load(model, optim, box[0], False)

    @staticmethod
    def rekey_optim_state_dict(optim_state_dict, optim_state_key_type, model,
                               optim_input=None, optim=None) -> dict:
        """The same optimizer state keyed by parameter name or by parameter ID."""
        names = [_clean(n) for n, _ in nn.Module.named_parameters(model)]
        to_name = optim_state_key_type == OptimStateKeyType.PARAM_NAME

        def key(k):
            if to_name:
                return names[k] if isinstance(k, int) else k
            return names.index(k) if isinstance(k, str) else k

        return {"state": {key(k): v for k, v in optim_state_dict["state"].items()},
                "param_groups": [dict(g, params=[key(k) for k in g["params"]])
                                 for g in optim_state_dict["param_groups"]]}


# -- helpers -------------------------------------------------------------------------------
def _as_dtensor_like(value, target, local: bool):
    """``value`` (whole, a local shard with ``local``, or a DTensor) laid out as
    ``target``."""
    if isinstance(value, DTensor):
        if value.placements != target.placements:
            value = value.redistribute(target.device_mesh, target.placements)
        return value
    if local:
        return DTensor.from_local(value.to(target.dtype), target.device_mesh,
                                  target.placements, shape=tuple(target.shape))
    if tuple(value.shape) != tuple(target.shape):
        return value  # load_state_dict reports the size mismatch
    return distribute_tensor(value.detach().to(target.dtype), target.device_mesh,
                             target.placements, src_data_rank=None)


@contextlib.contextmanager
def _summon(fsdps: list, writeback: bool, rank0_only: bool, with_grads: bool,
            offload_to_cpu: bool = False):
    """Register each instance's whole parameters (gathered on every rank, in order) for
    the context; write changes back to the shards after it with ``writeback``."""
    done = []
    try:
        for f in fsdps:
            group = f._fsdp_group
            if group.unsharded:
                raise ValueError("expected to be in states [TrainingState.IDLE] but current "
                                 "state is TrainingState.FORWARD_BACKWARD")
            wholes = []
            with ember.no_grad():
                for p in group.params:
                    w = p.full_tensor()
                    if all(isinstance(q, Replicate) for q in p.placements):
                        w = w.clone()
                    if offload_to_cpu:
                        w = w.cpu()
                    wp = nn.Parameter(w, requires_grad=p.requires_grad)
                    if with_grads and p.grad is not None:
                        wp.grad = p.grad.full_tensor() if isinstance(p.grad, DTensor) \
                            else p.grad
                    wholes.append(wp)
            if not rank0_only or dist.get_rank() == 0:
                for module, name, i in group.slots:
                    module._parameters[name] = wholes[i]
            done.append((f, wholes))
            f._summoned += 1
        yield
    finally:
        for f, wholes in done:
            group = f._fsdp_group
            f._summoned -= 1
            if writeback:
                with ember.no_grad():
                    for (module, name, i) in group.slots:
                        current = module._parameters.get(name)
                        if isinstance(current, ember.Tensor) and not isinstance(
                                current, DTensor):
                            wholes[i] = current
                    for i, p in enumerate(group.params):
                        w = wholes[i]
                        p.copy_(distribute_tensor(w.detach().to(p.dtype), p.device_mesh,
                                                  p.placements, src_data_rank=None))
                        if with_grads and w.grad is not None and p.grad is not None:
                            p.grad.copy_(distribute_tensor(
                                w.grad.to(p.grad.dtype), p.device_mesh, p.placements,
                                src_data_rank=None))
            _reshard(group)


def _named_params(model) -> dict:
    """id(parameter) -> its clean name."""
    return {id(p): _clean(n) for n, p in nn.Module.named_parameters(model)}


def _optim_params(optim) -> list:
    return [p for g in optim.param_groups for p in g["params"]]


def _optim_state_dict(model, optim, optim_state_dict, kind, config) -> dict:
    names = _named_params(model)
    osd = optim.state_dict() if optim_state_dict is None else optim_state_dict
    params = _optim_params(optim)
    state = {}
    for index, p in enumerate(params):
        entry = osd["state"].get(index)
        if entry is None:
            continue
        out = {}
        for k, v in entry.items():
            if isinstance(v, DTensor):
                if kind == StateDictType.FULL_STATE_DICT:
                    whole = v.full_tensor()
                    v = whole.clone() if all(isinstance(q, Replicate)
                                             for q in v.placements) else whole
                elif kind == StateDictType.LOCAL_STATE_DICT:
                    v = v.to_local().clone()
            elif isinstance(v, ember.Tensor):  # not the optimizer's live tensor ("step")
                v = v.detach().clone()
            if getattr(config, "offload_to_cpu", False) and isinstance(v, ember.Tensor):
                v = v.cpu()
            out[k] = v
        state[names.get(id(p), index)] = out
    param_groups = []
    for g in osd["param_groups"]:
        ids = g["params"]
        param_groups.append(dict(g, params=[names.get(id(params[i]), i) for i in ids]))
    if (kind == StateDictType.FULL_STATE_DICT and getattr(config, "rank0_only", False)
            and dist.get_rank() != 0):
        return {}
    return {"state": state, "param_groups": param_groups}


def _optim_state_dict_to_load(model, optim, osd, local: bool) -> dict:
    names = _named_params(model)
    params = _optim_params(optim) if optim is not None else list(model.parameters())
    state = {}
    for index, p in enumerate(params):
        name = names.get(id(p), index)
        entry = osd["state"].get(name, osd["state"].get(index))
        if entry is None:
            continue
        out = {}
        for k, v in entry.items():
            if isinstance(p, DTensor) and isinstance(v, ember.Tensor) and v.dim() > 0:
                v = _as_dtensor_like(v, p, local)
                v = DTensor.from_local(v.to_local().clone(), v.device_mesh, v.placements,
                                       shape=tuple(v.shape))
            elif isinstance(v, ember.Tensor):  # the loaded optimizer owns its tensors
                v = v.detach().clone()
            out[k] = v
        state[index] = out
    groups = optim.param_groups if optim is not None else [{"params": params}]
    param_groups, start = [], 0
    for loaded, mine in zip(osd["param_groups"], groups):
        n = len(mine["params"])
        param_groups.append(dict(loaded, params=list(range(start, start + n))))
        start += n
    return {"state": state, "param_groups": param_groups}

