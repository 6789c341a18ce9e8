"""Recurrent layers (``torch.nn.modules.rnn``): ``RNN``, ``LSTM``, ``GRU`` and their cells.

A layer and direction runs as ONE recorded op (``_recurrent_layer``): its input projection
``x @ W_ih.T + b_ih`` for all time steps is one ``linear`` before it; the op itself loops over
time steps in array code (one matrix product ``h @ W_hh.T`` plus a handful of ufuncs per
step) and its backward is the same loop run backwards (BPTT), with the weight gradients as
one matrix product over all steps. Time steps follow packed ``batch_sizes``: at step ``t``
only the first ``batch_sizes[t]`` sequences advance, so padded and packed inputs share the
code (padded input is the packed case with equal batch sizes). A float32 LSTM on the CPU
whose batch keeps its size and has no projection runs its whole time loop, forward and
backward, in one native call (``kernels.c``'s ``ember_lstm_sequence_f32``: each step's product
through the file's own AVX-512 product, or NumPy's own OpenBLAS ``cblas_sgemm`` where it was
built without AVX-512, then the fused gate pass), so no Python runs per step; the per-step
loop below is the same arithmetic and serves every other case.

The cells (``LSTMCell``, ``GRUCell``, ``RNNCell``) run one time step per call, usually from a
Python loop, so a step is one fused op of its own (``_CELLS``): both input products and the
gate arithmetic in array code with nothing prepared per call (the layer op's kernels set up
their weights once per sequence, which a cell would pay every step).

For higher-order gradients (``create_graph=True``) the backward recomputes the layer with
differentiable Tensor ops (``_reference_layer``) and differentiates that, so double
backward works without a hand-written second derivative.
"""

from __future__ import annotations

import math
import numbers
import warnings
import weakref

import numpy as np

import ember
from ember import Tensor
from ember.ops import api

from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module
from .utils import _options_repr

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_addr = api.native_address  # an array's address for the native kernels

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}

# PyTorch's ScalarType names of the dtypes in a recurrent layer's error messages.
_SCALAR_NAMES = {"float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
                 "float64": "Double", "bool": "Bool", "uint8": "Byte", "int8": "Char",
                 "int16": "Short", "int32": "Int", "int64": "Long", "complex64": "ComplexFloat",
                 "complex128": "ComplexDouble"}


def _scalar_name(dtype) -> str:
    name = str(dtype).rsplit(".", 1)[-1]
    return _SCALAR_NAMES.get(name, name)


_any_autocast = ember._C._is_any_autocast_enabled


def _autocast_dtypes(kind: str, input: Tensor, state: Tensor | None):
    """Under autocast on ``input``'s device: ``(compute dtype, LSTM projection's c dtype)``
    of a recurrent layer or cell, or None (autocast off, or an input autocast leaves alone).

    PyTorch's CPU kernels, as measured: RNN layers and cells and the LSTM layer (oneDNN's,
    a lower-precision op) run in the autocast dtype; the GRU layer and the LSTM and GRU
    cells keep the state's dtype (``hx``'s, else the input's) under bfloat16 and float32
    under float16; an LSTM with a projection gives autocast-dtype outputs and that state
    dtype's cell. Elsewhere (cuDNN) everything runs in the autocast dtype."""
    if not _any_autocast():
        return None
    dev = input.device.type
    if not ember.is_autocast_enabled(dev) or not input.is_floating_point() or \
            input.dtype == ember.float64:
        return None
    low = ember.get_autocast_dtype(dev)
    if dev != "cpu":
        return low, low
    keep = ((state if state is not None else input).dtype if low == ember.bfloat16
            else ember.float32)
    if keep == ember.float64:
        keep = ember.float32
    return (keep if kind == "state" else low), keep


def _cast_all(dtype, *tensors):
    return [None if t is None else t.to(dtype) for t in tensors]


def _check_mat_dtypes(mat1: Tensor, mat2: Tensor) -> None:
    """PyTorch's error for the product of ``mat1`` with a weight ``mat2`` of another dtype
    (the fused kernels would otherwise cast silently)."""
    if mat1.dtype != mat2.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{_scalar_name(mat1.dtype)} and {_scalar_name(mat2.dtype)}")


# -- array kernels ---------------------------------------------------------------------------

def _steps(batch_sizes, reverse: bool) -> list:
    """``(offset, batch)`` of every time step in packed data, in processing order."""
    steps = []
    off = 0
    for bs in batch_sizes:
        steps.append((off, bs))
        off += bs
    return steps[::-1] if reverse else steps


def _prev(xp, Y, init, steps, s):
    """The state entering step ``s``: the previous step's rows, topped up from ``init``."""
    bs = steps[s][1]
    if s == 0:
        return init[:bs]
    poff, pbs = steps[s - 1]
    if bs <= pbs:
        return Y[poff:poff + bs]
    return xp.concatenate([Y[poff:poff + pbs], init[pbs:bs]])


def _prev_address(C, c0, steps, s, pc, pc0):
    """``(address, keep)`` of the float32 cell state entering step ``s`` for the native LSTM
    kernels: rows of ``C`` (at address ``pc``) or of ``c0`` (``pc0``), or a fresh
    concatenation of both (``keep``: hold it while the kernel runs)."""
    if s == 0:
        return pc0, None
    poff, pbs = steps[s - 1]
    if steps[s][1] <= pbs:
        return pc + poff * C.shape[1] * 4, None
    cp = _prev(np, C, c0, steps, s)
    return _addr(cp), cp


def _all_prev(xp, Y, init, steps):
    """The states entering every step, laid out like the packed data (for ``dW_hh``)."""
    out = xp.empty(Y.shape[:1] + init.shape[1:], dtype=Y.dtype)
    for s, (off, bs) in enumerate(steps):
        out[off:off + bs] = _prev(xp, Y, init, steps, s)
    return out


def _final(xp, Y, steps, B):
    """The last state of every sequence (each row finishes at its own last step)."""
    out = xp.empty((B,) + Y.shape[1:], dtype=Y.dtype)
    for s, (off, bs) in enumerate(steps):
        nxt = steps[s + 1][1] if s + 1 < len(steps) else 0
        if nxt < bs:
            out[nxt:bs] = Y[off + nxt:off + bs]
    return out


def _sigmoid_scale(xp, G, H, dtype, tanh_gate):
    """0.5 on the sigmoid gates, 1 on the tanh gate: ``sigmoid(z) = 0.5 * tanh(z / 2) + 0.5``."""
    scale = xp.full(G, 0.5, dtype=dtype)
    scale[tanh_gate * H:(tanh_gate + 1) * H] = 1
    return scale


class _Operand:
    """The right-hand side of a kernel's per-step product ``h @ w.T`` (``w``: ``(N, K)``),
    prepared once per call for ``rows``-row left operands: row-major column blocks each under
    OpenBLAS's small-matrix bound when the whole product is just over it
    (``api.gemm_column_block``; float32 NumPy arrays on an AVX-512 OpenBLAS core: 16x128 by
    128x512 34 -> 22 us, 16x512 by 512x128 30 -> 21 us, the LSTM benchmark's step 13% faster),
    else ``w.T`` row-major, or ``w`` itself when the product runs flipped
    (``flip``: ``(w @ h.T).T``, faster through OpenBLAS's packing path when ``h`` has fewer
    rows than ``w`` has columns: 20 -> 12 us for 16x128 by 128x512)."""

    __slots__ = ("flip", "wr", "parts")

    def __init__(self, xp, w, rows: int, flip: bool):
        N, K = w.shape
        self.parts = None
        self.flip = flip
        step = 0
        if xp is np and w.dtype == np.float32:
            step = api.gemm_column_block(rows, K, N, "copied")
        if step:
            wt = w.T
            self.parts = [(slice(a, min(a + step, N)), np.ascontiguousarray(wt[:, a:a + step]))
                          for a in range(0, N, step)]
            self.flip, self.wr = False, None
        else:
            self.wr = xp.ascontiguousarray(w) if flip else w.T.copy()

    def times(self, h, out=None):
        """``h @ w.T``, into ``out`` when given."""
        if self.parts is not None:
            if out is None:
                out = np.empty((h.shape[0], self.parts[-1][0].stop), dtype=h.dtype)
            for sl, part in self.parts:
                np.matmul(h, part, out=out[:, sl])
            return out
        r = (self.wr @ h.T).T if self.flip else h @ self.wr
        if out is None:
            return r
        out[...] = r
        return out

    def times_add(self, x, h, out):
        """``out = x + h @ w.T``."""
        if self.parts is not None:
            self.times(h, out)
            out += x
        else:
            np.add(x, self.times(h), out=out)
        return out


