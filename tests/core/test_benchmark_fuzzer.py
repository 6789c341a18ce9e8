"""``ember.utils.benchmark``'s ``Fuzzer`` family and ``op_fuzzers``: PyTorch's draws for a
seed (shapes, steps, memory orders), its errors, and the benchmark recipe's fuzzing section.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import ember
from ember.utils import benchmark
from ember.utils.benchmark import (
    FuzzedParameter,
    FuzzedSparseTensor,
    FuzzedTensor,
    Fuzzer,
    ParameterAlias,
)


def _recipe_fuzzer(lib_benchmark):
    b = lib_benchmark
    return b.Fuzzer(
        parameters=[b.FuzzedParameter("k0", minval=1, maxval=10000, distribution="loguniform"),
                    b.FuzzedParameter("k1", minval=1, maxval=10000, distribution="loguniform")],
        tensors=[b.FuzzedTensor("x", size=("k0", "k1"), min_elements=128,
                                max_elements=10000000, probability_contiguous=0.6)],
        seed=0)


def test_the_benchmark_recipes_fuzzer_draws_its_cases():
    """PyTorch's benchmark recipe (section 7) prints these ten cases for seed 0."""
    rows = []
    for tensors, props, params in _recipe_fuzzer(benchmark).take(10):
        x = tensors["x"]
        assert tuple(x.shape) == (params["k0"], params["k1"]) and x.dtype == ember.float32
        assert props["x"]["is_contiguous"] == x.is_contiguous()
        assert props["x"]["numel"] == x.numel() and props["x"]["dtype"] == str(ember.float32)
        rows.append((params["k0"], params["k1"], props["x"]["is_contiguous"]))
    assert rows == [(725, 257, True), (49, 383, True), (34, 1468, True), (187, 5039, True),
                    (2140, 1296, False), (78, 1598, True), (519, 763, True), (141, 1082, True),
                    (78, 5, False), (187, 1, True)]
    x = next(iter(_recipe_fuzzer(benchmark).take(5)))[0]["x"]
    assert float(x.min()) >= 0 and float(x.max()) < 1  # rand, the default for floats


# (seeds whose first cases allocate little: a case may allocate up to 2 GB)
OP_FUZZERS = [("binary", "BinaryOpFuzzer", {"seed": 22}), ("unary", "UnaryOpFuzzer", {"seed": 7}),
              ("spectral", "SpectralOpFuzzer", {"seed": 2}),
              ("spectral", "SpectralOpFuzzer", {"seed": 5, "probability_regular": 0.5}),
              ("sparse_unary", "UnaryOpSparseFuzzer", {"seed": 3}),
              ("sparse_binary", "BinaryOpSparseFuzzer", {"seed": 4})]


def _cases(lib, mod, cls, kwargs, n=4):
    fuzzer = getattr(importlib.import_module(f"{lib}.utils.benchmark.op_fuzzers.{mod}"),
                     cls)(**kwargs)
    out = []
    for tensors, props, params in fuzzer.take(n):
        shapes = {}
        for k, t in tensors.items():
            p = props[k]
            shapes[k] = (tuple(t.shape), p["sparse_dim"], p["is_hybrid"]) if t.is_sparse \
                else (tuple(t.shape), tuple(t.stride()), p["is_contiguous"],
                      tuple(p["order"].tolist()), tuple(p["steps"]))
        out.append((params, shapes))
    return out, fuzzer.rejection_rate


@pytest.mark.parametrize("mod,cls,kwargs", OP_FUZZERS)
def test_op_fuzzers_draw_pytorchs_cases(mod, cls, kwargs, monkeypatch):
    """Parameters, shapes, strides and memory orders equal PyTorch's for the same seed
    (PyTorch 2.13's own dict-distribution check is inverted, so it is bypassed there; its
    sparse tensors' values, from its generator, differ, so only their shapes compare)."""
    pytest.importorskip("torch")
    fz = importlib.import_module("torch.utils.benchmark.utils.fuzzer")

    def fixed_check(self, distribution):
        return distribution

    monkeypatch.setattr(fz.FuzzedParameter, "_check_distribution", fixed_check)
    ours, their_rate = _cases("ember", mod, cls, kwargs)
    theirs, rate = _cases("torch", mod, cls, kwargs)
    assert ours == theirs and their_rate == rate


