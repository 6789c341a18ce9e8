"""``ember.cuda.graphs``: CUDA graphs through CuPy's stream capture, like ``torch.cuda.graphs``.

``CUDAGraph`` records the kernels launched on the current stream between ``capture_begin()``
and ``capture_end()`` (``cupy.cuda.Stream.begin_capture``/``end_capture``) and ``replay()``
launches them again, on the same memory: as in PyTorch, a graph reads its inputs from, and
writes its outputs to, the tensors the capture used, so a program copies new inputs into
those tensors before each replay. ``graph(g)`` captures a block on a side stream (the
usual way), ``graph_pool_handle()`` names a memory pool that graphs may share.

Memory: the allocations made during a capture come from the graph's own CuPy memory pool
(``cupy.cuda.MemoryPool``, swapped in for the capturing thread), never handed to tensors
made outside it, so a replay cannot overwrite them; the pool lives as long as a graph or
handle that uses it (``reset()`` lets it go). Without CUDA (no CuPy or no device) every
entry point raises PyTorch's error for a build without CUDA; ``is_current_stream_capturing``
answers False.
"""

from __future__ import annotations

import gc

from ._utils import backend, backend_or_none

__all__ = ["CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing"]

_CAPTURE_MODES = ("global", "thread_local", "relaxed")


def _no_cuda(name: str) -> RuntimeError:
    return RuntimeError(f"Tried to instantiate dummy base class {name}")


def is_current_stream_capturing() -> bool:
    """Whether the current stream is being captured into a CUDA graph (False without CUDA)."""
    be = backend_or_none()
    if be is None:
        return False
    return bool(be.xp.cuda.get_current_stream().is_capturing())


class _Pool:
    """A graph memory pool (``graph_pool_handle``): one CuPy ``MemoryPool``."""

    __slots__ = ("pool",)

    def __init__(self, xp) -> None:
        self.pool = xp.cuda.MemoryPool()


def graph_pool_handle() -> _Pool:
    """An opaque token naming a graph memory pool: pass it as ``pool=`` to several captures
    so that their graphs share memory (they must then replay in capture order)."""
    be = backend_or_none()
    if be is None:
        raise _no_cuda("_graph_pool_handle")
    return _Pool(be.xp)


