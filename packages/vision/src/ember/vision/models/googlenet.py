"""GoogLeNet (Inception v1) (torchvision's ``models.googlenet``).

Ported from torchvision (BSD-3-Clause); module names and state_dict keys match.
"""

import warnings
from collections import namedtuple
from collections.abc import Callable
from typing import Any

import ember
from ember import Tensor, nn
from ember.nn import functional as F

from ._api import WeightsEnum
from ._meta import _classification, _imagenet_weights
from ._utils import _model_builder, _ovewrite_named_param

__all__ = ["GoogLeNet", "GoogLeNetOutputs", "_GoogLeNetOutputs", "GoogLeNet_Weights", "googlenet"]


GoogLeNetOutputs = namedtuple("GoogLeNetOutputs", ["logits", "aux_logits2", "aux_logits1"])
GoogLeNetOutputs.__annotations__ = {
    "logits": Tensor,
    "aux_logits2": Tensor | None,
    "aux_logits1": Tensor | None,
}

# _GoogLeNetOutputs set here for backwards compat
_GoogLeNetOutputs = GoogLeNetOutputs


def _transform_input(x: Tensor) -> Tensor:
    """Map an input normalised with ImageNet's mean/std to the [-1, 1] normalisation the
    ported Inception checkpoints were trained with (GoogLeNet and Inception v3)."""
    x_ch0 = ember.unsqueeze(x[:, 0], 1) * (0.229 / 0.5) + (0.485 - 0.5) / 0.5
    x_ch1 = ember.unsqueeze(x[:, 1], 1) * (0.224 / 0.5) + (0.456 - 0.5) / 0.5
    x_ch2 = ember.unsqueeze(x[:, 2], 1) * (0.225 / 0.5) + (0.406 - 0.5) / 0.5
    return ember.cat((x_ch0, x_ch1, x_ch2), 1)


def _default_init_warning(model: str) -> None:
    warnings.warn(
        f"The default weight initialization of {model} will be changed in future releases of "
        "torchvision. If you wish to keep the old behavior (which leads to long initialization "
        "times due to scipy/scipy#11299), please set init_weights=True.",
        FutureWarning,
        stacklevel=3,
    )


def _init_truncated_normal(model: nn.Module, default_std: float) -> None:
    """torchvision's initialisation of GoogLeNet and Inception v3: convs and linears from a
    normal truncated to [-2, 2] with std ``m.stddev`` where a module sets it, else
    ``default_std``; batch norms ones and zeros."""
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            stddev = float(m.stddev) if hasattr(m, "stddev") else default_std
            nn.init.trunc_normal_(m.weight, mean=0.0, std=stddev, a=-2, b=2)
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.constant_(m.weight, 1)
            nn.init.constant_(m.bias, 0)