def test_tensor_options_steps_constructor_and_dtypes():
    def ramp(size, dtype, **params):
        return ember.arange(np.prod(size), dtype=dtype).reshape(size)

    f = Fuzzer(parameters=[FuzzedParameter("n", minval=4, maxval=6, distribution="uniform"),
                           FuzzedParameter("s", distribution={2: 0.5, 3: 0.5})],
               tensors=[FuzzedTensor("x", size=("n", 5), steps=("s", 1),
                                     probability_contiguous=1.0, dtype=ember.float64,
                                     tensor_constructor=ramp),
                        FuzzedTensor("i", size=(3,), dtype=ember.int32)],
               seed=11)
    for tensors, props, params in f.take(6):
        x, i = tensors["x"], tensors["i"]
        assert 4 <= params["n"] <= 6 and isinstance(params["n"], int)
        assert tuple(x.shape) == (params["n"], 5) and x.dtype == ember.float64
        np.testing.assert_array_equal(x[1].numpy(), np.arange(5) + 5 * params["s"])
        assert props["x"]["steps"] == (params["s"], 1) and not props["x"]["is_contiguous"]
        assert i.dtype == ember.int32 and 1 <= int(i.min()) and int(i.max()) < 127
    u = FuzzedParameter("u", minval=0.5, maxval=2, distribution="uniform")
    assert isinstance(u.sample(np.random.RandomState(0)), float)


def test_sparse_tensors():
    f = Fuzzer(parameters=[FuzzedParameter("k", distribution={40: 1.0}),
                           FuzzedParameter("density", distribution={0.5: 1.0}),
                           FuzzedParameter("coalesced", distribution={False: 1.0}),
                           FuzzedParameter("sparse_dim", distribution={1: 1.0})],
               tensors=[FuzzedSparseTensor("x", size=("k", 3), sparse_dim="sparse_dim",
                                           density="density", coalesced="coalesced")],
               seed=0)
    tensors, props, _ = next(iter(f.take(1)))
    x = tensors["x"]
    assert x.is_sparse and tuple(x.shape) == (40, 3) and not x.is_coalesced()
    assert x._nnz() == 2 * 22  # ceil((40 + 3) * 0.5) indices, each once more uncoalesced
    assert props["x"]["sparse_dim"] == 1 and props["x"]["dense_dim"] == 1
    assert props["x"]["is_hybrid"] and props["x"]["sparsity"] == 0.5


def test_constraints_aliases_and_errors():
    f = Fuzzer(parameters=[FuzzedParameter("a", minval=1, maxval=100, distribution="uniform"),
                           FuzzedParameter("b", distribution={ParameterAlias("a"): 0.5,
                                                              1: 0.5})],
               tensors=[], constraints=[lambda p: p["a"] % 2 == 0], seed=3)
    cases = [params for _, _, params in f.take(20)]
    assert all(p["a"] % 2 == 0 and p["b"] in (p["a"], 1) for p in cases)
    assert any(p["b"] == p["a"] != 1 for p in cases) and 0 < f.rejection_rate < 1
    with pytest.raises(AssertionError, match="Unknown distribution: gauss"):
        FuzzedParameter("a", 0, 1, distribution="gauss")
    with pytest.raises(AssertionError, match="Distribution is not normalized"):
        FuzzedParameter("a", distribution={1: 0.5, 2: 0.4})
    with pytest.raises(AssertionError, match="Probabilities cannot be negative"):
        FuzzedParameter("a", distribution={1: 1.5, 2: -0.5})
    with pytest.raises(AssertionError, match="'minval' must be None"):
        FuzzedParameter("a", minval=1, distribution={1: 1.0})
    with pytest.raises(ValueError, match="Duplicate names in parameters and tensors"):
        Fuzzer([FuzzedParameter("x", 1, 2, distribution="uniform")],
               [FuzzedTensor("x", size=(1,))])
    cyc = Fuzzer([FuzzedParameter("p", distribution={ParameterAlias("q"): 1.0}),
                  FuzzedParameter("q", distribution={ParameterAlias("p"): 1.0})], [], seed=0)
    with pytest.raises(ValueError, match="ParameterAlias cycle detected"):
        next(iter(cyc.take(1)))
    never = Fuzzer([FuzzedParameter("n", 1, 2, distribution="uniform")],
                   [FuzzedTensor("x", size=("n",), min_elements=10)], seed=0)
    with pytest.raises(ValueError, match="Failed to generate a set of valid parameters"):
        next(iter(never.take(1)))
    assert repr(ParameterAlias("a")) == "ParameterAlias[alias_to: a]"
