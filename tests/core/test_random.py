"""Random numbers: Generator, seeding, the random factories and in-place samplers
(determinism, dtypes, devices, statistics, errors, autograd)."""

import numpy as np
import pytest

import ember

F32, F64, I64 = ember.float32, ember.float64, ember.int64
N = 200_000  # sample size of the statistical checks


@pytest.fixture(autouse=True)
def _seeded_rng():
    """Every test starts from seed 0 (the statistical checks are then deterministic) and
    leaves the default generator as it found it."""
    state = ember.get_rng_state()
    ember.manual_seed(0)
    yield
    ember.set_rng_state(state)


# Every random function, as ``make(generator, device)``; generator=None uses the default one.
SAMPLERS = {
    "rand": lambda g, d: ember.rand(3, 4, generator=g, device=d),
    "randn": lambda g, d: ember.randn(3, 4, generator=g, device=d),
    "randint": lambda g, d: ember.randint(0, 10, (3, 4), generator=g, device=d),
    "randperm": lambda g, d: ember.randperm(10, generator=g, device=d),
    "normal_tt": lambda g, d: ember.normal(ember.zeros(5, device=d), ember.ones(5, device=d),
                                           generator=g),
    "normal_tf": lambda g, d: ember.normal(ember.zeros(5, device=d), 2.0, generator=g),
    "normal_ft": lambda g, d: ember.normal(1.0, ember.ones(5, device=d), generator=g),
    "normal_ff": lambda g, d: ember.normal(1.0, 2.0, (5,), generator=g, device=d),
    "bernoulli": lambda g, d: ember.bernoulli(ember.full((20,), 0.5, device=d), generator=g),
    "bernoulli_p": lambda g, d: ember.bernoulli(ember.zeros(20, device=d), 0.3, generator=g),
    "multinomial": lambda g, d: ember.multinomial(ember.ones(2, 6, device=d), 3, generator=g),
    "multinomial_r": lambda g, d: ember.multinomial(ember.ones(6, device=d), 9, True,
                                                    generator=g),
    "poisson": lambda g, d: ember.poisson(ember.full((8,), 3.0, device=d), generator=g),
    "uniform_": lambda g, d: ember.empty(6, device=d).uniform_(-1, 1, generator=g),
    "normal_": lambda g, d: ember.empty(6, device=d).normal_(2, 3, generator=g),
    "random_": lambda g, d: ember.empty(6, device=d).random_(0, 100, generator=g),
    "bernoulli_": lambda g, d: ember.empty(6, device=d).bernoulli_(0.5, generator=g),
    "exponential_": lambda g, d: ember.empty(6, device=d).exponential_(2.0, generator=g),
    "geometric_": lambda g, d: ember.empty(6, device=d).geometric_(0.3, generator=g),
    "cauchy_": lambda g, d: ember.empty(6, device=d).cauchy_(generator=g),
    "log_normal_": lambda g, d: ember.empty(6, device=d).log_normal_(generator=g),
}


def values(t):
    return t._host().tolist()


# -- Generator -------------------------------------------------------------------------------

def test_generator_api():
    g = ember.Generator()
    assert g.device == ember.device("cpu")
    assert g.initial_seed() == 67280421310721  # PyTorch's default seed
    assert g.manual_seed(42) is g and g.initial_seed() == 42
    assert g.manual_seed(-1).initial_seed() == 2 ** 64 - 1
    assert g.manual_seed(2 ** 64 - 1).initial_seed() == 2 ** 64 - 1
    s = g.seed()
    assert isinstance(s, int) and g.initial_seed() == s
    assert ember.Generator("cpu").device == ember.device("cpu")
    assert isinstance(ember.default_generator, ember.Generator)


def test_generator_seed_errors():
    g = ember.Generator()
    with pytest.raises(RuntimeError, match="manual_seed expected a long, but got float"):
        g.manual_seed(1.5)
    with pytest.raises(RuntimeError, match="manual_seed expected a long, but got str"):
        g.manual_seed("a")
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        g.manual_seed(2 ** 64)
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        g.manual_seed(-2 ** 63 - 1)


