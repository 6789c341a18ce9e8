// Private: what the random kernels of random.cpp share with other sources (dropout).
#pragma once

#include <cstdint>
#include <vector>

#include "ember/tensor.h"

namespace ember {
namespace native {

// The order PyTorch's TensorIterator visits t's elements in (its axes from the outermost in
// memory); empty when that is t's own (C) order.
std::vector<int64_t> memory_order(const Tensor& t);
// Whether t is dense (no gaps, no overlaps) with its axes `order` from the outermost.
bool dense_in_order(const Tensor& t, const std::vector<int64_t>& order);

}  // namespace native
}  // namespace ember
