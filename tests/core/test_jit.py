"""``ember.jit``: TorchScript's names (trace, script, save, load) over ``ember.export``."""

from __future__ import annotations

import inspect
import io
import sys
import typing
import warnings

import numpy as np
import pytest
from testutils import assert_allclose, copy_state_to_torch, to_torch

import ember
import ember.jit
from ember.export import FormatError, GuardError

nn = pytest.importorskip("ember.nn")
F = nn.functional


class Net(nn.Module):
    """Conv, batch norm, pooling and a flatten that reads the batch size."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        if x.size(1) != 3:
            raise ValueError("expected 3 channels")
        h = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.fc(h.view(h.size(0), -1))


def _net():
    ember.manual_seed(0)
    return Net().eval()


def _line_of(marker: str) -> int:
    lines, _ = inspect.getsourcelines(sys.modules[__name__])
    return next(i for i, line in enumerate(lines, 1) if marker in line and "_line_of" not in line)


def test_trace_module_runs_like_the_module():
    net = _net()
    x = ember.randn(2, 3, 8, 8)
    traced = ember.jit.trace(net, x)
    assert isinstance(traced, ember.jit.ScriptModule)
    assert isinstance(traced, ember.jit.TopLevelTracedModule)
    assert_allclose(traced(x), net(x), rtol=1e-6, atol=1e-6)
    assert_allclose(traced.forward(x), net(x), rtol=1e-6, atol=1e-6)
    assert set(traced.state_dict()) == set(net.state_dict())
    assert len(list(traced.parameters())) == len(list(net.parameters()))
    assert "conv2d(" in str(traced.graph) and "def forward(self, x):" in traced.code


def test_a_trace_at_batch_1_runs_other_batch_sizes():
    """Sizes the code reads are recorded as sizes of the run's tensors (aten::size)."""
    net = _net()
    traced = ember.jit.trace(net, ember.randn(1, 3, 8, 8))
    view = next(n for n in traced.graph.nodes if n.op == "Tensor.view")
    assert view.args[1][0] == {"symint": {"size": ["max_pool2d", 0]}}
    for batch in (1, 4, 9):
        x = ember.randn(batch, 3, 8, 8)
        assert_allclose(traced(x), net(x), rtol=1e-6, atol=1e-6)


def test_a_branch_on_a_size_is_guarded():
    traced = ember.jit.trace(_net(), ember.randn(1, 3, 8, 8))
    with pytest.raises(GuardError, match=r"Guard failed: sym_size\(%x, 1\) == 3"):
        traced(ember.randn(1, 4, 8, 8))


def test_trace_function_is_a_script_function():
    def f(x, y):
        return (x * y).sum(-1).tanh()

    x, y = ember.randn(3, 4), ember.randn(3, 4)
    traced = ember.jit.trace(f, (x, y))
    assert isinstance(traced, ember.jit.ScriptFunction)
    assert_allclose(traced(x, y), f(x, y), rtol=1e-6)
    assert [n.op for n in traced.graph.nodes] == ["mul", "sum", "tanh"]


def test_data_dependent_branch_warns_and_is_baked_in():
    class Branchy(nn.Module):
        def forward(self, x):
            if x.sum() > 0:  # the branch the trace bakes in
                return x * 2
            return x - 1

    line = _line_of("# the branch the trace bakes in")
    with pytest.warns(ember.jit.TracerWarning, match="Converting a tensor to a Python "
                                                     "boolean might cause the trace to be "
                                                     "incorrect") as record:
        traced = ember.jit.trace(Branchy(), ember.ones(3))
    warning = next(w for w in record if w.category is ember.jit.TracerWarning)
    assert warning.filename == __file__ and warning.lineno == line
    negative = -ember.ones(3)
    assert_allclose(traced(negative), negative * 2)  # the branch taken at trace time


def test_item_is_baked_in_with_a_warning():
    def f(x):
        return x * x.max().item()

    with pytest.warns(ember.jit.TracerWarning, match="Python number"):
        traced = ember.jit.trace(f, ember.tensor([1.0, 2.0]))
    assert_allclose(traced(ember.tensor([1.0, 5.0])), [2.0, 10.0])


