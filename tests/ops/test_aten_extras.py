"""ATen-level names of ``ember/ops/aten_extras.py`` beyond the generic op tests (which run
their samples against PyTorch, gradcheck and the strict device): the plain exports, the
statistics of the native norms, the recurrent ops against ``nn``'s modules, and errors."""

import warnings

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # the oracle is optional
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")


def _raises(exc, match, fn, *args, **kwargs):
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    assert str(info.value) == match


# -- set_default_tensor_type -------------------------------------------------------------------

@pytest.fixture
def restore_dtype():
    before = ember.get_default_dtype()
    yield
    ember.set_default_dtype(before)


@pytest.mark.parametrize("spec", [ember.DoubleTensor, "torch.DoubleTensor", "ember.DoubleTensor"])
def test_set_default_tensor_type(restore_dtype, spec):
    with pytest.warns(UserWarning, match="set_default_tensor_type\\(\\) is deprecated"):
        ember.set_default_tensor_type(spec)
    assert ember.get_default_dtype() is ember.float64
    assert ember.tensor([1.0]).dtype is ember.float64
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ember.set_default_tensor_type(ember.FloatTensor)
    assert ember.tensor([1.0]).dtype is ember.float32


@pytest.mark.parametrize("spec, msg", [
    (ember.LongTensor, "only floating-point types are supported as the default type"),
    ("torch.IntTensor", "only floating-point types are supported as the default type"),
    ("torch.cuda.FloatTensor",
     "type torch.cuda.FloatTensor not available. Torch not compiled with CUDA enabled."),
    (ember.float64, "invalid type object: only floating-point types are supported as the "
                    "default type"),
    (3, "invalid type object: only floating-point types are supported as the default type"),
])
def test_set_default_tensor_type_refuses(restore_dtype, spec, msg):
    if spec == "torch.cuda.FloatTensor" and ember.cuda.is_available():
        pytest.skip("CUDA is available here")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _raises(TypeError, msg, ember.set_default_tensor_type, spec)
    assert ember.get_default_dtype() is ember.float32


def test_matrix_rank_is_removed():
    with pytest.raises(RuntimeError, match="Please use the `torch.linalg.matrix_rank` function"):
        ember.matrix_rank(ember.eye(3))


# -- recurrent ops against nn's modules --------------------------------------------------------

@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_rnn_matches_module(kind, bidirectional):
    nn = pytest.importorskip("ember.nn")
    ember.manual_seed(0)
    mod = getattr(nn, kind)(3, 4, num_layers=2, bidirectional=bidirectional, batch_first=True,
                            dtype=ember.float64)
    x = ember.randn(2, 5, 3, dtype=ember.float64)
    d = 2 if bidirectional else 1
    h0 = ember.randn(2 * d, 2, 4, dtype=ember.float64)
    params = list(mod._flat_weights)
    if kind == "LSTM":
        c0 = ember.randn(2 * d, 2, 4, dtype=ember.float64)
        want, (wh, wc) = mod(x, (h0, c0))
        got, gh, gc = ember.lstm(x, (h0, c0), params, True, 2, 0.0, False, bidirectional, True)
        np.testing.assert_allclose(gc.detach().numpy(), wc.detach().numpy(), atol=1e-12)
    else:
        want, wh = mod(x, h0)
        fn = ember.gru if kind == "GRU" else ember.rnn_tanh
        got, gh = fn(x, h0, params, True, 2, 0.0, False, bidirectional, True)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(gh.detach().numpy(), wh.detach().numpy(), atol=1e-12)


