// Channel-wise (feature) dropout: functional::dropout2d, built on dropout of a noise tensor
// shaped (N, C, 1, ...), so its gradient is the input's times the same noise.
#include <vector>

#include "ember/factories.h"
#include "ember/nn/functional.h"
#include "ember/nn/module.h"

namespace ember {
namespace nn {
namespace functional {

Tensor dropout2d(const Tensor& input, double p, bool training, bool inplace) {
    EMBER_CHECK_VALUE(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ",
                      detail::py_float_repr(p));
    EMBER_CHECK(input.dim() >= 2, "Feature dropout requires at least 2 dimensions in the input");
    if (!training || p == 0.0) return input;
    std::vector<int64_t> noise_shape(static_cast<size_t>(input.dim()), 1);
    noise_shape[0] = input.size(0);
    noise_shape[1] = input.size(1);
    // 0 with probability p, else 1 / (1 - p); dropout raises for a non-float input
    const Tensor noise = dropout(ones(noise_shape, input.scalar_type()), p, /*training=*/true);
    return inplace ? input.mul_(noise) : input * noise;
}

}  // namespace functional
}  // namespace nn
}  // namespace ember
