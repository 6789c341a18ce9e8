// Reductions: sum, mean, prod, max/min, amax/amin, argmax/argmin, var/std, norm, all/any,
// logsumexp, and their gradients.
#include <cmath>
#include <limits>

#include "ember/complex.h"
#include "pointwise_kernels.h"
#include "reduce_kernels.h"

namespace ember {
namespace native {

Lanes make_lanes(const Tensor& self, const std::vector<bool>& mask) {
    Lanes l;
    const int64_t nd = self.dim();
    for (int64_t i = 0; i < nd; ++i) {
        if (!mask[static_cast<size_t>(i)]) {
            l.perm.push_back(i);
            l.outer *= self.size(i);
        }
    }
    for (int64_t i = 0; i < nd; ++i) {
        if (mask[static_cast<size_t>(i)]) {
            l.perm.push_back(i);
            l.len *= self.size(i);
        }
    }
    NoGradGuard g;
    l.data = contiguous_data(nd > 0 ? self.permute(l.perm) : self);
    l.keep_shape = reduced_shape(self.sizes(), mask, true);
    return l;
}

Tensor lanes_to_tensor(const Tensor& lane_result, const Lanes& lanes, IntArrayRef permuted_sizes) {
    NoGradGuard g;
    if (lanes.perm.empty()) return lane_result.view(permuted_sizes);
    Tensor t = lane_result.view(permuted_sizes);
    std::vector<int64_t> inv(lanes.perm.size());
    for (size_t i = 0; i < lanes.perm.size(); ++i) inv[static_cast<size_t>(lanes.perm[i])] = static_cast<int64_t>(i);
    return contiguous_data(t.permute(inv));
}

Tensor drop_reduced(const Tensor& t, const std::vector<bool>& mask, bool keepdim) {
    if (keepdim) return t;
    std::vector<int64_t> shape;
    for (size_t i = 0; i < mask.size(); ++i) {
        if (!mask[i]) shape.push_back(t.size(static_cast<int64_t>(i)));
    }
    NoGradGuard g;
    return t.view(shape);
}

}  // namespace native

using namespace native;

namespace {

// the result with the reduced dims kept as 1 (for broadcasting against self)
Tensor keep(const Tensor& r, const std::vector<bool>& mask, bool keepdim) {
    if (keepdim) return r;
    Tensor k = r;
    for (size_t i = 0; i < mask.size(); ++i) {
        if (mask[i]) k = k.unsqueeze(static_cast<int64_t>(i));
    }
    return k;
}

// The gradient of a reduction broadcast back over self's shape.
Tensor expand_grad(const Tensor& g, const std::vector<bool>& mask, bool keepdim, IntArrayRef self_shape) {
    return keep(g, mask, keepdim).expand(self_shape);
}

// the reduced dims, in order
std::vector<int64_t> reduced_dims(const std::vector<bool>& mask) {
    std::vector<int64_t> dims;
    for (size_t i = 0; i < mask.size(); ++i) {
        if (mask[i]) dims.push_back(static_cast<int64_t>(i));
    }
    return dims;
}

// how many elements of self reduce into each output element
int64_t reduced_count(const Tensor& self, const std::vector<bool>& mask) {
    int64_t count = 1;
    for (int64_t d : reduced_dims(mask)) count *= self.size(d);
    return count;
}

ScalarType sum_dtype(const Tensor& self, std::optional<ScalarType> dtype) {
    if (dtype) return *dtype;
    return is_integral(self.scalar_type(), true) ? kLong : self.scalar_type();
}

// The sum (Prod false) or product (Prod true) in out_dtype: floating types accumulate in
// double, complex ones in complex128, integers in int64, bool as any (sum) / all (prod).
template <bool Prod>
Tensor sum_prod_kernel(const Tensor& self_in, const std::vector<bool>& mask, bool keepdim, ScalarType out_dtype) {
    Tensor self = cast(self_in, out_dtype);
    Tensor acc = dispatch_all_and_complex(out_dtype, Prod ? "prod_cpu" : "sum_cpu", [&](auto tag) -> Tensor {
        using T = typename decltype(tag)::type;
        using A = std::conditional_t<
            std::is_same_v<T, bool>, bool,
            std::conditional_t<std::is_integral_v<T>, int64_t,
                               std::conditional_t<is_complex_v<T>, std::complex<double>, double>>>;
        return reduce_simple<A, T>(self, mask, static_cast<A>(Prod ? 1 : 0), [](A a, A b) -> A {
            if constexpr (std::is_same_v<A, bool>) {
                return Prod ? (a && b) : (a || b);
            } else {
                return Prod ? a * b : a + b;
            }
        });
    });
    return drop_reduced(cast(acc, out_dtype), mask, keepdim);
}

Tensor minmax_kernel(const Tensor& self, const std::vector<bool>& mask, bool keepdim, bool is_max) {
    Tensor acc = dispatch_all(self.scalar_type(), is_max ? "amax" : "amin", [&](auto tag) -> Tensor {
        using T = typename decltype(tag)::type;
        using O = opmath_t<T>;
        O ident;
        if constexpr (std::is_floating_point_v<O>) {
            ident = is_max ? -std::numeric_limits<O>::infinity() : std::numeric_limits<O>::infinity();
        } else {
            ident = is_max ? std::numeric_limits<O>::lowest() : std::numeric_limits<O>::max();
        }
        Tensor in = self;
        Tensor r = reduce_simple<O, T>(in, mask, ident, [is_max](O a, O b) -> O {
            if constexpr (std::is_floating_point_v<O>) {
                if (a != a) return a;
                if (b != b) return b;
            }
            return is_max ? (b > a ? b : a) : (b < a ? b : a);
        });
        return r;
    });
    return drop_reduced(cast(acc, self.scalar_type()), mask, keepdim);
}

// Records out = op(self) whose gradient is formula(grad, self, out) (self and out saved).
template <typename Formula>
void record_with_saved_output(const Tensor& out, const Tensor& self, const char* node_name, Formula formula) {
    if (auto n = make_node(node_name, {self})) {
        set_history(out, n, 0);
        n->save(self);
        n->save(out, true);
        n->set_formula([formula](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            return {formula(g[0], node.saved(0), node.saved(1))};
        });
    }
}

// Records out = reduction of self whose gradient is the output gradient spread back over the
// reduced dims, divided by divisor (the element count for a mean).
void record_expanded_grad(const Tensor& out, const Tensor& self, const char* node_name, const std::vector<bool>& mask,
                          bool keepdim, int64_t divisor) {
    if (auto n = make_node(node_name, {self})) {
        set_history(out, n, 0);
        const auto s0 = self.sizes().vec();
        n->set_formula([mask, keepdim, s0, divisor](FunctionNode&, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            const Tensor ge = expand_grad(g[0], mask, keepdim, s0);
            return {divisor == 1 ? ge : ge / static_cast<double>(divisor)};
        });
    }
}

// A reduction of each lane of a floating tensor to a double: lane_fn(const T* lane, int64_t len)
// for the element type T; the result in self's dtype.
template <typename LaneFn>
Tensor reduce_lanes(const Tensor& self, const std::vector<bool>& mask, bool keepdim, const char* name, LaneFn lane_fn) {
    Lanes l = make_lanes(self, mask);
    Tensor res = empty_tensor(l.keep_shape, kDouble);
    double* rp = static_cast<double*>(res.data_ptr());
    dispatch_floating(self.scalar_type(), name, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* p = static_cast<const T*>(l.data.data_ptr());
        for (int64_t o = 0; o < l.outer; ++o) rp[o] = lane_fn(p + o * l.len, l.len);
    });
    return drop_reduced(cast(res, self.scalar_type()), mask, keepdim);
}

void check_nonempty_full(const Tensor& self, const char* name) {
    EMBER_CHECK_INDEX(self.numel() > 0, name, "(): Expected reduction dim to be specified for input.numel() == 0. Specify "
                                              "the reduction dim with the 'dim' argument.");
}

void check_nonempty_dims(const Tensor& self, const std::vector<bool>& mask, const char* name) {
    for (size_t i = 0; i < mask.size(); ++i) {
        if (mask[i]) {
            EMBER_CHECK_INDEX(self.size(static_cast<int64_t>(i)) > 0, name, "(): Expected reduction dim ", i,
                              " to have non-zero size.");
        }
    }
}

}  // namespace

