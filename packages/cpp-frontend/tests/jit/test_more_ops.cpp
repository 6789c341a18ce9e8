// Issue 15's op table entries called directly, one test per family: properties that hold
// whatever Python computes (inverse functions, round trips, counts) and the errors of bad
// arguments. Python's values are checked by the golden programs (test_programs.cpp:
// ops_math_extra, ops_scans, ops_shapes_extra, ops_gathers_extra, ops_nn_extra and the model
// shuffle_export). The last test keeps the ops of Ember's model families in the table.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "op_call.h"

namespace {

using namespace jit_ops;  // Tensor, Value, Kwargs, op_table, ints, call, error_of

Value of(const Tensor& t) { return Value::of(t); }

Tensor call1(const std::string& op, std::vector<Value> args, Kwargs kwargs = {}) {
    return call(op, std::move(args), std::move(kwargs)).at(0);
}

double max_diff(const Tensor& a, const Tensor& b) {
    return (a.to(ember::kDouble) - b.to(ember::kDouble)).abs().max().item<double>();
}

TEST(MoreOps, FloatMathFamily) {
    ember::manual_seed(0);
    Tensor x = ember::rand({3, 5}) * 1.8 - 0.9;  // in (-0.9, 0.9)
    EXPECT_LT(max_diff(call1("sin", {of(call1("asin", {of(x)}))}), x), 1e-6);
    EXPECT_LT(max_diff(call1("tanh", {of(call1("atanh", {of(x)}))}), x), 1e-6);
    EXPECT_LT(max_diff(call1("erf", {of(call1("erfinv", {of(x)}))}), x), 1e-6);
    EXPECT_LT(max_diff(call1("cosh", {of(x)}) * call1("cosh", {of(x)}) - call1("sinh", {of(x)}) * call1("sinh", {of(x)}),
                       ember::ones({3, 5})), 1e-5);
    // integers take the default float dtype; atan2 knows its quadrant
    Tensor i = ember::arange(-2, 3);
    EXPECT_EQ(call1("asinh", {of(i)}).scalar_type(), ember::kFloat);
    Tensor q = call1("atan2", {of(ember::full({1}, -1.0)), of(ember::full({1}, -1.0))});
    EXPECT_NEAR(q.item<double>(), -3 * M_PI / 4, 1e-6);
    // an in-place variant writes its input
    Tensor y = x.clone();
    Tensor r = call1("acos_", {of(y)});
    EXPECT_TRUE(r.is_same(y));
    EXPECT_LT(max_diff(y, call1("acos", {of(x)})), 1e-7);
    // NaN handling of fmax and nan_to_num
    Tensor nan = ember::full({2}, NAN);
    EXPECT_EQ(max_diff(call1("fmax", {of(nan), of(ember::ones({2}))}), ember::ones({2})), 0);
    Tensor cleaned = call1("nan_to_num", {of(ember::full({1}, INFINITY))});
    EXPECT_EQ(cleaned.item<double>(), static_cast<double>(std::numeric_limits<float>::max()));
}

TEST(MoreOps, ScansAndOrderStatistics) {
    Tensor x = ember::tensor({3.0, 1.0, 3.0, 2.0, 5.0});
    std::vector<Tensor> m = call("cummax", {of(x), Value::integer(0)});
    EXPECT_EQ(max_diff(m.at(0), ember::tensor({3.0, 3.0, 3.0, 3.0, 5.0})), 0);
    EXPECT_EQ(max_diff(m.at(1), ember::tensor({0, 0, 2, 2, 4})), 0);  // ties: the last one
    EXPECT_EQ(max_diff(call1("cumprod", {of(x), Value::integer(0)}), ember::tensor({3.0, 3.0, 9.0, 18.0, 90.0})), 0);
    EXPECT_EQ(call1("cumprod", {of(ember::arange(1, 5)), Value::integer(0)}).scalar_type(), ember::kLong);
    Tensor lse = call1("logcumsumexp", {of(x), Value::integer(0)});
    EXPECT_LT(max_diff(lse, ember::log(ember::cumsum(ember::exp(x), 0))), 1e-5);
    std::vector<Tensor> k = call("kthvalue", {of(x), Value::integer(2)});
    EXPECT_EQ(k.at(0).item<double>(), 2.0);
    EXPECT_EQ(k.at(1).item<int64_t>(), 3);
    EXPECT_EQ(call1("median", {of(x)}).item<double>(), 3.0);
    EXPECT_NE(error_of("kthvalue", {of(x), Value::integer(6)}).find("k out of range"), std::string::npos);
    EXPECT_NE(error_of("logcumsumexp", {of(ember::arange(3)), Value::integer(0)}).find("not implemented for 'Long'"),
              std::string::npos);
}

TEST(MoreOps, ShapeFamily) {
    ember::manual_seed(1);
    Tensor x = ember::randn({2, 3, 4});
    Tensor rolled = call1("roll", {of(x), ints({1, -2}), ints({0, 2})});
    EXPECT_EQ(max_diff(call1("roll", {of(rolled), ints({-1, 2}), ints({0, 2})}), x), 0);
    Tensor r = x;
    for (int k = 0; k < 4; ++k) r = call1("rot90", {of(r), Value::integer(1), ints({1, 2})});
    EXPECT_EQ(max_diff(r, x), 0);
    EXPECT_EQ(call("tensor_split", {of(x), Value::integer(3), Value::integer(2)}).size(), 3u);
    EXPECT_NE(error_of("hsplit", {of(x), Value::integer(2)}).find("not divisible"), std::string::npos);
    Tensor rep = call1("repeat_interleave", {of(ember::tensor({2, 0, 3}))});
    EXPECT_EQ(max_diff(rep, ember::tensor({0, 0, 2, 2, 2})), 0);
    Tensor tri = call1("tril_indices", {Value::integer(3), Value::integer(3)});
    EXPECT_EQ(tri.sizes(), (std::vector<int64_t>{2, 6}));
    Tensor eye = call1("diag", {of(ember::ones({3}))});
    EXPECT_EQ(max_diff(eye, ember::eye(3)), 0);
}

TEST(MoreOps, GatherFamily) {
    Tensor x = ember::arange(12.0).reshape({3, 4});
    EXPECT_EQ(max_diff(call1("take", {of(x), of(ember::tensor({0, -1, 5}))}), ember::tensor({0.0, 11.0, 5.0})), 0);
    EXPECT_NE(error_of("take", {of(x), of(ember::tensor({12}))}).find("out of range"), std::string::npos);
    Tensor filled = call1("index_fill", {of(x), Value::integer(1), of(ember::tensor({0, 2})), Value::number(-1.0)});
    EXPECT_EQ(filled.select(1, 2).sum().item<double>(), -3.0);
    EXPECT_EQ(x.select(1, 2).sum().item<double>(), 2.0 + 6.0 + 10.0);  // the input is unchanged
    Tensor copied = call1("index_copy", {of(ember::zeros({3, 4})), Value::integer(0), of(ember::tensor({2, 0})),
                                         of(x.narrow(0, 0, 2))});
    EXPECT_EQ(max_diff(copied.select(0, 2), x.select(0, 0)), 0);
    EXPECT_EQ(max_diff(copied.select(0, 0), x.select(0, 1)), 0);
}

TEST(MoreOps, NnFamily) {
    ember::manual_seed(2);
    Tensor x = ember::randn({2, 8, 3, 5});
    Tensor up = call1("pixel_shuffle", {of(x), Value::integer(2)});
    EXPECT_EQ(up.sizes(), (std::vector<int64_t>{2, 2, 6, 10}));
    EXPECT_EQ(max_diff(call1("pixel_unshuffle", {of(up), Value::integer(2)}), x), 0);
    Tensor shuffled = call1("channel_shuffle", {of(x), Value::integer(2)});
    EXPECT_EQ(max_diff(call1("channel_shuffle", {of(shuffled), Value::integer(4)}), x), 0);
    EXPECT_NE(error_of("pixel_shuffle", {of(x), Value::integer(3)}).find("divisible"), std::string::npos);
    Tensor normed = call1("nn.functional.instance_norm", {of(x)});
    EXPECT_LT(normed.mean(std::vector<int64_t>{2, 3}).abs().max().item<double>(), 1e-5);
    Tensor cos = call1("cosine_similarity", {of(x), of(x * 3)});
    EXPECT_LT(max_diff(cos, ember::ones({2, 3, 5})), 1e-5);
    // channel and alpha dropouts are the identity out of training
    EXPECT_TRUE(call1("nn.functional.dropout2d", {of(x), Value::number(0.5), Value::boolean(false)}).is_same(x));
    EXPECT_TRUE(call1("alpha_dropout", {of(x)}).is_same(x));
}

// The ops of Ember's model families' programs (vision: resnet, resnext, mobilenet v2/v3,
// efficientnet / lite / v2, convnext, densenet, squeezenet, alexnet, vgg, vit; text: BERT,
// the sentence encoder, GPT, the LSTM language model, the transformer classifier;
// nn.TransformerEncoder, LSTM, GRU, RNN), as ember.export records them.
TEST(MoreOps, ModelFamiliesOpsAreInTheTable) {
    const std::vector<std::string> used = {
        "Tensor.copy_", "Tensor.expand", "Tensor.mT", "Tensor.to", "Tensor.view", "adaptive_avg_pool2d", "add", "add_",
        "avg_pool2d", "cat", "chunk", "clamp", "clone", "conv2d", "div", "flatten", "gelu", "getitem", "hardsigmoid",
        "hardswish", "hardtanh", "layer_norm", "linear", "log_softmax", "matmul", "max_pool2d", "mean", "mul",
        "nn.functional.batch_norm", "nn.functional.embedding", "nn.functional.normalize", "pad", "permute", "relu",
        "relu_", "reshape", "rsub", "scaled_dot_product_attention", "sigmoid", "silu", "split", "stack", "sub", "sum",
        "tanh", "transpose", "unbind", "unsqueeze"};
    std::vector<std::string> ops = ember::jit::supported_ops();
    for (const std::string& op : used) EXPECT_TRUE(std::count(ops.begin(), ops.end(), op)) << op;
}

}  // namespace
