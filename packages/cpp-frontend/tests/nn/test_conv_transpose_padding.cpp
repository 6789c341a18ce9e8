// ConvTranspose1d/2d/3d, the convolutions' padding modes and the padding modules: parameters,
// PyTorch's init, output_size, printing, errors and parameter gradients (their values against
// Python Ember are in test_golden.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "nn_test_util.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
namespace F = ember::nn::functional;
using nn_test::close;
using nn_test::error_of;

double max_abs(const Tensor& t) { return t.abs().max().to(kDouble).item<double>(); }

// ---------------------------------------------------------------------- ConvTranspose

TEST(ConvTranspose, ParametersAndInit) {
    manual_seed(0);
    nn::ConvTranspose2d m(nn::ConvTranspose2dOptions(4, 6, {3, 2}).groups(2));
    // weight (in_channels, out_channels / groups, *kernel_size), Python's names and order
    EXPECT_EQ(m->weight.sizes(), IntArrayRef({4, 3, 3, 2}));
    EXPECT_EQ(m->bias.sizes(), IntArrayRef({6}));
    EXPECT_EQ(m->named_parameters().keys(), (std::vector<std::string>{"weight", "bias"}));
    // kaiming_uniform_(a = sqrt(5)) and the bias bound both come to 1 / sqrt(fan_in), PyTorch's
    // fan_in being weight.size(1) * prod(kernel_size) = 3 * 6
    const double bound = 1.0 / std::sqrt(18.0);
    EXPECT_LE(max_abs(m->weight), bound);
    EXPECT_GT(max_abs(m->weight), 0.8 * bound);
    EXPECT_LE(max_abs(m->bias), bound);
    EXPECT_GT(max_abs(m->bias), 0.3 * bound);
    nn::ConvTranspose1d no_bias(nn::ConvTranspose1dOptions(2, 3, 4).bias(false));
    EXPECT_FALSE(no_bias->bias.defined());
    EXPECT_EQ(no_bias->named_parameters().keys(), (std::vector<std::string>{"weight"}));
    EXPECT_EQ(nn::ConvTranspose3d(2, 4, 3)->weight.sizes(), IntArrayRef({2, 4, 3, 3, 3}));
    // forward is F::conv_transpose with the options
    const Tensor x = randn({2, 4, 3, 5});
    nn::ConvTranspose2d s(nn::ConvTranspose2dOptions(4, 2, 3).stride(2).padding(1).output_padding(1).dilation({1, 2}));
    EXPECT_TRUE(s(x).equal(F::conv_transpose2d(x, s->weight, s->bias, 2, 1, 1, 1, {1, 2})));
    EXPECT_EQ(s(x[0]).sizes(), IntArrayRef({2, 6, 12}));
    // in a Sequential (forward(input) with output_size defaulted), as a decoder's upsampling
    nn::Sequential decoder(nn::ConvTranspose2d(nn::ConvTranspose2dOptions(4, 2, 4).stride(2).padding(1)), nn::ReLU());
    EXPECT_EQ(decoder->forward(x).sizes(), IntArrayRef({2, 2, 6, 10}));
}

