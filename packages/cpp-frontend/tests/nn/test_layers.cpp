// The layers: PyTorch's initialisation schemes, shapes, behaviour beyond the golden cases,
// and PyTorch's error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "nn_test_util.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
using nn_test::error_of;

double max_abs(const Tensor& t) { return t.abs().max().item<double>(); }

TEST(Init, LinearAndConvUseKaimingUniformAndFanInBias) {
    manual_seed(1);
    nn::Linear fc(400, 300);
    const double bound = 1.0 / std::sqrt(400.0);  // kaiming_uniform_(a=sqrt(5)): sqrt(6 / (6 * fan_in))
    EXPECT_LE(max_abs(fc->weight), bound);
    EXPECT_GT(max_abs(fc->weight), 0.95 * bound);
    EXPECT_NEAR(fc->weight.std().item<double>(), bound / std::sqrt(3.0), 0.01 * bound);
    EXPECT_LE(max_abs(fc->bias), bound);
    EXPECT_GT(max_abs(fc->bias), 0.9 * bound);

    nn::Conv2d conv(nn::Conv2dOptions(8, 16, {3, 5}).groups(2));
    EXPECT_EQ(conv->weight.sizes(), IntArrayRef({16, 4, 3, 5}));
    const double conv_bound = 1.0 / std::sqrt(4.0 * 3 * 5);
    EXPECT_LE(max_abs(conv->weight), conv_bound);
    EXPECT_GT(max_abs(conv->weight), 0.9 * conv_bound);
    EXPECT_LE(max_abs(conv->bias), conv_bound);
    EXPECT_EQ(nn::Conv1d(2, 3, 4)->weight.sizes(), IntArrayRef({3, 2, 4}));
}

TEST(Init, NormalizationEmbeddingRecurrentAttention) {
    manual_seed(2);
    nn::BatchNorm2d bn(5);
    EXPECT_TRUE(bn->weight.equal(ones({5})));
    EXPECT_TRUE(bn->bias.equal(zeros({5})));
    EXPECT_TRUE(bn->running_mean.equal(zeros({5})));
    EXPECT_TRUE(bn->running_var.equal(ones({5})));
    EXPECT_EQ(bn->num_batches_tracked.dim(), 0);
    EXPECT_EQ(bn->num_batches_tracked.scalar_type(), kLong);
    nn::BatchNorm2d plain(nn::BatchNorm2dOptions(5).affine(false).track_running_stats(false));
    EXPECT_TRUE(plain->named_parameters().is_empty());
    EXPECT_TRUE(plain->named_buffers().is_empty());

    nn::LayerNorm ln(nn::LayerNormOptions({2, 3}));
    EXPECT_TRUE(ln->weight.equal(ones({2, 3})));
    EXPECT_TRUE(ln->bias.equal(zeros({2, 3})));

    nn::Embedding emb(nn::EmbeddingOptions(1000, 20).padding_idx(-1));
    EXPECT_EQ(*emb->options.padding_idx(), 999);
    EXPECT_NEAR(emb->weight.std().item<double>(), 1.0, 0.03);
    EXPECT_EQ(max_abs(emb->weight[999]), 0.0);

    nn::LSTM lstm(nn::LSTMOptions(3, 16).num_layers(2));
    for (const Tensor& p : lstm->parameters()) EXPECT_LE(max_abs(p), 0.25);
    EXPECT_EQ(lstm->all_weights().size(), 2u);

    nn::MultiheadAttention mha(16, 4);
    const double xavier = std::sqrt(6.0 / (16 + 48));
    EXPECT_LE(max_abs(mha->in_proj_weight), xavier);
    EXPECT_GT(max_abs(mha->in_proj_weight), 0.9 * xavier);
    EXPECT_EQ(max_abs(mha->in_proj_bias), 0.0);
    EXPECT_EQ(max_abs(mha->out_proj->bias), 0.0);
    EXPECT_EQ(mha->out_proj->name(), "NonDynamicallyQuantizableLinear");
    EXPECT_EQ(mha->named_parameters().keys(),
              std::vector<std::string>({"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}));
}

TEST(Layers, ShapesAndUnbatchedInputs) {
    nn::Linear fc(4, 2);
    EXPECT_EQ(fc(randn({3, 5, 4})).sizes(), IntArrayRef({3, 5, 2}));
    EXPECT_EQ(nn::Conv2d(3, 8, 3)(randn({3, 10, 10})).sizes(), IntArrayRef({8, 8, 8}));
    EXPECT_EQ(nn::Flatten(nn::FlattenOptions().start_dim(0).end_dim(1))(randn({2, 3, 4})).sizes(),
              IntArrayRef({6, 4}));
    EXPECT_EQ(nn::AdaptiveAvgPool2d(1)(randn({2, 3, 5, 5})).sizes(), IntArrayRef({2, 3, 1, 1}));
    auto [pooled, indices] = nn::MaxPool2d(2)->forward_with_indices(randn({1, 1, 4, 4}));
    EXPECT_EQ(indices.sizes(), IntArrayRef({1, 1, 2, 2}));

    nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true));
    const Tensor x = randn({5, 3});  // unbatched (L, input_size)
    auto [out, state] = lstm(x);
    EXPECT_EQ(out.sizes(), IntArrayRef({5, 8}));
    EXPECT_EQ(std::get<0>(state).sizes(), IntArrayRef({4, 4}));
    auto [batched, batched_state] = lstm(x.unsqueeze(1));
    EXPECT_TRUE(batched.squeeze(1).allclose(out, 1e-6, 1e-6));

    nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(8, 2).batch_first(true));
    const Tensor q = randn({3, 8});  // unbatched (L, E)
    auto [attn, weights] = mha(q, q, q);
    EXPECT_EQ(attn.sizes(), IntArrayRef({3, 8}));
    EXPECT_EQ(weights.sizes(), IntArrayRef({3, 3}));
    EXPECT_TRUE(weights.sum(-1).allclose(ones({3})));
    auto [no_weights_out, no_weights] = mha(q, q, q, Tensor(), /*need_weights=*/false);
    EXPECT_FALSE(no_weights.defined());
    EXPECT_TRUE(no_weights_out.allclose(attn, 1e-5, 1e-6));

    // a causal mask as bool (true = masked) or float (-inf) gives the same result
    const Tensor causal = ones({3, 3}, kBool).triu(1);
    const Tensor float_causal = zeros({3, 3}).masked_fill(causal, -INFINITY);
    auto [bool_masked, w1] = mha(q, q, q, Tensor(), true, causal);
    auto [float_masked, w2] = mha(q, q, q, Tensor(), true, float_causal);
    EXPECT_TRUE(bool_masked.allclose(float_masked));
    EXPECT_EQ(w1[0][1].item<double>(), 0.0);
    auto [hinted, w3] = mha(q, q, q, Tensor(), /*need_weights=*/false, causal, true, /*is_causal=*/true);
    EXPECT_TRUE(hinted.allclose(bool_masked, 1e-5, 1e-6));

    nn::TransformerEncoderLayer layer(nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0).activation(
        [](const Tensor& t) { return t.tanh(); }));
    EXPECT_EQ(layer(randn({4, 2, 8})).sizes(), IntArrayRef({4, 2, 8}));
    EXPECT_EQ(layer->named_children().keys(),
              std::vector<std::string>(
                  {"self_attn", "linear1", "dropout", "linear2", "norm1", "norm2", "dropout1", "dropout2"}));
}