class GoogLeNet(nn.Module):
    __constants__ = ["aux_logits", "transform_input"]

    def __init__(
        self,
        num_classes: int = 1000,
        aux_logits: bool = True,
        transform_input: bool = False,
        init_weights: bool | None = None,
        blocks: list[Callable[..., nn.Module]] | None = None,
        dropout: float = 0.2,
        dropout_aux: float = 0.7,
    ) -> None:
        super().__init__()
        if blocks is None:
            blocks = [BasicConv2d, Inception, InceptionAux]
        if init_weights is None:
            _default_init_warning("GoogleNet")
            init_weights = True
        if len(blocks) != 3:
            raise ValueError(f"blocks length should be 3 instead of {len(blocks)}")
        conv_block, inception_block, inception_aux_block = blocks

        self.aux_logits = aux_logits
        self.transform_input = transform_input

        self.conv1 = conv_block(3, 64, kernel_size=7, stride=2, padding=3)
        self.maxpool1 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.conv2 = conv_block(64, 64, kernel_size=1)
        self.conv3 = conv_block(64, 192, kernel_size=3, padding=1)
        self.maxpool2 = nn.MaxPool2d(3, stride=2, ceil_mode=True)

        self.inception3a = inception_block(192, 64, 96, 128, 16, 32, 32)
        self.inception3b = inception_block(256, 128, 128, 192, 32, 96, 64)
        self.maxpool3 = nn.MaxPool2d(3, stride=2, ceil_mode=True)

        self.inception4a = inception_block(480, 192, 96, 208, 16, 48, 64)
        self.inception4b = inception_block(512, 160, 112, 224, 24, 64, 64)
        self.inception4c = inception_block(512, 128, 128, 256, 24, 64, 64)
        self.inception4d = inception_block(512, 112, 144, 288, 32, 64, 64)
        self.inception4e = inception_block(528, 256, 160, 320, 32, 128, 128)
        self.maxpool4 = nn.MaxPool2d(2, stride=2, ceil_mode=True)

        self.inception5a = inception_block(832, 256, 160, 320, 32, 128, 128)
        self.inception5b = inception_block(832, 384, 192, 384, 48, 128, 128)

        if aux_logits:
            self.aux1 = inception_aux_block(512, num_classes, dropout=dropout_aux)
            self.aux2 = inception_aux_block(528, num_classes, dropout=dropout_aux)
        else:
            self.aux1 = None
            self.aux2 = None

        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(p=dropout)
        self.fc = nn.Linear(1024, num_classes)

        if init_weights:
            _init_truncated_normal(self, 0.01)

    def _transform_input(self, x: Tensor) -> Tensor:
        return _transform_input(x) if self.transform_input else x

    def _forward(self, x: Tensor) -> tuple[Tensor, Tensor | None, Tensor | None]:
        # N x 3 x 224 x 224
        x = self.conv1(x)
        x = self.maxpool1(x)
        x = self.conv2(x)
        x = self.conv3(x)
        x = self.maxpool2(x)
        # N x 192 x 28 x 28
        x = self.inception3a(x)
        x = self.inception3b(x)
        x = self.maxpool3(x)
        # N x 480 x 14 x 14
        x = self.inception4a(x)
        # N x 512 x 14 x 14
        aux1: Tensor | None = None
        if self.aux1 is not None and self.training:
            aux1 = self.aux1(x)

        x = self.inception4b(x)
        x = self.inception4c(x)
        x = self.inception4d(x)
        # N x 528 x 14 x 14
        aux2: Tensor | None = None
        if self.aux2 is not None and self.training:
            aux2 = self.aux2(x)

        x = self.inception4e(x)
        x = self.maxpool4(x)
        # N x 832 x 7 x 7
        x = self.inception5a(x)
        x = self.inception5b(x)
        # N x 1024 x 7 x 7
        x = self.avgpool(x)
        x = ember.flatten(x, 1)
        x = self.dropout(x)
        x = self.fc(x)
        # N x 1000 (num_classes)
        return x, aux2, aux1

    def eager_outputs(self, x: Tensor, aux2: Tensor, aux1: Tensor | None) -> GoogLeNetOutputs:
        """``GoogLeNetOutputs`` in training mode with the auxiliary heads, else the logits."""
        if self.training and self.aux_logits:
            return _GoogLeNetOutputs(x, aux2, aux1)
        return x  # type: ignore[return-value]

    def forward(self, x: Tensor) -> GoogLeNetOutputs:
        x = self._transform_input(x)
        x, aux2, aux1 = self._forward(x)
        return self.eager_outputs(x, aux2, aux1)


