"""``ember.utils._python_dispatch.TorchDispatchMode``: modes that see ATen overloads."""

import threading

import numpy as np
import pytest

import ember
from ember import overrides
from ember.ops import aten
from ember.utils import _python_dispatch as pd
from ember.utils._python_dispatch import TorchDispatchMode


def _fmt(a, t=ember):
    if isinstance(a, t.device):  # (the strict test device is the default one there)
        return "device(D)"
    if isinstance(a, t.Tensor):
        return f"T{tuple(a.shape)}"
    if isinstance(a, (list, tuple)):
        return "[" + ", ".join(_fmt(x, t) for x in a) + "]"
    return repr(a).replace("ember", "torch")


def _logging_mode(base, t=ember):
    class Log(base):
        def __init__(self):
            super().__init__()
            self.calls = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            self.calls.append(
                f"{func}({', '.join(_fmt(a, t) for a in args)}"
                f"{''.join(f', {k}={_fmt(v, t)}' for k, v in kwargs.items())})")
            return func(*args, **kwargs)

    return Log


Log = _logging_mode(TorchDispatchMode)


def test_forward_and_backward_are_seen_and_gradients_flow():
    ember.manual_seed(0)
    lin = ember.nn.Linear(3, 2)
    x = ember.randn(4, 3)
    with Log() as log:
        loss = (ember.relu(lin(x)) * 2).sum()
        loss.backward()
    assert log.calls[:5] == ["aten.t.default(T(2, 3))",
                             "aten.addmm.default(T(2,), T(4, 3), T(3, 2))",
                             "aten.relu.default(T(4, 2))", "aten.mul.Tensor(T(4, 2), 2)",
                             "aten.sum.default(T(4, 2))"]
    assert any(c.startswith("aten.threshold_backward.default") for c in log.calls[5:])
    g = [p.grad.clone() for p in lin.parameters()]
    for p in lin.parameters():
        p.grad = None
    (ember.relu(lin(x)) * 2).sum().backward()
    for a, p in zip(g, lin.parameters()):
        np.testing.assert_array_equal(a.numpy(), p.grad.numpy())


