"""ONNX import: :func:`load_model` reads an ONNX file into an :class:`OnnxModule`, a
``Module`` that runs the graph node by node with Ember ops.

The ``onnx`` package (the ``ember-nn[onnx]`` extra) parses and checks the file; it is
imported when a model is loaded, never at ``import ember.onnx``.
"""

from __future__ import annotations

import errno
import os
import re
import warnings
from collections.abc import Iterator

import numpy as np

import ember
from ember import nn

from . import _import_nn, _import_rnn, _import_tensor  # noqa: F401  (they register operators)
from ._ops_import import ONNX_DTYPES, OPS, Call, Node, ember_dtype, onnx_dtype_name

__all__ = ["OnnxModule", "load_model"]

_DEFAULT_DOMAINS = ("", "ai.onnx")

#: Inputs that are statistics or sizes, not weights: a float initializer used only there is a
#: buffer, not a trainable parameter.
_NON_TRAINABLE_INPUTS = {"BatchNormalization": (3, 4), "Resize": (1, 2, 3), "Upsample": (1,),
                         "Pad": (2,), "Clip": (1, 2)}


def _require_onnx():
    try:
        import onnx
    except ImportError as e:
        raise ModuleNotFoundError(
            "ember.onnx needs the 'onnx' package to read ONNX files: "
            "pip install ember-nn[onnx]", name="onnx") from e
    return onnx


# -- reading the file ---------------------------------------------------------------------------

def _read(onnx, f) -> tuple[object, str | None, str]:
    """``(ModelProto, folder for external data or None, how to name the source)``."""
    if isinstance(f, onnx.ModelProto):
        return f, None, "the ONNX ModelProto"
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        with open(path, "rb") as fh:
            data = fh.read()
        return _parse(onnx, data, repr(path)), os.path.dirname(os.path.abspath(path)), repr(path)
    if isinstance(f, (bytes, bytearray, memoryview)):
        return _parse(onnx, bytes(f), "the ONNX bytes"), None, "the ONNX bytes"
    if hasattr(f, "read"):
        name = getattr(f, "name", None)
        source = repr(name) if isinstance(name, str) else "the ONNX file object"
        folder = os.path.dirname(os.path.abspath(name)) if isinstance(name, str) else None
        return _parse(onnx, f.read(), source), folder, source
    raise TypeError("load_model(): f must be a path, bytes, a binary file object or an "
                    f"onnx.ModelProto, not {type(f).__name__}")


def _parse(onnx, data: bytes, source: str):
    from google.protobuf.message import DecodeError

    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, ValueError, RuntimeError) as e:
        raise ValueError(f"{source} is not a valid ONNX model: it is truncated, corrupt or not "
                         f"ONNX at all ({len(data)} bytes; protobuf: {e})") from e
    if not model.HasField("graph") or model.ir_version <= 0:
        raise ValueError(f"{source} is not an ONNX model (no graph or IR version in its "
                         f"{len(data)} bytes)")
    return model


def _graph_tensors(graph) -> Iterator[tuple[str, object]]:
    """``(what, TensorProto)`` for each tensor stored in the graph: initializers and the
    tensors of node attributes (Constant values, subgraphs)."""
    for tensor in graph.initializer:
        yield f"initializer {tensor.name!r}", tensor
    for sparse in graph.sparse_initializer:
        yield f"initializer {sparse.values.name!r}", sparse.values
        yield f"initializer {sparse.values.name!r} (indices)", sparse.indices
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield f"attribute {attr.name!r} of node {node.name or node.op_type!r}", attr.t
            for tensor in attr.tensors:
                yield f"attribute {attr.name!r} of node {node.name or node.op_type!r}", tensor
            if attr.HasField("g"):
                yield from _graph_tensors(attr.g)
            for sub in attr.graphs:
                yield from _graph_tensors(sub)


