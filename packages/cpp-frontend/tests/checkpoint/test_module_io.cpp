// ember::save / ember::load of modules: Python-written weights into C++ modules, C++ round
// trips, and Python's load_state_dict errors.
#include <cstring>
#include <fstream>
#include <sstream>

#include "checkpoint/checkpoint_test_util.h"
#include "ember/autograd.h"
#include "ember/checkpoint.h"
#include "ember/nn.h"

namespace {

using namespace ember_checkpoint_test;  // NOLINT
using ember::StateDict;
using ember::Tensor;
namespace nn = ember::nn;

// The Net of golden_checkpoint.py: features (Conv2d, BatchNorm2d, ReLU, MaxPool2d, Flatten)
// and a Linear head of `classes` outputs.
struct NetImpl : nn::Module {
    explicit NetImpl(int64_t classes = 3) {
        features = register_module(
            "features", nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 4, 3).padding(1)),
                                       nn::BatchNorm2d(nn::BatchNorm2dOptions(4)), nn::ReLU(),
                                       nn::MaxPool2d(2), nn::Flatten()));
        head = register_module("head", nn::Linear(4 * 4 * 4, classes));
    }
    Tensor forward(const Tensor& x) { return head(features->forward(x)); }
    nn::Sequential features{nullptr};
    nn::Linear head{nullptr};
};
EMBER_MODULE(Net);

// golden_checkpoint.py's Wrong: a head of 5 outputs and a parameter the checkpoint lacks.
struct WrongImpl : NetImpl {
    WrongImpl() : NetImpl(5) { scale = register_parameter("scale", ember::ones({1})); }
    Tensor scale;
};

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

TEST(ModuleIO, PythonWeightsRunInCpp) {
    EMBER_CHECKPOINT_GOLDEN(golden);
    StateDict io = ember::load_state_dict(golden + "/modules/net_io.safetensors");
    StateDict expected = ember::load_state_dict(golden + "/modules/net.safetensors");
    std::vector<std::string> files = {"net.safetensors", "net.pt", "net_deflated.pt"};
    if (file_exists(golden + "/modules/net_torch.pt")) files.push_back("net_torch.pt");
    for (const auto& name : files) {
        SCOPED_TRACE(name);
        Net net;
        auto keys = ember::load(net, golden + "/modules/" + name);
        EXPECT_TRUE(keys.empty());
        StateDict sd = net->state_dict();
        ASSERT_EQ(sd.keys(), (std::vector<std::string>{
                                 "features.0.weight", "features.0.bias", "features.1.weight",
                                 "features.1.bias", "features.1.running_mean", "features.1.running_var",
                                 "features.1.num_batches_tracked", "head.weight", "head.bias"}));
        for (const auto& item : sd) EXPECT_TRUE(same_bits(item.value(), expected[item.key()])) << item.key();
        net->eval();
        ember::NoGradGuard no_grad;
        Tensor y = net->forward(io["x"]);
        EXPECT_TRUE(y.allclose(io["y"], 1e-5, 1e-6)) << y << io["y"];
    }
}

TEST(ModuleIO, LoadCopiesInPlace) {
    EMBER_CHECKPOINT_GOLDEN(golden);
    Net net;
    Tensor weight = net->head->weight;
    void* data = weight.data_ptr();
    auto params_before = net->parameters();
    ember::load(net, golden + "/modules/net.safetensors");
    EXPECT_TRUE(net->head->weight.is_same(weight));
    EXPECT_EQ(net->head->weight.data_ptr(), data);
    EXPECT_TRUE(weight.requires_grad());
    EXPECT_TRUE(weight.is_leaf());
    auto params_after = net->parameters();
    ASSERT_EQ(params_before.size(), params_after.size());
    for (std::size_t i = 0; i < params_before.size(); ++i) EXPECT_TRUE(params_before[i].is_same(params_after[i]));
    // the values are the file's, and gradients still flow to the same tensors
    EXPECT_TRUE(same_bits(weight, ember::load_state_dict(golden + "/modules/net.safetensors")["head.weight"]));
    net->forward(ember::randn({2, 1, 8, 8})).sum().backward();
    EXPECT_TRUE(weight.grad().defined());
}

TEST(ModuleIO, ConvertsToTheModulesDtype) {
    EMBER_CHECKPOINT_GOLDEN(golden);
    Net net;
    net->to(ember::kFloat64);
    ember::load(net, golden + "/modules/net.pt");
    StateDict file = ember::load_state_dict(golden + "/modules/net.pt");
    for (const auto& item : net->state_dict()) {
        SCOPED_TRACE(item.key());
        const Tensor& t = item.value();
        EXPECT_EQ(t.scalar_type(), item.key() == "features.1.num_batches_tracked" ? ember::kInt64 : ember::kFloat64);
        EXPECT_TRUE(t.equal(file[item.key()].to(t.scalar_type())));
    }
}

