"""Matrix products and ``ember.linalg`` against PyTorch: the differences found by differential
probes (values, dtypes, errors, warnings), each pinned by a plain assertion and, where torch is
installed, by the same program run with torch."""

import math
import re
import warnings

import numpy as np
import pytest

import ember
import ember.ops.linalg as _ops_linalg

LA = ember.linalg


def _summary(r):
    if isinstance(r, (tuple, list)):
        return [_summary(t) for t in r]
    if hasattr(r, "shape") and hasattr(r, "dtype") and not isinstance(r, np.ndarray):
        a = np.asarray(r.detach().cpu().tolist(), dtype=complex if r.is_complex() else float)
        return (tuple(r.shape), str(r.dtype).split(".")[-1], np.round(a, 4).tolist())
    return r


def _outcome(fn, lib):
    """``fn(lib)`` summarised (shape, dtype, values rounded), or its error (type name and
    message, library names unified)."""
    try:
        r = fn(lib)
    except Exception as exc:  # the error is what is compared
        msg = str(exc).split("\nException raised from")[0].split(" (Triggered internally")[0]
        return ("error", type(exc).__name__, msg.replace("torch", "T").replace("ember", "T"))
    return _summary(r)


def _parity(fn):
    """The same program with torch, where it is installed."""
    torch = pytest.importorskip("torch")
    assert _outcome(fn, ember) == _outcome(fn, torch)


def _raises(fn, exc, message):
    with pytest.raises(exc, match=re.escape(message)):
        fn(ember)
    _parity(fn)


# -- the _ex variants: good matrices of a batch, check_errors messages, partial factors ----

def test_inv_ex_batch_keeps_the_invertible_matrices():
    def fn(T):
        return T.linalg.inv_ex(T.stack([2 * T.eye(2), T.zeros(2, 2)]))

    inverse, info = fn(ember)
    np.testing.assert_allclose(inverse[0].numpy(), 0.5 * np.eye(2))  # was NaN
    assert info.tolist() == [0, 1]
    _parity(lambda T: (fn(T).inverse[0], fn(T).info))


def test_cholesky_ex_batch_and_lapacks_partial_factor():
    def fn(T):
        return T.linalg.cholesky_ex(T.stack([4 * T.eye(2), T.tensor([[1.0, 2.0], [2.0, 1.0]])]))

    L, info = fn(ember)
    assert info.tolist() == [0, 2]
    np.testing.assert_allclose(L[0].numpy(), 2 * np.eye(2))
    np.testing.assert_allclose(L[1].numpy(), [[1, 0], [2, -3]])  # potrf's partial factor
    _parity(fn)
    _parity(lambda T: T.linalg.cholesky_ex(T.tensor([[1.0, 2.0], [2.0, 1.0]]), upper=True))


@pytest.mark.parametrize("name,message", [
    ("inv_ex", "linalg.inv_ex: The diagonal element 2 is zero, the inversion could not be "
               "completed because the input matrix is singular."),
    ("cholesky_ex", "linalg.cholesky_ex: The factorization could not be completed because the "
                    "input is not positive-definite (the leading minor of order 1 is not "
                    "positive-definite)."),
])
def test_ex_check_errors_names_the_ex_function(name, message):
    A = [[1.0, 2.0], [2.0, 4.0]] if name == "inv_ex" else [[-1.0, 0.0], [0.0, 1.0]]
    _raises(lambda T: getattr(T.linalg, name)(T.tensor(A), check_errors=True), LA.LinAlgError,
            message)


def test_cholesky_of_nan_raises():
    _raises(lambda T: T.linalg.cholesky(T.tensor([[math.nan, 2.0], [2.0, 3.0]])), LA.LinAlgError,
            "linalg.cholesky: The factorization could not be completed because the input is not "
            "positive-definite (the leading minor of order 1 is not positive-definite).")


def test_linalg_error_is_pytorchs_class_name():
    assert LA.LinAlgError.__name__ == "_LinAlgError" and issubclass(LA.LinAlgError, RuntimeError)
    import pickle

    assert isinstance(pickle.loads(pickle.dumps(LA.LinAlgError("x"))), LA.LinAlgError)
    _parity(lambda T: T.linalg.inv(T.zeros(2, 2)))


