// Neural-network ops of the C++ op table: linear algebra, convolution and pooling,
// normalization, dropout, attention, padding and the common losses.
#include <algorithm>

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

// F.pad: constant padding by copy into a filled tensor; reflect, replicate and circular
// by gathering the indices each padded position reads.
Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, const std::string& mode, double value,
           const std::string& op) {
    if (pads.size() % 2 != 0) throw Error(op + "(): Padding length must be divisible by 2");
    const auto npad = static_cast<int64_t>(pads.size() / 2);
    if (npad > x.dim()) throw Error(op + "(): Padding length too large");
    if (mode == "constant") {
        // negative pads crop; positive pads join blocks filled with `value` (differentiable)
        Tensor out = x;
        for (int64_t k = 0; k < npad; ++k) {
            const int64_t d = x.dim() - 1 - k;
            const int64_t left = pads[static_cast<std::size_t>(2 * k)];
            const int64_t right = pads[static_cast<std::size_t>(2 * k + 1)];
            if (out.size(d) + left + right < 0) {
                throw Error(op + "(): the padded size of dimension " + std::to_string(d) + " is negative (" +
                            std::to_string(out.size(d) + left + right) + ")");
            }
            if (left < 0) out = out.narrow(d, -left, out.size(d) + left);
            if (right < 0) out = out.narrow(d, 0, out.size(d) + right);
            std::vector<Tensor> parts;
            auto block = [&](int64_t n) {
                std::vector<int64_t> shape(out.sizes().begin(), out.sizes().end());
                shape[static_cast<std::size_t>(d)] = n;
                return ember::full(shape, value, out.scalar_type());
            };
            if (left > 0) parts.push_back(block(left));
            parts.push_back(out);
            if (right > 0) parts.push_back(block(right));
            if (parts.size() > 1) out = ember::cat(parts, d);
        }
        return out;
    }
    if (mode != "reflect" && mode != "replicate" && mode != "circular") {
        throw Error(op + "(): Unrecognised padding mode " + mode);
    }
    // PyTorch pads the last 1, 2 or 3 dims of a batched or unbatched input
    const int64_t n = static_cast<int64_t>(pads.size());
    const bool supported = (n == 2 && (x.dim() == 2 || x.dim() == 3)) || (n == 4 && (x.dim() == 3 || x.dim() == 4)) ||
                           (n == 6 && (x.dim() == 4 || x.dim() == 5));
    if (!supported) {
        throw NotImplementedError("Padding size " + std::to_string(n) + " is not supported for " + std::to_string(x.dim()) +
                                  "D input tensor.\nSupported combinations for non-constant padding:\n"
                                  "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                                  "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                                  "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)");
    }
    Tensor out = x;
    for (int64_t k = 0; k < npad; ++k) {
        const int64_t d = x.dim() - 1 - k;
        const int64_t n = x.size(d);
        const int64_t left = pads[static_cast<std::size_t>(2 * k)];
        const int64_t right = pads[static_cast<std::size_t>(2 * k + 1)];
        if (mode == "reflect" && (left >= n || right >= n)) {
            throw Error(op + "(): Padding size should be less than the corresponding input dimension, but got: "
                        "padding (" + std::to_string(left) + ", " + std::to_string(right) + ") at dimension " +
                        std::to_string(d) + " of input " + std::to_string(n));
        }
        const int64_t m = n + left + right;
        Tensor idx = ember::empty({m}, kLong);
        int64_t* p = idx.data_ptr<int64_t>();
        for (int64_t i = 0; i < m; ++i) {
            int64_t j = i - left;
            if (mode == "replicate") {
                j = std::clamp<int64_t>(j, 0, n - 1);
            } else if (mode == "circular") {
                j = ((j % n) + n) % n;
            } else {
                const int64_t period = 2 * (n - 1);
                j = period == 0 ? 0 : ((j % period) + period) % period;
                if (j >= n) j = period - j;
            }
            p[i] = j;
        }
        out = out.index_select(d, idx);
    }
    return out;
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
    def(t, "mm", "input, mat2", [](const Args& a) { return one(ember::mm(a.tensor("input"), a.tensor("mat2"))); });
    def(t, "bmm", "input, mat2", [](const Args& a) { return one(ember::bmm(a.tensor("input"), a.tensor("mat2"))); });
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
    def(t, "pad", "input, pad, mode='constant', value=None", [](const Args& a) {
        return one(pad(a.tensor("input"), a.ints("pad"), a.string("mode"), a.is_none("value") ? 0.0 : a.number("value"), a.op()));
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
}

}  // namespace ember::jit::detail
