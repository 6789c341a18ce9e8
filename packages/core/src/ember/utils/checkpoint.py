"""``ember.utils.checkpoint``: activation checkpointing, as ``torch.utils.checkpoint``.

``checkpoint(function, *args)`` runs ``function`` without keeping the activations its
backward needs; the backward runs ``function`` again (the recomputation) to get them back. Only
the inputs of a checkpointed region stay alive from the forward to the backward: compute
traded for memory. ``checkpoint_sequential`` does it segment by segment for a sequential model.

Two implementations, chosen by ``use_reentrant`` as in PyTorch:

``use_reentrant=True``
    ``CheckpointFunction``, an ``autograd.Function``: its forward runs ``function`` under
    ``no_grad``, its backward reruns it under ``enable_grad`` and backpropagates through the
    rerun with a nested ``ember.autograd.backward`` (a reentrant backward). Parameters used
    inside ``function`` get their ``.grad`` from that nested call, which is why this variant
    refuses ``autograd.grad`` and ``backward(inputs=...)``.

``use_reentrant=False`` (recommended)
    Built on saved-tensor hooks (``ember.autograd.graph.saved_tensors_hooks``), as PyTorch's
    ``_checkpoint_without_reentrant_generator``: the forward records the autograd graph as
    usual, but each value an op inside ``function`` saves for backward goes through the
    checkpoint's pack hook, which keeps a small handle in the graph instead of the tensor. So
    nothing computed inside the region is kept, not even while ``function`` runs (except the
    few values an op attaches to its node after recording it, which no hook sees, such as
    ``log_softmax``'s CPU intermediates). The first
    time a backward unpacks a handle, ``function`` runs again (under the forward's RNG and
    autocast state, with ``enable_grad``) and each value it saves is stored by its position;
    each unpack then takes its value from there, and it is freed once the node that needed it
    has run. A region is recomputed once per backward that reaches it (``retain_graph=True``
    and a second backward recompute it again). With early stop (the default, see
    :func:`set_checkpoint_early_stop`) the recomputation stops as soon as the last value is
    back. The graph is the real one, so ``autograd.grad``, ``backward(inputs=...)``, hooks,
    keyword arguments, inputs that do not require grad and gradients of gradients all work;
    saved-tensor hooks active around the checkpoint (``save_on_cpu``) pack its inputs, as
    PyTorch's do. A non-reentrant checkpoint inside another one's forward is absorbed by it:
    the outer hooks pack the inner region's values and the outer recomputation recomputes
    them, so the inner function runs twice in all (PyTorch runs it three times).

    Memory, measured with ``tracemalloc`` (``benchmarks/bench_checkpoint.py``; float32, CPU):
    a 6-layer Transformer encoder (d=256, ff=1024, batch 16x128) with each layer checkpointed
    peaks at 87 MiB in a training step, against 382 MiB without checkpointing (91 MiB when
    the values of a region were dropped only when its function returned, before the hooks).
    Inside one region the forward now keeps nothing: checkpointing the whole encoder as one
    region peaks at 36 MiB during the forward instead of 375 MiB (a 32-block MLP: 4 MiB
    instead of 66 MiB), although the backward's recomputation of that one region then holds
    all its values at once, as without checkpointing.

Both restore the RNG state of the forward for the recomputation (``preserve_rng_state``):
the CPU generator's and the default generators of the devices of the tensor arguments, so a
dropout mask drawn in the recomputation equals the forward's.

Selective checkpointing (``context_fn=functools.partial(create_selective_checkpoint_contexts,
policy)``, PyTorch's SAC): the policy decides, op by op, which outputs the forward keeps so
that the recomputation does not compute them again. PyTorch asks it about each ATen op below
autograd (``__torch_dispatch__``); Ember asks about each call of a public function or Tensor
method in the region (a ``TorchFunctionMode``: the ops a function makes inside are part of
its call), passing the ATen overload of that call where there is one (``ember.ops.aten``,
so a policy testing ``op in {torch.ops.aten.mm.default}`` runs unchanged) and the call's
own arguments. A product is reported as the ATen op PyTorch's CPU decomposition runs:
``F.linear`` (``nn.Linear``) as ``addmm`` with a bias and ``mm`` without, ``matmul`` as
``mm`` or ``bmm``, ``scaled_dot_product_attention`` on the CPU as
``_scaled_dot_product_flash_attention_for_cpu`` where PyTorch's CPU runs that kernel. The
recomputation returns a kept output instead of calling the function and packs the values
the forward's call packed (its inputs, its output) from this run's tensors, so the graph's
nodes get what they saved; what else they saved (a dropout mask, norm statistics, attention
weights) is kept with the output, as PyTorch keeps every output of such an op. An in-place
call, a call with ``out=`` and a view are recomputed whatever the policy says.
``*_CPU_OFFLOAD`` keeps what it keeps on the CPU.
"""

from __future__ import annotations

import collections
import contextlib
import enum
import functools
import itertools
import sys
import threading
import warnings
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from .. import _random
from .._device import CPU, canonical_device
from .._tensor import Tensor
from ..autograd import engine as _engine
from ..autograd import graph as _graph
from ..autograd.function import Function
from ..autograd.grad_mode import GRAD, enable_grad, no_grad
from ..overrides import TorchFunctionMode

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction",
           "check_backward_validity", "detach_variable", "get_device_states",
           "set_device_states", "noop_context_fn", "set_checkpoint_early_stop",
           "DefaultDeviceType", "set_checkpoint_debug_enabled", "CheckpointPolicy",
           "SelectiveCheckpointContext", "create_selective_checkpoint_contexts",
           "SAC_IGNORED_OPS", "GraphExecGroup"]  # noqa: F822 (SAC_IGNORED_OPS: on first use)

_DEFAULT_DETERMINISM_MODE = "default"
_DETERMINISM_CHECKS = (_DEFAULT_DETERMINISM_MODE, "none")

#: What ``checkpoint`` does when ``use_reentrant`` is not passed: PyTorch 2.13 warns, then
#: runs the reentrant variant (the warning says so: "to preserve the current default
#: behavior, you can pass use_reentrant=True")
_UNSET_USE_REENTRANT = True

