// Embedding (libtorch's torch::nn::Embedding; Python's nn.Embedding).
//
//   ember::nn::Embedding emb(10, 3);                    // weight (10, 3) from N(0, 1)
//   ember::Tensor y = emb(ember::tensor({1, 2, 4}));    // (3, 3)
//   auto pre = ember::nn::Embedding::from_pretrained(table);   // frozen copy of nothing: uses table
#pragma once

#include "../../export.h"
#include <cstdint>
#include <memory>
#include <string>

#include "../module.h"
#include "../options/embedding.h"
#include "../pimpl.h"

namespace ember {
namespace nn {

class EMBER_API EmbeddingImpl : public Module {
public:
    EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim)
        : EmbeddingImpl(EmbeddingOptions(num_embeddings, embedding_dim)) {}
    explicit EmbeddingImpl(const EmbeddingOptions& options);

    // weight from N(0, 1), the padding_idx row zeroed
    void reset_parameters();
    // rows of weight at the integer indices: input.shape + (embedding_dim,)
    Tensor forward(const Tensor& input);
    // "10, 3, padding_idx=0"
    std::string extra_repr() const override;

    EmbeddingOptions options;
    Tensor weight;
};

// The holder, with Python's classmethod from_pretrained.
class Embedding : public ModuleHolder<EmbeddingImpl> {
public:
    using ModuleHolder<EmbeddingImpl>::ModuleHolder;
    using ModuleHolder<EmbeddingImpl>::get;

    // An Embedding whose weight is the 2-D `embeddings` itself (frozen unless
    // options.freeze(false)).
    EMBER_API static Embedding from_pretrained(const Tensor& embeddings,
                                               const EmbeddingFromPretrainedOptions& options = {});
};

}  // namespace nn
}  // namespace ember
