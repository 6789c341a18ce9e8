"""Threads: autograd's modes are per thread and the engine is safe to run from several.

Every test runs with ``sys.setswitchinterval(1e-5)`` (the interpreter switches threads about
500 times more often than by default), so that races show up within a few hundred steps.
On the process-wide grad flag these tests replaced, each of them failed in every run.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import numpy as np
import pytest

import ember
from ember.data import DataLoader, Dataset, TensorDataset

N_THREADS = 4


@pytest.fixture(autouse=True)
def _fast_switching():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(old)


def _run_threads(targets, timeout: float = 120.0):
    """Start one thread per callable, all released at once; re-raise the first error."""
    barrier = threading.Barrier(len(targets))
    errors: list = []

    def wrap(fn):
        def run():
            try:
                barrier.wait()
                fn()
            except BaseException as exc:  # reported to the test thread
                errors.append(exc)
        return run

    threads = [threading.Thread(target=wrap(fn), daemon=True) for fn in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "a thread did not finish"
    if errors:
        raise errors[0]


def _mlp(seed: int, hidden: int = 16):
    g = np.random.default_rng(seed)
    w1 = ember.tensor(g.standard_normal((8, hidden)) / 8, requires_grad=True)
    w2 = ember.tensor(g.standard_normal((hidden, 1)) / hidden, requires_grad=True)
    return w1, w2


def _loss(params, x, y):
    w1, w2 = params
    return (((x @ w1).relu() @ w2 - y) ** 2).mean()


def _batch(seed: int):
    g = np.random.default_rng(1000 + seed)
    x = ember.tensor(g.standard_normal((32, 8)))
    return x, x.sum(1, keepdim=True).sin()


def _train(params, steps: int, seed: int) -> list:
    x, y = _batch(seed)
    losses = []
    for _ in range(steps):
        loss = _loss(params, x, y)
        loss.backward()
        with ember.no_grad():
            for p in params:
                p -= 0.05 * p.grad
                p.grad = None
        losses.append(loss.item())
    return losses


# -- grad mode and friends are per thread ------------------------------------------------------

@pytest.mark.parametrize("mode", ["no_grad", "inference_mode", "set_grad_enabled"])
def test_a_mode_in_one_thread_does_not_reach_the_others(mode):
    stop = threading.Event()
    modes = {"no_grad": ember.no_grad, "inference_mode": ember.inference_mode,
             "set_grad_enabled": lambda: ember.set_grad_enabled(False)}
    seen_in_block: list = []
    entered = threading.Event()  # the trainers start once the mode is on in the other thread

    def inference():
        while not stop.is_set():
            with modes[mode]():
                seen_in_block.append(ember.is_grad_enabled())
                entered.set()
                (ember.ones(4, 4) @ ember.ones(4, 4)).sum()

    def trainer(seed):
        def run():
            try:
                assert entered.wait(60), "the inference thread never ran"
                w = ember.ones(3, requires_grad=True)
                for _ in range(400):
                    assert ember.is_grad_enabled()
                    assert not ember.is_inference_mode_enabled()
                    (w * 2).sum().backward()
                assert w.grad.tolist() == [800.0] * 3
            finally:
                stop.set()
        return run

    _run_threads([inference, trainer(0), trainer(1)])
    assert seen_in_block and not any(seen_in_block)
    assert ember.is_grad_enabled() and not ember.is_inference_mode_enabled()


def test_a_new_thread_starts_with_grad_enabled():
    seen = {}

    def probe():
        seen["grad"] = ember.is_grad_enabled()
        seen["inference"] = ember.is_inference_mode_enabled()
        seen["anomaly"] = ember.is_anomaly_enabled()

    with ember.inference_mode(), ember.autograd.set_detect_anomaly(True):
        t = threading.Thread(target=probe)
        t.start()
        t.join()
        assert not ember.is_grad_enabled() and ember.is_anomaly_enabled()
    assert seen == {"grad": True, "inference": False, "anomaly": False}
    assert not ember.is_anomaly_enabled()


def test_set_grad_enabled_as_a_function_is_per_thread():
    done = threading.Event()
    seen = []

    def other():
        ember.set_grad_enabled(False)
        seen.append(ember.is_grad_enabled())
        done.set()

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert done.is_set() and seen == [False]
    assert ember.is_grad_enabled()


@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
@pytest.mark.filterwarnings("ignore:Error detected in")
def test_anomaly_mode_is_per_thread():
    def bad_backward():
        x = ember.tensor([0.0], requires_grad=True)
        (x.sqrt() * 0).sum().backward()  # 0 * inf: nan in sqrt's backward

    def anomalous():
        with ember.autograd.detect_anomaly():
            for _ in range(50):
                with pytest.raises(RuntimeError, match="returned nan values"):
                    bad_backward()

    def plain():
        for _ in range(200):
            assert not ember.is_anomaly_enabled()
            bad_backward()  # no anomaly mode here: nan gradients, no error

    _run_threads([anomalous, plain, plain])


def test_default_device_is_per_thread(testdev):
    seen = []

    def with_block():
        with ember.device(testdev):
            for _ in range(300):
                seen.append(("with", ember.zeros(1).device))

    def with_default():
        ember.set_default_device(testdev)
        try:
            for _ in range(300):
                seen.append(("default", ember.ones(1).device))
            assert ember.get_default_device() == testdev
        finally:
            ember.set_default_device(None)

    def plain():
        for _ in range(300):
            seen.append(("plain", ember.empty(1).device))

    _run_threads([with_block, with_default, plain])
    assert {(k, str(d)) for k, d in seen} == {("with", "testdev:0"), ("default", "testdev:0"),
                                              ("plain", "cpu")}
    assert ember.get_default_device() == ember.device("cpu")


def test_set_default_device_and_with_block(testdev):
    before = ember.get_default_device()  # the suite's device (the strict one in a strict run)
    ember.set_default_device(testdev)
    try:
        assert ember.tensor([1.0]).device == testdev
        with ember.device("cpu"):
            assert ember.zeros(2).device == ember.device("cpu")
            assert ember.get_default_device() == ember.device("cpu")
        assert ember.arange(3).device == testdev
        assert repr(ember.get_default_device()) == "device(type='testdev', index=0)"
        ember.set_default_device(None)
        assert ember.zeros(1).device == ember.device("cpu")
    finally:
        ember.set_default_device(before)


def test_devices_stay_interned_when_threads_race():
    made: list = []
    names = [f"testdev:{i % 2}" for i in range(8)]

    def make():
        for name in names:
            made.append((name, ember.device(name)))

    _run_threads([make] * N_THREADS)
    by_name: dict = {}
    for name, dev in made:
        assert by_name.setdefault(name, dev) is dev


# -- the engine from several threads -------------------------------------------------------------

def test_threads_training_separate_models_match_serial_runs():
    steps = 150
    serial = [_train(_mlp(s), steps, s) for s in range(N_THREADS)]
    results: dict = {}

    def trainer(seed):
        return lambda: results.__setitem__(seed, _train(_mlp(seed), steps, seed))

    _run_threads([trainer(s) for s in range(N_THREADS)])
    for s in range(N_THREADS):
        np.testing.assert_allclose(results[s], serial[s], rtol=1e-12)


def test_backward_through_a_shared_model_sums_every_thread_gradient():
    # gradients large enough that NumPy releases the GIL while it adds them up
    params = _mlp(7, hidden=8192)
    reps = 60
    batches = [_batch(s) for s in range(N_THREADS)]

    def worker(seed):
        def run():
            x, y = batches[seed]
            for _ in range(reps):
                _loss(params, x, y).backward()
        return run

    _run_threads([worker(s) for s in range(N_THREADS)])
    expected = [np.zeros(p.shape) for p in params]
    for x, y in batches:
        grads = ember.autograd.grad(_loss(params, x, y), params)
        for e, g in zip(expected, grads):
            e += reps * g.numpy()
    for p, e in zip(params, expected):
        np.testing.assert_allclose(p.grad.numpy(), e, rtol=1e-9)


def test_accumulation_into_a_shared_leaf_loses_no_update():
    # big enough that NumPy adds with the GIL released, so unlocked adds would overlap
    leaf = ember.zeros(1 << 20, requires_grad=True)
    reps = 40

    def worker(scale):
        def run():
            for _ in range(reps):
                (leaf * float(scale)).sum().backward()
        return run

    _run_threads([worker(s + 1) for s in range(N_THREADS)])
    expected = reps * sum(range(1, N_THREADS + 1))
    assert leaf.grad.min().item() == leaf.grad.max().item() == expected


def test_autograd_grad_and_create_graph_from_threads():
    def worker(seed):
        def run():
            x = ember.tensor(np.linspace(-1, 1, 5) + seed, requires_grad=True)
            for _ in range(100):
                (g,) = ember.autograd.grad((x ** 3).sum(), x, create_graph=True)
                (gg,) = ember.autograd.grad(g.sum(), x)
                np.testing.assert_allclose(gg.numpy(), 6 * x.detach().numpy())
        return run

    _run_threads([worker(s) for s in range(N_THREADS)])


def test_hooks_registered_from_threads_get_distinct_handles():
    w = ember.ones(2, requires_grad=True)
    handles: list = []

    def register():
        for _ in range(200):
            handles.append(w.register_hook(lambda g: g))

    _run_threads([register] * N_THREADS)
    assert len({h.id for h in handles}) == len(handles)


# -- data loading and random numbers -------------------------------------------------------------

class _Squares(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return ember.tensor(float(i * i))


@pytest.mark.parametrize("num_workers", [0, 2])
def test_dataloader_iterated_from_several_threads(num_workers):
    loader = DataLoader(_Squares(), batch_size=8, num_workers=num_workers)
    expected = [float(i * i) for i in range(64)]
    seen: dict = {}

    def consume(k):
        def run():
            for _ in range(2 if num_workers else 10):
                seen.setdefault(k, []).append(
                    [v for batch in loader for v in batch.tolist()])
        return run

    _run_threads([consume(k) for k in range(3)])
    assert all(run == expected for runs in seen.values() for run in runs)
    assert len(seen) == 3


def test_per_thread_generators_are_deterministic():
    def draws(seed):
        g = ember.Generator(ember.get_default_device()).manual_seed(seed)
        return [ember.randn(16, generator=g).numpy() for _ in range(50)]

    serial = {s: draws(s) for s in range(N_THREADS)}
    results: dict = {}
    _run_threads([lambda s=s: results.__setitem__(s, draws(s)) for s in range(N_THREADS)])
    for s in range(N_THREADS):
        for a, b in zip(results[s], serial[s]):
            np.testing.assert_array_equal(a, b)


def test_manual_seed_and_the_default_generator_from_threads():
    ember.manual_seed(123)
    expected = np.concatenate([ember.rand(8).numpy() for _ in range(N_THREADS * 100)])
    ember.manual_seed(123)
    parts: list = []

    def draw():
        for _ in range(100):
            parts.append(ember.rand(8).numpy())

    _run_threads([draw] * N_THREADS)
    # threads interleave, but every draw comes from the one stream exactly once
    np.testing.assert_array_equal(np.sort(np.concatenate(parts)), np.sort(expected))


def test_tensor_dataset_loader_with_shuffle_from_threads():
    data = TensorDataset(ember.arange(40.0))

    def consume():
        g = ember.Generator().manual_seed(5)
        for _ in range(5):
            out = [v for (b,) in DataLoader(data, batch_size=5, shuffle=True, generator=g)
                   for v in b.tolist()]
            assert sorted(out) == [float(i) for i in range(40)]

    _run_threads([consume] * 3)


def test_set_grad_enabled_takes_a_bool_only():
    with pytest.raises(TypeError, match="must be bool, not int"):
        ember.set_grad_enabled(1)
    assert ember.is_grad_enabled()


def _share_a_tensor_and_exit():
    import os

    ember.zeros(4).share_memory_()
    os._exit(0)


def test_a_worker_forked_while_another_thread_shares_memory_can_share():
    """A fork waits for a thread inside the shared-memory lock and the child gets it free
    (ember._forksafe). Before, the child inherited the lock held by a thread it does not
    have, and its first share_memory_ (a DataLoader worker sending a batch) hung for ever:
    test_dataloader_iterated_from_several_threads hung one run in ten that way."""
    import multiprocessing as mp
    import time

    from ember.multiprocessing import _shared_memory as shm

    held = threading.Event()

    def hold():
        with shm._LOCK:
            held.set()
            time.sleep(0.5)  # the fork below starts while this thread holds the lock

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert held.wait(10)
    child = mp.get_context("fork").Process(target=_share_a_tensor_and_exit)
    child.start()
    try:
        child.join(30)
        assert child.exitcode == 0, "the forked child hung on the shared-memory lock"
    finally:
        if child.is_alive():
            child.kill()
            child.join()
        holder.join()


def test_module_locks_are_free_in_a_forked_child():
    """The other module-level locks come back unlocked in a child forked while a thread
    held them (ember._forksafe.reinit_in_child)."""
    import multiprocessing as mp

    from ember import _device

    release = threading.Event()
    held = threading.Event()

    def hold():
        with _device._INTERN_LOCK:
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert held.wait(10)
    child = mp.get_context("fork").Process(target=_intern_a_device_and_exit)
    try:
        child.start()
        child.join(30)
        assert child.exitcode == 0, "the forked child hung on the device interning lock"
    finally:
        release.set()
        if child.is_alive():
            child.kill()
            child.join()
        holder.join()


def _intern_a_device_and_exit():
    import os

    from ember import _device

    with _device._INTERN_LOCK:
        pass
    os._exit(0)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_fork_while_another_thread_draws_leaves_the_child_a_usable_generator():
    # The random kernels run under the bit generator's lock with the GIL released: a fork at
    # that moment gave the child a lock held for ever, and a DataLoader worker seeding its
    # generator hung (test_dataloader_iterated_from_several_threads, now and then). The
    # generators' locks are held across a fork (ember/_torch_rng.py).
    stop = threading.Event()

    def draw():
        while not stop.is_set():
            ember.rand(100_000)

    drawer = threading.Thread(target=draw, daemon=True)
    drawer.start()
    try:
        for _ in range(40):
            pid = os.fork()
            if pid == 0:  # the child: seed and draw, then leave at once
                try:
                    ember.manual_seed(1)
                    ember.rand(10)
                finally:
                    os._exit(0)
            deadline = time.monotonic() + 20
            while True:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    assert status == 0
                    break
                if time.monotonic() > deadline:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    pytest.fail("a forked child hung on the random generator's lock")
                time.sleep(0.005)
    finally:
        stop.set()
        drawer.join()
