"""Convolutions and unfold/fold: NumPy loop references, gradcheck, errors, devices."""

import itertools

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from testutils import randn64

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.ops.conv import fold, unfold

RNG = np.random.default_rng(1234)


def _tuple(v, n):
    return (v,) * n if isinstance(v, int) else tuple(v)


def ref_conv(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Direct loops over output positions (tiny inputs only)."""
    n = w.ndim - 2
    s, d = _tuple(stride, n), _tuple(dilation, n)
    if padding == "same":
        tot = [d[i] * (w.shape[2 + i] - 1) for i in range(n)]
        pads = [(t // 2, t - t // 2) for t in tot]
    else:
        pads = [(p, p) for p in _tuple(0 if padding == "valid" else padding, n)]
    xp = np.pad(x, [(0, 0), (0, 0)] + pads)
    N, C = x.shape[:2]
    O = w.shape[0]
    k = w.shape[2:]
    ys = [(xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(n)]
    out = np.zeros((N, O, *ys))
    cg, og = C // groups, O // groups
    for o in range(O):
        grp = o // og
        for pos in itertools.product(*map(range, ys)):
            acc = np.zeros(N)
            for off in itertools.product(*map(range, k)):
                idx = tuple(pos[i] * s[i] + off[i] * d[i] for i in range(n))
                acc += (xp[(slice(None), slice(grp * cg, (grp + 1) * cg)) + idx] *
                        w[(o, slice(None)) + off]).sum(1)
            out[(slice(None), o) + pos] = acc
    if b is not None:
        out += b.reshape((1, O) + (1,) * n)
    return out


def ref_conv_transpose(u, w, b=None, stride=1, padding=0, output_padding=0, groups=1,
                       dilation=1):
    """Scatter loops: every input element adds its weighted kernel into the output."""
    n = w.ndim - 2
    s, p, op, d = (_tuple(v, n) for v in (stride, padding, output_padding, dilation))
    N, Cin = u.shape[:2]
    cog = w.shape[1]
    k = w.shape[2:]
    xs = [(u.shape[2 + i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 + op[i] for i in range(n)]
    full = np.zeros((N, cog * groups, *xs))
    cig = Cin // groups
    for ci in range(Cin):
        grp = ci // cig
        for pos in itertools.product(*map(range, u.shape[2:])):
            for off in itertools.product(*map(range, k)):
                idx = tuple(pos[i] * s[i] + off[i] * d[i] for i in range(n))
                full[(slice(None), slice(grp * cog, (grp + 1) * cog)) + idx] += \
                    u[(slice(None), ci) + pos][:, None] * w[(ci, slice(None)) + off]
    out = full[(Ellipsis,) + tuple(slice(p[i], xs[i] - p[i]) for i in range(n))]
    if b is not None:
        out = out + b.reshape((1, -1) + (1,) * n)
    return out


# The values (against PyTorch) and gradchecks of conv1d/2d/3d, conv_transpose1d/2d/3d, unfold
# and fold on the op database's samples (bias, stride, padding, 'same' and 'valid', dilation,
# groups, depthwise, per-dim tuples, unbatched, empty batch): the generic tests
# (tests/ops/test_ops.py). Here: combinations of those the samples do not make, node names,
# the kernels' paths by shape (below), errors, devices and regressions.
CONV2D_CASES = [
    dict(stride=2, padding=1, dilation=(2, 1), groups=2),
]


@pytest.mark.parametrize("kw", CONV2D_CASES)
def test_conv2d_values_and_gradcheck(kw):
    x = randn64(2, 4, 6, 5, rng=RNG)
    # even kernel: asymmetric 'same' padding
    w = randn64(4, 4 // kw.get("groups", 1), 2, 3, rng=RNG)
    b = randn64(4, rng=RNG)
    out = ember.conv2d(x, w, b, **kw)
    ref = ref_conv(x.detach().numpy(), w.detach().numpy(), b.detach().numpy(), **kw)
    assert out.shape == ref.shape
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-10, atol=1e-12)
    assert out.grad_fn.name() == "ConvolutionBackward0"
    assert gradcheck(lambda a, c, e: ember.conv2d(a, c, e, **kw), (x, w, b))


@pytest.mark.parametrize("kw", [dict(dilation=2, groups=2, padding=2)])
def test_conv1d(kw):
    x, w, b = (randn64(2, 4, 9, rng=RNG), randn64(4, 4 // kw.get("groups", 1), 4, rng=RNG),
               randn64(4, rng=RNG))
    out = ember.conv1d(x, w, b, **kw)
    np.testing.assert_allclose(out.detach().numpy(), ref_conv(
        x.detach().numpy(), w.detach().numpy(), b.detach().numpy(), **kw), atol=1e-12)
    assert gradcheck(lambda a, c, e: ember.conv1d(a, c, e, **kw), (x, w, b))


@pytest.mark.parametrize("kw", [dict(padding="same", groups=2)])
def test_conv3d(kw):
    x, w, b = (randn64(1, 2, 4, 5, 4, rng=RNG),
               randn64(2, 2 // kw.get("groups", 1), 2, 3, 2, rng=RNG), randn64(2, rng=RNG))
    out = ember.conv3d(x, w, b, **kw)
    np.testing.assert_allclose(out.detach().numpy(), ref_conv(
        x.detach().numpy(), w.detach().numpy(), b.detach().numpy(), **kw), atol=1e-12)
    assert gradcheck(lambda a, c, e: ember.conv3d(a, c, e, **kw), (x, w, b))


def test_conv2d_float32_stays_float32():
    x = ember.randn(2, 3, 6, 6, requires_grad=True)
    w = ember.randn(4, 3, 3, 3, requires_grad=True)
    out = ember.conv2d(x, w, ember.zeros(4))
    assert out.dtype == ember.float32
    out.sum().backward()
    assert x.grad.dtype == ember.float32 and w.grad.dtype == ember.float32


def test_conv2d_gradgradcheck():
    x, w, b = randn64(2, 2, 5, 4, rng=RNG), randn64(4, 1, 2, 3, rng=RNG), randn64(4, rng=RNG)
    assert gradgradcheck(lambda a, c, e: ember.conv2d(a, c, e, stride=(2, 1), padding=1,
                                                      dilation=(1, 2), groups=2), (x, w, b))


def test_conv2d_no_graph_without_grad():
    x = randn64(1, 2, 4, 4, rng=RNG, requires_grad=False)
    w = randn64(3, 2, 3, 3, rng=RNG, requires_grad=False)
    assert ember.conv2d(x, w).grad_fn is None
    with ember.no_grad():
        assert ember.conv2d(x.requires_grad_(), w).grad_fn is None


TRANSPOSE_CASES = [
    dict(groups=2, stride=2, dilation=2, output_padding=1),
]


@pytest.mark.parametrize("kw", TRANSPOSE_CASES)
def test_conv_transpose2d(kw):
    g = kw.get("groups", 1)
    u, w, b = randn64(2, 4, 3, 4, rng=RNG), randn64(4, 3, 3, 2, rng=RNG), randn64(3 * g, rng=RNG)
    out = ember.conv_transpose2d(u, w, b, **kw)
    ref = ref_conv_transpose(u.detach().numpy(), w.detach().numpy(), b.detach().numpy(), **kw)
    assert out.shape == ref.shape
    np.testing.assert_allclose(out.detach().numpy(), ref, atol=1e-12)
    assert gradcheck(lambda a, c, e: ember.conv_transpose2d(a, c, e, **kw), (u, w, b))


@pytest.mark.parametrize("kw", [dict(groups=2, dilation=2)])
def test_conv_transpose1d(kw):
    g = kw.get("groups", 1)
    u, w, b = randn64(2, 4, 5, rng=RNG), randn64(4, 2, 3, rng=RNG), randn64(2 * g, rng=RNG)
    out = ember.conv_transpose1d(u, w, b, **kw)
    np.testing.assert_allclose(out.detach().numpy(), ref_conv_transpose(
        u.detach().numpy(), w.detach().numpy(), b.detach().numpy(), **kw), atol=1e-12)
    assert gradcheck(lambda a, c, e: ember.conv_transpose1d(a, c, e, **kw), (u, w, b))


def test_conv_transpose_is_adjoint_of_conv():
    x = randn64(2, 3, 7, 6, rng=RNG, requires_grad=False)
    w = randn64(4, 3, 3, 3, rng=RNG, requires_grad=False)
    y = ember.randn(2, 4, 4, 3, dtype=ember.float64)
    lhs = (ember.conv2d(x, w, stride=2, padding=1) * y).sum()
    rhs = (x * ember.conv_transpose2d(y, w, stride=2, padding=1, output_padding=(0, 1))).sum()
    assert abs(lhs.item() - rhs.item()) < 1e-9


def test_fold_of_unfold_counts_each_pixels_windows():
    # unfold's and fold's values and gradchecks: the generic tests (im2col, col2im)
    x = randn64(2, 3, 5, 6, rng=RNG)
    kw = dict(dilation=(1, 2), padding=1, stride=(2, 1))
    cols = unfold(x, (2, 3), **kw)
    assert cols.grad_fn.name() == "Im2ColBackward0"
    back = fold(cols, (5, 6), (2, 3), **kw)
    ones = fold(unfold(ember.ones_like(x), (2, 3), **kw), (5, 6), (2, 3), **kw)
    np.testing.assert_allclose(back.detach().numpy(), (x * ones).detach().numpy(), atol=1e-12)


@pytest.mark.parametrize("call, message", [
    (lambda: ember.conv2d(ember.randn(1, 4, 5, 5), ember.randn(8, 3, 3, 3)),
     r"Given groups=1, weight of size \[8, 3, 3, 3\], expected input\[1, 4, 5, 5\] to have 3 "
     r"channels, but got 4 channels instead"),
    (lambda: ember.conv2d(ember.randn(4, 5), ember.randn(8, 4, 3, 3)),
     r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got input of size: "
     r"\[4, 5\]"),
    (lambda: ember.conv2d(ember.randn(1, 4, 2, 2), ember.randn(8, 4, 3, 3)),
     r"Calculated padded input size per channel: \(2 x 2\). Kernel size: \(3 x 3\)"),
    (lambda: ember.conv2d(ember.randn(1, 4, 5, 5), ember.randn(8, 2, 3, 3), groups=3),
     r"expected weight to be divisible by 3 at dimension 0"),
    (lambda: ember.conv2d(ember.randn(1, 4, 5, 5), ember.randn(8, 4, 3, 3), ember.randn(3)),
     r"expected bias to be 1-dimensional with 8 elements, but got bias of size \[3\]"),
    (lambda: ember.conv2d(ember.randn(1, 4, 5, 5), ember.randn(8, 4, 3, 3), stride=0),
     "non-positive stride is not supported"),
    (lambda: ember.conv2d(ember.randn(1, 4, 5, 5), ember.randn(8, 4, 3, 3), padding=-1),
     "negative padding is not supported"),
    (lambda: ember.conv2d(ember.randn(1, 4, 5, 5), ember.randn(8, 4, 3, 3), padding="same",
                          stride=2), "padding='same' is not supported for strided"),
    (lambda: ember.conv2d(ember.randn(1, 4, 5, 5), ember.randn(8, 4, 3, 3), padding="foo"),
     "Invalid padding string: 'foo'"),
    (lambda: ember.conv2d(ember.randn(1, 4, 5, 5), ember.randn(8, 4, 3, 3), stride=(1, 1, 1)),
     r"expected stride to be a single integer value or a list of 2 values"),
    (lambda: ember.conv2d(ember.randn(1, 4, 5, 5), ember.randn(8, 4, 3, 3), groups=0),
     "non-positive groups is not supported"),
    (lambda: ember.conv2d(ember.randn(1, 4, 5, 5, dtype=ember.float64),
                          ember.randn(8, 4, 3, 3)),
     "expected scalar type Double but found Float"),
    (lambda: ember.conv_transpose2d(ember.randn(1, 4, 5, 5), ember.randn(3, 4, 3, 3)),
     r"Given transposed=1, weight of size \[3, 4, 3, 3\], expected input\[1, 4, 5, 5\] to "
     r"have 3 channels, but got 4 channels instead"),
    (lambda: ember.conv_transpose2d(ember.randn(1, 4, 5, 5), ember.randn(4, 4, 3, 3),
                                    output_padding=1),
     "output padding must be smaller than either stride or dilation"),
    (lambda: fold(ember.randn(1, 4, 5), (4, 4), 2),
     "expected size of input's dimension 2 to match the calculated number of sliding blocks "
     r"3 \* 3 = 9, but got input.size\(2\)=5"),
])
def test_errors(call, message):
    with pytest.raises(RuntimeError, match=message):
        call()


def test_device_kept_and_mixing_raises(testdev):
    x = ember.randn(1, 2, 5, 5).to(testdev).requires_grad_()
    w = ember.randn(3, 2, 3, 3).to(testdev).requires_grad_()
    out = ember.conv2d(x, w, padding=1)
    assert out.device == testdev
    out.sum().backward()
    assert x.grad.device == testdev and w.grad.device == testdev
    np.testing.assert_allclose(out.detach().to("cpu").numpy(), ember.conv2d(
        x.detach().to("cpu"), w.detach().to("cpu"), padding=1).numpy(), rtol=1e-6)
    u = ember.conv_transpose2d(out.detach(), w.detach(), stride=2)
    assert u.device == testdev
    assert unfold(x.detach(), 2).device == testdev
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember.conv2d(ember.randn(1, 2, 5, 5), w)


def test_saved_buffers_freed_after_backward():
    x, w = randn64(1, 2, 5, 5, rng=RNG), randn64(3, 2, 3, 3, rng=RNG)
    out = ember.conv2d(x, w, padding=1).sum()
    out.backward(retain_graph=True)
    first = w.grad.clone()
    out.backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * first.numpy())
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second"):
        out.backward()


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 2), c=st.integers(1, 3), groups=st.sampled_from([1, 2]),
       k=st.tuples(st.integers(1, 3), st.integers(1, 3)), s=st.tuples(st.integers(1, 3),
                                                                   st.integers(1, 3)),
       p=st.tuples(st.integers(0, 2), st.integers(0, 2)),
       d=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       size=st.tuples(st.integers(5, 8), st.integers(5, 8)))
@example(n=1, c=1, groups=1, k=(3, 1), s=(3, 1), p=(1, 0), d=(2, 1), size=(5, 5))
def test_conv2d_matches_loops_property(n, c, groups, k, s, p, d, size):
    x = RNG.standard_normal((n, c * groups, *size))
    w = RNG.standard_normal((2 * groups, c, *k))
    out = ember.conv2d(ember.tensor(x), ember.tensor(w), stride=s, padding=p, dilation=d,
                       groups=groups)
    np.testing.assert_allclose(out.numpy(), ref_conv(x, w, None, s, p, d, groups), atol=1e-10)
    # the transposed convolution is its adjoint
    y = RNG.standard_normal(tuple(out.shape))
    op = tuple(size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1 - (out.shape[2 + i] - 1) * s[i]
               for i in range(2))
    if all(op[i] < max(s[i], d[i]) for i in range(2)):
        back = ember.conv_transpose2d(ember.tensor(y), ember.tensor(w), stride=s, padding=p,
                                      output_padding=op, groups=groups, dilation=d)
        assert abs((out.numpy() * y).sum() - (x * back.numpy()).sum()) < 1e-8


@pytest.mark.parametrize("cin,cout,padding,dilation,groups", [
    (4, 4, 1, 1, 1),   # forward-conv form (flipped kernel)
    (6, 2, 0, 1, 1),   # col2im form: the forward form would copy 3x more
    (4, 6, 2, 2, 2),   # dilation and groups through the forward form
    (3, 3, 3, 1, 1),   # padding larger than the kernel span: col2im form
])
def test_stride_one_transposed_conv_both_forms(cin, cout, padding, dilation, groups):
    u = randn64(2, cin, 5, 6, rng=RNG)
    w = randn64(cin, cout // groups, 3, 3, rng=RNG)
    kw = dict(padding=padding, dilation=dilation, groups=groups)
    got = ember.conv_transpose2d(u, w, **kw).detach().numpy()
    want = ref_conv_transpose(u.detach().numpy(), w.detach().numpy(), **kw)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    assert gradcheck(lambda a, c: ember.conv_transpose2d(a, c, **kw), (u, w))


@pytest.mark.parametrize("channels,size,groups", [(8, 3, 1), (6, 2, 2), (12, 12, 3)])
def test_folded_batch_gemm_paths(channels, size, groups):
    # deep-layer shapes (few output positions, many channels) take the batch-folded GEMMs
    x = randn64(3, channels, size, size, rng=RNG)
    w = randn64(channels, channels // groups, 3, 3, rng=RNG)
    got = ember.conv2d(x, w, padding=1, groups=groups).detach().numpy()
    want = ref_conv(x.detach().numpy(), w.detach().numpy(), padding=1, groups=groups)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    assert gradcheck(lambda a, c: ember.conv2d(a, c, padding=1, groups=groups), (x, w))


TRIM_CASES = [  # planes so small that some kernel taps read only padding
    ((1, 1), 3, dict(padding=1)),  # only the centre tap: a 1x1 conv
    ((2, 2), 3, dict(stride=2, padding=1)),  # the first row/column of taps falls off
    ((1, 3), 3, dict(padding=(1, 1))),  # trimmed along one dim only
    ((2, 1), 3, dict(padding=2, dilation=2)),
    ((1, 1), 5, dict(padding=2, groups=2)),
    # the first tap reads only padding, but dropping it would move the origin past the
    # padding (dilation 2 > padding 1): it stays (found by the property test in CI)
    ((5, 5), 3, dict(stride=3, padding=1, dilation=2)),
]


@pytest.mark.parametrize("size,k,kw", TRIM_CASES)
@pytest.mark.parametrize("batch", [1, 3])
def test_conv_taps_over_padding_only(size, k, kw, batch):
    # values, input/weight/bias gradients (the dropped taps' weight gradient is zero) and
    # the transposed conv on the same geometry, against the loop references
    x = randn64(batch, 4, *size, rng=RNG)
    w = randn64(6, 4 // kw.get("groups", 1), k, k, rng=RNG)
    b = randn64(6, rng=RNG)
    out = ember.conv2d(x, w, b, **kw)
    np.testing.assert_allclose(out.detach().numpy(),
                               ref_conv(x.detach().numpy(), w.detach().numpy(),
                                        b.detach().numpy(), **kw), rtol=1e-12, atol=1e-12)
    assert gradcheck(lambda *a: ember.conv2d(*a, **kw), (x, w, b))
    tw = randn64(4, 6 // kw.get("groups", 1), k, k, rng=RNG)
    u = randn64(batch, 4, *out.shape[2:], rng=RNG)
    tkw = {key: v for key, v in kw.items() if key != "dilation"}
    res = ember.conv_transpose2d(u, tw, None, dilation=kw.get("dilation", 1), **tkw)
    np.testing.assert_allclose(res.detach().numpy(),
                               ref_conv_transpose(u.detach().numpy(), tw.detach().numpy(),
                                                  dilation=kw.get("dilation", 1), **tkw),
                               rtol=1e-12, atol=1e-12)
    assert gradcheck(lambda a, c: ember.conv_transpose2d(
        a, c, None, dilation=kw.get("dilation", 1), **tkw), (u, tw))


DEPTHWISE_CASES = [
    dict(padding=1),
    dict(stride=2, padding=1),
    dict(stride=(2, 1), padding=(0, 2), dilation=(1, 2)),
    dict(padding="same", dilation=2),
]


@pytest.mark.parametrize("kw", DEPTHWISE_CASES)
@pytest.mark.parametrize("batch", [1, 2])
def test_depthwise_conv_tap_sums(kw, batch):
    # one channel per group: sums over kernel taps instead of im2col + per-channel GEMMs
    x, w, b = randn64(batch, 4, 7, 6, rng=RNG), randn64(4, 1, 3, 3, rng=RNG), randn64(4, rng=RNG)
    out = ember.conv2d(x, w, b, groups=4, **kw)
    np.testing.assert_allclose(out.detach().numpy(),
                               ref_conv(x.detach().numpy(), w.detach().numpy(),
                                        b.detach().numpy(), groups=4, **kw), atol=1e-12)
    assert gradcheck(lambda *a: ember.conv2d(*a, groups=4, **kw), (x, w, b))
    assert gradgradcheck(lambda a, c: ember.conv2d(a, c, groups=4, **kw), (x, w))


@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_conv_transpose_and_1d(stride):
    u, w = randn64(2, 3, 4, 5, rng=RNG), randn64(3, 1, 3, 2, rng=RNG)
    out = ember.conv_transpose2d(u, w, None, stride=stride, padding=1, groups=3)
    np.testing.assert_allclose(out.detach().numpy(),
                               ref_conv_transpose(u.detach().numpy(), w.detach().numpy(),
                                                  stride=stride, padding=1, groups=3),
                               atol=1e-12)
    assert gradcheck(lambda a, c: ember.conv_transpose2d(a, c, None, stride=stride, padding=1,
                                                         groups=3), (u, w))
    x1, w1 = randn64(2, 5, 9, rng=RNG), randn64(5, 1, 3, rng=RNG)
    np.testing.assert_allclose(ember.conv1d(x1, w1, stride=stride, groups=5).detach().numpy(),
                               ref_conv(x1.detach().numpy(), w1.detach().numpy(),
                                        stride=stride, groups=5), atol=1e-12)
    assert gradcheck(lambda a, c: ember.conv1d(a, c, stride=stride, groups=5), (x1, w1))


ROW_CASES = [  # geometries that take the one-GEMM-per-leading-tap path (_conv_rows); 64+
    # output positions, else the batch is folded into one GEMM instead
    ((8, 9), 3, dict(padding=1)),  # "same" along the last dim: wrapped shifts, cut columns
    ((8, 10), 3, dict(padding=(1, 2), dilation=(1, 2))),
    ((9, 8), (2, 4), dict(padding="same")),  # even kernel: asymmetric padding
    ((11, 10), 3, dict(padding=0)),  # narrow side with junk columns
    ((8, 9), 3, dict(padding=1, groups=2)),
]


@pytest.mark.parametrize("size,k,kw", ROW_CASES)
def test_conv_by_leading_taps(size, k, kw, monkeypatch):
    from ember.ops import _conv_kernels as conv_mod
    calls = []
    real = conv_mod._conv_rows
    monkeypatch.setattr(conv_mod, "_conv_rows", lambda *a: calls.append(1) or real(*a))
    groups = kw.get("groups", 1)
    ks = (k, k) if isinstance(k, int) else k
    x, w, b = (randn64(2, 12 * groups, *size, rng=RNG), randn64(6 * groups, 12, *ks, rng=RNG),
               randn64(6 * groups, rng=RNG))
    out = ember.conv2d(x, w, b, **kw)
    assert calls  # the path under test
    np.testing.assert_allclose(out.detach().numpy(),
                               ref_conv(x.detach().numpy(), w.detach().numpy(),
                                        b.detach().numpy(), **kw), rtol=1e-12, atol=1e-12)
    assert gradcheck(lambda *a: ember.conv2d(*a, **kw), (x, w, b))


def test_conv3d_by_leading_taps(monkeypatch):
    from ember.ops import _conv_kernels as conv_mod
    calls = []
    real = conv_mod._conv_rows
    monkeypatch.setattr(conv_mod, "_conv_rows", lambda *a: calls.append(1) or real(*a))
    x, w = randn64(2, 12, 3, 5, 6, rng=RNG), randn64(6, 12, 3, 3, 3, rng=RNG)
    out = ember.conv3d(x, w, padding=1)
    assert calls
    np.testing.assert_allclose(out.detach().numpy(),
                               ref_conv(x.detach().numpy(), w.detach().numpy(), None, padding=1),
                               rtol=1e-12, atol=1e-12)
    assert gradcheck(lambda a, c: ember.conv3d(a, c, padding=1), (x, w))


CL_CASES = [  # batch-folded small maps that run channels last (_conv_cl and friends)
    ((4, 4), 3, dict(padding=1)),
    ((5, 4), 3, dict(stride=2, padding=1)),
    ((6, 5), (2, 3), dict(stride=(2, 1), padding=(0, 1), dilation=(2, 1))),
    ((7,), 3, dict(stride=2, padding=2, dilation=2)),
    ((3, 3, 4), 3, dict(padding=1, stride=(1, 2, 1))),
]


@pytest.mark.parametrize("size,k,kw", CL_CASES)
def test_conv_channels_last_folded(size, k, kw, monkeypatch):
    from ember.ops import _conv_kernels as conv_mod
    calls = set()
    for name in ("_conv_cl", "_weight_grad_cl", "_conv_transpose_cl"):
        real = getattr(conv_mod, name)
        monkeypatch.setattr(conv_mod, name,
                            lambda *a, _r=real, _n=name: calls.add(_n) or _r(*a))
    n = len(size)
    ks = (k,) * n if isinstance(k, int) else k
    op = {1: ember.conv1d, 2: ember.conv2d, 3: ember.conv3d}[n]
    x, w, b = randn64(3, 5, *size, rng=RNG), randn64(4, 5, *ks, rng=RNG), randn64(4, rng=RNG)
    out = op(x, w, b, **kw)
    np.testing.assert_allclose(out.detach().numpy(),
                               ref_conv(x.detach().numpy(), w.detach().numpy(),
                                        b.detach().numpy(), **kw), rtol=1e-12, atol=1e-12)
    assert gradcheck(lambda *a: op(*a, **kw), (x, w, b))
    assert calls >= {"_conv_cl", "_weight_grad_cl"}
    if any(v != 1 for v in np.broadcast_to(kw.get("stride", 1), (n,))):
        assert "_conv_transpose_cl" in calls  # strided input gradient: col2im channels last


# -- regressions ---------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("transposed", [False, True])
def test_empty_batch_backward_gives_zero_weight_grad(n, transposed):
    """N = 0: no batch chunk for the weight gradient (it stayed None); PyTorch gives zeros."""
    op = getattr(ember, f"conv_transpose{n}d" if transposed else f"conv{n}d")
    x = ember.zeros((0, 2) + (4,) * n, dtype=ember.float64, requires_grad=True)
    w = randn64(*((2, 3) if transposed else (3, 2)), *(2,) * n, rng=RNG)
    b = randn64(3, rng=RNG)
    out = op(x, w, b)
    assert out.shape[:2] == (0, 3)
    out.sum().backward()
    assert w.grad.shape == w.shape and not w.grad.numpy().any()
    assert b.grad.shape == (3,) and not b.grad.numpy().any()
    assert x.grad.shape == x.shape
    # the weight gradient's own backward (double backward) sees the empty batch too
    x2 = ember.zeros((0, 2) + (4,) * n, dtype=ember.float64, requires_grad=True)
    gw, = ember.autograd.grad(op(x2, w, b).sum(), w, create_graph=True)
    assert gw.shape == w.shape and not gw.detach().numpy().any()


@pytest.mark.parametrize("op,xs,ws,kw", [
    ("conv1d", (2, 4, 9), (3, 4, 3), {"padding": 1}),
    ("conv2d", (2, 4, 6, 5), (3, 4, 3, 3), {"stride": 2}),
    ("conv2d", (3, 8, 7, 7), (16, 8, 3, 3), {"padding": 1}),  # rows and folded paths
    ("conv3d", (1, 4, 4, 4, 5), (3, 4, 2, 2, 3), {"dilation": (1, 2, 1)}),
    ("conv_transpose2d", (2, 4, 4, 3), (4, 3, 3, 3), {"stride": 2}),
])
def test_float16_accumulates_in_float32(op, xs, ws, kw):
    """float16 convolutions are the float32 computation rounded once (PyTorch's CPU kernels
    accumulate in float): a float16 accumulation was off by several units in the last place."""
    rng = np.random.default_rng(5)
    x = rng.uniform(-3, 3, xs).astype(np.float16)
    w = rng.uniform(-3, 3, ws).astype(np.float16)
    b = rng.uniform(-3, 3, ws[1] if "transpose" in op else ws[0]).astype(np.float16)
    f = getattr(ember, op)
    got = f(ember.tensor(x), ember.tensor(w), ember.tensor(b), **kw)
    assert got.dtype == ember.float16
    expected = f(ember.tensor(x.astype(np.float32)), ember.tensor(w.astype(np.float32)),
                 ember.tensor(b.astype(np.float32)), **kw).numpy().astype(np.float16)
    np.testing.assert_array_equal(got.numpy(), expected)
    # backward stays float16
    xh = ember.tensor(x, requires_grad=True)
    wh = ember.tensor(w, requires_grad=True)
    f(xh, wh, **kw).sum().backward()
    assert xh.grad.dtype == wh.grad.dtype == ember.float16
