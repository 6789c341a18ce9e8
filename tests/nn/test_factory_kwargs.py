"""ember.nn.factory_kwargs against PyTorch: results and errors."""

import pytest
from testutils import assert_same_error

import ember.nn as nn

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("kwargs", [
    None, {}, {"device": "cpu"}, {"dtype": 1, "memory_format": 2},
    {"factory_kwargs": {"dtype": 3}, "device": "cpu"}, {"factory_kwargs": {"other": 1}},
])
def test_factory_kwargs_matches_torch(kwargs):
    assert nn.factory_kwargs(kwargs) == torch.nn.factory_kwargs(kwargs)


@pytest.mark.parametrize("kwargs", [
    {"bad": 1}, {"dtype": 1, "factory_kwargs": {"dtype": 2}},
])
def test_factory_kwargs_errors(kwargs):
    assert_same_error(lambda: nn.factory_kwargs(kwargs), lambda: torch.nn.factory_kwargs(kwargs))
