"""DLPack with JAX: zero-copy both ways (runs where JAX is installed; CI does not install it,
it is a 600 MB oracle: `pip install jax jaxlib`)."""

import numpy as np
import pytest

import ember

jnp = pytest.importorskip("jax.numpy")


def test_jax_to_ember_shares_memory():
    a = jnp.arange(6.0, dtype=jnp.float32).reshape(2, 3)
    t = ember.from_dlpack(a)
    assert t.dtype is ember.float32 and t.shape == (2, 3)
    assert t.data_ptr() == a.unsafe_buffer_pointer()
    np.testing.assert_array_equal(t.numpy(), np.asarray(a))


def test_ember_to_jax_shares_memory():
    e = ember.arange(4.0)
    j = jnp.from_dlpack(e)
    assert j.unsafe_buffer_pointer() == e.data_ptr()
    assert j.tolist() == [0.0, 1.0, 2.0, 3.0]
