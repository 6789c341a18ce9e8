// More neural-network ops of the C++ op table, composed from the library's kernels (no new
// kernel: each is index_select / matmul / col2im / the 2-D convolution and pooling kernels,
// so autograd runs through them as through any composite):
//   interpolate (nearest, nearest-exact, linear, bilinear, bicubic, trilinear; antialias for
//     bilinear, bicubic, lanczos; area as adaptive average pooling) and the deprecated
//     upsample spellings: separable per-axis resampling, sum_k x[idx_k] * w_k, with Python
//     Ember's source-coordinate rules and weights (ember/ops/nn_misc.py, _resample_weights.py);
//     uint8 bilinear/bicubic/lanczos in PyTorch's int16 fixed point, the same bytes as Python;
//   conv_transpose1d/2d/3d: ember::nn::functional's (nn/functional/conv_transpose.h: W^T x
//     through matmul, then col2im; 3-D: the 2-D transposed convolution of each depth tap,
//     accumulated by index_add);
//   conv3d (the core's ember::conv3d, with string padding), max_pool3d, avg_pool3d,
//     adaptive_avg_pool3d: the depth window gathered by index_select, the 2-D kernel over
//     height and width; adaptive_max_pool1d/2d/3d: the core kernels;
//   max_pool1d, avg_pool1d, adaptive_avg_pool1d: the 2-D kernels over a height of 1;
//   einsum: diagonals for repeated labels, then pairwise contractions by bmm.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include "ember/error.h"
#include "jit/ops_common.h"
#include "nn/functional/conv_transpose.h"

