// <torch/torch.h> over Ember: libtorch's namespaces and macros name Ember's, and the libtorch
// APIs added to Ember for PyTorch's example programs behave as libtorch's: the top-level
// (ATen) loss and dropout ops with an int64_t Reduction, nn::Dropout2d, nn::MSELoss,
// cuda::is_available / kCUDA, str, autograd::tensor_list.
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <type_traits>

#include "common/error_of.h"
#include "common/gradcheck.h"

namespace {

using ember::testing::error_of;
namespace F = ember::nn::functional;

static_assert(std::is_same_v<torch::Tensor, ember::Tensor>);
static_assert(std::is_same_v<at::Tensor, ember::Tensor>);
static_assert(std::is_same_v<torch::nn::Linear, ember::nn::Linear>);
static_assert(std::is_same_v<torch::optim::SGD, ember::optim::SGD>);
static_assert(std::is_same_v<torch::data::Example<>, ember::data::Example<>>);
static_assert(std::is_same_v<torch::autograd::tensor_list, torch::autograd::variable_list>);
static_assert(std::is_same_v<c10::ScalarType, ember::ScalarType>);
static_assert(std::is_same_v<torch::Device, ember::Device>);

struct TinyImpl : torch::nn::Module {
    TinyImpl() : fc(register_module("fc", torch::nn::Linear(2, 1))) {}
    torch::Tensor forward(const torch::Tensor& x) { return fc(x); }
    torch::nn::Linear fc;
};
TORCH_MODULE(Tiny);

struct TinyOptions {
    TORCH_ARG(int64_t, width) = 3;
};

TEST(TorchHeader, MacrosAreEmbers) {
    Tiny tiny;
    EXPECT_EQ(tiny(torch::ones({4, 2})).sizes().vec(), (std::vector<int64_t>{4, 1}));
    EXPECT_EQ(TinyOptions().width(5).width(), 5);
    EXPECT_EQ(error_of([] { TORCH_CHECK(1 + 1 == 3, "arithmetic says ", 2); }), "arithmetic says 2");
    EXPECT_EQ(error_of([] { TORCH_CHECK(false); }), "Expected false to be true, but got false.");
    EXPECT_EQ(error_of([] { AT_ASSERT(2 < 1); }), "Expected 2 < 1 to be true, but got false.");
    EXPECT_EQ(torch::str("dcgan-sample-", 3, ".pt"), "dcgan-sample-3.pt");
    EXPECT_EQ(torch::str(), "");
}

TEST(Device, NoCuda) {
    EXPECT_FALSE(torch::cuda::is_available());
    EXPECT_EQ(torch::cuda::device_count(), 0);
    EXPECT_EQ(torch::Device(torch::kCPU).type(), torch::kCPU);
    EXPECT_EQ(error_of([] { torch::Device device(torch::kCUDA); }),
              "Cannot use a CUDA device: Ember's C++ frontend runs on the CPU only "
              "(ember::cuda::is_available() is false)");
    EXPECT_EQ(error_of([] { (void)torch::ones({2}, torch::kCUDA); }),
              "Cannot use a CUDA device: Ember's C++ frontend runs on the CPU only "
              "(ember::cuda::is_available() is false)");
}

TEST(AtenOps, LossesTakeAnInt64Reduction) {
    torch::manual_seed(0);
    auto log_probs = torch::log_softmax(torch::randn({4, 3}), 1);
    auto target = torch::tensor({0, 2, 1, 2}, torch::kInt64);
    auto weight = torch::tensor({1.0f, 2.0f, 0.5f});
    EXPECT_TRUE(torch::allclose(torch::nll_loss(log_probs, target), F::nll_loss(log_probs, target)));
    EXPECT_TRUE(torch::allclose(torch::nll_loss(log_probs, target, /*weight=*/{}, torch::Reduction::Sum),
                                F::nll_loss(log_probs, target, F::NLLLossFuncOptions().reduction(torch::kSum))));
    EXPECT_TRUE(torch::allclose(
        torch::nll_loss(log_probs, target, weight, at::Reduction::None, /*ignore_index=*/2),
        F::nll_loss(log_probs, target,
                    F::NLLLossFuncOptions().weight(weight).reduction(torch::kNone).ignore_index(2))));
    // hand-computed: -(log_probs[0, 0] + log_probs[1, 2] + log_probs[2, 1] + log_probs[3, 2])
    const float total = -(log_probs[0][0] + log_probs[1][2] + log_probs[2][1] + log_probs[3][2]).item<float>();
    EXPECT_FLOAT_EQ(torch::nll_loss(log_probs, target, {}, torch::Reduction::Sum).item<float>(), total);

    auto x = torch::tensor({0.0f, 0.5f, 3.0f});
    auto y = torch::tensor({0.0f, 0.0f, 0.0f});
    // smooth L1 (beta 1): 0, 0.5 * 0.25, 3 - 0.5
    EXPECT_FLOAT_EQ(torch::smooth_l1_loss(x, y).item<float>(), (0.125f + 2.5f) / 3);
    EXPECT_FLOAT_EQ(torch::smooth_l1_loss(x, y, torch::Reduction::Sum, /*beta=*/2.0).item<float>(),
                    0.0625f + 2.0f);
    EXPECT_FLOAT_EQ(torch::mse_loss(x, y, torch::Reduction::Sum).item<float>(), 9.25f);

    auto p = torch::tensor({0.25f, 0.5f});
    auto t = torch::tensor({1.0f, 0.0f});
    const float bce = -(std::log(0.25f) + std::log(0.5f));
    EXPECT_FLOAT_EQ(torch::binary_cross_entropy(p, t).item<float>(), bce / 2);
    EXPECT_FLOAT_EQ(torch::binary_cross_entropy(p, t, torch::tensor({2.0f, 1.0f}), torch::Reduction::Sum).item<float>(),
                    -(2 * std::log(0.25f) + std::log(0.5f)));
    EXPECT_EQ(error_of([&] { (void)torch::mse_loss(x, y, 7); }), "7 is not a valid value for reduction");
}

TEST(AtenOps, Dropout) {
    auto x = torch::ones({1000});
    EXPECT_TRUE(torch::dropout(x, 0.5, /*train=*/false).is_same(x));
    torch::manual_seed(1);
    auto y = torch::dropout(x, 0.5, /*train=*/true);
    const auto zeros = (y == 0).sum().item<int64_t>();
    EXPECT_EQ(zeros + (y == 2).sum().item<int64_t>(), 1000);
    EXPECT_GT(zeros, 400);
    EXPECT_LT(zeros, 600);
}

// Every channel of (N, C, ...) is all zeros or all 1/(1-p) times the input.
void expect_channelwise(const torch::Tensor& input, const torch::Tensor& output, double p, int64_t* dropped) {
    const auto scale = static_cast<float>(1.0 / (1.0 - p));
    for (int64_t n = 0; n < input.size(0); ++n) {
        for (int64_t c = 0; c < input.size(1); ++c) {
            auto out = output[n][c];
            if ((out == 0).all().item<bool>()) {
                ++*dropped;
            } else {
                EXPECT_TRUE(torch::allclose(out, input[n][c] * scale));
            }
        }
    }
}

TEST(Dropout2d, ZeroesWholeChannels) {
    torch::manual_seed(0);
    auto x = torch::rand({8, 16, 3, 3}) + 0.5;
    torch::nn::Dropout2d drop(0.25);
    auto y = drop(x);
    int64_t dropped = 0;
    expect_channelwise(x, y, 0.25, &dropped);
    EXPECT_GT(dropped, 16);   // 128 channels, p = 0.25: 32 expected
    EXPECT_LT(dropped, 50);

    auto x3 = torch::rand({4, 8, 5}) + 0.5;  // (N, C, L)
    dropped = 0;
    expect_channelwise(x3, F::dropout2d(x3, 0.5), 0.5, &dropped);
    EXPECT_GT(dropped, 4);
    EXPECT_LT(dropped, 28);

    drop->eval();
    EXPECT_TRUE(drop(x).is_same(x));
    EXPECT_TRUE(torch::equal(F::dropout2d(x, 1.0), torch::zeros_like(x)));
    EXPECT_TRUE(F::dropout2d(x, 0.0).is_same(x));
}

TEST(Dropout2d, GradientIsTheSameMask) {
    torch::manual_seed(3);
    auto x = (torch::rand({2, 6, 2, 2}, torch::kFloat64) + 0.5).requires_grad_(true);
    auto y = F::dropout2d(x, 0.5);
    y.sum().backward();
    // d sum(x * noise) / dx = noise = y / x
    EXPECT_TRUE(torch::allclose(x.grad(), y.detach() / x.detach()));

    auto z = torch::ones({2, 3, 4});
    auto same = F::dropout2d(z, 0.5, /*training=*/true, /*inplace=*/true);
    EXPECT_TRUE(same.is_same(z));
}

TEST(Dropout2d, Gradcheck) {
    // The same mask at every evaluation (the generator reseeded), so finite differences apply.
    auto f = [](const std::vector<torch::Tensor>& in) {
        torch::manual_seed(11);
        return F::dropout2d(in[0], 0.4);
    };
    torch::manual_seed(2);
    EXPECT_TRUE(ember::testing::gradcheck(f, {torch::randn({3, 4, 2, 2}, torch::kFloat64)}));
    EXPECT_TRUE(ember::testing::gradgradcheck(f, {torch::randn({2, 3, 5}, torch::kFloat64)}));
}

TEST(Dropout2d, ErrorsAndRepr) {
    EXPECT_EQ(ember::testing::error_as<ember::ValueError>([] { torch::nn::Dropout2d(1.5); }),
              "dropout probability has to be between 0 and 1, but got 1.5");
    EXPECT_EQ(error_of([] { (void)F::dropout2d(torch::ones({3}), 0.5); }),
              "Feature dropout requires at least 2 dimensions in the input");
    std::ostringstream os;
    os << *torch::nn::Dropout2d(torch::nn::Dropout2dOptions().p(0.2));
    EXPECT_EQ(os.str(), "Dropout2d(p=0.2, inplace=False)");
}

TEST(MSELoss, ModuleIsTheFunctional) {
    torch::manual_seed(0);
    auto a = torch::randn({3, 4});
    auto b = torch::randn({3, 4});
    torch::nn::MSELoss mse;
    EXPECT_TRUE(torch::allclose(mse(a, b), ((a - b) * (a - b)).mean()));
    torch::nn::MSELoss total(torch::nn::MSELossOptions(torch::kSum));
    EXPECT_TRUE(torch::allclose(total(a, b), ((a - b) * (a - b)).sum()));
    std::ostringstream os;
    os << *mse;
    EXPECT_EQ(os.str(), "MSELoss()");
}

}  // namespace