// ---- sum / mean / prod -----------------------------------------------------------------------------------
Tensor sum(const Tensor& self, IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) {
    check_complex_autograd(sum_dtype(self, dtype), "sum", self, Tensor());
    const std::vector<bool> mask = dim_mask(dim, self.dim());
    Tensor out = sum_prod_kernel<false>(self, mask, keepdim, sum_dtype(self, dtype));
    record_expanded_grad(out, self, dim.empty() ? "SumBackward0" : "SumBackward1", mask, keepdim, 1);
    return out;
}

Tensor sum(const Tensor& self, std::optional<ScalarType> dtype) { return sum(self, IntArrayRef{}, false, dtype); }

Tensor mean(const Tensor& self, IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) {
    const ScalarType dt = dtype.value_or(self.scalar_type());
    EMBER_CHECK(is_floating_point(dt) || is_complex(dt), "mean(): could not infer output dtype. Input dtype must be either a floating point "
                                       "or complex dtype. Got: ", dt);
    check_complex_autograd(dt, "mean", self, Tensor());
    const std::vector<bool> mask = dim_mask(dim, self.dim());
    const int64_t count = reduced_count(self, mask);
    Tensor out;
    {
        Tensor s = sum_prod_kernel<false>(self, mask, keepdim, dt);
        NoGradGuard g;
        out = cast(s / static_cast<double>(count), dt);
    }
    record_expanded_grad(out, self, dim.empty() ? "MeanBackward0" : "MeanBackward1", mask, keepdim, count);
    return out;
}

