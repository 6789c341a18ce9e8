"""Activations and miscellaneous nn.functional kernels against PyTorch (the oracle; skipped
without it): values (1e-5 float32, 1e-10 float64), dtypes, shapes, gradients, and that errors
are raised in the same cases."""

import warnings

import numpy as np
import pytest

import ember
from ember.ops import activation as A
from ember.ops import nn_misc as M

torch = pytest.importorskip("torch")
F = torch.nn.functional

pytestmark = [pytest.mark.parity, pytest.mark.filterwarnings("ignore::UserWarning")]

TOL = {"float32": 1e-5, "float64": 1e-10}


def _pair(x, requires_grad=False):
    e = ember.tensor(x.copy(), requires_grad=requires_grad)
    t = torch.tensor(x.copy(), requires_grad=requires_grad)
    return e, t


def _check(e, t, dt="float64"):
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    assert tuple(e.shape) == tuple(t.shape)
    a, b = e.detach().numpy(), t.detach().numpy()
    if a.dtype.kind in "biu":
        np.testing.assert_array_equal(a, b)
    else:
        tol = TOL.get(dt, 1e-5)
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _run(ember_fn, torch_fn, x, dt, grad=True, grad_dt=None):
    """Compare values, and gradients for a random upstream gradient (``grad_dt`` sets the
    gradient's tolerance by a dtype name)."""
    e, t = _pair(x.astype(dt), requires_grad=grad)
    ye, yt = ember_fn(e), torch_fn(t)
    _check(ye, yt, dt)
    if grad:
        g = np.random.default_rng(9).normal(size=yt.shape).astype(dt)
        ye.backward(ember.tensor(g))
        yt.backward(torch.tensor(g))
        _check(e.grad, t.grad, grad_dt or dt)


# PyTorch computes these backward constants in float32 even for float64 (hardsigmoid's
# ``1.0f / 6.0f``, celu's ``1 / alpha``): compare their gradients at float32 tolerance
FLOAT32_CONSTANT_GRADS = {"celu", "hardsigmoid"}

ACTIVATIONS = [
    ("relu6", A.relu6, F.relu6),
    ("leaky_relu", lambda x: A.leaky_relu(x, 0.2), lambda x: F.leaky_relu(x, 0.2)),
    ("elu", lambda x: A.elu(x, 1.3), lambda x: F.elu(x, 1.3)),
    ("selu", A.selu, F.selu),
    ("celu", lambda x: A.celu(x, 0.6), lambda x: F.celu(x, 0.6)),
    ("gelu", A.gelu, F.gelu),
    ("gelu_tanh", lambda x: A.gelu(x, approximate="tanh"),
     lambda x: F.gelu(x, approximate="tanh")),
    ("silu", A.silu, F.silu),
    ("mish", A.mish, F.mish),
    ("softplus", lambda x: A.softplus(x, 2.0, 4.0), lambda x: F.softplus(x, 2.0, 4.0)),
    ("hardswish", A.hardswish, F.hardswish),
    ("hardsigmoid", A.hardsigmoid, F.hardsigmoid),
    ("hardtanh", lambda x: A.hardtanh(x, -0.4, 0.9), lambda x: F.hardtanh(x, -0.4, 0.9)),
    ("logsigmoid", A.logsigmoid, F.logsigmoid),
    ("softsign", A.softsign, F.softsign),
    ("tanhshrink", A.tanhshrink, F.tanhshrink),
    ("softshrink", lambda x: A.softshrink(x, 0.7), lambda x: F.softshrink(x, 0.7)),
    ("hardshrink", lambda x: A.hardshrink(x, 0.7), lambda x: F.hardshrink(x, 0.7)),
    ("threshold", lambda x: A.threshold(x, 0.2, -3.0), lambda x: F.threshold(x, 0.2, -3.0)),
    ("rrelu", A.rrelu, F.rrelu),
    ("glu", lambda x: A.glu(x, 1), lambda x: F.glu(x, 1)),
    ("softmax", lambda x: A.softmax(x, 1), lambda x: F.softmax(x, 1)),
    ("log_softmax", lambda x: A.log_softmax(x, 0), lambda x: F.log_softmax(x, 0)),
    ("softmin", lambda x: A.softmin(x, -1), lambda x: F.softmin(x, -1)),
]


