"""Convolution, pooling and grid sampling (``ember/ops/conv.py``, ``pooling.py``,
``grid.py``): ``conv{1,2,3}d`` and their transposes, ``im2col``/``col2im`` (``F.unfold`` and
``F.fold``), max/average/adaptive/power-average pooling and max unpooling in 1, 2 and 3 dims,
fractional max pooling, ``grid_sample`` with the ``torch.grid_sampler*`` functions under it
and ``affine_grid``.

Samples cover the arguments PyTorch users pass: ints and per-dim tuples for kernel, stride,
padding and dilation, ``groups`` (grouped and depthwise), ``padding='same'`` (odd and even
kernels) and ``'valid'``, ``output_padding``, ``ceil_mode``, ``count_include_pad``,
``divisor_override``, ``return_indices``, ``output_size``/``output_ratio``, every
interpolation and padding mode with and without ``align_corners``; batched, unbatched,
empty-batch and non-contiguous inputs. Inputs are small (gradcheck's cost grows with their
size). Max pooling of every kind sees inputs without ties, so that finite differences never
cross a point where the picked element changes; ties and NaNs (PyTorch's first maximum, its
last NaN) are compared in forward-only samples. ``max_unpool`` gets indices that never
repeat (one position per non-overlapping window), as a max pool's would be.

NumPy has none of these functions: PyTorch is the oracle. The fractional max pools are random
only through ``_random_samples``, which every sample passes, so their results are exact.
Samples that expose an open bug in ember are held back, each named in ``_BUGS``.
"""

from __future__ import annotations

import itertools

import numpy as np

from . import FLOAT, SampleInput, SeedStream, define, make
from .reductions import distinct

_HALF = FLOAT + ("float16",)
_INTS = ("uint8", "int8", "int16", "int32", "int64")
_SEEDS = SeedStream(20_000)

#: Open bugs in ember. The generic tests skip a check for a whole op, never for one sample
#: or one dtype, so the samples (or dtypes) that expose these are held back instead, each
#: where it would be yielded (``_open(key)``); delete an entry once fixed to test it again.
_BUGS: dict[str, str] = {}


def _open(key: str) -> bool:
    """Whether bug ``key`` is still open (its samples held back)."""
    return key in _BUGS


def _per(n, values):
    """The first ``n`` of per-dim ``values`` (a tuple argument of an ``n``-d op)."""
    return tuple(values[:n])


def _is_float(dtype):
    return dtype.startswith("float")


def _ties(shape, dtype, device):
    """A forward-only ``(N, C, *spatial)`` input full of ties (values 0, 1, 2) with a block of
    zeros in each plane's first corner (a padded window there holds nothing but ties with
    the lowest value): PyTorch's max pooling keeps the first maximum of a window, and its
    index."""
    rng = np.random.default_rng(next(_SEEDS))
    arr = rng.integers(0, 3, size=shape)
    arr[(Ellipsis,) + (slice(0, 2),) * (len(shape) - 2)] = 0
    return _tensor_of(arr, dtype, device)


def _nans(shape, dtype, device, every=5):
    """A forward-only float input with NaN at every ``every``-th element: max pooling
    propagates NaN (and, with indices, points at the last NaN of a window)."""
    arr = make(shape, dtype).numpy().copy()
    arr.reshape(-1)[::every] = np.nan
    return _tensor_of(arr, dtype, device)


def _tensor_of(arr, dtype, device):
    import ember

    return ember.tensor(np.asarray(arr).astype(dtype), device=device)


def _forward_only(requires_grad, dtype, shape, device, *args, ties=True, nans=True,
                  **kwargs):
    """Samples with ties and NaNs (not differentiable there): only when not differentiating."""
    if requires_grad:
        return
    if ties:
        yield SampleInput(_ties(shape, dtype, device), *args, name="ties (forward only)",
                          **kwargs)
    if nans and _is_float(dtype):
        yield SampleInput(_nans(shape, dtype, device), *args, name="NaNs (forward only)",
                          **kwargs)


# -- max pooling ----------------------------------------------------------------------------

