// Behaviour of ember::nn::functional beyond values: options spellings, dropout statistics,
// in-place variants, running statistics, dtypes, node names.
#include <gtest/gtest.h>

#include <cmath>

#include "functional_test_util.h"

namespace {

using namespace ember;
namespace F = ember::nn::functional;

TEST(FunctionalOptions, ChainedSettersAndConversions) {
    const auto ce = F::CrossEntropyFuncOptions().ignore_index(3).reduction(kSum).label_smoothing(0.1);
    EXPECT_EQ(ce.ignore_index(), 3);
    EXPECT_EQ(ce.reduction(), kSum);
    EXPECT_DOUBLE_EQ(ce.label_smoothing(), 0.1);
    EXPECT_EQ(F::CrossEntropyFuncOptions().reduction(), kMean);
    EXPECT_EQ(F::MSELossFuncOptions("none").reduction(), kNone);
    EXPECT_EQ(F::MSELossFuncOptions(kSum).reduction(), kSum);

    const auto conv = F::Conv2dFuncOptions().stride(2).padding({1, 0});
    EXPECT_EQ(conv.stride().vec(), (std::vector<int64_t>{2, 2}));
    // padding is libtorch's variant: numbers, kValid or kSame
    EXPECT_EQ(std::get<F::ExpandingArray<2>>(conv.padding()).vec(), (std::vector<int64_t>{1, 0}));
    EXPECT_TRUE(F::Conv2dFuncOptions().padding(kSame).padding().is_same());
    EXPECT_TRUE(std::holds_alternative<enumtype::kValid>(F::Conv1dFuncOptions().padding(kValid).padding()));
    EXPECT_EQ(conv.dilation().vec(), (std::vector<int64_t>{1, 1}));
    EXPECT_EQ(conv.groups(), 1);
    EXPECT_FALSE(conv.bias().defined());
    const auto pool = F::MaxPool2dFuncOptions(3);
    EXPECT_EQ(pool.stride().vec(), (std::vector<int64_t>{3, 3}));  // stride defaults to kernel_size
    EXPECT_EQ(ember_test::error_of([] { F::ExpandingArray<2>({1, 2, 3}); }), "Expected 2 values, but instead got 3");

    const Tensor x = randn({2, 3, 6, 6}), w = randn({4, 3, 3, 3}), b = randn({4});
    EXPECT_TRUE(F::conv2d(x, w, F::Conv2dFuncOptions().bias(b).stride(2).padding(1))
                    .equal(F::conv2d(x, w, b, 2, 1)));
    EXPECT_TRUE(F::max_pool2d(x, F::MaxPool2dFuncOptions(2)).equal(F::max_pool2d(x, 2)));
    EXPECT_TRUE(F::avg_pool2d(x, F::AvgPool2dFuncOptions({2, 3}).stride(1)).equal(F::avg_pool2d(x, {2, 3}, 1)));
    const auto [pooled, indices] = F::max_pool2d_with_indices(x, 2);
    EXPECT_TRUE(pooled.equal(F::max_pool2d(x, 2)));
    EXPECT_EQ(indices.scalar_type(), kLong);
}

TEST(FunctionalOptions, LossReductionsAgree) {
    const Tensor x = randn({4, 5}), y = randn({4, 5});
    const Tensor none = F::mse_loss(x, y, kNone);
    EXPECT_EQ(none.sizes(), x.sizes());
    EXPECT_TRUE(F::mse_loss(x, y).allclose(none.mean()));
    EXPECT_TRUE(F::mse_loss(x, y, "sum").allclose(none.sum()));
    EXPECT_TRUE(F::mse_loss(x, y, F::MSELossFuncOptions().reduction(kSum)).allclose(none.sum()));
}

TEST(FunctionalDropout, ScalesKeptElementsAndDropsAboutP) {
    manual_seed(11);
    const Tensor x = ones({200, 100});
    const Tensor y = F::dropout(x, 0.3);
    const Tensor kept = ne(y, 0);
    const double frac = kept.to(kDouble).mean().item<double>();
    EXPECT_NEAR(frac, 0.7, 0.01);
    EXPECT_TRUE(y.masked_select(kept).allclose(full({kept.sum().item<int64_t>()}, 1.0 / 0.7)));
    // not training, p = 0: the input itself
    EXPECT_TRUE(F::dropout(x, 0.3, false).is_same(x));
    EXPECT_TRUE(F::dropout(x, F::DropoutFuncOptions(0.0)).is_same(x));
    // p = 1 zeroes everything
    EXPECT_EQ(F::dropout(x, 1.0).abs().sum().item<double>(), 0.0);
    // gradient: the same mask, scaled
    Tensor leaf = ones({50}, kDouble).requires_grad_(true);
    const Tensor out = F::dropout(leaf, 0.5);
    out.sum().backward();
    EXPECT_TRUE(leaf.grad().equal(out.detach()));
    EXPECT_EQ(out.grad_fn()->name(), "NativeDropoutBackward0");
    // reproducible with the seed
    manual_seed(3);
    const Tensor a = F::dropout(x, 0.5);
    manual_seed(3);
    EXPECT_TRUE(F::dropout(x, 0.5).equal(a));
}

TEST(FunctionalDropout, Inplace) {
    manual_seed(12);
    Tensor x = ones({10, 10});
    const Tensor r = F::dropout(x, F::DropoutFuncOptions(0.5).inplace(true));
    EXPECT_TRUE(r.is_same(x));
    EXPECT_GT(eq(x, 0).sum().item<int64_t>(), 0);
    EXPECT_TRUE(logical_or(eq(x, 0), eq(x, 2)).all().item<bool>());
}

TEST(FunctionalActivations, InplaceModifiesInput) {
    Tensor x = tensor({-2.0, -0.5, 0.5, 3.0});
    F::leaky_relu(x, 0.1, true);
    EXPECT_TRUE(x.allclose(tensor({-0.2, -0.05, 0.5, 3.0})));
    Tensor y = tensor({-2.0, 0.5, 7.0});
    EXPECT_TRUE(F::relu6(y, true).is_same(y));
    EXPECT_TRUE(y.equal(tensor({0.0, 0.5, 6.0})));
    Tensor z = tensor({-1.0, 1.0});
    F::relu(z, true);
    EXPECT_TRUE(z.equal(tensor({0.0, 1.0})));
    // through a non-leaf: history recorded, gradient correct
    Tensor leaf = tensor({-1.0, 2.0}).requires_grad_(true);
    Tensor h = leaf * 2;
    F::elu(h, 1.0, true);
    h.sum().backward();
    EXPECT_TRUE(leaf.grad().allclose(tensor({2 * std::exp(-2.0), 2.0})));
}

TEST(FunctionalActivations, NodeNamesAndIntegers) {
    const Tensor x = randn({3}).requires_grad_(true);
    EXPECT_EQ(F::leaky_relu(x).grad_fn()->name(), "LeakyReluBackward0");
    EXPECT_EQ(F::hardtanh(x).grad_fn()->name(), "HardtanhBackward0");
    EXPECT_EQ(F::elu(x).grad_fn()->name(), "EluBackward0");
    EXPECT_EQ(F::softplus(x).grad_fn()->name(), "SoftplusBackward0");
    EXPECT_EQ(F::logsigmoid(x).grad_fn()->name(), "LogSigmoidBackward0");
    // integer inputs: hardtanh keeps the dtype (the bounds truncated), the others are float kernels
    EXPECT_EQ(F::relu6(tensor({-3, 4, 9})).scalar_type(), kLong);
    EXPECT_TRUE(F::relu6(tensor({-3, 4, 9})).equal(tensor({0, 4, 6})));
    EXPECT_TRUE(F::hardtanh(tensor({-3, 4, 9}), -1.5, 2.5).equal(tensor({-1, 2, 2})));
    EXPECT_EQ(ember_test::error_of([] { F::leaky_relu(tensor({-3, 4})); }), "\"leaky_relu_cpu\" not implemented for 'Long'");
    EXPECT_EQ(ember_test::error_of([] { F::softplus(tensor({-3, 4})); }), "\"softplus_cpu\" not implemented for 'Long'");
}

TEST(FunctionalNorms, RunningStatsDtypesAndHalf) {
    const Tensor x = randn({8, 3, 4}, kDouble);
    Tensor rm = zeros({3}, kDouble), rv = ones({3}, kDouble);
    F::batch_norm(x, rm, rv, {}, {}, true, 0.5);
    const Tensor batch_mean = x.mean({0, 2});
    const Tensor batch_var = x.var({0, 2}, /*unbiased=*/true);
    EXPECT_TRUE(rm.allclose(batch_mean * 0.5, 1e-12, 1e-12));
    EXPECT_TRUE(rv.allclose(batch_var * 0.5 + 0.5, 1e-12, 1e-12));
    EXPECT_EQ(rm._version(), 1u);
    // eval uses the running statistics
    const Tensor y = F::batch_norm(x, rm, rv);
    const Tensor expected = (x - rm.view({1, 3, 1})) / (rv.view({1, 3, 1}) + 1e-5).sqrt();
    EXPECT_TRUE(y.allclose(expected, 1e-12, 1e-12));
    EXPECT_EQ(y.grad_fn(), nullptr);

    // float16 computes in float32 and rounds once
    const Tensor h = randn({4, 6}).to(kHalf);
    const Tensor ln = F::layer_norm(h, {6});
    EXPECT_EQ(ln.scalar_type(), kHalf);
    EXPECT_TRUE(ln.to(kFloat).allclose(F::layer_norm(h.to(kFloat), {6}), 1e-3, 1e-3));
    Tensor hm = zeros({6}, kHalf), hv = ones({6}, kHalf);
    const Tensor bn = F::batch_norm(h, hm, hv, {}, {}, true);
    EXPECT_EQ(bn.scalar_type(), kHalf);
    EXPECT_GT(hm.abs().sum().item<double>(), 0.0);
}

TEST(FunctionalNorms, NodeNames) {
    const Tensor x = randn({4, 3}).requires_grad_(true);
    EXPECT_EQ(F::batch_norm(x, {}, {}, {}, {}, true).grad_fn()->name(), "NativeBatchNormBackward0");
    EXPECT_EQ(F::layer_norm(x, {3}).grad_fn()->name(), "NativeLayerNormBackward0");
    EXPECT_EQ(F::cross_entropy(x, tensor({0, 1, 2, 0})).grad_fn()->name(), "NllLossBackward0");
    EXPECT_EQ(F::embedding(tensor({1}), x).grad_fn()->name(), "EmbeddingBackward0");
}

TEST(FunctionalLosses, FusedCrossEntropyMatchesComposition) {
    const Tensor x = randn({7, 5}, kDouble), t = tensor({0, 4, 2, 2, 1, 3, 0});
    const Tensor w = rand({5}, kDouble) + 0.5;
    for (nn::Reduction r : {kNone, kMean, kSum}) {
        const auto opts = F::CrossEntropyFuncOptions().weight(w).ignore_index(2).reduction(r);
        const Tensor fused = F::cross_entropy(x, t, opts);
        const Tensor composed = F::nll_loss(F::log_softmax(x, 1), t, F::NLLLossFuncOptions(r).weight(w).ignore_index(2));
        EXPECT_TRUE(fused.allclose(composed, 1e-12, 1e-12));
    }
    // every target ignored: mean is 0 / 0
    EXPECT_TRUE(std::isnan(F::cross_entropy(x, full({7}, 2, kLong), F::CrossEntropyFuncOptions().ignore_index(2)).item<double>()));
    // float16 logits go through the composition
    EXPECT_EQ(F::cross_entropy(x.to(kHalf), t).scalar_type(), kHalf);
}

TEST(FunctionalLosses, BinaryCrossEntropyClampsLogs) {
    const Tensor p = tensor({0.0, 1.0, 0.5}), t = tensor({1.0, 0.0, 1.0});
    const Tensor l = F::binary_cross_entropy(p, t, kNone);
    EXPECT_TRUE(l.allclose(tensor({100.0, 100.0, std::log(2.0)})));
    Tensor leaf = p.clone().requires_grad_(true);
    F::binary_cross_entropy(leaf, t).backward();
    EXPECT_TRUE(std::isfinite(leaf.grad().abs().sum().item<double>()));
}

TEST(FunctionalAttention, MasksAndDropout) {
    const Tensor q = randn({2, 4, 8}), k = randn({2, 6, 8}), v = randn({2, 6, 3});
    // a bool mask of all true is no mask; an equivalent float mask gives the same result
    const Tensor all = ones({4, 6}, kBool);
    EXPECT_TRUE(F::scaled_dot_product_attention(q, k, v, all).allclose(F::scaled_dot_product_attention(q, k, v)));
    const Tensor keep = gt(rand({4, 6}), 0.3).logical_or(eye(4, 6, kBool));
    const Tensor additive = zeros({4, 6}).masked_fill(keep.logical_not(), -INFINITY);
    EXPECT_TRUE(F::scaled_dot_product_attention(q, k, v, keep).allclose(F::scaled_dot_product_attention(q, k, v, additive)));
    // causal equals an explicit lower-triangular mask
    const Tensor kk = randn({2, 4, 8}), vv = randn({2, 4, 3});
    EXPECT_TRUE(F::scaled_dot_product_attention(q, kk, vv, {}, 0.0, true)
                    .allclose(F::scaled_dot_product_attention(q, kk, vv, ones({4, 4}, kBool).tril())));
    // dropout_p = 1 drops every weight
    EXPECT_EQ(F::scaled_dot_product_attention(q, k, v, {}, 1.0).abs().sum().item<double>(), 0.0);
}

}  // namespace
