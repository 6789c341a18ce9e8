// MultiheadAttention: Python Ember's multi_head_attention_forward (nn/_mha.py), with its
// checks and messages. Heads are (N, H, L, D) views of one in-projection matmul for
// self-attention.
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "ember/factories.h"
#include "ember/nn/functional.h"
#include "ember/nn/init.h"
#include "ember/nn/modules/activation.h"
#include "nn/modules/utils.h"

namespace ember {
namespace nn {

namespace {

// Python's repr of a shape: "ember.Size([2, 3])".
std::string size_repr(IntArrayRef sizes) {
    std::ostringstream os;
    os << "ember.Size(" << sizes << ")";
    return os.str();
}

// One zero column appended to a float mask (a key nothing masks).
Tensor pad_last(const Tensor& mask) {
    std::vector<int64_t> shape = mask.sizes().vec();
    shape.back() = 1;
    return cat({mask, zeros(shape, mask.scalar_type())}, -1);
}

// (L, N, parts * E) (or (N, L, parts * E)) -> `parts` views of (N, H, L, D).
std::vector<Tensor> heads(const Tensor& x, int64_t parts, bool batch_first, int64_t num_heads) {
    const int64_t a = x.size(0), b = x.size(1), e = x.size(2);
    const Tensor v = x.view({a, b, parts, num_heads, e / (parts * num_heads)});
    return (batch_first ? v.permute({2, 0, 3, 1, 4}) : v.permute({2, 1, 3, 0, 4})).unbind(0);
}

// Whether the input is batched (PyTorch's _mha_shape_check).
bool mha_shape_check(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& key_padding_mask,
                     const Tensor& attn_mask, int64_t num_heads) {
    const int64_t qd = query.dim();
    EMBER_CHECK(qd == 2 || qd == 3, "query should be unbatched 2D or batched 3D tensor but received ", qd,
                "-D query tensor");
    const char* which = qd == 3 ? "batched (3-D)" : "unbatched (2-D)";
    EMBER_CHECK(key.dim() == qd && value.dim() == qd, "For ", which, " `query`, expected `key` and `value` to be ", qd,
                "-D but found ", key.dim(), "-D and ", value.dim(), "-D tensors respectively");
    if (key_padding_mask.defined()) {
        EMBER_CHECK(key_padding_mask.dim() == qd - 1, "For ", which,
                    " `query`, expected `key_padding_mask` to be `None` or ", qd - 1, "-D but found ",
                    key_padding_mask.dim(), "-D tensor instead");
    }
    if (attn_mask.defined()) {
        EMBER_CHECK(attn_mask.dim() == 2 || attn_mask.dim() == 3, "For ", which,
                    " `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found ", attn_mask.dim(),
                    "-D tensor instead");
        if (qd == 2 && attn_mask.dim() == 3) {
            const std::vector<int64_t> expected = {num_heads, query.size(0), key.size(0)};
            EMBER_CHECK(attn_mask.sizes() == IntArrayRef(expected), "Expected `attn_mask` shape to be ",
                        detail::py_tuple_repr(expected), " but got ", size_repr(attn_mask.sizes()));
        }
    }
    return qd == 3;
}

}  // namespace

MultiheadAttentionImpl::MultiheadAttentionImpl(const MultiheadAttentionOptions& options_) : options(options_) {
    const int64_t E = options.embed_dim(), H = options.num_heads();
    EMBER_CHECK_VALUE(E > 0 && H > 0, "embed_dim and num_heads must be greater than 0, got embed_dim=", E,
                      " and num_heads=", H, " instead");
    head_dim = E / H;
    EMBER_CHECK(head_dim * H == E, "embed_dim must be divisible by num_heads");
    qkv_same_embed_dim = options.kdim() == E && options.vdim() == E;
    if (!qkv_same_embed_dim) {
        q_proj_weight = register_parameter("q_proj_weight", empty({E, E}));
        k_proj_weight = register_parameter("k_proj_weight", empty({E, options.kdim()}));
        v_proj_weight = register_parameter("v_proj_weight", empty({E, options.vdim()}));
        register_parameter("in_proj_weight", Tensor());
    } else {
        in_proj_weight = register_parameter("in_proj_weight", empty({3 * E, E}));
        register_parameter("q_proj_weight", Tensor());
        register_parameter("k_proj_weight", Tensor());
        register_parameter("v_proj_weight", Tensor());
    }
    in_proj_bias = register_parameter("in_proj_bias", options.bias() ? empty({3 * E}) : Tensor());
    std::shared_ptr<LinearImpl> proj =
        std::make_shared<NonDynamicallyQuantizableLinearImpl>(LinearOptions(E, E).bias(options.bias()));
    out_proj = register_module("out_proj", proj);
    if (options.add_bias_kv()) {
        bias_k = register_parameter("bias_k", empty({1, 1, E}));
        bias_v = register_parameter("bias_v", empty({1, 1, E}));
    }
    reset_parameters();
}

void MultiheadAttentionImpl::reset_parameters() {
    if (qkv_same_embed_dim) {
        init::xavier_uniform_(in_proj_weight);
    } else {
        init::xavier_uniform_(q_proj_weight);
        init::xavier_uniform_(k_proj_weight);
        init::xavier_uniform_(v_proj_weight);
    }
    if (in_proj_bias.defined()) {
        init::constant_(in_proj_bias, 0.0);
        init::constant_(out_proj->bias, 0.0);
    }
    if (bias_k.defined()) init::xavier_normal_(bias_k);
    if (bias_v.defined()) init::xavier_normal_(bias_v);
}

std::tuple<Tensor, Tensor> MultiheadAttentionImpl::forward(const Tensor& query_in, const Tensor& key_in,
                                                           const Tensor& value_in, const Tensor& key_padding_mask_in,
                                                           bool need_weights, const Tensor& attn_mask_in,
                                                           bool average_attn_weights, bool is_causal) {
    const int64_t E = options.embed_dim(), H = options.num_heads();
    const bool batch_first = options.batch_first();
    const bool same_qk = query_in.is_same(key_in), same_kv = key_in.is_same(value_in);
    // ---- checks, unbatched input, masks (Python's _prepare) ----
    const bool is_batched =
        mha_shape_check(query_in, key_in, value_in, key_padding_mask_in, attn_mask_in, options.num_heads());
    Tensor query = query_in, key = key_in, value = value_in, key_padding_mask = key_padding_mask_in;
    if (!is_batched) {
        const int64_t bdim = batch_first ? 0 : 1;
        query = query.unsqueeze(bdim);
        key = key.unsqueeze(bdim);
        value = value.unsqueeze(bdim);
        if (key_padding_mask.defined()) key_padding_mask = key_padding_mask.unsqueeze(0);
    }
    key_padding_mask = detail::canonical_mask(key_padding_mask, "key_padding_mask", query.scalar_type());
    EMBER_CHECK(!is_causal || attn_mask_in.defined(),
                "Need attn_mask if specifying the is_causal hint. You may use the Transformer module method "
                "`generate_square_subsequent_mask` to create this mask.");
    Tensor attn_mask;
    if (!(is_causal && !key_padding_mask.defined() && !need_weights)) {
        attn_mask = detail::canonical_mask(attn_mask_in, "attn_mask", query.scalar_type());
        if (key_padding_mask.defined()) is_causal = false;
    }
    EMBER_CHECK(query.size(-1) == E, "was expecting embedding dimension of ", E, ", but got ", query.size(-1));
    if (!qkv_same_embed_dim) {
        EMBER_CHECK(key.sizes().slice(0, 2) == value.sizes().slice(0, 2), "key's sequence and batch dims ",
                    size_repr(key.sizes().slice(0, 2)), " do not match value's ", size_repr(value.sizes().slice(0, 2)));
    } else {
        EMBER_CHECK(key.sizes() == value.sizes(), "key shape ", size_repr(key.sizes()), " does not match value shape ",
                    size_repr(value.sizes()));
    }
    if (same_kv) value = key;
    if (same_kv && same_qk) key = value = query;

    // ---- the batched computation (Python's _attention) ----
    const int64_t bsz = query.size(batch_first ? 0 : 1), tgt_len = query.size(batch_first ? 1 : 0);
    int64_t src_len = key.size(batch_first ? 1 : 0);
    Tensor q, k, v;
    if (qkv_same_embed_dim) {
        if (key.is_same(value) && query.is_same(key)) {
            auto qkv = heads(functional::linear(query, in_proj_weight, in_proj_bias), 3, batch_first, H);
            q = qkv[0], k = qkv[1], v = qkv[2];
        } else if (key.is_same(value)) {
            const auto w = in_proj_weight.split_with_sizes({E, 2 * E});
            std::vector<Tensor> b = {Tensor(), Tensor()};
            if (in_proj_bias.defined()) b = in_proj_bias.split_with_sizes({E, 2 * E});
            q = heads(functional::linear(query, w[0], b[0]), 1, batch_first, H)[0];
            auto kv = heads(functional::linear(key, w[1], b[1]), 2, batch_first, H);
            k = kv[0], v = kv[1];
        } else {
            const auto w = in_proj_weight.chunk(3);
            std::vector<Tensor> b(3);
            if (in_proj_bias.defined()) b = in_proj_bias.chunk(3);
            q = heads(functional::linear(query, w[0], b[0]), 1, batch_first, H)[0];
            k = heads(functional::linear(key, w[1], b[1]), 1, batch_first, H)[0];
            v = heads(functional::linear(value, w[2], b[2]), 1, batch_first, H)[0];
        }
    } else {
        std::vector<Tensor> b(3);
        if (in_proj_bias.defined()) b = in_proj_bias.chunk(3);
        q = heads(functional::linear(query, q_proj_weight, b[0]), 1, batch_first, H)[0];
        k = heads(functional::linear(key, k_proj_weight, b[1]), 1, batch_first, H)[0];
        v = heads(functional::linear(value, v_proj_weight, b[2]), 1, batch_first, H)[0];
    }
    if (attn_mask.defined()) {  // as (1 or N, 1 or H, L, S)
        if (attn_mask.dim() == 2) {
            EMBER_CHECK(attn_mask.sizes() == IntArrayRef({tgt_len, src_len}), "The shape of the 2D attn_mask is ",
                        size_repr(attn_mask.sizes()), ", but should be ",
                        detail::py_tuple_repr({tgt_len, src_len}), ".");
            attn_mask = attn_mask.view({1, 1, tgt_len, src_len});
        } else {
            EMBER_CHECK(attn_mask.sizes() == IntArrayRef({bsz * H, tgt_len, src_len}),
                        "The shape of the 3D attn_mask is ", size_repr(attn_mask.sizes()), ", but should be ",
                        detail::py_tuple_repr({bsz * H, tgt_len, src_len}), ".");
            attn_mask = attn_mask.view({bsz, H, tgt_len, src_len});
        }
    }
    auto append_key = [&](const Tensor& extra_k, const Tensor& extra_v) {
        k = cat({k, extra_k}, 2);
        v = cat({v, extra_v}, 2);
        if (attn_mask.defined()) attn_mask = pad_last(attn_mask);
        if (key_padding_mask.defined()) key_padding_mask = pad_last(key_padding_mask);
    };
    if (bias_k.defined() && bias_v.defined()) {
        append_key(bias_k.view({1, H, 1, head_dim}).expand({bsz, -1, -1, -1}),
                   bias_v.view({1, H, 1, head_dim}).expand({bsz, -1, -1, -1}));
    }
    if (options.add_zero_attn()) {
        const Tensor z = zeros({bsz, H, 1, head_dim}, k.scalar_type());
        append_key(z, z);
    }
    src_len = k.size(2);
    if (key_padding_mask.defined()) {
        EMBER_CHECK(key_padding_mask.size(0) == bsz, "Expected key_padded_mask.shape[0] to be ", bsz, ", but got ",
                    key_padding_mask.size(0));
        EMBER_CHECK(key_padding_mask.size(1) == src_len, "Expected key_padded_mask.shape[1] to be ", src_len,
                    ", but got ", key_padding_mask.size(1));
        const Tensor kpm = key_padding_mask.view({bsz, 1, 1, src_len});
        attn_mask = attn_mask.defined() ? attn_mask + kpm : kpm;
    }
    const double dropout_p = is_training() ? options.dropout() : 0.0;
    Tensor out, weights;
    if (need_weights) {
        Tensor scores = (q * std::sqrt(1.0 / static_cast<double>(head_dim))).matmul(k.transpose(-2, -1));
        if (attn_mask.defined()) scores = scores + attn_mask;
        weights = scores.softmax(-1);
        if (dropout_p > 0.0) weights = functional::dropout(weights, dropout_p, true);
        out = weights.matmul(v);
        if (average_attn_weights) weights = weights.mean({1});
    } else {
        out = functional::scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal);
    }
    out = batch_first ? out.permute({0, 2, 1, 3}) : out.permute({2, 0, 1, 3});
    out = functional::linear(out.reshape({out.size(0), out.size(1), E}), out_proj->weight, out_proj->bias);
    if (!is_batched) {
        out = out.squeeze(batch_first ? 0 : 1);
        if (weights.defined()) weights = weights.squeeze(0);
    }
    return {out, weights};
}

}  // namespace nn
}  // namespace ember
