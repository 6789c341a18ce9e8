"""``ember.profiler``: per-op timing at the op registry, with PyTorch's profiler API."""

from __future__ import annotations

from ..autograd.profiler import KinetoStepTracker, record_function
from .profiler import (
    ProfilerAction,
    ProfilerActivity,
    profile,
    schedule,
    supported_activities,
    tensorboard_trace_handler,
)

__all__ = ["ProfilerAction", "ProfilerActivity", "profile", "record_function", "schedule",
           "supported_activities", "tensorboard_trace_handler", "kineto_available"]


def kineto_available() -> bool:
    """``torch.profiler.kineto_available()``: whether :class:`profile` (PyTorch's Kineto
    profiler) can be used; Ember's always can (Lightning's ``PyTorchProfiler`` asks)."""
    return True