def test_func_is_the_aten_overload_and_args_take_the_schema_form():
    seen = []

    class Keep(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append((func, args, kwargs))
            return func(*args, **(kwargs or {}))

    x, y = ember.randn(4, 3), ember.randn(4, 3)
    with Keep():
        ember.add(x, y, alpha=2)
        x.sum(0, keepdim=False)
        x.mean(dim=1, keepdim=True)
    (f1, a1, k1), (f2, a2, k2), (f3, a3, k3) = seen
    assert f1 is aten.add.Tensor and f1.overloadpacket is aten.add
    assert f1._schema.name == "aten::add" and f1.name() == "aten::add.Tensor"
    assert len(a1) == 2 and a1[0] is x and a1[1] is y and k1 == {"alpha": 2}
    assert f2 is aten.sum.dim_IntList and a2[0] is x and a2[1:] == ([0],) and k2 == {}
    assert f3 is aten.mean.dim and a3[0] is x and a3[1:] == ([1], True) and k3 == {}


def test_handler_result_is_the_result_and_inner_calls_are_not_seen():
    class PlusOne(TorchDispatchMode):
        calls = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            PlusOne.calls += 1
            out = func(*args, **(kwargs or {}))
            return out + 1 if func is aten.relu.default else out  # mode off: not seen

    x = ember.tensor([-1.0, 2.0])
    with PlusOne():
        y = ember.relu(x)
    assert y.tolist() == [1.0, 3.0] and PlusOne.calls == 1


def test_modes_nest_innermost_first_and_function_modes_run_before():
    order = []

    class D(TorchDispatchMode):
        def __init__(self, tag):
            super().__init__()
            self.tag = tag

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            order.append((self.tag, str(func)))
            return func(*args, **(kwargs or {}))

    class F(overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            order.append(("function", func.__name__))
            return func(*args, **(kwargs or {}))

    x = ember.ones(2)
    with D("outer"), D("inner"), F():
        ember.neg(x)
    assert order == [("function", "neg"), ("inner", "aten.neg.default"),
                     ("outer", "aten.neg.default")]
    assert overrides._STATE.modes == () and pd._len_torch_dispatch_stack() == 0


def test_stack_helpers_and_errors_restore_the_stack():
    class Boom(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            raise ValueError("boom")

    m = Log()
    assert pd._get_current_dispatch_mode() is None and not pd.is_in_torch_dispatch_mode()
    with m:
        assert pd._get_current_dispatch_mode() is m
        assert pd._get_current_dispatch_mode_stack() == [m]
        with pd._pop_mode_temporarily() as popped:
            assert popped is m and pd._len_torch_dispatch_stack() == 0
            ember.ones(2) + 1  # not seen
        with pd._disable_current_modes() as modes:
            assert modes == [m]
            ember.ones(2) * 2  # not seen
        with pytest.raises(ValueError, match="boom"), Boom():
            ember.ones(2) - 1
        assert pd._get_current_dispatch_mode() is m
        ember.ones(2).neg()
    # (Boom's handler raised before calling func: m saw nothing of that call)
    assert m.calls == ["aten.ones.default([2], device=device(D), pin_memory=False)",
                       "aten.neg.default(T(2,))"]
    assert overrides._STATE.modes == ()
    a, b = Log(), Log()
    a.__enter__()
    b.__enter__()
    with pytest.raises(RuntimeError, match="out of order"):
        a.__exit__(None, None, None)
    b.__exit__(None, None, None)
    a.__exit__(None, None, None)
    with pytest.raises(NotImplementedError, match="must define __torch_dispatch__"), \
            TorchDispatchMode():
        ember.ones(1) + 1


def test_other_threads_do_not_see_the_mode():
    seen_in_thread = []

    def work():
        seen_in_thread.append(pd._get_current_dispatch_mode())
        ember.ones(3).exp()

    with Log() as log:
        t = threading.Thread(target=work)
        t.start()
        t.join()
    assert seen_in_thread == [None] and log.calls == []


def test_indexing_is_lowered_and_values_are_kept():
    x = ember.arange(12.0).reshape(4, 3)
    with Log() as log:
        a = x[1:3, 0]
        b = x[None, ..., 2]
        c = x[ember.tensor([0, 3])]
        y = x.clone()
        y[0] = 7.0
        y[1, 1:] = ember.zeros(2)
        y[ember.tensor([3])] = ember.ones(1, 3)
    assert log.calls == [
        "aten.slice.Tensor(T(4, 3), 0, 1, 3)", "aten.select.int(T(2, 3), 1, 0)",
        "aten.unsqueeze.default(T(4, 3), 0)", "aten.select.int(T(1, 4, 3), 2, 2)",
        "aten.lift_fresh.default(T(2,))", "aten.index.Tensor(T(4, 3), [T(2,)])",
        "aten.clone.default(T(4, 3))",
        "aten.select.int(T(4, 3), 0, 0)", "aten.fill_.Scalar(T(3,), 7.0)",
        "aten.zeros.default([2], device=device(D), pin_memory=False)",
        "aten.select.int(T(4, 3), 0, 1)", "aten.slice.Tensor(T(3,), 0, 1, 9223372036854775807)",
        "aten.copy_.default(T(2,), T(2,))",
        "aten.ones.default([1, 3], device=device(D), pin_memory=False)",
        "aten.lift_fresh.default(T(1,))", "aten.index_put_.default(T(4, 3), [T(1,)], T(1, 3))"]
    ref = np.arange(12.0).reshape(4, 3)
    np.testing.assert_array_equal(a.numpy(), ref[1:3, 0])
    np.testing.assert_array_equal(b.numpy(), ref[None, ..., 2])
    np.testing.assert_array_equal(c.numpy(), ref[[0, 3]])
    r = ref.copy()
    r[0] = 7
    r[1, 1:] = 0
    r[3] = 1
    np.testing.assert_array_equal(y.numpy(), r)


def test_conversions_that_do_nothing_dispatch_nothing():
    x = ember.randn(2, 3, device="cpu")
    with Log() as log:
        assert x.float() is x and x.to(ember.float32) is x and x.contiguous() is x
        assert x.cpu() is x
        d = x.double()
        t = x.t().contiguous()
        r = x.t().reshape(6)
    assert log.calls == ["aten._to_copy.default(T(2, 3), dtype=torch.float64)",
                         "aten.t.default(T(2, 3))",
                         "aten.clone.default(T(3, 2), memory_format=torch.contiguous_format)",
                         "aten.t.default(T(2, 3))",
                         "aten.clone.default(T(3, 2), memory_format=torch.contiguous_format)",
                         "aten._unsafe_view.default(T(3, 2), [6])"]
    assert d.dtype == ember.float64 and t.is_contiguous()
    np.testing.assert_array_equal(r.numpy(), x.numpy().T.reshape(6))


def test_the_mode_costs_nothing_after_exit():
    with Log():
        pass
    assert overrides._STATE.modes == ()
    x = ember.ones(2)
    with Log() as log:
        x + 1
    x + 1
    assert log.calls == ["aten.add.Tensor(T(2,), 1)"]


#: calls whose dispatch Ember gives as PyTorch 2.13 does (checked against it below)
_SAME_AS_TORCH = [
    "x + 1", "x + y", "torch.add(x, y, alpha=2)", "x * 2.5", "x - 1", "x / 2", "2 / x",
    "x ** 2", "2 ** x", "1 - x", "x.sum()", "x.sum(0)", "x.sum(0, keepdim=True)",
    "x.mean(dim=1)", "x[0]", "x[:, 1:]", "x[1:3, 0]", "x[None]", "x[..., 0]", "x[:]",
    "x.relu()", "torch.relu(x)", "x.view(12)", "x.view(-1, 2)", "x.reshape(12)",
    "x.permute(1, 0)", "x.t()", "x.T", "torch.cat([x, y])", "torch.stack([x, y], 1)",
    "x.max(1)", "x.max()", "x.to(torch.float64)", "x.to(torch.float32)", "x.float()",
    "x.double()", "x.t().contiguous()", "x.contiguous()", "x.split(2)", "x.chunk(2)",
    "x.clone()", "x.detach()", "x.exp()", "torch.zeros(2, 3)",
    "torch.ones(2, dtype=torch.float64)", "x.new_zeros(2)", "x.unsqueeze(0)", "x.squeeze()",
    "x.transpose(0, 1)", "x.abs()", "-x", "x > 0", "x == y", "torch.where(x > 0, x, y)",
    "x.clamp(min=0)", "x.softmax(-1)", "torch.nn.functional.softmax(x, dim=1)",
    "x.flatten()", "x @ y.T", "torch.mm(x, y.T)", "x.add_(1)", "x.mul_(y)", "x.zero_()",
    "x.fill_(2)", "x.argmax(1)", "x.topk(2)", "x.sort()", "x.var()", "x.expand(2, 4, 3)",
    "x.repeat(2, 1)", "x.masked_fill(x > 0, 0)", "x.type_as(y)", "x.int()", "x.sigmoid()",
    "torch.tanh(x)", "x.pow(3)", "x.sqrt()", "x % 2", "x // 2", "x.size(0)", "x.dim()",
    # composites, lowered as PyTorch decomposes them
    "F.linear(x, w, b)", "F.linear(x, w)", "F.linear(x3, w, b)", "F.conv2d(img, cw)",
    "F.conv2d(img, cw, padding=1, stride=2)", "F.layer_norm(x, (3,))", "F.embedding(t, emb)",
    "F.max_pool2d(img, 2)", "F.avg_pool2d(img, 2)", "F.adaptive_avg_pool2d(img, 1)",
    "F.mse_loss(x, y)", "F.gelu(x)", "F.silu(x)", "F.log_softmax(x, -1)",
    "F.dropout(x, 0.5, training=False)", "torch.bmm(x3, x3.transpose(1, 2))", "x3 @ w.T",
    "x @ w[0]", "F.pad(x, (1, 1))", "x.mean()", "x.std()", "x.expand_as(x3)", "x.mT",
    "x3.mT", "x.mH", "x.adjoint()", "x.uniform_(0, 2)", "x.normal_()", "x.random_(0, 5)",
    "x.random_(5)", "x.bernoulli_(0.3)", "x.exponential_()", "torch.arange(5)",
    "torch.arange(1, 5)", "torch.arange(0, 5, 2, dtype=torch.float64)", "x[torch.tensor([0, 2])]",
    "x.index_select(0, torch.tensor([0]))"]


def _trace(t, mode_cls, programs):
    out = {}
    for p in programs:
        t.manual_seed(0)
        env = {"torch": t, "F": t.nn.functional, "x": t.randn(4, 3), "y": t.randn(4, 3),
               "x3": t.randn(2, 4, 3), "w": t.randn(5, 3), "b": t.randn(5),
               "img": t.randn(2, 3, 8, 8), "cw": t.randn(4, 3, 3, 3),
               "t": t.tensor([0, 1, 2, 1]), "emb": t.randn(10, 3)}
        with mode_cls() as m:
            eval(p, env)
        out[p] = m.calls
    return out


def _model_trace(t, mode_cls):
    nn = t.nn
    t.manual_seed(0)
    cnn = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                        nn.Linear(4 * 4 * 4, 10), nn.LogSoftmax(dim=1))
    mlp = nn.Sequential(nn.Linear(3, 8), nn.GELU(), nn.LayerNorm(8), nn.Dropout(0.1),
                        nn.Linear(8, 2)).eval()
    x, x3 = t.randn(2, 1, 8, 8), t.randn(5, 4, 3)
    with mode_cls() as m:
        cnn(x)
        mlp(x3)
    # (PyTorch's autograd detaches the outputs it saves: its own calls, not the model's)
    return [c.partition("(")[0] for c in m.calls if not c.startswith("aten.detach.")]


def test_model_forward_dispatch_matches_pytorch():
    torch = pytest.importorskip("torch")
    from torch.utils._python_dispatch import TorchDispatchMode as TorchMode

    ours = _model_trace(ember, Log)
    assert ours == _model_trace(torch, _logging_mode(TorchMode, torch))
    assert ours[:6] == ["aten.convolution.default", "aten.relu.default",
                        "aten.max_pool2d_with_indices.default", "aten.view.default",
                        "aten.t.default", "aten.addmm.default"]


def test_lowered_composites_keep_values_and_gradients():
    ember.manual_seed(0)
    x = ember.randn(2, 4, 3, requires_grad=True)
    w = ember.randn(5, 3, requires_grad=True)
    b = ember.randn(5, requires_grad=True)
    img = ember.randn(2, 3, 8, 8, requires_grad=True)
    cw = ember.randn(4, 3, 3, 3, requires_grad=True)
    F = ember.nn.functional

    def run():
        return (F.linear(x, w, b).sum() + F.linear(x[0], w).square().sum()
                + F.conv2d(img, cw, padding=1).sum() + F.max_pool2d(img, 2).sum()
                + F.layer_norm(x, (3,)).square().sum()
                + F.cross_entropy(x[0], ember.tensor([0, 1, 2, 1])))

    ref = run()
    ref.backward()
    grads = [p.grad.clone() for p in (x, w, b, img, cw)]
    for p in (x, w, b, img, cw):
        p.grad = None
    with Log() as log:
        out = run()
    out.backward()
    assert "aten.addmm.default(T(5,), T(8, 3), T(3, 5))" in log.calls
    assert any(c.startswith("aten.nll_loss.default") for c in log.calls)
    np.testing.assert_allclose(out.item(), ref.item(), rtol=1e-5)
    for g, p in zip(grads, (x, w, b, img, cw)):
        np.testing.assert_allclose(p.grad.numpy(), g.numpy(), rtol=1e-4, atol=1e-5)


def test_dispatch_matches_pytorch():
    torch = pytest.importorskip("torch")
    from torch.utils._python_dispatch import TorchDispatchMode as TorchMode

    ours = _trace(ember, Log, _SAME_AS_TORCH)
    theirs = _trace(torch, _logging_mode(TorchMode, torch), _SAME_AS_TORCH)
    assert ours == theirs


# -- Tensor subclasses with __torch_dispatch__ ---------------------------------------------------

def _logging_tensor(t):
    """PyTorch's classic wrapper subclass, written against library ``t``."""
    from ember.utils._pytree import tree_map

    log = []

    class LoggingTensor(t.Tensor):
        @staticmethod
        def __new__(cls, elem):
            return t.Tensor._make_wrapper_subclass(cls, elem.size(), strides=elem.stride(),
                                                   dtype=elem.dtype, device=elem.device)

        def __init__(self, elem):
            self.elem = elem

        __torch_function__ = t._C._disabled_torch_function_impl

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            log.append(str(func))

            def unwrap(e):
                return e.elem if isinstance(e, LoggingTensor) else e

            def wrap(e):
                return LoggingTensor(e) if isinstance(e, t.Tensor) else e

            return tree_map(wrap, func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {})))

    return LoggingTensor, log