#: (N, C) and spatial sizes of pooling inputs, by dimensionality
_NC = {1: (2, 3), 2: (2, 2), 3: (1, 2)}
_POOL_X = {1: (9,), 2: (5, 6), 3: (3, 3, 4)}


def _pool_input(maker, n, sizes, dtype, device, requires_grad):
    """``(x, N, C, X)``: ``x(shape=(N, C) + X, **kw)`` makes an input of a pooling op of ``n``
    spatial dims (``X = sizes[n]``) with ``maker`` (``make``, or ``distinct`` for max pooling,
    whose gradient needs one maximum per window)."""
    N, C = _NC[n]
    X = sizes[n]

    def x(shape=(N, C) + X, **kw):
        return maker(shape, dtype, device, requires_grad=requires_grad, **kw)

    return x, N, C, X


def _max_pool_samples(n, return_indices_kw=True):
    """``max_pool{n}d``: ``(input, kernel_size, stride, padding, dilation, ceil_mode)``."""

    def samples(device, dtype, requires_grad=False):
        x, N, C, X = _pool_input(distinct, n, _POOL_X, dtype, device, requires_grad)
        yield SampleInput(x(), 2, name="kernel 2")
        yield SampleInput(x(), 3, 2, 1, name="kernel 3, stride 2, padding 1")
        yield SampleInput(x(), kernel_size=2, stride=1, dilation=2, name="dilation 2")
        yield SampleInput(x(), 2, ceil_mode=True, name="ceil_mode")
        yield SampleInput(x(), 3, 2, 1, 1, True, name="ceil_mode, padding (positional)")
        yield SampleInput(x(), _per(n, (3, 2, 2)), stride=_per(n, (2, 1, 2)),
                          padding=_per(n, (1, 0, 1)), dilation=_per(n, (1, 2, 1)),
                          name="per-dim tuples")
        yield SampleInput(x(), [2] * n, stride=[], name="list kernel, stride=[]")
        yield SampleInput(x((C,) + X), 2, name="unbatched")
        yield SampleInput(x(noncontiguous=True), 2, 1, name="noncontiguous")
        yield SampleInput(x((0, C) + X), 2, name="empty batch")
        if return_indices_kw:
            yield SampleInput(x(), 3, 2, 1, return_indices=True, name="return_indices")
            yield SampleInput(x((C,) + X), 2, return_indices=True,
                              name="unbatched, return_indices")
        kw = {"return_indices": True} if return_indices_kw else {}
        # padded windows of uint8 ties: their maximum (0) equals the padding fill, and the
        # index is still the first in-bounds one
        yield from _forward_only(requires_grad, dtype, (N, C) + X, device, 3, 1, 1, **kw)
        yield from _forward_only(requires_grad, dtype, (N, C) + X, device, 2, **kw)

    return samples


def _values(r):
    """The values of a ``(values, indices)`` result (the indices do not differentiate)."""
    return r[0] if isinstance(r, tuple) else r


# -- average pooling ------------------------------------------------------------------------

def _avg_pool_samples(n):
    """``avg_pool{n}d``: ``(input, kernel_size, stride, padding, ceil_mode,
    count_include_pad[, divisor_override])``."""

    def samples(device, dtype, requires_grad=False):
        x, N, C, X = _pool_input(make, n, _POOL_X, dtype, device, requires_grad)
        yield SampleInput(x(), 2, name="kernel 2")
        yield SampleInput(x(), 3, 2, 1, name="padding, count_include_pad")
        yield SampleInput(x(), 3, 2, 1, count_include_pad=False, name="padding, pad excluded")
        yield SampleInput(x(), 2, ceil_mode=True, name="ceil_mode")
        yield SampleInput(x(), 3, 2, 1, True, False, name="ceil_mode, padding, pad excluded")
        yield SampleInput(x(), 3, 2, 1, True, True, name="ceil_mode, padding, pad included")
        yield SampleInput(x(), _per(n, (3, 2, 2)), stride=_per(n, (2, 1, 2)),
                          padding=_per(n, (1, 0, 1)), name="per-dim tuples")
        yield SampleInput(x(), 3, stride=1, name="overlapping windows")
        if n > 1:  # avg_pool1d has no divisor_override
            yield SampleInput(x(), 2, 1, divisor_override=3, name="divisor_override")
            yield SampleInput(x(), 3, 2, 1, True, divisor_override=2,
                              name="divisor_override, ceil_mode, padding")
        yield SampleInput(x((C,) + X), 2, name="unbatched")
        yield SampleInput(x(noncontiguous=True), 2, 1, name="noncontiguous")
        yield SampleInput(x((0, C) + X), 2, name="empty batch")

    return samples