class Inception(nn.Module):
    def __init__(
        self,
        in_channels: int,
        ch1x1: int,
        ch3x3red: int,
        ch3x3: int,
        ch5x5red: int,
        ch5x5: int,
        pool_proj: int,
        conv_block: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        if conv_block is None:
            conv_block = BasicConv2d
        self.branch1 = conv_block(in_channels, ch1x1, kernel_size=1)

        self.branch2 = nn.Sequential(
            conv_block(in_channels, ch3x3red, kernel_size=1),
            conv_block(ch3x3red, ch3x3, kernel_size=3, padding=1),
        )

        self.branch3 = nn.Sequential(
            conv_block(in_channels, ch5x5red, kernel_size=1),
            # Here, kernel_size=3 instead of kernel_size=5 is a known bug.
            # Please see https://github.com/pytorch/vision/issues/906 for details.
            conv_block(ch5x5red, ch5x5, kernel_size=3, padding=1),
        )

        self.branch4 = nn.Sequential(
            nn.MaxPool2d(kernel_size=3, stride=1, padding=1, ceil_mode=True),
            conv_block(in_channels, pool_proj, kernel_size=1),
        )

    def _forward(self, x: Tensor) -> list[Tensor]:
        return [self.branch1(x), self.branch2(x), self.branch3(x), self.branch4(x)]

    def forward(self, x: Tensor) -> Tensor:
        return ember.cat(self._forward(x), 1)


class InceptionAux(nn.Module):
    def __init__(
        self,
        in_channels: int,
        num_classes: int,
        conv_block: Callable[..., nn.Module] | None = None,
        dropout: float = 0.7,
    ) -> None:
        super().__init__()
        if conv_block is None:
            conv_block = BasicConv2d
        self.conv = conv_block(in_channels, 128, kernel_size=1)

        self.fc1 = nn.Linear(2048, 1024)
        self.fc2 = nn.Linear(1024, num_classes)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x: Tensor) -> Tensor:
        # aux1: N x 512 x 14 x 14, aux2: N x 528 x 14 x 14
        x = F.adaptive_avg_pool2d(x, (4, 4))
        x = self.conv(x)
        # N x 128 x 4 x 4
        x = ember.flatten(x, 1)
        x = F.relu(self.fc1(x), inplace=True)
        x = self.dropout(x)
        return self.fc2(x)


class BasicConv2d(nn.Module):
    """Convolution without bias, batch norm (eps 0.001) and ReLU."""

    def __init__(self, in_channels: int, out_channels: int, **kwargs: Any) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, bias=False, **kwargs)
        self.bn = nn.BatchNorm2d(out_channels, eps=0.001)

    def forward(self, x: Tensor) -> Tensor:
        x = self.conv(x)
        x = self.bn(x)
        return F.relu(x, inplace=True)


# Weights: torchvision's checkpoint, preset and metadata. Row: file, num_params, acc@1, acc@5,
# GFLOPS, MB.
class GoogLeNet_Weights(WeightsEnum):
    IMAGENET1K_V1 = _imagenet_weights(
        "googlenet-1378be20", 6624904, 69.778, 89.530, 1.498, 49.731,
        transforms=_classification(224),
        min_size=(15, 15),
        recipe="https://github.com/pytorch/vision/tree/main/references/classification#googlenet",
        _docs="""These weights are ported from the original paper.""",
    )  # fmt: skip
    DEFAULT = IMAGENET1K_V1


@_model_builder()
def googlenet(
    *, weights: GoogLeNet_Weights | None = None, progress: bool = True, **kwargs: Any
) -> GoogLeNet:
    """GoogLeNet (Inception v1) model architecture from
    `Going Deeper with Convolutions <http://arxiv.org/abs/1409.4842>`_.

    With ``weights``, ``transform_input`` defaults to True and the auxiliary heads (not
    pretrained) are dropped unless ``aux_logits=True`` is passed."""
    original_aux_logits = kwargs.get("aux_logits", False)
    if weights is not None:
        if "transform_input" not in kwargs:
            _ovewrite_named_param(kwargs, "transform_input", True)
        _ovewrite_named_param(kwargs, "aux_logits", True)
        _ovewrite_named_param(kwargs, "init_weights", False)
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))

    model = GoogLeNet(**kwargs)

    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
        if not original_aux_logits:
            model.aux_logits = False
            model.aux1 = None
            model.aux2 = None
        else:
            warnings.warn(
                "auxiliary heads in the pretrained googlenet model are NOT pretrained, so make "
                "sure to train them",
                stacklevel=2,
            )

    return model
