"""PyTorch's NumPy-compatible keyword names (``ember._front``): ``axis=`` for ``dim``,
``keepdims=`` for ``keepdim``, ``x=``/``a=``/``x1=`` for ``input`` and ``x2=`` for ``other``,
on every registered function and Tensor method that has a ``dim``/``keepdim`` or ``out=``
(the others stay their plain kernels, for speed: ``test_plain_ops_stay_plain``), on the
namespaces' functions, with PyTorch's errors where a call names a parameter twice."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from testutils import assert_same_error, to_numpy, to_torch

import ember
import ember.nn.functional as F
from ember._front import NUMPY_ALIASES, aliases_of, front
from ember.ops.registry import OPS

_A = np.arange(24.0).reshape(2, 3, 4) - 7.5
_B = np.linspace(-1, 1, 24).reshape(2, 3, 4)
_IDX = np.array([[[0, 1, 1, 0]]])

#: calls that PyTorch's argument parser binds through a NumPy name: ``(ember or torch, a, b)
#: -> result``; each runs in both libraries and the results must agree
CALLS = {
    "t.sum(axis=0)": lambda m, a, b: a.sum(axis=0),
    "sum(axis, keepdims)": lambda m, a, b: m.sum(a, axis=1, keepdims=True),
    "sum(x=)": lambda m, a, b: m.sum(x=a),
    "sum(a=)": lambda m, a, b: m.sum(a=a),
    "mean(axis tuple)": lambda m, a, b: a.mean(axis=(0, 2)),
    "argmax(axis)": lambda m, a, b: m.argmax(a, axis=1),
    "max(axis) values": lambda m, a, b: m.max(a, axis=0).values,
    "t.max(axis, keepdims) indices": lambda m, a, b: a.max(axis=2, keepdims=True).indices,
    "max(x2=) elementwise": lambda m, a, b: m.max(a, x2=b),
    "std(axis)": lambda m, a, b: m.std(a, axis=0),
    "var_mean(axis)": lambda m, a, b: m.var_mean(a, axis=1)[1],
    "logsumexp(axis)": lambda m, a, b: m.logsumexp(a, axis=2),
    "softmax(axis)": lambda m, a, b: m.softmax(a, axis=1),
    "t.softmax(axis)": lambda m, a, b: a.softmax(axis=-1),
    "cumsum(axis)": lambda m, a, b: m.cumsum(a, axis=2),
    "sort(axis)": lambda m, a, b: m.sort(a, axis=1, descending=True).values,
    "topk(axis)": lambda m, a, b: m.topk(a, 2, axis=2).indices,
    "squeeze/unsqueeze(axis)": lambda m, a, b: m.squeeze(m.unsqueeze(a, axis=0), axis=0),
    "stack(axis)": lambda m, a, b: m.stack([a, b], axis=1),
    "cat(axis)": lambda m, a, b: m.cat([a, b], axis=2),
    "chunk(axis)": lambda m, a, b: m.chunk(a, 2, axis=2)[1],
    "diff(axis)": lambda m, a, b: m.diff(a, axis=1),
    "all(axis)": lambda m, a, b: m.all(a > 0, axis=1),
    "median(axis)": lambda m, a, b: m.median(a, axis=2).values,
    "index_select(axis, index=)": lambda m, a, b: m.index_select(a, axis=2,
                                                                 index=m.tensor([3, 0])),
    "gather(axis)": lambda m, a, b: m.gather(a, axis=0, index=m.tensor(_IDX)),
    "exp(x=)": lambda m, a, b: m.exp(x=a),
    "clamp(x=, min=)": lambda m, a, b: m.clamp(x=a, min=0.5),
    "pow(x=, exponent=)": lambda m, a, b: m.pow(x=a, exponent=2),
    "matmul(x1=, x2=)": lambda m, a, b: m.matmul(x1=a, x2=b.transpose(1, 2)),
    "eq(x2=)": lambda m, a, b: m.eq(a, x2=a),
    "zeros_like(x=)": lambda m, a, b: m.zeros_like(x=a, dtype=m.float64),
    "numel(x=)": lambda m, a, b: m.tensor(m.numel(x=a)),
    "mul(x1=, x2=) (out=: a front)": lambda m, a, b: m.mul(x1=a, x2=b),
    "max(x2=) (dim: a front)": lambda m, a, b: m.maximum(a, b).add(m.max(a, x2=b)),
    "linalg.vector_norm(x=)": lambda m, a, b: m.linalg.vector_norm(x=a, dim=(1, 2)),
    "linalg.norm(axis)": lambda m, a, b: m.linalg.norm(a[0], axis=1),
    "linalg.matrix_exp(x=)": lambda m, a, b: m.linalg.matrix_exp(x=a[:, :, :3] / 10),
    "fft.fft(axis)": lambda m, a, b: m.fft.fft(a, axis=1).real,
    "fft.rfft(x=, axis)": lambda m, a, b: m.fft.rfft(x=a, axis=2).imag,
    "special.expit(x=)": lambda m, a, b: m.special.expit(x=a),
    "special.softmax(axis)": lambda m, a, b: m.special.softmax(a, axis=0),
    "F.gelu(x=)": lambda m, a, b: m.nn.functional.gelu(x=a),
    "F.cosine_similarity(x1, x2, axis)": lambda m, a, b: m.nn.functional.cosine_similarity(
        x1=a, x2=b, axis=1),
    "t.cumsum_(axis)": lambda m, a, b: a.clone().cumsum_(axis=1),
    "t.unsqueeze_(axis)": lambda m, a, b: a.clone().unsqueeze_(axis=1),
    "t.scatter_(axis)": lambda m, a, b: a.clone().scatter_(axis=0, index=m.tensor(_IDX),
                                                           src=b),
}


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("name", list(CALLS))
def test_numpy_names_bind_as_in_pytorch(name, torch):
    call = CALLS[name]
    got = call(ember, ember.tensor(_A), ember.tensor(_B))
    want = call(torch, to_torch(ember.tensor(_A)), to_torch(ember.tensor(_B)))
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(to_numpy(got), want.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("call", [
    lambda m, a: m.sum(a, axis=1, dim=0),             # a name and its alias
    lambda m, a: m.sum(a, dim=1, axis=0),
    lambda m, a: m.sum(a, 1, keepdim=True, keepdims=True),
    lambda m, a: m.maximum(a, a, x2=a),               # positional and alias
    lambda m, a: m.exp(a, x=a),
    lambda m, a: a.cumsum_(0, axis=1),                # in place: positional and alias
    lambda m, a: a.cumsum_(dim=0, axis=1),
], ids=["axis+dim", "dim+axis", "keepdim+keepdims", "x2+other", "x+input",
        "inplace-positional", "inplace-keyword"])
def test_a_parameter_named_twice_is_pytorchs_error(call, torch):
    assert_same_error(lambda: call(ember, ember.tensor(_A)),
                      lambda: call(torch, to_torch(ember.tensor(_A))))


def test_errors_for_what_is_still_wrong():
    a = ember.tensor(_A)
    with pytest.raises(TypeError, match=r"sum\(\) missing 1 required positional argument: "
                                        "'input'"):
        ember.sum(axis=0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'a'"):
        ember.sum(x=a, a=a)  # two NumPy names of one parameter
    with pytest.raises(TypeError, match="unexpected keyword argument 'x'"):
        a.sum(x=a)  # a method's self has no keyword
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        ember.sum(a, axis=1, foo=2)  # PyTorch names axis here: its check knows no aliases
    with pytest.raises(TypeError, match="positional arguments but 4 were given"):
        ember.sum(a, 0, True, 1)
    with pytest.raises(TypeError):
        ember.index_select(a, index=ember.tensor([0]))  # dim missing: neither name given


def test_out_and_autograd_through_an_alias():
    a = ember.tensor(_A)
    buf = ember.empty(0, dtype=ember.float64)
    assert ember.sum(x=a, axis=2, keepdims=True, out=buf) is buf
    np.testing.assert_allclose(buf.numpy(), _A.sum(2, keepdims=True))
    vals, idx = ember.empty(0, dtype=ember.float64), ember.empty(0, dtype=ember.int64)
    r = ember.max(a, axis=1, out=(vals, idx))
    assert r.values is vals and r.indices is idx
    np.testing.assert_array_equal(idx.numpy(), _A.argmax(1))
    w = ember.tensor(_A, requires_grad=True)
    ember.logsumexp(x=w, axis=2).sum().backward()
    e = np.exp(_A - _A.max(2, keepdims=True))
    np.testing.assert_allclose(w.grad.numpy(), e / e.sum(2, keepdims=True))


def test_fronts_look_like_their_kernels():
    """Introspection sees PyTorch's names only: the signature is the kernel's (plus out=),
    the name, doc and module are the kernel's, and ``__wrapped__`` reaches it."""
    info = OPS["sum"]
    assert ember.sum is info.fn and ember.sum.__wrapped__ is info.kernel
    assert ember.sum.__name__ == "sum" and ember.sum.__doc__ == info.kernel.__doc__
    assert list(inspect.signature(ember.sum).parameters) == ["input", "dim", "keepdim",
                                                             "dtype", "out"]
    assert list(inspect.signature(ember.Tensor.sum).parameters) == ["input", "dim", "keepdim",
                                                                    "dtype"]
    assert aliases_of(ember.sum) == {"x": "input", "a": "input", "x1": "input", "axis": "dim",
                                     "keepdims": "keepdim"}
    assert aliases_of(ember.Tensor.sum) == {"axis": "dim", "keepdims": "keepdim"}
    assert aliases_of(ember.Tensor.cumsum_) == {"axis": "dim"}


