// Ops along one dim: cumsum, cumprod, softmax, log_softmax, sort, argsort, topk.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "pointwise_kernels.h"
#include "reduce_kernels.h"

namespace ember {

using namespace native;

namespace {

std::vector<bool> one_dim_mask(const Tensor& self, int64_t d) {
    std::vector<bool> mask(static_cast<size_t>(self.dim()), false);
    mask[static_cast<size_t>(d)] = true;
    return mask;
}

std::vector<int64_t> permuted_sizes(const Tensor& self, const Lanes& l, int64_t last_size) {
    std::vector<int64_t> s;
    for (size_t i = 0; i + 1 < l.perm.size(); ++i) s.push_back(self.size(l.perm[i]));
    s.push_back(last_size);
    return s;
}

// Runs f(lane_in, lane_out, len) over every lane of self along dim d (out has self's shape
// and dtype out_dtype). A 0-dim tensor is one lane of length 1.
template <typename In, typename Out, typename F>
Tensor along_dim(const Tensor& self, int64_t d, ScalarType out_dtype, F f) {
    if (self.dim() == 0) {
        Tensor in = contiguous_data(self);
        Tensor out = empty_tensor({}, out_dtype);
        f(static_cast<const In*>(in.data_ptr()), static_cast<Out*>(out.data_ptr()), int64_t(1));
        return out;
    }
    Lanes l = make_lanes(self, one_dim_mask(self, d));
    Tensor out = empty_tensor({l.outer * l.len}, out_dtype);
    const In* ip = static_cast<const In*>(l.data.data_ptr());
    Out* op = static_cast<Out*>(out.data_ptr());
    for (int64_t o = 0; o < l.outer; ++o) f(ip + o * l.len, op + o * l.len, l.len);
    return lanes_to_tensor(out, l, permuted_sizes(self, l, l.len));
}

// The accumulator of a scan: int64 for integers, double for floats, complex128 for complex.
template <typename T>
using scan_acc_t = std::conditional_t<std::is_integral_v<T>, int64_t,
                                      std::conditional_t<is_complex_v<T>, std::complex<double>, double>>;

// d(cumprod(x))/dx applied to g along each lane, computed directly (exact with zeros in x; not
// differentiable twice): grad[k] = sum_{i >= k} g[i] * prod_{j <= i, j != k} x[j].
Tensor cumprod_backward(const Tensor& g, const Tensor& x, int64_t d) {
    NoGradGuard ng;
    const Tensor xd = cast(x, kDouble), gd = cast(g, kDouble);
    if (x.dim() == 0) return g.clone();
    Lanes lx = make_lanes(xd, one_dim_mask(xd, d));
    Lanes lg = make_lanes(gd, one_dim_mask(gd, d));
    Tensor out = empty_tensor({lx.outer * lx.len}, kDouble);
    const double* xp = static_cast<const double*>(lx.data.data_ptr());
    const double* gp = static_cast<const double*>(lg.data.data_ptr());
    double* op = static_cast<double*>(out.data_ptr());
    const int64_t n = lx.len;
    for (int64_t o = 0; o < lx.outer; ++o) {
        const double* xl = xp + o * n;
        const double* gl = gp + o * n;
        double prefix = 1;  // prod_{j < k} x[j]
        for (int64_t k = 0; k < n; ++k) {
            double acc = 0, q = prefix;  // q: prod_{j <= i, j != k} x[j]
            for (int64_t i = k; i < n; ++i) {
                if (i > k) q *= xl[i];
                acc += gl[i] * q;
            }
            op[o * n + k] = acc;
            prefix *= xl[k];
        }
    }
    return lanes_to_tensor(out, lx, permuted_sizes(xd, lx, n)).to(x.scalar_type());
}

}  // namespace

// ---- cumsum ----------------------------------------------------------------------------------------------
Tensor cumsum(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
    const int64_t d = wrap_dim(dim, self.dim());
    const ScalarType dt = dtype ? *dtype : (is_integral(self.scalar_type(), true) ? kLong : self.scalar_type());
    check_complex_autograd(dt, "cumsum", self, Tensor());
    const Tensor x = cast(self, dt);
    Tensor out = dispatch_set<kIntegerTypes | kFloatingTypes | kComplexTypes>(dt, "cumsum_cpu", [&](auto tag) -> Tensor {
        using T = typename decltype(tag)::type;
        using A = scan_acc_t<T>;
        return along_dim<T, T>(x, d, dt, [](const T* in, T* o, int64_t n) {
            A acc = 0;
            for (int64_t i = 0; i < n; ++i) {
                acc += static_cast<A>(static_cast<opmath_t<T>>(in[i]));
                o[i] = convert<T>(acc);
            }
        });
    });
    if (auto n = make_node("CumsumBackward0", {self})) {
        set_history(out, n, 0);
        n->set_formula([d](FunctionNode&, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            if (g[0].dim() == 0) return {g[0]};
            return {g[0].flip({d}).cumsum(d).flip({d})};
        });
    }
    return out;
}

// ---- cumprod ---------------------------------------------------------------------------------------------
Tensor cumprod(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
    const int64_t d = wrap_dim(dim, self.dim());
    const ScalarType dt = dtype ? *dtype : (is_integral(self.scalar_type(), true) ? kLong : self.scalar_type());
    check_complex_autograd(dt, "cumprod", self, Tensor());
    const Tensor x = cast(self, dt);
    Tensor out = dispatch_set<kIntegerTypes | kFloatingTypes | kComplexTypes>(dt, "cumprod_cpu", [&](auto tag) -> Tensor {
        using T = typename decltype(tag)::type;
        using A = scan_acc_t<T>;
        return along_dim<T, T>(x, d, dt, [](const T* in, T* o, int64_t n) {
            A acc = 1;
            for (int64_t i = 0; i < n; ++i) {
                acc *= static_cast<A>(static_cast<opmath_t<T>>(in[i]));
                o[i] = convert<T>(acc);
            }
        });
    });
    if (auto n = make_node("CumprodBackward0", {self})) {
        set_history(out, n, 0);
        n->save(self);
        n->set_formula([d](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            return {cumprod_backward(g[0], node.saved(0), d)};
        });
    }
    return out;
}

// ---- softmax / log_softmax ---------------------------------------------------------------------------------
static Tensor softmax_impl(const Tensor& self_in, int64_t dim, std::optional<ScalarType> dtype, bool log) {
    const Tensor self = dtype ? self_in.to(*dtype) : self_in;
    EMBER_CHECK(self.is_floating_point(), "\"", log ? "log_softmax_kernel_impl" : "softmax_kernel_impl",
                "\" not implemented for '", self.scalar_type(), "'");
    const int64_t d = wrap_dim(dim, self.dim());
    Tensor out = dispatch_floating(self.scalar_type(), "softmax", [&](auto tag) -> Tensor {
        using T = typename decltype(tag)::type;
        using A = acc_float_t<T>;
        return along_dim<T, T>(self, d, self.scalar_type(), [log](const T* in, T* o, int64_t n) {
            A m = -std::numeric_limits<A>::infinity();
            for (int64_t i = 0; i < n; ++i) m = std::max<A>(m, static_cast<A>(in[i]));
            if (std::isinf(m) && m < 0) m = 0;  // all -inf: exp gives 0s, sum 0 -> nan (as PyTorch)
            A s = 0;
            if (log) {
                for (int64_t i = 0; i < n; ++i) s += std::exp(static_cast<A>(in[i]) - m);
                const A lse = m + std::log(s);
                for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(static_cast<A>(in[i]) - lse);
            } else {
                for (int64_t i = 0; i < n; ++i) {
                    const A e = std::exp(static_cast<A>(in[i]) - m);
                    o[i] = static_cast<T>(e);
                    s += e;
                }
                const A inv = A(1) / s;
                for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(static_cast<A>(o[i]) * inv);
            }
        });
    });
    if (auto n = make_node(log ? "LogSoftmaxBackward0" : "SoftmaxBackward0", {self})) {
        set_history(out, n, 0);
        n->save(out, true);
        n->set_formula([d, log](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            const Tensor y = node.saved(0);
            if (y.dim() == 0) return {log ? g[0] - g[0] : g[0] * 0};
            if (log) return {g[0] - y.exp() * g[0].sum({d}, true)};
            return {y * (g[0] - (g[0] * y).sum({d}, true))};
        });
    }
    return out;
}

Tensor softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) { return softmax_impl(self, dim, dtype, false); }
Tensor log_softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
    return softmax_impl(self, dim, dtype, true);
}