_SUBCLASS_PROGRAMS = [
    "F.linear(x, w)", "F.linear(x, w, b)", "(x * 2).relu().sum(0)", "x + y", "y - x",
    "x[0]", "x[:, 1:]", "x.t()", "x.view(6)", "x.double()", "x.float()",
    "torch.cat([x, x])", "x.max(1)", "x.sum().item()", "bool(x[0, 1] > 0)", "x.exp().mean()"]


def _subclass_trace(t, programs):
    out = {}
    for p in programs:
        LoggingTensor, log = _logging_tensor(t)
        t.manual_seed(0)
        x = LoggingTensor(t.arange(6.0).reshape(2, 3))
        env = {"torch": t, "F": t.nn.functional, "x": x, "y": t.ones(2, 3),
               "w": t.randn(4, 3), "b": t.randn(4)}
        r = eval(p, env)
        r = r[0] if isinstance(r, tuple) else r
        value = r.elem.tolist() if isinstance(r, LoggingTensor) else r
        out[p] = (log, type(r).__name__, value)
    return out


def test_wrapper_subclass_dispatch_matches_pytorch():
    torch = pytest.importorskip("torch")
    ours = _subclass_trace(ember, _SUBCLASS_PROGRAMS)
    theirs = _subclass_trace(torch, _SUBCLASS_PROGRAMS)
    for p in _SUBCLASS_PROGRAMS:
        assert ours[p][:2] == theirs[p][:2], p
        np.testing.assert_allclose(ours[p][2], theirs[p][2], rtol=1e-6, err_msg=p)


