"""ONNX export: one captured program (``ember.export.ExportedProgram``) as an
``onnx.ModelProto``.

The program is read in its documented JSON form (``ep.graph.to_json()``, FORMAT.md): user
inputs become graph inputs, parameters/buffers/lifted constants initializers named by their
targets (``fc1.weight``), each node goes through its mapping (``_export_ops*.py``), and the
flattened outputs take the requested names. Every value a node computes keeps its declared
type and shape as ``value_info``, so ONNX's shape inference checks them.
"""

from __future__ import annotations

import ember

from . import (  # noqa: F401 (the mappings register themselves)
    _export_ops_fft,
    _export_ops_linalg,
    _export_ops_loss,
    _export_ops_math,
    _export_ops_nn,
    _export_ops_select,
    _export_ops_special,
    _export_ops_tail,
    _export_ops_tensor,
)
from ._export_graph import (
    Builder,
    NeedsOpset,
    OnnxExporterError,
    Unsupported,
    UnsupportedOperatorError,
    is_complex,
    onnx_type,
)
from ._export_ops import Call, bind, lookup
from ._export_ops_fft import COMPLEX_OPS

__all__ = ["to_onnx", "flatten_outputs"]


def flatten_outputs(spec) -> list:
    """The program's outputs in order: ``("tensor", name)``, ``("symint", expr)`` or
    ``("literal", value)``; None and empty containers give nothing (as PyTorch drops them)."""
    out: list = []

    def walk(s):
        if s is None:
            return
        if isinstance(s, dict) and len(s) == 1:
            (tag, v), = s.items()
            if tag == "tensor":
                out.append(("tensor", v))
                return
            if tag == "symint":
                out.append(("symint", v))
                return
            if tag in ("tuple", "list"):
                for x in v:
                    walk(x)
                return
            if tag == "dict":
                for _, x in v:
                    walk(x)
                return
            if tag == "namedtuple":
                for x in v["items"]:
                    walk(x)
                return
            if tag == "record":
                for _, x in v["fields"]:
                    walk(x)
                return
        if isinstance(s, (bool, int, float)):
            out.append(("literal", s))
            return
        raise OnnxExporterError(f"the model returns {s!r}, which is not a tensor or a number: "
                                "ONNX outputs are tensors")

    walk(spec)
    return out


_REAL_ONLY = ("its ONNX mapping works on real tensors only (complex values are carried as "
              "[..., 2] real pairs, which only the fft ops, stft/istft, the complex views and "
              "parts and complex arithmetic read)")


def _check_mappings(nodes: list, opset: int, dtypes: dict) -> None:
    """One error for every op without a mapping, whose mapping needs a newer opset, or whose
    mapping cannot read the complex values it is given (``dtypes``: the program inputs'
    dtypes by value name)."""
    problems: dict = {}
    dtypes = dict(dtypes)
    for node in nodes:
        for o in node["outputs"]:
            if o is not None:
                dtypes[o["name"]] = o["dtype"]
    for node in nodes:
        found = lookup(node["op"])
        if found is not None and opset < 13 and _touches_bfloat16(dtypes, node):
            entry = problems.setdefault(node["op"], (13, _BFLOAT16, []))
        elif found is not None and found.since <= opset:
            if found.name in COMPLEX_OPS or not _touches_complex(dtypes, node):
                continue
            entry = problems.setdefault(node["op"], (None, _REAL_ONLY, []))
        else:
            since = None if found is None else found.since
            entry = problems.setdefault(node["op"], (since, None, []))
        if node.get("source") and node["source"] not in entry[2]:
            entry[2].append(node["source"])
    if problems:
        raise unsupported_error(problems, opset)


def unsupported_error(problems: dict, opset: int) -> UnsupportedOperatorError:
    """``problems``: op -> (lowest opset or None, reason or None, [sources])."""
    lines = []
    for op, (since, reason, sources) in problems.items():
        if reason is not None:
            text = f"ember op {op!r} cannot be exported: {reason}"
            if since is not None:
                text += f" (needs opset >= {since}, requested {opset})"
        elif since is not None:
            text = (f"{op} needs opset >= {since} (requested {opset}): support for this "
                    f"operator was added in opset {since}, try exporting with that version")
        else:
            text = f"ember op {op!r} has no ONNX mapping"
        if sources:
            more = f" and {len(sources) - 3} more" if len(sources) > 3 else ""
            text += f" [at {', '.join(sources[:3])}{more}]"
        lines.append("  - " + text)
    what = "op" if len(problems) == 1 else "ops"
    message = (f"Exporting the model to ONNX opset version {opset} is not supported: "
               f"{len(problems)} {what} cannot be exported:\n" + "\n".join(lines))
    return UnsupportedOperatorError(message, [(op, s, r, src)
                                              for op, (s, r, src) in problems.items()])


