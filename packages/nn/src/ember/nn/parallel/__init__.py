"""Parallel wrappers and helpers of ``ember.nn`` (``torch.nn.parallel``).

``DataParallel`` runs its module on one device: Ember does not split a batch across
devices in one process. Multi-device training belongs to ``DistributedDataParallel`` (one
process per device, over :mod:`ember.distributed`). The building blocks of
PyTorch's ``DataParallel`` are here too, with PyTorch's semantics on accelerator devices:
``scatter``/``scatter_kwargs`` and ``gather`` (``scatter_gather``), ``replicate`` and
``parallel_apply``.
"""

from . import scatter_gather
from .data_parallel import DataParallel, data_parallel
from .parallel_apply import parallel_apply
from .replicate import replicate
from .scatter_gather import gather, scatter

__all__ = ["replicate", "scatter", "parallel_apply", "gather", "data_parallel", "DataParallel",
           "DistributedDataParallel"]


def __getattr__(name: str):
    # DistributedDataParallel loads ember.distributed (some 20 ms): only when asked for
    if name in ("DistributedDataParallel", "distributed"):
        import importlib

        distributed = importlib.import_module(f"{__name__}.distributed")
        return distributed if name == "distributed" else distributed.DistributedDataParallel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), "DistributedDataParallel", "distributed"})
