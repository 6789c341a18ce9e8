// Issue 14's second batch of the C++ op table, part 4: linear algebra. The registry's
// torch.<name> spellings (inverse, det, slogdet, logdet, cholesky*, qr, svd, lu*, geqrf,
// orgqr, ormqr, triangular_solve, matrix_exp, matrix_power, pinverse) and ember.linalg's
// functions (linalg.inv, solve, eigh, svd, lstsq, norms, ...), which ember.export records as
// "linalg.<name>".
//
// The factorizations run per matrix in double, in LAPACK's conventions as Python Ember's
// kernels follow them (getrf's partial pivoting and 1-based int32 pivots, geqr2's Householder
// reflectors with beta = -sign(alpha) * norm, potrf's lower factor), then round once to the
// input's dtype. The SVD and the symmetric eigendecomposition call LAPACK's gesdd and syevd
// in the input's precision when the library has OpenBLAS (as NumPy does, so the singular and
// eigen vectors come with the same signs); without it, one-sided / cyclic Jacobi in double
// (the same factorization, its vectors' signs possibly LAPACK's opposite). Products go through
// the library's matmul.
//
// Complex matrices: the LU family (solve, solve_ex, inv, inv_ex, inverse, det, slogdet, logdet)
// runs the same getrf in complex128 (pivots by |re| + |im|, as izamax), rounded once; the
// SVD calls cgesdd / zgesdd, or without LAPACK one-sided Jacobi on complex columns (vectors
// equal to LAPACK's up to a phase per singular pair); singular values, log|det| and the
// matrix norms are real.
#include <algorithm>
#include <cmath>
#include <complex>
#include <functional>
#include <type_traits>
#include <limits>
#include <numeric>
#include <sstream>

#include "ember/complex.h"
#include "ember/error.h"
#include "jit/ops_common.h"

#ifdef EMBER_HAVE_OPENBLAS
extern "C" {
// LAPACKE of scipy-openblas32 (32-bit integers; the symbols carry the scipy_ prefix)
int scipy_LAPACKE_sgesdd(int layout, char jobz, int m, int n, float* a, int lda, float* s, float* u, int ldu, float* vt,
                         int ldvt);
int scipy_LAPACKE_dgesdd(int layout, char jobz, int m, int n, double* a, int lda, double* s, double* u, int ldu,
                         double* vt, int ldvt);
int scipy_LAPACKE_cgesdd(int layout, char jobz, int m, int n, std::complex<float>* a, int lda, float* s,
                         std::complex<float>* u, int ldu, std::complex<float>* vt, int ldvt);
int scipy_LAPACKE_zgesdd(int layout, char jobz, int m, int n, std::complex<double>* a, int lda, double* s,
                         std::complex<double>* u, int ldu, std::complex<double>* vt, int ldvt);
int scipy_LAPACKE_ssyevd(int layout, char jobz, char uplo, int n, float* a, int lda, float* w);
int scipy_LAPACKE_dsyevd(int layout, char jobz, char uplo, int n, double* a, int lda, double* w);
int scipy_LAPACKE_dgeev(int layout, char jobvl, char jobvr, int n, double* a, int lda, double* wr, double* wi,
                        double* vl, int ldvl, double* vr, int ldvr);
// lapack_complex_double is a (real, imaginary) pair, as std::complex<double> lays it out
// LAPACK's unblocked Bunch-Kaufman factorization and its solve (Fortran; column-major)
void scipy_dsytf2_(const char* uplo, const int* n, double* a, const int* lda, int* ipiv, int* info, std::size_t uplo_len);
void scipy_dsytrs_(const char* uplo, const int* n, const int* nrhs, const double* a, const int* lda, const int* ipiv,
                   double* b, const int* ldb, int* info, std::size_t uplo_len);
// the same for complex matrices: symmetric (zsytf2 / zsytrs) and Hermitian (zhetf2 / zhetrs)
void scipy_zsytf2_(const char* uplo, const int* n, void* a, const int* lda, int* ipiv, int* info, std::size_t uplo_len);
void scipy_zhetf2_(const char* uplo, const int* n, void* a, const int* lda, int* ipiv, int* info, std::size_t uplo_len);
void scipy_zsytrs_(const char* uplo, const int* n, const int* nrhs, const void* a, const int* lda, const int* ipiv,
                   void* b, const int* ldb, int* info, std::size_t uplo_len);
void scipy_zhetrs_(const char* uplo, const int* n, const int* nrhs, const void* a, const int* lda, const int* ipiv,
                   void* b, const int* ldb, int* info, std::size_t uplo_len);
int scipy_LAPACKE_zgeev(int layout, char jobvl, char jobvr, int n, void* a, int lda, void* w, void* vl, int ldvl,
                        void* vr, int ldvr);
}
#endif

namespace ember::jit::detail {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string type_name_of(const Tensor& t) { return std::string(scalar_type_name(t.scalar_type())); }

// ------------------------------------------------------------------------- checks

void check_dims(const Tensor& A, const std::string& fn, const char* name = "A") {
    if (A.dim() < 2) throw Error(fn + ": The input tensor " + name + " must have at least 2 dimensions.");
}

void check_square(const Tensor& A, const std::string& fn) {
    if (A.size(-1) != A.size(-2)) {
        throw Error((fn.empty() ? "" : fn + ": ") + "A must be batches of square matrices, but they are " +
                    std::to_string(A.size(-2)) + " by " + std::to_string(A.size(-1)) + " matrices");
    }
}

void check_float(const Tensor& A, const std::string& fn) {
    if (!A.is_floating_point() && !A.is_complex()) {
        throw Error(fn + ": Expected a floating point or complex tensor as input. Got " + type_name_of(A));
    }
    if (A.scalar_type() == kHalf) throw Error(fn + ": Low precision dtypes not supported. Got " + type_name_of(A));
}

void check_matrix(const Tensor& A, const std::string& fn, bool square = false) {
    check_dims(A, fn);
    if (square) check_square(A, fn);
    check_float(A, fn);
}

void kernel_dtype(const Tensor& A, const std::string& kernel) {
    if (A.scalar_type() != kFloat && A.scalar_type() != kDouble) {
        throw NotImplementedError("\"" + kernel + "\" not implemented for '" + type_name_of(A) + "'");
    }
}

std::string batch_prefix(const Tensor& A, int64_t index) {
    return A.dim() > 2 ? "(Batch element " + std::to_string(index) + "): " : "";
}

// ------------------------------------------------------------------------- batches of matrices

using cdouble = std::complex<double>;

// The matrices of a (batch of) matrix, row-major, as S: double, or complex128 for complex
// tensors (the complex kernels below are the real ones' templates).
template <typename S>
struct BatchOf {
    Shape lead;
    int64_t m = 0, n = 0, count = 0;
    std::vector<S> v;
    S* at(int64_t b) { return v.data() + b * m * n; }
    const S* at(int64_t b) const { return v.data() + b * m * n; }
};
using Batch = BatchOf<double>;

template <typename S>
constexpr ScalarType work_type() {
    return std::is_same_v<S, double> ? kDouble : kComplexDouble;
}

template <typename S = double>
BatchOf<S> batch_of(const Tensor& t) {
    if (std::is_same_v<S, double> && t.is_complex()) {
        // a real kernel never reads a complex tensor's real parts alone
        throw NotImplementedError("ember::jit: a real linear-algebra kernel got a " + type_name_of(t) + " tensor");
    }
    BatchOf<S> b;
    b.lead.assign(t.sizes().begin(), t.sizes().end() - 2);
    b.m = t.size(-2);
    b.n = t.size(-1);
    b.count = 1;
    for (int64_t s : b.lead) b.count *= s;
    Tensor c = t.to(work_type<S>()).contiguous();
    b.v.assign(c.data_ptr<S>(), c.data_ptr<S>() + c.numel());
    return b;
}

template <typename S = double>
BatchOf<S> empty_batch(const Shape& lead, int64_t m, int64_t n) {
    BatchOf<S> b;
    b.lead = lead;
    b.m = m;
    b.n = n;
    b.count = 1;
    for (int64_t s : lead) b.count *= s;
    b.v.assign(static_cast<std::size_t>(b.count * m * n), S(0));
    return b;
}

template <typename S>
Tensor tensor_of(const BatchOf<S>& b, ScalarType dt) {
    Shape s = b.lead;
    s.push_back(b.m);
    s.push_back(b.n);
    Tensor t = ember::empty(s, work_type<S>());
    std::copy(b.v.begin(), b.v.end(), t.data_ptr<S>());
    return t.to(dt);
}

template <typename S>
Tensor vector_tensor(const Shape& shape, const std::vector<S>& v, ScalarType dt) {
    Tensor t = ember::empty(shape, work_type<S>());
    std::copy(v.begin(), v.end(), t.data_ptr<S>());
    return t.to(dt);
}

// a complex tensor's real counterpart (float for complex64); real dtypes as they are
ScalarType real_dtype(const Tensor& t) { return t.is_complex() ? to_real_type(t.scalar_type()) : t.scalar_type(); }

// A tensor of NaNs like t (complex: NaN + NaN i, as PyTorch's failed complex solves)
Tensor nan_like(const Tensor& t) {
    const Tensor r = ember::full(shape_of(t), kNaN, real_dtype(t));
    return t.is_complex() ? ember::complex(r, r) : r;
}

template <typename S>
S nan_of() {
    if constexpr (std::is_same_v<S, double>) return kNaN;
    else return S(kNaN, kNaN);
}

inline double conj_of(double x) { return x; }
inline cdouble conj_of(cdouble z) { return std::conj(z); }
inline double abs2(double x) { return x * x; }
inline double abs2(cdouble z) { return std::norm(z); }
// the pivot's size as LAPACK's i?amax measures it: |x|, |re| + |im| for complex
inline double pivot_size(double x) { return std::abs(x); }
inline double pivot_size(cdouble z) { return std::abs(z.real()) + std::abs(z.imag()); }

// ------------------------------------------------------------------------- LU

// getrf (unblocked, LAPACK's conventions): a = P L U in place, 1-based pivots; returns info
// (the 1-based index of the first zero on U's diagonal, 0 when there is none).
template <typename S>
int32_t getrf(S* a, int64_t m, int64_t n, int32_t* piv, bool pivot) {
    const int64_t k = std::min(m, n);
    int32_t info = 0;
    for (int64_t j = 0; j < k; ++j) {
        int64_t p = j;
        if (pivot) {
            double best = pivot_size(a[j * n + j]);
            for (int64_t i = j + 1; i < m; ++i) {
                if (pivot_size(a[i * n + j]) > best) {  // the first largest, as i?amax
                    best = pivot_size(a[i * n + j]);
                    p = i;
                }
            }
            if (p != j) {
                for (int64_t c = 0; c < n; ++c) std::swap(a[j * n + c], a[p * n + c]);
            }
        }
        piv[j] = static_cast<int32_t>(p + 1);
        const S d = a[j * n + j];
        if (d == S(0) && info == 0) info = static_cast<int32_t>(j + 1);
        if (j + 1 == m) continue;
        const S scale = pivot && d == S(0) ? S(1) : S(1) / d;
        for (int64_t i = j + 1; i < m; ++i) a[i * n + j] *= scale;
        for (int64_t i = j + 1; i < m; ++i) {
            const S l = a[i * n + j];
            for (int64_t c = j + 1; c < n; ++c) a[i * n + c] -= l * a[j * n + c];
        }
    }
    return info;
}

// The row order of P^T A for LAPACK pivots.
std::vector<int64_t> permutation_order(const int32_t* piv, int64_t k, int64_t m) {
    std::vector<int64_t> perm(static_cast<std::size_t>(m));
    std::iota(perm.begin(), perm.end(), 0);
    for (int64_t i = 0; i < k; ++i) std::swap(perm[static_cast<std::size_t>(i)], perm[static_cast<std::size_t>(piv[i] - 1)]);
    return perm;
}

// Solves op(T) X = B in place for a triangular n x n T (row-major), B n x r.
template <typename S>
void trsm(const S* T, int64_t n, S* B, int64_t r, bool upper, bool unit, bool transpose) {
    // op(T) upper <=> (upper != transpose): back substitution
    const bool back = upper != transpose;
    auto t = [&](int64_t i, int64_t j) { return transpose ? T[j * n + i] : T[i * n + j]; };
    for (int64_t c = 0; c < r; ++c) {
        if (back) {
            for (int64_t i = n - 1; i >= 0; --i) {
                S s = B[i * r + c];
                for (int64_t j = i + 1; j < n; ++j) s -= t(i, j) * B[j * r + c];
                B[i * r + c] = unit ? s : s / t(i, i);
            }
        } else {
            for (int64_t i = 0; i < n; ++i) {
                S s = B[i * r + c];
                for (int64_t j = 0; j < i; ++j) s -= t(i, j) * B[j * r + c];
                B[i * r + c] = unit ? s : s / t(i, i);
            }
        }
    }
}

// X = A^{-1} B (or A^{-T} B) from A's LU factors, B n x r in place.
template <typename S>
void lu_solve_inplace(const S* LU, const int32_t* piv, int64_t n, S* B, int64_t r, bool transpose) {
    if (!transpose) {
        for (int64_t i = 0; i < n; ++i) {
            const int64_t p = piv[i] - 1;
            if (p != i) for (int64_t c = 0; c < r; ++c) std::swap(B[i * r + c], B[p * r + c]);
        }
        trsm(LU, n, B, r, false, true, false);
        trsm(LU, n, B, r, true, false, false);
    } else {
        trsm(LU, n, B, r, true, false, true);
        trsm(LU, n, B, r, false, true, true);
        for (int64_t i = n - 1; i >= 0; --i) {
            const int64_t p = piv[i] - 1;
            if (p != i) for (int64_t c = 0; c < r; ++c) std::swap(B[i * r + c], B[p * r + c]);
        }
    }
}

template <typename S>
struct LuResultOf {
    BatchOf<S> lu;
    std::vector<int32_t> piv;  // count * min(m, n)
    std::vector<int32_t> info;
};
using LuResult = LuResultOf<double>;

template <typename S = double>
LuResultOf<S> lu_factor(const Tensor& A, bool pivot) {
    LuResultOf<S> r{batch_of<S>(A), {}, {}};
    const int64_t k = std::min(r.lu.m, r.lu.n);
    r.piv.assign(static_cast<std::size_t>(r.lu.count * k), 0);
    r.info.assign(static_cast<std::size_t>(r.lu.count), 0);
    for (int64_t b = 0; b < r.lu.count; ++b) {
        r.info[static_cast<std::size_t>(b)] = getrf(r.lu.at(b), r.lu.m, r.lu.n, r.piv.data() + b * k, pivot);
    }
    return r;
}

Tensor int_tensor(const Shape& shape, const std::vector<int32_t>& v) {
    Tensor t = ember::empty(shape, kInt);
    std::copy(v.begin(), v.end(), t.data_ptr<int32_t>());
    return t;
}

template <typename S>
Tensor pivots_tensor(const LuResultOf<S>& r) {
    Shape s = r.lu.lead;
    s.push_back(std::min(r.lu.m, r.lu.n));
    return int_tensor(s, r.piv);
}

template <typename S>
Tensor inverse_impl(const Tensor& A, const std::string& fn, bool raise, std::vector<int32_t>* infos) {
    LuResultOf<S> f = lu_factor<S>(A, true);
    const int64_t n = f.lu.n;
    BatchOf<S> out = empty_batch<S>(f.lu.lead, n, n);
    for (int64_t b = 0; b < f.lu.count; ++b) {
        const int32_t info = f.info[static_cast<std::size_t>(b)];
        if (info && raise) {
            throw Error(fn + ": " + batch_prefix(A, b) + "The diagonal element " + std::to_string(info) +
                        " is zero, the inversion could not be completed because the input matrix is singular.");
        }
        S* o = out.at(b);
        if (info) {
            std::fill(o, o + n * n, nan_of<S>());
            continue;
        }
        for (int64_t i = 0; i < n; ++i) o[i * n + i] = 1;
        lu_solve_inplace(f.lu.at(b), f.piv.data() + b * n, n, o, n, false);
    }
    if (infos) *infos = f.info;
    return tensor_of(out, A.scalar_type());
}

// A^{-1} of each matrix by pivoted LU in double (complex128 for complex A), rounded once.
Tensor inverse_of(const Tensor& A, const std::string& fn, bool raise, std::vector<int32_t>* infos = nullptr) {
    if (A.is_complex()) return inverse_impl<cdouble>(A, fn, raise, infos);
    return inverse_impl<double>(A, fn, raise, infos);
}

// (sign, log|det|, det) of each matrix from its LU factors: sign is +-1 (0 when singular) for
// real matrices, det / |det| for complex ones, as PyTorch's; det = sign * exp(log|det|), as
// NumPy's.
template <typename S>
struct Slogdet {
    std::vector<S> sign, det;
    std::vector<double> logabs;
};

template <typename S>
Slogdet<S> slogdet_of(const Tensor& A) {
    LuResultOf<S> f = lu_factor<S>(A, true);
    const int64_t n = f.lu.n;
    const std::size_t count = static_cast<std::size_t>(f.lu.count);
    Slogdet<S> r{std::vector<S>(count, S(1)), std::vector<S>(count, S(1)), std::vector<double>(count, 0.0)};
    for (int64_t b = 0; b < f.lu.count; ++b) {
        S s = 1;
        double l = 0;
        const S* a = f.lu.at(b);
        for (int64_t i = 0; i < n; ++i) {
            const S v = a[i * n + i];
            if (f.piv[static_cast<std::size_t>(b * n + i)] != i + 1) s = -s;
            const double size = std::abs(v);
            if (size != 0) s *= v / size;  // the sign of a real v; its phase for a complex one
            l += std::log(size);
        }
        if (f.info[static_cast<std::size_t>(b)]) {
            s = 0;
            l = -kInf;
        }
        r.sign[static_cast<std::size_t>(b)] = s;
        r.logabs[static_cast<std::size_t>(b)] = l;
        r.det[static_cast<std::size_t>(b)] = s * std::exp(l);
    }
    return r;
}

// ------------------------------------------------------------------------- Cholesky

// potrf (lower): returns the 1-based order of the first leading minor that is not
// positive-definite, 0 on success; the upper triangle is zeroed.
int64_t potrf(double* a, int64_t n) {
    for (int64_t k = 0; k < n; ++k) {
        double d = a[k * n + k];
        for (int64_t j = 0; j < k; ++j) d -= a[k * n + j] * a[k * n + j];
        if (!(d > 0)) return k + 1;
        a[k * n + k] = std::sqrt(d);
        for (int64_t i = k + 1; i < n; ++i) {
            double s = a[i * n + k];
            for (int64_t j = 0; j < k; ++j) s -= a[i * n + j] * a[k * n + j];
            a[i * n + k] = s / a[k * n + k];
        }
    }
    for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = i + 1; j < n; ++j) a[i * n + j] = 0;
    }
    return 0;
}

