"""The recorded graph has PyTorch's node names and input order, since tutorials print them:
``linear`` is ``AddmmBackward0(bias, input, TBackward0(weight))``, a loss with a node of its
own in PyTorch records that node, ``cross_entropy`` is ``NllLossBackward0`` over
``LogSoftmaxBackward0``. The new backward code is gradchecked in float64 here.
The parity twin (tests/parity/test_tutorial_fixes_parity.py) compares with PyTorch itself."""

import numpy as np
import pytest
from testutils import randn64

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(3)


def names(node):
    """``(name, [names of the next nodes])``, None for an input without a gradient."""
    return (type(node).__name__,
            [None if n is None else type(n).__name__ for n, _ in node.next_functions])


W, B = randn64(3, 4, rng=RNG), randn64(3, rng=RNG)


@pytest.mark.parametrize("x, bias, expected", [
    (randn64(5, 4, rng=RNG), B,
     ("AddmmBackward0", ["AccumulateGrad", "AccumulateGrad", "TBackward0"])),
    (randn64(5, 4, rng=RNG, requires_grad=False), B,
     ("AddmmBackward0", ["AccumulateGrad", None, "TBackward0"])),
    (randn64(5, 4, rng=RNG), None, ("MmBackward0", ["AccumulateGrad", "TBackward0"])),
    (randn64(2, 5, 4, rng=RNG), B, ("ViewBackward0", ["AddmmBackward0"])),
    (randn64(2, 5, 4, rng=RNG), None, ("UnsafeViewBackward0", ["MmBackward0"])),
    (randn64(4, rng=RNG), B, ("ViewBackward0", ["AddmmBackward0"])),
    (randn64(2, 4, 5, rng=RNG).transpose(1, 2), B, ("AddBackward0", ["UnsafeViewBackward0",
                                                                     "AccumulateGrad"])),
])
def test_linear_graph_is_pytorchs(x, bias, expected):
    out = F.linear(x, W, bias)
    assert names(out.grad_fn) == expected
    product = out.grad_fn
    while type(product).__name__ not in ("AddmmBackward0", "MmBackward0"):
        product = product.next_functions[0][0]
    t_node = product.next_functions[-1][0]
    assert type(t_node).__name__ == "TBackward0"
    assert t_node.next_functions[0][0].variable is W


def test_linear_weight_grad_is_the_fresh_product():
    lin = ember.nn.Linear(4, 3)
    lin(randn64(5, 4, rng=RNG, requires_grad=False).float()).sum().backward()
    flags = lin.weight.grad._data.flags
    assert flags.owndata and flags.c_contiguous  # adopted as it is: no copy, no transposition


@pytest.mark.parametrize("shape", [(5, 4), (2, 5, 4), (4,), "transposed"])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_gradcheck(shape, with_bias):
    x = (randn64(2, 4, 5, rng=RNG).transpose(1, 2) if shape == "transposed"
         else randn64(*shape, rng=RNG))
    args = (x, randn64(3, 4, rng=RNG)) + ((randn64(3, rng=RNG),) if with_bias else ())
    assert gradcheck(F.linear, args)
    assert gradgradcheck(F.linear, args)


def test_linear_backward_matches_numpy():
    x, w, b = randn64(5, 4, rng=RNG), randn64(3, 4, rng=RNG), randn64(3, rng=RNG)
    g = RNG.standard_normal((5, 3))
    F.linear(x, w, b).backward(ember.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), g @ w.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), g.T @ x.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), g.sum(0), rtol=1e-12)


def test_t_records_tbackward():
    x = randn64(2, 3, rng=RNG)
    assert type(x.t().grad_fn).__name__ == "TBackward0"
    assert gradcheck(lambda u: u.t(), (x,))
    assert gradgradcheck(lambda u: u.t() ** 2, (x,))
    assert gradcheck(lambda u: u.t(), (randn64(3, rng=RNG),))


X, Y = RNG.standard_normal((4, 5)), RNG.standard_normal((4, 5))
P, Q = RNG.uniform(0.05, 0.95, (4, 5)), RNG.uniform(0, 1, (4, 5))
IDX = ember.tensor([1, 0, 4, 2])


