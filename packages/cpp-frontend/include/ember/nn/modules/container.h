// Containers: Sequential, ModuleList, and the helpers AnyModule and Functional
// (libtorch's torch::nn::Sequential, ModuleList, AnyModule, Functional).
//
//   ember::nn::Sequential net(ember::nn::Linear(4, 8), ember::nn::ReLU(), ember::nn::Linear(8, 1));
//   ember::Tensor y = net(x);                       // through every module in order
//   net->push_back(ember::nn::Sigmoid());           // named "3"
//   auto& first = net->at<ember::nn::LinearImpl>(0);
//
//   ember::nn::Sequential named({{"fc", ember::nn::Linear(4, 8)}, {"act", ember::nn::ReLU()}});
//
//   ember::nn::ModuleList blocks;                   // a list of modules, no forward
//   for (int i = 0; i < 3; ++i) blocks->push_back(ember::nn::Linear(8, 8));
//
// As in Python, Sequential and ModuleList name their modules "0", "1", ... (Sequential
// takes other names too), so their parameters are "0.weight", "1.bias", ...
#pragma once

#include "../../export.h"
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../error.h"
#include "../module.h"
#include "../pimpl.h"

namespace ember {
namespace nn {

namespace detail {

template <typename T>
struct is_shared_ptr : std::false_type {};
template <typename T>
struct is_shared_ptr<std::shared_ptr<T>> : std::true_type {};

// The module a holder, a std::shared_ptr or a module value (moved into a new shared_ptr)
// gives, as std::shared_ptr<Impl>.
template <typename M>
auto to_module_ptr(M&& module) {
    using D = std::decay_t<M>;
    if constexpr (is_module_holder_v<D>) {
        return module.ptr();
    } else if constexpr (is_shared_ptr<D>::value) {
        static_assert(std::is_base_of_v<Module, typename D::element_type>, "expected a std::shared_ptr to a Module");
        return D(std::forward<M>(module));
    } else {
        static_assert(std::is_base_of_v<Module, D>, "expected a module: a holder, a std::shared_ptr or a Module");
        return std::make_shared<D>(std::forward<M>(module));
    }
}

template <typename M, typename = void>
struct has_tensor_forward : std::false_type {};
template <typename M>
struct has_tensor_forward<M, std::void_t<decltype(std::declval<M&>().forward(std::declval<const Tensor&>()))>>
    : std::is_convertible<decltype(std::declval<M&>().forward(std::declval<const Tensor&>())), Tensor> {};

// A position in a container of n modules (negative: from the end), Python's IndexError.
EMBER_API size_t container_index(int64_t index, size_t n);

// The module as its Impl type T (an error naming its type when it is another).
template <typename T>
T& cast_module(const std::shared_ptr<Module>& module) {
    T* impl = dynamic_cast<T*>(module.get());
    EMBER_CHECK(impl != nullptr, "Attempted to cast module of type ", module->name(), " to the wrong type");
    return *impl;
}

}  // namespace detail

// A module with a `Tensor forward(const Tensor&)`, whatever its type (what Sequential holds).
class EMBER_API AnyModule {
public:
    AnyModule() = default;
    template <typename M, typename = std::enable_if_t<!std::is_same_v<std::decay_t<M>, AnyModule>>>
    AnyModule(M&& module) {  // NOLINT: implicit, as libtorch
        auto ptr = detail::to_module_ptr(std::forward<M>(module));
        using Impl = typename decltype(ptr)::element_type;
        static_assert(detail::has_tensor_forward<Impl>::value,
                      "a module in a Sequential needs a forward(const Tensor&) returning a Tensor");
        forward_ = [impl = ptr.get()](const Tensor& input) -> Tensor { return impl->forward(input); };
        module_ = std::move(ptr);
    }

    // module->forward(input)
    Tensor forward(const Tensor& input) const;
    const std::shared_ptr<Module>& ptr() const;
    // The module as its Impl type (an error when it is another type).
    template <typename T>
    T& get() const {
        return detail::cast_module<T>(ptr());
    }
    bool is_empty() const noexcept { return module_ == nullptr; }

private:
    std::shared_ptr<Module> module_;
    std::function<Tensor(const Tensor&)> forward_;
};

// A (name, module) pair for Sequential's named constructor.
struct NamedAnyModule {
    template <typename M>
    NamedAnyModule(std::string name, M&& module) : name(std::move(name)), module(std::forward<M>(module)) {}
    std::string name;
    AnyModule module;
};

namespace detail {
inline const std::shared_ptr<Module>& element_module(const std::shared_ptr<Module>& module) { return module; }
inline const std::shared_ptr<Module>& element_module(const AnyModule& module) { return module.ptr(); }
}  // namespace detail

// What Sequential and ModuleList share: their modules in order, by position (negative
// positions count from the end, as in Python).
template <typename Element>
class ModuleSequence : public Module {
public:
    using Iterator = typename std::vector<Element>::iterator;
    using ConstIterator = typename std::vector<Element>::const_iterator;

