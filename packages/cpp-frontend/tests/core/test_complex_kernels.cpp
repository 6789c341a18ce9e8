// The library's kernels on complex64 / complex128 tensors: reductions (sum, mean, prod,
// cumsum, cumprod, the real-valued norms), products through cgemm / zgemm (mm, bmm, every
// matmul case, mv, dot, vdot, addmm, linear), comparisons and tests (eq, ne, isclose, where,
// masked_fill; the orderings refuse with PyTorch's message) and pointwise functions, against
// hand-computed values and identities.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>
#include <string>
#include <vector>

#include "common/complex.h"
#include "common/error_of.h"
#include "common/gradcheck.h"
#include "core/blas.h"
#include "ember/complex.h"
#include "ember/tensor.h"

namespace {

using namespace ember;
using ember::testing::error_of;
using cd = std::complex<double>;

using ember::testing::complex_tensor;
using ember::testing::values_of;

Tensor crandn(std::vector<int64_t> shape, unsigned seed, ScalarType dtype = kComplexDouble) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    std::mt19937 gen(seed);
    std::normal_distribution<double> d;
    std::vector<cd> v(static_cast<size_t>(n));
    for (cd& z : v) z = cd(d(gen), d(gen));
    return complex_tensor(v, shape, dtype);
}

void expect_near(const Tensor& got, const std::vector<cd>& want, double tol, const std::string& what) {
    const std::vector<cd> g = values_of(got);
    ASSERT_EQ(g.size(), want.size()) << what;
    for (size_t i = 0; i < g.size(); ++i) {
        EXPECT_LE(std::abs(g[i] - want[i]), tol * (1 + std::abs(want[i]))) << what << " [" << i << "]: " << g[i]
                                                                           << " != " << want[i];
    }
}

void expect_close(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
    ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << what;
    EXPECT_EQ(got.scalar_type(), want.scalar_type()) << what;
    expect_near(got, values_of(want), tol, what);
}

// the naive product of row-major complex128 matrices
Tensor naive_mm(const Tensor& a, const Tensor& b) {
    const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
    const std::vector<cd> av = values_of(a), bv = values_of(b);
    std::vector<cd> c(static_cast<size_t>(m * n));
    for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
            cd acc = 0;
            for (int64_t p = 0; p < k; ++p) acc += av[static_cast<size_t>(i * k + p)] * bv[static_cast<size_t>(p * n + j)];
            c[static_cast<size_t>(i * n + j)] = acc;
        }
    }
    return complex_tensor(c, {m, n}, a.scalar_type());
}

const cd I(0, 1);

// ---- reductions ---------------------------------------------------------------------------------------

TEST(ComplexKernels, SumMeanProd) {
    const Tensor z = complex_tensor({{1, 2}, {3, -1}, {0, 1}, {-2, 0.5}, {1, 1}, {0.5, 0}}, {2, 3}, kComplexFloat);
    EXPECT_EQ(z.sum().scalar_type(), kComplexFloat);
    expect_near(z.sum(), {cd(3.5, 3.5)}, 1e-6, "sum");
    expect_near(z.mean(), {cd(3.5, 3.5) / 6.0}, 1e-6, "mean");
    expect_near(z.sum({1}), {cd(4, 2), cd(-0.5, 1.5)}, 1e-6, "sum dim 1");
    const Tensor k = z.sum({0}, /*keepdim=*/true);
    EXPECT_EQ(k.sizes().vec(), (std::vector<int64_t>{1, 3}));
    expect_near(k, {cd(-1, 2.5), cd(4, 0), cd(0.5, 1)}, 1e-6, "sum keepdim");
    expect_near(z.mean({0}), {cd(-0.5, 1.25), cd(2, 0), cd(0.25, 0.5)}, 1e-6, "mean dim 0");
    const cd p0 = cd(1, 2) * cd(3, -1) * cd(0, 1), p1 = cd(-2, 0.5) * cd(1, 1) * cd(0.5, 0);
    expect_near(z.prod(), {p0 * p1}, 1e-6, "prod");
    expect_near(z.prod(1), {p0, p1}, 1e-6, "prod dim 1");
    EXPECT_EQ(z.prod(1, true).sizes().vec(), (std::vector<int64_t>{2, 1}));
    // complex128 stays complex128; a real tensor summed into a complex dtype
    EXPECT_EQ(z.to(kComplexDouble).mean().scalar_type(), kComplexDouble);
    const Tensor r = ember::tensor({1.0f, 2.0f}).sum(kComplexFloat);
    EXPECT_EQ(r.scalar_type(), kComplexFloat);
    expect_near(r, {cd(3, 0)}, 0, "real summed as complex");
    // empty: the identities
    expect_near(ember::zeros({0}, kComplexFloat).sum(), {cd(0, 0)}, 0, "empty sum");
    expect_near(ember::zeros({0}, kComplexFloat).prod(), {cd(1, 0)}, 0, "empty prod");
}

