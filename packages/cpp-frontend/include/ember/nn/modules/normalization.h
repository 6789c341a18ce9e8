// LayerNorm (libtorch's torch::nn::LayerNorm; Python's nn.LayerNorm).
//
//   ember::nn::LayerNorm ln(ember::nn::LayerNormOptions({8}));
//   ember::Tensor y = ln(x);   // normalised over the last dim (size 8)
#pragma once

#include "../../export.h"
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../module.h"
#include "../options/normalization.h"
#include "../pimpl.h"

namespace ember {
namespace nn {

class EMBER_API LayerNormImpl : public Module {
public:
    explicit LayerNormImpl(std::vector<int64_t> normalized_shape)
        : LayerNormImpl(LayerNormOptions(std::move(normalized_shape))) {}
    explicit LayerNormImpl(const LayerNormOptions& options);

    // weight to ones, bias to zeros
    void reset_parameters();
    Tensor forward(const Tensor& input);
    // "(8,), eps=1e-05, elementwise_affine=True, bias=True"
    std::string extra_repr() const override;

    LayerNormOptions options;
    // of normalized_shape; undefined without elementwise_affine
    Tensor weight;
    Tensor bias;
};
EMBER_MODULE(LayerNorm);

}  // namespace nn
}  // namespace ember
