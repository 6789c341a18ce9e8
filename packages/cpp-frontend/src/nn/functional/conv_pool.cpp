// linear, convolution and pooling of ember::nn::functional: the core kernels (their nodes
// are ConvolutionBackward0, MaxPool2DWithIndicesBackward0, ...), with the options spellings.
#include "common.h"

namespace ember {
namespace nn {
namespace functional {

namespace {

using CoreConv = Tensor (*)(const Tensor&, const Tensor&, const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, int64_t);

template <size_t D>
Tensor conv_with_options(CoreConv conv, const Tensor& input, const Tensor& weight, const ConvFuncOptions<D>& o) {
    return conv(input, weight, o.bias(), o.stride(), o.padding(), o.dilation(), o.groups());
}

}  // namespace

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
    return ember::linear(input, weight, bias);
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, int64_t groups) {
    return ember::conv1d(input, weight, bias, stride, padding, dilation, groups);
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const Conv1dFuncOptions& options) {
    return conv_with_options(&ember::conv1d, input, weight, options);
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, int64_t groups) {
    return ember::conv2d(input, weight, bias, stride, padding, dilation, groups);
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const Conv2dFuncOptions& options) {
    return conv_with_options(&ember::conv2d, input, weight, options);
}

Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
    return ember::max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode);
}

Tensor max_pool2d(const Tensor& input, const MaxPool2dFuncOptions& options) {
    return ember::max_pool2d(input, options.kernel_size(), options.stride(), options.padding(), options.dilation(),
                             options.ceil_mode());
}

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
    return ember::max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode);
}

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const MaxPool2dFuncOptions& options) {
    return ember::max_pool2d_with_indices(input, options.kernel_size(), options.stride(), options.padding(),
                                          options.dilation(), options.ceil_mode());
}

Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
    return ember::avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
}

Tensor avg_pool2d(const Tensor& input, const AvgPool2dFuncOptions& options) {
    return ember::avg_pool2d(input, options.kernel_size(), options.stride(), options.padding(), options.ceil_mode(),
                             options.count_include_pad(), options.divisor_override());
}

Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size) {
    return ember::adaptive_avg_pool2d(input, output_size);
}

Tensor adaptive_avg_pool2d(const Tensor& input, const AdaptiveAvgPool2dFuncOptions& options) {
    return ember::adaptive_avg_pool2d(input, options.output_size());
}

}  // namespace functional
}  // namespace nn
}  // namespace ember
