"""Forward-mode AD (``ember.autograd.forward_ad``): PyTorch's API and errors, and, for every
differentiable op of the registry with samples in ``ember.ops.opdb``, the jvp of forward AD
against the vjp of reverse mode in float64 (``<J v, u> == <v, J^T u>`` for random ``u``,
``v``), plus PyTorch's forward AD as an oracle on a sample of each op.

``EXPECTED_FAILURES`` names the ops forward AD cannot handle yet, each with its reason; the
test checks that each of them still fails, so that the list only shrinks.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.autograd.forward_ad as fwAD
from ember.ops.opdb import load_all
from ember.ops.registry import OPS

ENTRIES = load_all()
DIFFERENTIABLE = sorted(n for n in ENTRIES if n in OPS and OPS[n].differentiable)

#: op -> why forward AD does not give its jvp yet (checked to be still failing)
EXPECTED_FAILURES: dict[str, str] = {
}


def _seeded(name, op):
    if not OPS[name].random:
        return op

    def run(*args, **kwargs):
        ember.manual_seed(0)
        return op(*args, **kwargs)

    return run


_COMPLEX = getattr(ember, "complex128", None)


def _samples(e):
    """The op's float64 samples with a float64 leaf; for the ops that only differentiate
    complex inputs (``imag``, ``view_as_real``), those with a complex128 leaf."""
    samples = list(e.samples(None, "float64", requires_grad=True))
    real = [s for s in samples if _leaves(s, (ember.float64,))]
    if real or _COMPLEX is None:
        return real
    return [s for s in samples if _leaves(s, (_COMPLEX,))]


def _leaves(s, dtypes=(ember.float64, _COMPLEX)):
    """The sample's tensors of ``dtypes`` that require grad, once each."""
    seen, out = set(), []
    for t in s.tensors():
        if t.requires_grad and t.dtype in dtypes and id(t) not in seen:
            seen.add(id(t))
            out.append(t)
    return out


def _fn(e, s, op, leaves):
    index = {id(t): i for i, t in enumerate(leaves)}

    def f(*new):
        def sub(t):
            if id(t) in index:
                return new[index[id(t)]]
            return t.detach() if t.requires_grad else t

        r = s.map_tensors(sub).call(op)
        if e.output is not None:
            r = e.output(r)
        if isinstance(r, (tuple, list)):
            return [o for o in r if isinstance(o, ember.Tensor) and o.requires_grad]
        return [r] if isinstance(r, ember.Tensor) and r.requires_grad else []

    return f


def _randn_like(t, rng):
    r = rng.standard_normal(tuple(t.shape))
    if t.is_complex():
        r = r + 1j * rng.standard_normal(tuple(t.shape))
    return ember.tensor(r, dtype=t.dtype, device=t.device)


def _np(t):
    """A tensor's values as a NumPy array (from any device)."""
    return t.detach().cpu().numpy()


def _dot(a, b) -> float:
    """The real inner product ``Re(sum(conj(a) b))``."""
    a, b = _np(a), _np(b)
    return float(np.real(np.sum(np.conj(a) * b)))


def jvp_vs_vjp(name) -> int:
    """Check op ``name`` on all its float64 samples; the number of samples checked."""
    e, op = ENTRIES[name], _seeded(name, OPS[name].fn)
    rng = np.random.default_rng(0)
    checked = 0
    for s in _samples(e):
        leaves = _leaves(s)
        if not leaves or any(t.numel() == 0 for t in leaves):
            continue
        f = _fn(e, s, op, leaves)
        outs = f(*leaves)
        if not outs:
            continue
        us = [_randn_like(o, rng) for o in outs]
        vs = [_randn_like(t, rng) for t in leaves]
        grads = ember.autograd.grad(outs, leaves, us, allow_unused=True)
        rhs = sum(_dot(v, g) for v, g in zip(vs, grads) if g is not None)
        with fwAD.dual_level():
            duals = [fwAD.make_dual(t.detach(), v) for t, v in zip(leaves, vs)]
            fouts = f(*duals)
            tangents = [fwAD.unpack_dual(o).tangent for o in fouts]
        assert len(fouts) == len(outs), f"{name} {s}: {len(fouts)} outputs, expected {len(outs)}"
        for i, (o, t) in enumerate(zip(fouts, tangents)):
            assert t is not None, f"{name} {s}: output {i} has no tangent"
            assert tuple(t.shape) == tuple(o.shape), f"{name} {s}: tangent shape {t.shape}"
        lhs = sum(_dot(t, u) for t, u in zip(tangents, us))
        scale = 1.0 + abs(rhs) + sum(float(np.abs(_np(t)).sum()) for t in tangents)
        assert abs(lhs - rhs) <= 1e-7 * scale, f"{name} {s}: <Jv,u>={lhs} != <v,J^T u>={rhs}"
        checked += 1
    return checked


def _to_torch(torch, x):
    if isinstance(x, ember.Tensor):
        return torch.from_numpy(np.array(_np(x)))
    if isinstance(x, ember.dtype):
        return getattr(torch, x.name)
    if isinstance(x, ember.memory_format):
        return getattr(torch, repr(x).split(".")[-1])
    if isinstance(x, ember.device):
        return torch.device("cpu")
    if type(x) in (list, tuple):
        return type(x)(_to_torch(torch, v) for v in x)
    if type(x) is dict:
        return {k: _to_torch(torch, v) for k, v in x.items()}
    return x