def test_svd_of_nan_raises_linalg_error():
    fn = (lambda T: T.linalg.svdvals(T.stack([T.eye(2), T.tensor([[math.nan, 1.0],
                                                                   [1.0, 2.0]])])))
    _raises(fn, LA.LinAlgError, "linalg.svd: (Batch element 1): The algorithm failed to converge "
                                "because the input matrix contained non-finite values.")
    _parity(lambda T: T.linalg.pinv(T.tensor([[math.nan, 1.0], [1.0, 2.0]])))


def test_lu_factor_singular_is_a_plain_runtime_error():
    with pytest.raises(RuntimeError) as info:
        LA.lu_factor(ember.zeros(2, 2))
    assert not isinstance(info.value, LA.LinAlgError)
    _parity(lambda T: T.linalg.lu_factor(T.zeros(1, 3, 3)))


# -- dtype errors ---------------------------------------------------------------------------

@pytest.mark.parametrize("call,kernel", [
    (lambda T, A: T.linalg.det(A), "lu_cpu"),
    (lambda T, A: T.linalg.solve(A, A), "lu_cpu"),
    (lambda T, A: T.linalg.cholesky(A), "cholesky_cpu"),
    (lambda T, A: T.linalg.qr(A), "geqrf_cpu"),
    (lambda T, A: T.linalg.eigvalsh(A), "linalg_eigh_cpu"),
    (lambda T, A: T.linalg.svdvals(A), "linalg_svd_cpu"),
    (lambda T, A: T.linalg.cond(A), "linalg_svd_cpu"),
])
def test_half_inputs_get_the_kernels_dispatch_error(call, kernel):
    _raises(lambda T: call(T, T.eye(2, dtype=T.float16)), NotImplementedError,
            f"\"{kernel}\" not implemented for 'Half'")


def test_low_precision_messages_of_pinv_rank_and_matrix_norm():
    _raises(lambda T: T.linalg.pinv(T.eye(2, dtype=T.float16)), RuntimeError,
            "linalg.pinv(Half{[2, 2]}): expected a tensor with 2 or more dimensions of float, "
            "double, cfloat or cdouble types")
    _raises(lambda T: T.linalg.matrix_rank(T.eye(2, dtype=T.float16)), RuntimeError,
            "This function doesn't handle types other than float and double")
    _raises(lambda T: T.linalg.matrix_norm(T.eye(2, dtype=T.float16), 2), RuntimeError,
            "linalg.matrix_norm: Low precision dtypes not supported. Got Half")


def test_logdet_names_itself_in_its_errors():
    _raises(lambda T: T.logdet(T.ones(2, 2, dtype=T.int32)), RuntimeError,
            "logdet: Expected a floating point or complex tensor as input. Got Int")
    _raises(lambda T: T.logdet(T.ones(2, 3)), RuntimeError,
            "logdet: A must be batches of square matrices, but they are 2 by 3 matrices")


def test_deprecated_torch_cholesky_of_integers():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _raises(lambda T: T.cholesky(T.eye(2, dtype=T.int64)), NotImplementedError,
                "\"cholesky_cpu\" not implemented for 'Long'")


# -- eigh, pinv, matrix_rank arguments ------------------------------------------------------

def test_eigh_takes_lowercase_uplo():
    A = [[2.0, 100.0], [1.0, 2.0]]
    np.testing.assert_allclose(LA.eigvalsh(ember.tensor(A), UPLO="u").numpy(), [-98, 102])
    _parity(lambda T: T.linalg.eigh(T.tensor(A), UPLO="u").eigenvalues)
    _parity(lambda T: T.linalg.eigvalsh(T.tensor(A), "l"))


