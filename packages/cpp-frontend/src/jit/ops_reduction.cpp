// Reductions of the C++ op table: sums and means, extrema, statistics, norms, softmax,
// sorting.
#include <algorithm>

#include "ember/error.h"
#include "ember/nn/functional.h"
#include "jit/ops_common.h"

namespace ember::jit::detail {

namespace {

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
    const char* softmax_signature = "input, dim=None, _stacklevel=3, dtype=None";
    def(t, "softmax", softmax_signature, [](const Args& a) {
        return one(ember::softmax(a.tensor("input"), softmax_dim(a), a.dtype("dtype")));
    });
    def(t, "log_softmax", softmax_signature, [](const Args& a) {
        return one(ember::log_softmax(a.tensor("input"), softmax_dim(a), a.dtype("dtype")));
    });
    def(t, "softmin", softmax_signature, [](const Args& a) {
        Tensor x = a.tensor("input");
        if (a.dtype("dtype")) x = x.to(*a.dtype("dtype"));
        return one(ember::softmax(-x, softmax_dim(a)));
    });
    for (const char* name : {"softmax", "log_softmax", "softmin"}) alias(t, std::string("nn.functional.") + name, name);

    // ---- sorting (Ember's sort is always stable)
    def(t, "sort", "input, dim=-1, descending=False, stable=False", [](const Args& a) -> OpResult {
        auto [values, indices] = ember::sort(a.tensor("input"), a.integer("dim"), a.boolean("descending"));
        return {values, indices};
    });
    def(t, "argsort", "input, dim=-1, descending=False, stable=False", [](const Args& a) {
        return one(ember::argsort(a.tensor("input"), a.integer("dim"), a.boolean("descending")));
    });
    def(t, "topk", "input, k, dim=-1, largest=True, sorted=True", [](const Args& a) -> OpResult {
        auto [values, indices] =
            ember::topk(a.tensor("input"), a.integer("k"), a.integer("dim"), a.boolean("largest"), a.boolean("sorted"));
        return {values, indices};
    });
}

}  // namespace ember::jit::detail
