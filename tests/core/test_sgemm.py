"""kernels.c's own float32 product (``ember_sgemm_f32``), which ``ops.linalg.gemm`` takes for
2-D float32 products past OpenBLAS's small-matrix bound where kernels.c is built with
AVX-512: every tile height (1-12 rows), partial panels, several K blocks, M and N blocks,
both layouts of each operand, strided operands, accumulation, threads, and what it must not
touch; each result against a float64 product, and the same bits however it is split."""

import numpy as np
import pytest

from ember import _native
from ember.ops import linalg


def _kernel():
    fn = linalg._sgemm_kernel()
    if fn is None:
        pytest.skip("kernels.c is not built with AVX-512 here (or native kernels are off)")
    return fn


def _run(a, b, c, acc=False, threads=1, bias=None):
    """c = a @ b [+ c | + bias] through the kernel, for any unit-or-not strides of a and b."""
    m, k = a.shape
    n = b.shape[1]
    s = [x // 4 for x in (*a.strides, *b.strides)]
    ok = _kernel()(m, n, k, a.ctypes.data, s[0], s[1], b.ctypes.data, s[2], s[3],
                   c.ctypes.data, c.strides[0] // 4, int(acc),
                   None if bias is None else bias.ctypes.data, threads)
    assert ok == 1


def _operands(m, k, n, a_layout, b_layout, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    if a_layout == "cols":
        a = np.asfortranarray(a)
    if b_layout == "cols":  # a weight's w.T
        b = np.asfortranarray(b)
    return a, b


def _tolerance(k):
    return dict(rtol=1e-5, atol=2e-6 * max(k, 1) ** 0.5 * 4)


SHAPES = [(1, 1, 1), (1, 7, 40), (11, 3, 33), (12, 256, 32), (13, 257, 31), (25, 600, 95),
          (7, 513, 64), (191, 40, 65), (200, 20, 70), (37, 300, 1030), (64, 0, 40)]


@pytest.mark.parametrize("m,k,n", SHAPES)
@pytest.mark.parametrize("a_layout", ["rows", "cols"])
@pytest.mark.parametrize("b_layout", ["rows", "cols"])
def test_product_equals_float64(m, k, n, a_layout, b_layout):
    a, b = _operands(m, k, n, a_layout, b_layout, seed=m * 1000 + k + n)
    want = a.astype(np.float64) @ b.astype(np.float64)
    c = np.full((m, n), np.nan, np.float32)
    _run(a, b, c)
    np.testing.assert_allclose(c, want, **_tolerance(k))


@pytest.mark.parametrize("m,k,n", [(13, 257, 31), (30, 520, 70), (64, 0, 40)])
def test_accumulates_into_the_output(m, k, n):
    a, b = _operands(m, k, n, "rows", "cols", seed=3)
    c0 = np.random.default_rng(4).standard_normal((m, n)).astype(np.float32)
    c = c0.copy()
    _run(a, b, c, acc=True)
    np.testing.assert_allclose(c, c0 + a.astype(np.float64) @ b, **_tolerance(k))


@pytest.mark.parametrize("m,k,n", [(13, 257, 31), (30, 520, 1100), (64, 0, 40)])
@pytest.mark.parametrize("threads", [1, 2])
def test_bias_starts_the_sums(m, k, n, threads):
    a, b = _operands(m, k, n, "rows", "cols", seed=10)
    bias = np.random.default_rng(11).standard_normal(n).astype(np.float32)
    c = np.full((m, n), np.nan, np.float32)
    _run(a, b, c, bias=bias, threads=threads)
    np.testing.assert_allclose(c, bias + a.astype(np.float64) @ b, **_tolerance(k))
    c2 = np.random.default_rng(12).standard_normal((m, n)).astype(np.float32)
    want = c2 + a.astype(np.float64) @ b
    _run(a, b, c2, acc=True, bias=bias, threads=threads)  # accumulating wins over the bias
    np.testing.assert_allclose(c2, want, **_tolerance(k))


def test_writes_only_its_rectangle_of_a_wider_output():
    a, b = _operands(29, 300, 45, "rows", "rows", seed=5)
    big = np.full((31, 64), 7.0, np.float32)  # ldc 64 > N 45, and a row past the end
    _run(a, b, big[:29, :45])
    np.testing.assert_allclose(big[:29, :45], a.astype(np.float64) @ b, **_tolerance(300))
    assert (big[:29, 45:] == 7.0).all() and (big[29:] == 7.0).all()


def test_strided_operands():
    """Views with a unit stride in one dimension and a longer one in the other (slices of
    bigger arrays), and an operand with no unit stride at all (the kernel's plain loops)."""
    rng = np.random.default_rng(6)
    base_a = rng.standard_normal((50, 700)).astype(np.float32)
    base_b = rng.standard_normal((900, 120)).astype(np.float32)
    for a in (base_a[3:40, 5:155], base_a[3:40:2, 5:155], base_a.T[5:155, 3:40].T):
        for b in (base_b[7:157, 10:110], base_b[7:457:3, 10:110], base_b.T[10:110, 7:157].T,
                  base_b[7:307:2, 10:110:2]):
            assert b.shape[0] == a.shape[1] == 150
            c = np.empty((a.shape[0], b.shape[1]), np.float32)
            _run(a, b, c)
            np.testing.assert_allclose(c, a.astype(np.float64) @ b, **_tolerance(150))


@pytest.mark.parametrize("m,k,n", [(128, 784, 512), (97, 333, 201), (600, 64, 40),
                                   (40, 1000, 1100)])
def test_same_bits_on_any_threads_layout_and_alignment(m, k, n):
    """Each element is one sum over K in order, however the work is split (columns for an
    output on a cache line, rows otherwise) and whatever layout the operands have."""
    a, b = _operands(m, k, n, "rows", "cols", seed=7)
    first = None
    for threads in (1, 2, 3):
        for a_, b_ in ((a, b), (np.ascontiguousarray(a), np.ascontiguousarray(b)),
                       (np.asfortranarray(a), b)):
            for aligned in (True, False):
                buf = np.full(m * n + 32, np.nan, np.float32)
                off = (-buf.ctypes.data % 64) // 4 + (0 if aligned else 1)
                c = buf[off:off + m * n].reshape(m, n)
                _run(a_, b_, c, threads=threads)
                if first is None:
                    first = c.copy()
                    np.testing.assert_allclose(first, a.astype(np.float64) @ b,
                                               **_tolerance(k))
                np.testing.assert_array_equal(c, first)


def test_the_pool_takes_the_split():
    a, b = _operands(128, 256, 512, "rows", "cols")
    c = np.empty((128, 512), np.float32)
    jobs = _native.kernel("ember_pool_jobs")
    before = jobs()
    _run(a, b, c, threads=2)
    assert jobs() == before + 1
    _run(a, b, c, threads=1)
    assert jobs() == before + 1


def test_ieee_specials_propagate_as_in_a_product():
    a, b = _operands(20, 40, 64, "rows", "rows", seed=8)
    a[3, 5] = np.inf
    a[7, 9] = np.nan
    b[2, 40] = -np.inf
    with np.errstate(invalid="ignore", over="ignore"):
        want = a.astype(np.float64) @ b.astype(np.float64)
    c = np.empty((20, 64), np.float32)
    _run(a, b, c)
    np.testing.assert_array_equal(np.isnan(c), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_array_equal(np.isinf(c), np.isinf(want))
    np.testing.assert_allclose(c[finite], want[finite], **_tolerance(40))


def test_the_same_bits_while_openblas_threads_spin(monkeypatch):
    """While OpenBLAS's threads may spin (a threaded float64 product just ran), gemm still takes
    the product, on one thread: the same bits as on two, so a product never depends on what
    ran before it."""
    _kernel()
    from ember import _parallel
    monkeypatch.setattr(_parallel, "get_num_threads", lambda: 2)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 784)).astype(np.float32)
    w = rng.standard_normal((512, 784)).astype(np.float32)
    _parallel._blas_last[0] = float("-inf")
    quiet = linalg.gemm(x, w.T)
    linalg.gemm(x.astype(np.float64), w.T.astype(np.float64))
    assert _parallel.blas_threads_busy()
    calls = []
    real = linalg._sgemm_kernel

    def spy():
        calls.append(1)
        return real()

    monkeypatch.setattr(linalg, "_sgemm_kernel", spy)
    busy = linalg.gemm(x, w.T)
    out = np.empty_like(busy)
    linalg.gemm_into(x, w.T, out)
    assert len(calls) == 2
    np.testing.assert_array_equal(busy, quiet)
    np.testing.assert_array_equal(out, quiet)


def test_gemm_takes_it_past_the_bound(monkeypatch):
    _kernel()
    calls = []
    real = linalg._sgemm_kernel

    def spy():
        fn = real()
        calls.append(1)
        return fn

    monkeypatch.setattr(linalg, "_sgemm_kernel", spy)
    rng = np.random.default_rng(9)
    x = rng.standard_normal((64, 784)).astype(np.float32)
    w = rng.standard_normal((512, 784)).astype(np.float32)
    got = linalg.gemm(x, w.T)
    assert calls and got.flags.c_contiguous and got.flags.owndata
    np.testing.assert_allclose(got, x.astype(np.float64) @ w.T, **_tolerance(784))
    calls.clear()
    linalg.gemm(x[:8], w.T)  # 8 rows: OpenBLAS's column blocks
    linalg.gemm(x[:, :8], w[:, :8].T)  # under the bound: OpenBLAS's small kernel
    linalg.gemm(x, w[:16].T)  # 16 columns: half a panel
    linalg.gemm(x.astype(np.float64), w.T.astype(np.float64))
    assert not calls
    out = np.empty((64, 512), np.float32)
    linalg.gemm_into(x, w.T, out)  # compiled code's buffers: the same numbers
    np.testing.assert_array_equal(out, got)
    monkeypatch.setenv("EMBER_NATIVE", "0")
    np.testing.assert_allclose(linalg.gemm(x, w.T), got, rtol=1e-5, atol=1e-4)



@pytest.mark.parametrize("a_shape,b_shape", [((2, 3, 64, 128), (2, 3, 128, 80)),
                                             ((64, 128), (4, 128, 80)),  # a weight and a batch
                                             ((4, 64, 128), (128, 80)),
                                             ((2, 1, 64, 128), (1, 3, 128, 80)),  # broadcast
                                             ((0, 64, 128), (128, 80))])  # an empty batch
@pytest.mark.parametrize("b_layout", ["rows", "cols"])
def test_batched_products_take_the_kernel_product_by_product(monkeypatch, a_shape, b_shape,
                                                             b_layout):
    """blas_matmul (the convolutions' im2col products, matmul's batched tail) runs each
    float32 product of a batch through the kernel: each slice the same bits as the 2-D
    product, and the float64 product's numbers, with or without ``out``."""
    _kernel()
    calls = []
    real = linalg.native_sgemm

    def spy(a, b, out=None, bias=None, accumulate=False):
        calls.append(1)
        return real(a, b, out, bias, accumulate)

    monkeypatch.setattr(linalg, "native_sgemm", spy)
    rng = np.random.default_rng(2)
    a = rng.standard_normal(a_shape).astype(np.float32)
    b = rng.standard_normal(b_shape).astype(np.float32)
    if b_layout == "cols":  # im2col's transposed columns in the weight gradient
        b = np.ascontiguousarray(b.swapaxes(-1, -2)).swapaxes(-1, -2)
    got = linalg.blas_matmul(a, b)
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, **_tolerance(128))
    batch = want.shape[:-2]
    assert len(calls) == int(np.prod(batch))
    wide_a = np.broadcast_to(a, batch + a.shape[-2:])
    wide_b = np.broadcast_to(b, batch + b.shape[-2:])
    for i in np.ndindex(batch):
        np.testing.assert_array_equal(got[i], real(wide_a[i], wide_b[i]))
    out = np.full(want.shape, np.nan, np.float32)
    assert linalg.blas_matmul(a, b, out=out) is out
    np.testing.assert_array_equal(out, got)
    start = rng.standard_normal(want.shape).astype(np.float32)  # out += a @ b: its sums' start
    out[...] = start
    assert linalg.blas_matmul(a, b, out=out, accumulate=True) is out
    np.testing.assert_allclose(out, start + want, **_tolerance(128))


