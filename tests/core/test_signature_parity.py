"""Ember's public functions take the parameters PyTorch's take, and ``out=`` behaves as there.

``tools/signature_audit.py`` compares every public function of ``torch``, ``torch.nn.functional``,
``torch.linalg``, ``torch.fft``, ``torch.special`` and the ``torch.Tensor`` methods with Ember's
function of the same path (PyTorch as the oracle: skipped without it). Every gap it reports must
have a reason in ``ALLOWLIST`` below, and every entry there must still be a gap. Entries that
say "not yet" are work left to do, not differences Ember means to keep.

The ``out=`` tests run a sample of the ops given ``out=`` through ``register(out=...)`` against
PyTorch: the values, the returned tensor, the resize of an empty ``out`` (silent) and of one of
another shape (PyTorch's warning), the dtype rules and the refusal of autograd through ``out=``.
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from testutils import assert_same_error, to_numpy, to_torch

import ember
import ember.nn.functional  # the namespace the audit compares
from ember.ops.registry import METHODS, OPS

TOOLS = Path(__file__).resolve().parents[2] / "tools"

_DUNDER = "a dunder: Python calls it positionally, never by keyword"
_SECTIONS = ("PyTorch's docs name it indices_or_sections (Ember's name), but its binding takes "
             "sections= or indices=; a keyword call works in neither library's documented form")
_TO_KWARGS = "Tensor.to parses its overloads from *args/**kwargs (ember/_tensor.py), device= " \
             "and the other keywords included"

#: ``"<PyTorch path>:<parameter>"`` -> why Ember's differs
ALLOWLIST: dict[str, str] = {
    **{k: _DUNDER for k in (
        "torch.Tensor.__format__:format_spec", "torch.Tensor.__getitem__:idx",
        "torch.Tensor.__getitem__:list", "torch.Tensor.__matmul__:other",
        "torch.Tensor.__reduce_ex__:proto", "torch.Tensor.__repr__:tensor_contents",
        "torch.Tensor.__rmatmul__:other", "torch.Tensor.__setitem__:k",
        "torch.Tensor.__setitem__:v")},
    **{f"torch.Tensor.{n}:x2": _DUNDER
       for n in ("__and__", "__lshift__", "__or__", "__rshift__", "__xor__")},
    "torch.Tensor.size:axis": ("left plain for speed (ops/registry.py _PLAIN_METHODS): x.size(0) "
                               "runs in every forward pass, and PyTorch code never spells it "
                               "x.size(axis=0)"),
    **{f"{n}:sections": _SECTIONS
       for n in ("torch.dsplit", "torch.hsplit", "torch.vsplit", "torch.tensor_split",
                 "torch.Tensor.dsplit", "torch.Tensor.hsplit", "torch.Tensor.vsplit",
                 "torch.Tensor.tensor_split")},
    **{f"torch.Tensor.to:{n}": _TO_KWARGS
       for n in ("copy", "device", "layout", "non_blocking", "pin_memory")},
    "torch.Tensor.expand:implicit": "implicit= is TorchScript's internal flag",
    "torch.Tensor.type:non_blocking": "Tensor.type(dtype, non_blocking): PyTorch's overload "
                                      "without dtype is the type-name query",
    "torch.nn.functional.max_pool3d:ceil_mode": "PyTorch's override lambda has return_indices "
                                                "before ceil_mode; F.max_pool3d itself takes "
                                                "ceil_mode 6th, as Ember",
    "torch.nn.functional.max_pool3d:return_indices": "as max_pool3d:ceil_mode",
}


def _load_audit():
    spec = importlib.util.spec_from_file_location("signature_audit",
                                                  TOOLS / "signature_audit.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


@pytest.fixture(scope="module")
def gaps(torch):
    found, compared = _load_audit().audit()
    assert compared > 1000  # the audit reached the namespaces
    return found


#: why a registry op's function or method may refuse the NumPy names of ``input``/``other``
_PLAIN_OP = ("a registry op without dim/keepdim and out= stays its plain kernel, for speed "
             "(a front costs ~0.1 us a call; ember._front.front(hot=True)): PyTorch binds "
             "x=/a=/x1=/x2= there, which no real program spells")


def _plain_op_gap(gap) -> bool:
    """A gap ``_PLAIN_OP`` explains: the NumPy name of input/other on a registry op (or a
    Tensor method) that is its kernel, not a front."""
    from ember._front import NUMPY_ALIASES

    if gap.param not in NUMPY_ALIASES["input"] + NUMPY_ALIASES["other"]:
        return False
    ns, _, name = gap.name.rpartition(".")
    obj = getattr(ember.Tensor if ns == "torch.Tensor" else ember, name, None) \
        if ns in ("torch", "torch.Tensor") else None
    if obj is None and ns == "torch.nn.functional":
        obj = getattr(ember.nn.functional, name, None)
    kernels = {id(i.kernel) for i in OPS.values()} | {id(f) for f in METHODS.values()}
    obj = getattr(obj, "_ember_original", obj)  # Tensor.add is its own copy of ember.add
    return obj is not None and id(obj) in kernels and not hasattr(obj, "_ember_front")


def test_every_gap_has_a_reason(gaps):
    unlisted = sorted(f"{g.key} ({g.kind}: {g.detail})" for g in gaps
                      if g.key not in ALLOWLIST and not _plain_op_gap(g))
    assert not unlisted, "parameters PyTorch takes that Ember refuses:\n" + "\n".join(unlisted)


def test_every_reason_names_a_gap(gaps):
    stale = sorted(set(ALLOWLIST) - {g.key for g in gaps})
    assert not stale, "allowlisted but no longer a gap (remove them): " + ", ".join(stale)


def test_no_out_gaps_outside_the_allowlist(gaps):
    """The issue that started the audit: every out= PyTorch binds, Ember's function takes."""
    outs = sorted(g.key for g in gaps if g.param == "out" and g.key not in ALLOWLIST)
    assert outs == []
    assert "torch.addmm:out" not in {g.key for g in gaps}


