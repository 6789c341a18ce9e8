"""The array kernels of convolution and their path selection (``ops.conv`` holds the ops).

A convolution's geometry (``Geom``) relates a "wide" side of spatial size ``x`` to a "narrow"
side of size ``y``: the narrow position ``o`` reads the wide positions
``o * stride - lo + j * dilation`` for kernel offsets ``j``. Two window kernels serve
convolution, pooling and ``unfold``/``fold``:

* ``windows``: a strided view (no copy) of the padded wide side, shape ``(*lead, *y, *k)``;
  im2col is one reshape-copy of it, and a convolution is then one batched matmul.
* ``scatter_windows``: the adjoint, looping over the kernel offsets (``prod(k)`` iterations)
  and adding strided slices into a zero buffer (col2im) -- never ``np.add.at``.

``conv_array`` (wide -> narrow), ``conv_transpose_array`` (narrow -> wide) and
``weight_grad_array`` pick among im2col layouts (plain, flat, batch-folded, channels-last,
row taps) by the measured thresholds below; each path gives the same values. The per-sample
paths split a large enough batch over Ember's intra-op threads (``_over_samples``): NumPy
runs a stacked matmul as one small GEMM per sample, each too small for OpenBLAS to thread.
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import NamedTuple

import numpy as np

from .. import _native
from .._device import xp_of
from .._parallel import blas_threads_busy, native_threads, parallel_for
from .linalg import blas_matmul as _matmul
from .linalg import gemm

__all__ = ["Geom", "span", "tap_offsets", "windows", "padded", "scatter_windows", "cols_plain",
           "conv_array", "conv_transpose_array", "weight_grad_array"]


class Geom(NamedTuple):
    """Per-dim kernel ``k``, stride ``s``, dilation ``d``, low padding ``lo`` and the sizes of
    the wide (``x``) and narrow (``y``) sides, plus ``groups``."""
    k: tuple
    s: tuple
    d: tuple
    lo: tuple
    x: tuple
    y: tuple
    groups: int = 1


def span(g: Geom, i: int) -> int:
    """Wide-side extent (from the padded origin) that the windows touch along dim ``i``."""
    return (g.y[i] - 1) * g.s[i] + g.d[i] * (g.k[i] - 1) + 1


def _high_padding(g: Geom) -> list:
    """Per dim, the padding past the wide side's end that the windows reach into."""
    return [max(0, span(g, i) - g.lo[i] - g.x[i]) for i in range(len(g.k))]


def _padded_size(g: Geom) -> tuple:
    """The wide side with its low padding, extended to every position a window touches."""
    return tuple(max(g.lo[i] + g.x[i], span(g, i)) for i in range(len(g.k)))


def tap_offsets(g: Geom):
    """The kernel offsets of ``g`` (tuples, last dim fastest)."""
    return itertools.product(*(range(k) for k in g.k))


def _crop(g: Geom, sizes, start):
    """The index of the box of ``sizes`` at ``start`` in the last dims."""
    return (Ellipsis,) + tuple(slice(start[i], start[i] + sizes[i]) for i in range(len(sizes)))


def _tap_slices(g: Geom, off) -> tuple:
    """The wide-side positions kernel offset ``off`` reads, one strided slice per dim (in
    the padded buffer's coordinates)."""
    return tuple(slice(off[i] * g.d[i], off[i] * g.d[i] + (g.y[i] - 1) * g.s[i] + 1, g.s[i])
                 for i in range(len(g.k)))


def padded(xd, g: Geom, fill=0):
    """``xd`` padded with ``fill`` to cover every window of ``g`` (itself when no padding
    is needed, else one copy)."""
    n = len(g.k)
    lead = xd.shape[:-n]
    hi = _high_padding(g)
    if not any(g.lo) and not any(hi):
        return xd
    buf = xp_of(xd).full(lead + tuple(g.lo[i] + g.x[i] + hi[i] for i in range(n)), fill,
                         dtype=xd.dtype)
    buf[_crop(g, g.x, g.lo)] = xd
    return buf


def windows(xd, g: Geom, fill=0):
    """Strided view ``(*lead, *y, *k)`` of ``xd`` padded with ``fill`` (one copy if padded)."""
    n = len(g.k)
    lead = xd.shape[:-n]
    xd = padded(xd, g, fill)
    xp = xp_of(xd)
    st = xd.strides
    sp = st[-n:]
    strides = st[:-n] + tuple(sp[i] * g.s[i] for i in range(n)) + \
        tuple(sp[i] * g.d[i] for i in range(n))
    return xp.lib.stride_tricks.as_strided(xd, lead + g.y + g.k, strides)


def scatter_windows(lead, g: Geom, dtype, xp, piece):
    """The adjoint of ``windows``: a zero wide-side buffer ``(*lead, *x)`` into which
    ``piece(offset)`` (narrow-side shaped, for kernel offset tuple ``offset``) is added at
    every window position; padding is cropped off."""
    size = _padded_size(g)
    buf = xp.zeros(tuple(lead) + size, dtype=dtype)
    for off in tap_offsets(g):
        buf[(Ellipsis,) + _tap_slices(g, off)] += piece(off)
    if any(g.lo) or size != g.x:
        buf = buf[_crop(g, g.x, g.lo)]
    return buf


# -- array kernels ------------------------------------------------------------------------------

def _result_dtype(a, b):
    """The promoted dtype of two arrays, from their dtypes (``np.result_type`` on the arrays
    themselves is a NumPy function call that a CuPy array refuses)."""
    return a.dtype if a.dtype is b.dtype else np.promote_types(a.dtype, b.dtype)