TEST(ComplexKernels, CumsumCumprod) {
    const Tensor z = complex_tensor({{1, 1}, {0, 2}, {2, -1}, {1, 0}}, {2, 2}, kComplexFloat);
    Tensor c = z.cumsum(1);
    EXPECT_EQ(c.scalar_type(), kComplexFloat);
    expect_near(c, {cd(1, 1), cd(1, 3), cd(2, -1), cd(3, -1)}, 1e-6, "cumsum dim 1");
    expect_near(z.cumsum(0), {cd(1, 1), cd(0, 2), cd(3, 0), cd(1, 2)}, 1e-6, "cumsum dim 0");
    expect_near(z.cumprod(1), {cd(1, 1), cd(1, 1) * cd(0, 2), cd(2, -1), cd(2, -1)}, 1e-6, "cumprod dim 1");
    expect_near(z.cumprod(0), {cd(1, 1), cd(0, 2), cd(1, 1) * cd(2, -1), cd(0, 2)}, 1e-6, "cumprod dim 0");
    // the last element of cumprod is prod
    const Tensor w = crandn({7}, 3);
    expect_close(w.cumprod(0).select(0, 6), w.prod(), 1e-12, "cumprod ends in prod");
    expect_close(w.cumsum(0).select(0, 6), w.sum(), 1e-12, "cumsum ends in sum");
}

TEST(ComplexKernels, CumprodOfRealTensors) {
    // the new cumprod on real tensors: values, integer promotion and its gradient (with a zero)
    const Tensor x = ember::tensor({2.0, 0.0, 3.0, -1.0});
    EXPECT_TRUE(x.cumprod(0).equal(ember::tensor({2.0, 0.0, 0.0, -0.0})));
    const Tensor i = ember::tensor({2, 3, 4});
    EXPECT_EQ(i.cumprod(0).scalar_type(), kLong);
    EXPECT_TRUE(i.cumprod(0).equal(ember::tensor({int64_t(2), int64_t(6), int64_t(24)})));
    const Tensor v = ember::tensor({{2.0, 0.0, 3.0}, {1.5, -2.0, 0.5}}).to(kDouble).requires_grad_();
    const Tensor g = ember::tensor({{1.0, -1.0, 2.0}, {0.5, 1.0, -3.0}}).to(kDouble);
    v.cumprod(1).backward(g);
    // d/dx_k sum_i g_i prod_{j<=i} x_j, computed by hand
    const std::vector<double> want = {1 + (-1) * 0.0 + 2 * 0.0 * 3, -1 * 2 + 2 * 2 * 3, 2 * 2 * 0.0,
                                      0.5 + 1 * -2.0 + -3 * -2.0 * 0.5, 1 * 1.5 + -3 * 1.5 * 0.5, -3 * 1.5 * -2.0};
    const Tensor got = v.grad().contiguous();
    for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(got.data_ptr<double>()[k], want[k], 1e-12) << k;
    // finite differences, along each dim, with and without zeros
    for (const int64_t d : {0, 1, -1}) {
        EXPECT_TRUE(ember::testing::gradcheck([d](const std::vector<Tensor>& in) { return in[0].cumprod(d); },
                                              {ember::randn({3, 4}, kFloat64)}));
        Tensor z = ember::randn({3, 4}, kFloat64);
        z.select(0, 1).select(0, 2).fill_(0.0);
        z.select(0, 2).select(0, 0).fill_(0.0);
        z.select(0, 2).select(0, 3).fill_(0.0);
        EXPECT_TRUE(ember::testing::gradcheck([d](const std::vector<Tensor>& in) { return in[0].cumprod(d); }, {z}));
    }
    EXPECT_TRUE(ember::testing::gradcheck([](const std::vector<Tensor>& in) { return in[0].cumprod(0); },
                                          {ember::randn({}, kFloat64)}));
}

