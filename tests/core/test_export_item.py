"""``Tensor.item()`` in ``ember.export``: a symbolic scalar (torch.export's unbacked
SymFloat/SymInt), recorded as a ``Tensor.item`` node, passed to ops as ``{"scalar": name}``,
with Python arithmetic on it recorded as ``operator.*`` scalar nodes (FORMAT.md, "Scalar
values"). Compared with eager, and with torch.export's graph structure when torch is here."""

import io
import json
import struct
import warnings

import pytest

import ember
import ember.export as E
import ember.jit
import ember.nn as nn
from ember.export import DataDependentError
from ember.export._graph import FormatError, Graph


class Wrap(nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, x):
        return self.f(x)


class ScaleBySum(nn.Module):
    def forward(self, x):
        n = x.sum().item()
        return x * n


def _saved(ep) -> bytes:
    buf = io.BytesIO()
    E.save(ep, buf)
    return buf.getvalue()


def _metadata(data: bytes) -> dict:
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + n])["__metadata__"]


def _close(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert ember.allclose(a, b), (a, b)


# -- the graph ----------------------------------------------------------------------------------

def test_item_is_a_node_and_the_op_refers_to_it():
    ep = E.export(ScaleBySum(), (ember.arange(4.0),))
    ops = [n.op for n in ep.graph.nodes]
    assert ops == ["sum", "Tensor.item", "mul"]
    item, mul = ep.graph.nodes[1], ep.graph.nodes[2]
    assert item.result == "scalar" and item.outputs[0][1].dtype == "float64"
    assert mul.args == [{"tensor": "x"}, {"scalar": "item"}]
    text = str(ep.graph)
    assert "%item : Sym(float) = Tensor.item(%sum)" in text
    assert "%mul : float32[4] = mul(%x, %item)" in text


def test_same_structure_as_torch_export():
    torch = pytest.importorskip("torch")

    class T(torch.nn.Module):
        def forward(self, x):
            n = x.sum().item()
            return x * n

    tg = torch.export.export(T(), (torch.arange(4.0),)).graph
    targets = [str(n.target) for n in tg.nodes if n.op == "call_function"
               and "assert" not in str(n.target)]
    assert targets == ["aten.sum.default", "aten.item.default", "aten.mul.Tensor"]
    ep = E.export(ScaleBySum(), (ember.arange(4.0),))
    assert [n.op for n in ep.graph.nodes] == ["sum", "Tensor.item", "mul"]


def test_int_tensor_gives_a_symbolic_int():
    ep = E.export(Wrap(lambda x: x * x.long().sum().item()), (ember.arange(4.0),))
    item = next(n for n in ep.graph.nodes if n.op == "Tensor.item")
    assert item.outputs[0][1].dtype == "int64"
    assert "Sym(int)" in str(ep.graph)


def test_item_returns_a_symbolic_scalar_not_a_number():
    seen = []

    def f(x):
        n = x.sum().item()
        seen.append(n)
        return x * n

    E.export(Wrap(f), (ember.arange(4.0),))
    assert type(seen[0]).__name__ == "SymFloat"
    assert not isinstance(seen[0], (int, float))


# -- running with other values ----------------------------------------------------------------

def test_module_runs_with_the_new_value():
    ep = E.export(ScaleBySum(), (ember.arange(4.0),))
    y = ember.tensor([1.0, 2.0, 5.0, 7.0])
    _close(ep.module()(y), ScaleBySum()(y))
    assert ep.module()(y)[0].item() == 15.0  # not the example's sum, 6


def test_scalar_arithmetic_is_recorded():
    def f(x):
        n = x.sum().item()
        k = x.long().max().item()
        return x * (-n * 2 + 1) / 3 + k, n / 3 + k // 2 - abs(n) ** 2 % 5

    ep = E.export(Wrap(f), (ember.arange(4.0),))
    ops = {n.op for n in ep.graph.nodes}
    assert {"operator.neg", "operator.mul", "operator.add", "operator.truediv",
            "operator.floordiv", "operator.abs", "operator.pow", "operator.mod",
            "operator.sub"} <= ops
    y = ember.tensor([1.0, -2.0, 5.0, 9.0])
    got, want = ep.module()(y), f(y)
    _close(got[0], want[0])
    assert got[1] == pytest.approx(want[1])
    assert isinstance(got[1], float)


def test_reflected_arithmetic_and_comparison_into_ops():
    def f(x):
        n = x.sum().item()
        return ember.where(x > 1, 2 - n, 10 / n), n > 3

    ep = E.export(Wrap(f), (ember.arange(4.0),))
    assert "Sym(bool)" in str(ep.graph)
    y = ember.tensor([3.0, -1.0, 0.5, 0.25])  # sum 2.75: n > 3 is now False
    got, want = ep.module()(y), f(y)
    _close(got[0], want[0])
    assert got[1] is want[1] is False


def test_scalar_with_a_dynamic_size():
    b = E.Dim("b", min=2, max=64)

    def f(x):
        n = x.sum().item()
        return x * (n * x.shape[0])

    ep = E.export(Wrap(f), (ember.arange(4.0),), dynamic_shapes={"x": {0: b}})
    y = ember.arange(7.0)
    _close(ep.module()(y), f(y))


def test_item_used_by_a_factory_value():
    f = lambda x: ember.full((2,), x.sum().item()) + x[:2]
    ep = E.export(Wrap(f), (ember.arange(4.0),))
    y = ember.tensor([1.0, 2.0, 3.0, 9.0])
    _close(ep.module()(y), f(y))


# -- save / load ----------------------------------------------------------------------------

def test_save_load_round_trip_as_format_version_2_1():
    ep = E.export(ScaleBySum(), (ember.arange(4.0),))
    data = _saved(ep)
    assert _metadata(data)["format_version"] == "2.1" == E.FORMAT_VERSION
    loaded = E.load(io.BytesIO(data))
    assert str(loaded.graph) == str(ep.graph)
    y = ember.tensor([1.0, 2.0, 5.0, 7.0])
    _close(loaded.module()(y), ScaleBySum()(y))


def test_programs_without_scalars_keep_their_version():
    ep = E.export(Wrap(lambda x: x * 2), (ember.arange(4.0),))
    assert _metadata(_saved(ep))["format_version"] == "1"


def test_graph_json_round_trip():
    ep = E.export(ScaleBySum(), (ember.arange(4.0),))
    g = Graph.from_json(json.loads(json.dumps(ep.graph.to_json())))
    assert str(g) == str(ep.graph) and g.format_version() == "2.1"


def test_loading_checks_scalar_nodes_and_references():
    good = ScaleBySum()
    obj = E.export(good, (ember.arange(4.0),)).graph.to_json()
    bad = json.loads(json.dumps(obj))
    bad["nodes"][1]["outputs"][0]["shape"] = [2]
    with pytest.raises(FormatError, match="a scalar result needs one output"):
        Graph.from_json(bad)
    bad = json.loads(json.dumps(obj))
    bad["nodes"][2]["args"][1] = {"scalar": "nowhere"}
    with pytest.raises(FormatError, match="refers to value %nowhere"):
        E.ExportedProgram(Graph.from_json(bad), {}, {}).module()


def test_loading_never_resolves_other_operator_functions():
    from ember.export._ops import UnknownOpError, resolve

    assert resolve("operator.mul")(3, 4) == 12
    for name in ("operator.setitem", "operator.call", "operator.attrgetter"):
        with pytest.raises(UnknownOpError):
            resolve(name)


# -- what stays refused ----------------------------------------------------------------------

@pytest.mark.parametrize("f, head", [
    (lambda x: x * float(x.sum().item()), "Could not extract specialized float"),
    (lambda x: x * int(x.long().sum().item()), "Could not extract specialized integer"),
    (lambda x: x if x.sum().item() > 0 else -x, "Could not guard on data-dependent expression"),
    (lambda x: x * round(x.sum().item()), "Could not extract specialized integer"),
])
def test_python_control_flow_on_a_scalar_is_refused(f, head):
    with pytest.raises(DataDependentError, match=head) as info:
        E.export(Wrap(f), (ember.arange(4.0),))
    assert "test_export_item.py" in str(info.value)  # the line


@pytest.mark.parametrize("f", [
    lambda x: ember.zeros(x.long().sum().item()),
    lambda x: x[:x.long().sum().item() - 4],
    lambda x: ember.arange(x.sum().item()),
])
def test_sizes_from_item_are_refused_with_a_clear_error(f):
    with pytest.raises(DataDependentError, match="the shape of its result depends on %"):
        E.export(Wrap(f), (ember.arange(4.0),))


def test_item_of_many_elements_is_eagers_error():
    with pytest.raises(RuntimeError) as eager:
        ember.arange(4.0).item()
    with pytest.raises(RuntimeError) as info:
        E.export(Wrap(lambda x: x * x.item()), (ember.arange(4.0),))
    assert str(info.value) == str(eager.value)


# -- jit.trace is unchanged ---------------------------------------------------------------

def test_jit_trace_still_bakes_the_value_with_a_warning():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        tr = ember.jit.trace(ScaleBySum(), (ember.arange(4.0),))
    assert any(issubclass(x.category, ember.jit.TracerWarning) for x in w)
    y = ember.tensor([1.0, 2.0, 5.0, 7.0])
    _close(tr(y), y * 6.0)  # the example's sum


def test_a_program_may_return_a_scalar():
    ep = E.export(lambda x: x.long().sum().item() * 2, (ember.ones(3),))
    assert ep.graph.outputs == {"scalar": "mul"}
    assert ep.module()(ember.tensor([1.0, 2.0, 4.0])) == 14
    assert E.load(io.BytesIO(_saved(ep))).module()(ember.full((3,), 2.0)) == 12
