// Conv1d, Conv2d, Conv3d and ConvTranspose1d, ConvTranspose2d, ConvTranspose3d (libtorch's
// torch::nn::Conv1d, ..., ConvTranspose3d; Python's nn.Conv1d, ..., nn.ConvTranspose3d).
//
//   ember::nn::Conv2d conv(1, 16, 3);                                      // kernel 3x3
//   ember::nn::Conv2d conv2(ember::nn::Conv2dOptions(16, 32, 3).padding(1).stride(2));
//   ember::nn::Conv2d same(ember::nn::Conv2dOptions(16, 16, 4).padding(ember::kSame));
//   ember::nn::Conv2d refl(ember::nn::Conv2dOptions(16, 16, 3).padding(1).padding_mode(ember::kReflect));
//   ember::Tensor y = conv2(x);                // x (N, 16, H, W) or (16, H, W)
//
//   ember::nn::ConvTranspose2d up(ember::nn::ConvTranspose2dOptions(16, 8, 3).stride(2).padding(1));
//   ember::Tensor z = up(y);                   // (N, 8, 2 * H' - 1, 2 * W' - 1)
//   ember::Tensor z2 = up(y, std::vector<int64_t>{2 * h, 2 * w});   // the output size asked for
#pragma once

#include "../../export.h"
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../module.h"
#include "../options/conv.h"
#include "../pimpl.h"

namespace ember {
namespace nn {

// Conv1d (D = 1: input (N, C_in, L) or (C_in, L)), Conv2d (D = 2: input (N, C_in, H, W)
// or (C_in, H, W)) and Conv3d (D = 3: (N, C_in, D, H, W) or (C_in, D, H, W)): weight
// (out_channels, in_channels / groups, *kernel_size) from kaiming_uniform_(a = sqrt(5)),
// bias (out_channels) from U(-1/sqrt(fan_in), 1/sqrt(fan_in)), PyTorch's checks and repr.
// padding(ember::kSame) with a stride other than 1 raises ValueError("padding='same' is
// not supported for strided convolutions") at construction, as Python. A padding_mode other
// than kZeros pads the input with F::pad in that mode (by the padding, or by what 'same'
// needs) and convolves without padding, as PyTorch's _conv_forward.
template <size_t D>
class EMBER_API ConvNdImpl : public Module {
public:
    ConvNdImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
        : ConvNdImpl(ConvOptions<D>(in_channels, out_channels, kernel_size)) {}
    explicit ConvNdImpl(const ConvOptions<D>& options);

    void reset_parameters();
    Tensor forward(const Tensor& input);
    // "1, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1)"
    std::string extra_repr() const override;

    ConvOptions<D> options;
    Tensor weight;
    // undefined with bias(false)
    Tensor bias;
};

extern template class ConvNdImpl<1>;
extern template class ConvNdImpl<2>;
extern template class ConvNdImpl<3>;

using Conv1dImpl = ConvNdImpl<1>;
EMBER_MODULE(Conv1d);
using Conv2dImpl = ConvNdImpl<2>;
EMBER_MODULE(Conv2d);
using Conv3dImpl = ConvNdImpl<3>;
EMBER_MODULE(Conv3d);

// ConvTranspose1d (D = 1: input (N, C_in, L) or (C_in, L)), ConvTranspose2d and
// ConvTranspose3d: F::conv_transpose*d with weight (in_channels, out_channels / groups,
// *kernel_size) from kaiming_uniform_(a = sqrt(5)) and bias (out_channels) from
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = out_channels / groups * prod(kernel_size)
// (PyTorch's init, which takes the fan-in from the weight's dim 1), Python's checks and repr.
// Only padding_mode(ember::kZeros) is supported: another one raises PyTorch's ValueError at
// construction ("Only "zeros" padding mode is supported for ConvTranspose2d"), and at forward
// when set afterwards (libtorch's "Only `zeros` padding mode is supported for
// ConvTranspose2d").
template <size_t D>
class EMBER_API ConvTransposeNdImpl : public Module {
public:
    ConvTransposeNdImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
        : ConvTransposeNdImpl(ConvTransposeOptions<D>(in_channels, out_channels, kernel_size)) {}
    explicit ConvTransposeNdImpl(const ConvTransposeOptions<D>& options);

    void reset_parameters();
    // output_size: the spatial size wanted (D values, or D + 2 / D + 1 with the batch and
    // channel dims), which picks the output_padding (PyTorch's _output_padding: each size
    // must lie within [min, min + stride - 1], else ValueError); std::nullopt uses
    // options.output_padding().
    Tensor forward(const Tensor& input, const std::optional<IntArrayRef>& output_size = std::nullopt);
    // "16, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), output_padding=(1, 1)"
    std::string extra_repr() const override;

    ConvTransposeOptions<D> options;
    Tensor weight;
    // undefined with bias(false)
    Tensor bias;

protected:
    // The output padding that gives output_size (PyTorch's _output_padding).
    std::vector<int64_t> output_padding_for(const Tensor& input, const std::optional<IntArrayRef>& output_size) const;
};

extern template class ConvTransposeNdImpl<1>;
extern template class ConvTransposeNdImpl<2>;
extern template class ConvTransposeNdImpl<3>;

using ConvTranspose1dImpl = ConvTransposeNdImpl<1>;
EMBER_MODULE(ConvTranspose1d);
using ConvTranspose2dImpl = ConvTransposeNdImpl<2>;
EMBER_MODULE(ConvTranspose2d);
using ConvTranspose3dImpl = ConvTransposeNdImpl<3>;
EMBER_MODULE(ConvTranspose3d);

}  // namespace nn
}  // namespace ember
