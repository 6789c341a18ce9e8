"""``DistributedDataParallel``: one process per replica, gradients averaged in buckets.

``torch.nn.parallel.DistributedDataParallel`` over :mod:`ember.distributed`. At construction
the ranks check that their parameters have the same shapes, then take rank 0's parameters and
buffers. Before each forward, rank 0's buffers are broadcast (``broadcast_buffers``). During
backward the gradients are all-reduced in buckets (``bucket_cap_mb``, parameters in reverse
order, the first bucket small: 1 MiB by default), each bucket launched with
``all_reduce(async_op=True)`` as soon as its gradients are known, so communication overlaps
the rest of backward; every gradient is multiplied by ``1 / world_size`` before the sum, as
PyTorch's default reducer does (so on 2 ranks the averages are PyTorch's bit for bit; on more,
up to the order in which the engine adds the ranks' shares).

How a gradient is known early. Ember's backward engine runs every inner node first and
accumulates the leaves (parameters) last, so a parameter's post-accumulate hook fires only
when all the computation is over. To overlap, the wrapper walks the graph of the forward's
outputs (PyTorch walks it too, for ``find_unused_parameters``) and hooks the nodes that
produce each parameter's gradient: when the last of them has run, the gradient is complete,
goes into its bucket, and a full bucket is launched (buckets are launched in order, so every
rank issues the same collectives in the same order). The post-accumulate hook of each
parameter then checks that the gradient accumulated into ``.grad`` is the one sent (a hook
on the parameter or a loss term outside the forward's outputs may have changed it: such a
bucket is reduced again, every rank agreeing through flags sent with the last bucket), and
the last of these hooks waits for every bucket and writes the averages into ``.grad``.
"""

from __future__ import annotations

import dataclasses
import inspect
import time
import warnings
import weakref
from contextlib import contextmanager

import ember
import ember.distributed as dist
from ember import Tensor
from ember.autograd import Function
from ember.autograd.graph import AccumulateGrad
from ember.distributed import GradBucket
from ember.distributed.algorithms.join import Join, Joinable, JoinHook
from ember.futures import Future

from ..modules.module import Module

__all__ = ["DistributedDataParallel"]

_MB_TO_BYTES = 1024 * 1024
#: ``bucket_cap_mb``'s default, in MiB (PyTorch's ``_DEFAULT_BUCKET_CAP_MB``)
_DEFAULT_BUCKET_CAP_MB = 25
#: the first bucket's size when ``bucket_cap_mb`` is the default (PyTorch's
#: ``torch.distributed._DEFAULT_FIRST_BUCKET_BYTES``): the gradients known first go out soon
_DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024
#: how many bytes of parameters or buffers one broadcast carries (PyTorch's 250 MiB)
_BROADCAST_BUCKET_BYTES = 250 * 1024 * 1024

# a parameter's state during one synchronised backward
_WAITING = 0      # its gradient is not known yet
_CAPTURED = 1     # its producers have run; the gradient is in its bucket; accumulation is due
_NO_GRAD = 2      # its producers have run and gave no gradient
_UNUSED = 3       # not in the forward's graph (find_unused_parameters)
_LATE = 4         # accumulated without having been seen by its producers
_DONE = 5         # captured, then accumulated


class _DDPSink(Function):
    """Copies of the forward's outputs, whose backward hands undefined gradients on as
    None (``find_unused_parameters``): the graph behind an output that the loss does not
    use then runs with None gradients, and its parameters are marked ready without one.
    Copies, as PyTorch's: an input returned as is would be a view the caller could not
    modify in place (HuggingFace's Trainer scales its loss with ``loss *= n``)."""

    @staticmethod
    def forward(ctx, *tensors):
        ctx.set_materialize_grads(False)
        return tuple(t.clone() for t in tensors)

    @staticmethod
    def backward(ctx, *grads):
        return grads


class _Bucket:
    """One flat buffer of gradients (one dtype and device) and its collective."""

    __slots__ = ("index", "members", "offsets", "flat", "size", "slots", "views", "filled",
                 "work", "flags")

    def __init__(self, index: int, members: list[int], params: list[Tensor],
                 n_flags: int) -> None:
        self.index = index
        self.members = members
        self.offsets = []
        offset = 0
        for i in members:
            self.offsets.append(offset)
            offset += params[i].numel()
        self.size = offset
        first = params[members[0]]
        self.flat = ember.zeros(offset + n_flags, dtype=first.dtype, device=first.device)
        self.slots = [self.flat.narrow(0, o, params[i].numel())
                      for o, i in zip(self.offsets, members)]
        # the gradients as views of the bucket (gradient_as_bucket_view), in the params' shapes
        self.views = [s.view(params[i].shape) for s, i in zip(self.slots, members)]
        self.flags = self.flat.narrow(0, offset, n_flags) if n_flags else None
        self.filled = 0
        self.work = None


