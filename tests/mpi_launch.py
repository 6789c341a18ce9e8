"""Start N ranks of a test program under the mpich wheel's mpiexec, and always end them.

``run_ranks(n, source, tmp_path)`` writes ``source`` to a script, runs it as ``n`` MPI ranks
on 127.0.0.1 in a process group of its own, and kills that whole group when the run ends,
fails or times out, so no test leaves a rank behind. Each rank may call ``emit(obj)`` (defined
in the script's preamble) to hand a JSON value back; ``Result.values[rank]`` has them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

MPIEXEC = Path(sys.executable).parent / "mpiexec"

PREAMBLE = '''\
import json as _json, os as _os, sys as _sys
_OUT = _sys.argv[1]
def emit(obj):
    """Hand a JSON value back to the test (appended to this rank's results)."""
    rank = int(_os.environ.get("PMI_RANK", _os.environ.get("RANK", "0")))
    with open(_os.path.join(_OUT, f"rank{rank}.jsonl"), "a") as f:
        f.write(_json.dumps(obj) + "\\n")
_sys.argv = [_sys.argv[0]] + _sys.argv[2:]
'''


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str
    values: dict[int, list] = field(default_factory=dict)

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def mpi_available() -> bool:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return MPIEXEC.exists()


def run_command(cmd: list[str], timeout: float, env: dict | None = None,
                cwd: str | Path | None = None) -> subprocess.CompletedProcess:
    """Run ``cmd`` in a new session; kill its whole process group however it ends."""
    full_env = dict(os.environ)
    full_env.pop("EMBER_TEST_DEVICE", None)  # the ranks run on the CPU unless told
    full_env.update(env or {})
    segments = _mpich_segments()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=full_env, cwd=cwd, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        raise AssertionError(f"{cmd} did not finish in {timeout} s\nstdout:\n{out}\n"
                             f"stderr:\n{err}") from None
    finally:
        _kill_group(proc)
        _remove_orphaned(_mpich_segments() - segments)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


SHM = Path("/dev/shm")


def _mpich_segments() -> set:
    """MPICH's shared-memory segments: a rank that is killed (the fault tests kill some)
    cannot unlink them, and /dev/shm would fill up run after run."""
    try:
        return {p.name for p in SHM.glob("mpich_shm_*")}
    except OSError:
        return set()


def _remove_orphaned(names: set) -> None:
    """Unlink the segments this job created that no live process still maps."""
    if not names:
        return
    mapped = set()
    for maps in Path("/proc").glob("[0-9]*/maps"):
        try:
            text = maps.read_text()
        except OSError:  # the process ended, or is not ours to read
            continue
        mapped.update(n for n in names if n in text)
    for name in names - mapped:
        try:
            (SHM / name).unlink()
        except OSError:
            pass


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if proc.poll() is None:
        proc.wait(timeout=10)


def run_ranks(n: int, source: str, tmp_path: Path, *args: str, timeout: float = 60,
              env: dict | None = None, mpiexec_args: tuple[str, ...] = ()) -> Result:
    """Run ``source`` as ``n`` ranks; the ranks' ``emit`` values come back by rank."""
    out_dir = tmp_path / f"ranks{n}"
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("rank*.jsonl"):
        old.unlink()
    script = tmp_path / "rank_program.py"
    script.write_text(PREAMBLE + textwrap.dedent(source))
    cmd = [str(MPIEXEC), *mpiexec_args, "-n", str(n), sys.executable, str(script),
           str(out_dir), *args]
    done = run_command(cmd, timeout, env=env)
    values = {}
    for path in out_dir.glob("rank*.jsonl"):
        rank = int(path.stem[4:])
        values[rank] = [json.loads(line) for line in path.read_text().splitlines()]
    return Result(done.returncode, done.stdout, done.stderr, values)


# -- a test file's cases, run in every rank of one launch -------------------------------------
def run_cases(emit, cases: dict, out: str) -> None:
    """In a rank: run every ``cases[name](rank, world_size, out)``, a barrier after each, and
    emit ``{name: None or the traceback}``."""
    import datetime
    import traceback

    import ember.distributed as dist

    dist.init_process_group(timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    results = {}
    for name, fn in cases.items():
        try:
            fn(rank, world, out)
            results[name] = None
        except Exception:
            results[name] = traceback.format_exc()
        dist.barrier()
    emit(results)
    dist.destroy_process_group()


def case_script(test_file: str, module_name: str) -> str:
    """The rank program that loads ``test_file`` and calls its ``rank_main(emit, argv[1])``."""
    path = Path(test_file).resolve()
    return f"""
import importlib.util, sys
sys.path.insert(0, {str(path.parent.parent)!r})
spec = importlib.util.spec_from_file_location({module_name!r}, {str(path)!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
module.rank_main(emit, sys.argv[1])
"""


def check_case(result: Result, n: int, name: str) -> None:
    """Every one of the ``n`` ranks reported, and case ``name`` passed on each."""
    assert result.returncode == 0, result.output[-4000:]
    assert sorted(result.values) == list(range(n)), result.output[-4000:]
    failures = {r: vals[0][name] for r, vals in result.values.items() if vals[0][name]}
    assert not failures, "\n".join(f"rank {r}:\n{text}" for r, text in failures.items())


def case_launches(test_file: str, module_name: str, cases: dict, sizes=(2, 4),
                  timeout: float = 180):
    """The pytest side of a case file: ``(rank_main, runs)``, where ``runs`` is a module
    fixture launching ``test_file``'s cases once per world size in ``sizes`` (every rank
    runs every case; ``check_case`` reads one). The test file exposes ``rank_main``."""
    import functools

    import pytest

    script = case_script(test_file, module_name)

    def rank_main(emit, out: str) -> None:
        run_cases(emit, cases, out)

    @functools.cache
    def launch(n: int, tmp: str):
        return run_ranks(n, script, Path(tmp), tmp, timeout=timeout)

    @pytest.fixture(scope="module")
    def runs(tmp_path_factory):
        return {n: launch(n, str(tmp_path_factory.mktemp(f"{module_name}{n}")))
                for n in sizes}

    return rank_main, runs


def distributed_marks() -> list:
    """``pytestmark`` of an MPI case file: marked distributed, skipped without MPI."""
    import pytest

    return [pytest.mark.distributed,
            pytest.mark.skipif(not mpi_available(), reason="needs mpi4py and mpiexec "
                               "(pip install 'ember-core[distributed]')")]


def case_registry():
    """``(CASES, case)``: ``@case`` on ``def case_<name>(rank, world_size, out)`` files it
    under ``<name>``."""
    cases: dict = {}

    def case(fn):
        cases[fn.__name__[5:]] = fn
        return fn

    return cases, case


def check(cond, what="") -> None:
    """An assertion that survives ``python -O`` in the ranks."""
    if not cond:
        raise AssertionError(what)
