"""NumPy's floating-point warnings stay silent inside Ember's kernels, whatever filters the
program puts in front (PyTorch computes inf and nan without a warning), while NumPy code of
the program's own keeps warning (``ember._fp_warnings``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember import _fp_warnings


def _inf_and_nan():
    x = ember.tensor([0.0, 1.0], requires_grad=True)
    y = (x / x).sum() + ember.log(x).sum() + (x * 1e38).exp().sum()
    y.backward()  # the backward divides by zero too
    return y, x.grad


def test_an_error_filter_in_front_does_not_reach_ember_kernels():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y, g = _inf_and_nan()
        assert np.isnan(y.item()) and np.isnan(g[0].item())
        with pytest.raises(RuntimeWarning, match="divide by zero"):
            np.ones(1) / 0  # the program's own NumPy call still obeys its filter


def test_always_records_nothing_from_ember_but_the_programs_own_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _inf_and_nan()
        np.ones(1) / 0
    assert [(w.category, str(w.message)) for w in caught] == [
        (RuntimeWarning, "divide by zero encountered in divide")]
    assert caught[0].filename == __file__


@pytest.mark.filterwarnings("error")
def test_pytests_error_filter():
    assert ember.log(ember.zeros(2)).tolist() == [-np.inf, -np.inf]


def test_the_filter_comes_back_first_after_every_change():
    with warnings.catch_warnings():
        warnings.resetwarnings()
        assert warnings.filters[0] == _fp_warnings.FILTER
        warnings.filterwarnings("error", category=RuntimeWarning)
        warnings.simplefilter("always", append=True)
        assert warnings.filters[0] == _fp_warnings.FILTER
        assert warnings.filters.count(_fp_warnings.FILTER) == 1
        assert warnings.filters[1][0] == "error"


def test_install_is_idempotent():
    hook = warnings._filters_mutated
    _fp_warnings.install()
    _fp_warnings.install()
    assert warnings._filters_mutated is hook and hook._ember_front
    assert not getattr(hook.__wrapped__, "_ember_front", False)
    assert warnings.filters.count(_fp_warnings.FILTER) == 1