TEST(ConvTranspose, OutputSize) {
    nn::ConvTranspose2d m(nn::ConvTranspose2dOptions(3, 2, 3).stride(2).padding(1));
    const Tensor x = randn({1, 3, 4, 5});
    // without output_size: (4 - 1) * 2 - 2 + 3 = 7, (5 - 1) * 2 - 2 + 3 = 9
    EXPECT_EQ(m(x).sizes(), IntArrayRef({1, 2, 7, 9}));
    // any size in [min, min + stride - 1], as the spatial sizes or with the batch and channel
    EXPECT_EQ(m(x, std::vector<int64_t>{8, 10}).sizes(), IntArrayRef({1, 2, 8, 10}));
    EXPECT_EQ(m(x, std::vector<int64_t>{7, 10}).sizes(), IntArrayRef({1, 2, 7, 10}));
    EXPECT_EQ(m->forward(x, IntArrayRef({1, 2, 8, 9})).sizes(), IntArrayRef({1, 2, 8, 9}));
    EXPECT_TRUE(m(x, std::vector<int64_t>{8, 10}).equal(F::conv_transpose2d(x, m->weight, m->bias, 2, 1, {1, 1})));
    // unbatched: output_size of 2 or 3 values
    EXPECT_EQ(m(x[0], std::vector<int64_t>{2, 8, 9}).sizes(), IntArrayRef({2, 8, 9}));
    EXPECT_EQ(error_of([&] { m(x, std::vector<int64_t>{6, 10}); }),
              "requested an output size of [6, 10], but valid sizes range from [7, 9] to [8, 10] (for an input of "
              "torch.Size([4, 5]))");
    EXPECT_EQ(error_of([&] { m(x, std::vector<int64_t>{1, 2, 9, 9}); }),
              "requested an output size of [9, 9], but valid sizes range from [7, 9] to [8, 10] (for an input of "
              "torch.Size([4, 5]))");
    EXPECT_EQ(error_of([&] { m(x, std::vector<int64_t>{9}); }),
              "ConvTranspose2D: for 4D input, output_size must have 2 or 4 elements (got 1)");
    EXPECT_EQ(error_of([&] { m(x[0], std::vector<int64_t>{1, 2, 8, 9}); }),
              "ConvTranspose2D: for 3D input, output_size must have 2 or 3 elements (got 4)");
    EXPECT_THROW(m(x, std::vector<int64_t>{6, 10}), ValueError);
    // dilation counts (Python's _output_padding)
    nn::ConvTranspose1d d(nn::ConvTranspose1dOptions(1, 1, 3).stride(3).dilation(2));
    const Tensor s = randn({1, 1, 4});
    EXPECT_EQ(d(s).size(2), 14);  // (4 - 1) * 3 + 2 * 2 + 1
    EXPECT_EQ(d(s, std::vector<int64_t>{16}).size(2), 16);
    EXPECT_EQ(error_of([&] { d(s, std::vector<int64_t>{17}); }),
              "requested an output size of [17], but valid sizes range from [14] to [16] (for an input of "
              "torch.Size([4]))");
    nn::ConvTranspose3d t(nn::ConvTranspose3dOptions(2, 2, 2).stride({1, 2, 3}));
    EXPECT_EQ(t(randn({1, 2, 2, 2, 2}), std::vector<int64_t>{3, 5, 6}).sizes(), IntArrayRef({1, 2, 3, 5, 6}));
}

TEST(ConvTranspose, OnlyZerosPadding) {
    EXPECT_EQ(error_of([] { nn::ConvTranspose2d(nn::ConvTranspose2dOptions(3, 2, 3).padding_mode(kReflect)); }),
              "Only \"zeros\" padding mode is supported for ConvTranspose2d");
    EXPECT_THROW(nn::ConvTranspose1d(nn::ConvTranspose1dOptions(3, 2, 3).padding_mode(kCircular)), ValueError);
    // set after construction: libtorch's error at forward
    nn::ConvTranspose3d m(2, 2, 2);
    m->options.padding_mode(kReplicate);
    EXPECT_EQ(error_of([&] { m(randn({1, 2, 2, 2, 2})); }), "Only `zeros` padding mode is supported for ConvTranspose3d");
    // Python's channel checks
    EXPECT_EQ(error_of([] { nn::ConvTranspose2d(nn::ConvTranspose2dOptions(3, 4, 3).groups(2)); }),
              "in_channels must be divisible by groups");
    EXPECT_EQ(error_of([] { nn::ConvTranspose2d(nn::ConvTranspose2dOptions(4, 3, 3).groups(2)); }),
              "out_channels must be divisible by groups");
    EXPECT_EQ(error_of([] { nn::ConvTranspose2d(nn::ConvTranspose2dOptions(4, 4, 3).groups(0)); }),
              "groups must be a positive integer");
}