def _torch_fn(torch, name):
    if "." in name:
        obj = torch
        for part in name.split("."):
            obj = getattr(obj, part)
        return obj
    for ns in (torch, torch.nn.functional, torch.Tensor):
        fn = getattr(ns, name, None)
        if fn is not None:
            return fn
    raise AttributeError(f"torch has no {name}")


def _flat_tensors(x, is_tensor):
    if is_tensor(x):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for v in x for t in _flat_tensors(v, is_tensor)]
    return []


def against_torch(name, torch) -> int:
    """Forward AD of op ``name`` against PyTorch's on its first sample with a float64 leaf
    that PyTorch differentiates forward; the number of tangents compared."""
    e, op = ENTRIES[name], _seeded(name, OPS[name].fn)
    tfn = _torch_fn(torch, e.torch or name)
    rng = np.random.default_rng(1)
    import torch.autograd.forward_ad as tfw

    for s in _samples(e):
        leaves = _leaves(s)
        if not leaves or any(t.numel() == 0 for t in leaves):
            continue
        vs = [_randn_like(t, rng) for t in leaves]
        index = {id(t): i for i, t in enumerate(leaves)}
        with fwAD.dual_level():
            duals = [fwAD.make_dual(t.detach(), v) for t, v in zip(leaves, vs)]
            got = s.map_tensors(lambda t, duals=duals, index=index: duals[index[id(t)]]
                                if id(t) in index else t.detach()).call(op)
            got = [fwAD.unpack_dual(o).tangent for o in _flat_tensors(
                got, lambda x: isinstance(x, ember.Tensor))]
        targs = _to_torch(torch, (s.input, s.args, s.kwargs))
        tleaves = _flat_tensors(targs, lambda x: isinstance(x, torch.Tensor))
        # the torch copies of the leaves, in the order s.tensors() lists them
        flat = s.tensors()
        with tfw.dual_level():
            tduals = {}
            for i, t in enumerate(flat):
                if id(t) in index and id(t) not in tduals:
                    tduals[id(t)] = tfw.make_dual(tleaves[i], torch.from_numpy(
                        _np(vs[index[id(t)]]).copy()))
            k = iter(range(len(flat)))

            def sub(x, flat=flat, k=k, tduals=tduals):
                if isinstance(x, torch.Tensor):
                    t = flat[next(k)]
                    return tduals.get(id(t), x)
                if type(x) in (list, tuple):
                    return type(x)(sub(v) for v in x)
                if type(x) is dict:
                    return {key: sub(v) for key, v in x.items()}
                return x

            tin, targs_, tkw = sub(targs)
            if OPS[name].random:
                torch.manual_seed(0)
            try:
                expected = tfn(tin, *targs_, **tkw)
            except (NotImplementedError, RuntimeError) as exc:
                if "forward AD" in str(exc) or "forward-mode" in str(exc) or \
                        "not implemented" in str(exc).lower():
                    return -1  # PyTorch has no forward AD for this op
                raise
            expected = [tfw.unpack_dual(o).tangent for o in _flat_tensors(
                expected, lambda x: isinstance(x, torch.Tensor))]
        assert len(got) == len(expected), f"{name} {s}: {len(got)} outputs vs torch's " \
                                          f"{len(expected)}"
        compared = 0
        for i, (g, x) in enumerate(zip(got, expected)):
            if x is None or OPS[name].random:
                continue  # PyTorch's draws differ from ember's: compare no random op
            assert g is not None, f"{name} {s}: output {i} has no tangent, PyTorch's has"
            np.testing.assert_allclose(_np(g), x.numpy(force=True), rtol=1e-6,
                                       atol=1e-8,
                                       err_msg=f"{name} {s}: tangent of output {i} vs torch")
            compared += 1
        return compared
    return 0


def inplace_matches(name) -> int:
    """``Tensor.<name>_`` on a dual tensor leaves it the tangent the out-of-place op gives,
    written into the tangent it had (PyTorch updates a tangent in place; an in-place view op
    gives its tensor a new geometry, and so a new tangent tensor)."""
    e, info = ENTRIES[name], OPS[name]
    op, iop = _seeded(name, info.fn), _seeded(name, info.inplace)
    rng = np.random.default_rng(2)
    checked = 0
    for s in e.samples(None, "float64"):
        inp = s.input
        if not isinstance(inp, ember.Tensor) or inp.dtype != ember.float64 or not inp.numel():
            continue
        others = [t for t in s.tensors() if t is not inp and t.dtype == ember.float64]
        v = _randn_like(inp, rng)
        vo = {id(t): _randn_like(t, rng) for t in others}
        with fwAD.dual_level():
            duals = {id(t): fwAD.make_dual(t.clone(), vo[id(t)]) for t in others}
            s2 = s.map_tensors(lambda t, d=duals: d.get(id(t), t))
            try:
                expected = op(fwAD.make_dual(inp.clone(), v), *s2.args, **s2.kwargs)
                want = fwAD.unpack_dual(expected).tangent
            except RuntimeError as exc:  # not differentiable here (scatter's reduce=)
                assert "not implemented" in str(exc), f"{name} {s}: {exc}"
                with pytest.raises(RuntimeError, match="not implemented"):
                    target = fwAD.make_dual(inp.clone(), v.clone())
                    iop(target, *s2.args, **s2.kwargs)
                    fwAD.unpack_dual(target)
                continue
            if not isinstance(expected, ember.Tensor) or expected.shape != inp.shape or \
                    expected.dtype != inp.dtype:
                continue  # in place needs the result to fit the input
            target = fwAD.make_dual(inp.clone(), v.clone())
            tangent = fwAD.unpack_dual(target).tangent
            r = iop(target, *s2.args, **s2.kwargs)
            assert r is target, f"{name}_ must return self"
            got = fwAD.unpack_dual(target).tangent
        assert got is not None, f"{name}_ {s}: no tangent after the in-place op"
        np.testing.assert_allclose(_np(got), _np(want), rtol=1e-10, atol=1e-12,
                                   err_msg=f"{name}_ {s}")
        if not info.view:
            assert got is tangent, f"{name}_ {s}: the tangent was replaced, not updated in place"
        checked += 1
    return checked


