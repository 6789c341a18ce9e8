"""Fused CUDA kernels for the chains that dominate a training step: softmax and log-softmax
(forward and backward), layer norm (forward with the statistics its backward keeps, and
backward), GELU and its backward, and the Adam/AdamW update; and ``elementwise_chain``, one
kernel for a chain of elementwise ops that ``ember.compile`` generates (``_compile``'s
``_cuda_fusion``).

Each kernel is built with CuPy (``ElementwiseKernel``, ``ReductionKernel``, ``RawKernel``)
on first use and cached here (CuPy compiles it for each dtype it meets and keeps the binary
on disk), so importing this module imports no CuPy. The functions take and return CuPy
arrays; they record no graph and check no arguments: the ops in ``ember.ops`` call them on
the CUDA backend (``KERNELS`` maps their names to them) after their own checks. float16
computes in float32 and rounds once, as on the CPU; float32 and float64 in their own type.

One formula, two back ends. The per-element math is written once, below, as expressions
in the part of C that Python shares: names, integer literals, ``+ - * /``, comparisons,
calls of ``exp log sqrt erf tanh`` (and ``fabs pow`` in compile's fused chains) and of
``pick(c, a, b)`` (``c ? a : b``) and ``vmax`` (a maximum that propagates NaN, as
``numpy.maximum``), and ``A(...)``/``T(...)`` as
conversions to the compute and the array type. Constants are named (``CONSTANTS``), never
float literals, so that a float kernel stays in float. The kernels are generated from these
strings; the tests evaluate the same strings with NumPy against Ember's CPU ops, and run the
generated CUDA C compiled for the host (tests/core/test_cuda_kernels.py), so that the math,
the reductions and the indexing are checked without a GPU.
"""

from __future__ import annotations

import math
import re
import string

import numpy as np

__all__ = ["softmax", "softmax_backward", "layer_norm", "layer_norm_backward", "gelu",
           "gelu_backward", "adam_step_", "elementwise_chain", "KERNELS", "CONSTANTS", "GELU",
           "GELU_GRAD", "SOFTMAX", "LAYER_NORM", "adam_statements", "CHAIN_OPTIONS"]


# -- the formulas ------------------------------------------------------------------------------

CONSTANTS = {
    "K_HALF": 0.5,
    "K_SQRT1_2": 1.0 / math.sqrt(2.0),
    "K_GELU": math.sqrt(2.0 / math.pi),
    "K_GELU_C": 0.044715,
    "K_INV_SQRT_2PI": 1.0 / math.sqrt(2.0 * math.pi),
}

# elementwise kernels: statements ``(name, expression)`` run in order, per element
GELU = {
    "none": [("y", "K_HALF * x * (1 + erf(x * K_SQRT1_2))")],
    "tanh": [("y", "K_HALF * x * (1 + tanh(K_GELU * (x + K_GELU_C * x * x * x)))")],
}
GELU_GRAD = {
    "none": [("d", "K_HALF * (1 + erf(x * K_SQRT1_2)) + x * exp(x * x * -K_HALF) * K_INV_SQRT_2PI"),
             ("gx", "g * d")],
    "tanh": [("t", "tanh(K_GELU * (x + K_GELU_C * x * x * x))"),
             ("d", "K_HALF * (1 + t) + K_HALF * x * (1 - t * t)"
                   " * (K_GELU * (1 + 3 * K_GELU_C * x * x))"),
             ("gx", "g * d")],
}


def adam_statements(coupled_decay: bool, amsgrad: bool) -> list:
    """The Adam update of one element, as ``torch.optim.Adam``'s single-tensor form (and
    Ember's CPU optimizer) computes it; the scalars are prepared by ``adam_step_``."""
    g = "grad * gsign + wd * p" if coupled_decay else "grad * gsign"
    out = [
        ("p", "p * decay"),  # decoupled weight decay (AdamW); decay == 1 otherwise
        ("g", g),
        ("m", "pick(w1 < K_HALF, m + (g - m) * w1, g - (g - m) * w1c)"),  # m.lerp_(g, w1)
        ("v", "v * beta2 + g * g * b2c"),
    ]
    if amsgrad:
        out.append(("v_max", "vmax(v_max, v)"))
    out += [("denom", f"sqrt({'v_max' if amsgrad else 'v'}) / bc2 + eps"),
            ("p", "p - m / denom * step_size")]
    return out


