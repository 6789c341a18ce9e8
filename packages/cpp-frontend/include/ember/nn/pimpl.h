// ModuleHolder<Impl> and EMBER_MODULE (libtorch's TORCH_MODULE): the module types users
// write, `Linear`, `Conv2d`, `Net`, are shared-pointer handles of `LinearImpl`, `Conv2dImpl`,
// `NetImpl`.
//
//   struct NetImpl : ember::nn::Module { ... Tensor forward(const Tensor& x); };
//   EMBER_MODULE(Net);
//
//   Net net;                          // a new NetImpl (default-constructed)
//   ember::nn::Linear fc(4, 2);       // a new LinearImpl(4, 2): arguments forwarded
//   ember::nn::Linear none = nullptr; // empty, filled in later (register_module)
//   Tensor y = net(x);                // net->forward(x)
//   net->train(false);                // -> and * reach the Impl
//   Net alias = net;                  // copies share the module (shared_ptr semantics)
#pragma once

#include <cstddef>
#include <memory>
#include <ostream>
#include <type_traits>
#include <utility>

#include "../error.h"
#include "module.h"

namespace ember {
namespace nn {

namespace detail {
// The base of every ModuleHolder (a tag to recognise holders in templates).
struct ModuleHolderIndicator {};

template <typename T>
inline constexpr bool is_module_holder_v = std::is_base_of_v<ModuleHolderIndicator, std::decay_t<T>>;

template <typename T, typename Contained, bool = is_module_holder_v<T>>
struct is_module_holder_of : std::false_type {};
template <typename T, typename Contained>
struct is_module_holder_of<T, Contained, true>
    : std::is_same<typename std::decay_t<T>::ContainedType, Contained> {};
template <typename T, typename Contained>
inline constexpr bool is_module_holder_of_v = is_module_holder_of<T, Contained>::value;

// Whether ModuleHolder<Contained>'s forwarding constructor should take these arguments:
// not when it is a copy / move of a holder, nullptr, or a std::shared_ptr of the module.
template <typename Contained, typename Head, typename... Tail>
inline constexpr bool holder_forwards_v =
    !(sizeof...(Tail) == 0 &&
      (is_module_holder_of_v<Head, Contained> || std::is_same_v<std::decay_t<Head>, std::nullptr_t> ||
       std::is_convertible_v<Head, std::shared_ptr<Contained>>));
}  // namespace detail

template <typename Contained>
class ModuleHolder : detail::ModuleHolderIndicator {
public:
    using ContainedType = Contained;

    // A default-constructed module. For a module without a default constructor, write
    // `Linear linear = nullptr;` (an empty holder) and assign it later.
    ModuleHolder() : impl_(default_construct()) {}
    // An empty holder.
    ModuleHolder(std::nullptr_t) {}  // NOLINT: implicit, as libtorch
    // A new module from the constructor arguments of Contained.
    template <typename Head, typename... Tail,
              typename = std::enable_if_t<detail::holder_forwards_v<Contained, Head, Tail...>>>
    explicit ModuleHolder(Head&& head, Tail&&... tail)
        : impl_(std::make_shared<Contained>(std::forward<Head>(head), std::forward<Tail>(tail)...)) {}
    // Holds an existing module (shared).
    ModuleHolder(std::shared_ptr<Contained> module) : impl_(std::move(module)) {}  // NOLINT

    explicit operator bool() const noexcept { return !is_empty(); }
    bool is_empty() const noexcept { return impl_ == nullptr; }

    Contained* operator->() { return get(); }
    const Contained* operator->() const { return get(); }
    Contained& operator*() { return *get(); }
    const Contained& operator*() const { return *get(); }
    const std::shared_ptr<Contained>& ptr() const {
        check_not_empty();
        return impl_;
    }
    Contained* get() {
        check_not_empty();
        return impl_.get();
    }
    const Contained* get() const {
        check_not_empty();
        return impl_.get();
    }

    // module(args...) calls module->forward(args...).
    template <typename... Args, typename C = Contained>
    auto operator()(Args&&... args) -> decltype(std::declval<C&>().forward(std::forward<Args>(args)...)) {
        return get()->forward(std::forward<Args>(args)...);
    }
    // module[i] for the containers (Sequential, ModuleList).
    template <typename Arg>
    decltype(auto) operator[](Arg&& arg) {
        return (*get())[std::forward<Arg>(arg)];
    }

protected:
    std::shared_ptr<Contained> impl_;

private:
    void check_not_empty() const { EMBER_CHECK(impl_ != nullptr, "Accessing empty ModuleHolder"); }
    static std::shared_ptr<Contained> default_construct() {
        static_assert(std::is_default_constructible_v<Contained>,
                      "You are trying to default construct a module which has no default constructor. "
                      "Use = nullptr to give it the empty state (e.g. `Linear linear = nullptr;` instead "
                      "of `Linear linear;`).");
        return std::make_shared<Contained>();
    }
};

// Prints the held module (Python's repr).
template <typename Contained>
std::ostream& operator<<(std::ostream& stream, const ModuleHolder<Contained>& module) {
    return stream << *module;
}

}  // namespace nn
}  // namespace ember

// EMBER_MODULE_IMPL(Name, ImplType): `Name`, a ModuleHolder<ImplType>, with every
// constructor of ModuleHolder (libtorch's TORCH_MODULE_IMPL).
#define EMBER_MODULE_IMPL(Name, ImplType)                               \
    class Name : public ::ember::nn::ModuleHolder<ImplType> { /* NOLINT */ \
    public:                                                             \
        using ::ember::nn::ModuleHolder<ImplType>::ModuleHolder;        \
        using ::ember::nn::ModuleHolder<ImplType>::get;                 \
    }

// EMBER_MODULE(Name): `Name` wraps `NameImpl` in a std::shared_ptr (libtorch's TORCH_MODULE).
#define EMBER_MODULE(Name) EMBER_MODULE_IMPL(Name, Name##Impl)
