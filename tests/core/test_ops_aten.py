"""``ember.ops.aten``: PyTorch's ``torch.ops.aten`` over Ember's op registry."""

import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember
from ember.ops import _aten

aten = ember.ops.aten


# -- parity with torch.ops.aten -----------------------------------------------------------------

class DT:
    """A dtype argument, by name (made on each side)."""

    def __init__(self, name):
        self.name = name


def _f(*shape):
    return ("f", shape)


def _pos(*shape):
    return ("p", shape)


def _u(*shape):
    return ("u", shape)


def _i(high, *shape):
    return ("i", high, shape)


def _b(*shape):
    return ("b", shape)


def _make(spec, rng):
    """The NumPy arrays of a case's argument spec."""
    if isinstance(spec, tuple) and spec and spec[0] in ("f", "p", "u", "i", "b"):
        kind = spec[0]
        if kind == "f":
            return rng.standard_normal(spec[1]).astype(np.float32)
        if kind == "p":
            return rng.uniform(0.5, 2.0, spec[1]).astype(np.float32)
        if kind == "u":
            return rng.uniform(0.0, 1.0, spec[1]).astype(np.float32)
        if kind == "i":
            return rng.integers(0, spec[1], spec[2]).astype(np.int64)
        return rng.random(spec[1]) > 0.5
    if isinstance(spec, list):
        return [_make(s, rng) for s in spec]
    if isinstance(spec, tuple):
        return tuple(_make(s, rng) for s in spec)
    if isinstance(spec, dict):
        return {k: _make(v, rng) for k, v in spec.items()}
    return spec


def _convert(value, lib):
    if isinstance(value, np.ndarray):
        return lib.tensor(value)
    if isinstance(value, DT):
        return getattr(lib, value.name)
    if isinstance(value, list):
        return [_convert(v, lib) for v in value]
    if isinstance(value, tuple):
        return tuple(_convert(v, lib) for v in value)
    if isinstance(value, dict):
        return {k: _convert(v, lib) for k, v in value.items()}
    return value


def _assert_same(got, want, where="result"):
    import torch

    if isinstance(want, torch.Tensor):
        assert isinstance(got, ember.Tensor), f"{where}: {type(got).__name__}, not a Tensor"
        assert str(got.dtype) == str(want.dtype).replace("torch", "ember"), where
        assert tuple(got.shape) == tuple(want.shape), where
        w = want.detach().numpy()
        g = got.detach().numpy()
        if w.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w, err_msg=where)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=where)
    elif isinstance(want, (tuple, list)):
        assert type(got) is type(want), f"{where}: {type(got).__name__}, not " \
                                        f"{type(want).__name__}"
        assert len(got) == len(want), where
        for k, (g, w) in enumerate(zip(got, want)):
            _assert_same(g, w, f"{where}[{k}]")
    else:
        assert got == pytest.approx(want), where