# row kernels: the expressions that the CUDA templates below place in their loops
SOFTMAX = {
    "max": "vmax(m, x)",  # the running maximum m of a row
    "term": "exp(x - m)",  # summed into s
    "forward": "exp(x - m) / s",
    "log_forward": "x - m - log(s)",
    "grad_term": "g * y",  # summed into s; y is the softmax
    "grad": "g * y - y * s",
    "log_grad_term": "g",  # summed into s; y is the log-softmax
    "log_grad": "g - exp(y) * s",
}
LAYER_NORM = {
    "mean": "s / n",  # s: the row's sum, n: its length
    "centered": "x - mean",  # its square summed into q
    "rstd": "1 / sqrt(q / n + eps)",
    "normalized": "(x - mean) * rstd",
    "scaled": "y * w",
    "shifted": "y + b",
    # backward: gh is the gradient of the normalized value, summed into s1 (and gh * xhat
    # into s2); the weight's gradient sums weight_grad_term over the rows
    "grad_out": "g * w",
    "grad_term": "gh * xhat",
    "grad": "rstd * (gh - s1 / n - xhat * (s2 / n))",
    "weight_grad_term": "g * ((x - mean) * rstd)",
}


# -- CUDA source ---------------------------------------------------------------------------------

_PREAMBLE = """
template <typename U> __device__ __forceinline__ U pick(bool c, U a, U b) { return c ? a : b; }
template <typename U> __device__ __forceinline__ U vmax(U a, U b) {
    return (a > b || a != a) ? a : b;
}
"""