def _shares(a, b) -> bool:
    """Whether two tensors share memory (their arrays, on any NumPy-backed device or CuPy)."""
    if type(a._data).__module__.startswith("cupy"):
        import cupy

        return bool(cupy.may_share_memory(a._data, b._data))  # shares_memory: no 0-d
    return np.shares_memory(a._data.view(np.ndarray), b._data.view(np.ndarray))


def view_tangent_is_a_view(name) -> int:
    """A view op's output tangent is the same view of its input's tangent (shares memory)."""
    e, op = ENTRIES[name], OPS[name].fn
    rng = np.random.default_rng(3)
    checked = 0
    for s in e.samples(None, "float64"):
        inp = s.input
        if not isinstance(inp, ember.Tensor) or inp.dtype not in (ember.float64, _COMPLEX) \
                or not inp.numel():
            continue
        with fwAD.dual_level():
            d = fwAD.make_dual(inp.clone(), _randn_like(inp, rng))
            base_t = fwAD.unpack_dual(d).tangent
            out = op(d, *s.args, **s.kwargs)
            outs = [o for o in (out if isinstance(out, (tuple, list)) else (out,))
                    if isinstance(o, ember.Tensor) and o.numel()]
            for o in outs:
                if not _shares(o, d):
                    continue  # this call copied (reshape of a non-contiguous input)
                t = fwAD.unpack_dual(o).tangent
                assert t is not None, f"{name} {s}: the view has no tangent"
                assert _shares(t, base_t), \
                    f"{name} {s}: the view's tangent is not a view of its base's"
                checked += 1
    return checked


#: op -> why ember's tangent differs from PyTorch's forward AD (checked to still differ)
ORACLE_DIFFERENCES: dict[str, str] = {
    "ldexp": "PyTorch's forward AD of ldexp with negative integer exponents multiplies the "
             "tangent by the integer 2**e, which is 0; ember's tangent is v * 2.0**e",
    "triangular_solve": "PyTorch's forward AD uses the whole tangent of A, though the op reads "
                        "only its triangle; ember's tangent (like both backwards) sees the "
                        "triangle only, which is the derivative",
}


def _marked(names, failures):
    return [pytest.param(n, id=n, marks=pytest.mark.xfail(strict=True, reason=failures[n]))
            if n in failures else pytest.param(n, id=n) for n in names]


@pytest.mark.parametrize("name", _marked(DIFFERENTIABLE, EXPECTED_FAILURES))
def test_jvp_matches_vjp(name):
    assert jvp_vs_vjp(name), f"{name}: no sample with a float64 (or complex128) leaf"


def test_failure_lists_name_registered_ops():
    stale = sorted(n for n in {**EXPECTED_FAILURES, **ORACLE_DIFFERENCES}
                   if n not in DIFFERENTIABLE)
    assert not stale, f"names to delete from the lists: {stale}"


_ORACLE = [n for n in DIFFERENTIABLE if ENTRIES[n].torch is not None
           and "torch" not in ENTRIES[n].skip]


@pytest.mark.parity
@pytest.mark.parametrize("name", _marked(_ORACLE, ORACLE_DIFFERENCES))
def test_tangent_matches_torch(name):
    torch = pytest.importorskip("torch")
    if OPS[name].random:
        pytest.skip(f"{name} draws random numbers: PyTorch's draws are not ember's")
    compared = against_torch(name, torch)
    if compared == -1:
        pytest.skip(f"PyTorch has no forward AD for {name}")
    assert compared, f"{name}: no tangent compared with PyTorch's"


@pytest.mark.parametrize("name", [n for n in DIFFERENTIABLE if OPS[n].inplace is not None
                                  and "inplace" not in ENTRIES[n].skip])
def test_inplace_variant_updates_tangent(name):
    assert inplace_matches(name), f"{name}_: no sample whose result fits its input"


@pytest.mark.parametrize("name", [n for n in DIFFERENTIABLE if OPS[n].view])
def test_view_tangent_is_a_view(name):
    assert view_tangent_is_a_view(name), f"{name}: no sample made a view"


# -- the API, against PyTorch's behaviour and messages ------------------------------------------

def _f64(*shape):
    return ember.arange(float(np.prod(shape)), dtype=ember.float64).reshape(shape) + 1


