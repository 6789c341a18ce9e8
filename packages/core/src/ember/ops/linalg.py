"""Products: matmul (PyTorch's batching and 1-D rules), mm, bmm, mv, dot, vdot, inner, outer,
addmm, addmv, addbmm, baddbmm, einsum, tensordot, kron, trace, cross, matrix_power,
chain_matmul, and ``torch.linalg``'s cross, vecdot and multi_dot; and the ``torch.<name>`` /
``Tensor.<name>`` spellings of ``ember.linalg``'s decompositions (inverse, det, logdet,
slogdet, cholesky, pinverse, svd, qr, matrix_exp, cholesky_solve, cholesky_inverse,
triangular_solve, lu, lu_solve, lu_unpack, geqrf, orgqr, ormqr) and ``torch.vander``.

The decompositions themselves live in the ``linalg_*`` modules beside this one (loaded on
first use through ``ember.linalg``)."""

from __future__ import annotations

import math
import string
import warnings

import numpy as np

from .. import _dtype, _native
from .. import return_types as _rt
from .._device import check_same_device, xp_of
from .._dtype import scalar_type_name
from .._format import shape_str
from .._parallel import BLAS_THREADED_MACS, native_threads, note_threaded_blas
from .._sparse_tensor import SparseTensor as _Sparse
from .._sparse_tensor import _no_backend as _sparse_no_backend
from .._sparse_tensor import sparse_bmm, sparse_product
from .._tensor import Tensor, _make
from .._warn import user_stacklevel
from ..autograd.grad_mode import GRAD
from ..autograd.graph import make_node_class, mark_holomorphic, record
from ._deprecated import NO_ARG, beta_first, hide
from ._factories import public, sum_to_size
from ._inplace import accepts_out, write_out
from ._promotion import broadcast_shape, wrap_dim
from ._signatures import check_binds
from .registry import OPS, register

__all__ = ["matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "addmm", "addmv",
           "addbmm", "baddbmm", "einsum", "tensordot", "kron", "trace", "cross",
           "matrix_power", "chain_matmul", "broadcast_shapes_or_raise", "linalg_cross", "vecdot",
           "multi_dot"]


# -- messages ----------------------------------------------------------------------------------

def _shape_str(shape) -> str:
    return shape_str(shape, "x")


def _list_str(shape) -> str:
    return f"[{shape_str(shape)}]"


def _tname(a) -> str:
    """The C type name PyTorch's kernels print (``float``, ``double``)."""
    return _dtype.options_type_name(a.dtype)


def _prod(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def broadcast_shapes_or_raise(sa, sb) -> tuple:
    """``np.broadcast_shapes`` with PyTorch's error ("The size of tensor a ... b ...")."""
    n = max(len(sa), len(sb))
    out = []
    for i in range(n):
        a = sa[i - n + len(sa)] if i - n + len(sa) >= 0 else 1
        b = sb[i - n + len(sb)] if i - n + len(sb) >= 0 else 1
        if a != b and a != 1 and b != 1:
            broadcast_shape(sa, sb)  # raises, naming the rightmost mismatch as PyTorch does
        out.append(b if a == 1 else a)
    return tuple(out)


def _matmul_error(ad, bd):
    """PyTorch's error for ``ad @ bd`` (the kernel matmul would dispatch to picks the
    wording), or None when the product is valid."""
    na, nb = ad.ndim, bd.ndim
    if na == 0 or nb == 0:
        return RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                            f"{na}D and {nb}D")
    if na == 1 and nb == 1:
        return _dot_error(ad, bd)
    if nb > 2:  # bmm over broadcast batches
        broadcast_shapes_or_raise(ad.shape[:-2], bd.shape[:-2])
    if ad.shape[-1] != (bd.shape[-2] if nb > 1 else bd.shape[0]):
        return RuntimeError(_size_mismatch(ad, bd))
    if ad.dtype != bd.dtype:
        return RuntimeError(_dtype_mismatch(ad, bd))
    if ad.dtype.kind == "b":
        kernel = "addmv_impl_cpu" if nb == 1 else "addmm_impl_cpu_"
        return NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')
    return None


def _size_mismatch(ad, bd) -> str:
    """PyTorch's words for the inner sizes of ``ad @ bd`` that differ, in the kernel's terms
    (mv; mm, batches of ``ad`` folded into its rows; bmm over broadcast batches)."""
    ka = ad.shape[-1]
    if bd.ndim == 1:
        rows = _prod(ad.shape[:-1])
        return f"size mismatch, got input ({rows}), mat ({rows}x{ka}), vec ({bd.shape[0]})"
    if bd.ndim == 2:
        rows = _prod(ad.shape[:-1]) if ad.ndim > 1 else 1
        return (f"mat1 and mat2 shapes cannot be multiplied ({rows}x{ka} and "
                f"{_shape_str(bd.shape)})")
    n = _prod(broadcast_shapes_or_raise(ad.shape[:-2], bd.shape[:-2]))
    return (f"Expected size for first two dimensions of batch2 tensor to be: [{n}, {ka}] but "
            f"got: [{n}, {bd.shape[-2]}].")


def _dtype_mismatch(ad, bd) -> str:
    """PyTorch's words for the dtypes of ``ad @ bd`` that differ (as ``_size_mismatch``)."""
    if bd.ndim == 1:
        return (f"addmv input tensors must have the same dtype, but got "
                f"{scalar_type_name(bd.dtype)}, {scalar_type_name(ad.dtype)}, and "
                f"{scalar_type_name(bd.dtype)}")
    if bd.ndim == 2:
        return f"expected m1 and m2 to have the same dtype, but got: {_tname(ad)} != {_tname(bd)}"
    return (f"expected scalar type {scalar_type_name(ad.dtype)} but found "
            f"{scalar_type_name(bd.dtype)}")


def _dot_error(ad, bd, name="dot"):
    if ad.ndim != 1 or bd.ndim != 1:
        return RuntimeError(f"1D tensors expected, but got {ad.ndim}D and {bd.ndim}D tensors")
    if ad.dtype != bd.dtype:
        return RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                            f"{scalar_type_name(ad.dtype)} and {scalar_type_name(bd.dtype)}")
    if ad.shape[0] != bd.shape[0]:
        return RuntimeError(f"inconsistent tensor size, expected tensor [{ad.shape[0]}] and src "
                            f"[{bd.shape[0]}] to have the same number of elements, but got "
                            f"{ad.shape[0]} and {bd.shape[0]} elements respectively")
    if ad.dtype.kind == "b":
        return NotImplementedError(f'"{name}" not implemented for \'Bool\'')
    if ad.dtype is _dtype.CHALF_NP:
        return _dtype.no_chalf_kernel(name)
    return None


# -- matmul and its kernels -----------------------------------------------------------------

_NO_PRODUCT = _dtype.SHELL_NP | {_dtype.CHALF_NP}


def matmul_arrays(a, b):
    """``a @ b`` of two arrays; float16 and bfloat16 through float32 BLAS, rounded once
    (PyTorch's CPU kernels accumulate low-precision products in float; NumPy has no bfloat16
    GEMM and runs float16 without BLAS)."""
    if a.dtype not in _dtype.OPMATH:
        if a.dtype in _NO_PRODUCT:  # PyTorch's CPU products have no complex32, uint16+ kernel
            raise _dtype.no_kernel("bmm" if b.ndim > 2 else "addmv_impl_cpu"
                                   if b.ndim == 1 and a.ndim > 1 else "dot" if a.ndim == 1
                                   and b.ndim == 1 else "addmm_impl_cpu_", a.dtype)
        return gemm(a, b)
    return _dtype.narrow(gemm(_dtype.widen(a), _dtype.widen(b)), a.dtype)


# OpenBLAS's x86-64 AVX-512 cores (SkylakeX, Cooperlake, SapphireRapids) multiply float32
# products with M*N*K <= 1e6 in "small-matrix" kernels that skip packing the operands (its
# kernel/x86_64/sgemm_small_kernel_permit_skylakex.c; in BLAS's column-major terms, a
# transposed first operand also needs M*N <= 1200 and K >= 32). Just above that bound a
# product of a few rows spends most of its time packing the weight: at one thread,
# (4, 512) @ (512, 2048) with the weight transposed (a linear layer) took 621 us as one
# product and 94 us as seven column blocks under the bound; (16, 784) @ (784, 512) 316 ->
# 134 us; (32, 400) @ (400, 120) 62 -> 38 us. Row-major weights gain for up to 8 rows only
# (their column blocks are strided), transposed ones up to 32 (48-64 rows were mixed).
# Under the bound, a transposed weight with M*N > 1200 misses the small kernel too; there the
# product taken the other way round, ``(w @ x.T).T`` (its result copied to row-major), stays
# on it: (16, 64) @ (64, 256) 14.1 -> 9.6 us, (4, 512) @ (512, 512) 149 -> 64 us,
# (24, 100) @ (100, 300) 29 -> 23 us (one thread, 2026-12-05; a grid of m 1-256, k and n
# 32-1024 gained from M*N >= ~2048 at 2-32 rows, lost up to 1.3x below; float64 was mixed).
# ``SMALL_GEMM``: None asks threadpoolctl once which core NumPy's OpenBLAS runs; tests set it.
SMALL_GEMM = None
_SMALL_MNK = 1_000_000
_SMALL_CORES = ("skylakex", "cooperlake", "sapphirerapids")


def _small_gemm() -> bool:
    global SMALL_GEMM
    if SMALL_GEMM is None:
        found = False
        try:
            from threadpoolctl import threadpool_info

            libs = [i for i in threadpool_info() if i.get("internal_api") == "openblas"]
            mine = [i for i in libs if "numpy" in str(i.get("filepath", ""))] or libs[:1]
            found = bool(mine) and str(mine[0].get("architecture", "")).lower() in \
                _SMALL_CORES
        except Exception:  # no threadpoolctl answer: one product, as NumPy does
            found = False
        SMALL_GEMM = found
    return SMALL_GEMM


