// ReLU, GELU, LeakyReLU, SiLU, Tanh, Sigmoid, Softmax, LogSoftmax.
#include "ember/nn/modules/activation.h"

#include "ember/nn/functional.h"

namespace ember {
namespace nn {

namespace {
std::string inplace_repr(bool inplace, const char* sep) { return inplace ? std::string(sep) + "inplace=True" : ""; }
}  // namespace

ReLUImpl::ReLUImpl(const ReLUOptions& options_) : options(options_) {}
Tensor ReLUImpl::forward(const Tensor& input) { return functional::relu(input, options.inplace()); }
std::string ReLUImpl::extra_repr() const { return inplace_repr(options.inplace(), ""); }

GELUImpl::GELUImpl(const GELUOptions& options_) : options(options_) {}
Tensor GELUImpl::forward(const Tensor& input) { return functional::gelu(input, options.approximate()); }
std::string GELUImpl::extra_repr() const { return "approximate='" + options.approximate() + "'"; }

LeakyReLUImpl::LeakyReLUImpl(const LeakyReLUOptions& options_) : options(options_) {}
Tensor LeakyReLUImpl::forward(const Tensor& input) {
    return functional::leaky_relu(input, options.negative_slope(), options.inplace());
}
std::string LeakyReLUImpl::extra_repr() const {
    return "negative_slope=" + detail::py_float_repr(options.negative_slope()) + inplace_repr(options.inplace(), ", ");
}

SiLUImpl::SiLUImpl(const SiLUOptions& options_) : options(options_) {}
Tensor SiLUImpl::forward(const Tensor& input) { return functional::silu(input, options.inplace()); }
std::string SiLUImpl::extra_repr() const { return inplace_repr(options.inplace(), ""); }

Tensor TanhImpl::forward(const Tensor& input) { return functional::tanh(input); }

Tensor SigmoidImpl::forward(const Tensor& input) { return functional::sigmoid(input); }

SoftmaxImpl::SoftmaxImpl(const SoftmaxOptions& options_) : options(options_) {}
Tensor SoftmaxImpl::forward(const Tensor& input) { return functional::softmax(input, options.dim()); }
std::string SoftmaxImpl::extra_repr() const { return "dim=" + std::to_string(options.dim()); }

LogSoftmaxImpl::LogSoftmaxImpl(const LogSoftmaxOptions& options_) : options(options_) {}
Tensor LogSoftmaxImpl::forward(const Tensor& input) { return functional::log_softmax(input, options.dim()); }
std::string LogSoftmaxImpl::extra_repr() const { return "dim=" + std::to_string(options.dim()); }

}  // namespace nn
}  // namespace ember