#: (op, overload, positional argument specs, keyword argument specs)
CASES = [
    ("add", "Tensor", [_f(2, 3), _f(2, 3)], {"alpha": 2}),
    ("add", "Scalar", [_f(2, 3), 2.5, 2], {}),
    ("sub", "Tensor", [_f(2, 3), _f(3)], {}),
    ("mul", "Tensor", [_f(2, 3), _f(2, 3)], {}),
    ("mul", "Scalar", [_f(2, 3), 3], {}),
    ("div", "Tensor_mode", [_f(2, 3), _pos(2, 3)], {"rounding_mode": "floor"}),
    ("pow", "Tensor_Scalar", [_pos(2, 3), 2], {}),
    ("rsub", "Scalar", [_f(2, 3), 1.5, 2], {}),
    ("mm", "default", [_f(2, 3), _f(3, 4)], {}),
    ("bmm", "default", [_f(2, 2, 3), _f(2, 3, 4)], {}),
    ("addmm", "default", [_f(4), _f(2, 3), _f(3, 4)], {"beta": 0.5, "alpha": 2}),
    ("relu", "default", [_f(2, 3)], {}),
    ("gelu", "default", [_f(2, 3)], {"approximate": "tanh"}),
    ("rsqrt", "default", [_pos(2, 3)], {}),
    ("sum", "dim_IntList", [_f(2, 3, 4), [0, 2], True], {}),
    ("sum", "default", [_f(2, 3)], {"dtype": DT("float64")}),
    ("mean", "dim", [_f(2, 3, 4), [-1]], {}),
    ("var", "correction", [_f(2, 3, 4), [1]], {"correction": 0, "keepdim": True}),
    ("amax", "default", [_f(2, 3, 4), [1]], {}),
    ("max", "dim", [_f(2, 3), 1, True], {}),
    ("argmax", "default", [_f(2, 3), 1], {}),
    ("topk", "default", [_f(2, 5), 2], {}),
    ("cumsum", "default", [_f(2, 3), 1], {}),
    ("_softmax", "default", [_f(2, 3), 1, False], {}),
    ("_log_softmax", "default", [_f(2, 3), -1, False], {}),
    ("convolution", "default",
     [_f(2, 3, 6, 6), _f(4, 3, 3, 3), _f(4), [1, 1], [1, 1], [1, 1], False, [0, 0], 1], {}),
    ("convolution", "default",
     [_f(2, 4, 5), _f(4, 2, 3), None, [2], [1], [1], True, [1], 2], {}),
    ("native_layer_norm", "default", [_f(2, 3, 4), [4], _f(4), _f(4), 1e-5], {}),
    ("native_batch_norm", "default",
     [_f(4, 3, 5), _f(3), _f(3), _f(3), _pos(3), True, 0.1, 1e-5], {}),
    ("native_batch_norm", "default",
     [_f(4, 3, 5), None, None, _f(3), _pos(3), False, 0.1, 1e-5], {}),
    ("_native_batch_norm_legit_no_training", "default",
     [_f(4, 3, 5), _f(3), _f(3), _f(3), _pos(3), 0.1, 1e-5], {}),
    ("native_group_norm", "default", [_f(2, 6, 5), _f(6), _f(6), 2, 6, 5, 3, 1e-5], {}),
    ("t", "default", [_f(2, 3)], {}),
    ("view", "default", [_f(2, 3), [3, 2]], {}),
    ("_unsafe_view", "default", [_f(2, 3), [6]], {}),
    ("expand", "default", [_f(3, 1), [2, 3, 4]], {}),
    ("permute", "default", [_f(2, 3, 4), [2, 0, 1]], {}),
    ("transpose", "int", [_f(2, 3, 4), 0, 2], {}),
    ("unsqueeze", "default", [_f(2, 3), 1], {}),
    ("squeeze", "dim", [_f(2, 1, 3), 1], {}),
    ("slice", "Tensor", [_f(4, 5), 1, 0, 4, 2], {}),
    ("select", "int", [_f(4, 5), 0, -1], {}),
    ("cat", "default", [[_f(2, 3), _f(2, 1)], 1], {}),
    ("split", "Tensor", [_f(5, 2), 2], {}),
    ("clone", "default", [_f(2, 3)], {}),
    ("_to_copy", "default", [_f(2, 3)], {"dtype": DT("float64")}),
    ("where", "self", [_b(2, 3), _f(2, 3), _f(2, 3)], {}),
    ("clamp", "default", [_f(2, 3), -0.5, 0.5], {}),
    ("eq", "Scalar", [_i(3, 2, 3), 1], {}),
    ("lt", "Tensor", [_f(2, 3), _f(2, 3)], {}),
    ("embedding", "default", [_f(5, 3), _i(5, 2, 4)], {}),
    ("index_select", "default", [_f(4, 3), 0, _i(4, 5)], {}),
    ("gather", "default", [_f(4, 3), 1, _i(3, 4, 2)], {}),
    ("index", "Tensor", [_f(4, 3), [None, _i(3, 5)]], {}),
    ("constant_pad_nd", "default", [_f(2, 3), [1, 2], 0.5], {}),
    ("avg_pool2d", "default", [_f(1, 2, 4, 4), [2, 2]], {}),
    ("max_pool2d_with_indices", "default", [_f(1, 2, 4, 4), [2, 2]], {}),
    ("_adaptive_avg_pool2d", "default", [_f(1, 2, 4, 4), [2, 1]], {}),
    ("full", "default", [[2, 3], 1.5], {}),
    ("arange", "start_step", [1, 10, 3], {}),
    ("zeros", "default", [[2, 3]], {"dtype": DT("int64")}),
    # ATen's reduction enum (Mean by default), not F's string
    ("mse_loss", "default", [_f(2, 3), _f(2, 3), 2], {}),
    ("binary_cross_entropy_with_logits", "default", [_f(2, 3), _u(2, 3)], {}),
    ("nll_loss", "default", [_f(4, 5), _i(5, 4), None, 0], {}),
    # ATen's own forms: every output, another argument split, no centring
    ("unique_consecutive", "default", [_i(3, 8)], {"return_counts": True}),
    ("tensordot", "default", [_f(2, 3, 4), _f(4, 3, 5), [1, 2], [1, 0]], {}),
    ("fractional_max_pool2d", "default", [_f(1, 2, 8, 8), [2, 2], [4, 4], _u(1, 2, 2)], {}),
    ("stft", "default", [_f(32), 8, 4, 8, _u(8)], {"return_complex": True}),
    # recurrent cells and norms (their table lines came with a regenerated table)
    ("gru_cell", "default", [_f(3, 4), _f(3, 6), _f(18, 4), _f(18, 6)], {}),
    ("rnn_tanh_cell", "default", [_f(3, 4), _f(3, 6), _f(6, 4), _f(6, 6), _f(6), _f(6)], {}),
    ("lstm_cell", "default", [_f(3, 4), [_f(3, 6), _f(3, 6)], _f(24, 4), _f(24, 6)], {}),
    ("nuclear_norm", "default", [_f(3, 3)], {}),
    ("frobenius_norm", "dim", [_f(5, 3), [0]], {}),
    ("norm_except_dim", "default", [_f(5, 3)], {}),
    # attention's kernels: the output and the logsumexp / the weights
    ("_scaled_dot_product_flash_attention_for_cpu", "default",
     [_f(2, 3, 5, 4), _f(2, 3, 6, 4), _f(2, 3, 6, 4)], {}),
    ("_scaled_dot_product_flash_attention_for_cpu", "default",
     [_f(2, 3, 5, 4), _f(2, 1, 6, 4), _f(2, 1, 6, 4), 0.0, True], {"attn_mask": _f(5, 6)}),
    ("_scaled_dot_product_attention_math", "default",
     [_f(2, 3, 5, 4), _f(2, 3, 6, 4), _f(2, 3, 6, 4), _f(5, 6)], {"scale": 0.3}),
    ("_scaled_dot_product_attention_math", "default",
     [_f(3, 5, 4), _f(3, 6, 4), _f(3, 6, 4), _b(5, 6)], {}),
    # in place: the written argument is compared too
    ("add_", "Tensor", [_f(2, 3), _f(2, 3)], {"alpha": 3}),
    ("mul_", "Scalar", [_f(2, 3), 2], {}),
    ("relu_", "default", [_f(2, 3)], {}),
    ("copy_", "default", [_f(2, 3), _f(3)], {}),
    ("fill_", "Scalar", [_f(2, 3), 7], {}),
]


