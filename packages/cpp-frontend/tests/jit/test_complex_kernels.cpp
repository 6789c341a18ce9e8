// The op table's complex kernels called directly (the golden programs of
// complex_kernel_programs.py are checked with the others in test_complex_ops.cpp): the
// complex LDL^T family (zsytf2 / zhetf2 and their solves, by residuals), the refusals that
// keep PyTorch's messages, complex numbers as the arguments of eq / where / masked_fill / pow,
// and the conjugate transposes.
#include <gtest/gtest.h>

#include <complex>
#include <random>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "op_call.h"

namespace {

using namespace ember;
using jit_ops::call;
using jit_ops::error_of;
using jit_ops::Value;
using cd = std::complex<double>;

Tensor crandn(std::vector<int64_t> shape, unsigned seed, ScalarType dtype = kComplexDouble) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    std::mt19937 gen(seed);
    std::normal_distribution<double> d;
    Tensor t = ember::empty(shape, kComplexDouble);
    cd* p = t.data_ptr<cd>();
    for (int64_t i = 0; i < n; ++i) p[i] = cd(d(gen), d(gen));
    return t.to(dtype);
}

double max_abs(const Tensor& z) { return z.abs().max().to(kDouble).item<double>(); }

Value kw(bool b) { return Value::boolean(b); }

// the build's own definition (tests see the library's EMBER_HAVE_OPENBLAS): a LAPACK call that
// fails in a build with OpenBLAS is a failure, not a skip
#ifdef EMBER_HAVE_OPENBLAS
constexpr bool kHaveLapack = true;
#else
constexpr bool kHaveLapack = false;
#endif

#define NEED_LAPACK()                                                         \
    do {                                                                      \
        if (!kHaveLapack) GTEST_SKIP() << "this build has no LAPACK (OpenBLAS)"; \
    } while (0)

TEST(ComplexKernelOps, LdlSymmetricSolves) {
    NEED_LAPACK();
    for (const ScalarType dt : {kComplexFloat, kComplexDouble}) {
        const double tol = dt == kComplexFloat ? 1e-4 : 1e-10;
        const Tensor z = crandn({2, 5, 5}, 1, dt);
        const Tensor A = z + z.transpose(-2, -1);  // complex symmetric, not Hermitian
        const std::vector<Tensor> f = call("linalg.ldl_factor", {Value::of(A)});
        ASSERT_EQ(f.size(), 2u);
        EXPECT_EQ(f[0].scalar_type(), dt);
        EXPECT_EQ(f[1].scalar_type(), kInt);
        EXPECT_EQ(f[1].sizes().vec(), (std::vector<int64_t>{2, 5}));
        // LD's strict upper triangle is zero
        EXPECT_EQ(max_abs(ember::real(f[0]).triu(1)) + max_abs(ember::imag(f[0]).triu(1)), 0.0);
        const Tensor B = crandn({2, 5, 3}, 2, dt);
        const Tensor X = call("linalg.ldl_solve", {Value::of(f[0]), Value::of(f[1]), Value::of(B)}).at(0);
        EXPECT_EQ(X.scalar_type(), dt);
        EXPECT_LE(max_abs(A.matmul(X) - B), tol * (1 + max_abs(B))) << scalar_type_name(dt);
        // a Hermitian solve of a symmetric factorization is another system: not B
        const Tensor Y = call("linalg.ldl_solve", {Value::of(f[0]), Value::of(f[1]), Value::of(B)},
                              {{"hermitian", kw(true)}}).at(0);
        EXPECT_GT(max_abs(A.matmul(Y) - B), 1e-3);
    }
}

