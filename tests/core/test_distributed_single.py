"""``ember.distributed`` in one process, without mpiexec (MPI's singleton init: world size 1).

Enums and names, argument errors, init/destroy/re-init, every collective on a world of one,
and the NCCL engine driven through a fake ``cupy.cuda.nccl`` that records each call, proving
the engine passes NCCL the tensors' own pointers, the right counts, types and reductions.
"""

from __future__ import annotations

import ctypes
import datetime
import sys
import types
import warnings

import numpy as np
import pytest

import ember

pytest.importorskip("mpi4py")
dist = pytest.importorskip("ember.distributed")


@pytest.fixture
def world():
    """A default process group of one rank, destroyed after the test."""
    assert not dist.is_initialized()
    dist.init_process_group(timeout=datetime.timedelta(seconds=10))
    yield dist.group.WORLD
    if dist.is_initialized():
        dist.destroy_process_group()


# -- names and enums ------------------------------------------------------------------------
def test_reduce_op_backend_and_debug_level():
    ops = ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM", "UNUSED"]
    assert [getattr(dist.ReduceOp, o).value for o in ops] == list(range(10))
    assert repr(dist.ReduceOp.SUM) == "<RedOpType.SUM: 0>"
    assert dist.ReduceOp.RedOpType.MAX is dist.ReduceOp.MAX
    assert dist.Backend("MPI") == "mpi" and dist.Backend("gloo") == dist.Backend.GLOO
    assert dist.Backend("cpu:gloo,cuda:nccl") == "cpu:gloo,cuda:nccl"
    with pytest.raises(ValueError, match="Invalid backend: 'tcp'"):
        dist.Backend("tcp")
    with pytest.raises(ValueError, match="must be string-ish"):
        dist.Backend(3)
    assert [m.name for m in dist.DebugLevel] == ["OFF", "INFO", "DETAIL"]
    before = dist.get_debug_level()
    try:
        dist.set_debug_level(dist.DebugLevel.DETAIL)
        assert dist.get_debug_level() is dist.DebugLevel.DETAIL
        with pytest.raises(TypeError, match="expects a DebugLevel"):
            dist.set_debug_level("DETAIL")
    finally:
        dist.set_debug_level(before)


def test_debug_level_from_env(monkeypatch):
    before = dist.get_debug_level()
    try:
        monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", "info")
        dist.set_debug_level_from_env()
        assert dist.get_debug_level() is dist.DebugLevel.INFO
        monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", "LOUD")
        with pytest.raises(ValueError, match="must be OFF, INFO or DETAIL"):
            dist.set_debug_level_from_env()
    finally:
        dist.set_debug_level(before)


def test_availability():
    assert dist.is_available() and dist.is_mpi_available()
    assert dist.is_gloo_available() is False
    assert isinstance(dist.is_nccl_available(), bool)
    assert issubclass(dist.DistBackendError, dist.DistError)
    assert issubclass(dist.DistError, RuntimeError)


def test_is_nccl_available_is_false_without_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ImportError
    assert dist.is_nccl_available() is False
    with pytest.raises(RuntimeError, match="Distributed package doesn't have NCCL built in"):
        dist.init_process_group(backend="nccl")
    assert not dist.is_initialized()  # nothing was set up


# -- before init, init, destroy ---------------------------------------------------------------
def test_everything_needs_init_first():
    assert not dist.is_initialized()
    assert dist.group.WORLD is None
    message = "Default process group has not been initialized"
    for call in (dist.get_rank, dist.get_world_size, dist.get_backend, dist.barrier,
                 dist.destroy_process_group, dist.new_group,
                 lambda: dist.all_reduce(ember.ones(2))):
        with pytest.raises(ValueError, match=message):
            call()


