// Ops along one dim: cumsum, cumprod, softmax, log_softmax, sort, argsort, topk (and the
// kthvalue, mode and median of sorting.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "pointwise_kernels.h"
#include "reduce_kernels.h"
#include "sorting.h"

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

// ---- sort / topk / kthvalue / mode / median ------------------------------------------------------------------
// PyTorch's CPU kernels order (key, index) pairs with libstdc++'s std::sort, std::partial_sort
// and std::nth_element (SortingKernel.cpp, TopKImpl.h, TensorCompareKernel.cpp, Sorting.cpp).
// Which of several equal keys comes first is whatever those algorithms' moves leave, and the
// moves depend only on the comparisons: the same algorithm under the same comparator over the
// same pairs gives PyTorch's indices, which programs see (argsort, topk of ties), and so does
// Python Ember (ember/_native/kernels.c makes the same moves). Keys compare as PyTorch's do:
// float16 as float, bool as bool.
namespace {

template <typename K>
using Entry = std::pair<K, int64_t>;  // (key, index along the dim)

template <typename K>
bool is_nan_key(K v) {
    if constexpr (std::is_floating_point_v<K>) {
        return v != v;
    } else {
        (void)v;
        return false;
    }
}

// KeyValueCompAsc of SortingKernel.cpp (and topk's smallest): NaN is the largest value.
struct AscNanLast {
    template <typename E>
    bool operator()(const E& a, const E& b) const {
        return (!is_nan_key(a.first) && is_nan_key(b.first)) || a.first < b.first;
    }
};

// KeyValueCompDesc (and topk's largest): NaN first.
struct DescNanFirst {
    template <typename E>
    bool operator()(const E& a, const E& b) const {
        return (is_nan_key(a.first) && !is_nan_key(b.first)) || a.first > b.first;
    }
};

// PyTorch hands a 1-D integer tensor of at::internal::GRAIN_SIZE elements or more, sorted
// ascending, to FBGEMM's radix sort, which is stable.
constexpr int64_t kRadixSortMin = 32768;

// Runs pick(queue) on each lane of self along d: queue holds the lane's (key, index) pairs in
// the lane's order; pick rearranges them and returns where the lane's k results start in it.
// Returns their values (self's elements, in self's dtype) and indices, with size k at d.
template <typename Pick>
std::tuple<Tensor, Tensor> pick_lanes(const Tensor& self, int64_t d, int64_t k, const char* name, Pick pick) {
    NoGradGuard g;
    const Tensor x = self.dim() == 0 ? self.reshape({1}) : self;
    const int64_t dx = self.dim() == 0 ? 0 : d;
    Lanes l = make_lanes(x, one_dim_mask(x, dx));
    Tensor values = empty_tensor({l.outer * k}, x.scalar_type());
    Tensor indices = empty_tensor({l.outer * k}, kLong);
    dispatch_all(x.scalar_type(), name, [&](auto tag) {
        using T = typename decltype(tag)::type;
        using K = opmath_t<T>;
        const T* ip = static_cast<const T*>(l.data.data_ptr());
        T* vp = static_cast<T*>(values.data_ptr());
        int64_t* xp = static_cast<int64_t*>(indices.data_ptr());
        std::vector<Entry<K>> queue(static_cast<size_t>(l.len));
        for (int64_t o = 0; o < l.outer; ++o) {
            const T* lp = ip + o * l.len;
            for (int64_t i = 0; i < l.len; ++i) queue[static_cast<size_t>(i)] = {static_cast<K>(lp[i]), i};
            const int64_t at = pick(queue);
            for (int64_t i = 0; i < k; ++i) {
                const int64_t j = queue[static_cast<size_t>(at + i)].second;
                vp[o * k + i] = lp[j];
                xp[o * k + i] = j;
            }
        }
    });
    if (self.dim() == 0) return {values.reshape({}), indices.reshape({})};
    const auto ps = permuted_sizes(x, l, k);
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

// TH's quick_select_template (Sedgewick's quickselect, Sorting.cpp) under "greater, NaN
// greatest": leaves the kth smallest (0-based) of q at kth.
template <typename E>
void quick_select(std::vector<E>& q, int64_t kth) {
    using K = typename E::first_type;
    const auto gt = [](K a, K b) { return (is_nan_key(a) && !is_nan_key(b)) || a > b; };
    const auto swap = [&q](int64_t i, int64_t j) { std::swap(q[static_cast<size_t>(i)], q[static_cast<size_t>(j)]); };
    const auto key = [&q](int64_t i) { return q[static_cast<size_t>(i)].first; };
    int64_t L = 0, R = static_cast<int64_t>(q.size()) - 1;
    for (;;) {
        if (R <= L) return;
        if (R == L + 1) {
            if (gt(key(L), key(R))) swap(L, R);
            return;
        }
        swap((L + R) >> 1, L + 1);
        if (gt(key(L + 1), key(R))) swap(L + 1, R);
        if (gt(key(L), key(R))) swap(L, R);
        if (gt(key(L + 1), key(L))) swap(L + 1, L);
        int64_t i = L + 1, j = R;
        const K piv = key(L);
        for (;;) {
            do ++i; while (gt(piv, key(i)));
            do --j; while (gt(key(j), piv));
            if (j < i) break;
            swap(i, j);
        }
        swap(L, j);
        if (j <= kth) L = i;
        if (j >= kth) R = j - 1;
    }
}

}  // namespace

namespace native {

std::tuple<Tensor, Tensor> kthvalue_along(const Tensor& self, int64_t k, int64_t d) {
    return pick_lanes(self, d, 1, "kthvalue_cpu", [k](auto& q) {
        quick_select(q, k - 1);
        return k - 1;
    });
}

std::tuple<Tensor, Tensor> mode_along(const Tensor& self, int64_t d) {
    return pick_lanes(self, d, 1, "mode_cpu", [](auto& q) {
        // std::sort under the plain `<` (a NaN equals nothing: each is a run of its own), then
        // the first of the longest runs wins, with the index its last element carries
        std::sort(q.begin(), q.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        const int64_t n = static_cast<int64_t>(q.size());
        int64_t run = 0, longest = 0, at = 0;
        for (int64_t i = 0; i < n; ++i) {
            ++run;
            if (i == n - 1 || q[static_cast<size_t>(i)].first != q[static_cast<size_t>(i + 1)].first) {
                if (run > longest) {
                    longest = run;
                    at = i;
                }
                run = 0;
            }
        }
        return at;
    });
}

std::tuple<Tensor, Tensor> median_along(const Tensor& self, int64_t d, bool ignore_nan) {
    return pick_lanes(self, d, 1, ignore_nan ? "nanmedian" : "median", [ignore_nan](auto& q) {
        const int64_t n = static_cast<int64_t>(q.size());
        int64_t nans = 0;
        for (int64_t i = 0; i < n; ++i) {
            if (is_nan_key(q[static_cast<size_t>(i)].first)) {
                if (!ignore_nan) return i;  // median: the first NaN
                ++nans;
            }
        }
        // std::nth_element under "value, then index" (NaN greatest and all alike for
        // nanmedian): a total order but among the NaNs of an all-NaN row, whose index is
        // where nth_element leaves the first of n equal elements
        const int64_t nth = (n - nans - 1) / 2;
        std::nth_element(q.begin(), q.begin() + nth, q.end(), [](const auto& a, const auto& b) {
            return a.first < b.first || (a.first == b.first && a.second < b.second) ||
                   (is_nan_key(b.first) && !is_nan_key(a.first));
        });
        return nth;
    });
}

}  // namespace native

std::tuple<Tensor, Tensor> sort(const Tensor& self, std::optional<bool> stable, int64_t dim, bool descending) {
    const int64_t d = wrap_dim(dim, self.dim());
    if (self.dim() == 0) {
        NoGradGuard g;
        return {self.clone(), zeros({}, kLong)};
    }
    const int64_t n = self.size(d);
    // PyTorch keeps the identity along a dim of stride 0 (pytorch issue 91420); its radix sort
    // is stable, as is std::sort along 16 elements or fewer (one insertion sort)
    const bool identity = self.stride(d) == 0;
    const bool radix = self.dim() == 1 && !descending && is_integral(self.scalar_type(), false) && n >= kRadixSortMin;
    const bool keep_ties = stable.value_or(false) || radix;
    auto [values, indices] = pick_lanes(self, d, n, "sort", [&](auto& q) {
        if (identity) return int64_t(0);
        if (descending) {
            if (keep_ties) std::stable_sort(q.begin(), q.end(), DescNanFirst());
            else std::sort(q.begin(), q.end(), DescNanFirst());
        } else {
            if (keep_ties) std::stable_sort(q.begin(), q.end(), AscNanLast());
            else std::sort(q.begin(), q.end(), AscNanLast());
        }
        return int64_t(0);
    });
    record_sort(self, values, indices, d, "SortBackward0");
    return {values, indices};
}

std::tuple<Tensor, Tensor> sort(const Tensor& self, int64_t dim, bool descending) {
    return ember::sort(self, std::nullopt, dim, descending);
}

Tensor argsort(const Tensor& self, int64_t dim, bool descending) { return std::get<1>(ember::sort(self, dim, descending)); }

std::tuple<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted) {
    const int64_t d = wrap_dim(dim, self.dim());
    const int64_t len = self.dim() == 0 ? 1 : self.size(d);
    EMBER_CHECK_INDEX(k >= 0 && k <= len, "selected index k out of range");
    EMBER_CHECK(self.scalar_type() != kBool, "topk does not support bool dtypes on CPU");
    if (self.dim() == 0) {
        NoGradGuard g;
        return {self.clone(), zeros({}, kLong)};
    }
    // TopKImpl.h: std::partial_sort where k * 64 <= n, else std::nth_element at k - 1 and, if
    // sorted, std::sort of the k - 1 before it
    const auto select = [k, sorted](auto& q, auto cmp) {
        if (k == 0) return;
        if (k * 64 <= static_cast<int64_t>(q.size())) {
            std::partial_sort(q.begin(), q.begin() + k, q.end(), cmp);
        } else {
            std::nth_element(q.begin(), q.begin() + (k - 1), q.end(), cmp);
            if (sorted) std::sort(q.begin(), q.begin() + (k - 1), cmp);
        }
    };
    auto [values, indices] = pick_lanes(self, d, k, "topk", [&](auto& q) {
        if (largest) select(q, DescNanFirst());
        else select(q, AscNanLast());
        return int64_t(0);
    });
    record_sort(self, values, indices, d, "TopkBackward0");
    return {values, indices};
}

// ---- kthvalue / mode / median: one element of each lane, PyTorch's among tied ones ----------------------------
namespace {

void check_pick(const Tensor& self, int64_t d, const char* name) {
    if (self.dim() > 0 && self.size(d) == 0) {
        throw IndexError(std::string(name) + "(): Expected reduction dim " + std::to_string(d) +
                         " to have non-zero size.");
    }
}

// (values, indices) of a pick (size 1 at d) as the op returns them: dim d dropped unless keepdim
// (fresh tensors, not views of the kept ones), values recorded as `node`, whose gradient goes
// to the picked element (PyTorch's value_selecting_reduction_backward)
std::tuple<Tensor, Tensor> finish_pick(const Tensor& self, std::tuple<Tensor, Tensor> picked, int64_t d, bool keepdim,
                                       const char* node) {
    auto [values, indices] = std::move(picked);
    if (!keepdim && self.dim() > 0) {
        NoGradGuard g;
        values = values.squeeze(d).clone();
        indices = indices.squeeze(d).clone();
    }
    if (auto n = make_node(node, {self})) {
        set_history(values, n, 0);
        n->save(indices);
        const auto s0 = self.sizes().vec();
        const bool squeezed = !keepdim;
        n->set_formula([d, s0, squeezed](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            if (s0.empty()) return {g[0]};
            Tensor gi = g[0], idx = node.saved(0);
            if (squeezed) {
                gi = gi.unsqueeze(d);
                idx = idx.unsqueeze(d);
            }
            return {zeros(s0, gi.scalar_type()).scatter(d, idx, gi)};
        });
    }
    return {values, indices};
}

void refuse_bool(const Tensor& self, const char* kernel) {
    if (self.scalar_type() == kBool) throw NotImplementedError(std::string("\"") + kernel + "\" not implemented for 'Bool'");
}

// median() / nanmedian() of every element: the lower median (median: NaN where there is one;
// nanmedian: of the non-NaN elements), its gradient shared among the elements equal to it
// (PyTorch's evenly_distribute_backward)
Tensor full_median(const Tensor& self, bool ignore_nan, const char* node) {
    refuse_bool(self, "median_cpu");
    Tensor value;
    {
        NoGradGuard g;
        const Tensor flat = self.reshape({-1});
        if (flat.numel() == 0) {
            value = self.is_floating_point() || !ignore_nan
                        ? scalar_tensor(std::numeric_limits<double>::quiet_NaN(), self.scalar_type())
                        : scalar_tensor(std::numeric_limits<int64_t>::min(), self.scalar_type());
        } else {
            value = std::get<0>(native::median_along(flat, 0, ignore_nan)).reshape({}).clone();
        }
    }
    if (auto n = make_node(node, {self})) {
        set_history(value, n, 0);
        n->save(self);
        n->save(value.detach());  // its value only: the output itself would be a cycle (a leak)
        n->set_formula([](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            const Tensor x = node.saved(0), v = node.saved(1);
            const bool nan = x.is_floating_point() && v.isnan().item<bool>();
            const Tensor mask = (nan ? x.isnan() : ember::eq(x, v)).to(g[0].scalar_type());
            return {mask * (g[0] / mask.sum())};
        });
    }
    return value;
}

}  // namespace

std::tuple<Tensor, Tensor> kthvalue(const Tensor& self, int64_t k, int64_t dim, bool keepdim) {
    const int64_t d = wrap_dim(dim, self.dim());
    check_pick(self, d, "kthvalue");
    const int64_t n = self.dim() == 0 ? 1 : self.size(d);
    if (k < 1 || k > n) throw Error("kthvalue(): selected number k out of range for dimension " + std::to_string(d));
    refuse_bool(self, "kthvalue_cpu");
    return finish_pick(self, native::kthvalue_along(self, k, d), d, keepdim, "KthvalueBackward0");
}

std::tuple<Tensor, Tensor> mode(const Tensor& self, int64_t dim, bool keepdim) {
    const int64_t d = wrap_dim(dim, self.dim());
    check_pick(self, d, "mode");
    return finish_pick(self, native::mode_along(self, d), d, keepdim, "ModeBackward0");
}

Tensor median(const Tensor& self) { return full_median(self, false, "MedianBackward0"); }

std::tuple<Tensor, Tensor> median(const Tensor& self, int64_t dim, bool keepdim) {
    const int64_t d = wrap_dim(dim, self.dim());
    refuse_bool(self, "median_out");
    check_pick(self, d, "median");
    return finish_pick(self, native::median_along(self, d, false), d, keepdim, "MedianBackward1");
}

Tensor nanmedian(const Tensor& self) { return full_median(self, true, "NanmedianBackward0"); }

std::tuple<Tensor, Tensor> nanmedian(const Tensor& self, int64_t dim, bool keepdim) {
    const int64_t d = wrap_dim(dim, self.dim());
    refuse_bool(self, "median_out");
    check_pick(self, d, "nanmedian");
    return finish_pick(self, native::median_along(self, d, true), d, keepdim, "NanmedianBackward1");
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
std::tuple<Tensor, Tensor> Tensor::kthvalue(int64_t k, int64_t dim, bool keepdim) const {
    return ember::kthvalue(*this, k, dim, keepdim);
}
std::tuple<Tensor, Tensor> Tensor::mode(int64_t dim, bool keepdim) const { return ember::mode(*this, dim, keepdim); }
Tensor Tensor::median() const { return ember::median(*this); }
std::tuple<Tensor, Tensor> Tensor::median(int64_t dim, bool keepdim) const { return ember::median(*this, dim, keepdim); }
Tensor Tensor::nanmedian() const { return ember::nanmedian(*this); }
std::tuple<Tensor, Tensor> Tensor::nanmedian(int64_t dim, bool keepdim) const {
    return ember::nanmedian(*this, dim, keepdim);
}
std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending) const { return ember::sort(*this, dim, descending); }
Tensor Tensor::argsort(int64_t dim, bool descending) const { return ember::argsort(*this, dim, descending); }

}  // namespace ember