Batch transposed(const Batch& b) {
    Batch t = empty_batch(b.lead, b.n, b.m);
    for (int64_t k = 0; k < b.count; ++k) {
        for (int64_t i = 0; i < b.m; ++i) {
            for (int64_t j = 0; j < b.n; ++j) t.at(k)[j * b.m + i] = b.at(k)[i * b.n + j];
        }
    }
    return t;
}

Tensor cholesky(const Tensor& A, bool upper, const std::string& fn, bool raise, std::vector<int32_t>* infos = nullptr) {
    check_matrix(A, fn, true);
    Batch b = batch_of(A);
    if (infos) infos->assign(static_cast<std::size_t>(b.count), 0);
    for (int64_t k = 0; k < b.count; ++k) {
        const int64_t order = potrf(b.at(k), b.n);
        if (order && raise) {
            throw Error(fn + ": " + batch_prefix(A, k) + "The factorization could not be completed because the input is "
                        "not positive-definite (the leading minor of order " + std::to_string(order) +
                        " is not positive-definite).");
        }
        if (order) {
            std::fill(b.at(k), b.at(k) + b.n * b.n, kNaN);
            (*infos)[static_cast<std::size_t>(k)] = static_cast<int32_t>(order);
        }
    }
    return tensor_of(upper ? transposed(b) : b, A.scalar_type());
}

// ------------------------------------------------------------------------- Householder QR

// geqr2: Householder QR of an m x n matrix in place (LAPACK's format); tau gets min(m, n).
void geqr2(double* a, int64_t m, int64_t n, double* tau) {
    const int64_t k = std::min(m, n);
    for (int64_t j = 0; j < k; ++j) {
        const double alpha = a[j * n + j];
        double xnorm = 0;
        for (int64_t i = j + 1; i < m; ++i) xnorm += a[i * n + j] * a[i * n + j];
        xnorm = std::sqrt(xnorm);
        if (xnorm == 0) {  // dlarfg: H = I
            tau[j] = 0;
            continue;
        }
        const double beta = -std::copysign(std::hypot(alpha, xnorm), alpha);
        const double t = (beta - alpha) / beta;
        const double scale = 1 / (alpha - beta);
        for (int64_t i = j + 1; i < m; ++i) a[i * n + j] *= scale;
        a[j * n + j] = beta;
        tau[j] = t;
        // apply H_j to the trailing columns: C -= tau v (v^T C)
        for (int64_t c = j + 1; c < n; ++c) {
            double w = a[j * n + c];
            for (int64_t i = j + 1; i < m; ++i) w += a[i * n + j] * a[i * n + c];
            a[j * n + c] -= t * w;
            for (int64_t i = j + 1; i < m; ++i) a[i * n + c] -= t * a[i * n + j] * w;
        }
    }
}

// Q C, Q^T C (left) or C Q, C Q^T for Q = H_1 ... H_k, the reflectors in the columns of V
// (m x vn, below the diagonal), C (rows x cols) in place.
void apply_reflectors(const double* V, int64_t m, int64_t vn, const double* tau, int64_t k, double* C, int64_t rows,
                      int64_t cols, bool left, bool transpose) {
    const bool forward = left == transpose;
    std::vector<double> v(static_cast<std::size_t>(m));
    for (int64_t s = 0; s < k; ++s) {
        const int64_t i = forward ? s : k - 1 - s;
        for (int64_t r = 0; r < m; ++r) v[static_cast<std::size_t>(r)] = r < i ? 0.0 : r == i ? 1.0 : V[r * vn + i];
        const double t = tau[i];
        if (left) {  // C -= tau v (v^T C)
            for (int64_t c = 0; c < cols; ++c) {
                double w = 0;
                for (int64_t r = 0; r < rows; ++r) w += v[static_cast<std::size_t>(r)] * C[r * cols + c];
                for (int64_t r = 0; r < rows; ++r) C[r * cols + c] -= t * v[static_cast<std::size_t>(r)] * w;
            }
        } else {  // C -= (C v) tau v^T
            for (int64_t r = 0; r < rows; ++r) {
                double w = 0;
                for (int64_t c = 0; c < cols; ++c) w += C[r * cols + c] * v[static_cast<std::size_t>(c)];
                for (int64_t c = 0; c < cols; ++c) C[r * cols + c] -= w * t * v[static_cast<std::size_t>(c)];
            }
        }
    }
}

// (Q, R) of each matrix: complete (Q m x m, R m x n) or reduced (m x k, k x n).
std::pair<Batch, Batch> qr_of(const Tensor& A, bool complete) {
    Batch a = batch_of(A);
    const int64_t m = a.m, n = a.n, k = std::min(m, n);
    const int64_t qc = complete ? m : k;
    Batch Q = empty_batch(a.lead, m, qc), R = empty_batch(a.lead, qc, n);
    std::vector<double> tau(static_cast<std::size_t>(k));
    for (int64_t b = 0; b < a.count; ++b) {
        double* x = a.at(b);
        geqr2(x, m, n, tau.data());
        double* q = Q.at(b);
        for (int64_t i = 0; i < std::min(m, qc); ++i) q[i * qc + i] = 1;
        apply_reflectors(x, m, n, tau.data(), k, q, m, qc, true, false);
        double* r = R.at(b);
        for (int64_t i = 0; i < qc; ++i) {
            for (int64_t j = i; j < n; ++j) r[i * n + j] = x[i * n + j];
        }
    }
    return {Q, R};
}

// ------------------------------------------------------------------------- SVD and eigh

// Symmetric eigendecomposition of one n x n matrix (the `lower` triangle read): eigenvalues
// ascending into w, eigenvectors as the columns of v (row-major n x n).
template <typename T>
bool lapack_eigh(T* a, int64_t n, bool lower, T* w, bool vectors) {
#ifdef EMBER_HAVE_OPENBLAS
    const int N = static_cast<int>(n);
    int info;
    if constexpr (std::is_same_v<T, float>) info = scipy_LAPACKE_ssyevd(101, vectors ? 'V' : 'N', lower ? 'L' : 'U', N, a, N, w);
    else info = scipy_LAPACKE_dsyevd(101, vectors ? 'V' : 'N', lower ? 'L' : 'U', N, a, N, w);
    return info == 0;
#else
    (void)a, (void)n, (void)lower, (void)w, (void)vectors;
    return false;
#endif
}

