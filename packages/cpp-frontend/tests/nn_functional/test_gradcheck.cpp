// float64 gradient checks of every differentiable function of ember::nn::functional (and
// gradients of gradients where the backward is hand-written).
#include <gtest/gtest.h>

#include <vector>

#include "common/gradcheck.h"
#include "functional_test_util.h"

namespace {

using namespace ember;
namespace F = ember::nn::functional;
using ember::testing::gradcheck;
using ember::testing::gradgradcheck;
using In = std::vector<Tensor>;

Tensor rnd(IntArrayRef shape, uint64_t seed, double lo = -1.0, double hi = 1.0) {
    Generator g(seed);
    return rand(shape, g, kFloat64) * (hi - lo) + lo;
}

// Values kept away from an activation's kink (|x| >= 0.1), so central differences are exact.
Tensor away_from_zero(IntArrayRef shape, uint64_t seed, double scale = 2.0) {
    const Tensor x = rnd(shape, seed) * scale;
    return where(lt(x.abs(), 0.1), x.sign() * 0.1 + x, x);
}

TEST(FunctionalGradcheck, LinearConvPool) {
    EXPECT_TRUE(gradcheck([](const In& i) { return F::linear(i[0], i[1], i[2]); },
                          {rnd({3, 4}, 1), rnd({2, 4}, 2), rnd({2}, 3)}));
    EXPECT_TRUE(gradcheck(
        [](const In& i) { return F::conv1d(i[0], i[1], F::Conv1dFuncOptions().bias(i[2]).stride(2).padding(1)); },
        {rnd({2, 2, 7}, 4), rnd({3, 2, 3}, 5), rnd({3}, 6)}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::conv2d(i[0], i[1], i[2], 1, 1, 1, 2); },
                          {rnd({1, 4, 5, 5}, 7), rnd({2, 2, 3, 3}, 8), rnd({2}, 9)}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::max_pool2d(i[0], 2, 1); }, {rnd({1, 2, 4, 4}, 10)}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::avg_pool2d(i[0], 3, 2, 1, true, false); }, {rnd({1, 2, 6, 5}, 11)}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::adaptive_avg_pool2d(i[0], {2, 3}); }, {rnd({1, 2, 5, 7}, 12)}));
}

TEST(FunctionalGradcheck, Activations) {
    const Tensor x = away_from_zero({3, 5}, 13);
    EXPECT_TRUE(gradcheck([](const In& i) { return F::relu(i[0]); }, {x}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::relu6(i[0] * 4); }, {x}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::hardtanh(i[0], -0.55, 0.65); }, {x}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::leaky_relu(i[0], 0.2); }, {x}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::elu(i[0], 1.3); }, {x}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::gelu(i[0]); }, {x}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::gelu(i[0], "tanh"); }, {x}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::tanh(i[0]); }, {x}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::sigmoid(i[0]); }, {x}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::silu(i[0]); }, {x}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::softplus(i[0], 2.0, 1.5); }, {x}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::logsigmoid(i[0]); }, {x}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::softmax(i[0], 1); }, {x}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::log_softmax(i[0], 0); }, {x}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::normalize(i[0], 2.0, 1); }, {x}));
    // the recorded backward formulas are differentiable again
    EXPECT_TRUE(gradgradcheck([](const In& i) { return F::elu(i[0], 1.3); }, {x}));
    EXPECT_TRUE(gradgradcheck([](const In& i) { return F::softplus(i[0], 2.0, 1.5); }, {x}));
    EXPECT_TRUE(gradgradcheck([](const In& i) { return F::logsigmoid(i[0]); }, {x}));
}

TEST(FunctionalGradcheck, InplaceActivationsThroughNonLeaf) {
    const Tensor x = away_from_zero({2, 6}, 14);
    EXPECT_TRUE(gradcheck([](const In& i) { return F::leaky_relu(i[0] * 1.0, 0.3, /*inplace=*/true); }, {x}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::hardtanh(i[0] * 1.0, -0.5, 0.6, /*inplace=*/true); }, {x}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::elu(i[0] * 1.0, 1.0, /*inplace=*/true); }, {x}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::silu(i[0] * 1.0, /*inplace=*/true); }, {x}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::relu(i[0] * 1.0, /*inplace=*/true); }, {x}));
}

