"""Module-level locks that stay usable in a child process made by ``os.fork``.

A fork copies the memory of the whole process but only the forking thread: a lock that
another thread held at that moment stays locked in the child for ever, and the child's first
use of it hangs. DataLoader workers are forked (the default start method on Linux) while the
parent's other threads work, so every lock their code can take must survive that. (A
DataLoader iterated from three threads at once hung one run in ten: a worker forked while
another thread's loader rebuilt a shared-memory batch waited for ever on the shared-memory
lock.)
"""

from __future__ import annotations

import os

__all__ = ["reinit_in_child", "held_across_fork"]


def reinit_in_child(lock):
    """``lock``, made new (unlocked) in every forked child. For locks around short updates of
    one structure, whose half-done state a child does not meet in practice."""
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=lock._at_fork_reinit)
    return lock


def held_across_fork(lock):
    """``lock``, taken by the forking thread just before a fork (so no other thread is inside
    it: the child's copy of what it guards is whole), released after it in the parent and
    made new in the child. Only for a lock whose holders take no other lock and never fork."""
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(before=lock.acquire, after_in_parent=lock.release,
                            after_in_child=lock._at_fork_reinit)
    return lock
