"""``ember.jit.script``: scripted functions and modules run their Python (TorchScript's
results); ``graph``/``save`` keep ``if``s on tensors as selections."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from testutils import assert_allclose

import ember
import ember.jit
from ember.export import DataDependentError

nn = pytest.importorskip("ember.nn")


# -- functions ---------------------------------------------------------------------------------

def test_a_scripted_function_takes_any_scalar_shape_and_dtype():
    @ember.jit.script
    def scale(x, factor: float):
        return x * factor

    x = ember.ones(3)
    assert_allclose(scale(x, 2.0), np.full(3, 2.0))
    assert_allclose(scale(x, 3.0), np.full(3, 3.0))  # not the first call's 2.0
    y = scale(ember.ones(2, 5, dtype=ember.float64), 0.5)
    assert y.shape == (2, 5) and y.dtype == ember.float64
    w = ember.ones(3, requires_grad=True)
    scale(w, 4.0).sum().backward()
    assert_allclose(w.grad, np.full(3, 4.0))
    assert isinstance(scale, ember.jit.ScriptFunction) and scale.__name__ == "scale"
    assert "def scale(x, factor: float):" in scale.code


def test_control_flow_follows_the_values_of_each_call():
    @ember.jit.script
    def gate(x, n: int):
        for _ in range(n):
            x = x + 1
        if x.sum() > 0:
            return x
        return -x

    assert_allclose(gate(ember.zeros(2), 2), np.full(2, 2.0))
    assert_allclose(gate(-ember.ones(2) * 5, 1), np.full(2, 4.0))


def test_the_graph_keeps_an_if_on_a_tensor_and_the_saved_program_follows_it(tmp_path):
    @ember.jit.script
    def gate(x):
        if x.sum() > 0:
            return x * 2
        else:
            return -x

    gate(ember.ones(3))
    text = str(gate.graph)
    assert "where" in text and "neg" in text and "mul" in text
    gate.save(tmp_path / "gate.pt")
    loaded = ember.jit.load(tmp_path / "gate.pt")
    for x in (ember.ones(3), -ember.ones(3), ember.tensor([1.0, -3.0, 1.0])):
        assert_allclose(loaded(x), gate(x))


def _check_both_ways(fn, *inputs, tmp_path, rtol=1e-6):
    """``fn`` scripted: eager, and its saved program, equal the plain function on each
    input."""
    scripted = ember.jit.script(fn)
    scripted(*inputs[0])
    scripted.save(tmp_path / f"{fn.__name__}.pt")
    loaded = ember.jit.load(tmp_path / f"{fn.__name__}.pt")
    for args in inputs:
        expected = fn(*args)
        assert_allclose(scripted(*args), expected, rtol=rtol, atol=rtol)
        assert_allclose(loaded(*args), expected, rtol=rtol, atol=rtol)
    return scripted


def test_assigning_ifs_elif_chains_and_nested_ifs(tmp_path):
    def f(x, y):
        z = x * 0
        if x.mean() > 0.5:
            z = x + y
            w = z * 2
        elif y.max() < 0:
            z = x - y
            w = z * 3
        else:
            w = y
            if (x * y).sum() > 0:
                w = w + 1
        return z + w

    rng = np.random.default_rng(0)
    inputs = [(ember.tensor(rng.standard_normal(4) + m), ember.tensor(rng.standard_normal(4) + n))
              for m in (-2, 0, 2) for n in (-3, 0, 3)]
    _check_both_ways(f, *inputs, tmp_path=tmp_path)


def test_returns_in_branches_and_the_rest_of_the_function(tmp_path):
    def f(x):
        if x[0] > 0:
            if x[1] > 0:
                return x * 2
            y = x + 10
        else:
            y = x - 10
        y = y * y
        if y.sum() > 500:
            return y / 100
        return y

    inputs = [(ember.tensor([a, b, 1.0]),) for a in (-1.0, 1.0) for b in (-1.0, 1.0)]
    inputs.append((ember.tensor([-20.0, 1.0, 1.0]),))
    _check_both_ways(f, *inputs, tmp_path=tmp_path)


def test_conditional_expressions_and_not_and_or(tmp_path):
    def f(x, y):
        a = x if (x > 0).all() else y
        if not (y > 0).any() or x.sum() > 3:
            a = a * 2
        if (x > 0).all() and y.sum() < 0:
            a = a + 100
        return a + (1 if x.shape[0] > 1 else 2)

    inputs = [(ember.tensor(a), ember.tensor(b)) for a in ([1.0, 2.0], [-1.0, 5.0])
              for b in ([1.0, -4.0], [-1.0, -1.0])]
    _check_both_ways(f, *inputs, tmp_path=tmp_path)


def test_python_conditions_stay_python(tmp_path):
    def f(x, flag: bool, y=None):
        if y is not None:
            x = x + y
        if flag:
            return x * 2
        return x

    scripted = ember.jit.script(f)
    x = ember.ones(2)
    assert_allclose(scripted(x, True), np.full(2, 2.0))
    assert_allclose(scripted(x, False, x), np.full(2, 2.0))


def test_a_name_one_branch_assigns_is_unbound_after_the_if():
    def f(x):
        if x.sum() > 0:
            y = x
        return y

    scripted = ember.jit.script(f)
    assert_allclose(scripted(ember.ones(1)), np.ones(1))
    with pytest.raises(UnboundLocalError):
        scripted(-ember.ones(1))
    with pytest.raises(UnboundLocalError):  # the capture: unbound after the selection too
        _ = ember.jit.script(f, example_inputs=[(ember.ones(1),)]).graph


def test_what_a_graph_cannot_hold_is_an_error_naming_the_line():
    def loop(x):
        while x.sum() < 10:  # the while
            x = x * 2
        return x

    scripted = ember.jit.script(loop)
    assert_allclose(scripted(ember.ones(2)), np.full(2, 8.0))  # eager: the loop runs
    with pytest.raises(DataDependentError, match=r"test_jit_script.py:\d+.*scripted module"):
        _ = scripted.graph

    def inplace(x):
        y = x * 1
        if x.sum() > 0:
            y.add_(1)
        return y

    with pytest.raises(RuntimeError, match="writes .* in place"):
        _ = ember.jit.script(inplace, example_inputs=[(ember.ones(2),)]).graph

    def shapes(x):
        return x if x.sum() > 0 else x[:1]

    with pytest.raises(RuntimeError, match="differs in shape"):
        _ = ember.jit.script(shapes, example_inputs=(ember.ones(2),)).graph

    def raises(x):
        if x.sum() > 0:
            raise ValueError("positive")
        return x

    with pytest.raises(RuntimeError, match="true branch .* raised ValueError"):
        _ = ember.jit.script(raises, example_inputs=(ember.ones(2),)).graph

    def scalar(x):
        n = 1 if x.sum() > 0 else 2
        return x * n

    with pytest.raises(RuntimeError, match="differs between the branches"):
        _ = ember.jit.script(scalar, example_inputs=(ember.ones(2),)).graph


def test_not_called_yet_says_how_to_capture():
    scripted = ember.jit.script(lambda x: x + 1)
    with pytest.raises(RuntimeError, match="has not been called yet.*example_inputs"):
        _ = scripted.graph
    scripted(ember.ones(2))
    assert "add" in str(scripted.graph)  # a lambda has no if to rewrite: captured as it is


# -- modules -----------------------------------------------------------------------------------

class Gate(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        else:
            return -x


class Cell(nn.Module):
    def __init__(self, dg):
        super().__init__()
        self.dg = dg
        self.linear = nn.Linear(4, 4)

    def forward(self, x, h):
        new_h = ember.tanh(self.dg(self.linear(x)) + h)
        return new_h, new_h


def test_a_scripted_module_is_the_module_sharing_its_parameters():
    ember.manual_seed(0)
    cell = Cell(Gate())
    scripted = ember.jit.script(cell)
    assert isinstance(scripted, nn.Module) and isinstance(scripted, ember.jit.ScriptModule)
    assert isinstance(scripted, ember.jit.RecursiveScriptModule)
    assert isinstance(scripted.linear, ember.jit.RecursiveScriptModule)
    assert scripted.original_name == "Cell" and scripted.dg.original_name == "Gate"
    assert scripted.linear.weight is cell.linear.weight
    assert list(scripted.state_dict()) == list(cell.state_dict())
    assert repr(scripted) == ("RecursiveScriptModule(\n  original_name=Cell\n"
                              "  (dg): RecursiveScriptModule(original_name=Gate)\n"
                              "  (linear): RecursiveScriptModule(original_name=Linear)\n)")
    x, h = ember.randn(3, 4), ember.randn(3, 4)
    for sign in (1, -1):
        assert_allclose(scripted(sign * x, h)[0], cell(sign * x, h)[0])
    assert "def forward(self, x, h):" in scripted.code
    assert ember.jit.script(scripted) is scripted
    twin = copy.deepcopy(scripted)
    assert type(twin) is type(scripted) and twin.linear.weight is not cell.linear.weight
    assert_allclose(twin(x, h)[0], scripted(x, h)[0])
    with pytest.raises(RuntimeError, match="cannot be deepcopied .* or saved using"):
        pickle.dumps(scripted)


def test_a_scripted_module_trains():
    ember.manual_seed(0)
    scripted = ember.jit.script(Cell(Gate()))
    opt = ember.optim.SGD(scripted.parameters(), lr=0.1)
    x, h = ember.randn(8, 4), ember.randn(8, 4)
    before = scripted.linear.weight.detach().clone()
    for _ in range(3):
        opt.zero_grad()
        scripted(x, h)[0].pow(2).sum().backward()
        opt.step()
    assert not ember.equal(before, scripted.linear.weight.detach())


def test_a_saved_scripted_module_keeps_its_control_flow(tmp_path):
    ember.manual_seed(0)
    scripted = ember.jit.script(Cell(Gate()).eval())
    x, h = ember.randn(3, 4), ember.randn(3, 4)
    with pytest.raises(RuntimeError, match="has not been called yet"):
        scripted.save(tmp_path / "cell.pt")
    scripted(x, h)
    assert "where" in str(scripted.graph)
    scripted.save(tmp_path / "cell.pt")
    loaded = ember.jit.load(tmp_path / "cell.pt")
    for scale in (1.0, -1.0, 10.0, -10.0):
        assert_allclose(loaded(x * scale, h)[0], scripted(x * scale, h)[0], rtol=1e-6,
                        atol=1e-6)
    example = ember.jit.script(Cell(Gate()), example_inputs=[(x, h)])
    example.save(tmp_path / "example.pt")  # never called: the example inputs suffice


def test_a_trace_keeps_the_control_flow_of_a_scripted_submodule():
    """PyTorch's mix of scripting and tracing: a traced module calling a scripted one
    records the scripted control flow."""
    ember.manual_seed(0)
    cell = Cell(ember.jit.script(Gate()))
    x, h = ember.randn(3, 4), ember.randn(3, 4)
    traced = ember.jit.trace(cell, (x, h))
    assert "where" in str(traced.graph)
    for scale in (1.0, -1.0, 10.0, -10.0):
        assert_allclose(traced(x * scale, h)[0], cell(x * scale, h)[0], rtol=1e-6, atol=1e-6)


class Steps(nn.Module):
    """The TorchScript introduction's scripted loop over the first dimension."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, xs):
        h = ember.zeros(3, 4)
        for i in range(xs.size(0)):
            h = ember.tanh(self.lin(xs[i]) + h)
        return h


