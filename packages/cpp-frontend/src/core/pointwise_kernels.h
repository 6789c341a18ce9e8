// Private: running elementwise kernels with PyTorch's dtype rules (no autograd here).
#pragma once

#include <cmath>
#include <type_traits>
#include <utility>

#include "op_common.h"

namespace ember {
namespace native {

// The dtype sets of dispatch.h, as the kernels below name them.
enum class Kinds : unsigned {
    All = kIntegerTypes | kFloatingTypes | kBoolType,
    Numeric = kIntegerTypes | kFloatingTypes,
    Floating = kFloatingTypes,
    Integral = kIntegerTypes | kBoolType,
    AllAndComplex = kIntegerTypes | kFloatingTypes | kBoolType | kComplexTypes,
    FloatingAndComplex = kFloatingTypes | kComplexTypes,
    NumericAndComplex = kIntegerTypes | kFloatingTypes | kComplexTypes,
};

// Refuses to record autograd for a complex result (Ember's C++ autograd is real-only; a
// complex tensor cannot require grad, but a real one that does may meet a complex one, or be
// reduced into a complex dtype). a or b may be undefined.
inline void check_complex_autograd(ScalarType result, const char* op, const Tensor& a, const Tensor& b) {
    if (!is_complex(result) || !GradMode::is_enabled()) return;
    EMBER_CHECK(!(a.defined() && a.requires_grad()) && !(b.defined() && b.requires_grad()), op,
                ": autograd through complex tensors is not supported by Ember's C++ frontend");
}

template <Kinds K, typename F>
decltype(auto) dispatch_kind(ScalarType t, const char* name, F&& f) {
    return dispatch_set<static_cast<unsigned>(K)>(t, name, std::forward<F>(f));
}

// f called with N arguments of type T (only its result type is used).
template <typename T, typename F, std::size_t... I>
auto call_n(F& f, std::index_sequence<I...>) -> decltype(f(((void)I, std::declval<T>())...));

// An elementwise kernel over the inputs (already of dtype `compute`); make(tag) returns the
// lambda for the element type tag. The output has dtype out_dtype (compute or bool); out, if
// defined, must have it and the broadcast shape.
template <Kinds K, typename Make, typename... Inputs>
Tensor run_elementwise(ScalarType compute, ScalarType out_dtype, const char* name, Make& make, Tensor out,
                       const Inputs&... inputs) {
    TensorIter iter = TensorIter::elementwise(out, out_dtype, {inputs...});
    dispatch_kind<K>(compute, name, [&](auto tag) {
        using T = typename decltype(tag)::type;
        auto f = make(tag);
        if constexpr (is_complex_v<T>) {  // the complex kernels return T, or bool (eq, ne)
            if constexpr (std::is_same_v<decltype(call_n<T>(f, std::index_sequence_for<Inputs...>())), bool>) {
                cpu_kernel_n<bool, T, sizeof...(Inputs)>(iter, f);
            } else {
                cpu_kernel_n<T, T, sizeof...(Inputs)>(iter, f);
            }
        } else if (out_dtype == kBool) {
            cpu_kernel_n<bool, T, sizeof...(Inputs)>(iter, f);
        } else {
            cpu_kernel_n<T, T, sizeof...(Inputs)>(iter, f);
        }
    });
    return iter.output();
}

// Unary kernel in dtype `compute` (self is cast to it). out (if defined) must have dtype
// out_dtype and self's shape.
template <Kinds K, typename Make>
Tensor run_unary(const Tensor& self, ScalarType compute, ScalarType out_dtype, const char* name, Make make,
                 Tensor out = {}) {
    return run_elementwise<K>(compute, out_dtype, name, make, std::move(out), cast(self, compute));
}

// Binary kernel in dtype `compute`; output dtype compute or bool.
template <Kinds K, typename Make>
Tensor run_binary(const Tensor& a, const Tensor& b, ScalarType compute, ScalarType out_dtype, const char* name,
                  Make make, Tensor out = {}) {
    return run_elementwise<K>(compute, out_dtype, name, make, std::move(out), cast(a, compute), cast(b, compute));
}

// Writes a computed result into self (in place), converting when dtypes differ.
inline void write_into(const Tensor& self, const Tensor& result) {
    if (result.is_same(self)) return;
    copy_kernel(self, result);
}

}  // namespace native
}  // namespace ember