def _compute_bucket_assignment_by_size(params: list[Tensor], limits: list[int],
                                       order: list[int]) -> list[list[int]]:
    """Group parameter indices, taken in ``order``, into buckets of one dtype and device
    closed once they reach their size limit (``limits[0]`` for the first bucket of each kind,
    then the next limit, the last one repeating): PyTorch's
    ``_compute_bucket_assignment_by_size`` with explicit indices."""
    result: list[list[int]] = []
    open_buckets: dict = {}
    limit_index: dict = {}
    for i in order:
        p = params[i]
        key = (p.dtype, p.device)
        members, size = open_buckets.get(key, ([], 0))
        members.append(i)
        size += p.numel() * p.element_size()
        k = limit_index.setdefault(key, 0)
        if size >= limits[k]:
            result.append(members)
            open_buckets.pop(key, None)
            limit_index[key] = min(k + 1, len(limits) - 1)
        else:
            open_buckets[key] = (members, size)
    # the buckets left open, in the order their first gradients come
    position = {i: k for k, i in enumerate(order)}
    rest = sorted((members for members, _ in open_buckets.values()),
                  key=lambda members: position[members[0]])
    return result + rest


def _tensors_in(obj, found: list) -> list:
    """Every tensor in ``obj`` (nested tuples, lists, dicts, dataclasses), in order."""
    if isinstance(obj, Tensor):
        found.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors_in(o, found)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors_in(o, found)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            _tensors_in(getattr(obj, f.name), found)
    return found


def _replace_tensors(obj, it):
    """``obj`` with its tensors replaced, in order, by the items of ``it``."""
    if isinstance(obj, Tensor):
        return next(it)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_replace_tensors(o, it) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_replace_tensors(o, it) for o in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _replace_tensors(v, it)) for k, v in obj.items())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.replace(obj, **{f.name: _replace_tensors(getattr(obj, f.name), it)
                                           for f in dataclasses.fields(obj) if f.init})
    return obj


def _to_device(obj, device):
    if isinstance(obj, Tensor):
        return obj.to(device)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_to_device(o, device) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_device(o, device) for o in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _to_device(v, device)) for k, v in obj.items())
    return obj


def _broadcast_coalesced(tensors: list[Tensor], src: int, group, bucket_bytes: int) -> None:
    """Broadcast ``tensors`` from global rank ``src``, flattened into one buffer per dtype and
    device (at most ``bucket_bytes`` each), and copy the values back into place."""
    kinds: dict = {}
    for t in tensors:
        kinds.setdefault((t.dtype, t.device), []).append(t)
    receiving = dist.get_rank() != src
    with ember.no_grad():
        for same_kind in kinds.values():
            start = 0
            while start < len(same_kind):
                chunk, size = [], 0
                while start < len(same_kind) and (not chunk or size + same_kind[start].numel()
                                                  * same_kind[start].element_size()
                                                  <= bucket_bytes):
                    chunk.append(same_kind[start])
                    size += same_kind[start].numel() * same_kind[start].element_size()
                    start += 1
                flat = ember.cat([t.detach().reshape(-1) for t in chunk])
                dist.broadcast(flat, src=src, group=group)
                if receiving:
                    offset = 0
                    for t in chunk:
                        n = t.numel()
                        t.detach().copy_(flat.narrow(0, offset, n).view(t.shape))
                        offset += n


