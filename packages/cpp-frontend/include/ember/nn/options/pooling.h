// Options of MaxPool2d, AvgPool2d and AdaptiveAvgPool2d (libtorch's torch::nn::*Options).
//
//   ember::nn::MaxPool2d pool(ember::nn::MaxPool2dOptions(3).stride(2).padding(1));
//   ember::nn::AdaptiveAvgPool2d gap(ember::nn::AdaptiveAvgPool2dOptions({7, std::nullopt}));
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

}  // namespace nn
}  // namespace ember
