// F::pad (constant, reflect, replicate, circular) and F::conv_transpose1d/2d/3d: against Python
// Ember on the same inputs (golden_pad_conv_transpose.py: outputs and the gradients of
// sum(out * proj), which Python Ember's own tests compare with PyTorch), against values worked
// out by hand and references built from other ops (a transposed convolution is the adjoint of
// the convolution), float64 gradient checks (first and second order), PyTorch's errors and
// the autograd node names.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/golden.h"
#include "common/gradcheck.h"
#include "ember/ember.h"
#include "functional_test_util.h"

namespace {

using namespace ember;
namespace F = ember::nn::functional;
using ember::testing::gradcheck;
using ember::testing::gradgradcheck;
using ember_test::close;
using ember_test::error_of;
using In = std::vector<Tensor>;

// The arrays of pad_conv_transpose.safetensors (golden_pad_conv_transpose.py) by name (fresh copies).
Tensor pct_golden(const std::string& name) { return ember::testing::golden_tensor("pad_conv_transpose.safetensors", name); }

using Inputs = std::map<std::string, Tensor>;

// Runs fn on the case's inputs (requiring grad) and compares its output and the gradients of
// sum(out * proj) with Python's (float32 sums of many terms: a relative bound).
void check_case(const std::string& name, const std::vector<std::string>& inputs, const std::function<Tensor(Inputs&)>& fn) {
    SCOPED_TRACE(name);
    Inputs in;
    for (const std::string& k : inputs) in[k] = pct_golden(name + "." + k).requires_grad_(true);
    const Tensor out = fn(in);
    const Tensor expected = pct_golden(name + ".out");
    EXPECT_EQ(out.scalar_type(), expected.scalar_type());
    EXPECT_TRUE(close(out, expected, 1e-5, 1e-5)) << "output";
    (out * pct_golden(name + ".proj")).sum().backward();
    for (const std::string& k : inputs) {
        EXPECT_TRUE(close(in[k].grad(), pct_golden(name + ".grad." + k), 1e-5, 1e-4)) << "gradient of " << k;
    }
}

Tensor rnd(IntArrayRef shape, uint64_t seed) {
    Generator g(seed);
    return rand(shape, g, kFloat64) * 2 - 1;
}

Tensor pad_opt(const Tensor& x, std::vector<int64_t> pads, F::PadFuncOptions::mode_t mode, double value = 0) {
    return F::pad(x, F::PadFuncOptions(std::move(pads)).mode(mode).value(value));
}

// ---------------------------------------------------------------------------------- pad

TEST(PadGolden, MatchesPython) {
    EMBER_REQUIRE_GOLDEN();
    check_case("constant1d", {"x"}, [](Inputs& i) { return F::pad(i["x"], {2, 1}, "constant", 1.5); });
    check_case("constant3of4", {"x"}, [](Inputs& i) { return pad_opt(i["x"], {1, -2, 0, 3, 2, 2}, kConstant); });
    check_case("constant_all4", {"x"},
               [](Inputs& i) { return pad_opt(i["x"], {1, 1, -1, 2, 1, 0, 2, 1}, kConstant, -3.0); });
    check_case("constant_crop_only", {"x"}, [](Inputs& i) { return F::pad(i["x"], {-1, -2, 0, -1}); });
    check_case("reflect1d", {"x"}, [](Inputs& i) { return pad_opt(i["x"], {3, 2}, kReflect); });
    check_case("reflect1d_unbatched", {"x"}, [](Inputs& i) { return F::pad(i["x"], {1, 4}, "reflect"); });
    check_case("reflect2d", {"x"}, [](Inputs& i) { return pad_opt(i["x"], {1, 2, 3, 0}, kReflect); });
    check_case("reflect2d_crop", {"x"}, [](Inputs& i) { return F::pad(i["x"], {-1, 3, 2, -1}, "reflect"); });
    check_case("reflect3d", {"x"}, [](Inputs& i) { return pad_opt(i["x"], {1, 2, 0, 1, 2, 1}, kReflect); });
    check_case("reflect3d_unbatched_f64", {"x"}, [](Inputs& i) { return F::pad(i["x"], {2, 1, 1, 1, 1, 0}, "reflect"); });
    check_case("replicate1d", {"x"}, [](Inputs& i) { return pad_opt(i["x"], {4, 1}, kReplicate); });
    check_case("replicate2d", {"x"}, [](Inputs& i) { return F::pad(i["x"], {2, 0, 1, 5}, "replicate"); });
    check_case("replicate2d_crop", {"x"}, [](Inputs& i) { return pad_opt(i["x"], {-2, 1, 1, -1}, kReplicate); });
    check_case("replicate3d", {"x"}, [](Inputs& i) { return F::pad(i["x"], {1, 1, 2, 0, 0, 3}, "replicate"); });
    check_case("circular1d", {"x"}, [](Inputs& i) { return pad_opt(i["x"], {2, 5}, kCircular); });
    check_case("circular1d_crop", {"x"}, [](Inputs& i) { return F::pad(i["x"], {-1, 3}, "circular"); });
    check_case("circular2d", {"x"}, [](Inputs& i) { return pad_opt(i["x"], {1, 2, 4, 1}, kCircular); });
    check_case("circular3d", {"x"}, [](Inputs& i) { return F::pad(i["x"], {1, 0, 2, 1, 1, 2}, "circular"); });
}

// PyTorch's documented examples, worked out by hand.
TEST(Pad, Values) {
    const Tensor x = arange(6.0).view({1, 2, 3});  // [[0, 1, 2], [3, 4, 5]]
    auto rows = [](const std::vector<double>& values) { return tensor(values).to(kFloat).view({1, 2, -1}); };
    EXPECT_TRUE(F::pad(x, {2, 1}, "reflect").equal(rows({2., 1., 0., 1., 2., 1., 5., 4., 3., 4., 5., 4.})));
    EXPECT_TRUE(F::pad(x, {2, 1}, "replicate").equal(rows({0., 0., 0., 1., 2., 2., 3., 3., 3., 4., 5., 5.})));
    EXPECT_TRUE(F::pad(x, {2, 1}, "circular").equal(rows({1., 2., 0., 1., 2., 0., 4., 5., 3., 4., 5., 3.})));
    EXPECT_TRUE(F::pad(x, {1, 0}, "constant", 7.0).equal(tensor({7., 0., 1., 2., 7., 3., 4., 5.}).view({1, 2, 4})));
    // negative pads crop: before the wrap-around (circular), or within the reflected range
    const Tensor r = arange(5.0).view({1, 5});
    EXPECT_TRUE(F::pad(r, {-1, 3}, "circular").equal(tensor({1., 2., 3., 4., 1., 2., 3.}).view({1, 7})));
    EXPECT_TRUE(F::pad(r, {2, -3}, "circular").equal(tensor({0., 1., 0., 1.}).view({1, 4})));
    EXPECT_TRUE(F::pad(r, {-1, 3}, "reflect").equal(tensor({1., 2., 3., 4., 3., 2., 1.}).view({1, 7})));
    EXPECT_TRUE(F::pad(r, {-1, 3}, "replicate").equal(tensor({1., 2., 3., 4., 4., 4., 4.}).view({1, 7})));
    // 2-D reflect: rows reflected, then columns
    const Tensor g = arange(9.0).view({1, 3, 3});
    const Tensor two = F::pad(g, F::PadFuncOptions({1, 1, 2, 0}).mode(kReflect));
    EXPECT_TRUE(two.equal(tensor({7., 6., 7., 8., 7., 4., 3., 4., 5., 4., 1., 0., 1., 2., 1., 4., 3., 4., 5., 4., 7., 6.,
                                  7., 8., 7.})
                              .view({1, 5, 5})));
    // constant padding keeps integers, and pads as many dims as it is given
    const Tensor ints = ones({2, 2}, kLong);
    const Tensor padded = F::pad(ints, {1, 0, 0, 1}, "constant", 3.0);
    EXPECT_EQ(padded.scalar_type(), kLong);
    EXPECT_TRUE(padded.equal(tensor({3, 1, 1, 3, 1, 1, 3, 3, 3}, kLong).view({3, 3})));
    // zero pads copy (a new tensor, as PyTorch)
    const Tensor same = F::pad(x, {0, 0}, "reflect");
    EXPECT_TRUE(same.equal(x));
    EXPECT_NE(same.data_ptr(), x.data_ptr());
    EXPECT_NE(F::pad(x, {0, 0}).data_ptr(), x.data_ptr());
    // libtorch's 0 is "no value": accepted by every mode
    EXPECT_TRUE(pad_opt(x, {1, 1}, kReflect, 0.0).equal(F::pad(x, {1, 1}, "reflect")));
    // empty batches pass; a padded dim may become empty in 2-D and 3-D
    EXPECT_EQ(F::pad(zeros({0, 3, 4}), {1, 1}, "reflect").sizes(), IntArrayRef({0, 3, 6}));
    EXPECT_EQ(F::pad(zeros({3, 4, 5}), {0, 0, -2, -2}, "replicate").sizes(), IntArrayRef({3, 0, 5}));
    EXPECT_EQ(F::pad(zeros({2, 3, 4, 5}), {0, 0, -2, -2, 0, 0}, "circular").sizes(), IntArrayRef({2, 3, 0, 5}));
}

TEST(Pad, NodeNamesAndGradients) {
    const Tensor x = randn({2, 3, 4, 5}).requires_grad_(true);
    EXPECT_EQ(F::pad(x, {1, 1}).grad_fn()->name(), "ConstantPadNdBackward0");
    EXPECT_EQ(F::pad(x[0], {1, 1}, "reflect").grad_fn()->name(), "ReflectionPad1DBackward0");
    EXPECT_EQ(F::pad(x, {1, 1, 1, 1}, "reflect").grad_fn()->name(), "ReflectionPad2DBackward0");
    EXPECT_EQ(F::pad(x, {1, 1, 1, 1, 1, 1}, "replicate").grad_fn()->name(), "ReplicationPad3DBackward0");
    EXPECT_EQ(F::pad(x, {1, 1, 1, 1}, "circular").grad_fn()->name(), "CircularPadBackward0");
    // replicate sends each padded position's gradient to its edge element
    const Tensor r = arange(3.0).view({1, 3}).requires_grad_(true);
    F::pad(r, {2, 1}, "replicate").sum().backward();
    EXPECT_TRUE(r.grad().equal(tensor({3.0, 1.0, 2.0}).view({1, 3})));
    // constant: the gradient of the copied part only (a crop of the padded gradient)
    const Tensor c = ones({2, 3}).requires_grad_(true);
    const Tensor w = arange(12.0).view({3, 4});
    (F::pad(c, {1, 0, 0, 1}, "constant", 5.0) * w).sum().backward();
    EXPECT_TRUE(c.grad().equal(w.narrow(0, 0, 2).narrow(1, 1, 3)));
    // no history when nothing requires grad
    EXPECT_FALSE(F::pad(randn({1, 2, 3}), {1, 1}, "reflect").requires_grad());
}

TEST(Pad, Gradcheck) {
    for (const char* mode : {"reflect", "replicate", "circular"}) {
        SCOPED_TRACE(mode);
        EXPECT_TRUE(gradcheck([mode](const In& i) { return F::pad(i[0], {2, 1}, mode); }, {rnd({2, 2, 4}, 1)}));
        EXPECT_TRUE(gradcheck([mode](const In& i) { return F::pad(i[0], {1, 2, -1, 2}, mode); }, {rnd({2, 3, 4}, 2)}));
        EXPECT_TRUE(gradcheck([mode](const In& i) { return F::pad(i[0], {1, 0, 2, 1, 1, 1}, mode); },
                              {rnd({1, 2, 2, 3, 3}, 3)}));
        EXPECT_TRUE(gradgradcheck([mode](const In& i) { return F::pad(i[0], {1, 2, 2, 1}, mode); }, {rnd({1, 3, 3}, 4)}));
    }
    EXPECT_TRUE(gradcheck([](const In& i) { return F::pad(i[0], {1, -1, 2, 0, 0, 1}, "constant", 2.5); },
                          {rnd({2, 3, 4}, 5)}));
    EXPECT_TRUE(gradgradcheck([](const In& i) { return F::pad(i[0], {2, -1, 1, 1}); }, {rnd({2, 3, 4}, 6)}));
}

TEST(Pad, PyTorchsErrors) {
    const Tensor x = randn({2, 3, 4});
    EXPECT_EQ(error_of([&] { F::pad(x, {1}); }), "Padding length must be divisible by 2");
    EXPECT_EQ(error_of([&] { F::pad(x, {1, 1, 1, 1, 1, 1, 1, 1}); }),
              "Padding length should be less than or equal to two times the input dimension but got padding length 8 "
              "and input of dimension 3");
    EXPECT_EQ(error_of([&] { F::pad(x, {4, 1}, "reflect"); }),
              "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (4, "
              "1) at dimension 2 of input [2, 3, 4]");
    EXPECT_EQ(error_of([] { F::pad(randn({2, 3, 4, 5}), {1, 1, 5, 1}, "reflect"); }),
              "Argument #6: Padding size should be less than the corresponding input dimension, but got: padding (5, "
              "1) at dimension 2 of input [2, 3, 4, 5]");
    EXPECT_EQ(error_of([] { F::pad(randn({1, 2, 3, 4, 5}), {0, 0, 0, 0, 3, 0}, "reflect"); }),
              "Argument #8: Padding size should be less than the corresponding input dimension, but got: padding (3, "
              "0) at dimension 2 of input [1, 2, 3, 4, 5]");
    EXPECT_EQ(error_of([&] { F::pad(x, {5, 1}, "circular"); }), "Padding value causes wrapping around more than once.");
    EXPECT_EQ(error_of([&] { F::pad(x, {-2, -3}, "circular"); }),
              "Negative padding value is resulting in an empty dimension");
    const std::string unsupported =
        "D input tensor.\nSupported combinations for non-constant padding:\n"
        "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
        "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
        "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)";
    EXPECT_EQ(error_of([] { F::pad(randn({4}), {1, 1}, "replicate"); }),
              "Padding size 2 is not supported for 1" + unsupported);
    EXPECT_EQ(error_of([] { F::pad(randn({5, 3}), {1, 1, 1, 1}, "reflect"); }),
              "Padding size 4 is not supported for 2" + unsupported);
    EXPECT_THROW(F::pad(randn({2, 2, 2, 2, 2, 2}), {1, 1}, "circular"), NotImplementedError);
    EXPECT_EQ(error_of([&] { F::pad(x, {1, 1}, "reflect", 2.0); }),
              "Padding mode \"reflect\" doesn't take in value argument");
    EXPECT_EQ(error_of([&] { pad_opt(x, {1, 1}, kCircular, -1.0); }),
              "Padding mode \"circular\" doesn't take in value argument");
    EXPECT_EQ(error_of([&] { F::pad(x, {1, 1}, "bogus"); }), "Unrecognised padding mode bogus");
    EXPECT_THROW(F::pad(x, {1, 1}, "bogus"), NotImplementedError);
    EXPECT_EQ(error_of([] { F::pad(randn({3, 0, 4}), {1, 1}, "reflect"); }),
              "Expected 2D or 3D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for "
              "input, but got: [3, 0, 4]");
    EXPECT_EQ(error_of([] { F::pad(randn({0, 3, 3}), {1, 1, 1, 1}, "replicate"); }),
              "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for "
              "input, but got: [0, 3, 3]");
    EXPECT_EQ(error_of([&] { F::pad(x, {-2, -2}, "replicate"); }), "input (W: 4) is too small. Calculated output W: 0");
    EXPECT_EQ(error_of([&] { F::pad(x, {-5, 1}, "reflect"); }), "input (W: 4) is too small. Calculated output W: 0");
    EXPECT_EQ(error_of([] { F::pad(randn({2, 3, 4, 5}), {-3, -3, 0, 0, 0, 0}, "replicate"); }),
              "Trying to create tensor with negative dimension -1: [2, 3, 4, -1]");
    EXPECT_EQ(error_of([&] { F::pad(x, {-3, -2}); }), "narrow(): length must be non-negative.");
    // 2-D / 3-D reflect and replicate: "too small" when every padded dim comes out below 1
    // (replication_pad2d's text has a space before its parenthesis); one left is an empty result
    EXPECT_EQ(error_of([] { F::pad(randn({1, 2, 5}), {-6, 1, -1, -1}, "reflect"); }),
              "input (H: 2, W: 5) is too small. Calculated output H: 0 W: 0");
    EXPECT_EQ(error_of([] { F::pad(randn({1, 2, 5}), {-6, 1, -1, -1}, "replicate"); }),
              "input (H: 2, W: 5 ) is too small. Calculated output H: 0 W: 0");
    EXPECT_EQ(error_of([] { F::pad(randn({1, 2, 3, 4, 5}), {-6, 1, 0, -4, -3, 0}, "replicate"); }),
              "input (D: 3 H: 4, W: 5) is too small. Calculated output D: 0 H: 0 W: 0");
    EXPECT_EQ(error_of([] { F::pad(randn({1, 2, 3, 4, 5}), {-5, 0, 0, -4, -3, 0}, "reflect"); }),
              "input (D: 3 H: 4, W: 5) is too small. Calculated output D: 0 H: 0 W: 0");
    EXPECT_EQ(F::pad(randn({1, 2, 5}), {-6, 1, 0, -1}, "reflect").sizes(), (std::vector<int64_t>{1, 1, 0}));
    // circular: aten's checks of every dim come before Ember's own check that the crop leaves
    // something to wrap around (where aten returns memory it never wrote)
    EXPECT_EQ(error_of([] { F::pad(randn({2, 1, 1}), {-6, -6, 1, -1}, "circular"); }),
              "Negative padding value is resulting in an empty dimension");
    EXPECT_EQ(error_of([] { F::pad(randn({2, 1, 1}), {0, 0, 1, -1}, "circular"); }),
              "Padding value causes wrapping around more than once.");
}

// ------------------------------------------------------------------------ conv_transpose

TEST(ConvTransposeGolden, MatchesPython) {
    EMBER_REQUIRE_GOLDEN();
    check_case("ct1d", {"x", "w", "b"}, [](Inputs& i) { return F::conv_transpose1d(i["x"], i["w"], i["b"], 3, 1, 2); });
    check_case("ct1d_groups_dil", {"x", "w"}, [](Inputs& i) {
        return F::conv_transpose1d(i["x"], i["w"], F::ConvTranspose1dFuncOptions().groups(2).dilation(2).padding(2));
    });
    check_case("ct1d_unbatched", {"x", "w", "b"}, [](Inputs& i) {
        return F::conv_transpose1d(i["x"], i["w"], F::ConvTranspose1dFuncOptions().bias(i["b"]).stride(2));
    });
    check_case("ct2d", {"x", "w", "b"}, [](Inputs& i) {
        return F::conv_transpose2d(i["x"], i["w"],
                                   F::ConvTranspose2dFuncOptions().bias(i["b"]).stride(2).padding(1).output_padding(1));
    });
    check_case("ct2d_groups", {"x", "w", "b"}, [](Inputs& i) {
        return F::conv_transpose2d(i["x"], i["w"], i["b"], {2, 1}, {0, 1}, 0, 3, {1, 2});
    });
    check_case("ct2d_outpad_dilation", {"x", "w", "b"},
               [](Inputs& i) { return F::conv_transpose2d(i["x"], i["w"], i["b"], 1, 0, 1, 1, 2); });
    check_case("ct2d_large_padding", {"x", "w", "b"}, [](Inputs& i) {
        return F::conv_transpose2d(i["x"], i["w"],
                                   F::ConvTranspose2dFuncOptions().bias(i["b"]).stride({3, 2}).padding({2, 1})
                                       .output_padding({2, 1}));
    });
    check_case("ct2d_unbatched_f64", {"x", "w"},
               [](Inputs& i) { return F::conv_transpose2d(i["x"], i["w"], {}, {1, 3}, {1, 0}); });
    check_case("ct3d", {"x", "w", "b"}, [](Inputs& i) {
        return F::conv_transpose3d(i["x"], i["w"],
                                   F::ConvTranspose3dFuncOptions().bias(i["b"]).stride({2, 1, 2}).padding({1, 1, 0})
                                       .output_padding({1, 0, 1}));
    });
    check_case("ct3d_groups_dil", {"x", "w"},
               [](Inputs& i) { return F::conv_transpose3d(i["x"], i["w"], {}, 2, 1, 0, 2, {2, 1, 2}); });
    check_case("ct3d_unbatched", {"x", "w", "b"}, [](Inputs& i) { return F::conv_transpose3d(i["x"], i["w"], i["b"]); });
}

// <conv(y), x> == <y, conv_transpose(x)>: the transposed convolution is the adjoint of the
// convolution with the same stride, padding, dilation and groups (and the output padding
// that restores y's size).
TEST(ConvTranspose, IsTheAdjointOfConvolution) {
    struct Case {
        IntArrayRef y_shape, w_shape;
        std::vector<int64_t> stride, padding, dilation;
        int64_t groups;
    };
    const std::vector<std::vector<int64_t>> shapes = {{2, 4, 9, 8}, {6, 2, 3, 2}, {2, 3, 11}, {4, 3, 3},
                                                      {1, 2, 7, 6, 5}, {3, 2, 3, 2, 3}};
    const std::vector<Case> cases = {
        {shapes[0], shapes[1], {2, 1}, {1, 0}, {1, 2}, 2},
        {shapes[2], shapes[3], {3}, {1}, {2}, 1},
        {shapes[4], shapes[5], {2, 1, 2}, {1, 1, 0}, {1, 2, 1}, 1},
    };
    for (const Case& c : cases) {
        const auto dims = static_cast<int64_t>(c.stride.size());
        SCOPED_TRACE(dims);
        const Tensor y = randn(c.y_shape, kDouble), w = randn(c.w_shape, kDouble);
        Tensor cy;
        if (dims == 1) cy = F::conv1d(y, w, {}, c.stride, c.padding, c.dilation, c.groups);
        if (dims == 2) cy = F::conv2d(y, w, {}, c.stride, c.padding, c.dilation, c.groups);
        if (dims == 3) cy = F::conv3d(y, w, {}, c.stride, c.padding, c.dilation, c.groups);
        const Tensor x = randn(cy.sizes(), kDouble);
        // the output padding that gives back y's spatial size
        std::vector<int64_t> op;
        for (int64_t d = 0; d < dims; ++d) {
            const auto k = static_cast<size_t>(d);
            op.push_back(y.size(2 + d) - ((x.size(2 + d) - 1) * c.stride[k] - 2 * c.padding[k] +
                                          c.dilation[k] * (w.size(2 + d) - 1) + 1));
        }
        Tensor tx;
        if (dims == 1) tx = F::conv_transpose1d(x, w, {}, c.stride, c.padding, op, c.groups, c.dilation);
        if (dims == 2) tx = F::conv_transpose2d(x, w, {}, c.stride, c.padding, op, c.groups, c.dilation);
        if (dims == 3) tx = F::conv_transpose3d(x, w, {}, c.stride, c.padding, op, c.groups, c.dilation);
        ASSERT_EQ(tx.sizes(), y.sizes());
        EXPECT_NEAR((cy * x).sum().item<double>(), (y * tx).sum().item<double>(), 1e-9);
        // ... and the gradient of the convolution with respect to its input
        const Tensor yl = y.clone().requires_grad_(true);
        Tensor again;
        if (dims == 1) again = F::conv1d(yl, w, {}, c.stride, c.padding, c.dilation, c.groups);
        if (dims == 2) again = F::conv2d(yl, w, {}, c.stride, c.padding, c.dilation, c.groups);
        if (dims == 3) again = F::conv3d(yl, w, {}, c.stride, c.padding, c.dilation, c.groups);
        (again * x).sum().backward();
        EXPECT_TRUE(close(yl.grad(), tx, 1e-10, 1e-10));
    }
}

TEST(ConvTranspose, ShapesAndSpellings) {
    const Tensor x = randn({2, 3, 4, 5}), w = randn({3, 2, 3, 3}), b = randn({2});
    // (in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1
    EXPECT_EQ(F::conv_transpose2d(x, w, b, 2, 1, 1).sizes(), IntArrayRef({2, 2, 8, 10}));
    EXPECT_EQ(F::conv_transpose2d(x, w, {}, 1, 0, 0, 1, 2).sizes(), IntArrayRef({2, 2, 8, 9}));
    EXPECT_TRUE(F::conv_transpose2d(x, w, b, {2, 3}, {1, 0}, {1, 2}, 1, {2, 1})
                    .equal(F::conv_transpose2d(x, w, F::ConvTranspose2dFuncOptions().bias(b).stride({2, 3}).padding({1, 0})
                                                          .output_padding({1, 2}).dilation({2, 1}))));
    // unbatched = batched[0]; 1-D = 2-D with a height of 1; bias broadcast over channels
    EXPECT_TRUE(close(F::conv_transpose2d(x[1], w, b, 2), F::conv_transpose2d(x, w, b, 2)[1], 1e-6, 1e-6));
    const Tensor s = randn({2, 3, 6}), k = randn({3, 4, 2});
    EXPECT_TRUE(close(F::conv_transpose1d(s, k, {}, 2, 1),
                      F::conv_transpose2d(s.unsqueeze(2), k.unsqueeze(2), {}, {1, 2}, {0, 1}).squeeze(2), 1e-6, 1e-6));
    EXPECT_TRUE(close(F::conv_transpose2d(x, w, b) - F::conv_transpose2d(x, w), b.view({1, 2, 1, 1}).expand({2, 2, 6, 7}),
                      1e-5, 1e-5));
    EXPECT_EQ(F::conv_transpose3d(randn({1, 2, 3, 4, 5}), randn({2, 3, 2, 2, 2}), {}, 2).sizes(),
              IntArrayRef({1, 3, 6, 8, 10}));
    // a float64 bias with float32 input and weight is cast (as PyTorch)
    EXPECT_EQ(F::conv_transpose2d(x, w, b.to(kDouble)).scalar_type(), kFloat);
    EXPECT_TRUE(F::conv_transpose2d(x, w, b).is_contiguous());
    EXPECT_TRUE(F::conv_transpose2d(x, w, {}, 1, 1).is_contiguous());
}

// The output is the uncropped output (padding 0, output_padding 0) from `padding` on, zero past
// its end: every combination of padding and output padding (col2im crops the padding itself,
// or the uncropped output is cropped when the output padding reaches past the stride).
TEST(ConvTranspose, PaddingCropsTheUncroppedOutput) {
    const Tensor x = randn({2, 2, 3, 4}, kDouble), w = randn({2, 3, 3, 2}, kDouble);
    struct Case {
        int64_t stride, padding, output_padding, dilation;
    };
    for (const Case c : {Case{2, 1, 1, 1}, Case{1, 2, 2, 3}, Case{3, 2, 2, 1}, Case{1, 1, 0, 2}, Case{2, 3, 1, 1},
                         Case{4, 0, 3, 1}, Case{1, 3, 2, 4}}) {
        SCOPED_TRACE(::testing::Message() << c.stride << " " << c.padding << " " << c.output_padding << " " << c.dilation);
        const Tensor full = F::conv_transpose2d(x, w, {}, c.stride, 0, 0, 1, c.dilation);
        const Tensor out = F::conv_transpose2d(x, w, {}, c.stride, c.padding, c.output_padding, 1, c.dilation);
        const int64_t p = c.padding, ho = out.size(2), wo = out.size(3);
        const Tensor expected = F::pad(full, {-p, wo - (full.size(3) - p), -p, ho - (full.size(2) - p)});
        EXPECT_TRUE(close(out, expected, 1e-12, 1e-12));
    }
    // a padding larger than the uncropped output leaves only output_padding's zeros (and the bias)
    const Tensor b = tensor({0.5, -1.0});
    const Tensor zero_out = F::conv_transpose2d(ones({1, 1, 1, 1}), ones({1, 2, 1, 1}), b, 10, 2, 9);
    EXPECT_TRUE(zero_out.equal(b.view({1, 2, 1, 1}).expand({1, 2, 6, 6})));
}

TEST(ConvTranspose, Gradcheck) {
    EXPECT_TRUE(gradcheck([](const In& i) { return F::conv_transpose1d(i[0], i[1], i[2], 2, 1, 1, 1, 2); },
                          {rnd({2, 2, 4}, 21), rnd({2, 3, 3}, 22), rnd({3}, 23)}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::conv_transpose2d(i[0], i[1], i[2], {2, 1}, {1, 0}, {1, 0}, 2); },
                          {rnd({1, 4, 3, 3}, 24), rnd({4, 1, 3, 2}, 25), rnd({2}, 26)}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::conv_transpose2d(i[0], i[1], {}, 1, 0, 1, 1, 2); },
                          {rnd({1, 2, 3, 3}, 27), rnd({2, 2, 2, 2}, 28)}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::conv_transpose3d(i[0], i[1], i[2], {1, 2, 1}, {0, 1, 1}, {0, 1, 0}); },
                          {rnd({1, 2, 2, 3, 2}, 29), rnd({2, 2, 2, 2, 3}, 30), rnd({2}, 31)}));
    EXPECT_TRUE(gradgradcheck([](const In& i) { return F::conv_transpose2d(i[0], i[1], i[2], 2, 1, 1); },
                              {rnd({1, 2, 2, 3}, 32), rnd({2, 1, 3, 2}, 33), rnd({1}, 34)}));
}