# -- adaptive pooling -----------------------------------------------------------------------

_ADAPTIVE_X = {1: (8,), 2: (4, 6), 3: (2, 3, 4)}


def _adaptive_samples(n, distinct_values, return_indices_kw=False):
    """``adaptive_{avg,max}_pool{n}d(input, output_size)``: dividing and non-dividing
    sizes, outputs larger than the input (overlapping windows), ``None`` entries, global
    pooling."""

    def samples(device, dtype, requires_grad=False):
        x, N, C, X = _pool_input(distinct if distinct_values else make, n, _ADAPTIVE_X, dtype,
                                 device, requires_grad)
        yield SampleInput(x(), 2, name="int, dividing")
        yield SampleInput(x(), _per(n, (3, 4, 3)), name="tuple, not dividing")
        yield SampleInput(x(), _per(n, (11, 5, 5)), name="larger than the input")
        yield SampleInput(x(), 1, name="global")
        if n > 1:
            yield SampleInput(x(), (None,) + _per(n - 1, (3, 2)), name="None keeps a size")
        else:
            yield SampleInput(x(), [3], name="list")
        yield SampleInput(x((C,) + X), 3, name="unbatched")
        yield SampleInput(x(noncontiguous=True), _per(n, (3, 2, 3)), name="noncontiguous")
        yield SampleInput(x((0, C) + X), 2, name="empty batch")
        if return_indices_kw:
            yield SampleInput(x(), 3, return_indices=True, name="return_indices")
            yield SampleInput(x((C,) + X), _per(n, (3, 2, 3)), return_indices=True,
                              name="unbatched, return_indices")
        if distinct_values:
            kw = {"return_indices": True} if return_indices_kw else {}
            yield from _forward_only(requires_grad, dtype, (N, C) + X, device,
                                     _per(n, (3, 4, 3)), **kw)
            # several NaNs in one window: the index is the last NaN's
            yield from _forward_only(requires_grad, dtype, (N, C) + X, device,
                                     _per(n, (2, 2, 1)), ties=False, **kw)

    return samples


# -- max unpooling --------------------------------------------------------------------------

def _unpool_indices(lead, ys, xs, k, s, p, seed):
    """Flat plane indices of one position per window (``s >= k``: windows never overlap,
    so no index repeats), inside the plane of size ``xs``."""
    n = len(ys)
    rng = np.random.default_rng(seed)
    idx = np.zeros(tuple(lead) + tuple(ys), dtype=np.int64)
    for i in range(n):
        start = np.arange(ys[i]) * s[i] - p[i]
        lo, hi = np.maximum(start, 0), np.minimum(start + k[i], xs[i])
        shape = [1] * (len(lead) + n)
        shape[len(lead) + i] = ys[i]
        pos = rng.integers(lo.reshape(shape), hi.reshape(shape), size=idx.shape)
        idx = idx * xs[i] + pos
    return idx


