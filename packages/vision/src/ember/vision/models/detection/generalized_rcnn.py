"""The Generalized R-CNN framework (torchvision's ``models.detection.generalized_rcnn``):
transform, backbone, RPN and RoI heads in sequence."""

from __future__ import annotations

from collections import OrderedDict

import ember
from ember import Tensor, nn

from ._utils import _assert

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

    def _check_targets(self, targets: list[dict[str, Tensor]] | None) -> None:
        if targets is None:
            _assert(False, "targets should not be none when in training mode")
        for target in targets:
            boxes = target["boxes"]
            if isinstance(boxes, Tensor):
                _assert(
                    len(boxes.shape) == 2 and boxes.shape[-1] == 4,
                    f"Expected target boxes to be a tensor of shape [N, 4], got {boxes.shape}.",
                )
            else:
                _assert(False, f"Expected target boxes to be of type Tensor, got {type(boxes)}.")

    @staticmethod
    def _check_degenerate_boxes(targets: list[dict[str, Tensor]]) -> None:
        for target_idx, target in enumerate(targets):
            boxes = target["boxes"]
            degenerate_boxes = boxes[:, 2:] <= boxes[:, :2]
            if degenerate_boxes.any():
                bb_idx = ember.where(degenerate_boxes.any(dim=1))[0][0]
                degen_bb: list[float] = boxes[bb_idx].tolist()
                _assert(
                    False,
                    "All bounding boxes should have positive height and width."
                    f" Found invalid box {degen_bb} for target at index {target_idx}.",
                )

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
            self._check_targets(targets)

        original_image_sizes: list[tuple[int, int]] = []
        for img in images:
            val = img.shape[-2:]
            _assert(
                len(val) == 2,
                "expecting the last two dimensions of the Tensor to be H and W instead got "
                f"{img.shape[-2:]}",
            )
            original_image_sizes.append((val[0], val[1]))

        images, targets = self.transform(images, targets)
        if targets is not None:
            self._check_degenerate_boxes(targets)

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
