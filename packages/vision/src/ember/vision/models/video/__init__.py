"""Video classification models (torchvision's ``models.video``): video ResNets, S3D, Video
Swin Transformers and MViT, with their Kinetics-400 weights enums; the builders register in
the model registry."""

from .mvit import *  # noqa: F403
from .resnet import *  # noqa: F403
from .s3d import *  # noqa: F403
from .swin_transformer import *  # noqa: F403
