"""ember._native: the fused float32 CPU kernels compiled on first use (kernels.c), their loader
(cache, fallbacks, errors) and every caller checked against its NumPy formulation
(``EMBER_NATIVE=0``): exact GELU and its derivative, layer norm's rows forward and backward,
softmax and log-softmax forward and backward, the LSTM time step forward and backward.

Accuracy, float32: the native GELU is within 5 ulp of ``0.5 * |x|`` of the exact value (4.34
measured over the grid below; the NumPy kernel 3.74, PyTorch's own 10), its derivative within
2 ulp of 1 (1.60 measured).
"""

import math
import os
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest
from testutils import on_one_and_two_threads

import ember
import ember.nn.functional as F
from ember import _native

from .test_gelu_kernel import _exact, _grid, _ulps_of_half_x

pytestmark = pytest.mark.skipif(
    shutil.which(os.environ.get("CC", "cc").split()[0]) is None and shutil.which("gcc") is None,
    reason="no C compiler on this machine: ember._native falls back to NumPy (tested below "
    "through EMBER_NATIVE=0)")


@pytest.fixture(autouse=True)
def on_the_cpu():
    """These are CPU kernels: run on the CPU under a strict or cuda test run too (the default
    device is per thread, as PyTorch's, so threads started here are on the CPU anyway)."""
    before = ember.get_default_device()
    ember.set_default_device("cpu")
    yield
    ember.set_default_device(before)


@pytest.fixture
def fresh_state(monkeypatch):
    """The loader as if nothing had been tried in this process (restored afterwards)."""
    monkeypatch.setitem(_native._state, "lib", None)
    monkeypatch.setitem(_native._state, "status", None)
    monkeypatch.delenv("EMBER_NATIVE", raising=False)
    return monkeypatch


def _both(fn, monkeypatch):
    """``fn()`` with the native kernels and with the NumPy formulation."""
    monkeypatch.delenv("EMBER_NATIVE", raising=False)
    assert _native.library() is not None, _native.status()
    native = fn()
    monkeypatch.setenv("EMBER_NATIVE", "0")
    assert _native.library() is None
    plain = fn()
    monkeypatch.delenv("EMBER_NATIVE")
    return native, plain


# -- the loader ----------------------------------------------------------------------------------

def test_library_loads_and_says_where_from():
    assert _native.library() is not None
    status = _native.status()
    assert status.startswith("loaded ") and status.endswith(".so"), status


@pytest.mark.parametrize("value", ["0", "false", "off", " NO "])
def test_ember_native_off_disables_every_kernel(monkeypatch, value):
    monkeypatch.setenv("EMBER_NATIVE", value)
    assert not _native.enabled()
    assert _native.library() is None and _native.kernel("ember_gelu_f32") is None
    assert _native.status() == "disabled by EMBER_NATIVE"


def test_no_compiler_falls_back_and_says_so(fresh_state):
    fresh_state.setenv("CC", "/nonexistent/ember-cc")
    assert _native.library() is None
    assert "no C compiler" in _native.status()
    x = ember.linspace(-3, 3, 7)  # the ops keep working on the NumPy kernels
    expected = [v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in np.linspace(-3, 3, 7)]
    np.testing.assert_allclose(F.gelu(x).numpy(), expected, rtol=1e-6, atol=1e-7)


def test_a_failing_build_is_reported_not_raised(fresh_state, tmp_path):
    bad = tmp_path / "kernels.c"
    bad.write_text("this is not C\n")
    fresh_state.setattr(_native, "_SOURCE", str(bad))
    fresh_state.setenv("EMBER_HOME", str(tmp_path / "home"))
    assert _native.library() is None
    assert "failed" in _native.status() and "error" in _native.status()
    assert not list((tmp_path / "home" / "native").glob("*.so"))  # no half-written library


def test_the_build_is_cached_per_source_and_reused(fresh_state, tmp_path):
    fresh_state.setenv("EMBER_HOME", str(tmp_path))
    assert _native.library() is not None
    built = list((tmp_path / "native").glob("kernels-*.so"))
    assert len(built) == 1 and str(built[0]) in _native.status()
    stamp = built[0].stat().st_mtime_ns
    # another process finds the same file and does not compile again
    code = ("import ember._native as n; assert n.library() is not None, n.status(); "
            "print(n.status())")
    env = dict(os.environ, EMBER_HOME=str(tmp_path))
    env.pop("EMBER_NATIVE", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"loaded {built[0]}"
    assert built[0].stat().st_mtime_ns == stamp
    # an edited source is another key: a second library beside the first
    edited = tmp_path / "kernels.c"
    edited.write_text(open(_native._SOURCE).read() + "\n/* edited */\n")
    fresh_state.setattr(_native, "_SOURCE", str(edited))
    fresh_state.setitem(_native._state, "status", None)
    assert _native.library() is not None
    assert len(list((tmp_path / "native").glob("kernels-*.so"))) == 2


def test_concurrent_first_calls_load_one_library(fresh_state, tmp_path):
    fresh_state.setenv("EMBER_HOME", str(tmp_path))
    seen, errors = [], []

    def load():
        try:
            seen.append(_native.library())
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=load) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(seen) == 4 and all(lib is seen[0] for lib in seen)
    assert seen[0] is not None


# -- GELU ----------------------------------------------------------------------------------------

def test_native_gelu_accuracy_over_the_float32_range():
    x = _grid()
    y = _native.pointwise(_native.kernel("ember_gelu_f32"), 1, x)
    y2, d = _native.pointwise(_native.kernel("ember_gelu_with_grad_f32"), 2, x)
    gd = _native.pointwise(_native.kernel("ember_gelu_backward_f32"), 1, x, np.ones_like(x))
    ref, dref = _exact(x)
    finite = np.isfinite(ref)
    assert _ulps_of_half_x(y, ref, x)[finite].max() <= 5
    np.testing.assert_array_equal(y2, y)
    fd = np.isfinite(dref)
    assert (np.abs(d.astype(np.float64) - dref)[fd] / 2.0 ** -23).max() <= 2
    np.testing.assert_array_equal(gd, d)


def test_native_gelu_special_values_match_the_numpy_kernel(monkeypatch):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 1e30, -1e30, 5.38, -5.72,
                  -13.0, -20.0, -50.0, 88.0, -88.0, 3e38, -3e38], np.float32)
    t = ember.tensor(x, requires_grad=True)

    def run():
        t.grad = None
        y = F.gelu(t)
        y.backward(ember.ones_like(y))
        return y.detach().numpy(), t.grad.numpy()

    (yn, gn), (yp, gp) = _both(run, monkeypatch)
    np.testing.assert_array_equal(np.isnan(yn), np.isnan(yp))
    np.testing.assert_array_equal(np.signbit(yn), np.signbit(yp))
    np.testing.assert_allclose(yn, yp, rtol=0, atol=1e-7)
    np.testing.assert_array_equal(np.isnan(gn), np.isnan(gp))
    np.testing.assert_allclose(gn, gp, rtol=0, atol=3e-7)


