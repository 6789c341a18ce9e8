// Private: running elementwise kernels with PyTorch's dtype rules (no autograd here).
#pragma once

#include <cmath>
#include <type_traits>

#include "op_common.h"

namespace ember {
namespace native {

enum class Kinds { All, Numeric, Floating, Integral };

template <Kinds K, typename F>
decltype(auto) dispatch_kind(ScalarType t, const char* name, F&& f) {
    if constexpr (K == Kinds::All) return dispatch_all(t, name, std::forward<F>(f));
    else if constexpr (K == Kinds::Numeric) return dispatch_numeric(t, name, std::forward<F>(f));
    else if constexpr (K == Kinds::Floating) return dispatch_floating(t, name, std::forward<F>(f));
    else return dispatch_integral(t, name, std::forward<F>(f));
}

// Unary kernel in dtype `compute` (self is cast to it); make(tag) returns the lambda for the
// element type tag. out (if defined) must have dtype out_dtype and self's shape.
template <Kinds K, typename Make>
Tensor run_unary(const Tensor& self, ScalarType compute, ScalarType out_dtype, const char* name, Make make,
                 Tensor out = {}) {
    Tensor in = cast(self, compute);
    TensorIter iter = TensorIter::elementwise(out, out_dtype, {in});
    dispatch_kind<K>(compute, name, [&](auto tag) {
        using T = typename decltype(tag)::type;
        auto f = make(tag);
        if (out_dtype == kBool) {
            unary_kernel<bool, T>(iter, f);
        } else {
            unary_kernel<T, T>(iter, f);
        }
    });
    return iter.output();
}

// Binary kernel in dtype `compute`; output dtype compute or bool.
template <Kinds K, typename Make>
Tensor run_binary(const Tensor& a, const Tensor& b, ScalarType compute, ScalarType out_dtype, const char* name,
                  Make make, Tensor out = {}) {
    Tensor ca = cast(a, compute), cb = cast(b, compute);
    TensorIter iter = TensorIter::elementwise(out, out_dtype, {ca, cb});
    dispatch_kind<K>(compute, name, [&](auto tag) {
        using T = typename decltype(tag)::type;
        auto f = make(tag);
        if (out_dtype == kBool) {
            binary_kernel<bool, T>(iter, f);
        } else {
            binary_kernel<T, T>(iter, f);
        }
    });
    return iter.output();
}

// Writes a computed result into self (in place), converting when dtypes differ.
inline void write_into(const Tensor& self, const Tensor& result) {
    if (result.is_same(self)) return;
    copy_kernel(self, result);
}

// The float dtype a float-valued unary op computes in (integers go to the default dtype).
inline ScalarType float_compute_type(const Tensor& t) {
    return is_floating_point(t.scalar_type()) ? t.scalar_type() : get_default_dtype();
}

}  // namespace native
}  // namespace ember
