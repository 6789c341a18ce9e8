"""The tests that cannot pass with a real GPU (CuPy) as the default device, beyond
``strict_exceptions.py``'s, and why (``EMBER_TEST_DEVICE=cuda``, run by ``tools/gpu_check.sh``
on a machine with a GPU). As there, nothing here may hide a kernel bug: a kernel that fails on
the GPU is fixed, not listed.
"""

EXCEPTIONS: dict[str, str] = {
}
