"""PyTorch's CPU random streams, bit for bit (ember/_torch_rng.py).

After ``manual_seed(s)``, the same sequence of random calls gives PyTorch's numbers: the
factories, the in-place samplers, dropout, the ``nn.init`` functions and the layers' own
initialisation, DataLoader's shuffling, and ``get_rng_state()`` (PyTorch's 5056-byte layout,
loadable by either library). Each program runs in both libraries when PyTorch is installed
and is compared exactly; a few are also pinned to PyTorch's printed values, so that the test
means something without it."""

import numpy as np
import pytest

import ember
from ember import _native
from ember._torch_rng import STATE_BYTES, TorchRNG


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _run(program, lib):
    lib.manual_seed(0)
    out = program(lib)
    if isinstance(out, (list, tuple)):
        return [o.tolist() if hasattr(o, "tolist") else o for o in out]
    return out.tolist() if hasattr(out, "tolist") else out


PROGRAMS = {
    "rand": lambda t: t.rand(5, 7),
    "rand float64": lambda t: t.rand(33, dtype=t.float64),
    "rand float16": lambda t: t.rand(40, dtype=t.float16),
    "rand bfloat16": lambda t: t.rand(40, dtype=t.bfloat16),
    "randn small": lambda t: [t.randn(3), t.randn(1), t.randn(2, dtype=t.float64)],
    "randn blocks": lambda t: t.randn(4, 9),
    "randn float64 blocks": lambda t: t.randn(37, dtype=t.float64),
    "randn_like": lambda t: t.randn_like(t.zeros(2, 20)),
    "normal_": lambda t: t.empty(50).normal_(0.5, 2.5),
    "normal_ transposed": lambda t: t.empty(8, 5).t().normal_(),
    "normal tensors": lambda t: t.normal(t.arange(20.0), t.ones(20) * 0.5),
    "uniform_": lambda t: t.empty(3, 30).uniform_(-0.37, 1.91),
    "uniform_ float64": lambda t: t.empty(30, dtype=t.float64).uniform_(-2.0, 3.0),
    "randint": lambda t: [t.randint(0, 10, (12,)), t.randint(-5, 2 ** 40, (4,))],
    "randint_like": lambda t: t.randint_like(t.zeros(6), 3, 9),
    "random_": lambda t: [t.empty(5, dtype=d).random_() for d in (
        t.int64, t.int32, t.uint8, t.int8, t.bool, t.float32, t.float64)],
    "random_ from to": lambda t: [t.empty(6).random_(-3, 9), t.empty(4, dtype=t.int16).random_(7)],
    "randperm": lambda t: [t.randperm(10), t.randperm(200)],
    "bernoulli": lambda t: [t.empty(20).bernoulli_(0.3), t.bernoulli(t.linspace(0, 1, 20)),
                            t.bernoulli(t.full((9,), 0.5, dtype=t.float64))],
    "exponential_": lambda t: [t.empty(9).exponential_(1.7),
                               t.empty(9, dtype=t.float64).exponential_()],
    "geometric_ cauchy_ log_normal_": lambda t: [t.empty(9).geometric_(0.3),
                                                 t.empty(9).cauchy_(0.5, 2.0),
                                                 t.empty(9, dtype=t.float64).log_normal_()],
    "dropout": lambda t: t.nn.functional.dropout(t.ones(4, 25), 0.3),
    "Linear": lambda t: [p for p in t.nn.Linear(6, 4).parameters()],
    "Conv2d": lambda t: [p for p in t.nn.Conv2d(3, 4, 3).parameters()],
    "init": lambda t: [t.nn.init.kaiming_normal_(t.empty(4, 6)),
                       t.nn.init.xavier_uniform_(t.empty(5, 3)),
                       t.nn.init.normal_(t.empty(17), std=0.02)],
    "generator object": lambda t: t.randn(20, generator=t.Generator().manual_seed(7)),
    "DataLoader shuffle": lambda t: [b for b in t.utils.data.DataLoader(
        list(range(12)), batch_size=4, shuffle=True)],
    "state bytes": lambda t: (t.randn(5), t.get_rng_state())[1],
    # ATen's rejection samplers, element by element (kernels.c)
    "poisson": lambda t: [t.poisson(t.tensor([0.0, 0.5, 3.0, 9.99, 10.0, 37.5, 1e4] * 3)),
                          t.poisson(t.tensor([[2.5, 80.0]] * 4, dtype=t.float64).t()),
                          t.rand(3)],
    "binomial": lambda t: [t.binomial(t.tensor([0.0, 5, 20, 40, 1000, 7, 30, 2.5] * 2),
                                      t.tensor([0.3, 0.0, 0.2, 0.6, 0.45, 1.0, 0.9, 0.5] * 2)),
                           t.binomial(t.full((9,), 200.0, dtype=t.float64),
                                      t.linspace(0.01, 0.99, 9, dtype=t.float64)),
                           t.rand(3)],
    "Gamma Chi2 StudentT": lambda t: [
        t.distributions.Gamma(t.tensor([0.3, 1.0, 2.5, 40.0]), t.tensor([1.0, 2.0, 0.5, 3.0]))
        .sample((3,)),
        t.distributions.Gamma(t.tensor([0.2, 7.0], dtype=t.float64), 1.0).rsample((5,)),
        t.distributions.Chi2(t.tensor([1.0, 4.0])).sample((4,)),
        t.distributions.StudentT(t.tensor([3.0, 0.7])).sample((4,)), t.randn(3)],
    "Beta Dirichlet": lambda t: [
        t.distributions.Beta(t.tensor([0.5, 2.0]), t.tensor([1.0, 0.3])).sample((4,)),
        t.distributions.Dirichlet(t.tensor([0.5, 2.0, 1.0, 0.1, 3.0])).sample((3,)),
        t.distributions.Dirichlet(t.tensor([[1.5, 0.7]], dtype=t.float64)).rsample((2,)),
        t.randn(3)],
    "Poisson Binomial distributions": lambda t: [
        t.distributions.Poisson(t.tensor([1.0, 25.0])).sample((3,)),
        t.distributions.Binomial(50, t.tensor([0.2, 0.7])).sample((3,))],
    "rrelu": lambda t: [t.nn.functional.rrelu((t.arange(30.0) - 20) / 8, training=True),
                        t.nn.functional.rrelu(t.linspace(-3, 3, 7, dtype=t.float64).reshape(
                            7, 1).expand(7, 2).t(), 0.1, 0.7, training=True),
                        t.rand(2)],
    "randn float16 bfloat16": lambda t: [
        t.randn(n, dtype=d) for n in (7, 16, 17, 40) for d in (t.float16, t.bfloat16)],
    "normal_ float16 bfloat16": lambda t: [t.empty(37, dtype=t.float16).normal_(1.0, 2.0),
                                           t.empty(3, 12, dtype=t.bfloat16).normal_(-1, 0.5),
                                           t.empty(20, dtype=t.float16)[::2].normal_()],
    "sdpa dropout": lambda t: t.nn.functional.scaled_dot_product_attention(
        t.zeros(2, 3, 5, 4), t.zeros(2, 3, 4, 4), t.eye(4).expand(2, 3, 4, 4), dropout_p=0.4),
    "feature and alpha dropout": lambda t: [
        t.nn.functional.dropout2d(t.ones(2, 3, 4, 4), 0.5),
        t.nn.functional.dropout1d(t.ones(2, 3, 4), 0.3),
        t.nn.functional.dropout3d(t.ones(2, 3, 2, 2, 2), 0.5),
        t.nn.functional.alpha_dropout(t.ones(20), 0.5, training=True),
        t.nn.functional.feature_alpha_dropout(t.ones(2, 3, 4), 0.5, training=True)],
    "normal with tensors": lambda t: [t.normal(t.arange(20.0), 2.0),
                                      t.normal(1.0, t.ones(20) * 0.5),
                                      t.normal(t.arange(5.0), t.ones(3, 1))],
    "float32 geometric cauchy log_normal": lambda t: [t.empty(20).geometric_(0.2),
                                                      t.empty(20).cauchy_(),
                                                      t.empty(20).log_normal_()],
    "multinomial": lambda t: [
        t.multinomial(t.tensor([0.1, 0.2, 0.3, 0.4]), 20, True),
        t.multinomial(t.tensor([[0.1, 0.2, 0.3, 0.4], [1, 1, 1, 1]], dtype=t.float64), 7, True),
        t.multinomial(t.tensor([0.1, 0.2, 0.3, 0.4] * 3), 5)],
    "like factories in memory order": lambda t: [
        x for o in (
            t.rand_like(t.zeros(6, 3).t()), t.randn_like(t.zeros(20, 3).t()),
            t.randn_like(t.zeros(2, 3, 4, 5).to(memory_format=t.channels_last)),
            t.randint_like(t.zeros(6, 3).t(), 3, 9),
            t.randint_like(t.zeros(1, 3, 4, 5).to(memory_format=t.channels_last), 100),
            t.rand_like(t.zeros(2, 3, 4, 5).to(memory_format=t.channels_last),
                        dtype=t.float64),
            t.randn_like(t.zeros(20, 3, dtype=t.float16).t())) for x in (o, o.stride())],
}


