"""ember.data.DataLoader: argument validation, length, single-process loading, and real
worker processes (seeding, ordering, errors, killed workers, sharding, persistence,
timeouts, shutdown)."""

import gc
import importlib.util
import os
import random
import signal
import time
import warnings

import numpy as np
import pytest

import ember
from ember.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    IterableDataset,
    SequentialSampler,
    TensorDataset,
    get_worker_info,
)

if importlib.util.find_spec("pytest_timeout") is not None:
    mp_test = pytest.mark.timeout(60)
else:  # plain runs: the same 60 s guard through SIGALRM
    def mp_test(fn):
        return pytest.mark.usefixtures("_alarm_60s")(fn)


@pytest.fixture
def _alarm_60s():
    def on_alarm(signum, frame):
        raise TimeoutError("multiprocessing test ran over 60 s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


# -- datasets used by the worker tests (module level: picklable, fork-inherited) ---------------

class Range(Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return i

    def __len__(self):
        return self.n


class SleepyRange(Range):
    """Sleeps a random few milliseconds per item, so workers finish out of order."""

    def __getitem__(self, i):
        time.sleep(random.random() * 0.02)
        return i


class WhoAmI(Range):
    """(index, worker pid, worker id, worker seed, python random, numpy random, ember rand)."""

    def __getitem__(self, i):
        info = get_worker_info()
        return {"i": i, "pid": os.getpid(), "wid": info.id, "seed": info.seed,
                "py": random.random(), "np": float(np.random.rand()),
                "ember": ember.rand(1).item(), "tag": getattr(info.dataset, "tag", None)}


class Failing(Range):
    def __getitem__(self, i):
        if i == 3:
            raise ValueError("bad index 3")
        if i == 5:
            raise KeyError("missing")
        return i


class Killer(Range):
    def __getitem__(self, i):
        if i == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return i


class Slow(Range):
    def __getitem__(self, i):
        if i == 2:
            time.sleep(1.5)
        return i


class Stream(IterableDataset):
    def __init__(self, n, shard):
        self.n, self.shard = n, shard

    def __iter__(self):
        info = get_worker_info()
        if not self.shard or info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


class SizedStream(Stream):
    def __len__(self):
        return self.n


def _tag_worker(worker_id):
    get_worker_info().dataset.tag = f"init{worker_id}"


def _failing_init(worker_id):
    raise RuntimeError(f"init failed in {worker_id}")


def _values(loader):
    return [b.tolist() if isinstance(b, ember.Tensor) else b for b in loader]


def _gone(pid):
    """The process no longer exists (exited and reaped: no zombie left behind)."""
    return not os.path.exists(f"/proc/{pid}")


# -- validation -------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    ({"num_workers": -1}, "num_workers option should be non-negative; use num_workers=0 to "
                          "disable multiprocessing."),
    ({"timeout": -1}, "timeout option should be non-negative"),
    ({"prefetch_factor": 2}, "prefetch_factor option could only be specified in "
                             "multiprocessing.let num_workers > 0"),
    ({"num_workers": 1, "prefetch_factor": -1}, "prefetch_factor option should be non-negative"),
    ({"persistent_workers": True}, "persistent_workers option needs num_workers > 0"),
    ({"shuffle": True, "sampler": [0, 1]}, "sampler option is mutually exclusive with shuffle"),
    ({"batch_sampler": [[0]], "batch_size": 2}, "batch_sampler option is mutually exclusive with "
                                                "batch_size, shuffle, sampler, and drop_last"),
    ({"batch_sampler": [[0]], "drop_last": True}, "batch_sampler option is mutually exclusive"),
    ({"batch_sampler": [[0]], "shuffle": True}, "batch_sampler option is mutually exclusive"),
    ({"batch_size": None, "drop_last": True}, "batch_size=None option disables auto-batching "
                                              "and is mutually exclusive with drop_last"),
    ({"multiprocessing_context": "fork"}, "multiprocessing_context can only be used with "
                                          "multi-process loading"),
    ({"num_workers": 1, "multiprocessing_context": "nope"}, "should specify a valid start "
                                                            "method in"),
])
def test_argument_errors(kwargs, message):
    import re

    with pytest.raises(ValueError, match=re.escape(message)):
        DataLoader(Range(4), **kwargs)


