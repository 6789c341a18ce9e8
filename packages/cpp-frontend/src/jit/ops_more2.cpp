// Issue 14's second batch of the C++ op table, part 1: the in-place views (Tensor.t_,
// transpose_, squeeze_, unsqueeze_, as_strided_: the tensor's own geometry changes, so every
// later use of it sees the view), small products and statistics (addbmm, addr, vdot,
// chain_matmul, cross, vander, dist, renorm, cov, corrcoef, the trapezoid rule), the window
// functions but kaiser's, threshold_backward and rrelu, the remaining losses (Gaussian and
// Poisson NLL, multi-class and multi-label margins, triplet margin with a distance) and the
// distances and bags (cdist, pdist, embedding_bag, conv_tbc, bilinear).
//
// Each op is composed from the library's ops where Python Ember composes it (so autograd runs
// through it), or computed over contiguous copies where Python computes arrays; the results
// follow Python Ember's (ember/ops/*.py), its errors in PyTorch's words.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <sstream>

#include "ember/autograd.h"
#include "ember/error.h"
#include "jit/ops_common.h"

namespace ember::jit::detail {

namespace {

// ------------------------------------------------------------------------- in-place views

// self takes `view`'s geometry (a view of its own storage): the in-place view ops. Autograd
// would have to rebase self's history on the view: refused where it records one.
OpResult become(const Tensor& self, const Tensor& view) {
    if (GradMode::is_enabled() && self.requires_grad()) {
        throw NotImplementedError("in-place view ops (t_, transpose_, squeeze_, unsqueeze_, as_strided_) on a tensor that "
                                  "requires grad are not supported by Ember's C++ frontend");
    }
    auto s = view.sizes();
    auto st = view.strides();
    self.unsafeGetTensorImpl()->set_sizes_and_strides(Shape(s.begin(), s.end()), Shape(st.begin(), st.end()),
                                                      view.storage_offset());
    return one(self);
}

Tensor squeeze_dims(const Tensor& x, const Value& dim, const std::string& op) {
    if (dim.is_none()) return x.squeeze();
    std::vector<int64_t> dims = dim.is_sequence() ? to_ints(dim, op + "(): dim") : std::vector<int64_t>{to_int(dim, op)};
    Shape sizes, strides;
    std::vector<bool> drop(static_cast<std::size_t>(x.dim()), false);
    for (int64_t d : dims) {
        const int64_t w = dim_index(d, x.dim(), op);
        if (x.dim() > 0 && x.size(w) == 1) drop[static_cast<std::size_t>(w)] = true;
    }
    for (int64_t i = 0; i < x.dim(); ++i) {
        if (drop[static_cast<std::size_t>(i)]) continue;
        sizes.push_back(x.size(i));
        strides.push_back(x.stride(i));
    }
    return x.as_strided(sizes, strides, x.storage_offset());
}

// ------------------------------------------------------------------------- norms

// Python Ember's linalg.vector_norm over `dims` (all when empty), composed: sum(|x|^p)^(1/p),
// max / min |x| for +-inf, the count of nonzeros for 0.
Tensor vector_norm(const Tensor& x, double p, const Shape& dims, bool keepdim) {
    Tensor ax = ember::abs(x);
    if (std::isinf(p)) return p > 0 ? ember::amax(ax, dims, keepdim) : ember::amin(ax, dims, keepdim);
    if (p == 0) return ember::sum((x != 0).to(x.scalar_type()) + x * 0, dims, keepdim);
    if (p == 1) return ember::sum(ax, dims, keepdim);
    if (p == 2) return ember::sqrt(ember::sum(x * x, dims, keepdim));
    return ember::pow(ember::sum(ember::pow(ax, p), dims, keepdim), 1.0 / p);
}

// ------------------------------------------------------------------------- losses

std::string reduction_name(const Args& a) {
    const Value& r = a["reduction"];
    if (r.kind == Value::Kind::Int) {
        if (r.i < 0 || r.i > 2) throw ValueError(std::to_string(r.i) + " is not a valid value for reduction");
        return r.i == 0 ? "none" : r.i == 1 ? "mean" : "sum";
    }
    const bool legacy = (a.has("size_average") && !a.is_none("size_average")) || (a.has("reduce") && !a.is_none("reduce"));
    if (!legacy) return a.string("reduction");
    const bool size_average = a.is_none("size_average") || a.boolean("size_average");
    const bool reduce = a.is_none("reduce") || a.boolean("reduce");
    if (!reduce) return "none";
    return size_average ? "mean" : "sum";
}

Tensor reduce_loss(const Tensor& loss, const std::string& reduction) {
    if (reduction == "mean") return ember::mean(loss);
    if (reduction == "sum") return ember::sum(loss);
    if (reduction == "none") return loss;
    throw ValueError(reduction + " is not a valid value for reduction");
}

Tensor poisson_nll(const Args& a, const std::string& reduction) {
    Tensor x = a.tensor("input"), y = a.tensor("target");
    Tensor loss = a.boolean("log_input") ? ember::exp(x) - y * x : x - y * ember::log(x + a.number("eps"));
    if (a.boolean("full")) {
        Tensor t = ember::clamp_min(y, 1);
        Tensor stirling = t * ember::log(t) - t + 0.5 * ember::log(2 * M_PI * t);
        loss = loss + ember::where(y > 1, stirling, Scalar(0));
    }
    return reduce_loss(loss, reduction);
}

Tensor gaussian_nll(const Args& a) {
    Tensor x = a.tensor("input"), y = a.tensor("target");
    Tensor var;
    const Value& v = a["var"];
    if (v.is_number()) {
        const double s = a.number("var");
        if (s < 0) throw ValueError("var has negative entry/entries");
        var = ember::full(shape_of(x), s, x.scalar_type());
    } else {
        var = a.tensor("var");
        if ((var < 0).any().item<bool>()) throw ValueError("var has negative entry/entries");
    }
    if (var.sizes() != x.sizes()) {
        Shape xs = shape_of(x), vs = shape_of(var);
        if (!xs.empty() && Shape(xs.begin(), xs.end() - 1) == vs) {
            var = var.unsqueeze(-1);
        } else {
            int64_t differing = 0;
            if (xs.size() == vs.size()) {
                for (std::size_t i = 0; i < xs.size(); ++i) {
                    if (xs[i] != vs[i]) differing += vs[i];
                }
            }
            if (xs.size() != vs.size() || differing != 1) throw ValueError("var is of incorrect size");
        }
    }
    const std::string reduction = a.string("reduction");
    if (reduction != "none" && reduction != "mean" && reduction != "sum") throw ValueError(reduction + " is not valid");
    var = ember::clamp_min(var.detach(), a.number("eps")) + (var - var.detach());  // clamped outside autograd
    Tensor diff = x - y;
    Tensor loss = (ember::log(var) + diff * diff / var) * 0.5;
    if (a.boolean("full")) loss = loss + 0.5 * std::log(2 * M_PI);
    return reduce_loss(loss, reduction);
}

Tensor multi_margin(const Args& a) {
    const std::string reduction = reduction_name(a);
    Tensor x = a.tensor("input"), target = a.tensor("target");
    const Value& pv = a["p"];
    const double p = a.number("p");
    if (!(pv.is_number() && (p == 1 || p == 2))) throw ValueError("only p == 1 and p == 2 supported");
    const int64_t C = x.dim() ? x.size(-1) : 0;
    if (x.dim() > 2 || x.dim() == 0 || C == 0) {
        throw Error("Expected non-empty vector or matrix with optional 0-dim batch size, but got: [" +
                    join_dims(shape_of(x)) + "]");
    }
    const int64_t n = x.dim() == 2 ? x.size(0) : 1;
    if (target.dim() > 1 || target.numel() != n) {
        throw Error("multi_margin_loss: target tensor should be 1-D with size equal to the number of input samples (batch "
                    "size). Expected target size [" + std::to_string(n) + "], but got [" + join_dims(shape_of(target)) +
                    "]. Input has shape [" + join_dims(shape_of(x)) + "].");
    }
    if (target.scalar_type() != kLong) {
        throw Error(std::string("expected scalar type Long but found ") + std::string(scalar_type_name(target.scalar_type())));
    }
    if (((target < 0) | (target >= C)).any().item<bool>()) throw Error("target out of range");
    Tensor weight = a.optional_tensor("weight");
    if (weight.defined() && (weight.dim() != 1 || weight.size(0) != C)) {
        throw Error("inconsistent weight size, expected " + std::to_string(C) + " but got [" + join_dims(shape_of(weight)) +
                    "]");
    }
    Tensor x2 = x.reshape({n, C});
    Tensor t = target.reshape({n, 1});
    Tensor z = ember::clamp_min(x2 - x2.gather(1, t) + a.number("margin"), 0);
    if (p == 2) z = z * z;
    Tensor others = (t != ember::arange(C).view({1, C})).to(x.scalar_type());
    Tensor w = weight.defined() ? weight.to(x.scalar_type()).index_select(0, t.reshape({n})).view({n, 1}) / static_cast<double>(C)
                                : ember::full({n, 1}, 1.0 / static_cast<double>(C), x.scalar_type());
    Tensor loss = ember::sum(z * others * w, {1});
    return reduce_loss(x.dim() == 2 ? loss : loss.reshape({}), reduction);
}

Tensor multilabel_margin(const Args& a) {
    const std::string reduction = reduction_name(a);
    Tensor x = a.tensor("input"), target = a.tensor("target");
    if (!((x.dim() <= 2 && x.numel() > 0) || (x.dim() == 2 && x.size(1) > 0))) {
        throw Error("Expected non-empty vector or matrix with optional 0-dim batch size, but got: [" +
                    join_dims(shape_of(x)) + "]");
    }
    const int64_t C = x.dim() == 0 ? 1 : x.size(-1);
    const bool ok = x.dim() <= 1 ? target.dim() <= 1 && target.numel() == C : target.dim() == 2 && target.sizes() == x.sizes();
    if (!ok) {
        throw Error("inconsistent target size: [" + join_dims(shape_of(target)) + "] for input of size: [" +
                    join_dims(shape_of(x)) + "]");
    }
    if (target.scalar_type() != kLong) {
        throw Error(std::string("expected scalar type Long but found ") + std::string(scalar_type_name(target.scalar_type())));
    }
    if (target.numel() && ((target < -1) | (target >= C)).any().item<bool>()) throw Error("argument #2 'target' is out of range");
    if (!x.is_floating_point()) {
        throw NotImplementedError(std::string("\"multilabel_margin_loss_forward_out_frame\" not implemented for '") +
                                  std::string(scalar_type_name(x.scalar_type())) + "'");
    }
    Tensor xr = x.reshape({-1, C});
    const int64_t n = xr.size(0);
    // pair[s, j, i]: how often class j is a target of sample s, where i is not a target
    Tensor t = target.reshape({n, C}).contiguous();
    const int64_t* tp = t.data_ptr<int64_t>();
    Tensor pair = ember::zeros({n, C, C}, kDouble);
    double* pp = pair.data_ptr<double>();
    std::vector<int64_t> count(static_cast<std::size_t>(C));
    for (int64_t s = 0; s < n; ++s) {
        std::fill(count.begin(), count.end(), 0);
        for (int64_t k = 0; k < C && tp[s * C + k] != -1; ++k) ++count[static_cast<std::size_t>(tp[s * C + k])];
        for (int64_t j = 0; j < C; ++j) {
            for (int64_t i = 0; i < C; ++i) {
                const auto ci = count[static_cast<std::size_t>(i)], cj = count[static_cast<std::size_t>(j)];
                if (ci == 0) pp[(s * C + j) * C + i] = static_cast<double>(cj);
            }
        }
    }
    Tensor z = ember::clamp_min(1 - xr.unsqueeze(2) + xr.unsqueeze(1), 0);
    Tensor loss = ember::sum(z * pair.to(x.scalar_type()), {1, 2}) / static_cast<double>(C);
    loss = x.dim() == 2 ? loss : loss.reshape({});
    return reduce_loss(loss, reduction);
}

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2) {
    const int64_t nd = std::max(x1.dim(), x2.dim());
    Tensor diff = x1 - x2 + 1e-6;
    if (nd == 0) return ember::abs(diff);
    return vector_norm(diff, 2, {nd - 1}, false);
}

// ------------------------------------------------------------------------- distances and bags

Tensor row_distance(const Tensor& diff, double p) { return vector_norm(diff, p, {diff.dim() - 1}, false); }

Tensor cdist(const Args& a) {
    Tensor x1 = a.tensor("x1"), x2 = a.tensor("x2");
    const char* names[] = {"X1", "X2"};
    const Tensor* ts[] = {&x1, &x2};
    for (int k = 0; k < 2; ++k) {
        if (ts[k]->dim() < 2) {
            throw Error(std::string("cdist only supports at least 2D tensors, ") + names[k] + " got: " +
                        std::to_string(ts[k]->dim()) + "D");
        }
    }
    if (x1.size(-1) != x2.size(-1)) {
        throw Error("X1 and X2 must have the same number of columns. X1: " + std::to_string(x1.size(-1)) +
                    " X2: " + std::to_string(x2.size(-1)));
    }
    const double p = a.number("p");
    if (p < 0) throw Error("cdist only supports non-negative p values");
    if (!x1.is_floating_point() || !x2.is_floating_point()) {
        throw Error(std::string("cdist only supports floating-point dtypes, X1 got: ") +
                    std::string(scalar_type_name(x1.scalar_type())));
    }
    return row_distance(x1.unsqueeze(-2) - x2.unsqueeze(-3), p);
}

Tensor pdist(const Args& a) {
    Tensor x = a.tensor("input");
    if (x.dim() != 2) throw Error("pdist only supports 2D tensors, got: " + std::to_string(x.dim()) + "D");
    if (!x.is_floating_point()) throw Error("pdist only supports floating-point dtypes");
    const double p = a.number("p");
    if (p < 0) throw Error("pdist only supports non-negative p values");
    const int64_t n = x.size(0);
    std::vector<int64_t> first, second;
    for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = i + 1; j < n; ++j) {
            first.push_back(i);
            second.push_back(j);
        }
    }
    auto index = [](const std::vector<int64_t>& v) {
        Tensor t = ember::empty({static_cast<int64_t>(v.size())}, kLong);
        std::copy(v.begin(), v.end(), t.data_ptr<int64_t>());
        return t;
    };
    return row_distance(x.index_select(0, index(first)) - x.index_select(0, index(second)), p);
}

