"""ember.onnx.load_model: ONNX graphs run with Ember ops.

Per operator: one-node models built with ``onnx.helper``, run by Ember and by onnxruntime (or
onnx's reference evaluator where onnxruntime lacks the operator) on the same inputs.
PyTorch-exported models (ResNet-18 topology, MobileNetV2 blocks, a TransformerEncoder with a
padding mask, LSTM, GRU) against PyTorch's own outputs; training through an imported graph
against PyTorch's gradients; and the errors for bad files and unsupported operators.
"""

from __future__ import annotations

import io
import sys
import warnings

import numpy as np
import pytest

import ember

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from ember.onnx import OnnxModule, load_model  # noqa: E402

RNG = np.random.default_rng(0)


def randn(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def positive(*shape):
    return (np.abs(RNG.standard_normal(shape)) + 0.5).astype(np.float32)


def ints(*values):
    return np.asarray(values, dtype=np.int64)


def to_numpy(t) -> np.ndarray:
    return t.detach().cpu().numpy()


# -- one-node models ----------------------------------------------------------------------------

def _graph_input(name: str, value: np.ndarray):
    return helper.make_tensor_value_info(
        name, helper.np_dtype_to_tensor_dtype(value.dtype), list(value.shape))


def build(op, inputs, attrs=None, *, opset=17, outputs=1, const=None, output_types=None):
    """A one-node model: ``inputs`` (arrays, ``None`` for an absent optional input) become graph
    inputs, except those at the indices in ``const`` (default: integer inputs after the first),
    which become initializers."""
    if const is None:
        const = {i for i, v in enumerate(inputs)
                 if i > 0 and v is not None and v.dtype.kind in "iu"}
    names, graph_inputs, initializers, feeds = [], [], [], {}
    for i, value in enumerate(inputs):
        if value is None:
            names.append("")
            continue
        name = f"in{i}"
        names.append(name)
        if i in const:
            initializers.append(numpy_helper.from_array(value, name))
        else:
            graph_inputs.append(_graph_input(name, value))
            feeds[name] = value
    out_names = [f"out{i}" for i in range(outputs)]
    node = helper.make_node(op, names, out_names, name="node0", **(attrs or {}))
    types = output_types or [None] * outputs
    graph_outputs = [helper.make_tensor_value_info(n, t, None) if t is not None
                     else helper.make_empty_tensor_value_info(n) for n, t in zip(out_names, types)]
    graph = helper.make_graph([node], "g", graph_inputs, graph_outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return model, feeds


def run_oracle(model, feeds, oracle: str) -> list[np.ndarray]:
    if oracle == "ort":
        ort = pytest.importorskip("onnxruntime")
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        return session.run(None, feeds)
    from onnx.reference import ReferenceEvaluator

    return list(ReferenceEvaluator(model).run(None, feeds))


def typed(model, expected):
    """``model`` with its graph outputs typed after the oracle's results (the checker wants
    types)."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    for output, value in zip(model.graph.output, expected):
        if not output.type.HasField("tensor_type"):
            output.CopyFrom(helper.make_tensor_value_info(
                output.name, helper.np_dtype_to_tensor_dtype(np.asarray(value).dtype),
                list(np.shape(value))))
    return model


def run_ember(model, feeds):
    module = load_model(model.SerializeToString())
    out = module(*[ember.tensor(feeds[n]) for n in module.input_names])
    return [to_numpy(t) for t in (out if isinstance(out, tuple) else (out,))]


def assert_matches(got, expected, rtol=1e-5, atol=1e-5):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        e = np.asarray(e)
        assert g.shape == e.shape, (g.shape, e.shape)
        assert g.dtype == e.dtype, (g.dtype, e.dtype)
        if e.dtype.kind in "fc":
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(g, e)


def case(op, inputs, attrs=None, *, id=None, oracle="ort", **kw):
    return pytest.param(op, inputs, attrs, oracle, kw, id=id or op)


X = randn(2, 3, 4)
UNIT = np.clip(randn(2, 3, 4), -0.9, 0.9)

ELEMENTWISE = [
    case("Add", [randn(2, 3, 4), randn(3, 1)]),
    case("Sub", [randn(2, 3, 4), randn(4)]),
    case("Mul", [randn(2, 1, 4), randn(3, 1)]),
    case("Div", [randn(2, 3), positive(2, 3)]),
    case("Div", [ints(7, -7, 9, -9), ints(2, 2, -4, -4)], id="Div-int-trunc", const=set()),
    case("Pow", [positive(2, 3), randn(2, 3)]),
    case("Pow", [randn(2, 3), ints(2)], id="Pow-int-exponent"),
    case("Mod", [ints(7, -7, 9, -9), ints(3, 3, -4, 4)], id="Mod-int", const=set()),
    case("Mod", [randn(5) * 5, positive(5)], {"fmod": 1}, id="Mod-fmod"),
    case("Max", [randn(2, 3), randn(3), randn(2, 1)]),
    case("Min", [randn(2, 3), randn(3), randn(2, 1)]),
    case("Sum", [randn(2, 3), randn(3), randn(2, 1)]),
    case("Mean", [randn(2, 3), randn(3), randn(2, 1)]),
    *[case(op, [randn(2, 3, 4)]) for op in
      ("Neg", "Abs", "Exp", "Floor", "Ceil", "Sign", "Erf", "Sigmoid", "Tanh", "Relu",
       "Softsign", "Sin", "Cos", "Tan", "Atan", "Sinh", "Cosh", "Asinh", "Softplus", "HardSwish",
       "Identity")],
    case("Round", [np.asarray([0.5, 1.5, 2.5, -0.5, -1.5, 0.3, 2.7], np.float32)]),
    *[case(op, [positive(2, 3, 4)]) for op in ("Sqrt", "Log", "Reciprocal")],
    *[case(op, [UNIT]) for op in ("Asin", "Acos", "Atanh")],
    case("Acosh", [positive(2, 3) + 1]),
    case("Not", [randn(2, 3) > 0]),
    case("IsNaN", [np.asarray([1.0, np.nan, np.inf], np.float32)]),
    case("IsInf", [np.asarray([1.0, np.nan, np.inf, -np.inf], np.float32)]),
    case("IsInf", [np.asarray([1.0, np.inf, -np.inf], np.float32)], {"detect_positive": 0},
         id="IsInf-negative"),
    case("LeakyRelu", [X], {"alpha": 0.2}),
    case("PRelu", [randn(2, 3, 4), randn(3, 1)]),
    case("Elu", [X], {"alpha": 0.7}),
    case("Celu", [X], {"alpha": 1.3}),
    case("Selu", [X]),
    case("Selu", [X], {"alpha": 1.2, "gamma": 0.9}, id="Selu-attrs"),
    case("ThresholdedRelu", [X], {"alpha": 0.3}),
    case("Mish", [X], opset=18),
    case("Gelu", [X], opset=20),
    case("Gelu", [X], {"approximate": "tanh"}, opset=20, id="Gelu-tanh"),
    case("HardSigmoid", [X], {"alpha": 0.3, "beta": 0.4}),
    case("Clip", [X], {"min": -0.5, "max": 0.4}, opset=6, id="Clip-attrs"),
    case("Clip", [X, np.asarray(-0.5, np.float32), np.asarray(0.4, np.float32)],
         const={1, 2}, id="Clip-inputs"),
    case("Clip", [X, np.asarray(-0.5, np.float32)], const={1}, id="Clip-min-only"),
    case("Clip", [X, None, np.asarray(0.2, np.float32)], const={2}, id="Clip-max-only"),
    case("Softmax", [randn(2, 3, 4)], opset=11, id="Softmax-11-coerced"),
    case("Softmax", [randn(2, 3, 4)], {"axis": 0}, opset=11, id="Softmax-11-axis0"),
    case("Softmax", [randn(2, 3, 4)]),
    case("Softmax", [randn(2, 3, 4)], {"axis": 1}, id="Softmax-axis1"),
    case("LogSoftmax", [randn(2, 3, 4)], opset=11, id="LogSoftmax-11"),
    case("LogSoftmax", [randn(2, 3, 4)], {"axis": 0}),
    case("Hardmax", [randn(2, 3, 4)], {"axis": 1}),
    *[case(op, [randn(2, 3), randn(3)]) for op in
      ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual")],
    case("Equal", [ints(1, 2, 3), ints(1, 0, 3)], const=set(), id="Equal-int"),
    *[case(op, [randn(2, 3) > 0, randn(3) > 0]) for op in ("And", "Or", "Xor")],
    case("Where", [randn(2, 3) > 0, randn(2, 3), randn(3)]),
]

MATRIX = [
    case("MatMul", [randn(2, 3, 4), randn(4, 5)]),
    case("MatMul", [randn(2, 1, 3, 4), randn(3, 4, 2)], id="MatMul-batched"),
    case("MatMul", [randn(4), randn(2, 4, 3)], id="MatMul-vector"),
    case("Gemm", [randn(3, 4), randn(5, 4), randn(5)], {"transB": 1}),
    case("Gemm", [randn(4, 3), randn(4, 5), randn(3, 5)],
         {"transA": 1, "alpha": 0.5, "beta": 2.0}, id="Gemm-transA-alpha-beta"),
    case("Gemm", [randn(3, 4), randn(4, 5), randn(1)], id="Gemm-scalar-C"),
    case("Gemm", [randn(3, 4), randn(5, 4)], {"transB": 1, "alpha": 2.0}, id="Gemm-no-C"),
    case("Gemm", [randn(3, 4), randn(5, 4), randn(3, 1)], {"transB": 1}, id="Gemm-column-C"),
    case("Einsum", [randn(2, 3, 4), randn(2, 4, 5)], {"equation": "bij,bjk->bik"}),
    case("Einsum", [randn(3, 4)], {"equation": "ij->ji"}, id="Einsum-transpose"),
    case("Einsum", [randn(3, 4), randn(4)], {"equation": "ij, j"}, id="Einsum-implicit"),
]

SHAPES = [
    case("Cast", [randn(2, 3) * 4], {"to": TensorProto.INT64}),
    case("Cast", [ints(1, 0, -3)], {"to": TensorProto.FLOAT}, id="Cast-int-float"),
    case("Cast", [np.asarray([0.0, 1.5, -2.0], np.float32)], {"to": TensorProto.BOOL},
         id="Cast-bool"),
    case("Cast", [randn(2, 3)], {"to": TensorProto.FLOAT16}, id="Cast-float16"),
    case("Cast", [randn(2, 3)], {"to": TensorProto.DOUBLE}, id="Cast-double"),
    case("CastLike", [ints(1, 2), randn(1)], const=set()),
    case("Shape", [randn(2, 3, 4)]),
    case("Shape", [randn(2, 3, 4, 5)], {"start": 1, "end": -1}, opset=15, id="Shape-slice"),
    case("Size", [randn(2, 3, 4)]),
    case("ConstantOfShape", [ints(2, 3)], const=set()),
    case("ConstantOfShape", [ints(3)],
         {"value": numpy_helper.from_array(ints(7), "v")}, const=set(), id="ConstantOfShape-int"),
    case("Range", [np.asarray(1.0, np.float32), np.asarray(2.0, np.float32),
                   np.asarray(0.3, np.float32)], const={0, 1, 2}),
    case("Range", [np.asarray(10), np.asarray(1), np.asarray(-3)], const={0, 1, 2},
         id="Range-int"),
    case("Reshape", [randn(2, 3, 4), ints(0, -1)]),
    case("Reshape", [randn(3, 0, 2), ints(0, 4)], {"allowzero": 1}, id="Reshape-allowzero"),
    case("Reshape", [randn(2, 3, 4), ints(-1, 2, 2)], id="Reshape-infer"),
    case("Flatten", [randn(2, 3, 4)]),
    case("Flatten", [randn(2, 3, 4)], {"axis": 0}, id="Flatten-0"),
    case("Flatten", [randn(2, 3, 4)], {"axis": -1}, id="Flatten-neg"),
    case("Transpose", [randn(2, 3, 4)], {"perm": [1, 2, 0]}),
    case("Transpose", [randn(2, 3, 4)], id="Transpose-default"),
    case("Squeeze", [randn(2, 1, 3, 1)], {"axes": [1, -1]}, opset=11, id="Squeeze-11-attr"),
    case("Squeeze", [randn(2, 1, 3, 1), ints(1)]),
    case("Squeeze", [randn(2, 1, 3, 1)], id="Squeeze-all"),
    case("Unsqueeze", [randn(2, 3)], {"axes": [0, 3]}, opset=11, id="Unsqueeze-11-attr"),
    case("Unsqueeze", [randn(2, 3), ints(-1, 1)]),
    case("Concat", [randn(2, 3), randn(2, 1), randn(2, 2)], {"axis": -1}),
    case("Split", [randn(6, 4)], {"axis": 0, "split": [2, 4]}, opset=11, outputs=2,
         id="Split-11-attr"),
    case("Split", [randn(6, 4), ints(1, 3)], {"axis": 1}, outputs=2),
    case("Split", [randn(6, 4)], outputs=3, id="Split-equal"),
    case("Split", [randn(7, 4)], {"num_outputs": 3}, opset=18, outputs=3,
         id="Split-18-num-outputs"),
    case("Slice", [randn(5, 6)], {"starts": [1, -4], "ends": [4, 1000]}, opset=9,
         id="Slice-9-attrs"),
    case("Slice", [randn(5, 6, 7), ints(1, -1), ints(4, -5), ints(0, 2), ints(1, -2)]),
    case("Slice", [randn(5, 6), ints(-1), ints(-9223372036854775807), ints(1), ints(-1)],
         id="Slice-reverse-all"),
    case("Slice", [randn(5, 6), ints(0), ints(100), ints(-1), ints(2)], id="Slice-step2"),
    case("Gather", [randn(5, 4), ints(0, -1, 2)], {"axis": 0}),
    case("Gather", [randn(3, 5, 4), ints(1, 3, -2, 0).reshape(2, 2)], {"axis": 1},
         id="Gather-2d-indices"),
    case("Gather", [randn(3, 5), np.asarray(-1)], {"axis": 1}, id="Gather-scalar"),
    case("GatherElements", [randn(3, 4), ints(0, 2, -1, 1, 2, 0).reshape(3, 2)], {"axis": 1}),
    case("GatherND", [randn(3, 4, 5), ints(0, 1, 2, 3).reshape(2, 2)]),
    case("GatherND", [randn(2, 4, 5), ints(1, 3).reshape(2, 1)], {"batch_dims": 1},
         id="GatherND-batch"),
    case("ScatterElements", [randn(3, 4), ints(0, 2, 1, 3, 3, 0).reshape(3, 2), randn(3, 2)],
         {"axis": 1}),
    case("ScatterElements", [randn(3, 4), ints(0, 0, 1, 1, 3, 3).reshape(3, 2), randn(3, 2)],
         {"axis": 1, "reduction": "add"}, opset=18, id="ScatterElements-add"),
    case("ScatterND", [randn(4, 3), ints(2, 0).reshape(2, 1), randn(2, 3)]),
    case("ScatterND", [randn(4, 3), ints(2, 2).reshape(2, 1), randn(2, 3)],
         {"reduction": "add"}, opset=18, id="ScatterND-add"),
    case("Expand", [randn(3, 1), ints(2, 1, 4)]),
    case("Tile", [randn(2, 3), ints(2, 3)]),
    case("Trilu", [randn(2, 4, 5)]),
    case("Trilu", [randn(4, 5), np.asarray(-1)], {"upper": 0}, id="Trilu-lower-k"),
    case("CumSum", [randn(3, 4), np.asarray(1)]),
    case("CumSum", [randn(3, 4), np.asarray(0)], {"exclusive": 1}, id="CumSum-exclusive"),
    case("CumSum", [randn(3, 4), np.asarray(1)], {"reverse": 1}, id="CumSum-reverse"),
    case("CumSum", [ints(1, 2, 3, 4), np.asarray(0)], {"exclusive": 1, "reverse": 1},
         const={1}, id="CumSum-int-both"),
    case("OneHot", [ints(0, 2, -1, 5).reshape(2, 2), np.asarray(4), np.asarray([0.0, 3.0],
                                                                             np.float32)],
         {"axis": 1}, const={1, 2}),
    case("NonZero", [randn(3, 4) > 0]),
    case("DepthToSpace", [randn(1, 8, 2, 3)], {"blocksize": 2}),
    case("DepthToSpace", [randn(1, 8, 2, 3)], {"blocksize": 2, "mode": "CRD"},
         id="DepthToSpace-CRD"),
    case("SpaceToDepth", [randn(1, 2, 4, 6)], {"blocksize": 2}),
    case("EyeLike", [randn(3, 4)], {"k": 1}),
    case("Dropout", [randn(3, 4)], outputs=2),
    case("Dropout", [randn(3, 4), np.asarray(0.3, np.float32)], const={1}, id="Dropout-ratio"),
]


def _reduce_cases():
    out = []
    for op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
               "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"):
        x = positive(2, 3, 4) if op == "ReduceLogSum" else randn(2, 3, 4)
        out.append(case(op, [x], {"axes": [0, -1], "keepdims": 0}, opset=11, id=f"{op}-11"))
        since = 13 if op == "ReduceSum" else 18
        out.append(case(op, [x, ints(1)], opset=since, id=f"{op}-{since}"))
        out.append(case(op, [x], {"keepdims": 0}, opset=since, id=f"{op}-all"))
    out.append(case("ReduceSum", [randn(2, 3), np.zeros(0, np.int64)],
                    {"noop_with_empty_axes": 1}, opset=13, id="ReduceSum-noop"))
    out.append(case("ReduceMean", [randn(2, 3)], {"axes": [1]}, opset=13,
                    id="ReduceMean-13-attr"))
    out.append(case("ReduceMax", [ints(3, 1, 4, 1, 5, 9).reshape(2, 3)], {"axes": [1]},
                    opset=13, id="ReduceMax-int"))
    return out


TIES = np.asarray([[1, 3, 3], [2, 2, 0]], np.float32)
REDUCTIONS = [
    *_reduce_cases(),
    case("ArgMax", [randn(3, 4)], {"axis": 1}),
    case("ArgMin", [randn(3, 4)], {"axis": 0, "keepdims": 0}),
    case("ArgMax", [TIES], {"axis": 1, "select_last_index": 1}, id="ArgMax-last"),
    case("ArgMin", [TIES], {"axis": 1, "select_last_index": 1}, id="ArgMin-last"),
    case("ArgMax", [TIES], {"axis": 1}, id="ArgMax-first"),
    case("TopK", [randn(3, 5), ints(2)], outputs=2),
    case("TopK", [randn(3, 5), ints(2)], {"axis": 0, "largest": 0}, outputs=2,
         id="TopK-smallest"),
    case("TopK", [randn(3, 5)], {"k": 3}, opset=9, outputs=2, id="TopK-9-attr"),
    case("LpNormalization", [randn(3, 4)], {"p": 1, "axis": 0}),
    case("LpNormalization", [randn(3, 4)], id="LpNormalization-2"),
    case("MeanVarianceNormalization", [randn(2, 3, 4, 5)]),
]

NN = [
    case("Conv", [randn(2, 3, 7), randn(4, 3, 3), randn(4)], id="Conv-1d"),
    case("Conv", [randn(2, 4, 7, 8), randn(6, 2, 3, 3), randn(6)],
         {"group": 2, "pads": [1, 1, 1, 1], "strides": [2, 1]}, id="Conv-groups"),
    case("Conv", [randn(1, 2, 7, 8), randn(3, 2, 3, 2)], {"pads": [0, 1, 2, 0]},
         id="Conv-asymmetric"),
    case("Conv", [randn(1, 2, 7, 8), randn(3, 2, 3, 3)],
         {"auto_pad": "SAME_UPPER", "strides": [2, 2]}, id="Conv-same-upper"),
    case("Conv", [randn(1, 2, 7, 8), randn(3, 2, 4, 4)], {"auto_pad": "SAME_LOWER"},
         id="Conv-same-lower"),
    case("Conv", [randn(1, 2, 7, 8), randn(3, 2, 3, 3)], {"auto_pad": "VALID"}, id="Conv-valid"),
    case("Conv", [randn(1, 2, 9, 9), randn(3, 2, 3, 3)], {"dilations": [2, 3], "pads": [2] * 4},
         id="Conv-dilated"),
    case("Conv", [randn(1, 2, 4, 5, 6), randn(3, 2, 2, 3, 3), randn(3)], {"pads": [1] * 6},
         id="Conv-3d"),
    case("ConvTranspose", [randn(1, 4, 5, 6), randn(4, 3, 3, 3), randn(3)],
         {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
    case("ConvTranspose", [randn(1, 4, 5, 6), randn(4, 2, 3, 3)],
         {"strides": [2, 3], "output_padding": [1, 2], "group": 2}, id="ConvTranspose-outpad"),
    case("ConvTranspose", [randn(1, 2, 5, 6), randn(2, 3, 3, 3), randn(3)],
         {"pads": [0, 1, 2, 0], "strides": [2, 2]}, id="ConvTranspose-asymmetric"),
    case("ConvTranspose", [randn(1, 2, 5, 6), randn(2, 3, 3, 3)],
         {"strides": [2, 2], "output_shape": [10, 13]}, id="ConvTranspose-output-shape"),
    case("ConvTranspose", [randn(1, 2, 5, 6), randn(2, 3, 3, 3)],
         {"strides": [2, 2], "auto_pad": "SAME_UPPER"}, id="ConvTranspose-same-upper"),
    case("ConvTranspose", [randn(1, 2, 5, 6), randn(2, 3, 3, 3)],
         {"strides": [2, 2], "auto_pad": "SAME_LOWER"}, id="ConvTranspose-same-lower"),
    case("ConvTranspose", [randn(1, 2, 5), randn(2, 3, 3)], {"dilations": [2], "strides": [3]},
         id="ConvTranspose-1d-dilated"),
    case("MaxPool", [randn(2, 3, 7, 8)], {"kernel_shape": [3, 3], "strides": [2, 2],
                                          "pads": [1, 1, 1, 1]}),
    case("MaxPool", [randn(1, 2, 7, 8)], {"kernel_shape": [3, 2], "strides": [2, 2],
                                          "ceil_mode": 1}, id="MaxPool-ceil"),
    case("MaxPool", [randn(1, 2, 8, 8)], {"kernel_shape": [2, 2], "strides": [2, 2],
                                          "pads": [0, 1, 1, 0], "ceil_mode": 1},
         id="MaxPool-asymmetric-ceil"),
    case("MaxPool", [randn(1, 2, 9, 9)], {"kernel_shape": [3, 3], "dilations": [2, 2]},
         id="MaxPool-dilated"),
    case("MaxPool", [randn(1, 2, 7, 8)], {"kernel_shape": [3, 3], "strides": [2, 2],
                                          "auto_pad": "SAME_UPPER"}, id="MaxPool-same"),
    case("MaxPool", [randn(2, 3, 6, 7)], {"kernel_shape": [2, 3], "strides": [2, 2],
                                          "pads": [1, 1, 1, 1]}, outputs=2,
         id="MaxPool-indices"),
    case("MaxPool", [randn(2, 3, 6, 7)], {"kernel_shape": [2, 2], "pads": [1, 0, 0, 1],
                                          "storage_order": 1}, outputs=2,
         id="MaxPool-indices-colmajor-asym"),
    case("MaxPool", [randn(2, 3, 9)], {"kernel_shape": [3], "strides": [2]}, id="MaxPool-1d"),
    case("MaxPool", [randn(1, 2, 4, 5, 6)], {"kernel_shape": [2, 2, 2]}, id="MaxPool-3d"),
    case("AveragePool", [randn(2, 3, 7, 8)], {"kernel_shape": [3, 3], "strides": [2, 2],
                                              "pads": [1, 1, 1, 1]}),
    case("AveragePool", [randn(2, 3, 7, 8)], {"kernel_shape": [3, 3], "strides": [2, 2],
                                              "pads": [1, 1, 1, 1], "count_include_pad": 1},
         id="AveragePool-include-pad"),
    case("AveragePool", [randn(1, 2, 7, 8)], {"kernel_shape": [3, 2], "strides": [2, 3],
                                              "ceil_mode": 1}, id="AveragePool-ceil"),
    case("AveragePool", [randn(1, 2, 7, 8)], {"kernel_shape": [3, 3], "strides": [2, 2],
                                              "pads": [1, 1, 1, 1], "ceil_mode": 1,
                                              "count_include_pad": 1},
         id="AveragePool-ceil-include-pad"),
    case("AveragePool", [randn(1, 2, 7, 8)], {"kernel_shape": [3, 3], "pads": [0, 2, 1, 0]},
         id="AveragePool-asymmetric"),
    case("AveragePool", [randn(1, 2, 7, 8)], {"kernel_shape": [2, 3], "strides": [2, 2],
                                              "auto_pad": "SAME_LOWER"}, id="AveragePool-same"),
    case("AveragePool", [randn(1, 2, 9, 9)], {"kernel_shape": [3, 3], "dilations": [2, 2],
                                              "pads": [1, 1, 1, 1]}, opset=19,
         id="AveragePool-19-dilated"),
    case("AveragePool", [randn(2, 3, 9)], {"kernel_shape": [3], "strides": [2]},
         id="AveragePool-1d"),
    case("GlobalAveragePool", [randn(2, 3, 4, 5)]),
    case("GlobalMaxPool", [randn(2, 3, 4, 5)]),
    case("BatchNormalization", [randn(2, 3, 4, 5), randn(3), randn(3), randn(3), positive(3)],
         {"epsilon": 1e-3}),
    case("BatchNormalization", [randn(4, 3), randn(3), randn(3), randn(3), positive(3)],
         id="BatchNormalization-2d"),
    case("BatchNormalization", [randn(2, 3, 4, 5), randn(3), randn(3), randn(3), positive(3)],
         {"training_mode": 1, "momentum": 0.8}, outputs=3, oracle="ref",
         id="BatchNormalization-training"),
    case("LayerNormalization", [randn(2, 3, 4), randn(4), randn(4)]),
    case("LayerNormalization", [randn(2, 3, 4), randn(3, 4), randn(3, 4)],
         {"axis": 1, "epsilon": 1e-3}, outputs=3, id="LayerNormalization-axis1-stats"),
    case("LayerNormalization", [randn(2, 3, 4), randn(4)], id="LayerNormalization-no-bias"),
    case("InstanceNormalization", [randn(2, 3, 4, 5), randn(3), randn(3)]),
    case("GroupNormalization", [randn(2, 6, 4), randn(6), randn(6)], {"num_groups": 3},
         opset=21, oracle="ref"),
    case("Pad", [randn(2, 3), ints(0, 1, 1, 2), np.asarray(1.5, np.float32)], const={1, 2}),
    case("Pad", [randn(2, 3, 4), ints(0, 2, 1, 0, 1, 3)], {"mode": "reflect"},
         id="Pad-reflect"),
    case("Pad", [randn(2, 3, 4), ints(1, 2, 0, 0, 1, 3)], {"mode": "edge"}, id="Pad-edge"),
    case("Pad", [randn(2, 3, 4), ints(0, 2, 1, 0, 1, 3)], {"mode": "wrap"}, opset=19,
         id="Pad-wrap"),
    case("Pad", [randn(3, 5), ints(-1, 2, 0, -2)], id="Pad-negative"),
    case("Pad", [randn(2, 3, 4), ints(1, 2, 0, 1), None, ints(0, -1)], opset=18,
         id="Pad-18-axes"),
    case("Pad", [randn(2, 3)], {"pads": [1, 0, 0, 2], "value": 2.0}, opset=2, id="Pad-2-attrs"),
]


def _resize_cases():
    out = []
    x = randn(1, 2, 4, 5)
    up = np.asarray([1, 1, 2.0, 1.5], np.float32)
    down = np.asarray([1, 1, 0.5, 0.6], np.float32)
    empty = np.zeros(0, np.float32)
    for coordinate in ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"):
        for mode in ("nearest", "linear", "cubic"):
            for name, scales in (("up", up), ("down", down)):
                out.append(case("Resize", [x, empty, scales], {
                    "mode": mode, "coordinate_transformation_mode": coordinate},
                    const={1, 2}, id=f"Resize-{mode}-{coordinate}-{name}"))
    for nearest in ("round_prefer_ceil", "floor", "ceil"):
        out.append(case("Resize", [x, empty, up], {"nearest_mode": nearest}, const={1, 2},
                        id=f"Resize-nearest-{nearest}"))
    out.append(case("Resize", [x, empty, empty, ints(1, 2, 7, 3)], {"mode": "linear"},
                    const={1, 2, 3}, id="Resize-sizes"))
    out.append(case("Resize", [x, empty, up],
                    {"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1},
                    const={1, 2}, id="Resize-cubic-exclude-outside"))
    big = randn(1, 2, 20, 17)  # antialias (opset 18): the filter stretched when downscaling
    for mode in ("linear", "cubic"):
        for exclude in (0, 1):
            for coordinate in ("half_pixel", "pytorch_half_pixel", "align_corners"):
                out.append(case("Resize", [big, empty, empty, ints(1, 2, 7, 9)], {
                    "mode": mode, "antialias": 1, "exclude_outside": exclude,
                    "cubic_coeff_a": -0.5, "coordinate_transformation_mode": coordinate},
                    opset=18, const={1, 2, 3},
                    id=f"Resize-18-antialias-{mode}-{coordinate}-exclude{exclude}"))
        out.append(case("Resize", [big, empty, np.asarray([1, 1, 0.3, 1.6], np.float32)],
                        {"mode": mode, "antialias": 1}, opset=18, const={1, 2},
                        id=f"Resize-18-antialias-{mode}-scales"))
    roi = np.asarray([0, 0, 0.2, 0.1, 1, 1, 0.9, 1.2], np.float32)
    for mode in ("nearest", "linear"):
        out.append(case("Resize", [x, roi, empty, ints(1, 2, 5, 6)], {
            "mode": mode, "coordinate_transformation_mode": "tf_crop_and_resize",
            "extrapolation_value": -3.0}, const={1, 2, 3}, id=f"Resize-crop-{mode}"))
    out.append(case("Resize", [x, None, np.asarray([2.0, 1.5], np.float32)],
                    {"axes": [2, 3], "mode": "linear"}, opset=18, const={2},
                    id="Resize-18-axes"))
    for policy in ("not_larger", "not_smaller"):
        out.append(case("Resize", [x, None, None, ints(8, 7)],
                        {"axes": [2, 3], "keep_aspect_ratio_policy": policy}, opset=18,
                        const={3}, id=f"Resize-18-{policy}"))
    out.append(case("Resize", [x, None, up],
                    {"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"},
                    opset=19, const={2}, id="Resize-19-half-pixel-symmetric"))
    for mode in ("nearest", "linear"):
        out.append(case("Resize", [x, up], {"mode": mode}, opset=10, const={1},
                        id=f"Resize-10-{mode}"))
        out.append(case("Resize", [x, down], {"mode": mode}, opset=10, const={1},
                        id=f"Resize-10-{mode}-down"))
    out.append(case("Upsample", [x, np.asarray([1, 1, 2, 3], np.float32)], opset=9, const={1}))
    return out


def _recurrent_cases():
    out = []
    seq, batch, size, hidden = 4, 3, 5, 6
    x = randn(seq, batch, size)
    lens = np.asarray([4, 2, 3], np.int32)
    for direction, d in (("forward", 1), ("reverse", 1), ("bidirectional", 2)):
        lstm = [x, randn(d, 4 * hidden, size), randn(d, 4 * hidden, hidden),
                randn(d, 8 * hidden)]
        attrs = {"hidden_size": hidden, "direction": direction}
        out.append(case("LSTM", lstm, attrs, outputs=3, id=f"LSTM-{direction}"))
        out.append(case("LSTM", [*lstm, lens, randn(d, batch, hidden), randn(d, batch, hidden),
                                 randn(d, 3 * hidden)], attrs, outputs=3,
                        id=f"LSTM-{direction}-lens-states-peepholes"))
        gru = [x, randn(d, 3 * hidden, size), randn(d, 3 * hidden, hidden), randn(d, 6 * hidden)]
        for before_reset in (0, 1):
            out.append(case("GRU", [*gru, lens, randn(d, batch, hidden)],
                            {**attrs, "linear_before_reset": before_reset}, outputs=2,
                            id=f"GRU-{direction}-lbr{before_reset}"))
        rnn = [x, randn(d, hidden, size), randn(d, hidden, hidden), randn(d, 2 * hidden)]
        out.append(case("RNN", rnn, attrs, outputs=2, id=f"RNN-{direction}"))
    out.append(case("LSTM", [x, randn(1, 4 * hidden, size), randn(1, 4 * hidden, hidden)],
                    {"hidden_size": hidden, "clip": 0.5}, outputs=3, id="LSTM-clip-no-bias"))
    out.append(case("LSTM", [x, randn(1, 4 * hidden, size), randn(1, 4 * hidden, hidden)],
                    {"hidden_size": hidden, "input_forget": 1}, outputs=3,
                    id="LSTM-input-forget"))
    out.append(case("LSTM", [x.transpose(1, 0, 2).copy(), randn(2, 4 * hidden, size),
                             randn(2, 4 * hidden, hidden), randn(2, 8 * hidden), None,
                             randn(batch, 2, hidden), randn(batch, 2, hidden)],
                    {"hidden_size": hidden, "direction": "bidirectional", "layout": 1},
                    outputs=3, opset=14, oracle="ref", id="LSTM-layout1"))
    out.append(case("RNN", [x, randn(1, hidden, size), randn(1, hidden, hidden)],
                    {"hidden_size": hidden, "activations": ["LeakyRelu"],
                     "activation_alpha": [0.3]}, outputs=2, id="RNN-leaky-relu"))
    out.append(case("GRU", [x, randn(1, 3 * hidden, size), randn(1, 3 * hidden, hidden)],
                    {"hidden_size": hidden, "activations": ["HardSigmoid", "Tanh"],
                     "activation_alpha": [0.3], "activation_beta": [0.4]}, outputs=2,
                    id="GRU-hard-sigmoid"))
    return out


@pytest.mark.parametrize("op, inputs, attrs, oracle, kw",
                         ELEMENTWISE + MATRIX + SHAPES + REDUCTIONS + NN + _resize_cases()
                         + _recurrent_cases())
def test_operator_matches_oracle(op, inputs, attrs, oracle, kw):
    model, feeds = build(op, inputs, attrs, **kw)
    expected = run_oracle(model, feeds, oracle)
    got = run_ember(typed(model, expected), feeds)
    assert_matches(got, expected)


def test_group_normalization_18_per_group_scale():
    """Opset 18's GroupNormalization (one scale per group; the checker calls it deprecated, so
    it loads with strict=False and a warning)."""
    x, scale, bias = randn(2, 6, 4), randn(3), randn(3)
    model, feeds = build("GroupNormalization", [x, scale, bias], {"num_groups": 3}, opset=18)
    expected = run_oracle(model, feeds, "ref")
    with pytest.warns(UserWarning, match="checker rejects the model: .*deprecated"):
        module = load_model(typed(model, expected).SerializeToString(), strict=False)
    got = module(*[ember.tensor(feeds[n]) for n in module.input_names])
    assert_matches([to_numpy(got)], expected)
    with pytest.raises(ValueError, match="checker rejects the model.*strict=False"):
        load_model(typed(model, expected).SerializeToString())


def test_shape_subgraph_runs_with_ember_int64_tensors():
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape, with the shape read at run time (a
    different batch size than any constant would hold)."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes"], ["batch1"]),
        helper.make_node("Concat", ["batch1", "minus_one"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["flat"]),
        helper.make_node("MatMul", ["flat", "w"], ["y"]),
    ]
    w = randn(12, 2)
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])],
        [numpy_helper.from_array(np.asarray(0), "zero"), numpy_helper.from_array(ints(0), "axes"),
         numpy_helper.from_array(ints(-1), "minus_one"), numpy_helper.from_array(w, "w")])
    module = load_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    for batch in (1, 5):
        x = randn(batch, 3, 4)
        np.testing.assert_allclose(to_numpy(module(ember.tensor(x))), x.reshape(batch, 12) @ w,
                                   rtol=1e-5, atol=1e-5)


def test_unsorted_graph_is_ordered_and_dangling_inputs_are_named():
    nodes = [helper.make_node("Neg", ["h"], ["y"]), helper.make_node("Relu", ["x"], ["h"])]
    graph = helper.make_graph(nodes, "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = randn(3)
    with pytest.warns(UserWarning, match="topologically sorted"):
        module = load_model(model, strict=False)
    np.testing.assert_array_equal(to_numpy(module(ember.tensor(x))), -np.maximum(x, 0))
    del model.graph.node[1]
    with pytest.warns(UserWarning, match="checker rejects"), pytest.raises(
            ValueError, match=r"node inputs \['h'\] are neither graph inputs"):
        load_model(model, strict=False)


def _mlp_model():
    w1, b1, w2, b2 = randn(8, 4), randn(8), randn(3, 8), randn(3)
    nodes = [helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h"], transB=1),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "fc2.weight", "fc2.bias"], ["y"], transB=1)]
    inits = [numpy_helper.from_array(v, n) for v, n in
             ((w1, "fc1.weight"), (b1, "fc1.bias"), (w2, "fc2.weight"), (b2, "fc2.bias"))]
    inits.append(numpy_helper.from_array(ints(1, 3), "onnx::Reshape_7"))
    graph = helper.make_graph(nodes, "mlp",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_module_names_parameters_and_state_dict():
    module = load_model(_mlp_model())
    assert isinstance(module, OnnxModule) and isinstance(module, ember.nn.Module)
    assert module.input_names == ["x"] and module.output_names == ["y"] and module.opset == 17
    names = [n for n, _ in module.named_parameters()]
    assert names == ["fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"]
    assert module.initializer_names["fc1_weight"] == "fc1.weight"
    assert module.initializer_names["onnx__Reshape_7"] == "onnx::Reshape_7"
    assert dict(module.named_buffers())["onnx__Reshape_7"].dtype == ember.int64
    state = module.state_dict()
    assert list(state) == ["fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias", "onnx__Reshape_7"]
    assert all(p.requires_grad for p in module.parameters())
    device = ember.get_default_device()  # the strict device under EMBER_TEST_DEVICE=strict
    assert module.fc1_weight.device == device
    assert module(ember.tensor(randn(2, 4))).device == device
    # load_state_dict round trip changes what the graph computes
    state["fc2_bias"] = state["fc2_bias"] + 1.0
    x = ember.tensor(randn(2, 4))
    before = to_numpy(module(x))
    module.load_state_dict(state)
    np.testing.assert_allclose(to_numpy(module(x)), before + 1.0, rtol=1e-6, atol=1e-6)
    assert "opset=17" in repr(module)


def test_batch_norm_statistics_are_buffers():
    x, scale, bias, mean, var = randn(2, 3, 4, 5), randn(3), randn(3), randn(3), positive(3)
    model, _ = build("BatchNormalization", [x, scale, bias, mean, var], const={1, 2, 3, 4},
                     output_types=[TensorProto.FLOAT])
    model.graph.output[0].type.tensor_type.shape.CopyFrom(
        helper.make_tensor_type_proto(TensorProto.FLOAT, [2, 3, 4, 5]).tensor_type.shape)
    module = load_model(model)
    assert sorted(n for n, _ in module.named_parameters()) == ["in1", "in2"]
    assert sorted(n for n, _ in module.named_buffers()) == ["in3", "in4"]


def test_inputs_are_checked_and_taken_by_name():
    module = load_model(_mlp_model())
    x = randn(2, 4)
    np.testing.assert_array_equal(to_numpy(module(x=ember.tensor(x))),
                                  to_numpy(module(ember.tensor(x))))
    with pytest.raises(TypeError, match="has dtype ember.float32, but got a tensor of dtype "
                                        "ember.float64"):
        module(ember.tensor(x.astype(np.float64)))
    with pytest.raises(ValueError, match=r"has shape \['N', 4\], but got a tensor of shape "
                                         r"\[2, 5\]"):
        module(ember.tensor(randn(2, 5)))
    with pytest.raises(TypeError, match="takes 1 inputs"):
        module(ember.tensor(x), ember.tensor(x))
    with pytest.raises(TypeError, match="missing 1 required input"):
        module()


def test_load_from_path_file_object_and_model_proto(tmp_path):
    model = _mlp_model()
    path = tmp_path / "mlp.onnx"
    onnx.save(model, path)
    x = ember.tensor(randn(3, 4))
    reference = to_numpy(load_model(model)(x))
    for source in (path, str(path), path.read_bytes()):
        np.testing.assert_array_equal(to_numpy(load_model(source)(x)), reference)
    with open(path, "rb") as fh:
        np.testing.assert_array_equal(to_numpy(load_model(fh)(x)), reference)
    np.testing.assert_array_equal(to_numpy(load_model(io.BytesIO(path.read_bytes()))(x)),
                                  reference)
    with pytest.raises(TypeError, match="f must be a path"):
        load_model(12)


# -- errors -------------------------------------------------------------------------------------

def test_unsupported_operators_are_listed_in_one_error():
    nodes = [
        helper.make_node("NonMaxSuppression", ["boxes", "scores"], ["sel"], name="nms_1"),
        helper.make_node("Det", ["m"], ["d1"], name="det_a"),
        helper.make_node("Det", ["m"], ["d2"], name="det_b"),
        helper.make_node("FusedMatMul", ["m", "m"], ["f"], name="fused", domain="com.microsoft"),
        helper.make_node("Relu", ["m"], ["ok"], name="fine"),
    ]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, 4, 4]),
         helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 1, 4]),
         helper.make_tensor_value_info("m", TensorProto.FLOAT, [3, 3])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in
         (("d1", []), ("d2", []), ("f", [3, 3]), ("ok", [3, 3]))]
        + [helper.make_tensor_value_info("sel", TensorProto.INT64, [None, 3])],
        [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                    helper.make_opsetid("com.microsoft", 1)])
    with pytest.raises(RuntimeError) as info:
        load_model(model)
    message = str(info.value)
    assert message.startswith("ONNX operators not supported by Ember: ")
    assert "NonMaxSuppression (opset 18; node nms_1)" in message
    assert "Det (opset 18; nodes det_a, det_b)" in message
    assert "com.microsoft.FusedMatMul (domain 'com.microsoft' opset 1; node fused)" in message
    assert "Relu" not in message


def test_tensor_types_ember_lacks_are_named():
    w = helper.make_tensor("w", TensorProto.FLOAT8E4M3FN, [2], [1.0, 2.0])
    nodes = [helper.make_node("Cast", ["w"], ["a"], to=TensorProto.FLOAT, name="cast_w"),
             helper.make_node("Cast", ["x"], ["b"], to=TensorProto.FLOAT8E5M2, name="to_f8")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT8E5M2, [2])], [w])
    with pytest.raises(RuntimeError) as info:
        load_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]))
    assert str(info.value) == ("ONNX operators not supported by Ember: Cast (opset 19, "
                               "to=FLOAT8E5M2; node to_f8); ONNX tensor types Ember does not "
                               "have: initializer 'w' (float8_e4m3fn)")


@pytest.mark.parametrize("code, np_dtype, dtype", [
    (TensorProto.UINT16, np.uint16, ember.uint16), (TensorProto.UINT32, np.uint32, ember.uint32),
    (TensorProto.UINT64, np.uint64, ember.uint64)])
def test_wide_unsigned_tensors(code, np_dtype, dtype):
    """uint16/32/64 initializers, graph inputs and casts (values past the signed range kept)."""
    big = np.iinfo(np_dtype).max
    w = np.asarray([1, 7, big], np_dtype)
    nodes = [helper.make_node("Cast", ["x"], ["xu"], to=code),
             helper.make_node("Concat", ["w", "xu"], ["cat"], axis=0),
             helper.make_node("Cast", ["cat"], ["f"], to=TensorProto.DOUBLE),
             helper.make_node("Identity", ["u"], ["u_out"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.INT64, [2]),
                     helper.make_tensor_value_info("u", code, [2])],
        [helper.make_tensor_value_info("f", TensorProto.DOUBLE, [5]),
         helper.make_tensor_value_info("cat", code, [5]),
         helper.make_tensor_value_info("u_out", code, [2])],
        [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m = load_model(model)
    u = np.asarray([big, 3], np_dtype)
    f, cat, u_out = m(ember.tensor([2, 5]), ember.from_numpy(u))
    assert cat.dtype == dtype and u_out.dtype == dtype
    np.testing.assert_array_equal(cat.numpy(), np.asarray([1, 7, big, 2, 5], np_dtype))
    np.testing.assert_array_equal(u_out.numpy(), u)
    np.testing.assert_array_equal(f.numpy(), np.asarray([1, 7, big, 2, 5], np_dtype)
                                  .astype(np.float64))
    with pytest.raises(TypeError, match="input 'u' of the ONNX graph has dtype "
                                        f"ember.{dtype.__str__().split('.')[-1]}"):
        m(ember.tensor([2, 5]), ember.tensor([1, 2]))
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"x": np.asarray([2, 5]), "u": u})
    for got, ref in zip((f, cat, u_out), want):
        np.testing.assert_array_equal(got.numpy(), ref)


def test_bfloat16_and_complex_tensors():
    """bfloat16 casts round as onnxruntime's; complex initializers and inputs pass through."""
    x = np.asarray([1.0, 1.00390625, 3.14159, -2.5e-3, 65504.0, 1e-40], np.float32)
    z = np.asarray([1 + 2j, -0.5j], np.complex64)
    nodes = [helper.make_node("Cast", ["x"], ["b"], to=TensorProto.BFLOAT16),
             helper.make_node("Cast", ["b"], ["y"], to=TensorProto.FLOAT),
             helper.make_node("Identity", ["z"], ["z_out"]),
             helper.make_node("Identity", ["zi"], ["zi_out"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6]),
                     helper.make_tensor_value_info("zi", TensorProto.COMPLEX128, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6]),
         helper.make_tensor_value_info("b", TensorProto.BFLOAT16, [6]),
         helper.make_tensor_value_info("z_out", TensorProto.COMPLEX64, [2]),
         helper.make_tensor_value_info("zi_out", TensorProto.COMPLEX128, [2])],
        [numpy_helper.from_array(z, "z")])
    m = load_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    zi = np.asarray([3 - 1j, 2.5], np.complex128)
    y, b, z_out, zi_out = m(ember.from_numpy(x), ember.from_numpy(zi))
    assert b.dtype == ember.bfloat16 and z_out.dtype == ember.complex64
    assert zi_out.dtype == ember.complex128
    np.testing.assert_array_equal(z_out.numpy(), z)
    np.testing.assert_array_equal(zi_out.numpy(), zi)
    # bfloat16 keeps float32's exponent and 8 bits of mantissa, rounded to nearest even
    np.testing.assert_array_equal(y.numpy(), x.astype(ember.bfloat16.np).astype(np.float32))
    assert y.numpy()[1] == 1.0 and y.numpy()[4] == 65536.0


