// The Module surface of a loaded program: its weights by Python's names, the output
// structures, keyword arguments, autograd through a program, and IValue's tuples.
#include "jit_test_util.h"

namespace {

using namespace jit_test;
namespace F = ember::nn::functional;

TEST(Module, WeightsByPythonNames) {
    EMBER_JIT_NEED_GOLDEN();
    ember::jit::Module m = ember::jit::load(golden("digits_export.ember"));
    auto params = m.named_parameters();
    EXPECT_EQ(params.keys(), (std::vector<std::string>{
                                 "features.0.weight", "features.0.bias", "features.1.weight", "features.1.bias",
                                 "features.3.weight", "features.3.bias", "features.4.weight", "features.4.bias",
                                 "features.7.weight", "features.7.bias", "features.8.weight", "features.8.bias",
                                 "classifier.1.weight", "classifier.1.bias"}));
    EXPECT_EQ(params["features.0.weight"].sizes(), (std::vector<int64_t>{16, 1, 3, 3}));
    EXPECT_TRUE(params["features.0.weight"].requires_grad());
    EXPECT_EQ(m.parameters().size(), 14u);
    auto buffers = m.named_buffers();
    EXPECT_TRUE(buffers.contains("features.1.running_mean"));
    EXPECT_TRUE(buffers.contains("features.8.running_var"));
    EXPECT_FALSE(buffers["features.1.running_var"].requires_grad());
    EXPECT_EQ(m.state_dict().size(), params.size() + buffers.size());
    EXPECT_EQ(m.argument_names(), (std::vector<std::string>{"x"}));
    EXPECT_EQ(m.path(), golden("digits_export.ember"));
}

TEST(Module, WeightsAreTheOnesForwardUses) {
    EMBER_JIT_NEED_GOLDEN();
    ember::jit::Module m = ember::jit::load(golden("mlp_export.ember"));
    ember::NoGradGuard no_grad;
    Tensor x = ember::randn({2, 8});
    Tensor before = m.forward({x}).toTensor();
    m.named_parameters()["4.bias"].add_(1.0);  // log_softmax is shift invariant: use the first layer
    EXPECT_TRUE(m.forward({x}).toTensor().allclose(before, 1e-5, 1e-6));
    m.named_parameters()["0.weight"].mul_(2.0);
    EXPECT_FALSE(m.forward({x}).toTensor().allclose(before, 1e-3, 1e-3));
    // a copy of the Module shares the program and its weights (as libtorch's)
    ember::jit::Module copy = m;
    EXPECT_TRUE(copy.forward({x}).toTensor().equal(m.forward({x}).toTensor()));
}

// The MLP's program against the same computation written with the C++ ops: equal outputs,
// and autograd runs through the program to its parameters.
TEST(Module, GradientsFlowThroughAProgram) {
    EMBER_JIT_NEED_GOLDEN();
    ember::jit::Module m = ember::jit::load(golden("mlp_trace.ember"));
    auto p = m.named_parameters();
    Tensor x = ember::randn({4, 8});
    Tensor y = m.forward({x}).toTensor();
    Tensor h = F::gelu(F::linear(ember::relu(F::linear(x, p["0.weight"], p["0.bias"])), p["2.weight"], p["2.bias"]));
    Tensor ref = F::log_softmax(F::linear(h, p["4.weight"], p["4.bias"]), 1);
    EXPECT_TRUE(y.allclose(ref, 1e-6, 1e-6));
    Tensor w = ember::randn({4, 4});
    (y * w).sum().backward();
    Tensor g = p["0.weight"].grad().clone();
    ASSERT_TRUE(g.defined());
    for (const Tensor& t : m.parameters()) t.mutable_grad().reset();
    (ref * w).sum().backward();
    EXPECT_TRUE(g.allclose(p["0.weight"].grad(), 1e-5, 1e-6));
}

TEST(Module, OutputStructures) {
    EMBER_JIT_NEED_GOLDEN();
    // an LSTM returns (output, (h_n, c_n))
    auto lstm = ember::jit::load(golden("lstm_export.ember")).forward({ember::randn({3, 5, 6})}).toTuple();
    ASSERT_EQ(lstm->size(), 2u);
    EXPECT_EQ((*lstm)[0].toTensor().sizes(), (std::vector<int64_t>{3, 5, 10}));
    EXPECT_EQ((*lstm)[1].toTuple()->elements()[1].toTensor().sizes(), (std::vector<int64_t>{2, 3, 10}));
    // BERT's output record: a tuple named by its fields
    auto bert = ember::jit::load(golden("bert_export.ember")).forward({ember::randint(0, 50, {2, 9})}).toTuple();
    EXPECT_EQ(bert->names(), (std::vector<std::string>{"last_hidden_state", "pooler_output"}));
    EXPECT_EQ(bert->at("pooler_output").toTensor().sizes(), (std::vector<int64_t>{2, 16}));
    // a dict with a size in it
    ember::jit::Module factories = ember::jit::load(golden("ops_factories.ember"));
    auto d = factories.forward({ember::randn({7, 3})}, {{"scale", IValue(0.5)}}).toTuple();
    EXPECT_EQ(d->at("size").toInt(), 14);
    EXPECT_EQ(d->at("eye").toTensor().sizes(), (std::vector<int64_t>{7, 7}));
    EXPECT_EQ(d->at("o").toTensor().scalar_type(), ember::kLong);
    // a list of tensors
    auto list = ember::jit::load(golden("ops_pointwise.ember")).forward({ember::randn({2, 4}), ember::randn({2, 4})});
    EXPECT_TRUE(list.isTensorList());
    EXPECT_GT(list.toTensorList().size(), 80u);
    // forward_tensors: the leaves in order
    std::vector<Tensor> flat = ember::jit::load(golden("lstm_trace.ember")).forward_tensors({ember::randn({2, 5, 6})});
    ASSERT_EQ(flat.size(), 3u);
    EXPECT_EQ(flat[2].sizes(), (std::vector<int64_t>{2, 2, 10}));
}

TEST(Module, InPlaceOpsWriteThroughViews) {
    EMBER_JIT_NEED_GOLDEN();
    // the program returns a tensor and views of it, after in-place writes through the views
    ember::jit::Module m = ember::jit::load(golden("ops_inplace_views.ember"));
    auto out = m.forward({ember::rand({3, 4})}).toTuple();
    Tensor y = (*out)[0].toTensor(), row = (*out)[1].toTensor(), flat = (*out)[2].toTensor(), col = (*out)[3].toTensor();
    EXPECT_TRUE(row.is_alias_of(y));
    EXPECT_TRUE(flat.is_alias_of(y));
    EXPECT_TRUE(row.equal(y[1]));
    EXPECT_TRUE(col.equal(y.t()));
    EXPECT_EQ(flat[0].item<float>(), y[0][0].item<float>());
}

TEST(Module, ExtraFilesAndOpList) {
    EMBER_JIT_NEED_GOLDEN();
    ember::jit::ExtraFilesMap extra{{"absent.txt", "stale"}};
    ember::jit::load(golden("mlp_export.ember"), std::nullopt, extra);
    EXPECT_EQ(extra.at("absent.txt"), "");
    std::vector<std::string> ops = ember::jit::supported_ops();
    for (const char* op : {"linear", "conv2d", "getitem", "setitem", "Tensor.view", "nn.functional.batch_norm",
                           "ember.zeros", "add_", "scaled_dot_product_attention"}) {
        EXPECT_TRUE(std::binary_search(ops.begin(), ops.end(), op)) << op;
    }
    EXPECT_EQ(ember::jit::op_signature("add"), "input, other, *, alpha=1, out=None");
}

TEST(IValue, Tuples) {
    IValue t = IValue::tuple({IValue(1), IValue(ember::ones({2}))}, {"n", "x"});
    EXPECT_TRUE(t.isTuple());
    EXPECT_EQ(t.tagKind(), "Tuple");
    EXPECT_EQ(t.toTupleRef()[0].toInt(), 1);
    EXPECT_EQ(t.toTuple()->at("x").toTensor().numel(), 2);
    EXPECT_THROW(t.toTuple()->at("y"), ember::Error);
    EXPECT_THROW(t.toInt(), ember::Error);
    IValue l = IValue::list({IValue(1), IValue("a")});
    EXPECT_TRUE(l.isList());
    EXPECT_TRUE(l.isGenericList());
    EXPECT_EQ(l.toList()[1].toStringRef(), "a");
    EXPECT_EQ(IValue(std::vector<int64_t>{1, 2}).toList()[1].toInt(), 2);
    EXPECT_THROW(IValue::tuple({IValue(1)}, {"a", "b"}), ember::Error);
}

}  // namespace
