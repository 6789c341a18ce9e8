#include "blas.h"

#include <algorithm>
#include <climits>

#include "ember/error.h"
#include "ember/ops.h"

#ifdef EMBER_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace ember {
namespace native {
namespace blas {

namespace {

template <typename T>
void gemm_fallback(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
                   int64_t ldb, T beta, T* c, int64_t ldc) {
    for (int64_t i = 0; i < m; ++i) {
        T* crow = c + i * ldc;
        if (beta == T(0)) {
            std::fill(crow, crow + n, T(0));
        } else if (beta != T(1)) {
            for (int64_t j = 0; j < n; ++j) crow[j] *= beta;
        }
        for (int64_t p = 0; p < k; ++p) {
            const T av = alpha * (ta ? a[p * lda + i] : a[i * lda + p]);
            if (av == T(0)) continue;
            if (!tb) {
                const T* brow = b + p * ldb;
                for (int64_t j = 0; j < n; ++j) crow[j] += av * brow[j];
            } else {
                for (int64_t j = 0; j < n; ++j) crow[j] += av * b[j * ldb + p];
            }
        }
    }
}

#ifdef EMBER_HAVE_OPENBLAS
void check_int(int64_t v) { EMBER_CHECK(v <= INT_MAX, "matrix dimension ", v, " is too large for 32-bit BLAS"); }

void cblas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, float alpha, const float* a, int lda,
                const float* b, int ldb, float beta, float* c, int ldc) {
    scipy_cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void cblas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, double alpha, const double* a, int lda,
                const double* b, int ldb, double beta, double* c, int ldc) {
    scipy_cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
// cblas takes complex scalars and arrays by pointer (std::complex is layout-compatible)
void cblas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, std::complex<float> alpha,
                const std::complex<float>* a, int lda, const std::complex<float>* b, int ldb, std::complex<float> beta,
                std::complex<float>* c, int ldc) {
    scipy_cblas_cgemm(CblasRowMajor, ta, tb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc);
}
void cblas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, std::complex<double> alpha,
                const std::complex<double>* a, int lda, const std::complex<double>* b, int ldb,
                std::complex<double> beta, std::complex<double>* c, int ldc) {
    scipy_cblas_zgemm(CblasRowMajor, ta, tb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc);
}
#endif

template <typename T>
void gemm_impl(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
               int64_t ldb, T beta, T* c, int64_t ldc) {
#ifdef EMBER_HAVE_OPENBLAS
    check_int(m), check_int(n), check_int(k), check_int(lda), check_int(ldb), check_int(ldc);
    cblas_gemm(ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
               static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
               static_cast<int>(ldc));
#else
    gemm_fallback(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#endif
}

}  // namespace

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
          int64_t ldb, float beta, float* c, int64_t ldc) {
    gemm_impl(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
    gemm_impl(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, std::complex<float> alpha, const std::complex<float>* a,
          int64_t lda, const std::complex<float>* b, int64_t ldb, std::complex<float> beta, std::complex<float>* c,
          int64_t ldc) {
    gemm_impl(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, std::complex<double> alpha, const std::complex<double>* a,
          int64_t lda, const std::complex<double>* b, int64_t ldb, std::complex<double> beta, std::complex<double>* c,
          int64_t ldc) {
    gemm_impl(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace blas
}  // namespace native

void set_num_threads(int n) {
    EMBER_CHECK(n > 0, "Expected positive number of threads");
#ifdef EMBER_HAVE_OPENBLAS
    scipy_openblas_set_num_threads(n);
#endif
}

int get_num_threads() {
#ifdef EMBER_HAVE_OPENBLAS
    return scipy_openblas_get_num_threads();
#else
    return 1;
#endif
}

namespace native {
namespace blas {

bool has_blas() {
#ifdef EMBER_HAVE_OPENBLAS
    return true;
#else
    return false;
#endif
}

}  // namespace blas
}  // namespace native
}  // namespace ember
