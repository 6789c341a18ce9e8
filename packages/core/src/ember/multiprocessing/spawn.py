"""``spawn`` and ``start_processes``: run a function in N processes and join them, failing
fast (``torch.multiprocessing.spawn``).

Each process runs ``fn(i, *args)``, ``i`` its index. When one of them raises, the parent's
``join`` terminates the others (SIGTERM, then SIGKILL after a grace period) and raises
``ProcessRaisedException`` with the child's traceback text; when one dies of a signal or
exits with a non-zero code, ``ProcessExitedException`` says which. A child's traceback comes
back through a file of its own in a temporary folder (a one-shot message that cannot fill a
pipe and block the child's exit); ``join`` removes the folder once every process is joined.
"""

from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
import warnings
import weakref

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException",
           "ProcessRaisedException", "spawn", "SpawnContext", "start_processes"]

log = logging.getLogger(__name__)


class ProcessException(Exception):
    """A process started by ``spawn``/``start_processes`` failed: ``error_index`` is its
    index, ``error_pid`` its pid (``pid`` too)."""

    __slots__ = ["error_index", "error_pid"]

    def __init__(self, msg: str, error_index: int, error_pid: int):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    @property
    def pid(self) -> int:
        """The failed process's pid (``error_pid``)."""
        return self.error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """A process raised an exception; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A process died of a signal (``signal_name``) or exited with a non-zero ``exit_code``
    (negative: minus the signal number, as ``Process.exitcode``)."""

    __slots__ = ["exit_code"]

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: str | None = None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return (type(self), (self.msg, self.error_index, self.error_pid, self.exit_code,
                             self.signal_name))


def _wrap(fn, i: int, args: tuple, error_file: str) -> None:
    """The body of process ``i``: ``fn(i, *args)``; an exception's traceback goes to
    ``error_file`` and the process exits with code 1."""
    from ..data._utils.worker import _set_parent_death_signal

    # a non-daemonic child must not outlive a parent that died without joining it
    _set_parent_death_signal(signal.SIGINT)
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # SIGINT: the parent ended, or terminated us
    except Exception:
        text = traceback.format_exc()
        with open(error_file + ".tmp", "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(error_file + ".tmp", error_file)
        sys.exit(1)


class ProcessContext:
    """The processes started by ``start_processes(..., join=False)``: ``processes``,
    ``pids()``, and ``join`` to wait for them and raise the first failure."""

    def __init__(self, processes: list, error_files: list, _folder: str | None = None):
        self.error_files = error_files
        self.processes = processes
        self.sentinels = {process.sentinel: index for index, process in enumerate(processes)}
        self._folder = _folder
        if _folder is not None:
            self._cleanup = weakref.finalize(self, shutil.rmtree, _folder, True)

    def pids(self) -> list[int]:
        """The pids of the processes, by index."""
        return [int(process.pid) for process in self.processes]

    def _join_procs_with_timeout(self, timeout: float) -> None:
        end = time.monotonic() + timeout
        for process in self.processes:
            process.join(max(0.0, end - time.monotonic()))

    def _done(self) -> None:
        if self._folder is not None:
            self._cleanup()

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: until one process ends) for the processes.

        True once all of them have exited successfully, False when some are still running.
        When one has failed, the others get ``grace_period`` seconds (default none) to end,
        then SIGTERM, then SIGKILL after another grace period (30 s by default), and the
        failure is raised: ``ProcessRaisedException`` (with the child's traceback) or
        ``ProcessExitedException`` (a signal or an exit code).
        """
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(self.sentinels.keys(), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            if not self.sentinels:
                self._done()
                return True
            return False
        try:
            self._stop_all(grace_period)
            self._raise(error_index)
        finally:
            self._done()

    def _stop_all(self, grace_period: float | None) -> None:
        if grace_period is not None:
            self._join_procs_with_timeout(grace_period)
        for process in self.processes:
            if process.is_alive():
                log.warning("Terminating process %s via signal SIGTERM", process.pid)
                process.terminate()
        self._join_procs_with_timeout(30 if grace_period is None else grace_period)
        for process in self.processes:
            if process.is_alive():
                log.warning("Unable to shutdown process %s via SIGTERM , forcefully exiting "
                            "via SIGKILL", process.pid)
                process.kill()
            process.join()
        self.sentinels.clear()

    def _raise(self, error_index: int):
        failed = self.processes[error_index]
        path = self.error_files[error_index]
        if not os.access(path, os.R_OK):
            exitcode = failed.exitcode
            if exitcode < 0:
                try:
                    name = signal.Signals(-exitcode).name
                except ValueError:
                    name = f"<Unknown signal {-exitcode}>"
                raise ProcessExitedException(
                    f"process {error_index:d} terminated with signal {name}",
                    error_index=error_index, error_pid=failed.pid, exit_code=exitcode,
                    signal_name=name)
            raise ProcessExitedException(
                f"process {error_index:d} terminated with exit code {exitcode:d}",
                error_index=error_index, error_pid=failed.pid, exit_code=exitcode)
        with open(path, encoding="utf-8") as fh:
            original_trace = fh.read()
        msg = f"\n\n-- Process {error_index:d} terminated with the following error:\n"
        msg += original_trace
        raise ProcessRaisedException(msg, error_index, failed.pid)


class SpawnContext(ProcessContext):
    """The old name of ``ProcessContext`` (deprecated, as in PyTorch)."""

    def __init__(self, processes, error_files):
        warnings.warn("SpawnContext is renamed to ProcessContext since 1.4 release.",
                      stacklevel=2)
        super().__init__(processes, error_files)


def start_processes(fn, args: tuple = (), nprocs: int = 1, join: bool = True,
                    daemon: bool = False, start_method: str = "spawn"):
    """Start ``nprocs`` processes running ``fn(i, *args)`` with ``start_method`` ("spawn",
    "fork", "forkserver").

    With ``join`` (the default) wait for all of them and return None, raising the first
    failure as ``ProcessContext.join`` does; else return the ``ProcessContext``.
    """
    mp = multiprocessing.get_context(start_method)
    folder = tempfile.mkdtemp(prefix="ember-spawn-")
    error_files, processes = [], []
    try:
        for i in range(nprocs):
            error_file = os.path.join(folder, f"error-{i}")
            process = mp.Process(target=_wrap, args=(fn, i, args, error_file), daemon=daemon)
            process.start()
            error_files.append(error_file)
            processes.append(process)
    except BaseException:
        for process in processes:
            process.kill()
            process.join()
        shutil.rmtree(folder, ignore_errors=True)
        raise
    context = ProcessContext(processes, error_files, folder)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
          start_method: str = "spawn"):
    r"""Spawn ``nprocs`` processes that run ``fn`` with ``args``.

    If one of the processes exits with a non-zero exit status, the remaining processes are
    killed and an exception is raised with the cause of termination. In the case an
    exception was caught in the child process, it is forwarded and its traceback is
    included in the exception raised in the parent process.

    Args:
        fn (function): called as the entrypoint of each process, as ``fn(i, *args)`` where
            ``i`` is the process index. It must be defined at the top level of a module so
            that it can be pickled.
        args (tuple): arguments passed to ``fn``.
        nprocs (int): number of processes to spawn.
        join (bool): perform a blocking join on all processes.
        daemon (bool): the spawned processes' daemon flag.
        start_method (str): deprecated; always "spawn" (use ``start_processes`` for
            another start method).

    Returns:
        None if ``join`` is ``True``, :class:`ProcessContext` if ``join`` is ``False``.
    """
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\n"
                      "To use a different start_method use:\n\t\t"
                      " ember.multiprocessing.start_processes(...)", FutureWarning, stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
