"""Convolutions (``conv1d/2d/3d``, ``conv_transpose1d/2d``) and ``unfold``/``fold``.

One N-d core serves them all. A convolution's geometry (``Geom``) relates a "wide" side of
spatial size ``x`` to a "narrow" side of size ``y``: the narrow position ``o`` reads the wide
positions ``o * stride - lo + j * dilation`` for kernel offsets ``j``. Two array kernels do
the work:

* ``windows``: a strided view (no copy) of the padded wide side, shape ``(*lead, *y, *k)``;
  im2col is one reshape-copy of it, and a convolution is then one batched matmul.
* ``scatter_windows``: the adjoint, looping over the kernel offsets (``prod(k)`` iterations)
  and adding strided slices into a zero buffer (col2im) -- never ``np.add.at``.

Three differentiable ops are built on them, each other's adjoints (as in Chainer, where a
convolution's backward is a deconvolution plus a gradient-of-weight node), so gradients of
any order come for free: ``_conv`` (wide -> narrow), ``_conv_transpose`` (narrow -> wide)
and ``_weight_grad``. ``_im2col``/``_col2im`` are the weight-free pair behind
``unfold``/``fold``.
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import NamedTuple

import numpy as np

from .._device import check_same_device, xp_of
from .._dtype import scalar_type_name
from ..autograd.graph import make_node_class, result
from .registry import register

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "unfold", "fold", "Geom", "windows", "padded", "scatter_windows",
           "ntuple"]


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


def ntuple(value, n: int, name: str, op: str = "convolution") -> tuple:
    """``value`` (int or sequence) as a tuple of ``n`` ints, with PyTorch's error."""
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    vals = tuple(int(v) for v in value)
    if len(vals) == 1:
        return vals * n
    if len(vals) != n:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} "
                           f"values to match the {op} dimensions, but got "
                           f"{name}=[{', '.join(map(str, vals))}]")
    return vals


def out_size(x: int, k: int, s: int, d: int, lo: int, hi: int) -> int:
    return (x + lo + hi - d * (k - 1) - 1) // s + 1


def _span(g: Geom, i: int) -> int:
    """Wide-side extent (from the padded origin) that the windows touch along dim ``i``."""
    return (g.y[i] - 1) * g.s[i] + g.d[i] * (g.k[i] - 1) + 1


def padded(xd, g: Geom, fill=0):
    """``xd`` padded with ``fill`` to cover every window of ``g`` (itself when no padding
    is needed, else one copy)."""
    n = len(g.k)
    lead = xd.shape[:-n]
    hi = [max(0, _span(g, i) - g.lo[i] - g.x[i]) for i in range(n)]
    if not any(g.lo) and not any(hi):
        return xd
    buf = xp_of(xd).full(lead + tuple(g.lo[i] + g.x[i] + hi[i] for i in range(n)), fill,
                               dtype=xd.dtype)
    buf[(Ellipsis,) + tuple(slice(g.lo[i], g.lo[i] + g.x[i]) for i in range(n))] = xd
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
    n = len(g.k)
    size = tuple(max(g.lo[i] + g.x[i], _span(g, i)) for i in range(n))
    buf = xp.zeros(tuple(lead) + size, dtype=dtype)
    for off in itertools.product(*(range(k) for k in g.k)):
        sl = tuple(slice(off[i] * g.d[i], off[i] * g.d[i] + (g.y[i] - 1) * g.s[i] + 1, g.s[i])
                   for i in range(n))
        buf[(Ellipsis,) + sl] += piece(off)
    if any(g.lo) or size != g.x:
        buf = buf[(Ellipsis,) + tuple(slice(g.lo[i], g.lo[i] + g.x[i]) for i in range(n))]
    return buf


# -- array kernels ------------------------------------------------------------------------------

def _result_dtype(a, b):
    """The promoted dtype of two arrays, from their dtypes (``np.result_type`` on the arrays
    themselves is a NumPy function call that a CuPy array refuses)."""
    return a.dtype if a.dtype is b.dtype else np.promote_types(a.dtype, b.dtype)