namespace ember::jit::detail {

namespace {

Tensor long_tensor(const std::vector<int64_t>& v) {
    Tensor t = ember::empty({static_cast<int64_t>(v.size())}, kLong);
    std::copy(v.begin(), v.end(), t.data_ptr<int64_t>());
    return t;
}

Tensor double_tensor(const std::vector<double>& v) {
    Tensor t = ember::empty({static_cast<int64_t>(v.size())}, kDouble);
    std::copy(v.begin(), v.end(), t.data_ptr<double>());
    return t;
}

int64_t floor_div(int64_t a, int64_t b) {
    const int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// A pooling's stride: None (or an empty list) means the kernel size.
std::vector<int64_t> stride_or_kernel(const Args& a, std::size_t n) {
    const Value& v = a["stride"];
    if (v.is_none() || (v.is_sequence() && v.items.empty())) return a.ints("kernel_size", n);
    return a.ints("stride", n);
}

// ------------------------------------------------------------------------- interpolate

// One tap of a resampling along an axis: out[i] += x[index[i]] * weight[i] (no weight: 1).
struct Tap {
    std::vector<int64_t> index;
    std::vector<double> weight;
    std::vector<bool> mask;  // empty: every output has the tap
};

double source_scale(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
    if (align_corners) return out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
    if (scale && *scale > 0) return 1.0 / *scale;
    return static_cast<double>(in) / static_cast<double>(out);
}

std::vector<Tap> nearest_taps(int64_t in, int64_t out, std::optional<double> scale, bool exact) {
    const double s = source_scale(in, out, false, scale);
    Tap tap;
    for (int64_t i = 0; i < out; ++i) {
        const double d = static_cast<double>(i);
        const double src = exact ? std::floor((d + 0.5) * s) : std::floor(d * s);
        tap.index.push_back(std::min(static_cast<int64_t>(src), in - 1));
    }
    return {tap};
}

std::vector<Tap> linear_taps(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
    const double s = source_scale(in, out, align_corners, scale);
    Tap lo, hi;
    for (int64_t i = 0; i < out; ++i) {
        const double d = static_cast<double>(i);
        const double src = align_corners ? d * s : std::max((d + 0.5) * s - 0.5, 0.0);
        const int64_t i0 = std::min(static_cast<int64_t>(std::floor(src)), in - 1);
        const int64_t i1 = std::min(i0 + 1, in - 1);
        const double lam = src - static_cast<double>(i0);
        lo.index.push_back(i0);
        lo.weight.push_back(1.0 - lam);
        hi.index.push_back(i1);
        hi.weight.push_back(lam);
    }
    return {lo, hi};
}

std::vector<Tap> cubic_taps(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
    const double s = source_scale(in, out, align_corners, scale);
    constexpr double A = -0.75;  // PyTorch's cubic convolution coefficient
    auto near = [](double x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };
    auto far = [](double x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };
    std::vector<Tap> taps(4);
    for (int64_t i = 0; i < out; ++i) {
        const double d = static_cast<double>(i);
        const double src = align_corners ? d * s : (d + 0.5) * s - 0.5;
        const double f = std::floor(src);
        const double t = src - f;
        const double w[4] = {far(t + 1), near(t), near(1 - t), far(2 - t)};
        for (int k = 0; k < 4; ++k) {
            taps[static_cast<std::size_t>(k)].index.push_back(
                std::clamp<int64_t>(static_cast<int64_t>(f) + k - 1, 0, in - 1));
            taps[static_cast<std::size_t>(k)].weight.push_back(w[k]);
        }
    }
    return taps;
}

// sum_k index_select(x, axis, idx_k) * w_k, the weights in x's dtype (as Python's _resample);
// a tap with a mask contributes only where it is set (an output's window ends before it).
Tensor resample(const Tensor& x, int64_t axis, const std::vector<Tap>& taps) {
    Tensor r;
    for (const Tap& tap : taps) {
        Tensor v = x.index_select(axis, long_tensor(tap.index));
        Shape ws(static_cast<std::size_t>(x.dim() - axis), 1);
        ws[0] = static_cast<int64_t>(tap.index.size());
        if (!tap.weight.empty()) v = v * double_tensor(tap.weight).to(x.scalar_type()).view(ws);
        if (!tap.mask.empty()) {
            std::vector<double> m(tap.mask.begin(), tap.mask.end());
            v = ember::where(double_tensor(m).view(ws) > 0, v, ember::zeros_like(v));
        }
        r = r.defined() ? r + v : v;
    }
    return r;
}

// An axis resampled over index ranges (PyTorch's separable kernels): output i reads
// xsize[i] pixels from xmin[i] with weights w[i * width + k].
struct Ranges {
    std::vector<int64_t> xmin, xsize;
    std::vector<double> w;
    int64_t width = 0;
};

// PyTorch's aa_filter of each mode (cubic a = -0.5 with antialias, -0.75 without).
double filter(const std::string& mode, double x, double a) {
    x = std::fabs(x);
    if (mode == "bilinear") return x < 1.0 ? 1.0 - x : 0.0;
    if (mode == "bicubic") {
        if (x < 1.0) return ((a + 2) * x - (a + 3)) * x * x + 1;
        if (x < 2.0) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
        return 0.0;
    }
    if (x >= 3.0) return 0.0;  // lanczos-3: sinc(x) * sinc(x / 3)
    auto sinc = [](double v) { return v == 0.0 ? 1.0 : std::sin(v * M_PI) / (v * M_PI); };
    return sinc(x) * sinc(x / 3.0);
}

int interp_size(const std::string& mode) { return mode == "bilinear" ? 2 : mode == "bicubic" ? 4 : 6; }

// antialias=True: the filter widened by the downscale factor, normalised per output
// (_compute_indices_min_size_weights_aa), in double.
Ranges aa_ranges(const std::string& mode, int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
    const double s = source_scale(in, out, align_corners, scale);
    const double support = s >= 1.0 ? interp_size(mode) * 0.5 * s : interp_size(mode) * 0.5;
    Ranges r;
    r.width = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
    const double invscale = s >= 1.0 ? 1.0 / s : 1.0;
    r.w.assign(static_cast<std::size_t>(out * r.width), 0.0);
    for (int64_t i = 0; i < out; ++i) {
        const double center = s * (static_cast<double>(i) + 0.5);
        const int64_t xmin = std::max(static_cast<int64_t>(center - support + 0.5), int64_t{0});
        const int64_t xsize = std::clamp(std::min(static_cast<int64_t>(center + support + 0.5), in) - xmin, int64_t{0},
                                         r.width);
        double total = 0.0;
        double* w = &r.w[static_cast<std::size_t>(i * r.width)];
        for (int64_t j = 0; j < xsize; ++j) {
            w[j] = filter(mode, (static_cast<double>(j + xmin) - center + 0.5) * invscale, -0.5);
            total += w[j];
        }
        if (total != 0.0) {
            for (int64_t j = 0; j < xsize; ++j) w[j] /= total;
        }
        r.xmin.push_back(xmin);
        r.xsize.push_back(xsize);
    }
    return r;
}

// uint8 antialias=False: the plain taps, those outside the input folded onto the edge pixels
// (_compute_indices_min_size_weights), in double.
Ranges plain_ranges(const std::string& mode, int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
    const int width = interp_size(mode);
    const bool cubic = width > 2;
    const double s = source_scale(in, out, align_corners, scale);
    const int64_t support = width / 2;
    Ranges r;
    r.width = width;
    r.w.assign(static_cast<std::size_t>(out * width), 0.0);
    for (int64_t i = 0; i < out; ++i) {
        const double d = static_cast<double>(i);
        double real = align_corners ? s * d : s * (d + 0.5) - 0.5;
        if (!align_corners && !cubic && real < 0) real = 0;
        const int64_t index = std::min(static_cast<int64_t>(std::floor(static_cast<float>(real))), in - 1);
        const double lam = std::clamp(real - static_cast<double>(index), 0.0, 1.0);
        const int64_t lo = index - support + 1;
        const int64_t xmin = std::max(lo, int64_t{0});
        const int64_t xsize = std::clamp(std::min(index + support + 1, in) - xmin, int64_t{0}, int64_t{width});
        double* w = &r.w[static_cast<std::size_t>(i * width)];
        int64_t slot = 0;
        for (int64_t j = 0; j < width; ++j) {
            const double v = filter(mode, static_cast<double>(j + 1 - support) - lam, -0.75);
            if (lo + j <= 0) {
                slot = 0;
            } else if (lo + j >= in - 1) {
                slot = xsize - 1;
            }
            w[slot] += v;
            ++slot;
        }
        r.xmin.push_back(xmin);
        r.xsize.push_back(xsize);
    }
    return r;
}

// Float taps of index ranges: tap k reads min(xmin + k, in - 1), masked where k >= xsize.
std::vector<Tap> range_taps(const Ranges& r, int64_t in) {
    std::vector<Tap> taps(static_cast<std::size_t>(r.width));
    const auto out = static_cast<int64_t>(r.xmin.size());
    const int64_t shortest = r.xsize.empty() ? 0 : *std::min_element(r.xsize.begin(), r.xsize.end());
    for (int64_t k = 0; k < r.width; ++k) {
        Tap& tap = taps[static_cast<std::size_t>(k)];
        for (int64_t i = 0; i < out; ++i) {
            const auto u = static_cast<std::size_t>(i);
            tap.index.push_back(std::min(r.xmin[u] + k, in - 1));
            tap.weight.push_back(k < r.xsize[u] ? r.w[static_cast<std::size_t>(i * r.width + k)] : 0.0);
            if (k >= shortest) tap.mask.push_back(k < r.xsize[u]);
        }
    }
    return taps;
}

// One axis of PyTorch's uint8 resize: weights scaled by 2**precision (the largest keeping the
// biggest below 2**15) and rounded half away from zero; integer sums, rounded, clamped.
Tensor resample_uint8(const Tensor& x, int64_t axis, const Ranges& r) {
    double wt_max = 0.0;
    for (double v : r.w) wt_max = std::max(wt_max, v);
    int precision = 0;
    while (precision < 22 && static_cast<int>(0.5 + wt_max * static_cast<double>(1 << (precision + 1))) < (1 << 15)) {
        ++precision;
    }
    std::vector<int64_t> w16(r.w.size());
    for (std::size_t j = 0; j < r.w.size(); ++j) {
        const double v = r.w[j] * static_cast<double>(1 << precision);
        w16[j] = static_cast<int64_t>(v < 0 ? -0.5 + v : 0.5 + v);
    }
    const Tensor src = x.contiguous();
    Shape shape = shape_of(src);
    const auto a = static_cast<std::size_t>(axis);
    int64_t outer = 1, inner = 1;
    for (std::size_t d = 0; d < a; ++d) outer *= shape[d];
    for (std::size_t d = a + 1; d < shape.size(); ++d) inner *= shape[d];
    const int64_t n = shape[a], m = static_cast<int64_t>(r.xmin.size());
    shape[a] = m;
    Tensor out = ember::empty(shape, kByte);
    const auto* in_p = src.data_ptr<uint8_t>();
    auto* out_p = out.data_ptr<uint8_t>();
    for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < m; ++i) {
            const auto u = static_cast<std::size_t>(i);
            const int64_t* w = &w16[static_cast<std::size_t>(i * r.width)];
            for (int64_t q = 0; q < inner; ++q) {
                int64_t acc = int64_t{1} << (precision - 1);
                for (int64_t k = 0; k < r.xsize[u]; ++k) {
                    acc += static_cast<int64_t>(in_p[(o * n + r.xmin[u] + k) * inner + q]) * w[k];
                }
                out_p[(o * m + i) * inner + q] = static_cast<uint8_t>(std::clamp<int64_t>(acc >> precision, 0, 255));
            }
        }
    }
    return out;
}

int mode_dims(const std::string& mode) {
    if (mode == "linear") return 1;
    if (mode == "bilinear" || mode == "bicubic" || mode == "lanczos") return 2;
    if (mode == "trilinear") return 3;
    return 0;  // nearest, nearest-exact: any
}

// `value` (a number or one per spatial dim) as one number per spatial dim; Python's error
// when a list has the wrong length.
std::vector<double> per_spatial_dim(const Value& value, const Shape& spatial, const char* name, const char* described,
                                    const char* fmt, const std::string& op) {
    const std::size_t k = spatial.size();
    if (!value.is_sequence()) {
        const double v = value.kind == Value::Kind::Float ? value.f : static_cast<double>(to_int(value, op + "(): " + name));
        return std::vector<double>(k, v);
    }
    if (value.items.size() != k) {
        throw ValueError(std::string("Input and ") + name + " must have the same number of spatial dimensions, but got input "
                         "with spatial dimensions of " + bracketed(spatial) + " and " + described + " " + describe(value) +
                         ". Please provide input tensor in (N, C, d1, d2, ...,dK) format and " + fmt + " format.");
    }
    std::vector<double> out;
    for (const Value& v : value.items) {
        out.push_back(v.kind == Value::Kind::Float ? v.f : static_cast<double>(to_int(v, op + "(): " + name)));
    }
    return out;
}

Tensor adaptive_avg_pool3d(const Tensor& input, const Shape& size, const std::string& op);

// PyTorch's upsample checks: a non-empty input (only the batch may be 0), positive sizes.
void check_sizes(const Shape& full, const Shape& sizes) {
    const std::size_t k = sizes.size();
    int64_t rest = 1;
    for (std::size_t d = 1; d < full.size(); ++d) rest *= full[d];
    if (rest == 0) {
        throw Error("Non-empty " + std::to_string(k + 2) + "D data tensor expected but got a tensor with sizes " +
                    bracketed(full));
    }
    bool ok = true;
    for (std::size_t d = 0; d < k; ++d) ok = ok && full[d + 2] > 0 && sizes[d] > 0;
    if (ok) return;
    const std::string names = std::string("DHW").substr(3 - k);
    std::string in_text, out_text;
    for (std::size_t d = 0; d < k; ++d) {
        const std::string sep = d ? ", " : "";
        in_text += sep + names[d] + ": " + std::to_string(full[d + 2]);
        out_text += sep + names[d] + ": " + std::to_string(sizes[d]);
    }
    throw Error("Input and output sizes should be greater than 0, but got input (" + in_text + ")" +
                (k == 1 ? " and" : "") + " output (" + out_text + ")");
}

// The dtype error PyTorch's CPU kernel for the mode gives (Python's _check_dtype).
void check_dtype(const Tensor& x, const std::string& mode, bool antialias, const Shape& sizes) {
    const ScalarType dt = x.scalar_type();
    if (mode == "nearest" || mode == "nearest-exact") return;
    if ((mode == "bilinear" || mode == "bicubic" || mode == "lanczos") && dt == kByte) return;
    std::string kernel;
    if (antialias) {
        if (dt == kFloat || dt == kDouble) return;
        const Shape full = shape_of(x);
        if (Shape(full.begin() + 2, full.end()) == sizes) return;  // a same-size resize copies first
        kernel = "compute_index_ranges_weights";
    } else {
        if (x.is_floating_point()) return;
        int64_t total = 0;  // (C++ tensors are contiguous: PyTorch's channels-last kernels only
        for (int64_t v : sizes) total += v;  // take small bilinear outputs)
        if (mode == "bilinear" && total <= 128) {
            kernel = "upsample_bilinear2d_channels_last";
        } else {
            kernel = mode == "bicubic" ? "compute_indices_weights_cubic" : "compute_indices_weights_linear";
        }
    }
    throw NotImplementedError("\"" + kernel + "\" not implemented for '" + std::string(scalar_type_name(dt)) + "'");
}

Tensor interpolate(const Tensor& x, const Value& size, const Value& scale_factor, const std::string& mode,
                   const Value& align_corners_v, bool recompute_scale_factor, bool antialias, const std::string& op) {
    const int64_t nd = x.dim();
    const int64_t k = nd - 2;
    const bool nearest = mode == "nearest" || mode == "nearest-exact";
    bool align_corners = false;
    if (nearest || mode == "area") {
        if (!align_corners_v.is_none()) {
            throw ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                             "bicubic | trilinear");
        }
    } else if (!align_corners_v.is_none()) {
        if (align_corners_v.kind != Value::Kind::Bool) {
            throw TypeError(op + "(): argument 'align_corners' must be bool, not " + type_name(align_corners_v));
        }
        align_corners = align_corners_v.b;
    }
    const Shape full = shape_of(x);
    const Shape spatial(full.begin() + std::min<int64_t>(2, nd), full.end());
    Shape sizes;
    std::vector<std::optional<double>> scales(spatial.size());
    if (!size.is_none() && !scale_factor.is_none()) throw ValueError("only one of size or scale_factor should be defined");
    if (!size.is_none()) {
        for (double v : per_spatial_dim(size, spatial, "output", "output size of", "output size in (o1, o2, ...,oK)", op)) {
            sizes.push_back(static_cast<int64_t>(v));
        }
        if (recompute_scale_factor) throw ValueError("recompute_scale_factor is not meaningful with an explicit size.");
    } else {
        if (scale_factor.is_none()) throw ValueError("either size or scale_factor should be defined");
        const std::vector<double> s = per_spatial_dim(scale_factor, spatial, "scale_factor", "scale_factor of shape",
                                                      "scale_factor in (s1, s2, ...,sK)", op);
        for (std::size_t i = 0; i < s.size(); ++i) {
            sizes.push_back(static_cast<int64_t>(std::floor(static_cast<double>(spatial[i]) * s[i])));
            if (!recompute_scale_factor && mode != "area") scales[i] = s[i];
        }
    }
    if (antialias && !((mode == "bilinear" || mode == "bicubic" || mode == "lanczos") && nd == 4)) {
        throw ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D "
                         "tensor as input");
    }
    const int want = mode_dims(mode);
    const std::string modes = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact";
    if ((!nearest && mode != "area" && want == 0) || k < 1 || k > 3 ||
        ((mode == "bicubic" || mode == "lanczos") && k != 2)) {
        throw NotImplementedError("Input Error: Only 3D, 4D and 5D input Tensors supported (got " + std::to_string(nd) +
                                  "D) for the modes: " + modes + " (got " + mode + ")");
    }
    if (want != 0 && k != want) {
        throw NotImplementedError("Got " + std::to_string(nd) + "D input, but " + mode + " mode needs " +
                                  std::to_string(want + 2) + "D input");
    }
    if (mode == "area") {  // PyTorch's interpolate: adaptive average pooling
        if (k == 1) return ember::adaptive_avg_pool2d(x.unsqueeze(-2), {1, sizes[0]}).squeeze(-2);
        if (k == 2) return ember::adaptive_avg_pool2d(x, sizes);
        return adaptive_avg_pool3d(x, sizes, op);
    }
    if (mode == "lanczos") {
        if (align_corners) throw ValueError("Lanczos mode does not support align_corners=True");
        if (!antialias) throw ValueError("Lanczos mode requires antialias=True");
    }
    check_dtype(x, mode, antialias, sizes);
    check_sizes(full, sizes);
    // the last axis first, as PyTorch's separable kernels; antialias and uint8 skip an axis
    // whose size does not change
    const bool fixed_point = x.scalar_type() == kByte && !nearest;
    Tensor out = x;
    for (int64_t ax = nd - 1; ax >= 2; --ax) {
        const auto u = static_cast<std::size_t>(ax - 2);
        const int64_t n = spatial[u], m = sizes[u];
        if ((antialias || fixed_point) && n == m) continue;
        if (fixed_point) {
            out = resample_uint8(out, ax, antialias ? aa_ranges(mode, n, m, align_corners, scales[u])
                                                    : plain_ranges(mode, n, m, align_corners, scales[u]));
            continue;
        }
        std::vector<Tap> taps;
        if (antialias) {
            taps = range_taps(aa_ranges(mode, n, m, align_corners, scales[u]), n);
        } else if (nearest) {
            taps = nearest_taps(n, m, scales[u], mode == "nearest-exact");
        } else if (mode == "bicubic") {
            taps = cubic_taps(n, m, align_corners, scales[u]);
        } else {
            taps = linear_taps(n, m, align_corners, scales[u]);
        }
        out = resample(out, ax, taps);
    }
    return out.is_same(x) ? x.clone() : out;
}

