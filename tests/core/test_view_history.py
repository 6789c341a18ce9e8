"""A view's autograd history after in-place changes, and the multi-output views.

- ``split``/``chunk``/``split_with_sizes``/``unbind`` give views that share one node
  (``SplitBackward0``, ``SplitWithSizesBackward0``, ``UnbindBackward0``) whose backward joins
  the parts' gradients; under autograd they, and views of them, refuse in-place changes with
  PyTorch's message.
- After an in-place op under autograd rewrites a root's history (on the root, or through
  another view of it), every live view of the root follows the new history
  (``AsStridedBackward0``), as PyTorch regenerates a stale view's ``grad_fn``: before, a view
  made earlier kept its old history and gave wrong gradients without an error.
Expected values were read from PyTorch 2.13; the ``*_like_torch`` tests run both.
"""

import copy
import gc
import re

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck

MULTI = ("This view is the output of a function that returns multiple views. Such functions "
         "do not allow the output views to be modified inplace. You should replace the "
         "inplace operation by an out-of-place one.")


def _nonleaf(*shape):
    return (ember.arange(float(np.prod(shape)), dtype=ember.float64).reshape(shape) * 0.5
            - 1).requires_grad_() * 1


def _names(outs):
    return [o.grad_fn.name() for o in outs]


# -- the multi-output nodes ------------------------------------------------------------------

@pytest.mark.parametrize("call, name, n", [
    (lambda t: t.split(2), "SplitBackward0", 3),
    (lambda t: t.split([2, 4]), "SplitWithSizesBackward0", 2),
    (lambda t: ember.split_with_sizes(t, [1, 5]), "SplitWithSizesBackward0", 2),
    (lambda t: t.chunk(3), "SplitBackward0", 3),
    (lambda t: ember.chunk(t, 4), "SplitBackward0", 3),
    (lambda t: t.unbind(), "UnbindBackward0", 6),
    (lambda t: ember.unbind(t, 1), "UnbindBackward0", 4),
])
def test_one_node_for_all_outputs(call, name, n):
    a = _nonleaf(6, 4)
    outs = call(a)
    assert len(outs) == n
    assert _names(outs) == [name] * n
    assert all(o.grad_fn is outs[0].grad_fn for o in outs)
    assert [o.output_nr for o in outs] == list(range(n))
    assert all(o._base is a and o.is_view() if hasattr(o, "is_view") else o._base is a
               for o in outs)


@pytest.mark.parametrize("call", [lambda t: t.tensor_split(3), lambda t: t.hsplit(2),
                                  lambda t: t.vsplit(2)])
def test_tensor_split_keeps_a_slice_per_output(call):
    outs = call(_nonleaf(6, 4))
    assert _names(outs) == ["SliceBackward0"] * len(outs)
    assert outs[0].grad_fn is not outs[1].grad_fn
    outs[0].mul_(2)  # ordinary views: in-place is allowed


@pytest.mark.parametrize("call", [lambda t: t.split(2, 1), lambda t: t.split([1, 3, 2], 1),
                                  lambda t: t.chunk(4, 0), lambda t: t.unbind(1),
                                  lambda t: t.unbind(0)])
@pytest.mark.parametrize("used", ["all", "first", "last"])
def test_gradients_join_the_parts(call, used):
    x = ember.tensor(np.random.default_rng(0).standard_normal((4, 6)), requires_grad=True)
    outs = call(x)
    pick = {"all": list(range(len(outs))), "first": [0], "last": [len(outs) - 1]}[used]
    loss = sum(((k + 2) * outs[k] ** 2).sum() for k in pick)
    loss.backward()
    # the reference: the same parts of a plain NumPy array, scaled
    ref = np.zeros((4, 6))
    xn = x.detach().numpy()
    probe = call(ember.tensor(np.arange(24.).reshape(4, 6)))
    for k in pick:
        flat = probe[k].numpy().astype(int).ravel()
        ref.ravel()[flat] += 2 * (k + 2) * xn.ravel()[flat]
    np.testing.assert_allclose(x.grad.numpy(), ref)


