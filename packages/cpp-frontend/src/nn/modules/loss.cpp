// Loss modules: each forwards to its functional:: loss with its options.
#include "ember/nn/modules/loss.h"

#include "ember/nn/functional.h"

namespace ember {
namespace nn {

MSELossImpl::MSELossImpl(const MSELossOptions& options_) : options(options_) {}

Tensor MSELossImpl::forward(const Tensor& input, const Tensor& target) {
    return functional::mse_loss(input, target, options);
}

}  // namespace nn
}  // namespace ember