def test_iterable_dataset_restrictions_and_bad_context():
    for kwargs, what in (({"shuffle": True}, "shuffle option, but got shuffle=True"),
                         ({"sampler": [0]}, "sampler option, but got sampler=[0]"),
                         ({"batch_sampler": [[0]]}, "batch_sampler option, but got "
                                                    "batch_sampler=[[0]]")):
        with pytest.raises(ValueError, match=r"DataLoader with IterableDataset: expected "
                                             r"unspecified " + what.replace("[", r"\[")
                                             .replace("]", r"\]")):
            DataLoader(Stream(4, False), **kwargs)
    DataLoader(Stream(4, False), shuffle=False)  # False is allowed (the old default)
    with pytest.raises(TypeError, match="multiprocessing_context option should be a valid "
                                        "context object"):
        DataLoader(Range(4), num_workers=1, multiprocessing_context=3)


def test_attributes_frozen_after_init():
    loader = DataLoader(Range(4))
    for attr in ("batch_size", "sampler", "batch_sampler", "drop_last", "dataset",
                 "persistent_workers"):
        with pytest.raises(ValueError, match=f"{attr} attribute should not be set after "
                                             "DataLoader is initialized"):
            setattr(loader, attr, None)
    loader.num_workers = 0  # others may change


def test_len():
    assert len(DataLoader(Range(10), batch_size=3)) == 4
    assert len(DataLoader(Range(10), batch_size=3, drop_last=True)) == 3
    assert len(DataLoader(Range(10), batch_size=None)) == 10
    assert len(DataLoader(Range(10), batch_sampler=BatchSampler(range(10), 4, False))) == 3
    assert len(DataLoader(SizedStream(10, False), batch_size=4)) == 3
    assert len(DataLoader(SizedStream(10, False), batch_size=4, drop_last=True)) == 2
    assert len(DataLoader(SizedStream(10, False), batch_size=None)) == 10
    with pytest.raises(TypeError):
        len(DataLoader(Stream(10, False)))


# -- single process ---------------------------------------------------------------------------

def test_single_process_batches():
    ds = TensorDataset(ember.arange(10.).reshape(5, 2), ember.arange(5))
    batches = list(DataLoader(ds, batch_size=2))
    assert [y.tolist() for _, y in batches] == [[0, 1], [2, 3], [4]]
    assert batches[0][0].shape == (2, 2) and batches[0][0].dtype == ember.float32
    assert _values(DataLoader(Range(5), batch_size=2, drop_last=True)) == [[0, 1], [2, 3]]
    assert list(DataLoader(Range(3), batch_size=None)) == [0, 1, 2]  # default_convert
    assert _values(DataLoader(Range(5), batch_size=2, collate_fn=sum)) == [1, 5, 4]
    assert _values(DataLoader(Range(6), sampler=[5, 0, 3], batch_size=2)) == [[5, 0], [3]]
    loader = DataLoader(Range(6), batch_sampler=BatchSampler(SequentialSampler(range(6)), 4,
                                                             True))
    assert _values(loader) == [[0, 1, 2, 3]]


def test_single_process_iterable():
    assert _values(DataLoader(Stream(5, False), batch_size=2)) == [[0, 1], [2, 3], [4]]
    assert _values(DataLoader(Stream(5, False), batch_size=2, drop_last=True)) == [[0, 1],
                                                                                  [2, 3]]
    assert list(DataLoader(Stream(3, False), batch_size=None)) == [0, 1, 2]


def test_iterable_len_overrun_warns():
    class Liar(SizedStream):
        def __len__(self):
            return 2

    loader = DataLoader(Liar(4, False), batch_size=None)
    assert len(loader) == 2
    with pytest.warns(UserWarning, match="was reported to be 2"):
        list(loader)


def test_shuffle_deterministic_under_manual_seed_and_generator():
    ember.manual_seed(0)
    a = _values(DataLoader(Range(20), batch_size=5, shuffle=True))
    ember.manual_seed(0)
    b = _values(DataLoader(Range(20), batch_size=5, shuffle=True))
    assert a == b and sorted(sum(a, [])) == list(range(20)) and a != _values(
        DataLoader(Range(20), batch_size=5))
    g1, g2 = ember.Generator().manual_seed(4), ember.Generator().manual_seed(4)
    assert _values(DataLoader(Range(20), batch_size=5, shuffle=True, generator=g1)) == \
        _values(DataLoader(Range(20), batch_size=5, shuffle=True, generator=g2))


