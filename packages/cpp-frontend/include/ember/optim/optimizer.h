// ember::optim::Optimizer: the base class of the optimizers (libtorch's torch::optim::Optimizer,
// with Python Ember's checks and maths).
//
//   auto opt = ember::optim::SGD(model->parameters(), ember::optim::SGDOptions(0.1).momentum(0.9));
//   for (...) {
//       opt.zero_grad();
//       loss = ...; loss.backward();
//       opt.step();
//   }
//
// Parameters live in parameter groups (OptimizerParamGroup), each with its own options (lr,
// momentum...; a group given without options gets a copy of the optimizer's defaults). The
// per-parameter state (momentum buffers, Adam's moments) is made on a parameter's first
// step and kept in state(), keyed by the parameter's TensorImpl. step() updates the
// parameters in place, outside autograd (no graph is recorded), skipping the parameters
// that have no gradient; step(closure) first re-evaluates the loss with grad mode on and
// returns it.
#pragma once

#include "../export.h"
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../error.h"
#include "../serialize.h"
#include "../tensor.h"
#include "arg.h"

namespace ember {
namespace optim {

// The options of a parameter group (SGDOptions, AdamOptions...). Every optimizer has a
// learning rate, which the schedulers read and write through get_lr/set_lr.
class EMBER_API OptimizerOptions {
public:
    virtual ~OptimizerOptions();
    virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
    virtual double get_lr() const = 0;
    virtual void set_lr(double lr) = 0;
    // The options as a group of Python's optimizer.state_dict()["param_groups"] holds them
    // (all but "params"), in PyTorch's order, with PyTorch 2.13's values for the options C++
    // does not have ("maximize": False, "foreach": None, ...). The base class: {"lr": lr}.
    virtual serialize::Value param_group() const;
    // Sets the options from such a group (what Python's load_state_dict does). Throws
    // ember::ValueError, changing nothing, for a group of another optimizer (a key this one
    // needs is missing, of another type, or names another variant: Adam's
    // decoupled_weight_decay=False for AdamW) and for an option C++ does not have that is
    // not at its default ("maximize": True); options that only choose an implementation
    // (foreach, fused, capturable, differentiable) and unknown keys ("initial_lr") are
    // ignored. The base class reads "lr".
    virtual void set_param_group(const serialize::Value& group);
};

// The state an optimizer keeps for one parameter (SGDParamState, AdamParamState).
class EMBER_API OptimizerParamState {
public:
    virtual ~OptimizerParamState();
    virtual std::unique_ptr<OptimizerParamState> clone() const = 0;
    // The state as tensors named as in Python's optimizer.state_dict()["state"][i]
    // ("momentum_buffer"; Adam's "step", "exp_avg", ...), undefined ones left out: what
    // ember::save(optimizer, path) writes. None by default.
    virtual std::vector<std::pair<std::string, Tensor>> named_tensors() const;
    // Sets the entry `name` of named_tensors() from `value` (what ember::load reads); false
    // when the state has no entry of that name.
    virtual bool set_named_tensor(const std::string& name, const Tensor& value);
    // The name of an entry that step() needs but a loaded state lacks (Adam's "exp_avg"), or
    // "" when the state is complete. "" by default.
    virtual std::string missing_entry() const;
};

namespace detail {
// Base with clone() implemented for Derived, a subclass of Base.
template <typename Derived, typename Base>
class Cloneable : public Base {
public:
    std::unique_ptr<Base> clone() const override {
        return std::make_unique<Derived>(static_cast<const Derived&>(*this));
    }
};
}  // namespace detail

// The bases of options and state classes, with clone() (libtorch's names):
//   class MyOptions : public OptimizerCloneableOptions<MyOptions> { ... };
template <typename Derived>
using OptimizerCloneableOptions = detail::Cloneable<Derived, OptimizerOptions>;
template <typename Derived>
using OptimizerCloneableParamState = detail::Cloneable<Derived, OptimizerParamState>;

// A list of parameters and, optionally, the options they use instead of the defaults.
class EMBER_API OptimizerParamGroup {
public:
    OptimizerParamGroup(std::vector<Tensor> params)  // NOLINT: implicit, as libtorch
        : params_(std::move(params)) {}
    OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options)
        : params_(std::move(params)), options_(std::move(options)) {}
    OptimizerParamGroup(const OptimizerParamGroup& other);
    OptimizerParamGroup& operator=(const OptimizerParamGroup& other);
    OptimizerParamGroup(OptimizerParamGroup&&) noexcept = default;
    OptimizerParamGroup& operator=(OptimizerParamGroup&&) noexcept = default;
    ~OptimizerParamGroup() = default;

