"""Dropout, embedding, one_hot, pad, interpolate, pixel shuffle and distances
(ember.ops.nn_misc): statistics, gradient conventions, nn.functional's forms, errors and
devices. The values (against PyTorch) and gradchecks of the registered ops on the op
database's samples (pad's modes, interpolate's modes, embedding_bag's modes, cdist's p, ...):
the generic tests (tests/ops/test_ops.py)."""

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck
from ember.ops import nn_misc as M


def _f64(*shape, seed=0, requires_grad=True):
    x = np.random.default_rng(seed).normal(size=shape)
    return ember.tensor(x, dtype=ember.float64, requires_grad=requires_grad)


# -- dropout -----------------------------------------------------------------------------------

def test_dropout_statistics_and_scaling():
    ember.manual_seed(0)
    y = M.dropout(ember.ones(400, 250), 0.3).numpy()
    assert abs((y == 0).mean() - 0.3) < 0.01
    assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.7)}
    assert abs(y.mean() - 1.0) < 0.02


def test_dropout_determinism_under_manual_seed():
    x = ember.randn(50, 20)
    ember.manual_seed(7)
    a = M.dropout(x, 0.5)
    ember.manual_seed(7)
    b = M.dropout(x, 0.5)
    c = M.dropout(x, 0.5)
    assert ember.equal(a, b) and not ember.equal(b, c)


def test_dropout_eval_and_edge_probabilities():
    x = ember.randn(4, 5)
    assert M.dropout(x, 0.5, training=False) is x
    assert M.dropout(x, 0.0) is x
    assert (M.dropout(x, 1.0) == 0).all()
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
            M.dropout(x, bad)


@pytest.mark.parametrize("name,feature,default_train", [
    ("dropout", False, True), ("alpha_dropout", False, False),
    ("feature_dropout", True, True), ("feature_alpha_dropout", True, False)])
def test_dropout_aten_forms_take_train(name, feature, default_train):
    """``torch.dropout(input, p, train)``: ``ember.<name>`` takes ``train`` (positional or
    keyword); ``ember.nn.functional.<name>`` keeps ``training`` and ``inplace``."""
    import inspect

    import ember.nn.functional as F

    fn = getattr(ember, name)
    assert list(inspect.signature(fn).parameters) == ["input", "p", "train"]
    if hasattr(F, name):  # (torch.nn.functional has no feature_dropout)
        assert list(inspect.signature(getattr(F, name)).parameters) == \
            ["input", "p", "training", "inplace"]
    x = ember.randn(4, 3, 5)
    assert fn(x, 0.5, train=False) is x and fn(x, 0.5, False) is x
    assert (fn(x, 0.5) is x) is not default_train
    ember.manual_seed(4)
    a = fn(x, 0.5, train=True)
    ember.manual_seed(4)
    b = getattr(M, name)(x, 0.5, training=True)
    assert ember.equal(a, b) and not ember.equal(a, x)
    with pytest.raises(TypeError):
        fn(x, 0.5, training=True)
    y = x.clone()
    ember.manual_seed(4)
    assert getattr(ember, name + "_")(y, 0.5, True) is y and ember.equal(y, a)


def test_dropout_gradient_is_the_mask():
    x = _f64(6, 7)
    ember.manual_seed(3)
    y = M.dropout(x, 0.4)
    y.sum().backward()
    mask = (y.detach() != 0).numpy()
    np.testing.assert_allclose(x.grad.numpy(), mask / 0.6)
    # PyTorch's CPU dropout is input * noise (its fused kernel is CUDA's): a MulBackward0
    # whose noise edge takes no gradient; alpha dropout ends in an add
    assert type(y.grad_fn).__name__ == "MulBackward0"
    assert y.grad_fn.next_functions[1] == (None, 0)
    assert M.alpha_dropout(x, 0.4, training=True).grad_fn.name() == "AddBackward0"
    assert ember.native_dropout(x, 0.4, True)[0].grad_fn.name() == "NativeDropoutBackward0"


def test_dropout_inplace():
    x = ember.ones(100)
    ember.manual_seed(1)
    out = M.dropout(x, 0.5, inplace=True)
    assert out is x and ((x == 0) | (x == 2)).all() and (x == 0).any()