def test_pinv_positional_rcond_and_tensor_tolerances():
    A = [[1.0, 0.0], [0.0, 1e-3]]
    cut = [[1.0, 0.0], [0.0, 0.0]]
    np.testing.assert_allclose(LA.pinv(ember.tensor(A), 1e-2).numpy(), cut)
    np.testing.assert_allclose(LA.pinv(ember.tensor(A), atol=ember.tensor(1e-2)).numpy(), cut)
    r = LA.pinv(ember.tensor(A), atol=ember.tensor([1e-2, 1e-4]).reshape(2, 1, 1))
    assert r.shape == (2, 1, 1, 2, 2)
    for fn in (lambda T: T.linalg.pinv(T.tensor(A), 1e-2),
               lambda T: T.linalg.pinv(T.tensor(A), T.tensor(1e-2)),
               lambda T: T.linalg.pinv(T.tensor([[2.0, 0.0], [0.0, -1e-3]]), 1e-2, True),
               lambda T: T.linalg.pinv(T.tensor(A), atol=T.tensor([1e-2, 1e-4])),
               lambda T: T.linalg.pinv(T.tensor(A), rtol=T.tensor(0.01)),
               lambda T: T.linalg.pinv(T.tensor(A), atol=T.tensor(-1.0)),
               lambda T: T.linalg.pinv(T.tensor(A), atol=T.tensor(1 + 0j))):
        _parity(fn)
    with pytest.raises(TypeError, match=re.escape("linalg_pinv() received an invalid "
                                                  "combination of arguments")):
        LA.pinv(ember.tensor(A), 0.1, atol=0.2)
    _parity(lambda T: T.linalg.pinv(T.tensor(A), 0.1, atol=0.2))


def test_pinv_and_matrix_rank_of_empty_hermitian_inputs():
    assert LA.pinv(ember.ones(2, 0, 3), hermitian=True).shape == (2, 3, 0)
    assert LA.matrix_rank(ember.ones(2, 0, 3), hermitian=True).tolist() == [0, 0]
    _parity(lambda T: T.linalg.pinv(T.ones(0, 3), hermitian=True))
    _parity(lambda T: T.linalg.matrix_rank(T.ones(3, 0), hermitian=True))
    _parity(lambda T: T.linalg.matrix_rank(T.ones(2, 3), hermitian=True))


def test_matrix_rank_positional_tol_and_tensor_tolerances():
    A = [[1.0, 0.0], [0.0, 1e-3]]
    assert LA.matrix_rank(ember.tensor(A), 1e-2).item() == 1
    assert LA.matrix_rank(ember.eye(2), atol=ember.tensor([0.5, 2.0])).tolist() == [2, 0]
    for fn in (lambda T: T.linalg.matrix_rank(T.tensor(A), 1e-2),
               lambda T: T.linalg.matrix_rank(T.tensor(A), T.tensor(1e-2)),
               lambda T: T.linalg.matrix_rank(T.tensor([[1.0, 0.0], [0.0, -1e-3]]), 1e-4, True),
               lambda T: T.linalg.matrix_rank(T.ones(2, 3, 3), rtol=T.tensor([0.1, 2.0]))):
        _parity(fn)
    with pytest.raises(TypeError, match=re.escape("linalg_matrix_rank() received an invalid "
                                                  "combination of arguments")):
        LA.matrix_rank(ember.tensor(A), 1e-2, atol=1.0)


# -- lstsq ----------------------------------------------------------------------------------

@pytest.mark.parametrize("a,b,message", [
    ((3, 2), (3, 1, "float64"), "torch.linalg.lstsq: Expected input and other to have the same "
                                "dtype, but got input's dtype Float and other's dtype Double"),
    ((3, 2, "int64"), (3, 1, "int64"), "This function doesn't handle types other than float "
                                       "and double"),
    ((3,), (3,), "torch.linalg.lstsq: input must have at least 2 dimensions."),
    ((3, 2), (), "torch.linalg.lstsq: other must have at least 1 dimension."),
    ((3, 2), (4, 3, 1), "torch.linalg.lstsq: input.dim() must be greater or equal to "
                        "other.dim() and (input.dim() - other.dim()) <= 1"),
    ((3, 2), (2,), "torch.linalg.lstsq: input.size(-2) should match other.size(-1)"),
    ((2, 3, 2), (3, 1), "The size of tensor a (2) must match the size of tensor b (3) at "
                        "non-singleton dimension 0"),
    ((2, 3, 2), (3, 4), "The size of tensor a (2) must match the size of tensor b (3) at "
                        "non-singleton dimension 0"),
])
def test_lstsq_checks(a, b, message):
    def make(T, spec):
        if not spec:
            return T.tensor(1.0)
        dims = [s for s in spec if isinstance(s, int)]
        dt = [getattr(T, s) for s in spec if isinstance(s, str)]
        return T.ones(*dims, dtype=dt[0] if dt else None)

    _raises(lambda T: T.linalg.lstsq(make(T, a), make(T, b)), RuntimeError, message)