_checkpoint_debug_enabled: bool | None = None
_enable_checkpoint_early_stop: bool | None = None


class CheckpointError(RuntimeError):
    """The recomputation of a non-reentrant checkpoint did not match the original forward."""


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None):
    """Context manager that sets whether checkpoint should print additional debug information
    when running (the ``debug`` flag of :func:`checkpoint`); inside it, it overrides the value
    of ``debug`` passed to ``checkpoint``. Pass ``None`` to defer to the local setting.

    Args:
        enabled (bool): Whether checkpoint should print debug information. Default is 'None'.
    """
    global _checkpoint_debug_enabled
    prev = _checkpoint_debug_enabled
    try:
        _checkpoint_debug_enabled = enabled
        yield
    finally:
        _checkpoint_debug_enabled = prev


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Context manager that sets whether a non-reentrant checkpoint stops its recomputation
    as soon as every tensor it needs has been recomputed; inside it, it overrides the
    ``early_stop`` argument of :func:`checkpoint`. The operations after the last one that
    saves a tensor are then not run again (nor the code after a ``recompute_context``'s
    ``yield``, as in PyTorch, where the recomputation is stopped by an exception).

    Args:
        enable (bool): Whether to stop recomputation early.

    Example::

        >>> import ember
        >>> from ember.utils.checkpoint import checkpoint, set_checkpoint_early_stop
        >>> x = ember.randn(3, requires_grad=True)
        >>> with set_checkpoint_early_stop(False):
        ...     y = checkpoint(lambda t: t.sin().exp(), x, use_reentrant=False)
        >>> y.sum().backward()
    """
    global _enable_checkpoint_early_stop
    prev = _enable_checkpoint_early_stop
    try:
        _enable_checkpoint_early_stop = enable
        yield
    finally:
        _enable_checkpoint_early_stop = prev


def noop_context_fn():
    """The default ``context_fn`` of :func:`checkpoint`: two ``contextlib.nullcontext()``."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs: tuple) -> tuple:
    """``inputs`` with every tensor detached, keeping its ``requires_grad`` (new leaves)."""
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for inp in inputs:
        if not isinstance(inp, Tensor):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs: Iterable[Any]) -> None:
    """Warn when no tensor of ``inputs`` requires grad (a reentrant checkpoint then gives
    no gradients)."""
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)


# -- devices and their generators ---------------------------------------------------------------

class DefaultDeviceType:
    """The device type whose generators :func:`set_device_states` restores by default: the
    current accelerator's type (``'cuda'`` when CuPy is installed), else ``'cpu'``."""

    _default_device_type: str | None = None

    @staticmethod
    def set_device_type(device: str = "cuda") -> None:
        """Set the default device type for checkpointing."""
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type() -> str:
        """The current default device type for checkpointing."""
        if not DefaultDeviceType._default_device_type:
            from ..accelerator import current_accelerator

            acc = current_accelerator()
            DefaultDeviceType._default_device_type = acc.type if acc is not None else "cpu"
        return DefaultDeviceType._default_device_type


def _tensors_in(obj) -> list:
    """The tensors in ``obj``, looking inside tuples, lists and dicts (PyTorch's pytree)."""
    found: list = []
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, Tensor):
            found.append(x)
        elif isinstance(x, (tuple, list)):
            stack.extend(reversed(x))
        elif isinstance(x, dict):
            stack.extend(reversed(list(x.values())))
    return found


def _devices_of(args) -> list:
    """The non-CPU devices of the tensors in ``args``, each once, in order of appearance."""
    devices: list = []
    for t in _tensors_in(args):
        dev = t._device
        if dev is not CPU and dev.type != "cpu" and dev.type != "meta" and dev not in devices:
            devices.append(dev)
    return devices


def _generator_of(dev):
    return _random.default_generator_for(canonical_device(dev))


def get_device_states(*args) -> tuple[list, list]:
    """The indices of the non-CPU devices of the tensors in ``args`` and the states of their
    default generators (``(fwd_device_ids, fwd_device_states)``, as in PyTorch)."""
    devices = _devices_of(args)
    return ([d.index for d in devices], [_generator_of(d).get_state() for d in devices])


def set_device_states(devices, states, *, device_type: str | None = None) -> None:
    """Restore the default generators of ``devices`` (indices of ``device_type``, default
    ``DefaultDeviceType.get_device_type()``) from ``states``."""
    from .._device import device as _device_cls

    if device_type is None:
        device_type = DefaultDeviceType.get_device_type()
    if device_type == "meta":
        return
    for index, state in zip(devices, states):
        dev = _device_cls(device_type, index) if device_type != "cpu" else CPU
        gen = _random.default_generator if dev is CPU else _generator_of(dev)
        gen.set_state(state)


class _RngState:
    """The CPU generator's state and those of some devices' default generators."""

    __slots__ = ("cpu", "devices")

    def __init__(self, devices: list):
        self.cpu = _random.default_generator.get_state()
        self.devices = [(d, _generator_of(d).get_state()) for d in devices]

    def restore(self) -> None:
        _random.default_generator.set_state(self.cpu)
        for d, state in self.devices:
            _generator_of(d).set_state(state)


@contextlib.contextmanager
def _forward_rng(saved: _RngState | None):
    """Run the block with the generators as they were in the forward (``saved``), then put
    back the states they had before the block (PyTorch's ``fork_rng`` + ``set_rng_state``)."""
    if saved is None:
        yield
        return
    surrounding = _RngState([d for d, _ in saved.devices])
    saved.restore()
    try:
        yield
    finally:
        surrounding.restore()


# -- autocast -------------------------------------------------------------------------------------

def _autocast_state(device_types: list) -> list:
    """``(device_type, kwargs)`` of autocast for the CPU and each of ``device_types`` that has
    autocast, to re-enter it in the recomputation (PyTorch's ``_get_autocast_kwargs``)."""
    try:
        from ..amp import is_autocast_available
    except ImportError:  # an Ember without autocast
        return []
    import ember

    states = []
    for dt in ["cpu", *device_types]:
        if is_autocast_available(dt):
            states.append((dt, {"enabled": ember.is_autocast_enabled(dt),
                                "dtype": ember.get_autocast_dtype(dt),
                                "cache_enabled": ember.is_autocast_cache_enabled()}))
    return states