def test_packed_lstm_matches_module():
    nn = pytest.importorskip("ember.nn")
    ember.manual_seed(1)
    mod = nn.LSTM(3, 4, dtype=ember.float64)
    seqs = [ember.randn(n, 3, dtype=ember.float64) for n in (4, 2, 1)]
    packed = nn.utils.rnn.pack_sequence(seqs)
    want, (wh, wc) = mod(packed)
    zeros = ember.zeros(1, 3, 4, dtype=ember.float64)
    got, gh, gc = ember.lstm(packed.data, packed.batch_sizes, (zeros, zeros),
                             list(mod._flat_weights), True, 1, 0.0, False, False)
    np.testing.assert_allclose(got.detach().numpy(), want.data.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(gh.detach().numpy(), wh.detach().numpy(), atol=1e-12)


def test_cells_gradcheck_and_errors():
    ember.manual_seed(2)
    x = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    h = ember.randn(2, 4, dtype=ember.float64, requires_grad=True)
    w_ih = ember.randn(16, 3, dtype=ember.float64, requires_grad=True)
    w_hh = ember.randn(16, 4, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda *a: ember.lstm_cell(a[0], (a[1], a[1]), *a[2:]),
                                    (x, h, w_ih, w_hh))
    assert ember.lstm_cell(x, (h, h), w_ih, w_hh)[0].grad_fn.name() == "MulBackward0"
    _raises(RuntimeError, "input has inconsistent input_size: got 3 expected 5",
            ember.lstm_cell, x, (h, h), ember.randn(16, 5), ember.randn(16, 4))
    _raises(RuntimeError, "hidden0 has inconsistent hidden_size: got 5, expected 4",
            ember.lstm_cell, x.float(), (ember.randn(2, 5), h.float()), w_ih.float(),
            w_hh.float())
    _raises(RuntimeError, "Input batch size 2 doesn't match hidden0 batch size 3",
            ember.rnn_tanh_cell, x, ember.randn(3, 4), ember.randn(4, 3), ember.randn(4, 4))
    _raises(RuntimeError, "got an incorrect number of RNN parameters", ember.gru,
            ember.randn(5, 2, 3), ember.randn(1, 2, 4), [ember.randn(12, 3), ember.randn(12, 4)],
            True, 1, 0.0, False, False, False)


# -- native norms -------------------------------------------------------------------------------

def test_native_norm_statistics():
    x = ember.randn(4, 3, 5, dtype=ember.float64)
    out, mean, rstd = ember.native_layer_norm(x, [5], None, None, 1e-5)
    assert mean.shape == (4, 3, 1) and rstd.shape == (4, 3, 1)
    np.testing.assert_allclose(mean.numpy(), x.numpy().mean(-1, keepdims=True))
    np.testing.assert_allclose(rstd.numpy(), 1 / np.sqrt(x.numpy().var(-1, keepdims=True) + 1e-5))
    out, mean, invstd = ember.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5)
    assert mean.shape == (3,) and invstd.shape == (3,)
    np.testing.assert_allclose(mean.numpy(), x.numpy().mean((0, 2)))
    out, mean, invstd = ember.native_batch_norm(x, None, None, ember.zeros(3, dtype=ember.float64),
                                                ember.ones(3, dtype=ember.float64), False, 0.1,
                                                1e-5)
    assert mean.shape == (0,) and invstd.shape == (0,)
    out, mean, rstd = ember.native_group_norm(x, None, None, 4, 3, 5, 3, 1e-5)
    assert mean.shape == (4, 3) and rstd.shape == (4, 3)
    np.testing.assert_allclose(mean.numpy(), x.numpy().mean(-1))
    xg = x.clone().requires_grad_(True)
    out, mean, _ = ember.native_group_norm(xg, None, None, 4, 3, 5, 3, 1e-5)
    assert out.grad_fn.name() == "NativeGroupNormBackward0" and mean.requires_grad  # as torch
    _raises(RuntimeError, "Expected X.numel() == N * C * HxW to be true, but got false.  (Could "
            "this error message be improved?  If so, please report an enhancement request to "
            "PyTorch.)", ember.native_group_norm, x, None, None, 2, 3, 5, 3, 1e-5)


def test_norm_except_dim_and_renorm():
    v = ember.tensor([[3.0, 4.0], [6.0, 8.0]])
    np.testing.assert_allclose(ember.norm_except_dim(v, 2, 0).numpy(), [[5.0], [10.0]])
    np.testing.assert_allclose(ember.norm_except_dim(v, 2, -1).numpy(), np.sqrt(125.0),
                               rtol=1e-6)
    w = v.clone()
    assert ember.embedding_renorm_(w, ember.tensor([1, 1]), 5.0, 2.0) is w
    np.testing.assert_allclose(w.numpy(), [[3.0, 4.0], [3.0, 4.0]], rtol=1e-6)
    with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar"):
        ember.embedding_renorm_(w, ember.tensor([0.0]), 1.0, 2.0)
    with pytest.raises(RuntimeError, match="Expected at most 2 dimensions, but got 3"):
        ember.frobenius_norm(ember.randn(2, 2, 2), [0, 1, 2])


# -- segment_reduce ----------------------------------------------------------------------------

