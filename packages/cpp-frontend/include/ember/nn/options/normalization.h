// Options of LayerNorm (libtorch's torch::nn::LayerNormOptions).
//
//   ember::nn::LayerNorm ln(ember::nn::LayerNormOptions({8}).eps(1e-6).elementwise_affine(false));
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "common.h"

namespace ember {
namespace nn {

struct LayerNormOptions {
    LayerNormOptions(std::vector<int64_t> normalized_shape)  // NOLINT
        : normalized_shape_(std::move(normalized_shape)) {}
    // the trailing dims normalised over
    EMBER_ARG(std::vector<int64_t>, normalized_shape);
    EMBER_ARG(double, eps) = 1e-5;
    // learn weight (ones) and bias (zeros) of normalized_shape
    EMBER_ARG(bool, elementwise_affine) = true;
    // with elementwise_affine: whether the bias is learnt too (Python's bias=True)
    EMBER_ARG(bool, bias) = true;
};

}  // namespace nn
}  // namespace ember