def _autocast_contexts(states: list) -> contextlib.ExitStack:
    stack = contextlib.ExitStack()
    if states:
        import ember

        for dt, kwargs in states:
            stack.enter_context(ember.autocast(dt, **kwargs))
    return stack


def _device_types(args) -> list:
    types: list = []
    for d in _devices_of(args):
        if d.type not in types:
            types.append(d.type)
    return types


# -- the reentrant variant -----------------------------------------------------------------------

def _running_backward() -> dict | None:
    """The arguments of the innermost ``run_backward`` running in this thread, or None.

    PyTorch asks its engine about the running backward (``_is_checkpoint_valid``, the graph
    task's ``retain_graph``); Ember's engine keeps no per-thread record of it, so this reads
    them from the innermost ``run_backward`` frame of this thread."""
    code = _engine.run_backward.__code__
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is code:
            return frame.f_locals
        frame = frame.f_back
    return None


def _is_checkpoint_valid() -> bool:
    """False inside a backward that has ``inputs`` (``autograd.grad`` or
    ``backward(inputs=...)``), where a reentrant checkpoint cannot run."""
    running = _running_backward()
    return running is None or running.get("inputs") is None


class CheckpointFunction(Function):
    """The reentrant checkpoint (``use_reentrant=True``) as an ``autograd.Function``."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        ctx.autocast_state = _autocast_state(_device_types(args))
        ctx.fwd_rng_state = _RngState(_devices_of(args)) if preserve_rng_state else None
        # non-tensor inputs live on ctx; tensors are saved (checked for in-place changes)
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        with no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        if not _is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() "
                "or passing an `inputs` parameter to .backward(). To resolve this error, you can "
                "either set use_reentrant=False, or call .backward() without passing the "
                "`inputs` argument.")
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        with _forward_rng(ctx.fwd_rng_state):
            detached_inputs = detach_variable(tuple(inputs))
            with enable_grad(), _autocast_contexts(ctx.autocast_state):
                outputs = ctx.run_function(*detached_inputs)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        outputs_with_grad = []
        args_with_grad = []
        for out, grad in zip(outputs, args):
            if isinstance(out, Tensor) and out.requires_grad:
                outputs_with_grad.append(out)
                args_with_grad.append(grad)
        if not outputs_with_grad:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is "
                               "not necessary")
        from .. import autograd

        autograd.backward(outputs_with_grad, args_with_grad)
        grads = tuple(inp.grad if isinstance(inp, Tensor) else None for inp in detached_inputs)
        return (None, None) + grads


# -- the non-reentrant variant -------------------------------------------------------------------
# PyTorch's ``_checkpoint_without_reentrant_generator``: the forward runs under saved-tensor
# hooks whose pack hook keeps a ``_Holder`` (a position, no tensor) in the graph instead of
# each value an op saves, so nothing computed inside the region is kept; the first unpack of
# a backward reruns the region under the forward's RNG and autocast state, with a pack hook that
# stores each recomputed value by the position it was saved at, and each unpack then takes its
# value from there.

#: per thread: how deep we are in non-reentrant recomputations (a checkpoint met while
#: recomputing runs its function plainly: the enclosing region takes its values)
_THREAD = threading.local()

#: keys of unpacks outside any backward (``node.saved_tensors`` read by hand): each recomputes,
#: as PyTorch gives each such unpack a new graph-task id
_OUTSIDE = itertools.count(1)


def _recomputing() -> bool:
    return getattr(_THREAD, "depth", 0) > 0


def _in_checkpoint_forward() -> bool:
    """Whether this thread's innermost saved-tensor hooks are a non-reentrant checkpoint's
    forward hooks (a checkpoint inside it is then absorbed by it)."""
    hooks = _graph.current_saved_tensors_hooks()
    return hooks is not None and getattr(hooks[0], "__func__", None) is _CheckpointFrame.pack


class _StopRecomputation(Exception):
    """Raised by the recomputation's pack hook once every value is back (early stop)."""


class _Holder:
    """What the forward's pack hook keeps in the graph instead of a tensor: the position of
    the value among those the region saved, and the last backward that unpacked it."""

    __slots__ = ("index", "last_gid", "__weakref__")

    def __init__(self, index: int):
        self.index = index
        self.last_gid = None


def _metadata(x: Tensor) -> dict:
    """PyTorch's default metadata of a saved tensor (``determinism_check='default'``)."""
    return {"shape": x.shape, "dtype": x.dtype, "device": x.device}


_debug_tip_msg = """
Tip: To see a more detailed error message, either pass `debug=True` to
`ember.utils.checkpoint.checkpoint(...)` or wrap the code block
with `with ember.utils.checkpoint.set_checkpoint_debug_enabled(True):` to
enable checkpoint-debug mode globally.
"""

_UNPACKED_TWICE = ("torch.utils.checkpoint: Unpack is being triggered for a tensor that was "
                   "already unpacked once. If you are calling ctx.saved_tensors in backward, "
                   "make sure to do so only once. Otherwise please open an issue with details on "
                   "your use case.")