class WrapSteps(nn.Module):
    def __init__(self):
        super().__init__()
        self.loop = ember.jit.script(Steps())

    def forward(self, xs):
        return ember.relu(self.loop(xs))


def test_a_loop_over_an_input_size_is_unrolled_with_a_guard(tmp_path):
    """TorchScript keeps a scripted loop inside a trace; a captured graph holds no loop, so
    the count it was unrolled for is guarded: the same length gives the eager result, another
    is a GuardError naming the loop's line (it was an IndexError deep in the graph, and a
    longer input silently ran only the captured steps)."""
    ember.manual_seed(0)
    wrap = WrapSteps()
    traced = ember.jit.trace(wrap, (ember.rand(10, 3, 4),))
    xs = ember.rand(10, 3, 4)
    assert_allclose(traced(xs), wrap(xs), rtol=1e-6, atol=1e-6)
    for n in (5, 12):
        with pytest.raises(ember.export.GuardError,
                           match=r"sym_size\(%xs, 0\) == 10 \(assumed at .*test_jit_script"):
            traced(ember.rand(n, 3, 4))
    # a scripted module runs its Python: any length; saved, it is captured at its first
    # call's length, guarded the same way
    steps = ember.jit.script(Steps())
    short = ember.rand(5, 3, 4)
    assert tuple(steps(short).shape) == tuple(steps(xs).shape) == (3, 4)
    steps.save(tmp_path / "steps.pt")
    loaded = ember.jit.load(tmp_path / "steps.pt")
    assert_allclose(loaded(short), steps(short), rtol=1e-6, atol=1e-6)
    with pytest.raises(ember.export.GuardError, match="== 5"):
        loaded(xs)