def test_segment_reduce_values_and_errors():
    d = ember.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], requires_grad=True)
    lengths = ember.tensor([2, 0, 3, 1])
    assert ember.segment_reduce(d, "sum", lengths=lengths).tolist() == [3.0, 0.0, 12.0, 6.0]
    assert ember.segment_reduce(d, "max", lengths=lengths).tolist() == \
        [2.0, -float("inf"), 5.0, 6.0]
    out = ember.segment_reduce(d, "mean", lengths=lengths, initial=1.5)
    assert out.tolist() == [2.25, 1.5, 4.5, 7.5]
    assert out.grad_fn.name() == "SegmentReduceBackward0"
    m = ember.segment_reduce(d, "min", lengths=lengths, initial=1.5)
    (g,) = ember.autograd.grad(m.sum(), d)
    assert g.tolist() == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    _raises(RuntimeError, "segment_reduce(): Either lengths or offsets must be defined.",
            ember.segment_reduce, d, "sum")
    _raises(RuntimeError, "reduce argument must be either sum, prod, mean, amax or amin, got foo",
            ember.segment_reduce, d, "foo", lengths=lengths)
    _raises(RuntimeError, "lengths contains negative value!", ember.segment_reduce, d, "sum",
            lengths=ember.tensor([2, -1, 5]))
    _raises(RuntimeError, "segment_reduce(): Expected all rows of lengths along axis to sum to "
            "data.size(lengths.dim()-1) when !unsafe.", ember.segment_reduce, d, "sum",
            lengths=ember.tensor([2, 2]))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        ember.segment_reduce(ember.arange(6), "sum", lengths=lengths)


# -- svd_lowrank / pca_lowrank -----------------------------------------------------------------

def _aligned(a, b):
    """``b``'s columns with the signs of ``a``'s (singular vectors are unique up to sign)."""
    signs = np.sign((a * b).sum(0))
    return b * signs


def test_svd_lowrank_reconstructs_low_rank():
    ember.manual_seed(0)
    A = ember.randn(20, 3, dtype=ember.float64) @ ember.randn(3, 15, dtype=ember.float64)
    U, S, V = ember.svd_lowrank(A, q=5)
    assert U.shape == (20, 5) and S.shape == (5,) and V.shape == (15, 5)
    np.testing.assert_allclose((U * S) @ V.mT, A.numpy(), atol=1e-10)
    U, S, V = ember.pca_lowrank(A, q=3)
    C = A - A.mean(0, keepdim=True)
    np.testing.assert_allclose(((U * S) @ V.mT).numpy(), C.numpy(), atol=1e-10)
    with pytest.raises(ValueError, match=r"q\(=7\) must be non-negative integer"):
        ember.pca_lowrank(ember.randn(5, 6), q=7)


@needs_torch
@pytest.mark.parametrize("shape, kw", [((8, 5), {"q": 3}), ((4, 9), {"q": 3, "niter": 1})])
def test_svd_lowrank_matches_torch_under_seed(shape, kw):
    a = np.random.default_rng(0).standard_normal(shape)
    torch.manual_seed(3)
    tu, ts, tv = torch.svd_lowrank(torch.tensor(a), **kw)
    ember.manual_seed(3)
    eu, es, ev = ember.svd_lowrank(ember.tensor(a), **kw)
    np.testing.assert_allclose(es.numpy(), ts.numpy(), rtol=1e-10)
    np.testing.assert_allclose(_aligned(tu.numpy(), eu.numpy()), tu.numpy(), atol=1e-10)
    np.testing.assert_allclose(_aligned(tv.numpy(), ev.numpy()), tv.numpy(), atol=1e-10)


def test_svd_lowrank_sparse():
    ember.manual_seed(4)
    A = ember.randn(6, 2, dtype=ember.float64) @ ember.randn(2, 5, dtype=ember.float64)
    U, S, V = ember.svd_lowrank(A.to_sparse(), q=3)
    np.testing.assert_allclose(((U * S) @ V.mT).numpy(), A.numpy(), atol=1e-10)


# -- while_loop and to_dlpack ------------------------------------------------------------------

def test_while_loop():
    i, x = ember.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x * 2),
                            (ember.tensor(0), ember.ones(2)))
    assert i.item() == 3 and x.tolist() == [8.0, 8.0]
    start = ember.tensor(5)
    (r,) = ember.while_loop(lambda i: i < 3, lambda i: (i + 1,), (start,))
    assert r.item() == 5 and r is not start
    (d,) = ember.while_loop(lambda d: d["i"] < 2, lambda d: ({"i": d["i"] + 1},),
                            ({"i": ember.tensor(0)},))
    assert d["i"].item() == 2
    _raises(RuntimeError, "carried_inputs must be a tuple or list but got "
            "<class 'ember._tensor.Tensor'>", ember.while_loop, lambda i: i < 3, lambda i: (i + 1,),
            ember.tensor(0))
    with pytest.raises(RuntimeError, match="cond_fn must return a boolean scalar tensor"):
        ember.while_loop(lambda i: (i < 3).float(), lambda i: (i + 1,), (ember.tensor(0),))
    with pytest.raises(RuntimeError, match="pair\\[0\\] differ in 'dtype: ember.float32 vs "
                                           "ember.int64'"):
        ember.while_loop(lambda i: i < 3, lambda i: (i + 1.5,), (ember.tensor(0),))


def test_to_dlpack_round_trip():
    x = ember.arange(4.0)
    y = ember.from_dlpack(ember.to_dlpack(x))
    y[0] = 7.0
    assert x[0].item() == 7.0
