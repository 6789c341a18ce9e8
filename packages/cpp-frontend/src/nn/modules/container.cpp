// AnyModule, Sequential, ModuleList, Functional.
#include "ember/nn/modules/container.h"

#include <algorithm>
#include <string>
#include <vector>

namespace ember {
namespace nn {

namespace detail {

size_t container_index(int64_t index, size_t n) {
    const int64_t size = static_cast<int64_t>(n);
    EMBER_CHECK_INDEX(index >= -size && index < size, "index ", index, " is out of range");
    return static_cast<size_t>(index < 0 ? index + size : index);
}

}  // namespace detail

// ---- AnyModule ------------------------------------------------------------------------------

Tensor AnyModule::forward(const Tensor& input) const {
    EMBER_CHECK(!is_empty(), "Cannot call forward() on an empty AnyModule");
    return forward_(input);
}

const std::shared_ptr<Module>& AnyModule::ptr() const {
    EMBER_CHECK(!is_empty(), "Cannot call ptr() on an empty AnyModule");
    return module_;
}

// ---- Sequential -----------------------------------------------------------------------------

SequentialImpl::SequentialImpl(std::initializer_list<NamedAnyModule> named_modules) {
    for (const NamedAnyModule& m : named_modules) push_back(m.name, m.module);
}

void SequentialImpl::push_back(std::string name, AnyModule module) {
    register_module(std::move(name), module.ptr());
    elements_.push_back(std::move(module));
}

void SequentialImpl::extend(const SequentialImpl& other) {
    const std::vector<AnyModule> items(other.begin(), other.end());  // (other may be *this)
    for (const AnyModule& m : items) push_back(std::to_string(size()), m);
}

Tensor SequentialImpl::forward(const Tensor& input) {
    Tensor x = input;
    for (const AnyModule& m : elements_) x = m.forward(x);
    return x;
}

// ---- ModuleList -----------------------------------------------------------------------------

void ModuleListImpl::push_back_ptr(std::shared_ptr<Module> module) {
    register_module(std::to_string(elements_.size()), module);
    elements_.push_back(std::move(module));
}

void ModuleListImpl::insert_ptr(int64_t index, std::shared_ptr<Module> module) {
    const int64_t n = static_cast<int64_t>(elements_.size());
    // Python's list.insert: a position past either end clamps to it
    const int64_t pos = index < 0 ? std::max<int64_t>(0, index + n) : std::min(index, n);
    for (size_t i = 0; i < elements_.size(); ++i) unregister_module(std::to_string(i));
    elements_.insert(elements_.begin() + pos, std::move(module));
    for (size_t i = 0; i < elements_.size(); ++i) register_module(std::to_string(i), elements_[i]);
}

void ModuleListImpl::extend(const ModuleListImpl& other) {
    const std::vector<std::shared_ptr<Module>> items(other.begin(), other.end());  // (other may be *this)
    for (const auto& m : items) push_back_ptr(m);
}

void ModuleListImpl::pretty_print(std::ostream& stream) const {
    if (elements_.empty()) {
        stream << name() << "()";
        return;
    }
    // runs of modules with the same repr, as Python's ModuleList.__repr__
    std::vector<std::string> reprs;
    for (const auto& m : elements_) reprs.push_back(m->repr());
    stream << name() << "(\n";
    size_t start = 0;
    while (start < reprs.size()) {
        size_t end = start;
        while (end + 1 < reprs.size() && reprs[end + 1] == reprs[start]) ++end;
        std::string line = start == end ? "(" + std::to_string(start) + "): " + reprs[start]
                                        : "(" + std::to_string(start) + "-" + std::to_string(end) +
                                              "): " + std::to_string(end - start + 1) + " x " + reprs[start];
        stream << "  " << detail::add_indent(line, 2) << "\n";
        start = end + 1;
    }
    stream << ")";
}

// ---- Functional -----------------------------------------------------------------------------

FunctionalImpl::FunctionalImpl(Function function) : function_(std::move(function)) {
    EMBER_CHECK(static_cast<bool>(function_), "Functional needs a function");
}

Tensor FunctionalImpl::forward(const Tensor& input) { return function_(input); }

}  // namespace nn
}  // namespace ember
