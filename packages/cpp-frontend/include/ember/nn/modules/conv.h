// Conv1d, Conv2d and Conv3d (libtorch's torch::nn::Conv1d / Conv2d / Conv3d; Python's
// nn.Conv1d / Conv2d / Conv3d).
//
//   ember::nn::Conv2d conv(1, 16, 3);                                      // kernel 3x3
//   ember::nn::Conv2d conv2(ember::nn::Conv2dOptions(16, 32, 3).padding(1).stride(2));
//   ember::nn::Conv2d same(ember::nn::Conv2dOptions(16, 16, 4).padding(ember::kSame));
//   ember::Tensor y = conv2(x);                // x (N, 16, H, W) or (16, H, W)
#pragma once

#include "../../export.h"
#include <cstddef>
#include <cstdint>
#include <string>

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
// not supported for strided convolutions") at construction, as Python.
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

}  // namespace nn
}  // namespace ember