TEST(ComplexKernelOps, LdlHermitianSolves) {
    NEED_LAPACK();
    for (const ScalarType dt : {kComplexFloat, kComplexDouble}) {
        const double tol = dt == kComplexFloat ? 1e-4 : 1e-10;
        const Tensor z = crandn({3, 4, 4}, 3, dt);
        const Tensor H = z + ember::conj(z.transpose(-2, -1));
        const std::vector<Tensor> f =
            call("linalg.ldl_factor_ex", {Value::of(H)}, {{"hermitian", kw(true)}, {"check_errors", kw(true)}});
        ASSERT_EQ(f.size(), 3u);
        EXPECT_TRUE(f[2].equal(ember::zeros({3}, kInt)));
        // zhetf2: D's 1x1 blocks are real
        const Tensor p = f[1].contiguous();
        const Tensor diag_im = ember::imag(f[0].diagonal(0, -2, -1)).contiguous().to(kDouble);
        for (int64_t b = 0; b < 3; ++b) {
            for (int64_t k = 0; k < 4; ++k) {
                if (p.data_ptr<int32_t>()[b * 4 + k] > 0) {
                    EXPECT_EQ(diag_im.data_ptr<double>()[b * 4 + k], 0.0);
                }
            }
        }
        const Tensor B = crandn({4, 2}, 4, dt);  // broadcast over the batch
        const Tensor X = call("linalg.ldl_solve", {Value::of(f[0]), Value::of(f[1]), Value::of(B)},
                              {{"hermitian", kw(true)}}).at(0);
        EXPECT_EQ(X.sizes().vec(), (std::vector<int64_t>{3, 4, 2}));
        EXPECT_LE(max_abs(H.matmul(X) - B), tol * (1 + max_abs(B)));
        // the imaginary parts of the diagonal are not read
        const Tensor Hi = H + ember::complex(ember::zeros({4, 4}), ember::eye(4)).to(dt);
        const Tensor g = call("linalg.ldl_factor", {Value::of(Hi)}, {{"hermitian", kw(true)}}).at(0);
        EXPECT_LE(max_abs(g - f[0]), tol);
    }
}

TEST(ComplexKernelOps, LdlSingularAndErrors) {
    NEED_LAPACK();
    const Tensor zero = ember::zeros({3, 3}, kComplexFloat);
    const std::vector<Tensor> f = call("linalg.ldl_factor_ex", {Value::of(zero)});
    EXPECT_EQ(f[2].item<int64_t>(), 1);
    EXPECT_EQ(error_of("linalg.ldl_factor", {Value::of(zero)}),
              "torch.linalg.ldl_factor: The factorization could not be completed because the block diagonal matrix D "
              "is singular (D[1,1] is zero).");
    const Tensor A = crandn({3, 3}, 5);
    const std::vector<Tensor> g = call("linalg.ldl_factor", {Value::of(A + A.t())});
    EXPECT_EQ(error_of("linalg.ldl_solve", {Value::of(g[0]), Value::of(g[1]), Value::of(crandn({3, 1}, 6, kComplexFloat))}),
              "Expected b and A to have the same dtype, but found b of type ComplexFloat and A of type ComplexDouble "
              "instead.");
}

TEST(ComplexKernelOps, RefusalsKeepPyTorchsMessages) {
    const Tensor z = crandn({2, 3}, 7, kComplexFloat);
    EXPECT_EQ(error_of("lt", {Value::of(z), Value::of(z)}), "\"lt_cpu\" not implemented for 'ComplexFloat'");
    EXPECT_EQ(error_of("ge", {Value::of(z), Value::number(1.0)}), "\"ge_cpu\" not implemented for 'ComplexFloat'");
    EXPECT_EQ(error_of("gt", {Value::of(ember::zeros({2})), Value::complex_number(1, 1)}),
              "\"gt_cpu\" not implemented for 'ComplexFloat'");
    EXPECT_EQ(error_of("amax", {Value::of(z)}),
              "\"amax\" not implemented for 'ComplexFloat' (Ember's C++ frontend runs this op on real tensors only)");
    EXPECT_EQ(error_of("masked_fill", {Value::of(ember::zeros({2})), Value::of(ember::tensor({true, false})),
                                       Value::complex_number(0, 1)}),
              "value cannot be converted to type float without overflow");
    EXPECT_EQ(error_of("masked_fill", {Value::of(ember::zeros({2}, kLong)), Value::of(ember::tensor({true, false})),
                                       Value::complex_number(0, 1)}),
              "value cannot be converted to type int64_t without overflow");
    // (the complex SVD and the norms through it: test_complex_linalg_ops.cpp)
    EXPECT_EQ(error_of("linalg.cholesky", {Value::of(z)}),
              "\"linalg.cholesky\" not implemented for 'ComplexFloat' (Ember's C++ frontend runs this op on real tensors only)");
    EXPECT_EQ(error_of("erf", {Value::of(z)}),
              "\"erf\" not implemented for 'ComplexFloat' (Ember's C++ frontend runs this op on real tensors only)");
}