def _max_unpool_samples(n):
    """``max_unpool{n}d(input, indices, kernel_size, stride, padding, output_size)``."""

    def samples(device, dtype, requires_grad=False):
        import ember

        N, C = _NC[n]
        Y = _per(n, (4, 3, 2))

        def case(lead, k, s, p, out=None, noncontiguous=False):
            """Values of shape ``(*lead, *Y)`` and their unpooling indices."""
            default = tuple((Y[i] - 1) * s[i] - 2 * p[i] + k[i] for i in range(n))
            xs = default if out is None else tuple(out)[-n:]
            idx = _unpool_indices(lead, Y, xs, k, s, p, next(_SEEDS))
            v = make(tuple(lead) + Y, dtype, device, requires_grad=requires_grad,
                     noncontiguous=noncontiguous)
            return v, ember.tensor(idx, device=device)

        two, zero = (2,) * n, (0,) * n
        yield SampleInput(*case((N, C), two, two, zero), 2, name="kernel 2")
        yield SampleInput(*case((N, C), (3,) * n, (3,) * n, (1,) * n), 3, 3, 1,
                          name="kernel 3, padding 1")
        out = tuple(v + 1 for v in _per(n, (8, 6, 4)))
        yield SampleInput(*case((N, C), two, two, zero, out), 2, output_size=out,
                          name="larger output_size")
        yield SampleInput(*case((N, C), two, two, zero, out), 2, output_size=[N, C, *out],
                          name="output_size with batch and channels")
        k, st = _per(n, (2, 3, 2)), _per(n, (3, 3, 2))
        yield SampleInput(*case((N, C), k, st, zero), k, st,
                          name="per-dim tuples, stride > kernel")
        yield SampleInput(*case((C,), two, two, zero), 2, name="unbatched")
        yield SampleInput(*case((N, C), two, two, zero, noncontiguous=True), 2,
                          name="noncontiguous")
        yield SampleInput(*case((0, C), two, two, zero), 2, name="empty batch")

    return samples


# -- power-average pooling ------------------------------------------------------------------

def _lp_pool_samples(n):
    """``lp_pool{n}d(input, norm_type, kernel_size, stride, ceil_mode)``: inputs positive
    where ``norm_type`` is odd or fractional (a window sum of odd powers may be negative,
    and its root is then NaN in both libraries)."""

    def samples(device, dtype, requires_grad=False):
        N, C = _NC[n]
        X = _POOL_X[n]

        def x(shape=(N, C) + X, positive=True, **kw):
            return make(shape, dtype, device, low=0.5 if positive else -3, high=2.5,
                        requires_grad=requires_grad, **kw)

        yield SampleInput(x(positive=False), 2, 2, name="p=2, kernel 2, signed input")
        yield SampleInput(x(), 1, 3, 2, name="p=1, kernel 3, stride 2")
        yield SampleInput(x(), 3, 2, ceil_mode=True, name="p=3, ceil_mode")
        # (lp_pool1d takes an int kernel only: PyTorch multiplies by kernel_size)
        yield SampleInput(x(), 1.5, _per(n, (3, 2, 2)) if n > 1 else 3,
                          _per(n, (2, 1, 2)), name="p=1.5, per-dim tuples")
        yield SampleInput(x(), 2.0, 2, stride=1, name="overlapping windows")
        yield SampleInput(x((C,) + X), 2, 2, name="unbatched")
        yield SampleInput(x(noncontiguous=True), 2, 2, name="noncontiguous")
        yield SampleInput(x((0, C) + X), 2, 2, name="empty batch")

    return samples


# -- fractional max pooling -----------------------------------------------------------------

_FRACTIONAL_X = {2: (6, 7), 3: (4, 5, 5)}