TEST(Layers, EmbeddingPaddingAndPretrained) {
    nn::Embedding emb(nn::EmbeddingOptions(5, 2).padding_idx(0));
    emb(tensor({0, 1, 0, 3})).sum().backward();
    EXPECT_EQ(max_abs(emb->weight.grad()[0]), 0.0);  // the padding row gets no gradient
    EXPECT_EQ(emb->weight.grad()[1].sum().item<double>(), 2.0);

    const Tensor table = arange(6, kFloat).reshape({3, 2});
    auto frozen = nn::Embedding::from_pretrained(table);
    EXPECT_FALSE(frozen->weight.requires_grad());
    EXPECT_TRUE(frozen(tensor({2})).equal(table.narrow(0, 2, 1)));
    EXPECT_EQ(frozen->repr(), "Embedding(3, 2)");
    auto trainable = nn::Embedding::from_pretrained(table, nn::EmbeddingFromPretrainedOptions().freeze(false));
    EXPECT_TRUE(trainable->weight.requires_grad());
    EXPECT_FALSE(table.requires_grad());
    EXPECT_EQ(error_of([&] { nn::Embedding::from_pretrained(ones({3})); }),
              "Embeddings parameter is expected to be 2-dimensional");
}

TEST(Layers, BatchNormCumulativeAverageAndNoRunningStats) {
    nn::BatchNorm1d bn(nn::BatchNorm1dOptions(2).momentum(std::nullopt));
    const Tensor a = randn({6, 2}), b = randn({6, 2});
    bn(a);
    bn(b);
    // momentum None: the running mean is the plain average of the batch means
    EXPECT_TRUE(bn->running_mean.allclose((a.mean({0}) + b.mean({0})) / 2, 1e-5, 1e-6));
    EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 2);

    nn::BatchNorm1d stateless(nn::BatchNorm1dOptions(2).track_running_stats(false));
    stateless->eval();  // without running statistics, eval mode still uses the batch's
    const Tensor y = stateless(a);
    EXPECT_NEAR(y.mean().item<double>(), 0.0, 1e-5);
}