TEST(ComplexKernels, AutogradIsRefusedIntoComplexResults) {
    // a real tensor that requires grad meeting a complex one, or reduced into a complex dtype
    const Tensor w = ember::ones({2}, TensorOptions().dtype(kDouble).requires_grad(true));
    const Tensor z = complex_tensor({cd(1, 1), cd(0, 2)}, {2});
    const std::string msg = ": autograd through complex tensors is not supported by Ember's C++ frontend";
    EXPECT_EQ(error_of([&] { (void)w.pow(z); }), "pow" + msg);
    EXPECT_EQ(error_of([&] { (void)ember::where(ember::tensor({true, false}), w, z); }), "where" + msg);
    EXPECT_EQ(error_of([&] { (void)w.sum(kComplexDouble); }), "sum" + msg);
    EXPECT_EQ(error_of([&] { (void)w.mean(kComplexDouble); }), "mean" + msg);
    EXPECT_EQ(error_of([&] { (void)w.prod(kComplexDouble); }), "prod" + msg);
    EXPECT_EQ(error_of([&] { (void)w.cumsum(0, kComplexDouble); }), "cumsum" + msg);
    EXPECT_EQ(error_of([&] { (void)w.cumprod(0, kComplexDouble); }), "cumprod" + msg);
    {
        NoGradGuard g;  // without recording, the same calls compute
        expect_near(w.pow(z), {cd(1, 0), cd(1, 0)}, 1e-12, "1^z");
        expect_near(w.sum(kComplexDouble), {cd(2, 0)}, 0, "sum as complex");
    }
}

TEST(ComplexKernels, NormsAreReal) {
    const Tensor z = complex_tensor({{3, 4}, {0, -1}, {-1, 0}}, {3}, kComplexFloat);
    const Tensor n2 = z.norm();
    EXPECT_EQ(n2.scalar_type(), kFloat);
    EXPECT_NEAR(n2.item<float>(), std::sqrt(27.0f), 1e-5);
    EXPECT_NEAR(z.norm(1).item<float>(), 7.0f, 1e-5);
    EXPECT_NEAR(z.norm(INFINITY).item<float>(), 5.0f, 1e-6);
    EXPECT_NEAR(z.norm(0).item<float>(), 3.0f, 0);
    const Tensor d = complex_tensor({{3, 4}, {0, 0}, {0, 2}, {1, 0}}, {2, 2}).norm(2, {1}, false);
    EXPECT_EQ(d.scalar_type(), kDouble);
    EXPECT_TRUE(d.allclose(ember::tensor({5.0, std::sqrt(5.0)})));
}

// ---- products -----------------------------------------------------------------------------------------

TEST(ComplexKernels, GemmWithTransposes) {
    // blas::gemm for complex64 / complex128 (cgemm / zgemm or the loop) against the naive product
    const Tensor a = crandn({3, 4}, 1), b = crandn({4, 5}, 2);
    const Tensor want = naive_mm(a, b);
    for (const bool ta : {false, true}) {
        for (const bool tb : {false, true}) {
            const Tensor A = ta ? a.t().contiguous() : a, B = tb ? b.t().contiguous() : b;
            Tensor c = ember::ones({3, 5}, kComplexDouble);
            native::blas::gemm(ta, tb, 3, 5, 4, cd(1, 0), A.data_ptr<cd>(), ta ? 3 : 4, B.data_ptr<cd>(), tb ? 4 : 5,
                               cd(0, 0), c.data_ptr<cd>(), 5);
            expect_close(c, want, 1e-12, "zgemm ta=" + std::to_string(ta) + " tb=" + std::to_string(tb));
            // complex64, with alpha and beta: c = 2i * a b + (1 - i) * c
            const Tensor Af = A.to(kComplexFloat), Bf = B.to(kComplexFloat);
            Tensor cf = ember::ones({3, 5}, kComplexFloat);
            using cf32 = std::complex<float>;
            native::blas::gemm(ta, tb, 3, 5, 4, cf32(0, 2), Af.data_ptr<cf32>(), ta ? 3 : 4, Bf.data_ptr<cf32>(),
                               tb ? 4 : 5, cf32(1, -1), cf.data_ptr<cf32>(), 5);
            expect_close(cf, (want * complex_tensor({cd(0, 2)}, {}) + complex_tensor({cd(1, -1)}, {})).to(kComplexFloat), 1e-5,
                         "cgemm alpha beta");
        }
    }
}

