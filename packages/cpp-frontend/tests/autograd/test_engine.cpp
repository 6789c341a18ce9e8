// The autograd engine: backward/grad semantics, PyTorch's errors, grad mode, hooks,
// retain_grad, in-place ops and views under autograd, custom functions.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/error_of.h"
#include "ember/autograd.h"
#include "ember/tensor.h"

namespace {

using namespace ember;
using namespace ember::indexing;
using autograd::variable_list;

using ember::testing::error_of;

Tensor leaf(std::initializer_list<double> values) {
    return tensor(std::vector<double>(values), kDouble).requires_grad_();
}

TEST(Engine, LeafGradientsAccumulate) {
    Tensor x = leaf({1.0, 2.0, 3.0});
    EXPECT_TRUE(x.is_leaf());
    EXPECT_TRUE(x.requires_grad());
    EXPECT_FALSE(x.grad().defined());
    (x * x).sum().backward();
    EXPECT_TRUE(x.grad().equal(tensor({2.0, 4.0, 6.0}, kDouble)));
    (x * 3).sum().backward();
    EXPECT_TRUE(x.grad().equal(tensor({5.0, 7.0, 9.0}, kDouble)));
    x.mutable_grad().zero_();
    (x.sum() * 2).backward();
    EXPECT_TRUE(x.grad().equal(tensor({2.0, 2.0, 2.0}, kDouble)));
}

TEST(Engine, SharedSubgraphRunsOnce) {
    Tensor x = leaf({2.0});
    Tensor y = x * x;          // used twice below
    Tensor z = y * 3 + y.exp();
    z.backward();
    const double xv = 2.0, yv = 4.0;
    EXPECT_NEAR(x.grad().item<double>(), (3 + std::exp(yv)) * 2 * xv, 1e-9);
    EXPECT_FALSE(y.is_leaf());
    EXPECT_FALSE(y.grad().defined());  // non-leaf grads are not kept
}

TEST(Engine, ImplicitGradientOnlyForScalars) {
    Tensor x = leaf({1.0, 2.0});
    EXPECT_EQ(error_of([&] { (x * 2).backward(); }), "grad can be implicitly created only for scalar outputs");
    (x * 2).backward(ones({2}, kDouble));
    EXPECT_TRUE(x.grad().equal(tensor({2.0, 2.0}, kDouble)));
    EXPECT_EQ(error_of([&] { (x * 2).backward(ones({3}, kDouble)); }),
              "Mismatch in shape: grad_output[0] has a shape of [3] and output[0] has a shape of [2].");
    EXPECT_EQ(error_of([&] { ones({1}).backward(); }),
              "element 0 of tensors does not require grad and does not have a grad_fn");
}

TEST(Engine, SecondBackwardNeedsRetainGraph) {
    Tensor x = leaf({1.0, 2.0});
    Tensor y = (x * x).sum();
    y.backward({}, /*retain_graph=*/true);
    y.backward();
    EXPECT_TRUE(x.grad().equal(tensor({4.0, 8.0}, kDouble)));
    EXPECT_EQ(error_of([&] { y.backward(); }),
              "Trying to backward through the graph a second time (or directly access saved tensors after they "
              "have already been freed). Saved intermediate values of the graph are freed when you call .backward() "
              "or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time "
              "or if you need to access saved tensors after calling backward.");
    // a graph without saved tensors can be run again
    Tensor z = (x + 1).sum();
    z.backward();
    z.backward();
}

TEST(Engine, InplaceModificationOfSavedTensorIsDetected) {
    Tensor x = leaf({1.0, 2.0});
    Tensor y = x.exp();
    Tensor z = y * 1;  // keeps the graph of y alive
    y.add_(1);         // exp saved y (its output)
    const std::string msg = error_of([&] { z.sum().backward(); });
    EXPECT_EQ(msg.rfind("one of the variables needed for gradient computation has been modified by an inplace "
                        "operation: [ember.DoubleTensor [2]], which is output 0 of Exp, is at version 1; expected "
                        "version 0 instead.",
                        0),
              0u)
        << msg;

    Tensor a = leaf({1.0, 2.0});
    Tensor w = ones({2}, kDouble);
    Tensor p = a * w;  // saves w
    w.add_(1);
    EXPECT_EQ(error_of([&] { p.sum().backward(); }).rfind(
                  "one of the variables needed for gradient computation has been modified by an inplace operation: "
                  "[ember.DoubleTensor [2]] is at version 1; expected version 0 instead. Hint:",
                  0),
              0u);
    // through a view: the version counter is shared
    Tensor b = leaf({1.0, 2.0, 3.0});
    Tensor base = ones({3}, kDouble);
    Tensor q = b * base;
    base.narrow(0, 0, 1).mul_(5);
    EXPECT_NE(error_of([&] { q.sum().backward(); }), "<no error>");
}

TEST(Engine, GradFunction) {
    Tensor x = leaf({1.0, 2.0});
    Tensor y = leaf({3.0, 4.0});
    Tensor u = leaf({5.0});
    Tensor z = (x * y).sum();
    variable_list g = autograd::grad({z}, {x, y}, {}, true);
    EXPECT_TRUE(g[0].equal(tensor({3.0, 4.0}, kDouble)));
    EXPECT_TRUE(g[1].equal(tensor({1.0, 2.0}, kDouble)));
    EXPECT_FALSE(x.grad().defined());  // grad() does not accumulate
    EXPECT_EQ(error_of([&] { autograd::grad({z}, {x, u}, {}, true); }),
              "The differentiated Tensor at index 1 appears to not have been used in the graph. Set "
              "allow_unused=True if this is the desired behavior.");
    g = autograd::grad({z}, {x, u}, {}, true, false, /*allow_unused=*/true);
    EXPECT_TRUE(g[0].defined());
    EXPECT_FALSE(g[1].defined());
    // w.r.t. a non-leaf
    Tensor m = x * 2;
    Tensor out = (m * m).sum();
    g = autograd::grad({out}, {m});
    EXPECT_TRUE(g[0].equal(tensor({4.0, 8.0}, kDouble)));
    // several outputs with grad_outputs
    Tensor o1 = x * 2, o2 = x * 3;
    g = autograd::grad({o1, o2}, {x}, {ones({2}, kDouble), full({2}, 2.0, kDouble)});
    EXPECT_TRUE(g[0].equal(tensor({8.0, 8.0}, kDouble)));
}

TEST(Engine, HigherOrderGradients) {
    Tensor x = leaf({1.5, -2.0});
    Tensor y = x.pow(3).sum();
    variable_list g1 = autograd::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true);
    EXPECT_TRUE(g1[0].requires_grad());
    EXPECT_TRUE(g1[0].allclose(3 * x.detach().pow(2)));
    variable_list g2 = autograd::grad({g1[0].sum()}, {x}, {}, std::nullopt, true);
    EXPECT_TRUE(g2[0].allclose(6 * x.detach()));
    variable_list g3 = autograd::grad({g2[0].sum()}, {x});
    EXPECT_TRUE(g3[0].allclose(full({2}, 6.0, kDouble)));
    // backward(create_graph) leaves a differentiable .grad()
    Tensor a = leaf({2.0});
    (a * a * a).backward({}, std::nullopt, /*create_graph=*/true);
    Tensor ga = a.grad();
    EXPECT_TRUE(ga.requires_grad());
    variable_list gga = autograd::grad({ga}, {a});
    EXPECT_NEAR(gga[0].item<double>(), 12.0, 1e-12);
    // as in PyTorch, a .grad() with a graph through its own leaf is a reference cycle
    // (leaf -> grad -> graph -> saved leaf): break it
    a.mutable_grad().reset();
}

