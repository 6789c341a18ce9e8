"""Faults: a rank that raises, exits, hangs or is killed never leaves the others hanging.

Each test starts a small MPI job (``mpi_launch.run_ranks``) whose ranks report what they saw
(the error type and message, how long the wait took) through ``emit``. The job's timeout is
long (60 s) where the point is that the ranks fail *before* it, from a notice or a liveness
check, and short (2 or 3 s) where the point is the timeout itself. After every job the test
checks that none of its ranks is still running.
"""

from __future__ import annotations

import os
import textwrap
import time

import pytest
from mpi_launch import mpi_available, run_ranks

pytestmark = [pytest.mark.distributed,
              pytest.mark.skipif(not mpi_available(), reason="needs mpi4py and mpiexec "
                                 "(pip install 'ember-core[distributed]')")]

PRELUDE = """
import datetime, os, signal, sys, time
import ember
import ember.distributed as dist

emit({"pid": os.getpid()})

def init(seconds):
    dist.init_process_group(timeout=datetime.timedelta(seconds=seconds))
    return dist.get_rank(), dist.get_world_size()

def attempt(label, fn):
    start = time.monotonic()
    try:
        fn()
    except Exception as exc:
        emit({"label": label, "error": type(exc).__name__, "message": str(exc),
              "seconds": time.monotonic() - start})
        return exc
    emit({"label": label, "error": None, "seconds": time.monotonic() - start})
"""


def launch(n: int, body: str, tmp_path, timeout: float = 60, env=None):
    """Run ``PRELUDE + body`` on ``n`` ranks; check no rank outlives the job."""
    start = time.monotonic()
    result = run_ranks(n, PRELUDE + textwrap.dedent(body), tmp_path, timeout=timeout, env=env)
    result.seconds = time.monotonic() - start
    pids = [v["pid"] for vals in result.values.values() for v in vals if "pid" in v]
    assert_gone(pids)
    return result


def assert_gone(pids) -> None:
    deadline = time.monotonic() + 5
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if _running(p)]
        if alive:
            time.sleep(0.05)
    assert not alive, f"ranks still running after the job: {alive}"


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def reports(result, rank: int) -> dict:
    """A rank's ``attempt`` reports by label."""
    return {v["label"]: v for v in result.values.get(rank, []) if "label" in v}


def test_a_rank_that_raises_fails_every_other_rank_at_once(tmp_path):
    result = launch(4, """
        R, N = init(60)
        if R == 2:
            raise ValueError("boom on purpose")
        attempt("all_reduce", lambda: dist.all_reduce(ember.ones(1000)))
        attempt("after", lambda: dist.broadcast(ember.ones(3), src=0))
    """, tmp_path)
    assert result.returncode != 0
    assert "ValueError: boom on purpose" in result.stderr
    for r in (0, 1, 3):
        seen = reports(result, r)
        first = seen["all_reduce"]
        assert first["error"] == "DistBackendError", (r, first)
        assert "rank 2 failed: ValueError: boom on purpose" in first["message"]
        assert first["seconds"] < 10  # a notice, not the 60 s timeout
        # the group refuses further work, naming the first failure
        assert seen["after"]["error"] == "DistBackendError"
        assert "rank 2 failed" in seen["after"]["message"]
    assert result.seconds < 30


def test_a_rank_that_exits_early_is_named(tmp_path):
    result = launch(3, """
        R, N = init(60)
        if R == 1:
            sys.exit(0)
        attempt("all_reduce", lambda: dist.all_reduce(ember.ones(10)))
    """, tmp_path)
    for r in (0, 2):
        seen = reports(result, r)["all_reduce"]
        assert seen["error"] == "DistBackendError", (r, seen)
        assert "rank 1 has left the process group (its program ended)" in seen["message"]
        assert seen["seconds"] < 10
    assert result.seconds < 30


def test_a_rank_that_took_part_and_left_is_not_blamed(tmp_path):
    """Rank 1 sends its part of a reduce and exits while the root still waits for a slow
    rank 2: the exit notice says rank 1 had issued that collective, so the root's wait goes
    on past the liveness checks and every rank succeeds."""
    result = launch(3, """
        R, N = init(60)
        pair = dist.new_group([0, 2])
        t = ember.full((4,), float(R + 1))
        if R == 2:
            time.sleep(1.5)
        attempt("reduce", lambda: dist.reduce(t, dst=0))
        if R != 1:
            attempt("pair", lambda: dist.all_reduce(ember.ones(2), group=pair))
        if R == 0:
            emit({"label": "value", "value": t.tolist()})
    """, tmp_path)
    assert result.returncode == 0, result.output[-3000:]
    for r in range(3):
        assert reports(result, r)["reduce"]["error"] is None, reports(result, r)
    assert reports(result, 0)["reduce"]["seconds"] > 1.0  # it did wait past the checks
    assert reports(result, 0)["value"]["value"] == [6.0] * 4
    for r in (0, 2):
        assert reports(result, r)["pair"]["error"] is None