@pytest.mark.parametrize("backend", [None, "gloo", "mpi", "GLOO", dist.Backend.MPI])
def test_init_with_each_cpu_backend(backend):
    dist.init_process_group(backend=backend, init_method="env://", rank=0, world_size=1)
    try:
        assert dist.is_initialized()
        assert (dist.get_rank(), dist.get_world_size()) == (0, 1)
        assert dist.get_backend() == "mpi"
        assert dist.get_process_group_ranks(dist.group.WORLD) == [0]
        assert dist.group.WORLD is dist.GroupMember.WORLD
        assert "default_pg" in repr(dist.group.WORLD)
    finally:
        dist.destroy_process_group()
    assert not dist.is_initialized()


def test_init_checks(monkeypatch):
    with pytest.raises(TypeError, match="Expected timeout argument to be of type "
                                        "datetime.timedelta"):
        dist.init_process_group(timeout=60)
    with pytest.raises(ValueError, match=r"world_size=2, but MPI started this process as rank "
                                         r"0 of 1: .*mpiexec -n 2 python script.py"):
        dist.init_process_group(world_size=2)
    with pytest.raises(ValueError, match="rank=1, but MPI started this process as rank 0"):
        dist.init_process_group(rank=1)
    monkeypatch.setenv("RANK", "3")
    with pytest.raises(ValueError, match="RANK=3 in the environment"):
        dist.init_process_group()
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert not dist.is_initialized()
    dist.init_process_group()
    try:
        with pytest.raises(ValueError, match="trying to initialize the default process group "
                                             "twice!"):
            dist.init_process_group()
    finally:
        dist.destroy_process_group()


def test_destroy_and_init_again_restores_the_excepthook():
    hook = sys.excepthook
    for _ in range(3):
        dist.init_process_group()
        assert sys.excepthook is not hook  # failures are announced to the other ranks
        t = ember.ones(3)
        dist.all_reduce(t)
        assert t.tolist() == [1.0, 1.0, 1.0]
        dist.destroy_process_group()
        assert sys.excepthook is hook
        assert not dist.is_initialized()
    with pytest.raises(ValueError, match="has not been initialized"):
        dist.destroy_process_group()


def test_get_node_local_rank(monkeypatch):
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    with pytest.raises(RuntimeError, match="LOCAL_RANK is not in the environment"):
        dist.get_node_local_rank()
    assert dist.get_node_local_rank(fallback_rank=4) == 4
    monkeypatch.setenv("LOCAL_RANK", "2")
    assert dist.get_node_local_rank() == 2


# -- a world of one -------------------------------------------------------------------------
def test_every_collective_on_a_world_of_one(world):
    x = ember.arange(6, dtype=ember.float32).reshape(2, 3)
    for op in ("SUM", "AVG", "PRODUCT", "MIN", "MAX"):
        t = x.clone()
        assert dist.all_reduce(t, op=getattr(dist.ReduceOp, op)) is None
        assert t.tolist() == x.tolist(), op
    i = ember.tensor([-5, 3, 6])
    for op in ("BAND", "BOR", "BXOR", "AVG"):
        t = i.clone()
        dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
        assert t.tolist() == [-5, 3, 6], op
    t = x.clone()
    dist.broadcast(t, src=0)
    dist.reduce(t, dst=0, op=dist.ReduceOp.MAX)
    assert t.tolist() == x.tolist()
    out = [ember.zeros(2, 3)]
    dist.all_gather(out, x)
    assert out[0].tolist() == x.tolist()
    flat = ember.zeros(2, 3)
    dist.all_gather_into_tensor(flat, x)
    assert flat.tolist() == x.tolist()
    rs = ember.zeros(2, 3)
    dist.reduce_scatter(rs, [x])
    dist.reduce_scatter_tensor(flat, x)
    assert rs.tolist() == flat.tolist() == x.tolist()
    gathered = [ember.zeros(2, 3)]
    dist.gather(x, gathered, dst=0)
    scattered = ember.zeros(2, 3)
    dist.scatter(scattered, [x], src=0)
    assert gathered[0].tolist() == scattered.tolist() == x.tolist()
    a2a = [ember.zeros(4)]
    dist.all_to_all(a2a, [ember.ones(4)])
    single = ember.zeros(2, 3)
    dist.all_to_all_single(single, x, [2], [2])
    assert a2a[0].tolist() == [1.0] * 4 and single.tolist() == x.tolist()
    dist.barrier()
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=1), wait_all_ranks=True)
    objs = [{"a": 1}, "b"]
    dist.broadcast_object_list(objs, src=0)
    everyone = [None]
    dist.all_gather_object(everyone, (1, "x"))
    box = [None]
    dist.gather_object({"k": 2}, box, dst=0)
    mine = [None]
    dist.scatter_object_list(mine, ["only"], src=0)
    assert objs == [{"a": 1}, "b"] and everyone == [(1, "x")] and box == [{"k": 2}]
    assert mine == ["only"]


