"""ember.multiprocessing: torch.multiprocessing's API, tensors shared between processes through
shared memory (queues, pipes, spawned processes' arguments, DataLoader workers), ``spawn`` and
its errors, Hogwild training.

Every test ends the processes it started, pass or fail (the ``procs`` fixture kills what is
left), and waits with timeouts. Shared memory must not leak: the file descriptor strategy's
segments (memfd) must be unmapped and closed once dropped, the file system strategy's names
unlinked from /dev/shm.
"""

import gc
import multiprocessing
import os
import pickle
import signal
import sys
import time

import numpy as np
import pytest
from mp_children import (  # what the children run: importable by name in a spawned child
    _echo,
    _hogwild_train,
    _spawn_exit,
    _spawn_kill,
    _spawn_raise,
    _spawn_shared,
    _spawn_sum,
    _write,
    _write_and_send_new,
)

import ember
import ember.multiprocessing as mp
from ember.data import DataLoader, Dataset

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="memfd, /proc and /dev/shm are Linux's")

CPU = ember.device("cpu")
WAIT = 30  # seconds: any wait on a child (they take well under a second here)


# -- fixtures ---------------------------------------------------------------------------------

@pytest.fixture
def procs():
    """A list the test appends its processes to; whatever is still alive afterwards is
    killed (and the test fails if it was left running)."""
    started = []
    yield started
    left = []
    for p in started:
        if p.is_alive():
            left.append(p.pid)
            p.kill()
        p.join(WAIT)
    assert not any(p.is_alive() for p in started)
    assert not left, f"processes left running: {left}"


@pytest.fixture(params=["file_descriptor", "file_system"])
def strategy(request):
    """Run the test under each sharing strategy (then back to the default), and check that
    it left no shared memory behind once its tensors are gone."""
    before = _ember_shm_names()
    old = mp.get_sharing_strategy()
    mp.set_sharing_strategy(request.param)
    try:
        yield request.param
    finally:
        mp.set_sharing_strategy(old)
    gc.collect()
    assert _memfd_segments() == (0, 0)
    assert _wait_for(lambda: not (_ember_shm_names() - before)), \
        f"leaked in /dev/shm: {_ember_shm_names() - before}"


#: the file system strategy with forked processes, the file descriptor one with both
SPAWN_AND_FORK = [("file_descriptor", "fork"), ("file_system", "fork"),
                  ("file_descriptor", "spawn")]


def _ember_shm_names() -> set:
    return {n for n in os.listdir("/dev/shm") if n.startswith("ember_")}


def _memfd_segments() -> tuple[int, int]:
    """(mappings, open descriptors) of file descriptor strategy segments in this process."""
    with open("/proc/self/maps") as f:
        maps = sum("memfd:ember-shared" in line for line in f)
    fds = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            fds += "memfd:ember-shared" in os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            pass
    return maps, fds


def _wait_for(cond, timeout: float = 5.0) -> bool:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def _start(procs, ctx, target, *args):
    p = ctx.Process(target=target, args=args, daemon=True)
    p.start()
    procs.append(p)
    return p


def _join_context(procs, context, timeout: float = WAIT):
    """Join a ``ProcessContext`` (from ``join=False``) within ``timeout`` seconds."""
    procs.extend(context.processes)
    end = time.monotonic() + timeout
    while not context.join(timeout=max(0.0, end - time.monotonic())):
        if time.monotonic() > end:
            raise AssertionError("spawned processes did not finish in time")


# -- the API ------------------------------------------------------------------------------------

def test_reexports_the_standard_api():
    for name in multiprocessing.__all__:
        assert getattr(mp, name) is getattr(multiprocessing, name), name
    assert set(multiprocessing.__all__) < set(mp.__all__)
    assert {"set_sharing_strategy", "get_sharing_strategy",
            "get_all_sharing_strategies"} < set(mp.__all__)
    assert mp.cpu_count() == multiprocessing.cpu_count()


def test_reachable_as_an_attribute_of_ember():
    import subprocess

    code = ("import sys, ember; m = ember.multiprocessing; "
            "assert m is sys.modules['ember.multiprocessing'] and callable(m.spawn)")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=WAIT)


def test_all_matches_torch():
    torch_mp = pytest.importorskip("torch.multiprocessing")
    assert set(mp.__all__) == set(torch_mp.__all__)
    for name in ("spawn", "start_processes", "ProcessContext", "ProcessRaisedException",
                 "ProcessExitedException", "SpawnContext"):
        assert hasattr(mp, name) and hasattr(torch_mp, name), name


def test_sharing_strategies():
    assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    assert mp.get_sharing_strategy() == "file_descriptor"
    with pytest.raises(AssertionError, match=r"invalid sharing strategy 'posix'"):
        mp.set_sharing_strategy("posix")
    assert mp.get_sharing_strategy() == "file_descriptor"


