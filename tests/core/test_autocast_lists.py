"""Autocast's op lists on the CPU against torch.autocast: PyTorch's composite ops (einsum,
tensordot, inner, matrix_power, cov, corrcoef, affine_grid) take the dtype of the list ops
they run; reflection/replication padding and torch.lu run in float32; out= calls are not
cast; cat/stack's promote type follows at::autocast::prioritize. The deprecated
torch.cuda.amp / torch.cpu.amp names (custom_fwd, custom_bwd, their submodules)."""

from __future__ import annotations

import importlib
import re
import warnings

import pytest

import ember
import ember.nn

LOW = ember.bfloat16


def _dev():
    return ember.get_default_device().type


def _name(dt) -> str:
    return str(dt).split(".")[-1]


def _dtype_under(m, device_type, fn, low):
    with m.autocast(device_type, dtype=getattr(m, low)):
        return _name(fn(m).dtype)


def _check(fn, want, low="bfloat16"):
    """``fn(module)``'s result dtype under CPU autocast: ``want`` on Ember, and the same as
    PyTorch's where it is installed."""
    assert _dtype_under(ember, _dev(), fn, low) == want
    torch = pytest.importorskip("torch")
    assert _dtype_under(torch, "cpu", fn, low) == want


@pytest.mark.parametrize("eq,shapes,want", [
    ("ij,jk->ik", [(2, 3), (3, 4)], "bfloat16"),
    ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 3, 4)], "bfloat16"),
    ("i,i->", [(3,), (3,)], "bfloat16"),
    ("i,i", [(3,), (3,)], "bfloat16"),
    ("...i,...i", [(2, 3), (2, 3)], "bfloat16"),
    ("ii,i->", [(3, 3), (3,)], "bfloat16"),
    ("i,j", [(3,), (3,)], "float32"),            # an outer product: mul
    ("bi,bj->bij", [(2, 3), (2, 3)], "float32"),
    ("ij,ij->ij", [(2, 3), (2, 3)], "float32"),
    ("ij,j->i", [(3, 1), (1,)], "float32"),      # a contracted size 1: mul and sum
    ("i,j->", [(3,), (3,)], "float32"),
    ("ij->ji", [(2, 3)], "float32"),
])
def test_einsum_is_lower_precision_when_it_contracts(eq, shapes, want):
    _check(lambda m: m.einsum(eq, *[m.ones(*s) for s in shapes]), want)


@pytest.mark.parametrize("a,b,dims,want", [
    ((2, 3), (3, 4), 1, "bfloat16"), ((4,), (4,), 0, "bfloat16"),
    ((2, 3), (2, 3), ([0], [0]), "bfloat16"), ((2, 1), (1, 2), 1, "bfloat16"),
    ((4,), (4,), 1, "float32"), ((2, 3), (2, 3), 2, "float32"), ((1, 4), (4,), 1, "float32"),
])
def test_tensordot_is_lower_precision_unless_it_is_a_dot(a, b, dims, want):
    _check(lambda m: m.tensordot(m.ones(*a), m.ones(*b), dims=dims), want)


@pytest.mark.parametrize("a,b,want", [((2, 4), (4,), "bfloat16"), ((2, 4), (3, 4), "bfloat16"),
                                      ((4,), (4,), "float32"), ((1, 4), (4,), "float32")])
def test_inner(a, b, want):
    _check(lambda m: m.inner(m.ones(*a), m.ones(*b)), want)


@pytest.mark.parametrize("n,want", [(2, "bfloat16"), (3, "bfloat16"), (0, "float32"),
                                    (1, "float32"), (-1, "float32")])
def test_matrix_power(n, want):
    _check(lambda m: m.matrix_power(m.eye(3) * 2, n), want)
    _check(lambda m: m.linalg.matrix_power(m.eye(3) * 2, n), want)


@pytest.mark.parametrize("fn", [
    lambda m: m.cov(m.arange(8.).reshape(2, 4)),
    lambda m: m.corrcoef(m.arange(8.).reshape(2, 4)),
    lambda m: m.nn.functional.affine_grid(m.eye(2, 3).unsqueeze(0), (1, 1, 2, 2),
                                          align_corners=False),
], ids=["cov", "corrcoef", "affine_grid"])
def test_composites_of_matmul_are_lower_precision(fn):
    _check(fn, "bfloat16")


@pytest.mark.parametrize("mode,pad,ndim,want", [
    ("reflect", (1, 1), 3, "float32"), ("reflect", (1, 1, 1, 1), 4, "float32"),
    ("reflect", (1, 1, 1, 1, 1, 1), 5, "bfloat16"),  # reflection_pad3d is on no list
    ("replicate", (1, 1), 3, "float32"), ("replicate", (1, 1, 1, 1), 4, "float32"),
    ("replicate", (1, 1, 1, 1, 1, 1), 5, "float32"),
    ("circular", (1, 1), 3, "bfloat16"), ("constant", (1, 1), 3, "bfloat16"),
])
def test_reflection_and_replication_padding_run_in_float32(mode, pad, ndim, want):
    shape = (1, 2) + (4,) * (ndim - 2)
    _check(lambda m: m.nn.functional.pad(m.ones(*shape, dtype=m.bfloat16), pad, mode=mode),
           want)


