"""Differential probes of ember.distributions against torch.distributions: the same program
run with each library, its result or its error compared exactly (messages included, with
``torch`` read as ``ember``), plus plain assertions that run without torch."""

from __future__ import annotations

import math
import re

import pytest

import ember
import ember.distributions as D

# the exact messages PyTorch 2.13 raises, line-continuation indentation included
_EVENT_SHAPES = "with" + " " * 26 + "different event shapes cannot be computed"
_BREGMAN = ("The cross KL-divergence between different exponential families cannot"
            + " " * 29 + "be computed using Bregman divergences")


@pytest.fixture
def torch():
    """The oracle, validating arguments as PyTorch does by default (a ``torch.compile``
    elsewhere in the worker turns its validation off for good)."""
    torch = pytest.importorskip("torch")
    before = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(True)
    yield torch
    torch.distributions.Distribution.set_default_validate_args(before)


def _rounded(values):
    """Floats to 12 significant digits (float64 formulas agree to rounding, not bits)."""
    if isinstance(values, list):
        return [_rounded(v) for v in values]
    return float(f"{values:.12g}") if isinstance(values, float) else values


def _outcome(fn):
    """``repr`` of ``fn()``'s result, or its exception's type name and message; ``torch``
    read as ``ember`` and the strict/cuda test device's tensor annotation dropped."""
    try:
        result = fn()
    except Exception as e:
        text = f"{type(e).__name__}: {e}"
    else:
        if hasattr(result, "tolist") and hasattr(result, "dtype"):
            text = f"{tuple(result.shape)} {result.dtype} {_rounded(result.tolist())}"
        else:
            text = repr(result)
    text = text.replace("torch", "ember")
    return re.sub(r",?\s*device='(strict|cuda):0'", "", text)


def _same(program, torch):
    """``program(lib)`` gives the same outcome with ``lib`` torch and ember (float64)."""
    outcomes = []
    for lib in (torch, ember):
        before = lib.get_default_dtype()
        lib.set_default_dtype(lib.float64)
        try:
            outcomes.append(_outcome(lambda lib=lib: program(lib)))
        finally:
            lib.set_default_dtype(before)
    assert outcomes[1] == outcomes[0]
    return outcomes[1]


# -- KL: PyTorch's messages word for word ------------------------------------------------------

def _mvn(lib, n):
    return lib.distributions.MultivariateNormal(lib.zeros(n), lib.eye(n))


def _lowrank(lib, n):
    return lib.distributions.LowRankMultivariateNormal(lib.zeros(n), lib.ones(n, 1),
                                                       lib.ones(n))


_KL_SHAPE_PAIRS = {
    "mvn-mvn": (_mvn, _mvn, "Multivariate Normals"),
    "lowrank-lowrank": (_lowrank, _lowrank, "Low Rank Multivariate Normals"),
    "lowrank-mvn": (_lowrank, _mvn, "(Low Rank) Multivariate Normals"),
    "mvn-lowrank": (_mvn, _lowrank, "(Low Rank) Multivariate Normals"),
}


@pytest.mark.parametrize("pair", sorted(_KL_SHAPE_PAIRS))
def test_kl_event_shape_mismatch_message_is_torchs(pair, torch):
    make_p, make_q, _ = _KL_SHAPE_PAIRS[pair]
    _same(lambda lib: lib.distributions.kl_divergence(make_p(lib, 2), make_q(lib, 3)), torch)


@pytest.mark.parametrize("pair", sorted(_KL_SHAPE_PAIRS))
def test_kl_event_shape_mismatch_message(pair):
    make_p, make_q, what = _KL_SHAPE_PAIRS[pair]
    with pytest.raises(ValueError) as info:
        D.kl_divergence(make_p(ember, 2), make_q(ember, 3))
    assert str(info.value) == f"KL-divergence between two {what} {_EVENT_SHAPES}"


def test_kl_cross_exponential_family_message_is_torchs(torch):
    _same(lambda lib: lib.distributions.kl_divergence(lib.distributions.Normal(0.0, 1.0),
                                                      lib.distributions.Bernoulli(0.3)), torch)


def test_kl_cross_exponential_family_message():
    with pytest.raises(NotImplementedError) as info:
        D.kl_divergence(D.Normal(0.0, 1.0), D.Bernoulli(0.3))
    assert str(info.value) == _BREGMAN


# -- the package's public names ----------------------------------------------------------------

