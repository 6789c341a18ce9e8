"""Nested op results in ember.export / ember.jit / ember.compile: ``histogramdd`` returns
``(hist, (edges_0, ..., edges_N-1))``. Every tensor leaf is a graph value, the node keeps the
nesting (``result: "nested"`` and its ``structure``, FORMAT.md version 2), the program runs
and prints with it, and save/load round-trips it; files without nested results stay version 1.
"""

from __future__ import annotations

import io
import json
import struct
import warnings

import numpy as np
import pytest

import ember
import ember.export as E
from ember.export._graph import FormatError, Graph


def hdd(x):
    return ember.histogramdd(x, [3, 4])


def points(n=20, d=2, seed=0):
    rng = np.random.default_rng(seed)
    return ember.tensor(rng.standard_normal((n, d)).astype(np.float32))


def assert_same_result(got, want):
    """Same nesting (namedtuple fields, tuple/list/dict types, lengths) and equal tensors."""
    assert type(got).__name__ == type(want).__name__
    if isinstance(want, ember.Tensor):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
        return
    if isinstance(want, dict):
        assert list(got) == list(want)
        got, want = list(got.values()), list(want.values())
    assert isinstance(got, (tuple, list)) and len(got) == len(want)
    if hasattr(want, "_fields"):
        assert got._fields == want._fields
    for g, w in zip(got, want):
        assert_same_result(g, w)


def metadata(data: bytes) -> dict:
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + n])["__metadata__"]


def rewrite_program(data: bytes, edit) -> bytes:
    """The file with its program JSON passed through ``edit`` (the weights kept)."""
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    program = json.loads(header["__metadata__"]["graph"])
    edit(program)
    header["__metadata__"]["graph"] = json.dumps(program)
    new = json.dumps(header).encode()
    new += b" " * (-len(new) % 8)
    return struct.pack("<Q", len(new)) + new + data[8 + n:]


# -- capture ----------------------------------------------------------------------------------

def test_every_leaf_is_a_graph_value_and_the_node_keeps_the_nesting():
    x = points()
    ep = E.export(hdd, (x,))
    (node,) = ep.graph.nodes
    assert node.op == "histogramdd" and node.result == "nested"
    assert [o[0] for o in node.outputs] == ["histogramdd_0", "histogramdd_1_0", "histogramdd_1_1"]
    assert [str(o[1]) for o in node.outputs] == ["float32[3, 4]", "float32[4]", "float32[5]"]
    assert node.structure == {"tuple": [{"tensor": "histogramdd_0"},
                                        {"tuple": [{"tensor": "histogramdd_1_0"},
                                                   {"tensor": "histogramdd_1_1"}]}]}
    assert ep.graph.outputs == {"namedtuple": {
        "name": "histogramdd", "fields": ["hist", "bin_edges"],
        "items": [{"tensor": "histogramdd_0"},
                  {"tuple": [{"tensor": "histogramdd_1_0"}, {"tensor": "histogramdd_1_1"}]}]}}
    assert ep.graph_signature.user_outputs == ["histogramdd_0", "histogramdd_1_0",
                                               "histogramdd_1_1"]


def test_the_graph_prints_the_nesting():
    ep = E.export(hdd, (points(),))
    lines = str(ep.graph).splitlines()
    assert lines[2] == ("    %histogramdd_0, (%histogramdd_1_0, %histogramdd_1_1) : "
                        "(float32[3, 4], (float32[4], float32[5])) = histogramdd(%x, [3, 4])")
    code = ep.graph.python_code()
    assert "    histogramdd_0, (histogramdd_1_0, histogramdd_1_1) = ops.histogramdd(x, [3, 4])" \
        in code
    compile(code, "<graph>", "exec")  # the unpacking is valid Python


def test_module_returns_the_same_structure_as_eager():
    x = points()
    m = E.export(hdd, (x,)).module()
    for inp in (x, points(seed=1), points(seed=2) * 3):
        assert_same_result(m(inp), hdd(inp))