def gemm_column_block(m: int, k: int, n: int, b_layout: str = "rows") -> int:
    """The width of the column blocks that a float32 ``(m, k) @ (k, n)`` product runs fastest
    in on NumPy's OpenBLAS (each block under its small-matrix bound), or 0 for one product.
    ``b_layout``: the right operand is ``"rows"`` (row-major: its column blocks are strided),
    ``"transposed"`` (a transposed row-major array, a weight ``w.T``) or ``"copied"`` (the
    caller copies each block row-major once and reuses it: the recurrent kernels' weights;
    16x128 by 128x512 34 -> 22 us as two blocks, 64 rows 90 -> 81 us as eight)."""
    if m * k * n <= _SMALL_MNK or m == 0:
        return 0
    if b_layout == "transposed":
        if m > 32 or k < 32:
            return 0
        c = min(_SMALL_MNK // (m * k), 1200 // m)
    else:
        if m > (8 if b_layout == "rows" else 64):
            return 0
        c = _SMALL_MNK // (m * k)
    if c < 16 or c >= n or not _small_gemm():
        return 0
    blocks = -(-n // c)
    width = -(-n // blocks)  # even blocks (two of 256, not 488 and 24), 16-aligned if it fits
    aligned = -(-width // 16) * 16
    return aligned if aligned <= c else width


def gemm(a, b):
    """``a @ b`` of two arrays of one dtype. A product whose inner size is 1 (an outer product:
    the weight gradient of a linear layer on one example) is a broadcast multiply, exactly the
    same numbers: NumPy's matmul takes 12x longer for it ((128, 1) @ (1, 9216): 1.3 ms against
    0.11 ms), which made per-example training steps spend most of their time there. A float32
    product of a few rows just past OpenBLAS's small-matrix bound runs as column blocks under
    it (``gemm_column_block``), and one with a transposed weight under the bound but past its
    kernel's ``M*N`` the other way round (``_SWAP_MN``). Two 2-D NumPy arrays go through
    ``np.dot``: the same BLAS call as ``@``, 0.3 us sooner (no ufunc dispatch)."""
    if a.__class__ is np.ndarray and b.__class__ is np.ndarray and a.ndim == 2 and b.ndim == 2:
        c = 0
        if a.dtype is _F32 and b.dtype is _F32:
            if sgemm_takes(a.shape[0], a.shape[1], b.shape[1]):
                out = native_sgemm(a, b)
                if out is not None:
                    return out
            c = _block_of(a, b)
        if not c:
            if a.shape[1] == 1 and b.shape[0] == 1:
                return a * b
            if a.shape[0] * a.shape[1] * b.shape[1] >= BLAS_THREADED_MACS:
                rows = _row_block(a, b)
                if rows:
                    out = np.empty((a.shape[0], b.shape[1]), dtype=np.result_type(a, b))
                    _row_blocks(a, b, out, rows)
                    return out
                note_threaded_blas()
            return np.dot(a, b)
        if c < 0:  # the transposed product (see _SWAP_MN), whatever a's layout
            return np.ascontiguousarray(np.dot(b.T, np.ascontiguousarray(a).T).T)
        a = np.ascontiguousarray(a)  # a few rows: one layout, one kernel, whatever came in
        out = np.empty((a.shape[0], b.shape[1]), dtype=np.float32)
        for j in range(0, b.shape[1], c):
            np.matmul(a, b[:, j:j + c], out=out[:, j:j + c])
        return out
    if a.ndim >= 2 and b.ndim >= 2 and a.shape[-1] == 1 and b.shape[-2] == 1:
        return a * b
    return blas_matmul(a, b)


#: a 2-D product that Ember's own kernel does not take (float64; float32 with 8 rows or fewer
#: or under 32 columns), of at least ``BLAS_THREADED_MACS`` multiply-adds and under this many,
#: runs as row blocks each under OpenBLAS's threading bound (``_row_blocks``), where a block
#: holds ``_ROW_BLOCK_MIN`` rows or more
_ROW_BLOCKS_BELOW = 1 << 23
_ROW_BLOCK_MIN = 8


def _row_block(a, b) -> int:
    """The rows of ``_row_blocks``' blocks for a 2-D product past OpenBLAS's threading bound,
    or 0 where it runs as one product (too large; too few rows a block)."""
    m, k = a.shape
    n = b.shape[1]
    if m * k * n >= _ROW_BLOCKS_BELOW:
        return 0
    rows = (BLAS_THREADED_MACS - 1) // max(1, k * n)
    return rows if rows >= _ROW_BLOCK_MIN else 0


def _row_blocks(a, b, out, rows: int) -> None:
    """``a @ b`` into ``out`` as blocks of ``rows`` of ``a``'s rows, each product under
    ``BLAS_THREADED_MACS``: one thread, where OpenBLAS would wake its threads, which then
    spin ~0.1 s on the cores Ember's pool needs. makemore's step woke them once with its
    vocabulary head, (512, 64) by (64, 27), and ran every other op of its 14 ms beside them
    (1.34x -> 1.21x PyTorch's time)."""
    for r in range(0, a.shape[0], rows):
        np.dot(a[r:r + rows], b, out=out[r:r + rows])


def blas_matmul(a, b, out=None, accumulate=False):
    """``a @ b`` (into ``out`` where given; ``out += a @ b`` with ``accumulate``, where only
    Ember's own product needs no temporary) as the BLAS runs it, noting its threads where each
    product is big enough for them (``_parallel.note_threaded_blas``: they spin ~0.1 s after
    it, on the cores that the native kernels' pool and Ember's own product would take). A
    batch of float32 products each of which ``native_sgemm`` takes (the convolutions' im2col
    products) runs there instead, one product after another."""
    if a.__class__ is np.ndarray and b.__class__ is np.ndarray and a.dtype is _F32 and \
            b.dtype is _F32 and a.ndim >= 2 and b.ndim >= 2 \
            and sgemm_takes(a.shape[-2], a.shape[-1], b.shape[-1]):
        r = _batched_sgemm(a, b, out, accumulate)
        if r is not None:
            return r
    if accumulate:
        out += a @ b
        r = out
    else:
        r = a @ b if out is None else np.matmul(a, b, out=out)
    if a.ndim >= 2 and b.ndim >= 2 and \
            a.shape[-2] * a.shape[-1] * b.shape[-1] >= BLAS_THREADED_MACS:
        note_threaded_blas()
    return r


def serial_matmul(a, b, out=None):
    """``np.matmul(a, b, out=out)`` of NumPy arrays (2-D or more) where no BLAS call threads:
    a product at OpenBLAS's threading bound or past it runs as blocks of rows under it, each
    block one NumPy matmul over the whole batch. For products inside a ``parallel_for`` chunk,
    which has its core already: attention's heads of 128 x 32 x 128 (the bound exactly), two
    chunks each handing OpenBLAS products it split over both cores, ran 1.7x slower than
    serially. A product whose single row reaches the bound runs as ``blas_matmul`` runs it."""
    m, k = a.shape[-2:]
    n = b.shape[-1]
    if m * k * n < BLAS_THREADED_MACS:
        return a @ b if out is None else np.matmul(a, b, out=out)
    rows = (BLAS_THREADED_MACS - 1) // max(1, k * n)
    if not rows:
        return blas_matmul(a, b, out)
    if out is None:
        shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (m, n)
        out = np.empty(shape, np.result_type(a, b))
    for r in range(0, m, rows):
        np.matmul(a[..., r:r + rows, :], b, out=out[..., r:r + rows, :])
    return out


def _batched_sgemm(a, b, out, accumulate=False):
    """``np.matmul(a, b, out=out)`` of float32 arrays with a batch, each product through
    ``native_sgemm``; None (nothing written) where it does not take them: a product's
    operands have the same strides throughout the batch, so the first decides for all."""
    m, n = a.shape[-2], b.shape[-1]
    if a.shape[-1] != b.shape[-2]:
        return None
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        return None
    shape = batch + (m, n)
    if out is None:
        out = np.empty(shape, dtype=_F32)
    elif out.__class__ is not np.ndarray or out.shape != shape or out.dtype is not _F32 or \
            not out.flags.c_contiguous:
        return None
    # views: indexing one gives a 2-D view (a strided operand copied once, not per product)
    a = np.broadcast_to(_unit_strided(a), batch + a.shape[-2:])
    b = np.broadcast_to(_unit_strided(b), batch + b.shape[-2:])
    first = True
    for i in np.ndindex(batch):
        if native_sgemm(a[i], b[i], out[i], accumulate=accumulate) is None:
            if first:
                return None
            if accumulate:
                out[i] += a[i] @ b[i]
            else:
                np.matmul(a[i], b[i], out=out[i])
        first = False
    return out


_F32 = np.dtype(np.float32)
#: ``M*N`` past which a transposed weight's product under the small-matrix bound is taken the
#: other way round (OpenBLAS's small kernel for it stops at 1200)
_SWAP_MN = 1200


def _block_of(a, b) -> int:
    """``gemm_column_block`` for two 2-D float32 NumPy arrays as laid out: 0 for one product,
    -1 for the transposed product ``(b.T @ a.T).T`` (a transposed weight under the
    small-matrix bound with ``M*N > 1200``, up to 32 rows and ``K >= 32``)."""
    sa, sb = a.strides, b.strides
    if not (sa[1] == 4 or sa[0] == 4) or not (sb[1] == 4 or sb[0] == 4):
        return 0
    m, k = a.shape
    n = b.shape[1]
    if sb[1] != 4:  # transposed (a weight's ``w.T``)
        if m * k * n <= _SMALL_MNK:
            return -1 if m <= 32 and k >= 32 and m * n > _SWAP_MN and _small_gemm() else 0
        return gemm_column_block(m, k, n, "transposed")
    return gemm_column_block(m, k, n, "rows")


#: Ember's own float32 product (kernels.c's ember_sgemm_f32) takes a 2-D product of
#: ``BLAS_THREADED_MACS`` multiply-adds or more (every product OpenBLAS would run on its
#: threads), more than ``_SGEMM_MIN_M`` rows and at least ``_SGEMM_MIN_N`` columns. Below
#: them OpenBLAS's single-threaded small-matrix kernel and column blocks take it. Past 1e6
#: multiply-adds it ran 0.3-0.8x OpenBLAS's time (a grid of m 16-256, k 32-512, n 32-1024 on
#: two threads, 2026-12-06, AVX-512 Xeon), about even between 5e5 and 1e6; what decides the
#: lower bound is that OpenBLAS's threads, once woken, spin ~0.1 s on the cores that
#: kernels.c's pool then needs (LeNet's step with its 645K-MAC products left to OpenBLAS:
#: 4.1-7.4 ms from run to run; with every threaded product here: 3.1-3.2 ms).
SGEMM_MIN_MACS = BLAS_THREADED_MACS - 1
_SGEMM_MIN_M = 8
_SGEMM_MIN_N = 32


def sgemm_takes(m: int, k: int, n: int) -> bool:
    """Whether a float32 ``(m, k) @ (k, n)`` product is one for ``native_sgemm`` by its sizes
    (a check cheap enough for every small product's path)."""
    return m > _SGEMM_MIN_M and n >= _SGEMM_MIN_N and m * k * n > SGEMM_MIN_MACS


def native_sgemm(a, b, out=None, bias=None, accumulate=False):
    """``a @ b`` (``+ bias``, a contiguous float32 row of ``b.shape[1]``, added as the sums'
    start) of two 2-D float32 NumPy arrays through ``kernels.c``'s ``ember_sgemm_f32``
    (written into ``out``, a C-contiguous float32 array, where given; with ``accumulate``,
    added to what ``out`` holds, its elements the sums' start), or None where it does
    not take the product: too small (``sgemm_takes``), no AVX-512, the kernels unavailable
    (an operand with no unit stride is copied, ``_unit_strided``). On an AVX-512 Xeon it
    runs a linear layer's products 1.2-1.6x faster than NumPy's OpenBLAS (about MKL's speed,
    which PyTorch runs), and its threads are kernels.c's pool, whose wake-ups cost
    microseconds."""
    m, k = a.shape
    n = b.shape[1]
    if not sgemm_takes(m, k, n):
        return None
    a, b = _unit_strided(a), _unit_strided(b)
    sa0, sa1 = a.strides
    sb0, sb1 = b.strides
    # One thread while OpenBLAS's threads may spin (resnet18's step, its convolutions
    # OpenBLAS's, went 130 -> 197 ms with two pools on two cores). Not OpenBLAS instead: each
    # element is one in-order sum over k whatever the split, so a product's bits never depend
    # on what ran just before it (a test once caught gemm and gemm_into disagreeing that way).
    threads = native_threads()
    fn = _sgemm_kernel()
    if fn is None:
        return None
    c = np.empty((m, n), dtype=_F32) if out is None else out
    address = _native.address
    if not fn(m, n, k, address(a), sa0 >> 2, sa1 >> 2, address(b), sb0 >> 2, sb1 >> 2,
              address(c), c.strides[0] >> 2, int(accumulate),
              None if bias is None else address(bias),
              threads):
        return None
    return c


def _unit_strided(x):
    """``x`` where the last two dims of this float32 array have a unit stride (either one; the
    other a whole number of elements, neither negative), else a C-contiguous copy: a strided
    view (a convolution's centre tap, a transposed im2col) costs the product a copy of one
    operand, under a 32nd of its multiply-adds, rather than going to OpenBLAS, whose threads
    then spin on the cores Ember's pool needs (0.1 s after each threaded product)."""
    s0, s1 = x.strides[-2:]
    if (s1 == 4 or s0 == 4) and not (s0 | s1) & 3 and s0 >= 0 and s1 >= 0:
        return x
    return np.ascontiguousarray(x)


def _sgemm_kernel():
    fn = _native.kernel("ember_panel_gemm_available")
    if fn is None or not fn():
        return None
    return _native.kernel("ember_sgemm_f32")


def gemm_into(a, b, out) -> None:
    """``np.dot(a, b, out=out)`` for 2-D NumPy arrays with ``gemm``'s column blocks: the same
    numbers as ``gemm`` (compiled code writes its products into reused buffers with it)."""
    c = 0
    if a.__class__ is np.ndarray and b.__class__ is np.ndarray and a.dtype is _F32 and \
            b.dtype is _F32:
        if out.flags.c_contiguous and out.dtype is _F32 and \
                native_sgemm(a, b, out) is not None:
            return
        c = _block_of(a, b)
    if not c:
        rows = _row_block(a, b) if a.shape[0] * a.shape[1] * b.shape[1] >= \
            BLAS_THREADED_MACS else 0
        if rows:
            _row_blocks(a, b, out, rows)
        else:
            np.dot(a, b, out=out)
        return
    if c < 0:
        out[...] = np.dot(b.T, np.ascontiguousarray(a).T).T
        return
    a = np.ascontiguousarray(a)
    for j in range(0, b.shape[1], c):
        np.matmul(a, b[:, j:j + c], out=out[:, j:j + c])


def matmul_grads(a, b, g, need_a=True, need_b=True):
    """Gradients of ``a @ b`` for the output gradient ``g`` (1-D rules, broadcast batches)."""
    na, nb = a._data.ndim, b._data.ndim
    if na == 1 and nb == 1:
        return (g * b if need_a else None, g * a if need_b else None)
    a2 = a.unsqueeze(0) if na == 1 else a
    b2 = b.unsqueeze(-1) if nb == 1 else b
    g2 = g
    if na == 1:
        g2 = g2.unsqueeze(-2)
    if nb == 1:
        g2 = g2.unsqueeze(-1)
    ga = gb = None
    if need_a:
        ga = sum_to_size(g2.matmul(b2.mT), a2._data.shape)
        if na == 1:
            ga = ga.reshape(a._data.shape)
    if need_b:
        gb = sum_to_size(a2.mT.matmul(g2), b2._data.shape)
        if nb == 1:
            gb = gb.reshape(b._data.shape)
    return ga, gb


def _matmul_bw(node, g):
    a, b = node.saved
    return matmul_grads(a, b, g, node.needs_grad(0), node.needs_grad(1))


(MmBackward0, BmmBackward0, MvBackward0, DotBackward0) = (
    make_node_class(n, _matmul_bw) for n in
    ("MmBackward0", "BmmBackward0", "MvBackward0", "DotBackward0"))
# the node PyTorch's composite matmul leaves last on the other ranks (its mm/bmm under a
# squeeze, a clone or an _unsafe_view): printed as ``grad_fn=<UnsafeViewBackward0>`` for the
# common ``(batch, seq, d) @ (d, k)`` and batched attention products
_MatmulSqueeze, _MatmulClone, _MatmulUnsafeView = (
    make_node_class(n, _matmul_bw) for n in
    ("SqueezeBackward4", "CloneBackward0", "UnsafeViewBackward0"))
_MATMUL_NODES = {(2, 2): MmBackward0, (2, 1): MvBackward0, (1, 1): DotBackward0,
                 (1, 2): _MatmulSqueeze}
mark_holomorphic(_MatmulSqueeze)  # (CloneBackward0 and UnsafeViewBackward0 are already)


def _not_tensors(fn: str, names, *args) -> TypeError:
    """PyTorch's argument-parser error for the first argument of ``fn`` that is no Tensor."""
    i, v = next((i, v) for i, v in enumerate(args) if not isinstance(v, Tensor))
    return TypeError(f"{fn}(): argument '{names[i]}' (position {i + 1}) must be Tensor, not "
                     f"{type(v).__name__}")


def _product(node_cls, a, b, check_shapes, type_error, names=("mm", "input", "mat2")):
    """``a @ b`` recorded as ``node_cls``, after PyTorch's checks in its order: the shapes
    (``check_shapes(ad, bd)`` raises), the devices, then ``type_error(ad, bd)`` (PyTorch's
    error, or None). ``names``: the function's and its arguments' for a non-Tensor one."""
    try:
        ad, bd = a._data, b._data
    except AttributeError:
        raise _not_tensors(names[0], names[1:], a, b) from None
    check_shapes(ad, bd)
    check_same_device(a, b)
    err = type_error(ad, bd)
    if err is not None:
        raise err
    out = _make(matmul_arrays(ad, bd), a._device)
    if GRAD.enabled and (a.requires_grad or b.requires_grad):
        record(node_cls, out, (a, b), (a, b), checked=(b.requires_grad, a.requires_grad))
    return out


@register("matmul", out="same")
def matmul(input, other):
    """Matrix product with PyTorch's rules for 1-D operands and batch broadcasting."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise _not_tensors("matmul", ("input", "other"), input, other)
    if input.__class__ is _Sparse or other.__class__ is _Sparse:  # ember._sparse_tensor
        return sparse_product(input, other, "matmul")
    ad, bd = input._data, other._data
    dev = input._device
    if dev is not other._device:
        check_same_device(input, other)
    if ad.dtype is not bd.dtype or not ad.ndim or not bd.ndim or ad.dtype.kind == "b" or \
            ad.shape[-1] != (bd.shape[-2] if bd.ndim > 1 else bd.shape[0]):
        err = _matmul_error(ad, bd)
        if err is not None:
            raise err
    try:
        r = matmul_arrays(ad, bd)
    except ValueError:  # batch shapes that do not broadcast
        raise _matmul_error(ad, bd) from None
    out = _make(r, dev)
    if GRAD.enabled and (input.requires_grad or other.requires_grad):
        # PyTorch's matmul dispatches on the ranks: mm, mv, dot, and its names follow
        # (a 2-d @ batched product ends in a clone when the 2-d side requires grad, else in
        # PyTorch's transposed product's _unsafe_view)
        node = _MATMUL_NODES.get((ad.ndim, bd.ndim)) or (
            _MatmulClone if ad.ndim == 2 and input.requires_grad else _MatmulUnsafeView)
        record(node, out, (input, other), (input, other),
               checked=(other.requires_grad, input.requires_grad))
    return out


def _check_mm(ad, bd):
    if ad.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if bd.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")


def widened_product(fn, input, mat2, out_dtype):
    """``mm``/``bmm``'s ``out_dtype`` overload: the product of float16 or bfloat16 matrices as
    float32 (the inputs widened, the products summed in float32), or ``out_dtype`` equal to
    the inputs' dtype. PyTorch has it on CUDA only; Ember on every device."""
    dt = _dtype.to_dtype(out_dtype)
    have = input.dtype
    if dt is not have and not (dt is _dtype.float32 and have in (_dtype.float16,
                                                               _dtype.bfloat16)):
        raise RuntimeError("out_dtype must be the same as input dtype or fp32 for fp16/bf16 "
                           "inputs")
    if dt is have:
        return fn(input, mat2)
    if mat2.dtype is not have:
        raise RuntimeError(f"expected scalar type {scalar_type_name(have.np)} but found "
                           f"{scalar_type_name(mat2.dtype.np)}")
    return fn(input.float(), mat2.float())


@register("mm", out="same")
def mm(input, mat2, out_dtype: _dtype.dtype | None = None):
    """Product of two matrices (2-D only; see ``matmul`` for broadcasting); ``out_dtype``
    (``float32`` for float16/bfloat16 inputs) as ``widened_product``."""
    if out_dtype is not None:
        return widened_product(mm, input, mat2, out_dtype)
    if input.__class__ is _Sparse or mat2.__class__ is _Sparse:  # ember._sparse_tensor
        return sparse_product(input, mat2, "mm")
    return _product(MmBackward0, input, mat2, _check_mm, _matmul_error)


def _check_bmm(ad, bd):
    if ad.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if bd.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if bd.shape[0] != ad.shape[0] or bd.shape[1] != ad.shape[2]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{ad.shape[0]}, {ad.shape[2]}] but got: [{bd.shape[0]}, "
                           f"{bd.shape[1]}].")


def _bmm_type_error(ad, bd):
    if ad.dtype != bd.dtype:
        return RuntimeError(f"expected scalar type {scalar_type_name(ad.dtype)} but found "
                            f"{scalar_type_name(bd.dtype)}")
    return None


@register("bmm", out="same")
def bmm(input, mat2, out_dtype: _dtype.dtype | None = None):
    """Batched matrix product of two 3-D tensors with equal batch sizes; ``out_dtype``
    (``float32`` for float16/bfloat16 inputs) as ``widened_product``."""
    if input.__class__ is _Sparse or mat2.__class__ is _Sparse:  # ember._sparse_tensor
        return sparse_bmm(input, mat2, out_dtype)
    if out_dtype is not None:
        return widened_product(bmm, input, mat2, out_dtype)
    return _product(BmmBackward0, input, mat2, _check_bmm, _bmm_type_error,
                    ("bmm", "input", "mat2"))


def _check_mv(ad, bd, in_ndim=1):
    if ad.ndim != 2 or bd.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {in_ndim}, {ad.ndim}, "
                           f"{bd.ndim}")


@register("mv", out="same")
def mv(input, vec):
    """Matrix-vector product."""
    if input.__class__ is _Sparse:  # ember._sparse_tensor
        return input.mv(vec)
    return _product(MvBackward0, input, vec, _check_mv, _matmul_error, ("mv", "input", "vec"))


def _no_error(ad, bd):
    return None


def _check_dot(ad, bd, name="dot"):
    err = _dot_error(ad, bd, name)
    if err is not None:
        raise err


def _check_vdot(ad, bd):
    _check_dot(ad, bd, "vdot")


@register("dot", out=True)
def dot(input, tensor):
    """Inner product of two 1-D tensors of one dtype."""
    return _product(DotBackward0, input, tensor, _check_dot, _no_error,
                    ("dot", "input", "tensor"))


@register("vdot", out=True)
def vdot(input, other):
    """``dot`` with the first argument conjugated (the same for real tensors)."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise _not_tensors("vdot", ("input", "other"), input, other)
    if input.is_complex():
        input = input.conj()
    return _product(DotBackward0, input, other, _check_vdot, _no_error)


@register("inner", out=True)
def inner(input, other):
    """Sum-product over the last dimension of both tensors (a product with a 0-dim one)."""
    try:
        ad, bd = input._data, other._data
    except AttributeError:  # not tensors: PyTorch's parser refuses them
        check_binds("inner", (input, other))
        raise
    if ad.ndim == 0 or bd.ndim == 0:
        return input * other
    if ad.shape[-1] != bd.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got "
                           f"shapes {_list_str(ad.shape)} and {_list_str(bd.shape)}")
    return tensordot(input, other, ([-1], [-1]))


@register("outer", out=True, aliases=("ger",))
def outer(input, vec2):
    """Outer product of two 1-D tensors (PyTorch's type promotion)."""
    try:
        dims = input._data.ndim, vec2._data.ndim
    except AttributeError:  # not tensors: PyTorch's parser refuses them
        check_binds("outer", (input, vec2))
        raise
    for nd, name in zip(dims, ("self", "vec2")):
        if nd != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {nd}-D")
    return input.reshape(-1, 1) * vec2


# -- input + product: addmm, addmv, baddbmm, addbmm -----------------------------------------

def _add_product_bw(node, g):
    m1, m2 = node.saved
    beta, alpha, in_shape, in_grad, summed = node.ctx
    gi = sum_to_size(g * beta if beta != 1 else g, in_shape) if in_grad else None
    gp = g * alpha if alpha != 1 else g
    if summed:  # addbmm: the product was summed over the batch
        gp = gp.unsqueeze(0)
    ga, gb = matmul_grads(m1, m2, gp, m1.requires_grad, m2.requires_grad)
    return gi, ga, gb


AddmmBackward0, AddmvBackward0, BaddbmmBackward0, AddbmmBackward0 = (
    make_node_class(n, _add_product_bw) for n in
    ("AddmmBackward0", "AddmvBackward0", "BaddbmmBackward0", "AddbmmBackward0"))


def _add_product(node_cls, input, m1, m2, check, beta, alpha, summed=False):
    """``beta * input + alpha * (m1 @ m2)`` (``summed``: the batch of products summed) as op
    ``node_cls``, after the devices and PyTorch's checks ``check(idata, ad, bd)``."""
    try:
        check_same_device(input, m1, m2)
    except AttributeError:
        name = node_cls.__name__[:-len("Backward0")].lower()
        raise _not_tensors(name, ("input",) + _ADD_PRODUCT_ARGS[name], input, m1, m2) from None
    idata, ad, bd = input._data, m1._data, m2._data
    check(idata, ad, bd)
    if beta.__class__ is not int or alpha.__class__ is not int:
        beta, alpha = _scalars(beta, alpha, ad.dtype)
    wide = _dtype.widen  # float16/bfloat16 in float32, rounded once; others as they are
    try:
        r = _add_product_arrays(xp_of(input), wide(idata), wide(ad), wide(bd), beta, alpha,
                                summed)
    except ValueError:
        input.expand(*((ad.shape[1], bd.shape[2]) if summed else
                       (ad.shape[:-1] + bd.shape[-1:] if bd.ndim > 1 else ad.shape[:-1])))
        raise  # the line above raises PyTorch's expand error
    out = _make(_dtype.narrow(r, ad.dtype), m1._device)
    if GRAD.enabled and (input.requires_grad or m1.requires_grad or m2.requires_grad):
        record(node_cls, out, (input, m1, m2), (m1, m2),
               (beta, alpha, input._data.shape, input.requires_grad, summed),
               checked=(m2.requires_grad, m1.requires_grad))
    return out


def _scalars(beta, alpha, dt):
    """``beta`` and ``alpha`` as PyTorch's Scalars (0-dim tensors read), integers (truncated)
    for an integer result."""
    beta = beta.item() if beta.__class__ is Tensor else beta
    alpha = alpha.item() if alpha.__class__ is Tensor else alpha
    if dt.kind in "iu":
        return _int_scalar(beta), _int_scalar(alpha)
    return beta, alpha


def _int_scalar(v):
    """``v`` (beta or alpha) as PyTorch converts it for an integer result: truncated."""
    if isinstance(v, float):
        if v != v or v in (math.inf, -math.inf):
            raise RuntimeError("value cannot be converted to type int64_t without overflow")
        return int(v)
    if isinstance(v, complex):
        raise RuntimeError("value cannot be converted to type int64_t without overflow")
    return v


def _add_product_arrays(xp, idata, ad, bd, beta, alpha, summed):
    """The arrays of ``_add_product``: ``beta * idata + alpha * (ad @ bd)``."""
    if summed:  # one GEMM: (n, b*k) @ (b*k, p)
        b, n, k = ad.shape
        r = ad.transpose(1, 0, 2).reshape(n, b * k) @ bd.reshape(b * k, bd.shape[2])
    else:
        r = ad @ bd
    if idata.shape != r.shape:
        idata = xp.broadcast_to(idata, r.shape)
    if alpha != 1:
        r = r * alpha
    if beta != 0:  # beta == 0 ignores input, nan and inf included
        r += idata if beta == 1 else beta * idata
    return r


def _check_mat_dtypes(idata, ad, bd):
    """addmm's and addbmm's dtype checks."""
    if ad.dtype != bd.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{scalar_type_name(ad.dtype)} and {scalar_type_name(bd.dtype)}")
    if idata.dtype != bd.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                           f"{scalar_type_name(idata.dtype)} and {scalar_type_name(bd.dtype)}")


def _check_addmm(idata, ad, bd):
    for d, name in ((ad, "mat1"), (bd, "mat2")):
        if d.ndim != 2:
            raise RuntimeError(f"{name} must be a matrix, got {d.ndim}-D tensor")
    if ad.shape[1] != bd.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_shape_str(ad.shape)} "
                           f"and {_shape_str(bd.shape)})")
    _check_mat_dtypes(idata, ad, bd)