def test_async_work_on_a_world_of_one(world):
    t = ember.ones(5)
    work = dist.all_reduce(t, async_op=True)
    assert isinstance(work, dist.Work)
    assert work.wait() is True and work.is_completed() and work.is_success()
    assert work.result() == [t] and work.exception() is None
    assert "completed" in repr(work)
    works = [dist.broadcast(ember.ones(2), src=0, async_op=True),
             dist.barrier(async_op=True),
             dist.all_gather_into_tensor(ember.zeros(3), ember.ones(3), async_op=True)]
    for w in works:
        w.wait(timeout=datetime.timedelta(seconds=5))
        assert w.is_completed()


def test_zero_copy_and_version_counter_on_a_world_of_one(world):
    t = ember.arange(8, dtype=ember.float64)
    ptr, view, before = t.data_ptr(), t[2:4], t._version
    dist.all_reduce(t)
    assert t.data_ptr() == ptr and view.tolist() == [2.0, 3.0]
    assert t._version > before
    w = ember.ones(3, requires_grad=True)
    h = w * 3
    loss = (h * h).sum()
    dist.all_reduce(h)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_argument_errors_before_anything_is_sent(world):
    f = ember.ones(4)
    with pytest.raises(RuntimeError, match="Cannot use ReduceOp.BAND with non-integral dtype"):
        dist.all_reduce(f, op=dist.ReduceOp.BAND)
    with pytest.raises(RuntimeError, match="Cannot use ReduceOp.AVG with boolean inputs"):
        dist.all_reduce(ember.ones(2, dtype=ember.bool), op=dist.ReduceOp.AVG)
    with pytest.raises(ValueError, match="Unsupported ReduceOp"):
        dist.all_reduce(f, op=dist.ReduceOp.PREMUL_SUM)
    with pytest.raises(TypeError, match="Expected parameter `tensor` of type ember.Tensor"):
        dist.all_reduce(np.ones(3))
    with pytest.raises(TypeError, match=r"Expected parameter `tensor_list` of type "
                                        r"List\[ember.Tensor\]"):
        dist.all_gather(ember.zeros(3), f)
    with pytest.raises(ValueError, match="tensor_list has 2 tensors, but the group has 1"):
        dist.all_gather([f, f], f)
    with pytest.raises(ValueError, match="Argument ``gather_list`` must be specified on "
                                         "destination rank."):
        dist.gather(f, None, dst=0)
    with pytest.raises(ValueError, match="Argument ``scatter_list`` must be specified on "
                                         "source rank."):
        dist.scatter(f, None, src=0)
    with pytest.raises(ValueError, match="Global rank 1 is not part of group"):
        dist.broadcast(f, src=1)
    with pytest.raises(ValueError, match="Group rank 2 is not part of group"):
        dist.broadcast(f, group_src=2)
    with pytest.raises(ValueError, match="Must specify either src or group_src"):
        dist.broadcast(f)
    with pytest.raises(ValueError, match="Invalid destination rank: destination rank should "
                                         "not be the same"):
        dist.send(f, dst=0)
    with pytest.raises(ValueError, match="Invalid source rank"):
        dist.recv(f, src=0)
    with pytest.raises(ValueError, match="Invalid ``op``"):
        dist.P2POp(dist.all_reduce, f, 0)
    with pytest.raises(ValueError, match="Invalid ``p2p_op_list``"):
        dist.batch_isend_irecv([])
    with pytest.raises(ValueError, match="object_list has 2 slots, but the group has 1"):
        dist.all_gather_object([None, None], 1)
    with pytest.raises(TypeError, match="group must be a ProcessGroup"):
        dist.all_reduce(f, group="world")
    # the group is still in step: nothing was sent
    t = ember.full((2,), 3.0)
    dist.all_reduce(t)
    assert t.tolist() == [3.0, 3.0] and f.tolist() == [1.0] * 4


