"""``Stateful``: objects that save and load themselves in a checkpoint (PyTorch's
``torch.distributed.checkpoint.stateful``)."""

from __future__ import annotations

from typing import Any, Protocol, TypeVar, runtime_checkable

__all__ = ["Stateful", "StatefulT"]


@runtime_checkable
class Stateful(Protocol):
    """Anything with ``state_dict()`` and ``load_state_dict(state_dict)``: ``save`` stores its
    ``state_dict()`` and ``load`` fills that in place and hands it back to
    ``load_state_dict``."""

    def state_dict(self) -> dict[str, Any]:
        """The object's state (tensors are loaded into in place)."""
        ...

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the object from a loaded ``state_dict``."""
        ...


StatefulT = TypeVar("StatefulT", bound=Stateful)