def test_wrapper_subclass_metadata_values_and_errors():
    LoggingTensor, log = _logging_tensor(ember)
    inner = ember.arange(6.0, device="cpu").reshape(2, 3).t()
    x = LoggingTensor(inner)
    assert x.shape == (3, 2) and x.stride() == (1, 3) and not x.is_contiguous()
    assert x.dtype == ember.float32 and x.device == inner.device and x.dim() == 2
    assert repr(x) == (f"LoggingTensor(size=(3, 2), dtype=ember.float32, "
                       f"device={str(inner.device)!r})")
    y = (x + 1).contiguous()
    assert isinstance(y, LoggingTensor) and y.is_contiguous()
    np.testing.assert_array_equal(y.elem.numpy(), inner.numpy() + 1)
    assert log == ["aten.add.Tensor", "aten.clone.default"]
    assert x.sum().item() == 15.0 and log[-1] == "aten._local_scalar_dense.default"
    with pytest.raises(RuntimeError, match="doesn't have storage"):
        x.tolist()
    with pytest.raises(RuntimeError, match="doesn't have storage"):
        x.numpy()
    with pytest.raises(RuntimeError, match="doesn't have storage"):
        np.asarray(x)
    # a kernel computing with the placeholder (an Ember function with no ATen op that
    # reads the array itself): an error naming what computed, never zeros
    with pytest.raises(RuntimeError, match="placeholder data of a wrapper subclass"):
        np.exp(x._data)
    with pytest.raises(RuntimeError, match="through sum"):
        np.sum(x._data)
    # a composite written with Ember ops reaches the subclass through them
    log.clear()
    r = ember.nn.functional.cross_entropy(x, ember.tensor([0, 1, 0], device="cpu"),
                                          label_smoothing=0.1)
    assert isinstance(r, LoggingTensor) and log[:2] == ["aten._log_softmax.default",
                                                        "aten.nll_loss.default"]
    ref = ember.nn.functional.cross_entropy(inner, ember.tensor([0, 1, 0], device="cpu"),
                                            label_smoothing=0.1)
    np.testing.assert_allclose(r.elem.item(), ref.item(), rtol=1e-6)


