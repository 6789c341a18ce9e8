"""``ember.futures``: a result that will be ready later (``torch.futures``).

``Future`` is thread-safe: ``wait()`` blocks until ``set_result``/``set_exception`` ran on
any thread; callbacks run once, on the thread that completed the future (or at once when
it is already complete). An exception set on a future is raised by ``wait()`` and
``value()``; ``then`` turns an exception raised in its callback into a RuntimeError of the
returned future, with PyTorch's message."""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["Future", "collect_all", "wait_all"]

T = TypeVar("T")
S = TypeVar("S")


class Future(Generic[T]):
    """``torch.futures.Future``: ``set_result``/``set_exception`` complete it once;
    ``wait``/``value`` read it; ``then``/``add_done_callback`` chain work on it."""

    def __init__(self, *, devices=None) -> None:
        self._cond = threading.Condition()
        self._done = False
        self._result: Any = None
        self._exception: BaseException | None = None
        self._callbacks: list[Callable] = []

    def __repr__(self) -> str:
        return f"<ember.futures.Future object at {hex(id(self))}>"

    def done(self) -> bool:
        """Whether the future holds a value or an exception."""
        return self._done

    def wait(self) -> T:
        """Block until the future completes; return its value or raise its exception."""
        with self._cond:
            while not self._done:
                self._cond.wait()
        return self.value()

    def value(self) -> T:
        """The value of a completed future (its exception is raised)."""
        if not self._done:
            raise RuntimeError("Future.value() called on a Future that is not completed: "
                               "call wait() first")
        if self._exception is not None:
            raise self._exception
        return self._result

    def then(self, callback: Callable[[Future[T]], S]) -> Future[S]:
        """A new future completed with ``callback(self)`` once this one completes (an
        exception raised by the callback completes it with a RuntimeError)."""
        fut: Future[S] = Future()

        def run(f: Future[T]) -> None:
            try:
                fut.set_result(callback(f))
            except Exception as e:
                fut.set_exception(_callback_error(e))

        self.add_done_callback(run)
        return fut

    def add_done_callback(self, callback: Callable[[Future[T]], None]) -> None:
        """Run ``callback(self)`` when the future completes (now, if it has); its
        exceptions are reported on stderr and ignored, as in PyTorch."""
        with self._cond:
            if not self._done:
                self._callbacks.append(callback)
                return
        self._run_callback(callback)

    def set_result(self, result: T) -> None:
        """Complete the future with ``result`` (once)."""
        self._complete(result, None)

    def set_exception(self, result: BaseException) -> None:
        """Complete the future with an exception that ``wait``/``value`` will raise."""
        if not isinstance(result, BaseException):
            raise AssertionError(f"{result} is of type {type(result)}, not an Exception.")
        self._complete(None, result)

    def _complete(self, result: Any, exception: BaseException | None) -> None:
        with self._cond:
            if self._done:
                raise RuntimeError("Attempting to mark a completed Future as complete again. "
                                   "Note that a Future can only be marked completed once.")
            self._result, self._exception = result, exception
            self._done = True
            callbacks, self._callbacks = self._callbacks, []
            self._cond.notify_all()
        for callback in callbacks:
            self._run_callback(callback)

    def _run_callback(self, callback: Callable) -> None:
        try:
            callback(self)
        except Exception as e:
            import sys

            print(f"{_callback_error(e)}", file=sys.stderr)


class _DrivenFuture(Future):
    """A future completed by calling ``driver()``, which blocks until the value is there and
    returns it: what MPI work needs (its data move only inside calls), and the futures its
    ``then`` makes drive it in turn. ``done()`` asks ``poll()`` (None: not yet known)."""

    def __init__(self, driver: Callable[[], Any], poll: Callable[[], bool] | None = None):
        super().__init__()
        self._driver = driver
        self._poll = poll

    def _drive(self) -> None:
        if self._done:
            return
        with self._cond:
            if self._done:
                return
        try:
            value = self._driver()
        except Exception as e:
            if not self._done:
                self.set_exception(e)
            return
        if not self._done:
            self.set_result(value)

    def done(self) -> bool:
        if not self._done and self._poll is not None and self._poll():
            self._drive()
        return self._done

    def wait(self) -> T:
        self._drive()
        return super().wait()

    def then(self, callback: Callable[[Future[T]], S]) -> Future[S]:
        parent = self

        def run() -> S:
            parent._drive()
            try:
                return callback(parent)
            except Exception as e:
                raise _callback_error(e) from e

        return _DrivenFuture(run, lambda: parent.done())


def _callback_error(e: BaseException) -> RuntimeError:
    where = "".join(traceback.format_tb(e.__traceback__))
    err = RuntimeError(f"Got the following error when running the callback: "
                       f"{type(e).__name__}: {e}\n\nAt:\n{where}")
    err.__cause__ = e
    return err


def collect_all(futures: list[Future]) -> Future[list[Future]]:
    """A future completed with the list ``futures`` once all of them are complete (with
    the first exception among them, if any, as in PyTorch)."""
    futures = list(futures)
    combined: Future[list[Future]] = Future()
    remaining = [len(futures)]
    lock = threading.Lock()

    def one_done(_: Future) -> None:
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            error = next((f._exception for f in futures if f._exception is not None), None)
            if error is not None:
                combined.set_exception(error)
            else:
                combined.set_result(futures)

    if not futures:
        combined.set_result([])
    for f in futures:
        f.add_done_callback(one_done)
    return combined


def wait_all(futures: list[Future]) -> list:
    """Wait for every future; return their values (the first exception is raised)."""
    return [f.wait() for f in collect_all(futures).wait()]
