// Modules against Python Ember (golden_nn.py): the same module built in C++, its state
// copied in by name, must give Python's outputs, gradients, running statistics, state_dict
// keys (in order) and repr (the layers, the convolutions' padding modes, the transposed
// convolutions and the padding modules).
#include <gtest/gtest.h>

#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "nn_test_util.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
using nn_test::close;
using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;

struct Built {
    std::shared_ptr<nn::Module> module;
    std::function<Outputs(const Inputs&)> forward;
};

// A module called with its first input.
template <typename Holder>
Built unary(Holder m) {
    return {m.ptr(), [m](const Inputs& x) mutable { return Outputs{m(x[0])}; }};
}

Built lstm(nn::LSTM m) {
    return {m.ptr(), [m](const Inputs& x) mutable {
                auto [out, state] = x.size() == 1 ? m(x[0]) : m(x[0], std::make_tuple(x[1], x[2]));
                return Outputs{out, std::get<0>(state), std::get<1>(state)};
            }};
}

Built attention(nn::MultiheadAttention m, std::function<std::tuple<Tensor, Tensor>(nn::MultiheadAttention&, const Inputs&)> fn) {
    return {m.ptr(), [m, fn](const Inputs& x) mutable {
                auto [out, weights] = fn(m, x);
                return Outputs{out, weights};
            }};
}