def _load_external_data(onnx, model, folder: str | None, source: str) -> None:
    """Read the external data files of the model's tensors into them, with an error that names
    a missing or short file."""
    from onnx.external_data_helper import ExternalDataInfo, load_external_data_for_tensor

    for what, tensor in _graph_tensors(model.graph):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        info = ExternalDataInfo(tensor)
        if folder is None:
            raise ValueError(f"{source}: {what} keeps its data in the external file "
                             f"{info.location!r}; load the model from its path so the file "
                             "can be found beside it")
        path = os.path.join(folder, info.location)
        if not os.path.isfile(path):
            raise FileNotFoundError(
                errno.ENOENT, f"{source}: the external data file {info.location!r} of {what} "
                f"is missing (looked in {folder})", path)
        offset = info.offset or 0
        needed = info.length or _byte_size(onnx, tensor) or 0
        available = max(os.path.getsize(path) - offset, 0)
        if needed > available:
            raise ValueError(f"{source}: the external data file {info.location!r} is "
                             f"truncated: {what} needs {needed} bytes from offset {offset}, "
                             f"the file holds {available}")
        try:
            load_external_data_for_tensor(tensor, folder)
        except Exception as e:  # onnx refuses locations outside the folder, unreadable files
            raise ValueError(f"{source}: cannot read the external data of {what} from "
                             f"{info.location!r}: {e}") from e
        tensor.data_location = onnx.TensorProto.DEFAULT
        del tensor.external_data[:]


def _byte_size(onnx, tensor) -> int | None:
    try:
        itemsize = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
    except (KeyError, TypeError, ValueError):
        return None
    return int(np.prod(tensor.dims, dtype=np.int64)) * itemsize


_PROTOBUF_LIMIT = 2**31 - 1


def _check(onnx, model, path, source: str, strict: bool) -> None:
    """Run ``onnx.checker.check_model``; a model over protobuf's 2 GB limit (its external data
    read in) is checked from its file."""
    try:
        if model.ByteSize() < _PROTOBUF_LIMIT:
            onnx.checker.check_model(model)
        elif path is not None:
            onnx.checker.check_model(os.fspath(path))
        else:
            warnings.warn(f"{source}: over 2 GB, so not checked by onnx.checker (load it from "
                          "its path to check it)", stacklevel=3)
    except (onnx.checker.ValidationError, ValueError) as e:
        message = f"{source}: the ONNX checker rejects the model: {' '.join(str(e).split())}"
        if strict:
            raise ValueError(message + " (load_model(..., strict=False) runs it anyway)") from e
        warnings.warn(message, stacklevel=3)


def load_model(f, *, strict: bool = True) -> OnnxModule:
    """Load an ONNX model as an :class:`OnnxModule` that runs its graph with Ember ops.

    Args:
        f: a path, the file's bytes, a binary file object, or an ``onnx.ModelProto``. External
            data (weights in separate files) is read from the model file's folder.
        strict: when ``True`` (default), a model that ``onnx.checker.check_model`` rejects is an
            error; when ``False`` the checker's message is a warning and the graph is run as
            far as Ember can.

    Returns:
        An ``ember.nn.Module``: ``module(*inputs)`` returns a tensor for a graph with one
        output, a tuple otherwise. Float initializers are trainable ``nn.Parameter``\\ s, so
        gradients flow through the imported graph; see :class:`OnnxModule` for how their names
        appear in ``state_dict()``.

    Raises:
        ModuleNotFoundError: the ``onnx`` package is missing (``pip install ember-nn[onnx]``).
        FileNotFoundError: the file, or an external data file it references, is missing.
        ValueError: the input is not an ONNX model, is truncated, or fails the checker.
        RuntimeError: the graph uses operators Ember does not run; all of them are listed,
            with the model's opset and the nodes that use them.

    Example::

        >>> model = ember.onnx.load_model("resnet18.onnx")  # doctest: +SKIP
        >>> logits = model(ember.randn(1, 3, 224, 224))  # doctest: +SKIP
    """
    onnx = _require_onnx()
    model, folder, source = _read(onnx, f)
    if isinstance(f, onnx.ModelProto):  # external data is read into a copy, not the caller's
        model = onnx.ModelProto()
        model.CopyFrom(f)
    _load_external_data(onnx, model, folder, source)
    path = f if isinstance(f, (str, os.PathLike)) else None
    _check(onnx, model, path, source, strict)
    if len(model.functions):
        import onnx.inliner

        model = onnx.inliner.inline_local_functions(model)
    return OnnxModule(model, source=source)


# -- the module ---------------------------------------------------------------------------------

def _attribute_value(onnx, attr):
    value = onnx.helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, onnx.TensorProto):
        return onnx.numpy_helper.to_array(value)
    if isinstance(value, onnx.SparseTensorProto):
        return _dense(onnx, value)
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return [v.decode("utf-8") for v in value]
    if isinstance(value, list) and value and isinstance(value[0], onnx.TensorProto):
        return [onnx.numpy_helper.to_array(v) for v in value]
    return value