def test_generator_state_round_trip():
    g = ember.Generator().manual_seed(7)
    ember.rand(5, generator=g)
    state = g.get_state()
    assert state.dtype is ember.uint8 and state.dim() == 1 and state.device.type == "cpu"
    a = ember.rand(5, generator=g)
    assert g.set_state(state) is g
    b = ember.rand(5, generator=g)
    assert values(a) == values(b) and g.initial_seed() == 7
    other = ember.Generator().set_state(state)
    assert values(ember.rand(5, generator=other)) == values(a)


def test_generator_state_errors():
    g = ember.Generator()
    with pytest.raises(TypeError, match="RNG state must be a ember.ByteTensor"):
        g.set_state(ember.zeros(3))
    with pytest.raises(TypeError, match="expected a ember.ByteTensor, but got list"):
        g.set_state([1, 2])
    with pytest.raises(RuntimeError, match="state size to be 3"):
        g.set_state(ember.zeros(3, dtype=ember.uint8))
    with pytest.raises(TypeError, match="RNG state must be a ember.ByteTensor"):
        ember.set_rng_state(ember.zeros(3))


def test_module_level_seeding():
    assert ember.manual_seed(3) is ember.default_generator
    assert ember.initial_seed() == 3
    a = ember.rand(4)
    ember.manual_seed(3)
    assert values(ember.rand(4)) == values(a)
    ember.manual_seed(1.7)  # converted with int(), as torch.manual_seed does
    assert ember.initial_seed() == 1
    s = ember.seed()
    assert isinstance(s, int) and ember.initial_seed() == s


def _fresh_process(code: str, seed: str | None) -> str:
    import os
    import subprocess
    import sys

    env = dict(os.environ)
    env.pop("EMBER_SEED", None)  # tests/conftest.py sets it for the suite's reproducibility
    if seed is not None:
        env["EMBER_SEED"] = seed
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 or seed == "x", r.stderr
    return r.stdout.strip() if r.returncode == 0 else r.stderr.strip().splitlines()[-1]


def test_the_default_generator_is_seeded_per_process():
    # PyTorch seeds its default CPU generator non-deterministically (initial_seed() differs per
    # process); a fresh Generator() starts from its default seed. EMBER_SEED fixes the
    # default one's seed (this suite sets it to PyTorch's default seed).
    code = ("import ember; print(ember.initial_seed(), ember.Generator().initial_seed(), "
            "ember.rand(3).tolist())")
    runs = [_fresh_process(code, None).split(" ", 2) for _ in range(2)]
    assert runs[0][0] != runs[1][0] and runs[0][2] != runs[1][2]
    assert runs[0][1] == runs[1][1] == "67280421310721"
    assert 0 <= int(runs[0][0]) < 2 ** 64
    fixed = _fresh_process(code, "5").split(" ", 2)
    assert fixed[0] == "5"
    assert fixed[2] == str(ember.rand(3, generator=ember.Generator().manual_seed(5),
                                      device="cpu").tolist())
    assert _fresh_process(code, "-1").split(" ")[0] == str(2 ** 64 - 1)
    assert _fresh_process(code, " 0x10 ").split(" ")[0] == "16"  # as the C++ frontend reads it
    assert _fresh_process(code, "010").split(" ")[0] == "10"
    assert _fresh_process(code, "x") == ("RuntimeError: EMBER_SEED must be an integer in "
                                         "[-2**63, 2**64), got 'x'")


def test_rng_state_save_restore():
    ember.manual_seed(0)
    state = ember.get_rng_state()
    a = ember.randn(6)
    ember.set_rng_state(state)
    assert values(ember.randn(6)) == values(a)


# -- determinism of every random function ------------------------------------------------------