def _intel_mkl(torch) -> bool:
    """PyTorch's MKL build draws bernoulli_ with a number and dropout through MKL's own
    generator on Intel processors (its other kernels everywhere, and these elsewhere, are the
    ones Ember mirrors)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            intel = "GenuineIntel" in f.read(4096)
    except OSError:
        return False
    return intel and torch.backends.mkl.is_available()


#: the programs that draw bernoulli_(p) with a number (MKL's generator on Intel, above)
_MKL_DRAWN = {"bernoulli", "dropout"}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_streams_equal_pytorchs(name):
    torch = _torch()
    if torch is None:
        pytest.skip("PyTorch (the oracle) is not installed")
    if name in _MKL_DRAWN and _intel_mkl(torch):
        pytest.skip("PyTorch draws bernoulli_(p) with MKL on Intel processors")
    assert _run(PROGRAMS[name], ember) == _run(PROGRAMS[name], torch)


def test_pinned_values():
    """PyTorch 2.13's values after ``manual_seed(0)`` (printed with PyTorch)."""
    ember.manual_seed(0)
    assert ember.rand(4).tolist() == [0.49625658988952637, 0.7682217955589294,
                                      0.08847743272781372, 0.13203048706054688]
    ember.manual_seed(0)
    assert ember.randn(20)[-4:].tolist() == [0.9318265914916992, 1.2590092420578003,
                                             2.0049805641174316, 0.05373690277338028]
    ember.manual_seed(0)
    assert ember.randn(3, dtype=ember.float64).tolist() == [
        1.5409961082440433, -0.2934289057609464, -2.1787893820745574]
    ember.manual_seed(0)
    assert ember.randint(0, 100, (6,)).tolist() == [44, 39, 33, 60, 63, 79]
    ember.manual_seed(0)
    assert ember.randperm(10).tolist() == [4, 1, 7, 5, 3, 9, 0, 8, 6, 2]
    ember.manual_seed(0)
    assert ember.empty(10).bernoulli_(0.5).tolist() == [0, 0, 1, 0, 0, 0, 1, 1, 0, 1]
    ember.manual_seed(0)
    assert ember.empty(3, dtype=ember.float64).exponential_().tolist() == [
        3.508326186707642, 1.2303847641796768, 0.6150440938940115]