def test_modes_see_the_call_before_the_subclass():
    LoggingTensor, log = _logging_tensor(ember)
    x = LoggingTensor(ember.ones(2))
    with Log() as mode:
        y = x * 3
    assert mode.calls == ["aten.mul.Tensor(T(2,), 3)"] and log == ["aten.mul.Tensor"]
    assert isinstance(y, LoggingTensor) and y.elem.tolist() == [3.0, 3.0]


def test_plain_subclass_with_torch_dispatch_gets_its_class_back():
    from ember.utils._pytree import tree_map

    calls = []

    class Tagged(ember.Tensor):
        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            calls.append(str(func))

            def unwrap(t):
                return t.as_subclass(ember.Tensor) if isinstance(t, Tagged) else t

            return func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {}))

    t = ember.ones(2).as_subclass(Tagged)
    r = t + 1
    assert type(r) is Tagged and calls == ["aten.add.Tensor"]  # (Tensor's __torch_function__
    assert r.as_subclass(ember.Tensor).tolist() == [2.0, 2.0]  # converts, as PyTorch's)


def test_flatten_helpers():
    from ember.utils._python_dispatch import is_traceable_wrapper_subclass, transform_subclass

    class Pair(ember.Tensor):
        @staticmethod
        def __new__(cls, a, b):
            return ember.Tensor._make_wrapper_subclass(cls, a.shape, dtype=a.dtype)

        def __init__(self, a, b):
            self.a, self.b = a, b

        def __tensor_flatten__(self):
            return ["a", "b"], None

        @staticmethod
        def __tensor_unflatten__(inner, ctx, size, stride):
            return Pair(inner["a"], inner["b"])

        __torch_function__ = ember._C._disabled_torch_function_impl

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            raise AssertionError("not reached")

    p = Pair(ember.ones(2), ember.zeros(2))
    assert is_traceable_wrapper_subclass(p) and not is_traceable_wrapper_subclass(ember.ones(1))
    q = transform_subclass(p, lambda name, t: t + (1 if name == "a" else 2))
    assert type(q) is Pair and q.a.tolist() == [2.0, 2.0] and q.b.tolist() == [2.0, 2.0]