TEST(FunctionalGradcheck, DropoutAndEmbedding) {
    // the same mask on every call: reseed before each forward
    EXPECT_TRUE(gradcheck(
        [](const In& i) {
            manual_seed(7);
            return F::dropout(i[0], 0.4, true);
        },
        {rnd({4, 5}, 15)}));
    const Tensor idx = tensor({{0, 2, 3}, {2, 1, 1}});
    EXPECT_TRUE(gradcheck([idx](const In& i) { return F::embedding(idx, i[0]); }, {rnd({4, 3}, 16)}));
    // padding_idx: that row's gradient is zero (by definition, not the numeric one), the others exact
    const Tensor w = rnd({4, 3}, 18).requires_grad_(true);
    F::embedding(idx, w, -2).sum().backward();
    EXPECT_TRUE(w.grad().equal(tensor({{1.0, 1.0, 1.0}, {2.0, 2.0, 2.0}, {0.0, 0.0, 0.0}, {1.0, 1.0, 1.0}}, kDouble)));
    EXPECT_TRUE(gradgradcheck([idx](const In& i) { return F::embedding(idx, i[0]); }, {rnd({4, 3}, 17)}));
}

TEST(FunctionalGradcheck, Normalization) {
    const Tensor x = rnd({3, 2, 3, 2}, 18), w = rnd({2}, 19), b = rnd({2}, 20);
    EXPECT_TRUE(gradcheck(
        [](const In& i) {
            return F::batch_norm(i[0], Tensor(), Tensor(), i[1], i[2], /*training=*/true, 0.1, 1e-5);
        },
        {x, w, b}));
    EXPECT_TRUE(gradcheck(
        [](const In& i) {
            const Tensor rm = zeros({2}, kFloat64), rv = ones({2}, kFloat64);
            return F::batch_norm(i[0], rm, rv, i[1], i[2], /*training=*/true);
        },
        {rnd({5, 2}, 21), w, b}));
    EXPECT_TRUE(gradcheck(
        [](const In& i) {
            const Tensor rm = full({2}, 0.3, kFloat64), rv = full({2}, 1.7, kFloat64);
            return F::batch_norm(i[0], rm, rv, i[1], i[2], /*training=*/false);
        },
        {x, w, b}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::batch_norm(i[0], {}, {}, {}, {}, true); }, {x}));
    EXPECT_TRUE(gradgradcheck([](const In& i) { return F::batch_norm(i[0], {}, {}, i[1], i[2], true); }, {x, w, b}));

    const Tensor lw = rnd({3, 2}, 22), lb = rnd({3, 2}, 23);
    EXPECT_TRUE(gradcheck([](const In& i) { return F::layer_norm(i[0], {3, 2}, i[1], i[2], 1e-5); }, {x, lw, lb}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::layer_norm(i[0], {2}); }, {x}));
    EXPECT_TRUE(gradgradcheck([](const In& i) { return F::layer_norm(i[0], {3, 2}, i[1], i[2]); }, {x, lw, lb}));

    EXPECT_TRUE(gradcheck([](const In& i) { return F::group_norm(i[0], 2, i[1], i[2]); },
                          {rnd({2, 4, 3}, 24), rnd({4}, 25), rnd({4}, 26)}));
}

TEST(FunctionalGradcheck, RegressionLosses) {
    const Tensor x = rnd({3, 4}, 27, -2, 2), y = rnd({3, 4}, 28, -2, 2);
    for (nn::Reduction r : {kNone, kMean, kSum}) {
        EXPECT_TRUE(gradcheck([r](const In& i) { return F::mse_loss(i[0], i[1], r); }, {x, y}));
        EXPECT_TRUE(gradcheck([r](const In& i) { return F::l1_loss(i[0], i[1], r); }, {x, y}));
        EXPECT_TRUE(gradcheck([r](const In& i) { return F::smooth_l1_loss(i[0], i[1], r, 0.5); }, {x, y}));
        EXPECT_TRUE(gradcheck([r](const In& i) { return F::huber_loss(i[0], i[1], F::HuberLossFuncOptions(r).delta(0.8)); },
                              {x, y}));
    }
}

