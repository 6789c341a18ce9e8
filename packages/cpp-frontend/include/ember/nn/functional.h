// ember::nn::functional (libtorch's torch::nn::functional, Python's torch.nn.functional):
//
//   namespace F = ember::nn::functional;
//   Tensor y = F::relu(F::linear(x, w, b));
//   Tensor loss = F::cross_entropy(logits, target, F::CrossEntropyFuncOptions().label_smoothing(0.1));
//
// Most functions come in two spellings: Python's positional arguments (with Python's
// defaults) and libtorch's options struct (functional/options.h). Every function is
// differentiable by autograd (float64 gradients are checked by the tests) and raises
// ember::Error with PyTorch's message on bad input.
//
// Losses take a reduction: ember::kNone / ember::kMean / ember::kSum (an nn::Reduction) or
// Python's string "none" / "mean" / "sum"; a loss's options convert from either, so
// F::mse_loss(x, y, ember::kSum) and F::mse_loss(x, y, "sum") both work.
#pragma once

#include "../export.h"
#include <cstdint>
#include <optional>
#include <string_view>
#include <tuple>

#include "../autograd.h"
#include "../ops.h"
#include "../tensor.h"
#include "functional/options.h"
#include "options/pooling.h"

namespace ember {
namespace nn {
namespace functional {

// ---- linear and convolution ------------------------------------------------------------
// input (*, in_features) @ weight.T (out_features, in_features) + bias (out_features)
EMBER_API Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {});
// input (N, C_in, L) or (C_in, L); weight (C_out, C_in / groups, k)
EMBER_API Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = 1,
                        IntArrayRef padding = 0, IntArrayRef dilation = 1, int64_t groups = 1);
EMBER_API Tensor conv1d(const Tensor& input, const Tensor& weight, const Conv1dFuncOptions& options);
// input (N, C_in, H, W) or (C_in, H, W); weight (C_out, C_in / groups, kH, kW)
EMBER_API Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = 1,
                        IntArrayRef padding = 0, IntArrayRef dilation = 1, int64_t groups = 1);
EMBER_API Tensor conv2d(const Tensor& input, const Tensor& weight, const Conv2dFuncOptions& options);
// input (N, C_in, D, H, W) or (C_in, D, H, W); weight (C_out, C_in / groups, kD, kH, kW)
EMBER_API Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = 1,
                        IntArrayRef padding = 0, IntArrayRef dilation = 1, int64_t groups = 1);
EMBER_API Tensor conv3d(const Tensor& input, const Tensor& weight, const Conv3dFuncOptions& options);
// Python's string padding: F::conv2d(x, w, b, 1, "same") (or the options' ember::kSame /
// ember::kValid). "same" keeps the input's size (stride 1 only; PyTorch's error otherwise),
// an even kernel's extra padding element going on the right; "valid" pads nothing.
template <typename S, ember::detail::if_padding_string_t<S> = 0>
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, const S& padding,
              IntArrayRef dilation = 1, int64_t groups = 1) {
    return ember::conv1d(input, weight, bias, stride, padding, dilation, groups);
}
template <typename S, ember::detail::if_padding_string_t<S> = 0>
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, const S& padding,
              IntArrayRef dilation = 1, int64_t groups = 1) {
    return ember::conv2d(input, weight, bias, stride, padding, dilation, groups);
}
template <typename S, ember::detail::if_padding_string_t<S> = 0>
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, const S& padding,
              IntArrayRef dilation = 1, int64_t groups = 1) {
    return ember::conv3d(input, weight, bias, stride, padding, dilation, groups);
}

// Transposed convolutions (Python's F.conv_transpose1d/2d/3d; the gradient of conv*d with
// respect to its input): input (N, C_in, *) or (C_in, *) with D spatial dims, weight
// (C_in, C_out / groups, k...), bias (C_out). Each output dim is
// (in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1, output_padding
// smaller than stride or dilation. stride, padding, output_padding and dilation: one value
// or D values. Differentiable in input, weight and bias.
EMBER_API Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                                  IntArrayRef stride = 1, IntArrayRef padding = 0, IntArrayRef output_padding = 0,
                                  int64_t groups = 1, IntArrayRef dilation = 1);
EMBER_API Tensor conv_transpose1d(const Tensor& input, const Tensor& weight,
                                  const ConvTranspose1dFuncOptions& options);
EMBER_API Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                                  IntArrayRef stride = 1, IntArrayRef padding = 0, IntArrayRef output_padding = 0,
                                  int64_t groups = 1, IntArrayRef dilation = 1);
EMBER_API Tensor conv_transpose2d(const Tensor& input, const Tensor& weight,
                                  const ConvTranspose2dFuncOptions& options);
EMBER_API Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                                  IntArrayRef stride = 1, IntArrayRef padding = 0, IntArrayRef output_padding = 0,
                                  int64_t groups = 1, IntArrayRef dilation = 1);
EMBER_API Tensor conv_transpose3d(const Tensor& input, const Tensor& weight,
                                  const ConvTranspose3dFuncOptions& options);

