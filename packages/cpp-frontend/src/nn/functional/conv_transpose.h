// Private: the transposed convolutions of ember::nn::functional (F::conv_transpose1d/2d/3d,
// ConvTranspose1d/2d/3d) and of the C++ op table (src/jit/ops_nn_extra.cpp): one
// implementation for both.
#pragma once

#include <cstdint>
#include <string>

#include "ember/array_ref.h"
#include "ember/tensor.h"

namespace ember {
namespace nn {
namespace functional {
namespace detail {

// The transposed convolution over the last `dims` (1, 2 or 3) dims of input (N, C_in, *) or
// (C_in, *) with weight (C_in, C_out / groups, k...) and bias (C_out) or undefined; stride,
// padding, output_padding and dilation hold one value or `dims` values. Checks its arguments
// with PyTorch's errors; `op` (the op table's name for the call, "" for F::) prefixes the
// messages that the op table has always prefixed with "<op>(): ".
//
// How: the columns W_g^T @ x_g (one matmul per group, batched) are summed into the uncropped
// output by col2im (the adjoint of im2col, as the gradient of a convolution is), which
// `padding` then crops and output_padding extends with zeros; 3-D adds the 2-D transposed
// convolution of each depth tap at its depths (index_add). Every step is a differentiable op,
// so gradients of every order come from autograd.
Tensor conv_transpose(int64_t dims, const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                      IntArrayRef padding, IntArrayRef output_padding, int64_t groups, IntArrayRef dilation,
                      const std::string& op = std::string());

}  // namespace detail
}  // namespace functional
}  // namespace nn
}  // namespace ember
