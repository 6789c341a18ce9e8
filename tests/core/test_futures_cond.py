"""ember.futures (torch.futures), ember.jit.fork/wait, and ember.cond (torch.cond)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import ember
from ember._cond import cond
from ember.futures import Future, collect_all, wait_all


def test_future_result_wait_value_done():
    f = Future()
    assert not f.done()
    with pytest.raises(RuntimeError, match="not completed"):
        f.value()
    f.set_result(3)
    assert f.done() and f.wait() == 3 and f.value() == 3
    with pytest.raises(RuntimeError, match="Attempting to mark a completed Future as complete "
                       "again. Note that a Future can only be marked completed once."):
        f.set_result(4)


def test_future_exception_propagates_through_wait_value_and_then():
    g = Future()
    g.set_exception(ValueError("boom"))
    for read in (g.wait, g.value):
        with pytest.raises(ValueError, match="boom"):
            read()
    h = g.then(lambda fut: fut.value())
    with pytest.raises(RuntimeError, match="Got the following error when running the "
                       "callback: ValueError: boom"):
        h.wait()
    with pytest.raises(AssertionError, match="3 is of type <class 'int'>, not an Exception."):
        Future().set_exception(3)


def test_then_chains_and_callbacks_run_once(capsys):
    f = Future()
    calls = []
    f.add_done_callback(lambda fut: calls.append(fut.value()))
    chained = f.then(lambda fut: fut.value() + 1).then(lambda fut: fut.value() * 10)
    assert not chained.done()
    f.set_result(1)
    assert calls == [1] and chained.wait() == 20
    f.add_done_callback(lambda fut: calls.append("late"))  # already done: runs at once
    assert calls == [1, "late"]

    def bad(fut):
        raise KeyError("cb")

    f.add_done_callback(bad)  # reported and ignored, as in PyTorch
    assert "KeyError" in capsys.readouterr().err


def test_future_is_thread_safe():
    futures = [Future() for _ in range(8)]
    seen = []
    lock = threading.Lock()
    for f in futures:
        f.add_done_callback(lambda fut: (lock.acquire(), seen.append(fut.value()),
                                         lock.release()))
    threads = [threading.Thread(target=f.set_result, args=(i,)) for i, f in enumerate(futures)]
    for t in threads:
        t.start()
    assert wait_all(futures) == list(range(8))
    for t in threads:
        t.join()
    assert sorted(seen) == list(range(8))
    racing = Future()
    errors = []

    def complete():
        try:
            racing.set_result(threading.get_ident())
        except RuntimeError as e:
            errors.append(e)

    racers = [threading.Thread(target=complete) for _ in range(4)]
    for t in racers:
        t.start()
    for t in racers:
        t.join()
    assert len(errors) == 3 and racing.done()


def test_collect_all_and_wait_all():
    a, b = Future(), Future()
    c = collect_all([a, b])
    assert not c.done()
    a.set_result(1)
    assert not c.done()
    b.set_result(2)
    assert c.wait() == [a, b] and wait_all([a, b]) == [1, 2]
    d, e = Future(), Future()
    both = collect_all([d, e])
    d.set_result(1)
    e.set_exception(RuntimeError("x"))
    with pytest.raises(RuntimeError, match="^x$"):
        both.wait()
    with pytest.raises(RuntimeError, match="^x$"):
        wait_all([d, e])
    assert collect_all([]).wait() == []


def test_jit_fork_runs_inline_and_returns_a_future():
    me = threading.get_ident()
    fut = ember.jit.fork(lambda v: (v * 2, threading.get_ident()), 3)
    assert isinstance(fut, Future) and fut.done()
    assert ember.jit.wait(fut) == (6, me)  # eager PyTorch runs the function now, here
    with pytest.raises(ZeroDivisionError):
        ember.jit.fork(lambda: 1 / 0)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_jit_fork_matches_torch():
    torch = pytest.importorskip("torch")
    fut = torch.jit.fork(lambda: threading.get_ident())
    assert fut.done() and torch.jit.wait(fut) == threading.get_ident()


# -- cond --------------------------------------------------------------------------------------

def test_cond_takes_the_branch_pred_selects():
    x = ember.tensor([1.0, -2.0])
    for pred, want in ((True, x + 1), (False, x - 1), (ember.tensor(True), x + 1),
                       (ember.tensor([0]), x - 1), (ember.tensor(3), x + 1),
                       (x.sum() > 0, x - 1)):
        got = cond(pred, lambda t: t + 1, lambda t: t - 1, (x,))
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert cond(False, lambda: ember.ones(1), lambda: ember.zeros(1)).item() == 0
    pair = cond(ember.tensor(True), lambda t: [t + 1, t * 2], lambda t: [t - 1, t + 0], [x])
    assert isinstance(pair, list) and pair[1].tolist() == [2.0, -4.0]


def test_cond_input_checks_use_torchs_messages():
    x = ember.ones(2)
    with pytest.raises(RuntimeError, match=r"Expected pred to be bool or single-element "
                       r"tensor, but got tensor\(\[ True, False\]"):
        cond(ember.tensor([True, False]), lambda t: t + 1, lambda t: t - 1, (x,))
    with pytest.raises(RuntimeError, match="Expected pred to be bool or tensor, but got a."):
        cond("a", lambda: 1, lambda: 2)
    with pytest.raises(RuntimeError, match="Expect both branches to be callable."):
        cond(ember.tensor(True), 1, lambda: 2)
    with pytest.raises(RuntimeError, match="Expect operands to be a tuple of possibly nested "
                       "dict/list/tuple that only consists of tensor leaves, but got"):
        cond(ember.tensor(True), lambda t, n: t + n, lambda t, n: t, [x, 2])


def test_cond_branches_must_agree():
    p, x = ember.tensor(True), ember.ones(2)
    with pytest.raises(RuntimeError, match="Unmatched output spec from torch.cond branches"):
        cond(p, lambda t: (t + 1, t + 2), lambda t: t - 1, (x,))
    with pytest.raises(RuntimeError, match="expected same dim but got 0 and 1."):
        cond(p, lambda t: t.sum(), lambda t: t - 1, (x,))
    with pytest.raises(RuntimeError, match="expected same dtype but got"):
        cond(p, lambda t: (t + 1).int(), lambda t: t - 1, (x,))
    with pytest.raises(RuntimeError, match="Encountered aliasing during higher order op "
                       "tracing"):
        cond(p, lambda t: t, lambda t: t + 1, (x,))


def test_cond_gradients_flow_through_the_taken_branch():
    x = ember.tensor([0.3, -1.2], dtype=ember.float64, requires_grad=True)
    for sign in (1.0, -1.0):
        def f(t, sign=sign):
            return cond(t.sum() * sign > 0, lambda u: u.sin() * u, lambda u: u.exp(), (t,))

        assert ember.autograd.gradcheck(f, (x,))
    y = cond(ember.tensor(False), lambda u: u.sin(), lambda u: u.cos(), (x,))
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), -np.sin(x.detach().numpy()))


def test_cond_matches_torch_eager():
    torch = pytest.importorskip("torch")
    data = [0.5, -1.5, 2.0]
    for lib in (ember, torch):
        x = lib.tensor(data)
        out = lib.cond(x.sum() > 0, lambda t: t.sin() + 1, lambda t: t.cos() - 1, (x,)) \
            if lib is torch else cond(x.sum() > 0, lambda t: t.sin() + 1,
                                      lambda t: t.cos() - 1, (x,))
        if lib is torch:
            theirs = out.numpy()
        else:
            ours = out.numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
