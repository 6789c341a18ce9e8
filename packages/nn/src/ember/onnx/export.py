"""``ember.onnx.export``: a model as an ONNX file (``torch.onnx.export``).

The model is captured once with :func:`ember.export.export` (the graph of registry ops that
``ember.export`` documents in its FORMAT.md), and each op of that graph is written as ONNX
nodes by the mapping table (``_export_ops*.py``); there is no second tracer. The ``onnx``
package (the ``ember-nn[onnx]`` extra) is imported only when a model is exported.
"""

from __future__ import annotations

import enum
import inspect
import io
import os
import re

from ._export_graph import OnnxExporterError, UnsupportedOperatorError

__all__ = ["export", "TrainingMode", "OperatorExportTypes", "OnnxExporterError",
           "UnsupportedOperatorError", "DEFAULT_OPSET", "MIN_OPSET", "MAX_OPSET"]

#: the opset written when ``opset_version`` is None (PyTorch's TorchScript exporter's default)
DEFAULT_OPSET = 17
#: the range of default-domain opsets the mapping table is written and tested for
MIN_OPSET, MAX_OPSET = 11, 21

#: the upper bound of a dim from ``dynamic_axes``: any size (a finite bound, as the capture's
#: range checks of its guards need one; see the report on ember.export's unbounded Dims)
_ANY_SIZE = 2 ** 62

#: ONNX's limit on one protobuf file; larger models keep their weights in an external file
_PROTOBUF_LIMIT = 2 ** 31 - 1


class TrainingMode(enum.IntEnum):
    """The mode the model is captured in (``torch.onnx.TrainingMode``): ``EVAL`` (the
    default: dropout off, batch norm with running statistics), ``PRESERVE`` (as the modules
    are) or ``TRAINING``."""

    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    """How ops are exported (``torch.onnx.OperatorExportTypes``); Ember writes standard ONNX
    operators only, so ``ONNX`` is the one accepted value."""

    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


#: how many ``export`` calls are running (``is_in_onnx_export``); process-wide, as PyTorch's
_EXPORTING = [0]


def is_in_onnx_export() -> bool:
    """Whether an ONNX export is running: models branch on it to leave out what the graph
    should not hold (torch_geometric's softmax and scatter take their ONNX-friendly paths)."""
    return _EXPORTING[0] > 0


