// Programs that Python Ember captured (golden_jit.py) run in C++ with Python's results:
// the models of issue 14 (an MLP, the digits CNN, resnet18, a 2-layer LSTM, a transformer
// encoder layer, a small BERT), each exported with a dynamic batch and traced, and programs
// that exercise the op table (pointwise, reductions, shapes, indexing, in-place ops through
// views, convolutions/pooling/normalization/attention/losses, factories with symbolic sizes),
// a decoder (transposed convolutions, upsampling) and a 3-D model (conv3d, 3-D pooling,
// conv_transpose3d), a program of interpolate modes, transposed / 3-D convolutions,
// 1-D and 3-D pooling and einsum, and issue 14's gaps: a model with padding="same"/"valid"
// convolutions and nn.AdaptiveMaxPool2d (exported and traced), a program of string-padded
// 1-D/2-D/3-D convolutions and adaptive max pooling, and a float64 program (f64_trace, also
// converted to float32 by Module::to in test_module.cpp); and issue 15's ops, one program per
// family (the float math family, scans and order statistics, more shape ops, gathers and
// scatters, shuffles / instance and local response norms / distances / kl_div / dropouts),
// with a model of those layers (shuffle_export) that did not load before they were added.
// Every run compares every output tensor (float32: within 1e-5 absolute + 1e-5 relative),
// including a second batch size (or sequence length) for the programs that allow one.
#include <fstream>
#include <set>

#include "jit_test_util.h"

namespace {

using namespace jit_test;

const std::vector<std::string> kPrograms = {
    "mlp_export",         "mlp_trace",          "digits_export",   "digits_trace",   "resnet18_export",
    "resnet18_trace",     "lstm_export",        "lstm_trace",      "transformer_export", "transformer_trace",
    "bert_export",        "bert_trace",         "bn_train_export", "ops_pointwise",   "ops_reductions", "ops_shapes",
    "ops_indexing",       "ops_inplace_views",  "ops_nn",          "ops_more",       "ops_factories",
    "decoder_export",     "decoder_trace",      "video_export",    "ops_nn_resampling",
    "gaps_export",        "gaps_trace",         "f64_trace",       "ops_conv_pool_gaps",
    "ops_math_extra",     "ops_scans",          "ops_shapes_extra", "ops_gathers_extra", "ops_nn_extra",
    "ops_more_extra",     "shuffle_export",
};

class Program : public ::testing::TestWithParam<std::string> {};

TEST_P(Program, MatchesPython) {
    EMBER_JIT_NEED_GOLDEN();
    const std::string name = GetParam();
    ember::jit::Module m = ember::jit::load(golden(name + ".ember"));
    const ProgramRuns runs = expect_runs_match_python(m, name);
    // a program captured in training mode updated its buffers in place, as Python's model did
    if (std::ifstream(golden(name + ".after.safetensors")).good()) {
        ember::StateDict after = ember::load_state_dict(golden(name + ".after.safetensors"));
        auto state = m.state_dict();
        EXPECT_EQ(state.size(), after.size());
        for (const auto& item : after) {
            ASSERT_TRUE(state.contains(item.key())) << item.key();
            Closeness c = compare(state[item.key()], item.value());
            EXPECT_TRUE(c.ok) << name << " state " << item.key() << ": " << c.detail;
        }
    }
    RecordProperty("max_abs_difference", std::to_string(runs.max_abs));
}

INSTANTIATE_TEST_SUITE_P(Golden, Program, ::testing::ValuesIn(kPrograms),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// The list above is golden_jit.py's.
TEST(Programs, AreTheGoldenWritersPrograms) {
    EMBER_JIT_NEED_GOLDEN();
    expect_written_programs("programs.txt", kPrograms);
}

// The programs use what issue 14 names: sizes as size expressions in traces, a dynamic batch
// in exports, the models' characteristic ops.
TEST(Programs, CaptureWhatTheModelsDo) {
    EMBER_JIT_NEED_GOLDEN();
    auto ops_of = [](const std::string& name) {
        std::vector<std::string> ops = ember::jit::load(golden(name + ".ember")).node_ops();
        return std::set<std::string>(ops.begin(), ops.end());
    };
    auto has_all = [](const std::set<std::string>& ops, std::initializer_list<const char*> want) {
        std::string missing;
        for (const char* w : want) {
            if (!ops.count(w)) missing += std::string(missing.empty() ? "" : ", ") + w;
        }
        return missing;
    };
    EXPECT_EQ(has_all(ops_of("digits_export"), {"conv2d", "nn.functional.batch_norm", "relu", "max_pool2d",
                                                  "adaptive_avg_pool2d", "flatten", "linear"}), "");
    EXPECT_EQ(has_all(ops_of("resnet18_export"), {"conv2d", "nn.functional.batch_norm", "relu_", "add_", "max_pool2d"}), "");
    EXPECT_EQ(has_all(ops_of("lstm_export"), {"linear", "matmul", "add", "sigmoid", "tanh", "chunk", "cat", "getitem",
                                                "ember.zeros"}), "");
    EXPECT_EQ(has_all(ops_of("transformer_export"), {"linear", "scaled_dot_product_attention", "layer_norm",
                                                       "Tensor.view", "unbind", "reshape", "add"}), "");
    EXPECT_EQ(has_all(ops_of("bert_trace"), {"nn.functional.embedding", "layer_norm", "gelu", "rsub", "mul",
                                               "Tensor.to", "scaled_dot_product_attention"}), "");
    EXPECT_EQ(has_all(ops_of("decoder_export"), {"conv2d", "conv_transpose2d", "interpolate"}), "");
    EXPECT_EQ(has_all(ops_of("video_export"), {"conv3d", "max_pool3d", "conv_transpose3d", "avg_pool3d",
                                                 "adaptive_avg_pool3d"}), "");
    EXPECT_EQ(has_all(ops_of("gaps_export"), {"conv2d", "adaptive_max_pool2d", "linear"}), "");
    EXPECT_EQ(has_all(ops_of("ops_conv_pool_gaps"), {"conv1d", "conv2d", "conv3d", "adaptive_max_pool1d",
                                                       "adaptive_max_pool2d", "adaptive_max_pool3d"}), "");
    EXPECT_EQ(ember::jit::load(golden("mlp_export.ember")).kind(), "export");
    EXPECT_EQ(ember::jit::load(golden("transformer_trace.ember")).kind(), "jit");
}

}  // namespace
