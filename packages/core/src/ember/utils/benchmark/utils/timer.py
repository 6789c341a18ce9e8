"""``Timer``: ``timeit.Timer`` made aware of Ember, as ``torch.utils.benchmark.Timer``.

Python statements only: Ember has no C++ timing, so ``language="c++"`` is refused, and
``collect_callgrind`` (Valgrind instruction counts) is not offered.
"""

from __future__ import annotations

import enum
import textwrap
import timeit
from collections.abc import Callable
from typing import Any, NoReturn

import numpy as np

from . import common

__all__ = ["Timer", "timer", "Language"]


def timer() -> float:
    """``timeit.default_timer`` after synchronizing the accelerator, when one is present,
    so that asynchronous GPU work is inside the measured interval."""
    import ember

    if ember.accelerator.is_available():
        ember.accelerator.synchronize()
    return timeit.default_timer()


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


def _strip_block(code: str) -> str:
    # dedent, then drop the newline that opens a triple-quoted block and trailing space:
    # what runs is the same, the repr is nicer
    code = textwrap.dedent(code)
    return (code[1:] if code and code[0] == "\n" else code).rstrip()


class Timer:
    """Measure the execution time of Ember statements, like ``torch.utils.benchmark.Timer``.

    Built on ``timeit.Timer`` (which it uses inside), with these differences: it warms up
    before measuring, runs the statement under ``ember.set_num_threads(num_threads)`` so
    that comparisons are like for like, synchronizes an accelerator around each timed
    block (the default ``timer``), and returns a ``Measurement`` that keeps every replicate.

    Args:
        stmt: code run in a loop and timed.
        setup: code run once before each timed block (defines what ``stmt`` uses).
        global_setup: C++ only; a Python timer refuses it.
        timer: the clock; the default synchronizes the accelerator, then reads
            ``timeit.default_timer``.
        globals: the namespace ``stmt`` and ``setup`` run in (copied; ``torch`` and
            ``ember`` are added unless given).
        label, sub_label, description, env: labels for ``Measurement`` and ``Compare``:
            ``label`` titles a table, ``sub_label`` names a row, ``description`` a
            column, and ``env`` keeps otherwise identical tasks apart.
        num_threads: the size of Ember's thread pool while ``stmt`` runs (default 1).
        language: ``"python"`` (or ``"py"``, ``Language.PYTHON``); C++ is not available.

    Example::

        >>> t = Timer(stmt="x + y", globals={"x": ember.ones(8), "y": ember.ones(8)})
        >>> m = t.blocked_autorange(min_run_time=0.1)
        >>> m.median  # seconds per execution
    """

    def __init__(
        self,
        stmt: str = "pass",
        setup: str = "pass",
        global_setup: str = "",
        timer: Callable[[], float] = timer,
        globals: dict[str, Any] | None = None,
        label: str | None = None,
        sub_label: str | None = None,
        description: str | None = None,
        env: str | None = None,
        num_threads: int = 1,
        language: Language | str = Language.PYTHON,
    ) -> None:
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")

        # a copy, so that exec's additions (``__builtins__``) do not leak to the caller
        self._globals = dict(globals or {})
        if language in (Language.PYTHON, "py", "python"):
            import ember

            self._globals.setdefault("torch", ember)
            self._globals.setdefault("ember", ember)
            self._language = Language.PYTHON
            if global_setup:
                raise ValueError(
                    f"global_setup is C++ only, got `{global_setup}`. Most "
                    "likely this code can simply be moved to `setup`."
                )
        elif language in (Language.CPP, "cpp", "c++"):
            raise RuntimeError(
                "C++ timing (language='c++') is not available in Ember: Ember has no C++ "
                "extension to compile the statement with. Time the Python statement instead "
                "(language='python')."
            )
        else:
            raise ValueError(f"Invalid language `{language}`.")

        stmt = _strip_block(stmt)
        setup = _strip_block(setup)
        self._timer = timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = common.TaskSpec(
            stmt=stmt,
            setup=setup,
            global_setup=global_setup,
            label=label,
            sub_label=sub_label,
            description=description,
            env=env,
            num_threads=num_threads,
        )

    def _timeit(self, number: int) -> float:
        # no real statement takes under 1 ns (reading the clock alone costs more); the
        # floor also keeps later divisions by the time finite
        return max(self._timer.timeit(number), 1e-9)

    def timeit(self, number: int = 1000000) -> common.Measurement:
        """Run ``stmt`` ``number`` times (after a warmup of ``max(number // 100, 2)``) and
        return one measurement of the block, as ``timeit.Timer.timeit``."""
        with common.set_torch_threads(self._task_spec.num_threads):
            self._timeit(number=max(int(number // 100), 2))  # warmup
            return common.Measurement(number_per_run=number,
                                      raw_times=[self._timeit(number=number)],
                                      task_spec=self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1) -> None:
        """Not offered, as in PyTorch: ``blocked_autorange`` measures replicates."""
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback: Callable[[int, float], NoReturn] | None = None) -> None:
        """Not offered, as in PyTorch: ``blocked_autorange`` picks the block size."""
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _threaded_measurement_loop(
        self,
        number: int,
        time_hook: Callable[[], float],
        stop_hook: Callable[[list[float]], bool],
        min_run_time: float,
        max_run_time: float | None = None,
        callback: Callable[[int, float], NoReturn] | None = None,
    ) -> list[float]:
        total_time = 0.0
        can_stop = False
        times: list[float] = []
        with common.set_torch_threads(self._task_spec.num_threads):
            while total_time < min_run_time or not can_stop:
                time_spent = time_hook()
                times.append(time_spent)
                total_time += time_spent
                if callback:
                    callback(number, time_spent)
                can_stop = stop_hook(times)
                if max_run_time and total_time > max_run_time:
                    break
        return times

    def _estimate_block_size(self, min_run_time: float) -> int:
        """The smallest power of ten of executions whose block makes the timer's own
        overhead negligible (at most 1e-4 of it, and at least ``min_run_time / 1000``), or
        that alone takes ``min_run_time``. Also serves as the warmup."""
        with common.set_torch_threads(self._task_spec.num_threads):
            overhead = float(np.median([self._timeit(0) for _ in range(5)]))
            number = 1
            while True:
                time_taken = self._timeit(number)
                if overhead / time_taken <= 1e-4 and time_taken >= min_run_time / 1000:
                    break
                if time_taken > min_run_time:
                    break
                if number * 10 > 2147483647:  # PyTorch's int32 bound, kept for parity
                    break
                number *= 10
        return number

    def blocked_autorange(
        self,
        callback: Callable[[int, float], NoReturn] | None = None,
        min_run_time: float = 0.2,
    ) -> common.Measurement:
        """Measure many replicates while keeping the timer's overhead negligible.

        Picks a block size (``_estimate_block_size``), then times blocks of that many
        executions until their total reaches ``min_run_time``::

            `setup`
            total_time = 0
            while total_time < min_run_time:
                start = timer()
                for _ in range(block_size):
                    `stmt`
                total_time += timer() - start

        ``callback(number, time)`` is called after each block.

        Returns:
            A ``Measurement`` with one raw time per block.
        """
        number = self._estimate_block_size(min_run_time)
        times = self._threaded_measurement_loop(
            number, lambda: self._timeit(number), lambda times: True,
            min_run_time=min_run_time, callback=callback)
        return common.Measurement(number_per_run=number, raw_times=times,
                                  task_spec=self._task_spec)

    def adaptive_autorange(
        self,
        threshold: float = 0.1,
        *,
        min_run_time: float = 0.01,
        max_run_time: float = 10.0,
        callback: Callable[[int, float], NoReturn] | None = None,
    ) -> common.Measurement:
        """Like ``blocked_autorange``, but keep measuring until the spread is small: stop
        once more than 3 blocks have run, their total passed ``min_run_time`` and
        ``iqr / median < threshold``, or when the total passes ``max_run_time``.

        Returns:
            A ``Measurement`` with one raw time per block.
        """
        number = self._estimate_block_size(min_run_time=0.05)

        def stop_hook(times: list[float]) -> bool:
            if len(times) > 3:
                return common.Measurement(number_per_run=number, raw_times=times,
                                          task_spec=self._task_spec
                                          ).meets_confidence(threshold=threshold)
            return False

        times = self._threaded_measurement_loop(
            number, lambda: self._timeit(number), stop_hook, min_run_time, max_run_time,
            callback=callback)
        return common.Measurement(number_per_run=number, raw_times=times,
                                  task_spec=self._task_spec)