def test_audit_sees_a_known_gap(torch):
    """The audit fails where it should: a function without PyTorch's out= and with another
    name for a positional parameter."""
    audit = _load_audit()

    def addmm(x, mat1, mat2, *, beta=1, alpha=1):
        raise AssertionError("never called")

    found = {(g.param, g.kind) for g in audit.audit_one(
        "torch.addmm", torch.addmm, torch.overrides.get_testing_overrides()[torch.addmm], addmm)}
    assert ("out", "rejects") in found and ("input", "rejects") in found

    def exp(input, **kwargs):
        return input

    found = {(g.param, g.kind) for g in audit.audit_one(
        "torch.exp", torch.exp, torch.overrides.get_testing_overrides()[torch.exp], exp)}
    # **kwargs that never names out=, nor the argument parser's NumPy names of input
    assert found == {("out", "kwargs"), ("x", "kwargs"), ("a", "kwargs"), ("x1", "kwargs")}


# -- out= against PyTorch -----------------------------------------------------------------------

_RNG = np.random.default_rng(0)
_A = _RNG.standard_normal((3, 4))
_B = _RNG.standard_normal((4, 5))
_V = _RNG.standard_normal(5)
_POS = np.abs(_A) + 1.5

#: name -> builder of the positional arguments from a library (ember or torch)
OUT_CASES = {
    "addmm": lambda L: (L.tensor(_V), L.tensor(_A), L.tensor(_B)),
    "mm": lambda L: (L.tensor(_A), L.tensor(_B)),
    "matmul": lambda L: (L.tensor(_A), L.tensor(_B)),
    "bmm": lambda L: (L.tensor(_A)[None], L.tensor(_B)[None]),
    "mv": lambda L: (L.tensor(_A), L.tensor(_B[:, 0].copy())),
    "cat": lambda L: ([L.tensor(_A), L.tensor(_A)], 1),
    "sum": lambda L: (L.tensor(_A), 1),
    "mean": lambda L: (L.tensor(_A), 0),
    "prod": lambda L: (L.tensor(_A), 1),
    "cumsum": lambda L: (L.tensor(_A), 1),
    "clamp": lambda L: (L.tensor(_A), -0.5, 0.5),
    "where": lambda L: (L.tensor(_A) > 0, L.tensor(_A), L.tensor(_A) * 2),
    "exp": lambda L: (L.tensor(_A),),
    "mul": lambda L: (L.tensor(_A), L.tensor(_A)),
    "pow": lambda L: (L.tensor(_A), 2),
    "neg": lambda L: (L.tensor(_A),),
    "tril": lambda L: (L.tensor(_A),),
    "softmax": lambda L: (L.tensor(_A), 1),
    "index_select": lambda L: (L.tensor(_A), 1, L.tensor([0, 2])),
    "index_add": lambda L: (L.tensor(_A), 1, L.tensor([0, 2]), L.tensor(_A[:, :2].copy())),
    "gather": lambda L: (L.tensor(_A), 1, L.tensor([[0], [1], [3]])),
    "argmax": lambda L: (L.tensor(_A), 1),
    "logsumexp": lambda L: (L.tensor(_A), 1),
    "outer": lambda L: (L.tensor(_V), L.tensor(_V)),
    "special.zeta": lambda L: (L.tensor(_POS), L.tensor(_POS - 0.5)),
    "special.erfcx": lambda L: (L.tensor(_A),),
    "nn.functional.gelu": lambda L: (L.tensor(_A),),
    "linalg.matmul": lambda L: (L.tensor(_A), L.tensor(_B)),
}
#: the ops whose PyTorch error for a float result in an int64 out Ember words the same
#: (the others have kernel-specific messages: "Found dtype Long but expected Double", ...)
SAME_DTYPE_ERROR = ("addmm", "mm", "matmul", "bmm", "mv", "exp", "mul", "pow", "tril",
                    "index_add", "gather", "outer", "special.zeta", "special.erfcx",
                    "linalg.matmul")
