"""``ember.autograd.graph.saved_tensors_hooks``, ``save_on_cpu`` and
``disable_saved_tensors_hooks``: what the hooks see and when, nesting, threads, custom Functions,
in-place changes, errors in PyTorch's words, and parity with PyTorch's call counts."""

from __future__ import annotations

import re
import threading

import numpy as np
import pytest
from testutils import assert_allclose, assert_same_error, randn64, to_numpy, to_torch

import ember
from ember.autograd.graph import (
    disable_saved_tensors_hooks,
    has_packed_values,
    save_on_cpu,
    saved_tensors_hooks,
)

FREED = "Trying to backward through the graph a second time"


class Log:
    """Pack and unpack hooks that record what they get and pass the tensor through."""

    def __init__(self, pack=None, unpack=None):
        self.packed: list = []
        self.unpacked: list = []
        self._pack = pack or (lambda t: t)
        self._unpack = unpack or (lambda p: p)

    def pack(self, t):
        self.packed.append(t)
        return self._pack(t)

    def unpack(self, p):
        self.unpacked.append(p)
        return self._unpack(p)

    def hooks(self):
        return saved_tensors_hooks(self.pack, self.unpack)


# -- what the hooks see ---------------------------------------------------------------------------

def test_pack_gets_each_saved_input_once_and_unpack_runs_in_the_backward():
    a, b = randn64(3, rng=0), randn64(3, rng=1)
    log = Log()
    with log.hooks():
        y = a * b
    # mul saves both inputs: the tensors themselves reach the pack hook, nothing is unpacked
    assert len(log.packed) == 2 and {id(t) for t in log.packed} == {id(a), id(b)}
    assert log.unpacked == []
    y.sum().backward()
    assert len(log.unpacked) == 2
    assert_allclose(a.grad, b, rtol=0)
    assert_allclose(b.grad, a, rtol=0)


def test_pack_gets_a_saved_output_with_its_grad_fn():
    a = randn64(4, rng=2)
    log = Log()
    with log.hooks():
        y = a.exp()
    assert len(log.packed) == 1 and log.packed[0] is y
    assert log.packed[0].grad_fn is y.grad_fn
    y.sum().backward()
    assert len(log.unpacked) == 1
    assert_allclose(a.grad, np.exp(to_numpy(a)), rtol=1e-12)


def test_pack_runs_without_grad_mode_and_only_for_recorded_ops():
    a, c = randn64(3, rng=3), randn64(3, rng=4, requires_grad=False)
    modes = []
    with saved_tensors_hooks(lambda t: modes.append(ember.is_grad_enabled()) or t, lambda p: p):
        with ember.no_grad():
            a * a  # nothing recorded, nothing saved
        c * c  # no input requires grad: nothing recorded
        assert modes == []
        a * a
    assert modes == [False, False]
    assert ember.is_grad_enabled()


def test_the_hooks_replace_what_the_graph_keeps():
    # pack returns a key, not a tensor; the values live in a store of our own
    store: dict = {}

    def pack(t):
        key = len(store)
        store[key] = t.detach().clone()
        return key

    a = randn64(5, rng=5)
    with saved_tensors_hooks(pack, lambda key: store[key]):
        y = (a.sin() * a).tanh()
    node = y.grad_fn
    assert has_packed_values(node) and not hasattr(node.out_data, "shape")
    expected = ember.autograd.grad((a.sin() * a).tanh().sum(), a)[0]
    y.sum().backward()
    assert_allclose(a.grad, expected, rtol=1e-12)


def test_arrays_an_op_keeps_are_packed_as_tensors():
    # dropout keeps its mask: the hooks get it as a tensor and give it back for the backward
    a = randn64(200, rng=6)
    log = Log(pack=lambda t: t.clone())
    ember.manual_seed(0)
    with log.hooks():
        y = ember.dropout(a, 0.5, True)
    ember.manual_seed(0)
    expected = ember.autograd.grad(ember.dropout(a, 0.5, True).sum(), a)[0]
    assert len(log.packed) == 1 and not log.packed[0].requires_grad
    assert log.packed[0].shape == a.shape
    y.sum().backward()
    assert len(log.unpacked) == 1
    assert_allclose(a.grad, expected, rtol=0)


