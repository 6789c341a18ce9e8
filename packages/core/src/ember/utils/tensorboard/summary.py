"""``Summary`` protobufs, one builder per kind of data (``torch.utils.tensorboard.summary``).

Each builder returns a ``tensorboard.compat.proto.summary_pb2.Summary`` in the layout that
TensorBoard's plugins read (scalars, histograms, images, text, hparams, pr_curves,
custom_scalars); :class:`~ember.utils.tensorboard.SummaryWriter` writes them as events.
"""

from __future__ import annotations

import io
import wave

import numpy as np
from google.protobuf import struct_pb2
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.custom_scalar import layout_pb2
from tensorboard.plugins.pr_curve.plugin_data_pb2 import PrCurvePluginData
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

import ember

from ..._naming import bare as _bare
from ._convert import convert_to_HWC, make_np

__all__ = ["scalar", "histogram", "histogram_raw", "make_histogram", "image", "make_image",
           "text", "hparams", "pr_curve", "pr_curve_raw", "compute_curve", "custom_scalars",
           "tensor_proto", "audio", "default_bins"]


def default_bins() -> list:
    """TensorFlow's histogram bucket edges: ``±1e-12 * 1.1**k`` up to 1e20, and 0."""
    v, positive = 1e-12, []
    while v < 1e20:
        positive.append(v)
        v *= 1.1
    return [-x for x in reversed(positive)] + [0] + positive


def _as_array(x) -> np.ndarray:
    """A tensor, array, number or (nested) list as a NumPy array."""
    if isinstance(x, (list, tuple)):
        return np.asarray([make_np(v) if isinstance(v, ember.Tensor) else v for v in x])
    return make_np(x)


def _shape(dims) -> TensorShapeProto:
    return TensorShapeProto(dim=[TensorShapeProto.Dim(size=int(d)) for d in dims])


def _plugin_metadata(name: str, content: bytes = b"") -> SummaryMetadata:
    return SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=name,
                                                                  content=content))


# -- scalars -----------------------------------------------------------------------------------

def scalar(name: str, value, new_style: bool = False, double_precision: bool = False) -> Summary:
    """A one-value summary: the legacy ``simple_value`` field (float32), or with ``new_style``
    a scalars-plugin tensor (``DT_FLOAT``, or ``DT_DOUBLE`` with ``double_precision``)."""
    array = make_np(value).squeeze()
    if array.ndim != 0:
        raise ValueError(f"Tensor should contain one element (0 dimensions). Was given size: "
                         f"{array.size} and {array.ndim} dimensions.")
    number = float(array)
    if not new_style:
        return Summary(value=[Summary.Value(tag=name, simple_value=number)])
    if double_precision:
        tensor = TensorProto(dtype="DT_DOUBLE", double_val=[number])
    else:
        tensor = TensorProto(dtype="DT_FLOAT", float_val=[number])
    return Summary(value=[Summary.Value(tag=name, tensor=tensor,
                                        metadata=_plugin_metadata("scalars"))])


# -- histograms --------------------------------------------------------------------------------

def histogram_raw(name: str, min, max, num, sum, sum_squares, bucket_limits,
                  bucket_counts) -> Summary:
    """A histogram from its statistics: bucket ``i`` counts the values in
    ``(bucket_limits[i-1], bucket_limits[i]]``."""
    limits = _as_array(bucket_limits).astype(np.float64).reshape(-1)
    counts = _as_array(bucket_counts).astype(np.float64).reshape(-1)
    if limits.size != counts.size:
        raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
    hist = HistogramProto(min=float(min), max=float(max), num=float(num), sum=float(sum),
                          sum_squares=float(sum_squares), bucket_limit=limits.tolist(),
                          bucket=counts.tolist())
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


