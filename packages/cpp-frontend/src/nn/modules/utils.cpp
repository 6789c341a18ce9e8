#include "nn/modules/utils.h"

#include <cmath>
#include <limits>

#include "ember/autograd.h"
#include "ember/factories.h"
#include "ember/nn/init.h"

namespace ember {
namespace nn {
namespace detail {

void reset_kaiming_uniform(const Tensor& weight, const Tensor& bias, bool keep_bias_without_fan_in) {
    init::kaiming_uniform_(weight, std::sqrt(5.0));
    if (!bias.defined()) return;
    const int64_t fan_in = std::get<0>(init::calculate_fan_in_and_fan_out(weight));
    if (fan_in == 0 && keep_bias_without_fan_in) return;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
}

std::string size_repr(IntArrayRef values) {
    bool same = true;
    for (int64_t v : values) same = same && v == values[0];
    if (same && !values.empty()) return std::to_string(values[0]);
    return py_tuple_repr(values.vec());
}

std::pair<Tensor, Tensor> register_affine(Module& module, bool affine, bool bias, IntArrayRef shape) {
    Tensor w = module.register_parameter("weight", affine ? empty(shape) : Tensor());
    Tensor b = module.register_parameter("bias", affine && bias ? empty(shape) : Tensor());
    return {w, b};
}

void reset_affine(const Tensor& weight, const Tensor& bias) {
    if (weight.defined()) init::ones_(weight);
    if (bias.defined()) init::zeros_(bias);
}

Tensor canonical_mask(const Tensor& mask, const char* name, ScalarType dtype) {
    if (!mask.defined()) return mask;
    EMBER_CHECK(mask.scalar_type() == kBool || mask.is_floating_point(), "only bool and floating types of ", name,
                " are supported");
    if (mask.is_floating_point()) return mask;
    return zeros_like(mask, dtype).masked_fill(mask, -std::numeric_limits<double>::infinity());
}

}  // namespace detail
}  // namespace nn
}  // namespace ember
