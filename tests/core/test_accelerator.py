"""``ember.accelerator``, ``ember.backends.*`` flags, ``ember.mps``/``ember.xpu``, the
``Tensor.is_*`` device properties and ``ember.version``.

Three layers: this machine as it is (no GPU: every answer says so, side by side with the
PyTorch CPU build where it is installed), a NumPy-backed fake CuPy that drives the CUDA
routes of ``ember.accelerator`` on any machine, and ``gpu``-marked tests on a real GPU.
"""

import types
import warnings

import numpy as np
import pytest

import ember
import ember.backends.cuda as cuda_backend
from ember import _random
from ember.backends import (
    available_types,
    cudnn,
    get_backend,
    register_backend,
    unregister_backend,
)

NO_ACCELERATOR = "Cannot access accelerator device when none is available."
no_cupy = pytest.mark.skipif(cuda_backend.is_built(), reason="CuPy is importable here")


def _error(call):
    """``(type, message)`` of the exception ``call()`` raises."""
    with pytest.raises(Exception) as info:
        call()
    return info.type, str(info.value)


# -- this machine: no CuPy, no GPU -----------------------------------------------------------

@no_cupy
def test_accelerator_queries_without_one():
    acc = ember.accelerator
    assert acc.is_available() is False
    assert acc.current_accelerator() is None
    assert acc.current_accelerator(check_available=True) is None
    assert acc.device_count() == 0
    acc.set_device_index(-1)  # a negative index is a no-op, even without an accelerator
    with acc.device_index(None):
        pass


@no_cupy
@pytest.mark.parametrize("call, kind, message", [
    (lambda a: a.current_device_index(), RuntimeError, NO_ACCELERATOR),
    (lambda a: a.synchronize(), RuntimeError, NO_ACCELERATOR),
    (lambda a: a.synchronize(0), RuntimeError, NO_ACCELERATOR),
    (lambda a: a.synchronize("cuda"), RuntimeError, "Accelerator expected"),
    (lambda a: a.synchronize("cpu"), RuntimeError, "Accelerator expected"),
    (lambda a: a.set_device_index(0), RuntimeError, NO_ACCELERATOR),
    (lambda a: a.set_device_index("cuda:0"), RuntimeError, "Accelerator expected"),
    (lambda a: a.device_index(0).__enter__(), RuntimeError, NO_ACCELERATOR),
    (lambda a: a.current_stream(), RuntimeError, NO_ACCELERATOR),
    (lambda a: a.empty_cache(), RuntimeError, NO_ACCELERATOR),
    (lambda a: a.memory_allocated(), RuntimeError, NO_ACCELERATOR),
    (lambda a: a.memory_allocated(0), RuntimeError, NO_ACCELERATOR),
    (lambda a: a.get_memory_info(), RuntimeError, NO_ACCELERATOR),
])
def test_accelerator_errors_without_one(call, kind, message):
    assert _error(lambda: call(ember.accelerator)) == (kind, message)


@no_cupy
@pytest.mark.parity
@pytest.mark.parametrize("call", [
    lambda a: a.current_device_index(), lambda a: a.synchronize(),
    lambda a: a.synchronize(0), lambda a: a.synchronize("cuda"), lambda a: a.synchronize("cpu"),
    lambda a: a.set_device_index(0), lambda a: a.set_device_index("cuda:0"),
    lambda a: a.device_index(0).__enter__(), lambda a: a.current_stream(),
    lambda a: a.empty_cache(), lambda a: a.memory_allocated(), lambda a: a.get_memory_info(),
])
def test_accelerator_errors_match_torch_cpu_build(call):
    torch = pytest.importorskip("torch")
    if torch.accelerator.current_accelerator() is not None:
        pytest.skip("this torch build has an accelerator")
    assert _error(lambda: call(ember.accelerator)) == _error(lambda: call(torch.accelerator))