def make_histogram(values: np.ndarray, bins, max_bins: int | None = None) -> HistogramProto:
    """``values`` counted into ``bins`` (anything ``np.histogram`` takes), merged down by
    ``max_bins`` as PyTorch does, and cut to the buckets that hold values plus one empty
    bucket on the left (TensorBoard keeps only right edges)."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if values.size == 0:
        raise ValueError("The input has no element.")
    if not np.isfinite(values).all():
        raise ValueError("The histogram's values must be finite (got NaN or infinity).")
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        group = len(counts) // max_bins
        remainder = len(counts) % group
        if remainder:
            counts = np.pad(counts, (0, group - remainder))
        counts = counts.reshape(-1, group).sum(axis=-1)
        merged = np.empty(counts.size + 1, dtype=limits.dtype)
        merged[:-1] = limits[:-1:group]
        merged[-1] = limits[-1]
        limits = merged
    occupied = np.nonzero(counts)[0]
    if occupied.size == 0:
        raise ValueError("The histogram is empty: no value falls inside the bins "
                         f"[{limits[0]}, {limits[-1]}].")
    start, end = int(occupied[0]), int(occupied[-1]) + 1
    if start > 0:
        counts = counts[start - 1:end]
    else:
        counts = np.concatenate([[0], counts[:end]])
    limits = limits[start:end + 1]
    return HistogramProto(min=values.min(), max=values.max(), num=len(values),
                          sum=values.sum(), sum_squares=values.dot(values),
                          bucket_limit=limits.tolist(), bucket=counts.tolist())


def histogram(name: str, values, bins, max_bins: int | None = None) -> Summary:
    """A histogram summary of ``values`` (any shape), see :func:`make_histogram`."""
    hist = make_histogram(make_np(values).astype(np.float64), bins, max_bins)
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


# -- images ------------------------------------------------------------------------------------

def _scale_factor(array: np.ndarray) -> int:
    """uint8 pixels are 0-255 already; anything else is taken to be in [0, 1]."""
    return 1 if array.dtype == np.uint8 else 255


def make_image(array: np.ndarray, rescale: float = 1) -> Summary.Image:
    """An ``H x W x C`` uint8 array (C 3 or 4) PNG-encoded with Pillow."""
    from PIL import Image

    height, width, channels = array.shape
    picture = Image.fromarray(array)
    if rescale != 1:
        picture = picture.resize((int(width * rescale), int(height * rescale)),
                                 Image.Resampling.LANCZOS)
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    return Summary.Image(height=height, width=width, colorspace=channels,
                         encoded_image_string=buffer.getvalue())


def image(tag: str, tensor, rescale: float = 1, dataformats: str = "NCHW") -> Summary:
    """An image summary: ``tensor`` in ``dataformats`` (a batch is tiled into one image);
    uint8 values are pixels, other dtypes are scaled from [0, 1]; out-of-range values are
    clipped."""
    array = convert_to_HWC(make_np(tensor), dataformats)
    if array.dtype.kind not in "uifb":
        raise TypeError(f"an image must hold real numbers, got dtype {array.dtype}")
    scale = _scale_factor(array)
    pixels = (array.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    return Summary(value=[Summary.Value(tag=tag, image=make_image(pixels, rescale=rescale))])


# -- text, tensors, audio ----------------------------------------------------------------------

def text(tag: str, text_string: str) -> Summary:
    """A text-plugin summary (shown as Markdown) under ``<tag>/text_summary``."""
    if not isinstance(text_string, str):
        raise TypeError(f"text_string should be a str, got {type(text_string).__name__}")
    tensor = TensorProto(dtype="DT_STRING", string_val=[text_string.encode("utf_8")],
                         tensor_shape=_shape([1]))
    metadata = _plugin_metadata("text", TextPluginData(version=0).SerializeToString())
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=metadata,
                                        tensor=tensor)])


_TENSOR_FIELDS = {
    "float16": ("DT_HALF", "half_val"), "bfloat16": ("DT_BFLOAT16", "half_val"),
    "float32": ("DT_FLOAT", "float_val"), "float64": ("DT_DOUBLE", "double_val"),
    "int8": ("DT_INT8", "int_val"), "uint8": ("DT_UINT8", "int_val"),
    "int16": ("DT_INT16", "int_val"), "int32": ("DT_INT32", "int_val"),
    "int64": ("DT_INT64", "int64_val"), "bool": ("DT_BOOL", "bool_val"),
    "complex64": ("DT_COMPLEX64", "scomplex_val"),
    "complex128": ("DT_COMPLEX128", "dcomplex_val"),
}


def tensor_proto(tag: str, tensor) -> Summary:
    """A whole tensor in a ``TensorProto`` (the "tensor" plugin's layout)."""
    if not isinstance(tensor, ember.Tensor):
        raise TypeError(f"add_tensor expects an ember tensor, got {type(tensor).__name__}")
    dtype = _bare(tensor.dtype)
    if tensor.numel() * tensor.element_size() >= 1 << 31:
        raise ValueError("tensor is bigger than protocol buffer's hard limit of 2GB in size")
    if dtype not in _TENSOR_FIELDS:
        raise ValueError(f"{tag} has unsupported tensor dtype {tensor.dtype}")
    proto_dtype, field = _TENSOR_FIELDS[dtype]
    array = make_np(tensor)
    if field == "half_val":
        # PyTorch stores each half value's float32 bit pattern as an int (summary.half_to_int)
        values = array.astype(np.float32).reshape(-1).view(np.int32).tolist()
    elif field.endswith("complex_val"):
        values = np.stack([array.real, array.imag], axis=-1).reshape(-1).tolist()
    else:
        values = array.reshape(-1).tolist()
    proto = TensorProto(dtype=proto_dtype, tensor_shape=_shape(array.shape), **{field: values})
    return Summary(value=[Summary.Value(tag=tag, metadata=_plugin_metadata("tensor"),
                                        tensor=proto)])


def audio(tag: str, tensor, sample_rate: int = 44100) -> Summary:
    """A mono clip (values in [-1, 1], clipped) as 16-bit WAV."""
    array = make_np(tensor).squeeze().astype(np.float64)
    if array.ndim != 1:
        raise ValueError(f"input tensor should be 1 dimensional, got shape {array.shape}.")
    array = np.clip(array, -1, 1)
    pcm = (array * np.iinfo(np.int16).max).astype("<i2")
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(sample_rate)
        out.writeframes(pcm.tobytes())
    clip = Summary.Audio(sample_rate=sample_rate, num_channels=1, length_frames=len(pcm),
                         encoded_audio_string=buffer.getvalue(), content_type="audio/wav")
    return Summary(value=[Summary.Value(tag=tag, audio=clip)])


# -- hparams -----------------------------------------------------------------------------------

def _hparam_value(key: str, value, domain):
    """``(struct_pb2.Value, hparams DataType name, domain ListValue or None)``."""
    if isinstance(value, ember.Tensor):
        value = float(make_np(value).reshape(-1)[0])
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        kind, field = "DATA_TYPE_BOOL", "bool_value"
    elif isinstance(value, (int, float)):
        kind, field = "DATA_TYPE_FLOAT64", "number_value"
    elif isinstance(value, str):
        kind, field = "DATA_TYPE_STRING", "string_value"
    else:
        raise ValueError(f"hparam {key!r}: value should be one of int, float, str, bool, or "
                         f"ember.Tensor, got {type(value).__name__}")
    listed = None
    if domain is not None:
        listed = struct_pb2.ListValue(values=[struct_pb2.Value(**{field: d}) for d in domain])
    return struct_pb2.Value(**{field: value}), kind, listed


def hparams(hparam_dict: dict, metric_dict: dict, hparam_domain_discrete: dict | None = None):
    """The hparams plugin's three summaries: the experiment (hyperparameter and metric
    names), the session start (this run's values) and the session end (success)."""
    from tensorboard.plugins.hparams import metadata
    from tensorboard.plugins.hparams.api_pb2 import (
        DataType,
        Experiment,
        HParamInfo,
        MetricInfo,
        MetricName,
        Status,
    )
    from tensorboard.plugins.hparams.plugin_data_pb2 import (
        HParamsPluginData,
        SessionEndInfo,
        SessionStartInfo,
    )

    if not isinstance(hparam_dict, dict):
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    domains = hparam_domain_discrete or {}
    if not isinstance(domains, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing "
                        "logged.")
    for k, v in domains.items():
        if k not in hparam_dict or not isinstance(v, list) \
                or not all(isinstance(d, type(hparam_dict[k])) for d in v):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same "
                            f"type as hparam_dict[{k}].")
    start = SessionStartInfo()
    infos = []
    for k, v in hparam_dict.items():
        if v is None:
            continue
        value, kind, listed = _hparam_value(k, v, domains.get(k))
        start.hparams[k].CopyFrom(value)
        infos.append(HParamInfo(name=k, type=DataType.Value(kind), domain_discrete=listed))
    experiment = Experiment(hparam_infos=infos,
                            metric_infos=[MetricInfo(name=MetricName(tag=k))
                                          for k in metric_dict])
    end = SessionEndInfo(status=Status.Value("STATUS_SUCCESS"))

    def summary(tag: str, **content) -> Summary:
        data = HParamsPluginData(version=metadata.PLUGIN_DATA_VERSION, **content)
        smd = _plugin_metadata(metadata.PLUGIN_NAME, data.SerializeToString())
        return Summary(value=[Summary.Value(tag=tag, metadata=smd)])

    return (summary(metadata.EXPERIMENT_TAG, experiment=experiment),
            summary(metadata.SESSION_START_INFO_TAG, session_start_info=start),
            summary(metadata.SESSION_END_INFO_TAG, session_end_info=end))