TEST(ConvTranspose, Printing) {
    EXPECT_EQ(nn::ConvTranspose2d(3, 2, 3)->repr(), "ConvTranspose2d(3, 2, kernel_size=(3, 3), stride=(1, 1))");
    EXPECT_EQ(nn::ConvTranspose2d(nn::ConvTranspose2dOptions(3, 2, 3).stride(2).output_padding(1).bias(false).dilation(2))
                  ->repr(),
              "ConvTranspose2d(3, 2, kernel_size=(3, 3), stride=(2, 2), dilation=(2, 2), output_padding=(1, 1), "
              "bias=False)");
    EXPECT_EQ(nn::ConvTranspose1d(nn::ConvTranspose1dOptions(4, 2, 3).padding(1).groups(2))->repr(),
              "ConvTranspose1d(4, 2, kernel_size=(3,), stride=(1,), padding=(1,), groups=2)");
    std::ostringstream os;
    os << *nn::ConvTranspose3d(nn::ConvTranspose3dOptions(1, 1, {1, 2, 3}).padding({0, 1, 0}));
    EXPECT_EQ(os.str(), "ConvTranspose3d(1, 1, kernel_size=(1, 2, 3), stride=(1, 1, 1), padding=(0, 1, 0))");
}

TEST(ConvTranspose, ParameterGradients) {
    manual_seed(3);
    nn::ConvTranspose2d m(nn::ConvTranspose2dOptions(2, 4, {2, 3}).stride({2, 1}).padding({0, 1}).groups(2));
    m->to(kDouble);
    const Tensor x = randn({2, 2, 3, 3}, kDouble);
    EXPECT_TRUE(nn_test::check_parameter_grads(*m, [&] { return m(x, std::vector<int64_t>{7, 3}); }));
    nn::ConvTranspose3d t(nn::ConvTranspose3dOptions(1, 2, 2).stride(2).padding(1));
    t->to(kDouble);
    const Tensor v = randn({1, 1, 2, 3, 2}, kDouble);
    EXPECT_TRUE(nn_test::check_parameter_grads(*t, [&] { return t(v); }));
}

// ------------------------------------------------------------- convolution padding modes

TEST(ConvPaddingMode, PadsThenConvolves) {
    const Tensor x = randn({2, 2, 5, 6});
    for (auto mode : std::vector<nn::Conv2dOptions::padding_mode_t>{kReflect, kReplicate, kCircular}) {
        nn::Conv2d m(nn::Conv2dOptions(2, 3, 3).padding({1, 2}).padding_mode(mode));
        // (left, right) pairs from the last dim backwards: W by 2, H by 1
        const F::PadFuncOptions::mode_t pad_mode =
            std::holds_alternative<enumtype::kReflect>(mode)     ? F::PadFuncOptions::mode_t(kReflect)
            : std::holds_alternative<enumtype::kReplicate>(mode) ? F::PadFuncOptions::mode_t(kReplicate)
                                                                 : F::PadFuncOptions::mode_t(kCircular);
        const Tensor padded = F::pad(x, F::PadFuncOptions({2, 2, 1, 1}).mode(pad_mode));
        EXPECT_TRUE(m(x).equal(F::conv2d(padded, m->weight, m->bias))) << enumtype::enum_name(mode);
        EXPECT_EQ(m(x).sizes(), IntArrayRef({2, 3, 5, 8}));
    }
    // 'same' with a padding mode: an even kernel's extra element on the right (Python's order)
    nn::Conv1d same(nn::Conv1dOptions(2, 2, 4).padding(kSame).padding_mode(kReflect));
    const Tensor s = randn({1, 2, 7});
    EXPECT_TRUE(same(s).equal(F::conv1d(F::pad(s, {1, 2}, "reflect"), same->weight, same->bias)));
    nn::Conv2d same2(nn::Conv2dOptions(2, 2, {2, 3}).padding(kSame).dilation({3, 1}).padding_mode(kCircular));
    EXPECT_TRUE(same2(x).equal(F::conv2d(F::pad(x, {1, 1, 1, 2}, "circular"), same2->weight, same2->bias, 1, 0, {3, 1})));
    EXPECT_EQ(same2(x).sizes(), x.sizes());
    // 'valid' pads nothing; zeros is the padding of the convolution itself
    nn::Conv2d valid(nn::Conv2dOptions(2, 2, 3).padding(kValid).padding_mode(kReplicate));
    EXPECT_TRUE(valid(x).equal(F::conv2d(x, valid->weight, valid->bias)));
    nn::Conv3d zeros3(nn::Conv3dOptions(2, 1, 2).padding(1));
    const Tensor v = randn({1, 2, 3, 3, 3});
    EXPECT_TRUE(zeros3(v).equal(F::conv3d(v, zeros3->weight, zeros3->bias, 1, 1)));
    nn::Conv3d circ3(nn::Conv3dOptions(2, 1, 2).padding({1, 0, 1}).padding_mode(kCircular));
    EXPECT_TRUE(circ3(v).equal(F::conv3d(F::pad(v, {1, 1, 0, 0, 1, 1}, "circular"), circ3->weight, circ3->bias)));
    // reflect padding larger than the input: F::pad's error
    nn::Conv1d big(nn::Conv1dOptions(1, 1, 3).padding(3).padding_mode(kReflect));
    EXPECT_EQ(error_of([&] { big(randn({1, 1, 3})); }),
              "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (3, "
              "3) at dimension 2 of input [1, 1, 3]");
}

