// Type promotion and broadcasting against PyTorch's (the tables were computed with
// torch.result_type / torch division in PyTorch 2.13).
#include <gtest/gtest.h>

#include "ember/autograd.h"
#include "ember/tensor.h"

namespace {

using namespace ember;

struct PromoCase {
    ScalarType a, b, expected;
};
struct ScalarPromoCase {
    ScalarType a, with_int, with_double, with_bool;
};

// tensor(dim 1) op tensor(dim 1)
const PromoCase kTensorTensor[] = {
    {kByte, kByte, kByte},
    {kByte, kChar, kShort},
    {kByte, kShort, kShort},
    {kByte, kInt, kInt},
    {kByte, kLong, kLong},
    {kByte, kHalf, kHalf},
    {kByte, kFloat, kFloat},
    {kByte, kDouble, kDouble},
    {kByte, kBool, kByte},
    {kChar, kByte, kShort},
    {kChar, kChar, kChar},
    {kChar, kShort, kShort},
    {kChar, kInt, kInt},
    {kChar, kLong, kLong},
    {kChar, kHalf, kHalf},
    {kChar, kFloat, kFloat},
    {kChar, kDouble, kDouble},
    {kChar, kBool, kChar},
    {kShort, kByte, kShort},
    {kShort, kChar, kShort},
    {kShort, kShort, kShort},
    {kShort, kInt, kInt},
    {kShort, kLong, kLong},
    {kShort, kHalf, kHalf},
    {kShort, kFloat, kFloat},
    {kShort, kDouble, kDouble},
    {kShort, kBool, kShort},
    {kInt, kByte, kInt},
    {kInt, kChar, kInt},
    {kInt, kShort, kInt},
    {kInt, kInt, kInt},
    {kInt, kLong, kLong},
    {kInt, kHalf, kHalf},
    {kInt, kFloat, kFloat},
    {kInt, kDouble, kDouble},
    {kInt, kBool, kInt},
    {kLong, kByte, kLong},
    {kLong, kChar, kLong},
    {kLong, kShort, kLong},
    {kLong, kInt, kLong},
    {kLong, kLong, kLong},
    {kLong, kHalf, kHalf},
    {kLong, kFloat, kFloat},
    {kLong, kDouble, kDouble},
    {kLong, kBool, kLong},
    {kHalf, kByte, kHalf},
    {kHalf, kChar, kHalf},
    {kHalf, kShort, kHalf},
    {kHalf, kInt, kHalf},
    {kHalf, kLong, kHalf},
    {kHalf, kHalf, kHalf},
    {kHalf, kFloat, kFloat},
    {kHalf, kDouble, kDouble},
    {kHalf, kBool, kHalf},
    {kFloat, kByte, kFloat},
    {kFloat, kChar, kFloat},
    {kFloat, kShort, kFloat},
    {kFloat, kInt, kFloat},
    {kFloat, kLong, kFloat},
    {kFloat, kHalf, kFloat},
    {kFloat, kFloat, kFloat},
    {kFloat, kDouble, kDouble},
    {kFloat, kBool, kFloat},
    {kDouble, kByte, kDouble},
    {kDouble, kChar, kDouble},
    {kDouble, kShort, kDouble},
    {kDouble, kInt, kDouble},
    {kDouble, kLong, kDouble},
    {kDouble, kHalf, kDouble},
    {kDouble, kFloat, kDouble},
    {kDouble, kDouble, kDouble},
    {kDouble, kBool, kDouble},
    {kBool, kByte, kByte},
    {kBool, kChar, kChar},
    {kBool, kShort, kShort},
    {kBool, kInt, kInt},
    {kBool, kLong, kLong},
    {kBool, kHalf, kHalf},
    {kBool, kFloat, kFloat},
    {kBool, kDouble, kDouble},
    {kBool, kBool, kBool},
};
// tensor(dim 1) op tensor(dim 0)
const PromoCase kTensorZeroDim[] = {
    {kByte, kByte, kByte},
    {kByte, kChar, kByte},
    {kByte, kShort, kByte},
    {kByte, kInt, kByte},
    {kByte, kLong, kByte},
    {kByte, kHalf, kHalf},
    {kByte, kFloat, kFloat},
    {kByte, kDouble, kDouble},
    {kByte, kBool, kByte},
    {kChar, kByte, kChar},
    {kChar, kChar, kChar},
    {kChar, kShort, kChar},
    {kChar, kInt, kChar},
    {kChar, kLong, kChar},
    {kChar, kHalf, kHalf},
    {kChar, kFloat, kFloat},
    {kChar, kDouble, kDouble},
    {kChar, kBool, kChar},
    {kShort, kByte, kShort},
    {kShort, kChar, kShort},
    {kShort, kShort, kShort},
    {kShort, kInt, kShort},
    {kShort, kLong, kShort},
    {kShort, kHalf, kHalf},
    {kShort, kFloat, kFloat},
    {kShort, kDouble, kDouble},
    {kShort, kBool, kShort},
    {kInt, kByte, kInt},
    {kInt, kChar, kInt},
    {kInt, kShort, kInt},
    {kInt, kInt, kInt},
    {kInt, kLong, kInt},
    {kInt, kHalf, kHalf},
    {kInt, kFloat, kFloat},
    {kInt, kDouble, kDouble},
    {kInt, kBool, kInt},
    {kLong, kByte, kLong},
    {kLong, kChar, kLong},
    {kLong, kShort, kLong},
    {kLong, kInt, kLong},
    {kLong, kLong, kLong},
    {kLong, kHalf, kHalf},
    {kLong, kFloat, kFloat},
    {kLong, kDouble, kDouble},
    {kLong, kBool, kLong},
    {kHalf, kByte, kHalf},
    {kHalf, kChar, kHalf},
    {kHalf, kShort, kHalf},
    {kHalf, kInt, kHalf},
    {kHalf, kLong, kHalf},
    {kHalf, kHalf, kHalf},
    {kHalf, kFloat, kHalf},
    {kHalf, kDouble, kHalf},
    {kHalf, kBool, kHalf},
    {kFloat, kByte, kFloat},
    {kFloat, kChar, kFloat},
    {kFloat, kShort, kFloat},
    {kFloat, kInt, kFloat},
    {kFloat, kLong, kFloat},
    {kFloat, kHalf, kFloat},
    {kFloat, kFloat, kFloat},
    {kFloat, kDouble, kFloat},
    {kFloat, kBool, kFloat},
    {kDouble, kByte, kDouble},
    {kDouble, kChar, kDouble},
    {kDouble, kShort, kDouble},
    {kDouble, kInt, kDouble},
    {kDouble, kLong, kDouble},
    {kDouble, kHalf, kDouble},
    {kDouble, kFloat, kDouble},
    {kDouble, kDouble, kDouble},
    {kDouble, kBool, kDouble},
    {kBool, kByte, kByte},
    {kBool, kChar, kChar},
    {kBool, kShort, kShort},
    {kBool, kInt, kInt},
    {kBool, kLong, kLong},
    {kBool, kHalf, kHalf},
    {kBool, kFloat, kFloat},
    {kBool, kDouble, kDouble},
    {kBool, kBool, kBool},
};
// tensor op Scalar(int), Scalar(double), Scalar(bool)
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
// zero-dim tensor op Scalar
const ScalarPromoCase kZeroDimScalar[] = {
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
// true division
const PromoCase kDivision[] = {
    {kByte, kByte, kFloat},
    {kByte, kChar, kFloat},
    {kByte, kShort, kFloat},
    {kByte, kInt, kFloat},
    {kByte, kLong, kFloat},
    {kByte, kHalf, kHalf},
    {kByte, kFloat, kFloat},
    {kByte, kDouble, kDouble},
    {kByte, kBool, kFloat},
    {kChar, kByte, kFloat},
    {kChar, kChar, kFloat},
    {kChar, kShort, kFloat},
    {kChar, kInt, kFloat},
    {kChar, kLong, kFloat},
    {kChar, kHalf, kHalf},
    {kChar, kFloat, kFloat},
    {kChar, kDouble, kDouble},
    {kChar, kBool, kFloat},
    {kShort, kByte, kFloat},
    {kShort, kChar, kFloat},
    {kShort, kShort, kFloat},
    {kShort, kInt, kFloat},
    {kShort, kLong, kFloat},
    {kShort, kHalf, kHalf},
    {kShort, kFloat, kFloat},
    {kShort, kDouble, kDouble},
    {kShort, kBool, kFloat},
    {kInt, kByte, kFloat},
    {kInt, kChar, kFloat},
    {kInt, kShort, kFloat},
    {kInt, kInt, kFloat},
    {kInt, kLong, kFloat},
    {kInt, kHalf, kHalf},
    {kInt, kFloat, kFloat},
    {kInt, kDouble, kDouble},
    {kInt, kBool, kFloat},
    {kLong, kByte, kFloat},
    {kLong, kChar, kFloat},
    {kLong, kShort, kFloat},
    {kLong, kInt, kFloat},
    {kLong, kLong, kFloat},
    {kLong, kHalf, kHalf},
    {kLong, kFloat, kFloat},
    {kLong, kDouble, kDouble},
    {kLong, kBool, kFloat},
    {kHalf, kByte, kHalf},
    {kHalf, kChar, kHalf},
    {kHalf, kShort, kHalf},
    {kHalf, kInt, kHalf},
    {kHalf, kLong, kHalf},
    {kHalf, kHalf, kHalf},
    {kHalf, kFloat, kFloat},
    {kHalf, kDouble, kDouble},
    {kHalf, kBool, kHalf},
    {kFloat, kByte, kFloat},
    {kFloat, kChar, kFloat},
    {kFloat, kShort, kFloat},
    {kFloat, kInt, kFloat},
    {kFloat, kLong, kFloat},
    {kFloat, kHalf, kFloat},
    {kFloat, kFloat, kFloat},
    {kFloat, kDouble, kDouble},
    {kFloat, kBool, kFloat},
    {kDouble, kByte, kDouble},
    {kDouble, kChar, kDouble},
    {kDouble, kShort, kDouble},
    {kDouble, kInt, kDouble},
    {kDouble, kLong, kDouble},
    {kDouble, kHalf, kDouble},
    {kDouble, kFloat, kDouble},
    {kDouble, kDouble, kDouble},
    {kDouble, kBool, kDouble},
    {kBool, kByte, kFloat},
    {kBool, kChar, kFloat},
    {kBool, kShort, kFloat},
    {kBool, kInt, kFloat},
    {kBool, kLong, kFloat},
    {kBool, kHalf, kHalf},
    {kBool, kFloat, kFloat},
    {kBool, kDouble, kDouble},
    {kBool, kBool, kFloat},
};

TEST(Promotion, TensorTensor) {
    for (const auto& c : kTensorTensor) {
        EXPECT_EQ(result_type(ones({2}, c.a), ones({2}, c.b)), c.expected) << c.a << " " << c.b;
        EXPECT_EQ(promote_types(c.a, c.b), c.expected) << c.a << " " << c.b;
    }
}

TEST(Promotion, TensorZeroDim) {
    for (const auto& c : kTensorZeroDim) {
        EXPECT_EQ(result_type(ones({2}, c.a), ones({}, c.b)), c.expected) << c.a << " " << c.b;
    }
}

TEST(Promotion, TensorScalar) {
    for (const auto& c : kTensorScalar) {
        EXPECT_EQ(result_type(ones({2}, c.a), Scalar(2)), c.with_int) << c.a;
        EXPECT_EQ(result_type(ones({2}, c.a), Scalar(2.5)), c.with_double) << c.a;
        EXPECT_EQ(result_type(ones({2}, c.a), Scalar(true)), c.with_bool) << c.a;
    }
}

TEST(Promotion, ZeroDimScalar) {
    for (const auto& c : kZeroDimScalar) {
        EXPECT_EQ(result_type(ones({}, c.a), Scalar(2)), c.with_int) << c.a;
        EXPECT_EQ(result_type(ones({}, c.a), Scalar(2.5)), c.with_double) << c.a;
        EXPECT_EQ(result_type(ones({}, c.a), Scalar(true)), c.with_bool) << c.a;
    }
}

TEST(Promotion, OpsFollowResultType) {
    for (const auto& c : kTensorTensor) {
        if (c.a == kBool && c.b == kBool) continue;
        EXPECT_EQ((ones({2}, c.a) + ones({2}, c.b)).scalar_type(), c.expected) << c.a << " " << c.b;
        EXPECT_EQ((ones({2}, c.a) * ones({2}, c.b)).scalar_type(), c.expected) << c.a << " " << c.b;
    }
    for (const auto& c : kDivision) {
        EXPECT_EQ((ones({2}, c.a) / ones({2}, c.b)).scalar_type(), c.expected) << c.a << " " << c.b;
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
    try {
        i.add_(ones({2}, kFloat));
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "result type Float can't be cast to the desired output type Long");
    }
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
    try {
        (void)(ones({2, 3}) + ones({4}));
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1");
    }
    try {
        ones({3}).add_(ones({2, 3}));
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "output with shape [3] doesn't match the broadcast shape [2, 3]");
    }
}

TEST(Broadcasting, OutputLayoutFollowsInputs) {
    Tensor t = arange(6, kFloat).view({2, 3}).t();  // (3, 2), strides (1, 3)
    Tensor r = t * 2;
    EXPECT_EQ(r.strides(), (std::vector<int64_t>{1, 3}));
    EXPECT_FALSE(r.is_contiguous());
    EXPECT_TRUE(r.equal(t.contiguous() * 2));
}

}  // namespace