def _fractional_samples(n, return_indices_kw=True):
    """``fractional_max_pool{n}d(input, kernel_size, output_size, output_ratio,
    return_indices, _random_samples)``, with ``_random_samples`` (``(N, C, n)`` in [0, 1))
    always given."""

    def samples(device, dtype, requires_grad=False):
        N, C = (2, 2) if n == 2 else (1, 1)
        X = _FRACTIONAL_X[n]

        def x(shape=(N, C) + X, **kw):
            return distinct(shape, dtype, device, requires_grad=requires_grad, **kw)

        def u(rows=N, channels=C):
            return make((rows, channels, n), dtype, device, low=0, high=1)

        small = 3 if n == 2 else 2
        yield SampleInput(x(), 2, output_size=small, _random_samples=u(), name="output_size int")
        yield SampleInput(x(), (2, 3) if n == 2 else (2, 2, 3),
                          output_size=(4, 3) if n == 2 else (2, 3, 2), _random_samples=u(),
                          name="per-dim tuples")
        # a number as output_ratio: PyTorch's fractional_max_pool2d takes len() of it
        yield SampleInput(x(), 2, output_ratio=0.5 if n == 3 else (0.5, 0.5),
                          _random_samples=u(), name="output_ratio")
        yield SampleInput(x(), 2, None, (0.5, 0.7) if n == 2 else (0.5, 0.6, 0.5),
                          _random_samples=u(), name="output_ratio tuple (positional)")
        yield SampleInput(x((C,) + X), 2, small, _random_samples=u(1),
                          name="unbatched")
        yield SampleInput(x(noncontiguous=True), 2, small, _random_samples=u(),
                          name="noncontiguous")
        yield SampleInput(x(), 3, output_size=1 if n == 2 else (1, 2, 2), _random_samples=u(),
                          name="kernel 3")
        yield SampleInput(x((0, C) + X), 2, small, _random_samples=u(0), name="empty batch")
        if return_indices_kw:
            yield SampleInput(x(), 2, small, return_indices=True, _random_samples=u(),
                              name="return_indices")
        kw = {"return_indices": True} if return_indices_kw else {}
        yield from _forward_only(requires_grad, dtype, (N, C) + X, device, 2, small,
                                 _random_samples=u(), **kw)

    return samples


# -- convolution ----------------------------------------------------------------------------

_CONV_X = {1: (7,), 2: (4, 4), 3: (3, 3, 4)}
_CONV_K = {1: (3,), 2: (2, 3), 3: (2, 2, 3)}
_CONV_NC = {1: (2, 2), 2: (2, 2), 3: (1, 2)}


def _conv_samples(n):
    """``conv{n}d(input, weight, bias, stride, padding, dilation, groups)``."""

    def samples(device, dtype, requires_grad=False):
        N, C = _CONV_NC[n]
        X, K = _CONV_X[n], _CONV_K[n]

        def t(shape, **kw):
            return make(shape, dtype, device, requires_grad=requires_grad, **kw)

        yield SampleInput(t((N, C) + X), t((3, C) + K), t((3,)), name="bias")
        yield SampleInput(t((N, C) + X), t((3, C) + K), None, 2, 1,
                          name="no bias, stride 2, padding 1")
        yield SampleInput(t((N, C) + X), t((2, C) + K), t((2,)), stride=_per(n, (2, 1, 2)),
                          padding=_per(n, (1, 1, 2)), dilation=_per(n, (1, 2, 1)),
                          name="per-dim tuples")
        yield SampleInput(t((N, C) + X), t((2, C) + K), padding="same", dilation=2,
                          name="padding='same', dilation 2")
        yield SampleInput(t((N, C) + X), t((2, C) + _per(n, (4, 2, 2))), t((2,)),
                          padding="same", name="padding='same', even kernel")
        yield SampleInput(t((N, C) + X), t((2, C) + K), t((2,)), padding="valid",
                          name="padding='valid'")
        yield SampleInput(t((1, 4) + X), t((4, 2) + K), t((4,)), groups=2, name="groups 2")
        yield SampleInput(t((1, 2) + X), t((4, 1) + K), t((4,)), 1, 1, 1, 2,
                          name="depthwise, channel multiplier 2 (positional)")
        yield SampleInput(t((C,) + X), t((3, C) + K), t((3,)), name="unbatched")
        yield SampleInput(t((N, C) + X, noncontiguous=True), t((3, C) + K, noncontiguous=True),
                          name="noncontiguous")
        yield SampleInput(t((0, C) + X), t((3, C) + K), t((3,)), name="empty batch")

    return samples


_CONVT_Y = {1: (5,), 2: (3, 4), 3: (2, 3, 3)}


