// Convolutions with Python's string padding (padding="same" / "valid", ember::kSame /
// kValid in the options; Conv3d) and adaptive max pooling (1-D to 3-D, functional with and
// without indices, the AdaptiveMaxPool modules): against Python Ember on the same inputs
// (golden_conv_pool.py: outputs, indices and gradients), against references built from
// other ops, float64 gradient checks, and PyTorch's errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
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

// The arrays of conv_pool.safetensors (golden_conv_pool.py) by name (fresh copies).
Tensor cp_golden(const std::string& name) { return ember::testing::golden_tensor("conv_pool.safetensors", name); }

using Inputs = std::map<std::string, Tensor>;

// Runs fn on the case's inputs (requiring grad), compares its output (and indices) and the
// gradients of sum(out * proj) with Python's.
void check_case(const std::string& name, const std::vector<std::string>& inputs,
                const std::function<std::tuple<Tensor, Tensor>(Inputs&)>& fn, bool grads = true) {
    SCOPED_TRACE(name);
    Inputs in;
    for (const std::string& k : inputs) in[k] = cp_golden(name + "." + k).requires_grad_(grads);
    auto [out, indices] = fn(in);
    EXPECT_TRUE(close(out, cp_golden(name + ".out"), 1e-5, 1e-5)) << "output";
    if (indices.defined()) {
        EXPECT_EQ(indices.scalar_type(), kLong);
        EXPECT_TRUE(indices.equal(cp_golden(name + ".indices"))) << "indices";
    }
    if (!grads) return;
    (out * cp_golden(name + ".proj")).sum().backward();
    for (const std::string& k : inputs) {
        EXPECT_TRUE(close(in[k].grad(), cp_golden(name + ".grad." + k), 1e-5, 1e-5)) << "gradient of " << k;
    }
}

std::tuple<Tensor, Tensor> only(Tensor t) { return {std::move(t), Tensor()}; }

Tensor rnd(IntArrayRef shape, uint64_t seed) {
    Generator g(seed);
    return rand(shape, g, kFloat64) * 2 - 1;
}

// ---------------------------------------------------------------------- string padding

TEST(ConvPaddingGolden, MatchesPython) {
    EMBER_REQUIRE_GOLDEN();
    check_case("same1d", {"x", "w", "b"}, [](Inputs& i) { return only(F::conv1d(i["x"], i["w"], i["b"], 1, "same")); });
    check_case("same1d_dil", {"x", "w"}, [](Inputs& i) {
        return only(F::conv1d(i["x"], i["w"], F::Conv1dFuncOptions().padding(kSame).dilation(3)));
    });
    check_case("same2d", {"x", "w", "b"}, [](Inputs& i) {
        return only(F::conv2d(i["x"], i["w"], F::Conv2dFuncOptions().bias(i["b"]).padding(kSame).groups(2)));
    });
    check_case("same2d_dil", {"x", "w"},
               [](Inputs& i) { return only(ember::conv2d(i["x"], i["w"], {}, 1, std::string("same"), {2, 3})); });
    check_case("valid2d", {"x", "w", "b"}, [](Inputs& i) {
        return only(F::conv2d(i["x"], i["w"], F::Conv2dFuncOptions().bias(i["b"]).padding(kValid).dilation(2)));
    });
    check_case("same3d", {"x", "w", "b"}, [](Inputs& i) {
        return only(F::conv3d(i["x"], i["w"], F::Conv3dFuncOptions().bias(i["b"]).padding(kSame)));
    });
    check_case("conv3d", {"x", "w", "b"},
               [](Inputs& i) { return only(F::conv3d(i["x"], i["w"], i["b"], {1, 2, 1}, {1, 0, 2}, {2, 1, 1}, 2)); });
    check_case("valid3d_unbatched", {"x", "w"}, [](Inputs& i) { return only(F::conv3d(i["x"], i["w"], {}, 1, "valid")); });
}

