"""Sparse tensors in checkpoints: ``ember.save``/``ember.load`` write and read PyTorch's
``torch._utils._rebuild_sparse_tensor`` form, both ways with ``torch.save``/``torch.load``
(the oracle, when installed), and a crafted checkpoint is refused with a clear error."""

from __future__ import annotations

import collections
import io
import pickle

import numpy as np
import pytest
from testutils import assert_same_sparse

import ember
from ember.serialization import _pickle

pytestmark = [  # PyTorch's (the oracle's) notes on its own sparse support
    pytest.mark.filterwarnings("ignore:Sparse invariant checks are implicitly disabled"),
    pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta"),
    pytest.mark.filterwarnings("ignore:Sparse CSC tensor support is in beta"),
]

IDX = [[0, 1, 1, 0], [2, 0, 2, 2]]  # (0, 2) twice: uncoalesced
VAL = [3.0, 4.0, 5.0, 1.0]
CPU = ember.device("cpu")


def _coo(device=None, dtype=ember.float32):
    return ember.sparse_coo_tensor(IDX, ember.tensor(VAL, dtype=dtype, device=device), (2, 3))


def _hybrid(device=None):
    dense = ember.tensor([[[1.0, 2.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]],
                          [[0.0, 0.0], [3.0, -1.0]]], device=device)
    return dense.to_sparse(2)  # (3, 2) sparse, (2,) dense


def _csr(device=None):
    return _coo(device).coalesce().to_sparse_csr()


def _csc(device=None):
    return _coo(device).to_sparse_csc()


def _roundtrip(obj, **kw):
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    return ember.load(buf, **kw)


def _same(a, b):
    """Two ember sparse tensors are equal: layout, size, dtype, device, parts."""
    assert a.layout is b.layout and a.shape == b.shape and a.dtype is b.dtype
    assert a.device == b.device
    if a.layout is ember.sparse_coo:
        assert a.is_coalesced() == b.is_coalesced()
        np.testing.assert_array_equal(a._indices().numpy(), b._indices().numpy())
    else:
        for x, y in zip(a._compressed_parts(), b._compressed_parts()):
            np.testing.assert_array_equal(x.numpy(), y.numpy())
    values = (lambda t: t._values()) if a.layout is ember.sparse_coo else \
        (lambda t: t.values().detach())
    np.testing.assert_array_equal(values(a).numpy(), values(b).numpy())


def _same_torch(e, t):
    """An ember sparse tensor equals a torch one, exactly."""
    pytest.importorskip("torch")
    assert_same_sparse(e, t)


# -- ember to ember ----------------------------------------------------------------------------

@pytest.mark.parametrize("make", [_coo, lambda: _coo().coalesce(), _hybrid, _csr, _csc,
                                  lambda: _coo(dtype=ember.float64),
                                  lambda: ember.zeros(2, 3).to_sparse()],
                         ids=["coo", "coalesced", "hybrid", "csr", "csc", "float64", "empty"])
def test_roundtrip(make):
    s = make()
    out = _roundtrip(s)
    _same(out, s)
    assert not out.requires_grad
    np.testing.assert_array_equal(out.to_dense().numpy(), s.to_dense().numpy())


def test_roundtrip_in_a_state_dict_with_layouts_and_dense_tensors():
    s = _coo()
    sd = collections.OrderedDict(w=ember.arange(6.0).reshape(2, 3), adj=s, adj_csr=_csr(),
                                 layout=ember.sparse_csr, strided=ember.strided,
                                 values=s._values())  # shares nothing it must not
    out = _roundtrip(sd)
    assert list(out) == list(sd) and out["layout"] is ember.sparse_csr
    assert out["strided"] is ember.strided
    _same(out["adj"], s)
    _same(out["adj_csr"], sd["adj_csr"])
    np.testing.assert_array_equal(out["w"].numpy(), np.arange(6.0).reshape(2, 3))
    # the loaded tensor works: a product and its gradient
    x = ember.ones(3, 2, requires_grad=True)
    (out["adj"] @ x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[4.0] * 2, [0.0] * 2, [9.0] * 2])


def test_requires_grad_and_graph_are_not_saved():
    s = _coo().requires_grad_()
    out = _roundtrip({"s": s, "y": s * 2})  # a non-leaf's values are saved, not its graph
    assert not out["s"].requires_grad and out["y"].grad_fn is None
    np.testing.assert_array_equal(out["y"]._values().numpy(), 2 * np.array(VAL))


def test_map_location_moves_the_sparse_parts():
    out = _roundtrip(_coo(CPU), map_location="cpu")
    assert out.device == CPU and out._indices().device == CPU


def test_legacy_format_roundtrip():
    s = _coo(CPU)
    buf = io.BytesIO()
    ember.save(s, buf, _use_new_zipfile_serialization=False)
    buf.seek(0)
    _same(ember.load(buf, map_location="cpu"), s)