def _random(shape=(4, 6), seed=0, scale=4.0):
    x = np.random.default_rng(seed).uniform(-scale, scale, shape)
    return np.where(np.abs(x) < 1e-3, 0.5, x)


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("name,efn,tfn", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activation_values_and_gradients(name, efn, tfn, dt):
    grad_dt = "float32" if name in FLOAT32_CONSTANT_GRADS else None
    _run(efn, tfn, _random(), dt, grad_dt=grad_dt)
    _run(efn, tfn, _random((2, 4, 3), seed=1, scale=30.0), dt, grad_dt=grad_dt)  # saturated


@pytest.mark.parametrize("name,efn,tfn", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activation_integer_inputs_fail_alike(name, efn, tfn):
    x = np.array([[-2, 0, 3, 1], [4, -1, 0, 2]])
    try:
        expected = tfn(torch.tensor(x))
    except Exception as exc:  # the oracle decides which error
        with pytest.raises(type(exc)):
            efn(ember.tensor(x))
        return
    _check(efn(ember.tensor(x)), expected, "float32")


def test_activation_grad_fn_names():
    x = _random()
    e, t = _pair(x, requires_grad=True)
    for efn, tfn in ((A.relu6, F.relu6), (A.elu, F.elu), (A.selu, F.selu), (A.celu, F.celu),
                     (A.gelu, F.gelu), (A.silu, F.silu), (A.leaky_relu, F.leaky_relu),
                     (A.hardswish, F.hardswish), (A.logsigmoid, F.logsigmoid),
                     (lambda v: A.softmax(v, 1), lambda v: F.softmax(v, 1)),
                     (lambda v: A.log_softmax(v, 1), lambda v: F.log_softmax(v, 1)),
                     (lambda v: A.glu(v, 1), lambda v: F.glu(v, 1))):
        assert type(efn(e).grad_fn).__name__ == type(tfn(t).grad_fn).__name__


def test_prelu_parity():
    x = _random((3, 4, 5))
    for w in (np.array([0.2, -0.1, 0.5, 0.3]), np.array([0.25])):
        e, t = _pair(x, requires_grad=True)
        we, wt = _pair(w, requires_grad=True)
        ye, yt = A.prelu(e, we), F.prelu(t, wt)
        _check(ye, yt)
        g = np.random.default_rng(1).normal(size=x.shape)
        ye.backward(ember.tensor(g))
        yt.backward(torch.tensor(g))
        _check(e.grad, t.grad)
        _check(we.grad, wt.grad)
    for shape, nw in (((3,), 1), ((3,), 3), ((2, 3), 2)):
        x = np.ones(shape)
        try:
            F.prelu(torch.tensor(x), torch.ones(nw, dtype=torch.float64))
        except RuntimeError:
            with pytest.raises(RuntimeError):
                A.prelu(ember.tensor(x), ember.ones(nw, dtype=ember.float64))
        else:
            A.prelu(ember.tensor(x), ember.ones(nw, dtype=ember.float64))


def test_softmax_dtype_and_dim_parity():
    x = _random((2, 3, 4))
    e, t = _pair(x.astype("float32"))
    _check(A.softmax(e, 2, dtype=ember.float64), F.softmax(t, 2, dtype=torch.float64))
    _check(ember.softmax(e, 1, ember.float64), torch.softmax(t, 1, torch.float64))
    _check(e.log_softmax(-1), t.log_softmax(-1), "float32")
    for shape in ((5,), (2, 3), (2, 3, 4), (2, 3, 4, 5)):
        data = _random(shape)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _check(A.softmax(ember.tensor(data)), F.softmax(torch.tensor(data)))
            _check(A.log_softmax(ember.tensor(data)), F.log_softmax(torch.tensor(data)))


@pytest.mark.parametrize("call", [
    lambda m, x: m.glu(x, 1), lambda m, x: m.softshrink(x, -0.5),
    lambda m, x: m.hardtanh(x, 2.0, 1.0), lambda m, x: m.softmax(x, 3),
])
def test_activation_errors_alike(call):
    x = np.ones((2, 3))
    with pytest.raises(Exception) as t_err:
        call(F, torch.tensor(x))
    with pytest.raises(t_err.type):
        call(A, ember.tensor(x))


# -- nn_misc -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("mode,pad,shape", [
    ("constant", (1, 2), (2, 3, 4)), ("constant", (-1, 2, 3, -2), (2, 3, 4)),
    ("constant", (1, 1, 1, 1, 1, 1), (2, 3, 4)),
    ("reflect", (2, 1), (2, 3, 4)), ("reflect", (2, 1, 1, 2), (1, 2, 3, 4)),
    ("reflect", (1, 1, 2, 1, 1, 0), (1, 2, 3, 4, 3)),
    ("replicate", (3, 1), (2, 3, 4)), ("replicate", (2, 5, 1, 3), (2, 3, 4)),
    ("replicate", (-1, 2, 1, 1), (2, 3, 4)),
    ("circular", (2, 1), (2, 3, 4)), ("circular", (-1, 3, 2, 2), (1, 2, 3, 4)),
])
def test_pad_parity(mode, pad, shape, dt):
    _run(lambda x: M.pad(x, pad, mode), lambda x: F.pad(x, pad, mode),
         _random(shape), dt)