@no_cupy
@pytest.mark.parity
def test_accelerator_answers_match_torch_cpu_build():
    torch = pytest.importorskip("torch")
    if torch.accelerator.current_accelerator() is not None:
        pytest.skip("this torch build has an accelerator")
    for name in ("is_available", "current_accelerator", "device_count"):
        assert getattr(ember.accelerator, name)() == getattr(torch.accelerator, name)()
    assert ember.accelerator.set_device_index(-1) == torch.accelerator.set_device_index(-1)


# -- the CUDA routes, through a fake CuPy ------------------------------------------------------

class FakeCupy(types.SimpleNamespace):
    """The few CuPy calls ``ember.cuda`` makes for device selection and synchronisation."""

    def __init__(self, count=2):
        super().__init__(__name__="cupy", float32=np.float32)
        self.current, self.synced = 0, []
        fake = self

        class Device:
            def __init__(self, index):
                self.index = index

            def __enter__(self):
                self.prev, fake.current = fake.current, self.index

            def __exit__(self, *exc):
                fake.current = self.prev

            def use(self):
                fake.current = self.index

        runtime = types.SimpleNamespace(
            getDeviceCount=lambda: count, getDevice=lambda: self.current,
            deviceSynchronize=lambda: self.synced.append(self.current))
        self.cuda = types.SimpleNamespace(runtime=runtime, Device=Device)


class RecordingCUDABackend(cuda_backend.CUDABackend):
    """The real backend class over the fake CuPy, recording the TF32 switch."""

    def __init__(self, cupy):
        super().__init__(cupy)
        self.tf32 = []

    def allow_tf32_matmul(self, allowed):
        self.tf32.append(allowed)


@pytest.fixture
def fake_cuda(monkeypatch):
    real = get_backend("cuda") if "cuda" in available_types() else None
    fake = FakeCupy()
    monkeypatch.setattr(cuda_backend, "_cupy", fake)  # CuPy "imports": is_built()
    backend = register_backend(RecordingCUDABackend(fake))
    yield backend
    if real is None:
        unregister_backend("cuda")
    else:
        register_backend(real)
    for dev in [d for d in _random._device_generators if d.type == "cuda"]:
        del _random._device_generators[dev]


def test_accelerator_reports_cuda(fake_cuda):
    acc = ember.accelerator
    assert acc.is_available() is True
    assert acc.current_accelerator() == ember.device("cuda")
    assert acc.current_accelerator(check_available=True).type == "cuda"
    assert acc.device_count() == 2
    assert acc.current_device_index() == 0


def test_accelerator_selects_and_synchronizes_devices(fake_cuda):
    acc, fake = ember.accelerator, fake_cuda.xp
    acc.set_device_index(1)
    assert acc.current_device_index() == 1 == ember.cuda.current_device()
    with acc.device_index(0):
        assert acc.current_device_index() == 0
    assert acc.current_device_index() == 1
    acc.set_device_index("cuda:0")
    assert fake.current == 0
    acc.synchronize()
    acc.synchronize("cuda:1")
    acc.synchronize(ember.device("cuda", 1))
    assert fake.synced == [0, 1, 1]


def test_deprecated_index_aliases_warn(fake_cuda):
    with pytest.warns(FutureWarning, match="Use `current_device_index` instead."):
        assert ember.accelerator.current_device_idx() == 0
    with pytest.warns(FutureWarning, match="Use `set_device_index` instead."):
        ember.accelerator.set_device_idx(1)
    assert fake_cuda.xp.current == 1


def test_accelerator_memory_and_streams_go_to_ember_cuda(fake_cuda, monkeypatch):
    calls = []
    for name in ("memory_allocated", "memory_reserved", "mem_get_info", "current_stream"):
        monkeypatch.setattr(ember.cuda, name, lambda index, name=name: calls.append((name, index)))
    monkeypatch.setattr(ember.cuda, "empty_cache", lambda: calls.append(("empty_cache", None)))
    acc = ember.accelerator
    acc.memory_allocated()
    acc.memory_reserved("cuda:1")
    acc.get_memory_info(1)
    acc.current_stream()
    acc.empty_cache()
    assert calls == [("memory_allocated", 0), ("memory_reserved", 1), ("mem_get_info", 1),
                     ("current_stream", 0), ("empty_cache", None)]


