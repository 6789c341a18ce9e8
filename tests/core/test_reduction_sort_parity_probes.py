"""Reductions, sorting/selection and statistics against PyTorch, where differential probes
found them apart: complex logsumexp/logcumsumexp/cov/corrcoef, ``out=`` of the selecting ops,
the order of PyTorch's argument checks (dim and k before dtype), empty-input errors and
warnings, quantile and histc messages, unique's dim errors.

Each case runs with Ember and asserts the expected outcome; when PyTorch is importable, the
same call runs with it and must end the same way (its message with "torch" read as "ember")."""

import re
import warnings

import numpy as np
import pytest

import ember


def _torch():
    return pytest.importorskip("torch")


def _outcome(lib, fn):
    """``(type, message)`` of what ``fn(lib)`` raised, or ``None`` when it returned."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # PyTorch's beta/experimental notes
            fn(lib)
    except Exception as error:  # the outcome is what is compared
        return type(error), str(error)
    return None


def _t(*args, **kwargs):
    """``lib.tensor(*args, **kwargs)``, a dtype name resolved in ``lib``."""
    def make(lib):
        kw = dict(kwargs)
        if isinstance(kw.get("dtype"), str):
            kw["dtype"] = getattr(lib, kw["dtype"])
        return lib.tensor(*args, **kw)
    return make


def _z(*shape, dtype="float32"):
    return lambda lib: lib.zeros(*shape, dtype=getattr(lib, dtype))


X = _t([[1.0, 2.0], [3.0, 4.0]])
C = _t([1 + 2j, 3 - 1j])
B = _t([[True, False], [True, True]])


def _call(name, make, *args, **kwargs):
    return lambda lib: getattr(lib, name)(make(lib), *args, **kwargs)


def _max_message(name, got):
    return (f"{name}() received an invalid combination of arguments - got (Tensor, {got}), but "
            "expected one of:\n * (Tensor input, *, Tensor out = None)\n * (Tensor input, "
            "Tensor other, *, Tensor out = None)\n * (Tensor input, int dim, bool keepdim = "
            "False, *, tuple of Tensors out = None)\n")


ERRORS = {
    # -- a dim of another type than int: PyTorch's argument parser, before any dtype check
    "argmax tuple": (_call("argmax", X, (0, 1)), TypeError,
                     "argmax(): argument 'dim' (position 2) must be int, not tuple"),
    "argmax bool input tuple": (_call("argmax", B, (0,)), TypeError,
                                "argmax(): argument 'dim' (position 2) must be int, not tuple"),
    "argmin bool dim": (_call("argmin", X, True), TypeError,
                        "argmin(): argument 'dim' (position 2) must be int, not bool"),
    "median tuple": (_call("median", X, (0,)), TypeError,
                     "median(): argument 'dim' (position 2) must be int, not tuple"),
    "nanmedian bool input tuple": (_call("nanmedian", B, (0,)), TypeError,
                                   "nanmedian(): argument 'dim' (position 2) must be int, not "
                                   "tuple"),
    "mode float": (_call("mode", X, 0.5), TypeError,
                   "mode(): argument 'dim' (position 2) must be int, not float"),
    "cumsum None": (_call("cumsum", X, None), TypeError,
                    "cumsum(): argument 'dim' (position 2) must be int, not NoneType"),
    "logcumsumexp tuple": (_call("logcumsumexp", X, (0,)), TypeError,
                           "logcumsumexp(): argument 'dim' (position 2) must be int, not tuple"),
    "cummax tuple": (_call("cummax", X, (0,)), TypeError,
                     "cummax(): argument 'dim' (position 2) must be int, not tuple"),
    "topk tuple": (_call("topk", X, 1, (0,)), TypeError,
                   "topk(): argument 'dim' (position 3) must be int, not tuple"),
    "topk float k": (_call("topk", X, 1.5), TypeError,
                     "topk(): argument 'k' (position 2) must be int, not float"),
    "kthvalue None dim": (_call("kthvalue", X, 1, None), TypeError,
                          "kthvalue(): argument 'dim' (position 3) must be int, not NoneType"),
    "kthvalue float k": (_call("kthvalue", X, 1.5), TypeError,
                         "kthvalue(): argument 'k' (position 2) must be int, not float"),
    "max tuple": (_call("max", X, (0, 1)), TypeError, _max_message("max", "tuple")),
    "min complex tuple": (_call("min", C, (0,)), TypeError, _max_message("min", "tuple")),
    "max bool dim": (_call("max", X, True), TypeError, _max_message("max", "bool")),
    "sort tuple": (_call("sort", X, (0,)), TypeError,
                   "sort() received an invalid combination of arguments - got (Tensor, tuple), "
                   "but expected one of:\n * (Tensor input, *, bool stable, int dim = -1, bool "
                   "descending = False, tuple of Tensors out = None)\n * (Tensor input, int dim "
                   "= -1, bool descending = False, *, tuple of Tensors out = None)\n"),
    "unique dim float": (lambda lib: lib.unique(X(lib), dim=1.5), TypeError,
                         "unique_dim(): argument 'dim' (position 2) must be int, not float"),
    "prod tuple": (_call("prod", X, (0, 1)), TypeError,
                   "prod() received an invalid combination of arguments - got (Tensor, tuple), "
                   "but expected one of:\n * (Tensor input, *, torch.dtype dtype = None)\n * "
                   "(Tensor input, int dim, bool keepdim = False, *, torch.dtype dtype = None, "
                   "Tensor out = None)\n"),
    "aminmax tuple": (lambda lib: lib.aminmax(X(lib), dim=(0,)), TypeError,
                      "aminmax(): argument 'dim' must be int, not tuple"),
    # -- the dim (and k) before the dtype
    "max complex dim": (_call("max", C, 2), IndexError,
                        "Dimension out of range (expected to be in range of [-1, 0], but got 2)"),
    "median bool dim": (_call("median", B, 2), IndexError,
                        "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    "nanmedian complex dim": (_call("nanmedian", C, 2), IndexError,
                              "Dimension out of range (expected to be in range of [-1, 0], but "
                              "got 2)"),
    "cummax complex dim": (_call("cummax", C, 5), IndexError,
                           "Dimension out of range (expected to be in range of [-1, 0], but got "
                           "5)"),
    "logcumsumexp int dim": (_call("logcumsumexp", _t([1, 2]), 3), IndexError,
                             "Dimension out of range (expected to be in range of [-1, 0], but "
                             "got 3)"),
    "topk bool k": (_call("topk", B, 10), RuntimeError, "selected index k out of range"),
    "topk complex k": (_call("topk", C, -1), RuntimeError, "selected index k out of range"),
    "topk bool dim": (_call("topk", B, 1, 5), IndexError,
                      "Dimension out of range (expected to be in range of [-2, 1], but got 5)"),
    "kthvalue bool k": (_call("kthvalue", B, 0), RuntimeError,
                        "kthvalue(): selected number k out of range for dimension 1"),
    "kthvalue complex k": (_call("kthvalue", C, 10), RuntimeError,
                           "kthvalue(): selected number k out of range for dimension 0"),
    # -- dtypes PyTorch has no kernel for
    "nansum complex": (_call("nansum", C), RuntimeError,
                       "nansum on CPU does not support complex inputs"),
    "nanmean complex": (_call("nanmean", C, 0), RuntimeError,
                        "nansum on CPU does not support complex inputs"),
    "nanmean int with dtype": (lambda lib: lib.nanmean(_t([1, 2])(lib), dtype=lib.float32),
                               RuntimeError, "nanmean(): expected input to have floating point "
                               "or complex dtype but got Long"),
    "mode complex": (_call("mode", C), NotImplementedError,
                     "\"mode_cpu\" not implemented for 'ComplexFloat'"),
    "unique complex": (_call("unique", C), NotImplementedError,
                       "\"unique\" not implemented for 'ComplexFloat'"),
    "unique dim complex": (lambda lib: lib.unique(C(lib), dim=5), NotImplementedError,
                           "\"unique_dim\" not implemented for 'ComplexFloat'"),
    "unique_consecutive complex": (_call("unique_consecutive", C), NotImplementedError,
                                   "\"unique\" not implemented for 'ComplexFloat'"),
    # -- empty inputs
    "amax empty dim as given": (_call("amax", _z(2, 0), -1, keepdim=True), IndexError,
                                "amax(): Expected reduction dim -1 to have non-zero size."),
    "amin empty before duplicate": (_call("amin", _z(0, 3), (0, 0)), IndexError,
                                    "amin(): Expected reduction dim 0 to have non-zero size."),
    "amax empty before range": (_call("amax", _z(2, 0, 0), (1, 5)), IndexError,
                                "amax(): Expected reduction dim 1 to have non-zero size."),
    "aminmax empty dim": (lambda lib: lib.aminmax(_z(2, 0, 0)(lib), dim=-1), IndexError,
                          "aminmax: Expected reduction dim 2 to have non-zero size."),
    "nanmedian empty dim": (_call("nanmedian", _z(0, 3), 0), IndexError,
                            "median(): Expected reduction dim 0 to have non-zero size."),
    "unique 0-dim dim": (lambda lib: lib.unique(_t(3.0)(lib), dim=-1), IndexError,
                         "Dimension specified as -1 but tensor has no dimensions"),
    "unique_consecutive 0-dim dim": (lambda lib: lib.unique_consecutive(_t(3.0)(lib), dim=0),
                                     IndexError,
                                     "Dimension specified as 0 but tensor has no dimensions"),
    "unique unselected empty dim": (lambda lib: lib.unique(_z(3, 0)(lib), dim=0), RuntimeError,
                                    "There are 0 sized dimensions, and they aren't selected, so "
                                    "unique cannot be applied"),
    "unique_consecutive unselected empty dim": (
        lambda lib: lib.unique_consecutive(_z(0, 3)(lib), dim=1), RuntimeError,
        "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied"),
    # -- logsumexp over dim=()
    "logsumexp dim ()": (_call("logsumexp", _z(2, 3, 4), []), RuntimeError,
                         "output with shape [] doesn't match the broadcast shape [1, 1, 1]"),
    # -- quantile: nanquantile speaks as quantile; the float q is checked first
    "nanquantile int": (_call("nanquantile", _t([1, 2]), 0.5), RuntimeError,
                        "quantile() input tensor must be either float or double dtype"),
    "nanquantile empty": (_call("nanquantile", _z(0, 3), 0.5), RuntimeError,
                          "quantile() input tensor must be non-empty"),
    "nanquantile q": (_call("nanquantile", X, 1.5), RuntimeError,
                      "quantile() q must be in the range [0, 1] but got 1.5"),
    "quantile q before dtype": (_call("quantile", _t([1, 2]), 2.0), RuntimeError,
                                "quantile() q must be in the range [0, 1] but got 2"),
    "quantile nan q tensor": (lambda lib: lib.quantile(X(lib), _t([float("nan")])(lib)),
                              RuntimeError,
                              "quantile() q values must be in the range [0, 1]"),
    # -- histc: bins first, then the first step without a kernel, C++'s number format
    "histc bool": (lambda lib: lib.histc(_t([True, False])(lib), bins=4), NotImplementedError,
                   "\"linspace_cpu\" not implemented for 'Bool'"),
    "histc complex": (lambda lib: lib.histc(C(lib), bins=4), NotImplementedError,
                      "\"aminmax_cpu\" not implemented for 'ComplexFloat'"),
    "histc int bins": (lambda lib: lib.histc(_t([1, 2])(lib), bins=0), RuntimeError,
                       "torch.histogram(): bins must be > 0, but got 0 for dimension 0"),
    "histc empty uint8": (lambda lib: lib.histc(_t([], dtype="uint8")(lib), bins=4),
                          RuntimeError, "value cannot be converted to type uint8_t without "
                          "overflow"),
    "histc float bins": (lambda lib: lib.histc(X(lib), bins=2.5), TypeError,
                         "histc(): argument 'bins' must be int, not float"),
    "histc inf range": (lambda lib: lib.histc(_t([1.0, 2.0, float("inf")])(lib), bins=4),
                        RuntimeError, "torch.histc: range of [1, inf] is not finite"),
    "histc nan max": (lambda lib: lib.histc(X(lib), bins=4, min=0, max=float("nan")),
                      RuntimeError, "torch.histc: range of [0, nan] is not finite"),
    # -- searchsorted: kernels, sorter and out checks
    "searchsorted bool": (lambda lib: lib.searchsorted(_t([True, False])(lib),
                                                       _t([True])(lib)), NotImplementedError,
                          "\"searchsorted_out_cpu\" not implemented for 'Bool'"),
    "searchsorted complex values": (lambda lib: lib.searchsorted(_t([1.0])(lib),
                                                                 _t([1 + 1j])(lib)),
                                    NotImplementedError, "\"searchsorted_out_cpu\" not "
                                    "implemented for 'ComplexFloat'"),
    "searchsorted complex scalar": (lambda lib: lib.searchsorted(_t([1.0, 2.0])(lib), 1 + 1j),
                                    NotImplementedError, "\"searchsorted_out_cpu\" not "
                                    "implemented for 'ComplexFloat'"),
    "searchsorted sorter range": (lambda lib: lib.searchsorted(
        _t([3.0, 1.0, 2.0])(lib), _t([2.0])(lib), sorter=_t([1, 2, 5])(lib)), RuntimeError,
        "torch.searchsorted(): sorter index out of range"),
    "searchsorted sorter dtype": (lambda lib: lib.searchsorted(
        _t([3.0, 1.0, 2.0])(lib), _t([2.0])(lib), sorter=_t([1, 2, 0], dtype="int32")(lib)),
        RuntimeError, "torch.searchsorted(): sorter must be a tensor of long dtype but got "
        "dtype Int"),
    "searchsorted out dtype": (lambda lib: lib.searchsorted(
        _t([1.0, 2.0])(lib), _t([1.5])(lib), out_int32=True, out=lib.empty(1, dtype=lib.int64)),
        RuntimeError, "torch.searchsorted(): output tensor's dtype is wrong, it can only be "
        "Int(int32) or Long(int64) depending on whether out_int32 flag is True, but we got "
        "output tensor's dtype Long and out_int32 flag is True"),
    # -- out= of another dtype than the result's: PyTorch refuses it (no cast)
    "argmax out int32": (lambda lib: lib.argmax(X(lib), 1, out=lib.empty(0, dtype=lib.int32)),
                         RuntimeError,
                         "Expected out tensor to have dtype long int, but got int instead"),
    "sort out float64": (lambda lib: lib.sort(X(lib), 1, out=(lib.empty(0, dtype=lib.float64),
                                                             lib.empty(0, dtype=lib.int64))),
                         RuntimeError,
                         "Expected out tensor to have dtype float, but got double instead"),
    "topk out int32 indices": (lambda lib: lib.topk(X(lib), 1, out=(
        lib.empty(0), lib.empty(0, dtype=lib.int32))), RuntimeError,
        "Expected out tensor to have dtype long int, but got int instead"),
    "aminmax out float64": (lambda lib: lib.aminmax(X(lib), out=(
        lib.empty(0, dtype=lib.float64), lib.empty(0, dtype=lib.float64))), RuntimeError,
        "Expected out tensor to have dtype float, but got double instead"),
    "argsort out int32": (lambda lib: lib.argsort(X(lib), stable=True,
                                                  out=lib.empty(0, dtype=lib.int32)),
                          RuntimeError,
                          "Expected out tensor to have dtype long int, but got int instead"),
    # -- renorm's number arguments
    "renorm str p": (lambda lib: lib.renorm(X(lib), "fro", 0, 1), TypeError,
                     "renorm(): argument 'p' (position 2) must be Number, not str"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_like_torch(case):
    fn, error, message = ERRORS[case]
    with pytest.raises(error, match=re.escape(message)):
        fn(ember)
    assert _outcome(ember, fn) == (error, message)
    assert _outcome(_torch(), fn) == (error, message)


# -- values -------------------------------------------------------------------------------------

def _same(ours, theirs, atol=1e-5):
    assert str(ours.dtype).replace("ember", "torch") == str(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().resolve_conj().numpy(),
                               theirs.detach().resolve_conj().numpy(), atol=atol)


def test_logsumexp_of_complex_stays_complex_with_its_gradient():
    x = ember.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    y = ember.logsumexp(x, 0)
    assert y.dtype is ember.complex64
    np.testing.assert_allclose(y.item(), 2.85639 - 0.97795j, atol=1e-4)
    y.real.backward()
    np.testing.assert_allclose(x.grad.numpy(), [-0.1541 - 0.0255j, 1.1541 + 0.0255j], atol=1e-4)
    torch = _torch()
    xt = torch.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    yt = torch.logsumexp(xt, 0)
    _same(y, yt)
    yt.real.backward()
    _same(x.grad, xt.grad)


def test_logcumsumexp_of_complex_and_its_gradient():
    x = ember.tensor([[1 + 2j, -float("inf")], [3 - 1j, 2]], dtype=ember.complex128,
                     requires_grad=True)
    y = ember.logcumsumexp(x, 0)
    (y.real.sum() + 2 * y.imag.sum()).backward()
    np.testing.assert_allclose(y.detach().numpy(),
                               [[1 + 2j, -np.inf + 0j], [2.85639 - 0.97795j, 2 + 0j]], atol=1e-4)
    torch = _torch()
    xt = torch.tensor([[1 + 2j, -float("inf")], [3 - 1j, 2]], dtype=torch.complex128,
                      requires_grad=True)
    yt = torch.logcumsumexp(xt, 0)
    (yt.real.sum() + 2 * yt.imag.sum()).backward()
    _same(y, yt)
    _same(x.grad, xt.grad)


@pytest.mark.parametrize("op", ["cov", "corrcoef"])
def test_cov_and_corrcoef_of_complex(op):
    rows = [[1 + 1j, 2.0, 3j], [0.5, -1j, 2 + 2j]]
    ours = getattr(ember, op)(ember.tensor(rows))
    assert ours.dtype is ember.complex64
    assert getattr(ember, op)(ember.tensor(rows[0])).dtype is ember.complex64
    torch = _torch()
    _same(ours, getattr(torch, op)(torch.tensor(rows)))
    _same(getattr(ember, op)(ember.tensor(rows[0])), getattr(torch, op)(torch.tensor(rows[0])))


def test_topk_of_a_0_dim_tensor_with_k_0_is_its_element():
    r = ember.topk(ember.tensor(3.0), 0)
    assert r.values.item() == 3.0 and r.indices.item() == 0 and r.values.shape == ()
    torch = _torch()
    theirs = torch.topk(torch.tensor(3.0), 0)
    assert theirs.values.item() == 3.0 and theirs.indices.item() == 0


def test_unique_consecutive_of_an_empty_selected_dim():
    values, inverse, counts = ember.unique_consecutive(ember.zeros(0, 3), return_inverse=True,
                                                       return_counts=True, dim=0)
    assert values.shape == (0, 3) and inverse.shape == (0,) and counts.shape == (0,)
    torch = _torch()
    theirs = torch.unique_consecutive(torch.zeros(0, 3), return_inverse=True,
                                      return_counts=True, dim=0)
    for a, b in zip((values, inverse, counts), theirs):
        _same(a, b)


@pytest.mark.parametrize("shape,dim", [((0, 3), -1), ((2, 0), 0)])
@pytest.mark.parametrize("op", ["var", "std"])
def test_var_std_of_an_empty_result_warn_about_degrees_of_freedom(op, shape, dim):
    with pytest.warns(UserWarning, match=re.escape(f"{op}(): degrees of freedom is <= 0")):
        r = getattr(ember, op)(ember.zeros(*shape), dim)
    assert r.numel() == 0
    torch = _torch()
    with pytest.warns(UserWarning, match=re.escape(f"{op}(): degrees of freedom is <= 0")):
        getattr(torch, op)(torch.zeros(*shape), dim)


SELECTING_OUT = {
    "sort": lambda lib, x, out: lib.sort(x, 1, descending=True, out=out),
    "topk": lambda lib, x, out: lib.topk(x, 2, out=out),
    "kthvalue": lambda lib, x, out: lib.kthvalue(x, 2, out=out),
    "mode": lambda lib, x, out: lib.mode(x, 0, out=out),
    "cummax": lambda lib, x, out: lib.cummax(x, 1, out=out),
    "cummin": lambda lib, x, out: lib.cummin(x, 0, out=out),
    "aminmax": lambda lib, x, out: lib.aminmax(x, dim=1, out=out),
}


def _outs(lib, op):
    return (lib.empty(0), lib.empty(0, dtype=lib.float32 if op == "aminmax" else lib.int64))


@pytest.mark.parametrize("op", sorted(SELECTING_OUT))
def test_selecting_ops_take_out(op):
    fn = SELECTING_OUT[op]
    rows = [[3.0, 1.0, 2.0], [1.0, 5.0, 0.0]]
    x = ember.tensor(rows)
    outs = _outs(ember, op)
    r = fn(ember, x, outs)
    plain = fn(ember, x, None)
    for a, b, o in zip(r, plain, outs):
        assert a is o and a.dtype is b.dtype and ember.equal(a, b)
    torch = _torch()
    theirs = fn(torch, torch.tensor(rows), _outs(torch, op))
    for a, b in zip(r, theirs):
        _same(a, b)


@pytest.mark.parametrize("op", ["sum", "mean", "amax", "std", "logsumexp", "count_nonzero"])
def test_a_0_dim_integer_tensor_is_a_dim(op):
    rows = [[1.0, 2.0, 3.0], [4.0, 6.0, 9.0]]
    ours = getattr(ember, op)(ember.tensor(rows), ember.tensor(-1))
    expected = getattr(ember, op)(ember.tensor(rows), -1)
    assert ours.shape == (2,) and ember.equal(ours, expected)
    torch = _torch()
    _same(ours, getattr(torch, op)(torch.tensor(rows), torch.tensor(-1)))


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_with_nan_boundaries_bisects_as_torch(right):
    rows = [[1.0, 1.0, 2.0, 3.0, float("nan")], [0.0, 1.0, float("nan"), 3.0, 4.0]]
    values = [[3.0, 1.0, float("nan"), 2.0, 5.0], [1.0, 3.5, 0.0, float("nan"), 4.0]]
    ours = ember.searchsorted(ember.tensor(rows), ember.tensor(values), right=right)
    expected = {False: [[5, 0, 5, 2, 5], [3, 4, 3, 5, 4]],
                True: [[5, 2, 5, 5, 5], [3, 4, 3, 5, 5]]}[right]
    assert ours.tolist() == expected
    flat = ember.bucketize(ember.tensor([2.0, 3.0, 0.5, float("nan")]),
                           ember.tensor([float("nan"), 1.0, 3.0]), right=right)
    torch = _torch()
    assert torch.searchsorted(torch.tensor(rows), torch.tensor(values),
                              right=right).tolist() == expected
    assert torch.bucketize(torch.tensor([2.0, 3.0, 0.5, float("nan")]),
                           torch.tensor([float("nan"), 1.0, 3.0]),
                           right=right).tolist() == flat.tolist()


@pytest.mark.parametrize("op", ["all", "any"])
def test_all_any_of_uint8_write_a_bool_out(op):
    rows = [[1, 0], [2, 3]]
    out = ember.empty(0, dtype=ember.bool)
    r = getattr(ember, op)(ember.tensor(rows, dtype=ember.uint8), 1, out=out)
    assert r is out and out.dtype is ember.bool
    torch = _torch()
    theirs = getattr(torch, op)(torch.tensor(rows, dtype=torch.uint8), 1,
                                out=torch.empty(0, dtype=torch.bool))
    assert out.tolist() == theirs.tolist()
