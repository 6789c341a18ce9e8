"""A model's graph as the ``GraphDef`` TensorBoard's graph tab draws.

The graph is an :class:`ember.export.ExportedProgram`'s: one ``NodeDef`` per op call, its
inputs the nodes that made its arguments, its ``_output_shapes`` the shapes the capture
recorded (a dynamic dimension is -1). Names are scoped as PyTorch scopes them, so that
TensorBoard folds each submodule into one box: ``Net/Sequential[features]/Linear[0]/linear``
(the module's class and attribute name), graph inputs under ``input/``, outputs under
``output/output.1``. Scopes come from forward hooks on the submodules when the graph is
captured here (``add_graph(model, input)``); for a program captured elsewhere they are
inferred from the parameters each op reads.
"""

from __future__ import annotations

import contextlib

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.config_pb2 import RunMetadata
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.step_stats_pb2 import DeviceStepStats, StepStats
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef

__all__ = ["graph", "program_graph", "capture"]


def _shape_proto(meta) -> TensorShapeProto:
    if meta is None:
        return TensorShapeProto(unknown_rank=True)
    return TensorShapeProto(dim=[TensorShapeProto.Dim(size=d if isinstance(d, int) else -1)
                                 for d in meta.shape])


def _node(name: str, op: str, inputs: list, metas: list, text: str) -> NodeDef:
    attr = {"attr": AttrValue(s=text.encode("utf_8"))}
    if metas:
        attr["_output_shapes"] = AttrValue(list=AttrValue.ListValue(
            shape=[_shape_proto(m) for m in metas]))
    return NodeDef(name=name, op=op, input=inputs, attr=attr)


def _tensor_refs(obj, out: list) -> list:
    """The value names an argument (in its JSON form) reads, in order, without repeats."""
    if isinstance(obj, list):
        for x in obj:
            _tensor_refs(x, out)
    elif isinstance(obj, dict):
        if len(obj) == 1 and "tensor" in obj:
            if obj["tensor"] not in out:
                out.append(obj["tensor"])
            return out
        for x in obj.values():
            _tensor_refs(x, out)
    return out


def _module_of(target: str) -> str:
    return target.rpartition(".")[0]


def _common_module(paths: list) -> str:
    parts = [p.split(".") if p else [] for p in paths]
    common: list = []
    for pieces in zip(*parts):
        if len(set(pieces)) != 1:
            break
        common.append(pieces[0])
    return ".".join(common)


def _inferred_scopes(program) -> dict:
    """Node name -> module path, from the parameters and buffers each op reads."""
    targets = {i.name: i.target for i in program.graph.inputs if i.kind != "user_input"}
    scopes = {}
    for node in program.graph.nodes:
        owners = [_module_of(targets[v]) for v in _tensor_refs([node.args, node.kwargs], [])
                  if v in targets]
        scopes[node.name] = _common_module(owners) if owners else ""
    return scopes


def _scope_text(path: str, module_classes: dict | None) -> str:
    """``seq.0`` -> ``Sequential[seq]/Linear[0]`` (just ``seq/0`` without the classes)."""
    if not path:
        return ""
    parts = path.split(".")
    out = []
    for i, part in enumerate(parts):
        cls = (module_classes or {}).get(".".join(parts[:i + 1]))
        out.append(f"{cls}[{part}]" if cls else part)
    return "/".join(out)


def _device_name(device: str) -> str:
    kind, _, index = device.partition(":")
    kind = {"cpu": "CPU", "cuda": "GPU"}.get(kind, kind.upper())
    return f"/device:{kind}:{index or 0}"