class _CheckpointFrame:
    """One non-reentrant checkpoint call: how to recompute it, what its forward packed, and
    the recomputed values of each running backward (graph task)."""

    def __init__(self, function, recompute_context, rng_state, autocast_state,
                 check_metadata: bool, debug: bool, early_stop: bool):
        self.function = function
        self.recompute_context = recompute_context
        self.rng_state = rng_state
        self.autocast_state = autocast_state
        self.check_metadata = check_metadata
        self.debug = debug
        self.early_stop = early_stop
        self.holders: list = []  # weak references to the _Holders, in packing order
        self.metas: list = []  # their metadata (determinism check)
        self.names: list = []  # the operations that packed values, one entry per node
        self.nodes: list = []  # weak references to those nodes
        self.recomputed: dict = {}  # graph task -> {position: recomputed tensor}
        self.forward_completed = False
        self.ignore_saved_mismatch = False
        self.lock = threading.RLock()

    # -- the inputs ---------------------------------------------------------------------------
    def save_inputs(self, args: tuple, kwargs: dict) -> None:
        """Keep the inputs for the recomputation. As PyTorch's ``_NoopSaveInputs``, the tensor
        arguments are saved for backward: packed by the saved-tensor hooks active around the
        checkpoint (``save_on_cpu`` offloads them), else checked for in-place changes."""
        self.args = list(args)
        self.kwargs = kwargs
        self.packed_args: list = []
        hooks = _graph.current_saved_tensors_hooks()
        tensors = [(i, a) for i, a in enumerate(args) if isinstance(a, Tensor)]
        if hooks is not None and tensors:
            pack, unpack = hooks
            with no_grad():
                for i, t in tensors:
                    slot = _graph._pack_tensor(t, pack, unpack, _graph._tensor_meta(t, None))
                    self.packed_args.append((i, slot))
                    self.args[i] = None
        self.input_versions = [(t, t._version) for t in _tensors_in((self.args, kwargs))]

    def inputs(self) -> tuple[list, dict]:
        for t, version in self.input_versions:
            if t._version != version:
                described = _graph._describe(t._data.dtype, t._data.shape, t.grad_fn, t._nr)
                raise RuntimeError(_graph._modified_text(described, t._version, version))
        args = list(self.args)
        for i, slot in self.packed_args:
            args[i] = _graph._unpack_slot(slot, None)
        return args, self.kwargs

    # -- the forward's hooks ------------------------------------------------------------------
    def pack(self, x: Tensor) -> _Holder:
        holder = _Holder(len(self.holders))
        self.holders.append(weakref.ref(holder))
        if self.check_metadata:
            self.metas.append(_metadata(x))
        node = _graph.packing_node()
        if node is not None and (not self.nodes or self.nodes[-1]() is not node):
            self.names.append(node.name())
            self.nodes.append(weakref.ref(node))
        return holder

    def unpack(self, holder: _Holder) -> Tensor:
        gid = _GROUP.current
        if gid is None:
            gid = _engine.current_graph_task_id()
        if gid == -1:
            gid = ("outside", next(_OUTSIDE))
        with self.lock:
            if holder.last_gid == gid:
                raise CheckpointError(_UNPACKED_TWICE)
            storage = self.recomputed.get(gid)
            if storage is None:
                storage = self.recomputed[gid] = self.recompute()
            value = storage.pop(holder.index)
            holder.last_gid = gid
            if not storage:
                del self.recomputed[gid]
        return value

    # -- the recomputation --------------------------------------------------------------------
    def recompute(self) -> dict:
        """Run the function again as in the forward; returns the recomputed values of the
        holders still alive, by position."""
        args, kwargs = self.inputs()
        n = len(self.holders)
        storage: dict = {}
        count = [0]
        names: list = []
        nodes: list = []  # the recomputation's nodes, kept for a debug report

        def pack(x):
            i = count[0]
            count[0] = i + 1
            if i >= n:
                if not self.forward_completed:  # a backward inside the checkpointed forward
                    self.ignore_saved_mismatch = True
                    return x
                raise CheckpointError("torch.utils.checkpoint: trying to save more tensors "
                                      "during recomputation than during the original forward "
                                      "pass.")
            node = _graph.packing_node()
            if node is not None and (not nodes or nodes[-1] is not node):
                names.append(node.name())
                nodes.append(node)
            if self.holders[i]() is not None:
                storage[i] = x.detach() if x.requires_grad else x
            if self.early_stop and count[0] == n:
                raise _StopRecomputation
            return x.detach()

        _THREAD.depth = getattr(_THREAD, "depth", 0) + 1
        try:
            with _graph.saved_tensors_hooks(pack, _identity), enable_grad():
                with _forward_rng(self.rng_state), _autocast_contexts(self.autocast_state), \
                        self.recompute_context, _debug_mode(self.debug):
                    self.function(*args, **kwargs)
        except _StopRecomputation:
            pass
        finally:
            _THREAD.depth -= 1
        if not self.ignore_saved_mismatch:
            self._check(count[0], storage, names, nodes)
        return storage

    def _check(self, count: int, storage: dict, names: list, nodes: list) -> None:
        """PyTorch's checks on the recomputation: as many saved tensors, with the same shapes,
        dtypes and devices (``determinism_check='default'``); and Ember's: the same operations
        saved them (values matched by position would otherwise be silently wrong)."""
        if count != len(self.holders):
            self._fail("torch.utils.checkpoint: A different number of tensors was saved during "
                       "the original forward and recomputation.\n"
                       f"Number of tensors saved during forward: {len(self.holders)}\n"
                       f"Number of tensors saved during recomputation: {count}.\n"
                       f"{_debug_tip_msg}", nodes)
        if self.check_metadata:
            differ = []
            for i, ref in enumerate(self.holders):
                if ref() is not None:
                    new = _metadata(storage[i])
                    if new != self.metas[i]:
                        differ.append((i, self.metas[i], new))
            if differ:
                listed = "".join(f"tensor at position {i}:\nsaved metadata: {a}\n"
                                 f"recomputed metadata: {b}\n" for i, a, b in differ)
                self._fail("torch.utils.checkpoint: Recomputed values for the following tensors "
                           "have different metadata than during the forward pass.\n"
                           f"{listed}.\n{_debug_tip_msg}", nodes)
        if names != self.names:
            k = next((i for i, (a, b) in enumerate(zip(self.names, names)) if a != b),
                     min(len(self.names), len(names)))
            self._fail("torch.utils.checkpoint: the recomputation ran different operations "
                       "than the original forward, so its saved values cannot be matched to "
                       f"the forward's: {len(self.names)} operations saved values for backward "
                       f"in the forward, {len(names)} in the recomputation, first difference at "
                       f"operation {k}: {_at(self.names, k)} in the forward, {_at(names, k)} in "
                       f"the recomputation.\n{_debug_tip_msg}", nodes)

    def _fail(self, message: str, new_nodes: list):
        if self.debug:
            message = _debug_report([r() for r in self.nodes], self.names, new_nodes) + message
        raise CheckpointError(message)


def _identity(x):
    return x


def _at(names: list, k: int) -> str:
    return names[k] if k < len(names) else "nothing"


