// TransformerEncoderLayer (Python Ember's nn/modules/transformer.py).
#include "ember/nn/modules/transformer.h"

#include "ember/nn/functional.h"
#include "nn/modules/utils.h"

namespace ember {
namespace nn {

TransformerActivation::TransformerActivation(std::string_view name) : name_(name) {
    if (name == "relu") {
        fn_ = [](const Tensor& x) { return functional::relu(x); };
    } else if (name == "gelu") {
        fn_ = [](const Tensor& x) { return functional::gelu(x); };
    } else {
        EMBER_ERROR("activation should be relu/gelu, not ", name);
    }
}

TransformerActivation::TransformerActivation(std::function<Tensor(const Tensor&)> fn) : fn_(std::move(fn)) {
    EMBER_CHECK(static_cast<bool>(fn_), "the activation of a Transformer layer must be a function");
}

Tensor TransformerActivation::operator()(const Tensor& x) const { return fn_(x); }

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(const TransformerEncoderLayerOptions& options_)
    : options(options_) {
    const int64_t d = options.d_model();
    const bool bias = options.bias();
    self_attn = register_module("self_attn", MultiheadAttention(MultiheadAttentionOptions(d, options.nhead())
                                                                    .dropout(options.dropout())
                                                                    .bias(bias)
                                                                    .batch_first(options.batch_first())));
    linear1 = register_module("linear1", Linear(LinearOptions(d, options.dim_feedforward()).bias(bias)));
    dropout = register_module("dropout", Dropout(options.dropout()));
    linear2 = register_module("linear2", Linear(LinearOptions(options.dim_feedforward(), d).bias(bias)));
    const LayerNormOptions norm = LayerNormOptions({d}).eps(options.layer_norm_eps()).bias(bias);
    norm1 = register_module("norm1", LayerNorm(norm));
    norm2 = register_module("norm2", LayerNorm(norm));
    dropout1 = register_module("dropout1", Dropout(options.dropout()));
    dropout2 = register_module("dropout2", Dropout(options.dropout()));
}

Tensor TransformerEncoderLayerImpl::forward(const Tensor& src, const Tensor& src_mask,
                                            const Tensor& src_key_padding_mask, bool is_causal) {
    const Tensor key_padding_mask =
        detail::canonical_mask(src_key_padding_mask, "src_key_padding_mask", src.scalar_type());
    const Tensor mask = detail::canonical_mask(src_mask, "src_mask", src.scalar_type());
    auto sa_block = [&](const Tensor& x) {
        Tensor y = std::get<0>(self_attn(x, x, x, key_padding_mask, /*need_weights=*/false, mask, true, is_causal));
        return dropout1(y);
    };
    auto ff_block = [&](const Tensor& x) {
        return dropout2(linear2(dropout(options.activation()(linear1(x)))));
    };
    Tensor x = src;
    if (options.norm_first()) {
        x = x + sa_block(norm1(x));
        x = x + ff_block(norm2(x));
    } else {
        x = norm1(x + sa_block(x));
        x = norm2(x + ff_block(x));
    }
    return x;
}

}  // namespace nn
}  // namespace ember
