// Options of MaxPool2d, AvgPool2d, AdaptiveAvgPool2d and AdaptiveMaxPool1d/2d/3d (libtorch's
// torch::nn::*Options; the adaptive max pools' are also their functional options).
//
//   ember::nn::MaxPool2d pool(ember::nn::MaxPool2dOptions(3).stride(2).padding(1));
//   ember::nn::AdaptiveAvgPool2d gap(ember::nn::AdaptiveAvgPool2dOptions({7, std::nullopt}));
//   ember::nn::AdaptiveMaxPool2d amp(ember::nn::AdaptiveMaxPool2dOptions({3, std::nullopt}));
//   F::adaptive_max_pool1d(x, F::AdaptiveMaxPool1dFuncOptions(4));
//
// stride defaults to kernel_size, as in Python.
#pragma once

#include <cstdint>
#include <optional>

#include "common.h"

namespace ember {
namespace nn {

struct MaxPool2dOptions {
    MaxPool2dOptions(ExpandingArray<2> kernel_size)  // NOLINT
        : kernel_size_(kernel_size), stride_(kernel_size) {}
    EMBER_ARG(ExpandingArray<2>, kernel_size);
    EMBER_ARG(ExpandingArray<2>, stride);
    EMBER_ARG(ExpandingArray<2>, padding) = 0;
    EMBER_ARG(ExpandingArray<2>, dilation) = 1;
    EMBER_ARG(bool, ceil_mode) = false;
};

struct AvgPool2dOptions {
    AvgPool2dOptions(ExpandingArray<2> kernel_size)  // NOLINT
        : kernel_size_(kernel_size), stride_(kernel_size) {}
    EMBER_ARG(ExpandingArray<2>, kernel_size);
    EMBER_ARG(ExpandingArray<2>, stride);
    EMBER_ARG(ExpandingArray<2>, padding) = 0;
    EMBER_ARG(bool, ceil_mode) = false;
    EMBER_ARG(bool, count_include_pad) = true;
    EMBER_ARG(std::optional<int64_t>, divisor_override) = std::nullopt;
};

struct AdaptiveAvgPool2dOptions {
    AdaptiveAvgPool2dOptions(ExpandingArrayWithOptional<2> output_size)  // NOLINT
        : output_size_(output_size) {}
    // the output (H, W); std::nullopt keeps that input size
    EMBER_ARG(ExpandingArrayWithOptional<2>, output_size);
};

// AdaptiveMaxPool1d/2d/3d: the output size (libtorch's AdaptiveMaxPoolOptions). 2-D and 3-D
// take std::nullopt for a size kept from the input (Python's None).
template <typename output_size_t>
struct AdaptiveMaxPoolOptions {
    AdaptiveMaxPoolOptions(output_size_t output_size) : output_size_(output_size) {}  // NOLINT
    EMBER_ARG(output_size_t, output_size);
};
using AdaptiveMaxPool1dOptions = AdaptiveMaxPoolOptions<ExpandingArray<1>>;
using AdaptiveMaxPool2dOptions = AdaptiveMaxPoolOptions<ExpandingArrayWithOptional<2>>;
using AdaptiveMaxPool3dOptions = AdaptiveMaxPoolOptions<ExpandingArrayWithOptional<3>>;

namespace functional {
using AdaptiveMaxPool1dFuncOptions = AdaptiveMaxPool1dOptions;
using AdaptiveMaxPool2dFuncOptions = AdaptiveMaxPool2dOptions;
using AdaptiveMaxPool3dFuncOptions = AdaptiveMaxPool3dOptions;
}  // namespace functional

}  // namespace nn
}  // namespace ember
