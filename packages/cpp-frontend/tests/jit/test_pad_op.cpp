// The op table's `pad` (F.pad in a captured program) is F::pad: golden_pad.py's program of
// every mode (constant with and without a value, reflect, replicate, circular; 1 to 3 padded
// dims, negative pads that crop, float32 / float64 / int64) runs in C++ with Python's
// results exactly, the entry's results carry F::pad's autograd nodes, and its errors are
// PyTorch's (the texts of torch 2.13, classes included).
#include <algorithm>
#include <string>
#include <vector>

#include "jit_test_util.h"
#include "op_call.h"

namespace {

namespace F = ember::nn::functional;
using jit_ops::call;
using jit_ops::error_of;
using jit_ops::ints;
using jit_ops::Kwargs;
using jit_ops::Value;
using namespace jit_test;

// pad(input, pad, mode, value) through the op table ("pad" or its alias).
Tensor pad_op(const Tensor& x, std::vector<int64_t> pad, const std::string& mode = "constant", Kwargs kwargs = {},
              const std::string& op = "pad") {
    return call(op, {Value::of(x), ints(std::move(pad)), Value::string(mode)}, std::move(kwargs)).at(0);
}

std::string pad_error(const Tensor& x, std::vector<int64_t> pad, const std::string& mode = "constant",
                      Kwargs kwargs = {}) {
    return error_of("pad", {Value::of(x), ints(std::move(pad)), Value::string(mode)}, std::move(kwargs));
}

TEST(PadOp, GoldenProgramOfEveryModeMatchesPython) {
    EMBER_JIT_NEED_GOLDEN();
    const ember::jit::Module m = ember::jit::load(golden("pad_modes.ember"));
    const std::vector<std::string> ops = m.node_ops();
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "pad"), 31) << "golden_pad.py's CASES";
    const ProgramRuns runs = expect_runs_match_python(m, "pad_modes");
    EXPECT_EQ(runs.runs, 2);
    EXPECT_EQ(runs.max_abs, 0.0) << "padding copies elements: the results are Python's exactly";
}

TEST(PadOp, IsFPadWithItsAutogradNodes) {
    const Tensor x = ember::randn({2, 3, 4, 5}, ember::kDouble).requires_grad_(true);
    EXPECT_EQ(pad_op(x, {1, -1}).grad_fn()->name(), "ConstantPadNdBackward0");
    EXPECT_EQ(pad_op(x[0], {1, 2}, "reflect").grad_fn()->name(), "ReflectionPad1DBackward0");
    EXPECT_EQ(pad_op(x, {1, 2, -1, 1}, "reflect").grad_fn()->name(), "ReflectionPad2DBackward0");
    EXPECT_EQ(pad_op(x, {1, 1, 1, 1, 1, 1}, "replicate").grad_fn()->name(), "ReplicationPad3DBackward0");
    EXPECT_EQ(pad_op(x, {-2, 3, 1, 1}, "circular", {}, "nn.functional.pad").grad_fn()->name(), "CircularPadBackward0");
    const std::vector<std::pair<std::vector<int64_t>, std::string>> cases = {
        {{2, -1, 0, 3}, "constant"}, {{-2, 3, 2, -1}, "reflect"}, {{4, -3, 1, 0}, "replicate"},
        {{-3, 2, 1, -2}, "circular"}, {{1, -3, 0, 0, 2, 2}, "circular"},
    };
    for (const auto& [pad, mode] : cases) {
        EXPECT_TRUE(ember::equal(pad_op(x, pad, mode), F::pad(x, pad, mode))) << mode;
    }
    // value=None is F::pad's default (0 for constant padding); a value of 0 is accepted by every mode
    EXPECT_TRUE(ember::equal(pad_op(x, {1, 1}, "constant", {{"value", Value::none()}}), F::pad(x, {1, 1})));
    EXPECT_TRUE(ember::equal(pad_op(x, {1, 1, 2, 0}, "reflect", {{"value", Value::number(0.0)}}),
                             F::pad(x, {1, 1, 2, 0}, "reflect")));
    // an int value fills an int64 tensor
    const Tensor filled = pad_op(ember::arange(3).view({1, 3}), {1, 0}, "constant", {{"value", Value::integer(-7)}});
    EXPECT_EQ(filled.scalar_type(), ember::kLong);
    EXPECT_TRUE(ember::equal(filled, ember::tensor({-7, 0, 1, 2}).view({1, 4})));
}