def test_accelerator_device_arguments(fake_cuda):
    acc = ember.accelerator
    assert _error(lambda: acc.synchronize("cpu")) == (
        ValueError, "cpu doesn't match the current accelerator cuda.")
    kind, message = _error(lambda: acc.set_device_index("cuda"))
    assert kind is ValueError
    assert message.endswith("with a specified index or an integer, but got:cuda")


def test_cuda_built_without_device_is_not_available(monkeypatch):
    """CuPy imports but sees no GPU: built for cuda, not available (as a CUDA build of
    PyTorch on a machine without a GPU)."""
    monkeypatch.setattr(cuda_backend, "_cupy", FakeCupy(count=0))
    if ember.cuda.is_available():
        pytest.skip("a CUDA device is present")
    assert ember.accelerator.current_accelerator() == ember.device("cuda")
    assert ember.accelerator.current_accelerator(check_available=True) is None
    assert ember.accelerator.is_available() is False
    assert ember.accelerator.device_count() == 0


def test_matmul_precision_reaches_the_cuda_backend(fake_cuda):
    try:
        ember.set_float32_matmul_precision("high")
        ember.backends.cuda.matmul.allow_tf32 = False
        ember.set_float32_matmul_precision("medium")
    finally:
        ember.set_float32_matmul_precision("highest")
    assert fake_cuda.tf32 == [True, False, True, False]


# -- backend flags ----------------------------------------------------------------------------

@pytest.fixture
def restore_flags():
    before = cudnn.set_flags()
    matmul = ember.backends.cuda.matmul
    reductions = (matmul.allow_fp16_reduced_precision_reduction,
                  matmul.allow_fp16_reduced_precision_reduction_split_k,
                  matmul.allow_bf16_reduced_precision_reduction,
                  matmul.allow_bf16_reduced_precision_reduction_split_k,
                  matmul.allow_fp16_accumulation)
    yield
    cudnn.set_flags(*before)
    matmul.allow_fp16_reduced_precision_reduction = reductions[0:2]
    matmul.allow_bf16_reduced_precision_reduction = reductions[2:4]
    matmul.allow_fp16_accumulation = reductions[4]
    ember.set_float32_matmul_precision("highest")


def test_cudnn_defaults_and_availability():
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == \
        (True, False, False, True)
    assert ember.backends.cudnn is cudnn
    if not ember.cuda.is_available():
        assert cudnn.is_available() is False
        assert cudnn.version() is None


def test_cudnn_flags_set_and_read_back(restore_flags):
    cudnn.benchmark = True
    cudnn.deterministic = True
    cudnn.enabled = False
    cudnn.allow_tf32 = False
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == \
        (False, True, True, False)
    assert ember.backends.cudnn.benchmark is True  # the same module, through the package


def test_cudnn_flags_context_manager_restores(restore_flags):
    cudnn.benchmark = True
    with cudnn.flags(enabled=True, benchmark=False, deterministic=True, allow_tf32=False):
        assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == \
            (True, False, True, False)
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == \
        (True, True, False, True)
    with cudnn.flags():  # PyTorch's defaults: cuDNN off
        assert cudnn.enabled is False
    with pytest.raises(KeyError), cudnn.flags(deterministic=True):
        raise KeyError("restored on the way out too")
    assert cudnn.deterministic is False and cudnn.enabled is True


@pytest.mark.parametrize("name, setter", [
    ("enabled", "set_enabled_cudnn"), ("benchmark", "set_benchmark_cudnn"),
    ("deterministic", "set_deterministic_cudnn"), ("allow_tf32", "set_allow_tf32_cublas"),
])
def test_cudnn_flags_take_bools_only(restore_flags, name, setter):
    with pytest.raises(RuntimeError, match=f"^{setter} expects a bool, but got int$"):
        setattr(cudnn, name, 1)
    with pytest.raises(RuntimeError, match="expects a bool, but got str"):
        with cudnn.flags(**{name: "x"}):
            pass
    assert cudnn.set_flags() == (True, False, False, True)


