"""ember.nested (torch.nested): construction, printing, padding, indexing, the op families
(forward and the components' gradients) against PyTorch, the jagged layout, the tutorial's
multi-head attention, and PyTorch's errors."""

import math
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

SHAPES = [(2, 3), (4, 3), (1, 3)]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _arrays(shapes=SHAPES, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


def _pair(arrays=None, layout="strided", requires_grad=False, device=None):
    """The same nested tensor in Ember and in PyTorch (float64); ``device``: Ember's (the
    default device unless given: the strict device in a strict run)."""
    arrays = _arrays() if arrays is None else arrays
    e = ember.nested.nested_tensor([ember.tensor(a) for a in arrays], device=device,
                                   layout=getattr(ember, layout), requires_grad=requires_grad)
    t = torch.nested.nested_tensor([torch.tensor(a) for a in arrays],
                                   layout=getattr(torch, layout), requires_grad=requires_grad)
    return e, t


def _np(x):
    return x.detach().numpy() if isinstance(x, ember.Tensor) else x.detach().cpu().numpy()


def _same(e, t, rtol=1e-10, atol=1e-12):
    """Nested (or regular) Ember and PyTorch results hold the same values."""
    if getattr(t, "is_nested", False):
        assert e.is_nested
        ec, tc = e.unbind(), t.unbind()
        assert len(ec) == len(tc)
        for a, b in zip(ec, tc):
            assert tuple(a.shape) == tuple(b.shape)
            np.testing.assert_allclose(_np(a), _np(b), rtol=rtol, atol=atol)
    else:
        assert not getattr(e, "is_nested", False)
        assert tuple(e.shape) == tuple(t.shape)
        np.testing.assert_allclose(_np(e), _np(t), rtol=rtol, atol=atol)


def _torch_error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return info.value


# -- loading, layout, construction ------------------------------------------------------------

def test_lazy_import_and_dispatch_only_once_a_nested_tensor_is_made():
    code = (
        "import sys, ember\n"
        "assert 'ember.nested' not in sys.modules\n"
        "nested = ember.nested\n"
        "assert not ember.overrides.is_active()\n"
        "nt = nested.nested_tensor([ember.ones(2), ember.ones(3)])\n"
        "assert ember.overrides.is_active() and nt.is_nested\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_jagged_layout_constant():
    import pickle

    assert repr(ember.jagged) == "ember.jagged" and isinstance(ember.jagged, ember.layout)
    assert pickle.loads(pickle.dumps(ember.jagged)) is ember.jagged
    assert ember.jagged is not ember.strided
    assert not hasattr(torch, "nested_tensor") and not hasattr(ember, "nested_tensor")


def test_strided_construction_and_metadata():
    e, t = _pair(device="cpu")
    assert repr(e) == repr(t).replace("torch.", "ember.")
    assert e.is_nested and not ember.ones(1).is_nested
    assert isinstance(e, ember.Tensor)
    assert e.layout is ember.strided and e.dim() == t.dim() == 3
    assert e.dtype is ember.float64 and e.device == ember.device("cpu")
    default = _pair()[0]  # on the default device, components and all
    assert default.device == default[0].device == ember.tensor(0.0).device
    assert e.size(0) == 3 and e.size(-1) == t.size(-1) == 3
    for call in (lambda x: x.size(), lambda x: x.shape, lambda x: x.size(1)):
        err = _torch_error(lambda call=call: call(t))
        with pytest.raises(type(err), match=str(err)[:40].replace("(", r"\(")):
            call(e)
    assert e.numel() == t.numel() and not e.requires_grad


def test_nested_tensor_copies_and_converts():
    src = ember.arange(6.0).reshape(2, 3)
    nt = ember.nested.nested_tensor([src, [[1, 2, 3]]], dtype=ember.float64)
    src.add_(100)
    assert nt.dtype is ember.float64 and nt[0].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert nt[1].tolist() == [[1, 2, 3]]
    empty = ember.nested.nested_tensor([])
    assert repr(empty) == repr(torch.nested.nested_tensor([])).replace("torch.", "ember.")


def test_requires_grad_repr_and_construction_errors():
    e, t = _pair(requires_grad=True, device="cpu")
    assert repr(e) == repr(t).replace("torch.", "ember.") and e.requires_grad and e.is_leaf
    err = _torch_error(lambda: torch.nested.nested_tensor([torch.ones(2, 3), torch.ones(3)]))
    with pytest.raises(RuntimeError) as info:
        ember.nested.nested_tensor([ember.ones(2, 3), ember.ones(3)])
    assert str(info.value) == str(err)
    err = _torch_error(lambda: torch.nested.nested_tensor([torch.ones(2)],
                                                          layout=torch.sparse_coo))
    with pytest.raises(RuntimeError) as info:
        ember.nested.nested_tensor([ember.ones(2)], layout=ember.sparse_coo)
    assert str(info.value) == str(err).replace("torch.", "ember.")


def test_as_nested_tensor_keeps_autograd():
    arrays = _arrays()
    ea = [ember.tensor(a, requires_grad=True) for a in arrays]
    ta = [torch.tensor(a, requires_grad=True) for a in arrays]
    for layout in ("strided", "jagged"):
        e = ember.nested.as_nested_tensor(ea, layout=getattr(ember, layout))
        t = torch.nested.as_nested_tensor(ta, layout=getattr(torch, layout))
        _same(e, t)
        (e * e).to_padded_tensor(0.0).sum().backward()
        (t * t).to_padded_tensor(0.0).sum().backward()
        for a, b in zip(ea, ta):
            np.testing.assert_allclose(_np(a.grad), _np(b.grad))
            a.grad = None
            b.grad = None
    e = ember.nested.as_nested_tensor(ember.ones(2, 3, 4))
    _same(e, torch.nested.as_nested_tensor(torch.ones(2, 3, 4)))


# -- padding, indexing ------------------------------------------------------------------------

@pytest.mark.parametrize("layout", ["strided", "jagged"])
def test_to_padded_tensor(layout):
    e, t = _pair(layout=layout)
    _same(e.to_padded_tensor(0.0), t.to_padded_tensor(0.0))
    _same(ember.nested.to_padded_tensor(e, -1.0, (3, 6, 3)),
          torch.nested.to_padded_tensor(t, -1.0, (3, 6, 3)))
    if layout == "jagged":  # PyTorch checks output_size for the strided layout only
        return
    for size in [(3, 2, 3), (3, 6)]:
        err = _torch_error(lambda size=size: t.to_padded_tensor(0.0, size))
        with pytest.raises(RuntimeError) as info:
            e.to_padded_tensor(0.0, size)
        assert str(info.value) == str(err)


@pytest.mark.parametrize("layout", ["strided", "jagged"])
def test_indexing_unbind_iteration(layout):
    e, t = _pair(layout=layout)
    _same(e[0], t[0])
    _same(e[1, :, -1], t[1, :, -1])
    _same(e[-1], t[-1])
    assert [tuple(c.shape) for c in e.unbind()] == [tuple(c.shape) for c in t.unbind()]
    assert [tuple(c.shape) for c in e] == SHAPES and len(e) == 3
    assert [tuple(c.shape) for c in ember.unbind(e)] == SHAPES
    with pytest.raises((RuntimeError, NotImplementedError)):
        e[0:1]


# -- ops: forward and the components' gradients ----------------------------------------------

def _check_op(e_fn, t_fn, layout="strided", arrays=None, grad=True, rtol=1e-10,
              indexed=False):
    """``e_fn`` on an Ember nested tensor against ``t_fn`` applied to each PyTorch component
    (nested ops are per-component ops; ``indexed``: it also takes the component's index),
    values and gradients."""
    arrays = _arrays() if arrays is None else arrays
    ecomps = [ember.tensor(a, requires_grad=grad) for a in arrays]
    tcomps = [torch.tensor(a, requires_grad=grad) for a in arrays]
    e = ember.nested.as_nested_tensor(ecomps, layout=getattr(ember, layout))
    out = e_fn(e)
    assert out.is_nested and out.layout is e.layout
    refs = [t_fn(c, i) if indexed else t_fn(c) for i, c in enumerate(tcomps)]
    for a, b in zip(out.unbind(), refs):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(_np(a), _np(b), rtol=rtol, atol=1e-12)
    if grad:
        weights = [np.random.default_rng(i).standard_normal(tuple(r.shape))
                   for i, r in enumerate(refs)]
        loss = sum((c * ember.tensor(w)).sum() for c, w in zip(out.unbind(), weights))
        loss.backward()
        sum((r * torch.tensor(w)).sum() for r, w in zip(refs, weights)).backward()
        for a, b in zip(ecomps, tcomps):
            np.testing.assert_allclose(_np(a.grad), _np(b.grad), rtol=1e-8, atol=1e-12)
    return out


UNARY = [  # Ember's functions looked up at the call: dispatch wraps them once it is on
    ("relu", lambda x: F.relu(x), TF.relu), ("gelu", lambda x: F.gelu(x), TF.gelu),
    ("silu", lambda x: F.silu(x), TF.silu), ("sigmoid", lambda x: ember.sigmoid(x),
                                              torch.sigmoid),
    ("tanh", lambda x: x.tanh(), torch.tanh), ("exp", lambda x: ember.exp(x), torch.exp),
    ("neg", lambda x: -x, torch.neg), ("abs", lambda x: x.abs(), torch.abs),
    ("sin", lambda x: ember.sin(x), torch.sin),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.1), lambda x: TF.leaky_relu(x, 0.1)),
    ("pow", lambda x: x ** 2, lambda x: x ** 2),
    ("square", lambda x: ember.square(x), torch.square),
]