TEST(PadOp, CircularPaddingCropsBeforeWrapping) {
    // PyTorch: the negative pad crops first, the positive pad wraps around what is left
    const Tensor x = ember::arange(6.0).view({1, 1, 6});
    EXPECT_TRUE(ember::equal(pad_op(x, {-2, 3}, "circular"), ember::tensor({2.0, 3, 4, 5, 2, 3, 4}).view({1, 1, 7})));
    EXPECT_TRUE(ember::equal(pad_op(x, {3, -3}, "circular"), ember::tensor({0.0, 1, 2, 0, 1, 2}).view({1, 1, 6})));
    EXPECT_TRUE(ember::equal(pad_op(x, {-3, -2}, "circular"), ember::tensor({3.0}).view({1, 1, 1})));
}

TEST(PadOp, ErrorsArePyTorchs) {
    const Tensor x = ember::randn({2, 3, 4});
    EXPECT_EQ(pad_error(x, {1}), "Padding length must be divisible by 2");
    EXPECT_EQ(pad_error(x, {1, 1, 1, 1, 1, 1, 1, 1}),
              "Padding length should be less than or equal to two times the input dimension but got padding length 8 "
              "and input of dimension 3");
    EXPECT_EQ(pad_error(x, {-3, -2}), "narrow(): length must be non-negative.");
    EXPECT_EQ(pad_error(x, {1, 1}, "bogus"), "Unrecognised padding mode bogus");
    EXPECT_THROW(pad_op(x, {1, 1}, "bogus"), ember::NotImplementedError);
    EXPECT_EQ(pad_error(x, {1, 1}, "reflect", {{"value", Value::number(2.0)}}),
              "Padding mode \"reflect\" doesn't take in value argument");
    EXPECT_EQ(pad_error(x, {1, 1}, "circular", {{"value", Value::integer(-1)}}),
              "Padding mode \"circular\" doesn't take in value argument");
    EXPECT_EQ(pad_error(ember::randn({4}), {1, 1}, "replicate"),
              "Padding size 2 is not supported for 1D input tensor.\nSupported combinations for non-constant padding:\n"
              "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
              "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
              "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)");
    EXPECT_THROW(pad_op(ember::randn({1, 1, 1, 2, 5}), {1, 1}, "reflect"), ember::NotImplementedError);
    // reflect: each pad below its dim's size (the argument number is PyTorch's for that dim)
    EXPECT_EQ(pad_error(x, {4, 1}, "reflect"),
              "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (4, "
              "1) at dimension 2 of input [2, 3, 4]");
    EXPECT_EQ(pad_error(ember::randn({2, 3, 4, 5}), {1, -1, 1, 4}, "reflect"),
              "Argument #6: Padding size should be less than the corresponding input dimension, but got: padding (1, "
              "4) at dimension 2 of input [2, 3, 4, 5]");
    EXPECT_EQ(pad_error(x, {-5, 1}, "reflect"), "input (W: 4) is too small. Calculated output W: 0");
    EXPECT_EQ(pad_error(ember::randn({3, 0, 4}), {1, 1}, "reflect"),
              "Expected 2D or 3D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for "
              "input, but got: [3, 0, 4]");
    // replicate: negative pads may not leave a negative size
    EXPECT_EQ(pad_error(x, {-2, -3}, "replicate"), "input (W: 4) is too small. Calculated output W: -1");
    EXPECT_EQ(pad_error(ember::randn({2, 3, 4, 5}), {-3, -3, 0, 0}, "replicate"),
              "Trying to create tensor with negative dimension -1: [2, 3, 4, -1]");
    // circular: at most one wrap around, and no dim cropped away
    EXPECT_EQ(pad_error(x, {5, 1}, "circular"), "Padding value causes wrapping around more than once.");
    EXPECT_EQ(pad_error(x, {-2, 5}, "circular"), "Padding value causes wrapping around more than once.");
    EXPECT_EQ(pad_error(x, {-2, -3}, "circular"), "Negative padding value is resulting in an empty dimension");
}

}  // namespace
