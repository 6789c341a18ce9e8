"""``torch._higher_order_ops``: control flow over tensors as functions that take functions.

``cond`` (``ember.cond``), ``while_loop``, ``scan``, ``associative_scan`` and ``map`` with
PyTorch's signatures, checks and results, run eagerly: each calls the user's functions on
ordinary tensors, so autograd records what they do (PyTorch's ``while_loop`` has no autograd
and raises; Ember's differentiates through the iterations it ran). Under ``ember.export``
and ``ember.compile`` they trace as the Python they run (``cond`` is captured as one op);
a loop whose trip count depends on tensor values is a data-dependent graph break there.
Each also lives in the submodule PyTorch's tutorials import it from
(``from torch._higher_order_ops.scan import scan``).
"""

from .associative_scan import associative_scan
from .cond import cond  # through the submodule, so importing it later cannot shadow the function
from .map import map
from .scan import scan
from .while_loop import while_loop

__all__ = ["associative_scan", "cond", "map", "scan", "while_loop"]
