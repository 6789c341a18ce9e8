"""``wrap_dataset_for_transforms_v2``, as torchvision's (``torchvision.tv_tensors._dataset_wrapper``
in 0.29): a dataset's samples with their images, boxes and masks wrapped in
:mod:`ember.vision.tv_tensors`, so the :mod:`ember.vision.transforms.v2` transforms see what
they hold.

``ember.vision.tv_tensors`` and ``transforms.v2`` turn ``__torch_function__`` dispatch on for
the process, so this module imports them only when a dataset is wrapped.

COCO segmentations are turned into masks as ``pycocotools.mask`` does (its polygon
rasterisation and its RLE formats, re-implemented here: Ember does not depend on pycocotools).
"""

from __future__ import annotations

import collections.abc
import contextlib
from collections import defaultdict
from copy import copy

import numpy as np

import ember

from . import (
    caltech,
    celeba,
    cifar,
    cityscapes,
    coco,
    folder,
    gtsrb,
    imagenet,
    imagenette,
    kitti,
    mnist,
    oxford_iiit_pet,
    sbd,
    voc,
    widerface,
)
from .vision import VisionDataset

__all__ = ["wrap_dataset_for_transforms_v2"]


def _tv_tensors():
    from ember.vision import tv_tensors

    return tv_tensors


def _v2_functional():
    from ember.vision.transforms.v2 import functional

    return functional


def wrap_dataset_for_transforms_v2(dataset, target_keys=None):
    """Wrap an ``ember.vision.datasets`` dataset for use with :mod:`ember.vision.transforms.v2`.

    Example:
        >>> dataset = ember.vision.datasets.CocoDetection(...)
        >>> dataset = wrap_dataset_for_transforms_v2(dataset)

    The samples are wrapped as torchvision's wrapper does:

    * :class:`CocoDetection`: the target, a list of dicts, becomes a dict of lists, with
      ``"boxes"`` (``XYXY`` :class:`~ember.vision.tv_tensors.BoundingBoxes`), ``"masks"``
      (:class:`~ember.vision.tv_tensors.Mask`) and ``"labels"`` added; by default only
      ``"image_id"``, ``"boxes"`` and ``"labels"`` are returned.
    * :class:`VOCDetection`: ``"boxes"`` and ``"labels"`` are added (the default keys).
    * :class:`CelebA`: a ``"bbox"`` target becomes ``XYXY`` bounding boxes.
    * :class:`Kitti`: like COCO, with ``"boxes"`` and ``"labels"`` (the default keys).
    * :class:`OxfordIIITPet`: a ``"segmentation"`` target becomes a Mask.
    * :class:`Cityscapes`: a ``"semantic"`` target becomes a Mask; an ``"instance"`` target is
      replaced by a dict of ``"masks"`` and ``"labels"``.
    * :class:`WIDERFace`: ``"bbox"`` becomes ``XYXY`` bounding boxes.
    * Segmentation datasets (:class:`VOCSegmentation`, :class:`SBDataset`): the mask becomes a
      Mask. Classification datasets are returned as they are.

    Args:
        dataset: the dataset instance to wrap.
        target_keys: target keys to return where the target is a dict: None (the dataset's
            default), ``"all"``, or a collection of strings. Only for :class:`CocoDetection`,
            :class:`VOCDetection`, :class:`Kitti` and :class:`WIDERFace`.
    """
    if not (
        target_keys is None
        or target_keys == "all"
        or (isinstance(target_keys, collections.abc.Collection)
            and all(isinstance(key, str) for key in target_keys))
    ):
        raise ValueError(
            f"`target_keys` can be None, 'all', or a collection of strings denoting the keys to be "
            f"returned, but got {target_keys}"
        )
    _register_video_datasets()
    # a class "Wrapped<Name>" deriving from the wrapper and from the dataset's class, so that
    # isinstance(wrapped, datasets.<Name>) holds; the dataset's own __init__ never runs
    wrapped_dataset_cls = type(
        f"Wrapped{type(dataset).__name__}", (VisionDatasetTVTensorWrapper, type(dataset)), {}
    )
    return wrapped_dataset_cls(dataset, target_keys)


class WrapperFactories(dict):
    """Dataset class -> factory ``(dataset, target_keys) -> wrapper(idx, sample)``."""

    def register(self, dataset_cls):
        def decorator(wrapper_factory):
            self[dataset_cls] = wrapper_factory
            return wrapper_factory

        return decorator