TEST(Engine, DeepGraphsNeedNoDeepRecursion) {
    Tensor x = leaf({1.0});
    Tensor y = x;
    for (int i = 0; i < 50000; ++i) y = y * 1.0;
    y.backward();
    EXPECT_EQ(x.grad().item<double>(), 1.0);
    y.reset();  // frees the 50000-node chain iteratively
}

TEST(Engine, LeafGradientsAreStolenWhenUnshared) {
    Tensor x = randn({4, 3}, kDouble);
    Tensor w = randn({2, 3}, kDouble).requires_grad_();
    Tensor b = zeros({2}, kDouble).requires_grad_();
    linear(x, w, b).sum().backward();
    EXPECT_TRUE(w.grad().is_contiguous());
    EXPECT_FALSE(w.grad().is_view());
    EXPECT_TRUE(w.grad().allclose(x.sum(0).expand({2, 3})));
    // a gradient the user still holds is copied, not aliased
    Tensor a = zeros({3}, kDouble).requires_grad_();
    Tensor g = ones({3}, kDouble);
    a.backward(g);
    EXPECT_FALSE(a.grad().is_alias_of(g));
}

TEST(Engine, BackwardWithInputs) {
    Tensor x = leaf({1.0}), y = leaf({2.0});
    Tensor z = x * y;
    z.backward({}, std::nullopt, false, std::vector<Tensor>{x});
    EXPECT_TRUE(x.grad().defined());
    EXPECT_FALSE(y.grad().defined());
}