TEST(ConvPaddingMode, PrintingAndGradients) {
    EXPECT_EQ(nn::Conv2d(nn::Conv2dOptions(3, 2, 3).padding(1).padding_mode(kReflect))->repr(),
              "Conv2d(3, 2, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), padding_mode=reflect)");
    EXPECT_EQ(nn::Conv1d(nn::Conv1dOptions(3, 3, 3).padding(kSame).padding_mode(kCircular))->repr(),
              "Conv1d(3, 3, kernel_size=(3,), stride=(1,), padding=same, padding_mode=circular)");
    EXPECT_EQ(nn::Conv3d(nn::Conv3dOptions(1, 1, 1).padding_mode(kReplicate).bias(false))->repr(),
              "Conv3d(1, 1, kernel_size=(1, 1, 1), stride=(1, 1, 1), bias=False, padding_mode=replicate)");
    EXPECT_TRUE(std::holds_alternative<enumtype::kZeros>(nn::Conv2dOptions(1, 1, 1).padding_mode()));
    manual_seed(5);
    nn::Conv2d m(nn::Conv2dOptions(2, 2, 3).padding({2, 1}).padding_mode(kReflect).stride({1, 2}));
    m->to(kDouble);
    const Tensor x = randn({1, 2, 4, 5}, kDouble).requires_grad_(true);
    EXPECT_TRUE(nn_test::check_parameter_grads(*m, [&] { return m(x); }));
    EXPECT_TRUE(ember::testing::gradcheck([&](const std::vector<Tensor>& in) { return m(in[0]); }, {x}));
}

// ---------------------------------------------------------------------- padding modules

TEST(PaddingModules, ForwardIsPadInTheirMode) {
    const Tensor x = randn({2, 3, 4, 5});
    EXPECT_TRUE(nn::ReflectionPad2d(nn::ReflectionPad2dOptions({1, 1, 2, 0}))(x).equal(F::pad(x, {1, 1, 2, 0}, "reflect")));
    EXPECT_TRUE(nn::ReplicationPad1d(3)(x[0]).equal(F::pad(x[0], {3, 3}, "replicate")));
    EXPECT_TRUE(nn::ZeroPad2d(2)(x).equal(F::pad(x, {2, 2, 2, 2})));
    EXPECT_TRUE(nn::ConstantPad3d(nn::ConstantPad3dOptions({1, 0, 2, 1, 0, 1}, -1.5))(x).equal(
        F::pad(x, {1, 0, 2, 1, 0, 1}, "constant", -1.5)));
    EXPECT_TRUE(nn::CircularPad1d(nn::CircularPad1dOptions({2, 1}))(x[0]).equal(F::pad(x[0], {2, 1}, "circular")));
    EXPECT_TRUE(nn::ReflectionPad3d(1)(x).equal(F::pad(x, {1, 1, 1, 1, 1, 1}, "reflect")));
    EXPECT_TRUE(nn::ZeroPad1d(nn::ZeroPad1dOptions({-1, 2}))(x).equal(F::pad(x, {-1, 2})));
    // no parameters, in a Sequential like any module
    EXPECT_TRUE(nn::ReplicationPad3d(1)->parameters().empty());
    nn::Sequential net(nn::ReflectionPad2d(1), nn::Conv2d(3, 4, 3), nn::ReLU());
    EXPECT_EQ(net->forward(x).sizes(), IntArrayRef({2, 4, 4, 5}));
    // the options are libtorch's: one int or 2 * D ints
    EXPECT_EQ(nn::ReflectionPad2dOptions(3).padding(), nn::ExpandingArray<4>({3, 3, 3, 3}));
    EXPECT_EQ(nn::ConstantPad1dOptions({1, 2}, 0.5).value(), 0.5);
}