_ADD_PRODUCT_ARGS = {"addmm": ("mat1", "mat2"), "addmv": ("mat", "vec"),
                     "baddbmm": ("batch1", "batch2"), "addbmm": ("batch1", "batch2")}


def _check_addmv(idata, ad, bd):
    if idata.ndim > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {idata.ndim}, {ad.ndim}, "
                           f"{bd.ndim}")
    _check_mv(ad, bd, idata.ndim)
    n, k = ad.shape
    if k != bd.shape[0] or (idata.ndim and idata.shape[-1] not in (1, n)) or idata.ndim > 1:
        raise RuntimeError(f"size mismatch, got input ({_shape_str(idata.shape)}), mat "
                           f"({n}x{k}), vec ({bd.shape[0]})")
    if ad.dtype != bd.dtype or idata.dtype != ad.dtype:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                           f"{scalar_type_name(idata.dtype)}, {scalar_type_name(ad.dtype)}, and "
                           f"{scalar_type_name(bd.dtype)}")


def _check_baddbmm(idata, ad, bd):
    _check_bmm(ad, bd)
    if not ad.dtype == bd.dtype == idata.dtype:
        raise RuntimeError(f"Input dtypes must be the same, got: input {_tname(idata)}, batch1: "
                           f"{_tname(ad)}, batch2: {_tname(bd)}")