def test_dual_level_enters_and_exits():
    assert fwAD._current_level == -1
    with fwAD.dual_level() as level:
        assert level == 0 and fwAD._current_level == 0
        d = fwAD.make_dual(_f64(2), ember.ones(2, dtype=ember.float64))
        y = d * 3
        assert fwAD.unpack_dual(y).tangent.tolist() == [3.0, 3.0]
    assert fwAD._current_level == -1
    # after the level, every tangent is gone
    p, t = fwAD.unpack_dual(y)
    assert p is y and t is None
    with fwAD.dual_level():  # a new level sees none of the old tangents
        assert fwAD.unpack_dual(y).tangent is None
        assert fwAD.unpack_dual(d).tangent is None


def test_enter_and_exit_functions_and_decorator():
    assert fwAD.enter_dual_level() == 0
    try:
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported at the "
                                               "moment"):
            fwAD.enter_dual_level()
        with pytest.raises(RuntimeError, match="Trying to exit a forward AD level that was not "
                                               "the last one that was created"):
            fwAD.exit_dual_level(level=5)
    finally:
        fwAD.exit_dual_level()
    with pytest.raises(RuntimeError, match="Dual level must be a positive number."):
        fwAD.exit_dual_level()

    @fwAD.dual_level()
    def jvp_of_sin(x, v):
        return fwAD.unpack_dual(fwAD.make_dual(x, v).sin()).tangent

    x = _f64(3)
    np.testing.assert_allclose(_np(jvp_of_sin(x, ember.ones(3, dtype=ember.float64))),
                               np.cos(_np(x)))
    assert fwAD._current_level == -1


def test_make_dual_errors_in_pytorchs_words():
    x = _f64(2)
    with pytest.raises(RuntimeError, match="Trying to create a dual Tensor for forward AD but no "
                                           r"level exists, make sure to enter_dual_level\(\) "
                                           "first."):
        fwAD.make_dual(x, x)
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match=r"Trying to set a forward gradient that has a "
                           r"different size than that of the original Tensor, this is not "
                           r"supported. Tensor is of size \[2\] while the given forward "
                           r"gradient is of size \[3\]."):
            fwAD.make_dual(x, _f64(3))
        with pytest.raises(ValueError, match="Expected primal to be floating point or complex, "
                                             "but got: ember.int64"):
            fwAD.make_dual(ember.ones(2, dtype=ember.int64), x)
        with pytest.raises(ValueError, match="Expected tangent to be floating point or "
                                             "complex, but got: ember.int64"):
            fwAD.make_dual(x, ember.ones(2, dtype=ember.int64))
        with pytest.raises(RuntimeError, match="Invalid level given to _make_dual"):
            fwAD.make_dual(x, x, level=3)
        d = fwAD.make_dual(x, x)
        with pytest.raises(RuntimeError, match="Making a dual Tensor based on a Tensor that "
                                               "already has a forward gradient at the same "
                                               "level 0 is not supported."):
            fwAD.make_dual(d, x)
        with pytest.raises(RuntimeError, match="Setting a forward grad that itself has a "
                                               "forward gradient at the same level0"):
            fwAD.make_dual(x, d)
        # another float dtype is accepted as PyTorch accepts it
        assert fwAD.unpack_dual(fwAD.make_dual(x, ember.ones(2))).tangent.dtype == ember.float32


def test_make_dual_rejects_a_tangent_on_another_device():
    from ember.testing import register_test_device

    register_test_device("testdev")
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="primal is on cpu and the tangent on testdev:0"):
            fwAD.make_dual(_f64(2).cpu(), _f64(2).to("testdev:0"))


def test_unpack_dual_returns_the_namedtuple():
    x, v = _f64(2), ember.ones(2, dtype=ember.float64)
    assert fwAD.unpack_dual(x) == (x, None)  # no level: the tensor itself
    with fwAD.dual_level():
        d = fwAD.make_dual(x, v)
        u = fwAD.unpack_dual(d)
        assert isinstance(u, fwAD.UnpackedDualTensor) and u._fields == ("primal", "tangent")
        assert u.tangent is v  # the tangent as it is (same layout as the primal)
        assert fwAD.unpack_dual(u.primal).tangent is None  # the primal carries no tangent
        assert fwAD.unpack_dual(u.primal * 2).tangent is None
        assert _shares(u.primal, x) and _shares(d, x)
        assert fwAD.unpack_dual(d, level=4).tangent is None
        # a tangent of another layout is copied into the primal's
        strided = ember.ones(4, dtype=ember.float64)[::2]
        t = fwAD.unpack_dual(fwAD.make_dual(x, strided)).tangent
        assert t is not strided and t.tolist() == [1.0, 1.0]
    assert fwAD.UnpackedDualTensor is ember.autograd.forward_ad.UnpackedDualTensor


def test_make_dual_is_backward_differentiable():
    x = _f64(3).requires_grad_()
    with fwAD.dual_level():
        d = fwAD.make_dual(x, ember.ones(3, dtype=ember.float64))
        (d * d).sum().backward()
    assert x.grad.tolist() == (2 * x.detach()).tolist()


def test_integer_and_boolean_results_have_no_tangent():
    with fwAD.dual_level():
        d = fwAD.make_dual(_f64(3), ember.ones(3, dtype=ember.float64))
        assert fwAD.unpack_dual(d.argmax()).tangent is None
        assert fwAD.unpack_dual(d > 1).tangent is None
        assert fwAD.unpack_dual(d.detach()).tangent is None
        values, indices = d.max(0)
        assert fwAD.unpack_dual(values).tangent.item() == 1.0
        assert fwAD.unpack_dual(indices).tangent is None