def _dense(onnx, sparse) -> np.ndarray:
    values = onnx.numpy_helper.to_array(sparse.values)
    indices = onnx.numpy_helper.to_array(sparse.indices)
    dense = np.zeros(tuple(sparse.dims), dtype=values.dtype)
    if indices.ndim == 1:  # linear indices
        dense.reshape(-1)[indices] = values
    else:
        dense[tuple(indices.T)] = values
    return dense


def _constant_value(attrs: dict) -> np.ndarray:
    """The value of a Constant node (any of its attribute forms)."""
    if "value" in attrs:
        return np.asarray(attrs["value"])
    if "sparse_value" in attrs:
        return attrs["sparse_value"]
    if "value_float" in attrs:
        return np.asarray(attrs["value_float"], dtype=np.float32)
    if "value_floats" in attrs:
        return np.asarray(attrs["value_floats"], dtype=np.float32)
    if "value_int" in attrs:
        return np.asarray(attrs["value_int"], dtype=np.int64)
    if "value_ints" in attrs:
        return np.asarray(attrs["value_ints"], dtype=np.int64)
    raise ValueError(f"Constant node with attributes {sorted(attrs)}: no value Ember can hold")


def _node_label(node, index: int) -> str:
    return node.name or f"#{index} ({node.op_type} -> {', '.join(node.output) or '?'})"


def _schema_version(onnx, op_type: str, opset: int, domain: str) -> int | None:
    try:
        return onnx.defs.get_schema(op_type, opset, domain).since_version
    except onnx.defs.SchemaError:
        return None


def _unsupported_message(problems: dict[str, list[str]]) -> str:
    parts = []
    for what, nodes in problems.items():
        shown = ", ".join(nodes[:5]) + (f" and {len(nodes) - 5} more" if len(nodes) > 5 else "")
        parts.append(f"{what}; node{'s' if len(nodes) > 1 else ''} {shown})")
    return "ONNX operators not supported by Ember: " + ", ".join(parts)


def _topological(nodes: list, known: set[str]) -> list:
    """``nodes`` in an order where each runs after the nodes producing its inputs (ONNX files
    are sorted already, so this is one pass; it repairs others)."""
    ordered, pending = [], list(nodes)
    known = set(known)
    while pending:
        waiting = []
        for node in pending:
            if all(not name or name in known for name in node.input):
                ordered.append(node)
                known.update(o for o in node.output if o)
            else:
                waiting.append(node)
        if len(waiting) == len(pending):
            missing = sorted({i for n in waiting for i in n.input if i and i not in known})
            raise ValueError(f"ONNX graph: node inputs {missing[:10]} are neither graph "
                             "inputs, initializers nor outputs of other nodes")
        pending = waiting
    return ordered


