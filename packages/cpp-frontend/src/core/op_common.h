// Private: helpers shared by the op implementations.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "../autograd/function_node.h"
#include "dispatch.h"
#include "ember/autograd.h"
#include "ember/ops.h"
#include "loops.h"
#include "tensor_iterator.h"
#include "tensor_utils.h"

namespace ember {
namespace native {

using autograd::FunctionNode;
using autograd::make_node;
using autograd::set_history;
using autograd::variable_list;

template <typename T>
struct is_complex_t : std::false_type {};
template <typename T>
struct is_complex_t<std::complex<T>> : std::true_type {};
template <typename T>
inline constexpr bool is_complex_v = is_complex_t<T>::value;

// Value conversion between element types with PyTorch's semantics (float to integer
// truncates through int64, anything to bool is != 0, Half through float; complex to real
// keeps the real part, real to complex has a zero imaginary part).
template <typename To, typename From>
inline To convert(From v) {
    if constexpr (std::is_same_v<To, From>) {
        return v;
    } else if constexpr (std::is_same_v<From, Half>) {
        return convert<To>(static_cast<float>(v));
    } else if constexpr (std::is_same_v<To, bool>) {
        return v != From(0);
    } else if constexpr (is_complex_v<To> && is_complex_v<From>) {
        return To(static_cast<typename To::value_type>(v.real()), static_cast<typename To::value_type>(v.imag()));
    } else if constexpr (is_complex_v<From>) {
        return convert<To>(v.real());
    } else if constexpr (is_complex_v<To>) {
        return To(static_cast<typename To::value_type>(v), typename To::value_type(0));
    } else if constexpr (std::is_same_v<To, Half>) {
        return Half(static_cast<float>(v));
    } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
        return static_cast<To>(static_cast<int64_t>(v));
    } else {
        return static_cast<To>(v);
    }
}

// Copies src into dst elementwise (broadcasting src, converting dtypes); no autograd.
void copy_kernel(const Tensor& dst, const Tensor& src);
// t converted to dtype (t itself when it already has it); no autograd.
Tensor cast(const Tensor& t, ScalarType dtype);
// A 0-dim tensor of dtype holding s.
Tensor scalar_to_tensor(const Scalar& s, ScalarType dtype);
// A contiguous copy (or t itself when contiguous); no autograd.
Tensor contiguous_data(const Tensor& t);

void inplace_record(const Tensor& self, Tensor result);
// Fills without bumping the version (for factories) / with autograd rules (fill_).
void fill_kernel(const Tensor& self, const Scalar& value);

// Runs an in-place op on self. When autograd must record (grad mode on, self or another
// input requiring grad) the op runs out of place as out_of_place(copy of self) (which records
// the history), the result is copied into self and self takes its history; otherwise
// `kernel` modifies self directly. Checks the in-place rules (leaf, views).
template <typename OutOfPlace, typename Kernel>
Tensor& inplace_op(const Tensor& self, std::initializer_list<Tensor> others, OutOfPlace&& out_of_place,
                   Kernel&& kernel) {
    check_inplace(self);
    bool record = false;
    if (GradMode::is_enabled()) {
        record = self.requires_grad();
        for (const Tensor& o : others) record = record || (o.defined() && o.requires_grad());
    }
    if (record) {
        // the op runs on a copy of self's old value (which its backward may have saved)
        inplace_record(self, out_of_place(self.clone()));
    } else {
        kernel();
        bump_version(self);
    }
    return const_cast<Tensor&>(self);
}

// Sums a gradient over broadcast dims back to `shape` (undefined stays undefined).
inline Tensor reduce_grad(const Tensor& g, IntArrayRef shape) {
    if (!g.defined()) return g;
    if (g.sizes() == shape) return g;
    return sum_to(g, shape);
}

// The result dtype of an in-place op must be castable to self's (PyTorch's message).
inline void check_inplace_dtype(ScalarType result, ScalarType self) {
    EMBER_CHECK(can_cast(result, self), "result type ", result, " can't be cast to the desired output type ", self);
}

// What the node of a one-input op saves for its backward (as slot 0).
enum class Save { None, Self, Result };

// Records out as the result of an op of one differentiable input whose input gradient is
// grad_fn(grad), or grad_fn(node, grad) when it reads what was saved (an undefined grad gives
// an undefined gradient).
template <typename GradFn>
void record_unary(const Tensor& out, const Tensor& input, const char* node_name, GradFn grad_fn,
                  Save save = Save::None) {
    if (auto n = make_node(node_name, {input})) {
        set_history(out, n, 0);
        if (save == Save::Self) n->save(input);
        if (save == Save::Result) n->save(out, /*is_output=*/true);
        n->set_formula([grad_fn](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            if constexpr (std::is_invocable_v<GradFn, FunctionNode&, const Tensor&>) {
                return {grad_fn(node, g[0])};
            } else {
                (void)node;
                return {grad_fn(g[0])};
            }
        });
    }
}

// PyTorch's error for a kernel without complex support: "<name>" not implemented for 'ComplexFloat'.
inline void check_not_complex(const Tensor& t, const char* name) {
    EMBER_CHECK(!t.is_complex(), "\"", name, "\" not implemented for '", scalar_type_name(t.scalar_type()), "'");
}

// The float dtype a float-valued unary op computes in (integers go to the default dtype).
inline ScalarType float_compute_type(const Tensor& t) {
    return is_floating_point(t.scalar_type()) ? t.scalar_type() : get_default_dtype();
}

// An in-place op through its out-of-place form fn(self): the result written back into self
// (when nothing records, fn runs on self detached). others: fn's other differentiable inputs.
template <typename Fn>
Tensor& inplace_from(const Tensor& self, std::initializer_list<Tensor> others, Fn fn) {
    return inplace_op(self, others, fn, [&] { copy_kernel(self, fn(self.detach())); });
}

// "[ember.FloatTensor [2, 3]]"-style helpers are in the autograd sources.

// Applies f(scalar_t tag) over the floating dtype of t.
template <typename F>
void with_floating(ScalarType t, const char* name, F&& f) {
    dispatch_floating(t, name, std::forward<F>(f));
}

}  // namespace native
}  // namespace ember