@pytest.mark.parametrize("fn,shape", [(M.dropout1d, (6, 8, 5)), (M.dropout1d, (8, 5)),
                                      (M.dropout2d, (6, 8, 3, 3)),
                                      (M.dropout3d, (6, 8, 2, 2, 2)),
                                      (M.dropout3d, (8, 2, 2, 2))])
def test_channel_dropout_zeroes_whole_channels(fn, shape):
    ember.manual_seed(2)
    y = fn(ember.ones(*shape), 0.5).numpy()
    per_channel = y.reshape(y.shape[: y.ndim - _spatial(fn)] + (-1,))
    assert ((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all()
    assert (per_channel == 0).any() and (per_channel == 2).any()


def _spatial(fn):
    return {M.dropout1d: 1, M.dropout2d: 2, M.dropout3d: 3}[fn]


def test_channel_dropout_errors_and_warnings():
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input"):
        M.dropout1d(ember.randn(2, 3, 4, 5))
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        M.dropout2d(ember.randn(2, 3, 4))
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout3d"):
        M.dropout3d(ember.randn(2, 3))


def test_channel_dropout_inplace_unbatched():
    x = ember.ones(8, 5)
    ember.manual_seed(4)
    assert M.dropout1d(x, 0.5, inplace=True) is x
    rows = x.numpy()
    assert ((rows == 0).all(1) | (rows == 2).all(1)).all()


def test_alpha_dropout_keeps_mean_and_variance():
    ember.manual_seed(0)
    x = ember.randn(500, 400)
    y = M.alpha_dropout(x, 0.2, training=True)
    assert abs(float(y.mean())) < 0.02 and abs(float(y.std()) - 1) < 0.02
    assert M.alpha_dropout(x, 0.2) is x  # training defaults to False
    z = M.feature_alpha_dropout(ember.randn(20, 30, 4), 0.5, training=True).numpy()
    dropped = z == z[..., :1]  # a dropped channel is constant
    assert dropped.all(-1).any()


# -- embedding ---------------------------------------------------------------------------------

def test_embedding_values_and_shape():
    w = _f64(10, 3)
    idx = ember.tensor([[1, 2, 2], [0, 9, 1]])
    out = M.embedding(idx, w)
    assert out.shape == (2, 3, 3)
    np.testing.assert_array_equal(out.detach().numpy(), w.detach().numpy()[idx.numpy()])
    assert type(out.grad_fn).__name__ == "EmbeddingBackward0"


def test_embedding_gradient_counts_and_padding():
    idx = ember.tensor([1, 2, 2, 0])
    w = _f64(4, 2)
    M.embedding(idx, w, padding_idx=0).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [[0, 0], [1, 1], [2, 2], [0, 0]])
    w.grad = None
    M.embedding(idx, w, padding_idx=-4, scale_grad_by_freq=True).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [[0, 0], [1, 1], [1, 1], [0, 0]])


def _embedding_grad_ref(idx, g, num, padding_idx=None, scale_grad_by_freq=False):
    """``np.add.at`` of the gradient's rows into the table's (float64)."""
    flat, rows = idx.reshape(-1), g.reshape(-1, g.shape[-1]).astype(np.float64)
    if scale_grad_by_freq:
        rows = rows / np.bincount(flat, minlength=num)[flat][:, None]
    out = np.zeros((num, g.shape[-1]))
    np.add.at(out, flat, rows)
    if padding_idx is not None:
        out[padding_idx] = 0
    return out


@pytest.mark.parametrize("kw", [{}, {"padding_idx": 3}, {"scale_grad_by_freq": True},
                                {"padding_idx": -1, "scale_grad_by_freq": True}])
@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
def test_embedding_gradient_sums_repeated_rows(kw, index_dtype):
    """Many repeats (as a language model's batch): the segment sum against ``np.add.at``,
    float32 rounded once; a non-contiguous output gradient."""
    rng = np.random.default_rng(0)
    num = 50
    idx = rng.integers(0, num, (6, 40)).astype(index_dtype)
    idx[0, :5] = num - 1
    w = ember.tensor(rng.standard_normal((num, 8)).astype(np.float32), requires_grad=True)
    g = rng.standard_normal((8, 40, 6)).astype(np.float32)
    out = M.embedding(ember.tensor(idx), w, **kw)
    out.backward(ember.tensor(g).permute(2, 1, 0))
    padding = kw.get("padding_idx")
    want = _embedding_grad_ref(idx, g.transpose(2, 1, 0), num,
                               None if padding is None else padding % num,
                               kw.get("scale_grad_by_freq", False))
    assert w.grad.dtype == ember.float32
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-6, atol=1e-6)


