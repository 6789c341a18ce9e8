"""``ember._foreach_*`` (ember/_foreach.py): every overload against PyTorch, in-place
semantics, PyTorch's list checks and errors, autograd through the out-of-place ones."""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest
from testutils import assert_allclose, assert_same_error, to_numpy

import ember
from ember import _foreach

SHAPES = ((3,), (2, 3), ())
UNARY = _foreach._UNARY


def _arrays(dtype: str, seed: int = 0, low: float = -2.0, high: float = 2.0) -> list:
    rng = np.random.default_rng(seed)
    if dtype == "int64":
        return [rng.integers(1, 5, size=s).astype(np.int64) for s in SHAPES]
    return [rng.uniform(low, high, size=s).astype(dtype) for s in SHAPES]


def _both(arrays, torch) -> tuple:
    """The same values as an ember list and a torch list."""
    return ([ember.tensor(a) for a in arrays], [torch.tensor(a) for a in arrays])


def _same_values(e, t, dtype) -> None:
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    tol = (1e-10, 1e-12) if str(t.dtype) == "torch.float64" else (1e-5, 1e-6)
    assert_allclose(to_numpy(e), t.numpy(), rtol=tol[0], atol=tol[1])


def _same_error(name: str, e_args: tuple, t_args: tuple, torch, **kwargs) -> None:
    """``ember.<name>(*e_args)`` raises what ``torch.<name>(*t_args)`` raises."""
    with pytest.raises(Exception) as expected:
        getattr(torch, name)(*t_args, **kwargs)
    _raises_like(expected.value, functools.partial(getattr(ember, name), *e_args, **kwargs))


def _raises_like(exc: BaseException, ember_call) -> None:
    message = str(exc)
    if ember.get_default_device().type != "cpu":  # kernels off the CPU: "frac_cuda"
        message = message.replace('_cpu"', '_cuda"')
    with pytest.raises(type(exc), match=re.escape(message)):
        ember_call()


def _compare(name: str, e_args: tuple, t_args: tuple, dtype: str, torch, **kwargs) -> None:
    """``ember.<name>`` and ``torch.<name>`` agree: the same error, or the same results (the
    written ``self`` for an in-place one, which returns ``self``)."""
    e_fn, t_fn = getattr(ember, name), getattr(torch, name)
    try:
        t_out = t_fn(*t_args, **kwargs)
    except Exception as exc:
        _raises_like(exc, functools.partial(e_fn, *e_args, **kwargs))
        return
    e_out = e_fn(*e_args, **kwargs)
    if name.endswith("_"):
        assert e_out is e_args[0]
        e_out, t_out = e_args[0], t_args[0]
    else:
        assert isinstance(e_out, tuple)
    assert len(e_out) == len(t_out)
    for e, t in zip(e_out, t_out):
        _same_values(e, t, dtype)


# -- names ---------------------------------------------------------------------------------------

def test_every_torch_foreach_name_exists():
    torch = pytest.importorskip("torch")
    wanted = {n for n in dir(torch) if n.startswith("_foreach_")}
    missing = sorted(n for n in wanted if not callable(getattr(ember, n, None)))
    assert not missing, missing
    assert set(_foreach.NAMES) == wanted


def test_names_resolve_to_the_module_functions():
    assert ember._foreach_mul_ is _foreach._foreach_mul_
    assert ember._foreach_sqrt.__name__ == "_foreach_sqrt"
    with pytest.raises(AttributeError, match="_foreach_nothing"):
        ember._foreach_nothing  # noqa: B018


# -- values against PyTorch ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("op", UNARY)
def test_unary(op, inplace, dtype):
    torch = pytest.importorskip("torch")
    low = 0.1 if op in ("log", "log10", "log2", "sqrt", "rsqrt", "lgamma") else -0.9
    e, t = _both(_arrays(dtype, low=low, high=0.9 if op in ("acos", "asin") else 2.0), torch)
    _compare(f"_foreach_{op}{'_' if inplace else ''}", (e,), (t,), dtype, torch)