@pytest.mark.parametrize("layout", ["strided", "jagged"])
@pytest.mark.parametrize("name,ef,tf", UNARY, ids=[u[0] for u in UNARY])
def test_unary(name, ef, tf, layout):
    _check_op(ef, tf, layout)


@pytest.mark.parametrize("layout", ["strided", "jagged"])
def test_unary_against_torch_nested(layout):
    e, t = _pair(layout=layout)
    _same(F.relu(e), TF.relu(t))
    _same(F.gelu(e), TF.gelu(t))
    _same(F.silu(e), TF.silu(t))


@pytest.mark.parametrize("layout", ["strided", "jagged"])
def test_binary(layout):
    other = [np.random.default_rng(9).standard_normal(s) for s in SHAPES]
    row = np.random.default_rng(3).standard_normal(3)
    per_batch = np.random.default_rng(4).standard_normal((3, 1, 3))
    cases = [
        (lambda x: x + 2.5, lambda x: x + 2.5),
        (lambda x: 1 - x, lambda x: 1 - x),
        (lambda x: x * x, lambda x: x * x),
        (lambda x: x / (x * x + 1), lambda x: x / (x * x + 1)),
        (lambda x: x + ember.tensor(row), lambda x: x + torch.tensor(row)),
        (lambda x: ember.tensor(row) * x, lambda x: torch.tensor(row) * x),
    ]
    for ef, tf in cases:
        _check_op(ef, tf, layout)
    # nested op nested of the same structure; a regular tensor indexed by batch
    eo = ember.nested.nested_tensor([ember.tensor(a) for a in other],
                                    layout=getattr(ember, layout))
    _check_op(lambda x: ember.maximum(x, eo) * eo,
              lambda x, i: torch.maximum(x, torch.tensor(other[i])) * torch.tensor(other[i]),
              layout, indexed=True)
    _check_op(lambda x: x - ember.tensor(per_batch),
              lambda x, i: x - torch.tensor(per_batch[i]), layout, indexed=True)


