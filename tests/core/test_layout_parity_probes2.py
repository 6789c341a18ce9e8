"""Result layouts where Ember followed NumPy instead of PyTorch: elementwise ops over inputs of
different layouts (TensorIterator lets the first input's layout win, NumPy lets C order
win), reductions that NumPy leaves in their input's layout (PyTorch allocates C order), roll,
tril/triu and renorm (new C-order tensors; roll keeps channels-last), and the copies of an
expanded (stride-0) tensor (``_to_copy`` and ``nan_to_num`` lay it out in C order where
NumPy's K order sorts the stride-0 dims too). Expected strides are PyTorch 2.13's."""

import numpy as np
import pytest

import ember


def _base(lib):
    return lib.arange(120.).reshape(2, 3, 4, 5).sin()


def _cl(lib):
    return _base(lib).contiguous(memory_format=lib.channels_last)


def _tr(lib):
    return _base(lib).transpose(1, 3)


def _ctr(lib):  # dense, dims 0 and 1 swapped in memory
    return _base(lib).transpose(0, 1).contiguous().transpose(0, 1)


def _expanded(lib):
    return lib.arange(5.).sin().reshape(1, 1, 1, 5).expand(2, 3, 4, 5)


def _permsl(lib):  # permuted and sliced: not dense
    return lib.arange(240.).reshape(2, 3, 8, 5).cos().permute(0, 2, 3, 1)[:, ::2]


# (make input, op, PyTorch 2.13's stride of the result)
_CASES = {
    # elementwise: the first input's layout wins
    "cl_plus_c": (_cl, lambda t: t + t.contiguous(), (60, 1, 15, 3)),
    "c_plus_cl": (_cl, lambda t: t.contiguous() + t, (60, 20, 5, 1)),
    "cl_mul_sliced": (_cl, lambda t: t * t.contiguous()[:, :, :, :] * 1.0, (60, 1, 15, 3)),
    "cl_gt_c": (_cl, lambda t: t > t.contiguous(), (60, 1, 15, 3)),
    "ctr_plus_c": (_ctr, lambda t: t + t.contiguous(), (20, 40, 5, 1)),
    "ctr_plus_cl": (_ctr, lambda t: ember_or(t).mul(t, t.contiguous(
        memory_format=ember_or(t).channels_last)), (20, 40, 5, 1)),
    "tr_keepdim_sum": (_tr, lambda t: t + _tr_sum(t), (60, 1, 5, 20)),
    "permsl_plus_c": (_permsl, lambda t: t + t.contiguous(), (60, 5, 1, 20)),
    "c_plus_permsl": (_permsl, lambda t: t.contiguous() + t, (60, 15, 3, 1)),
    "where_cond_first": (_ctr, lambda t: ember_or(t).where(t > 0, t.contiguous(), 0.5),
                         (20, 40, 5, 1)),
    "where_c_cond": (_ctr, lambda t: ember_or(t).where(t.contiguous() > 0, t, t),
                     (60, 20, 5, 1)),
    "addcmul_first": (_ctr, lambda t: t.addcmul(t.contiguous(), t), (20, 40, 5, 1)),
    "lerp_first": (_cl, lambda t: t.lerp(t.contiguous(), 0.25), (60, 1, 15, 3)),
    "complex_first": (_cl, lambda t: ember_or(t).complex(t, t.contiguous()), (60, 1, 15, 3)),
    "polar_cl": (_cl, lambda t: ember_or(t).polar(t.abs(), t), (60, 1, 15, 3)),
    "nan_to_num_expanded": (_expanded, lambda t: t.nan_to_num(), (60, 20, 5, 1)),
    "nan_to_num_int_cl": (_cl, lambda t: t.long().nan_to_num(), (60, 1, 15, 3)),
    # reductions: C order
    "prod_keepdim_cl": (_cl, lambda t: t.prod(1, keepdim=True), (20, 20, 5, 1)),
    "prod_tr": (_tr, lambda t: t.prod(1), (12, 3, 1)),
    "norm_keepdim_tr": (_tr, lambda t: t.norm(dim=1, keepdim=True), (12, 12, 3, 1)),
    "vector_norm_inf_tr": (_tr, lambda t: ember_or(t).linalg.vector_norm(t, float("inf"), dim=1),
                           (12, 3, 1)),
    "logsumexp_cl": (_cl, lambda t: t.logsumexp(2), (15, 5, 1)),
    "logsumexp_keepdim_tr": (_tr, lambda t: t.logsumexp(1, keepdim=True), (12, 12, 3, 1)),
    "nanmean_keepdim_tr": (_tr, lambda t: t.nanmean(1, keepdim=True), (12, 12, 3, 1)),
    "nansum_keepdim_cl": (_cl, lambda t: t.nansum(1, keepdim=True), (20, 20, 5, 1)),
    "nansum_expanded": (_expanded, lambda t: t.nansum(2), (15, 5, 1)),
    "count_nonzero_tr": (_tr, lambda t: t.count_nonzero(1), (12, 3, 1)),
    # new tensors
    "roll_tr": (_tr, lambda t: t.roll(1, 1), (60, 12, 3, 1)),
    "roll_two_dims_expanded": (_expanded, lambda t: t.roll((1, 2), (1, 3)), (60, 20, 5, 1)),
    "roll_cl_keeps": (_cl, lambda t: t.roll(1, 1), (60, 1, 15, 3)),
    "tril_cl": (_cl, lambda t: t.tril(), (60, 20, 5, 1)),
    "triu_tr": (_tr, lambda t: t.triu(1), (60, 12, 3, 1)),
    "renorm_cl": (_cl, lambda t: t.renorm(2, 1, 1.0), (60, 20, 5, 1)),
    "renorm_tr": (_tr, lambda t: t.renorm(2, 1, 1.0), (60, 12, 3, 1)),
    # copies of an expanded tensor: C order
    "double_expanded": (_expanded, lambda t: t.double(), (60, 20, 5, 1)),
    "half_expanded": (_expanded, lambda t: t.half(), (60, 20, 5, 1)),
    "to_copy_expanded": (_expanded, lambda t: t.to(t.dtype, copy=True), (60, 20, 5, 1)),
    "type_as_expanded": (_expanded, lambda t: t.type_as(t.int()), (60, 20, 5, 1)),
    "long_expanded": (_expanded, lambda t: t.long(), (60, 20, 5, 1)),
    "double_cl_keeps": (_cl, lambda t: t.double(), (60, 1, 15, 3)),
    "double_permsl": (_permsl, lambda t: t.double(), (60, 5, 1, 20)),
}