# a factory, not the wrapper itself, since some wrappers need the dataset instance's attributes
WRAPPER_FACTORIES = WrapperFactories()

_TARGET_KEYS_DATASETS = (coco.CocoDetection, voc.VOCDetection, kitti.Kitti, widerface.WIDERFace)


class VisionDatasetTVTensorWrapper:
    """The base of the classes :func:`wrap_dataset_for_transforms_v2` makes: it holds the
    dataset, takes its transforms over (applied after the wrapping) and delegates the rest."""

    def __init__(self, dataset, target_keys):
        dataset_cls = type(dataset)

        if not isinstance(dataset, VisionDataset):
            raise TypeError(
                f"This wrapper is meant for subclasses of `torchvision.datasets.VisionDataset`, "
                f"but got a '{dataset_cls.__name__}' instead.\n"
                f"For an example of how to perform the wrapping for custom datasets, see\n\n"
                "https://pytorch.org/vision/main/auto_examples/plot_tv_tensors.html"
                "#do-i-have-to-wrap-the-output-of-the-datasets-myself"
            )

        for cls in dataset_cls.mro():
            if cls in WRAPPER_FACTORIES:
                wrapper_factory = WRAPPER_FACTORIES[cls]
                if target_keys is not None and cls not in _TARGET_KEYS_DATASETS:
                    raise ValueError(
                        f"`target_keys` is currently only supported for `CocoDetection`, "
                        f"`VOCDetection`, `Kitti`, and `WIDERFace`, but got {cls.__name__}."
                    )
                break
            elif cls is VisionDataset:
                msg = (f"No wrapper exists for dataset class {dataset_cls.__name__}. "
                       f"Please wrap the output yourself.")
                if _is_public_dataset(dataset_cls):
                    msg = (
                        f"{msg} If an automated wrapper for this dataset would be useful for "
                        f"you, please open an issue at https://github.com/pytorch/vision/issues."
                    )
                raise TypeError(msg)

        self._dataset = dataset
        self._target_keys = target_keys
        self._wrapper = wrapper_factory(dataset, target_keys)

        # The dataset's transforms must run after the wrapping: take all three over (many
        # datasets apply `transform` / `target_transform` themselves rather than `transforms`).
        self.transform, dataset.transform = dataset.transform, None
        self.target_transform, dataset.target_transform = dataset.target_transform, None
        self.transforms, dataset.transforms = dataset.transforms, None

    def __getattr__(self, item):
        with contextlib.suppress(AttributeError):
            return object.__getattribute__(self, item)

        return getattr(self._dataset, item)

    def __getitem__(self, idx):
        # the raw sample: the dataset's transforms were switched off in __init__
        sample = self._dataset[idx]

        sample = self._wrapper(idx, sample)

        # `transforms` holds `transform` / `target_transform` too when they were given
        if self.transforms is not None:
            sample = self.transforms(*sample)

        return sample

    def __len__(self):
        return len(self._dataset)

    def __reduce__(self):
        # the wrapped class is made at run time and cannot be pickled by reference: pickle the
        # dataset, with its transforms put back, and wrap it again when unpickling
        dataset = copy(self._dataset)
        dataset.transform = self.transform
        dataset.transforms = self.transforms
        dataset.target_transform = self.target_transform

        return wrap_dataset_for_transforms_v2, (dataset, self._target_keys)


def _is_public_dataset(dataset_cls) -> bool:
    from ember.vision import datasets

    return dataset_cls in datasets.__dict__.values()


def raise_not_supported(description):
    raise RuntimeError(
        f"{description} is currently not supported by this wrapper. "
        f"If this would be helpful for you, please open an issue at "
        f"https://github.com/pytorch/vision/issues."
    )


def identity(item):
    return item


def identity_wrapper_factory(dataset, target_keys):
    def wrapper(idx, sample):
        return sample

    return wrapper


def pil_image_to_mask(pil_image):
    return _tv_tensors().Mask(pil_image)


def parse_target_keys(target_keys, *, available, default):
    if target_keys is None:
        target_keys = default
    if target_keys == "all":
        target_keys = available
    else:
        target_keys = set(target_keys)
        extra = target_keys - available
        if extra:
            raise ValueError(f"Target keys {sorted(extra)} are not available")

    return target_keys


def list_of_dicts_to_dict_of_lists(list_of_dicts):
    dict_of_lists = defaultdict(list)
    for dct in list_of_dicts:
        for key, value in dct.items():
            dict_of_lists[key].append(value)
    return dict(dict_of_lists)