def test_plain_subclass_keeps_autograd_through_its_handler():
    from ember.utils._pytree import tree_map

    class Tagged(ember.Tensor):
        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            def unwrap(t):
                return t.as_subclass(ember.Tensor) if isinstance(t, Tagged) else t

            return func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {}))

    w = ember.tensor([1.0, 2.0], requires_grad=True)
    t = w.as_subclass(Tagged)
    loss = (t * t).sum()
    assert type(loss) is Tagged
    loss.backward()
    assert w.grad.tolist() == [2.0, 4.0]


def test_c_level_stack_helpers():
    from ember import _C

    class Opt(ember.Tensor):
        __torch_dispatch__ = _C._disabled_torch_dispatch_impl

    t = ember.ones(2).as_subclass(Opt)
    assert not overrides.has_torch_dispatch(Opt) and (t + 1).tolist() == [2.0, 2.0]
    m = Log()
    assert _C._len_torch_dispatch_stack() == 0
    _C._push_on_torch_dispatch_stack(m)
    try:
        assert _C._len_torch_dispatch_stack() == 1 and _C._get_dispatch_stack_at(0) is m
        assert _C._len_torch_function_stack() == 0  # (the internal bridge is not counted)
        assert not _C._is_torch_function_mode_enabled()
        with overrides.BaseTorchFunctionMode():
            assert _C._len_torch_function_stack() == 1
    finally:
        assert _C._pop_torch_dispatch_stack() is m
    assert overrides._STATE.modes == ()


