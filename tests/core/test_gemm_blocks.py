"""``ops.linalg.gemm`` runs a float32 product of a few rows just past OpenBLAS's small-matrix
bound as column blocks under it (``gemm_column_block``), and one under the bound with a
transposed weight and ``M*N > 1200`` the other way round (``(w @ x.T).T``). Forced on here
(the rules only engage on AVX-512 OpenBLAS cores): the blocked and swapped products equal one
product, in linear's forward and backward, compiled code and the recurrent kernels."""

import numpy as np
import pytest

import ember
from ember.ops import linalg


@pytest.fixture(params=[True, False], ids=["blocks", "one-product"])
def small_gemm(request, monkeypatch):
    monkeypatch.setattr(linalg, "SMALL_GEMM", request.param)
    return request.param


def test_column_block_rule():
    g = linalg.gemm_column_block
    assert g(16, 64, 512, "rows") == 0  # under the bound: one product
    assert g(64, 784, 512, "transposed") == 0  # too many rows for the transposed kernel
    assert g(16, 784, 512, "rows") == 0  # strided row-major blocks only up to 8 rows


@pytest.mark.parametrize("layout", ["transposed", "rows", "copied"])
@pytest.mark.parametrize("m,k,n", [(4, 512, 2048), (8, 256, 1024), (16, 784, 512),
                                   (32, 400, 120), (3, 700, 999)])
def test_blocks_partition_the_columns(monkeypatch, layout, m, k, n):
    monkeypatch.setattr(linalg, "SMALL_GEMM", True)
    c = linalg.gemm_column_block(m, k, n, layout)
    if c == 0:
        return
    blocks = -(-n // c)
    assert m * k * c <= 1_000_000 and 16 <= c < n
    assert -(-n // blocks) <= c  # even blocks
    if layout == "transposed":
        assert m * c <= 1200 and k >= 32


@pytest.mark.parametrize("m,k,n", [(4, 512, 2048), (16, 784, 512), (32, 400, 120),
                                   (3, 700, 999), (8, 256, 1024)])
def test_gemm_blocks_equal_one_product(small_gemm, m, k, n):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    for b in (w.T, np.ascontiguousarray(w.T)):
        got = linalg.gemm(a, b)
        assert got.shape == (m, n) and got.dtype == np.float32
        want = a.astype(np.float64) @ b.astype(np.float64)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_gemm_leaves_other_dtypes_and_layouts_alone(monkeypatch):
    monkeypatch.setattr(linalg, "SMALL_GEMM", True)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 512))
    b = rng.standard_normal((512, 2048))
    np.testing.assert_array_equal(linalg.gemm(a, b), a @ b)  # float64: one product
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    # a column-major left operand takes the row-major one's blocks: the same numbers whatever
    # the layout (compiled code's buffers and eager's views differ in layout)
    at = np.asfortranarray(a32)
    np.testing.assert_array_equal(linalg.gemm(at, b32), linalg.gemm(a32, b32))
    out = np.empty((4, 2048), dtype=np.float32)
    linalg.gemm_into(at, b32, out)
    np.testing.assert_array_equal(out, linalg.gemm(a32, b32))