TEST(ComplexKernelOps, ComplexNumbersAsArguments) {
    const Tensor x = ember::tensor({1.0f, 0.0f});
    // eq with a complex number: x promoted to complex64
    EXPECT_TRUE(call("eq", {Value::of(x), Value::complex_number(1, 0)}).at(0).equal(ember::tensor({true, false})));
    EXPECT_TRUE(call("ne", {Value::complex_number(0, 0), Value::of(x)}).at(0).equal(ember::tensor({true, false})));
    // where of a complex number and a real number: complex64
    const Tensor w = call("where", {Value::of(ember::tensor({true, false})), Value::complex_number(0, 2), Value::number(3)}).at(0);
    EXPECT_EQ(w.scalar_type(), kComplexFloat);
    EXPECT_TRUE(view_as_real(w).equal(ember::tensor({{0.0f, 2.0f}, {3.0f, 0.0f}})));
    // masked_fill with a complex number, in place
    Tensor z = ember::complex(ember::ones({2}), ember::zeros({2}));
    call("masked_fill_", {Value::of(z), Value::of(ember::tensor({false, true})), Value::complex_number(-1, 1)});
    EXPECT_TRUE(view_as_real(z).equal(ember::tensor({{1.0f, 0.0f}, {-1.0f, 1.0f}})));
    // pow: a real tensor to a complex power, a complex tensor to an integer power
    const Tensor p = call("pow", {Value::of(ember::tensor({4.0}).to(kDouble)), Value::complex_number(0.5, 0)}).at(0);
    EXPECT_EQ(p.scalar_type(), kComplexDouble);  // float64's complex type
    EXPECT_EQ(call("pow", {Value::of(ember::tensor({4.0f})), Value::complex_number(0.5, 0)}).at(0).scalar_type(),
              kComplexFloat);
    EXPECT_NEAR(ember::real(p).item<double>(), 2.0, 1e-12);
    const Tensor q = call("pow", {Value::of(ember::complex(ember::zeros({1}), ember::ones({1}))), Value::integer(2)}).at(0);
    EXPECT_TRUE(view_as_real(q).equal(ember::tensor({{-1.0f, 0.0f}})));
    // vdot conjugates the first, dot does not; cumprod
    const Tensor i = ember::complex(ember::zeros({1}), ember::ones({1}));
    EXPECT_TRUE(view_as_real(call("vdot", {Value::of(i), Value::of(i)}).at(0)).equal(ember::tensor({1.0f, 0.0f})));
    EXPECT_TRUE(view_as_real(call("dot", {Value::of(i), Value::of(i)}).at(0)).equal(ember::tensor({-1.0f, 0.0f})));
    const Tensor c = call("cumprod", {Value::of(ember::cat({i, i, i})), Value::integer(0)}).at(0);
    EXPECT_TRUE(view_as_real(c).equal(ember::tensor({{0.0f, 1.0f}, {-1.0f, 0.0f}, {0.0f, -1.0f}})));
}

TEST(ComplexKernelOps, ConjugateTransposes) {
    const Tensor z = crandn({2, 3}, 8);
    const Tensor h = call("Tensor.mH", {Value::of(z)}).at(0);
    EXPECT_TRUE(h.equal(ember::conj(z.t())));
    EXPECT_TRUE(call("adjoint", {Value::of(z)}).at(0).equal(ember::conj(z.t())));
    EXPECT_TRUE(call("Tensor.mT", {Value::of(z)}).at(0).equal(z.t()));
    EXPECT_EQ(error_of("Tensor.mH", {Value::of(crandn({3}, 9))}),
              "tensor.mH is only supported on matrices or batches of matrices. Got 1-D tensor.");
    // a real tensor: the transpose
    const Tensor x = ember::randn({2, 3});
    EXPECT_TRUE(call("Tensor.mH", {Value::of(x)}).at(0).equal(x.t()));
}

}  // namespace