def _q8_class(detach_keeps_class: bool):
    from ember.utils._pytree import tree_map

    class Q8(ember.Tensor):
        @staticmethod
        def __new__(cls, q, scale):
            return ember.Tensor._make_wrapper_subclass(cls, q.shape, dtype=ember.float32,
                                                       device=q.device)

        def __init__(self, q, scale):
            self.q, self.scale = q, scale

        __torch_function__ = ember._C._disabled_torch_function_impl

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            if func is aten.detach.default and detach_keeps_class:
                return Q8(args[0].q, args[0].scale)

            def deq(t):
                return t.q.float() * t.scale if isinstance(t, Q8) else t

            return func(*tree_map(deq, args), **tree_map(deq, kwargs or {}))

    return Q8


def test_quantized_weight_subclass_in_a_module():
    Q8 = _q8_class(True)
    ember.manual_seed(0)
    w = ember.randn(4, 3)
    scale = w.abs().max() / 127
    qw = Q8((w / scale).round().to(ember.int8), scale)
    lin = ember.nn.Linear(3, 4, bias=False)
    lin.weight = ember.nn.Parameter(qw, requires_grad=False)
    assert isinstance(lin.weight, Q8) and isinstance(lin.weight, ember.nn.Parameter)
    assert not lin.weight.requires_grad and lin.weight.q is qw.q
    x = ember.randn(2, 3, requires_grad=True)
    y = lin(x)
    deq = qw.q.float() * scale
    np.testing.assert_allclose(y.detach().numpy(), (x.detach() @ deq.T).numpy(), rtol=1e-6)
    y.sum().backward()  # the activation's gradient flows through the handler's own ops
    np.testing.assert_allclose(x.grad.numpy(), deq.sum(0).expand(2, 3).numpy(), rtol=1e-6)
    Lossy = _q8_class(False)
    with pytest.raises(RuntimeError, match="requires that detach\\(\\) returns an instance of "
                                           "the same type, but return type Tensor"):
        ember.nn.Parameter(Lossy(qw.q, scale), requires_grad=False)


def test_wrapper_weight_through_module_conversion_and_load_state_dict():
    # the pattern of PyTorch's swap_tensors recipe: a wrapper subclass that implements only
    # detach and _to_copy, a __torch_function__ that runs the rest with subclass dispatch
    # off (which still reaches __torch_dispatch__, as in PyTorch), and module_load
    nn = ember.nn

    class QW(ember.Tensor):
        @staticmethod
        def __new__(cls, elem, scale):
            return ember.Tensor._make_wrapper_subclass(
                cls, elem.shape, dtype=elem.dtype, device=elem.device, strides=elem.stride(),
                storage_offset=elem.storage_offset())

        def __init__(self, elem, scale):
            self.elem, self.scale = elem, scale

        @classmethod
        def __torch_dispatch__(cls, func, types, args, kwargs):
            if func in (aten.detach.default, aten._to_copy.default):
                return cls(func(args[0].elem, *args[1:], **kwargs), args[0].scale)
            raise NotImplementedError(f"Unsupported function {func}")

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is ember.Tensor.module_load:
                return QW(args[1], args[0].scale)
            with ember._C.DisableTorchFunctionSubclass():
                return func(*args, **kwargs)

    try:
        ember.__future__.set_swap_module_params_on_conversion(True)
        m = nn.Linear(3, 5)
        m.weight = nn.Parameter(QW(m.weight.detach(), 0.5))
        wid = id(m.weight)
        m.bfloat16()
        assert id(m.weight) == wid and type(m.weight).__name__ == "QW"
        assert m.weight.dtype == ember.bfloat16 and m.weight.elem.dtype == ember.bfloat16
        with pytest.raises(NotImplementedError, match="Unsupported function aten.add.Tensor"):
            m.weight + 1
        with ember.device("meta"):
            m = nn.Linear(3, 5)
        m.weight = nn.Parameter(QW(m.weight.detach(), 0.5), requires_grad=False)
        sd = nn.Linear(3, 5).state_dict()
        m.load_state_dict(sd, assign=True)
        assert type(m.weight).__name__ == "QW" and m.weight.scale == 0.5
        np.testing.assert_array_equal(m.weight.elem.numpy(), sd["weight"].numpy())
        assert m.bias.device.type != "meta"
    finally:
        ember.__future__.set_swap_module_params_on_conversion(False)