def _conv_transpose_samples(n):
    """``conv_transpose{n}d(input, weight, bias, stride, padding, output_padding, groups,
    dilation)``; weight ``(C_in, C_out / groups, *kernel)``."""

    def samples(device, dtype, requires_grad=False):
        N, C = _CONV_NC[n]
        Y, K = _CONVT_Y[n], _CONV_K[n]

        def t(shape, **kw):
            return make(shape, dtype, device, requires_grad=requires_grad, **kw)

        yield SampleInput(t((N, C) + Y), t((C, 3) + K), t((3,)), name="bias")
        yield SampleInput(t((N, C) + Y), t((C, 2) + K), None, 2, 1, 1,
                          name="stride 2, padding 1, output_padding 1 (positional)")
        yield SampleInput(t((1, 4) + Y), t((4, 1) + K), t((2,)), groups=2, name="groups 2")
        yield SampleInput(t((N, C) + Y), t((C, 2) + K), t((2,)), dilation=2, output_padding=1,
                          name="dilation 2, output_padding 1")
        yield SampleInput(t((N, C) + Y), t((C, 2) + K), stride=_per(n, (2, 1, 2)),
                          padding=_per(n, (0, 1, 1)), output_padding=_per(n, (1, 0, 0)),
                          dilation=_per(n, (1, 2, 1)), name="per-dim tuples")
        yield SampleInput(t((C,) + Y), t((C, 3) + K), t((3,)), name="unbatched")
        yield SampleInput(t((N, C) + Y, noncontiguous=True), t((C, 3) + K, noncontiguous=True),
                          t((3,)), 2, name="noncontiguous, stride 2")
        yield SampleInput(t((0, C) + Y), t((C, 3) + K), t((3,)), name="empty batch")

    return samples


# -- im2col / col2im ------------------------------------------------------------------------

def _im2col_samples(device, dtype, requires_grad=False):
    """``F.unfold(input, kernel_size, dilation, padding, stride)``."""

    def x(shape, **kw):
        return make(shape, dtype, device, requires_grad=requires_grad, **kw)

    yield SampleInput(x((1, 2, 4, 5)), 2, name="kernel 2")
    yield SampleInput(x((2, 1, 4, 5)), (2, 3), (1, 2), 1, (2, 1),
                      name="per-dim tuples (positional)")
    yield SampleInput(x((1, 2, 4, 5)), 3, padding=1, stride=2, name="padding 1, stride 2")
    yield SampleInput(x((2, 4, 5)), 2, dilation=2, name="unbatched, dilation 2")
    yield SampleInput(x((1, 2, 4, 5), noncontiguous=True), 2, name="noncontiguous")
    yield SampleInput(x((0, 2, 4, 5)), 2, name="empty batch")


def _col2im_samples(device, dtype, requires_grad=False):
    """``F.fold(input, output_size, kernel_size, dilation, padding, stride)``; input
    ``(N, C * prod(kernel_size), L)``."""

    def x(shape, **kw):
        return make(shape, dtype, device, requires_grad=requires_grad, **kw)

    yield SampleInput(x((1, 8, 6)), (3, 4), 2, name="kernel 2 (overlapping blocks)")
    yield SampleInput(x((1, 6, 6)), (4, 4), (2, 3), padding=1, stride=2,
                      name="per-dim kernel, padding 1, stride 2")
    yield SampleInput(x((2, 4, 6)), (4, 5), 2, 2, name="dilation 2 (positional)")
    yield SampleInput(x((1, 4, 9)), 4, 2, name="int output_size")
    yield SampleInput(x((8, 6)), (3, 4), 2, name="unbatched")
    yield SampleInput(x((1, 8, 6), noncontiguous=True), (3, 4), 2, name="noncontiguous")
    yield SampleInput(x((0, 8, 6)), (3, 4), 2, name="empty batch")


# -- grid sampling --------------------------------------------------------------------------

_MODES = ("bilinear", "nearest", "bicubic")
_PADDINGS = ("zeros", "border", "reflection")


_GRID_SEED = 90_000  # the grid samplers' cases (see _grid_case)