// ---- padding ---------------------------------------------------------------------------
// Python's F.pad: pad holds (left, right) pairs from the last dim backwards (negative values
// crop). mode "constant" pads with value (default 0) any number of dims; "reflect" (the
// mirror image, edge not repeated: each pad smaller than its dim), "replicate" (edge values
// repeated) and "circular" (wrapped around, at most once) pad the last 1, 2 or 3 dims of a
// (C, *) or (N, C, *) input (2 values for a 2-D or 3-D input, 4 for 3-D or 4-D, 6 for 4-D or
// 5-D) and take no value. Differentiable (ConstantPadNdBackward0, ReflectionPad2DBackward0,
// ...); PyTorch's errors for a bad pad.
//   F::pad(x, {1, 1, 2, 0}, "reflect");
//   F::pad(x, F::PadFuncOptions({1, 1, 2, 0}).mode(ember::kReflect));   // libtorch's spelling
EMBER_API Tensor pad(const Tensor& input, IntArrayRef pad, std::string_view mode = "constant",
                     std::optional<double> value = std::nullopt);
EMBER_API Tensor pad(const Tensor& input, const PadFuncOptions& options);

// ---- pooling (input (N, C, H, W) or (C, H, W); adaptive max: 1-D to 3-D) ----------------
// stride defaults to kernel_size (an empty list)
EMBER_API Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                            IntArrayRef padding = 0, IntArrayRef dilation = 1, bool ceil_mode = false);
EMBER_API Tensor max_pool2d(const Tensor& input, const MaxPool2dFuncOptions& options);
// (output, indices): indices are flat positions in each H*W plane (as PyTorch)
EMBER_API std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                             IntArrayRef stride = {}, IntArrayRef padding = 0,
                                                             IntArrayRef dilation = 1, bool ceil_mode = false);
EMBER_API std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input,
                                                             const MaxPool2dFuncOptions& options);
EMBER_API Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                            IntArrayRef padding = 0, bool ceil_mode = false, bool count_include_pad = true,
                            std::optional<int64_t> divisor_override = std::nullopt);
EMBER_API Tensor avg_pool2d(const Tensor& input, const AvgPool2dFuncOptions& options);
EMBER_API Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size);
EMBER_API Tensor adaptive_avg_pool2d(const Tensor& input, const AdaptiveAvgPool2dFuncOptions& options);
// Adaptive max pooling of (N, C, *) or (C, *) inputs over the last 1, 2 or 3 dims to
// output_size (options: std::nullopt keeps an input size). _with_indices also gives each
// maximum's flat position in its input plane (L, H*W or D*H*W), as Python's
// return_indices=True. The gradient goes to each window's maximum.
EMBER_API Tensor adaptive_max_pool1d(const Tensor& input, IntArrayRef output_size);
EMBER_API Tensor adaptive_max_pool1d(const Tensor& input, const AdaptiveMaxPool1dFuncOptions& options);
EMBER_API std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input, IntArrayRef output_size);
EMBER_API std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input,
                                                                      const AdaptiveMaxPool1dFuncOptions& options);
EMBER_API Tensor adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size);
EMBER_API Tensor adaptive_max_pool2d(const Tensor& input, const AdaptiveMaxPool2dFuncOptions& options);
EMBER_API std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input, IntArrayRef output_size);
EMBER_API std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input,
                                                                      const AdaptiveMaxPool2dFuncOptions& options);
EMBER_API Tensor adaptive_max_pool3d(const Tensor& input, IntArrayRef output_size);
EMBER_API Tensor adaptive_max_pool3d(const Tensor& input, const AdaptiveMaxPool3dFuncOptions& options);
EMBER_API std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& input, IntArrayRef output_size);
EMBER_API std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& input,
                                                                      const AdaptiveMaxPool3dFuncOptions& options);