def test_binary_against_torch_nested_and_errors():
    e, t = _pair(layout="jagged")
    _same(e + e * 2, t + t * 2)
    _same(e + ember.ones(3), t + torch.ones(3))
    _same(e * ember.ones(3, 1, 1) * 2, t * torch.ones(3, 1, 1) * 2)
    es, ts = _pair()
    _same(es * es - 1, ts * ts - 1)
    other = [np.zeros(s) for s in [(2, 3), (3, 3), (1, 3)]]
    eb = ember.nested.nested_tensor([ember.tensor(a) for a in other])
    tb = torch.nested.nested_tensor([torch.tensor(a) for a in other])
    err = _torch_error(lambda: ts + tb)
    with pytest.raises(RuntimeError) as info:
        es + eb
    assert str(info.value) == str(err)


@pytest.mark.parametrize("layout", ["strided", "jagged"])
def test_in_place(layout):
    e, t = _pair(layout=layout)
    assert e.mul_(2) is e
    e += 1
    F.relu(e, inplace=True)
    _same(e, TF.relu(t * 2 + 1))
    if layout == "jagged":
        _same(e.values(), TF.relu(t * 2 + 1).values())


@pytest.mark.parametrize("layout", ["strided", "jagged"])
def test_linear_matmul_bmm(layout):
    rng = np.random.default_rng(5)
    w, b = rng.standard_normal((4, 3)), rng.standard_normal(4)
    m = rng.standard_normal((3, 5))
    _check_op(lambda x: F.linear(x, ember.tensor(w), ember.tensor(b)),
              lambda x: TF.linear(x, torch.tensor(w), torch.tensor(b)), layout)
    _check_op(lambda x: ember.matmul(x, ember.tensor(m)), lambda x: x @ torch.tensor(m), layout)
    _check_op(lambda x: x @ ember.tensor(m), lambda x: x @ torch.tensor(m), layout)
    e, t = _pair(layout=layout)
    _same(F.linear(e, ember.tensor(w)), TF.linear(t, torch.tensor(w)))
    if layout == "strided":
        _same(ember.bmm(e, e.transpose(1, 2)), torch.bmm(t, t.transpose(1, 2)))
        _check_op(lambda x: ember.matmul(x, x.transpose(-1, -2)), lambda x: x @ x.mT, layout)
    else:
        _same(e @ ember.tensor(m), t @ torch.tensor(m))
        with pytest.raises(RuntimeError, match="one ragged dim"):
            ember.matmul(e, e.transpose(1, 2))


