// Options of BatchNorm1d and BatchNorm2d (libtorch's torch::nn::BatchNormOptions).
//
//   ember::nn::BatchNorm2d bn(ember::nn::BatchNorm2dOptions(16).eps(1e-3).momentum(0.01));
//   ember::nn::BatchNorm1d avg(ember::nn::BatchNorm1dOptions(8).momentum(std::nullopt));
#pragma once

#include <cstdint>
#include <optional>

#include "common.h"

namespace ember {
namespace nn {

struct BatchNormOptions {
    BatchNormOptions(int64_t num_features) : num_features_(num_features) {}  // NOLINT
    EMBER_ARG(int64_t, num_features);
    EMBER_ARG(double, eps) = 1e-5;
    // the weight of the new batch in the running statistics; std::nullopt (Python's None):
    // a cumulative moving average (1 / num_batches_tracked)
    EMBER_ARG(std::optional<double>, momentum) = 0.1;
    // learn weight (ones) and bias (zeros)
    EMBER_ARG(bool, affine) = true;
    // keep running_mean / running_var / num_batches_tracked buffers (used in eval mode)
    EMBER_ARG(bool, track_running_stats) = true;
};

using BatchNorm1dOptions = BatchNormOptions;
using BatchNorm2dOptions = BatchNormOptions;

}  // namespace nn
}  // namespace ember