bool truthy(const Value& v) {
    if (v.is_none()) return false;
    if (v.kind == Value::Kind::Bool) return v.b;
    if (v.kind == Value::Kind::Int) return v.i != 0;
    return true;
}

// ------------------------------------------------------------------------- 3-D pooling

// PyTorch's pooling_output_shape.
int64_t pool_out(int64_t size, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
    int64_t out = floor_div(size + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0), s) + 1;
    if (ceil_mode && (out - 1) * s >= size + p) --out;
    return out;
}

void check_pool3d(const Tensor& x, const Shape& k, const Shape& s, const Shape& p, const Shape& d, const std::string& op) {
    if (x.dim() != 4 && x.dim() != 5) {
        throw Error(op + "(): Expected 4D or 5D (batch mode) tensor for input, but got: " + bracketed(shape_of(x)));
    }
    for (std::size_t i = 0; i < 3; ++i) {
        if (k[i] <= 0) throw Error(op + "(): kernel_size must be greater than zero");
        if (s[i] <= 0) throw Error(op + "(): stride must be greater than zero");
        if (d[i] <= 0) throw Error(op + "(): dilation must be greater than zero");
        if (p[i] < 0 || p[i] > ((k[i] - 1) * d[i] + 1) / 2) {
            throw Error(op + "(): pad should be at most half of effective kernel size, but got pad=" + std::to_string(p[i]) +
                        ", kernel_size=" + std::to_string(k[i]) + " and dilation=" + std::to_string(d[i]));
        }
    }
}