def program_graph(program, root: str, scopes: dict | None = None,
                  module_classes: dict | None = None) -> tuple[GraphDef, RunMetadata]:
    """The ``GraphDef`` of an exported program, and PyTorch's (empty) run metadata.

    ``scopes`` maps node names to module paths (``"seq.0"``; ``""`` the model itself);
    ``module_classes`` maps module paths to class names.
    """
    from ember.export._graph import format_node

    if scopes is None:
        scopes = _inferred_scopes(program)
    used: set = set()

    def unique(name: str) -> str:
        base, n = name, 1
        while name in used:
            name = f"{base}.{n}"
            n += 1
        used.add(name)
        return name

    def scoped(path: str, leaf: str) -> str:
        scope = _scope_text(path, module_classes)
        return unique("/".join(p for p in (root, scope, leaf) if p))

    producer: dict = {}  # value name -> NodeDef name (":i" for a later output)
    nodes = []
    for spec in program.graph.inputs:
        if spec.kind == "user_input":
            name, op = unique(f"input/{spec.name}"), "IO Node"
        else:
            path, _, leaf = spec.target.rpartition(".")
            name, op = scoped(path, leaf), spec.kind.capitalize()
        producer[spec.name] = name
        nodes.append(_node(name, op, [], [spec.meta], f"{spec.kind} {spec.meta}"))
    for node in program.graph.nodes:
        name = scoped(scopes.get(node.name, ""), node.name)
        inputs = [producer[v] for v in _tensor_refs([node.args, node.kwargs], [])
                  if v in producer]
        metas = [None if o is None else o[1] for o in node.outputs]
        for i, out in enumerate(node.outputs):
            if out is not None:
                producer[out[0]] = name if i == 0 else f"{name}:{i}"
        nodes.append(_node(name, node.op, inputs, metas, format_node(node)))
    values = program.graph.values()
    for i, value in enumerate(_tensor_refs(program.graph.outputs, [])):
        name = unique(f"output/output.{i + 1}")
        nodes.append(_node(name, "IO Node", [producer[value]], [values.get(value)],
                           f"output {values.get(value)}"))
    devices = [m.device for m in values.values()] or ["cpu"]
    stats = RunMetadata(step_stats=StepStats(
        dev_stats=[DeviceStepStats(device=_device_name(devices[0]))]))
    return GraphDef(node=nodes, versions=VersionDef(producer=22)), stats


@contextlib.contextmanager
def _eval_mode(model):
    """``model.train(False)`` for the capture, its mode restored after (as PyTorch does). A
    model whose mode is fixed (an exported program's ``GraphModule``) is captured as it is."""
    switched = False
    if getattr(model, "training", False) is True and callable(getattr(model, "train", None)):
        try:
            model.train(False)
            switched = True
        except NotImplementedError:
            pass
    try:
        yield
    finally:
        if switched:
            model.train(True)


@contextlib.contextmanager
def _scope_hooks(model, scopes: dict):
    """Forward hooks on every submodule that record which module each captured op ran in
    (the innermost module claims it)."""
    from ember.export import _capture

    named = getattr(model, "named_modules", None)
    if not callable(named):
        yield
        return
    handles = []
    starts: list = []

    def pre_hook(module, args):
        cap = _capture.current()
        starts.append(len(cap.nodes) if cap is not None else 0)

    def make_post_hook(path: str):
        def post_hook(module, args, output):
            start = starts.pop() if starts else 0
            cap = _capture.current()
            if cap is not None:
                for node in cap.nodes[start:]:
                    scopes.setdefault(node.name, path)
        return post_hook

    try:
        for path, module in named():
            if path and callable(getattr(module, "register_forward_hook", None)):
                handles.append(module.register_forward_pre_hook(pre_hook))
                handles.append(module.register_forward_hook(make_post_hook(path)))
        yield
    finally:
        for handle in handles:
            handle.remove()


def capture(model, input_to_model):
    """``ember.export.export(model, args)`` in eval mode, with each op's module path."""
    import ember
    import ember.export

    if input_to_model is None:
        args = ()
    elif isinstance(input_to_model, (ember.Tensor, dict)):
        args = (input_to_model,)
    else:
        args = tuple(input_to_model)
    scopes: dict = {}
    with _eval_mode(model), _scope_hooks(model, scopes):
        program = ember.export.export(model, args)
    classes = None
    if callable(getattr(model, "named_modules", None)):
        classes = {path: type(m).__name__ for path, m in model.named_modules() if path}
    return program, scopes, classes


def graph(model, input_to_model=None, verbose: bool = False):
    """``(GraphDef, RunMetadata)`` of ``model``: an ``ExportedProgram`` (or its ``module()``)
    as it is, anything else (a module or a function) captured by calling it on
    ``input_to_model``."""
    from ember.export import ExportedProgram, GraphModule

    if isinstance(model, GraphModule):  # ``ep.module()``: draw the program it runs
        model = model._program
    if isinstance(model, ExportedProgram):
        program, scopes, classes, root = model, None, None, "ExportedProgram"
    else:
        program, scopes, classes = capture(model, input_to_model)
        root = type(model).__name__ if classes is not None else \
            getattr(model, "__name__", type(model).__name__).strip("<>")  # <lambda>
    if verbose:
        print(program.graph)
    return program_graph(program, root, scopes, classes)