void jacobi_eigh(std::vector<double>& a, int64_t n64, std::vector<double>& w, std::vector<double>& v) {
    const std::size_t n = static_cast<std::size_t>(n64);
    v.assign(n * n, 0.0);
    for (std::size_t i = 0; i < n; ++i) v[i * n + i] = 1;
    auto A = [&](std::size_t i, std::size_t j) -> double& { return a[i * n + j]; };
    for (int sweep = 0; sweep < 100; ++sweep) {
        double off = 0;
        for (std::size_t i = 0; i < n; ++i) {
            for (std::size_t j = i + 1; j < n; ++j) off += A(i, j) * A(i, j);
        }
        if (off < 1e-300) break;
        for (std::size_t p = 0; p < n; ++p) {
            for (std::size_t q = p + 1; q < n; ++q) {
                if (A(p, q) == 0) continue;
                const double theta = (A(q, q) - A(p, p)) / (2 * A(p, q));
                const double t = std::copysign(1.0, theta) / (std::abs(theta) + std::sqrt(theta * theta + 1));
                const double c = 1 / std::sqrt(t * t + 1), s = t * c;
                for (std::size_t k = 0; k < n; ++k) {
                    const double akp = A(k, p), akq = A(k, q);
                    A(k, p) = c * akp - s * akq;
                    A(k, q) = s * akp + c * akq;
                }
                for (std::size_t k = 0; k < n; ++k) {
                    const double apk = A(p, k), aqk = A(q, k);
                    A(p, k) = c * apk - s * aqk;
                    A(q, k) = s * apk + c * aqk;
                }
                for (std::size_t k = 0; k < n; ++k) {
                    const double vkp = v[k * n + p], vkq = v[k * n + q];
                    v[k * n + p] = c * vkp - s * vkq;
                    v[k * n + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return A(x, x) < A(y, y); });
    std::vector<double> vs(n * n);
    w.assign(n, 0.0);
    for (std::size_t j = 0; j < n; ++j) {
        w[j] = A(order[j], order[j]);
        for (std::size_t i = 0; i < n; ++i) vs[i * n + j] = v[i * n + order[j]];
    }
    v = vs;
}

// (eigenvalues, eigenvectors) of a batch of symmetric matrices.
std::pair<Tensor, Tensor> eigh(const Tensor& A, const std::string& uplo, bool vectors) {
    if (uplo != "L" && uplo != "U") throw Error("Expected UPLO argument to be 'L' or 'U', but got " + uplo);
    if (!A.is_floating_point() || A.scalar_type() == kHalf) {
        throw NotImplementedError("\"linalg_eigh_cpu\" not implemented for '" + type_name_of(A) + "'");
    }
    check_matrix(A, "linalg.eigh", true);
    const bool lower = uplo == "L";
    Batch a = batch_of(A);
    const int64_t n = a.n;
    Batch V = empty_batch(a.lead, n, n);
    std::vector<double> W(static_cast<std::size_t>(a.count * n));
    for (int64_t b = 0; b < a.count; ++b) {
        const double* src = a.at(b);
        bool done = false;
        if (A.scalar_type() == kFloat) {
            std::vector<float> f(src, src + n * n), w(static_cast<std::size_t>(n));
            if ((done = lapack_eigh<float>(f.data(), n, lower, w.data(), vectors))) {
                std::copy(w.begin(), w.end(), W.begin() + b * n);
                std::copy(f.begin(), f.end(), V.at(b));
            }
        } else {
            std::vector<double> d(src, src + n * n), w(static_cast<std::size_t>(n));
            if ((done = lapack_eigh<double>(d.data(), n, lower, w.data(), vectors))) {
                std::copy(w.begin(), w.end(), W.begin() + b * n);
                std::copy(d.begin(), d.end(), V.at(b));
            }
        }
        if (!done) {
            std::vector<double> s(static_cast<std::size_t>(n * n)), w, v;
            for (int64_t i = 0; i < n; ++i) {
                for (int64_t j = 0; j < n; ++j) {
                    const bool in_triangle = lower ? j <= i : j >= i;
                    s[static_cast<std::size_t>(i * n + j)] = in_triangle ? src[i * n + j] : src[j * n + i];
                }
            }
            jacobi_eigh(s, n, w, v);
            std::copy(w.begin(), w.end(), W.begin() + b * n);
            std::copy(v.begin(), v.end(), V.at(b));
        }
    }
    Shape ws = a.lead;
    ws.push_back(n);
    return {vector_tensor(ws, W, A.scalar_type()), vectors ? tensor_of(V, A.scalar_type()) : Tensor()};
}

// ------------------------------------------------------------------------- eig

// geev of one row-major n x n matrix `a` (overwritten) of a real type T (double: see eig): the eigenvalues into
// w, and when vectors, the right eigenvectors into v's columns (row-major, n x n), unit norm
// with the largest component real (LAPACK's normalisation, NumPy's and PyTorch's). A complex
// pair's vectors are vr[:, j] +- i vr[:, j + 1]. Returns geev's info.
template <typename T>
int geev_real(T* a, int64_t n, std::complex<T>* w, std::complex<T>* v, bool vectors) {
#ifdef EMBER_HAVE_OPENBLAS
    const int N = static_cast<int>(n), ld = std::max(1, N);
    std::vector<T> wr(static_cast<std::size_t>(n)), wi(static_cast<std::size_t>(n));
    std::vector<T> vr(vectors ? static_cast<std::size_t>(n * n) : 1);
    const char jobvr = vectors ? 'V' : 'N';
    static_assert(std::is_same_v<T, double>, "geev runs in double (see eig)");
    const int info = scipy_LAPACKE_dgeev(101, 'N', jobvr, N, a, ld, wr.data(), wi.data(), nullptr, 1, vr.data(), ld);
    if (info != 0) return info;
    for (int64_t j = 0; j < n; ++j) w[j] = {wr[j], wi[j]};
    if (vectors) {
        for (int64_t j = 0; j < n; ++j) {
            if (wi[j] != 0 && j + 1 < n) {  // a conjugate pair: columns j (real part), j + 1 (imaginary)
                for (int64_t i = 0; i < n; ++i) {
                    const T re = vr[i * n + j], im = vr[i * n + j + 1];
                    v[i * n + j] = {re, im};
                    v[i * n + j + 1] = {re, -im};
                }
                ++j;
            } else {
                for (int64_t i = 0; i < n; ++i) v[i * n + j] = {vr[i * n + j], T(0)};
            }
        }
    }
    return 0;
#else
    (void)a, (void)n, (void)w, (void)v, (void)vectors;
    throw Error("linalg.eig: this build of Ember's C++ library has no LAPACK (configure it with EMBER_USE_OPENBLAS=ON)");
#endif
}

// geev of one row-major complex n x n matrix.
template <typename T>
int geev_complex(std::complex<T>* a, int64_t n, std::complex<T>* w, std::complex<T>* v, bool vectors) {
#ifdef EMBER_HAVE_OPENBLAS
    const int N = static_cast<int>(n), ld = std::max(1, N);
    std::complex<T> unused;
    std::complex<T>* vr = vectors ? v : &unused;
    const char jobvr = vectors ? 'V' : 'N';
    static_assert(std::is_same_v<T, double>, "geev runs in double (see eig)");
    return scipy_LAPACKE_zgeev(101, 'N', jobvr, N, a, ld, w, nullptr, 1, vr, ld);
#else
    (void)a, (void)n, (void)w, (void)v, (void)vectors;
    throw Error("linalg.eig: this build of Ember's C++ library has no LAPACK (configure it with EMBER_USE_OPENBLAS=ON)");
#endif
}

// (eigenvalues, eigenvectors) of a batch of general square matrices, complex as PyTorch's:
// float32 -> complex64, float64 -> complex128, complex inputs keep their dtype.
template <typename T>
std::pair<Tensor, Tensor> eig_as(const Tensor& A, bool vectors) {
    using C = std::complex<T>;
    const ScalarType ct = CppTypeToScalarType<C>::value;
    const int64_t n = A.size(-1);
    Shape ws(A.sizes().begin(), A.sizes().end() - 1);
    Tensor W = ember::empty(ws, ct);
    Tensor V = vectors ? ember::empty(A.sizes(), ct) : Tensor();
    const int64_t count = n == 0 ? 0 : A.numel() / (n * n);
    const bool complex_in = A.is_complex();
    const Tensor src = A.to(complex_in ? ct : CppTypeToScalarType<T>::value).contiguous();
    {  // the finite check covers the whole batch first, as PyTorch's does
        const T* p = complex_in ? reinterpret_cast<const T*>(src.data_ptr<C>()) : src.data_ptr<T>();
        const int64_t len = src.numel() * (complex_in ? 2 : 1);
        for (int64_t i = 0; i < len; ++i) {
            if (!std::isfinite(p[i])) throw Error("torch.linalg.eig: input tensor should not contain infs or NaNs.");
        }
    }
    std::vector<T> real_copy;
    std::vector<C> complex_copy;
    for (int64_t b = 0; b < count; ++b) {
        C* w = W.data_ptr<C>() + b * n;
        C* v = vectors ? V.data_ptr<C>() + b * n * n : nullptr;
        int info;
        if (complex_in) {
            const C* m = src.data_ptr<C>() + b * n * n;
            complex_copy.assign(m, m + n * n);
            info = geev_complex<T>(complex_copy.data(), n, w, v, vectors);
        } else {
            const T* m = src.data_ptr<T>() + b * n * n;
            real_copy.assign(m, m + n * n);
            info = geev_real<T>(real_copy.data(), n, w, v, vectors);
        }
        if (info > 0) {
            throw Error("linalg.eig: " + batch_prefix(A, b) +
                        "The algorithm failed to converge because the input matrix is ill-conditioned or has too "
                        "many repeated eigenvalues (error code: " + std::to_string(info) + ").");
        }
        if (info < 0) throw Error("linalg.eig: LAPACK's geev rejected argument " + std::to_string(-info));
    }
    return {W, V};
}

std::pair<Tensor, Tensor> eig(const Tensor& A, bool vectors) {
    check_dims(A, "linalg.eig");
    check_square(A, "linalg.eig");
    const ScalarType dt = A.scalar_type();
    if (dt == kHalf) throw NotImplementedError("\"linalg_eig_out_cpu\" not implemented for '" + type_name_of(A) + "'");
    if (!A.is_floating_point() && !A.is_complex()) throw Error("Unknown Complex ScalarType for " + type_name_of(A));
    // in double, rounded once, as NumPy's linalg (so Python Ember's) computes single precision:
    // the float32 vectors then carry the float64 ones' signs, which sgeev's need not
    auto [w, v] = eig_as<double>(A, vectors);
    if (dt == kFloat || dt == kComplexFloat) return {w.to(kComplexFloat), vectors ? v.to(kComplexFloat) : v};
    return {w, v};
}

// gesdd of one row-major m x n matrix in T's precision (s, sgesdd / dgesdd; cgesdd / zgesdd
// for complex T): singular values into s (real), U (m x ucols) and Vh (vrows x n); false when
// the build has no LAPACK or gesdd failed.
template <typename T, typename R>
bool lapack_svd(T* a, int64_t m, int64_t n, char jobz, R* s, T* u, int64_t ucols, T* vt, int64_t vrows) {
#ifdef EMBER_HAVE_OPENBLAS
    const int M = static_cast<int>(m), N = static_cast<int>(n);
    const int ldu = static_cast<int>(std::max<int64_t>(ucols, 1)), ldvt = static_cast<int>(std::max<int64_t>(n, 1));
    (void)vrows;
    int info;
    if constexpr (std::is_same_v<T, float>) info = scipy_LAPACKE_sgesdd(101, jobz, M, N, a, std::max(N, 1), s, u, ldu, vt, ldvt);
    else if constexpr (std::is_same_v<T, double>) info = scipy_LAPACKE_dgesdd(101, jobz, M, N, a, std::max(N, 1), s, u, ldu, vt, ldvt);
    else if constexpr (std::is_same_v<T, std::complex<float>>) info = scipy_LAPACKE_cgesdd(101, jobz, M, N, a, std::max(N, 1), s, u, ldu, vt, ldvt);
    else info = scipy_LAPACKE_zgesdd(101, jobz, M, N, a, std::max(N, 1), s, u, ldu, vt, ldvt);
    return info == 0;
#else
    (void)a, (void)m, (void)n, (void)jobz, (void)s, (void)u, (void)ucols, (void)vt, (void)vrows;
    return false;
#endif
}

// One-sided Jacobi SVD of an m x n matrix (real or complex, S): A = U diag(s) V^H with U (m x k),
// s (k, descending), V (n x k). A wide matrix is worked on as A^H = V s U^H. A pair of columns
// (x, y) with x^H y = |g| e^{i phi} is rotated as the real pair (x, e^{-i phi} y).
template <typename S>
void jacobi_svd(const S* a, int64_t m64, int64_t n64, std::vector<S>& U, std::vector<double>& s, std::vector<S>& V) {
    const std::size_t m = static_cast<std::size_t>(m64), n = static_cast<std::size_t>(n64);
    const bool wide = m < n;
    const std::size_t r = wide ? n : m, c = wide ? m : n;  // work on the tall r x c matrix
    std::vector<S> W(r * c);
    for (std::size_t i = 0; i < r; ++i) {
        for (std::size_t j = 0; j < c; ++j) W[i * c + j] = wide ? conj_of(a[j * n + i]) : a[i * n + j];
    }
    std::vector<S> Vw(c * c, S(0));
    for (std::size_t i = 0; i < c; ++i) Vw[i * c + i] = 1;
    // columns p, q <- (cs x - sn conj(ph) y, sn ph x + cs y) with ph = e^{i phi} (1 when real)
    auto rotate = [](std::vector<S>& M, std::size_t rows, std::size_t cols, std::size_t p, std::size_t q, double cs,
                     double sn, S ph) {
        for (std::size_t i = 0; i < rows; ++i) {
            const S x = M[i * cols + p], y = M[i * cols + q];
            M[i * cols + p] = cs * x - sn * conj_of(ph) * y;
            M[i * cols + q] = sn * ph * x + cs * y;
        }
    };
    for (int sweep = 0; sweep < 100; ++sweep) {
        bool rotated = false;
        for (std::size_t p = 0; p < c; ++p) {
            for (std::size_t q = p + 1; q < c; ++q) {
                double alpha = 0, beta = 0;
                S gamma = 0;
                for (std::size_t i = 0; i < r; ++i) {
                    const S x = W[i * c + p], y = W[i * c + q];
                    alpha += abs2(x);
                    beta += abs2(y);
                    gamma += conj_of(x) * y;
                }
                const double g = std::abs(gamma);
                if (g == 0 || g <= 1e-15 * std::sqrt(alpha * beta)) continue;
                rotated = true;
                const double zeta = (beta - alpha) / (2 * g);
                const double t = std::copysign(1.0, zeta) / (std::abs(zeta) + std::sqrt(1 + zeta * zeta));
                const double cs = 1 / std::sqrt(1 + t * t), sn = cs * t;
                const S ph = gamma / g;
                rotate(W, r, c, p, q, cs, sn, ph);
                rotate(Vw, c, c, p, q, cs, sn, ph);
            }
        }
        if (!rotated) break;
    }
    std::vector<double> norms(c);
    for (std::size_t j = 0; j < c; ++j) {
        double nn = 0;
        for (std::size_t i = 0; i < r; ++i) nn += abs2(W[i * c + j]);
        norms[j] = std::sqrt(nn);
    }
    std::vector<std::size_t> order(c);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return norms[x] > norms[y]; });
    std::vector<S> Ut(r * c, S(0)), Vt(c * c);
    s.assign(c, 0.0);
    for (std::size_t k = 0; k < c; ++k) {
        const std::size_t j = order[k];
        const double sv = norms[j];
        s[k] = sv;
        for (std::size_t i = 0; i < r; ++i) Ut[i * c + k] = sv > 0 ? W[i * c + j] / sv : S(i == k ? 1.0 : 0.0);
        for (std::size_t i = 0; i < c; ++i) Vt[i * c + k] = Vw[i * c + j];
    }
    if (wide) {
        U = Vt;  // A^H = Ut s Vt^H  =>  A = Vt s Ut^H
        V = Ut;
    } else {
        U = Ut;
        V = Vt;
    }
}

// Completes the k orthonormal columns of Q (rows x k) to rows x rows (Gram-Schmidt on e_i).
template <typename S>
std::vector<S> complete_basis(const std::vector<S>& Q, int64_t rows64, int64_t k64) {
    const std::size_t rows = static_cast<std::size_t>(rows64), k = static_cast<std::size_t>(k64);
    std::vector<S> out(rows * rows, S(0));
    for (std::size_t i = 0; i < rows; ++i) {
        for (std::size_t j = 0; j < k; ++j) out[i * rows + j] = Q[i * k + j];
    }
    std::size_t filled = k;
    for (std::size_t e = 0; e < rows && filled < rows; ++e) {
        std::vector<S> v(rows, S(0));
        v[e] = 1;
        for (int pass = 0; pass < 2; ++pass) {
            for (std::size_t j = 0; j < filled; ++j) {
                S d = 0;
                for (std::size_t i = 0; i < rows; ++i) d += conj_of(out[i * rows + j]) * v[i];
                for (std::size_t i = 0; i < rows; ++i) v[i] -= d * out[i * rows + j];
            }
        }
        double nn = 0;
        for (const S& x : v) nn += abs2(x);
        nn = std::sqrt(nn);
        if (nn < 1e-8) continue;
        for (std::size_t i = 0; i < rows; ++i) out[i * rows + filled] = v[i] / nn;
        ++filled;
    }
    return out;
}

struct Svd {
    Tensor U, S, Vh;
};

// The SVD of each matrix in S (double / complex128): LAPACK's gesdd in the input's precision
// when the build has it, else one-sided Jacobi in S; U and Vh in A's dtype, S real.
template <typename S>
Svd svd_impl(const Tensor& A, bool full_matrices, bool compute_uv) {
    BatchOf<S> a = batch_of<S>(A);
    const int64_t m = a.m, n = a.n, k = std::min(m, n);
    const int64_t uc = full_matrices ? m : k, vr = full_matrices ? n : k;
    BatchOf<S> U = empty_batch<S>(a.lead, m, uc), Vh = empty_batch<S>(a.lead, vr, n);
    std::vector<double> Sv(static_cast<std::size_t>(a.count * k));
    const char jobz = !compute_uv ? 'N' : full_matrices ? 'A' : 'S';
    const bool single = A.scalar_type() == kFloat || A.scalar_type() == kComplexFloat;
    for (int64_t b = 0; b < a.count; ++b) {
        const S* src = a.at(b);
        if (m * n == 0) {
            for (int64_t i = 0; i < std::min(m, uc); ++i) U.at(b)[i * uc + i] = 1;
            for (int64_t i = 0; i < std::min(vr, n); ++i) Vh.at(b)[i * n + i] = 1;
            continue;
        }
        bool done = false;
        auto run = [&](auto tag) {
            using R = decltype(tag);  // float or double
            using T = std::conditional_t<std::is_same_v<S, double>, R, std::complex<R>>;
            std::vector<T> x(static_cast<std::size_t>(m * n));
            for (int64_t i = 0; i < m * n; ++i) x[static_cast<std::size_t>(i)] = static_cast<T>(src[i]);
            std::vector<R> s(static_cast<std::size_t>(k));
            std::vector<T> u(static_cast<std::size_t>(std::max<int64_t>(m * uc, 1)));
            std::vector<T> vt(static_cast<std::size_t>(std::max<int64_t>(vr * n, 1)));
            if (lapack_svd<T, R>(x.data(), m, n, jobz, s.data(), u.data(), uc, vt.data(), vr)) {
                done = true;
                std::copy(s.begin(), s.end(), Sv.begin() + b * k);
                if (compute_uv) {
                    std::copy(u.begin(), u.begin() + m * uc, U.at(b));
                    std::copy(vt.begin(), vt.begin() + vr * n, Vh.at(b));
                }
            }
        };
        if (single) run(float{});
        else run(double{});
        if (done) continue;
        std::vector<S> u, v;
        std::vector<double> s;
        jacobi_svd(src, m, n, u, s, v);
        std::copy(s.begin(), s.end(), Sv.begin() + b * k);
        if (!compute_uv) continue;
        std::vector<S> uf = full_matrices ? complete_basis(u, m, k) : u;
        std::vector<S> vf = full_matrices ? complete_basis(v, n, k) : v;
        std::copy(uf.begin(), uf.end(), U.at(b));
        for (int64_t i = 0; i < vr; ++i) {
            for (int64_t j = 0; j < n; ++j) Vh.at(b)[i * n + j] = conj_of(vf[static_cast<std::size_t>(j * vr + i)]);
        }
    }
    Shape ss = a.lead;
    ss.push_back(k);
    Svd r;
    r.S = vector_tensor(ss, Sv, real_dtype(A));
    if (compute_uv) {
        r.U = tensor_of(U, A.scalar_type());
        r.Vh = tensor_of(Vh, A.scalar_type());
    }
    return r;
}

// linalg.svd: U (m x m or m x k), S (k, real), Vh (n x n or k x n); compute_uv=false: S only.
Svd svd(const Tensor& A, bool full_matrices, bool compute_uv) {
    check_matrix(A, "linalg.svd");
    if (A.is_complex()) return svd_impl<cdouble>(A, full_matrices, compute_uv);
    return svd_impl<double>(A, full_matrices, compute_uv);
}

// ------------------------------------------------------------------------- norms

Tensor vector_norm(const Tensor& x, double ord, const Shape& dims, bool keepdim) {
    Shape d = dims;
    if (d.empty()) {
        for (int64_t i = 0; i < x.dim(); ++i) d.push_back(i);
    }
    if (x.dim() == 0) d.clear();
    Tensor ax = ember::abs(x);
    Tensor r;
    if (ord == 2) r = ember::sqrt(ember::sum(x * x, d, keepdim));
    else if (std::isinf(ord)) r = ord > 0 ? ember::amax(ax, d, keepdim) : ember::amin(ax, d, keepdim);
    else if (ord == 0) r = ember::sum((x != 0).to(x.scalar_type()), d, keepdim);
    else if (ord == 1) r = ember::sum(ax, d, keepdim);
    else r = ember::pow(ember::sum(ember::pow(ax, ord), d, keepdim), 1.0 / ord);
    return r;
}

Tensor cast_for_norm(const Tensor& x, std::optional<ScalarType> dtype, const std::string& fn) {
    if (!x.is_floating_point() && !x.is_complex()) {
        throw Error(fn + ": Expected a floating point or complex tensor as input. Got " + type_name_of(x));
    }
    if (!dtype) return x;
    if (promote_types(x.scalar_type(), *dtype) != *dtype) {
        throw Error(fn + ": the dtype of the input (" + type_name_of(x) +
                    ") should be convertible without narrowing to the specified dtype (" +
                    std::string(scalar_type_name(*dtype)) + ")");
    }
    return x.to(*dtype);
}

double ord_of(const Value& v, const std::string& fn) {
    if (v.kind == Value::Kind::Float) return v.f;
    if (v.kind == Value::Kind::Int) return static_cast<double>(v.i);
    throw TypeError(fn + "(): argument 'ord' must be Number, not " + type_name(v));
}

Shape dims_list(const Value& v, const std::string& what) {
    if (v.is_none()) return {};
    if (v.is_sequence()) return to_ints(v, what);
    return {to_int(v, what)};
}

Tensor linalg_vector_norm(const Tensor& x0, double ord, const Value& dim, bool keepdim, std::optional<ScalarType> dtype) {
    Tensor x = cast_for_norm(x0, dtype, "linalg.vector_norm");
    if (x.is_complex()) x = ember::abs(x);  // a complex vector's norm is its moduli's (a real result)
    Shape dims = dims_list(dim, "linalg.vector_norm(): dim");
    for (int64_t& d : dims) d = dim_index(d, x.dim(), "linalg.vector_norm");
    int64_t reduced = 1;
    if (dims.empty()) reduced = x.numel();
    else for (int64_t d : dims) reduced *= x.size(d);
    if (reduced == 0 && (ord < 0 || ord == kInf)) {
        std::ostringstream os;
        os << "linalg.vector_norm cannot compute the " << ord << " norm on an empty tensor because the operation does not "
           << "have an identity";
        throw Error(os.str());
    }
    if (dims.empty() && !keepdim) {
        Tensor flat = x.reshape({-1});
        return vector_norm(flat, ord, {0}, false);
    }
    return vector_norm(x, ord, dims, keepdim);
}

Tensor svdvals_of(const Tensor& A) { return svd(A, false, false).S; }

Tensor matrix_norm(const Tensor& A0, const Value& ord, const Value& dim, bool keepdim, std::optional<ScalarType> dtype) {
    check_dims(A0, "linalg.matrix_norm");
    Shape dims = dims_list(dim, "linalg.matrix_norm(): dim");
    if (dims.size() != 2) {
        std::ostringstream os;
        for (std::size_t i = 0; i < dims.size(); ++i) os << (i ? " " : "") << dims[i];
        throw Error("linalg.matrix_norm: dim must be a 2-tuple. Got " + os.str());
    }
    const int64_t d0 = dim_index(dims[0], A0.dim(), "linalg.matrix_norm"), d1 = dim_index(dims[1], A0.dim(), "linalg.matrix_norm");
    if (d0 == d1) {
        throw Error("linalg.matrix_norm: dims must be different. Got (" + std::to_string(dims[0]) + ", " + std::to_string(dims[1]) + ")");
    }
    std::string s_ord;
    double n_ord = 0;
    if (ord.kind == Value::Kind::String) {
        s_ord = ord.s;
        if (s_ord != "fro" && s_ord != "nuc") throw Error("linalg.matrix_norm: Order " + s_ord + " not supported.");
    } else {
        n_ord = ord_of(ord, "linalg.matrix_norm");
        if (ord.kind == Value::Kind::Bool || !(std::abs(n_ord) == 1 || std::abs(n_ord) == 2 || std::isinf(n_ord))) {
            throw Error("linalg.matrix_norm: Order " + describe(ord) + " not supported.");
        }
    }
    Tensor A = cast_for_norm(A0, dtype, "linalg.matrix_norm");
    // 'fro', +-1 and +-inf read the moduli only; 'nuc' and +-2 the (real) singular values of
    // the complex matrix
    if (A.is_complex() && s_ord != "nuc" && std::abs(n_ord) != 2) A = ember::abs(A);
    if (s_ord == "fro") return vector_norm(A, 2, {d0, d1}, keepdim);
    if (A.size(d0) == 0 || A.size(d1) == 0) {
        Shape shape;
        for (int64_t i = 0; i < A.dim(); ++i) {
            if (i == d0 || i == d1) {
                if (keepdim) shape.push_back(1);
            } else {
                shape.push_back(A.size(i));
            }
        }
        return ember::zeros(shape, real_dtype(A));
    }
    Tensor r;
    if (s_ord == "nuc" || std::abs(n_ord) == 2) {
        Shape perm;
        for (int64_t i = 0; i < A.dim(); ++i) {
            if (i != d0 && i != d1) perm.push_back(i);
        }
        perm.push_back(d0);
        perm.push_back(d1);
        Tensor s = svdvals_of(A.permute(perm));
        const double p = s_ord == "nuc" ? 1.0 : n_ord > 0 ? kInf : -kInf;
        r = vector_norm(s, p, {s.dim() - 1}, false);
    } else {
        const int64_t sum_dim = std::abs(n_ord) == 1 ? d0 : d1, max_dim = std::abs(n_ord) == 1 ? d1 : d0;
        Tensor sums = vector_norm(A, 1, {sum_dim}, true);
        r = vector_norm(sums, n_ord > 0 ? kInf : -kInf, {max_dim}, true);
        if (keepdim) return r;
        Shape shape;
        for (int64_t i = 0; i < r.dim(); ++i) {
            if (i != d0 && i != d1) shape.push_back(r.size(i));
        }
        return r.reshape(shape);
    }
    if (keepdim) {
        r = r.unsqueeze(std::min(d0, d1));
        r = r.unsqueeze(std::max(d0, d1));
    }
    return r;
}

// ------------------------------------------------------------------------- solves

// B as a batch of matrices for A X = B: (Bm, vector) with a vector rhs given a last dim.
struct Rhs {
    Tensor B;
    bool vector = false;
};

Tensor broadcast_batch(const Tensor& t, const Shape& batch) {
    Shape s = batch;
    s.push_back(t.size(-2));
    s.push_back(t.size(-1));
    return t.expand(s);
}

Shape batch_shape(const Tensor& a, const Tensor& b) {
    return ember::infer_size(Shape(a.sizes().begin(), a.sizes().end() - 2), Shape(b.sizes().begin(), b.sizes().end() - 2));
}

// X with A X = B for broadcast batches (A n x n, B n x r) by pivoted LU in S, rounded once.
template <typename S>
Tensor solve_batches(const Tensor& A, const Tensor& B, const Tensor& A0, bool raise, std::vector<int32_t>* infos) {
    const int64_t n = A.size(-1);
    LuResultOf<S> f = lu_factor<S>(A, true);
    BatchOf<S> x = batch_of<S>(B);
    if (infos) *infos = f.info;
    for (int64_t b = 0; b < x.count; ++b) {
        if (f.info[static_cast<std::size_t>(b)]) {
            if (raise) {
                const std::string prefix = x.count > 1 || A0.dim() > 2 ? "(Batch element " + std::to_string(b) + "): " : "";
                throw Error("torch.linalg.solve: " + prefix + "The solver failed because the input matrix is singular.");
            }
            std::fill(x.at(b), x.at(b) + x.m * x.n, nan_of<S>());
            continue;
        }
        lu_solve_inplace(f.lu.at(b), f.piv.data() + b * n, n, x.at(b), x.n, false);
    }
    return tensor_of(x, A0.scalar_type());
}

Tensor solve(const Tensor& A, const Tensor& B, bool left, const std::string& fn, bool raise, std::vector<int32_t>* infos = nullptr) {
    if (!left) return solve(A.transpose(-1, -2), B.transpose(-1, -2), true, fn, raise, infos).transpose(-1, -2);
    check_matrix(A, "linalg.solve", true);
    if (A.scalar_type() != B.scalar_type()) {
        throw Error("linalg.solve: Expected A and B to have the same dtype, but found A of type " + type_name_of(A) +
                    " and B of type " + type_name_of(B) + " instead");
    }
    const bool vector = B.dim() == 1 || (B.dim() == A.dim() - 1 && Shape(B.sizes().begin(), B.sizes().end()) ==
                                                                        Shape(A.sizes().begin(), A.sizes().end() - 1));
    Tensor Bm = vector ? B.unsqueeze(-1) : B;
    const int64_t n = A.size(-1);
    if (Bm.dim() < 2 || Bm.size(-2) != n) {
        const std::string shape = Bm.dim() >= 2 ? std::to_string(Bm.size(-2)) + "x" + std::to_string(Bm.size(-1))
                                                : std::to_string(Bm.size(0)) + "x1";
        throw Error("linalg.solve: Incompatible shapes of A and B for the equation AX = B (" + std::to_string(n) + "x" +
                    std::to_string(n) + " and " + shape + ")");
    }
    const Shape batch = batch_shape(A, Bm);
    Tensor r = A.is_complex() ? solve_batches<cdouble>(broadcast_batch(A, batch), broadcast_batch(Bm, batch), A, raise, infos)
                              : solve_batches<double>(broadcast_batch(A, batch), broadcast_batch(Bm, batch), A, raise, infos);
    return vector ? r.squeeze(-1) : r;
}

// ------------------------------------------------------------------------- LDL^T

// Bunch-Kaufman LDL^T of the lower triangles of a batch of symmetric matrices (LAPACK
// dsytf2, which Python Ember's kernel follows step by step; zsytf2 for complex matrices, or
// zhetf2, A = L D L^H, with hermitian), in double / complex128, rounded once:
// (LD with a zero strict upper triangle, 1-based int32 pivots, info per matrix).
struct Ldl {
    Tensor LD, pivots, info;
};

#ifndef EMBER_HAVE_OPENBLAS
[[noreturn]] void no_lapack(const std::string& fn) {
    throw Error(fn + ": this build of Ember's C++ library has no LAPACK (configure it with EMBER_USE_OPENBLAS=ON)");
}
#endif

#ifdef EMBER_HAVE_OPENBLAS
void sytf2(bool herm, int N, double* a, int ld, int* piv, int* info) {
    (void)herm;
    scipy_dsytf2_("L", &N, a, &ld, piv, info, 1);
}
void sytf2(bool herm, int N, cdouble* a, int ld, int* piv, int* info) {
    if (herm) scipy_zhetf2_("L", &N, a, &ld, piv, info, 1);
    else scipy_zsytf2_("L", &N, a, &ld, piv, info, 1);
}
void sytrs(bool herm, int N, int K, const double* a, int ld, const int* piv, double* b, int* info) {
    (void)herm;
    scipy_dsytrs_("L", &N, &K, a, &ld, piv, b, &ld, info, 1);
}
void sytrs(bool herm, int N, int K, const cdouble* a, int ld, const int* piv, cdouble* b, int* info) {
    if (herm) scipy_zhetrs_("L", &N, &K, a, &ld, piv, b, &ld, info, 1);
    else scipy_zsytrs_("L", &N, &K, a, &ld, piv, b, &ld, info, 1);
}
#endif

// LDL / LAPACK's kernels take float32/64 and complex64/128 (the others: PyTorch's dispatch error)
void ldl_kernel_dtype(const Tensor& A, const std::string& kernel) {
    if (!A.is_complex()) kernel_dtype(A, kernel);
}

template <typename S>
Ldl ldl_factor_impl(const Tensor& A, const std::string& fn, bool check_errors, bool hermitian) {
    BatchOf<S> a = batch_of<S>(A);
    const Shape lead(A.sizes().begin(), A.sizes().end() - 2);
    const int64_t n = a.n;
    BatchOf<S> out = a;
    std::fill(out.v.begin(), out.v.end(), S(0));
    std::vector<int32_t> piv(static_cast<std::size_t>(a.count * n)), info(static_cast<std::size_t>(a.count));
    std::vector<S> cm(static_cast<std::size_t>(n * n));
    for (int64_t b = 0; b < a.count; ++b) {
        const S* src = a.at(b);
        for (int64_t i = 0; i < n; ++i) {
            for (int64_t j = 0; j < n; ++j) cm[static_cast<std::size_t>(j * n + i)] = src[i * n + j];
        }
#ifdef EMBER_HAVE_OPENBLAS
        const int N = static_cast<int>(n), ld = std::max(1, N);
        int inf = 0;
        if (n > 0) sytf2(hermitian, N, cm.data(), ld, piv.data() + b * n, &inf);
        info[static_cast<std::size_t>(b)] = inf;
#else
        (void)hermitian;
        no_lapack(fn);
#endif
        S* dst = out.at(b);
        for (int64_t i = 0; i < n; ++i) {
            for (int64_t j = 0; j <= i; ++j) dst[i * n + j] = cm[static_cast<std::size_t>(j * n + i)];
        }
    }
    if (check_errors) {
        for (int64_t b = 0; b < a.count; ++b) {
            const int32_t k = info[static_cast<std::size_t>(b)];
            if (k != 0) {
                throw Error(fn + ": " + batch_prefix(A, b) +
                            "The factorization could not be completed because the block diagonal matrix D is singular (D[" +
                            std::to_string(k) + "," + std::to_string(k) + "] is zero).");
            }
        }
    }
    Shape ps = lead;
    ps.push_back(n);
    return {tensor_of(out, A.scalar_type()), int_tensor(ps, piv), int_tensor(lead, info)};
}

Ldl ldl_factor(const Tensor& A, const std::string& fn, bool check_errors, bool hermitian) {
    const std::string checks = "torch.linalg.ldl_factor_ex";  // PyTorch's checks name it for ldl_factor too
    check_dims(A, checks);
    check_square(A, checks);
    if (!A.is_floating_point() && !A.is_complex()) {
        throw Error(checks + ": Expected a floating point or complex tensor as input. Got " + type_name_of(A));
    }
    ldl_kernel_dtype(A, "ldl_factor_kernel_cpu");
    if (A.is_complex()) return ldl_factor_impl<cdouble>(A, fn, check_errors, hermitian);
    return ldl_factor_impl<double>(A, fn, check_errors, hermitian);
}

template <typename S>
Tensor ldl_solve_impl(const Tensor& LD, const Tensor& pivots, const Tensor& B, bool hermitian, const std::string& fn) {
    const int64_t n = LD.size(-1);
    const Shape batch = batch_shape(LD, B);
    BatchOf<S> lds = batch_of<S>(broadcast_batch(LD, batch));
    Shape pshape = batch;
    pshape.push_back(n);
    const Tensor p = pivots.to(kInt).expand(pshape).contiguous();
    BatchOf<S> x = batch_of<S>(broadcast_batch(B, batch));
    const int64_t k = x.n;
    std::vector<S> cm(static_cast<std::size_t>(n * n)), rhs(static_cast<std::size_t>(n * k));
    for (int64_t b = 0; b < lds.count; ++b) {
        const S* l = lds.at(b);
        for (int64_t i = 0; i < n; ++i) {
            for (int64_t j = 0; j < n; ++j) cm[static_cast<std::size_t>(j * n + i)] = l[i * n + j];
        }
        S* xb = x.at(b);
        for (int64_t i = 0; i < n; ++i) {
            for (int64_t j = 0; j < k; ++j) rhs[static_cast<std::size_t>(j * n + i)] = xb[i * k + j];
        }
#ifdef EMBER_HAVE_OPENBLAS
        const int N = static_cast<int>(n), K = static_cast<int>(k), ld = std::max(1, N);
        int inf = 0;
        if (n > 0 && k > 0) sytrs(hermitian, N, K, cm.data(), ld, p.data_ptr<int32_t>() + b * n, rhs.data(), &inf);
        if (inf < 0) throw Error(fn + ": LAPACK's sytrs rejected argument " + std::to_string(-inf));
#else
        (void)hermitian;
        no_lapack(fn);
#endif
        for (int64_t i = 0; i < n; ++i) {
            for (int64_t j = 0; j < k; ++j) xb[i * k + j] = rhs[static_cast<std::size_t>(j * n + i)];
        }
    }
    return tensor_of(x, LD.scalar_type());
}

// X with A X = B given ldl_factor(A) (dsytrs; zsytrs / zhetrs); batches broadcast.
Tensor ldl_solve(const Tensor& LD, const Tensor& pivots, const Tensor& B, bool hermitian) {
    const std::string fn = "torch.linalg.ldl_solve";
    check_dims(LD, fn);
    check_square(LD, fn);
    const int64_t n = LD.size(-1);
    if (B.dim() < 2) {
        throw IndexError("Dimension out of range (expected to be in range of [-" + std::to_string(std::max<int64_t>(B.dim(), 1)) +
                         ", " + std::to_string(std::max<int64_t>(B.dim(), 1) - 1) + "], but got -2)");
    }
    if (!LD.is_floating_point() && !LD.is_complex()) {
        throw Error(fn + ": Expected a floating point or complex tensor as input. Got " + type_name_of(LD));
    }
    if (pivots.is_floating_point() || pivots.is_complex() || pivots.scalar_type() == kBool) {
        throw Error(fn + ": Expected pivots to be integers. Got " + type_name_of(pivots));
    }
    if (Shape(pivots.sizes().begin(), pivots.sizes().end()) != Shape(LD.sizes().begin(), LD.sizes().end() - 1)) {
        std::string dims;
        for (int64_t d : pivots.sizes()) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
        throw Error(fn + ": Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots with shape [" + dims +
                    "] instead");
    }
    if (B.scalar_type() != LD.scalar_type()) {
        throw Error("Expected b and A to have the same dtype, but found b of type " + type_name_of(B) + " and A of type " +
                    type_name_of(LD) + " instead.");
    }
    if (B.size(-2) != n) {
        throw Error("Incompatible matrix sizes for " + fn + ": each A matrix is " + std::to_string(n) + " by " +
                    std::to_string(n) + " but each b matrix is " + std::to_string(B.size(-2)) + " by " +
                    std::to_string(B.size(-1)));
    }
    ldl_kernel_dtype(LD, "ldl_solve_kernel_cpu");
    if (LD.is_complex()) return ldl_solve_impl<cdouble>(LD, pivots, B, hermitian, fn);
    return ldl_solve_impl<double>(LD, pivots, B, hermitian, fn);
}


// X with op(T) X = B (left) or X op(T) = B, T triangular; batches broadcast.
Tensor solve_triangular(const Tensor& A, const Tensor& B0, bool upper, bool left, bool unit, const std::string& fn) {
    check_dims(A, fn);
    check_dims(B0, fn, "B");
    check_square(A, fn);
    const int64_t n = A.size(-1);
    if ((left ? B0.size(-2) : B0.size(-1)) != n) {
        throw Error(fn + ": Incompatible shapes of A and B for the equation " + (left ? "AX = B" : "XA = B") + " (" +
                    std::to_string(n) + "x" + std::to_string(n) + " and " + std::to_string(B0.size(-2)) + "x" +
                    std::to_string(B0.size(-1)) + ")");
    }
    kernel_dtype(A, "triangular_solve_cpu");
    Tensor B = B0.to(A.scalar_type());
    const Shape batch = batch_shape(A, B);
    Batch a = batch_of(broadcast_batch(A, batch));
    Batch x = batch_of(left ? broadcast_batch(B, batch) : broadcast_batch(B, batch).transpose(-1, -2));
    for (int64_t b = 0; b < x.count; ++b) {
        // X A = B  <=>  A^T X^T = B^T
        trsm(a.at(b), n, x.at(b), x.n, upper, unit, !left);
    }
    Tensor r = tensor_of(x, A.scalar_type());
    return left ? r : r.transpose(-1, -2).contiguous();
}

void check_linear_solve(const Tensor& b, const Tensor& A, const std::string& fn) {
    if (b.scalar_type() != A.scalar_type()) {
        throw Error("Expected b and A to have the same dtype, but found b of type " + type_name_of(b) + " and A of type " +
                    type_name_of(A) + " instead.");
    }
    check_square(A, "");
    if (A.size(-1) != b.size(-2)) {
        throw Error("Incompatible matrix sizes for " + fn + ": each A matrix is " + std::to_string(A.size(-2)) + " by " +
                    std::to_string(A.size(-1)) + " but each b matrix is " + std::to_string(b.size(-2)) + " by " +
                    std::to_string(b.size(-1)));
    }
}

Tensor cholesky_solve(const Tensor& B, const Tensor& L, bool upper) {
    if (B.dim() < 2) throw Error("b should have at least 2 dimensions, but has " + std::to_string(B.dim()) + " dimensions instead");
    if (L.dim() < 2) throw Error("u should have at least 2 dimensions, but has " + std::to_string(L.dim()) + " dimensions instead");
    check_linear_solve(B, L, "cholesky_solve");
    kernel_dtype(L, "cholesky_solve_cpu");
    // (L L^T)^{-1} B = L^{-T} (L^{-1} B); upper: (U^T U)^{-1} B = U^{-1} (U^{-T} B)
    const Shape batch = batch_shape(L, B);
    Batch l = batch_of(broadcast_batch(L, batch));
    Batch x = batch_of(broadcast_batch(B, batch));
    const int64_t n = l.n;
    for (int64_t b = 0; b < x.count; ++b) {
        if (upper) {
            trsm(l.at(b), n, x.at(b), x.n, true, false, true);
            trsm(l.at(b), n, x.at(b), x.n, true, false, false);
        } else {
            trsm(l.at(b), n, x.at(b), x.n, false, false, false);
            trsm(l.at(b), n, x.at(b), x.n, false, false, true);
        }
    }
    return tensor_of(x, L.scalar_type());
}

// ------------------------------------------------------------------------- matrix functions

Tensor matrix_power(const Tensor& A, int64_t n) {
    check_dims(A, "linalg.matrix_power");
    check_square(A, "linalg.matrix_power");
    if (n == 0) {
        const int64_t k = A.size(-1);
        return ember::eye(k, A.scalar_type()).expand(shape_of(A)).contiguous();
    }
    Tensor base = A;
    if (n < 0) {
        check_float(A, "linalg.inv");
        base = inverse_of(A, "linalg.inv", true);
        n = -n;
    } else if (n == 1) {
        return A.clone();
    }
    Tensor result;
    while (n) {
        if (n & 1) result = result.defined() ? result.matmul(base) : base;
        n >>= 1;
        if (n) base = base.matmul(base);
    }
    return result;
}

// exp of one n x n matrix: scaling and squaring with a Taylor series in double.
void expm(const double* a, int64_t n64, double* out) {
    const std::size_t n = static_cast<std::size_t>(n64);
    double norm = 0;
    for (std::size_t j = 0; j < n; ++j) {
        double col = 0;
        for (std::size_t i = 0; i < n; ++i) col += std::abs(a[i * n + j]);
        norm = std::max(norm, col);
    }
    int squarings = 0;
    if (std::isfinite(norm) && norm > 0.5) squarings = static_cast<int>(std::ceil(std::log2(norm / 0.5)));
    const double scale = std::ldexp(1.0, -squarings);
    std::vector<double> x(a, a + n * n), term(n * n, 0.0), next(n * n), r(n * n, 0.0);
    for (double& v : x) v *= scale;
    for (std::size_t i = 0; i < n; ++i) term[i * n + i] = r[i * n + i] = 1;
    // next = lhs @ rhs * factor
    auto product = [&](const std::vector<double>& lhs, const std::vector<double>& rhs, double factor) {
        std::fill(next.begin(), next.end(), 0.0);
        for (std::size_t i = 0; i < n; ++i) {
            for (std::size_t p = 0; p < n; ++p) {
                const double l = lhs[i * n + p] * factor;
                if (l == 0) continue;
                for (std::size_t j = 0; j < n; ++j) next[i * n + j] += l * rhs[p * n + j];
            }
        }
    };
    for (int k = 1; k <= 30; ++k) {
        product(term, x, 1.0 / k);
        term.swap(next);
        double biggest = 0;
        for (std::size_t i = 0; i < r.size(); ++i) {
            r[i] += term[i];
            biggest = std::max(biggest, std::abs(term[i]));
        }
        if (biggest < 1e-18) break;
    }
    for (int q = 0; q < squarings; ++q) {
        product(r, r, 1.0);
        r.swap(next);
    }
    if (!std::isfinite(norm)) std::fill(r.begin(), r.end(), kNaN);
    std::copy(r.begin(), r.end(), out);
}

Tensor matrix_exp(const Tensor& A) {
    check_dims(A, "linalg.matrix_exp");
    check_square(A, "linalg.matrix_exp");
    if (!A.is_floating_point()) {
        throw Error("linalg.matrix_exp: Expected a floating point or complex tensor as input. Got " + type_name_of(A));
    }
    Batch a = batch_of(A);
    Batch out = empty_batch(a.lead, a.n, a.n);
    for (int64_t b = 0; b < a.count; ++b) expm(a.at(b), a.n, out.at(b));
    return tensor_of(out, A.scalar_type());
}

// PyTorch's cutoff max(atol, rtol * s_max) per matrix (rtol defaults to eps * max(m, n)).
Tensor tolerance(const Tensor& s, int64_t m, int64_t n, std::optional<double> atol, std::optional<double> rtol) {
    double r;
    if (rtol) r = *rtol;
    else if (!atol || *atol == 0) r = (s.scalar_type() == kFloat ? 1.1920928955078125e-07 : 2.220446049250313e-16) * std::max(m, n);
    else r = 0.0;
    Shape lead(s.sizes().begin(), s.sizes().end() - 1);
    Tensor smax = s.size(-1) ? ember::amax(s, {s.dim() - 1}, true) : ember::zeros(lead, s.scalar_type()).unsqueeze(-1);
    return ember::clamp_min(smax * r, atol.value_or(0.0));
}

Tensor pinv(const Tensor& A, std::optional<double> atol, std::optional<double> rtol, bool hermitian) {
    if (A.dim() < 2 || !A.is_floating_point()) {
        throw Error("linalg.pinv(" + type_name_of(A) + "{" + bracketed(shape_of(A)).substr(1, bracketed(shape_of(A)).size() - 2) +
                    "}): expected a tensor with 2 or more dimensions of float, double, cfloat or cdouble types");
    }
    check_float(A, "linalg.pinv");
    if (hermitian) {
        check_square(A, "linalg.eigh");
        auto [w, v] = eigh(A, "L", true);
        Tensor aw = ember::abs(w);
        Tensor tol = tolerance(aw, A.size(-2), A.size(-1), atol, rtol);
        Tensor winv = ember::where(aw > tol, 1.0 / ember::where(w == 0, ember::ones_like(w), w), ember::zeros_like(w));
        return (v * winv.unsqueeze(-2)).matmul(v.transpose(-1, -2));
    }
    Svd d = svd(A, false, true);
    Tensor tol = tolerance(d.S, A.size(-2), A.size(-1), atol, rtol);
    Tensor sinv = ember::where(d.S > tol, 1.0 / ember::where(d.S == 0, ember::ones_like(d.S), d.S), ember::zeros_like(d.S));
    return (d.Vh.transpose(-1, -2) * sinv.unsqueeze(-2)).matmul(d.U.transpose(-1, -2));
}

Tensor matrix_rank(const Tensor& A, std::optional<double> atol, std::optional<double> rtol, bool hermitian) {
    if (A.dim() < 2) throw Error("torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions.");
    if (!A.is_floating_point()) throw Error("This function doesn't handle types other than float and double");
    check_float(A, "torch.linalg.matrix_rank");
    Tensor s = hermitian ? ember::abs(eigh(A, "L", false).first) : svdvals_of(A);
    Tensor tol = tolerance(s, A.size(-2), A.size(-1), atol, rtol);
    return ember::sum((s > tol).to(kLong), {s.dim() - 1});
}

OpResult lu_unpack(const Tensor& LU, const Tensor& piv, bool unpack_data, bool unpack_pivots) {
    if (LU.dim() < 2) {
        throw Error("torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: " + bracketed(shape_of(LU)) + " instead");
    }
    if (piv.scalar_type() != kInt) {
        throw Error("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype.");
    }
    const int64_t m = LU.size(-2), n = LU.size(-1), k = std::min(m, n);
    Shape lead(LU.sizes().begin(), LU.sizes().end() - 2);
    Shape plead = piv.dim() ? Shape(piv.sizes().begin(), piv.sizes().end() - 1) : Shape{};
    if (plead != lead || piv.dim() == 0 || piv.size(-1) > k) {
        Shape want = lead;
        want.push_back(k);
        throw Error("torch.lu_unpack: Expected LU_pivots of shape " + bracketed(want) + ", but got " + bracketed(shape_of(piv)));
    }
    Tensor empty = ember::zeros({0}, LU.scalar_type());
    Tensor P = empty, L = empty, U = empty;
    if (unpack_pivots) {
        Tensor pc = piv.contiguous();
        const int32_t* pp = pc.data_ptr<int32_t>();
        const int64_t kp = piv.size(-1);
        for (int64_t i = 0; i < pc.numel(); ++i) {
            if (pp[i] < 1 || pp[i] > m) {
                throw Error("pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive.Did you properly pass the result "
                            "of lu_factor?");
            }
        }
        Batch Pb = empty_batch(lead, m, m);
        for (int64_t b = 0; b < Pb.count; ++b) {
            std::vector<int64_t> order = permutation_order(pp + b * kp, kp, m);
            // row i of P^T is e_{order[i]}: P[order[i], i] = 1
            for (int64_t i = 0; i < m; ++i) Pb.at(b)[order[static_cast<std::size_t>(i)] * m + i] = 1;
        }
        P = tensor_of(Pb, LU.scalar_type());
    }
    if (unpack_data) {
        L = ember::tril(LU.narrow(-1, 0, k), -1) + ember::eye(m, k, LU.scalar_type());
        U = ember::triu(LU.narrow(-2, 0, k));
    }
    return {P, L, U};
}

}  // namespace

