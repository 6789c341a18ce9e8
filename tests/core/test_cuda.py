"""``ember.cuda`` and the CuPy backend.

Three layers: without CuPy/GPU (the error that names the install), the real ``CUDABackend``
class driven by a NumPy-backed fake CuPy (every ``ember.cuda`` path, on any machine), and
``gpu``-marked tests on a real GPU (skipped without one) that compare with the CPU.
"""

import importlib
import sys
import types

import numpy as np
import pytest

import ember
import ember.backends as _backends
import ember.backends.cuda as cuda_backend
from ember import _random
from ember.backends import register_backend, unregister_backend

INSTALL_HINT = r"pip install 'ember-core\[cuda\]'"
no_cuda = pytest.mark.skipif(ember.cuda.is_available(), reason="a CUDA device is present")


# -- without CuPy or a GPU ------------------------------------------------------------------

@no_cuda
def test_queries_without_cuda():
    assert ember.cuda.is_available() is False
    assert ember.cuda.is_initialized() is False
    assert ember.cuda.device_count() == 0
    assert ember.cuda.memory_allocated() == 0 and ember.cuda.memory_reserved() == 0
    ember.cuda.empty_cache()
    ember.cuda.manual_seed(1)
    ember.cuda.manual_seed_all(2)
    ember.cuda.seed_all()
    assert ember.cuda.default_generators == ()


@no_cuda
def test_memory_statistics_without_cuda_are_pytorchs():
    cuda = ember.cuda
    assert cuda.memory_stats() == {} and isinstance(cuda.memory_stats(), dict)
    assert cuda.memory_stats_as_nested_dict() == {}
    assert cuda.max_memory_allocated() == 0 and cuda.max_memory_reserved() == 0
    assert cuda.memory.memory_allocated(0) == 0
    with pytest.warns(FutureWarning, match="renamed to `torch.cuda.memory_reserved`"):
        assert cuda.memory_cached() == 0
    with pytest.warns(FutureWarning, match="renamed to `torch.cuda.max_memory_reserved`"):
        assert cuda.max_memory_cached() == 0
    with cuda.stream(None), cuda.StreamContext(None):  # no-ops, as in PyTorch
        pass
    cuda.set_stream(None)


@no_cuda
@pytest.mark.parametrize("call", [
    lambda: ember.zeros(2, device="cuda"),
    lambda: ember.tensor([1.0], device="cuda:0"),
    lambda: ember.rand(2, device="cuda"),
    lambda: ember.zeros(2).cuda(),
    lambda: ember.zeros(2).to("cuda"),
    lambda: ember.Generator("cuda"),
    lambda: ember.cuda.current_device(),
    lambda: ember.cuda.synchronize(),
    lambda: ember.cuda.get_device_name(),
    lambda: ember.cuda.init(),
    lambda: ember.cuda.reset_peak_memory_stats(),
    lambda: ember.cuda.reset_accumulated_memory_stats(),
    lambda: ember.cuda.mem_get_info(),
    lambda: ember.cuda.set_per_process_memory_fraction(0.5),
    lambda: ember.cuda.current_stream(),
    lambda: ember.cuda.ExternalStream(0),
])
def test_cuda_use_without_cuda_raises_with_the_install_hint(call):
    with pytest.raises(AssertionError, match=f"CUDA.*{INSTALL_HINT}"):
        call()


def test_backend_module_imports_without_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # ``import cupy`` now raises ImportError
    try:
        mod = importlib.reload(cuda_backend)
        assert mod._cupy is None and "CuPy is not importable" in mod.reason()
        assert mod.CUDABackend.type == "cuda"
    finally:
        monkeypatch.undo()
        importlib.reload(cuda_backend)


def test_backend_is_not_registered_without_devices(monkeypatch):
    fake = FakeCupy(count=0)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    try:
        mod = importlib.reload(cuda_backend)
        assert mod.reason() == "CuPy found no CUDA device" and not mod._registered
    finally:
        monkeypatch.undo()
        importlib.reload(cuda_backend)


# -- the CUDA backend on a NumPy-backed fake CuPy ----------------------------------------------

