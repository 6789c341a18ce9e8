// ember::nn::init (libtorch's torch::nn::init, Python's torch.nn.init): parameter
// initialisation. Every function fills its tensor in place under NoGradGuard (so it works on
// leaves that require grad) and returns it; the random ones draw from the given generator,
// else the default one (ember::manual_seed makes them deterministic, with Ember C++'s own
// streams). Formulas and error messages are PyTorch's.
//
//   ember::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));
//   ember::nn::init::xavier_normal_(weight, ember::nn::init::calculate_gain("tanh"));
//
// nonlinearity: "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
// "conv_transpose2d", "conv_transpose3d", "sigmoid", "tanh", "relu", "leaky_relu", "selu";
// mode: "fan_in" or "fan_out".
#pragma once

#include "../export.h"
#include <cstdint>
#include <optional>
#include <string_view>
#include <tuple>

#include "../generator.h"
#include "../scalar.h"
#include "../tensor.h"

namespace ember {
namespace nn {
namespace init {

// The recommended gain for a nonlinearity; param: leaky_relu's negative slope (default 0.01).
EMBER_API double calculate_gain(std::string_view nonlinearity, std::optional<double> param = std::nullopt);

// (fan_in, fan_out) = (size(1) * receptive field, size(0) * receptive field), the receptive
// field being the product of the dims after the first two. Needs at least 2 dims.
EMBER_API std::tuple<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor);
// fan_in or fan_out, as mode says.
EMBER_API int64_t calculate_correct_fan(const Tensor& tensor, std::string_view mode);

// U(a, b)
EMBER_API Tensor uniform_(Tensor tensor, double a = 0.0, double b = 1.0,
                          std::optional<Generator> generator = std::nullopt);
// N(mean, std^2)
EMBER_API Tensor normal_(Tensor tensor, double mean = 0.0, double std = 1.0,
                         std::optional<Generator> generator = std::nullopt);
// N(mean, std^2) truncated to [a, b] (PyTorch's rejection sampler, draw for draw: a seed
// gives PyTorch's values)
EMBER_API Tensor trunc_normal_(Tensor tensor, double mean = 0.0, double std = 1.0, double a = -2.0, double b = 2.0,
                               std::optional<Generator> generator = std::nullopt);
EMBER_API Tensor constant_(Tensor tensor, const Scalar& value);
EMBER_API Tensor ones_(Tensor tensor);
EMBER_API Tensor zeros_(Tensor tensor);
// the identity matrix (2-D tensors only)
EMBER_API Tensor eye_(Tensor tensor);
// the Dirac delta: the identity convolution per group ({3, 4, 5}-D tensors)
EMBER_API Tensor dirac_(Tensor tensor, int64_t groups = 1);
// U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out))
EMBER_API Tensor xavier_uniform_(Tensor tensor, double gain = 1.0, std::optional<Generator> generator = std::nullopt);
// N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out))
EMBER_API Tensor xavier_normal_(Tensor tensor, double gain = 1.0, std::optional<Generator> generator = std::nullopt);
// U(-bound, bound), bound = calculate_gain(nonlinearity, a) * sqrt(3 / fan)
EMBER_API Tensor kaiming_uniform_(Tensor tensor, double a = 0.0, std::string_view mode = "fan_in",
                                  std::string_view nonlinearity = "leaky_relu",
                                  std::optional<Generator> generator = std::nullopt);
// N(0, std^2), std = calculate_gain(nonlinearity, a) / sqrt(fan)
EMBER_API Tensor kaiming_normal_(Tensor tensor, double a = 0.0, std::string_view mode = "fan_in",
                                 std::string_view nonlinearity = "leaky_relu",
                                 std::optional<Generator> generator = std::nullopt);
// a (semi-)orthogonal matrix (the tensor viewed as size(0) x rest) times gain, from the QR
// decomposition of a normal draw (signs fixed by R's diagonal, as PyTorch)
EMBER_API Tensor orthogonal_(Tensor tensor, double gain = 1.0, std::optional<Generator> generator = std::nullopt);
// N(0, std^2) with ceil(sparsity * rows) entries of each column set to zero (2-D tensors);
// the zeroed rows are a randperm per column from the global generator, as PyTorch's
// (`generator` draws the normal values only)
EMBER_API Tensor sparse_(Tensor tensor, double sparsity, double std = 0.01,
                         std::optional<Generator> generator = std::nullopt);

}  // namespace init
}  // namespace nn
}  // namespace ember
