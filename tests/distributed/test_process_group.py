"""Process groups on 4 (and 2) MPI ranks: init, ranks, ``new_group`` subsets, group vs global
ranks, non-members, destroy and re-init, backends, per-group timeouts.

One launch runs every check in each rank (``check`` reports each as None or its traceback);
the pytest items then read the reports.
"""

from __future__ import annotations

import pytest
from mpi_launch import mpi_available, run_ranks

pytestmark = [pytest.mark.distributed,
              pytest.mark.skipif(not mpi_available(), reason="needs mpi4py and mpiexec "
                                 "(pip install 'ember-core[distributed]')")]

PRELUDE = """
import datetime, os, traceback, warnings
import numpy as np
import ember
import ember.distributed as dist

def check(label, fn):
    try:
        fn()
        emit({"label": label, "error": None})
    except Exception:
        emit({"label": label, "error": traceback.format_exc()})
"""

GROUPS = PRELUDE + """
dist.init_process_group(backend="gloo", init_method="env://",
                        timeout=datetime.timedelta(seconds=30))
R, N = dist.get_rank(), dist.get_world_size()
assert N == 4

def world():
    assert dist.is_initialized() and dist.is_available() and dist.is_mpi_available()
    assert dist.get_backend() == "mpi" and dist.get_backend(dist.group.WORLD) == "mpi"
    assert dist.group.WORLD is dist.GroupMember.WORLD is not None
    assert dist.get_process_group_ranks(dist.group.WORLD) == [0, 1, 2, 3]
    assert dist.get_rank(dist.group.WORLD) == R and dist.get_world_size(dist.group.WORLD) == 4
    assert dist.group.WORLD.rank() == R and dist.group.WORLD.size() == 4
check("world", world)

odd = dist.new_group([3, 1])          # sorted, as in PyTorch: group rank 0 is global rank 1
even = dist.new_group([0, 2], timeout=datetime.timedelta(seconds=1))
solo = dist.new_group([2])
everyone = dist.new_group()

def membership():
    if R in (1, 3):
        assert odd is not dist.GroupMember.NON_GROUP_MEMBER
        assert dist.get_rank(odd) == (R - 1) // 2 and dist.get_world_size(odd) == 2
        assert dist.get_process_group_ranks(odd) == [1, 3]
        assert dist.get_global_rank(odd, 1) == 3 and dist.get_group_rank(odd, 3) == 1
        assert even is dist.GroupMember.NON_GROUP_MEMBER
        assert dist.get_rank(even) == -1 and dist.get_world_size(even) == -1
    else:
        assert odd is dist.GroupMember.NON_GROUP_MEMBER
        assert dist.get_rank(even) == R // 2
    assert (solo is dist.GroupMember.NON_GROUP_MEMBER) == (R != 2)
    assert dist.get_world_size(everyone) == 4 and dist.get_rank(everyone) == R
    try:
        dist.get_group_rank(everyone, 7)
    except ValueError as exc:
        assert "Global rank 7 is not part of group" in str(exc)
    else:
        raise AssertionError("no error for a rank outside the group")
check("membership", membership)

def non_members_warn_and_return_none():
    group = even if R in (1, 3) else odd
    t = ember.ones(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert dist.all_reduce(t, group=group) is None
        assert dist.broadcast(t, src=0, group=group) is None
        assert dist.all_gather([ember.zeros(3)] * 2, t, group=group) is None
        assert dist.barrier(group=group) is None
        assert dist.recv(t, src=0, group=group) == -1
        assert dist.all_gather_object([None, None], 1, group=group) is None
    texts = [str(w.message) for w in caught]
    assert len(texts) == 6, texts
    assert all(f"on global rank {R} which does not belong to the given group" in m
               for m in texts), texts
    assert t.tolist() == [1.0, 1.0, 1.0]
check("non_members", non_members_warn_and_return_none)

def subgroup_collectives():
    if R in (1, 3):
        t = ember.full((2,), float(R))
        dist.all_reduce(t, group=odd)
        assert t.tolist() == [4.0, 4.0], t.tolist()
        b = ember.full((2,), float(R))
        dist.broadcast(b, src=3, group=odd)                 # a global rank
        assert b.tolist() == [3.0, 3.0]
        c = ember.full((2,), float(R))
        dist.broadcast(c, group=odd, group_src=0)           # a group rank: global rank 1
        assert c.tolist() == [1.0, 1.0]
        d = ember.full((1,), float(R))
        dist.reduce(d, group=odd, group_dst=1)
        assert d.tolist() == ([4.0] if R == 3 else [1.0]), d.tolist()
        outs = [ember.zeros(1) for _ in range(2)]
        dist.all_gather(outs, ember.full((1,), float(R)), group=odd)
        assert [o.item() for o in outs] == [1.0, 3.0]
        gl = [ember.zeros(1) for _ in range(2)] if R == 1 else None
        dist.gather(ember.full((1,), R * 10.0), gl, dst=1, group=odd)
        if R == 1:
            assert [g.item() for g in gl] == [10.0, 30.0]
        objs = [None]
        if R == 3:
            objs = [{"from": 3}]
        dist.broadcast_object_list(objs, src=3, group=odd)
        assert objs == [{"from": 3}]
        everything = [None, None]
        dist.all_gather_object(everything, R, group=odd)
        assert everything == [1, 3]
    else:
        t = ember.full((3,), float(R + 1))
        dist.all_reduce(t, group=even)
        assert t.tolist() == [4.0] * 3
        got = [None]
        dist.scatter_object_list(got, ["a", "b"] if R == 2 else None, group_src=1, group=even)
        assert got == ["a" if R == 0 else "b"], got
    if R == 2:
        s = ember.ones(2)
        dist.all_reduce(s, group=solo)                      # a group of one
        assert s.tolist() == [1.0, 1.0]
    e = ember.full((1,), 1.0)
    dist.all_reduce(e, group=everyone)
    assert e.item() == 4.0
check("subgroup_collectives", subgroup_collectives)

def subgroup_point_to_point():
    if R in (1, 3):
        t = ember.zeros(2)
        if R == 1:
            dist.send(ember.full((2,), 5.0), group=odd, group_dst=1)
            assert dist.recv(t, group=odd, group_src=1) == 3    # the sender's global rank
            assert t.tolist() == [7.0, 7.0]
        else:
            assert dist.recv(t, src=1, group=odd) == 1
            assert t.tolist() == [5.0, 5.0]
            work = dist.isend(ember.full((2,), 7.0), dst=1, group=odd)
            work.wait()
        try:
            dist.send(t, dst=0, group=odd)  # global rank 0 is not in the group
        except ValueError as exc:
            assert "Global rank 0 is not part of group" in str(exc)
        else:
            raise AssertionError("sent to a rank outside the group")
        box = [None]
        if R == 1:
            dist.send_object_list([("x", 1)], group=odd, group_dst=1)
        else:
            assert dist.recv_object_list(box, group=odd, group_src=0) == 1
            assert box == [("x", 1)]
check("subgroup_p2p", subgroup_point_to_point)

def subgroups():
    mine, groups = dist.new_subgroups(group_size=2)
    assert len(groups) == 2 and dist.get_process_group_ranks(mine) == [R - R % 2, R - R % 2 + 1]
    t = ember.full((1,), float(R))
    dist.all_reduce(t, group=mine)
    assert t.item() == (1.0 if R < 2 else 5.0), t.item()
    mine, groups = dist.new_subgroups_by_enumeration([[0, 3], [2]])
    assert len(groups) == 2 and (mine is None) == (R == 1)
    if R in (0, 3):
        u = ember.full((1,), float(R))
        dist.all_reduce(u, group=mine)
        assert u.item() == 3.0
    bads = [({"group_size": 3}, "must be divisible"), ({"group_size": 0}, "must be positive"),
            ({"group_size": 8}, "must not exceed the world size")]
    if not ember.cuda.is_available():  # without a size: one group per GPU count
        bads.append(({}, "Default group size only takes effect when CUDA is available"))
    for bad, text in bads:
        try:
            dist.new_subgroups(**bad)
        except ValueError as e:
            assert text in str(e), str(e)
        else:
            raise AssertionError(f"new_subgroups({bad}) worked")
    try:
        dist.new_subgroups_by_enumeration([[0, 1], [1, 2]])
    except ValueError as e:
        assert "Rank 1 has appeared in both subgroup [0, 1] and [1, 2]" in str(e), str(e)
    else:
        raise AssertionError("overlapping subgroups were made")
check("subgroups", subgroups)

def group_timeout():
    # the even group has a 1 s timeout: rank 2 does not come, rank 0 times out alone
    if R == 2:
        import time
        time.sleep(1.5)  # busy (not gone): rank 0's wait ends at the group's timeout
    if R == 0:
        try:
            dist.all_reduce(ember.ones(1), group=even)
        except dist.DistBackendError as exc:
            assert "timed out after 1 s" in str(exc) and "[0, 2]" in str(exc), str(exc)
        else:
            raise AssertionError("no timeout")
check("group_timeout", group_timeout)

# a timed-out wait breaks the job on that rank (as PyTorch's aborted communicator does);
# destroy and re-init give a fresh one
def destroy_and_reinit():
    dist.destroy_process_group()
    assert not dist.is_initialized() and dist.group.WORLD is None
    dist.init_process_group(backend="mpi", rank=R, world_size=4)
    t = ember.full((2,), float(R))
    dist.all_reduce(t)
    assert t.tolist() == [6.0, 6.0]
    g = dist.new_group([1, 2])
    if R in (1, 2):
        u = ember.ones(1)
        dist.all_reduce(u, group=g)
        assert u.item() == 2.0
    dist.destroy_process_group(g)
    assert dist.is_initialized()
    dist.barrier()
check("reinit", destroy_and_reinit)

def split_and_single_collectives():
    # split_group: lists of the parent's group ranks; each rank gets its group or None
    before = dist.get_pg_count()
    halves = dist.split_group(split_ranks=[[3, 0], [1]])
    assert dist.get_pg_count() == before + 1
    if R == 2:
        assert halves is None
    else:
        ranks = [0, 3] if R in (0, 3) else [1]
        assert dist.get_process_group_ranks(halves) == ranks, dist.get_process_group_ranks(halves)
        u = ember.full((1,), float(R))
        dist.all_reduce(u, group=halves)
        assert u.item() == sum(ranks)
    odd = dist.new_group([3, 1])
    if R in (1, 3):  # a split of a subgroup: its group ranks (0 -> 1, 1 -> 3)
        parts = dist.split_group(odd, [[0], [1]])
        assert dist.get_process_group_ranks(parts) == [R]
    for bad, text in (([], "cannot be None or empty"), ([[0, 1], [1]], "more than one split"),
                      ([[7]], "not a rank of the parent group")):
        try:
            dist.split_group(split_ranks=bad)
        except ValueError as exc:
            assert text in str(exc), str(exc)
        else:
            raise AssertionError(f"split_group took {bad}")
    # PyTorch's newer names of the tensor collectives
    out = ember.zeros(8)
    dist.all_gather_single(out, ember.full((2,), float(R)))
    assert out.tolist() == [0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
    mine = ember.zeros(2)
    dist.reduce_scatter_single(mine, ember.arange(8, dtype=ember.float32))
    assert mine.tolist() == [4.0 * 2 * R, 4.0 * (2 * R + 1)]
    assert dist.supports_complex(dist.ReduceOp.SUM)
    assert not dist.supports_complex(dist.ReduceOp.MAX)
    assert not dist.is_ucc_available() and not dist.is_xccl_available()
    # a breakpoint on a rank that does not exist stops nobody: every rank passes the barrier
    dist.breakpoint(rank=99)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        dist.breakpoint(rank=R, skip=1)  # the first call from here is skipped on every rank
    assert any("Skip the breakpoint" in str(w.message) for w in seen)
    dist.barrier()
check("split_and_single_collectives", split_and_single_collectives)

dist.destroy_process_group()
emit({"label": "end", "error": None})
"""

