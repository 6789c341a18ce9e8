"""ember.onnx.export of ops with nested results: ``histogramdd``'s ``(hist, (edges, ...))`` is
one captured node whose outputs are the leaves (FORMAT.md, "nested"), mapped at opset 13 to a
histogram over the flat index of each point's bins (bin counts or given edges; ``range`` or
the data's range per dimension; weights; density; any leading shape).

Each exported graph passes ``onnx.checker`` and ONNX's strict shape inference, runs in
onnxruntime, and is compared with Ember's eager result: floats at 1e-5, counts exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from testutils import onnx_check, onnx_compare  # noqa: E402
from testutils import onnx_run as run  # noqa: E402

from ember.onnx import export as onnx_export  # noqa: E402

RNG = np.random.default_rng(16)
TOL = {"rtol": 1e-5, "atol": 1e-6}


def tensor(values, dtype=np.float32):
    return ember.tensor(np.asarray(values, dtype=dtype))


def randn(*shape, dtype=np.float32):
    return tensor(RNG.standard_normal(shape), dtype)


def leaves(fn):
    """``fn`` with its ``(hist, edges)`` result as the flat tuple ``(hist, *edges)``."""
    def flat(*args):
        hist, edges = fn(*args)
        return (hist, *edges)
    return flat


def export_and_compare(fn, args, *, exact=False):
    return onnx_compare(leaves(fn), args, opset=13, exact=exact, **TOL)[1]


# -- bin counts --------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_bin_counts_over_the_datas_range(dt):
    x = randn(40, 2, dtype=dt)
    got = export_and_compare(lambda x: ember.histogramdd(x, [3, 4]), (x,))
    assert [g.shape for g in got] == [(3, 4), (4,), (5,)]
    assert got[0].sum() == 40  # every point is inside the data's range
    export_and_compare(lambda x: ember.histogramdd(x, 5), (x,))
    export_and_compare(lambda x: ember.histogramdd(x[:, :1], 7), (x,))  # one dimension
    export_and_compare(lambda x: ember.histogramdd(x, [2, 3, 4]),  # three dimensions
                       (randn(50, 3, dtype=dt),))


def test_range_leaves_out_points_outside_and_nan():
    x = randn(60, 2)
    x[3, 0] = float("nan")
    x[7, 1] = 5.0
    got = export_and_compare(
        lambda x: ember.histogramdd(x, [4, 2], range=[-1.0, 1.0, -0.5, 2.0]), (x,))
    np.testing.assert_array_equal(got[1], np.linspace(-1.0, 1.0, 5, dtype=np.float32))
    export_and_compare(lambda x: ember.histogramdd(x, 3, range=(0.0, 0.0, -1.0, 1.0)), (x,))


def test_a_constant_column_and_no_points():
    col = tensor(np.stack([np.full(8, 2.0), np.arange(8.0)], 1))
    export_and_compare(lambda x: ember.histogramdd(x, [3, 4]), (col,))  # widened by 0.5
    export_and_compare(lambda x: ember.histogramdd(x, [2, 3]), (tensor(np.zeros((0, 2))),))


def test_weights_density_and_leading_dimensions():
    x, w = randn(4, 6, 2), tensor(RNG.random((4, 6)))
    export_and_compare(lambda x, w: ember.histogramdd(x, [3, 2], weight=w), (x, w))
    export_and_compare(lambda x: ember.histogramdd(x, [3, 2], density=True), (x,))
    export_and_compare(lambda x, w: ember.histogramdd(x, 4, range=[-2.0, 2.0, -1.0, 1.0],
                                                      weight=w, density=True), (x, w))


# -- given edges -------------------------------------------------------------------------------

def test_edges_given_as_tensors():
    x = randn(50, 2)
    a, b = tensor([-2.0, -0.5, 0.0, 0.3, 2.0]), tensor([-1.0, 1.0])
    got = export_and_compare(lambda x, a, b: ember.histogramdd(x, [a, b]), (x, a, b),
                             exact=True)
    np.testing.assert_array_equal(got[1], a.numpy())
    export_and_compare(lambda x, a, b, w: ember.histogramdd(x, [a, b], weight=w, density=True),
                       (x, a, b, tensor(RNG.random(50))))
    # edges the function makes are constants of the graph

    def made(x):
        c = ember.tensor([-3.0, 0.0, 3.0])
        return ember.histogramdd(x, [c, c * 0.5])

    export_and_compare(made, (x,))


# -- the nested result in the graph -----------------------------------------------------------

def test_the_nested_result_is_the_graphs_outputs_in_order():
    x = randn(30, 2)
    proto = onnx_export(lambda x: ember.histogramdd(x, [3, 4]), (x,), opset_version=13)
    onnx_check(proto)
    assert len(proto.graph.output) == 3
    hist, e0, e1 = run(proto, x)
    want = ember.histogramdd(x, [3, 4])
    np.testing.assert_array_equal(hist, want.hist.numpy())
    np.testing.assert_allclose(e0, want.bin_edges[0].numpy(), **TOL)
    np.testing.assert_allclose(e1, want.bin_edges[1].numpy(), **TOL)


def test_the_leaves_feed_later_ops():
    def f(x):
        hist, (e0, e1) = ember.histogramdd(x, [3, 4], density=True)
        centers = (e0[1:] + e0[:-1]) / 2
        return (hist * centers[:, None]).sum(0), e1.diff()

    x = randn(30, 2)
    onnx_compare(f, (x,), opset=13, **TOL)
    ep = ember.export.export(f, (x,))
    node = next(n for n in ep.graph.nodes if n.op == "histogramdd")
    assert node.result == "nested"
