"""PyTorch's deprecated scale-first overloads (``ops/_deprecated.py``): ``add(x, alpha, y)``,
``x.add_(alpha, y)``, ``addcmul(x, value, t1, t2)``, ``addmm(beta, x, alpha, m1, m2)`` and
the rest of ``deprecated.yaml``, as pre-1.5 optimizers call them; and the gradient a
``backward(create_graph=True)`` leaves in ``.grad``, a copy as in PyTorch (Adahessian
detaches it in place)."""

import inspect
import warnings

import numpy as np
import pytest

import ember
from ember.ops import _deprecated


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    """Each overload warns once per process: start each test with none warned yet."""
    monkeypatch.setattr(_deprecated, "_WARNED", set())


def _t(a):
    return ember.tensor(np.asarray(a, dtype=np.float64))


A = np.arange(6.0).reshape(2, 3) / 4
B = np.arange(6.0, 12.0).reshape(2, 3) / 5
M = np.arange(4.0).reshape(2, 2) + 1
V = np.array([1.5, -2.0])
N1 = np.arange(6.0).reshape(2, 3) - 2
N2 = np.arange(6.0).reshape(3, 2) / 3


def _calls():
    """(label, call, NumPy's value) for every deprecated form."""
    a, b, m, v = _t(A), _t(B), _t(M), _t(V)
    n1, n2 = _t(N1), _t(N2)
    bm1, bm2 = _t(N1[None].repeat(2, 0)), _t(N2[None].repeat(2, 0))
    mm = N1 @ N2
    return [
        ("add", lambda: ember.add(a, 2, b), A + 2 * B),
        ("Tensor.add", lambda: a.add(2, b), A + 2 * B),
        ("Tensor.add_", lambda: a.clone().add_(2, b), A + 2 * B),
        ("sub", lambda: ember.sub(a, 0.5, b), A - 0.5 * B),
        ("Tensor.sub_", lambda: a.clone().sub_(0.5, b), A - 0.5 * B),
        ("addcmul", lambda: ember.addcmul(a, 0.5, b, b), A + 0.5 * B * B),
        ("Tensor.addcmul_", lambda: a.clone().addcmul_(0.5, b, b), A + 0.5 * B * B),
        ("addcdiv", lambda: ember.addcdiv(a, -2, b, b + 1), A - 2 * B / (B + 1)),
        ("Tensor.addcdiv_", lambda: a.clone().addcdiv_(-2, b, b + 1), A - 2 * B / (B + 1)),
        ("addmm 5", lambda: ember.addmm(0.5, m, 2, n1, n2), 0.5 * M + 2 * mm),
        ("addmm 4", lambda: ember.addmm(0.5, m, n1, n2), 0.5 * M + mm),
        ("Tensor.addmm 4", lambda: m.addmm(0.5, 2, n1, n2), 0.5 * M + 2 * mm),
        ("Tensor.addmm 3", lambda: m.addmm(0.5, n1, n2), 0.5 * M + mm),
        ("Tensor.addmm_", lambda: m.clone().addmm_(0.5, 2, n1, n2), 0.5 * M + 2 * mm),
        ("addmv", lambda: ember.addmv(0.5, v, 2, m, v), 0.5 * V + 2 * M @ V),
        ("Tensor.addmv", lambda: v.addmv(0.5, m, v), 0.5 * V + M @ V),
        ("addr", lambda: ember.addr(0.5, m, 2, v, v), 0.5 * M + 2 * np.outer(V, V)),
        ("Tensor.addr_", lambda: m.clone().addr_(0.5, 2, v, v), 0.5 * M + 2 * np.outer(V, V)),
        ("baddbmm", lambda: ember.baddbmm(0.5, m[None], 2, bm1, bm2),
         np.broadcast_to(0.5 * M + 2 * mm, (2, 2, 2))),
        ("addbmm", lambda: ember.addbmm(0.5, m, bm1, bm2), 0.5 * M + 2 * mm),
    ]


