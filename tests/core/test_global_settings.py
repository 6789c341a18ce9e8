"""Process-wide settings (threads, matmul precision, determinism, default dtype, print
options, grad mode) and the top-level questions about objects (``is_tensor``, ``numel``,
``is_nonzero``, ``typename``), with their errors side by side with PyTorch's."""

import threading

import pytest
import threadpoolctl

import ember


def _error(call):
    """``(type, message)`` of the exception ``call()`` raises."""
    with pytest.raises(Exception) as info:
        call()
    return info.type, str(info.value)


def _blas_threads():
    return [lib["num_threads"] for lib in threadpoolctl.threadpool_info()
            if lib["user_api"] == "blas"]


# -- threads ----------------------------------------------------------------------------------

@pytest.fixture
def restore_blas_threads():
    before = _blas_threads()
    yield before
    ember.set_num_threads(max(before))
    assert _blas_threads() == [max(before)] * len(before)


@pytest.mark.skipif(not _blas_threads(), reason="NumPy has no BLAS library to size")
def test_set_num_threads_sizes_numpys_blas(restore_blas_threads):
    assert ember.get_num_threads() == max(restore_blas_threads)
    ember.set_num_threads(1)
    assert _blas_threads() == [1] * len(restore_blas_threads)
    assert ember.get_num_threads() == 1
    ember.set_num_threads(3)
    assert ember.get_num_threads() == 3 == max(_blas_threads())


@pytest.mark.skipif(not _blas_threads(), reason="NumPy has no BLAS library to size")
def test_set_num_threads_is_process_wide(restore_blas_threads):
    """Set here, then from another thread while this one lives: the last call wins for all."""
    ember.set_num_threads(1)
    worker = threading.Thread(target=ember.set_num_threads, args=(2,))
    worker.start()
    worker.join()
    assert ember.get_num_threads() == 2
    seen = []
    reader = threading.Thread(target=lambda: seen.append(ember.get_num_threads()))
    reader.start()
    reader.join()
    assert seen == [2]
    ember.set_num_threads(1)
    assert ember.get_num_threads() == 1


def test_interop_threads_are_stored():
    before = ember.get_num_interop_threads()
    assert before >= 1
    try:
        ember.set_num_interop_threads(4)
        assert ember.get_num_interop_threads() == 4
        ember.set_num_interop_threads(2)  # unlike PyTorch, again: Ember has no pool to fix
        assert ember.get_num_interop_threads() == 2
    finally:
        ember.set_num_interop_threads(before)


@pytest.mark.parity
@pytest.mark.parametrize("fn", ["set_num_threads", "set_num_interop_threads"])
@pytest.mark.parametrize("value", [0, -1, 2.0, "2", True, None])
def test_thread_count_errors_match_torch(fn, value):
    torch = pytest.importorskip("torch")
    ours = _error(lambda: getattr(ember, fn)(value))
    assert ours[0] is RuntimeError
    assert ours == _error(lambda: getattr(torch, fn)(value))


# -- float32 matmul precision -----------------------------------------------------------------

@pytest.fixture
def restore_precision():
    yield
    ember.set_float32_matmul_precision("highest")


def test_float32_matmul_precision_round_trips(restore_precision):
    assert ember.get_float32_matmul_precision() == "highest"
    for precision in ("high", "medium", "highest"):
        ember.set_float32_matmul_precision(precision)
        assert ember.get_float32_matmul_precision() == precision
        assert ember.backends.cuda.matmul.allow_tf32 is (precision != "highest")


def test_matmul_fp32_precision_is_the_precision_seen_by_name(restore_precision):
    # the numerical-accuracy note's newer spelling of allow_tf32
    matmul = ember.backends.cuda.matmul
    matmul.fp32_precision = "none"  # as a fresh process starts (allow_tf32 = ... sets "ieee")
    assert matmul.fp32_precision == "none"
    ember.set_float32_matmul_precision("high")
    assert matmul.fp32_precision == "tf32"
    matmul.fp32_precision = "ieee"
    assert (matmul.fp32_precision, ember.get_float32_matmul_precision()) == ("ieee", "highest")
    assert matmul.allow_tf32 is False
    matmul.fp32_precision = "tf32"
    assert (matmul.fp32_precision, matmul.allow_tf32) == ("tf32", True)
    matmul.allow_tf32 = False
    assert matmul.fp32_precision == "ieee"
    with pytest.raises(RuntimeError, match="^Unknown precision: xx$"):
        matmul.fp32_precision = "xx"
    with pytest.raises(RuntimeError, match="backend 'cuda' does not support precision 'bf16'"):
        matmul.fp32_precision = "bf16"
    with pytest.raises(TypeError, match="must be a str, not int"):
        matmul.fp32_precision = 3
    assert matmul.fp32_precision == "ieee"  # a refused value changes nothing
    matmul.fp32_precision = "none"
    assert (matmul.fp32_precision, ember.get_float32_matmul_precision()) == ("none", "highest")


