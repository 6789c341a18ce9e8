"""The second stage of the R-CNN detectors (torchvision's ``models.detection.roi_heads``):
:class:`RoIHeads` pools features of the proposals and runs the box head (and the mask and
keypoint heads), with their losses in training and their post-processing in eval."""

from __future__ import annotations

import ember
from ember import Tensor, nn
from ember.nn import functional as F

from ...ops import boxes as box_ops
from ...ops import roi_align
from . import _utils as det_utils

__all__ = [
    "RoIHeads",
    "fastrcnn_loss",
    "heatmaps_to_keypoints",
    "keypointrcnn_inference",
    "keypointrcnn_loss",
    "keypoints_to_heatmap",
    "maskrcnn_inference",
    "maskrcnn_loss",
    "paste_masks_in_image",
    "project_masks_on_boxes",
]


# -- masks pasted back into the image ----------------------------------------------------------


def expand_boxes(boxes: Tensor, scale: float) -> Tensor:
    """``boxes`` scaled by ``scale`` about their centres."""
    w_half = (boxes[:, 2] - boxes[:, 0]) * 0.5 * scale
    h_half = (boxes[:, 3] - boxes[:, 1]) * 0.5 * scale
    x_c = (boxes[:, 2] + boxes[:, 0]) * 0.5
    y_c = (boxes[:, 3] + boxes[:, 1]) * 0.5
    return ember.stack((x_c - w_half, y_c - h_half, x_c + w_half, y_c + h_half), dim=1)


def expand_masks(mask: Tensor, padding: int) -> tuple[Tensor, float]:
    """``mask`` (``(..., M, M)``) zero-padded by ``padding`` on each side, and the scale
    ``(M + 2 * padding) / M`` its boxes must grow by to match."""
    M = mask.shape[-1]
    scale = float(M + 2 * padding) / M
    return F.pad(mask, (padding,) * 4), scale


def paste_mask_in_image(mask: Tensor, box: list[int], im_h: int, im_w: int) -> Tensor:
    """The ``(im_h, im_w)`` image of ``mask`` (``(M, M)``) resized bilinearly into the
    integer box ``box`` (inclusive corners), zero elsewhere."""
    w = max(int(box[2] - box[0] + 1), 1)
    h = max(int(box[3] - box[1] + 1), 1)
    mask = F.interpolate(mask[None, None], size=(h, w), mode="bilinear", align_corners=False)[0, 0]

    im_mask = ember.zeros((im_h, im_w), dtype=mask.dtype, device=mask.device)
    x_0, x_1 = max(box[0], 0), min(box[2] + 1, im_w)
    y_0, y_1 = max(box[1], 0), min(box[3] + 1, im_h)
    if x_1 > x_0 and y_1 > y_0:
        im_mask[y_0:y_1, x_0:x_1] = mask[
            (y_0 - box[1]) : (y_1 - box[1]), (x_0 - box[0]) : (x_1 - box[0])
        ]
    return im_mask


def paste_masks_in_image(
    masks: Tensor, boxes: Tensor, img_shape: tuple[int, int], padding: int = 1
) -> Tensor:
    """The ``(N, 1, M, M)`` mask probabilities ``masks`` pasted into ``(N, 1, H, W)`` images
    of ``img_shape`` at their ``(N, 4)`` ``boxes`` (padded by ``padding`` first so that the
    resized masks fade out at the box edges)."""
    masks, scale = expand_masks(masks, padding=padding)
    boxes = expand_boxes(boxes, scale).to(dtype=ember.int64)
    im_h, im_w = int(img_shape[0]), int(img_shape[1])
    res = [paste_mask_in_image(m[0], b, im_h, im_w) for m, b in zip(masks, boxes.tolist())]
    if len(res) > 0:
        return ember.stack(res, dim=0)[:, None]
    return masks.new_empty((0, 1, im_h, im_w))


# -- box head -----------------------------------------------------------------------------------


