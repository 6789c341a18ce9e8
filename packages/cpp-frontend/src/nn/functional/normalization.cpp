// batch_norm, layer_norm, group_norm and normalize of ember::nn::functional.
//
// batch_norm and layer_norm run one fused kernel forward (statistics accumulated in double)
// and record one node (NativeBatchNormBackward0 / NativeLayerNormBackward0) whose backward
// is written with ops. With create_graph the statistics are recomputed from the input with
// ops inside the backward, so that the gradient is itself differentiable w.r.t. the input.
#include <algorithm>
#include <cmath>
#include <limits>

#include "common.h"

namespace ember {
namespace nn {
namespace functional {

using namespace detail;

namespace {

// The input viewed as (A, C, B): statistics per c over a and b (batch norm: (N, C, L);
// layer norm: (1, rows, row size)). Affine parameters (optional) are indexed by c
// (per_channel) or by b.
struct NormGeometry {
    int64_t a = 1, c = 1, b = 1;
    bool per_channel = true;
};

// Per-c mean and biased variance of x (contiguous), accumulated in double.
template <typename T>
void norm_stats(const T* x, const NormGeometry& g, double* mean, double* var) {
    const double count = static_cast<double>(g.a * g.b);
    for (int64_t c = 0; c < g.c; ++c) {
        double sum = 0;
        for (int64_t a = 0; a < g.a; ++a) {
            const T* row = x + (a * g.c + c) * g.b;
            for (int64_t b = 0; b < g.b; ++b) sum += static_cast<double>(row[b]);
        }
        const double m = sum / count;
        double sq = 0;
        for (int64_t a = 0; a < g.a; ++a) {
            const T* row = x + (a * g.c + c) * g.b;
            for (int64_t b = 0; b < g.b; ++b) {
                const double d = static_cast<double>(row[b]) - m;
                sq += d * d;
            }
        }
        mean[c] = m;
        var[c] = sq / count;
    }
}

// y = (x - mean[c]) * invstd[c] * weight + bias (weight, bias may be null).
template <typename T>
void norm_apply(const T* x, const NormGeometry& g, const T* mean, const T* invstd, const T* weight, const T* bias,
                T* y) {
    for (int64_t a = 0; a < g.a; ++a) {
        for (int64_t c = 0; c < g.c; ++c) {
            const int64_t off = (a * g.c + c) * g.b;
            const T m = mean[c], s = invstd[c];
            if (g.per_channel) {
                const T scale = weight ? s * weight[c] : s;
                const T shift = bias ? bias[c] : T(0);
                for (int64_t b = 0; b < g.b; ++b) y[off + b] = (x[off + b] - m) * scale + shift;
            } else {
                for (int64_t b = 0; b < g.b; ++b) {
                    T v = (x[off + b] - m) * s;
                    if (weight) v *= weight[b];
                    if (bias) v += bias[b];
                    y[off + b] = v;
                }
            }
        }
    }
}

const void* data_or_null(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

// Runs the fused forward on contiguous float/double tensors. stats: when undefined, the
// batch statistics are computed into mean / var (var biased); otherwise mean / invstd are
// given. Returns (y, mean, invstd) as tensors of C elements.
struct NormForward {
    Tensor y, mean, invstd, var;
};

NormForward norm_forward(const Tensor& input, const NormGeometry& geo, const Tensor& weight, const Tensor& bias,
                         const Tensor& given_mean, const Tensor& given_invstd, double eps, const char* kernel) {
    NormForward r;
    const ScalarType dt = input.scalar_type();
    const Tensor x = input.contiguous();
    const Tensor w = weight.defined() ? weight.contiguous() : Tensor();
    const Tensor bb = bias.defined() ? bias.contiguous() : Tensor();
    r.y = new_empty(input.sizes(), dt);
    if (given_mean.defined()) {
        r.mean = given_mean.to(dt).contiguous();
        r.invstd = given_invstd.to(dt).contiguous();
    } else {
        Tensor mean64 = new_empty({geo.c}, kDouble), var64 = new_empty({geo.c}, kDouble);
        dispatch_float_double(dt, kernel, [&](auto tag) {
            using scalar_t = typename decltype(tag)::type;
            norm_stats(x.data_ptr<scalar_t>(), geo, mean64.data_ptr<double>(), var64.data_ptr<double>());
        });
        r.var = var64;
        r.mean = mean64.to(dt);
        r.invstd = (var64 + eps).rsqrt().to(dt);
    }
    dispatch_float_double(dt, kernel, [&](auto tag) {
        using scalar_t = typename decltype(tag)::type;
        norm_apply(x.data_ptr<scalar_t>(), geo, r.mean.data_ptr<scalar_t>(), r.invstd.data_ptr<scalar_t>(),
                   static_cast<const scalar_t*>(data_or_null(w)), static_cast<const scalar_t*>(data_or_null(bb)),
                   r.y.data_ptr<scalar_t>());
    });
    return r;
}

// How the backward sees the statistics: stat_shape broadcasts mean/invstd against the input,
// stat_dims are the dims they reduce, param_dims the dims the weight/bias gradients sum over
// and param_view the weight's broadcast shape.
struct NormBackwardInfo {
    std::vector<int64_t> stat_shape, stat_dims, param_dims, param_view;
    double eps = 0;
    bool batch_stats = true;  // the statistics depend on the input (training, layer norm)
};

variable_list norm_backward(FunctionNode& n, const Tensor& g, const NormBackwardInfo& info) {
    if (!g.defined()) return {Tensor(), Tensor(), Tensor()};
    const Tensor x = n.saved(0), weight = n.saved(1);
    Tensor mean, invstd;
    if (GradMode::is_enabled() && info.batch_stats) {
        // create_graph: the statistics as differentiable functions of the input
        mean = x.mean(info.stat_dims, /*keepdim=*/true);
        invstd = (x.var(info.stat_dims, /*unbiased=*/false, /*keepdim=*/true) + info.eps).rsqrt();
    } else {
        mean = n.saved(2).view(info.stat_shape);
        invstd = n.saved(3).view(info.stat_shape);
    }
    const Tensor xhat = (x - mean) * invstd;
    variable_list grads(3);
    if (n.needs(0)) {
        const Tensor gxhat = weight.defined() ? g * weight.view(info.param_view) : g;
        if (info.batch_stats) {
            grads[0] = invstd * (gxhat - gxhat.mean(info.stat_dims, true) -
                                 xhat * (gxhat * xhat).mean(info.stat_dims, true));
        } else {
            grads[0] = gxhat * invstd;
        }
    }
    if (n.needs(1)) grads[1] = (g * xhat).sum(info.param_dims).view(weight.sizes());
    if (n.needs(2)) grads[2] = g.sum(info.param_dims).view(weight.defined() ? weight.sizes() : n.saved(4).sizes());
    return grads;
}

// Records the node of a fused normalization: out over (input, weight, bias).
void record_norm(const char* name, const Tensor& input, const Tensor& weight, const Tensor& bias,
                 const NormForward& fwd, NormBackwardInfo info) {
    auto node = make_node(name, {input, weight, bias});
    if (!node) return;
    set_history(fwd.y, node, 0);
    node->save(input);
    node->save(weight);
    node->save(fwd.mean);
    node->save(fwd.invstd);
    node->save(bias);
    node->set_formula([info = std::move(info)](FunctionNode& n, variable_list&& g) -> variable_list {
        return norm_backward(n, g[0], info);
    });
}

void check_param_dtype(const Tensor& input, std::initializer_list<Tensor> params) {
    for (const Tensor& p : params) {
        if (p.defined() && p.scalar_type() != input.scalar_type()) {
            if (input.scalar_type() == kFloat) {
                EMBER_ERROR("mixed dtype (CPU): expect parameter to have scalar type of Float");
            }
            EMBER_ERROR("mixed dtype (CPU): all inputs must share same datatype.");
        }
    }
}

void check_numel(const char* name, const Tensor& t, int64_t n) {
    if (t.defined() && t.numel() != n) EMBER_ERROR(name, " should contain ", n, " elements not ", t.numel());
}

// running = (1 - momentum) * running + momentum * value, in place (computed in double).
void update_running(const Tensor& running, const Tensor& value64, double momentum) {
    NoGradGuard guard;
    const Tensor updated = running.to(kDouble) * (1.0 - momentum) + value64 * momentum;
    running.copy_(updated.view(running.sizes()));
}

// float16 inputs compute in float32 (the result rounded once), as PyTorch.
bool is_half(const Tensor& t) { return t.defined() && t.scalar_type() == kHalf; }
Tensor to_float(const Tensor& t) { return t.defined() ? t.to(kFloat) : t; }

}  // namespace

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
    check_floating(input, "batch_norm");
    const int64_t nd = input.dim();
    if (training) {
        int64_t per_channel = nd > 0 ? input.size(0) : 1;
        for (int64_t d = 2; d < nd; ++d) per_channel *= input.size(d);
        if (per_channel == 1) {
            throw ValueError("Expected more than 1 value per channel when training, got input size " +
                             torch_size(input.sizes()));
        }
    }
    const int64_t c = nd > 1 ? input.size(1) : 0;
    check_numel("running_mean", running_mean, c);
    check_numel("running_var", running_var, c);
    check_numel("weight", weight, c);
    check_numel("bias", bias, c);
    check_param_dtype(input, {weight, bias, running_mean, running_var});
    if (!training && (!running_mean.defined() || !running_var.defined())) {
        EMBER_ERROR("running_", running_mean.defined() ? "var" : "mean", " must be defined in evaluation mode");
    }
    if (is_half(input)) {
        const Tensor rm = to_float(running_mean), rv = to_float(running_var);
        const Tensor out = batch_norm(input.to(kFloat), rm, rv, to_float(weight), to_float(bias), training, momentum, eps);
        if (training) {
            NoGradGuard guard;
            if (rm.defined()) running_mean.copy_(rm);
            if (rv.defined()) running_var.copy_(rv);
        }
        return out.to(kHalf);
    }
    NormGeometry geo;
    geo.a = nd > 0 ? input.size(0) : 1;
    geo.c = c;
    geo.b = c > 0 ? input.numel() / std::max<int64_t>(geo.a * c, 1) : 0;
    NormForward fwd;
    if (training) {
        fwd = norm_forward(input, geo, weight, bias, Tensor(), Tensor(), eps, "batch_norm");
        const int64_t count = geo.a * geo.b;
        if (count > 0) {
            if (running_mean.defined()) {
                NoGradGuard guard;
                update_running(running_mean, fwd.mean.to(kDouble), momentum);
            }
            if (running_var.defined()) {
                const double factor = count > 1 ? static_cast<double>(count) / static_cast<double>(count - 1) : std::numeric_limits<double>::quiet_NaN();
                update_running(running_var, fwd.var * factor, momentum);
            }
        }
    } else {
        Tensor mean, invstd;
        {
            NoGradGuard guard;
            mean = running_mean.detach().clone();  // later updates of the running stats must not leak in
            invstd = (running_var.detach() + eps).rsqrt();
        }
        fwd = norm_forward(input, geo, weight, bias, mean, invstd, eps, "batch_norm");
    }
    NormBackwardInfo info;
    info.stat_shape.assign(static_cast<size_t>(nd), 1);
    info.param_view.assign(static_cast<size_t>(nd), 1);
    if (nd > 1) {
        info.stat_shape[1] = c;
        info.param_view[1] = c;
    }
    for (int64_t d = 0; d < nd; ++d) {
        if (d != 1) info.stat_dims.push_back(d);
    }
    info.param_dims = info.stat_dims;
    info.eps = eps;
    info.batch_stats = training;
    record_norm("NativeBatchNormBackward0", input, weight, bias, fwd, std::move(info));
    return fwd.y;
}

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& options) {
    return batch_norm(input, running_mean, running_var, options.weight(), options.bias(), options.training(),
                      options.momentum(), options.eps());
}

Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
    if (normalized_shape.empty()) {
        EMBER_ERROR("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                    "element, but got normalized_shape = []");
    }
    const std::string shape_text = shape_str(normalized_shape);
    for (const auto& [name, t] : {std::pair<const char*, Tensor>{"weight", weight}, {"bias", bias}}) {
        if (t.defined() && t.sizes() != normalized_shape) {
            EMBER_ERROR("Expected ", name, " to be of same shape as normalized_shape, but got ", name, " of shape ",
                        shape_str(t.sizes()), " and normalized_shape = ", shape_text);
        }
    }
    const int64_t nd = input.dim(), k = static_cast<int64_t>(normalized_shape.size());
    if (nd < k || input.sizes().slice(static_cast<size_t>(nd - k)) != normalized_shape) {
        EMBER_ERROR("Given normalized_shape=", shape_text, ", expected input with shape [*, ",
                    shape_text.substr(1, shape_text.size() - 2), "], but got input of size", shape_str(input.sizes()));
    }
    check_floating(input, "LayerNormKernelImpl");
    check_param_dtype(input, {weight, bias});
    if (is_half(input)) {
        return layer_norm(input.to(kFloat), normalized_shape, to_float(weight), to_float(bias), eps).to(kHalf);
    }
    NormGeometry geo;
    geo.b = 1;
    for (int64_t s : normalized_shape) geo.b *= s;
    geo.c = 1;  // the rows
    for (int64_t d = 0; d < nd - k; ++d) geo.c *= input.size(d);
    geo.per_channel = false;
    const NormForward fwd = norm_forward(input, geo, weight, bias, Tensor(), Tensor(), eps, "LayerNormKernelImpl");
    NormBackwardInfo info;
    info.stat_shape = input.sizes().vec();
    for (int64_t d = nd - k; d < nd; ++d) {
        info.stat_shape[static_cast<size_t>(d)] = 1;
        info.stat_dims.push_back(d);
    }
    for (int64_t d = 0; d < nd - k; ++d) info.param_dims.push_back(d);
    info.param_view = normalized_shape.vec();
    info.eps = eps;
    info.batch_stats = true;
    record_norm("NativeLayerNormBackward0", input, weight, bias, fwd, std::move(info));
    return fwd.y;
}

Tensor layer_norm(const Tensor& input, const LayerNormFuncOptions& options) {
    return layer_norm(input, options.normalized_shape(), options.weight(), options.bias(), options.eps());
}

Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps) {
    EMBER_CHECK(input.dim() >= 2, "Expected at least 2 dimensions for input tensor but received ", input.dim());
    const int64_t n = input.size(0), c = input.size(1);
    EMBER_CHECK(num_groups != 0, "integer division or modulo by zero");
    EMBER_CHECK(c % num_groups == 0,
                "Expected number of channels in input to be divisible by num_groups, but got input of shape ",
                shape_str(input.sizes()), " and num_groups=", num_groups);
    for (const auto& [name, t] : {std::pair<const char*, Tensor>{"weight", weight}, {"bias", bias}}) {
        if (t.defined() && (t.dim() != 1 || t.numel() != c)) {
            EMBER_ERROR("Expected ", name, " to be a vector of size equal to the number of channels in input, but got ",
                        name, " of shape ", shape_str(t.sizes()), " and input of shape ", shape_str(input.sizes()));
        }
    }
    check_floating(input, "group_norm");
    check_param_dtype(input, {weight, bias});
    const int64_t group_size = n * num_groups > 0 ? input.numel() / (n * num_groups) : 0;
    // each (sample, group) normalised as one layer-norm row, then the per-channel affine
    Tensor out = layer_norm(input.reshape({n, num_groups, group_size}), {group_size}, {}, {}, eps).view(input.sizes());
    std::vector<int64_t> channel_view(static_cast<size_t>(input.dim()), 1);
    channel_view[1] = c;
    if (weight.defined()) out = out * weight.view(channel_view);
    if (bias.defined()) out = out + bias.view(channel_view);
    return out;
}

Tensor group_norm(const Tensor& input, const GroupNormFuncOptions& options) {
    return group_norm(input, options.num_groups(), options.weight(), options.bias(), options.eps());
}

Tensor normalize(const Tensor& input, double p, int64_t dim, double eps) {
    const Tensor denom = input.norm(Scalar(p), {dim}, /*keepdim=*/true).clamp_min(eps).expand_as(input);
    return input / denom;
}

Tensor normalize(const Tensor& input, const NormalizeFuncOptions& options) {
    return normalize(input, options.p(), options.dim(), options.eps());
}

}  // namespace functional
}  // namespace nn
}  // namespace ember
