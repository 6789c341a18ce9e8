// Options of Conv1d, Conv2d and Conv3d (libtorch's torch::nn::ConvOptions<D>).
//
//   ember::nn::Conv2d conv(ember::nn::Conv2dOptions(1, 16, 3).stride(1).padding(1).bias(false));
//   ember::nn::Conv2d conv2(ember::nn::Conv2dOptions(16, 32, {3, 5}).padding({1, 2}));
//   ember::nn::Conv3d conv3(ember::nn::Conv3dOptions(4, 8, 4).padding(ember::kSame));
//
// Padding is zeros only (Python's padding_mode="zeros"), given as numbers or as
// ember::kSame / ember::kValid (Python's padding="same" / "valid"; "same" needs stride 1, and
// pads an even kernel's extra element on the right, as PyTorch).
#pragma once

#include <cstddef>
#include <cstdint>

#include "common.h"

namespace ember {
namespace nn {

template <size_t D>
struct ConvOptions {
    using padding_t = ::ember::nn::detail::conv_padding_t<D>;
    ConvOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
        : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
    EMBER_ARG(int64_t, in_channels);
    EMBER_ARG(int64_t, out_channels);
    EMBER_ARG(ExpandingArray<D>, kernel_size);
    EMBER_ARG(ExpandingArray<D>, stride) = 1;
    // numbers, or ember::kSame / ember::kValid
    EMBER_ARG(padding_t, padding) = 0;
    EMBER_ARG(ExpandingArray<D>, dilation) = 1;
    // in_channels and out_channels must both be divisible by groups
    EMBER_ARG(int64_t, groups) = 1;
    EMBER_ARG(bool, bias) = true;
};

using Conv1dOptions = ConvOptions<1>;
using Conv2dOptions = ConvOptions<2>;
using Conv3dOptions = ConvOptions<3>;

}  // namespace nn
}  // namespace ember