TEST(ComplexKernels, MmBmmMv) {
    for (const ScalarType dt : {kComplexFloat, kComplexDouble}) {
        const double tol = dt == kComplexFloat ? 1e-5 : 1e-12;
        const Tensor a = crandn({3, 4}, 5, dt), b = crandn({4, 2}, 6, dt);
        const Tensor c = a.mm(b);
        EXPECT_EQ(c.scalar_type(), dt);
        expect_close(c, naive_mm(a, b), tol, "mm");
        // transposed and strided operands (passed to gemm as transposes or copied)
        expect_close(b.t().mm(a.t()), naive_mm(a, b).t().contiguous(), tol, "(ab)^T = b^T a^T");
        const Tensor wide = crandn({3, 8}, 7, dt);
        const Tensor strided = wide.slice(1, 0, 8, 2);
        expect_close(strided.mm(b), naive_mm(strided.contiguous(), b), tol, "strided mm");
        // bmm: each batch element an mm
        const Tensor A = crandn({2, 3, 4}, 8, dt), B = crandn({2, 4, 5}, 9, dt);
        const Tensor C = A.bmm(B);
        for (int64_t i = 0; i < 2; ++i) expect_close(C.select(0, i), naive_mm(A.select(0, i), B.select(0, i)), tol, "bmm");
        // mv: a matrix times a column
        const Tensor v = crandn({4}, 10, dt);
        expect_close(a.mv(v), naive_mm(a, v.unsqueeze(1)).squeeze(1), tol, "mv");
        // addmm: beta * self + alpha * (m1 @ m2)
        const Tensor s = crandn({3, 2}, 11, dt);
        expect_close(ember::addmm(s, a, b, 0.5, 2.0), s * 0.5 + naive_mm(a, b) * 2.0, tol, "addmm");
        // linear: x w^T + bias, batched
        const Tensor x = crandn({2, 3, 4}, 12, dt), w = crandn({5, 4}, 13, dt), bias = crandn({5}, 14, dt);
        const Tensor y = ember::linear(x, w, bias);
        EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 3, 5}));
        expect_close(y.select(0, 1), naive_mm(x.select(0, 1), w.t().contiguous()) + bias, tol, "linear");
    }
}

TEST(ComplexKernels, MatmulCases) {
    const Tensor v = crandn({4}, 20), w = crandn({4}, 21), m = crandn({3, 4}, 22), n = crandn({4, 2}, 23);
    // 1-D @ 1-D: a 0-d dot without conjugation
    cd dot = 0;
    const std::vector<cd> vv = values_of(v), wv = values_of(w);
    for (size_t i = 0; i < 4; ++i) dot += vv[i] * wv[i];
    expect_near(v.matmul(w), {dot}, 1e-12, "1d @ 1d");
    EXPECT_EQ(v.matmul(w).dim(), 0);
    expect_close(m.matmul(v), naive_mm(m, v.unsqueeze(1)).squeeze(1), 1e-12, "2d @ 1d");
    expect_close(v.matmul(n), naive_mm(v.unsqueeze(0), n).squeeze(0), 1e-12, "1d @ 2d");
    expect_close(m.matmul(n), naive_mm(m, n), 1e-12, "2d @ 2d");
    // 3-D @ 2-D and 3-D @ 1-D (folded), 1-D @ 3-D, broadcast batches
    const Tensor T = crandn({2, 3, 4}, 24);
    const Tensor tn = T.matmul(n);
    EXPECT_EQ(tn.sizes().vec(), (std::vector<int64_t>{2, 3, 2}));
    expect_close(tn.select(0, 1), naive_mm(T.select(0, 1), n), 1e-12, "3d @ 2d");
    expect_close(T.matmul(v).select(0, 0), naive_mm(T.select(0, 0), v.unsqueeze(1)).squeeze(1), 1e-12, "3d @ 1d");
    const Tensor U = crandn({2, 4, 5}, 25);
    expect_close(v.matmul(U).select(0, 1), naive_mm(v.unsqueeze(0), U.select(0, 1)).squeeze(0), 1e-12, "1d @ 3d");
    const Tensor P = crandn({3, 1, 2, 4}, 26), Q = crandn({5, 4, 3}, 27);
    const Tensor pq = P.matmul(Q);
    EXPECT_EQ(pq.sizes().vec(), (std::vector<int64_t>{3, 5, 2, 3}));
    expect_close(pq.select(0, 2).select(0, 4), naive_mm(P.select(0, 2).select(0, 0), Q.select(0, 4)), 1e-12, "broadcast");
    expect_close(m.matmul(T.transpose(1, 2).select(0, 0)), naive_mm(m, T.select(0, 0).t().contiguous()), 1e-12,
                 "transposed operand");
}