def test_unpack_may_return_a_copy_and_gradients_of_gradients_still_flow():
    a = randn64(4, rng=7)
    with saved_tensors_hooks(lambda t: t.detach().clone(), lambda p: p):
        y = (a * a * a).sum()
        z = a.exp().sum()
    g = ember.autograd.grad(y, a, create_graph=True)[0]
    assert_allclose(ember.autograd.grad(g.sum(), a)[0], 6 * to_numpy(a), rtol=1e-12)
    # exp saves its output: the unpacked copy is joined to exp's node, so its gradient flows
    g = ember.autograd.grad(z, a, create_graph=True)[0]
    assert g.grad_fn is not None
    assert_allclose(ember.autograd.grad(g.sum(), a)[0], np.exp(to_numpy(a)), rtol=1e-12)


def test_saved_tensors_outside_the_backward_are_unpacked_on_each_access():
    a, b = randn64(3, rng=8), randn64(3, rng=9)
    log = Log()
    with log.hooks():
        y = a * b
        e = a.exp()
    # (PyTorch's built-in nodes name their saved values; ``saved_tensors`` is a custom
    # Function's: torchviz tells the two apart by it)
    assert not hasattr(y.grad_fn, "saved_tensors")
    saved = (y.grad_fn._saved_self, y.grad_fn._saved_other)
    assert len(log.unpacked) == 2 and any(s is a for s in saved) and any(s is b for s in saved)
    _ = y.grad_fn._saved_self
    assert len(log.unpacked) == 3
    assert_allclose(e.grad_fn.output(), np.exp(to_numpy(a)), rtol=0)
    assert len(log.unpacked) == 4


# -- backward twice -------------------------------------------------------------------------------

def test_retain_graph_unpacks_again_and_without_it_the_values_are_freed():
    a = randn64(3, rng=10)
    log = Log()
    with log.hooks():
        y = (a * a).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert len(log.packed) == 2 and len(log.unpacked) == 4
    assert_allclose(a.grad, 4 * to_numpy(a), rtol=1e-12)
    assert not has_packed_values(y.grad_fn.next_functions[0][0])  # freed by the backward
    with pytest.raises(RuntimeError, match=FREED):
        y.backward()


# -- nesting and threads --------------------------------------------------------------------------

def test_the_innermost_hooks_apply_and_the_outer_ones_come_back():
    a = randn64(3, rng=11)
    outer, inner = Log(), Log()
    with outer.hooks():
        y1 = a.exp()
        with inner.hooks():
            y2 = a.sin()
        y3 = a.tanh()
    y4 = a.cos()
    assert len(outer.packed) == 2 and outer.packed[0] is y1 and outer.packed[1] is y3
    assert len(inner.packed) == 1 and inner.packed[0] is a
    assert not has_packed_values(y4.grad_fn)
    (y1 + y2 + y3 + y4).sum().backward()
    # each value is unpacked by the hook that packed it, whatever is active at backward time
    assert len(outer.unpacked) == 2 and len(inner.unpacked) == 1


def test_hooks_are_per_thread():
    a = randn64(3, rng=12)
    main, worker = Log(), Log()
    results: dict = {}
    entered, go_on = threading.Event(), threading.Event()

    def work():
        with worker.hooks():
            entered.set()
            go_on.wait(30)
            results["w"] = a.sin()
        results["plain"] = a.cos()

    thread = threading.Thread(target=work)
    with main.hooks():
        thread.start()
        entered.wait(30)
        y = a.exp()  # the worker's hooks are on now: the main thread still uses its own
        go_on.set()
        thread.join(30)
        results["other"] = None
        t2 = threading.Thread(target=lambda: results.update(other=a.tanh()))
        t2.start()
        t2.join(30)
    assert not thread.is_alive() and not t2.is_alive()
    assert len(main.packed) == 1 and main.packed[0] is y
    assert len(worker.packed) == 1 and worker.packed[0] is a
    assert not has_packed_values(results["plain"].grad_fn)
    assert not has_packed_values(results["other"].grad_fn)  # main's hooks did not reach it


# -- save_on_cpu ----------------------------------------------------------------------------------