# -- PR curves ---------------------------------------------------------------------------------

def compute_curve(labels, predictions, num_thresholds: int = 127, weights=None) -> np.ndarray:
    """The ``6 x num_thresholds`` PR-curve table (TP, FP, TN, FN, precision, recall) of binary
    ``labels`` against ``predictions`` in [0, 1], threshold ``i`` being
    ``i / (num_thresholds - 1)``, as TensorBoard's ``pr_curve`` op computes it."""
    labels, predictions = _as_array(labels), _as_array(predictions)
    if labels.shape != predictions.shape:
        raise ValueError(f"labels and predictions must have the same shape, got "
                         f"{tuple(labels.shape)} and {tuple(predictions.shape)}")
    predictions = predictions.astype(np.float64)
    if predictions.size and not (np.all(predictions >= 0) and np.all(predictions <= 1)):
        raise ValueError("predictions must be probabilities in [0, 1] (got values from "
                         f"{np.nanmin(predictions)} to {np.nanmax(predictions)})")
    weights = 1.0 if weights is None else _as_array(weights).astype(np.float64)
    bucket = np.floor(predictions * (num_thresholds - 1)).astype(np.int32)
    truth = labels.astype(np.float64)
    span = (0, num_thresholds - 1)
    tp_buckets, _ = np.histogram(bucket, bins=num_thresholds, range=span,
                                 weights=truth * weights)
    fp_buckets, _ = np.histogram(bucket, bins=num_thresholds, range=span,
                                 weights=(1.0 - truth) * weights)
    tp = np.cumsum(tp_buckets[::-1])[::-1]
    fp = np.cumsum(fp_buckets[::-1])[::-1]
    tn = fp[0] - fp
    fn = tp[0] - tp
    precision = tp / np.maximum(1e-7, tp + fp)
    recall = tp / np.maximum(1e-7, tp + fn)
    return np.stack((tp, fp, tn, fn, precision, recall))