def test_single_process_rejects_nothing_but_warns_on_pin_memory():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = _values(DataLoader(Range(3), batch_size=2, pin_memory=True))
    assert out == [[0, 1], [2]]
    # PyTorch warns only where no accelerator could use pinned memory
    assert any("pin_memory" in str(w.message) for w in caught) != ember.cuda.is_available()


def test_exception_in_main_process_is_raised_plainly():
    with pytest.raises(ValueError, match="^bad index 3$"):
        list(DataLoader(Failing(4)))


# -- worker processes -------------------------------------------------------------------------

@mp_test
def test_workers_match_single_process():
    ds = TensorDataset(ember.arange(22.).reshape(11, 2), ember.arange(11))
    single = [(x.tolist(), y.tolist()) for x, y in DataLoader(ds, batch_size=3)]
    multi = [(x.tolist(), y.tolist()) for x, y in DataLoader(ds, batch_size=3, num_workers=2)]
    assert multi == single
    assert len(DataLoader(ds, batch_size=3, num_workers=2)) == 4


@mp_test
def test_order_preserved_with_random_sleeps():
    loader = DataLoader(SleepyRange(24), batch_size=2, num_workers=2, prefetch_factor=3)
    assert _values(loader) == [[i, i + 1] for i in range(0, 24, 2)]
    unordered = _values(DataLoader(SleepyRange(24), batch_size=2, num_workers=2,
                                   in_order=False))
    assert sorted(unordered) == [[i, i + 1] for i in range(0, 24, 2)]


@mp_test
def test_worker_seeds_deterministic_under_manual_seed():
    def run():
        ember.manual_seed(123)
        return list(DataLoader(WhoAmI(4), batch_size=None, num_workers=2))

    a, b = run(), run()
    strip = [{k: v for k, v in s.items() if k != "pid"} for s in a]
    assert strip == [{k: v for k, v in s.items() if k != "pid"} for s in b]
    by_worker = {}
    for s in a:  # the first sample each worker made
        by_worker.setdefault(s["wid"], s)
    assert set(by_worker) == {0, 1}
    assert by_worker[1]["seed"] == by_worker[0]["seed"] + 1  # base_seed + worker_id
    assert by_worker[0]["py"] != by_worker[1]["py"]
    assert by_worker[0]["np"] != by_worker[1]["np"]
    assert by_worker[0]["ember"] != by_worker[1]["ember"]
    # what each worker seeded: random with base_seed + id, numpy with PyTorch's SeedSequence
    from ember.data._utils.worker import _numpy_seed

    seed0 = by_worker[0]["seed"]
    assert by_worker[0]["py"] == random.Random(seed0).random()
    assert by_worker[0]["np"] == np.random.RandomState(_numpy_seed(seed0, 0)).rand()
    assert by_worker[0]["ember"] == ember.rand(1, generator=ember.Generator().manual_seed(
        seed0)).item()
    # the loader's generator decides the base seed
    g = ember.Generator().manual_seed(5)
    with_gen = list(DataLoader(WhoAmI(2), batch_size=None, num_workers=2, generator=g))
    g = ember.Generator().manual_seed(5)
    assert with_gen[0]["seed"] == ember.empty((), dtype=ember.int64).random_(
        generator=g).item()


@mp_test
def test_worker_init_fn_runs_in_each_worker():
    out = list(DataLoader(WhoAmI(4), batch_size=None, num_workers=2,
                          worker_init_fn=_tag_worker))
    assert {(s["wid"], s["tag"]) for s in out} == {(0, "init0"), (1, "init1")}
    assert all(s["pid"] != os.getpid() for s in out)
    with pytest.raises(RuntimeError, match="Caught RuntimeError in DataLoader worker process "
                                           r"\d.\nOriginal Traceback[\s\S]*init failed in"):
        list(DataLoader(Range(4), num_workers=2, worker_init_fn=_failing_init))