def test_results_feed_later_ops_and_outputs_of_any_shape():
    def f(x, w):
        h, edges = ember.histogramdd(x, 2, range=[-1.0, 1.0, -2.0, 2.0], weight=w, density=True)
        centers = [(e[1:] + e[:-1]) / 2 for e in edges]
        return {"h": h * 2, "centers": centers, "last": edges[-1]}

    x, w = points(30), ember.rand(30)
    m = E.export(f, (x, w)).module()
    assert_same_result(m(x, w), f(x, w))
    x2, w2 = points(30, seed=3), ember.rand(30)
    assert_same_result(m(x2, w2), f(x2, w2))


def test_two_calls_get_distinct_value_names():
    def f(x):
        a = ember.histogramdd(x, 2)
        b = ember.histogramdd(x * 2, [1, 3])
        c = ember.histogramdd(x - 1, 3)
        return a, b, c

    x = points()
    ep = E.export(f, (x,))
    names = [o[0] for n in ep.graph.nodes for o in n.outputs if o is not None]
    assert len(names) == len(set(names))
    assert_same_result(ep.module()(x), f(x))
    assert_same_result(E.load(_saved(ep)).module()(x), f(x))


def test_edges_given_as_tensors_and_zero_dimensions():
    e0, e1 = ember.tensor([-1.0, 0.0, 2.0]), ember.tensor([-3.0, -1.0, 1.0, 3.0])
    x = points(25)

    def given(x, a, b):
        return ember.histogramdd(x, [a, b])

    ep = E.export(given, (x, e0, e1))
    assert_same_result(ep.module()(x, e0 * 2, e1), given(x, e0 * 2, e1))

    def empty(x):  # a histogram over no dimensions: (0-d hist, ())
        return ember.histogramdd(x, 3)

    z = ember.zeros(4, 0)
    ep = E.export(empty, (z,))
    (node,) = ep.graph.nodes
    assert node.result == "nested" and node.outputs[0][0] == "histogramdd_0"
    assert node.structure == {"tuple": [{"tensor": "histogramdd_0"}, {"tuple": []}]}
    assert_same_result(ep.module()(z), empty(z))
    assert_same_result(E.load(_saved(ep)).module()(z), empty(z))


def test_a_dynamic_number_of_points():
    batch = E.Dim("batch", min=2, max=100)
    ep = E.export(hdd, (points(20),), dynamic_shapes={"x": {0: batch}})
    assert str(ep.graph.inputs[0].meta) == "float32[batch, 2]"
    assert [str(o[1]) for o in ep.graph.nodes[0].outputs] == ["float32[3, 4]", "float32[4]",
                                                              "float32[5]"]
    for n in (2, 57):
        x = points(n, seed=n)
        assert_same_result(ep.module()(x), hdd(x))


def test_flat_sequences_stay_one_level():
    def f(x):
        return (ember.split(x, 2), ember.unbind(x, 1), ember.meshgrid(x[:, 0], x[0], indexing="ij"),
                ember.tensor_split(x, 3), x.max(0))

    x = points(6, 3)
    ep = E.export(f, (x,))
    assert {n.op: n.result for n in ep.graph.nodes if n.op != "getitem"} == {
        "split": "tuple", "unbind": "tuple", "meshgrid": "tuple", "tensor_split": "tuple",
        "max": "tuple"}
    assert all(n.structure is None for n in ep.graph.nodes)
    data = _saved(ep)
    assert metadata(data)["format_version"] == "1"
    assert_same_result(E.load(data).module()(x), f(x))


# -- save / load ------------------------------------------------------------------------------

def _saved(ep) -> bytes:
    buf = io.BytesIO()
    E.save(ep, buf)
    return buf.getvalue()


def test_save_load_round_trips_the_nesting_as_format_version_2():
    x = points()
    ep = E.export(hdd, (x,))
    data = _saved(ep)
    assert metadata(data)["format_version"] == "2"
    node = json.loads(metadata(data)["graph"])["graph"]["nodes"][0]
    assert node["result"] == "nested"
    assert node["structure"] == ep.graph.nodes[0].structure
    loaded = E.load(data)
    assert str(loaded.graph) == str(ep.graph)
    assert_same_result(loaded.module()(points(seed=5)), hdd(points(seed=5)))