const std::map<std::string, std::function<Built()>>& cases() {
    using namespace ember::nn;
    static const std::map<std::string, std::function<Built()>> table = {
        {"linear", [] { return unary(Linear(4, 3)); }},
        {"linear_nobias_f64", [] { return unary(Linear(LinearOptions(4, 3).bias(false))); }},
        {"conv1d", [] { return unary(Conv1d(Conv1dOptions(2, 4, 3).stride(2).padding(1))); }},
        {"conv2d", [] { return unary(Conv2d(Conv2dOptions(3, 4, 3).padding(1))); }},
        {"conv2d_groups_f64",
         [] {
             return unary(Conv2d(
                 Conv2dOptions(4, 6, {3, 2}).stride({2, 1}).padding({1, 0}).dilation({1, 2}).groups(2).bias(false)));
         }},
        {"conv2d_reflect",
         [] { return unary(Conv2d(Conv2dOptions(2, 3, 3).padding({1, 2}).padding_mode(kReflect))); }},
        {"conv1d_circular_same",
         [] { return unary(Conv1d(Conv1dOptions(2, 3, 4).padding(kSame).dilation(2).padding_mode(kCircular))); }},
        {"conv3d_replicate_f64",
         [] {
             return unary(
                 Conv3d(Conv3dOptions(2, 2, {2, 3, 2}).stride({1, 2, 1}).padding(1).padding_mode(kReplicate)));
         }},
        {"conv_transpose1d",
         [] { return unary(ConvTranspose1d(ConvTranspose1dOptions(3, 4, 3).stride(2).padding(1).output_padding(1))); }},
        {"conv_transpose2d_groups_f64",
         [] {
             return unary(ConvTranspose2d(ConvTranspose2dOptions(4, 6, {3, 2})
                                              .stride({2, 1})
                                              .padding({1, 0})
                                              .groups(2)
                                              .bias(false)
                                              .dilation({1, 2})));
         }},
        {"conv_transpose2d_output_size",
         [] {
             ConvTranspose2d m(ConvTranspose2dOptions(3, 2, 3).stride(2).padding(1));
             return Built{m.ptr(), [m](const Inputs& x) mutable {
                              return Outputs{m(x[0], std::vector<int64_t>{2, 2, 8, 10})};
                          }};
         }},
        {"conv_transpose3d_unbatched", [] { return unary(ConvTranspose3d(ConvTranspose3dOptions(2, 3, 2).stride(2))); }},
        {"reflection_pad1d", [] { return unary(ReflectionPad1d(ReflectionPad1dOptions({3, 1}))); }},
        {"reflection_pad2d", [] { return unary(ReflectionPad2d(ReflectionPad2dOptions({1, 1, 2, 0}))); }},
        {"reflection_pad3d", [] { return unary(ReflectionPad3d(1)); }},
        {"replication_pad1d", [] { return unary(ReplicationPad1d(2)); }},
        {"replication_pad2d", [] { return unary(ReplicationPad2d(ReplicationPad2dOptions({0, 3, 1, 2}))); }},
        {"replication_pad3d", [] { return unary(ReplicationPad3d(ReplicationPad3dOptions({1, 2, 0, 1, 2, 1}))); }},
        {"zero_pad1d", [] { return unary(ZeroPad1d(ZeroPad1dOptions({2, 0}))); }},
        {"zero_pad2d", [] { return unary(ZeroPad2d(2)); }},
        {"zero_pad3d", [] { return unary(ZeroPad3d(ZeroPad3dOptions({1, 0, 0, 2, 1, 1}))); }},
        {"constant_pad1d", [] { return unary(ConstantPad1d(ConstantPad1dOptions({3, 1}, 3.5))); }},
        {"constant_pad2d", [] { return unary(ConstantPad2d(ConstantPad2dOptions({-1, 2, 1, 0}, -2.0))); }},
        {"constant_pad3d", [] { return unary(ConstantPad3d(1, 0.25)); }},
        {"circular_pad1d", [] { return unary(CircularPad1d(CircularPad1dOptions({2, 3}))); }},
        {"circular_pad2d", [] { return unary(CircularPad2d(CircularPad2dOptions({1, 2, 2, 0}))); }},
        {"circular_pad3d", [] { return unary(CircularPad3d(CircularPad3dOptions({1, 1, 0, 2, 1, 0}))); }},
        {"batchnorm2d_train", [] { return unary(BatchNorm2d(3)); }},
        {"batchnorm2d_eval", [] { return unary(BatchNorm2d(3)); }},
        {"batchnorm1d_train_f64", [] { return unary(BatchNorm1d(BatchNorm1dOptions(4).momentum(std::nullopt))); }},
        {"batchnorm1d_noaffine_3d",
         [] { return unary(BatchNorm1d(BatchNorm1dOptions(3).affine(false).eps(1e-3).momentum(0.3))); }},
        {"layernorm", [] { return unary(LayerNorm(LayerNormOptions({3, 4}))); }},
        {"layernorm_nobias_f64", [] { return unary(LayerNorm(LayerNormOptions({6}).eps(1e-6).bias(false))); }},
        {"embedding", [] { return unary(Embedding(EmbeddingOptions(10, 3).padding_idx(1))); }},
        {"dropout_eval", [] { return unary(Dropout(0.3)); }},
        {"relu", [] { return unary(ReLU()); }},
        {"gelu", [] { return unary(GELU()); }},
        {"gelu_tanh", [] { return unary(GELU(GELUOptions().approximate("tanh"))); }},
        {"tanh", [] { return unary(Tanh()); }},
        {"sigmoid", [] { return unary(Sigmoid()); }},
        {"silu", [] { return unary(SiLU()); }},
        {"leaky_relu", [] { return unary(LeakyReLU(LeakyReLUOptions().negative_slope(0.2))); }},
        {"softmax", [] { return unary(Softmax(1)); }},
        {"log_softmax", [] { return unary(LogSoftmax(0)); }},
        {"maxpool2d", [] { return unary(MaxPool2d(MaxPool2dOptions(3).stride(2).padding(1))); }},
        {"avgpool2d", [] { return unary(AvgPool2d(2)); }},
        {"avgpool2d_ceil",
         [] {
             return unary(AvgPool2d(AvgPool2dOptions(3).stride(2).padding(1).ceil_mode(true).count_include_pad(false)));
         }},
        {"adaptive_avgpool2d", [] { return unary(AdaptiveAvgPool2d(AdaptiveAvgPool2dOptions({2, 3}))); }},
        {"adaptive_avgpool2d_none", [] { return unary(AdaptiveAvgPool2d(AdaptiveAvgPool2dOptions({std::nullopt, 2}))); }},
        {"flatten", [] { return unary(Flatten()); }},
        {"sequential_cnn",
         [] {
             return unary(Sequential(Conv2d(Conv2dOptions(1, 4, 3).padding(1)), BatchNorm2d(4), ReLU(), MaxPool2d(2),
                                     Flatten(), Dropout(0.0), Linear(4 * 3 * 3, 5)));
         }},
        {"lstm", [] { return lstm(LSTM(LSTMOptions(3, 5).num_layers(2).batch_first(true))); }},
        {"lstm_bidirectional_hx", [] { return lstm(LSTM(LSTMOptions(3, 4).bidirectional(true))); }},
        {"lstm_proj_nobias_f64", [] { return lstm(LSTM(LSTMOptions(3, 6).proj_size(2).bias(false))); }},
        {"mha_self",
         [] {
             return attention(MultiheadAttention(8, 2), [](MultiheadAttention& m, const Inputs& x) {
                 const Tensor mask = tensor({{false, false, false, true}, {false, false, false, false}});
                 return m(x[0], x[0], x[0], mask);
             });
         }},
        {"mha_cross_f64",
         [] {
             return attention(MultiheadAttention(MultiheadAttentionOptions(6, 3)
                                                     .kdim(5)
                                                     .vdim(4)
                                                     .add_bias_kv(true)
                                                     .add_zero_attn(true)
                                                     .batch_first(true)),
                              [](MultiheadAttention& m, const Inputs& x) {
                                  return m(x[0], x[1], x[2], Tensor(), /*need_weights=*/false, x[3]);
                              });
         }},
        {"mha_kv_heads",
         [] {
             return attention(MultiheadAttention(MultiheadAttentionOptions(4, 2).bias(false)),
                              [](MultiheadAttention& m, const Inputs& x) {
                                  return m(x[0], x[1], x[1], Tensor(), true, Tensor(), /*average=*/false);
                              });
         }},
        {"transformer_encoder",
         [] { return unary(TransformerEncoderLayer(TransformerEncoderLayerOptions(8, 2).dim_feedforward(16))); }},
        {"transformer_encoder_norm_first_gelu",
         [] {
             TransformerEncoderLayer layer(TransformerEncoderLayerOptions(8, 4)
                                               .dim_feedforward(12)
                                               .activation("gelu")
                                               .batch_first(true)
                                               .norm_first(true));
             return Built{layer.ptr(), [layer](const Inputs& x) mutable {
                              const Tensor mask = tensor({{false, false, true, true, true}, {false, false, false, false, true}});
                              return Outputs{layer(x[0], Tensor(), mask)};
                          }};
         }},
    };
    return table;
}

