"""Differences from PyTorch 2.13 found by differential probes of random sampling and generators."""
import re

import pytest

import ember


def _torch():
    return pytest.importorskip("torch")


def _raises_like_torch(fn_name, build, exc, msg):
    """``build(lib)`` raises ``exc`` with ``msg`` in Ember and (when importable) in PyTorch."""
    with pytest.raises(exc, match=re.escape(msg)):
        build(ember)
    torch = _torch()
    with pytest.raises(exc, match=re.escape(msg)):
        build(torch)


def test_random_half_to_out_of_finite_range():
    _raises_like_torch("random_", lambda t: t.zeros(3, dtype=t.float16).random_(70000),
                       RuntimeError, "to - 1 is out of bounds for c10::Half")


def test_random_half_from_out_of_finite_range():
    _raises_like_torch("random_", lambda t: t.zeros(3, dtype=t.float16).random_(-70000, 3),
                       RuntimeError, "from is out of bounds for c10::Half")


def test_random_float_arguments_are_a_type_error():
    msg = ("random_() received an invalid combination of arguments - got (float, float), but "
           "expected one of:\n * (*, torch.Generator generator = None)\n      didn't match "
           "because some of the arguments have invalid types: (!float!, !float!)\n")
    _raises_like_torch("random_", lambda t: t.zeros(3).random_(3.0, 5.0), TypeError, msg)


def test_random_float_single_argument_is_a_type_error():
    msg = "random_() received an invalid combination of arguments - got (float), but"
    _raises_like_torch("random_", lambda t: t.zeros(3).random_(3.0), TypeError, msg)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_normal_is_real_draws_of_the_real_view(dtype):
    ember.manual_seed(0)
    z = ember.zeros(3, dtype=getattr(ember, dtype)).normal_(1.0, 2.0)
    ember.manual_seed(0)
    real_dt = ember.float32 if dtype == "complex64" else ember.float64
    r = ember.zeros(6, dtype=real_dt).normal_(1.0, 2.0 / 2 ** 0.5)
    assert z.dtype == getattr(ember, dtype)
    assert ember.equal(ember.view_as_real(z).reshape(6), r)
    torch = _torch()
    torch.manual_seed(0)
    tz = torch.zeros(3, dtype=getattr(torch, dtype)).normal_(1.0, 2.0)
    assert torch.view_as_real(tz).reshape(6).tolist() == pytest.approx(r.tolist())


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_uniform_is_real_draws_of_the_real_view(dtype):
    ember.manual_seed(0)
    z = ember.zeros(3, dtype=getattr(ember, dtype)).uniform_(1.0, 2.0)
    ember.manual_seed(0)
    real_dt = ember.float32 if dtype == "complex64" else ember.float64
    r = ember.zeros(6, dtype=real_dt).uniform_(1.0, 2.0)
    assert ember.equal(ember.view_as_real(z).reshape(6), r)
    assert ((r >= 1) & (r < 2)).all()
    torch = _torch()
    torch.manual_seed(0)
    tz = torch.zeros(3, dtype=getattr(torch, dtype)).uniform_(1.0, 2.0)
    assert torch.view_as_real(tz).reshape(6).tolist() == pytest.approx(r.tolist())


def test_complex_normal_negative_std():
    _raises_like_torch("normal_", lambda t: t.zeros(3, dtype=t.complex64).normal_(0.0, -1.0),
                       RuntimeError, "normal expects std >= 0.0, but found std -1")


def test_generator_clone_state():
    for lib in (ember, _torch_or_none()):
        if lib is None:
            continue
        g = lib.Generator()
        g.manual_seed(7)
        lib.rand(2, generator=g, device="cpu")
        c = g.clone_state()
        assert isinstance(c, lib.Generator) and c is not g
        assert c.initial_seed() == 7
        assert lib.equal(lib.rand(2, generator=g, device="cpu"),
                         lib.rand(2, generator=c, device="cpu"))


def _torch_or_none():
    try:
        import torch
    except ImportError:
        return None
    return torch


def test_generator_graphsafe_state_not_supported_on_cpu():
    _raises_like_torch("g", lambda t: t.Generator().graphsafe_get_state(), NotImplementedError,
                       "graphsafe_get_state is not supported in this Generator")
    _raises_like_torch("g", lambda t: t.Generator().graphsafe_set_state(t.Generator()),
                       NotImplementedError,
                       "graphsafe_set_state is not supported in this Generator")


def test_poisson_nan_rate_is_rejected():
    _raises_like_torch("poisson", lambda t: t.poisson(t.tensor([float("nan")])), RuntimeError,
                       "invalid Poisson rate, expected rate to be non-negative")


def test_poisson_inf_rate_overflows_like_torch():
    out = ember.poisson(ember.tensor([float("inf"), 0.0]))
    assert out.tolist() == [-9.223372036854776e18, 0.0]
    torch = _torch()
    assert torch.poisson(torch.tensor([float("inf"), 0.0])).tolist() == out.tolist()


def test_normal_nan_std_scalar():
    msg = "normal expects std >= 0.0, but found std nan"
    _raises_like_torch("normal", lambda t: t.normal(0.0, float("nan"), (2,)), RuntimeError, msg)
    _raises_like_torch("normal_", lambda t: t.zeros(3).normal_(0.0, float("nan")), RuntimeError,
                       msg)


def test_normal_nan_std_tensor():
    _raises_like_torch("normal",
                       lambda t: t.normal(t.zeros(3), t.tensor([1.0, float("nan"), 1.0])),
                       RuntimeError, "normal expects all elements of std >= 0.0")


def test_geometric_bool_not_implemented():
    _raises_like_torch("geometric_", lambda t: t.zeros(3, dtype=t.bool).geometric_(0.5),
                       NotImplementedError, "\"geometric_cpu\" not implemented for 'Bool'")


@pytest.mark.parametrize("method", ["uniform_", "normal_", "exponential_", "cauchy_"])
def test_inplace_sampler_generator_type_error(method):
    _raises_like_torch(method, lambda t: getattr(t.zeros(3), method)(generator=1), TypeError,
                       f"{method}(): argument 'generator' must be torch.Generator, not int")