class FakeCupy(types.ModuleType):
    """Just enough of CuPy's API for ``CUDABackend``; arrays are NumPy arrays."""

    def __init__(self, count=2):
        super().__init__("cupy")
        self.current = 0
        self.synced = 0
        self.freed = False
        fake = self

        class Device:
            def __init__(self, index):
                self.index = index

            def __enter__(self):
                self.prev, fake.current = fake.current, self.index
                return self

            def __exit__(self, *exc):
                fake.current = self.prev

            def use(self):
                fake.current = self.index

        class Stream:
            null = None

            def __init__(self, non_blocking=False, priority=0, ptr=None, device_id=-1):
                self.ptr = id(self) if ptr is None else ptr
                self.priority = priority
                self.device_id = fake.current if device_id == -1 else device_id
                self.done = True
                self.waited = []

            def use(self):
                fake.stream = self
                return self

            def synchronize(self):
                fake.synced += 1

            def wait_event(self, event):
                self.waited.append(event)

            def __enter__(self):
                fake.stream = self
                return self

            def __exit__(self, *exc):
                fake.stream = Stream.null

        class Event:
            def __init__(self, block=False, disable_timing=False):
                self.done = False
                self.timing = not disable_timing
                self.ptr = id(self)

            def record(self, stream=None):
                self.done = True

            def synchronize(self):
                fake.synced += 1

        class OutOfMemoryError(MemoryError):
            pass

        class Pool:
            """CuPy's pool per device, counting 512-byte-rounded chunks; ``limit`` caps it."""

            def __init__(self):
                self.used = {0: 123, 1: 0}
                self.total = {0: 456, 1: 0}
                self.limit = 0

            def malloc(self, size):
                dev, nbytes = fake.current, -(-size // 512) * 512
                if self.limit and self.used[dev] + nbytes > self.limit:
                    raise OutOfMemoryError(size)
                self.used[dev] += nbytes
                self.total[dev] = max(self.total[dev], self.used[dev])
                return types.SimpleNamespace(device_id=dev, mem=types.SimpleNamespace(size=nbytes))

            def free(self, ptr):
                self.used[ptr.device_id] -= ptr.mem.size

            def used_bytes(self):
                return self.used[fake.current]

            def total_bytes(self):
                return self.total[fake.current]

            def free_all_blocks(self):
                fake.freed = True
                self.total = dict(self.used)

            def set_limit(self, size=None, fraction=None):
                self.limit = int(fraction * 2000)

            def get_limit(self):
                return self.limit

        Stream.null = Stream(ptr=0)
        self.stream = Stream.null
        self.pool = Pool()
        self.allocator = self.pool.malloc
        runtime = types.SimpleNamespace(
            getDeviceCount=lambda: count, getDevice=lambda: self.current,
            deviceSynchronize=self._sync, memGetInfo=lambda: (1000, 2000),
            getDeviceProperties=lambda i: {"name": b"Fake GPU", "major": 9, "minor": 0},
            deviceGetStreamPriorityRange=lambda: (0, -5))
        self.cuda = types.SimpleNamespace(
            runtime=runtime, Device=Device, Stream=Stream, Event=Event,
            ExternalStream=lambda ptr, device_id=-1: Stream(ptr=ptr, device_id=device_id),
            get_current_stream=lambda: self.stream,
            get_elapsed_time=lambda a, b: 1.5,
            get_allocator=lambda: self.allocator, set_allocator=self._set_allocator,
            memory=types.SimpleNamespace(OutOfMemoryError=OutOfMemoryError))
        self.get_default_memory_pool = lambda: self.pool
        self.get_default_pinned_memory_pool = Pool
        self.random = types.SimpleNamespace(seed=lambda s: None)

    def _sync(self):
        self.synced += 1

    def _set_allocator(self, allocator=None):
        self.allocator = self.pool.malloc if allocator is None else allocator

    def alloc(self, size):
        """``cupy.cuda.alloc``: memory from the current allocator."""
        return self.allocator(size)

    def asnumpy(self, a):
        return np.asarray(a)

    def __getattr__(self, name):  # the array functions: NumPy's
        return getattr(np, name)


@pytest.fixture
def fake_cuda():
    # on a machine with a GPU the real backend (and its generators) is put back afterwards
    real = _backends._REGISTRY.get("cuda")
    real_generators = {d: g for d, g in _random._device_generators.items() if d.type == "cuda"}
    real_seed = _random._later_seeds.get("cuda")
    fake = FakeCupy()
    register_backend(cuda_backend.CUDABackend(fake))
    yield fake
    unregister_backend("cuda")
    for dev in [d for d in _random._device_generators if d.type == "cuda"]:
        del _random._device_generators[dev]
    _random._later_seeds.pop("cuda", None)
    if real is not None:
        register_backend(real)
        _random._device_generators.update(real_generators)
        if real_seed is not None:
            _random._later_seeds["cuda"] = real_seed


def test_fake_device_queries(fake_cuda):
    cuda = ember.cuda
    assert cuda.is_available() and cuda.is_initialized() and cuda.device_count() == 2
    assert cuda.current_device() == 0
    cuda.set_device(1)
    assert cuda.current_device() == 1
    with cuda.device(0):
        assert cuda.current_device() == 0
    assert cuda.current_device() == 1
    cuda.set_device("cuda:0")
    with cuda.device_of(ember.zeros(1, device="cuda:1")):
        assert cuda.current_device() == 1
    assert cuda.current_device() == 0
    with pytest.raises(ValueError, match="Expected a cuda device, but got: cpu"):
        cuda.set_device("cpu")
    cuda.synchronize()
    cuda.synchronize(1)
    assert fake_cuda.synced == 2
    assert cuda.get_device_name() == "Fake GPU" and cuda.get_device_capability(0) == (9, 0)
    assert cuda.memory_allocated() == 123 and cuda.memory_reserved(0) == 456
    assert cuda.mem_get_info() == (1000, 2000)
    cuda.empty_cache()
    assert fake_cuda.freed


def test_fake_tensors_on_cuda(fake_cuda):
    t = ember.zeros(2, device="cuda")
    assert t.device is ember.device("cuda", 0) and t.is_cuda and t.get_device() == 0
    assert repr(t) == "tensor([0., 0.], device='cuda:0')"
    u = ember.tensor([1.0, 2.0]).cuda()
    assert u.device == ember.device("cuda:0") and (u + t).cpu().tolist() == [1.0, 2.0]
    assert ember.ones(2).cuda(1).device == ember.device("cuda", 1)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        u + ember.ones(2)
    with ember.device("cuda"):
        assert ember.arange(3).device == ember.device("cuda", 0)


def test_a_forked_child_gets_pytorchs_error_not_a_driver_one(fake_cuda, monkeypatch):
    # what os.register_at_fork runs in a child forked after CUDA started (run here directly:
    # a real fork of the test process would need a GPU to mean anything)
    monkeypatch.setattr(cuda_backend, "_COUNT", [2])
    cuda_backend._after_fork_in_child()
    message = "Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing"
    with pytest.raises(RuntimeError, match=message):
        ember.zeros(2, device="cuda")
    with pytest.raises(RuntimeError, match=message):
        ember.tensor([1.0]).cuda()
    assert ember.cuda.device_count() == 2  # queries answer, as PyTorch's (NVML) do
    assert ember.ones(2).tolist() == [1.0, 1.0]  # the CPU is untouched
    cuda_backend._after_fork_in_child()  # a grandchild: stays the stand-in
    assert isinstance(_backends._REGISTRY["cuda"], cuda_backend._ForkedCUDABackend)


class FakeCupyArray(np.ndarray):
    """A NumPy array that presents itself as a CuPy array on device 0."""

    __cuda_array_interface__ = {}
    device = types.SimpleNamespace(id=0)


def test_fake_cupy_arrays_become_cuda_tensors(fake_cuda):
    arr = np.arange(3.0).view(FakeCupyArray)
    shared = ember.as_tensor(arr)
    assert shared.device == ember.device("cuda", 0) and shared.dtype is ember.float64
    arr[0] = 7.0
    assert shared.cpu().tolist() == [7.0, 1.0, 2.0]
    copied = ember.tensor(arr, dtype=ember.float32)
    arr[1] = 9.0
    assert copied.device.type == "cuda" and copied.cpu().tolist() == [7.0, 1.0, 2.0]
    assert ember.tensor(arr, device="cpu").tolist() == [7.0, 9.0, 2.0]


@no_cuda
def test_cupy_arrays_without_cuda_raise():
    with pytest.raises(AssertionError, match=INSTALL_HINT):
        ember.as_tensor(np.arange(3.0).view(FakeCupyArray))


def test_fake_cuda_random_state(fake_cuda):
    cuda = ember.cuda
    cuda.manual_seed(7)
    a = ember.rand(4, device="cuda").cpu().tolist()
    cuda.manual_seed(7)
    assert ember.rand(4, device="cuda").cpu().tolist() == a
    assert cuda.initial_seed() == 7
    cuda.manual_seed_all(9)
    b = ember.randn(3, device="cuda:1").cpu().tolist()
    cuda.manual_seed_all(9)
    assert ember.randn(3, device="cuda:1").cpu().tolist() == b
    ember.manual_seed(5)  # seeds the CUDA generators too
    c = ember.rand(3, device="cuda").cpu().tolist()
    ember.manual_seed(5)
    assert ember.rand(3, device="cuda").cpu().tolist() == c
    state = cuda.get_rng_state()
    d = ember.rand(3, device="cuda").cpu().tolist()
    cuda.set_rng_state(state)
    assert ember.rand(3, device="cuda").cpu().tolist() == d
    assert len(cuda.get_rng_state_all()) == 2
    cuda.set_rng_state_all(cuda.get_rng_state_all())
    gens = cuda.default_generators
    assert len(gens) == 2 and gens[1].device == ember.device("cuda", 1)
    g = ember.Generator("cuda").manual_seed(1)
    assert g.device == ember.device("cuda", 0)
    assert ember.rand(2, device="cuda", generator=g).device.type == "cuda"
    with pytest.raises(RuntimeError, match="Expected a 'cuda' device type for generator but "
                       "found 'cpu'"):
        ember.rand(2, device="cuda", generator=ember.Generator())
    cuda.seed()
    cuda.seed_all()


def test_fake_streams_and_events(fake_cuda):
    cuda = ember.cuda
    s = cuda.Stream()
    assert s.query() and s.device == ember.device("cuda", 0)
    with cuda.stream(s):
        assert cuda.current_stream() == s
    assert cuda.current_stream() == cuda.default_stream()
    with cuda.stream(None):
        pass
    start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
    start.record()
    end.record(s)
    assert end.query()
    end.synchronize()
    assert start.elapsed_time(end) == 1.5
    e = s.record_event()
    s.wait_event(e)
    s.wait_stream(cuda.Stream())
    e.wait(s)
    s.synchronize()
    assert len(s._raw.waited) == 3 and isinstance(s.cuda_stream, int)


def test_fake_streams_switch_device_and_stream(fake_cuda):
    cuda = ember.cuda
    s1 = cuda.Stream(1, priority=-1)
    assert s1.device == ember.device("cuda", 1) and s1.priority == -1
    assert repr(s1) == f"<ember.cuda.Stream device=cuda:1 cuda_stream={s1.cuda_stream:#x}>"
    assert cuda.Stream.priority_range() == (0, -5)
    with cuda.stream(s1):  # the stream's device becomes current too, as in PyTorch
        assert cuda.current_device() == 1 and fake_cuda.stream is s1._raw
    assert cuda.current_device() == 0 and fake_cuda.stream is type(s1._raw).null
    cuda.set_stream(s1)
    assert cuda.current_device() == 1 and cuda.current_stream() == s1
    cuda.set_stream(cuda.default_stream(0))
    assert cuda.current_device() == 0
    ext = cuda.ExternalStream(0x1234, device=1)
    assert ext.cuda_stream == 0x1234 and ext.device.index == 1 and isinstance(ext, cuda.Stream)
    assert cuda.Stream(0) != cuda.Stream(0) and ext == cuda.ExternalStream(0x1234, device=1)
    assert repr(cuda.Event()).startswith("<ember.cuda.Event 0x")


def test_fake_memory_peaks_and_totals(fake_cuda):
    cuda, pool = ember.cuda, fake_cuda.pool
    assert cuda.memory_allocated() == 123 and cuda.memory_reserved() == 456
    assert fake_cuda.allocator == pool.malloc  # no tracking before a program asks for it
    cuda.reset_peak_memory_stats()
    assert fake_cuda.allocator != pool.malloc  # CuPy's allocator is wrapped now
    assert cuda.max_memory_allocated() == 123 and cuda.max_memory_reserved() == 456
    a = fake_cuda.alloc(1000)  # 1024 bytes
    b = fake_cuda.alloc(200)  # 512
    assert cuda.memory_allocated() == 123 + 1536 == cuda.max_memory_allocated()
    pool.free(a)
    pool.free(b)
    c = fake_cuda.alloc(100)
    stats = cuda.memory_stats()
    assert list(stats) == sorted(stats)
    assert stats == {
        "allocated_bytes.all.current": 123 + 512, "allocated_bytes.all.peak": 123 + 1536,
        "allocated_bytes.all.allocated": 2048, "allocated_bytes.all.freed": 1536,
        "allocation.all.allocated": 3, "num_ooms": 0,
        "reserved_bytes.all.current": 123 + 1536, "reserved_bytes.all.peak": 123 + 1536}
    nested = cuda.memory_stats_as_nested_dict()
    assert nested["allocated_bytes"]["all"]["peak"] == 123 + 1536 and nested["num_ooms"] == 0
    cuda.reset_peak_memory_stats()
    assert cuda.max_memory_allocated() == 123 + 512
    cuda.empty_cache()
    assert fake_cuda.freed and cuda.memory_reserved() == 123 + 512
    assert cuda.max_memory_reserved() == 123 + 1536  # a peak outlives empty_cache
    cuda.reset_accumulated_memory_stats()
    stats = cuda.memory_stats()
    assert stats["allocated_bytes.all.allocated"] == stats["allocated_bytes.all.freed"] == 0
    pool.free(c)
    assert cuda.memory_stats()["allocated_bytes.all.freed"] == 512
    with pytest.warns(FutureWarning, match="resets /all/ peak memory stats"):
        cuda.reset_max_memory_allocated()
    with pytest.warns(FutureWarning, match="resets /all/ peak memory stats"):
        cuda.reset_max_memory_cached()
    assert cuda.max_memory_allocated() == 123


def test_fake_memory_peaks_per_device_and_out_of_memory(fake_cuda):
    cuda, pool = ember.cuda, fake_cuda.pool
    assert cuda.max_memory_allocated(1) == 0
    with cuda.device(1):
        big = fake_cuda.alloc(4096)
    assert cuda.max_memory_allocated("cuda:1") == 4096 and cuda.max_memory_allocated(0) == 123
    pool.free(big)
    assert cuda.memory_allocated(1) == 0 and cuda.max_memory_allocated(1) == 4096
    cuda.set_per_process_memory_fraction(0.5)  # of the fake's 2000 bytes
    assert cuda.get_per_process_memory_fraction() == 0.5
    with pytest.raises(MemoryError):
        fake_cuda.alloc(2000)
    assert cuda.memory_stats()["num_ooms"] == 1
    with pytest.raises(TypeError, match="Invalid type for fraction argument, must be `float`"):
        cuda.set_per_process_memory_fraction(1)
    with pytest.raises(ValueError, match="Invalid fraction value: 1.5. Allowed range: 0~1"):
        cuda.set_per_process_memory_fraction(1.5)


def test_fake_memory_tracking_survives_a_new_allocator(fake_cuda):
    cuda = ember.cuda
    cuda.reset_peak_memory_stats()
    fake_cuda.cuda.set_allocator(None)  # a program sets CuPy's allocator itself
    before = cuda.max_memory_allocated()  # asking again wraps the new one
    fake_cuda.alloc(10_000)
    assert cuda.max_memory_allocated() == before + 10_240


# -- a real GPU ---------------------------------------------------------------------------------

@pytest.mark.gpu
def test_gpu_factories_match_cpu():
    assert ember.cuda.is_available() and ember.cuda.device_count() >= 1
    assert isinstance(ember.cuda.get_device_name(), str)
    for make in (lambda d: ember.zeros(2, 3, device=d), lambda d: ember.ones(4, device=d),
                 lambda d: ember.arange(10, device=d), lambda d: ember.eye(3, device=d),
                 lambda d: ember.linspace(0, 1, 5, device=d),
                 lambda d: ember.full((2,), 1.5, device=d),
                 lambda d: ember.tensor([[1, 2], [3, 4]], device=d)):
        g, c = make("cuda"), make("cpu")
        assert g.device == ember.device("cuda", 0) and g.dtype is c.dtype
        np.testing.assert_allclose(g.cpu().numpy(), c.numpy(), rtol=1e-6)
    assert "device='cuda:0'" in repr(ember.ones(2, device="cuda"))


@pytest.mark.gpu
def test_gpu_ops_match_cpu():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((4, 5)), rng.standard_normal((5, 3))
    ca, cb = ember.tensor(a), ember.tensor(b)
    ga, gb = ca.cuda(), cb.cuda()
    for op in (lambda x, y: x + 1, lambda x, y: x * 2 - x, lambda x, y: x @ y,
               lambda x, y: x.exp().sum(), lambda x, y: (x / 3).mean(0)):
        np.testing.assert_allclose(op(ga, gb).cpu().numpy(), op(ca, cb).numpy(), rtol=1e-5,
                                   atol=1e-6)
    x = ember.tensor(a, dtype=ember.float64, device="cuda", requires_grad=True)
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), 2 * a)
    ember.cuda.synchronize()