// The depth window of each output depth: the input depth of each tap, -1 where it is padding.
std::vector<int64_t> depth_windows(int64_t size, int64_t dout, int64_t k, int64_t s, int64_t p, int64_t d) {
    std::vector<int64_t> at;
    for (int64_t o = 0; o < dout; ++o) {
        for (int64_t j = 0; j < k; ++j) {
            const int64_t i = o * s - p + j * d;
            at.push_back(i >= 0 && i < size ? i : -1);
        }
    }
    return at;
}

std::pair<Tensor, Tensor> max_pool3d(const Tensor& input, const Shape& k, const Shape& s, const Shape& p, const Shape& dil,
                                     bool ceil_mode, bool with_indices, const std::string& op) {
    check_pool3d(input, k, s, p, dil, op);
    const bool unbatched = input.dim() == 4;
    const Tensor x = unbatched ? input.unsqueeze(0) : input;
    const int64_t n = x.size(0), c = x.size(1), d = x.size(2), h = x.size(3), w = x.size(4);
    const int64_t dout = pool_out(d, k[0], s[0], p[0], dil[0], ceil_mode);
    if (dout <= 0) throw Error(op + "(): Output size is too small");
    // a padding tap reads the window's first real depth instead (the max is unchanged)
    std::vector<int64_t> at = depth_windows(d, dout, k[0], s[0], p[0], dil[0]);
    for (int64_t o = 0; o < dout; ++o) {
        auto first = at.begin() + o * k[0];
        auto last = first + k[0];
        auto real = std::find_if(first, last, [](int64_t i) { return i >= 0; });
        if (real == last) throw Error(op + "(): a pooling window lies entirely in the padding");
        std::replace(first, last, int64_t{-1}, *real);
    }
    Tensor table = long_tensor(at);
    Tensor taps = x.index_select(2, table).view({n, c, dout, k[0], h, w});
    auto [deep, tap] = taps.max(3);
    auto [out, hw] = ember::max_pool2d_with_indices(deep.reshape({n * c, dout, h, w}), {k[1], k[2]}, {s[1], s[2]},
                                                    {p[1], p[2]}, {dil[1], dil[2]}, ceil_mode);
    const int64_t ho = out.size(2), wo = out.size(3);
    out = out.view({n, c, dout, ho, wo});
    Tensor indices;
    if (with_indices) {
        // the input depth of the chosen tap at each (h, w), read at the 2-D pool's argmax
        Tensor depth = table.view({1, 1, dout, k[0], 1, 1}).expand({n, c, dout, k[0], h, w}).gather(3, tap.unsqueeze(3));
        Tensor hw_flat = hw.reshape({n * c, dout, ho * wo});
        Tensor chosen = depth.reshape({n * c, dout, h * w}).gather(2, hw_flat);
        indices = (chosen * (h * w) + hw_flat).view({n, c, dout, ho, wo});
        if (unbatched) indices = indices.squeeze(0);
    }
    return {unbatched ? out.squeeze(0) : out, indices};
}