TEST(ComplexKernels, DotAndVdot) {
    const Tensor a = complex_tensor({{1, 2}, {0, -1}}, {2}, kComplexFloat), b = complex_tensor({{3, 1}, {2, 2}}, {2}, kComplexFloat);
    expect_near(ember::dot(a, b), {cd(1, 2) * cd(3, 1) + cd(0, -1) * cd(2, 2)}, 1e-6, "dot");
    expect_near(ember::vdot(a, b), {cd(1, -2) * cd(3, 1) + cd(0, 1) * cd(2, 2)}, 1e-6, "vdot conjugates the first");
    EXPECT_EQ(ember::vdot(a, b).scalar_type(), kComplexFloat);
    // vdot(z, z) = |z|^2, real
    const Tensor z = crandn({6}, 30);
    const cd zz = values_of(ember::vdot(z, z))[0];
    EXPECT_NEAR(zz.imag(), 0, 1e-12);
    EXPECT_NEAR(zz.real(), std::pow(z.norm().item<double>(), 2), 1e-10);
    // real vectors: vdot is dot
    EXPECT_TRUE(ember::vdot(ember::tensor({1.0, 2.0}), ember::tensor({3.0, -1.0})).equal(ember::tensor(1.0)));
    EXPECT_EQ(error_of([&] { (void)ember::vdot(a, b.to(kComplexDouble)); }),
              "dot : expected both vectors to have same dtype, but found ComplexFloat and ComplexDouble");
}

// ---- comparisons and tests ----------------------------------------------------------------------------

TEST(ComplexKernels, EqNeAndOrderingsRefuse) {
    const Tensor a = complex_tensor({{1, 2}, {1, 0}, {0, 1}}, {3}, kComplexFloat);
    const Tensor b = complex_tensor({{1, 2}, {1, 1e-3}, {1, 0}}, {3}, kComplexFloat);
    EXPECT_TRUE(a.eq(b).equal(ember::tensor({true, false, false})));
    EXPECT_TRUE(a.ne(b).equal(ember::tensor({false, true, true})));
    EXPECT_TRUE((a == 1).equal(ember::tensor({false, true, false})));  // a real number next to complex
    EXPECT_TRUE(a.eq(a.to(kComplexDouble)).all().item<bool>());         // promoted to complex128
    EXPECT_TRUE(ember::equal(a, a.clone()));
    EXPECT_EQ(error_of([&] { (void)(a < b); }), "\"lt_cpu\" not implemented for 'ComplexFloat'");
    EXPECT_EQ(error_of([&] { (void)(a <= b); }), "\"le_cpu\" not implemented for 'ComplexFloat'");
    EXPECT_EQ(error_of([&] { (void)(a > 1); }), "\"gt_cpu\" not implemented for 'ComplexFloat'");
    EXPECT_EQ(error_of([&] { (void)a.to(kComplexDouble).ge(b.to(kComplexDouble)); }),
              "\"ge_cpu\" not implemented for 'ComplexDouble'");
}

