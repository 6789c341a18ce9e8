// ember::optim: options and their checks, parameter groups, state, zero_grad, step's
// bookkeeping (no graph, version counters, parameters without a gradient), closures,
// non-contiguous parameters and the schedulers' sequences.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/optim.h"

namespace {

using ember::Tensor;
namespace optim = ember::optim;

template <typename F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const ember::ValueError& e) {
        return std::string("ValueError: ") + e.what();
    } catch (const ember::TypeError& e) {
        return std::string("TypeError: ") + e.what();
    } catch (const ember::Error& e) {
        return e.what();
    }
    return "no error";
}

Tensor param(std::vector<int64_t> shape, ember::ScalarType dtype = ember::kFloat) {
    return ember::randn(shape, dtype).requires_grad_();
}

TEST(OptimOptions, DefaultsAndBuilders) {
    optim::SGDOptions sgd(0.1);
    EXPECT_EQ(sgd.lr(), 0.1);
    EXPECT_EQ(sgd.momentum(), 0.0);
    EXPECT_EQ(sgd.dampening(), 0.0);
    EXPECT_EQ(sgd.weight_decay(), 0.0);
    EXPECT_FALSE(sgd.nesterov());
    sgd.momentum(0.9).nesterov(true).weight_decay(1e-4);
    EXPECT_EQ(sgd.momentum(), 0.9);
    EXPECT_TRUE(sgd.nesterov());
    EXPECT_EQ(sgd.weight_decay(), 1e-4);

    optim::AdamOptions adam;
    EXPECT_EQ(adam.lr(), 1e-3);
    EXPECT_EQ(std::get<0>(adam.betas()), 0.9);
    EXPECT_EQ(std::get<1>(adam.betas()), 0.999);
    EXPECT_EQ(adam.eps(), 1e-8);
    EXPECT_EQ(adam.weight_decay(), 0.0);
    EXPECT_FALSE(adam.amsgrad());
    optim::AdamWOptions adamw = optim::AdamWOptions(3e-4).betas({0.8, 0.9}).amsgrad(true);
    EXPECT_EQ(adamw.weight_decay(), 1e-2);  // AdamW's default
    EXPECT_EQ(adamw.lr(), 3e-4);
    EXPECT_EQ(std::get<0>(adamw.betas()), 0.8);
    EXPECT_TRUE(adamw.amsgrad());
}

TEST(OptimOptions, SGDChecks) {
    std::vector<Tensor> ps{param({2})};
    EXPECT_EQ(error_of([&] { optim::SGD(ps, optim::SGDOptions(-1)); }),
              "ValueError: Invalid learning rate: -1");
    EXPECT_EQ(error_of([&] { optim::SGD(ps, optim::SGDOptions(0.1).momentum(-0.5)); }),
              "ValueError: Invalid momentum value: -0.5");
    EXPECT_EQ(error_of([&] { optim::SGD(ps, optim::SGDOptions(0.1).weight_decay(-1)); }),
              "ValueError: Invalid weight_decay value: -1");
    EXPECT_EQ(error_of([&] { optim::SGD(ps, optim::SGDOptions(0.1).nesterov(true)); }),
              "ValueError: Nesterov momentum requires a momentum and zero dampening");
    EXPECT_EQ(error_of([&] {
                  optim::SGD(ps, optim::SGDOptions(0.1).momentum(0.9).dampening(0.1).nesterov(true));
              }),
              "ValueError: Nesterov momentum requires a momentum and zero dampening");
    EXPECT_EQ(error_of([&] { optim::SGD(ps, optim::SGDOptions(0.1).momentum(0.9).nesterov(true)); }),
              "no error");
}

