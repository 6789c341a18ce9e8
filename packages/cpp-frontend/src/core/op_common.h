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

// Value conversion between element types with PyTorch's semantics (float to integer
// truncates through int64, anything to bool is != 0, Half through float).
template <typename To, typename From>
inline To convert(From v) {
    if constexpr (std::is_same_v<To, From>) {
        return v;
    } else if constexpr (std::is_same_v<From, Half>) {
        return convert<To>(static_cast<float>(v));
    } else if constexpr (std::is_same_v<To, bool>) {
        return v != From(0);
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

// "[ember.FloatTensor [2, 3]]"-style helpers are in the autograd sources.

// Applies f(scalar_t tag) over the floating dtype of t.
template <typename F>
void with_floating(ScalarType t, const char* name, F&& f) {
    dispatch_floating(t, name, std::forward<F>(f));
}

}  // namespace native
}  // namespace ember
