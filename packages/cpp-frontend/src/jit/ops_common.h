// Private: helpers shared by the op families of the C++ op table (ops_*.cpp).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ember/ops.h"
#include "ember/tensor.h"
#include "jit/op_table.h"
#include "jit/value.h"

namespace ember::jit::detail {

inline OpResult one(Tensor t) { return OpResult{std::move(t)}; }

// A number (bool, int, float) as a 0-d tensor of the dtype it would take next to `like`
// in a binary op (PyTorch's wrapped-number promotion: 2 * int64 -> int64, 2.5 * int64 ->
// the default float, anything * float32 -> float32).
Tensor wrap_number(const Scalar& s, const Tensor& like);

// The two operands of a binary op, each a Tensor or a number (not both numbers): calls
// tt(Tensor, Tensor), or ts(Tensor, Scalar) when `other` is a number; a number on the left
// is wrapped (wrap_number) and goes to tt.
template <typename TT, typename TS>
Tensor binary(const Args& a, const char* lhs, const char* rhs, TT tt, TS ts) {
    const Value& x = a[lhs];
    const Value& y = a[rhs];
    if (x.is_tensor() && y.is_tensor()) return tt(x.tensor, y.tensor);
    if (x.is_tensor()) return ts(x.tensor, a.scalar(rhs));
    if (y.is_tensor()) return tt(wrap_number(a.scalar(lhs), y.tensor), y.tensor);
    a.type_error(lhs, "Tensor");
}

// The same where the op has no Tensor-Scalar overload: a number is always wrapped.
template <typename TT>
Tensor binary(const Args& a, const char* lhs, const char* rhs, TT tt) {
    return binary(a, lhs, rhs, tt, [&](const Tensor& t, const Scalar& s) { return tt(t, wrap_number(s, t)); });
}

// Writes `result` into `self` (an in-place op without a native in-place kernel): PyTorch's
// checks (the result's shape must be self's, its dtype castable to self's), then copy_.
Tensor& write_into(const Tensor& self, const Tensor& result, const std::string& op);

// A dim list argument: None gives {}, an int {d}, a list its ints.
std::vector<int64_t> dims_of(const Args& a, const char* name);

// `out=` of an op: when given, the result is copied into it (PyTorch resizes an empty out;
// here its shape must already match) and out is returned.
Tensor to_out(const Args& a, Tensor result);

}  // namespace ember::jit::detail