def _gated_operands(xp, x, h0, w, gates: int):
    """What the LSTM and GRU forward kernels start from: ``(N, G, H, scale, wr)`` with the
    0.5 of the sigmoid gates (``_sigmoid_scale``; gate 2 is the tanh one) folded into ``wr``,
    the right-hand operand of ``h @ W_hh.T``."""
    N, G = x.shape
    H = G // gates
    scale = _sigmoid_scale(xp, G, H, x.dtype, 2)
    flip = h0.shape[0] <= w.shape[1]
    return N, G, H, scale, _Operand(xp, w * scale[:, None], h0.shape[0], flip)


def _backward_operand(xp, dh, w):
    """The operand of the backward kernels' per-step product ``d @ W_hh``."""
    flip = 8 * dh.shape[0] <= w.shape[1]
    return _Operand(xp, w.T, dh.shape[0], flip)


# Kernels, one pair per mode (table ``_KERNELS``), on arrays in packed layout:
#   fwd(xp, mode, x, h0, c0, w_hh, b_hh, w_hr, steps) -> (Y, C or None, saved arrays)
#   bwd(xp, mode, saved, dY, dh, dc, w_hh, w_hr, steps) -> (dx, d(h @ W_hh.T + b_hh), dW_hr, dc0)
# where ``x`` is the input projection (bias b_ih included) and ``bwd`` leaves dh0 in ``dh``.

def _rnn_fwd(xp, mode, x, h0, c0, w, b, w_hr, steps):
    Y = xp.empty((x.shape[0], w.shape[0]), dtype=x.dtype)
    x = x + b if b is not None else x
    wr = _Operand(xp, w, h0.shape[0], h0.shape[0] <= w.shape[1])
    relu = mode == "RNN_RELU"
    for s, (off, bs) in enumerate(steps):
        y = Y[off:off + bs]
        wr.times_add(x[off:off + bs], _prev(xp, Y, h0, steps, s), y)
        if relu:
            np.maximum(y, 0, out=y)
        else:
            np.tanh(y, out=y)
    return Y, None, {"Y": Y}


def _rnn_bwd(xp, mode, a, dY, dh, dc, w, w_hr, steps):
    Y = a["Y"]
    D = (Y > 0).astype(Y.dtype) if mode == "RNN_RELU" else 1 - Y * Y
    dG = xp.empty_like(Y)
    wr = _backward_operand(xp, dh, w)
    for off, bs in reversed(steps):
        g = dG[off:off + bs]
        if dY is not None:
            np.add(dh[:bs], dY[off:off + bs], out=g)
            g *= D[off:off + bs]
        else:
            np.multiply(dh[:bs], D[off:off + bs], out=g)
        wr.times(g, dh[:bs])
    return dG, dG, None, None


def _weight_grad(xp, dgh, prev):
    """``dgh.T @ prev`` (the recurrent weights' gradient over all steps) through
    ``api.gemm`` on NumPy arrays: kernels.c's product where it takes it, and OpenBLAS's
    threads noted where they run it (kernels that split their own work stay serial while
    those threads spin)."""
    return api.gemm(dgh.T, prev) if xp is np else dgh.T @ prev