@contextlib.contextmanager
def _debug_mode(debug: bool):
    """With ``debug``, record each node's forward traceback (anomaly mode's record)."""
    if not debug:
        yield
        return
    from ..autograd.anomaly_mode import set_detect_anomaly

    with set_detect_anomaly(True, check_nan=False):
        yield


def _debug_report(old_nodes: list, old_names: list, new_nodes: list) -> str:
    def traces(nodes, label):
        out = []
        for i, node in enumerate(nodes):
            tb = getattr(node, "_anomaly_trace", None) if node is not None else None
            name = node.name() if node is not None else old_names[i]
            out.append(f"{name}   ({i + 1} of {len(nodes)} in {label})\n\n"
                       f"{tb or '(no trace recorded)'}\n")
        return "\n".join(out)

    return ("An error happened while recomputing a checkpointed region; dumping logs of latest "
            "computation because you passed `debug=True` to "
            "`ember.utils.checkpoint.checkpoint()`.\n\n"
            "+--- 1. Stack traces of the operators that ran in the original forward ---+\n\n"
            f"{traces(old_nodes, 'original')}\n"
            "+--- 2. Stack traces of the operators that ran during recomputation ---+\n\n"
            f"{traces(new_nodes, 'recompute')}\n"
            "+--- 3. Log of the operators that saved values for backward in the original "
            "forward and recomputation ---+\n\n"
            "Operations executed during the original forward:\n\n"
            + "\n".join(old_names)
            + "\n\nOperations executed during recomputation:\n\n"
            + "\n".join(n.name() for n in new_nodes)
            + "\n\n ERROR: Detected non-determinism while running activation checkpointing\n\n")


def _checkpoint_without_reentrant(function, preserve_rng_state, context_fn, determinism_check,
                                  debug, early_stop, args, kwargs):
    if _checkpoint_debug_enabled if _checkpoint_debug_enabled is not None else debug:
        if context_fn is not noop_context_fn:
            raise ValueError("debug=True is incompatible with non-default context_fn")
        debug = True
    else:
        debug = False
    if determinism_check not in _DETERMINISM_CHECKS:
        raise ValueError(f"determinism_check should be one of {list(_DETERMINISM_CHECKS)}, but "
                         f"got {determinism_check}")
    forward_context, recompute_context = context_fn()
    if not GRAD.enabled:
        return function(*args, **kwargs)
    if _recomputing():
        # inside an enclosing region's recomputation: it takes this region's values
        with recompute_context:
            return function(*args, **kwargs)
    if _in_checkpoint_forward():
        # inside an enclosing region's forward: its hooks pack this region's values too, and
        # its recomputation recomputes them (the function runs twice in all, not three times)
        with forward_context:
            return function(*args, **kwargs)
    devices = _devices_of((args, kwargs))
    frame = _CheckpointFrame(
        function, recompute_context, _RngState(devices) if preserve_rng_state else None,
        _autocast_state(_device_types((args, kwargs))),
        determinism_check == _DEFAULT_DETERMINISM_MODE, debug,
        _enable_checkpoint_early_stop if _enable_checkpoint_early_stop is not None
        else early_stop)
    frame.save_inputs(args, kwargs)
    suppressed = True
    with _graph.saved_tensors_hooks(frame.pack, frame.unpack), forward_context:
        with _debug_mode(debug):
            out = function(*args, **kwargs)
        suppressed = False
    if suppressed:
        raise RuntimeError("torch.utils.checkpoint: the forward context provided by context_fn "
                           "suppressed an exception raised during the checkpointed forward. "
                           "This is not supported because checkpoint cannot return a value for "
                           "a failed forward.")
    frame.forward_completed = True
    return out


# -- selective checkpointing ---------------------------------------------------------------------

class SelectiveCheckpointContext:
    """What a selective-checkpoint policy gets first: ``op_output``, the op's result. The
    policy runs during the forward only (the recomputation reads the decisions back by
    position), so ``is_recompute`` is always False, as in PyTorch 2.13."""

    def __init__(self, *, is_recompute, op_output=None) -> None:
        self.is_recompute = is_recompute
        self.op_output = op_output


class CheckpointPolicy(enum.Enum):
    """What selective checkpointing does with an op's output.

    - ``{MUST,PREFER}_SAVE``: the forward keeps it; the recomputation does not run the op
    - ``{MUST,PREFER}_RECOMPUTE``: the recomputation runs the op again
    - ``{MUST,PREFER}_CPU_OFFLOAD``: kept as with ``*_SAVE``, on the CPU until the
      recomputation moves it back to its device

    ``MUST_*`` and ``PREFER_*`` differ only for a compiler that may override a preference;
    eager checkpointing follows both.
    """

    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3
    MUST_CPU_OFFLOAD = 4
    PREFER_CPU_OFFLOAD = 5


_KEEP = (CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE)
_OFFLOAD = (CheckpointPolicy.MUST_CPU_OFFLOAD, CheckpointPolicy.PREFER_CPU_OFFLOAD)


def _policy_from_bool(b):
    return CheckpointPolicy.MUST_SAVE if b else CheckpointPolicy.PREFER_RECOMPUTE


def _ignored_ops() -> frozenset:
    """``SAC_IGNORED_OPS``, made on first use (``ember.ops.aten`` is built lazily): the ops
    selective checkpointing neither asks about nor counts (``detach``, which checkpointing
    itself may add)."""
    value = globals().get("SAC_IGNORED_OPS")
    if value is None:
        from ..ops import aten

        value = frozenset({aten.detach.default})
        globals()["SAC_IGNORED_OPS"] = value
    return value


def __getattr__(name: str):
    if name == "SAC_IGNORED_OPS":
        return _ignored_ops()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_RECOMPUTE = object()
_CONSUMED = object()
_SAC_MISMATCH_MSG = ("This can happen if the operations in the checkpointed region are "
                     "nondeterministic or depend on global state that changed between forward "
                     "and backward.")
#: Tensor methods that write into their tensor without a trailing underscore
_WRITES = frozenset({"__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__",
                     "__ifloordiv__", "__imod__", "__ipow__", "__iand__", "__ior__",
                     "__ixor__", "__ilshift__", "__irshift__", "__imatmul__"})