// The divisor of each output position along one axis (PyTorch's avg_pool: the window clipped
// to the padded input, then to the input unless count_include_pad).
std::vector<double> avg_counts(int64_t size, int64_t out, int64_t k, int64_t s, int64_t p, bool include_pad) {
    std::vector<double> counts;
    for (int64_t o = 0; o < out; ++o) {
        int64_t start = o * s - p;
        int64_t end = std::min(start + k, size + p);
        const int64_t pool = end - start;
        start = std::max<int64_t>(start, 0);
        end = std::min(end, size);
        counts.push_back(static_cast<double>(include_pad ? pool : end - start));
    }
    return counts;
}

Tensor avg_pool3d(const Tensor& input, const Shape& k, const Shape& s, const Shape& p, bool ceil_mode, bool include_pad,
                  std::optional<int64_t> divisor_override, const std::string& op) {
    if (input.dim() != 4 && input.dim() != 5) {
        throw Error(op + "(): Expected 4D or 5D (batch mode) tensor for input, but got: " + bracketed(shape_of(input)));
    }
    for (std::size_t i = 0; i < 3; ++i) {
        if (k[i] <= 0 || s[i] <= 0) throw Error(op + "(): kernel_size and stride must be greater than zero");
        if (p[i] < 0 || p[i] > k[i] / 2) {
            throw Error("pad should be smaller than or equal to half of kernel size, but got padW = " + std::to_string(p[2]) +
                        ", padH = " + std::to_string(p[1]) + ", padT = " + std::to_string(p[0]) + ", kW = " +
                        std::to_string(k[2]) + ", kH = " + std::to_string(k[1]) + ", kT = " + std::to_string(k[0]));
        }
    }
    if (divisor_override && *divisor_override == 0) throw Error("divisor must be not zero");
    const bool unbatched = input.dim() == 4;
    const Tensor x = unbatched ? input.unsqueeze(0) : input;
    const int64_t n = x.size(0), c = x.size(1), d = x.size(2), h = x.size(3), w = x.size(4);
    const int64_t dout = pool_out(d, k[0], s[0], p[0], 1, ceil_mode);
    if (dout <= 0) throw Error(op + "(): Output size is too small");
    // padding taps read a zero slab appended at depth d
    std::vector<int64_t> at = depth_windows(d, dout, k[0], s[0], p[0], 1);
    std::replace(at.begin(), at.end(), int64_t{-1}, d);
    const Tensor padded = ember::cat({x, ember::zeros({n, c, 1, h, w}, x.scalar_type())}, 2);
    Tensor deep = padded.index_select(2, long_tensor(at)).view({n, c, dout, k[0], h, w}).sum({3});
    Tensor sums = ember::avg_pool2d(deep.reshape({n * c, dout, h, w}), {k[1], k[2]}, {s[1], s[2]}, {p[1], p[2]}, ceil_mode,
                                    true, int64_t{1});
    const int64_t ho = sums.size(2), wo = sums.size(3);
    Tensor out = sums.view({n, c, dout, ho, wo});
    if (divisor_override) {
        out = out / static_cast<double>(*divisor_override);
    } else {
        Tensor cd = double_tensor(avg_counts(d, dout, k[0], s[0], p[0], include_pad)).view({dout, 1, 1});
        Tensor ch = double_tensor(avg_counts(h, ho, k[1], s[1], p[1], include_pad)).view({1, ho, 1});
        Tensor cw = double_tensor(avg_counts(w, wo, k[2], s[2], p[2], include_pad)).view({1, 1, wo});
        out = out / (cd * ch * cw).to(x.scalar_type());
    }
    return unbatched ? out.squeeze(0) : out;
}

// Adaptive average pooling along one dim: the mean of [floor(o*n/m), ceil((o+1)*n/m)).
Tensor adaptive_mean(const Tensor& x, int64_t dim, int64_t m) {
    const int64_t n = x.size(dim);
    std::vector<Tensor> parts;
    for (int64_t o = 0; o < m; ++o) {
        const int64_t start = (o * n) / m;
        const int64_t end = ((o + 1) * n + m - 1) / m;
        parts.push_back(x.narrow(dim, start, end - start).mean({dim}, true));
    }
    return ember::cat(parts, dim);
}

// output_size of an adaptive pool over the last `k` dims: an int, or a list whose None
// items keep the input's size.
Shape adaptive_size(const Args& a, const Tensor& x, std::size_t k) {
    const Value& v = a["output_size"];
    if (!v.is_sequence()) return a.ints("output_size", k);
    Shape size;
    for (std::size_t i = 0; i < v.items.size(); ++i) {
        size.push_back(v.items[i].is_none()
                           ? x.size(x.dim() - static_cast<int64_t>(v.items.size()) + static_cast<int64_t>(i))
                           : to_int(v.items[i], a.op() + "(): output_size"));
    }
    if (size.size() != k) {
        throw Error(a.op() + "(): output_size must be " + std::to_string(k) + ", but got " + describe(v));
    }
    return size;
}

Tensor adaptive_avg_pool3d(const Tensor& input, const Shape& size, const std::string& op) {
    if (input.dim() != 4 && input.dim() != 5) {
        throw Error(op + "(): Expected 4D or 5D tensor, but got " + bracketed(shape_of(input)));
    }
    for (int64_t m : size) {
        if (m <= 0) throw Error(op + "(): elements of output_size must be greater than or equal to 1, but got " + bracketed(size));
    }
    const bool unbatched = input.dim() == 4;
    const Tensor x = unbatched ? input.unsqueeze(0) : input;
    const int64_t n = x.size(0), c = x.size(1), h = x.size(3), w = x.size(4);
    Tensor deep = adaptive_mean(x, 2, size[0]);
    Tensor out = ember::adaptive_avg_pool2d(deep.reshape({n * c, size[0], h, w}), {size[1], size[2]})
                     .view({n, c, size[0], size[1], size[2]});
    return unbatched ? out.squeeze(0) : out;
}

// ------------------------------------------------------------------------- einsum

