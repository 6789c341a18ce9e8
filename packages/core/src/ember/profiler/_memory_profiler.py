"""The memory timeline of a profile (``torch.profiler._memory_profiler``):
``profile(profile_memory=True, record_shapes=True, with_stack=True)`` then
``prof.export_memory_timeline("timeline.html")`` (``.json``, ``.json.gz``, ``.raw.json.gz``).

While a profile with ``profile_memory=True`` records, :class:`MemoryTracker` notes each block
of memory the recorded code touches: a block is an array's storage (the array that owns the
memory of a result and of all its views), *created* when an op or a backward node returns it
first, *pre-existing* when an op reads it before that (parameters, the batch), *destroyed*
when Python frees it (a weak reference to the owning array). Each block gets one of PyTorch's
categories, from what was seen of it:

- ``PARAMETER``: the storage of an ``nn.Parameter``;
- ``INPUT``: any other block that existed before the profile and an op read;
- ``GRADIENT``: a leaf's ``.grad`` (made by the backward's accumulation, or existing before);
- ``AUTOGRAD_DETAIL``: other blocks a backward made (the gradients flowing through the graph);
- ``OPTIMIZER_STATE``: blocks made inside ``optimizer.step()`` (its ``Optimizer.step#``
  range) that outlive the step;
- ``ACTIVATION``: blocks made outside backward and the optimizer by an op whose result takes
  part in autograd (freed by a backward, or still held);
- ``TEMPORARY``: any other block made by an op (no autograd, or made and freed inside a step).

PyTorch infers the same categories from its op graph (data flow between ops, the module and
optimizer state its Python tracer sees); Ember's are read off these events, so they can
differ for an unusual block (a block first read by the optimizer counts as ``INPUT``; in-place
writes do not make versions, PyTorch's ``INCREMENT_VERSION`` events). The memory is that of the
arrays as NumPy or CuPy hold them: Ember has no caching allocator, so there is no "reserved".
"""

from __future__ import annotations

import enum
import gzip
import itertools
import json
import os
import tempfile
import threading
import time
import weakref

__all__ = ["Action", "Category", "MemoryProfileTimeline", "MemoryTracker"]


class Category(enum.Enum):
    INPUT = enum.auto()
    TEMPORARY = enum.auto()
    ACTIVATION = enum.auto()
    GRADIENT = enum.auto()
    AUTOGRAD_DETAIL = enum.auto()
    PARAMETER = enum.auto()
    OPTIMIZER_STATE = enum.auto()


_CATEGORY_TO_COLORS = {
    Category.PARAMETER: "darkgreen",
    Category.OPTIMIZER_STATE: "goldenrod",
    Category.INPUT: "black",
    Category.TEMPORARY: "mediumpurple",
    Category.ACTIVATION: "red",
    Category.GRADIENT: "mediumblue",
    Category.AUTOGRAD_DETAIL: "royalblue",
    None: "grey",
}

_CATEGORY_TO_INDEX = {c: i for i, c in enumerate(_CATEGORY_TO_COLORS)}


class Action(enum.Enum):
    PREEXISTING = enum.auto()
    CREATE = enum.auto()
    INCREMENT_VERSION = enum.auto()
    DESTROY = enum.auto()


_ACTION_TO_INDEX = {i: i.value for i in Action}

OPTIMIZER_RANGE = "Optimizer.step#"  # the range Optimizer.step runs in (PyTorch's name)


def _owner(array):
    """The array that owns ``array``'s memory (the end of its ``base`` chain)."""
    while True:
        base = getattr(array, "base", None)
        if base is None or not hasattr(base, "nbytes"):
            return array
        array = base


class _Block:
    __slots__ = ("id", "device", "nbytes", "created", "phase", "autograd", "parameter",
                 "gradient", "destroyed", "destroyed_in_backward", "__weakref__")

    def __init__(self, id_: int, device: str, nbytes: int, created: int, phase: str) -> None:
        self.id, self.device, self.nbytes = id_, device, nbytes
        self.created, self.phase = created, phase  # created -1: pre-existing
        self.autograd = self.parameter = self.gradient = False
        self.destroyed: int | None = None
        self.destroyed_in_backward = False