def test_cuda_matmul_flags(restore_flags):
    matmul = ember.backends.cuda.matmul
    assert ember.backends.cuda.is_built() is (cuda_backend._cupy is not None)
    assert matmul.allow_tf32 is False and ember.get_float32_matmul_precision() == "highest"
    matmul.allow_tf32 = True
    assert ember.get_float32_matmul_precision() == "high"
    ember.set_float32_matmul_precision("medium")
    assert matmul.allow_tf32 is True
    ember.set_float32_matmul_precision("highest")
    assert matmul.allow_tf32 is False
    assert matmul.allow_fp16_reduced_precision_reduction is True
    matmul.allow_fp16_reduced_precision_reduction = (False, False)
    assert matmul.allow_fp16_reduced_precision_reduction is False
    assert matmul.allow_fp16_reduced_precision_reduction_split_k is False
    matmul.allow_bf16_reduced_precision_reduction = [False]
    assert (matmul.allow_bf16_reduced_precision_reduction,
            matmul.allow_bf16_reduced_precision_reduction_split_k) == (False, True)
    matmul.allow_fp16_accumulation = True
    assert matmul.allow_fp16_accumulation is True


@pytest.mark.parity
@pytest.mark.parametrize("name, value", [
    ("allow_tf32", "x"), ("allow_fp16_reduced_precision_reduction", "x"),
    ("allow_fp16_reduced_precision_reduction", ()),
    ("allow_fp16_reduced_precision_reduction", (True, False, True)),
    ("allow_bf16_reduced_precision_reduction", (1,)),
    ("allow_bf16_reduced_precision_reduction", (True, 1)),
    ("allow_fp16_accumulation", 0), ("allow_fp16_reduced_precision_reduction_split_k", True),
    ("no_such_flag", True),
])
def test_cuda_matmul_flag_errors_match_torch(restore_flags, name, value):
    torch = pytest.importorskip("torch")
    theirs = _error(lambda: setattr(torch.backends.cuda.matmul, name, value))
    assert _error(lambda: setattr(ember.backends.cuda.matmul, name, value)) == theirs
    assert _error(lambda: ember.backends.cuda.matmul.no_such_flag) == \
        _error(lambda: torch.backends.cuda.matmul.no_such_flag)


@pytest.mark.parity
def test_backend_flags_match_torch_defaults_and_errors(restore_flags):
    torch = pytest.importorskip("torch")
    theirs = torch.backends
    for name in ("enabled", "benchmark", "deterministic", "allow_tf32"):
        assert getattr(cudnn, name) == getattr(theirs.cudnn, name)
        assert _error(lambda: setattr(cudnn, name, "x")) == \
            _error(lambda: setattr(theirs.cudnn, name, "x"))  # noqa: B023 - called at once
    matmul, their_matmul = ember.backends.cuda.matmul, theirs.cuda.matmul
    for name in ("allow_tf32", "allow_fp16_reduced_precision_reduction",
                 "allow_bf16_reduced_precision_reduction", "allow_fp16_accumulation"):
        assert getattr(matmul, name) == getattr(their_matmul, name)
    assert ember.backends.mps.is_available() == theirs.mps.is_available() is False
    assert ember.backends.mps.is_built() == theirs.mps.is_built() is False
    assert _error(lambda: ember.backends.mps.is_macos_or_newer(13, 0)) == \
        _error(lambda: theirs.mps.is_macos_or_newer(13, 0))


def test_cpu_library_backends_answer_for_numpys_blas():
    import threadpoolctl

    blas = threadpoolctl.threadpool_info()
    blas = [lib for lib in blas if lib["user_api"] == "blas"]
    openmp = any(lib.get("threading_layer") in {"openmp", "intel", "gnu", "pgi"}
                 for lib in blas)
    assert ember.backends.openmp.is_available() is openmp
    assert ember.backends.mkl.is_available() is any(lib["internal_api"] == "mkl"
                                                    for lib in blas)
    assert ember.backends.mkldnn.is_available() is False
    assert ember.backends.mkldnn.is_acl_available() is False
    assert ember.backends.mps.is_available() is False and ember.backends.mps.is_built() is False