def wrap_target_by_type(target, *, target_types, type_wrappers):
    if not isinstance(target, (tuple, list)):
        target = [target]

    wrapped_target = tuple(
        type_wrappers.get(target_type, identity)(item)
        for target_type, item in zip(target_types, target)
    )

    if len(wrapped_target) == 1:
        wrapped_target = wrapped_target[0]

    return wrapped_target


def _xywh_boxes_to_xyxy(boxes, canvas_size):
    tv_tensors = _tv_tensors()
    return _v2_functional().convert_bounding_box_format(
        tv_tensors.BoundingBoxes(boxes, format=tv_tensors.BoundingBoxFormat.XYWH,
                                 canvas_size=canvas_size),
        new_format=tv_tensors.BoundingBoxFormat.XYXY,
    )


# -- classification and segmentation ----------------------------------------------------------


def classification_wrapper_factory(dataset, target_keys):
    return identity_wrapper_factory(dataset, target_keys)


for _dataset_cls in [
    caltech.Caltech256,
    cifar.CIFAR10,
    cifar.CIFAR100,
    imagenet.ImageNet,
    mnist.MNIST,
    mnist.FashionMNIST,
    gtsrb.GTSRB,
    folder.DatasetFolder,
    folder.ImageFolder,
    imagenette.Imagenette,
]:
    WRAPPER_FACTORIES.register(_dataset_cls)(classification_wrapper_factory)


def segmentation_wrapper_factory(dataset, target_keys):
    def wrapper(idx, sample):
        image, mask = sample
        return image, pil_image_to_mask(mask)

    return wrapper


WRAPPER_FACTORIES.register(voc.VOCSegmentation)(segmentation_wrapper_factory)


def video_classification_wrapper_factory(dataset, target_keys):
    """For the video classification datasets (HMDB51, Kinetics, UCF101): the video becomes a
    :class:`~ember.vision.tv_tensors.Video`; only ``output_format="TCHW"`` is supported."""
    if dataset.video_clips.output_format == "THWC":
        raise RuntimeError(
            f"{type(dataset).__name__} with `output_format='THWC'` is not supported by this "
            f"wrapper, since it is not compatible with the transformations. Please use "
            f"`output_format='TCHW'` instead."
        )

    def wrapper(idx, sample):
        video, audio, label = sample

        video = _tv_tensors().Video(video)

        return video, audio, label

    return wrapper


@WRAPPER_FACTORIES.register(caltech.Caltech101)
def caltech101_wrapper_factory(dataset, target_keys):
    if "annotation" in dataset.target_type:
        raise_not_supported("Caltech101 dataset with `target_type=['annotation', ...]`")

    return classification_wrapper_factory(dataset, target_keys)


# -- COCO ---------------------------------------------------------------------------------------


@WRAPPER_FACTORIES.register(coco.CocoDetection)
def coco_dectection_wrapper_factory(dataset, target_keys):
    target_keys = parse_target_keys(
        target_keys,
        available={
            # native
            "segmentation",
            "area",
            "iscrowd",
            "image_id",
            "bbox",
            "category_id",
            # added by the wrapper
            "boxes",
            "masks",
            "labels",
        },
        default={"image_id", "boxes", "labels"},
    )

    def wrapper(idx, sample):
        tv_tensors = _tv_tensors()
        image_id = dataset.ids[idx]

        image, target = sample

        if not target:
            return image, dict(image_id=image_id)

        canvas_size = tuple(_v2_functional().get_size(image))

        batched_target = list_of_dicts_to_dict_of_lists(target)
        target = {}

        if "image_id" in target_keys:
            target["image_id"] = image_id

        if "boxes" in target_keys:
            target["boxes"] = _xywh_boxes_to_xyxy(batched_target["bbox"], canvas_size)

        if "masks" in target_keys:
            # on the default device, as the boxes and labels (torchvision's from_numpy keeps
            # them on the CPU, which a v2 pipeline cannot mix with boxes on another device)
            target["masks"] = tv_tensors.Mask(
                ember.as_tensor(np.stack([
                    segmentation_to_mask(segmentation, canvas_size=canvas_size)
                    for segmentation in batched_target["segmentation"]
                ])),
            )

        if "labels" in target_keys:
            target["labels"] = ember.tensor(batched_target["category_id"])

        for target_key in target_keys - {"image_id", "boxes", "masks", "labels"}:
            target[target_key] = batched_target[target_key]

        return image, target

    return wrapper