@pytest.mark.parametrize("call", [lambda t: t.split(2), lambda t: t.split([1, 2, 2], 1),
                                  lambda t: t.chunk(2, 1), lambda t: t.unbind(1)])
def test_gradcheck(call):
    def f(t):
        outs = call(t)
        return outs[0] * 3, outs[-1].exp()  # the middle parts get no gradient

    assert gradcheck(f, (ember.randn(4, 5, dtype=ember.float64, requires_grad=True),))
    assert gradcheck(f, (ember.randn(4, 5, dtype=ember.complex128, requires_grad=True),))


def test_single_part_and_empty_parts():
    x = ember.ones(3, 2, requires_grad=True)
    (only,) = x.split(3)
    assert only.grad_fn.name() == "SplitBackward0"
    (only * 2).sum().backward()
    assert x.grad.tolist() == [[2.0, 2.0]] * 3
    e = ember.ones(0, 2, requires_grad=True)
    parts = e.chunk(2)
    assert [tuple(p.shape) for p in parts] == [(0, 2), (0, 2)]
    assert ember.ones(0, 2, requires_grad=True).unbind() == ()


def test_double_backward_and_vmap():
    x = ember.randn(4, 6, dtype=ember.float64, requires_grad=True)
    a, b = x.split(3, 1)
    (g,) = ember.autograd.grad((a ** 3).sum() + b.sum(), x, create_graph=True)
    g.sum().backward()
    np.testing.assert_allclose(x.grad[:, :3].numpy(), 6 * x.detach()[:, :3].numpy())
    np.testing.assert_allclose(x.grad[:, 3:].numpy(), 0)
    per_row = ember.func.vmap(ember.func.grad(lambda r: (r.split(2)[0] ** 2).sum()))(x.detach())
    ref = np.zeros((4, 6))
    ref[:, :2] = 2 * x.detach().numpy()[:, :2]
    np.testing.assert_allclose(per_row.numpy(), ref)


# -- in-place changes to multi-output views ----------------------------------------------------

INPLACE = {
    "mul_": lambda v: v.mul_(2),
    "add_": lambda v: v.add_(1),
    "zero_": lambda v: v.zero_(),
    "fill_": lambda v: v.fill_(2),
    "copy_": lambda v: v.copy_(ember.ones(v.shape)),
    "setitem": lambda v: v.__setitem__(0, 1.0),
    "t_": lambda v: v.t_(),
    "unsqueeze_": lambda v: v.unsqueeze_(0),
}


@pytest.mark.parametrize("op", sorted(INPLACE))
def test_inplace_on_a_split_output_raises(op):
    a = _nonleaf(6, 4)
    x, y = a.split(3)
    before = a.detach().clone()
    with pytest.raises(RuntimeError, match=re.escape(
            "Output 0 of Split is a view and is being modified inplace. " + MULTI)):
        INPLACE[op](x)
    assert ember.equal(a.detach(), before)  # refused before anything was written
    with ember.no_grad():
        INPLACE[op](x)  # allowed outside autograd


def test_inplace_messages_name_the_output_and_the_last_view():
    a = _nonleaf(6, 4)
    u = a.unbind()
    with pytest.raises(RuntimeError, match=re.escape("Output 1 of Unbind is a view and is "
                                                     "being modified inplace. " + MULTI)):
        u[1].add_(1)
    x, _ = a.split([2, 4])
    with pytest.raises(RuntimeError, match="^Output 0 of SplitWithSizes is a view"):
        x.mul_(2)
    with pytest.raises(RuntimeError, match="^Output 0 of Select is a view and is being "):
        x[0].add_(1)  # a view of a multi-output view keeps the mark
    with pytest.raises(RuntimeError, match="^Output 0 of View is a view and is being "):
        x.view(8).add_(1)
    leaf = ember.randn(6, 4, requires_grad=True)
    with pytest.raises(RuntimeError, match="^Output 0 of Split is a view"):
        leaf.split(3)[0].mul_(2)  # before the leaf's own error, as PyTorch checks


