// ember::save / ember::load of optimizers (PyTorch zip checkpoints of Python's
// optimizer.state_dict(), or safetensors files of it flattened to named tensors) and of single
// tensors, through the state-dict files of checkpoint.cpp.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ember/checkpoint.h"
#include "ember/factories.h"

namespace ember {

namespace {

std::string group_key(std::size_t g, const char* field) {
    return "param_groups." + std::to_string(g) + "." + field;
}

// "state.<i>.<name>" as (i, name); false for another key.
bool parse_state_key(const std::string& key, int64_t& index, std::string& name) {
    static const std::string prefix = "state.";
    if (key.compare(0, prefix.size(), prefix) != 0) return false;
    const std::size_t dot = key.find('.', prefix.size());
    if (dot == std::string::npos || dot == prefix.size()) return false;
    const std::string digits = key.substr(prefix.size(), dot - prefix.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos) return false;
    index = std::stoll(digits);
    name = key.substr(dot + 1);
    return true;
}

bool is_torch_path(const std::string& path) {
    for (const std::string ext : {".pt", ".pth", ".bin"}) {
        if (path.size() >= ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0) return true;
    }
    return false;
}

// Python's nested layout, from a PyTorch zip checkpoint: errors prefixed by the path.
void load_python_layout(optim::Optimizer& optimizer, const serialize::Value& saved, const std::string& path) {
    try {
        optimizer.load_state_dict(saved);
    } catch (const ValueError& e) {
        throw ValueError(path + ": " + e.what());
    } catch (const Error& e) {
        throw Error(path + ": " + e.what());
    }
}

}  // namespace

void save(const optim::Optimizer& optimizer, const std::string& path) {
    if (is_torch_path(path)) {  // Python's optimizer.state_dict(), as torch.save writes it
        serialize::write_torch_object(path, optimizer.state_dict());
        return;
    }
    StateDict state_dict;
    int64_t index = 0;
    const auto& groups = optimizer.param_groups();
    for (std::size_t g = 0; g < groups.size(); ++g) {
        std::vector<int64_t> numbers;
        for (const Tensor& p : groups[g].params()) {
            const auto it = optimizer.state().find(p.unsafeGetTensorImpl());
            if (it != optimizer.state().end() && it->second) {
                for (const auto& [name, value] : it->second->named_tensors()) {
                    state_dict.insert("state." + std::to_string(index) + "." + name, value);
                }
            }
            numbers.push_back(index++);
        }
        state_dict.insert(group_key(g, "params"), tensor(numbers, kInt64));
        state_dict.insert(group_key(g, "lr"), scalar_tensor(groups[g].options().get_lr(), kFloat64));
    }
    save(state_dict, path);
}

void load(optim::Optimizer& optimizer, const std::string& path) {
    if (serialize::detect_checkpoint_format(path) == serialize::CheckpointFormat::TorchZip) {
        const serialize::Value saved = serialize::read_torch_object(path);
        // else the flat names ("state.0.exp_avg") an older ember::save wrote to .pt files: read below
        const bool flat = saved.kind == serialize::Value::Kind::Dict && saved.find("param_groups") == nullptr &&
                          saved.find("state") == nullptr;
        if (!flat) return load_python_layout(optimizer, saved, path);
    }
    const StateDict state_dict = load_state_dict(path);
    auto& groups = optimizer.param_groups();
    std::size_t saved_groups = 0;
    while (state_dict.contains(group_key(saved_groups, "params"))) ++saved_groups;
    EMBER_CHECK(saved_groups == groups.size(), path, ": loaded state dict has a different number of parameter groups");
    std::map<int64_t, Tensor> params;  // saved parameter number -> this optimizer's parameter
    std::vector<double> lrs;
    for (std::size_t g = 0; g < groups.size(); ++g) {
        const Tensor* numbers = state_dict.find(group_key(g, "params"));
        const Tensor* lr = state_dict.find(group_key(g, "lr"));
        EMBER_CHECK(numbers != nullptr && lr != nullptr, path,
                    ": loaded state dict has a different number of parameter groups");
        EMBER_CHECK(numbers->dim() == 1 && numbers->numel() == static_cast<int64_t>(groups[g].params().size()), path,
                    ": loaded state dict contains a parameter group that doesn't match the size of optimizer's group");
        const Tensor ids = numbers->to(kInt64).contiguous();
        for (int64_t k = 0; k < ids.numel(); ++k) {
            params[ids.data_ptr<int64_t>()[k]] = groups[g].params()[static_cast<std::size_t>(k)];
        }
        lrs.push_back(lr->item<double>());
    }

    optim::Optimizer::StateMap state;
    for (const auto& item : state_dict) {
        int64_t index = 0;
        std::string name;
        if (!parse_state_key(item.key(), index, name)) continue;
        const auto param = params.find(index);
        EMBER_CHECK(param != params.end(), path, ": loaded state dict has a state for parameter ", index,
                    ", which no parameter group holds");
        const Tensor& p = param->second;
        Tensor value = item.value();
        if (name != "step") {
            EMBER_CHECK(value.sizes().vec() == p.sizes().vec(), path, ": the state '", name, "' of parameter ", index,
                        " has shape ", value.sizes(), ", the parameter ", p.sizes());
            value = value.to(p.scalar_type()).clone();  // owned, contiguous, the parameter's dtype
        }
        std::unique_ptr<optim::OptimizerParamState>& slot = state[p.unsafeGetTensorImpl()];
        if (!slot) slot = optimizer.make_param_state();
        EMBER_CHECK(slot->set_named_tensor(name, value), path, ": unexpected optimizer state '", name,
                    "' for parameter ", index);
    }
    for (const auto& [impl, slot] : state) {
        const std::string missing = slot->missing_entry();
        EMBER_CHECK(missing.empty(), path, ": loaded state dict lacks the state '", missing, "' of a parameter");
    }
    optimizer.state() = std::move(state);
    for (std::size_t g = 0; g < groups.size(); ++g) groups[g].options().set_lr(lrs[g]);
}

void save(const Tensor& t, const std::string& path) {
    EMBER_CHECK(t.defined(), "cannot save an undefined tensor");
    StateDict state_dict;
    state_dict.insert("tensor", t);
    save(state_dict, path);
}

void load(Tensor& t, const std::string& path) {
    const StateDict state_dict = load_state_dict(path);
    const Tensor* found = state_dict.find("tensor");
    if (found == nullptr && state_dict.size() == 1) found = &state_dict[0].value();
    EMBER_CHECK(found != nullptr, path, ": expected one tensor, or one named 'tensor', but the file holds ",
                state_dict.size());
    t = found->clone();
}

}  // namespace ember