WRAPPER_FACTORIES.register(coco.CocoCaptions)(identity_wrapper_factory)


def segmentation_to_mask(segmentation, *, canvas_size) -> np.ndarray:
    """A COCO ``segmentation`` as a uint8 ``(H, W)`` mask, as torchvision computes it with
    pycocotools: polygons (a list of ``[x0, y0, x1, y1, ...]``) rasterised on ``canvas_size``
    and merged; RLEs (a dict of ``"size"`` ``[H, W]`` and ``"counts"``, a list or a compressed
    string) decoded on their own size."""
    if isinstance(segmentation, dict):
        height, width = (int(v) for v in segmentation["size"])
        counts = segmentation["counts"]
        if isinstance(counts, (str, bytes)):
            counts = _rle_counts_from_string(counts)
        else:  # an uncompressed RLE: pycocotools stores its counts as uint32
            counts = [int(c) & 0xFFFFFFFF for c in counts]
        return _rle_decode(counts, height, width)
    elif isinstance(segmentation, list):
        return _polygons_to_mask(segmentation, *canvas_size)
    else:
        raise ValueError(
            f"COCO segmentation expected to be a dict or a list, got {type(segmentation)}"
        )


def _rle_counts_from_string(string) -> list[int]:
    """The counts of pycocotools' compressed RLE string (``rleFrString``): LEB128-like, 5 bits a
    character from ``chr(48)`` on, ``0x20`` for "more", ``0x10`` the sign of the last; from the
    third on, each is stored as the difference to the count two before."""
    if isinstance(string, str):
        string = string.encode()
    counts: list[int] = []
    p = 0
    while p < len(string):
        x = k = 0
        more = True
        while more:
            c = string[p] - 48
            x |= (c & 0x1F) << (5 * k)
            more = bool(c & 0x20)
            p += 1
            k += 1
            if not more and (c & 0x10):
                x |= -1 << (5 * k)
        if len(counts) > 2:
            x += counts[-2]
        counts.append(x & 0xFFFFFFFF)
    return counts


def _rle_decode(counts, height: int, width: int) -> np.ndarray:
    """Runs of 0s and 1s, alternating from 0, in column-major order (``rleDecode``)."""
    counts = np.asarray(counts, dtype=np.int64)
    if counts.sum() > height * width:
        raise ValueError("Invalid RLE mask representation")
    values = np.arange(len(counts), dtype=np.int64) % 2
    flat = np.zeros(height * width, dtype=np.uint8)
    runs = np.repeat(values.astype(np.uint8), counts)
    flat[:runs.size] = runs
    return flat.reshape(width, height).T


def _polygons_to_mask(polygons, height: int, width: int) -> np.ndarray:
    """The union of the polygons rasterised as ``pycocotools.mask.frPyObjects`` +
    ``merge`` do."""
    if not polygons:
        raise ValueError("COCO segmentation polygons are empty")
    if len(polygons[0]) == 4:
        # pycocotools reads a list whose first item has four numbers as boxes, which fails
        raise ValueError(
            "COCO segmentation polygons need at least 3 points each, got "
            f"{len(polygons[0]) // 2} in the first"
        )
    if len(polygons[0]) < 4:
        raise ValueError("input type is not supported.")
    mask = np.zeros((height, width), dtype=np.uint8)
    for polygon in polygons:
        mask |= _polygon_to_mask(polygon, height, width)
    return mask


def _trunc_int(values) -> np.ndarray:
    """C's ``(int)`` cast of doubles: toward zero."""
    return np.trunc(values).astype(np.int64)