@pytest.mark.parametrize("name,overload,arg_specs,kwarg_specs", CASES,
                         ids=[f"{c[0]}.{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_parity_with_torch_ops_aten(name, overload, arg_specs, kwarg_specs):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    args, kwargs = _make(arg_specs, rng), _make(kwarg_specs, rng)
    t_args, t_kwargs = _convert(args, torch), _convert(kwargs, torch)
    e_args, e_kwargs = _convert(args, ember), _convert(kwargs, ember)
    want = getattr(getattr(torch.ops.aten, name), overload)(*t_args, **t_kwargs)
    got = getattr(getattr(aten, name), overload)(*e_args, **e_kwargs)
    _assert_same(got, want)
    _assert_same(list(e_args), list(t_args), "arguments after the call")  # in place: written


# -- the table ----------------------------------------------------------------------------------

def test_schemas_are_pytorchs():
    torch = pytest.importorskip("torch")
    checked = 0
    for name in _aten.op_names():
        packet = getattr(torch.ops.aten, name)
        ours = getattr(aten, name).overloads()
        theirs = packet.overloads()
        assert set(ours) <= set(theirs), name
        assert sorted(ours, key=theirs.index) == ours, f"{name}: not in PyTorch's order"
        for overload in ours:
            want = str(getattr(packet, overload)._schema)
            assert _aten.schema_text(name, "" if overload == "default" else overload) == want
            assert str(getattr(getattr(aten, name), overload)._schema) == want
            checked += 1
    assert checked > 1000


def test_every_overload_maps_onto_its_ember_op():
    names = _aten.op_names()
    assert {"add", "add_", "mm", "relu", "sum", "convolution", "native_layer_norm", "_softmax",
            "addmm", "t", "view", "_to_copy", "expand", "clone", "native_batch_norm",
            "zeros", "arange", "copy_", "slice"} <= set(names)
    for name in names:
        for overload in _aten._index()[name]:
            op = _aten.AtenOp(name, overload)
            plan = op.plan()  # raises where a schema argument has no Ember parameter
            assert callable(plan.target)
            assert len(plan.steps) == len(op.schema.arguments) - len(plan.outs)


# -- packets, overloads, names ------------------------------------------------------------------

def test_overloads_and_names():
    add = aten.add
    assert add.overloads() == ["Tensor", "Scalar", "out", "Scalar_out"]
    assert aten.relu.overloads() == ["default", "out"]
    assert add._qualified_op_name == "aten::add"
    assert add.__name__ == "add"
    assert repr(add) == "<OpOverloadPacket(op='aten.add')>"
    assert str(add) == "aten.add"
    op = add.Tensor
    assert op.name() == "aten::add.Tensor"
    assert aten.relu.default.name() == "aten::relu"
    assert op.__name__ == "add.Tensor"
    assert op._overloadname == "Tensor"
    assert repr(op) == "<OpOverload(op='aten.add', overload='Tensor')>"
    assert str(op) == "aten.add.Tensor"
    assert str(op._schema) == \
        "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
    assert add.Tensor is op and aten.add is add and op.overloadpacket is add
    assert repr(aten) == "<module 'ember.ops.aten' from 'ember.ops'>"
    assert "native_layer_norm" in dir(aten) and "Scalar_out" in dir(add)


def test_packet_call_picks_the_overload():
    x = ember.tensor([[-1.0, 2.0], [3.0, -4.0]])
    np.testing.assert_allclose(aten.relu(x).numpy(), [[0, 2], [3, 0]])
    np.testing.assert_allclose(aten.add(x, x, alpha=2).numpy(), 3 * x.numpy())
    np.testing.assert_allclose(aten.add(x, 1.5).numpy(), x.numpy() + 1.5)  # add.Scalar
    assert aten.sum(x).item() == 0.0
    np.testing.assert_allclose(aten.sum(x, [0]).numpy(), [2.0, -2.0])  # sum.dim_IntList
    with pytest.raises(RuntimeError, match=r"aten::add\(\) takes none of these argument"):
        aten.add(x, "a")


def test_overload_binds_pytorchs_positional_order():
    x = ember.tensor([1.0, 2.0])
    # add.Scalar's alpha is positional, add.Tensor's keyword-only
    np.testing.assert_allclose(aten.add.Scalar(x, 1, 3).numpy(), [4.0, 5.0])
    with pytest.raises(RuntimeError, match=r"expected at most 2 argument\(s\) but received 3"):
        aten.add.Tensor(x, x, 3)
    np.testing.assert_allclose(aten.add.Tensor(self=x, other=x, alpha=2).numpy(), [3.0, 6.0])
    # sum.dim_IntList takes one int as the list
    np.testing.assert_allclose(aten.sum.dim_IntList(ember.ones(2, 3), 1).numpy(), [3.0, 3.0])


def test_out_overload():
    a = ember.tensor([1.0, 2.0, 3.0])
    out = ember.empty(0)
    assert aten.add.out(a, a, alpha=2, out=out) is out
    np.testing.assert_allclose(out.numpy(), [3.0, 6.0, 9.0])
    stale = ember.zeros(2)
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        aten.mul.out(a, a, out=stale)
    np.testing.assert_allclose(stale.numpy(), [1.0, 4.0, 9.0])
    values, indices = ember.empty(0), ember.empty(0, dtype=ember.int64)
    res = aten.max.dim_max(ember.tensor([[1.0, 5.0], [7.0, 2.0]]), 1, max=values,
                           max_values=indices)
    assert type(res) is tuple and res[0] is values and res[1] is indices
    np.testing.assert_allclose(values.numpy(), [5.0, 7.0])
    np.testing.assert_array_equal(indices.numpy(), [1, 0])


def test_out_overload_of_an_op_without_out_keyword():
    # native_layer_norm.out: Ember's function has no out=, the results are copied in
    x = ember.randn(2, 3)
    outs = (ember.empty(0), ember.empty(0), ember.empty(0))
    res = aten.native_layer_norm.out(x, [3], None, None, 1e-5, out0=outs[0], out1=outs[1],
                                     out2=outs[2])
    assert all(r is o for r, o in zip(res, outs))
    want = aten.native_layer_norm.default(x, [3], None, None, 1e-5)
    for o, w in zip(outs, want):
        np.testing.assert_allclose(o.numpy(), w.numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="functions with out=... arguments don't support"):
        aten.native_layer_norm.out(x.requires_grad_(), [3], None, None, 1e-5,
                                   out0=ember.empty(0), out1=ember.empty(0),
                                   out2=ember.empty(0))


def test_inplace_overload():
    x = ember.tensor([1.0, -2.0])
    v = x._version
    assert aten.add_.Tensor(x, ember.tensor([1.0, 1.0]), alpha=2) is x
    np.testing.assert_allclose(x.numpy(), [3.0, 0.0])
    assert x._version > v
    assert aten.neg_.default(x) is x
    np.testing.assert_allclose(x.numpy(), [-3.0, 0.0])
    assert str(aten.add_.Tensor._schema) == \
        "aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)"


def test_autograd_through_overloads():
    a = ember.randn(2, 3, requires_grad=True)
    b = ember.randn(3, 4, requires_grad=True)
    aten.mm.default(a, b).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.broadcast_to(b.detach().numpy().sum(1),
                                                               (2, 3)), rtol=1e-6)
    out, mean, rstd = aten.native_layer_norm.default(a, [3], None, None, 1e-5)
    assert out.requires_grad and not mean.requires_grad and not rstd.requires_grad


def test_views_share_memory():
    x = ember.zeros(2, 3)
    v = aten.view.default(x, [3, 2])
    s = aten.slice.Tensor(x, 1, 1, 3)
    v.fill_(1.0)
    assert x.numpy().sum() == 6.0 and s.numpy().sum() == 4.0


def test_errors():
    with pytest.raises(AttributeError,
                       match="^'_OpNamespace' 'aten' object has no attribute 'nonexistent'$"):
        _ = aten.nonexistent
    with pytest.raises(AttributeError,
                       match="^The underlying op of 'aten.add' has no overload name 'foo'$"):
        _ = aten.add.foo
    with pytest.raises(AttributeError, match="has no overload name 'default'"):
        _ = aten.add.default
    with pytest.raises(RuntimeError, match="Expected a value of type 'Tensor' for argument "
                                           "'other'"):
        aten.eq.Tensor(ember.ones(2), 1)
    # (PyTorch takes a number for a Tensor in add/sub/mul/div/true_divide/floor_divide only)
    assert aten.add.Tensor(ember.ones(2), 1).tolist() == [2.0, 2.0]
    assert aten.mul_.Tensor(ember.ones(2), 3).tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError, match="missing value for argument 'mat2'"):
        aten.mm.default(ember.ones(2, 2))
    # a schema argument that Ember's function lacks: accepted at its default, else refused
    x = ember.tensor([-1.0, 1.0])
    np.testing.assert_allclose(aten.elu.default(x, 1.0, 1).numpy(),
                               [np.expm1(-1.0), 1.0], rtol=1e-6)
    with pytest.raises(NotImplementedError, match="Ember does not support argument 'scale'"):
        aten.elu.default(x, 1.0, 2.0)