def test_pad_constant_value_and_errors_parity():
    x = _random((2, 3))
    _check(M.pad(ember.tensor(x), (1, 1), value=2.5), F.pad(torch.tensor(x), (1, 1), value=2.5))
    xi = np.arange(6).reshape(2, 3)
    _check(M.pad(ember.tensor(xi), (1, 0), value=7), F.pad(torch.tensor(xi), (1, 0), value=7))
    for pad, mode, shape in (((1,), "constant", (2, 3)), ((3, 3), "reflect", (1, 2, 3)),
                             ((4, 4), "circular", (1, 2, 3)), ((1,) * 6, "reflect", (1, 2, 3)),
                             ((1, 1), "reflect", (3,)), ((-3, 0), "constant", (2, 2))):
        data = np.ones(shape)
        with pytest.raises(Exception) as t_err:
            F.pad(torch.tensor(data), pad, mode)
        with pytest.raises(t_err.type):
            M.pad(ember.tensor(data), pad, mode)


INTERP = [
    ("nearest", None, (1, 2, 5), {"size": 8}),
    ("nearest", None, (1, 2, 5, 3), {"scale_factor": 1.7}),
    ("nearest", None, (1, 2, 6, 3), {"scale_factor": (0.5, 2.0)}),
    ("nearest", None, (1, 1, 3, 4, 2), {"size": (5, 2, 3)}),
    ("nearest-exact", None, (1, 2, 5, 3), {"scale_factor": 1.3}),
    ("nearest-exact", None, (1, 2, 7), {"size": 3}),
    ("linear", False, (2, 2, 5), {"size": 9}),
    ("linear", True, (2, 2, 5), {"scale_factor": 2.5}),
    ("bilinear", False, (1, 2, 4, 5), {"size": (7, 3)}),
    ("bilinear", True, (1, 2, 4, 5), {"size": (7, 3)}),
    ("bilinear", False, (1, 2, 4, 5), {"scale_factor": 1.7}),
    ("bilinear", False, (1, 2, 4, 5), {"scale_factor": 1.7, "recompute_scale_factor": True}),
    ("bilinear", False, (1, 1, 8, 8), {"scale_factor": 0.3}),
    ("bicubic", False, (1, 2, 4, 5), {"size": (9, 4)}),
    ("bicubic", True, (1, 2, 4, 5), {"scale_factor": 1.5}),
    ("trilinear", False, (1, 1, 3, 4, 2), {"scale_factor": 2}),
    ("trilinear", True, (1, 1, 3, 4, 2), {"size": (4, 4, 5)}),
]


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("mode,align,shape,kw", INTERP)
def test_interpolate_parity(mode, align, shape, kw, dt):
    kwargs = dict(kw, mode=mode)
    if align is not None:
        kwargs["align_corners"] = align
    _run(lambda x: M.interpolate(x, **kwargs), lambda x: F.interpolate(x, **kwargs),
         _random(shape), dt)


def test_interpolate_errors_alike():
    x = np.ones((1, 1, 3, 3))
    cases = [dict(size=4, scale_factor=2), dict(), dict(size=4, align_corners=True),
             dict(size=4, mode="linear"), dict(size=(4,), mode="bilinear"),
             dict(size=4, mode="trilinear")]
    for kw in cases:
        with pytest.raises(Exception) as t_err:
            F.interpolate(torch.tensor(x), **kw)
        with pytest.raises(t_err.type):
            M.interpolate(ember.tensor(x), **kw)


