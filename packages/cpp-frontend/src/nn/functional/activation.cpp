// Activations of ember::nn::functional. relu, gelu, silu, tanh, sigmoid and softmax are the
// core ops; the others record one node each (PyTorch's node names) whose backward is written
// with differentiable ops, so gradients of gradients work too.
#include <cmath>
#include <limits>

#include "common.h"

namespace ember {
namespace nn {
namespace functional {

using namespace detail;

namespace {

// out (computed without history) becomes the output of a node named node_name over input,
// whose gradient is g * local(input) (local written with ops).
template <typename Local>
Tensor record_pointwise(const Tensor& input, Tensor out, const char* node_name, Local local) {
    if (auto node = make_node(node_name, {input})) {
        set_history(out, node, 0);
        node->save(input);
        node->set_formula([local](FunctionNode& n, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            return {g[0] * local(n.saved(0))};
        });
    }
    return out;
}

Tensor hardtanh_out_of_place(const Tensor& input, double min_val, double max_val) {
    Tensor out;
    {
        NoGradGuard guard;
        if (input.is_floating_point()) {
            out = input.clamp(Scalar(min_val), Scalar(max_val));
        } else {  // integers keep their dtype, the bounds truncated (as Python Ember)
            out = input.clamp(Scalar(static_cast<int64_t>(min_val)), Scalar(static_cast<int64_t>(max_val)));
        }
    }
    return record_pointwise(input, out, "HardtanhBackward0", [min_val, max_val](const Tensor& x) {
        return logical_and(gt(x, min_val), lt(x, max_val)).to(x.scalar_type());
    });
}

Tensor leaky_relu_out_of_place(const Tensor& input, double slope) {
    check_floating(input, "leaky_relu_cpu");
    Tensor out;
    {
        NoGradGuard guard;
        const Tensor& x = input;
        out = where(gt(x, 0), x, x * slope);
    }
    return record_pointwise(input, out, "LeakyReluBackward0", [slope](const Tensor& x) {
        return where(gt(x, 0), scalar_tensor(1.0, x.scalar_type()), scalar_tensor(slope, x.scalar_type()));
    });
}

Tensor elu_out_of_place(const Tensor& input, double alpha) {
    check_floating(input, "elu_cpu");
    Tensor out;
    {
        NoGradGuard guard;
        const Tensor& x = input;
        out = where(gt(x, 0), x, x.clamp_max(0).expm1() * alpha);
    }
    return record_pointwise(input, out, "EluBackward0", [alpha](const Tensor& x) {
        // exp of the clamped input: no overflow on the positive side, where it is masked out
        return where(gt(x, 0), scalar_tensor(1.0, x.scalar_type()), x.clamp_max(0).exp() * alpha);
    });
}

}  // namespace

Tensor relu(const Tensor& input, bool inplace) {
    if (inplace) return input.relu_();
    return ember::relu(input);
}

Tensor hardtanh(const Tensor& input, double min_val, double max_val, bool inplace) {
    if (min_val > max_val) throw ValueError("min_val cannot be greater than max_val");
    if (inplace) {
        return apply_inplace(input, [&](const Tensor& x) { return hardtanh_out_of_place(x, min_val, max_val); });
    }
    return hardtanh_out_of_place(input, min_val, max_val);
}

Tensor hardtanh(const Tensor& input, const HardtanhFuncOptions& options) {
    return hardtanh(input, options.min_val(), options.max_val(), options.inplace());
}

Tensor relu6(const Tensor& input, bool inplace) { return hardtanh(input, 0.0, 6.0, inplace); }

Tensor leaky_relu(const Tensor& input, double negative_slope, bool inplace) {
    if (inplace) {
        return apply_inplace(input, [&](const Tensor& x) { return leaky_relu_out_of_place(x, negative_slope); });
    }
    return leaky_relu_out_of_place(input, negative_slope);
}

Tensor leaky_relu(const Tensor& input, const LeakyReLUFuncOptions& options) {
    return leaky_relu(input, options.negative_slope(), options.inplace());
}

Tensor elu(const Tensor& input, double alpha, bool inplace) {
    if (inplace) return apply_inplace(input, [&](const Tensor& x) { return elu_out_of_place(x, alpha); });
    return elu_out_of_place(input, alpha);
}

Tensor elu(const Tensor& input, const ELUFuncOptions& options) {
    return elu(input, options.alpha(), options.inplace());
}

Tensor gelu(const Tensor& input, std::string_view approximate) { return ember::gelu(input, approximate); }

Tensor gelu(const Tensor& input, const GELUFuncOptions& options) { return functional::gelu(input, options.approximate()); }

Tensor tanh(const Tensor& input) { return ember::tanh(input); }

Tensor sigmoid(const Tensor& input) { return ember::sigmoid(input); }

Tensor silu(const Tensor& input, bool inplace) {
    if (inplace) return apply_inplace(input, [](const Tensor& x) { return ember::silu(x); });
    return ember::silu(input);
}

Tensor softplus(const Tensor& input, double beta, double threshold) {
    check_floating(input, "softplus_cpu");
    Tensor out;
    {
        NoGradGuard guard;
        const Tensor& x = input;
        const Tensor z = x * beta;
        // log1p(exp(z)) computed stably as max(z, 0) + log1p(exp(-|z|))
        const Tensor smooth = (z.clamp_min(0) + (-z.abs()).exp().log1p()) / beta;
        out = where(gt(z, threshold), x, smooth);
    }
    return record_pointwise(input, out, "SoftplusBackward0", [beta, threshold](const Tensor& x) {
        const Tensor z = x * beta;
        return where(gt(z, threshold), scalar_tensor(1.0, x.scalar_type()), z.sigmoid());
    });
}

Tensor softplus(const Tensor& input, const SoftplusFuncOptions& options) {
    return softplus(input, options.beta(), options.threshold());
}

Tensor logsigmoid(const Tensor& input) {
    check_floating(input, "log_sigmoid_cpu");
    Tensor out;
    {
        NoGradGuard guard;
        const Tensor& x = input;
        out = x.clamp_max(0) - (-x.abs()).exp().log1p();
    }
    return record_pointwise(input, out, "LogSigmoidBackward0", [](const Tensor& x) { return (-x).sigmoid(); });
}

Tensor softmax(const Tensor& input, int64_t dim, std::optional<ScalarType> dtype) {
    return ember::softmax(input, dim, dtype);
}

Tensor softmax(const Tensor& input, const SoftmaxFuncOptions& options) {
    return ember::softmax(input, options.dim(), options.dtype());
}

Tensor log_softmax(const Tensor& input, int64_t dim, std::optional<ScalarType> dtype) {
    return ember::log_softmax(input, dim, dtype);
}

Tensor log_softmax(const Tensor& input, const LogSoftmaxFuncOptions& options) {
    return ember::log_softmax(input, options.dim(), options.dtype());
}

}  // namespace functional
}  // namespace nn
}  // namespace ember