@pytest.mark.parametrize("name", list(SAMPLERS))
def test_deterministic_under_manual_seed(name):
    make = SAMPLERS[name]
    ember.manual_seed(1234)
    a = values(make(None, None))
    ember.manual_seed(1234)
    b = values(make(None, None))
    ember.manual_seed(4321)
    c = values(make(None, None))
    assert a == b
    if name != "multinomial":  # 3 of 6 equiprobable categories may coincide by chance
        assert a != c


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_deterministic_under_a_generator(name):
    make = SAMPLERS[name]
    a = values(make(ember.Generator().manual_seed(99), None))
    before = ember.get_rng_state()
    b = values(make(ember.Generator().manual_seed(99), None))
    assert a == b
    # a private generator leaves the default one alone
    assert ember.get_rng_state().tolist() == before.tolist()


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_sampler_keeps_the_device(name, testdev):
    make = SAMPLERS[name]
    t = make(None, testdev)
    assert t.device == testdev
    ember.manual_seed(5)
    a = values(make(None, testdev))
    ember.manual_seed(5)  # seeds the test device's default generator too
    assert values(make(None, testdev)) == a
    g = ember.Generator(testdev).manual_seed(5)
    assert values(make(g, testdev)) == values(make(ember.Generator(testdev).manual_seed(5),
                                                   testdev))


def test_generator_device_must_match(testdev):
    with pytest.raises(RuntimeError, match="Expected a 'testdev' device type for generator "
                       "but found 'cpu'"):
        ember.rand(2, device=testdev, generator=ember.Generator())
    with pytest.raises(RuntimeError, match="Expected a 'cpu' device type for generator but "
                       "found 'testdev'"):
        ember.zeros(2).uniform_(generator=ember.Generator(testdev))


def test_device_generators_are_seeded_by_manual_seed(testdev):
    ember.manual_seed(11)
    cpu = values(ember.rand(5))
    ember.manual_seed(11)
    assert values(ember.rand(5, device=testdev)) == cpu


def test_normal_mixing_devices_raises(testdev):
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember.normal(ember.zeros(2), ember.ones(2, device=testdev))


# -- dtypes and shapes ------------------------------------------------------------------------

def test_factory_dtypes_and_shapes():
    assert ember.rand(2, 3).dtype is F32 and ember.rand(2, 3).shape == (2, 3)
    assert ember.rand((2, 3)).shape == (2, 3) and ember.rand(size=(4,)).shape == (4,)
    assert ember.rand(2, dtype=F64).dtype is F64
    assert ember.rand(5, dtype=ember.float16).dtype is ember.float16
    assert ember.randn(2, dtype=ember.float16).dtype is ember.float16
    assert ember.randint(5, (2, 2)).dtype is I64 and ember.randint(5, (2, 2)).shape == (2, 2)
    assert ember.randint(5, (3,), dtype=F32).dtype is F32
    assert ember.randint(0, 2, (3,), dtype=ember.bool).dtype is ember.bool
    assert ember.randperm(4).dtype is I64 and ember.randperm(4, dtype=F32).dtype is F32
    assert ember.randperm(0).shape == (0,)
    assert ember.normal(0.0, 1.0, (2,)).dtype is F32
    assert ember.normal(0.0, 1.0, size=(2,), dtype=F64).dtype is F64
    assert ember.normal(ember.zeros(2, dtype=F64), ember.ones(2)).dtype is F64
    assert ember.normal(ember.zeros(2), ember.ones(2, dtype=F64)).dtype is F32  # mean's dtype
    assert ember.normal(0.0, ember.ones(2, dtype=F64)).dtype is F64
    assert ember.normal(ember.zeros(2, 3), ember.ones(3)).shape == (2, 3)
    assert ember.normal(ember.zeros(3)).shape == (3,)
    assert ember.rand(0).shape == (0,) and ember.randn(()).shape == ()


