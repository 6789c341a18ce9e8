"""``torch._C._functorch``: the transform (interpreter) stack that libraries inspect.

PyTorch's functorch keeps one stack of active transforms per thread, each an interpreter
with a level (its depth, from 1) and a kind (``TransformType.Vmap``, ``Grad``, ``Jvp``,
``Functionalize``). Libraries read it to skip work that cannot run under a transform
(kornia's checks ask ``torch._C._are_functorch_transforms_active()`` and look for a ``Vmap``
level). Ember's transforms push an entry here while their function runs: ``vmap`` (with its
batch size and randomness), ``grad``/``vjp``/``jacrev`` (Grad), ``jvp``/``jacfwd``/
``linearize`` (Jvp) and ``functionalize``; the queries below answer from it as PyTorch's do.

A ``BatchedTensor`` is a functorch-wrapped tensor: ``maybe_get_level`` gives its vmap's
level on this stack, ``maybe_get_bdim`` its batch dimension (Ember keeps it first: 0) and
``get_unwrapped`` the tensor below the wrapper. Ember's ``grad`` does not wrap tensors, so a
tensor inside it is not reported as wrapped (PyTorch wraps it in a grad-tracking tensor).
"""

from __future__ import annotations

import enum
import threading

__all__ = ["TransformType", "RandomnessType", "CInterpreter", "CVmapInterpreterPtr",
           "get_interpreter_stack", "peek_interpreter_stack", "current_level",
           "maybe_current_level", "is_batchedtensor", "is_functorch_wrapped_tensor",
           "is_legacy_batchedtensor", "is_gradtrackingtensor", "is_functionaltensor",
           "get_unwrapped", "maybe_get_level", "maybe_get_bdim", "are_transforms_active"]


class TransformType(enum.IntEnum):
    Torch = 0
    Vmap = 1
    Grad = 2
    Jvp = 3
    Functionalize = 4


class RandomnessType(enum.IntEnum):
    Error = 0
    Same = 1
    Different = 2


_RANDOMNESS = {"error": RandomnessType.Error, "same": RandomnessType.Same,
               "different": RandomnessType.Different}


class CInterpreter:
    """One active transform: its kind (``key()``) and level (``level()``)."""

    __slots__ = ("_key", "_level", "_batch_size", "_randomness", "vmap_level")

    def __init__(self, key: TransformType, level: int, batch_size=None, randomness=None,
                 vmap_level=None):
        self._key, self._level = key, level
        self._batch_size, self._randomness = batch_size, randomness
        self.vmap_level = vmap_level  # Ember's own numbering of vmap levels

    def key(self) -> TransformType:
        return self._key

    def level(self) -> int:
        return self._level

    def __repr__(self) -> str:
        return f"CInterpreter({self._key.name}, level={self._level})"


class CVmapInterpreterPtr:
    """A ``Vmap`` interpreter's batch size and randomness (PyTorch's accessor class)."""

    def __init__(self, interpreter: CInterpreter):
        if interpreter.key() is not TransformType.Vmap:
            raise RuntimeError("CVmapInterpreterPtr: the interpreter is not a Vmap one")
        self._i = interpreter

    def key(self) -> TransformType:
        return self._i.key()

    def level(self) -> int:
        return self._i.level()

    def batchSize(self) -> int:
        return self._i._batch_size

    def randomness(self) -> RandomnessType:
        return _RANDOMNESS[self._i._randomness]


class _Stack(threading.local):
    def __init__(self):
        self.entries: list = []


_STACK = _Stack()


def push(key: TransformType, batch_size=None, randomness=None, vmap_level=None) -> None:
    """Enter a transform on this thread (its ``pop`` follows in a ``finally``)."""
    entries = _STACK.entries
    entries.append(CInterpreter(key, len(entries) + 1, batch_size, randomness, vmap_level))


def pop() -> None:
    _STACK.entries.pop()


def are_transforms_active() -> bool:
    """``torch._C._are_functorch_transforms_active()``."""
    return bool(_STACK.entries)


def get_interpreter_stack():
    """The active transforms, outermost first, or None when there are none."""
    entries = _STACK.entries
    return list(entries) if entries else None


def peek_interpreter_stack():
    """The innermost active transform, or None."""
    entries = _STACK.entries
    return entries[-1] if entries else None


def maybe_current_level():
    entries = _STACK.entries
    return entries[-1].level() if entries else None


def current_level() -> int:
    entries = _STACK.entries
    if not entries:
        raise RuntimeError("current_level: no functorch transform is active")
    return entries[-1].level()


def _batched_type():
    from ._batched import BatchedTensor

    return BatchedTensor


def is_batchedtensor(tensor) -> bool:
    return type(tensor) is _batched_type()


def is_functorch_wrapped_tensor(tensor) -> bool:
    return is_batchedtensor(tensor)


def is_legacy_batchedtensor(tensor) -> bool:
    return False


def is_gradtrackingtensor(tensor) -> bool:
    return False


def is_functionaltensor(tensor) -> bool:
    return False


def get_unwrapped(tensor):
    """The tensor below a functorch wrapper (the batch dimension included)."""
    if not is_batchedtensor(tensor):
        raise RuntimeError("get_unwrapped: the tensor is not wrapped by a functorch transform")
    return tensor._value


def maybe_get_level(tensor) -> int:
    """The level (on the interpreter stack) of the vmap a tensor is batched at, else -1."""
    if not is_batchedtensor(tensor):
        return -1
    for entry in _STACK.entries:
        if entry.vmap_level == tensor._level:
            return entry.level()
    return -1


def maybe_get_bdim(tensor) -> int:
    """The batch dimension of a batched tensor (Ember keeps it first), else -1."""
    return 0 if is_batchedtensor(tensor) else -1