@pytest.mark.gpu
def test_gpu_cupy_interop():
    import cupy

    a = cupy.arange(4, dtype=cupy.float32)
    t = ember.as_tensor(a)
    assert t.device == ember.device("cuda", 0) and t.data_ptr() == a.data.ptr
    c = ember.tensor(a)
    assert c.data_ptr() != a.data.ptr and c.cpu().tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.gpu
def test_gpu_random_and_memory():
    ember.manual_seed(3)
    a = ember.randn(1000, device="cuda")
    ember.manual_seed(3)
    b = ember.randn(1000, device="cuda")
    assert a.device.type == "cuda" and a.cpu().tolist() == b.cpu().tolist()
    assert abs(a.cpu().numpy().mean()) < 0.2
    big = ember.empty(1 << 20, device="cuda")
    assert ember.cuda.memory_allocated() >= big.nbytes
    del big
    ember.cuda.empty_cache()
    ember.cuda.reset_peak_memory_stats()
    base = ember.cuda.memory_allocated()
    big = ember.empty(1 << 22, device="cuda")
    assert ember.cuda.max_memory_allocated() >= base + big.nbytes
    del big
    assert ember.cuda.memory_allocated() == base
    assert ember.cuda.max_memory_allocated() >= base + (1 << 24)
    assert ember.cuda.max_memory_reserved() >= ember.cuda.memory_reserved()
    stats = ember.cuda.memory_stats()
    assert stats["allocation.all.allocated"] >= 1 and stats["allocated_bytes.all.freed"] >= 1 << 24
    ember.cuda.reset_peak_memory_stats()
    assert ember.cuda.max_memory_allocated() == base
    free, total = ember.cuda.mem_get_info()
    assert 0 < free <= total
    start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
    start.record()
    ember.ones(1000, device="cuda").sum()
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 0


@pytest.mark.gpu
def test_gpu_streams():
    cuda = ember.cuda
    s = cuda.Stream()
    with cuda.stream(s):
        assert cuda.current_stream() == s
        a = ember.ones(1000, device="cuda") * 2
    assert cuda.current_stream() == cuda.default_stream()
    s.synchronize()
    assert s.query() and a.sum().item() == 2000.0
    cuda.set_stream(s)
    assert cuda.current_stream() == s
    cuda.set_stream(cuda.default_stream())
    ext = cuda.ExternalStream(s.cuda_stream)
    assert ext == s
    low, high = cuda.Stream.priority_range()
    assert high <= low and cuda.Stream(priority=high).priority == high