std::vector<std::string> split(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) out.push_back(item);
    return out;
}

class GoldenModule : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenModule, MatchesPythonEmber) {
    if (!EMBER_GOLDEN_AVAILABLE) GTEST_SKIP() << "no Python to write the golden files";
    const std::string name = GetParam();
    const nn_test::Golden g = nn_test::read_golden(name);
    Built built = cases().at(name)();
    nn::Module& m = *built.module;
    if (name.size() > 4 && name.compare(name.size() - 4, 4, "_f64") == 0) m.to(kFloat64);
    m.train(g.metadata.at("train") == "1");

    // names and order (what loading a Python state dict by name relies on), and repr
    EXPECT_EQ(m.state_dict().keys(), split(g.metadata.at("state_dict")));
    EXPECT_EQ(m.named_parameters().keys(), split(g.metadata.at("parameters")));
    EXPECT_EQ(m.named_buffers().keys(), split(g.metadata.at("buffers")));
    EXPECT_EQ(m.repr(), g.metadata.at("repr"));

    {
        NoGradGuard no_grad;
        for (auto& item : m.state_dict()) {
            const Tensor& src = g.at("state." + item.key());
            ASSERT_EQ(item.value().sizes(), src.sizes()) << item.key();
            ASSERT_EQ(item.value().scalar_type(), src.scalar_type()) << item.key();
            item.value().copy_(src);
        }
    }
    Inputs inputs;
    for (size_t i = 0; g.has("input." + std::to_string(i)); ++i) {
        Tensor x = g.at("input." + std::to_string(i)).clone();
        if (x.is_floating_point()) x.requires_grad_(true);
        inputs.push_back(x);
    }
    const Outputs outs = built.forward(inputs);
    Tensor loss;
    for (size_t j = 0; j < outs.size(); ++j) {
        const std::string key = "output." + std::to_string(j);
        if (!g.has(key)) {
            EXPECT_FALSE(outs[j].defined()) << key;
            continue;
        }
        EXPECT_TRUE(close(outs[j], g.at(key))) << key;
        const Tensor term = (outs[j] * g.at("weight." + std::to_string(j))).sum();
        loss = loss.defined() ? loss + term : term;
    }
    loss.backward();
    // the gradients add up over many elements: a looser float32 bound
    for (const auto& item : m.named_parameters()) {
        const std::string key = "grad." + item.key();
        if (g.has(key)) {
            EXPECT_TRUE(close(item.value().grad(), g.at(key), 10)) << key;
        } else {
            EXPECT_FALSE(item.value().grad().defined()) << key;
        }
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
        const std::string key = "grad.input." + std::to_string(i);
        if (g.has(key)) {
            EXPECT_TRUE(close(inputs[i].grad(), g.at(key), 10)) << key;
        }
    }
    for (const auto& item : m.state_dict()) {
        EXPECT_TRUE(close(item.value(), g.at("after." + item.key()))) << "after." << item.key();
    }
}

std::vector<std::string> case_names() {
    std::vector<std::string> names;
    for (const auto& item : cases()) names.push_back(item.first);
    return names;
}

INSTANTIATE_TEST_SUITE_P(NN, GoldenModule, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
