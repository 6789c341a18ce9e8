// The selections by order behind ember::kthvalue, mode, median and nanmedian (dim_ops.cpp),
// with PyTorch's CPU choice among tied elements (see
// dim_ops.cpp). Each returns (values, indices) with size 1 at dim d (keepdim's shape; a 0-dim
// self gives 0-dim results); d is wrapped and the dim is not empty (the callers check both).
#pragma once

#include <cstdint>
#include <tuple>

#include "ember/tensor.h"

namespace ember {
namespace native {

// kthvalue: TH's quickselect for the kth smallest (1-based), NaN greatest.
std::tuple<Tensor, Tensor> kthvalue_along(const Tensor& self, int64_t k, int64_t d);
// mode: the most frequent value (the smallest of equally frequent ones) and the index that
// std::sort under `<` leaves last in its run.
std::tuple<Tensor, Tensor> mode_along(const Tensor& self, int64_t d);
// median / nanmedian along d: the lower median (median: the first NaN where there is one;
// nanmedian: of the non-NaN elements, NaN where all are NaN), ties by index.
std::tuple<Tensor, Tensor> median_along(const Tensor& self, int64_t d, bool ignore_nan);

}  // namespace native
}  // namespace ember
