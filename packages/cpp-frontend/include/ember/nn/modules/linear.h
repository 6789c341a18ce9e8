// Linear, Flatten and Identity (libtorch's torch::nn::Linear, ...; Python's nn.Linear, ...).
//
//   ember::nn::Linear fc(4, 2);                       // weight (2, 4), bias (2)
//   ember::nn::Linear fc2(ember::nn::LinearOptions(4, 2).bias(false));
//   ember::Tensor y = fc(x);                          // x (*, 4) -> (*, 2)
#pragma once

#include "../../export.h"
#include <cstdint>
#include <string>

#include "../module.h"
#include "../options/linear.h"
#include "../pimpl.h"

namespace ember {
namespace nn {

// y = x W^T + b, weight (out_features, in_features) from kaiming_uniform_(a = sqrt(5)) and
// bias from U(-1/sqrt(in_features), 1/sqrt(in_features)), as PyTorch.
class EMBER_API LinearImpl : public Module {
public:
    LinearImpl(int64_t in_features, int64_t out_features)
        : LinearImpl(LinearOptions(in_features, out_features)) {}
    explicit LinearImpl(const LinearOptions& options);

    // Draws weight and bias afresh (PyTorch's scheme).
    void reset_parameters();
    Tensor forward(const Tensor& input);
    // "in_features=4, out_features=2, bias=True"
    std::string extra_repr() const override;

    LinearOptions options;
    Tensor weight;
    // undefined with bias(false)
    Tensor bias;
};
EMBER_MODULE(Linear);

// Flattens dims start_dim..end_dim into one (the batch dim 0 is kept by default).
class EMBER_API FlattenImpl : public Module {
public:
    explicit FlattenImpl(const FlattenOptions& options = {});
    Tensor forward(const Tensor& input);
    // "start_dim=1, end_dim=-1"
    std::string extra_repr() const override;

    FlattenOptions options;
};
EMBER_MODULE(Flatten);

// Returns its input.
class EMBER_API IdentityImpl : public Module {
public:
    IdentityImpl() = default;
    Tensor forward(const Tensor& input);
};
EMBER_MODULE(Identity);

}  // namespace nn
}  // namespace ember