@pytest.mark.parametrize("layout", ["strided", "jagged"])
def test_softmax_dropout_layer_norm(layout):
    _check_op(lambda x: F.softmax(x, -1), lambda x: TF.softmax(x, -1), layout)
    _check_op(lambda x: x.log_softmax(1), lambda x: x.log_softmax(0), layout)
    _check_op(lambda x: ember.softmax(x, dim=2), lambda x: torch.softmax(x, dim=1), layout)
    rng = np.random.default_rng(6)
    w, b = rng.standard_normal(3), rng.standard_normal(3)
    _check_op(lambda x: F.layer_norm(x, (3,), ember.tensor(w), ember.tensor(b)),
              lambda x: TF.layer_norm(x, (3,), torch.tensor(w), torch.tensor(b)), layout)
    _check_op(lambda x: F.dropout(x, 0.0), lambda x: x, layout)
    out = _check_op(lambda x: F.dropout(x, 1.0), lambda x: x * 0, layout)
    assert all(not c.any() for c in out.unbind())
    assert F.dropout(_pair(layout=layout)[0], 0.5, training=False).is_nested
    e, t = _pair(layout=layout)
    _same(F.softmax(e, -1), TF.softmax(t, -1))
    err = _torch_error(lambda: TF.softmax(t, 0))
    with pytest.raises(RuntimeError) as info:
        F.softmax(e, 0)
    assert str(info.value) == str(err)


@pytest.mark.parametrize("layout", ["strided", "jagged"])
def test_transpose_reshape_view(layout):
    _check_op(lambda x: x.transpose(1, 2), lambda x: x.transpose(0, 1), layout)
    _check_op(lambda x: x.transpose(-1, -2).contiguous().view(-1, 3, -1),
              lambda x: x.transpose(0, 1).contiguous(), layout)
    _check_op(lambda x: x.reshape(-1, -1, 1, 3), lambda x: x.reshape(-1, 1, 3), layout)
    _check_op(lambda x: x.reshape(3, -1, 3, 1).transpose(1, 2).reshape(3, 3, -1),
              lambda x: x.reshape(-1, 3, 1).transpose(0, 1).reshape(3, -1), layout)
    _check_op(lambda x: x.unsqueeze(-1), lambda x: x.unsqueeze(-1), layout)
    _check_op(lambda x: x.unsqueeze(1).permute(0, 3, 2, 1), lambda x: x[None].permute(2, 1, 0),
              layout)
    e, t = _pair(layout=layout)
    _same(e.reshape(3, -1, 3, 1), t.reshape(3, -1, 3, 1))
    _same(e.transpose(1, 2), t.transpose(1, 2))
    err = _torch_error(lambda: t.transpose(0, 1))
    with pytest.raises(type(err)) as info:
        e.transpose(0, 1)
    assert str(info.value) == str(err)
    if layout == "jagged":
        tt = t.transpose(1, 2)
        et = e.transpose(1, 2)
        assert repr(tuple(et.values().shape)) == repr(tuple(tt.values().shape))
        assert et._ragged_idx == tt._ragged_idx == 2
        _same(et.values(), tt.values())


@pytest.mark.parametrize("layout", ["strided", "jagged"])
def test_sum_mean(layout):
    _check_op(lambda x: x.sum(-1, keepdim=True), lambda x: x.sum(-1, keepdim=True), layout)
    _check_op(lambda x: x.mean(-1), lambda x: x.mean(-1), layout)
    e, t = _pair(layout="jagged")
    _same(e.sum(-1, keepdim=True), t.sum(-1, keepdim=True))
    _same(e.mean(-1), t.mean(-1))
    _same(e.sum(1), t.sum(1))  # over the ragged dim: a regular tensor
    _same(e.mean(1), t.mean(1))
    _same(e.sum(), t.sum())
    _same(e.mean(), t.mean())
    err = _torch_error(lambda: t.sum(0))
    with pytest.raises(RuntimeError) as info:
        e.sum(0)
    assert str(info.value) == str(err)