BINARY = ("add", "sub", "mul", "div", "pow", "clamp_min", "clamp_max", "maximum", "minimum")


def _binary_others(op: str, dtype: str, torch) -> list:
    """(label, ember other, torch other, kwargs) for every overload ``op`` has."""
    cases = [("scalar_float", 1.5, 1.5, {}), ("scalar_int", 2, 2, {}),
             ("scalar_list", [1.5, 2, -0.5], [1.5, 2, -0.5], {})]
    e_other, t_other = _both(_arrays(dtype, seed=1, low=0.5), torch)
    cases.append(("tensor_list", e_other, t_other, {}))
    e64, t64 = _both(_arrays("float64", seed=2, low=0.5), torch)
    cases.append(("tensor_list_float64", e64, t64, {}))
    if op in ("add", "sub"):
        cases.append(("tensor_list_alpha", e_other, t_other, {"alpha": 3}))
    if op in ("add", "mul", "div"):
        cases.append(("scalar_tensor", ember.tensor(2.5), torch.tensor(2.5), {}))
        cases.append(("scalar_tensor_int", ember.tensor(3), torch.tensor(3), {}))
    if op == "add":
        cases.append(("scalar_tensor_alpha", ember.tensor(2.5), torch.tensor(2.5),
                      {"alpha": 0.5}))
    return cases


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("op", BINARY)
def test_binary_every_overload(op, inplace, dtype):
    torch = pytest.importorskip("torch")
    name = f"_foreach_{op}{'_' if inplace else ''}"
    for label, e_other, t_other, kwargs in _binary_others(op, dtype, torch):
        e, t = _both(_arrays(dtype, seed=3, low=0.5 if op == "pow" else -2.0), torch)
        try:
            _compare(name, (e, e_other), (t, t_other), dtype, torch, **kwargs)
        except AssertionError as exc:
            raise AssertionError(f"{name} with {label}: {exc}") from None


def test_pow_with_a_number_base():
    torch = pytest.importorskip("torch")
    for dtype in ("float32", "float64", "int64"):
        e, t = _both(_arrays(dtype), torch)
        _compare("_foreach_pow", (2.0, e), (2.0, t), dtype, torch)
        _compare("_foreach_pow", (3, e), (3, t), dtype, torch)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
def test_pointwise_every_overload(op, inplace, dtype):
    torch = pytest.importorskip("torch")
    name = f"_foreach_{op}{'_' if inplace else ''}"
    values = [((), ()), ((0.5,), (0.5,)), ((2,), (2,)), (([0.5, -1, 2],), ([0.5, -1, 2],)),
              ((ember.tensor([0.5, -1.0, 2.0]),), (torch.tensor([0.5, -1.0, 2.0]),))]
    for e_value, t_value in values:
        e, t = _both(_arrays(dtype, seed=4), torch)
        e1, t1 = _both(_arrays(dtype, seed=5), torch)
        e2, t2 = _both(_arrays(dtype, seed=6, low=0.5), torch)
        _compare(name, (e, e1, e2, *e_value), (t, t1, t2, *t_value), dtype, torch)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("inplace", [False, True])
def test_lerp_every_overload(inplace, dtype):
    torch = pytest.importorskip("torch")
    name = f"_foreach_lerp{'_' if inplace else ''}"
    ew, tw = _both(_arrays(dtype, seed=7, low=0.0, high=1.0), torch)
    for e_weight, t_weight in ((0.3, 0.3), (0.7, 0.7), (1, 1), ([0.2, 0.8, 0.5],) * 2,
                               (ew, tw)):
        e, t = _both(_arrays(dtype, seed=8), torch)
        e1, t1 = _both(_arrays(dtype, seed=9), torch)
        _compare(name, (e, e1, e_weight), (t, t1, t_weight), dtype, torch)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_reductions(dtype):
    torch = pytest.importorskip("torch")
    e, t = _both(_arrays(dtype), torch)
    for ord in (2, 1, 0, 3.5, float("inf"), float("-inf")):
        _compare("_foreach_norm", (e,), (t,), dtype, torch, ord=ord)
        if not ord < 0:
            _compare("_foreach_powsum", (e,), (t,), dtype, torch, ord=ord)
    _compare("_foreach_max", (e,), (t,), dtype, torch)