LABELS = ["world", "membership", "non_members", "subgroup_collectives", "subgroup_p2p",
          "subgroups", "group_timeout", "split_and_single_collectives", "reinit", "end"]


@pytest.fixture(scope="module")
def groups_run(tmp_path_factory):
    result = run_ranks(4, GROUPS, tmp_path_factory.mktemp("groups"), timeout=90)
    assert result.returncode == 0, result.output[-4000:]
    return result


@pytest.mark.parametrize("label", LABELS)
def test_process_groups(groups_run, label):
    for r in range(4):
        seen = {v["label"]: v["error"] for v in groups_run.values.get(r, [])}
        assert label in seen, f"rank {r} did not report {label}\n{groups_run.output[-3000:]}"
        assert seen[label] is None, f"rank {r}:\n{seen[label]}"


INIT_ERRORS = PRELUDE + """
import sys
R = int(os.environ["PMI_RANK"])

def expect_error(kind, text, fn):
    def run():
        try:
            fn()
        except kind as exc:
            assert text in str(exc), str(exc)
        else:
            raise AssertionError(f"no {kind.__name__}")
    return run

check("rank_given_wrong", expect_error(
    ValueError, f"rank={1 - R}, but MPI started this process as rank {R} of 2",
    lambda: dist.init_process_group(rank=1 - R)))
check("world_size_wrong", expect_error(
    ValueError, "mpiexec -n 3 python script.py", lambda: dist.init_process_group(world_size=3)))
os.environ["WORLD_SIZE"] = "5"
check("env_world_size_wrong", expect_error(
    ValueError, "WORLD_SIZE=5 in the environment", lambda: dist.init_process_group()))
os.environ["WORLD_SIZE"] = "2"
os.environ["RANK"] = str(R)
check("timeout_type", expect_error(
    TypeError, "Expected timeout argument to be of type datetime.timedelta",
    lambda: dist.init_process_group(timeout=30)))
check("bad_backend", expect_error(
    ValueError, "Invalid backend: 'tcp'", lambda: dist.init_process_group(backend="tcp")))
check("not_initialized", expect_error(
    ValueError, "Default process group has not been initialized", lambda: dist.get_rank()))
assert not dist.is_initialized()

def init_ok():
    dist.init_process_group(rank=R, world_size=2, timeout=datetime.timedelta(seconds=20))
    assert dist.get_rank() == R and dist.get_world_size() == 2
    assert dist.get_debug_level() == dist.DebugLevel.DETAIL  # read at init from the env
check("init_ok", init_ok)
check("init_twice", expect_error(
    ValueError, "trying to initialize the default process group twice!",
    lambda: dist.init_process_group()))
t = ember.full((1,), R + 1.0)
check("works", lambda: dist.all_reduce(t))
assert t.item() == 3.0
dist.destroy_process_group()
check("destroy_twice", expect_error(
    ValueError, "Default process group has not been initialized",
    lambda: dist.destroy_process_group()))
emit({"label": "end", "error": None})
"""


def test_init_checks_on_two_ranks(tmp_path):
    result = run_ranks(2, INIT_ERRORS, tmp_path, timeout=60,
                       env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL"})
    assert result.returncode == 0, result.output[-4000:]
    labels = ["rank_given_wrong", "world_size_wrong", "env_world_size_wrong", "timeout_type",
              "bad_backend", "not_initialized", "init_ok", "init_twice", "works",
              "destroy_twice", "end"]
    for r in range(2):
        seen = {v["label"]: v["error"] for v in result.values.get(r, [])}
        for label in labels:
            assert label in seen, (r, label, result.output[-3000:])
            assert seen[label] is None, f"rank {r} {label}:\n{seen[label]}"