def test_inplace_into_a_plain_tensor_and_views_follow_their_base():
    v = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(_f64(3), v)
        y = ember.zeros(3, dtype=ember.float64)
        view = y[1:]  # made before y has a tangent
        y.add_(d)
        assert fwAD.unpack_dual(y).tangent.tolist() == [1.0, 2.0, 3.0]
        assert fwAD.unpack_dual(view).tangent.tolist() == [2.0, 3.0]
        # an in-place op on a view writes the view's region of its base's tangent
        b = ember.zeros(4, dtype=ember.float64)
        b[1:].copy_(d)
        assert fwAD.unpack_dual(b).tangent.tolist() == [0.0, 1.0, 2.0, 3.0]
        # ... and an in-place op on a base shows through the views' tangents
        base = fwAD.make_dual(ember.zeros(3, dtype=ember.float64),
                              ember.zeros(3, dtype=ember.float64))
        part = base[:2]
        held = fwAD.unpack_dual(part).tangent
        base.add_(d)
        assert fwAD.unpack_dual(part).tangent.tolist() == [1.0, 2.0]
        assert held.tolist() == [1.0, 2.0]  # the tangent was updated in place
        # copying a plain tensor in zeroes the tangent, as PyTorch does
        base.copy_(ember.ones(3, dtype=ember.float64))
        assert fwAD.unpack_dual(base).tangent.tolist() == [0.0, 0.0, 0.0]


def test_out_argument_with_a_dual_input_raises():
    with fwAD.dual_level():
        d = fwAD.make_dual(_f64(2), ember.ones(2, dtype=ember.float64))
        with pytest.raises(RuntimeError, match="out=... arguments don't support automatic "
                                               "differentiation"):
            ember.add(d, 1, out=ember.empty(2, dtype=ember.float64))


def test_composite_function_and_module_parameters():
    """A small MLP's jvp with respect to its input and to a weight, against the double-vjp
    of ``autograd.functional.jvp``."""
    rng = np.random.default_rng(5)
    w1 = ember.tensor(rng.standard_normal((4, 3)))
    w2 = ember.tensor(rng.standard_normal((2, 4)))
    x = ember.tensor(rng.standard_normal((5, 3)))  # on the default device
    vx, vw = ember.tensor(rng.standard_normal((5, 3))), ember.tensor(rng.standard_normal((4, 3)))

    def f(x, w1):
        h = ember.nn.functional.gelu(x @ w1.t()).tanh()
        return ember.log_softmax(h @ w2.t(), dim=1).mean(0)

    with fwAD.dual_level():
        jvp = fwAD.unpack_dual(f(fwAD.make_dual(x, vx), fwAD.make_dual(w1, vw))).tangent
    _, expected = ember.autograd.functional.jvp(f, (x, w1), (vx, vw))
    np.testing.assert_allclose(_np(jvp), _np(expected), rtol=1e-10, atol=1e-12)


def test_no_cost_outside_forward_ad():
    """Outside a dual level no hook is installed: recording reads one global."""
    from ember.autograd import graph

    assert graph._FW_HOOK is None
    with fwAD.dual_level():
        assert graph._FW_HOOK is not None
    assert graph._FW_HOOK is None


class _ScaleSin(ember.autograd.Function):
    """Two outputs and a non-tensor input; the jvp reads what ``save_for_forward`` kept."""

    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_forward(x.cos())
        ctx.save_for_backward(x)
        ctx.k = k
        return x * k, x.sin()

    @staticmethod
    def backward(ctx, g1, g2):
        (x,) = ctx.saved_tensors
        return g1 * ctx.k + g2 * x.cos(), None

    @staticmethod
    def jvp(ctx, tx, tk):
        assert tk is None  # the non-tensor input's place
        (cos_x,) = ctx.saved_tensors  # save_for_forward's, as in PyTorch
        return tx * ctx.k, tx * cos_x


def test_custom_function_outputs_carry_its_jvp():
    x = ember.tensor([1.0, 2.0], dtype=ember.float64)
    v = ember.tensor([1.0, 0.5], dtype=ember.float64)
    with fwAD.dual_level():
        a, b = _ScaleSin.apply(fwAD.make_dual(x, v), 3.0)
        np.testing.assert_allclose(fwAD.unpack_dual(a).tangent.numpy(), [3.0, 1.5])
        np.testing.assert_allclose(fwAD.unpack_dual(b).tangent.numpy(),
                                   np.array([1.0, 0.5]) * np.cos([1.0, 2.0]))
        # the tangent flows on through ordinary ops
        np.testing.assert_allclose(fwAD.unpack_dual((a * 2).sum()).tangent.item(), 9.0)
        # without tangents in, the Function runs as always
        assert fwAD.unpack_dual(_ScaleSin.apply(x, 2.0)[0]).tangent is None
    # the same through ember.func.jvp
    out, tangent = ember.func.jvp(lambda t: _ScaleSin.apply(t, 3.0)[1], (x,), (v,))
    np.testing.assert_allclose(tangent.numpy(), np.array([1.0, 0.5]) * np.cos([1.0, 2.0]))


