// ember::nn::Module: the base class of every layer (libtorch's torch::nn::Module, Python's
// torch.nn.Module).
//
//   struct NetImpl : ember::nn::Module {
//       NetImpl() {
//           fc1 = register_module("fc1", ember::nn::Linear(784, 64));
//           fc2 = register_module("fc2", ember::nn::Linear(64, 10));
//           scale = register_parameter("scale", ember::ones({1}));
//       }
//       ember::Tensor forward(const ember::Tensor& x) { return fc2(ember::relu(fc1(x))) * scale; }
//       ember::nn::Linear fc1{nullptr}, fc2{nullptr};
//       ember::Tensor scale;
//   };
//   EMBER_MODULE(Net);  // Net: a shared-pointer holder of NetImpl (pimpl.h)
//
// Names and order. A module keeps its own parameters, buffers and submodules in insertion
// order (ember::OrderedDict, nn/ordered_dict.h). The recursive listings use Python's dotted
// names ("features.0.weight") in Python's order: named_parameters() gives the module's own
// parameters, then each child's (in registration order, depth first); named_buffers() the
// same for buffers; state_dict() gives, per module, its parameters then its buffers, then
// its children's entries: exactly the keys and order of Python's module.state_dict(). These
// listings are stable API (ember::save / ember::load build on them). As in Python, a tensor
// reachable under two names (a shared parameter) is listed once by parameters() /
// named_parameters() / buffers() / named_buffers(), under its first name, but twice by
// state_dict(). A parameter or buffer registered as an undefined Tensor (Python's None:
// Linear's bias with bias=false) is skipped everywhere.
#pragma once

#include "../export.h"
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../dtype.h"
#include "../tensor.h"
#include "ordered_dict.h"

namespace ember {
namespace nn {

template <typename Contained>
class ModuleHolder;

class EMBER_API Module : public std::enable_shared_from_this<Module> {
public:
    using ModuleApplyFunction = std::function<void(Module&)>;
    using ConstModuleApplyFunction = std::function<void(const Module&)>;
    using NamedModuleApplyFunction = std::function<void(const std::string&, Module&)>;
    using ConstNamedModuleApplyFunction = std::function<void(const std::string&, const Module&)>;
    using ModulePointerApplyFunction = std::function<void(const std::shared_ptr<Module>&)>;
    using NamedModulePointerApplyFunction =
        std::function<void(const std::string&, const std::shared_ptr<Module>&)>;

    // name: the module's class name as repr prints it (default: see name()).
    explicit Module(std::string name);
    Module();
    Module(const Module&) = default;
    Module& operator=(const Module&) = default;
    Module(Module&&) noexcept = default;
    Module& operator=(Module&&) noexcept = default;
    virtual ~Module();

    // The class name that printing uses (Python's type(self).__name__): the name given to the
    // constructor, else the dynamic type's name without namespaces and without a trailing
    // "Impl" ("Linear" for ember::nn::LinearImpl, "Net" for a user's NetImpl).
    std::string name() const;

    // ---- parameters, buffers, submodules ---------------------------------------------------
    // Registers (or, as Python's None, reserves with an undefined tensor) a parameter:
    // requires_grad is set on it; returns the stored handle. libtorch's errors for an empty
    // name, a dotted name or a name already registered.
    Tensor& register_parameter(std::string name, Tensor tensor, bool requires_grad = true);
    // Registers a buffer: state that is not a parameter (BatchNorm's running_mean), part of
    // named_buffers() and state_dict(), converted by to(), never trained.
    Tensor& register_buffer(std::string name, Tensor tensor);
    // Registers a submodule; returns it (assign it to your member holder).
    template <typename ModuleType>
    std::shared_ptr<ModuleType> register_module(std::string name, std::shared_ptr<ModuleType> module) {
        static_assert(std::is_base_of_v<Module, ModuleType>, "register_module needs a Module");
        register_module_impl(std::move(name), module);
        return module;
    }
    template <typename ModuleType>
    std::shared_ptr<ModuleType> register_module(std::string name, ModuleHolder<ModuleType> module_holder) {
        return register_module(std::move(name), module_holder.ptr());
    }
    // Replaces the registered submodule `name` (an error when there is none); returns it.
    template <typename ModuleType>
    std::shared_ptr<ModuleType> replace_module(const std::string& name, std::shared_ptr<ModuleType> module) {
        static_assert(std::is_base_of_v<Module, ModuleType>, "replace_module needs a Module");
        children_[name] = module;
        return module;
    }
    template <typename ModuleType>
    std::shared_ptr<ModuleType> replace_module(const std::string& name, ModuleHolder<ModuleType> module_holder) {
        return replace_module(name, module_holder.ptr());
    }
    // Removes the submodule `name` (an error when there is none).
    void unregister_module(const std::string& name);

    // ---- listings ----------------------------------------------------------------------------
    std::vector<Tensor> parameters(bool recurse = true) const;
    OrderedDict<std::string, Tensor> named_parameters(bool recurse = true) const;
    std::vector<Tensor> buffers(bool recurse = true) const;
    OrderedDict<std::string, Tensor> named_buffers(bool recurse = true) const;
    // Python's state_dict() keys and order (see the top of this file); the tensors are the
    // module's own (not copies, not detached).
    OrderedDict<std::string, Tensor> state_dict() const;
    // The direct submodules.
    std::vector<std::shared_ptr<Module>> children() const;
    OrderedDict<std::string, std::shared_ptr<Module>> named_children() const;
    // This module (when include_self; it must then be owned by a std::shared_ptr) and every
    // submodule, depth first, each once.
    std::vector<std::shared_ptr<Module>> modules(bool include_self = true) const;
    OrderedDict<std::string, std::shared_ptr<Module>> named_modules(const std::string& name_prefix = std::string(),
                                                                   bool include_self = true) const;