TEST(GradMode, NoGradGuardStopsRecording) {
    Tensor x = leaf({1.0, 2.0});
    {
        NoGradGuard guard;
        EXPECT_FALSE(GradMode::is_enabled());
        Tensor y = x * 2;
        EXPECT_FALSE(y.requires_grad());
        EXPECT_FALSE(y.grad_fn());
        {
            AutoGradMode enable(true);
            EXPECT_TRUE((x * 2).requires_grad());
        }
        EXPECT_FALSE(GradMode::is_enabled());
        x.add_(1);  // allowed on a leaf without grad mode
    }
    EXPECT_TRUE(GradMode::is_enabled());
    EXPECT_TRUE(x.equal(tensor({2.0, 3.0}, kDouble)));
    EXPECT_TRUE((x * 2).requires_grad());
}

TEST(GradMode, IsThreadLocal) {
    NoGradGuard guard;
    std::atomic<bool> other_enabled{false}, other_records{false};
    Tensor x = leaf({1.0});
    std::thread t([&] {
        other_enabled = GradMode::is_enabled();
        other_records = (x * 2).requires_grad();
        NoGradGuard inner;  // does not leak back
    });
    t.join();
    EXPECT_TRUE(other_enabled);
    EXPECT_TRUE(other_records);
    EXPECT_FALSE(GradMode::is_enabled());
}

