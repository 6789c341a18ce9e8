"""Tensor subclasses that tell the v2 transforms what they hold, like
``torchvision.tv_tensors``: :class:`Image`, :class:`Video`, :class:`Mask`,
:class:`BoundingBoxes` (with :class:`BoundingBoxFormat`) and :class:`KeyPoints`.

Importing this package turns Ember's ``__torch_function__`` dispatch on for the process
(the subclasses override it), so ``import ember.vision`` does not import it.
"""

from ._bounding_boxes import BoundingBoxes, BoundingBoxFormat, KeyPoints, is_rotated_bounding_format
from ._image import Image, Mask, Video
from ._tv_tensor import TVTensor, set_return_type

__all__ = [
    "TVTensor",
    "Image",
    "Video",
    "Mask",
    "BoundingBoxes",
    "BoundingBoxFormat",
    "KeyPoints",
    "is_rotated_bounding_format",
    "set_return_type",
    "wrap",
]


def wrap(wrappee, *, like, **kwargs):
    """``wrappee`` (a tensor) as the same TVTensor subclass as ``like``, with its metadata
    (``format``, ``canvas_size``, ...) unless overridden by ``kwargs``."""
    wrap_method = getattr(type(like), "wrap", None)
    if wrap_method is not None:
        return wrap_method(wrappee, like, **kwargs)
    return wrappee.as_subclass(type(like))