@pytest.mark.parametrize("case", range(len(_calls())), ids=[c[0] for c in _calls()])
def test_each_deprecated_form_runs_as_the_modern_call(case):
    _, call, expected = _calls()[case]
    with pytest.warns(UserWarning, match="is deprecated"):
        out = call()
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)


def test_the_warning_is_pytorchs_and_comes_once():
    a, b = _t(A), _t(B)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ember.add(a, 2, b)
        ember.add(a, 3, b)
        a.clone().add_(1, b)
    assert [str(w.message) for w in seen] == [
        "This overload of add is deprecated:\n\tadd(Tensor input, Number alpha, Tensor other, "
        "*, Tensor out = None)\nConsider using one of the following signatures instead:\n"
        "\tadd(Tensor input, Tensor other, *, Number alpha = 1, Tensor out = None)"]
    assert seen[0].filename == __file__  # where the user called it
    with pytest.warns(UserWarning, match=r"addmm\(Number beta, Tensor input, Tensor mat1"):
        ember.addmm(1, _t(M), _t(M), _t(M))


def test_out_and_gradients_through_a_deprecated_form():
    a, b = _t(A), _t(B)
    out = ember.empty(2, 3, dtype=ember.float64)
    with pytest.warns(UserWarning):
        r = ember.addcmul(a, 0.5, b, b, out=out)
    assert r is out
    np.testing.assert_allclose(out.numpy(), A + 0.5 * B * B)
    x = _t(A).requires_grad_()
    y = _t(B).requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert ember.autograd.gradcheck(lambda x, y: ember.addcdiv(x, 0.3, y, y * y + 1), (x, y))
        m1 = _t(N1).requires_grad_()
        m2 = _t(N2).requires_grad_()
        assert ember.autograd.gradcheck(lambda i, p, q: ember.addmm(0.5, i, 2, p, q),
                                        (_t(M).requires_grad_(), m1, m2))


def test_modern_calls_do_not_warn_and_signatures_stay_modern():
    a, b = _t(A), _t(B)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.add(a, b, alpha=2)
        a.clone().addcmul_(b, b, value=0.5)
        ember.addmm(_t(M), _t(N1), _t(N2), beta=0.5)
    assert str(inspect.signature(ember.add)) == "(input, other, *, alpha=1, out=None)"
    assert str(inspect.signature(ember.Tensor.addmm)) == "(input, mat1, mat2, *, beta=1, alpha=1)"
    assert str(inspect.signature(ember.addcdiv)) == \
        "(input, tensor1, tensor2, *, value=1, out=None)"


def test_bad_deprecated_calls_raise():
    a, b, m = _t(A), _t(B), _t(M)
    with pytest.raises(TypeError, match=r"add\(\)"):
        ember.add(a, b, b)  # a tensor where the deprecated form takes its Number
    with pytest.raises(TypeError, match="multiple values for argument 'alpha'"):
        ember.add(a, 2, b, alpha=3)
    with pytest.raises(TypeError, match="multiple values for argument 'value'"):
        ember.addcmul(a, 2, b, b, value=3)
    with pytest.raises(NotImplementedError, match=r"aten::addmm.dtype' with arguments from "
                                                  r"the '\w+' backend"):
        ember.addmm(m, m, m, ember.float32)  # PyTorch's out_dtype overload: GPU only


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_create_graph_leaves_a_copy_in_grad():
    # PyTorch's AccumulateGrad clones under create_graph (clone_obey_contract): .grad is
    # never a view of a graph tensor, so Adahessian's grad.detach_() works
    w = ember.randn(3, 4, requires_grad=True)
    x = ember.randn(5, 4, requires_grad=True)
    (x @ w.t()).pow(2).sum().backward(create_graph=True)
    assert w.grad._base is None and w.grad.is_contiguous() and w.grad.requires_grad
    (gx,) = ember.autograd.grad(w.grad.sum(), x)  # still differentiable
    assert gx.shape == (5, 4)
    w.grad.detach_()
    assert not w.grad.requires_grad
    v = ember.randn(4, 3, requires_grad=True)
    (v.t() * 2).sum().backward(create_graph=True)
    assert v.grad._base is None and v.grad.tolist() == [[2.0] * 3] * 4