def test_inplace_without_autograd_is_allowed():
    b = ember.zeros(6, 4)
    x, y = b.split(3)
    x.add_(1)  # nothing requires grad
    assert b.sum().item() == 12
    w = ember.ones(3, 4, requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape(
            "A view was created in no_grad mode and is being modified inplace with grad mode "
            "enabled. " + MULTI)):
        x.add_(w)  # the base required no grad when split: PyTorch's wording
    parts = ember.unsafe_split(_nonleaf(6, 4), 3)
    parts[0].mul_(2)  # unsafe_split's parts are not views


def test_base_changed_after_split_raises_only_if_a_backward_reaches_the_part():
    a = _nonleaf(6, 4)
    x, y = a.split(3)
    a.mul_(2)
    with pytest.raises(RuntimeError, match=re.escape(
            "is a view and its base or another view of its base has been modified inplace. "
            + MULTI)):
        (x.sum() + y.sum()).backward()
    b = _nonleaf(6, 4)
    p, q = b.split(3)
    b.mul_(2)
    b.sum().backward()  # the parts are not used after the change: no error


# -- views follow their root's new history -----------------------------------------------------

def test_view_made_before_its_root_required_grad():
    w = ember.ones(4, requires_grad=True)
    h = ember.zeros(3, 4)
    a = h[0]
    h[0] = w * 2
    assert a.requires_grad and a.grad_fn.name() == "AsStridedBackward0"
    a.sum().backward()
    assert w.grad.tolist() == [2.0] * 4


def test_view_overlapping_another_view_changed_in_place():
    x = ember.ones(6, 4, requires_grad=True)
    b = x.clone()
    p = b[0:3]
    q = b[1:2]
    q.mul_(3)
    assert p.grad_fn.name() == "AsStridedBackward0"
    p.sum().backward()
    assert x.grad[:, 0].tolist() == [1.0, 3.0, 1.0, 0.0, 0.0, 0.0]


def test_transposed_view_after_its_root_changed_in_place():
    x = ember.ones(2, 3, requires_grad=True)
    b = x * 1
    t = b.t()
    b.mul_(5)
    (t * ember.arange(6.).reshape(3, 2)).sum().backward()
    assert x.grad.tolist() == [[0.0, 10.0, 20.0], [5.0, 15.0, 25.0]]


def test_a_view_used_before_the_change_keeps_that_history():
    x = ember.ones(4, requires_grad=True)
    b = x * 1
    v = b[:2]
    early = v * 1  # recorded before the change: through the old history
    b.mul_(3)
    (early.sum() + v.sum()).backward()
    assert x.grad.tolist() == [4.0, 4.0, 0.0, 0.0]  # 1 (early) + 3 (v after the change)


SCENARIOS = {  # name -> fn(lib, x) -> loss, x a (4, 6) float64 leaf
    "slice_then_root_inplace": lambda L, x: _s1(L, x),
    "view_of_view_then_sibling_inplace": lambda L, x: _s2(L, x),
    "setitem_root_then_views": lambda L, x: _s3(L, x),
    "two_inplaces": lambda L, x: _s4(L, x),
    "expand_transpose_views": lambda L, x: _s5(L, x),
}


def _s1(L, x):
    b = x * 1
    v = b[1:3, ::2]
    b.addcmul_(x, x)
    return (v ** 2).sum()


def _s2(L, x):
    b = x * 1.5
    v = b.view(2, 12)[1].view(3, 4)
    s = b[:, 2:4]
    s.sin_()
    return (v * L.arange(12.).reshape(3, 4)).sum() + s.sum()


def _s3(L, x):
    h = L.zeros(4, 6, dtype=L.float64)
    rows = [h[i] for i in range(4)]
    h[1:3] = x[1:3] * 2
    h[:, 0] = x[:, 5].tanh()
    return sum((k + 1) * (r ** 2).sum() for k, r in enumerate(rows))


def _s4(L, x):
    b = x * 1
    v = b.t()[2:4]
    b.add_(x * x)
    w = v * 1
    b.mul_(2)
    return (w * v).sum()