def test_star_exports_are_torchs(torch):
    assert D.__all__ == torch.distributions.__all__


def test_star_exports_leave_out_the_submodules():
    names = {}
    exec("from ember.distributions import *", names)
    assert "constraints" not in names and "transforms" not in names
    assert "Normal" in names and "ExpTransform" in names and "identity_transform" in names
    assert D.__all__.index("Poisson") == D.__all__.index("StudentT") + 1
    assert D.__all__[-1] == "identity_transform"


# -- behaviours of the brief, compared exactly --------------------------------------------------

def _normal_bad_scale(lib):
    return lib.distributions.Normal(lib.tensor([0.0, 1.0]), lib.tensor([1.0, -1.0]))


def _out_of_support(lib):
    return lib.distributions.Exponential(lib.tensor([1.0, 2.0])).log_prob(lib.tensor([-1.0, 2.0]))


def _default_off(lib):
    Dist = lib.distributions.Distribution
    Dist.set_default_validate_args(False)
    try:
        return lib.distributions.Normal(0.0, -1.0).scale
    finally:
        Dist.set_default_validate_args(True)


_PROGRAMS = {
    "normal-bad-scale": _normal_bad_scale,
    "out-of-support": _out_of_support,
    "default-validate-off": _default_off,
    "set-default-not-bool": lambda lib: lib.distributions.Distribution.set_default_validate_args(2),
    "categorical-both": lambda lib: lib.distributions.Categorical(
        probs=lib.tensor([0.3, 0.7]), logits=lib.tensor([0.3, 0.7])),
    "categorical-logits-to-probs": lambda lib: lib.distributions.Categorical(
        logits=lib.tensor([0.3, 0.7, -1.0])).probs,
    "bernoulli-probs-to-logits": lambda lib: lib.distributions.Bernoulli(
        probs=lib.tensor([0.0, 0.3, 1.0])).logits,
    "repr-broadcast": lambda lib: lib.distributions.Normal(lib.zeros(2, 3), lib.tensor(1.0)),
    "shapes-broadcast": lambda lib: tuple(
        map(tuple, (lambda d: (d.batch_shape, d.event_shape))(
            lib.distributions.Normal(lib.zeros(2, 1), lib.ones(3))))),
    "sample-int": lambda lib: tuple(lib.distributions.Normal(lib.zeros(2), 1.0).sample(3).shape),
    "rsample-unavailable": lambda lib: lib.distributions.Poisson(2.0).rsample(),
    "studentt-mean": lambda lib: lib.distributions.StudentT(lib.tensor([0.5, 1.0, 3.0])).mean,
    "cauchy-mean": lambda lib: lib.distributions.Cauchy(lib.zeros(2), 1.0).mean,
    "enumerate-no-expand": lambda lib: lib.distributions.Binomial(
        3, lib.tensor([0.2, 0.5])).enumerate_support(expand=False),
    "affine-ladj-shape": lambda lib: tuple(lib.distributions.AffineTransform(
        0.0, lib.tensor([-2.0, 3.0]), event_dim=1).log_abs_det_jacobian(
            lib.zeros(4, 2), lib.zeros(4, 2)).shape),
    "kl-unregistered": lambda lib: lib.distributions.kl_divergence(
        lib.distributions.Normal(0.0, 1.0), lib.distributions.Categorical(lib.tensor([0.5, 0.5]))),
}


@pytest.mark.parametrize("name", sorted(_PROGRAMS))
def test_program_behaves_as_torch(name, torch):
    _same(_PROGRAMS[name], torch)


def test_programs_plain():
    with pytest.raises(ValueError, match=r"^Expected parameter scale \(Tensor of shape \(2,\)\) "
                                         r"of distribution Normal\(loc: ember.Size\(\[2\]\), "
                                         r"scale: ember.Size\(\[2\]\)\) to satisfy the "
                                         r"constraint GreaterThan\(lower_bound=0.0\)"):
        _normal_bad_scale(ember)
    with pytest.raises(ValueError, match=r"^Expected value argument \(Tensor of shape \(2,\)\) "
                                         r"to be within the support \(GreaterThanEq"):
        _out_of_support(ember)
    mean = D.StudentT(ember.tensor([0.5, 1.0, 3.0])).mean.tolist()
    assert math.isnan(mean[0]) and math.isnan(mean[1]) and mean[2] == 0.0
    with pytest.raises(NotImplementedError):
        D.Poisson(2.0).rsample()