def test_custom_function_jvp_errors_in_pytorchs_words():
    class NoJvp(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Short(_ScaleSin):
        @staticmethod
        def jvp(ctx, tx, tk):
            return tx

    class Wrong(_ScaleSin):
        @staticmethod
        def jvp(ctx, tx, tk):
            return tx, tx[:1]

    x = ember.tensor([1.0, 2.0])
    with fwAD.dual_level():
        d = fwAD.make_dual(x, ember.ones(2))
        with pytest.raises(NotImplementedError, match="You must implement the jvp function "
                                                      "for custom autograd.Function to use it "
                                                      "with forward mode AD."):
            NoJvp.apply(d)
        with pytest.raises(RuntimeError, match=r"Function's jvp returned an invalid number "
                                               r"of forward gradients \(expected 2 but got 1\)"):
            Short.apply(d, 3.0)
        with pytest.raises(RuntimeError, match=r"Tensor is of size \[2\] while the given "
                                               r"forward gradient is of size \[1\]"):
            Wrong.apply(d, 3.0)
        NoJvp.apply(x)  # no tangent in: no jvp needed


# -- under no_grad: tangents as in PyTorch, no backward path -----------------------------------

def _mlp(x, w1, w2):
    h = ember.nn.functional.gelu(x @ w1.t()).tanh()
    return ember.log_softmax(h @ w2.t(), dim=1)


def _mlp_inputs(seed=6):
    rng = np.random.default_rng(seed)
    return [ember.tensor(rng.standard_normal(s)) for s in ((5, 3), (4, 3), (2, 4), (5, 3))]


@pytest.mark.parametrize("block", ["no_grad", "set_grad_enabled", "decorator",
                                   "level_inside"])
def test_no_grad_still_computes_tangents(block):
    """PyTorch's forward AD ignores grad mode: the same tangents as with grad mode on."""
    x, w1, w2, v = _mlp_inputs()
    with fwAD.dual_level():
        expected = fwAD.unpack_dual(_mlp(fwAD.make_dual(x, v), w1, w2)).tangent

    if block == "level_inside":
        with ember.no_grad(), fwAD.dual_level():
            y = _mlp(fwAD.make_dual(x, v), w1, w2)
            got = fwAD.unpack_dual(y).tangent
    else:
        with fwAD.dual_level():
            d = fwAD.make_dual(x, v)
            if block == "no_grad":
                with ember.no_grad():
                    y = _mlp(d, w1, w2)
            elif block == "set_grad_enabled":
                with ember.set_grad_enabled(False):
                    y = _mlp(d, w1, w2)
            else:
                y = ember.no_grad()(_mlp)(d, w1, w2)
            got = fwAD.unpack_dual(y).tangent
    assert got is not None
    np.testing.assert_allclose(_np(got), _np(expected), rtol=1e-12, atol=1e-14)
    assert not ember.overrides._STATE.modes  # the mode left with its block


def test_no_grad_views_in_place_and_several_outputs():
    rng = np.random.default_rng(7)
    x, v = (ember.tensor(rng.standard_normal((3, 4))) for _ in range(2))
    with fwAD.dual_level():
        d = fwAD.make_dual(x, v)
        with ember.no_grad():
            row = d[1]
            a, b = d.split(2, dim=1)
            c = d.clone()
            c.mul_(3)
            s = d.sum(dim=1, keepdim=True)
            vals, idx = d.max(dim=0)
        tg = {k: fwAD.unpack_dual(t).tangent for k, t in
              dict(row=row, b=b, c=c, s=s, vals=vals).items()}
        # grad mode back on: tangents keep flowing from the no_grad results
        after = fwAD.unpack_dual(c * c).tangent
    vn, xn = _np(v), _np(x)
    np.testing.assert_allclose(_np(tg["row"]), vn[1])
    np.testing.assert_allclose(_np(tg["b"]), vn[:, 2:])
    np.testing.assert_allclose(_np(tg["c"]), 3 * vn)
    np.testing.assert_allclose(_np(tg["s"]), vn.sum(1, keepdims=True))
    np.testing.assert_allclose(_np(tg["vals"]), vn[_np(idx), np.arange(4)])
    np.testing.assert_allclose(_np(after), 2 * (3 * xn) * (3 * vn))


def test_no_grad_results_have_no_backward_path():
    """A result computed under no_grad is a constant to backward (PyTorch's has no graph)."""
    x = ember.tensor([1.0, -2.0, 3.0], dtype=ember.float64, requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, ember.ones(3, dtype=ember.float64))
        with ember.no_grad():
            k = d * 2
        assert fwAD.unpack_dual(k).tangent.tolist() == [2.0, 2.0, 2.0]
        (k * d).sum().backward()
    assert x.grad.tolist() == [2.0, -4.0, 6.0]  # k's own dependence on x is not followed


def test_no_grad_in_place_into_a_leaf_is_allowed():
    """An optimizer-style update of a leaf that requires grad works under no_grad inside a
    level, the leaf stays a leaf (Ember keeps no tangent on it: see forward_ad's docs)."""
    w = ember.nn.Parameter(ember.ones(3, dtype=ember.float64))
    opt = ember.optim.SGD([w], lr=0.5, momentum=0.9)
    with fwAD.dual_level():
        d = fwAD.make_dual(ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64))
        loss = ((w - 2) ** 2).sum()
        loss.backward()
        opt.step()
        with ember.no_grad():
            w.add_(d)
            w.copy_(d + 1)
        assert w.is_leaf and w.requires_grad
        assert fwAD.unpack_dual(w).tangent is None
    assert w.tolist() == [1.0, 1.0, 1.0]