def test_operator_revision_outside_the_table_is_refused():
    """Add at opset 6 (its since-version 6 schema, with the old broadcast attribute) is not
    one of the revisions Ember implements."""
    model, _ = build("Add", [randn(2), randn(2)], opset=6, output_types=[TensorProto.FLOAT])
    model.graph.output[0].type.tensor_type.shape.dim.add().dim_value = 2
    with pytest.raises(RuntimeError, match=r"Add \(opset 6; node node0\)"):
        load_model(model)


def test_truncated_file(tmp_path):
    path = tmp_path / "cut.onnx"
    data = _mlp_model().SerializeToString()
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(ValueError, match="cut.onnx' is not a valid ONNX model: it is "
                                         "truncated, corrupt or not ONNX at all"):
        load_model(path)


def test_not_an_onnx_file(tmp_path):
    path = tmp_path / "notes.onnx"
    path.write_text("these are not the weights you are looking for\n" * 20)
    with pytest.raises(ValueError, match="notes.onnx' is not (a valid|an) ONNX model"):
        load_model(path)
    with pytest.raises(ValueError, match="is not an ONNX model"):
        load_model(b"")
    with pytest.raises(FileNotFoundError):
        load_model(tmp_path / "absent.onnx")


def _save_with_external_data(model, folder):
    path = folder / "ext.onnx"
    onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="ext.weights", size_threshold=0)
    return path