def _grid_case(dims, dtype, device, requires_grad, out=None, noncontiguous=False, batch=None,
               seed=None):
    """An input and a grid reaching a little outside ``[-1, 1]`` (the padding modes
    matter). ``seed`` fixes both (grid points near a pixel or padding boundary are kinks
    where finite differences disagree with the gradient: the cases are drawn once, checked
    clear of them, rather than from the run's shared seed stream, which shifts with the tests
    that ran before)."""
    if dims == 4:
        N = 2 if batch is None else batch
        x_shape, g_shape = (N, 1, 3, 4), (N,) + (out or (2, 3)) + (2,)
    else:
        N = 1 if batch is None else batch
        x_shape, g_shape = (N, 2, 2, 3, 3), (N,) + (out or (2, 2, 2)) + (3,)
    x = make(x_shape, dtype, device, requires_grad=requires_grad, noncontiguous=noncontiguous,
             seed=None if seed is None else 2 * seed)
    grid = make(g_shape, dtype, device, low=-1.2, high=1.2, requires_grad=requires_grad,
                noncontiguous=noncontiguous, seed=None if seed is None else 2 * seed + 1)
    return x, grid


def _grid_sampler_samples(dims_list, strings=False, full=True):
    """``grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)`` (or,
    with ``strings``, ``grid_sample(input, grid, mode, padding_mode, align_corners)``):
    every mode, padding mode and ``align_corners`` (``full``; else a selection)."""

    def samples(device, dtype, requires_grad=False):
        seeds = itertools.count(_GRID_SEED)
        for dims in dims_list:
            modes = range(3) if dims == 4 else range(2)  # bicubic is 2-D only
            combos = list(itertools.product(modes, range(3), (False, True)))
            if not full:
                combos = combos[::4]
            for m, p, a in combos:
                x, grid = _grid_case(dims, dtype, device, requires_grad, seed=next(seeds))
                name = f"{dims}-D {_MODES[m]}, {_PADDINGS[p]}, align_corners={a}"
                if strings:
                    yield SampleInput(x, grid, _MODES[m], _PADDINGS[p], a, name=name)
                else:
                    yield SampleInput(x, grid, m, p, a, name=name)
            x, grid = _grid_case(dims, dtype, device, requires_grad, noncontiguous=True,
                                 seed=next(seeds))
            yield (SampleInput(x, grid, mode="bilinear", padding_mode="border",
                               align_corners=False, name=f"{dims}-D noncontiguous")
                   if strings else SampleInput(x, grid, 0, 1, False,
                                               name=f"{dims}-D noncontiguous"))
            out = (0, 3) if dims == 4 else (0, 2, 2)
            x, grid = _grid_case(dims, dtype, device, requires_grad, out=out)
            yield (SampleInput(x, grid, align_corners=True, name=f"{dims}-D empty grid")
                   if strings else SampleInput(x, grid, 0, 0, True,
                                               name=f"{dims}-D empty grid"))
            x, grid = _grid_case(dims, dtype, device, requires_grad, batch=0)
            yield (SampleInput(x, grid, "nearest", "reflection", False,
                               name=f"{dims}-D empty batch")
                   if strings else SampleInput(x, grid, 1, 2, False,
                                               name=f"{dims}-D empty batch"))

    return samples


def _affine_grid_samples(generator):
    """``affine_grid_generator(theta, size, align_corners)`` / ``affine_grid(theta, size,
    align_corners=)``: 2-D and 3-D, both ``align_corners``."""

    def samples(device, dtype, requires_grad=False):
        def theta(shape, **kw):
            return make(shape, dtype, device, low=-1.5, high=1.5, requires_grad=requires_grad,
                        **kw)

        cases = (((2, 2, 3), [2, 3, 4, 5]), ((1, 3, 4), [1, 2, 2, 3, 4]))
        for shape, size in cases:
            for a in (False, True):
                name = f"{len(size) - 2}-D, align_corners={a}"
                yield (SampleInput(theta(shape), size, a, name=name) if generator else
                       SampleInput(theta(shape), size, align_corners=a, name=name))
        yield SampleInput(theta((2, 2, 3), noncontiguous=True), (2, 1, 3, 2), False,
                          name="noncontiguous theta, tuple size")

    return samples


