"""``python -m ember.distributed.run``: torchrun for Ember, starting the ranks with MPICH.

One machine, N ranks::

    python -m ember.distributed.run --nproc-per-node 2 train.py --epochs 3
    python -m ember.distributed.run --nproc-per-node 2 -m mypackage.train
    python -m ember.distributed.run --nproc-per-node 2 --no-python ./a_program

Several machines, torchrun's way: the same command on every machine, each with its own
``--node-rank``; node 0's launcher listens on ``--master-addr``:``--master-port``, the others
join it, and the job starts when all ``--nnodes`` have joined::

    python -m ember.distributed.run --nnodes 2 --node-rank 0 --nproc-per-node 4 \\
        --master-addr 10.0.0.1 --master-port 29500 train.py        # on 10.0.0.1
    python -m ember.distributed.run --nnodes 2 --node-rank 1 --nproc-per-node 4 \\
        --master-addr 10.0.0.1 --master-port 29500 train.py        # on the other machine

or MPI's way, from one machine, with a host file (MPICH's format: ``host`` or ``host:slots``
per line; hydra reaches the other machines by ssh)::

    python -m ember.distributed.run --hostfile hosts --nproc-per-node 4 train.py

The ranks run under the mpich wheel's ``mpiexec`` (hydra), found beside the Python running
this (``pip install 'ember-core[distributed]'``), else on ``PATH``. Each rank gets torchrun's
environment: ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``GROUP_RANK``,
``GROUP_WORLD_SIZE``, ``ROLE_RANK``, ``ROLE_WORLD_SIZE``, ``ROLE_NAME``, ``MASTER_ADDR``,
``MASTER_PORT``, ``TORCHELASTIC_RUN_ID`` (so ``ember.distributed.is_torchelastic_launched()``
is true), ``TORCHELASTIC_RESTART_COUNT`` and ``TORCHELASTIC_MAX_RESTARTS``; and, as torchrun
does, ``OMP_NUM_THREADS=1`` when several ranks share a machine and it is not set.

The exit status is 0 when every rank succeeded; otherwise 1, after a summary that names the
rank that failed first (its exit code, or the signal that killed it) and the others. Ctrl-C,
SIGTERM, SIGHUP or SIGQUIT to the launcher are passed to every rank; ranks still running
``--shutdown-timeout`` seconds later are killed.

Every machine must hold the program and this Python environment at the same paths (mpiexec
starts the same command line everywhere). Between machines MPICH opens TCP connections of its
own besides ``--master-port`` (hydra's control port, chosen in ``MPIEXEC_PORT_RANGE`` when set,
and the MPI library's): the machines must reach each other on those ports.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["get_args_parser", "parse_args", "run", "main", "LaunchError"]

_BOOTSTRAP = str(Path(__file__).with_name("_bootstrap.py"))
_MARKER = "[ember.distributed.run]"
_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT")
_PROTOCOL = 1


class LaunchError(RuntimeError):
    """The launcher cannot start the job (bad options, no mpiexec, a node that never joined)."""


# -- the command line ---------------------------------------------------------------------------
def get_args_parser() -> argparse.ArgumentParser:
    """torchrun's options (dash and underscore spellings), plus ``--hostfile``."""
    parser = argparse.ArgumentParser(
        prog="python -m ember.distributed.run",
        description="Start N ranks of a training program under MPICH's mpiexec, with "
                    "torchrun's options and environment variables.")

    def add(*names, **kwargs):
        spellings = []
        for name in names:
            spellings.append(name)
            if name.startswith("--") and "-" in name[2:]:
                spellings.append("--" + name[2:].replace("-", "_"))
        parser.add_argument(*spellings, **kwargs)

    add("--nnodes", default="1:1", help="number of machines, or MIN:MAX (MIN must equal MAX: "
        "a job does not grow or shrink)")
    add("--nproc-per-node", default=None, help="ranks per machine: an integer, 'cpu' or "
        "'auto' (one per CPU core), 'gpu' (one per CUDA device); default 1, or a host "
        "file's slots")
    add("--node-rank", type=int, default=0, help="this machine's rank among --nnodes")
    add("--master-addr", default="127.0.0.1", help="address of node 0 (its launcher listens "
        "there when --nnodes > 1)")
    add("--master-port", type=int, default=None, help="port on node 0 (default 29500)")
    add("--rdzv-endpoint", default="", help="HOST:PORT, instead of --master-addr and "
        "--master-port")
    add("--rdzv-backend", default="static", choices=["static", "c10d"],
        help="accepted for torchrun's command lines: the rendezvous is always the "
             "launcher's own (node 0 listens, the others join)")
    add("--rdzv-id", default="none", help="the job's id (TORCHELASTIC_RUN_ID); nodes with "
        "another id cannot join")
    add("--rdzv-conf", default="", help="join_timeout=SECONDS (default 900): how long node 0 "
        "waits for the other nodes, and they for node 0")
    add("--standalone", action="store_true", help="one machine, a free port, a fresh run id")
    add("--max-restarts", type=int, default=0, help="must be 0: a failed job is not restarted")
    add("--shutdown-timeout", type=float, default=None, help="seconds between passing a "
        "signal to the ranks and killing them (default TORCH_ELASTIC_SHUTDOWN_TIMEOUT or 30)")
    add("--hostfile", default=None, help="a file of hosts (MPICH's format, 'host' or "
        "'host:slots' per line): one node per line, reached by mpiexec (ssh)")
    add("--mpiexec-args", default="", help="more options for mpiexec (one string, split "
        "as the shell does), e.g. '-iface eth0'")
    add("-m", "--module", action="store_true", help="run the program as 'python -m "
        "module'")
    add("--no-python", action="store_true", help="run the program itself, not with python")
    parser.add_argument("training_script", help="the program (a Python script, a module "
                        "with -m, or an executable with --no-python)")
    parser.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return parser


