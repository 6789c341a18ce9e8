"""``ember.distributed`` stores: HashStore, FileStore, TCPStore and PrefixStore, in one
process (the semantics PyTorch's have, its results written out) and across MPI ranks."""

from __future__ import annotations

import os
import threading
from datetime import timedelta

import pytest
from mpi_launch import case_launches, case_registry, check, check_case, distributed_marks

import ember.distributed as dist

CASES, case = case_registry()


@pytest.fixture(params=["hash", "file", "tcp", "prefix"])
def store(request, tmp_path):
    if request.param == "hash":
        return dist.HashStore()
    if request.param == "file":
        return dist.FileStore(str(tmp_path / "store"), 1)
    if request.param == "tcp":
        return dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    return dist.PrefixStore("p", dist.HashStore())


def test_store_semantics(store):
    # the same calls on PyTorch 2.13's HashStore give these results
    store.set("a", "x")
    assert store.get("a") == b"x"
    assert (store.add("n", 3), store.add("n", 2), store.get("n")) == (3, 5, b"5")
    assert store.check(["a", "n"]) and not store.check(["a", "zz"])
    assert store.compare_set("a", "x", "y") == b"y" and store.get("a") == b"y"
    assert store.compare_set("a", "q", "z") == b"y"  # no match: the current value
    assert store.compare_set("new", "", "v") == b"v"  # unset and expected empty: set
    assert store.compare_set("new2", "x", "v") == b"x" and not store.check(["new2"])
    assert store.delete_key("a") and not store.delete_key("a")
    assert store.multi_get(["n", "new"]) == [b"5", b"v"]
    store.multi_set(["m1", "m2"], ["1", b"2"])
    assert store.get("m2") == b"2"
    store.append("ap", "1")
    store.append("ap", "2")
    assert store.get("ap") == b"12"
    store.queue_push("q", "a")
    store.queue_push("q", b"b")
    assert store.queue_len("q") == 2
    assert (store.queue_pop("q"), store.queue_pop("q")) == (b"a", b"b")
    with pytest.raises(dist.QueueEmptyError, match="queue is empty"):
        store.queue_pop("q", block=False)
    assert sorted(store.list_keys()) == ["ap", "m1", "m2", "n", "new", "q"]
    assert store.has_extended_api()


def test_store_waits_and_times_out(store):
    store.set_timeout(timedelta(seconds=0.2))
    assert store.timeout == timedelta(seconds=0.2)
    with pytest.raises(dist.DistStoreError, match="Wait timeout"):
        store.get("missing")
    with pytest.raises(dist.DistStoreError, match="Wait timeout"):
        store.wait(["missing"], timedelta(seconds=0.1))
    store.set_timeout(timedelta(seconds=10))
    timer = threading.Timer(0.2, lambda: store.set("late", "L"))
    timer.start()
    try:
        assert store.get("late") == b"L"  # another thread's set ends the wait
        store.wait(["late"])
    finally:
        timer.join()


def test_prefix_store_namespaces():
    base = dist.HashStore()
    a, b = dist.PrefixStore("a", base), dist.PrefixStore("b", base)
    a.set("k", "1")
    b.set("k", "2")
    assert (a.get("k"), b.get("k"), base.get("a/k")) == (b"1", b"2", b"1")
    assert a.underlying_store is base and a.num_keys() == 2  # PyTorch counts the base's
    assert a.list_keys() == ["k"]


def test_values_must_be_bytes_or_str():
    with pytest.raises(TypeError, match="must be str or bytes"):
        dist.HashStore().set("k", 3.5)


@case
def case_stores_across_ranks(R, N, out):
    import ember.distributed as d

    box = [None]
    if R == 0:
        master = d.TCPStore("127.0.0.1", 0, world_size=N, is_master=True,
                            wait_for_workers=False, timeout=timedelta(seconds=30))
        box = [master.port]
    d.broadcast_object_list(box, src=0)
    tcp = master if R == 0 else d.TCPStore("127.0.0.1", box[0], world_size=N,
                                           timeout=timedelta(seconds=30))
    shared = d.FileStore(os.path.join(out, "filestore"), N)
    for s in (tcp, shared, d.PrefixStore("job", tcp)):
        s.set(f"rank{R}", str(R * 10))
        check(s.add("arrived", 1) <= N)
        s.wait([f"rank{r}" for r in range(N)])  # everyone's key, set by the other ranks
        check([s.get(f"rank{r}") for r in range(N)] == [str(r * 10).encode() for r in range(N)])
    d.barrier()
    check(int(tcp.get("arrived")) == N and int(shared.get("arrived")) == N)
    d.barrier()


rank_main, runs = case_launches(__file__, "store_cases", CASES)


@pytest.mark.parametrize("n", [2, 4], ids=["2ranks", "4ranks"])
@pytest.mark.parametrize("name", list(CASES))
def test_store_case(runs, n, name):
    check_case(runs[n], n, name)


for _mark in distributed_marks():  # the MPI cases only
    test_store_case = _mark(test_store_case)
