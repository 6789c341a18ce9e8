// linear, convolution and pooling of ember::nn::functional: the core kernels (their nodes
// are ConvolutionBackward0, MaxPool2DWithIndicesBackward0, AdaptiveMaxPool2DBackward0, ...),
// with the options spellings (a convolution's padding: numbers or ember::kSame / kValid).
#include "common.h"

namespace ember {
namespace nn {
namespace functional {

namespace {

using CoreConv = Tensor (*)(const Tensor&, const Tensor&, const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, int64_t);

template <size_t D>
Tensor conv_with_options(CoreConv conv, const Tensor& input, const Tensor& weight, const ConvFuncOptions<D>& o) {
    if (const auto* numbers = std::get_if<ExpandingArray<D>>(&o.padding())) {
        return conv(input, weight, o.bias(), o.stride(), *numbers, o.dilation(), o.groups());
    }
    return ember::detail::conv_string_padding(static_cast<int64_t>(D), input, weight, o.bias(), o.stride(),
                                              o.padding().name(), o.dilation(), o.groups());
}

// The options' output size, std::nullopt taking the input's size along that dim.
template <size_t D>
std::vector<int64_t> adaptive_size(const Tensor& input, const ExpandingArrayWithOptional<D>& size) {
    std::vector<int64_t> out(D);
    for (size_t i = 0; i < D; ++i) {
        const auto& v = size[i];
        out[i] = v ? *v : input.size(static_cast<int64_t>(i) - static_cast<int64_t>(D));
    }
    return out;
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

Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, int64_t groups) {
    return ember::conv3d(input, weight, bias, stride, padding, dilation, groups);
}

Tensor conv3d(const Tensor& input, const Tensor& weight, const Conv3dFuncOptions& options) {
    return conv_with_options(&ember::conv3d, input, weight, options);
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

Tensor adaptive_max_pool1d(const Tensor& input, IntArrayRef output_size) {
    return std::get<0>(ember::adaptive_max_pool1d(input, output_size));
}

Tensor adaptive_max_pool1d(const Tensor& input, const AdaptiveMaxPool1dFuncOptions& options) {
    return std::get<0>(ember::adaptive_max_pool1d(input, options.output_size()));
}

std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input, IntArrayRef output_size) {
    return ember::adaptive_max_pool1d(input, output_size);
}

std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool1dFuncOptions& options) {
    return ember::adaptive_max_pool1d(input, options.output_size());
}

Tensor adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size) {
    return std::get<0>(ember::adaptive_max_pool2d(input, output_size));
}

Tensor adaptive_max_pool2d(const Tensor& input, const AdaptiveMaxPool2dFuncOptions& options) {
    return std::get<0>(ember::adaptive_max_pool2d(input, adaptive_size(input, options.output_size())));
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input, IntArrayRef output_size) {
    return ember::adaptive_max_pool2d(input, output_size);
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool2dFuncOptions& options) {
    return ember::adaptive_max_pool2d(input, adaptive_size(input, options.output_size()));
}

Tensor adaptive_max_pool3d(const Tensor& input, IntArrayRef output_size) {
    return std::get<0>(ember::adaptive_max_pool3d(input, output_size));
}

Tensor adaptive_max_pool3d(const Tensor& input, const AdaptiveMaxPool3dFuncOptions& options) {
    return std::get<0>(ember::adaptive_max_pool3d(input, adaptive_size(input, options.output_size())));
}

std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& input, IntArrayRef output_size) {
    return ember::adaptive_max_pool3d(input, output_size);
}

std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool3dFuncOptions& options) {
    return ember::adaptive_max_pool3d(input, adaptive_size(input, options.output_size()));
}

}  // namespace functional
}  // namespace nn
}  // namespace ember