def test_untraced_tensor_warns_and_becomes_a_constant():
    from ember.ops.fft_ops import fft_rfft  # an op module's own kernel: no dispatch

    held = {"k": fft_rfft}  # where the capture does not route kernels to their public op

    def f(x):
        return held["k"](x).real + x[:2]

    with pytest.warns(ember.jit.TracerWarning, match="treats it as a constant"):
        traced = ember.jit.trace(f, ember.zeros(2), check_trace=False)
    assert_allclose(traced(ember.ones(2)), [1.0, 1.0])  # rfft(0) baked in


def test_check_trace_compares_outputs():
    class Noisy(nn.Module):
        def forward(self, x):
            return F.dropout(x, 0.5, training=True)

    with pytest.warns(ember.jit.TracerWarning, match="does not match the corresponding "
                                                     "output of the Python function"):
        ember.jit.trace(Noisy(), ember.ones(100))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", "`torch.jit", DeprecationWarning)
        ember.jit.trace(Noisy(), ember.ones(100), check_trace=False)


def test_strict_refuses_list_outputs():
    def f(x):
        return [x, x * 2]

    with pytest.raises(RuntimeError, match="Encountering a list at the output of the tracer"):
        ember.jit.trace(f, ember.ones(2))
    traced = ember.jit.trace(f, ember.ones(2), strict=False)
    out = traced(ember.ones(2))
    assert isinstance(out, list) and len(out) == 2


def test_example_kwarg_inputs_and_trace_module():
    def f(x, scale=None):
        return x * scale

    x, s = ember.randn(3), ember.randn(3)
    traced = ember.jit.trace(f, example_kwarg_inputs={"x": x, "scale": s})
    assert_allclose(traced(x=x, scale=s), x * s, rtol=1e-6)
    net = _net()
    xb = ember.randn(2, 3, 8, 8)
    traced = ember.jit.trace_module(net, {"forward": xb})
    assert_allclose(traced(xb), net(xb), rtol=1e-6, atol=1e-6)


def test_save_and_load_with_torchscript_names(tmp_path):
    net = _net()
    x = ember.randn(2, 3, 8, 8)
    traced = ember.jit.trace(net, x)
    ember.jit.save(traced, tmp_path / "model.pt")  # the extension is the user's choice
    loaded = ember.jit.load(tmp_path / "model.pt")
    assert isinstance(loaded, ember.jit.ScriptModule)
    loaded.eval()
    with ember.no_grad():
        assert_allclose(loaded(x), net(x), rtol=1e-6, atol=1e-6)
    traced.save(tmp_path / "again.pt")
    buf = io.BytesIO()
    ember.jit.save(traced, buf, _extra_files={"meta.json": "{}"})
    extra = {"meta.json": ""}
    from_buffer = ember.jit.load(io.BytesIO(buf.getvalue()), map_location="cpu",
                                 _extra_files=extra)
    assert extra == {"meta.json": "{}"}
    assert all(p.device.type == "cpu" for p in from_buffer.parameters())
    assert_allclose(from_buffer(x.cpu()), net(x).cpu(), rtol=1e-6, atol=1e-6)


def test_load_refuses_torchscript_archives(tmp_path):
    ember.save({"w": ember.ones(1)}, tmp_path / "m.pt")
    with pytest.raises(FormatError, match="Ember cannot run TorchScript"):
        ember.jit.load(tmp_path / "m.pt")


def test_train_and_eval_set_the_flag_only():
    traced = ember.jit.trace(_net(), ember.randn(1, 3, 8, 8))
    assert traced.training is False
    assert traced.train() is traced and traced.training is True
    assert traced.eval().training is False


def test_is_tracing_and_is_scripting():
    seen = []

    def f(x):
        seen.append(ember.jit.is_tracing())
        return x + 1

    ember.jit.trace(f, ember.ones(1), check_trace=False)
    assert seen == [True] and not ember.jit.is_tracing() and not ember.jit.is_scripting()


def test_torchscript_annotations_are_noops():
    @ember.jit.ignore
    def a():
        return 1

    @ember.jit.ignore(drop=True)
    def b():
        return 2

    @ember.jit.unused
    def c():
        return 3

    @ember.jit.export
    def d():
        return 4

    assert (a(), b(), c(), d()) == (1, 2, 3, 4)
    assert ember.jit.annotate(list, []) == [] and ember.jit.Final[int] is int
    assert ember.jit.wait(ember.jit.fork(lambda v: v * 2, 3)) == 6
    traced = ember.jit.trace(_net(), ember.randn(1, 3, 8, 8))
    assert ember.jit.freeze(traced) is traced


def test_trace_matches_torch_jit_trace():
    torch = pytest.importorskip("torch")

    class TorchNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(4)
            self.fc = torch.nn.Linear(4 * 4 * 4, 3)

        def forward(self, x):
            h = torch.nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
            return self.fc(h.view(h.size(0), -1))

    net, torch_net = copy_state_to_torch(_net(), TorchNet().eval())
    traced = ember.jit.trace(net, ember.randn(1, 3, 8, 8))
    with warnings.catch_warnings():  # torch.jit.trace is deprecated in torch 2.13
        warnings.simplefilter("ignore", DeprecationWarning)
        torch_traced = torch.jit.trace(torch_net, torch.randn(1, 3, 8, 8))
    x = ember.randn(5, 3, 8, 8)
    with torch.no_grad():
        want = torch_traced(to_torch(x)).numpy()
    assert_allclose(traced(x), want, rtol=1e-4, atol=1e-5)
    assert np.isfinite(want).all()


def test_trace_records_the_real_and_imag_properties():
    """``z.real``/``z.imag`` are ops to a capture (they were baked in as constants): the trace
    gives new inputs' parts, and writes through ``z.real = ...`` are recorded too."""
    def f(z):
        w = z * 2
        w.real = w.imag
        return z.real * 2 + z.imag, w

    z = ember.randn(3, 4, dtype=ember.complex64)
    m = ember.jit.trace(f, (z,))
    assert "real(" in str(m.graph) and "imag(" in str(m.graph)
    z2 = ember.randn(3, 4, dtype=ember.complex64)
    for got, want in zip(m(z2), f(z2)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    batched = ember.func.vmap(lambda t: t.real - t.imag)(z2)
    np.testing.assert_allclose(batched.numpy(), (z2.real - z2.imag).numpy())


def test_jit_annotations_gives_typing_names_to_torchscript_style_code():
    # timm's DenseNet and older torchvision models: `from torch.jit.annotations import List`
    from ember.jit.annotations import BroadcastingList2, Dict, List, Optional, Tuple

    expected = ("List", "Tuple", "Optional", "Dict")
    assert (List, Tuple, Optional, Dict) == tuple(getattr(typing, n) for n in expected)
    assert BroadcastingList2 is List

    def concat(xs: List[ember.Tensor]) -> ember.Tensor:
        return ember.cat(xs, 1)

    traced = ember.jit.trace(concat, ([ember.ones(2, 1), ember.zeros(2, 2)],))
    assert traced([ember.ones(2, 1), ember.zeros(2, 2)]).shape == (2, 3)


def test_a_traced_module_inside_another_capture_is_recorded(tmp_path):
    """A traced (or loaded) program called by a module that is traced or exported records its
    ops there, its weights as the caller's constants (before, the caller's graph returned a
    constant: the inner program ran unseen)."""
    ember.manual_seed(0)
    lin = nn.Linear(4, 4)
    inner = ember.jit.trace(lin, ember.randn(2, 4))

    class Wrap(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return ember.relu(self.inner(x))

    x = ember.randn(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing untraced, nothing baked in
        warnings.filterwarnings("ignore", "`torch.jit", DeprecationWarning)
        traced = ember.jit.trace(Wrap(), ember.randn(2, 4))
    exported = ember.export.export(Wrap(), (ember.randn(3, 4),))
    for program in (traced, exported.module()):
        assert "linear" in str(program.graph)
        assert_allclose(program(x), F.relu(lin(x)), rtol=1e-6, atol=1e-6)
    ember.jit.save(traced, tmp_path / "w.pt")
    assert_allclose(ember.jit.load(tmp_path / "w.pt")(x), F.relu(lin(x)), rtol=1e-6,
                    atol=1e-6)


