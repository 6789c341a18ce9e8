// Dropout (libtorch's torch::nn::Dropout; Python's nn.Dropout).
//
//   ember::nn::Dropout drop(0.2);
//   drop->train();  y = drop(x);   // elements zeroed with probability 0.2, the rest * 1/0.8
//   drop->eval();   y = drop(x);   // x
#pragma once

#include "../../export.h"
#include <string>

#include "../module.h"
#include "../options/dropout.h"
#include "../pimpl.h"

namespace ember {
namespace nn {

class EMBER_API DropoutImpl : public Module {
public:
    explicit DropoutImpl(const DropoutOptions& options = {});
    Tensor forward(const Tensor& input);
    // "p=0.5, inplace=False"
    std::string extra_repr() const override;

    DropoutOptions options;
};
EMBER_MODULE(Dropout);

// Channel-wise dropout (torch::nn::Dropout2d; Python's nn.Dropout2d): in training, each
// channel of an (N, C, H, W) input (or (N, C, L)) is zeroed as a whole with probability p,
// the kept ones scaled by 1/(1-p); functional::dropout2d.
class EMBER_API Dropout2dImpl : public Module {
public:
    explicit Dropout2dImpl(const Dropout2dOptions& options = {});
    Tensor forward(const Tensor& input);
    // "p=0.5, inplace=False"
    std::string extra_repr() const override;

    Dropout2dOptions options;
};
EMBER_MODULE(Dropout2d);

}  // namespace nn
}  // namespace ember