def test_new_group_on_a_world_of_one(world):
    g = dist.new_group([0])
    assert dist.get_rank(g) == 0 and dist.get_world_size(g) == 1
    assert dist.get_global_rank(g, 0) == 0 and dist.get_group_rank(g, 0) == 0
    t = ember.ones(2)
    dist.all_reduce(t, group=g)
    assert t.tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="Invalid rank 1"):
        dist.new_group([1])
    with pytest.raises(ValueError, match="not unique"):
        dist.new_group([0, 0])
    dist.destroy_process_group(g)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert dist.all_reduce(t, group=dist.GroupMember.NON_GROUP_MEMBER) is None
    assert "does not belong to the given group" in str(caught[0].message)
    assert dist.get_rank(dist.GroupMember.NON_GROUP_MEMBER) == -1


def test_detail_mode_on_a_world_of_one(world):
    before = dist.get_debug_level()
    dist.set_debug_level(dist.DebugLevel.DETAIL)
    try:
        t = ember.ones(3)
        dist.all_reduce(t)
        dist.broadcast(t, src=0)
        assert t.tolist() == [1.0, 1.0, 1.0]
    finally:
        dist.set_debug_level(before)


def test_strict_device_tensors_go_through_the_host(world):
    from ember.testing import register_strict_device

    register_strict_device()
    t = ember.arange(6, dtype=ember.float32, device="strict").reshape(2, 3)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    assert t.device.type == "strict" and t.cpu().tolist() == [[0, 1, 2], [3, 4, 5]]
    view = t.t()
    dist.broadcast(view, src=0)
    assert view.device.type == "strict"


# -- the NCCL engine, driven through a fake cupy.cuda.nccl ------------------------------------
class FakeDeviceArray(np.ndarray):
    """CuPy's array, as far as the engine cares: ``.data.ptr`` is the address of its memory."""

    @property
    def data(self):
        return types.SimpleNamespace(ptr=self.__array_interface__["data"][0])


class FakeCupy(types.ModuleType):
    """``cupy``: NumPy's functions whose array results are FakeDeviceArrays."""

    ndarray = FakeDeviceArray

    def __getattr__(self, name):
        fn = getattr(np, name)
        if not callable(fn) or isinstance(fn, type):
            return fn

        def device_result(*args, **kwargs):
            out = fn(*args, **kwargs)
            return out.view(FakeDeviceArray) if isinstance(out, np.ndarray) else out

        return device_result


NCCL_TYPES = {"NCCL_INT8": (0, 1), "NCCL_UINT8": (1, 1), "NCCL_INT32": (2, 4),
              "NCCL_INT64": (4, 8), "NCCL_FLOAT16": (6, 2), "NCCL_FLOAT32": (7, 4),
              "NCCL_FLOAT64": (8, 8)}
NCCL_OPS = {"NCCL_SUM": 0, "NCCL_PROD": 1, "NCCL_MAX": 2, "NCCL_MIN": 3}
SIZES = dict(NCCL_TYPES.values())
STREAM_PTR = 0x5EA


