"""Ember's intra-op thread pool (ember._parallel) and the kernels that split their work over it:
the same results, bit for bit, whatever the pool's thread count.

The kernel tests hold the BLAS at one thread while the pool's count changes: a BLAS's own
results may depend on its thread count (OpenBLAS's Haswell sgemm on an AMD EPYC differs in
~2% of a 2048x384 @ 384x1536 product between one and two threads; the older kernel that
OPENBLAS_CORETYPE forced on other machines did not), which is the BLAS's property, not
Ember's, and PyTorch's too."""

from __future__ import annotations

import multiprocessing
import threading

import numpy as np
import pytest

import ember
from ember import _native, _parallel
from ember.nn import functional as F
from ember.ops import linalg

#: the pool splits NumPy's work: these tests run on the CPU whatever the suite's device
CPU = ember.device("cpu")


@pytest.fixture
def threads():
    """Set Ember's thread count inside a test; the count from before is restored."""
    before = ember.get_num_threads()
    yield ember.set_num_threads
    ember.set_num_threads(before)


@pytest.fixture
def pool_threads():
    """Set the intra-op pool's thread count inside a test, the BLAS held at one thread (see
    the module doc); both counts from before are restored."""
    from threadpoolctl import threadpool_limits

    before = ember.get_num_threads()
    with threadpool_limits(1, user_api="blas"):
        yield _parallel.set_num_threads
    ember.set_num_threads(before)


def _chunks(n, grain, threads):
    seen, lock = [], threading.Lock()

    def fn(b, e):
        with lock:
            seen.append((b, e, threading.current_thread().name))

    _parallel.set_num_threads(threads)
    _parallel.parallel_for(0, n, grain, fn)
    return sorted(seen)


def test_parallel_for_covers_the_range_once_in_grains(threads):
    threads(3)
    seen = _chunks(100, 10, 3)
    assert [(b, e) for b, e, _ in seen] == [(0, 33), (33, 66), (66, 100)]
    assert seen[0][2] == threading.current_thread().name  # the caller takes the first chunk
    assert all(name.startswith("ember-intraop") for *_, name in seen[1:])
    assert [(b, e) for b, e, _ in _chunks(25, 10, 3)] == [(0, 12), (12, 25)]  # two grains
    assert [(b, e) for b, e, _ in _chunks(19, 10, 3)] == [(0, 19)]  # under two: serial
    assert [(b, e) for b, e, _ in _chunks(100, 1, 1)] == [(0, 100)]  # one thread: serial
    assert _chunks(0, 1, 3) == []


def test_parallel_for_runs_nested_calls_serially(threads):
    threads(2)
    inner = []

    def outer(b, e):
        _parallel.parallel_for(0, 10, 1, lambda ib, ie: inner.append((ib, ie)))

    _parallel.parallel_for(0, 2, 1, outer)
    assert sorted(inner) == [(0, 10), (0, 10)]


def test_parallel_for_raises_after_every_chunk_finished(threads):
    threads(2)
    done = []

    def fn(b, e):
        if b == 0:
            raise ValueError("chunk 0 failed")
        threading.Event().wait(0.05)
        done.append(b)

    with pytest.raises(ValueError, match="chunk 0 failed"):
        _parallel.parallel_for(0, 2, 1, fn)
    assert done == [1]
    _parallel.parallel_for(0, 2, 1, lambda b, e: done.append(b))  # the pool still works
    assert sorted(done[1:]) == [0, 1]


def test_set_num_threads_sizes_the_pool(threads):
    threads(1)
    assert _parallel.get_num_threads() == 1
    threads(4)
    assert _parallel.get_num_threads() == 4 == ember.get_num_threads()


def _gelu_in_child(queue):
    x = ember.randn(2048, 1536, generator=ember.Generator(CPU).manual_seed(0), device=CPU)
    queue.put(F.gelu(x).sum().item())


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork")
def test_a_forked_child_builds_its_own_pool(threads):
    threads(2)
    x = ember.randn(2048, 1536, generator=ember.Generator(CPU).manual_seed(0), device=CPU)
    expected = F.gelu(x).sum().item()  # the parent's pool exists now
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_gelu_in_child, args=(queue,))
    child.start()
    try:
        assert queue.get(timeout=60) == expected
    finally:
        child.join(timeout=60)
        if child.is_alive():
            child.kill()
            child.join()
    assert child.exitcode == 0