def test_attention_on_nested_heads():
    rng = np.random.default_rng(7)
    shapes = [(2, 3, 4), (2, 5, 4)]
    qs, ks, vs = ([rng.standard_normal(s) for s in shapes] for _ in range(3))
    for layout in ("strided", "jagged"):
        eq, ek, ev = ([ember.tensor(a, requires_grad=True) for a in arrs]
                      for arrs in (qs, ks, vs))
        nest = [ember.nested.as_nested_tensor(x, layout=getattr(ember, layout))
                for x in (eq, ek, ev)]
        out = F.scaled_dot_product_attention(*nest)
        tq, tk, tv = ([torch.tensor(a, requires_grad=True) for a in arrs]
                      for arrs in (qs, ks, vs))
        refs = [TF.scaled_dot_product_attention(q, k, v) for q, k, v in zip(tq, tk, tv)]
        _same(out, torch.nested.as_nested_tensor(refs))
        out.to_padded_tensor(0.0).pow(2).sum().backward()
        sum(r.pow(2).sum() for r in refs).backward()
        for a, b in zip(eq + ek + ev, tq + tk + tv):
            np.testing.assert_allclose(_np(a.grad), _np(b.grad), rtol=1e-8, atol=1e-12)
    # jagged (N, L*, H, E) transposed to (N, H, L*, E), PyTorch's NJT path
    jq, tq = _pair([rng.standard_normal((n, 2, 4)) for n in (3, 5)], layout="jagged")
    _same(F.scaled_dot_product_attention(*(jq.transpose(1, 2),) * 3),
          TF.scaled_dot_product_attention(*(tq.transpose(1, 2),) * 3))


def mha_nested(query, key, value, nheads, W_q, W_k, W_v, W_out, b_q=None, b_k=None, b_v=None,
               b_out=None, dropout_p=0.0, torch=ember, F=F):
    """The old nested tensor tutorial's multi-head attention, unchanged but for the module."""
    N = query.size(0)
    E_total = W_q.size(0)
    assert E_total % nheads == 0, "Embedding dim is not divisible by nheads"
    E_head = E_total // nheads
    query = F.linear(query, W_q, b_q)
    key = F.linear(key, W_k, b_k)
    value = F.linear(value, W_v, b_v)
    query = query.reshape(-1, -1, nheads, E_head).transpose(1, 2)
    key = key.reshape(-1, -1, nheads, E_head).transpose(1, 2)
    value = value.reshape(-1, -1, nheads, E_head).transpose(1, 2)
    keyT = key.transpose(-1, -2)
    attn_weights = torch.matmul(query, keyT)
    attn_weights = attn_weights * (1.0 / math.sqrt(E_head))
    attn_weights = F.softmax(attn_weights, dim=-1)
    if dropout_p > 0.0:
        attn_weights = F.dropout(attn_weights, p=dropout_p)
    attn_output = torch.matmul(attn_weights, value)
    attn_output = attn_output.transpose(1, 2).reshape(N, -1, E_total)
    attn_output = F.linear(attn_output, W_out, b_out)
    return attn_output


def test_tutorial_mha_nested_against_torch_per_sequence():
    rng = np.random.default_rng(8)
    E, nheads, lengths = 8, 2, [3, 5, 1]
    params = [rng.standard_normal(s) for s in [(E, E)] * 4 + [(E,)] * 4]
    seqs = [[rng.standard_normal((n, E)) for n in lengths] for _ in range(3)]
    ep = [ember.tensor(p, requires_grad=True) for p in params]
    tp = [torch.tensor(p, requires_grad=True) for p in params]
    q, k, v = (ember.nested.nested_tensor([ember.tensor(a) for a in s]) for s in seqs)
    out = mha_nested(q, k, v, nheads, *ep[:4], *ep[4:])
    assert out.is_nested
    refs = []
    for i in range(len(lengths)):  # each sentence alone, batch of one, in PyTorch
        one = [torch.tensor(s[i])[None] for s in seqs]
        refs.append(TF.multi_head_attention_forward(
            one[0].transpose(0, 1), one[1].transpose(0, 1), one[2].transpose(0, 1), E, nheads,
            None, torch.cat(tp[4:7]), None, None, False, 0.0, tp[3], tp[7], need_weights=False,
            use_separate_proj_weight=True, q_proj_weight=tp[0], k_proj_weight=tp[1],
            v_proj_weight=tp[2])[0].transpose(0, 1)[0])
    _same(out, torch.nested.nested_tensor(refs), rtol=1e-8)
    out.to_padded_tensor(0.0).sum().backward()
    sum(r.sum() for r in refs).backward()
    for a, b in zip(ep, tp):
        np.testing.assert_allclose(_np(a.grad), _np(b.grad), rtol=1e-7, atol=1e-10)


