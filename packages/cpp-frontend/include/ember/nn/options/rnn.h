// Options of LSTM (libtorch's torch::nn::LSTMOptions).
//
//   ember::nn::LSTM lstm(ember::nn::LSTMOptions(4, 8).num_layers(2).batch_first(true));
#pragma once

#include <cstdint>

#include "common.h"

namespace ember {
namespace nn {

struct LSTMOptions {
    LSTMOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
    EMBER_ARG(int64_t, input_size);
    EMBER_ARG(int64_t, hidden_size);
    EMBER_ARG(int64_t, num_layers) = 1;
    // bias_ih_l* and bias_hh_l*
    EMBER_ARG(bool, bias) = true;
    // input and output as (N, L, H) rather than (L, N, H) (h_n / c_n are never batch first)
    EMBER_ARG(bool, batch_first) = false;
    // dropout on the outputs of every layer but the last (training only)
    EMBER_ARG(double, dropout) = 0.0;
    EMBER_ARG(bool, bidirectional) = false;
    // > 0: an LSTM with projections (weight_hr_l*), h of size proj_size
    EMBER_ARG(int64_t, proj_size) = 0;
};

}  // namespace nn
}  // namespace ember