class MemoryTracker:
    """The memory events of one recorder (see the module doc); times in ns."""

    def __init__(self, recorder) -> None:
        self._recorder = weakref.ref(recorder)
        self.blocks: list[_Block] = []
        self._live: dict[int, _Block] = {}  # id(owning array) -> its block while alive
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self.recording = True

    # -- what the recorder reports ----------------------------------------------------------
    def _phase(self) -> str:
        from ..autograd import engine

        if engine.current_graph_task_id() != -1:
            return "backward"
        recorder = self._recorder()
        if recorder is not None and any(e.name.startswith(OPTIMIZER_RANGE)
                                        for e in recorder.open):
            return "optimizer"
        return "forward"

    def _block(self, array, device: str, create: bool, now: int, phase: str | None = None):
        owner = _owner(array)
        key = id(owner)
        with self._lock:
            block = self._live.get(key)
            if block is not None:
                return block
            block = _Block(next(self._ids), device, int(owner.nbytes), now if create else -1,
                           (phase or self._phase()) if create else "before")
            try:
                weakref.finalize(owner, self._destroyed, key, block)
            except TypeError:  # an array type without weak references: never seen freed
                pass
            self._live[key] = block
            self.blocks.append(block)
            return block

    def _destroyed(self, key: int, block: _Block) -> None:
        if not self.recording:
            return
        from ..autograd import engine

        with self._lock:
            if self._live.get(key) is block:
                del self._live[key]
        block.destroyed = _now()
        block.destroyed_in_backward = engine.current_graph_task_id() != -1

    def saw_op(self, args, kwargs, result) -> None:
        """An op ran: the blocks it read existed before unless seen; its results are new."""
        from .._tensor import Tensor

        now = _now()
        phase = self._phase()
        # a block read in a backward and not seen before was made by the engine there (the
        # root's gradient, a sum of two gradients): new, not pre-existing
        made_here = phase == "backward"
        for t in _tensors(args, kwargs):
            block = self._block(t._data, str(t.device), made_here, now, phase)
            if block.created == -1 and _is_parameter(t):
                block.parameter = True
        results = [r for r in _tensors((result,), {}) if isinstance(r, Tensor)]
        if not results:
            return
        for r in results:
            block = self._block(r._data, str(r.device), True, now, phase)
            if r.requires_grad and r.grad_fn is not None:
                block.autograd = True

    def saw_backward(self, node, grads) -> None:
        """A backward node returned these gradients (arrays)."""
        now = _now()
        device = str(getattr(node, "device", None) or "cpu")
        from .._tensor import Tensor

        for g in grads:
            if isinstance(g, Tensor):
                g = g._data
            if g is not None and hasattr(g, "nbytes"):
                self._block(g, device, True, now, "backward")

    def saw_accumulation(self, node) -> None:
        """A leaf's gradient was accumulated: its ``.grad`` is a gradient's block."""
        variable = getattr(node, "variable", None)
        grad = getattr(variable, "grad", None) if variable is not None else None
        if grad is not None:
            block = self._block(grad._data, str(grad.device), True, _now(), "backward")
            block.gradient = True

    def stop(self) -> None:
        self.recording = False

    # -- categories --------------------------------------------------------------------------
    def category(self, block: _Block, optimizer_ends: list) -> Category:
        if block.parameter:
            return Category.PARAMETER
        if block.gradient:
            return Category.GRADIENT
        if block.created == -1:
            return Category.INPUT
        if block.phase == "backward":
            return Category.AUTOGRAD_DETAIL
        if block.phase == "optimizer":
            # outlives the step it was made in: state; made and freed inside it: scratch
            end = next((e for s, e in optimizer_ends if s <= block.created <= e), None)
            if block.destroyed is None or end is None or block.destroyed > end:
                return Category.OPTIMIZER_STATE
            return Category.TEMPORARY
        if block.autograd:
            return Category.ACTIVATION
        return Category.TEMPORARY

    def timeline(self, events) -> tuple[list, dict]:
        """PyTorch's raw timeline, ``[(t_ns, action, (block, 0), nbytes)]`` in time order, and
        each block's category."""
        optimizer = sorted((int(e.time_range.start * 1000), int(e.time_range.end * 1000))
                           for e in events if e.name.startswith(OPTIMIZER_RANGE))
        timeline = []
        categories = {}
        for block in self.blocks:
            categories[block.id] = self.category(block, optimizer)
            action = Action.PREEXISTING if block.created == -1 else Action.CREATE
            timeline.append((block.created, action, (block, 0), block.nbytes))
            if block.destroyed is not None:
                timeline.append((block.destroyed, Action.DESTROY, (block, 0), block.nbytes))
        timeline.sort(key=lambda e: e[0])
        return timeline, categories


def _now() -> int:
    return time.perf_counter_ns()


def _tensors(args, kwargs) -> list:
    """The tensors holding arrays among ``args``' and ``kwargs``' pytree leaves."""
    from .._tensor import Tensor
    from ..utils._pytree import tree_leaves

    return [v for v in tree_leaves((args, kwargs)) if isinstance(v, Tensor)
            and hasattr(v, "_data") and hasattr(v._data, "nbytes")]


def _is_parameter(t) -> bool:
    return any(c.__name__ == "Parameter" for c in type(t).__mro__)


