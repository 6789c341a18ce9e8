// Options of Embedding (libtorch's torch::nn::EmbeddingOptions and
// EmbeddingFromPretrainedOptions).
//
//   ember::nn::Embedding emb(ember::nn::EmbeddingOptions(10, 3).padding_idx(0));
//   auto frozen = ember::nn::Embedding::from_pretrained(table,
//                     ember::nn::EmbeddingFromPretrainedOptions().freeze(true));
#pragma once

#include <cstdint>
#include <optional>

#include "common.h"

namespace ember {
namespace nn {

struct EmbeddingOptions {
    EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
        : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
    EMBER_ARG(int64_t, num_embeddings);
    EMBER_ARG(int64_t, embedding_dim);
    // the row that stays zero and gets no gradient (negative: counted from the end)
    EMBER_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
    // the initial table (num_embeddings, embedding_dim); undefined: N(0, 1)
    EMBER_ARG(Tensor, _weight);
};

struct EmbeddingFromPretrainedOptions {
    // whether the table stays fixed (requires_grad false)
    EMBER_ARG(bool, freeze) = true;
    EMBER_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};

}  // namespace nn
}  // namespace ember
