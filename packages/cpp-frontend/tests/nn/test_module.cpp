// Module: registration, names and order, modes, conversion, gradients, apply, printing, and
// the holder semantics of EMBER_MODULE.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "nn_test_util.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
using nn_test::error_of;
using Names = std::vector<std::string>;

struct BlockImpl : nn::Module {
    BlockImpl() {
        fc = register_module("fc", nn::Linear(3, 3));
        norm = register_module("norm", nn::BatchNorm1d(3));
    }
    Tensor forward(const Tensor& x) { return norm(fc(x)); }
    nn::Linear fc{nullptr};
    nn::BatchNorm1d norm{nullptr};
};
EMBER_MODULE(Block);

struct NetImpl : nn::Module {
    NetImpl() {
        scale = register_parameter("scale", ones({3}));
        register_buffer("steps", zeros({1}, kLong));
        stem = register_module("stem", nn::Linear(2, 3));
        blocks = register_module("blocks", nn::Sequential(Block(), nn::ReLU(), Block()));
        head = register_module("head", nn::Linear(nn::LinearOptions(3, 1).bias(false)));
    }
    Tensor forward(const Tensor& x) { return head(blocks(stem(x)) * scale); }
    std::string extra_repr() const override { return "depth=2"; }
    Tensor scale;
    nn::Linear stem{nullptr}, head{nullptr};
    nn::Sequential blocks{nullptr};
};
EMBER_MODULE(Net);

TEST(Module, NamesAndOrderArePythons) {
    Net net;
    const Names block = {"fc.weight", "fc.bias", "norm.weight", "norm.bias"};
    Names params = {"scale", "stem.weight", "stem.bias"};
    for (const char* b : {"blocks.0.", "blocks.2."}) {
        for (const auto& n : block) params.push_back(b + n);
    }
    params.push_back("head.weight");
    EXPECT_EQ(net->named_parameters().keys(), params);
    EXPECT_EQ(net->parameters().size(), params.size());
    EXPECT_EQ(net->named_parameters(false).keys(), Names({"scale"}));
    const Names buffers = {"steps",
                           "blocks.0.norm.running_mean", "blocks.0.norm.running_var", "blocks.0.norm.num_batches_tracked",
                           "blocks.2.norm.running_mean", "blocks.2.norm.running_var", "blocks.2.norm.num_batches_tracked"};
    EXPECT_EQ(net->named_buffers().keys(), buffers);
    EXPECT_EQ(net->named_buffers(false).keys(), Names({"steps"}));
    // state_dict: per module its parameters, then its buffers, then its children
    Names state = {"scale", "steps", "stem.weight", "stem.bias"};
    for (const char* b : {"blocks.0.", "blocks.2."}) {
        for (const char* n : {"fc.weight", "fc.bias", "norm.weight", "norm.bias", "norm.running_mean",
                              "norm.running_var", "norm.num_batches_tracked"}) {
            state.push_back(std::string(b) + n);
        }
    }
    state.push_back("head.weight");
    EXPECT_EQ(net->state_dict().keys(), state);
    EXPECT_EQ(net->named_children().keys(), Names({"stem", "blocks", "head"}));
    EXPECT_EQ(net->children().size(), 3u);
    EXPECT_EQ(net->named_modules().keys(),
              Names({"", "stem", "blocks", "blocks.0", "blocks.0.fc", "blocks.0.norm", "blocks.1", "blocks.2",
                     "blocks.2.fc", "blocks.2.norm", "head"}));
    EXPECT_EQ(net->named_modules("net", false).keys().front(), "net.stem");
    EXPECT_EQ(net->modules().size(), 11u);
    EXPECT_EQ(net->modules(false).size(), 10u);
    EXPECT_TRUE(net->named_parameters()["stem.weight"].is_same(net->stem->weight));
    EXPECT_EQ(net->named_buffers()["steps"].scalar_type(), kLong);
    EXPECT_EQ(net->name(), "Net");
    EXPECT_EQ(nn::Linear(1, 1)->name(), "Linear");
}