def test_external_data(tmp_path):
    model = _mlp_model()
    path = _save_with_external_data(onnx.ModelProto.FromString(model.SerializeToString()),
                                     tmp_path)
    x = ember.tensor(randn(2, 4))
    np.testing.assert_array_equal(to_numpy(load_model(path)(x)), to_numpy(load_model(model)(x)))
    with pytest.raises(ValueError, match="external file 'ext.weights'; load the model from its "
                                         "path"):
        load_model(path.read_bytes())
    weights = tmp_path / "ext.weights"
    weights.write_bytes(weights.read_bytes()[:40])
    with pytest.raises(ValueError, match="external data file 'ext.weights' is truncated"):
        load_model(path)
    weights.unlink()
    with pytest.raises(FileNotFoundError, match="external data file 'ext.weights' of "
                                                "initializer 'fc1.weight' is missing"):
        load_model(path)


def test_import_does_not_load_onnx():
    import subprocess

    code = "import sys, ember.onnx; print('onnx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_missing_onnx_package_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)  # `import onnx` now raises ImportError
    with pytest.raises(ModuleNotFoundError, match=r"pip install ember-nn\[onnx\]"):
        load_model(b"anything")


def test_error_inside_a_node_names_it():
    model, feeds = build("MatMul", [randn(2, 3), randn(4, 5)],
                         output_types=[TensorProto.FLOAT])
    model.graph.output[0].type.tensor_type.shape.CopyFrom(
        helper.make_tensor_type_proto(TensorProto.FLOAT, [2, 5]).tensor_type.shape)
    module = load_model(model, strict=False)
    with pytest.raises(RuntimeError) as info:
        module(*[ember.tensor(feeds[n]) for n in module.input_names])
    assert "ONNX node node0, MatMul" in "".join(getattr(info.value, "__notes__", [""]))


