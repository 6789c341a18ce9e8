"""Helpers of the DataLoader: collation, fetchers, the worker loop, exception transport
(``common``), and the flag the iterators read once the interpreter is exiting."""

from __future__ import annotations

import atexit
import sys

from .common import (
    MP_STATUS_CHECK_INTERVAL,
    WATCHDOG_INTERVAL,
    WORKER_POLL_INTERVAL,
    ExceptionWrapper,
    KeyErrorMessage,
)

IS_WINDOWS = sys.platform == "win32"

try:
    import numpy
    HAS_NUMPY = True
except ModuleNotFoundError:
    HAS_NUMPY = False

#: True once the interpreter is exiting: iterators then skip the orderly worker shutdown
python_exit_status = False


def _set_python_exit_flag() -> None:
    global python_exit_status
    python_exit_status = True


atexit.register(_set_python_exit_flag)


from . import collate, fetch, pin_memory, worker