TEST(FunctionalGradcheck, ClassificationLosses) {
    const Tensor logits = rnd({5, 4}, 29, -2, 2);
    const Tensor target = tensor({0, 3, 1, 1, 2});
    const Tensor weight = rnd({4}, 30, 0.2, 2.0);
    for (nn::Reduction r : {kNone, kMean, kSum}) {
        SCOPED_TRACE(std::string(nn::reduction_name(r)));
        // the fused path (class indices, no smoothing)
        EXPECT_TRUE(gradcheck([&](const In& i) { return F::cross_entropy(i[0], target, r); }, {logits}));
        EXPECT_TRUE(gradcheck(
            [&](const In& i) {
                return F::cross_entropy(i[0], target, F::CrossEntropyFuncOptions().weight(weight).ignore_index(1).reduction(r));
            },
            {logits}));
        // label smoothing, class probabilities, nll_loss
        EXPECT_TRUE(gradcheck(
            [&](const In& i) {
                return F::cross_entropy(
                    i[0], target,
                    F::CrossEntropyFuncOptions().weight(weight).ignore_index(3).reduction(r).label_smoothing(0.2));
            },
            {logits}));
        EXPECT_TRUE(gradcheck(
            [&](const In& i) {
                return F::cross_entropy(i[0], i[1].softmax(1), F::CrossEntropyFuncOptions(r).label_smoothing(0.1));
            },
            {logits, rnd({5, 4}, 31)}));
        EXPECT_TRUE(gradcheck(
            [&](const In& i) {
                return F::nll_loss(i[0], target, F::NLLLossFuncOptions(r).weight(weight).ignore_index(0));
            },
            {logits}));
    }
    // (N, C, d1, d2) and unbatched inputs
    const Tensor spatial_target = tensor({{{0, 2}, {1, 1}}, {{2, 0}, {0, 1}}});
    EXPECT_TRUE(gradcheck([&](const In& i) { return F::cross_entropy(i[0], spatial_target); }, {rnd({2, 3, 2, 2}, 32)}));
    EXPECT_TRUE(gradcheck([&](const In& i) { return F::cross_entropy(i[0], tensor(int64_t(2))); }, {rnd({4}, 33)}));
    // the fused backward under create_graph
    EXPECT_TRUE(gradgradcheck([&](const In& i) { return F::cross_entropy(i[0], target, F::CrossEntropyFuncOptions().weight(weight)); },
                              {logits}));

    const Tensor p = rnd({3, 4}, 34, 0.05, 0.95), t = rnd({3, 4}, 35, 0.0, 1.0), w = rnd({3, 4}, 36, 0.5, 1.5);
    for (nn::Reduction r : {kNone, kMean, kSum}) {
        EXPECT_TRUE(gradcheck(
            [&](const In& i) { return F::binary_cross_entropy(i[0], i[1], F::BinaryCrossEntropyFuncOptions(r).weight(w)); },
            {p, t}));
        EXPECT_TRUE(gradcheck(
            [&](const In& i) {
                return F::binary_cross_entropy_with_logits(
                    i[0], i[1], F::BinaryCrossEntropyWithLogitsFuncOptions(r).weight(w).pos_weight(rnd({4}, 37, 0.5, 3.0)));
            },
            {rnd({3, 4}, 38, -4, 4), t}));
    }
    EXPECT_TRUE(gradgradcheck([&](const In& i) { return F::binary_cross_entropy(i[0], i[1]); }, {p, t}));
}

TEST(FunctionalGradcheck, Attention) {
    const Tensor q = rnd({2, 3, 4}, 39), k = rnd({2, 5, 4}, 40), v = rnd({2, 5, 3}, 41);
    EXPECT_TRUE(gradcheck([](const In& i) { return F::scaled_dot_product_attention(i[0], i[1], i[2]); }, {q, k, v}));
    Tensor mask = gt(rnd({3, 5}, 42), -0.3);
    mask.index_put_({1}, false);  // a fully masked row: zero output, zero gradient
    EXPECT_TRUE(gradcheck([mask](const In& i) { return F::scaled_dot_product_attention(i[0], i[1], i[2], mask); },
                          {q, k, v}));
    EXPECT_TRUE(gradcheck(
        [](const In& i) {
            return F::scaled_dot_product_attention(i[0], i[1], i[2],
                                                   F::ScaledDotProductAttentionFuncOptions().attn_mask(i[3]).scale(0.7));
        },
        {q, k, v, rnd({3, 5}, 43)}));
    const Tensor kk = rnd({2, 3, 4}, 44), vv = rnd({2, 3, 3}, 45);
    EXPECT_TRUE(gradcheck([](const In& i) { return F::scaled_dot_product_attention(i[0], i[1], i[2], {}, 0.0, true); },
                          {q, kk, vv}));
}

}  // namespace