def test_batched_products_the_kernel_does_not_take_stay_numpys(monkeypatch):
    _kernel()
    calls = []
    monkeypatch.setattr(linalg, "native_sgemm", lambda *a, **k: calls.append(1))
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 64, 128)).astype(np.float32)
    b = rng.standard_normal((3, 128, 80)).astype(np.float32)
    want = np.matmul(a, b)
    np.testing.assert_allclose(linalg.blas_matmul(a, b), want, rtol=1e-5, atol=1e-4)
    out = np.empty((3, 80, 64), np.float32).swapaxes(-1, -2)  # not C-contiguous: NumPy's
    calls.clear()
    linalg.blas_matmul(a, b, out=out)
    assert not calls
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)
    out = np.ones((3, 64, 80), np.float32)
    linalg.blas_matmul(a.astype(np.float64), b, out=out, accumulate=True)  # NumPy's, added
    np.testing.assert_allclose(out, want + 1, rtol=1e-5, atol=1e-4)
    linalg.blas_matmul(a[:, :8], b)  # 8 rows: under the kernel's bound
    linalg.blas_matmul(a.astype(np.float64), b)
    assert not calls


@pytest.mark.parametrize("batched", [False, True])
def test_an_operand_with_no_unit_stride_is_copied_not_left_to_openblas(monkeypatch, batched):
    """A convolution's centre tap (a weight sliced to its middle element: strides of 36 and
    18432 bytes) and a transposed im2col have no unit stride: the kernel takes a contiguous
    copy of that operand rather than leaving the product to OpenBLAS, whose threads then spin
    ~0.1 s on the cores Ember's pool needs (resnet18's SGD step after backward: 7 -> 28 ms)."""
    _kernel()
    from ember import _parallel
    rng = np.random.default_rng(6)
    w = rng.standard_normal((96, 160, 3, 3)).astype(np.float32)
    centre = w[:, :, 1, 1]  # no unit stride
    x = rng.standard_normal((160, 64, 2)).astype(np.float32)[:, :, 0]  # no unit stride
    _parallel._blas_last[0] = float("-inf")
    if batched:
        got = linalg.blas_matmul(centre[None], x[None])[0]
    else:
        got = linalg.gemm(centre, x)
    assert not _parallel.blas_threads_busy()
    np.testing.assert_allclose(got, centre.astype(np.float64) @ x, **_tolerance(160))
    np.testing.assert_array_equal(got, linalg.gemm(np.ascontiguousarray(centre),
                                                   np.ascontiguousarray(x)))