# -- kernels: bit-identical at 1, 2 and 3 threads -------------------------------------------------

def _native_jobs() -> int:
    """How many jobs the native kernels' own pool (``kernels.c``'s pool_for) has split."""
    fn = _native.kernel("ember_pool_jobs")
    return 0 if fn is None else fn()


def _split(run) -> bool:
    """Whether ``run()`` split work over a pool: Python's (``set_num_threads`` drops it, a
    split starts one) or the native kernels' (its count of split jobs grew)."""
    jobs = _native_jobs()
    run()
    return _parallel._state["pool"] is not None or _native_jobs() > jobs


def _at_threads(threads, fn):
    """``fn()`` at 1, 2 and 3 threads; a pool must have been used at 2 and 3 (the kernel
    really split its work)."""
    results = []
    for n in (1, 2, 3):
        threads(n)
        assert _split(lambda: results.append(fn())) == (n > 1)
    return results


def _same(results):
    first = [np.asarray(r) for r in results[0]]
    for other in results[1:]:
        for a, b in zip(first, other):
            np.testing.assert_array_equal(a, np.asarray(b))


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_gelu_forward_and_backward_do_not_depend_on_threads(pool_threads, dtype):
    approximate = "none"  # the exact GELU's blocked kernels (the tanh form is plain ufuncs)
    g = ember.Generator(CPU).manual_seed(1)
    # 21 blocks of float32 (41 of float64), the last one short
    x0 = ember.randn(1200, 1100, generator=g, dtype=dtype, device=CPU)
    gy = ember.randn(1200, 1100, generator=g, dtype=dtype, device=CPU)

    def run():
        x = x0.clone().requires_grad_()
        y = F.gelu(x, approximate=approximate)
        y.backward(gy)
        with ember.no_grad():
            plain = F.gelu(x0, approximate=approximate)
        return y.detach().numpy(), x.grad.numpy(), plain.numpy()

    _same(_at_threads(pool_threads, run))


@pytest.mark.parametrize("case", ["plain", "causal", "bool mask", "float mask batched",
                                  "mask with its own batch", "broadcast key", "3-d"])