def test_pinned_sampler_values():
    """PyTorch 2.13's values of the rejection samplers, randn in float16 and rrelu after
    ``manual_seed(0)`` (printed with PyTorch)."""
    ember.manual_seed(0)
    assert ember.poisson(ember.tensor([0.5, 4.0, 12.0, 300.0])).tolist() == [2, 5, 10, 282]
    ember.manual_seed(0)
    assert ember.binomial(ember.tensor([5., 40., 1000.]), ember.tensor([0.3, 0.6, 0.2])
                          ).tolist() == [3, 23, 187]
    ember.manual_seed(0)
    assert ember.distributions.Gamma(ember.tensor([0.3, 2.5], dtype=ember.float64), ember.tensor(
        [1.0, 2.0], dtype=ember.float64)).sample().tolist() == [5.90695073130949e-06,
                                                                0.471082789876439]
    ember.manual_seed(0)
    assert ember.randn(17, dtype=ember.float16)[-3:].tolist() == [1.5859375, 0.9462890625,
                                                                 -0.84375]
    ember.manual_seed(0)
    assert ember.nn.functional.rrelu(ember.tensor([-1.0, 2.0, -3.0, 0.0]), training=True
                                     ).tolist() == [-0.3270943760871887, 2.0,
                                                    -0.8173874616622925, 0.0]


