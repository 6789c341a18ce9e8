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


def _aligned(n: int, align: int = 64) -> np.ndarray:
    """A float32 array whose buffer is ``align``-byte aligned (XLA copies unaligned input)."""
    raw = np.empty(n * 4 + align, dtype=np.uint8)
    start = -raw.ctypes.data % align
    return raw[start:start + n * 4].view(np.float32)


def test_ember_to_jax_shares_memory():
    buf = _aligned(4)
    buf[:] = np.arange(4.0)
    e = ember.from_numpy(buf)
    j = jnp.from_dlpack(e)
    assert j.unsafe_buffer_pointer() == e.data_ptr()
    assert j.tolist() == [0.0, 1.0, 2.0, 3.0]