def test_float32_matmul_precision_changes_nothing_on_cpu(restore_precision):
    a, b = ember.randn(64, 96), ember.randn(96, 32)
    exact = (a @ b).numpy()
    ember.set_float32_matmul_precision("medium")
    assert ((a @ b).numpy() == exact).all()


def test_unknown_precision_warns_and_changes_nothing(restore_precision):
    ember.set_float32_matmul_precision("high")
    with pytest.warns(UserWarning, match="low is not one of 'highest', 'high', or 'medium'"):
        ember.set_float32_matmul_precision("low")
    assert ember.get_float32_matmul_precision() == "high"


@pytest.mark.parity
def test_precision_errors_match_torch(restore_precision):
    torch = pytest.importorskip("torch")
    assert _error(lambda: ember.set_float32_matmul_precision(1)) == \
        _error(lambda: torch.set_float32_matmul_precision(1))
    with pytest.warns(UserWarning) as ours:
        ember.set_float32_matmul_precision("low")
    with pytest.warns(UserWarning) as theirs:
        torch.set_float32_matmul_precision("low")
    assert str(ours[0].message) in str(theirs[0].message)
    assert torch.get_float32_matmul_precision() == ember.get_float32_matmul_precision()


# -- determinism ------------------------------------------------------------------------------

@pytest.fixture
def restore_determinism():
    yield
    ember.use_deterministic_algorithms(False)


def test_deterministic_algorithms_round_trip(restore_determinism):
    assert ember.are_deterministic_algorithms_enabled() is False
    assert ember.is_deterministic_algorithms_warn_only_enabled() is False
    assert ember.get_deterministic_debug_mode() == 0
    ember.use_deterministic_algorithms(True)
    assert ember.are_deterministic_algorithms_enabled() is True
    assert ember.get_deterministic_debug_mode() == 2
    ember.use_deterministic_algorithms(True, warn_only=True)
    assert ember.is_deterministic_algorithms_warn_only_enabled() is True
    assert ember.get_deterministic_debug_mode() == 1
    ember.set_deterministic_debug_mode("default")
    assert ember.are_deterministic_algorithms_enabled() is False
    ember.set_deterministic_debug_mode("error")
    assert (ember.are_deterministic_algorithms_enabled(),
            ember.is_deterministic_algorithms_warn_only_enabled()) == (True, False)
    ember.set_deterministic_debug_mode(1)
    assert ember.get_deterministic_debug_mode() == 1


def test_cpu_kernels_are_deterministic(restore_determinism):
    ember.use_deterministic_algorithms(True)
    ember.manual_seed(0)
    src, index = ember.randn(1000), ember.randint(0, 7, (1000,))
    sums = [ember.zeros(7).scatter_add(0, index, src).numpy() for _ in range(3)]
    assert all((s == sums[0]).all() for s in sums)


@pytest.mark.parity
@pytest.mark.parametrize("call", [
    lambda m: m.use_deterministic_algorithms(1),
    lambda m: m.use_deterministic_algorithms(True, warn_only=1),
    lambda m: m.use_deterministic_algorithms(True, True),
    lambda m: m.set_deterministic_debug_mode("x"),
    lambda m: m.set_deterministic_debug_mode(3),
    lambda m: m.set_deterministic_debug_mode(1.0),
])
def test_determinism_errors_match_torch(call, restore_determinism):
    torch = pytest.importorskip("torch")
    ours, theirs = _error(lambda: call(ember)), _error(lambda: call(torch))
    assert ours[0] is theirs[0]
    # PyTorch's argument parser names its private setter; Ember names the public function
    assert ours[1] == theirs[1].replace("_set_deterministic_algorithms()",
                                        "use_deterministic_algorithms()")


@pytest.mark.parity
def test_debug_mode_matches_torch(restore_determinism):
    torch = pytest.importorskip("torch")
    try:
        for mode in ("warn", "error", 0, 2, 1):
            ember.set_deterministic_debug_mode(mode)
            torch.set_deterministic_debug_mode(mode)
            assert ember.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode()
            assert ember.is_deterministic_algorithms_warn_only_enabled() == \
                torch.is_deterministic_algorithms_warn_only_enabled()
    finally:
        torch.use_deterministic_algorithms(False)


# -- default dtype, print options, grad mode ----------------------------------------------------

@pytest.mark.parity
@pytest.mark.parametrize("name", ["int64", "bool", "int8"])
def test_default_dtype_rejects_non_floats_like_torch(name):
    torch = pytest.importorskip("torch")
    ours = _error(lambda: ember.set_default_dtype(getattr(ember, name)))
    assert ours == (TypeError, "only floating-point types are supported as the default type")
    assert ours == _error(lambda: torch.set_default_dtype(getattr(torch, name)))
    assert ember.get_default_dtype() is ember.float32