def test_a_rank_that_hangs_times_out_the_others_and_the_job_ends(tmp_path):
    result = launch(3, """
        R, N = init(2)
        if R == 1:
            time.sleep(120)  # hangs: never joins
        exc = attempt("all_reduce", lambda: dist.all_reduce(ember.ones(3)))
        raise exc
    """, tmp_path, timeout=60)
    for r in (0, 2):
        seen = reports(result, r)["all_reduce"]
        assert seen["error"] == "DistBackendError"
        assert "ALLREDUCE (SequenceNumber=1) timed out after 2 s" in seen["message"]
        assert "not every rank of the group [0, 1, 2] joined it" in seen["message"]
        assert 1.9 < seen["seconds"] < 10
    # the failing ranks give the hung one the group's timeout to end, then abort the job
    assert "did not end within 2 s; aborting the MPI job" in result.stderr
    assert result.returncode != 0
    assert result.seconds < 30


def test_a_rank_killed_by_sigkill_ends_the_job_fast(tmp_path):
    result = launch(3, """
        R, N = init(60)
        if R == 1:
            time.sleep(0.3)
            os.kill(os.getpid(), signal.SIGKILL)
        attempt("all_reduce", lambda: dist.all_reduce(ember.ones(3)))
    """, tmp_path, timeout=60)
    assert result.returncode != 0
    assert "signal 9" in result.output or "Killed" in result.output, result.output[-2000:]
    assert result.seconds < 20  # the launcher tears the job down, no 60 s timeout
    assert len([v for vals in result.values.values() for v in vals if "pid" in v]) == 3


MISMATCHES = """
    def run(label, fn):
        dist.init_process_group(timeout=datetime.timedelta(seconds=10))
        attempt(label, fn)
        dist.destroy_process_group()

    R = int(os.environ["PMI_RANK"])
    run("shape", lambda: dist.all_reduce(ember.ones(3 + (R == 1))))
    run("dtype", lambda: dist.all_reduce(ember.ones(3, dtype=ember.float64 if R == 2
                                                       else ember.float32)))
    run("op", lambda: dist.all_reduce(ember.ones(3)) if R else dist.broadcast(ember.ones(3), 0))
    run("same", lambda: dist.all_gather([ember.zeros(2) for _ in range(4)], ember.ones(2)))
"""