def test_randn_uses_the_default_dtype():
    ember.set_default_dtype(F64)
    try:
        assert ember.randn(2).dtype is F64 and ember.rand(2).dtype is F64
        assert ember.normal(0.0, 1.0, (2,)).dtype is F64
    finally:
        ember.set_default_dtype(F32)


def test_like_variants():
    src = ember.zeros(2, 3, dtype=F64)
    assert ember.rand_like(src).dtype is F64 and ember.rand_like(src).shape == (2, 3)
    assert ember.randn_like(src, dtype=F32).dtype is F32
    r = ember.randint_like(ember.zeros(50, dtype=ember.int32), 5)
    assert r.dtype is ember.int32 and 0 <= r.min().item() and r.max().item() < 5
    r = ember.randint_like(ember.zeros(50), 3, 5)
    assert r.dtype is F32 and set(values(r)) <= {3.0, 4.0}
    assert ember.rand_like(src, requires_grad=True).requires_grad
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        ember.rand_like(ember.zeros(2, dtype=I64))


def test_randint_argument_forms():
    assert ember.randint(3, 5, (100,)).min().item() >= 3
    assert ember.randint(5, size=(2,)).shape == (2,)
    assert ember.randint(low=1, high=5, size=(100,)).min().item() >= 1
    assert ember.randint(high=5, size=(2,)).shape == (2,)
    with pytest.raises(TypeError, match=r"argument 'size' \(position 2\) must be tuple of "
                       "ints, not int"):
        ember.randint(3, 5)
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        ember.randint(5)