TEST(ComplexKernels, IscloseUsesTheModulus) {
    // |a - b| <= atol + rtol * |b|, with the modulus of complex numbers
    const cd b(3, 4);  // |b| = 5
    const double rtol = 1e-3, atol = 0;
    const double limit = atol + rtol * 5;  // 5e-3
    const Tensor bt = complex_tensor({b, b, b}, {3});
    // differences of modulus 0.9 * limit (in a direction where each part alone is within it),
    // 1.1 * limit, and exactly a purely imaginary 0.9 * limit
    const cd dir = cd(1, 1) / std::sqrt(2.0);
    const Tensor at = complex_tensor({b + 0.9 * limit * dir, b + 1.1 * limit * dir, b + cd(0, 0.9 * limit)}, {3});
    EXPECT_TRUE(ember::isclose(at, bt, rtol, atol).equal(ember::tensor({true, false, true})));
    EXPECT_FALSE(ember::allclose(at, bt, rtol, atol));
    EXPECT_TRUE(ember::allclose(at.slice(0, 0, 1), bt.slice(0, 0, 1), rtol, atol));
    // nan: close only with equal_nan, either part
    const Tensor n = complex_tensor({cd(NAN, 0), cd(1, NAN)}, {2});
    EXPECT_TRUE(ember::isclose(n, n).equal(ember::tensor({false, false})));
    EXPECT_TRUE(ember::isclose(n, n, 1e-5, 1e-8, true).equal(ember::tensor({true, true})));
    // inf equal to itself
    const Tensor inf = complex_tensor({cd(INFINITY, 1)}, {1});
    EXPECT_TRUE(ember::isclose(inf, inf).item<bool>());
    const Tensor f = complex_tensor({cd(1, 0), cd(INFINITY, 0), cd(0, NAN), cd(0, -INFINITY)}, {4}, kComplexFloat);
    EXPECT_TRUE(f.isnan().equal(ember::tensor({false, false, true, false})));
    EXPECT_TRUE(f.isinf().equal(ember::tensor({false, true, false, true})));
    EXPECT_TRUE(f.isfinite().equal(ember::tensor({true, false, false, false})));
}

TEST(ComplexKernels, WhereAndMaskedFill) {
    const Tensor cond = ember::tensor({true, false, true});
    for (const ScalarType dt : {kComplexFloat, kComplexDouble}) {
        const Tensor a = complex_tensor({{1, 1}, {2, 2}, {3, 3}}, {3}, dt), b = complex_tensor({{-1, 0}, {0, -2}, {5, 5}}, {3}, dt);
        const Tensor w = ember::where(cond, a, b);
        EXPECT_EQ(w.scalar_type(), dt);
        expect_near(w, {cd(1, 1), cd(0, -2), cd(3, 3)}, 0, "where");
        expect_near(ember::where(cond, a, 7.0), {cd(1, 1), cd(7, 0), cd(3, 3)}, 0, "where with a real number");
        // a real tensor and a complex one: promoted
        const Tensor r = ember::where(cond, ember::tensor({9.0f, 9.0f, 9.0f}), b);
        EXPECT_EQ(r.scalar_type(), dt);
        expect_near(r, {cd(9, 0), cd(0, -2), cd(9, 0)}, 0, "where promotes");
        // broadcast condition over a 2-D complex tensor
        const Tensor m = complex_tensor({{1, 0}, {2, 0}, {3, 0}, {4, 0}, {5, 0}, {6, 0}}, {2, 3}, dt);
        expect_near(ember::where(cond, m, b), {cd(1, 0), cd(0, -2), cd(3, 0), cd(4, 0), cd(0, -2), cd(6, 0)}, 0,
                    "where broadcast");
        expect_near(a.masked_fill(cond, 0.5), {cd(0.5, 0), cd(2, 2), cd(0.5, 0)}, 0, "masked_fill number");
        expect_near(a.masked_fill(cond, complex_tensor({cd(0, -1)}, {}, dt)), {cd(0, -1), cd(2, 2), cd(0, -1)}, 0,
                    "masked_fill complex value");
    }
}

// ---- pointwise ----------------------------------------------------------------------------------------