TEST(ModuleIO, SaveLoadRoundTripIsBitExact) {
    TempDir dir;
    ember::manual_seed(1);
    Net a;
    a->train();
    a->forward(ember::randn({6, 1, 8, 8}));  // running statistics and num_batches_tracked move
    const std::string path = dir.file("net.safetensors");
    ember::save(a, path);
    ember::manual_seed(2);
    Net b;
    ember::load(b, path);
    StateDict sa = a->state_dict(), sb = b->state_dict();
    ASSERT_EQ(sa.keys(), sb.keys());
    for (const auto& item : sa) EXPECT_TRUE(same_bits(item.value(), sb[item.key()])) << item.key();
    EXPECT_EQ(sb["features.1.num_batches_tracked"].item<int64_t>(), 1);
    // the file holds exactly the state dict (as safetensors.torch.save_file(model.state_dict()))
    StateDict file = ember::load_state_dict(path);
    EXPECT_EQ(file.size(), sa.size());
    // a shared_ptr to the module works as well as the holder
    std::shared_ptr<NetImpl> ptr = b.ptr();
    ember::save(ptr, dir.file("again.safetensors"));
    EXPECT_TRUE(read_bytes(path) == read_bytes(dir.file("again.safetensors")));
    ember::load(ptr, dir.file("again.safetensors"));
    // and a module reference
    nn::Module& ref = *b;
    ember::save(ref, dir.file("ref.safetensors"));
    EXPECT_TRUE(ember::load(ref, dir.file("ref.safetensors")).empty());
}

TEST(ModuleIO, StrictErrorsAreRaisedTogetherLikePython) {
    EMBER_CHECKPOINT_GOLDEN(golden);
    const std::string path = golden + "/modules/net.safetensors";
    StateDict sd = ember::load_state_dict(path);
    sd.insert("extra.weight", ember::zeros({2}));
    sd.insert("head.bias2", ember::zeros({3}));
    auto wrong = std::make_shared<WrongImpl>();
    Tensor conv_before = wrong->features->named_parameters()["0.weight"].clone();
    std::string msg = error_of([&] { ember::load_state_dict(*wrong, sd, true, "m.pt"); });
    EXPECT_EQ(msg, "m.pt: " + read_text(golden + "/modules/wrong_error.txt"));
    // nothing was copied
    EXPECT_TRUE(same_bits(wrong->features->named_parameters()["0.weight"], conv_before));
    // a file: the message starts with its path
    std::string from_file = error_of([&] { ember::load(wrong, path); });
    EXPECT_EQ(from_file.rfind(path + ": Error(s) in loading state_dict for Wrong:\n\tMissing key(s) in "
                                     "state_dict: \"scale\". \n\tsize mismatch for head.weight",
                              0),
              0u)
        << from_file;
}

TEST(ModuleIO, NonStrictReportsTheKeys) {
    EMBER_CHECKPOINT_GOLDEN(golden);
    StateDict sd = ember::load_state_dict(golden + "/modules/net.safetensors");
    sd.erase("head.bias");
    sd.insert("stray", ember::zeros({1}));
    Net net;
    Tensor bias = net->head->bias.clone();
    auto keys = ember::load_state_dict(*net, sd, /*strict=*/false);
    EXPECT_EQ(keys.missing_keys, std::vector<std::string>{"head.bias"});
    EXPECT_EQ(keys.unexpected_keys, std::vector<std::string>{"stray"});
    EXPECT_TRUE(same_bits(net->head->weight, sd["head.weight"]));
    EXPECT_TRUE(same_bits(net->head->bias, bias));
    auto strict = error_of([&] { ember::load_state_dict(*net, sd); });
    EXPECT_EQ(strict, "Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "
                      "\"head.bias\". \n\tUnexpected key(s) in state_dict: \"stray\". ");
    // shape mismatches fail even when not strict
    sd.insert("head.bias", ember::zeros({4}));
    EXPECT_NE(error_of([&] { ember::load_state_dict(*net, sd, false); })
                  .find("size mismatch for head.bias: copying a param with shape ember.Size([4]) from "
                        "checkpoint, the shape in current model is ember.Size([3])."),
              std::string::npos);
}

struct ScalarImpl : nn::Module {
    ScalarImpl() {
        temperature = register_parameter("temperature", ember::tensor(1.0));
        inner = register_module("inner", nn::Linear(2, 2));
        shared = register_module("shared", inner);
    }
    Tensor temperature;
    nn::Linear inner{nullptr}, shared{nullptr};
};

TEST(ModuleIO, ScalarsSharedModulesAndUndefinedTensors) {
    ScalarImpl m;
    StateDict sd;
    sd.insert("temperature", ember::tensor({0.5}));  // shape [1] fills a 0-d parameter
    sd.insert("inner.weight", ember::ones({2, 2}));
    sd.insert("inner.bias", ember::zeros({2}));
    sd.insert("shared.weight", ember::full({2, 2}, 2.0));
    sd.insert("shared.bias", ember::zeros({2}));
    EXPECT_TRUE(ember::load_state_dict(m, sd).empty());
    EXPECT_EQ(m.temperature.dim(), 0);
    EXPECT_EQ(m.temperature.item<double>(), 0.5);
    // one module under two names: both keys are needed, the later one wins, as in Python
    EXPECT_EQ(m.inner->weight.index({0, 0}).item<float>(), 2.f);
    sd.erase("shared.weight");
    EXPECT_NE(error_of([&] { ember::load_state_dict(m, sd); }).find("Missing key(s) in state_dict: \"shared.weight\""),
              std::string::npos);
    sd.insert("shared.weight", Tensor());
    EXPECT_NE(error_of([&] { ember::load_state_dict(m, sd); })
                  .find("While copying the parameter named \"shared.weight\", expected ember.Tensor or "
                        "Tensor-like object from checkpoint but received an undefined Tensor"),
              std::string::npos);
}

}  // namespace