Tensor mean(const Tensor& self, std::optional<ScalarType> dtype) { return mean(self, IntArrayRef{}, false, dtype); }

// gradient of prod: product of the other elements of each reduced lane (zeros handled)
static Tensor prod_backward(const Tensor& g, const Tensor& self, const Tensor& result, const std::vector<bool>& mask,
                            bool keepdim) {
    const Tensor gk = expand_grad(g, mask, keepdim, self.sizes());
    const Tensor rk = keep(result, mask, keepdim);
    bool has_zero;
    {
        NoGradGuard ng;
        has_zero = (self == 0).any().item<bool>();
    }
    if (!has_zero) return gk * (rk / self);
    // exclusive products per lane, computed directly (not differentiable twice)
    NoGradGuard ng;
    Lanes l = make_lanes(self.to(kDouble), mask);
    Tensor ex = empty_tensor({l.outer * l.len}, kDouble);
    const double* p = static_cast<const double*>(l.data.data_ptr());
    double* e = static_cast<double*>(ex.data_ptr());
    for (int64_t o = 0; o < l.outer; ++o) {
        const double* lp = p + o * l.len;
        double* ep = e + o * l.len;
        double acc = 1;
        for (int64_t i = 0; i < l.len; ++i) {
            ep[i] = acc;
            acc *= lp[i];
        }
        acc = 1;
        for (int64_t i = l.len - 1; i >= 0; --i) {
            ep[i] *= acc;
            acc *= lp[i];
        }
    }
    std::vector<int64_t> psizes;
    for (int64_t d : l.perm) psizes.push_back(self.size(d));
    Tensor others = lanes_to_tensor(ex, l, psizes).to(self.scalar_type());
    return gk * others;
}