    // The module at a position.
    std::shared_ptr<Module> operator[](int64_t index) const { return ptr(index); }
    std::shared_ptr<Module> ptr(int64_t index) const {
        return detail::element_module(elements_[detail::container_index(index, elements_.size())]);
    }
    // The module at a position as T (nullptr when it is another type).
    template <typename T>
    std::shared_ptr<T> ptr(int64_t index) const {
        return std::dynamic_pointer_cast<T>(ptr(index));
    }
    // The module at a position as its Impl type T (an error when it is another type).
    template <typename T>
    T& at(int64_t index) const {
        return detail::cast_module<T>(ptr(index));
    }

    size_t size() const noexcept { return elements_.size(); }
    bool is_empty() const noexcept { return elements_.empty(); }
    Iterator begin() { return elements_.begin(); }
    Iterator end() { return elements_.end(); }
    ConstIterator begin() const { return elements_.begin(); }
    ConstIterator end() const { return elements_.end(); }

protected:
    std::vector<Element> elements_;
};

// Modules applied one after another (Python's nn.Sequential).
class EMBER_API SequentialImpl : public ModuleSequence<AnyModule> {
public:
    SequentialImpl() = default;
    // The modules, named "0", "1", ...
    template <typename First, typename... Rest,
              typename = std::enable_if_t<!std::is_same_v<std::decay_t<First>, SequentialImpl>>>
    explicit SequentialImpl(First&& first, Rest&&... rest) {
        push_back(std::forward<First>(first));
        (push_back(std::forward<Rest>(rest)), ...);
    }
    // Named modules, in order (Python's Sequential(OrderedDict(...))).
    explicit SequentialImpl(std::initializer_list<NamedAnyModule> named_modules);

    // Appends a module named after its position ("3").
    template <typename M>
    void push_back(M&& module) {
        push_back(std::to_string(size()), AnyModule(std::forward<M>(module)));
    }
    // Appends a module under a name.
    void push_back(std::string name, AnyModule module);
    // Appends the modules of another Sequential (sharing them).
    void extend(const SequentialImpl& other);

    // input through every module in order (input itself when empty, as Python).
    Tensor forward(const Tensor& input);
};

// The holder of SequentialImpl (with the named constructor, which a braced list needs).
class Sequential : public ModuleHolder<SequentialImpl> {
public:
    using ModuleHolder<SequentialImpl>::ModuleHolder;
    using ModuleHolder<SequentialImpl>::get;
    Sequential() : ModuleHolder<SequentialImpl>() {}
    Sequential(std::initializer_list<NamedAnyModule> named_modules)
        : ModuleHolder<SequentialImpl>(std::make_shared<SequentialImpl>(named_modules)) {}
};

// A list of modules, registered as "0", "1", ... (Python's nn.ModuleList); no forward.
class EMBER_API ModuleListImpl : public ModuleSequence<std::shared_ptr<Module>> {
public:
    ModuleListImpl() = default;
    template <typename First, typename... Rest,
              typename = std::enable_if_t<!std::is_same_v<std::decay_t<First>, ModuleListImpl>>>
    explicit ModuleListImpl(First&& first, Rest&&... rest) {
        push_back(std::forward<First>(first));
        (push_back(std::forward<Rest>(rest)), ...);
    }

    // Appends a module (a holder, a std::shared_ptr or a module value).
    template <typename M>
    void push_back(M&& module) {
        push_back_ptr(detail::to_module_ptr(std::forward<M>(module)));
    }
    // Inserts a module before position index (0..size()); later ones are renamed.
    template <typename M>
    void insert(int64_t index, M&& module) {
        insert_ptr(index, detail::to_module_ptr(std::forward<M>(module)));
    }
    // Appends the modules of another ModuleList (sharing them).
    void extend(const ModuleListImpl& other);

    // Python's ModuleList repr: runs of equal modules folded, "(0-1): 2 x Linear(...)".
    void pretty_print(std::ostream& stream) const override;

private:
    void push_back_ptr(std::shared_ptr<Module> module);
    void insert_ptr(int64_t index, std::shared_ptr<Module> module);
};
EMBER_MODULE(ModuleList);

// A function as a module, for Sequential (libtorch's Functional):
//   Sequential net(Linear(4, 8), Functional([](const Tensor& x) { return x.relu(); }));
class EMBER_API FunctionalImpl : public Module {
public:
    using Function = std::function<Tensor(const Tensor&)>;
    explicit FunctionalImpl(Function function);
    Tensor forward(const Tensor& input);

private:
    Function function_;
};
EMBER_MODULE(Functional);

}  // namespace nn
}  // namespace ember