TEST(Module, RegistrationErrors) {
    nn::Module m;
    EXPECT_EQ(error_of([&] { m.register_parameter("", ones({1})); }), "Parameter name must not be empty");
    EXPECT_EQ(error_of([&] { m.register_parameter("a.b", ones({1})); }),
              "Parameter name must not contain a dot (got 'a.b')");
    EXPECT_EQ(error_of([&] { m.register_buffer("x.y", ones({1})); }), "Buffer name must not contain a dot (got 'x.y')");
    EXPECT_EQ(error_of([&] { m.register_module("", nn::ReLU()); }), "Submodule name must not be empty");
    m.register_parameter("w", ones({1}));
    EXPECT_EQ(error_of([&] { m.register_parameter("w", ones({1})); }), "Parameter 'w' is already defined");
    m.register_module("act", nn::ReLU());
    EXPECT_EQ(error_of([&] { m.register_module("act", nn::ReLU()); }), "Submodule 'act' is already defined");
    EXPECT_EQ(error_of([&] { (void)m.named_parameters()["nope"]; }), "Parameter 'nope' is not defined");
    m.unregister_module("act");
    EXPECT_TRUE(m.children().empty());
    EXPECT_EQ(error_of([&] { m.unregister_module("act"); }), "No Module with name `act` is registered");
    // a module on the stack has no shared_ptr to give
    EXPECT_NE(error_of([&] { m.modules(); }).find("not stored in a shared_ptr"), std::string::npos);
    EXPECT_EQ(m.modules(false).size(), 0u);
}

TEST(Module, RegisterParameterSetsRequiresGradAndSkipsUndefined) {
    nn::Module m;
    Tensor frozen = m.register_parameter("frozen", ones({2}), /*requires_grad=*/false);
    Tensor none = m.register_parameter("none", Tensor());
    EXPECT_FALSE(frozen.requires_grad());
    EXPECT_FALSE(none.defined());
    EXPECT_EQ(m.named_parameters().keys(), Names({"frozen"}));
    EXPECT_EQ(nn::Linear(nn::LinearOptions(2, 2).bias(false))->named_parameters().keys(), Names({"weight"}));
    EXPECT_TRUE(nn::Linear(2, 2)->weight.requires_grad());
}

TEST(Module, SharedParametersAreListedOnce) {
    auto shared = std::make_shared<nn::LinearImpl>(2, 2);
    nn::Sequential seq(shared, nn::ReLU(), shared);
    EXPECT_EQ(seq->named_parameters().keys(), Names({"0.weight", "0.bias"}));
    EXPECT_EQ(seq->state_dict().keys(), Names({"0.weight", "0.bias", "2.weight", "2.bias"}));
    EXPECT_EQ(seq->named_modules().keys(), Names({"", "0", "1"}));
}

TEST(Module, TrainEvalIsRecursiveAndChangesDropoutAndBatchNorm) {
    Net net;
    EXPECT_TRUE(net->is_training());
    net->eval();
    for (const auto& m : net->modules()) EXPECT_FALSE(m->is_training()) << m->name();
    net->train();
    for (const auto& m : net->modules()) EXPECT_TRUE(m->is_training()) << m->name();

    nn::Dropout drop(0.5);
    const Tensor x = ones({1000});
    const Tensor y = drop(x);
    const double zeros_frac = (y == 0).to(kDouble).mean().item<double>();
    EXPECT_GT(zeros_frac, 0.4);
    EXPECT_LT(zeros_frac, 0.6);
    EXPECT_TRUE(y.masked_select(y != 0).eq(2.0).all().item<bool>());  // kept elements scaled by 1 / (1 - p)
    drop->eval();
    EXPECT_TRUE(drop(x).equal(x));

    nn::BatchNorm2d bn(2);
    const Tensor in = randn({4, 2, 3, 3}) * 3 + 1;
    const Tensor train_out = bn(in);
    EXPECT_NEAR(train_out.mean().item<double>(), 0.0, 1e-5);  // normalised with the batch statistics
    EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
    EXPECT_FALSE(bn->running_mean.allclose(zeros({2})));  // updated towards the batch mean
    bn->eval();
    const Tensor eval_out = bn(in);
    EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
    const Tensor expected = (in - bn->running_mean.view({1, 2, 1, 1})) /
                            (bn->running_var.view({1, 2, 1, 1}) + 1e-5).sqrt();
    EXPECT_TRUE(eval_out.allclose(expected, 1e-5, 1e-5));
}