void register_more5_ops(OpTable& t) {
    // ---- inverses and determinants
    def(t, "inverse", "input", [](const Args& a) {
        Tensor A = a.tensor("input");
        check_matrix(A, "linalg.inv", true);
        return one(inverse_of(A, "linalg.inv", true));
    });
    def(t, "linalg.inv", "A, *, out=None", [](const Args& a) {
        Tensor A = a.tensor("A");
        check_matrix(A, "linalg.inv", true);
        return one(to_out(a, inverse_of(A, "linalg.inv", true)));
    });
    def(t, "linalg.inv_ex", "A, *, check_errors=False, out=None", [](const Args& a) -> OpResult {
        Tensor A = a.tensor("A");
        check_matrix(A, "linalg.inv", true);
        std::vector<int32_t> info;
        Tensor inv = inverse_of(A, "linalg.inv", a.boolean("check_errors"), &info);
        bool any = std::any_of(info.begin(), info.end(), [](int32_t v) { return v != 0; });
        if (any) inv = nan_like(A);
        return {inv, int_tensor(Shape(A.sizes().begin(), A.sizes().end() - 2), info)};
    });
    auto det = [](const Tensor& A) {
        check_matrix(A, "linalg.det", true);
        const Shape lead(A.sizes().begin(), A.sizes().end() - 2);
        if (A.is_complex()) return vector_tensor(lead, slogdet_of<cdouble>(A).det, A.scalar_type());
        return vector_tensor(lead, slogdet_of<double>(A).det, A.scalar_type());
    };
    def(t, "det", "input", [det](const Args& a) { return one(det(a.tensor("input"))); });
    def(t, "linalg.det", "A, *, out=None", [det](const Args& a) { return one(to_out(a, det(a.tensor("A")))); });
    // (sign, logabsdet): sign in A's dtype (det / |det| when complex), logabsdet real
    auto slogdet = [](const Tensor& A) -> OpResult {
        check_matrix(A, "linalg.slogdet", true);
        const Shape lead(A.sizes().begin(), A.sizes().end() - 2);
        if (A.is_complex()) {
            Slogdet<cdouble> r = slogdet_of<cdouble>(A);
            return {vector_tensor(lead, r.sign, A.scalar_type()), vector_tensor(lead, r.logabs, real_dtype(A))};
        }
        Slogdet<double> r = slogdet_of<double>(A);
        return {vector_tensor(lead, r.sign, A.scalar_type()), vector_tensor(lead, r.logabs, A.scalar_type())};
    };
    def(t, "slogdet", "input", [slogdet](const Args& a) { return slogdet(a.tensor("input")); });
    def(t, "linalg.slogdet", "A, *, out=None", [slogdet](const Args& a) { return slogdet(a.tensor("A")); });
    def(t, "logdet", "input", [slogdet](const Args& a) {
        const Tensor A = a.tensor("input");
        if (A.is_complex()) {
            // log(det) = log|det| + i arg(sign); a singular matrix: -inf + nan i, as PyTorch's
            check_matrix(A, "linalg.slogdet", true);
            Slogdet<cdouble> r = slogdet_of<cdouble>(A);
            std::vector<cdouble> l(r.sign.size());
            for (std::size_t i = 0; i < l.size(); ++i) {
                l[i] = r.sign[i] == cdouble(0) ? cdouble(-kInf, kNaN) : cdouble(r.logabs[i], std::arg(r.sign[i]));
            }
            return one(vector_tensor(Shape(A.sizes().begin(), A.sizes().end() - 2), l, A.scalar_type()));
        }
        OpResult r = slogdet(A);
        return one(r[1] + ember::where(r[0] < 0, scalar_tensor(kNaN, r[1].scalar_type()), scalar_tensor(0.0, r[1].scalar_type())));
    });

    // ---- solves
    def(t, "linalg.solve", "A, B, *, left=True, out=None", [](const Args& a) {
        return one(to_out(a, solve(a.tensor("A"), a.tensor("B"), a.boolean("left"), "linalg.solve", true)));
    });
    def(t, "linalg.solve_ex", "A, B, *, left=True, check_errors=False, out=None", [](const Args& a) -> OpResult {
        std::vector<int32_t> info;
        Tensor A = a.tensor("A"), B = a.tensor("B");
        Tensor x = solve(A, B, a.boolean("left"), "linalg.solve", a.boolean("check_errors"), &info);
        const bool vector = B.dim() == 1 || (B.dim() == A.dim() - 1 && Shape(B.sizes().begin(), B.sizes().end()) ==
                                                                            Shape(A.sizes().begin(), A.sizes().end() - 1));
        const Shape lead(x.sizes().begin(), x.sizes().end() - (vector ? 1 : 2));
        if (std::any_of(info.begin(), info.end(), [](int32_t v) { return v != 0; })) x = nan_like(x);
        return {x, int_tensor(lead, info)};
    });
    def(t, "linalg.solve_triangular", "input, B, *, upper, left=True, unitriangular=False, out=None", [](const Args& a) {
        return one(to_out(a, solve_triangular(a.tensor("input"), a.tensor("B"), a.boolean("upper"), a.boolean("left"),
                                              a.boolean("unitriangular"), "linalg.solve_triangular")));
    });
    def(t, "triangular_solve", "input, A, upper=True, transpose=False, unitriangular=False, out=None", [](const Args& a) -> OpResult {
        Tensor b = a.tensor("input"), A = a.tensor("A");
        const char* names[] = {"b", "A"};
        const Tensor* ts[] = {&b, &A};
        for (int k = 0; k < 2; ++k) {
            if (ts[k]->dim() < 2) {
                throw Error(std::string("torch.triangular_solve: Expected ") + names[k] +
                            " to have at least 2 dimensions, but it has " + std::to_string(ts[k]->dim()) + " dimensions instead");
            }
        }
        check_linear_solve(b, A, "triangular_solve");
        const Shape batch = batch_shape(b, A);
        Tensor coef = broadcast_batch(A, batch).clone();
        const bool transpose = a.boolean("transpose");
        Tensor x = solve_triangular(transpose ? A.transpose(-1, -2) : A, b, a.boolean("upper") != transpose, true,
                                    a.boolean("unitriangular"), "linalg.solve_triangular");
        return {x, coef};
    });

    // ---- Cholesky
    def(t, "cholesky", "input, upper=False", [](const Args& a) {
        return one(cholesky(a.tensor("input"), a.boolean("upper"), "cholesky", true));
    });
    def(t, "linalg.cholesky", "input, *, upper=False, out=None, _name='linalg.cholesky'", [](const Args& a) {
        return one(to_out(a, cholesky(a.tensor("input"), a.boolean("upper"), a.string("_name"), true)));
    });
    def(t, "linalg.cholesky_ex", "input, *, upper=False, check_errors=False, out=None", [](const Args& a) -> OpResult {
        std::vector<int32_t> info;
        Tensor A = a.tensor("input");
        Tensor L = cholesky(A, a.boolean("upper"), "linalg.cholesky", a.boolean("check_errors"), &info);
        return {L, int_tensor(Shape(A.sizes().begin(), A.sizes().end() - 2), info)};
    });
    def(t, "cholesky_solve", "input, input2, upper=False, out=None", [](const Args& a) {
        return one(to_out(a, cholesky_solve(a.tensor("input"), a.tensor("input2"), a.boolean("upper"))));
    });
    def(t, "cholesky_inverse", "input, upper=False, out=None", [](const Args& a) {
        Tensor L = a.tensor("input");
        const std::string fn = "cholesky_inverse";
        check_dims(L, fn);
        check_square(L, fn);
        kernel_dtype(L, "cholesky_inverse_out_cpu");
        Batch l = batch_of(L);
        const int64_t n = l.n;
        for (int64_t b = 0; b < l.count; ++b) {
            for (int64_t i = 0; i < n; ++i) {
                if (l.at(b)[i * n + i] == 0) {
                    throw Error(fn + ": " + batch_prefix(L, b) + "The diagonal element " + std::to_string(i + 1) +
                                " is zero, the inversion could not be completed because the input matrix is singular.");
                }
            }
        }
        const bool upper = a.boolean("upper");
        Tensor eye = ember::eye(n, L.scalar_type()).expand(shape_of(L));
        Tensor fi = solve_triangular(L, eye, upper, true, false, fn);
        Tensor r = upper ? fi.matmul(fi.transpose(-1, -2)) : fi.transpose(-1, -2).matmul(fi);
        return one(to_out(a, r));
    });

    // ---- QR and Householder reflectors
    auto qr = [](const Tensor& A, const std::string& mode) -> OpResult {
        if (mode != "reduced" && mode != "complete" && mode != "r") {
            throw Error("qr received unrecognized mode '" + mode + "' but expected one of 'reduced' (default), 'r', or 'complete'");
        }
        check_matrix(A, "linalg.qr");
        auto [Q, R] = qr_of(A, mode == "complete");
        if (mode == "r") return {ember::zeros({0}, A.scalar_type()), tensor_of(R, A.scalar_type())};
        return {tensor_of(Q, A.scalar_type()), tensor_of(R, A.scalar_type())};
    };
    def(t, "qr", "input, some=True", [qr](const Args& a) { return qr(a.tensor("input"), a.boolean("some") ? "reduced" : "complete"); });
    def(t, "linalg.qr", "A, mode='reduced', *, out=None", [qr](const Args& a) { return qr(a.tensor("A"), a.string("mode")); });
    def(t, "geqrf", "input, out=None", [](const Args& a) -> OpResult {
        Tensor A = a.tensor("input");
        if (A.dim() < 2) throw Error("torch.geqrf: input must have at least 2 dimensions.");
        kernel_dtype(A, "geqrf_cpu");
        Batch x = batch_of(A);
        const int64_t k = std::min(x.m, x.n);
        std::vector<double> tau(static_cast<std::size_t>(x.count * k));
        for (int64_t b = 0; b < x.count; ++b) geqr2(x.at(b), x.m, x.n, tau.data() + b * k);
        Shape ts = x.lead;
        ts.push_back(k);
        return {tensor_of(x, A.scalar_type()), vector_tensor(ts, tau, A.scalar_type())};
    });
    auto check_reflectors = [](const Tensor& A, const Tensor& tau, const std::string& fn, const Tensor* C) {
        if (A.dim() < 2) throw Error(fn + ": input must have at least 2 dimensions.");
        if (C && C->dim() < 2) throw Error(fn + ": other must have at least 2 dimensions.");
        if (tau.dim() != A.dim() - 1) {
            throw Error(fn + ": Expected tau to have one dimension less than input, but got tau.ndim equal to " +
                        std::to_string(tau.dim()) + " and input.ndim is equal to " + std::to_string(A.dim()));
        }
        if (C && C->dim() != A.dim()) {
            throw Error(fn + ": Expected other to have the same number of dimensions as input, but got other.ndim equal to " +
                        std::to_string(C->dim()) + " and input.ndim is equal to " + std::to_string(A.dim()));
        }
        const Shape lead(A.sizes().begin(), A.sizes().end() - 2);
        if (Shape(tau.sizes().begin(), tau.sizes().end() - 1) != lead) {
            throw Error(fn + ": Expected batch dimensions of tau to be equal to input.shape[:-2], but got " +
                        bracketed(Shape(tau.sizes().begin(), tau.sizes().end() - 1)));
        }
        if (C && Shape(C->sizes().begin(), C->sizes().end() - 2) != lead) {
            throw Error(fn + ": Expected batch dimensions of other to be equal to input.shape[:-2], but got " +
                        bracketed(Shape(C->sizes().begin(), C->sizes().end() - 2)));
        }
    };
    auto householder_product = [check_reflectors](const Tensor& A, const Tensor& tau) {
        const std::string fn = "torch.linalg.householder_product";
        if (A.dim() >= 2 && A.size(-2) < A.size(-1)) {
            throw Error(fn + ": input.shape[-2] must be greater than or equal to input.shape[-1]");
        }
        if (A.dim() >= 2 && tau.dim() && A.size(-1) < tau.size(-1)) {
            throw Error(fn + ": input.shape[-1] must be greater than or equal to tau.shape[-1]");
        }
        check_reflectors(A, tau, fn, nullptr);
        if (tau.scalar_type() != A.scalar_type()) {
            throw Error(fn + ": tau dtype " + type_name_of(tau) + " does not match input dtype " + type_name_of(A));
        }
        kernel_dtype(A, "orgqr_cpu");
        Batch v = batch_of(A);
        Batch tb = batch_of(tau.unsqueeze(-1));
        Batch q = empty_batch(v.lead, v.m, v.n);
        const int64_t k = tau.size(-1);
        for (int64_t b = 0; b < v.count; ++b) {
            for (int64_t i = 0; i < std::min(v.m, v.n); ++i) q.at(b)[i * v.n + i] = 1;
            apply_reflectors(v.at(b), v.m, v.n, tb.at(b), k, q.at(b), v.m, v.n, true, false);
        }
        return tensor_of(q, A.scalar_type());
    };
    def(t, "orgqr", "input, input2", [householder_product](const Args& a) {
        return one(householder_product(a.tensor("input"), a.tensor("input2")));
    });
    def(t, "linalg.householder_product", "input, tau, *, out=None", [householder_product](const Args& a) {
        return one(to_out(a, householder_product(a.tensor("input"), a.tensor("tau"))));
    });
    def(t, "ormqr", "input, input2, input3, left=True, transpose=False, out=None", [check_reflectors](const Args& a) {
        Tensor A = a.tensor("input"), tau = a.tensor("input2"), C = a.tensor("input3");
        const std::string fn = "torch.ormqr";
        check_reflectors(A, tau, fn, &C);
        const bool left = a.boolean("left");
        const int side = left ? -2 : -1;
        if (C.size(side) != A.size(-2)) {
            throw Error(fn + ": other.shape[" + std::to_string(side) + "] must be equal to input.shape[-2]");
        }
        if (tau.size(-1) != std::min(C.size(side), A.size(-1))) {
            throw Error(fn + ": tau.shape[-1] must be equal to min(other.shape[" + std::to_string(side) + "], input.shape[-1])");
        }
        for (const auto& [x, name] : {std::pair<const Tensor*, const char*>{&C, "other"}, {&tau, "tau"}}) {
            if (x->scalar_type() != A.scalar_type()) {
                throw Error(fn + ": Expected input and " + name + " to have the same dtype, but input has dtype" + type_name_of(A) +
                            " and " + name + " has dtype " + type_name_of(*x));
            }
        }
        kernel_dtype(A, "ormqr_cpu");
        Batch v = batch_of(A), c = batch_of(C), tb = batch_of(tau.unsqueeze(-1));
        for (int64_t b = 0; b < v.count; ++b) {
            apply_reflectors(v.at(b), v.m, v.n, tb.at(b), tau.size(-1), c.at(b), c.m, c.n, left, a.boolean("transpose"));
        }
        return one(to_out(a, tensor_of(c, A.scalar_type())));
    });

    // ---- LU
    auto check_lu_input = [](const Tensor& A) {
        check_dims(A, "torch.lu_factor");
        kernel_dtype(A, "linalg_lu_factor_ex_out");
    };
    def(t, "lu", "A, pivot=True, get_infos=False, out=None", [check_lu_input](const Args& a) -> OpResult {
        Tensor A = a.tensor("A");
        check_lu_input(A);
        LuResult f = lu_factor(A, a.boolean("pivot"));
        OpResult r{tensor_of(f.lu, A.scalar_type()), pivots_tensor(f)};
        if (a.boolean("get_infos")) r.push_back(int_tensor(f.lu.lead, f.info));
        return r;
    });
    def(t, "linalg.lu_factor_ex", "A, *, pivot=True, check_errors=False, out=None", [check_lu_input](const Args& a) -> OpResult {
        Tensor A = a.tensor("A");
        check_lu_input(A);
        LuResult f = lu_factor(A, a.boolean("pivot"));
        if (a.boolean("check_errors")) {
            for (int64_t b = 0; b < f.lu.count; ++b) {
                const std::string info = std::to_string(f.info[static_cast<std::size_t>(b)]);
                if (info != "0") {
                    throw Error("torch.linalg.lu_factor_ex: " + batch_prefix(A, b) + "U[" + info + "," + info +
                                "] is zero and using it on lu_solve would result in a division by zero. If you still want to "
                                "perform the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)");
                }
            }
        }
        return {tensor_of(f.lu, A.scalar_type()), pivots_tensor(f), int_tensor(f.lu.lead, f.info)};
    });
    def(t, "linalg.lu_factor", "A, *, pivot=True, out=None", [check_lu_input](const Args& a) -> OpResult {
        Tensor A = a.tensor("A");
        check_lu_input(A);
        LuResult f = lu_factor(A, a.boolean("pivot"));
        for (int64_t b = 0; b < f.lu.count; ++b) {
            const int32_t info = f.info[static_cast<std::size_t>(b)];
            if (info) {
                throw Error("torch.linalg.lu_factor: " + batch_prefix(A, b) + "U[" + std::to_string(info) + "," + std::to_string(info) +
                            "] is zero and using it on lu_solve would result in a division by zero. If you still want to "
                            "perform the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)");
            }
        }
        return {tensor_of(f.lu, A.scalar_type()), pivots_tensor(f)};
    });
    def(t, "linalg.lu", "A, *, pivot=True, out=None", [](const Args& a) -> OpResult {
        Tensor A = a.tensor("A");
        check_dims(A, "linalg.lu");
        kernel_dtype(A, "linalg_lu_factor_ex_out");
        const bool pivot = a.boolean("pivot");
        LuResult f = lu_factor(A, pivot);
        Tensor LU = tensor_of(f.lu, A.scalar_type());
        OpResult r = lu_unpack(LU, pivots_tensor(f), true, pivot);
        if (!pivot) r[0] = ember::zeros({0}, A.scalar_type());
        return r;
    });
    def(t, "lu_unpack", "LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, out=None", [](const Args& a) {
        return lu_unpack(a.tensor("LU_data"), a.tensor("LU_pivots"), a.boolean("unpack_data"), a.boolean("unpack_pivots"));
    });
    auto lu_solve = [](const Tensor& LU, const Tensor& piv, const Tensor& B, bool left, bool adjoint) {
        const std::string fn = "torch.linalg.lu_solve";
        check_dims(LU, fn, "LU");
        check_square(LU, fn);
        check_dims(B, fn, "B");
        if (left ? B.size(-2) != LU.size(-1) : B.size(-1) != LU.size(-1)) {
            throw Error(fn + ": Incompatible shapes of A and B for the equation " + (left ? "AX = B" : "XA = B") + " (" +
                        std::to_string(LU.size(-1)) + "x" + std::to_string(LU.size(-1)) + " and " + std::to_string(B.size(-2)) + "x" +
                        std::to_string(B.size(-1)) + ")");
        }
        if (piv.scalar_type() != kInt) throw Error(fn + ": Expected pivots to be integers. Got " + type_name_of(piv));
        if (B.scalar_type() != LU.scalar_type()) {
            throw Error(fn + ": Expected LU and B to have the same dtype, but found LU of type " + type_name_of(LU) + " and B of type " +
                        type_name_of(B) + " instead");
        }
        // X A = B  <=>  A^T X^T = B^T
        const Tensor Bl = left ? B : B.transpose(-1, -2);
        const bool trans = left ? adjoint : !adjoint;
        const int64_t n = LU.size(-1);
        const Shape batch = batch_shape(LU, Bl);
        Batch lu = batch_of(broadcast_batch(LU, batch));
        Shape pshape = batch;
        pshape.push_back(n);
        Tensor pc = piv.expand(pshape).contiguous();
        Batch x = batch_of(broadcast_batch(Bl, batch));
        for (int64_t b = 0; b < x.count; ++b) lu_solve_inplace(lu.at(b), pc.data_ptr<int32_t>() + b * n, n, x.at(b), x.n, trans);
        Tensor r = tensor_of(x, LU.scalar_type());
        return left ? r : r.transpose(-1, -2).contiguous();
    };
    def(t, "linalg.lu_solve", "LU, pivots, B, *, left=True, adjoint=False, out=None", [lu_solve](const Args& a) {
        return one(to_out(a, lu_solve(a.tensor("LU"), a.tensor("pivots"), a.tensor("B"), a.boolean("left"), a.boolean("adjoint"))));
    });
    def(t, "lu_solve", "input, LU_data, LU_pivots, out=None", [lu_solve](const Args& a) {
        return one(to_out(a, lu_solve(a.tensor("LU_data"), a.tensor("LU_pivots"), a.tensor("input"), true, false)));
    });

    // ---- spectral: svd, eigh and what they give
    def(t, "linalg.svd", "A, full_matrices=True, *, driver=None, out=None", [](const Args& a) -> OpResult {
        if (!a.is_none("driver")) {
            throw Error("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with cuSOLVER backend.");
        }
        Svd d = svd(a.tensor("A"), a.boolean("full_matrices"), true);
        return {d.U, d.S, d.Vh};
    });
    def(t, "svd", "input, some=True, compute_uv=True", [](const Args& a) -> OpResult {
        Tensor A = a.tensor("input");
        if (!a.boolean("compute_uv")) {
            Tensor s = svd(A, false, false).S;
            Shape lead(A.sizes().begin(), A.sizes().end() - 2);
            Shape us = lead, vs = lead;
            us.insert(us.end(), {A.size(-2), A.size(-2)});
            vs.insert(vs.end(), {A.size(-1), A.size(-1)});
            return {ember::zeros(us, A.scalar_type()), s, ember::zeros(vs, A.scalar_type())};  // S real
        }
        Svd d = svd(A, !a.boolean("some"), true);
        return {d.U, d.S, ember::conj_physical(d.Vh.transpose(-1, -2)).contiguous()};  // V = Vh^H
    });
    def(t, "linalg.svdvals", "A, *, driver=None, out=None", [](const Args& a) { return one(to_out(a, svdvals_of(a.tensor("A")))); });
    def(t, "linalg.eigh", "input, UPLO='L', *, out=None", [](const Args& a) -> OpResult {
        auto [w, v] = eigh(a.tensor("input"), a.string("UPLO"), true);
        return {w, v};
    });
    def(t, "linalg.ldl_factor_ex", "input, *, hermitian=False, check_errors=False, out=None", [](const Args& a) -> OpResult {
        Ldl f = ldl_factor(a.tensor("input"), "torch.linalg.ldl_factor_ex", a.boolean("check_errors"), a.boolean("hermitian"));
        return {f.LD, f.pivots, f.info};
    });
    def(t, "linalg.ldl_factor", "input, *, hermitian=False, out=None", [](const Args& a) -> OpResult {
        Ldl f = ldl_factor(a.tensor("input"), "torch.linalg.ldl_factor", true, a.boolean("hermitian"));
        return {f.LD, f.pivots};
    });
    def(t, "linalg.ldl_solve", "LD, pivots, B, *, hermitian=False, out=None", [](const Args& a) {
        return one(to_out(a, ldl_solve(a.tensor("LD"), a.tensor("pivots"), a.tensor("B"), a.boolean("hermitian"))));
    });
    def(t, "linalg.eig", "input, *, out=None", [](const Args& a) -> OpResult {
        auto [w, v] = eig(a.tensor("input"), true);
        return {w, v};
    });
    def(t, "linalg.eigvals", "input, *, out=None", [](const Args& a) { return one(to_out(a, eig(a.tensor("input"), false).first)); });
    allow_complex(t, "linalg.eig");
    allow_complex(t, "linalg.eigvals");
    def(t, "linalg.eigvalsh", "input, UPLO='L', *, out=None", [](const Args& a) {
        return one(to_out(a, eigh(a.tensor("input"), a.string("UPLO"), false).first));
    });
    def(t, "linalg.pinv", "input, *, atol=None, rtol=None, hermitian=False, rcond=None, out=None", [](const Args& a) {
        std::optional<double> rtol = a.optional_number("rtol");
        if (!a.is_none("rcond")) rtol = a.number("rcond");
        return one(to_out(a, pinv(a.tensor("input"), a.optional_number("atol"), rtol, a.boolean("hermitian"))));
    });
    def(t, "pinverse", "input, rcond=1e-15", [](const Args& a) {
        return one(pinv(a.tensor("input"), std::nullopt, a.number("rcond"), false));
    });
    def(t, "linalg.matrix_rank", "input, *, atol=None, rtol=None, hermitian=False, tol=None, out=None", [](const Args& a) {
        std::optional<double> atol = a.optional_number("atol"), rtol = a.optional_number("rtol");
        if (!a.is_none("tol")) {
            atol = a.number("tol");
            rtol = 0.0;
        }
        return one(to_out(a, matrix_rank(a.tensor("input"), atol, rtol, a.boolean("hermitian"))));
    });
    def(t, "linalg.lstsq", "input, b, rcond=None, *, driver=None", [](const Args& a) -> OpResult {
        const std::string driver = a.is_none("driver") ? "gelsy" : a.string("driver");
        if (driver != "gels" && driver != "gelsy" && driver != "gelsd" && driver != "gelss") {
            throw Error("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)");
        }
        Tensor A = a.tensor("input"), B = a.tensor("b");
        check_matrix(A, "torch.linalg.lstsq");
        const bool vector = B.dim() == A.dim() - 1;
        Tensor Bm = vector ? B.unsqueeze(-1) : B;
        if (Bm.size(-2) != A.size(-2)) throw Error("torch.linalg.lstsq: input.size(-2) should match other.size(-2)");
        std::optional<double> rcond = a.optional_number("rcond");
        Tensor X = pinv(A, std::nullopt, rcond, false).matmul(Bm);
        const int64_t m = A.size(-2), n = A.size(-1);
        Tensor empty = ember::zeros({0}, A.scalar_type());
        Tensor rank = driver != "gels" ? matrix_rank(A, std::nullopt, rcond, false) : ember::zeros({0}, kLong);
        Tensor residuals = empty;
        const bool full_rank = driver == "gels" || ember::all(rank == n).item<bool>();
        if (driver != "gelsy" && m > n && full_rank) {
            Tensor r = A.matmul(X) - Bm;
            residuals = ember::sum(r * r, {r.dim() - 2});
        }
        Tensor sv = driver == "gelsd" || driver == "gelss" ? svdvals_of(A) : empty;
        if (vector) X = X.squeeze(-1);
        return {X, residuals, rank, sv};
    });

    // ---- matrix functions
    for (const char* name : {"matrix_power", "linalg.matrix_power"}) {
        const bool linalg = std::string(name).rfind("linalg.", 0) == 0;
        def(t, name, linalg ? "input, n, *, out=None" : "input, n", [linalg](const Args& a) {
            Tensor r = matrix_power(a.tensor("input"), a.integer("n"));
            return one(linalg ? to_out(a, r) : r);
        });
    }
    for (const char* name : {"matrix_exp", "linalg.matrix_exp"}) {
        def(t, name, "input", [](const Args& a) { return one(matrix_exp(a.tensor("input"))); });
    }
    def(t, "linalg.tensorinv", "input, ind=2, *, out=None", [](const Args& a) {
        Tensor x = a.tensor("input");
        const int64_t ind = a.integer("ind");
        if (ind <= 0) throw Error("Expected a strictly positive integer for 'ind', but got " + std::to_string(ind));
        Shape first(x.sizes().begin(), x.sizes().begin() + std::min<int64_t>(ind, x.dim()));
        Shape rest(x.sizes().begin() + std::min<int64_t>(ind, x.dim()), x.sizes().end());
        int64_t p = 1, q = 1;
        for (int64_t s : first) p *= s;
        for (int64_t s : rest) q *= s;
        if (p != q) {
            throw Error("Expected self to satisfy the requirement prod(self.shape[ind:]) == prod(self.shape[:ind]), but got " +
                        std::to_string(q) + " != " + std::to_string(p));
        }
        Tensor m = x.reshape({p, q});
        check_float(m, "linalg.inv");
        Shape out = rest;
        out.insert(out.end(), first.begin(), first.end());
        return one(to_out(a, inverse_of(m, "linalg.inv", true).reshape(out)));
    });

    def(t, "linalg.tensorsolve", "input, other, dims=None, *, out=None", [](const Args& a) {
        Tensor A = a.tensor("input"), B = a.tensor("other");
        if (!a.is_none("dims")) {
            // move `dims` of input to the end, in order
            Shape dims = dims_list(a["dims"], "linalg.tensorsolve(): dims");
            for (int64_t& d : dims) d = dim_index(d, A.dim(), "linalg.tensorsolve");
            Shape perm;
            for (int64_t k = 0; k < A.dim(); ++k) {
                if (std::find(dims.begin(), dims.end(), k) == dims.end()) perm.push_back(k);
            }
            perm.insert(perm.end(), dims.begin(), dims.end());
            A = A.permute(perm);
        }
        const Shape result_shape(A.sizes().begin() + std::min<int64_t>(B.dim(), A.dim()), A.sizes().end());
        int64_t result_size = 1, other_size = 1;
        for (int64_t v : result_shape) result_size *= v;
        for (int64_t v : B.sizes()) other_size *= v;
        if (result_size != other_size) {
            throw Error("Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), "
                        "but got " + std::to_string(result_size) + " != " + std::to_string(other_size));
        }
        Tensor x = solve(A.reshape({result_size, result_size}), B.reshape({-1}), true, "linalg.solve", true);
        return one(to_out(a, x.reshape(result_shape)));
    });

    // ---- norms
    def(t, "linalg.vector_norm", "input, ord=2, dim=None, keepdim=False, *, dtype=None, out=None", [](const Args& a) {
        return one(to_out(a, linalg_vector_norm(a.tensor("input"), ord_of(a["ord"], "linalg_vector_norm"), a["dim"], a.boolean("keepdim"),
                                                a.dtype("dtype"))));
    });
    def(t, "linalg.matrix_norm", "input, ord='fro', dim=(-2, -1), keepdim=False, *, dtype=None, out=None", [](const Args& a) {
        return one(to_out(a, matrix_norm(a.tensor("input"), a["ord"], a["dim"], a.boolean("keepdim"), a.dtype("dtype"))));
    });
    def(t, "linalg.norm", "input, ord=None, dim=None, keepdim=False, *, dtype=None, out=None", [](const Args& a) {
        Tensor A = a.tensor("input");
        const Value& ord = a["ord"];
        const Value& dim = a["dim"];
        Shape dims = dims_list(dim, "linalg.norm(): dim");
        if (!dim.is_none() && dims.size() != 1 && dims.size() != 2) {
            std::ostringstream os;
            for (std::size_t i = 0; i < dims.size(); ++i) os << (i ? ", " : "") << dims[i];
            throw Error("linalg.norm: If dim is specified, it must be of length 1 or 2. Got [" + os.str() + "]");
        }
        if (dim.is_none() && !ord.is_none() && A.dim() != 1 && A.dim() != 2) {
            throw Error("linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got " +
                        std::to_string(A.dim()) + "D.");
        }
        const bool keepdim = a.boolean("keepdim");
        Tensor r;
        if (ord.is_none()) {
            r = linalg_vector_norm(A, 2, dim, keepdim, a.dtype("dtype"));
        } else if (ord.kind == Value::Kind::String || dims.size() == 2 || (dim.is_none() && A.dim() == 2)) {
            Value d = dim.is_none() ? Value::list({Value::integer(-2), Value::integer(-1)}) : dim;
            r = matrix_norm(A, ord, d, keepdim, a.dtype("dtype"));
        } else {
            r = linalg_vector_norm(A, ord_of(ord, "linalg.norm"), dim, keepdim, a.dtype("dtype"));
        }
        return one(to_out(a, r));
    });
    def(t, "linalg.cond", "input, p=None, *, out=None", [](const Args& a) {
        Tensor A = a.tensor("input");
        if (A.dim() < 2) throw Error("linalg.cond: The input tensor must have at least 2 dimensions.");
        const Value& p = a["p"];
        Value ord = p.is_none() ? Value::integer(2) : p;
        bool valid;
        double o = 0;
        if (ord.kind == Value::Kind::String) {
            valid = ord.s == "fro" || ord.s == "nuc";
        } else {
            o = ord_of(ord, "linalg.cond");
            valid = std::abs(o) == 1 || std::abs(o) == 2 || std::isinf(o);
        }
        auto ord_text = [&]() {
            if (ord.kind == Value::Kind::String) return ord.s;
            if (o == std::floor(o) && std::isfinite(o)) return std::to_string(static_cast<int64_t>(o));
            return describe(ord);
        };
        if (!valid) throw Error("linalg.cond got an invalid norm type: " + ord_text());
        if (A.numel() == 0) return one(to_out(a, ember::zeros(Shape(A.sizes().begin(), A.sizes().end() - 2), real_dtype(A))));
        if (ord.kind != Value::Kind::String && std::abs(o) == 2) {
            Tensor s = svdvals_of(A);
            Tensor big = s.narrow(-1, 0, 1), small = s.narrow(-1, s.size(-1) - 1, 1);
            return one(to_out(a, (o == 2 ? big / small : small / big).squeeze(-1)));
        }
        if (A.size(-1) != A.size(-2)) {
            throw Error("linalg.cond(ord=" + ord_text() + "): A must be batches of square matrices, but they are " +
                        std::to_string(A.size(-2)) + " by " + std::to_string(A.size(-1)) + " matrices");
        }
        check_float(A, "linalg.inv");
        std::vector<int32_t> info;
        Tensor inverse = inverse_of(A, "linalg.inv", false, &info);
        Tensor singular = int_tensor(Shape(A.sizes().begin(), A.sizes().end() - 2), info) > 0;
        inverse = ember::masked_fill(inverse, singular.unsqueeze(-1).unsqueeze(-1).expand(shape_of(inverse)), kInf);
        Value d = Value::list({Value::integer(-2), Value::integer(-1)});
        Tensor r = matrix_norm(A, ord, d, false, std::nullopt) * matrix_norm(inverse, ord, d, false, std::nullopt);
        r = ember::where(ember::isnan(r), scalar_tensor(kInf, r.scalar_type()), r);
        return one(to_out(a, r));
    });

    // ---- products and views
    def(t, "linalg.matmul", "input, other", [](const Args& a) { return one(ember::matmul(a.tensor("input"), a.tensor("other"))); });
    def(t, "linalg.vecdot", "x, y, *, dim=-1, out=None", [](const Args& a) {
        Tensor x = a.tensor("x"), y = a.tensor("y");
        for (const Tensor* v : {&x, &y}) {
            if (!v->is_floating_point()) {
                throw Error("linalg.vecdot: Expected a floating point or complex tensor as input. Got " + type_name_of(*v));
            }
        }
        if (x.scalar_type() != y.scalar_type()) {
            throw Error("linalg.vecdot: Expected x and y to have the same dtype, but found x of type " + type_name_of(x) +
                        " and y of type " + type_name_of(y) + " instead");
        }
        Tensor p = x * y;
        return one(to_out(a, ember::sum(p, {dim_index(a.integer("dim"), p.dim(), "linalg.vecdot")})));
    });
    def(t, "linalg.cross", "input, other, *, dim=-1, out=None", [](const Args& a) {
        Kwargs kw{{"dim", a["dim"]}};
        return one(to_out(a, op_table().at("cross").fn({a["input"], a["other"]}, kw).at(0)));
    });
    def(t, "linalg.multi_dot", "tensors, *, out=None", [](const Args& a) {
        std::vector<Tensor> ts = a.tensors("tensors");
        const std::size_t n = ts.size();
        if (n < 2) throw Error("multi_dot(): expected at least 2 tensors but got " + std::to_string(n));
        for (std::size_t i = 0; i < n; ++i) {
            const int64_t nd = ts[i].dim();
            const std::string got = " but got " + std::to_string(nd) + "D";
            if (i == 0 && nd != 1 && nd != 2) throw Error("multi_dot(): the first tensor must be 1D or 2D" + got);
            if (i == n - 1 && nd != 1 && nd != 2) throw Error("multi_dot(): the last tensor must be 1D or 2D" + got);
            if (i > 0 && i < n - 1 && nd != 2) throw Error("multi_dot(): tensor " + std::to_string(i) + " must be 2D" + got);
            if (ts[i].scalar_type() != ts[0].scalar_type()) {
                throw Error("multi_dot(): all tensors must have be the same dtype but tensor 0 is " + type_name_of(ts[0]) + " and tensor " +
                            std::to_string(i) + " " + type_name_of(ts[i]));
            }
        }
        const bool first_vec = ts[0].dim() == 1, last_vec = ts[n - 1].dim() == 1;
        if (first_vec) ts[0] = ts[0].unsqueeze(0);
        if (last_vec) ts[n - 1] = ts[n - 1].unsqueeze(-1);
        for (std::size_t i = 0; i + 1 < n; ++i) {
            if (ts[i].size(-1) != ts[i + 1].size(0)) {
                throw Error("multi_dot(): tensors " + std::to_string(i) + " and " + std::to_string(i + 1) + " with shapes " +
                            bracketed(shape_of(ts[i])) + " and " + bracketed(shape_of(ts[i + 1])) + " cannot be multiplied");
            }
        }
        // the cheapest order (the classic matrix-chain dynamic program)
        std::vector<int64_t> dims;
        for (const Tensor& x : ts) dims.push_back(x.size(0));
        dims.push_back(ts[n - 1].size(1));
        std::vector<std::vector<double>> cost(n, std::vector<double>(n, 0.0));
        std::vector<std::vector<std::size_t>> split(n, std::vector<std::size_t>(n, 0));
        for (std::size_t len = 1; len < n; ++len) {
            for (std::size_t i = 0; i + len < n; ++i) {
                const std::size_t j = i + len;
                cost[i][j] = kInf;
                for (std::size_t k = i; k < j; ++k) {
                    const double flops = static_cast<double>(dims[i]) * static_cast<double>(dims[k + 1]) * static_cast<double>(dims[j + 1]);
                    const double c = cost[i][k] + cost[k + 1][j] + flops;
                    if (c < cost[i][j]) {
                        cost[i][j] = c;
                        split[i][j] = k;
                    }
                }
            }
        }
        std::function<Tensor(std::size_t, std::size_t)> product = [&](std::size_t i, std::size_t j) -> Tensor {
            if (i == j) return ts[i];
            const std::size_t k = split[i][j];
            return product(i, k).matmul(product(k + 1, j));
        };
        Tensor r = product(0, n - 1);
        if (first_vec && last_vec) r = r.reshape({});
        else if (first_vec) r = r.squeeze(0);
        else if (last_vec) r = r.squeeze(-1);
        return one(to_out(a, r));
    });
    def(t, "linalg.vander", "x, *, N=None", [](const Args& a) {
        Tensor x = a.tensor("x");
        const ScalarType dt = x.scalar_type();
        if (dt == kBool || dt == kHalf) {
            throw Error("linalg.vander supports floating point, complex, and integer tensors, but got " + type_name_of(x));
        }
        if (x.dim() == 0) x = x.unsqueeze(-1);
        const int64_t n = a.is_none("N") ? x.size(-1) : a.integer("N");
        if (n <= 1) throw Error("N must be greater than 1.");
        if (!x.is_floating_point()) x = x.to(kLong);  // cumprod of integers: int64
        std::vector<Tensor> cols{ember::ones_like(x)};
        for (int64_t k = 1; k < n; ++k) cols.push_back(k == 1 ? x.clone() : cols.back() * x);
        return one(ember::stack(cols, -1));
    });
    def(t, "linalg.diagonal", "A, *, offset=0, dim1=-2, dim2=-1", [](const Args& a) {
        return one(a.tensor("A").diagonal(a.integer("offset"), a.integer("dim1"), a.integer("dim2")));
    });
}

}  // namespace ember::jit::detail