static Tensor prod_impl(const Tensor& self, const std::vector<bool>& mask, bool keepdim,
                        std::optional<ScalarType> dtype, const char* node_name) {
    check_complex_autograd(sum_dtype(self, dtype), "prod", self, Tensor());
    Tensor out = sum_prod_kernel<true>(self, mask, keepdim, sum_dtype(self, dtype));
    record_with_saved_output(out, self, node_name, [mask, keepdim](const Tensor& g, const Tensor& x, const Tensor& r) {
        return prod_backward(g, x, r, mask, keepdim);
    });
    return out;
}

Tensor prod(const Tensor& self, int64_t dim, bool keepdim, std::optional<ScalarType> dtype) {
    return prod_impl(self, dim_mask({dim}, self.dim()), keepdim, dtype, "ProdBackward1");
}

Tensor prod(const Tensor& self, std::optional<ScalarType> dtype) {
    return prod_impl(self, dim_mask({}, self.dim()), false, dtype, "ProdBackward0");
}

// ---- max / min / amax / amin -----------------------------------------------------------------------------
// the gradient spread evenly over the elements equal to the (kept-dim) result
static Tensor evenly_distribute(const Tensor& g, const Tensor& self, const Tensor& result, const std::vector<bool>& mask,
                                bool keepdim) {
    const Tensor rk = keep(result, mask, keepdim);
    Tensor m;
    {
        NoGradGuard ng;
        m = (self == rk).logical_or(self.isnan().logical_and(rk.isnan()));
    }
    const Tensor mf = m.to(g.scalar_type());
    Tensor count;
    {
        NoGradGuard ng;
        const std::vector<int64_t> dims = reduced_dims(mask);
        count = dims.empty() ? mf : mf.sum(dims, /*keepdim=*/true);
    }
    return expand_grad(g, mask, keepdim, self.sizes()) * mf / count;
}

static Tensor amax_amin(const Tensor& self, IntArrayRef dim, bool keepdim, bool is_max, const char* node_name) {
    const std::vector<bool> mask = dim_mask(dim, self.dim());
    if (self.numel() == 0) {
        if (dim.empty()) check_nonempty_full(self, is_max ? "amax" : "amin");
        check_nonempty_dims(self, mask, is_max ? "amax" : "amin");
    }
    Tensor out = minmax_kernel(self, mask, keepdim, is_max);
    record_with_saved_output(out, self, node_name, [mask, keepdim](const Tensor& g, const Tensor& x, const Tensor& r) {
        return evenly_distribute(g, x, r, mask, keepdim);
    });
    return out;
}

Tensor amax(const Tensor& self, IntArrayRef dim, bool keepdim) { return amax_amin(self, dim, keepdim, true, "AmaxBackward0"); }
Tensor amin(const Tensor& self, IntArrayRef dim, bool keepdim) { return amax_amin(self, dim, keepdim, false, "AminBackward0"); }

Tensor max(const Tensor& self) {
    check_nonempty_full(self, "max");
    return amax_amin(self, {}, false, true, "MaxBackward1");
}

Tensor min(const Tensor& self) {
    check_nonempty_full(self, "min");
    return amax_amin(self, {}, false, false, "MinBackward1");
}

// values and indices of the max/min along one dim (first occurrence; NaN wins)
static std::tuple<Tensor, Tensor> minmax_dim_kernel(const Tensor& self, int64_t d, bool keepdim, bool is_max) {
    std::vector<bool> mask(static_cast<size_t>(std::max<int64_t>(self.dim(), 1)), false);
    if (self.dim() > 0) mask[static_cast<size_t>(d)] = true;
    Lanes l = self.dim() > 0 ? make_lanes(self, mask) : make_lanes(self.reshape({1}), mask);
    Tensor values = empty_tensor(l.keep_shape, self.scalar_type());
    Tensor indices = empty_tensor(l.keep_shape, kLong);
    dispatch_all(self.scalar_type(), is_max ? "max" : "min", [&](auto tag) {
        using T = typename decltype(tag)::type;
        using O = opmath_t<T>;
        const T* p = static_cast<const T*>(l.data.data_ptr());
        T* vp = static_cast<T*>(values.data_ptr());
        int64_t* ip = static_cast<int64_t*>(indices.data_ptr());
        for (int64_t o = 0; o < l.outer; ++o) {
            const T* lp = p + o * l.len;
            O best = static_cast<O>(lp[0]);
            int64_t bi = 0;
            for (int64_t i = 1; i < l.len; ++i) {
                const O v = static_cast<O>(lp[i]);
                if constexpr (std::is_floating_point_v<O>) {
                    if (best != best) break;
                    if (v != v) {
                        best = v;
                        bi = i;
                        break;
                    }
                }
                if (is_max ? v > best : v < best) {
                    best = v;
                    bi = i;
                }
            }
            vp[o] = lp[bi];
            ip[o] = bi;
        }
    });
    if (self.dim() == 0) {
        NoGradGuard g;
        return {values.reshape({}), indices.reshape({})};
    }
    return {drop_reduced(values, mask, keepdim), drop_reduced(indices, mask, keepdim)};
}

