import gc

import ember
from ember.func import grad, vmap


def test_vmap_makes_no_reference_cycles():
    """timeit (and benchmark.Timer) turn the garbage collector off: a vmap that left cycles
    kept every call's batched tensors alive there (pytorch/tutorials' per_sample_grads ran out
    of memory). Nothing a vmap call makes may need the collector to be freed."""
    w, xs = ember.randn(5, 3), ember.randn(4, 2, 5)

    def f(w, xi):
        return (xi @ w).sum()

    def calls():
        vmap(ember.sin)(xs)
        vmap(grad(f), in_dims=(None, 0))(w, xs)
        vmap(lambda a, b: {"s": a + b, "t": (a * b,)}, in_dims=(0, None))(xs, w[:, 0])

    calls()  # first calls fill caches
    gc.collect()
    gc.disable()
    try:
        calls()
        assert gc.collect() == 0
    finally:
        gc.enable()
