"""What the DataLoader's main process and its workers share: the polling intervals and the
transport of a worker's exception (``ExceptionWrapper``)."""

from __future__ import annotations

import sys
import traceback

#: seconds to wait for a worker to exit before terminating it
MP_STATUS_CHECK_INTERVAL = 5.0
#: seconds between checks while waiting on a queue: the main process on the result queue
#: (are the workers alive?), a worker on its index queue (is the loader shutting down?)
WORKER_POLL_INTERVAL = 0.25
#: seconds between a worker's checks that the main process is alive, made by a thread of its
#: own so that they go on while the worker is stuck in the dataset
WATCHDOG_INTERVAL = 1.0


class KeyErrorMessage(str):
    """A str whose repr is itself, so a re-raised KeyError shows its traceback readably."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception caught in a worker, carried to the main process as its traceback text and
    re-raised there (``reraise``) with the same type."""

    def __init__(self, exc_info=None, where: str = "in background") -> None:
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        """Raise the wrapped exception type, its message being the original traceback."""
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception
