"""Process groups and collectives with ``torch.distributed``'s API, on MPI.

The ranks are MPI's: start them with ``python -m ember.distributed.run --nproc-per-node N`` or
``mpiexec -n N python script.py``; ``init_process_group`` joins them (``rank``/``world_size``,
when given, are checked against MPI's). Collectives run on host arrays without copies where the
layout allows (a contiguous CPU tensor is reduced in its own memory); anything else (a strided
view, a tensor on another device) goes through a contiguous host buffer and is written back.

A wait never hangs: a rank whose program raises tells every rank of the job before it exits,
a rank that leaves (its program ends, or it calls ``destroy_process_group``) tells them which
collectives it had issued, a waiting rank notices a peer process on its host that has gone, and
every wait ends at the process group's timeout; each ends in a ``DistBackendError`` that names
the rank. A rank whose program fails then gives the others the group's timeout (at most 10 s)
to end too, and aborts the MPI job if some do not (a rank that hangs), so the job ends with it.
An MPI error (ranks passing buffers of different sizes) is raised as a ``DistBackendError``.
``set_debug_level(DebugLevel.DETAIL)`` (or ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` in the
environment at ``init_process_group``) checks before each collective that every rank runs the
same operation on tensors of the same shapes and dtypes.

Objects sent by ``broadcast_object_list`` and friends are pickled, as in PyTorch: they come
from the ranks of your own job, never from a file.
"""

from __future__ import annotations

import enum
import json
import os
import pickle
import socket
import sys
import warnings
from datetime import timedelta

import numpy as np

from .. import _dtype
from .._naming import bare as _bare
from ._work import DistBackendError, Work, _poll, _test_request

__all__ = [
    "Backend", "DebugLevel", "GroupMember", "P2POp", "ProcessGroup", "ReduceOp", "Work",
    "all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce", "all_to_all",
    "all_to_all_single", "barrier", "batch_isend_irecv", "broadcast", "broadcast_object_list",
    "destroy_process_group", "gather", "gather_object", "get_backend", "get_debug_level",
    "get_default_backend_for_device", "is_backend_available", "new_subgroups",
    "new_subgroups_by_enumeration",
    "get_global_rank", "get_group_rank", "get_process_group_ranks", "get_rank",
    "get_world_size", "group", "init_process_group", "irecv", "is_available",
    "is_gloo_available", "is_initialized", "is_mpi_available", "is_nccl_available",
    "is_torchelastic_launched", "isend", "monitored_barrier", "new_group", "recv", "reduce",
    "reduce_scatter", "reduce_scatter_tensor", "scatter", "scatter_object_list", "send",
    "set_debug_level", "set_debug_level_from_env", "default_pg_timeout", "get_node_local_rank",
    "recv_object_list", "send_object_list", "all_gather_coalesced", "all_reduce_coalesced",
    "all_gather_single", "reduce_scatter_single", "split_group", "get_pg_count",
    "supports_complex", "is_ucc_available", "is_xccl_available", "breakpoint",
]

default_pg_timeout = timedelta(minutes=30)

_ABORT_TAG = 31001
_MONITOR_TAG = 31002
_ABORT_BYTES = 4096


# -- enums -------------------------------------------------------------------------------------
class _RedOpType(enum.Enum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8
    UNUSED = 9

    def __repr__(self) -> str:
        return f"<RedOpType.{self.name}: {self.value}>"


class ReduceOp:
    """The reductions of ``all_reduce``, ``reduce`` and ``reduce_scatter``: ``SUM``,
    ``PRODUCT``, ``MIN``, ``MAX``, ``BAND``, ``BOR``, ``BXOR`` and ``AVG``."""

    RedOpType = _RedOpType
    SUM = _RedOpType.SUM
    AVG = _RedOpType.AVG
    PRODUCT = _RedOpType.PRODUCT
    MIN = _RedOpType.MIN
    MAX = _RedOpType.MAX
    BAND = _RedOpType.BAND
    BOR = _RedOpType.BOR
    BXOR = _RedOpType.BXOR
    PREMUL_SUM = _RedOpType.PREMUL_SUM
    UNUSED = _RedOpType.UNUSED


class Backend(str):
    """A backend name (``Backend("MPI") == "mpi"``). Ember runs on MPI; ``"gloo"`` (what
    CPU programs ask for) runs on MPI too, and ``"nccl"`` on CuPy's NCCL for GPU tensors."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"
    backend_list = ["undefined", "gloo", "nccl", "mpi"]
    #: the backend each device type defaults to (PyTorch's map)
    default_device_backend_map = {"cpu": "gloo", "cuda": "nccl"}

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: "
                             f"{type(name)}")
        value = name.lower()
        if value not in ("gloo", "nccl", "mpi", "undefined") and ":" not in value:
            raise ValueError(f"Invalid backend: '{name}'")
        return str.__new__(cls, value)


class DebugLevel(enum.Enum):
    OFF = 0
    INFO = 1
    DETAIL = 2


_debug_level = DebugLevel.OFF


def set_debug_level(level: DebugLevel) -> None:
    """``DebugLevel.DETAIL`` checks every collective's operation, shapes and dtypes across
    ranks before running it (one extra small all-gather per collective)."""
    global _debug_level
    if not isinstance(level, DebugLevel):
        raise TypeError(f"set_debug_level expects a DebugLevel, got {type(level).__name__}")
    _debug_level = level


def get_debug_level() -> DebugLevel:
    return _debug_level


def set_debug_level_from_env() -> None:
    """Read ``TORCH_DISTRIBUTED_DEBUG`` (``OFF``, ``INFO`` or ``DETAIL``), PyTorch's variable."""
    value = os.environ.get("TORCH_DISTRIBUTED_DEBUG", "OFF").upper()
    if value not in DebugLevel.__members__:
        raise ValueError(f"The value of TORCH_DISTRIBUTED_DEBUG must be OFF, INFO or DETAIL, "
                         f"but is {value!r}")
    set_debug_level(DebugLevel[value])


class _NonGroupMember:
    def __repr__(self) -> str:
        return "GroupMember.NON_GROUP_MEMBER"


class GroupMember:
    """``GroupMember.WORLD`` (the default group) and ``NON_GROUP_MEMBER`` (what ``new_group``
    returns on ranks outside the group)."""

    NON_GROUP_MEMBER = _NonGroupMember()

    class _WorldDescriptor:
        def __get__(self, obj, owner):
            return _world.default

    WORLD = _WorldDescriptor()


class group:
    """``group.WORLD``: the default process group (``None`` before ``init_process_group``)."""

    WORLD = GroupMember._WorldDescriptor()


# -- the job: the world's communicators, its peers, its failure state ---------------------------
class _World:
    def __init__(self) -> None:
        self.default: ProcessGroup | None = None
        self.groups: list[ProcessGroup] = []
        self.MPI = None
        self.ctl = None          # a duplicate of COMM_WORLD for failure notices
        self.abort_buf = None
        self.abort_req = None
        self.peers: list[tuple[str, int]] = []
        self.host = ""
        self.rank = -1
        self.broken: str | None = None
        self.excepthook = None
        self.group_count = 0
        self.atexit_registered = False
        self.keep: list = []     # send buffers of notices still in flight
        # ranks that announced they left: how, and how many collectives they had issued on
        # each of their groups (by group name) when they left
        self.exited: dict[int, tuple[str, dict[str, int]]] = {}
        self.failed: dict[int, str] = {}  # ranks that announced a failure, and its message
        self.announced = False   # this rank has sent its failure or exit notice


_world = _World()


def _default_group() -> ProcessGroup:
    if _world.default is None:
        raise ValueError("Default process group has not been initialized, please make sure to "
                         "call init_process_group.")
    return _world.default


def _get_default_group() -> ProcessGroup:
    return _default_group()


class ProcessGroup:
    """A set of ranks and the engine their collectives run on (``new_group`` makes them)."""

    def __init__(self, engine, ranks: list[int], timeout: timedelta, backend: str,
                 name: str) -> None:
        self._engine = engine
        self._ranks = ranks
        self._timeout = timeout
        self._backend = backend
        self._name = name
        self._seq = 0
        self._p2p_seq = 0

    def rank(self) -> int:
        return self._engine.rank

    def size(self) -> int:
        return self._engine.size

    def name(self) -> str:
        return self._name

    @property
    def group_name(self) -> str:
        return self._name

    def _get_backend_name(self) -> str:
        return self._backend

    def __repr__(self) -> str:
        return (f"<ember.distributed.ProcessGroup {self._name!r} backend={self._backend} "
                f"ranks={self._ranks}>")

    # -- what Work asks while it waits ------------------------------------------------------
    def _timeout_seconds(self) -> float:
        return self._timeout.total_seconds()

    def _check_abort(self) -> None:
        _check_abort()

    def _check_peers_alive(self, what: str, peers=None) -> None:
        """Fail the wait for ``what`` when a rank it needs has gone: one that announced its
        exit before it had issued this collective (or, for a point-to-point operation,
        the peer), or a process on this host that is no longer running."""
        seq = _sequence_number(what)
        if peers is None:
            candidates = [r for r in self._ranks if r != _world.rank]
        else:
            candidates = [r for r in peers if r != _world.rank]
        gone = []
        for r in candidates:
            if r in _world.exited:
                how, issued = _world.exited[r]
                if seq is not None and issued.get(self._name, 0) >= seq:
                    continue  # it took part in this collective before it left
                gone.append(f"rank {r} has left the process group ({how})")
                continue
            host, pid = _world.peers[r]
            if host == _world.host and not _pid_alive(pid):
                gone.append(f"rank {r} (pid {pid} on {host}) is no longer running")
        if not gone:
            return
        if peers is not None and len(peers) > 1 and len(gone) < len(candidates):
            return  # a receive from any rank: another sender may still come
        _fail(f"[Rank {_world.rank}] {gone[0]}: {what} cannot complete")

    def _engine_failed(self, what: str, message: str) -> None:
        _world.broken = _world.broken or f"[Rank {_world.rank}] {what} failed: {message}"

    def _timed_out(self, what: str, limit: float) -> None:
        _fail(f"[Rank {_world.rank}] {what} timed out after {limit:g} s: not every rank of "
              f"the group {self._ranks} joined it (the process group's timeout; pass "
              f"timeout= to init_process_group or new_group for longer)")

    # -- issuing --------------------------------------------------------------------------------
    def _next(self, op: str) -> str:
        self._seq += 1
        return f"{op} (SequenceNumber={self._seq})"

    def _wait_internal(self, requests, what: str) -> None:
        _poll(_all_done(requests, self, what), self, what, self._timeout_seconds())


def _all_done(requests, group=None, what: str = ""):
    pending = list(requests)

    def test() -> bool:
        while pending:
            if not _test_request(pending[0], group, what):
                return False
            pending.pop(0)
        return True

    return test


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie has exited: its parent has not reaped it yet
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def _sequence_number(what: str) -> int | None:
    marker = "SequenceNumber="
    at = what.find(marker)
    if at < 0:
        return None
    digits = what[at + len(marker):].split(")", 1)[0]
    return int(digits) if digits.isdigit() else None


def _fail(message: str):
    _world.broken = _world.broken or message
    raise DistBackendError(message)


def _read_notices(polls: int = 1) -> None:
    """Record the notices other ranks sent (``F`` a failure, ``X`` an exit). ``polls`` tests
    of the receive: MPI may need more than one call to progress a notice that has arrived."""
    MPI = _world.MPI
    misses = 0
    while _world.abort_req is not None and misses < polls:
        status = MPI.Status()
        if not _world.abort_req.Test(status):
            misses += 1
            continue
        raw = bytes(_world.abort_buf[:status.Get_count(MPI.BYTE)])
        source = status.Get_source()
        _post_notice_receive()
        text = raw[1:].decode("utf-8", "replace")
        if raw[:1] == b"X":
            how, _, issued = text.partition("\n")
            try:
                counts = {str(k): int(v) for k, v in json.loads(issued or "{}").items()}
            except (ValueError, AttributeError):
                counts = {}
            _world.exited[source] = (how, counts)
        else:
            _world.failed.setdefault(source, text)


def _check_abort(polls: int = 1) -> None:
    """Read the notices other ranks sent: a failure ends this rank's waits at once; an exit
    ends only the waits that need the rank that left (see ``_check_peers_alive``)."""
    _read_notices(polls)
    if _world.failed:
        source = next(iter(_world.failed))  # the first notice: the root cause
        _fail(f"[Rank {_world.rank}] rank {source} failed: {_world.failed[source]}")


def _post_notice_receive() -> None:
    _world.abort_req = _world.ctl.Irecv(_world.abort_buf, source=_world.MPI.ANY_SOURCE,
                                        tag=_ABORT_TAG)


def _notify_peers(kind: bytes, text: str, wait: float) -> None:
    """Send a notice (``F`` failure, ``X`` exit) to every other rank of the job."""
    ctl = _world.ctl
    if ctl is None:
        return
    payload = kind + text.encode("utf-8", "replace")[:_ABORT_BYTES - 1]
    buf = np.frombuffer(payload, dtype=np.uint8).copy()
    reqs = [ctl.Isend(buf, dest=r, tag=_ABORT_TAG)
            for r in range(ctl.Get_size()) if r != _world.rank]
    import time

    deadline = time.monotonic() + wait
    while reqs and time.monotonic() < deadline:
        reqs = [r for r in reqs if not r.Test()]
        time.sleep(1e-3)
    _world.keep.append((buf, reqs))  # alive until MPI has sent it


def _check_usable() -> None:
    if _world.broken is not None:
        raise DistBackendError(f"the process group cannot be used after an earlier failure: "
                               f"{_world.broken}")
    _check_abort(polls=4)


def _exit_notice(how: str) -> str:
    """An exit notice: how this rank left, and the collectives it had issued per group."""
    issued = {pg._name: pg._seq for pg in _world.groups}
    return f"{how}\n{json.dumps(issued)}"


# how long a failing rank waits for every other rank to end on its own before it aborts the job
_ABORT_GRACE = 10.0


def _announce_failure(exc_type, exc, tb) -> None:
    """Tell every other rank that this one is failing and report as Python would; then give
    the other ranks (up to the group's timeout, at most ``_ABORT_GRACE`` seconds) to end on
    their own, and abort the MPI job if some do not (a rank that hangs, or computes without
    communicating), so that the job never outlives a failure."""
    notify = (not issubclass(exc_type, KeyboardInterrupt) and _world.ctl is not None
              and not _world.announced)
    try:
        if notify:
            _notify_peers(b"F", f"{exc_type.__name__}: {exc}", 2.0)
            _world.announced = True
    finally:
        (_world.excepthook or sys.__excepthook__)(exc_type, exc, tb)
    if notify:
        _abort_unless_peers_end()


def _abort_unless_peers_end() -> None:
    import time

    default = _world.default
    grace = _ABORT_GRACE if default is None else min(_ABORT_GRACE, default._timeout_seconds())
    others = set(range(_world.ctl.Get_size())) - {_world.rank}
    pending = others
    deadline = time.monotonic() + grace
    while True:
        try:
            _read_notices()
        except Exception:
            break
        pending = others - set(_world.exited) - set(_world.failed)
        pending = {r for r in pending if _peer_process_alive(r)}
        if not pending:
            return
        if time.monotonic() >= deadline:
            break
        time.sleep(0.01)
    sys.stderr.write(f"ember.distributed: rank {_world.rank} failed and rank(s) "
                     f"{', '.join(map(str, sorted(pending)))} did not end within {grace:g} s; "
                     f"aborting the MPI job\n")
    sys.stderr.flush()
    time.sleep(0.2)  # hydra forwards output asynchronously: an abort at once can lose the line
    _world.MPI.COMM_WORLD.Abort(1)


def _peer_process_alive(rank: int) -> bool:
    if rank >= len(_world.peers):
        return True
    host, pid = _world.peers[rank]
    return host != _world.host or _pid_alive(pid)


# -- process groups -------------------------------------------------------------------------
def is_available() -> bool:
    """Whether the distributed package is available (it always is; the engines load lazily)."""
    return True


def is_mpi_available() -> bool:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def is_nccl_available() -> bool:
    from ._nccl import nccl_available

    return nccl_available()


def is_gloo_available() -> bool:
    """False: Ember has no Gloo engine (``backend="gloo"`` runs on MPI)."""
    return False


def is_ucc_available() -> bool:
    """False: Ember has no UCC engine."""
    return False


def is_xccl_available() -> bool:
    """False: Ember has no XCCL (Intel GPU) engine."""
    return False


def supports_complex(reduceOp) -> bool:
    """Whether ``reduceOp`` reduces complex tensors (not MAX, MIN, PRODUCT or the bitwise
    ops), as PyTorch's."""
    return reduceOp not in (ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PRODUCT, ReduceOp.BAND,
                            ReduceOp.BOR, ReduceOp.BXOR)


def is_backend_available(backend: str) -> bool:
    """Whether ``backend`` can run here (``is_<backend>_available()`` where there is one)."""
    check = globals().get(f"is_{str(backend).lower()}_available")
    if check is not None:
        return bool(check())
    return str(backend).lower() in Backend.backend_list


def get_default_backend_for_device(device) -> str:
    """The backend PyTorch gives ``device``'s type: ``"gloo"`` for CPU (Ember runs it on
    MPI), ``"nccl"`` for CUDA."""
    from .._device import device as _device_cls

    kind = device.type if isinstance(device, _device_cls) else _device_cls(device).type
    backend = Backend.default_device_backend_map.get(kind)
    if backend is None:
        raise ValueError(f"Default backend not registered for device : {device}")
    return backend


def is_torchelastic_launched() -> bool:
    """Whether this process was started by ``ember.distributed.run`` (torchrun's equivalent)."""
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def is_initialized() -> bool:
    return _world.default is not None


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    """``LOCAL_RANK`` as the launcher set it."""
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not in the environment. Consider passing fallback_rank "
                       "to allow `get_node_local_rank` to work, assuming you are not running "
                       "in a multi-device context and want the code to run locally instead.")


def _engine_kind(backend) -> str:
    name = "mpi" if backend is None else str(Backend(backend))
    if "nccl" in name and ("gloo" not in name and "mpi" not in name or ":" in name):
        if ":" in name:  # "cpu:gloo,cuda:nccl": NCCL when a GPU is there
            from ._nccl import nccl_available

            return "nccl" if nccl_available() else "mpi"
        return "nccl"
    return "mpi"


def _check_env_matches(rank: int, world_size: int, mpi_rank: int, mpi_size: int) -> None:
    def hint(n: int) -> str:
        return (f"start the ranks with `python -m ember.distributed.run --nproc-per-node {n} "
                f"script.py` or `mpiexec -n {n} python script.py`")

    for what, given, actual in (("world_size", world_size, mpi_size), ("rank", rank, mpi_rank)):
        if given is not None and int(given) != -1 and int(given) != actual:
            n = world_size if what == "world_size" else mpi_size
            raise ValueError(f"init_process_group: {what}={given}, but MPI started this process "
                             f"as rank {mpi_rank} of {mpi_size}: {hint(int(n))}")
    for var, actual in (("WORLD_SIZE", mpi_size), ("RANK", mpi_rank)):
        value = os.environ.get(var)
        if value is not None and value.strip() and int(value) != actual:
            raise ValueError(f"init_process_group: {var}={value} in the environment, but MPI "
                             f"started this process as rank {mpi_rank} of {mpi_size}: "
                             f"{hint(int(os.environ.get('WORLD_SIZE', mpi_size)))}")


def init_process_group(backend=None, init_method=None, timeout=None, world_size: int = -1,
                       rank: int = -1, store=None, group_name: str = "", pg_options=None,
                       device_id=None) -> None:
    """Join this process to the job's default process group.

    The ranks are MPI's (see the module docstring); ``rank`` and ``world_size`` are checked
    against them, as are ``RANK``/``WORLD_SIZE`` in the environment. ``init_method`` and
    ``store`` are accepted for PyTorch programs but MPI does the rendezvous. ``timeout``
    (default 30 minutes) bounds every wait of the group's collectives."""
    if _world.default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if timeout is not None and not isinstance(timeout, timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got "
                        f"{type(timeout).__name__}")
    timeout = default_pg_timeout if timeout is None else timeout
    if device_id is not None and not isinstance(device_id, int):
        from .._device import device as _device_cls

        dev = device_id if isinstance(device_id, _device_cls) else _device_cls(device_id)
        if dev.type == "cpu" or dev.index is None:
            raise ValueError("init_process_group device_id parameter must be an accelerator "
                             "with an index")
    kind = _engine_kind(backend)
    if kind == "nccl":  # before MPI is touched: a failed init leaves nothing behind
        from ._nccl import require_nccl

        require_nccl()
    from ._mpi import MPIEngine, load_mpi

    MPI = load_mpi()
    world = MPI.COMM_WORLD
    _check_env_matches(rank, world_size, world.Get_rank(), world.Get_size())
    set_debug_level_from_env()
    _world.MPI = MPI
    _world.rank = world.Get_rank()
    _world.host = socket.gethostname()
    ctl = world.Dup()
    _world.ctl = ctl
    _world.broken = None
    _world.exited = {}
    _world.failed = {}
    _world.announced = False
    _world.abort_buf = np.empty(_ABORT_BYTES, dtype=np.uint8)
    _post_notice_receive()
    engine = MPIEngine(MPI, world.Dup())
    pg = ProcessGroup(engine, list(range(engine.size)), timeout, "mpi",
                      group_name or "default_pg")
    _world.peers = [(_world.host, os.getpid())] * engine.size  # until the exchange below
    _world.peers = _exchange_peers(pg)
    if kind == "nccl":
        from ._nccl import NCCLEngine

        pg = ProcessGroup(NCCLEngine.create(pg, device_id), pg._ranks, timeout, "nccl",
                          pg._name)
    _world.default = pg
    _world.groups = [pg]
    _world.excepthook = sys.excepthook
    sys.excepthook = _announce_failure
    if not _world.atexit_registered:
        import atexit

        atexit.register(_release_at_exit)
        _world.atexit_registered = True


def _release_at_exit() -> None:
    """Retire the failure-notice receive while its buffer is alive: mpi4py finalizes MPI
    after Python has freed its objects, and a notice arriving then would be written into
    freed memory."""
    if _world.default is not None and not _world.announced:
        _notify_peers(b"X", _exit_notice("its program ended"), 1.0)
        _world.announced = True
    _cancel_notice_receive()


def _cancel_notice_receive() -> None:
    req, _world.abort_req = _world.abort_req, None
    if req is not None:
        try:
            req.Cancel()
            req.Wait()
        except Exception:
            pass


def _exchange_peers(pg: ProcessGroup) -> list[tuple[str, int]]:
    """Every rank's host name and pid (for noticing a peer on this host that has gone)."""
    engine = pg._engine
    mine = np.zeros(72, dtype=np.uint8)
    host = _world.host.encode()[:64]
    mine[:len(host)] = np.frombuffer(host, dtype=np.uint8)
    mine[64:] = np.frombuffer(np.int64(os.getpid()).tobytes(), dtype=np.uint8)
    every = np.empty((engine.size, 72), dtype=np.uint8)
    pg._wait_internal(engine.allgather(mine, every), "init_process_group")
    return [(bytes(row[:64]).rstrip(b"\0").decode(), int(row[64:].view(np.int64)[0]))
            for row in every]


def destroy_process_group(group=None) -> None:
    """Leave ``group`` (by default every group: the package can be initialised again)."""
    if group is None or group is _world.default:
        if _world.default is None:
            raise ValueError("Default process group has not been initialized, please make "
                             "sure to call init_process_group.")
        if not _world.announced:
            _notify_peers(b"X", _exit_notice("it called destroy_process_group"), 1.0)
        for pg in _world.groups:
            _free_engine(pg)
        _cancel_notice_receive()
        if _world.ctl is not None:
            _world.ctl.Free()
            _world.ctl = None
        if sys.excepthook is _announce_failure:
            sys.excepthook = _world.excepthook or sys.__excepthook__
        _world.default = None
        _world.groups = []
        _world.broken = None
        return
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    if group in _world.groups:
        _world.groups.remove(group)
        _free_engine(group)


def _free_engine(pg: ProcessGroup) -> None:
    try:
        pg._engine.free()
    except Exception:  # a broken job: the communicator may refuse to be freed
        pass


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization: bool = False, group_desc=None, device_id=None):
    """A process group of ``ranks`` (every rank of the default group must call it, in the same
    order); ranks outside it get ``GroupMember.NON_GROUP_MEMBER``."""
    default = _default_group()
    world_size = default.size()
    members = list(range(world_size)) if ranks is None else sorted(int(r) for r in ranks)
    for r in members:
        if r < 0 or r >= world_size:
            raise ValueError(f"Invalid rank {r}: the default group has {world_size} ranks")
    if len(set(members)) != len(members):
        raise ValueError(f"new_group: ranks {list(ranks)} are not unique")
    timeout = default._timeout if timeout is None else timeout
    MPI = _world.MPI
    me = default.rank()
    color = 0 if me in members else MPI.UNDEFINED
    key = members.index(me) if me in members else 0
    comm = _split(default, color, key)
    _world.group_count += 1
    if comm == MPI.COMM_NULL:
        return GroupMember.NON_GROUP_MEMBER
    from ._mpi import MPIEngine

    pg = ProcessGroup(MPIEngine(MPI, comm), members, timeout, "mpi",
                      str(_world.group_count))
    if _engine_kind(backend or default._backend) == "nccl":
        from ._nccl import NCCLEngine

        pg = ProcessGroup(NCCLEngine.create(pg, device_id), members, timeout, "nccl",
                          pg._name)
    _world.groups.append(pg)
    return pg



def get_pg_count() -> int:
    """How many process groups this process has made (the default group counts)."""
    return _world.group_count + (1 if _world.default is not None else 0)


def split_group(parent_pg=None, split_ranks=None, timeout=None, pg_options=None,
                group_desc=None, backend=None):
    """Split ``parent_pg`` (the default group by default) into the disjoint groups of
    ``split_ranks`` (lists of ranks *in the parent group*), as PyTorch's ``split_group``:
    every rank of the parent calls it with the same lists; each gets the group it is in, or
    None. Only the parent's ranks take part (one ``MPI_Comm_split``; PyTorch's needs an
    NCCL/XCCL parent bound to a device)."""
    if split_ranks is None or len(split_ranks) == 0:
        raise ValueError("split_ranks cannot be None or empty")
    default = _default_group()
    parent = parent_pg or default
    if parent is not default and parent not in _world.groups:
        raise ValueError(f"Group {parent_pg} is not registered")
    members = get_process_group_ranks(parent)
    me = default.rank()
    if me not in members:
        raise ValueError(f"Global rank {me} is not part of the parent group {parent_pg}")
    mine, seen = None, set()
    for i, split in enumerate(split_ranks):
        split = [int(r) for r in split]
        for r in split:
            if not 0 <= r < len(members):
                raise ValueError(f"split_group: rank {r} is not a rank of the parent group "
                                 f"(of size {len(members)})")
            if r in seen:
                raise ValueError(f"split_group: rank {r} is in more than one split "
                                 f"({split_ranks})")
            seen.add(r)
        if parent.rank() in split:
            mine = (i, sorted(split))
    MPI = _world.MPI
    color, key = (mine[0], mine[1].index(parent.rank())) if mine else (MPI.UNDEFINED, 0)
    comm = _split(parent, color, key)
    _world.group_count += 1
    if comm == MPI.COMM_NULL:
        return None
    from ._mpi import MPIEngine

    timeout = parent._timeout if timeout is None else timeout
    pg = ProcessGroup(MPIEngine(MPI, comm), [members[r] for r in mine[1]], timeout, "mpi",
                      str(_world.group_count))
    if _engine_kind(backend or parent._backend) == "nccl":
        from ._nccl import NCCLEngine

        pg = ProcessGroup(NCCLEngine.create(pg, None), pg._ranks, timeout, "nccl",
                          pg._name)
    _world.groups.append(pg)
    return pg


def new_subgroups(group_size=None, group=None, timeout=None, backend=None, pg_options=None,
                  group_desc=None):
    """Split ``group`` (the world by default) into subgroups of ``group_size`` consecutive
    ranks; ``(this rank's subgroup, all subgroups)``. Every rank must call it. Without
    ``group_size`` the size is the number of GPUs (an error on CPU, as in PyTorch)."""
    if group_size is None:
        from .. import cuda

        if not cuda.is_available():
            raise ValueError("Default group size only takes effect when CUDA is available.If "
                             "your subgroup using a backend that does not depend on CUDA,please "
                             "pass in 'group_size' correctly.")
        group_size = cuda.device_count()
    if group_size <= 0:
        raise ValueError(f"The arg 'group_size' ({group_size}) must be positive")
    world_size = get_world_size(group=group)
    if world_size < group_size:
        raise ValueError(f"The arg 'group_size' ({group_size}) must not exceed the world size "
                         f"({world_size})")
    if world_size % group_size != 0:
        raise ValueError(f"The world size ({world_size}) must be divisible by '{group_size=}'")
    ranks = get_process_group_ranks(group) if group is not None else list(range(world_size))
    return new_subgroups_by_enumeration([ranks[i:i + group_size]
                                         for i in range(0, len(ranks), group_size)],
                                        timeout=timeout, backend=backend, pg_options=pg_options,
                                        group_desc=group_desc)


def new_subgroups_by_enumeration(ranks_per_subgroup_list, timeout=None, backend=None,
                                 pg_options=None, group_desc=None):
    """One process group per list of ranks (they may not overlap; a rank may be in none);
    ``(this rank's subgroup or None, all subgroups)``. Every rank must call it."""
    if not ranks_per_subgroup_list:
        raise ValueError("The arg 'ranks_per_subgroup_list' cannot be empty")
    owner: dict = {}
    for ranks in ranks_per_subgroup_list:  # checked before any group is made
        for r in ranks:
            if r in owner:
                raise ValueError(f"Rank {r} has appeared in both subgroup {owner[r]} and "
                                 f"{ranks}")
            owner[r] = ranks
    me = get_rank()
    subgroups, mine = [], None
    for ranks in ranks_per_subgroup_list:
        subgroup = new_group(ranks=ranks, timeout=timeout, backend=backend,
                             pg_options=pg_options, group_desc=group_desc)
        subgroups.append(subgroup)
        if me in ranks:
            mine = subgroup
    return mine, subgroups


def _split(default: ProcessGroup, color, key: int):
    engine = default._engine
    comm = engine.comm if hasattr(engine, "comm") else engine.mpi.comm
    return comm.Split(color, key)


def _resolve(group, op: str):
    """The process group to run ``op`` on, or None when this rank is not in ``group``."""
    if group is GroupMember.NON_GROUP_MEMBER:
        warnings.warn(f"Running {op} on global rank {_world.rank} which does not belong to "
                      f"the given group.", stacklevel=3)
        return None
    pg = _default_group() if group is None else group
    if not isinstance(pg, ProcessGroup):
        raise TypeError(f"{op}: group must be a ProcessGroup, got {type(group).__name__}")
    _check_usable()
    return pg


def get_rank(group=None) -> int:
    """This process's rank in ``group`` (-1 if it is not a member)."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    pg = _default_group() if group is None else group
    return pg.rank()


def get_world_size(group=None) -> int:
    """The number of ranks in ``group`` (-1 if this process is not a member)."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    pg = _default_group() if group is None else group
    return pg.size()


def get_backend(group=None) -> str:
    """The backend of ``group``: ``"mpi"`` (also for ``"gloo"`` requests) or ``"nccl"``."""
    if group is GroupMember.NON_GROUP_MEMBER:
        raise ValueError("Invalid process group specified")
    pg = _default_group() if group is None else group
    return Backend(pg._backend)


def get_process_group_ranks(group) -> list[int]:
    """The global ranks of ``group``'s members, in group-rank order."""
    pg = _default_group() if group is None else group
    return list(pg._ranks)


def get_global_rank(group, group_rank: int) -> int:
    pg = _default_group() if group is None else group
    if not 0 <= group_rank < len(pg._ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {pg._name}")
    return pg._ranks[group_rank]


def get_group_rank(group, global_rank: int) -> int:
    pg = _default_group() if group is None else group
    if global_rank not in pg._ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg._name}")
    return pg._ranks.index(global_rank)


def _peer(pg: ProcessGroup, global_rank, group_rank, what: str) -> int:
    """A peer's group rank from the global ``global_rank`` or ``group_rank`` keyword."""
    if group_rank is not None:
        if global_rank is not None:
            raise ValueError(f"Can't specify both {what} and group_{what}")
        if not 0 <= group_rank < pg.size():
            raise ValueError(f"Group rank {group_rank} is not part of group {pg._name}")
        return group_rank
    if global_rank is None:
        raise ValueError(f"Must specify either {what} or group_{what}")
    return get_group_rank(pg, int(global_rank))


# -- buffers ----------------------------------------------------------------------------------
def _check_tensor(t, name: str) -> None:
    from .._tensor import Tensor

    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"ember.Tensor but got {type(t)} instead.")


def _check_tensor_list(ts, name: str) -> None:
    from .._tensor import Tensor

    if not isinstance(ts, (list, tuple)) or not all(isinstance(t, Tensor) for t in ts):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"List[ember.Tensor] but got {type(ts)} instead.")


def _buffer(pg: ProcessGroup, t, write: bool):
    """The engine's contiguous array for ``t`` and what writes it back (None: no copy)."""
    arr = t._data
    prepare = getattr(pg._engine, "prepare", None)
    if prepare is not None:
        return prepare(t, write)
    from .._dtype import BFLOAT16_NP

    low = arr.dtype == BFLOAT16_NP  # MPI has no bfloat16: sent and reduced as float32
    if not low and t._device.type == "cpu" and arr.flags.c_contiguous and (
            arr.flags.writeable or not write):
        return arr, None
    from ..backends import backend_of

    be = backend_of(t._device)
    host = np.ascontiguousarray(be.to_host(arr))
    if low:
        host = host.astype(np.float32)
    if host is arr:  # a read-only CPU array asked to be written: a copy, written back below
        host = host.copy()
    if not write:
        return host, None

    def write_back() -> None:
        _write(t, host)

    return host, write_back


def _write(t, values: np.ndarray) -> None:
    """Write host ``values`` into ``t`` (any device, any layout) and count the write."""
    if tuple(values.shape) != tuple(t.shape):
        values = values.reshape(t.shape)
    if t._device.type == "cpu":
        t._data[...] = values
    else:
        from ..backends import backend_of

        t._data[...] = backend_of(t._device).to_device(values, t._device.index)
    t._bump_version()


def _empty_host(pg: ProcessGroup, shape, dtype):
    maker = getattr(pg._engine, "empty", None)
    return maker(shape, dtype) if maker is not None else np.empty(shape, dtype=dtype)


def _finish_all(*steps):
    steps = [s for s in steps if s is not None]
    if not steps:
        return None

    def run():
        for step in steps:
            step()

    return run


def _issue(work: Work, async_op: bool):
    if async_op:
        return work
    work.wait()
    return None


def _np_dtype(t):
    return t._data.dtype


def _fingerprint(pg: ProcessGroup, what: str, tensors) -> None:
    """In DETAIL mode, check that every rank runs ``what`` on the same shapes and dtypes
    (PyTorch's ``CollectiveFingerPrint``); on a mismatch every rank raises, naming both."""
    if _debug_level is not DebugLevel.DETAIL:
        return
    shapes = [list(t.shape) for t in tensors]
    mine = {"SequenceNumber": _sequence_number(what), "OpType": what.split(" ", 1)[0],
            "TensorShape": shapes[0] if len(shapes) == 1 else shapes,
            "TensorDtypes": ",".join(sorted({_bare(t.dtype)
                                             for t in tensors})),
            "TensorDeviceTypes": ",".join(sorted({t._device.type for t in tensors}))}
    every = [json.loads(raw) for raw in
             _allgather_bytes(pg, json.dumps(mine).encode(), f"{what} fingerprint")]
    for r, other in enumerate(every):
        if other == mine:
            continue
        aspects = {"SequenceNumber": "Sequence number", "OpType": "Op type",
                   "TensorShape": "Tensor shapes", "TensorDtypes": "Tensor dtypes",
                   "TensorDeviceTypes": "Tensor devices"}
        differ = "".join(f"\t {label}: {mine[key]}vs {other[key]}" for key, label in
                         aspects.items() if mine[key] != other[key])
        _fail(f"Detected mismatch between collectives on ranks. Rank {pg._ranks[pg.rank()]} is "
              f"running collective: {_fingerprint_text(mine)}, but Rank {pg._ranks[r]} is "
              f"running collective: {_fingerprint_text(other)}. Collectives differ in the "
              f"following aspects: {differ}")


def _fingerprint_text(fp: dict) -> str:
    return "CollectiveFingerPrint(" + ", ".join(f"{k}={v}" for k, v in fp.items()) + ")"


def _allgather_bytes(pg: ProcessGroup, payload: bytes, what: str) -> list[bytes]:
    """Every rank's ``payload`` (host arrays on the group's MPI communicator)."""
    engine = _mpi_engine(pg)
    n = engine.size
    size = np.array([len(payload)], dtype=np.int64)
    sizes = np.empty(n, dtype=np.int64)
    pg._wait_internal(engine.allgather(size, sizes), what)
    width = max(int(sizes.max()), 1)
    mine = np.zeros(width, dtype=np.uint8)
    mine[:len(payload)] = np.frombuffer(payload, dtype=np.uint8)
    every = np.empty((n, width), dtype=np.uint8)
    pg._wait_internal(engine.allgather(mine, every), what)
    return [bytes(every[r, :sizes[r]]) for r in range(n)]


def _mpi_engine(pg: ProcessGroup):
    engine = pg._engine
    return engine if engine.name == "mpi" else engine.mpi


# -- reductions ---------------------------------------------------------------------------------
_OP_NAMES = {_RedOpType.SUM: "sum", _RedOpType.PRODUCT: "product", _RedOpType.MIN: "min",
             _RedOpType.MAX: "max", _RedOpType.BAND: "band", _RedOpType.BOR: "bor",
             _RedOpType.BXOR: "bxor", _RedOpType.AVG: "sum"}


def _reduce_op(op, dtype, pg: ProcessGroup | None = None) -> str:
    """The engine's name for ``op`` on ``dtype``, or PyTorch's error before anything is sent."""
    if not isinstance(op, _RedOpType) or op not in _OP_NAMES:
        raise ValueError(f"Unsupported ReduceOp {op!r}: use ReduceOp.SUM, AVG, PRODUCT, MIN, "
                         f"MAX, BAND, BOR or BXOR")
    if op in (_RedOpType.BAND, _RedOpType.BOR, _RedOpType.BXOR) and (
            dtype.kind in "fc" or dtype in _dtype.FLOATING_NP):
        raise RuntimeError(f"Cannot use ReduceOp.{op.name} with non-integral dtype")
    if op is _RedOpType.AVG and dtype.kind == "b":
        raise RuntimeError("Cannot use ReduceOp.AVG with boolean inputs")
    if op in (_RedOpType.MIN, _RedOpType.MAX) and dtype.kind == "c":
        raise RuntimeError(f"Cannot use ReduceOp.{op.name} with complex inputs")
    check = getattr(pg._engine, "check_reduction", None) if pg is not None else None
    if check is not None:
        check(op.name, _OP_NAMES[op], dtype)
    return _OP_NAMES[op]


def _averager(op, buf, size: int):
    if op is not _RedOpType.AVG:
        return None

    def average() -> None:
        if buf.dtype.kind in "fc" or buf.dtype in _dtype.FLOATING_NP:
            buf[...] /= size
            return
        # integers: the sum divided with truncation toward zero, as NCCL's ncclAvg does
        # (floor division would round -5 / 2 to -3)
        negative = buf < 0 if buf.dtype.kind == "i" else None
        buf[...] = abs(buf) // size
        if negative is not None:
            buf[negative] *= -1

    return average


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``tensor`` across the group, in place, on every rank."""
    _check_tensor(tensor, "tensor")
    pg = _resolve(group, "all_reduce")
    if pg is None:
        return None
    name = _reduce_op(op, _np_dtype(tensor), pg)
    what = pg._next("ALLREDUCE")
    _fingerprint(pg, what, [tensor])
    buf, back = _buffer(pg, tensor, write=True)
    reqs = pg._engine.allreduce(buf, name)
    done = _finish_all(_averager(op, buf, pg.size()), _after_write(tensor, back))
    return _issue(Work(reqs, pg, what, done, [tensor]), async_op)


def all_reduce_coalesced(tensors, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """``all_reduce`` of several tensors in one operation (deprecated in PyTorch)."""
    _check_tensor_list(tensors, "tensors")
    works = [all_reduce(t, op, group, async_op=True) for t in tensors]
    return _issue(_Joined([w for w in works if w is not None]), async_op)


def broadcast(tensor, src=None, group=None, async_op: bool = False, group_src=None):
    """Send ``tensor`` from rank ``src`` to every rank of the group (in place)."""
    _check_tensor(tensor, "tensor")
    pg = _resolve(group, "broadcast")
    if pg is None:
        return None
    root = _peer(pg, src, group_src, "src")
    what = pg._next("BROADCAST")
    _fingerprint(pg, what, [tensor])
    receiving = pg.rank() != root
    buf, back = _buffer(pg, tensor, write=receiving)
    reqs = pg._engine.broadcast(buf, root)
    bump = tensor._bump_version if receiving and back is None else None
    return _issue(Work(reqs, pg, what, _finish_all(back, bump), [tensor]), async_op)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op: bool = False,
           group_dst=None):
    """Reduce ``tensor`` across the group into rank ``dst``'s ``tensor``; the other ranks'
    tensors are left as they were."""
    _check_tensor(tensor, "tensor")
    pg = _resolve(group, "reduce")
    if pg is None:
        return None
    root = _peer(pg, dst, group_dst, "dst")
    name = _reduce_op(op, _np_dtype(tensor), pg)
    what = pg._next("REDUCE")
    _fingerprint(pg, what, [tensor])
    is_root = pg.rank() == root
    buf, back = _buffer(pg, tensor, write=is_root)  # other ranks' buffers are only read
    reqs = pg._engine.reduce(buf, root, name)
    done = None
    if is_root:
        done = _finish_all(_averager(op, buf, pg.size()), _after_write(tensor, back))
    return _issue(Work(reqs, pg, what, done, [tensor]), async_op)


def all_gather(tensor_list, tensor, group=None, async_op: bool = False):
    """Fill ``tensor_list`` (one tensor per rank) with every rank's ``tensor``."""
    _check_tensor_list(tensor_list, "tensor_list")
    _check_tensor(tensor, "tensor")
    pg = _resolve(group, "all_gather")
    if pg is None:
        return None
    n = pg.size()
    _one_per_rank(tensor_list, n, "all_gather", "tensor_list")
    _same_layout(tensor_list, tensor, "all_gather", "tensor_list")
    what = pg._next("ALLGATHER")
    _fingerprint(pg, what, [tensor])
    send, _ = _buffer(pg, tensor, write=False)
    recv = _empty_host(pg, (n,) + send.shape, send.dtype)
    reqs = pg._engine.allgather(send, recv)

    def scatter_out() -> None:
        for i, out in enumerate(tensor_list):
            _write_engine(pg, out, recv[i])

    return _issue(Work(reqs, pg, what, scatter_out, list(tensor_list)), async_op)


def _write_engine(pg: ProcessGroup, t, values) -> None:
    writer = getattr(pg._engine, "write", None)
    (writer or _write)(t, values)


def _after_write(t, back):
    """What completes a write into ``t``: the copy back (which counts the write) or, when
    the engine wrote in ``t``'s own memory, the version bump."""
    return back if back is not None else t._bump_version


def _one_per_rank(tensors, n: int, op: str, name: str) -> None:
    if len(tensors) != n:
        raise ValueError(f"{op}: {name} has {len(tensors)} tensors, but the group has {n} ranks")


def _same_layout(tensors, like, op: str, name: str) -> None:
    for i, t in enumerate(tensors):
        if tuple(t.shape) != tuple(like.shape):
            raise ValueError(f"{op}: {name}[{i}] has shape {list(t.shape)}, but the input has "
                             f"shape {list(like.shape)} (every rank's tensors must have the "
                             f"same shape)")
        if _np_dtype(t) != _np_dtype(like):
            raise TypeError(f"{op}: {name}[{i}] has dtype {t.dtype}, but the input has dtype "
                            f"{like.dtype}")


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op: bool = False):
    """Every rank's ``input_tensor`` concatenated along dim 0 (or stacked) into
    ``output_tensor``."""
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    pg = _resolve(group, "all_gather_into_tensor")
    if pg is None:
        return None
    n = pg.size()
    if output_tensor.numel() != n * input_tensor.numel():
        raise ValueError(f"all_gather_into_tensor: output tensor size must be equal to "
                         f"world_size times input tensor size ({output_tensor.numel()} != "
                         f"{n} * {input_tensor.numel()})")
    if _np_dtype(output_tensor) != _np_dtype(input_tensor):
        raise TypeError(f"all_gather_into_tensor: output dtype {output_tensor.dtype} does not "
                        f"match input dtype {input_tensor.dtype}")
    what = pg._next("_ALLGATHER_BASE")
    _fingerprint(pg, what, [input_tensor])
    send, _ = _buffer(pg, input_tensor, write=False)
    recv, back = _buffer(pg, output_tensor, write=True)
    reqs = pg._engine.allgather(send, recv.reshape((n,) + send.shape))
    done = _after_write(output_tensor, back)
    return _issue(Work(reqs, pg, what, done, [output_tensor]), async_op)


def all_gather_coalesced(output_tensor_lists, input_tensor_list, group=None,
                         async_op: bool = False):
    """``all_gather`` of several tensors (deprecated in PyTorch)."""
    works = [all_gather(outs, t, group, async_op=True)
             for outs, t in zip(output_tensor_lists, input_tensor_list)]
    return _issue(_Joined([w for w in works if w is not None]), async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``input_list[i]`` across the group into rank ``i``'s ``output``."""
    _check_tensor(output, "output")
    _check_tensor_list(input_list, "input_list")
    pg = _resolve(group, "reduce_scatter")
    if pg is None:
        return None
    n = pg.size()
    _one_per_rank(input_list, n, "reduce_scatter", "input_list")
    _same_layout(input_list, output, "reduce_scatter", "input_list")
    name = _reduce_op(op, _np_dtype(output), pg)
    what = pg._next("REDUCE_SCATTER")
    _fingerprint(pg, what, [output])
    send = _stack(pg, input_list)
    recv, back = _buffer(pg, output, write=True)
    reqs = pg._engine.reduce_scatter(send, recv, name)
    done = _finish_all(_averager(op, recv, n), _after_write(output, back))
    return _issue(Work(reqs, pg, what, done, [output]), async_op)


def _stack(pg: ProcessGroup, tensors):
    """One contiguous engine array holding ``tensors`` one after another."""
    parts = [_buffer(pg, t, write=False)[0] for t in tensors]
    stacker = getattr(pg._engine, "stack", None)
    if stacker is not None:
        return stacker(parts)
    return np.stack(parts) if parts else np.empty(0)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None,
                          async_op: bool = False):
    """Reduce ``input`` (the group's ranks' chunks along dim 0, or stacked) across the group;
    rank ``i``'s ``output`` receives chunk ``i``."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    pg = _resolve(group, "reduce_scatter_tensor")
    if pg is None:
        return None
    n = pg.size()
    if input.numel() != n * output.numel():
        raise ValueError(f"reduce_scatter_tensor: input tensor must be the same size as output "
                         f"size times world size ({input.numel()} != {output.numel()} * {n})")
    if _np_dtype(output) != _np_dtype(input):
        raise TypeError(f"reduce_scatter_tensor: output dtype {output.dtype} does not match "
                        f"input dtype {input.dtype}")
    name = _reduce_op(op, _np_dtype(output), pg)
    what = pg._next("_REDUCE_SCATTER_BASE")
    _fingerprint(pg, what, [input])
    send, _ = _buffer(pg, input, write=False)
    recv, back = _buffer(pg, output, write=True)
    reqs = pg._engine.reduce_scatter(send, recv, name)
    done = _finish_all(_averager(op, recv, n), _after_write(output, back))
    return _issue(Work(reqs, pg, what, done, [output]), async_op)


def _check_root_list(pg: ProcessGroup, root: int, tensors, like, op: str, role: str) -> bool:
    """``gather_list``/``scatter_list``: one tensor per rank like ``like`` on the root (the
    ``role`` rank), none elsewhere, in PyTorch's words; whether this rank is the root."""
    name = f"{op}_list"
    if pg.rank() != root:
        if tensors:
            raise ValueError(f"Argument ``{name}`` must NOT be specified on non-{role} ranks.")
        return False
    if not tensors:
        raise ValueError(f"Argument ``{name}`` must be specified on {role} rank.")
    _check_tensor_list(tensors, name)
    _one_per_rank(tensors, pg.size(), op, name)
    _same_layout(tensors, like, op, name)
    return True


def gather(tensor, gather_list=None, dst=None, group=None, async_op: bool = False,
           group_dst=None):
    """Collect every rank's ``tensor`` into ``gather_list`` on rank ``dst``."""
    _check_tensor(tensor, "tensor")
    pg = _resolve(group, "gather")
    if pg is None:
        return None
    root = _peer(pg, 0 if dst is None and group_dst is None else dst, group_dst, "dst")
    n = pg.size()
    _check_root_list(pg, root, gather_list, tensor, "gather", "destination")
    what = pg._next("GATHER")
    _fingerprint(pg, what, [tensor])
    send, _ = _buffer(pg, tensor, write=False)
    recv = _empty_host(pg, (n,) + send.shape, send.dtype) if pg.rank() == root else None
    reqs = pg._engine.gather(send, recv, root)
    done = None
    if recv is not None:
        def done() -> None:
            for i, out in enumerate(gather_list):
                _write_engine(pg, out, recv[i])

    return _issue(Work(reqs, pg, what, done, list(gather_list or [])), async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op: bool = False,
            group_src=None):
    """Send ``scatter_list[i]`` from rank ``src`` into rank ``i``'s ``tensor``."""
    _check_tensor(tensor, "tensor")
    pg = _resolve(group, "scatter")
    if pg is None:
        return None
    root = _peer(pg, 0 if src is None and group_src is None else src, group_src, "src")
    send = None
    if _check_root_list(pg, root, scatter_list, tensor, "scatter", "source"):
        send = _stack(pg, scatter_list)
    what = pg._next("SCATTER")
    _fingerprint(pg, what, [tensor])
    recv, back = _buffer(pg, tensor, write=True)
    reqs = pg._engine.scatter(send, recv, root)
    done = _after_write(tensor, back)
    return _issue(Work(reqs, pg, what, done, [tensor]), async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op: bool = False):
    """Rank ``i`` sends ``input_tensor_list[j]`` to rank ``j``, which receives it in its
    ``output_tensor_list[i]`` (the tensors may differ in size)."""
    _check_tensor_list(output_tensor_list, "output_tensor_list")
    _check_tensor_list(input_tensor_list, "input_tensor_list")
    pg = _resolve(group, "all_to_all")
    if pg is None:
        return None
    n = pg.size()
    if len(output_tensor_list) != n or len(input_tensor_list) != n:
        raise ValueError(f"all_to_all: both tensor lists must have one tensor per rank ({n}); "
                         f"got {len(output_tensor_list)} outputs and {len(input_tensor_list)} "
                         f"inputs")
    dtype = _np_dtype(input_tensor_list[0])
    for t in list(output_tensor_list) + list(input_tensor_list):
        if _np_dtype(t) != dtype:
            raise TypeError("all_to_all: every tensor must have the same dtype")
    what = pg._next("ALLTOALL")
    _fingerprint(pg, what, list(input_tensor_list))
    send = _concat(pg, input_tensor_list, dtype)
    recv = _empty_host(pg, (sum(t.numel() for t in output_tensor_list),), dtype)
    reqs = pg._engine.alltoall(send, recv, [t.numel() for t in input_tensor_list],
                               [t.numel() for t in output_tensor_list])

    def split_out() -> None:
        offset = 0
        for out in output_tensor_list:
            k = out.numel()
            _write_engine(pg, out, recv[offset:offset + k])
            offset += k

    return _issue(Work(reqs, pg, what, split_out, list(output_tensor_list)), async_op)


def _concat(pg: ProcessGroup, tensors, dtype):
    parts = [_buffer(pg, t, write=False)[0].reshape(-1) for t in tensors]
    cat = getattr(pg._engine, "concat", None)
    if cat is not None:
        return cat(parts)
    return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op: bool = False):
    """``all_to_all`` on one input and one output tensor split along dim 0 (evenly, or by
    the split sizes)."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    pg = _resolve(group, "all_to_all_single")
    if pg is None:
        return None
    n = pg.size()
    if _np_dtype(output) != _np_dtype(input):
        raise TypeError(f"all_to_all_single: output dtype {output.dtype} does not match input "
                        f"dtype {input.dtype}")

    def counts(t, splits, name):
        rows = t.shape[0] if t.dim() else 1
        row = t.numel() // rows if rows else 0
        if splits is None or len(splits) == 0:
            if rows % n:
                raise ValueError(f"all_to_all_single: {name} dim 0 ({rows}) is not divisible "
                                 f"by the group size ({n}); pass {name}_split_sizes")
            return [rows // n * row] * n
        splits = [int(s) for s in splits]
        if len(splits) != n or sum(splits) != rows:
            raise ValueError(f"all_to_all_single: {name}_split_sizes {splits} must have {n} "
                             f"entries summing to dim 0 ({rows})")
        return [s * row for s in splits]

    send_counts = counts(input, input_split_sizes, "input")
    recv_counts = counts(output, output_split_sizes, "output")
    what = pg._next("ALLTOALL_BASE")
    _fingerprint(pg, what, [input])
    send, _ = _buffer(pg, input, write=False)
    recv, back = _buffer(pg, output, write=True)
    reqs = pg._engine.alltoall(send.reshape(-1), recv.reshape(-1), send_counts, recv_counts)
    done = _after_write(output, back)
    return _issue(Work(reqs, pg, what, done, [output]), async_op)


def all_gather_single(output_tensor, input_tensor, group=None, async_op: bool = False):
    """``all_gather_into_tensor`` under PyTorch's newer name: every rank's equal-sized
    ``input_tensor``, concatenated or stacked along dim 0 into ``output_tensor``."""
    return all_gather_into_tensor(output_tensor, input_tensor, group=group, async_op=async_op)


def reduce_scatter_single(output, input, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """``reduce_scatter_tensor`` under PyTorch's newer name: ``input`` reduced over the ranks,
    each rank keeping its equal chunk along dim 0."""
    return reduce_scatter_tensor(output, input, op=op, group=group, async_op=async_op)


_BREAKPOINT_SKIPS: dict = {}


def breakpoint(rank: int = 0, skip: int = 0, timeout_s=3600):
    """Stop in the debugger on ``rank`` only, while the other ranks wait in a barrier until
    it continues (PyTorch's ``dist.breakpoint``); the first ``skip`` calls from one place
    pass. The debugger reads the terminal (``/dev/stdin``): a launcher's ranks do not own
    the standard input."""
    import pdb
    import traceback

    if skip > 0:
        key = hash(str(traceback.format_stack()[:-1]))
        count = _BREAKPOINT_SKIPS[key] = _BREAKPOINT_SKIPS.get(key, 0) + 1
        if count <= skip:
            warnings.warn(f"Skip the breakpoint, counter={count}", stacklevel=2)
            return
    if timeout_s is not None:  # the waiting ranks' barrier must outlast the debugging
        for pg in [_default_group(), *_world.groups]:
            pg._timeout = timedelta(seconds=timeout_s)
    if get_rank() == rank:
        stdin = sys.stdin
        try:
            terminal = open("/dev/stdin")
        except OSError:
            terminal = None
        try:
            debugger = pdb.Pdb(stdin=terminal) if terminal is not None else pdb.Pdb()
            debugger.message("\n!!! ATTENTION !!!\n\nType 'up' to get to the frame that "
                             f"called dist.breakpoint(rank={rank})\n")
            debugger.set_trace(sys._getframe(1))
        finally:
            sys.stdin = stdin
            if terminal is not None:
                terminal.close()
    barrier()


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Wait until every rank of the group has reached the barrier."""
    pg = _resolve(group, "barrier")
    if pg is None:
        return None
    what = pg._next("BARRIER")
    return _issue(Work(pg._engine.barrier(), pg, what), async_op)


def monitored_barrier(group=None, timeout=None, wait_all_ranks: bool = False) -> None:
    """A barrier that names the ranks that did not reach it within ``timeout``: every rank
    reports to rank 0 of the group, which then releases them. Rank 0 raises
    ``"[Rank 0]: Rank 2 failed to pass monitoredBarrier in 1000 ms"`` (with
    ``wait_all_ranks=True``, every missing rank: ``"Ranks 2, 3 failed ..."``); the ranks
    are global ranks. A rank that has left the job counts as missing at once."""
    pg = _resolve(group, "monitored_barrier")
    if pg is None:
        return
    if timeout is not None and not isinstance(timeout, timedelta):
        raise TypeError(f"monitored_barrier: timeout must be a datetime.timedelta, got "
                        f"{type(timeout).__name__}")
    limit = pg._timeout_seconds() if timeout is None else timeout.total_seconds()
    engine = _mpi_engine(pg)
    comm = engine.comm
    token = np.zeros(1, dtype=np.int64)
    if pg.rank() != 0:
        reqs = [comm.Isend(token, dest=0, tag=_MONITOR_TAG)]
        ack = np.zeros(1, dtype=np.int64)
        reqs.append(comm.Irecv(ack, source=0, tag=_MONITOR_TAG))
        _poll(_all_done(reqs, pg, "monitored_barrier"), pg, "monitored_barrier", limit,
              [pg._ranks[0]])
        return
    import time

    boxes = {r: np.zeros(1, dtype=np.int64) for r in range(1, pg.size())}
    pending = {r: comm.Irecv(boxes[r], source=r, tag=_MONITOR_TAG) for r in boxes}
    deadline = time.monotonic() + limit
    next_live = time.monotonic() + 0.25
    while pending and time.monotonic() < deadline:
        pending = {r: q for r, q in pending.items() if not q.Test()}
        _check_abort()
        if pending and time.monotonic() >= next_live:
            next_live = time.monotonic() + 0.25
            if all(_rank_gone(pg._ranks[r]) for r in pending):
                break
        time.sleep(1e-4)
    if pending:
        missing = [pg._ranks[r] for r in sorted(pending)]
        for q in pending.values():
            q.Cancel()
            q.Wait()
        ms = int(limit * 1000)
        if wait_all_ranks:
            raise DistBackendError(f"[Rank 0]: Ranks {', '.join(map(str, missing))} failed to "
                                   f"pass monitoredBarrier in {ms} ms")
        raise DistBackendError(f"[Rank 0]: Rank {missing[0]} failed to pass monitoredBarrier "
                               f"in {ms} ms")
    acks = [comm.Isend(token, dest=r, tag=_MONITOR_TAG) for r in boxes]
    pg._wait_internal(acks, "monitored_barrier")


def _rank_gone(rank: int) -> bool:
    return rank in _world.exited or rank in _world.failed or not _peer_process_alive(rank)


class _Joined(Work):
    """Several works as one."""

    def __init__(self, works) -> None:
        super().__init__((), None, "coalesced")
        self._parts = works

    def is_completed(self) -> bool:
        self._done = all(w.is_completed() for w in self._parts)
        return self._done

    def wait(self, timeout=None) -> bool:
        for w in self._parts:
            w.wait(timeout)
        self._done = True
        return True


# -- point to point -------------------------------------------------------------------------------
def isend(tensor, dst=None, group=None, tag: int = 0, group_dst=None):
    """Send ``tensor`` to rank ``dst`` without waiting; returns a ``Work``."""
    _check_tensor(tensor, "tensor")
    pg = _resolve(group, "isend")
    if pg is None:
        return None
    peer = _peer(pg, dst, group_dst, "dst")
    if peer == pg.rank():
        raise ValueError("Invalid destination rank: destination rank should not be the same "
                         "as the rank of the current process.")
    buf, _ = _buffer(pg, tensor, write=False)
    pg._p2p_seq += 1
    what = f"SEND to rank {pg._ranks[peer]} (tag {tag})"
    return Work(pg._engine.send(buf, peer, tag), pg, what, outputs=[tensor],
                peers=[pg._ranks[peer]])


def irecv(tensor, src=None, group=None, tag: int = 0, group_src=None):
    """Receive into ``tensor`` from rank ``src`` (any rank when None) without waiting; the
    ``Work``'s ``source_rank()`` is the sender's global rank."""
    _check_tensor(tensor, "tensor")
    pg = _resolve(group, "irecv")
    if pg is None:
        return None
    peer = None if src is None and group_src is None else _peer(pg, src, group_src, "src")
    if peer == pg.rank():
        raise ValueError("Invalid source rank: source rank should not be the same as the rank "
                         "of the current process.")
    buf, back = _buffer(pg, tensor, write=True)
    reqs, source = pg._engine.recv(buf, peer, tag)

    def done() -> int:
        if back is not None:
            back()
        else:
            tensor._bump_version()
        return pg._ranks[source()]

    what = f"RECV from {'any rank' if peer is None else f'rank {pg._ranks[peer]}'} (tag {tag})"
    peers = list(pg._ranks) if peer is None else [pg._ranks[peer]]
    return Work(reqs, pg, what, done, [tensor], peers=peers)


def send(tensor, dst=None, group=None, tag: int = 0, group_dst=None) -> None:
    """Send ``tensor`` to rank ``dst`` and wait until it has gone."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src=None, group=None, tag: int = 0, group_src=None) -> int:
    """Receive into ``tensor`` from rank ``src`` (any rank when None); returns the sender's
    rank (-1 when this rank is not in ``group``)."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    return work.source_rank()


class P2POp:
    """One send or receive for ``batch_isend_irecv``: ``P2POp(isend, tensor, peer)``."""

    def __init__(self, op, tensor, peer=None, group=None, tag: int = 0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type "
                             "``ember.distributed.isend`` or ``ember.distributed.irecv``.")
        _check_tensor(tensor, "tensor")
        self.op = op
        self.tensor = tensor
        self.peer = peer
        self.group = group
        self.tag = tag
        self.group_peer = group_peer

    def __repr__(self) -> str:
        return f"P2POp({self.op.__name__} peer={self.peer}, tag={self.tag})"


def batch_isend_irecv(p2p_op_list) -> list:
    """Start every send and receive of ``p2p_op_list``; returns their works."""
    if not p2p_op_list or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``ember.distributed.P2POp``.")
    works = []
    for p in p2p_op_list:
        if p.op is isend:
            works.append(isend(p.tensor, p.peer, p.group, p.tag, p.group_peer))
        else:
            works.append(irecv(p.tensor, p.peer, p.group, p.tag, p.group_peer))
    return works


# -- objects ---------------------------------------------------------------------------------------
def _object_device(pg: ProcessGroup):
    from .._device import device

    return device("cpu") if pg._backend == "mpi" else pg._engine.device


def _to_bytes_tensor(obj, dev):
    from .._factory import tensor as make

    data = pickle.dumps(obj)
    return make(np.frombuffer(data, dtype=np.uint8).copy(), device=dev), len(data)


def _from_bytes(t, n: int):
    return pickle.loads(t[:n].cpu().numpy().tobytes())


def _sizes(pg: ProcessGroup, n: int):
    from .._factory import tensor as make
    from .._factory import zeros

    dev = _object_device(pg)
    out = zeros(pg.size(), dtype=_int64(), device=dev)
    all_gather_into_tensor(out, make([n], dtype=_int64(), device=dev), group=pg)
    return [int(v) for v in out.tolist()]


def _int64():
    from .._dtype import int64

    return int64


def _uint8():
    from .._dtype import uint8

    return uint8


def all_gather_object(object_list: list, obj, group=None) -> None:
    """Fill ``object_list`` (one slot per rank) with every rank's picklable ``obj``."""
    pg = _resolve(group, "all_gather_object")
    if pg is None:
        return
    if len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list has {len(object_list)} slots, but "
                         f"the group has {pg.size()} ranks")
    from .._factory import zeros

    dev = _object_device(pg)
    mine, n = _to_bytes_tensor(obj, dev)
    sizes = _sizes(pg, n)
    width = max(max(sizes), 1)
    padded = zeros(width, dtype=_uint8(), device=dev)
    padded[:n] = mine
    out = zeros(pg.size() * width, dtype=_uint8(), device=dev)
    all_gather_into_tensor(out, padded, group=pg)
    for r, k in enumerate(sizes):
        object_list[r] = _from_bytes(out[r * width:(r + 1) * width], k)


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None) -> None:
    """Collect every rank's picklable ``obj`` into ``object_gather_list`` on rank ``dst``."""
    pg = _resolve(group, "gather_object")
    if pg is None:
        return
    root = _peer(pg, 0 if dst is None and group_dst is None else dst, group_dst, "dst")
    if pg.rank() == root and (object_gather_list is None
                              or len(object_gather_list) != pg.size()):
        raise ValueError(f"gather_object: object_gather_list must have {pg.size()} slots on "
                         f"the destination rank")
    gathered = [None] * pg.size()
    all_gather_object(gathered, obj, group=pg)  # small objects: one collective suffices
    if pg.rank() == root:
        object_gather_list[:] = gathered


def broadcast_object_list(object_list: list, src=None, group=None, device=None,
                          group_src=None) -> None:
    """Replace ``object_list``'s items on every rank with rank ``src``'s (picklable)."""
    pg = _resolve(group, "broadcast_object_list")
    if pg is None:
        return
    root = _peer(pg, 0 if src is None and group_src is None else src, group_src, "src")
    from .._factory import tensor as make
    from .._factory import zeros

    dev = _object_device(pg)
    if pg.rank() == root:
        payload, n = _to_bytes_tensor(list(object_list), dev)
        size = make([n], dtype=_int64(), device=dev)
    else:
        size = zeros(1, dtype=_int64(), device=dev)
    broadcast(size, group=pg, group_src=root)
    n = int(size.item())
    if pg.rank() != root:
        payload = zeros(n, dtype=_uint8(), device=dev)
    broadcast(payload, group=pg, group_src=root)
    if pg.rank() != root:
        received = _from_bytes(payload, n)
        if len(received) != len(object_list):
            raise ValueError(f"broadcast_object_list: rank {pg._ranks[root]} sent "
                             f"{len(received)} objects, but object_list here has "
                             f"{len(object_list)} slots")
        object_list[:] = received


def scatter_object_list(scatter_object_output_list: list, scatter_object_input_list=None,
                        src=None, group=None, group_src=None) -> None:
    """Rank ``i`` receives ``scatter_object_input_list[i]`` of rank ``src`` in
    ``scatter_object_output_list[0]``."""
    pg = _resolve(group, "scatter_object_list")
    if pg is None:
        return
    if not isinstance(scatter_object_output_list, list) or not scatter_object_output_list:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at "
                         "least 1.")
    root = _peer(pg, 0 if src is None and group_src is None else src, group_src, "src")
    box = [list(scatter_object_input_list)] if pg.rank() == root else [None]
    if pg.rank() == root and len(box[0]) != pg.size():
        raise ValueError(f"scatter_object_list: the input list must have {pg.size()} objects")
    broadcast_object_list(box, group=pg, group_src=root)
    scatter_object_output_list[0] = box[0][pg.rank()]


def send_object_list(object_list: list, dst=None, group=None, device=None,
                     group_dst=None) -> None:
    """Send the picklable objects of ``object_list`` to rank ``dst``."""
    pg = _resolve(group, "send_object_list")
    if pg is None:
        return
    from .._factory import tensor as make

    dev = _object_device(pg)
    payload, n = _to_bytes_tensor(list(object_list), dev)
    send(make([n], dtype=_int64(), device=dev), dst, pg, group_dst=group_dst)
    send(payload, dst, pg, group_dst=group_dst)


def recv_object_list(object_list: list, src=None, group=None, device=None,
                     group_src=None) -> int:
    """Receive ``send_object_list``'s objects into ``object_list``; returns the sender."""
    pg = _resolve(group, "recv_object_list")
    if pg is None:
        return -1
    from .._factory import zeros

    dev = _object_device(pg)
    size = zeros(1, dtype=_int64(), device=dev)
    sender = recv(size, src, pg, group_src=group_src)
    payload = zeros(int(size.item()), dtype=_uint8(), device=dev)
    recv(payload, sender, pg)
    received = _from_bytes(payload, int(size.item()))
    object_list[:len(received)] = received
    return sender
