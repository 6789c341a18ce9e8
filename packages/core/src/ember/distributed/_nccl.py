"""The NCCL engine for GPU tensors, over CuPy's NCCL bindings (``cupy.cuda.nccl``).

The ranks and the NCCL unique id come from the MPI process group it is built on (MPI does the
rendezvous). Each primitive enqueues on a stream of its own and returns a request whose
``Test()`` asks a CUDA event recorded after it, so ``Work.wait`` polls it like an MPI request.
Gather, scatter and all-to-all are grouped point-to-point calls, as in PyTorch.
"""

from __future__ import annotations


def nccl_available() -> bool:
    """Whether CuPy with NCCL and a CUDA device are there."""
    try:
        import cupy
        from cupy.cuda import nccl  # noqa: F401
    except Exception:
        return False
    try:
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def require_nccl() -> None:
    """Raise PyTorch's error (with what to install) when the nccl backend cannot run here."""
    if not nccl_available():
        raise RuntimeError("Distributed package doesn't have NCCL built in: the nccl backend "
                           "needs CuPy with NCCL and a CUDA device (pip install "
                           "'ember-core[cuda]'); use backend='mpi' for CPU tensors")


_NCCL_TYPES = {"int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32",
               "int64": "NCCL_INT64", "float16": "NCCL_FLOAT16", "float32": "NCCL_FLOAT32",
               "float64": "NCCL_FLOAT64", "bool": "NCCL_UINT8"}
_NCCL_OPS = {"sum": "NCCL_SUM", "product": "NCCL_PROD", "min": "NCCL_MIN", "max": "NCCL_MAX"}
# bool tensors travel as bytes: or (sum, max, bor) is max, and (product, min, band) is min
_BOOL_OPS = {"sum": "max", "bor": "max", "product": "min", "band": "min"}


class _Event:
    """A request: done when the work enqueued before it on the stream has run."""

    __slots__ = ("event",)

    def __init__(self, stream) -> None:
        import cupy

        self.event = cupy.cuda.Event(block=False, disable_timing=True)
        self.event.record(stream)

    def Test(self) -> bool:
        return self.event.done