def parse_args(args=None) -> argparse.Namespace:
    return get_args_parser().parse_args(args)


# -- the plan -----------------------------------------------------------------------------------
@dataclass
class _Plan:
    nnodes: int
    node_rank: int
    nproc: int                    # ranks on this machine
    hosts: list[tuple[str, int]]  # host file mode: (host, ranks) per node
    master_addr: str
    master_port: int
    run_id: str
    join_timeout: float
    shutdown_timeout: float
    command: list[str]            # what each rank runs (after the bootstrap)
    mpiexec_args: list[str] = field(default_factory=list)


def _nnodes(value: str) -> int:
    parts = value.split(":")
    try:
        low, high = (int(parts[0]), int(parts[-1])) if len(parts) <= 2 else (0, -1)
    except ValueError:
        raise LaunchError(f'nnodes={value} is not in "MIN:MAX" format') from None
    if len(parts) > 2:
        raise LaunchError(f'nnodes={value} is not in "MIN:MAX" format')
    if low != high:
        raise LaunchError(f"--nnodes {value}: ember.distributed.run starts a fixed number of "
                          f"machines (elastic MIN:MAX ranges are not supported)")
    if low < 1:
        raise LaunchError(f"--nnodes must be at least 1, got {value}")
    return low


def _nproc(value: str | None) -> int:
    if value is None:
        return 1
    if value in ("cpu", "auto"):
        if value == "auto":
            gpus = _cuda_devices()
            if gpus:
                return gpus
        return os.cpu_count() or 1
    if value == "gpu":
        gpus = _cuda_devices()
        if not gpus:
            raise LaunchError("--nproc-per-node gpu: no CUDA device is available")
        return gpus
    try:
        n = int(value)
    except ValueError:
        raise LaunchError(f"Unsupported nproc_per_node value: {value}") from None
    if n < 1:
        raise LaunchError(f"--nproc-per-node must be at least 1, got {n}")
    return n


def _cuda_devices() -> int:
    try:
        import ember.cuda

        return ember.cuda.device_count() if ember.cuda.is_available() else 0
    except Exception:
        return 0