TEST(ComplexKernels, PointwiseValues) {
    const double pi = M_PI;
    const Tensor z = complex_tensor({cd(0, pi), cd(-1, 0), cd(-4, 0), cd(0, 0)}, {4});
    expect_near(z.slice(0, 0, 1).exp(), {cd(-1, 0)}, 1e-12, "exp(i pi)");
    expect_near(z.slice(0, 1, 2).log(), {cd(0, pi)}, 1e-12, "log(-1)");
    expect_near(z.slice(0, 2, 3).sqrt(), {cd(0, 2)}, 1e-12, "sqrt(-4)");
    expect_near(z.slice(0, 2, 3).rsqrt(), {cd(0, -0.5)}, 1e-12, "rsqrt(-4)");
    expect_near(complex_tensor({cd(0, 2)}, {}).reciprocal(), {cd(0, -0.5)}, 1e-12, "1 / 2i");
    expect_near(complex_tensor({cd(1, 2)}, {}).square(), {cd(-3, 4)}, 1e-12, "square");
    expect_near(complex_tensor({cd(1, 2)}, {}).neg(), {cd(-1, -2)}, 0, "neg");
    expect_near(complex_tensor({cd(0, 2)}, {}).exp2(), {std::exp(cd(0, 2) * std::log(2.0))}, 1e-12, "exp2");
    expect_near(complex_tensor({cd(0, 8)}, {}).log2(), {cd(3, pi / 2 / std::log(2.0))}, 1e-12, "log2(8i)");
    expect_near(complex_tensor({cd(-100, 0)}, {}).log10(), {cd(2, pi / std::log(10.0))}, 1e-12, "log10(-100)");
    expect_near(complex_tensor({cd(3, 4), cd(0, 0), cd(0, -2)}, {3}).sgn(), {cd(0.6, 0.8), cd(0, 0), cd(0, -1)}, 1e-12, "sgn");
    EXPECT_TRUE(ember::sgn(ember::tensor({-2.0, 0.0, 3.0})).equal(ember::tensor({-1.0, 0.0, 1.0})));
    // sinh / cosh / tanh / sin / cos / tan of i y are i sin y / cos y / i tan y / ...
    const Tensor iy = complex_tensor({cd(0, 0.7)}, {});
    expect_near(iy.sinh(), {cd(0, std::sin(0.7))}, 1e-12, "sinh(iy)");
    expect_near(iy.cosh(), {cd(std::cos(0.7), 0)}, 1e-12, "cosh(iy)");
    expect_near(iy.tanh(), {cd(0, std::tan(0.7))}, 1e-12, "tanh(iy)");
    expect_near(iy.sin(), {cd(0, std::sinh(0.7))}, 1e-12, "sin(iy)");
    expect_near(iy.cos(), {cd(std::cosh(0.7), 0)}, 1e-12, "cos(iy)");
    expect_near(iy.tan(), {cd(0, std::tanh(0.7))}, 1e-12, "tan(iy)");
    // sigmoid(i pi / 2) = 1 / (1 + exp(-i pi / 2)) = 1 / (1 - i) = (1 + i) / 2
    expect_near(complex_tensor({cd(0, pi / 2)}, {}).sigmoid(), {cd(0.5, 0.5)}, 1e-12, "sigmoid");
    // log1p / expm1 keep their precision for tiny arguments: log1p(z) = z - z^2 / 2 + ...
    const cd t(1e-10, 2e-10);
    const cd l1p = values_of(complex_tensor({t}, {}).log1p())[0], em1 = values_of(complex_tensor({t}, {}).expm1())[0];
    EXPECT_LE(std::abs(l1p - (t - t * t / 2.0)), 1e-9 * std::abs(t)) << l1p;  // log(1 + z) loses ~1e-6 here
    EXPECT_LE(std::abs(em1 - (t + t * t / 2.0)), 1e-9 * std::abs(t)) << em1;
    expect_near(complex_tensor({cd(1, 2)}, {}).log1p(), {std::log(cd(2, 2))}, 1e-12, "log1p");
    expect_near(complex_tensor({cd(1, 2)}, {}).expm1(), {std::exp(cd(1, 2)) - 1.0}, 1e-12, "expm1");
    // erf has no complex kernel in PyTorch either
    EXPECT_EQ(error_of([&] { (void)iy.to(kComplexFloat).erf(); }), "\"erf\" not implemented for 'ComplexFloat'");
}

