"""``ember.distributed.algorithms``: training with uneven inputs (``join``)."""

from .join import Join, Joinable, JoinHook

__all__ = ["Join", "Joinable", "JoinHook"]