def _packed_blocks(w, rows: int, panels: bool):
    """``w`` (``(K, N)``, float32) as ``_native``'s sequence kernels take it, and a block
    width. ``panels``: in panels of 32 columns for kernels.c's own AVX-512 product (panel
    ``p``: the ``K`` rows of columns ``32p..32p+31``, zero past ``N``); else in column blocks
    of ``gemm_column_block``'s width for OpenBLAS, each row-major, one after another."""
    K, N = w.shape
    if panels:
        wide = -(-N // 32) * 32
        if wide != N:
            w = np.pad(w, ((0, 0), (0, wide - N)))
        return np.ascontiguousarray(w.reshape(K, wide // 32, 32).transpose(1, 0, 2)), 32
    width = api.gemm_column_block(rows, K, N, "copied") or N
    return np.concatenate([np.ascontiguousarray(w[:, a:a + width]).ravel()
                           for a in range(0, N, width)]), width


def _reverse(steps) -> int:
    """1 where ``steps`` (uniform) run from the last time step to the first."""
    return int(len(steps) > 1 and steps[0][0] > steps[1][0])


def _sequence_kernel(name, steps, w_hr, *arrays):
    """``(kernel, sgemm, ilp64)`` for a whole-sequence native LSTM loop (``kernels.c``: each
    step's product through its own AVX-512 kernel where it was built with one, ``sgemm`` then
    None, else through NumPy's own OpenBLAS; no Python per step), or None where the
    per-step loop runs: a packed sequence (batch sizes that change), a projection, arrays
    that are not float32 NumPy ones, or no native kernels or BLAS to call."""
    if w_hr is not None or not steps or any(
            a is not None and (a.__class__ is not np.ndarray or a.dtype != np.float32)
            for a in arrays):
        return None
    bs = steps[0][1]
    if bs == 0 or any(b != bs for _, b in steps):
        return None
    kernel = api.native_kernel(name)
    if kernel is None:
        return None
    if api.native_kernel("ember_panel_gemm_available")():
        return kernel, None, 0  # kernels.c's own product (AVX-512): no BLAS call
    sgemm = api.blas_sgemm()
    return None if sgemm is None else (kernel, *sgemm)


def _lstm_fwd(xp, mode, x, h0, c0, w, b, w_hr, steps):
    seq = _sequence_kernel("ember_lstm_sequence_f32", steps, w_hr, x, h0, c0, w, b)
    if seq is not None:
        return _lstm_fwd_sequence(seq, x, h0, c0, w, b, steps)
    N, G, H, scale, wr = _gated_operands(xp, x, h0, w, 4)
    x = (x + b) if b is not None else x.copy()
    x *= scale
    Y = xp.empty((N, w.shape[1]), dtype=x.dtype)
    C = xp.empty((N, H), dtype=x.dtype)
    A = xp.empty((N, G), dtype=x.dtype)
    TC = xp.empty((N, H), dtype=x.dtype)
    M = xp.empty((N, H), dtype=x.dtype) if w_hr is not None else Y
    native = (api.native_kernel("ember_lstm_gates_f32")
              if xp is np and x.dtype == np.float32 and c0.dtype == np.float32 else None)
    if native is not None:  # each step's gate arithmetic as one fused pass (kernels.c)
        c0 = np.ascontiguousarray(c0)
        pa, pc, ptc, pm, pc0 = (_addr(t) for t in (A, C, TC, M, c0))
        for s, (off, bs) in enumerate(steps):
            wr.times_add(x[off:off + bs], _prev(xp, Y, h0, steps, s), A[off:off + bs])
            pprev, _keep = _prev_address(C, c0, steps, s, pc, pc0)
            native(pa + off * G * 4, pprev, pc + off * H * 4, ptc + off * H * 4,
                   pm + off * H * 4, bs, H)
            if w_hr is not None:
                Y[off:off + bs] = M[off:off + bs] @ w_hr.T
        return Y, C, {"Y": Y, "C": C, "A": A, "TC": TC, "M": M}
    offset = xp.full(G, 0.5, dtype=x.dtype)  # 0.5 * tanh(z / 2) + 0.5 on sigmoid gates
    offset[2 * H:3 * H] = 0
    for s, (off, bs) in enumerate(steps):
        a = A[off:off + bs]
        wr.times_add(x[off:off + bs], _prev(xp, Y, h0, steps, s), a)
        np.tanh(a, out=a)
        a *= scale
        a += offset
        c = C[off:off + bs]
        np.multiply(a[:, H:2 * H], _prev(xp, C, c0, steps, s), out=c)
        c += a[:, :H] * a[:, 2 * H:3 * H]
        tc = TC[off:off + bs]
        np.tanh(c, out=tc)
        m = M[off:off + bs]
        np.multiply(a[:, 3 * H:], tc, out=m)
        if w_hr is not None:
            Y[off:off + bs] = m @ w_hr.T
    return Y, C, {"Y": Y, "C": C, "A": A, "TC": TC, "M": M}


def _lstm_fwd_sequence(seq, x, h0, c0, w, b, steps):
    """``_lstm_fwd``'s native loop over the whole sequence (``_sequence_kernel``): the same
    arithmetic as its per-step loop, in the same order."""
    kernel, sgemm, ilp64 = seq
    G = x.shape[1]
    H = G // 4
    B = steps[0][1]
    T = len(steps)
    scale = _sigmoid_scale(np, G, H, x.dtype, 2)
    wr, width = _packed_blocks((w * scale[:, None]).T, B, sgemm is None)
    x = np.ascontiguousarray(x)  # (x + b) * scale per step in the kernel, as the loop's arrays
    b = None if b is None else np.ascontiguousarray(b)
    N = x.shape[0]
    Y = np.empty((N, H), dtype=x.dtype)
    C = np.empty((N, H), dtype=x.dtype)
    A = np.empty((N, G), dtype=x.dtype)
    TC = np.empty((N, H), dtype=x.dtype)
    h0 = np.ascontiguousarray(h0[:B])
    c0 = np.ascontiguousarray(c0[:B])
    kernel(sgemm, ilp64, _addr(x), None if b is None else _addr(b), _addr(scale), _addr(wr),
           width, _addr(h0), _addr(c0), _addr(A), _addr(C), _addr(TC), _addr(Y), T, B, H,
           _reverse(steps))
    return Y, C, {"Y": Y, "C": C, "A": A, "TC": TC, "M": Y}


def _lstm_bwd_sequence(seq, a, dY, dh, dc, w, steps):
    """``_lstm_bwd``'s native loop over the whole sequence (``_sequence_kernel``): the same
    arithmetic as its per-step loop, in the same order; dh0 and dc0 left in ``dh``, ``dc``."""
    kernel, sgemm, ilp64 = seq
    A, TC, C = a["A"], a["TC"], a["C"]
    N, H = TC.shape
    B = steps[0][1]
    wb, width = _packed_blocks(w, B, sgemm is None)
    dG = np.empty((N, 4 * H), dtype=A.dtype)
    dY = None if dY is None else np.ascontiguousarray(dY)
    c0 = np.ascontiguousarray(a["c0"][:B])
    kernel(sgemm, ilp64, None if dY is None else _addr(dY), _addr(A), _addr(TC), _addr(C),
           _addr(c0), _addr(wb), width, _addr(dh), _addr(dc), _addr(dG), len(steps), B, H,
           _reverse(steps))
    return dG, dG, None, dc


def _lstm_bwd(xp, mode, a, dY, dh, dc, w, w_hr, steps):
    seq = _sequence_kernel("ember_lstm_sequence_backward_f32", steps, w_hr, a["A"], dY, dh, dc,
                           w, a["c0"])
    if seq is not None and dh.flags.c_contiguous and dc.flags.c_contiguous:
        return _lstm_bwd_sequence(seq, a, dY, dh, dc, w, steps)
    A, TC, C = a["A"], a["TC"], a["C"]
    N, H = TC.shape
    wr = _backward_operand(xp, dh, w)
    native = (api.native_kernel("ember_lstm_gates_backward_f32")
              if (xp is np and w_hr is None and A.dtype == np.float32 and dh.dtype == A.dtype
                  and dc.dtype == A.dtype and dh.flags.c_contiguous and dc.flags.c_contiguous
                  and a["c0"].dtype == A.dtype and (dY is None or dY.dtype == A.dtype))
              else None)
    if native is not None:  # each step's gate gradients in one fused pass, from A, TC, C
        G = 4 * H
        dG = np.empty((N, G), dtype=A.dtype)
        dY = None if dY is None else np.ascontiguousarray(dY)
        c0 = np.ascontiguousarray(a["c0"])
        pdh, pdc, pa, ptc, pC, pc0, pdg = (_addr(t) for t in (dh, dc, A, TC, C, c0, dG))
        pdy = None if dY is None else _addr(dY)
        for s in range(len(steps) - 1, -1, -1):
            off, bs = steps[s]
            pprev, _keep = _prev_address(C, c0, steps, s, pC, pc0)
            native(pdh, None if pdy is None else pdy + off * H * 4, pa + off * G * 4,
                   ptc + off * H * 4, pprev, pdc, pdg + off * G * 4, bs, H)
            wr.times(dG[off:off + bs], dh[:bs])
        return dG, dG, None, dc
    i_, f_, g_, o_ = (A[:, k * H:(k + 1) * H] for k in range(4))
    # per-row factors of the gate gradients, computed once for all steps
    F3 = xp.empty((N, 3, H), dtype=A.dtype)  # d(i, f, g pre-activation) / dc
    np.multiply(g_, i_ * (1 - i_), out=F3[:, 0])
    np.multiply(_all_prev(xp, C, a["c0"], steps), f_ * (1 - f_), out=F3[:, 1])
    np.multiply(i_, 1 - g_ * g_, out=F3[:, 2])
    OD = o_ * (1 - TC * TC)  # dc / dh
    TCD = TC * o_ * (1 - o_)  # d(o pre-activation) / dh
    dG = xp.empty((N, 4, H), dtype=A.dtype)
    DH = xp.empty((N, w.shape[1]), dtype=A.dtype) if w_hr is not None else None
    for off, bs in reversed(steps):
        sl = slice(off, off + bs)
        dm = dh[:bs] + dY[sl] if dY is not None else dh[:bs].copy()
        if w_hr is not None:
            DH[sl] = dm
            dm = dm @ w_hr
        g = dG[sl]
        dcs = dm * OD[sl]
        dcs += dc[:bs]
        np.multiply(dcs[:, None, :], F3[sl], out=g[:, :3])
        np.multiply(dm, TCD[sl], out=g[:, 3])
        np.multiply(dcs, f_[sl], out=dc[:bs])
        wr.times(g.reshape(bs, 4 * H), dh[:bs])
    dG = dG.reshape(N, 4 * H)
    dW_hr = None if w_hr is None else DH.T @ a["M"]
    return dG, dG, dW_hr, dc


def _gru_fwd(xp, mode, x, h0, c0, w, b, w_hr, steps):
    N, G, H, scale, wr = _gated_operands(xp, x, h0, w, 3)
    bsc = b * scale if b is not None else None
    x = x * scale
    Y = xp.empty((N, H), dtype=x.dtype)
    A = xp.empty((N, G), dtype=x.dtype)
    GN = xp.empty((N, H), dtype=x.dtype)
    for s, (off, bs) in enumerate(steps):
        hp = _prev(xp, Y, h0, steps, s)
        gh = wr.times(hp)
        if bsc is not None:
            gh += bsc
        a, xs = A[off:off + bs], x[off:off + bs]
        rz = a[:, :2 * H]
        np.add(xs[:, :2 * H], gh[:, :2 * H], out=rz)
        np.tanh(rz, out=rz)
        rz *= 0.5
        rz += 0.5
        GN[off:off + bs] = gh[:, 2 * H:]
        n = a[:, 2 * H:]
        np.multiply(a[:, :H], gh[:, 2 * H:], out=n)
        n += xs[:, 2 * H:]
        np.tanh(n, out=n)
        y = Y[off:off + bs]
        np.subtract(hp, n, out=y)
        y *= a[:, H:2 * H]
        y += n
    return Y, None, {"Y": Y, "A": A, "GN": GN}


def _gru_bwd(xp, mode, a, dY, dh, dc, w, w_hr, steps):
    A, GN, Y, h0 = a["A"], a["GN"], a["Y"], a["h0"]
    H = GN.shape[1]
    DRZ = A[:, :2 * H] * (1 - A[:, :2 * H])
    n_ = A[:, 2 * H:]
    DN = 1 - n_ * n_
    dX = xp.empty_like(A)
    dGh = xp.empty_like(A)
    wr = _backward_operand(xp, dh, w)
    for s in range(len(steps) - 1, -1, -1):
        off, bs = steps[s]
        sl = slice(off, off + bs)
        d = dh[:bs] + dY[sl] if dY is not None else dh[:bs].copy()
        act, dx, dg = A[sl], dX[sl], dGh[sl]
        z, n = act[:, H:2 * H], act[:, 2 * H:]
        dn = dx[:, 2 * H:]
        np.subtract(1, z, out=dn)
        dn *= d
        dn *= DN[sl]
        dz = dx[:, H:2 * H]
        np.subtract(_prev(xp, Y, h0, steps, s), n, out=dz)
        dz *= d
        np.multiply(dn, GN[sl], out=dx[:, :H])
        dx[:, :2 * H] *= DRZ[sl]
        dg[:, :2 * H] = dx[:, :2 * H]
        np.multiply(dn, act[:, :H], out=dg[:, 2 * H:])
        d *= z
        d += wr.times(dg)
        dh[:bs] = d
    return dX, dGh, None, None


_KERNELS = {"RNN_TANH": (_rnn_fwd, _rnn_bwd), "RNN_RELU": (_rnn_fwd, _rnn_bwd),
            "LSTM": (_lstm_fwd, _lstm_bwd), "GRU": (_gru_fwd, _gru_bwd)}


# -- the recorded op -------------------------------------------------------------------------

def _layer_backward(node, grads):
    xw, h0, c0, w, b, w_hr, arrays = node.saved
    mode, steps, B = node.ctx
    if api.grad_enabled():  # create_graph: differentiate the Tensor-op recomputation
        return _reference_backward(node, grads)
    gY, gh, gc = (list(grads) + [None])[:3]
    wd = w._data
    xp = api.array_module(w)
    Y = arrays["Y"]
    dY = None if gY is None else gY._data.reshape(Y.shape)
    dh = xp.zeros((B, wd.shape[1]), dtype=wd.dtype) if gh is None else gh._data.copy()
    dc = None
    if mode == "LSTM":
        H = wd.shape[0] // 4
        dc = xp.zeros((B, H), dtype=wd.dtype) if gc is None else gc._data.copy()
    dxw, dgh, dW_hr, dc = _KERNELS[mode][1](xp, mode, arrays, dY, dh, dc, wd,
                                            None if w_hr is None else w_hr._data, steps)
    dev = node.device
    out = [None] * 6
    if node.needs_grad(0):
        out[0] = api.wrap(dxw.reshape(xw._data.shape), dev)
    if node.needs_grad(1):
        out[1] = api.wrap(dh, dev)
    if node.needs_grad(2):
        out[2] = api.wrap(dc, dev)
    if node.needs_grad(3):
        out[3] = api.wrap(_weight_grad(xp, dgh, _all_prev(xp, Y, arrays["h0"], steps)), dev)
    if node.needs_grad(4):
        out[4] = api.wrap(dgh.sum(0), dev)
    if node.needs_grad(5):
        out[5] = api.wrap(dW_hr, dev)
    return tuple(out)


def _reference_backward(node, grads):
    """Gradients with a graph: recompute the layer with Tensor ops and differentiate it."""
    xw, h0, c0, w, b, w_hr, _ = node.saved
    mode, steps, B = node.ctx
    inputs = (xw, h0, c0, w, b, w_hr)
    outs = _reference_layer(mode, xw, h0, c0, w, b, w_hr, steps, B)
    pairs = [(o, g) for o, g in zip(outs, grads) if o is not None and g is not None]
    wanted = [i for i in range(6) if node.needs_grad(i)]
    res = ember.autograd.grad([o for o, _ in pairs], [inputs[i] for i in wanted],
                              [g.reshape(o.shape) for o, g in pairs], create_graph=True,
                              allow_unused=True)
    out = [None] * 6
    for i, r in zip(wanted, res):
        out[i] = r
    return tuple(out)


def _reference_layer(mode, xw, h0, c0, w, b, w_hr, steps, B):
    """The layer written with differentiable Tensor ops (used for higher-order gradients)."""
    G = w.shape[0]
    x = xw.reshape(-1, G)
    P = w.shape[1]
    h = h0 if h0 is not None else ember.zeros((B, P), dtype=x.dtype, device=x.device)
    c = None
    if mode == "LSTM":
        c = c0 if c0 is not None else ember.zeros((B, G // 4), dtype=x.dtype, device=x.device)
    outs = {}
    for off, bs in steps:
        hp = h[:bs]
        gh = hp.matmul(w.mT)
        if b is not None:
            gh = gh + b
        xs = x[off:off + bs]
        if mode == "LSTM":
            i, f, g, o = (xs + gh).chunk(4, 1)
            cn = f.sigmoid() * c[:bs] + i.sigmoid() * g.tanh()
            y = o.sigmoid() * cn.tanh()
            if w_hr is not None:
                y = y.matmul(w_hr.mT)
            c = cn if bs == B else ember.cat([cn, c[bs:]], 0)
        elif mode == "GRU":
            xr, xz, xn = xs.chunk(3, 1)
            hr, hz, hn = gh.chunk(3, 1)
            r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
            n = (xn + r * hn).tanh()
            y = n + z * (hp - n)
        else:
            pre = xs + gh
            y = pre.tanh() if mode == "RNN_TANH" else pre.relu()
        h = y if bs == B else ember.cat([y, h[bs:]], 0)
        outs[off] = y
    Y = ember.cat([outs[k] for k in sorted(outs)], 0)
    return Y, h, c


_NODES = {m: api.node_class(n, _layer_backward, n_out=3) for m, n in (
    ("RNN_TANH", "RnnTanhBackward0"), ("RNN_RELU", "RnnReluBackward0"),
    ("LSTM", "LstmBackward0"), ("GRU", "GruBackward0"))}


def _fused_layer(mode, steps, B):
    """The layer as an ``api.fused_op`` (one node of a compiled graph): the array kernels of
    ``_KERNELS`` forward and backward, ``_reference_layer`` for export and jit."""

    def forward(ctx, x, h0, c0, w, b, w_hr):
        xp = api.array_module_of(w)
        G, P = w.shape
        h0d = xp.zeros((B, P), dtype=x.dtype) if h0 is None else h0
        c0d = None
        if mode == "LSTM":
            c0d = xp.zeros((B, G // 4), dtype=x.dtype) if c0 is None else c0
        Y, C, arrays = _KERNELS[mode][0](xp, mode, x.reshape(-1, G), h0d, c0d, w, b, w_hr,
                                         steps)
        arrays["h0"], arrays["c0"] = h0d, c0d
        ctx.update(arrays=arrays, x_shape=x.shape, w=w, w_hr=w_hr, present=(
            h0 is not None, c0 is not None, b is not None))
        return Y, _final(xp, Y, steps, B), None if C is None else _final(xp, C, steps, B)

    def backward(ctx, grads):
        gY, gh, gc = grads
        arrays, w, w_hr = ctx["arrays"], ctx["w"], ctx["w_hr"]
        has_h0, has_c0, has_b = ctx["present"]
        xp = api.array_module_of(w)
        Y = arrays["Y"]
        dY = None if gY is None else gY.reshape(Y.shape)
        dh = xp.zeros((B, w.shape[1]), dtype=w.dtype) if gh is None else gh.copy()
        dc = None
        if mode == "LSTM":
            dc = xp.zeros((B, w.shape[0] // 4), dtype=w.dtype) if gc is None else gc.copy()
        dxw, dgh, dW_hr, dc = _KERNELS[mode][1](xp, mode, arrays, dY, dh, dc, w, w_hr, steps)
        dW = _weight_grad(xp, dgh, _all_prev(xp, Y, arrays["h0"], steps))
        return (dxw.reshape(ctx["x_shape"]), dh if has_h0 else None,
                dc if has_c0 else None, dW, dgh.sum(0) if has_b else None, dW_hr)

    def reference(xw, h0, c0, w, b, w_hr):
        return _reference_layer(mode, xw, h0, c0, w, b, w_hr, steps, B)

    return api.fused_op(f"{mode.lower()}_layer", forward, backward, reference=reference)


def _recurrent_layer(mode, xw, h0, c0, w, b, w_hr, batch_sizes, reverse, lead=None):
    """One layer and direction over all time steps: ``(output, h_n, c_n)``.

    ``xw`` is the input projection of the packed steps (``N x G``); ``h0``/``c0`` may be None
    (zeros). The output is ``N x P``, or ``lead + (P,)`` when ``lead`` (``(T, B)``) is given.
    """
    tensors = (xw, h0, c0, w, b, w_hr)
    if ember.jit.is_tracing():
        # graph capture: ember.compile records the layer as ONE fused node (its array
        # kernels); export and jit record registry ops, so there the fused op runs its
        # Tensor-op reference (the same values, step by step)
        Y, h_n, c_n = _fused_layer(mode, _steps(batch_sizes, reverse), batch_sizes[0])(
            *tensors)
        return (Y if lead is None else Y.reshape(tuple(lead) + (Y.shape[1],))), h_n, c_n
    if _in_vmap(tensors) or ember.overrides.mode_wants("_ember_sees_fused_layers"):
        # tensors seen inside ember.func.vmap: the layer goes through dispatch, where vmap's
        # batching rule for it (ember.ops.batching_rules) runs it on the physical tensors; and
        # a mode that asks to see the layer (ember.utils.flop_counter's) sees it there
        return _dispatching_layer(mode, xw, h0, c0, w, b, w_hr, batch_sizes, reverse, lead)
    dev = xw._device
    for t in tensors:
        if t is not None and t._device is not dev:
            api.check_same_device(*[t for t in tensors if t is not None])
    xp = api.array_module(xw)
    steps = _steps(batch_sizes, reverse)
    B = batch_sizes[0]
    wd = w._data
    G, P = wd.shape
    x = xw._data.reshape(-1, G)
    h0d = xp.zeros((B, P), dtype=x.dtype) if h0 is None else h0._data
    c0d = None
    if mode == "LSTM":
        c0d = xp.zeros((B, G // 4), dtype=x.dtype) if c0 is None else c0._data
    Y, C, arrays = _KERNELS[mode][0](xp, mode, x, h0d, c0d, wd,
                                     None if b is None else b._data,
                                     None if w_hr is None else w_hr._data, steps)
    out = api.wrap(Y if lead is None else Y.reshape(tuple(lead) + (Y.shape[1],)), dev)
    h_n = api.wrap(_final(xp, Y, steps, B), dev)
    c_n = None if C is None else api.wrap(_final(xp, C, steps, B), dev)
    if api.grad_enabled() and any(t is not None and t.requires_grad for t in tensors):
        arrays["h0"], arrays["c0"] = h0d, c0d
        node_cls = _NODES[mode]
        api.record(node_cls, out, tensors, tensors + (arrays,), (mode, steps, B),
               save_output=True)  # the backward reads the output's array: guard its version
        for nr, t in ((1, h_n), (2, c_n)):
            if t is not None:
                t.requires_grad = True
                t.grad_fn = out.grad_fn
                t._nr = nr
    return out, h_n, c_n


def _in_vmap(tensors) -> bool:
    """Whether any of ``tensors`` is a tensor seen inside ``vmap`` (its kernel would need the
    physical batch)."""
    for t in tensors:
        tp = type(t)
        if tp is not Tensor and tp is not Parameter and t is not None and \
                ember.func.debug_unwrap(t) is not t:
            return True
    return False


def _layer_tensors(mode, xw, h0, c0, w, b, w_hr, *args, **kwargs):
    return (xw, h0, c0, w, b, w_hr)


#: ``_recurrent_layer`` as a dispatching function (``__torch_function__`` modes see it, under
#: its name): vmap's rule ``"_recurrent_layer"`` folds the vmap batch into the layer's batch
_dispatching_layer = ember.overrides.wrap_torch_function(_layer_tensors)(_recurrent_layer)


# -- modules ---------------------------------------------------------------------------------

def _apply_permutation(tensor: Tensor, permutation: Tensor, dim: int = 1) -> Tensor:
    return tensor.index_select(dim, permutation)


def apply_permutation(tensor: Tensor, permutation: Tensor, dim: int = 1) -> Tensor:
    """``tensor.index_select(dim, permutation)``: deprecated in PyTorch, which warns so."""
    warnings.warn("`apply_permutation` is deprecated, please use "
                  "`tensor.index_select(dim, permutation)` instead", FutureWarning, stacklevel=2)
    return _apply_permutation(tensor, permutation, dim)


class RNNBase(Module):
    """Base class of ``RNN``, ``LSTM`` and ``GRU``: parameters, checks and the layer loop."""

    __constants__ = ["mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first",
                     "dropout", "bidirectional", "proj_size"]

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 \
                or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        for name, value, typ in (("bias", bias, bool), ("batch_first", batch_first, bool),
                                 ("input_size", input_size, int),
                                 ("hidden_size", hidden_size, int)):
            if not isinstance(value, typ):
                raise TypeError(f"{name} should be of type {typ.__name__}, got: "
                                f"{type(value).__name__}")
            if typ is int and value <= 0:
                raise ValueError(f"{name} must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = _GATES[mode] * hidden_size
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        kw = {"device": device, "dtype": dtype}
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden_size * num_directions
                shapes = [(gate_size, layer_input), (gate_size, real_hidden_size)]
                names = ["weight_ih_l{}{}", "weight_hh_l{}{}"]
                if bias:
                    shapes += [(gate_size,), (gate_size,)]
                    names += ["bias_ih_l{}{}", "bias_hh_l{}{}"]
                if proj_size > 0:
                    shapes.append((proj_size, hidden_size))
                    names.append("weight_hr_l{}{}")
                suffix = "_reverse" if direction == 1 else ""
                names = [n.format(layer, suffix) for n in names]
                for name, shape in zip(names, shapes):
                    setattr(self, name, Parameter(ember.empty(shape, **kw)))
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self._init_flat_weights()
        self.reset_parameters()

    # ``_flat_weights`` is a list, as PyTorch's: what ``forward`` runs with. It follows
    # ``self.weight_... = w`` (``__setattr__``), ``.to()`` (``_apply``) and weights replaced
    # behind the module's back (``functional_call``; ``_update_flat_weights`` at ``forward``),
    # and code that assigns it itself (weight-dropping wrappers) is obeyed until one of those.
    def _init_flat_weights(self) -> None:
        self._flat_weights = [getattr(self, wn) if hasattr(self, wn) else None
                              for wn in self._flat_weights_names]
        self._flat_weight_refs = [weakref.ref(w) if w is not None else None
                                  for w in self._flat_weights]
        self.flatten_parameters()

    def __setattr__(self, attr, value) -> None:
        if hasattr(self, "_flat_weights_names") and attr in self._flat_weights_names:
            self._flat_weights[self._flat_weights_names.index(attr)] = value
        super().__setattr__(attr, value)

    def _weights_have_changed(self) -> bool:
        """Whether a weight attribute is no longer the tensor ``_flat_weights`` was made
        from (``functional_call`` swaps them this way)."""
        params = self._parameters  # (read directly: this runs at every forward)
        for ref, name in zip(self._flat_weight_refs, self._flat_weights_names, strict=True):
            weight = params[name] if name in params else getattr(self, name, None)
            if weight is not None and ref is not None and ref() is not weight:
                return True
        return False

    def _update_flat_weights(self) -> None:
        if self._weights_have_changed():
            self._init_flat_weights()

    def _apply(self, fn, recurse: bool = True):
        self._flat_weight_refs = []
        ret = super()._apply(fn, recurse)
        self._init_flat_weights()
        return ret

    def __getstate__(self) -> dict:
        self._update_flat_weights()
        state = self.__dict__.copy()
        state.pop("_flat_weight_refs", None)  # (weak references do not pickle)
        return state

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        if "_flat_weights" not in state:
            self._flat_weights = [getattr(self, wn) if hasattr(self, wn) else None
                                  for wn in self._flat_weights_names]
        self._flat_weight_refs = [weakref.ref(w) if w is not None else None
                                  for w in self._flat_weights]

    def flatten_parameters(self) -> None:
        """A no-op (PyTorch compacts weights for cuDNN here)."""

    def reset_parameters(self) -> None:
        """Every weight and bias from ``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    @property
    def all_weights(self) -> list:
        return [[getattr(self, w) for w in ws] for ws in self._all_weights]

    def check_input(self, input: Tensor, batch_sizes) -> None:
        w0 = self._flat_weights[0]
        if input.dtype != w0.dtype and not _any_autocast():
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype "
                             f"({w0.dtype}). Convert input: input.to({w0.dtype}), or convert "
                             f"model: model.to({input.dtype})")
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.size(-1)}")

    def _mini_batch(self, input, batch_sizes) -> int:
        if batch_sizes is not None:
            return int(batch_sizes[0])
        return input.size(0) if self.batch_first else input.size(1)

    def get_expected_hidden_size(self, input: Tensor, batch_sizes) -> tuple:
        num_directions = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, self._mini_batch(input, batch_sizes), size)

    def check_hidden_size(self, hx: Tensor, expected_hidden_size: tuple,
                          msg: str = "Expected hidden size {}, got {}") -> None:
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def check_forward_args(self, input: Tensor, hidden: Tensor, batch_sizes) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx: Tensor, permutation: Tensor | None):
        if permutation is None:
            return hx
        return _apply_permutation(hx, permutation)

    def extra_repr(self) -> str:
        return _options_repr(self, "{input_size}, {hidden_size}", (
            (", proj_size={proj_size}", self.proj_size != 0),
            (", num_layers={num_layers}", self.num_layers != 1),
            (", bias={bias}", self.bias is not True),
            (", batch_first={batch_first}", self.batch_first is not False),
            (", dropout={dropout}", self.dropout != 0),
            (", bidirectional={bidirectional}", self.bidirectional is not False)))

    # -- the layer loop ------------------------------------------------------------------------
    def _run(self, x: Tensor, batch_sizes, h0: Tensor | None, c0: Tensor | None, cast=None):
        """All layers over ``x`` (``T x B x I`` or packed ``N x I``): ``(out, h_n, c_n)``,
        with the weights as ``cast`` (autocast's dtype) when given."""
        mode = self.mode
        num_directions = 2 if self.bidirectional else 1
        lead = None if x.dim() == 2 else tuple(x.shape[:2])
        hs, cs = [], []
        flat = self._flat_weights
        per = len(flat) // (self.num_layers * num_directions)
        for layer in range(self.num_layers):
            if layer and self.dropout and self.training:
                x = F.dropout(x, self.dropout, True)
            outs = []
            for direction in range(num_directions):
                k = layer * num_directions + direction
                ws = flat[k * per:(k + 1) * per]
                if cast is not None:
                    ws = _cast_all(cast, *ws)
                w_ih, w_hh = ws[0], ws[1]
                b_ih = b_hh = w_hr = None
                if self.bias:
                    b_ih, b_hh = ws[2], ws[3]
                if self.proj_size > 0:
                    w_hr = ws[-1]
                # one 2-D product for all steps (NumPy runs a 3-D one as a batch of small ones)
                xw = F.linear(x if x.dim() == 2 else x.reshape(-1, x.shape[-1]), w_ih, b_ih)
                y, h_n, c_n = _recurrent_layer(mode, xw, None if h0 is None else h0[k],
                                               None if c0 is None else c0[k], w_hh, b_hh,
                                               w_hr, batch_sizes, direction == 1, lead)
                outs.append(y)
                hs.append(h_n)
                cs.append(c_n)
            x = outs[0] if num_directions == 1 else ember.cat(outs, -1)
        # stacked even for one layer, as PyTorch does (grad_fn=<StackBackward0> in a print)
        h_n = ember.stack(hs, 0)
        c_n = ember.stack(cs, 0) if mode == "LSTM" else None
        return x, h_n, c_n

    def _forward(self, input, hx):
        """Shared ``forward``: unpacks, checks, runs and repacks like PyTorch."""
        self._update_flat_weights()
        is_lstm = self.mode == "LSTM"
        name = "LSTM" if is_lstm else ("GRU" if self.mode == "GRU" else "RNN")
        orig_input = input
        batch_sizes = sorted_indices = unsorted_indices = None
        is_batched = True
        batch_dim = 0 if self.batch_first else 1
        if isinstance(orig_input, PackedSequence):
            input, batch_sizes, sorted_indices, unsorted_indices = input
            if hx is not None:
                hx = self.permute_hidden(hx, sorted_indices)
        else:
            if input.dim() not in (2, 3):
                got = f"{input.dim()}D tensor" if name == "RNN" else f"{input.dim()}D"
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {got} instead")
            is_batched = input.dim() == 3
            if not is_batched:
                input = input.unsqueeze(batch_dim)
            if hx is not None:
                hx = self._batch_hidden(hx, is_batched)
        if hx is not None:
            self.check_forward_args(input, hx, batch_sizes)
        else:
            self.check_input(input, batch_sizes)
        h0, c0 = (hx if hx is not None else (None, None)) if is_lstm else (hx, None)
        plan = _autocast_dtypes("state" if self.mode == "GRU" else "low", input, h0)
        if plan is not None:
            output, h_n, c_n = self._run_autocast(plan, input, h0, c0, batch_sizes)
        else:
            if h0 is not None:  # (PyTorch without oneDNN; a c0 of another dtype reaches h)
                _check_mat_dtypes(h0, self._flat_weights[1])
                if c0 is not None:
                    _check_mat_dtypes(c0, self._flat_weights[1])
            output, h_n, c_n = self._run(*self._time_major(input, batch_sizes), h0, c0)
        return self._finish(output, h_n, c_n, batch_sizes, sorted_indices, unsorted_indices,
                            is_batched)

    def _run_autocast(self, plan, input, h0, c0, batch_sizes):
        """``_run`` under autocast: input, states and weights in the compute dtype of
        ``plan`` with autocast off inside, an LSTM projection's cell cast after."""
        dtype, c_dtype = plan
        with ember.autocast(input.device.type, enabled=False):
            input, h0, c0 = _cast_all(dtype, input, h0, c0)
            output, h_n, c_n = self._run(*self._time_major(input, batch_sizes), h0, c0,
                                         cast=dtype)
            if c_n is not None and self.proj_size > 0:
                c_n = c_n.to(c_dtype)
        return output, h_n, c_n

    def _time_major(self, input, batch_sizes):
        """``(x, steps)``: the padded input time-major (or the packed data) and the batch size
        of each step."""
        if batch_sizes is not None:
            return input, batch_sizes.tolist()
        if input.size(1 if self.batch_first else 0) == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        x = input.transpose(0, 1) if self.batch_first else input
        return x, [x.shape[1]] * x.shape[0]

    def _finish(self, output, h_n, c_n, batch_sizes, sorted_indices, unsorted_indices,
                is_batched):
        """``(output, hidden)`` repacked, batch-first or unbatched as the input came."""
        is_lstm = self.mode == "LSTM"
        batch_dim = 0 if self.batch_first else 1
        hidden = (h_n, c_n) if is_lstm else h_n
        if batch_sizes is not None:
            return (PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices),
                    self.permute_hidden(hidden, unsorted_indices))
        if self.batch_first:
            output = output.transpose(0, 1)
        if not is_batched:
            output = output.squeeze(batch_dim)
            hidden = (h_n.squeeze(1), c_n.squeeze(1)) if is_lstm else h_n.squeeze(1)
        return output, hidden

    def _batch_hidden(self, hx, is_batched):
        if is_batched and hx.dim() != 3:
            raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got "
                               f"{hx.dim()}-D tensor")
        if not is_batched:
            if hx.dim() != 2:
                raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got "
                                   f"{hx.dim()}-D tensor")
            hx = hx.unsqueeze(1)
        return hx


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or ReLU)."""

    def __init__(self, *args, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' "
                             "or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):
        """``(output, h_n)`` for a padded, unbatched or packed ``input``."""
        return self._forward(input, hx)


class LSTM(RNNBase):
    """Long short-term memory (gates i, f, g, o; optional projection ``proj_size``)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input: Tensor, batch_sizes) -> tuple:
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, self._mini_batch(input, batch_sizes),
                self.hidden_size)

    def check_forward_args(self, input: Tensor, hidden, batch_sizes) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation: Tensor | None):
        if permutation is None:
            return hx
        return _apply_permutation(hx[0], permutation), _apply_permutation(hx[1], permutation)

    def _batch_hidden(self, hx, is_batched):
        if is_batched:
            if hx[0].dim() != 3 or hx[1].dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx and cx should also be 3-D but "
                                   f"got ({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            return hx
        if hx[0].dim() != 2 or hx[1].dim() != 2:
            raise RuntimeError(f"For unbatched 2-D input, hx and cx should also be 2-D but got "
                               f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
        return hx[0].unsqueeze(1), hx[1].unsqueeze(1)

    def forward(self, input, hx=None):
        """``(output, (h_n, c_n))`` for a padded, unbatched or packed ``input``."""
        return self._forward(input, hx)


class GRU(RNNBase):
    """Gated recurrent unit (gates r, z, n)."""

    def __init__(self, *args, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        """``(output, h_n)`` for a padded, unbatched or packed ``input``."""
        return self._forward(input, hx)


# -- cells -----------------------------------------------------------------------------------

class RNNCellBase(Module):
    """Base class of the single-step cells: ``weight_ih``, ``weight_hh``, ``bias_ih/hh``."""

    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device=None, dtype=None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(ember.empty((num_chunks * hidden_size, input_size), **kw))
        self.weight_hh = Parameter(ember.empty((num_chunks * hidden_size, hidden_size), **kw))
        if bias:
            self.bias_ih = Parameter(ember.empty(num_chunks * hidden_size, **kw))
            self.bias_hh = Parameter(ember.empty(num_chunks * hidden_size, **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        d = self.__dict__
        return _options_repr(self, "{input_size}, {hidden_size}", (
            (", bias={bias}", "bias" in d and d["bias"] is not True),
            (", nonlinearity={nonlinearity}", "nonlinearity" in d and d["nonlinearity"] != "tanh")))

    def reset_parameters(self) -> None:
        """Every weight and bias from ``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _step(self, mode, input, hx, cx):
        """One time step: ``(h', c')`` (batched; ``c'`` None but for the LSTM)."""
        w_ih, w_hh, b_ih, b_hh = self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh
        plan = _autocast_dtypes("low" if mode.startswith("RNN") else "state", input, hx)
        if plan is not None:  # PyTorch's dtypes under autocast (see _autocast_dtypes)
            with ember.autocast(input.device.type, enabled=False):
                args = _cast_all(plan[0], input, hx, cx, w_ih, w_hh, b_ih, b_hh)
                _check_cell(*args[:3], self.input_size, self.hidden_size, *args[3:5])
                if not _in_vmap(args):
                    out = _CELLS[mode](*args)
                    return out[0], out[1]
                xw = F.linear(args[0], args[3], args[5])
                _, h, c = _recurrent_layer(mode, xw, args[1], args[2], args[4], args[6], None,
                                           [input.shape[0]], False)
                return h, c
        _check_cell(input, hx, cx, self.input_size, self.hidden_size, w_ih, w_hh)
        if not _in_vmap((input, hx, cx, w_ih, w_hh, b_ih, b_hh)):
            out = _CELLS[mode](input, hx, cx, w_ih, w_hh, b_ih, b_hh)
            return out[0], out[1]
        # vmap: the layer op, whose batching rule folds vmap's batch into the layer's
        xw = F.linear(input, self.weight_ih, self.bias_ih)
        _, h, c = _recurrent_layer(mode, xw, hx, cx, self.weight_hh, self.bias_hh, None,
                                   [input.shape[0]], False)
        return h, c


def _check_cell(input, hx, cx, input_size, hidden_size, w_ih, w_hh):
    """PyTorch's ``check_rnn_cell_forward_*`` on a 2-D ``input`` (``hx``/``cx`` may be of
    another rank when an unbatched input came with batched states), then the products'
    dtype checks."""
    n, k = input.shape
    if k != input_size:
        raise RuntimeError(f"input has inconsistent input_size: got {k} expected "
                           f"{input_size}")
    for i, h in enumerate((hx, cx)):
        if h is None:
            continue
        shape = h.shape
        if n != shape[0]:
            raise RuntimeError(f"Input batch size {n} doesn't match hidden{i} "
                               f"batch size {shape[0]}")
        if len(shape) < 2:
            raise IndexError("Dimension out of range (expected to be in range of [-1, 0], "
                             "but got 1)")
        if shape[1] != hidden_size:
            raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {shape[1]}, "
                               f"expected {hidden_size}")
    _check_mat_dtypes(input, w_ih)
    if hx is not None:
        _check_mat_dtypes(hx, w_hh)


# -- cells: one fused op per time step -------------------------------------------------------
# A cell's step is ONE op (``api.fused_op``: one autograd node, one node of a compiled graph):
# both input products, the gate arithmetic and its backward in array code, no state set up
# per call (the layer op's kernels prepare their weights once for a whole sequence, which a
# cell called once per step would pay every step). Arguments: (x, h, c, w_ih, w_hh, b_ih,
# b_hh), h/c/biases may be None; results (h', c') with c' None but for the LSTM.

_GATE_CONSTANTS: dict = {}


def _gate_constants(xp, G, H, dtype, tanh_gate):
    """``(scale, offset)`` with ``sigmoid(z) = scale * tanh(scale * z) + offset`` on the
    sigmoid gates and ``tanh(z)`` on gate ``tanh_gate`` (cached: a cell pays this once)."""
    key = (xp, G, H, dtype, tanh_gate)
    got = _GATE_CONSTANTS.get(key)
    if got is None:
        scale = _sigmoid_scale(xp, G, H, dtype, tanh_gate)
        offset = xp.full(G, 0.5, dtype=dtype)
        offset[tanh_gate * H:(tanh_gate + 1) * H] = 0
        got = _GATE_CONSTANTS[key] = (scale, offset)
    return got


def _cell_preact(xp, x, h, w_ih, w_hh, b_ih, b_hh):
    """``x @ w_ih.T + b_ih + h @ w_hh.T + b_hh`` (a fresh array)."""
    A = xp.matmul(x, w_ih.T)
    if h is not None:
        A += xp.matmul(h, w_hh.T)
    if b_ih is not None:
        A += b_ih
    if b_hh is not None:
        A += b_hh
    return A


def _cell_weight_grads(xp, dA, x, h, w_hh, b_ih, b_hh, dgh=None):
    """``(dW_ih, dW_hh, db_ih, db_hh)`` from the pre-activation gradient ``dA`` (``dgh``: the
    hidden part's, when it differs, as the GRU's)."""
    dgh = dA if dgh is None else dgh
    dW_ih = xp.matmul(dA.T, x)
    dW_hh = xp.matmul(dgh.T, h) if h is not None else xp.zeros_like(w_hh)
    db_ih = dA.sum(0) if b_ih is not None else None
    if b_hh is None:
        db_hh = None
    elif dgh is dA and db_ih is not None:
        db_hh = db_ih.copy()  # the same sum, as its own array (the grads must not alias)
    else:
        db_hh = dgh.sum(0)
    return dW_ih, dW_hh, db_ih, db_hh


def _lstm_cell_native(A, c, H):
    """``(h', c', tanh(c'))`` through kernels.c's fused gate pass (float32 NumPy arrays; A
    becomes the activated gates), or None where that kernel is not built."""
    native = api.native_kernel("ember_lstm_gates_f32")
    if native is None:
        return None
    B = A.shape[0]
    A *= _gate_constants(np, A.shape[1], H, A.dtype, 2)[0]  # the kernel takes z/2 on sigmoids
    c = np.zeros((B, H), dtype=np.float32) if c is None else np.ascontiguousarray(c)
    cn, tc, hn = (np.empty((B, H), dtype=np.float32) for _ in range(3))
    native(_addr(A), _addr(c), _addr(cn), _addr(tc), _addr(hn), B, H)
    return hn, cn, tc


_F64 = np.dtype(np.float64)


def _lstm_cell_native_f64(A, c, H):
    """``(h', c', tanh(c'))`` of float64 NumPy arrays through kernels.c's one-pass step (the
    NumPy formulation's bits: its operations in its order, NumPy's own tanh loop), A
    activated in place; None where the kernel or the loop is not there."""
    native = api.native_kernel("ember_lstm_cell_f64")
    loop = api.native_ufunc_loop(np.tanh, _F64) if native is not None else None
    if loop is None or not A.flags.c_contiguous:
        return None
    B = A.shape[0]
    if c is not None:
        c = np.ascontiguousarray(c)
    cn, tc, hn = (np.empty((B, H), dtype=np.float64) for _ in range(3))
    native(_addr(A), None if c is None else _addr(c), _addr(cn), _addr(tc), _addr(hn), B, H,
           loop[0], loop[1])
    return hn, cn, tc


def _lstm_cell_fwd(ctx, x, h, c, w_ih, w_hh, b_ih, b_hh):
    xp = api.array_module_of(x)
    A = _cell_preact(xp, x, h, w_ih, w_hh, b_ih, b_hh)
    H = A.shape[1] // 4
    ctx.update(A=A, c=c, x=x, h=h, w_ih=w_ih, w_hh=w_hh, b=(b_ih, b_hh))
    if xp is np and (c is None or c.dtype == A.dtype):
        got = None
        if A.dtype == np.float32:
            got = _lstm_cell_native(A, c, H)
        elif A.dtype == _F64:
            got = _lstm_cell_native_f64(A, c, H)
        if got is not None:
            ctx["tc"] = got[2]
            return got[0], got[1]
    scale, offset = _gate_constants(xp, A.shape[1], H, A.dtype, 2)
    A *= scale  # i, f, o: sigmoid as 0.5 * tanh(z / 2) + 0.5; g: tanh
    xp.tanh(A, out=A)
    A *= scale
    A += offset
    i, f, g, o = A[:, :H], A[:, H:2 * H], A[:, 2 * H:3 * H], A[:, 3 * H:]
    cn = i * g
    if c is not None:
        cn += f * c
    tc = xp.tanh(cn)
    hn = o * tc
    ctx["tc"] = tc
    return hn, cn


def _lstm_cell_bwd(ctx, grads):
    gh, gc = grads
    A, c, tc, x, h, w_ih, w_hh = (ctx[k] for k in ("A", "c", "tc", "x", "h", "w_ih", "w_hh"))
    xp = api.array_module_of(A)
    H = A.shape[1] // 4
    if xp is np and A.dtype == np.float32 and all(
            t is None or t.dtype == np.float32 for t in (gh, gc, c)):
        native = api.native_kernel("ember_lstm_gates_backward_f32")
        if native is not None:  # the gate gradients in one fused pass (kernels.c)
            B = A.shape[0]
            dh = np.zeros((B, H), np.float32) if gh is None else np.ascontiguousarray(gh)
            dc = np.zeros((B, H), np.float32) if gc is None else np.array(gc, order="C")
            cp = np.zeros((B, H), np.float32) if c is None else np.ascontiguousarray(c)
            dA = np.empty_like(A)
            native(_addr(dh), None, _addr(A), _addr(tc), _addr(cp),
                   _addr(dc), _addr(dA), B, H)
            return (np.matmul(dA, w_ih), np.matmul(dA, w_hh) if h is not None else None,
                    dc if c is not None else None) + _cell_weight_grads(
                        xp, dA, x, h, w_hh, *ctx["b"])
    if xp is np and A.dtype == _F64 and all(t is None or t.dtype == _F64 for t in (gh, gc, c)):
        native = api.native_kernel("ember_lstm_cell_backward_f64")
        if native is not None:  # the NumPy formulation's operations in one pass (kernels.c)
            B = A.shape[0]
            gh = None if gh is None else np.ascontiguousarray(gh)
            gc = None if gc is None else np.ascontiguousarray(gc)
            cp = None if c is None else np.ascontiguousarray(c)
            dA = np.empty_like(A)
            dc = None if c is None else np.empty((B, H), np.float64)
            native(None if gh is None else _addr(gh), None if gc is None else _addr(gc),
                   _addr(A), _addr(np.ascontiguousarray(tc)), None if cp is None else _addr(cp),
                   _addr(dA), None if dc is None else _addr(dc), B, H)
            return (np.matmul(dA, w_ih), np.matmul(dA, w_hh) if h is not None else None,
                    dc) + _cell_weight_grads(xp, dA, x, h, w_hh, *ctx["b"])
    i, f, g, o = A[:, :H], A[:, H:2 * H], A[:, 2 * H:3 * H], A[:, 3 * H:]
    dA = xp.empty_like(A)  # first d(activation), then d(pre-activation)
    if gh is not None:
        xp.multiply(gh, tc, out=dA[:, 3 * H:])
        dcs = gh * o
        dcs *= 1 - tc * tc
        if gc is not None:
            dcs += gc
    else:
        dA[:, 3 * H:] = 0
        dcs = gc.copy() if gc is not None else xp.zeros_like(tc)
    xp.multiply(dcs, g, out=dA[:, :H])
    if c is not None:
        xp.multiply(dcs, c, out=dA[:, H:2 * H])
    else:
        dA[:, H:2 * H] = 0
    xp.multiply(dcs, i, out=dA[:, 2 * H:3 * H])
    D = 1 - A  # sigmoid' = s (1 - s); tanh' = 1 - t^2 on the g gate
    D *= A
    D[:, 2 * H:3 * H] = 1 - g * g
    dA *= D
    dx = xp.matmul(dA, w_ih)
    dh = xp.matmul(dA, w_hh) if h is not None else None
    dc = dcs * f if c is not None else None
    return (dx, dh, dc) + _cell_weight_grads(xp, dA, x, h, w_hh, *ctx["b"])


def _gru_cell_fwd(ctx, x, h, _c, w_ih, w_hh, b_ih, b_hh):
    xp = api.array_module_of(x)
    GX = xp.matmul(x, w_ih.T)
    if b_ih is not None:
        GX += b_ih
    H = GX.shape[1] // 3
    if h is not None:
        GH = xp.matmul(h, w_hh.T)
        if b_hh is not None:
            GH += b_hh
    else:
        GH = xp.zeros_like(GX) if b_hh is None else xp.broadcast_to(b_hh, GX.shape).copy()
    rz = GX[:, :2 * H] + GH[:, :2 * H]
    rz *= 0.5  # sigmoid(z) = 0.5 * tanh(z / 2) + 0.5
    xp.tanh(rz, out=rz)
    rz *= 0.5
    rz += 0.5
    r, z = rz[:, :H], rz[:, H:]
    n = r * GH[:, 2 * H:]
    n += GX[:, 2 * H:]
    xp.tanh(n, out=n)
    hn = (h - n) if h is not None else -n
    hn *= z
    hn += n
    ctx.update(rz=rz, n=n, ghn=GH[:, 2 * H:], x=x, h=h, w_ih=w_ih, w_hh=w_hh, b=(b_ih, b_hh))
    return hn, None


def _gru_cell_bwd(ctx, grads):
    gh = grads[0]
    rz, n, ghn, x, h, w_ih, w_hh = (ctx[k] for k in ("rz", "n", "ghn", "x", "h", "w_ih",
                                                       "w_hh"))
    xp = api.array_module_of(rz)
    H = n.shape[1]
    r, z = rz[:, :H], rz[:, H:]
    B = n.shape[0]
    dX = xp.empty((B, 3 * H), dtype=n.dtype)  # d(x @ w_ih.T + b_ih)
    dGH = xp.empty((B, 3 * H), dtype=n.dtype)  # d(h @ w_hh.T + b_hh)
    if gh is None:
        gh = xp.zeros_like(n)
    dn = dX[:, 2 * H:]  # d(pre-tanh of n) = gh (1 - z) (1 - n^2)
    xp.subtract(1, z, out=dn)
    dn *= gh
    dn *= 1 - n * n
    dz = dX[:, H:2 * H]
    if h is not None:
        xp.subtract(h, n, out=dz)
    else:
        xp.negative(n, out=dz)
    dz *= gh
    xp.multiply(dn, ghn, out=dX[:, :H])  # dr
    dX[:, :2 * H] *= rz * (1 - rz)
    dGH[:, :2 * H] = dX[:, :2 * H]
    xp.multiply(dn, r, out=dGH[:, 2 * H:])
    dx = xp.matmul(dX, w_ih)
    dh = None
    if h is not None:
        dh = gh * z
        dh += xp.matmul(dGH, w_hh)
    return (dx, dh, None) + _cell_weight_grads(xp, dX, x, h, w_hh, *ctx["b"], dgh=dGH)


def _rnn_cell_fwd(relu):
    def forward(ctx, x, h, _c, w_ih, w_hh, b_ih, b_hh):
        xp = api.array_module_of(x)
        y = _cell_preact(xp, x, h, w_ih, w_hh, b_ih, b_hh)
        if relu:
            xp.maximum(y, 0, out=y)
        else:
            xp.tanh(y, out=y)
        ctx.update(y=y, x=x, h=h, w_ih=w_ih, w_hh=w_hh, b=(b_ih, b_hh))
        return y, None
    return forward


def _rnn_cell_bwd(relu):
    def backward(ctx, grads):
        gh = grads[0]
        y, x, h, w_ih, w_hh = (ctx[k] for k in ("y", "x", "h", "w_ih", "w_hh"))
        xp = api.array_module_of(y)
        if gh is None:
            gh = xp.zeros_like(y)
        dA = gh * (y > 0) if relu else gh * (1 - y * y)
        dx = xp.matmul(dA, w_ih)
        dh = xp.matmul(dA, w_hh) if h is not None else None
        return (dx, dh, None) + _cell_weight_grads(xp, dA, x, h, w_hh, *ctx["b"])
    return backward


def _cell_reference(mode):
    """The step with Tensor ops (export, jit, double backward): the layer op's reference."""
    def reference(x, h, c, w_ih, w_hh, b_ih, b_hh):
        xw = F.linear(x, w_ih, b_ih)
        _, h_n, c_n = _reference_layer(mode, xw, h, c, w_hh, b_hh, None, [(0, x.shape[0])],
                                       x.shape[0])
        return h_n, c_n
    return reference


def _same_dtypes(fwd, bwd):
    """A cell's kernels with outputs in the input's dtype and gradients in their inputs':
    NumPy's bfloat16 products (ml_dtypes) come back float32, so a bfloat16 cell's gate
    arithmetic runs in float32 (PyTorch's opmath) and is rounded once at the end."""
    def forward(ctx, x, *rest):
        outs = fwd(ctx, x, *rest)
        dt = x.dtype
        if outs[0].dtype == dt:  # (the outputs come from the same arrays: one dtype)
            return outs
        ctx["dtypes"] = [None if a is None else a.dtype for a in (x, *rest)]
        return tuple(None if o is None else o.astype(dt) for o in outs)

    def backward(ctx, grads):
        gs = bwd(ctx, grads)
        dts = ctx.get("dtypes")
        if dts is None:
            return gs
        return tuple(g if g is None or d is None or g.dtype == d else g.astype(d)
                     for g, d in zip(gs, dts))

    return forward, backward


_CELLS = {mode: api.fused_op(name, *_same_dtypes(fwd, bwd), reference=_cell_reference(mode))
          for mode, name, fwd, bwd in (
              ("LSTM", "lstm_cell", _lstm_cell_fwd, _lstm_cell_bwd),
              ("GRU", "gru_cell", _gru_cell_fwd, _gru_cell_bwd),
              ("RNN_TANH", "rnn_tanh_cell", _rnn_cell_fwd(False), _rnn_cell_bwd(False)),
              ("RNN_RELU", "rnn_relu_cell", _rnn_cell_fwd(True), _rnn_cell_bwd(True)))}


def _cell_dims(name, input, hxs):
    if input.dim() not in (1, 2):
        raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
    for label, h in hxs:
        if h is not None and h.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {h.dim()}D instead")
    return input.dim() == 2


class RNNCell(RNNCellBase):
    """One Elman RNN step: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or ReLU)."""

    __constants__ = ["input_size", "hidden_size", "bias", "nonlinearity"]

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device,
                         dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        batched = _cell_dims("RNNCell", input, (("hidden", hx),))
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        if not batched:
            input = input.unsqueeze(0)
            hx = None if hx is None else hx.unsqueeze(0)
        h, _ = self._step("RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU", input,
                          hx, None)
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step: ``(h', c')`` from ``input`` and ``(h, c)``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device,
                         dtype=dtype)

    def forward(self, input: Tensor, hx=None) -> tuple:
        if input.dim() not in (1, 2):
            raise ValueError(f"LSTMCell: Expected input to be 1D or 2D, got {input.dim()}D "
                             "instead")
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got "
                                     f"{value.dim()}D instead")
        batched = input.dim() == 2
        h0 = c0 = None
        if hx is not None:
            if not batched:  # PyTorch indexes hx here (a longer sequence passes)
                h0, c0 = hx[0].unsqueeze(0), hx[1].unsqueeze(0)
            elif isinstance(hx, Tensor):
                raise TypeError("lstm_cell(): argument 'hx' (position 2) must be tuple of "
                                "Tensors, not Tensor")
            elif len(hx) != 2:
                raise RuntimeError("lstm_cell expects two hidden states")
            else:
                h0, c0 = hx
        if not batched:
            input = input.unsqueeze(0)
        h, c = self._step("LSTM", input, h0, c0)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step: ``h'`` from ``input`` and ``h``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device,
                         dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        batched = _cell_dims("GRUCell", input, (("hidden", hx),))
        if not batched:
            input = input.unsqueeze(0)
            hx = None if hx is None else hx.unsqueeze(0)
        h, _ = self._step("GRU", input, hx, None)
        return h if batched else h.squeeze(0)