def test_attention_does_not_depend_on_threads(pool_threads, case):
    g = ember.Generator(CPU).manual_seed(2)
    n, h, length, e = 8, 4, 128, 32
    q = ember.randn(n, h, length, e, generator=g, device=CPU)
    k = ember.randn(n, h, length, e, generator=g, device=CPU)
    v = ember.randn(n, h, length, e, generator=g, device=CPU)
    kwargs = {}
    if case == "causal":
        kwargs["is_causal"] = True
    elif case == "bool mask":
        kwargs["attn_mask"] = ember.rand(length, length, generator=g, device=CPU) > 0.3
    elif case == "float mask batched":
        kwargs["attn_mask"] = ember.randn(n, 1, length, length, generator=g, device=CPU)
    elif case == "mask with its own batch":  # the inputs broadcast against the mask's batch
        q, k, v = q[:1], k[:1], v[:1]
        kwargs["attn_mask"] = ember.randn(n, h, length, length, generator=g, device=CPU)
    elif case == "broadcast key":
        k, v = k[:1], v[:1]
    elif case == "3-d":
        q, k, v = (t.reshape(n * h, length, e) for t in (q, k, v))
    gy = ember.randn(*F.scaled_dot_product_attention(q, k, v, **kwargs).shape, generator=g,
                     device=CPU)

    def run():
        leaves = [t.clone().requires_grad_() for t in (q, k, v)]
        extra = dict(kwargs)
        mask = extra.get("attn_mask")
        if mask is not None and mask.is_floating_point():  # the mask's gradient too
            extra["attn_mask"] = mask = mask.clone().requires_grad_()
            leaves.append(mask)
        out = F.scaled_dot_product_attention(*leaves[:3], **extra)
        out.backward(gy)
        return (out.detach().numpy(), *(t.grad.numpy() for t in leaves))

    results = _at_threads(pool_threads, run)
    _same(results)
    # and the parallel result is right, not only stable: the composite form in float64
    q64, k64, v64 = (t.double() for t in (q, k, v))
    mask = kwargs.get("attn_mask")
    scores = q64 @ k64.transpose(-2, -1) / e ** 0.5
    if case == "causal":
        causal = ember.ones(length, length, dtype=ember.bool, device=CPU).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
    elif mask is not None and mask.dtype == ember.bool:
        scores = scores.masked_fill(~mask, float("-inf"))
    elif mask is not None:
        scores = scores + mask.double()
    expected = scores.softmax(-1) @ v64
    np.testing.assert_allclose(results[-1][0], expected.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_layer_norm_does_not_depend_on_threads(pool_threads, dtype):
    g = ember.Generator(CPU).manual_seed(3)
    x0 = ember.randn(33, 64, 384, generator=g, dtype=dtype, device=CPU)
    w = ember.randn(384, generator=g, dtype=dtype, device=CPU)
    b = ember.randn(384, generator=g, dtype=dtype, device=CPU)
    gy = ember.randn(33, 64, 384, generator=g, dtype=dtype, device=CPU)

    def run():
        x = x0.clone().requires_grad_()
        y = F.layer_norm(x, (384,), w, b, 1e-12)
        y.backward(gy)
        return y.detach().numpy(), x.grad.numpy()

    results = _at_threads(pool_threads, run)
    _same(results)
    x = x0.numpy().astype(np.float64)
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    expected = (x - mean) / np.sqrt(var + 1e-12) * w.numpy() + b.numpy()
    np.testing.assert_allclose(results[-1][0], expected,
                               rtol=1e-5 if dtype == ember.float32 else 1e-12, atol=1e-5)


def test_linear_bias_add_does_not_depend_on_threads(pool_threads):
    g = ember.Generator(CPU).manual_seed(4)
    x0 = ember.randn(4, 512, 384, generator=g, device=CPU)  # 4*512 rows of 1536: split
    w = ember.randn(1536, 384, generator=g, device=CPU)
    b = ember.randn(1536, generator=g, device=CPU)
    gy = ember.randn(4, 512, 1536, generator=g, device=CPU)  # (a sum's broadcast gradient
    # would go to OpenBLAS, whose spinning threads keep the next products on one thread)

    def run():
        x = x0.clone().requires_grad_()
        y = F.linear(x, w, b)
        y.backward(gy)
        return y.detach().numpy(), x.grad.numpy()

    _same(_at_threads(pool_threads, run))


@pytest.mark.parametrize("grad", [True, False])
def test_linear_bias_on_a_large_permuted_input(threads, grad):
    # a windowed attention's input (timm's Twins): a transposed 6-d view, whose product NumPy
    # lays out like the input; the split bias add once went to a reshaped copy under no_grad
    g = ember.Generator(CPU).manual_seed(5)
    x0 = ember.randn(2, 56 * 56, 64, dtype=ember.float64, generator=g, device=CPU)
    x = x0.view(2, 8, 7, 8, 7, 64).transpose(2, 3)
    w = ember.randn(192, 64, dtype=ember.float64, generator=g, device=CPU)
    b = ember.randn(192, dtype=ember.float64, generator=g, device=CPU)
    expected = x.contiguous().numpy() @ w.numpy().T + b.numpy()

    def run():
        with ember.set_grad_enabled(grad):
            return F.linear(x, w, b).detach().numpy()

    for n in (1, 2, 3):
        threads(n)
        np.testing.assert_allclose(run(), expected, rtol=1e-12, atol=1e-12)


# -- the BLAS inside chunks, and convolutions split by samples -----------------------------------

def _conv_reference(x, w, gy, padding):
    """Forward, input and weight gradients of a 2-d convolution in float64 NumPy."""
    k = w.shape[-1]
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))
    y = np.einsum("nchwij,ocij->nohw", win, w)
    gw = np.einsum("nchwij,nohw->ocij", win, gy)
    gxp = np.zeros_like(xp)
    ho, wo = gy.shape[2:]
    for i in range(k):
        for j in range(k):
            gxp[:, :, i:i + ho, j:j + wo] += np.einsum("nohw,oc->nchw", gy, w[:, :, i, j])
    h, wd = x.shape[2:]
    return y, gxp[:, :, padding:padding + h, padding:padding + wd], gw


