"""The last PyTorch names of ember-core (issue 18): the modules ``ember.random``,
``ember.quasirandom`` (``SobolEngine``), ``ember.storage``, ``ember.functional`` and
``ember.torch_version``; ``ember.utils.data._DatasetKind``; and
``ember.autograd.set_multithreading_enabled`` / ``enforce_grad_layout_policy``.

Compared with PyTorch where it is installed: Sobol' sequences point for point, version
comparisons, the grad-mode flags' states and errors.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import threading

import numpy as np
import pytest

import ember


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


# -- the modules are reachable as PyTorch's are, without slowing ``import ember`` -------------

NEW_MODULES = ["functional", "quasirandom", "random", "storage", "torch_version"]


def test_new_modules_are_attributes_loaded_on_first_use():
    code = (f"import sys, ember; print(sorted(m for m in {NEW_MODULES!r} "
            "if 'ember.' + m in sys.modules)); "
            "print(ember.random.__name__, ember.quasirandom.SobolEngine.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out == ["[]", "ember.random SobolEngine"]
    for name in NEW_MODULES:
        assert getattr(ember, name) is importlib.import_module(f"ember.{name}")


# -- ember.random ------------------------------------------------------------------------------

def test_random_names_are_embers_generator_functions(torch):
    import ember.random as r

    assert r.__all__ == torch.random.__all__
    for name in ("manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
                 "default_generator", "Generator"):
        assert getattr(r, name) is getattr(ember, name)
    assert r.manual_seed(5) is ember.default_generator and r.initial_seed() == 5
    assert r.thread_safe_generator() is None  # outside thread workers, as in PyTorch


def test_fork_rng_restores_the_state():
    from ember.random import fork_rng

    def cpu_rand(n):  # the CPU generator's draws (fork_rng forks the CPU and accelerators)
        return ember.rand(n, device="cpu")

    ember.manual_seed(3)
    state = ember.random.get_rng_state()
    expected = cpu_rand(4)
    ember.random.set_rng_state(state)
    with fork_rng():
        inside = cpu_rand(4)
        ember.manual_seed(99)
        cpu_rand(10)
    np.testing.assert_array_equal(inside.numpy(), expected.numpy())
    np.testing.assert_array_equal(cpu_rand(4).numpy(), expected.numpy())  # forked back
    ember.random.set_rng_state(state)
    with fork_rng(enabled=False):
        cpu_rand(4)
    assert not np.array_equal(cpu_rand(4).numpy(), expected.numpy())  # not forked
    with fork_rng(devices=[], device_type="cuda"):
        cpu_rand(1)
    with fork_rng(device_type="meta"):
        pass

    @fork_rng()
    def draw():
        return cpu_rand(2)

    del draw  # a context manager from contextlib: usable as a decorator too
    with pytest.raises(RuntimeError, match="nosuch"):
        with fork_rng(device_type="nosuch"):
            pass


# -- ember.quasirandom -------------------------------------------------------------------------

@pytest.mark.parametrize("dimension", [1, 2, 7, 40, 1111, 21201])
def test_sobol_sequences_equal_torchs(torch, dimension):
    from ember.quasirandom import SobolEngine

    ours, theirs = SobolEngine(dimension), torch.quasirandom.SobolEngine(dimension)
    np.testing.assert_array_equal(ours.sobolstate.numpy(), theirs.sobolstate.numpy())
    n = 33 if dimension < 5000 else 3
    np.testing.assert_array_equal(ours.draw(n).numpy(), theirs.draw(n).numpy())
    np.testing.assert_array_equal(ours.draw(n, dtype=ember.float64).numpy(),
                                  theirs.draw(n, dtype=torch.float64).numpy())
    ours.fast_forward(5)
    theirs.fast_forward(5)
    np.testing.assert_array_equal(ours.draw(2).numpy(), theirs.draw(2).numpy())
    assert ours.num_generated == theirs.num_generated


def test_sobol_draw_base2_reset_fast_forward_out_like_torch(torch):
    from ember.quasirandom import SobolEngine

    pairs = [(SobolEngine(5), torch.quasirandom.SobolEngine(5)) for _ in range(4)]
    (a, ta), (b, tb), (c, tc), (d, td) = pairs
    np.testing.assert_array_equal(a.draw_base2(4).numpy(), ta.draw_base2(4).numpy())
    np.testing.assert_array_equal(a.draw_base2(4).numpy(), ta.draw_base2(4).numpy())
    b.draw(3)
    tb.draw(3)
    assert b.reset() is b
    tb.reset()
    np.testing.assert_array_equal(b.draw(1).numpy(), tb.draw(1).numpy())
    np.testing.assert_array_equal(c.fast_forward(0).draw(2).numpy(),
                                  tc.fast_forward(0).draw(2).numpy())
    np.testing.assert_array_equal(c.fast_forward(1).draw(3).numpy(),
                                  tc.fast_forward(1).draw(3).numpy())
    out, tout = ember.empty(0), torch.empty(0)
    assert d.draw(4, out=out) is out
    td.draw(4, out=tout)
    np.testing.assert_array_equal(out.numpy(), tout.numpy())
    assert d.draw(0).shape == (0, 5) == tuple(td.draw(0).shape)
    assert repr(SobolEngine(3, scramble=True, seed=5)) == repr(
        torch.quasirandom.SobolEngine(3, scramble=True, seed=5))
    assert repr(SobolEngine(3)) == "SobolEngine(dimension=3)"
    assert SobolEngine.MAXDIM == torch.quasirandom.SobolEngine.MAXDIM == 21201
    assert SobolEngine.MAXBIT == torch.quasirandom.SobolEngine.MAXBIT


def test_sobol_errors_are_torchs(torch):
    from ember.quasirandom import SobolEngine

    def error(make):
        with pytest.raises(Exception) as info:
            make()
        return type(info.value), str(info.value)

    for make in (lambda lib: lib.quasirandom.SobolEngine(0),
                 lambda lib: lib.quasirandom.SobolEngine(21202),
                 lambda lib: lib.quasirandom.SobolEngine(3).draw(0),
                 lambda lib: lib.quasirandom.SobolEngine(3).draw(2, dtype=lib.int64),
                 lambda lib: lib.quasirandom.SobolEngine(3).draw(2, dtype=lib.float16),
                 lambda lib: lib.quasirandom.SobolEngine(2).fast_forward(3).draw_base2(2)):
        assert error(lambda make=make: make(ember)) == error(lambda make=make: make(torch))
    # the first point alone is a cast, which PyTorch allows in half precision too
    assert SobolEngine(3).draw(1, dtype=ember.float16).dtype == ember.float16


def test_sobol_scramble_is_pytorchs_algorithm(torch):
    """Given the same random bits, the scrambled direction numbers equal PyTorch's."""
    from ember.quasirandom import _direction_numbers, _scramble

    rng = np.random.default_rng(0)
    for dimension in (1, 3, 64):
        state = _direction_numbers(dimension)
        ltm = np.tril(rng.integers(0, 2, (dimension, 30, 30)))
        expected = torch.from_numpy(state.copy())
        torch._sobol_engine_scramble_(expected, torch.from_numpy(ltm), dimension)
        _scramble(state, ltm)
        np.testing.assert_array_equal(state, expected.numpy())