constexpr int kEllipsisLabel = 52;  // ellipsis dims: labels 52, 53, ... (letters are 0..51)

std::string char_of(int label) {
    if (label >= kEllipsisLabel) return "...";
    return std::string(1, static_cast<char>(label < 26 ? 'A' + label : 'a' + (label - 26)));
}

int label_of(char ch, const std::string& equation) {
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return 26 + (ch - 'a');
    throw Error("einsum(): invalid subscript given at index " + std::to_string(equation.find(ch)) +
                " in the equation string, subscripts must be in [a-zA-Z]");
}

// A term's labels; "..." gives the operand's ellipsis dims (its ndim less its letters; the
// output: all `max_ellipsis`), right-aligned in the block of `max_ellipsis` ellipsis labels.
std::vector<int> parse_term(const std::string& term, const std::string& equation, int64_t ndim, int64_t max_ellipsis,
                            bool output) {
    std::vector<int> labels;
    int64_t letters = 0;
    bool has_ellipsis = false;
    for (std::size_t i = 0; i < term.size(); ++i) {
        if (term[i] == '.') {
            if (has_ellipsis || term.compare(i, 3, "...") != 0) {
                throw Error("einsum(): found '.' for operand that is not part of any ellipsis");
            }
            has_ellipsis = true;
            i += 2;
        } else {
            ++letters;
        }
    }
    const int64_t e = output ? max_ellipsis : ndim - letters;
    if (!output && (has_ellipsis ? e < 0 : e != 0)) {
        throw Error("einsum(): the number of subscripts in the equation (" + std::to_string(letters) +
                    ") does not match the number of dimensions (" + std::to_string(ndim) + ") for operand" +
                    (has_ellipsis ? " and no ellipsis was given" : "") + "");
    }
    for (std::size_t i = 0; i < term.size(); ++i) {
        if (term[i] == '.') {
            for (int64_t t = 0; t < e; ++t) labels.push_back(kEllipsisLabel + static_cast<int>(max_ellipsis - e + t));
            i += 2;
        } else {
            labels.push_back(label_of(term[i], equation));
        }
    }
    return labels;
}

int64_t ellipsis_dims(const std::string& term, int64_t ndim) {
    const auto at = term.find("...");
    if (at == std::string::npos) return 0;
    return ndim - static_cast<int64_t>(term.size() - 3);
}

struct Operand {
    Tensor t;
    std::vector<int> labels;
};

// Sums `labels` out of the operand.
void sum_out(Operand& a, const std::vector<int>& drop) {
    std::vector<int64_t> dims;
    std::vector<int> kept;
    for (std::size_t i = 0; i < a.labels.size(); ++i) {
        if (std::find(drop.begin(), drop.end(), a.labels[i]) != drop.end()) {
            dims.push_back(static_cast<int64_t>(i));
        } else {
            kept.push_back(a.labels[i]);
        }
    }
    if (!dims.empty()) a.t = a.t.sum(dims);
    a.labels = kept;
}

