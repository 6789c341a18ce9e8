// Float64 gradient checks through the modules: d/d(input) with testing::gradcheck, and
// d/d(every parameter) with central differences on the module's own parameters.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "nn_test_util.h"

namespace {

using namespace ember;
namespace nn = ember::nn;

// Checks the gradients of forward(input) w.r.t. the input and every parameter of module.
template <typename Holder, typename Forward>
void check_module(Holder module, const Tensor& input, Forward forward) {
    manual_seed(5);
    module->to(kFloat64);
    EXPECT_TRUE(ember::testing::gradcheck([&](const std::vector<Tensor>& in) { return forward(module, in[0]); },
                                          {input}))
        << module->name() << ": input";
    EXPECT_TRUE(nn_test::check_parameter_grads(*module, [&] { return forward(module, input); }))
        << module->name() << ": parameters";
}

auto call = [](auto& m, const Tensor& x) { return m(x); };

TEST(Gradcheck, Linear) { check_module(nn::Linear(4, 3), randn({2, 4}, kFloat64), call); }

TEST(Gradcheck, Conv1dAndConv2d) {
    check_module(nn::Conv1d(nn::Conv1dOptions(2, 3, 3).stride(2).padding(1)), randn({2, 2, 7}, kFloat64), call);
    check_module(nn::Conv2d(nn::Conv2dOptions(4, 2, {3, 2}).padding({1, 0}).groups(2)), randn({2, 4, 5, 4}, kFloat64),
                 call);
}

TEST(Gradcheck, BatchNorm2dTraining) {
    nn::BatchNorm2d bn(3);
    {
        NoGradGuard no_grad;
        bn->weight.uniform_(0.5, 1.5);
        bn->bias.normal_();
    }
    check_module(bn, randn({3, 3, 2, 2}, kFloat64), call);
}

TEST(Gradcheck, BatchNorm1dEval) {
    nn::BatchNorm1d bn(3);
    bn->eval();
    check_module(bn, randn({4, 3}, kFloat64), call);
}

TEST(Gradcheck, LayerNorm) {
    nn::LayerNorm ln(nn::LayerNormOptions({2, 3}));
    {
        NoGradGuard no_grad;
        ln->weight.normal_();
        ln->bias.normal_();
    }
    check_module(ln, randn({2, 2, 3}, kFloat64), call);
}

TEST(Gradcheck, Embedding) {
    nn::Embedding emb(nn::EmbeddingOptions(6, 3).padding_idx(2));
    emb->to(kFloat64);
    // (the padding row gets no gradient by design, so the indices avoid it: see Layers)
    const Tensor idx = tensor({{0, 3, 5}, {4, 1, 1}});
    EXPECT_TRUE(nn_test::check_parameter_grads(*emb, [&] { return emb(idx); }));
}

TEST(Gradcheck, LSTM) {
    auto output_and_state = [](nn::LSTM& m, const Tensor& x) {
        auto [out, state] = m(x);
        return cat({out.reshape({-1}), std::get<0>(state).reshape({-1}), std::get<1>(state).reshape({-1})});
    };
    check_module(nn::LSTM(nn::LSTMOptions(2, 3).num_layers(2).batch_first(true)), randn({2, 3, 2}, kFloat64),
                 output_and_state);
    check_module(nn::LSTM(nn::LSTMOptions(2, 3).bidirectional(true).proj_size(2)), randn({3, 1, 2}, kFloat64),
                 output_and_state);
}

TEST(Gradcheck, MultiheadAttention) {
    nn::MultiheadAttention mha(4, 2);
    {
        NoGradGuard no_grad;
        mha->in_proj_bias.normal_();
        mha->out_proj->bias.normal_();
    }
    const Tensor mask = tensor({{false, false, true}, {false, false, false}});
    auto self_attention = [mask](nn::MultiheadAttention& m, const Tensor& x) {
        auto [out, weights] = m(x, x, x, mask);
        return cat({out.reshape({-1}), weights.reshape({-1})});
    };
    check_module(mha, randn({3, 2, 4}, kFloat64), self_attention);

    nn::MultiheadAttention cross(nn::MultiheadAttentionOptions(4, 2).kdim(3).vdim(2).add_bias_kv(true));
    const Tensor key = randn({2, 1, 3}, kFloat64), value = randn({2, 1, 2}, kFloat64);
    auto attend = [key, value](nn::MultiheadAttention& m, const Tensor& q) {
        return std::get<0>(m(q, key.to(q.scalar_type()), value.to(q.scalar_type()), Tensor(), false));
    };
    check_module(cross, randn({3, 1, 4}, kFloat64), attend);
}

TEST(Gradcheck, TransformerEncoderLayer) {
    nn::TransformerEncoderLayer layer(
        nn::TransformerEncoderLayerOptions(4, 2).dim_feedforward(6).dropout(0.0).norm_first(true).activation("gelu"));
    check_module(layer, randn({3, 1, 4}, kFloat64), call);
}

TEST(Gradcheck, SequentialCnn) {
    nn::Sequential net(nn::Conv2d(nn::Conv2dOptions(1, 2, 3).padding(1)), nn::BatchNorm2d(2), nn::ReLU(),
                       nn::MaxPool2d(2), nn::Flatten(), nn::Linear(8, 3));
    check_module(net, randn({2, 1, 4, 4}, kFloat64), call);
}

}  // namespace
