// Options of TransformerEncoderLayer (libtorch's torch::nn::TransformerEncoderLayerOptions).
//
//   ember::nn::TransformerEncoderLayer layer(
//       ember::nn::TransformerEncoderLayerOptions(512, 8).dim_feedforward(2048).dropout(0.1)
//           .activation("gelu").batch_first(true).norm_first(true));
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "common.h"

namespace ember {
namespace nn {

// The feed-forward activation: "relu", "gelu" (Python's strings) or any function.
class EMBER_API TransformerActivation {
public:
    TransformerActivation(const char* name) : TransformerActivation(std::string_view(name)) {}  // NOLINT
    TransformerActivation(const std::string& name) : TransformerActivation(std::string_view(name)) {}  // NOLINT
    TransformerActivation(std::string_view name);  // NOLINT
    TransformerActivation(std::function<Tensor(const Tensor&)> fn);  // NOLINT
    // a lambda or function taking and returning a Tensor
    template <typename Fn, typename = std::enable_if_t<std::is_invocable_r_v<Tensor, Fn&, const Tensor&> &&
                                                       !std::is_convertible_v<Fn, std::string_view> &&
                                                       !std::is_same_v<std::decay_t<Fn>, TransformerActivation>>>
    TransformerActivation(Fn fn)  // NOLINT
        : TransformerActivation(std::function<Tensor(const Tensor&)>(std::move(fn))) {}
    Tensor operator()(const Tensor& x) const;
    // "relu", "gelu", or "" for a function
    const std::string& name() const noexcept { return name_; }

private:
    std::string name_;
    std::function<Tensor(const Tensor&)> fn_;
};

struct TransformerEncoderLayerOptions {
    TransformerEncoderLayerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
    EMBER_ARG(int64_t, d_model);
    EMBER_ARG(int64_t, nhead);
    EMBER_ARG(int64_t, dim_feedforward) = 2048;
    EMBER_ARG(double, dropout) = 0.1;
    EMBER_ARG(TransformerActivation, activation) = "relu";
    EMBER_ARG(double, layer_norm_eps) = 1e-5;
    // inputs as (N, L, E) rather than (L, N, E)
    EMBER_ARG(bool, batch_first) = false;
    // LayerNorm before (rather than after) each block
    EMBER_ARG(bool, norm_first) = false;
    // biases of the linear layers, the attention and the LayerNorms
    EMBER_ARG(bool, bias) = true;
};

}  // namespace nn
}  // namespace ember