@pytest.mark.parametrize("shape", [(), (1,), (7, 3), (4, 600, 700)])
def test_gelu_forward_backward_native_equals_numpy(monkeypatch, shape):
    rng = np.random.default_rng(len(shape))
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)

    def run():
        t = ember.tensor(x, requires_grad=True)
        y = F.gelu(t)
        y.backward(ember.tensor(g))
        return y.detach().numpy(), t.grad.numpy()

    (yn, gn), (yp, gp) = _both(run, monkeypatch)
    scale = np.spacing(np.float32(0.5) * np.abs(x) + np.float32(1e-30))
    assert (np.abs(yn - yp) / scale).max() <= 9  # both within 5 and 4 ulp of the exact value
    np.testing.assert_allclose(gn, gp, rtol=0, atol=4 * 2.0 ** -23 * np.abs(g).max())


def test_gelu_of_a_non_contiguous_input_and_over_two_threads(monkeypatch):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((900, 1400)) * 2).astype(np.float32)
    threads = ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        def run():
            t = ember.tensor(x)
            return F.gelu(t.t()).numpy(), F.gelu(t[:, ::3]).numpy()
        (a, b), (c, d) = _both(run, monkeypatch)
    finally:
        ember.set_num_threads(threads)
    assert a.shape == (1400, 900) and b.shape == (900, 467)
    for got, want, xs in ((a, c, x.T), (b, d, x[:, ::3])):
        scale = np.spacing(np.float32(0.5) * np.abs(xs) + np.float32(1e-30))
        assert (np.abs(got - want) / scale).max() <= 9  # each within 5 / 4 ulp of exact


def test_gelu_float64_and_tanh_forms_do_not_use_the_float32_kernel(monkeypatch):
    x = np.linspace(-4, 4, 101)

    def run():
        t = ember.tensor(x)
        return F.gelu(t).numpy(), F.gelu(t.float(), approximate="tanh").numpy()

    (a, b), (c, d) = _both(run, monkeypatch)
    np.testing.assert_array_equal(a, c)
    np.testing.assert_array_equal(b, d)


def test_gelu_runs_in_several_threads_at_once():
    rng = np.random.default_rng(5)
    xs = [(rng.standard_normal(300_000) * 2).astype(np.float32) for _ in range(4)]
    expected = [F.gelu(ember.tensor(x)).numpy() for x in xs]
    got = [None] * 4

    def work(i):
        for _ in range(5):
            got[i] = F.gelu(ember.tensor(xs[i])).numpy()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)


# -- layer norm ----------------------------------------------------------------------------------

@pytest.mark.parametrize("affine", ["both", "weight", "bias", "none"])
@pytest.mark.parametrize("shape,normalized", [((2048, 384), (384,)), ((3, 5, 7), (5, 7)),
                                              ((1, 1), (1,)), ((40000, 8), (8,))])
def test_layer_norm_native_equals_numpy(monkeypatch, affine, shape, normalized):
    rng = np.random.default_rng(len(shape))
    x = (rng.standard_normal(shape) * 4 + 3).astype(np.float32)
    w = rng.standard_normal(normalized).astype(np.float32) if affine in ("both", "weight") \
        else None
    b = rng.standard_normal(normalized).astype(np.float32) if affine in ("both", "bias") \
        else None

    g = rng.standard_normal(shape).astype(np.float32)

    def run():
        t = ember.tensor(x, requires_grad=True)
        tw = None if w is None else ember.tensor(w, requires_grad=True)
        tb = None if b is None else ember.tensor(b, requires_grad=True)
        y = F.layer_norm(t, normalized, tw, tb, 1e-5)
        y.backward(ember.tensor(g))
        return [y.detach().numpy(), t.grad.numpy()] + [p.grad.numpy() for p in (tw, tb)
                                                       if p is not None]

    native, plain = _both(run, monkeypatch)
    np.testing.assert_allclose(native[0], plain[0], rtol=1e-5, atol=2e-5)
    np.testing.assert_allclose(native[1], plain[1], rtol=1e-4, atol=2e-5)
    for a, b_ in zip(native[2:], plain[2:]):  # sums over the rows: the order differs
        np.testing.assert_allclose(a, b_, rtol=1e-4, atol=1e-4 * np.abs(b_).max())


