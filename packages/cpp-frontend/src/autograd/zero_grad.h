// Clearing a parameter's gradient, as Module::zero_grad and Optimizer::zero_grad both do it.
#pragma once

#include <ember/tensor.h>

namespace ember {
namespace autograd {

// PyTorch's zero_grad for one tensor: with set_to_none the gradient is dropped; otherwise it
// is detached from any graph (or its requires_grad cleared) and zeroed in place.
void zero_grad_of(const Tensor& p, bool set_to_none);

}  // namespace autograd
}  // namespace ember