class DistributedDataParallel(Module, Joinable):
    """Data parallelism over processes: wrap a module in each rank, feed each rank its share
    of the batch, and the gradients after ``backward`` are the average over the ranks, as
    with ``torch.nn.parallel.DistributedDataParallel``.

    Args:
        module: the module to replicate (its parameters are taken from rank 0).
        device_ids: ``None`` for CPU modules; for a module on one accelerator, the one
            device it runs on (inputs are moved there).
        output_device: where outputs go (the device of ``device_ids[0]`` by default).
        dim: kept for PyTorch compatibility (the batch is split by the user's sampler).
        broadcast_buffers: broadcast rank 0's buffers (batch-norm statistics) at
            construction and before each forward.
        init_sync: check the parameters' shapes and broadcast rank 0's state at construction.
        process_group: the group to average over (default: the default group).
        bucket_cap_mb: the bucket size in MiB (default 25, the first bucket then 1 MiB).
        find_unused_parameters: walk the forward's outputs to find parameters that take no
            part, so that backward does not wait for them.
        check_reduction: deprecated, ignored (PyTorch's warning).
        gradient_as_bucket_view: leave each ``.grad`` as a view of its bucket after
            backward (no copy back; the gradients then share the buckets' memory).
        static_graph: the graph is the same every iteration (accepted; unused parameters
            are then found as with ``find_unused_parameters``).

    Use ``no_sync()`` to accumulate gradients locally for a few iterations; the state dict
    has the wrapped module's keys prefixed with ``module.``, as PyTorch's. ``with
    model.join():`` trains on uneven inputs: a rank out of batches shadows the others'
    gradient all-reduces with zeros until all are done (``ember.distributed.algorithms``).
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, init_sync: bool = True, process_group=None,
                 bucket_cap_mb: float | None = None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False,
                 static_graph: bool = False) -> None:
        super().__init__()
        Joinable.__init__(self)  # the disabled join configuration
        self._divide_by_initial_world_size = True
        self.process_group = (process_group if process_group is not None
                              else dist.group.WORLD)
        if self.process_group is None:
            raise ValueError("Default process group has not been initialized, please make "
                             "sure to call init_process_group.")
        ignore = getattr(module, "_ddp_params_and_buffers_to_ignore", ())
        self.parameters_to_ignore = set(ignore)
        module_params = [p for n, p in module.named_parameters()
                         if n not in self.parameters_to_ignore]
        if not any(p.requires_grad for p in module_params):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError("device_ids can only be None or contain a single element.")
        device_types = {p.device.type for p in module_params}
        if len(device_types) != 1:
            raise ValueError(f"DistributedDataParallel's input module must be on the same type "
                             f"of devices, but input module parameters locate in "
                             f"{device_types}.")
        self.device_type = next(iter(device_types))
        multi_device = len({p.device for p in module_params}) > 1
        if not device_ids or self.device_type == "cpu" or multi_device:
            if device_ids or output_device:
                devices = {p.device for p in module_params}
                raise ValueError(
                    f"DistributedDataParallel device_ids and output_device arguments only work "
                    f"with single-device/multiple-device GPU modules or CPU modules, but got "
                    f"device_ids {device_ids}, output_device {output_device}, and module "
                    f"parameters {devices}.")
            self.device_ids = None
            self.output_device = None
        else:
            self.device_ids = [_device_index(d) for d in device_ids]
            self.output_device = _device_index(device_ids[0] if output_device is None
                                               else output_device)
        if check_reduction:
            warnings.warn("The `check_reduction` argument in `DistributedDataParallel` module "
                          "is deprecated. Please avoid using it.", FutureWarning, stacklevel=2)
        self.dim = dim
        self.module = module
        self.device = module_params[0].device
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.broadcast_bucket_size = _BROADCAST_BUCKET_BYTES
        default_cap = bucket_cap_mb is None
        cap_mb = _DEFAULT_BUCKET_CAP_MB if default_cap else bucket_cap_mb
        self.bucket_bytes_cap = int(cap_mb * _MB_TO_BYTES)
        self.bucket_bytes_cap_default = default_cap
        first = _DEFAULT_FIRST_BUCKET_BYTES if default_cap else self.bucket_bytes_cap

        self._params = self._build_params_for_reducer()
        self._names = self._param_names()
        if init_sync:
            self._verify_param_shape_across_processes()
            self._sync_module_states(broadcast_buffers)
        limits = [first, self.bucket_bytes_cap] if first < self.bucket_bytes_cap \
            else [self.bucket_bytes_cap]
        self._reducer = _Reducer(self, limits)

    # -- construction ---------------------------------------------------------------------
    def _build_params_for_reducer(self) -> list[Tensor]:
        """The parameters that take a gradient, each once, in PyTorch's order."""
        params, seen = [], set()
        for module_name, m in self.module.named_modules():
            for param_name, p in m.named_parameters(recurse=False):
                name = f"{module_name}.{param_name}" if module_name else param_name
                if p.requires_grad and name not in self.parameters_to_ignore \
                        and id(p) not in seen:
                    seen.add(id(p))
                    params.append(p)
        return params

    def _param_names(self) -> list[str]:
        names = {id(p): n for n, p in self.module.named_parameters()}
        return [names.get(id(p), "?") for p in self._params]

    def _module_buffers(self) -> list[Tensor]:
        return [b for n, b in self.module.named_buffers() if n not in self.parameters_to_ignore]

    def _verify_param_shape_across_processes(self) -> None:
        """Every rank must wrap the same parameters (PyTorch's errors, on every rank)."""
        pg = self.process_group
        mine = [(tuple(p.shape), tuple(p.stride())) for p in self._params]
        every = [None] * dist.get_world_size(pg)
        dist.all_gather_object(every, mine, group=pg)
        rank = dist.get_rank(pg)
        for r, theirs in enumerate(every):
            if len(theirs) != len(mine):
                raise RuntimeError(f"DDP expects same model across all ranks, but Rank {rank} "
                                   f"has {len(mine)} params, while rank {r} has inconsistent "
                                   f"{len(theirs)} params.")
        for r, theirs in enumerate(every):
            for i, ((shape, stride), (shape0, stride0)) in enumerate(zip(theirs, every[0])):
                for what, a, b in (("sizes", shape, shape0), ("strides", stride, stride0)):
                    if a != b:
                        whose = "this process" if r == rank else f"process {r}"
                        raise RuntimeError(f"[{r}]: params[{i}] in {whose} with {what} "
                                           f"{list(a)} appears not to match {what} of the same "
                                           f"param in process 0.")

    def _sync_module_states(self, with_buffers: bool, src: int = 0) -> None:
        """Group rank ``src``'s parameters (and buffers) everywhere."""
        tensors = [p for n, p in self.module.named_parameters()
                   if n not in self.parameters_to_ignore]
        if with_buffers:
            tensors += self._module_buffers()
        if tensors:
            with ember.no_grad():
                _broadcast_coalesced(tensors, dist.get_global_rank(self.process_group, src),
                                     self.process_group, self.broadcast_bucket_size)

    # -- forward --------------------------------------------------------------------------
    def will_sync_module_buffers(self) -> bool:
        """Whether the next forward broadcasts rank 0's buffers first."""
        return (self.require_forward_param_sync and self.broadcast_buffers
                and len(self._module_buffers()) > 0)

    def _sync_buffers(self, src: int = 0) -> None:
        _broadcast_coalesced(self._module_buffers(),
                             dist.get_global_rank(self.process_group, src),
                             self.process_group, self.broadcast_bucket_size)

    # -- communication hooks ----------------------------------------------------------------
    def register_comm_hook(self, state, hook) -> None:
        """Reduce each gradient bucket with ``hook(state, bucket)`` (a ``GradBucket``) instead
        of DDP's averaging all-reduce; the hook returns a ``Future`` of the reduced flat
        tensor (``ember.distributed.algorithms.ddp_comm_hooks`` has PyTorch's). Once only."""
        if not callable(hook):
            raise TypeError("Communication hook must be callable.")
        try:
            params = inspect.signature(hook).parameters
        except (TypeError, ValueError):
            params = {}
        bucket = params.get("bucket")
        if bucket is not None and bucket.annotation not in (inspect.Parameter.empty,
                                                             GradBucket, "dist.GradBucket",
                                                             "GradBucket"):
            raise ValueError("Communication hook: bucket annotation should be "
                             "dist.GradBucket.")
        if self._reducer.comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be "
                               "called once.")
        self._reducer.comm_hook = hook
        self._reducer.comm_state = state

    def _register_builtin_comm_hook(self, comm_hook_type) -> None:
        from ember.distributed.algorithms.ddp_comm_hooks import default_hooks

        hooks = {"ALLREDUCE": default_hooks.allreduce_hook,
                 "FP16_COMPRESS": default_hooks.fp16_compress_hook,
                 "BF16_COMPRESS": default_hooks.bf16_compress_hook}
        name = getattr(comm_hook_type, "name", comm_hook_type)
        if name not in hooks:
            raise ValueError(f"Unknown built-in communication hook {comm_hook_type!r}")
        self.register_comm_hook(self.process_group, hooks[name])

    # -- uneven inputs (Join) ---------------------------------------------------------------
    def join(self, divide_by_initial_world_size: bool = True, enable: bool = True,
             throw_on_early_termination: bool = False) -> Join:
        """The context for training on uneven inputs (PyTorch's ``DDP.join``): inside it a
        rank that runs out of batches answers the others' all-reduces with zero gradients,
        so the gradient stays the sum over the ranks still training divided by the initial
        world size (or, with ``divide_by_initial_world_size=False``, by the ranks still
        training). ``throw_on_early_termination=True`` raises on every rank instead once one
        runs out. When all have joined, the last rank to join broadcasts its model."""
        return Join([self], enable, throw_on_early_termination,
                    divide_by_initial_world_size=divide_by_initial_world_size)

    def join_hook(self, **kwargs) -> JoinHook:
        return _DDPJoinHook(self, kwargs.get("divide_by_initial_world_size", True))

    @property
    def join_device(self):
        return self.device

    @property
    def join_process_group(self):
        return self.process_group

    def _find_common_rank(self, rank: int, rank_cond: bool) -> int:
        """The largest group rank among those with ``rank_cond`` (an all-reduce)."""
        t = ember.tensor([rank if rank_cond else -1], device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.process_group)
        common = int(t.item())
        if common == -1:
            raise ValueError("BUG! Expected rank_cond to be true for at least one process. "
                             "This indicates a bug in PyTorch, please report an issue.")
        return common

    def _check_global_requires_backward_grad_sync(self, is_joined_rank: bool):
        """Tell the joined ranks whether this iteration's backward reduces gradients (1 from
        each rank whose does); the joined ranks read the sum."""
        flag = (not is_joined_rank and self.require_backward_grad_sync
                and ember.is_grad_enabled())
        t = ember.ones(1, device=self.device) if flag else ember.zeros(1, device=self.device)
        work = dist.all_reduce(t, group=self.process_group, async_op=True)
        return work, t

    def _join_pre_forward(self) -> None:
        """The collectives a rank still training runs at each forward inside ``join()``:
        counted as training (the work's sum is the ranks still training), the buffers from
        the last rank still training, and the backward-sync flag."""
        work = Join.notify_join_context(self)
        reducer = self._reducer
        if work is not None and not self._divide_by_initial_world_size:
            work.wait()
            reducer.inv_world = 1.0 / float(work.result()[0].item())
        else:
            reducer.inv_world = 1.0 / reducer.world_size
        if self.will_sync_module_buffers():
            rank = dist.get_rank(self.process_group)
            self._sync_buffers(self._find_common_rank(rank, True))
        self._check_global_requires_backward_grad_sync(is_joined_rank=False)

    def forward(self, *inputs, **kwargs):
        """Run the module on this rank's inputs and prepare the gradients' reduction."""
        grad_enabled = ember.is_grad_enabled()
        if grad_enabled:
            self._reducer.ensure_prior_reduction_finished()
        if self._join_config.enable:
            self._join_pre_forward()
        elif self.will_sync_module_buffers():
            self._sync_buffers()
        if self.device_ids:
            device = ember.device(self.device_type, self.device_ids[0])
            inputs, kwargs = _to_device(inputs, device), _to_device(kwargs, device)
        output = self.module(*inputs, **kwargs)
        if grad_enabled and self.require_backward_grad_sync:
            self.require_forward_param_sync = True
            tensors = _tensors_in(output, [])
            if self._finds_unused():
                output, tensors = self._through_sink(output, tensors)
            self._reducer.prepare_for_backward(tensors)
        else:
            self.require_forward_param_sync = False
        return output

    def _finds_unused(self) -> bool:
        return self.find_unused_parameters or self.static_graph

    def _through_sink(self, output, tensors):
        """Route the outputs that have a graph through :class:`_DDPSink`."""
        routed = [t for t in tensors if t.grad_fn is not None]
        if not routed:
            return output, tensors
        sunk = iter(_DDPSink.apply(*routed))
        new = [next(sunk) if t.grad_fn is not None else t for t in tensors]
        return _replace_tensors(output, iter(new)), new

    @contextmanager
    def no_sync(self):
        """Accumulate gradients locally inside the context; the first synchronised backward
        after it averages the accumulated gradients. (The forward must run inside it.)"""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    @staticmethod
    def _set_params_and_buffers_to_ignore_for_model(module: Module,
                                                    params_and_buffers_to_ignore) -> None:
        """Name (``"layer.weight"``) parameters and buffers that DDP should leave alone."""
        module._ddp_params_and_buffers_to_ignore = list(params_and_buffers_to_ignore)

    def _set_static_graph(self) -> None:
        self.static_graph = True

    def __del__(self) -> None:
        # the parameters outlive the wrapper: take its hooks off them
        reducer = self.__dict__.get("_reducer")
        if reducer is not None:
            reducer.remove_hooks()