_ROW_SOURCE = string.Template(_PREAMBLE + r"""
typedef $ctype A;

__device__ __forceinline__ A ember_warp_sum(A v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ A ember_warp_max(A v) {
    for (int o = 16; o > 0; o >>= 1) v = vmax(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// The sum (MAX false) or maximum (MAX true) of v over the block, in every thread. blockDim.x
// is a multiple of 32; scratch (32 values) may be reused as soon as this returns.
template <bool MAX>
__device__ A ember_block_reduce(A v, A* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    v = MAX ? ember_warp_max(v) : ember_warp_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    if (warp == 0) {
        A r = scratch[lane < warps ? lane : 0];  // a partial maximum is neutral for MAX
        if (!MAX && lane >= warps) r = A(0);
        r = MAX ? ember_warp_max(r) : ember_warp_sum(r);
        if (lane == 0) scratch[0] = r;
    }
    __syncthreads();
    const A r = scratch[0];
    __syncthreads();
    return r;
}

// Softmax along an axis of a C-contiguous array seen as (outer, n, inner): one block per
// row (outer * inner rows), the row's elements inner apart.
extern "C" __global__ void ember_softmax_forward(const A* __restrict__ x_, A* __restrict__ y_,
                                                 long long n, long long inner, int log_softmax) {
    __shared__ A scratch[32];
    const long long r = blockIdx.x;
    const long long base = (r / inner) * n * inner + r % inner;
    A m = x_[base];
    for (long long k = threadIdx.x; k < n; k += blockDim.x) {
        const A x = x_[base + k * inner];
        m = ($softmax_max);
    }
    m = ember_block_reduce<true>(m, scratch);
    A s = 0;
    for (long long k = threadIdx.x; k < n; k += blockDim.x) {
        const A x = x_[base + k * inner];
        s += ($softmax_term);
    }
    s = ember_block_reduce<false>(s, scratch);
    for (long long k = threadIdx.x; k < n; k += blockDim.x) {
        const A x = x_[base + k * inner];
        y_[base + k * inner] = log_softmax ? ($softmax_log_forward) : ($softmax_forward);
    }
}

extern "C" __global__ void ember_softmax_backward(const A* __restrict__ y_,
                                                  const A* __restrict__ g_, A* __restrict__ gx_,
                                                  long long n, long long inner, int log_softmax) {
    __shared__ A scratch[32];
    const long long r = blockIdx.x;
    const long long base = (r / inner) * n * inner + r % inner;
    A s = 0;
    for (long long k = threadIdx.x; k < n; k += blockDim.x) {
        const A y = y_[base + k * inner], g = g_[base + k * inner];
        s += log_softmax ? ($softmax_log_grad_term) : ($softmax_grad_term);
    }
    s = ember_block_reduce<false>(s, scratch);
    for (long long k = threadIdx.x; k < n; k += blockDim.x) {
        const A y = y_[base + k * inner], g = g_[base + k * inner];
        gx_[base + k * inner] = log_softmax ? ($softmax_log_grad) : ($softmax_grad);
    }
}

// Layer norm over the last n elements of each row of a C-contiguous array (one block per
// row); mean_ and rstd_ get one value per row. w_/b_ are read only when has_w/has_b.
extern "C" __global__ void ember_layer_norm_forward(
        const A* __restrict__ x_, const A* __restrict__ w_, const A* __restrict__ b_,
        A* __restrict__ y_, A* __restrict__ mean_, A* __restrict__ rstd_, long long n, A eps,
        int has_w, int has_b) {
    __shared__ A scratch[32];
    const long long row = blockIdx.x, base = row * n;
    A s = 0;
    for (long long k = threadIdx.x; k < n; k += blockDim.x) s += x_[base + k];
    s = ember_block_reduce<false>(s, scratch);
    const A mean = ($ln_mean);
    A q = 0;
    for (long long k = threadIdx.x; k < n; k += blockDim.x) {
        const A x = x_[base + k];
        const A xc = ($ln_centered);
        q += xc * xc;
    }
    q = ember_block_reduce<false>(q, scratch);
    const A rstd = ($ln_rstd);
    if (threadIdx.x == 0) {
        mean_[row] = mean;
        rstd_[row] = rstd;
    }
    for (long long k = threadIdx.x; k < n; k += blockDim.x) {
        const A x = x_[base + k];
        A y = ($ln_normalized);
        if (has_w) {
            const A w = w_[k];
            y = ($ln_scaled);
        }
        if (has_b) {
            const A b = b_[k];
            y = ($ln_shifted);
        }
        y_[base + k] = y;
    }
}

// The gradient of the normalized value (the weight's product with the output's gradient).
__device__ __forceinline__ A ember_ln_grad_out(A g, const A* __restrict__ w_, long long k,
                                               int has_w) {
    if (!has_w) return g;
    const A w = w_[k];
    return ($ln_grad_out);
}

// The input's gradient of layer norm, one block per row.
extern "C" __global__ void ember_layer_norm_backward(
        const A* __restrict__ g_, const A* __restrict__ x_, const A* __restrict__ mean_,
        const A* __restrict__ rstd_, const A* __restrict__ w_, A* __restrict__ gx_,
        long long n, int has_w) {
    __shared__ A scratch[32];
    const long long row = blockIdx.x, base = row * n;
    const A mean = mean_[row], rstd = rstd_[row];
    A s1 = 0, s2 = 0;
    for (long long k = threadIdx.x; k < n; k += blockDim.x) {
        const A g = g_[base + k], x = x_[base + k];
        const A xhat = ($ln_normalized);
        const A gh = ember_ln_grad_out(g, w_, k, has_w);
        s1 += gh;
        s2 += ($ln_grad_term);
    }
    s1 = ember_block_reduce<false>(s1, scratch);
    s2 = ember_block_reduce<false>(s2, scratch);
    for (long long k = threadIdx.x; k < n; k += blockDim.x) {
        const A g = g_[base + k], x = x_[base + k];
        const A xhat = ($ln_normalized);
        const A gh = ember_ln_grad_out(g, w_, k, has_w);
        gx_[base + k] = ($ln_grad);
    }
}
""")


def row_source(ctype: str) -> str:
    """The CUDA source of the row kernels (softmax, layer norm) for compute type ``ctype``."""
    formulas = {f"softmax_{k}": v for k, v in SOFTMAX.items()}
    formulas.update({f"ln_{k}": v for k, v in LAYER_NORM.items()})
    return _ROW_SOURCE.substitute(ctype=ctype, **formulas)


def elementwise_body(acc: str, reads, statements, writes) -> str:
    """The body of an ``ElementwiseKernel`` running ``statements`` in compute type ``acc``:
    the array parameters are named with a trailing ``_`` (``x_``); ``reads`` are converted to
    ``A`` first, ``writes`` converted back to ``T`` last."""
    text = " ".join(expr for _, expr in statements)
    lines = [f"typedef {acc} A;"]
    lines += [f"const A {name} = A({value!r});" for name, value in CONSTANTS.items()
              if re.search(rf"\b{name}\b", text)]
    declared = set(reads)
    lines += [f"A {name} = A({name}_);" for name in reads]
    for name, expr in statements:
        lines.append(f"{name} = {expr};" if name in declared else f"A {name} = {expr};")
        declared.add(name)
    lines += [f"{name}_ = T({name});" for name in writes]
    return "\n".join(lines)


# -- building and caching ---------------------------------------------------------------------

_CACHE: dict = {}


def _cupy():
    import cupy

    return cupy