static std::tuple<Tensor, Tensor> max_min_dim(const Tensor& self, int64_t dim, bool keepdim, bool is_max) {
    const int64_t d = wrap_dim(dim, self.dim());
    if (self.dim() > 0) {
        EMBER_CHECK_INDEX(self.size(d) > 0, is_max ? "max" : "min", "(): Expected reduction dim ", d,
                          " to have non-zero size.");
    }
    auto [values, indices] = minmax_dim_kernel(self, d, keepdim, is_max);
    if (auto n = make_node(is_max ? "MaxBackward0" : "MinBackward0", {self})) {
        set_history(values, n, 0);
        n->save(indices);
        const auto s0 = self.sizes().vec();
        const bool scalar = self.dim() == 0;
        n->set_formula([d, keepdim, s0, scalar](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            if (scalar) return {g[0]};
            Tensor idx = node.saved(0);
            Tensor gv = g[0];
            if (!keepdim) {
                idx = idx.unsqueeze(d);
                gv = gv.unsqueeze(d);
            }
            return {zeros(s0, gv.scalar_type()).scatter(d, idx, gv)};
        });
    }
    return {values, indices};
}

std::tuple<Tensor, Tensor> max(const Tensor& self, int64_t dim, bool keepdim) { return max_min_dim(self, dim, keepdim, true); }
std::tuple<Tensor, Tensor> min(const Tensor& self, int64_t dim, bool keepdim) { return max_min_dim(self, dim, keepdim, false); }

static Tensor arg_impl(const Tensor& self, std::optional<int64_t> dim, bool keepdim, bool is_max) {
    if (!dim) {
        EMBER_CHECK_INDEX(self.numel() > 0, is_max ? "argmax" : "argmin",
                          "(): Expected reduction dim to be specified for input.numel() == 0.");
        Tensor flat;
        {
            NoGradGuard g;
            flat = self.reshape({-1});
        }
        Tensor idx = std::get<1>(minmax_dim_kernel(flat, 0, false, is_max));
        if (keepdim) {
            NoGradGuard g;
            return idx.reshape(std::vector<int64_t>(static_cast<size_t>(self.dim()), 1));
        }
        return idx;
    }
    const int64_t d = wrap_dim(*dim, self.dim());
    if (self.dim() > 0) {
        EMBER_CHECK_INDEX(self.size(d) > 0, is_max ? "argmax" : "argmin", "(): Expected reduction dim ", d,
                          " to have non-zero size.");
    }
    return std::get<1>(minmax_dim_kernel(self, d, keepdim, is_max));
}

Tensor argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) { return arg_impl(self, dim, keepdim, true); }
Tensor argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim) { return arg_impl(self, dim, keepdim, false); }

