"""Helpers of the v2 transforms: a small pytree (the sample structure), argument checks,
and the queries that find the image size, boxes or keypoints in a flattened sample."""

from __future__ import annotations

import collections.abc
import numbers
from collections import OrderedDict, defaultdict, deque
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import Any

import PIL.Image

from ember import Tensor
from ember.vision import tv_tensors
from ember.vision.transforms.transforms import _check_sequence_input, _setup_angle, _setup_size

from .functional import get_dimensions, get_size, is_pure_tensor

__all__ = [
    "tree_flatten",
    "tree_unflatten",
    "check_type",
    "has_any",
    "has_all",
    "query_chw",
    "query_size",
    "get_bounding_boxes",
    "get_keypoints",
    "_check_sequence_input",
    "_setup_angle",
    "_setup_size",
]


# -- pytree -------------------------------------------------------------------------------
# Containers are nodes (tuple, list, dict, OrderedDict, defaultdict, deque, namedtuple), every
# other object a leaf; the same node types as ``torch.utils._pytree``.


class _Spec:
    __slots__ = ("kind", "context", "children")

    def __init__(self, kind, context, children):
        self.kind, self.context, self.children = kind, context, children


_LEAF = _Spec(None, None, ())


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _flatten_into(x, leaves: list) -> _Spec:
    tp = type(x)
    if tp in (list, tuple, deque) or _is_namedtuple(x):
        children = tuple(_flatten_into(v, leaves) for v in x)
        context = getattr(x, "maxlen", None) if tp is deque else None
        return _Spec(tp, context, children)
    if tp in (dict, OrderedDict, defaultdict):
        keys = list(x.keys())
        children = tuple(_flatten_into(x[k], leaves) for k in keys)
        factory = x.default_factory if tp is defaultdict else None
        return _Spec(tp, (keys, factory), children)
    leaves.append(x)
    return _LEAF


def tree_flatten(tree) -> tuple[list, _Spec]:
    """The leaves of ``tree`` in order, and its structure."""
    leaves: list = []
    spec = _flatten_into(tree, leaves)
    return leaves, spec


def _unflatten(spec: _Spec, it):
    if spec.kind is None:
        return next(it)
    values = [_unflatten(c, it) for c in spec.children]
    kind = spec.kind
    if kind in (list, tuple):
        return kind(values)
    if kind is deque:
        return deque(values, maxlen=spec.context)
    if kind in (dict, OrderedDict):
        return kind(zip(spec.context[0], values))
    if kind is defaultdict:
        return defaultdict(spec.context[1], zip(spec.context[0], values))
    return kind(*values)  # namedtuple


def tree_unflatten(leaves, spec: _Spec):
    """The inverse of :func:`tree_flatten`."""
    return _unflatten(spec, iter(leaves))


# -- argument checks ----------------------------------------------------------------------


def _setup_number_or_seq(arg, name: str) -> Sequence[float]:
    if not isinstance(arg, (int, float, Sequence)):
        raise TypeError(f"{name} should be a number or a sequence of numbers. Got {type(arg)}")
    if isinstance(arg, Sequence) and len(arg) not in (1, 2):
        raise ValueError(f"If {name} is a sequence its length should be 1 or 2. Got {len(arg)}")
    if isinstance(arg, Sequence):
        for element in arg:
            if not isinstance(element, (int, float)):
                raise ValueError(f"{name} should be a sequence of numbers. Got {type(element)}")
    if isinstance(arg, (int, float)):
        return [float(arg), float(arg)]
    if len(arg) == 1:
        return [float(arg[0]), float(arg[0])]
    return [float(arg[0]), float(arg[1])]


def _check_fill_arg(fill) -> None:
    if isinstance(fill, dict):
        for value in fill.values():
            _check_fill_arg(value)
    elif fill is not None and not isinstance(fill, (numbers.Number, tuple, list)):
        raise TypeError(
            "Got inappropriate fill arg, only Numbers, tuples, lists and dicts are allowed."
        )


def _convert_fill_arg(fill):
    if fill is None:
        return fill
    if not isinstance(fill, (int, float)):
        fill = [float(v) for v in list(fill)]
    return fill


def _setup_fill_arg(fill) -> dict:
    _check_fill_arg(fill)
    if isinstance(fill, dict):
        for k, v in fill.items():
            fill[k] = _convert_fill_arg(v)
        return fill
    return {"others": _convert_fill_arg(fill)}


def _get_fill(fill_dict, inpt_type):
    if inpt_type in fill_dict:
        return fill_dict[inpt_type]
    elif "others" in fill_dict:
        return fill_dict["others"]
    return None  # torchvision's default when a fill dict has no entry (and no "others")


def _check_padding_arg(padding) -> None:
    err_msg = f"Padding must be an int or a 1, 2, or 4 element of tuple or list, got {padding}."
    if isinstance(padding, (tuple, list)):
        if len(padding) not in [1, 2, 4] or not all(isinstance(p, int) for p in padding):
            raise ValueError(err_msg)
    elif not isinstance(padding, int):
        raise ValueError(err_msg)


