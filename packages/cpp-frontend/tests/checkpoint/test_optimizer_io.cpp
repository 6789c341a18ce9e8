// ember::save / ember::load of optimizers (libtorch's torch::save(optimizer, path)): a
// restored optimizer continues exactly as the original would have, the file's layout is
// Python's optimizer.state_dict() flattened, errors before anything changes; and of single
// tensors.
#include "checkpoint/checkpoint_test_util.h"
#include "ember/autograd.h"
#include "ember/checkpoint.h"
#include "ember/factories.h"
#include "ember/nn.h"
#include "ember/ops.h"
#include "ember/optim.h"

namespace {

using namespace ember_checkpoint_test;  // NOLINT
using ember::Tensor;
namespace nn = ember::nn;
namespace optim = ember::optim;

// Steps of `opt` on the loss sum((model(x) - 1)^2) for a fixed x.
void train(nn::Linear& model, optim::Optimizer& opt, int steps) {
    const Tensor x = ember::arange(12, ember::kFloat32).view({4, 3}) / 10;
    for (int i = 0; i < steps; ++i) {
        opt.zero_grad();
        ((model(x) - 1) * (model(x) - 1)).sum().backward();
        opt.step();
    }
}

void copy_weights(nn::Linear& to, nn::Linear& from) {
    ember::NoGradGuard guard;
    to->weight.copy_(from->weight);
    to->bias.copy_(from->bias);
}

template <typename Opt, typename Options>
void expect_restored_optimizer_continues(Options options, const std::string& file = "opt.safetensors") {
    TempDir dir;
    const std::string path = dir.path() + "/" + file;
    ember::manual_seed(0);
    nn::Linear a(3, 2);
    Opt opt_a(a->parameters(), options);
    train(a, opt_a, 3);
    ember::save(opt_a, path);

    nn::Linear b(3, 2);
    copy_weights(b, a);
    Opt opt_b(b->parameters(), options);
    ember::load(opt_b, path);
    train(a, opt_a, 2);
    train(b, opt_b, 2);
    EXPECT_TRUE(ember::equal(a->weight, b->weight));
    EXPECT_TRUE(ember::equal(a->bias, b->bias));

    // Without the state the continuation differs (the test can tell).
    nn::Linear c(3, 2);
    copy_weights(c, b);
    Opt fresh(c->parameters(), options);
    train(c, fresh, 1);
    train(b, opt_b, 1);
    EXPECT_FALSE(ember::equal(b->weight, c->weight));
}

TEST(OptimizerIO, RestoredAdamContinuesExactly) {
    expect_restored_optimizer_continues<optim::Adam>(optim::AdamOptions(0.05).betas(std::make_tuple(0.5, 0.9)));
}

TEST(OptimizerIO, RestoredSGDWithMomentumContinuesExactly) {
    expect_restored_optimizer_continues<optim::SGD>(optim::SGDOptions(0.05).momentum(0.9));
}

TEST(OptimizerIO, LayoutIsPythonsStateDict) {
    TempDir dir;
    const std::string path = dir.path() + "/adam.safetensors";
    nn::Linear model(3, 2);
    optim::Adam opt(model->parameters(), optim::AdamOptions(0.01));
    train(model, opt, 2);
    opt.param_groups()[0].options().set_lr(0.005);
    ember::save(opt, path);
    ember::StateDict sd = ember::load_state_dict(path);
    // (a safetensors file lists its tensors sorted by name)
    EXPECT_EQ(sd.keys(), (std::vector<std::string>{"param_groups.0.lr", "param_groups.0.params", "state.0.exp_avg",
                                                   "state.0.exp_avg_sq", "state.0.step", "state.1.exp_avg",
                                                   "state.1.exp_avg_sq", "state.1.step"}));
    EXPECT_EQ(sd["state.1.step"].item<float>(), 2.0f);
    EXPECT_EQ(sd["state.1.step"].scalar_type(), ember::kFloat32);
    EXPECT_TRUE(ember::equal(sd["param_groups.0.params"], ember::tensor({0, 1}, ember::kInt64)));
    EXPECT_DOUBLE_EQ(sd["param_groups.0.lr"].item<double>(), 0.005);

    optim::Adam other(nn::Linear(3, 2)->parameters(), optim::AdamOptions(0.01));
    ember::load(other, path);
    EXPECT_DOUBLE_EQ(other.param_groups()[0].options().get_lr(), 0.005);
    EXPECT_EQ(other.state().size(), 2u);
}

TEST(OptimizerIO, Errors) {
    TempDir dir;
    const std::string path = dir.path() + "/sgd.safetensors";
    nn::Linear model(3, 2);
    optim::SGD opt(model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
    train(model, opt, 1);
    ember::save(opt, path);

    nn::Linear wide(4, 2);
    optim::SGD wrong_shape(wide->parameters(), optim::SGDOptions(0.1).momentum(0.9));
    EXPECT_EQ(error_of([&] { ember::load(wrong_shape, path); }),
              path + ": the state 'momentum_buffer' of parameter 0 has shape [2, 3], the parameter [2, 4]");
    EXPECT_TRUE(wrong_shape.state().empty());  // nothing changed

    optim::SGD one_param(std::vector<Tensor>{model->weight}, optim::SGDOptions(0.1));
    EXPECT_EQ(error_of([&] { ember::load(one_param, path); }),
              path + ": loaded state dict contains a parameter group that doesn't match the size of optimizer's group");
    optim::SGD two_groups(std::vector<optim::OptimizerParamGroup>{{{model->weight}}, {{model->bias}}},
                          optim::SGDOptions(0.1));
    EXPECT_EQ(error_of([&] { ember::load(two_groups, path); }),
              path + ": loaded state dict has a different number of parameter groups");
}

// A .pt path gets a PyTorch zip checkpoint of the same flat layout, which load reads back.
TEST(OptimizerIO, PtFilesAreTorchCheckpointsThatRestoreExactly) {
    expect_restored_optimizer_continues<optim::Adam>(optim::AdamOptions(0.05).amsgrad(true), "adam.pt");
    expect_restored_optimizer_continues<optim::SGD>(optim::SGDOptions(0.1).momentum(0.9), "sgd.pth");
    TempDir dir;
    ember::manual_seed(0);
    nn::Linear model(3, 2);
    optim::SGD opt(model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
    train(model, opt, 1);
    const std::string path = dir.path() + "/sgd.pt";
    ember::save(opt, path);
    EXPECT_EQ(es::detect_checkpoint_format(path), es::CheckpointFormat::TorchZip);
    // Python's nested layout (tests/optim/test_optim_state_dict.cpp checks it in detail)
    const es::Value saved = es::read_torch_object(path);
    ASSERT_NE(saved.find("state"), nullptr);
    EXPECT_EQ(saved.find("state")->dict_size(), 2u);
    ASSERT_NE(saved.find("param_groups"), nullptr);
    EXPECT_EQ(saved.find("param_groups")->items.size(), 1u);
}

TEST(TensorIO, RoundTrip) {
    TempDir dir;
    const std::string path = dir.path() + "/t.safetensors";
    const Tensor t = ember::arange(6, ember::kFloat64).view({2, 3});
    ember::save(t, path);
    Tensor back;
    ember::load(back, path);
    EXPECT_TRUE(ember::equal(back, t));
    EXPECT_EQ(ember::load_state_dict(path).keys(), (std::vector<std::string>{"tensor"}));
    // a .pt path: a PyTorch checkpoint of {"tensor": t}; a transposed view is written contiguous
    ember::save(t.t(), dir.path() + "/t.pt");
    EXPECT_EQ(es::detect_checkpoint_format(dir.path() + "/t.pt"), es::CheckpointFormat::TorchZip);
    ember::load(back, dir.path() + "/t.pt");
    EXPECT_TRUE(ember::equal(back, t.t()));
    EXPECT_TRUE(back.is_contiguous());

    ember::StateDict two;
    two.insert("a", t);
    two.insert("b", t);
    ember::save(two, path);
    EXPECT_EQ(error_of([&] { ember::load(back, path); }),
              path + ": expected one tensor, or one named 'tensor', but the file holds 2");
    EXPECT_EQ(error_of([&] { ember::save(Tensor(), path); }), "cannot save an undefined tensor");
}

}  // namespace
