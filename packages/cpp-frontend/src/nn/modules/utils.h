// Private helpers of the nn modules: PyTorch's shared initialisation and Python's repr of
// size arguments.
#pragma once

#include <string>
#include <utility>

#include "ember/nn/module.h"
#include "ember/tensor.h"

namespace ember {
namespace nn {
namespace detail {

// PyTorch's Linear / ConvNd init: kaiming_uniform_(weight, a = sqrt(5)) and bias (when
// defined) from U(-1/sqrt(fan_in), 1/sqrt(fan_in)). With no fan-in, Linear zeroes the bias
// and ConvNd (keep_bias_without_fan_in) leaves it as it is.
void reset_kaiming_uniform(const Tensor& weight, const Tensor& bias, bool keep_bias_without_fan_in);

// A size argument as Python prints what the user gave: one number when every entry is the
// same ("2"), else a tuple ("(2, 3)").
std::string size_repr(IntArrayRef values);

// Registers "weight" and "bias" of `shape` on `module` when affine (bias only with bias),
// undefined otherwise, and returns them: the normalisation layers' elementwise affine.
std::pair<Tensor, Tensor> register_affine(Module& module, bool affine, bool bias, IntArrayRef shape);
// weight to ones and bias to zeros (each when defined).
void reset_affine(const Tensor& weight, const Tensor& bias);

// An attention mask as the float mask added to the scores: a bool mask becomes 0 / -inf
// (true = masked) of dtype, a float mask is returned as it is, an undefined one stays
// undefined; other dtypes are PyTorch's error naming the mask.
Tensor canonical_mask(const Tensor& mask, const char* name, ScalarType dtype);

}  // namespace detail
}  // namespace nn
}  // namespace ember