@pytest.mark.parametrize("case", [
    (8, 16, 32, 16, 3, 1),  # one GEMM per leading tap (_conv_rows, _weight_grad_rows)
    (16, 6, 14, 16, 5, 0),  # LeNet's second conv: im2col chunks, folded weight gradient,
                            # col2im input gradient
    (40, 1, 28, 6, 5, 2),  # LeNet's first: thin columns, per-sample weight-gradient products
])
def test_conv_split_by_samples_does_not_depend_on_threads(pool_threads, case):
    n, c, size, o, k, padding = case
    g = ember.Generator(CPU).manual_seed(6)
    x0 = ember.randn(n, c, size, size, generator=g, device=CPU)
    w0 = ember.randn(o, c, k, k, generator=g, device=CPU)
    out = size + 2 * padding - k + 1
    gy = ember.randn(n, o, out, out, generator=g, device=CPU)

    def run():
        _parallel._blas_last[0] = float("-inf")  # no threaded product has just run
        x, w = x0.clone().requires_grad_(), w0.clone().requires_grad_()
        y = F.conv2d(x, w, padding=padding)
        y.backward(gy)
        return y.detach().numpy(), x.grad.numpy(), w.grad.numpy()

    results = _at_threads(pool_threads, run)
    # and serially, as while OpenBLAS's threads spin after a threaded product
    pool_threads(2)
    _parallel.note_threaded_blas()
    x, w = x0.clone().requires_grad_(), w0.clone().requires_grad_()
    assert not _split(lambda: F.conv2d(x, w, padding=padding).backward(gy))  # nothing split
    results.append((F.conv2d(x0, w0, padding=padding).numpy(), x.grad.numpy(), w.grad.numpy()))
    _same(results)
    expected = _conv_reference(x0.numpy().astype(np.float64), w0.numpy().astype(np.float64),
                               gy.numpy().astype(np.float64), padding)
    for got, want in zip(results[-1], expected):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def test_products_that_openblas_threads_are_noted(threads):
    threads(2)
    _parallel._blas_last[0] = float("-inf")
    a = ember.randn(64, 400, device=CPU)
    F.linear(a, ember.randn(6, 400, device=CPU))  # 154K multiply-adds: one BLAS thread
    assert not _parallel.blas_threads_busy()
    F.linear(a, ember.randn(120, 400, device=CPU))  # 3M: kernels.c's own product, if built
    assert _parallel.blas_threads_busy() == (linalg._sgemm_kernel() is None)
    F.linear(a.double(), ember.randn(120, 400, dtype=ember.float64, device=CPU))
    assert not _parallel.blas_threads_busy()  # float64, 3M: row blocks under the bound
    F.linear(a.double(), ember.randn(400, 400, dtype=ember.float64, device=CPU))
    assert _parallel.blas_threads_busy()  # float64, 10M: OpenBLAS threads it
    _parallel._blas_last[0] = float("-inf")
    ember.randn(4, 64, 400, device=CPU) @ ember.randn(4, 400, 120, device=CPU)  # batched
    assert _parallel.blas_threads_busy() == (linalg._sgemm_kernel() is None)  # ours, if built
    ember.randn(4, 64, 400, device=CPU).double() @ ember.randn(4, 400, 120, device=CPU).double()
    assert _parallel.blas_threads_busy()
    _parallel._blas_last[0] -= 2 * _parallel.BLAS_SPIN_SECONDS  # long ago
    assert not _parallel.blas_threads_busy()


# -- the native kernels' own pool (kernels.c: pool_for, ember_split) ------------------------------