    bool has_options() const noexcept { return static_cast<bool>(options_); }
    // The group's options (an Error when it has none).
    OptimizerOptions& options();
    const OptimizerOptions& options() const;
    void set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); }
    std::vector<Tensor>& params() noexcept { return params_; }
    const std::vector<Tensor>& params() const noexcept { return params_; }

private:
    std::vector<Tensor> params_;
    std::unique_ptr<OptimizerOptions> options_;
};

class EMBER_API Optimizer {
public:
    using LossClosure = std::function<Tensor()>;
    using StateMap = std::unordered_map<void*, std::unique_ptr<OptimizerParamState>>;

    // Python's checks: a non-empty parameter list ("optimizer got an empty parameter list"),
    // defined leaf tensors, no parameter in two groups.
    Optimizer(std::vector<OptimizerParamGroup> param_groups,
              std::unique_ptr<OptimizerOptions> defaults);
    Optimizer(std::vector<Tensor> parameters, std::unique_ptr<OptimizerOptions> defaults);
    Optimizer(const Optimizer&) = delete;
    Optimizer& operator=(const Optimizer&) = delete;
    Optimizer(Optimizer&&) = default;
    Optimizer& operator=(Optimizer&&) = default;
    virtual ~Optimizer();

    // Appends a group; one without options gets a copy of the defaults.
    void add_param_group(const OptimizerParamGroup& param_group);
    // Appends parameters to the first group (libtorch).
    void add_parameters(const std::vector<Tensor>& parameters);

    // Resets the gradients of all parameters: to undefined (set_to_none, the default, as
    // PyTorch >= 2.0), or to zeros (detached from any graph).
    void zero_grad(bool set_to_none = true);

    // One optimization step over every group. With a closure, the closure runs first with
    // grad mode on (it typically zeroes the gradients, computes the loss and calls
    // backward) and its loss is returned; without one an undefined Tensor is returned.
    virtual Tensor step(LossClosure closure = nullptr);

    // The parameters of the first group (libtorch), and the number of parameters in all.
    const std::vector<Tensor>& parameters() const noexcept;
    std::vector<Tensor>& parameters() noexcept;
    std::size_t size() const noexcept;

    OptimizerOptions& defaults() noexcept { return *defaults_; }
    const OptimizerOptions& defaults() const noexcept { return *defaults_; }
    std::vector<OptimizerParamGroup>& param_groups() noexcept { return param_groups_; }
    const std::vector<OptimizerParamGroup>& param_groups() const noexcept { return param_groups_; }
    // The per-parameter state, keyed by p.unsafeGetTensorImpl().
    StateMap& state() noexcept { return state_; }
    const StateMap& state() const noexcept { return state_; }
    // A new, empty state of this optimizer's kind (for loading a saved state); an Error for
    // an optimizer that does not say.
    virtual std::unique_ptr<OptimizerParamState> make_param_state() const;

    // Python's optimizer.state_dict(): {"state": {i: {name: tensor}}, "param_groups":
    // [{option: value, ..., "params": [i, ...]}]}, the parameters numbered from 0 across the
    // groups in order, "state" holding the parameters that have a state (named_tensors()).
    // The tensors view the state's memory. What ember::save(optimizer, "opt.pt") writes, and
    // what Python's optimizer.load_state_dict(torch.load("opt.pt", weights_only=True)) takes.
    serialize::Value state_dict() const;
    // Python's optimizer.load_state_dict(state_dict): the saved parameters are matched to
    // this optimizer's in order (group by group), each group's options are set
    // (OptimizerOptions::set_param_group) and the state is replaced as a whole, each tensor
    // copied to its parameter's dtype ("step" kept as saved). Errors (ember::ValueError),
    // raised before anything changes: PyTorch's "loaded state dict has a different number of
    // parameter groups" and "loaded state dict contains a parameter group that doesn't match
    // the size of optimizer's group"; a state dict of another optimizer; a state for a
    // parameter no group holds, of a shape not its parameter's, an unknown or missing entry.
    void load_state_dict(const serialize::Value& state_dict);

protected:
    // [OptimizerParamGroup(params)], for the subclasses' constructors from a parameter list
    // (the same check as the constructor from a list: not empty).
    static std::vector<OptimizerParamGroup> single_group(std::vector<Tensor> params);

    // Updates the group's parameters that have a gradient (called by step() under a
    // NoGradGuard, once per group in order).
    virtual void step_group(OptimizerParamGroup& group) = 0;

    std::vector<OptimizerParamGroup> param_groups_;
    StateMap state_;
    std::unique_ptr<OptimizerOptions> defaults_;
};

}  // namespace optim
}  // namespace ember