def test_one_element_tensors_for_numbers_as_pytorch():
    # PyTorch reads int, SymInt and float arguments from one-element tensors (any dtype),
    # int lists element by element; a Scalar argument refuses tensors, 0-d ones included
    x = ember.arange(4.0).reshape(2, 2)
    assert aten.select.int(x, ember.tensor(0), ember.tensor(1.0)).tolist() == [2.0, 3.0]
    assert aten.select.int(x, 0, ember.tensor([1])).tolist() == [2.0, 3.0]
    assert aten.sum.dim_IntList(x, [ember.tensor(0)]).tolist() == [2.0, 4.0]
    assert aten.dropout.default(x, ember.tensor(0.0), False).tolist() == x.tolist()
    with pytest.raises(RuntimeError, match="Unable to cast tensor\\(\\[1, 0\\].*\\) to int"):
        aten.select.int(x, 0, ember.tensor([1, 0]))
    two = ember.tensor(2)  # (the strict device's repr names it)
    with pytest.raises(RuntimeError) as info:
        aten.add.Scalar(x, two)
    assert str(info.value) == (
        "aten::add() Expected a value of type 'number' for argument 'other' but instead found "
        f"type 'Tensor'.\nPosition: 1\nValue: {two!r}\nDeclaration: aten::add.Scalar(Tensor "
        f"self, Scalar other, Scalar alpha=1) -> Tensor\nCast error details: Cannot cast "
        f"{two!s} to number")
    with pytest.raises(RuntimeError, match="Cannot cast a to number"):
        aten.leaky_relu.default(x, "a")