def export(model, args=(), f=None, *, kwargs=None, verbose=None, input_names=None,
           output_names=None, opset_version=None, dynamo=True, dynamic_shapes=None,
           export_params=True, keep_initializers_as_inputs=False, dynamic_axes=None,
           training=TrainingMode.EVAL, operator_export_type=OperatorExportTypes.ONNX,
           do_constant_folding=True):
    """Export ``model`` to ONNX (``torch.onnx.export``) and return the ``onnx.ModelProto``.

    ``model`` is an ``ember.nn.Module``, a function, or an ``ember.export.ExportedProgram``
    (exported as it is); ``args`` the example positional inputs (a tuple, or one tensor) and
    ``kwargs`` the keyword ones. Tensor arguments, also inside lists, tuples and dicts, become
    the graph inputs in order; other arguments are fixed into the graph. ``f``, when given, is
    a path or a binary file object that receives the model.

    Args:
        input_names: names of the graph inputs, in order (fewer than the inputs: the rest keep
            their defaults). Default: the names of ``forward``'s parameters, as PyTorch's
            ``dynamo=True`` exporter names them (``x``; ``hx_0``, ``hx_1`` for the items of a
            tuple argument ``hx``).
        output_names: names of the graph outputs, in the order of the flattened result (None
            items dropped). Default: ``output_0``, ``output_1``, ...
        opset_version: the ONNX default-domain opset, from 11 to 21 (default 17). At 11 and
            12 every node takes the form that opset defines (``einsum`` needs 12, bfloat16
            values 13).
        dynamic_axes: ``{"x": {0: "batch"}}`` or ``{"x": [0]}`` (automatic names
            ``x_dynamic_axes_1``...) for inputs and outputs named as above. The dims of
            inputs are captured as ``ember.export.Dim`` (one per name: axes sharing a name
            are equal), so sizes computed from them stay symbolic and reach ONNX as shape
            subgraphs; they are written as ``dim_param``. For an output the name is only
            written on that axis.
        dynamic_shapes: ``ember.export.export``'s form of the same (``{"x": {0: Dim(...)}}``);
            not with ``dynamic_axes``.
        export_params: False leaves the weights out: they become graph inputs named by
            their state-dict keys.
        keep_initializers_as_inputs: also list the weights (initializers) as graph inputs.
        training: :class:`TrainingMode`: capture in eval mode (default), in training mode,
            or as the modules are; the modules' modes are restored afterwards. In training
            mode batch norm uses batch statistics (the graph does not update the running
            ones) and dropout is ONNX ``Dropout`` in training mode.
        operator_export_type: only ``OperatorExportTypes.ONNX``.
        do_constant_folding: accepted for PyTorch's sake: the capture already computes every
            value that does not depend on an input (as the folding pass would); the weights
            stay initializers under their own names.
        verbose: print the exported graph.
        dynamo: accepted; PyTorch's ``dynamo=True`` exports through ``torch.export`` and
            returns an ``ONNXProgram``, ``dynamo=False`` traces with TorchScript and returns
            None. Ember always captures through ``ember.export`` (the ``dynamo=True`` path,
            with ``dynamic_axes`` honoured as the legacy path does) and returns the
            ``onnx.ModelProto`` either way.

    Every op of the captured graph needs a mapping that the requested opset can express;
    otherwise one :class:`UnsupportedOperatorError` lists each such op with its source line
    and, where a newer opset has it, that opset. A size that depends on the data (``nonzero``,
    ``x[mask]``, ``unique``) is a ``dim_param`` of the ONNX graph, read at run time from the
    value that has it. Guards of the capture (assumptions on sizes) are not checked by the
    ONNX graph: ONNX has no assertion operator.
    """
    _EXPORTING[0] += 1
    try:
        return _export(model, args, f, kwargs, verbose, input_names, output_names,
                       opset_version, dynamo, dynamic_shapes, export_params,
                       keep_initializers_as_inputs, dynamic_axes, training,
                       operator_export_type, do_constant_folding)
    finally:
        _EXPORTING[0] -= 1


def _export(model, args, f, kwargs, verbose, input_names, output_names, opset_version, dynamo,
            dynamic_shapes, export_params, keep_initializers_as_inputs, dynamic_axes,
            training, operator_export_type, do_constant_folding):
    from ember import export as ember_export

    onnx = _require_onnx()
    opset = _opset(opset_version)
    if operator_export_type != OperatorExportTypes.ONNX:
        raise ValueError(f"operator_export_type={operator_export_type!r} is not supported: "
                         "Ember exports standard ONNX operators only "
                         "(OperatorExportTypes.ONNX)")
    if dynamic_axes is not None and dynamic_shapes is not None:
        raise ValueError("give dynamic_axes or dynamic_shapes, not both")
    del do_constant_folding, dynamo  # see the docstring
    if isinstance(training, bool) or not isinstance(training, (TrainingMode, int)):
        raise TypeError(f"training must be an ember.onnx.TrainingMode, got {training!r}")
    training = TrainingMode(training)

    if isinstance(model, ember_export.ExportedProgram):
        if dynamic_axes is not None or dynamic_shapes is not None:
            raise ValueError("an ExportedProgram keeps the dynamic dims it was exported "
                             "with: pass dynamic_shapes to ember.export.export instead")
        ep = model
        defaults = [s.name for s in ep.graph.inputs if s.kind == "user_input"]
        names = _input_names(input_names, defaults)
        dim_names = {s: s for s in ep.graph.symbols}
        output_axes: dict = {}
    else:
        args, kwargs = _normalize_call(model, args, kwargs)
        bound = _bound(model, args, kwargs)
        leaves = _leaves(bound)
        names = _input_names(input_names, [n for n, _ in leaves])
        if dynamic_axes is not None:
            dynamic_shapes, dim_names, output_axes = _from_dynamic_axes(
                dynamic_axes, bound, leaves, names)
        else:
            dim_names, output_axes = {}, {}
        with _mode(model, training):
            try:
                ep = ember_export.export(model, args, kwargs, dynamic_shapes=dynamic_shapes)
            except ember_export.ConstraintViolationError as exc:
                if dynamic_axes is None:
                    raise
                raise ember_export.ConstraintViolationError(
                    f"{exc}\n(dynamic_axes lets each named axis take any size >= 1; to "
                    "bound one, export with dynamic_shapes={name: {axis: "
                    "ember.export.Dim(name, min=..., max=...)}} instead)") from exc
        for s in ep.graph.symbols:
            dim_names.setdefault(s, s)

    import ember

    proto = _to_onnx(onnx, ep, opset=opset, input_names=names, output_names=output_names,
                     dim_names=dim_names, output_axes=output_axes,
                     export_params=export_params,
                     keep_initializers_as_inputs=keep_initializers_as_inputs,
                     producer_version=ember.__version__)
    if proto.ByteSize() < _PROTOBUF_LIMIT:
        onnx.checker.check_model(proto)
    if verbose:
        print(onnx.printer.to_text(proto.graph))
    if f is not None:
        _save(onnx, proto, f)
    return proto