// ---- var / std -------------------------------------------------------------------------------------------
static Tensor var_std(const Tensor& self, OptionalIntArrayRef dim, const std::optional<Scalar>& correction_opt,
                      bool keepdim, bool take_sqrt) {
    if (self.is_complex()) {
        // sum |z - mean|^2 / (N - correction): the real and the imaginary parts' variances
        // added, in double, rounded once to the real dtype (float for complex64)
        const Tensor z = cast(self, kComplexDouble);
        Tensor v = var_std(real(z), dim, correction_opt, keepdim, false) + var_std(imag(z), dim, correction_opt, keepdim, false);
        if (take_sqrt) v = ember::sqrt(v);
        return cast(v, to_real_type(self.scalar_type()));
    }
    EMBER_CHECK(self.is_floating_point(), "std and var only support floating point and complex dtypes");
    const std::vector<bool> mask = dim_mask(dim ? *dim : IntArrayRef{}, self.dim());
    const double correction = correction_opt ? correction_opt->toDouble() : 1.0;
    Tensor out = reduce_lanes(self, mask, keepdim, "var", [&](const auto* lp, int64_t len) {
        using O = opmath_t<std::remove_const_t<std::remove_pointer_t<decltype(lp)>>>;
        double mean = 0;
        for (int64_t i = 0; i < len; ++i) mean += static_cast<double>(static_cast<O>(lp[i]));
        mean /= static_cast<double>(len);
        double ss = 0;
        for (int64_t i = 0; i < len; ++i) {
            const double dv = static_cast<double>(static_cast<O>(lp[i])) - mean;
            ss += dv * dv;
        }
        const double v = ss / std::max(0.0, static_cast<double>(len) - correction);
        return take_sqrt ? std::sqrt(v) : v;
    });
    if (auto n = make_node(take_sqrt ? "StdBackward0" : "VarBackward0", {self})) {
        set_history(out, n, 0);
        n->save(self);
        if (take_sqrt) n->save(out, true);
        const int64_t count = reduced_count(self, mask);
        n->set_formula([mask, keepdim, correction, count, take_sqrt](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            const Tensor x = node.saved(0);
            const std::vector<int64_t> dims = reduced_dims(mask);
            const Tensor mu = dims.empty() ? x : x.mean(dims, /*keepdim=*/true);
            const double denom = std::max(0.0, static_cast<double>(count) - correction);
            Tensor gv = g[0];
            if (take_sqrt) {
                const Tensor r = node.saved(1);
                gv = (gv / (r * 2)).masked_fill(r == 0, 0);
            }
            return {(2.0 / denom) * expand_grad(gv, mask, keepdim, x.sizes()) * (x - mu)};
        });
    }
    return out;
}

Tensor var(const Tensor& self, IntArrayRef dim, bool unbiased, bool keepdim) {
    return var_std(self, dim, Scalar(unbiased ? 1 : 0), keepdim, false);
}
Tensor var(const Tensor& self, OptionalIntArrayRef dim, const std::optional<Scalar>& correction, bool keepdim) {
    return var_std(self, dim, correction, keepdim, false);
}
Tensor std(const Tensor& self, IntArrayRef dim, bool unbiased, bool keepdim) {
    return var_std(self, dim, Scalar(unbiased ? 1 : 0), keepdim, true);
}
Tensor std(const Tensor& self, OptionalIntArrayRef dim, const std::optional<Scalar>& correction, bool keepdim) {
    return var_std(self, dim, correction, keepdim, true);
}