def test_embedding_parity():
    w = _random((10, 4))
    idx = np.array([[1, 2, 2, 7], [0, 9, 1, 1]])
    for kw in ({}, {"padding_idx": 1}, {"padding_idx": -1, "scale_grad_by_freq": True}):
        we, wt = _pair(w, requires_grad=True)
        ye = M.embedding(ember.tensor(idx), we, **kw)
        yt = F.embedding(torch.tensor(idx), wt, **kw)
        _check(ye, yt)
        g = np.random.default_rng(2).normal(size=yt.shape)
        ye.backward(ember.tensor(g))
        yt.backward(torch.tensor(g))
        _check(we.grad, wt.grad)
    we, wt = _pair(w * 3)
    _check(M.embedding(ember.tensor(idx), we, max_norm=1.5, norm_type=1.0),
           F.embedding(torch.tensor(idx), wt, max_norm=1.5, norm_type=1.0))
    _check(we, wt)
    for bad_idx in (np.array([10]), np.array([-1]), np.array([0.0])):
        with pytest.raises(Exception) as t_err:
            F.embedding(torch.tensor(bad_idx), wt)
        with pytest.raises(t_err.type):
            M.embedding(ember.tensor(bad_idx), we)


def test_one_hot_parity():
    x = np.array([[0, 3], [2, 1]])
    _check(M.one_hot(ember.tensor(x)), F.one_hot(torch.tensor(x)))
    _check(M.one_hot(ember.tensor(x), 6), F.one_hot(torch.tensor(x), 6))
    for data, n in ((np.array([1.0]), -1), (np.array([3]), 3), (np.array([-1]), -1),
                    (np.array([], dtype=np.int64), -1)):
        with pytest.raises(Exception) as t_err:
            F.one_hot(torch.tensor(data), n)
        with pytest.raises(t_err.type):
            M.one_hot(ember.tensor(data), n)


def test_pixel_shuffle_parity():
    _run(lambda x: M.pixel_shuffle(x, 2), lambda x: F.pixel_shuffle(x, 2),
         _random((2, 8, 3, 4)), "float64")
    _run(lambda x: M.pixel_unshuffle(x, 3), lambda x: F.pixel_unshuffle(x, 3),
         _random((1, 2, 6, 9)), "float32")
    _run(lambda x: M.pixel_shuffle(x, 3), lambda x: F.pixel_shuffle(x, 3),
         _random((9, 2, 2)), "float64")


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_distance_parity(dt):
    a, b = _random((4, 5), seed=3).astype(dt), _random((4, 5), seed=4).astype(dt)
    for efn, tfn in ((lambda x, y: M.cosine_similarity(x, y), F.cosine_similarity),
                     (lambda x, y: M.cosine_similarity(x, y, dim=0, eps=1e-3),
                      lambda x, y: F.cosine_similarity(x, y, dim=0, eps=1e-3)),
                     (M.pairwise_distance, F.pairwise_distance),
                     (lambda x, y: M.pairwise_distance(x, y, 1.0, 1e-3, True),
                      lambda x, y: F.pairwise_distance(x, y, 1.0, 1e-3, True)),
                     (lambda x, y: M.normalize(x * y, 3.0, 0),
                      lambda x, y: F.normalize(x * y, 3.0, 0))):
        (ea, ta), (eb, tb) = _pair(a, True), _pair(b, True)
        ye, yt = efn(ea, eb), tfn(ta, tb)
        _check(ye, yt, dt)
        ye.sum().backward()
        yt.sum().backward()
        _check(ea.grad, ta.grad, dt)
        _check(eb.grad, tb.grad, dt)
    tiny = np.array([[1e-10, 0.0]])
    _check(M.cosine_similarity(ember.tensor(tiny), ember.tensor(tiny)),
           F.cosine_similarity(torch.tensor(tiny), torch.tensor(tiny)))