TEST(OptimOptions, AdamChecks) {
    std::vector<Tensor> ps{param({2})};
    EXPECT_EQ(error_of([&] { optim::Adam(ps, optim::AdamOptions(-1)); }),
              "ValueError: Invalid learning rate: -1");
    EXPECT_EQ(error_of([&] { optim::Adam(ps, optim::AdamOptions().eps(-1e-8)); }),
              "ValueError: Invalid epsilon value: -1e-08");
    EXPECT_EQ(error_of([&] { optim::Adam(ps, optim::AdamOptions().betas({1.0, 0.999})); }),
              "ValueError: Invalid beta parameter at index 0: 1");
    EXPECT_EQ(error_of([&] { optim::Adam(ps, optim::AdamOptions().betas({0.9, -0.1})); }),
              "ValueError: Invalid beta parameter at index 1: -0.1");
    EXPECT_EQ(error_of([&] { optim::Adam(ps, optim::AdamOptions().weight_decay(-0.5)); }),
              "ValueError: Invalid weight_decay value: -0.5");
    EXPECT_EQ(error_of([&] { optim::AdamW(ps, optim::AdamWOptions(-0.5)); }),
              "ValueError: Invalid learning rate: -0.5");
    EXPECT_EQ(error_of([&] { optim::AdamW(ps, optim::AdamWOptions().betas({0.9, 1.0})); }),
              "ValueError: Invalid beta parameter at index 1: 1");
}

TEST(Optimizer, ParameterChecks) {
    EXPECT_EQ(error_of([] { optim::SGD(std::vector<Tensor>{}, optim::SGDOptions(0.1)); }),
              "ValueError: optimizer got an empty parameter list");
    EXPECT_EQ(error_of([] {
                  optim::Adam(std::vector<optim::OptimizerParamGroup>{}, optim::AdamOptions());
              }),
              "ValueError: optimizer got an empty parameter list");
    Tensor leaf = param({3});
    Tensor non_leaf = leaf * 2;
    EXPECT_EQ(error_of([&] { optim::SGD(std::vector<Tensor>{non_leaf}, optim::SGDOptions(0.1)); }),
              "ValueError: can't optimize a non-leaf Tensor");
    EXPECT_EQ(error_of([&] { optim::SGD(std::vector<Tensor>{Tensor()}, optim::SGDOptions(0.1)); }),
              "TypeError: optimizer can only optimize Tensors, but one of the params is undefined");
    non_leaf.retain_grad();  // a non-leaf that retains its grad may be optimized, as in PyTorch
    EXPECT_EQ(error_of([&] { optim::SGD(std::vector<Tensor>{non_leaf}, optim::SGDOptions(0.1)); }),
              "no error");

    optim::SGD opt(std::vector<Tensor>{leaf}, optim::SGDOptions(0.1));
    EXPECT_EQ(error_of([&] { opt.add_param_group(optim::OptimizerParamGroup({leaf})); }),
              "ValueError: some parameters appear in more than one parameter group");
    EXPECT_EQ(error_of([&] { opt.add_parameters({leaf}); }),
              "ValueError: some parameters appear in more than one parameter group");
}

TEST(Optimizer, ParamGroupsGetDefaultsOrKeepTheirOptions) {
    Tensor a = param({2}), b = param({2}), c = param({2});
    optim::SGD opt(std::vector<Tensor>{a}, optim::SGDOptions(0.1).momentum(0.9));
    opt.add_param_group(optim::OptimizerParamGroup({b}));
    opt.add_param_group(optim::OptimizerParamGroup(
        {c}, std::make_unique<optim::SGDOptions>(optim::SGDOptions(0.5))));
    ASSERT_EQ(opt.param_groups().size(), 3u);
    EXPECT_EQ(opt.size(), 3u);
    const auto& g1 = static_cast<const optim::SGDOptions&>(opt.param_groups()[1].options());
    EXPECT_EQ(g1.lr(), 0.1);
    EXPECT_EQ(g1.momentum(), 0.9);
    const auto& g2 = static_cast<const optim::SGDOptions&>(opt.param_groups()[2].options());
    EXPECT_EQ(g2.lr(), 0.5);
    EXPECT_EQ(g2.momentum(), 0.0);
    // the defaults are copied: changing them later leaves the groups alone
    static_cast<optim::SGDOptions&>(opt.defaults()).lr(7);
    EXPECT_EQ(opt.param_groups()[0].options().get_lr(), 0.1);

    // each group steps with its own lr
    for (Tensor t : {a, b, c}) t.set_grad(ember::ones({2}));
    Tensor a0 = a.detach().clone(), c0 = c.detach().clone();
    opt.step();
    EXPECT_TRUE(a.detach().allclose(a0 - 0.1f));
    EXPECT_TRUE(c.detach().allclose(c0 - 0.5f));

    opt.add_parameters({param({4})});
    EXPECT_EQ(opt.parameters().size(), 2u);
    EXPECT_EQ(opt.size(), 4u);
}