TEST(Layers, ErrorsArePyTorchs) {
    EXPECT_EQ(error_of([] { nn::BatchNorm2d(3)(randn({2, 3, 5})); }), "expected 4D input (got 3D input)");
    EXPECT_EQ(error_of([] { nn::BatchNorm1d(3)(randn({2, 3, 5, 5})); }), "expected 2D or 3D input (got 4D input)");
    EXPECT_EQ(error_of([] { nn::Dropout(1.5); }), "dropout probability has to be between 0 and 1, but got 1.5");
    EXPECT_EQ(error_of([] { nn::Conv2d(nn::Conv2dOptions(3, 4, 3).groups(2)); }), "in_channels must be divisible by groups");
    EXPECT_EQ(error_of([] { nn::Conv2d(nn::Conv2dOptions(4, 3, 3).groups(2)); }),
              "out_channels must be divisible by groups");
    EXPECT_EQ(error_of([] { nn::Conv2d(nn::Conv2dOptions(4, 4, 3).groups(0)); }), "groups must be a positive integer");
    EXPECT_EQ(error_of([] { nn::LSTM(3, 4)(randn({5, 2, 2})); }),
              "input.size(-1) must be equal to input_size. Expected 3, got 2");
    EXPECT_EQ(error_of([] { nn::LSTM(3, 4)(randn({5, 2, 3}), std::make_tuple(randn({1, 2, 5}), randn({1, 2, 4}))); }),
              "Expected hidden[0] size (1, 2, 4), got [1, 2, 5]");
    EXPECT_EQ(error_of([] { nn::LSTM(3, 4)(randn({5, 2, 3}), std::make_tuple(randn({1, 2, 4}), randn({2, 4}))); }),
              "For batched 3-D input, hx and cx should also be 3-D but got (3-D, 2-D) tensors");
    EXPECT_EQ(error_of([] { nn::LSTM(3, 4)(randn({5, 2, 3, 1})); }), "LSTM: Expected input to be 2D or 3D, got 4D instead");
    EXPECT_EQ(error_of([] { nn::LSTM(3, 4)(randn({5, 2, 3}, kFloat64)); }),
              "RNN input dtype (ember.float64) does not match weight dtype (ember.float32). Convert input: "
              "input.to(ember.float32), or convert model: model.to(ember.float64)");
    EXPECT_EQ(error_of([] { nn::LSTM(nn::LSTMOptions(3, 4).proj_size(4)); }), "proj_size has to be smaller than hidden_size");
    EXPECT_EQ(error_of([] { nn::MultiheadAttention(8, 3); }), "embed_dim must be divisible by num_heads");
    EXPECT_EQ(error_of([] { nn::Embedding(nn::EmbeddingOptions(10, 3).padding_idx(10)); }),
              "Padding_idx must be within num_embeddings");
    EXPECT_EQ(error_of([] { nn::TransformerEncoderLayerOptions(8, 2).activation("tanh"); }),
              "activation should be relu/gelu, not tanh");
    nn::MultiheadAttention mha(8, 2);
    const Tensor x = randn({4, 2, 8});
    EXPECT_EQ(error_of([&] { mha(x, x, randn({5, 2, 8})); }),
              "key shape ember.Size([4, 2, 8]) does not match value shape ember.Size([5, 2, 8])");
    EXPECT_EQ(error_of([&] { mha(x, x, x, Tensor(), true, zeros({2, 3})); }),
              "The shape of the 2D attn_mask is ember.Size([2, 3]), but should be (4, 4).");
    EXPECT_EQ(error_of([&] { mha(x, x, x, Tensor(), true, ones({4, 4}, kLong)); }),
              "only bool and floating types of attn_mask are supported");
    EXPECT_EQ(error_of([&] { mha(x, x, x, Tensor(), false, Tensor(), true, true); }),
              "Need attn_mask if specifying the is_causal hint. You may use the Transformer module method "
              "`generate_square_subsequent_mask` to create this mask.");
    EXPECT_EQ(error_of([&] { mha(randn({4, 2, 8, 1}), x, x); }),
              "query should be unbatched 2D or batched 3D tensor but received 4-D query tensor");
    EXPECT_EQ(error_of([] { nn::Sequential(nn::Linear(2, 2))->ptr(3); }), "index 3 is out of range");
    // the functional layer's own messages come through
    EXPECT_EQ(error_of([] { nn::Linear(4, 3)(randn({2, 5})); }), "mat1 and mat2 shapes cannot be multiplied (2x5 and 4x3)");
}

}  // namespace