# -- both ways with PyTorch ----------------------------------------------------------------------

@pytest.mark.parity
@pytest.mark.parametrize("make", [lambda: _coo(CPU), lambda: _coo(CPU).coalesce(),
                                  lambda: _hybrid(CPU), lambda: _csr(CPU), lambda: _csc(CPU),
                                  lambda: ember.zeros(2, 3, device=CPU).to_sparse()],
                         ids=["coo", "coalesced", "hybrid", "csr", "csc", "empty"])
def test_ember_save_torch_load(make, tmp_path):
    torch = pytest.importorskip("torch")
    s = make()
    ember.save({"s": s, "w": ember.ones(2, device=CPU)}, tmp_path / "e.pt")
    t = torch.load(tmp_path / "e.pt", weights_only=True)
    _same_torch(s, t["s"])
    with torch.sparse.check_sparse_tensor_invariants():  # what ember wrote is valid there
        torch.load(tmp_path / "e.pt", weights_only=True)
    np.testing.assert_array_equal(t["s"].to_dense().numpy(), s.to_dense().numpy())


@pytest.mark.parity
def test_torch_save_ember_load(tmp_path):
    torch = pytest.importorskip("torch")
    i = torch.tensor(IDX)
    v = torch.tensor(VAL)
    coo = torch.sparse_coo_tensor(i, v, (2, 3))
    hybrid = torch.tensor([[[1.0, 2.0], [0.0, 0.0]], [[0.0, 0.0], [3.0, -1.0]]]).to_sparse(2)
    sd = collections.OrderedDict(coo=coo, coalesced=coo.coalesce(), hybrid=hybrid,
                                 csr=coo.coalesce().to_sparse_csr(),
                                 csc=coo.coalesce().to_sparse_csc(),
                                 csr32=torch.sparse_csr_tensor(
                                     torch.tensor([0, 1, 3], dtype=torch.int32),
                                     torch.tensor([2, 0, 2], dtype=torch.int32),
                                     torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)),
                                 leaf=coo.clone().requires_grad_(),
                                 layout=torch.sparse_coo, dense=torch.arange(3.0))
    torch.save(sd, tmp_path / "t.pt")
    out = ember.load(tmp_path / "t.pt")
    assert list(out) == list(sd) and out["layout"] is ember.sparse_coo
    for name in ("coo", "coalesced", "hybrid", "csr", "csc", "csr32", "leaf"):
        _same_torch(out[name], sd[name].detach())
        np.testing.assert_array_equal(out[name].to_dense().numpy(),
                                      sd[name].detach().to_dense().numpy())
    assert out["csr32"].crow_indices().dtype is ember.int64  # Ember's indices are int64
    assert out["leaf"].requires_grad is False  # torch does not save it
    # and back to torch again
    ember.save(out, tmp_path / "e.pt")
    back = torch.load(tmp_path / "e.pt")
    for name in ("coo", "coalesced", "hybrid", "csr", "csc", "csr32"):
        _same_torch(out[name], back[name])
    assert back["layout"] is torch.sparse_coo


@pytest.mark.parity
def test_ember_writes_pytorchs_pickle(tmp_path):
    """The pickle names the globals PyTorch's does (nothing of ember's)."""
    torch = pytest.importorskip("torch")
    ember.save(_csr(CPU), tmp_path / "e.pt")
    found = set(torch.serialization.get_unsafe_globals_in_checkpoint(tmp_path / "e.pt"))
    t = torch.sparse_coo_tensor(torch.tensor(IDX), torch.tensor(VAL), (2, 3))
    torch.save(t.coalesce().to_sparse_csr(), tmp_path / "t.pt")
    assert found == set(torch.serialization.get_unsafe_globals_in_checkpoint(tmp_path / "t.pt"))
    assert found == set()


# -- crafted checkpoints -----------------------------------------------------------------------

