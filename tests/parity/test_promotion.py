"""Type promotion and arithmetic against PyTorch (the oracle; skipped without it)."""

import itertools

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]


def pair(name, zero_dim):
    shape = () if zero_dim else (3,)
    e = ember.ones(shape, dtype=getattr(ember, name))
    t = torch.ones(shape, dtype=getattr(torch, name))
    return e, t


@pytest.mark.parametrize("da,db", list(itertools.product(NAMES, NAMES)))
def test_tensor_tensor_promotion(da, db):
    for a0, b0 in itertools.product([False, True], repeat=2):
        ea, ta = pair(da, a0)
        eb, tb = pair(db, b0)
        assert ember.result_type(ea, eb).name == str(torch.result_type(ta, tb)).split(".")[1]
        if "bool" not in (da, db):
            assert str((ea * eb).dtype).split(".")[1] == str((ta * tb).dtype).split(".")[1]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("scalar", [2, 2.5, True])
def test_tensor_scalar_promotion(name, scalar):
    e, t = pair(name, False)
    expected = str(torch.result_type(t, scalar)).split(".")[1]
    assert ember.result_type(e, scalar).name == expected
    if name != "bool":
        assert (e * scalar).dtype.name == str((t * scalar).dtype).split(".")[1]


@pytest.mark.parametrize("name", NAMES[1:])
def test_true_division_dtype(name):
    e, t = pair(name, False)
    assert (e / e).dtype.name == str((t / t).dtype).split(".")[1]


def test_snippet_values_match():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 5)).astype(np.float32)
    b = rng.standard_normal((5,)).astype(np.float32)

    def program(lib):
        x = lib.tensor(a, requires_grad=True)
        y = lib.tensor(b, requires_grad=True)
        z = ((x * y + 1.5) / (y * y + 2)) ** 2 - x
        z = (z.exp() * 0.1 + (x @ y).unsqueeze(1)).relu()
        loss = z.sum()
        loss.backward()
        return z.detach().numpy(), x.grad.numpy(), y.grad.numpy()

    for got, want in zip(program(ember), program(torch)):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)