def test_layer_norm_backward_kernel_splits_rows_over_threads(monkeypatch):
    """Each block of rows sums its own weight and bias gradients; added up, they equal one
    thread's (and NumPy's) to float32 rounding."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6000, 48)).astype(np.float32)
    g = rng.standard_normal((6000, 48)).astype(np.float32)
    w = rng.standard_normal(48).astype(np.float32)

    def grads():
        t, tw = ember.tensor(x, requires_grad=True), ember.tensor(w, requires_grad=True)
        tb = ember.zeros(48, requires_grad=True)
        F.layer_norm(t, (48,), tw, tb).backward(ember.tensor(g))
        return t.grad.numpy(), tw.grad.numpy(), tb.grad.numpy()

    one, two = on_one_and_two_threads(grads)
    np.testing.assert_array_equal(one[0], two[0])
    for a, b in zip(one[1:], two[1:]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-3)
    _, plain = _both(grads, monkeypatch)
    for a, b in zip(one, plain):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-3)


# -- softmax -------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(32, 4, 16, 16), (512, 27), (1, 1), (3, 1000), (7,)])
@pytest.mark.parametrize("fn", ["softmax", "log_softmax", "cross_entropy"])
def test_softmax_native_equals_numpy(monkeypatch, fn, shape):
    rng = np.random.default_rng(len(shape))
    x = (rng.standard_normal(shape) * 6).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    target = rng.integers(0, shape[-1], shape[:-1] if len(shape) > 1 else ())

    def run():
        t = ember.tensor(x, requires_grad=True)
        if fn == "cross_entropy":
            y = F.cross_entropy(t.reshape(-1, shape[-1]), ember.tensor(target).reshape(-1))
            y.backward()
        else:
            y = getattr(F, fn)(t, dim=-1)
            y.backward(ember.tensor(g))
        with ember.no_grad():
            z = getattr(F, "log_softmax" if fn == "softmax" else "softmax")(t, dim=-1)
        return y.detach().numpy(), t.grad.numpy(), z.numpy()

    native, plain = _both(run, monkeypatch)
    for a, b in zip(native, plain):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=2e-6)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_softmax_native_rows_of_nan_and_infinities(monkeypatch):
    """A row with NaN or +inf, or only -inf, is NaN as NumPy's formulation (and PyTorch)
    makes it; -inf elements of other rows get 0 (log: -inf)."""
    x = np.zeros((5, 8), np.float32)
    x[0] = -np.inf
    x[1, 2] = np.nan
    x[2, 5] = np.inf
    x[3, :6] = -np.inf
    x[4] = np.arange(8) * 30.0

    def run():
        t = ember.tensor(x)
        return F.softmax(t, -1).numpy(), F.log_softmax(t, -1).numpy()

    native, plain = _both(run, monkeypatch)
    for a, b in zip(native, plain):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_array_equal(np.isneginf(a), np.isneginf(b))
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    assert np.isnan(native[0][:3]).all() and not np.isnan(native[0][3:]).any()
    np.testing.assert_array_equal(native[0][3, :6], np.zeros(6, np.float32))


def test_softmax_along_another_dim_or_strided_uses_numpy_and_agrees(monkeypatch):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 7, 9)).astype(np.float32)

    def run():
        t = ember.tensor(x)
        return (F.softmax(t, 1).numpy(), F.softmax(t.transpose(1, 2), -1).numpy(),
                F.log_softmax(t[..., ::2], -1).numpy())

    native, plain = _both(run, monkeypatch)
    for a, b in zip(native, plain):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(native[0].sum(1), np.ones((6, 9)), rtol=1e-6)


def test_softmax_rows_split_over_threads_equal_one_thread():
    x = np.random.default_rng(9).standard_normal((5000, 40)).astype(np.float32)
    before = ember.get_num_threads()
    try:
        got = []
        for n in (1, 2):
            ember.set_num_threads(n)
            t = ember.tensor(x, requires_grad=True)
            y = F.softmax(t, -1)
            (y * ember.tensor(x)).sum().backward()
            got.append((y.detach().numpy(), t.grad.numpy()))
    finally:
        ember.set_num_threads(before)
    for a, b in zip(*got):
        np.testing.assert_array_equal(a, b)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # NumPy's, on the NaN row
def test_layer_norm_native_constant_rows_nan_and_a_strided_input(monkeypatch):
    x = np.ones((6, 10), np.float32) * 7
    x[1] = np.arange(10)
    x[2, 3] = np.nan
    x[3, 0] = np.inf

    def run():
        t = ember.tensor(x)
        return (F.layer_norm(t, (10,), eps=1e-5).numpy(),
                F.layer_norm(ember.tensor(x.T.copy()).t(), (10,)).numpy(),
                F.layer_norm(t[:, ::2], (5,)).numpy())

    native, plain = _both(run, monkeypatch)
    for a, b in zip(native, plain):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(native[0][0], np.zeros(10, np.float32))


# -- the LSTM time step --------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["padded", "packed", "bidirectional", "states", "proj",
                                  "dropout-free 3 layers", "padded bidirectional"])
def test_lstm_native_steps_equal_numpy(monkeypatch, kind):
    ember.manual_seed(7)
    kw = {}
    if "bidirectional" in kind:
        kw["bidirectional"] = True
    if kind == "proj":
        kw["proj_size"] = 5
    layers = 3 if kind.startswith("dropout") else 2
    lstm = ember.nn.LSTM(6, 12, num_layers=layers, **kw)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((9, 4, 6)).astype(np.float32)

    def run():
        lstm.zero_grad()
        t = ember.tensor(x, requires_grad=True)
        inp = t
        if kind in ("packed", "bidirectional"):
            inp = ember.nn.utils.rnn.pack_padded_sequence(t, [9, 7, 7, 2])
        state = None
        if kind == "states":
            state = (ember.tensor(rng.standard_normal((layers, 4, 12)).astype(np.float32)),
                     ember.tensor(rng.standard_normal((layers, 4, 12)).astype(np.float32)))
        out, (h, c) = lstm(inp, state)
        if kind in ("packed", "bidirectional"):
            out = ember.nn.utils.rnn.pad_packed_sequence(out)[0]
        (out.square().sum() + h.sum() * 0.3 + c.square().sum() * 0.2).backward()
        return (out.detach().numpy(), h.detach().numpy(), c.detach().numpy(), t.grad.numpy(),
                *[p.grad.numpy() for p in lstm.parameters()])

    rng_state = rng.bit_generator.state
    native = run()
    rng.bit_generator.state = rng_state
    monkeypatch.setenv("EMBER_NATIVE", "0")
    plain = run()
    assert len(native) == len(plain)
    for a, b in zip(native, plain):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)


def test_numpy_openblas_sgemm_is_found_where_numpy_ships_one():
    """NumPy's wheels link scipy-openblas (64-bit integers): its cblas_sgemm is what the
    whole-sequence LSTM kernels call, and it multiplies as NumPy's matmul does."""
    if np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"] != "scipy-openblas":
        pytest.skip("NumPy is not linked against scipy-openblas here")
    found = _native.blas_sgemm()
    assert found is not None and found[0] and found[1] in (0, 1)
    assert _native.blas_sgemm() is found  # looked up once


@pytest.mark.parametrize("kind", ["forward", "bidirectional", "states", "last step only"])
def test_lstm_sequence_kernels_equal_the_step_loop(monkeypatch, kind):
    """The whole-sequence native loop (each step's product through NumPy's OpenBLAS from C)
    against the per-step Python loop over the same native gate kernels: same arithmetic,
    forward and backward, either direction, with and without a gradient of every output."""
    from ember.nn.modules import rnn

    if _native.blas_sgemm() is None:
        pytest.skip("no OpenBLAS cblas_sgemm to call here")
    ember.manual_seed(3)
    lstm = ember.nn.LSTM(5, 16, num_layers=2, bidirectional=kind == "bidirectional",
                         batch_first=True)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 7, 5)).astype(np.float32)
    d = 2 if kind == "bidirectional" else 1
    h0 = rng.standard_normal((2 * d, 3, 16)).astype(np.float32)
    c0 = rng.standard_normal((2 * d, 3, 16)).astype(np.float32)
    calls = []
    seq = rnn._lstm_fwd_sequence

    def counted(*args):
        calls.append(1)
        return seq(*args)

    monkeypatch.setattr(rnn, "_lstm_fwd_sequence", counted)

    def run():
        lstm.zero_grad()
        t = ember.tensor(x, requires_grad=True)
        state = (ember.tensor(h0), ember.tensor(c0)) if kind == "states" else None
        out, (h, c) = lstm(t, state)
        loss = out[:, -1].sum() if kind == "last step only" else (
            out.square().sum() + h.sum() * 0.3 + c.square().sum() * 0.2)
        loss.backward()
        return (out.detach().numpy(), h.detach().numpy(), c.detach().numpy(), t.grad.numpy(),
                *[p.grad.numpy() for p in lstm.parameters()])

    whole = run()  # kernels.c's own products where built with AVX-512, else OpenBLAS's
    assert len(calls) == 2 * d
    native_kernel = rnn.api.native_kernel
    monkeypatch.setattr(rnn.api, "native_kernel", lambda name: (
        (lambda: 0) if name == "ember_panel_gemm_available" else native_kernel(name)))
    blas = run()  # OpenBLAS's products
    assert len(calls) == 4 * d
    monkeypatch.setattr(rnn.api, "blas_sgemm", lambda: None)
    steps = run()
    assert len(calls) == 4 * d  # the last run took the per-step loop
    for a, b, c in zip(whole, blas, steps):
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b, c, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("M,N,K", [(16, 512, 128), (16, 128, 512), (1, 1, 1), (7, 33, 5),
                                   (9, 17, 300), (17, 64, 257), (3, 95, 600)])
