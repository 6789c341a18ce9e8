"""Anomaly detection: ``detect_anomaly`` and ``set_detect_anomaly``, as in PyTorch.

When enabled, every recorded node keeps the traceback of the forward call that created it
(``graph.record``); the engine raises when a backward function returns NaN and warns with
that traceback when a backward function fails.
"""

from __future__ import annotations

import functools
import warnings

from .grad_mode import GRAD, set_anomaly

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on in this thread."""
    return GRAD.anomaly


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection also checks backward outputs for NaN (in this thread)."""
    return GRAD.anomaly_check_nan


def _set_anomaly_enabled(mode: bool, check_nan: bool = True) -> None:
    for v, arg in ((mode, "'enabled' (position 1)"), (check_nan, "'check_nan' (position 2)")):
        if v.__class__ is not bool:
            raise TypeError(f"set_anomaly_enabled(): argument {arg} must be bool, not "
                            f"{type(v).__name__}")
    set_anomaly(mode, check_nan)


class detect_anomaly:
    """Context manager (or decorator) that turns anomaly detection on inside its block.

    Backward then raises ``Function 'XBackward0' returned nan values in its 0th output.``
    (with ``check_nan=True``) and, on any error, warns with the forward traceback of the
    node that failed. It slows everything down: use it for debugging only.
    """

    def __init__(self, check_nan: bool = True) -> None:
        self.prev = is_anomaly_enabled()
        self.check_nan = check_nan
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self) -> None:
        self.prev = is_anomaly_enabled()
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        _set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *args) -> None:
        _set_anomaly_enabled(self.prev, self.prev_check_nan)

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with _clone(self):
                return func(*args, **kwargs)

        return wrapper


def _clone(cm: detect_anomaly) -> detect_anomaly:
    new = detect_anomaly.__new__(detect_anomaly)
    new.check_nan = cm.check_nan
    return new


class set_detect_anomaly:
    """Turn anomaly detection on or off; as a context manager it restores the previous
    setting on exit."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = is_anomaly_enabled()
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        _set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *args) -> None:
        _set_anomaly_enabled(self.prev, self.prev_check_nan)