def _norm_run(weighted: bool):
    """Layer norm and batch norm, forward and backward, float32 (the native kernels)."""
    g = ember.Generator(CPU).manual_seed(12)
    x0 = ember.randn(16, 64, 384, generator=g, device=CPU)
    w = ember.randn(384, generator=g, device=CPU).requires_grad_(weighted)
    b = ember.randn(384, generator=g, device=CPU).requires_grad_(weighted)
    c0 = ember.randn(32, 16, 24, 24, generator=g, device=CPU)
    cw = ember.randn(16, generator=g, device=CPU).requires_grad_(weighted)
    cb = ember.randn(16, generator=g, device=CPU).requires_grad_(weighted)
    x, c = x0.clone().requires_grad_(), c0.clone().requires_grad_()
    y = F.layer_norm(x, (384,), w, b, 1e-5)
    z = F.batch_norm(c, None, None, cw, cb, training=True)
    (y * y).sum().backward()
    (z * z).sum().backward()
    out = [y.detach().numpy(), z.detach().numpy(), x.grad.numpy(), c.grad.numpy()]
    if weighted:
        out += [w.grad.numpy(), b.grad.numpy(), cw.grad.numpy(), cb.grad.numpy()]
    return out


@pytest.mark.parametrize("weighted", [True, False])
def test_norm_kernels_split_over_the_native_pool(pool_threads, weighted, monkeypatch):
    """Layer norm's and batch norm's native kernels (by_rows, by_range) split over
    kernels.c's pool, not Python's: forward and backward, two jobs each (the loss's big
    products, which split there too, kept to NumPy here to count them). Batch norm and
    layer norm's forward and input gradient keep the one-thread bits; layer norm's weight
    and bias gradients add per-chunk partial sums (as the Python split did)."""
    if _native.kernel("ember_split") is None:
        pytest.skip("no native kernels here")
    monkeypatch.setattr(_native, "ufunc", lambda *args, **kwargs: None)
    pool_threads(1)
    jobs = _native_jobs()
    one = _norm_run(weighted)
    assert _native_jobs() == jobs
    pool_threads(2)
    two = _norm_run(weighted)
    assert _native_jobs() == jobs + 4
    assert _parallel._state["pool"] is None  # Python's pool was not needed
    for a, t in zip(one[:4], two[:4]):
        np.testing.assert_array_equal(a, t)
    for a, t in zip(one[4:], two[4:]):
        np.testing.assert_allclose(a, t, rtol=1e-5, atol=1e-3)
    if weighted:
        np.testing.assert_array_equal(one[6], two[6])  # batch norm's: whole channels a chunk
        np.testing.assert_array_equal(one[7], two[7])


def test_a_signature_the_native_pool_lacks_splits_in_python(pool_threads, monkeypatch):
    """by_rows falls back to Ember's Python pool for a kernel ember_split has no prototype
    for: the same results."""
    if _native.kernel("ember_split") is None:
        pytest.skip("no native kernels here")
    monkeypatch.setattr(_native, "ufunc", lambda *args, **kwargs: None)
    pool_threads(2)
    want = _norm_run(False)
    monkeypatch.setattr(_native, "_split_signature", lambda fn, range_last: None)
    jobs = _native_jobs()
    got = _norm_run(False)
    assert _native_jobs() == jobs and _parallel._state["pool"] is not None
    for a, t in zip(want, got):
        np.testing.assert_array_equal(a, t)


def test_ember_split_refuses_what_it_cannot_call():
    """An unknown signature code or pointer count returns 0 (nothing called)."""
    fn = _native.kernel("ember_split")
    if fn is None:
        pytest.skip("no native kernels here")
    import ctypes
    P, N = ctypes.c_void_p, ctypes.c_ssize_t
    target = ctypes.cast(_native.kernel("ember_gelu_f32"), P)
    args = ((P * 8)(), (N * 8)(), (N * 8)(), 4, 1, 1, (N * 10)(), (ctypes.c_int * 2)(),
            (ctypes.c_float * 7)())
    assert fn(target, 99, 2, *args) == 0
    assert fn(target, 0, 9, *args) == 0
    assert fn(target, 0, 0, *args) == 0


# -- big elementwise ops over the native pool (_native.ufunc: NumPy's own loops) ----------------