def _compiled(key, build):
    """The kernel cached under ``key``, built by ``build()`` on first use."""
    kernel = _CACHE.get(key)
    if kernel is None:
        kernel = _CACHE[key] = build()
    return kernel


def _acc(dtype) -> str:
    """The compute type of a float dtype: double for float64, float otherwise."""
    if dtype.kind != "f":
        raise TypeError(f"CUDA kernels take floating-point arrays, not {dtype}")
    return "double" if dtype == np.float64 else "float"


def _scalar_dtype(acc: str):
    return np.float64 if acc == "double" else np.float32


def _elementwise(name, acc, inputs, outputs, statements, scalars=(), inplace=(), options=()):
    """An ``ElementwiseKernel``: ``inputs`` arrays (read), then the ``scalars`` (in the compute
    type), then ``outputs`` arrays (written; those also in ``inplace`` read first);
    ``options``: NVRTC's, when given."""
    sdt = np.dtype(_scalar_dtype(acc)).name
    in_params = ", ".join([f"T {a}_" for a in inputs] + [f"{sdt} {s}" for s in scalars])
    out_params = ", ".join(f"T {a}_" for a in outputs)
    body = elementwise_body(acc, [*inputs, *inplace], statements, outputs)
    extra = {"options": tuple(options)} if options else {}
    return _cupy().ElementwiseKernel(in_params, out_params, body, f"ember_{name}_{acc}",
                                     preamble=_PREAMBLE, **extra)


def _row_kernel(name: str, acc: str):
    return _compiled(("row", name, acc),
                     lambda: _cupy().RawKernel(row_source(acc), f"ember_{name}"))


def _block(n: int) -> int:
    """Threads per block for rows of ``n`` elements: a power of two in [32, 512]."""
    return min(512, max(32, 1 << max(n - 1, 0).bit_length()))


def _working(x):
    """``x`` C-contiguous in its compute dtype (float16 as float32)."""
    cp = _cupy()
    if x.dtype == np.float16:
        return x.astype(cp.float32, order="C")
    return cp.ascontiguousarray(x)


def _as(arr, dtype):
    return arr.astype(dtype, copy=False)


# -- softmax -----------------------------------------------------------------------------------

def _rows_along(shape, axis: int):
    """``(rows, n, inner)`` of a C-contiguous array of ``shape`` seen along ``axis``."""
    n = shape[axis]
    inner = math.prod(shape[axis + 1:])
    return math.prod(shape) // n, n, inner


def softmax(x, axis: int, log: bool = False):
    """``softmax(x)`` (``log_softmax`` with ``log``) along ``axis``, as ``ember.softmax``."""
    cp = _cupy()
    if x.ndim == 0:
        return cp.zeros_like(x) if log else cp.ones_like(x)
    if x.size == 0:
        return x.copy()
    axis %= x.ndim
    work = _working(x)
    rows, n, inner = _rows_along(work.shape, axis)
    y = cp.empty_like(work)
    kernel = _row_kernel("softmax_forward", _acc(work.dtype))
    kernel((rows,), (_block(n),), (work, y, np.int64(n), np.int64(inner), np.int32(log)))
    return _as(y, x.dtype)


def softmax_backward(y, grad, axis: int, log: bool = False):
    """The input's gradient of ``y = softmax(x, axis)`` (``log_softmax`` with ``log``) for
    the output's gradient ``grad``."""
    cp = _cupy()
    if y.ndim == 0 or y.size == 0:  # one element (or none): the sum is the element
        return grad - cp.exp(y) * grad if log else grad * y - y * (grad * y)
    axis %= y.ndim
    wy, wg = _working(y), _working(grad)
    rows, n, inner = _rows_along(wy.shape, axis)
    gx = cp.empty_like(wy)
    kernel = _row_kernel("softmax_backward", _acc(wy.dtype))
    kernel((rows,), (_block(n),), (wy, wg, gx, np.int64(n), np.int64(inner), np.int32(log)))
    return _as(gx, y.dtype)


# -- layer norm --------------------------------------------------------------------------------

def _norm_dims(x, normalized_ndim: int):
    lead, norm = x.shape[:x.ndim - normalized_ndim], x.shape[x.ndim - normalized_ndim:]
    return lead, norm, math.prod(lead), math.prod(norm)


def _param(p, like, n: int):
    """``(array, present)`` for an optional weight or bias: flat in ``like``'s dtype, or
    ``like`` itself as a placeholder the kernel does not read."""
    if p is None:
        return like, np.int32(0)
    return _working(p).reshape(n).astype(like.dtype, copy=False), np.int32(1)