def test_embedding_gradient_edge_cases_and_double_backward():
    w = _f64(4, 3)
    M.embedding(ember.zeros(0, dtype=ember.int64), w).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), 0.0)
    idx = ember.tensor([[1, 1], [3, 1]])
    assert gradcheck(lambda w: M.embedding(idx, w, padding_idx=0).pow(2), (w,))
    from ember.autograd import gradgradcheck

    assert gradgradcheck(lambda w: M.embedding(idx, w, padding_idx=0).pow(2), (w,))
    # create_graph takes index_add (differentiable): the same gradient as the array path
    kw = {"padding_idx": 3, "scale_grad_by_freq": True}
    (graph,) = ember.autograd.grad(M.embedding(idx, w, **kw).pow(2).sum(), (w,),
                                   create_graph=True)
    (plain,) = ember.autograd.grad(M.embedding(idx, w, **kw).pow(2).sum(), (w,))
    assert graph.requires_grad and not plain.requires_grad
    np.testing.assert_allclose(graph.detach().numpy(), plain.numpy(), rtol=1e-15)


def test_embedding_max_norm_renormalises_in_place():
    w = ember.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]])
    out = M.embedding(ember.tensor([0, 1]), w, max_norm=1.0)
    norms = np.linalg.norm(w.numpy(), axis=1)
    np.testing.assert_allclose(norms[:2], [1.0, 0.5], rtol=1e-5)
    assert norms[2] == pytest.approx(10.0)  # not looked up: untouched
    np.testing.assert_allclose(out.numpy(), w.numpy()[:2])


def test_embedding_errors():
    w = ember.randn(5, 2)
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices'"):
        M.embedding(ember.tensor([0.0]), w)
    with pytest.raises(IndexError, match="index out of range in self"):
        M.embedding(ember.tensor([5]), w)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        M.embedding(ember.tensor([0]), w, padding_idx=5)


# -- one_hot -----------------------------------------------------------------------------------

def test_one_hot():
    out = M.one_hot(ember.tensor([[0, 2], [1, 0]]))
    assert out.dtype == ember.int64 and out.shape == (2, 2, 3)
    np.testing.assert_array_equal(out.numpy(), np.eye(3, dtype=np.int64)[[[0, 2], [1, 0]]])
    assert M.one_hot(ember.tensor([1]), 4).tolist() == [[0, 1, 0, 0]]
    with pytest.raises(RuntimeError, match="one_hot is only applicable to index tensor"):
        M.one_hot(ember.tensor([1.0]))
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes"):
        M.one_hot(ember.tensor([3]), 3)
    with pytest.raises(RuntimeError, match="Class values must be non-negative"):
        M.one_hot(ember.tensor([-1]))
    with pytest.raises(RuntimeError, match="Can not infer total number of classes"):
        M.one_hot(ember.tensor([], dtype=ember.int64))


# -- pad ---------------------------------------------------------------------------------------


def test_pad_errors():
    x = ember.randn(1, 2, 3)
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        M.pad(x, (1,))
    with pytest.raises(RuntimeError, match="Padding length should be less than or equal"):
        M.pad(x, (1,) * 8)
    with pytest.raises(RuntimeError, match="Padding size should be less than the corresponding"):
        M.pad(x, (3, 3), "reflect")
    with pytest.raises(RuntimeError, match="wrapping around more than once"):
        M.pad(x, (4, 4), "circular")
    with pytest.raises(NotImplementedError, match="Padding size 6 is not supported for 3D"):
        M.pad(x, (1,) * 6, "reflect")
    with pytest.raises(RuntimeError, match=r"narrow\(\): length must be non-negative"):
        M.pad(x, (-2, -2))


# -- interpolate -------------------------------------------------------------------------------


