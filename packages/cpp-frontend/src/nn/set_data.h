// Private: libtorch's Tensor::set_data for the conversions of nn::Module::to and
// jit::Module::to.
#pragma once

#include "ember/tensor.h"

namespace ember {
namespace nn {
namespace detail {

// Rebuilds the TensorImpl that every handle of `self` points to over data's storage (its
// dtype, sizes and strides): everyone holding `self` sees the converted tensor. The version
// counter is kept (and bumped); requires_grad and the gradient (converted) are restored.
void set_data_in_place(const Tensor& self, const Tensor& data);

}  // namespace detail
}  // namespace nn
}  // namespace ember
