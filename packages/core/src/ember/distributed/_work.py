"""``Work``: the handle of a collective in flight, and the wait that never hangs.

A wait polls the engine's requests instead of blocking inside MPI, so that it can notice, while
it waits, what a blocking call cannot: a peer that announced its failure (its uncaught exception
is sent to every rank of the job), a peer process on this host that is gone, and the process
group's timeout. Each of them ends the wait with a ``DistBackendError`` that names the rank.
"""

from __future__ import annotations

import os
import time

__all__ = ["Work", "DistError", "DistBackendError", "DistNetworkError", "DistStoreError"]


class DistError(RuntimeError):
    """A distributed error (PyTorch's ``torch.distributed.DistError``)."""


class DistBackendError(DistError):
    """A failure in the communication engine: a peer failed, left, or the wait timed out."""


class DistNetworkError(DistError):
    """A failure to reach a peer."""


class DistStoreError(DistError):
    """A failure of the rendezvous store."""


# how often a waiting rank looks beyond its own requests (seconds)
_ABORT_POLL = 0.02
_LIVENESS_AFTER = 0.5
_LIVENESS_POLL = 0.25
_SPIN = 0.05  # seconds of yielding tests before a wait starts to sleep


class Work:
    """The handle an ``async_op=True`` collective returns: ``wait()`` blocks until the
    operation has finished (and the results are in the output tensors), ``is_completed()``
    asks without blocking."""

    __slots__ = ("_requests", "_finish", "_group", "_what", "_done", "_exc", "_result",
                 "_outputs", "_peers")

    def __init__(self, requests, group, what: str, finish=None, outputs=(),
                 peers=None) -> None:
        self._requests = list(requests)
        self._finish = finish
        self._group = group
        self._what = what
        self._done = False
        self._exc: BaseException | None = None
        self._result = None
        self._outputs = list(outputs)
        # the global ranks a point-to-point operation depends on (None: the whole group)
        self._peers = peers

    def _test(self) -> bool:
        """Whether every request has completed (drives the engine's progress)."""
        reqs = self._requests
        while reqs:
            if not _test_request(reqs[0], self._group, self._what):
                return False
            reqs.pop(0)
        return True

    def _complete(self) -> None:
        self._done = True
        if self._finish is not None:
            finish, self._finish = self._finish, None
            self._result = finish()

    def is_completed(self) -> bool:
        """Whether the operation has finished (never blocks)."""
        if self._done:
            return True
        if self._exc is None:
            try:
                finished = self._test()
            except BaseException as exc:
                self._exc = exc
                raise
            if finished:
                self._complete()
        return self._done

    def is_success(self) -> bool:
        """Whether the operation finished without error."""
        return self.is_completed() and self._exc is None

    def exception(self):
        return self._exc

    def wait(self, timeout=None) -> bool:
        """Block until the operation finishes; raise ``DistBackendError`` when a peer fails or
        ``timeout`` (default: the process group's) passes first."""
        if self._done:
            return True
        if self._exc is not None:
            raise self._exc
        group = self._group
        limit = group._timeout_seconds() if timeout is None else _seconds(timeout)
        try:
            _poll(self._test, group, self._what, limit, self._peers)
        except BaseException as exc:
            self._exc = exc
            raise
        self._complete()
        return True

    def result(self):
        """The output tensors of the operation (after waiting for it)."""
        self.wait()
        return self._outputs

    def synchronize(self) -> None:
        self.wait()

    def get_future(self):
        """A ``Future`` of the output tensors (a list), complete once the operation is: its
        ``wait`` (and those of the futures its ``then`` makes) drives the operation, as a DDP
        communication hook's future is waited."""
        from ..futures import _DrivenFuture

        return _DrivenFuture(self.result, self.is_completed)

    def source_rank(self) -> int:
        """The global rank a receive came from."""
        self.wait()
        return self._result

    def __repr__(self) -> str:
        state = "completed" if self._done else "pending"
        return f"<ember.distributed.Work {self._what} ({state})>"


def _seconds(timeout) -> float:
    seconds = getattr(timeout, "total_seconds", None)
    return float(seconds() if seconds is not None else timeout)


def _test_request(request, group, what: str) -> bool:
    """``request.Test()``, with an error of the engine (MPI's "Message truncated" when the
    ranks passed different sizes, ...) raised as a ``DistBackendError`` naming the operation."""
    try:
        return request.Test()
    except Exception as exc:
        if not type(exc).__module__.startswith("mpi4py"):
            raise
        message = str(exc)
        error = getattr(exc, "Get_error_string", None)
        if error is not None:
            try:
                message = error()
            except Exception:
                pass
        # MPICH's error stack: its first line is the class, its last the precise cause
        lines = [" ".join(line.split()) for line in message.splitlines() if line.strip()]
        if len(lines) > 2:
            lines = [lines[0], lines[-1]]
        message = " ... ".join(lines)[:600] or repr(exc)
        if group is not None:
            group._engine_failed(what, message)
        raise DistBackendError(
            f"{what} failed in MPI: {message} (ranks that pass tensors of different sizes or "
            f"dtypes to one collective cause this: TORCH_DISTRIBUTED_DEBUG=DETAIL checks "
            f"them)") from exc


def _poll(test, group, what: str, limit: float, peers=None) -> None:
    """Wait until ``test()`` is true, watching the peers (all of the group's, or only
    ``peers``, the global ranks of a point-to-point operation) and the timeout.

    First ``_SPIN`` seconds of tests that yield the CPU between them (a peer a few hundred
    microseconds behind is met at once; ``sched_yield`` lets a rank that shares this core run),
    then tests between sleeps that grow to 1 ms (MPICH moves a large message only inside its
    calls: a 940 KB all-reduce took 9.8 ms with 2 ms sleeps, 2.5 ms yielding). A blocking MPI
    call would spin at full speed, and a sleep from the start costs its wake-up latency (a
    10-float all_reduce on 2 ranks took 2 ms with sleeps alone, against 2 us in MPI)."""
    if test():
        return
    start = time.monotonic()
    spin_end = start + _SPIN
    deadline = start + limit
    next_abort = start + _ABORT_POLL
    next_live = start + _LIVENESS_AFTER
    sleep = 5e-5
    while not test():
        now = time.monotonic()
        if now < spin_end:
            _yield()
            continue
        if now >= next_abort:
            group._check_abort()
            next_abort = now + _ABORT_POLL
        if now >= next_live:
            group._check_peers_alive(what, peers)
            next_live = now + _LIVENESS_POLL
        if now >= deadline:
            group._timed_out(what, limit)
        time.sleep(sleep)
        sleep = min(sleep * 2, 1e-3)


_yield = getattr(os, "sched_yield", lambda: time.sleep(0))
