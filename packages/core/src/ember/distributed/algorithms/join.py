"""``Join``: a training loop in which ranks run out of inputs at different times.

PyTorch's ``torch.distributed.algorithms.join``. Inside ``with Join([ddp_model, ...]):`` a
rank that has used up its inputs leaves the loop and waits in ``Join.__exit__``; there each
iteration the others still run, it answers their collectives through its joinables' hooks
(``JoinHook.main_hook``: ``DistributedDataParallel`` all-reduces zero gradients in its
buckets' order), so nobody hangs. The ranks count who is still training with one all-reduce
per iteration: each ``Joinable`` calls :meth:`Join.notify_join_context` at the start of its
per-iteration collectives (its forward), adding 1; joined ranks add 0. When the count is 0
every rank runs ``JoinHook.post_hook(is_last_joiner)`` (DDP: the last rank to join broadcasts
the final model). ``throw_on_early_termination=True`` instead raises on every rank as soon as
one runs out.
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from typing import Any, NamedTuple

__all__ = ["JoinHook", "Joinable", "Join"]


class JoinHook:
    """What a joined rank does for one joinable: ``main_hook`` once per iteration the others
    still train, ``post_hook`` once all have joined."""

    def main_hook(self) -> None:
        """Shadow one iteration's collectives of the joinable (called while others train)."""

    def post_hook(self, is_last_joiner: bool) -> None:
        """Called on every rank once all have joined."""


class _JoinConfig(NamedTuple):
    enable: bool
    throw_on_early_termination: bool
    is_first_joinable: bool

    @staticmethod
    def construct_disabled_join_config() -> _JoinConfig:
        return _JoinConfig(enable=False, throw_on_early_termination=False,
                           is_first_joinable=False)


class Joinable(ABC):
    """A class whose per-iteration collectives a joined rank can shadow (``join_hook``)."""

    @abstractmethod
    def __init__(self) -> None:
        super().__init__()
        self._join_config = _JoinConfig.construct_disabled_join_config()

    @abstractmethod
    def join_hook(self, **kwargs) -> JoinHook:
        """The hook that shadows this joinable's collectives (``kwargs`` from ``Join``)."""

    @property
    @abstractmethod
    def join_device(self):
        """The device the join context's all-reduces run on."""

    @property
    @abstractmethod
    def join_process_group(self) -> Any:
        """The process group of the join context's all-reduces."""


_WARN_THRESHOLD = 1000


class Join:
    """The uneven-inputs context manager over ``joinables`` (they must share a process group
    and device). ``kwargs`` go to each ``join_hook`` (DDP's
    ``divide_by_initial_world_size``)."""

    def __init__(self, joinables: list[Joinable], enable: bool = True,
                 throw_on_early_termination: bool = False, **kwargs) -> None:
        if len(joinables) == 0:
            raise ValueError("The join context manager requires at least one joinable")
        self._joinables = joinables
        self._join_hooks = [j.join_hook(**kwargs) for j in self._joinables]
        self._enable = enable
        self._throw_on_early_termination = throw_on_early_termination
        self._set_joinable_configs()
        self._extract_dist_info()

    def _set_joinable_configs(self) -> None:
        for i, joinable in enumerate(self._joinables):
            joinable._join_config = _JoinConfig(
                self._enable, self._throw_on_early_termination, is_first_joinable=i == 0)

    def _extract_dist_info(self) -> None:
        from .. import distributed_c10d as c10d

        process_group, device = None, None
        for joinable in self._joinables:
            if process_group is None:
                process_group = joinable.join_process_group
            elif process_group != joinable.join_process_group:
                raise ValueError("Using join context manager with multiple process groups")
            if device is None:
                device = joinable.join_device
        self._process_group = process_group
        self._rank = c10d.get_rank(self._process_group)
        self._device = device

    def __enter__(self) -> Join:
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        """Shadow the others' iterations until every rank has joined; then the post-hooks.
        An exception leaving the block is not waited on (the others would hang in vain)."""
        if not self._enable or exc_type:
            return
        all_joined = False
        is_last_joiner = True
        i = 0
        with warnings.catch_warnings():
            warnings.simplefilter("once")
            while not all_joined:
                if i > _WARN_THRESHOLD:
                    warnings.warn(f"Detected uneven input skew of greater than "
                                  f"{_WARN_THRESHOLD}. This means that rank {self._rank} has "
                                  f"at least {_WARN_THRESHOLD} fewer inputs than other "
                                  f"currently-active ranks. This level of skew could lead to "
                                  f"performance degradation during training.", stacklevel=2)
                if self._get_num_nonjoined_procs() == 0:
                    all_joined = True
                else:
                    if self._throw_on_early_termination:
                        self._notify_procs_to_terminate()
                    for hook in self._join_hooks:
                        hook.main_hook()
                    is_last_joiner = False
                    i += 1
        for hook in self._join_hooks:
            hook.post_hook(is_last_joiner)

    def _get_num_nonjoined_procs(self) -> int:
        """The ranks still training: they add 1 in ``notify_join_context``, joined ones 0."""
        import ember

        from .. import distributed_c10d as c10d

        count = ember.zeros(1, device=self._device)
        c10d.all_reduce(count, group=self._process_group)
        return int(count.item())

    def _notify_procs_to_terminate(self) -> None:
        import ember

        from .. import distributed_c10d as c10d

        ones = ember.ones(1, device=self._device)
        c10d.all_reduce(ones, group=self._process_group)
        raise RuntimeError(f"Rank {self._rank} exhausted all inputs.")

    @staticmethod
    def notify_join_context(joinable: Joinable):
        """Called by a joinable at the start of an iteration's collectives: count this rank
        as still training (an all-reduce the joined ranks answer). Returns its work (None
        unless ``joinable`` is the context's first). With ``throw_on_early_termination``,
        raises when a rank has run out of inputs."""
        import ember

        from .. import distributed_c10d as c10d

        if not hasattr(joinable, "_join_config"):
            raise AssertionError(f"Check that the {type(joinable)} constructor calls the "
                                 f"``Joinable`` constructor")
        config = joinable._join_config
        if not config.is_first_joinable or not config.enable:
            return None
        device, group = joinable.join_device, joinable.join_process_group
        ones = ember.ones(1, device=device)
        work = c10d.all_reduce(ones, group=group, async_op=True)
        if config.throw_on_early_termination:
            zeros = ember.zeros(1, device=device)
            c10d.all_reduce(zeros, group=group)
            if zeros.item():
                raise RuntimeError("Detected at least one rank that exhausted inputs. "
                                   "Throwing across all ranks.")
        return work
