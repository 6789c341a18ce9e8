// The optimizers' trajectories against Python Ember's (golden_optim.py writes them): the
// same initial parameters and gradients, the same options and schedulers, the parameters
// compared after every step (float32 to 1e-6, float64 to 1e-12), the lrs exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "common/golden.h"
#include "ember/ember.h"
#include "ember/optim.h"

namespace {

using ember::Tensor;
namespace optim = ember::optim;

// The tensors of golden file EMBER_GOLDEN_DIR/<name>.safetensors (copies, read anew).
ember::testing::GoldenTensors read_golden(const std::string& name) {
    return ember::testing::read_tensors(std::string(EMBER_GOLDEN_DIR) + "/" + name + ".safetensors");
}

int64_t meta_int(const ember::testing::GoldenTensors& golden, const std::string& key) {
    return std::stoll(golden.metadata.at(key));
}

// The largest |a - b| / max(1, |b|).
double max_rel_diff(const Tensor& a, const Tensor& b) {
    Tensor x = a.detach().to(ember::kDouble).contiguous();
    Tensor y = b.to(ember::kDouble).contiguous();
    EXPECT_EQ(x.sizes().vec(), y.sizes().vec());
    const double* px = x.data_ptr<double>();
    const double* py = y.data_ptr<double>();
    double worst = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
        worst = std::fmax(worst, std::fabs(px[i] - py[i]) / std::fmax(1.0, std::fabs(py[i])));
    }
    return worst;
}

using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;
using MakeScheduler = std::function<std::unique_ptr<optim::LRScheduler>(optim::Optimizer&)>;

// Runs the configuration `name` as golden_optim.py's _run does, comparing every step.
void run_golden(const std::string& name, const MakeOptimizer& make_opt,
                const MakeScheduler& make_sched = nullptr) {
    if (!EMBER_GOLDEN_AVAILABLE) GTEST_SKIP() << "no Python to write the golden files";
    const ember::testing::GoldenTensors golden = read_golden(name);
    const int64_t steps = meta_int(golden, "steps");
    const int64_t n = meta_int(golden, "params");
    std::vector<Tensor> params;
    for (int64_t i = 0; i < n; ++i) {
        params.push_back(golden.at("p" + std::to_string(i) + ".init").clone().requires_grad_());
    }
    const double tol = params[0].scalar_type() == ember::kFloat ? 1e-6 : 1e-12;
    std::unique_ptr<optim::Optimizer> opt = make_opt(params);
    std::unique_ptr<optim::LRScheduler> sched = make_sched ? make_sched(*opt) : nullptr;

    std::vector<Tensor> coeffs;  // the quadratic-loss configuration steps through a closure
    const bool quadratic = golden.has("loss.step1");
    if (quadratic) {
        const ember::testing::GoldenTensors c = read_golden("quadratic_coeffs");
        for (int64_t i = 0; i < n; ++i) {
            coeffs.push_back(c.at("c" + std::to_string(i)).to(params[0].scalar_type()));
        }
    }
    double worst = 0;
    for (int64_t k = 1; k <= steps; ++k) {
        const std::string step = ".step" + std::to_string(k);
        if (quadratic) {
            Tensor loss = opt->step([&] {
                opt->zero_grad();
                Tensor total;
                for (int64_t i = 0; i < n; ++i) {
                    Tensor term = (coeffs[i] * params[i] * params[i]).sum() * 0.5;
                    total = total.defined() ? total + term : term;
                }
                total.backward();
                return total;
            });
            EXPECT_NEAR(loss.item<double>(), golden.at("loss" + step).item<double>(), 1e-12)
                << name << " step " << k;
        } else {
            for (int64_t i = 0; i < n; ++i) {
                const std::string key = "g" + std::to_string(i) + step;
                params[i].set_grad(golden.has(key) ? golden.at(key) : Tensor());
            }
            EXPECT_FALSE(opt->step().defined());
        }
        if (sched) sched->step();
        for (int64_t i = 0; i < n; ++i) {
            const double diff = max_rel_diff(params[i], golden.at("p" + std::to_string(i) + step));
            EXPECT_LE(diff, tol) << name << ": parameter " << i << " after step " << k;
            worst = std::fmax(worst, diff);
        }
        const Tensor lrs = golden.at("lr" + step);
        std::vector<double> expected(lrs.data_ptr<double>(), lrs.data_ptr<double>() + lrs.numel());
        std::vector<double> got;
        if (sched) {
            got = sched->get_last_lr();
        } else {
            for (const auto& g : opt->param_groups()) got.push_back(g.options().get_lr());
        }
        EXPECT_EQ(got, expected) << name << ": lrs after step " << k;
    }
    ::testing::Test::RecordProperty("max_rel_diff", std::to_string(worst));
    std::cout << "[ golden   ] " << name << ": max relative difference " << worst << "\n";
}