def _special_operands(dtype):
    """Two arrays of more than ``_native.UFUNC_MIN`` elements (an odd count) with the IEEE
    edge cases at the front: infinities, NaN, signed zeros, a subnormal, overflow and 0 / 0."""
    rng = np.random.default_rng(5)
    n = 3 * _native.UFUNC_MIN + 7
    a = rng.standard_normal(n).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    tiny = np.finfo(dtype).smallest_subnormal
    big = np.finfo(dtype).max
    a[:8] = [np.inf, -np.inf, np.nan, 0.0, -0.0, tiny, big, 0.0]
    b[:8] = [np.inf, 1.0, 2.0, -0.0, 0.0, 3.0, big, 0.0]
    return a, b


def _bits(x):
    return x.view(f"u{x.dtype.itemsize}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("uf", [np.add, np.subtract, np.multiply, np.true_divide, np.maximum,
                                np.tanh, np.exp, np.log, np.sqrt, np.sin, np.negative],
                         ids=lambda u: u.__name__)
def test_native_ufunc_gives_numpys_bits(threads, uf, dtype):
    """NumPy's own inner loop over chunks on the pool: bit for bit the ufunc's result, with
    two arrays, a number on either side, and in place."""
    if _native.kernel("ember_split") is None:
        pytest.skip("no native kernels here")
    a, b = _special_operands(dtype)
    calls = [(a, b), (a, 0.3), (2, b)] if uf.nin == 2 else [(a,), (b,)]
    threads(2)
    for operands in calls:
        with np.errstate(all="ignore"):
            want = uf(*operands)
        jobs = _native_jobs()
        got = _native.ufunc(uf, *operands)
        assert _native_jobs() > jobs  # split over the pool
        assert got.dtype == want.dtype == dtype and got.flags.c_contiguous
        np.testing.assert_array_equal(_bits(got), _bits(want))
    inplace = a.copy()
    with np.errstate(all="ignore"):
        want = uf(*calls[0])
    assert _native.ufunc(uf, inplace, *calls[0][1:], out=inplace) is inplace
    np.testing.assert_array_equal(_bits(inplace), _bits(want))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_big_arithmetic_keeps_its_bits_over_the_pool(threads, op, dtype):
    """The ember ops on big tensors (tensor with tensor, tensor with number, number with
    tensor): NumPy's bits, at one thread and at two (where they split)."""
    a, b = _special_operands(dtype)
    import operator

    uf = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide}[op]
    python_op = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
                 "div": operator.truediv}[op]
    fn = {"add": ember.add, "sub": ember.sub, "mul": ember.mul, "div": ember.div}[op]
    ta, tb = ember.from_numpy(a), ember.from_numpy(b)
    for x, y, nx, ny in ((ta, tb, a, b), (ta, 1.5, a, 1.5), (0.25, tb, 0.25, b)):
        with np.errstate(all="ignore"):
            want = uf(nx, ny)
        for n in (1, 2):
            threads(n)
            got = fn(x, y) if isinstance(x, ember.Tensor) else python_op(x, y)
            np.testing.assert_array_equal(_bits(got.numpy()), _bits(want))


def test_big_unary_ops_keep_their_bits_over_the_pool(threads):
    a, _ = _special_operands(np.float32)
    t = ember.from_numpy(a)
    for fn, uf in ((ember.tanh, np.tanh), (ember.exp, np.exp), (ember.sqrt, np.sqrt)):
        with np.errstate(all="ignore"):
            want = uf(a)
        for n in (1, 2):
            threads(n)
            jobs = _native_jobs()
            got = fn(t).numpy()
            if n == 2 and _native.kernel("ember_split") is not None:
                assert _native_jobs() > jobs
            np.testing.assert_array_equal(_bits(got), _bits(want))