class NCCLEngine:
    """One NCCL communicator over the ranks of an MPI process group."""

    name = "nccl"

    def __init__(self, mpi_pg, comm, device, stream) -> None:
        self.mpi = mpi_pg._engine
        self.comm = comm
        self.rank = self.mpi.rank
        self.size = self.mpi.size
        self.device = device
        self.stream = stream

    @classmethod
    def create(cls, mpi_pg, device_id=None) -> NCCLEngine:
        require_nccl()
        import cupy
        import numpy as np
        from cupy.cuda import nccl

        from .._device import device

        index = device_id.index if device_id is not None else (
            mpi_pg.rank() % cupy.cuda.runtime.getDeviceCount())
        cupy.cuda.Device(index).use()
        uid = np.zeros(nccl.NCCL_UNIQUE_ID_BYTES if hasattr(nccl, "NCCL_UNIQUE_ID_BYTES")
                       else 128, dtype=np.int8)
        if mpi_pg.rank() == 0:
            raw = np.asarray(nccl.get_unique_id(), dtype=np.int8)
            uid[:raw.size] = raw
        mpi_pg._wait_internal(mpi_pg._engine.broadcast(uid, 0), "nccl unique id")
        comm = nccl.NcclCommunicator(mpi_pg.size(), tuple(int(v) for v in uid), mpi_pg.rank())
        return cls(mpi_pg, comm, device("cuda", index), cupy.cuda.Stream(non_blocking=True))

    def free(self) -> None:
        self.comm.destroy()
        self.mpi.free()

    # -- buffers ------------------------------------------------------------------------------
    def prepare(self, t, write: bool):
        import cupy

        if t._device.type != "cuda":
            raise ValueError(f"the nccl backend runs on CUDA tensors; got a tensor on "
                             f"{t._device}: use the mpi backend for CPU tensors")
        arr = t._data
        if arr.flags.c_contiguous:
            return arr, None
        buf = cupy.ascontiguousarray(arr)
        if not write:
            return buf, None

        def write_back() -> None:
            self.write(t, buf)

        return buf, write_back

    def write(self, t, values) -> None:
        t._data[...] = values.reshape(t._data.shape)
        t._bump_version()

    def empty(self, shape, dtype):
        import cupy

        return cupy.empty(shape, dtype=dtype)

    def stack(self, parts):
        import cupy

        return cupy.stack(parts)

    def concat(self, parts):
        import cupy

        return cupy.concatenate(parts)

    # -- primitives ---------------------------------------------------------------------------
    def _type(self, arr):
        from cupy.cuda import nccl

        name = _NCCL_TYPES.get(arr.dtype.name)
        if name is None:
            raise TypeError(f"the nccl backend does not reduce {arr.dtype}")
        return getattr(nccl, name)

    @staticmethod
    def check_reduction(op_name: str, op: str, dtype) -> None:
        """PyTorch's error for a reduction NCCL does not have (before anything is sent)."""
        if getattr(dtype, "kind", "") == "b":
            op = _BOOL_OPS.get(op, op)
        if op not in _NCCL_OPS:
            raise RuntimeError(f"Cannot use ReduceOp.{op_name} with NCCL")
        if str(dtype) not in _NCCL_TYPES:
            raise TypeError(f"the nccl backend does not reduce {dtype}")

    def _op(self, op: str, arr):
        from cupy.cuda import nccl

        if arr.dtype.name == "bool":  # as PyTorch does: logical or/and as max/min of bytes
            op = _BOOL_OPS.get(op, op)
        if op not in _NCCL_OPS:
            raise RuntimeError(f"the nccl backend has no {op} reduction")
        return getattr(nccl, _NCCL_OPS[op])

    def _done(self):
        return [_Event(self.stream)]

    def allreduce(self, arr, op: str):
        self.comm.allReduce(arr.data.ptr, arr.data.ptr, arr.size, self._type(arr),
                            self._op(op, arr), self.stream.ptr)
        return self._done()

    def broadcast(self, arr, root: int):
        self.comm.bcast(arr.data.ptr, arr.size, self._type(arr), root, self.stream.ptr)
        return self._done()

    def allgather(self, send, recv):
        self.comm.allGather(send.data.ptr, recv.data.ptr, send.size, self._type(send),
                            self.stream.ptr)
        return self._done()

    def reduce_scatter(self, send, recv, op: str):
        self.comm.reduceScatter(send.data.ptr, recv.data.ptr, recv.size, self._type(send),
                                self._op(op, send), self.stream.ptr)
        return self._done()

    def reduce(self, arr, root: int, op: str):
        self.comm.reduce(arr.data.ptr, arr.data.ptr, arr.size, self._type(arr),
                         self._op(op, arr), root, self.stream.ptr)
        return self._done()

    def _grouped(self, calls):
        from cupy.cuda import nccl

        nccl.groupStart()
        try:
            for call in calls:
                call()
        finally:
            nccl.groupEnd()
        return self._done()

    def gather(self, send, recv, root: int):
        calls = [lambda: self._send(send, root)]
        if self.rank == root:
            calls += [lambda r=r: self._recv(recv[r], r) for r in range(self.size)]
        return self._grouped(calls)

    def scatter(self, send, recv, root: int):
        calls = [lambda: self._recv(recv, root)]
        if self.rank == root:
            calls += [lambda r=r: self._send(send[r], r) for r in range(self.size)]
        return self._grouped(calls)

    def alltoall(self, send, recv, send_counts=None, recv_counts=None):
        n = self.size
        send_counts = send_counts or [send.size // n] * n
        recv_counts = recv_counts or [recv.size // n] * n
        calls, s_off, r_off = [], 0, 0
        for r in range(n):
            s, q = send[s_off:s_off + send_counts[r]], recv[r_off:r_off + recv_counts[r]]
            calls += [lambda s=s, r=r: self._send(s, r), lambda q=q, r=r: self._recv(q, r)]
            s_off += send_counts[r]
            r_off += recv_counts[r]
        return self._grouped(calls)

    def barrier(self):
        import cupy

        one = cupy.zeros(1, dtype=cupy.float32)
        return self.allreduce(one, "sum")

    def _send(self, arr, peer: int) -> None:
        self.comm.send(arr.data.ptr, arr.size, self._type(arr), peer, self.stream.ptr)

    def _recv(self, arr, peer: int) -> None:
        self.comm.recv(arr.data.ptr, arr.size, self._type(arr), peer, self.stream.ptr)

    def send(self, arr, dst: int, tag: int):
        self._send(arr, dst)
        return self._done()

    def recv(self, arr, src: int | None, tag: int):
        if src is None:
            raise RuntimeError("the nccl backend cannot receive from any source: pass src")
        self._recv(arr, src)
        return self._done(), lambda: src
