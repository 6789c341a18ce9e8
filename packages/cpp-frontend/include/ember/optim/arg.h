// The chained-setter macros of the option classes of ember::optim and ember::data
// (libtorch's TORCH_ARG).
#pragma once

#include <utility>

// EMBER_OPTIM_ARG_(T, name): a private member `name_` with the chained setter `name(value)`
// returning *this and the getters `name()`. Write the default after it:
//   EMBER_OPTIM_ARG_(double, eps) = 1e-8;
// EMBER_OPTIM_CRTP_ARG_(Derived, T, name) is the same in a CRTP base: the setter returns
// Derived&, so that chained calls keep the derived type.
#define EMBER_OPTIM_ARG_IMPL_(Ret, T, name)                         \
public:                                                             \
    auto name(T new_value)->Ret {                                   \
        this->name##_ = std::move(new_value);                       \
        return static_cast<Ret>(*this);                             \
    }                                                               \
    const T& name() const noexcept { return this->name##_; }        \
    T& name() noexcept { return this->name##_; }                    \
                                                                    \
private:                                                            \
    T name##_
#define EMBER_OPTIM_ARG_(T, name) EMBER_OPTIM_ARG_IMPL_(decltype(*this), T, name)
#define EMBER_OPTIM_CRTP_ARG_(Derived, T, name) EMBER_OPTIM_ARG_IMPL_(Derived&, T, name)