def test_mismatched_collectives_in_detail_mode_fail_on_every_rank(tmp_path):
    result = launch(4, MISMATCHES, tmp_path, env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL"})
    assert result.returncode == 0, result.output[-3000:]
    aspects = {"shape": "Tensor shapes: [3]vs [4]", "dtype": "Tensor dtypes",
               "op": "Op type: "}
    for r in range(4):
        seen = reports(result, r)
        for label, aspect in aspects.items():
            assert seen[label]["error"] == "DistBackendError", (r, label, seen[label])
            message = seen[label]["message"]
            assert message.startswith("Detected mismatch between collectives on ranks. Rank "
                                      f"{r} is running collective: CollectiveFingerPrint("
                                      "SequenceNumber=1, OpType="), message
            assert "Collectives differ in the following aspects:" in message
            assert aspect in message or aspect.replace("[3]vs [4]", "[4]vs [3]") in message
        assert seen["same"]["error"] is None  # matching collectives pass the check


def test_mismatched_shapes_without_debug_never_hang(tmp_path):
    """Without DETAIL, MPI decides: a mismatched all_reduce may even complete (with undefined
    values) and a mismatched broadcast fails in MPI. Whatever happens ends within the
    group's timeout on every rank, with a DistBackendError when it fails."""
    result = launch(4, """
        def run(label, fn):
            dist.init_process_group(timeout=datetime.timedelta(seconds=3))
            attempt(label, fn)
            dist.destroy_process_group()

        R = int(os.environ["PMI_RANK"])
        run("all_reduce", lambda: dist.all_reduce(ember.ones(50_000 + 7 * R)))
        run("broadcast", lambda: dist.broadcast(ember.ones(50_000 + 7 * R), src=0))
        out = ember.zeros(4 * (1000 + R))
        run("all_gather", lambda: dist.all_gather_into_tensor(out, ember.ones(1000 + R)))
        run("reduce", lambda: dist.reduce(ember.ones(1000 + R), dst=3))
        emit({"label": "end"})
    """, tmp_path, timeout=90)
    assert result.returncode == 0, result.output[-3000:]
    for r in range(4):
        seen = reports(result, r)
        assert "end" in seen, (r, result.output[-3000:])
        for label in ("all_reduce", "broadcast", "all_gather", "reduce"):
            assert seen[label]["error"] in (None, "DistBackendError"), seen[label]
            assert seen[label]["seconds"] < 5
    failures = [reports(result, r)["broadcast"] for r in range(1, 4)]
    assert any(f["error"] for f in failures)  # MPI notices a broadcast of the wrong size
    assert all("failed in MPI" in f["message"] for f in failures if f["error"])


def test_invalid_arguments_fail_before_anything_is_sent(tmp_path):
    """Each bad call raises its error on every rank before sending: the DETAIL fingerprint
    check (on here) and the final all_reduce would see any stray message."""
    result = launch(2, """
        R, N = init(20)
        f32, b = ember.ones(4), ember.ones(4, dtype=ember.bool)
        checks = {
            "all_gather_length": lambda: dist.all_gather([ember.zeros(4)] * 3, f32),
            "all_gather_dtype": lambda: dist.all_gather([ember.zeros(4, dtype=ember.int64)] * 2,
                                                        f32),
            "all_gather_shape": lambda: dist.all_gather([ember.zeros(5)] * 2, f32),
            "reduce_scatter_length": lambda: dist.reduce_scatter(f32, [f32] * 3),
            "gather_list_on_non_dst": lambda: dist.gather(
                f32, [ember.zeros(4)] * (2 if R else 1), dst=0),
            "gather_list_missing": lambda: dist.gather(f32, None, dst=R),
            "scatter_list_on_non_src": lambda: dist.scatter(
                f32, [ember.zeros(4)] * 2 if R else None, src=0),
            "band_float": lambda: dist.all_reduce(f32, op=dist.ReduceOp.BAND),
            "bor_float64": lambda: dist.all_reduce(ember.ones(2, dtype=ember.float64),
                                                   op=dist.ReduceOp.BOR),
            "bxor_reduce": lambda: dist.reduce(f32, dst=0, op=dist.ReduceOp.BXOR),
            "avg_bool": lambda: dist.all_reduce(b, op=dist.ReduceOp.AVG),
            "avg_bool_reduce_scatter": lambda: dist.reduce_scatter_tensor(
                ember.zeros(2, dtype=ember.bool), b, op=dist.ReduceOp.AVG),
            "op_string": lambda: dist.all_reduce(f32, op="sum"),
            "all_to_all_length": lambda: dist.all_to_all([f32], [f32, f32]),
            "all_to_all_single_splits": lambda: dist.all_to_all_single(
                ember.zeros(4), f32, [1, 1], [3, 3]),
            "all_to_all_single_uneven": lambda: dist.all_to_all_single(
                ember.zeros(3), ember.ones(3)),
            "agit_size": lambda: dist.all_gather_into_tensor(ember.zeros(7), f32),
            "rst_size": lambda: dist.reduce_scatter_tensor(ember.zeros(3), f32),
            "src_out_of_range": lambda: dist.broadcast(f32, src=5),
            "src_and_group_src": lambda: dist.broadcast(f32, src=0, group_src=0),
            "send_to_self": lambda: dist.send(f32, dst=R),
            "recv_from_self": lambda: dist.recv(f32, src=R),
            "not_a_tensor": lambda: dist.all_reduce([1.0, 2.0]),
            "monitored_timeout_type": lambda: dist.monitored_barrier(timeout=5),
        }
        for label, fn in checks.items():
            attempt(label, fn)
        t = ember.full((3,), float(R + 1))
        attempt("still_in_step", lambda: dist.all_reduce(t))
        emit({"label": "value", "value": t.tolist()})
    """, tmp_path, env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL"})
    assert result.returncode == 0, result.output[-3000:]
    expected = {
        "all_gather_length": ("ValueError", "tensor_list has 3 tensors, but the group has 2"),
        "all_gather_dtype": ("TypeError", "dtype"),
        "all_gather_shape": ("ValueError", "has shape [5], but the input has shape [4]"),
        "reduce_scatter_length": ("ValueError", "input_list has 3 tensors"),
        "gather_list_missing": ("ValueError", "``gather_list`` must be specified on destination"),
        "band_float": ("RuntimeError", "Cannot use ReduceOp.BAND with non-integral dtype"),
        "bor_float64": ("RuntimeError", "Cannot use ReduceOp.BOR with non-integral dtype"),
        "bxor_reduce": ("RuntimeError", "Cannot use ReduceOp.BXOR with non-integral dtype"),
        "avg_bool": ("RuntimeError", "Cannot use ReduceOp.AVG with boolean inputs"),
        "avg_bool_reduce_scatter": ("RuntimeError", "Cannot use ReduceOp.AVG with boolean"),
        "op_string": ("ValueError", "Unsupported ReduceOp 'sum'"),
        "all_to_all_length": ("ValueError", "one tensor per rank (2)"),
        "all_to_all_single_splits": ("ValueError", "input_split_sizes [3, 3] must have 2 "
                                                   "entries summing to dim 0 (4)"),
        "all_to_all_single_uneven": ("ValueError", "dim 0 (3) is not divisible by the group "
                                                   "size (2)"),
        "agit_size": ("ValueError", "output tensor size must be equal to world_size times "
                                    "input tensor size"),
        "rst_size": ("ValueError", "input tensor must be the same size as output size times "
                                   "world size"),
        "src_out_of_range": ("ValueError", "Global rank 5 is not part of group"),
        "src_and_group_src": ("ValueError", "Can't specify both src and group_src"),
        "send_to_self": ("ValueError", "Invalid destination rank: destination rank should "
                                       "not be the same as the rank of the current process."),
        "recv_from_self": ("ValueError", "Invalid source rank"),
        "not_a_tensor": ("TypeError", "Expected parameter `tensor` of type ember.Tensor"),
        "monitored_timeout_type": ("TypeError", "timeout must be a datetime.timedelta"),
    }
    for r in range(2):
        seen = reports(result, r)
        for label, (error, text) in expected.items():
            assert seen[label]["error"] == error, (r, label, seen[label])
            assert text in seen[label]["message"], (r, label, seen[label]["message"])
        gather = seen["gather_list_on_non_dst"]
        assert gather["error"] == "ValueError"
        assert ("must NOT be specified on non-destination" in gather["message"] if r else
                "gather_list has 1 tensors" in gather["message"])
        scatter = seen["scatter_list_on_non_src"]
        assert scatter["error"] == "ValueError"
        assert ("must NOT be specified on non-source" in scatter["message"] if r else
                "must be specified on source rank" in scatter["message"])
        assert seen["still_in_step"]["error"] is None
        assert seen["value"]["value"] == [3.0, 3.0, 3.0]


def test_monitored_barrier_names_the_missing_ranks(tmp_path):
    result = launch(4, """
        def part(label, absent, wait_all, busy=True):
            dist.init_process_group(timeout=datetime.timedelta(seconds=20))
            R = dist.get_rank()
            if R not in absent:
                attempt(label, lambda: dist.monitored_barrier(
                    timeout=datetime.timedelta(seconds=1), wait_all_ranks=wait_all))
            elif busy:
                time.sleep(1.5)
            dist.destroy_process_group()

        part("all", {2, 3}, True)
        part("first", {1, 3}, False)
        part("left", {3}, True, busy=False)
        part("none", set(), True)
    """, tmp_path)
    assert result.returncode == 0, result.output[-3000:]
    root = reports(result, 0)
    assert root["all"]["error"] == "DistBackendError"
    assert root["all"]["message"] == ("[Rank 0]: Ranks 2, 3 failed to pass monitoredBarrier "
                                      "in 1000 ms")
    assert 0.9 < root["all"]["seconds"] < 5
    assert root["first"]["message"] == ("[Rank 0]: Rank 1 failed to pass monitoredBarrier in "
                                        "1000 ms")
    # a rank that has left the group is missing at once, without waiting for the timeout
    assert root["left"]["message"] == ("[Rank 0]: Ranks 3 failed to pass monitoredBarrier in "
                                       "1000 ms")
    assert root["left"]["seconds"] < 0.9
    # a rank that reached the barrier waits for rank 0's release and times out
    waiting = reports(result, 1)["all"]
    assert waiting["error"] == "DistBackendError" and "monitored_barrier" in waiting["message"]
    for r in range(4):
        assert reports(result, r)["none"]["error"] is None
