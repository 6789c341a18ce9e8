// Options of Conv1d/2d/3d and ConvTranspose1d/2d/3d (libtorch's torch::nn::ConvOptions<D> and
// ConvTransposeOptions<D>).
//
//   ember::nn::Conv2d conv(ember::nn::Conv2dOptions(1, 16, 3).stride(1).padding(1).bias(false));
//   ember::nn::Conv2d conv2(ember::nn::Conv2dOptions(16, 32, {3, 5}).padding({1, 2}));
//   ember::nn::Conv3d conv3(ember::nn::Conv3dOptions(4, 8, 4).padding(ember::kSame));
//   ember::nn::Conv2d refl(ember::nn::Conv2dOptions(3, 8, 3).padding(1).padding_mode(ember::kReflect));
//   ember::nn::ConvTranspose2d up(ember::nn::ConvTranspose2dOptions(16, 8, 4).stride(2).padding(1));
//
// A convolution's padding is given as numbers or as ember::kSame / ember::kValid (Python's
// padding="same" / "valid"; "same" needs stride 1, and pads an even kernel's extra element on
// the right, as PyTorch); padding_mode says what the padding holds: ember::kZeros (the
// default), kReflect, kReplicate or kCircular (Python's padding_mode="zeros" | "reflect" |
// "replicate" | "circular"; the modes other than zeros pad with F::pad before a convolution
// without padding, as PyTorch). A transposed convolution's padding is numbers only, and its
// padding_mode must be zeros (PyTorch's error otherwise).
#pragma once

#include <cstddef>
#include <cstdint>
#include <variant>

#include "common.h"

namespace ember {
namespace nn {

namespace detail {
// What a convolution's padding holds (libtorch's conv_padding_mode_t).
using conv_padding_mode_t =
    std::variant<enumtype::kZeros, enumtype::kReflect, enumtype::kReplicate, enumtype::kCircular>;
}  // namespace detail

template <size_t D>
struct ConvOptions {
    using padding_t = ::ember::nn::detail::conv_padding_t<D>;
    using padding_mode_t = ::ember::nn::detail::conv_padding_mode_t;
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
    // ember::kZeros, kReflect, kReplicate or kCircular
    EMBER_ARG(padding_mode_t, padding_mode) = kZeros;
};

using Conv1dOptions = ConvOptions<1>;
using Conv2dOptions = ConvOptions<2>;
using Conv3dOptions = ConvOptions<3>;

// ConvTranspose1d/2d/3d: the constructor arguments and their defaults are Python's (note
// that dilation comes after bias, as in Python's signature).
template <size_t D>
struct ConvTransposeOptions {
    using padding_mode_t = ::ember::nn::detail::conv_padding_mode_t;
    ConvTransposeOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
        : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
    EMBER_ARG(int64_t, in_channels);
    EMBER_ARG(int64_t, out_channels);
    EMBER_ARG(ExpandingArray<D>, kernel_size);
    EMBER_ARG(ExpandingArray<D>, stride) = 1;
    // removes `padding` elements at both ends of each output dim
    EMBER_ARG(ExpandingArray<D>, padding) = 0;
    // extra elements at the end of each output dim (smaller than stride or dilation);
    // forward(input, output_size) computes it from the size asked for instead
    EMBER_ARG(ExpandingArray<D>, output_padding) = 0;
    // in_channels and out_channels must both be divisible by groups
    EMBER_ARG(int64_t, groups) = 1;
    EMBER_ARG(bool, bias) = true;
    EMBER_ARG(ExpandingArray<D>, dilation) = 1;
    // only ember::kZeros is supported (PyTorch's error otherwise)
    EMBER_ARG(padding_mode_t, padding_mode) = kZeros;
};

using ConvTranspose1dOptions = ConvTransposeOptions<1>;
using ConvTranspose2dOptions = ConvTransposeOptions<2>;
using ConvTranspose3dOptions = ConvTransposeOptions<3>;

}  // namespace nn
}  // namespace ember