def test_interpolate_node_name_and_errors():
    x = ember.randn(1, 1, 3, 3, requires_grad=True)
    out = M.interpolate(x, scale_factor=2, mode="bilinear")
    assert out.shape == (1, 1, 6, 6)
    assert type(out.grad_fn).__name__ == "UpsampleBilinear2DBackward0"
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        M.interpolate(x, size=4, scale_factor=2)
    with pytest.raises(ValueError, match="either size or scale_factor should be defined"):
        M.interpolate(x)
    with pytest.raises(ValueError, match="align_corners option can only be set"):
        M.interpolate(x, size=4, align_corners=True)
    with pytest.raises(NotImplementedError, match="Got 4D input, but linear mode needs 3D"):
        M.interpolate(x, size=4, mode="linear")
    with pytest.warns(UserWarning, match="upsample` is deprecated"):
        assert M.upsample(x, scale_factor=2).shape == (1, 1, 6, 6)
    area = M.interpolate(x, size=2, mode="area")  # adaptive average pooling
    assert type(area.grad_fn).__name__ == "AdaptiveAvgPool2DBackward0"
    np.testing.assert_allclose(area.detach().numpy(),
                               ember.nn.functional.adaptive_avg_pool2d(x, 2).detach().numpy())
    small = ember.tensor([[[0, 1, 2]]], dtype=ember.uint8)
    assert M.interpolate(small, size=6).tolist() == [[[0, 0, 1, 1, 2, 2]]]


def _triangle_reference(n, m):
    """Antialiased bilinear resize matrix ``(m, n)`` from its definition: a triangle filter
    widened by the downscale factor, centred on each output pixel, clipped at the borders
    and renormalised."""
    s = n / m
    support = max(s, 1.0)
    w = np.zeros((m, n))
    for i in range(m):
        c = s * (i + 0.5)
        for j in range(n):
            if int(c - support + 0.5) <= j < min(int(c + support + 0.5), n):
                w[i, j] = max(0.0, 1 - abs((j + 0.5 - c) / support))
        w[i] /= w[i].sum()
    return w


def test_antialias_weights_halving_is_a_triangle_filter():
    from ember.ops._resample_weights import aa_weights

    xmin, xsize, w = aa_weights("bilinear", 8, 4, False, None, np.float64)
    np.testing.assert_allclose(w.sum(axis=1), 1.0)
    assert xmin[1] == 1 and xsize[1] == 4
    np.testing.assert_allclose(w[1, :4], [1 / 8, 3 / 8, 3 / 8, 1 / 8])
    # the first output is clipped at the border and renormalised: 3/4, 3/4, 1/4 over 7/4
    assert xmin[0] == 0 and xsize[0] == 3
    np.testing.assert_allclose(w[0, :3], [3 / 7, 3 / 7, 1 / 7])
    _, _, c = aa_weights("bicubic", 10, 3, False, None, np.float64)
    np.testing.assert_allclose(c.sum(axis=1), 1.0)


@pytest.mark.parametrize("n,m", [(8, 4), (17, 5), (9, 9 * 3), (31, 12)])
def test_interpolate_antialias_matches_the_filter_definition(n, m):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 6, n))
    got = M.interpolate(ember.tensor(a), size=(6, m), mode="bilinear", antialias=True)
    expected = a @ _triangle_reference(n, m).T
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)
    both = M.interpolate(ember.tensor(a), size=(4, m), mode="bilinear", antialias=True)
    expected = np.einsum("hH,bcHW,wW->bchw", _triangle_reference(6, 4), a,
                         _triangle_reference(n, m))
    np.testing.assert_allclose(both.numpy(), expected, rtol=1e-12, atol=1e-12)


def test_interpolate_antialias_edge_cases():
    x = ember.randn(1, 2, 5, 6, dtype=ember.float64, requires_grad=True)
    same = M.interpolate(x, size=(5, 6), mode="bicubic", antialias=True)  # a copy, with a node
    assert type(same.grad_fn).__name__ == "UpsampleBicubic2DAaBackward0"
    np.testing.assert_array_equal(same.detach().numpy(), x.detach().numpy())
    assert not np.shares_memory(same.detach().numpy(), x.detach().numpy())
    assert gradcheck(lambda t: M.interpolate(t, size=(3, 4), mode="lanczos", antialias=True),
                     (x,))
    # an inf outside an output's window does not reach it (as inf * 0)
    a = np.zeros((1, 1, 1, 40), np.float32)
    a[..., 0] = np.inf
    out = M.interpolate(ember.tensor(a), size=(1, 10), mode="bilinear", antialias=True).numpy()
    assert np.isinf(out[..., 0]).all() and (out[..., 1:] == 0).all()
    with pytest.raises(ValueError, match="Anti-alias option is restricted"):
        M.interpolate(ember.randn(1, 2, 5), size=3, mode="linear", antialias=True)
    with pytest.raises(ValueError, match="Lanczos mode requires antialias=True"):
        M.interpolate(ember.randn(1, 2, 5, 5), size=3, mode="lanczos")
    with pytest.raises(NotImplementedError, match="compute_index_ranges_weights"):
        M.interpolate(ember.randn(1, 2, 5, 5).half(), size=3, mode="bilinear", antialias=True)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "lanczos"])