def _require_onnx():
    try:
        import onnx
    except ImportError as e:
        raise ModuleNotFoundError(
            "ember.onnx.export needs the 'onnx' package to write ONNX files: "
            "pip install ember-nn[onnx]", name="onnx") from e
    return onnx


def _to_onnx(onnx, ep, **options):
    from ._export_program import to_onnx

    return to_onnx(onnx, ep, **options)


def _opset(opset_version) -> int:
    if opset_version is None:
        return DEFAULT_OPSET
    if isinstance(opset_version, bool) or not isinstance(opset_version, int):
        raise TypeError(f"opset_version must be an int, got {type(opset_version).__name__}")
    if not MIN_OPSET <= opset_version <= MAX_OPSET:
        raise ValueError(f"Unsupported ONNX opset version: {opset_version}. Supported "
                         f"opset versions are {MIN_OPSET} to {MAX_OPSET}")
    return opset_version


# -- the call -----------------------------------------------------------------------------------

def _forward(model):
    forward = getattr(model, "forward", None)
    return forward if callable(forward) and hasattr(model, "named_parameters") else model


def _normalize_call(model, args, kwargs):
    """``(args, kwargs)`` with a tensor ``args`` wrapped in a tuple, and every
    positional-or-keyword parameter given by keyword moved into ``args`` (the parameters it
    skips given their defaults), so the capture binds each argument to its own parameter."""
    import ember

    if isinstance(args, ember.Tensor):
        args = (args,)
    elif isinstance(args, list):
        args = tuple(args)
    if not isinstance(args, tuple):
        raise TypeError(f"args must be a tuple of example inputs (or one tensor), got "
                        f"{type(args).__name__}")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise TypeError(f"kwargs must be a dict, got {type(kwargs).__name__}")
    kwargs = dict(kwargs or {})
    try:
        sig = inspect.signature(_forward(model))
    except (TypeError, ValueError):
        return args, kwargs
    positional = [p for p in sig.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    given = [i for i, p in enumerate(positional) if p.name in kwargs]
    if not given:
        return args, kwargs
    args = list(args)
    for p in positional[len(args):max(given) + 1]:
        if p.name in kwargs:
            args.append(kwargs.pop(p.name))
        elif p.default is not p.empty:
            args.append(p.default)
        else:
            raise TypeError(f"missing a required argument: {p.name!r}")
    return tuple(args), kwargs


def _bound(model, args, kwargs) -> list:
    """``[(parameter name, value)]`` in the signature's order (as the capture binds)."""
    try:
        sig = inspect.signature(_forward(model))
    except (TypeError, ValueError):
        return [(f"args_{i}", a) for i, a in enumerate(args)] + list(kwargs.items())
    try:
        return list(sig.bind(*args, **kwargs).arguments.items())
    except TypeError as exc:
        raise TypeError(f"the example inputs do not match the signature of the model's "
                        f"forward: {exc}") from None


def _leaves(bound: list) -> list:
    """``[(default input name, tensor)]``: the tensors of the call in capture order."""
    import ember

    out: list = []

    def walk(value, name):
        if isinstance(value, ember.Tensor):
            out.append((name, value))
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                walk(v, f"{name}_{i}")
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{name}_{k}")

    for name, value in bound:
        walk(value, name)
    return out


def _input_names(given, defaults: list) -> list:
    if given is None:
        return list(defaults)
    if isinstance(given, str) or not all(isinstance(n, str) for n in given):
        raise TypeError("input_names must be a sequence of str")
    given = list(given)
    if len(given) > len(defaults):
        raise ValueError(f"number of input names provided ({len(given)}) exceeded number of "
                         f"inputs ({len(defaults)})")
    names = given + defaults[len(given):]
    if len(set(names)) != len(names):
        raise ValueError(f"input names must be distinct, got {names}")
    return names


def _identifier(name: str, taken: set) -> str:
    ident = re.sub(r"\W", "_", name)
    if not ident or ident[0].isdigit():
        ident = "d_" + ident
    base, i = ident, 1
    while ident in taken:
        i += 1
        ident = f"{base}_{i}"
    taken.add(ident)
    return ident


def _from_dynamic_axes(dynamic_axes, bound: list, leaves: list, names: list):
    """``(dynamic_shapes for ember.export, symbol -> dim_param, output entries)``."""
    import ember
    from ember.export import Dim

    if not isinstance(dynamic_axes, dict):
        raise TypeError(f"dynamic_axes must be a dict, got {type(dynamic_axes).__name__}")
    per_leaf: dict = {}
    dims: dict = {}
    dim_names: dict = {}
    taken: set = set()
    output_axes: dict = {}
    index = {name: i for i, name in enumerate(names)}
    for key, spec in dynamic_axes.items():
        if key not in index:
            output_axes[key] = spec
            continue
        tensor = leaves[index[key]][1]
        rank = tensor.dim()
        if isinstance(spec, dict):
            items = list(spec.items())
        elif isinstance(spec, (list, tuple)):
            items = [(a, f"{key}_dynamic_axes_{i + 1}") for i, a in enumerate(spec)]
        else:
            raise TypeError(f"dynamic_axes[{key!r}] must be a dict {{axis: name}} or a list of "
                            f"axes, got {type(spec).__name__}")
        axes = {}
        for axis, param in items:
            if isinstance(axis, bool) or not isinstance(axis, int) or not -rank <= axis < rank:
                raise ValueError(f"dynamic_axes[{key!r}]: axis {axis!r} is out of range for "
                                 f"input {key!r} of shape {tuple(tensor.shape)}")
            param = str(param)
            if param not in dims:
                ident = _identifier(param, taken)
                dims[param] = Dim(ident, min=1, max=_ANY_SIZE)
                dim_names[ident] = param
            axes[axis % rank] = dims[param]
        per_leaf[index[key]] = axes
    counter = iter(range(len(leaves)))

    def structure(value):
        if isinstance(value, ember.Tensor):
            return per_leaf.get(next(counter)) or None
        if isinstance(value, (list, tuple)):
            return tuple(structure(v) for v in value)
        if isinstance(value, dict):
            return {k: structure(v) for k, v in value.items()}
        return None

    shapes = {name: structure(value) for name, value in bound}
    return (shapes if per_leaf else None), dim_names, output_axes


class _mode:
    """Put the model in the requested mode for the capture and restore every module's."""

    def __init__(self, model, training: TrainingMode):
        modules = getattr(model, "modules", None)
        self.saved = [(m, m.training) for m in modules()] if callable(modules) else []
        self.model = model
        self.training = training

    def __enter__(self):
        if self.saved and self.training is not TrainingMode.PRESERVE:
            self.model.train(self.training is TrainingMode.TRAINING)
        return self

    def __exit__(self, *exc):
        for m, flag in self.saved:
            m.training = flag
        return False


# -- writing ------------------------------------------------------------------------------------

def _save(onnx, proto, f) -> None:
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        if proto.ByteSize() >= _PROTOBUF_LIMIT:
            onnx.save_model(proto, path, save_as_external_data=True, all_tensors_to_one_file=True,
                            location=os.path.basename(path) + ".data")
        else:
            onnx.save_model(proto, path)
        return
    if isinstance(f, io.TextIOBase) or not hasattr(f, "write"):
        raise TypeError(f"f must be a path or a binary file object, got {type(f).__name__}")
    f.write(proto.SerializeToString())