def test_requires_grad_on_random_factories():
    assert ember.rand(2, requires_grad=True).requires_grad
    assert ember.randn(2, requires_grad=True).is_leaf
    assert ember.normal(0.0, 1.0, (2,), requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype"):
        ember.randint(2, (3,), requires_grad=True)
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype"):
        ember.randperm(3, requires_grad=True)


def test_out_argument():
    out = ember.empty(2, 2)
    assert ember.rand(2, 2, out=out) is out
    assert 0 <= out.min().item() and out.max().item() < 1
    idx = ember.empty(3, dtype=I64)
    assert ember.multinomial(ember.ones(5), 3, out=idx) is idx


# -- statistics -------------------------------------------------------------------------------

def stats(t):
    a = t._host().astype(np.float64)
    return a.mean(), a.std()


def test_rand_and_randn_statistics():
    ember.manual_seed(0)
    u = ember.rand(N)
    m, s = stats(u)
    assert abs(m - 0.5) < 0.01 and abs(s - (1 / 12) ** 0.5) < 0.01
    assert u.min().item() >= 0.0 and u.max().item() < 1.0
    m, s = stats(ember.randn(N))
    assert abs(m) < 0.01 and abs(s - 1) < 0.01
    h = ember.rand(N, dtype=ember.float16)._host()
    assert h.min() >= 0 and h.max() < 1 and abs(h.astype(np.float64).mean() - 0.5) < 0.01
    m, s = stats(ember.randn(N, dtype=ember.float16))
    assert abs(m) < 0.02 and abs(s - 1) < 0.02


def test_randint_and_randperm_statistics():
    r = ember.randint(-3, 4, (N,))._host()
    assert r.min() == -3 and r.max() == 3
    counts = np.bincount(r + 3) / N
    np.testing.assert_allclose(counts, np.full(7, 1 / 7), atol=0.01)
    p = ember.randperm(1000)._host()
    assert sorted(p.tolist()) == list(range(1000)) and p.tolist() != list(range(1000))
    u8 = ember.randint(0, 256, (N,), dtype=ember.uint8)._host()
    assert u8.min() == 0 and u8.max() == 255


def test_normal_statistics_for_every_overload():
    m, s = stats(ember.normal(ember.full((N,), 2.0), ember.full((N,), 3.0)))
    assert abs(m - 2) < 0.05 and abs(s - 3) < 0.05
    m, s = stats(ember.normal(ember.full((N,), -1.0), 0.5))
    assert abs(m + 1) < 0.01 and abs(s - 0.5) < 0.01
    m, s = stats(ember.normal(4.0, ember.full((N,), 2.0)))
    assert abs(m - 4) < 0.03 and abs(s - 2) < 0.03
    m, s = stats(ember.normal(1.0, 0.1, (N,)))
    assert abs(m - 1) < 0.01 and abs(s - 0.1) < 0.01
    # per-element means and stds are honoured
    t = ember.normal(ember.from_numpy(np.tile(np.float32([0.0, 100.0]), (N // 2, 1))),
                     ember.tensor([1.0, 0.0]))
    col = t._host()
    assert abs(col[:, 0].mean()) < 0.02 and np.all(col[:, 1] == 100.0)


def test_bernoulli_statistics():
    probs = np.tile(np.array([0.0, 0.2, 0.9, 1.0], dtype=np.float32), N // 4)
    p = ember.from_numpy(probs)
    b = ember.bernoulli(p)._host().reshape(-1, 4)
    assert b.dtype == np.float32 and set(np.unique(b).tolist()) <= {0.0, 1.0}
    np.testing.assert_allclose(b.mean(0), [0.0, 0.2, 0.9, 1.0], atol=0.01)
    assert abs(ember.bernoulli(ember.zeros(N), 0.3)._host().mean() - 0.3) < 0.01
    x = ember.zeros(N, dtype=I64).bernoulli_(0.25)
    assert x.dtype is I64 and abs(x._host().mean() - 0.25) < 0.01
    y = ember.zeros(N // 2, 2).bernoulli_(ember.tensor([0.1, 0.7]))._host()
    np.testing.assert_allclose(y.mean(0), [0.1, 0.7], atol=0.01)
    assert abs(ember.full((N,), 0.4).bernoulli()._host().mean() - 0.4) < 0.01


def test_multinomial_statistics():
    probs = ember.tensor([1.0, 2.0, 3.0, 4.0])
    draws = ember.multinomial(probs, N, replacement=True)._host()
    assert draws.dtype == np.int64 and draws.shape == (N,)
    np.testing.assert_allclose(np.bincount(draws, minlength=4) / N, [0.1, 0.2, 0.3, 0.4],
                               atol=0.01)
    first = np.array([ember.multinomial(probs, 1).item() for _ in range(2000)])
    np.testing.assert_allclose(np.bincount(first, minlength=4) / 2000, [0.1, 0.2, 0.3, 0.4],
                               atol=0.04)
    rows = ember.multinomial(ember.tensor([[0.0, 1.0, 0.0], [1.0, 1.0, 1.0]]), 3)
    assert rows.shape == (2, 3)
    assert rows[0, 0].item() == 1  # the only non-zero category comes first
    for r in rows._host():
        assert sorted(r.tolist()) == [0, 1, 2]  # without replacement: no repeats
    assert ember.ones(4).multinomial(2).shape == (2,)


def test_poisson_statistics():
    m, s = stats(ember.poisson(ember.full((N,), 4.0)))
    assert abs(m - 4) < 0.05 and abs(s - 2) < 0.05
    assert ember.poisson(ember.zeros(3, dtype=F64)).dtype is F64
    assert values(ember.poisson(ember.zeros(3))) == [0.0, 0.0, 0.0]


def test_inplace_sampler_statistics():
    u = ember.empty(N).uniform_(-2, 6)
    assert u.min().item() >= -2 and u.max().item() < 6 and abs(stats(u)[0] - 2) < 0.05
    m, s = stats(ember.empty(N, dtype=F64).normal_(3, 0.5))
    assert abs(m - 3) < 0.01 and abs(s - 0.5) < 0.01
    m, _ = stats(ember.empty(N).exponential_(4.0))
    assert abs(m - 0.25) < 0.01
    g = ember.empty(N).geometric_(0.25)._host()
    assert g.min() >= 1 and abs(g.mean() - 4) < 0.1
    c = ember.empty(N).cauchy_(1.0, 2.0)._host()
    assert abs(np.median(c) - 1) < 0.05
    ln = np.log(ember.empty(N, dtype=F64).log_normal_(1.0, 0.5)._host())
    assert abs(ln.mean() - 1) < 0.01 and abs(ln.std() - 0.5) < 0.01


def test_random_ranges():
    r = ember.empty(N).random_(10)._host()
    assert r.min() == 0 and r.max() == 9 and np.all(r == np.round(r))
    r = ember.empty(N, dtype=I64).random_(-5, 5)._host()
    assert r.min() == -5 and r.max() == 4
    assert set(ember.empty(100, dtype=ember.bool).random_()._host().tolist()) == {False, True}
    r = ember.empty(N, dtype=ember.uint8).random_(250, None)._host()
    assert r.min() >= 250 and r.max() <= 255
    f = ember.empty(1000).random_()._host()
    assert f.min() >= 0 and f.max() <= 2 ** 24
    assert ember.empty(1000, dtype=I64).random_()._host().min() >= 0
    r = ember.empty(N, dtype=I64).random_(**{"from": 3, "to": 6})._host()
    assert set(r.tolist()) == {3, 4, 5}


# -- in-place semantics and autograd ---------------------------------------------------------

@pytest.mark.parametrize("name", [n for n in SAMPLERS if n.endswith("_")])
def test_inplace_samplers_write_in_place(name):
    x = ember.zeros(6)
    method = getattr(x, name)
    args = {"geometric_": (0.3,)}.get(name, ())
    v = x._version
    ptr = x.data_ptr()
    assert method(*args) is x
    assert x._version > v and x.data_ptr() == ptr
    view = ember.zeros(4, 4)
    getattr(view[1], name)(*args)
    assert view[0].tolist() == [0.0] * 4


@pytest.mark.parametrize("name", [n for n in SAMPLERS if n.endswith("_")])
def test_inplace_samplers_on_leaves_that_require_grad(name):
    x = ember.zeros(3, requires_grad=True)
    args = {"geometric_": (0.3,)}.get(name, ())
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used "
                       "in an in-place operation."):
        getattr(x, name)(*args)
    with ember.no_grad():  # what nn.init does
        getattr(x, name)(*args)
    assert x.requires_grad and x.grad_fn is None


@pytest.mark.parametrize("name,node", [("uniform_", "UniformBackward0"),
                                       ("normal_", "NormalBackward0"),
                                       ("bernoulli_", "BernoulliBackward2"),
                                       ("exponential_", "ExponentialBackward0"),
                                       ("random_", "RandomBackward2")])
def test_inplace_samplers_on_non_leaves_cut_the_gradient(name, node):
    x = ember.ones(3, dtype=F64, requires_grad=True)
    y = x * 2
    getattr(y, name)()
    assert y.grad_fn.name() == node
    (y * 1).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("make,node,n_inputs", [
    (lambda m, s: ember.normal(m, 1.0), "NormalBackward1", 1),
    (lambda m, s: ember.normal(0.0, s), "NormalBackward2", 1),
    (lambda m, s: ember.normal(m, s), "NormalBackward3", 2),
    (lambda m, s: ember.bernoulli(m), "BernoulliBackward0", 1),
    (lambda m, s: ember.poisson(s), "PoissonBackward0", 1),
])
def test_random_ops_have_zero_gradients(make, node, n_inputs):
    mean = ember.full((3,), 0.5, dtype=F64, requires_grad=True)
    std = ember.full((3,), 2.0, dtype=F64, requires_grad=True)
    out = make(mean, std)
    assert out.grad_fn is not None and out.grad_fn.name() == node
    out.sum().backward()
    grads = [t.grad for t in (mean, std) if t.grad is not None]
    assert len(grads) == n_inputs
    for g in grads:
        assert g.dtype is F64 and g.tolist() == [0.0, 0.0, 0.0]


def test_random_ops_without_grad_record_nothing():
    mean = ember.zeros(3, requires_grad=True)
    with ember.no_grad():
        assert ember.normal(mean, 1.0).grad_fn is None
    assert ember.bernoulli(ember.full((3,), 0.5), 0.5).grad_fn is None


# -- errors -----------------------------------------------------------------------------------

@pytest.mark.parametrize("call,exc,msg", [
    (lambda: ember.rand(2, dtype=I64), NotImplementedError,
     "\"check_uniform_bounds\" not implemented for 'Long'"),
    (lambda: ember.randn(2, dtype=ember.int32), NotImplementedError,
     "\"normal_kernel_cpu\" not implemented for 'Int'"),
    (lambda: ember.rand(-1), RuntimeError, r"negative dimension -1: \[-1\]"),
    (lambda: ember.randn(2, -1), RuntimeError, r"negative dimension -1: \[2, -1\]"),
    (lambda: ember.randint(5, 5, (2,)), RuntimeError,
     "random_ expects 'from' to be less than 'to', but got from=5 >= to=5"),
    (lambda: ember.randint(0, 2 ** 40, (2,), dtype=ember.int32), RuntimeError,
     "to - 1 is out of bounds for int"),
    (lambda: ember.randint(5, (2,), dtype=ember.bool), RuntimeError,
     "to - 1 is out of bounds for bool"),
    (lambda: ember.randperm(-1), RuntimeError, r"negative dimension -1: \[-1\]"),
    (lambda: ember.normal(ember.zeros(2), -1.0), RuntimeError,
     "normal expects std >= 0.0, but found std -1"),
    (lambda: ember.normal(ember.zeros(2), -ember.ones(2)), RuntimeError,
     "normal expects all elements of std >= 0.0"),
    (lambda: ember.normal(ember.zeros(2), ember.ones(3)), RuntimeError,
     r"The size of tensor a \(2\) must match the size of tensor b \(3\) at non-singleton "
     "dimension 0"),
    (lambda: ember.normal(ember.zeros(2, dtype=I64), 1.0), NotImplementedError,
     "\"normal_kernel_cpu\" not implemented for 'Long'"),
    (lambda: ember.normal(0.0, 1.0), TypeError, "normal\\(\\) received an invalid combination"),
    (lambda: ember.normal(0.0, -1.0, (2,)), RuntimeError, "but found std -1"),
    (lambda: ember.bernoulli(ember.full((2,), 1.5)), RuntimeError,
     "Expected p_in >= 0 && p_in <= 1 to be true, but got false."),
    (lambda: ember.bernoulli(ember.zeros(2), 1.5), RuntimeError,
     r"bernoulli_ expects p to be in \[0, 1\], but got p=1.5"),
    (lambda: ember.bernoulli(ember.zeros(2, dtype=I64)), NotImplementedError,
     "\"bernoulli_tensor_cpu_p_\" not implemented for 'Long'"),
    (lambda: ember.zeros(2).bernoulli_(ember.full((2,), -0.5)), RuntimeError,
     "Expected p_in >= 0 && p_in <= 1"),
    (lambda: ember.multinomial(ember.ones(3), 4), RuntimeError,
     r"cannot sample n_sample > prob_dist.size\(-1\) samples without replacement"),
    (lambda: ember.multinomial(ember.ones(3), 0), RuntimeError,
     "cannot sample n_sample <= 0 samples"),
    (lambda: ember.multinomial(ember.zeros(3), 1), RuntimeError,
     r"invalid multinomial distribution \(sum of probabilities <= 0\)"),
    (lambda: ember.multinomial(-ember.ones(3), 1), RuntimeError,
     "probability tensor contains either `inf`, `nan` or element < 0"),
    (lambda: ember.multinomial(ember.tensor([float("nan"), 1.0]), 2), RuntimeError,
     "probability tensor contains either `inf`, `nan` or element < 0"),
    (lambda: ember.multinomial(ember.ones(2, 2, 2), 1), RuntimeError,
     "prob_dist must be 1 or 2 dim"),
    (lambda: ember.multinomial(ember.ones(3, dtype=I64), 1), RuntimeError,
     "multinomial only supports floating-point dtypes for input, got: Long"),
    (lambda: ember.multinomial(ember.tensor([1.0, -1.0]), 5, True), RuntimeError,
     r"invalid multinomial distribution \(encountering probability entry < 0\)"),
    (lambda: ember.multinomial(ember.tensor([1.0, float("inf")]), 5, True), RuntimeError,
     r"encountering probability entry = infinity or NaN"),
    (lambda: ember.multinomial(ember.zeros(2), 5, True), RuntimeError,
     r"sum of probabilities <= 0"),
    (lambda: ember.poisson(ember.ones(2, dtype=I64)), NotImplementedError,
     "\"poisson_cpu\" not implemented for 'Long'"),
    (lambda: ember.poisson(-ember.ones(2)), RuntimeError,
     "invalid Poisson rate, expected rate to be non-negative"),
    (lambda: ember.zeros(2).uniform_(1, 0), RuntimeError,
     r"uniform_ expects to return a \[from, to\) range, but found from=1 > to=0"),
    (lambda: ember.zeros(2, dtype=I64).uniform_(), NotImplementedError,
     "\"check_uniform_bounds\" not implemented for 'Long'"),
    (lambda: ember.zeros(2).normal_(0, -1), RuntimeError, "normal expects std >= 0.0"),
    (lambda: ember.zeros(2, dtype=I64).normal_(), NotImplementedError, "normal_kernel_cpu"),
    (lambda: ember.zeros(2).exponential_(0), RuntimeError,
     "exponential_ expects lambda > 0.0, but found lambda=0"),
    (lambda: ember.zeros(2, dtype=I64).exponential_(), RuntimeError,
     "Exponential distribution is a continuous probability distribution. dtype must be a "
     "floating point but you specified Long"),
    (lambda: ember.zeros(2).geometric_(0), RuntimeError,
     r"geometric_ expects p to be in \(0, 1\), but got p=0"),
    (lambda: ember.zeros(2).geometric_(1.5), RuntimeError, "but got p=1.5"),
    (lambda: ember.zeros(2).cauchy_(0, -1), RuntimeError,
     "cauchy_ expects sigma > 0.0, but found sigma=-1"),
    (lambda: ember.zeros(2, dtype=I64).cauchy_(), RuntimeError,
     "Cauchy distribution is a continuous probability distribution. dtype must be a floating "
     "point but you specified long int"),
    (lambda: ember.zeros(2).log_normal_(1, -1), RuntimeError,
     "log_normal_ expects std > 0.0, but found std=-1"),
    (lambda: ember.zeros(2, dtype=ember.int32).log_normal_(), NotImplementedError,
     "\"log_normal_cpu\" not implemented for 'Int'"),
    (lambda: ember.zeros(2).random_(5, 2), RuntimeError,
     "random_ expects 'from' to be less than 'to', but got from=5 >= to=2"),
    (lambda: ember.zeros(2, dtype=ember.int8).random_(0, 1000), RuntimeError,
     "to - 1 is out of bounds for signed char"),
    (lambda: ember.zeros(2, dtype=ember.uint8).random_(-1, 3), RuntimeError,
     "from is out of bounds for unsigned char"),
    (lambda: ember.rand(2, generator=object()), TypeError, "generator must be a "
                                                            "ember.Generator"),
])
def test_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_random_float_out_of_range_warns():
    with pytest.warns(UserWarning, match=r"to - 1 is out of bounds \[-\(2\^24\), 2\^24\]"):
        ember.zeros(2).random_(0, 2 ** 30)