    // ---- modes and conversion ----------------------------------------------------------------
    // Sets training mode on this module and every submodule (Dropout and BatchNorm behave
    // differently in training).
    virtual void train(bool on = true);
    void eval() { train(false); }
    virtual bool is_training() const noexcept { return is_training_; }
    // Converts the floating point parameters and buffers (and their gradients) to dtype in
    // place: every tensor keeps its identity, so handles held elsewhere (the module's
    // members, an optimizer) see the new dtype. Integer buffers (num_batches_tracked) keep
    // theirs. Only floating dtypes are accepted.
    virtual void to(ScalarType dtype, bool non_blocking = false);
    // On the CPU, the only device, this changes nothing.
    virtual void to(Device device, bool non_blocking = false);
    virtual void to(Device device, ScalarType dtype, bool non_blocking = false);
    // Clears the gradients of every parameter: undefined when set_to_none, else zeroed.
    virtual void zero_grad(bool set_to_none = true);

    // Calls fn on every submodule (depth first) and then on this module, as Python's
    // Module.apply. The named forms pass the dotted name (name_prefix for this module); the
    // shared_ptr forms need this module to be owned by a std::shared_ptr.
    void apply(const ModuleApplyFunction& fn);
    void apply(const ConstModuleApplyFunction& fn) const;
    void apply(const NamedModuleApplyFunction& fn, const std::string& name_prefix = std::string());
    void apply(const ConstNamedModuleApplyFunction& fn, const std::string& name_prefix = std::string()) const;
    void apply(const ModulePointerApplyFunction& fn) const;
    void apply(const NamedModulePointerApplyFunction& fn, const std::string& name_prefix = std::string()) const;

    // ---- printing ------------------------------------------------------------------------------
    // The module's own part of repr ("in_features=4, out_features=2, bias=True"), as Python's
    // extra_repr; empty by default.
    virtual std::string extra_repr() const;
    // Writes Python's repr(module): name(extra_repr) and the children indented, e.g.
    //   Sequential(
    //     (0): Linear(in_features=4, out_features=2, bias=True)
    //     (1): ReLU()
    //   )
    virtual void pretty_print(std::ostream& stream) const;
    // pretty_print as a string.
    std::string repr() const;

    // Casts to a derived module type (nullptr when it is not one): module.as<Linear>() or
    // module.as<LinearImpl>().
    template <typename ModuleType>
    typename ModuleType::ContainedType* as() noexcept {
        return dynamic_cast<typename ModuleType::ContainedType*>(this);
    }
    template <typename ModuleType>
    const typename ModuleType::ContainedType* as() const noexcept {
        return dynamic_cast<const typename ModuleType::ContainedType*>(this);
    }
    template <typename ModuleType, typename = std::enable_if_t<std::is_base_of_v<Module, ModuleType>>>
    ModuleType* as() noexcept {
        return dynamic_cast<ModuleType*>(this);
    }
    template <typename ModuleType, typename = std::enable_if_t<std::is_base_of_v<Module, ModuleType>>>
    const ModuleType* as() const noexcept {
        return dynamic_cast<const ModuleType*>(this);
    }

protected:
    // This module's own parameters / buffers / children, in registration order.
    const OrderedDict<std::string, Tensor>& own_parameters() const noexcept { return parameters_; }
    const OrderedDict<std::string, Tensor>& own_buffers() const noexcept { return buffers_; }
    const OrderedDict<std::string, std::shared_ptr<Module>>& own_children() const noexcept { return children_; }
    // shared_from_this() with libtorch's message when the module is not in a shared_ptr.
    std::shared_ptr<Module> shared_from_this_checked() const;

private:
    void register_module_impl(std::string name, std::shared_ptr<Module> module);
    template <typename Fn>
    void visit_named(const std::string& prefix, bool self, const Fn& fn) const;
    // The defined tensors of `dict` (parameters_ or buffers_), recursively with dotted
    // names, each tensor once.
    OrderedDict<std::string, Tensor> named_tensors(OrderedDict<std::string, Tensor> Module::*dict,
                                                   const char* description, bool recurse) const;

    OrderedDict<std::string, Tensor> parameters_{"Parameter"};
    OrderedDict<std::string, Tensor> buffers_{"Buffer"};
    OrderedDict<std::string, std::shared_ptr<Module>> children_{"Submodule"};
    std::string name_;
    bool is_training_ = true;
};

// Writes module.pretty_print (Python's repr).
EMBER_API std::ostream& operator<<(std::ostream& stream, const Module& module);

namespace detail {
// Python's repr of a float: the shortest text that reads back as the same double ("0.1",
// "1e-05", "1.0", "inf").
EMBER_API std::string py_float_repr(double value);
// Python's "True" / "False".
inline const char* py_bool(bool value) noexcept { return value ? "True" : "False"; }
// Python's tuple repr of ints: "(3,)", "(3, 3)".
EMBER_API std::string py_tuple_repr(const std::vector<int64_t>& values);
// Python's _addindent: every line of text after the first indented by `spaces` (blank lines
// left empty), for a child's repr inside its parent's.
EMBER_API std::string add_indent(const std::string& text, size_t spaces);
}  // namespace detail

}  // namespace nn
}  // namespace ember