# -- gradients of nested leaves ---------------------------------------------------------------

@pytest.mark.parametrize("layout", ["strided", "jagged"])
def test_nested_leaf_grad(layout):
    e, t = _pair(layout=layout, requires_grad=True)
    (F.gelu(e) * e).to_padded_tensor(0.0).sum().backward()
    (TF.gelu(t) * t).to_padded_tensor(0.0).sum().backward()
    assert e.grad.is_nested
    _same(e.grad, t.grad)
    # a per-component op straight on the leaf (its components are views that track grad)
    e, t = _pair(layout=layout, requires_grad=True)
    w = np.random.default_rng(2).standard_normal((2, 3))
    F.linear(e, ember.tensor(w)).to_padded_tensor(0.0).pow(2).sum().backward()
    TF.linear(t, torch.tensor(w)).to_padded_tensor(0.0).pow(2).sum().backward()
    _same(e.grad, t.grad)
    d = e.detach()
    assert not d.requires_grad and d.is_nested
    assert e.requires_grad_(False) is e and not e.requires_grad


# -- the jagged layout ------------------------------------------------------------------------

def test_jagged_constructors_values_offsets():
    values = np.arange(10.0).reshape(5, 2)
    offsets = [0, 2, 5]
    e = ember.nested.nested_tensor_from_jagged(ember.tensor(values, device="cpu"),
                                               ember.tensor(offsets, device="cpu"))
    t = torch.nested.nested_tensor_from_jagged(torch.tensor(values), torch.tensor(offsets))
    _same(e, t)
    assert e.values() is not None and e.values().data_ptr() == e[0].data_ptr()  # a view
    _same(e.values(), t.values())
    _same(e.offsets(), t.offsets())
    assert e.layout is ember.jagged and e.dim() == 3 and e.is_contiguous() == t.is_contiguous()
    assert str(e.shape) == f"ember.Size([2, j{e.size(1)._id}, 2])"
    assert e.size(1) is e.shape[1] and e.size(-1) == 2 and e.size(0) == 2
    assert repr(e) == (f"NestedTensor(size=(2, {e.size(1)!r}, 2), offsets=tensor([0, 2, 5]), "
                       "contiguous=True)")
    assert (e * 2).size(1) is e.size(1)  # ops that keep the offsets keep the ragged size
    lengths = [1, 2]
    e2 = ember.nested.nested_tensor_from_jagged(ember.tensor(values), ember.tensor(offsets),
                                                lengths=ember.tensor(lengths))
    t2 = torch.nested.nested_tensor_from_jagged(torch.tensor(values), torch.tensor(offsets),
                                                lengths=torch.tensor(lengths))
    _same(e2, t2)
    assert not e2.is_contiguous() and not t2.is_contiguous()
    e3 = ember.nested.nested_tensor_from_jagged(ember.tensor(values), lengths=ember.tensor([2, 3]))
    t3 = torch.nested.nested_tensor_from_jagged(torch.tensor(values), lengths=torch.tensor([2, 3]))
    _same(e3, t3)
    _same(e3.offsets(), t3.offsets())
    v4 = np.arange(24.0).reshape(2, 6, 2)
    e4 = ember.nested.nested_tensor_from_jagged(ember.tensor(v4), ember.tensor([0, 2, 6]),
                                                jagged_dim=2)
    t4 = torch.nested.nested_tensor_from_jagged(torch.tensor(v4), torch.tensor([0, 2, 6]),
                                                jagged_dim=2)
    _same(e4, t4)
    with pytest.raises(RuntimeError, match="At least one of offsets or lengths"):
        ember.nested.nested_tensor_from_jagged(ember.tensor(values))


def test_jagged_from_list_and_ragged_dim():
    arrays = [np.ones((2, 3, 4)), np.ones((2, 5, 4))]
    e, t = _pair(arrays, layout="jagged")
    assert repr(tuple(e.values().shape)) == repr(tuple(t.values().shape))
    assert e._ragged_idx == t._ragged_idx == 2 and e.size(1) == 2 and e.size(-1) == 4
    with pytest.raises(RuntimeError, match="ragged"):
        ember.nested.nested_tensor([ember.ones(2, 3), ember.ones(3, 4)], layout=ember.jagged)


