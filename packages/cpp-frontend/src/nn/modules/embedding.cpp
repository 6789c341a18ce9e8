// Embedding.
#include "ember/nn/modules/embedding.h"

#include "ember/autograd.h"
#include "ember/factories.h"
#include "ember/nn/functional.h"
#include "ember/nn/init.h"

namespace ember {
namespace nn {

EmbeddingImpl::EmbeddingImpl(const EmbeddingOptions& options_) : options(options_) {
    const int64_t n = options.num_embeddings();
    if (options.padding_idx()) {
        const int64_t p = *options.padding_idx();
        EMBER_CHECK(p < n && p >= -n, "Padding_idx must be within num_embeddings");
        if (p < 0) options.padding_idx(n + p);
    }
    const Tensor& given = options._weight();
    if (!given.defined()) {
        weight = register_parameter("weight", empty({n, options.embedding_dim()}));
        reset_parameters();
    } else {
        EMBER_CHECK(given.sizes() == IntArrayRef({n, options.embedding_dim()}),
                    "Shape of weight does not match num_embeddings and embedding_dim");
        weight = register_parameter("weight", given.detach());
    }
}

void EmbeddingImpl::reset_parameters() {
    init::normal_(weight);
    if (options.padding_idx()) {
        NoGradGuard no_grad;
        weight[*options.padding_idx()].fill_(0);
    }
}

Tensor EmbeddingImpl::forward(const Tensor& input) {
    return functional::embedding(input, weight, options.padding_idx());
}

std::string EmbeddingImpl::extra_repr() const {
    std::string s = std::to_string(options.num_embeddings()) + ", " + std::to_string(options.embedding_dim());
    if (options.padding_idx()) s += ", padding_idx=" + std::to_string(*options.padding_idx());
    return s;
}

Embedding Embedding::from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& options) {
    EMBER_CHECK(embeddings.dim() == 2, "Embeddings parameter is expected to be 2-dimensional");
    Embedding embedding(EmbeddingOptions(embeddings.size(0), embeddings.size(1))
                            ._weight(embeddings)
                            .padding_idx(options.padding_idx()));
    embedding->weight.set_requires_grad(!options.freeze());
    return embedding;
}

}  // namespace nn
}  // namespace ember
