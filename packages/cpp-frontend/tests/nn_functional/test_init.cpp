// ember::nn::init: gains and fans exactly, bounds exactly, moments statistically, errors.
#include <gtest/gtest.h>

#include <cmath>

#include "ember/nn/init.h"
#include "functional_test_util.h"

namespace {

using namespace ember;
namespace init = ember::nn::init;
using ember_test::error_of;

double mean_of(const Tensor& t) { return t.to(kDouble).mean().item<double>(); }
double std_of(const Tensor& t) { return t.to(kDouble).std().item<double>(); }
double min_of(const Tensor& t) { return t.min().to(kDouble).item<double>(); }
double max_of(const Tensor& t) { return t.max().to(kDouble).item<double>(); }

TEST(Init, CalculateGain) {
    for (const char* f : {"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                          "conv_transpose3d", "sigmoid"}) {
        EXPECT_EQ(init::calculate_gain(f), 1.0) << f;
    }
    EXPECT_DOUBLE_EQ(init::calculate_gain("tanh"), 5.0 / 3);
    EXPECT_DOUBLE_EQ(init::calculate_gain("relu"), std::sqrt(2.0));
    EXPECT_DOUBLE_EQ(init::calculate_gain("leaky_relu"), std::sqrt(2.0 / (1 + 0.01 * 0.01)));
    EXPECT_DOUBLE_EQ(init::calculate_gain("leaky_relu", 0.2), std::sqrt(2.0 / 1.04));
    EXPECT_DOUBLE_EQ(init::calculate_gain("selu"), 0.75);
    EXPECT_EQ(error_of([] { init::calculate_gain("swish"); }), "Unsupported nonlinearity swish");
}

TEST(Init, Fans) {
    EXPECT_EQ(init::calculate_fan_in_and_fan_out(empty({6, 4})), std::make_tuple(int64_t(4), int64_t(6)));
    EXPECT_EQ(init::calculate_fan_in_and_fan_out(empty({8, 3, 5, 5})), std::make_tuple(int64_t(75), int64_t(200)));
    EXPECT_EQ(init::calculate_correct_fan(empty({8, 3, 5, 5}), "FAN_OUT"), 200);
    EXPECT_EQ(error_of([] { init::calculate_fan_in_and_fan_out(empty({5})); }),
              "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions");
    EXPECT_EQ(error_of([] { init::kaiming_uniform_(empty({3, 3}), 0, "fan_avg"); }),
              "Mode fan_avg not supported, please use one of ['fan_in', 'fan_out']");
}

TEST(Init, UniformAndNormal) {
    manual_seed(1);
    Tensor w = empty({200, 100});
    Tensor r = init::uniform_(w, -0.5, 1.5);
    EXPECT_TRUE(r.is_same(w));
    EXPECT_GE(min_of(w), -0.5);
    EXPECT_LT(max_of(w), 1.5);
    EXPECT_NEAR(mean_of(w), 0.5, 0.02);
    EXPECT_NEAR(std_of(w), 2.0 / std::sqrt(12.0), 0.01);
    init::normal_(w, 3.0, 0.5);
    EXPECT_NEAR(mean_of(w), 3.0, 0.02);
    EXPECT_NEAR(std_of(w), 0.5, 0.01);
    // a generator makes the draw reproducible
    Tensor a = init::normal_(empty({10}), 0, 1, Generator(5)), b = init::normal_(empty({10}), 0, 1, Generator(5));
    EXPECT_TRUE(a.equal(b));
}

TEST(Init, WorksOnLeavesRequiringGrad) {
    Tensor w = empty({4, 3}).requires_grad_(true);
    init::kaiming_uniform_(w, std::sqrt(5.0));
    init::zeros_(w);
    EXPECT_TRUE(w.requires_grad());
    EXPECT_TRUE(w.is_leaf());
    EXPECT_EQ(w.grad_fn(), nullptr);
    EXPECT_EQ(max_of(w.abs()), 0.0);
}

TEST(Init, ConstantsEyeDirac) {
    Tensor w = empty({3, 4});
    EXPECT_TRUE(init::constant_(w, 0.25).equal(full({3, 4}, 0.25)));
    EXPECT_TRUE(init::ones_(w).equal(ones({3, 4})));
    EXPECT_TRUE(init::zeros_(w).equal(zeros({3, 4})));
    EXPECT_TRUE(init::eye_(w).equal(eye(3, 4)));
    EXPECT_EQ(error_of([] { init::eye_(empty({2, 2, 2})); }), "Only tensors with 2 dimensions are supported");

    Tensor d = init::dirac_(empty({4, 2, 3, 3}), 2);
    // each group of 2 output channels maps input channel c to output g * 2 + c at the centre
    EXPECT_EQ(d.sum().item<double>(), 4.0);
    EXPECT_EQ(d.index({0, 0, 1, 1}).item<double>(), 1.0);
    EXPECT_EQ(d.index({3, 1, 1, 1}).item<double>(), 1.0);
    const Tensor x = randn({1, 2, 5, 5});
    const Tensor ident = init::dirac_(empty({2, 2, 3}));
    EXPECT_TRUE(conv1d(x.select(2, 0), ident, {}, 1, 1).allclose(x.select(2, 0)));
    EXPECT_EQ(error_of([] { init::dirac_(empty({2, 2})); }), "Only tensors with 3, 4, or 5 dimensions are supported");
    EXPECT_EQ(error_of([] { init::dirac_(empty({3, 2, 3}), 2); }), "dim 0 must be divisible by groups");
}

TEST(Init, XavierAndKaimingBounds) {
    manual_seed(2);
    Tensor w = empty({256, 128, 3});
    const double fan_in = 128 * 3, fan_out = 256 * 3;
    const double xavier_a = 1.5 * std::sqrt(6.0 / (fan_in + fan_out));
    init::xavier_uniform_(w, 1.5);
    EXPECT_GE(min_of(w), -xavier_a);
    EXPECT_LE(max_of(w), xavier_a);
    EXPECT_GT(max_of(w), 0.99 * xavier_a);
    EXPECT_NEAR(std_of(w), xavier_a / std::sqrt(3.0), 0.01 * xavier_a);
    init::xavier_normal_(w);
    EXPECT_NEAR(std_of(w), std::sqrt(2.0 / (fan_in + fan_out)), 0.01 * std::sqrt(2.0 / (fan_in + fan_out)));

    // nn.Linear's default: kaiming_uniform_(a=sqrt(5)) gives bound 1 / sqrt(fan_in)
    init::kaiming_uniform_(w, std::sqrt(5.0));
    const double bound = 1.0 / std::sqrt(fan_in);
    EXPECT_GE(min_of(w), -bound);
    EXPECT_LE(max_of(w), bound);
    EXPECT_GT(max_of(w), 0.99 * bound);
    init::kaiming_uniform_(w, 0, "fan_out", "relu");
    const double relu_bound = std::sqrt(2.0) * std::sqrt(3.0 / fan_out);
    EXPECT_LE(max_of(w.abs()), relu_bound);
    EXPECT_GT(max_of(w.abs()), 0.99 * relu_bound);
    init::kaiming_normal_(w, 0, "fan_in", "relu");
    EXPECT_NEAR(std_of(w), std::sqrt(2.0 / fan_in), 0.01 * std::sqrt(2.0 / fan_in));
    EXPECT_NEAR(mean_of(w), 0.0, 0.003);
    // zero-element tensors are left alone
    Tensor e = empty({0, 3});
    EXPECT_TRUE(init::kaiming_normal_(e).is_same(e));
}

TEST(Init, TruncNormal) {
    manual_seed(3);
    Tensor w = empty({100000}, kDouble);
    init::trunc_normal_(w, 0.5, 2.0, -1.0, 1.5);
    EXPECT_GE(min_of(w), -1.0);
    EXPECT_LE(max_of(w), 1.5);
    // the mean of N(0.5, 4) truncated to [-1, 1.5]: mu + sigma (phi(alpha) - phi(beta)) / Z
    auto phi = [](double z) { return std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI); };
    auto cdf = [](double z) { return 0.5 * (1 + std::erf(z / std::sqrt(2.0))); };
    const double alpha = (-1.0 - 0.5) / 2.0, beta = (1.5 - 0.5) / 2.0;
    const double expected = 0.5 + 2.0 * (phi(alpha) - phi(beta)) / (cdf(beta) - cdf(alpha));
    EXPECT_NEAR(mean_of(w), expected, 0.01);
    // the standard case: N(0, 1) in [-2, 2], std 0.8796
    Tensor s = init::trunc_normal_(empty({100000}), 0.0, 1.0);
    EXPECT_NEAR(std_of(s), 0.8796, 0.01);
    EXPECT_NEAR(mean_of(s), 0.0, 0.01);
}

TEST(Init, Orthogonal) {
    manual_seed(4);
    for (auto shape : {std::vector<int64_t>{6, 4}, std::vector<int64_t>{3, 8}, std::vector<int64_t>{4, 2, 3}}) {
        Tensor w = init::orthogonal_(empty(shape, kDouble), 2.0);
        const Tensor m = w.reshape({shape[0], -1});
        const Tensor gram = shape[0] >= m.size(1) ? m.t().matmul(m) : m.matmul(m.t());
        EXPECT_TRUE(gram.allclose(eye(gram.size(0), kDouble) * 4.0, 1e-10, 1e-10)) << gram;
    }
    EXPECT_EQ(error_of([] { init::orthogonal_(empty({3})); }), "Only tensors with 2 or more dimensions are supported");
}

TEST(Init, Sparse) {
    manual_seed(5);
    Tensor w = init::sparse_(empty({10, 50}), 0.3, 0.5);
    // ceil(0.3 * 10) = 3 zeros in every column
    EXPECT_TRUE(eq(w, 0).sum(0).equal(full({50}, 3, kLong)));
    EXPECT_EQ(error_of([] { init::sparse_(empty({2, 2, 2}), 0.1); }), "Only tensors with 2 dimensions are supported");
}

}  // namespace