def _check_addbmm(idata, ad, bd):
    if ad.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if bd.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if ad.shape[0] != bd.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got "
                           f"{ad.shape[0]} and {bd.shape[0]}")
    _, n, k = ad.shape
    if bd.shape[1] != k:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({n}x{k} and "
                           f"{_shape_str(bd.shape[1:])})")
    _check_mat_dtypes(idata, ad, bd)


@register("addmm", out="same", inplace=True)
def addmm(input, mat1, mat2, _deprecated_mat1=NO_ARG, _deprecated_mat2=NO_ARG, *, beta=1,
          alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)``."""
    if _deprecated_mat1 is not NO_ARG:  # addmm(beta, input, alpha, ...): ops/_deprecated.py
        input, mat1, mat2, beta, alpha = beta_first(
            "addmm", input, mat1, mat2, _deprecated_mat1, _deprecated_mat2, beta, alpha)
    if mat1.__class__ is _Sparse or mat2.__class__ is _Sparse or input.__class__ is _Sparse:
        from .. import sparse

        return sparse.addmm(input, mat1, mat2, beta=beta, alpha=alpha)
    return _add_product(AddmmBackward0, input, mat1, mat2, _check_addmm, beta, alpha)


@register("addmv", out="same", inplace=True)
def addmv(input, mat, vec, _deprecated_mat=NO_ARG, _deprecated_vec=NO_ARG, *, beta=1,
          alpha=1):
    """``beta * input + alpha * (mat @ vec)``."""
    if _deprecated_mat is not NO_ARG:  # addmv(beta, input, alpha, ...): ops/_deprecated.py
        input, mat, vec, beta, alpha = beta_first("addmv", input, mat, vec, _deprecated_mat,
                                                  _deprecated_vec, beta, alpha)
    return _add_product(AddmvBackward0, input, mat, vec, _check_addmv, beta, alpha)


def _no_sparse(op: str, *args) -> None:
    """PyTorch's dispatcher error for an op with no sparse kernel given a sparse tensor (any
    argument: the dispatch key is the set's), before the dense formula trips on it in
    another op's name."""
    for a in args:
        if a.__class__ is _Sparse:
            raise _sparse_no_backend(op, a)


