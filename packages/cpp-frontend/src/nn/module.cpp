// ember::nn::Module: registration, recursive listings, modes, conversion and printing.
#include "ember/nn/module.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <sstream>
#include <typeinfo>
#include <unordered_set>

#include "ember/autograd.h"
#include "ember/error.h"
#include "autograd/zero_grad.h"
#include "nn/set_data.h"

namespace ember {
namespace nn {

namespace {

std::string join_name(const std::string& prefix, const std::string& name) {
    return prefix.empty() ? name : prefix + "." + name;
}

void check_name(const std::string& name, const char* what) {
    EMBER_CHECK(!name.empty(), what, " name must not be empty");
    EMBER_CHECK(name.find('.') == std::string::npos, what, " name must not contain a dot (got '", name, "')");
}

// The class name of a demangled type: no namespaces (outside template arguments), no
// trailing "Impl".
std::string short_type_name(const std::string& demangled) {
    int depth = 0;
    size_t start = 0;
    for (size_t i = 0; i < demangled.size(); ++i) {
        const char c = demangled[i];
        if (c == '<') ++depth;
        if (c == '>') --depth;
        if (depth == 0 && c == ':' && i + 1 < demangled.size() && demangled[i + 1] == ':') start = i + 2;
    }
    std::string name = demangled.substr(start);
    const std::string suffix = "Impl";
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        name.resize(name.size() - suffix.size());
    }
    return name;
}

}  // namespace

namespace detail {

// Changes the dtype of `self` to that of `data` in place: the TensorImpl that every handle
// of `self` points to is rebuilt over data's storage (as libtorch's Tensor::set_data). The
// version counter is kept; requires_grad and the gradient (converted) are restored.
void set_data_in_place(const Tensor& self, const Tensor& data) {
    TensorImpl* impl = self.unsafeGetTensorImpl();
    const bool requires_grad = self.requires_grad();
    const Tensor old_grad = self.grad();
    const Tensor new_grad = old_grad.defined() ? old_grad.detach().to(data.scalar_type()) : Tensor();
    // Everything the new object needs is prepared first: nothing below can throw between
    // the destruction and the construction.
    Storage storage = data.storage();
    std::vector<int64_t> sizes = data.sizes().vec();
    std::vector<int64_t> strides = data.strides().vec();
    const int64_t offset = data.storage_offset();
    const ScalarType dtype = data.scalar_type();
    std::shared_ptr<VersionCounter> version = impl->version_counter();
    impl->~TensorImpl();
    ::new (static_cast<void*>(impl))
        TensorImpl(std::move(storage), dtype, std::move(sizes), std::move(strides), offset, std::move(version));
    impl->bump_version();
    if (requires_grad) self.requires_grad_(true);
    if (new_grad.defined()) self.set_grad(new_grad);
}

}  // namespace detail

// ---- construction ---------------------------------------------------------------------------

Module::Module(std::string name) : name_(std::move(name)) {}
Module::Module() = default;
Module::~Module() = default;

std::string Module::name() const {
    // (computed at each call, not cached: a const method must not write, for threads)
    return name_.empty() ? short_type_name(autograd::detail::demangle(typeid(*this).name())) : name_;
}

// ---- registration -----------------------------------------------------------------------------

Tensor& Module::register_parameter(std::string name, Tensor tensor, bool requires_grad) {
    check_name(name, "Parameter");
    if (tensor.defined()) tensor.set_requires_grad(requires_grad);
    return parameters_.insert(std::move(name), std::move(tensor));
}

Tensor& Module::register_buffer(std::string name, Tensor tensor) {
    check_name(name, "Buffer");
    return buffers_.insert(std::move(name), std::move(tensor));
}

void Module::register_module_impl(std::string name, std::shared_ptr<Module> module) {
    check_name(name, "Submodule");
    EMBER_CHECK(module != nullptr, "Submodule '", name, "' is an empty module (nullptr)");
    children_.insert(std::move(name), std::move(module));
}

void Module::unregister_module(const std::string& name) {
    EMBER_CHECK(children_.contains(name), "No Module with name `", name, "` is registered");
    children_.erase(name);
}

// ---- listings ---------------------------------------------------------------------------------

// Calls fn(prefix, module) for this module (when self) and every submodule, depth first in
// registration order, each module once (Python's named_modules memo).
template <typename Fn>
void Module::visit_named(const std::string& prefix, bool self, const Fn& fn) const {
    std::unordered_set<const Module*> seen;
    std::function<void(const std::string&, const Module&)> visit = [&](const std::string& p, const Module& m) {
        if (!seen.insert(&m).second) return;
        fn(p, m);
        for (const auto& child : m.children_) visit(join_name(p, child.key()), *child.value());
    };
    if (self) {
        visit(prefix, *this);
    } else {
        seen.insert(this);
        for (const auto& child : children_) visit(join_name(prefix, child.key()), *child.value());
    }
}

namespace {

// The defined tensors of `dict` under `prefix`, each tensor once (by identity) across calls.
void collect_tensors(const OrderedDict<std::string, Tensor>& dict, const std::string& prefix,
                     std::unordered_set<const TensorImpl*>& seen, OrderedDict<std::string, Tensor>& out) {
    for (const auto& item : dict) {
        const Tensor& t = item.value();
        if (!t.defined() || !seen.insert(t.unsafeGetTensorImpl()).second) continue;
        out.insert(join_name(prefix, item.key()), t);
    }
}

}  // namespace

OrderedDict<std::string, Tensor> Module::named_tensors(OrderedDict<std::string, Tensor> Module::*dict,
                                                      const char* description, bool recurse) const {
    OrderedDict<std::string, Tensor> out(description);
    std::unordered_set<const TensorImpl*> seen;
    if (!recurse) {
        collect_tensors(this->*dict, "", seen, out);
    } else {
        visit_named("", true, [&](const std::string& prefix, const Module& m) {
            collect_tensors(m.*dict, prefix, seen, out);
        });
    }
    return out;
}

OrderedDict<std::string, Tensor> Module::named_parameters(bool recurse) const {
    return named_tensors(&Module::parameters_, "Parameter", recurse);
}

std::vector<Tensor> Module::parameters(bool recurse) const { return named_parameters(recurse).values(); }

OrderedDict<std::string, Tensor> Module::named_buffers(bool recurse) const {
    return named_tensors(&Module::buffers_, "Buffer", recurse);
}

std::vector<Tensor> Module::buffers(bool recurse) const { return named_buffers(recurse).values(); }

OrderedDict<std::string, Tensor> Module::state_dict() const {
    OrderedDict<std::string, Tensor> out("Key");
    std::function<void(const std::string&, const Module&)> visit = [&](const std::string& prefix, const Module& m) {
        for (const auto* dict : {&m.parameters_, &m.buffers_}) {
            for (const auto& item : *dict) {
                if (item.value().defined()) out.insert(join_name(prefix, item.key()), item.value());
            }
        }
        for (const auto& child : m.children_) visit(join_name(prefix, child.key()), *child.value());
    };
    visit("", *this);
    return out;
}

std::vector<std::shared_ptr<Module>> Module::children() const { return children_.values(); }

OrderedDict<std::string, std::shared_ptr<Module>> Module::named_children() const { return children_; }

std::shared_ptr<Module> Module::shared_from_this_checked() const {
    std::shared_ptr<const Module> ptr;
    try {
        ptr = shared_from_this();
    } catch (const std::bad_weak_ptr&) {
        EMBER_ERROR("It looks like you attempted to retrieve your top-level module as a shared_ptr, but it is "
                    "not stored in a shared_ptr. Use std::make_shared<", name(),
                    ">() instead of creating your module on the stack, or alternatively do not try to access "
                    "your top-level module at all by passing /*include_self=*/false to modules() or "
                    "named_modules()");
    }
    return std::const_pointer_cast<Module>(ptr);
}

OrderedDict<std::string, std::shared_ptr<Module>> Module::named_modules(const std::string& name_prefix,
                                                                       bool include_self) const {
    OrderedDict<std::string, std::shared_ptr<Module>> out("Module");
    if (include_self) out.insert(name_prefix, shared_from_this_checked());
    visit_named(name_prefix, false, [&](const std::string& prefix, const Module& m) {
        out.insert(prefix, m.shared_from_this_checked());
    });
    return out;
}

std::vector<std::shared_ptr<Module>> Module::modules(bool include_self) const {
    return named_modules("", include_self).values();
}

// ---- modes and conversion -----------------------------------------------------------------

void Module::train(bool on) {
    for (auto& child : children_) child.value()->train(on);
    is_training_ = on;
}

void Module::to(ScalarType dtype, bool /*non_blocking*/) {
    EMBER_CHECK_TYPE(is_floating_point(dtype),
                     "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=ember.",
                     dtype_name(dtype));
    NoGradGuard no_grad;
    auto convert = [dtype](const Tensor& t) {
        if (t.defined() && t.is_floating_point() && t.scalar_type() != dtype) detail::set_data_in_place(t, t.detach().to(dtype));
    };
    for (const Tensor& p : parameters()) convert(p);
    for (const Tensor& b : buffers()) convert(b);
}

void Module::to(Device /*device*/, bool /*non_blocking*/) {}

void Module::to(Device device, ScalarType dtype, bool non_blocking) {
    to(device, non_blocking);
    to(dtype, non_blocking);
}

void Module::zero_grad(bool set_to_none) {
    for (const Tensor& p : parameters()) autograd::zero_grad_of(p, set_to_none);
}

// ---- apply --------------------------------------------------------------------------------

void Module::apply(const ModuleApplyFunction& fn) {
    for (auto& child : children_) child.value()->apply(fn);
    fn(*this);
}

void Module::apply(const ConstModuleApplyFunction& fn) const {
    for (const auto& child : children_) static_cast<const Module&>(*child.value()).apply(fn);
    fn(*this);
}

void Module::apply(const NamedModuleApplyFunction& fn, const std::string& name_prefix) {
    for (auto& child : children_) child.value()->apply(fn, join_name(name_prefix, child.key()));
    fn(name_prefix, *this);
}

void Module::apply(const ConstNamedModuleApplyFunction& fn, const std::string& name_prefix) const {
    for (const auto& child : children_) {
        static_cast<const Module&>(*child.value()).apply(fn, join_name(name_prefix, child.key()));
    }
    fn(name_prefix, *this);
}

void Module::apply(const ModulePointerApplyFunction& fn) const {
    for (const auto& child : children_) child.value()->apply(fn);
    fn(shared_from_this_checked());
}

void Module::apply(const NamedModulePointerApplyFunction& fn, const std::string& name_prefix) const {
    for (const auto& child : children_) child.value()->apply(fn, join_name(name_prefix, child.key()));
    fn(name_prefix, shared_from_this_checked());
}

// ---- printing -----------------------------------------------------------------------------

std::string Module::extra_repr() const { return std::string(); }

void Module::pretty_print(std::ostream& stream) const {
    std::vector<std::string> lines;
    const std::string extra = extra_repr();
    size_t extra_lines = 0;
    if (!extra.empty()) {
        std::istringstream in(extra);
        std::string line;
        while (std::getline(in, line)) {
            lines.push_back(line);
            ++extra_lines;
        }
    }
    for (const auto& child : children_) {
        lines.push_back("(" + child.key() + "): " + detail::add_indent(child.value()->repr(), 2));
    }
    stream << name() << "(";
    if (!lines.empty()) {
        if (extra_lines == 1 && children_.is_empty()) {
            stream << lines[0];
        } else {
            stream << "\n";
            for (const std::string& line : lines) stream << "  " << line << "\n";
        }
    }
    stream << ")";
}

std::string Module::repr() const {
    std::ostringstream os;
    pretty_print(os);
    return os.str();
}

std::ostream& operator<<(std::ostream& stream, const Module& module) {
    module.pretty_print(stream);
    return stream;
}

namespace detail {

std::string py_float_repr(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    if (value == 0) return std::signbit(value) ? "-0.0" : "0.0";
    char buf[64];
    for (int precision = 1; precision <= 17; ++precision) {
        std::snprintf(buf, sizeof buf, "%.*e", precision - 1, value);
        if (std::strtod(buf, nullptr) == value) break;
    }
    // buf: [-]d[.ddd]e[+-]xx
    std::string text(buf);
    const bool negative = text[0] == '-';
    if (negative) text.erase(0, 1);
    const size_t e_pos = text.find('e');
    const int exponent = std::atoi(text.c_str() + e_pos + 1);
    std::string digits;
    for (size_t i = 0; i < e_pos; ++i) {
        if (text[i] != '.') digits += text[i];
    }
    while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
    std::string out = negative ? "-" : "";
    if (exponent >= -4 && exponent < 16) {
        if (exponent >= 0) {
            const size_t int_len = static_cast<size_t>(exponent) + 1;
            std::string int_part = digits.substr(0, std::min(int_len, digits.size()));
            int_part.append(int_len - int_part.size(), '0');
            const std::string frac = digits.size() > int_len ? digits.substr(int_len) : "0";
            out += int_part + "." + frac;
        } else {
            out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
        }
    } else {
        out += digits.substr(0, 1);
        if (digits.size() > 1) out += "." + digits.substr(1);
        char exp_buf[16];
        std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
        out += exp_buf;
    }
    return out;
}

std::string py_tuple_repr(const std::vector<int64_t>& values) {
    std::string out = "(";
    for (size_t i = 0; i < values.size(); ++i) {
        if (i) out += ", ";
        out += std::to_string(values[i]);
    }
    if (values.size() == 1) out += ",";
    return out + ")";
}

std::string add_indent(const std::string& text, size_t spaces) {
    if (text.find('\n') == std::string::npos) return text;
    std::string out;
    std::istringstream in(text);
    std::string line;
    bool first = true;
    while (std::getline(in, line)) {
        if (!first) {
            out += '\n';
            if (line.find_first_not_of(" \t") != std::string::npos) out += std::string(spaces, ' ') + line;
        } else {
            out += line;
            first = false;
        }
    }
    return out;
}

}  // namespace detail

}  // namespace nn
}  // namespace ember