Tensor einsum(const std::string& raw, std::vector<Tensor> operands) {
    std::string equation;
    for (char ch : raw) {
        if (ch != ' ') equation += ch;
    }
    const auto arrow = equation.find("->");
    const std::string lhs = equation.substr(0, arrow);
    std::vector<std::string> terms;
    for (std::size_t start = 0;;) {
        const auto comma = lhs.find(',', start);
        terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    if (operands.empty()) throw Error("einsum(): must provide at least one operand");
    if (terms.size() != operands.size()) {
        throw Error("einsum(): " + std::string(terms.size() > operands.size() ? "more" : "fewer") +
                    " operands were provided than specified in the equation");
    }
    int64_t max_ellipsis = 0;
    for (std::size_t i = 0; i < terms.size(); ++i) {
        max_ellipsis = std::max(max_ellipsis, ellipsis_dims(terms[i], operands[i].dim()));
    }
    std::vector<Operand> ops;
    std::vector<int> count(static_cast<std::size_t>(kEllipsisLabel + max_ellipsis), 0);
    for (std::size_t i = 0; i < terms.size(); ++i) {
        Operand o{operands[i], parse_term(terms[i], equation, operands[i].dim(), max_ellipsis, false)};
        for (int l : o.labels) ++count[static_cast<std::size_t>(l)];
        ops.push_back(std::move(o));
    }
    std::vector<int> output;
    if (arrow != std::string::npos) {
        const std::string rhs = equation.substr(arrow + 2);
        output = parse_term(rhs, equation, 0, max_ellipsis, true);
        for (std::size_t i = 0; i < output.size(); ++i) {
            const int l = output[i];
            if (l < kEllipsisLabel && count[static_cast<std::size_t>(l)] == 0) {
                throw Error("einsum(): output subscript " + char_of(l) +
                            " does not appear in the equation for any input operand");
            }
            if (std::count(output.begin(), output.end(), l) > 1) {
                throw Error("einsum(): output subscript " + char_of(l) + " appears more than once in the output");
            }
        }
    } else {
        for (int64_t t = 0; t < max_ellipsis; ++t) output.push_back(kEllipsisLabel + static_cast<int>(t));
        for (int l = 0; l < kEllipsisLabel; ++l) {
            if (count[static_cast<std::size_t>(l)] == 1) output.push_back(l);
        }
    }
    // repeated labels within an operand: their diagonal
    for (Operand& o : ops) {
        for (bool again = true; again;) {
            again = false;
            for (std::size_t i = 0; i < o.labels.size() && !again; ++i) {
                for (std::size_t j = i + 1; j < o.labels.size(); ++j) {
                    if (o.labels[i] != o.labels[j]) continue;
                    if (o.t.size(static_cast<int64_t>(i)) != o.t.size(static_cast<int64_t>(j))) {
                        throw Error("einsum(): subscript " + char_of(o.labels[i]) +
                                    " is repeated for operand but the sizes don't match, " +
                                    std::to_string(o.t.size(static_cast<int64_t>(i))) + " != " +
                                    std::to_string(o.t.size(static_cast<int64_t>(j))));
                    }
                    const int l = o.labels[i];
                    o.t = o.t.diagonal(0, static_cast<int64_t>(i), static_cast<int64_t>(j));
                    o.labels.erase(o.labels.begin() + static_cast<std::ptrdiff_t>(j));
                    o.labels.erase(o.labels.begin() + static_cast<std::ptrdiff_t>(i));
                    o.labels.push_back(l);
                    again = true;
                    break;
                }
            }
        }
    }
    auto needed_after = [&](std::size_t k) {  // labels of the output and of operands k..end
        std::vector<int> need(output);
        for (std::size_t i = k; i < ops.size(); ++i) need.insert(need.end(), ops[i].labels.begin(), ops[i].labels.end());
        return need;
    };
    auto contains = [](const std::vector<int>& v, int l) { return std::find(v.begin(), v.end(), l) != v.end(); };
    auto drop_unneeded = [&](Operand& a, const std::vector<int>& need) {
        std::vector<int> drop;
        for (int l : a.labels) {
            if (!contains(need, l)) drop.push_back(l);
        }
        sum_out(a, drop);
    };
    ScalarType dtype = operands[0].scalar_type();
    for (const Tensor& t : operands) dtype = promote_types(dtype, t.scalar_type());
    Operand acc = ops[0];
    acc.t = acc.t.to(dtype);
    drop_unneeded(acc, needed_after(1));
    for (std::size_t k = 1; k < ops.size(); ++k) {
        Operand b = ops[k];
        b.t = b.t.to(dtype);
        std::vector<int> need = needed_after(k + 1);
        std::vector<int> need_a = need, need_b = need;
        need_a.insert(need_a.end(), b.labels.begin(), b.labels.end());
        need_b.insert(need_b.end(), acc.labels.begin(), acc.labels.end());
        drop_unneeded(acc, need_a);
        drop_unneeded(b, need_b);
        std::vector<int> batch, contracted, a_only, b_only;
        for (int l : acc.labels) {
            if (!contains(b.labels, l)) {
                a_only.push_back(l);
            } else if (contains(need, l)) {
                batch.push_back(l);
            } else {
                contracted.push_back(l);
            }
        }
        for (int l : b.labels) {
            if (!contains(acc.labels, l)) b_only.push_back(l);
        }
        auto size_in = [](const Operand& o, int l) -> int64_t {
            const auto at = std::find(o.labels.begin(), o.labels.end(), l) - o.labels.begin();
            return o.t.size(static_cast<int64_t>(at));
        };
        // a shared label of size 1 on one side broadcasts
        std::map<int, int64_t> sizes;
        for (int l : acc.labels) sizes[l] = size_in(acc, l);
        for (int l : b.labels) {
            const int64_t n = size_in(b, l);
            auto it = sizes.find(l);
            if (it == sizes.end() || it->second == 1) {
                sizes[l] = n;
            } else if (n != 1 && n != it->second) {
                throw Error("einsum(): operands do not broadcast with remapped shapes (original->remapped): " +
                            bracketed(shape_of(acc.t)) + " and " + bracketed(shape_of(b.t)));
            }
        }
        auto arrange = [&](const Operand& o, const std::vector<std::vector<int>*>& groups) {
            std::vector<int64_t> perm, shape;
            for (const auto* g : groups) {
                for (int l : *g) {
                    if (!contains(o.labels, l)) continue;
                    perm.push_back(std::find(o.labels.begin(), o.labels.end(), l) - o.labels.begin());
                }
            }
            Tensor t = o.t.permute(perm);
            for (const auto* g : groups) {
                for (int l : *g) {
                    if (contains(o.labels, l)) shape.push_back(sizes[l]);
                }
            }
            return t.expand(shape);
        };
        auto product = [&](const std::vector<int>& ls) {
            int64_t p = 1;
            for (int l : ls) p *= sizes[l];
            return p;
        };
        const int64_t nb = product(batch), na = product(a_only), nk = product(contracted), nm = product(b_only);
        Tensor ta = arrange(acc, {&batch, &a_only, &contracted}).reshape({nb, na, nk});
        Tensor tb = arrange(b, {&batch, &contracted, &b_only}).reshape({nb, nk, nm});
        Tensor r = ember::bmm(ta, tb);
        std::vector<int64_t> shape;
        std::vector<int> labels;
        for (const auto* g : {&batch, &a_only, &b_only}) {
            for (int l : *g) {
                shape.push_back(sizes[l]);
                labels.push_back(l);
            }
        }
        acc.t = r.reshape(shape);
        acc.labels = labels;
    }
    drop_unneeded(acc, output);
    std::vector<int64_t> perm;
    for (int l : output) {
        perm.push_back(std::find(acc.labels.begin(), acc.labels.end(), l) - acc.labels.begin());
    }
    return acc.t.permute(perm).contiguous();
}

}  // namespace

