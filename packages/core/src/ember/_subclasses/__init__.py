"""``ember._subclasses``: PyTorch's ``torch._subclasses`` (``FakeTensorMode``, ``FakeTensor``)."""

from .fake_tensor import (
    DynamicOutputShapeException,
    FakeTensor,
    FakeTensorMode,
    UnsupportedFakeTensorException,
)

__all__ = ["FakeTensor", "FakeTensorMode", "UnsupportedFakeTensorException",
           "DynamicOutputShapeException"]
