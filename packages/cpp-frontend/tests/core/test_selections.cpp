// ember::kthvalue, mode, median and nanmedian (libtorch's public functions and Tensor methods):
// values, the indices PyTorch 2.13 gives tied elements, keepdim, the gradient to the picked
// element (a whole-tensor median's shared among the elements equal to it), the backward nodes'
// names and PyTorch's errors. The expected numbers are PyTorch's (the same as Python Ember's).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/error_of.h"
#include "ember/autograd.h"
#include "ember/tensor.h"

namespace {

using namespace ember;
using ember::testing::error_as;

const double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor rows() { return tensor({{3.0, 1.0, 3.0, 2.0, 1.0}, {5.0, 5.0, 4.0, 4.0, 6.0}}); }

TEST(Selections, ValuesAndTiedIndicesArePyTorchs) {
    auto [kv, ki] = kthvalue(rows(), 2, 1);
    EXPECT_TRUE(kv.equal(tensor({1.0, 4.0})));
    EXPECT_TRUE(ki.equal(tensor({int64_t(1), int64_t(2)})));
    auto [mv, mi] = rows().mode(1);
    EXPECT_TRUE(mv.equal(tensor({1.0, 4.0})));
    EXPECT_TRUE(mi.equal(tensor({int64_t(4), int64_t(3)})));
    auto [dv, di] = median(rows(), 1);
    EXPECT_TRUE(dv.equal(tensor({2.0, 5.0})));
    EXPECT_TRUE(di.equal(tensor({int64_t(3), int64_t(0)})));
    EXPECT_EQ(rows().median().item<float>(), 3.0f);
    EXPECT_EQ(rows().median().dim(), 0);
}

TEST(Selections, KeepdimKeepsTheDim) {
    auto [v, i] = mode(rows(), 1, /*keepdim=*/true);
    EXPECT_EQ(v.sizes().vec(), (std::vector<int64_t>{2, 1}));
    EXPECT_TRUE(i.equal(tensor({{int64_t(4)}, {int64_t(3)}})));
    auto [v0, i0] = kthvalue(rows(), 2, 0);
    EXPECT_EQ(v0.sizes().vec(), (std::vector<int64_t>{5}));
    EXPECT_TRUE(v0.equal(tensor({5.0, 5.0, 4.0, 4.0, 6.0})));
    EXPECT_TRUE(i0.equal(tensor({int64_t(1), int64_t(1), int64_t(1), int64_t(1), int64_t(1)})));
}

TEST(Selections, NaNs) {
    Tensor y = tensor({{kNaN, 1.0, 2.0, kNaN}, {kNaN, kNaN, kNaN, kNaN}});
    auto [nv, ni] = nanmedian(y, 1);
    EXPECT_EQ(nv[0].item<float>(), 1.0f);
    EXPECT_TRUE(std::isnan(nv[1].item<float>()));
    // an all-NaN row: where std::nth_element leaves the first of four equal elements
    EXPECT_TRUE(ni.equal(tensor({int64_t(1), int64_t(2)})));
    auto [mv, mi] = median(y, 1);
    EXPECT_TRUE(mv.isnan().all().item<bool>());
    EXPECT_TRUE(mi.equal(tensor({int64_t(0), int64_t(0)})));  // the first NaN
    EXPECT_EQ(y.nanmedian().item<float>(), 1.0f);
    EXPECT_TRUE(std::isnan(y.median().item<float>()));
}

TEST(Selections, GradientGoesToThePickedElement) {
    Tensor w = rows().requires_grad_(true);
    auto [v, i] = kthvalue(w, 2, 1);
    ASSERT_TRUE(v.grad_fn());
    EXPECT_EQ(v.grad_fn()->name(), "KthvalueBackward0");
    v.sum().backward();
    EXPECT_TRUE(w.grad().equal(tensor({{0.0, 1.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 1.0, 0.0, 0.0}})));

    Tensor w2 = rows().requires_grad_(true);
    auto [mv, mi] = w2.mode(1, true);
    EXPECT_EQ(mv.grad_fn()->name(), "ModeBackward0");
    (mv * tensor({{2.0}, {3.0}})).sum().backward();
    EXPECT_TRUE(w2.grad().equal(tensor({{0.0, 0.0, 0.0, 0.0, 2.0}, {0.0, 0.0, 0.0, 3.0, 0.0}})));

    Tensor w3 = rows().requires_grad_(true);
    Tensor m = w3.median();
    EXPECT_EQ(m.grad_fn()->name(), "MedianBackward0");
    m.backward();  // the two 3s share it
    EXPECT_TRUE(w3.grad().equal(tensor({{0.5, 0.0, 0.5, 0.0, 0.0}, {0.0, 0.0, 0.0, 0.0, 0.0}})));

    Tensor w4 = rows().requires_grad_(true);
    EXPECT_EQ(std::get<0>(median(w4, 1)).grad_fn()->name(), "MedianBackward1");
    EXPECT_EQ(std::get<0>(nanmedian(w4, 1)).grad_fn()->name(), "NanmedianBackward1");
    EXPECT_EQ(w4.nanmedian().grad_fn()->name(), "NanmedianBackward0");
}  // (float64 gradchecks: tests/autograd/test_gradcheck.cpp)

TEST(Selections, PyTorchsErrors) {
    EXPECT_EQ(error_as<Error>([] { (void)kthvalue(rows(), 6, 1); }),
              "kthvalue(): selected number k out of range for dimension 1");
    EXPECT_EQ(error_as<IndexError>([] { (void)median(zeros({2, 0}), 1); }),
              "median(): Expected reduction dim 1 to have non-zero size.");
    EXPECT_EQ(error_as<IndexError>([] { (void)mode(zeros({2, 0}), 1); }),
              "mode(): Expected reduction dim 1 to have non-zero size.");
    EXPECT_EQ(error_as<NotImplementedError>([] { (void)median(zeros({3}, kBool)); }),
              "\"median_cpu\" not implemented for 'Bool'");
    EXPECT_EQ(error_as<NotImplementedError>([] { (void)kthvalue(zeros({3}, kBool), 1); }),
              "\"kthvalue_cpu\" not implemented for 'Bool'");
}

TEST(Selections, ZeroDimInputs) {
    Tensor s = tensor(2.5);
    auto [v, i] = kthvalue(s, 1);
    EXPECT_EQ(v.dim(), 0);
    EXPECT_EQ(v.item<float>(), 2.5f);
    EXPECT_EQ(i.item<int64_t>(), 0);
    EXPECT_EQ(std::get<0>(mode(s)).item<float>(), 2.5f);
}

}  // namespace