def test_a_traced_or_loaded_module_is_an_nn_module(tmp_path):
    """As in PyTorch (a ScriptModule is an nn.Module): a traced program is a submodule like
    any other, its parameters the original's, trainable, movable and loadable."""
    net = _net()
    x = ember.randn(2, 3, 8, 8)
    traced = ember.jit.trace(net, x)
    assert isinstance(traced, nn.Module) and isinstance(traced, ember.jit.ScriptModule)
    assert list(traced.state_dict()) == list(net.state_dict())
    assert traced.conv.weight is net.conv.weight  # shared, as torch.jit.trace shares them
    assert repr(traced).startswith("Net(\n  original_name=Net\n"
                                   "  (conv): Conv2d(original_name=Conv2d)\n")
    model = nn.Sequential(traced, nn.Linear(3, 2))
    assert len(list(model.parameters())) == len(list(net.parameters())) + 2
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    before = net.fc.weight.detach().clone()
    model(x).sum().backward()
    opt.step()
    assert not ember.equal(before, net.fc.weight.detach())
    assert_allclose(traced(x), net(x), rtol=1e-6, atol=1e-6)  # runs the updated weights
    ember.jit.save(traced, tmp_path / "net.pt")
    loaded = ember.jit.load(tmp_path / "net.pt")
    assert isinstance(loaded, nn.Module) and loaded.training is False
    assert_allclose(loaded.double()(x.double()), net.double()(x.double()), rtol=1e-6,
                    atol=1e-6)
    zeros = {k: ember.zeros_like(v) for k, v in loaded.state_dict().items()}
    loaded.load_state_dict(zeros, assign=True)  # new tensors: the graph runs them
    assert loaded(x.double()).abs().max().item() == 0.0


