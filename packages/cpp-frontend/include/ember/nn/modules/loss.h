// Loss modules (libtorch's torch::nn::MSELoss, ...; Python's nn.MSELoss): each holds its
// options and calls its functional:: loss.
//
//   ember::nn::MSELoss mse;                          // reduction "mean"
//   ember::nn::MSELoss total(ember::kSum);           // MSELossOptions(ember::kSum)
//   ember::Tensor loss = mse(prediction, target);
#pragma once

#include "../../export.h"

#include "../functional/options.h"
#include "../module.h"
#include "../pimpl.h"

namespace ember {
namespace nn {

using MSELossOptions = functional::MSELossFuncOptions;

class EMBER_API MSELossImpl : public Module {
public:
    explicit MSELossImpl(const MSELossOptions& options = {});
    Tensor forward(const Tensor& input, const Tensor& target);

    MSELossOptions options;
};
EMBER_MODULE(MSELoss);

}  // namespace nn
}  // namespace ember
