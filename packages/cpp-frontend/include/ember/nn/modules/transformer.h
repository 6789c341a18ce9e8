// TransformerEncoderLayer (libtorch's torch::nn::TransformerEncoderLayer; Python's
// nn.TransformerEncoderLayer).
//
//   ember::nn::TransformerEncoderLayer layer(ember::nn::TransformerEncoderLayerOptions(8, 2)
//                                                .dim_feedforward(16).batch_first(true));
//   ember::Tensor y = layer(x);   // x (N, L, 8)
//
// Submodules with Python's names and order: self_attn, linear1, dropout, linear2, norm1,
// norm2, dropout1, dropout2.
#pragma once

#include "../../export.h"
#include <cstdint>

#include "../module.h"
#include "../options/transformer.h"
#include "../pimpl.h"
#include "activation.h"
#include "dropout.h"
#include "linear.h"
#include "normalization.h"

namespace ember {
namespace nn {

class EMBER_API TransformerEncoderLayerImpl : public Module {
public:
    TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead)
        : TransformerEncoderLayerImpl(TransformerEncoderLayerOptions(d_model, nhead)) {}
    explicit TransformerEncoderLayerImpl(const TransformerEncoderLayerOptions& options);

    // src (L, N, E) ((N, L, E) with batch_first, or unbatched (L, E)); src_mask (L, L) or
    // (N * nhead, L, L); src_key_padding_mask (N, L) (bool: true = ignore, or float: added).
    Tensor forward(const Tensor& src, const Tensor& src_mask = {}, const Tensor& src_key_padding_mask = {},
                   bool is_causal = false);

    TransformerEncoderLayerOptions options;
    MultiheadAttention self_attn = nullptr;
    Linear linear1 = nullptr;
    Dropout dropout = nullptr;
    Linear linear2 = nullptr;
    LayerNorm norm1 = nullptr;
    LayerNorm norm2 = nullptr;
    Dropout dropout1 = nullptr;
    Dropout dropout2 = nullptr;
};
EMBER_MODULE(TransformerEncoderLayer);

}  // namespace nn
}  // namespace ember