class FakeCommunicator:
    """One rank's NCCL communicator: records every call and does its work for a world of one
    (a reduction of one rank is a copy; a grouped send to oneself meets the receive)."""

    calls: list = []
    created: list = []

    def __init__(self, ndev, uid, rank):
        FakeCommunicator.created.append((ndev, uid, rank))
        self._sends = []  # sends and receives to oneself wait here for their other half
        self._recvs = []

    @staticmethod
    def _copy(dst, src, count, dtype):
        if dst != src:
            ctypes.memmove(dst, src, count * SIZES[dtype])

    def allReduce(self, send, recv, count, dtype, op, stream):
        self.calls.append(("allReduce", send, recv, count, dtype, op, stream))
        self._copy(recv, send, count, dtype)

    def bcast(self, buf, count, dtype, root, stream):
        self.calls.append(("bcast", buf, count, dtype, root, stream))

    def allGather(self, send, recv, count, dtype, stream):
        self.calls.append(("allGather", send, recv, count, dtype, stream))
        self._copy(recv, send, count, dtype)

    def reduceScatter(self, send, recv, count, dtype, op, stream):
        self.calls.append(("reduceScatter", send, recv, count, dtype, op, stream))
        self._copy(recv, send, count, dtype)

    def reduce(self, send, recv, count, dtype, op, root, stream):
        self.calls.append(("reduce", send, recv, count, dtype, op, root, stream))
        self._copy(recv, send, count, dtype)

    def send(self, buf, count, dtype, peer, stream):
        self.calls.append(("send", buf, count, dtype, peer, stream))
        self._sends.append((buf, count, dtype))
        self._match()

    def recv(self, buf, count, dtype, peer, stream):
        self.calls.append(("recv", buf, count, dtype, peer, stream))
        self._recvs.append((buf, count, dtype))
        self._match()

    def _match(self):
        while self._sends and self._recvs:
            (src, n, t), (dst, m, u) = self._sends.pop(0), self._recvs.pop(0)
            assert (n, t) == (m, u), "a receive that does not match its send"
            self._copy(dst, src, n, t)

    def destroy(self):
        self.calls.append(("destroy",))


@pytest.fixture
def fake_nccl(monkeypatch):
    """A fake ``cupy`` with ``cupy.cuda.nccl``, and a ``cuda`` device type whose arrays are
    FakeDeviceArrays; the process group is initialised with ``backend="nccl"``."""
    from ember.backends import _REGISTRY, register_backend, unregister_backend
    from ember.testing import NumpyTestBackend

    cupy = FakeCupy("cupy")
    cuda = types.ModuleType("cupy.cuda")
    nccl = types.ModuleType("cupy.cuda.nccl")
    for name, (value, _) in NCCL_TYPES.items():
        setattr(nccl, name, value)
    for name, value in NCCL_OPS.items():
        setattr(nccl, name, value)
    nccl.NCCL_UNIQUE_ID_BYTES = 128
    nccl.get_unique_id = lambda: tuple((i * 7) % 128 - 64 for i in range(128))
    nccl.NcclCommunicator = FakeCommunicator
    nccl.groupStart = lambda: FakeCommunicator.calls.append(("groupStart",))
    nccl.groupEnd = lambda: FakeCommunicator.calls.append(("groupEnd",))

    class Stream:
        def __init__(self, non_blocking=False):
            self.ptr = STREAM_PTR

    class Event:
        def __init__(self, block=False, disable_timing=False):
            self.done = False

        def record(self, stream):
            assert stream.ptr == STREAM_PTR
            self.done = True

    class Device:
        def __init__(self, index):
            self.index = index

        def use(self):
            pass

    cuda.nccl, cuda.Stream, cuda.Event, cuda.Device = nccl, Stream, Event, Device
    cuda.runtime = types.SimpleNamespace(getDeviceCount=lambda: 1)
    cupy.cuda = cuda
    for name, module in (("cupy", cupy), ("cupy.cuda", cuda), ("cupy.cuda.nccl", nccl)):
        monkeypatch.setitem(sys.modules, name, module)

    class FakeCudaBackend(NumpyTestBackend):
        def __init__(self):
            super().__init__("cuda", 1)
            self.xp = cupy

        def to_device(self, array, index):
            return np.array(array, copy=True).view(FakeDeviceArray)

        def to_host(self, array):
            return np.asarray(array).view(np.ndarray)

    previous = _REGISTRY.get("cuda")
    register_backend(FakeCudaBackend())
    FakeCommunicator.calls.clear()
    FakeCommunicator.created.clear()
    try:
        assert dist.is_nccl_available()
        dist.init_process_group(backend="nccl", timeout=datetime.timedelta(seconds=10))
        yield FakeCommunicator.calls
        if dist.is_initialized():
            dist.destroy_process_group()
    finally:
        unregister_backend("cuda")
        if previous is not None:
            register_backend(previous)