def test_no_grad_out_argument_and_inference_mode():
    with fwAD.dual_level():
        d = fwAD.make_dual(_f64(3), ember.ones(3, dtype=ember.float64))
        with ember.no_grad():
            with pytest.raises(NotImplementedError, match="Trying to use forward AD with "
                               "sin_out that does not support it because it is an out= "
                               "function"):
                ember.sin(d, out=ember.empty(3, dtype=ember.float64))
            plain = ember.sin(_f64(3))  # no tangent in: nothing recorded
            assert not plain.requires_grad and plain.grad_fn is None
        with ember.inference_mode():  # PyTorch's inference mode computes no tangents
            assert fwAD.unpack_dual(d * 2).tangent is None


def test_no_grad_mode_leaves_with_the_level_in_any_order():
    level = None
    with ember.no_grad():
        level = fwAD.enter_dual_level()
        assert ember.overrides._STATE.modes
    d = fwAD.make_dual(_f64(2), ember.ones(2, dtype=ember.float64))
    assert fwAD.unpack_dual(d.exp()).tangent is not None
    fwAD.exit_dual_level(level=level)
    assert not ember.overrides._STATE.modes
    with fwAD.dual_level():
        g = ember.no_grad()
        g.__enter__()
    g.__exit__(None, None, None)  # the level (and its mode) already went
    assert not ember.overrides._STATE.modes and ember.is_grad_enabled()


