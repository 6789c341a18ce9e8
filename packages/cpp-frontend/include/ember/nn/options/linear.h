// Options of Linear, Flatten and Identity (libtorch's torch::nn::LinearOptions, ...).
//
//   ember::nn::Linear fc(ember::nn::LinearOptions(4, 2).bias(false));
#pragma once

#include <cstdint>

#include "common.h"

namespace ember {
namespace nn {

struct LinearOptions {
    LinearOptions(int64_t in_features, int64_t out_features)
        : in_features_(in_features), out_features_(out_features) {}
    EMBER_ARG(int64_t, in_features);
    EMBER_ARG(int64_t, out_features);
    // whether to learn an additive bias
    EMBER_ARG(bool, bias) = true;
};

struct FlattenOptions {
    // the first and last dims flattened into one (negative: from the end)
    EMBER_ARG(int64_t, start_dim) = 1;
    EMBER_ARG(int64_t, end_dim) = -1;
};

}  // namespace nn
}  // namespace ember
