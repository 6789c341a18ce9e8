"""The view-copy ops (``ember.permute_copy``, ``view_copy``, ``split_copy``, ...),
``slice_inverse`` and ``is_distributed``.

The op database (``ember/ops/opdb/view_copy.py``) runs every dense copy through the generic
checks of ``tests/ops`` (values against PyTorch, float64 gradcheck and gradgradcheck,
``out=``, the test devices). Here: that a copy owns its memory, its graph has PyTorch's node
names, ``out=`` with PyTorch's checks and (non-)differentiation, the sparse parts' copies,
PyTorch's errors, ``slice_inverse`` on real slices, and that the copies are ops to the
tracer, vmap and ``__torch_function__``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from testutils import assert_same_error, to_numpy, to_torch

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.ops.registry import OPS
from ember.ops.view_copy import SPARSE_VIEW_COPIES, VIEW_COPIES


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _x(*shape, dtype=ember.float64, requires_grad=False):
    n = int(np.prod(shape)) if shape else 1
    t = ember.tensor(np.arange(n, dtype=np.float64).reshape(shape) + 1.0, dtype=dtype)
    return t.requires_grad_(requires_grad)


#: one call per dense copy: (args after the input, kwargs), on ``_x(2, 3, 4)`` unless the
#: input is given as the first item
CALLS = {
    "alias_copy": ((), {}),
    "as_strided_copy": (((3, 2), (1, 3), 1), {}),
    "detach_copy": ((), {}),
    "diagonal_copy": ((0, 1, 2), {}),
    "expand_copy": (((2, 2, 3, 4),), {}),
    "permute_copy": (((2, 0, 1),), {}),
    "select_copy": ((1, -1), {}),
    "slice_copy": ((2, 1, None, 2), {}),
    "split_copy": ((2, 2), {}),
    "split_with_sizes_copy": (([1, 3], -1), {}),
    "squeeze_copy": ((), {}),
    "t_copy": ((), {"input": (3, 4)}),
    "transpose_copy": ((0, 2), {}),
    "unbind_copy": ((1,), {}),
    "unfold_copy": ((2, 2, 1), {}),
    "unsqueeze_copy": ((1,), {}),
    "view_as_complex_copy": ((), {"input": (3, 2)}),
    "view_as_real_copy": ((), {"input": "complex"}),
    "view_copy": (((4, 6),), {}),
}


def _input(name, requires_grad=False):
    args, spec = CALLS[name]
    shape = spec.get("input", (2, 3, 4))
    if shape == "complex":
        x = ember.complex(_x(2, 3), _x(2, 3) * 0.5)
        return x.requires_grad_(requires_grad), args
    return _x(*shape, requires_grad=requires_grad), args


def _shares_memory(a, b) -> bool:
    """Whether tensors ``a`` and ``b`` (each dense and contiguous, or ``b`` a view of a
    contiguous tensor) reach common bytes (by address: the strict device refuses NumPy)."""
    def extent(t):
        base = t._base if t._base is not None else t
        lo = min(t.data_ptr(), base.data_ptr())
        return lo, max(t.data_ptr() + t.numel() * t.element_size(),
                       base.data_ptr() + base.numel() * base.element_size())

    (a0, a1), (b0, b1) = extent(a), extent(b)
    return a.numel() > 0 and b.numel() > 0 and a0 < b1 and b0 < a1


def _outs(r):
    return list(r) if isinstance(r, tuple) else [r]


def test_every_dense_copy_is_a_registered_function_not_a_method():
    assert set(CALLS) == set(VIEW_COPIES)
    for name in VIEW_COPIES:
        info = OPS[name]
        assert getattr(ember, name) is info.fn and not info.method and not info.view
        assert "out" in info.signature.parameters and info.supports_out
        assert not hasattr(ember.Tensor, name)  # as in PyTorch: functions only
        assert ember.__dict__[name].__doc__.startswith("Performs the same operation as")
    for name in SPARSE_VIEW_COPIES:
        assert callable(getattr(ember, name)) and name not in OPS


@pytest.mark.parametrize("name", sorted(VIEW_COPIES))
def test_copy_owns_its_memory_and_is_contiguous(name):
    x, args = _input(name)
    view_fn = VIEW_COPIES[name]
    before = to_numpy(x).copy()
    got, views = _outs(getattr(ember, name)(x, *args)), _outs(view_fn(x, *args))
    assert len(got) == len(views)
    for g, v in zip(got, views):
        assert g._base is None and g.is_contiguous()
        assert not _shares_memory(g, x)
        assert _shares_memory(v, x) or not v.numel()  # where the view itself does
        np.testing.assert_array_equal(to_numpy(g), to_numpy(v))
        assert g.dtype == v.dtype and g.shape == v.shape
        if g.numel():
            g.fill_(0)  # writing the copy leaves the input alone
    np.testing.assert_array_equal(to_numpy(x), before)
    assert x._version == 0


@pytest.mark.parametrize("name", sorted(set(VIEW_COPIES) - {"detach_copy",
                                                             "view_as_complex_copy"}))
def test_grad_fn_is_pytorchs_copy_node(name, torch):
    x, args = _input(name, requires_grad=True)
    tx = to_torch(x).requires_grad_()
    mine = _outs(getattr(ember, name)(x, *args))
    theirs = _outs(getattr(torch, name)(tx, *args))
    for m, t in zip(mine, theirs):
        assert m.grad_fn.name().endswith("_copy") and t.grad_fn.name().endswith("_copy")
        assert type(m.grad_fn).__mro__[1].__name__ == m.grad_fn.name()[:-5]
        # the copy's node takes the gradient straight to the input's accumulator
        assert [type(n).__name__ for n, _ in m.grad_fn.next_functions] == ["AccumulateGrad"]
    # the gradient of a weighted sum of every output is PyTorch's
    w = [np.linspace(-1, 1, int(np.prod(t.shape)) or 1)[: t.numel()].reshape(tuple(t.shape))
         for t in theirs]
    loss = sum((m * ember.tensor(wi, dtype=m.dtype)).real.sum() if m.is_complex() else
               (m * ember.tensor(wi, dtype=m.dtype)).sum() for m, wi in zip(mine, w))
    tloss = sum((t * torch.tensor(wi, dtype=t.dtype)).real.sum() if t.is_complex() else
                (t * torch.tensor(wi, dtype=t.dtype)).sum() for t, wi in zip(theirs, w))
    loss.backward()
    tloss.backward()
    np.testing.assert_allclose(to_numpy(x.grad), tx.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["permute_copy", "split_copy", "unbind_copy", "expand_copy",
                                  "slice_copy", "as_strided_copy", "view_as_real_copy",
                                  "unfold_copy", "diagonal_copy", "view_copy"])
def test_gradcheck_and_gradgradcheck_float64(name):
    x, args = _input(name, requires_grad=True)
    x = x.detach().requires_grad_()

    def f(t):
        return tuple(o for o in _outs(getattr(ember, name)(t, *args)))

    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))


#: copies of complex tensors that PyTorch differentiates but Ember cannot yet, because the
#: view op itself has no complex backward in Ember (``as_strided``, ``unfold``): the copy
#: raises the view's error (checked below), until the view learns it
_VIEW_WITHOUT_COMPLEX_GRAD = {"as_strided_copy", "unfold_copy"}


def _complex_input(name):
    x, args = _input(name)
    return ember.complex(x, x.flip(-1) * 0.5).detach().requires_grad_(), args


@pytest.mark.parametrize("name", sorted(set(VIEW_COPIES) - {
    "detach_copy", "view_as_complex_copy", "view_as_real_copy", "view_copy", "select_copy",
    "slice_copy"} - _VIEW_WITHOUT_COMPLEX_GRAD))
def test_gradcheck_complex128(name, torch):
    """PyTorch differentiates these copies of complex tensors; so does Ember."""
    z, args = _complex_input(name)

    def f(t):
        return tuple(_outs(getattr(ember, name)(t, *args)))

    tz = to_torch(z).requires_grad_()
    assert all(o.requires_grad for o in _outs(getattr(torch, name)(tz, *args)))
    assert gradcheck(f, (z,))


@pytest.mark.parametrize("name", ["select_copy", "slice_copy"])
def test_complex_results_of_select_and_slice_copies_are_not_differentiated(name, torch):
    z, args = _complex_input(name)
    assert_same_error(lambda: getattr(ember, name)(z, *args),
                      lambda: getattr(torch, name)(to_torch(z).requires_grad_(), *args))
    with ember.no_grad():
        assert getattr(ember, name)(z, *args).is_complex()


@pytest.mark.parametrize("name", sorted(_VIEW_WITHOUT_COMPLEX_GRAD))
def test_copies_whose_view_has_no_complex_backward_raise_the_views_error(name):
    z, args = _complex_input(name)
    view = name.removesuffix("_copy")
    with pytest.raises(RuntimeError) as of_view:
        getattr(ember.Tensor, view)(z, *args)
    with pytest.raises(RuntimeError) as of_copy:
        getattr(ember, name)(z, *args)
    assert str(of_copy.value) == str(of_view.value)
    assert "the derivative for complex inputs or outputs is not implemented" in \
        str(of_copy.value)


def test_a_copy_of_a_view_of_a_view_keeps_the_chain():
    x = _x(3, 4, requires_grad=True)
    y = ember.t_copy(x[:, 1:])
    assert y.grad_fn.name() == "TBackward0_copy"
    assert type(y.grad_fn.next_functions[0][0]).__name__ == "SliceBackward0"
    y.sum().backward()
    np.testing.assert_array_equal(to_numpy(x.grad), [[0, 1, 1, 1]] * 3)


def test_the_view_nodes_themselves_keep_their_names():
    x = _x(2, 3, requires_grad=True)
    ember.permute_copy(x, (1, 0))
    assert x.permute(1, 0).grad_fn.name() == "PermuteBackward0"


def test_no_graph_without_grad():
    x = _x(2, 3, requires_grad=True)
    with ember.no_grad():
        y = ember.permute_copy(x, (1, 0))
    assert not y.requires_grad and y.grad_fn is None
    assert not ember.permute_copy(_x(2, 3), (1, 0)).requires_grad


def test_complex_results_pytorch_does_not_differentiate(torch):
    x = _x(3, 2, requires_grad=True)
    assert_same_error(lambda: ember.view_as_complex_copy(x),
                      lambda: torch.view_as_complex_copy(to_torch(x).requires_grad_()))
    z = ember.complex(_x(2, 3), _x(2, 3)).requires_grad_()
    tz = to_torch(z).requires_grad_()
    assert_same_error(lambda: ember.slice_inverse(z, z, 0), lambda: torch.slice_inverse(tz, tz, 0))
    with ember.no_grad():  # without a graph, or of an input that needs none, it is a copy
        assert ember.view_as_complex_copy(x).dtype == ember.complex128
    assert ember.view_as_complex_copy(x.detach()).shape == (3,)
    assert ember.permute_copy(z, (1, 0)).grad_fn.name() == "PermuteBackward0_copy"


@pytest.mark.parametrize("name", ["permute_copy", "split_copy", "view_copy", "slice_copy",
                                  "expand_copy", "unfold_copy", "as_strided_copy"])
def test_forward_ad_tangents_are_the_copied_views_of_the_tangent(name):
    import ember.autograd.forward_ad as fwAD

    x, args = _input(name)
    v = ember.rand(*x.shape, dtype=ember.float64)
    with fwAD.dual_level():
        outs = _outs(getattr(ember, name)(fwAD.make_dual(x, v), *args))
        tangents = [fwAD.unpack_dual(o).tangent for o in outs]
    for t, expected in zip(tangents, _outs(getattr(ember, name)(v, *args))):
        np.testing.assert_array_equal(to_numpy(t), to_numpy(expected))


# -- detach_copy ------------------------------------------------------------------------------

def test_detach_copy_requires_grad_without_a_derivative_as_in_pytorch(torch):
    x = _x(2, 3, requires_grad=True)
    y = ember.detach_copy(x)
    t = torch.detach_copy(to_torch(x).requires_grad_())
    assert y.requires_grad == t.requires_grad is True
    assert y.grad_fn.name() == "NotImplemented"
    assert_same_error(lambda: y.sum().backward(), lambda: t.sum().backward())
    assert not ember.detach_copy(_x(2)).requires_grad


# -- out= -------------------------------------------------------------------------------------

def test_out_is_written_and_returned_and_resized():
    x = _x(2, 3)
    out = ember.empty(0, dtype=ember.float64)
    assert ember.permute_copy(x, (1, 0), out=out) is out
    np.testing.assert_array_equal(to_numpy(out), to_numpy(x).T)
    assert out._version == 1
    same = ember.zeros(3, 2, dtype=ember.float64)
    ember.permute_copy(x, (1, 0), out=same)
    np.testing.assert_array_equal(to_numpy(same), to_numpy(x).T)


def test_out_of_another_shape_warns_as_pytorch(torch):
    x = _x(2, 3)
    with pytest.warns(UserWarning) as mine:
        ember.permute_copy(x, (1, 0), out=ember.empty(5, dtype=ember.float64))
    with pytest.warns(UserWarning) as theirs:
        torch.permute_copy(to_torch(x), (1, 0), out=torch.empty(5, dtype=torch.float64))
    # PyTorch's ends with where its C++ raised it: " (Triggered internally at ...)"
    assert str(theirs[0].message).startswith(str(mine[0].message) + " (Triggered")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an empty out is resized silently
        ember.permute_copy(x, (1, 0), out=ember.empty(0, dtype=ember.float64))


def test_out_errors_are_pytorchs(torch):
    x = _x(2, 3, dtype=ember.float32)
    for dt in ("int64", "float64"):
        assert_same_error(
            lambda dt=dt: ember.permute_copy(x, (1, 0), out=ember.empty(0, dtype=dt)),
            lambda dt=dt: torch.permute_copy(to_torch(x), (1, 0),
                                             out=torch.empty(0, dtype=getattr(torch, dt))))
    assert_same_error(
        lambda: ember.permute_copy(x, (1, 0), out=ember.empty(3, 2, requires_grad=True)),
        lambda: torch.permute_copy(to_torch(x), (1, 0),
                                   out=torch.empty(3, 2, requires_grad=True)))
    assert_same_error(lambda: ember.split_copy(x, 2, 1, out=[ember.empty(0)]),
                      lambda: torch.split_copy(to_torch(x), 2, 1, out=[torch.empty(0)]))
    assert_same_error(lambda: ember.unbind_copy(x, out=[ember.empty(0)]),
                      lambda: torch.unbind_copy(to_torch(x), out=[torch.empty(0)]))
    assert_same_error(
        lambda: ember.split_with_sizes_copy(x, [1, 2], 1, out=[ember.empty(0)]),
        lambda: torch.split_with_sizes_copy(to_torch(x), [1, 2], 1, out=[torch.empty(0)]))
    assert_same_error(lambda: ember.split_copy(x, 2, 1, out=ember.empty(0)),
                      lambda: torch.split_copy(to_torch(x), 2, 1, out=torch.empty(0)))
    assert_same_error(
        lambda: ember.unbind_copy(x, out=(ember.empty(0), ember.empty(0, dtype=ember.int64))),
        lambda: torch.unbind_copy(to_torch(x),
                                  out=(torch.empty(0), torch.empty(0, dtype=torch.int64))))


def test_out_of_an_input_that_requires_grad_has_no_derivative(torch):
    x = _x(2, 3, requires_grad=True)
    out = ember.empty(0, dtype=ember.float64)
    ember.permute_copy(x, (1, 0), out=out)
    tout = torch.empty(0, dtype=torch.float64)
    tx = to_torch(x).requires_grad_()
    torch.permute_copy(tx, (1, 0), out=tout)
    assert out.requires_grad and out.grad_fn.name() == "NotImplemented"
    assert_same_error(lambda: out.sum().backward(), lambda: tout.sum().backward())


def test_list_outs_split_copies_in_the_others_resize(torch):
    x = _x(2, 3)
    parts = [ember.empty(2, 2, dtype=ember.float64), ember.empty(2, 5, dtype=ember.float64)]
    assert ember.split_copy(x, 2, 1, out=parts) is None
    tparts = [torch.empty(2, 2, dtype=torch.float64), torch.empty(2, 5, dtype=torch.float64)]
    torch.split_copy(to_torch(x), 2, 1, out=tparts)  # broadcast into the given shape
    for p, tp in zip(parts, tparts):
        np.testing.assert_array_equal(to_numpy(p), tp.numpy())
    for name, args in (("unbind_copy", (0,)), ("split_with_sizes_copy", ([2, 1], 1))):
        outs = [ember.empty(0, dtype=ember.float64) for _ in range(2)]
        touts = [torch.empty(0, dtype=torch.float64) for _ in range(2)]
        assert getattr(ember, name)(x, *args, out=outs) is None
        getattr(torch, name)(to_torch(x), *args, out=touts)
        for o, t in zip(outs, touts):
            np.testing.assert_array_equal(to_numpy(o), t.numpy())


# -- errors -----------------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda m, x: m.t_copy(x.reshape(1, 2, 3)),
    lambda m, x: m.slice_copy(x, 1, 0, 3, 0),
    lambda m, x: m.slice_copy(x, 1, 0, 3, -1),
    lambda m, x: m.slice_copy(x, 2),
    lambda m, x: m.split_copy(x, [1, 2], 1),
    lambda m, x: m.split_copy(x, 0, 1),
    lambda m, x: m.split_copy(x, -1, 1),
    lambda m, x: m.split_with_sizes_copy(x, [1, 1], 1),
    lambda m, x: m.view_copy(x, (4,)),
    lambda m, x: m.view_copy(x, (-1, -1)),
    lambda m, x: m.view_copy(x, m.float64),
    lambda m, x: m.expand_copy(x, (3, 3)),
    lambda m, x: m.view_as_complex_copy(x),
    lambda m, x: m.view_as_real_copy(x),
    lambda m, x: m.unfold_copy(x, 1, 4, 1),
    lambda m, x: m.permute_copy(x, (0,)),
    lambda m, x: m.select_copy(x, 0, 5),
    lambda m, x: m.diagonal_copy(x, 0, 1, 1),
    lambda m, x: m.indices_copy(x),
    lambda m, x: m.values_copy(x),
    lambda m, x: m.crow_indices_copy(x),
    lambda m, x: m.col_indices_copy(x),
    lambda m, x: m.ccol_indices_copy(x),
    lambda m, x: m.row_indices_copy(x),
])
def test_errors_are_pytorchs(call, torch):
    x = _x(2, 3, dtype=ember.float32)
    assert_same_error(lambda: call(ember, x), lambda: call(torch, to_torch(x)))


def test_squeeze_copy_takes_no_dim_an_int_or_several(torch):
    x = _x(1, 2, 1)
    for args in ((), (0,), ((0, 2),), (-1,)):
        got = ember.squeeze_copy(x, *args)
        assert tuple(got.shape) == tuple(torch.squeeze_copy(to_torch(x), *args).shape)
    assert ember.squeeze_copy(x, dim=(0, 2)).shape == (2,)


def test_view_copy_of_strides_no_view_allows_is_a_reshape(torch):
    x = _x(2, 3, requires_grad=True)
    got = ember.view_copy(x.t(), (6,))
    np.testing.assert_array_equal(to_numpy(got), torch.view_copy(to_torch(x).t(), (6,)))
    assert gradcheck(lambda t: ember.view_copy(t.t(), (-1,)), (x,))


def test_view_copy_as_a_dtype(torch):
    x = _x(2, 3, dtype=ember.float32)
    got = ember.view_copy(x, ember.int32)
    np.testing.assert_array_equal(to_numpy(got), torch.view_copy(to_torch(x), torch.int32))
    assert not _shares_memory(got, x)


# -- sparse tensors ---------------------------------------------------------------------------

def _csr():
    return ember.tensor([[0.0, 2.0, 0.0], [3.0, 0.0, 4.0]]).to_sparse_csr()


@pytest.mark.parametrize("name, make", [
    ("crow_indices_copy", _csr), ("col_indices_copy", _csr), ("values_copy", _csr),
    ("ccol_indices_copy", lambda: _csr().to_dense().to_sparse_csc()),
    ("row_indices_copy", lambda: _csr().to_dense().to_sparse_csc()),
    ("values_copy", lambda: _csr().to_dense().to_sparse_csc()),
])
def test_sparse_compressed_parts_are_copied_as_pytorch(name, make, torch):
    s = make()
    got = getattr(ember, name)(s)
    t = getattr(torch, name)(to_torch(s.to_dense()).to_sparse(layout=getattr(
        torch, str(s.layout).split(".")[-1])))
    np.testing.assert_array_equal(to_numpy(got), t.numpy())
    view = getattr(s, name.removesuffix("_copy"))()
    assert got.dtype == view.dtype and got._base is None and got.is_contiguous()
    assert not _shares_memory(got, view)


def test_sparse_coo_parts_are_copies_of_the_views():
    """PyTorch 2.13 has no SparseCPU kernel for ``indices_copy``/``values_copy``; Ember's copy
    the parts as ``indices()``/``values()`` give them."""
    s = ember.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse()
    for name in ("indices_copy", "values_copy"):
        view = getattr(s, name.removesuffix("_copy"))()
        got = getattr(ember, name)(s)
        np.testing.assert_array_equal(to_numpy(got), to_numpy(view))
        assert not _shares_memory(got, view)
    out = ember.empty(0, dtype=ember.int64)
    assert ember.indices_copy(s, out=out) is out
    np.testing.assert_array_equal(to_numpy(out), [[0, 1], [1, 0]])
    uncoalesced = ember.sparse_coo_tensor([[0, 0], [1, 1]], [1.0, 2.0], (2, 2))
    with pytest.raises(RuntimeError, match="Cannot get indices on an uncoalesced tensor"):
        ember.indices_copy(uncoalesced)


def test_values_copy_differentiates_as_values():
    v = ember.tensor([2.0, 3.0, 4.0], dtype=ember.float64, requires_grad=True)
    s = ember.sparse_csr_tensor([0, 1, 3], [1, 0, 2], v, (2, 3))
    got = ember.values_copy(s)
    assert got.requires_grad
    (got * ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64)).sum().backward()
    np.testing.assert_array_equal(to_numpy(v.grad), [1.0, 2.0, 3.0])


# -- slice_inverse ----------------------------------------------------------------------------

def _sliced(lib, requires_grad=False):
    base = lib.arange(24.0, dtype=lib.float64).reshape(4, 6)
    if requires_grad:
        base.requires_grad_()
    return base, base[:, 1:5:2]


def test_slice_inverse_views_the_slice_with_the_bases_geometry(torch):
    base, sl = _sliced(ember)
    tbase, tsl = _sliced(torch)
    src = ember.zeros(4, 6, dtype=ember.float64)
    got = ember.slice_inverse(sl, src, 1, 1, 5, 2)
    expected = torch.slice_inverse(tsl, torch.zeros(4, 6, dtype=torch.float64), 1, 1, 5, 2)
    np.testing.assert_array_equal(to_numpy(got), expected.numpy())
    assert tuple(got.stride()) == tuple(expected.stride())
    np.testing.assert_array_equal(to_numpy(got), to_numpy(base))  # the base again
    got.fill_(7.0)  # a view: writes reach the base
    assert float(base.sum()) == 7.0 * 24
    same = sl.slice_inverse(src, 1, 1, 5, 2)  # the method
    assert same.data_ptr() == got.data_ptr()


def test_slice_inverse_of_a_whole_tensor_is_itself(torch):
    x = _x(3, 4, dtype=ember.float32)
    got = ember.slice_inverse(x, ember.zeros(3, 4, dtype=ember.float64), 1)
    assert got.data_ptr() == x.data_ptr() and got.dtype == ember.float32
    got2 = ember.slice_inverse(x, ember.zeros(3, 2), 1, 0, 2)
    t = torch.slice_inverse(to_torch(x), torch.zeros(3, 2), 1, 0, 2)
    np.testing.assert_array_equal(to_numpy(got2), t.numpy())


def test_slice_inverse_gradients_are_pytorchs(torch):
    big = ember.arange(24.0, dtype=ember.float64).requires_grad_()
    src = ember.zeros(4, 6, dtype=ember.float64, requires_grad=True)
    r = ember.slice_inverse(big.view(4, 6)[:, 1:5:2], src, 1, 1, 5, 2)
    tbig = torch.arange(24.0, dtype=torch.float64).requires_grad_()
    tsrc = torch.zeros(4, 6, dtype=torch.float64, requires_grad=True)
    tr = torch.slice_inverse(tbig.view(4, 6)[:, 1:5:2], tsrc, 1, 1, 5, 2)
    assert r.grad_fn.name() == tr.grad_fn.name() == "SliceInverseBackward0"
    g = np.arange(24.0).reshape(4, 6) + 100
    r.backward(ember.tensor(g))
    tr.backward(torch.tensor(g))
    np.testing.assert_array_equal(to_numpy(big.grad), tbig.grad.numpy())
    np.testing.assert_array_equal(to_numpy(src.grad), tsrc.grad.numpy())


def test_slice_inverse_gradient_is_functionalizations_not_the_storage_derivative(torch):
    """The gradient splits by the slice (the slice's part to ``input``, the rest to ``src``),
    as functionalization needs: not the derivative through the shared memory, which a
    finite-difference check through the base sees (in PyTorch too; the whole-dimension
    samples of the op database are gradchecked)."""

    def f(lib):
        def run(big, s):
            return lib.slice_inverse(big.view(4, 6)[:, 1:5:2], s, 1, 1, 5, 2) * 1.0
        return run

    big = ember.rand(24, dtype=ember.float64, requires_grad=True)
    s = ember.zeros(4, 6, dtype=ember.float64, requires_grad=True)
    tbig, ts = to_torch(big).requires_grad_(), to_torch(s).requires_grad_()
    with pytest.raises(Exception, match="Jacobian mismatch"):
        torch.autograd.gradcheck(f(torch), (tbig, ts))
    with pytest.raises(Exception, match="Jacobian mismatch"):
        gradcheck(f(ember), (big, s))


# -- is_distributed ---------------------------------------------------------------------------

def test_is_distributed_is_false_as_in_pytorch(torch):
    x = _x(2)
    assert ember.is_distributed(x) is False and x.is_distributed() is False
    assert torch.is_distributed(to_torch(x)) is False
    assert_same_error(lambda: ember.is_distributed(1), lambda: torch.is_distributed(1))


# -- consumers of the registry ----------------------------------------------------------------

def test_export_captures_the_copies_as_ops():
    import ember.export as E

    def f(x):
        a, b = ember.split_copy(x, 2, 1)
        return ember.permute_copy(a, (1, 0)), ember.view_copy(b, (-1,))

    x = ember.rand(3, 4)
    ep = E.export(f, (x,))
    assert [n.op for n in ep.graph.nodes] == ["split_copy", "permute_copy", "view_copy"]
    for got, expected in zip(ep.module()(x), f(x)):
        np.testing.assert_array_equal(to_numpy(got), to_numpy(expected))


def test_vmap_batches_the_copies():
    from ember.func import vmap

    x = ember.rand(5, 2, 3)
    got = vmap(lambda t: ember.permute_copy(t, (1, 0)))(x)
    np.testing.assert_array_equal(to_numpy(got), to_numpy(x).transpose(0, 2, 1))
    assert got.is_contiguous() and not _shares_memory(got, x)
    parts = vmap(lambda t: ember.split_copy(t, 2, 1))(x)
    np.testing.assert_array_equal(to_numpy(parts[1]), to_numpy(x)[:, :, 2:])
    sq = vmap(lambda t: ember.slice_copy(t, 1, 0, None, 2))(x)
    np.testing.assert_array_equal(to_numpy(sq), to_numpy(x)[:, :, ::2])


@pytest.mark.parametrize("name", sorted(VIEW_COPIES))
def test_vmap_of_every_copy_is_the_loop(name):
    from ember.func import vmap

    x, args = _input(name)
    batch = ember.stack([x, x * 2 + 1, -x])

    def f(t):
        return getattr(ember, name)(t, *args)

    got = _outs(vmap(f)(batch))
    per_example = [_outs(f(batch[i])) for i in range(3)]
    assert len(got) == len(per_example[0])
    for k, g in enumerate(got):
        assert g.is_contiguous() and not _shares_memory(g, batch)
        np.testing.assert_array_equal(to_numpy(g), np.stack([to_numpy(p[k])
                                                             for p in per_example]))


def test_torch_function_modes_see_the_copies():
    import ember.overrides as ov

    class Seen(ov.TorchFunctionMode):
        def __init__(self):
            self.names = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.names.append(func.__name__)
            return func(*args, **(kwargs or {}))

    mode = Seen()
    with mode:
        ember.permute_copy(ember.ones(2, 3), (1, 0))
        ember.values_copy(ember.ones(2, 2).to_sparse_csr())
        ember.slice_inverse(ember.ones(2, 3), ember.ones(2, 3))
    assert {"permute_copy", "values_copy", "slice_inverse"} <= set(mode.names)