def test_every_registered_function_takes_the_numpy_names():
    """Each op's ``ember.<name>`` with a ``dim``/``keepdim`` or ``out=`` answers to the NumPy
    name of each of its PyTorch-named parameters (the ones whose kernel takes ``*args``
    aside: ``einsum``, ``meshgrid``...)."""
    missing = []
    for name, info in OPS.items():
        if "custom_op" in info.tags or info.signature is None:
            continue
        params = info.signature.parameters
        if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params.values()):
            continue
        if info.out is None and not params.keys() & {"dim", "keepdim"}:
            continue  # a plain kernel (test_plain_ops_stay_plain)
        accepted = aliases_of(info.fn)
        for p in params.values():
            if p.kind is p.POSITIONAL_ONLY:
                continue
            for alias in NUMPY_ALIASES.get(p.name, ()):
                if alias not in params and accepted.get(alias) != p.name:
                    missing.append(f"{name}:{alias}")
    assert not missing


def test_plain_ops_stay_plain():
    """An op without dim/keepdim and out= keeps its kernel as ``ember.<name>`` and its
    method: NumPy's names for input/other alone do not pay for a front's ~0.1 us a call."""
    for name in ("add", "relu", "isclose", "view_as_real"):
        info = OPS[name]
        assert info.fn is info.kernel and info.method_fn is None
    with pytest.raises(TypeError, match="unexpected keyword argument 'x1'"):
        ember.add(x1=ember.ones(2), x2=ember.ones(2))