TEST(Optimizer, ParamGroupCopiesCloneOptions) {
    optim::OptimizerParamGroup g({param({1})}, std::make_unique<optim::AdamOptions>(0.25));
    optim::OptimizerParamGroup copy = g;
    copy.options().set_lr(1.0);
    EXPECT_EQ(g.options().get_lr(), 0.25);
    EXPECT_EQ(copy.options().get_lr(), 1.0);
    EXPECT_EQ(copy.params()[0].unsafeGetTensorImpl(), g.params()[0].unsafeGetTensorImpl());
    optim::OptimizerParamGroup bare({param({1})});
    EXPECT_FALSE(bare.has_options());
    EXPECT_THROW(bare.options(), ember::Error);
}

TEST(Optimizer, ZeroGrad) {
    Tensor p = param({3});
    optim::SGD opt(std::vector<Tensor>{p}, optim::SGDOptions(0.1));
    (p * p).sum().backward();
    ASSERT_TRUE(p.grad().defined());
    Tensor g = p.grad();
    opt.zero_grad(/*set_to_none=*/false);
    ASSERT_TRUE(p.grad().defined());
    EXPECT_TRUE(p.grad().is_same(g));  // zeroed in place
    EXPECT_TRUE(p.grad().equal(ember::zeros({3})));
    EXPECT_FALSE(p.grad().requires_grad());
    opt.zero_grad();
    EXPECT_FALSE(p.grad().defined());
    opt.zero_grad();  // nothing to do
}

TEST(Optimizer, StepIsInPlaceWithoutGraph) {
    for (auto make : {+[](std::vector<Tensor> ps) -> std::unique_ptr<optim::Optimizer> {
                          return std::make_unique<optim::SGD>(ps, optim::SGDOptions(0.1).momentum(0.9));
                      },
                      +[](std::vector<Tensor> ps) -> std::unique_ptr<optim::Optimizer> {
                          return std::make_unique<optim::Adam>(ps, optim::AdamOptions(0.1));
                      },
                      +[](std::vector<Tensor> ps) -> std::unique_ptr<optim::Optimizer> {
                          return std::make_unique<optim::AdamW>(ps, optim::AdamWOptions(0.1));
                      }}) {
        Tensor p = param({4, 3});
        Tensor untouched = param({2});  // no gradient: skipped, no state
        auto opt = make({p, untouched});
        void* storage = p.data_ptr();
        Tensor before = p.detach().clone(), untouched_before = untouched.detach().clone();
        (p * p).sum().backward();
        const uint32_t version = p._version();
        opt->step();
        EXPECT_EQ(p.data_ptr(), storage);  // updated in place
        EXPECT_GT(p._version(), version);  // as an in-place op
        EXPECT_FALSE(p.equal(before));
        EXPECT_TRUE(p.is_leaf());
        EXPECT_FALSE(p.grad_fn());
        EXPECT_TRUE(p.requires_grad());
        EXPECT_TRUE(untouched.equal(untouched_before));
        EXPECT_EQ(opt->state().size(), 1u);
        EXPECT_EQ(opt->state().count(untouched.unsafeGetTensorImpl()), 0u);
        // the state tensors record no graph either
        (p * p).sum().backward();
        opt->step();
        EXPECT_TRUE(p.is_leaf());
    }
}

TEST(Optimizer, State) {
    Tensor p = param({5});
    optim::SGD plain(std::vector<Tensor>{p}, optim::SGDOptions(0.1));
    p.set_grad(ember::ones({5}));
    plain.step();
    EXPECT_TRUE(plain.state().empty());  // plain SGD keeps no state, as PyTorch

    optim::SGD momentum(std::vector<Tensor>{p}, optim::SGDOptions(0.1).momentum(0.9));
    momentum.step();
    ASSERT_EQ(momentum.state().size(), 1u);
    auto& sgd_state =
        static_cast<optim::SGDParamState&>(*momentum.state().at(p.unsafeGetTensorImpl()));
    EXPECT_TRUE(sgd_state.momentum_buffer().equal(ember::ones({5})));  // the first gradient
    momentum.step();
    EXPECT_TRUE(sgd_state.momentum_buffer().allclose(ember::full({5}, 1.9)));

    optim::Adam adam(std::vector<Tensor>{p}, optim::AdamOptions().amsgrad(true));
    adam.step();
    adam.step();
    auto& adam_state =
        static_cast<optim::AdamParamState&>(*adam.state().at(p.unsafeGetTensorImpl()));
    EXPECT_EQ(adam_state.step(), 2);
    EXPECT_TRUE(adam_state.exp_avg().defined());
    EXPECT_TRUE(adam_state.exp_avg_sq().defined());
    EXPECT_TRUE(adam_state.max_exp_avg_sq().defined());
    auto copy = adam_state.clone();
    EXPECT_EQ(static_cast<optim::AdamParamState&>(*copy).step(), 2);

    optim::Adam no_ams(std::vector<Tensor>{p}, optim::AdamOptions());
    no_ams.step();
    EXPECT_FALSE(static_cast<optim::AdamParamState&>(*no_ams.state().at(p.unsafeGetTensorImpl()))
                     .max_exp_avg_sq()
                     .defined());
}