def layer_norm(x, weight, bias, eps: float, normalized_ndim: int):
    """Layer norm over the last ``normalized_ndim`` dims of ``x``: ``(y, mean, rstd)``, the
    statistics shaped as ``x`` with those dims kept as 1 (what the CPU kernel keeps for the
    backward), all in ``x``'s dtype. ``weight``/``bias``: None or the normalized shape."""
    cp = _cupy()
    lead, _, rows, n = _norm_dims(x, normalized_ndim)
    stat_shape = lead + (1,) * normalized_ndim
    if x.size == 0:  # empty normalized dims: NaN statistics, as 0/0 gives on the CPU
        nan = cp.full(stat_shape, np.nan, dtype=x.dtype)
        return cp.empty_like(x), nan, nan.copy()
    work = _working(x)
    w, has_w = _param(weight, work, n)
    b, has_b = _param(bias, work, n)
    y = cp.empty_like(work)
    mean = cp.empty(rows, dtype=work.dtype)
    rstd = cp.empty(rows, dtype=work.dtype)
    acc = _acc(work.dtype)
    kernel = _row_kernel("layer_norm_forward", acc)
    kernel((rows,), (_block(n),), (work, w, b, y, mean, rstd, np.int64(n),
                                   _scalar_dtype(acc)(eps), has_w, has_b))
    return (_as(y, x.dtype), _as(mean.reshape(stat_shape), x.dtype),
            _as(rstd.reshape(stat_shape), x.dtype))


def _weight_grad_kernel(acc: str):
    expr = LAYER_NORM["weight_grad_term"]
    return _compiled(("layer_norm_weight_grad", acc), lambda: _cupy().ReductionKernel(
        "T g, T x, T mean, T rstd", "T gw", expr, "a + b", "gw = a", "0",
        f"ember_layer_norm_weight_grad_{acc}", reduce_type=acc))


def layer_norm_backward(grad, x, mean, rstd, weight, normalized_ndim: int, *,
                        need_input: bool = True, need_weight: bool = False,
                        need_bias: bool = False):
    """Gradients ``(input, weight, bias)`` of ``layer_norm`` for the output's gradient
    ``grad``, from the ``mean``/``rstd`` it returned (None where not needed)."""
    cp = _cupy()
    _, norm, rows, n = _norm_dims(x, normalized_ndim)
    if x.size == 0:
        zeros = cp.zeros(norm, dtype=x.dtype)
        return (cp.zeros_like(x) if need_input else None,
                zeros if need_weight else None, zeros.copy() if need_bias else None)
    wx, wg = _working(x), _working(grad)
    dt = wx.dtype
    mean1, rstd1 = _as(mean.reshape(rows), dt), _as(rstd.reshape(rows), dt)
    acc = _acc(dt)
    gx = gw = gb = None
    if need_input:
        w, has_w = _param(weight, wx, n)
        gx = cp.empty_like(wx)
        kernel = _row_kernel("layer_norm_backward", acc)
        kernel((rows,), (_block(n),), (wg, wx, cp.ascontiguousarray(mean1),
                                       cp.ascontiguousarray(rstd1), w, gx, np.int64(n), has_w))
        gx = _as(gx, x.dtype)
    g2 = wg.reshape(rows, n)
    if need_weight:
        full = (rows, n)
        gw = _weight_grad_kernel(acc)(g2, wx.reshape(full),
                                      cp.broadcast_to(mean1.reshape(rows, 1), full),
                                      cp.broadcast_to(rstd1.reshape(rows, 1), full), axis=0)
        gw = _as(gw.reshape(norm), x.dtype)
    if need_bias:
        gb = _as(g2.sum(axis=0).reshape(norm), x.dtype)
    return gx, gw, gb


# -- GELU --------------------------------------------------------------------------------------

def gelu(x, approximate: str = "none"):
    """``gelu(x)`` (``approximate``: ``'none'``, the erf form, or ``'tanh'``)."""
    acc = _acc(x.dtype)
    kernel = _compiled(("gelu", approximate, acc), lambda: _elementwise(
        f"gelu_{approximate}", acc, ["x"], ["y"], GELU[approximate]))
    return kernel(x)