class _HookWork:
    """A bucket reduced by a communication hook: waiting takes the future's tensor into the
    bucket. Never complete before its wait: a hook's later collectives (PowerSGD's) run when
    its future is waited, which DDP does bucket by bucket in the same order on every rank."""

    __slots__ = ("fut", "grads", "_done")

    def __init__(self, fut, grads) -> None:
        if not isinstance(fut, Future):
            raise RuntimeError("Communication hook must return a torch.futures.Future, got "
                               f"{type(fut).__name__}")
        self.fut = fut
        self.grads = grads
        self._done = False

    def is_completed(self) -> bool:
        return self._done

    def wait(self) -> bool:
        if not self._done:
            result = self.fut.wait()
            if isinstance(result, (list, tuple)):
                result = result[0]
            if self.grads is not None and result is not self.grads:
                if result.shape != self.grads.shape:
                    raise RuntimeError(f"Communication hook returned a tensor of shape "
                                       f"{tuple(result.shape)} for a bucket of "
                                       f"{tuple(self.grads.shape)}")
                self.grads.copy_(result)
            self._done = True
        return True


class _DDPJoinHook(JoinHook):
    """What a rank out of inputs does for DDP while others train: the forward's collectives,
    then one all-reduce of zeros per gradient bucket, in the reducer's order (and again for
    each bucket a rank had to re-send); at the end, the last joiner's model everywhere."""

    def __init__(self, ddp: DistributedDataParallel, divide_by_initial_world_size: bool):
        self.ddp = ddp
        ddp._divide_by_initial_world_size = divide_by_initial_world_size

    def main_hook(self) -> None:
        ddp = self.ddp
        if ddp.will_sync_module_buffers():
            rank = dist.get_rank(ddp.process_group)
            ddp._sync_buffers(ddp._find_common_rank(rank, False))
        work, flag = ddp._check_global_requires_backward_grad_sync(is_joined_rank=True)
        work.wait()
        should_sync = flag.item() != 0
        ddp.require_forward_param_sync = should_sync
        if should_sync:
            ddp._reducer.shadow_reduction()

    def post_hook(self, is_last_joiner: bool) -> None:
        ddp = self.ddp
        rank = dist.get_rank(ddp.process_group)
        ddp._sync_module_states(ddp.broadcast_buffers,
                                src=ddp._find_common_rank(rank, is_last_joiner))