# -- training through an imported graph ---------------------------------------------------------

def test_sgd_step_reduces_loss():
    module = load_model(_mlp_model())
    x, target = ember.tensor(randn(16, 4)), ember.tensor(randn(16, 3))
    optimizer = ember.optim.SGD(module.parameters(), lr=0.05)
    losses = []
    for _ in range(3):
        optimizer.zero_grad()
        loss = ((module(x) - target) ** 2).mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[2] < losses[1] < losses[0]
    assert all(p.grad is not None for p in module.parameters())


def test_dropout_training_mode():
    x = positive(200, 50)
    model, feeds = build("Dropout", [x, np.asarray(0.25, np.float32), np.asarray(True)],
                         outputs=2, const={1, 2},
                         output_types=[TensorProto.FLOAT, TensorProto.BOOL])
    for out in model.graph.output:
        for d in x.shape:
            out.type.tensor_type.shape.dim.add().dim_value = d
    y, mask = load_model(model)(ember.tensor(x))
    y, mask = to_numpy(y), to_numpy(mask)
    np.testing.assert_allclose(y[mask], x[mask] / 0.75, rtol=1e-6)
    assert (y[~mask] == 0).all()
    assert 0.2 < 1 - mask.mean() < 0.3


def randn64(*shape):
    return randn(*shape, dtype=np.float64)