def test_scrambled_sobol_is_a_seeded_net():
    from ember.quasirandom import SobolEngine

    points = SobolEngine(4, scramble=True, seed=3).draw_base2(10, dtype=ember.float64).numpy()
    again = SobolEngine(4, scramble=True, seed=3).draw_base2(10, dtype=ember.float64).numpy()
    other = SobolEngine(4, scramble=True, seed=4).draw(1024, dtype=ember.float64).numpy()
    np.testing.assert_array_equal(points, again)
    assert not np.array_equal(points, other)
    assert points.min() >= 0 and points.max() < 1
    for j in range(4):  # each coordinate puts one point in each of the 1024 strata
        assert len(np.unique(np.floor(points[:, j] * 1024))) == 1024
    for j, k in ((0, 1), (1, 2)):  # these pairs are (0, 10, 2)-nets: one point per 32 x 32 cell
        cells = np.floor(points[:, j] * 32) * 32 + np.floor(points[:, k] * 32)
        assert len(np.unique(cells)) == 1024
    ember.manual_seed(0)
    a = SobolEngine(2, scramble=True).draw(4)
    ember.manual_seed(0)
    b = SobolEngine(2, scramble=True).draw(4)  # unseeded: the default generator draws
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_sobol_first_point_keeps_pytorchs_default_dtype_rounding():
    """PyTorch computes the first point in the default dtype when the engine is made."""
    from ember.quasirandom import SobolEngine

    engine = SobolEngine(3, scramble=True, seed=1)
    first = engine.draw(1, dtype=ember.float64).numpy()
    exact = engine.shift.numpy() / 2**30
    np.testing.assert_array_equal(first[0], exact.astype(np.float32).astype(np.float64))


def test_sobol_integrates_better_than_random():
    from ember.quasirandom import SobolEngine

    points = SobolEngine(3).draw(4096, dtype=ember.float64).numpy()
    estimate = np.prod(np.sin(np.pi * points), axis=1).mean()
    assert abs(estimate - (2 / np.pi) ** 3) < 1e-3


# -- ember.storage, ember.functional -----------------------------------------------------------

def test_storage_module(torch):
    import ember.storage as s

    assert s.__all__ == torch.storage.__all__
    assert s.UntypedStorage is ember.UntypedStorage and s.TypedStorage is ember.TypedStorage
    t = ember.arange(4.0)
    assert isinstance(t.untyped_storage(), s.UntypedStorage)
    assert t.untyped_storage().nbytes() == 16


