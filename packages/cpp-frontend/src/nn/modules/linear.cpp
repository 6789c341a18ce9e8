// Linear, Flatten, Identity.
#include "ember/nn/modules/linear.h"

#include "ember/factories.h"
#include "ember/nn/functional.h"
#include "nn/modules/utils.h"

namespace ember {
namespace nn {

LinearImpl::LinearImpl(const LinearOptions& options_) : options(options_) {
    weight = register_parameter("weight", empty({options.out_features(), options.in_features()}));
    bias = register_parameter("bias", options.bias() ? empty({options.out_features()}) : Tensor());
    reset_parameters();
}

void LinearImpl::reset_parameters() { detail::reset_kaiming_uniform(weight, bias, false); }

Tensor LinearImpl::forward(const Tensor& input) { return functional::linear(input, weight, bias); }

std::string LinearImpl::extra_repr() const {
    return "in_features=" + std::to_string(options.in_features()) +
           ", out_features=" + std::to_string(options.out_features()) +
           ", bias=" + detail::py_bool(bias.defined());
}

FlattenImpl::FlattenImpl(const FlattenOptions& options_) : options(options_) {}

Tensor FlattenImpl::forward(const Tensor& input) { return input.flatten(options.start_dim(), options.end_dim()); }

std::string FlattenImpl::extra_repr() const {
    return "start_dim=" + std::to_string(options.start_dim()) + ", end_dim=" + std::to_string(options.end_dim());
}

Tensor IdentityImpl::forward(const Tensor& input) { return input; }

}  // namespace nn
}  // namespace ember