@pytest.mark.parametrize("op, inputs, attrs, oracle, kw", [
    case("AveragePool", [randn64(1, 2, 5, 6)], {"kernel_shape": [3, 2], "strides": [2, 2],
                                                "pads": [1, 0, 0, 1], "ceil_mode": 1}),
    case("MaxPool", [randn64(1, 2, 5, 6)], {"kernel_shape": [2, 2], "pads": [1, 0, 0, 1]}),
    case("ConvTranspose", [randn64(1, 2, 3, 4), randn64(2, 2, 3, 3), randn64(2)],
         {"strides": [2, 2], "pads": [0, 1, 2, 0], "output_padding": [1, 1]}),
    case("Resize", [randn64(1, 1, 3, 4), None, np.asarray([1, 1, 1.5, 2])],
         {"mode": "cubic"}, const={2}),
    case("Pad", [randn64(2, 4), ints(1, 2, 2, 1)], {"mode": "reflect"}),
    case("GatherND", [randn64(3, 4), ints(0, 1, 2, 3).reshape(2, 2)]),
    case("LSTM", [randn64(3, 2, 2), randn64(2, 8, 2), randn64(2, 8, 2), randn64(2, 16),
                  np.asarray([3, 2], np.int32), randn64(2, 2, 2), randn64(2, 2, 2),
                  randn64(2, 6)], {"hidden_size": 2, "direction": "bidirectional"},
         outputs=3, const={1, 2, 3, 4, 7}),
    case("GRU", [randn64(3, 2, 2), randn64(1, 6, 2), randn64(1, 6, 2), randn64(1, 12)],
         {"hidden_size": 2, "linear_before_reset": 1}, outputs=2, const={1, 2, 3}),
])
def test_gradcheck_through_imported_ops(op, inputs, attrs, oracle, kw):
    """Finite differences (float64) through the operators whose gradient comes from composed
    Ember ops: padding, crops, taps, gathers, recurrences."""
    model, feeds = build(op, inputs, attrs, **kw)
    expected = run_oracle(model, feeds, "ref")
    module = load_model(typed(model, expected))
    args = [ember.tensor(feeds[n], requires_grad=feeds[n].dtype.kind == "f")
            for n in module.input_names]

    def fn(*xs):
        out = module(*xs)
        return out if isinstance(out, tuple) else (out,)
    assert ember.autograd.gradcheck(fn, args)