def _aten_op(func, args: tuple, kwargs: dict):
    """The ATen overload PyTorch's dispatcher would show for ``func(*args, **kwargs)``, or
    ``func`` itself where ATen has no op of its name."""
    name = getattr(func, "_ember_op_name", None) or getattr(func, "__name__", "")
    if name in ("linear", "matmul"):
        a = args[0] if args else kwargs.get("input")
        b = args[1] if len(args) > 1 else kwargs.get("weight" if name == "linear" else "other")
        if isinstance(a, Tensor) and isinstance(b, Tensor) and a.dim() >= 2 and b.dim() >= 2:
            if name == "linear":
                bias = args[2] if len(args) > 2 else kwargs.get("bias")
                name = "mm" if bias is None else "addmm"
            else:
                name = "mm" if b.dim() == 2 else "bmm"
            return _aten_packet(name).default
    if name == "scaled_dot_product_attention" and _cpu_flash(args, kwargs):
        return _aten_packet("_scaled_dot_product_flash_attention_for_cpu").default
    packet = _aten_packet(name)
    if packet is None:
        return func
    overloads = [getattr(packet, k) for k in packet.overloads()]
    if len(overloads) > 1:
        for op in sorted(overloads, key=lambda o: o._overloadname != "default"):
            try:
                op._schema.bind(args, kwargs)
            except (RuntimeError, TypeError):
                continue
            return op
    return overloads[0]


def _cpu_flash(args: tuple, kwargs: dict) -> bool:
    """Whether PyTorch's CPU attention runs its flash kernel for these arguments of
    ``scaled_dot_product_attention`` (4-D inputs of one head size, no dropout, a mask of 2 or
    4 dimensions); otherwise it writes the attention out in smaller ops."""
    names = ("query", "key", "value", "attn_mask", "dropout_p")
    got = [args[i] if i < len(args) else kwargs.get(n) for i, n in enumerate(names)]
    q, k, v, mask, dropout = got
    if not all(isinstance(t, Tensor) and t.dim() == 4 and t.device.type == "cpu"
               for t in (q, k, v)):
        return False
    return q.size(3) == k.size(3) == v.size(3) and not dropout \
        and (mask is None or mask.dim() in (2, 4))


@functools.cache
def _aten_packet(name: str):
    if not name or (name.startswith("__") and name.endswith("__")):
        return None
    from ..ops import aten

    try:
        return getattr(aten, name)
    except AttributeError:
        return None


class _Kept:
    """An output the forward kept: its tensors, then the values its nodes saved of their own
    (``own``), detached (sharing their version counters, so a later in-place change shows),
    with their versions, devices and ``requires_grad``, and how to replay the values the
    call packed for its nodes: ``("in", i, shape, node)`` (the call's ``i``-th tensor
    argument) or ``("out", j, shape, node)`` (the ``j``-th kept value) per packed value, in
    order (``shape``: None for the tensor itself, else its memory reshaped; ``node``: a
    ``_PackingAs``)."""

    __slots__ = ("out", "tensors", "versions", "devices", "requires_grad", "plan")

    def __init__(self, out, outs: list, plan: list, offload: bool, own: list):
        # the output's shape without its tensors (holding them would hold the forward's graph)
        self.out = _rebuild(out, [_SLOT] * len(outs))
        tensors = outs + own
        self.devices = [t.device for t in tensors]
        self.versions = [t._version for t in tensors]
        self.requires_grad = [t.requires_grad for t in outs] + [False] * len(own)
        kept = [t.detach() for t in tensors]
        self.tensors = [t.to("cpu") for t in kept] if offload else kept
        self.plan = plan

    def values(self, allow_mutation: bool) -> list:
        out = []
        for t, version, device, rg in zip(self.tensors, self.versions, self.devices,
                                          self.requires_grad):
            if not allow_mutation and t.device == device and t._version != version:
                raise RuntimeError(
                    "Tensor cached during selective activation checkpoint has been mutated")
            if t.device != device:
                t = t.to(device)
            # a leaf that requires grad where the output did: the recomputation's later ops
            # then record (and pack) as in the forward
            out.append(t.detach().requires_grad_() if rg else t)
        return out


_SLOT = object()


def _rebuild(obj, values: list):
    """``obj`` (an op's output: a tensor, or a tuple or list holding tensors) with its
    tensors (or ``_SLOT`` markers) replaced by ``values``, in ``_tensors_in``'s order."""
    it = iter(values)

    def walk(x):
        if x is _SLOT or isinstance(x, Tensor):
            return next(it)
        if isinstance(x, (tuple, list)):
            items = [walk(v) for v in x]
            if type(x) in (tuple, list):
                return type(x)(items)
            return type(x)(*items)  # a named tuple (torch.return_types.max)
        return x

    return walk(obj)


def _find(x, tensors: list):
    """``(i, shape)``: ``x`` is ``tensors[i]`` (``shape`` None) or the whole of its memory
    under another shape (a product packs its input flattened to a matrix), else None."""
    xa = x._data
    for i, t in enumerate(tensors):
        if x is t or xa is t._data:
            return i, None
    for i, t in enumerate(tensors):
        if x.numel() == t.numel() and x.dtype == t.dtype and x.is_contiguous() \
                and t.is_contiguous() and x.data_ptr() == t.data_ptr():
            return i, tuple(x.shape)
    return None


class _PackingAs:
    """What ``packing_node()`` returns while the recomputation packs a kept call's values:
    one per node that packed them in the forward, with its name (the checkpoint matches the
    names of the nodes that packed, in order)."""

    __slots__ = ("_name",)

    def __init__(self, name: str):
        self._name = name

    def name(self) -> str:
        return self._name


