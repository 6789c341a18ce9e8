// Matrix products: every operand layout (contiguous, transposed, strided, broadcast) and
// dtype (BLAS for float32/float64, loops otherwise) against a reference computed with
// broadcasting and sum; PyTorch's shape errors.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "common/error_of.h"
#include "ember/autograd.h"
#include "ember/tensor.h"

namespace {

using namespace ember;

Tensor reference_mm(const Tensor& a, const Tensor& b) {
    return (a.to(kDouble).unsqueeze(2) * b.to(kDouble).unsqueeze(0)).sum(1);
}

using ember::testing::error_of;

TEST(Linalg, LayoutsAndDtypes) {
    Generator g(5);
    const Tensor a = randn({5, 7}, g, kDouble), b = randn({7, 3}, g, kDouble);
    const Tensor ref = reference_mm(a, b);
    const Tensor a_t = a.t().contiguous().t();         // transposed layout
    const Tensor b_t = b.t().contiguous().t();
    const Tensor a_s = stack({a, a}, 2).reshape({5, 14}).slice(1, 0, 14, 2);  // column stride 2: copied
    const Tensor b_s = b.unsqueeze(0).expand({2, 7, 3})[1];
    for (const Tensor& x : {a, a_t, a_s}) {
        for (const Tensor& y : {b, b_t, b_s}) {
            EXPECT_TRUE(x.mm(y).allclose(ref, 1e-12, 1e-12));
            EXPECT_TRUE(x.to(kFloat).mm(y.to(kFloat)).allclose(ref.to(kFloat), 1e-5, 1e-5));
        }
    }
    const Tensor ai = randint(-5, 5, {4, 6}, g), bi = randint(-5, 5, {6, 2}, g);
    EXPECT_TRUE(ai.mm(bi).equal(reference_mm(ai, bi).to(kLong)));
    EXPECT_EQ(ai.mm(bi).scalar_type(), kLong);
    const Tensor h = a.to(kHalf).mm(b.to(kHalf));
    EXPECT_EQ(h.scalar_type(), kHalf);
    EXPECT_TRUE(h.to(kDouble).allclose(ref, 2e-2, 2e-2));
    // empty dimensions
    EXPECT_TRUE(zeros({2, 0}).mm(zeros({0, 3})).equal(zeros({2, 3})));
    EXPECT_EQ(zeros({0, 4}).mm(zeros({4, 3})).sizes(), (std::vector<int64_t>{0, 3}));
}

TEST(Linalg, MatmulShapes) {
    Generator g(6);
    const Tensor a = randn({2, 3, 4}, g, kDouble), m = randn({4, 5}, g, kDouble), v = randn({4}, g, kDouble);
    EXPECT_EQ(a.matmul(m).sizes(), (std::vector<int64_t>{2, 3, 5}));
    EXPECT_EQ(a.matmul(v).sizes(), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(v.matmul(m).sizes(), (std::vector<int64_t>{5}));
    EXPECT_EQ(v.matmul(v).dim(), 0);
    EXPECT_EQ(randn({7, 1, 3, 4}, g).matmul(randn({2, 4, 6}, g)).sizes(), (std::vector<int64_t>{7, 2, 3, 6}));
    EXPECT_EQ(randn({3, 4}, g).matmul(randn({2, 4, 6}, g)).sizes(), (std::vector<int64_t>{2, 3, 6}));
    EXPECT_EQ(v.matmul(randn({2, 4, 6}, g, kDouble)).sizes(), (std::vector<int64_t>{2, 6}));
    EXPECT_TRUE(a.matmul(m)[1].allclose(a[1].mm(m)));
    const Tensor b = randn({2, 4, 5}, g, kDouble);
    EXPECT_TRUE(a.bmm(b)[0].allclose(a[0].mm(b[0])));
    EXPECT_TRUE(addmm(v, a[0].t(), a[1], 0.5, 2).allclose(v * 0.5 + 2 * a[0].t().mm(a[1])));
    EXPECT_TRUE(linear(a, m.t(), v.narrow(0, 0, 1).expand({5})).allclose(a.matmul(m) + v[0]));
}

TEST(Linalg, Errors) {
    EXPECT_EQ(error_of([] { (void)ones({2, 3}).mm(ones({4, 5})); }),
              "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
    EXPECT_EQ(error_of([] { (void)ones({2, 3}).mm(ones({3, 5}, kDouble)); }),
              "expected m1 and m2 to have the same dtype, but got: float != double");
    EXPECT_EQ(error_of([] { (void)ones({3}).mm(ones({3, 5})); }), "self must be a matrix");
    EXPECT_EQ(error_of([] { (void)ones({2, 3}).bmm(ones({2, 3})); }), "batch1 must be a 3D tensor");
    EXPECT_EQ(error_of([] { (void)ones({}).matmul(ones({2})); }),
              "both arguments to matmul need to be at least 1D, but they are 0D and 1D");
    EXPECT_EQ(error_of([] { (void)ones({3}).dot(ones({4})); }),
              "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements, but got "
              "3 and 4 elements respectively");
}

TEST(Linalg, Threads) {
    set_num_threads(1);
    EXPECT_EQ(get_num_threads(), 1);
    EXPECT_THROW(set_num_threads(0), Error);
}

}  // namespace
