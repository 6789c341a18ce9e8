// Optimizer::state_dict / load_state_dict: Python's optimizer.state_dict() layout as a
// serialize::Value, what ember::save(optimizer, "opt.pt") pickles and Python's
// optimizer.load_state_dict(torch.load(...)) takes; and the defaults of the virtual
// methods that write and read a group's options and a parameter's state.
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ember/checkpoint.h"
#include "ember/factories.h"
#include "ember/optim/optimizer.h"
#include "optim/param_group.h"

namespace ember {
namespace optim {

using serialize::Value;

serialize::Value OptimizerOptions::param_group() const {
    Value g = Value::dict();
    g.set("lr", detail::number(get_lr()));
    return g;
}

void OptimizerOptions::set_param_group(const serialize::Value& group) {
    set_lr(detail::group_number(group, "lr", "this optimizer"));
}

std::string OptimizerParamState::missing_entry() const { return ""; }

Value Optimizer::state_dict() const {
    Value state = Value::dict();
    Value groups = Value::list();
    int64_t index = 0;
    for (const OptimizerParamGroup& group : param_groups_) {
        Value g = group.options().param_group();
        Value params = Value::list();
        for (const Tensor& p : group.params()) {
            const auto it = state_.find(p.unsafeGetTensorImpl());
            if (it != state_.end() && it->second) {
                Value entries = Value::dict();
                for (const auto& [name, value] : it->second->named_tensors()) {
                    entries.set(name, Value::from_tensor(to_record(value)));
                }
                state.set(Value::from_int(index), std::move(entries));
            }
            params.items.push_back(Value::from_int(index++));
        }
        g.set("params", std::move(params));
        groups.items.push_back(std::move(g));
    }
    Value out = Value::dict();
    out.set("state", std::move(state));
    out.set("param_groups", std::move(groups));
    return out;
}

namespace {

// A saved parameter number (an int, or a bool/integral float, which Python takes as one).
bool saved_index(const Value& v, int64_t* out) {
    double d = 0;
    if (v.kind == Value::Kind::Int) {
        *out = v.integer;
        return true;
    }
    if (!v.to_double(&d) || d != static_cast<double>(static_cast<int64_t>(d))) return false;
    *out = static_cast<int64_t>(d);
    return true;
}

// The saved state entry `value` of parameter `p` as the tensor the state keeps: "step" as
// saved (a number becomes a 0-d float32 tensor), the others copied to p's dtype after a
// shape check.
Tensor state_tensor(const Value& value, const std::string& name, int64_t index, const Tensor& p) {
    double number = 0;
    if (name == "step" && value.to_double(&number)) return scalar_tensor(number, kFloat32);
    EMBER_CHECK_VALUE(value.kind == Value::Kind::Tensor, "loaded state dict has a state '", name,
                      "' for parameter ", index, " of type ", value.type_name(), ", not a tensor");
    const std::string what = "the state '" + name + "' of parameter " + std::to_string(index);
    Tensor t = to_tensor(value.tensor, /*copy=*/false, what);
    if (name == "step") return t.clone();
    EMBER_CHECK_VALUE(t.sizes().vec() == p.sizes().vec(), "loaded state dict has ", what, " of shape ",
                      t.sizes(), ", the parameter ", p.sizes());
    return t.to(p.scalar_type()).clone();  // owned, contiguous, the parameter's dtype
}

}  // namespace

void Optimizer::load_state_dict(const Value& state_dict) {
    const Value* saved_state = state_dict.find("state");
    const Value* saved_groups = state_dict.find("param_groups");
    EMBER_CHECK_VALUE(saved_state != nullptr && saved_state->kind == Value::Kind::Dict &&
                          saved_groups != nullptr && saved_groups->kind == Value::Kind::List,
                      "loaded state dict is not an optimizer state dict (a dict with a dict 'state' and a "
                      "list 'param_groups'), but a ", state_dict.type_name(),
                      state_dict.kind == Value::Kind::Dict ? " without them" : "");
    EMBER_CHECK_VALUE(saved_groups->items.size() == param_groups_.size(),
                      "loaded state dict has a different number of parameter groups");

    // Python's checks and id map: saved parameter number -> this optimizer's parameter.
    std::unordered_map<int64_t, Tensor> params;
    std::vector<std::unique_ptr<OptimizerOptions>> options;
    for (std::size_t g = 0; g < param_groups_.size(); ++g) {
        const Value& saved = saved_groups->items[g];
        EMBER_CHECK_VALUE(saved.kind == Value::Kind::Dict, "loaded state dict has a parameter group of type ",
                          saved.type_name(), ", not a dict");
        const Value* numbers = saved.find("params");
        EMBER_CHECK_VALUE(numbers != nullptr && numbers->kind == Value::Kind::List,
                          "loaded state dict has a parameter group without a list 'params'");
        const auto& mine = param_groups_[g].params();
        EMBER_CHECK_VALUE(numbers->items.size() == mine.size(),
                          "loaded state dict contains a parameter group that doesn't match the size of "
                          "optimizer's group");
        for (std::size_t k = 0; k < mine.size(); ++k) {
            int64_t index = 0;
            EMBER_CHECK_VALUE(saved_index(numbers->items[k], &index), "loaded state dict has a parameter id of type ",
                              numbers->items[k].type_name(), ", not an int");
            params[index] = mine[k];
        }
        options.push_back(param_groups_[g].options().clone());
        options.back()->set_param_group(saved);
    }

    StateMap state;
    for (std::size_t i = 0; i < saved_state->dict_size(); ++i) {
        int64_t index = 0;
        EMBER_CHECK_VALUE(saved_index(saved_state->key(i), &index), "loaded state dict has a state key of type ",
                          saved_state->key(i).type_name(), ", not a parameter id");
        const auto param = params.find(index);
        EMBER_CHECK_VALUE(param != params.end(), "loaded state dict has a state for parameter ", index,
                          ", which no parameter group holds");
        const Tensor& p = param->second;
        const Value& entries = saved_state->value(i);
        EMBER_CHECK_VALUE(entries.kind == Value::Kind::Dict, "loaded state dict has a state for parameter ", index,
                          " of type ", entries.type_name(), ", not a dict");
        std::unique_ptr<OptimizerParamState> slot;
        for (std::size_t e = 0; e < entries.dict_size(); ++e) {
            EMBER_CHECK_VALUE(entries.key(e).kind == Value::Kind::Str, "loaded state dict has a state key of type ",
                              entries.key(e).type_name(), " for parameter ", index);
            const std::string& name = entries.key(e).text;
            if (entries.value(e).is_none()) continue;  // PyTorch < 2.0 kept momentum_buffer=None
            Tensor value = state_tensor(entries.value(e), name, index, p);
            if (!slot) slot = make_param_state();
            EMBER_CHECK_VALUE(slot->set_named_tensor(name, value), "loaded state dict has an unexpected state '",
                              name, "' for parameter ", index);
        }
        if (!slot) continue;  // an empty state is no state
        const std::string missing = slot->missing_entry();
        EMBER_CHECK_VALUE(missing.empty(), "loaded state dict has no state '", missing, "' for parameter ", index);
        state[p.unsafeGetTensorImpl()] = std::move(slot);
    }

    state_ = std::move(state);
    for (std::size_t g = 0; g < param_groups_.size(); ++g) param_groups_[g].set_options(std::move(options[g]));
}

}  // namespace optim
}  // namespace ember