def test_no_grad_tangents_match_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    xs, vs, ws = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), \
        rng.standard_normal((4, 2))

    def run(lib, fw):
        x, v, w = (lib.tensor(a) for a in (xs, vs, ws))
        with fw.dual_level():
            d = fw.make_dual(x, v)
            with lib.no_grad():
                outs = [(d @ w).relu(), d[0].exp(), d.sum(dim=1, keepdim=True),
                        d.split(2, dim=1)[1].sigmoid(), lib.where(d > 0, d, d * d)]
                c = d.clone()
                c.mul_(d)
                outs.append(c)
            outs.append(outs[0] * 2 + outs[1].sum())
            return [np.array(fw.unpack_dual(o).tangent.tolist()) for o in outs]

    for a, b in zip(run(ember, fwAD), run(torch, torch.autograd.forward_ad)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


_TANGENT_FNS = {
    "pow": lambda lib, x, w: x ** 2,
    "sin_scaled": lambda lib, x, w: x.sin() * 3,
    "exp": lambda lib, x, w: x.exp(),
    "matmul": lambda lib, x, w: x.reshape(2, 3) @ w,
    "div": lambda lib, x, w: x / (1 + x * x),
    "sigmoid_mul": lambda lib, x, w: (x.sigmoid() * x * w.sum()).sum(),
    "tanh_chain": lambda lib, x, w: (x * x).tanh().sum(),
}


@pytest.mark.parametrize("name", sorted(_TANGENT_FNS))
@pytest.mark.parametrize("tangent_grad", [False, True])
def test_a_tangent_is_differentiable_with_respect_to_the_primal(name, tangent_grad):
    """PyTorch's tangent ``J(x) v`` depends on the primal ``x`` too: its gradient reaches
    ``x`` (and ``v`` when ``v`` requires grad). Ember's tangents were computed from detached
    copies of the saved values, so the gradient to ``x`` was None (the forward-AD tutorial's
    gradient through ``x ** 2``'s tangent); a primal that does not require grad gives a
    tangent without ``grad_fn``, as in PyTorch."""
    torch = pytest.importorskip("torch")
    import torch.autograd.forward_ad as tfwAD

    rng = np.random.default_rng(0)
    x0, v0, w0 = rng.standard_normal(6), rng.standard_normal(6), rng.standard_normal((3, 2))
    fn = _TANGENT_FNS[name]
    results = []
    for lib, fw in ((ember, fwAD), (torch, tfwAD)):
        x = lib.tensor(x0, requires_grad=True)
        v = lib.tensor(v0, requires_grad=tangent_grad)
        w = lib.tensor(w0)
        with fw.dual_level():
            tangent = fw.unpack_dual(fn(lib, fw.make_dual(x, v), w)).tangent
            wrt = (x, v) if tangent_grad else (x,)
            grads = lib.autograd.grad(tangent.sum(), wrt, allow_unused=True) \
                if tangent.requires_grad else (None,) * len(wrt)
        # (matmul's tangent v @ w does not depend on x: PyTorch's formula still reaches x,
        # with a zero gradient; Ember's none)
        results.append([np.zeros(6) if g is None else g.detach().numpy() for g in grads])
        with fw.dual_level():  # no primal that requires grad: nothing recorded
            plain = fw.unpack_dual(fn(lib, fw.make_dual(x.detach(), v.detach()), w)).tangent
        assert plain.grad_fn is None and not plain.requires_grad
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_a_custom_functions_tangent_records_through_its_saved_output():
    """The tutorial's ``Fn`` (forward saves its output, ``jvp`` multiplies by it): the tangent
    has PyTorch's ``MulBackward0`` when the primal requires grad, none when it does not."""
    class Exp(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            result = ember.exp(x)
            ctx.result = result
            return result

        @staticmethod
        def jvp(ctx, g):
            out = g * ctx.result
            del ctx.result
            return out

    x = ember.randn(4, dtype=ember.float64, requires_grad=True)
    v = ember.randn(4, dtype=ember.float64)
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(Exp.apply(fwAD.make_dual(x, v))).tangent
        assert tangent.grad_fn.name() == "MulBackward0"
        np.testing.assert_allclose(tangent.detach().numpy(), (v * x.exp()).detach().numpy())
        plain = fwAD.unpack_dual(Exp.apply(fwAD.make_dual(x.detach(), v))).tangent
        assert plain.grad_fn is None


def test_a_dual_tensor_prints_its_tangent_as_pytorch():
    with fwAD.dual_level():  # (CPU tensors: a test device's would print it)
        d = fwAD.make_dual(ember.ones(2, device="cpu"), ember.full((2,), 2.0, device="cpu"))
        assert repr(d) == "tensor([1., 1.], tangent=tensor([2., 2.]))"
        assert repr(d * 3) == "tensor([3., 3.], tangent=tensor([6., 6.]))"
        x = ember.ones(2, device="cpu", requires_grad=True)
        d2 = fwAD.make_dual(x, ember.full((2,), 2.0, device="cpu"))
        assert repr(d2) == "tensor([1., 1.], grad_fn=<ViewBackward0>, tangent=tensor([2., 2.]))"
        assert repr(d2.exp()) == (
            "tensor([2.7183, 2.7183], grad_fn=<ExpBackward0>,\n"
            "       tangent=tensor([5.4366, 5.4366], grad_fn=<MulBackward0>))")


# -- explicit tangent rules and func.jvp in forward mode ---------------------------------------

def _tangent_with_and_without_rules(fn, primals, tangents):
    from ember.autograd import _forward_rules as rules

    def run():
        with fwAD.dual_level():
            duals = [fwAD.make_dual(p, t) for p, t in zip(primals, tangents)]
            return fwAD.unpack_dual(fn(*duals)).tangent

    with_rules = run()
    saved = dict(rules._rules())
    rules._RULES.clear()
    rules._RULES[None] = None  # (non-empty: the rules stay off)
    try:
        without = run()
    finally:
        rules._RULES.clear()
        rules._RULES.update(saved)
    return with_rules, without


@pytest.mark.parametrize("case", ["mm", "matmul_batched", "mv", "linear", "linear_nobias",
                                  "sum_dim", "mean_all", "softmax", "log_softmax"])
def test_explicit_rules_equal_the_double_vjp_trick(case):
    """The hot non-elementwise ops' tangent rules give what the generic double-vjp rule
    gives (which test_jvp_matches_vjp checks against reverse mode for every op)."""
    import ember.nn.functional as F
    from ember.autograd import _forward_rules as rules

    rng = np.random.default_rng(5)

    def t(*shape):
        return ember.tensor(rng.standard_normal(shape))

    fn, primals = {
        "mm": (lambda a, b: a @ b, (t(3, 4), t(4, 5))),
        "matmul_batched": (ember.matmul, (t(2, 3, 4), t(4, 2))),
        "mv": (ember.mv, (t(3, 4), t(4))),
        "linear": (F.linear, (t(6, 4), t(3, 4), t(3))),
        "linear_nobias": (lambda x, w: F.linear(x, w), (t(2, 5, 4), t(3, 4))),
        "sum_dim": (lambda x: x.sum(1, keepdim=True), (t(3, 4, 2),)),
        "mean_all": (lambda x: x.mean(), (t(3, 4),)),
        "softmax": (lambda x: x.softmax(-1), (t(3, 4),)),
        "log_softmax": (lambda x: F.log_softmax(x, 0), (t(3, 4),)),
    }[case]
    tangents = [t(*p.shape) for p in primals]
    rules._rules()
    with_rules, without = _tangent_with_and_without_rules(fn, primals, tangents)
    np.testing.assert_allclose(_np(with_rules), _np(without), rtol=1e-12, atol=1e-14)


def test_func_jvp_runs_forward_mode_at_the_top_level():
    """ember.func.jvp is one forward pass with dual tensors (PyTorch's way) where nothing
    wraps it, with the double-vjp results; a custom Function without a jvp still works (by
    the double-vjp trick), and under vmap the batched trick runs."""
    from ember._functorch import eager_transforms as et

    calls = []
    real = et._Linearized
    et._Linearized = lambda *a, **k: calls.append(1) or real(*a, **k)
    try:
        x, v = ember.tensor([0.5, -1.0, 2.0]), ember.tensor([1.0, 2.0, 3.0])
        out, jv = ember.func.jvp(lambda a: (a.sin() * a.sum(), a.exp()), (x,), (v,))
        assert not calls

        class Sq(ember.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                ctx.save_for_backward(a)
                return a * a

            @staticmethod
            def backward(ctx, g):
                (a,) = ctx.saved_tensors
                return 2 * a * g

        _, jsq = ember.func.jvp(Sq.apply, (x,), (v,))
        assert calls  # the fallback
        batched = ember.func.vmap(lambda t: ember.func.jvp(ember.sin, (x,), (t,))[1])(
            ember.eye(3, dtype=ember.float64))
    finally:
        et._Linearized = real
    xn, vn = _np(x), _np(v)
    np.testing.assert_allclose(_np(jv[0]), np.cos(xn) * vn * xn.sum() + np.sin(xn) * vn.sum())
    np.testing.assert_allclose(_np(jv[1]), np.exp(xn) * vn)
    np.testing.assert_allclose(_np(out[1]), np.exp(xn))
    np.testing.assert_allclose(_np(jsq), 2 * xn * vn)
    np.testing.assert_allclose(_np(batched), np.diag(np.cos(xn)), atol=1e-15)
    assert not jv[0].requires_grad and not out[0].requires_grad