void register_nn_extra_ops(OpTable& t) {
    // ---- interpolate
    def(t, "interpolate",
        "input, size=None, scale_factor=None, mode='nearest', align_corners=None, recompute_scale_factor=None, antialias=False",
        [](const Args& a) {
            return one(interpolate(a.tensor("input"), a["size"], a["scale_factor"], a.string("mode"), a["align_corners"],
                                   truthy(a["recompute_scale_factor"]), a.boolean("antialias"), a.op()));
        });
    alias(t, "nn.functional.interpolate", "interpolate");
    def(t, "nn.functional.upsample", "input, size=None, scale_factor=None, mode='nearest', align_corners=None",
        [](const Args& a) {
            return one(interpolate(a.tensor("input"), a["size"], a["scale_factor"], a.string("mode"), a["align_corners"], false,
                                   false, a.op()));
        });
    def(t, "nn.functional.upsample_nearest", "input, size=None, scale_factor=None", [](const Args& a) {
        return one(interpolate(a.tensor("input"), a["size"], a["scale_factor"], "nearest", Value::none(), false, false, a.op()));
    });
    def(t, "nn.functional.upsample_bilinear", "input, size=None, scale_factor=None", [](const Args& a) {
        return one(interpolate(a.tensor("input"), a["size"], a["scale_factor"], "bilinear", Value::boolean(true), false, false,
                               a.op()));
    });

    // ---- transposed convolutions (shared with ember::nn::functional: nn/functional/conv_transpose.h)
    const char* transposed = "input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1";
    for (int64_t dims = 1; dims <= 3; ++dims) {
        const auto n = static_cast<std::size_t>(dims);
        def(t, "conv_transpose" + std::to_string(dims) + "d", transposed, [dims, n](const Args& a) {
            return one(nn::functional::detail::conv_transpose(
                dims, a.tensor("input"), a.tensor("weight"), a.optional_tensor("bias"), a.ints("stride", n),
                a.ints("padding", n), a.ints("output_padding", n), a.integer("groups"), a.ints("dilation", n), a.op()));
        });
    }

    // ---- 3-D convolution and pooling
    def(t, "conv3d", "input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1", [](const Args& a) {
        if (a["padding"].kind == Value::Kind::String) {
            return one(ember::conv3d(a.tensor("input"), a.tensor("weight"), a.optional_tensor("bias"), a.ints("stride", 3),
                                     a.string("padding"), a.ints("dilation", 3), a.integer("groups")));
        }
        return one(ember::conv3d(a.tensor("input"), a.tensor("weight"), a.optional_tensor("bias"), a.ints("stride", 3),
                                 a.ints("padding", 3), a.ints("dilation", 3), a.integer("groups")));
    });
    const char* max_pool_signature = "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False";
    def(t, "max_pool3d", max_pool_signature, [](const Args& a) -> OpResult {
        const bool with_indices = a.boolean("return_indices");
        auto [out, indices] = max_pool3d(a.tensor("input"), a.ints("kernel_size", 3), stride_or_kernel(a, 3),
                                         a.ints("padding", 3), a.ints("dilation", 3), a.boolean("ceil_mode"), with_indices,
                                         a.op());
        if (with_indices) return {out, indices};
        return one(out);
    });
    def(t, "max_pool3d_with_indices", max_pool_signature, [](const Args& a) -> OpResult {
        auto [out, indices] = max_pool3d(a.tensor("input"), a.ints("kernel_size", 3), stride_or_kernel(a, 3),
                                         a.ints("padding", 3), a.ints("dilation", 3), a.boolean("ceil_mode"), true, a.op());
        return {out, indices};
    });
    const char* avg_pool_signature =
        "input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None";
    def(t, "avg_pool3d", avg_pool_signature, [](const Args& a) {
        return one(avg_pool3d(a.tensor("input"), a.ints("kernel_size", 3), stride_or_kernel(a, 3), a.ints("padding", 3),
                              a.boolean("ceil_mode"), a.boolean("count_include_pad"), a.optional_integer("divisor_override"),
                              a.op()));
    });
    def(t, "adaptive_avg_pool3d", "input, output_size", [](const Args& a) {
        const Tensor x = a.tensor("input");
        return one(adaptive_avg_pool3d(x, adaptive_size(a, x, 3), a.op()));
    });

    // ---- adaptive max pooling (the core kernels: indices flat in each input plane)
    using AdaptiveMax = std::tuple<Tensor, Tensor> (*)(const Tensor&, IntArrayRef);
    const AdaptiveMax adaptive_max[] = {&ember::adaptive_max_pool1d, &ember::adaptive_max_pool2d,
                                        &ember::adaptive_max_pool3d};
    for (std::size_t k = 1; k <= 3; ++k) {
        const std::string name = "adaptive_max_pool" + std::to_string(k) + "d";
        const AdaptiveMax fn = adaptive_max[k - 1];
        def(t, name, "input, output_size, return_indices=False", [fn, k](const Args& a) -> OpResult {
            const Tensor x = a.tensor("input");
            auto [out, indices] = fn(x, adaptive_size(a, x, k));
            if (a.boolean("return_indices")) return {out, indices};
            return one(out);
        });
        def(t, name + "_with_indices", "input, output_size, return_indices=False", [fn, k](const Args& a) -> OpResult {
            const Tensor x = a.tensor("input");
            auto [out, indices] = fn(x, adaptive_size(a, x, k));
            return {out, indices};
        });
        alias(t, "nn.functional." + name, name);
        alias(t, "nn.functional." + name + "_with_indices", name + "_with_indices");
    }

    // ---- 1-D pooling: the 2-D kernels over a height of 1
    def(t, "max_pool1d", max_pool_signature, [](const Args& a) -> OpResult {
        const Tensor x = a.tensor("input");
        if (x.dim() != 2 && x.dim() != 3) {
            throw Error(a.op() + "(): Expected 2D or 3D input tensor, but got " + bracketed(shape_of(x)));
        }
        auto [out, indices] = ember::max_pool2d_with_indices(
            x.unsqueeze(-2), {1, a.ints("kernel_size", 1)[0]}, {1, stride_or_kernel(a, 1)[0]}, {0, a.ints("padding", 1)[0]},
            {1, a.ints("dilation", 1)[0]}, a.boolean("ceil_mode"));
        if (a.boolean("return_indices")) return {out.squeeze(-2), indices.squeeze(-2)};
        return one(out.squeeze(-2));
    });
    // PyTorch's avg_pool1d has no divisor_override (its 2-d and 3-d ones do)
    def(t, "avg_pool1d", "input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True",
        [](const Args& a) {
        const Tensor x = a.tensor("input");
        if (x.dim() != 2 && x.dim() != 3) {
            throw Error(a.op() + "(): Expected 2D or 3D input tensor, but got " + bracketed(shape_of(x)));
        }
        return one(ember::avg_pool2d(x.unsqueeze(-2), {1, a.ints("kernel_size", 1)[0]}, {1, stride_or_kernel(a, 1)[0]},
                                     {0, a.ints("padding", 1)[0]}, a.boolean("ceil_mode"), a.boolean("count_include_pad"),
                                     std::nullopt)
                       .squeeze(-2));
        });
    def(t, "adaptive_avg_pool1d", "input, output_size", [](const Args& a) {
        const Tensor x = a.tensor("input");
        if (x.dim() != 2 && x.dim() != 3) {
            throw Error(a.op() + "(): Expected 2D or 3D input tensor, but got " + bracketed(shape_of(x)));
        }
        return one(ember::adaptive_avg_pool2d(x.unsqueeze(-2), {1, adaptive_size(a, x, 1)[0]}).squeeze(-2));
    });
    for (const char* name : {"conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "conv3d", "max_pool3d",
                             "max_pool3d_with_indices", "avg_pool3d", "adaptive_avg_pool3d", "max_pool1d", "avg_pool1d",
                             "adaptive_avg_pool1d"}) {
        alias(t, std::string("nn.functional.") + name, name);
    }

    // ---- einsum
    def(t, "einsum", "equation, *operands", [](const Args& a) {
        std::vector<Tensor> operands;
        const std::vector<Value>& rest = a.varargs();
        if (rest.size() == 1 && rest[0].is_sequence()) {
            for (const Value& v : rest[0].items) {
                if (!v.is_tensor()) a.type_error("operands", "Tensor");
                operands.push_back(v.tensor);
            }
        } else {
            for (const Value& v : rest) {
                if (!v.is_tensor()) a.type_error("operands", "Tensor");
                operands.push_back(v.tensor);
            }
        }
        return one(einsum(a.string("equation"), operands));
    });
}

}  // namespace ember::jit::detail
