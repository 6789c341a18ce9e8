"""``torch._dynamo.eval_frame``: the class of a compiled module, for ``isinstance`` checks.

``ember.compile(model)`` returns an ``OptimizedModule`` made as a subclass of the model's
Module base class (``ember._compile``: core does not import ember.nn). Libraries test
``isinstance(model, torch._dynamo.eval_frame.OptimizedModule)`` (HuggingFace accelerate
unwraps compiled models so); this ``OptimizedModule`` answers for every such class.
"""

from __future__ import annotations

__all__ = ["OptimizedModule"]


class _OptimizedModuleMeta(type):
    def __instancecheck__(cls, instance) -> bool:
        from .._compile import _OPTIMIZED

        return any(isinstance(instance, made) for _, made in _OPTIMIZED)

    def __subclasscheck__(cls, subclass) -> bool:
        from .._compile import _OPTIMIZED

        return subclass is cls or any(issubclass(subclass, made) for _, made in _OPTIMIZED)


class OptimizedModule(metaclass=_OptimizedModuleMeta):
    """What ``ember.compile`` returns for a module: ``_orig_mod`` is the model."""