def test_interpolate_uint8_is_the_float_result_rounded(mode):
    """The fixed-point uint8 kernel lands within one level of the float resize done pass by
    pass, each pass rounded and clamped (its int16 weights), and keeps a constant image
    constant."""
    rng = np.random.default_rng(1)
    a = rng.integers(0, 256, (1, 3, 23, 31), dtype=np.uint8)
    for aa in (True, False) if mode != "lanczos" else (True,):
        for size in ((9, 12), (40, 50)):
            got = M.interpolate(ember.tensor(a), size=size, mode=mode, antialias=aa)
            assert got.dtype == ember.uint8
            ref = a.astype(np.float64)  # pass by pass, each rounded to uint8: W first, then H
            for step in ((a.shape[2], size[1]), size):
                ref = M.interpolate(ember.tensor(ref), size=step, mode=mode,
                                    antialias=aa).numpy()
                ref = np.clip(np.round(ref), 0, 255)
            # (lanczos: more taps, larger lobes, so more int16 rounding: two levels)
            assert np.abs(got.numpy().astype(int) - ref).max() <= (2 if mode == "lanczos" else 1)
            flat = M.interpolate(ember.full((1, 1, 23, 31), 200, dtype=ember.uint8), size=size,
                                 mode=mode, antialias=aa)
            assert (flat.numpy() == 200).all()


# -- pixel shuffle and distances ---------------------------------------------------------------

def test_pixel_shuffle_errors():
    with pytest.raises(RuntimeError, match="divisible by the square of upscale_factor"):
        M.pixel_shuffle(ember.randn(1, 5, 2, 2), 2)
    with pytest.raises(RuntimeError, match="expects height to be divisible"):
        M.pixel_unshuffle(ember.randn(1, 1, 3, 4), 2)


def test_normalize_against_numpy():
    # (cosine_similarity, pairwise_distance: the generic tests; normalize is not a registry op)
    a = _f64(4, 5, seed=1)
    an = a.detach().numpy()
    np.testing.assert_allclose(M.normalize(a, dim=0).detach().numpy(),
                               an / np.linalg.norm(an, axis=0, keepdims=True))
    assert gradcheck(lambda x: M.normalize(x, p=1.0, dim=1), (a,))


def test_cosine_similarity_clamps_each_norm():
    zero = ember.zeros(1, 3)
    assert M.cosine_similarity(zero, ember.ones(1, 3)).item() == 0.0
    x = ember.tensor([[1e-10, 0.0]], dtype=ember.float64)
    # PyTorch 2: each norm is clamped to eps separately
    assert M.cosine_similarity(x, x).item() == pytest.approx(1e-20 / 1e-16)
    assert M.cosine_similarity(ember.randn(2, 3), ember.randn(1, 3)).shape == (2,)


# -- devices -----------------------------------------------------------------------------------

def test_ops_keep_the_device(testdev):
    x = ember.randn(2, 4, 3, 3, device=testdev, requires_grad=True)
    outs = [M.dropout(x, 0.5), M.dropout2d(x, 0.5), M.pad(x, (1, 1, 2, 0), "reflect"),
            M.pad(x, (1, 2)), M.interpolate(x, scale_factor=2, mode="bilinear"),
            M.interpolate(x, size=(2, 5)), M.pixel_shuffle(x, 2), M.normalize(x),
            M.cosine_similarity(x, x)]
    for out in outs:
        assert out.device == testdev
        out.sum().backward()
        assert x.grad.device == testdev
    w = ember.randn(5, 3, device=testdev, requires_grad=True)
    e = M.embedding(ember.tensor([0, 4], device=testdev), w, padding_idx=0)
    e.sum().backward()
    assert e.device == testdev and w.grad.device == testdev
    assert M.one_hot(ember.tensor([0, 2], device=testdev)).device == testdev


