// MaxPool2d, AvgPool2d, AdaptiveAvgPool2d and AdaptiveMaxPool1d/2d/3d (libtorch's
// torch::nn::*; Python's nn.*).
//
//   ember::nn::MaxPool2d pool(2);                     // kernel 2x2, stride 2
//   ember::nn::AdaptiveAvgPool2d gap(1);              // (N, C, H, W) -> (N, C, 1, 1)
//   ember::nn::AdaptiveMaxPool2d amp(ember::nn::AdaptiveMaxPool2dOptions({3, std::nullopt}));
//   auto [values, indices] = amp->forward_with_indices(x);
//
// Printing follows Python, where an int argument prints as an int ("kernel_size=2"): an
// ExpandingArray whose values are all equal prints as one number.
#pragma once

#include "../../export.h"
#include <string>
#include <tuple>

#include "../module.h"
#include "../options/pooling.h"
#include "../pimpl.h"

namespace ember {
namespace nn {

class EMBER_API MaxPool2dImpl : public Module {
public:
    explicit MaxPool2dImpl(ExpandingArray<2> kernel_size) : MaxPool2dImpl(MaxPool2dOptions(kernel_size)) {}
    explicit MaxPool2dImpl(const MaxPool2dOptions& options);
    Tensor forward(const Tensor& input);
    // (output, indices), indices being flat positions in each H*W plane
    std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
    // "kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False"
    std::string extra_repr() const override;

    MaxPool2dOptions options;
};
EMBER_MODULE(MaxPool2d);

class EMBER_API AvgPool2dImpl : public Module {
public:
    explicit AvgPool2dImpl(ExpandingArray<2> kernel_size) : AvgPool2dImpl(AvgPool2dOptions(kernel_size)) {}
    explicit AvgPool2dImpl(const AvgPool2dOptions& options);
    Tensor forward(const Tensor& input);
    // "kernel_size=2, stride=2, padding=0"
    std::string extra_repr() const override;

    AvgPool2dOptions options;
};
EMBER_MODULE(AvgPool2d);

class EMBER_API AdaptiveAvgPool2dImpl : public Module {
public:
    explicit AdaptiveAvgPool2dImpl(ExpandingArrayWithOptional<2> output_size)
        : AdaptiveAvgPool2dImpl(AdaptiveAvgPool2dOptions(output_size)) {}
    explicit AdaptiveAvgPool2dImpl(const AdaptiveAvgPool2dOptions& options);
    Tensor forward(const Tensor& input);
    // "output_size=1", "output_size=(2, None)"
    std::string extra_repr() const override;

    AdaptiveAvgPool2dOptions options;
};
EMBER_MODULE(AdaptiveAvgPool2d);

// AdaptiveMaxPool1d (D = 1), AdaptiveMaxPool2d (D = 2), AdaptiveMaxPool3d (D = 3): the max
// over adaptive windows of the last D dims of a (N, C, *) or (C, *) input.
template <size_t D, typename output_size_t>
class EMBER_API AdaptiveMaxPoolImpl : public Module {
public:
    explicit AdaptiveMaxPoolImpl(output_size_t output_size)
        : AdaptiveMaxPoolImpl(AdaptiveMaxPoolOptions<output_size_t>(output_size)) {}
    explicit AdaptiveMaxPoolImpl(const AdaptiveMaxPoolOptions<output_size_t>& options);
    Tensor forward(const Tensor& input);
    // (output, indices): each maximum's flat position in its input plane (Python's
    // return_indices=True)
    std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);
    // "output_size=3", "output_size=(2, None)"
    std::string extra_repr() const override;

    AdaptiveMaxPoolOptions<output_size_t> options;
};

extern template class AdaptiveMaxPoolImpl<1, ExpandingArray<1>>;
extern template class AdaptiveMaxPoolImpl<2, ExpandingArrayWithOptional<2>>;
extern template class AdaptiveMaxPoolImpl<3, ExpandingArrayWithOptional<3>>;

using AdaptiveMaxPool1dImpl = AdaptiveMaxPoolImpl<1, ExpandingArray<1>>;
EMBER_MODULE(AdaptiveMaxPool1d);
using AdaptiveMaxPool2dImpl = AdaptiveMaxPoolImpl<2, ExpandingArrayWithOptional<2>>;
EMBER_MODULE(AdaptiveMaxPool2d);
using AdaptiveMaxPool3dImpl = AdaptiveMaxPoolImpl<3, ExpandingArrayWithOptional<3>>;
EMBER_MODULE(AdaptiveMaxPool3d);

}  // namespace nn
}  // namespace ember