def test_pickle_roundtrip():
    assert pickle.loads(pickle.dumps(aten.add.Tensor)) is aten.add.Tensor
    assert pickle.loads(pickle.dumps(aten.relu.default)) is aten.relu.default


def test_torch_function_mode_sees_the_overload():
    seen = []

    class Mode(ember.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    a = ember.ones(2, 2)
    with Mode():
        out = aten.mm.default(a, a)
    assert seen == [aten.mm.default]  # once: the Ember op it runs is below the mode
    np.testing.assert_allclose(out.numpy(), 2 * np.ones((2, 2)))


def test_export_records_the_ember_ops(tmp_path):
    def f(x):
        y = aten.relu.default(aten.add.Tensor(x, x, alpha=2))
        return aten.slice.Tensor(aten.view.default(y, [3, 2]), 0, 1, 3)

    x = ember.randn(2, 3)
    ep = ember.export.export(f, (x,))
    assert [n.op for n in ep.graph.nodes] == ["add", "relu", "Tensor.view", "getitem"]
    path = tmp_path / "aten.ember"
    ember.export.save(ep, path)
    np.testing.assert_allclose(ember.export.load(path).module()(x).numpy(), f(x).numpy())


def test_lazy_and_reachable_as_torch():
    code = (
        "import sys, ember\n"
        "assert 'ember.ops._aten' not in sys.modules\n"
        "import ember.as_torch\n"
        "ember.as_torch.install()\n"
        "import torch\n"
        "assert torch is ember\n"
        "op = torch.ops.aten.add.Tensor\n"
        "assert op is ember.ops.aten.add.Tensor\n"
        "x = torch.ones(2)\n"
        "assert op(x, x).tolist() == [2.0, 2.0]\n"
        "print('ok')\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"


def test_no_warnings_on_lookup():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert aten.native_batch_norm.default is aten.native_batch_norm.default


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin"])
def test_sparse_kernels_match_torch(reduce):
    """``_sparse_mm_reduce_impl`` and ``_sparse_addmm`` (torch_geometric registers handlers
    for them at import): PyTorch's values; the reduce's saved argmax is empty, as PyTorch's
    is when nothing requires grad."""
    dense = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -3.0], [0.0, 0.0, 4.0]])
    other = np.arange(6.0).reshape(3, 2) - 2.0
    got, arg = aten._sparse_mm_reduce_impl.default(ember.tensor(dense).to_sparse_csr(),
                                                    ember.tensor(other), reduce)
    assert arg.numel() == 0 and arg.dtype is ember.int64
    added = aten._sparse_addmm.default(ember.ones(3, 2, dtype=ember.float64),
                                       ember.tensor(dense).to_sparse(),
                                       ember.tensor(other), beta=2, alpha=0.5)
    np.testing.assert_allclose(added.numpy(), 2 + 0.5 * dense @ other)
    torch = pytest.importorskip("torch")
    want, _ = torch.ops.aten._sparse_mm_reduce_impl.default(
        torch.tensor(dense).to_sparse_csr(), torch.tensor(other), reduce)
    np.testing.assert_allclose(got.numpy(), want.numpy())
    want_added = torch.ops.aten._sparse_addmm.default(
        torch.ones(3, 2, dtype=torch.float64), torch.tensor(dense).to_sparse(),
        torch.tensor(other), beta=2, alpha=0.5)
    np.testing.assert_allclose(added.numpy(), want_added.numpy())
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, mean, amax"):
        aten._sparse_mm_reduce_impl.default(ember.tensor(dense).to_sparse_csr(),
                                            ember.tensor(other), "prod")
