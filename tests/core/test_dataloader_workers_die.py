"""DataLoader workers die with the main process, even when stuck in ``__getitem__`` and the
main process is killed with SIGKILL, and are never killed while their loader is in use
(a loader first iterated from a thread that has since finished).

The kill tests run the loader in a child Python process, kill it, and watch its workers
through /proc. Whatever that child started is killed at the end of each test, pass or fail.
"""

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import ember
from ember.data import DataLoader, Dataset, TensorDataset
from ember.data._utils.worker import ManagerWatchdog, _Manager

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="PR_SET_PDEATHSIG and /proc are Linux's")

PR_GET_PDEATHSIG = 2
WORKERS_GONE_WITHIN = 10.0  # seconds after the main process was killed (watchdog: 1 s; slack for a
# loaded 2-core machine, where a busy worker may wait for the CPU)

SCRIPT = '''
import ctypes, os, sys, threading, time
from ember.data import DataLoader, Dataset


def death_signal():
    value = ctypes.c_int(-1)
    ctypes.CDLL(None).prctl(2, ctypes.byref(value), 0, 0, 0)  # PR_GET_PDEATHSIG
    return value.value


class Hang(Dataset):
    """Records "<pid>" -> its death signal in ``out``, then hangs in ``how``."""

    def __init__(self, out, how):
        self.out, self.how = out, how

    def __len__(self):
        return 100

    def __getitem__(self, i):
        path = os.path.join(self.out, str(os.getpid()))
        with open(path + ".tmp", "w") as f:
            f.write(str(death_signal()))
        os.replace(path + ".tmp", path)
        if self.how == "sleep":
            time.sleep(1000)
        while True:
            pass


def load(loader):
    next(iter(loader))


if __name__ == "__main__":
    out, how, method, where = sys.argv[1:]
    loader = DataLoader(Hang(out, how), num_workers=2, multiprocessing_context=method)
    if where == "thread":  # started from a thread that lives on: no death signal
        thread = threading.Thread(target=load, args=(loader,))
        thread.start()
        thread.join()
    else:
        load(loader)
'''


def _death_signal() -> int:
    value = ctypes.c_int(-1)
    ctypes.CDLL(None).prctl(PR_GET_PDEATHSIG, ctypes.byref(value), 0, 0, 0)
    return value.value


def _stat(pid: int) -> tuple[int, str, int] | None:
    """(parent pid, state, start time) of a process, None when it does not exist."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return int(fields[1]), fields[0].decode(), int(fields[19])


def _alive(pid: int, start: int) -> bool:
    """The process that started at ``start`` still runs (a zombie is dead: in a container
    nobody may reap an orphan)."""
    stat = _stat(pid)
    return stat is not None and stat[2] == start and stat[1] not in ("Z", "X")


def _descendants(root: int) -> dict[int, int]:
    """pid -> start time of every live descendant of ``root``."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        stat = _stat(int(name)) if name.isdigit() else None
        if stat is not None:
            children.setdefault(stat[0], []).append(int(name))
    found, todo = {}, [root]
    while todo:
        for pid in children.get(todo.pop(), []):
            stat = _stat(pid)
            if stat is not None and stat[1] not in ("Z", "X"):
                found[pid] = stat[2]
                todo.append(pid)
    return found