# -- share_memory_ / is_shared ------------------------------------------------------------------

def test_share_memory_moves_the_storage_and_keeps_values():
    x = ember.arange(12.0, device=CPU).reshape(3, 4)
    assert not x.is_shared() and not x.untyped_storage().is_shared()
    assert x.share_memory_() is x
    assert x.is_shared() and x.untyped_storage().is_shared()
    assert x.tolist() == np.arange(12.0).reshape(3, 4).tolist()
    ptr = x.data_ptr()
    assert x.share_memory_() is x and x.data_ptr() == ptr  # already shared: a no-op


def test_views_and_detached_tensors_follow_the_storage():
    base = ember.arange(12.0, device=CPU)
    x = base.view(3, 4)
    col = x[:, 1]
    det = x.detach()
    t = x.t()
    col.share_memory_()
    for y in (base, x, col, det, t):
        assert y.is_shared()
    assert (col.storage_offset(), col.stride()) == (1, (4,))
    col.fill_(-1.0)
    assert base.tolist()[1::4] == [-1.0] * 3 and det[:, 1].tolist() == [-1.0] * 3
    assert t[1].tolist() == [-1.0] * 3
    assert x.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()


def test_numpy_aliases_keep_the_old_memory_as_in_pytorch():
    x = ember.zeros(4, device=CPU)
    arr = x.numpy()
    x.share_memory_()
    x.fill_(1.0)
    assert arr.tolist() == [0.0] * 4


def test_untyped_storage_share_memory():
    s = ember.UntypedStorage(b"abcdef")
    assert not s.is_shared()
    assert s.share_memory_() is s and s.is_shared()
    assert bytes(s.tolist()) == b"abcdef" and s[2:4].is_shared()


def test_empty_tensor_and_readonly_memory():
    e = ember.empty(0, device=CPU).share_memory_()
    assert e.is_shared() and e.shape == (0,)
    arr = np.arange(4.0)
    arr.flags.writeable = False
    r = ember.from_numpy(arr).share_memory_()
    assert r.is_shared() and not r._data.flags.writeable


def test_other_devices_are_not_moved():
    from ember.testing import register_strict_device

    register_strict_device()
    s = ember.ones(3, device="strict")
    assert s.share_memory_() is s and not s.is_shared()
    assert not s.untyped_storage().share_memory_().is_shared()


def test_parameters_share_in_place():
    nn = pytest.importorskip("ember.nn")
    lin = nn.Linear(3, 2, device="cpu")
    w = lin.weight
    w.share_memory_()
    assert isinstance(lin.weight, nn.Parameter) and lin.weight is w and w.is_shared()


def test_module_share_memory():
    nn = pytest.importorskip("ember.nn")
    model = nn.Linear(3, 2, device="cpu")
    assert model.share_memory() is model
    assert all(p.is_shared() for p in model.parameters())


# -- queues and pipes ---------------------------------------------------------------------------

def _samples():
    out = []
    for dt in (ember.float32, ember.float64, ember.float16, ember.int64, ember.int32,
               ember.int16, ember.int8, ember.uint8, ember.bool):
        out.append((ember.arange(24, device=CPU) % 7).to(dt).reshape(2, 3, 4))
    base = ember.arange(60.0, device=CPU).reshape(3, 4, 5)
    out += [base.transpose(0, 2), base[1:, ::2, 1], base[2], ember.tensor(3.5, device=CPU),
            ember.empty(0, 3, device=CPU), base.permute(2, 0, 1)[::2]]
    return out


@pytest.mark.parametrize("strategy, method", SPAWN_AND_FORK, indirect=["strategy"])
def test_queue_round_trip(procs, strategy, method):
    ctx = mp.get_context(method)
    inbox, outbox = ctx.Queue(), ctx.Queue()
    _start(procs, ctx, _echo, inbox, outbox)
    sent = _samples()
    expected = [(tuple(t.shape), t.stride(), str(t.dtype), True, t.tolist(), t.storage_offset(),
                 "cpu") for t in sent]
    inbox.put(sent)
    assert outbox.get(timeout=WAIT) == expected
    back = outbox.get(timeout=WAIT)
    inbox.put("done")
    for t, b in zip(sent, back):
        assert t.is_shared() and b.is_shared()
        assert b.dtype == t.dtype and b.shape == t.shape and b.stride() == t.stride()
        assert b.tolist() == t.tolist()
        if t.numel():
            assert b.data_ptr() == t.data_ptr()  # mapped once here: the very same memory
    procs[0].join(WAIT)
    assert procs[0].exitcode == 0
    del sent, back, t, b


