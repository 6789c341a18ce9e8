"""``torch.autograd.profiler_legacy``: the legacy profiler's API.

PyTorch keeps a second, older recorder behind this class; Ember has one recorder, so this is
:class:`ember.autograd.profiler.profile` with the legacy signature and manners: its events
are marked ``is_legacy``, and asking for results before the block has run raises.
"""

from __future__ import annotations

from .profiler import profile as _profile
from .profiler_util import EventList

__all__ = ["profile"]


class profile(_profile):
    """DEPRECATED: use ember.profiler instead."""

    _UNFINISHED = "<unfinished profiler_legacy.profile>"
    _legacy = True

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False,
                 record_shapes: bool = False, with_flops: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_modules: bool = False) -> None:
        super().__init__(enabled, use_device="cuda" if use_cuda else None,
                         record_shapes=record_shapes, with_flops=with_flops,
                         profile_memory=profile_memory, with_stack=with_stack,
                         with_modules=with_modules)

    def _events(self) -> EventList:
        if self._function_events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self._function_events

    @property
    def function_events(self) -> EventList | None:
        return self._function_events

    def __str__(self) -> str:
        if self._function_events is None:
            return "<unfinished profile.profiler_legacy.profile>"
        return str(self._function_events)