def _polygon_to_mask(polygon, height: int, width: int) -> np.ndarray:
    """One polygon ``[x0, y0, x1, y1, ...]`` rasterised as pycocotools' ``rleFrPoly``: the
    boundary is traced on a 5x finer grid, the crossings of pixel-centre columns kept, and the
    pixels toggle at them down each column."""
    scale = 5.0
    xy = np.asarray(polygon, dtype=np.float64)
    k = len(xy) // 2
    xs_all = _trunc_int(scale * xy[0:2 * k:2] + 0.5)
    ys_all = _trunc_int(scale * xy[1:2 * k:2] + 0.5)
    xs_all = np.append(xs_all, xs_all[:1])
    ys_all = np.append(ys_all, ys_all[:1])
    # densely sampled boundary points (u, v), edge after edge
    us, vs = [], []
    for j in range(k):
        xs, xe, ys, ye = int(xs_all[j]), int(xs_all[j + 1]), int(ys_all[j]), int(ys_all[j + 1])
        dx, dy = abs(xe - xs), abs(ys - ye)
        flip = (dx >= dy and xs > xe) or (dx < dy and ys > ye)
        if flip:
            xs, xe, ys, ye = xe, xs, ye, ys
        if dx >= dy:
            d = np.arange(dx + 1)
            t = dx - d if flip else d
            # a zero-length edge gives 0/0 in C: its point is never read (see below)
            s = (ye - ys) / dx if dx else 0.0
            us.append(t + xs)
            vs.append(_trunc_int(ys + s * t + 0.5))
        else:
            d = np.arange(dy + 1)
            t = dy - d if flip else d
            s = (xe - xs) / dy
            vs.append(t + ys)
            us.append(_trunc_int(xs + s * t + 0.5))
    if not us:
        return np.zeros((height, width), dtype=np.uint8)
    u = np.concatenate(us).astype(np.int64)
    v = np.concatenate(vs).astype(np.int64)
    # points where the boundary crosses to another column: keep those on pixel centres
    step = np.nonzero(u[1:] != u[:-1])[0] + 1
    xd = np.where(u[step] < u[step - 1], u[step], u[step] - 1).astype(np.float64)
    xd = (xd + 0.5) / scale - 0.5
    keep = (np.floor(xd) == xd) & (xd >= 0) & (xd <= width - 1)
    yd = np.minimum(v[step], v[step - 1]).astype(np.float64)
    yd = (yd + 0.5) / scale - 0.5
    yd = np.ceil(np.clip(yd, 0, height))
    # a pixel (column-major) is inside when an odd number of crossings come at or before it
    positions = (xd[keep].astype(np.int64) * height + yd[keep].astype(np.int64))
    toggles = np.bincount(positions, minlength=height * width + 1)[:height * width]
    flat = (np.cumsum(toggles) % 2).astype(np.uint8)
    return flat.reshape(width, height).T


# -- VOC, SBD, CelebA, Kitti, pets, Cityscapes, WIDERFace ---------------------------------------


VOC_DETECTION_CATEGORIES = [
    "__background__",
    "aeroplane",
    "bicycle",
    "bird",
    "boat",
    "bottle",
    "bus",
    "car",
    "cat",
    "chair",
    "cow",
    "diningtable",
    "dog",
    "horse",
    "motorbike",
    "person",
    "pottedplant",
    "sheep",
    "sofa",
    "train",
    "tvmonitor",
]
VOC_DETECTION_CATEGORY_TO_IDX = dict(
    zip(VOC_DETECTION_CATEGORIES, range(len(VOC_DETECTION_CATEGORIES)))
)


@WRAPPER_FACTORIES.register(voc.VOCDetection)
def voc_detection_wrapper_factory(dataset, target_keys):
    target_keys = parse_target_keys(
        target_keys,
        available={
            # native
            "annotation",
            # added by the wrapper
            "boxes",
            "labels",
        },
        default={"boxes", "labels"},
    )

    def wrapper(idx, sample):
        tv_tensors = _tv_tensors()
        image, target = sample

        batched_instances = list_of_dicts_to_dict_of_lists(target["annotation"]["object"])

        if "annotation" not in target_keys:
            target = {}

        if "boxes" in target_keys:
            target["boxes"] = tv_tensors.BoundingBoxes(
                [
                    [int(bndbox[part]) for part in ("xmin", "ymin", "xmax", "ymax")]
                    for bndbox in batched_instances["bndbox"]
                ],
                format=tv_tensors.BoundingBoxFormat.XYXY,
                canvas_size=(image.height, image.width),
            )

        if "labels" in target_keys:
            target["labels"] = ember.tensor(
                [VOC_DETECTION_CATEGORY_TO_IDX[category] for category in batched_instances["name"]]
            )

        return image, target

    return wrapper


@WRAPPER_FACTORIES.register(sbd.SBDataset)
def sbd_wrapper(dataset, target_keys):
    if dataset.mode == "boundaries":
        raise_not_supported("SBDataset with mode='boundaries'")

    return segmentation_wrapper_factory(dataset, target_keys)


@WRAPPER_FACTORIES.register(celeba.CelebA)
def celeba_wrapper_factory(dataset, target_keys):
    if any(target_type in dataset.target_type for target_type in ["attr", "landmarks"]):
        raise_not_supported("`CelebA` dataset with `target_type=['attr', 'landmarks', ...]`")

    def wrapper(idx, sample):
        image, target = sample

        target = wrap_target_by_type(
            target,
            target_types=dataset.target_type,
            type_wrappers={
                "bbox": lambda item: _xywh_boxes_to_xyxy(item, (image.height, image.width)),
            },
        )

        return image, target

    return wrapper


