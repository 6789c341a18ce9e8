// Type promotion and broadcasting against PyTorch's (the tables were computed with
// torch.result_type / torch division in PyTorch 2.13).
#include <gtest/gtest.h>

#include "common/error_of.h"
#include "ember/autograd.h"
#include "ember/tensor.h"

namespace {

using namespace ember;
using ember::testing::error_of;

struct PromoCase {
    ScalarType a, b;
    ScalarType tensor_tensor;    // tensor(dim 1) op tensor(dim 1)
    ScalarType tensor_zero_dim;  // tensor(dim 1) op tensor(dim 0)
    ScalarType division;         // tensor(dim 1) / tensor(dim 1)
};
struct ScalarPromoCase {
    ScalarType a, with_int, with_double, with_bool;
};

// a, b: tensor op tensor, tensor op zero-dim tensor, true division
const PromoCase kPairs[] = {
    {kByte, kByte, kByte, kByte, kFloat},
    {kByte, kChar, kShort, kByte, kFloat},
    {kByte, kShort, kShort, kByte, kFloat},
    {kByte, kInt, kInt, kByte, kFloat},
    {kByte, kLong, kLong, kByte, kFloat},
    {kByte, kHalf, kHalf, kHalf, kHalf},
    {kByte, kFloat, kFloat, kFloat, kFloat},
    {kByte, kDouble, kDouble, kDouble, kDouble},
    {kByte, kBool, kByte, kByte, kFloat},
    {kChar, kByte, kShort, kChar, kFloat},
    {kChar, kChar, kChar, kChar, kFloat},
    {kChar, kShort, kShort, kChar, kFloat},
    {kChar, kInt, kInt, kChar, kFloat},
    {kChar, kLong, kLong, kChar, kFloat},
    {kChar, kHalf, kHalf, kHalf, kHalf},
    {kChar, kFloat, kFloat, kFloat, kFloat},
    {kChar, kDouble, kDouble, kDouble, kDouble},
    {kChar, kBool, kChar, kChar, kFloat},
    {kShort, kByte, kShort, kShort, kFloat},
    {kShort, kChar, kShort, kShort, kFloat},
    {kShort, kShort, kShort, kShort, kFloat},
    {kShort, kInt, kInt, kShort, kFloat},
    {kShort, kLong, kLong, kShort, kFloat},
    {kShort, kHalf, kHalf, kHalf, kHalf},
    {kShort, kFloat, kFloat, kFloat, kFloat},
    {kShort, kDouble, kDouble, kDouble, kDouble},
    {kShort, kBool, kShort, kShort, kFloat},
    {kInt, kByte, kInt, kInt, kFloat},
    {kInt, kChar, kInt, kInt, kFloat},
    {kInt, kShort, kInt, kInt, kFloat},
    {kInt, kInt, kInt, kInt, kFloat},
    {kInt, kLong, kLong, kInt, kFloat},
    {kInt, kHalf, kHalf, kHalf, kHalf},
    {kInt, kFloat, kFloat, kFloat, kFloat},
    {kInt, kDouble, kDouble, kDouble, kDouble},
    {kInt, kBool, kInt, kInt, kFloat},
    {kLong, kByte, kLong, kLong, kFloat},
    {kLong, kChar, kLong, kLong, kFloat},
    {kLong, kShort, kLong, kLong, kFloat},
    {kLong, kInt, kLong, kLong, kFloat},
    {kLong, kLong, kLong, kLong, kFloat},
    {kLong, kHalf, kHalf, kHalf, kHalf},
    {kLong, kFloat, kFloat, kFloat, kFloat},
    {kLong, kDouble, kDouble, kDouble, kDouble},
    {kLong, kBool, kLong, kLong, kFloat},
    {kHalf, kByte, kHalf, kHalf, kHalf},
    {kHalf, kChar, kHalf, kHalf, kHalf},
    {kHalf, kShort, kHalf, kHalf, kHalf},
    {kHalf, kInt, kHalf, kHalf, kHalf},
    {kHalf, kLong, kHalf, kHalf, kHalf},
    {kHalf, kHalf, kHalf, kHalf, kHalf},
    {kHalf, kFloat, kFloat, kHalf, kFloat},
    {kHalf, kDouble, kDouble, kHalf, kDouble},
    {kHalf, kBool, kHalf, kHalf, kHalf},
    {kFloat, kByte, kFloat, kFloat, kFloat},
    {kFloat, kChar, kFloat, kFloat, kFloat},
    {kFloat, kShort, kFloat, kFloat, kFloat},
    {kFloat, kInt, kFloat, kFloat, kFloat},
    {kFloat, kLong, kFloat, kFloat, kFloat},
    {kFloat, kHalf, kFloat, kFloat, kFloat},
    {kFloat, kFloat, kFloat, kFloat, kFloat},
    {kFloat, kDouble, kDouble, kFloat, kDouble},
    {kFloat, kBool, kFloat, kFloat, kFloat},
    {kDouble, kByte, kDouble, kDouble, kDouble},
    {kDouble, kChar, kDouble, kDouble, kDouble},
    {kDouble, kShort, kDouble, kDouble, kDouble},
    {kDouble, kInt, kDouble, kDouble, kDouble},
    {kDouble, kLong, kDouble, kDouble, kDouble},
    {kDouble, kHalf, kDouble, kDouble, kDouble},
    {kDouble, kFloat, kDouble, kDouble, kDouble},
    {kDouble, kDouble, kDouble, kDouble, kDouble},
    {kDouble, kBool, kDouble, kDouble, kDouble},
    {kBool, kByte, kByte, kByte, kFloat},
    {kBool, kChar, kChar, kChar, kFloat},
    {kBool, kShort, kShort, kShort, kFloat},
    {kBool, kInt, kInt, kInt, kFloat},
    {kBool, kLong, kLong, kLong, kFloat},
    {kBool, kHalf, kHalf, kHalf, kHalf},
    {kBool, kFloat, kFloat, kFloat, kFloat},
    {kBool, kDouble, kDouble, kDouble, kDouble},
    {kBool, kBool, kBool, kBool, kFloat},
};
// tensor op Scalar(int), Scalar(double), Scalar(bool), the same for a zero-dim tensor
const ScalarPromoCase kTensorScalar[] = {
    {kByte, kByte, kFloat, kByte},
    {kChar, kChar, kFloat, kChar},
    {kShort, kShort, kFloat, kShort},
    {kInt, kInt, kFloat, kInt},
    {kLong, kLong, kFloat, kLong},
    {kHalf, kHalf, kHalf, kHalf},
    {kFloat, kFloat, kFloat, kFloat},
    {kDouble, kDouble, kDouble, kDouble},
    {kBool, kLong, kFloat, kBool},
};

TEST(Promotion, TensorTensor) {
    for (const auto& c : kPairs) {
        EXPECT_EQ(result_type(ones({2}, c.a), ones({2}, c.b)), c.tensor_tensor) << c.a << " " << c.b;
        EXPECT_EQ(promote_types(c.a, c.b), c.tensor_tensor) << c.a << " " << c.b;
    }
}

TEST(Promotion, TensorZeroDim) {
    for (const auto& c : kPairs) {
        EXPECT_EQ(result_type(ones({2}, c.a), ones({}, c.b)), c.tensor_zero_dim) << c.a << " " << c.b;
    }
}

// a tensor of this shape op Scalar(int), Scalar(double), Scalar(bool)
void expect_scalar_promotion(IntArrayRef shape) {
    for (const auto& c : kTensorScalar) {
        EXPECT_EQ(result_type(ones(shape, c.a), Scalar(2)), c.with_int) << c.a;
        EXPECT_EQ(result_type(ones(shape, c.a), Scalar(2.5)), c.with_double) << c.a;
        EXPECT_EQ(result_type(ones(shape, c.a), Scalar(true)), c.with_bool) << c.a;
    }
}

TEST(Promotion, TensorScalar) { expect_scalar_promotion({2}); }
TEST(Promotion, ZeroDimScalar) { expect_scalar_promotion({}); }

TEST(Promotion, OpsFollowResultType) {
    for (const auto& c : kPairs) {
        if (!(c.a == kBool && c.b == kBool)) {
            EXPECT_EQ((ones({2}, c.a) + ones({2}, c.b)).scalar_type(), c.tensor_tensor) << c.a << " " << c.b;
            EXPECT_EQ((ones({2}, c.a) * ones({2}, c.b)).scalar_type(), c.tensor_tensor) << c.a << " " << c.b;
        }
        EXPECT_EQ((ones({2}, c.a) / ones({2}, c.b)).scalar_type(), c.division) << c.a << " " << c.b;
    }
    // a Python-number-like Scalar does not promote within its category
    EXPECT_EQ((ones({2}, kFloat) * 2.5).scalar_type(), kFloat);
    EXPECT_EQ((ones({2}, kHalf) * 2.5).scalar_type(), kHalf);
    EXPECT_EQ((ones({2}, kByte) + 300).scalar_type(), kByte);
    EXPECT_EQ((ones({2}, kInt) * 2.5).scalar_type(), kFloat);
    EXPECT_EQ((ones({2}, kBool) + 1).scalar_type(), kLong);
    EXPECT_EQ((2.0 * ones({2}, kLong)).scalar_type(), kFloat);
    EXPECT_EQ((ones({2}, kLong) / 2).scalar_type(), kFloat);
    EXPECT_EQ(ones({2}, kLong).div(2, "floor").scalar_type(), kLong);
    EXPECT_EQ((ones({2}, kFloat) + ones({}, kDouble)).scalar_type(), kFloat);
    EXPECT_EQ((ones({2}, kLong) + ones({}, kDouble)).scalar_type(), kDouble);
}

TEST(Promotion, DefaultDtype) {
    EXPECT_EQ(get_default_dtype(), kFloat);
    set_default_dtype(kDouble);
    EXPECT_EQ(ones({2}).scalar_type(), kDouble);
    EXPECT_EQ((ones({2}, kLong) / 2).scalar_type(), kDouble);
    EXPECT_EQ(tensor({1.0, 2.0}).scalar_type(), kDouble);
    set_default_dtype(kFloat);
    EXPECT_THROW(set_default_dtype(kLong), Error);
}

TEST(Promotion, InPlaceCastRules) {
    Tensor i = ones({2}, kLong);
    EXPECT_EQ(error_of([&] { i.add_(ones({2}, kFloat)); }),
              "result type Float can't be cast to the desired output type Long");
    EXPECT_THROW(i.div_(2), Error);
    Tensor h = ones({2}, kHalf);
    h.add_(ones({2}, kFloat));  // float result written back as half
    EXPECT_EQ(h.scalar_type(), kHalf);
    EXPECT_EQ(h[0].item<float>(), 2.0f);
}

TEST(Broadcasting, Shapes) {
    EXPECT_EQ(infer_size({3, 1}, {1, 4}), (std::vector<int64_t>{3, 4}));
    EXPECT_EQ(infer_size({2, 3, 4}, {4}), (std::vector<int64_t>{2, 3, 4}));
    EXPECT_EQ(infer_size({}, {5}), (std::vector<int64_t>{5}));
    EXPECT_EQ(infer_size({0, 1}, {1, 3}), (std::vector<int64_t>{0, 3}));
    EXPECT_EQ(broadcast_shapes({{2, 1}, {1, 3}, {3}}), (std::vector<int64_t>{2, 3}));
    Tensor r = ones({3, 1}) + ones({1, 4});
    EXPECT_EQ(r.sizes(), (std::vector<int64_t>{3, 4}));
    EXPECT_TRUE(r.is_contiguous());
}

TEST(Broadcasting, ErrorMessage) {
    EXPECT_EQ(error_of([] { (void)(ones({2, 3}) + ones({4})); }),
              "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1");
    EXPECT_EQ(error_of([] { ones({3}).add_(ones({2, 3})); }),
              "output with shape [3] doesn't match the broadcast shape [2, 3]");
}

TEST(Broadcasting, OutputLayoutFollowsInputs) {
    Tensor t = arange(6, kFloat).view({2, 3}).t();  // (3, 2), strides (1, 3)
    Tensor r = t * 2;
    EXPECT_EQ(r.strides(), (std::vector<int64_t>{1, 3}));
    EXPECT_FALSE(r.is_contiguous());
    EXPECT_TRUE(r.equal(t.contiguous() * 2));
}

}  // namespace
