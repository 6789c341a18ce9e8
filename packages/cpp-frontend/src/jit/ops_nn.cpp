// Neural-network ops of the C++ op table: linear algebra, convolution and pooling,
// normalization, dropout, attention, padding and the common losses.
#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "ember/autograd.h"
#include "ember/error.h"
#include "ember/nn/functional.h"
#include "jit/ops_common.h"

namespace ember::jit::detail {

namespace F = ember::nn::functional;

namespace {

// A pooling's stride: None (or an empty list) means the kernel size.
std::vector<int64_t> stride_or_kernel(const Args& a, std::size_t n) {
    const Value& v = a["stride"];
    if (v.is_none() || (v.is_sequence() && v.items.empty())) return a.ints("kernel_size", n);
    return a.ints("stride", n);
}

// PyTorch's legacy size_average/reduce -> reduction (torch.nn._reduction.legacy_get_string).
std::string reduction_of(const Args& a) {
    const bool legacy = (a.has("size_average") && !a.is_none("size_average")) ||
                        (a.has("reduce") && !a.is_none("reduce"));
    if (!legacy) return a.string("reduction");
    const bool size_average = a.is_none("size_average") || a.boolean("size_average");
    const bool reduce = a.is_none("reduce") || a.boolean("reduce");
    if (!reduce) return "none";
    return size_average ? "mean" : "sum";
}

void no_loss_weight(const Args& a) {
    if (a.has("weight") && !a.is_none("weight")) {
        throw NotImplementedError(a.op() + "(weight=...): per-element loss weights are not supported by Ember's C++ "
                                  "frontend");
    }
}

// mm/bmm's out_dtype: the inputs' own dtype, or float32 products of half matrices (Python's
// ember.ops.linalg.widened_product).
std::pair<Tensor, Tensor> widened_operands(const Args& a) {
    Tensor x = a.tensor("input");
    Tensor y = a.tensor("mat2");
    std::optional<ScalarType> out = a.dtype("out_dtype");
    if (!out || *out == x.scalar_type()) return {x, y};
    if (!(*out == kFloat && x.scalar_type() == kHalf)) {
        throw Error("out_dtype must be the same as input dtype or fp32 for fp16/bf16 inputs");
    }
    if (y.scalar_type() != x.scalar_type()) {
        throw Error("expected scalar type " + std::string(scalar_type_name(x.scalar_type())) + " but found " +
                    std::string(scalar_type_name(y.scalar_type())));
    }
    return {x.to(kFloat), y.to(kFloat)};
}

}  // namespace

void register_nn_ops(OpTable& t) {
    // ---- linear algebra
    def(t, "linear", "input, weight, bias=None", [](const Args& a) {
        return one(ember::linear(a.tensor("input"), a.tensor("weight"), a.optional_tensor("bias")));
    });
    def(t, "matmul", "input, other", [](const Args& a) {
        return one(ember::matmul(a.tensor("input"), a.tensor("other")));
    });
    def(t, "mm", "input, mat2, out_dtype=None", [](const Args& a) {
        auto [x, y] = widened_operands(a);
        return one(ember::mm(x, y));
    });
    def(t, "bmm", "input, mat2, out_dtype=None", [](const Args& a) {
        auto [x, y] = widened_operands(a);
        return one(ember::bmm(x, y));
    });
    def(t, "mv", "input, vec", [](const Args& a) { return one(ember::mv(a.tensor("input"), a.tensor("vec"))); });
    def(t, "dot", "input, tensor", [](const Args& a) { return one(ember::dot(a.tensor("input"), a.tensor("tensor"))); });
    def(t, "outer", "input, vec2", [](const Args& a) { return one(ember::outer(a.tensor("input"), a.tensor("vec2"))); });
    def(t, "addmm", "input, mat1, mat2, *, beta=1, alpha=1", [](const Args& a) {
        return one(ember::addmm(a.tensor("input"), a.tensor("mat1"), a.tensor("mat2"), a.scalar("beta"), a.scalar("alpha")));
    });
    def(t, "addmv", "input, mat, vec, *, beta=1, alpha=1", [](const Args& a) {
        return one(a.tensor("input") * a.scalar("beta") + ember::mv(a.tensor("mat"), a.tensor("vec")) * a.scalar("alpha"));
    });
    def(t, "baddbmm", "input, batch1, batch2, *, beta=1, alpha=1", [](const Args& a) {
        return one(a.tensor("input") * a.scalar("beta") + ember::bmm(a.tensor("batch1"), a.tensor("batch2")) * a.scalar("alpha"));
    });

    // ---- convolution and pooling
    def(t, "conv2d", "input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1", [](const Args& a) {
        if (a["padding"].kind == Value::Kind::String) {
            return one(ember::conv2d(a.tensor("input"), a.tensor("weight"), a.optional_tensor("bias"), a.ints("stride", 2),
                                     a.string("padding"), a.ints("dilation", 2), a.integer("groups")));
        }
        return one(ember::conv2d(a.tensor("input"), a.tensor("weight"), a.optional_tensor("bias"), a.ints("stride", 2),
                                 a.ints("padding", 2), a.ints("dilation", 2), a.integer("groups")));
    });
    def(t, "conv1d", "input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1", [](const Args& a) {
        if (a["padding"].kind == Value::Kind::String) {
            return one(ember::conv1d(a.tensor("input"), a.tensor("weight"), a.optional_tensor("bias"), a.ints("stride", 1),
                                     a.string("padding"), a.ints("dilation", 1), a.integer("groups")));
        }
        return one(ember::conv1d(a.tensor("input"), a.tensor("weight"), a.optional_tensor("bias"), a.ints("stride", 1),
                                 a.ints("padding", 1), a.ints("dilation", 1), a.integer("groups")));
    });
    const char* max_pool_signature = "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False";
    def(t, "max_pool2d", max_pool_signature, [](const Args& a) -> OpResult {
        auto [out, indices] = ember::max_pool2d_with_indices(a.tensor("input"), a.ints("kernel_size", 2), stride_or_kernel(a, 2),
                                                             a.ints("padding", 2), a.ints("dilation", 2), a.boolean("ceil_mode"));
        if (a.boolean("return_indices")) return {out, indices};
        return one(out);
    });
    def(t, "max_pool2d_with_indices", max_pool_signature, [](const Args& a) -> OpResult {
        auto [out, indices] = ember::max_pool2d_with_indices(a.tensor("input"), a.ints("kernel_size", 2), stride_or_kernel(a, 2),
                                                             a.ints("padding", 2), a.ints("dilation", 2), a.boolean("ceil_mode"));
        return {out, indices};
    });
    def(t, "avg_pool2d", "input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None",
        [](const Args& a) {
            return one(ember::avg_pool2d(a.tensor("input"), a.ints("kernel_size", 2), stride_or_kernel(a, 2), a.ints("padding", 2),
                                         a.boolean("ceil_mode"), a.boolean("count_include_pad"),
                                         a.optional_integer("divisor_override")));
        });
    def(t, "adaptive_avg_pool2d", "input, output_size", [](const Args& a) {
        const Tensor x = a.tensor("input");
        std::vector<int64_t> size;
        const Value& v = a["output_size"];
        if (v.is_sequence()) {
            // None keeps the input's size
            for (std::size_t k = 0; k < v.items.size(); ++k) {
                size.push_back(v.items[k].is_none() ? x.size(x.dim() - static_cast<int64_t>(v.items.size()) + static_cast<int64_t>(k))
                                                    : to_int(v.items[k], "adaptive_avg_pool2d(): output_size"));
            }
        } else {
            size = a.ints("output_size", 2);
        }
        return one(ember::adaptive_avg_pool2d(x, size));
    });
    def(t, "im2col", "input, kernel_size, dilation=1, padding=0, stride=1", [](const Args& a) {
        return one(ember::im2col(a.tensor("input"), a.ints("kernel_size", 2), a.ints("dilation", 2), a.ints("padding", 2),
                                 a.ints("stride", 2)));
    });
    def(t, "col2im", "input, output_size, kernel_size, dilation=1, padding=0, stride=1", [](const Args& a) {
        return one(ember::col2im(a.tensor("input"), a.ints("output_size", 2), a.ints("kernel_size", 2), a.ints("dilation", 2),
                                 a.ints("padding", 2), a.ints("stride", 2)));
    });
    for (const char* name : {"conv1d", "conv2d", "max_pool2d", "max_pool2d_with_indices", "avg_pool2d", "adaptive_avg_pool2d"}) {
        alias(t, std::string("nn.functional.") + name, name);
    }
    alias(t, "nn.functional.unfold", "im2col");
    alias(t, "nn.functional.fold", "col2im");

    // ---- normalization
    def(t, "nn.functional.batch_norm", "input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05",
        [](const Args& a) {
            return one(F::batch_norm(a.tensor("input"), a.optional_tensor("running_mean"), a.optional_tensor("running_var"),
                                     a.optional_tensor("weight"), a.optional_tensor("bias"), a.boolean("training"),
                                     a.is_none("momentum") ? 0.1 : a.number("momentum"), a.number("eps")));
        });
    def(t, "batch_norm", "input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled=True",
        [](const Args& a) {
            return one(F::batch_norm(a.tensor("input"), a.optional_tensor("running_mean"), a.optional_tensor("running_var"),
                                     a.optional_tensor("weight"), a.optional_tensor("bias"), a.boolean("training"),
                                     a.number("momentum"), a.number("eps")));
        });
    def(t, "layer_norm", "input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True", [](const Args& a) {
        return one(F::layer_norm(a.tensor("input"), a.ints("normalized_shape"), a.optional_tensor("weight"),
                                 a.optional_tensor("bias"), a.number("eps")));
    });
    def(t, "group_norm", "input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True", [](const Args& a) {
        return one(F::group_norm(a.tensor("input"), a.integer("num_groups"), a.optional_tensor("weight"),
                                 a.optional_tensor("bias"), a.number("eps")));
    });
    def(t, "rms_norm", "input, normalized_shape, weight=None, eps=None", [](const Args& a) {
        Tensor x = a.tensor("input");
        std::vector<int64_t> shape = a.ints("normalized_shape");
        std::vector<int64_t> dims;
        for (std::size_t k = 0; k < shape.size(); ++k) dims.push_back(-1 - static_cast<int64_t>(k));
        // PyTorch's default eps: the dtype's machine epsilon
        const double eps = a.is_none("eps") ? (x.scalar_type() == kDouble ? 2.220446049250313e-16 : 1.1920928955078125e-07)
                                            : a.number("eps");
        Tensor y = x * ember::rsqrt(ember::mean(x * x, dims, true) + eps);
        Tensor w = a.optional_tensor("weight");
        return one(w.defined() ? y * w : y);
    });
    def(t, "nn.functional.normalize", "input, p=2.0, dim=1, eps=1e-12, out=None", [](const Args& a) {
        return one(to_out(a, F::normalize(a.tensor("input"), a.number("p"), a.integer("dim"), a.number("eps"))));
    });
    for (const char* name : {"layer_norm", "group_norm", "rms_norm"}) alias(t, std::string("nn.functional.") + name, name);

    // ---- dropout (the C++ random stream differs from Python's: masks are not Python's)
    def(t, "nn.functional.dropout", "input, p=0.5, training=True, inplace=False", [](const Args& a) {
        return one(F::dropout(a.tensor("input"), a.number("p"), a.boolean("training"), a.boolean("inplace")));
    });
    def(t, "dropout", "input, p=0.5, train=True", [](const Args& a) {
        return one(F::dropout(a.tensor("input"), a.number("p"), a.boolean("train"), false));
    });
    def(t, "dropout_", "input, p, train", [](const Args& a) {
        return one(F::dropout(a.tensor("input"), a.number("p"), a.boolean("train"), true));
    });

    // ---- activations that are kernels of F
    def(t, "glu", "input, dim=-1", [](const Args& a) {
        std::vector<Tensor> halves = a.tensor("input").chunk(2, a.integer("dim"));
        return one(halves.at(0) * ember::sigmoid(halves.at(1)));
    });
    def(t, "prelu", "input, weight", [](const Args& a) {
        Tensor x = a.tensor("input");
        Tensor w = a.tensor("weight");
        if (w.numel() != 1 && x.dim() >= 2) {
            std::vector<int64_t> shape(static_cast<std::size_t>(x.dim() - 1), 1);
            shape[0] = w.numel();
            w = w.reshape(shape);
        }
        return one(ember::where(x > 0, x, x * w));
    });
    def(t, "selu", "input, inplace=False", [](const Args& a) {
        constexpr double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
        Tensor x = a.tensor("input");
        Tensor y = F::elu(x, alpha) * scale;
        return one(a.boolean("inplace") ? write_into(x, y, "selu_") : y);
    });
    def(t, "celu", "input, alpha=1.0, inplace=False", [](const Args& a) {
        Tensor x = a.tensor("input");
        const double alpha = a.number("alpha");
        Tensor y = ember::clamp_min(x, 0) + ember::clamp_max(ember::expm1(x / alpha) * alpha, 0);
        return one(a.boolean("inplace") ? write_into(x, y, "celu_") : y);
    });
    def(t, "softshrink", "input, lambd=0.5", [](const Args& a) {
        Tensor x = a.tensor("input");
        const double l = a.number("lambd");
        return one(ember::where(x > l, x - l, ember::where(x < -l, x + l, ember::zeros_like(x))));
    });
    def(t, "hardshrink", "input, lambd=0.5", [](const Args& a) {
        Tensor x = a.tensor("input");
        const double l = a.number("lambd");
        return one(ember::where(ember::abs(x) > l, x, ember::zeros_like(x)));
    });
    for (const char* name : {"relu", "sigmoid", "tanh", "gelu", "silu", "hardswish", "hardsigmoid", "mish", "logsigmoid",
                             "softsign", "tanhshrink", "hardtanh", "relu6", "leaky_relu", "elu", "softplus", "threshold",
                             "glu", "prelu", "selu", "celu", "softshrink", "hardshrink"}) {
        alias(t, std::string("nn.functional.") + name, name);
    }

    // ---- attention
    def(t, "scaled_dot_product_attention",
        "query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False", [](const Args& a) {
            Tensor k = a.tensor("key"), v = a.tensor("value");
            const Tensor q = a.tensor("query");
            if (a.boolean("enable_gqa") && q.dim() >= 3 && k.size(-3) != q.size(-3)) {
                const int64_t groups = q.size(-3) / k.size(-3);
                std::vector<Tensor> ks(static_cast<std::size_t>(groups), k), vs(static_cast<std::size_t>(groups), v);
                // repeat_interleave over the head dim
                k = ember::stack(ks, -3).flatten(-4, -3);
                v = ember::stack(vs, -3).flatten(-4, -3);
            }
            return one(F::scaled_dot_product_attention(q, k, v, a.optional_tensor("attn_mask"), a.number("dropout_p"),
                                                       a.boolean("is_causal"), a.optional_number("scale")));
        });
    alias(t, "nn.functional.scaled_dot_product_attention", "scaled_dot_product_attention");

    // ---- padding
    // F::pad: every mode, its autograd nodes and PyTorch's errors (the interpreter names the node)
    def(t, "pad", "input, pad, mode='constant', value=None", [](const Args& a) {
        std::optional<double> value;
        if (!a.is_none("value")) value = a.number("value");
        return one(F::pad(a.tensor("input"), a.ints("pad"), a.string("mode"), value));
    });
    alias(t, "nn.functional.pad", "pad");

    // ---- losses
    def(t, "mse_loss", "input, target, size_average=None, reduce=None, reduction='mean', weight=None", [](const Args& a) {
        no_loss_weight(a);
        return one(F::mse_loss(a.tensor("input"), a.tensor("target"), reduction_of(a)));
    });
    def(t, "l1_loss", "input, target, size_average=None, reduce=None, reduction='mean', weight=None", [](const Args& a) {
        no_loss_weight(a);
        return one(F::l1_loss(a.tensor("input"), a.tensor("target"), reduction_of(a)));
    });
    def(t, "smooth_l1_loss", "input, target, size_average=None, reduce=None, reduction='mean', beta=1.0", [](const Args& a) {
        return one(F::smooth_l1_loss(a.tensor("input"), a.tensor("target"), reduction_of(a), a.number("beta")));
    });
    def(t, "huber_loss", "input, target, reduction='mean', delta=1.0, weight=None", [](const Args& a) {
        no_loss_weight(a);
        return one(F::huber_loss(a.tensor("input"), a.tensor("target"),
                                 F::HuberLossFuncOptions(a.string("reduction")).delta(a.number("delta"))));
    });
    def(t, "nll_loss", "input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction='mean'",
        [](const Args& a) {
            return one(F::nll_loss(a.tensor("input"), a.tensor("target"),
                                   F::NLLLossFuncOptions(reduction_of(a)).weight(a.optional_tensor("weight")).ignore_index(a.integer("ignore_index"))));
        });
    def(t, "cross_entropy",
        "input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction='mean', label_smoothing=0.0",
        [](const Args& a) {
            return one(F::cross_entropy(a.tensor("input"), a.tensor("target"),
                                        F::CrossEntropyFuncOptions(reduction_of(a))
                                            .weight(a.optional_tensor("weight"))
                                            .ignore_index(a.integer("ignore_index"))
                                            .label_smoothing(a.number("label_smoothing"))));
        });
    def(t, "binary_cross_entropy", "input, target, weight=None, size_average=None, reduce=None, reduction='mean'", [](const Args& a) {
        return one(F::binary_cross_entropy(a.tensor("input"), a.tensor("target"),
                                           F::BinaryCrossEntropyFuncOptions(reduction_of(a)).weight(a.optional_tensor("weight"))));
    });
    def(t, "nn.functional.binary_cross_entropy_with_logits",
        "input, target, weight=None, size_average=None, reduce=None, reduction='mean', pos_weight=None", [](const Args& a) {
            return one(F::binary_cross_entropy_with_logits(
                a.tensor("input"), a.tensor("target"),
                F::BinaryCrossEntropyWithLogitsFuncOptions(reduction_of(a))
                    .weight(a.optional_tensor("weight"))
                    .pos_weight(a.optional_tensor("pos_weight"))));
        });
    for (const char* name : {"mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss", "cross_entropy",
                             "binary_cross_entropy"}) {
        alias(t, std::string("nn.functional.") + name, name);
    }

    // ---- shuffles (views and one copy, as Python's)
    def(t, "pixel_shuffle", "input, upscale_factor", [](const Args& a) {
        Tensor x = a.tensor("input");
        const int64_t r = a.integer("upscale_factor");
        if (x.dim() < 3) throw Error("pixel_shuffle expects input to have at least 3 dimensions, but got input with " + std::to_string(x.dim()) + " dimension(s)");
        const int64_t c = x.size(-3), h = x.size(-2), w = x.size(-1);
        if (r <= 0 || c % (r * r) != 0) throw Error("pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but input.size(-3)=" + std::to_string(c) + " is not divisible by " + std::to_string(r * r));
        std::vector<int64_t> lead(x.sizes().begin(), x.sizes().end() - 3);
        const int64_t nl = static_cast<int64_t>(lead.size());
        std::vector<int64_t> split = lead;
        split.insert(split.end(), {c / (r * r), r, r, h, w});
        std::vector<int64_t> perm;
        for (int64_t d = 0; d < nl; ++d) perm.push_back(d);
        perm.insert(perm.end(), {nl, nl + 3, nl + 1, nl + 4, nl + 2});
        std::vector<int64_t> out = lead;
        out.insert(out.end(), {c / (r * r), h * r, w * r});
        return one(x.reshape(split).permute(perm).reshape(out));
    });
    def(t, "pixel_unshuffle", "input, downscale_factor", [](const Args& a) {
        Tensor x = a.tensor("input");
        const int64_t r = a.integer("downscale_factor");
        if (x.dim() < 3) throw Error("pixel_unshuffle expects input to have at least 3 dimensions, but got input with " + std::to_string(x.dim()) + " dimension(s)");
        const int64_t c = x.size(-3), h = x.size(-2), w = x.size(-1);
        if (r <= 0 || h % r != 0 || w % r != 0) throw Error("pixel_unshuffle expects height and width to be divisible by downscale_factor");
        std::vector<int64_t> lead(x.sizes().begin(), x.sizes().end() - 3);
        const int64_t nl = static_cast<int64_t>(lead.size());
        std::vector<int64_t> split = lead;
        split.insert(split.end(), {c, h / r, r, w / r, r});
        std::vector<int64_t> perm;
        for (int64_t d = 0; d < nl; ++d) perm.push_back(d);
        perm.insert(perm.end(), {nl, nl + 2, nl + 4, nl + 1, nl + 3});
        std::vector<int64_t> out = lead;
        out.insert(out.end(), {c * r * r, h / r, w / r});
        return one(x.reshape(split).permute(perm).reshape(out));
    });
    def(t, "channel_shuffle", "input, groups", [](const Args& a) {
        Tensor x = a.tensor("input");
        const int64_t g = a.integer("groups");
        if (x.dim() < 3) throw Error("channel_shuffle expects input to have at least 3 dimensions, but got input with " + std::to_string(x.dim()) + " dimension(s)");
        const int64_t c = x.size(1);
        if (g <= 0) throw Error("Number of groups to divide channels in must be positive. Value of groups:" + std::to_string(g));
        if (c % g != 0) throw Error("Number of channels must be divisible by groups. Got " + std::to_string(c) + " channels and " + std::to_string(g) + " groups.");
        std::vector<int64_t> split{x.size(0), g, c / g};
        split.insert(split.end(), x.sizes().begin() + 2, x.sizes().end());
        return one(x.reshape(split).transpose(1, 2).reshape(x.sizes()));
    });
    alias(t, "native_channel_shuffle", "channel_shuffle");
    for (const char* name : {"pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle"}) {
        alias(t, std::string("nn.functional.") + name, name);
    }

    // ---- instance and local response normalization
    def(t, "instance_norm", "input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled=True",
        [](const Args& a) {
            Tensor x = a.tensor("input");
            Tensor w = a.optional_tensor("weight"), b = a.optional_tensor("bias");
            Tensor rm = a.optional_tensor("running_mean"), rv = a.optional_tensor("running_var");
            const double eps = a.number("eps");
            const int64_t nd = x.dim();
            if (nd < 2) throw Error("instance_norm: expected an input with at least 2 dims");
            std::vector<int64_t> wshape(static_cast<std::size_t>(nd), 1);
            wshape[1] = x.size(1);
            Tensor y;
            if (!a.boolean("use_input_stats")) {
                if (!rm.defined() || !rv.defined()) {
                    throw Error("Expected running_mean and running_var to be defined when use_input_stats is false");
                }
                y = (x - rm.reshape(wshape)) * ember::rsqrt(rv.reshape(wshape) + eps);
            } else {
                std::vector<int64_t> axes;
                int64_t n = 1;
                for (int64_t d = 2; d < nd; ++d) {
                    axes.push_back(d);
                    n *= x.size(d);
                }
                Tensor mean = ember::mean(x, axes, true);
                Tensor var = ember::mean((x - mean) * (x - mean), axes, true);
                y = (x - mean) * ember::rsqrt(var + eps);
                const double m = a.number("momentum");
                ember::NoGradGuard no_grad;
                if (rm.defined()) rm.mul_(1 - m).add_(mean.reshape({x.size(0), x.size(1)}).mean({0}) * m);
                if (rv.defined() && n > 1) {
                    rv.mul_(1 - m).add_((var * (static_cast<double>(n) / static_cast<double>(n - 1))).reshape({x.size(0), x.size(1)}).mean({0}) * m);
                }
            }
            if (w.defined()) y = y * w.reshape(wshape);
            if (b.defined()) y = y + b.reshape(wshape);
            return one(y);
        });
    alias(t, "nn.functional.instance_norm", "instance_norm",
          "input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True, momentum=0.1, eps=1e-05");
    def(t, "local_response_norm", "input, size, alpha=0.0001, beta=0.75, k=1.0", [](const Args& a) {
        Tensor x = a.tensor("input");
        if (x.dim() < 3) {
            throw ValueError("Expected 3D or higher dimensionality                          input (got " +
                             std::to_string(x.dim()) + " dimensions)");
        }
        if (x.numel() == 0) return one(x);
        const int64_t size = a.integer("size"), c = x.size(1);
        Tensor sq = x * x;
        std::vector<Tensor> parts;
        auto zeros_of = [&](int64_t n) {
            std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
            shape[1] = n;
            return ember::zeros(shape, x.scalar_type());
        };
        if (size / 2) parts.push_back(zeros_of(size / 2));
        parts.push_back(sq);
        if ((size - 1) / 2) parts.push_back(zeros_of((size - 1) / 2));
        Tensor padded = parts.size() > 1 ? ember::cat(parts, 1) : sq;
        Tensor window = padded.narrow(1, 0, c);
        for (int64_t i = 1; i < size; ++i) window = window + padded.narrow(1, i, c);
        Tensor div = x.is_floating_point() ? window * (a.number("alpha") / static_cast<double>(size)) + a.number("k")
                                           : ember::floor_divide(window, size) * a.number("alpha") + a.number("k");
        return one(x / ember::pow(div, a.number("beta")));
    });
    alias(t, "nn.functional.local_response_norm", "local_response_norm");

    // ---- distances
    def(t, "cosine_similarity", "x1, x2, dim=1, eps=1e-08", [](const Args& a) {
        Tensor x1 = a.tensor("x1"), x2 = a.tensor("x2");
        ScalarType dt = result_type(x1, x2);
        if (!is_floating_point(dt)) dt = get_default_dtype();
        std::vector<Tensor> b = ember::broadcast_tensors({x1.to(dt), x2.to(dt)});
        const int64_t d = dim_index(a.integer("dim"), b[0].dim(), a.op());
        const double eps = a.number("eps");
        Tensor n1 = ember::clamp_min(ember::norm(b[0], Scalar(2), {d}, true), eps);
        Tensor n2 = ember::clamp_min(ember::norm(b[1], Scalar(2), {d}, true), eps);
        return one(ember::sum((b[0] / n1) * (b[1] / n2), {d}));
    });
    def(t, "pairwise_distance", "x1, x2, p=2.0, eps=1e-06, keepdim=False", [](const Args& a) {
        Tensor x1 = a.tensor("x1"), x2 = a.tensor("x2");
        const int64_t nd = std::max(x1.dim(), x2.dim());
        Tensor diff = x1 - x2 + a.number("eps");
        if (nd == 0) return one(ember::abs(diff));
        return one(ember::norm(diff, Scalar(a.number("p")), {nd - 1}, a.boolean("keepdim")));
    });
    for (const char* name : {"cosine_similarity", "pairwise_distance"}) alias(t, std::string("nn.functional.") + name, name);

    // ---- kl_div: the registry's (reduction as the enum 0 none, 1 mean, 2 sum) and F's
    auto kl_div = [](const Tensor& input, const Tensor& target, const std::string& reduction, bool log_target) {
        Tensor loss = log_target ? ember::exp(target) * (target - input)
                                 : ember::where(target == 0, ember::zeros_like(target), target * ember::log(target)) - target * input;
        if (reduction == "none") return loss;
        if (reduction == "sum") return ember::sum(loss);
        if (reduction == "batchmean") return input.dim() ? ember::sum(loss) / static_cast<double>(input.size(0)) : ember::sum(loss);
        if (reduction == "mean") return ember::mean(loss);
        throw ValueError(reduction + " is not a valid value for reduction");
    };
    def(t, "kl_div", "input, target, reduction=0, *, log_target=False", [kl_div](const Args& a) {
        const int64_t r = a.integer("reduction");
        const char* names[] = {"none", "mean", "sum"};
        if (r < 0 || r > 2) throw ValueError(std::to_string(r) + " is not a valid value for reduction");
        return one(kl_div(a.tensor("input"), a.tensor("target"), names[r], a.boolean("log_target")));
    });
    def(t, "nn.functional.kl_div", "input, target, size_average=None, reduce=None, reduction='mean', log_target=False",
        [kl_div](const Args& a) {
            const bool legacy = !a.is_none("size_average") || !a.is_none("reduce");
            return one(kl_div(a.tensor("input"), a.tensor("target"), legacy ? reduction_of(a) : a.string("reduction"),
                              a.boolean("log_target")));
        });
    def(t, "binary_cross_entropy_with_logits", "input, target, weight=None, pos_weight=None, reduction=0", [](const Args& a) {
        const int64_t r = a.integer("reduction");
        const char* names[] = {"none", "mean", "sum"};
        if (r < 0 || r > 2) throw ValueError(std::to_string(r) + " is not a valid value for reduction");
        return one(F::binary_cross_entropy_with_logits(
            a.tensor("input"), a.tensor("target"),
            F::BinaryCrossEntropyWithLogitsFuncOptions(names[r]).weight(a.optional_tensor("weight")).pos_weight(a.optional_tensor("pos_weight"))));
    });

    // ---- the other dropouts: identity out of training (a random mask in training: not Python's)
    auto channel_dropout = [](const Tensor& x, double p, bool training, bool inplace, const std::string& op) {
        if (!training || p == 0) return x;
        if (p < 0 || p > 1) throw ValueError("dropout probability has to be between 0 and 1, but got " + std::to_string(p));
        std::vector<int64_t> mask_shape(x.sizes().begin(), x.sizes().end());
        for (std::size_t d = 2; d < mask_shape.size(); ++d) mask_shape[d] = 1;
        Tensor keep = ember::empty(mask_shape, x.scalar_type()).bernoulli_(1 - p);
        Tensor y = p == 1 ? x * 0 : x * keep / (1 - p);
        return inplace ? write_into(x, y, op) : y;
    };
    for (const char* name : {"dropout1d", "dropout2d", "dropout3d"}) {
        def(t, std::string("nn.functional.") + name, "input, p=0.5, training=True, inplace=False", [channel_dropout](const Args& a) {
            return one(channel_dropout(a.tensor("input"), a.number("p"), a.boolean("training"), a.boolean("inplace"), a.op()));
        });
    }
    def(t, "feature_dropout", "input, p=0.5, train=True", [channel_dropout](const Args& a) {
        return one(channel_dropout(a.tensor("input"), a.number("p"), a.boolean("train"), false, a.op()));
    });
    def(t, "feature_dropout_", "input, p, train", [channel_dropout](const Args& a) {
        return one(channel_dropout(a.tensor("input"), a.number("p"), a.boolean("train"), true, a.op()));
    });
    auto alpha_dropout_eval = [](const Tensor& x, double p, bool training, const std::string& op) {
        if (training && p > 0) {
            throw NotImplementedError(op + "(training=True) is not supported by Ember's C++ frontend");
        }
        return x;
    };
    for (const char* name : {"alpha_dropout", "feature_alpha_dropout"}) {
        def(t, name, "input, p=0.5, train=False", [alpha_dropout_eval](const Args& a) {
            return one(alpha_dropout_eval(a.tensor("input"), a.number("p"), a.boolean("train"), a.op()));
        });
        def(t, std::string(name) + "_", "input, p, train", [alpha_dropout_eval](const Args& a) {
            return one(alpha_dropout_eval(a.tensor("input"), a.number("p"), a.boolean("train"), a.op()));
        });
        def(t, std::string("nn.functional.") + name, "input, p=0.5, training=False, inplace=False", [alpha_dropout_eval](const Args& a) {
            return one(alpha_dropout_eval(a.tensor("input"), a.number("p"), a.boolean("training"), a.op()));
        });
    }

    // ---- margin and embedding losses: the registry's aten form (reduction as the enum 0
    // none, 1 mean, 2 sum) and F's (reduction a string, or the legacy size_average/reduce)
    auto reduce_loss = [](const Args& a, const Tensor& loss) {
        std::string r;
        if (a["reduction"].kind == Value::Kind::Int) {
            const int64_t e = a.integer("reduction");
            if (e < 0 || e > 2) throw ValueError(std::to_string(e) + " is not a valid value for reduction");
            r = e == 0 ? "none" : e == 1 ? "mean" : "sum";
        } else {
            r = reduction_of(a);
        }
        if (r == "none") return loss;
        if (r == "sum") return ember::sum(loss);
        if (r == "mean") return ember::mean(loss);
        throw ValueError(r + " is not a valid value for reduction");
    };
    auto both = [&t](const std::string& name, const std::string& aten, const std::string& functional,
                     std::function<Tensor(const Args&)> loss) {
        def(t, name, aten, [loss](const Args& a) { return one(loss(a)); });
        def(t, "nn.functional." + name, functional, [loss](const Args& a) { return one(loss(a)); });
    };
    both("hinge_embedding_loss", "input, target, margin=1.0, reduction=0",
         "input, target, margin=1.0, size_average=None, reduce=None, reduction='mean'", [reduce_loss](const Args& a) {
             Tensor x = a.tensor("input"), y = a.tensor("target");
             Tensor zero = ember::zeros_like(x);
             Tensor hinge = ember::where(y != 1, ember::clamp_min(a.number("margin") - x, 0), zero);
             return reduce_loss(a, hinge + ember::where(y != -1, x, zero));
         });
    both("margin_ranking_loss", "input1, input2, target, margin=0.0, reduction=0",
         "input1, input2, target, margin=0, size_average=None, reduce=None, reduction='mean'", [reduce_loss](const Args& a) {
             Tensor x1 = a.tensor("input1"), x2 = a.tensor("input2"), y = a.tensor("target");
             return reduce_loss(a, ember::clamp_min(-y * (x1 - x2) + a.number("margin"), 0));
         });
    both("cosine_embedding_loss", "input1, input2, target, margin=0.0, reduction=0",
         "input1, input2, target, margin=0, size_average=None, reduce=None, reduction='mean'", [reduce_loss](const Args& a) {
             Tensor x1 = a.tensor("input1"), x2 = a.tensor("input2"), y = a.tensor("target");
             const std::vector<int64_t> d{x1.dim() - 1};
             Tensor prod = ember::sum(x1 * x2, d);
             Tensor mag1 = ember::sum(x1 * x1, d) + 1e-12, mag2 = ember::sum(x2 * x2, d) + 1e-12;
             Tensor cos = prod / ember::sqrt(mag1 * mag2);
             Tensor zero = ember::zeros_like(cos);
             Tensor pos = ember::where(y == 1, 1 - cos, zero);
             Tensor neg = ember::where(y == -1, ember::clamp_min(cos - a.number("margin"), 0), zero);
             return reduce_loss(a, pos + neg);
         });
    both("triplet_margin_loss", "anchor, positive, negative, margin=1.0, p=2.0, eps=1e-06, swap=False, reduction=0",
         "anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False, size_average=None, reduce=None, reduction='mean'",
         [reduce_loss](const Args& a) {
             Tensor an = a.tensor("anchor"), po = a.tensor("positive"), ne = a.tensor("negative");
             if (an.dim() != po.dim() || an.dim() != ne.dim()) {
                 throw Error("The anchor, positive, and negative tensors are expected to have the same number of dimensions, "
                             "but got: anchor " + std::to_string(an.dim()) + "D, positive " + std::to_string(po.dim()) +
                             "D, and negative " + std::to_string(ne.dim()) + "D inputs");
             }
             const double p = a.number("p"), eps = a.number("eps");
             auto dist = [&](const Tensor& x1, const Tensor& x2) {
                 Tensor diff = x1 - x2 + eps;
                 const int64_t nd = std::max(x1.dim(), x2.dim());
                 return nd == 0 ? ember::abs(diff) : ember::norm(diff, Scalar(p), {nd - 1}, false);
             };
             Tensor d_pos = dist(an, po), d_neg = dist(an, ne);
             if (a.boolean("swap")) d_neg = ember::minimum(d_neg, dist(po, ne));
             return reduce_loss(a, ember::clamp_min(a.number("margin") + d_pos - d_neg, 0));
         });
    const char* soft_margin_signature = "input, target, size_average=None, reduce=None, reduction='mean'";
    both("soft_margin_loss", soft_margin_signature, soft_margin_signature, [reduce_loss](const Args& a) {
        Tensor x = a.tensor("input"), y = a.tensor("target");
        return reduce_loss(a, map_float(ember::zeros_like(x), -y * x, [](double u, double v) {
            const double m = std::max(u, v);
            return m + std::log1p(std::exp(-std::abs(u - v)));
        }).to(x.scalar_type()));
    });
    const char* multilabel_signature = "input, target, weight=None, size_average=None, reduce=None, reduction='mean'";
    both("multilabel_soft_margin_loss", multilabel_signature, multilabel_signature, [reduce_loss](const Args& a) {
        Tensor x = a.tensor("input"), y = a.tensor("target");
        Tensor loss = y * F::softplus(-x) + (1 - y) * F::softplus(x);
        Tensor w = a.optional_tensor("weight");
        if (w.defined()) loss = loss * w;
        const int64_t c = x.dim() - 1;
        return reduce_loss(a, ember::sum(loss, {c}) / static_cast<double>(x.size(c)));
    });
}

}  // namespace ember::jit::detail