// torch.embedding_bag: (output, offset2bag, bag_size, max_indices) as PyTorch's CPU kernel
// (and Python Ember, outside autograd) gives them.
OpResult embedding_bag_aten(const Tensor& weight, const Tensor& indices, const Tensor& offsets, int64_t mode,
                            const Tensor& per_sample_weights, bool include_last_offset, std::optional<int64_t> padding_idx) {
    if (weight.dim() != 2) {
        throw Error("weight has to be a 2D Tensor, but got Tensor of dimension " + std::to_string(weight.dim()));
    }
    auto check_type = [](const char* label, const Tensor& t, bool floating) {
        const ScalarType s = t.scalar_type();
        const bool ok = floating ? t.is_floating_point() : (s == kLong || s == kInt);
        if (!ok) {
            throw Error(std::string("Expected tensor for argument #1 '") + label +
                        "' to have one of the following scalar types: " +
                        (floating ? "Half, BFloat16, Float, Double" : "Long, Int") + "; but got ember." +
                        std::string(scalar_type_name(s)) + " instead (while checking arguments for embedding_bag)");
        }
    };
    check_type("indices", indices, false);
    check_type("offsets", offsets, false);
    check_type("weight", weight, true);
    if (indices.dim() != 1) {
        throw Error("embedding_bag: indices has to be a 1D Tensor, but got Tensor of dimension " + std::to_string(indices.dim()));
    }
    if (offsets.dim() != 1) {
        throw Error("offsets has to be a 1D Tensor, but got Tensor of dimension " + std::to_string(offsets.dim()));
    }
    if (mode < 0 || mode > 2) throw Error("`mode` must be sum, mean, or max.");
    if (per_sample_weights.defined()) {
        if (mode != 0) throw Error("embedding_bag: per_sample_weights only supported with mode='sum'");
        if (per_sample_weights.scalar_type() != weight.scalar_type()) {
            throw Error("Expected tensor for argument #1 'weight' to have the same type as tensor for argument #1 "
                        "'per_sample_weights'; but type ember." + std::string(scalar_type_name(weight.scalar_type())) +
                        " does not equal ember." + std::string(scalar_type_name(per_sample_weights.scalar_type())) +
                        " (while checking arguments for embedding_bag)");
        }
        if (per_sample_weights.numel() != indices.numel()) {
            throw Error("Expected per_sample_weights.value().numel() == indices.numel() to be true, but got false.  "
                        "(Could this error message be improved?  If so, please report an enhancement request to "
                        "PyTorch.)");
        }
    }
    const int64_t num = weight.size(0), dim = weight.size(1);
    int64_t pad = -1;
    if (padding_idx) {
        if (*padding_idx < -num || *padding_idx >= num) {
            throw Error("padding_idx must be within the number of embeddings, -" + std::to_string(num) + " through " +
                        std::to_string(num - 1) + ", but got " + std::to_string(*padding_idx));
        }
        pad = (*padding_idx % num + num) % num;
    }
    const Tensor idx_t = indices.to(kLong).contiguous(), off_t = offsets.to(kLong).contiguous();
    const int64_t* idx = idx_t.data_ptr<int64_t>();
    const int64_t* off = off_t.data_ptr<int64_t>();
    const int64_t n = indices.size(0), noff = offsets.size(0);
    if (noff) {
        if (off[0] != 0) {
            throw Error("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. "
                        "However, got " + std::to_string(off[0]));
        }
        if (off[noff - 1] > n) {
            throw Error("offsets[-1] can not be greater than input's length " + std::to_string(n) + " but got offsets[-1] of " +
                        std::to_string(off[noff - 1]));
        }
    }
    for (int64_t i = 0; i < n; ++i) {
        if (idx[i] < 0 || idx[i] >= num) {
            throw Error("Index " + std::to_string(i) + " of input takes value " + std::to_string(idx[i]) +
                        " which is not in the valid range [0, " + std::to_string(num) + ")");
        }
    }
    const int64_t bags = std::max<int64_t>(include_last_offset ? noff - 1 : noff, 0);
    // each index's bag: the last start at or before it
    std::vector<int64_t> bag(static_cast<std::size_t>(n), 0);
    if (bags) {
        for (int64_t i = 0; i < n; ++i) {
            const int64_t* end = std::upper_bound(off, off + bags, i);
            bag[static_cast<std::size_t>(i)] = (end - off) - 1;
        }
    }
    const Tensor w_t = weight.to(kDouble).contiguous();
    const double* w = w_t.data_ptr<double>();
    Tensor psw_t = per_sample_weights.defined() ? per_sample_weights.to(kDouble).contiguous().reshape({-1}) : Tensor();
    const double* psw = psw_t.defined() ? psw_t.data_ptr<double>() : nullptr;
    Tensor out = ember::zeros({bags, dim}, kDouble);
    double* o = out.data_ptr<double>();
    std::vector<int64_t> counts(static_cast<std::size_t>(bags), 0);
    Tensor max_idx = ember::zeros({bags, dim}, kLong);
    int64_t* mi = max_idx.data_ptr<int64_t>();
    std::vector<bool> seen(static_cast<std::size_t>(bags * dim), false);
    for (int64_t i = 0; i < n && bags; ++i) {
        if (idx[i] == pad) continue;
        const int64_t b = bag[static_cast<std::size_t>(i)];
        ++counts[static_cast<std::size_t>(b)];
        // PyTorch (and Ember's Python): indices past the last offset count in a mean's
        // length but are left out of sum and mean; max takes them
        if (include_last_offset && mode != 2 && noff > 0 && i >= off[noff - 1]) continue;
        const double* row = w + idx[i] * dim;
        for (int64_t j = 0; j < dim; ++j) {
            double& acc = o[b * dim + j];
            if (mode == 2) {
                const std::size_t k = static_cast<std::size_t>(b * dim + j);
                if (!seen[k] || row[j] > acc) {  // the first maximum wins
                    acc = row[j];
                    mi[b * dim + j] = idx[i];
                    seen[k] = true;
                }
            } else {
                acc += psw ? row[j] * psw[i] : row[j];
            }
        }
    }
    if (mode == 1) {
        for (int64_t b = 0; b < bags; ++b) {
            const double c = static_cast<double>(std::max<int64_t>(counts[static_cast<std::size_t>(b)], 1));
            for (int64_t j = 0; j < dim; ++j) o[b * dim + j] /= c;
        }
    }
    const ScalarType itype = (indices.scalar_type() == kLong || offsets.scalar_type() == kLong) ? kLong : kInt;
    const bool fast_sum = mode == 0 && weight.scalar_type() != kDouble && pad < 0;
    Tensor offset2bag = ember::empty({fast_sum ? 0 : n}, kLong);
    std::copy(bag.begin(), bag.begin() + (fast_sum ? 0 : n), offset2bag.data_ptr<int64_t>());
    Tensor bag_size, max_indices;
    if (mode == 0) {
        bag_size = ember::zeros({noff}, itype);
        max_indices = bag_size.clone();
    } else {
        Tensor c = ember::empty({bags}, kLong);
        std::copy(counts.begin(), counts.end(), c.data_ptr<int64_t>());
        bag_size = c.to(itype);
        max_indices = mode == 1 ? bag_size.clone() : max_idx.to(itype);
    }
    return {out.to(weight.scalar_type()), offset2bag.to(itype), bag_size, max_indices};
}

