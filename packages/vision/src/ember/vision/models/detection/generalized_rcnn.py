"""The Generalized R-CNN framework (torchvision's ``models.detection.generalized_rcnn``):
transform, backbone, RPN and RoI heads in sequence."""

from __future__ import annotations

from collections import OrderedDict

from ember import Tensor, nn

from ._utils import (
    _check_degenerate_boxes,
    _check_training_targets,
    _original_image_sizes,
)

__all__ = ["GeneralizedRCNN"]


class GeneralizedRCNN(nn.Module):
    """
    Main class for Generalized R-CNN.

    Args:
        backbone (nn.Module):
        rpn (nn.Module):
        roi_heads (nn.Module): takes the features + the proposals from the RPN and computes
            detections / masks from it.
        transform (nn.Module): performs the data transformation from the inputs to feed into
            the model
    """

    def __init__(
        self, backbone: nn.Module, rpn: nn.Module, roi_heads: nn.Module, transform: nn.Module
    ) -> None:
        super().__init__()
        self.transform = transform
        self.backbone = backbone
        self.rpn = rpn
        self.roi_heads = roi_heads

    def eager_outputs(
        self, losses: dict[str, Tensor], detections: list[dict[str, Tensor]]
    ) -> dict[str, Tensor] | list[dict[str, Tensor]]:
        if self.training:
            return losses
        return detections

    def forward(
        self, images: list[Tensor], targets: list[dict[str, Tensor]] | None = None
    ) -> dict[str, Tensor] | list[dict[str, Tensor]]:
        """
        Args:
            images (list[Tensor]): images to be processed
            targets (list[dict[str, tensor]]): ground-truth boxes present in the image
                (optional)

        Returns:
            result (list[dict[str, Tensor]] or dict[str, Tensor]): in training, the losses;
            in eval, the detections of each image (``boxes``, ``labels``, ``scores``, and
            ``masks`` / ``keypoints`` for Mask / Keypoint R-CNN).
        """
        if self.training:
            _check_training_targets(targets, with_details=True)

        original_image_sizes = _original_image_sizes(images)

        images, targets = self.transform(images, targets)
        if targets is not None:
            _check_degenerate_boxes(targets)

        features = self.backbone(images.tensors)
        if isinstance(features, Tensor):
            features = OrderedDict([("0", features)])
        proposals, proposal_losses = self.rpn(images, features, targets)
        detections, detector_losses = self.roi_heads(
            features, proposals, images.image_sizes, targets
        )
        detections = self.transform.postprocess(
            detections, images.image_sizes, original_image_sizes
        )

        losses = {}
        losses.update(detector_losses)
        losses.update(proposal_losses)
        return self.eager_outputs(losses, detections)