def _pr_summary(tag: str, data: np.ndarray, num_thresholds: int) -> Summary:
    content = PrCurvePluginData(version=0, num_thresholds=num_thresholds).SerializeToString()
    tensor = TensorProto(dtype="DT_FLOAT", float_val=data.reshape(-1).tolist(),
                         tensor_shape=_shape(data.shape))
    return Summary(value=[Summary.Value(tag=tag, metadata=_plugin_metadata("pr_curves", content),
                                        tensor=tensor)])


def _check_thresholds(num_thresholds: int) -> int:
    if isinstance(num_thresholds, bool) or not isinstance(num_thresholds, (int, np.integer)) \
            or num_thresholds < 2:
        raise ValueError(f"num_thresholds should be an int >= 2, got {num_thresholds!r}")
    return min(int(num_thresholds), 127)  # as PyTorch: larger tables are cut to 127


def pr_curve(tag: str, labels, predictions, num_thresholds: int = 127, weights=None) -> Summary:
    """A pr_curves-plugin summary computed from ``labels`` and ``predictions``."""
    num_thresholds = _check_thresholds(num_thresholds)
    data = compute_curve(labels, predictions, num_thresholds, weights)
    return _pr_summary(tag, data, num_thresholds)


def pr_curve_raw(tag: str, tp, fp, tn, fn, precision, recall, num_thresholds: int = 127,
                 weights=None) -> Summary:
    """A pr_curves-plugin summary from precomputed per-threshold counts and ratios."""
    num_thresholds = _check_thresholds(num_thresholds)
    rows = [_as_array(x).astype(np.float64).reshape(-1)
            for x in (tp, fp, tn, fn, precision, recall)]
    if len({r.size for r in rows}) != 1:
        raise ValueError("true_positive_counts, false_positive_counts, true_negative_counts, "
                         "false_negative_counts, precision and recall must have the same "
                         f"length, got {[r.size for r in rows]}")
    return _pr_summary(tag, np.stack(rows), num_thresholds)


# -- custom scalars ----------------------------------------------------------------------------

def custom_scalars(layout: dict) -> Summary:
    """The custom_scalars plugin's layout: ``{category: {chart title: ["Multiline", [tags]]
    or ["Margin", [value, lower, upper]]}}``."""
    categories = []
    for category, charts in layout.items():
        built = []
        for title, (kind, tags) in charts.items():
            if kind == "Margin":
                if len(tags) != 3:
                    raise ValueError(f"a Margin chart needs 3 tags (value, lower, upper), got "
                                     f"{len(tags)}")
                series = layout_pb2.MarginChartContent.Series(value=tags[0], lower=tags[1],
                                                              upper=tags[2])
                built.append(layout_pb2.Chart(
                    title=title, margin=layout_pb2.MarginChartContent(series=[series])))
            elif kind == "Multiline":
                built.append(layout_pb2.Chart(
                    title=title, multiline=layout_pb2.MultilineChartContent(tag=list(tags))))
            else:
                raise ValueError(f"chart {title!r}: the kind should be 'Multiline' or "
                                 f"'Margin', got {kind!r}")
        categories.append(layout_pb2.Category(title=category, chart=built))
    tensor = TensorProto(dtype="DT_STRING", tensor_shape=TensorShapeProto(),
                         string_val=[layout_pb2.Layout(category=categories).SerializeToString()])
    return Summary(value=[Summary.Value(tag="custom_scalars__config__", tensor=tensor,
                                        metadata=_plugin_metadata("custom_scalars"))])
