"""``ember.utils.benchmark``: time Ember code, as ``torch.utils.benchmark``.

``Timer`` runs a Python statement under ``timeit`` with warmups, a fixed thread count
(``ember.set_num_threads``) and accelerator synchronization, and returns a ``Measurement``
(median, IQR, significant figures, a repr in PyTorch's format); ``Compare`` prints many
measurements as a table. Pure Python over ``timeit`` and NumPy.

Not offered: C++ statements (``language="c++"`` raises), Valgrind instruction counts
(``Timer.collect_callgrind``, ``CallgrindStats``) and the ``Fuzzer`` family (``Fuzzer``,
``FuzzedParameter``, ``FuzzedTensor``, ``FuzzedSparseTensor``, ``ParameterAlias``).
As in PyTorch, ``Timer.repeat`` and ``Timer.autorange`` point to ``blocked_autorange``.
"""

from .utils.common import (
    Measurement,
    TaskSpec,
    ordered_unique,
    select_unit,
    set_torch_threads,
    trim_sigfig,
    unit_to_english,
)
from .utils.compare import Colorize, Compare
from .utils.timer import Language, Timer, timer

__all__ = ["Colorize", "Compare", "Language", "Measurement", "TaskSpec", "Timer",
           "ordered_unique", "select_unit", "set_torch_threads", "timer", "trim_sigfig",
           "unit_to_english"]
