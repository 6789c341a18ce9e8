"""Object detection, instance segmentation and person keypoint detection models
(torchvision's ``models.detection``), with their weights enums; the builders register in the
model registry."""

from .faster_rcnn import *  # noqa: F403
from .fcos import *  # noqa: F403
from .keypoint_rcnn import *  # noqa: F403
from .mask_rcnn import *  # noqa: F403
from .retinanet import *  # noqa: F403
from .ssd import *  # noqa: F403
from .ssdlite import *  # noqa: F403