// "same" keeps the size; an odd total padding puts its extra element after the input, which
// is the convolution of the input padded by hand.
TEST(ConvPadding, SameIsExplicitAsymmetricPadding) {
    const Tensor x = randn({2, 3, 7, 6}), w = randn({4, 3, 4, 3}), b = randn({4});
    const Tensor same = F::conv2d(x, w, b, 1, "same");
    EXPECT_EQ(same.sizes(), IntArrayRef({2, 4, 7, 6}));
    // kernel 4 (total 3): 1 before, 2 after along H; kernel 3: 1 on each side along W
    Tensor padded = zeros({2, 3, 10, 8});
    padded.narrow(2, 1, 7).narrow(3, 1, 6).copy_(x);
    EXPECT_TRUE(close(same, F::conv2d(padded, w, b), 1e-5, 1e-5));
    // dilation 2 with kernel 4: total 6, symmetric
    const Tensor d = F::conv2d(x, w, b, 1, "same", 2);
    EXPECT_TRUE(close(d, F::conv2d(x, w, b, 1, {3, 2}, 2), 1e-5, 1e-5));
    EXPECT_TRUE(F::conv2d(x, w, b, 1, "valid").equal(F::conv2d(x, w, b)));
    // 1-D and unbatched inputs
    const Tensor s = randn({3, 9}), k = randn({2, 3, 2});
    EXPECT_EQ(F::conv1d(s, k, {}, 1, "same").sizes(), IntArrayRef({2, 9}));
    const Tensor v = randn({2, 5, 4, 6}), kv = randn({3, 2, 2, 2, 4});
    EXPECT_EQ(F::conv3d(v, kv, {}, 1, "same").sizes(), IntArrayRef({3, 5, 4, 6}));
}

TEST(ConvPadding, Gradcheck) {
    EXPECT_TRUE(gradcheck([](const In& i) { return F::conv2d(i[0], i[1], i[2], 1, "same"); },
                          {rnd({1, 2, 4, 5}, 1), rnd({3, 2, 2, 3}, 2), rnd({3}, 3)}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::conv1d(i[0], i[1], F::Conv1dFuncOptions().padding(kSame).dilation(2)); },
                          {rnd({2, 2, 6}, 4), rnd({2, 2, 3}, 5)}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::conv3d(i[0], i[1], i[2], 1, "same"); },
                          {rnd({1, 2, 3, 4, 3}, 6), rnd({2, 2, 2, 2, 3}, 7), rnd({2}, 8)}));
    EXPECT_TRUE(gradgradcheck([](const In& i) { return F::conv2d(i[0], i[1], {}, 1, "same"); },
                              {rnd({1, 1, 3, 4}, 9), rnd({2, 1, 2, 2}, 10)}));
}

TEST(ConvPadding, PyTorchsErrors) {
    const Tensor x = randn({1, 2, 5, 5}), w = randn({3, 2, 3, 3});
    EXPECT_EQ(error_of([&] { F::conv2d(x, w, {}, 2, "same"); }), "padding='same' is not supported for strided convolutions");
    EXPECT_EQ(error_of([&] { F::conv2d(x, w, F::Conv2dFuncOptions().stride({1, 2}).padding(kSame)); }),
              "padding='same' is not supported for strided convolutions");
    EXPECT_EQ(error_of([&] { F::conv2d(x, w, {}, 1, "full"); }), "Invalid padding string: 'full'");
    EXPECT_EQ(error_of([] { nn::Conv2d(nn::Conv2dOptions(2, 3, 3).stride(2).padding(kSame)); }),
              "padding='same' is not supported for strided convolutions");
    EXPECT_THROW(nn::Conv1d(nn::Conv1dOptions(2, 3, 3).stride(2).padding(kSame)), ValueError);
    // strided "valid" is fine
    EXPECT_EQ(F::conv2d(x, w, {}, 2, "valid").sizes(), IntArrayRef({1, 3, 2, 2}));
}

TEST(ConvPadding, Modules) {
    manual_seed(0);
    nn::Conv2d same(nn::Conv2dOptions(2, 4, {4, 3}).padding(kSame).dilation({1, 2}));
    const Tensor x = randn({3, 2, 6, 7});
    const Tensor y = same(x);
    EXPECT_EQ(y.sizes(), IntArrayRef({3, 4, 6, 7}));
    EXPECT_TRUE(close(y, F::conv2d(x, same->weight, same->bias, 1, "same", {1, 2}), 1e-6, 1e-6));
    EXPECT_EQ(same->extra_repr(), "2, 4, kernel_size=(4, 3), stride=(1, 1), padding=same, dilation=(1, 2)");
    nn::Conv1d valid(nn::Conv1dOptions(2, 2, 3).padding(kValid).stride(2).bias(false));
    EXPECT_EQ(valid->extra_repr(), "2, 2, kernel_size=(3,), stride=(2,), padding=valid, bias=False");
    EXPECT_EQ(valid(randn({1, 2, 9})).sizes(), IntArrayRef({1, 2, 4}));
    // Conv3d: Python's parameter shapes and names, numbers or strings
    nn::Conv3d c3(nn::Conv3dOptions(2, 6, {2, 3, 4}).padding(kSame).groups(2));
    EXPECT_EQ(c3->weight.sizes(), IntArrayRef({6, 1, 2, 3, 4}));
    EXPECT_EQ(c3->named_parameters().keys(), (std::vector<std::string>{"weight", "bias"}));
    EXPECT_EQ(c3(randn({1, 2, 5, 6, 7})).sizes(), IntArrayRef({1, 6, 5, 6, 7}));
    nn::Conv3d plain(nn::Conv3dOptions(1, 2, 3).stride(2).padding(1));
    EXPECT_EQ(plain(randn({1, 1, 5, 5, 5})).sizes(), IntArrayRef({1, 2, 3, 3, 3}));
    std::ostringstream os;
    os << *plain;
    EXPECT_EQ(os.str(), "Conv3d(1, 2, kernel_size=(3, 3, 3), stride=(2, 2, 2), padding=(1, 1, 1))");
    // the options keep libtorch's variant
    EXPECT_TRUE(std::holds_alternative<enumtype::kSame>(same->options.padding()));
    EXPECT_EQ(nn::Conv2dOptions(1, 2, 3).padding({1, 2}).padding(), nn::ExpandingArray<2>({1, 2}));
}