def test_lstsq_residuals_dtype_shape_and_gels_rank_error():
    A = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    r = LA.lstsq(ember.tensor(A, dtype=ember.complex64), ember.ones(3, 1, dtype=ember.complex64),
                 driver="gelsd")
    assert r.residuals.dtype == ember.float32  # was complex64
    r = LA.lstsq(ember.tensor(A), ember.tensor([1.0, 2.0, 4.0]), driver="gelsd")
    assert r.residuals.shape == (1,)  # PyTorch keeps the vector's column
    for fn in (lambda T: T.linalg.lstsq(T.tensor(A, dtype=T.complex64),
                                        T.ones(3, 1, dtype=T.complex64), driver="gelsd"),
               lambda T: T.linalg.lstsq(T.tensor(A), T.tensor([1.0, 2.0, 4.0]), driver="gels"),
               lambda T: T.linalg.lstsq(T.tensor(A).expand(2, 3, 2), T.ones(2, 3),
                                        driver="gelsd")):
        _parity(fn)
    _raises(lambda T: T.linalg.lstsq(T.ones(3, 2), T.ones(3, 1), driver="gels"), LA.LinAlgError,
            "torch.linalg.lstsq: The least squares solution could not be computed because the "
            "input matrix does not have full rank (error code: 2).")


@pytest.mark.parametrize("a_shape, b_shape, rank_shape", [
    ((1, 3, 3), (2, 3, 3), (1,)), ((2, 3, 3), (1, 3, 3), (2,)), ((3, 3), (3, 2), ()),
    ((2, 1, 3, 3), (1, 3, 3, 2), (2, 1)), ((2, 3, 3), (2, 3, 2), (2,))])
@pytest.mark.parametrize("driver", ["gelsy", "gelsd", "gelss"])
def test_lstsq_rank_has_the_batch_shape_of_a(a_shape, b_shape, rank_shape, driver):
    # PyTorch's rank follows A's batch shape, not the one A and B broadcast to
    ember.manual_seed(0)
    A = ember.randn(*a_shape, dtype=ember.float64)
    A[..., 0] = 0  # rank 2 everywhere
    r = LA.lstsq(A, ember.randn(*b_shape, dtype=ember.float64), driver=driver)
    assert r.rank.shape == rank_shape and r.rank.dtype == ember.int64
    assert (r.rank == 2).all()


def test_lstsq_out():
    out = tuple(ember.empty(0) for _ in range(2)) + (ember.empty(0, dtype=ember.int64),
                                                     ember.empty(0))
    r = LA.lstsq(ember.eye(2), ember.ones(2, 1), out=out)
    assert r[0] is out[0] and out[0].tolist() == [[1.0], [1.0]]
    _parity(lambda T: T.linalg.lstsq(T.eye(2), T.ones(2, 1),
                                     out=(T.empty(0), T.empty(0), T.empty(0, dtype=T.int64),
                                          T.empty(0))))


# -- products -------------------------------------------------------------------------------

@pytest.mark.parametrize("fn,expected", [
    (lambda T, i, a: T.addmm(i, a, a, beta=0.5), 2),
    (lambda T, i, a: T.addmm(i, a, a, beta=2.7, alpha=2.7), 10),
    (lambda T, i, a: T.addmv(i[0], a, a[0], alpha=1.5), 5),
    (lambda T, i, a: T.baddbmm(i[None], a[None], a[None], beta=-0.5), 2),
    (lambda T, i, a: T.addbmm(i, a[None], a[None], beta=1.5), 5),
])
def test_add_products_of_integers_truncate_float_scalars(fn, expected):
    def run(T):
        return fn(T, T.full((2, 2), 3), T.ones(2, 2, dtype=T.int64))

    r = run(ember)  # was a crash (UFuncTypeError) or a wrong value
    assert r.dtype == ember.int64 and r.flatten()[0].item() == expected
    _parity(run)