@pytest.mark.parametrize("accumulate", [False, True])
def test_panel_gemm_equals_a_float64_product(M, N, K, accumulate):
    """kernels.c's own AVX-512 product (the LSTM loop's): every row tile size (1-8), partial
    last panels (N not a multiple of 32), several K blocks of 256, with and without adding
    to the output."""
    from ember.nn.modules.rnn import _packed_blocks

    if not _native.kernel("ember_panel_gemm_available")():
        pytest.skip("kernels.c was built without AVX-512 here")
    rng = np.random.default_rng(M * N + K)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = rng.standard_normal((M, N)).astype(np.float32)
    want = a.astype(np.float64) @ b + (c if accumulate else 0)
    panels, _ = _packed_blocks(b, M, True)
    guard = np.full((M + 1, N), 7.0, np.float32)  # a row past the output stays untouched
    guard[:M] = c
    _native.kernel("ember_panel_gemm_f32")(_native.address(a), _native.address(panels),
                                           _native.address(guard), M, N, K, int(accumulate))
    np.testing.assert_allclose(guard[:M], want, rtol=1e-5, atol=2e-5 * np.sqrt(K))
    assert (guard[M] == 7.0).all()


@pytest.mark.parametrize("case", ["states", "no states", "h only", "c only", "wide",
                                  "specials"])
def test_lstm_cell_float64_is_the_numpy_formulation_bit_for_bit(monkeypatch, native_calls,
                                                                case):
    # the float64 cell step in one pass (kernels.c, NumPy's own tanh loop): the NumPy
    # formulation's operations in its order, so its bits, forward and backward
    B, I, H = (97, 51, 51) if case == "wide" else (7, 5, 6)
    ember.manual_seed(3)
    cell = ember.nn.LSTMCell(I, H).double()
    rng = np.random.default_rng(5)
    x, h0, c0, wh, wc = (rng.standard_normal(s) for s in ((B, I),) + ((B, H),) * 4)
    if case == "specials":  # saturated gates, signed zeros, an infinite and a NaN state
        x[0] = 40.0
        x[1] = -40.0
        c0[2, :3] = (-0.0, np.inf, np.nan)
        h0[3] = -0.0

    def run():
        xt = ember.tensor(x, requires_grad=True)
        state = None if case == "no states" else (ember.tensor(h0, requires_grad=True),
                                                  ember.tensor(c0, requires_grad=True))
        cell.zero_grad()
        h, c = cell(xt, state)
        loss = 0
        if case != "c only":
            loss = loss + (h * ember.tensor(wh)).sum()
        if case != "h only":
            loss = loss + (c * ember.tensor(wc)).sum()
        loss.backward()
        grads = [xt.grad] + ([] if state is None else [s.grad for s in state])
        return [t.detach().numpy().copy() for t in [h, c, *grads]] + \
            [p.grad.numpy().copy() for p in cell.parameters()]

    native, plain = _both(run, monkeypatch)
    assert "ember_lstm_cell_f64" in native_calls and "ember_lstm_cell_backward_f64" in native_calls
    for a, b in zip(native, plain, strict=True):
        assert a.view(np.uint64).tolist() == b.view(np.uint64).tolist()


def test_lstm_native_backward_kernel_alone():
    """One backward step of the kernel against its NumPy formula, with and without dy."""
    rng = np.random.default_rng(2)
    bs, H = 3, 5
    A = rng.uniform(0.05, 0.95, (bs, 4 * H)).astype(np.float32)
    A[:, 2 * H:3 * H] = rng.uniform(-0.9, 0.9, (bs, H))
    dh, dy, cp = (rng.standard_normal((bs, H)).astype(np.float32) for _ in range(3))
    tc = rng.uniform(-0.9, 0.9, (bs, H)).astype(np.float32)
    i, f, g, o = (A[:, k * H:(k + 1) * H].astype(np.float64) for k in range(4))
    fn = _native.kernel("ember_lstm_gates_backward_f32")
    for with_dy in (False, True):
        dc = rng.standard_normal((bs, H)).astype(np.float32)
        dc0 = dc.astype(np.float64)
        dg = np.empty((bs, 4 * H), np.float32)
        fn(dh.ctypes.data, dy.ctypes.data if with_dy else None, A.ctypes.data, tc.ctypes.data,
           cp.ctypes.data, dc.ctypes.data, dg.ctypes.data, bs, H)
        dm = (dh + dy if with_dy else dh).astype(np.float64)
        dcs = dm * o * (1 - tc.astype(np.float64) ** 2) + dc0
        want = np.concatenate([dcs * g * i * (1 - i), dcs * cp * f * (1 - f),
                               dcs * i * (1 - g * g), dm * tc * o * (1 - o)], axis=1)
        np.testing.assert_allclose(dg, want, rtol=2e-6, atol=1e-7)
        np.testing.assert_allclose(dc, dcs * f, rtol=2e-6, atol=1e-7)


def test_lstm_gate_activations_alone():
    """The gate kernel's sigmoid/tanh against float64 over a wide range (tanh's odd polynomial
    below 0.625 keeps small values' relative precision)."""
    bs, H = 2, 400
    pre = np.concatenate([np.linspace(-30, 30, 4 * H), np.linspace(-1e-3, 1e-3, 4 * H)])
    a = pre.reshape(bs, 4 * H).astype(np.float32)
    a0 = a.astype(np.float64)
    cp = np.full((bs, H), 0.5, np.float32)
    c, tc, m = (np.empty((bs, H), np.float32) for _ in range(3))
    _native.kernel("ember_lstm_gates_f32")(a.ctypes.data, cp.ctypes.data, c.ctypes.data,
                                            tc.ctypes.data, m.ctypes.data, bs, H)
    sig = 1 / (1 + np.exp(-2 * a0))
    act = sig.copy()
    act[:, 2 * H:3 * H] = np.tanh(a0[:, 2 * H:3 * H])
    np.testing.assert_allclose(a, act, rtol=4e-7, atol=1e-30)
    c_ref = act[:, H:2 * H] * 0.5 + act[:, :H] * act[:, 2 * H:3 * H]
    np.testing.assert_allclose(c, c_ref, rtol=1e-6)
    np.testing.assert_allclose(tc, np.tanh(c.astype(np.float64)), rtol=4e-7)
    np.testing.assert_allclose(m, act[:, 3 * H:] * tc, rtol=4e-7)


# -- Adam ----------------------------------------------------------------------------------------

def _optimizer_steps(make_opt, float64=False):
    """Four steps of ``make_opt(params)`` on a parameter over two threads' grains (odd-sized),
    one with a non-contiguous gradient and, with ``float64``, one the NumPy passes take; the
    gradients hold an inf. Returns ``(params, opt)``."""
    n = 300_001
    grads = np.random.default_rng(1).standard_normal((4, n)).astype(np.float32)
    grads[2, 7] = np.inf
    p = ember.nn.Parameter(ember.tensor(
        np.random.default_rng(5).standard_normal(n).astype(np.float32)))
    q = ember.nn.Parameter(ember.tensor(np.ones((3, 4), np.float32)))
    params = [p, q] + ([ember.nn.Parameter(ember.tensor(np.ones(5)))] if float64 else [])
    opt = make_opt(params)
    for g in grads:
        p.grad = ember.tensor(g)
        q.grad = ember.tensor(g[:12].reshape(4, 3).T)
        if float64:
            params[2].grad = ember.tensor(g[:5].astype(np.float64))
        opt.step()
    return params, opt