def test_version_1_files_still_load():
    class M(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = ember.nn.Linear(3, 2)

        def forward(self, x):
            return self.fc(x).relu(), x.max(1)

    m = M().eval()
    x = ember.randn(4, 3)
    data = _saved(E.export(m, (x,)))
    assert metadata(data)["format_version"] == "1"
    assert_same_result(E.load(data).module()(x), m(x))


def test_a_bad_structure_is_refused():
    data = _saved(E.export(hdd, (points(),)))

    def edit(change):
        def go(program):
            change(program["graph"]["nodes"][0])
        return rewrite_program(data, go)

    swapped = edit(lambda n: n["structure"]["tuple"][1]["tuple"].reverse())
    with pytest.raises(FormatError, match=r"the leaves of the structure \['histogramdd_0', "
                                          r"'histogramdd_1_1', 'histogramdd_1_0'\] are not the "
                                          "outputs"):
        E.load(swapped)
    for bad in (None, {"tensor": "histogramdd_0"}, {"tuple": [1, 2]},
                {"dict": [["a", {"tensor": "histogramdd_0"}]]}):
        with pytest.raises(FormatError, match="a nested result needs a structure"):
            E.load(edit(lambda n, bad=bad: n.__setitem__("structure", bad)))
    with pytest.raises(FormatError, match="a result in tensor/tuple/list/nested/none"):
        E.load(edit(lambda n: n.__setitem__("result", "tree")))


def test_an_unknown_version_names_the_versions_read():
    data = _saved(E.export(hdd, (points(),)))
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header["__metadata__"]["format_version"] = "3"
    new = json.dumps(header).encode()
    with pytest.raises(FormatError, match="has format_version '3'; this Ember reads "
                                          "format_version 1, 2"):
        E.load(struct.pack("<Q", len(new)) + new + data[8 + n:])


def test_graph_json_round_trip_without_a_file():
    ep = E.export(hdd, (points(),))
    g = Graph.from_json(json.loads(json.dumps(ep.graph.to_json())))
    assert g.nodes[0].structure == ep.graph.nodes[0].structure
    assert g.format_version() == "2"


# -- jit.trace and compile ----------------------------------------------------------------------

def test_jit_trace_runs_saves_and_checks_the_nesting(tmp_path):
    e0, e1 = ember.tensor([-2.0, 0.0, 2.0]), ember.tensor([-1.0, 1.0])

    def f(x, w):
        h, edges = ember.histogramdd(x, [e0, e1], weight=w, density=True)
        return h.sum(0), edges

    x, w = points(), ember.rand(20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = ember.jit.trace(f, (x, w))
    assert_same_result(traced(x, w), f(x, w))
    path = tmp_path / "hdd.pt"
    ember.jit.save(traced, str(path))
    loaded = ember.jit.load(str(path))
    x2, w2 = points(seed=9), ember.rand(20)
    assert_same_result(loaded(x2, w2), f(x2, w2))


def test_a_result_nested_otherwise_than_at_capture_is_an_error():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = ember.jit.trace(lambda x: ember.histogramdd(x, 3), (points(10, 2),))
    # jit programs do not check their inputs: three columns give three edge tensors
    with pytest.raises(E.GuardError, match=r"node %histogramdd \(histogramdd\) returned 3 items "
                                           r"at result\[1\], but the capture recorded 2"):
        traced(points(10, 3))


def test_compile_of_a_function_calling_histogramdd():
    def f(x):
        h, edges = ember.histogramdd(x * 2, [3, 4])
        return h + 1, edges[0] * 2

    c = ember.compile(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(3):
            x = points(seed=seed)
            assert_same_result(c(x), f(x))


def test_compile_fullgraph_unpacks_the_nested_result():
    def f(x):
        h, edges = ember.histogramdd(x * 2, [3, 4])
        return h + 1, edges

    c = ember.compile(f, fullgraph=True)  # no graph break for the nested result
    for seed in range(3):
        x = points(seed=seed)
        assert_same_result(c(x), f(x))
