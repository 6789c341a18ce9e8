"""``python -m ember.distributed.run``: torchrun's options and environment on MPICH's mpiexec.

Each launch runs a small rank program that writes what it saw (its environment, arguments,
pid) to ``rank<RANK>.json`` in an output folder; the tests read those files (the ranks' stdout
passes through hydra, which may interleave lines). Covered: the variables per rank, argument
passthrough, ``-m`` and ``--no-python``, exit statuses and the failure summary (a rank that
raises, one that exits non-zero, one killed by SIGKILL), SIGTERM and SIGINT to the launcher,
two launchers playing two machines on 127.0.0.1 (``--nnodes 2``), a host file of local
entries, the errors of bad command lines, and the DDP example against the single-process one.
After every launch no process of the job may be left (checked through /proc).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from mpi_launch import mpi_available, run_command

pytestmark = [pytest.mark.distributed,
              pytest.mark.skipif(not mpi_available(), reason="needs mpi4py and mpiexec "
                                 "(pip install 'ember-core[distributed]')")]

REPO = Path(__file__).resolve().parents[2]
LAUNCHER = [sys.executable, "-m", "ember.distributed.run"]
KEYS = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
        "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
        "TORCHELASTIC_RUN_ID", "OMP_NUM_THREADS"]

# the rank program: report, then do what argv[2] says
PROGRAM = f"""
import json, os, signal, sys, time
out, action = sys.argv[1], sys.argv[2]
rank = int(os.environ["RANK"])
info = {{k: os.environ.get(k) for k in {KEYS!r}}}
info.update(argv=sys.argv[1:], pid=os.getpid(), name=__name__, file=__file__)
if action == "mpi":
    from mpi4py import MPI
    info["mpi"] = [MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size(),
                   MPI.COMM_WORLD.allreduce(rank + 1)]
with open(os.path.join(out, f"rank{{rank}}.json.tmp"), "w") as f:
    json.dump(info, f)
os.replace(os.path.join(out, f"rank{{rank}}.json.tmp"), os.path.join(out, f"rank{{rank}}.json"))
target = int(sys.argv[3]) if action in ("raise", "exit", "kill") else -1
if action == "sleep":
    try:
        time.sleep(120)
    except KeyboardInterrupt:  # a Ctrl-C reached the rank as Python's exception
        open(os.path.join(out, f"interrupted{{rank}}"), "w").close()
        raise
if rank == target:
    if action == "raise":
        time.sleep(0.2)
        raise ValueError("rank failure on purpose")
    if action == "exit":
        sys.exit(3)
    if action == "kill":
        time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGKILL)
if action in ("raise", "kill", "exit"):
    time.sleep(1.0)