TEST(Module, ToDoubleConvertsInPlaceAndKeepsIntegers) {
    Net net;
    const Tensor weight = net->stem->weight;  // a handle taken before the conversion
    net->stem(ones({1, 2})).sum().backward();
    ASSERT_TRUE(weight.grad().defined());
    net->to(kFloat64);
    for (const auto& p : net->parameters()) EXPECT_EQ(p.scalar_type(), kDouble);
    EXPECT_EQ(weight.scalar_type(), kDouble);  // same tensor: members and outside handles see it
    EXPECT_TRUE(weight.is_same(net->named_parameters()["stem.weight"]));
    EXPECT_TRUE(weight.requires_grad());
    EXPECT_EQ(weight.grad().scalar_type(), kDouble);
    EXPECT_EQ(net->named_buffers()["blocks.0.norm.running_mean"].scalar_type(), kDouble);
    EXPECT_EQ(net->named_buffers()["blocks.0.norm.num_batches_tracked"].scalar_type(), kLong);
    EXPECT_EQ(net->named_buffers()["steps"].scalar_type(), kLong);
    const Tensor out = net(ones({4, 2}, kFloat64));
    EXPECT_EQ(out.scalar_type(), kDouble);
    EXPECT_EQ(error_of([&] { net->to(kLong); }),
              "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=ember.int64");
    net->to(kFloat32);
    EXPECT_EQ(weight.scalar_type(), kFloat);
}

TEST(Module, ZeroGrad) {
    nn::Linear fc(3, 2);
    fc(ones({1, 3})).sum().backward();
    ASSERT_TRUE(fc->weight.grad().defined());
    fc->zero_grad(/*set_to_none=*/false);
    EXPECT_TRUE(fc->weight.grad().defined());
    EXPECT_EQ(fc->weight.grad().abs().sum().item<double>(), 0.0);
    fc->zero_grad();
    EXPECT_FALSE(fc->weight.grad().defined());
    EXPECT_FALSE(fc->bias.grad().defined());
}

TEST(Module, ApplyVisitsChildrenFirst) {
    Net net;
    Names order;
    net->apply([&](const std::string& name, nn::Module&) { order.push_back(name); }, "net");
    EXPECT_EQ(order.front(), "net.stem");
    EXPECT_EQ(order.back(), "net");
    EXPECT_EQ(order.size(), 11u);
    int linears = 0;
    net->apply([&](nn::Module& m) {
        if (auto* lin = m.as<nn::Linear>()) {
            nn::init::zeros_(lin->weight);
            ++linears;
        }
    });
    EXPECT_EQ(linears, 4);
    EXPECT_EQ(net->head->weight.abs().sum().item<double>(), 0.0);
    size_t pointers = 0;
    net->apply([&](const std::shared_ptr<nn::Module>& m) { pointers += m != nullptr; });
    EXPECT_EQ(pointers, 11u);
}

TEST(Module, PrintsLikePython) {
    Net net;
    const std::string expected =
        "Net(\n"
        "  depth=2\n"
        "  (stem): Linear(in_features=2, out_features=3, bias=True)\n"
        "  (blocks): Sequential(\n"
        "    (0): Block(\n"
        "      (fc): Linear(in_features=3, out_features=3, bias=True)\n"
        "      (norm): BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)\n"
        "    )\n"
        "    (1): ReLU()\n"
        "    (2): Block(\n"
        "      (fc): Linear(in_features=3, out_features=3, bias=True)\n"
        "      (norm): BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)\n"
        "    )\n"
        "  )\n"
        "  (head): Linear(in_features=3, out_features=1, bias=False)\n"
        ")";
    std::ostringstream os;
    os << net;
    EXPECT_EQ(os.str(), expected);
    EXPECT_EQ(net->repr(), expected);
    EXPECT_EQ(nn::Conv1d(2, 3, 3)->repr(), "Conv1d(2, 3, kernel_size=(3,), stride=(1,))");
    EXPECT_EQ(nn::MaxPool2d(nn::MaxPool2dOptions({2, 3}).stride(1))->repr(),
              "MaxPool2d(kernel_size=(2, 3), stride=1, padding=0, dilation=1, ceil_mode=False)");
    EXPECT_EQ(nn::ReLU(true)->repr(), "ReLU(inplace=True)");
    EXPECT_EQ(nn::LeakyReLU(nn::LeakyReLUOptions().inplace(true))->repr(), "LeakyReLU(negative_slope=0.01, inplace=True)");
    EXPECT_EQ(nn::Identity()->repr(), "Identity()");
    EXPECT_EQ(nn::ModuleList()->repr(), "ModuleList()");
    EXPECT_EQ(nn::Dropout(nn::DropoutOptions(0.25))->repr(), "Dropout(p=0.25, inplace=False)");
    EXPECT_EQ(nn::LSTM(nn::LSTMOptions(2, 4).bias(false).dropout(0.5).bidirectional(true))->repr(),
              "LSTM(2, 4, bias=False, dropout=0.5, bidirectional=True)");
    EXPECT_EQ(nn::BatchNorm2d(nn::BatchNorm2dOptions(3).momentum(std::nullopt).track_running_stats(false))->repr(),
              "BatchNorm2d(3, eps=1e-05, momentum=None, affine=True, bias=True, track_running_stats=False)");
}

