// ember::optim::Adam and AdamW: Adam (Kingma & Ba) with PyTorch's amsgrad and weight-decay
// options, and AdamW (Loshchilov & Hutter: decoupled weight decay, default 0.01); the maths
// of Python Ember's ember.optim.Adam / AdamW.
//
//   ember::optim::Adam opt(params, ember::optim::AdamOptions(1e-3).betas({0.9, 0.99}));
//   ember::optim::AdamW optw(params, ember::optim::AdamWOptions(1e-3).weight_decay(0.05));
#pragma once

#include "../export.h"
#include <cstdint>
#include <memory>
#include <tuple>
#include <vector>

#include "optimizer.h"

namespace ember {
namespace optim {

// Adam's (beta1, beta2).
using AdamBetas = std::tuple<double, double>;

namespace detail {
// The options Adam and AdamW share; only weight_decay's default differs.
template <typename Derived>
class AdamOptionsBase : public OptimizerCloneableOptions<Derived> {
public:
    explicit AdamOptionsBase(double lr, double weight_decay)
        : lr_(lr), weight_decay_(weight_decay) {}
    EMBER_OPTIM_CRTP_ARG_(Derived, double, lr);
    EMBER_OPTIM_CRTP_ARG_(Derived, double, weight_decay);
    EMBER_OPTIM_CRTP_ARG_(Derived, AdamBetas, betas) = {0.9, 0.999};
    EMBER_OPTIM_CRTP_ARG_(Derived, double, eps) = 1e-8;
    EMBER_OPTIM_CRTP_ARG_(Derived, bool, amsgrad) = false;

public:
    double get_lr() const override { return lr_; }
    void set_lr(double lr) override { lr_ = lr; }
};
}  // namespace detail

// Their param_group(): PyTorch's keys lr, betas, eps, weight_decay, amsgrad, maximize (False),
// foreach (None), capturable (False), differentiable (False), fused (None),
// decoupled_weight_decay (False for Adam, True for AdamW: set_param_group refuses the other's).
class EMBER_API AdamOptions : public detail::AdamOptionsBase<AdamOptions> {
public:
    AdamOptions(double lr = 1e-3) : AdamOptionsBase(lr, 0.0) {}  // NOLINT: implicit, as libtorch
    serialize::Value param_group() const override;
    void set_param_group(const serialize::Value& group) override;
};

class EMBER_API AdamWOptions : public detail::AdamOptionsBase<AdamWOptions> {
public:
    AdamWOptions(double lr = 1e-3) : AdamOptionsBase(lr, 1e-2) {}  // NOLINT: implicit, as libtorch
    serialize::Value param_group() const override;
    void set_param_group(const serialize::Value& group) override;
};

// Made on a parameter's first step: the step count, the running averages of the gradient
// and of its square, and with amsgrad the running maximum of the latter.
class EMBER_API AdamParamState : public OptimizerCloneableParamState<AdamParamState> {
public:
    // "step" is a 0-d float32 tensor, as PyTorch keeps it
    std::vector<std::pair<std::string, Tensor>> named_tensors() const override;
    bool set_named_tensor(const std::string& name, const Tensor& value) override;
    // "exp_avg" or "exp_avg_sq" when it is undefined
    std::string missing_entry() const override;

    EMBER_OPTIM_ARG_(int64_t, step) = 0;
    EMBER_OPTIM_ARG_(Tensor, exp_avg);
    EMBER_OPTIM_ARG_(Tensor, exp_avg_sq);
    EMBER_OPTIM_ARG_(Tensor, max_exp_avg_sq);
};
using AdamWParamState = AdamParamState;

namespace detail {
// Adam (Options = AdamOptions) and AdamW (AdamWOptions: decoupled weight decay).
//
// PyTorch's checks, in its order: "Invalid learning rate: ...", "Invalid epsilon value:
// ...", "Invalid beta parameter at index 0: ..." (and 1), "Invalid weight_decay value: ..."
// (ember::ValueError), on the defaults (as PyTorch: a group's own options are not checked).
template <typename Options>
class EMBER_API AdamFamily : public Optimizer {
public:
    AdamFamily(std::vector<OptimizerParamGroup> param_groups, Options defaults = {});
    AdamFamily(std::vector<Tensor> params, Options defaults = {});

    std::unique_ptr<OptimizerParamState> make_param_state() const override {
        return std::make_unique<AdamParamState>();
    }

protected:
    void step_group(OptimizerParamGroup& group) override;
};
extern template class AdamFamily<AdamOptions>;
extern template class AdamFamily<AdamWOptions>;
}  // namespace detail

class EMBER_API Adam : public detail::AdamFamily<AdamOptions> {
public:
    using AdamFamily::AdamFamily;
};

class EMBER_API AdamW : public detail::AdamFamily<AdamWOptions> {
public:
    using AdamFamily::AdamFamily;
};

}  // namespace optim
}  // namespace ember