// ---- norm ------------------------------------------------------------------------------------------------
Tensor norm(const Tensor& self, const std::optional<Scalar>& p_opt, IntArrayRef dim, bool keepdim) {
    // a complex tensor: the norm of |z|, in the real dtype (complex tensors record no autograd)
    if (self.is_complex()) return norm(complex_abs(self), p_opt, dim, keepdim);
    EMBER_CHECK(self.is_floating_point(), "linalg.vector_norm: Expected a floating point or complex tensor as input. Got ",
                self.scalar_type());
    const double p = p_opt ? p_opt->toDouble() : 2.0;
    const std::vector<bool> mask = dim_mask(dim, self.dim());
    Tensor out = reduce_lanes(self, mask, keepdim, "norm", [p](const auto* lp, int64_t len) {
        using O = opmath_t<std::remove_const_t<std::remove_pointer_t<decltype(lp)>>>;
        double acc = 0;
        if (std::isinf(p)) {
            acc = p > 0 ? 0.0 : std::numeric_limits<double>::infinity();
            for (int64_t i = 0; i < len; ++i) {
                const double a = std::abs(static_cast<double>(static_cast<O>(lp[i])));
                acc = p > 0 ? std::max(acc, a) : std::min(acc, a);
                if (a != a) acc = a;
            }
        } else if (p == 0) {
            for (int64_t i = 0; i < len; ++i) acc += static_cast<O>(lp[i]) != 0 ? 1.0 : 0.0;
        } else if (p == 1) {
            for (int64_t i = 0; i < len; ++i) acc += std::abs(static_cast<double>(static_cast<O>(lp[i])));
        } else if (p == 2) {
            for (int64_t i = 0; i < len; ++i) {
                const double v = static_cast<double>(static_cast<O>(lp[i]));
                acc += v * v;
            }
            acc = std::sqrt(acc);
        } else {
            for (int64_t i = 0; i < len; ++i) acc += std::pow(std::abs(static_cast<double>(static_cast<O>(lp[i]))), p);
            acc = std::pow(acc, 1.0 / p);
        }
        return acc;
    });
    record_with_saved_output(out, self, "LinalgVectorNormBackward0",
                             [mask, keepdim, p](const Tensor& g, const Tensor& x, const Tensor& result) -> Tensor {
        const Tensor r = keep(result, mask, keepdim);
        const Tensor ge = expand_grad(g, mask, keepdim, x.sizes());
        if (p == 0) return zeros_like(x);
        if (p == 1) return ge * x.sign();
        if (std::isinf(p)) return evenly_distribute(g, x.abs(), result, mask, keepdim) * x.sign();
        if (p == 2) return (ge * x / r).masked_fill(r == 0, 0);
        const Tensor scale = x * x.abs().pow(p - 2) / r.pow(p - 1);
        return (ge * scale).masked_fill(r == 0, 0);
    });
    return out;
}

Tensor norm(const Tensor& self, const Scalar& p) { return norm(self, std::optional<Scalar>(p), IntArrayRef{}, false); }

// ---- all / any -------------------------------------------------------------------------------------------
static Tensor all_any(const Tensor& self, const std::vector<bool>& mask, bool keepdim, bool is_all) {
    Tensor b = cast(self, kBool);
    Tensor r = reduce_simple<bool, bool>(b, mask, is_all, [is_all](bool a, bool c) { return is_all ? (a && c) : (a || c); });
    r = drop_reduced(r, mask, keepdim);
    return self.scalar_type() == kByte ? cast(r, kByte) : r;
}
Tensor all(const Tensor& self) { return all_any(self, dim_mask({}, self.dim()), false, true); }
Tensor all(const Tensor& self, int64_t dim, bool keepdim) { return all_any(self, dim_mask({dim}, self.dim()), keepdim, true); }
Tensor any(const Tensor& self) { return all_any(self, dim_mask({}, self.dim()), false, false); }
Tensor any(const Tensor& self, int64_t dim, bool keepdim) { return all_any(self, dim_mask({dim}, self.dim()), keepdim, false); }

// ---- logsumexp -------------------------------------------------------------------------------------------
Tensor logsumexp(const Tensor& self, IntArrayRef dim, bool keepdim) {
    check_not_complex(self, "logsumexp");
    const Tensor x = self.is_floating_point() ? self : self.to(get_default_dtype());
    const std::vector<bool> mask = dim_mask(dim, x.dim());
    // computed in float (double for float64), rounded to x's dtype through an exact double
    Tensor out = reduce_lanes(x, mask, keepdim, "logsumexp", [](const auto* lp, int64_t len) -> double {
        using T = std::remove_const_t<std::remove_pointer_t<decltype(lp)>>;
        using A = acc_float_t<T>;
        A m = -std::numeric_limits<A>::infinity();
        for (int64_t i = 0; i < len; ++i) m = std::max<A>(m, static_cast<A>(lp[i]));
        A s = 0;
        if (!std::isfinite(m)) {
            if (m == std::numeric_limits<A>::infinity()) return static_cast<double>(m);
            for (int64_t i = 0; i < len; ++i) s += std::exp(static_cast<A>(lp[i]));
            return static_cast<double>(std::log(s));
        }
        for (int64_t i = 0; i < len; ++i) s += std::exp(static_cast<A>(lp[i]) - m);
        return static_cast<double>(m + std::log(s));
    });
    record_with_saved_output(out, x, "LogsumexpBackward0", [mask, keepdim](const Tensor& g, const Tensor& xs, const Tensor& r) {
        return expand_grad(g, mask, keepdim, xs.sizes()) * (xs - keep(r, mask, keepdim)).exp();
    });
    return out;
}

