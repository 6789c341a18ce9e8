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
    The forward records the autograd graph as usual; when ``function`` returns, the values
    that graph saved for backward (each node's saved tensors, saved outputs and array
    contexts) are dropped, and a pre-hook on each such node recomputes the region the first
    time a backward reaches it, copying the recomputed values into the original nodes. The
    graph is the real one, so ``autograd.grad``, ``backward(inputs=...)``, hooks, keyword
    arguments, inputs that do not require grad and gradients of gradients all work.

    PyTorch builds this variant on saved-tensor hooks, so a value saved inside the region is
    never kept. Ember's autograd has no saved-tensor hooks: here the values of a region are
    dropped when its ``function`` returns, so the peak memory of one region's forward is the
    same as without checkpointing, and the saving comes between regions (run several, as
    ``checkpoint_sequential`` does). A nested non-reentrant checkpoint is absorbed by the
    enclosing one: the outer recomputation rebuilds the inner region's values too, so the
    inner function runs twice in all rather than three times. The recomputation always runs
    the whole function (``early_stop`` is accepted and has no effect on the result).

Both restore the RNG state of the forward for the recomputation (``preserve_rng_state``):
the CPU generator's and the default generators of the devices of the tensor arguments, so a
dropout mask drawn in the recomputation equals the forward's.
"""

from __future__ import annotations

import contextlib
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

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction",
           "check_backward_validity", "detach_variable", "get_device_states",
           "set_device_states", "noop_context_fn", "set_checkpoint_early_stop",
           "DefaultDeviceType", "set_checkpoint_debug_enabled"]

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
    """Context manager that controls whether a non-reentrant checkpoint stops its
    recomputation as soon as it has recomputed every tensor it needs (PyTorch's API).

    Ember always recomputes the whole checkpointed function, so this changes how much is
    computed in PyTorch but never a result; it is accepted so that code written for PyTorch
    runs unchanged.
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

#: per thread: how deep we are in non-reentrant recomputations (a checkpoint met while
#: recomputing runs its function plainly: the enclosing region takes its values)
_THREAD = threading.local()

#: node -> (region, index): which non-reentrant region dropped the node's saved values
_OWNER: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_OWNER_LOCK = threading.Lock()


def _recomputing() -> bool:
    return getattr(_THREAD, "depth", 0) > 0


def _region_nodes(outputs, start: int, end: int) -> list:
    """The nodes recorded between the sequence numbers ``start`` and ``end`` that the
    tensors in ``outputs`` reach, in creation order."""
    seen: set = set()
    stack = [t.grad_fn for t in _tensors_in(outputs) if t.grad_fn is not None]
    found = []
    while stack:
        node = stack.pop()
        if node in seen or not start < node.seq < end:
            continue
        seen.add(node)
        found.append(node)
        stack.extend(n for n, _ in node.next_functions if n is not None)
    found.sort(key=lambda n: n.seq)
    return found


def _saves(node) -> bool:
    """Whether a node keeps values for its backward (tensors, its output, arrays)."""
    return bool(node.saved) or node.out_data is not None or _holds_arrays(node.ctx)


def _holds_arrays(ctx) -> bool:
    """Whether a node's context keeps arrays or tensors (a dropout mask, norm statistics)."""
    if ctx is None:
        return False
    items = ctx.values() if isinstance(ctx, dict) else ctx if isinstance(ctx, (tuple, list)) \
        else (ctx,)
    return any(hasattr(v, "shape") and hasattr(v, "nbytes") for v in items)


def _saved_metadata(node) -> list:
    """``{'shape', 'dtype', 'device'}`` of each tensor a node saved (its saved output too)."""
    from .._dtype import FROM_NP
    from .._size import Size

    meta = []
    for s in node.saved or ():
        if isinstance(s, Tensor):
            meta.append({"shape": s.shape, "dtype": s.dtype, "device": s.device})
    out = node.out_data
    for a in (out if isinstance(out, tuple) else () if out is None else (out,)):
        if a is not None:
            meta.append({"shape": Size(a.shape), "dtype": FROM_NP.get(a.dtype, a.dtype),
                         "device": node.device})
    return meta


_debug_tip_msg = """
Tip: To see a more detailed error message, either pass `debug=True` to
`ember.utils.checkpoint.checkpoint(...)` or wrap the code block
with `with ember.utils.checkpoint.set_checkpoint_debug_enabled(True):` to
enable checkpoint-debug mode globally.
"""


class _Region:
    """One non-reentrant checkpoint call: how to recompute it and which nodes it emptied."""

    def __init__(self, function, args, kwargs, recompute_context, rng_state, autocast_state,
                 check_metadata: bool, debug: bool):
        self.function = function
        self.args = args
        self.kwargs = kwargs
        self.input_versions = [(t, t._version) for t in _tensors_in((args, kwargs))]
        self.recompute_context = recompute_context
        self.rng_state = rng_state
        self.autocast_state = autocast_state
        self.check_metadata = check_metadata
        self.debug = debug
        # the nodes that saved values for backward, in creation order: weak references, names,
        # the metadata of what they saved, whether their values are dropped (not refilled)
        self.nodes: list = []
        self.names: list = []
        self.metas: list = []
        self.stashed: list = []
        self.handles: list = []
        self.ctx_dropped: set = set()  # indices of the nodes whose array context was dropped
        self.n_stashed = 0
        self.lock = threading.Lock()

    # -- forward ------------------------------------------------------------------------------
    def take(self, nodes: list) -> None:
        """Drop the values ``nodes`` saved for backward, hooking each emptied node to
        refill it; nodes a nested checkpoint emptied are taken over from it. Nodes that saved
        nothing are left alone (and are not matched with the recomputation's: an autocast
        cast served from the cache in the forward and made anew in the recomputation saves
        nothing, as in PyTorch, where only saved tensors are counted)."""
        hook = self._prehook
        for node in nodes:
            i = len(self.nodes)
            inner = _OWNER.get(node)
            if inner is not None and inner[0].stashed[inner[1]]:
                meta, ctx_dropped = inner[0].release(inner[1])
                if ctx_dropped:
                    self.ctx_dropped.add(i)
            elif _saves(node):
                meta = _saved_metadata(node)
                node.saved = None
                node.out_data = None
                if _holds_arrays(node.ctx):
                    # a context without arrays stays: it may be a cell shared with another
                    # node (linear hands its weight gradient to weight.t()'s node that way)
                    node.ctx = None
                    self.ctx_dropped.add(i)
            else:
                continue
            self.nodes.append(weakref.ref(node))
            self.names.append(node.name())
            self.metas.append(meta)
            self.stashed.append(True)
            self.n_stashed += 1
            self.handles.append(node.register_prehook(hook))
            with _OWNER_LOCK:
                _OWNER[node] = (self, i)

    def release(self, i: int) -> tuple[list, bool]:
        """Hand node ``i`` over to an enclosing region; returns its saved metadata and
        whether its context was dropped."""
        self.handles[i].remove()
        self.handles[i] = None
        self.stashed[i] = False
        self.n_stashed -= 1
        return self.metas[i], i in self.ctx_dropped

    # -- backward -----------------------------------------------------------------------------
    def _prehook(self, grad_outputs):
        if self.n_stashed:
            with self.lock:
                if self.n_stashed:
                    self.refill(keep_graph=GRAD.enabled)
        return None

    def _check_inputs(self) -> None:
        for t, version in self.input_versions:
            if t._version != version:
                described = _graph._describe(t._data.dtype, t._data.shape, t.grad_fn, t._nr)
                raise RuntimeError(_graph._modified_text(described, t._version, version))

    def recompute(self) -> tuple:
        """Run the function again as in the forward; returns (its output, its nodes)."""
        self._check_inputs()
        _THREAD.depth = getattr(_THREAD, "depth", 0) + 1
        try:
            start = next(_graph._SEQ)
            with _forward_rng(self.rng_state), _autocast_contexts(self.autocast_state), \
                    self.recompute_context, enable_grad(), _debug_mode(self.debug):
                out = self.function(*self.args, **self.kwargs)
            end = next(_graph._SEQ)
        finally:
            _THREAD.depth -= 1
        return out, _region_nodes(out, start, end)

    def refill(self, keep_graph: bool) -> None:
        """Recompute the region and put the recomputed values into the emptied nodes.

        With ``keep_graph`` (a ``create_graph`` backward) the recomputed tensors keep their
        graph, which leads back to the region's inputs, so gradients of gradients flow;
        otherwise they are detached and the recomputed graph is freed at once."""
        out, new_nodes = self.recompute()
        new_nodes = [n for n in new_nodes if _saves(n)]
        self._check_match(new_nodes)
        for i, ref in enumerate(self.nodes):
            if not self.stashed[i]:
                continue
            old, new = ref(), new_nodes[i]
            self.stashed[i] = False
            handle, self.handles[i] = self.handles[i], None
            handle.remove()
            if old is None:
                continue
            old.saved = new.saved if keep_graph else _detached(new.saved)
            old.versions = new.versions
            old.out_data = new.out_data
            old.out_vc = new.out_vc
            if i in self.ctx_dropped:
                old.ctx = new.ctx
                _free_after_backward(old)
            with _OWNER_LOCK:
                _OWNER.pop(old, None)
        self.n_stashed = 0
        del out

    def _check_match(self, new_nodes: list) -> None:
        """PyTorch's checks on the recomputation: as many saved tensors, with the same shapes,
        dtypes and devices (``determinism_check='default'``); and the same operations, without
        which the recomputed values cannot be matched to the original nodes."""
        new_metas = [_saved_metadata(n) for n in new_nodes]
        old_flat = [m for metas in self.metas for m in metas]
        new_flat = [m for metas in new_metas for m in metas]
        if len(old_flat) != len(new_flat):
            self._fail("torch.utils.checkpoint: A different number of tensors was saved during "
                       "the original forward and recomputation.\n"
                       f"Number of tensors saved during forward: {len(old_flat)}\n"
                       f"Number of tensors saved during recomputation: {len(new_flat)}.\n"
                       f"{_debug_tip_msg}", new_nodes)
        if self.check_metadata:
            differ = [(i, a, b) for i, (a, b) in enumerate(zip(old_flat, new_flat)) if a != b]
            if differ:
                listed = "".join(f"tensor at position {i}:\nsaved metadata: {a}\n"
                                 f"recomputed metadata: {b}\n" for i, a, b in differ)
                self._fail("torch.utils.checkpoint: Recomputed values for the following tensors "
                           "have different metadata than during the forward pass.\n"
                           f"{listed}.\n{_debug_tip_msg}", new_nodes)
        new_names = [n.name() for n in new_nodes]
        if new_names != self.names:
            k = next((i for i, (a, b) in enumerate(zip(self.names, new_names)) if a != b),
                     min(len(self.names), len(new_names)))
            self._fail("torch.utils.checkpoint: the recomputation ran different operations "
                       "than the original forward, so its saved values cannot be matched to "
                       f"the forward's: {len(self.names)} operations saved values for backward "
                       f"in the forward, {len(new_names)} in the recomputation, first "
                       f"difference at operation {k}: {_at(self.names, k)} in the forward, "
                       f"{_at(new_names, k)} in the recomputation.\n{_debug_tip_msg}", new_nodes)

    def _fail(self, message: str, new_nodes: list):
        if self.debug:
            message = _debug_report([r() for r in self.nodes], self.names, new_nodes) + message
        raise CheckpointError(message)


def _free_after_backward(node) -> None:
    """Drop ``node``'s recomputed context (a dropout mask...) once its backward has run,
    unless the backward retains the graph: the engine frees saved tensors and outputs, not
    contexts."""
    ref = weakref.ref(node)
    handle = None

    def hook(grad_inputs, grad_outputs):
        handle.remove()
        running = _running_backward()
        n = ref()
        if n is not None and running is not None and not running.get("retain_graph"):
            n.ctx = None
            n.saved = None  # a second backward then says the values were freed
        return None

    handle = node.register_hook(hook)


def _at(names: list, k: int) -> str:
    return names[k] if k < len(names) else "nothing"


def _detached(saved):
    """``saved`` with each tensor that has a ``grad_fn`` replaced by a leaf sharing its data
    and version counter, still requiring grad (backward formulas read ``requires_grad`` of
    what they saved to skip gradients nobody needs)."""
    if not saved:
        return saved
    items = [_leaf_like(s) if isinstance(s, Tensor) and s.grad_fn is not None else s
             for s in saved]
    return tuple(items) if isinstance(saved, tuple) else items


def _leaf_like(t: Tensor) -> Tensor:
    leaf = t.detach()
    leaf.requires_grad = True
    return leaf


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
            out.append(f"{node.name() if node is not None else '?'}   ({i + 1} of {len(nodes)} "
                       f"in {label})\n\n{tb or '(no trace recorded)'}\n")
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
                                  debug, args, kwargs):
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
        with forward_context:
            return function(*args, **kwargs)
    devices = _devices_of((args, kwargs))
    autocast_state = _autocast_state(_device_types((args, kwargs)))
    rng_state = _RngState(devices) if preserve_rng_state else None
    region = _Region(function, args, kwargs, recompute_context, rng_state, autocast_state,
                     determinism_check == _DEFAULT_DETERMINISM_MODE, debug)
    start = next(_graph._SEQ)
    suppressed = True
    with forward_context:
        with _debug_mode(debug):
            out = function(*args, **kwargs)
        suppressed = False
    if suppressed:
        raise RuntimeError("torch.utils.checkpoint: the forward context provided by context_fn "
                           "suppressed an exception raised during the checkpointed forward. "
                           "This is not supported because checkpoint cannot return a value for "
                           "a failed forward.")
    end = next(_graph._SEQ)
    region.take(_region_nodes(out, start, end))
    return out


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
        early_stop (bool): PyTorch's option to stop recomputing once every needed tensor is
            back; Ember always recomputes the whole function, with the same result.
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
                                         determinism_check, debug, args, kwargs)


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