TEST(Module, PythonFloatRepr) {
    using nn::detail::py_float_repr;
    EXPECT_EQ(py_float_repr(0.1), "0.1");
    EXPECT_EQ(py_float_repr(1e-5), "1e-05");
    EXPECT_EQ(py_float_repr(1.0), "1.0");
    EXPECT_EQ(py_float_repr(-2.5), "-2.5");
    EXPECT_EQ(py_float_repr(100.0), "100.0");
    EXPECT_EQ(py_float_repr(1e16), "1e+16");
    EXPECT_EQ(py_float_repr(123456789.125), "123456789.125");
    EXPECT_EQ(py_float_repr(0.0001), "0.0001");
    EXPECT_EQ(py_float_repr(1.0 / 3), "0.3333333333333333");
    EXPECT_EQ(py_float_repr(0.0), "0.0");
}

TEST(ModuleHolder, SharedPointerSemantics) {
    nn::Linear a(2, 3);
    nn::Linear b = a;  // shares the module
    EXPECT_EQ(a.get(), b.get());
    EXPECT_EQ(a.ptr(), b.ptr());
    b->weight.data().fill_(1);
    EXPECT_EQ(a->weight.sum().item<double>(), 6.0);
    EXPECT_EQ((*a).options.in_features(), 2);
    const Tensor x = randn({4, 2});
    EXPECT_TRUE(a(x).equal(a->forward(x)));

    nn::Linear empty = nullptr;
    EXPECT_TRUE(empty.is_empty());
    EXPECT_FALSE(static_cast<bool>(empty));
    EXPECT_EQ(error_of([&] { empty->reset_parameters(); }), "Accessing empty ModuleHolder");
    empty = a;
    EXPECT_FALSE(empty.is_empty());

    nn::Linear from_ptr(std::make_shared<nn::LinearImpl>(nn::LinearOptions(5, 1)));
    EXPECT_EQ(from_ptr->options.in_features(), 5);
    Net net;  // default-constructed module
    EXPECT_FALSE(net.is_empty());
    // register_module returns the registered module itself
    nn::Module parent;
    auto registered = parent.register_module("fc", a);
    EXPECT_EQ(registered.get(), a.get());
    std::ostringstream os;
    os << a;
    EXPECT_EQ(os.str(), "Linear(in_features=2, out_features=3, bias=True)");
    nn::Module& base = *a;
    EXPECT_NE(base.as<nn::Linear>(), nullptr);
    EXPECT_NE(base.as<nn::LinearImpl>(), nullptr);
    EXPECT_EQ(base.as<nn::Conv2d>(), nullptr);
}

TEST(Containers, Sequential) {
    nn::Sequential seq(nn::Linear(4, 3), nn::ReLU(), nn::Linear(3, 2));
    EXPECT_EQ(seq->size(), 3u);
    EXPECT_EQ(seq->named_children().keys(), Names({"0", "1", "2"}));
    const Tensor x = randn({5, 4});
    auto& first = seq->at<nn::LinearImpl>(0);
    auto last = seq->ptr<nn::LinearImpl>(-1);
    ASSERT_NE(last, nullptr);
    EXPECT_TRUE(seq(x).allclose(last->forward(first.forward(x).relu())));
    EXPECT_EQ(seq[1]->name(), "ReLU");
    EXPECT_EQ(seq->ptr<nn::LinearImpl>(1), nullptr);
    EXPECT_EQ(error_of([&] { seq->ptr(3); }), "index 3 is out of range");
    EXPECT_EQ(error_of([&] { seq->at<nn::LinearImpl>(1); }), "Attempted to cast module of type ReLU to the wrong type");
    seq->push_back(nn::Sigmoid());
    seq->push_back("out", nn::Functional([](const Tensor& t) { return t * 2; }));
    EXPECT_EQ(seq->named_children().keys(), Names({"0", "1", "2", "3", "out"}));
    EXPECT_TRUE(seq(x).allclose(last->forward(first.forward(x).relu()).sigmoid() * 2));
    size_t n = 0;
    for (const auto& m : *seq) n += m.is_empty() ? 0 : 1;
    EXPECT_EQ(n, 5u);

    nn::Sequential named({{"fc", nn::Linear(2, 2)}, {"act", nn::Tanh()}});
    EXPECT_EQ(named->named_parameters().keys(), Names({"fc.weight", "fc.bias"}));
    EXPECT_EQ(named->repr(),
              "Sequential(\n  (fc): Linear(in_features=2, out_features=2, bias=True)\n  (act): Tanh()\n)");
    nn::Sequential empty;
    EXPECT_TRUE(empty(x).is_same(x));
    empty->extend(*named);
    EXPECT_EQ(empty->named_children().keys(), Names({"0", "1"}));
    nn::Sequential nested(nn::Sequential(nn::Linear(1, 1)), std::make_shared<nn::ReLUImpl>(), nn::Flatten());
    EXPECT_EQ(nested->named_parameters().keys(), Names({"0.0.weight", "0.0.bias"}));
}

