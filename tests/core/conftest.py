"""Shared fixtures for ember-core tests: the NumPy-backed test device."""

import pytest

import ember
from ember.testing import register_test_device


@pytest.fixture(scope="session", autouse=True)
def _test_device():
    register_test_device("testdev")
    yield


@pytest.fixture
def testdev():
    """The NumPy-backed second device (``ember.device('testdev:0')``)."""
    return ember.device("testdev", 0)


def gradcheck_available():
    return hasattr(ember.autograd, "gradcheck")
