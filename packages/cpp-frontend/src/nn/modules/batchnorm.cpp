// BatchNorm1d, BatchNorm2d.
#include "ember/nn/modules/batchnorm.h"

#include "ember/autograd.h"
#include "ember/factories.h"
#include "ember/nn/functional.h"
#include "nn/modules/utils.h"

namespace ember {
namespace nn {

BatchNormImplBase::BatchNormImplBase(const BatchNormOptions& options_) : options(options_) {
    const int64_t n = options.num_features();
    std::tie(weight, bias) = detail::register_affine(*this, options.affine(), true, {n});
    const bool track = options.track_running_stats();
    running_mean = register_buffer("running_mean", track ? zeros({n}) : Tensor());
    running_var = register_buffer("running_var", track ? ones({n}) : Tensor());
    num_batches_tracked = register_buffer("num_batches_tracked", track ? scalar_tensor(0, kLong) : Tensor());
    reset_parameters();
}

void BatchNormImplBase::reset_running_stats() {
    if (!options.track_running_stats()) return;
    NoGradGuard no_grad;
    running_mean.zero_();
    running_var.fill_(1);
    num_batches_tracked.zero_();
}

void BatchNormImplBase::reset_parameters() {
    reset_running_stats();
    detail::reset_affine(weight, bias);
}

Tensor BatchNormImplBase::forward(const Tensor& input) {
    check_input_dim(input);
    double factor = options.momentum().value_or(0.0);
    if (is_training() && options.track_running_stats() && num_batches_tracked.defined()) {
        {
            NoGradGuard no_grad;
            num_batches_tracked.add_(1);
        }
        if (!options.momentum()) factor = 1.0 / num_batches_tracked.item<double>();
    }
    const bool bn_training = is_training() || (!running_mean.defined() && !running_var.defined());
    const bool use_running = !is_training() || options.track_running_stats();
    return functional::batch_norm(input, use_running ? running_mean : Tensor(), use_running ? running_var : Tensor(),
                                  weight, bias, bn_training, factor, options.eps());
}

std::string BatchNormImplBase::extra_repr() const {
    using detail::py_bool;
    return std::to_string(options.num_features()) + ", eps=" + detail::py_float_repr(options.eps()) +
           ", momentum=" + (options.momentum() ? detail::py_float_repr(*options.momentum()) : "None") +
           ", affine=" + py_bool(options.affine()) + ", bias=" + py_bool(bias.defined()) +
           ", track_running_stats=" + py_bool(options.track_running_stats());
}

void BatchNorm1dImpl::check_input_dim(const Tensor& input) const {
    EMBER_CHECK_VALUE(input.dim() == 2 || input.dim() == 3, "expected 2D or 3D input (got ", input.dim(), "D input)");
}

void BatchNorm2dImpl::check_input_dim(const Tensor& input) const {
    EMBER_CHECK_VALUE(input.dim() == 4, "expected 4D input (got ", input.dim(), "D input)");
}

}  // namespace nn
}  // namespace ember