def test_default_dtype_round_trips():
    try:
        ember.set_default_dtype(ember.float64)
        assert ember.get_default_dtype() is ember.float64
        assert ember.tensor([1.5]).dtype is ember.float64
    finally:
        ember.set_default_dtype(ember.float32)
    assert ember.tensor([1.5]).dtype is ember.float32


@pytest.fixture
def restore_printoptions():
    yield
    ember.set_printoptions(profile="default")


@pytest.mark.parity
def test_set_printoptions_takes_torchs_arguments_and_prints_alike(restore_printoptions):
    torch = pytest.importorskip("torch")
    data = [[1.123456789, 2e-3, 300.0] * 3] * 2
    try:
        for kwargs in ({"precision": 2}, {"threshold": 5, "edgeitems": 1},
                       {"linewidth": 30}, {"sci_mode": True}, {"profile": "short"},
                       {"profile": "full"}, {"profile": "no-such-profile"},
                       {"profile": "default"}):
            ember.set_printoptions(**kwargs)
            torch.set_printoptions(**kwargs)
            assert repr(ember.tensor(data)) == repr(torch.tensor(data)), kwargs
    finally:
        torch.set_printoptions(profile="default")


def test_set_grad_enabled_is_a_function_and_a_context_manager():
    assert ember.is_grad_enabled() is True
    with ember.set_grad_enabled(False):
        assert ember.is_grad_enabled() is False
    assert ember.is_grad_enabled() is True
    ember.set_grad_enabled(False)
    try:
        assert ember.is_grad_enabled() is False
        assert (ember.ones(1, requires_grad=True) * 2).grad_fn is None
    finally:
        ember.set_grad_enabled(True)
    assert ember.is_grad_enabled() is True


# -- questions about objects -------------------------------------------------------------------

def test_is_tensor_and_is_storage():
    t = ember.zeros(2)
    assert ember.is_tensor(t) is True
    assert ember.is_tensor([1.0]) is False and ember.is_tensor(t.numpy()) is False
    storage = ember.serialization.Storage(t.numpy(), ember.device("cpu"), ember.float32)
    assert ember.is_storage(storage) is True
    assert ember.is_storage(t) is False


def test_numel_and_dtype_predicates():
    assert ember.numel(ember.zeros(2, 3)) == 6
    assert ember.numel(ember.zeros(0, 3)) == 0
    assert ember.is_floating_point(ember.zeros(1)) is True
    assert ember.is_floating_point(ember.zeros(1, dtype=ember.int64)) is False
    assert ember.is_complex(ember.zeros(1)) is False


def test_is_nonzero():
    assert ember.is_nonzero(ember.tensor([1])) is True
    assert ember.is_nonzero(ember.tensor([[0.0]])) is False
    assert ember.is_nonzero(ember.tensor(float("nan"))) is True
    assert ember.is_nonzero(ember.tensor([False])) is False


@pytest.mark.parity
@pytest.mark.parametrize("fn", ["numel", "is_floating_point", "is_complex", "is_nonzero"])
@pytest.mark.parametrize("arg", [1, [1.0], None])
def test_tensor_only_functions_reject_others_like_torch(fn, arg):
    torch = pytest.importorskip("torch")
    ours = _error(lambda: getattr(ember, fn)(arg))
    assert ours[0] is TypeError
    assert ours == _error(lambda: getattr(torch, fn)(arg))


@pytest.mark.parity
@pytest.mark.parametrize("data", [[], [1, 2], [[0.0, 1.0]]])
def test_is_nonzero_errors_match_torch(data):
    torch = pytest.importorskip("torch")
    ours = _error(lambda: ember.is_nonzero(ember.tensor(data)))
    assert ours[0] is RuntimeError
    assert ours == _error(lambda: torch.is_nonzero(torch.tensor(data)))


@pytest.mark.parity
def test_typename_matches_torch_under_ember_names():
    torch = pytest.importorskip("torch")
    for name in ("float32", "float64", "int64", "int32", "uint8", "bool", "float16"):
        ours = ember.typename(ember.zeros(2, dtype=getattr(ember, name)))
        theirs = torch.typename(torch.zeros(2, dtype=getattr(torch, name)))
        assert ours == theirs.replace("torch.", "ember.")
    assert ember.typename(ember.zeros(2)) == "ember.FloatTensor" == ember.zeros(2).type()
    for obj in (1, int, "s", threading.Thread, threading.Thread.run):
        assert ember.typename(obj) == torch.typename(obj)
    assert ember.typename(ember.Tensor) == "ember._tensor.Tensor"


@pytest.mark.parametrize("bad", [float, "float"])
def test_set_default_dtype_takes_a_dtype_object(bad):
    with pytest.raises(TypeError, match="invalid dtype object"):
        ember.set_default_dtype(bad)
    assert ember.get_default_dtype() is ember.float32


def test_bool_of_an_empty_tensor():
    with pytest.raises(RuntimeError, match="with no values is ambiguous"):
        bool(ember.tensor([]))
