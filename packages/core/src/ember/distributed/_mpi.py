"""The MPI engine: mpi4py's non-blocking collectives on host arrays, without copies.

Every primitive takes C-contiguous NumPy arrays (the process group prepares them: a contiguous
CPU tensor's own array is passed as it is, so ``all_reduce`` reduces in place in the tensor's
memory) and returns the MPI requests; ``Work`` polls them. Ranks here are ranks in this
engine's communicator (group ranks).
"""

from __future__ import annotations

import numpy as np


def load_mpi():
    """mpi4py's MPI module (initialising MPI with thread support), or a clear error."""
    try:
        import mpi4py
    except ImportError:
        raise RuntimeError(
            "the MPI backend needs mpi4py and an MPI library: pip install "
            "'ember-core[distributed]' (mpi4py and the mpich wheel)") from None
    # threads may issue collectives (DDP's hooks run on the backward's thread)
    mpi4py.rc.thread_level = "multiple"
    from mpi4py import MPI

    return MPI


def _ops(MPI):
    return {"sum": MPI.SUM, "product": MPI.PROD, "min": MPI.MIN, "max": MPI.MAX,
            "band": MPI.BAND, "bor": MPI.BOR, "bxor": MPI.BXOR}


# booleans reduce as logic: any for sum/max/bor/bxor-less, all for product/min/band
_BOOL_OPS = {"sum": "lor", "max": "lor", "bor": "lor", "product": "land", "min": "land",
             "band": "land", "bxor": "lxor"}


class MPIEngine:
    """One communicator's primitives (a process group's engine)."""

    name = "mpi"

    def __init__(self, MPI, comm) -> None:
        self.MPI = MPI
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self._op_table = _ops(MPI)

    def _op(self, op: str, dtype):
        if dtype == np.bool_:
            return {"lor": self.MPI.LOR, "land": self.MPI.LAND, "lxor": self.MPI.LXOR}[
                _BOOL_OPS[op]]
        return self._op_table[op]

    # -- collectives ------------------------------------------------------------------------
    def allreduce(self, arr, op: str):
        return [self.comm.Iallreduce(self.MPI.IN_PLACE, arr, op=self._op(op, arr.dtype))]

    def broadcast(self, arr, root: int):
        return [self.comm.Ibcast(arr, root=root)]

    def allgather(self, send, recv):
        return [self.comm.Iallgather(send, recv)]

    def reduce_scatter(self, send, recv, op: str):
        return [self.comm.Ireduce_scatter_block(send, recv, op=self._op(op, send.dtype))]

    def reduce(self, arr, root: int, op: str):
        mop = self._op(op, arr.dtype)
        if self.rank == root:
            return [self.comm.Ireduce(self.MPI.IN_PLACE, arr, op=mop, root=root)]
        return [self.comm.Ireduce(arr, None, op=mop, root=root)]

    def gather(self, send, recv, root: int):
        return [self.comm.Igather(send, recv if self.rank == root else None, root=root)]

    def scatter(self, send, recv, root: int):
        return [self.comm.Iscatter(send if self.rank == root else None, recv, root=root)]

    def alltoall(self, send, recv, send_counts=None, recv_counts=None):
        if send_counts is None:
            return [self.comm.Ialltoall(send, recv)]
        s_counts = np.asarray(send_counts, dtype=np.int64)
        r_counts = np.asarray(recv_counts, dtype=np.int64)
        s_displ = np.concatenate([[0], np.cumsum(s_counts)[:-1]])
        r_displ = np.concatenate([[0], np.cumsum(r_counts)[:-1]])
        return [self.comm.Ialltoallv([send, (s_counts.tolist(), s_displ.tolist())],
                                     [recv, (r_counts.tolist(), r_displ.tolist())])]

    def barrier(self):
        return [self.comm.Ibarrier()]

    # -- point to point ---------------------------------------------------------------------
    def send(self, arr, dst: int, tag: int):
        return [self.comm.Isend(arr, dest=dst, tag=tag)]

    def recv(self, arr, src: int | None, tag: int):
        """The request and a function giving the source rank once it has completed."""
        MPI = self.MPI
        status = MPI.Status()
        source = MPI.ANY_SOURCE if src is None else src
        req = self.comm.Irecv(arr, source=source, tag=tag)

        class _Req:  # Test() with the status filled in, for the source rank
            @staticmethod
            def Test():
                return req.Test(status)

        return [_Req()], status.Get_source

    def free(self) -> None:
        if self.comm != self.MPI.COMM_NULL:
            self.comm.Free()