def test_state_loads_in_either_library():
    ember.manual_seed(11)
    ember.randn(3)  # leaves a cached Box-Muller sample in the state
    state = ember.get_rng_state()
    assert state.dtype == ember.uint8 and state.shape == (STATE_BYTES,)
    expected = ember.randn(25).tolist()
    ember.set_rng_state(state)
    assert ember.randn(25).tolist() == expected
    torch = _torch()
    if torch is None:
        return
    torch.manual_seed(11)
    torch.randn(3)
    assert bytes(torch.get_rng_state().numpy()) == bytes(state.numpy())
    torch.set_rng_state(torch.from_numpy(state.numpy().copy()))
    assert torch.randn(25).tolist() == expected


def test_bad_states_are_refused_with_pytorchs_messages():
    g = ember.Generator()
    with pytest.raises(RuntimeError, match="Expected a CPUGeneratorImplState of size 5056 but "
                                           "found the input RNG state size to be 56"):
        g.set_state(ember.zeros(56, dtype=ember.uint8))
    with pytest.raises(RuntimeError, match="Invalid mt19937 state"):
        g.set_state(ember.zeros(STATE_BYTES, dtype=ember.uint8))


@pytest.mark.parametrize("n", [1, 7, 623, 624, 625, 1249, 5000])
def test_engine_kernels_draw_random_raws_words(monkeypatch, n):
    """kernels.c advances NumPy's MT19937 state in place (seeding, words, 64-bit words, the
    fused uniforms and integer ranges): the same numbers and the same final state as the
    ``random_raw`` formulations, across block regenerations."""
    def draws():
        g = TorchRNG(2**40 + 11)
        g.words(3)  # start mid-block
        out = [g.words(n), g.words64(n), g.unit(n, np.float32), g.unit(n, np.float64),
               g.torch_uniform(n, np.float32, -2.5, 0.75), g.torch_uniform(n, np.float64, -3, 9),
               g.torch_uniform(n, np.dtype(np.float16), -1, 1)]
        out += [g.torch_random_from_to(n, low, high) for low, high in (
            (0, 1), (0, 10), (-5, 12345), (3, (1 << 28) - 1), (0, 1 << 28), (-7, 1 << 40),
            (-(1 << 63), (1 << 63) - 1))]
        return out, g.get_state_bytes()

    if _native.kernel("ember_mt_words") is None:
        pytest.skip("no native kernels: " + _native.status())
    native, state = draws()
    monkeypatch.setattr(_native, "kernel", lambda name: None)
    fallback, fallback_state = draws()
    assert state == fallback_state
    for a, b in zip(native, fallback):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def test_avx2_box_muller_is_the_scalar_kernel_bit_for_bit():
    """The vectorised normal_fill_16_AVX2 (where the CPU has AVX2 and FMA) gives the lane-wise
    kernel's bits, on random uniforms and on the ends of [0, 1)."""
    if _native.kernel("ember_torch_box_muller_f32") is None:
        pytest.skip("no native kernels: " + _native.status())
    rng = np.random.default_rng(0)
    u = (rng.integers(0, 1 << 24, 16 * 4096) * 2.0 ** -24).astype(np.float32)
    u[:64] = np.float32(0)
    u[64:128] = np.float32(1 - 2.0 ** -24)
    u[128:192] = np.float32(2.0 ** -24)
    u[192:256] = np.float32(0.125)
    for mean, std in ((0.0, 1.0), (-1.5, 0.02), (3.0, 7.0)):
        a, b = u.copy(), u.copy()
        _native.kernel("ember_torch_box_muller_f32")(_native.address(a), u.size // 16,
                                                     mean, std)
        _native.kernel("ember_torch_box_muller_f32_scalar")(_native.address(b), u.size // 16,
                                                            mean, std)
        np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))


def test_concurrent_draws_take_whole_chunks_of_the_stream():
    """Threads sharing a generator draw under its lock: each call gets a consecutive run of
    the stream, and no word is lost or repeated (the kernels release the GIL)."""
    import threading

    g, ref = TorchRNG(9), TorchRNG(9)
    chunks, lock = [], threading.Lock()

    def work():
        for _ in range(40):
            w = g.words(2000)
            with lock:
                chunks.append(tuple(w.tolist()))

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expected = {tuple(ref.words(2000).tolist()) for _ in range(120)}
    assert set(chunks) == expected