TEST(ConvTranspose, PyTorchsErrors) {
    const Tensor x = randn({1, 3, 4, 4}), w = randn({3, 2, 3, 3});
    EXPECT_EQ(error_of([&] { F::conv_transpose2d(randn({5}), w); }),
              "Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got input of size: [5]");
    EXPECT_EQ(error_of([] { F::conv_transpose1d(randn({5}), randn({3, 2, 3})); }),
              "Expected 2D (unbatched) or 3D (batched) input to conv_transpose1d, but got input of size: [5]");
    EXPECT_EQ(error_of([] { F::conv_transpose3d(randn({2, 2, 2}), randn({3, 2, 3, 3, 3})); }),
              "Expected 4D (unbatched) or 5D (batched) input to conv_transpose3d, but got input of size: [2, 2, 2]");
    EXPECT_EQ(error_of([&] { F::conv_transpose2d(x, randn({3, 2, 3})); }),
              "weight should have 4 dimensions, but got weight of size [3, 2, 3]");
    EXPECT_EQ(error_of([&] { F::conv_transpose2d(x, w, {}, {1, 2, 3}); }),
              "expected stride to be a single integer value or a list of 2 values to match the convolution dimensions, "
              "but got stride=[1, 2, 3]");
    EXPECT_EQ(error_of([&] { F::conv_transpose2d(x, w, {}, 1, 0, 0, 0); }), "non-positive groups is not supported");
    EXPECT_EQ(error_of([&] { F::conv_transpose2d(x, w, {}, 0); }), "non-positive stride is not supported");
    EXPECT_EQ(error_of([&] { F::conv_transpose2d(x, w, {}, 1, -1); }), "negative padding is not supported");
    EXPECT_EQ(error_of([&] { F::conv_transpose2d(x, w, {}, 1, 0, -1); }), "negative output_padding is not supported");
    EXPECT_EQ(error_of([&] { F::conv_transpose2d(x, w, {}, 1, 0, 0, 1, 0); }),
              "dilation should be greater than zero, but got dilation_height: 0, dilation_width: 0");
    EXPECT_EQ(error_of([] { F::conv_transpose3d(randn({1, 3, 2, 2, 2}), randn({3, 2, 3, 3, 3}), {}, 1, 0, 0, 1, 0); }),
              "dilation should be greater than zero, but got dilation_depth: 0, dilation_height: 0, dilation_width: 0");
    EXPECT_EQ(error_of([&] { F::conv_transpose2d(x, w, {}, 1, 0, {0, 1}); }),
              "output padding must be smaller than either stride or dilation, but got output_padding_height: 0 "
              "output_padding_width: 1 stride_height: 1 stride_width: 1 dilation_height: 1 dilation_width: 1");
    EXPECT_EQ(error_of([] { F::conv_transpose1d(randn({1, 3, 5}), randn({3, 2, 3}), {}, 1, 0, 1); }),
              "output padding must be smaller than either stride or dilation, but got output_padding_height: 0 "
              "output_padding_width: 1 stride_height: 1 stride_width: 1 dilation_height: 1 dilation_width: 1");
    EXPECT_EQ(error_of([] { F::conv_transpose3d(randn({1, 3, 2, 2, 2}), randn({3, 2, 3, 3, 3}), {}, 1, 0, {1, 0, 0}); }),
              "output padding must be smaller than either stride or dilation, but got output_padding_depth: 1 "
              "output_padding_height: 0 output_padding_width: 0 stride_depth: 1 stride_height: 1 stride_width: 1 "
              "dilation_depth: 1 dilation_height: 1 dilation_width: 1");
    EXPECT_EQ(error_of([&] { F::conv_transpose2d(x, w, {}, 1, 4); }),
              "Given input size per channel: (4 x 4). Calculated output size per channel: (-2 x -2). Output size is too "
              "small");
    EXPECT_EQ(error_of([] { F::conv_transpose3d(randn({1, 3, 2, 2, 2}), randn({3, 2, 3, 3, 3}), {}, 1, {3, 0, 0}); }),
              "Given input size per channel: (2 x 2 x 2). Calculated output size per channel: (-2 x 4 x 4). Output "
              "size is too small");
    EXPECT_EQ(error_of([] { F::conv_transpose1d(randn({1, 3, 5}), randn({3, 2, 3}), {}, 1, 4); }),
              "Given input size per channel: (1 x 5). Calculated output size per channel: (1 x -1). Output size is too "
              "small");
    EXPECT_EQ(error_of([&] { F::conv_transpose2d(x, w, randn({3})); }),
              "Given transposed=1, weight of size [3, 2, 3, 3], expected bias to be 1-dimensional with 2 elements, but "
              "got bias of size [3] instead");
    EXPECT_EQ(error_of([&] { F::conv_transpose2d(x, w, {}, 1, 0, 0, 2); }),
              "Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of size [3, 2, 3, 3] "
              "instead");
    EXPECT_EQ(error_of([] { F::conv_transpose1d(randn({1, 4, 5}), randn({3, 2, 3})); }),
              "Given transposed=1, weight of size [3, 2, 3], expected input[1, 4, 5] to have 3 channels, but got 4 "
              "channels instead");
    EXPECT_EQ(error_of([&] { F::conv_transpose2d(x[0].unsqueeze(0).narrow(1, 0, 2), w); }),
              "Given transposed=1, weight of size [3, 2, 3, 3], expected input[1, 2, 4, 4] to have 3 channels, but got "
              "2 channels instead");
    EXPECT_EQ(error_of([&] { F::conv_transpose2d(x.to(kDouble), w); }),
              "Input type (" + x.to(kDouble).toString() + ") and weight type (" + w.toString() + ") should be the same");
}

}  // namespace