def _refs(obj, out: set) -> set:
    if isinstance(obj, list):
        for x in obj:
            _refs(x, out)
    elif isinstance(obj, dict):
        if len(obj) == 1 and "tensor" in obj:
            out.add(obj["tensor"])
        elif len(obj) == 1 and "size" in obj and isinstance(obj["size"], list):
            out.add(obj["size"][0])
        else:
            for x in obj.values():
                _refs(x, out)
    return out


def to_onnx(onnx, ep, *, opset: int, input_names: list, output_names: list | None,
            dim_names: dict, output_axes: dict, export_params: bool,
            keep_initializers_as_inputs: bool, producer_version: str):
    """The ``ModelProto`` of ``ep``. ``input_names``: one name per user input, in order;
    ``output_names``: the names of the first outputs (the rest ``output_<i>``); ``dim_names``:
    symbol -> ``dim_param``; ``output_axes``: the ``dynamic_axes`` entries not naming an
    input (they must name an output)."""
    program = ep.graph.to_json()
    nodes = program["nodes"]
    _check_mappings(nodes, opset, {i["name"]: i["dtype"] for i in program["inputs"]})
    b = Builder(onnx, opset, dim_names)
    helper = onnx.helper

    user = [i for i in program["inputs"] if i["kind"] == "user_input"]
    weights = [i for i in program["inputs"] if i["kind"] != "user_input"]
    if len(user) != len(input_names):
        raise OnnxExporterError(f"the program has {len(user)} user inputs, but "
                                f"{len(input_names)} input names were resolved")
    outputs = flatten_outputs(program["outputs"])
    out_names = _output_names(output_names, len(outputs))
    unknown = [k for k in output_axes if k not in out_names]
    if unknown:
        raise ValueError(f"dynamic_axes names {unknown}, which are neither inputs "
                         f"{input_names} nor outputs {out_names} of the exported graph")
    clash = set(out_names) & set(input_names)
    if clash:
        raise ValueError(f"output names {sorted(clash)} are also input names: ONNX values "
                         "need distinct names")
    clash = {w["target"] for w in weights} & (set(out_names) | set(input_names))
    if clash:
        raise ValueError(f"input/output names {sorted(clash)} are also names of the model's "
                         "weights (initializers): ONNX values need distinct names")

    used = set(_refs(nodes, set())) | {v for kind, v in outputs if kind == "tensor"}
    for name in input_names + out_names + [w["target"] for w in weights]:
        b.reserve(name)
    own_names = set()  # graph values whose ONNX values can keep their names
    for node in nodes:
        for o in node["outputs"]:
            if o is not None and o["name"] not in b.used:
                b.reserve(o["name"])
                own_names.add(o["name"])
    for spec, name in zip(user, input_names):
        if is_complex(spec["dtype"]):
            raise OnnxExporterError(
                f"graph input {name!r} (value %{spec['name']}) is {spec['dtype']}: ONNX has "
                "no complex tensor type that onnxruntime runs; pass ember.view_as_real of it "
                "and call ember.view_as_complex inside the model")
    _check_complex_outputs(nodes, outputs, out_names, user, weights)
    for spec in user + weights + [o for n in nodes for o in n["outputs"] if o is not None]:
        if is_complex(spec["dtype"]):  # carried as real pairs inside the graph
            continue
        try:
            onnx_type(spec["dtype"])
        except Unsupported as exc:
            raise OnnxExporterError(f"value %{spec['name']}: {exc}") from None
    for spec, name in zip(user, input_names):
        b.env[spec["name"]] = name
        b.metas[spec["name"]] = spec
        b.inputs.append(b.value_info(name, spec))
        for d, e in enumerate(spec["shape"]):
            if isinstance(e, dict) and "sym" in e:
                b.sym_source.setdefault(e["sym"], (name, d))
    extra_inputs = []
    for spec in weights:
        if spec["name"] not in used:
            continue
        target = spec["target"]
        b.env[spec["name"]] = target
        b.metas[spec["name"]] = spec
        if export_params:
            b.initializer(target, _weight(ep, spec), spec["dtype"])
        if keep_initializers_as_inputs or not export_params:
            if is_complex(spec["dtype"]):
                raise OnnxExporterError(
                    f"weight {target!r} is {spec['dtype']}: ONNX has no complex tensor type "
                    "that onnxruntime runs, so it cannot be a graph input (export it with "
                    "export_params=True and keep_initializers_as_inputs=False, which stores "
                    "it as real pairs)")
            extra_inputs.append(b.value_info(target, spec))
    b.inputs.extend(extra_inputs)

    _translate(b, nodes, own_names)
    _name_outputs(b, outputs, out_names, output_axes)
    if opset < 13:  # the axes that became attributes (Builder.add) leave their constants
        _drop_unused_constants(b)
    if opset < 12:
        _float_only_operators(b, helper)
    value_info = _value_info(b, nodes, set(out_names) | set(input_names))
    graph = helper.make_graph(b.nodes, "main_graph", b.inputs, b.outputs,
                              initializer=b.initializers, value_info=value_info)
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="ember",
                              producer_version=producer_version)
    model.ir_version = helper.find_min_ir_version_for(opsets)
    return model


