"""The Region Proposal Network (torchvision's ``models.detection.rpn``)."""

from __future__ import annotations

import ember
from ember import Tensor, nn
from ember.nn import functional as F

from ...ops import Conv2dNormActivation
from ...ops import boxes as box_ops
from . import _utils as det_utils
from .anchor_utils import AnchorGenerator
from .image_list import ImageList

__all__ = ["AnchorGenerator", "RPNHead", "RegionProposalNetwork"]


class RPNHead(nn.Module):
    """The RPN's head: ``conv_depth`` 3x3 conv + ReLU shared by the levels, then a 1x1 conv
    to the objectness logits (``cls_logits``) and one to the box deltas (``bbox_pred``) of
    ``num_anchors`` anchors per location.

    Args:
        in_channels (int): number of channels of the input feature
        num_anchors (int): number of anchors to be predicted
        conv_depth (int, optional): number of convolutions
    """

    _version = 2

    def __init__(self, in_channels: int, num_anchors: int, conv_depth: int = 1) -> None:
        super().__init__()
        self.conv = nn.Sequential(
            *[
                Conv2dNormActivation(in_channels, in_channels, kernel_size=3, norm_layer=None)
                for _ in range(conv_depth)
            ]
        )
        self.cls_logits = nn.Conv2d(in_channels, num_anchors, kernel_size=1, stride=1)
        self.bbox_pred = nn.Conv2d(in_channels, num_anchors * 4, kernel_size=1, stride=1)

        for layer in self.modules():
            if isinstance(layer, nn.Conv2d):
                nn.init.normal_(layer.weight, std=0.01)
                if layer.bias is not None:
                    nn.init.constant_(layer.bias, 0)

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ):
        # version 1 checkpoints hold a bare conv: "conv.weight" is now "conv.0.0.weight"
        version = local_metadata.get("version", None)
        if version is None or version < 2:
            for kind in ["weight", "bias"]:
                old_key = f"{prefix}conv.{kind}"
                if old_key in state_dict:
                    state_dict[f"{prefix}conv.0.0.{kind}"] = state_dict.pop(old_key)
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )

    def forward(self, x: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
        logits = []
        bbox_reg = []
        for feature in x:
            t = self.conv(feature)
            logits.append(self.cls_logits(t))
            bbox_reg.append(self.bbox_pred(t))
        return logits, bbox_reg


def permute_and_flatten(layer: Tensor, N: int, A: int, C: int, H: int, W: int) -> Tensor:
    """``(N, A * C, H, W)`` predictions as ``(N, H * W * A, C)``."""
    layer = layer.view(N, -1, C, H, W).permute(0, 3, 4, 1, 2)
    return layer.reshape(N, -1, C)


def concat_box_prediction_layers(
    box_cls: list[Tensor], box_regression: list[Tensor]
) -> tuple[Tensor, Tensor]:
    """The per-level class logits and box deltas, flattened and concatenated over the levels
    into ``(N * sum(H*W*A), C)`` and ``(N * sum(H*W*A), 4)``, in the anchors' order."""
    box_cls_flattened = []
    box_regression_flattened = []
    for cls_per_level, regression_per_level in zip(box_cls, box_regression):
        N, AxC, H, W = cls_per_level.shape
        A = regression_per_level.shape[1] // 4
        C = AxC // A
        box_cls_flattened.append(permute_and_flatten(cls_per_level, N, A, C, H, W))
        box_regression_flattened.append(permute_and_flatten(regression_per_level, N, A, 4, H, W))
    box_cls = ember.cat(box_cls_flattened, dim=1).flatten(0, -2)
    box_regression = ember.cat(box_regression_flattened, dim=1).reshape(-1, 4)
    return box_cls, box_regression


class RegionProposalNetwork(nn.Module):
    """Implements Region Proposal Network (RPN).

    Args:
        anchor_generator (AnchorGenerator): module that generates the anchors for a set of
            feature maps.
        head (nn.Module): module that computes the objectness and regression deltas
        fg_iou_thresh (float): minimum IoU between the anchor and the GT box so that they can
            be considered as positive during training of the RPN.
        bg_iou_thresh (float): maximum IoU between the anchor and the GT box so that they can
            be considered as negative during training of the RPN.
        batch_size_per_image (int): number of anchors that are sampled during training of the
            RPN for computing the loss
        positive_fraction (float): proportion of positive anchors in a mini-batch during
            training of the RPN
        pre_nms_top_n (Dict[str, int]): number of proposals to keep before applying NMS, with
            keys ``"training"`` and ``"testing"``
        post_nms_top_n (Dict[str, int]): number of proposals to keep after applying NMS, with
            keys ``"training"`` and ``"testing"``
        nms_thresh (float): NMS threshold used for postprocessing the RPN proposals
        score_thresh (float): only return proposals with an objectness score greater than
            score_thresh
    """

    def __init__(
        self,
        anchor_generator: AnchorGenerator,
        head: nn.Module,
        fg_iou_thresh: float,
        bg_iou_thresh: float,
        batch_size_per_image: int,
        positive_fraction: float,
        pre_nms_top_n: dict[str, int],
        post_nms_top_n: dict[str, int],
        nms_thresh: float,
        score_thresh: float = 0.0,
    ) -> None:
        super().__init__()
        self.anchor_generator = anchor_generator
        self.head = head
        self.box_coder = det_utils.BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))

        # used during training
        self.box_similarity = box_ops.box_iou
        self.proposal_matcher = det_utils.Matcher(
            fg_iou_thresh, bg_iou_thresh, allow_low_quality_matches=True
        )
        self.fg_bg_sampler = det_utils.BalancedPositiveNegativeSampler(
            batch_size_per_image, positive_fraction
        )
        # used during testing
        self._pre_nms_top_n = pre_nms_top_n
        self._post_nms_top_n = post_nms_top_n
        self.nms_thresh = nms_thresh
        self.score_thresh = score_thresh
        self.min_size = 1e-3

    def pre_nms_top_n(self) -> int:
        return self._pre_nms_top_n["training" if self.training else "testing"]

    def post_nms_top_n(self) -> int:
        return self._post_nms_top_n["training" if self.training else "testing"]

    def assign_targets_to_anchors(
        self, anchors: list[Tensor], targets: list[dict[str, Tensor]]
    ) -> tuple[list[Tensor], list[Tensor]]:
        """Per image, the anchors' labels (1 object, 0 background, -1 ignored) and the
        ground-truth box matched to each."""
        labels = []
        matched_gt_boxes = []
        for anchors_per_image, targets_per_image in zip(anchors, targets):
            gt_boxes = targets_per_image["boxes"]
            if gt_boxes.numel() == 0:
                # a background image: every anchor is negative
                device = anchors_per_image.device
                matched = ember.zeros(anchors_per_image.shape, dtype=ember.float32, device=device)
                labels_per_image = ember.zeros(
                    (anchors_per_image.shape[0],), dtype=ember.float32, device=device
                )
            else:
                match_quality_matrix = self.box_similarity(gt_boxes, anchors_per_image)
                matched_idxs = self.proposal_matcher(match_quality_matrix)
                # the matched boxes of the negatives are ignored: clamp their index to 0
                matched = gt_boxes[matched_idxs.clamp(min=0)]

                labels_per_image = (matched_idxs >= 0).to(dtype=ember.float32)
                bg_indices = matched_idxs == self.proposal_matcher.BELOW_LOW_THRESHOLD
                labels_per_image[bg_indices] = 0.0
                inds_to_discard = matched_idxs == self.proposal_matcher.BETWEEN_THRESHOLDS
                labels_per_image[inds_to_discard] = -1.0

            labels.append(labels_per_image)
            matched_gt_boxes.append(matched)
        return labels, matched_gt_boxes

    def _get_top_n_idx(self, objectness: Tensor, num_anchors_per_level: list[int]) -> Tensor:
        """The indices of the ``pre_nms_top_n`` highest objectness of each level, per image."""
        r = []
        offset = 0
        for ob in objectness.split(num_anchors_per_level, 1):
            num_anchors = ob.shape[1]
            pre_nms_top_n = det_utils._topk_min(ob, self.pre_nms_top_n(), 1)
            _, top_n_idx = ob.topk(pre_nms_top_n, dim=1)
            r.append(top_n_idx + offset)
            offset += num_anchors
        return ember.cat(r, dim=1)

    def filter_proposals(
        self,
        proposals: Tensor,
        objectness: Tensor,
        image_shapes: list[tuple[int, int]],
        num_anchors_per_level: list[int],
    ) -> tuple[list[Tensor], list[Tensor]]:
        """Per image: the best proposals of each level, clipped to the image, without the
        tiny and low-scoring ones, after NMS within each level, at most ``post_nms_top_n``;
        and their objectness probabilities."""
        num_images = proposals.shape[0]
        device = proposals.device
        # the proposals are not back-propagated through
        objectness = objectness.detach().reshape(num_images, -1)

        levels = ember.cat(
            [
                ember.full((n,), idx, dtype=ember.int64, device=device)
                for idx, n in enumerate(num_anchors_per_level)
            ],
            0,
        )
        levels = levels.reshape(1, -1).expand_as(objectness)

        top_n_idx = self._get_top_n_idx(objectness, num_anchors_per_level)
        batch_idx = ember.arange(num_images, device=device)[:, None]
        objectness = objectness[batch_idx, top_n_idx]
        levels = levels[batch_idx, top_n_idx]
        proposals = proposals[batch_idx, top_n_idx]

        objectness_prob = ember.sigmoid(objectness)

        final_boxes = []
        final_scores = []
        for boxes, scores, lvl, img_shape in zip(proposals, objectness_prob, levels, image_shapes):
            boxes = box_ops.clip_boxes_to_image(boxes, img_shape)

            keep = box_ops.remove_small_boxes(boxes, self.min_size)
            boxes, scores, lvl = boxes[keep], scores[keep], lvl[keep]

            keep = ember.where(scores >= self.score_thresh)[0]
            boxes, scores, lvl = boxes[keep], scores[keep], lvl[keep]

            # non-maximum suppression, independently done per level
            keep = box_ops.batched_nms(boxes, scores, lvl, self.nms_thresh)
            keep = keep[: self.post_nms_top_n()]
            final_boxes.append(boxes[keep])
            final_scores.append(scores[keep])
        return final_boxes, final_scores

    def compute_loss(
        self,
        objectness: Tensor,
        pred_bbox_deltas: Tensor,
        labels: list[Tensor],
        regression_targets: list[Tensor],
    ) -> tuple[Tensor, Tensor]:
        """``(objectness_loss, box_loss)`` over a sampled minibatch of anchors: binary
        cross-entropy of the objectness, and smooth L1 (beta 1/9) of the positives' deltas
        divided by the minibatch size."""
        sampled_pos_inds, sampled_neg_inds = self.fg_bg_sampler(labels)
        sampled_pos_inds = ember.where(ember.cat(sampled_pos_inds, dim=0))[0]
        sampled_neg_inds = ember.where(ember.cat(sampled_neg_inds, dim=0))[0]
        sampled_inds = ember.cat([sampled_pos_inds, sampled_neg_inds], dim=0)

        objectness = objectness.flatten()
        labels = ember.cat(labels, dim=0)
        regression_targets = ember.cat(regression_targets, dim=0)

        box_loss = F.smooth_l1_loss(
            pred_bbox_deltas[sampled_pos_inds],
            regression_targets[sampled_pos_inds],
            beta=1 / 9,
            reduction="sum",
        ) / (sampled_inds.numel())
        objectness_loss = F.binary_cross_entropy_with_logits(
            objectness[sampled_inds], labels[sampled_inds]
        )
        return objectness_loss, box_loss

    def forward(
        self,
        images: ImageList,
        features: dict[str, Tensor],
        targets: list[dict[str, Tensor]] | None = None,
    ) -> tuple[list[Tensor], dict[str, Tensor]]:
        """
        Args:
            images (ImageList): images for which we want to compute the predictions
            features (Dict[str, Tensor]): the feature maps of the images, one per level
            targets (List[Dict[str, Tensor]]): ground-truth boxes present in the image
                (optional, under ``"boxes"``); required in training.

        Returns:
            boxes (List[Tensor]): the predicted boxes from the RPN, one Tensor per image.
            losses (Dict[str, Tensor]): the losses for the model during training. During
                testing, it is an empty dict.
        """
        features = list(features.values())
        objectness, pred_bbox_deltas = self.head(features)
        anchors = self.anchor_generator(images, features)

        num_images = len(anchors)
        num_anchors_per_level = [o[0].shape[0] * o[0].shape[1] * o[0].shape[2] for o in objectness]
        objectness, pred_bbox_deltas = concat_box_prediction_layers(objectness, pred_bbox_deltas)
        # the proposals are not back-propagated through (Faster R-CNN's approximate joint
        # training)
        proposals = self.box_coder.decode(pred_bbox_deltas.detach(), anchors)
        proposals = proposals.view(num_images, -1, 4)
        boxes, scores = self.filter_proposals(
            proposals, objectness, images.image_sizes, num_anchors_per_level
        )

        losses = {}
        if self.training:
            if targets is None:
                raise ValueError("targets should not be None")
            labels, matched_gt_boxes = self.assign_targets_to_anchors(anchors, targets)
            regression_targets = self.box_coder.encode(matched_gt_boxes, anchors)
            loss_objectness, loss_rpn_box_reg = self.compute_loss(
                objectness, pred_bbox_deltas, labels, regression_targets
            )
            losses = {"loss_objectness": loss_objectness, "loss_rpn_box_reg": loss_rpn_box_reg}
        return boxes, losses
