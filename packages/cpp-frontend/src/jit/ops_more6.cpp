// Issue 14's second batch of the C++ op table, part 5: the rest that real tensors allow:
// as_strided_scatter, resize_as_, gradient, histogram / histogramdd, hash_tensor, ctc_loss,
// the FFT helpers with real results (fft_fftfreq, fft_rfftfreq, fft_fftshift,
// fft_ifftshift) and the random ops (bernoulli, binomial, multinomial, gumbel_softmax: drawn
// from the default generator, PyTorch's engine; bernoulli and multinomial draw Python's
// numbers, binomial and gumbel_softmax its distribution by other algorithms).
//
// The FFTs themselves, stft/istft, complex, polar and view_as_complex are in ops_complex.cpp
// (the complex dtypes). Not in the table: the ops whose result is not a tensor (equal,
// allclose, is_same_size, is_inference, is_conj, is_neg, broadcast_shapes), which a capture
// records as constants.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <sstream>

#include "ember/error.h"
#include "jit/ops_common.h"

namespace ember::jit::detail {

namespace {

std::string c_float(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
}

void no_generator(const Args& a) {
    if (a.has("generator") && !a.is_none("generator")) {
        throw NotImplementedError(a.op() + "(generator=...): a Python generator cannot be passed to Ember's C++ frontend");
    }
}

// ------------------------------------------------------------------------- gradient

Tensor slice_dim(const Tensor& t, int64_t dim, int64_t start, std::optional<int64_t> stop) {
    return t.slice(dim, start, stop);
}

Tensor gradient_uniform(const Tensor& t, int64_t d, double h, int64_t edge_order) {
    Tensor center = (slice_dim(t, d, 2, std::nullopt) - slice_dim(t, d, 0, -2)) / h;
    Tensor s0 = slice_dim(t, d, 0, 1), s1 = slice_dim(t, d, 1, 2), s2 = slice_dim(t, d, 2, 3);
    Tensor first, last;
    if (edge_order == 1) {
        first = (s1 - s0) / h;
        last = (slice_dim(t, d, -1, std::nullopt) - slice_dim(t, d, -2, -1)) / h;
    } else {
        first = (s0 * -1.5 + s1 * 2 - s2 * 0.5) / h;
        last = (slice_dim(t, d, -3, -2) * 0.5 + slice_dim(t, d, -2, -1) * -2 + slice_dim(t, d, -1, std::nullopt) * 1.5) / h;
    }
    return ember::cat({first, center / 2, last}, d);
}

Tensor gradient_coordinates(const Tensor& t, int64_t d, const Tensor& coords, int64_t edge_order) {
    if (coords.dim() != 1) {
        throw Error("torch.gradient expected each element of spacing to have one dimension, but got an element with " +
                    std::to_string(coords.dim()) + " dimensions!");
    }
    Shape shape(static_cast<std::size_t>(t.dim()), 1);
    shape[static_cast<std::size_t>(d)] = -1;
    Tensor h = slice_dim(coords, 0, 1, std::nullopt) - slice_dim(coords, 0, 0, -1);
    Tensor h1 = slice_dim(h, 0, 0, -1), h2 = slice_dim(h, 0, 1, std::nullopt);
    Tensor a = (-h2 / (h1 * (h1 + h2))).reshape(shape);
    Tensor b = ((h2 - h1) / (h1 * h2)).reshape(shape);
    Tensor c = (h1 / (h2 * (h1 + h2))).reshape(shape);
    Tensor center = a * slice_dim(t, d, 0, -2) + b * slice_dim(t, d, 1, -1) + c * slice_dim(t, d, 2, std::nullopt);
    Tensor s0 = slice_dim(t, d, 0, 1), s1 = slice_dim(t, d, 1, 2), s2 = slice_dim(t, d, 2, 3);
    Tensor first, last;
    const int64_t n = h.size(0);
    if (edge_order == 1) {
        first = (s1 - s0) / h.select(0, 0);
        last = (slice_dim(t, d, -1, std::nullopt) - slice_dim(t, d, -2, -1)) / h.select(0, n - 1);
    } else {
        Tensor p = h.select(0, 0), q = h.select(0, 1);
        first = -(2.0 * p + q) / (p * (p + q)) * s0 + (p + q) / (p * q) * s1 + (-p) / (q * (p + q)) * s2;
        p = h.select(0, n - 1);
        q = h.select(0, n - 2);
        last = p / (q * (p + q)) * slice_dim(t, d, -3, -2) - (p + q) / (p * q) * slice_dim(t, d, -2, -1) +
               (2 * p + q) / (p * (p + q)) * slice_dim(t, d, -1, std::nullopt);
    }
    return ember::cat({first, center, last}, d);
}

OpResult gradient(const Args& a) {
    Tensor x = a.tensor("input");
    if (x.scalar_type() == kByte) throw Error("torch.gradient does not support uint8 input.");
    const Value& dim = a["dim"];
    std::optional<std::size_t> dim_count;
    if (dim.kind == Value::Kind::Int) dim_count = 1;
    else if (dim.is_sequence()) dim_count = dim.items.size();
    const std::size_t n_dims = dim_count ? *dim_count : static_cast<std::size_t>(x.dim());
    // spacing: a number (or 0-d tensor) for every dim, or a list of numbers or of 1-D tensors
    std::vector<double> h;
    std::vector<Tensor> coords;
    const Value& sp = a["spacing"];
    if (sp.is_none()) {
        h.assign(n_dims, 1.0);
    } else if (sp.is_number() || (sp.is_tensor() && sp.tensor.dim() == 0)) {
        h.assign(n_dims, sp.is_tensor() ? sp.tensor.item<double>() : a.number("spacing"));
    } else if (sp.is_sequence()) {
        if (!dim_count && sp.items.size() != n_dims) {
            throw Error("torch.gradient expected spacing to be unspecified, a scalar, or a list of length equal to 'self.dim() = " +
                        std::to_string(n_dims) + "', since dim argument was not given, but got a list of length " +
                        std::to_string(sp.items.size()));
        }
        if (dim_count && sp.items.size() != *dim_count) {
            throw Error("torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim arguments to have the "
                        "same length, but got a spacing argument of length " + std::to_string(sp.items.size()) +
                        " and a dim argument of length " + std::to_string(*dim_count) + ".");
        }
        const bool tensors = !sp.items.empty() && sp.items[0].is_tensor();
        for (const Value& v : sp.items) {
            if (v.is_tensor() != tensors || (!tensors && !v.is_number())) {
                throw TypeError("gradient(): argument 'spacing' must be a tuple of Scalars or a tuple of Tensors");
            }
            if (tensors) coords.push_back(v.tensor);
            else h.push_back(v.kind == Value::Kind::Float ? v.f : static_cast<double>(v.i));
        }
    } else {
        throw TypeError(std::string("gradient(): argument 'spacing' must be a Number, a tuple of Scalars or a tuple of Tensors, not ") +
                        type_name(sp));
    }
    const int64_t edge_order = a.integer("edge_order");
    if (edge_order != 1 && edge_order != 2) throw Error("torch.gradient only supports edge_order=1 and edge_order=2.");
    Shape dims;
    if (dim.is_none()) {
        for (int64_t i = 0; i < x.dim(); ++i) dims.push_back(i);
    } else {
        for (int64_t d : dim.is_sequence() ? to_ints(dim, "gradient(): dim") : Shape{dim.i}) {
            dims.push_back(dim_index(d, x.dim(), "gradient"));
        }
    }
    for (int64_t d : dims) {
        if (x.size(d) < edge_order + 1) throw Error("torch.gradient expected each dimension size to be at least edge_order+1");
    }
    // integers: Python's arithmetic promotes them with the spacing (int / int is a float)
    Tensor xf = x.is_floating_point() ? x : x.to(get_default_dtype());
    OpResult out;
    for (std::size_t k = 0; k < dims.size(); ++k) {
        out.push_back(coords.empty() ? gradient_uniform(xf, dims[k], h[k], edge_order)
                                     : gradient_coordinates(xf, dims[k], coords[k], edge_order));
    }
    return out;
}

// ------------------------------------------------------------------------- histograms

// PyTorch's symmetric linspace in T (the first half counts up from lo, the second down from hi).
template <typename T>
std::vector<double> spaced(double lo, double hi, int64_t steps) {
    const T s = static_cast<T>(lo), e = static_cast<T>(hi);
    const T step = (e - s) / static_cast<T>(steps - 1);
    std::vector<double> out(static_cast<std::size_t>(steps));
    for (int64_t i = 0; i < steps; ++i) {
        const T v = i < steps / 2 ? s + step * static_cast<T>(i) : e - step * static_cast<T>(steps - 1 - i);
        out[static_cast<std::size_t>(i)] = static_cast<double>(v);
    }
    return out;
}

// (hist, edges) of the rows of `points` (M, N): counts (or summed weights) in the bins between
// the N edge lists; each bin holds its left edge, the last one its right edge too.
OpResult histogramdd_impl(const Tensor& input, const Shape& points_shape, const std::vector<int64_t>& counts_spec,
                          std::vector<Tensor> edge_tensors, const Value& range, const Tensor& weight, bool density) {
    if (input.scalar_type() != kFloat && input.scalar_type() != kDouble) {
        throw NotImplementedError("\"histogramdd\" not implemented for '" + std::string(scalar_type_name(input.scalar_type())) + "'");
    }
    const int64_t n_dims = points_shape.back();
    Tensor pts = input.reshape({-1, n_dims}).to(kDouble).contiguous();
    const int64_t m = pts.size(0);
    const double* p = pts.data_ptr<double>();
    std::vector<std::vector<double>> edges;
    if (edge_tensors.empty()) {
        std::vector<double> lo(static_cast<std::size_t>(n_dims)), hi(static_cast<std::size_t>(n_dims));
        if (!range.is_none()) {
            std::vector<double> r;
            for (const Value& v : range.items) r.push_back(v.kind == Value::Kind::Float ? v.f : static_cast<double>(v.i));
            if (static_cast<int64_t>(r.size()) != 2 * n_dims) {
                throw Error("torch.histogramdd: for a " + std::to_string(n_dims) + "-dimensional histogram range should have " +
                            std::to_string(2 * n_dims) + " elements, but got " + std::to_string(r.size()));
            }
            for (int64_t d = 0; d < n_dims; ++d) {
                lo[static_cast<std::size_t>(d)] = r[static_cast<std::size_t>(2 * d)];
                hi[static_cast<std::size_t>(d)] = r[static_cast<std::size_t>(2 * d + 1)];
            }
        } else if (m) {
            for (int64_t d = 0; d < n_dims; ++d) {
                double a = p[d], b = p[d];
                for (int64_t i = 1; i < m; ++i) {
                    const double v = p[i * n_dims + d];
                    if (std::isnan(a) || v < a || std::isnan(v)) a = std::isnan(a) ? a : v;
                    if (std::isnan(b) || v > b || std::isnan(v)) b = std::isnan(b) ? b : v;
                }
                lo[static_cast<std::size_t>(d)] = a;
                hi[static_cast<std::size_t>(d)] = b;
            }
        } else {
            std::fill(hi.begin(), hi.end(), 1.0);
        }
        for (int64_t d = 0; d < n_dims; ++d) {
            double& l = lo[static_cast<std::size_t>(d)];
            double& h = hi[static_cast<std::size_t>(d)];
            if (!std::isfinite(l) || !std::isfinite(h)) {
                throw Error("torch.histogramdd: dimension " + std::to_string(d) + "'s range [" + c_float(l) + ", " + c_float(h) +
                            "] is not finite");
            }
            if (l > h) {
                throw Error("torch.histogramdd: min should not exceed max, but got min " + c_float(l) + " max " + c_float(h) +
                            " for dimension " + std::to_string(d));
            }
            if (l == h) {
                l -= 0.5;
                h += 0.5;
            }
            const int64_t steps = counts_spec[static_cast<std::size_t>(d)] + 1;
            edges.push_back(input.scalar_type() == kFloat ? spaced<float>(l, h, steps) : spaced<double>(l, h, steps));
        }
    } else {
        for (const Tensor& e : edge_tensors) {
            Tensor ed = e.to(kDouble).contiguous();
            edges.emplace_back(ed.data_ptr<double>(), ed.data_ptr<double>() + ed.numel());
        }
    }
    Tensor w;
    if (weight.defined()) {
        if (weight.scalar_type() != input.scalar_type()) {
            throw Error("torch.histogramdd: if weight tensor is provided, input tensor and weight tensor should have the same dtype, "
                        "but got input(" + std::string(scalar_type_name(input.scalar_type())) + "), and weight(" +
                        std::string(scalar_type_name(weight.scalar_type())) + ")");
        }
        Shape ws = weight.dim() ? shape_of(weight) : Shape{1};
        if (ws != Shape(points_shape.begin(), points_shape.end() - 1)) {
            throw Error("torch.histogramdd: if weight tensor is provided it should have the same shape as the input tensor excluding "
                        "its innermost dimension, but got input with shape [" + join_dims(points_shape) + "] and weight with shape [" +
                        join_dims(shape_of(weight)) + "]");
        }
        w = weight.reshape({-1}).to(kDouble).contiguous();
    }
    Shape counts;
    for (const auto& e : edges) counts.push_back(static_cast<int64_t>(e.size()) - 1);
    const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{1}, std::multiplies<int64_t>());
    std::vector<double> hist(static_cast<std::size_t>(total), 0.0);
    for (int64_t i = 0; i < m; ++i) {
        bool keep = true;
        int64_t flat = 0;
        for (int64_t d = 0; d < n_dims && keep; ++d) {
            const auto& e = edges[static_cast<std::size_t>(d)];
            const double v = p[i * n_dims + d];
            keep = v >= e.front() && v <= e.back();
            const int64_t pos = (std::upper_bound(e.begin(), e.end(), v) - e.begin()) - 1;
            flat = flat * counts[static_cast<std::size_t>(d)] + std::clamp<int64_t>(pos, 0, counts[static_cast<std::size_t>(d)] - 1);
        }
        if (keep) hist[static_cast<std::size_t>(flat)] += w.defined() ? w.data_ptr<double>()[i] : 1.0;
    }
    Tensor h = ember::empty(counts, kDouble);
    std::copy(hist.begin(), hist.end(), h.data_ptr<double>());
    h = h.to(input.scalar_type());
    if (density) {
        h = h / h.sum();
        for (int64_t d = 0; d < n_dims; ++d) {
            const auto& e = edges[static_cast<std::size_t>(d)];
            Tensor widths = ember::empty({counts[static_cast<std::size_t>(d)]}, kDouble);
            for (int64_t k = 0; k < counts[static_cast<std::size_t>(d)]; ++k) {
                widths.data_ptr<double>()[k] = e[static_cast<std::size_t>(k + 1)] - e[static_cast<std::size_t>(k)];
            }
            Shape s(static_cast<std::size_t>(n_dims), 1);
            s[static_cast<std::size_t>(d)] = counts[static_cast<std::size_t>(d)];
            h = h / widths.to(input.scalar_type()).reshape(s);
        }
    }
    OpResult out{h};
    for (const auto& e : edges) {
        Tensor t = ember::empty({static_cast<int64_t>(e.size())}, kDouble);
        std::copy(e.begin(), e.end(), t.data_ptr<double>());
        out.push_back(t.to(input.scalar_type()));
    }
    return out;
}

int64_t bin_count(const Value& v, int64_t dim, const std::string& fname) {
    if (v.kind != Value::Kind::Int) {
        const char* what = fname == "histogram" ? "int or Tensor" : "int, a sequence of ints or a sequence of Tensors";
        throw TypeError(fname + "(): argument 'bins' must be " + what + ", not " + type_name(v));
    }
    if (v.i <= 0) {
        throw Error("torch.histogram(): bins must be > 0, but got " + std::to_string(v.i) + " for dimension " + std::to_string(dim));
    }
    return v.i;
}

std::vector<Tensor> check_edges(const Tensor& input, const std::vector<Tensor>& edges) {
    const int64_t n_dims = input.size(-1);
    if (static_cast<int64_t>(edges.size()) != n_dims) {
        throw Error("torch.histogramdd: expected " + std::to_string(n_dims) + " sequences of bin edges for a " + std::to_string(n_dims) +
                    "-dimensional histogram but got " + std::to_string(edges.size()));
    }
    for (std::size_t k = 0; k < edges.size(); ++k) {
        const Tensor& e = edges[k];
        if (e.scalar_type() != input.scalar_type()) {
            throw Error("torch.histogramdd: input tensor and bins tensors should have the same dtype, but got input with dtype " +
                        std::string(scalar_type_name(input.scalar_type())) + " and bins for dimension " + std::to_string(k) +
                        " with dtype " + std::string(scalar_type_name(e.scalar_type())));
        }
        if (e.dim() != 1) {
            throw Error("torch.histogramdd: bins tensor should have one dimension, but got " + std::to_string(e.dim()) +
                        " dimensions in the bins tensor for dimension " + std::to_string(k));
        }
        if (e.numel() == 0) {
            throw Error("torch.histogramdd: bins tensor should have at least 1 element, but got 0 elements in the bins tensor for "
                        "dimension " + std::to_string(k));
        }
        if (e.numel() - 1 <= 0) throw Error("torch.histogram(): bins must be > 0, but got 0 for dimension " + std::to_string(k));
    }
    return edges;
}

// ------------------------------------------------------------------------- ctc_loss

double log_add(double a, double b) {
    if (std::isinf(a) && a < 0) return b;
    if (std::isinf(b) && b < 0) return a;
    const double m = std::max(a, b);
    return m + std::log(std::exp(a - m) + std::exp(b - m));
}

std::vector<int64_t> lengths_of(const Value& v, int64_t n, const char* name) {
    std::vector<int64_t> out;
    if (v.is_tensor()) {
        Tensor t = v.tensor.to(kLong).contiguous().reshape({-1});
        out.assign(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
    } else if (v.is_sequence()) {
        out = to_ints(v, name);
    } else {
        out.push_back(to_int(v, name));
    }
    if (static_cast<int64_t>(out.size()) != n) throw Error(std::string(name) + " must be of size batch_size");
    return out;
}

Tensor ctc_loss(const Args& a, const std::string& reduction) {
    Tensor lp = a.tensor("log_probs"), targets = a.tensor("targets");
    const int64_t blank = a.integer("blank");
    const bool unbatched = lp.dim() == 2;
    Tensor d = unbatched ? lp.unsqueeze(1) : lp;
    const int64_t T = d.size(0), N = d.size(1), C = d.size(2);
    const std::vector<int64_t> il = lengths_of(a["input_lengths"], N, "input_lengths");
    const std::vector<int64_t> tl = lengths_of(a["target_lengths"], N, "target_lengths");
    if (N && *std::max_element(il.begin(), il.end()) > T) {
        throw Error("Expected input_lengths to have value at most " + std::to_string(T) + ", but got value " +
                    std::to_string(*std::max_element(il.begin(), il.end())) +
                    " (while checking arguments for ctc_loss_allocate_outputs)");
    }
    Tensor tg = targets.to(kLong).contiguous();
    if (unbatched && tg.dim() == 1) tg = tg.unsqueeze(0);
    const int64_t smax = N ? *std::max_element(tl.begin(), tl.end()) : 0;
    std::vector<std::vector<int64_t>> labels(static_cast<std::size_t>(N));
    if (tg.dim() == 2) {
        if (tg.size(1) < smax) {
            throw Error("Expected tensor to have size at least " + std::to_string(smax) + " at dimension 1, but got size " +
                        std::to_string(tg.size(1)) + " for argument #2 'targets' (while checking arguments for "
                        "ctc_loss_allocate_outputs)");
        }
        for (int64_t b = 0; b < N; ++b) {
            const int64_t* row = tg.data_ptr<int64_t>() + b * tg.size(1);
            labels[static_cast<std::size_t>(b)].assign(row, row + tl[static_cast<std::size_t>(b)]);
        }
    } else {
        int64_t start = 0;
        for (int64_t b = 0; b < N; ++b) {
            for (int64_t k = 0; k < tl[static_cast<std::size_t>(b)]; ++k) {
                const int64_t i = std::clamp<int64_t>(start + k, 0, std::max<int64_t>(tg.numel() - 1, 0));
                labels[static_cast<std::size_t>(b)].push_back(tg.numel() ? tg.data_ptr<int64_t>()[i] : blank);
            }
            start += tl[static_cast<std::size_t>(b)];
        }
    }
    Tensor x = d.to(kDouble).contiguous();
    const double* px = x.data_ptr<double>();
    const double ninf = -std::numeric_limits<double>::infinity();
    std::vector<double> nll(static_cast<std::size_t>(N));
    for (int64_t b = 0; b < N; ++b) {
        const auto& lab = labels[static_cast<std::size_t>(b)];
        const int64_t S = 2 * static_cast<int64_t>(lab.size()) + 1;
        std::vector<int64_t> ext(static_cast<std::size_t>(S), blank);
        for (std::size_t k = 0; k < lab.size(); ++k) ext[2 * k + 1] = lab[k];
        auto emit = [&](int64_t t, int64_t s) { return px[(t * N + b) * C + ext[static_cast<std::size_t>(s)]]; };
        std::vector<double> alpha(static_cast<std::size_t>(S), ninf), next(static_cast<std::size_t>(S));
        const int64_t len = il[static_cast<std::size_t>(b)];
        if (len > 0) {
            alpha[0] = emit(0, 0);
            if (S > 1) alpha[1] = emit(0, 1);
        }
        for (int64_t t = 1; t < len; ++t) {
            for (int64_t s = 0; s < S; ++s) {
                double v = alpha[static_cast<std::size_t>(s)];
                if (s >= 1) v = log_add(v, alpha[static_cast<std::size_t>(s - 1)]);
                const int64_t label = ext[static_cast<std::size_t>(s)];
                if (s >= 2 && label != blank && label != ext[static_cast<std::size_t>(s - 2)]) {
                    v = log_add(v, alpha[static_cast<std::size_t>(s - 2)]);
                }
                next[static_cast<std::size_t>(s)] = std::isinf(v) && v < 0 ? ninf : v + emit(t, s);
            }
            alpha.swap(next);
        }
        double ll = alpha[static_cast<std::size_t>(S - 1)];
        if (S > 1) ll = log_add(ll, alpha[static_cast<std::size_t>(S - 2)]);
        nll[static_cast<std::size_t>(b)] = -ll;
    }
    if (a.boolean("zero_infinity")) {
        for (double& v : nll) {
            if (std::isinf(v)) v = 0;
        }
    }
    Tensor out = ember::empty({N}, kDouble);
    std::copy(nll.begin(), nll.end(), out.data_ptr<double>());
    out = out.to(lp.scalar_type());
    if (unbatched) out = out.reshape({});
    if (reduction == "mean") {
        Tensor lengths = ember::empty({N}, kDouble);
        for (int64_t b = 0; b < N; ++b) {
            lengths.data_ptr<double>()[b] = static_cast<double>(std::max<int64_t>(tl[static_cast<std::size_t>(b)], 1));
        }
        lengths = lengths.to(lp.scalar_type());
        return ember::mean(out / (unbatched ? lengths.reshape({}) : lengths));
    }
    if (reduction == "sum") return ember::sum(out);
    if (reduction == "none") return out;
    throw ValueError(reduction + " is not a valid value for reduction");
}

// ------------------------------------------------------------------------- FFT helpers

Tensor freq_factory(const Args& a, bool onesided) {
    const std::string fname = a.op();
    const int64_t n = a.integer("n");
    if (n < 0) throw Error("Trying to create tensor with negative dimension " + std::to_string(n) + ": [" + std::to_string(n) + "]");
    const ScalarType dt = a.dtype("dtype").value_or(get_default_dtype());
    if (!is_floating_point(dt)) throw Error(fname.substr(3) + " requires a floating point or complex dtype");
    const double d = a.number("d");
    const int64_t count = onesided ? n / 2 + 1 : n;
    Tensor k = ember::empty({count}, kDouble);
    for (int64_t i = 0; i < count; ++i) {
        double v = static_cast<double>(i);
        if (!onesided && i >= (n + 1) / 2) v -= static_cast<double>(n);
        k.data_ptr<double>()[i] = v;
    }
    // PyTorch multiplies in the result's dtype by 1 / (n * d) rounded to it
    const double scale = 1.0 / (static_cast<double>(n) * d);
    Tensor r = k.to(dt) * ember::scalar_tensor(scale, dt);
    if (a.boolean("requires_grad")) r.requires_grad_(true);
    return to_out(a, r);
}

Tensor fft_shift(const Tensor& x, const Value& dim, bool inverse) {
    Shape dims;
    if (dim.is_none()) {
        for (int64_t i = 0; i < x.dim(); ++i) dims.push_back(i);
    } else if (dim.is_sequence()) {
        dims = to_ints(dim, "fftshift(): dim");
    } else {
        dims.push_back(to_int(dim, "fftshift(): dim"));
    }
    for (int64_t& d : dims) d = dim_index(d, x.dim(), "fftshift");
    if (dims.empty()) return x.clone();
    std::vector<Value> shifts, ds;
    for (int64_t d : dims) {
        shifts.push_back(Value::integer((x.size(d) + (inverse ? 1 : 0)) / 2));
        ds.push_back(Value::integer(d));
    }
    return op_table().at("roll").fn({Value::of(x), Value::list(shifts), Value::list(ds)}, {}).at(0);
}

}  // namespace

void register_more6_ops(OpTable& t) {
    def(t, "as_strided_scatter", "input, src, size, stride, storage_offset=None", [](const Args& a) {
        Tensor x = a.tensor("input"), src = a.tensor("src");
        // a copy of input's whole storage region, keeping its geometry
        Tensor out = x.clone();
        if (!x.is_contiguous()) out = ember::empty_strided(x.sizes(), x.strides(), x.scalar_type()).copy_(x);
        const Shape size = a.ints("size");
        Tensor region = out.as_strided(size, a.ints("stride"), a.optional_integer("storage_offset"));
        if (shape_of(src) != size) {
            throw Error("expected src to have a size equal to the slice of self. src size = [" + join_dims(shape_of(src)) +
                        "], slice size = [" + join_dims(size) + "]");
        }
        region.copy_(src.to(region.scalar_type()));
        return one(out);
    });
    def(t, "resize_as_", "input, the_template, *, memory_format=None", [](const Args& a) {
        Tensor x = a.tensor("input");
        const Shape size = shape_of(a.tensor("the_template"));
        if (size == shape_of(x)) return one(x);
        if (x.requires_grad()) throw Error("cannot resize variables that require grad");
        int64_t n = 1;
        for (int64_t s : size) n *= s;
        if (n > x.numel()) {
            throw NotImplementedError("resize_as_: growing a tensor's storage is not supported by Ember's C++ frontend");
        }
        Shape strides(size.size(), 1);
        for (int64_t k = static_cast<int64_t>(size.size()) - 2; k >= 0; --k) {
            strides[static_cast<std::size_t>(k)] = strides[static_cast<std::size_t>(k + 1)] * size[static_cast<std::size_t>(k + 1)];
        }
        x.unsafeGetTensorImpl()->set_sizes_and_strides(size, strides, x.storage_offset());
        return one(x);
    });
    def(t, "gradient", "input, *, spacing=1, dim=None, edge_order=1", [](const Args& a) { return gradient(a); });
    def(t, "histogram", "input, bins=100, *, range=None, weight=None, density=False", [](const Args& a) -> OpResult {
        Tensor x = a.tensor("input");
        const Value& bins = a["bins"];
        Tensor points = x.reshape({-1, 1});
        std::vector<Tensor> edges;
        std::vector<int64_t> counts;
        if (bins.is_tensor()) {
            if (!a.is_none("range")) {
                throw TypeError("histogram() received an invalid combination of arguments - got (Tensor, Tensor, range=tuple)");
            }
            edges = check_edges(points, {bins.tensor});
        } else {
            counts.push_back(bin_count(bins, 0, "histogram"));
        }
        Tensor w = a.optional_tensor("weight");
        if (w.defined()) w = w.reshape({-1});
        return histogramdd_impl(points, shape_of(points), counts, edges, a["range"], w, a.boolean("density"));
    });
    def(t, "histogramdd", "input, bins, *, range=None, weight=None, density=False", [](const Args& a) -> OpResult {
        Tensor x = a.tensor("input");
        if (x.dim() < 2) throw Error("torch.histogramdd: input tensor should have at least 2 dimensions");
        const int64_t n_dims = x.size(-1);
        const Value& bins = a["bins"];
        std::vector<int64_t> counts;
        std::vector<Tensor> edges;
        if (bins.kind == Value::Kind::Int) {
            for (int64_t k = 0; k < n_dims; ++k) counts.push_back(bin_count(bins, k, "histogramdd"));
        } else if (bins.is_tensor()) {
            throw TypeError("histogramdd(): argument 'bins' must be int, a sequence of ints or a sequence of Tensors, not Tensor");
        } else if (bins.is_sequence() && !bins.items.empty() && bins.items[0].is_tensor()) {
            for (const Value& v : bins.items) edges.push_back(v.tensor);
            edges = check_edges(x, edges);
        } else if (bins.is_sequence()) {
            if (static_cast<int64_t>(bins.items.size()) != n_dims) {
                throw Error("histogramdd: The size of bins must be equal to the innermost dimension of the input.");
            }
            for (std::size_t k = 0; k < bins.items.size(); ++k) {
                counts.push_back(bin_count(bins.items[k], static_cast<int64_t>(k), "histogramdd"));
            }
        } else {
            throw TypeError(std::string("histogramdd(): argument 'bins' must be int, a sequence of ints or a sequence of Tensors, not ") +
                            type_name(bins));
        }
        if (n_dims == 0) return {ember::zeros({}, x.scalar_type())};
        return histogramdd_impl(x, shape_of(x), counts, edges, a["range"], a.optional_tensor("weight"), a.boolean("density"));
    });
    def(t, "hash_tensor", "input, dim=None, *, keepdim=False, mode=0", [](const Args& a) {
        Tensor x = a.tensor("input");
        if (a.integer("mode") != 0) throw Error("Unknown hash_tensor mode: " + std::to_string(a.integer("mode")));
        Shape axes;
        const Value& dim = a["dim"];
        if (dim.is_none() || (dim.is_sequence() && dim.items.empty())) {
            if (x.numel() == 0) {
                throw Error("hash_tensor: Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with "
                            "the 'dim' argument.");
            }
            for (int64_t i = 0; i < x.dim(); ++i) axes.push_back(i);
        } else {
            for (int64_t d : dim.is_sequence() ? to_ints(dim, "hash_tensor(): dim") : Shape{dim.i}) {
                axes.push_back(dim_index(d, x.dim(), "hash_tensor"));
            }
        }
        // the elements' 64-bit patterns: floats as float64, integers and bool as int64
        Tensor bits;
        if (x.is_floating_point()) {
            Tensor xd = x.to(kDouble).contiguous();
            bits = ember::empty(shape_of(xd), kLong);
            std::memcpy(bits.data_ptr<int64_t>(), xd.data_ptr<double>(), static_cast<std::size_t>(xd.numel()) * sizeof(double));
        } else {
            bits = x.to(kLong).contiguous();
        }
        Shape keep, perm;
        for (int64_t k = 0; k < x.dim(); ++k) {
            if (std::find(axes.begin(), axes.end(), k) == axes.end()) keep.push_back(k);
        }
        perm = keep;
        perm.insert(perm.end(), axes.begin(), axes.end());
        Shape kept_shape;
        for (int64_t k : keep) kept_shape.push_back(x.size(k));
        int64_t n = 1;
        for (int64_t k : axes) n *= x.size(k);
        Tensor moved = bits.permute(perm).contiguous();
        const int64_t rows = moved.numel() / std::max<int64_t>(n, 1);
        Tensor r = ember::zeros(kept_shape, kLong);
        const int64_t* mp = moved.data_ptr<int64_t>();
        int64_t* rp = r.data_ptr<int64_t>();
        for (int64_t i = 0; i < (n ? rows : r.numel()); ++i) {
            int64_t h = 0;
            for (int64_t j = 0; j < n; ++j) h ^= mp[i * n + j];
            rp[i] = h;
        }
        if (a.boolean("keepdim")) {
            Shape s;
            for (int64_t k = 0; k < x.dim(); ++k) s.push_back(std::find(axes.begin(), axes.end(), k) != axes.end() ? 1 : x.size(k));
            r = r.reshape(s);
        }
        return one(r);
    });
    def(t, "ctc_loss", "log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0, zero_infinity=False",
        [](const Args& a) {
            const int64_t r = a.integer("reduction");
            if (r < 0 || r > 2) throw ValueError(std::to_string(r) + " is not a valid value for reduction");
            return one(ctc_loss(a, r == 0 ? "none" : r == 1 ? "mean" : "sum"));
        });
    def(t, "nn.functional.ctc_loss",
        "log_probs, targets, input_lengths, target_lengths, blank=0, reduction='mean', zero_infinity=False",
        [](const Args& a) { return one(ctc_loss(a, a.string("reduction"))); });

    // ---- FFT helpers with real results
    const char* freq_signature = "n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False";
    def(t, "fft_fftfreq", freq_signature, [](const Args& a) { return one(freq_factory(a, false)); });
    def(t, "fft_rfftfreq", freq_signature, [](const Args& a) { return one(freq_factory(a, true)); });
    def(t, "fft_fftshift", "input, dim=None", [](const Args& a) { return one(fft_shift(a.tensor("input"), a["dim"], false)); });
    def(t, "fft_ifftshift", "input, dim=None", [](const Args& a) { return one(fft_shift(a.tensor("input"), a["dim"], true)); });

    // ---- random ops (the default generator: PyTorch's streams, as Python Ember's)
    def(t, "bernoulli", "input, p=None, *, generator=None, out=None", [](const Args& a) {
        no_generator(a);
        Tensor x = a.tensor("input");
        Tensor r = a.is_none("p") ? ember::bernoulli(x).to(x.scalar_type())
                                  : ember::empty(shape_of(x), x.scalar_type()).bernoulli_(a.number("p"));
        return one(to_out(a, r));
    });
    def(t, "binomial", "count, prob, generator=None", [](const Args& a) {
        no_generator(a);
        Tensor count = a.tensor("count"), prob = a.tensor("prob");
        if (!count.is_floating_point()) {
            throw ValueError("binomial only supports floating-point dtypes for count, got: " +
                             std::string(scalar_type_name(count.scalar_type())));
        }
        if (prob.scalar_type() != count.scalar_type()) {
            throw Error("Found dtype " + std::string(scalar_type_name(prob.scalar_type())) + " but expected " +
                        std::string(scalar_type_name(count.scalar_type())));
        }
        std::vector<Tensor> b = ember::broadcast_tensors({count, prob});
        Tensor c = b[0].to(kDouble).contiguous(), p = b[1].to(kDouble).contiguous();
        Tensor r = ember::empty(shape_of(c), kDouble);
        for (int64_t i = 0; i < c.numel(); ++i) {
            const double cv = c.data_ptr<double>()[i];
            const int64_t n = std::isfinite(cv) && cv > 0 ? static_cast<int64_t>(cv) : 0;
            const double q = p.data_ptr<double>()[i];
            Tensor u = ember::rand({std::max<int64_t>(n, 0)}, kDouble);
            r.data_ptr<double>()[i] = n > 0 ? ember::sum(u < q).item<double>() : 0.0;
        }
        return one(r.to(count.scalar_type()));
    });
    def(t, "multinomial", "input, num_samples, replacement=False, *, generator=None, out=None", [](const Args& a) {
        no_generator(a);
        return one(to_out(a, ember::multinomial(a.tensor("input"), a.integer("num_samples"), a.boolean("replacement"))));
    });
    for (const char* name : {"gumbel_softmax", "nn.functional.gumbel_softmax"}) {
        def(t, name, "logits, tau=1, hard=False, eps=1e-10, dim=-1", [](const Args& a) {
            Tensor logits = a.tensor("logits");
            // Gumbel(0, 1) noise: -log(E), E ~ Exponential(1) = -log(U)
            Tensor u = ember::rand(shape_of(logits), logits.scalar_type());
            Tensor gumbels = -ember::log(-ember::log(u));
            const int64_t dim = a.integer("dim");
            Tensor y = ember::softmax((logits + gumbels) / a.number("tau"), dim);
            if (!a.boolean("hard")) return one(y);
            Tensor index = std::get<1>(ember::max(y, dim, true));
            Tensor hard = ember::zeros_like(logits).scatter(dim, index, Scalar(1.0));
            return one(hard - y.detach() + y);
        });
    }
}

}  // namespace ember::jit::detail
