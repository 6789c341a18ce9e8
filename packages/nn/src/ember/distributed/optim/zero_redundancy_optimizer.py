"""``ZeroRedundancyOptimizer``: an optimizer whose state is sharded across the ranks (ZeRO-1).

Like ``torch.distributed.optim.ZeroRedundancyOptimizer``. The parameters are partitioned
across the ranks of the process group (PyTorch's greedy rule: within each parameter group,
largest first, each to the rank holding the fewest elements so far); each rank keeps a local
``optimizer_class`` over its own shard only, so it holds the optimizer state of its shard
only. ``step()`` steps the local optimizer, then every rank broadcasts the parameters it
updated. Gradients must already be averaged (``DistributedDataParallel`` does that).

The full state is gathered with ``consolidate_state_dict(to)`` (on every rank), after which
``state_dict()`` on rank ``to`` returns it in a plain optimizer's layout (global parameter
indices): it loads into a ``ZeroRedundancyOptimizer`` on any world size, or into the plain
optimizer.
"""

from __future__ import annotations

import copy
from itertools import chain
from typing import Any

import ember
import ember.distributed as dist
from ember import Tensor
from ember.optim import Optimizer

__all__ = ["ZeroRedundancyOptimizer"]


def _to_device(value, device):
    """``value`` with its tensors copied to ``device`` (0-dim ones, like ``step``, stay on the
    CPU as PyTorch keeps them)."""
    if isinstance(value, Tensor):
        target = "cpu" if value.dim() == 0 else device
        return value.detach().to(target).clone()
    if isinstance(value, dict):
        return {k: _to_device(v, device) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_device(v, device) for v in value)
    return value


