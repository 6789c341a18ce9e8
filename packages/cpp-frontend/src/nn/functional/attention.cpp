// scaled_dot_product_attention of ember::nn::functional, composed of differentiable ops
// (matmul, softmax, masked_fill), with Python Ember's checks and messages.
#include <cmath>
#include <limits>

#include "common.h"
#include "core/tensor_utils.h"

namespace ember {
namespace nn {
namespace functional {

using namespace detail;

namespace {

// PyTorch's C++ type names ("float", "long int", ...), as its attention checks print them
std::string torch_dtype_name(ScalarType t) { return native::cpp_type_name(t); }

void check_attention_inputs(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double dropout_p) {
    EMBER_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2,
                "Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: ", q.dim(),
                " key.dim: ", k.dim(), " and value.dim: ", v.dim(), " instead.");
    EMBER_CHECK(q.scalar_type() == k.scalar_type() && q.scalar_type() == v.scalar_type(),
                "Expected query, key, and value to have the same dtype, but got query.dtype: ",
                torch_dtype_name(q.scalar_type()), " key.dtype: ", torch_dtype_name(k.scalar_type()),
                " and value.dtype: ", torch_dtype_name(v.scalar_type()), " instead.");
    EMBER_CHECK(q.is_floating_point(), "expected scalar type Float but found ", q.scalar_type());
    if (mask.defined()) {
        EMBER_CHECK(mask.scalar_type() == kBool || mask.scalar_type() == q.scalar_type(),
                    "Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: ",
                    torch_dtype_name(mask.scalar_type()), " and  query.dtype: ", torch_dtype_name(q.scalar_type()),
                    " instead.");
    }
    EMBER_CHECK(dropout_p >= 0.0 && dropout_p <= 1.0, "dropout probability has to be between 0 and 1, but got ",
                py_float(dropout_p));
}

// PyTorch's bmm wording for a mismatch of the two matrix products.
[[noreturn]] void batch_error(const Tensor& q, const Tensor& other, int64_t size, int64_t got) {
    std::vector<int64_t> qb = q.sizes().slice(0, q.dim() - 2).vec(), ob = other.sizes().slice(0, other.dim() - 2).vec();
    int64_t batch = 1;
    try {
        for (int64_t s : infer_size(qb, ob)) batch *= s;
    } catch (const Error&) {
        batch = 1;
        for (int64_t s : qb) batch *= s;
    }
    EMBER_ERROR("Expected size for first two dimensions of batch2 tensor to be: [", batch, ", ", size, "] but got: [",
                batch, ", ", got, "].");
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale) {
    check_attention_inputs(query, key, value, attn_mask, dropout_p);
    EMBER_CHECK(!(is_causal && attn_mask.defined()),
                "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True");
    if (key.size(-1) != query.size(-1)) batch_error(query, key, query.size(-1), key.size(-1));
    if (value.size(-2) != key.size(-2)) batch_error(query, value, key.size(-2), value.size(-2));
    const double factor = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
    const int64_t L = query.size(-2), S = key.size(-2);
    const double neg_inf = -std::numeric_limits<double>::infinity();

    Tensor scores = query.matmul(key.transpose(-2, -1)) * factor;
    Tensor keep = attn_mask;  // bool: true takes part
    if (is_causal) keep = ones({L, S}, kBool).tril();
    if (keep.defined() && keep.scalar_type() == kBool) {
        scores = scores.masked_fill(keep.logical_not(), neg_inf);
    } else if (keep.defined()) {
        scores = scores + keep;
    }
    Tensor weights;
    if (keep.defined()) {
        Tensor dead;
        {
            NoGradGuard guard;
            dead = eq(scores, neg_inf).all(-1, /*keepdim=*/true);
        }
        if (dead.any().item<bool>()) {  // fully masked rows: zeros (not NaN) and zero gradients
            weights = scores.masked_fill(dead, 0.0).softmax(-1).masked_fill(dead, 0.0);
        }
    }
    if (!weights.defined()) weights = scores.softmax(-1);
    if (dropout_p > 0.0) weights = dropout(weights, dropout_p, /*training=*/true);
    return weights.matmul(value);
}

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const ScaledDotProductAttentionFuncOptions& options) {
    return scaled_dot_product_attention(query, key, value, options.attn_mask(), options.dropout_p(),
                                        options.is_causal(), options.scale());
}

}  // namespace functional
}  // namespace nn
}  // namespace ember