def test_dropout_shapes_dtypes_and_errors_alike():
    x = _random((4, 3, 2, 2)).astype("float32")
    for efn, tfn in ((M.dropout, F.dropout), (M.dropout2d, F.dropout2d),
                     (lambda v, p: M.alpha_dropout(v, p, True),
                      lambda v, p: F.alpha_dropout(v, p, True))):
        ye, yt = efn(ember.tensor(x), 0.5), tfn(torch.tensor(x), 0.5)
        assert ye.dtype == ember.float32 and tuple(ye.shape) == tuple(yt.shape)
        with pytest.raises(ValueError):
            F.dropout(torch.tensor(x), 1.5)
        with pytest.raises(ValueError):
            efn(ember.tensor(x), 1.5)
    # p == 1 zeroes everything; eval mode is the identity
    _check(M.dropout(ember.tensor(x), 1.0), F.dropout(torch.tensor(x), 1.0), "float32")
    _check(M.alpha_dropout(ember.tensor(x), 1.0, True),
           F.alpha_dropout(torch.tensor(x), 1.0, True), "float32")
    _check(M.dropout(ember.tensor(x), 0.3, False), F.dropout(torch.tensor(x), 0.3, False),
           "float32")


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 1])
def test_embedding_bag_parity(mode, padding_idx):
    w = _random((6, 3), seed=5)
    for idx, offsets in ((np.array([[0, 1, 5], [2, 2, 1]]), None),
                         (np.array([0, 1, 2, 3, 4, 1]), np.array([0, 0, 2]))):
        we, wt = _pair(w, requires_grad=True)
        psw = np.linspace(0.5, 2, idx.size).reshape(idx.shape) if mode == "sum" else None
        ye = M.embedding_bag(ember.tensor(idx), we, None if offsets is None else
                             ember.tensor(offsets), mode=mode, padding_idx=padding_idx,
                             per_sample_weights=None if psw is None else ember.tensor(psw))
        yt = F.embedding_bag(torch.tensor(idx), wt, None if offsets is None else
                             torch.tensor(offsets), mode=mode, padding_idx=padding_idx,
                             per_sample_weights=None if psw is None else torch.tensor(psw))
        _check(ye, yt)
        g = np.random.default_rng(3).normal(size=yt.shape)
        ye.backward(ember.tensor(g))
        yt.backward(torch.tensor(g))
        _check(we.grad, wt.grad)


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 2.5, float("inf")])
def test_cdist_parity(p):
    a, b = _random((2, 4, 3), seed=6), _random((5, 3), seed=7)
    (ea, ta), (eb, tb) = _pair(a, True), _pair(b, True)
    ye, yt = ember.cdist(ea, eb, p), torch.cdist(ta, tb, p)
    _check(ye, yt)
    ye.sum().backward()
    yt.sum().backward()
    _check(ea.grad, ta.grad)
    _check(eb.grad, tb.grad)
    for s1, s2, q in (((3,), (3, 3), 2.0), ((2, 3), (2, 4), 2.0), ((2, 3), (2, 3), -1.0)):
        with pytest.raises(RuntimeError):
            torch.cdist(torch.ones(s1), torch.ones(s2), q)
        with pytest.raises(RuntimeError):
            ember.cdist(ember.ones(s1), ember.ones(s2), q)


NAMES = ["relu6", "leaky_relu", "elu", "selu", "celu", "gelu", "silu", "mish", "softplus",
         "hardswish", "hardsigmoid", "hardtanh", "prelu", "rrelu", "glu", "logsigmoid",
         "softsign", "tanhshrink", "softshrink", "hardshrink", "threshold", "softmax",
         "log_softmax", "softmin", "dropout", "alpha_dropout", "feature_alpha_dropout",
         "feature_dropout", "embedding", "embedding_bag", "one_hot", "pad", "interpolate",
         "pixel_shuffle", "pixel_unshuffle", "cosine_similarity", "pairwise_distance",
         "normalize", "cdist"]


@pytest.mark.parametrize("name", NAMES)
def test_registered_where_pytorch_has_them(name):
    if name != "embedding_bag":  # torch.embedding_bag is the 4-output ATen op
        assert hasattr(ember, name) == hasattr(torch, name)
    assert hasattr(ember.Tensor, name) == hasattr(torch.Tensor, name)
    for suffix_name in (name + "_",):
        assert hasattr(ember, suffix_name) == hasattr(torch, suffix_name), suffix_name
        assert hasattr(ember.Tensor, suffix_name) == hasattr(torch.Tensor, suffix_name)
    module = A if hasattr(A, name) else M
    assert callable(getattr(module, name))
    if hasattr(F, name + "_"):
        assert callable(getattr(module, name + "_", None) or getattr(ember, name + "_"))


def test_torch_embedding_argument_order():
    w = _random((5, 2))
    idx = np.array([[0, 4], [4, 1]])
    _check(ember.embedding(ember.tensor(w), ember.tensor(idx)),
           torch.embedding(torch.tensor(w), torch.tensor(idx)))
