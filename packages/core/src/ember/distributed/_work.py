"""``Work``: the handle of a collective in flight, and the wait that never hangs.

A wait polls the engine's requests instead of blocking inside MPI, so that it can notice, while
it waits, what a blocking call cannot: a peer that announced its failure (its uncaught exception
is sent to every rank of the job), a peer process on this host that is gone, and the process
group's timeout. Each of them ends the wait with a ``DistBackendError`` that names the rank.
"""

from __future__ import annotations

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


class Work:
    """The handle an ``async_op=True`` collective returns: ``wait()`` blocks until the
    operation has finished (and the results are in the output tensors), ``is_completed()``
    asks without blocking."""

    __slots__ = ("_requests", "_finish", "_group", "_what", "_done", "_exc", "_result",
                 "_outputs")

    def __init__(self, requests, group, what: str, finish=None, outputs=()) -> None:
        self._requests = list(requests)
        self._finish = finish
        self._group = group
        self._what = what
        self._done = False
        self._exc: BaseException | None = None
        self._result = None
        self._outputs = list(outputs)

    def _test(self) -> bool:
        """Whether every request has completed (drives the engine's progress)."""
        reqs = self._requests
        while reqs:
            if not reqs[0].Test():
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
        if self._exc is None and self._test():
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
            _poll(self._test, group, self._what, limit)
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


def _poll(test, group, what: str, limit: float) -> None:
    """Spin on ``test()`` briefly, then poll with a growing sleep, watching the peers."""
    for _ in range(200):
        if test():
            return
    start = time.monotonic()
    deadline = start + limit
    next_abort = start
    next_live = start + _LIVENESS_AFTER
    sleep = 5e-5
    while not test():
        now = time.monotonic()
        if now >= next_abort:
            group._check_abort()
            next_abort = now + _ABORT_POLL
        if now >= next_live:
            group._check_peers_alive(what)
            next_live = now + _LIVENESS_POLL
        if now >= deadline:
            group._timed_out(what, limit)
        time.sleep(sleep)
        sleep = min(sleep * 2, 2e-3)
