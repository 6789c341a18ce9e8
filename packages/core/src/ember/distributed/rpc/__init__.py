"""``torch.distributed.rpc``, as a PyTorch build without the RPC framework has it:
``is_available()`` is False and nothing else is defined.

PyTorch builds its RPC agent (TensorPipe) only on some platforms; elsewhere this module
imports and says so through ``is_available()``, which is what libraries check
(torch_geometric imports it at import time and asks ``hasattr(rpc, "api")``). Ember has no
RPC agent: its distributed package runs collectives over MPI (``ember.distributed``), and
remote calls, ``RRef`` and distributed autograd are not provided.
"""

__all__ = ["is_available"]


def is_available() -> bool:
    """Whether the RPC framework is built in: never in Ember."""
    return False