def test_narrow_and_masked_select():
    base = np.arange(40.0).reshape(4, 5, 2)
    starts, lengths = [0, 1, 2, 0], [3, 2, 1, 5]
    e = ember.nested.narrow(ember.tensor(base), 1, ember.tensor(starts), ember.tensor(lengths),
                            layout=ember.jagged)
    t = torch.nested.narrow(torch.tensor(base), 1, torch.tensor(starts), torch.tensor(lengths),
                            layout=torch.jagged)
    _same(e, t)
    assert not e.is_contiguous()
    es = ember.nested.narrow(ember.tensor(base), 2, 1, 1)  # strided: a copy, any dim
    assert es.layout is ember.strided
    for c, row in zip(es.unbind(), base):
        np.testing.assert_array_equal(c.numpy(), row[:, 1:2])
    mask = np.array([[True, False, True], [False, False, True]])
    x = np.arange(6.0).reshape(2, 3)
    _same(ember.nested.masked_select(ember.tensor(x), ember.tensor(mask)),
          torch.nested.masked_select(torch.tensor(x), torch.tensor(mask)))


# -- errors -----------------------------------------------------------------------------------

def test_unsupported_ops_name_the_op():
    e, t = _pair(device="cpu")
    err = _torch_error(lambda: torch.cumsum(t, 1))
    with pytest.raises(NotImplementedError) as info:
        ember.cumsum(e, 1)
    assert str(err).startswith(str(info.value).split(" This could")[0])
    assert "'aten::cumsum'" in str(info.value)
    ej, tj = _pair(layout="jagged")
    err = _torch_error(lambda: tj.flip(1))
    with pytest.raises(NotImplementedError) as info:
        ej.flip(1)
    assert str(info.value) == str(err) == "aten.flip.default"


def test_plain_functions_still_see_a_tensor():
    e, _ = _pair()
    assert ember.is_tensor(e) and ember.numel(e) == 21 and e.is_floating_point()
    assert e.to(ember.float32).dtype is ember.float32
    assert e.double().dtype is ember.float64


@pytest.mark.parametrize("layout", ["strided", "jagged"])
def test_chunk_split_unflatten_flatten(layout):
    arrays = [np.random.default_rng(i).standard_normal((n, 6)) for i, n in enumerate((2, 4))]
    _check_op(lambda x: x.unflatten(-1, [2, 3]).transpose(1, 2).flatten(-2),
              lambda x: x.unflatten(-1, [2, 3]).transpose(0, 1).flatten(-2), layout, arrays)
    _check_op(lambda x: ember.chunk(x, 3, dim=-1)[1] * 2, lambda x: x.chunk(3, -1)[1] * 2,
              layout, arrays)
    _check_op(lambda x: x.split(2, -1)[2], lambda x: x.split(2, -1)[2], layout, arrays)
    _check_op(lambda x: x.unsqueeze(2).squeeze(2), lambda x: x, layout, arrays)
    e, t = _pair(arrays, layout=layout)
    for a, b in zip(ember.chunk(e, 3, dim=-1), torch.chunk(t, 3, dim=-1)):
        _same(a, b)
    with pytest.raises(RuntimeError, match="dim=0"):
        e.chunk(2, 0)


def _tutorial_forward(self, query, is_causal, torch, F):
    result = self.packed_proj(query)
    query, key, value = torch.chunk(result, 3, dim=-1)
    query = query.unflatten(-1, [self.nheads, self.E_head]).transpose(1, 2)
    key = key.unflatten(-1, [self.nheads, self.E_head]).transpose(1, 2)
    value = value.unflatten(-1, [self.nheads, self.E_head]).transpose(1, 2)
    attn_output = F.scaled_dot_product_attention(query, key, value, dropout_p=0.0,
                                                 is_causal=is_causal)
    attn_output = attn_output.transpose(1, 2).flatten(-2)
    return self.out_proj(attn_output)