"""


@pytest.fixture
def job(tmp_path):
    """A folder with the rank program and an output folder; checks after the test that no
    process started from it is left."""
    (tmp_path / "out").mkdir()
    (tmp_path / "prog.py").write_text(PROGRAM)
    yield tmp_path
    assert_no_leftovers(tmp_path)


NUL = b"\0"


def leftovers(marker: Path) -> list[str]:
    needle = str(marker).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in cmdline and state != b"Z":
            found.append(f"{entry.name}: {cmdline.replace(NUL, b' ').decode()}")
    return found


def assert_no_leftovers(marker: Path, wait: float = 10.0) -> None:
    deadline = time.monotonic() + wait
    while (left := leftovers(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"processes left behind: {left}"


def launch(job: Path, *args: str, timeout: float = 60, env=None):
    return run_command([*LAUNCHER, *args], timeout, env=env, cwd=job)


def reports(job: Path) -> dict[int, dict]:
    return {int(p.stem.split(".")[0][4:]): json.loads(p.read_text())
            for p in (job / "out").glob("rank*.json")}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- one machine ---------------------------------------------------------------------------------
def test_environment_and_arguments_per_rank(job):
    done = launch(job, "--nproc-per-node", "3", "--master_port=29611", "prog.py",
                  str(job / "out"), "report", "--nproc-per-node", "7", "x y")
    assert done.returncode == 0, done.stderr
    got = reports(job)
    assert sorted(got) == [0, 1, 2]
    for rank, info in got.items():
        assert info["RANK"] == str(rank) and info["ROLE_RANK"] == str(rank)
        assert info["LOCAL_RANK"] == str(rank)
        assert info["WORLD_SIZE"] == info["LOCAL_WORLD_SIZE"] == info["ROLE_WORLD_SIZE"] == "3"
        assert info["GROUP_RANK"] == "0" and info["GROUP_WORLD_SIZE"] == "1"
        assert (info["MASTER_ADDR"], info["MASTER_PORT"]) == ("127.0.0.1", "29611")
        assert info["TORCHELASTIC_RUN_ID"] == "none"
        # torchrun's default with several ranks per machine, when the variable is not set
        assert info["OMP_NUM_THREADS"] == "1"
        # everything after the script is the script's, launcher-like options included
        assert info["argv"] == [str(job / "out"), "report", "--nproc-per-node", "7", "x y"]
        assert info["name"] == "__main__"
        assert info["file"] == str(job / "prog.py")
    assert len({info["pid"] for info in got.values()}) == 3


def test_is_torchelastic_launched_and_rdzv_options(job):
    (job / "flag.py").write_text(textwrap.dedent("""
        import json, os, sys
        import ember.distributed as dist
        rank = os.environ["RANK"]
        with open(os.path.join(sys.argv[1], f"rank{rank}.json"), "w") as f:
            json.dump({"launched": dist.is_torchelastic_launched(),
                       "run_id": os.environ["TORCHELASTIC_RUN_ID"],
                       "master": [os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]],
                       "omp": os.environ.get("OMP_NUM_THREADS")}, f)
    """))
    done = launch(job, "--nproc_per_node", "2", "--rdzv-endpoint", "127.0.0.1:29612",
                  "--rdzv_id", "job-42", "flag.py", str(job / "out"),
                  env={"OMP_NUM_THREADS": "2"})
    assert done.returncode == 0, done.stderr
    got = reports(job)
    assert [got[r]["launched"] for r in (0, 1)] == [True, True]
    assert {got[r]["run_id"] for r in (0, 1)} == {"job-42"}
    assert got[0]["master"] == ["127.0.0.1", "29612"]
    assert got[0]["omp"] == "2"  # a value the user set is kept


def test_module_and_no_python(job):
    package = job / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "train.py").write_text(PROGRAM)
    done = launch(job, "--nproc-per-node", "2", "-m", "mypkg.train", str(job / "out"),
                  "report", "--flag")
    assert done.returncode == 0, done.stderr
    got = reports(job)
    assert sorted(got) == [0, 1]
    assert got[1]["name"] == "__main__"
    assert got[1]["file"] == str(package / "train.py")
    assert got[1]["argv"] == [str(job / "out"), "report", "--flag"]

    for path in (job / "out").iterdir():
        path.unlink()
    done = launch(job, "--nproc-per-node", "2", "--no-python", sys.executable,
                  str(job / "prog.py"), str(job / "out"), "report")
    assert done.returncode == 0, done.stderr
    got = reports(job)
    assert sorted(got) == [0, 1] and got[0]["argv"] == [str(job / "out"), "report"]


def test_rank_that_raises_is_named_as_the_root_cause(job):
    """Rank 1 raises; the others then fail in their barrier (DistBackendError naming rank 1),
    possibly exiting first: the summary names rank 1 and its exception."""
    (job / "fails.py").write_text(textwrap.dedent("""
        import time
        import ember.distributed as dist
        dist.init_process_group("gloo")
        if dist.get_rank() == 1:
            time.sleep(0.3)
            raise ValueError("rank failure on purpose")
        dist.barrier()
    """))
    done = launch(job, "--nproc-per-node", "3", "fails.py")
    assert done.returncode == 1
    assert "ValueError: rank failure on purpose" in done.stderr
    root = re.search(r"first failure \(root cause\): (rank \d+ .*)", done.stderr)
    assert root, done.stderr
    assert root.group(1).startswith("rank 1 (local_rank 1, node 0")
    assert "exit code 1: ValueError: rank failure on purpose" in root.group(1)
    also = re.findall(r"also failed: rank (\d+) .*DistBackendError.*rank 1", done.stderr)
    assert sorted(also) == ["0", "2"], done.stderr


def test_exit_code_and_success(job):
    done = launch(job, "--nproc-per-node", "2", "prog.py", str(job / "out"), "exit", "1")
    assert done.returncode == 1
    assert re.search(r"root cause\): rank 1 \(local_rank 1, .*\): exit code 3", done.stderr)
    assert "also failed" not in done.stderr


def test_rank_killed_by_sigkill_is_named(job):
    """hydra kills every rank when one dies of a signal, and its message names rank 0's
    process: the launcher still names rank 2."""
    done = launch(job, "--nproc-per-node", "3", "prog.py", str(job / "out"), "kill", "2")
    assert done.returncode == 1
    pid = reports(job)[2]["pid"]
    assert re.search(rf"root cause\): rank 2 \(local_rank 2, node 0, host \S+, pid {pid}\): "
                     rf"killed by signal 9 \(SIGKILL\)", done.stderr), done.stderr
    assert "ended by mpiexec when the job failed: ranks 0, 1" in done.stderr


@pytest.mark.parametrize("signum, terminal", [(signal.SIGTERM, False), (signal.SIGINT, True)],
                         ids=["SIGTERM to the launcher", "Ctrl-C at the terminal"])
def test_signal_to_the_launcher_ends_every_rank(job, signum, terminal):
    """SIGTERM to the launcher, or SIGINT to its whole process group as a terminal's Ctrl-C
    sends it: every rank ends (a Ctrl-C reaches each rank once, as KeyboardInterrupt)."""
    proc = subprocess.Popen([*LAUNCHER, "--nproc-per-node", "2", "--shutdown-timeout", "5",
                             "prog.py", str(job / "out"), "sleep"], cwd=job,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while len(reports(job)) < 2:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the ranks did not start"
            time.sleep(0.1)
        pids = [info["pid"] for info in reports(job).values()]
        if terminal:
            os.killpg(proc.pid, signum)
        else:
            proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 128 + signum, err
        assert f"the launcher received {signal.Signals(signum).name}" in err
        for pid in pids:
            assert not Path(f"/proc/{pid}").exists() or \
                Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0] == b"Z"
        if terminal:
            assert sorted(p.name for p in (job / "out").glob("interrupted*")) == \
                ["interrupted0", "interrupted1"], err
            assert "force abort" not in err  # hydra got one Ctrl-C, not two
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)


def test_killing_the_launcher_ends_the_job(job):
    """SIGKILL to the launcher alone (it can pass nothing on): mpiexec dies with it, and
    hydra's proxy ends the ranks."""
    proc = subprocess.Popen([*LAUNCHER, "--nproc-per-node", "2", "prog.py", str(job / "out"),
                             "sleep"], cwd=job, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while len(reports(job)) < 2:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        proc.kill()
        proc.wait(timeout=10)
        assert_no_leftovers(job, wait=15)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# -- several machines, played on 127.0.0.1 -------------------------------------------------------
def _two_nodes(job: Path, *program: str, timeout: float = 60):
    port = free_port()
    common = [*LAUNCHER, "--nnodes", "2", "--nproc-per-node", "2", "--master-addr",
              "127.0.0.1", "--master-port", str(port), "--rdzv-conf", "join_timeout=30",
              "prog.py", *program]
    # node 1 first: it waits for node 0, as a machine that comes up early would
    node1 = subprocess.Popen(common[:3] + ["--node-rank", "1"] + common[3:], cwd=job,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        node0 = run_command(common[:3] + ["--node_rank", "0"] + common[3:], timeout, cwd=job)
        out1, err1 = node1.communicate(timeout=timeout)
    finally:
        try:
            os.killpg(node1.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        node1.wait(timeout=10)
    return node0, subprocess.CompletedProcess(node1.args, node1.returncode, out1, err1)


def test_two_launchers_play_two_machines(job):
    node0, node1 = _two_nodes(job, str(job / "out"), "mpi")
    assert node0.returncode == 0, node0.stderr
    assert node1.returncode == 0, node1.stderr
    got = reports(job)
    assert sorted(got) == [0, 1, 2, 3]
    for rank, info in got.items():
        assert info["mpi"] == [rank, 4, 10]  # MPI's ranks are the launcher's; allreduce works
        assert info["WORLD_SIZE"] == "4" and info["GROUP_WORLD_SIZE"] == "2"
        assert info["GROUP_RANK"] == str(rank // 2)
        assert info["LOCAL_RANK"] == str(rank % 2) and info["LOCAL_WORLD_SIZE"] == "2"
    assert "node 1: joined node 0" in node1.stderr


def test_two_machines_a_killed_rank_is_named_on_both(job):
    node0, node1 = _two_nodes(job, str(job / "out"), "kill", "2")
    pid = reports(job)[2]["pid"]
    for node in (node0, node1):
        assert node.returncode == 1
        assert re.search(rf"root cause\): rank 2 \(local_rank 0, node 1, host \S+, pid {pid}\): "
                         rf"killed by signal 9", node.stderr), node.stderr


def test_two_machines_ctrl_c_on_node_1_stops_every_rank(job):
    """A Ctrl-C to node 1's launcher goes to node 0, whose mpiexec passes it to every rank of
    both machines, once each; both launchers report it."""
    port = free_port()
    common = ["--nnodes", "2", "--nproc-per-node", "2", "--master-port", str(port),
              "--shutdown-timeout", "10", "prog.py", str(job / "out"), "sleep"]
    procs = [subprocess.Popen([*LAUNCHER, "--node-rank", str(k), *common], cwd=job,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              start_new_session=True) for k in (1, 0)]
    try:
        deadline = time.monotonic() + 60
        while len(reports(job)) < 4:
            assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
            assert time.monotonic() < deadline, "the ranks did not start"
            time.sleep(0.1)
        os.killpg(procs[0].pid, signal.SIGINT)
        for proc in procs:
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == 130, err
            assert "node 1's launcher received SIGINT" in err
        assert sorted(p.name for p in (job / "out").glob("interrupted*")) == \
            [f"interrupted{r}" for r in range(4)]
    finally:
        for proc in procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=10)


def test_hostfile_with_local_entries(job):
    (job / "hosts").write_text("# two nodes, both this machine\nlocalhost:2\n127.0.0.1:1\n")
    done = launch(job, "--hostfile", "hosts", "prog.py", str(job / "out"), "mpi")
    assert done.returncode == 0, done.stderr
    got = reports(job)
    assert [got[r]["GROUP_RANK"] for r in range(3)] == ["0", "0", "1"]
    assert [got[r]["LOCAL_RANK"] for r in range(3)] == ["0", "1", "0"]
    assert [got[r]["LOCAL_WORLD_SIZE"] for r in range(3)] == ["2", "2", "1"]
    assert {tuple(got[r]["mpi"][1:]) for r in range(3)} == {(3, 6)}


# -- bad command lines (no job starts) -----------------------------------------------------------
@pytest.mark.parametrize("args, message", [
    (["--nnodes", "1:2", "x.py"], "elastic MIN:MAX ranges are not supported"),
    (["--nproc-per-node", "0", "x.py"], "--nproc-per-node must be at least 1"),
    (["--nproc-per-node", "many", "x.py"], "Unsupported nproc_per_node value: many"),
    (["--no-python", "-m", "x"], "Don't use both the '--no-python' flag and the '--module'"),
    (["--nnodes", "2", "--node-rank", "2", "x.py"], "--node-rank 2 is not in [0, 2)"),
    (["--max-restarts", "3", "x.py"], "does not restart a failed job"),
    (["--rdzv-conf", "timeout=3", "x.py"], "unknown key 'timeout'"),
    (["--standalone", "--nnodes", "2", "x.py"], "--standalone runs on one machine"),
])
def test_bad_command_lines(args, message, capsys):
    from ember.distributed import run

    assert run.main(args) == 1
    assert message in capsys.readouterr().err


def test_bad_hostfile(tmp_path, capsys):
    from ember.distributed import run

    (tmp_path / "hosts").write_text("good:2\nbad:x\n")
    assert run.main(["--hostfile", str(tmp_path / "hosts"), "x.py"]) == 1
    assert "line 2: 'bad:x' is not 'host' or 'host:slots'" in capsys.readouterr().err


def test_failures_reported_on_stderr_are_read_back():
    """With a host file, a rank on another machine writes its record there: the launcher
    reads its failure from the line its bootstrap wrote to stderr (through mpiexec)."""
    from ember.distributed import _bootstrap, run

    lines = [f"{_bootstrap.MARKER} rank 5 failed (local_rank 1, node 2, host n2, pid 77): "
             f"{_bootstrap.describe_status(-9)}",
             f"{_bootstrap.MARKER} rank 6 failed (local_rank 0, node 3, host n3, pid 78): "
             f"{_bootstrap.describe_status(3)}"]
    found = run._parse_failure_lines(lines)
    assert found[5]["returncode"] == -9 and found[5]["status"] == \
        "killed by signal 9 (SIGKILL)"
    assert (found[6]["returncode"], found[6]["host"], found[6]["group_rank"]) == (3, "n3", 3)
    code, text = run._summary(8, found, 1, None)
    assert code == 1 and "rank 5 (local_rank 1, node 2, host n2, pid 77)" in text


def test_missing_mpiexec_names_the_extra(tmp_path, monkeypatch):
    from ember.distributed import run

    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(run.LaunchError, match=r"pip install 'ember-core\[distributed\]'"):
        run.find_mpiexec()


def test_nodes_that_never_meet_time_out(job):
    port = str(free_port())
    done = launch(job, "--nnodes", "2", "--node-rank", "1", "--master-port", port,
                  "--rdzv-conf", "join_timeout=1", "prog.py")
    assert done.returncode == 1
    assert f"could not reach node 0's launcher at 127.0.0.1:{port} within 1 s" in done.stderr
    done = launch(job, "--nnodes", "2", "--master-port", port, "--rdzv-conf",
                  "join_timeout=1", "prog.py")
    assert done.returncode == 1
    assert "node(s) [1] did not join within 1 s" in done.stderr


# -- the tutorial's example ----------------------------------------------------------------------
def _accuracy(output: str) -> float:
    found = re.findall(r"held-out accuracy (\d+\.\d+)%", output)
    assert found, output
    return float(found[-1]) / 100


@pytest.mark.slow  # 4 s on a quiet 2-core machine, 11-20 s on a loaded one
def test_ddp_digits_matches_single_process(tmp_path):
    """``examples/ddp_digits.py`` on 2 processes reaches the accuracy of
    ``examples/train_digits.py`` trained for the same epochs (4 here, to stay quick)."""
    examples = REPO / "examples"
    single = run_command([sys.executable, str(examples / "train_digits.py"), "--epochs", "4"],
                         240, cwd=tmp_path)
    assert single.returncode == 0, single.stdout + single.stderr
    ddp = run_command([*LAUNCHER, "--nproc-per-node", "2", str(examples / "ddp_digits.py"),
                       "--epochs", "4"], 240, cwd=tmp_path)
    assert ddp.returncode == 0, ddp.stdout + ddp.stderr
    assert "2 processes, 16 samples each per step (global batch 32)" in ddp.stdout
    assert len(re.findall(r"^epoch +\d+ ", ddp.stdout, re.M)) == 4  # rank 0 prints, alone
    single_acc, ddp_acc = _accuracy(single.stdout), _accuracy(ddp.stdout)
    assert ddp_acc >= 0.97
    assert abs(ddp_acc - single_acc) <= 0.015, (single_acc, ddp_acc)
    assert_no_leftovers(REPO / "examples" / "ddp_digits.py")


TORCH_PROGRAM = """
import pathlib
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group(backend="gloo")
model = DDP(nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
torch.manual_seed(dist.get_rank())
model(torch.randn(8, 4)).pow(2).mean().backward()
opt.step()
w = model.module.weight.detach().clone()
dist.all_reduce(w)
same = torch.allclose(w / dist.get_world_size(), model.module.weight.detach())
rank = dist.get_rank()
pathlib.Path(sys.argv[1], f"rank{rank}.txt").write_text(
    f"{rank} {torch.__name__}/{torch.__spec__.name} {same}")
dist.destroy_process_group()
"""


def test_torchrun_command_under_as_torch(job):
    """``python -m ember.as_torch -m torch.distributed.run ... train.py``: torchrun's command
    for a PyTorch DDP program, whose ranks import Ember as ``torch`` too."""
    (job / "train.py").write_text(TORCH_PROGRAM)
    done = run_command([sys.executable, "-m", "ember.as_torch", "-m", "torch.distributed.run",
                        "--nproc-per-node", "2", "train.py", str(job / "out")], 120, cwd=job)
    assert done.returncode == 0, done.stderr
    got = sorted(p.read_text() for p in (job / "out").glob("rank*.txt"))
    assert got == ["0 torch/ember True", "1 torch/ember True"], (got, done.stdout, done.stderr)
