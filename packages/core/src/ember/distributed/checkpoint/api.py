"""``CheckpointException``: a save or load failed on some ranks (every rank raises it)."""

from __future__ import annotations

import traceback as tb
from typing import Any

__all__ = ["CheckpointException"]

#: an exception as one rank reports it: (the exception, its traceback's frame summary)
WRAPPED_EXCEPTION = tuple[BaseException, Any]


def _wrap_exception(exc: BaseException) -> WRAPPED_EXCEPTION:
    return exc, tb.extract_tb(exc.__traceback__)


def _is_wrapped_exception(obj) -> bool:
    return (isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], BaseException)
            and isinstance(obj[1], tb.StackSummary))


class CheckpointException(BaseException):
    """Raised on every rank when a checkpoint save or load failed on some: ``failures`` maps
    each failed rank to its exception and traceback."""

    def __init__(self, msg: str, failures: dict[int, WRAPPED_EXCEPTION]):
        super().__init__(msg, failures)
        self._failures = failures

    @property
    def failures(self) -> dict[int, WRAPPED_EXCEPTION]:
        """Each failed rank's (exception, traceback summary)."""
        return self._failures

    def __str__(self) -> str:
        text = f"CheckpointException ranks:{self._failures.keys()}\n"
        for rank, (exc, trace) in self._failures.items():
            text += f"Traceback (most recent call last): (RANK {rank})\n"
            if trace is not None:
                text += "".join(tb.format_list(trace))
            text += "".join(tb.format_exception_only(type(exc), value=exc))
        return text
