// Private: reduction machinery.
//
// reduce_simple: an associative reduction (sum, prod, max, ...) over masked dims through the
// TensorIter (both inner reductions, vectorised with 8 accumulators, and outer ones, where
// whole output rows are combined with input rows).
//
// Lanes: for reductions with state (argmax, var, sort, softmax, cumsum) the tensor is
// permuted so the reduced dims are last and made contiguous (no copy when they already are):
// then each output element owns one contiguous lane.
#pragma once

#include <vector>

#include "op_common.h"

namespace ember {
namespace native {

template <typename acc_t, typename in_t, typename Op>
void reduce_loop(const TensorIter& iter, acc_t ident, Op op) {
    iter.for_each([&](char** data, const int64_t* strides, int64_t n) {
        if (strides[0] == 0) {
            acc_t a = *reinterpret_cast<acc_t*>(data[0]);
            if (strides[1] == static_cast<int64_t>(sizeof(in_t))) {
                const in_t* p = reinterpret_cast<const in_t*>(data[1]);
                acc_t lanes[8] = {ident, ident, ident, ident, ident, ident, ident, ident};
                int64_t i = 0;
                for (; i + 8 <= n; i += 8) {
                    for (int k = 0; k < 8; ++k) lanes[k] = op(lanes[k], static_cast<acc_t>(static_cast<opmath_t<in_t>>(p[i + k])));
                }
                for (; i < n; ++i) a = op(a, static_cast<acc_t>(static_cast<opmath_t<in_t>>(p[i])));
                for (int k = 0; k < 8; ++k) a = op(a, lanes[k]);
            } else {
                const char* p = data[1];
                for (int64_t i = 0; i < n; ++i) {
                    a = op(a, static_cast<acc_t>(static_cast<opmath_t<in_t>>(*reinterpret_cast<const in_t*>(p + i * strides[1]))));
                }
            }
            *reinterpret_cast<acc_t*>(data[0]) = a;
            return;
        }
        if (strides[0] == static_cast<int64_t>(sizeof(acc_t)) && strides[1] == static_cast<int64_t>(sizeof(in_t))) {
            acc_t* __restrict__ o = reinterpret_cast<acc_t*>(data[0]);
            const in_t* __restrict__ p = reinterpret_cast<const in_t*>(data[1]);
            for (int64_t i = 0; i < n; ++i) o[i] = op(o[i], static_cast<acc_t>(static_cast<opmath_t<in_t>>(p[i])));
            return;
        }
        for (int64_t i = 0; i < n; ++i) {
            acc_t& o = *reinterpret_cast<acc_t*>(data[0] + i * strides[0]);
            o = op(o, static_cast<acc_t>(static_cast<opmath_t<in_t>>(*reinterpret_cast<const in_t*>(data[1] + i * strides[1]))));
        }
    });
}

// Reduces `self` (elements of in_t) over the masked dims into a new tensor of acc dtype with
// the keepdim shape, starting from ident.
template <typename acc_t, typename in_t, typename Op>
Tensor reduce_simple(const Tensor& self, const std::vector<bool>& mask, acc_t ident, Op op) {
    Tensor out = empty_tensor(reduced_shape(self.sizes(), mask, true), scalar_type_of<acc_t>());
    {
        acc_t* p = static_cast<acc_t*>(out.data_ptr());
        for (int64_t i = 0; i < out.numel(); ++i) p[i] = ident;
    }
    if (self.numel() > 0) {
        TensorIter iter = TensorIter::reduction(out, self);
        reduce_loop<acc_t, in_t>(iter, ident, op);
    }
    return out;
}

struct Lanes {
    Tensor data;                       // contiguous, outer * len elements
    int64_t outer = 1;
    int64_t len = 1;
    std::vector<int64_t> keep_shape;   // output shape with the reduced dims kept as 1
    std::vector<int64_t> perm;         // the permutation applied to self
};

Lanes make_lanes(const Tensor& self, const std::vector<bool>& mask);
// A lane-layout result (outer lanes of `len` elements, contiguous) back in self's dim order.
Tensor lanes_to_tensor(const Tensor& lane_result, const Lanes& lanes, IntArrayRef permuted_sizes);

// keepdim shape -> shape without the reduced dims (a view)
Tensor drop_reduced(const Tensor& t, const std::vector<bool>& mask, bool keepdim);

}  // namespace native
}  // namespace ember