#: the ops where PyTorch casts any result into the out's dtype (it computes in that dtype)
ANY_DTYPE = ("sum", "prod", "cumsum")


def _fn(lib, name):
    obj = lib
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _both(torch, name):
    return (_fn(ember, name), OUT_CASES[name](ember)), (_fn(torch, name), OUT_CASES[name](torch))


@pytest.mark.parametrize("name", sorted(OUT_CASES))
def test_out_values_and_resize_as_pytorch(name, torch):
    (ef, ea), (tf, ta) = _both(torch, name)
    want = tf(*ta)
    out = ember.empty(0, dtype=ember.float64 if want.is_floating_point() else ember.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an empty out is resized silently
        got = ef(*ea, out=out)
    assert got is out
    np.testing.assert_allclose(to_numpy(out), want.numpy(), rtol=1e-12, atol=1e-12)
    # an out of the right shape keeps its memory
    again = ember.empty(tuple(want.shape), dtype=out.dtype)
    data = again._data
    ef(*ea, out=again)
    assert again._data is data
    np.testing.assert_allclose(to_numpy(again), want.numpy(), rtol=1e-12, atol=1e-12)
    # a non-empty out of another shape is resized with PyTorch's warning
    with pytest.warns(UserWarning) as mine:
        ef(*ea, out=ember.zeros(7, dtype=out.dtype))
    with pytest.warns(UserWarning) as theirs:
        tf(*ta, out=torch.zeros(7, dtype=want.dtype))
    assert str(theirs[0].message).startswith(str(mine[0].message))


#: argmax: no gradient; outer: PyTorch's is composite, its error names mul(); softmax:
#: PyTorch's out= path of torch.softmax records no graph and refuses nothing (Ember refuses)
@pytest.mark.parametrize("name", sorted(n for n in OUT_CASES
                                        if n not in ("argmax", "outer", "softmax")))
def test_out_refuses_autograd_as_pytorch(name, torch):
    (ef, ea), (tf, ta) = _both(torch, name)

    def grad(args, lib):
        return [a.detach().requires_grad_() if isinstance(a, lib.Tensor)
                and a.is_floating_point() else a for a in args]

    if name == "cat":
        ea, ta = ([grad(ea[0], ember), ea[1]], [grad(ta[0], torch), ta[1]])
    else:
        ea, ta = grad(ea, ember), grad(ta, torch)
    assert_same_error(lambda: ef(*ea, out=ember.empty(0, dtype=ember.float64)),
                      lambda: tf(*ta, out=torch.empty(0, dtype=torch.float64)))
    # and an out that requires grad is refused as well
    (ef, ea), (tf, ta) = _both(torch, name)
    assert_same_error(lambda: ef(*ea, out=ember.empty(0, dtype=ember.float64,
                                                      requires_grad=True)),
                      lambda: tf(*ta, out=torch.empty(0, dtype=torch.float64,
                                                      requires_grad=True)))
    # under no_grad the inputs may require grad; the out then has no history
    (ef, ea), _ = _both(torch, name)
    ea = [grad(ea[0], ember), ea[1]] if name == "cat" else grad(ea, ember)
    with ember.no_grad():
        out = ef(*ea, out=ember.empty(0, dtype=ember.float64))
    assert not out.requires_grad and out.grad_fn is None


@pytest.mark.parametrize("name", SAME_DTYPE_ERROR)
def test_out_dtype_errors_are_pytorchs(name, torch):
    (ef, ea), (tf, ta) = _both(torch, name)
    assert_same_error(lambda: ef(*ea, out=ember.empty(0, dtype=ember.int64)),
                      lambda: tf(*ta, out=torch.empty(0, dtype=torch.int64)))


#: (PyTorch's clamp, where, neg, abs, round, tril, mm, ... want the result's dtype exactly;
#: Ember casts into a wider out there too)
@pytest.mark.parametrize("name", ("exp", "mul", "pow", "outer", "special.zeta"))
def test_out_of_a_wider_dtype_is_cast_into(name, torch):
    (ef, ea), (tf, ta) = _both(torch, name)
    ea = [a.float() if isinstance(a, ember.Tensor) and a.is_floating_point() else a for a in ea]
    ta = [a.float() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in ta]
    out = ef(*ea, out=ember.empty(0, dtype=ember.float64))
    want = tf(*ta, out=torch.empty(0, dtype=torch.float64))
    assert out.dtype == ember.float64
    np.testing.assert_allclose(to_numpy(out), want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", ANY_DTYPE)
def test_reductions_cast_into_any_out_dtype(name, torch):
    (ef, ea), (tf, ta) = _both(torch, name)
    ea = [ember.tensor(np.arange(12.0).reshape(3, 4)), ea[1]]
    ta = [torch.tensor(np.arange(12.0).reshape(3, 4)), ta[1]]
    out = ef(*ea, out=ember.empty(0, dtype=ember.int64))
    want = tf(*ta, out=torch.empty(0, dtype=torch.int64))
    assert out.dtype == ember.int64
    np.testing.assert_array_equal(to_numpy(out), want.numpy())


def test_tuple_out_of_max_with_dim(torch):
    x = ember.tensor(_A)
    vals, idx = ember.empty(0, dtype=ember.float64), ember.empty(0, dtype=ember.int64)
    res = ember.max(x, 1, out=(vals, idx))
    want = torch.max(to_torch(x), 1)
    assert res.values is vals and res.indices is idx
    np.testing.assert_array_equal(to_numpy(vals), want.values.numpy())
    np.testing.assert_array_equal(to_numpy(idx), want.indices.numpy())


def test_muons_addmm_call(torch):
    """timm's Muon: ``torch.addmm(b, x, w, out=buf)`` into a preallocated buffer."""
    b, x, w = (ember.tensor(_RNG.standard_normal(s), dtype=ember.float32)
               for s in ((4, 4), (4, 3), (3, 4)))
    buf = ember.empty(4, 4)
    assert ember.addmm(b, x, w, beta=0.5, alpha=2.0, out=buf) is buf
    want = torch.addmm(to_torch(b), to_torch(x), to_torch(w), beta=0.5, alpha=2.0)
    np.testing.assert_allclose(to_numpy(buf), want.numpy(), rtol=1e-6, atol=1e-6)


def test_methods_take_no_out_as_in_pytorch(torch):
    a, b = ember.tensor(_A), ember.tensor(_B)
    assert_same_error(lambda: a.mm(b, out=ember.empty(0, dtype=ember.float64)),
                      lambda: to_torch(a).mm(to_torch(b), out=torch.empty(0)))


def test_out_takes_the_signature():
    """The public function's signature shows ``out`` (stubs, help() and the audit read it)."""
    import inspect

    for fn in (ember.addmm, ember.sum, ember.exp, ember.nn.functional.gelu, ember.special.zeta,
               ember.linalg.matmul, ember.index_add):
        p = inspect.signature(fn).parameters["out"]
        assert p.kind is p.KEYWORD_ONLY and p.default is None
    assert "out" not in inspect.signature(ember.Tensor.addmm).parameters


def test_keyword_names_are_pytorchs(torch):
    """The parameters renamed to PyTorch's binding names take keyword calls as there."""
    a = _RNG.standard_normal((3, 3))
    spd = a @ a.T + 3 * np.eye(3)
    rhs = _RNG.standard_normal((3, 2))
    calls = [
        lambda L: L.linalg.cholesky(input=L.tensor(spd)),
        lambda L: L.linalg.vector_norm(input=L.tensor(a), ord=3),
        lambda L: L.linalg.matrix_norm(input=L.tensor(a)),
        lambda L: L.linalg.lstsq(input=L.tensor(spd), b=L.tensor(rhs)).solution,
        lambda L: L.linalg.pinv(input=L.tensor(a)),
        lambda L: L.linalg.eigvalsh(input=L.tensor(spd)),
        lambda L: L.linalg.matrix_power(input=L.tensor(a), n=2),
        lambda L: L.nn.functional.one_hot(input=L.tensor([0, 2]), num_classes=3),
        lambda L: L.tensor(a).where(L.tensor(a) > 0, other=L.tensor(a) * 0),
        lambda L: L.unsafe_split(input=L.tensor(a), split_size=2)[1],
    ]
    for call in calls:
        np.testing.assert_allclose(to_numpy(call(ember)), call(torch).numpy(), rtol=1e-10,
                                   atol=1e-10)


def test_poisson_out_and_the_like_factories_pin_memory():
    """Two gaps the audit listed: ``torch.poisson(..., out=)`` and ``pin_memory=`` on the
    ``*_like`` factories (accepted as by ``ember.zeros``: NumPy memory is never pinned)."""
    rates = ember.full((3, 2), 4.0, dtype=ember.float64)
    buf = ember.empty(0, dtype=ember.float64)
    ember.manual_seed(0)
    assert ember.poisson(rates, out=buf) is buf
    assert buf.shape == (3, 2) and bool((buf >= 0).all())
    ember.manual_seed(0)
    np.testing.assert_array_equal(buf.cpu().numpy(), ember.poisson(rates).cpu().numpy())
    for make in (ember.zeros_like, ember.ones_like, ember.empty_like):
        assert make(rates, pin_memory=True).shape == (3, 2)
    assert ember.full_like(rates, 7, pin_memory=False).sum().item() == 42


# -- the overloads that the allowlist listed as "not yet" ------------------------------------

def test_dtype_casts_take_memory_format():
    x = ember.randn(2, 3, 4, 5, dtype=ember.float64)
    y = x.float(memory_format=ember.channels_last)
    assert y.dtype is ember.float32 and y.is_contiguous(memory_format=ember.channels_last)
    assert y.stride() == (60, 1, 15, 3)
    assert x.half().is_contiguous() and x.long(memory_format=ember.preserve_format).stride() == \
        x.stride()
    with pytest.raises(TypeError):
        x.float(ember.channels_last)  # keyword-only, as PyTorch's


def test_view_takes_dtype_by_keyword():
    x = ember.arange(6.0)
    assert x.view(dtype=ember.int32).dtype is ember.int32
    assert x.view(size=(2, 3)).shape == (2, 3) and x.view(3, 2).shape == (3, 2)
    v = ember.view_copy(x, dtype=ember.int32)
    assert v.dtype is ember.int32 and v._data.base is None
    for bad in (lambda: x.view(), lambda: x.view((2, 3), dtype=ember.int32),
                lambda: x.view(dtype=3)):
        with pytest.raises(TypeError, match="invalid combination of arguments"):
            bad()


def test_tensor_split_takes_split_size():
    x = ember.arange(10.0)
    assert [t.tolist() for t in x.split(split_size=4)] == \
        [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert len(ember.split(x, split_size_or_sections=[3, 7])) == 2
    with pytest.raises(TypeError, match="split_size"):
        x.split(3, split_size=3)


def test_mm_out_dtype_widens_half_products():
    """mm/bmm's out_dtype overload (CUDA-only in PyTorch, every device here): float16 or
    bfloat16 matrices multiplied into float32, differentiable back to the inputs' dtype."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 8)).astype(np.float16)
    b = rng.standard_normal((8, 3)).astype(np.float16)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    for dt in (ember.float16, ember.bfloat16):
        x = ember.tensor(a.astype(np.float32)).to(dt).requires_grad_()
        y = ember.tensor(b.astype(np.float32)).to(dt)
        r = ember.mm(x, y, out_dtype=ember.float32)
        want = x.detach().float().numpy() @ y.float().numpy()
        assert r.dtype is ember.float32
        np.testing.assert_allclose(r.detach().numpy(), want, rtol=1e-6)
        r.sum().backward()
        assert x.grad.dtype is dt
    x16, y16 = ember.tensor(a), ember.tensor(b)
    np.testing.assert_allclose(x16.mm(y16, ember.float32).numpy(), ref, rtol=1e-6)
    rb = ember.bmm(x16[None], y16[None], out_dtype=ember.float32)
    assert rb.dtype is ember.float32 and rb.shape == (1, 4, 3)
    assert ember.mm(x16, y16, out_dtype=ember.float16).dtype is ember.float16
    out = ember.empty(0)
    assert ember.mm(x16, y16, out_dtype=ember.float32, out=out) is out and out.shape == (4, 3)
    with pytest.raises(RuntimeError, match="same as input dtype or fp32 for fp16/bf16"):
        ember.mm(x16.float(), y16.float(), out_dtype=ember.float16)
    with pytest.raises(RuntimeError, match="expected scalar type Half but found Float"):
        ember.mm(x16, y16.float(), out_dtype=ember.float32)
    s = ember.tensor([[0.0, 2.0], [1.0, 0.0]]).half().to_sparse()
    assert ember.spmm(s, ember.ones(2, 2).half(), ember.float32).dtype is ember.float32