def _s5(L, x):
    b = x * 2
    v = b.transpose(0, 1)
    e = b[0].expand(3, 6)
    b[0].mul_(x[1])
    return (v.sum(1) ** 2).sum() + (e * 3).sum()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_gradients_like_torch(name):
    torch = pytest.importorskip("torch")
    data = np.random.default_rng(1).uniform(0.5, 1.5, (4, 6))
    grads = []
    for L in (ember, torch):
        x = L.tensor(data, dtype=L.float64, requires_grad=True)
        SCENARIOS[name](L, x).backward()
        grads.append(x.grad.detach().numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_gradcheck_through_rebased_views(name):
    data = np.random.default_rng(2).uniform(0.5, 1.5, (4, 6))
    x = ember.tensor(data, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda t: SCENARIOS[name](ember, t), (x,))


def test_the_registry_forgets_dead_views_and_is_not_copied():
    root = ember.zeros(8, 8)
    for _ in range(300):
        root[1:3].sum()
    gc.collect()
    assert len(root._views) < 64
    keep = [root[i] for i in range(8)]
    clone = copy.deepcopy(root)
    assert clone._views is None
    w = ember.ones(8, requires_grad=True)
    root[0] = w
    assert all(k.requires_grad for k in keep)
    assert not ember.zeros(2).requires_grad
    leaf = ember.ones(3, requires_grad=True)
    leaf[:2].sum()
    assert leaf._views is None  # a leaf that requires grad cannot change history in place


def test_swap_tensors_moves_a_view_between_registries():
    a = ember.arange(6.).reshape(2, 3)
    b = ember.arange(4.).reshape(2, 2)
    ember.utils.swap_tensors(a, b)
    assert a.shape == (2, 2) and b.shape == (2, 3)
    assert any(r() is a for r in a._base._views.values())
    assert not any(r() is b for r in a._base._views.values())


# -- retain_grad follows the new history; .data --------------------------------------------------

def test_retain_grad_moves_to_the_new_history():
    x = ember.ones(3, requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.mul_(3)
    (y * 5).sum().backward()
    assert y.grad.tolist() == [5.0] * 3  # the gradient of y's new value
    assert x.grad.tolist() == [30.0] * 3


@pytest.mark.parametrize("which", ["base", "written_view", "other_view"])
def test_retain_grad_follows_in_place_changes_through_views(which):
    x = ember.ones(4, requires_grad=True)
    b = x * 2
    v = b[:2]
    kept = {"base": b, "written_view": v, "other_view": v}[which]
    kept.retain_grad()
    if which == "other_view":
        b.mul_(3)
    else:
        v.mul_(3)
    (kept * 5).sum().backward()
    assert kept.grad.tolist() == [5.0] * kept.numel()
    assert x.grad.tolist() == [30.0, 30.0] + ([10.0, 10.0] if which == "base" else [0.0, 0.0])


def test_hooks_stay_on_the_old_history():
    x = ember.ones(4, requires_grad=True)
    b = x * 2
    v = b[:2]
    seen = []
    v.register_hook(seen.append)
    b.mul_(3)
    (v * 5).sum().backward()
    assert seen == []  # PyTorch's: the hook belongs to v's history before the change


def test_data_has_a_version_counter_of_its_own():
    """As PyTorch's: writes through ``.data`` are not seen by autograd's checks (the
    backward computes with the changed value), while ``detach()`` shares the counter."""
    x = ember.ones(3, requires_grad=True)
    y = x.exp()
    d = y.data
    assert d._version == 0 and d.data_ptr() == y.data_ptr()
    d.mul_(0)
    d[1:].add_(0)  # a view of the alias shares the alias's counter
    assert y._version == 0 and d._version == 2
    y.sum().backward()  # exp's backward multiplies by its saved output, now zeros
    assert x.grad.tolist() == [0.0, 0.0, 0.0]
    z = x.exp()
    z.detach().mul_(0)
    assert z._version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_data_writes_refresh_compiled_constants():
    """A compiled inference step keeps a bias broadcast to the batch: a write through
    ``.data`` (own counter) still refreshes it on the next call."""
    nn = pytest.importorskip("ember.nn")
    layer = nn.Linear(4, 3)
    step = ember.compile(lambda x: layer(x))
    x = ember.randn(5, 4)
    with ember.no_grad():
        before = step(x)
        layer.bias.data.add_(1.0)
        after = step(x)
    assert ember.allclose(after, before + 1.0)
    assert ember.allclose(after, layer(x).detach())


# -- a custom Function that changes an input view in place (mark_dirty) ---------------------------

class _Double(ember.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.mark_dirty(a)
        return a.mul_(2)

    @staticmethod
    def backward(ctx, g):
        return g * 2


class _AddInto(ember.autograd.Function):  # changes its second argument: y += s * x
    @staticmethod
    def forward(ctx, x, y, s):
        ctx.mark_dirty(y)
        ctx.s = s
        return y.add_(x * s)

    @staticmethod
    def backward(ctx, g):
        return g * ctx.s, g, None


def test_function_dirtying_a_view_rebases_its_base():
    x = ember.ones(4, requires_grad=True)
    b = x * 1
    v = b[:2]
    out = _Double.apply(v)
    assert out is v and b.grad_fn.name() == "CopySlices"
    b.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 1.0, 1.0]  # PyTorch 2.13's


def test_function_dirtying_its_second_argument_view():
    def f(x, w):
        b = w * 1
        _AddInto.apply(x, b[1:3], 3.0)
        return b * b

    x = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    w = ember.randn(4, 3, dtype=ember.float64, requires_grad=True)
    assert gradcheck(f, (x, w))


def test_function_dirtying_a_view_errors():
    class Two(ember.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.mark_dirty(a)
            return a.mul_(2), a * 1

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2

    b = _nonleaf(4)
    with pytest.raises(RuntimeError, match="^Functions which modify views in-place must return "
                                           "a single Variable$"):
        Two.apply(b[:2])
    with pytest.raises(RuntimeError, match=re.escape(MULTI)):
        _Double.apply(_nonleaf(4).split(2)[0])


def test_detach_in_place_refuses_every_view():
    for base in (ember.ones(4), _nonleaf(4)):
        with pytest.raises(RuntimeError, match=r"^Can't detach views in-place\. Use detach\(\) "
                                               r"instead\. If you are using Distributed"):
            base[:2].detach_()
    y = _nonleaf(3)
    assert y.detach_() is y and y.grad_fn is None


@pytest.mark.parametrize("in_geom, out_geom", [
    (((4, 6), (6, 1), 0), ((4, 3), (6, 1), 0)),       # a column block of a matrix
    (((4, 6), (6, 1), 0), ((3, 4), (1, 6), 2)),       # transposed, offset
    (((6, 4), (1, 6), 0), ((2, 2), (12, 2), 1)),      # from a transposed root, strided
    (((2, 3, 4), (12, 4, 1), 0), ((2, 4), (12, 1), 8)),
    (((4, 6), (6, 1), 3), ((5,), (1,), 4)),           # reaching past the input's end
    (((4, 6), (6, 1), 0), ((3, 3), (1, 1), 0)),       # overlapping view: the general path
    (((3, 4), (0, 1), 0), ((4,), (1,), 0)),           # an expanded input: the general path
])
def test_strided_gradient_fast_path_equals_the_general_one(in_geom, out_geom):
    from ember.autograd.grad_mode import GRAD
    from ember.ops.shape import _strided_grad

    g = ember.tensor(np.random.default_rng(3).standard_normal(out_geom[0]))
    general = _strided_grad(g, in_geom, out_geom)  # grad mode on: Tensor ops throughout
    prev = GRAD.enabled
    GRAD.enabled = False
    try:
        fast = _strided_grad(g, in_geom, out_geom)
    finally:
        GRAD.enabled = prev
    np.testing.assert_allclose(fast.numpy(), general.numpy(), rtol=1e-15, atol=1e-15)


def test_a_refused_function_call_leaves_the_view_history_as_it_was():
    b = _nonleaf(4)
    x, y = b.split(2)
    before = x.grad_fn
    with pytest.raises(RuntimeError, match=re.escape(MULTI)):
        _Double.apply(x)
    assert x.grad_fn is before and x.output_nr == 0 and x.requires_grad