@pytest.mark.parametrize("strategy", ["file_descriptor", "file_system"], indirect=True)
def test_child_writes_parent_sees(procs, strategy):
    ctx = mp.get_context("fork")
    inbox, outbox = ctx.Queue(), ctx.Queue()
    _start(procs, ctx, _write, inbox, outbox)
    x = ember.zeros(2, 3, device=CPU)
    inbox.put(x[:, 1:])  # a view: its base moves with it
    assert outbox.get(timeout=WAIT) == ("Tensor", True, False)
    procs[0].join(WAIT)
    assert x.tolist() == [[0.0, 10.0, 10.0], [0.0, 10.0, 10.0]]
    assert x.is_shared()


def test_pipe_both_ways(procs, strategy):
    ctx = mp.get_context("fork")
    mine, theirs = ctx.Pipe()
    _start(procs, ctx, _write_and_send_new, theirs)
    x = ember.ones(3, device=CPU)
    mine.send(x)
    assert mine.poll(WAIT)
    y = mine.recv()
    mine.send("done")
    procs[0].join(WAIT)
    assert x.tolist() == [-1.0, 1.0, 1.0]
    assert y.tolist() == [7.0] * 3 and y.is_shared()
    del y


def test_receiver_keeps_the_segment_after_the_sender_drops_it(procs, strategy):
    ctx = mp.get_context("fork")
    mine, theirs = ctx.Pipe()
    _start(procs, ctx, _write_and_send_new, theirs)
    x = ember.ones(3, device=CPU)
    mine.send(x)
    y = mine.recv()  # the child's tensor; the child drops its own reference and exits
    mine.send("done")
    procs[0].join(WAIT)
    gc.collect()
    assert y.tolist() == [7.0] * 3
    y.add_(1)
    assert y.tolist() == [8.0] * 3
    del y


@pytest.mark.parametrize("registered", [True, False])
def test_parameter_arrives_as_a_parameter_sharing_memory(procs, registered):
    from multiprocessing.reduction import ForkingPickler

    nn = pytest.importorskip("ember.nn")
    mp.init_reductions()  # registers Parameter, whether ember.nn came first or not
    if not registered:  # as when ember.nn is imported after ember.multiprocessing: the
        # parameter's own __reduce_ex__ sends a detached tensor, whose move takes it along
        del ForkingPickler._extra_reducers[nn.Parameter]
    try:
        ctx = mp.get_context("fork")
        inbox, outbox = ctx.Queue(), ctx.Queue()
        _start(procs, ctx, _write, inbox, outbox)
        p = nn.Parameter(ember.zeros(3, device=CPU))
        inbox.put(p)  # not shared before: sending moves it
        assert outbox.get(timeout=WAIT) == ("Parameter", True, True)
        procs[0].join(WAIT)
    finally:
        mp.init_reductions()
    assert p.is_shared() and p.tolist() == [10.0] * 3
    assert pickle.loads(pickle.dumps(p)).is_shared() is False  # plain pickle copies


def test_other_devices_travel_by_value(procs):
    from ember.testing import register_strict_device

    register_strict_device()
    ctx = mp.get_context("fork")  # the child inherits the strict device
    inbox, outbox = ctx.Queue(), ctx.Queue()
    _start(procs, ctx, _write, inbox, outbox)
    s = ember.zeros(3, device="strict")
    inbox.put(s)
    assert outbox.get(timeout=WAIT) == ("Tensor", False, False)
    procs[0].join(WAIT)
    assert s.tolist() == [0.0] * 3


def test_non_leaf_that_requires_grad_is_refused():
    from multiprocessing.reduction import ForkingPickler

    y = ember.ones(2, device=CPU, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match=r"^Cowardly refusing to serialize non-leaf tensor"):
        ForkingPickler.dumps(y)
    leaf = ember.ones(2, device=CPU, requires_grad=True)
    back = pickle.loads(ForkingPickler.dumps(leaf))
    assert back.requires_grad and back.is_leaf and back.data_ptr() == leaf.data_ptr()


def test_storage_round_trip(strategy):
    from multiprocessing.reduction import ForkingPickler

    s = ember.UntypedStorage(b"\x01\x02\x03")
    back = pickle.loads(ForkingPickler.dumps(s))
    assert s.is_shared() and back.is_shared() and back.tolist() == [1, 2, 3]
    back[0] = 9
    assert s[0] == 9
    del back


# -- spawn ----------------------------------------------------------------------------------------

def test_spawn_passes_index_and_args(tmp_path):
    assert mp.spawn(_spawn_sum, args=(str(tmp_path), 10, 5), nprocs=2) is None
    assert sorted(os.listdir(tmp_path)) == ["0", "1"]
    assert [int((tmp_path / str(i)).read_text()) for i in range(2)] == [15, 16]