def c(a):
    return ember.tensor(a)


LOSSES = {
    "binary_cross_entropy": (lambda x: F.binary_cross_entropy(x, c(Q)), P,
                             ("BinaryCrossEntropyBackward0", ["AccumulateGrad", None])),
    "binary_cross_entropy_weighted_none": (
        lambda x: F.binary_cross_entropy(x, c(Q), weight=c(P), reduction="none"), P,
        ("BinaryCrossEntropyBackward0", ["AccumulateGrad", None])),
    "binary_cross_entropy_with_logits": (
        lambda x: F.binary_cross_entropy_with_logits(x, c(Q), pos_weight=c(P[0])), X,
        ("BinaryCrossEntropyWithLogitsBackward0", ["AccumulateGrad", None])),
    "cross_entropy": (lambda x: F.cross_entropy(x, IDX), X,
                      ("NllLossBackward0", ["LogSoftmaxBackward0"])),
    "nll_loss": (lambda x: F.nll_loss(x, IDX, reduction="none"), X,
                 ("NllLossBackward0", ["AccumulateGrad"])),
    "mse_loss": (lambda x: F.mse_loss(x, c(Y)), X, ("MseLossBackward0", ["AccumulateGrad", None])),
    "l1_loss": (lambda x: F.l1_loss(x, c(Y)), X, ("MeanBackward0", ["AbsBackward0"])),
    "smooth_l1_loss": (lambda x: F.smooth_l1_loss(x, c(Y), beta=0.5), X,
                       ("SmoothL1LossBackward0", ["AccumulateGrad", None])),
    "huber_loss": (lambda x: F.huber_loss(x, c(Y), delta=0.5), X,
                   ("HuberLossBackward0", ["AccumulateGrad", None])),
    "huber_loss_weighted": (lambda x: F.huber_loss(x, c(Y), weight=c(P)), X,
                            ("MeanBackward0", ["MulBackward0"])),
    "soft_margin_loss": (lambda x: F.soft_margin_loss(x, c(np.sign(Y))), X,
                         ("SoftMarginLossBackward0", ["AccumulateGrad"])),
    "multi_margin_loss": (lambda x: F.multi_margin_loss(x, IDX, p=2), X,
                          ("MultiMarginLossBackward0", ["AccumulateGrad"])),
    "log_softmax": (lambda x: F.log_softmax(x, 1), X, ("LogSoftmaxBackward0",
                                                       ["AccumulateGrad"])),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_nodes_are_pytorchs(name):
    fn, data, expected = LOSSES[name]
    x = ember.tensor(data, requires_grad=True)
    assert names(fn(x).grad_fn) == expected
    assert gradcheck(fn, (x,))


def test_broadcast_target_adds_no_node_to_the_input():
    x = randn64(4, 5, rng=RNG)
    with pytest.warns(UserWarning, match="Using a target size"):
        out = F.smooth_l1_loss(x, c(Y[:1]))
    assert names(out.grad_fn) == ("SmoothL1LossBackward0", ["AccumulateGrad", None])


W5 = RNG.standard_normal((3, 5))
DEVICE_CASES = {
    "binary_cross_entropy": (lambda x, d: F.binary_cross_entropy(x.sigmoid(), c(Q).to(d),
                                                                 weight=c(P).to(d))),
    "binary_cross_entropy_with_logits": (
        lambda x, d: F.binary_cross_entropy_with_logits(x, c(Q).to(d), pos_weight=c(P[0]).to(d))),
    "smooth_l1_loss": lambda x, d: F.smooth_l1_loss(x, c(Y).to(d), beta=0.5),
    "huber_loss": lambda x, d: F.huber_loss(x, c(Y).to(d), delta=0.5),
    "soft_margin_loss": lambda x, d: F.soft_margin_loss(x, c(np.sign(Y)).to(d)),
    "multi_margin_loss": lambda x, d: F.multi_margin_loss(x, IDX.to(d), p=2),
    "nll_loss": lambda x, d: F.nll_loss(x, IDX.to(d)),
    "linear-3d": lambda x, d: F.linear(x.reshape(2, 2, 5), c(W5).to(d), c(P[0, :3]).to(d)).sum(),
}


@pytest.mark.parametrize("name", sorted(DEVICE_CASES))
def test_losses_and_linear_stay_on_the_device(name, testdev):
    fn = DEVICE_CASES[name]
    x = ember.tensor(X, requires_grad=True)
    xd = x.detach().to(testdev).requires_grad_()
    out = fn(xd, testdev)
    assert out.device == testdev
    out.backward()
    assert xd.grad.device == testdev
    fn(x, x.device).backward()
    np.testing.assert_allclose(xd.grad.cpu().numpy(), x.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("expr, expected", [
    (lambda b: 2 * b, ("MulBackward0", ["SinBackward0", None])),
    (lambda b: 2 + b, ("AddBackward0", ["SinBackward0", None])),
    (lambda b: 2 - b, ("RsubBackward1", ["SinBackward0"])),
    (lambda b: 2 ** b, ("PowBackward2", ["SinBackward0"])),
    (lambda b: b * 2, ("MulBackward0", ["SinBackward0", None])),
], ids=["rmul", "radd", "rsub", "rpow", "mul"])
def test_reflected_operators_record_pytorchs_graph(expr, expected):
    """A number on the left (``2 * b``) records what PyTorch's Tensor dunders record: the
    tensor's edge first (pytorch/tutorials' autogradyt walks
    ``c.grad_fn.next_functions[0][0]`` of ``c = 2 * b``), rsub and pow of a number with the
    tensor's edge alone. (``2 / b`` stays a division, DivBackward0: PyTorch's
    ``reciprocal(b) * 2`` rounds twice.)"""
    b = randn64(5, rng=RNG).sin()
    out = expr(b)
    assert names(out.grad_fn) == expected
    x = randn64(5, rng=RNG).abs() + 0.5
    assert gradcheck(lambda t: expr(t.sin() + 2), (x,))
    assert gradgradcheck(lambda t: expr(t.sin() + 2), (x,))


def test_reflected_operators_values():
    a = np.array([0.5, 1.5, 3.0])
    x = ember.tensor(a)
    np.testing.assert_allclose((2 - x).numpy(), 2 - a)
    np.testing.assert_allclose((2 ** x).numpy(), 2 ** a)
    np.testing.assert_array_equal((2 / x).numpy(), 2 / a)
    assert (2 / ember.tensor([4])).dtype == ember.float32  # true division of an int tensor
    assert (3 - ember.tensor([1, 2])).tolist() == [2, 1]
    assert (2 ** ember.tensor([1, 3])).tolist() == [2, 8]


@pytest.mark.parametrize("p", [2, 1, 3, 0.5, float("inf"), 0])
def test_dist_records_distbackward_with_the_norms_gradient(p):
    """``torch.dist`` is one node, ``DistBackward0`` (it was the norm of a difference:
    ``LinalgVectorNormBackward0`` over ``SubBackward0``), with the same gradients, a
    broadcast operand's summed; twice differentiable where the norm is smooth."""
    from ember.autograd import gradcheck, gradgradcheck

    a = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    b = ember.randn(4, dtype=ember.float64, requires_grad=True)
    d = ember.dist(a, b, p)
    assert d.grad_fn.name() == "DistBackward0"
    assert gradcheck(lambda a, b: ember.dist(a, b, p), (a, b))
    if p in (2, 3):
        assert gradgradcheck(lambda a, b: ember.dist(a, b, p), (a, b))
    assert ember.dist(a.detach(), b.detach(), p).grad_fn is None


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("kwargs", [{}, {"num_layers": 2}, {"bidirectional": True}])
def test_recurrent_final_states_are_stacked(mode, kwargs):
    # PyTorch stacks h_n (and c_n) even for one layer: a print of the hidden state shows
    # grad_fn=<StackBackward0>, and an unbatched input's is squeezed from it
    ember.manual_seed(0)
    m = getattr(ember.nn, mode)(3, 3, **kwargs)
    for x, name in ((ember.randn(2, 1, 3), "StackBackward0"),
                    (ember.randn(2, 3), "SqueezeBackward1")):
        _, h = m(x)
        for state in (h if mode == "LSTM" else (h,)):
            assert type(state.grad_fn).__name__ == name