def _mlp_grads(hooks, seed=3):
    rng = np.random.default_rng(seed)
    ws = [ember.tensor(rng.standard_normal((8, 8)) / 3, requires_grad=True) for _ in range(3)]
    x = ember.tensor(rng.standard_normal((5, 8)), requires_grad=True)
    ember.manual_seed(1)
    with hooks:
        h = x
        for w in ws:
            h = ember.dropout((h @ w).tanh(), 0.3, True)
        loss = (h.log_softmax(1) * h).sum()
    loss.backward()
    return [to_numpy(t.grad) for t in ws + [x]]


def test_save_on_cpu_gives_the_same_gradients():
    import contextlib

    plain = _mlp_grads(contextlib.nullcontext())
    on_cpu = _mlp_grads(save_on_cpu())
    pinned = _mlp_grads(save_on_cpu(pin_memory=True))
    for p, c, q in zip(plain, on_cpu, pinned):
        np.testing.assert_array_equal(p, c)
        np.testing.assert_array_equal(p, q)


def test_save_on_cpu_keeps_cpu_tensors_and_gives_back_the_original_device():
    a = randn64(4, rng=13)
    hooks = save_on_cpu()
    seen = []

    def pack(t):
        packed = hooks.pack_hook(t)
        seen.append((t, packed))
        return packed

    with saved_tensors_hooks(pack, hooks.unpack_hook):
        y = a.exp()
    (t, (device, kept)), = seen
    assert device == a.device and kept.device.type == "cpu"
    if a.device.type == "cpu":
        assert kept is t  # as in PyTorch: tensor.cpu() of a CPU tensor is itself, no copy
    else:
        assert kept is not t
    unpacked = hooks.unpack_hook((device, kept))
    assert unpacked.device == a.device
    y.sum().backward()
    assert_allclose(a.grad, np.exp(to_numpy(a)), rtol=1e-12)


# -- disable_saved_tensors_hooks ------------------------------------------------------------------

def test_disable_saved_tensors_hooks_refuses_hooks_with_its_message():
    with disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="^no hooks here$"):
            with save_on_cpu():
                pass
        with disable_saved_tensors_hooks("inner message"):
            with pytest.raises(RuntimeError, match="^inner message$"):
                saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()
        with pytest.raises(RuntimeError, match="^no hooks here$"):  # the outer one is back
            saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()
    with save_on_cpu():  # enabled again
        pass
    with save_on_cpu():  # entering it while hooks are on is an error too
        with pytest.raises(RuntimeError, match="^busy$"):
            with disable_saved_tensors_hooks("busy"):
                pass
        with save_on_cpu():  # and it left nothing disabled
            pass


def test_disable_is_per_thread():
    errors = []
    with disable_saved_tensors_hooks("not in this thread"):
        def work():
            try:
                with save_on_cpu():
                    pass
            except RuntimeError as exc:  # pragma: no cover - the failure being tested for
                errors.append(exc)

        thread = threading.Thread(target=work)
        thread.start()
        thread.join(30)
    assert not thread.is_alive() and errors == []


def test_disable_errors_match_torch():
    torch = pytest.importorskip("torch")

    def refused(lib):
        with lib.autograd.graph.disable_saved_tensors_hooks("feature X refuses hooks"):
            with lib.autograd.graph.save_on_cpu():
                pass

    def busy(lib):
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            with lib.autograd.graph.disable_saved_tensors_hooks("hooks are on"):
                pass

    assert_same_error(lambda: refused(ember), lambda: refused(torch))
    assert_same_error(lambda: busy(ember), lambda: busy(torch))


# -- custom Functions -----------------------------------------------------------------------------

class Square(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x, reads):
        ctx.reads = reads
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        for _ in range(ctx.reads - 1):
            _ = ctx.saved_tensors
        (x,) = ctx.saved_tensors
        return 2 * grad * x, None


def test_function_save_for_backward_goes_through_the_hooks():
    a = randn64(3, rng=14)
    log = Log(pack=lambda t: t.detach().clone())
    with log.hooks():
        y = Square.apply(a, 2)
    assert len(log.packed) == 1 and log.packed[0] is a
    y.sum().backward()
    assert len(log.unpacked) == 2  # ctx.saved_tensors unpacks on each access, as in PyTorch
    assert_allclose(a.grad, 2 * to_numpy(a), rtol=1e-12)


# -- in-place changes -----------------------------------------------------------------------------

def _modified_after_save(lib, x, hooks: bool):
    a = x * 1
    if hooks:
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            y = a * a
    else:
        y = a * a
    with lib.no_grad():
        a.add_(1)
    return lib.autograd.grad(y.sum(), x)[0]