def test_spawn_without_join_shares_tensor_arguments(procs):
    t = ember.zeros(2, device=CPU)
    context = mp.spawn(_spawn_shared, args=(t,), nprocs=2, join=False)
    assert isinstance(context, mp.ProcessContext)
    assert context.pids() == [p.pid for p in context.processes]
    _join_context(procs, context)
    assert context.join() is True
    assert all(p.exitcode == 0 for p in context.processes)
    assert t.tolist() == [100.0, 101.0]


def test_spawn_raise_terminates_the_others(procs):
    context = mp.spawn(_spawn_raise, nprocs=2, join=False)
    with pytest.raises(mp.ProcessRaisedException) as info:
        _join_context(procs, context)
    e = info.value
    assert e.error_index == 1 and e.pid == e.error_pid == context.processes[1].pid
    assert str(e).startswith("\n\n-- Process 1 terminated with the following error:\n"
                             "Traceback (most recent call last):")
    assert "ValueError: process 1 fails on purpose" in str(e)
    other = context.processes[0]
    assert not other.is_alive() and other.exitcode == -signal.SIGTERM
    assert not os.path.exists(os.path.dirname(context.error_files[0]))  # cleaned up


def test_signal_and_exit_code(procs):
    context = mp.start_processes(_spawn_kill, nprocs=2, join=False, start_method="fork")
    with pytest.raises(mp.ProcessExitedException,
                       match=r"^process 1 terminated with signal SIGKILL$") as info:
        _join_context(procs, context)
    assert (info.value.error_index, info.value.exit_code, info.value.signal_name) == \
        (1, -signal.SIGKILL, "SIGKILL")
    context = mp.start_processes(_spawn_exit, nprocs=2, join=False, start_method="fork")
    with pytest.raises(mp.ProcessExitedException,
                       match=r"^process 0 terminated with exit code 3$") as info:
        _join_context(procs, context)
    assert info.value.exit_code == 3 and info.value.signal_name is None


def test_spawn_start_method_warns_and_exceptions_pickle(tmp_path):
    with pytest.warns(FutureWarning, match="only supports start_method=spawn"):
        mp.spawn(_spawn_sum, args=(str(tmp_path), 0, 0), nprocs=1, start_method="fork")
    e = pickle.loads(pickle.dumps(mp.ProcessExitedException("m", 1, 42, -9, "SIGKILL")))
    assert (str(e), e.error_index, e.error_pid, e.exit_code, e.signal_name) == \
        ("m", 1, 42, -9, "SIGKILL")


# -- Hogwild and DataLoader ------------------------------------------------------------------------

def test_hogwild(procs):
    nn = pytest.importorskip("ember.nn")
    ember.manual_seed(0)
    model = nn.Linear(4, 1, device="cpu")
    for p in model.parameters():
        p.share_memory_()
    g = np.random.default_rng(0)
    x = ember.tensor(g.standard_normal((64, 4)), dtype=ember.float32, device="cpu")
    y = x @ ember.tensor([[1.0], [-2.0], [0.5], [3.0]], device="cpu") + 0.25
    before = [p.detach().clone() for p in model.parameters()]
    loss_before = nn.functional.mse_loss(model(x), y).item()
    _join_context(procs, mp.spawn(_hogwild_train, args=(model, x, y, 40), nprocs=2,
                                  join=False))
    assert all(not ember.equal(p, b) for p, b in zip(model.parameters(), before))
    assert nn.functional.mse_loss(model(x), y).item() < 0.1 * loss_before


class _Images(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        return ember.full((3, 4, 4), float(i), device="cpu"), i


def test_dataloader_batches_come_through_shared_memory(strategy):
    loader = DataLoader(_Images(), batch_size=2, num_workers=2)
    batches = list(loader)
    assert [b[1].tolist() for b in batches] == [[0, 1], [2, 3], [4, 5]]
    for k, (images, labels) in enumerate(batches):
        assert images.is_shared()
        # collated ints land on the default device: shared on the CPU, by value elsewhere
        assert labels.is_shared() == (labels.device.type == "cpu")
        assert images.shape == (2, 3, 4, 4) and images[1, 0, 0, 0].item() == 2 * k + 1
    del batches, images, labels


@pytest.mark.parametrize("strategy", ["file_descriptor"], indirect=True)
def test_dataloader_stopped_early_frees_its_batches(strategy):
    # (the file system strategy leaves the handles still in the queue to the resource tracker,
    # which unlinks them when the process ends, as PyTorch's shm manager does)
    it = iter(DataLoader(_Images(), batch_size=1, num_workers=2, prefetch_factor=2))
    first = next(it)
    assert first[0].is_shared()
    workers = list(it._workers)
    del it, first
    for w in workers:
        w.join(WAIT)
    assert not any(w.is_alive() for w in workers)