TEST(Optimizer, StepWithClosure) {
    Tensor w = ember::zeros({3}, ember::kDouble).requires_grad_();
    Tensor target = ember::tensor({1.0, -2.0, 3.0}, ember::kDouble);
    optim::SGD opt(std::vector<Tensor>{w}, optim::SGDOptions(0.1));
    auto closure = [&] {
        opt.zero_grad();
        Tensor loss = ((w - target) * (w - target)).sum();
        loss.backward();
        return loss;
    };
    ember::NoGradGuard no_grad;  // the closure runs with grad mode on all the same
    Tensor first = opt.step(closure);
    EXPECT_DOUBLE_EQ(first.item<double>(), 14.0);
    EXPECT_TRUE(ember::allclose(w.detach(), target * 0.2));
    for (int i = 0; i < 100; ++i) opt.step(closure);
    EXPECT_LT(opt.step(closure).item<double>(), 1e-12);
    EXPECT_FALSE(ember::GradMode::is_enabled());
}

TEST(Optimizer, TrainsALinearModel) {
    ember::manual_seed(0);
    Tensor x = ember::randn({64, 3});
    Tensor true_w = ember::tensor({{2.0f}, {-1.0f}, {0.5f}});
    Tensor y = x.matmul(true_w) + 0.3f;
    for (int which = 0; which < 3; ++which) {
        Tensor w = ember::zeros({3, 1}).requires_grad_();
        Tensor b = ember::zeros({1}).requires_grad_();
        std::unique_ptr<optim::Optimizer> opt;
        if (which == 0) opt = std::make_unique<optim::SGD>(std::vector<Tensor>{w, b}, optim::SGDOptions(0.1).momentum(0.9));
        if (which == 1) opt = std::make_unique<optim::Adam>(std::vector<Tensor>{w, b}, optim::AdamOptions(0.05));
        if (which == 2) opt = std::make_unique<optim::AdamW>(std::vector<Tensor>{w, b}, optim::AdamWOptions(0.05).weight_decay(0));
        double loss_value = 0;
        for (int step = 0; step < 400; ++step) {
            opt->zero_grad();
            Tensor diff = x.matmul(w) + b - y;
            Tensor loss = (diff * diff).mean();
            loss.backward();
            opt->step();
            loss_value = loss.item<double>();
        }
        EXPECT_LT(loss_value, 1e-4) << "optimizer " << which;
        EXPECT_TRUE(w.detach().allclose(true_w, 1e-2, 1e-2)) << "optimizer " << which;
    }
}

TEST(Optimizer, NonContiguousParameter) {
    Tensor base = ember::randn({3, 4});
    Tensor p = base.t();  // a leaf view, not contiguous
    ASSERT_FALSE(p.is_contiguous());
    p.requires_grad_();
    Tensor before = p.detach().clone();
    optim::SGD opt(std::vector<Tensor>{p}, optim::SGDOptions(0.5));
    p.set_grad(ember::ones({4, 3}));
    opt.step();
    EXPECT_TRUE(p.detach().allclose(before - 0.5f));
    EXPECT_TRUE(base.allclose(before.t() - 0.5f));  // through the view, into base's storage
}