def read_hostfile(path: str) -> list[tuple[str, int]]:
    """``(host, slots)`` per line of an MPICH host file (``host`` or ``host:slots``)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise LaunchError(f"--hostfile {path}: {exc.strerror}") from None
    hosts = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        host, _, slots = line.partition(":")
        try:
            count = int(slots) if slots else 1
        except ValueError:
            count = 0
        if not host or " " in host or count < 1:
            raise LaunchError(f"--hostfile {path}, line {number}: {line!r} is not 'host' or "
                              f"'host:slots'")
        hosts.append((host, count))
    if not hosts:
        raise LaunchError(f"--hostfile {path} names no host")
    return hosts


def _join_timeout(conf: str) -> float:
    timeout = 900.0
    for item in filter(None, (part.strip() for part in conf.split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise LaunchError(f"--rdzv-conf {conf!r}: {item!r} is not key=value")
        if key.strip() != "join_timeout":
            raise LaunchError(f"--rdzv-conf: unknown key {key.strip()!r} (ember.distributed.run "
                              f"reads join_timeout)")
        timeout = float(value)
    return timeout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _rank_command(args) -> list[str]:
    if args.no_python and args.module:
        raise LaunchError("Don't use both the '--no-python' flag and the '--module' flag at "
                          "the same time.")
    if args.no_python:
        return [args.training_script, *args.training_script_args]
    python = os.getenv("PYTHON_EXEC", sys.executable)
    kind = "--run-module" if args.module else "--run-path"
    return [python, "-u", _BOOTSTRAP, kind, args.training_script, *args.training_script_args]


def _plan(args) -> _Plan:
    if args.max_restarts != 0:
        raise LaunchError(f"--max-restarts {args.max_restarts}: ember.distributed.run does not "
                          f"restart a failed job (use 0)")
    hosts: list[tuple[str, int]] = []
    nnodes = _nnodes(args.nnodes)
    if args.hostfile is not None:
        hosts = read_hostfile(args.hostfile)
        if args.nproc_per_node is not None:
            hosts = [(host, _nproc(args.nproc_per_node)) for host, _ in hosts]
        if args.nnodes != "1:1" and nnodes != len(hosts):
            raise LaunchError(f"--nnodes {args.nnodes} but --hostfile {args.hostfile} names "
                              f"{len(hosts)} hosts")
        if args.node_rank != 0:
            raise LaunchError("--hostfile starts every node from this one: leave --node-rank "
                              "at 0")
        nnodes = len(hosts)
    if not 0 <= args.node_rank < nnodes:
        raise LaunchError(f"--node-rank {args.node_rank} is not in [0, {nnodes}) "
                          f"(--nnodes {nnodes})")
    addr, port, run_id = args.master_addr, args.master_port, args.rdzv_id
    if args.rdzv_endpoint:
        host, sep, port_text = args.rdzv_endpoint.rpartition(":")
        if not sep or not port_text.isdigit():
            raise LaunchError(f"--rdzv-endpoint {args.rdzv_endpoint!r} is not HOST:PORT")
        addr, port = host.strip("[]") or addr, int(port_text)
    if args.standalone:
        if nnodes != 1 or hosts:
            raise LaunchError("--standalone runs on one machine: it cannot be used with "
                              "--nnodes > 1 or --hostfile")
        addr, port, run_id = "127.0.0.1", _free_port(), str(uuid.uuid4())
    shutdown = args.shutdown_timeout
    if shutdown is None:
        shutdown = float(os.environ.get("TORCH_ELASTIC_SHUTDOWN_TIMEOUT", 30))
    return _Plan(nnodes=nnodes, node_rank=args.node_rank, nproc=_nproc(args.nproc_per_node),
                 hosts=hosts, master_addr=addr, master_port=29500 if port is None else port,
                 run_id=run_id, join_timeout=_join_timeout(args.rdzv_conf),
                 shutdown_timeout=shutdown, command=_rank_command(args),
                 mpiexec_args=shlex.split(args.mpiexec_args))


def find_mpiexec() -> str:
    """MPICH's ``mpiexec``: beside this Python (the mpich wheel's), else on ``PATH``."""
    candidates = [Path(sys.executable).parent / "mpiexec"]
    found = shutil.which("mpiexec")
    if found:
        candidates.append(Path(found))
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    raise LaunchError(
        f"ember.distributed.run starts the ranks with MPICH's mpiexec, which is neither beside "
        f"{sys.executable} nor on PATH: pip install 'ember-core[distributed]' (mpi4py and the "
        f"mpich wheel)")


def _check_hydra(mpiexec: str) -> None:
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LaunchError(f"{mpiexec} --version failed: {exc}") from None
    if "HYDRA" not in out.upper():
        raise LaunchError(f"{mpiexec} is not MPICH's mpiexec (hydra), which "
                          f"ember.distributed.run needs: pip install 'ember-core[distributed]'")


# -- running ------------------------------------------------------------------------------------
def _job_env(plan: _Plan, layout: list[int]) -> dict[str, str]:
    """The variables every rank gets from the launcher (the rest come from the bootstrap)."""
    return {"MASTER_ADDR": plan.master_addr, "MASTER_PORT": str(plan.master_port),
            "TORCHELASTIC_RUN_ID": plan.run_id,
            "EMBER_RUN_LAYOUT": ",".join(str(n) for n in layout)}


def _node_env(plan: _Plan) -> dict[str, str]:
    """This machine's environment for its ranks (torchrun's OMP_NUM_THREADS default)."""
    env = dict(os.environ)
    env.pop("EMBER_RUN_DIR", None)
    per_machine = max([n for _, n in plan.hosts] or [plan.nproc])
    if "OMP_NUM_THREADS" not in env and per_machine > 1:
        print(f"{_MARKER} setting OMP_NUM_THREADS=1 for each rank (as torchrun does) to avoid "
              f"overloading the machine with {per_machine} ranks; set it to tune",
              file=sys.stderr, flush=True)
        env["OMP_NUM_THREADS"] = "1"
    return env


class _Signals:
    """Catch the launcher's termination signals while a job runs; remember the first."""

    def __init__(self) -> None:
        self.received: int | None = None   # the signal the launcher received
        self.at = 0.0                       # when the ranks were told to stop
        self.stopped: str | None = None     # why the launcher stopped the job itself
        self.remote: tuple[int, int] | None = None  # (node, signal) another node received
        self._old: dict[int, object] = {}
        self.targets: list[subprocess.Popen] = []
        self.notify: list = []              # called with each signal received (node k)

    def __enter__(self):
        for name in _SIGNALS:
            if hasattr(signal, name):
                signum = getattr(signal, name)
                self._old[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for signum, old in self._old.items():
            signal.signal(signum, old)

    def _handle(self, signum, frame) -> None:
        if self.received is None:
            self.received = signum
        for hook in self.notify:
            try:
                hook(signum)
            except OSError:
                pass
        self.forward(signum)

    def forward(self, signum: int) -> None:
        """Pass ``signum`` to the job's processes (mpiexec, a node's proxy)."""
        if not self.at:
            self.at = time.monotonic()
        for proc in self.targets:
            if proc.poll() is None:
                try:
                    proc.send_signal(signum)
                except OSError:
                    pass


def _wait(proc: subprocess.Popen, signals: _Signals, plan: _Plan, others=(),
          abort=lambda: None) -> int:
    """Wait for ``proc``; after a signal, kill it and ``others`` once the grace has passed.
    ``abort()`` returning a reason ends the job too."""
    killed = False
    while True:
        try:
            return proc.wait(timeout=0.1)
        except subprocess.TimeoutExpired:
            pass
        reason = abort() if not signals.at else None
        if reason is not None:
            print(f"{_MARKER} {reason}: ending the job", file=sys.stderr, flush=True)
            signals.stopped = reason
            signals.forward(signal.SIGTERM)
        if (signals.at and not killed
                and time.monotonic() - signals.at > plan.shutdown_timeout):
            for p in (proc, *others):
                _kill(p)
            killed = True


def _start(cmd: list[str], **kwargs) -> subprocess.Popen:
    """Start mpiexec or a hydra proxy in a process group of its own, so that a Ctrl-C at the
    terminal reaches it once, through the launcher, not twice (hydra takes a second Ctrl-C as
    "abort at once"); on Linux it is killed if the launcher dies (the proxies then end the
    ranks), so that killing the launcher never leaves the job behind."""
    parent = os.getpid()
    libc = None
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
        except OSError:
            libc = None

    def setup() -> None:
        os.setpgrp()
        if libc is not None:
            libc.prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
            if os.getppid() != parent:
                os._exit(1)

    return subprocess.Popen(cmd, preexec_fn=setup, **kwargs)


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            proc.kill()
        except OSError:
            pass


def _pump(stream, sink, lines: list[str] | None = None) -> threading.Thread:
    """Copy ``stream`` to ``sink`` as it comes (partial lines too); keep our marker lines."""

    def copy() -> None:
        pending = b""
        while True:
            chunk = stream.read1(65536)
            if not chunk:
                break
            sink.write(chunk)
            sink.flush()
            if lines is not None:
                pending += chunk
                *complete, pending = pending.split(b"\n")
                lines.extend(c.decode("utf-8", "replace") for c in complete
                             if _MARKER.encode() in c)

    thread = threading.Thread(target=copy, daemon=True)
    thread.start()
    return thread


def _read_records(run_dir: str) -> tuple[dict[int, dict], dict[int, dict]]:
    """What the bootstraps wrote: how each rank ended (``rank*.json``, with the exception
    that escaped its program from ``rank*.error.json``), and the ranks started (``.pid``)."""
    ended, started, errors = {}, {}, {}
    for path in Path(run_dir).glob("rank*"):
        try:
            value = json.loads(path.read_text())
            rank = int(value["rank"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if path.name.endswith(".error.json"):
            errors[rank] = value
        elif path.suffix == ".json":
            ended[rank] = value
        elif path.suffix == ".pid":
            started[rank] = value
    for rank, error in errors.items():
        record = ended.setdefault(rank, dict(started.get(rank, {"rank": rank}),
                                             returncode=None, status="ended by mpiexec"))
        record["error"] = error.get("error", "")
        record["error_time"] = error.get("time")
    return ended, started


def _parse_failure_lines(lines: list[str]) -> dict[int, dict]:
    """Failures that bootstraps on other machines reported on stderr."""
    import re

    pattern = re.compile(r"rank (\d+) failed \(local_rank (\d+), node (\d+), host (\S+), "
                         r"pid (\d+)\): (.*)$")
    found = {}
    for line in lines:
        m = pattern.search(line)
        if m:
            status = m.group(6).strip()
            signum = re.match(r"killed by signal (\d+)", status)
            exit_code = re.match(r"exit code (\d+)", status)
            code = -int(signum.group(1)) if signum else \
                int(exit_code.group(1)) if exit_code else 1
            found[int(m.group(1))] = {
                "rank": int(m.group(1)), "local_rank": int(m.group(2)),
                "group_rank": int(m.group(3)), "host": m.group(4), "pid": int(m.group(5)),
                "returncode": code, "status": status, "time": time.time()}
    return found


def _end_leftovers(started: dict[int, dict]) -> None:
    """Kill bootstraps still alive after mpiexec ended (their ranks die with them)."""
    host = socket.gethostname()
    for info in started.values():
        if info.get("host") != host:
            continue
        pid = int(info.get("supervisor", 0))
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"_bootstrap.py" not in f.read():
                    continue
            os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError):
            continue


def _failure_time(record: dict) -> float:
    """When a rank failed: when its exception was raised, else when it ended."""
    for key in ("error_time", "time"):
        if record.get(key) is not None:
            return float(record[key])
    return float("inf")


def _describe(record: dict) -> str:
    where = ", ".join(f"{label} {record[key]}" for label, key in (
        ("local_rank", "local_rank"), ("node", "group_rank"), ("host", "host"), ("pid", "pid"))
        if key in record)
    text = f"rank {record['rank']} ({where}): {record.get('status', 'ended by mpiexec')}"
    return text + (f": {record['error']}" if record.get("error") else "")


def _summary(world_size: int, ended: dict[int, dict], mpiexec_rc: int,
             interrupted: int | None, stopped: str | None = None,
             remote: tuple[int, int] | None = None) -> tuple[int, str]:
    """The launcher's exit status and the report of a job that did not succeed."""
    if interrupted is not None or remote is not None:
        signum = interrupted if interrupted is not None else remote[1]
        who = "the launcher" if interrupted is not None else f"node {remote[0]}'s launcher"
        return 128 + signum, (f"{_MARKER} {who} received {signal.Signals(signum).name}: every "
                              f"rank was told to stop (ranks that did not within the shutdown "
                              f"timeout were killed)")
    failed = sorted((r for r in ended.values() if r.get("returncode") != 0 or r.get("error")),
                    key=_failure_time)
    if not failed and mpiexec_rc == 0 and stopped is None:
        return 0, ""
    lines = [f"{_MARKER} the job failed" + (f" ({stopped})" if stopped else "")]
    if failed:
        first = failed[0]
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(_failure_time(first)))
        lines.append(f"  first failure (root cause): {_describe(first)} (at {stamp})")
        lines += [f"  also failed: {_describe(other)}" for other in failed[1:]]
        silent = [r for r in range(world_size) if r not in ended]
        if silent:
            lines.append(f"  ended by mpiexec when the job failed: rank"
                         f"{'s' if len(silent) > 1 else ''} {', '.join(map(str, silent))}")
        if any((r.get("returncode") or 0) < 0 for r in failed):
            lines.append("  (mpiexec's 'BAD TERMINATION ... PID' message names the first "
                         "process it started, not necessarily the rank that died)")
    else:
        lines.append(f"  mpiexec exited with code {mpiexec_rc} and no rank reported a failure "
                     f"(see mpiexec's messages above)")
    return 1, "\n".join(lines)


def _run_local(plan: _Plan, mpiexec: str) -> int:
    """One machine, or every machine of a host file, from one mpiexec."""
    layout = [n for _, n in plan.hosts] if plan.hosts else [plan.nproc]
    world_size = sum(layout)
    cmd = [mpiexec]
    if plan.hosts:
        cmd += ["-hosts", ",".join(f"{h}:{n}" for h, n in plan.hosts)]
    for key, value in _job_env(plan, layout).items():
        cmd += ["-genv", key, value]
    cmd += [*plan.mpiexec_args, "-n", str(world_size), sys.executable, _BOOTSTRAP,
            *plan.command]
    run_dir = tempfile.mkdtemp(prefix="ember-run-")
    env = _node_env(plan)
    env["EMBER_RUN_DIR"] = run_dir
    lines: list[str] = []
    proc = None
    try:
        with _Signals() as signals:
            proc = _start(cmd, env=env, stderr=subprocess.PIPE if plan.hosts else None)
            signals.targets.append(proc)
            pump = _pump(proc.stderr, sys.stderr.buffer, lines) if plan.hosts else None
            rc = _wait(proc, signals, plan)
            if pump is not None:
                pump.join(timeout=5)
        ended, started = _read_records(run_dir)
        _end_leftovers(started)
        for rank, record in _parse_failure_lines(lines).items():
            ended.setdefault(rank, record)
        code, text = _summary(world_size, ended, rc, signals.received, signals.stopped)
    finally:
        if proc is not None:
            _kill(proc)
        shutil.rmtree(run_dir, ignore_errors=True)
    if text:
        print(text, file=sys.stderr, flush=True)
    return code


# -- several machines: node 0 serves, the others join --------------------------------------------
class _Channel:
    """JSON messages, one per line, over a socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.file = sock.makefile("rwb")

    def send(self, message: dict) -> None:
        self.file.write(json.dumps(message).encode() + b"\n")
        self.file.flush()

    def receive(self, timeout: float | None) -> dict | None:
        """The next message; None when the peer has closed the connection."""
        self.sock.settimeout(timeout)
        line = self.file.readline()
        if not line:
            return None
        return json.loads(line)

    def close(self) -> None:
        try:
            self.file.close()
            self.sock.close()
        except OSError:
            pass


def _hello(plan: _Plan) -> dict:
    return {"protocol": _PROTOCOL, "node_rank": plan.node_rank, "nnodes": plan.nnodes,
            "nproc": plan.nproc, "host": socket.gethostname(), "run_id": plan.run_id,
            "command": plan.command}


def _labels(hosts: list[str]) -> list[str]:
    """Hydra's name for each node: its host name, made unique (two nodes may share a host)."""
    return [h if hosts.count(h) == 1 else f"{h}-node{i}" for i, h in enumerate(hosts)]


def _accept_nodes(server: socket.socket, plan: _Plan, signals: _Signals) -> dict[int, dict]:
    """Wait until every other node's launcher has joined; return their hellos (with a
    ``channel``)."""
    mine = _hello(plan)
    joined: dict[int, dict] = {}
    deadline = time.monotonic() + plan.join_timeout
    print(f"{_MARKER} node 0: waiting for {plan.nnodes - 1} more node(s) to join at "
          f"{plan.master_addr}:{plan.master_port}", file=sys.stderr, flush=True)
    while len(joined) < plan.nnodes - 1:
        if signals.received is not None:
            raise LaunchError(f"interrupted by {signal.Signals(signals.received).name} while "
                              f"waiting for the other nodes")
        left = deadline - time.monotonic()
        if left <= 0:
            missing = [k for k in range(1, plan.nnodes) if k not in joined]
            raise LaunchError(f"node(s) {missing} did not join within {plan.join_timeout:g} s: "
                              f"run the same command with --node-rank N on each of the other "
                              f"machines (--rdzv-conf join_timeout=SECONDS waits longer)")
        server.settimeout(min(left, 0.5))
        try:
            sock, _ = server.accept()
        except TimeoutError:
            continue
        channel = _Channel(sock)
        try:
            hello = channel.receive(timeout=10)
        except (OSError, ValueError):
            channel.close()
            continue
        problem = _check_hello(hello, mine, joined, plan)
        if problem:
            channel.send({"error": problem})
            channel.close()
            print(f"{_MARKER} node 0: refused a node: {problem}", file=sys.stderr, flush=True)
            continue
        hello["channel"] = channel
        joined[hello["node_rank"]] = hello
    return joined


def _check_hello(hello, mine: dict, joined: dict, plan: _Plan) -> str | None:
    if not isinstance(hello, dict) or hello.get("protocol") != _PROTOCOL:
        return "not an ember.distributed.run launcher of this version"
    for key, what in (("run_id", "--rdzv-id"), ("nnodes", "--nnodes"),
                      ("command", "program and arguments")):
        if hello.get(key) != mine[key]:
            return (f"node {hello.get('node_rank')} has {what} {hello.get(key)!r}, node 0 has "
                    f"{mine[key]!r}: run the same command on every machine")
    rank = hello.get("node_rank")
    if not isinstance(rank, int) or not 1 <= rank < plan.nnodes:
        return f"--node-rank {rank} is not in [1, {plan.nnodes})"
    if rank in joined:
        return f"node {rank} has already joined (two machines with --node-rank {rank})"
    return None


def _read_launch_lines(proc: subprocess.Popen, timeout: float) -> tuple[dict[int, list], bytes]:
    """Hydra's ``-launcher manual`` lines: the proxy command line for each node."""
    found: queue.Queue = queue.Queue()

    def read() -> None:
        proxies, other = {}, b""
        for line in iter(proc.stdout.readline, b""):
            text = line.decode("utf-8", "replace").strip()
            if text.startswith("HYDRA_LAUNCH:"):
                argv = shlex.split(text[len("HYDRA_LAUNCH:"):])
                proxies[int(argv[argv.index("--proxy-id") + 1])] = argv
            elif text == "HYDRA_LAUNCH_END":
                found.put((proxies, other))
                return
            else:
                other += line
        found.put((None, other))

    threading.Thread(target=read, daemon=True).start()
    try:
        proxies, other = found.get(timeout=timeout)
    except queue.Empty:
        raise LaunchError(f"mpiexec did not print its launch commands in {timeout:g} s") from None
    if proxies is None:
        raise LaunchError(f"mpiexec ended before printing its launch commands:\n"
                          f"{other.decode('utf-8', 'replace')}")
    return proxies, other


def _local_proxy(argv: list[str], mpiexec: str) -> list[str]:
    """A proxy command line from node 0, with this machine's ``hydra_pmi_proxy`` if it has
    one (the environments may sit at different paths)."""
    mine = Path(mpiexec).parent / "hydra_pmi_proxy"
    return [str(mine), *argv[1:]] if mine.exists() else argv


def _run_node0(plan: _Plan, mpiexec: str) -> int:
    try:
        server = socket.create_server(("", plan.master_port))
    except OSError as exc:
        raise LaunchError(f"node 0 cannot listen on port {plan.master_port}: {exc.strerror} "
                          f"(choose another --master-port)") from None
    run_dir = tempfile.mkdtemp(prefix="ember-run-")
    nodes: dict[int, dict] = {}
    reports: dict[int, dict] = {}
    procs: list[subprocess.Popen] = []
    try:
        with _Signals() as signals:
            nodes = _accept_nodes(server, plan, signals)
            layout = [plan.nproc] + [nodes[k]["nproc"] for k in range(1, plan.nnodes)]
            hosts = [socket.gethostname()] + [nodes[k]["host"] for k in range(1, plan.nnodes)]
            cmd = [mpiexec, "-launcher", "manual", "-localhost", plan.master_addr, "-hosts",
                   ",".join(f"{label}:{n}" for label, n in zip(_labels(hosts), layout)),
                   "-genvnone"]
            for key, value in _job_env(plan, layout).items():
                cmd += ["-genv", key, value]
            cmd += [*plan.mpiexec_args, "-n", str(sum(layout)), sys.executable, _BOOTSTRAP,
                    *plan.command]
            env = _node_env(plan)
            proc = _start(cmd, env=env, stdout=subprocess.PIPE)
            procs.append(proc)
            signals.targets.append(proc)
            proxies, early = _read_launch_lines(proc, timeout=60)
            sys.stdout.buffer.write(early)
            pump = _pump(proc.stdout, sys.stdout.buffer)
            for k in range(1, plan.nnodes):
                nodes[k]["channel"].send({"proxy": proxies[k]})
            proxy = _start(_local_proxy(proxies[0], mpiexec),
                           env=dict(env, EMBER_RUN_DIR=run_dir))
            procs.append(proxy)
            listeners = {k: _listen(nodes[k]["channel"], reports, k, signals)
                         for k in range(1, plan.nnodes)}

            def node_left() -> str | None:
                for k, thread in listeners.items():
                    if not thread.is_alive() and k not in reports:
                        return f"node {k}'s launcher disconnected"
                return None

            rc = _wait(proc, signals, plan, others=[proxy], abort=node_left)
            try:
                proxy.wait(timeout=max(10.0, plan.shutdown_timeout))
            except subprocess.TimeoutExpired:
                _kill(proxy)
            pump.join(timeout=5)
            deadline = time.monotonic() + 15
            for thread in listeners.values():
                thread.join(timeout=max(0.0, deadline - time.monotonic()))
        ended, started = _read_records(run_dir)
        _end_leftovers(started)
        for report in reports.values():
            for record in report.get("records", []):
                ended.setdefault(int(record["rank"]), record)
        code, text = _summary(sum(layout), ended, rc, signals.received, signals.stopped,
                              signals.remote)
        for k in range(1, plan.nnodes):
            try:
                nodes[k]["channel"].send({"done": code, "summary": text})
            except OSError:
                pass
    finally:
        for proc in procs:
            _kill(proc)
        for hello in nodes.values():
            hello["channel"].close()
        server.close()
        shutil.rmtree(run_dir, ignore_errors=True)
    if text:
        print(text, file=sys.stderr, flush=True)
    return code


def _listen(channel: _Channel, reports: dict, k: int, signals: _Signals) -> threading.Thread:
    """Serve node ``k`` (in a thread): a signal its launcher received goes to every rank (as
    mpiexec passes it on); then its report of how its ranks ended."""

    def listen() -> None:
        while True:
            try:
                message = channel.receive(timeout=None)
            except (OSError, ValueError):
                return
            if message is None:
                return
            if "signal" in message:
                if signals.remote is None and signals.received is None:
                    signals.remote = (k, int(message["signal"]))
                signals.forward(int(message["signal"]))
            elif "records" in message:
                reports[k] = message
                return

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    return thread


def _connect(plan: _Plan, signals: _Signals) -> _Channel:
    deadline = time.monotonic() + plan.join_timeout
    last = None
    while time.monotonic() < deadline:
        if signals.received is not None:
            raise LaunchError(f"interrupted by {signal.Signals(signals.received).name} while "
                              f"joining node 0")
        try:
            sock = socket.create_connection((plan.master_addr, plan.master_port), timeout=5)
            return _Channel(sock)
        except OSError as exc:
            last = exc
            time.sleep(0.5)
    raise LaunchError(f"node {plan.node_rank} could not reach node 0's launcher at "
                      f"{plan.master_addr}:{plan.master_port} within {plan.join_timeout:g} s "
                      f"({last}); start it there with --node-rank 0")


def _run_node(plan: _Plan, mpiexec: str) -> int:
    """A node other than 0: join node 0, run the proxy it hands out, report how the ranks
    here ended."""
    run_dir = tempfile.mkdtemp(prefix="ember-run-")
    channel = None
    proxy = None
    try:
        with _Signals() as signals:
            channel = _connect(plan, signals)
            channel.send(_hello(plan))
            print(f"{_MARKER} node {plan.node_rank}: joined node 0 at {plan.master_addr}:"
                  f"{plan.master_port}", file=sys.stderr, flush=True)
            message = None
            while message is None and signals.received is None:
                try:
                    message = channel.receive(timeout=0.5)
                    if message is None:
                        raise LaunchError("node 0's launcher closed the connection before "
                                          "the job started")
                except TimeoutError:
                    continue
            if message is None:
                raise LaunchError(f"interrupted by {signal.Signals(signals.received).name} "
                                  f"before the job started")
            if "error" in message:
                raise LaunchError(f"node 0 refused this node: {message['error']}")
            env = dict(_node_env(plan), EMBER_RUN_DIR=run_dir)
            proxy = _start(_local_proxy(message["proxy"], mpiexec), env=env)
            # a signal here goes to node 0, whose mpiexec passes it to every rank; the proxy
            # is killed if the job has not ended after the shutdown timeout
            signals.notify.append(lambda signum: channel.send({"signal": signum}))
            rc = _wait(proxy, signals, plan)
            ended, started = _read_records(run_dir)
            _end_leftovers(started)
            channel.send({"records": list(ended.values()), "returncode": rc})
            try:
                done = channel.receive(timeout=120)
            except (OSError, ValueError):
                done = None
        if done is None:
            print(f"{_MARKER} node 0's launcher did not say how the job ended",
                  file=sys.stderr, flush=True)
            return 1 if signals.received is None else 128 + signals.received
        if done.get("summary"):
            print(done["summary"], file=sys.stderr, flush=True)
        return int(done["done"])
    finally:
        if proxy is not None:
            _kill(proxy)
        if channel is not None:
            channel.close()
        shutil.rmtree(run_dir, ignore_errors=True)


def run(args: argparse.Namespace) -> int:
    """Run the job the parsed command line describes; return the launcher's exit status."""
    plan = _plan(args)
    mpiexec = find_mpiexec()
    _check_hydra(mpiexec)
    if plan.nnodes == 1 or plan.hosts:
        return _run_local(plan, mpiexec)
    if plan.node_rank == 0:
        return _run_node0(plan, mpiexec)
    return _run_node(plan, mpiexec)


def main(args=None) -> int:
    """``python -m ember.distributed.run [options] program [args]`` (see the module doc)."""
    try:
        return run(parse_args(args))
    except LaunchError as exc:
        print(f"{_MARKER} error: {exc}", file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