@register("baddbmm", out="same", inplace=True)
def baddbmm(input, batch1, batch2, _deprecated_batch1=NO_ARG, _deprecated_batch2=NO_ARG,
            *, beta=1, alpha=1):
    """``beta * input + alpha * bmm(batch1, batch2)``."""
    if _deprecated_batch1 is not NO_ARG:  # baddbmm(beta, input, alpha, ...): ops/_deprecated.py
        input, batch1, batch2, beta, alpha = beta_first(
            "baddbmm", input, batch1, batch2, _deprecated_batch1, _deprecated_batch2, beta, alpha)
    _no_sparse("baddbmm", input, batch1, batch2)
    return _add_product(BaddbmmBackward0, input, batch1, batch2, _check_baddbmm, beta, alpha)


@register("addbmm", out="same", inplace=True)
def addbmm(input, batch1, batch2, _deprecated_batch1=NO_ARG, _deprecated_batch2=NO_ARG,
           *, beta=1, alpha=1):
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]``."""
    if _deprecated_batch1 is not NO_ARG:  # addbmm(beta, input, alpha, ...): ops/_deprecated.py
        input, batch1, batch2, beta, alpha = beta_first(
            "addbmm", input, batch1, batch2, _deprecated_batch1, _deprecated_batch2, beta, alpha)
    _no_sparse("addbmm", input, batch1, batch2)
    return _add_product(AddbmmBackward0, input, batch1, batch2, _check_addbmm, beta, alpha,
                        summed=True)


hide("addmm", "addmv", "baddbmm", "addbmm")


# -- einsum ---------------------------------------------------------------------------------

_LABELS = string.ascii_uppercase + string.ascii_lowercase  # PyTorch's label order


def _einsum_error(msg):
    return RuntimeError(f"einsum(): {msg}")


def _split_equation(equation: str):
    """Operand terms and the output term (None when implicit), PyTorch's syntax errors."""
    arrow = equation.find("->")
    for i, c in enumerate(equation):
        if c in _LABELS or c in ". " or (c == "," and (arrow < 0 or i < arrow)) or \
                (arrow >= 0 and i in (arrow, arrow + 1)):
            continue
        raise _einsum_error(f"invalid subscript given at index {i} in the equation string, "
                            "subscripts must be in [a-zA-Z]")
    eq = equation.replace(" ", "")
    lhs, _, rhs = eq.partition("->")
    return lhs.split(","), (rhs if "->" in eq else None)


def parse_einsum(equation: str, shapes):
    """``equation`` spelled out for operands of ``shapes``: per-operand labels (ellipses
    replaced by letters), the output labels, and each label's broadcast size."""
    terms, rhs = _split_equation(equation)
    if len(terms) > len(shapes):
        raise _einsum_error("fewer operands were provided than specified in the equation")
    if len(terms) < len(shapes):
        raise _einsum_error("more operands were provided than specified in the equation")
    used = set("".join(terms) + (rhs or "")) - {"."}
    free = [c for c in _LABELS if c not in used]
    n_ell = 0
    for i, (term, shape) in enumerate(zip(terms, shapes)):
        named = len(term) - (3 if "..." in term else 0)
        if "..." in term:
            if named > len(shape):
                raise _einsum_error(f"the number of subscripts in the equation ({named}) is more "
                                    f"than the number of dimensions ({len(shape)}) for operand "
                                    f"{i}")
            n_ell = max(n_ell, len(shape) - named)
        elif named != len(shape):
            raise _einsum_error(f"the number of subscripts in the equation ({named}) does not "
                                f"match the number of dimensions ({len(shape)}) for operand {i} "
                                "and no ellipsis was given")
    ell = "".join(free[:n_ell])
    subs = []
    sizes: dict = {}
    for i, (term, shape) in enumerate(zip(terms, shapes)):
        if "..." in term:
            k = len(shape) - (len(term) - 3)
            term = term.replace("...", ell[n_ell - k:])
        own: dict = {}
        for c, s in zip(term, shape):
            if c in own and own[c] != s:
                raise _einsum_error(f"subscript {c} is repeated for operand {i} but the sizes "
                                    f"don't match, {s} != {own[c]}")
            own[c] = s
        for j, (c, s) in enumerate(zip(term, shape)):
            seen = sizes.get(c)
            if seen is not None and seen != s and seen != 1 and s != 1:
                if c in ell:
                    raise _einsum_error(f"dimension {j} covered by ellipsis in operand {i}has "
                                        f"size {s} which does not broadcast with previously seen "
                                        f"ellipsis with size {seen} for the respective dimension")
                raise _einsum_error(f"subscript {c} has size {s} for operand {i} which does not "
                                    f"broadcast with previously seen size {seen}")
            sizes[c] = s if seen is None or seen == 1 else seen
        subs.append(term)
    if rhs is None:
        lhs = "".join(subs)
        out = ell + "".join(sorted(c for c in set(lhs) if lhs.count(c) == 1 and c not in ell))
    else:
        if "." in rhs.replace("...", ""):
            raise _einsum_error("found '.' for output that is not part of any ellipsis (...)")
        out = rhs.replace("...", ell)
        for c in out:
            if c not in sizes:
                raise _einsum_error(f"output subscript {c} does not appear in the equation for "
                                    "any input operand")
            if out.count(c) > 1:
                raise _einsum_error(f"output subscript {c} appears more than once in the output")
    return subs, out, sizes


def _einsum_bw(node, g):
    subs, out, sizes = node.ctx
    operands = [_expand_to(t, s, sizes) for t, s in zip(node.saved, subs)]
    xp = xp_of(g)
    dt = g._data.dtype
    ein = einsum if g.__class__ is Tensor else public("einsum")  # (batched by vmap)
    free = [c for c in _LABELS if c not in sizes]
    grads = []
    for i, t in enumerate(node.saved):
        if not t.requires_grad:
            grads.append(None)
            continue
        terms = [out] + [s for j, s in enumerate(subs) if j != i]
        tensors = [g] + [o for j, o in enumerate(operands) if j != i]
        target = ""
        for c in subs[i]:
            if c in target:  # a repeated label (a diagonal): pair a fresh label with it
                f = free.pop()
                terms.append(c + f)
                tensors.append(_make(xp.eye(sizes[c], dtype=dt), g._device))
                c = f
            target += c
        have = set("".join(terms))
        for c in target:
            if c not in have:  # summed out of the forward: broadcast back
                terms.append(c)
                tensors.append(_make(xp.ones(sizes[c], dtype=dt), g._device))
                have.add(c)
        gi = ein(",".join(terms) + "->" + target, *tensors)
        grads.append(sum_to_size(gi, t._data.shape))
    return tuple(grads)


EinsumBackward0 = make_node_class("EinsumBackward0", _einsum_bw)