class _Crafted:
    """Pickles as ``func(*args)`` with the given (possibly hostile) arguments."""

    def __init__(self, func, args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


def _crafted(layout, data) -> io.BytesIO:
    buf = io.BytesIO()
    ember.save(_Crafted(_pickle.REBUILD_SPARSE_TENSOR, (layout, data)), buf)
    buf.seek(0)
    return buf


def _layout_marker(name):
    return _Crafted(_pickle.GET_LAYOUT, (name,))


I64 = ember.tensor(IDX, device=CPU)
V = ember.tensor(VAL, device=CPU)


@pytest.mark.parametrize("layout, data, message", [
    (ember.sparse_coo, ("x", V, (2, 3), False), "indices must be a dense tensor, got str"),
    (ember.sparse_coo, (I64.float(), V, (2, 3), False), "indices must be an integer tensor"),
    (ember.sparse_coo, (I64, 1.5, (2, 3), False), "values must be a dense tensor, got float"),
    (ember.sparse_coo, (I64, V, (2, -3), False), "invalid size"),
    (ember.sparse_coo, (I64, V, "23", False), "invalid size"),
    (ember.sparse_coo, (I64, V, (2, 3), 1), "is_coalesced must be a bool or None, got int"),
    (ember.sparse_coo, [I64, V, (2, 3), False], "data must be a tuple, got list"),
    (ember.sparse_coo, (I64, V), "COO data must be"),
    (ember.sparse_csr, (I64, V, (2, 3)), "compressed data must be"),
    ("torch.sparse_coo", (I64, V, (2, 3), False), "unsupported layout"),
    (ember.strided, (I64, V, (2, 3), False), "unsupported layout"),
    (_layout_marker("os.system"), (I64, V, (2, 3), False), "unsupported layout 'os.system'"),
    (_layout_marker("torch._mkldnn"), (I64, V, (2, 3), False), "unsupported layout"),
    (_layout_marker(7), (I64, V, (2, 3), False), "expects a layout name"),
])
def test_malformed_sparse_arguments_are_refused(layout, data, message):
    with pytest.raises(pickle.UnpicklingError, match=message):
        ember.load(_crafted(layout, data))


@pytest.mark.parametrize("layout, data, message", [
    (ember.sparse_coo, (ember.tensor([[0, 5]], device=CPU), V[:2], (2,), False),
     "size is inconsistent with indices: for dim 1, size is 2 but found index 5|"
     "size is inconsistent with indices: for dim 0"),
    (ember.sparse_coo, (ember.tensor([[1, 0]], device=CPU), V[:2], (2,), True),
     "cannot set is_coalesced to true if indices correspond to uncoalesced COO tensor"),
    (ember.sparse_coo, (ember.tensor([[0, -1]], device=CPU), V[:2], (2,), False),
     "found negative index -1 for dim 0"),
    (ember.sparse_csr, (ember.tensor([0, 2, 2], device=CPU), ember.tensor([1, 0], device=CPU),
                        V[:2], (2, 2)), r"are sorted and distinct"),
    (ember.sparse_csr, (ember.tensor([0, 2, 2], device=CPU), ember.tensor([0, 9], device=CPU),
                        V[:2], (2, 2)), r"0 <= col_indices < ncols"),
    (ember.sparse_csr, (ember.tensor([0, 1, 3], device=CPU), ember.tensor([0, 1], device=CPU),
                        V[:2], (2, 2)), r"crow_indices\[..., -1\] == nnz"),
    (ember.sparse_csc, (ember.tensor([0, 2, 2], device=CPU), ember.tensor([1, 1], device=CPU),
                        V[:2], (2, 2)), r"`row_indices\[..., ccol_indices\[..., i - 1\]:"
                                        r"ccol_indices\[..., i\]\] for all i = 1, ..., ncols "
                                        "are sorted and distinct"),
])
def test_invalid_sparse_tensors_are_refused(layout, data, message):
    """The invariants are always checked (``torch.load`` checks them only under
    ``check_sparse_tensor_invariants``), in PyTorch's words."""
    with pytest.raises(RuntimeError, match=message):
        ember.load(_crafted(layout, data))


@pytest.mark.parity
def test_invalid_tensors_fail_as_in_pytorch_with_invariant_checks(tmp_path):
    torch = pytest.importorskip("torch")
    bad = torch.sparse_coo_tensor(torch.tensor([[1, 0]]), torch.tensor([1.0, 2.0]), (2,),
                                  is_coalesced=True)  # a lie torch lets through unchecked
    torch.save(bad, tmp_path / "bad.pt")
    with pytest.raises(RuntimeError) as theirs, torch.sparse.check_sparse_tensor_invariants():
        torch.load(tmp_path / "bad.pt")
    with pytest.raises(RuntimeError) as ours:
        ember.load(tmp_path / "bad.pt")
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parity
def test_invalid_csc_fails_as_in_pytorch_with_invariant_checks(tmp_path):
    torch = pytest.importorskip("torch")
    bad = torch.sparse_csc_tensor(torch.tensor([0, 2, 2]), torch.tensor([1, 0]),
                                  torch.tensor([1.0, 2.0]), (2, 2))  # rows unsorted in a column
    torch.save(bad, tmp_path / "bad.pt")
    with pytest.raises(RuntimeError) as theirs, torch.sparse.check_sparse_tensor_invariants():
        torch.load(tmp_path / "bad.pt")
    with pytest.raises(RuntimeError) as ours:
        ember.load(tmp_path / "bad.pt")
    assert str(ours.value) == str(theirs.value)