def test_padding_modules_run_in_float32():
    _check(lambda m: m.nn.ReflectionPad2d(1)(m.ones(1, 2, 4, 4, dtype=m.bfloat16)), "float32")
    _check(lambda m: m.nn.ReplicationPad1d(1)(m.ones(1, 2, 4, dtype=m.bfloat16)), "float32")


def test_lu_runs_in_float32():
    def fn(m):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return m.lu(m.eye(3, dtype=m.bfloat16) * 2)[0]

    _check(fn, "float32")


def test_out_calls_are_not_cast():
    _check(lambda m: m.mm(m.ones(2, 3), m.ones(3, 4), out=m.empty(2, 4)), "float32")
    _check(lambda m: m.matmul(m.ones(2, 3), m.ones(3, 4), out=m.empty(2, 4)), "float32")


def _prioritize_error(m, device_type, fn, low):
    with pytest.raises(RuntimeError, match=re.escape(
            "Unexpected floating ScalarType in at::autocast::prioritize")):
        _dtype_under(m, device_type, fn, low)


@pytest.mark.parametrize("fn,low", [
    (lambda m: m.cat([m.ones(2, dtype=m.float16), m.ones(2, dtype=m.bfloat16)]), "bfloat16"),
    (lambda m: m.cat([m.ones(2, dtype=m.float16), m.ones(2, dtype=m.float16)]), "bfloat16"),
    (lambda m: m.stack([m.ones(2, dtype=m.bfloat16), m.ones(2).long()]), "float16"),
    (lambda m: m.cat([m.ones(2).double(), m.ones(2, dtype=m.bfloat16)]), "float16"),
], ids=["fp16+bf16", "fp16 under bf16", "bf16 under fp16", "double+bf16 under fp16"])
def test_promote_follows_prioritize(fn, low):
    _prioritize_error(ember, _dev(), fn, low)
    torch = pytest.importorskip("torch")
    _prioritize_error(torch, "cpu", fn, low)


def test_promote_widens_to_float32_ignores_float64_and_refuses_other_dtypes():
    _prioritize_error(ember, _dev(), lambda m: m.cat([m.ones(2, dtype=m.float16)] * 2),
                      "bfloat16")
    _check(lambda m: m.cat([m.ones(2), m.ones(2, dtype=m.bfloat16)]), "float32")
    _check(lambda m: m.cat([m.ones(2).double(), m.ones(2, dtype=m.bfloat16)]), "float64")
    _check(lambda m: m.stack([m.ones(2, dtype=m.bfloat16)] * 2), "bfloat16")


# -- the deprecated per-device names ----------------------------------------------------------

def test_cuda_amp_custom_fwd_and_bwd_warn_and_work():
    from ember.cuda.amp import custom_bwd, custom_fwd

    msg = ("`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
           "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.")
    with pytest.warns(FutureWarning, match=re.escape(msg)):
        fwd = custom_fwd(lambda ctx, x: x * 2)
    with pytest.warns(FutureWarning, match=re.escape(msg)):
        custom_fwd(cast_inputs=ember.float32)
    with pytest.warns(FutureWarning, match=re.escape(msg.replace("fwd", "bwd"))):
        bwd = custom_bwd(lambda ctx, g: g * 2)

    class Double(ember.autograd.Function):
        forward = staticmethod(fwd)
        backward = staticmethod(bwd)

    x = ember.ones(2, requires_grad=True)
    Double.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_cuda_and_cpu_amp_submodules_import_as_in_pytorch():
    for name in ("cuda.amp.autocast_mode", "cuda.amp.grad_scaler", "cuda.amp.common",
                 "cpu.amp.autocast_mode", "cpu.amp.grad_scaler"):
        importlib.import_module(f"ember.{name}")
    from ember.cuda.amp import amp_definitely_not_available
    from ember.cuda.amp.grad_scaler import OptState

    assert OptState.READY.value == 0
    assert amp_definitely_not_available() is (not ember.cuda.is_available())
    assert sorted(ember.cuda.amp.__all__) == sorted(
        ["amp_definitely_not_available", "autocast", "custom_bwd", "custom_fwd", "GradScaler"])


def test_cpu_amp_autocast_defaults_to_bfloat16_whatever_the_set_dtype():
    ember.set_autocast_dtype("cpu", ember.float16)
    try:
        with pytest.warns(FutureWarning):
            ac = ember.cpu.amp.autocast()
    finally:
        ember.set_autocast_dtype("cpu", ember.bfloat16)
    assert ac.fast_dtype == ember.bfloat16


def test_amp_cast_takes_pytorchs_arguments():
    from ember.amp.autocast_mode import _cast

    x = ember.ones(2)
    out = _cast({"a": [x, "s"], "b": x.double()}, x.device.type, ember.bfloat16)
    assert out["a"][0].dtype == ember.bfloat16 and out["a"][1] == "s"
    assert out["b"].dtype == ember.float64
    with pytest.warns(FutureWarning, match=re.escape("torch.cuda.amp.autocast_mode._cast")):
        assert ember.cuda.amp.autocast_mode._cast(x, ember.float16) is x  # not a CUDA tensor