def _cols_plain(xd, g: Geom):
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
    P = tuple(max(g.lo[i] + g.x[i], _span(g, i)) for i in range(n))
    if wrap:
        P = P[:-1] + (g.x[-1],)
    R = tuple(math.prod(P[i + 1:]) for i in range(n))
    Lq = g.y[0] * R[0]
    offs = tuple(sum(o[i] * g.d[i] * R[i] for i in range(n))
                 for o in itertools.product(*(range(k) for k in g.k)))
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


def _crop(g: Geom, sizes, start):
    return (Ellipsis,) + tuple(slice(start[i], start[i] + sizes[i]) for i in range(len(sizes)))


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
        return _cols_plain(xd, g)
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


def _chunks(xd, g: Geom, L: int):
    """Sample ranges ``(n0, n1)`` whose im2col columns take about ``_CHUNK_BYTES``."""
    N, C = xd.shape[:2]
    per = max(1, C * math.prod(g.k) * L * xd.itemsize)
    nb = max(1, min(N, _CHUNK_BYTES // per))
    return [(n0, min(N, n0 + nb)) for n0 in range(0, N, nb)]


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


def _conv_array(xd, wd, g: Geom):
    trimmed = _trim(g)
    if trimmed is not None:
        g, sl = trimmed
        wd = wd[sl]
    plan = _layout(g, xd.shape[0], wd.shape[0] // g.groups)
    O = wd.shape[0]
    G = g.groups
    N, L = xd.shape[0], _positions(g, plan)
    if _by_cl(xd, O, g, math.prod(g.y), "forward"):
        return _conv_cl(xd, wd, g)
    if N > 1 and L < _FOLD_BELOW:
        # few output positions (deep layers): one GEMM over (K, N*L) instead of N tiny ones
        out = np.matmul(wd.reshape(G, O // G, -1), _cols_folded(xd, g, plan))
        out = out.reshape(G, O // G, N, L).transpose(2, 0, 1, 3)
    elif _ROW_TAPS and _by_rows(g, plan, O // G, xd.shape[1] // G):
        out = _conv_rows(xd, wd, g, plan)
    else:
        w2 = wd.reshape(G, O // G, -1)
        out = xp_of(xd).empty((N, G, O // G, L), dtype=_result_dtype(xd, wd))
        for n0, n1 in _chunks(xd, g, L):
            np.matmul(w2, _cols(xd[n0:n1], g, plan), out=out[n0:n1])
    return _narrow_out(out.reshape(N, O, L), g, plan)


def _cols_cl(xd, g: Geom):
    """im2col with the batch folded in, channels last: ``(N * L, K)``, a row per output
    position, columns ordered ``(*k, C)``. The input is first copied channels last (and
    padded), so the im2col copies runs of ``C`` elements."""
    n = len(g.k)
    N, C = xd.shape[:2]
    xp = xp_of(xd)
    xt = xp.moveaxis(xd, 1, -1)
    hi = [max(0, _span(g, i) - g.lo[i] - g.x[i]) for i in range(n)]
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
        out = (cols @ wt.T).reshape(N, L, O).transpose(0, 2, 1)
    else:
        out = (wt @ cols.T).reshape(O, N, L).transpose(1, 0, 2)
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
    cols = (_narrow_in_t(ud, g, None) @ wr).reshape((N,) + g.y + (K, Cout))
    size = tuple(max(g.lo[i] + g.x[i], _span(g, i)) for i in range(n))
    buf = xp.zeros((N,) + size + (Cout,), dtype=cols.dtype)
    for t, off in enumerate(itertools.product(*(range(k) for k in g.k))):
        sl = tuple(slice(off[i] * g.d[i], off[i] * g.d[i] + (g.y[i] - 1) * g.s[i] + 1, g.s[i])
                   for i in range(n))
        buf[(slice(None),) + sl] += cols[(Ellipsis, t, slice(None))]
    r = buf[(slice(None),) + tuple(slice(g.lo[i], g.lo[i] + g.x[i]) for i in range(n))]
    return xp.ascontiguousarray(xp.moveaxis(r, -1, 1))


def _weight_grad_cl(xd, gd, g: Geom, wshape):
    """The weight gradient of ``_conv_cl``: ``gy^T @ cols`` with both channels last, made
    contiguous here: as ``(O, *k, C)`` the reorder to ``(O, C, *k)`` moves small blocks (the
    leaf's gradient must be contiguous; from ``cols^T @ gy``, a ``(*k, C, O)`` array, that
    copy was a full transposition: 256 -> 512 channels on 2x2, 3.7 -> 1.2 ms)."""
    cols = _cols_cl(xd, g)
    gw = _narrow_in_t(gd, g, None).T @ cols  # (O, *k * C)
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
    per = max(1, C * g.k[-1] * (plan.Lq + plan.offs[-g.k[-1]]) * xd.itemsize)
    nb = max(1, min(N, _CHUNK_BYTES // per))
    return [(n0, min(N, n0 + nb)) for n0 in range(0, N, nb)]


def _weight_grad_rows(xd, gd, g: Geom, plan, wshape):
    """The weight gradient from ``_row_taps``: per leading tap, ``sum_n rows_n @ gy_n^T`` on
    the shifted view (16-channel 3x3 conv on 32x16x32x32: 1.35 -> 1.17 ms; gy is read in
    place, no transposed copy)."""
    N, C = xd.shape[:2]
    O, G = gd.shape[1], g.groups
    kl, Lq = g.k[-1], plan.Lq
    nl = len(plan.offs) // kl
    g2 = _narrow_in(gd, g, plan).reshape(N, G, O // G, Lq)
    gw = xp_of(xd).zeros((nl, G, C // G * kl, O // G), dtype=_result_dtype(xd, gd))
    for n0, n1 in _row_chunks(xd, g, plan):
        rows, lead = _row_taps(xd[n0:n1], g, plan)
        rows = rows.reshape(n1 - n0, G, C // G * kl, rows.shape[-1])
        gt = g2[n0:n1].swapaxes(-1, -2)
        for t in range(nl):
            gw[t] += np.matmul(rows[..., lead[t]:lead[t] + Lq], gt).sum(0)
    return _owned(gw.reshape(nl, G, C // G, kl, O // G).transpose(1, 4, 2, 0, 3), wshape)


def _conv_rows(xd, wd, g: Geom, plan):
    """The flat-layout convolution as one GEMM per leading kernel tap (K = C/G * k[-1]) on
    shifted views of ``_row_taps``, summed: a third of the copying of full im2col for a
    3x3 kernel. 16-channel 3x3 conv on 32x16x32x32: 1.9 -> 1.1 ms."""
    N, C = xd.shape[:2]
    O, G = wd.shape[0], g.groups
    kl, Lq = g.k[-1], plan.Lq
    nl = len(plan.offs) // kl
    xp = xp_of(xd)
    wl = xp.ascontiguousarray(wd.reshape(G, O // G, C // G, nl, kl).transpose(3, 0, 1, 2, 4))
    wl = wl.reshape(nl, G, O // G, C // G * kl)
    out = xp.empty((N, G, O // G, Lq), dtype=_result_dtype(xd, wd))
    tmp = None
    for n0, n1 in _row_chunks(xd, g, plan):
        rows, lead = _row_taps(xd[n0:n1], g, plan)
        rows = rows.reshape(n1 - n0, G, C // G * kl, rows.shape[-1])
        o = out[n0:n1]
        np.matmul(wl[0], rows[..., lead[0]:lead[0] + Lq], out=o)
        for t in range(1, nl):
            if tmp is None or tmp.shape != o.shape:
                tmp = xp.empty_like(o)
            np.matmul(wl[t], rows[..., lead[t]:lead[t] + Lq], out=tmp)
            o += tmp
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
    the transposed convolution."""
    O, Cg = wd.shape[:2]
    k = wd.shape[2:]
    w = wd.reshape((groups, O // groups, Cg) + k).swapaxes(1, 2)
    w = w[(Ellipsis,) + (slice(None, None, -1),) * len(k)]
    return xp_of(wd).ascontiguousarray(w).reshape((groups * Cg, O // groups) + k)


def _conv_transpose_array(ud, wd, g: Geom):
    trimmed = _trim(g)
    if trimmed is not None:
        g, sl = trimmed
        wd = wd[sl]
    g_fwd = _as_forward_conv(g)
    # the forward form's im2col holds O*prod(x) rows-by-columns per sample, col2im's product
    # C*prod(y): take the forward form unless it copies much more (LeNet's 6->16 conv: 5x)
    if g_fwd is not None and ud.shape[1] * math.prod(g.x) <= 2 * wd.shape[1] * g.groups * \
            math.prod(g.y):
        return _conv_array(ud, _flipped_weight(wd, g.groups), g_fwd)
    if _by_cl(ud, 0, g, math.prod(g.y), "transpose"):
        return _conv_transpose_cl(ud, wd, g)
    plan = _layout(g, ud.shape[0], wd.shape[1])
    N, Cin = ud.shape[0], ud.shape[1]
    G = g.groups
    wt = wd.reshape(G, Cin // G, -1).swapaxes(1, 2)
    u2 = _narrow_in(ud, g, plan)
    cols = np.matmul(wt, u2.reshape(N, G, Cin // G, u2.shape[-1]))
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
        buf = xp.zeros((N, Cout, plan.F), dtype=cols.dtype)
        for j, o in enumerate(plan.offs):
            buf[:, :, o:o + Lq] += cols[:, :, j]
        grid, where = _grid(buf, g, plan)
        r = grid[where]
    return xp.ascontiguousarray(r)


def _weight_grad_array(xd, gd, g: Geom, wshape):
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
    trimmed = _trim(g)
    if trimmed is not None:
        g, sl = trimmed
        full = xp_of(xd).zeros(wshape, dtype=_result_dtype(xd, gd))
        full[sl] = _weight_grad_array(xd, gd, g, full[sl].shape)
        return full
    plan = _layout(g, xd.shape[0], gd.shape[1] // g.groups)
    N, O = gd.shape[:2]
    G = g.groups
    L = _positions(g, plan)
    if _by_cl(xd, O, g, math.prod(g.y)):
        return _weight_grad_cl(xd, gd, g, wshape)
    if _ROW_TAPS and (N == 1 or L >= _FOLD_BELOW) and \
            _by_rows(g, plan, O // G, xd.shape[1] // G):
        return _weight_grad_rows(xd, gd, g, plan, wshape)
    chunks = _chunks(xd, g, L)
    gw = None
    if xd.shape[1] // G * math.prod(g.k) >= _THIN_ROWS:
        gt = _narrow_in_t(gd, g, plan).reshape(N * L, G, O // G)
        for n0, n1 in chunks:
            part = np.matmul(_cols_folded(xd[n0:n1], g, plan),
                             gt[n0 * L:n1 * L].transpose(1, 0, 2))
            gw = part if gw is None else gw.__iadd__(part)
        return _owned(gw.transpose(0, 2, 1), wshape)
    g2 = _narrow_in(gd, g, plan).reshape(N, G, O // G, L)
    for n0, n1 in chunks:
        part = np.matmul(g2[n0:n1], _cols(xd[n0:n1], g, plan).swapaxes(-1, -2)).sum(0)
        gw = part if gw is None else gw.__iadd__(part)
    return gw.reshape(wshape)


#: below this many im2col rows per group the weight gradient uses per-sample products
_THIN_ROWS = 64


# -- differentiable ops -------------------------------------------------------------------------

def _bias_shape(O: int, n: int):
    return (1, O) + (1,) * n


def _wide(a):
    """float16 data as float32: PyTorch accumulates half products in float and rounds the
    result once (``_narrowed``)."""
    return a.astype(np.float32) if a.dtype == np.float16 else a


def _narrowed(r, like):
    return r.astype(np.float16) if like.dtype == np.float16 else r


def _conv(x, w, b, g: Geom):
    """Convolution of ``x`` (N, C, *x) with ``w`` (O, C/groups, *k): (N, O, *y)."""
    xd = x._data
    r = _conv_array(_wide(xd), _wide(w._data), g)
    if b is not None:
        r += b._data.reshape(_bias_shape(r.shape[1], len(g.k)))
    return result(_narrowed(r, xd), x._device, ConvolutionBackward0, (x, w, b), (x, w),
                   (g, False))


def _conv_transpose(u, w, b, g: Geom):
    """Transposed convolution of ``u`` (N, Cin, *y) with ``w`` (Cin, Cout/groups, *k)."""
    ud = u._data
    r = _conv_transpose_array(_wide(ud), _wide(w._data), g)
    if b is not None:
        r += b._data.reshape(_bias_shape(r.shape[1], len(g.k)))
    return result(_narrowed(r, ud), u._device, ConvolutionBackward0, (u, w, b), (u, w),
                   (g, True))


def _weight_grad(x, gy, g: Geom, wshape):
    """Gradient of a convolution's weight for input ``x`` and output gradient ``gy``."""
    xd = x._data
    r = _weight_grad_array(_wide(xd), _wide(gy._data), g, wshape)
    return result(_narrowed(r, xd), x._device, ConvolutionBackwardBackward0, (x, gy), (x, gy),
                   g)


def _conv_bw(node, gy):
    a, w = node.saved
    g, transposed = node.ctx
    ga = gw = gb = None
    if transposed:  # a is the narrow side u; the output lives on the wide side
        if node.needs_grad(0):
            ga = _conv(gy, w, None, g)
        if node.needs_grad(1):
            gw = _weight_grad(gy, a, g, w._data.shape)
    else:
        if node.needs_grad(0):
            ga = _conv_transpose(gy, w, None, g)
        if node.needs_grad(1):
            gw = _weight_grad(a, gy, g, w._data.shape)
    if node.needs_grad(2):
        gb = gy.sum((0,) + tuple(range(2, gy._data.ndim)))
    return ga, gw, gb


def _weight_grad_bw(node, ggw):
    x, gy = node.saved
    g = node.ctx
    gx = ggy = None
    if node.needs_grad(0):
        gx = _conv_transpose(gy, ggw, None, g)
    if node.needs_grad(1):
        ggy = _conv(x, ggw, None, g)
    return gx, ggy


ConvolutionBackward0 = make_node_class("ConvolutionBackward0", _conv_bw)
ConvolutionBackwardBackward0 = make_node_class("ConvolutionBackwardBackward0", _weight_grad_bw)


def _im2col(x, g: Geom):
    """``(N, C, *x)`` -> ``(N, C * K, L)`` (``F.unfold``)."""
    N, C = x._data.shape[:2]
    r = _cols_plain(x._data, g._replace(groups=1)).reshape(N, C * math.prod(g.k),
                                                           math.prod(g.y))
    return result(r, x._device, Im2ColBackward0, (x,), (), g)


def _col2im(c, g: Geom):
    """``(N, C * K, L)`` -> ``(N, C, *x)``, overlapping values summed (``F.fold``)."""
    cd = c._data
    N = cd.shape[0]
    C = cd.shape[1] // math.prod(g.k)
    cols = cd.reshape((N, C) + g.k + g.y)
    n = len(g.k)
    r = scatter_windows((N, C), g, cd.dtype, xp_of(c),
                        lambda off: cols[(Ellipsis,) + off + (slice(None),) * n])
    return result(r, c._device, Col2ImBackward0, (c,), (), g)


Im2ColBackward0 = make_node_class("Im2ColBackward0", lambda node, g: (_col2im(g, node.ctx),))
Col2ImBackward0 = make_node_class("Col2ImBackward0", lambda node, g: (_im2col(g, node.ctx),))


# -- argument checks ----------------------------------------------------------------------------

def _shape_str(shape) -> str:
    return ", ".join(map(str, shape))


def _check_dtypes(x, w, b):
    if x._data.dtype != w._data.dtype:
        raise RuntimeError(f"expected scalar type {scalar_type_name(x._data.dtype)} but found "
                           f"{scalar_type_name(w._data.dtype)}")
    if b is not None and b._data.dtype != x._data.dtype:
        raise RuntimeError(f"Input type ({_c_name(x)}) and bias type ({_c_name(b)}) should be "
                           "the same")


def _c_name(t) -> str:
    name = t._data.dtype.name
    return {"float32": "float", "float64": "double", "float16": "c10::Half"}.get(name, name)


def _batched(input, n: int, name: str):
    nd = input._data.ndim
    if nd not in (n + 1, n + 2):
        raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to "
                           f"{name}, but got input of size: [{_shape_str(input._data.shape)}]")
    return (input.unsqueeze(0), True) if nd == n + 1 else (input, False)


def _common_args(weight, stride, dilation, groups):
    nw = weight._data.ndim - 2
    stride = ntuple(stride, nw, "stride")
    dilation = ntuple(dilation, nw, "dilation")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got "
                           f"[{_shape_str(dilation)}]")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if weight._data.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size "
                           f"[[{_shape_str(weight._data.shape)}]] instead")
    return stride, dilation


def _check_bias(weight, bias, channels):
    if bias is not None and (bias._data.ndim != 1 or bias._data.shape[0] != channels):
        raise RuntimeError(f"Given weight of size [{_shape_str(weight._data.shape)}], expected "
                           f"bias to be 1-dimensional with {channels} elements, but got bias "
                           f"of size [{_shape_str(bias._data.shape)}] instead")


def _convnd(n, input, weight, bias, stride, padding, dilation, groups):
    check_same_device(input, weight, bias)
    x, unbatched = _batched(input, n, f"conv{n}d")
    stride, dilation = _common_args(weight, stride, dilation, groups)
    wshape, xshape = weight._data.shape, x._data.shape
    if xshape[1] != wshape[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size [{_shape_str(wshape)}], "
                           f"expected input[{_shape_str(xshape)}] to have {wshape[1] * groups} "
                           f"channels, but got {xshape[1]} channels instead")
    _check_bias(weight, bias, wshape[0])
    _check_dtypes(x, weight, bias)
    k = tuple(wshape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            lo = hi = (0,) * n
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            total = [dilation[i] * (k[i] - 1) for i in range(n)]
            lo = tuple(t // 2 for t in total)
            hi = tuple(t - t // 2 for t in total)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        lo = hi = ntuple(padding, n, "padding")
        if any(p < 0 for p in lo):
            raise RuntimeError("negative padding is not supported")
    xs = tuple(xshape[2:])
    ek = tuple(dilation[i] * (k[i] - 1) + 1 for i in range(n))
    padded = tuple(xs[i] + lo[i] + hi[i] for i in range(n))
    if any(padded[i] < ek[i] for i in range(n)):
        raise RuntimeError(f"Calculated padded input size per channel: "
                           f"({' x '.join(map(str, padded))}). Kernel size: "
                           f"({' x '.join(map(str, ek))}). Kernel size can't be greater than "
                           "actual input size")
    y = tuple(out_size(xs[i], k[i], stride[i], dilation[i], lo[i], hi[i]) for i in range(n))
    out = _conv(x, weight, bias, Geom(k, stride, dilation, lo, xs, y, groups))
    return out.squeeze(0) if unbatched else out


_DIM_NAMES = {1: ("height", "width"), 2: ("height", "width"), 3: ("depth", "height", "width")}


def _conv_transposend(n, input, weight, bias, stride, padding, output_padding, groups,
                      dilation):
    check_same_device(input, weight, bias)
    u, unbatched = _batched(input, n, f"conv_transpose{n}d")
    stride, dilation = _common_args(weight, stride, dilation, groups)
    padding = ntuple(padding, n, "padding")
    output_padding = ntuple(output_padding, n, "output_padding")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    wshape, ushape = weight._data.shape, u._data.shape
    if ushape[1] != wshape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size [{_shape_str(wshape)}], "
                           f"expected input[{_shape_str(ushape)}] to have {wshape[0]} "
                           f"channels, but got {ushape[1]} channels instead")
    if any(output_padding[i] >= max(stride[i], dilation[i]) for i in range(n)):
        names = _DIM_NAMES[n]
        pad = (0,) * (len(names) - n)
        parts = [f"output_padding_{nm}: {v}" for nm, v in zip(names, pad + output_padding)]
        parts += [f"stride_{nm}: {v}" for nm, v in zip(names, (1,) * len(pad) + stride)]
        parts += [f"dilation_{nm}: {v}" for nm, v in zip(names, (1,) * len(pad) + dilation)]
        raise RuntimeError("output padding must be smaller than either stride or dilation, "
                           "but got " + " ".join(parts))
    _check_bias(weight, bias, wshape[1] * groups)
    _check_dtypes(u, weight, bias)
    k = tuple(wshape[2:])
    ys = tuple(ushape[2:])
    xs = tuple((ys[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (k[i] - 1) +
               output_padding[i] + 1 for i in range(n))
    if any(v <= 0 for v in xs):
        lead = (1,) * (n == 1)  # conv_transpose1d runs as a 2-D one in PyTorch
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, lead + ys))}"
                           f"). Calculated output size per channel: "
                           f"({' x '.join(map(str, lead + xs))}). Output size is too small")
    out = _conv_transpose(u, weight, bias, Geom(k, stride, dilation, padding, xs, ys, groups))
    return out.squeeze(0) if unbatched else out


# -- public functions ---------------------------------------------------------------------------

@register("conv1d", method=False)
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution over ``(N, C, L)`` (or unbatched ``(C, L)``) input."""
    return _convnd(1, input, weight, bias, stride, padding, dilation, groups)


@register("conv2d", method=False)
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution over ``(N, C, H, W)`` (or unbatched ``(C, H, W)``) input."""
    return _convnd(2, input, weight, bias, stride, padding, dilation, groups)


@register("conv3d", method=False)
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution over ``(N, C, D, H, W)`` (or unbatched ``(C, D, H, W)``) input."""
    return _convnd(3, input, weight, bias, stride, padding, dilation, groups)


@register("conv_transpose1d", method=False)
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """1-D transposed convolution ("deconvolution"); weight is ``(Cin, Cout/groups, k)``."""
    return _conv_transposend(1, input, weight, bias, stride, padding, output_padding, groups,
                             dilation)


@register("conv_transpose2d", method=False)
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """2-D transposed convolution; weight is ``(Cin, Cout/groups, kH, kW)``."""
    return _conv_transposend(2, input, weight, bias, stride, padding, output_padding, groups,
                             dilation)


@register("conv_transpose3d", method=False)
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """3-D transposed convolution; weight is ``(Cin, Cout/groups, kD, kH, kW)``."""
    return _conv_transposend(3, input, weight, bias, stride, padding, output_padding, groups,
                             dilation)


def _fold_geom(kernel_size, dilation, padding, stride, xs):
    k = ntuple(kernel_size, 2, "kernel_size")
    d = ntuple(dilation, 2, "dilation")
    p = ntuple(padding, 2, "padding")
    s = ntuple(stride, 2, "stride")
    y = tuple(out_size(xs[i], k[i], s[i], d[i], p[i], p[i]) for i in range(2))
    return Geom(k, s, d, p, tuple(xs), y)


@register("im2col", function=False, method=False)
def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Extract sliding blocks (``F.unfold``): ``(N, C, H, W)`` -> ``(N, C*kH*kW, L)``."""
    nd = input._data.ndim
    if nd not in (3, 4):
        raise RuntimeError(f"Input Error: Only 3D or 4D input Tensors are supported (got "
                           f"{nd}D)")
    x = input.unsqueeze(0) if nd == 3 else input
    g = _fold_geom(kernel_size, dilation, padding, stride, x._data.shape[2:])
    if any(v <= 0 for v in g.y):
        raise RuntimeError(f"Given input with spatial size ({', '.join(map(str, g.x))}), "
                           f"kernel_size={g.k}, dilation={g.d}, padding={g.lo}, calculated "
                           f"shape of the array of sliding blocks as "
                           f"({', '.join(map(str, g.y))}), but its components must be at "
                           "least one.")
    out = _im2col(x, g)
    return out.squeeze(0) if nd == 3 else out


@register("col2im", function=False, method=False)
def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Combine sliding blocks into a tensor, summing overlaps (``F.fold``)."""
    nd = input._data.ndim
    if nd not in (2, 3):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           f"batch size and non-zero dimensions for input, but got: "
                           f"[{_shape_str(input._data.shape)}]")
    c = input.unsqueeze(0) if nd == 2 else input
    g = _fold_geom(kernel_size, dilation, padding, stride, ntuple(output_size, 2,
                                                                  "output_size"))
    K = math.prod(g.k)
    if c._data.shape[1] % K:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the "
                           f"product of kernel_size, but got input.size(1)={c._data.shape[1]} "
                           f"and kernel_size={g.k}")
    L = math.prod(g.y)
    if c._data.shape[2] != L:
        raise RuntimeError(f"Given output_size={g.x}, kernel_size={g.k}, dilation={g.d}, "
                           f"padding={g.lo}, stride={g.s}, expected size of input's dimension "
                           f"2 to match the calculated number of sliding blocks "
                           f"{g.y[0]} * {g.y[1]} = {L}, but got input.size(2)="
                           f"{c._data.shape[2]}.")
    out = _col2im(c, g)
    return out.squeeze(0) if nd == 2 else out