def _expand_to(t, sub, sizes):
    shape = tuple(sizes[c] for c in sub)
    return t if t._data.shape == shape else t.expand(*shape)


def _integer_einsum_dtype(subs, out, shapes, dt):
    """The dtype of PyTorch's einsum of integer or bool operands of dtype ``dt`` (raising its
    errors). PyTorch contracts left to right: a label left in one operand alone is summed out
    of it first with ``sum`` (integers and bools sum to int64), a label shared by the pair
    with ``bmm`` (it refuses mixed dtypes and bools, unless an operand is empty: then its
    result has the second's dtype); with no label to contract the pair is multiplied
    (promoting). A size-1 dim is broadcast, not contracted.
    """
    int64 = np.dtype(np.int64)
    summed = {c for sub in subs for c in sub if c not in out}
    if len(subs) == 1:
        return int64 if summed else dt
    ops = [dict(zip(sub, shape)) for sub, shape in zip(subs, shapes)]
    counts = {c: sum(op.get(c, 1) != 1 for op in ops) for c in summed}
    a_dt, a = dt, ops[0]
    for b in ops[1:]:
        b_dt, pair = dt, set()
        for c in summed:
            in_a, in_b = a.get(c, 1) != 1, b.get(c, 1) != 1
            if in_a and in_b:
                counts[c] -= 1
                if counts[c] == 1:
                    pair.add(c)
                    counts[c] = 0
            elif counts[c] == 1 and (in_a or in_b):
                if in_a:
                    a, a_dt = {**a, c: 1}, int64
                else:
                    b, b_dt = {**b, c: 1}, int64
                counts[c] = 0
        if not pair:
            a_dt = np.promote_types(a_dt, b_dt)
        elif 0 in a.values() or 0 in b.values():
            a_dt = b_dt
        elif a_dt.kind == "b":
            raise NotImplementedError("\"bmm\" not implemented for 'Bool'")
        elif a_dt != b_dt:
            raise RuntimeError(f"expected scalar type {scalar_type_name(a_dt)} but found "
                               f"{scalar_type_name(b_dt)}")
        a = {c: 1 if c in pair else (a.get(c, 1) if b.get(c, 1) == 1 else b[c])
             for c in {**a, **b}}
    return a_dt


def _subscript(n) -> str:
    if n is Ellipsis:
        return "..."
    if 0 <= n < 26:
        return chr(ord("A") + n)
    if 26 <= n < 52:
        return chr(ord("a") + n - 26)
    raise ValueError("einsum(): subscript in subscript list is not within the valid range "
                     "[0, 52)")


def _einsum_relevant_args(args, kwargs) -> list:
    """``einsum``'s overriding arguments as PyTorch's ``torch.einsum`` finds them: the
    operands themselves, not the items of the one list of the old ``einsum(eq, [a, b])``
    form (which it unpacks and dispatches again)."""
    from ..overrides import _relevant_args

    if len(args) == 2 and isinstance(args[0], str) and isinstance(args[1], (list, tuple)):
        return _relevant_args((), kwargs) if kwargs else []
    return _relevant_args(args, kwargs)


def _sublist_equation(args):
    """torch.einsum's sublist format: the equation and the operands."""
    equation = ",".join("".join(_subscript(n) for n in sub) for sub in args[1::2])
    if len(args) % 2:
        equation += "->" + "".join(_subscript(n) for n in args[-1])
        return equation, tuple(args[:-1:2])
    return equation, tuple(args[::2])


def _einsum_as_matmul(xp, subs, out, arrays):
    """A two-operand einsum that is one batched matrix product (attention's ``'bhid,bhjd->bhij'``
    and ``'bhij,bhjd->bhid'``: labels shared and kept, one kept label of each operand's own,
    one shared label contracted) as ``matmul`` of the operands' permuted views, the result
    permuted to the output's order; None for any other equation. PyTorch contracts such a pair
    with ``bmm`` too; NumPy's ``einsum`` copies the operands into its own layout first (2-3x
    ``matmul``'s time on attention's shapes). Floating and complex operands only (integer
    einsums keep NumPy's exact loops)."""
    (sa, sb), (a, b) = subs, arrays
    if a.dtype.kind not in "fc" or a.dtype != b.dtype or a.ndim < 2 or b.ndim < 2 \
            or a.size <= 256 or len(set(sa)) != len(sa) or len(set(sb)) != len(sb):
        return None
    contracted = [c for c in sa if c in sb and c not in out]
    m = [c for c in sa if c not in sb]
    n = [c for c in sb if c not in sa]
    if len(contracted) != 1 or len(m) != 1 or len(n) != 1 or m[0] not in out \
            or n[0] not in out:
        return None
    batch = [c for c in out if c in sa and c in sb]
    if len(batch) + 3 != len(set(sa + sb)):  # a label summed over one operand alone
        return None
    k = contracted[0]
    r = xp.matmul(a.transpose([sa.index(c) for c in batch] + [sa.index(m[0]), sa.index(k)]),
                  b.transpose([sb.index(c) for c in batch] + [sb.index(k), sb.index(n[0])]))
    order = batch + m + n
    return r if order == list(out) else r.transpose([order.index(c) for c in out])


@register("einsum", method=False)
def einsum(equation, *operands):
    """Einstein summation, PyTorch's syntax: ellipses, implicit output, size-1 broadcasting;
    or the sublist format ``einsum(op1, sublist1, op2, sublist2, ..., [sublist_out])``."""
    if not isinstance(equation, str):
        equation, operands = _sublist_equation((equation,) + operands)
    elif not operands:
        raise ValueError("einsum(): must specify the equation string and at least one operand, "
                         "or at least one operand and its subscripts list")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        # PyTorch's einsum calls itself with the list unpacked: a __torch_function__ type
        # (fx's Proxy) sees einsum(eq, a, b), never the list (see _einsum_relevant_args)
        from .. import einsum as public_einsum

        return public_einsum(equation, *operands[0])
    subs, out, sizes = parse_einsum(equation, [t._data.shape for t in operands])
    check_same_device(*operands)
    first = operands[0]._data.dtype
    xp = xp_of(operands[0])
    arrays = []
    for t, s in zip(operands, subs):
        d = t._data
        if d.dtype != first:
            raise RuntimeError(f"expected scalar type {scalar_type_name(first)} but found "
                               f"{scalar_type_name(d.dtype)}")
        shape = tuple(sizes[c] for c in s)
        arrays.append(d if d.shape == shape else xp.broadcast_to(d, shape))
    if first in _dtype.SHELL_NP and len(arrays) > 1 and set("".join(subs)) - set(out):
        raise _dtype.no_kernel("bmm", first)  # PyTorch contracts pairs with bmm
    chalf = first is _dtype.CHALF_NP
    if chalf:  # PyTorch contracts with bmm and sums with sum, neither of which has complex32;
        if len(arrays) > 1:  # a permutation or a diagonal only moves the elements' bits
            raise _dtype.no_chalf_kernel("bmm")
        if set(subs[0]) - set(out):
            raise _dtype.no_chalf_kernel("sum_cpu")
        arrays = [arrays[0].view(np.uint32)]
    if first.kind in "biu":  # PyTorch sums some integer operands to int64 first
        dt = _integer_einsum_dtype(subs, out, [t._data.shape for t in operands], first)
        if dt != first:
            arrays = [a.astype(dt) for a in arrays]
    arrays = [_dtype.widen(a) for a in arrays]
    r = _einsum_as_matmul(xp, subs, out, arrays) if len(arrays) == 2 else None
    if r is None:
        # the contraction-path search (and with it BLAS) pays off beyond tiny operands
        optimize = len(arrays) > 2 or (len(arrays) == 2 and max(a.size for a in arrays) > 256)
        r = xp.einsum(",".join(subs) + "->" + out, *arrays, optimize=optimize)
    r = _dtype.narrow(r, first)  # float16 and bfloat16 summed in float32, rounded once
    if chalf:
        r = r.view(first)
    if getattr(r, "base", None) is not None and any(xp.may_share_memory(r, a) for a in arrays):
        r = r.copy()  # np.einsum may return a view of its input ('ij->ji', 'ii->i')
    res = _make(r, operands[0]._device)
    if GRAD.enabled and any(t.requires_grad for t in operands):
        grads = [t.requires_grad for t in operands]  # an operand serves the others' gradients
        checked = [len(grads) == 1 or any(grads[:i] + grads[i + 1:]) for i in range(len(grads))]
        record(EinsumBackward0, res, operands, tuple(operands), (subs, out, sizes),
               checked=checked)
    return res


OPS["einsum"].fn._ember_relevant_args = _einsum_relevant_args


# -- tensordot, kron, trace, cross ----------------------------------------------------------

def _tensordot_bw(node, g):
    a, b = node.saved
    ca, cb = node.ctx
    na, nb = a._data.ndim, b._data.ndim
    free_a = [i for i in range(na) if i not in ca]
    free_b = [i for i in range(nb) if i not in cb]
    ga = gb = None
    td = tensordot if g.__class__ is Tensor else public("tensordot")  # (vmap: batched)
    if a.requires_grad:  # axes of the result: free_a, then a's partners of sorted(cb)
        r = td(g, b, (list(range(len(free_a), g.dim())), free_b))
        cur = free_a + [ca[cb.index(x)] for x in sorted(cb)]
        ga = r.permute(*[cur.index(k) for k in range(na)])
    if b.requires_grad:  # axes of the result: b's partners of sorted(ca), then free_b
        r = td(a, g, (free_a, list(range(len(free_a)))))
        cur = [cb[ca.index(x)] for x in sorted(ca)] + free_b
        gb = r.permute(*[cur.index(k) for k in range(nb)])
    return ga, gb


TensordotBackward0 = make_node_class("TensordotBackward0", _tensordot_bw)