def test_traced_and_loaded_modules_keep_the_module_tree_and_its_names(tmp_path):
    """PyTorch's traced module prints its original's tree, submodules without weights too
    (``Gate(original_name=Gate)``); a loaded one prints ``RecursiveScriptModule`` with each
    original name (the TorchScript tutorial prints both)."""
    class Gate(nn.Module):
        def forward(self, x):
            return -x

    class Cell(nn.Module):
        def __init__(self):
            super().__init__()
            self.dg = Gate()
            self.linear = nn.Linear(4, 4)
            self.block = nn.Sequential(nn.ReLU(), nn.Linear(4, 2))
            self.spare = nn.Identity()  # never called

        def forward(self, x):
            return self.block(self.dg(self.linear(x)))

    cell = Cell()
    x = ember.rand(3, 4)
    traced = ember.jit.trace(cell, x)
    assert repr(traced) == (
        "Cell(\n  original_name=Cell\n  (dg): Gate(original_name=Gate)\n"
        "  (linear): Linear(original_name=Linear)\n  (block): Sequential(\n"
        "    original_name=Sequential\n    (0): ReLU(original_name=ReLU)\n"
        "    (1): Linear(original_name=Linear)\n  )\n  (spare): Identity(original_name=Identity)"
        "\n)")
    assert traced.dg.original_name == "Gate"
    assert getattr(traced.block, "1").weight is cell.block[1].weight
    assert [n for n, _ in traced.named_modules()] == [n for n, _ in cell.named_modules()]
    # each called submodule is traced too, at the shapes of its first call (PyTorch traces
    # them in the same run): its code and graph, and it runs on its own
    assert "neg = ops.neg(x)" in traced.dg.code and "linear(" in str(traced.linear.graph)
    assert_allclose(traced.block(x), cell.block(x), rtol=1e-6, atol=1e-6)
    assert_allclose(traced.dg(ember.ones(5)), -ember.ones(5))
    with pytest.raises(RuntimeError, match="was not called while the module was traced"):
        traced.spare(x)
    traced.save(tmp_path / "cell.pt")
    loaded = ember.jit.load(tmp_path / "cell.pt")
    assert repr(loaded) == (
        "RecursiveScriptModule(\n  original_name=Cell\n"
        "  (dg): RecursiveScriptModule(original_name=Gate)\n"
        "  (linear): RecursiveScriptModule(original_name=Linear)\n"
        "  (block): RecursiveScriptModule(\n    original_name=Sequential\n"
        "    (0): RecursiveScriptModule(original_name=ReLU)\n"
        "    (1): RecursiveScriptModule(original_name=Linear)\n  )\n"
        "  (spare): RecursiveScriptModule(original_name=Identity)\n)")
    assert loaded.original_name == "Cell" and loaded.block.original_name == "Sequential"
    assert list(loaded.state_dict()) == list(cell.state_dict())
    assert_allclose(loaded(x), cell(x), rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError, match="Gate has no traced program of its own .a loaded"):
        loaded.dg(x)
    with pytest.raises(RuntimeError, match="no traced program of its own"):
        print(loaded.linear.code)