class _CachingTorchFunctionMode(TorchFunctionMode):
    """The forward's context of selective checkpointing: runs each call, asks the policy,
    keeps the outputs it says to keep."""

    def __init__(self, policy_fn, storage) -> None:
        self.policy_fn = policy_fn
        self.storage = storage
        self.func_counter: collections.defaultdict = collections.defaultdict(int)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = {} if kwargs is None else kwargs
        op = _aten_op(func, args, kwargs)
        if op in _ignored_ops():
            return func(*args, **kwargs)
        hooks = _graph.current_saved_tensors_hooks()
        packed: list = []
        if hooks is not None:
            pack, unpack = hooks

            def spy(x):
                packed.append((x, _graph.packing_node()))
                return pack(x)

            with _graph.saved_tensors_hooks(spy, unpack):
                out = func(*args, **kwargs)
        else:
            out = func(*args, **kwargs)
        idx = self.func_counter[func]
        self.func_counter[func] += 1
        policy = self.policy_fn(SelectiveCheckpointContext(is_recompute=False, op_output=out),
                                op, *args, **kwargs)
        if isinstance(policy, bool):
            policy = _policy_from_bool(policy)
        entry = _RECOMPUTE
        if policy in _KEEP or policy in _OFFLOAD:
            entry = _keep(func, args, kwargs, out, packed, policy in _OFFLOAD)
        self.storage[func][idx] = entry
        return out


def _keep(func, args, kwargs, out, packed, offload: bool):
    """A ``_Kept`` entry for a call whose output the policy keeps, or ``_RECOMPUTE`` where
    the recomputation must run it anyway."""
    name = getattr(func, "__name__", "")
    if kwargs.get("out") is not None or name in _WRITES \
            or (name.endswith("_") and not name.endswith("__")):
        return _RECOMPUTE  # it writes into a tensor: the recomputation must write too
    if not isinstance(out, (Tensor, tuple, list)):
        return _RECOMPUTE
    outs = _tensors_in(out)
    if not outs or any(t._is_view() for t in outs):
        return _RECOMPUTE  # a view must stay one of this run's tensors
    ins = _tensors_in((args, kwargs))
    plan: list = []
    own: list = []
    stand_in = last = None
    for x, node in packed:
        if node is not last:  # one stand-in per node, named as it
            last = node
            stand_in = _PackingAs(node.name()) if node is not None else None
        found = _find(x, ins)
        if found is not None:
            plan.append(("in", *found, stand_in))
            continue
        found = _find(x, outs)
        if found is not None:
            plan.append(("out", *found, stand_in))
            continue
        # a value of its own (a dropout mask, norm statistics, attention weights): kept too,
        # after the outputs, as PyTorch keeps such an op's every output (native_dropout's
        # mask, the logsumexp)
        plan.append(("out", len(outs) + len(own), None, stand_in))
        own.append(x)
    return _Kept(out, outs, plan, offload, own)


class _CachedTorchFunctionMode(TorchFunctionMode):
    """The recomputation's context of selective checkpointing: a kept call returns the
    forward's output instead of running, and packs what the forward's call packed."""

    def __init__(self, storage, allow_cache_entry_mutation: bool = False) -> None:
        self.storage = storage
        self.allow_cache_entry_mutation = allow_cache_entry_mutation
        self.func_counter: collections.defaultdict = collections.defaultdict(int)

    def __enter__(self):
        self.func_counter.clear()  # a second backward is "an extra time", not "not found"
        return super().__enter__()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = {} if kwargs is None else kwargs
        if _aten_op(func, args, kwargs) in _ignored_ops():
            return func(*args, **kwargs)
        idx = self.func_counter[func]
        self.func_counter[func] += 1
        func_storage = self.storage.get(func)
        if func_storage is None:
            raise RuntimeError(f"{_aten_op(func, args, kwargs)} encountered during backward "
                               f"but not found in storage. {_SAC_MISMATCH_MSG}")
        entry = func_storage.get(idx)
        if entry is None:
            raise RuntimeError(f"{_aten_op(func, args, kwargs)} invocation index {idx} "
                               "encountered during backward but not found in storage. "
                               f"{_SAC_MISMATCH_MSG}")
        if entry is _CONSUMED:
            raise RuntimeError("Trying to backward an extra time. You are only allowed to "
                               "backward once on any region computed under selective "
                               "activation checkpoint.")
        if entry is _RECOMPUTE:
            return func(*args, **kwargs)
        func_storage[idx] = _CONSUMED
        values = entry.values(self.allow_cache_entry_mutation)
        hooks = _graph.current_saved_tensors_hooks()
        if hooks is not None and entry.plan:
            # the values the forward's call packed for its nodes, from this run's tensors
            pack = hooks[0]
            ins = _tensors_in((args, kwargs))
            st = _graph._HOOKS
            prev = st.packing
            try:
                with no_grad():
                    for kind, i, shape, node in entry.plan:
                        st.packing = node
                        x = ins[i] if kind == "in" else values[i]
                        pack(x if shape is None else x.detach().reshape(shape))
            finally:
                st.packing = prev
        return _rebuild(entry.out, values)


def create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entry_mutation=False):
    """The two contexts of selective activation checkpointing, for ``checkpoint``'s
    ``context_fn``: ``functools.partial(create_selective_checkpoint_contexts, policy)``.

    Args:
        policy_fn_or_list: a function ``policy(ctx, op, *args, **kwargs)`` returning a
            :class:`CheckpointPolicy` (or a bool: True is ``MUST_SAVE``), called for each op
            of the checkpointed forward; or a list of ATen overloads
            (``[torch.ops.aten.mm.default]``) to keep, everything else recomputed.
        allow_cache_entry_mutation: by default a kept output changed in place after the
            forward raises at the recomputation; True allows it.

    What Ember calls an op here is in the module's docstring.
    """
    from .._library.ops import OpOverload, OpOverloadPacket

    if isinstance(policy_fn_or_list, list):
        for op in policy_fn_or_list:
            if not isinstance(op, OpOverload):
                extra = ("Please update the OpOverloadPacket to a specific OpOverload."
                         "For example, if you have `torch.ops.aten.mm`, change it to "
                         "`torch.ops.aten.mm.default`.") \
                    if isinstance(op, OpOverloadPacket) else ""
                raise ValueError(f"Expected op in `op_list` to be an OpOverload but got: {op} "
                                 f"of type {type(op)}. {extra}")
        ops = list(policy_fn_or_list)

        def policy_fn(ctx, op, *args, **kwargs):
            return CheckpointPolicy.MUST_SAVE if op in ops \
                else CheckpointPolicy.PREFER_RECOMPUTE
    elif callable(policy_fn_or_list):
        policy_fn = policy_fn_or_list
    else:
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")
    storage: collections.defaultdict = collections.defaultdict(dict)
    return (_CachingTorchFunctionMode(policy_fn, storage),
            _CachedTorchFunctionMode(storage, allow_cache_entry_mutation))


