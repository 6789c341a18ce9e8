"""Generic op tests: every op of the registry with an ``ember.ops.opdb`` entry runs through
forward against its NumPy reference and against PyTorch, float64 gradcheck and gradgradcheck
where it differentiates, its in-place and ``out=`` variants, the NumPy-backed test device
and the strict device (arrays that refuse NumPy, as CuPy's do). PyTorch's
``test_ops.py`` is the model.

``test_every_op_has_samples`` keeps the list of ops still without samples honest:
``uncovered.py`` names them, and the test fails on an op missing from both, or on a stale
name there.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.ops.opdb import load_all
from ember.ops.registry import OPS
from ember.testing import register_strict_device, register_test_device

ENTRIES = load_all()


def _uncovered() -> set:
    import importlib.util
    import pathlib

    spec = importlib.util.spec_from_file_location(
        "ops_uncovered", pathlib.Path(__file__).with_name("uncovered.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return set(mod.UNCOVERED)


OPNAMES = sorted(n for n in ENTRIES if n in OPS)


@pytest.fixture(scope="module", autouse=True)
def _devices():
    register_test_device("testdev")
    register_strict_device("strict")


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _host(x):
    if isinstance(x, ember.Tensor):
        return x.detach().cpu().numpy()
    if isinstance(x, (tuple, list)):
        return type(x)(_host(v) for v in x)
    return x


def _compare_numpy(got, expected, e, what):
    if isinstance(got, (tuple, list)):
        assert len(got) == len(expected), f"{what}: {len(got)} results, expected {len(expected)}"
        for i, (g, x) in enumerate(zip(got, expected)):
            _compare_numpy(g, x, e, f"{what}[{i}]")
    else:
        _close(_host(got), expected, e, what)


def _outputs(e, out):
    """The tensor outputs of a result (tuples flattened), for comparison."""
    if isinstance(out, ember.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [o for o in out if isinstance(o, ember.Tensor)]
    return []


def _close(actual, expected, e, what):
    a, x = np.asarray(actual), np.asarray(expected)
    assert a.shape == x.shape, f"{what}: shape {a.shape} != {x.shape}"
    if a.dtype.kind in "biu" or x.dtype.kind in "biu":
        np.testing.assert_array_equal(a, x, err_msg=what)
    else:
        # torch.testing's defaults per dtype, or the entry's own when it is looser
        rtol, atol = {np.float16: (1e-3, 1e-5), np.float32: (1.3e-6, 1e-5)}.get(
            a.dtype.type, (e.rtol, e.atol))
        np.testing.assert_allclose(a, x, rtol=max(rtol, e.rtol), atol=max(atol, e.atol),
                                   equal_nan=True, err_msg=what)


def _cases(kind):
    out = []
    for name in OPNAMES:
        e = ENTRIES[name]
        if kind in e.skip:
            continue
        out.append(pytest.param(name, id=name))
    return out


def _dtype_cases(kind):
    out = []
    for name in OPNAMES:
        e = ENTRIES[name]
        if kind in e.skip:
            continue
        for dt in e.dtypes:
            out.append(pytest.param(name, dt, id=f"{name}-{dt}"))
    return out


# -- forward ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name,dtype", [c for c in _dtype_cases("ref")
                                        if ENTRIES[c.values[0]].ref is not None])
def test_forward_matches_numpy(name, dtype):
    e, op = ENTRIES[name], _seeded(name, OPS[name].fn)
    for s in e.samples("cpu", dtype):
        expected = s.map_tensors(lambda t: t.numpy()).call(e.ref)
        got = s.call(op)
        _compare_numpy(got, expected, e, f"{name} {s}")


def _to_torch_args(torch, x):
    """Sample arguments as PyTorch takes them: tensors, dtypes, memory formats, devices."""
    if isinstance(x, ember.Tensor):
        return torch.from_numpy(np.array(x.numpy()))
    if isinstance(x, ember.dtype):
        return getattr(torch, x.name)
    if isinstance(x, ember.memory_format):
        return getattr(torch, repr(x).split(".")[-1])
    if isinstance(x, ember.device):
        return torch.device(x.type if x.type == "cpu" else "cpu")
    if type(x) in (list, tuple):
        return type(x)(_to_torch_args(torch, v) for v in x)
    if type(x) is dict:
        return {k: _to_torch_args(torch, v) for k, v in x.items()}
    return x


def _compare_torch(torch, got, expected, e, what):
    """``got`` (Ember's result) against PyTorch's: same structure, dtypes and values."""
    if isinstance(expected, torch.Tensor):
        assert isinstance(got, ember.Tensor), f"{what}: got {type(got).__name__}, not a tensor"
        assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1], \
            f"{what}: dtype {got.dtype} != torch's {expected.dtype}"
        _close(_host(got), expected.numpy(), e, f"{what} vs torch")
    elif isinstance(expected, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(expected), \
            f"{what}: {got!r:.80} has not torch's structure ({len(expected)} items)"
        for i, (g, x) in enumerate(zip(got, expected)):
            _compare_torch(torch, g, x, e, f"{what}[{i}]")
    elif isinstance(expected, (bool, int, float)):
        g = got.item() if isinstance(got, ember.Tensor) else got
        assert type(g) is type(expected), f"{what}: {type(g).__name__} != torch's " \
                                          f"{type(expected).__name__}"
        _close(g, expected, e, f"{what} vs torch")


@pytest.mark.parity
@pytest.mark.parametrize("name,dtype", [c for c in _dtype_cases("torch")
                                        if ENTRIES[c.values[0]].torch is not None])
def test_forward_matches_torch(name, dtype):
    torch = _torch()
    if torch is None:
        pytest.skip("PyTorch (the test oracle) is not installed")
    e, op = ENTRIES[name], _seeded(name, OPS[name].fn)
    tfn = _torch_fn(torch, e.torch or name)
    for s in e.samples("cpu", dtype):
        expected = tfn(*_to_torch_args(torch, (s.input, *s.args)),
                       **_to_torch_args(torch, s.kwargs))
        got = s.call(op)
        _compare_torch(torch, got, expected, e, f"{name} {s}")


def _torch_fn(torch, name):
    """``name`` in PyTorch: a dotted path under ``torch`` (``nn.functional.gelu``), else
    ``torch.<name>``, ``torch.nn.functional.<name>``, ``torch.Tensor.<name>``."""
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


# -- autograd --------------------------------------------------------------------------------

def _seeded(name, op):
    """``op``, re-seeded before each call when the registry says it draws (PyTorch's
    ``wrapper_set_seed``): finite differences and device runs then see the same draws."""
    if not OPS[name].random:
        return op

    def run(*args, **kwargs):
        with ember.random.fork_rng() if hasattr(ember, "random") and hasattr(
                ember.random, "fork_rng") else _nullcontext():
            ember.manual_seed(0)
            return op(*args, **kwargs)

    return run


def _nullcontext():
    import contextlib

    return contextlib.nullcontext()


def _grad_fn(e, s, op):
    """``f(*leaves)`` re-running sample ``s`` with its grad-requiring tensors replaced."""
    new_leaves = ()
    # float64 (and complex128) leaves only: finite differences in float32 are too coarse
    leaves = [t for t in s.tensors()
              if t.requires_grad and t.dtype in (ember.float64, ember.complex128)]
    index = {id(t): i for i, t in enumerate(leaves)}

    def sub(t):
        if id(t) in index:
            return new_leaves[index[id(t)]]
        return t.detach() if t.requires_grad else t

    def f(*new):
        nonlocal new_leaves
        new_leaves = new
        r = s.map_tensors(sub).call(op)
        if e.output is not None:
            return e.output(r)
        if isinstance(r, (tuple, list)):
            return tuple(o for o in r if isinstance(o, ember.Tensor) and o.requires_grad)
        return r

    return f, tuple(leaves)


def _differentiable_cases(kind):
    return [c for c in _cases(kind) if OPS[c.values[0]].differentiable]


@pytest.mark.parametrize("name", _differentiable_cases("gradcheck"))
def test_gradcheck(name):
    e, op = ENTRIES[name], _seeded(name, OPS[name].fn)
    checked = 0
    for s in e.samples("cpu", "float64", requires_grad=True):
        f, leaves = _grad_fn(e, s, op)
        if not leaves or any(t.numel() == 0 for t in leaves):
            continue
        assert gradcheck(f, leaves, atol=e.grad_atol, rtol=e.grad_rtol), f"{name} {s}"
        checked += 1
    assert checked, f"{name}: no sample with a differentiable float64 input"


@pytest.mark.parametrize("name", _differentiable_cases("gradgradcheck"))
def test_gradgradcheck(name):
    e, op = ENTRIES[name], _seeded(name, OPS[name].fn)
    for s in e.samples("cpu", "float64", requires_grad=True):
        f, leaves = _grad_fn(e, s, op)
        if not leaves or any(t.numel() == 0 for t in leaves):
            continue
        assert gradgradcheck(f, leaves, atol=e.grad_atol, rtol=e.grad_rtol), f"{name} {s}"


@pytest.mark.parametrize("name", [c for c in _cases("gradcheck")
                                  if not OPS[c.values[0]].differentiable])
def test_non_differentiable_results_do_not_require_grad(name):
    e, op = ENTRIES[name], _seeded(name, OPS[name].fn)
    for dt in e.dtypes:
        if dt not in ("float32", "float64"):
            continue
        for s in e.samples("cpu", dt, requires_grad=True):
            for o in _outputs(e, s.call(op)):
                assert not o.requires_grad, f"{name} {s}: the registry says it does not " \
                                            "differentiate, but its result requires grad"


# -- variants --------------------------------------------------------------------------------

@pytest.mark.parametrize("name,dtype", [c for c in _dtype_cases("inplace")
                                        if OPS[c.values[0]].inplace is not None])
def test_inplace_variant_matches(name, dtype):
    e, info = ENTRIES[name], OPS[name]
    for s in e.samples("cpu", dtype):
        if s.input.numel() == 0:
            continue
        expected = s.call(info.fn)
        if not isinstance(expected, ember.Tensor) or expected.dtype != s.input.dtype or \
                tuple(expected.shape) != tuple(s.input.shape):
            continue  # in place needs the result to fit the input
        target = s.input.clone()
        s2 = s.map_tensors(lambda t, tg=target, inp=s.input: tg if t is inp else t)
        r = s2.call(info.inplace)
        assert r is target, f"{name}_ must return self"
        _close(target.numpy(), expected.numpy(), e, f"{name}_ {s}")


@pytest.mark.parametrize("name,dtype", [c for c in _dtype_cases("out")
                                        if OPS[c.values[0]].supports_out])
def test_out_variant_matches(name, dtype):
    e, info = ENTRIES[name], OPS[name]
    for s in e.samples("cpu", dtype):
        expected = s.call(info.fn)
        if not isinstance(expected, ember.Tensor):
            continue
        out = ember.empty(0, dtype=expected.dtype, device=expected.device)  # the samples'
        r = info.fn(s.input, *s.args, out=out, **s.kwargs)
        assert r is out
        _close(out.numpy(), expected.numpy(), e, f"{name}(out=) {s}")


# -- devices ---------------------------------------------------------------------------------

def _on_device(name, dtype, device):
    e, op = ENTRIES[name], _seeded(name, OPS[name].fn)
    for s in e.samples("cpu", dtype):
        expected = s.call(op)
        moved = s.map_tensors(lambda t: t.to(device))
        got = moved.call(op)
        outs, exp = _outputs(e, got), _outputs(e, expected)
        assert len(outs) == len(exp)
        for g, x in zip(outs, exp):
            assert g.device == ember.device(device), f"{name} {s}: result on {g.device}"
            assert g.dtype == x.dtype
            _close(g.cpu().numpy(), x.numpy(), e, f"{name} on {device} {s}")


@pytest.mark.parametrize("name,dtype", _dtype_cases("testdev"))
def test_on_test_device(name, dtype):
    _on_device(name, dtype, "testdev:0")


@pytest.mark.parametrize("name,dtype", _dtype_cases("strict"))
def test_on_strict_device(name, dtype):
    _on_device(name, dtype, "strict:0")


@pytest.mark.parametrize("name", [c for c in _differentiable_cases("strict")])
def test_backward_on_strict_device(name):
    e, op = ENTRIES[name], _seeded(name, OPS[name].fn)
    for s in e.samples("cpu", "float64", requires_grad=True):
        f, leaves = _grad_fn(e, s, op)
        if not leaves:
            continue
        outs = f(*leaves)
        outs = [o for o in (outs if isinstance(outs, tuple) else (outs,)) if o.requires_grad]
        if not outs:
            continue
        expected = ember.autograd.grad([o.sum() for o in outs], leaves, allow_unused=True)
        moved = {id(t): t.detach().to("strict:0").requires_grad_(True) for t in leaves}
        s_dev = s.map_tensors(lambda t, mv=moved: mv[id(t)] if id(t) in mv
                              else t.detach().to("strict:0"))
        f_dev, dev_leaves = _grad_fn(e, s_dev, op)
        outs = f_dev(*dev_leaves)
        outs = [o for o in (outs if isinstance(outs, tuple) else (outs,)) if o.requires_grad]
        grads = ember.autograd.grad([o.sum() for o in outs], dev_leaves, allow_unused=True)
        for g, x in zip(grads, expected):
            if x is None:
                continue
            assert g.device == ember.device("strict:0")
            _close(g.cpu().numpy(), x.numpy(), e, f"{name} backward on strict {s}")


# -- coverage --------------------------------------------------------------------------------

def test_every_op_has_samples():
    UNCOVERED = _uncovered()
    missing = sorted(n for n in OPS if n not in ENTRIES and n not in UNCOVERED)
    stale = sorted(n for n in UNCOVERED if n in ENTRIES or n not in OPS)
    assert not missing, f"ops without samples in ember.ops.opdb: {missing}"
    assert not stale, f"names to delete from tests/ops/uncovered.py: {stale}"


def test_every_differentiable_op_is_gradchecked():
    """Every registered op that differentiates has a gradcheck (unless it still waits in
    uncovered.py, with all the others)."""
    UNCOVERED = _uncovered()
    skipped = {n: ENTRIES[n].skip["gradcheck"] for n in OPNAMES
               if OPS[n].differentiable and "gradcheck" in ENTRIES[n].skip}
    assert not skipped, f"differentiable ops whose gradcheck is skipped: {skipped}"
    unchecked = [n for n in OPS if OPS[n].differentiable and n not in ENTRIES
                 and n not in UNCOVERED]
    assert not unchecked