TEST(GradMode, ConcurrentBackwardOnSeparateGraphs) {
    std::vector<std::thread> threads;
    std::atomic<int> ok{0};
    for (int i = 0; i < 4; ++i) {
        threads.emplace_back([&ok, i] {
            Tensor x = full({8}, static_cast<double>(i + 1), kDouble).requires_grad_();
            for (int k = 0; k < 20; ++k) (x * x).sum().backward();
            if (x.grad().allclose(full({8}, 40.0 * (i + 1), kDouble))) ++ok;
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(ok.load(), 4);
}

TEST(Hooks, TensorHooks) {
    Tensor x = leaf({1.0, 2.0});
    std::vector<double> seen;
    const unsigned h1 = x.register_hook([&](Tensor g) { seen.push_back(g.sum().item<double>()); });
    x.register_hook([](Tensor g) { return g * 10; });
    (x * 2).sum().backward();
    EXPECT_EQ(seen, std::vector<double>{4.0});
    EXPECT_TRUE(x.grad().equal(tensor({20.0, 20.0}, kDouble)));
    x.remove_hook(h1);
    (x * 2).sum().backward();
    EXPECT_EQ(seen.size(), 1u);

    // on a non-leaf: changes what flows further back
    Tensor a = leaf({1.0, 2.0});
    Tensor b = a * 3;
    b.register_hook([](const Tensor& g) { return g * 0.5; });
    (b * b).sum().backward();
    EXPECT_TRUE(a.grad().allclose(tensor({9.0, 18.0}, kDouble)));
    EXPECT_EQ(error_of([] { ones({1}).register_hook([](Tensor) {}); }),
              "cannot register a hook on a tensor that doesn't require gradient");
}

TEST(Hooks, RetainGrad) {
    Tensor x = leaf({1.0, 2.0});
    Tensor y = x * 2;
    y.retain_grad();
    EXPECT_TRUE(y.retains_grad());
    Tensor z = (y * y).sum();
    z.backward();
    EXPECT_TRUE(y.grad().equal(tensor({4.0, 8.0}, kDouble)));
    EXPECT_TRUE(x.grad().equal(tensor({8.0, 16.0}, kDouble)));
}

TEST(Hooks, NodePostHook) {
    Tensor x = leaf({1.0});
    Tensor y = x * 2;
    int calls = 0;
    y.grad_fn()->add_post_hook([&](const variable_list& in, const variable_list& out) {
        ++calls;
        EXPECT_EQ(in.size(), 1u);  // gradients of the node's inputs
        EXPECT_EQ(out.size(), 1u);  // gradients that flowed in
        EXPECT_TRUE(in[0].equal(full({1}, 2.0, kDouble)));
    });
    y.backward();
    EXPECT_EQ(calls, 1);
}

TEST(GradFn, NamesAndEdges) {
    Tensor x = leaf({1.0, 2.0}), w = leaf({0.5, 0.25});
    EXPECT_FALSE(x.grad_fn());
    EXPECT_EQ((x + w).grad_fn()->name(), "AddBackward0");
    EXPECT_EQ((x * w).grad_fn()->name(), "MulBackward0");
    EXPECT_EQ((x / 2).grad_fn()->name(), "DivBackward0");
    EXPECT_EQ(x.exp().grad_fn()->name(), "ExpBackward0");
    EXPECT_EQ(x.sum().grad_fn()->name(), "SumBackward0");
    EXPECT_EQ(x.view({2, 1}).mm(w.view({1, 2})).grad_fn()->name(), "MmBackward0");
    EXPECT_EQ(x.view({1, 2}).t().grad_fn()->name(), "TBackward0");
    EXPECT_EQ(x.unsqueeze(0).grad_fn()->name(), "UnsqueezeBackward0");
    EXPECT_EQ(x.index({Slice(0, 1)}).grad_fn()->name(), "SliceBackward0");
    EXPECT_EQ(x.softmax(0).grad_fn()->name(), "SoftmaxBackward0");
    EXPECT_EQ(x.norm().grad_fn()->name(), "LinalgVectorNormBackward0");
    EXPECT_EQ(linear(x.view({1, 2}), w.view({1, 2}), ones({1}, kDouble)).grad_fn()->name(), "AddmmBackward0");
    EXPECT_EQ(x.chunk(2)[1].grad_fn()->name(), "SplitBackward0");
    EXPECT_EQ(x.chunk(2)[1].output_nr(), 1u);
    Tensor y = x * w;
    const auto& edges = y.grad_fn()->next_edges();
    ASSERT_EQ(edges.size(), 2u);
    EXPECT_EQ(edges[0].function->name(), "AccumulateGrad");
    Tensor c = x.clone();
    c.mul_(2);
    EXPECT_EQ(c.grad_fn()->name(), "MulBackward0");
    // integer results never require grad
    EXPECT_FALSE(x.argmax().requires_grad());
    EXPECT_FALSE((x > 1).requires_grad());
}

TEST(Inplace, LeafAndViewRules) {
    Tensor x = leaf({1.0, 2.0});
    EXPECT_EQ(error_of([&] { x.add_(1); }), "a leaf Variable that requires grad is being used in an in-place operation.");
    EXPECT_EQ(error_of([&] { x.index({0}).mul_(2); }),
              "a view of a leaf Variable that requires grad is being used in an in-place operation.");
    Tensor y = x * 1;
    auto parts = y.chunk(2);
    EXPECT_EQ(error_of([&] { parts[0].add_(1); }),
              "Output 0 of Split is a view and is being modified inplace. This view is the output of a function "
              "that returns multiple views. Such functions do not allow the output views to be modified inplace. "
              "You should replace the inplace operation by an out-of-place one.");
    Tensor v;
    {
        NoGradGuard g;
        v = y.index({0});
    }
    EXPECT_EQ(error_of([&] { v.mul_(2); }).rfind("A view was created in no_grad mode and is being modified inplace", 0), 0u);
    EXPECT_EQ(error_of([] { ones({2}, kLong).requires_grad_(); }), "only Tensors of floating point dtype can require gradients");
    EXPECT_EQ(error_of([&] { (x * 2).requires_grad_(false); }),
              "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a "
              "subgraph that doesn't require differentiation use var_no_grad = var.detach().");
}

TEST(Inplace, GradientsThroughInplaceOps) {
    Tensor x = leaf({1.0, 2.0, 3.0});
    Tensor y = x.clone();
    y.mul_(2).add_(x).exp_();  // y = exp(3x)
    y.sum().backward();
    EXPECT_TRUE(x.grad().allclose(3 * (3 * x.detach()).exp()));
    EXPECT_EQ(y._version(), 3u);
}

TEST(Inplace, GradientsThroughViewWrites) {
    // writes into a view rebase the base's history (CopySlices)
    Tensor x = leaf({1.0, 2.0, 3.0});
    Tensor w = leaf({10.0});
    Tensor y = x * 1;
    y.index({Slice(0, 2)}).mul_(w);  // y = [10 x0, 10 x1, x2]
    y.index_put_({2}, w * 2);        // y[2] = 2 w
    EXPECT_EQ(y.grad_fn()->name(), "CopySlices");
    (y * tensor({1.0, 2.0, 3.0}, kDouble)).sum().backward();
    EXPECT_TRUE(x.grad().allclose(tensor({10.0, 20.0, 0.0}, kDouble)));
    EXPECT_NEAR(w.grad().item<double>(), 1.0 * 1 + 2.0 * 2 + 3.0 * 2, 1e-12);

    // a buffer that did not require grad gets history from what is written into it
    Tensor a = leaf({1.0, 2.0});
    Tensor buf = zeros({2, 2}, kDouble);
    buf.index_put_({1}, a * 3);
    EXPECT_TRUE(buf.requires_grad());
    buf.sum().backward();
    EXPECT_TRUE(a.grad().equal(tensor({3.0, 3.0}, kDouble)));

    // masked / advanced writes
    Tensor b = leaf({1.0, -2.0, 3.0});
    Tensor c = b * 2;
    c.index_put_({c < 0}, 0.0);
    c.sum().backward();
    EXPECT_TRUE(b.grad().equal(tensor({2.0, 0.0, 2.0}, kDouble)));
}

TEST(Inplace, OtherViewsSeeTheNewHistory) {
    Tensor x = leaf({1.0, 2.0});
    Tensor y = x * 1;
    Tensor v = y.view({2, 1});
    y.mul_(3);
    (v * v).sum().backward();  // v = 3x -> d/dx sum(9 x^2) = 18 x
    EXPECT_TRUE(x.grad().allclose(tensor({18.0, 36.0}, kDouble)));
}

TEST(Detach, SharesStorageAndVersion) {
    Tensor x = leaf({1.0, 2.0});
    Tensor d = x.detach();
    EXPECT_FALSE(d.requires_grad());
    EXPECT_TRUE(d.is_alias_of(x));
    d.add_(1);
    EXPECT_EQ(x._version(), 1u);
    EXPECT_TRUE(x.equal(tensor({2.0, 3.0}, kDouble)));
    Tensor y = (x * 2);
    y.detach_();
    EXPECT_FALSE(y.requires_grad());
}

// ---- custom functions --------------------------------------------------------------------------------
struct MulConstant : public autograd::Function<MulConstant> {
    static Tensor forward(autograd::AutogradContext* ctx, Tensor x, double c) {
        ctx->saved_data["c"] = c;
        ctx->saved_data["name"] = "mul";
        return x * c;
    }
    static variable_list backward(autograd::AutogradContext* ctx, variable_list grads) {
        EXPECT_EQ(ctx->saved_data["name"].toStringRef(), "mul");
        return {grads[0] * ctx->saved_data["c"].toDouble(), Tensor()};
    }
};

struct LinearFn : public autograd::Function<LinearFn> {
    static Tensor forward(autograd::AutogradContext* ctx, Tensor input, Tensor weight, Tensor bias) {
        ctx->save_for_backward({input, weight});
        return input.mm(weight.t()) + bias;
    }
    static variable_list backward(autograd::AutogradContext* ctx, variable_list grads) {
        auto saved = ctx->get_saved_variables();
        Tensor g = grads[0];
        Tensor gi = ctx->needs_input_grad(0) ? g.mm(saved[1]) : Tensor();
        Tensor gw = ctx->needs_input_grad(1) ? g.t().mm(saved[0]) : Tensor();
        Tensor gb = ctx->needs_input_grad(2) ? g.sum(0) : Tensor();
        return {gi, gw, gb};
    }
};

struct SortWithIndex : public autograd::Function<SortWithIndex> {
    static variable_list forward(autograd::AutogradContext* ctx, Tensor x) {
        auto [values, indices] = x.sort();
        ctx->mark_non_differentiable({indices});
        ctx->save_for_backward({indices});
        ctx->saved_data["n"] = x.size(0);
        return {values, indices};
    }
    static variable_list backward(autograd::AutogradContext* ctx, variable_list grads) {
        Tensor idx = ctx->get_saved_variables()[0];
        Tensor g = zeros({ctx->saved_data["n"].toInt()}, grads[0].scalar_type());
        return {g.scatter(0, idx, grads[0])};
    }
};

struct ExpSavingOutput : public autograd::Function<ExpSavingOutput> {
    static Tensor forward(autograd::AutogradContext* ctx, Tensor x) {
        Tensor y = x.exp();
        ctx->save_for_backward({y});
        return y;
    }
    static variable_list backward(autograd::AutogradContext* ctx, variable_list grads) {
        return {grads[0] * ctx->get_saved_variables()[0]};
    }
};

struct WrongCount : public autograd::Function<WrongCount> {
    static Tensor forward(autograd::AutogradContext*, Tensor x, Tensor y) { return x * y; }
    static variable_list backward(autograd::AutogradContext*, variable_list grads) { return {grads[0]}; }
};

struct ScaleInplace : public autograd::Function<ScaleInplace> {
    static Tensor forward(autograd::AutogradContext* ctx, Tensor x) {
        x.mul_(2);
        ctx->mark_dirty({x});
        return x;
    }
    static variable_list backward(autograd::AutogradContext*, variable_list grads) { return {grads[0] * 2}; }
};

TEST(CustomFunction, SavedDataAndNonTensorArguments) {
    Tensor x = leaf({1.0, 2.0});
    Tensor y = MulConstant::apply(x, 5.5);
    EXPECT_EQ(y.grad_fn()->name(), "(anonymous namespace)::MulConstant");
    y.sum().backward();
    EXPECT_TRUE(x.grad().equal(tensor({5.5, 5.5}, kDouble)));
}

TEST(CustomFunction, SaveForBackwardAndNeedsInputGrad) {
    Tensor in = randn({3, 4}, kDouble).requires_grad_();
    Tensor w = randn({2, 4}, kDouble);  // does not require grad
    Tensor b = randn({2}, kDouble).requires_grad_();
    Tensor out = LinearFn::apply(in, w, b);
    out.sum().backward();
    Tensor in2 = in.detach().requires_grad_();
    Tensor b2 = b.detach().requires_grad_();
    linear(in2, w, b2).sum().backward();
    EXPECT_TRUE(in.grad().allclose(in2.grad()));
    EXPECT_TRUE(b.grad().allclose(b2.grad()));
    EXPECT_FALSE(w.grad().defined());
}

TEST(CustomFunction, NonDifferentiableOutputs) {
    Tensor x = leaf({3.0, 1.0, 2.0});
    variable_list r = SortWithIndex::apply(x);
    EXPECT_TRUE(r[0].requires_grad());
    EXPECT_FALSE(r[1].requires_grad());
    (r[0] * tensor({1.0, 10.0, 100.0}, kDouble)).sum().backward();
    EXPECT_TRUE(x.grad().equal(tensor({100.0, 1.0, 10.0}, kDouble)));
}

TEST(CustomFunction, SavedOutputAndDoubleBackward) {
    Tensor x = leaf({0.5, 1.0});
    Tensor y = ExpSavingOutput::apply(x);
    variable_list g = autograd::grad({y.sum()}, {x}, {}, std::nullopt, true);
    EXPECT_TRUE(g[0].allclose(x.detach().exp()));
    variable_list g2 = autograd::grad({g[0].sum()}, {x});
    EXPECT_TRUE(g2[0].allclose(x.detach().exp()));
}

TEST(CustomFunction, Errors) {
    Tensor x = leaf({1.0}), y = leaf({2.0});
    Tensor z = WrongCount::apply(x, y);
    EXPECT_EQ(error_of([&] { z.backward(); }),
              "function (anonymous namespace)::WrongCount returned an incorrect number of gradients (expected 2, got 1)");
}

TEST(CustomFunction, MarkDirty) {
    Tensor x = leaf({1.0, 2.0});
    Tensor c = x.clone();
    Tensor r = ScaleInplace::apply(c);
    EXPECT_TRUE(r.is_same(c));
    EXPECT_TRUE(c.equal(tensor({2.0, 4.0}, kDouble)));
    r.sum().backward();
    EXPECT_TRUE(x.grad().equal(tensor({2.0, 2.0}, kDouble)));
}

TEST(CustomFunction, NoGradMeansNoGraph) {
    Tensor x = leaf({1.0});
    NoGradGuard g;
    Tensor y = MulConstant::apply(x, 2.0);
    EXPECT_FALSE(y.requires_grad());
}

TEST(IValue, Kinds) {
    IValue i(3), d(2.5), b(true), s("hi"), t(ones({2})), l(std::vector<int64_t>{1, 2});
    EXPECT_EQ(i.toInt(), 3);
    EXPECT_DOUBLE_EQ(d.toDouble(), 2.5);
    EXPECT_DOUBLE_EQ(i.toDouble(), 3.0);
    EXPECT_TRUE(b.toBool());
    EXPECT_EQ(s.toStringRef(), "hi");
    EXPECT_EQ(t.toTensor().numel(), 2);
    EXPECT_EQ(l.toIntVector(), (std::vector<int64_t>{1, 2}));
    EXPECT_TRUE(IValue().isNone());
    EXPECT_EQ(error_of([&] { (void)s.toInt(); }), "Expected Int but got String");
}

}  // namespace
