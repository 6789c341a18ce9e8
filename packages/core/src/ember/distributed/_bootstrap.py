"""The per-rank supervisor that ``python -m ember.distributed.run`` starts under ``mpiexec``.

``mpiexec`` starts one of these per rank; it runs the rank's program as its child with
torchrun's environment (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``,
``GROUP_RANK``, ...) computed from what hydra gives (``PMI_RANK``, ``PMI_SIZE``) and the job's
layout, waits for it, and records how it ended. The record is what lets the launcher name a
rank that was killed: when a rank dies of a signal, hydra kills every other rank at once and
its "BAD TERMINATION ... PID n" message names the first process it knows, not the one that
died; the supervisor saw its own child die and wrote so before hydra could act.

A Python program runs in the child through this same file in its runner mode
(``python -u _bootstrap.py --run-path script.py args`` or ``--run-module module args``): it
runs the program with ``runpy`` as ``__main__``, as ``python script.py`` / ``python -m`` would,
and records an exception that escapes it at the moment it is raised (torchrun's error file):
when one rank fails, the others fail after it, and their exits may come in any order, so the
time of the first exception, not of the first exit, names the rank that failed first.

It is run as a plain script, so it imports only the standard library, never ``ember``: the
rank's program pays for its own imports once (the runner imports ``ember.as_torch`` when
``EMBER_AS_TORCH=1``: a PyTorch program launched under ``ember.as_torch``).

Environment it reads (set by the launcher with ``-genv``, or for a node's own proxy):
``EMBER_RUN_LAYOUT`` (ranks per node, comma-separated, in node order: hydra places ranks in
blocks), ``EMBER_RUN_DIR`` (where the records go; ignored when it is not a folder on this
machine). The child shares hydra's PMI connection (``PMI_FD``), so it is the MPI process.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

#: the prefix of the line a failing rank's supervisor writes to stderr (the launcher parses it
#: for ranks whose record file is on another machine)
MARKER = "[ember.distributed.run]"

_FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")


def rank_environment(environ) -> dict[str, str]:
    """torchrun's per-rank variables from hydra's ``PMI_RANK``/``PMI_SIZE`` and the layout."""
    if "PMI_RANK" not in environ or "PMI_SIZE" not in environ:
        raise SystemExit(f"{MARKER} the rank bootstrap runs under MPICH's mpiexec (start the "
                         f"job with python -m ember.distributed.run)")
    rank = int(environ["PMI_RANK"])
    size = int(environ["PMI_SIZE"])
    layout = [int(n) for n in environ.get("EMBER_RUN_LAYOUT", str(size)).split(",")]
    if sum(layout) != size:
        raise SystemExit(f"{MARKER} the layout {layout} does not add up to the {size} ranks "
                         f"mpiexec started")
    node, start = 0, 0
    while rank >= start + layout[node]:
        start += layout[node]
        node += 1
    count = layout[node]
    values = {
        "RANK": rank, "WORLD_SIZE": size, "LOCAL_RANK": rank - start,
        "LOCAL_WORLD_SIZE": count, "GROUP_RANK": node, "GROUP_WORLD_SIZE": len(layout),
        "ROLE_RANK": rank, "ROLE_WORLD_SIZE": size, "ROLE_NAME": "default",
        "TORCHELASTIC_RESTART_COUNT": 0, "TORCHELASTIC_MAX_RESTARTS": 0,
    }
    return {key: str(value) for key, value in values.items()}


def describe_status(returncode: int) -> str:
    """``exit code 1`` or ``killed by signal 9 (SIGKILL)``, from a Popen return code."""
    if returncode >= 0:
        return f"exit code {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = "unknown signal"
    return f"killed by signal {-returncode} ({name})"


def _child_setup():
    """In the child before exec: a process group of its own, so that a signal hydra sends to
    the rank's group reaches the child once, passed on by this supervisor, not twice (a second
    SIGINT would interrupt the program's KeyboardInterrupt handling); and on Linux, be killed
    when this supervisor dies, so that hydra killing the supervisor never leaves the rank
    behind."""
    os.setpgid(0, 0)
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        parent = os.getppid()
        libc.prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the supervisor died before prctl took effect
            os.kill(os.getpid(), signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def _write_json(path: str, value: dict) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(value, f)
    os.replace(tmp, path)


def _trim(tb):
    """The traceback from the program's first frame (without this runner and runpy)."""
    import runpy

    own = {os.path.abspath(__file__), os.path.abspath(runpy.__file__), "<frozen runpy>"}
    while tb is not None and (tb.tb_frame.f_code.co_filename in own
                              or os.path.abspath(tb.tb_frame.f_code.co_filename) in own):
        tb = tb.tb_next
    return tb