class CUDAGraph:
    """A CUDA graph (``torch.cuda.CUDAGraph``). ``keep_graph=True`` keeps the captured graph
    after it is instantiated (CuPy instantiates at ``capture_end``; kept either way)."""

    def __init__(self, keep_graph: bool = False) -> None:
        be = backend_or_none()
        if be is None:
            raise _no_cuda("CUDAGraph")
        self._xp = be.xp
        self._keep_graph = keep_graph
        self._graph = None
        self._pool: _Pool | None = None
        self._stream = None
        self._allocator = None
        self._capturing = False

    def capture_begin(self, pool=None, capture_error_mode: str = "global") -> None:
        """Start capturing the current stream's work (not the default stream: PyTorch's
        error); allocations from here on come from ``pool`` (a ``graph_pool_handle()``),
        or this graph's own pool."""
        if capture_error_mode not in _CAPTURE_MODES:
            raise RuntimeError(f"Unknown capture_error_mode {capture_error_mode!r}; expected "
                               "one of 'global', 'thread_local', 'relaxed'")
        if self._capturing:
            raise RuntimeError("This CUDAGraph instance is already capturing")
        if self._graph is not None:
            raise RuntimeError("This CUDAGraph instance already owns a captured graph. To "
                               "capture a new graph, create a new instance.")
        xp = self._xp
        stream = xp.cuda.get_current_stream()
        if stream.ptr == 0:
            raise RuntimeError("CUDA graphs must be captured on a non-default stream. (However, "
                               "after capture, it's ok to replay them on the default stream.)")
        if pool is not None and not isinstance(pool, _Pool):
            raise TypeError("pool must be a handle from ember.cuda.graph_pool_handle() or "
                            "another graph's pool()")
        self._pool = pool if pool is not None else _Pool(xp)
        runtime = xp.cuda.runtime
        mode = {"global": runtime.streamCaptureModeGlobal,
                "thread_local": runtime.streamCaptureModeThreadLocal,
                "relaxed": runtime.streamCaptureModeRelaxed}[capture_error_mode]
        self._allocator = xp.cuda.using_allocator(self._pool.pool.malloc)
        self._allocator.__enter__()
        try:
            stream.begin_capture(mode)
        except BaseException:
            self._allocator.__exit__(None, None, None)
            self._allocator = None
            raise
        self._stream = stream
        self._capturing = True

    def capture_end(self) -> None:
        """End the capture begun by ``capture_begin`` (on the same stream)."""
        if not self._capturing:
            raise RuntimeError("capture_end() called without a matching capture_begin()")
        try:
            self._graph = self._stream.end_capture()
        finally:
            self._capturing = False
            self._allocator.__exit__(None, None, None)
            self._allocator = None

    def instantiate(self) -> None:
        """Make the captured graph launchable (CuPy did so at ``capture_end``)."""
        self._require_graph("instantiate")

    def replay(self) -> None:
        """Launch the captured work again on the current stream."""
        self._require_graph("replay")
        self._graph.launch(self._xp.cuda.get_current_stream())

    def reset(self) -> None:
        """Drop the captured graph and let its pool go (unless another graph shares it)."""
        self._graph = None
        self._pool = None

    def pool(self) -> _Pool:
        """This graph's memory pool, to share with a later capture (``pool=``)."""
        if self._pool is None:
            raise RuntimeError("Called CUDAGraph::pool without a preceding successful capture.")
        return self._pool

    def enable_debug_mode(self) -> None:
        """Accepted for PyTorch's sake: CuPy keeps no debug copy to dump."""

    def debug_dump(self, debug_path: str) -> None:
        raise RuntimeError("CUDA graph debug dumps are not available through CuPy: "
                           "enable_debug_mode() keeps nothing to dump")

    def raw_cuda_graph(self):
        """The underlying ``cupy.cuda.graph.Graph``."""
        self._require_graph("raw_cuda_graph")
        return self._graph

    def _require_graph(self, what: str) -> None:
        if self._graph is None:
            raise RuntimeError(f"Called CUDAGraph::{what} without a preceding successful "
                               "capture.")


class graph:
    """Capture the block into ``cuda_graph`` (``torch.cuda.graph``): synchronise, make
    ``stream`` (a side stream by default, one per process as PyTorch's) current, collect
    garbage and empty the cache (PyTorch does both so that no freed block is reused by the
    capture), capture, and restore the stream afterwards."""

    default_capture_stream = None

    def __init__(self, cuda_graph: CUDAGraph, pool=None, stream=None,
                 capture_error_mode: str = "global") -> None:
        be = backend_or_none()
        if be is None:
            raise RuntimeError("ember.cuda.Stream requires CUDA support")
        from .streams import Stream

        if self.__class__.default_capture_stream is None:
            self.__class__.default_capture_stream = Stream()
        self.pool = () if pool is None else (pool,)
        self.capture_stream = stream if stream is not None else \
            self.__class__.default_capture_stream
        self.cuda_graph = cuda_graph
        self.capture_error_mode = capture_error_mode
        self._ctx = None

    def __enter__(self) -> None:
        from .streams import stream as stream_ctx

        backend().xp.cuda.Device().synchronize()
        gc.collect()
        backend().empty_cache()
        self._ctx = stream_ctx(self.capture_stream)
        self._ctx.__enter__()
        self.cuda_graph.capture_begin(*self.pool, capture_error_mode=self.capture_error_mode)

    def __exit__(self, *exc) -> None:
        try:
            self.cuda_graph.capture_end()
        finally:
            self._ctx.__exit__(*exc)
