// Options of the activation modules and MultiheadAttention (libtorch's torch::nn::*Options).
//
//   ember::nn::GELU gelu(ember::nn::GELUOptions().approximate("tanh"));
//   ember::nn::MultiheadAttention mha(ember::nn::MultiheadAttentionOptions(8, 2).dropout(0.1));
#pragma once

#include <cstdint>
#include <string>

#include "common.h"

namespace ember {
namespace nn {

struct ReLUOptions {
    ReLUOptions(bool inplace = false) : inplace_(inplace) {}  // NOLINT
    EMBER_ARG(bool, inplace);
};

struct GELUOptions {
    // "none" (exact, with erf) or "tanh"
    EMBER_ARG(std::string, approximate) = "none";
};

struct LeakyReLUOptions {
    EMBER_ARG(double, negative_slope) = 0.01;
    EMBER_ARG(bool, inplace) = false;
};

struct SiLUOptions {
    SiLUOptions(bool inplace = false) : inplace_(inplace) {}  // NOLINT
    EMBER_ARG(bool, inplace);
};

struct SoftmaxOptions {
    SoftmaxOptions(int64_t dim) : dim_(dim) {}  // NOLINT
    EMBER_ARG(int64_t, dim);
};
using LogSoftmaxOptions = SoftmaxOptions;

struct MultiheadAttentionOptions {
    MultiheadAttentionOptions(int64_t embed_dim, int64_t num_heads)
        : embed_dim_(embed_dim), num_heads_(num_heads), kdim_(embed_dim), vdim_(embed_dim) {}
    EMBER_ARG(int64_t, embed_dim);
    // embed_dim must be divisible by num_heads
    EMBER_ARG(int64_t, num_heads);
    // dropout on the attention weights (training only)
    EMBER_ARG(double, dropout) = 0.0;
    // in_proj_bias and out_proj.bias
    EMBER_ARG(bool, bias) = true;
    // learnt bias_k / bias_v appended to the keys and values
    EMBER_ARG(bool, add_bias_kv) = false;
    // a zero key and value appended
    EMBER_ARG(bool, add_zero_attn) = false;
    // the key / value feature sizes (default embed_dim; others use q/k/v_proj_weight)
    EMBER_ARG(int64_t, kdim);
    EMBER_ARG(int64_t, vdim);
    // inputs as (N, L, E) rather than (L, N, E)
    EMBER_ARG(bool, batch_first) = false;
};

}  // namespace nn
}  // namespace ember