def fastrcnn_loss(
    class_logits: Tensor,
    box_regression: Tensor,
    labels: list[Tensor],
    regression_targets: list[Tensor],
) -> tuple[Tensor, Tensor]:
    """Faster R-CNN's ``(classification_loss, box_loss)``: cross-entropy of the sampled
    proposals' classes, and smooth L1 (beta 1/9) of the positives' deltas for their class,
    summed and divided by the number of sampled proposals."""
    labels = ember.cat(labels, dim=0)
    regression_targets = ember.cat(regression_targets, dim=0)

    classification_loss = F.cross_entropy(class_logits, labels)

    # the deltas of each positive proposal's ground-truth class
    sampled_pos_inds_subset = ember.where(labels > 0)[0]
    labels_pos = labels[sampled_pos_inds_subset]
    N = class_logits.shape[0]
    box_regression = box_regression.reshape(N, box_regression.size(-1) // 4, 4)

    box_loss = F.smooth_l1_loss(
        box_regression[sampled_pos_inds_subset, labels_pos],
        regression_targets[sampled_pos_inds_subset],
        beta=1 / 9,
        reduction="sum",
    )
    box_loss = box_loss / labels.numel()
    return classification_loss, box_loss


# -- mask head ----------------------------------------------------------------------------------


def maskrcnn_inference(x: Tensor, labels: list[Tensor]) -> list[Tensor]:
    """Per image, the ``(N, 1, M, M)`` mask probabilities of each detection's class, from
    the mask logits ``x`` (``(sum N, num_classes, M, M)``)."""
    mask_prob = x.sigmoid()
    num_masks = x.shape[0]
    boxes_per_image = [label.shape[0] for label in labels]
    labels = ember.cat(labels)
    index = ember.arange(num_masks, device=labels.device)
    mask_prob = mask_prob[index, labels][:, None]
    return list(mask_prob.split(boxes_per_image, dim=0))


def project_masks_on_boxes(gt_masks: Tensor, boxes: Tensor, matched_idxs: Tensor, M: int) -> Tensor:
    """The ``(N, M, M)`` crops of the ground-truth masks ``gt_masks[matched_idxs]`` inside
    ``boxes``, resized by RoIAlign: the mask head's targets."""
    matched_idxs = matched_idxs.to(boxes)
    rois = ember.cat([matched_idxs[:, None], boxes], dim=1)
    gt_masks = gt_masks[:, None].to(rois)
    return roi_align(gt_masks, rois, (M, M), 1.0)[:, 0]


def maskrcnn_loss(
    mask_logits: Tensor,
    proposals: list[Tensor],
    gt_masks: list[Tensor],
    gt_labels: list[Tensor],
    mask_matched_idxs: list[Tensor],
) -> Tensor:
    """Binary cross-entropy of each positive proposal's mask logits for its ground-truth
    class against the projected ground-truth mask (0 when there is none)."""
    discretization_size = mask_logits.shape[-1]
    labels = [gt_label[idxs] for gt_label, idxs in zip(gt_labels, mask_matched_idxs)]
    mask_targets = [
        project_masks_on_boxes(m, p, i, discretization_size)
        for m, p, i in zip(gt_masks, proposals, mask_matched_idxs)
    ]
    labels = ember.cat(labels, dim=0)
    mask_targets = ember.cat(mask_targets, dim=0)

    # the mean of an empty tensor is NaN: no positives give a zero loss
    if mask_targets.numel() == 0:
        return mask_logits.sum() * 0

    return F.binary_cross_entropy_with_logits(
        mask_logits[ember.arange(labels.shape[0], device=labels.device), labels], mask_targets
    )


# -- keypoint head ------------------------------------------------------------------------------


def keypoints_to_heatmap(
    keypoints: Tensor, rois: Tensor, heatmap_size: int
) -> tuple[Tensor, Tensor]:
    """The flat heatmap index of each keypoint (``(N, K, 3)``) inside its roi (``(N, 4)``)
    discretised to ``heatmap_size`` squared, and whether it is valid (visible and inside)."""
    offset_x = rois[:, 0][:, None]
    offset_y = rois[:, 1][:, None]
    scale_x = (heatmap_size / (rois[:, 2] - rois[:, 0]))[:, None]
    scale_y = (heatmap_size / (rois[:, 3] - rois[:, 1]))[:, None]

    x = keypoints[..., 0]
    y = keypoints[..., 1]

    x_boundary_inds = x == rois[:, 2][:, None]
    y_boundary_inds = y == rois[:, 3][:, None]

    x = ((x - offset_x) * scale_x).floor().long()
    y = ((y - offset_y) * scale_y).floor().long()

    # a keypoint on the right/bottom edge falls in the last cell
    x[x_boundary_inds] = heatmap_size - 1
    y[y_boundary_inds] = heatmap_size - 1

    valid_loc = (x >= 0) & (y >= 0) & (x < heatmap_size) & (y < heatmap_size)
    vis = keypoints[..., 2] > 0
    valid = (valid_loc & vis).long()

    lin_ind = y * heatmap_size + x
    heatmaps = lin_ind * valid
    return heatmaps, valid


def heatmaps_to_keypoints(maps: Tensor, rois: Tensor) -> tuple[Tensor, Tensor]:
    """Extract predicted keypoint locations from heatmaps.

    Args:
        maps (Tensor[K, N, H, W]): The predicted heatmaps, where K is the number of RoIs,
            N is the number of keypoints, and H, W are the heatmap spatial dimensions.
        rois (Tensor[K, 4]): The RoI boxes in ``(x1, y1, x2, y2)`` format.

    Returns:
        tuple:
            - **xy_preds** (Tensor[K, N, 3]): The predicted keypoint locations ``(x, y, v)``,
              v being the visibility (always 1).
            - **scores** (Tensor[K, N]): The heatmap scores at the predicted keypoint
              locations.

    Each roi's heatmaps are resized bicubically to the roi's size (rounded up); a keypoint is
    the centre of its map's maximum (Heckbert 1990: continuous = discrete + 0.5).
    """
    offset_x = rois[:, 0]
    offset_y = rois[:, 1]

    widths = (rois[:, 2] - rois[:, 0]).clamp(min=1)
    heights = (rois[:, 3] - rois[:, 1]).clamp(min=1)
    # the sizes of the resized maps are Python ints: one host copy for all rois
    widths_ceil = widths.ceil().tolist()
    heights_ceil = heights.ceil().tolist()

    num_keypoints = maps.shape[1]
    xy_preds = []
    end_scores = []
    for i in range(len(rois)):
        roi_map_width = int(widths_ceil[i])
        roi_map_height = int(heights_ceil[i])
        width_correction = widths[i] / roi_map_width
        height_correction = heights[i] / roi_map_height
        roi_map = F.interpolate(
            maps[i][:, None],
            size=(roi_map_height, roi_map_width),
            mode="bicubic",
            align_corners=False,
        )[:, 0]
        w = roi_map.shape[2]
        pos = roi_map.reshape(num_keypoints, -1).argmax(dim=1)

        x_int = pos % w
        y_int = ember.div(pos - x_int, w, rounding_mode="floor")
        x = (x_int.float() + 0.5) * width_correction
        y = (y_int.float() + 0.5) * height_correction
        xy_preds.append(ember.stack((x + offset_x[i], y + offset_y[i], ember.ones_like(x)), dim=0))
        end_scores.append(roi_map[ember.arange(num_keypoints, device=roi_map.device), y_int, x_int])

    if not xy_preds:
        return (
            ember.zeros((0, num_keypoints, 3), dtype=ember.float32, device=maps.device),
            ember.zeros((0, num_keypoints), dtype=ember.float32, device=maps.device),
        )
    xy = ember.stack(xy_preds, dim=0).to(ember.float32)
    return xy.permute(0, 2, 1), ember.stack(end_scores, dim=0).to(ember.float32)


def keypointrcnn_loss(
    keypoint_logits: Tensor,
    proposals: list[Tensor],
    gt_keypoints: list[Tensor],
    keypoint_matched_idxs: list[Tensor],
) -> Tensor:
    """Cross-entropy, over each heatmap's ``H * W`` cells, of the valid keypoints of the
    positive proposals (0 when there is none)."""
    N, K, H, W = keypoint_logits.shape
    if H != W:
        raise ValueError(
            "keypoint_logits height and width (last two elements of shape) should be equal. "
            f"Instead got H = {H} and W = {W}"
        )
    discretization_size = H
    heatmaps = []
    valid = []
    for proposals_per_image, gt_kp_in_image, midx in zip(
        proposals, gt_keypoints, keypoint_matched_idxs
    ):
        kp = gt_kp_in_image[midx]
        heatmaps_per_image, valid_per_image = keypoints_to_heatmap(
            kp, proposals_per_image, discretization_size
        )
        heatmaps.append(heatmaps_per_image.view(-1))
        valid.append(valid_per_image.view(-1))

    keypoint_targets = ember.cat(heatmaps, dim=0)
    valid = ember.where(ember.cat(valid, dim=0).to(dtype=ember.uint8))[0]

    # the mean of an empty tensor is NaN: no valid keypoint gives a zero loss
    if keypoint_targets.numel() == 0 or len(valid) == 0:
        return keypoint_logits.sum() * 0

    keypoint_logits = keypoint_logits.view(N * K, H * W)
    return F.cross_entropy(keypoint_logits[valid], keypoint_targets[valid])


def keypointrcnn_inference(x: Tensor, boxes: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
    """Per image, the keypoints ``(N, K, 3)`` and their scores ``(N, K)`` of the heatmap
    logits ``x`` of the detections ``boxes``."""
    kp_probs = []
    kp_scores = []
    boxes_per_image = [box.size(0) for box in boxes]
    for xx, bb in zip(x.split(boxes_per_image, dim=0), boxes):
        kp_prob, scores = heatmaps_to_keypoints(xx, bb)
        kp_probs.append(kp_prob)
        kp_scores.append(scores)
    return kp_probs, kp_scores


# -- the heads together -------------------------------------------------------------------------


class RoIHeads(nn.Module):
    """The second stage of Faster / Mask / Keypoint R-CNN.

    In training, the proposals (with the ground-truth boxes added) are matched to the
    ground truth (``fg_iou_thresh`` / ``bg_iou_thresh``) and a minibatch of
    ``batch_size_per_image`` is sampled; the box head's losses are computed on it, the mask
    and keypoint heads' on its positives. In eval, the box head's detections are decoded,
    filtered (``score_thresh``, NMS at ``nms_thresh`` per class, at most
    ``detections_per_img``) and passed to the mask and keypoint heads.
    """

    def __init__(
        self,
        box_roi_pool: nn.Module,
        box_head: nn.Module,
        box_predictor: nn.Module,
        # Faster R-CNN training
        fg_iou_thresh: float,
        bg_iou_thresh: float,
        batch_size_per_image: int,
        positive_fraction: float,
        bbox_reg_weights: tuple[float, float, float, float] | None,
        # Faster R-CNN inference
        score_thresh: float,
        nms_thresh: float,
        detections_per_img: int,
        # Mask
        mask_roi_pool: nn.Module | None = None,
        mask_head: nn.Module | None = None,
        mask_predictor: nn.Module | None = None,
        keypoint_roi_pool: nn.Module | None = None,
        keypoint_head: nn.Module | None = None,
        keypoint_predictor: nn.Module | None = None,
    ) -> None:
        super().__init__()
        self.box_similarity = box_ops.box_iou
        # assign ground-truth boxes for each proposal
        self.proposal_matcher = det_utils.Matcher(
            fg_iou_thresh, bg_iou_thresh, allow_low_quality_matches=False
        )
        self.fg_bg_sampler = det_utils.BalancedPositiveNegativeSampler(
            batch_size_per_image, positive_fraction
        )
        if bbox_reg_weights is None:
            bbox_reg_weights = (10.0, 10.0, 5.0, 5.0)
        self.box_coder = det_utils.BoxCoder(bbox_reg_weights)

        self.box_roi_pool = box_roi_pool
        self.box_head = box_head
        self.box_predictor = box_predictor

        self.score_thresh = score_thresh
        self.nms_thresh = nms_thresh
        self.detections_per_img = detections_per_img

        self.mask_roi_pool = mask_roi_pool
        self.mask_head = mask_head
        self.mask_predictor = mask_predictor

        self.keypoint_roi_pool = keypoint_roi_pool
        self.keypoint_head = keypoint_head
        self.keypoint_predictor = keypoint_predictor

    def has_mask(self) -> bool:
        return (
            self.mask_roi_pool is not None
            and self.mask_head is not None
            and self.mask_predictor is not None
        )

    def has_keypoint(self) -> bool:
        return (
            self.keypoint_roi_pool is not None
            and self.keypoint_head is not None
            and self.keypoint_predictor is not None
        )

    def assign_targets_to_proposals(
        self, proposals: list[Tensor], gt_boxes: list[Tensor], gt_labels: list[Tensor]
    ) -> tuple[list[Tensor], list[Tensor]]:
        """Per image, the index of each proposal's matched ground truth (0 for unmatched) and
        its label (the ground truth's class, 0 background, -1 ignored)."""
        matched_idxs = []
        labels = []
        for proposals_in_image, gt_boxes_in_image, gt_labels_in_image in zip(
            proposals, gt_boxes, gt_labels
        ):
            if gt_boxes_in_image.numel() == 0:
                # background image
                device = proposals_in_image.device
                n = proposals_in_image.shape[0]
                clamped_matched_idxs = ember.zeros((n,), dtype=ember.int64, device=device)
                labels_in_image = ember.zeros((n,), dtype=ember.int64, device=device)
            else:
                match_quality_matrix = box_ops.box_iou(gt_boxes_in_image, proposals_in_image)
                matched_idxs_in_image = self.proposal_matcher(match_quality_matrix)
                clamped_matched_idxs = matched_idxs_in_image.clamp(min=0)

                labels_in_image = gt_labels_in_image[clamped_matched_idxs].to(dtype=ember.int64)
                # background (below the low threshold)
                bg_inds = matched_idxs_in_image == self.proposal_matcher.BELOW_LOW_THRESHOLD
                labels_in_image[bg_inds] = 0
                # ignored by the sampler (between the thresholds)
                ignore_inds = matched_idxs_in_image == self.proposal_matcher.BETWEEN_THRESHOLDS
                labels_in_image[ignore_inds] = -1

            matched_idxs.append(clamped_matched_idxs)
            labels.append(labels_in_image)
        return matched_idxs, labels

    def subsample(self, labels: list[Tensor]) -> list[Tensor]:
        sampled_pos_inds, sampled_neg_inds = self.fg_bg_sampler(labels)
        return [
            ember.where(pos_inds_img | neg_inds_img)[0]
            for pos_inds_img, neg_inds_img in zip(sampled_pos_inds, sampled_neg_inds)
        ]

    def add_gt_proposals(self, proposals: list[Tensor], gt_boxes: list[Tensor]) -> list[Tensor]:
        return [ember.cat((proposal, gt_box)) for proposal, gt_box in zip(proposals, gt_boxes)]

    def check_targets(self, targets: list[dict[str, Tensor]] | None) -> None:
        if targets is None:
            raise ValueError("targets should not be None")
        if not all("boxes" in t for t in targets):
            raise ValueError("Every element of targets should have a boxes key")
        if not all("labels" in t for t in targets):
            raise ValueError("Every element of targets should have a labels key")
        if self.has_mask() and not all("masks" in t for t in targets):
            raise ValueError("Every element of targets should have a masks key")

    def select_training_samples(
        self, proposals: list[Tensor], targets: list[dict[str, Tensor]] | None
    ) -> tuple[list[Tensor], list[Tensor], list[Tensor], list[Tensor]]:
        """The sampled proposals of each image, their matched ground-truth indices, labels
        and regression targets."""
        self.check_targets(targets)
        dtype = proposals[0].dtype
        device = proposals[0].device

        gt_boxes = [t["boxes"].to(dtype) for t in targets]
        gt_labels = [t["labels"] for t in targets]

        proposals = self.add_gt_proposals(proposals, gt_boxes)
        matched_idxs, labels = self.assign_targets_to_proposals(proposals, gt_boxes, gt_labels)
        sampled_inds = self.subsample(labels)

        matched_gt_boxes = []
        for img_id, img_sampled_inds in enumerate(sampled_inds):
            proposals[img_id] = proposals[img_id][img_sampled_inds]
            labels[img_id] = labels[img_id][img_sampled_inds]
            matched_idxs[img_id] = matched_idxs[img_id][img_sampled_inds]

            gt_boxes_in_image = gt_boxes[img_id]
            if gt_boxes_in_image.numel() == 0:
                gt_boxes_in_image = ember.zeros((1, 4), dtype=dtype, device=device)
            matched_gt_boxes.append(gt_boxes_in_image[matched_idxs[img_id]])

        regression_targets = self.box_coder.encode(matched_gt_boxes, proposals)
        return proposals, matched_idxs, labels, list(regression_targets)

    def postprocess_detections(
        self,
        class_logits: Tensor,
        box_regression: Tensor,
        proposals: list[Tensor],
        image_shapes: list[tuple[int, int]],
    ) -> tuple[list[Tensor], list[Tensor], list[Tensor]]:
        """Per image, the detections' boxes, scores and labels: one candidate per proposal
        and foreground class, clipped, thresholded, NMS'd per class, the best kept."""
        device = class_logits.device
        num_classes = class_logits.shape[-1]

        boxes_per_image = [boxes_in_image.shape[0] for boxes_in_image in proposals]
        pred_boxes = self.box_coder.decode(box_regression, proposals)
        pred_scores = F.softmax(class_logits, -1)

        all_boxes = []
        all_scores = []
        all_labels = []
        for boxes, scores, image_shape in zip(
            pred_boxes.split(boxes_per_image, 0),
            pred_scores.split(boxes_per_image, 0),
            image_shapes,
        ):
            boxes = box_ops.clip_boxes_to_image(boxes, image_shape)
            labels = ember.arange(num_classes, device=device).view(1, -1).expand_as(scores)

            # remove the background class, and make every class prediction an instance
            boxes = boxes[:, 1:].reshape(-1, 4)
            scores = scores[:, 1:].reshape(-1)
            labels = labels[:, 1:].reshape(-1)

            # remove low scoring boxes
            inds = ember.where(scores > self.score_thresh)[0]
            boxes, scores, labels = boxes[inds], scores[inds], labels[inds]

            # remove empty boxes
            keep = box_ops.remove_small_boxes(boxes, min_size=1e-2)
            boxes, scores, labels = boxes[keep], scores[keep], labels[keep]

            # non-maximum suppression, independently done per class; keep the best
            keep = box_ops.batched_nms(boxes, scores, labels, self.nms_thresh)
            keep = keep[: self.detections_per_img]
            all_boxes.append(boxes[keep])
            all_scores.append(scores[keep])
            all_labels.append(labels[keep])
        return all_boxes, all_scores, all_labels

    def _check_target_dtypes(self, targets: list[dict[str, Tensor]]) -> None:
        for t in targets:
            if t["boxes"].dtype not in (ember.float32, ember.float64, ember.float16):
                raise TypeError(f"target boxes must of float type, instead got {t['boxes'].dtype}")
            if t["labels"].dtype != ember.int64:
                raise TypeError(
                    f"target labels must of int64 type, instead got {t['labels'].dtype}"
                )
            if self.has_keypoint() and t["keypoints"].dtype != ember.float32:
                raise TypeError(
                    f"target keypoints must of float type, instead got {t['keypoints'].dtype}"
                )

    @staticmethod
    def _positives(
        proposals: list[Tensor], matched_idxs: list[Tensor], labels: list[Tensor]
    ) -> tuple[list[Tensor], list[Tensor]]:
        """The positive proposals of each image and their matched ground-truth indices."""
        pos_proposals = []
        pos_matched_idxs = []
        for props, idxs, lab in zip(proposals, matched_idxs, labels):
            pos = ember.where(lab > 0)[0]
            pos_proposals.append(props[pos])
            pos_matched_idxs.append(idxs[pos])
        return pos_proposals, pos_matched_idxs

    def forward(
        self,
        features: dict[str, Tensor],
        proposals: list[Tensor],
        image_shapes: list[tuple[int, int]],
        targets: list[dict[str, Tensor]] | None = None,
    ) -> tuple[list[dict[str, Tensor]], dict[str, Tensor]]:
        """
        Args:
            features (Dict[str, Tensor]): the feature maps
            proposals (List[Tensor[N, 4]]): the RPN's proposals of each image
            image_shapes (List[Tuple[H, W]]): the sizes of the (resized) images
            targets (List[Dict]): the ground truth, in training
        """
        if targets is not None:
            self._check_target_dtypes(targets)

        if self.training:
            proposals, matched_idxs, labels, regression_targets = self.select_training_samples(
                proposals, targets
            )
        else:
            labels = None
            regression_targets = None
            matched_idxs = None

        box_features = self.box_roi_pool(features, proposals, image_shapes)
        box_features = self.box_head(box_features)
        class_logits, box_regression = self.box_predictor(box_features)

        result: list[dict[str, Tensor]] = []
        losses: dict[str, Tensor] = {}
        if self.training:
            loss_classifier, loss_box_reg = fastrcnn_loss(
                class_logits, box_regression, labels, regression_targets
            )
            losses = {"loss_classifier": loss_classifier, "loss_box_reg": loss_box_reg}
        else:
            boxes, scores, labels = self.postprocess_detections(
                class_logits, box_regression, proposals, image_shapes
            )
            result = [
                {"boxes": b, "labels": lab, "scores": s} for b, s, lab in zip(boxes, scores, labels)
            ]

        if self.has_mask():
            if self.training:
                # during training, only the positive proposals
                mask_proposals, pos_matched_idxs = self._positives(proposals, matched_idxs, labels)
            else:
                mask_proposals = [p["boxes"] for p in result]
            mask_features = self.mask_roi_pool(features, mask_proposals, image_shapes)
            mask_features = self.mask_head(mask_features)
            mask_logits = self.mask_predictor(mask_features)

            if self.training:
                gt_masks = [t["masks"] for t in targets]
                gt_labels = [t["labels"] for t in targets]
                losses["loss_mask"] = maskrcnn_loss(
                    mask_logits, mask_proposals, gt_masks, gt_labels, pos_matched_idxs
                )
            else:
                masks_probs = maskrcnn_inference(mask_logits, [r["labels"] for r in result])
                for mask_prob, r in zip(masks_probs, result):
                    r["masks"] = mask_prob

        if self.has_keypoint():
            if self.training:
                keypoint_proposals, pos_matched_idxs = self._positives(
                    proposals, matched_idxs, labels
                )
            else:
                keypoint_proposals = [p["boxes"] for p in result]
            keypoint_features = self.keypoint_roi_pool(features, keypoint_proposals, image_shapes)
            keypoint_features = self.keypoint_head(keypoint_features)
            keypoint_logits = self.keypoint_predictor(keypoint_features)

            if self.training:
                gt_keypoints = [t["keypoints"] for t in targets]
                losses["loss_keypoint"] = keypointrcnn_loss(
                    keypoint_logits, keypoint_proposals, gt_keypoints, pos_matched_idxs
                )
            else:
                keypoints_probs, kp_scores = keypointrcnn_inference(
                    keypoint_logits, keypoint_proposals
                )
                for keypoint_prob, kps, r in zip(keypoints_probs, kp_scores, result):
                    r["keypoints"] = keypoint_prob
                    r["keypoints_scores"] = kps

        return result, losses