def test_norm_and_powsum_dtype_argument():
    torch = pytest.importorskip("torch")
    e, t = _both(_arrays("float32"), torch)
    out = ember._foreach_norm(e, 2, dtype=ember.float64)
    expected = torch._foreach_norm(t, 2, dtype=torch.float64)
    for a, b in zip(out, expected):
        _same_values(a, b, "float64")
    out = ember._foreach_powsum(e, 3, dtype=ember.float64)
    expected = torch._foreach_powsum(t, 3, dtype=torch.float64)
    for a, b in zip(out, expected):
        _same_values(a, b, "float64")
    e16 = [x.half() for x in e]
    for a, b in zip(ember._foreach_powsum(e16), torch._foreach_powsum([x.half() for x in t])):
        _same_values(a, b, "float32")
    assert_same_error(lambda: ember._foreach_norm(e, dtype=ember.float16),
                      lambda: torch._foreach_norm(t, dtype=torch.float16))
    _same_error("_foreach_powsum", ([x.long() for x in e],), ([x.long() for x in t],), torch)


def test_mm_clone_copy_zero():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(10)
    a = [rng.standard_normal((2, 3)), rng.standard_normal((4, 1))]
    b = [rng.standard_normal((3, 5)), rng.standard_normal((1, 2))]
    (ea, ta), (eb, tb) = _both(a, torch), _both(b, torch)
    _compare("_foreach_mm", (ea, eb), (ta, tb), "float64", torch)
    assert_same_error(lambda: ember._foreach_mm(ea, ea), lambda: torch._foreach_mm(ta, ta))
    clones = ember._foreach_clone(ea)
    for c, x in zip(clones, ea):
        assert c is not x and np.array_equal(to_numpy(c), to_numpy(x))
    transposed = ember._foreach_clone([ea[0].t()], memory_format=ember.contiguous_format)[0]
    assert transposed.is_contiguous()
    src = [ember.tensor([1, 2, 3]), ember.tensor([7.0])]  # cast and broadcast, as copy_
    dst = [ember.zeros(3), ember.zeros(2, 2)]
    assert ember._foreach_copy_(dst, src) is dst
    assert dst[0].tolist() == [1.0, 2.0, 3.0] and dst[1].tolist() == [[7.0, 7.0], [7.0, 7.0]]
    versions = [t._version for t in dst]
    assert ember._foreach_zero_(dst) is dst
    assert all(t.abs().sum().item() == 0 for t in dst)
    assert [t._version for t in dst] == [v + 1 for v in versions]