class _GroupState(threading.local):
    current = None


_GROUP = _GroupState()


class GraphExecGroup:
    """Backward calls under one instance recompute each checkpointed region they reach at
    most once (``use_reentrant=False``), even across several ``backward`` calls, which must
    then use distinct saved values of the region (non-overlapping parts of its graph)."""

    def __enter__(self):
        if _GROUP.current is not None:
            raise RuntimeError("GraphExecGroup contexts cannot be nested. Already inside group "
                               f"{_GROUP.current}")
        _GROUP.current = self
        return self

    def __exit__(self, *args) -> None:
        _GROUP.current = None

    @classmethod
    def _get_current_group(cls):
        return _GROUP.current


# -- the public entry points ---------------------------------------------------------------------

def checkpoint(function: Callable, *args, use_reentrant: bool | None = None,
               context_fn: Callable[[], tuple] = noop_context_fn,
               determinism_check: str = _DEFAULT_DETERMINISM_MODE, debug: bool = False,
               early_stop: bool = True, preserve_rng_state: bool = True, **kwargs):
    """Checkpoint a model or part of the model: run ``function(*args, **kwargs)`` without
    keeping its intermediate activations, and recompute them in the backward.

    Activation checkpointing trades compute for memory: the tensors computed inside
    ``function`` are not kept alive until the backward; the tensors in ``args`` are, and the
    backward runs ``function`` again on them to get the activations it needs. The gradients
    are those of running ``function`` plainly, as long as ``function`` does the same thing
    both times (the RNG state is restored for it: see ``preserve_rng_state``).

    Args:
        function: what to run in the forward (a module or any callable).
        args: its positional arguments (tensors or anything else).

    Keyword args:
        use_reentrant (bool): which implementation to use; pass it explicitly. ``False``
            (recommended) records the real graph of ``function`` and so works with
            ``autograd.grad``, ``backward(inputs=...)``, keyword arguments, inputs that do not
            require grad and higher-order gradients. ``True`` runs ``function`` under
            ``no_grad`` inside an ``autograd.Function``: at least one input and one output
            must require grad, and only ``backward()`` without ``inputs`` is supported. Not
            passed: a warning, then ``True``, as in PyTorch 2.13.
        context_fn (Callable): returns two context managers; the forward runs under the first,
            the recomputation under the second (non-reentrant only).
        determinism_check (str): ``"default"`` compares the shapes, dtypes and devices of the
            recomputed saved tensors with the forward's and raises ``CheckpointError`` when
            they differ; ``"none"`` turns that off (non-reentrant only).
        debug (bool): on a ``CheckpointError``, also list the operations that ran in the
            forward and in the recomputation with their tracebacks (non-reentrant only).
        early_stop (bool): stop the recomputation as soon as every tensor the backward
            needs is back (non-reentrant only; :func:`set_checkpoint_early_stop` overrides
            it). Default: ``True``.
        preserve_rng_state (bool): save the RNG state of the CPU and of the devices of the
            tensor arguments before the forward and restore it for the recomputation, so that
            random ops (dropout) draw the same numbers. Default: ``True``.
        kwargs: keyword arguments of ``function`` (non-reentrant only).

    Returns:
        What ``function(*args, **kwargs)`` returns.

    Example::

        >>> import ember
        >>> from ember.utils.checkpoint import checkpoint
        >>> w = ember.randn(4, 4, requires_grad=True)
        >>> x = ember.randn(2, 4, requires_grad=True)
        >>> y = checkpoint(lambda a: (a @ w).tanh() @ w, x, use_reentrant=False)
        >>> y.sum().backward()
        >>> w.grad.shape
        ember.Size([4, 4])
    """
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed "
                      "explicitly. Starting in PyTorch 2.9, calling checkpoint without "
                      "use_reentrant will raise an exception. use_reentrant=False is "
                      "recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the "
                      "differences between the two variants.", stacklevel=2)
        use_reentrant = _UNSET_USE_REENTRANT
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    return _checkpoint_without_reentrant(function, preserve_rng_state, context_fn,
                                         determinism_check, debug, early_stop, args, kwargs)


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None,
                          **kwargs):
    """Checkpoint a sequential model: split ``functions`` into ``segments`` chunks and
    checkpoint every chunk but the last.

    The inputs of each checkpointed chunk are kept for rerunning it in the backward; the
    activations inside it are not. Each function takes one tensor and returns one, as in
    ``nn.Sequential``.

    Args:
        functions: an ``nn.Sequential`` (or any module: its children run in order) or a list
            of modules or functions to run one after the other.
        segments (int): how many chunks to make (``len(functions) // segments`` functions per
            checkpointed chunk, the rest in the last one).
        input: the tensor given to the first function.
        use_reentrant (bool): as for :func:`checkpoint`; pass it explicitly. Not passed: a
            warning, then ``True``, as in PyTorch 2.13.
        preserve_rng_state (bool, keyword): as for :func:`checkpoint`. Default: ``True``.

    Returns:
        The output of running ``functions`` on ``input`` one after the other.

    Example::

        >>> import ember
        >>> from ember.utils.checkpoint import checkpoint_sequential
        >>> fns = [ember.sin, ember.cos, ember.tanh, ember.exp]
        >>> x = ember.randn(3, requires_grad=True)
        >>> y = checkpoint_sequential(fns, 2, x, use_reentrant=False)
        >>> y.sum().backward()
    """
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant "
                      "parameter should be passed explicitly. In version 2.9 we will raise an "
                      "exception if use_reentrant is not passed. use_reentrant=False is "
                      "recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the "
                      "differences between the two variants.", stacklevel=2)
        use_reentrant = _UNSET_USE_REENTRANT
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input

        return forward

    if callable(getattr(functions, "children", None)):  # a Module (nn.Sequential)
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