def test_mixing_devices_raises(testdev):
    w = ember.randn(5, 3, device=testdev)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        M.embedding(ember.tensor([0, 1]), w)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        M.cosine_similarity(ember.randn(2, 3), ember.randn(2, 3, device=testdev))


# -- embedding_bag and cdist -------------------------------------------------------------------

def test_embedding_bag_against_numpy():
    w = _f64(6, 3, seed=3)
    wn = w.detach().numpy()
    idx = ember.tensor([0, 1, 2, 3, 4, 5])
    offsets = ember.tensor([0, 2, 2])
    out = M.embedding_bag(idx, w, offsets, mode="sum").detach().numpy()
    np.testing.assert_allclose(out, [wn[:2].sum(0), np.zeros(3), wn[2:].sum(0)])
    out = M.embedding_bag(idx, w, offsets, mode="max").detach().numpy()
    np.testing.assert_allclose(out, [wn[:2].max(0), np.zeros(3), wn[2:].max(0)])
    out = M.embedding_bag(ember.tensor([[0, 1, 1], [4, 5, 1]]), w, padding_idx=1).detach().numpy()
    np.testing.assert_allclose(out, [wn[0], wn[4:].mean(0)])


def test_embedding_bag_errors():
    w = ember.randn(4, 2)
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        M.embedding_bag(ember.tensor([[0, 1]]), w, ember.tensor([0]))
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor"):
        M.embedding_bag(ember.tensor([0, 1]), w)
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        M.embedding_bag(ember.tensor([0, 1]), w, ember.tensor([1]))
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported"):
        M.embedding_bag(ember.tensor([0, 1]), w, ember.tensor([0]), mode="max",
                        per_sample_weights=ember.ones(2))


# p = 1, 3, inf on same-rank inputs: the generic tests; here a 3-d x1 with a 2-d x2
@pytest.mark.parametrize("p", [2.0])
def test_cdist_against_numpy_and_gradcheck(p):
    a, b = _f64(2, 4, 3, seed=4), _f64(5, 3, seed=5)
    diff = a.detach().numpy()[:, :, None, :] - b.detach().numpy()[None, None]
    np.testing.assert_allclose(ember.cdist(a, b, p).detach().numpy(),
                               np.linalg.norm(diff, ord=p, axis=-1) if p != 3.0 else
                               (np.abs(diff) ** 3).sum(-1) ** (1 / 3))
    assert gradcheck(lambda x, y: ember.cdist(x, y, p), (a, b))


def test_cdist_errors():
    with pytest.raises(RuntimeError, match="cdist only supports at least 2D tensors"):
        ember.cdist(ember.randn(3), ember.randn(3, 3))
    with pytest.raises(RuntimeError, match="X1 and X2 must have the same number of columns"):
        ember.cdist(ember.randn(2, 3), ember.randn(2, 4))
    with pytest.raises(RuntimeError, match="cdist only supports non-negative p values"):
        ember.cdist(ember.randn(2, 3), ember.randn(2, 3), -1.0)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_low_precision_dropout_rounds_once_as_torch(dtype):
    """float16/bfloat16 dropout scales in float32 and rounds once: each kept value is
    torch's ``x * (1 / (1 - p))`` rounded to the dtype; the gradient is the rounded scale."""
    torch = pytest.importorskip("torch")
    x = ember.randn(4000).to(getattr(ember, dtype)).requires_grad_()
    y = ember.nn.functional.dropout(x, 0.3)
    keep = (y != 0).numpy()
    assert y.dtype is x.dtype and 0.65 < keep.mean() < 0.75
    tx = torch.tensor(x.detach().float().numpy()).to(getattr(torch, dtype))
    ref = (tx * torch.tensor(1 / 0.7)).float().numpy()
    np.testing.assert_array_equal(y.detach().float().numpy()[keep], ref[keep])
    y.sum().backward()
    scale = float(torch.tensor(1 / 0.7).to(getattr(torch, dtype)))
    np.testing.assert_array_equal(np.unique(x.grad.float().numpy()), [0.0, scale])
