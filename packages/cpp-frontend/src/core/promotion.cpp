// Type promotion (PyTorch's result_type) and broadcasting.
#include <optional>

#include "op_common.h"

namespace ember {

namespace {

struct ResultTypeState {
    std::optional<ScalarType> dim_result, zero_result, wrapped_result;
};

std::optional<ScalarType> promote_skip_undefined(std::optional<ScalarType> a, std::optional<ScalarType> b) {
    if (!a) return b;
    if (!b) return a;
    return promote_types(*a, *b);
}

void update(ResultTypeState& s, const Tensor& t) {
    if (t.dim() > 0) {
        s.dim_result = promote_skip_undefined(s.dim_result, t.scalar_type());
    } else {
        s.zero_result = promote_skip_undefined(s.zero_result, t.scalar_type());
    }
}

void update(ResultTypeState& s, const Scalar& v) {
    ScalarType t = v.type();
    if (is_floating_point(t)) t = get_default_dtype();
    s.wrapped_result = promote_skip_undefined(s.wrapped_result, t);
}

std::optional<ScalarType> combine_categories(std::optional<ScalarType> higher, std::optional<ScalarType> lower) {
    if (!higher) return lower;
    if (is_complex(*higher)) return higher;
    if (lower && is_complex(*lower)) {
        // a complex number with real tensors of a higher category keeps their float width
        return is_floating_point(*higher) ? to_complex_type(*higher == kHalf ? kFloat : *higher) : *lower;
    }
    if (is_floating_point(*higher)) return higher;
    if (*higher == kBool || (lower && is_floating_point(*lower))) return promote_skip_undefined(higher, lower);
    return higher;
}

ScalarType finish(const ResultTypeState& s) {
    auto r = combine_categories(s.dim_result, combine_categories(s.zero_result, s.wrapped_result));
    return r.value_or(get_default_dtype());
}

}  // namespace

namespace native {
ScalarType promote_with_scalar(ScalarType t, const Scalar& v) {
    ResultTypeState s;
    s.dim_result = t;
    update(s, v);
    return finish(s);
}
}  // namespace native

ScalarType result_type(const Tensor& a, const Tensor& b) {
    if (a.dim() > 0 && b.dim() > 0) return promote_types(a.scalar_type(), b.scalar_type());
    ResultTypeState s;
    update(s, a);
    update(s, b);
    return finish(s);
}

ScalarType result_type(const Tensor& a, const Scalar& b) {
    ResultTypeState s;
    update(s, a);
    update(s, b);
    return finish(s);
}

ScalarType result_type(const Scalar& a, const Tensor& b) { return result_type(b, a); }

ScalarType result_type(const Scalar& a, const Scalar& b) {
    ResultTypeState s;
    update(s, a);
    update(s, b);
    return finish(s);
}

ScalarType result_type(TensorList tensors) {
    ResultTypeState s;
    for (const Tensor& t : tensors) update(s, t);
    return finish(s);
}

std::vector<int64_t> infer_size(IntArrayRef a, IntArrayRef b) {
    const size_t na = a.size(), nb = b.size();
    const size_t n = std::max(na, nb);
    std::vector<int64_t> out(n);
    for (size_t i = 0; i < n; ++i) {
        const ptrdiff_t off = static_cast<ptrdiff_t>(n) - 1 - static_cast<ptrdiff_t>(i);
        const ptrdiff_t da = static_cast<ptrdiff_t>(na) - 1 - off;
        const ptrdiff_t db = static_cast<ptrdiff_t>(nb) - 1 - off;
        const int64_t sa = da >= 0 ? a[static_cast<size_t>(da)] : 1;
        const int64_t sb = db >= 0 ? b[static_cast<size_t>(db)] : 1;
        EMBER_CHECK(sa == sb || sa == 1 || sb == 1, "The size of tensor a (", sa, ") must match the size of tensor b (",
                    sb, ") at non-singleton dimension ", i);
        out[i] = sa == 1 ? sb : sa;
    }
    return out;
}

std::vector<int64_t> broadcast_shapes(const std::vector<std::vector<int64_t>>& shapes) {
    std::vector<int64_t> out;
    for (const auto& s : shapes) out = infer_size(out, s);
    return out;
}

std::vector<Tensor> broadcast_tensors(TensorList tensors) {
    std::vector<int64_t> shape;
    for (const Tensor& t : tensors) shape = infer_size(shape, t.sizes());
    std::vector<Tensor> out;
    for (const Tensor& t : tensors) out.push_back(t.sizes() == IntArrayRef(shape) ? t : t.expand(shape));
    return out;
}

Tensor sum_to(const Tensor& grad, IntArrayRef shape) {
    if (grad.sizes() == shape) return grad;
    const int64_t leading = grad.dim() - static_cast<int64_t>(shape.size());
    EMBER_CHECK(leading >= 0, "sum_to: size ", shape, " is not expandable to size ", grad.sizes());
    std::vector<int64_t> dims;
    for (int64_t i = 0; i < grad.dim(); ++i) {
        if (i < leading) {
            dims.push_back(i);
        } else if (shape[static_cast<size_t>(i - leading)] == 1 && grad.size(i) != 1) {
            dims.push_back(i);
        }
    }
    Tensor r = dims.empty() ? grad : grad.sum(dims, /*keepdim=*/true);
    if (leading > 0 || !(r.sizes() == shape)) r = r.view(shape);
    return r;
}

}  // namespace ember