// ------------------------------------------------------------------------- windows

// A window of `length` points of the symmetric window `values(n)` (float64, n >= 2):
// periodic windows drop the last point of the symmetric window of length + 1 points.
template <typename Values>
Tensor window(const Args& a, Values values) {
    const std::string name = a.op();
    const int64_t length = a.integer("window_length");
    const ScalarType dt = a.dtype("dtype").value_or(get_default_dtype());
    if (!is_floating_point(dt)) {
        throw Error(name + " expects floating point dtypes, got: TensorOptions(dtype=" + std::string(dtype_name(dt)) +
                    ", device=cpu, layout=Strided (default), requires_grad=" +
                    (a.boolean("requires_grad") ? "true" : "false (default)") +
                    ", pinned_memory=false, memory_format=(nullopt))");
    }
    if (length < 0) {
        throw Error(name + " requires non-negative window_length, got window_length=" + std::to_string(length));
    }
    if (!a.is_none("layout") && a["layout"].s != "strided") throw NotImplementedError(name + "(): only the strided layout");
    Tensor r = ember::ones({length}, kDouble);
    if (length > 1) {
        const int64_t n = a.boolean("periodic") ? length + 1 : length;
        std::vector<double> v = values(n);
        std::copy(v.begin(), v.begin() + length, r.data_ptr<double>());
    }
    r = r.to(dt);
    if (a.boolean("requires_grad")) r.requires_grad_(true);
    return r;
}

