"""Kinetics-400 class names and the rows of the video checkpoints' tables.

``_KINETICS400_CATEGORIES``: the 400 Kinetics-400 action classes in class-index order, read
from ``_kinetics400_categories.txt``. The names are the dataset's labels (Kinetics, DeepMind,
CC BY 4.0) as torchvision's ``models._meta._KINETICS400_CATEGORIES`` lists them (BSD-3-Clause),
one a line.
"""

from __future__ import annotations

from functools import partial
from importlib import resources
from typing import Any

from .._api import Weights
from .._meta import _MODELS_URL
from ._presets import VideoClassification

_KINETICS400_CATEGORIES: list[str] = (
    resources.files(__package__)
    .joinpath("_kinetics400_categories.txt")
    .read_text(encoding="utf-8")
    .splitlines()
)


def _video_classification(
    crop_size: tuple[int, int], resize_size: tuple[int, ...], **keywords: Any
) -> partial:
    """The :class:`VideoClassification` preset of a checkpoint, as torchvision binds it."""
    return partial(VideoClassification, crop_size=crop_size, resize_size=resize_size, **keywords)


def _kinetics400_weights(
    file: str,
    num_params: int,
    acc1: float,
    acc5: float,
    ops: float,
    file_size: float,
    *,
    transforms: partial,
    **meta: Any,
) -> Weights:
    """A Kinetics-400 checkpoint of ``download.pytorch.org/models/<file>.pth``.

    ``acc1``/``acc5``: its Kinetics-400 ``_metrics``, ``ops``: GFLOPS (``_ops``), ``file_size``:
    MB (``_file_size``); ``meta``: its other metadata (``min_size``, ``min_temporal_size``,
    ``recipe``, ``_docs``).
    """
    return Weights(
        url=_MODELS_URL.format(file),
        transforms=transforms,
        meta={
            "categories": _KINETICS400_CATEGORIES,
            **meta,
            "num_params": num_params,
            "_metrics": {"Kinetics-400": {"acc@1": acc1, "acc@5": acc5}},
            "_ops": ops,
            "_file_size": file_size,
        },
    )
