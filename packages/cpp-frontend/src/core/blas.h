// Private: the one place Ember calls BLAS. With EMBER_HAVE_OPENBLAS (set by the build when
// the scipy-openblas32 package is found) gemm goes to OpenBLAS's sgemm/dgemm/cgemm/zgemm, whose
// symbols carry the scipy_ prefix; without it a plain blocked loop is used.
#pragma once

#include <complex>
#include <cstdint>

namespace ember {
namespace native {
namespace blas {

// Row-major C[m x n] = alpha * op(A)[m x k] @ op(B)[k x n] + beta * C; op is a transpose when
// trans_* is set. Leading dimensions are in elements.
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc);
// complex64 / complex128 (cgemm / zgemm); op is a plain transpose (no conjugation)
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, std::complex<float> alpha,
          const std::complex<float>* a, int64_t lda, const std::complex<float>* b, int64_t ldb, std::complex<float> beta,
          std::complex<float>* c, int64_t ldc);
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, std::complex<double> alpha,
          const std::complex<double>* a, int64_t lda, const std::complex<double>* b, int64_t ldb,
          std::complex<double> beta, std::complex<double>* c, int64_t ldc);

// Whether an optimised BLAS is linked.
bool has_blas();

}  // namespace blas
}  // namespace native
}  // namespace ember
