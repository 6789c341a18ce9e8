// ember::nn::functional against Python Ember's ember.nn.functional on the same inputs
// (golden_functional.py): outputs and the gradients of sum(output * proj).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "functional_test_util.h"

namespace {

using namespace ember;
namespace F = ember::nn::functional;
using ember_test::close;
using ember_test::golden;
using Inputs = std::map<std::string, Tensor>;

// Loads case.<name> for each name (requires_grad for those in grads), runs fn, compares the
// output with case.out and, for grads, the gradients with case.grad.<name>.
void check_case(const std::string& name, const std::vector<std::string>& inputs,
                const std::function<Tensor(Inputs&)>& fn, const std::vector<std::string>& grads = {},
                double rtol = 1e-5, double atol = 1e-6) {
    SCOPED_TRACE(name);
    Inputs in;
    for (const std::string& k : inputs) in[k] = golden(name + "." + k);
    for (const std::string& k : grads) in[k].requires_grad_(true);
    const Tensor out = fn(in);
    EXPECT_TRUE(close(out, golden(name + ".out"), rtol, atol)) << "output";
    if (grads.empty()) return;
    (out * golden(name + ".proj")).sum().backward();
    for (const std::string& k : grads) {
        EXPECT_TRUE(close(in[k].grad(), golden(name + ".grad." + k), rtol, atol)) << "gradient of " << k;
    }
}

TEST(FunctionalGolden, LinearConvPool) {
    EMBER_REQUIRE_GOLDEN();
    check_case("linear", {"x", "w", "b"}, [](Inputs& i) { return F::linear(i["x"], i["w"], i["b"]); });
    check_case("conv1d", {"x", "w", "b"}, [](Inputs& i) {
        return F::conv1d(i["x"], i["w"], F::Conv1dFuncOptions().bias(i["b"]).stride(2).padding(1).dilation(2));
    });
    check_case("conv2d", {"x", "w", "b"},
               [](Inputs& i) { return F::conv2d(i["x"], i["w"], i["b"], {2, 1}, 1, {1, 2}, 2); });
    check_case("max_pool2d", {"x"},
               [](Inputs& i) { return F::max_pool2d(i["x"], F::MaxPool2dFuncOptions(3).stride(2).padding(1).ceil_mode(true)); });
    check_case("max_pool2d_dil", {"x"}, [](Inputs& i) { return F::max_pool2d(i["x"], {2, 3}, {1, 2}, 0, 2); });
    check_case("avg_pool2d", {"x"}, [](Inputs& i) {
        return F::avg_pool2d(i["x"], F::AvgPool2dFuncOptions(3).stride(2).padding(1).ceil_mode(true).count_include_pad(false));
    });
    check_case("avg_pool2d_pad", {"x"}, [](Inputs& i) { return F::avg_pool2d(i["x"], {2, 3}, {}, 1); });
    check_case("adaptive_avg_pool2d", {"x"},
               [](Inputs& i) { return F::adaptive_avg_pool2d(i["x"], F::AdaptiveAvgPool2dFuncOptions({3, 2})); });
}

TEST(FunctionalGolden, Activations) {
    EMBER_REQUIRE_GOLDEN();
    const std::map<std::string, std::function<Tensor(const Tensor&)>> fns = {
        {"relu", [](const Tensor& x) { return F::relu(x); }},
        {"relu6", [](const Tensor& x) { return F::relu6(x * 2); }},
        {"hardtanh", [](const Tensor& x) { return F::hardtanh(x, -0.5, 0.7); }},
        {"leaky_relu", [](const Tensor& x) { return F::leaky_relu(x, F::LeakyReLUFuncOptions().negative_slope(0.2)); }},
        {"elu", [](const Tensor& x) { return F::elu(x, 1.3); }},
        {"gelu", [](const Tensor& x) { return F::gelu(x); }},
        {"gelu_tanh", [](const Tensor& x) { return F::gelu(x, F::GELUFuncOptions().approximate("tanh")); }},
        {"tanh", [](const Tensor& x) { return F::tanh(x); }},
        {"sigmoid", [](const Tensor& x) { return F::sigmoid(x); }},
        {"silu", [](const Tensor& x) { return F::silu(x); }},
        {"softplus", [](const Tensor& x) { return F::softplus(x, F::SoftplusFuncOptions().beta(2.0).threshold(3.0)); }},
        {"logsigmoid", [](const Tensor& x) { return F::logsigmoid(x); }},
        {"softmax", [](const Tensor& x) { return F::softmax(x, 1); }},
        {"log_softmax", [](const Tensor& x) { return F::log_softmax(x, F::LogSoftmaxFuncOptions(0)); }},
        {"normalize", [](const Tensor& x) { return F::normalize(x, F::NormalizeFuncOptions().p(1.0).dim(0)); }},
    };
    for (const auto& [name, fn] : fns) {
        check_case("act_" + name, {"x"}, [&fn = fn](Inputs& i) { return fn(i["x"]); });
    }
}

TEST(FunctionalGolden, EmbeddingAndNorms) {
    EMBER_REQUIRE_GOLDEN();
    check_case("embedding", {"idx", "w"}, [](Inputs& i) { return F::embedding(i["idx"], i["w"], 2); }, {"w"});

    Inputs bn;
    check_case(
        "batch_norm_train", {"x", "rm", "rv", "w", "b"},
        [&bn](Inputs& i) {
            bn = i;
            return F::batch_norm(i["x"], i["rm"], i["rv"],
                                 F::BatchNormFuncOptions().weight(i["w"]).bias(i["b"]).training(true).momentum(0.2).eps(1e-4));
        },
        {"x", "w", "b"});
    EXPECT_TRUE(close(bn["rm"], golden("batch_norm_train.rm_after")));
    EXPECT_TRUE(close(bn["rv"], golden("batch_norm_train.rv_after")));
    check_case(
        "batch_norm_eval", {"x", "rm", "rv", "w", "b"},
        [](Inputs& i) { return F::batch_norm(i["x"], i["rm"], i["rv"], i["w"], i["b"], false, 0.1, 1e-3); },
        {"x", "w", "b"});
    check_case("batch_norm_1d", {"x", "rm", "rv"}, [&bn](Inputs& i) {
        bn = i;
        return F::batch_norm(i["x"], i["rm"], i["rv"], {}, {}, true);
    });
    EXPECT_TRUE(close(bn["rm"], golden("batch_norm_1d.rm_after")));
    EXPECT_TRUE(close(bn["rv"], golden("batch_norm_1d.rv_after")));
    check_case(
        "layer_norm", {"x", "w", "b"},
        [](Inputs& i) { return F::layer_norm(i["x"], F::LayerNormFuncOptions({4, 5}).weight(i["w"]).bias(i["b"]).eps(1e-6)); },
        {"x", "w", "b"}, 1e-4, 1e-5);
    check_case("group_norm", {"x", "w", "b"}, [](Inputs& i) { return F::group_norm(i["x"], 3, i["w"], i["b"]); });
}

TEST(FunctionalGolden, RegressionLosses) {
    EMBER_REQUIRE_GOLDEN();
    for (const std::string red : {"none", "mean", "sum"}) {
        check_case("mse_" + red, {"x", "y"}, [&](Inputs& i) { return F::mse_loss(i["x"], i["y"], red); });
        check_case("l1_" + red, {"x", "y"},
                   [&](Inputs& i) { return F::l1_loss(i["x"], i["y"], F::L1LossFuncOptions().reduction(red)); });
        check_case("smooth_l1_" + red, {"x", "y"},
                   [&](Inputs& i) { return F::smooth_l1_loss(i["x"], i["y"], red, 0.5); });
        check_case("huber_" + red, {"x", "y"}, [&](Inputs& i) {
            return F::huber_loss(i["x"], i["y"], F::HuberLossFuncOptions(red).delta(0.7));
        });
    }
}

TEST(FunctionalGolden, ClassificationLosses) {
    EMBER_REQUIRE_GOLDEN();
    const std::map<std::string, nn::Reduction> reductions = {
        {"none", kNone}, {"mean", kMean}, {"sum", kSum}};
    for (const auto& [red, r] : reductions) {
        const nn::Reduction reduction = r;
        check_case("nll_" + red, {"x", "t_", "w"}, [&](Inputs& i) {
            return F::nll_loss(i["x"], i["t_"], F::NLLLossFuncOptions().weight(i["w"]).ignore_index(1).reduction(reduction));
        }, {"x"});
        check_case("ce_" + red, {"x", "t_", "w"}, [&](Inputs& i) {
            return F::cross_entropy(i["x"], i["t_"],
                                    F::CrossEntropyFuncOptions().weight(i["w"]).ignore_index(1).reduction(reduction));
        }, {"x"});
        check_case("ce_smooth_" + red, {"x", "t_", "w"}, [&](Inputs& i) {
            return F::cross_entropy(
                i["x"], i["t_"],
                F::CrossEntropyFuncOptions().weight(i["w"]).ignore_index(1).reduction(reduction).label_smoothing(0.15));
        }, {"x"});
    }
    check_case("ce_plain", {"x", "t_"}, [](Inputs& i) { return F::cross_entropy(i["x"], i["t_"]); }, {"x"});
    check_case("ce_spatial", {"x", "t_"}, [](Inputs& i) { return F::cross_entropy(i["x"], i["t_"]); }, {"x"});
    check_case("ce_unbatched", {"x", "t_"}, [](Inputs& i) { return F::cross_entropy(i["x"], i["t_"]); }, {"x"});
    check_case("ce_probs", {"x", "p", "w"}, [](Inputs& i) {
        return F::cross_entropy(i["x"], i["p"], F::CrossEntropyFuncOptions().weight(i["w"]).label_smoothing(0.1));
    }, {"x"});
    check_case("ce_f64", {"x", "t_"}, [](Inputs& i) { return F::cross_entropy(i["x"], i["t_"], kSum); }, {"x"}, 1e-12,
               1e-12);
    for (const std::string red : {"none", "mean", "sum"}) {
        check_case("bce_" + red, {"x", "y", "w"}, [&](Inputs& i) {
            return F::binary_cross_entropy(i["x"], i["y"], F::BinaryCrossEntropyFuncOptions(red).weight(i["w"]));
        }, {"x", "y"}, 1e-5, 1e-5);
        check_case("bce_logits_" + red, {"x", "y", "w", "pw"}, [&](Inputs& i) {
            return F::binary_cross_entropy_with_logits(
                i["x"], i["y"], F::BinaryCrossEntropyWithLogitsFuncOptions(red).weight(i["w"]).pos_weight(i["pw"]));
        }, {"x", "y"});
    }
}

TEST(FunctionalGolden, Attention) {
    EMBER_REQUIRE_GOLDEN();
    check_case("sdpa", {"q", "k", "v"}, [](Inputs& i) { return F::scaled_dot_product_attention(i["q"], i["k"], i["v"]); },
               {"q", "k", "v"});
    check_case("sdpa_bool", {"q", "k", "v", "m"},
               [](Inputs& i) { return F::scaled_dot_product_attention(i["q"], i["k"], i["v"], i["m"]); }, {"q", "k", "v"});
    check_case("sdpa_float", {"q", "k", "v", "m"}, [](Inputs& i) {
        return F::scaled_dot_product_attention(i["q"], i["k"], i["v"],
                                               F::ScaledDotProductAttentionFuncOptions().attn_mask(i["m"]).scale(0.3));
    });
    check_case("sdpa_causal", {"q", "k", "v"},
               [](Inputs& i) { return F::scaled_dot_product_attention(i["q"], i["k"], i["v"], {}, 0.0, true); });
}

}  // namespace
