// Private helpers of ember::nn::functional: dtype dispatch for the fused kernels, loss
// reduction, in-place variants, shape strings.
#pragma once

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../autograd/function_node.h"
#include "ember/autograd.h"
#include "ember/error.h"
#include "ember/nn/functional.h"
#include "ember/ops.h"
#include "ember/tensor.h"

namespace ember {
namespace nn {
namespace functional {
namespace detail {

using autograd::FunctionNode;
using autograd::make_node;
using autograd::set_history;
using autograd::variable_list;

// "[2, 3]"
inline std::string shape_str(IntArrayRef sizes) {
    std::ostringstream os;
    os << "[";
    for (size_t i = 0; i < sizes.size(); ++i) os << (i ? ", " : "") << sizes[i];
    os << "]";
    return os.str();
}

// A double as Python's repr prints it: the shortest text that reads back the same, with ".0"
// on integral values (0.1, 2.0, 1e-05, inf, nan).
inline std::string py_float(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    std::string text;
    for (int precision = 1; precision <= 17; ++precision) {
        std::ostringstream os;
        os.precision(precision);
        os << v;
        text = os.str();
        if (std::stod(text) == v) break;
    }
    if (text.find_first_of(".en") == std::string::npos) text += ".0";
    return text;
}

// PyTorch's torch.Size([2, 3]) as Python prints it in messages.
inline std::string torch_size(IntArrayRef sizes) { return "torch.Size(" + shape_str(sizes) + ")"; }

// PyTorch's '"<kernel>" not implemented for '<dtype>'' unless t is floating.
inline void check_floating(const Tensor& t, const char* kernel) {
    if (!t.is_floating_point()) {
        throw NotImplementedError(std::string("\"") + kernel + "\" not implemented for '" +
                                  std::string(scalar_type_name(t.scalar_type())) + "'");
    }
}

// Calls f(TypeTag<float>) or f(TypeTag<double>): the element types the fused kernels run on
// (a float16 input runs through float32, see the callers).
template <typename T>
struct TypeTag {
    using type = T;
};
template <typename F>
decltype(auto) dispatch_float_double(ScalarType t, const char* name, F&& f) {
    if (t == kDouble) return f(TypeTag<double>());
    EMBER_CHECK(t == kFloat, "\"", name, "\" not implemented for '", scalar_type_name(t), "'");
    return f(TypeTag<float>());
}

// The per-element loss reduced as reduction says.
inline Tensor apply_reduction(const Tensor& loss, Reduction reduction) {
    switch (reduction) {
        case Reduction::Mean: return loss.mean();
        case Reduction::Sum: return loss.sum();
        case Reduction::None: break;
    }
    return loss;
}

// PyTorch's error for an argument that takes no gradient but requires one.
inline void not_differentiable(const char* fn_name, const char* arg, const Tensor& t) {
    if (GradMode::is_enabled() && t.defined() && t.requires_grad()) {
        EMBER_ERROR("The function '", fn_name, "' is not differentiable with respect to argument '", arg,
                    "'. This input cannot have requires_grad True.");
    }
}

// The in-place variant of an out-of-place op fn: input takes fn(input)'s value (and, when
// autograd records, its history: fn runs on a copy, so what fn saves is never modified).
template <typename Fn>
Tensor apply_inplace(const Tensor& input, Fn&& fn) {
    const bool record = GradMode::is_enabled() && input.requires_grad();
    Tensor result = fn(record ? input.clone() : input);
    input.copy_(result);
    return input;
}

// A new tensor of the given shape and dtype, contiguous (uninitialised).
inline Tensor new_empty(IntArrayRef sizes, ScalarType dtype) { return empty(sizes, TensorOptions(dtype)); }

}  // namespace detail
}  // namespace functional
}  // namespace nn
}  // namespace ember