@pytest.mark.parametrize("rows,fan_in,fan_out", [(4, 512, 2048), (64, 300, 200)])
def test_linear_forward_and_backward_with_blocks(small_gemm, rows, fan_in, fan_out):
    """4 rows: OpenBLAS's column blocks; 64: kernels.c's own product (test_sgemm.py), with
    the bias as its sums' start, where built with AVX-512."""
    ember.manual_seed(0)
    lin = ember.nn.Linear(fan_in, fan_out)
    x = ember.randn(rows, fan_in, requires_grad=True)
    y = lin(x)
    y.square().sum().backward()
    xd, wd, bd = (t.detach().numpy().astype(np.float64) for t in (x, lin.weight, lin.bias))
    want = xd @ wd.T + bd
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-4, atol=1e-4)
    gy = 2 * want
    np.testing.assert_allclose(x.grad.numpy(), gy @ wd, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(lin.weight.grad.numpy(), gy.T @ xd, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
def test_recurrent_layers_with_blocks_equal_one_product(monkeypatch, mode):
    # 16 rows by 256 -> 256 (RNN), 768 (GRU), 1024 (LSTM) per step: over the bound
    from ember.nn.modules import rnn

    made = []
    init = rnn._Operand.__init__

    def spy(self, *args):
        init(self, *args)
        made.append(self.parts is not None)

    monkeypatch.setattr(rnn._Operand, "__init__", spy)
    packed = rnn._packed_blocks

    def spy_packed(w, rows, panels):  # the LSTM's whole-sequence native loop packs its own
        assert not panels
        out = packed(w, rows, panels)
        made.append(out[1] < w.shape[1])
        return out

    monkeypatch.setattr(rnn, "_packed_blocks", spy_packed)
    native_kernel = rnn.api.native_kernel  # the OpenBLAS products, not kernels.c's own

    def no_panels(name):
        return (lambda: 0) if name == "ember_panel_gemm_available" else native_kernel(name)

    monkeypatch.setattr(rnn.api, "native_kernel", no_panels)

    def run(flag):
        monkeypatch.setattr(linalg, "SMALL_GEMM", flag)
        ember.manual_seed(0)
        layer = getattr(ember.nn, mode)(64, 256, num_layers=2, batch_first=True)
        x = ember.randn(16, 12, 64, requires_grad=True)
        out, _ = layer(x)
        out.square().sum().backward()
        return [out.detach().numpy()] + [p.grad.numpy() for p in (x, *layer.parameters())]

    blocked = run(True)
    numpy_arrays = ember.ops.api.array_module(ember.empty(0)) is np  # not the strict device
    assert made and all(made) == numpy_arrays  # blocks on NumPy arrays (forward and backward)
    made.clear()
    one = run(False)
    assert made and not any(made)
    for got, want in zip(blocked, one):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_compiled_linear_uses_the_same_blocks(monkeypatch):
    from ember._compile import explain

    monkeypatch.setattr(linalg, "SMALL_GEMM", True)
    nn = ember.nn
    m = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 10)).eval()
    cm = ember.compile(m)
    x = ember.randn(16, 784)
    with ember.no_grad():
        np.testing.assert_allclose(cm(x).numpy(), m(x).numpy(), rtol=1e-5, atol=1e-6)
        m[0].weight.mul_(0.5)  # the blocks are views of the weight: in-place changes reach them
        np.testing.assert_allclose(cm(x).numpy(), m(x).numpy(), rtol=1e-5, atol=1e-6)
    source = explain(cm)["entries"][0]["source"]
    numpy_arrays = ember.ops.api.array_module(x) is np
    assert ("_gemm" in source) == numpy_arrays  # eager's gemm_into, blocks decided at run time


def test_swap_rule():
    blocks = linalg._block_of
    x = np.zeros((16, 64), np.float32)
    w = np.zeros((256, 64), np.float32)
    linalg.SMALL_GEMM, saved = True, linalg.SMALL_GEMM
    try:
        assert blocks(x, w.T) == -1  # M*N = 4096 > 1200, MNK = 262144 under the bound
        assert blocks(x, np.ascontiguousarray(w.T)) == 0  # row-major: the small kernel takes it
        assert blocks(x[:4], w[:256].T) == 0  # M*N = 1024
        assert blocks(np.zeros((64, 64), np.float32), w.T) == 0  # too many rows
        assert blocks(np.zeros((16, 16), np.float32), np.zeros((256, 16), np.float32).T) == 0
    finally:
        linalg.SMALL_GEMM = saved