// ---------------------------------------------------------------------- adaptive max pool

TEST(AdaptiveMaxPoolGolden, MatchesPython) {
    EMBER_REQUIRE_GOLDEN();
    check_case("amp1d", {"x"}, [](Inputs& i) { return F::adaptive_max_pool1d_with_indices(i["x"], 4); });
    check_case("amp1d_up", {"x"}, [](Inputs& i) {
        return F::adaptive_max_pool1d_with_indices(i["x"], F::AdaptiveMaxPool1dFuncOptions(7));
    });
    check_case("amp2d", {"x"}, [](Inputs& i) { return F::adaptive_max_pool2d_with_indices(i["x"], {3, 4}); });
    check_case("amp2d_none", {"x"}, [](Inputs& i) {
        return F::adaptive_max_pool2d_with_indices(i["x"], F::AdaptiveMaxPool2dFuncOptions({std::nullopt, 2}));
    });
    check_case("amp2d_ties", {"x"}, [](Inputs& i) {
        nn::AdaptiveMaxPool2d pool(nn::AdaptiveMaxPool2dOptions({4, 3}));
        return pool->forward_with_indices(i["x"]);
    });
    check_case("amp3d", {"x"}, [](Inputs& i) { return ember::adaptive_max_pool3d(i["x"], {2, 3, 4}); });
    check_case("amp2d_nan", {"x"}, [](Inputs& i) { return F::adaptive_max_pool2d_with_indices(i["x"], 2); }, false);
}

// Each output is the max of its window [floor(i X / Y), ceil((i + 1) X / Y)), found by
// slicing; the index points at that value.
TEST(AdaptiveMaxPool, WindowsAndIndices) {
    const Tensor x = randn({2, 3, 7, 10});
    auto [out, idx] = F::adaptive_max_pool2d_with_indices(x, {3, 4});
    ASSERT_EQ(out.sizes(), IntArrayRef({2, 3, 3, 4}));
    for (int64_t i = 0; i < 3; ++i) {
        for (int64_t j = 0; j < 4; ++j) {
            const int64_t h0 = i * 7 / 3, h1 = ((i + 1) * 7 + 2) / 3, w0 = j * 10 / 4, w1 = ((j + 1) * 10 + 3) / 4;
            const Tensor window = x.narrow(2, h0, h1 - h0).narrow(3, w0, w1 - w0).flatten(2);
            EXPECT_TRUE(out.select(3, j).select(2, i).equal(window.amax({2}))) << i << ", " << j;
        }
    }
    EXPECT_TRUE(x.flatten(2).gather(2, idx.flatten(2)).view({2, 3, 3, 4}).equal(out));
    EXPECT_TRUE(F::adaptive_max_pool2d(x, {3, 4}).equal(out));
    // unbatched inputs; output sizes larger than the input; 1-D and 3-D
    auto [u, ui] = F::adaptive_max_pool2d_with_indices(x[0], {3, 4});
    EXPECT_TRUE(u.equal(out[0]) && ui.equal(idx[0]));
    EXPECT_EQ(F::adaptive_max_pool1d(randn({2, 3}), 5).sizes(), IntArrayRef({2, 5}));
    const Tensor v = randn({1, 2, 4, 5, 6});
    auto [v_out, v_idx] = F::adaptive_max_pool3d_with_indices(v, {1, 1, 1});
    EXPECT_TRUE(v_out.flatten(2).squeeze(2).equal(v.flatten(2).amax({2})));
    EXPECT_TRUE(v_idx.flatten(2).squeeze(2).equal(v.flatten(2).argmax(2)));
    // float64 and float16 compute; integers do not (as PyTorch)
    EXPECT_EQ(F::adaptive_max_pool2d(x.to(kDouble), 2).scalar_type(), kDouble);
    EXPECT_TRUE(F::adaptive_max_pool2d(x.to(kHalf), 2).to(kFloat).equal(F::adaptive_max_pool2d(x.to(kHalf).to(kFloat), 2)));
}

