// The optimizer configurations of the optimizer checkpoint tests (tests/optim and
// tests/serialize), the same as optim_interop.py's KINDS: two parameters in two groups, the
// second group with its own lr.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "ember/optim.h"
#include "ember/serialize.h"
#include "ember/tensor.h"

namespace ember_optim_cases {

namespace optim = ember::optim;
using ember::Tensor;

inline const std::vector<std::string>& kinds() {
    static const std::vector<std::string> all = {"sgd", "nesterov", "adam", "adamw"};
    return all;
}

// [params[0]] with `defaults`, [params[1]] with them and lr `lr1`.
template <typename Options>
std::vector<optim::OptimizerParamGroup> two_groups(const std::vector<Tensor>& params, const Options& defaults,
                                                  double lr1) {
    Options second = defaults;
    second.lr(lr1);
    std::vector<optim::OptimizerParamGroup> groups;
    groups.emplace_back(std::vector<Tensor>{params.at(0)});
    groups.emplace_back(std::vector<Tensor>{params.at(1)}, std::make_unique<Options>(second));
    return groups;
}

// The optimizer `kind` over `params`: configured as optim_interop.py's KINDS, or (to load a
// state into) with lr 0.5 and the other options at their defaults.
inline std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& kind, const std::vector<Tensor>& params,
                                                        bool configured) {
    if (kind == "sgd" || kind == "nesterov") {
        optim::SGDOptions o(0.5);
        if (configured && kind == "sgd") o = optim::SGDOptions(0.1).momentum(0.9).dampening(0.1).weight_decay(0.01);
        if (configured && kind == "nesterov") o = optim::SGDOptions(0.1).momentum(0.9).nesterov(true);
        return std::make_unique<optim::SGD>(two_groups(params, o, configured ? 0.05 : 0.5), o);
    }
    if (kind == "adam") {
        optim::AdamOptions o(0.5);
        if (configured) {
            o = optim::AdamOptions(0.01).betas({0.8, 0.99}).eps(1e-6).weight_decay(0.01).amsgrad(true);
        }
        return std::make_unique<optim::Adam>(two_groups(params, o, configured ? 0.02 : 0.5), o);
    }
    EXPECT_EQ(kind, "adamw");
    optim::AdamWOptions o(0.5);
    if (configured) o = optim::AdamWOptions(0.01).betas({0.9, 0.95}).weight_decay(0.1);
    return std::make_unique<optim::AdamW>(two_groups(params, o, configured ? 0.02 : 0.5), o);
}

// Sets each parameter's gradient to a copy of grads[i] and steps.
inline void step_with(optim::Optimizer& opt, const std::vector<Tensor>& params, const std::vector<Tensor>& grads) {
    for (std::size_t i = 0; i < params.size(); ++i) params[i].set_grad(grads.at(i).clone());
    opt.step();
}

// The largest |a - b| / max(1, |b|) over the elements of two tensors of one shape.
inline double max_rel_diff(const Tensor& a, const Tensor& b) {
    EXPECT_EQ(a.sizes().vec(), b.sizes().vec());
    Tensor x = a.detach().to(ember::kDouble).contiguous(), y = b.detach().to(ember::kDouble).contiguous();
    double worst = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
        const double d = std::abs(x.data_ptr<double>()[i] - y.data_ptr<double>()[i]);
        worst = std::max(worst, d / std::max(1.0, std::abs(y.data_ptr<double>()[i])));
    }
    return worst;
}

// Expects a and b to be the same tree (floats bit for bit but NaN, tensors by dtype, shape and
// elements); `where` names the place in messages.
inline void expect_same_value(const ember::serialize::Value& a, const ember::serialize::Value& b,
                              const std::string& where) {
    using Kind = ember::serialize::Value::Kind;
    ASSERT_EQ(a.kind, b.kind) << where;
    switch (a.kind) {
        case Kind::None: break;
        case Kind::Bool: EXPECT_EQ(a.boolean, b.boolean) << where; break;
        case Kind::Int: EXPECT_EQ(a.integer, b.integer) << where; break;
        case Kind::Float:
            EXPECT_EQ(std::signbit(a.real), std::signbit(b.real)) << where;
            EXPECT_EQ(a.real, b.real) << where;
            break;
        case Kind::Str: EXPECT_EQ(a.text, b.text) << where; break;
        case Kind::Tensor:
            EXPECT_EQ(a.tensor.dtype, b.tensor.dtype) << where;
            EXPECT_EQ(a.tensor.shape, b.tensor.shape) << where;
            EXPECT_EQ(ember::serialize::contiguous_bytes(a.tensor), ember::serialize::contiguous_bytes(b.tensor))
                << where;
            break;
        default:
            ASSERT_EQ(a.items.size(), b.items.size()) << where;
            for (std::size_t i = 0; i < a.items.size(); ++i) {
                expect_same_value(a.items[i], b.items[i], where + "/" + std::to_string(i));
            }
    }
}

}  // namespace ember_optim_cases