def _check_padding_mode_arg(padding_mode) -> None:
    if padding_mode not in ["constant", "edge", "reflect", "symmetric"]:
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")


def _find_labels_default_heuristic(inputs: Any) -> Tensor:
    if isinstance(inputs, (tuple, list)):
        inputs = inputs[1]
    if is_pure_tensor(inputs):
        return inputs
    if not isinstance(inputs, collections.abc.Mapping):
        raise ValueError(
            "When using the default labels_getter, the input passed to forward must be a "
            "dictionary or a two-tuple whose second item is a dictionary or a tensor, but got "
            f"{inputs} instead."
        )
    candidate_key = None
    with suppress(StopIteration):
        candidate_key = next(key for key in inputs.keys() if key.lower() == "labels")
    if candidate_key is None:
        with suppress(StopIteration):
            candidate_key = next(key for key in inputs.keys() if "label" in key.lower())
    if candidate_key is None:
        raise ValueError(
            "Could not infer where the labels are in the sample. Try passing a callable as the "
            "labels_getter parameter?If there are no labels in the sample by design, pass "
            "labels_getter=None."
        )
    return inputs[candidate_key]


def _parse_labels_getter(labels_getter) -> Callable[[Any], Any]:
    if labels_getter == "default":
        return _find_labels_default_heuristic
    elif callable(labels_getter):
        return labels_getter
    elif labels_getter is None:
        return lambda _: None
    raise ValueError(
        "labels_getter should either be 'default', a callable, or None, but got "
        f"{labels_getter}."
    )


# -- queries ------------------------------------------------------------------------------


def _sequence_to_str(seq, separate_last: str = "") -> str:
    if not seq:
        return ""
    if len(seq) == 1:
        return f"'{seq[0]}'"
    head = "'" + "', '".join([str(item) for item in seq[:-1]]) + "'"
    tail = f"{'' if separate_last and len(seq) == 2 else ','} {separate_last}'{seq[-1]}'"
    return head + tail


def get_bounding_boxes(flat_inputs: list[Any]) -> tv_tensors.BoundingBoxes:
    """The first ``BoundingBoxes`` of the flattened sample."""
    try:
        return next(inpt for inpt in flat_inputs if isinstance(inpt, tv_tensors.BoundingBoxes))
    except StopIteration:
        raise ValueError("No bounding boxes were found in the sample") from None


def get_keypoints(flat_inputs: list[Any]) -> tv_tensors.KeyPoints:
    """The first ``KeyPoints`` of the flattened sample."""
    try:
        return next(inpt for inpt in flat_inputs if isinstance(inpt, tv_tensors.KeyPoints))
    except StopIteration:
        raise ValueError("No keypoints were found in the sample") from None


def query_chw(flat_inputs: list[Any]) -> tuple[int, int, int]:
    """``(C, H, W)`` shared by the images and videos of the sample."""
    chws = {
        tuple(get_dimensions(inpt))
        for inpt in flat_inputs
        if check_type(inpt, (is_pure_tensor, tv_tensors.Image, PIL.Image.Image,
                             tv_tensors.Video))
    }
    if not chws:
        raise TypeError("No image or video was found in the sample")
    elif len(chws) > 1:
        raise ValueError(f"Found multiple CxHxW dimensions in the sample: "
                         f"{_sequence_to_str(sorted(chws))}")
    c, h, w = chws.pop()
    return c, h, w


def query_size(flat_inputs: list[Any]) -> tuple[int, int]:
    """``(H, W)`` shared by the images, videos, masks, boxes and keypoints of the sample."""
    sizes = {
        tuple(get_size(inpt))
        for inpt in flat_inputs
        if check_type(inpt, (is_pure_tensor, tv_tensors.Image, PIL.Image.Image,
                             tv_tensors.Video, tv_tensors.Mask, tv_tensors.BoundingBoxes,
                             tv_tensors.KeyPoints))
    }
    if not sizes:
        raise TypeError("No image, video, mask, bounding box of keypoint was found in the sample")
    elif len(sizes) > 1:
        raise ValueError(f"Found multiple HxW dimensions in the sample: "
                         f"{_sequence_to_str(sorted(sizes))}")
    h, w = sizes.pop()
    return h, w


def check_type(obj: Any, types_or_checks: tuple) -> bool:
    """Whether ``obj`` is an instance of one of the types or passes one of the checks."""
    for type_or_check in types_or_checks:
        if (isinstance(obj, type_or_check) if isinstance(type_or_check, type)
                else type_or_check(obj)):
            return True
    return False


def has_any(flat_inputs: list[Any], *types_or_checks) -> bool:
    """Whether any input matches any of the types or checks."""
    return any(check_type(inpt, types_or_checks) for inpt in flat_inputs)


def has_all(flat_inputs: list[Any], *types_or_checks) -> bool:
    """Whether each of the types or checks matches some input."""
    for type_or_check in types_or_checks:
        for inpt in flat_inputs:
            if (isinstance(inpt, type_or_check) if isinstance(type_or_check, type)
                    else type_or_check(inpt)):
                break
        else:
            return False
    return True