def _device_index(device) -> int:
    if isinstance(device, int):
        return device
    device = ember.device(device)
    return 0 if device.index is None else device.index


class _Reducer:
    """The gradient reduction of one ``DistributedDataParallel`` (PyTorch's ``Reducer``)."""

    def __init__(self, ddp: DistributedDataParallel, limits: list[int]) -> None:
        self._ddp = weakref.ref(ddp)
        self.params = ddp._params
        self.names = ddp._names
        self.group = ddp.process_group
        self.world_size = dist.get_world_size(self.group)
        self.rank = dist.get_rank(self.group)
        self.inv_world = 1.0 / self.world_size
        self.comm_hook = None  # register_comm_hook's (state, bucket) -> Future
        self.comm_state = None
        self.bucket_view = ddp.gradient_as_bucket_view
        n = len(self.params)
        self.index_of = {id(p): i for i, p in enumerate(self.params)}
        order = list(range(n - 1, -1, -1))  # gradients come roughly in reverse order
        assignment = _compute_bucket_assignment_by_size(self.params, limits, order)
        nb = len(assignment)
        # the last bucket also carries the flags every rank must agree on: which early
        # buckets must be reduced again, and (finding unused parameters) which were used
        self.n_flag_buckets = nb - 1
        self.buckets = [_Bucket(b, members, self.params,
                                self.n_flag_buckets + n if b == nb - 1 else 0)
                        for b, members in enumerate(assignment)]
        self.bucket_of = [0] * n
        self.position = [0] * n
        for b in self.buckets:
            for k, i in enumerate(b.members):
                self.bucket_of[i] = b.index
                self.position[i] = k
        self.iteration = 0
        self.expect_hooks = False
        self.started = False
        self._reset()
        self.handles = [p.register_post_accumulate_grad_hook(self._accumulated_hook(i))
                        for i, p in enumerate(self.params)]

    def finds_unused(self) -> bool:
        ddp = self._ddp()
        return ddp is not None and ddp._finds_unused()

    def remove_hooks(self) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles = []

    def _reset(self) -> None:
        n = len(self.params)
        self.state = [_WAITING] * n
        self.left = [0] * n
        self.captured: list = [None] * n
        self.old: list = [None] * n
        self.pending: set = set()
        self.dirty: set = set()
        self.unused: list[int] = []
        self.next_bucket = 0
        self.in_flight: list = []
        for b in self.buckets:
            b.filled = 0
            b.work = None

    # -- forward side -------------------------------------------------------------------
    def ensure_prior_reduction_finished(self) -> None:
        """PyTorch's error when the last backward left gradients unreduced."""
        if not (self.expect_hooks and self.started):
            return
        missing = sorted(self.pending)
        if self.finds_unused():
            hint = ("Since `find_unused_parameters=True` is enabled, this likely  means that "
                    "not all `forward` outputs participate in computing loss. You can fix this "
                    "by making sure all `forward` function outputs participate in calculating "
                    "loss. \n")
        else:
            hint = ("You can enable unused parameter detection by passing the keyword argument "
                    "`find_unused_parameters=True` to "
                    "`ember.nn.parallel.DistributedDataParallel`, and by \nmaking sure all "
                    "`forward` function outputs participate in calculating loss. \n")
        text = ("Expected to have finished reduction in the prior iteration before starting a "
                "new one. This error indicates that your module has parameters that were not "
                "used in producing loss. " + hint +
                "If you already have done the above, then the distributed data parallel module "
                "wasn't able to locate the output tensors in the return value of your module's "
                "`forward` function. Please include the loss function and the structure of the "
                "return value of `forward` of your module when reporting this issue (e.g. list, "
                "dict, iterable).\n")
        if dist.get_debug_level() == dist.DebugLevel.OFF:
            text += (f"Parameter indices which did not receive grad for rank {self.rank}: "
                     f"{' '.join(map(str, missing))}\n In addition, you can set the environment "
                     f"variable TORCH_DISTRIBUTED_DEBUG to either INFO or DETAIL to print out "
                     f"information about which particular parameters did not receive gradient "
                     f"on this rank as part of this error")
        else:
            text += (f"Parameters which did not receive grad for rank {self.rank}: "
                     f"{', '.join(self.names[i] for i in missing)}\nParameter indices which did "
                     f"not receive grad for rank {self.rank}: {' '.join(map(str, missing))}")
        self.expect_hooks = False
        self._abandon()
        raise RuntimeError(text)

    def _abandon(self) -> None:
        """Leave an unfinished reduction: the buckets already sent are let finish (every rank
        sent the same ones), and each ``.grad`` holds this rank's own accumulated gradient, as
        it would have without DDP."""
        deadline = time.perf_counter() + 2.0
        while self.in_flight and time.perf_counter() < deadline:
            self._poll()
            time.sleep(0)
        with ember.no_grad():
            for i, p in enumerate(self.params):
                if self.state[i] in (_CAPTURED, _NO_GRAD, _DONE):
                    old, g = self.old[i], p.grad
                    p.grad = old if g is None else g if old is None else old.add_(g)
        self.in_flight = []
        self.captured = [None] * len(self.params)
        self.old = [None] * len(self.params)

    def prepare_for_backward(self, outputs: list[Tensor]) -> None:
        """Walk the graph of ``outputs``: hook the nodes that produce each parameter's
        gradient, and (finding unused parameters) note the parameters it does not reach."""
        self.iteration += 1
        self._reset()
        self.expect_hooks = True
        self.started = False
        index_of = self.index_of
        left = self.left
        producers: dict = {}
        seen = set()
        stack = [t.grad_fn for t in outputs if t.grad_fn is not None]
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            for k, (nxt, _) in enumerate(node.next_functions):
                if nxt is None:
                    continue
                if type(nxt) is AccumulateGrad:
                    i = index_of.get(id(nxt.variable))
                    if i is not None:
                        producers.setdefault(node, []).append((k, i))
                        left[i] += 1
                elif nxt not in seen:
                    stack.append(nxt)
        iteration = self.iteration
        for node, pairs in producers.items():
            node.register_hook(self._producer_hook(iteration, pairs))
        self.pending = set(range(len(self.params)))
        if self.finds_unused():
            self.unused = [i for i in range(len(self.params)) if left[i] == 0]
            if not self.unused and iteration == 1:
                warnings.warn(
                    "find_unused_parameters=True was specified in DDP constructor, but did not "
                    "find any unused parameters in the forward pass. This flag results in an "
                    "extra traversal of the autograd graph every iteration,  which can adversely "
                    "affect performance. If your model indeed never has any unused parameters "
                    "in the forward pass, consider turning this flag off. Note that this warning "
                    "may be a false positive if your model has flow control causing later "
                    "iterations to have unused parameters.", stacklevel=4)

    # -- backward side ------------------------------------------------------------------
    def _begin(self) -> None:
        """The first hook of a synchronised backward: unused parameters are ready now."""
        self.started = True
        for i in self.unused:
            self.state[i] = _UNUSED
            self.pending.discard(i)
            self._fill(i, self.params[i].grad, None)
        self.unused = []

    def _producer_hook(self, iteration: int, pairs):
        def hook(grads_in, grads_out):
            if iteration != self.iteration or not self.expect_hooks:
                return None  # a graph of an older forward, or reduction not wanted
            if not self.started:
                self._begin()
            for k, i in pairs:
                g = grads_in[k] if k < len(grads_in) else None
                if g is not None:
                    if g.requires_grad:
                        g = g.detach()
                    c = self.captured[i]
                    self.captured[i] = g if c is None else c + g
                self.left[i] -= 1
                if self.left[i] == 0 and self.state[i] == _WAITING:
                    self._captured(i)
            self._poll()
            return None

        return hook

    def _captured(self, i: int) -> None:
        """Every producer of parameter ``i`` has run: its gradient goes into its bucket.
        ``.grad`` is emptied until the end of backward, so that the accumulation shows the
        gradient alone (checked against what was sent) and never writes into a bucket."""
        p = self.params[i]
        old = p.grad
        if old is not None and self.bucket_view and old is self._view(i):
            old = old.clone()
        self.old[i] = old
        p.grad = None
        c = self.captured[i]
        if c is None:
            self.state[i] = _NO_GRAD
            self.pending.discard(i)
        else:
            self.state[i] = _CAPTURED
        self._fill(i, c, old)
        if not self.pending:
            self._finalize()

    def _view(self, i: int) -> Tensor:
        return self.buckets[self.bucket_of[i]].views[self.position[i]]

    def _fill(self, i: int, grad, old) -> None:
        """Write ``(old + grad) / world_size`` into parameter ``i``'s slot of its bucket and
        launch the buckets that are complete, in order."""
        bucket = self.buckets[self.bucket_of[i]]
        self._write_slot(i, grad, old)
        bucket.filled += 1
        self._launch_ready()

    def _write_slot(self, i: int, grad, old) -> None:
        view = self._view(i)
        with ember.no_grad():
            if grad is None and old is None:
                view.zero_()
                return
            view.copy_(grad if grad is not None else old)
            if grad is not None and old is not None:
                view.add_(old)
            if self.world_size != 1 and self.comm_hook is None:  # a hook averages itself
                view.mul_(self.inv_world)

    def _launch_ready(self) -> None:
        last = len(self.buckets) - 1
        while self.next_bucket < last:
            b = self.buckets[self.next_bucket]
            if b.filled < len(b.members):
                return
            self._launch(b)

    def _launch(self, b: _Bucket) -> None:
        if self.comm_hook is not None:
            b.work = self._run_hook(b)
        else:
            b.work = dist.all_reduce(b.flat, group=self.group, async_op=True)
        self.in_flight.append(b.work)
        self.next_bucket = b.index + 1

    def _run_hook(self, b: _Bucket, zeros: bool = False) -> _HookWork:
        """The registered hook on bucket ``b`` (its gradients; the flags of the last bucket
        are summed apart, first). ``zeros``: a joined rank's zero bucket."""
        if b.flags is not None:
            flags = ember.zeros_like(b.flags) if zeros else b.flags
            dist.all_reduce(flags, group=self.group)
            if zeros:
                b.flags.copy_(flags)
        grads = b.flat.narrow(0, 0, b.size)
        if zeros:
            grads = ember.zeros_like(grads)
        bucket = GradBucket(b.index, grads, [self.params[i] for i in b.members],
                            b.index == len(self.buckets) - 1)
        fut = self.comm_hook(self.comm_state, bucket)
        return _HookWork(fut, None if zeros else grads)

    def _poll(self) -> None:
        """Let MPI progress the buckets in flight (it moves data only inside its calls)."""
        if self.in_flight:
            self.in_flight = [w for w in self.in_flight if not w.is_completed()]

    def _accumulated_hook(self, i: int):
        def hook(param) -> None:
            if not self.expect_hooks:
                return  # no_sync, or this backward is not ours to reduce
            if not self.started:
                self._begin()
            state = self.state[i]
            if state == _UNUSED:
                raise RuntimeError(_READY_TWICE.format(i))
            if state == _CAPTURED:
                c = self.captured[i]
                if not _same(param.grad, c):
                    self.dirty.add(i)
                self.state[i] = _DONE
            elif state == _NO_GRAD:  # a gradient the producers did not give
                self.dirty.add(i)
                self.state[i] = _DONE
            elif state == _WAITING:  # not seen by the walk: it goes out at the end
                self.state[i] = _LATE
            else:
                raise RuntimeError(_READY_TWICE.format(i))
            self.pending.discard(i)
            if not self.pending:
                self._finalize()

        return hook

    # -- the end of backward ------------------------------------------------------------
    def _final_parts(self, i: int):
        """(gradient, accumulated before) of parameter ``i`` as the reduction must see it."""
        p = self.params[i]
        state = self.state[i]
        if state in (_DONE, _NO_GRAD, _CAPTURED):
            return p.grad, self.old[i]
        return p.grad, None  # late (accumulated in place) or unused (untouched)

    def _finalize(self) -> None:
        """Every gradient is known: send the rest, agree on the flags, write back."""
        self.expect_hooks = False
        buckets = self.buckets
        launched = {b.index for b in buckets if b.work is not None}
        for i in range(len(self.params)):
            if self.state[i] == _LATE or (i in self.dirty
                                          and self.bucket_of[i] not in launched):
                self._write_slot(i, *self._final_parts(i))
        last = buckets[-1]
        if last.flags is not None:
            flags = [0.0] * self.n_flag_buckets + [0.0] * len(self.params)
            for i in self.dirty:
                if self.bucket_of[i] in launched:
                    flags[self.bucket_of[i]] = 1.0
            finds_unused = self.finds_unused()
            for i in range(len(self.params)):
                if not finds_unused or any(t is not None for t in self._final_parts(i)):
                    flags[self.n_flag_buckets + i] = 1.0
            last.flags.copy_(ember.tensor(flags, dtype=last.flat.dtype, device=last.flat.device))
        for b in buckets[self.next_bucket:]:
            self._launch(b)
        for b in buckets:
            b.work.wait()
        used = [True] * len(self.params)
        if last.flags is not None:
            values = last.flags.tolist()
            for b in range(self.n_flag_buckets):
                if values[b] > 0:  # a rank sent a gradient that changed afterwards
                    for i in buckets[b].members:
                        self._write_slot(i, *self._final_parts(i))
                    if self.comm_hook is not None:
                        self._run_hook(buckets[b]).wait()
                    else:
                        dist.all_reduce(buckets[b].flat, group=self.group,
                                        async_op=True).wait()
            used = [v > 0 for v in values[self.n_flag_buckets:]]
        self._write_back(used)
        self.captured = [None] * len(self.params)
        self.old = [None] * len(self.params)
        self.in_flight = []

    def shadow_reduction(self) -> None:
        """A joined rank's side of one backward's reduction: a zero buffer all-reduced per
        bucket (flags included) in the order the others send theirs, then one per bucket
        they re-send (the summed flags say which). Its own buckets and gradients are left
        alone."""
        if self.comm_hook is not None:
            self._shadow_hooks()
            return
        with ember.no_grad():
            summed = None
            for b in self.buckets:
                summed = ember.zeros_like(b.flat)
                dist.all_reduce(summed, group=self.group)
            last = self.buckets[-1]
            if last.flags is not None and summed is not None:
                values = summed[last.size:].tolist()
                for b in range(self.n_flag_buckets):
                    if values[b] > 0:
                        dist.all_reduce(ember.zeros_like(self.buckets[b].flat),
                                        group=self.group)

    def _shadow_hooks(self) -> None:
        """The joined rank's side with a communication hook: the hook on a zero bucket per
        bucket, in the others' order (launch all, then wait in order), then on the buckets
        they re-send."""
        with ember.no_grad():
            works = [self._run_hook(b, zeros=True) for b in self.buckets]
            for w in works:
                w.wait()
            last = self.buckets[-1]
            if last.flags is not None:
                values = last.flags.tolist()
                for b in range(self.n_flag_buckets):
                    if values[b] > 0:
                        self._run_hook(self.buckets[b], zeros=True).wait()
                last.flags.zero_()

    def _write_back(self, used: list[bool]) -> None:
        with ember.no_grad():
            for i, p in enumerate(self.params):
                state = self.state[i]
                keep = self.old[i] if state in (_DONE, _NO_GRAD) else p.grad
                if not used[i]:  # no rank has a gradient for it: .grad stays as it was
                    p.grad = keep
                    continue
                view = self._view(i)
                if self.bucket_view:
                    p.grad = view
                    continue
                target = keep if keep is not None else p.grad
                if target is None:
                    p.grad = view.clone()
                else:
                    target.copy_(view)
                    p.grad = target