def test_a_traced_module_with_submodules_named_like_its_attributes():
    class GraphNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.graph = nn.Linear(3, 3)
            self.code = nn.BatchNorm1d(3)
            self.register_buffer("scale", ember.full((3,), 2.0), persistent=False)

        def forward(self, x):
            return self.code(self.graph(x)) * self.scale

    model = GraphNet().eval()
    x = ember.randn(4, 3)
    traced = ember.jit.trace(model, x)
    assert list(traced.state_dict()) == list(model.state_dict())
    assert {n for n, _ in traced.named_buffers()} == {n for n, _ in model.named_buffers()}
    assert_allclose(traced(x), model(x), rtol=1e-6, atol=1e-6)
    assert "linear" in str(traced.graph)  # ScriptModule's graph


def test_example_inputs_as_a_list_are_the_arguments():
    """PyTorch's make_tuple: a list of example inputs is the arguments (PyTorch's tuning guide
    traces with ``[torch.rand(...)]``), a tensor or a dict is the one argument."""
    net = _net()
    x = ember.randn(2, 3, 8, 8)
    traced = ember.jit.trace(net, [x])
    assert_allclose(traced(x), net(x), rtol=1e-6, atol=1e-6)
    pair = ember.jit.trace(lambda a, b: a * b, [x, x + 1])
    assert_allclose(pair(x, x), x * x)
    keyed = ember.jit.trace(lambda d: d["a"] + 1, {"a": x})
    assert_allclose(keyed({"a": x}), x + 1)


# -- TorchScript's type names ---------------------------------------------------------------------

def test_torchscript_type_names_exist_as_pytorchs():
    # the DDIM tutorial annotates ``device: torch.DeviceObjType``
    assert ember._C.DeviceObjType is ember.DeviceObjType
    assert str(ember.DeviceObjType.get()) == "Device"
    assert ember.TensorType.get() is ember.TensorType.get()
    assert ember.TensorType.get().annotation_str == "Tensor"
    assert ember.TensorType.get().kind() == "TensorType"
    assert issubclass(ember.ListType, ember.Type) and not hasattr(ember.ListType, "get")
    i, t = ember.IntType.get(), ember.TensorType.get()
    assert str(ember.ListType(i)) == "List[int]" and ember.ListType(i) == ember.ListType.ofInts()
    assert ember.ListType(i).getElementType() is i
    assert str(ember.OptionalType(t)) == "Optional[Tensor]"
    assert str(ember.TupleType([i, t])) == "Tuple[int, Tensor]"
    assert str(ember.DictType(ember.StringType.get(), t)) == "Dict[str, Tensor]"
    assert str(ember.UnionType([i, ember.FloatType.get()])) == "Union[float, int]"
    with pytest.raises(TypeError, match="DictType\\(\\) takes 2 types, got 1"):
        ember.DictType(i)
    with pytest.raises(TypeError, match="expected a type, got int"):
        ember.ListType(3)
    assert not hasattr(ember, "FooType")


def test_torchscript_type_strings_match_the_oracle():
    torch = pytest.importorskip("torch")
    for name in ("AnyType", "BoolType", "ComplexType", "DeviceObjType", "FloatType", "IntType",
                 "NoneType", "NumberType", "StreamObjType", "StringType", "TensorType",
                 "SymIntType", "SymBoolType", "PyObjectType"):
        assert str(getattr(ember, name).get()) == str(getattr(torch, name).get()), name
    assert str(ember.TupleType([ember.IntType.get(), ember.TensorType.get()])) == \
        str(torch.TupleType([torch.IntType.get(), torch.TensorType.get()]))