TEST(AdaptiveMaxPool, GradientGoesToTheArgmax) {
    const Tensor x = randn({1, 2, 5, 5}).requires_grad_(true);
    auto [out, idx] = F::adaptive_max_pool2d_with_indices(x, {2, 2});
    out.sum().backward();
    // the overlapping windows (5 -> 2: [0, 3) and [2, 5)) may pick one element twice
    const Tensor expected = zeros({1, 2, 25}).scatter_add(2, idx.flatten(2), ones({1, 2, 4})).view({1, 2, 5, 5});
    EXPECT_TRUE(x.grad().equal(expected));
    EXPECT_EQ(out.grad_fn()->name(), "AdaptiveMaxPool2DBackward0");
    EXPECT_TRUE(gradcheck([](const In& i) { return F::adaptive_max_pool1d(i[0], 3); }, {rnd({2, 3, 8}, 11)}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::adaptive_max_pool2d(i[0], {3, 2}); }, {rnd({1, 2, 5, 7}, 12)}));
    EXPECT_TRUE(gradcheck([](const In& i) { return F::adaptive_max_pool3d(i[0], {2, 3, 2}); }, {rnd({1, 1, 4, 5, 3}, 13)}));
    EXPECT_TRUE(gradgradcheck([](const In& i) { return F::adaptive_max_pool2d(i[0], 2); }, {rnd({1, 1, 4, 5}, 14)}));
}

TEST(AdaptiveMaxPool, NaNAndTies) {
    Tensor x = zeros({1, 1, 4});
    x.index_put_({0, 0, 1}, std::numeric_limits<float>::quiet_NaN());
    x.index_put_({0, 0, 3}, std::numeric_limits<float>::quiet_NaN());
    auto [out, idx] = F::adaptive_max_pool1d_with_indices(x, 1);
    EXPECT_TRUE(std::isnan(out.item<float>()));
    EXPECT_EQ(idx.item<int64_t>(), 3);  // the last NaN, as PyTorch
    auto [t_out, t_idx] = F::adaptive_max_pool1d_with_indices(ones({1, 4}), 1);
    EXPECT_EQ(t_idx.item<int64_t>(), 0);  // the first of equal maxima
}

TEST(AdaptiveMaxPool, PyTorchsErrors) {
    EXPECT_EQ(error_of([] { F::adaptive_max_pool2d(randn({4, 4}), 2); }),
              "adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: [4, 4]");
    EXPECT_EQ(error_of([] { F::adaptive_max_pool1d(randn({4}), 2); }),
              "Expected 2 to 3 dimensions, but got 1-dimensional tensor for argument #1 'self' (while checking arguments "
              "for adaptive_max_pool1d)");
    EXPECT_EQ(error_of([] { F::adaptive_max_pool3d(zeros({1, 2, 0, 3, 3}), 2); }),
              "adaptive_max_pool3d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes "
              "[1, 2, 0, 3, 3] with dimension 2 being empty");
    EXPECT_EQ(error_of([] { F::adaptive_max_pool2d(ones({1, 3, 3}, kLong), 2); }),
              "\"adaptive_max_pool2d\" not implemented for 'Long'");
}

TEST(AdaptiveMaxPool, Modules) {
    const Tensor x = randn({2, 3, 6, 8});
    nn::AdaptiveMaxPool2d pool(nn::AdaptiveMaxPool2dOptions({3, std::nullopt}));
    EXPECT_EQ(pool(x).sizes(), IntArrayRef({2, 3, 3, 8}));
    auto [values, indices] = pool->forward_with_indices(x);
    EXPECT_TRUE(values.equal(F::adaptive_max_pool2d(x, {3, 8})));
    EXPECT_EQ(pool->extra_repr(), "output_size=(3, None)");
    std::ostringstream os;
    os << *nn::AdaptiveMaxPool1d(4);
    EXPECT_EQ(os.str(), "AdaptiveMaxPool1d(output_size=4)");
    nn::AdaptiveMaxPool3d pool3(nn::AdaptiveMaxPool3dOptions(2));
    EXPECT_EQ(pool3->extra_repr(), "output_size=2");
    EXPECT_EQ(pool3(randn({1, 2, 5, 5, 5})).sizes(), IntArrayRef({1, 2, 2, 2, 2}));
    EXPECT_TRUE(pool3->parameters().empty());
    // in a Sequential, as Python's nn.AdaptiveMaxPool2d(1) + Flatten after a convolution
    nn::Sequential net(nn::Conv2d(nn::Conv2dOptions(3, 4, 3).padding(kSame)), nn::AdaptiveMaxPool2d(1), nn::Flatten());
    EXPECT_EQ(net->forward(x).sizes(), IntArrayRef({2, 4}));
}

}  // namespace