@register("tensordot", method=False)
@accepts_out
def tensordot(a, b, dims=2, out=None):
    """Contract ``dims`` (an int: last of ``a`` with first of ``b``; or two lists of dims)."""
    ad, bd = a._data, b._data
    if isinstance(dims, Tensor):  # torch.tensordot's: a 0-dim count or two rows of dims
        if dims._data.size > 1:
            dims = (dims[0].tolist(), dims[1].tolist())
        else:
            dims = int(dims.item())
    if isinstance(dims, (int, np.integer)):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > ad.ndim or dims > bd.ndim:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        given_a, given_b = list(range(-int(dims), 0)), list(range(int(dims)))
    elif not isinstance(dims, (list, tuple)) or len(dims) != 2:
        raise RuntimeError("tensordot expects dims to be int or tuple[list[int], list[int]] or "
                           f"list[list[int]] containing two lists, but got dims={dims}")
    else:
        given_a, given_b = ([d] if isinstance(d, (int, np.integer)) else list(d) for d in dims)
    if len(given_a) != len(given_b):
        raise RuntimeError("both dimension lists should have same length")
    if ad.dtype != bd.dtype:
        raise RuntimeError("both inputs should have same dtype")
    check_same_device(a, b)
    ca = [wrap_dim(int(d), ad.ndim) for d in given_a]
    cb = [wrap_dim(int(d), bd.ndim) for d in given_b]
    for i, (x, y) in enumerate(zip(ca, cb)):
        if ad.shape[x] != bd.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{ad.shape[x]} in dim {given_a[i]} and second has size "
                               f"{bd.shape[y]} in dim {given_b[i]}")
    if ad.dtype in _dtype.SHELL_NP:  # PyTorch multiplies them as matrices (vectors: dot)
        raise _dtype.no_kernel("dot" if len(ca) == ad.ndim and len(cb) == bd.ndim
                               else "addmm_impl_cpu_", ad.dtype)
    # tuples: CuPy takes a 0-dim input only with axes == ((), ()), not ([], [])
    r = _dtype.narrow(xp_of(a).tensordot(_dtype.widen(ad), _dtype.widen(bd),
                                         axes=(tuple(ca), tuple(cb))), ad.dtype)
    res = _make(r, a._device)
    if GRAD.enabled and (a.requires_grad or b.requires_grad):
        record(TensordotBackward0, res, (a, b), (a, b), (ca, cb),
               checked=(b.requires_grad, a.requires_grad))
    return res


@register("kron", out=True)
def kron(input, other):
    """Kronecker product (PyTorch's type promotion), built from a broadcast product."""
    try:
        nd = max(input._data.ndim, other._data.ndim)
    except AttributeError:  # not tensors: PyTorch's parser refuses them
        check_binds("kron", (input, other))
        raise
    sa = (1,) * (nd - input._data.ndim) + input._data.shape
    sb = (1,) * (nd - other._data.ndim) + other._data.shape
    a = input.reshape(*[x for s in sa for x in (s, 1)])
    b = other.reshape(*[x for s in sb for x in (1, s)])
    return (a * b).reshape(*[x * y for x, y in zip(sa, sb)])


def _trace_bw(node, g):
    shape = node.ctx
    eye = _make(xp_of(g).eye(*shape, dtype=g._data.dtype), g._device)
    return (g * eye,)


TraceBackward0 = make_node_class("TraceBackward0", _trace_bw)


@register("trace")
def trace(input):
    """Sum of the main diagonal of a matrix (integers sum as int64)."""
    d = input._data
    if d.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {d.ndim}")
    _dtype.check_kernel("trace", d.dtype)
    if d.dtype.kind == "b":
        raise NotImplementedError('"trace" not implemented for \'Bool\'')
    if d.dtype is _dtype.CHALF_NP:
        raise _dtype.no_chalf_kernel("trace")
    r = _dtype.narrow(_dtype.widen(d).trace(dtype=np.int64 if d.dtype.kind in "iu" else None),
                      d.dtype)
    out = _make(r, input._device)
    if GRAD.enabled and input.requires_grad:
        record(TraceBackward0, out, (input,), (), d.shape)
    return out


def _cross_bw(node, g):
    a, b = node.saved
    dim = node.ctx
    ga = sum_to_size(_cross(b, g, dim), a._data.shape) if a.requires_grad else None
    gb = sum_to_size(_cross(g, a, dim), b._data.shape) if b.requires_grad else None
    return ga, gb


LinalgCrossBackward0 = make_node_class("LinalgCrossBackward0", _cross_bw)
mark_holomorphic(LinalgCrossBackward0)  # bilinear: complex gradients are conj(a) x g, ...


def _cross(input, other, dim):
    ad, bd = input._data, other._data
    if ad.ndim != bd.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if not -ad.ndim <= dim < ad.ndim:
        wrap_dim(dim, ad.ndim)  # raises PyTorch's IndexError
    if ad.shape[dim] != 3 or bd.shape[dim] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{ad.shape[dim]} and {bd.shape[dim]}")
    if ad.dtype != bd.dtype:
        raise RuntimeError(f"expected scalar type {scalar_type_name(ad.dtype)} but found "
                           f"{scalar_type_name(bd.dtype)}")
    check_same_device(input, other)
    broadcast_shapes_or_raise(ad.shape, bd.shape)
    if ad.dtype in _NO_PRODUCT or ad.dtype.kind == "b":  # complex32, the unsigned shells
        raise _dtype.no_kernel("cross", ad.dtype)
    axis = wrap_dim(dim, ad.ndim)
    r = xp_of(input).cross(ad, bd, axis=axis)
    out = _make(r, input._device)
    if GRAD.enabled and (input.requires_grad or other.requires_grad):
        record(LinalgCrossBackward0, out, (input, other), (input, other), axis,
               checked=(other.requires_grad, input.requires_grad))
    return out


@register("cross", out="same")
def cross(input, other, dim=None):
    """Cross product of 3-vectors along ``dim`` (default: the first dimension of size 3)."""
    if dim is None:
        _warn_once("Using torch.cross without specifying the dim arg is deprecated.\nPlease "
                   "either pass the dim explicitly or simply use torch.linalg.cross.\nThe "
                   "default value of dim will change to agree with that of linalg.cross in a "
                   "future release.")
        shape = broadcast_shapes_or_raise(input._data.shape, other._data.shape)
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return _cross(input, other, dim)


# -- torch.linalg's products: cross, vecdot, multi_dot ----------------------------------------

@accepts_out(dtype_rule="same")
def linalg_cross(input, other, *, dim=-1, out=None):
    """``ember.linalg.cross``: cross product of 3-vectors along ``dim``, batches broadcast."""
    return _cross(input, other, dim)


@accepts_out(dtype_rule="same")
def vecdot(x, y, *, dim=-1, out=None):
    """Dot product of vectors along ``dim`` (batches broadcast); ``x`` is conjugated when
    complex."""
    try:
        dtypes = x._data.dtype, y._data.dtype
    except AttributeError:  # not tensors: PyTorch's parser refuses them
        check_binds("linalg_vecdot", (x, y), {"dim": dim})
        raise
    for t in (x, y):
        if t._data.dtype not in _dtype.FLOATING_NP and t._data.dtype not in _dtype.COMPLEX_NP:
            raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as "
                               f"input. Got {scalar_type_name(t._data.dtype)}")
    if dtypes[0] != dtypes[1]:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x "
                           f"of type {scalar_type_name(x._data.dtype)} and y of type "
                           f"{scalar_type_name(y._data.dtype)} instead")
    return (x.conj() * y).sum(dim)  # conj(x) . y, as PyTorch's (x itself when real)