def _tr_sum(t):
    return _base(ember_or(t)).transpose(1, 3).sum(3, keepdim=True)


def ember_or(t):
    """The library ``t`` belongs to (ember, or torch in the comparison)."""
    return ember if isinstance(t, ember.Tensor) else pytest.importorskip("torch")


@pytest.mark.parametrize("case", sorted(_CASES))
def test_result_stride(case):
    make, op, stride = _CASES[case]
    out = op(make(ember))
    assert out.stride() == stride
    assert out.is_contiguous() == (stride == _c_strides(out.shape))


@pytest.mark.parametrize("case", sorted(_CASES))
def test_matches_torch(case):
    torch = pytest.importorskip("torch")
    make, op, stride = _CASES[case]
    want = op(make(torch))
    got = op(make(ember))
    assert want.stride() == stride  # the pinned strides are PyTorch's
    assert got.stride() == want.stride()
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    if got.dim() == 4:
        for fmt in ("contiguous_format", "channels_last"):
            assert got.is_contiguous(memory_format=getattr(ember, fmt)) == \
                want.is_contiguous(memory_format=getattr(torch, fmt))
    if want.is_complex():
        want, got = torch.view_as_real(want), ember.view_as_real(got)
    assert got.double().flatten().tolist() == pytest.approx(
        want.double().flatten().tolist(), rel=1e-3, abs=1e-3)


def _c_strides(shape):
    out, step = [], 1
    for n in reversed(tuple(shape)):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


def test_contiguous_inputs_stay_c_order():
    a, b = ember.randn(32, 64), ember.randn(32, 64)
    for out in (a + b, a * 2, a.relu(), ember.where(a > 0, a, b), a.addcmul(a, b)):
        assert out.is_contiguous() and out.stride() == (64, 1)


def test_same_layout_inputs_keep_it():
    x = _cl(ember)
    out = x * x + x
    assert out.stride() == (60, 1, 15, 3)
    assert ember.allclose(out.contiguous(), (x.contiguous() * x.contiguous() + x.contiguous()))


def test_iter_apply_computes_in_the_layout_iter_layout_copies_to():
    # binary ops compute a non-C first operand's result straight in TensorIterator's layout
    # (``_memory_format.iter_apply``): the same values and strides as computing in NumPy's
    # layout and copying (``iter_layout``), for permuted, gapped, broadcast and empty inputs
    from ember import _memory_format as mf

    rng = np.random.default_rng(0)
    base = rng.standard_normal((4, 6, 5, 3))
    cases = [
        (base[:, :, :, 0].transpose(2, 0, 1), rng.standard_normal((5, 4, 6))),
        (base.transpose(0, 3, 1, 2), rng.standard_normal((6, 5))),  # b broadcast, fewer dims
        (base.transpose(3, 2, 1, 0)[:, ::2], rng.standard_normal((3, 1, 6, 4))),  # gaps
        (base[:, :, :1].transpose(2, 1, 0, 3), rng.standard_normal((1, 6, 4, 3))),  # unit dim
        (base.transpose(1, 0, 2, 3)[:, :0], rng.standard_normal((6, 0, 5, 3))),  # empty
        (base[0].T, rng.standard_normal((3, 6, 5)).transpose(0, 2, 1)),  # both transposed
        (base[0, 0].T, rng.standard_normal(5)),
    ]
    for a, b in cases:
        assert a.size == 0 or not a.flags.c_contiguous
        for fwd in (np.add, np.multiply, np.greater):
            want = mf.iter_layout(fwd(a, b), (a, b))
            got = mf.iter_apply(fwd, a, b)
            np.testing.assert_array_equal(got, want)
            assert got.strides == want.strides, (a.shape, a.strides, b.shape)
