"""What the segmentation models share (torchvision's ``models.segmentation._utils``).

:class:`_SimpleSegmentationModel`, the backbone / classifier / auxiliary classifier skeleton of
FCN and DeepLabV3; and what their builders and weights enums share: the rows of the checkpoint
tables and the resolution of the builders' ``weights`` / ``weights_backbone`` / ``num_classes``
/ ``aux_loss``. (The Pascal VOC category names are in ``models._meta``, the
``SemanticSegmentation`` preset in ``transforms._presets``, as in torchvision.)
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

from ember import Tensor, nn
from ember.nn import functional as F

from .._api import Weights, WeightsEnum, _preset
from .._meta import _MODELS_URL, _VOC_CATEGORIES
from .._utils import _ovewrite_value_param

M = TypeVar("M", bound=nn.Module)
Fn = TypeVar("Fn", bound=Callable[..., Any])

# The 20 Pascal VOC classes and the background, in class-index order.


class _SimpleSegmentationModel(nn.Module):
    """``backbone`` features ``"out"`` (and ``"aux"``) through ``classifier`` (and
    ``aux_classifier``), each upsampled bilinearly to the input's size."""

    def __init__(
        self, backbone: nn.Module, classifier: nn.Module, aux_classifier: nn.Module | None = None
    ) -> None:
        super().__init__()
        self.backbone = backbone
        self.classifier = classifier
        self.aux_classifier = aux_classifier

    def forward(self, x: Tensor) -> dict[str, Tensor]:
        input_shape = x.shape[-2:]
        # contract: the backbone returns a dict of tensors
        features = self.backbone(x)

        result = OrderedDict()
        x = self.classifier(features["out"])
        result["out"] = F.interpolate(x, size=input_shape, mode="bilinear", align_corners=False)

        if self.aux_classifier is not None:
            x = self.aux_classifier(features["aux"])
            result["aux"] = F.interpolate(x, size=input_shape, mode="bilinear", align_corners=False)
        return result


_COCO_VOC_DOCS = """
        These weights were trained on a subset of COCO, using only the 20 categories that are present in the Pascal VOC
        dataset.
    """  # noqa: E501
_RECIPE = "https://github.com/pytorch/vision/tree/main/references/segmentation#{}"


def _coco_voc_weights(
    file: str,
    num_params: int,
    miou: float,
    pixel_acc: float,
    ops: float,
    file_size: float,
    recipe: str,
    _docs: str = _COCO_VOC_DOCS,
) -> Weights:
    """A checkpoint of ``download.pytorch.org/models/<file>.pth`` trained on COCO with the VOC
    labels: its parameter count, ``_metrics`` (mIoU, pixel accuracy), GFLOPS (``_ops``), size in
    MB (``_file_size``) and the anchor of its recipe in torchvision's segmentation references."""
    return Weights(
        url=_MODELS_URL.format(file),
        transforms=_preset("SemanticSegmentation", resize_size=520),
        meta={
            "categories": _VOC_CATEGORIES,
            "min_size": (1, 1),
            "_docs": _docs,
            "num_params": num_params,
            "recipe": _RECIPE.format(recipe),
            "_metrics": {"COCO-val2017-VOC-labels": {"miou": miou, "pixel_acc": pixel_acc}},
            "_ops": ops,
            "_file_size": file_size,
        },
    )


def _resolve_params(
    weights: WeightsEnum | None,
    weights_backbone: WeightsEnum | None,
    num_classes: int | None,
    aux_loss: bool | None,
    *,
    has_aux: bool = True,
) -> tuple[WeightsEnum | None, int, bool | None]:
    """``(weights_backbone, num_classes, aux_loss)`` as torchvision's builders resolve them.

    A checkpoint replaces the backbone's weights and fixes ``num_classes`` to its categories
    and ``aux_loss`` (where the model has one) to True, a caller's other value being an error;
    without one, ``num_classes`` defaults to 21 (VOC).
    """
    if weights is not None:
        weights_backbone = None
        num_classes = _ovewrite_value_param(
            "num_classes", num_classes, len(weights.meta["categories"])
        )
        if has_aux:
            aux_loss = _ovewrite_value_param("aux_loss", aux_loss, True)
    elif num_classes is None:
        num_classes = 21
    return weights_backbone, num_classes, aux_loss


def _load_weights(model: M, weights: WeightsEnum | None, progress: bool) -> M:
    """``model``, loaded with the checkpoint ``weights`` when it is given."""
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


def _stage_indices(features: nn.Sequential) -> list[int]:
    """Indices of a MobileNetV3 ``features``' stages: the first conv (C0), the strided blocks
    (C1 ... Cn-1) and the last conv (Cn)."""
    strided = [i for i, b in enumerate(features) if getattr(b, "_is_cn", False)]
    return [0, *strided, len(features) - 1]


_ARGS_DOC = """

    Args:
        weights (:class:`~ember.vision.models.segmentation.{weights}`, optional): The
            pretrained weights to use. See
            :class:`~ember.vision.models.segmentation.{weights}` below for more details, and
            possible values. By default, no pre-trained weights are used.
        progress (bool, optional): If True, displays a progress bar of the download to stderr.
            Default is True.
        num_classes (int, optional): number of output classes of the model (including the
            background).{aux_loss}
        weights_backbone (:class:`~ember.vision.models.{backbone}`, optional): The pretrained
            weights for the backbone.
        **kwargs: unused.

    .. autoclass:: ember.vision.models.segmentation.{weights}
        :members:
"""
_AUX_LOSS_DOC = "\n        aux_loss (bool, optional): If True, it uses an auxiliary loss."


def _args_doc(weights: str, backbone: str, aux_loss: bool = True) -> Callable[[Fn], Fn]:
    """Complete a segmentation builder's docstring with the ``Args`` the builders share."""

    def decorate(fn: Fn) -> Fn:
        fn.__doc__ = (fn.__doc__ or "") + _ARGS_DOC.format(
            weights=weights, backbone=backbone, aux_loss=_AUX_LOSS_DOC if aux_loss else ""
        )
        return fn

    return decorate