def test_hot_paths_keep_their_plain_callables():
    """What modules call on every step stays the kernel itself: F.relu (Python code in
    PyTorch, so no NumPy names), Tensor.size, the operators. F.linear is the op's front, as
    it was its out= wrapper (a native function in PyTorch: F.linear(x=...) binds)."""
    assert not hasattr(F.relu, "_ember_front") and F.linear is OPS["linear"].fn
    assert not hasattr(ember.Tensor.size, "_ember_front")
    assert not hasattr(ember.Tensor.__add__, "_ember_front")
    assert ember.Tensor.exp is OPS["exp"].kernel  # no NumPy name for a method's self


def test_front_of_a_plain_function():
    """``front`` on any function with PyTorch's parameter names (how ``ember.special`` and
    the factories get theirs): required and keyword-only parameters, defaults kept."""

    def f(input, dim, other=None, *, keepdim=False, scale):
        return (input, dim, other, keepdim, scale)

    g = front(f)
    assert g(1, 2, scale=3) == (1, 2, None, False, 3)
    assert g(x=1, axis=2, x2=4, keepdims=True, scale=5) == (1, 2, 4, True, 5)
    assert g(1, axis=2, scale=0) == (1, 2, None, False, 0)
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'scale'"):
        g(1, 2)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'dim'"):
        g(1, scale=0)
    assert front(g) is g  # already a front
    assert front(lambda *a: a) is not None  # *args: nothing to mirror, returned as is

    def h(input, /, dim=0):
        return input, dim

    assert front(h)(5, axis=1) == (5, 1)  # positional-only input: no NumPy name
    with pytest.raises(TypeError):
        front(h)(x=5)