def _to_cpu(value):
    if isinstance(value, Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {k: _to_cpu(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_cpu(v) for v in value)
    return value


class ZeroRedundancyOptimizer(Optimizer):
    """Wrap ``optimizer_class`` so that each rank keeps the state of its share of ``params``.

    Args:
        params: tensors, or dicts defining parameter groups, as for any optimizer (the same on
            every rank).
        optimizer_class: the local optimizer's class (``ember.optim.Adam``...).
        process_group: the group to shard over (default: the default group).
        parameters_as_bucket_view: store each rank's parameters in one flat buffer per device
            (their ``.data`` become views of it), so that one broadcast per rank and device
            synchronises them.
        overlap_with_ddp: stepping inside DDP's communication hook (not supported: Ember has
            DDP's communication hooks but not ZeRO's ``hook_with_zero_step``).
        **defaults: the local optimizer's options (``lr=...``).

    Example::

        >>> opt = ZeroRedundancyOptimizer(model.parameters(), ember.optim.Adam, lr=1e-3)
        >>> loss.backward(); opt.step()          # every rank, gradients averaged by DDP
        >>> opt.consolidate_state_dict(to=0)     # every rank
        >>> if dist.get_rank() == 0: ember.save(opt.state_dict(), "opt.pt")
    """

    def __init__(self, params, optimizer_class: type, process_group=None,
                 parameters_as_bucket_view: bool = False, overlap_with_ddp: bool = False,
                 **defaults: Any) -> None:
        params = self._verify_and_init_params(params)
        if overlap_with_ddp:
            raise NotImplementedError(
                "ZeroRedundancyOptimizer(overlap_with_ddp=True) steps inside "
                "DistributedDataParallel's communication hook (hook_with_zero_step), which "
                "ember does not provide (its DDP takes communication hooks, not this one): use "
                "overlap_with_ddp=False and call step() after backward")
        self.initialized = False
        super().__init__(params, defaults)
        self._partition_parameters_cache: list[list[dict]] = []
        self._param_to_rank_cache: dict[int, int] = {}
        self._param_to_index_cache: dict[int, int] = {}
        self._index_to_param_cache: list[Tensor] = []
        self._default_device = self._all_params[0].device
        self.process_group = process_group if process_group is not None else dist.group.WORLD
        if self.process_group is None:
            raise ValueError("Default process group has not been initialized, please make sure "
                             "to call init_process_group.")
        self.world_size: int = dist.get_world_size(self.process_group)
        self.rank: int = dist.get_rank(self.process_group)
        self.global_rank: int = dist.get_global_rank(self.process_group, self.rank)
        self._overlap_with_ddp = overlap_with_ddp
        self._optim_defaults = defaults
        self._optim_constructor = optimizer_class
        self._is_trainable_mask = self._get_is_trainable_mask()
        self._init_local_optimizer()
        self.parameters_as_bucket_view = parameters_as_bucket_view
        self._buckets: list[list[Tensor]] = []
        self._build_param_buckets()
        self._all_state_dicts: list[dict[str, Any]] = []
        self.initialized = True

    # -- parameters and their partition ---------------------------------------------------
    def _verify_and_init_params(self, params) -> list:
        if isinstance(params, Tensor):
            raise TypeError(f"`params` argument should be an iterable of Tensors, but got "
                            f"{params.type()}")
        try:
            all_params = list(params)
        except TypeError as e:
            raise TypeError(f"`params` argument should be an iterable of Tensors or dicts, "
                            f"but got {type(params).__name__}") from e
        if not all_params:
            raise ValueError("ZeroRedundancyOptimizer did not receive any parameters")
        all_tensors = all(isinstance(p, Tensor) for p in all_params)
        all_dicts = all(isinstance(p, dict) for p in all_params)
        if not all_tensors and not all_dicts:
            raise TypeError("`params` argument should be an iterable of Tensors or dicts")
        if all_tensors:
            self._all_params = list(all_params)
        else:
            self._all_params = []
            for group in all_params:
                if "params" not in group:
                    raise ValueError("Each parameter group passed-in via `params` must have a "
                                     "'params' key mapping to the parameters in the group")
                group_params = group["params"]
                self._all_params.extend([group_params] if isinstance(group_params, Tensor)
                                        else list(group_params))
        return all_params

    def _clear_cache(self) -> None:
        self._partition_parameters_cache.clear()
        self._param_to_rank_cache.clear()
        self._index_to_param_cache.clear()
        self._param_to_index_cache.clear()

    def _partition_parameters(self) -> list[list[dict]]:
        """Each rank's parameter groups: within each group, the parameters from the largest,
        each given to the rank with the fewest elements so far (ties: the lowest rank)."""
        if not self._partition_parameters_cache:
            self._partition_parameters_cache = [[] for _ in range(self.world_size)]
            sizes = [0] * self.world_size
            for group in self.param_groups:
                per_rank: list[list[Tensor]] = [[] for _ in range(self.world_size)]
                for p in sorted(group["params"], key=lambda t: t.numel(), reverse=True):
                    rank = sizes.index(min(sizes))
                    per_rank[rank].append(p)
                    sizes[rank] += p.numel()
                for rank, rank_params in enumerate(per_rank):
                    rank_group = copy.copy(group)
                    rank_group["params"] = rank_params
                    self._partition_parameters_cache[rank].append(rank_group)
        return self._partition_parameters_cache

    @property
    def _param_to_rank(self) -> dict[int, int]:
        """``id(parameter)`` -> the rank that updates it."""
        if not self._param_to_rank_cache:
            for rank, groups in enumerate(self._partition_parameters()):
                for group in groups:
                    for p in group["params"]:
                        self._param_to_rank_cache[id(p)] = rank
        return self._param_to_rank_cache

    @property
    def _param_to_index(self) -> dict[int, int]:
        """``id(parameter)`` -> its index in the global state dict."""
        if not self._param_to_index_cache:
            self._param_to_index_cache = {
                id(p): i for i, p in enumerate(chain.from_iterable(
                    g["params"] for g in self.param_groups))}
        return self._param_to_index_cache

    @property
    def _index_to_param(self) -> list[Tensor]:
        if not self._index_to_param_cache:
            self._index_to_param_cache = list(chain.from_iterable(
                g["params"] for g in self.param_groups))
        return self._index_to_param_cache

    def _get_is_trainable_mask(self) -> list[bool]:
        return [p.requires_grad for p in self._all_params]

    def _init_local_optimizer(self) -> None:
        self.optim: Optimizer = self._optim_constructor(
            self._partition_parameters()[self.rank], **self._optim_defaults)
        self._sync_param_groups(self.optim.param_groups, self.param_groups)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a parameter group (on every rank): its parameters are partitioned as the
        others were, and this rank's share joins the local optimizer."""
        super().add_param_group(param_group)
        if not getattr(self, "initialized", False):
            return
        new_params = self.param_groups[-1]["params"]
        self._all_params.extend(new_params)
        self._clear_cache()
        groups = self._partition_parameters()[self.rank]
        if len(groups) == len(self.optim.param_groups) + 1:
            self.optim.add_param_group(groups[-1])
        self._is_trainable_mask = self._get_is_trainable_mask()
        if self.parameters_as_bucket_view:
            self._build_param_buckets()

    # -- buckets (parameters_as_bucket_view) ----------------------------------------------
    def _device_to_params_per_rank(self) -> dict:
        """device -> for each rank, the parameters on that device it updates."""
        result: dict = {}
        for rank, groups in enumerate(self._partition_parameters()):
            for group in groups:
                for p in group["params"]:
                    per_rank = result.setdefault(p.device,
                                                 [[] for _ in range(self.world_size)])
                    per_rank[rank].append(p)
        return result

    def _build_param_buckets(self) -> None:
        """One flat buffer per device and rank holding that rank's trainable parameters,
        which become views of it."""
        if not self.parameters_as_bucket_view:
            return
        self._buckets = []
        with ember.no_grad():
            for device, per_rank in self._device_to_params_per_rank().items():
                device_buckets = []
                for params in per_rank:
                    trainable = []
                    for p in params:
                        if p.requires_grad:
                            trainable.append(p)
                        else:  # out of any bucket it was in, keeping its values
                            p.data = p.data.detach().clone()
                    if not trainable:
                        device_buckets.append(ember.zeros(1, device=device))
                        continue
                    dtype = trainable[0].dtype
                    bucket = ember.empty(sum(p.numel() for p in trainable), dtype=dtype,
                                         device=device)
                    offset = 0
                    for p in trainable:
                        n = p.numel()
                        view = bucket.narrow(0, offset, n)
                        view.copy_(p.data.reshape(-1))
                        p.data = view.view(p.shape)
                        offset += n
                    device_buckets.append(bucket)
                self._buckets.append(device_buckets)

    # -- stepping -------------------------------------------------------------------------
    @staticmethod
    def _sync_param_groups(src: list[dict], dst: list[dict]) -> None:
        """Copy every option but ``params`` from ``src``'s groups to ``dst``'s."""
        if len(src) != len(dst):
            raise AssertionError("Mismatch between number of source and destination parameter "
                                 "groups")
        for s, d in zip(src, dst):
            for key in s:
                if key != "params":
                    d[key] = s[key]

    def _local_step(self, closure=None, **kwargs):
        mask = self._get_is_trainable_mask()
        if mask != self._is_trainable_mask:
            self._build_param_buckets()
            self._is_trainable_mask = mask
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
        loss = self.optim.step(**kwargs) if closure is None \
            else self.optim.step(closure=closure, **kwargs)
        self._sync_param_groups(self.optim.param_groups, self.param_groups)
        return loss

    def step(self, closure=None, **kwargs):
        """Step this rank's shard with the local optimizer, then broadcast every rank's
        updated parameters to the others."""
        loss = self._local_step(closure=closure, **kwargs)
        self._sync_params()
        return loss

    def _broadcast_params_from_rank(self, rank: int) -> list:
        src = dist.get_global_rank(self.process_group, rank)
        if self.parameters_as_bucket_view:
            return [dist.broadcast(device_buckets[rank], src=src, group=self.process_group,
                                   async_op=True) for device_buckets in self._buckets]
        return [dist.broadcast(p.data, src=src, group=self.process_group, async_op=True)
                for group in self._partition_parameters()[rank] for p in group["params"]]

    def _sync_params(self) -> None:
        handles = []
        for rank in range(self.world_size):
            handles.extend(self._broadcast_params_from_rank(rank))
        for h in handles:
            h.wait()

    # -- state ----------------------------------------------------------------------------
    def consolidate_state_dict(self, to: int = 0) -> None:
        """Gather every rank's shard of the optimizer state on group rank ``to`` (call it on
        every rank); ``state_dict()`` there then returns the whole state."""
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
        mine = _to_cpu(self.optim.state_dict())
        dst = dist.get_global_rank(self.process_group, to)
        gathered = [None] * self.world_size if self.rank == to else None
        dist.gather_object(mine, gathered, dst=dst, group=self.process_group)
        self._all_state_dicts = list(gathered) if self.rank == to else []

    def state_dict(self) -> dict[str, Any]:
        """The whole optimizer state in a plain optimizer's layout (global parameter
        indices), on the rank that consolidated it."""
        if not self._all_state_dicts:
            raise RuntimeError(f"Optimizer state has not been consolidated on this rank. Please "
                               f"call `consolidate_state_dict(to={self.rank})` on all ranks "
                               f"beforehand if you meant to save the global state.")
        state_dict = super().state_dict()
        state_dict["state"] = {k: v for k, v in state_dict["state"].items() if v is not None}
        partition = self._partition_parameters()
        for rank, local in enumerate(self._all_state_dicts):
            local_groups = local["param_groups"]
            global_groups = partition[rank]
            if len(local_groups) != len(global_groups):
                raise AssertionError("Mismatch between number of local and global parameter "
                                     "groups")
            for local_group, global_group in zip(local_groups, global_groups):
                if len(local_group["params"]) != len(global_group["params"]):
                    raise AssertionError("Mismatch between number of local and global "
                                         "parameters in parameter group")
                for local_index, p in zip(local_group["params"], global_group["params"]):
                    if local_index in local["state"]:
                        state_dict["state"][self._param_to_index[id(p)]] = \
                            local["state"][local_index]
        state_dict["state"] = dict(sorted(state_dict["state"].items()))
        return state_dict

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state made by :meth:`state_dict` (on any world size) or by the plain
        optimizer: each rank keeps the state of its own shard."""
        state_dict = {**state_dict, "state": dict(state_dict["state"])}
        for index, value in state_dict["state"].items():
            p = self._index_to_param[index]
            if self._param_to_rank[id(p)] != self.rank:
                state_dict["state"][index] = None
            else:
                self.optim.state[p] = _to_device(value, p.device)
        super().load_state_dict(state_dict)
        self._sync_param_groups(state_dict["param_groups"], self.param_groups)
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