def _wait_until(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _hanging_workers(out, main: subprocess.Popen, log) -> dict[int, int]:
    """pid -> death signal of the two workers, once both hang in ``__getitem__``."""
    def ready():
        assert main.poll() is None, f"the main process ended early:\n{log.read_text()}"
        return len([n for n in os.listdir(out) if n.isdigit()]) == 2

    assert _wait_until(ready, 60), f"no hanging workers after 60 s:\n{log.read_text()}"
    return {int(n): int((out / n).read_text()) for n in os.listdir(out) if n.isdigit()}


def _end_family(family: dict[int, int]) -> None:
    """Give the main process's helpers (fork server, resource tracker) a moment to exit on
    their own, then kill whatever is left."""
    _wait_until(lambda: not any(_alive(p, s) for p, s in family.items()), 3.0)
    for pid, start in family.items():
        if _alive(pid, start):
            os.kill(pid, signal.SIGKILL)


CASES = [(method, how, where) for method in ("fork", "spawn") for how in ("sleep", "busy")
         for where in ("main", "thread")]
CASES += [("forkserver", "sleep", "main"), ("forkserver", "busy", "thread")]


@pytest.mark.parametrize("method, how, where", CASES)
def test_workers_die_when_the_main_process_is_killed(tmp_path, method, how, where):
    script, out, log = tmp_path / "hang.py", tmp_path / "pids", tmp_path / "stderr.txt"
    script.write_text(SCRIPT)
    out.mkdir()
    family: dict[int, int] = {}
    with open(log, "wb") as stderr:
        main = subprocess.Popen([sys.executable, str(script), str(out), how, method, where],
                                stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        workers = _hanging_workers(out, main, log)
        family = _descendants(main.pid)
        assert set(workers) <= set(family)
        # the death signal only for a direct child of the main thread; the watchdog always
        expected = signal.SIGKILL if where == "main" and method != "forkserver" else 0
        assert set(workers.values()) == {expected}

        main.kill()
        main.wait()
        gone = _wait_until(lambda: not any(_alive(p, family[p]) for p in workers),
                           WORKERS_GONE_WITHIN)
        survivors = [p for p in workers if _alive(p, family[p])]
        assert gone, f"workers {survivors} outlived their killed main process"
    finally:
        if main.poll() is None:
            main.kill()
            main.wait()
        _end_family(family)


# -- workers started from a thread that ends are not killed with it -----------------------

class Probe(Dataset):
    """(index, worker pid, worker's death signal)."""

    def __getitem__(self, i):
        return i, os.getpid(), _death_signal()

    def __len__(self):
        return 4


def _in_thread(fn):
    result = []
    thread = threading.Thread(target=lambda: result.append(fn()))
    thread.start()
    thread.join(60)
    assert not thread.is_alive() and len(result) == 1
    return result[0]


def test_persistent_workers_outlive_the_thread_that_started_them():
    loader = DataLoader(Probe(), batch_size=None, num_workers=2, persistent_workers=True,
                        multiprocessing_context="fork", timeout=30)
    first = _in_thread(lambda: list(loader))
    time.sleep(0.3)  # a death signal tied to the finished thread would have fired by now
    workers = loader._iterator._workers
    assert all(w.is_alive() for w in workers)
    second = list(loader)
    assert [s[0] for s in first] == [s[0] for s in second] == [0, 1, 2, 3]
    assert {s[1] for s in first} == {s[1] for s in second} == {w.pid for w in workers}
    assert {s[2] for s in first} == {0}  # no death signal: the watchdog alone guards them
    loader._iterator._shutdown_workers()


def test_iterator_made_in_a_finished_thread_keeps_its_workers():
    loader = DataLoader(Probe(), batch_size=None, num_workers=2,
                        multiprocessing_context="fork", timeout=30)
    it = _in_thread(lambda: iter(loader))
    time.sleep(0.3)
    assert [s[0] for s in it] == [0, 1, 2, 3]


def test_spawned_persistent_workers_outlive_the_thread_that_started_them():
    ds = TensorDataset(ember.arange(4.))
    loader = DataLoader(ds, batch_size=2, num_workers=2, persistent_workers=True,
                        multiprocessing_context="spawn", timeout=60)
    first = _in_thread(lambda: [b[0].tolist() for b in loader])
    time.sleep(0.3)
    pids = [w.pid for w in loader._iterator._workers]
    assert [b[0].tolist() for b in loader] == first == [[0., 1.], [2., 3.]]
    assert [w.pid for w in loader._iterator._workers] == pids
    assert all(w.is_alive() for w in loader._iterator._workers)
    loader._iterator._shutdown_workers()


def test_workers_started_from_the_main_thread_get_the_death_signal():
    loader = DataLoader(Probe(), batch_size=None, num_workers=2,
                        multiprocessing_context="fork", timeout=30)
    assert {s[2] for s in loader} == {signal.SIGKILL}


# -- the watchdog's notion of "the main process is alive" ----------------------------------

def _zombie() -> subprocess.Popen:
    """A child that has exited but is not reaped yet."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    assert _wait_until(lambda: _stat(child.pid)[1] == "Z", 30)
    return child


def test_watchdog_of_a_direct_child_compares_its_parent():
    assert ManagerWatchdog(_Manager(os.getppid(), True, True)).is_alive()
    assert ManagerWatchdog().is_alive()  # no manager given: the parent
    watchdog = ManagerWatchdog(_Manager(os.getpid(), True, True))  # not our parent
    assert not watchdog.is_alive() and not watchdog.is_alive()  # and stays dead


def test_watchdog_of_a_fork_server_child_checks_the_manager_pid():
    assert ManagerWatchdog(_Manager(os.getpid(), False, True)).is_alive()
    zombie = _zombie()
    try:
        assert not ManagerWatchdog(_Manager(zombie.pid, False, True)).is_alive()
    finally:
        zombie.wait()
    assert not ManagerWatchdog(_Manager(zombie.pid, False, True)).is_alive()  # reaped