# -- models exported by PyTorch -----------------------------------------------------------------

def _torch():
    return pytest.importorskip("torch")


def _export(model, args, tmp_path, name="model", *, dynamo=False, **kwargs):
    """``model`` exported by ``torch.onnx.export`` into ``tmp_path``: the TorchScript exporter,
    or with ``dynamo=True`` the torch.export-based one (which needs ``onnxscript``)."""
    torch = _torch()
    if dynamo:
        pytest.importorskip("onnxscript")
    model.eval()
    path = tmp_path / f"{name}.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, str(path), dynamo=dynamo, **kwargs)
    return path


def _compare_with_torch(model, args, tmp_path, *, atol=1e-4, run_args=None, **kwargs):
    torch = _torch()
    path = _export(model, args, tmp_path, **kwargs)
    module = load_model(path)
    run_args = args if run_args is None else run_args
    with torch.no_grad():
        expected = model(*run_args)
    got = module(*[ember.tensor(a.numpy()) for a in run_args])
    flat = []

    def collect(value):
        if isinstance(value, (tuple, list)):
            for v in value:
                collect(v)
        else:
            flat.append(value.numpy())
    collect(expected)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(flat)
    for g, e in zip(got, flat):
        np.testing.assert_allclose(to_numpy(g), e, rtol=1e-4, atol=atol)
    return module