# -- ember.mps and ember.xpu ------------------------------------------------------------------

def test_mps_module_answers_without_mps():
    assert ember.mps.is_available() is False
    assert ember.mps.device_count() == 0
    ember.mps.manual_seed(0)  # ember.manual_seed may seed every device: must not fail
    assert _error(ember.mps.synchronize) == (
        RuntimeError, "Cannot execute deviceSynchronize() without MPS backend.")
    assert _error(lambda: ember.mps.compile_shader("")) == (RuntimeError, "MPS is not available")


@pytest.mark.parity
def test_mps_module_matches_torch_cpu_build():
    torch = pytest.importorskip("torch")
    for name in ("is_available", "device_count"):
        assert getattr(ember.mps, name)() == getattr(torch.mps, name)()
    for name in ("synchronize", "seed", "get_rng_state", "empty_cache",
                 "current_allocated_memory", "driver_allocated_memory",
                 "recommended_max_memory"):
        assert _error(getattr(ember.mps, name)) == _error(getattr(torch.mps, name))
    for name, args in (("set_per_process_memory_fraction", (0.5,)), ("compile_shader", ("",)),
                       ("load_metallib", (b"",))):
        assert _error(lambda: getattr(ember.mps, name)(*args)) == \
            _error(lambda: getattr(torch.mps, name)(*args))  # noqa: B023 - called at once
    assert ember.mps.manual_seed(1) is torch.mps.manual_seed(1) is None


def test_xpu_module_answers_without_xpu():
    xpu = ember.xpu
    assert (xpu.is_available(), xpu.is_initialized(), xpu.device_count()) == (False, False, 0)
    assert (xpu.is_bf16_supported(), xpu.is_tf32_supported(), xpu.get_arch_list()) == \
        (False, False, [])
    assert xpu.memory_allocated() == xpu.memory_reserved() == 0
    xpu.manual_seed(1)
    xpu.manual_seed_all(1)
    xpu.seed()
    xpu.seed_all()
    xpu.empty_cache()
    for call in (xpu.init, xpu.current_device, lambda: xpu.set_device(0), xpu.synchronize,
                 xpu.get_device_name, xpu.get_device_capability, xpu.get_device_properties,
                 xpu.initial_seed, xpu.mem_get_info):
        assert _error(call) == (AssertionError, "Ember not compiled with XPU enabled")


@pytest.mark.parity
def test_xpu_module_matches_torch_cpu_build():
    torch = pytest.importorskip("torch")
    for name in ("is_available", "is_initialized", "device_count", "is_bf16_supported",
                 "is_tf32_supported", "get_arch_list", "memory_allocated", "memory_reserved",
                 "seed_all", "empty_cache"):
        assert getattr(ember.xpu, name)() == getattr(torch.xpu, name)()
    for name in ("init", "current_device", "synchronize", "get_device_name",
                 "get_device_capability", "get_device_properties", "initial_seed",
                 "mem_get_info"):
        kind, message = _error(getattr(ember.xpu, name))
        assert (kind, message.replace("Ember", "Torch")) == _error(getattr(torch.xpu, name))


# -- Tensor.is_* ------------------------------------------------------------------------------

def test_tensor_device_properties_on_cpu():
    t = ember.zeros(2)
    assert t.is_cpu is True
    assert (t.is_cuda, t.is_xpu, t.is_mps, t.is_meta, t.is_sparse, t.is_quantized) == \
        (False,) * 6


def test_tensor_device_properties_on_the_test_device(testdev):
    t = ember.zeros(2, device=testdev)
    assert t.is_cpu is False
    assert t.is_cuda is False
    assert (t.is_xpu, t.is_mps, t.is_sparse, t.is_quantized) == (False,) * 4
    assert t.cpu().is_cpu is True