TEST(Containers, ModuleList) {
    nn::ModuleList list(nn::Linear(2, 2), nn::Linear(2, 2));
    list->push_back(nn::ReLU());
    EXPECT_EQ(list->size(), 3u);
    EXPECT_EQ(list->repr(),
              "ModuleList(\n  (0-1): 2 x Linear(in_features=2, out_features=2, bias=True)\n  (2): ReLU()\n)");
    list->insert(0, nn::Tanh());
    EXPECT_EQ(list->named_children().keys(), Names({"0", "1", "2", "3"}));
    EXPECT_EQ(list[0]->name(), "Tanh");
    EXPECT_EQ(list->at<nn::ReLUImpl>(3).name(), "ReLU");
    EXPECT_EQ(list->named_parameters().keys(), Names({"1.weight", "1.bias", "2.weight", "2.bias"}));
    nn::ModuleList more;
    more->push_back(std::make_shared<nn::SigmoidImpl>());
    list->extend(*more);
    EXPECT_EQ(list->ptr(-1)->name(), "Sigmoid");
    std::vector<std::string> names;
    for (const auto& m : *list) names.push_back(m->name());
    EXPECT_EQ(names, Names({"Tanh", "Linear", "Linear", "ReLU", "Sigmoid"}));
    // (a holder given alone is copied, as in libtorch: push_back nests it)
    nn::ModuleList nested;
    nested->push_back(nn::ModuleList(nn::Linear(1, 1), nn::LSTM(1, 1)));
    EXPECT_EQ(nested->repr(),
              "ModuleList(\n  (0): ModuleList(\n    (0): Linear(in_features=1, out_features=1, bias=True)\n"
              "    (1): LSTM(1, 1)\n  )\n)");
}

TEST(Options, DefaultsAreTorchs) {
    const nn::Conv2dOptions conv(1, 2, 3);
    EXPECT_EQ(conv.stride(), nn::ExpandingArray<2>(1));
    EXPECT_EQ(conv.padding(), nn::ExpandingArray<2>(0));
    EXPECT_EQ(conv.dilation(), nn::ExpandingArray<2>(1));
    EXPECT_EQ(conv.groups(), 1);
    EXPECT_TRUE(conv.bias());
    const nn::BatchNorm2dOptions bn(4);
    EXPECT_EQ(bn.eps(), 1e-5);
    EXPECT_EQ(bn.momentum(), 0.1);
    EXPECT_TRUE(bn.affine() && bn.track_running_stats());
    EXPECT_EQ(nn::MaxPool2dOptions(3).stride(), nn::ExpandingArray<2>(3));
    const nn::TransformerEncoderLayerOptions tr(8, 2);
    EXPECT_EQ(tr.dim_feedforward(), 2048);
    EXPECT_EQ(tr.dropout(), 0.1);
    EXPECT_EQ(tr.activation().name(), "relu");
    EXPECT_FALSE(tr.batch_first() || tr.norm_first());
    const nn::LSTMOptions lstm(3, 4);
    EXPECT_EQ(lstm.num_layers(), 1);
    EXPECT_TRUE(lstm.bias());
    EXPECT_FALSE(lstm.batch_first() || lstm.bidirectional());
    EXPECT_EQ(nn::MultiheadAttentionOptions(8, 2).kdim(), 8);
}

}  // namespace
