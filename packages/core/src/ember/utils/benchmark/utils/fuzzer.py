"""Random benchmark inputs, as ``torch.utils.benchmark``'s ``Fuzzer`` family.

A :class:`Fuzzer` draws named parameters (:class:`FuzzedParameter`: log-uniform, uniform or a
table of choices, possibly :class:`ParameterAlias` es of each other), rejects draws that
break its constraints or a tensor's size limits, and builds the :class:`FuzzedTensor` s the
parameters describe: shaped, optionally strided (``steps``) and, with probability
``1 - probability_contiguous``, laid out in a permuted memory order. The draws come from a
``numpy.random.RandomState(seed)`` in PyTorch's order, so a seed gives PyTorch's parameters
and layouts; tensor values come from Ember's generator (seeded from the same state), which
is not PyTorch's stream.

One deliberate difference: PyTorch 2.13's ``FuzzedParameter`` rejects every normalized
``dict`` distribution ("Distribution is not normalized", its check is inverted), so its own
``op_fuzzers`` cannot be built; here a dict distribution must sum to one, as documented.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["Fuzzer", "FuzzedParameter", "ParameterAlias", "FuzzedTensor"]

_DISTRIBUTIONS = ("loguniform", "uniform")


class FuzzedParameter:
    """A named parameter drawn for each case.

    ``distribution``: ``"loguniform"`` (integers between ``minval`` and ``maxval``, uniform in
    log space), ``"uniform"`` (integers when both bounds are ints, else floats), or a dict of
    ``{value: probability}`` (probabilities summing to one; ``minval``/``maxval`` then unset).
    A ``strict`` parameter is drawn once per case and kept while the others are redrawn to
    meet the constraints (so that rejection does not skew it).
    """

    def __init__(self, name: str, minval: int | float | None = None,
                 maxval: int | float | None = None,
                 distribution: str | dict[Any, float] | None = None,
                 strict: bool = False) -> None:
        self._name = name
        self._minval = minval
        self._maxval = maxval
        self._distribution = self._check_distribution(distribution)
        self.strict = strict

    @property
    def name(self) -> str:
        return self._name

    def _check_distribution(self, distribution):
        if not isinstance(distribution, dict):
            if distribution not in _DISTRIBUTIONS:
                raise AssertionError(f"Unknown distribution: {distribution}")
            return distribution
        if any(p < 0 for p in distribution.values()):
            raise AssertionError("Probabilities cannot be negative")
        if abs(sum(distribution.values()) - 1) > 1e-5:
            raise AssertionError("Distribution is not normalized")
        if self._minval is not None:
            raise AssertionError("When passing a custom distribution, 'minval' must be None")
        if self._maxval is not None:
            raise AssertionError("When passing a custom distribution, 'maxval' must be None")
        return distribution

    def sample(self, state: np.random.RandomState):
        """One draw from ``state``."""
        dist = self._distribution
        if dist == "loguniform":
            low = None if self._minval is None else np.log2(self._minval)
            high = None if self._maxval is None else np.log2(self._maxval)
            value = int(2 ** state.uniform(low=low, high=high))
            if self._minval is not None and value < self._minval:
                return self._minval
            if self._maxval is not None and value > self._maxval:
                return self._maxval
            return value
        if dist == "uniform":
            if isinstance(self._minval, int) and isinstance(self._maxval, int):
                return int(state.randint(low=self._minval, high=self._maxval + 1))
            return state.uniform(low=self._minval, high=self._maxval)
        keys = list(dist)
        return keys[state.choice(np.arange(len(keys)), p=tuple(dist.values()))]


class ParameterAlias:
    """A parameter's value taken from another parameter (``alias_to``): in a dict
    distribution, ``{ParameterAlias("x_len"): 0.5, 1: 0.5}`` sometimes broadcasts."""

    def __init__(self, alias_to) -> None:
        self.alias_to = alias_to

    def __repr__(self) -> str:
        return f"ParameterAlias[alias_to: {self.alias_to}]"


def dtype_size(dtype) -> int:
    """Bytes per element of ``dtype``."""
    return dtype.itemsize


def prod(values, base: int = 1) -> int:
    """The product in Python integers (NumPy's would overflow for large sizes)."""
    return math.prod(values, start=base)


class FuzzedTensor:
    """A tensor built from a case's parameters.

    ``size`` (and ``steps``) hold ints or parameter names; with ``steps`` a larger tensor is
    made and sliced with those strides. With probability ``1 - probability_contiguous`` its
    memory order is a random permutation of its dims. ``min_elements``, ``max_elements`` and
    ``max_allocation_bytes`` reject cases; ``dim_parameter`` names a parameter that truncates
    (or pads with ones) ``size`` and ``steps``; ``tensor_constructor(size=, dtype=,
    **params)`` replaces the default ``rand`` (floats) / ``randint(1, 127)`` (integers).
    """

    def __init__(self, name: str, size: tuple, steps: tuple | None = None,
                 probability_contiguous: float = 0.5, min_elements: int | None = None,
                 max_elements: int | None = None, max_allocation_bytes: int | None = None,
                 dim_parameter: str | None = None, roll_parameter: str | None = None,
                 dtype=None, cuda: bool = False,  # (roll_parameter: accepted, unused, as there)
                 tensor_constructor: Callable | None = None) -> None:
        import ember

        self._name = name
        self._size = size
        self._steps = steps
        self._probability_contiguous = probability_contiguous
        self._min_elements = min_elements
        self._max_elements = max_elements
        self._max_allocation_bytes = max_allocation_bytes
        self._dim_parameter = dim_parameter
        self._dtype = ember.float32 if dtype is None else dtype
        self._cuda = cuda
        self._tensor_constructor = tensor_constructor

    @property
    def name(self) -> str:
        return self._name

    @staticmethod
    def default_tensor_constructor(size, dtype, **kwargs):
        import ember

        if dtype.is_floating_point or dtype.is_complex:
            return ember.rand(size=size, dtype=dtype, device="cpu")
        return ember.randint(1, 127, size=size, dtype=dtype, device="cpu")

    def _make_tensor(self, params, state):
        size, steps, allocation = self._get_size_and_steps(params)
        make = self._tensor_constructor or self.default_tensor_constructor
        raw = make(size=allocation, dtype=self._dtype, **params)
        if self._cuda:
            raw = raw.cuda()
        # a random memory order: permute, make contiguous, permute back
        dim = len(size)
        order = np.arange(dim)
        if state.rand() > self._probability_contiguous:
            while dim > 1 and np.all(order == np.arange(dim)):
                order = state.permutation(raw.dim())
            raw = raw.permute(tuple(order)).contiguous().permute(tuple(np.argsort(order)))
        tensor = raw[tuple(slice(0, n * s, s) for n, s in zip(size, steps, strict=True))]
        return tensor, {"numel": int(tensor.numel()), "order": order, "steps": steps,
                        "is_contiguous": tensor.is_contiguous(), "dtype": str(self._dtype)}

    def _get_size_and_steps(self, params):
        dim = params[self._dim_parameter] if self._dim_parameter is not None \
            else len(self._size)

        def resolve(values):
            values = tuple(params.get(v, v) for v in values)[:dim]
            return values + (1,) * (dim - len(values))

        size = resolve(self._size)
        steps = resolve(self._steps or ())
        return size, steps, tuple(n * s for n, s in zip(size, steps, strict=True))

    def satisfies_constraints(self, params) -> bool:
        """Whether the case's sizes respect the element and allocation limits."""
        size, _, allocation = self._get_size_and_steps(params)
        numel = prod(size)
        if numel < 0:
            raise AssertionError("Computed number of elements is negative")
        nbytes = prod(allocation, base=dtype_size(self._dtype))

        def above(value, limit):
            return value is not None and limit is not None and value > limit

        return not (above(numel, self._max_elements) or above(self._min_elements, numel)
                    or above(nbytes, self._max_allocation_bytes))


class Fuzzer:
    """Draws cases: ``for tensors, tensor_properties, params in fuzzer.take(n)``.

    ``parameters`` and ``tensors`` are lists whose items may themselves be lists (flattened
    one level); ``constraints`` are callables of the parameter dict that reject a case by
    returning False. ``seed`` seeds the draws and Ember's generator (a
    random seed when None). A case is redrawn up to 1000 times before ``ValueError``.
    """

    def __init__(self, parameters: list, tensors: list,
                 constraints: list[Callable] | None = None, seed: int | None = None) -> None:
        if seed is None:
            seed = int(np.random.RandomState().randint(0, 2 ** 32 - 1, dtype=np.int64))
        self._seed = seed
        self._parameters = Fuzzer._unpack(parameters, FuzzedParameter)
        self._tensors = Fuzzer._unpack(tensors, FuzzedTensor)
        self._constraints = constraints or ()
        overlap = {p.name for p in self._parameters} & {t.name for t in self._tensors}
        if overlap:
            raise ValueError(f"Duplicate names in parameters and tensors: {overlap}")
        self._rejections = 0
        self._total_generated = 0

    @staticmethod
    def _unpack(values, cls) -> tuple:
        return tuple(itertools.chain.from_iterable([v] if isinstance(v, cls) else v
                                                   for v in values))

    def take(self, n: int):
        """Yield ``n`` cases: ``(tensors, tensor_properties, params)``, each a dict keyed by
        name."""
        import ember

        state = np.random.RandomState(self._seed)
        ember.manual_seed(int(state.randint(low=0, high=2 ** 63, dtype=np.int64)))
        for _ in range(n):
            params = self._generate(state)
            tensors, properties = {}, {}
            for t in self._tensors:
                tensors[t.name], properties[t.name] = t._make_tensor(params, state)
            yield tensors, properties, params

    @property
    def rejection_rate(self) -> float:
        """The fraction of drawn cases rejected so far."""
        return self._rejections / self._total_generated if self._total_generated else 0.0

    def _generate(self, state):
        strict: dict = {}
        for _ in range(1000):
            candidate = {}
            for p in self._parameters:
                if p.strict and p.name in strict:
                    candidate[p.name] = strict[p.name]
                    continue
                candidate[p.name] = p.sample(state)
                if p.strict:
                    strict[p.name] = candidate[p.name]
            candidate = self._resolve_aliases(candidate)
            self._total_generated += 1
            if not all(f(candidate) for f in self._constraints) or \
                    not all(t.satisfies_constraints(candidate) for t in self._tensors):
                self._rejections += 1
                continue
            return candidate
        raise ValueError("Failed to generate a set of valid parameters.")

    @staticmethod
    def _resolve_aliases(params):
        params = dict(params)
        pending = sum(isinstance(v, ParameterAlias) for v in params.values())
        while pending:
            for k in list(params):
                if isinstance(params[k], ParameterAlias):
                    params[k] = params[params[k].alias_to]
            left = sum(isinstance(v, ParameterAlias) for v in params.values())
            if left == pending:
                raise ValueError(f"ParameterAlias cycle detected\n{params}")
            pending = left
        return params
