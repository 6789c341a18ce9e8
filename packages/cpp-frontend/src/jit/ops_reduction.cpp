// Reductions of the C++ op table: sums and means, extrema, statistics, norms, softmax,
// sorting.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ember/error.h"
#include "ember/nn/functional.h"
#include "jit/ops_common.h"

namespace ember::jit::detail {

namespace {

// sort's and argsort's `stable` (None: false)
std::optional<bool> stable_of(const Args& a) {
    if (a.is_none("stable")) return std::nullopt;
    return a.boolean("stable");
}

// var/std's two spellings: var(x, True) is the old (input, unbiased) overload; correction
// defaults to 1 (0 when unbiased is False).
std::pair<OptionalIntArrayRef, std::optional<Scalar>> correction_of(const Args& a, std::vector<int64_t>& dims) {
    bool has_dim = !a.is_none("dim");
    std::optional<bool> unbiased;
    if (a["dim"].kind == Value::Kind::Bool) {
        unbiased = a["dim"].b;
        has_dim = false;
    }
    if (!a.is_none("unbiased")) unbiased = a.boolean("unbiased");
    if (unbiased && !a.is_none("correction")) {
        throw TypeError(a.op() + "() received an invalid combination of arguments - got both 'unbiased' and "
                        "'correction'");
    }
    Scalar correction = a.is_none("correction") ? Scalar(int64_t(unbiased.value_or(true) ? 1 : 0))
                                                : a.scalar("correction");
    if (has_dim) dims = a.ints("dim");
    OptionalIntArrayRef dim_ref;
    if (has_dim) dim_ref = IntArrayRef(dims);
    return {dim_ref, correction};
}

// A running scan along `dim` (cumprod, cummax, logcumsumexp): each row of the input (the dim
// moved last, contiguous) goes through `scan(in, out, n)` in the accumulator type T; the
// result has `out_type`.
template <typename T, typename Scan>
Tensor scan_along(const Tensor& x, int64_t dim, ScalarType acc, ScalarType out_type, const std::string& op, Scan scan) {
    const int64_t d = dim_index(dim, x.dim(), op);
    if (x.dim() == 0) return scan_along<T>(x.reshape({1}), 0, acc, out_type, op, scan).reshape({});
    const Tensor rows = x.transpose(d, -1).to(acc).contiguous();
    Tensor out = ember::empty(rows.sizes(), acc);
    const int64_t n = rows.size(-1);
    const T* in = rows.data_ptr<T>();
    T* o = out.data_ptr<T>();
    if (n > 0) {
        for (int64_t r = 0, m = rows.numel() / n; r < m; ++r) scan(in + r * n, o + r * n, n);
    }
    return out.transpose(d, -1).to(out_type).contiguous();
}

// cummax / cummin: (values, indices); an index moves to every element equal to the running
// value (ties: the last one), NaN propagates.
OpResult cum_extreme(const Tensor& x, int64_t dim, bool max, const std::string& op) {
    // out[i] = the running value; with `index`, the position of its last occurrence instead
    auto run = [max](const double* in, double* o, int64_t n, bool index) {
        double cur = in[0];
        int64_t at = 0;
        for (int64_t i = 0; i < n; ++i) {
            const double v = in[i];
            if (i > 0 && !std::isnan(cur) && (std::isnan(v) || (max ? v > cur : v < cur))) cur = v;
            if (v == cur || (std::isnan(v) && std::isnan(cur))) at = i;
            o[i] = index ? static_cast<double>(at) : cur;
        }
    };
    Tensor values = scan_along<double>(x, dim, kDouble, x.scalar_type(), op,
                                       [&](const double* in, double* o, int64_t n) { run(in, o, n, false); });
    Tensor indices = scan_along<double>(x, dim, kDouble, kLong, op,
                                        [&](const double* in, double* o, int64_t n) { run(in, o, n, true); });
    return {values, indices};
}

// softmax(x) without dim: PyTorch's legacy choice (0 for 0-, 1- and 3-d inputs, else 1).
int64_t softmax_dim(const Args& a) {
    if (!a.is_none("dim")) return a.integer("dim");
    int64_t ndim = a.tensor("input").dim();
    return ndim == 0 || ndim == 1 || ndim == 3 ? 0 : 1;
}

// A reduction over several dims by one dim at a time, the last first (so that, without
// keepdim, the others keep their positions).
template <typename Reduce>
Tensor reduce_each_dim(Tensor x, std::vector<int64_t> dims, bool keepdim, const std::string& op, Reduce reduce) {
    const int64_t n = std::max<int64_t>(x.dim(), 1);
    for (auto& d : dims) {
        if (d < -n || d >= n) {
            throw IndexError(op + "(): Dimension out of range (expected to be in range of [" + std::to_string(-n) + ", " +
                             std::to_string(n - 1) + "], but got " + std::to_string(d) + ")");
        }
        if (d < 0) d += n;
    }
    std::sort(dims.rbegin(), dims.rend());
    for (int64_t d : dims) x = reduce(x, d, keepdim);
    return x;
}

void def_sum_like(OpTable& t, const char* name, Tensor (*all)(const Tensor&, std::optional<ScalarType>),
                  Tensor (*over)(const Tensor&, IntArrayRef, bool, std::optional<ScalarType>)) {
    def(t, name, "input, dim=None, keepdim=False, *, dtype=None", [all, over](const Args& a) {
        Tensor x = a.tensor("input");
        if (a.is_none("dim")) {
            Tensor r = all(x, a.dtype("dtype"));
            return one(a.boolean("keepdim") ? r.reshape(std::vector<int64_t>(static_cast<std::size_t>(x.dim()), 1)) : r);
        }
        return one(over(x, a.ints("dim"), a.boolean("keepdim"), a.dtype("dtype")));
    });
}

Tensor sum_all(const Tensor& x, std::optional<ScalarType> d) { return ember::sum(x, d); }
Tensor sum_over(const Tensor& x, IntArrayRef dim, bool keepdim, std::optional<ScalarType> d) {
    return ember::sum(x, dim, keepdim, d);
}
Tensor mean_all(const Tensor& x, std::optional<ScalarType> d) { return ember::mean(x, d); }
Tensor mean_over(const Tensor& x, IntArrayRef dim, bool keepdim, std::optional<ScalarType> d) {
    return ember::mean(x, dim, keepdim, d);
}

// max/min: over everything, (values, indices) over a dim, or elementwise against a tensor.
void def_extremum(OpTable& t, const char* name, bool is_max) {
    def(t, name, "input, dim=None, keepdim=False, *, other=None", [is_max](const Args& a) -> OpResult {
        Tensor x = a.tensor("input");
        Tensor other;
        if (a["dim"].is_tensor()) other = a.tensor("dim");
        else if (!a.is_none("other")) other = a.tensor("other");
        if (other.defined()) return one(is_max ? ember::maximum(x, other) : ember::minimum(x, other));
        if (a.is_none("dim")) return one(is_max ? ember::max(x) : ember::min(x));
        auto [values, indices] = is_max ? ember::max(x, a.integer("dim"), a.boolean("keepdim"))
                                        : ember::min(x, a.integer("dim"), a.boolean("keepdim"));
        return {values, indices};
    });
}

}  // namespace

void register_reduction_ops(OpTable& t) {
    def_sum_like(t, "sum", &sum_all, &sum_over);
    def_sum_like(t, "mean", &mean_all, &mean_over);
    def(t, "prod", "input, dim=None, keepdim=False, *, dtype=None", [](const Args& a) {
        Tensor x = a.tensor("input");
        if (a.is_none("dim")) return one(ember::prod(x, a.dtype("dtype")));
        return one(ember::prod(x, a.integer("dim"), a.boolean("keepdim"), a.dtype("dtype")));
    });
    def(t, "amax", "input, dim=(), keepdim=False", [](const Args& a) {
        return one(ember::amax(a.tensor("input"), dims_of(a, "dim"), a.boolean("keepdim")));
    });
    def(t, "amin", "input, dim=(), keepdim=False", [](const Args& a) {
        return one(ember::amin(a.tensor("input"), dims_of(a, "dim"), a.boolean("keepdim")));
    });
    def_extremum(t, "max", true);
    def_extremum(t, "min", false);
    def(t, "argmax", "input, dim=None, keepdim=False", [](const Args& a) {
        return one(ember::argmax(a.tensor("input"), a.optional_integer("dim"), a.boolean("keepdim")));
    });
    def(t, "argmin", "input, dim=None, keepdim=False", [](const Args& a) {
        return one(ember::argmin(a.tensor("input"), a.optional_integer("dim"), a.boolean("keepdim")));
    });
    const char* var_signature = "input, dim=None, unbiased=None, keepdim=False, *, correction=None";
    def(t, "var", var_signature, [](const Args& a) {
        std::vector<int64_t> dims;
        auto [dim, correction] = correction_of(a, dims);
        return one(ember::var(a.tensor("input"), dim, correction, a.boolean("keepdim")));
    });
    def(t, "std", var_signature, [](const Args& a) {
        std::vector<int64_t> dims;
        auto [dim, correction] = correction_of(a, dims);
        return one(ember::std(a.tensor("input"), dim, correction, a.boolean("keepdim")));
    });
    def(t, "var_mean", var_signature, [](const Args& a) -> OpResult {
        std::vector<int64_t> dims;
        auto [dim, correction] = correction_of(a, dims);
        Tensor x = a.tensor("input");
        Tensor mean = dim ? ember::mean(x, *dim, a.boolean("keepdim")) : ember::mean(x);
        if (!dim && a.boolean("keepdim")) mean = mean.reshape(std::vector<int64_t>(static_cast<std::size_t>(x.dim()), 1));
        return {ember::var(x, dim, correction, a.boolean("keepdim")), mean};
    });
    def(t, "std_mean", var_signature, [](const Args& a) -> OpResult {
        std::vector<int64_t> dims;
        auto [dim, correction] = correction_of(a, dims);
        Tensor x = a.tensor("input");
        Tensor mean = dim ? ember::mean(x, *dim, a.boolean("keepdim")) : ember::mean(x);
        if (!dim && a.boolean("keepdim")) mean = mean.reshape(std::vector<int64_t>(static_cast<std::size_t>(x.dim()), 1));
        return {ember::std(x, dim, correction, a.boolean("keepdim")), mean};
    });
    def(t, "norm", "input, p='fro', dim=None, keepdim=False, out=None, dtype=None", [](const Args& a) {
        Tensor x = a.tensor("input");
        if (a.dtype("dtype")) x = x.to(*a.dtype("dtype"));
        std::optional<Scalar> p;
        const Value& pv = a["p"];
        if (pv.kind == Value::Kind::String) {
            if (pv.s != "fro") {
                throw NotImplementedError(a.op() + "(): p='" + pv.s + "' is not supported by Ember's C++ frontend "
                                          "(supported: 'fro' and numbers)");
            }
            p = Scalar(2.0);
        } else if (!pv.is_none()) {
            p = a.scalar("p");
        } else {
            p = Scalar(2.0);
        }
        Tensor r;
        if (!a.is_none("dim")) {
            r = ember::norm(x, p, a.ints("dim"), a.boolean("keepdim"));
        } else if (a.boolean("keepdim")) {
            std::vector<int64_t> all(static_cast<std::size_t>(x.dim()));
            for (int64_t d = 0; d < x.dim(); ++d) all[static_cast<std::size_t>(d)] = d;
            r = ember::norm(x, p, all, true);
        } else {
            r = ember::norm(x, *p);
        }
        return one(to_out(a, r));
    });
    def(t, "all", "input, dim=None, keepdim=False", [](const Args& a) {
        Tensor x = a.tensor("input");
        if (a.is_none("dim")) return one(ember::all(x));
        return one(reduce_each_dim(x, a.ints("dim"), a.boolean("keepdim"), a.op(),
                                   [](const Tensor& t, int64_t d, bool k) { return ember::all(t, d, k); }));
    });
    def(t, "any", "input, dim=None, keepdim=False", [](const Args& a) {
        Tensor x = a.tensor("input");
        if (a.is_none("dim")) return one(ember::any(x));
        return one(reduce_each_dim(x, a.ints("dim"), a.boolean("keepdim"), a.op(),
                                   [](const Tensor& t, int64_t d, bool k) { return ember::any(t, d, k); }));
    });
    def(t, "logsumexp", "input, dim, keepdim=False", [](const Args& a) {
        return one(ember::logsumexp(a.tensor("input"), a.ints("dim"), a.boolean("keepdim")));
    });
    def(t, "cumsum", "input, dim, *, dtype=None", [](const Args& a) {
        return one(ember::cumsum(a.tensor("input"), a.integer("dim"), a.dtype("dtype")));
    });
    def(t, "count_nonzero", "input, dim=None", [](const Args& a) {
        Tensor nz = a.tensor("input") != 0;
        if (a.is_none("dim")) return one(ember::sum(nz));
        return one(ember::sum(nz, a.ints("dim")));
    });
    // torch.softmax / Tensor.softmax take ATen's (input, dim, dtype); F's own functions
    // (recorded as nn.functional.*) take (input, dim=None, _stacklevel=3, dtype=None)
    const char* functional_signature = "input, dim=None, _stacklevel=3, dtype=None";
    def(t, "softmax", "input, dim, dtype=None", [](const Args& a) {
        return one(ember::softmax(a.tensor("input"), a.integer("dim"), a.dtype("dtype")));
    });
    def(t, "log_softmax", "input, dim, dtype=None", [](const Args& a) {
        return one(ember::log_softmax(a.tensor("input"), a.integer("dim"), a.dtype("dtype")));
    });
    def(t, "nn.functional.softmax", functional_signature, [](const Args& a) {
        return one(ember::softmax(a.tensor("input"), softmax_dim(a), a.dtype("dtype")));
    });
    def(t, "nn.functional.log_softmax", functional_signature, [](const Args& a) {
        return one(ember::log_softmax(a.tensor("input"), softmax_dim(a), a.dtype("dtype")));
    });
    def(t, "softmin", functional_signature, [](const Args& a) {
        Tensor x = a.tensor("input");
        if (a.dtype("dtype")) x = x.to(*a.dtype("dtype"));
        return one(ember::softmax(-x, softmax_dim(a)));
    });
    alias(t, "nn.functional.softmin", "softmin");

    // ---- scans
    def(t, "cumprod", "input, dim, *, dtype=None", [](const Args& a) {
        Tensor x = a.tensor("input");
        std::optional<ScalarType> dtype = a.dtype("dtype");
        if (dtype) x = x.to(*dtype);
        const std::string& op = a.op();
        if (!x.is_floating_point()) {
            return one(scan_along<int64_t>(x, a.integer("dim"), kLong, kLong, op, [](const int64_t* in, int64_t* o, int64_t n) {
                int64_t acc = 1;
                for (int64_t i = 0; i < n; ++i) o[i] = acc *= in[i];
            }));
        }
        return one(scan_along<double>(x, a.integer("dim"), kDouble, x.scalar_type(), op, [](const double* in, double* o, int64_t n) {
            double acc = 1;
            for (int64_t i = 0; i < n; ++i) o[i] = acc *= in[i];
        }));
    });
    def_inplace_by_copy(t, "cumprod");
    def(t, "cummax", "input, dim", [](const Args& a) { return cum_extreme(a.tensor("input"), a.integer("dim"), true, a.op()); });
    def(t, "cummin", "input, dim", [](const Args& a) { return cum_extreme(a.tensor("input"), a.integer("dim"), false, a.op()); });
    def(t, "logcumsumexp", "input, dim", [](const Args& a) {
        Tensor x = a.tensor("input");
        if (!x.is_floating_point()) {
            throw NotImplementedError("\"logcumsumexp_out_cpu\" not implemented for '" +
                                      std::string(scalar_type_name(x.scalar_type())) + "'");
        }
        return one(scan_along<double>(x, a.integer("dim"), kDouble, x.scalar_type(), a.op(), [](const double* in, double* o, int64_t n) {
            double acc = -std::numeric_limits<double>::infinity();
            for (int64_t i = 0; i < n; ++i) {
                const double v = in[i];
                const double hi = std::max(acc, v);
                acc = std::isinf(hi) && hi < 0 ? hi : (std::isnan(v) ? v : hi + std::log(std::exp(acc - hi) + std::exp(v - hi)));
                o[i] = acc;
            }
        }));
    });

    // ---- NaN-ignoring reductions, aminmax, order statistics
    def(t, "nansum", "input, dim=None, keepdim=False, *, dtype=None", [](const Args& a) {
        Tensor x = a.tensor("input");
        if (x.is_floating_point()) x = ember::where(ember::isnan(x), scalar_tensor(0, x.scalar_type()), x);
        if (a.is_none("dim")) {
            Tensor r = ember::sum(x, a.dtype("dtype"));
            return one(a.boolean("keepdim") ? r.reshape(std::vector<int64_t>(static_cast<std::size_t>(x.dim()), 1)) : r);
        }
        return one(ember::sum(x, dims_of(a, "dim"), a.boolean("keepdim"), a.dtype("dtype")));
    });
    def(t, "nanmean", "input, dim=None, keepdim=False, *, dtype=None", [](const Args& a) {
        Tensor x = a.tensor("input");
        std::optional<ScalarType> dtype = a.dtype("dtype");
        if (dtype) x = x.to(*dtype);
        if (!x.is_floating_point()) {
            throw Error("nanmean(): expected input to have floating point or complex dtype but got " +
                        std::string(scalar_type_name(x.scalar_type())));
        }
        Tensor keep = ember::logical_not(ember::isnan(x));
        Tensor zeroed = ember::where(keep, x, scalar_tensor(0, x.scalar_type()));
        std::vector<int64_t> dims = dims_of(a, "dim");
        if (dims.empty()) for (int64_t d = 0; d < x.dim(); ++d) dims.push_back(d);
        const bool keepdim = a.boolean("keepdim");
        return one(ember::sum(zeroed, dims, keepdim) / ember::sum(keep, dims, keepdim).to(x.scalar_type()));
    });
    def(t, "aminmax", "input, *, dim=None, keepdim=False", [](const Args& a) -> OpResult {
        Tensor x = a.tensor("input");
        const bool keepdim = a.boolean("keepdim");
        if (a.is_none("dim")) {
            Tensor lo = ember::amin(x), hi = ember::amax(x);
            if (keepdim) {
                std::vector<int64_t> ones(static_cast<std::size_t>(x.dim()), 1);
                return {lo.reshape(ones), hi.reshape(ones)};
            }
            return {lo, hi};
        }
        std::vector<int64_t> dim{a.integer("dim")};
        return {ember::amin(x, dim, keepdim), ember::amax(x, dim, keepdim)};
    });
    def(t, "msort", "input", [](const Args& a) { return one(std::get<0>(ember::sort(a.tensor("input"), 0))); });
    def(t, "kthvalue", "input, k, dim=-1, keepdim=False", [](const Args& a) -> OpResult {
        Tensor x = a.tensor("input");
        const int64_t d = dim_index(a.integer("dim"), x.dim(), a.op());
        const int64_t k = a.integer("k");
        auto [values, indices] = ember::kthvalue(x, k, d, a.boolean("keepdim"));  // its checks
        return {values, indices};
    });
    def(t, "median", "input, dim=None, keepdim=False", [](const Args& a) -> OpResult {
        Tensor x = a.tensor("input");
        if (x.scalar_type() == kBool) {
            throw NotImplementedError(std::string("\"") + (a.is_none("dim") ? "median_cpu" : "median_out") +
                                      "\" not implemented for 'Bool'");
        }
        if (a.is_none("dim")) return {ember::median(x)};
        const int64_t d = dim_index(a.integer("dim"), x.dim(), a.op());
        auto [values, indices] = ember::median(x, d, a.boolean("keepdim"));
        return {values, indices};
    });

    // ---- sorting (ties as PyTorch's CPU std::sort leaves them unless stable=True)
    def(t, "sort", "input, dim=-1, descending=False, stable=False", [](const Args& a) -> OpResult {
        auto [values, indices] = ember::sort(a.tensor("input"), stable_of(a), a.integer("dim"), a.boolean("descending"));
        return {values, indices};
    });
    def(t, "argsort", "input, dim=-1, descending=False, stable=False", [](const Args& a) {
        return one(std::get<1>(ember::sort(a.tensor("input"), stable_of(a), a.integer("dim"), a.boolean("descending"))));
    });
    def(t, "topk", "input, k, dim=-1, largest=True, sorted=True", [](const Args& a) -> OpResult {
        auto [values, indices] =
            ember::topk(a.tensor("input"), a.integer("k"), a.integer("dim"), a.boolean("largest"), a.boolean("sorted"));
        return {values, indices};
    });

    // ---- searching and membership
    // the insertion points of `values` into each row of `sorted` (1-D: one row for all)
    auto search = [](const Tensor& sorted, const Tensor& values, bool right, bool int32) {
        const Tensor seq = sorted.to(kDouble).contiguous();
        const Tensor v = values.to(kDouble).contiguous();
        const int64_t n = seq.dim() == 0 ? 1 : seq.size(-1);
        const bool one_row = seq.dim() <= 1;
        if (!one_row && (seq.dim() != v.dim() || seq.numel() / n != (v.dim() ? v.numel() / v.size(-1) : 1))) {
            throw Error("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of "
                        "boundaries tensor and input value tensor must match");
        }
        Tensor out = ember::empty(v.sizes(), kLong);
        const double* s = seq.data_ptr<double>();
        const double* pv = v.data_ptr<double>();
        int64_t* o = out.data_ptr<int64_t>();
        const int64_t per_row = v.dim() == 0 ? 1 : v.size(-1);
        for (int64_t i = 0; i < v.numel(); ++i) {
            const double* row = one_row ? s : s + (i / per_row) * n;
            const double* at = right ? std::upper_bound(row, row + n, pv[i]) : std::lower_bound(row, row + n, pv[i]);
            o[i] = at - row;
        }
        return int32 ? out.to(kInt) : out;
    };
    def(t, "bucketize", "input, boundaries, *, out_int32=False, right=False, out=None", [search](const Args& a) {
        Tensor b = a.tensor("boundaries");
        if (b.dim() != 1) throw Error("boundaries tensor must be 1 dimension, but got dim(" + std::to_string(b.dim()) + ")");
        Tensor x = a["input"].is_tensor() ? a.tensor("input") : scalar_tensor(a.scalar("input"));
        return one(to_out(a, search(b, x, a.boolean("right"), a.boolean("out_int32"))));
    });
    def(t, "searchsorted", "sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None, out=None",
        [search](const Args& a) {
            Tensor seq = a.tensor("sorted_sequence");
            if (!a.is_none("sorter")) seq = ember::gather(seq, -1, a.tensor("sorter"));
            bool right = a.boolean("right");
            if (!a.is_none("side")) {
                const std::string side = a.string("side");
                if (side != "left" && side != "right") throw Error("torch.searchsorted(): side can only be 'left' or 'right' but got " + side);
                if (right && side == "left") {
                    throw Error("torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True");
                }
                right = side == "right";
            }
            Tensor x = a["input"].is_tensor() ? a.tensor("input") : scalar_tensor(a.scalar("input"));
            return one(to_out(a, search(seq, x, right, a.boolean("out_int32"))));
        });
    def(t, "isin", "elements, test_elements, *, assume_unique=False, invert=False", [](const Args& a) {
        Tensor x = a["elements"].is_tensor() ? a.tensor("elements") : scalar_tensor(a.scalar("elements"));
        Tensor test = a["test_elements"].is_tensor() ? a.tensor("test_elements") : scalar_tensor(a.scalar("test_elements"));
        Tensor flat = test.to(kDouble).contiguous().reshape({-1});
        std::vector<double> sorted(flat.data_ptr<double>(), flat.data_ptr<double>() + flat.numel());
        std::sort(sorted.begin(), sorted.end());
        const bool invert = a.boolean("invert");
        const Tensor v = x.to(kDouble).contiguous();
        Tensor out = ember::empty(v.sizes(), kBool);
        const double* pv = v.data_ptr<double>();
        bool* o = out.data_ptr<bool>();
        for (int64_t i = 0; i < v.numel(); ++i) o[i] = std::binary_search(sorted.begin(), sorted.end(), pv[i]) != invert;
        return one(out);
    });
    def(t, "mode", "input, dim=-1, keepdim=False", [](const Args& a) -> OpResult {
        // the most frequent value of each row (the smallest of equally frequent ones) and the
        // index PyTorch's CPU kernel gives it (ember::mode)
        Tensor x = a.tensor("input");
        const int64_t d = dim_index(a.integer("dim"), x.dim(), a.op());
        auto [values, indices] = ember::mode(x, d, a.boolean("keepdim"));
        return {values, indices};
    });
}

}  // namespace ember::jit::detail