class MemoryProfileTimeline:
    """A profile's memory timeline: ``[times, sizes by category]`` for a device."""

    def __init__(self, tracker: MemoryTracker, events) -> None:
        self.timeline, self._categories = tracker.timeline(events)

    def _category(self, block) -> Category | None:
        return self._categories.get(block.id)

    def _coalesce_timeline(self, device_str: str) -> tuple[list, list]:
        """Timestamps (us) and, at each, the bytes held per category (index 0 unused, then
        PyTorch's category order)."""
        device = _device(device_str)
        times: list[int] = []
        sizes: list[list[int]] = []
        t_min = -1
        for t, action, (block, _version), numbytes in self.timeline:
            if _device(block.device) != device:
                continue
            if t != -1:
                t = int(t / 1000)
            if t_min == -1 or (t < t_min and t > 0):
                t_min = t
            if not times:
                times.append(t)
                sizes.append([0] + [0 for _ in _CATEGORY_TO_INDEX])
            elif t != times[-1]:
                times.append(t)
                sizes.append(sizes[-1].copy())
            index = _CATEGORY_TO_INDEX[self._category(block)] + 1
            sizes[-1][index] += numbytes if action != Action.DESTROY else -numbytes
        times = [t_min if t < 0 else t for t in times]
        return times, sizes

    def export_memory_timeline(self, path: str, device_str: str) -> None:
        """``[times, sizes by category]`` as JSON."""
        times, sizes = self._coalesce_timeline(device_str)
        with open(path, "w") as f:
            json.dump([times, sizes], f)

    def export_memory_timeline_raw(self, path: str, device_str: str) -> None:
        """``(timestamp, action, numbytes, category)`` per event as JSON."""
        device = _device(device_str)
        raw = []
        for t, action, (block, _version), numbytes in self.timeline:
            if _device(block.device) != device:
                continue
            raw.append((t, _ACTION_TO_INDEX[action],
                        -numbytes if action == Action.DESTROY else numbytes,
                        _CATEGORY_TO_INDEX[self._category(block)]))
        with open(path, "w") as f:
            json.dump(raw, f)

    def export_memory_timeline_html(self, path: str, device_str: str, figsize=(20, 12),
                                    title=None) -> None:
        """The timeline plotted (a stack of the categories, matplotlib) and embedded as a PNG
        in an HTML page; without matplotlib it says so and writes nothing, as PyTorch."""
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            print("export_memory_timeline_html failed because matplotlib was not found.")
            return
        from base64 import b64encode

        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
        import numpy as np

        times, sizes = self._coalesce_timeline(device_str)
        times_a = np.array(times if times else [0], dtype=np.float64)
        sizes_a = np.array(sizes if sizes else [[0] * (len(_CATEGORY_TO_INDEX) + 1)],
                           dtype=np.float64)
        times_a -= times_a.min()
        stacked = np.cumsum(sizes_a, axis=1) / 1024 ** 3
        peak = float(sizes_a.sum(axis=1).max()) / 1024 ** 3
        fig = plt.figure(figsize=figsize, dpi=80)
        axes = fig.gca()
        for category, color in _CATEGORY_TO_COLORS.items():
            i = _CATEGORY_TO_INDEX[category]
            axes.fill_between(times_a / 1e3, stacked[:, i], stacked[:, i + 1], color=color,
                              alpha=0.7)
        fig.legend(["Unknown" if i is None else i.name for i in _CATEGORY_TO_COLORS])
        axes.set_xlabel("Time (ms)")
        axes.set_ylabel("Memory (GB)")
        axes.set_title("\n\n".join(([title] if title else [])
                                   + [f"Max memory allocated: {peak:.2f} GiB"]))
        fd, png = tempfile.mkstemp(suffix=".png")
        os.close(fd)
        try:
            fig.savefig(png, format="png")
            plt.close(fig)
            with open(png, "rb") as f:
                encoded = b64encode(f.read()).decode("utf-8")
        finally:
            os.unlink(png)
        html = f"""<html>
<head><meta charset="utf-8" /><title>GPU Memory Timeline HTML</title></head>
<body>
  <img src='data:image/png;base64,{encoded}'>
</body>
</html>"""
        with open(path, "w", encoding="utf-8") as f:
            f.write(html)

    def export(self, path: str, device_str: str) -> None:
        """By suffix: ``.html`` (the plot), ``raw.json.gz`` (the raw events, gzipped),
        ``.gz`` (the timeline, gzipped), anything else the timeline as JSON."""
        if path.endswith(".html"):
            self.export_memory_timeline_html(path, device_str)
            return
        if path.endswith(".gz"):
            fd, tmp = tempfile.mkstemp(suffix=".json")
            os.close(fd)
            try:
                if path.endswith("raw.json.gz"):
                    self.export_memory_timeline_raw(tmp, device_str)
                else:
                    self.export_memory_timeline(tmp, device_str)
                with open(tmp) as fin, gzip.open(path, "wt") as fout:
                    fout.writelines(fin)
            finally:
                os.unlink(tmp)
            return
        self.export_memory_timeline(path, device_str)


def _device(name: str) -> str:
    """``cpu`` / ``cuda:0`` (a bare ``cuda`` is device 0), for comparing devices."""
    name = str(name)
    if name != "cpu" and ":" not in name:
        return name + ":0"
    return name