std::vector<double> general_hamming(int64_t n, double alpha, double beta) {
    std::vector<double> v(static_cast<std::size_t>(n));
    for (int64_t k = 0; k < n; ++k) {
        v[static_cast<std::size_t>(k)] = alpha - beta * std::cos(static_cast<double>(k) * (2 * M_PI / static_cast<double>(n - 1)));
    }
    return v;
}

// ------------------------------------------------------------------------- cov and trapezoid

Tensor cov(const Tensor& input, const Scalar& correction_s, const Tensor& fweights, const Tensor& aweights) {
    if (input.dim() > 2) {
        throw Error("cov(): expected input to have two or fewer dimensions but got an input with " +
                    std::to_string(input.dim()) + " dimensions");
    }
    if (input.scalar_type() == kBool) throw Error("cov(): bool dtype is not supported for input");
    Tensor x = input.dim() == 2 ? input : input.reshape({1, -1});
    if (!x.is_floating_point()) x = x.to(get_default_dtype());
    const int64_t n = x.size(1);
    auto check_weights = [n](const Tensor& w, const char* name, bool integral) {
        if (w.dim() > 1) {
            throw Error(std::string("cov(): expected ") + name + " to have one or fewer dimensions but got " + name +
                        " with " + std::to_string(w.dim()) + " dimensions");
        }
        if (w.numel() != n) {
            throw Error(std::string("cov(): expected ") + name + " to have the same number of observations as input but "
                        "got " + name + " with " + std::to_string(w.numel()) + " observations and input with " +
                        std::to_string(n) + " observations");
        }
        if (integral && w.is_floating_point()) {
            throw Error(std::string("cov(): expected ") + name + " to have integral dtype but got " + name + " with " +
                        std::string(scalar_type_name(w.scalar_type())) + " dtype");
        }
        if (!integral && !w.is_floating_point()) {
            throw Error(std::string("cov(): expected ") + name + " to have floating point dtype but got " + name +
                        " with " + std::string(scalar_type_name(w.scalar_type())) + " dtype");
        }
        if ((w < 0).any().item<bool>()) throw Error(std::string("cov(): ") + name + " cannot be negative");
    };
    Tensor w;
    if (fweights.defined()) {
        check_weights(fweights, "fweights", true);
        w = fweights;
    }
    if (aweights.defined()) {
        check_weights(aweights, "aweights", false);
        w = w.defined() ? w * aweights : aweights;
    }
    const double correction = correction_s.to<double>();
    Tensor xc, c;
    if (!w.defined()) {
        xc = x - x.mean({1}).unsqueeze(1);
        c = xc.mm(xc.t());
        double norm = static_cast<double>(n) - correction;
        if (norm <= 0) norm = 0;
        return (c / norm).squeeze();
    }
    Tensor w_sum = w.sum();
    Tensor avg = (x * w).sum({1}) / w_sum;
    Tensor norm = aweights.defined() && correction != 0 ? w_sum - correction * (w * aweights).sum() / w_sum
                                                        : w_sum - correction;
    if (norm.item<double>() <= 0) norm = norm * 0;
    xc = x - avg.unsqueeze(1);
    c = xc.mm((xc * w).t());
    return (c / norm).squeeze();
}

Tensor slice_dim(const Tensor& t, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> stop) {
    return t.slice(dim, start, stop);
}

// The trapezoid family's x differences, shaped to broadcast against y (NumPy's rule).
Tensor x_differences(const std::string& name, const Tensor& y, Tensor x, int64_t dim) {
    const int64_t nd = y.dim();
    if (x.dim() == 1) {
        if (x.size(0) != y.size(dim)) throw Error(name + ": There must be one `x` value for each sample point");
        Shape s(static_cast<std::size_t>(nd), 1);
        s[static_cast<std::size_t>(dim)] = x.size(0);
        x = x.reshape(s);
    } else if (x.dim() < nd) {
        Shape s(static_cast<std::size_t>(nd - x.dim()), 1);
        for (int64_t v : x.sizes()) s.push_back(v);
        x = x.reshape(s);
    }
    return slice_dim(x, dim, 1, std::nullopt) - slice_dim(x, dim, 0, -1);
}

// dx of the trapezoid family: a number or a 0-d tensor (default 1).
double trapezoid_dx(const Args& a, const std::string& name, const Tensor& y) {
    double dx = 1;
    const Value& v = a["dx"];
    if (v.is_tensor()) {
        if (v.tensor.dim()) throw TypeError(name + "() received an invalid combination of arguments");
        dx = v.tensor.item<double>();
    } else if (v.kind == Value::Kind::Bool) {
        throw Error(name + ": Currently, we only support dx as a real number.");
    } else if (!v.is_none()) {
        dx = a.number("dx");
    }
    if (y.scalar_type() == kBool) throw Error(name + ": received a bool input for `y`, but bool is not supported");
    return dx;
}

Tensor trapezoid(const Args& a, const std::string& name) {
    Tensor y = a.tensor("y");
    Tensor x = a.optional_tensor("x");
    if (x.defined() && !a.is_none("dx")) throw TypeError(name + "() received an invalid combination of arguments");
    double dx = 1;
    if (!x.defined()) dx = trapezoid_dx(a, name, y);
    else if (y.scalar_type() == kBool || x.scalar_type() == kBool) {
        throw Error(name + ": received a bool input for `x` or `y`, but bool is not supported");
    }
    if (y.dim() == 0) {
        throw IndexError("Dimension out of range (expected to be in range of [-1, 0], but got " +
                         std::to_string(a.integer("dim")) + ")");
    }
    const int64_t dim = dim_index(a.integer("dim"), y.dim(), name);
    if (y.size(dim) == 0) {
        Shape s = shape_of(y);
        s.erase(s.begin() + dim);
        return ember::zeros(s, y.scalar_type());
    }
    if (!x.defined()) {
        Tensor ends = y.select(dim, 0) + y.select(dim, -1);
        return (y.sum({dim}) - ends * 0.5) * dx;
    }
    Tensor d = x_differences(name, y, x, dim);
    return (d * (slice_dim(y, dim, 1, std::nullopt) + slice_dim(y, dim, 0, -1))).sum({dim}) / 2.0;
}

}  // namespace