def test_in_place_change_after_save_raises_without_hooks():
    x = randn64(3, rng=15)
    with pytest.raises(RuntimeError, match=re.escape(
            "one of the variables needed for gradient computation has been modified by an "
            "inplace operation: [ember.DoubleTensor [3]], which is output 0 of Mul, is at "
            "version 1; expected version 0 instead.")):
        _modified_after_save(ember, x, hooks=False)


def test_in_place_change_after_save_with_hooks_as_in_torch():
    # PyTorch does not track versions through saved-tensor hooks (the hooks decide what comes
    # back): the identity hooks hand back the modified tensor, and the gradient uses it
    torch = pytest.importorskip("torch")
    x = randn64(3, rng=16)
    tx = to_torch(x).requires_grad_()
    ours = _modified_after_save(ember, x, hooks=True)
    theirs = _modified_after_save(torch, tx, hooks=True)
    assert_allclose(ours, theirs, rtol=1e-12)
    assert_allclose(ours, 2 * (to_numpy(x) + 1), rtol=1e-12)
    # without hooks both raise the same error (named after each library)
    with pytest.raises(RuntimeError) as theirs_error:
        _modified_after_save(torch, tx, hooks=False)
    with pytest.raises(RuntimeError) as ours_error:
        _modified_after_save(ember, x, hooks=False)
    assert str(ours_error.value) == str(theirs_error.value).replace("torch", "ember")


def test_a_pack_hook_modifying_its_input_is_an_error():
    a = randn64(3, rng=17)
    b = randn64(3, rng=18, requires_grad=False)
    with saved_tensors_hooks(lambda t: t.mul_(1), lambda t: t):
        with pytest.raises(RuntimeError, match="A saved tensor pack hook is modifying its input "
                                               "in place"):
            (a * 2) * b
    assert ember.is_grad_enabled()


# -- errors and parity with PyTorch ---------------------------------------------------------------

def test_errors_match_torch():
    torch = pytest.importorskip("torch")
    x = randn64(3, rng=19)
    tx = to_torch(x).requires_grad_()

    def unpack_not_a_tensor(lib, t):
        with lib.autograd.graph.saved_tensors_hooks(lambda s: s, lambda s: 3):
            y = t * t
        y.sum().backward()

    def pack_in_place(lib, t):
        c = lib.ones(3, dtype=t.dtype)
        with lib.autograd.graph.saved_tensors_hooks(lambda s: s.mul_(1), lambda s: s):
            (t * 2) * c

    def backward_twice(lib, t):
        with lib.autograd.graph.saved_tensors_hooks(lambda s: s, lambda s: s):
            y = (t * t).sum()
        y.backward()
        y.backward()

    assert_same_error(lambda: unpack_not_a_tensor(ember, x), lambda: unpack_not_a_tensor(torch, tx))
    assert_same_error(lambda: pack_in_place(ember, x), lambda: pack_in_place(torch, tx))
    assert_same_error(lambda: backward_twice(ember, x), lambda: backward_twice(torch, tx))


def test_exception_in_a_hook_propagates_and_leaves_no_state_behind():
    a = randn64(3, rng=20)

    def boom(t):
        raise ValueError("boom")

    with saved_tensors_hooks(boom, lambda p: p):
        with pytest.raises(ValueError, match="boom"):
            a * a
    assert ember.is_grad_enabled()
    assert not has_packed_values((a * a).grad_fn)


@pytest.mark.parametrize("op", ["mul", "div", "exp", "tanh", "sigmoid", "matmul", "relu", "sin",
                                "softmax", "log_softmax", "pow", "linear", "add", "sum"])
