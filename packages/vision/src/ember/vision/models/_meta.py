"""Category names of the models' datasets (torchvision's ``models._meta``), and the one place
that turns a row of a checkpoint table into a :class:`~._api.Weights`.

``_IMAGENET_CATEGORIES``: the 1,000 ImageNet-1k class names in class-index order, read from
``_imagenet_categories.txt`` (built from timm's WordNet lemma lists; see ATTRIBUTION.md).

Every ``<Model>_Weights`` enum of the zoo lists its checkpoints as rows of
:func:`_imagenet_weights` calls: file name, parameter count, ImageNet-1K accuracies, GFLOPS and
file size, with the metadata shared by a family (preset, ``min_size``, ``recipe``, ``_docs``)
bound once in a ``functools.partial``.
"""

from importlib import resources
from typing import Any

from ._api import Weights, _Preset, _preset

_IMAGENET_CATEGORIES: list[str] = (
    resources.files(__package__)
    .joinpath("_imagenet_categories.txt")
    .read_text(encoding="utf-8")
    .splitlines()
)

# torchvision's checkpoints: the file name carries the sha256 prefix the downloader checks.
_MODELS_URL = "https://download.pytorch.org/models/{}.pth"

# ``_docs`` of the checkpoints of several families trained with torchvision's new recipe.
_DOCS_NEW_RECIPE = """
                These weights improve upon the results of the original paper by using a modified
                version of TorchVision's
                `new training recipe
                <https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.
            """


def _classification(crop_size: int, resize_size: int | None = None, **keywords: Any) -> _Preset:
    """torchvision's ``ImageClassification`` preset; ``resize_size`` is passed only when given,
    so that the preset's keywords are the ones torchvision lists for the checkpoint."""
    if resize_size is not None:
        keywords = {"resize_size": resize_size, **keywords}
    return _preset("ImageClassification", crop_size=crop_size, **keywords)


def _imagenet_weights(
    file: str,
    num_params: int,
    acc1: float,
    acc5: float,
    ops: float,
    file_size: float,
    *,
    transforms: _Preset,
    **meta: Any,
) -> Weights:
    """An ImageNet-1K checkpoint of ``download.pytorch.org/models/<file>.pth``.

    ``acc1``/``acc5``: its ``_metrics`` (top-1/top-5 accuracy), ``ops``: GFLOPS (``_ops``),
    ``file_size``: MB (``_file_size``); ``meta``: its other metadata (``min_size``, ``recipe``,
    ``_docs``, ...), ``categories`` defaulting to the ImageNet-1K class names.
    """
    return Weights(
        url=_MODELS_URL.format(file),
        transforms=transforms,
        meta={
            "categories": _IMAGENET_CATEGORIES,
            **meta,
            "num_params": num_params,
            "_metrics": {"ImageNet-1K": {"acc@1": acc1, "acc@5": acc5}},
            "_ops": ops,
            "_file_size": file_size,
        },
    )


#: the 21 Pascal VOC classes of the segmentation checkpoints (torchvision's ``models._meta``)
_VOC_CATEGORIES = [
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