# -- in-place semantics --------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda ts, os: ember._foreach_mul_(ts, 0.5),
    lambda ts, os: ember._foreach_add_(ts, os, alpha=-2),
    lambda ts, os: ember._foreach_lerp_(ts, os, 0.9),
    lambda ts, os: ember._foreach_addcdiv_(ts, os, os, [1, 2]),
    lambda ts, os: ember._foreach_sqrt_(ts),
    lambda ts, os: ember._foreach_maximum_(ts, os),
], ids=["mul_", "add_", "lerp_", "addcdiv_", "sqrt_", "maximum_"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_inplace_writes_bumps_versions_and_returns_self(call, dtype):
    dt = getattr(ember, dtype)
    ts = [ember.rand(4, dtype=dt) + 1, ember.rand(2, 2, dtype=dt) + 1]
    os_ = [ember.rand(4, dtype=dt) + 1, ember.rand(2, 2, dtype=dt) + 1]
    expected = [x.clone() for x in ts]
    slow = [x.clone().requires_grad_() * 1 for x in expected]  # history: the per-tensor ops
    assert call(slow, os_) is slow
    before = [t._version for t in ts]
    data = [t._data for t in ts]
    assert call(ts, os_) is ts
    assert [t._version for t in ts] == [v + 1 for v in before]
    assert all(t._data is d for t, d in zip(ts, data))  # written, not replaced
    for fast, ref in zip(ts, slow):
        assert_allclose(to_numpy(fast), to_numpy(ref.detach()), rtol=1e-6, atol=0)


def test_inplace_writes_through_views_and_aliases():
    base = ember.arange(6.0).reshape(2, 3)
    views = [base[0], base.t()[1]]  # a row and a strided column
    ember._foreach_mul_(views, [10.0, 100.0])
    assert base.tolist() == [[0.0, 1000.0, 20.0], [3.0, 400.0, 5.0]]
    x = [ember.tensor([1.0, 2.0])]
    ember._foreach_add_(x, x, alpha=2)  # self as the other list: 1 + 2 * 1
    assert x[0].tolist() == [3.0, 6.0]
    ember._foreach_lerp_(x, x, 0.3)
    assert x[0].tolist() == [3.0, 6.0]


def test_inplace_tuple_of_tensors_is_returned():
    ts = (ember.ones(2), ember.ones(3))
    assert ember._foreach_div_(ts, 4) is ts
    assert ts[1].tolist() == [0.25] * 3


def test_inplace_on_leaf_requiring_grad():
    torch = pytest.importorskip("torch")
    e = [ember.ones(2, requires_grad=True)]
    t = [torch.ones(2, requires_grad=True)]
    for name, e_args, t_args in (("_foreach_mul_", (e, 2.0), (t, 2.0)),
                                 ("_foreach_lerp_", (e, e, 0.5), (t, t, 0.5)),
                                 ("_foreach_zero_", (e,), (t,)),
                                 ("_foreach_exp_", (e,), (t,))):
        _same_error(name, e_args, t_args, torch)
    with ember.no_grad():  # optimizers and EMA update parameters under no_grad
        ember._foreach_mul_(e, 3.0)
        ember._foreach_lerp_(e, [ember.zeros(2)], 0.5)
    assert e[0].tolist() == [1.5, 1.5] and e[0].grad_fn is None and e[0].requires_grad


def test_inplace_records_history_on_non_leaves():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    data = [rng.standard_normal(3), rng.standard_normal((2, 2))]
    grads = {}
    for lib in (ember, torch):
        leaves = [lib.tensor(a, requires_grad=True) for a in data]
        xs = [x * 1 for x in leaves]
        lib._foreach_mul_(xs, [2.0, 3.0])
        lib._foreach_addcmul_(xs, leaves, leaves, 0.5)
        lib._foreach_lerp_(xs, leaves, 0.25)
        sum(x.sin().sum() for x in xs).backward()
        grads[lib.__name__] = [to_numpy(x.grad) for x in leaves]
    for a, b in zip(grads["ember"], grads["torch"]):
        assert_allclose(a, b, rtol=1e-10)


def test_inplace_refuses_a_result_it_cannot_hold():
    torch = pytest.importorskip("torch")
    for name, e_extra, t_extra in (("_foreach_add_", (1.5,), (1.5,)),
                                   ("_foreach_sqrt_", (), ()),
                                   ("_foreach_mul_", ([ember.ones(2)],), ([torch.ones(2)],)),
                                   ("_foreach_add_", ([ember.ones(2, 3)],),
                                    ([torch.ones(2, 3)],))):
        e = [ember.ones(2, dtype=ember.int64)]
        t = [torch.ones(2, dtype=torch.int64)]
        _same_error(name, (e, *e_extra), (t, *t_extra), torch)


# -- PyTorch's list checks and errors ------------------------------------------------------------

def test_list_errors_match_torch():
    torch = pytest.importorskip("torch")
    e2, t2 = [ember.ones(2), ember.ones(3)], [torch.ones(2), torch.ones(3)]
    e1, t1 = [ember.ones(2)], [torch.ones(2)]
    cases = [
        ("_foreach_add", ([], 1), ([], 1), {}),
        ("_foreach_add", ([], []), ([], []), {}),
        ("_foreach_exp", ([],), ([],), {}),
        ("_foreach_norm", ([],), ([],), {}),
        ("_foreach_add", (e2, [1.0]), (t2, [1.0]), {}),
        ("_foreach_mul_", (e2, [1.0, 2.0, 3.0]), (t2, [1.0, 2.0, 3.0]), {}),
        ("_foreach_add", (e2, e1), (t2, t1), {}),
        ("_foreach_add_", (e2, e1), (t2, t1), {}),
        ("_foreach_add", (e2, ember.ones(2)), (t2, torch.ones(2)), {}),
        ("_foreach_mul", (e2, ember.ones(1)), (t2, torch.ones(1)), {}),
        ("_foreach_add", (e2, 1), (t2, 1), {"alpha": 2}),
        ("_foreach_add", (e2, [1, 2]), (t2, [1, 2]), {"alpha": 2}),
        ("_foreach_addcmul", (e2, e2, e2, [1.0]), (t2, t2, t2, [1.0]), {}),
        ("_foreach_addcmul", (e2, e2, e1), (t2, t2, t1), {}),
        ("_foreach_addcmul", (e2, e2, e2, ember.tensor([1.0])),
         (t2, t2, t2, torch.tensor([1.0])), {}),
        ("_foreach_addcdiv_", (e2, e2, e2, ember.tensor(1.0)),
         (t2, t2, t2, torch.tensor(1.0)), {}),
        ("_foreach_lerp", (e2, e2, [1.0]), (t2, t2, [1.0]), {}),
        ("_foreach_lerp", (e2, e2, e1), (t2, t2, t1), {}),
        ("_foreach_lerp", (e2, e1, 0.5), (t2, t1, 0.5), {}),
        ("_foreach_max", ([ember.ones(0)],), ([torch.ones(0)],), {}),
        ("_foreach_copy_", (e2, e1), (t2, t1), {}),
        ("_foreach_mm", (e2, e1), (t2, t1), {}),
        ("_foreach_sub", ([ember.ones(2, dtype=ember.bool)], 1),
         ([torch.ones(2, dtype=torch.bool)], 1), {}),
        ("_foreach_neg", ([ember.ones(2, dtype=ember.bool)],),
         ([torch.ones(2, dtype=torch.bool)],), {}),
        ("_foreach_add", (e1, [ember.ones(3)]), (t1, [torch.ones(3)]), {}),
        ("_foreach_pow", ([ember.ones(2, dtype=ember.int64)], -1),
         ([torch.ones(2, dtype=torch.int64)], -1), {}),
        ("_foreach_lerp", (e1, [ember.ones(2, dtype=ember.float64)], 0.5),
         (t1, [torch.ones(2, dtype=torch.float64)], 0.5), {}),
    ]
    for name, e_args, t_args, kwargs in cases:
        try:
            _same_error(name, e_args, t_args, torch, **kwargs)
        except BaseException as exc:  # pytest's Failed is a BaseException
            raise AssertionError(f"{name}{e_args!r} {kwargs}: {exc}") from None


def test_arguments_of_the_wrong_kind():
    with pytest.raises(TypeError, match="must be tuple of Tensors, not Tensor"):
        ember._foreach_add(ember.ones(2), 1)
    with pytest.raises(TypeError, match="expected Tensor as element 1 in argument 0"):
        ember._foreach_exp([ember.ones(2), 1.0])
    with pytest.raises(TypeError, match=r"_foreach_sub\(\) received an invalid combination"):
        ember._foreach_sub([ember.ones(2)], ember.tensor(1.0))  # no Tensor overload for sub
    with pytest.raises(TypeError, match=r"_foreach_lerp_\(\) received an invalid combination"):
        ember._foreach_lerp_([ember.ones(2)], [ember.ones(2)], "half")


def test_pairs_on_two_devices_are_refused():
    from ember.testing import register_strict_device

    register_strict_device()
    other = "cpu" if ember.get_default_device().type == "strict" else "strict:0"
    a = [ember.ones(2)]
    b = [ember.ones(2, device=other)]
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember._foreach_add_(a, b)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember._foreach_lerp(a, b, 0.5)


# -- autograd ------------------------------------------------------------------------------------

def _inputs(*shapes, seed=12):
    rng = np.random.default_rng(seed)
    return [ember.tensor(rng.uniform(0.5, 2.0, size=s), requires_grad=True) for s in shapes]


def test_gradcheck_binary_and_pointwise():
    a, b, c, d = _inputs((3,), (2, 2), (3,), (2, 2))
    assert ember.autograd.gradcheck(
        lambda a, b, c, d: ember._foreach_mul([a, b], [c, d]), (a, b, c, d))
    assert ember.autograd.gradcheck(
        lambda a, b, c, d: ember._foreach_addcdiv([a, b], [c, d], [c + 1, d * d], [0.5, -2]),
        (a, b, c, d))
    assert ember.autograd.gradcheck(
        lambda a, b, c: ember._foreach_add([a, b], c.sum(), alpha=3), (a, b, c))


def test_gradcheck_lerp_norm_unary():
    a, b, c, d = _inputs((3,), (2, 2), (3,), (2, 2))
    w1, w2 = _inputs((3,), (2, 2), seed=13)
    assert ember.autograd.gradcheck(
        lambda a, b, c, d, w1, w2: ember._foreach_lerp([a, b], [c, d], [w1, w2]),
        (a, b, c, d, w1, w2))
    assert ember.autograd.gradcheck(lambda a, b: ember._foreach_norm([a, b], 3), (a, b))
    assert ember.autograd.gradcheck(lambda a, b: ember._foreach_sqrt([a, b]), (a, b))
    assert ember.autograd.gradcheck(lambda a, b: ember._foreach_pow([a, b], 2.5), (a, b))


def test_out_of_place_leaves_inputs_alone():
    a = [ember.ones(2)]
    out = ember._foreach_add(a, 1)
    assert a[0].tolist() == [1.0, 1.0] and out[0].tolist() == [2.0, 2.0]
    assert a[0]._version == 0


def test_pytorch_keyword_names():
    torch = pytest.importorskip("torch")
    calls = [("_foreach_mul_", {"scalar": 0.5}), ("_foreach_mul", {"scalars": [0.5, 2.0, 3.0]}),
             ("_foreach_mul", {"other": "list"}), ("_foreach_mul", {"other": "scalar_tensor"}),
             ("_foreach_sub_", {"other": "list", "alpha": 2}), ("_foreach_pow", {"exponent": 2}),
             ("_foreach_clamp_min", {"scalar": 0.1}), ("_foreach_maximum_", {"other": "list"}),
             ("_foreach_lerp", {"tensors1": "list", "weight": 0.25}),
             ("_foreach_lerp_", {"tensors1": "list", "weights": "list"}),
             ("_foreach_lerp", {"tensors1": "list", "weight": [0.5, 0.1, 0.9]}),
             ("_foreach_addcmul", {"tensor1": "list", "tensor2": "list", "value": 2}),
             ("_foreach_addcdiv_", {"tensor1": "list", "tensor2": "list", "scalars": [1, 2, 3]}),
             ("_foreach_addcmul_", {"tensor1": "list", "tensor2": "list",
                                    "scalars": "packed"}),
             ("_foreach_copy_", {"src": "list", "non_blocking": True}),
             ("_foreach_norm", {"ord": 1}), ("_foreach_mul", {"scalar": [0.5]}),
             ("_foreach_lerp", {"tensors1": "list", "weights": 0.5})]
    for name, kwargs in calls:
        e, t = _both(_arrays("float64", seed=14, low=0.5), torch)
        o_e, o_t = _both(_arrays("float64", seed=15, low=0.5), torch)
        values = {"list": (o_e, o_t), "scalar_tensor": (ember.tensor(2.0), torch.tensor(2.0)),
                  "packed": (ember.tensor([1.0, 2, 3]), torch.tensor([1.0, 2, 3]))}
        e_kw = {k: values[v][0] if isinstance(v, str) else v for k, v in kwargs.items()}
        t_kw = {k: values[v][1] if isinstance(v, str) else v for k, v in kwargs.items()}
        try:
            t_out = getattr(torch, name)(t, **t_kw)
        except TypeError:
            with pytest.raises(TypeError, match="received an invalid combination of arguments"):
                getattr(ember, name)(e, **e_kw)
            continue
        e_out = getattr(ember, name)(e, **e_kw)
        if name.endswith("_"):
            assert e_out is e
            e_out, t_out = e, t
        for a, b in zip(e_out, t_out, strict=True):
            _same_values(a, b, "float64")


def test_fast_path_is_taken_only_where_nothing_else_must_see_the_update():
    ts = [ember.ones(2), ember.ones(2, 3)]
    others = [ember.ones(2), ember.ones(2, 3)]
    assert _foreach._fast_xp(ts, others) is not None
    assert _foreach._fast_xp([ember.ones(2, dtype=ember.int64)]) is None
    assert _foreach._fast_xp(ts, [ember.ones(2), ember.ones(3)]) is None  # broadcasting
    assert _foreach._fast_xp(ts, [ember.ones(2), ember.ones(2, 3).double()]) is None
    grads = [ember.ones(2, requires_grad=True)]
    assert _foreach._fast_xp(grads) is None
    with ember.no_grad():
        assert _foreach._fast_xp(grads) is not None
    assert _foreach._fast_xp([ember.ones(1).expand(3)]) is None  # read-only view

    class Sub(ember.Tensor):
        pass

    assert _foreach._fast_xp([ember.ones(2).as_subclass(Sub)]) is None


def test_group_tensors_by_device_and_dtype():
    from ember.utils._foreach_utils import _group_tensors_by_device_and_dtype, _has_foreach_support

    a = [ember.zeros(2), ember.zeros(2, dtype=ember.float64), ember.ones(3)]
    b = [ember.ones(2), None, ember.ones(3)]
    groups = _group_tensors_by_device_and_dtype([a, b], with_indices=True)
    f32 = groups[(a[0].device, ember.float32)]
    assert f32[0][0][0] is a[0] and f32[0][0][1] is a[2] and f32[0][1][1] is b[2]
    assert f32[1] == [0, 2]
    f64 = groups[(a[0].device, ember.float64)]
    assert f64[0] == [[a[1]], [None]] and f64[1] == [1]
    assert all(v[1] == [] for v in _group_tensors_by_device_and_dtype([a, b]).values())
    cpu = [t.to("cpu") for t in a]  # PyTorch's list: cuda, xpu, mtia, privateuseone and cpu
    assert _has_foreach_support(cpu, cpu[0].device)
    assert _has_foreach_support(a, a[0].device) == (a[0].device.type == "cpu")
    optim = pytest.importorskip("ember.optim")  # ember-nn's Optimizer has it as a staticmethod
    assert optim.Optimizer._group_tensors_by_device_and_dtype([a]).keys() == groups.keys()