def _record_error(exc: BaseException) -> None:
    run_dir = os.environ.get("EMBER_RUN_DIR", "")
    rank = os.environ.get("RANK", "")
    if not (run_dir and rank and os.path.isdir(run_dir)):
        return
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    try:
        _write_json(os.path.join(run_dir, f"rank{rank}.error.json"),
                    {"rank": int(rank), "error": text.splitlines()[0][:500] if text else "",
                     "time": time.time()})
    except OSError:
        pass


def run_program(argv: list[str]) -> int:
    """Runner mode: run a script (``--run-path``) or module (``--run-module``) as
    ``__main__``; record an exception that escapes it, then report it as Python would."""
    import runpy

    kind, target, *rest = argv
    sys.argv = [target, *rest]
    if os.environ.get("EMBER_AS_TORCH") == "1":  # launched under ember.as_torch: alias too
        import ember.as_torch

        ember.as_torch.install()
    if kind == "--run-path":
        sys.path[0] = os.path.dirname(os.path.abspath(target))
    else:
        sys.path[0] = os.getcwd()
    try:
        if kind == "--run-path":
            runpy.run_path(os.path.abspath(target), run_name="__main__")
        else:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        if exc.code not in (None, 0):
            _record_error(exc)
        raise
    except KeyboardInterrupt as exc:
        _record_error(exc)
        tb = _trim(exc.__traceback__)
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        sys.stderr.flush()
        # end as Python ends on an uncaught KeyboardInterrupt: killed by SIGINT
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        return 130
    except BaseException as exc:
        _record_error(exc)
        tb = _trim(exc.__traceback__)
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        return 1
    return 0


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("--run-path", "--run-module"):
        return run_program(argv)
    if not argv:
        print(f"usage: {sys.argv[0]} program [args...] (started by ember.distributed.run)",
              file=sys.stderr)
        return 2
    env = dict(os.environ)
    ranks = rank_environment(env)
    env.update(ranks)
    rank = ranks["RANK"]
    run_dir = env.get("EMBER_RUN_DIR", "")
    run_dir = run_dir if run_dir and os.path.isdir(run_dir) else ""
    host = socket.gethostname()
    pass_fds = tuple(int(env[v]) for v in ("PMI_FD",) if env.get(v, "").isdigit())

    pending: list[int] = []
    received: set[int] = set()  # signals passed on to the child (an orderly stop)
    child: subprocess.Popen | None = None

    def forward(signum, frame):
        received.add(signum)
        if child is None:
            pending.append(signum)
        elif child.poll() is None:
            child.send_signal(signum)

    for name in _FORWARDED:
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), forward)
    try:
        child = subprocess.Popen(argv, env=env, pass_fds=pass_fds, preexec_fn=_child_setup)
    except OSError as exc:
        print(f"{MARKER} rank {rank}: cannot start {argv[0]!r}: {exc}", file=sys.stderr,
              flush=True)
        return 127
    info = {"rank": int(rank), "local_rank": int(ranks["LOCAL_RANK"]),
            "group_rank": int(ranks["GROUP_RANK"]), "host": host, "pid": child.pid,
            "supervisor": os.getpid()}
    if run_dir:
        _write_json(os.path.join(run_dir, f"rank{rank}.pid"), info)
    for signum in pending:
        child.send_signal(signum)
    returncode = child.wait()
    record = dict(info, returncode=returncode, status=describe_status(returncode),
                  time=time.time())
    if run_dir:
        _write_json(os.path.join(run_dir, f"rank{rank}.json"), record)
    if returncode != 0 and -returncode not in received:
        print(f"{MARKER} rank {rank} failed (local_rank {info['local_rank']}, node "
              f"{info['group_rank']}, host {host}, pid {child.pid}): {record['status']}",
              file=sys.stderr, flush=True)
    if returncode < 0 and -returncode in received:
        # an orderly stop passed on to the child: exit, not die of the signal, or hydra would
        # SIGKILL the ranks still handling theirs
        return 128 - returncode
    if returncode < 0:  # die as the child did: hydra then ends the job as it would have
        signum = -returncode
        if signum not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        time.sleep(1)
        return 128 + signum
    return returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
