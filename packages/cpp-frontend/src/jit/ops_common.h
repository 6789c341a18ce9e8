// Private: helpers shared by the op families of the C++ op table (ops_*.cpp).
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "ember/ops.h"
#include "ember/tensor.h"
#include "jit/op_table.h"
#include "jit/value.h"

namespace ember::jit::detail {

inline OpResult one(Tensor t) { return OpResult{std::move(t)}; }

using Shape = std::vector<int64_t>;

inline Shape shape_of(const Tensor& t) {
    auto s = t.sizes();
    return Shape(s.begin(), s.end());
}

// "2, 3, 4" (`sep` between the sizes): shapes in error messages.
inline std::string join_dims(const Shape& s, const char* sep = ", ") {
    std::ostringstream os;
    for (std::size_t i = 0; i < s.size(); ++i) os << (i ? sep : "") << s[i];
    return os.str();
}

// "[2, 3, 4]", as Python prints a list of sizes.
inline std::string bracketed(const Shape& s) { return "[" + join_dims(s) + "]"; }

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

// Adds `name`_ (an in-place variant without a native kernel): `name` computed out of place,
// then written into its first argument (write_into's checks).
void def_inplace_by_copy(OpTable& t, const std::string& name);

// A dim list argument: None gives {}, an int {d}, a list its ints.
std::vector<int64_t> dims_of(const Args& a, const char* name);

// `out=` of an op: when given, the result is copied into it (PyTorch resizes an empty out;
// here its shape must already match) and out is returned.
Tensor to_out(const Args& a, Tensor result);

// An element-wise function of Python's float ops (asin, atan2, ...), computed in double over
// contiguous copies: the result takes the floating dtype of the (promoted) input, an integer
// or bool input the default float dtype. The binary form broadcasts its operands.
template <typename Fn>
Tensor map_float(const Tensor& x, Fn fn) {
    const ScalarType out = x.is_floating_point() ? x.scalar_type() : get_default_dtype();
    const Tensor src = x.to(kDouble).contiguous();
    Tensor r = ember::empty(src.sizes(), kDouble);
    const double* in = src.data_ptr<double>();
    double* o = r.data_ptr<double>();
    for (int64_t i = 0, n = src.numel(); i < n; ++i) o[i] = fn(in[i]);
    return r.to(out);
}

template <typename Fn>
Tensor map_float(const Tensor& x, const Tensor& y, Fn fn) {
    ScalarType out = result_type(x, y);
    if (!is_floating_point(out)) out = get_default_dtype();
    std::vector<Tensor> b = ember::broadcast_tensors({x, y});
    const Tensor sx = b[0].to(kDouble).contiguous();
    const Tensor sy = b[1].to(kDouble).contiguous();
    Tensor r = ember::empty(sx.sizes(), kDouble);
    const double* px = sx.data_ptr<double>();
    const double* py = sy.data_ptr<double>();
    double* o = r.data_ptr<double>();
    for (int64_t i = 0, n = sx.numel(); i < n; ++i) o[i] = fn(px[i], py[i]);
    return r.to(out);
}

// A dim argument made non-negative for a tensor of `ndim` dims (a 0-d tensor takes 0 and
// -1); out of range: IndexError as Python words it.
int64_t dim_index(int64_t dim, int64_t ndim, const std::string& op);

}  // namespace ember::jit::detail
