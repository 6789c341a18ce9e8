// Dropout2d: channel-wise dropout in training, the identity in eval.
#include "ember/nn/functional.h"
#include "ember/nn/modules/dropout.h"

namespace ember {
namespace nn {

Dropout2dImpl::Dropout2dImpl(const Dropout2dOptions& options_) : options(options_) {
    EMBER_CHECK_VALUE(options.p() >= 0 && options.p() <= 1, "dropout probability has to be between 0 and 1, but got ",
                      detail::py_float_repr(options.p()));
}

Tensor Dropout2dImpl::forward(const Tensor& input) {
    return functional::dropout2d(input, options.p(), is_training(), options.inplace());
}

std::string Dropout2dImpl::extra_repr() const {
    return "p=" + detail::py_float_repr(options.p()) + ", inplace=" + detail::py_bool(options.inplace());
}

}  // namespace nn
}  // namespace ember