TEST(ComplexKernels, PointwiseIdentities) {
    for (const ScalarType dt : {kComplexFloat, kComplexDouble}) {
        const double tol = dt == kComplexFloat ? 2e-5 : 1e-12;
        const Tensor z = crandn({5}, 40, dt) * 0.7;
        const Tensor one = ember::ones({5}, dt);
        EXPECT_EQ(z.exp().scalar_type(), dt);
        expect_close(z.log().exp(), z, tol, "exp(log z)");
        expect_close(z.sqrt().square(), z, tol, "sqrt(z)^2");
        expect_close(z.sin().square() + z.cos().square(), one, tol, "sin^2 + cos^2");
        expect_close(z.cosh().square() - z.sinh().square(), one, 10 * tol, "cosh^2 - sinh^2");
        expect_close(z.tan(), z.sin() / z.cos(), tol, "tan");
        expect_close(z.tanh(), z.sinh() / z.cosh(), tol, "tanh");
        expect_close(z.sigmoid(), one / (one + (-z).exp()), tol, "sigmoid");
        expect_close(z.reciprocal() * z, one, tol, "z / z");
        expect_close(z.rsqrt(), z.sqrt().reciprocal(), tol, "rsqrt");
        expect_close(z.log1p(), (z + 1).log(), tol, "log1p");
        expect_close(z.expm1(), z.exp() - 1, tol, "expm1");
        expect_close(z.sgn() * z.abs().to(dt), z, tol, "sgn |z|");
        // pow: a real exponent, a complex exponent, a complex tensor exponent, a number base
        expect_close(z.pow(2), z * z, tol, "z^2");
        expect_close(z.pow(0.5), z.sqrt(), tol, "z^0.5");
        expect_close(z.pow(3), z * z * z, tol, "z^3");
        const Tensor w = crandn({5}, 41, dt) * 0.5;
        expect_close(z.pow(w), (w * z.log()).exp(), 10 * tol, "z^w");
        expect_close(ember::pow(2.0, w), (w * std::log(2.0)).exp(), tol, "2^w");
        // a 0-d complex exponent with a float32 tensor: complex64, as PyTorch
        EXPECT_EQ(ember::pow(ember::tensor({1.0f, 2.0f}), complex_tensor({cd(0, 1)}, {}, dt)).scalar_type(), kComplexFloat);
    }
}

// var / std of complex tensors: sum |z - mean|^2 / (N - correction), real (float for complex64),
// against PyTorch's values
TEST(ComplexKernels, VarianceAndStdAreRealAsPyTorchs) {
    const std::vector<cd> zv = {{1, 2}, {-0.5, 1}, {3, -1}, {0.25, -2}, {2, 0.5}, {-1, -1}};
    for (const ScalarType dt : {kComplexFloat, kComplexDouble}) {
        const double tol = dt == kComplexFloat ? 1e-6 : 1e-14;
        const Tensor z = complex_tensor(zv, {2, 3}, dt);
        const ScalarType rt = dt == kComplexFloat ? kFloat : kDouble;
        auto check = [&](const Tensor& t, const std::vector<double>& want, const std::string& what) {
            EXPECT_EQ(t.scalar_type(), rt) << what;
            const Tensor d = t.to(kDouble).contiguous().reshape({-1});
            ASSERT_EQ(d.numel(), static_cast<int64_t>(want.size())) << what;
            for (std::size_t i = 0; i < want.size(); ++i) {
                EXPECT_NEAR(d[static_cast<int64_t>(i)].item<double>(), want[i], tol * (1 + std::abs(want[i]))) << what << " " << i;
            }
        };
        check(z.var(), {4.55208333333333393}, "var()");
        check(ember::var(z, {0}), {8.28125, 3.25, 8.0}, "var(0)");
        check(ember::var(z, {1}, /*unbiased=*/false, /*keepdim=*/true), {3.61111111111111116, 2.56944444444444420}, "var(1, biased)");
        check(ember::std(z, {1}), {2.32737334062815693, 1.96320316489829083}, "std(1)");
        check(z.std(), {2.13356118574868470}, "std()");
        check(ember::var(z, std::vector<int64_t>{1}, Scalar(0), true), {3.61111111111111116, 2.56944444444444420}, "correction 0");
        EXPECT_EQ(ember::var(z, {1}, true, true).sizes().vec(), (std::vector<int64_t>{2, 1}));
    }
}

}  // namespace
