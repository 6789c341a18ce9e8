"""``ember.utils.benchmark``: time Ember code, as ``torch.utils.benchmark``.

``Timer`` runs a Python statement under ``timeit`` with warmups, a fixed thread count
(``ember.set_num_threads``) and accelerator synchronization, and returns a ``Measurement``
(median, IQR, significant figures, a repr in PyTorch's format); ``Compare`` prints many
measurements as a table. Pure Python over ``timeit`` and NumPy.

``Fuzzer`` (with ``FuzzedParameter``, ``ParameterAlias``, ``FuzzedTensor``,
``FuzzedSparseTensor`` and the ready-made ``op_fuzzers``) draws benchmark inputs; a seed gives
PyTorch's shapes and layouts (the parameters come from NumPy's ``RandomState`` in PyTorch's
order; the tensor values from Ember's generator).

Not offered: C++ statements (``language="c++"`` raises) and Valgrind instruction counts
(``Timer.collect_callgrind``, ``CallgrindStats``).
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
from .utils.fuzzer import FuzzedParameter, FuzzedTensor, Fuzzer, ParameterAlias
from .utils.sparse_fuzzer import FuzzedSparseTensor
from .utils.timer import Language, Timer, timer

__all__ = ["Colorize", "Compare", "FuzzedParameter", "FuzzedSparseTensor", "FuzzedTensor",
           "Fuzzer", "Language", "Measurement", "ParameterAlias", "TaskSpec", "Timer",
           "ordered_unique", "select_unit", "set_torch_threads", "timer", "trim_sigfig",
           "unit_to_english"]