def test_add_product_takes_0dim_tensor_scalars():
    r = ember.addmm(ember.ones(2, 2), ember.ones(2, 2), ember.ones(2, 2), alpha=ember.tensor(2.0))
    assert r.tolist() == [[5.0, 5.0], [5.0, 5.0]]
    _parity(lambda T: T.addmm(T.ones(2, 3), T.ones(2, 3), T.ones(3, 3), beta=0.5,
                              alpha=T.tensor(2.0)))


@pytest.mark.parametrize("fn,message", [
    (lambda T: T.mm(T.ones(1, 1), [[1.0]]), "mm(): argument 'mat2' (position 2) must be Tensor, "
                                            "not list"),
    (lambda T: T.mm([[1.0]], T.ones(1, 1)), "mm(): argument 'input' (position 1) must be Tensor, "
                                            "not list"),
    (lambda T: T.bmm(T.ones(1, 1, 1), 3), "bmm(): argument 'mat2' (position 2) must be Tensor, "
                                          "not int"),
    (lambda T: T.mv(T.ones(1, 1), (1,)), "mv(): argument 'vec' (position 2) must be Tensor, not "
                                         "tuple"),
    (lambda T: T.dot(T.ones(1), 2.0), "dot(): argument 'tensor' (position 2) must be Tensor, not "
                                      "float"),
    (lambda T: T.vdot(T.ones(1), 2.0), "vdot(): argument 'other' (position 2) must be Tensor, not "
                                       "float"),
    (lambda T: T.matmul([1.0], T.ones(1)), "matmul(): argument 'input' (position 1) must be "
                                           "Tensor, not list"),
    (lambda T: T.addmm(T.ones(2, 2), [[1.0]], T.ones(1, 1)), "addmm(): argument 'mat1' "
                                                             "(position 2) must be Tensor, not "
                                                             "list"),
])
def test_products_of_non_tensors_raise_type_error(fn, message):
    _raises(fn, TypeError, message)


@pytest.mark.parametrize("fn,exc,message", [
    (lambda T: T.addmv(T.ones(2, 2), T.ones(2, 3), T.ones(3)), RuntimeError,
     "vector + matrix @ vector expected, got 2, 2, 1"),
    (lambda T: T.matmul(T.ones(2, 3, dtype=T.bool), T.ones(3, dtype=T.bool)), NotImplementedError,
     "\"addmv_impl_cpu\" not implemented for 'Bool'"),
    (lambda T: T.vdot(T.ones(3), T.ones(3, dtype=T.float64)), RuntimeError,
     "dot : expected both vectors to have same dtype, but found Float and Double"),
    (lambda T: T.tensordot(T.ones(2, 3), T.ones(3, 2), dims=3), RuntimeError,
     "tensordot expects dims < ndim_a or ndim_b, but got dims=3"),
    (lambda T: T.tensordot(T.ones(2, 3), T.ones(3, 2), dims=1.5), RuntimeError,
     "tensordot expects dims to be int or tuple[list[int], list[int]] or list[list[int]] "
     "containing two lists, but got dims=1.5"),
    (lambda T: T.einsum("ij->ji"), ValueError,
     "einsum(): must specify the equation string and at least one operand, or at least one "
     "operand and its subscripts list"),
    (lambda T: T.linalg.cross(T.ones(2, 3), T.ones(2, 3), dim=5), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 5)"),
    (lambda T: T.cross(T.ones(2, 3, dtype=T.bool), T.ones(2, 3, dtype=T.bool), dim=1),
     NotImplementedError, "\"cross\" not implemented for 'Bool'"),
    (lambda T: T.linalg.matrix_power(T.eye(2), 2.0), TypeError,
     "linalg_matrix_power(): argument 'n' (position 2) must be int, not float"),
    (lambda T: T.matrix_power(T.eye(2), 2.0), TypeError,
     "matrix_power(): argument 'n' (position 2) must be int, not float"),
    (lambda T: T.lu_unpack(T.eye(2), T.tensor([1, 2])), RuntimeError,
     "torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype.\n"
     "Note: this function is intended to be used with the output produced by "
     "torch.linalg.lu_factor"),
])
def test_product_errors(fn, exc, message):
    _raises(fn, exc, message)