@pytest.mark.parametrize("m,k,n", [(16, 64, 256), (4, 512, 512), (24, 100, 300), (32, 32, 128)])
def test_swapped_product_equals_one_product(small_gemm, m, k, n):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    got = linalg.gemm(a, w.T)
    assert got.shape == (m, n) and got.dtype == np.float32 and got.flags.c_contiguous
    np.testing.assert_allclose(got, a.astype(np.float64) @ w.T.astype(np.float64),
                               rtol=1e-4, atol=1e-4)
    # the same numbers from a column-major left operand and into a buffer (compiled code)
    np.testing.assert_array_equal(linalg.gemm(np.asfortranarray(a), w.T), got)
    out = np.empty((m, n), np.float32)
    linalg.gemm_into(np.asfortranarray(a), w.T, out)
    np.testing.assert_array_equal(out, got)


def test_linear_with_the_swapped_product(small_gemm):
    ember.manual_seed(0)
    lin = ember.nn.Linear(64, 256)
    x = ember.randn(2, 8, 64, requires_grad=True)
    y = lin(x)
    assert y.is_contiguous()
    y.square().sum().backward()
    xd, wd, bd = (t.detach().numpy().astype(np.float64) for t in (x, lin.weight, lin.bias))
    want = xd @ wd.T + bd
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(x.grad.numpy(), 2 * want @ wd, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(lin.weight.grad.numpy(),
                               (2 * want).reshape(-1, 256).T @ xd.reshape(-1, 64),
                               rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("m,k,n,dtype", [(512, 64, 27, np.float32), (97, 51, 204, np.float64),
                                         (256, 128, 20, np.float32), (300, 300, 30, np.float64)])
def test_products_past_openblas_threading_bound_run_as_row_blocks(monkeypatch, m, k, n, dtype):
    """A product Ember's own kernel leaves to OpenBLAS (float64; float32 of 8 rows or fewer or
    under 32 columns) but past OpenBLAS's threading bound runs as row blocks under it, so
    OpenBLAS's threads never wake (they would spin 0.1 s on the cores Ember's pool needs):
    the float64 product's numbers, the same from gemm and gemm_into."""
    from ember import _parallel

    rng = np.random.default_rng(3)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    calls = []
    real = linalg._row_blocks

    def spy(*args):
        calls.append(args[-1])
        return real(*args)

    monkeypatch.setattr(linalg, "_row_blocks", spy)
    _parallel._blas_last[0] = float("-inf")
    got = linalg.gemm(a, b)
    taken = linalg.native_sgemm(a, b) is not None if dtype == np.float32 else False
    assert not _parallel.blas_threads_busy()
    assert got.dtype == dtype and got.flags.c_contiguous
    np.testing.assert_allclose(got, a.astype(np.float64) @ b.astype(np.float64),
                               rtol=1e-4 if dtype == np.float32 else 1e-12,
                               atol=1e-3 if dtype == np.float32 else 1e-10)
    if not taken:
        assert calls and m * k * n >= _parallel.BLAS_THREADED_MACS
        assert calls[0] * k * n < _parallel.BLAS_THREADED_MACS and calls[0] >= 8
    out = np.empty_like(got)
    linalg.gemm_into(a, b, out)
    np.testing.assert_array_equal(out, got)


def test_large_products_stay_one_threaded_openblas_call():
    from ember import _parallel

    rng = np.random.default_rng(4)
    a = rng.standard_normal((256, 256))
    b = rng.standard_normal((256, 256))  # float64, 16.8M multiply-adds: OpenBLAS's threads
    _parallel._blas_last[0] = float("-inf")
    np.testing.assert_array_equal(linalg.gemm(a, b), np.dot(a, b))
    assert _parallel.blas_threads_busy()
    a4 = rng.standard_normal((4, 512))  # 4 rows of 512x512: blocks of one row would be slow
    b4 = rng.standard_normal((512, 512))
    np.testing.assert_array_equal(linalg.gemm(a4, b4), np.dot(a4, b4))