def cuda_tensor(values, dtype=None):
    return ember.tensor(values, dtype=dtype).to("cuda")


def ptr(t) -> int:
    return t._data.data.ptr


def test_nccl_engine_setup(fake_nccl):
    assert dist.get_backend() == "nccl"
    ndev, uid, rank = FakeCommunicator.created[0]
    # the unique id travelled over MPI from rank 0, as NcclCommunicator wants it
    assert (ndev, rank) == (1, 0)
    assert uid == tuple((i * 7) % 128 - 64 for i in range(128))
    dist.destroy_process_group()
    assert fake_nccl[-1] == ("destroy",)


@pytest.mark.parametrize("dtype, nccl_type", [
    ("float32", "NCCL_FLOAT32"), ("float64", "NCCL_FLOAT64"), ("float16", "NCCL_FLOAT16"),
    ("int64", "NCCL_INT64"), ("int32", "NCCL_INT32"), ("uint8", "NCCL_UINT8")])
@pytest.mark.parametrize("op, nccl_op", [("SUM", "NCCL_SUM"), ("PRODUCT", "NCCL_PROD"),
                                          ("MIN", "NCCL_MIN"), ("MAX", "NCCL_MAX"),
                                          ("AVG", "NCCL_SUM")])
def test_nccl_all_reduce_passes_the_tensor_itself(fake_nccl, dtype, nccl_type, op, nccl_op):
    t = cuda_tensor([[1, 2, 3], [4, 5, 6]], dtype=getattr(ember, dtype))
    dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
    name, send, recv, count, ntype, nop, stream = fake_nccl[-1]
    assert name == "allReduce"
    assert send == recv == ptr(t)  # in place, in the tensor's own memory
    assert count == 6 and ntype == NCCL_TYPES[nccl_type][0] and nop == NCCL_OPS[nccl_op]
    assert stream == STREAM_PTR
    assert t.device.type == "cuda" and t.cpu().tolist() == [[1, 2, 3], [4, 5, 6]]


def test_nccl_bool_reductions_and_refused_ops(fake_nccl):
    b = cuda_tensor([True, False, True])
    for op, nccl_op in (("SUM", "NCCL_MAX"), ("MAX", "NCCL_MAX"), ("BOR", "NCCL_MAX"),
                        ("PRODUCT", "NCCL_MIN"), ("MIN", "NCCL_MIN"), ("BAND", "NCCL_MIN")):
        dist.all_reduce(b, op=getattr(dist.ReduceOp, op))
        assert fake_nccl[-1][4:6] == (NCCL_TYPES["NCCL_UINT8"][0], NCCL_OPS[nccl_op]), op
    assert b.cpu().tolist() == [True, False, True]
    calls = len(fake_nccl)
    with pytest.raises(RuntimeError, match="Cannot use ReduceOp.BXOR with NCCL"):
        dist.all_reduce(b, op=dist.ReduceOp.BXOR)
    with pytest.raises(RuntimeError, match="Cannot use ReduceOp.BAND with NCCL"):
        dist.all_reduce(cuda_tensor([1, 2]), op=dist.ReduceOp.BAND)
    with pytest.raises(RuntimeError, match="Cannot use ReduceOp.AVG with boolean inputs"):
        dist.all_reduce(b, op=dist.ReduceOp.AVG)
    with pytest.raises(ValueError, match="the nccl backend runs on CUDA tensors"):
        dist.all_reduce(ember.ones(2))
    assert len(fake_nccl) == calls  # refused before NCCL was called