TEST(Optimizer, ExpandedGradient) {
    Tensor p = param({2, 3});
    Tensor before = p.detach().clone();
    optim::Adam opt(std::vector<Tensor>{p}, optim::AdamOptions(0.1));
    p.set_grad(ember::ones({1, 3}).expand({2, 3}));  // stride 0
    opt.step();
    EXPECT_TRUE(p.detach().allclose(before - 0.1f, 1e-5, 1e-5));  // Adam's first step: lr * sign
}

TEST(Optimizer, UnsupportedDtype) {
    Tensor p = ember::zeros({2}, ember::kHalf);
    p.requires_grad_();
    optim::SGD opt(std::vector<Tensor>{p}, optim::SGDOptions(0.1));
    p.set_grad(ember::ones({2}, ember::kHalf));
    EXPECT_EQ(error_of([&] { opt.step(); }), "SGD supports float32 and float64 parameters, got Half");
}

TEST(Optimizer, GroupOptionsOfAnotherOptimizer) {
    Tensor p = param({2});
    std::vector<optim::OptimizerParamGroup> groups;
    groups.emplace_back(std::vector<Tensor>{p}, std::make_unique<optim::AdamOptions>());
    optim::SGD opt(groups, optim::SGDOptions(0.1));
    p.set_grad(ember::ones({2}));
    EXPECT_EQ(error_of([&] { opt.step(); }),
              "SGD: a parameter group has options of another optimizer");
}

// ----------------------------------------------------------------------------- schedulers

std::vector<double> lrs_of(optim::Optimizer& opt) {
    std::vector<double> lrs;
    for (auto& g : opt.param_groups()) lrs.push_back(g.options().get_lr());
    return lrs;
}

TEST(LRScheduler, StepLR) {
    optim::SGD opt(std::vector<Tensor>{param({2})}, optim::SGDOptions(1.0));
    optim::StepLR sched(opt, 2, 0.5);
    EXPECT_EQ(sched.last_epoch(), 0);
    EXPECT_EQ(sched.get_last_lr(), std::vector<double>{1.0});
    EXPECT_EQ(sched.base_lrs(), std::vector<double>{1.0});
    std::vector<double> seen;
    for (int i = 0; i < 7; ++i) {
        sched.step();
        seen.push_back(sched.get_last_lr()[0]);
        EXPECT_EQ(lrs_of(opt)[0], seen.back());
    }
    EXPECT_EQ(seen, (std::vector<double>{1.0, 0.5, 0.5, 0.25, 0.25, 0.125, 0.125}));
    EXPECT_EQ(sched.last_epoch(), 7);
    EXPECT_EQ(error_of([&] { optim::StepLR(opt, 0); }),
              "ValueError: StepLR: step_size must be positive, got 0");
}

TEST(LRScheduler, CosineAnnealingFollowsTheClosedForm) {
    const double base = 0.1, eta_min = 0.01;
    const int64_t T = 5;
    optim::Adam opt(std::vector<Tensor>{param({2})}, optim::AdamOptions(base));
    opt.add_param_group(optim::OptimizerParamGroup(
        {param({2})}, std::make_unique<optim::AdamOptions>(optim::AdamOptions(0.2))));
    optim::CosineAnnealingLR sched(opt, T, eta_min);
    EXPECT_EQ(sched.get_last_lr(), (std::vector<double>{0.1, 0.2}));
    for (int64_t e = 1; e <= 3 * T; ++e) {
        sched.step();
        for (std::size_t g = 0; g < 2; ++g) {
            const double b = g == 0 ? base : 0.2;
            const double closed = eta_min + (b - eta_min) * (1 + std::cos(3.141592653589793 * static_cast<double>(e) / static_cast<double>(T))) / 2;
            EXPECT_NEAR(sched.get_last_lr()[g], closed, 1e-12) << "epoch " << e;
        }
    }
    EXPECT_EQ(error_of([&] { optim::CosineAnnealingLR(opt, 0); }),
              "ValueError: CosineAnnealingLR: T_max must be positive, got 0");
}

TEST(LRScheduler, RecursiveFormCarriesExternalChanges) {
    // Python's recursive form scales the group's current lr, so a change made by hand carries
    optim::SGD opt(std::vector<Tensor>{param({2})}, optim::SGDOptions(1.0));
    optim::StepLR sched(opt, 1, 0.5);
    opt.param_groups()[0].options().set_lr(4.0);
    sched.step();
    EXPECT_EQ(sched.get_last_lr()[0], 2.0);
}

}  // namespace