def _bit_identical_on_two_threads(run, monkeypatch):
    """``run()``'s arrays with the native kernels (two threads) equal the NumPy passes'."""
    threads = ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        native, plain = _both(run, monkeypatch)
    finally:
        ember.set_num_threads(threads)
    assert len(native) == len(plain)
    for a, b in zip(native, plain):
        np.testing.assert_array_equal(a, b)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # NumPy's, on the inf
@pytest.mark.parametrize("options", [{}, {"amsgrad": True}, {"weight_decay": 0.1},
                                     {"maximize": True}, {"adamw": True, "weight_decay": 0.1},
                                     {"betas": (0.3, 0.9)}, {"betas": (0.5, 0.999)}])
def test_adam_native_step_is_bit_identical_to_numpy(monkeypatch, options):
    options = dict(options)
    cls = ember.optim.AdamW if options.pop("adamw", False) else ember.optim.Adam

    def run():
        (p, q), opt = _optimizer_steps(lambda params: cls(params, lr=1e-2, **options))
        st = opt.state[p]
        return [p.detach().numpy(), q.detach().numpy(), st["exp_avg"].numpy(),
                st["exp_avg_sq"].numpy()] + ([st["max_exp_avg_sq"].numpy()]
                                             if options.get("amsgrad") else [])

    _bit_identical_on_two_threads(run, monkeypatch)


# -- SGD -----------------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # NumPy's, on the inf
@pytest.mark.parametrize("options", [{}, {"momentum": 0.9}, {"momentum": 0.9, "nesterov": True},
                                     {"momentum": 0.9, "dampening": 0.3},
                                     {"momentum": 0.5, "weight_decay": 0.1},
                                     {"weight_decay": 0.1}, {"maximize": True},
                                     {"momentum": 0.9, "maximize": True, "weight_decay": 1e-2},
                                     {"weight_decay": 1e-50}])  # 0 in float32, not in Python
def test_sgd_native_step_is_bit_identical_to_numpy(monkeypatch, options):
    def run():
        params, opt = _optimizer_steps(
            lambda params: ember.optim.SGD(params, lr=1e-2, **options), float64=True)
        out = [t.detach().numpy() for t in params]
        if options.get("momentum"):
            out += [opt.state[t]["momentum_buffer"].numpy() for t in params]
        else:
            assert not opt.state[params[0]]
        return out

    _bit_identical_on_two_threads(run, monkeypatch)


def test_functional_sgd_fills_the_callers_new_buffers_beside_native_ones():
    """ember.optim.sgd with one parameter's buffer already there (the native pass) and one
    still None (its first step, the NumPy passes): the new buffer lands in the caller's list."""
    p = ember.tensor(np.ones(4, np.float32))
    q = ember.tensor(np.ones(3, np.float32))
    g = ember.tensor(np.full(4, 2, np.float32))
    h = ember.tensor(np.full(3, 4, np.float32))
    bufs = [ember.tensor(np.ones(4, np.float32)), None]
    ember.optim.sgd.sgd([p, q], [g, h], bufs, weight_decay=0, momentum=0.5, lr=0.1, dampening=0,
                    nesterov=False, maximize=False)
    np.testing.assert_allclose(bufs[0].numpy(), 2.5)
    np.testing.assert_array_equal(bufs[1].numpy(), h.numpy())
    np.testing.assert_allclose(p.numpy(), 0.75)
    np.testing.assert_allclose(q.numpy(), 0.6)


# -- BERT's feed-forward bias + GELU, fused at inference ------------------------------------------