def test_nccl_collectives_counts_and_pointers(fake_nccl):
    x = cuda_tensor([[1.0, 2.0], [3.0, 4.0]])
    dist.broadcast(x, src=0)
    assert fake_nccl[-1] == ("bcast", ptr(x), 4, NCCL_TYPES["NCCL_FLOAT32"][0], 0, STREAM_PTR)
    dist.reduce(x, dst=0, op=dist.ReduceOp.MIN)
    assert fake_nccl[-1] == ("reduce", ptr(x), ptr(x), 4, NCCL_TYPES["NCCL_FLOAT32"][0],
                             NCCL_OPS["NCCL_MIN"], 0, STREAM_PTR)
    out = cuda_tensor(np.zeros((2, 2), dtype=np.float64))
    src = cuda_tensor(np.array([[5.0, 6.0], [7.0, 8.0]]))
    dist.all_gather_into_tensor(out, src)
    assert fake_nccl[-1] == ("allGather", ptr(src), ptr(out), 4,
                             NCCL_TYPES["NCCL_FLOAT64"][0], STREAM_PTR)
    assert out.cpu().tolist() == [[5.0, 6.0], [7.0, 8.0]]
    rs = cuda_tensor(np.zeros(4, dtype=np.int64))
    dist.reduce_scatter_tensor(rs, cuda_tensor(np.arange(4)), op=dist.ReduceOp.MAX)
    name, _, recv, count, ntype, nop, _ = fake_nccl[-1]
    assert (name, recv, count, ntype, nop) == ("reduceScatter", ptr(rs), 4,
                                               NCCL_TYPES["NCCL_INT64"][0], NCCL_OPS["NCCL_MAX"])
    assert rs.cpu().tolist() == [0, 1, 2, 3]
    gathered = [cuda_tensor([0.0, 0.0])]
    dist.gather(cuda_tensor([9.0, 8.0]), gathered, dst=0)
    kinds = [c[0] for c in fake_nccl[-4:]]
    assert kinds == ["groupStart", "send", "recv", "groupEnd"]
    assert gathered[0].cpu().tolist() == [9.0, 8.0]
    target = cuda_tensor([0, 0, 0], dtype=ember.int32)
    dist.scatter(target, [cuda_tensor([4, 5, 6], dtype=ember.int32)], src=0)
    assert target.cpu().tolist() == [4, 5, 6]
    send = [c for c in fake_nccl[-4:] if c[0] == "send"][0]
    assert send[2:5] == (3, NCCL_TYPES["NCCL_INT32"][0], 0)  # count, type, peer
    single = cuda_tensor(np.zeros(3, dtype=np.float32))
    dist.all_to_all_single(single, cuda_tensor([1.0, 2.0, 3.0]))
    assert single.cpu().tolist() == [1.0, 2.0, 3.0]
    dist.barrier()
    assert fake_nccl[-1][0] == "allReduce" and fake_nccl[-1][3] == 1


def test_nccl_non_contiguous_view_is_written_back(fake_nccl):
    base = cuda_tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    view = base[:, ::2]
    dist.all_reduce(view)
    _, send, recv, count, _, _, _ = fake_nccl[-1]
    assert send == recv != ptr(base) and count == 6  # a contiguous buffer, not the view
    assert base.cpu().tolist() == np.arange(12, dtype=np.float32).reshape(3, 4).tolist()
    assert view._version > 0


def test_nccl_object_collectives(fake_nccl):
    objs = [{"a": [1, 2]}, None]
    dist.broadcast_object_list(objs, src=0)
    assert objs == [{"a": [1, 2]}, None]
    everyone = [None]
    dist.all_gather_object(everyone, "hello")
    assert everyone == ["hello"]
    assert any(c[0] == "bcast" for c in fake_nccl) and any(c[0] == "allGather"
                                                         for c in fake_nccl)


def test_bfloat16_travels_as_float32_and_comes_back_bfloat16(world):
    t = ember.tensor([1.5, 2.25, -3.0], dtype=ember.bfloat16)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    assert t.dtype == ember.bfloat16 and t.tolist() == [1.5, 2.25, -3.0]
    out = [ember.zeros(3, dtype=ember.bfloat16)]
    dist.all_gather(out, t)
    assert out[0].tolist() == [1.5, 2.25, -3.0]
    with pytest.raises(RuntimeError, match="non-integral"):
        dist.all_reduce(t, op=dist.ReduceOp.BAND)
