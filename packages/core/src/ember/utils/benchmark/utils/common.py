"""Shared pieces of ``ember.utils.benchmark``: ``TaskSpec``, ``Measurement`` and the
number-formatting helpers, as ``torch.utils.benchmark.utils.common``.

The statistics follow PyTorch's exactly: quantiles interpolate linearly in float64, while
unit selection, significant figures and trimming compute in float32 as PyTorch's tensors do,
so a ``Compare`` table prints the same digits.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import math
import textwrap
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

__all__ = ["TaskSpec", "Measurement", "select_unit", "unit_to_english", "trim_sigfig",
           "ordered_unique", "set_torch_threads"]

_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9  # 25 ns

# A Measurement warns when its spread (IQR / median) passes these thresholds.
_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25

_UNIT_SCALE = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}


def _log10_f32(x: float) -> float:
    """``log10`` of ``x`` rounded to float32 first, as ``torch.tensor(x).log10()``: computed
    in float64 and rounded to float32, which is the correctly rounded float32 result that
    PyTorch's kernel gives at the unit boundaries (NumPy's own float32 ``log10`` is 1 ulp off
    at some of them, depending on its version and SIMD path: -6.0000005 for 1e-6 in NumPy
    2.4.6, which moved 1 us into nanoseconds)."""
    with np.errstate(divide="ignore"):
        return float(np.float32(np.log10(np.float64(np.float32(x)))))


@dataclasses.dataclass(init=True, repr=False, eq=True, frozen=True)
class TaskSpec:
    """What a ``Timer`` measures, less its globals: the code and the labels that
    ``Measurement`` and ``Compare`` display and group by."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """Best-effort label: ``label`` (or a one-line ``stmt``) with ``sub_label``."""
        suffix = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + suffix
        if "\n" not in self.stmt:
            return self.stmt + suffix
        sub = f" ({self.sub_label})" if self.sub_label else ""
        return f"stmt:{sub}\n{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self) -> str:
        """The setup line(s) of a summary; empty for no setup."""
        if self.setup == "pass" or not self.setup:
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}"
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        """The TaskSpec part of a ``Measurement``'s repr."""
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join(f"{s}\n" if "\n" in s else s for s in sections if s)


_TASKSPEC_FIELDS = tuple(f.name for f in dataclasses.fields(TaskSpec))


