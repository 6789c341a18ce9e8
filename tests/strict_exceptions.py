"""The tests that cannot pass with the strict device as the default device, and why.

``EMBER_TEST_DEVICE=strict python -m pytest tests/...`` (see ``conftest.py``) runs the suite
with ``ember.testing.register_strict_device()``'s device as the default: every tensor a test
makes lands there, so every kernel meets arrays that refuse NumPy as CuPy's do. The tests
below check behaviour that is the CPU's by definition (sharing memory with NumPy, the CPU
generator, the repr of a CPU tensor) and are skipped there, each with its reason. Patterns
are ``fnmatch`` globs over pytest node ids. Nothing here may hide a kernel bug: a kernel that
fails on the strict device is fixed, not listed.
"""

EXCEPTIONS: dict[str, str] = {}