// ---- Tensor methods ----------------------------------------------------------------------------------------
Tensor Tensor::sum(std::optional<ScalarType> dtype) const { return ember::sum(*this, dtype); }
Tensor Tensor::sum(IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) const {
    return ember::sum(*this, dim, keepdim, dtype);
}
Tensor Tensor::mean(std::optional<ScalarType> dtype) const { return ember::mean(*this, dtype); }
Tensor Tensor::mean(IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) const {
    return ember::mean(*this, dim, keepdim, dtype);
}
Tensor Tensor::prod(std::optional<ScalarType> dtype) const { return ember::prod(*this, dtype); }
Tensor Tensor::prod(int64_t dim, bool keepdim, std::optional<ScalarType> dtype) const {
    return ember::prod(*this, dim, keepdim, dtype);
}
Tensor Tensor::max() const { return ember::max(*this); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const { return ember::max(*this, dim, keepdim); }
Tensor Tensor::min() const { return ember::min(*this); }
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const { return ember::min(*this, dim, keepdim); }
Tensor Tensor::amax(IntArrayRef dim, bool keepdim) const { return ember::amax(*this, dim, keepdim); }
Tensor Tensor::amin(IntArrayRef dim, bool keepdim) const { return ember::amin(*this, dim, keepdim); }
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const { return ember::argmax(*this, dim, keepdim); }
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const { return ember::argmin(*this, dim, keepdim); }
Tensor Tensor::var_all(bool unbiased) const { return var_std(*this, std::nullopt, Scalar(unbiased ? 1 : 0), false, false); }
Tensor Tensor::var(IntArrayRef dim, bool unbiased, bool keepdim) const { return ember::var(*this, dim, unbiased, keepdim); }
Tensor Tensor::var(OptionalIntArrayRef dim, const std::optional<Scalar>& c, bool keepdim) const {
    return ember::var(*this, dim, c, keepdim);
}
Tensor Tensor::std_all(bool unbiased) const { return var_std(*this, std::nullopt, Scalar(unbiased ? 1 : 0), false, true); }
Tensor Tensor::std(IntArrayRef dim, bool unbiased, bool keepdim) const { return ember::std(*this, dim, unbiased, keepdim); }
Tensor Tensor::std(OptionalIntArrayRef dim, const std::optional<Scalar>& c, bool keepdim) const {
    return ember::std(*this, dim, c, keepdim);
}
Tensor Tensor::norm(const Scalar& p) const { return ember::norm(*this, p); }
Tensor Tensor::norm(const std::optional<Scalar>& p, IntArrayRef dim, bool keepdim) const {
    return ember::norm(*this, p, dim, keepdim);
}
Tensor Tensor::all() const { return ember::all(*this); }
Tensor Tensor::all(int64_t dim, bool keepdim) const { return ember::all(*this, dim, keepdim); }
Tensor Tensor::any() const { return ember::any(*this); }
Tensor Tensor::any(int64_t dim, bool keepdim) const { return ember::any(*this, dim, keepdim); }
Tensor Tensor::logsumexp(IntArrayRef dim, bool keepdim) const { return ember::logsumexp(*this, dim, keepdim); }

}  // namespace ember