def _resnet18(width: int = 8, classes: int = 10):
    """ResNet-18's topology (torchvision's: 7x7 stem, max pool, four stages of two basic blocks,
    average pool, linear) in plain torch, ``width`` channels in the first stage."""
    torch = _torch()
    nn = torch.nn

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                                nn.BatchNorm2d(cout))

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            return self.relu(self.bn2(self.conv2(out)) + identity)

    class ResNet18(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(width)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            layers, cin = [], width
            for i in range(4):
                cout = width * 2 ** i
                layers.append(nn.Sequential(BasicBlock(cin, cout, 1 if i == 0 else 2),
                                            BasicBlock(cout, cout, 1)))
                cin = cout
            self.layer1, self.layer2, self.layer3, self.layer4 = layers
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(cin, classes)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    torch.manual_seed(0)
    model = ResNet18()
    for m in model.modules():  # non-trivial running statistics
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.2, 0.2)
    return model


@pytest.mark.parametrize("opset", [11, 13, 17])
def test_torch_resnet18_topology(tmp_path, opset):
    torch = _torch()
    model = _resnet18()
    x = torch.randn(2, 3, 64, 64)
    module = _compare_with_torch(model, (x,), tmp_path, opset_version=opset,
                                 input_names=["x"], dynamic_axes={"x": {0: "batch"}})
    assert module.input_names == ["x"]
    x3 = torch.randn(3, 3, 64, 64)  # another batch size through the dynamic axis
    with torch.no_grad():
        expected = model(x3).numpy()
    np.testing.assert_allclose(to_numpy(module(ember.tensor(x3.numpy()))), expected,
                               rtol=1e-4, atol=1e-4)