# -- the entries ----------------------------------------------------------------------------

#: float16 for the ops whose results are exact (selection, copies), and for those whose
#: PyTorch results equal the float32 computation rounded once (ember accumulates float16 in
#: float32 too)
_HALF_ADD = ("float16",)

for _n in (1, 2, 3):
    _d = f"{_n}d"
    _f = f"nn.functional.{{}}{_d}"
    # PyTorch's max_pool1d has no integer kernel (max_pool1d_with_indices has one)
    define(f"max_pool{_d}", _max_pool_samples(_n), dtypes=_HALF + (_INTS if _n > 1 else ()),
           torch=_f.format("max_pool"), output=_values)
    define(f"max_pool{_d}_with_indices", _max_pool_samples(_n, False), dtypes=_HALF + _INTS,
           torch=_f.format("max_pool") + "_with_indices", output=_values)
    define(f"avg_pool{_d}", _avg_pool_samples(_n),
           dtypes=FLOAT + ("int64",) + (_HALF_ADD if _n < 3 else ()),  # no 3-D Half kernel
           torch=_f.format("avg_pool"))
    define(f"adaptive_avg_pool{_d}", _adaptive_samples(_n, False),
           dtypes=FLOAT + (_HALF_ADD if _n < 3 else ()),  # PyTorch's 3-D one rounds within
           torch=_f.format("adaptive_avg_pool"))
    define(f"adaptive_max_pool{_d}", _adaptive_samples(_n, True, True), dtypes=_HALF,
           torch=_f.format("adaptive_max_pool"), output=_values)
    define(f"adaptive_max_pool{_d}_with_indices", _adaptive_samples(_n, True), dtypes=_HALF,
           torch=_f.format("adaptive_max_pool") + "_with_indices", output=_values)
    define(f"max_unpool{_d}", _max_unpool_samples(_n), dtypes=_HALF,
           torch=_f.format("max_unpool"))
    define(f"lp_pool{_d}", _lp_pool_samples(_n), dtypes=FLOAT + ("int64",),
           torch=_f.format("lp_pool"))
    define(f"conv{_d}", _conv_samples(_n), dtypes=FLOAT + ("int64",) + _HALF_ADD,
           torch=_f.format("conv"))
    define(f"conv_transpose{_d}", _conv_transpose_samples(_n), dtypes=FLOAT + ("int64",),
           torch=_f.format("conv_transpose"))

for _n in (2, 3):
    _d = f"{_n}d"
    define(f"fractional_max_pool{_d}", _fractional_samples(_n), dtypes=_HALF,
           torch=f"nn.functional.fractional_max_pool{_d}", output=_values)
    define(f"fractional_max_pool{_d}_with_indices", _fractional_samples(_n, False),
           dtypes=_HALF, torch=f"nn.functional.fractional_max_pool{_d}_with_indices",
           output=_values)

define("im2col", _im2col_samples, dtypes=_HALF + ("bool",), torch="nn.functional.unfold")
define("col2im", _col2im_samples, dtypes=_HALF + ("bool",), torch="nn.functional.fold")

define("grid_sampler_2d", _grid_sampler_samples((4,)), dtypes=FLOAT)
define("grid_sampler_3d", _grid_sampler_samples((5,)), dtypes=FLOAT)
define("grid_sampler", _grid_sampler_samples((4, 5), full=False), dtypes=FLOAT)
# grid_sample maps its strings to grid_sampler's codes: a selection of the combinations, as
# for grid_sampler (grid_sampler_2d/3d see them all; the full sweep here repeated it, 60 s)
define("grid_sample", _grid_sampler_samples((4, 5), strings=True, full=False), dtypes=FLOAT,
       torch="nn.functional.grid_sample")
define("affine_grid_generator", _affine_grid_samples(True), dtypes=FLOAT)
define("affine_grid", _affine_grid_samples(False), dtypes=FLOAT,
       torch="nn.functional.affine_grid")

del _n, _d, _f