def test_chain_matmul_of_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _raises(lambda T: T.chain_matmul(), RuntimeError,
                "chain_matmul(): Expected one or more matrices")


def test_tensordot_dims_as_a_tensor():
    a, b = ember.ones(2, 3), ember.ones(3, 2)
    assert ember.tensordot(a, b, dims=ember.tensor(1)).tolist() == [[3.0, 3.0], [3.0, 3.0]]
    _parity(lambda T: T.tensordot(T.ones(2, 3), T.ones(3, 2), dims=T.tensor(1)))
    _parity(lambda T: T.tensordot(T.ones(2, 3), T.ones(3, 2), dims=T.tensor([[1], [0]])))


def test_einsum_sublist_format():
    x = ember.arange(6.0).reshape(2, 3)
    assert ember.einsum(x, [0, 1], [0]).tolist() == [3.0, 12.0]
    _parity(lambda T: T.einsum(T.arange(6.0).reshape(2, 3), [0, 1], T.ones(3, 4), [1, 2], [0, 2]))
    _parity(lambda T: T.einsum(T.ones(2, 3, 4), [Ellipsis, 27], [Ellipsis]))


# -- deprecation warnings: once a process, as PyTorch's TORCH_WARN_ONCE ----------------------

@pytest.mark.parametrize("fn,start", [
    (lambda T: T.cholesky(T.eye(2)), "torch.cholesky is deprecated in favor of "
                                     "torch.linalg.cholesky"),
    (lambda T: T.qr(T.eye(2)), "torch.qr is deprecated in favor of torch.linalg.qr"),
    (lambda T: T.cross(T.ones(3), T.ones(3)), "Using torch.cross without specifying the dim arg"),
    (lambda T: T.chain_matmul(T.eye(2)), "torch.chain_matmul is deprecated"),
    (lambda T: T.triangular_solve(T.ones(2, 1), T.eye(2)), "torch.triangular_solve is "
                                                           "deprecated"),
    (lambda T: T.lu(T.eye(2)), "torch.lu is deprecated"),
], ids=["cholesky", "qr", "cross", "chain_matmul", "triangular_solve", "lu"])
def test_deprecation_warnings_once(fn, start, monkeypatch):
    monkeypatch.setattr(_ops_linalg, "_WARNED_ONCE", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn(ember)
        fn(ember)
    assert len(caught) == 1 and str(caught[0].message).startswith(start)


# -- norms ----------------------------------------------------------------------------------

@pytest.mark.parametrize("fn,message", [
    (lambda T: T.linalg.vector_norm(T.arange(4.0), dtype=T.int32),
     "linalg.vector_norm: dtype should be floating point or complex, but got Int"),
    (lambda T: T.linalg.vector_norm(T.tensor([3 + 4j]), dtype=T.float32),
     "linalg.vector_norm: dtype should be complex for complex inputs, but got Float"),
    (lambda T: T.linalg.vector_norm(T.ones(2), dtype=T.complex64),
     "linalg.vector_norm: dtype should be real for real inputs, but got ComplexFloat"),
    (lambda T: T.linalg.matrix_norm(T.ones(2, 2), dtype=T.int64),
     "linalg.matrix_norm: dtype should be floating point or complex, but got Long"),
    (lambda T: T.linalg.vector_norm(T.ones(0, 3), float("inf"), dim=(1, 0)),
     "linalg.vector_norm cannot compute the inf norm on the dimension 0because this dimension "
     "is empty and the operation does not have an identity"),
    (lambda T: T.linalg.vector_norm(T.ones(3), 1j),
     "linalg.vector_norm: Expected a non-complex scalar as the order of norm."),
])
def test_vector_norm_errors(fn, message):
    _raises(fn, RuntimeError, message)


def test_vector_norm_orders_pytorch_accepts():
    assert LA.vector_norm(ember.ones(3), ember.tensor(2.0)).item() == pytest.approx(math.sqrt(3))
    assert LA.vector_norm(ember.ones(3), True).item() == 3.0
    _parity(lambda T: T.linalg.vector_norm(T.ones(3), T.tensor(2.0)))
    _parity(lambda T: T.linalg.vector_norm(T.ones(3), True))
    _parity(lambda T: T.linalg.vector_norm(T.ones(3, 0), float("-inf"), dim=0))


@pytest.mark.parametrize("shape,ord,keepdim", [
    ((3, 0), -1, False), ((3, 0), -1, True), ((0, 3), -math.inf, False), ((0, 0), -2, False),
    ((2, 3, 0), -1, False), ((2, 0, 3), -math.inf, False),
])
def test_matrix_norm_min_orders_of_empty_matrices(shape, ord, keepdim):
    with pytest.raises(IndexError, match=re.escape("amin(): Expected reduction dim")):
        LA.matrix_norm(ember.ones(*shape), ord, keepdim=keepdim)  # was 0
    _parity(lambda T: T.linalg.matrix_norm(T.ones(*shape), ord, keepdim=keepdim))


def test_matrix_norm_dim_must_be_a_sequence():
    with pytest.raises(TypeError, match=re.escape("linalg_matrix_norm() received an invalid "
                                                  "combination of arguments - got (Tensor, "
                                                  "dim=int)")):
        LA.matrix_norm(ember.ones(2, 2, 3), dim=0)
    _parity(lambda T: T.linalg.matrix_norm(T.ones(2, 2, 3), dim=0))


# -- cond -----------------------------------------------------------------------------------

@pytest.mark.parametrize("fn,message", [
    (lambda T: T.linalg.cond(T.ones(0, 3), "fro"),
     "linalg.cond(ord=fro): A must be batches of square matrices, but they are 0 by 3 matrices"),
    (lambda T: T.linalg.cond(T.ones(2, 3), "foo"),
     "linalg.cond(ord=foo): A must be batches of square matrices, but they are 2 by 3 matrices"),
    (lambda T: T.linalg.cond(T.ones(3), "nuc"),
     "linalg.cond(ord=nuc): The input tensor A must have at least 2 dimensions."),
    (lambda T: T.linalg.cond(T.ones(2, 2, dtype=T.int64), "nuc"),
     "linalg.svd: Expected a floating point or complex tensor as input. Got Long"),
])
def test_cond_errors(fn, message):
    _raises(fn, RuntimeError, message)


def test_cond_of_empty_integers_keeps_the_dtype():
    assert LA.cond(ember.ones(0, 0, dtype=ember.int64)).dtype == ember.int64
    _parity(lambda T: T.linalg.cond(T.ones(0, 0, dtype=T.int64), 1))


# -- out= -----------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda T, o: T.linalg.inv(T.eye(2), out=o),
    lambda T, o: T.linalg.det(T.eye(2), out=o),
    lambda T, o: T.linalg.solve(T.eye(2), T.ones(2), out=o),
    lambda T, o: T.linalg.cholesky(T.eye(2), out=o),
    lambda T, o: T.linalg.eigvalsh(T.eye(2), out=o),
    lambda T, o: T.linalg.svdvals(T.eye(2), out=o),
    lambda T, o: T.linalg.vector_norm(T.eye(2), out=o),
    lambda T, o: T.linalg.cross(T.ones(3), T.ones(3), out=o),
    lambda T, o: T.inverse(T.eye(2), out=o),
])
def test_linalg_out_must_have_the_results_dtype(fn):
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got "
                                           "double instead"):
        fn(ember, ember.empty(0, dtype=ember.float64))  # was cast into the float64 out
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float"):
        fn(torch, torch.empty(0, dtype=torch.float64))