def _same(grad, sent) -> bool:
    """Whether the accumulated ``grad`` is the gradient ``sent`` (the same memory, or equal)."""
    if grad is None or sent is None:
        return grad is None and sent is None
    if grad.data_ptr() == sent.data_ptr() and grad.stride() == sent.stride():
        return True
    return bool(ember.equal(grad, sent))


_READY_TWICE = (
    "Expected to mark a variable ready only once. This error is caused by one of the following "
    "reasons: 1) Use of a module parameter outside the `forward` function. Please make sure "
    "model parameters are not shared across multiple concurrent forward-backward passes. or try "
    "to use _set_static_graph() as a workaround if this module graph does not change during "
    "training loop.2) Reused parameters in multiple reentrant backward passes. For example, if "
    "you use multiple `checkpoint` functions to wrap the same part of your model, it would "
    "result in the same set of parameters been used by different reentrant backward passes "
    "multiple times, and hence marking a variable ready multiple times. DDP does not support "
    "such use cases in default. You can try to use _set_static_graph() as a workaround if your "
    "module graph does not change over iterations.\n3) Incorrect unused parameter detection. "
    "The return value of the `forward` function is inspected by the distributed data parallel "
    "wrapper to figure out if any of the module's parameters went unused. For unused "
    "parameters, DDP would not expect gradients from then. However, if an unused parameter "
    "becomes part of the autograd graph at a later point in time (e.g., in a reentrant backward "
    "when using `checkpoint`), the gradient will show up unexpectedly. If all parameters in "
    "the model participate in the backward pass, you can disable unused parameter detection "
    "by passing the keyword argument `find_unused_parameters=False` to "
    "`ember.nn.parallel.DistributedDataParallel`.\nParameter at index {} has been marked as "
    "ready twice. This means that multiple autograd engine  hooks have fired for this "
    "particular parameter during this iteration. You can set the environment variable "
    "TORCH_DISTRIBUTED_DEBUG to either INFO or DETAIL to print parameter names for further "
    "debugging.")