TEST(PaddingModules, Printing) {
    EXPECT_EQ(nn::ReflectionPad1d(nn::ReflectionPad1dOptions({3, 1}))->repr(), "ReflectionPad1d((3, 1))");
    EXPECT_EQ(nn::ReflectionPad2d(nn::ReflectionPad2dOptions({1, 1, 2, 0}))->repr(), "ReflectionPad2d((1, 1, 2, 0))");
    EXPECT_EQ(nn::ReflectionPad3d(1)->repr(), "ReflectionPad3d((1, 1, 1, 1, 1, 1))");
    EXPECT_EQ(nn::ReplicationPad2d(2)->repr(), "ReplicationPad2d((2, 2, 2, 2))");
    EXPECT_EQ(nn::ZeroPad2d(2)->repr(), "ZeroPad2d((2, 2, 2, 2))");
    EXPECT_EQ(nn::ZeroPad3d(nn::ZeroPad3dOptions({1, 0, 0, 2, 1, 1}))->repr(), "ZeroPad3d((1, 0, 0, 2, 1, 1))");
    EXPECT_EQ(nn::ConstantPad2d(nn::ConstantPad2dOptions({3, 0, 2, 1}, 3.5))->repr(),
              "ConstantPad2d(padding=(3, 0, 2, 1), value=3.5)");
    EXPECT_EQ(nn::ConstantPad1d(2, -1.0)->repr(), "ConstantPad1d(padding=(2, 2), value=-1.0)");
    EXPECT_EQ(nn::CircularPad3d(1)->repr(), "CircularPad3d((1, 1, 1, 1, 1, 1))");
    std::ostringstream os;
    os << *nn::Sequential(nn::ReplicationPad1d(1), nn::CircularPad2d(nn::CircularPad2dOptions({1, 0, 0, 1})));
    EXPECT_EQ(os.str(), "Sequential(\n  (0): ReplicationPad1d((1, 1))\n  (1): CircularPad2d((1, 0, 0, 1))\n)");
}

TEST(PaddingModules, Errors) {
    EXPECT_EQ(error_of([] { nn::CircularPad2d(1)(randn({5, 3})); }), "expected 3D or 4D input (got 2D input)");
    EXPECT_THROW(nn::CircularPad1d(1)(randn({1, 2, 3, 4})), ValueError);
    EXPECT_EQ(error_of([] { nn::ReflectionPad2d(1)(randn({5})); }),
              "Padding length should be less than or equal to two times the input dimension but got padding length 4 "
              "and input of dimension 1");
    EXPECT_THROW(nn::ReplicationPad2d(1)(randn({5, 3})), NotImplementedError);
    EXPECT_EQ(error_of([] { nn::ReflectionPad1d(3)(randn({2, 3})); }),
              "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (3, "
              "3) at dimension 1 of input [2, 3]");
}

TEST(PaddingModules, Gradients) {
    const Tensor x = randn({1, 2, 3, 3}, kDouble).requires_grad_(true);
    for (const auto& pad : std::vector<std::function<Tensor(const Tensor&)>>{
             [](const Tensor& t) { return nn::ReflectionPad2d(nn::ReflectionPad2dOptions({2, 1, 0, 2}))(t); },
             [](const Tensor& t) { return nn::ReplicationPad2d(2)(t); },
             [](const Tensor& t) { return nn::CircularPad2d(nn::CircularPad2dOptions({3, 1, 1, 0}))(t); },
             [](const Tensor& t) { return nn::ConstantPad2d(1, 2.0)(t); }}) {
        EXPECT_TRUE(ember::testing::gradcheck([&](const std::vector<Tensor>& in) { return pad(in[0]); }, {x}));
    }
}

}  // namespace