@dataclasses.dataclass(init=True, repr=False)
class Measurement:
    """The result of a ``Timer`` measurement: ``raw_times`` holds the time of each run of
    ``number_per_run`` executions of the statement.

    Statistics (``median``, ``mean``, ``iqr``) are per execution (raw time divided by
    ``number_per_run``). The fields of ``task_spec`` (``stmt``, ``label``, ``num_threads``,
    ...) read through as attributes.
    """

    number_per_run: int
    raw_times: list[float]
    task_spec: TaskSpec
    metadata: dict[Any, Any] | None = None  # reserved for user payloads

    def __post_init__(self) -> None:
        self._sorted_times: tuple[float, ...] = ()
        self._warnings: tuple[str, ...] = ()
        self._median: float = -1.0
        self._mean: float = -1.0
        self._p25: float = -1.0
        self._p75: float = -1.0

    def __getattr__(self, name: str) -> Any:
        # reached only when normal lookup fails: forward TaskSpec's fields
        if name in _TASKSPEC_FIELDS:
            return getattr(self.task_spec, name)
        return super().__getattribute__(name)

    # -- statistics ----------------------------------------------------------------------
    @property
    def times(self) -> list[float]:
        """The time of one execution in each run (``raw_times / number_per_run``)."""
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        self._lazy_init()
        return self._median

    @property
    def mean(self) -> float:
        self._lazy_init()
        return self._mean

    @property
    def iqr(self) -> float:
        """The interquartile range: 75th minus 25th percentile of ``times``."""
        self._lazy_init()
        return self._p75 - self._p25

    @property
    def significant_figures(self) -> int:
        """A rough estimate of the measurement's precision, from 1 to 4.

        Uses the interquartile points only (robust to the tails) and a 90% confidence
        interval ``1.645 * std / sqrt(n)`` (at least 25 ns): ``floor(log10(median / ci))``.
        ``Compare.trim_significant_figures`` uses it; the repr does not."""
        self._lazy_init()
        n_total = len(self._sorted_times)
        lower = n_total // 4
        upper = math.ceil(np.float32(3 * n_total / 4))
        points = np.asarray(self._sorted_times[lower:upper], dtype=np.float32)
        std = float(points.std())
        sqrt_n = float(np.sqrt(np.float32(len(points))))
        confidence_interval = max(1.645 * std / sqrt_n, _MIN_CONFIDENCE_INTERVAL)
        relative_ci = _log10_f32(self._median / confidence_interval)
        figures = int(np.floor(np.float32(relative_ci)))
        return min(max(figures, 1), _MAX_SIGNIFICANT_FIGURES)

    @property
    def has_warnings(self) -> bool:
        """Whether the spread is large (IQR at least 10% of the median)."""
        self._lazy_init()
        return bool(self._warnings)

    def _lazy_init(self) -> None:
        if not self.raw_times or self._sorted_times:
            return
        self._sorted_times = tuple(sorted(self.times))
        times = np.asarray(self._sorted_times, dtype=np.float64)
        self._median = float(np.quantile(times, 0.5))
        self._mean = float(times.mean())
        self._p25 = float(np.quantile(times, 0.25))
        self._p75 = float(np.quantile(times, 0.75))

        if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD):
            self._add_warning("This suggests significant environmental influence.")
        elif not self.meets_confidence(_IQR_WARN_THRESHOLD):
            self._add_warning("This could indicate system fluctuation.")

    def _add_warning(self, msg: str) -> None:
        rel_iqr = self.iqr / self.median * 100
        self._warnings += (f"  WARNING: Interquartile range is {rel_iqr:.1f}% "
                           f"of the median measurement.\n           {msg}",)

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        """Whether ``iqr / median`` is below ``threshold``."""
        return self.iqr / self.median < threshold

    # -- labels --------------------------------------------------------------------------
    @property
    def title(self) -> str:
        return self.task_spec.title

    @property
    def env(self) -> str | None:
        # PyTorch's property means "Unspecified env" for None, but a typo in it makes the
        # attribute fall through to ``task_spec.env``: None it is, which Compare relies on.
        return self.task_spec.env

    @property
    def as_row_name(self) -> str:
        """The row name in a ``Compare`` table: ``sub_label``, else ``stmt``."""
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self) -> str:
        """Example::

            <ember.utils.benchmark.utils.common.Measurement object at 0x7f395b6ac110>
            Broadcasting add (4x8)
              Median: 5.73 us
              IQR:    2.25 us (4.01 to 6.26)
              372 measurements, 100 runs per measurement, 1 thread
              WARNING: Interquartile range is 39.4% of the median measurement.
                       This suggests significant environmental influence.
        """
        self._lazy_init()
        n = len(self._sorted_times)
        unit, scale = select_unit(self._median)
        threads = self.num_threads
        lines = [object.__repr__(self), self.task_spec.summarize(),
                 f"  {'Median: ' if n > 1 else ''}{self._median / scale:.2f} {unit}"]
        if n >= 4:
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} "
                         f"({self._p25 / scale:.2f} to {self._p75 / scale:.2f})")
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} "
                     f"{threads} thread{'s' if threads > 1 else ''}")
        lines.extend(self._warnings)
        return "\n".join(lines).strip()

    @staticmethod
    def merge(measurements: Iterable[Measurement]) -> list[Measurement]:
        """Merge replicates of the same ``TaskSpec`` into one ``Measurement`` each.

        Times are extrapolated to ``number_per_run=1``; metadata is not carried over (it
        may differ between replicates)."""
        grouped: dict[TaskSpec, list[float]] = collections.defaultdict(list)
        for m in measurements:
            grouped[m.task_spec].extend(m.times)
        return [Measurement(number_per_run=1, raw_times=times, task_spec=spec, metadata=None)
                for spec, times in grouped.items()]


def select_unit(t: float) -> tuple[str, float]:
    """The unit that gives ``t`` seconds an O(1) magnitude, and its scale:
    ``select_unit(2e-6) == ("us", 1e-6)``."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(_log10_f32(t) // 3), "s")
    return unit, _UNIT_SCALE[unit]


def unit_to_english(u: str) -> str:
    """``"us"`` -> ``"microsecond"``."""
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[u]


def trim_sigfig(x: float, n: int) -> float:
    """Trim ``x`` to ``n`` significant figures (``3.14159, 2 -> 3.1``)."""
    if n != int(n):
        raise AssertionError("Number of significant figures must be an integer")
    magnitude = math.ceil(_log10_f32(abs(x)))
    scale = 10 ** (magnitude - n)
    return float(np.round(np.float32(x / scale)) * np.float32(scale))


def ordered_unique(elements: Iterable[Any]) -> list[Any]:
    """The distinct elements in first-seen order."""
    return list(dict.fromkeys(elements))


@contextlib.contextmanager
def set_torch_threads(n: int) -> Iterator[None]:
    """Run the block under ``ember.set_num_threads(n)``, restoring the prior count."""
    import ember

    prior = ember.get_num_threads()
    try:
        ember.set_num_threads(n)
        yield
    finally:
        ember.set_num_threads(prior)