KITTI_CATEGORIES = ["Car", "Van", "Truck", "Pedestrian", "Person_sitting", "Cyclist", "Tram",
                    "Misc", "DontCare"]
KITTI_CATEGORY_TO_IDX = dict(zip(KITTI_CATEGORIES, range(len(KITTI_CATEGORIES))))


@WRAPPER_FACTORIES.register(kitti.Kitti)
def kitti_wrapper_factory(dataset, target_keys):
    target_keys = parse_target_keys(
        target_keys,
        available={
            # native
            "type",
            "truncated",
            "occluded",
            "alpha",
            "bbox",
            "dimensions",
            "location",
            "rotation_y",
            # added by the wrapper
            "boxes",
            "labels",
        },
        default={"boxes", "labels"},
    )

    def wrapper(idx, sample):
        tv_tensors = _tv_tensors()
        image, target = sample

        if target is None:
            return image, target

        batched_target = list_of_dicts_to_dict_of_lists(target)
        target = {}

        if "boxes" in target_keys:
            target["boxes"] = tv_tensors.BoundingBoxes(
                batched_target["bbox"],
                format=tv_tensors.BoundingBoxFormat.XYXY,
                canvas_size=(image.height, image.width),
            )

        if "labels" in target_keys:
            target["labels"] = ember.tensor(
                [KITTI_CATEGORY_TO_IDX[category] for category in batched_target["type"]]
            )

        for target_key in target_keys - {"boxes", "labels"}:
            target[target_key] = batched_target[target_key]

        return image, target

    return wrapper


@WRAPPER_FACTORIES.register(oxford_iiit_pet.OxfordIIITPet)
def oxford_iiit_pet_wrapper_factor(dataset, target_keys):
    def wrapper(idx, sample):
        image, target = sample

        if target is not None:
            target = wrap_target_by_type(
                target,
                target_types=dataset._target_types,
                type_wrappers={
                    "segmentation": pil_image_to_mask,
                },
            )

        return image, target

    return wrapper


@WRAPPER_FACTORIES.register(cityscapes.Cityscapes)
def cityscapes_wrapper_factory(dataset, target_keys):
    if any(target_type in dataset.target_type for target_type in ["polygon", "color"]):
        raise_not_supported("`Cityscapes` dataset with `target_type=['polygon', 'color', ...]`")

    def instance_segmentation_wrapper(mask):
        # ids of 1000 and above are label * 1000 + instance (cityscapesScripts'
        # json2instanceImg.py); below, the label alone
        data = pil_image_to_mask(mask)
        masks = []
        labels = []
        for id in data.unique():
            masks.append(data == id)
            label = id
            if label >= 1_000:
                label //= 1_000
            labels.append(label)
        return dict(masks=_tv_tensors().Mask(ember.stack(masks)), labels=ember.stack(labels))

    def wrapper(idx, sample):
        image, target = sample

        target = wrap_target_by_type(
            target,
            target_types=dataset.target_type,
            type_wrappers={
                "instance": instance_segmentation_wrapper,
                "semantic": pil_image_to_mask,
            },
        )

        return image, target

    return wrapper


@WRAPPER_FACTORIES.register(widerface.WIDERFace)
def widerface_wrapper(dataset, target_keys):
    target_keys = parse_target_keys(
        target_keys,
        available={
            "bbox",
            "blur",
            "expression",
            "illumination",
            "occlusion",
            "pose",
            "invalid",
        },
        default="all",
    )

    def wrapper(idx, sample):
        image, target = sample

        if target is None:
            return image, target

        target = {key: target[key] for key in target_keys}

        if "bbox" in target_keys:
            target["bbox"] = _xywh_boxes_to_xyxy(target["bbox"], (image.height, image.width))

        return image, target

    return wrapper


def _register_video_datasets() -> None:
    """The video classification datasets that Ember has (none of HMDB51, Kinetics, UCF101
    yet): registered when they exist."""
    from ember.vision import datasets

    for name in ("HMDB51", "Kinetics", "UCF101"):
        dataset_cls = getattr(datasets, name, None)
        if isinstance(dataset_cls, type) and dataset_cls not in WRAPPER_FACTORIES:
            WRAPPER_FACTORIES.register(dataset_cls)(video_classification_wrapper_factory)