@mp_test
def test_worker_exception_carries_traceback():
    with pytest.raises(ValueError) as info:
        list(DataLoader(Failing(8), batch_size=2, num_workers=2))
    text = str(info.value)
    assert text.startswith("Caught ValueError in DataLoader worker process 1.\nOriginal "
                           "Traceback (most recent call last):")
    assert "bad index 3" in text and "test_dataloader.py" in text and "__getitem__" in text
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process"):
        list(DataLoader(Range(8), batch_size=None, num_workers=2,
                        sampler=[5], collate_fn=lambda x: Failing(8)[x]))


@mp_test
def test_killed_worker_raises_instead_of_hanging():
    loader = DataLoader(Killer(12), batch_size=2, num_workers=2)
    it = iter(loader)
    pids = [w.pid for w in it._workers]
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) (\d+)\) exited "
                                           "unexpectedly") as info:
        for _ in it:
            pass
    dead = int(str(info.value).split("pid(s) ")[1].split(")")[0])
    assert dead == pids[1]  # batch [2, 3] went to worker 1
    del info, it  # the traceback holds the iterator
    gc.collect()
    assert all(_gone(p) for p in pids)


@mp_test
def test_iterable_dataset_duplicated_without_sharding():
    out = _values(DataLoader(Stream(6, shard=False), batch_size=None, num_workers=2))
    assert sorted(out) == sorted(list(range(6)) * 2)


@mp_test
def test_iterable_dataset_sharded_with_worker_info():
    out = _values(DataLoader(Stream(7, shard=True), batch_size=2, num_workers=2))
    assert out == [[0, 2], [1, 3], [4, 6], [5]]
    flat = sorted(sum(out, []))
    assert flat == list(range(7))
    dropped = _values(DataLoader(Stream(7, shard=True), batch_size=2, num_workers=2,
                                 drop_last=True))
    assert dropped == [[0, 2], [1, 3], [4, 6]]


@mp_test
def test_persistent_workers_survive_epochs():
    loader = DataLoader(WhoAmI(6), batch_size=None, num_workers=2, persistent_workers=True)
    first = list(loader)
    second = list(loader)
    assert [s["i"] for s in first] == [s["i"] for s in second] == list(range(6))
    assert {s["pid"] for s in first} == {s["pid"] for s in second}
    assert len({s["pid"] for s in first}) == 2
    it = loader._iterator
    pids = [w.pid for w in it._workers]
    it._shutdown_workers()
    assert all(_gone(p) for p in pids)

    fresh = DataLoader(WhoAmI(4), batch_size=None, num_workers=2)
    assert {s["pid"] for s in fresh} != {s["pid"] for s in fresh}  # new workers each epoch


@mp_test
def test_persistent_iterable_workers_restart_their_stream():
    loader = DataLoader(Stream(5, shard=True), batch_size=None, num_workers=2,
                        persistent_workers=True)
    assert sorted(_values(loader)) == list(range(5))
    assert sorted(_values(loader)) == list(range(5))
    loader._iterator._shutdown_workers()


@mp_test
def test_timeout_raises():
    loader = DataLoader(Slow(4), batch_size=None, num_workers=2, timeout=0.2)
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0.2 seconds$"):
        list(loader)


@mp_test
def test_workers_shut_down_on_exhaustion_and_deletion():
    it = iter(DataLoader(Range(8), batch_size=2, num_workers=2))
    pids = [w.pid for w in it._workers]
    assert list(it)[-1].tolist() == [6, 7]
    assert all(_gone(p) for p in pids) and all(w.exitcode == 0 for w in it._workers)
    it = iter(DataLoader(Range(8), batch_size=2, num_workers=2))
    next(it)
    pids = [w.pid for w in it._workers]
    del it
    assert all(_gone(p) for p in pids)


@mp_test
def test_spawn_context():
    ds = TensorDataset(ember.arange(6.).reshape(3, 2))
    loader = DataLoader(ds, batch_size=2, num_workers=2, multiprocessing_context="spawn")
    assert [b[0].tolist() for b in loader] == [[[0., 1.], [2., 3.]], [[4., 5.]]]


def test_iterator_cannot_be_pickled():
    import pickle

    with pytest.raises(NotImplementedError, match="cannot be pickled"):
        pickle.dumps(iter(DataLoader(Range(2))))