class Base(nn.Module):
    def forward(self, x):
        return x + 1


class Private(Base):
    def __init__(self):
        super().__init__()
        self.__scale = 3.0

    def forward(self, x):
        y = super().forward(x)
        if y.sum() > 0:
            y = y * self.__scale
        return y


def test_super_and_private_names_survive_the_rewrite(tmp_path):
    scripted = ember.jit.script(Private())
    x = ember.ones(2)
    scripted(x)
    scripted.save(tmp_path / "p.pt")
    loaded = ember.jit.load(tmp_path / "p.pt")
    for v in (ember.ones(2), -ember.ones(2) * 3):
        assert_allclose(loaded(v), Private()(v))


def test_script_of_classes_lists_and_module_types():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    assert ember.jit.script(Pair) is Pair
    items = [1, 2]
    assert ember.jit.script(items) is items
    with pytest.raises(RuntimeError, match="inherits from nn.Module, pass an instance"):
        ember.jit.script(nn.Linear)
    assert ember.jit.script_method(Gate.forward) is Gate.forward


def test_scripted_results_equal_torch_jit_script():
    torch = pytest.importorskip("torch")

    class TGate(torch.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x * 2
            return -x

    class EGate(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x * 2
            return -x

    tg, eg = torch.jit.script(TGate()), ember.jit.script(EGate())
    for sign in (1.0, -1.0):
        x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32) + sign * 2
        assert_allclose(eg(ember.tensor(x)), tg(torch.from_numpy(x)).numpy())


def test_scripting_and_tracing_mix_as_in_the_torchscript_introduction(tmp_path):
    """PyTorch's TorchScript introduction: a traced cell (with a scripted gate) inside a
    scripted loop, inside a traced wrapper, saved and loaded: the loaded program keeps the
    gate's control flow at every step of the (unrolled) loop."""
    ember.manual_seed(0)
    gate = ember.jit.script(Gate())
    x, h = ember.rand(3, 4), ember.rand(3, 4)

    class Loop(nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = ember.jit.trace(Cell(gate), (x, h))

        def forward(self, xs):
            h, y = ember.zeros(3, 4), ember.zeros(3, 4)
            for i in range(xs.size(0)):
                y, h = self.cell(xs[i], h)
            return y, h

    class Wrap(nn.Module):
        def __init__(self):
            super().__init__()
            self.loop = ember.jit.script(Loop())

        def forward(self, xs):
            y, h = self.loop(xs)
            return ember.relu(y)

    wrap = Wrap()
    xs = ember.rand(10, 3, 4)
    traced = ember.jit.trace(wrap, xs)
    assert str(traced.graph).count("where(") == 10
    traced.save(tmp_path / "wrapped_rnn.pt")
    loaded = ember.jit.load(tmp_path / "wrapped_rnn.pt")
    for scale in (1.0, -1.0, -5.0):
        assert_allclose(loaded(xs * scale), wrap(xs * scale), rtol=1e-5, atol=1e-6)


class Helper(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def _clip(self, y):
        if y.mean() > 0:
            y = y * 2
        return y

    def forward(self, x):
        return self._clip(self.lin(x))


def test_methods_forward_calls_and_other_captures_keep_the_ifs(tmp_path):
    """The methods ``forward`` calls are rewritten too; export, ONNX and compile of a scripted
    module keep its ifs as selections."""
    ember.manual_seed(0)
    model = Helper()
    scripted = ember.jit.script(model)
    x = ember.randn(2, 3)
    samples = [x * s for s in (1.0, -1.0, 10.0, -10.0)]
    ep = ember.export.export(scripted, (x,))
    assert "where" in str(ep.graph)
    compiled = ember.compile(scripted)
    for v in samples:
        expected = model(v)
        assert_allclose(ep.module()(v), expected, rtol=1e-6, atol=1e-6)
        assert_allclose(compiled(v), expected, rtol=1e-6, atol=1e-6)
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    ember.onnx.export(scripted, (x,), tmp_path / "h.onnx", input_names=["x"])
    session = ort.InferenceSession(str(tmp_path / "h.onnx"))
    for v in samples:
        assert_allclose(session.run(None, {"x": v.numpy()})[0], model(v), rtol=1e-5,
                        atol=1e-6)


# -- PyTorch's first way: subclasses of ScriptModule with @script_method ----------------------

class ScriptLSTMCell(ember.jit.ScriptModule):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.weight_ih = nn.Parameter(ember.randn(4 * hidden_size, input_size))
        self.weight_hh = nn.Parameter(ember.randn(4 * hidden_size, hidden_size))
        self.bias_ih = nn.Parameter(ember.randn(4 * hidden_size))
        self.bias_hh = nn.Parameter(ember.randn(4 * hidden_size))

    @ember.jit.script_method
    def forward(self, x: ember.Tensor, state: tuple[ember.Tensor, ember.Tensor]):
        hx, cx = state
        gates = (ember.mm(x, self.weight_ih.t()) + self.bias_ih
                 + ember.mm(hx, self.weight_hh.t()) + self.bias_hh)
        i, f, g, o = gates.chunk(4, 1)
        cy = ember.sigmoid(f) * cx + ember.sigmoid(i) * ember.tanh(g)
        hy = ember.sigmoid(o) * ember.tanh(cy)
        return hy, (hy, cy)


class ScriptLSTMLayer(ember.jit.ScriptModule):
    def __init__(self, *cell_args):
        super().__init__()
        self.cell = ScriptLSTMCell(*cell_args)

    @ember.jit.script_method
    def forward(self, x: ember.Tensor, state: tuple[ember.Tensor, ember.Tensor]):
        inputs = x.unbind(0)
        outputs = ember.jit.annotate(list[ember.Tensor], [])
        for i in range(len(inputs)):
            out, state = self.cell(inputs[i], state)
            outputs += [out]
        return ember.stack(outputs), state


class ScriptStacked(ember.jit.ScriptModule):
    __constants__ = ["layers"]

    def __init__(self, num_layers, input_size, hidden_size):
        super().__init__()
        self.layers = nn.ModuleList([ScriptLSTMLayer(input_size, hidden_size)] + [
            ScriptLSTMLayer(hidden_size, hidden_size) for _ in range(num_layers - 1)])

    @ember.jit.script_method
    def forward(self, x: ember.Tensor, states: list[tuple[ember.Tensor, ember.Tensor]]):
        output_states = ember.jit.annotate(list[tuple[ember.Tensor, ember.Tensor]], [])
        output = x
        for i, layer in enumerate(self.layers):
            output, out_state = layer(output, states[i])
            output_states += [out_state]
        return output, output_states


def test_script_module_subclasses_are_modules_equal_to_lstm(tmp_path):
    """PyTorch's custom-LSTM benchmark style: jit.ScriptModule subclasses with
    @script_method, checked against nn.LSTM given the same weights."""
    ember.manual_seed(0)
    layers, seq, batch, n_in, n_hid = 2, 5, 3, 4, 6
    rnn = ScriptStacked(layers, n_in, n_hid)
    assert isinstance(rnn, nn.Module) and isinstance(rnn, ember.jit.ScriptModule)
    assert rnn.original_name == "ScriptStacked" and len(list(rnn.parameters())) == 8
    x = ember.randn(seq, batch, n_in)
    states = [(ember.randn(batch, n_hid), ember.randn(batch, n_hid)) for _ in range(layers)]
    out, out_states = rnn(x, states)
    lstm = nn.LSTM(n_in, n_hid, layers)
    params = list(rnn.parameters())
    with ember.no_grad():
        for layer in range(layers):
            for ours, theirs in zip(params[4 * layer:4 * layer + 4], lstm.all_weights[layer]):
                theirs.copy_(ours)
    h0 = ember.stack([s[0] for s in states])
    c0 = ember.stack([s[1] for s in states])
    ref, (hn, cn) = lstm(x, (h0, c0))
    assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    assert_allclose(ember.stack([s[0] for s in out_states]), hn, rtol=1e-5, atol=1e-5)
    assert_allclose(ember.stack([s[1] for s in out_states]), cn, rtol=1e-5, atol=1e-5)
    out.sum().backward()  # trains like any module
    assert all(p.grad is not None for p in rnn.parameters())
    assert "for i, layer in enumerate(self.layers):" in rnn.code
    rnn.save(tmp_path / "stacked.pt")
    loaded = ember.jit.load(tmp_path / "stacked.pt")
    assert_allclose(loaded(x, states)[0], out, rtol=1e-6, atol=1e-6)


class ScriptClip(ember.jit.ScriptModule):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    @ember.jit.script_method
    def clip(self, y):
        if y.mean() > 0:
            return y * 2
        return y

    @ember.jit.script_method
    def forward(self, x):
        return self.clip(self.lin(x))


class ScriptClipChild(ScriptClip):
    @ember.jit.script_method
    def forward(self, x):
        return super().forward(x) + 1


def test_script_module_subclasses_keep_their_ifs_when_saved(tmp_path):
    ember.manual_seed(0)
    model = ScriptClipChild()
    x = ember.randn(2, 3)
    model(x)
    model.save(tmp_path / "clip.pt")
    loaded = ember.jit.load(tmp_path / "clip.pt")
    for scale in (1.0, -1.0, 10.0, -10.0):
        assert_allclose(loaded(x * scale), model(x * scale), rtol=1e-6, atol=1e-6)
    assert model.original_name == "ScriptClipChild"


# -- the rewrite keeps Python's semantics where conditions are Python values -----------------

def _python_flow(x, n: int = 2, *rest, flag=False, **kw):
    total = 0
    for i in range(n):
        if i % 2 == 0:
            total += i
        elif i == 3:
            continue
        else:
            total -= 1
    while total > 100:
        if total > 1000:
            break
        total -= 1
    y = [v * 2 if v > 1 else v for v in range(n)]
    g = sum(a for a in y if a)
    if flag:
        z = total
    else:
        z = -total
    try:
        if kw.get("boom"):
            raise ValueError("x")
    except ValueError:
        z = 99
    with ember.no_grad():
        if n > 1:
            w = x * 2
        else:
            w = x
    if rest:
        return w + z + g + len(rest)
    return w + z + g


def _walrus_and_closures(x):
    if (n := x.shape[0]) > 1:
        return x * n

    def inner(a):
        if a > 0:
            return a
        return -a

    return inner(x.sum())


def _accumulate(x, ys):
    out = None
    for y in ys:
        if out is None:
            out = y
        else:
            out = out + y
    if out is None:
        return x
    assert out.shape == x.shape, "shape"
    del ys
    return out * x if x.dim() > 0 else out


def test_the_rewrite_keeps_python_semantics():
    from ember.jit._script import convert

    x = ember.ones(3)
    flow, walrus, acc = convert(_python_flow), convert(_walrus_and_closures), \
        convert(_accumulate)
    for args, kwargs in [((x,), {}), ((x, 5), {"flag": True}), ((x, 4, 1, 2), {"boom": True}),
                         ((x, 1), {})]:
        assert ember.equal(flow(*args, **kwargs), _python_flow(*args, **kwargs))
    for v in (x, ember.ones(1), -ember.ones(1)):
        assert ember.equal(walrus(v), _walrus_and_closures(v))
    for ys in ([x, x], []):
        assert ember.equal(acc(x, list(ys)), _accumulate(x, list(ys)))
    assert convert(lambda v: v + 1) is None  # no source of its own: run as it is


class NamedGraph(nn.Module):
    def __init__(self):
        super().__init__()
        self.graph = nn.Linear(2, 2)  # a submodule named like ScriptModule's attribute
        self.code = nn.Parameter(ember.ones(2))

    def forward(self, x):
        return self.graph(x) * self.code


def test_a_submodule_named_graph_or_code_wins_over_the_scripted_attributes():
    model = NamedGraph()
    scripted = ember.jit.script(model)
    assert scripted.graph is not model.graph and isinstance(scripted.graph, nn.Module)
    assert scripted.code is model.code
    x = ember.randn(3, 2)
    assert_allclose(scripted(x), model(x))