def test_bert_bias_gelu_fusion_equals_the_two_ops(monkeypatch):
    from ember.text.models import bert

    ember.manual_seed(0)
    dense = ember.nn.Linear(48, 192)
    x = ember.randn(3, 700, 48)
    threads = ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        with ember.no_grad():
            fused = bert._bias_gelu_inference(dense, F.gelu, x)
            plain = F.gelu(dense(x))
    finally:
        ember.set_num_threads(threads)
    assert fused is not None and fused.shape == (3, 700, 192)
    np.testing.assert_array_equal(fused.numpy(), plain.numpy())  # same sum, same kernel
    # not taken where a graph is wanted, for another activation, another dtype, or no kernel
    assert bert._bias_gelu_inference(dense, F.gelu, x) is None  # grad mode on
    with ember.no_grad():
        assert bert._bias_gelu_inference(dense, F.relu, x) is None
        assert bert._bias_gelu_inference(dense.double(), F.gelu, x.double()) is None
        monkeypatch.setenv("EMBER_NATIVE", "0")
        assert bert._bias_gelu_inference(dense.float(), F.gelu, x) is None
        monkeypatch.delenv("EMBER_NATIVE")
        # a capture must see the bias add and GELU as ops: compiled equals eager
        inter = bert.BertIntermediate(bert.BertConfig(hidden_size=48, intermediate_size=192,
                                                      hidden_act="gelu"))
        eager = inter(x)
        compiled = ember.compile(inter)
        np.testing.assert_allclose(compiled(x).numpy(), eager.numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(compiled(x).numpy(), eager.numpy(), rtol=1e-6, atol=1e-6)
        ep = ember.export.export(inter, (x,))
        assert "gelu" in str(ep.graph)
        np.testing.assert_allclose(ep.module()(x).numpy(), eager.numpy(), rtol=1e-6, atol=1e-6)


# -- max pooling's training path ------------------------------------------------------------------

@pytest.mark.parametrize("shape,kernel,stride,dilation", [
    ((8, 6, 24, 24), 2, 2, 1), ((4, 3, 11, 13), 3, 2, 1), ((4, 3, 11, 13), 3, 1, 2),
    # 2x2 stride 2 (the native forward): 8-window vectors and a scalar tail, odd sizes (the
    # last row and column read by no window), rows shorter than a vector
    ((2, 3, 28, 28), 2, 2, 1), ((2, 3, 35, 37), 2, None, 1), ((2, 4, 10, 10), 2, 2, 1),
    ((3, 9, 9), (2, 3), (1, 2), 1), ((2, 5, 17), 3, 2, 1), ((2, 5, 17), 2, None, 1)])
def test_max_pool_native_equals_numpy(monkeypatch, shape, kernel, stride, dilation):
    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape).astype(np.float32)
    x[..., 0] = x[..., 1]  # ties: the first maximum wins
    if shape[-2] > 5:
        x[..., 3, :] = x[..., 2, :]  # along columns too
        x[..., 4, 5:9] = x[..., 5, 5:9] = x[..., 4, 4, None]  # windows of equal values
    one_d = len(shape) == 3 and not isinstance(kernel, tuple)
    pool = F.max_pool1d if one_d else F.max_pool2d
    y_shape = pool(ember.tensor(x), kernel, stride, 0, dilation).shape
    g = rng.standard_normal(y_shape).astype(np.float32)

    def run():
        t = ember.tensor(x, requires_grad=True)
        gt = ember.tensor(g, requires_grad=True)
        y = pool(t, kernel, stride, 0, dilation)
        (gx,) = ember.autograd.grad(y, t, gt, create_graph=True)
        (gg,) = ember.autograd.grad(gx, gt, ember.tensor(x * 3))  # the double backward
        return y.detach().numpy(), gx.detach().numpy(), gg.numpy()

    (yn, gn, ggn), (yp, gp, ggp) = _both(run, monkeypatch)
    np.testing.assert_array_equal(yn, yp)
    disjoint = (stride or kernel) == kernel and dilation == 1
    if disjoint:
        np.testing.assert_array_equal(gn, gp)
    else:  # overlapping windows sum in another order
        np.testing.assert_allclose(gn, gp, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(ggn, ggp)


def test_max_pool_native_is_not_used_with_padding_nan_or_indices(native_calls):
    x = ember.randn(2, 3, 8, 8, requires_grad=True)
    F.max_pool2d(x, 2, padding=1).sum().backward()
    F.max_pool2d(x, 2, return_indices=True)[0].sum().backward()
    x2 = ember.tensor(np.where(np.eye(8, dtype=bool), np.nan, 1.0).astype(np.float32)[None, None],
                      requires_grad=True)
    F.max_pool2d(x2, 2).sum().backward()
    F.max_pool3d(ember.randn(1, 1, 4, 4, 4, requires_grad=True), 2).sum().backward()
    assert "ember_max_pool2d_backward_f32" not in native_calls
    assert "ember_max_pool2x2_forward_f32" not in native_calls
    F.max_pool2d(x, 2).sum().backward()
    assert "ember_max_pool2d_backward_f32" in native_calls
    assert "ember_max_pool2x2_forward_f32" in native_calls


# -- col2im (a convolution's input gradient in the flat layout) ---------------------------------

@pytest.mark.parametrize("geometry", [
    dict(x=(64, 6, 14, 14), w=(16, 6, 5, 5)),  # LeNet's 6 -> 16 conv: col2im, no wrap
    dict(x=(3, 5, 9, 11), w=(7, 5, 3, 4), dilation=(2, 1)),
    dict(x=(2, 4, 7, 7), w=(6, 2, 3, 3), groups=2, padding=(2, 0)),
    dict(x=(2, 3, 5, 6, 6), w=(4, 3, 2, 3, 3)),  # 3-d
])
def test_col2im_native_equals_numpy(monkeypatch, native_calls, geometry):
    """The input gradient through the native col2im equals NumPy's per-tap adds (the same
    float32 sums in the same order: exactly), and PyTorch's to float32 rounding. (LeNet's
    conv goes through the direct kernels now, tests/core/test_native_conv.py: off here.)"""
    from ember.ops import _conv_kernels

    monkeypatch.setattr(_conv_kernels, "_DIRECT", False)
    geometry = dict(geometry)
    rng = np.random.default_rng(5)
    x = rng.standard_normal(geometry.pop("x")).astype(np.float32)
    w = rng.standard_normal(geometry.pop("w")).astype(np.float32)
    conv = F.conv3d if x.ndim == 5 else F.conv2d

    def run():
        xt = ember.tensor(x, requires_grad=True)
        y = conv(xt, ember.tensor(w), **geometry)
        y.backward(ember.tensor(np.linspace(-1, 1, y.numel(), dtype=np.float32)
                                .reshape(tuple(y.shape))))
        return xt.grad.numpy()

    native, plain = _both(run, monkeypatch)
    if x.shape == (64, 6, 14, 14):
        assert "ember_col2im_flat_f32" in native_calls
    np.testing.assert_array_equal(native, plain)
    torch = pytest.importorskip("torch")
    xt = torch.tensor(x, requires_grad=True)
    y = getattr(torch.nn.functional, conv.__name__)(xt, torch.tensor(w), **geometry)
    y.backward(torch.tensor(np.linspace(-1, 1, y.numel(), dtype=np.float32)).reshape(y.shape))
    np.testing.assert_allclose(native, xt.grad.numpy(), rtol=1e-4, atol=1e-4)


# -- erfinv (trunc_normal_'s inverse CDF) ---------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(), (5,), (3, 200001)])
def test_erfinv_native_equals_numpy(monkeypatch, dtype, shape):
    rng = np.random.default_rng(3)
    y = rng.uniform(-1, 1, shape).astype(dtype)
    if y.size > 20:
        tiny = 1e-7 if dtype == np.float32 else 1e-15
        y.flat[:12] = [1, -1, 0, -0.0, 1.5, -3, np.nan, 1 - tiny, -(1 - tiny), 0.7, -0.7, 1e-30]
    yt = ember.tensor(y)
    native, plain = _both(lambda: ember.erfinv(yt).numpy(), monkeypatch)
    assert native.dtype == plain.dtype == dtype and native.shape == shape
    np.testing.assert_array_equal(np.isnan(native), np.isnan(plain))
    np.testing.assert_array_equal(native[np.isinf(plain)], plain[np.isinf(plain)])
    np.testing.assert_array_equal(np.signbit(native), np.signbit(plain))  # -0.0 stays -0.0
    ok = np.isfinite(plain)
    # libm's erf/erfc against Cody's rationals, two Newton steps (one for float32)
    np.testing.assert_array_max_ulp(native[ok], plain[ok], maxulp=2 if dtype == np.float32 else 16)


def test_erfinv_native_against_the_definition():
    y = np.linspace(-0.999999, 0.999999, 100001)
    x = ember.erfinv(ember.tensor(y)).numpy()
    back = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(back, y, rtol=4e-16, atol=2e-16)
    y32 = y.astype(np.float32)
    x32 = ember.erfinv(ember.tensor(y32)).numpy()
    exact = ember.erfinv(ember.tensor(y32.astype(np.float64))).numpy()
    np.testing.assert_array_max_ulp(x32, exact.astype(np.float32), maxulp=1)


def test_erfinv_uses_the_native_kernel(native_calls):
    # (nn.init.trunc_normal_ used it too; it is now PyTorch 2.13's rejection sampler)
    x = ember.rand(64, 64) * 1.8 - 0.9
    y = ember.erfinv(x)
    assert "ember_erfinv_f32" in native_calls
    assert float((ember.erf(y) - x).abs().max()) < 1e-5
    w = ember.nn.init.trunc_normal_(ember.empty(64, 64), std=0.02)
    assert float(w.abs().max()) <= 2.0 and abs(float(w.std()) - 0.02) < 0.003


# -- batch norm's training forward and backward ---------------------------------------------------

@pytest.mark.parametrize("shape", [(32, 16, 32, 32), (4, 3, 5), (8, 5), (2, 7, 3, 4, 5)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_native_equals_numpy_and_pytorch(monkeypatch, native_calls, shape, affine):
    """Three passes forward and two backward in C (sums in double): the NumPy formulation's
    values to float32 rounding, and PyTorch's."""
    rng = np.random.default_rng(6)
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    w = np.linspace(0.5, 1.5, shape[1]).astype(np.float32)
    b = np.linspace(-1, 1, shape[1]).astype(np.float32)

    def run(lib=ember):
        cls = {2: lib.nn.BatchNorm1d, 3: lib.nn.BatchNorm1d, 4: lib.nn.BatchNorm2d,
               5: lib.nn.BatchNorm3d}[len(shape)]
        bn = cls(shape[1], affine=affine)
        if affine:
            with lib.no_grad():
                bn.weight.copy_(lib.tensor(w))
                bn.bias.copy_(lib.tensor(b))
        xt = lib.tensor(x, requires_grad=True)
        y = bn(xt)
        y.backward(lib.tensor(g))
        out = [y.detach().numpy(), xt.grad.numpy(), bn.running_mean.numpy(),
               bn.running_var.numpy()]
        return out + ([bn.weight.grad.numpy(), bn.bias.grad.numpy()] if affine else [])

    native, plain = _both(run, monkeypatch)
    assert "ember_batch_norm_f32" in native_calls
    assert "ember_batch_norm_backward_f32" in native_calls
    n = x.size // shape[1]
    for a, p, tol in zip(native, plain, (1e-5, 1e-5, 1e-6, 1e-5, 2e-6 * n, 2e-6 * n)):
        np.testing.assert_allclose(a, p, rtol=1e-5, atol=tol)
    torch = pytest.importorskip("torch")
    for a, t, tol in zip(native, run(torch), (1e-5, 1e-5, 1e-6, 1e-5, 2e-6 * n, 2e-6 * n)):
        np.testing.assert_allclose(a, t, rtol=1e-5, atol=tol)


def test_batch_norm_native_threads_nan_and_what_stays_numpy(native_calls):
    """The channels split over threads gives the bits of one thread; a NaN poisons its own
    channel only; eval mode, float64, instance norm and a non-contiguous input keep NumPy."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((16, 64, 16, 16)).astype(np.float32)
    x[3, 5, 2, 2] = np.nan
    g = ember.tensor(rng.standard_normal(x.shape).astype(np.float32))

    def run():
        xt = ember.tensor(x, requires_grad=True)
        y = F.batch_norm(xt, None, None, training=True)
        y.backward(g)
        return y.detach().numpy(), xt.grad.numpy()

    one, two = on_one_and_two_threads(run)
    for a, t in zip(one, two):
        np.testing.assert_array_equal(a, t)
    assert np.isnan(one[0][:, 5]).all() and not np.isnan(np.delete(one[0], 5, axis=1)).any()
    native_calls.clear()
    xt = ember.tensor(x, requires_grad=True)
    F.batch_norm(xt, ember.zeros(64), ember.ones(64), training=False).sum().backward()
    F.batch_norm(xt.double(), None, None, training=True).sum().backward()
    F.instance_norm(xt).sum().backward()
    F.batch_norm(xt.transpose(2, 3), None, None, training=True).sum().backward()
    assert not [c for c in native_calls if c.startswith("ember_batch_norm")]


# -- relu's backward -------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_threshold_backward_selects_as_pytorch(native_calls, dtype):
    """``x <= t ? 0 : g``: a masked infinite or NaN gradient is 0 (a product made it NaN), a
    NaN input passes its gradient; native for contiguous float32, a NumPy select otherwise."""
    x = np.array([-1.0, 0.0, 2.0, np.nan, -3.0, 4.0] * 50000, dtype=dtype)
    g = np.array([np.inf, np.nan, -1.0, 5.0, -2.0, np.inf] * 50000, dtype=dtype)
    xt = ember.tensor(x, requires_grad=True)
    xt.relu().backward(ember.tensor(g))
    want = np.where(x <= 0, 0, g)
    np.testing.assert_array_equal(xt.grad.numpy(), want)
    assert not np.signbit(xt.grad.numpy()[x <= 0]).any()
    assert ("ember_threshold_backward_f32" in native_calls) == (dtype == np.float32)
    xt.grad = None
    F.threshold(xt, 1.5, 0.0).backward(ember.tensor(g))
    np.testing.assert_array_equal(xt.grad.numpy(), np.where(x <= 1.5, 0, g))
    torch = pytest.importorskip("torch")
    tx = torch.tensor(x[:12], requires_grad=True)
    tx.relu().backward(torch.tensor(g[:12]))
    np.testing.assert_array_equal(want[:12], tx.grad.numpy())


# -- column sums (a bias's gradient), tanh's backward, an embedding's gradient ---------------------

def _bits(a):
    return np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(2, 3), (512, 64), (7, 130), (512, 27), (8, 40000),
                                   (4, 9, 70), (2, 1, 5)])
def test_column_sums_are_numpys_bits(native_calls, dtype, shape):
    """``sum`` over every axis but the last, in one native pass: NumPy's row-by-row sums bit
    for bit (magnitudes spread over 12 decades so the order shows; -0.0, inf, NaN, overflow),
    keepdim's shape, the columns split over two threads where many."""
    rng = np.random.default_rng(1)
    d = (rng.standard_normal(shape) * 10.0 ** rng.uniform(-6, 6, shape)).astype(dtype)
    d.reshape(-1, shape[-1])[:, 0] = -0.0
    if shape[-1] > 3:
        d.reshape(-1, shape[-1])[0, 1:4] = [np.inf, np.nan, np.finfo(dtype).max]
        d.reshape(-1, shape[-1])[1, 3] = np.finfo(dtype).max
    dims = tuple(range(len(shape) - 1))
    t = ember.from_numpy(d)
    for keepdim in (False, True):
        with np.errstate(over="ignore"):
            want = np.add.reduce(d, axis=dims, keepdims=keepdim)
        for got in on_one_and_two_threads(lambda k=keepdim: t.sum(dims, keepdim=k).numpy()):
            assert got.shape == want.shape
            np.testing.assert_array_equal(_bits(got), _bits(want))
    assert f"ember_column_sums_{'f32' if dtype == np.float32 else 'f64'}" in native_calls


def test_column_sums_leave_other_sums_to_numpy(native_calls):
    """Only C-contiguous float arrays of two rows or more, over all leading axes."""
    d = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    ember.from_numpy(d).sum(1)
    ember.from_numpy(d).sum((0, 2))
    ember.from_numpy(d.transpose(1, 0, 2)).sum((0, 1))
    ember.from_numpy(d.astype(np.int64)).sum((0, 1))
    ember.from_numpy(d[:1, :1]).sum((0, 1))
    ember.from_numpy(np.zeros((0, 4), np.float32)).sum(0)
    assert not [c for c in native_calls if c.startswith("ember_column_sums")]
    assert _native.column_sums(np.ones((1, 4), np.float32)) is None
    assert _native.column_sums(np.ones((3, 4), np.float16)) is None
    np.testing.assert_array_equal(ember.from_numpy(d[:1, :1]).sum((0, 1)).numpy(), d[0, 0])


def test_linear_bias_gradient_takes_the_column_sums(native_calls):
    x = ember.randn(64, 16, 32, requires_grad=True)
    layer = ember.nn.Linear(32, 48)
    layer(x).backward(ember.ones(64, 16, 48) * 0.5)
    assert "ember_column_sums_f32" in native_calls
    np.testing.assert_array_equal(layer.bias.grad.numpy(), np.full(48, 512.0, np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tanh_backward_is_the_three_ops_bits(native_calls, dtype):
    """One pass of ``g * (1 - y * y)``, each step rounded as NumPy's passes round it (no fused
    multiply-add): the same bits at one and two threads; under create_graph the ops, so the
    second derivative exists."""
    rng = np.random.default_rng(2)
    n = 3 * _native.POINTWISE_GRAIN + 5
    x = (rng.standard_normal(n) * 3).astype(dtype)
    x[:4] = [0.0, -0.0, np.inf, np.nan]
    g = rng.standard_normal(n).astype(dtype)
    g[4:6] = [np.inf, np.nan]
    y = np.tanh(x)
    with np.errstate(invalid="ignore"):
        want = g * (1 - y * y)
    def grad():
        xt = ember.from_numpy(x).requires_grad_()
        xt.tanh().backward(ember.from_numpy(g))
        return xt.grad.numpy()

    for got in on_one_and_two_threads(grad):
        np.testing.assert_array_equal(_bits(got), _bits(want))
    assert f"ember_tanh_backward_{'f32' if dtype == np.float32 else 'f64'}" in native_calls
    xs = ember.tensor([0.3, -1.2], dtype=ember.float64, requires_grad=True)
    (gx,) = ember.autograd.grad(xs.tanh().sum(), xs, create_graph=True)
    gx.sum().backward()
    t = np.tanh(np.array([0.3, -1.2]))
    np.testing.assert_allclose(xs.grad.numpy(), -2 * t * (1 - t * t), rtol=1e-12)


@pytest.mark.parametrize("padding_idx", [None, 3])
@pytest.mark.parametrize("num", [27, 5000])
def test_embedding_gradient_native_equals_the_bincount(monkeypatch, padding_idx, num):
    """Few rows: one pass summing rows in float64 in index order, the bincount's additions
    (the same bits); many rows (a big vocabulary) keep the sums over the distinct rows."""
    rng = np.random.default_rng(3)
    idx = rng.integers(0, min(num, 27), (32, 16))
    g = (rng.standard_normal((32, 16, 64)) * 10.0 ** rng.uniform(-4, 4, (32, 16, 64)))
    g = g.astype(np.float32)

    def run():
        emb = ember.nn.Embedding(num, 64, padding_idx=padding_idx)
        emb(ember.from_numpy(idx)).backward(ember.from_numpy(g))
        return emb.weight.grad.numpy()

    native, plain = _both(run, monkeypatch)
    np.testing.assert_array_equal(_bits(native), _bits(plain))
    monkeypatch.setattr(_native, "embedding_grad", lambda *args: None)
    np.testing.assert_array_equal(_bits(run()), _bits(native))  # the bincount itself
    want = np.zeros((num, 64))
    np.add.at(want, idx.reshape(-1), g.reshape(-1, 64).astype(np.float64))
    if padding_idx is not None:
        want[padding_idx] = 0
    np.testing.assert_array_equal(native, want.astype(np.float32))


# -- bfloat16 linear of a few rows ---------------------------------------------------------------

@pytest.mark.parametrize("rows,k,n,bias", [((1,), 1024, 1024, False), ((3,), 64, 100, True),
                                           ((2, 8), 33, 300, True), ((16,), 7, 5, False),
                                           ((1,), 4096, 17, True)])
def test_bfloat16_linear_of_few_rows_reads_the_weight_as_bfloat16(rows, k, n, bias, monkeypatch):
    # each output one float32 sum rounded to bfloat16 once, as the float32 BLAS formulation:
    # the two agree to one bfloat16 rounding step where their sums' order differs
    rng = np.random.default_rng(0)
    x = ember.from_numpy(rng.standard_normal(rows + (k,)).astype(np.float32)).bfloat16()
    w = ember.from_numpy(rng.standard_normal((n, k)).astype(np.float32)).bfloat16()
    b = ember.from_numpy(rng.standard_normal(n).astype(np.float32)).bfloat16() if bias else None
    native, plain = _both(lambda: F.linear(x, w, b), monkeypatch)
    assert native.dtype == ember.bfloat16 and native.shape == rows + (n,)
    exact = x.double().numpy() @ w.double().numpy().T + (b.double().numpy() if bias else 0.0)
    got, ref = native.float().numpy(), plain.float().numpy()
    step = np.abs(ref) * 2.0 ** -7 + 1e-30  # one bfloat16 step
    assert (np.abs(got - ref) <= step).all()
    assert np.abs(got - exact).max() <= np.abs(ref - exact).max() + step.max()
    threads = on_one_and_two_threads(lambda: F.linear(x, w, b).float().numpy())
    assert np.array_equal(*threads)  # one in-order sum per output, however split


def test_bfloat16_linear_keeps_blas_beyond_a_few_rows_and_for_strided_weights():
    rng = np.random.default_rng(1)
    w = ember.from_numpy(rng.standard_normal((40, 64)).astype(np.float32)).bfloat16()
    x = ember.from_numpy(rng.standard_normal((17, 64)).astype(np.float32)).bfloat16()
    wide = (x.float().numpy() @ w.float().numpy().T)
    assert np.array_equal(F.linear(x, w).float().numpy(),
                          ember.from_numpy(wide).bfloat16().float().numpy())
    wt = ember.from_numpy(rng.standard_normal((64, 40)).astype(np.float32)).bfloat16().t()
    x1 = x[:1]
    wide = x1.float().numpy() @ wt.float().numpy().T
    assert np.array_equal(F.linear(x1, wt).float().numpy(),
                          ember.from_numpy(wide).bfloat16().float().numpy())
    y = F.linear(x1.requires_grad_(), w.requires_grad_())
    y.float().sum().backward()
    assert x1.grad.shape == x1.shape and w.grad.shape == w.shape


def test_bfloat16_widens_by_a_shift_to_ml_dtypes_bits():
    # _dtype.bf16_to_f32: each bfloat16 the upper half of its float32, NaN payloads too
    from ember import _dtype

    patterns = np.array([0x7FC1, 0xFFA0, 0x7F81, 0x8000, 0x0001, 0x3F80, 0xFF80], np.uint16)
    a = patterns.view(_dtype.BFLOAT16_NP)
    got = _dtype.bf16_to_f32(a)
    assert got.dtype == np.float32
    assert np.array_equal(got.view(np.uint32), a.astype(np.float32).view(np.uint32))
    strided = np.arange(24, dtype=np.float32).astype(_dtype.BFLOAT16_NP).reshape(4, 6)[:, ::2].T
    wide = _dtype.widen(strided)
    assert np.array_equal(wide, strided.astype(np.float32))
    assert wide.strides == strided.astype(np.float32).strides
