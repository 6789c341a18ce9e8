"""Keep NumPy's floating-point warnings silent inside Ember's kernels, as PyTorch is.

NumPy warns (``RuntimeWarning: divide by zero encountered in divide``) where PyTorch computes
inf and nan silently. Ember ignores these warnings when they are attributed to its own
modules, with a warnings filter, so that NumPy keeps warning in the user's own code. A filter
only works while no other filter in front of it matches: ``warnings.simplefilter("error")``,
``catch_warnings(record=True)`` with ``simplefilter("always")``, or pytest's
``filterwarnings = error`` would turn an inf inside a kernel into an exception or a printed
warning. Every change to the filters through the ``warnings`` module calls its
``_filters_mutated`` hook; ``install`` wraps that hook so that Ember's filter moves back to
the front after each change. Where the hook is missing (another Python's ``warnings``), the
filter is installed once, as before. ``np.errstate`` around every op would be exact, but costs
0.2-0.8 us a call, about as much as a small op.
"""

from __future__ import annotations

import re
import warnings

__all__ = ["install", "FILTER"]

_MESSAGE = r"(divide by zero|invalid value|overflow|underflow) encountered"
_MODULE = r"ember(\.|$)"
#: the filter, as ``warnings.filters`` holds it
FILTER = ("ignore", re.compile(_MESSAGE, re.I), RuntimeWarning, re.compile(_MODULE), 0)


def _front() -> None:
    """Put the filter first in the current ``warnings.filters`` (a no-op when it is)."""
    filters = warnings.filters
    if filters and filters[0] == FILTER:
        return
    try:
        filters.remove(FILTER)
    except ValueError:
        pass
    filters.insert(0, FILTER)


def install() -> None:
    """Install the filter and keep it first (idempotent)."""
    warnings.filterwarnings("ignore", message=_MESSAGE, category=RuntimeWarning,
                            module=_MODULE)
    # Python 3.11/3.12 name the hook _filters_mutated, 3.13 _filters_mutated_lock_held
    for name in ("_filters_mutated", "_filters_mutated_lock_held"):
        hook = getattr(warnings, name, None)
        if hook is not None and not getattr(hook, "_ember_front", False):
            setattr(warnings, name, _wrap(hook))


def _wrap(hook):
    def mutated():
        _front()
        hook()

    mutated._ember_front = True  # type: ignore[attr-defined]
    mutated.__wrapped__ = hook  # type: ignore[attr-defined]
    return mutated