// ---- activations -----------------------------------------------------------------------
// inplace: modifies input (which must not be a leaf requiring grad) and returns it
EMBER_API Tensor relu(const Tensor& input, bool inplace = false);
EMBER_API Tensor relu6(const Tensor& input, bool inplace = false);
EMBER_API Tensor hardtanh(const Tensor& input, double min_val = -1.0, double max_val = 1.0, bool inplace = false);
EMBER_API Tensor hardtanh(const Tensor& input, const HardtanhFuncOptions& options);
EMBER_API Tensor leaky_relu(const Tensor& input, double negative_slope = 0.01, bool inplace = false);
EMBER_API Tensor leaky_relu(const Tensor& input, const LeakyReLUFuncOptions& options);
EMBER_API Tensor elu(const Tensor& input, double alpha = 1.0, bool inplace = false);
EMBER_API Tensor elu(const Tensor& input, const ELUFuncOptions& options);
// approximate: "none" (exact, with erf) or "tanh"
EMBER_API Tensor gelu(const Tensor& input, std::string_view approximate = "none");
EMBER_API Tensor gelu(const Tensor& input, const GELUFuncOptions& options);
EMBER_API Tensor tanh(const Tensor& input);
EMBER_API Tensor sigmoid(const Tensor& input);
EMBER_API Tensor silu(const Tensor& input, bool inplace = false);
// log(1 + exp(beta x)) / beta, linear above threshold
EMBER_API Tensor softplus(const Tensor& input, double beta = 1.0, double threshold = 20.0);
EMBER_API Tensor softplus(const Tensor& input, const SoftplusFuncOptions& options);
EMBER_API Tensor logsigmoid(const Tensor& input);
EMBER_API Tensor softmax(const Tensor& input, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
EMBER_API Tensor softmax(const Tensor& input, const SoftmaxFuncOptions& options);
EMBER_API Tensor log_softmax(const Tensor& input, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
EMBER_API Tensor log_softmax(const Tensor& input, const LogSoftmaxFuncOptions& options);

// ---- dropout ---------------------------------------------------------------------------
// Zeroes each element with probability p and scales the rest by 1 / (1 - p) when training
// (input itself when not training or p == 0). Uses the default generator.
EMBER_API Tensor dropout(const Tensor& input, double p = 0.5, bool training = true, bool inplace = false);
EMBER_API Tensor dropout(const Tensor& input, const DropoutFuncOptions& options);
// Channel-wise dropout: whole channels (dim 1) zeroed with probability p, the others
// scaled by 1/(1-p); the input needs at least 2 dims ((N, C, H, W) or (N, C, L)).
EMBER_API Tensor dropout2d(const Tensor& input, double p = 0.5, bool training = true, bool inplace = false);

// ---- embedding -------------------------------------------------------------------------
// weight's rows at the (integer) indices of input: output shape input.shape + (D,). The row
// padding_idx gets no gradient.
EMBER_API Tensor embedding(const Tensor& input, const Tensor& weight,
                           std::optional<int64_t> padding_idx = std::nullopt);
EMBER_API Tensor embedding(const Tensor& input, const Tensor& weight, const EmbeddingFuncOptions& options);
EMBER_API Tensor one_hot(const Tensor& tensor, int64_t num_classes = -1);

// ---- normalization ---------------------------------------------------------------------
// input (N, C, *). training: normalises with the batch statistics and, when running_mean /
// running_var are defined, updates them in place (momentum; running_var gets the unbiased
// batch variance); not training: normalises with running_mean / running_var.
EMBER_API Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                            const Tensor& weight = {}, const Tensor& bias = {}, bool training = false,
                            double momentum = 0.1, double eps = 1e-5);
EMBER_API Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                            const BatchNormFuncOptions& options);
// normalises over the trailing dims normalized_shape (weight/bias of that shape)
EMBER_API Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight = {},
                            const Tensor& bias = {}, double eps = 1e-5);
EMBER_API Tensor layer_norm(const Tensor& input, const LayerNormFuncOptions& options);
// input (N, C, *), C divisible by num_groups; weight/bias (C,)
EMBER_API Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = {},
                            const Tensor& bias = {}, double eps = 1e-5);
EMBER_API Tensor group_norm(const Tensor& input, const GroupNormFuncOptions& options);
// input / max(||input||_p over dim, eps)
EMBER_API Tensor normalize(const Tensor& input, double p = 2.0, int64_t dim = 1, double eps = 1e-12);
EMBER_API Tensor normalize(const Tensor& input, const NormalizeFuncOptions& options);

// ---- losses ----------------------------------------------------------------------------
EMBER_API Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& options = {});
EMBER_API Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& options = {});
EMBER_API Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                                const SmoothL1LossFuncOptions& options = {});
EMBER_API Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, ReductionType reduction, double beta);
EMBER_API Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& options = {});
// input: log-probabilities (N, C), (C,) or (N, C, d1, ...); target: class indices (N),
// () or (N, d1, ...)
EMBER_API Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& options = {});
// input: logits (N, C), (C,) or (N, C, d1, ...); target: class indices (N), () or
// (N, d1, ...), or class probabilities of the input's shape
EMBER_API Tensor cross_entropy(const Tensor& input, const Tensor& target,
                               const CrossEntropyFuncOptions& options = {});
// input: probabilities in [0, 1]; target: the same shape
EMBER_API Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                                      const BinaryCrossEntropyFuncOptions& options = {});
EMBER_API Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                                  const BinaryCrossEntropyWithLogitsFuncOptions& options = {});

// ---- attention -------------------------------------------------------------------------
// softmax(q @ k^T * scale + mask) @ v over (..., L, E) queries, (..., S, E) keys and
// (..., S, Ev) values. attn_mask: bool (true = take part in attention) or a float tensor
// added to the scores, broadcast to (..., L, S); is_causal: a lower-triangular mask (then
// attn_mask must be undefined); scale defaults to 1 / sqrt(E); dropout_p applies dropout to
// the attention weights.
EMBER_API Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                              const Tensor& attn_mask = {}, double dropout_p = 0.0,
                                              bool is_causal = false, std::optional<double> scale = std::nullopt);
EMBER_API Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                              const ScaledDotProductAttentionFuncOptions& options);

}  // namespace functional
}  // namespace nn
}  // namespace ember
