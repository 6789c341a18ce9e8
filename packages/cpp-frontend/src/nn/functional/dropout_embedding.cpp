// dropout, embedding and one_hot of ember::nn::functional.
#include "common.h"
#include "core/random.h"

namespace ember {
namespace nn {
namespace functional {

using namespace detail;

namespace {

void check_dropout_p(double p) {
    if (!(p >= 0.0 && p <= 1.0)) {
        throw ValueError("dropout probability has to be between 0 and 1, but got " + py_float(p));
    }
}

// The kept elements: Python Ember's (PyTorch's) bernoulli_(1 - p), double uniforms drawn in
// the input's memory order when it is dense (as bernoulli_ on empty_like(input)).
Tensor keep_draw(const Tensor& input, double p) {
    const std::vector<int64_t> order = native::memory_order(input);
    Tensor keep = !order.empty() && native::dense_in_order(input, order)
                      ? empty_strided(input.sizes(), input.strides(), kBool)
                      : new_empty(input.sizes(), kBool);
    keep.bernoulli_(1.0 - p);
    return keep;
}

Tensor dropout_out_of_place(const Tensor& input, double p) {
    if (input.numel() == 0) return input;
    Tensor out, mask;
    {
        NoGradGuard guard;
        if (p == 1.0) {  // PyTorch multiplies by a zero of the input's dtype, drawing nothing
            mask = zeros({}, input.scalar_type());
            out = input * mask;
        } else if (input.scalar_type() == kHalf) {  // the product in float, rounded once
            const Tensor scale = keep_draw(input, p).to(kFloat).mul_(static_cast<double>(static_cast<float>(1.0 / (1.0 - p))));
            out = (input.to(kFloat) * scale).to(kHalf);
            mask = scale.to(kHalf);
        } else {  // noise.div_(1 - p): the divisor rounded to the dtype first
            const double scale = input.scalar_type() == kDouble
                                     ? 1.0 / (1.0 - p)
                                     : static_cast<double>(1.0f / static_cast<float>(1.0 - p));
            mask = keep_draw(input, p).to(input.scalar_type()).mul_(scale);
            out = input * mask;
        }
    }
    if (auto node = make_node("NativeDropoutBackward0", {input})) {
        set_history(out, node, 0);
        node->save(mask);
        node->set_formula([](FunctionNode& n, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            return {g[0] * n.saved(0)};
        });
    }
    return out;
}

}  // namespace

Tensor dropout(const Tensor& input, double p, bool training, bool inplace) {
    check_dropout_p(p);
    if (!training || p == 0.0) return input;
    if (!input.is_floating_point()) {
        EMBER_ERROR("result type Float can't be cast to the desired output type ", input.scalar_type());
    }
    if (inplace) return apply_inplace(input, [p](const Tensor& x) { return dropout_out_of_place(x, p); });
    return dropout_out_of_place(input, p);
}

Tensor dropout(const Tensor& input, const DropoutFuncOptions& options) {
    return dropout(input, options.p(), options.training(), options.inplace());
}

Tensor embedding(const Tensor& input, const Tensor& weight, std::optional<int64_t> padding_idx) {
    if (!is_integral(input.scalar_type(), /*include_bool=*/false)) {
        EMBER_ERROR("Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; "
                    "but got ember.",
                    scalar_type_name(input.scalar_type()), "Tensor instead (while checking arguments for embedding)");
    }
    EMBER_CHECK(weight.dim() == 2, "'weight' must be 2-D");
    const int64_t num = weight.size(0);
    const int64_t dim = weight.size(1);
    int64_t pad = -1;
    if (padding_idx) {
        EMBER_CHECK(*padding_idx < num && *padding_idx >= -num, "Padding_idx must be within num_embeddings");
        pad = *padding_idx < 0 ? *padding_idx + num : *padding_idx;
    }
    const Tensor idx = input.reshape({-1}).to(kLong);
    if (idx.numel() > 0) {
        const int64_t lo = idx.min().item<int64_t>(), hi = idx.max().item<int64_t>();
        if (lo < 0 || hi >= num) throw IndexError("index out of range in self");
    }
    std::vector<int64_t> out_shape = input.sizes().vec();
    out_shape.push_back(dim);
    Tensor out;
    {
        NoGradGuard guard;
        out = weight.index_select(0, idx).view(out_shape);
    }
    if (auto node = make_node("EmbeddingBackward0", {weight})) {
        set_history(out, node, 0);
        node->save(idx);
        node->set_formula([num, dim, pad](FunctionNode& n, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            const Tensor index = n.saved(0);
            Tensor rows = g[0].reshape({-1, dim});
            if (pad >= 0) rows = rows.masked_fill(eq(index, pad).unsqueeze(1), 0);
            return {zeros({num, dim}, rows.scalar_type()).index_add(0, index, rows)};
        });
    }
    return out;
}

Tensor embedding(const Tensor& input, const Tensor& weight, const EmbeddingFuncOptions& options) {
    return embedding(input, weight, options.padding_idx());
}

Tensor one_hot(const Tensor& tensor, int64_t num_classes) { return ember::one_hot(tensor, num_classes); }

}  // namespace functional
}  // namespace nn
}  // namespace ember