def _weight(ep, spec: dict):
    target = spec["target"]
    t = ep.state_dict.get(target)
    if t is None:
        t = ep.constants.get(target)
    if t is None:
        raise OnnxExporterError(f"the program has no tensor for its input {spec['name']} "
                                f"(target {target!r})")
    t = t.detach().cpu()
    if t.is_complex():  # real pairs, as complex values are carried inside the graph
        return ember.view_as_real(t.resolve_conj()).numpy()
    if t.dtype == ember.bfloat16:  # NumPy has no bfloat16: onnx takes ml_dtypes' (BFLOAT16)
        import ml_dtypes

        return t.view(ember.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def _output_names(given, n: int) -> list:
    given = list(given or [])
    if len(given) > n:
        raise ValueError(f"number of output names provided ({len(given)}) exceeded number "
                         f"of outputs ({n})")
    names = given + [f"output_{i}" for i in range(len(given), n)]
    if len(set(names)) != len(names):
        raise ValueError(f"output names must be distinct, got {names}")
    return names


def _translate(b: Builder, nodes: list, own_names: set) -> None:
    """Every node through its mapping; one error listing each node that cannot be exported
    (nodes that only read a failed value are not listed again). A node's result made by its
    own mapping takes the graph value's name (``own_names``)."""
    problems: dict = {}
    failed: set = set()
    for node in nodes:
        outs = node["outputs"]
        if _refs([node["args"], node["kwargs"]], set()) & failed:
            failed.update(o["name"] for o in outs if o is not None)
            continue
        b.current = node["name"]
        start = len(b.nodes)
        try:
            params = bind(node["op"], node["args"], node["kwargs"])
            found = lookup(node["op"])
            if found.name not in COMPLEX_OPS and _touches_complex(
                    {k: m["dtype"] for k, m in b.metas.items()}, node):
                raise Unsupported(_REAL_ONLY)
            result = found.fn(Call(b, node, params, found.name))
        except (Unsupported, NeedsOpset) as exc:
            since = exc.opset if isinstance(exc, NeedsOpset) else None
            reason = exc.what if isinstance(exc, NeedsOpset) else str(exc)
            entry = problems.setdefault(node["op"], (since, reason or None, []))
            if node.get("source") and node["source"] not in entry[2]:
                entry[2].append(node["source"])
            failed.update(o["name"] for o in outs if o is not None)
            continue
        except OnnxExporterError:
            raise
        except Exception as exc:
            where = f" at {node['source']}" if node.get("source") else ""
            raise OnnxExporterError(f"exporting node %{node['name']} ({node['op']}){where} "
                                    f"failed: {type(exc).__name__}: {exc}") from exc
        results = [result] if isinstance(result, str) else list(result)
        if len(results) != len(outs):
            raise OnnxExporterError(f"the mapping of {node['op']} gave {len(results)} "
                                    f"outputs for {len(outs)}")
        made = {n for node_proto in b.nodes[start:] for n in node_proto.output}
        renamed: dict = {}
        for o, r in zip(outs, results):
            if o is None:
                continue
            r = renamed.get(r, r)
            if r in made and o["name"] in own_names:
                b.rename(r, o["name"], start)
                made.discard(r)
                renamed[r] = o["name"]
                r = o["name"]
            b.env[o["name"]] = r
            b.metas[o["name"]] = o
            for d, e in enumerate(o["shape"]):  # a data-dependent size: read it from here
                if isinstance(e, dict) and "sym" in e:
                    b.sym_source.setdefault(e["sym"], (r, d))
    b.current = ""
    if problems:
        raise unsupported_error(problems, b.opset)


def _read_names(nodes) -> set:
    """Every name the nodes read, in their subgraphs (Loop and If bodies) too."""
    names: set = set()
    for node in nodes:
        names.update(node.input)
        for attr in node.attribute:
            for graph in [attr.g] if attr.HasField("g") else list(attr.graphs):
                names.update(_read_names(graph.node))
                names.update(o.name for o in graph.output)
    return names


def _drop_unused_constants(b: Builder) -> None:
    """Drop the constants no node reads (the axes and sizes that became attributes below
    opset 13); a constant that is a graph value stays, as its value_info names it."""
    read = _read_names(b.nodes) | {o.name for o in b.outputs} | set(b.env.values())
    b.nodes[:] = [n for n in b.nodes if n.op_type != "Constant" or n.output[0] in read]


#: TensorProto types that Max, Min, Clip and Pow take at opset 11 (float16, float, double)
_OPSET_11_FLOATS = (1, 10, 11)
#: float32, the one type onnxruntime runs Clip-11 in
_FLOAT = 1


def _float_only_operators(b: Builder, helper) -> None:
    """At opset 11 Max, Min and Clip take floats only and Pow one float type for both inputs
    (opset 12 widened them), and onnxruntime runs Clip-11 in float32 only. The types are
    read from ONNX's inference at opset 12, where the graph is valid; then integer Max/Min
    and non-float32 Clip become ``Where`` of comparisons (exact, NaN kept), a Pow outside
    that rule computes in double (or in the base's float type), and ReduceMax/ReduceMin of
    int8/uint8 (types of opset 12) reduce in int32."""
    listed = {v.name for v in b.inputs}
    weights = [helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
               for t in b.initializers if t.name not in listed]  # their types, not their data
    graph = helper.make_graph(b.nodes, "types", b.inputs + weights, b.outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
    inferred = b.onnx.shape_inference.infer_shapes(model).graph
    types = {v.name: v.type.tensor_type.elem_type
             for v in [*inferred.input, *inferred.value_info, *inferred.output]}
    types.update((t.name, t.data_type) for t in b.initializers)
    nodes = list(b.nodes)
    b.nodes[:] = []
    for node in nodes:
        kind = types.get(node.input[0]) if node.input else None
        if kind and (node.op_type in ("Max", "Min") and kind not in _OPSET_11_FLOATS
                     or node.op_type == "Clip" and kind != _FLOAT):
            _where_min_max(b, node)
        elif node.op_type == "Pow" and kind and (kind not in _OPSET_11_FLOATS
                                                 or types.get(node.input[1]) != kind):
            _float_pow(b, node, kind, types.get(node.input[1]))
        elif node.op_type in ("ReduceMax", "ReduceMin") and kind in _OPSET_12_REDUCE_INTS:
            _int32_reduce(b, node, kind)
        else:
            b.nodes.append(node)


#: uint8 and int8: the types ReduceMax/ReduceMin take from opset 12 (at 11: int32 and wider)
_OPSET_12_REDUCE_INTS = (2, 3)
_INT32 = 6


def _int32_reduce(b: Builder, node, kind: int) -> None:
    """ReduceMax/ReduceMin of int8 or uint8 at opset 11: in int32 (exact), cast back."""
    wide = b.fresh(f"{node.input[0]}_int32")
    b.nodes.append(b.helper.make_node("Cast", [node.input[0]], [wide], to=_INT32,
                                      name=b.fresh(f"{node.name}/Cast")))
    out = b.fresh(f"{node.output[0]}_int32")
    attrs = {a.name: b.helper.get_attribute_value(a) for a in node.attribute}
    b.nodes.append(b.helper.make_node(node.op_type, [wide, *node.input[1:]], [out],
                                      name=node.name, **attrs))
    b.nodes.append(b.helper.make_node("Cast", [out], list(node.output), to=kind,
                                      name=b.fresh(f"{node.name}/Cast")))


def _where_min_max(b: Builder, node) -> None:
    """Max/Min (variadic) or Clip(x, min, max) as a chain of ``Where(Less, other, acc)``."""
    if node.op_type == "Clip":
        steps = [("Max", node.input[1]) if len(node.input) > 1 else None,
                 ("Min", node.input[2]) if len(node.input) > 2 else None]
        steps = [s for s in steps if s is not None and s[1]]
    else:
        steps = [(node.op_type, x) for x in node.input[1:]]
    acc = node.input[0]
    for i, (op, other) in enumerate(steps):
        last = i == len(steps) - 1
        out = node.output[0] if last else b.fresh(f"{node.output[0]}_{op.lower()}")
        less = b.fresh(f"{node.output[0]}_less")
        pair = [acc, other] if op == "Max" else [other, acc]  # x's NaN stays (Less: False)
        b.nodes.append(b.helper.make_node("Less", pair, [less],
                                          name=b.fresh(f"{node.name}/Less")))
        b.nodes.append(b.helper.make_node("Where", [less, other, acc], [out],
                                          name=b.fresh(f"{node.name}/Where")))
        acc = out
    if not steps:
        b.nodes.append(b.helper.make_node("Identity", [acc], [node.output[0]], name=node.name))


def _float_pow(b: Builder, node, base: int, exponent) -> None:
    compute = base if base in _OPSET_11_FLOATS else 11
    inputs = []
    for name, kind in zip(node.input, (base, exponent)):
        if kind != compute:
            cast = b.fresh(f"{name}_cast")
            b.nodes.append(b.helper.make_node("Cast", [name], [cast], to=compute,
                                              name=b.fresh(f"{node.name}/Cast")))
            name = cast
        inputs.append(name)
    if compute == base:
        b.nodes.append(b.helper.make_node("Pow", inputs, list(node.output), name=node.name))
        return
    out = b.fresh(f"{node.output[0]}_double")
    b.nodes.append(b.helper.make_node("Pow", inputs, [out], name=node.name))
    b.nodes.append(b.helper.make_node("Cast", [out], list(node.output), to=base,
                                      name=b.fresh(f"{node.name}/Cast")))


_BFLOAT16 = "it reads or makes bfloat16 values, which ONNX's operators take from opset 13"


def _touches_bfloat16(dtypes: dict, node: dict) -> bool:
    if any(o is not None and o["dtype"] == "bfloat16" for o in node["outputs"]):
        return True
    return any(dtypes.get(name) == "bfloat16"
               for name in _refs([node["args"], node["kwargs"]], set()))


def _touches_complex(dtypes: dict, node: dict) -> bool:
    """Whether a node reads or makes a complex value (``dtypes``: value name -> dtype)."""
    if any(o is not None and is_complex(o["dtype"]) for o in node["outputs"]):
        return True
    return any(is_complex(dtypes.get(name, ""))
               for name in _refs([node["args"], node["kwargs"]], set()))


def _check_complex_outputs(nodes: list, outputs: list, out_names: list, user: list,
                           weights: list) -> None:
    """A complex graph output is refused, naming it: ONNX has no complex tensor type that
    onnxruntime runs."""
    dtypes = {s["name"]: s["dtype"] for s in user + weights}
    dtypes.update((o["name"], o["dtype"]) for n in nodes for o in n["outputs"] if o is not None)
    for (kind, v), name in zip(outputs, out_names):
        if kind == "tensor" and is_complex(dtypes.get(v, "")):
            raise OnnxExporterError(
                f"output {name!r} (value %{v}) is {dtypes[v]}: ONNX has no complex tensor type "
                "that onnxruntime runs; return ember.view_as_real of it (or its abs/angle, "
                ".real/.imag) instead")


def _name_outputs(b: Builder, outputs: list, names: list, axes: dict) -> None:
    """Graph outputs under the requested names: a node's output is renamed, anything else
    (an input, a weight, a value already output under another name) goes through Identity."""
    taken: set = set()
    for (kind, v), name in zip(outputs, names):
        if kind == "tensor":
            current, meta = b.value(v), b.meta(v)
        elif kind == "symint":
            current, meta = b.scalar_expr(v), {"dtype": "int64", "shape": []}
        else:
            dtype = "bool" if isinstance(v, bool) else "int64" if isinstance(v, int) \
                else "float32"
            current, meta = b.const(v, dtype), {"dtype": dtype, "shape": []}
        if current in b.produced and current not in taken:
            b.rename(current, name)
        else:
            b.add("Identity", [current], outputs=[name])
        taken.add(name)
        b.outputs.append(b.value_info(name, meta, _axes_of(axes.get(name), len(meta["shape"]),
                                                            name)))


def _axes_of(spec, rank: int, name: str) -> dict | None:
    if spec is None:
        return None
    if isinstance(spec, dict):
        items = spec
    else:
        items = {a: f"{name}_dynamic_axes_{i + 1}" for i, a in enumerate(spec)}
    out = {}
    for a, param in items.items():
        if isinstance(a, bool) or not isinstance(a, int) or not -rank <= a < rank:
            raise ValueError(f"dynamic_axes[{name!r}]: axis {a!r} is out of range for a "
                             f"{rank}-d output")
        out[a % rank] = str(param)
    return out


def _value_info(b: Builder, nodes: list, io_names: set) -> list:
    seen: set = set()
    infos = []
    for node in nodes:
        for o in node["outputs"]:
            if o is None:
                continue
            name = b.env.get(o["name"])
            if name is None or name in seen or name in io_names or name not in b.produced:
                continue
            seen.add(name)
            infos.append(b.value_info(name, o))
    return infos