void register_more2_ops(OpTable& t) {
    // ---- in-place views: the tensor itself takes the view's geometry
    def(t, "Tensor.t_", "self", [](const Args& a) {
        Tensor x = a.tensor("self");
        if (x.dim() > 2) throw Error("t_() expects a tensor with <= 2 dimensions, but self is " + std::to_string(x.dim()) + "D");
        return become(x, x.dim() < 2 ? x : x.t());
    });
    auto transpose_ = [](const Tensor& x, int64_t d0, int64_t d1, const std::string& op) {
        const int64_t a0 = dim_index(d0, x.dim(), op), a1 = dim_index(d1, x.dim(), op);
        return become(x, x.dim() < 2 ? x : x.transpose(a0, a1));
    };
    def(t, "Tensor.transpose_", "self, dim0, dim1", [transpose_](const Args& a) {
        return transpose_(a.tensor("self"), a.integer("dim0"), a.integer("dim1"), "transpose_");
    });
    def(t, "Tensor.swapdims_", "self, dim0, dim1", [transpose_](const Args& a) {
        return transpose_(a.tensor("self"), a.integer("dim0"), a.integer("dim1"), "transpose_");
    });
    def(t, "Tensor.swapaxes_", "self, axis0, axis1", [transpose_](const Args& a) {
        return transpose_(a.tensor("self"), a.integer("axis0"), a.integer("axis1"), "transpose_");
    });
    def(t, "Tensor.squeeze_", "self, dim=None", [](const Args& a) {
        Tensor x = a.tensor("self");
        return become(x, squeeze_dims(x, a["dim"], "squeeze_"));
    });
    def(t, "Tensor.unsqueeze_", "self, dim", [](const Args& a) {
        Tensor x = a.tensor("self");
        return become(x, x.unsqueeze(dim_index(a.integer("dim"), x.dim() + 1, "unsqueeze_")));
    });
    def(t, "as_strided_", "input, size, stride, storage_offset=None", [](const Args& a) {
        Tensor x = a.tensor("input");
        return become(x, x.as_strided(a.ints("size"), a.ints("stride"), a.optional_integer("storage_offset")));
    });
    def(t, "narrow_copy", "input, dim, start, length", [](const Args& a) {
        return one(a.tensor("input").narrow(a.integer("dim"), a.integer("start"), a.integer("length")).clone());
    });
    def(t, "unsafe_split_with_sizes", "input, split_sizes, dim=0", [](const Args& a) {
        return a.tensor("input").split_with_sizes(a.ints("split_sizes"), a.integer("dim"));
    });
    def(t, "combinations", "input, r=2, with_replacement=False", [](const Args& a) {
        Tensor x = a.tensor("input");
        if (x.dim() != 1) throw Error("Expect a 1D vector, but got shape [" + join_dims(shape_of(x)) + "]");
        const int64_t r = a.integer("r");
        if (r < 0) throw Error("Expect a non-negative number, but got " + std::to_string(r));
        if (r == 0) return one(ember::empty({0}, x.scalar_type()));
        const int64_t n = x.size(0);
        const bool with = a.boolean("with_replacement");
        // itertools' order: the index tuples in lexicographic order
        std::vector<std::vector<int64_t>> cols(static_cast<std::size_t>(r));
        std::vector<int64_t> c(static_cast<std::size_t>(r));
        std::function<void(int64_t, int64_t)> rec = [&](int64_t k, int64_t from) {
            if (k == r) {
                for (int64_t i = 0; i < r; ++i) cols[static_cast<std::size_t>(i)].push_back(c[static_cast<std::size_t>(i)]);
                return;
            }
            for (int64_t v = from; v < n; ++v) {
                c[static_cast<std::size_t>(k)] = v;
                rec(k + 1, with ? v : v + 1);
            }
        };
        rec(0, 0);
        std::vector<Tensor> parts;
        for (const auto& col : cols) {
            Tensor idx = ember::empty({static_cast<int64_t>(col.size())}, kLong);
            std::copy(col.begin(), col.end(), idx.data_ptr<int64_t>());
            parts.push_back(x.index_select(0, idx));
        }
        return one(ember::stack(parts, 1));
    });

    // ---- products
    def(t, "addbmm", "input, batch1, batch2, *, beta=1, alpha=1", [](const Args& a) {
        Tensor input = a.tensor("input"), b1 = a.tensor("batch1"), b2 = a.tensor("batch2");
        if (b1.dim() != 3) throw Error("batch1 must be a 3D tensor");
        if (b2.dim() != 3) throw Error("batch2 must be a 3D tensor");
        if (b1.size(0) != b2.size(0)) {
            throw Error("batch1 and batch2 must have same number of batches, got " + std::to_string(b1.size(0)) + " and " +
                        std::to_string(b2.size(0)));
        }
        const int64_t b = b1.size(0), n = b1.size(1), k = b1.size(2);
        if (b2.size(1) != k) {
            throw Error("Incompatible matrix sizes for bmm (" + std::to_string(n) + "x" + std::to_string(k) + " and " +
                        std::to_string(b2.size(1)) + "x" + std::to_string(b2.size(2)) + ")");
        }
        Tensor r = b1.transpose(0, 1).reshape({n, b * k}).mm(b2.reshape({b * k, b2.size(2)}));
        const Scalar alpha = a.scalar("alpha"), beta = a.scalar("beta");
        if (alpha.to<double>() != 1) r = r * alpha;
        if (beta.to<double>() != 0) {
            Tensor x = input.expand(shape_of(r));  // PyTorch's error when input does not expand
            r = r + (beta.to<double>() == 1 ? x : x * beta);
        }
        return one(r);
    });
    def_inplace_by_copy(t, "addbmm");
    def(t, "addr", "input, vec1, vec2, *, beta=1, alpha=1", [](const Args& a) {
        Tensor input = a.tensor("input"), v1 = a.tensor("vec1"), v2 = a.tensor("vec2");
        if (v1.dim() != 1) throw Error("addr: Expected 1-D argument vec1, but got " + std::to_string(v1.dim()) + "-D");
        if (v2.dim() != 1) throw Error("addr: Expected 1-D argument vec2, but got " + std::to_string(v2.dim()) + "-D");
        const ScalarType rt = ember::result_type({input, v1, v2});
        const Scalar alpha = a.scalar("alpha"), beta = a.scalar("beta");
        if (is_integral(rt, false)) {
            for (const char* name : {"beta", "alpha"}) {
                if (a[name].kind == Value::Kind::Float) {
                    throw Error(std::string("For integral input tensors, argument ") + name +
                                " must not be a floating point number.");
                }
            }
        }
        const Shape shape{v1.size(0), v2.size(0)};
        Tensor x = input.to(rt).expand(shape);
        Tensor outer = v1.to(rt).unsqueeze(1) * v2.to(rt).unsqueeze(0);
        Tensor r;
        if (rt == kBool) {
            r = (outer & Scalar(alpha.to<bool>())) | (x & Scalar(beta.to<bool>()));
        } else {
            r = outer * alpha;
            if (beta.to<double>() != 0) r = r + x * beta;
        }
        return one(r.expand(shape).to(rt).contiguous());
    });
    def_inplace_by_copy(t, "addr");
    def(t, "vdot", "input, other", [](const Args& a) { return one(ember::dot(a.tensor("input"), a.tensor("other"))); });
    def(t, "chain_matmul", "*matrices", [](const Args& a) {
        std::vector<Tensor> ms;
        const std::vector<Value>& v = a.varargs();
        if (v.size() == 1 && v[0].is_sequence()) ms = a.tensors("matrices");
        else for (const Value& x : v) ms.push_back(x.tensor);
        if (ms.empty()) throw Error("chain_matmul(): Expected one or more matrices");
        for (const Tensor& m : ms) {
            if (m.dim() != 2) throw Error("Tensor dimension is " + std::to_string(m.dim()) + ", expected 2 instead.");
        }
        if (ms.size() == 1) return one(ms[0].clone());
        Tensor r = ms[0];
        for (std::size_t i = 1; i < ms.size(); ++i) r = r.mm(ms[i]);
        return one(r);
    });
    def(t, "cross", "input, other, dim=None", [](const Args& a) {
        Tensor x = a.tensor("input"), y = a.tensor("other");
        int64_t dim = -1;
        if (a.is_none("dim")) {
            const Shape shape = ember::infer_size(x.sizes(), y.sizes());
            for (std::size_t i = 0; i < shape.size() && dim < 0; ++i) {
                if (shape[i] == 3) dim = static_cast<int64_t>(i);
            }
            if (dim < 0) throw Error("no dimension of size 3 in input");
        } else {
            dim = a.integer("dim");
        }
        if (x.dim() != y.dim()) throw Error("linalg.cross: inputs must have the same number of dimensions.");
        const int64_t d = dim_index(dim, x.dim(), "cross");
        if (x.size(d) != 3 || y.size(d) != 3) {
            throw Error("linalg.cross: inputs dimension " + std::to_string(dim) + " must have length 3. Got " +
                        std::to_string(x.size(d)) + " and " + std::to_string(y.size(d)));
        }
        if (x.scalar_type() != y.scalar_type()) {
            throw Error(std::string("expected scalar type ") + std::string(scalar_type_name(x.scalar_type())) + " but found " +
                        std::string(scalar_type_name(y.scalar_type())));
        }
        const Shape shape = ember::infer_size(x.sizes(), y.sizes());
        Tensor xb = x.expand(shape), yb = y.expand(shape);
        auto c = [&](const Tensor& t3, int64_t i) { return t3.select(d, i); };
        Tensor r0 = c(xb, 1) * c(yb, 2) - c(xb, 2) * c(yb, 1);
        Tensor r1 = c(xb, 2) * c(yb, 0) - c(xb, 0) * c(yb, 2);
        Tensor r2 = c(xb, 0) * c(yb, 1) - c(xb, 1) * c(yb, 0);
        return one(ember::stack({r0, r1, r2}, d));
    });
    def(t, "vander", "x, N=None, increasing=False", [](const Args& a) {
        Tensor x = a.tensor("x");
        if (x.dim() != 1) throw Error("x must be a one-dimensional tensor.");
        const int64_t n = a.is_none("N") ? x.size(0) : a.integer("N");
        if (n < 0) throw Error("N must be non-negative.");
        if (!x.is_floating_point()) x = x.to(kLong);
        Tensor r;
        if (n < 2) {
            r = ember::ones({x.size(0), n}, x.scalar_type());
        } else {
            std::vector<Tensor> cols{ember::ones({x.size(0)}, x.scalar_type())};
            for (int64_t k = 1; k < n; ++k) cols.push_back(cols.back() * x);
            r = ember::stack(cols, 1);
        }
        return one(a.boolean("increasing") ? r : r.flip({1}));
    });

    // ---- norms and statistics
    def(t, "dist", "input, other, p=2", [](const Args& a) {
        Tensor diff = a.tensor("input") - a.tensor("other");
        if (!diff.is_floating_point()) {
            throw Error(std::string("norm(): input dtype should be either floating point or complex. Got ") +
                        std::string(scalar_type_name(diff.scalar_type())) + " instead.");
        }
        return one(vector_norm(diff, a.number("p"), {}, false));
    });
    def(t, "renorm", "input, p, dim, maxnorm", [](const Args& a) {
        Tensor x = a.tensor("input");
        const double p = a.number("p"), maxnorm = a.number("maxnorm");
        if (x.dim() < 2) {
            throw Error("renorm: input needs at least 2 dimensions, got " + std::to_string(x.dim()) + " dimensions");
        }
        if (p <= 0) throw Error("renorm: non-positive-norm not supported");
        if (maxnorm < 0) throw Error("renorm: expected maxnorm to be >= 0 but got " + describe(a["maxnorm"]));
        const int64_t d = dim_index(a.integer("dim"), x.dim(), "renorm");
        if (!x.is_floating_point()) {
            throw Error(std::string("linalg.vector_norm: Expected a floating point or complex tensor as input. Got ") +
                        std::string(scalar_type_name(x.scalar_type())));
        }
        Shape dims;
        for (int64_t i = 0; i < x.dim(); ++i) {
            if (i != d) dims.push_back(i);
        }
        Tensor xs = x.scalar_type() == kHalf ? x.to(kFloat) : x;
        Tensor norms = vector_norm(xs, p, dims, true);
        Tensor factor = ember::where(norms > maxnorm, maxnorm / (norms + 1e-7), Scalar(1.0));
        return one(x * factor.to(x.scalar_type()));
    });
    def_inplace_by_copy(t, "renorm");
    def(t, "cov", "input, *, correction=1, fweights=None, aweights=None", [](const Args& a) {
        return one(cov(a.tensor("input"), a.scalar("correction"), a.optional_tensor("fweights"), a.optional_tensor("aweights")));
    });
    def(t, "corrcoef", "input", [](const Args& a) {
        Tensor c = cov(a.tensor("input"), Scalar(1), Tensor(), Tensor());
        if (c.dim() == 0) return one(c / c);
        Tensor sd = c.diagonal().sqrt();
        c = c / sd.reshape({-1, 1});
        c = c / sd.reshape({1, -1});
        return one(ember::clamp(c, Scalar(-1), Scalar(1)));
    });
    def(t, "trapezoid", "y, x=None, *, dx=None, dim=-1", [](const Args& a) { return one(trapezoid(a, "trapezoid")); });
    def(t, "trapz", "y, x=None, *, dx=None, dim=-1", [](const Args& a) { return one(trapezoid(a, "trapz")); });
    def(t, "cumulative_trapezoid", "y, x=None, *, dx=None, dim=-1", [](const Args& a) {
        const std::string name = "cumulative_trapezoid";
        Tensor y = a.tensor("y");
        Tensor x = a.optional_tensor("x");
        if (x.defined() && !a.is_none("dx")) throw TypeError(name + "() received an invalid combination of arguments");
        double dx = 1;
        if (!x.defined()) dx = trapezoid_dx(a, name, y);
        else if (y.scalar_type() == kBool || x.scalar_type() == kBool) {
            throw Error(name + ": received a bool input for `x` or `y`, but bool is not supported");
        }
        if (y.dim() == 0) throw IndexError("slice() cannot be applied to a 0-dim tensor.");
        const int64_t dim = dim_index(a.integer("dim"), y.dim(), name);
        Tensor pairs = slice_dim(y, dim, 0, -1) + slice_dim(y, dim, 1, std::nullopt);
        if (!x.defined()) return one(ember::cumsum(dx / 2.0 * pairs, dim));
        return one(ember::cumsum(pairs * x_differences(name, y, x, dim), dim) / 2.0);
    });

    // ---- windows
    const char* window_tail = "*, dtype=None, layout=None, device=None, requires_grad=False";
    def(t, "hann_window", std::string("window_length, periodic=True, ") + window_tail, [](const Args& a) {
        return one(window(a, [](int64_t n) { return general_hamming(n, 0.5, 0.5); }));
    });
    def(t, "hamming_window", std::string("window_length, periodic=True, alpha=0.54, beta=0.46, ") + window_tail,
        [](const Args& a) {
            const double alpha = a.number("alpha"), beta = a.number("beta");
            return one(window(a, [alpha, beta](int64_t n) { return general_hamming(n, alpha, beta); }));
        });
    def(t, "blackman_window", std::string("window_length, periodic=True, ") + window_tail, [](const Args& a) {
        return one(window(a, [](int64_t n) {
            std::vector<double> v(static_cast<std::size_t>(n));
            for (int64_t k = 0; k < n; ++k) {
                const double x = static_cast<double>(k) * (M_PI / static_cast<double>(n - 1));
                v[static_cast<std::size_t>(k)] = 0.08 * std::cos(4 * x) - 0.5 * std::cos(2 * x) + 0.42;
            }
            return v;
        }));
    });
    def(t, "bartlett_window", std::string("window_length, periodic=True, ") + window_tail, [](const Args& a) {
        return one(window(a, [](int64_t n) {
            std::vector<double> v(static_cast<std::size_t>(n));
            const int64_t half = ((n - 1) >> 1) + 1;
            for (int64_t k = 0; k < n; ++k) {
                const double x = static_cast<double>(k) * (2.0 / static_cast<double>(n - 1));
                v[static_cast<std::size_t>(k)] = k < half ? x : 2 - x;
            }
            return v;
        }));
    });

    // ---- activations' kernels
    def(t, "threshold_backward", "grad_output, input, threshold", [](const Args& a) {
        Tensor g = a.tensor("grad_output");
        return one(ember::where(a.tensor("input") <= a.scalar("threshold"), ember::zeros_like(g), g));
    });
    // rrelu: the mean slope out of training; in training a uniform slope per negative element
    // (Ember C++'s random stream, not Python's)
    auto rrelu = [](const Tensor& x, double lower, double upper, bool training) {
        if (!training) return ember::where(x >= 0, x, x * ((lower + upper) / 2));
        if (!x.is_floating_point()) {
            throw NotImplementedError(std::string("\"rrelu_with_noise\" not implemented for '") +
                                      std::string(scalar_type_name(x.scalar_type())) + "'");
        }
        Tensor slopes = ember::rand(shape_of(x), x.scalar_type()) * (upper - lower) + lower;
        return ember::where(x >= 0, x, x * slopes);
    };
    // torch.rrelu is ATen's (generator=, which a saved program cannot hold: Python records
    // it only as None); F.rrelu's fifth parameter is inplace
    def(t, "rrelu", "input, lower=0.125, upper=0.3333333333333333, training=False, generator=None",
        [rrelu](const Args& a) {
            return one(rrelu(a.tensor("input"), a.number("lower"), a.number("upper"), a.boolean("training")));
        });
    def(t, "nn.functional.rrelu", "input, lower=0.125, upper=0.3333333333333333, training=False, inplace=False",
        [rrelu](const Args& a) {
            Tensor x = a.tensor("input");
            Tensor y = rrelu(x, a.number("lower"), a.number("upper"), a.boolean("training"));
            return one(a.boolean("inplace") ? write_into(x, y, "rrelu_") : y);
        });
    for (const char* name : {"rrelu_", "nn.functional.rrelu_"}) {
        def(t, name, "input, lower=0.125, upper=0.3333333333333333, training=False", [rrelu](const Args& a) {
            Tensor x = a.tensor("input");
            return one(write_into(x, rrelu(x, a.number("lower"), a.number("upper"), a.boolean("training")), "rrelu_"));
        });
    }

    // ---- losses: the registry's and F's spellings
    for (const char* name : {"gaussian_nll_loss", "nn.functional.gaussian_nll_loss"}) {
        def(t, name, "input, target, var, full=False, eps=1e-06, reduction='mean'", [](const Args& a) {
            return one(gaussian_nll(a));
        });
    }
    def(t, "poisson_nll_loss", "input, target, log_input=True, full=False, eps=1e-08, reduction=0", [](const Args& a) {
        return one(poisson_nll(a, reduction_name(a)));
    });
    def(t, "nn.functional.poisson_nll_loss",
        "input, target, log_input=True, full=False, size_average=None, eps=1e-08, reduce=None, reduction='mean'",
        [](const Args& a) { return one(poisson_nll(a, reduction_name(a))); });
    for (const char* name : {"multi_margin_loss", "nn.functional.multi_margin_loss"}) {
        def(t, name, "input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction='mean'",
            [](const Args& a) { return one(multi_margin(a)); });
    }
    for (const char* name : {"multilabel_margin_loss", "nn.functional.multilabel_margin_loss"}) {
        def(t, name, "input, target, size_average=None, reduce=None, reduction='mean'",
            [](const Args& a) { return one(multilabel_margin(a)); });
    }
    for (const char* name : {"triplet_margin_with_distance_loss", "nn.functional.triplet_margin_with_distance_loss"}) {
        def(t, name, "anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False, reduction='mean'",
            [](const Args& a) {
                const std::string reduction = a.string("reduction");
                if (reduction != "mean" && reduction != "sum" && reduction != "none") {
                    throw ValueError(reduction + " is not a valid value for reduction");
                }
                const double margin = a.number("margin");
                if (margin <= 0) throw ValueError("margin must be greater than 0, got " + describe(a["margin"]));
                if (!a.is_none("distance_function")) {
                    throw NotImplementedError("triplet_margin_with_distance_loss(distance_function=...): a Python callable "
                                              "cannot run in Ember's C++ frontend");
                }
                Tensor an = a.tensor("anchor"), po = a.tensor("positive"), ne = a.tensor("negative");
                if (an.dim() != po.dim() || an.dim() != ne.dim()) {
                    throw Error("The anchor, positive, and negative tensors are expected to have the same number of "
                                "dimensions, but got: anchor " + std::to_string(an.dim()) + "D, positive " +
                                std::to_string(po.dim()) + "D, and negative " + std::to_string(ne.dim()) + "D inputs");
                }
                Tensor dp = pairwise_distance(an, po), dn = pairwise_distance(an, ne);
                if (a.boolean("swap")) dn = ember::minimum(dn, pairwise_distance(po, ne));
                return one(reduce_loss(ember::clamp_min(margin + dp - dn, 0), reduction));
            });
    }

    // ---- distances, bags, time-major convolution, bilinear
    def(t, "cdist", "x1, x2, p=2.0, compute_mode='use_mm_for_euclid_dist_if_necessary'", [](const Args& a) {
        return one(cdist(a));
    });
    for (const char* name : {"pdist", "nn.functional.pdist"}) {
        def(t, name, "input, p=2", [](const Args& a) { return one(pdist(a)); });
    }
    def(t, "embedding_bag",
        "weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False, per_sample_weights=None, "
        "include_last_offset=False, padding_idx=None",
        [](const Args& a) {
            return embedding_bag_aten(a.tensor("weight"), a.tensor("indices"), a.tensor("offsets"), a.integer("mode"),
                                      a.optional_tensor("per_sample_weights"), a.boolean("include_last_offset"),
                                      a.optional_integer("padding_idx"));
        });
    def(t, "nn.functional.embedding_bag",
        "input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode='mean', sparse=False, "
        "per_sample_weights=None, include_last_offset=False, padding_idx=None",
        [](const Args& a) {
            Tensor input = a.tensor("input"), weight = a.tensor("weight");
            if (weight.scalar_type() == kLong && input.is_floating_point()) std::swap(input, weight);
            Tensor psw = a.optional_tensor("per_sample_weights");
            if (psw.defined() && input.sizes() != psw.sizes()) {
                std::ostringstream os;
                os << "embedding_bag: If per_sample_weights (" << psw.sizes() << ") is not None, then it must have the "
                   << "same shape as the input (" << input.sizes() << ")";
                throw ValueError(os.str());
            }
            if (weight.dim() != 2) {
                throw ValueError("weight has to be a 2D Tensor, but got Tensor of dimension " + std::to_string(weight.dim()));
            }
            Tensor offsets = a.optional_tensor("offsets");
            bool include_last = a.boolean("include_last_offset");
            if (input.dim() == 2) {
                if (offsets.defined()) {
                    throw ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                                     "fixed length sequences. However, found offsets of type <class 'ember.Tensor'>");
                }
                offsets = ember::arange(input.size(0), input.scalar_type()) * input.size(1);
                include_last = false;
                input = input.reshape({-1});
                if (psw.defined()) psw = psw.reshape({-1});
            } else if (input.dim() == 1) {
                if (!offsets.defined()) throw ValueError("offsets has to be a 1D Tensor but got None");
                if (offsets.dim() != 1) throw ValueError("offsets has to be a 1D Tensor");
            } else {
                throw ValueError("input has to be 1D or 2D Tensor, but got Tensor of dimension " + std::to_string(input.dim()));
            }
            const std::string mode = a.string("mode");
            const int64_t m = mode == "sum" ? 0 : mode == "mean" ? 1 : mode == "max" ? 2 : -1;
            if (m < 0) throw ValueError("mode has to be one of sum, mean or max");
            if (m == 2 && a.boolean("scale_grad_by_freq")) {
                throw ValueError("max mode does not support scaling the gradient by the frequency");
            }
            if (m == 2 && a.boolean("sparse")) throw ValueError("max mode does not support sparse weights");
            if (!a.is_none("max_norm")) {
                throw NotImplementedError("embedding_bag(max_norm=...): renormalizing rows is not supported by Ember's C++ "
                                          "frontend");
            }
            if (psw.defined() && m != 0) {
                throw NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                          "supported for mode='sum' (got mode='" + mode + "'). Please open a feature "
                                          "request on GitHub.");
            }
            return one(embedding_bag_aten(weight, input, offsets, m, psw, include_last, a.optional_integer("padding_idx")).at(0));
        });
    for (const char* name : {"conv_tbc", "nn.functional.conv_tbc"}) {
        def(t, name, "input, weight, bias, pad=0", [](const Args& a) {
            Tensor x = a.tensor("input"), w = a.tensor("weight"), b = a.tensor("bias");
            const int64_t pad = a.integer("pad");
            if (x.dim() != 3) throw Error("Input must have 3 dims: time, batch, in_channel");
            if (w.dim() != 3) throw Error("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.");
            if (b.dim() != 1) throw Error("Bias must be 1-D");
            if (x.size(2) != w.size(1)) throw Error("Input dim 2 (input channels) is not == dim 1 in the weight tensor");
            if (b.size(0) != w.size(2)) throw Error("Bias size must equal dim 2 in the weight tensor (output channels).");
            const int64_t length = x.size(0) + 2 * pad - w.size(0) + 1;
            if (length < 0) {
                throw Error("Trying to create tensor with negative dimension " + std::to_string(length) + ": [" +
                            std::to_string(length) + ", " + std::to_string(x.size(1)) + ", " + std::to_string(w.size(2)) + "]");
            }
            if (length == 0) return one(ember::zeros({0, x.size(1), w.size(2)}, x.scalar_type()));
            Tensor y = ember::conv1d(x.permute({1, 2, 0}), w.permute({2, 1, 0}), b, 1, pad);
            return one(y.permute({2, 0, 1}));
        });
    }
    def(t, "bilinear", "input1, input2, weight, bias=None", [](const Args& a) {
        Tensor x1 = a.tensor("input1"), x2 = a.tensor("input2"), w = a.tensor("weight");
        Tensor b = a.optional_tensor("bias");
        const ScalarType dt = x1.scalar_type();
        if (x2.scalar_type() != dt || w.scalar_type() != dt || (b.defined() && b.scalar_type() != dt)) {
            std::string msg = "All tensors must have the same dtype, got input1: " + std::string(dtype_name(dt)) +
                              ", input2: " + std::string(dtype_name(x2.scalar_type())) + ", weight: " +
                              std::string(dtype_name(w.scalar_type()));
            if (b.defined()) msg += ", bias: " + std::string(dtype_name(b.scalar_type()));
            throw Error(msg);
        }
        if (x1.dim() != x2.dim()) {
            throw Error("bilinear(): input dimensions do not match: got " + std::to_string(x1.dim()) + " and " +
                        std::to_string(x2.dim()));
        }
        for (int64_t i = 0; i + 1 < x1.dim(); ++i) {
            if (x1.size(i) != x2.size(i)) {
                throw Error("bilinear(): input batch dimensions do not match at dim " + std::to_string(i) + ": got " +
                            std::to_string(x1.size(i)) + " and " + std::to_string(x2.size(i)));
            }
        }
        if (x1.size(-1) != w.size(1)) {
            throw Error("bilinear(): input1 size does not match weight size: got " + std::to_string(x1.size(-1)) +
                        " but expected " + std::to_string(w.size(1)));
        }
        if (x2.size(-1) != w.size(2)) {
            throw Error("bilinear(): input2 size does not match weight size: got " + std::to_string(x2.size(-1)) +
                        " but expected " + std::to_string(w.size(2)));
        }
        if (b.defined() && b.dim() == 0) throw IndexError("Dimension specified as 0 but tensor has no dimensions");
        if (b.defined() && b.size(0) != w.size(0)) {
            throw Error("bilinear(): bias size does not match weight size: got " + std::to_string(b.size(0)) +
                        " but expected " + std::to_string(w.size(0)));
        }
        // y[..., o] = sum_ij x1[..., i] W[o, i, j] x2[..., j]: (x1 @ W[o]) . x2 for every o
        const int64_t in1 = w.size(1), in2 = w.size(2), out = w.size(0);
        Shape lead(x1.sizes().begin(), x1.sizes().end() - 1);
        Tensor f1 = x1.reshape({-1, in1}), f2 = x2.reshape({-1, in2});
        Tensor t1 = f1.mm(w.permute({1, 0, 2}).reshape({in1, out * in2})).view({-1, out, in2});
        Tensor y = ember::sum(t1 * f2.unsqueeze(1), {2});
        if (b.defined()) y = y + b;
        lead.push_back(out);
        return one(y.reshape(lead));
    });
}

}  // namespace ember::jit::detail