// ---- sort / topk ---------------------------------------------------------------------------------------------
namespace {

// NaN sorts as the largest value (as PyTorch).
template <typename O>
bool less_nan_last(O a, O b) {
    if constexpr (std::is_floating_point_v<O>) {
        if (b != b) return a == a;
        if (a != a) return false;
    }
    return a < b;
}

// values (dtype of self) and indices (kLong) of the first k of each lane in order
std::tuple<Tensor, Tensor> sort_lanes(const Tensor& self, int64_t d, int64_t k, bool descending, bool stable_sort) {
    if (self.dim() == 0) {
        NoGradGuard g;
        return {self.clone(), zeros({}, kLong)};
    }
    Lanes l = make_lanes(self, one_dim_mask(self, d));
    Tensor values = empty_tensor({l.outer * k}, self.scalar_type());
    Tensor indices = empty_tensor({l.outer * k}, kLong);
    dispatch_all(self.scalar_type(), "sort", [&](auto tag) {
        using T = typename decltype(tag)::type;
        using O = opmath_t<T>;
        const T* ip = static_cast<const T*>(l.data.data_ptr());
        T* vp = static_cast<T*>(values.data_ptr());
        int64_t* xp = static_cast<int64_t*>(indices.data_ptr());
        std::vector<int64_t> idx(static_cast<size_t>(l.len));
        for (int64_t o = 0; o < l.outer; ++o) {
            const T* lp = ip + o * l.len;
            std::iota(idx.begin(), idx.end(), int64_t(0));
            auto cmp = [lp, descending](int64_t a, int64_t b) {
                const O va = static_cast<O>(lp[a]), vb = static_cast<O>(lp[b]);
                return descending ? less_nan_last(vb, va) : less_nan_last(va, vb);
            };
            if (k < l.len && !stable_sort) {
                std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int64_t a, int64_t b) {
                    return cmp(a, b) || (!cmp(b, a) && a < b);
                });
            } else {
                std::stable_sort(idx.begin(), idx.end(), cmp);
            }
            for (int64_t i = 0; i < k; ++i) {
                vp[o * k + i] = lp[idx[static_cast<size_t>(i)]];
                xp[o * k + i] = idx[static_cast<size_t>(i)];
            }
        }
    });
    const auto ps = permuted_sizes(self, l, k);
    return {lanes_to_tensor(values, l, ps), lanes_to_tensor(indices, l, ps)};
}