@pytest.mark.parity
def test_tensor_device_properties_match_torch():
    torch = pytest.importorskip("torch")
    names = ("is_cpu", "is_cuda", "is_xpu", "is_mps", "is_meta", "is_sparse", "is_quantized")
    ours, theirs = ember.ones(3), torch.ones(3)
    assert [getattr(ours, n) for n in names] == [getattr(theirs, n) for n in names]


# -- ember.version ----------------------------------------------------------------------------

def test_version_module():
    import importlib.metadata

    assert ember.__version__ == ember.version.__version__ == \
        importlib.metadata.version("ember-core")
    assert ember.version.debug is False
    assert ember.version.hip is None and ember.version.rocm is None
    assert ember.version.xpu is None
    assert isinstance(ember.version.git_version, str) and ember.version.git_version
    cuda = ember.version.cuda
    if cuda_backend._cupy is None:
        assert cuda is None
    else:
        assert cuda is None or cuda.count(".") == 1
    from ember.version import cuda as imported  # the lazy attribute imports too

    assert imported == cuda
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        ember.version.nope  # noqa: B018


def test_git_version_comes_from_pips_record(monkeypatch):
    import importlib.metadata

    from ember import version

    class Dist:
        def __init__(self, text):
            self.text = text

        def read_text(self, name):
            assert name == "direct_url.json"
            return self.text

    record = '{"url": "https://x/ember.git", "vcs_info": {"vcs": "git", "commit_id": "abc123"}}'
    for text, expected in ((record, "abc123"), ('{"url": "file:///src", "dir_info": {}}',
                                                "Unknown"), (None, "Unknown"), ("[]", "Unknown")):
        monkeypatch.setattr(importlib.metadata, "distribution",
                            lambda name, text=text: Dist(text))
        assert version._installed_commit() == expected


# -- on a real GPU ----------------------------------------------------------------------------

@pytest.mark.gpu
def test_gpu_accelerator_and_backends_report_cuda():
    assert ember.accelerator.is_available() is True
    assert ember.accelerator.current_accelerator(check_available=True) == ember.device("cuda")
    assert ember.accelerator.device_count() == ember.cuda.device_count() > 0
    assert ember.accelerator.current_device_index() == ember.cuda.current_device()
    ember.accelerator.synchronize()
    assert ember.backends.cuda.is_built() is True
    assert ember.version.cuda is not None
    assert ember.zeros(1, device="cuda").is_cuda is True
    assert cudnn.is_available() is (cudnn.version() is not None)


@pytest.mark.gpu
def test_gpu_matmul_precision_sets_cupys_compute_type():
    from cupy._core import _routines_linalg as linalg

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # CuPy warns that TF32 needs sm_80 on older GPUs
        try:
            ember.set_float32_matmul_precision("high")
            expected = linalg.COMPUTE_TYPE_TF32 \
                if ember.cuda.get_device_capability() >= (8, 0) else linalg.COMPUTE_TYPE_DEFAULT
            assert linalg.get_compute_type(np.float32) == expected
        finally:
            ember.set_float32_matmul_precision("highest")
    assert linalg.get_compute_type(np.float32) == linalg.COMPUTE_TYPE_DEFAULT


def test_cuda_stream_and_event_without_cuda_raise_pytorchs_runtime_error(monkeypatch):
    # a program that catches RuntimeError around torch.cuda.Event(enable_timing=True)
    # (mha-implementations' timing) must see PyTorch's dummy-class error, not an assertion
    import ember.backends as B

    try:
        B.get_backend("cuda")
    except AssertionError:
        pass
    else:
        pytest.skip("a cuda backend is registered (CuPy, or a test's fake)")
    with pytest.raises(RuntimeError, match="^Tried to instantiate dummy base class Event$"):
        ember.cuda.Event(enable_timing=True)
    with pytest.raises(RuntimeError, match=r"^ember\.cuda\.Stream requires CUDA support$"):
        ember.cuda.Stream()