def cols_plain(xd, g: Geom):
    """im2col: ``(N, groups, C/groups * K, L)``, the one copy a convolution makes."""
    n = len(g.k)
    v = windows(xd, g)
    nd = v.ndim
    order = (0, 1) + tuple(range(2 + n, nd)) + tuple(range(2, 2 + n))  # (N, C, *k, *y)
    return v.transpose(order).reshape(xd.shape[0], g.groups,
                                      xd.shape[1] // g.groups * math.prod(g.k), math.prod(g.y))


class _Plan(NamedTuple):
    """A flat layout (see ``_flat_plan``)."""
    P: tuple  # grid sizes: the padded wide side (the last dim unpadded when it wraps)
    R: tuple  # row strides of the grid
    Lq: int  # narrow-side positions per plane in the grid's layout
    offs: tuple  # flat shift of each kernel offset
    F: int  # buffer length per plane
    base: int  # where the grid starts in the buffer
    wrap: bool  # the last dim is unpadded: shifts wrap into the neighbouring rows
    cuts: tuple  # (last-dim tap, start, stop): wrapped positions of that tap, zeroed
    exact: bool  # the narrow side's grid is its own shape: no junk columns


@functools.lru_cache(maxsize=512)
def _flat_plan(g: Geom):
    """The "flat" layout of a stride-1 geometry of 2+ dims, or None.

    The padded wide side (sizes ``P``) is seen as one flat row per plane, and the narrow side
    is embedded in the same grid (``(y[0], *P[1:])``, the extra columns are junk or zeros).
    Kernel offset ``j`` is then a plain shift ``offs[j]`` of that row, so im2col copies and
    col2im adds contiguous runs of ``Lq`` elements instead of short image rows.

    When the last dim keeps its size ("same" padding along it, as in a 3x3 conv with padding
    1) it is not padded at all: a shift past a row's end reads the neighbouring row, and those
    wrapped positions (``cuts``) are zeroed in the columns instead. The input is then copied
    in whole planes and the narrow side has no junk columns (no crop of the output).
    """
    n = len(g.k)
    if n < 2 or any(s != 1 for s in g.s):
        return None
    wrap = g.y[-1] == g.x[-1]
    P = _padded_size(g)
    if wrap:
        P = P[:-1] + (g.x[-1],)
    R = tuple(math.prod(P[i + 1:]) for i in range(n))
    Lq = g.y[0] * R[0]
    offs = tuple(sum(o[i] * g.d[i] * R[i] for i in range(n))
                 for o in tap_offsets(g))
    base = g.lo[-1] if wrap else 0
    cuts = []
    if wrap:
        W = g.x[-1]
        for j in range(g.k[-1]):
            dx = j * g.d[-1] - g.lo[-1]
            if dx:
                cuts.append((j, 0, min(W, -dx)) if dx < 0 else (j, max(0, W - dx), W))
    return _Plan(P, R, Lq, offs, max(base + math.prod(P), offs[-1] + Lq), base, wrap,
                 tuple(cuts), (g.y[0],) + P[1:] == g.y)


def _grid(buf, g: Geom, plan):
    """The grid of ``plan`` in a ``(N, C, F)`` buffer, and the index of the wide side in it."""
    N, C = buf.shape[:2]
    grid = buf[:, :, plan.base:plan.base + math.prod(plan.P)].reshape((N, C) + plan.P)
    start = g.lo[:-1] + (0,) if plan.wrap else g.lo
    return grid, _crop(g, g.x, start)


def _flat_padded(xd, g: Geom, plan):
    """``xd`` zero-padded into the flat rows of ``plan``, ``(N, C, F)``, and the strides
    (bytes) of the kernel offsets along such a row."""
    N, C = xd.shape[:2]
    buf = xp_of(xd).zeros((N, C, plan.F), dtype=xd.dtype)
    grid, where = _grid(buf, g, plan)
    grid[where] = xd
    return buf, tuple(g.d[i] * plan.R[i] * buf.itemsize for i in range(len(g.k)))


def _cut(cols, g: Geom, plan, inner: int):
    """Zero the wrapped positions in columns laid out ``(..., k[-1], <inner axes>, L)``,
    ``L`` a whole number of rows (``Lq``, or ``_row_taps``'s longer rows)."""
    if not plan.cuts:
        return cols
    W = g.x[-1]
    v = cols.reshape(cols.shape[:-1] + (cols.shape[-1] // W, W))
    for j, a, b in plan.cuts:
        v[(Ellipsis, j) + (slice(None),) * (inner + 1) + (slice(a, b),)] = 0
    return cols


def _cols(xd, g: Geom, plan):
    """im2col in the layout of ``plan``: ``(N, groups, C/groups * K, L or Lq)``."""
    if plan is None:
        return cols_plain(xd, g)
    buf, kst = _flat_padded(xd, g, plan)
    N, C = xd.shape[:2]
    v = xp_of(xd).lib.stride_tricks.as_strided(
        buf, (N, C) + g.k + (plan.Lq,), buf.strides[:2] + kst + (buf.itemsize,))
    cols = _cut(v.copy(), g, plan, 0)  # the copy is the im2col (cuts must not touch buf)
    return cols.reshape(N, g.groups, C // g.groups * math.prod(g.k), plan.Lq)


def _cols_folded(xd, g: Geom, plan):
    """im2col with the batch folded into the columns: ``(groups, C/groups * K, N * L)``
    (``N * Lq`` in the layout of ``plan``)."""
    N, C = xd.shape[:2]
    n = len(g.k)
    rows = C // g.groups * math.prod(g.k)
    if plan is None:
        v = windows(xd, g)  # (N, C, *y, *k) -> (C, *k, N, *y)
        v = v.transpose((1,) + tuple(range(2 + n, 2 + 2 * n)) + (0,) + tuple(range(2, 2 + n)))
        return v.reshape(g.groups, rows, N * math.prod(g.y))
    buf, kst = _flat_padded(xd, g, plan)
    v = xp_of(xd).lib.stride_tricks.as_strided(
        buf, (C,) + g.k + (N, plan.Lq), (buf.strides[1],) + kst + (buf.strides[0], buf.itemsize))
    cols = _cut(v.copy(), g, plan, 1)
    return cols.reshape(g.groups, rows, N * plan.Lq)


def _narrow_in(ad, g: Geom, plan):
    """A narrow-side array ``(N, C, *y)`` as ``(N, C, L or Lq)`` (zero junk columns)."""
    N, C = ad.shape[:2]
    if plan is None or plan.exact:
        return ad.reshape(N, C, math.prod(g.y))
    buf = xp_of(ad).zeros((N, C, g.y[0]) + plan.P[1:], dtype=ad.dtype)
    buf[_crop(g, g.y, (0,) * len(g.y))] = ad
    return buf.reshape(N, C, plan.Lq)


def _narrow_in_t(ad, g: Geom, plan):
    """A narrow-side array ``(N, C, *y)`` as ``(N * L or N * Lq, C)``: positions major (zero
    junk columns), the right-hand side of the weight gradient's product."""
    N, C = ad.shape[:2]
    xp = xp_of(ad)
    moved = xp.moveaxis(ad, 1, -1)  # (N, *y, C)
    if plan is None or plan.exact:
        return xp.ascontiguousarray(moved).reshape(N * math.prod(g.y), C)
    buf = xp.zeros((N, g.y[0]) + plan.P[1:] + (C,), dtype=ad.dtype)
    buf[(slice(None),) + tuple(slice(0, y) for y in g.y)] = moved
    return buf.reshape(N * plan.Lq, C)


def _narrow_out(r, g: Geom, plan):
    """``(N, C, L or Lq)`` back to a contiguous ``(N, C, *y)``."""
    N, C = r.shape[:2]
    if plan is None or plan.exact:
        return r.reshape((N, C) + g.y)
    r = r.reshape((N, C, g.y[0]) + plan.P[1:])[_crop(g, g.y, (0,) * len(g.y))]
    return xp_of(r).ascontiguousarray(r)


#: im2col bytes per chunk of samples: a chunk's columns are written and then multiplied while
#: they are still in cache (the whole batch's columns are 9x the input and went through main
#: memory twice; 16-channel 3x3 conv on 32x32x32: 2.2 ms -> 1.3 ms forward)
_CHUNK_BYTES = 4 << 20

#: below this many output positions per sample the batch is folded into one GEMM: NumPy runs
#: a stacked matmul as one small GEMM per sample (resnet18's 512-channel layers on 32x32
#: input have L = 1..4: per-sample products were 9-58 ms, folded 1-14 ms)
_FOLD_BELOW = 64


#: the row-tap and channels-last products (``_by_rows``, ``_by_cl``) can be switched off, to
#: time them against the plain im2col paths in one process
_ROW_TAPS = True
_CHANNELS_LAST = True

#: channels-last products serve up to this many positions per sample (resnet18's 8x8 maps:
#: 64 channels, batch 32, forward 1.18 -> 0.99 ms); on 28x28 maps they lost (2.0 -> 2.4 ms)
_CL_BELOW = 65


#: a grouped convolution whose im2col exceeds twice this many bytes runs in chunks of groups
#: of about this many: vmap over per-example weights makes one group per example (``groups`` in the
#: hundreds, a batch of 1), whose whole-sample columns (300 MB for the neural-tangent-kernel
#: tutorial's 1000 groups of 32 channels on 28x28) went through main memory and page faults;
#: the chunks stay in cache (that conv forward, its weight gradient and
#: transpose: 0.28 / 0.26 / 0.25 -> 0.19 / 0.19 / 0.18 s; 4 MB chunks 0.20, 64 MB 0.23)
_GROUP_CHUNK_BYTES = 4 * _CHUNK_BYTES

#: multiply-adds per thread at least when a per-sample path splits its batch over Ember's
#: intra-op threads (``_over_samples``): a chunk handed to another thread costs ~50 us.
#: Serial -> on 2 threads (2026-12-05, 2-core EPYC): the 16-channel 3x3 conv on 32x16x32x32
#: (75M) forward 2.23 -> 1.09 ms, input gradient 2.27 -> 1.12, weight gradient 2.04 -> 1.09;
#: LeNet's 6 -> 16 conv (batch 64, 21M) forward 0.66 -> 0.47, input gradient 1.24 -> 0.74;
#: 3 -> 16 channels on 32x32x32 (14M) forward 0.46 -> 0.36. 1M per thread measured the same
#: as 2M; 4M left LeNet's first conv serial (0.37 against 0.34 ms)
_PARALLEL_MACS = 1 << 21


def _over_samples(xd, macs: int, run) -> None:
    """``run(n0, n1)`` over the batch of ``xd``, in chunks of samples in Ember's intra-op
    threads when it is NumPy's and the work is large enough (``macs`` multiply-adds per
    sample), else in one call; also in one call while OpenBLAS's own threads may be spinning
    after a threaded product (``_parallel.blas_threads_busy``). A sample's result does not
    depend on the chunk it is computed in."""
    N = xd.shape[0]
    if N < 2 or xp_of(xd) is not np or blas_threads_busy():
        run(0, N)
        return
    parallel_for(0, N, -(-_PARALLEL_MACS // max(1, macs)), run)


def _row_split(rows: int, per_sample: int, macs: int) -> tuple:
    """``(units, unit, grain, threads)``: how the direct forward kernels hand ``rows``
    output rows (``per_sample`` to a sample, ``macs`` multiply-adds each) to the threads of
    their native pool: whole samples where there are enough of them (``unit`` rows each),
    else single rows; ``grain`` units at least to a thread, as ``_over_samples`` sizes its
    chunks."""
    threads = native_threads()
    grain = -(-_PARALLEL_MACS // max(1, macs))
    if rows // per_sample >= 2 * threads:
        return rows // per_sample, per_sample, -(-grain // per_sample), threads
    return rows, 1, grain, threads


#: most blocks a weight gradient's batch is summed in (``_sum_over_samples``): two, one per
#: thread on two cores. More blocks are more, smaller NumPy calls, and the threads' turns at
#: the GIL between them cost more than the blocks gain: 8 blocks on 2 threads took the
#: 16-channel 3x3 conv's weight gradient on 32x16x32x32 from 1.06 to 1.63 ms (1.86 -> 2.01 ms
#: on one thread)
_MAX_SUM_BLOCKS = 2


def _sum_blocks(xd, macs: int) -> int:
    """How many blocks ``_sum_over_samples`` sums a batch of ``xd`` in."""
    N = xd.shape[0]
    nb = 1
    if N > 1 and xp_of(xd) is np:
        cap = min(_MAX_SUM_BLOCKS, N, N * macs // _PARALLEL_MACS)
        while 2 * nb <= cap:
            nb *= 2
    return nb


def _sum_over_samples(xd, macs: int, part):
    """The sum of ``part(n0, n1)`` over blocks of samples, computed in Ember's intra-op
    threads. The blocks depend on the batch alone, not on the thread count: a power of two
    up to ``_MAX_SUM_BLOCKS`` of them (``_PARALLEL_MACS`` multiply-adds each at least), their
    partial sums added in block order, so the gradient is the same, bit for bit, on any
    number of threads, and whether or not the blocks ran in parallel."""
    N = xd.shape[0]
    nb = _sum_blocks(xd, macs)
    bounds = [N * i // nb for i in range(nb + 1)]
    parts = [None] * nb

    def run(b0, b1):
        for i in range(b0, b1):
            parts[i] = part(bounds[i], bounds[i + 1])

    if blas_threads_busy():
        run(0, nb)  # the same blocks, summed the same way, in this thread
    else:
        parallel_for(0, nb, 1, run)
    return _sum_in_order(parts)


def _sum_in_order(parts):
    """``parts[0] + parts[1] + ...`` added left to right into ``parts[0]`` (the blocks'
    fixed order, whatever ran them)."""
    total = parts[0]
    for p in parts[1:]:
        total += p
    return total


def _group_chunk(N: int, C: int, g: Geom, itemsize: int):
    """Groups per chunk when a grouped product is split by groups, or 0 to run it whole."""
    if g.groups < 4:
        return 0
    per_group = N * (C // g.groups) * math.prod(g.k) * max(math.prod(g.y), math.prod(g.x)) \
        * itemsize
    if per_group * g.groups <= 2 * _GROUP_CHUNK_BYTES:
        return 0
    gc = max(1, _GROUP_CHUNK_BYTES // max(1, per_group))
    return gc if gc < g.groups else 0


def _by_groups(fn, a, wd, g: Geom, gc: int, a_per: int, w_per: int, o_per: int, out_shape,
               dtype, out_axis: int):
    """``fn`` over chunks of ``gc`` groups: ``a`` (dim 1) and ``wd`` (dim 0) sliced ``a_per``
    and ``w_per`` channels per group, results written into an ``out_shape`` array along
    ``out_axis``, ``o_per`` per group."""
    out = xp_of(a).empty(out_shape, dtype=dtype)
    for g0 in range(0, g.groups, gc):
        g1 = min(g.groups, g0 + gc)
        part = fn(a[:, g0 * a_per:g1 * a_per], wd[g0 * w_per:g1 * w_per],
                  g._replace(groups=g1 - g0))
        out[(slice(None),) * out_axis + (slice(g0 * o_per, g1 * o_per),)] = part
    return out


def _sample_ranges(N: int, per: int):
    """Ranges ``(n0, n1)`` of ``N`` samples of ``per`` bytes each that take about
    ``_CHUNK_BYTES``."""
    nb = max(1, min(N, _CHUNK_BYTES // max(1, per)))
    return [(n0, min(N, n0 + nb)) for n0 in range(0, N, nb)]


def _chunks(xd, g: Geom, L: int):
    """Sample ranges ``(n0, n1)`` whose im2col columns take about ``_CHUNK_BYTES``."""
    N, C = xd.shape[:2]
    return _sample_ranges(N, C * math.prod(g.k) * L * xd.itemsize)


def _positions(g: Geom, plan) -> int:
    return math.prod(g.y) if plan is None else plan.Lq


def _layout(g: Geom, N: int, outs_per_group: int):
    """The im2col layout for a batch of ``N``: the flat plan, except where the batch is
    folded into one GEMM (few output positions) of a convolution with many outputs per
    group, whose product would pay for the junk columns (up to 3x: a 1x1 output in a 3x3
    plane). With few outputs per group (depthwise) the copy outweighs the product, and the
    flat layout copies long contiguous runs: EfficientNet's 5x5 depthwise conv on
    8x1152x7x7 took 11.4 ms with plain folded columns, 3.9 ms flat."""
    plan = _flat_plan(g)
    if N > 1 and math.prod(g.y) < _FOLD_BELOW and outs_per_group > 4 and \
            (plan is None or not plan.exact):
        return None
    return plan


@functools.lru_cache(maxsize=512)
def _trim(g: Geom):
    """``(Geom, weight slices)`` without the kernel taps that read only padding for every
    output position, or None when every tap reads input. On small planes whole taps fall
    off: resnet18's 3x3 convs on its 1x1 deepest maps become 1x1 convs (9x fewer products)."""
    lo_taps, hi_taps = [], []
    for i in range(len(g.k)):
        s, d, lo, x, y = g.s[i], g.d[i], g.lo[i], g.x[i], g.y[i]
        valid = [j for j in range(g.k[i])
                 if max(0, -((j * d - lo) // s)) <= min(y - 1, (x - 1 + lo - j * d) // s)]
        if not valid:
            return None  # an all-padding output: the general path gives its zeros
        # a dropped leading tap moves the window origin by d: never past the padding (with
        # dilation > padding, the origin would land inside the input)
        lo_taps.append(min(valid[0], lo // d))
        hi_taps.append(valid[-1] + 1)
    if all(a == 0 for a in lo_taps) and tuple(hi_taps) == g.k:
        return None
    k = tuple(h - a for a, h in zip(lo_taps, hi_taps))
    lo = tuple(g.lo[i] - lo_taps[i] * g.d[i] for i in range(len(g.k)))
    sl = (slice(None), slice(None)) + tuple(slice(a, h) for a, h in zip(lo_taps, hi_taps))
    return g._replace(k=k, lo=lo), sl


# -- direct convolution (native) -----------------------------------------------------------------

#: the direct kernels serve convolutions with at most this many output channels and taps
#: times input channels (``C * prod(k)``); wider layers are compute-bound GEMMs that BLAS runs
#: faster (measured in ``benchmarks/RESULTS.md``, session 49). 1-d convolutions run as 2-d
#: ones of height 1 (32 x 64 channels on 128 positions, 3 taps: forward 1.24 -> 1.05 ms,
#: input gradient 1.27 -> 1.08, one thread)
_DIRECT_MAX_O = 64
_DIRECT_MAX_K = 1024
#: ... and at least this many taps times input channels: fewer taps are too little work per
#: register tile (a 7-tap 1-d conv of 1 channel into 16 on 1000 positions: 0.08 ms as im2col
#: + GEMM, 0.13 direct; LeNet's 5x5 of 1 channel, 25 taps, 0.37 -> 0.30)
_DIRECT_MIN_K = 16

#: the direct kernels can be switched off, to time them against the im2col paths in one process
_DIRECT = True


@functools.lru_cache(maxsize=1)
def _direct_built(lib_id: int) -> bool:
    """Whether the loaded library's direct kernels were built (AVX2 and FMA): a zero-sample
    call answers 1 where they were."""
    fn = _native.kernel("ember_conv2d_f32")
    return fn is not None and fn(0, 0, None, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1) == 1


def _direct(xd, wd, g: Geom, O: int) -> bool:
    """Whether the native direct kernels (``ember_conv2d_f32`` and its weight gradient) serve
    a convolution of ``xd`` with ``O`` output channels: float32 NumPy arrays, 1-d or 2-d,
    stride 1, no dilation, one group, a kernel at most 7 wide, a small layer
    (``_DIRECT_MAX_*``)."""
    if not (_DIRECT and len(g.k) in (1, 2) and g.groups == 1 and all(v == 1 for v in g.s)
            and all(v == 1 for v in g.d) and xd.__class__ is np.ndarray
            and wd.__class__ is np.ndarray and xd.dtype == np.float32
            and wd.dtype == np.float32 and 1 <= g.k[-1] <= 7 and O <= _DIRECT_MAX_O
            and _DIRECT_MIN_K <= xd.shape[1] * math.prod(g.k) <= _DIRECT_MAX_K
            and xd.shape[0] > 0 and all(g.y)):
        return False
    lib = _native.library()
    return lib is not None and _direct_built(id(lib))


def _direct_geometry(xd, wd, g: Geom):
    """``(Geom, weight)`` as ``conv_array`` would hand them to the direct kernels (taps that
    read padding only trimmed), or None where it would not."""
    if _group_chunk(xd.shape[0], xd.shape[1], g, xd.itemsize) or _as_weight_gradient(g):
        return None
    trimmed = _trim(g)
    if trimmed is not None:
        g, sl = trimmed
        wd = wd[sl]
    return (g, wd) if _direct(xd, wd, g, wd.shape[0]) else None


def _planar(a, g: Geom):
    """A 1-d convolution's array (``(N, C, L)``: input, weight or gradient) and geometry as
    2-d ones of height 1, what the direct kernels take; 2-d ones as they are."""
    if len(g.k) == 2:
        return a, g
    return a.reshape(a.shape[:2] + (1,) + a.shape[2:]), Geom(
        (1,) + g.k, (1,) + g.s, (1,) + g.d, (0,) + g.lo, (1,) + g.x, (1,) + g.y, g.groups)


def _direct_args(xd, O: int, g: Geom) -> tuple:
    """The geometry arguments of the direct kernels after their weight argument."""
    N, C, H, W = xd.shape
    return (C, H, W, O, g.k[0], g.k[1], g.lo[0], g.lo[1], g.y[0], g.y[1])


def _lanes(n: int, width: int = 8) -> float:
    """The share of ``width``-lane vectors that ``n`` values fill."""
    return n / (width * -(-n // width))


def _vector_width() -> int:
    """The direct kernels' vector width: 16 floats where they run AVX-512
    (``ember_conv_wide``), else 8."""
    fn = _native.kernel("ember_conv_wide")
    return 16 if fn is not None and fn(-1) else 8


#: which kernels the direct path runs: None picks by ``_lanes``; "rows" or "channels" force
#: one (to time them against each other)
_DIRECT_KIND = None


def _direct_kind(O: int, g: Geom) -> str:
    """"channels" where ``O`` output channels fill vectors better than the output rows do,
    else "rows" (with 16-lane vectors LeNet's 6 -> 16 conv still takes channels, 16 of them
    against rows of 10; its first, 6 channels on rows of 28, rows)."""
    if _DIRECT_KIND:
        return _DIRECT_KIND
    width = _vector_width()
    return "channels" if _lanes(O, width) > _lanes(g.y[-1], width) else "rows"


def _conv_direct(xd, wd, g: Geom, bias=None):
    """``conv_array`` by the native direct kernels, the batch split over Ember's threads.
    ``ember_conv2d_f32`` runs vectors along output rows, ``ember_conv2d_ovec_f32`` along the
    output channels: the one whose vectors the layer fills better (LeNet's 6 -> 16 conv has
    rows of 10 and 16 channels: channels; its 1 -> 6 conv rows of 28: rows)."""
    if len(g.k) == 1:
        r = _conv_direct(_planar(xd, g)[0], _planar(wd, g)[0], _planar(xd, g)[1], bias)
        return r.reshape(r.shape[:2] + r.shape[3:])
    N, C = xd.shape[:2]
    O = wd.shape[0]
    args = _direct_args(xd, O, g)
    kind = _direct_kind(O, g)
    taps = wd.transpose(2, 1, 3, 0).reshape(-1, O)  # (KH * C * KW, O): the kernels' order
    if kind == "channels":
        Opad = -(-O // 8) * 8
        wt = np.zeros((taps.shape[0], Opad), dtype=np.float32)
        wt[:, :O] = taps
        if bias is not None:
            padded = np.zeros(Opad, dtype=np.float32)
            padded[:O] = bias
            bias = padded
        fn = _native.kernel("ember_conv2d_ovec_f32")
        args = args[:4] + (Opad,) + args[4:]
    else:
        wt = np.ascontiguousarray(taps)
        fn = _native.kernel("ember_conv2d_f32")
    x = np.ascontiguousarray(xd)
    out = np.empty((N, O) + g.y, dtype=np.float32)
    xa, wa, ya = _native.address(x), _native.address(wt), _native.address(out)
    if bias is not None:
        bias = np.ascontiguousarray(bias)  # kept alive here while the kernels read it
    ba = None if bias is None else _native.address(bias)
    # rows of the whole batch: a batch of one splits too (a thread pads each sample it enters)
    split = _row_split(N * g.y[0], g.y[0], O * C * math.prod(g.k) * g.y[1])
    if not fn(xa, wa, ba, ya, *split, *args):
        raise MemoryError("convolution: the direct kernel could not allocate its workspace "
                          "(a padded sample)")
    return out


def _weight_grad_direct(xd, gd, g: Geom, wshape):
    """``weight_grad_array`` by the native direct kernels, per block of samples (summed in
    the fixed blocks of ``_sum_over_samples``, so the bits do not depend on the threads):
    ``ember_conv2d_wgrad_f32`` with vectors along the output rows, or
    ``ember_conv2d_wgrad_ovec_f32`` along the output channels (each sample's output gradient
    copied channels last there), whichever the layer fills better (as ``_conv_direct``)."""
    if len(g.k) == 1:
        x2, g2 = _planar(xd, g)
        r = _weight_grad_direct(x2, _planar(gd, g)[0], g2, (wshape[0], wshape[1], 1, wshape[2]))
        return r.reshape(wshape)
    O = gd.shape[1]
    args = _direct_args(xd, O, g)
    x = np.ascontiguousarray(xd)
    kind = _direct_kind(O, g)
    K = x.shape[1] * math.prod(g.k)
    gy = np.ascontiguousarray(gd)
    if kind == "channels":
        Opad = -(-O // 8) * 8
        fn = _native.kernel("ember_conv2d_wgrad_ovec_f32")
        args = args[:4] + (Opad,) + args[4:]
        shape = (K, Opad)
    else:
        fn = _native.kernel("ember_conv2d_wgrad_f32")
        shape = tuple(wshape)
    # the blocks of _sum_over_samples, each into its own slice, summed in order
    nb = _sum_blocks(x, O * K * math.prod(g.y))
    parts = np.zeros((nb,) + shape, dtype=np.float32)
    if not fn(_native.address(x), _native.address(gy), _native.address(parts), x.shape[0], nb,
              native_threads(), *args):
        raise MemoryError("convolution weight gradient: the direct kernel could not "
                          "allocate its workspace (a padded sample)")
    gw = _sum_in_order(parts)
    return gw if kind != "channels" else _owned(gw[:, :O].T, wshape)


def conv_array(xd, wd, g: Geom, bias=None):
    """The convolution of ``xd`` (N, C, *x) with ``wd`` (O, C/groups, *k), plus ``bias``
    (O,) unless None: in the direct kernels' registers where they serve (LeNet's first conv:
    the separate add was a third of its 0.3 ms forward), else added after."""
    if bias is not None:
        if bias.__class__ is np.ndarray and bias.dtype == np.float32:
            direct = _direct_geometry(xd, wd, g)
            if direct is not None:
                return _conv_direct(xd, direct[1], direct[0], bias)
        r = conv_array(xd, wd, g)
        r += bias.reshape((1, -1) + (1,) * len(g.k))
        return r
    gc = _group_chunk(xd.shape[0], xd.shape[1], g, xd.itemsize)
    if gc:
        O, Cg = wd.shape[0] // g.groups, xd.shape[1] // g.groups
        return _by_groups(conv_array, xd, wd, g, gc, Cg, O, O,
                          (xd.shape[0], wd.shape[0]) + g.y, _result_dtype(xd, wd), 1)
    if _as_weight_gradient(g):
        return _conv_by_weight_grad(xd, wd, g)
    trimmed = _trim(g)
    if trimmed is not None:
        g, sl = trimmed
        wd = wd[sl]
    if _direct(xd, wd, g, wd.shape[0]):
        return _conv_direct(xd, wd, g)
    plan = _layout(g, xd.shape[0], wd.shape[0] // g.groups)
    O = wd.shape[0]
    G = g.groups
    N, L = xd.shape[0], _positions(g, plan)
    if _by_cl(xd, O, g, math.prod(g.y), "forward"):
        return _conv_cl(xd, wd, g)
    if N > 1 and L < _FOLD_BELOW:
        # few output positions (deep layers): one GEMM over (K, N*L) instead of N tiny ones
        out = _matmul(wd.reshape(G, O // G, -1), _cols_folded(xd, g, plan))
        out = out.reshape(G, O // G, N, L).transpose(2, 0, 1, 3)
    else:
        out = xp_of(xd).empty((N, G, O // G, L), dtype=_result_dtype(xd, wd))
        rows = xd.shape[1] // G * math.prod(g.k)
        if _ROW_TAPS and _by_rows(g, plan, O // G, xd.shape[1] // G):
            wl = _row_weight(wd, g, plan)

            def run(n0, n1):
                _conv_rows(xd[n0:n1], wl, g, plan, out[n0:n1])
        else:
            w2 = wd.reshape(G, O // G, -1)

            def run(n0, n1):
                for c0, c1 in _chunks(xd[n0:n1], g, L):
                    _matmul(w2, _cols(xd[n0 + c0:n0 + c1], g, plan),
                           out=out[n0 + c0:n0 + c1])
        _over_samples(xd, O * rows * L, run)
    return _narrow_out(out.reshape(N, O, L), g, plan)


def _as_weight_gradient(g: Geom) -> bool:
    """Whether a convolution is a weight gradient in disguise: a kernel almost as large as
    the input, a few output positions (PyTorch's custom-function tutorial computes its conv
    weight gradient as ``conv2d(X.transpose(0, 1), grad.transpose(0, 1))``: 24x24 kernels
    on 26x26 maps). Its im2col, kernel taps times positions, is then the whole input many
    times over (1.4 GB there); ``weight_grad_array`` runs the same sums with the roles of
    kernel and output swapped (one sample: 231 -> 64 ms, 32 samples: 0.91 -> 0.81 s)."""
    return (g.groups == 1 and math.prod(g.k) >= 64 and 16 * math.prod(g.y) <= math.prod(g.k)
            and all(v == 1 for v in g.s) and all(v == 1 for v in g.d)
            and not any(g.lo) and all(g.x[i] - g.k[i] + 1 == g.y[i] for i in range(len(g.k))))


def _conv_by_weight_grad(xd, wd, g: Geom):
    """``conv(x, w)`` (B, C, *x) * (O, C, *k) -> (B, O, *y) as the weight gradient of a
    convolution over ``C`` samples whose input is ``x`` (C, B, *x) and whose output gradient
    is ``w`` (C, O, *k): ``sum_c x[c, b, y + q] w[c, o, q]``."""
    B, O = xd.shape[0], wd.shape[0]
    swapped = Geom(g.y, g.s, g.d, g.lo, g.x, g.k, 1)
    r = weight_grad_array(xd.swapaxes(0, 1), wd.swapaxes(0, 1), swapped, (O, B) + g.y)
    return xp_of(r).ascontiguousarray(r.swapaxes(0, 1))


def _cols_cl(xd, g: Geom):
    """im2col with the batch folded in, channels last: ``(N * L, K)``, a row per output
    position, columns ordered ``(*k, C)``. The input is first copied channels last (and
    padded), so the im2col copies runs of ``C`` elements."""
    n = len(g.k)
    N, C = xd.shape[:2]
    xp = xp_of(xd)
    xt = xp.moveaxis(xd, 1, -1)
    hi = _high_padding(g)
    if any(g.lo) or any(hi):
        buf = xp.zeros((N,) + tuple(g.lo[i] + g.x[i] + hi[i] for i in range(n)) + (C,),
                       dtype=xd.dtype)
        buf[(slice(None),) + tuple(slice(g.lo[i], g.lo[i] + g.x[i]) for i in range(n))] = xt
    else:
        buf = xp.ascontiguousarray(xt)
    st = buf.strides
    v = xp.lib.stride_tricks.as_strided(
        buf, (N,) + g.y + g.k + (C,),
        (st[0],) + tuple(st[1 + i] * g.s[i] for i in range(n)) +
        tuple(st[1 + i] * g.d[i] for i in range(n)) + (st[-1],))
    return v.reshape(N * math.prod(g.y), math.prod(g.k) * C)


def _by_cl(xd, O: int, g: Geom, L: int, kind: str = "weight") -> bool:
    """Whether a batch-folded product (``L`` positions per sample, ``O`` outputs) runs
    channels last, by kind of product:

    - ``"forward"``: when the folded positions outnumber the outputs, or on maps of 16
      positions or fewer (where the folded im2col copies runs of at most 16 elements) with
      not far more outputs than positions. resnet18 at 224x224 (batch 8): 512 channels on
      7x7 took 5.1 ms folded, 6.6 ms channels last; 256 -> 512 on 1x1 outputs (batch 32):
      1.12 ms folded, 1.34 ms channels last.
    - ``"weight"``: not far more outputs than folded positions (faster in every other case
      measured: 512 channels on 7x7 5.1 -> 4.8 ms).
    - ``"transpose"`` (strided col2im): always; its per-sample products had 1-49 columns.
    """
    if not (_CHANNELS_LAST and g.groups == 1 and xd.shape[0] > 1 and L < _CL_BELOW):
        return False
    n = xd.shape[0] * L
    if kind == "forward":
        return n >= O or (L <= 16 and 4 * n >= O)
    return kind == "transpose" or 4 * n >= O


def _conv_cl(xd, wd, g: Geom):
    """A batch-folded convolution (few positions per sample) on channels-last columns.
    OpenBLAS runs the product faster with the long side as its rows: 64 channels on 8x8
    (batch 32): 0.75 -> 0.58 ms; 128 on 4x4: 1.06 -> 0.80 ms."""
    N, O = xd.shape[0], wd.shape[0]
    cols = _cols_cl(xd, g)
    xp = xp_of(wd)
    wt = xp.ascontiguousarray(xp.moveaxis(wd, 1, -1)).reshape(O, -1)
    L = math.prod(g.y)
    if N * L >= O:
        out = gemm(cols, wt.T).reshape(N, L, O).transpose(0, 2, 1)
    else:
        out = gemm(wt, cols.T).reshape(O, N, L).transpose(1, 0, 2)
    return xp.ascontiguousarray(out).reshape((N, O) + g.y)


def _conv_transpose_cl(ud, wd, g: Geom):
    """col2im channels last, one group: ``cols = u @ w`` as one GEMM over the folded batch
    (per-sample products had 4-position right-hand sides), then one strided add per
    kernel tap into a channels-last buffer (runs of C elements). The input gradient of
    resnet18's 128 -> 256 stride-2 conv on 4x4 maps: 2.1 -> 0.6 ms."""
    n = len(g.k)
    N, Cin = ud.shape[:2]
    Cout = wd.shape[1]
    xp = xp_of(ud)
    K = math.prod(g.k)
    wr = xp.moveaxis(wd, 1, -1).reshape(Cin, K * Cout)
    cols = gemm(_narrow_in_t(ud, g, None), wr).reshape((N,) + g.y + (K, Cout))
    buf = xp.zeros((N,) + _padded_size(g) + (Cout,), dtype=cols.dtype)
    for t, off in enumerate(tap_offsets(g)):
        buf[(slice(None),) + _tap_slices(g, off)] += cols[(Ellipsis, t, slice(None))]
    r = buf[(slice(None),) + tuple(slice(g.lo[i], g.lo[i] + g.x[i]) for i in range(n))]
    return xp.ascontiguousarray(xp.moveaxis(r, -1, 1))


def _weight_grad_cl(xd, gd, g: Geom, wshape):
    """The weight gradient of ``_conv_cl``: ``gy^T @ cols`` with both channels last, made
    contiguous here: as ``(O, *k, C)`` the reorder to ``(O, C, *k)`` moves small blocks (the
    leaf's gradient must be contiguous; from ``cols^T @ gy``, a ``(*k, C, O)`` array, that
    copy was a full transposition: 256 -> 512 channels on 2x2, 3.7 -> 1.2 ms)."""
    cols = _cols_cl(xd, g)
    gw = gemm(_narrow_in_t(gd, g, None).T, cols)  # (O, *k * C)
    gw = gw.reshape((gd.shape[1],) + g.k + (xd.shape[1],))
    return _owned(xp_of(gw).moveaxis(gw, -1, 1), wshape)


def _owned(v, shape):
    """``v.reshape(shape)`` as a fresh array that owns its data: a leaf adopts such a
    gradient as its ``.grad`` without another copy (a reshaped view is copied again)."""
    out = xp_of(v).empty(shape, dtype=v.dtype)
    out.reshape(v.shape)[...] = v
    return out


def _by_rows(g: Geom, plan, outs_per_group: int, ins_per_group: int) -> bool:
    """Whether ``_conv_rows`` serves: a flat plan with leading taps, and products that are
    memory-bound (few output rows, 5-32 per group) but not too thin (``K >= 32``). Wide
    layers are compute-bound: their extra output passes cost more than the copy saved
    (128 channels on 28x28: 6.7 -> 7.4 ms)."""
    return plan is not None and len(plan.offs) > g.k[-1] and 4 < outs_per_group <= 32 and \
        ins_per_group * g.k[-1] >= 32


def _row_taps(xd, g: Geom, plan):
    """im2col over the last dim's taps only: ``(N, C, k[-1], Lx)``, and the flat shifts of
    the leading dims' taps. Leading tap ``t``'s columns are the view ``[..., s_t:s_t + Lq]``
    of these rows (a shift of the flat layout), so the copy is ``k[-1]`` times the input,
    not ``prod(k)`` times."""
    buf, kst = _flat_padded(xd, g, plan)
    N, C = xd.shape[:2]
    kl = g.k[-1]
    lead = plan.offs[::kl]
    Lx = plan.Lq + lead[-1]
    v = xp_of(xd).lib.stride_tricks.as_strided(
        buf, (N, C, kl, Lx), buf.strides[:2] + (kst[-1], buf.itemsize))
    # the shifts along the leading dims are whole rows: the cuts carry over to every tap
    return _cut(v.copy(), g, plan, 0), lead


def _row_chunks(xd, g: Geom, plan):
    """Sample ranges whose ``_row_taps`` take about ``_CHUNK_BYTES``."""
    N, C = xd.shape[:2]
    return _sample_ranges(N, C * g.k[-1] * (plan.Lq + plan.offs[-g.k[-1]]) * xd.itemsize)


def _weight_grad_rows(xd, gd, g: Geom, plan, wshape):
    """The weight gradient from ``_row_taps``: per leading tap, ``sum_n rows_n @ gy_n^T`` on
    the shifted view (16-channel 3x3 conv on 32x16x32x32: 1.35 -> 1.17 ms; gy is read in
    place, no transposed copy)."""
    N, C = xd.shape[:2]
    O, G = gd.shape[1], g.groups
    kl, Lq = g.k[-1], plan.Lq
    nl = len(plan.offs) // kl
    g2 = _narrow_in(gd, g, plan).reshape(N, G, O // G, Lq)

    def part(s0, s1):
        gw = xp_of(xd).zeros((nl, G, C // G * kl, O // G), dtype=_result_dtype(xd, gd))
        for n0, n1 in _row_chunks(xd[s0:s1], g, plan):
            n0, n1 = s0 + n0, s0 + n1
            rows, lead = _row_taps(xd[n0:n1], g, plan)
            rows = rows.reshape(n1 - n0, G, C // G * kl, rows.shape[-1])
            gt = g2[n0:n1].swapaxes(-1, -2)
            for t in range(nl):
                gw[t] += _matmul(rows[..., lead[t]:lead[t] + Lq], gt).sum(0)
        return gw

    gw = _sum_over_samples(xd, O * C // G * math.prod(g.k) * Lq, part)
    return _owned(gw.reshape(nl, G, C // G, kl, O // G).transpose(1, 4, 2, 0, 3), wshape)


def _row_weight(wd, g: Geom, plan):
    """The weight as ``_conv_rows`` multiplies it: ``(leading taps, G, O/G, C/G * k[-1])``."""
    O, Cg = wd.shape[:2]
    G, kl = g.groups, g.k[-1]
    nl = len(plan.offs) // kl
    wl = xp_of(wd).ascontiguousarray(
        wd.reshape(G, O // G, Cg, nl, kl).transpose(3, 0, 1, 2, 4))
    return wl.reshape(nl, G, O // G, Cg * kl)


def _conv_rows(xd, wl, g: Geom, plan, out):
    """The flat-layout convolution as one GEMM per leading kernel tap (K = C/G * k[-1]) on
    shifted views of ``_row_taps``, summed into ``out`` ``(N, G, O/G, Lq)``: a third of the
    copying of full im2col for a 3x3 kernel. 16-channel 3x3 conv on 32x16x32x32:
    1.9 -> 1.1 ms. ``wl`` is ``_row_weight``'s."""
    nl, G, Kr = wl.shape[0], wl.shape[1], wl.shape[3]
    Lq = plan.Lq
    for n0, n1 in _row_chunks(xd, g, plan):
        rows, lead = _row_taps(xd[n0:n1], g, plan)
        rows = rows.reshape(n1 - n0, G, Kr, rows.shape[-1])
        o = out[n0:n1]
        _matmul(wl[0], rows[..., lead[0]:lead[0] + Lq], out=o)
        for t in range(1, nl):  # into o (Ember's own product), else through a temporary
            _matmul(wl[t], rows[..., lead[t]:lead[t] + Lq], out=o, accumulate=True)
    return out


def _as_forward_conv(g: Geom):
    """For stride 1, the transposed convolution is a forward convolution of the narrow side
    with the flipped kernel and padding ``d*(k-1) - lo``: its Geom, or None when that padding
    would be negative. im2col + one matmul beats col2im's strided adds (measured 2x)."""
    if any(s != 1 for s in g.s):
        return None
    lo = tuple((g.k[i] - 1) * g.d[i] - g.lo[i] for i in range(len(g.k)))
    if any(v < 0 for v in lo):
        return None
    return Geom(g.k, g.s, g.d, lo, g.y, g.x, g.groups)


def _flipped_weight(wd, groups: int):
    """``(O, C/G, *k)`` -> ``(C, O/G, *k)`` with the kernel flipped: the forward-conv weight of
    the transposed convolution, as a view where one group (a copy otherwise): each kernel
    copies a weight into the layout it multiplies (channels last, im2col rows, the direct
    kernels'), so a contiguous flipped copy first was a second pass over it (resnet18's
    step: 13 such copies, 12 of its 105 ms)."""
    O, Cg = wd.shape[:2]
    k = wd.shape[2:]
    w = wd.reshape((groups, O // groups, Cg) + k).swapaxes(1, 2)
    w = w[(Ellipsis,) + (slice(None, None, -1),) * len(k)]
    return w.reshape((groups * Cg, O // groups) + k)


def conv_transpose_array(ud, wd, g: Geom):
    gc = _group_chunk(ud.shape[0], wd.shape[1] * g.groups, g, ud.itemsize)
    if gc:
        Cin, Cout = ud.shape[1] // g.groups, wd.shape[1]
        return _by_groups(conv_transpose_array, ud, wd, g, gc, Cin, Cin, Cout,
                          (ud.shape[0], Cout * g.groups) + g.x, _result_dtype(ud, wd), 1)
    trimmed = _trim(g)
    if trimmed is not None:
        g, sl = trimmed
        wd = wd[sl]
    g_fwd = _as_forward_conv(g)
    # the forward form's im2col holds O*prod(x) rows-by-columns per sample, col2im's product
    # C*prod(y): take the forward form unless it copies much more (LeNet's 6->16 conv: 5x);
    # the direct kernel copies nothing
    if g_fwd is not None and (
            ud.shape[1] * math.prod(g.x) <= 2 * wd.shape[1] * g.groups * math.prod(g.y)
            or _direct(ud, wd, g_fwd, wd.shape[1] * g.groups)):
        return conv_array(ud, _flipped_weight(wd, g.groups), g_fwd)
    if _by_cl(ud, 0, g, math.prod(g.y), "transpose"):
        return _conv_transpose_cl(ud, wd, g)
    plan = _layout(g, ud.shape[0], wd.shape[1])
    N, Cin = ud.shape[0], ud.shape[1]
    G = g.groups
    # col2im's columns, (Cout * K, L) per sample, come in chunks of samples: for the whole
    # batch they were up to 1.4 GB (a 64 -> 32 channel input gradient on 24x24, batch 2048:
    # 3.5 s, page faults and main memory; in chunks 1.0 s)
    Cout = wd.shape[1] * G
    per = Cout * math.prod(g.k) * _positions(g, plan) * ud.itemsize
    out = xp_of(ud).empty((N, Cout) + g.x, dtype=_result_dtype(ud, wd))

    def run(s0, s1):
        n = s1 - s0
        for n0, n1 in _sample_ranges(n, per) if n * per > 2 * _CHUNK_BYTES else [(0, n)]:
            _col2im(ud[s0 + n0:s0 + n1], wd, g, plan, out[s0 + n0:s0 + n1])

    # LeNet's 6 -> 16 conv's input gradient (batch 64): 1.24 -> 0.74 ms on 2 threads
    _over_samples(ud, wd.shape[1] * math.prod(g.k) * Cin // G * _positions(g, plan), run)
    return out


def _col2im(ud, wd, g: Geom, plan, out):
    """The transposed convolution as one product per sample, ``w^T @ u`` (the columns), and
    their scatter-add into ``out`` ``(N, Cout, *x)``."""
    N, Cin = ud.shape[:2]
    G = g.groups
    wt = wd.reshape(G, Cin // G, -1).swapaxes(1, 2)
    u2 = _narrow_in(ud, g, plan)
    cols = _matmul(wt, u2.reshape(N, G, Cin // G, u2.shape[-1]))
    Cout = wd.shape[1] * G
    xp = xp_of(cols)
    if plan is None:
        cols = cols.reshape((N, Cout) + g.k + g.y)
        n = len(g.k)
        r = scatter_windows((N, Cout), g, cols.dtype, xp,
                            lambda off: cols[(Ellipsis,) + off + (slice(None),) * n])
    else:
        Lq = plan.Lq
        cols = _cut(cols.reshape((N, Cout) + g.k + (Lq,)), g, plan, 0)
        cols = cols.reshape(N, Cout, len(plan.offs), Lq)
        fn = _native.kernel("ember_col2im_flat_f32") if cols.dtype == np.float32 and \
            cols.__class__ is np.ndarray and cols.flags.c_contiguous else None
        if fn is not None:  # one pass over the columns (LeNet's 6 -> 16: 0.71 -> 0.3 ms)
            buf = np.empty((N, Cout, plan.F), dtype=np.float32)
            offs = _native_offsets(plan)
            fn(_native.address(cols), _native.address(buf), _native.address(offs),
               N * Cout, len(plan.offs), Lq, plan.F)
        else:
            buf = xp.zeros((N, Cout, plan.F), dtype=cols.dtype)
            for j, o in enumerate(plan.offs):
                buf[:, :, o:o + Lq] += cols[:, :, j]
        grid, where = _grid(buf, g, plan)
        r = grid[where]
    out[...] = r


@functools.lru_cache(maxsize=512)
def _native_offsets(plan):
    """``plan``'s tap shifts as the int64 array the native col2im reads."""
    return np.asarray(plan.offs, dtype=np.int64)


def weight_grad_array(xd, gd, g: Geom, wshape):
    """``sum_n gy[n] @ cols[n]^T``. Columns are rebuilt chunk by chunk rather than kept from
    the forward pass: the copy is cheap next to a product that reads them from cache, and a
    step holds no im2col buffers.

    With enough rows per group (``C/groups * K``) the sum is computed transposed, as
    ``cols_folded @ gy^T``: one GEMM whose reduction runs over batch and positions, both
    operands row-major (16-channel 3x3 conv on 32x32x32: 4.0 ms -> 2.6 ms; 64->128 channels
    on 8x8: 3.1 -> 1.8 ms). With few rows (a first layer's 1-3 input channels) that GEMM is
    too thin for BLAS and per-sample products win (LeNet's first conv: 0.38 ms vs 1.4 ms)."""
    if xd.shape[0] == 0 or gd.size == 0:  # an empty batch: no products, a zero gradient
        return xp_of(xd).zeros(wshape, dtype=_result_dtype(xd, gd))
    gc = _group_chunk(xd.shape[0], xd.shape[1], g, xd.itemsize)
    if gc:
        O, Cg = gd.shape[1] // g.groups, xd.shape[1] // g.groups

        def part(x, gy_t, gg):  # gy_t: the chunk's gradient channels first
            return weight_grad_array(x, gy_t.swapaxes(0, 1), gg,
                                     (gy_t.shape[0],) + tuple(wshape[1:]))

        return _by_groups(part, xd, gd.swapaxes(0, 1), g, gc, Cg, O, O, tuple(wshape),
                          _result_dtype(xd, gd), 0)
    trimmed = _trim(g)
    if trimmed is not None:
        g, sl = trimmed
        full = xp_of(xd).zeros(wshape, dtype=_result_dtype(xd, gd))
        full[sl] = weight_grad_array(xd, gd, g, full[sl].shape)
        return full
    if _direct(xd, gd, g, gd.shape[1]) and (
            _vector_width() == 16 or _direct_kind(gd.shape[1], g) == "channels"
            or (xd.shape[1] * math.prod(g.k) < _THIN_ROWS and gd.shape[1] < 16)):
        # with AVX-512 kernels, wherever they serve (16 -> 16 channels 3x3 on 32x32x32: 1.69
        # -> 0.88 ms on two threads of an AVX-512 Xeon, 3 -> 16 there 0.53 -> 0.24, 16 -> 32
        # on 16x16 0.95 -> 0.57; 32 -> 64 on 8x8 the same); with AVX2 ones, where the channels
        # fill vectors better than the rows (LeNet's 6 -> 16 conv, rows of 10: 0.93 -> 0.48
        # ms on one thread) or the GEMM is thin on both sides (its 1 -> 6 conv: 0.41 -> 0.29
        # ms); whole rows and 16+ channels are BLAS's there (16 channels on 32x32: 1.9 ms as a
        # folded GEMM, 3.0 ms direct; 3 -> 16 there: 0.48 / 0.53 ms; a 2-core EPYC)
        return _weight_grad_direct(xd, gd, g, wshape)
    plan = _layout(g, xd.shape[0], gd.shape[1] // g.groups)
    N, O = gd.shape[:2]
    G = g.groups
    L = _positions(g, plan)
    if _by_cl(xd, O, g, math.prod(g.y)):
        return _weight_grad_cl(xd, gd, g, wshape)
    if _ROW_TAPS and (N == 1 or L >= _FOLD_BELOW) and \
            _by_rows(g, plan, O // G, xd.shape[1] // G):
        return _weight_grad_rows(xd, gd, g, plan, wshape)
    rows = xd.shape[1] // G * math.prod(g.k)
    if rows >= _THIN_ROWS:
        # one thread: the folded products are large enough for OpenBLAS to thread them itself,
        # and two such calls at once from Ember's threads contend for its pool (LeNet's 6 -> 16
        # conv: 0.8 ms in one thread, 3.0 ms split in two)
        gt = _narrow_in_t(gd, g, plan).reshape(N * L, G, O // G)
        gw = None
        for n0, n1 in _chunks(xd, g, L):
            part = _matmul(_cols_folded(xd[n0:n1], g, plan),
                          gt[n0 * L:n1 * L].transpose(1, 0, 2))
            gw = part if gw is None else gw.__iadd__(part)
        return _owned(gw.transpose(0, 2, 1), wshape)
    g2 = _narrow_in(gd, g, plan).reshape(N, G, O // G, L)

    def per_sample(s0, s1):
        gw = None
        for n0, n1 in _chunks(xd[s0:s1], g, L):
            n0, n1 = s0 + n0, s0 + n1
            part = _matmul(g2[n0:n1], _cols(xd[n0:n1], g, plan).swapaxes(-1, -2)).sum(0)
            gw = part if gw is None else gw.__iadd__(part)
        return gw

    return _sum_over_samples(xd, O * rows * L, per_sample).reshape(wshape)


#: below this many im2col rows per group the weight gradient uses per-sample products
_THIN_ROWS = 64
