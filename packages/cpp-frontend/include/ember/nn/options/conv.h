// Options of Conv1d and Conv2d (libtorch's torch::nn::ConvOptions<D>).
//
//   ember::nn::Conv2d conv(ember::nn::Conv2dOptions(1, 16, 3).stride(1).padding(1).bias(false));
//   ember::nn::Conv2d conv2(ember::nn::Conv2dOptions(16, 32, {3, 5}).padding({1, 2}));
//
// Padding is zeros only (Python's padding_mode="zeros"), given as numbers (no "same"/"valid").
#pragma once

#include <cstddef>
#include <cstdint>

#include "common.h"

namespace ember {
namespace nn {

template <size_t D>
struct ConvOptions {
    ConvOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
        : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
    EMBER_ARG(int64_t, in_channels);
    EMBER_ARG(int64_t, out_channels);
    EMBER_ARG(ExpandingArray<D>, kernel_size);
    EMBER_ARG(ExpandingArray<D>, stride) = 1;
    EMBER_ARG(ExpandingArray<D>, padding) = 0;
    EMBER_ARG(ExpandingArray<D>, dilation) = 1;
    // in_channels and out_channels must both be divisible by groups
    EMBER_ARG(int64_t, groups) = 1;
    EMBER_ARG(bool, bias) = true;
};

using Conv1dOptions = ConvOptions<1>;
using Conv2dOptions = ConvOptions<2>;

}  // namespace nn
}  // namespace ember
