// Activation modules and MultiheadAttention (libtorch's torch::nn::ReLU, ...,
// MultiheadAttention; Python's nn.ReLU, ..., nn.MultiheadAttention).
//
//   ember::nn::Sequential mlp(ember::nn::Linear(4, 8), ember::nn::ReLU(), ember::nn::Linear(8, 1));
//   ember::nn::MultiheadAttention mha(8, 2);
//   auto [out, weights] = mha(q, k, v);   // (L, N, E) inputs; weights averaged over heads
#pragma once

#include "../../export.h"
#include <cstdint>
#include <string>
#include <tuple>

#include "../module.h"
#include "../options/activation.h"
#include "../pimpl.h"
#include "linear.h"

namespace ember {
namespace nn {

// max(0, x)
class EMBER_API ReLUImpl : public Module {
public:
    explicit ReLUImpl(const ReLUOptions& options = {});
    Tensor forward(const Tensor& input);
    // "" or "inplace=True"
    std::string extra_repr() const override;

    ReLUOptions options;
};
EMBER_MODULE(ReLU);

// x * Phi(x) (approximate "tanh": the tanh approximation)
class EMBER_API GELUImpl : public Module {
public:
    explicit GELUImpl(const GELUOptions& options = {});
    Tensor forward(const Tensor& input);
    // "approximate='none'"
    std::string extra_repr() const override;

    GELUOptions options;
};
EMBER_MODULE(GELU);

// max(0, x) + negative_slope * min(0, x)
class EMBER_API LeakyReLUImpl : public Module {
public:
    explicit LeakyReLUImpl(const LeakyReLUOptions& options = {});
    Tensor forward(const Tensor& input);
    // "negative_slope=0.01"
    std::string extra_repr() const override;

    LeakyReLUOptions options;
};
EMBER_MODULE(LeakyReLU);

// x * sigmoid(x)
class EMBER_API SiLUImpl : public Module {
public:
    explicit SiLUImpl(const SiLUOptions& options = {});
    Tensor forward(const Tensor& input);
    std::string extra_repr() const override;

    SiLUOptions options;
};
EMBER_MODULE(SiLU);

class EMBER_API TanhImpl : public Module {
public:
    Tensor forward(const Tensor& input);
};
EMBER_MODULE(Tanh);

class EMBER_API SigmoidImpl : public Module {
public:
    Tensor forward(const Tensor& input);
};
EMBER_MODULE(Sigmoid);

// softmax over dim
class EMBER_API SoftmaxImpl : public Module {
public:
    explicit SoftmaxImpl(int64_t dim) : SoftmaxImpl(SoftmaxOptions(dim)) {}
    explicit SoftmaxImpl(const SoftmaxOptions& options);
    Tensor forward(const Tensor& input);
    // "dim=1"
    std::string extra_repr() const override;

    SoftmaxOptions options;
};
EMBER_MODULE(Softmax);

// log_softmax over dim
class EMBER_API LogSoftmaxImpl : public Module {
public:
    explicit LogSoftmaxImpl(int64_t dim) : LogSoftmaxImpl(LogSoftmaxOptions(dim)) {}
    explicit LogSoftmaxImpl(const LogSoftmaxOptions& options);
    Tensor forward(const Tensor& input);
    // "dim=1"
    std::string extra_repr() const override;

    LogSoftmaxOptions options;
};
EMBER_MODULE(LogSoftmax);

// The Linear that MultiheadAttention uses as out_proj (named as in Python, for printing).
class EMBER_API NonDynamicallyQuantizableLinearImpl : public LinearImpl {
public:
    using LinearImpl::LinearImpl;
};

// Multi-head attention, Concat(head_1, ..., head_h) W^O with
// head_i = softmax(Q W_i^Q (K W_i^K)^T / sqrt(head_dim) + mask) V W_i^V.
//
// Parameters, with Python's names: in_proj_weight (3E, E) (xavier_uniform_) and
// in_proj_bias (3E) (zeros) -- or q_proj_weight / k_proj_weight / v_proj_weight when kdim or
// vdim differ from embed_dim --, bias_k / bias_v (1, 1, E) with add_bias_kv, and the
// submodule out_proj (a Linear, bias zeros).
class EMBER_API MultiheadAttentionImpl : public Module {
public:
    MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads)
        : MultiheadAttentionImpl(MultiheadAttentionOptions(embed_dim, num_heads)) {}
    explicit MultiheadAttentionImpl(const MultiheadAttentionOptions& options);

    // query (L, N, E), key (S, N, kdim), value (S, N, vdim) -- (N, L, E), ... with
    // batch_first, or unbatched (L, E), ... --; key_padding_mask (N, S) (true / -inf: ignore
    // that key); attn_mask (L, S) or (N * num_heads, L, S) (bool: true = not allowed, or
    // float: added). Returns (output like query, weights): the attention weights (N, L, S)
    // averaged over heads ((N, num_heads, L, S) unless average_attn_weights), undefined
    // unless need_weights. is_causal is a hint that attn_mask is the causal mask.
    std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                       const Tensor& key_padding_mask = {}, bool need_weights = true,
                                       const Tensor& attn_mask = {}, bool average_attn_weights = true,
                                       bool is_causal = false);
    void reset_parameters();

    MultiheadAttentionOptions options;
    int64_t head_dim = 0;
    // whether kdim and vdim equal embed_dim (one in_proj_weight)
    bool qkv_same_embed_dim = true;
    Tensor in_proj_weight;
    Tensor in_proj_bias;
    Tensor q_proj_weight;
    Tensor k_proj_weight;
    Tensor v_proj_weight;
    Tensor bias_k;
    Tensor bias_v;
    Linear out_proj = nullptr;
};
EMBER_MODULE(MultiheadAttention);

}  // namespace nn
}  // namespace ember