void record_sort(const Tensor& self, const Tensor& values, const Tensor& indices, int64_t d, const char* name) {
    if (auto n = make_node(name, {self})) {
        set_history(values, n, 0);
        n->save(indices);
        const auto s0 = self.sizes().vec();
        n->set_formula([d, s0](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            if (s0.empty()) return {g[0]};
            return {zeros(s0, g[0].scalar_type()).scatter(d, node.saved(0), g[0])};
        });
    }
}

}  // namespace

std::tuple<Tensor, Tensor> sort(const Tensor& self, int64_t dim, bool descending) {
    const int64_t d = wrap_dim(dim, self.dim());
    const int64_t len = self.dim() == 0 ? 1 : self.size(d);
    auto [values, indices] = sort_lanes(self, d, len, descending, true);
    record_sort(self, values, indices, d, "SortBackward0");
    return {values, indices};
}

Tensor argsort(const Tensor& self, int64_t dim, bool descending) { return std::get<1>(sort(self, dim, descending)); }

std::tuple<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted) {
    const int64_t d = wrap_dim(dim, self.dim());
    const int64_t len = self.dim() == 0 ? 1 : self.size(d);
    EMBER_CHECK_INDEX(k >= 0 && k <= len, "selected index k out of range");
    (void)sorted;  // results are always sorted
    auto [values, indices] = sort_lanes(self, d, k, largest, false);
    record_sort(self, values, indices, d, "TopkBackward0");
    return {values, indices};
}

// ---- Tensor methods -------------------------------------------------------------------------------------------
Tensor Tensor::cumsum(int64_t dim, std::optional<ScalarType> dtype) const { return ember::cumsum(*this, dim, dtype); }
Tensor Tensor::cumprod(int64_t dim, std::optional<ScalarType> dtype) const { return ember::cumprod(*this, dim, dtype); }
Tensor Tensor::softmax(int64_t dim, std::optional<ScalarType> dtype) const { return ember::softmax(*this, dim, dtype); }
Tensor Tensor::log_softmax(int64_t dim, std::optional<ScalarType> dtype) const {
    return ember::log_softmax(*this, dim, dtype);
}
std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
    return ember::topk(*this, k, dim, largest, sorted);
}
std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending) const { return ember::sort(*this, dim, descending); }
Tensor Tensor::argsort(int64_t dim, bool descending) const { return ember::argsort(*this, dim, descending); }

}  // namespace ember
