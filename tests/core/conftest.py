"""Shared fixtures for ember-core tests: the NumPy-backed test device, a spy on the native
kernels asked for."""

import pytest

import ember
from ember import _native
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


@pytest.fixture
def native_calls(monkeypatch):
    """The names of the native kernels asked for (``ember._native.kernel``) in the test."""
    names = []
    real = _native.kernel

    def spy(name):
        names.append(name)
        return real(name)

    monkeypatch.setattr(_native, "kernel", spy)
    return names