def test_functional_module_reexports(torch):
    import ember.functional as f

    assert set(torch.functional.__all__) - set(f.__all__) == {
        "stft", "istft", "pca_lowrank", "svd_lowrank"}
    for name in f.__all__:
        assert getattr(f, name) is getattr(ember, name)
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(
        f.einsum("ij,jk->ik", ember.tensor(a), ember.tensor(b)).numpy(),
        torch.functional.einsum("ij,jk->ik", torch.tensor(a), torch.tensor(b)).numpy())
    assert [t.tolist() for t in f.split(ember.arange(5), 2)] == [
        t.tolist() for t in torch.functional.split(torch.arange(5), 2)]


# -- ember.torch_version -----------------------------------------------------------------------

VERSIONS = ["2.13.0", "2.13", "2.9.1", "2.13.0a0", "2.13.0rc1", "2.13.0.dev20250101",
            "2.13.0+cpu", "2.13.0.post1", "1!0.1", "0.1.0", "1.10.0a", "not a version"]
COMPARANDS = ["2.13.0", "2.9", "2.13", "2.13.0+cpu", "2.13.0+cu121", "2.13.0a1", "2.13.0b0",
              "2.13.0.dev1", "1.2.1", (2, 13), (2, 9, 1), [1, 2], "not a version", "abc",
              "2.13.0.post0", "2.13.0-1", "v2.13.0", "2.13.0-rc.1"]


def test_torch_version_compares_like_torchs(torch):
    from torch.torch_version import TorchVersion as Theirs

    from ember.torch_version import TorchVersion as Ours

    for version in VERSIONS:
        for other in COMPARANDS:
            for op in ("__lt__", "__le__", "__eq__", "__ge__", "__gt__", "__ne__"):
                assert getattr(Ours(version), op)(other) == getattr(Theirs(version), op)(
                    other), (version, op, other)
        assert hash(Ours(version)) == hash(version)
    with pytest.raises(TypeError):
        Ours("2.13.0") > 5  # noqa: B015
    assert Ours("2.13.0") != 5


def test_torch_version_dunder_version():
    from ember.torch_version import TorchVersion, __version__

    assert isinstance(__version__, TorchVersion) and isinstance(ember.__version__, TorchVersion)
    assert __version__ == ember.version.__version__ == ember.__version__
    assert ember.__version__ >= "0.0.1" and ember.__version__ > (0,)


# -- ember.utils.data._DatasetKind -------------------------------------------------------------

def test_dataset_kind_at_torchs_paths(torch):
    from ember.utils.data import _DatasetKind

    assert ember.utils.data.dataloader._DatasetKind is _DatasetKind
    assert ember.data._DatasetKind is _DatasetKind
    assert "_DatasetKind" in ember.utils.data.__all__
    theirs = torch.utils.data._DatasetKind
    assert (_DatasetKind.Map, _DatasetKind.Iterable) == (theirs.Map, theirs.Iterable)

    class Squares(ember.utils.data.IterableDataset):
        def __iter__(self):
            return iter([0, 1, 4, 9])

    mapped = _DatasetKind.create_fetcher(_DatasetKind.Map, [10, 11, 12], True, list, False)
    assert mapped.fetch([2, 0]) == [12, 10]
    fetcher = _DatasetKind.create_fetcher(_DatasetKind.Iterable, Squares(), True, list, False)
    assert fetcher.fetch([None, None, None]) == [0, 1, 4]


# -- ember.autograd.set_multithreading_enabled, enforce_grad_layout_policy ---------------------

FLAGS = {
    "set_multithreading_enabled": ("multithreading", "_is_multithreading_enabled"),
    "enforce_grad_layout_policy": ("grad_layout_enforced",
                                   "_is_grad_layout_enforcement_enabled"),
}


def _flag_trace(lib, name):
    """The flag's value through a function call, a block and a decorated call."""
    if lib is ember:
        from ember.autograd.grad_mode import GRAD

        def read():
            return getattr(GRAD, FLAGS[name][0])
    else:
        read = getattr(lib._C, FLAGS[name][1])
    cls = getattr(lib.autograd, name)
    trace = [read()]
    cls(False)
    trace.append(read())
    cls(True)
    with cls(False):
        trace.append(read())
    trace.append(read())

    @cls(False)
    def decorated():
        return read()

    trace += [read(), decorated(), read()]
    cls(True)
    seen = []
    with cls(False):
        worker = threading.Thread(target=lambda: seen.append(read()))
        worker.start()
        worker.join()
    trace += seen
    for bad in (1, None):
        with pytest.raises(TypeError) as info:
            cls(bad)
        trace.append(str(info.value))
    return trace


@pytest.mark.parametrize("name", list(FLAGS))
def test_grad_mode_flags_behave_like_torchs(torch, name):
    assert getattr(ember.autograd, name) is getattr(ember.autograd.grad_mode, name)
    assert name in ember.autograd.grad_mode.__all__ and name in ember.autograd.__all__
    assert _flag_trace(ember, name) == _flag_trace(torch, name)


def test_backward_under_the_flags_is_unchanged():
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]]).t().requires_grad_()  # a transposed leaf
    with ember.autograd.set_multithreading_enabled(False), \
            ember.autograd.enforce_grad_layout_policy(False):
        (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * x.detach().numpy())