def gelu_backward(grad, x, approximate: str = "none"):
    """The input's gradient of ``gelu(x)`` for the output's gradient ``grad``."""
    acc = _acc(x.dtype)
    kernel = _compiled(("gelu_backward", approximate, acc), lambda: _elementwise(
        f"gelu_backward_{approximate}", acc, ["x", "g"], ["gx"], GELU_GRAD[approximate]))
    return kernel(x, grad)


# -- Adam --------------------------------------------------------------------------------------

_ADAM_SCALARS = ("decay", "gsign", "wd", "w1", "w1c", "beta2", "b2c", "bc2", "eps", "step_size")


def _adam_kernel(coupled_decay: bool, amsgrad: bool, acc: str):
    scalars = [s for s in _ADAM_SCALARS if coupled_decay or s != "wd"]
    state = ["p", "m", "v"] + (["v_max"] if amsgrad else [])
    name = f"adam{'_l2' if coupled_decay else ''}{'_amsgrad' if amsgrad else ''}"
    return _compiled(("adam", coupled_decay, amsgrad, acc), lambda: _elementwise(
        name, acc, ["grad"], state, adam_statements(coupled_decay, amsgrad), scalars,
        inplace=state))


def adam_step_(param, grad, exp_avg, exp_avg_sq, *, lr: float, beta1: float, beta2: float,
               eps: float, weight_decay: float, step: float, max_exp_avg_sq=None,
               maximize: bool = False, decoupled: bool = False) -> None:
    """One Adam update of ``param`` in place, with its state ``exp_avg``, ``exp_avg_sq`` (and
    ``max_exp_avg_sq`` for AMSGrad), in one kernel. ``step`` is the step count after this
    step (the caller increments it); ``decoupled``: AdamW's weight decay."""
    decoupled_decay = decoupled and weight_decay != 0
    coupled_decay = weight_decay != 0 and not decoupled
    amsgrad = max_exp_avg_sq is not None
    kernel = _adam_kernel(coupled_decay, amsgrad, _acc(param.dtype))
    w1 = 1 - beta1
    values = {
        "decay": 1 - lr * weight_decay if decoupled_decay else 1.0,
        "gsign": -1.0 if maximize else 1.0,
        "wd": weight_decay,
        "w1": w1,
        "w1c": 1 - w1,
        "beta2": beta2,
        "b2c": 1 - beta2,
        "bc2": (1 - beta2**step) ** 0.5,
        "eps": eps,
        "step_size": lr / (1 - beta1**step),
    }
    scalars = [float(values[s]) for s in _ADAM_SCALARS if coupled_decay or s != "wd"]
    state = [param, exp_avg, exp_avg_sq] + ([max_exp_avg_sq] if amsgrad else [])
    kernel(grad, *scalars, *state)


# -- elementwise chains (ember.compile) -----------------------------------------------------

#: NVRTC options of a chain kernel: no contraction of a product and a sum into one fused
#: multiply-add, so that each operation rounds as the ops run one by one do (CuPy's ufuncs,
#: NumPy's) and a fused chain equals its unfused sequence
CHAIN_OPTIONS = ("--fmad=false",)


def elementwise_chain(name: str, dtype, inputs, scalars, outputs, statements, inplace=()):
    """The ``ElementwiseKernel`` of a chain of elementwise ops on arrays of ``dtype`` (float16,
    float32 or float64), built on first use and cached per signature (its names and
    statements) and compute type. Call it as ``kernel(*inputs, *scalars, *outputs)``: the
    input arrays (broadcast to the outputs' shape), the scalars (Python floats, converted to
    the compute type), then the output arrays, all of ``dtype``. ``statements`` are
    ``(name, expression)`` pairs in the formula language above, run per element in the compute
    type (float16 in float32); an output named in ``inplace`` is also read first, under its
    own name. ``name`` (an identifier) names the kernel in profiles."""
    if not name.isidentifier():
        raise ValueError(f"elementwise_chain: the kernel name must be an identifier, got {name!r}")
    acc = _acc(np.dtype(dtype))
    key = ("chain", name, tuple(inputs), tuple(scalars), tuple(outputs), tuple(inplace),
           tuple(statements), acc)
    return _compiled(key, lambda: _elementwise(name, acc, inputs, outputs, statements, scalars,
                                               inplace, options=CHAIN_OPTIONS))


KERNELS = {
    "softmax": softmax,
    "softmax_backward": softmax_backward,
    "layer_norm": layer_norm,
    "layer_norm_backward": layer_norm_backward,
    "gelu": gelu,
    "gelu_backward": gelu_backward,
    "adam_step_": adam_step_,
    "elementwise_chain": elementwise_chain,
}