@pytest.mark.parametrize("is_causal", [False, True])
def test_tutorial_njt_multihead_attention_against_torch(is_causal):
    rng = np.random.default_rng(11)
    E, nheads, lengths = 8, 2, [3, 1, 5]
    seqs = [rng.standard_normal((n, E)) for n in lengths]
    params = {"packed_proj.weight": rng.standard_normal((3 * E, E)),
              "packed_proj.bias": rng.standard_normal(3 * E),
              "out_proj.weight": rng.standard_normal((E, E)),
              "out_proj.bias": rng.standard_normal(E)}
    layers = []
    for lib, nn in ((ember, ember.nn), (torch, torch.nn)):
        layer = nn.Module()
        layer.packed_proj = nn.Linear(E, 3 * E, dtype=lib.float64)
        layer.out_proj = nn.Linear(E, E, dtype=lib.float64)
        layer.load_state_dict({k: lib.tensor(v) for k, v in params.items()})
        layer.nheads, layer.E_head = nheads, E // nheads
        layers.append(layer)
    el, tl = layers
    q = ember.nested.nested_tensor([ember.tensor(s) for s in seqs], layout=ember.jagged)
    out = _tutorial_forward(el, q, is_causal, ember, F)
    assert out.is_nested and out.layout is ember.jagged
    out.to_padded_tensor(0.0).pow(2).sum().backward()
    # PyTorch's CPU kernels refuse this NJT attention (non-contiguous after transposing):
    # the reference is each sentence alone, a dense batch of one
    refs = [_tutorial_forward(tl, torch.tensor(s)[None], is_causal, torch, TF)[0]
            for s in seqs]
    sum(r.pow(2).sum() for r in refs).backward()
    _same(out, torch.nested.as_nested_tensor(refs), rtol=1e-8)
    for name, p in el.named_parameters():
        np.testing.assert_allclose(_np(p.grad), _np(dict(tl.named_parameters())[name].grad),
                                   rtol=1e-7, atol=1e-10)


def test_strided_layout_warns_once_as_in_pytorch():
    code = (
        "import warnings, ember\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    ember.nested.nested_tensor([ember.ones(2)], layout=ember.jagged)\n"
        "    assert not w\n"
        "    ember.nested.nested_tensor([ember.ones(2)])\n"
        "    ember.nested.as_nested_tensor([ember.ones(2)])\n"
        "assert len(w) == 1 and 'prototype stage' in str(w[0].message), w\n")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("layout", ["strided", "jagged"])
def test_masks_where_and_backward_with_a_nested_gradient(layout):
    _check_op(lambda x: x.masked_fill(x > 0, 0.0), lambda x: x.masked_fill(x > 0, 0.0), layout)
    _check_op(lambda x: ember.where(x > 0, x, x * 2), lambda x: torch.where(x > 0, x, x * 2),
              layout)
    if layout == "jagged":  # PyTorch's strided nested tensors have neither
        e, t = _pair(layout=layout)
        _same(e.masked_fill(e > 0, 0.0), t.masked_fill(t > 0, 0.0))
        _same(ember.where(e > 0, e, e * 0), torch.where(t > 0, t, t * 0))
    ec = [ember.tensor(a, requires_grad=True) for a in _arrays()]
    tc = [torch.tensor(a, requires_grad=True) for a in _arrays()]
    en = ember.nested.as_nested_tensor(ec, layout=getattr(ember, layout))
    tn = torch.nested.as_nested_tensor(tc, layout=getattr(torch, layout))
    g = [np.full(s, 2.0) for s in SHAPES]
    (en * 3).backward(ember.nested.nested_tensor([ember.tensor(a) for a in g],
                                                 layout=getattr(ember, layout)))
    (tn * 3).backward(tn.detach() * 0 + 2)  # (a jagged gradient must share the offsets)
    for a, b in zip(ec, tc):
        np.testing.assert_allclose(_np(a.grad), _np(b.grad))


def test_to_moves_and_casts_components(testdev):
    for layout in (ember.strided, ember.jagged):
        e = ember.nested.nested_tensor([ember.ones(2, 3), ember.ones(1, 3)], layout=layout)
        moved = e.to(testdev, ember.float64)
        assert moved.is_nested and moved.device == testdev and moved.dtype is ember.float64
        assert all(c.device == testdev for c in moved.unbind())
        assert moved.to_padded_tensor(0.0).device == testdev
        if layout is ember.jagged:
            assert moved.offsets().device == testdev


@pytest.mark.parametrize("layout", ["strided", "jagged"])
def test_gradcheck_through_nested_ops(layout):
    rng = np.random.default_rng(12)
    a, b = (ember.tensor(rng.standard_normal(s), requires_grad=True) for s in [(2, 3), (4, 3)])
    w = ember.tensor(rng.standard_normal((3, 3)), requires_grad=True)

    def fn(a, b, w):
        nt = ember.nested.as_nested_tensor([a, b], layout=getattr(ember, layout))
        h = F.layer_norm(F.gelu(F.linear(nt, w)), (3,)) * nt
        return F.softmax(h.transpose(1, 2), -1).to_padded_tensor(-1.0)

    assert ember.autograd.gradcheck(fn, (a, b, w))
