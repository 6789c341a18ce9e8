// Options of Dropout (libtorch's torch::nn::DropoutOptions).
//
//   ember::nn::Dropout drop(0.2);
//   ember::nn::Dropout drop2(ember::nn::DropoutOptions().p(0.2).inplace(true));
#pragma once

#include "common.h"

namespace ember {
namespace nn {

struct DropoutOptions {
    DropoutOptions() = default;
    DropoutOptions(double p) : p_(p) {}  // NOLINT
    // the probability of zeroing an element, in [0, 1]
    EMBER_ARG(double, p) = 0.5;
    EMBER_ARG(bool, inplace) = false;
};

// Dropout2d's options are Dropout's (as in libtorch).
using Dropout2dOptions = DropoutOptions;

}  // namespace nn
}  // namespace ember
