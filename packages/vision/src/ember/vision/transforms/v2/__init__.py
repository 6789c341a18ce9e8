"""Transforms v2, like ``torchvision.transforms.v2``: transforms that take arbitrary samples
(images, videos, masks, bounding boxes, keypoints and anything else, nested in tuples, lists
and dicts) and transform each part consistently, dispatching on the ``ember.vision.tv_tensors``
types.

Importing this module imports ``ember.vision.tv_tensors`` (which turns Ember's
``__torch_function__`` dispatch on for the process); ``import ember.vision`` does not.
"""

from ember.vision.transforms.autoaugment import AutoAugmentPolicy
from ember.vision.transforms.functional import InterpolationMode

from . import functional
from ._augment import JPEG, CutMix, MixUp, RandomErasing
from ._auto_augment import AugMix, AutoAugment, RandAugment, TrivialAugmentWide
from ._color import (
    RGB,
    ColorJitter,
    Grayscale,
    RandomAdjustSharpness,
    RandomAutocontrast,
    RandomChannelPermutation,
    RandomEqualize,
    RandomGrayscale,
    RandomInvert,
    RandomPhotometricDistort,
    RandomPosterize,
    RandomSolarize,
)
from ._container import Compose, RandomApply, RandomChoice, RandomOrder
from ._deprecated import ToTensor
from ._geometry import (
    CenterCrop,
    ElasticTransform,
    FiveCrop,
    Pad,
    RandomAffine,
    RandomCrop,
    RandomHorizontalFlip,
    RandomIoUCrop,
    RandomPerspective,
    RandomResize,
    RandomResizedCrop,
    RandomRotation,
    RandomShortestSize,
    RandomVerticalFlip,
    RandomZoomOut,
    Resize,
    ScaleJitter,
    TenCrop,
)
from ._meta import ClampBoundingBoxes, ClampKeyPoints, ConvertBoundingBoxFormat, SetClampingMode
from ._misc import (
    ConvertImageDtype,
    GaussianBlur,
    GaussianNoise,
    Identity,
    Lambda,
    LinearTransformation,
    Normalize,
    SanitizeBoundingBoxes,
    SanitizeKeyPoints,
    ToDtype,
)
from ._temporal import UniformTemporalSubsample
from ._transform import Transform
from ._type_conversion import PILToTensor, ToImage, ToPILImage, ToPureTensor
from ._utils import (
    check_type,
    get_bounding_boxes,
    get_keypoints,
    has_all,
    has_any,
    query_chw,
    query_size,
)

__all__ = [name for name in dir() if not name.startswith("_")]