def test_call_counts_and_gradients_match_torch(op):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(21)
    a, b, w = (rng.standard_normal(s) for s in ((3, 4), (3, 4), (4, 5)))
    fns = {
        "mul": lambda lib, x, y, m: x * y, "div": lambda lib, x, y, m: x / y,
        "exp": lambda lib, x, y, m: x.exp(), "tanh": lambda lib, x, y, m: x.tanh(),
        "sigmoid": lambda lib, x, y, m: x.sigmoid(), "matmul": lambda lib, x, y, m: x @ m,
        "relu": lambda lib, x, y, m: x.relu(), "sin": lambda lib, x, y, m: x.sin(),
        "softmax": lambda lib, x, y, m: x.softmax(1),
        "log_softmax": lambda lib, x, y, m: x.log_softmax(1),
        "pow": lambda lib, x, y, m: x ** 2,
        "linear": lambda lib, x, y, m: lib.nn.functional.linear(x, m.T),
        "add": lambda lib, x, y, m: x + y, "sum": lambda lib, x, y, m: x.sum(),
    }

    def run(lib):
        counts = {"pack": 0, "unpack": 0}

        def pack(t):
            counts["pack"] += 1
            return t.detach().clone()

        def unpack(p):
            counts["unpack"] += 1
            return p

        xs = [lib.tensor(v, requires_grad=True) for v in (a, b, w)]
        with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
            y = fns[op](lib, *xs)
        (y * y).sum().backward()
        return counts, [to_numpy(x.grad) if x.grad is not None else None for x in xs]

    ours, ours_grads = run(ember)
    theirs, their_grads = run(torch)
    assert ours == theirs
    for g, tg in zip(ours_grads, their_grads):
        assert (g is None) == (tg is None)
        if g is not None:
            np.testing.assert_allclose(g, tg, rtol=1e-10, atol=1e-12)


# -- forward AD ----------------------------------------------------------------------------------

def test_forward_ad_tangents_through_packed_nodes():
    import ember.autograd.forward_ad as fwAD

    x = randn64(30, rng=22)

    def run(hooks: bool):
        x.grad = None
        ember.manual_seed(5)
        with fwAD.dual_level():
            d = fwAD.make_dual(x, ember.ones_like(x))
            if hooks:
                with save_on_cpu():
                    y = ember.dropout((d * d).exp(), 0.5, True)
            else:
                y = ember.dropout((d * d).exp(), 0.5, True)
            tangent = fwAD.unpack_dual(y).tangent
        y.sum().backward()
        return to_numpy(tangent), to_numpy(x.grad)

    plain, hooked = run(False), run(True)
    np.testing.assert_array_equal(plain[0], hooked[0])
    np.testing.assert_array_equal(plain[1], hooked[1])


def test_named_saved_values():
    """``grad_fn._saved_self`` / ``_saved_other`` / ``_saved_result`` (pytorch/tutorials'
    saved-tensors-hooks tutorial reads them): the tensors the op saved, unpacked by the
    hooks in force when they were saved; PyTorch's errors once freed or modified."""
    a = ember.randn(5, requires_grad=True)
    b = ember.ones(5, requires_grad=True)
    y = a * b
    assert y.grad_fn._saved_self is a and y.grad_fn._saved_other is b
    e = ember.exp(a)
    assert e.grad_fn._saved_result.equal(e)
    with pytest.raises(AttributeError, match="'ExpBackward0' object has no attribute "
                                             "'_saved_other'"):
        _ = e.grad_fn._saved_other
    with pytest.raises(AttributeError, match="_saved_bogus"):
        _ = y.grad_fn._saved_bogus
    assert (a * 2).grad_fn._saved_other.item() == 2
    with ember.autograd.graph.saved_tensors_hooks(lambda t: t * 1, lambda t: t + 1):
        z = a * b
    assert z.grad_fn._saved_self.equal(a + 1)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        _ = y.grad_fn._saved_self
    w = a.clone()
    m = w * a
    w.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _ = m.grad_fn._saved_self


def test_named_saved_values_as_pytorch_reads_them():
    """``a * 3`` keeps no self (no gradient reads it): PyTorch's ``_saved_self`` is None
    there, and a built-in node has no ``saved_tensors`` (torchviz tells custom Functions'
    nodes apart by it)."""
    a = randn64(3, rng=12)
    y = a * 3
    assert y.grad_fn._saved_self is None and y.grad_fn._saved_other.item() == 3
    assert not hasattr(y.grad_fn, "saved_tensors") and not hasattr(a.exp().grad_fn,
                                                                    "saved_tensors")
    with pytest.raises(AttributeError, match="'ExpBackward0' object has no attribute "
                                             "'_saved_self'"):
        a.exp().grad_fn._saved_self  # noqa: B018 - the attribute raises
    b = randn64(3, rng=13)
    z = a * b
    assert z.grad_fn._saved_self is a and z.grad_fn._saved_other is b
