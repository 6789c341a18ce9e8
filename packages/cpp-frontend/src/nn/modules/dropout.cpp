// Dropout.
#include "ember/nn/modules/dropout.h"

#include "ember/nn/functional.h"

namespace ember {
namespace nn {

DropoutImpl::DropoutImpl(const DropoutOptions& options_) : options(options_) {
    EMBER_CHECK_VALUE(options.p() >= 0 && options.p() <= 1, "dropout probability has to be between 0 and 1, but got ",
                      detail::py_float_repr(options.p()));
}

Tensor DropoutImpl::forward(const Tensor& input) {
    return functional::dropout(input, options.p(), is_training(), options.inplace());
}

std::string DropoutImpl::extra_repr() const {
    return "p=" + detail::py_float_repr(options.p()) + ", inplace=" + detail::py_bool(options.inplace());
}

}  // namespace nn
}  // namespace ember