@pytest.mark.parametrize("n", [1, 5, 16, 33, 1000])
def test_native_kernels_and_numpy_fallbacks_agree(monkeypatch, n):
    """Where the C kernels cannot be built, NumPy formulations draw the same numbers (the
    float64 transcendental ones may differ in the last bit from the C library's)."""
    def draws():
        g = TorchRNG(5)
        return [g.torch_normal(n, np.float32), g.torch_normal(n, np.float32, 0.5, 3.0),
                g.torch_normal(n, np.float64), g.torch_randperm(n),
                g.torch_exponential(n, 2.0), g.torch_cauchy(n, 0.0, 1.0),
                g.torch_log_normal(n, 0.0, 1.0), g.torch_geometric(n, 0.25)]

    native = draws()
    monkeypatch.setattr(_native, "kernel", lambda name: None)
    fallback = draws()
    for i, (a, b) in enumerate(zip(native, fallback)):
        if i in (0, 1, 3, 7):
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=4e-16, atol=0)


def _rejection_draws(alpha_f32, alpha_f64):
    g = TorchRNG(17)
    g.normal_pairs(1)  # a cached Box-Muller half for the gamma loop to take first
    lam = np.concatenate([alpha_f64 * 3, [0.0, 10.0, 9.99, 1e5, np.inf]])
    out = [g.torch_poisson(lam)]
    for a in (alpha_f32, alpha_f64):
        count = np.floor(a * 30).astype(a.dtype)
        prob = (np.arange(a.size) % 11 / 10).astype(a.dtype)
        out += [g.torch_binomial(count, prob), g.torch_standard_gamma(a),
                g.torch_dirichlet(a[: a.size // 3 * 3].reshape(-1, 3))]
    return out, g.get_state_bytes(), g.next_double


def test_rejection_sampler_kernels_and_python_loops_agree(monkeypatch):
    """kernels.c's sample_poisson/sample_binomial/sample_gamma loops and their Python
    twins draw the same numbers and leave the same state (cached normal included), across
    every branch: small and large rates, inversion and BTRS, p above 1/2, alpha below 1."""
    if _native.kernel("ember_torch_poisson") is None:
        pytest.skip("no native kernels: " + _native.status())
    a64 = np.random.default_rng(3).exponential(4.0, 150)
    a64[:40] = np.linspace(0.0, 1.0, 40)
    a32 = a64.astype(np.float32)
    native, state, cached = _rejection_draws(a32, a64)
    monkeypatch.setattr(_native, "kernel", lambda name: None)
    fallback, fallback_state, fallback_cached = _rejection_draws(a32, a64)
    assert state == fallback_state and cached == fallback_cached
    for a, b in zip(native, fallback):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    assert native[0][-1] == np.iinfo(np.int64).min  # PyTorch's overflow of an infinite rate


def test_rejection_samplers_statistics():
    """Means and variances of the samplers (meaningful without the oracle)."""
    g = TorchRNG(5)
    n = 40000
    for lam in (3.0, 40.0):
        x = g.torch_poisson(np.full(n, lam))
        assert abs(x.mean() - lam) < 5 * np.sqrt(lam / n) and abs(x.var() / lam - 1) < 0.05
    for count, p in ((8.0, 0.3), (300.0, 0.4), (300.0, 0.8)):
        x = g.torch_binomial(np.full(n, count), np.full(n, p))
        mean, var = count * p, count * p * (1 - p)
        assert abs(x.mean() - mean) < 5 * np.sqrt(var / n) and abs(x.var() / var - 1) < 0.05
    for alpha in (0.3, 4.0):
        x = g.torch_standard_gamma(np.full(n, alpha, np.float32))
        assert x.dtype == np.float32 and x.min() > 0
        assert abs(x.mean() - alpha) < 5 * np.sqrt(alpha / n) and abs(x.var() / alpha - 1) < 0.08
    d = g.torch_dirichlet(np.tile(np.float32([0.5, 1.0, 2.5]), (n, 1)))
    np.testing.assert_allclose(d.mean(0), np.array([0.5, 1.0, 2.5]) / 4, atol=0.01)
    assert d.max() < 1 and d.min() > 0
