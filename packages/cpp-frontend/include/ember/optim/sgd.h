// ember::optim::SGD: stochastic gradient descent with PyTorch's momentum, dampening, Nesterov
// and (coupled, L2) weight-decay rules; the maths of Python Ember's ember.optim.SGD.
//
//   ember::optim::SGD opt(params, ember::optim::SGDOptions(0.01).momentum(0.9).nesterov(true));
#pragma once

#include "../export.h"
#include <memory>
#include <vector>

#include "optimizer.h"

namespace ember {
namespace optim {

class EMBER_API SGDOptions : public OptimizerCloneableOptions<SGDOptions> {
public:
    SGDOptions(double lr) : lr_(lr) {}  // NOLINT: implicit, as libtorch
    EMBER_OPTIM_ARG_(double, lr);
    EMBER_OPTIM_ARG_(double, momentum) = 0;
    EMBER_OPTIM_ARG_(double, dampening) = 0;
    EMBER_OPTIM_ARG_(double, weight_decay) = 0;
    EMBER_OPTIM_ARG_(bool, nesterov) = false;

public:
    double get_lr() const override { return lr(); }
    void set_lr(double lr) override { lr_ = lr; }
    // PyTorch's keys: lr, momentum, dampening, weight_decay, nesterov, maximize (False),
    // foreach (None), differentiable (False), fused (None).
    serialize::Value param_group() const override;
    void set_param_group(const serialize::Value& group) override;
};

// Made on a parameter's first step, and only with momentum != 0 (as PyTorch).
class EMBER_API SGDParamState : public OptimizerCloneableParamState<SGDParamState> {
public:
    std::vector<std::pair<std::string, Tensor>> named_tensors() const override;
    bool set_named_tensor(const std::string& name, const Tensor& value) override;

    EMBER_OPTIM_ARG_(Tensor, momentum_buffer);
};

class EMBER_API SGD : public Optimizer {
public:
    // PyTorch's checks: "Invalid learning rate: -1", "Invalid momentum value: ...",
    // "Invalid weight_decay value: ...", "Nesterov momentum requires a momentum and zero
    // dampening" (ember::ValueError), on the defaults (as PyTorch: a group's own options
    // are not checked).
    SGD(std::vector<OptimizerParamGroup> param_groups, SGDOptions defaults);
    SGD(std::vector<Tensor> params, SGDOptions defaults);

    std::unique_ptr<OptimizerParamState> make_param_state() const override;

protected:
    void step_group(OptimizerParamGroup& group) override;
};

}  // namespace optim
}  // namespace ember