def test_native_ufunc_declines_what_it_does_not_take(threads):
    threads(2)
    a = np.ones(_native.UFUNC_MIN, np.float32)
    assert _native.ufunc(np.add, a[:-1], a[:-1]) is None  # too small
    assert _native.ufunc(np.add, a, a.astype(np.float64)) is None  # two dtypes
    assert _native.ufunc(np.add, a.astype(np.int64), a.astype(np.int64)) is None
    assert _native.ufunc(np.add, a.astype(np.complex64), a.astype(np.complex64)) is None
    wide = np.ones((2, _native.UFUNC_MIN), np.float32)
    assert _native.ufunc(np.add, wide[:, ::2], wide[:, ::2]) is None  # strided
    assert _native.ufunc(np.add, wide, wide[:1]) is None  # shapes differ (broadcast)
    assert _native.ufunc(np.add, a, True) is None  # a bool: NumPy's own promotion
    assert _native.ufunc(np.add, a, np.float64(1.0)) is None  # a NumPy scalar: its dtype
    assert _native.ufunc(np.add, a, 10 ** 400) is None  # no float holds it
    assert _native.ufunc(np.tanh, a, a) is None  # operands the ufunc does not take
    assert _native.ufunc(np.add, a) is None
    assert _native.ufunc(np.divmod, a, a) is None  # two outputs
    assert _native.ufunc(np.add, a, a, out=np.empty(a.size, np.float64)) is None
    assert _native.ufunc(np.add, a, a, out=wide[0, ::2]) is None
    threads(1)
    assert _native.ufunc(np.add, a, a) is None  # one thread: NumPy's own call


def test_a_loop_that_fails_the_probe_is_never_split(threads, monkeypatch):
    """A table entry whose loop does not give the ufunc's own bits (a NumPy that ran another
    loop than its table's) is refused once, at the probe, and the op stays NumPy's."""
    if _native.kernel("ember_split") is None:
        pytest.skip("no native kernels here")
    threads(2)
    monkeypatch.setattr(_native, "_ufunc_loops", {})
    a = np.ones(_native.UFUNC_MIN, np.float32)
    real = _native._find_ufunc_loop
    wrong = real(np.subtract, np.dtype(np.float32))  # subtract's loop posing as add's
    monkeypatch.setattr(_native, "_find_ufunc_loop",
                        lambda uf, dt: _native._probe(uf, dt, *wrong))
    assert _native.ufunc(np.add, a, a) is None
    assert _native._ufunc_loops[(np.add, np.dtype(np.float32))] is None
    np.testing.assert_array_equal((ember.from_numpy(a) + ember.from_numpy(a)).numpy(), a + a)


def test_gradient_accumulation_over_the_pool(threads):
    """A leaf's gradient accumulated from several uses: the same sums at one and two
    threads (the second use adds into the first's buffer over the native pool)."""
    g = ember.Generator(CPU).manual_seed(7)
    x0 = ember.randn(512, 300, generator=g, device=CPU)
    w = ember.randn(512, 300, generator=g, device=CPU)

    def run():
        x = x0.clone().requires_grad_()
        ((x * w).sum() + (x * x).sum() + x.sum()).backward()
        return x.grad.numpy()

    threads(1)
    one = run()
    threads(2)
    np.testing.assert_array_equal(run(), one)
    np.testing.assert_allclose(one, w.numpy() + 2 * x0.numpy() + 1, rtol=1e-5, atol=1e-6)


# -- products inside a chunk keep to its thread -------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_serial_matmul_runs_row_blocks_under_the_bound(threads, dtype, monkeypatch):
    """A batch of products at OpenBLAS's threading bound runs as row blocks, each under
    it (so OpenBLAS keeps them on the calling thread); the numbers are matmul's."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 4, 128, 32)).astype(dtype)
    b = rng.standard_normal((3, 4, 32, 128)).astype(dtype)
    calls = []
    real = np.matmul

    def spy(x, y, out=None):
        calls.append(x.shape[-2] * x.shape[-1] * y.shape[-1])
        return real(x, y, out=out)

    monkeypatch.setattr(linalg.np, "matmul", spy)
    got = linalg.serial_matmul(a, b)
    assert len(calls) == 2 and max(calls) < _parallel.BLAS_THREADED_MACS
    out = np.empty_like(got)
    assert linalg.serial_matmul(a, b, out) is out
    monkeypatch.undo()
    want = np.matmul(a, b)
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12)
    np.testing.assert_array_equal(out, got)
    small = a[..., :16, :]  # 16 x 32 x 128: under the bound, one matmul
    np.testing.assert_array_equal(linalg.serial_matmul(small, b), np.matmul(small, b))