template <typename Opt, typename Options>
MakeOptimizer simple(Options options) {
    return [options](std::vector<Tensor> params) {
        return std::make_unique<Opt>(std::move(params), options);
    };
}

TEST(OptimGolden, SGDPlainFloat32) { run_golden("sgd_plain_f32", simple<optim::SGD>(optim::SGDOptions(0.1))); }

TEST(OptimGolden, SGDPlainFloat64) { run_golden("sgd_plain_f64", simple<optim::SGD>(optim::SGDOptions(0.1))); }

TEST(OptimGolden, SGDMomentumWeightDecay) {
    run_golden("sgd_momentum_wd_f32",
               simple<optim::SGD>(optim::SGDOptions(0.05).momentum(0.9).weight_decay(0.01)));
}

TEST(OptimGolden, SGDNesterov) {
    run_golden("sgd_nesterov_f64", simple<optim::SGD>(optim::SGDOptions(0.05).momentum(0.9).nesterov(
                                                          true).weight_decay(1e-3)));
}

TEST(OptimGolden, SGDDampeningMissingGradients) {
    run_golden("sgd_dampening_f32",
               simple<optim::SGD>(optim::SGDOptions(0.1).momentum(0.8).dampening(0.3)));
}

TEST(OptimGolden, Adam) { run_golden("adam_f32", simple<optim::Adam>(optim::AdamOptions(0.01))); }

TEST(OptimGolden, AdamWeightDecayAmsgrad) {
    run_golden("adam_wd_amsgrad_f64",
               simple<optim::Adam>(optim::AdamOptions(0.02).betas({0.8, 0.99}).eps(1e-6).weight_decay(
                   0.1).amsgrad(true)));
}

TEST(OptimGolden, AdamLowBeta1Amsgrad) {  // 1 - beta1 >= 0.5: lerp's other branch
    run_golden("adam_lowbeta_amsgrad_f32",
               simple<optim::Adam>(optim::AdamOptions(0.01).betas({0.3, 0.9}).amsgrad(true)));
}

TEST(OptimGolden, AdamW) { run_golden("adamw_f32", simple<optim::AdamW>(optim::AdamWOptions(0.01))); }

TEST(OptimGolden, AdamWAmsgrad) {
    run_golden("adamw_amsgrad_f64",
               simple<optim::AdamW>(optim::AdamWOptions(0.01).weight_decay(0.1).amsgrad(true)));
}

TEST(OptimGolden, SGDParamGroupsStepLR) {
    run_golden(
        "sgd_groups_steplr_f32",
        [](std::vector<Tensor> p) {
            std::vector<optim::OptimizerParamGroup> groups;
            groups.emplace_back(std::vector<Tensor>{p[0], p[1]});
            groups.emplace_back(std::vector<Tensor>{p[2]},
                                std::make_unique<optim::SGDOptions>(
                                    optim::SGDOptions(0.01).momentum(0.5)));
            return std::make_unique<optim::SGD>(groups, optim::SGDOptions(0.1).momentum(0.9));
        },
        [](optim::Optimizer& o) { return std::make_unique<optim::StepLR>(o, 3, 0.5); });
}

TEST(OptimGolden, AdamCosineAnnealing) {
    run_golden("adam_cosine_f64", simple<optim::Adam>(optim::AdamOptions(0.05)),
               [](optim::Optimizer& o) {
                   return std::make_unique<optim::CosineAnnealingLR>(o, 4, 0.001);
               });
}

TEST(OptimGolden, AdamWParamGroupsCosineAnnealing) {
    run_golden(
        "adamw_groups_cosine_f32",
        [](std::vector<Tensor> p) {
            std::vector<optim::OptimizerParamGroup> groups;
            groups.emplace_back(std::vector<Tensor>{p[0]},
                                std::make_unique<optim::AdamWOptions>(optim::AdamWOptions(0.003)));
            groups.emplace_back(std::vector<Tensor>{p[1], p[2]});
            return std::make_unique<optim::AdamW>(groups, optim::AdamWOptions(0.01));
        },
        [](optim::Optimizer& o) { return std::make_unique<optim::CosineAnnealingLR>(o, 3); });
}

TEST(OptimGolden, SGDClosureQuadraticLoss) {
    run_golden("sgd_closure_quadratic_f64",
               simple<optim::SGD>(optim::SGDOptions(0.1).momentum(0.9)));
}

}  // namespace