class OnnxModule(nn.Module):
    """An ONNX graph as an ``ember.nn.Module`` (made by :func:`load_model`).

    ``forward(*inputs)`` (or inputs by graph-input name as keywords) runs the graph node by
    node with Ember ops, so autograd works through it; it returns a tensor for a graph with one
    output and a tuple for several. The graph runs as it was exported: ``train()`` / ``eval()``
    do not change it (an exported Dropout or BatchNormalization follows its own
    ``training_mode``).

    Weights: float initializers are ``nn.Parameter``\\ s, except those used only as statistics
    or sizes (BatchNormalization's mean and variance, Resize's scales), which are buffers, as
    are integer and boolean initializers. Their attribute names (and ``state_dict()`` keys)
    are the ONNX names made valid Python identifiers: every character outside ``[A-Za-z0-9_]``
    becomes ``_`` (``"layer1.0.conv1.weight"`` -> ``"layer1_0_conv1_weight"``,
    ``"onnx::Conv_193"`` -> ``"onnx__Conv_193"``), a leading digit gets a ``_`` prefix, and a
    name already taken gets a ``_1``, ``_2``... suffix. :attr:`initializer_names` maps each
    attribute name back to its ONNX name. Constant nodes become non-persistent buffers.

    Attributes:
        input_names: the graph inputs ``forward`` takes, in order (initializers excluded).
        output_names: the graph outputs, in the order returned.
        opset: the model's opset version of the default ONNX domain.
        initializer_names: ``{attribute name: ONNX initializer name}``.
    """

    def __init__(self, model, *, source: str = "the ONNX model") -> None:
        super().__init__()
        onnx = _require_onnx()
        graph = model.graph
        opsets = {o.domain: o.version for o in model.opset_import}
        opset = next((opsets[d] for d in _DEFAULT_DOMAINS if d in opsets), None)
        if opset is None:
            raise ValueError(f"{source}: the model imports no opset of the default ONNX domain")
        self.opset = opset
        self.source = source
        initializers = {t.name: onnx.numpy_helper.to_array(t) for t in graph.initializer}
        for sparse in graph.sparse_initializer:
            initializers[sparse.values.name] = _dense(onnx, sparse)
        self.input_names = [i.name for i in graph.input if i.name not in initializers]
        self.output_names = [o.name for o in graph.output]
        self._input_types = {i.name: i.type.tensor_type for i in graph.input
                             if i.name not in initializers}
        self.initializer_names: dict[str, str] = {}
        self._value_attrs: dict[str, str] = {}  # ONNX value name -> attribute holding it
        self._host_cache: dict[str, tuple] = {}

        nodes = _topological(list(graph.node), set(self.input_names) | set(initializers))
        attrs = [{a.name: _attribute_value(onnx, a) for a in n.attribute} for n in nodes]
        self._refuse_unsupported(onnx, nodes, attrs, initializers, opsets)
        self._register_initializers(initializers, nodes)
        self._nodes: list[Node] = []
        for index, (node, node_attrs) in enumerate(zip(nodes, attrs)):
            if node.op_type == "Constant":
                value = _constant_value(node_attrs)
                name = self._attribute_name(f"const_{node.output[0]}")
                self.register_buffer(name, ember.tensor(value), persistent=False)
                self._value_attrs[node.output[0]] = name
                continue
            spec = OPS[node.op_type]
            self._nodes.append(Node(
                node.op_type, _node_label(node, index), [i for i in node.input],
                [o for o in node.output], node_attrs,
                _schema_version(onnx, node.op_type, opset, ""), spec.handler))
        self._frees = self._plan_frees()

    # -- construction ---------------------------------------------------------------------------

    def _refuse_unsupported(self, onnx, nodes, attrs, initializers, opsets) -> None:
        """Raise one error naming every operator (and tensor type) Ember cannot run."""
        problems: dict[str, list[str]] = {}
        for index, (node, node_attrs) in enumerate(zip(nodes, attrs)):
            label = _node_label(node, index)
            if node.domain not in _DEFAULT_DOMAINS:
                what = (f"{node.domain}.{node.op_type} (domain {node.domain!r} opset "
                        f"{opsets.get(node.domain, '?')}")
                problems.setdefault(what, []).append(label)
                continue
            spec = OPS.get(node.op_type)
            version = _schema_version(onnx, node.op_type, self.opset, "")
            reason = None
            if node.op_type == "Constant":
                reason = _constant_reason(node_attrs)
            elif spec is None or version not in spec.versions:
                reason = ""
            elif spec.check is not None:
                reason = spec.check(node_attrs)
            if reason is not None:
                what = f"{node.op_type} (opset {self.opset}" + (f", {reason}" if reason else "")
                problems.setdefault(what, []).append(label)
        types = [f"initializer {name!r} ({value.dtype})" for name, value in initializers.items()
                 if ember_dtype(value.dtype) is None]
        types += [f"graph input {name!r} ({onnx_dtype_name(t.elem_type)})"
                  for name, t in self._input_types.items() if t.elem_type not in ONNX_DTYPES]
        parts = []
        if problems:
            parts.append(_unsupported_message(problems))
        if types:
            parts.append("ONNX tensor types Ember does not have: " + ", ".join(types))
        if parts:
            raise RuntimeError("; ".join(parts))

    def _attribute_name(self, onnx_name: str) -> str:
        name = re.sub(r"\W", "_", onnx_name, flags=re.ASCII) or "value"
        if name[0].isdigit():
            name = "_" + name
        base, suffix = name, 0
        while hasattr(self, name):  # parameters, buffers and the Module's own attributes
            suffix += 1
            name = f"{base}_{suffix}"
        return name

    def _register_initializers(self, initializers: dict, nodes) -> None:
        uses: dict[str, list[bool]] = {}
        for node in nodes:
            stats = _NON_TRAINABLE_INPUTS.get(node.op_type, ())
            for i, name in enumerate(node.input):
                if name in initializers:
                    uses.setdefault(name, []).append(i in stats)
        for onnx_name, value in initializers.items():
            name = self._attribute_name(onnx_name)
            tensor = ember.tensor(value)
            trainable = value.dtype.kind == "f" and not all(uses.get(onnx_name, [False]))
            if trainable:
                self.register_parameter(name, nn.Parameter(tensor))
            else:
                self.register_buffer(name, tensor)
            self.initializer_names[name] = onnx_name
            self._value_attrs[onnx_name] = name

    def _plan_frees(self) -> list[list[str]]:
        """After each node, the values no later node needs (freed as the graph runs)."""
        keep = set(self.output_names) | set(self._value_attrs)
        last: dict[str, int] = {}
        for index, node in enumerate(self._nodes):
            for name in node.inputs:
                if name:
                    last[name] = index
        frees: list[list[str]] = [[] for _ in self._nodes]
        for name, index in last.items():
            if name not in keep:
                frees[index].append(name)
        return frees

    # -- running --------------------------------------------------------------------------------

    def _host_value(self, name: str, tensor: ember.Tensor) -> np.ndarray:
        """``tensor``'s values on the host; constants' copies are kept while unmodified."""
        cached = self._host_cache.get(name)
        if cached is not None and cached[0] is tensor and cached[1] == tensor._version:
            return cached[2]
        values = tensor.detach().cpu().numpy()
        if name in self._value_attrs:
            self._host_cache[name] = (tensor, tensor._version, values)
        return values

    def _device(self, inputs: list):
        for t in inputs:
            return t.device
        for t in self.parameters():
            return t.device
        for t in self.buffers():
            return t.device
        return ember.get_default_device()

    def _bind(self, args: tuple, kwargs: dict) -> list[ember.Tensor]:
        names = self.input_names
        if len(args) > len(names):
            raise TypeError(f"forward() takes {len(names)} inputs ({', '.join(names)}) but "
                            f"{len(args)} were given")
        values = dict(zip(names, args))
        for key, value in kwargs.items():
            if key not in names:
                raise TypeError(f"forward() got an unexpected keyword argument {key!r}; the "
                                f"graph inputs are {names}")
            if key in values:
                raise TypeError(f"forward() got multiple values for input {key!r}")
            values[key] = value
        missing = [n for n in names if n not in values]
        if missing:
            raise TypeError(f"forward() missing {len(missing)} required input(s): "
                            f"{', '.join(map(repr, missing))}")
        return [self._checked_input(n, values[n]) for n in names]

    def _checked_input(self, name: str, value) -> ember.Tensor:
        if not isinstance(value, ember.Tensor):
            value = ember.as_tensor(value)
        tensor_type = self._input_types[name]
        expected = ONNX_DTYPES.get(tensor_type.elem_type)
        if expected is not None and value.dtype != expected:
            raise TypeError(f"input {name!r} of the ONNX graph has dtype {expected}, but got "
                            f"a tensor of dtype {value.dtype}")
        if tensor_type.HasField("shape"):
            dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?")
                    for d in tensor_type.shape.dim]
            fixed = all(not isinstance(d, int) or d == s for d, s in zip(dims, value.shape))
            if len(dims) != value.dim() or not fixed:
                raise ValueError(f"input {name!r} of the ONNX graph has shape {dims}, but got "
                                 f"a tensor of shape {list(value.shape)}")
        return value

    def forward(self, *inputs, **named_inputs):
        """Run the graph on ``inputs`` (graph inputs in :attr:`input_names` order, or by name);
        returns a tensor for one graph output, a tuple for several."""
        tensors = self._bind(inputs, named_inputs)
        env = {onnx_name: getattr(self, attr) for onnx_name, attr in self._value_attrs.items()}
        env.update(zip(self.input_names, tensors))
        device = self._device(tensors)
        for node, frees in zip(self._nodes, self._frees):
            args = [env[name] if name else None for name in node.inputs]
            try:
                result = node.handler(Call(node, args, device, self))
            except Exception as e:
                if hasattr(e, "add_note"):
                    e.add_note(f"(while running ONNX node {node.name}, {node.op_type} "
                               f"opset {self.opset})")
                raise
            if not isinstance(result, tuple):
                result = (result,)
            for name, value in zip(node.outputs, result):
                if name:
                    env[name] = value
            for name in frees:
                env.pop(name, None)
        outputs = tuple(env[name] for name in self.output_names)
        return outputs[0] if len(outputs) == 1 else outputs

    def extra_repr(self) -> str:
        return (f"opset={self.opset}, inputs={self.input_names}, outputs={self.output_names}, "
                f"nodes={len(self._nodes)}")


def _constant_reason(attrs: dict) -> str | None:
    try:
        value = _constant_value(attrs)
    except ValueError:
        return "value_string(s)"
    if ember_dtype(value.dtype) is None:
        return f"value of dtype {value.dtype}"
    return None