def test_torch_resnet18_unfused_batch_norm(tmp_path):
    """Exported without constant folding: BatchNormalization nodes, statistics as buffers."""
    torch = _torch()
    model = _resnet18()
    module = _compare_with_torch(model, (torch.randn(1, 3, 32, 32),), tmp_path,
                                 do_constant_folding=False, keep_initializers_as_inputs=True)
    assert len(module.input_names) == 1  # initializers listed as graph inputs are weights
    assert {n for n, _ in module.named_buffers()} >= {"bn1_running_mean", "bn1_running_var"}
    assert "bn1_weight" in dict(module.named_parameters())


@pytest.mark.slow
def test_torch_resnet18_full_size(tmp_path):
    torch = _torch()
    _compare_with_torch(_resnet18(width=64, classes=1000), (torch.randn(1, 3, 224, 224),),
                        tmp_path, atol=2e-4)


def test_torch_mobilenet_v2_blocks(tmp_path):
    torch = _torch()
    nn = torch.nn

    class InvertedResidual(nn.Module):
        def __init__(self, cin, cout, stride, expand):
            super().__init__()
            hidden = cin * expand
            self.use_residual = stride == 1 and cin == cout
            self.block = nn.Sequential(
                nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(),
                nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),
                nn.BatchNorm2d(hidden), nn.ReLU6(),
                nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            return x + self.block(x) if self.use_residual else self.block(x)

    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU6(),
        InvertedResidual(8, 8, 1, 1), InvertedResidual(8, 12, 2, 6),
        InvertedResidual(12, 12, 1, 6), InvertedResidual(12, 16, 2, 6),
        nn.Conv2d(16, 32, 1, bias=False), nn.BatchNorm2d(32), nn.Hardswish(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(32, 10))
    _compare_with_torch(model, (torch.randn(2, 3, 32, 32),), tmp_path)


@pytest.mark.parametrize("opset", [14, 17])
def test_torch_transformer_encoder_with_padding_mask(tmp_path, opset):
    torch = _torch()
    nn = torch.nn
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.1, batch_first=True)
    encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = encoder

        def forward(self, src, mask):
            return self.encoder(src, src_key_padding_mask=mask)

    model = Encoder()
    mask = torch.zeros(2, 5, dtype=torch.bool)
    mask[1, 3:] = True
    module = _compare_with_torch(
        model, (torch.randn(2, 5, 16), mask), tmp_path, opset_version=opset,
        input_names=["src", "mask"],
        dynamic_axes={"src": {0: "batch", 1: "seq"}, "mask": {0: "batch", 1: "seq"}})
    assert module.input_names == ["src", "mask"]
    # another batch size through the graph's shape arithmetic (the exporter bakes the
    # sequence length into its reshapes, for onnxruntime as well)
    src, mask = torch.randn(3, 5, 16), torch.zeros(3, 5, dtype=torch.bool)
    mask[0, 2:] = True
    mask[2, 4:] = True
    with torch.no_grad():
        expected = model(src, mask).numpy()
    got = module(ember.tensor(src.numpy()), ember.tensor(mask.numpy()))
    np.testing.assert_allclose(to_numpy(got), expected, rtol=1e-4, atol=1e-4)


def test_torch_lstm_two_layers_bidirectional(tmp_path):
    torch = _torch()
    torch.manual_seed(0)
    model = torch.nn.LSTM(5, 7, num_layers=2, bidirectional=True, batch_first=True)

    class WithStates(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = model

        def forward(self, x, h0, c0):
            return self.lstm(x, (h0, c0))

    args = (torch.randn(3, 4, 5), torch.randn(4, 3, 7), torch.randn(4, 3, 7))
    module = _compare_with_torch(WithStates(), args, tmp_path)
    assert module.output_names and len(module.output_names) == 3
    y, h, c = module(*[ember.tensor(a.numpy()) for a in args])
    (y.sum() + h.sum() + c.sum()).backward()  # trainable: every weight gets a gradient
    assert all(p.grad is not None and p.grad.abs().sum().item() > 0
               for p in module.parameters())
    # and without initial states (zeros), as nn.LSTM's default
    _compare_with_torch(model, (torch.randn(3, 4, 5),), tmp_path / "..", name="plain")


def test_torch_gru(tmp_path):
    torch = _torch()
    torch.manual_seed(0)
    _compare_with_torch(torch.nn.GRU(4, 6, num_layers=1, bidirectional=True),
                        (torch.randn(5, 2, 4),), tmp_path)


@pytest.mark.parametrize("mode, align", [("nearest", None), ("bilinear", False),
                                         ("bilinear", True), ("bicubic", False)])
def test_torch_interpolate(tmp_path, mode, align):
    torch = _torch()

    class Up(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.interpolate(x, scale_factor=2.0, mode=mode,
                                                   align_corners=align)

    _compare_with_torch(Up(), (torch.randn(1, 2, 5, 6),), tmp_path)


def test_gradients_match_torch(tmp_path):
    """Gradients through an imported CNN equal PyTorch's for the same weights and loss."""
    torch = _torch()
    nn = torch.nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(4, 6, 3, stride=2), nn.Tanh(), nn.Flatten(),
                          nn.Linear(6, 5), nn.LogSoftmax(dim=1))
    x = torch.randn(3, 2, 8, 8)
    module = load_model(_export(model, (x,), tmp_path))
    weights = torch.randn(3, 5)
    loss = (model(x) * weights).sum()
    loss.backward()
    torch_grads = {n: p.grad.numpy() for n, p in model.named_parameters()}
    out = module(ember.tensor(x.numpy()))
    (out * ember.tensor(weights.numpy())).sum().backward()
    grads = {module.initializer_names[n]: to_numpy(p.grad)
             for n, p in module.named_parameters()}
    assert set(grads) == set(torch_grads)
    for name, grad in torch_grads.items():
        np.testing.assert_allclose(grads[name], grad, rtol=1e-5, atol=1e-5, err_msg=name)
    # one SGD step on the imported CNN lowers the loss
    optimizer = ember.optim.SGD(module.parameters(), lr=0.01)
    optimizer.step()
    after = (module(ember.tensor(x.numpy())) * ember.tensor(weights.numpy())).sum()
    assert after.item() < loss.item()


@pytest.mark.parametrize("name", ["resnet18", "mobilenet", "transformer", "lstm"])
def test_torch_dynamo_export(tmp_path, name):
    """The same models through ``torch.onnx.export(..., dynamo=True)`` (skipped without
    onnxscript)."""
    torch = _torch()
    pytest.importorskip("onnxscript")
    torch.manual_seed(0)
    if name == "resnet18":
        model, args = _resnet18(), (torch.randn(2, 3, 32, 32),)
    elif name == "mobilenet":
        nn = torch.nn
        model = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.BatchNorm2d(8), nn.ReLU6(),
                              nn.Conv2d(8, 8, 3, 1, 1, groups=8), nn.Hardswish(),
                              nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))
        args = (torch.randn(2, 3, 16, 16),)
    elif name == "transformer":
        layer = torch.nn.TransformerEncoderLayer(16, 4, 32, batch_first=True)
        encoder = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

        class Encoder(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.encoder = encoder

            def forward(self, src, mask):
                return self.encoder(src, src_key_padding_mask=mask)

        mask = torch.zeros(2, 5, dtype=torch.bool)
        mask[1, 3:] = True
        model, args = Encoder(), (torch.randn(2, 5, 16), mask)
    else:
        model = torch.nn.LSTM(5, 7, num_layers=2, bidirectional=True, batch_first=True)
        args = (torch.randn(3, 4, 5),)
    _compare_with_torch(model, args, tmp_path, dynamo=True)