def _chain_order(dims):
    """Optimal parenthesization of a matrix chain with ``dims`` (n + 1 sizes): ``split[i][j]``
    is where the product of matrices i..j splits (the classic dynamic programme)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


@accepts_out(dtype_rule="same")
def multi_dot(tensors, *, out=None):
    """The product of a chain of matrices in the cheapest order; the first may be a row
    vector (1-D) and the last a column vector (1-D)."""
    tensors = list(tensors)
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    for i, t in enumerate(tensors):
        nd = t._data.ndim
        if i == 0 and nd not in (1, 2):
            raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {nd}D")
        if i == n - 1 and nd not in (1, 2):
            raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {nd}D")
        if 0 < i < n - 1 and nd != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {nd}D")
        if t._data.dtype != tensors[0]._data.dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor "
                               f"0 is {_tname(tensors[0]._data)} and tensor {i} "
                               f"{_tname(t._data)}")
    for i in range(n - 1):
        a, b = tensors[i]._data.shape, tensors[i + 1]._data.shape
        if a[-1] != b[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes "
                               f"{_list_str(a)} and {_list_str(b)} cannot be multiplied")
    first_vec, last_vec = tensors[0]._data.ndim == 1, tensors[-1]._data.ndim == 1
    if first_vec:
        tensors[0] = tensors[0].unsqueeze(0)
    if last_vec:
        tensors[-1] = tensors[-1].unsqueeze(-1)
    dims = [t._data.shape[0] for t in tensors] + [tensors[-1]._data.shape[1]]
    split = _chain_order(dims)

    def product(i, j):
        if i == j:
            return tensors[i]
        k = split[i][j]
        return product(i, k).matmul(product(k + 1, j))

    r = product(0, n - 1)
    shape = r._data.shape
    if first_vec or last_vec:
        r = r.reshape(*[s for s, drop in zip(shape, (first_vec, last_vec)) if not drop])
    return r


@register("chain_matmul", out=True, method=False)
def chain_matmul(*matrices):
    """Deprecated product of 2-D matrices (``ember.linalg.multi_dot``)."""
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    _warn_once("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
               "release. Use torch.linalg.multi_dot instead, which accepts a list of two or "
               "more tensors rather than multiple parameters.")
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m._data.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {m._data.ndim}, expected 2 instead.")
    if len(matrices) == 1:
        return matrices[0].clone()
    return _la().multi_dot(matrices)


# -- torch.<name> / Tensor.<name> spellings of ember.linalg ---------------------------------

_WARNED_ONCE: set = set()  # PyTorch's TORCH_WARN_ONCE: each deprecation warning once a process


def _warn_once(message: str) -> None:
    if message not in _WARNED_ONCE:
        _WARNED_ONCE.add(message)
        warnings.warn(message, UserWarning, stacklevel=user_stacklevel())


def _la():
    from .. import linalg

    return linalg


@register("matrix_power", out=True)
def matrix_power(input, n):
    """``input`` (a batch of square matrices) to the integer power ``n``."""
    from .linalg_decompositions import _matrix_power

    return _matrix_power(input, n, "matrix_power")


@register("inverse", out="same")
def inverse(input):
    """Inverse of a (batch of) square matrix (``ember.linalg.inv``)."""
    return _la().inv(input)


@register("det")
def det(input):
    """Determinant (``ember.linalg.det``)."""
    return _la().det(input)


@register("logdet")
def logdet(input):
    """Log-determinant: nan for a negative determinant, -inf for a zero one; complex for a
    complex input (``log(sign) + logabsdet``)."""
    from .linalg_decompositions import _slogdet

    sign, logabsdet = _slogdet(input, "logdet")
    if sign._data.dtype.kind == "c":
        r = sign.log() + logabsdet
        # a singular matrix: PyTorch's complex -inf (its logabsdet times a complex one) has a
        # NaN imaginary part
        singular = xp_of(sign).isneginf(logabsdet._data)  # (no host sync: no .any())
        fix = xp_of(sign).where(singular, complex(0, np.nan), 0).astype(r._data.dtype)
        return r + _make(fix, sign._device)
    offset = xp_of(sign).where(sign._data < 0, np.nan, 0).astype(logabsdet._data.dtype)
    return logabsdet + _make(offset, sign._device)


@register("slogdet")
def slogdet(input):
    """Sign and log-absolute-determinant (``ember.linalg.slogdet``)."""
    r = _la().slogdet(input)
    return _rt.slogdet(r.sign, r.logabsdet)


@register("cholesky", out="same")
def cholesky(input, upper=False):
    """Deprecated ``torch.cholesky`` (``ember.linalg.cholesky``)."""
    _warn_deprecated("cholesky", "cholesky",
                     "L = torch.cholesky(A)\nshould be replaced with\nL = "
                     "torch.linalg.cholesky(A)\nand\nU = torch.cholesky(A, upper=True)\nshould "
                     "be replaced with\nU = torch.linalg.cholesky(A).mH\nThis transform will "
                     "produce equivalent results for all valid (symmetric positive definite) "
                     "inputs.")
    d = input._data
    if d.dtype.kind not in "fc" and d.dtype.name != "bfloat16" and d.ndim >= 2 and \
            d.shape[-1] == d.shape[-2]:
        raise _dtype.no_kernel("cholesky_cpu", d.dtype)  # its dispatch error, not linalg's
    return _la().cholesky(input, upper=upper, _name="cholesky")


@register("pinverse")
def pinverse(input, rcond=1e-15):
    """Pseudo-inverse with singular values below ``rcond * max`` cut (``linalg.pinv``)."""
    return _la().pinv(input, rtol=rcond)


@register("svd")
def svd(input, some=True, compute_uv=True):
    """``torch.svd``: ``(U, S, V)`` with ``V`` (not ``Vh``); ``some`` picks the reduced SVD."""
    la = _la()
    if input._data.ndim < 2:  # torch.svd's own check, worded unlike linalg.svd's
        raise RuntimeError("linalg.svd: input should have at least 2 dimensions, but has "
                           f"{input._data.ndim} dimensions instead")
    if not compute_uv:
        s = la.svdvals(input)
        d = input._data
        xp = xp_of(input)
        m, n = d.shape[-2:]
        # zero-filled U (m x m) and V (n x n) whatever ``some`` is, as PyTorch's
        zu = _make(xp.zeros(d.shape[:-2] + (m, m), d.dtype), input._device)
        zv = _make(xp.zeros(d.shape[:-2] + (n, n), d.dtype), input._device)
        return _rt.svd(zu, s, zv)
    u, s, vh = la.svd(input, full_matrices=not some)
    return _rt.svd(u, s, vh.mH)  # V, not V^T: conjugated for complex input


@register("qr")
def qr(input, some=True):
    """``torch.qr``: the reduced (``some=True``) or complete QR decomposition."""
    _warn_deprecated("qr", "qr",
                     "The boolean parameter 'some' has been replaced with a string parameter "
                     "'mode'.\nQ, R = torch.qr(A, some)\nshould be replaced with\nQ, R = "
                     "torch.linalg.qr(A, 'reduced' if some else 'complete')")
    r = _la().qr(input, mode="reduced" if some else "complete")
    return _rt.qr(r.Q, r.R)


# -- torch.<name> / Tensor.<name> spellings of ember.linalg's factorizations -----------------

def _warn_deprecated(old: str, new: str, example: str) -> None:
    _warn_once(f"torch.{old} is deprecated in favor of torch.linalg.{new} and will be "
               f"removed in a future PyTorch release.\n{example}")


@register("matrix_exp")
def matrix_exp(input):
    """The matrix exponential (``ember.linalg.matrix_exp``)."""
    return _la().matrix_exp(input)


@register("cholesky_solve")
@accepts_out
def cholesky_solve(input, input2, upper=False, out=None):
    """The solution of ``A X = input`` given the Cholesky factor ``input2`` of ``A``
    (lower, or upper with ``upper``)."""
    from .linalg_triangular import cholesky_solve as solve_

    return solve_(input, input2, upper)


@register("cholesky_inverse")
@accepts_out
def cholesky_inverse(input, upper=False, out=None):
    """The inverse of ``A`` from its Cholesky factor ``input`` (lower, or upper)."""
    from .linalg_triangular import cholesky_inverse as inverse_

    return inverse_(input, upper)


@register("triangular_solve")
@accepts_out(dtype_rule="same")
def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False, out=None):
    """Deprecated ``(solution, cloned_coefficient)`` of ``A X = input`` for triangular ``A``
    (``ember.linalg.solve_triangular`` has the arguments the other way round)."""
    from .linalg_triangular import triangular_solve as solve_

    _warn_once("torch.triangular_solve is deprecated in favor of "
               "torch.linalg.solve_triangularand will be removed in a future PyTorch "
               "release.\ntorch.linalg.solve_triangular has its arguments reversed and does "
               "not return a copy of one of the inputs.\nX = torch.triangular_solve(B, "
               "A).solution\nshould be replaced with\nX = torch.linalg.solve_triangular(A, "
               "B).")
    return _rt.triangular_solve(*solve_(input, A, upper, transpose, unitriangular))


@register("lu")
def lu(A, pivot=True, get_infos=False, out=None):
    """Deprecated ``(LU, pivots)`` (``(LU, pivots, infos)`` with ``get_infos``) of
    ``ember.linalg.lu_factor_ex``; never raises for a singular matrix."""
    _warn_deprecated("lu", "lu_factor / torch.linalg.lu_factor_ex",
                     "LU, pivots = torch.lu(A, compute_pivots)\nshould be replaced with\nLU, "
                     "pivots = torch.linalg.lu_factor(A, compute_pivots)\nand\nLU, pivots, info "
                     "= torch.lu(A, compute_pivots, get_infos=True)\nshould be replaced with\nLU, "
                     "pivots, info = torch.linalg.lu_factor_ex(A, compute_pivots)")
    res = _rt._lu_with_info(*_la().lu_factor_ex(A, pivot=pivot))
    if not get_infos:
        res = (res.LU, res.pivots)
    if out is None:
        return res
    return type(res)(*(write_out(o, r) for o, r in zip(out, res)))


@register("lu_solve")
@accepts_out(dtype_rule="same")
def lu_solve(input, LU_data, LU_pivots, out=None):
    """Deprecated solution of ``A X = input`` from ``A``'s LU factorization
    (``ember.linalg.lu_solve(LU_data, LU_pivots, input)``)."""
    _warn_once("torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be "
               "removed in a future PyTorch release.\nNote that torch.linalg.lu_solve has its "
               "arguments reversed.\nX = torch.lu_solve(B, LU, pivots)\nshould be replaced "
               "with\nX = torch.linalg.lu_solve(LU, pivots, B)")
    return _la().lu_solve(LU_data, LU_pivots, input)


@register("lu_unpack", method=False)
@accepts_out(dtype_rule="same")
def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, out=None):
    """``(P, L, U)`` from the packed output of ``lu_factor``."""
    from .linalg_lu import lu_unpack as unpack_

    return unpack_(LU_data, LU_pivots, unpack_data, unpack_pivots)


@register("geqrf", differentiable=False)
@accepts_out
def geqrf(input, out=None):
    """``(a, tau)``: QR in LAPACK's geqrf format (``R`` on and above the diagonal, the
    Householder reflectors below, their scales in ``tau``)."""
    from .linalg_householder import geqrf as geqrf_

    return geqrf_(input)


@register("orgqr", out=True)
def orgqr(input, input2):
    """``Q`` from ``geqrf``'s output (``ember.linalg.householder_product``)."""
    return _la().householder_product(input, input2)


@register("ormqr")
@accepts_out(dtype_rule="same")
def ormqr(input, input2, input3, left=True, transpose=False, out=None):
    """The product of ``input3`` with ``Q`` given by ``geqrf``'s reflectors, without forming
    ``Q``."""
    from .linalg_householder import ormqr as ormqr_

    return ormqr_(input, input2, input3, left, transpose)


@register("vander", method=False)
def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a 1-D ``x``: columns ``x^(N-1) ... x^0`` (``x^0 ... x^(N-1)``
    with ``increasing``); integer and bool inputs give int64."""
    d = x._data
    if d.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = d.shape[0] if N is None else int(N)
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if d.dtype not in _dtype.FLOATING_NP:
        from .. import int64

        x = x.to(int64)
    xp = xp_of(x)
    dt = x._data.dtype
    if n < 2:
        r = _make(xp.ones((d.shape[0], n), dtype=dt), x._device)
    else:
        from .. import cat

        ones = _make(xp.ones((d.shape[0], 1), dtype=dt), x._device)
        r = cat([ones, x.unsqueeze(1).expand(d.shape[0], n - 1)], 1).cumprod(1)
    return r if increasing else r.flip(1)
