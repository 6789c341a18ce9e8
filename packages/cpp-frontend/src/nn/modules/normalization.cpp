// LayerNorm.
#include "ember/nn/modules/normalization.h"

#include "ember/nn/functional.h"
#include "nn/modules/utils.h"

namespace ember {
namespace nn {

LayerNormImpl::LayerNormImpl(const LayerNormOptions& options_) : options(options_) {
    std::tie(weight, bias) =
        detail::register_affine(*this, options.elementwise_affine(), options.bias(), options.normalized_shape());
    reset_parameters();
}

void LayerNormImpl::reset_parameters() { detail::reset_affine(weight, bias); }

Tensor LayerNormImpl::forward(const Tensor& input) {
    return functional::layer_norm(input, options.normalized_shape(), weight, bias, options.eps());
}

std::string LayerNormImpl::extra_repr() const {
    using detail::py_bool;
    return detail::py_tuple_repr(options.normalized_shape()) + ", eps=" + detail::py_float_repr(options.eps()) +
           ", elementwise_affine=" + py_bool(options.elementwise_affine()) + ", bias=" + py_bool(bias.defined());
}

}  // namespace nn
}  // namespace ember
