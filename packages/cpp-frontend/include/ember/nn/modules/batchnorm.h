// BatchNorm1d and BatchNorm2d (libtorch's torch::nn::BatchNorm1d / 2d; Python's nn.BatchNorm*).
//
//   ember::nn::BatchNorm2d bn(16);
//   bn->train();  y = bn(x);   // batch statistics; running_mean / running_var updated
//   bn->eval();   y = bn(x);   // running statistics
//
// Parameters weight (ones) and bias (zeros) with affine; buffers running_mean (zeros),
// running_var (ones) and num_batches_tracked (int64, 0-dim) with track_running_stats: the
// names and order of Python's state_dict.
#pragma once

#include "../../export.h"
#include <cstdint>
#include <string>

#include "../module.h"
#include "../options/batchnorm.h"
#include "../pimpl.h"

namespace ember {
namespace nn {

class EMBER_API BatchNormImplBase : public Module {
public:
    explicit BatchNormImplBase(const BatchNormOptions& options);

    Tensor forward(const Tensor& input);
    // running_mean to zeros, running_var to ones, num_batches_tracked to 0
    void reset_running_stats();
    // reset_running_stats(), weight to ones, bias to zeros
    void reset_parameters();
    // "16, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True"
    std::string extra_repr() const override;

    BatchNormOptions options;
    Tensor weight;
    Tensor bias;
    Tensor running_mean;
    Tensor running_var;
    Tensor num_batches_tracked;

protected:
    // PyTorch's ValueError for an input of the wrong rank.
    virtual void check_input_dim(const Tensor& input) const = 0;
};

// input (N, C) or (N, C, L)
class EMBER_API BatchNorm1dImpl : public BatchNormImplBase {
public:
    explicit BatchNorm1dImpl(const BatchNorm1dOptions& options) : BatchNormImplBase(options) {}

protected:
    void check_input_dim(const Tensor& input) const override;
};
EMBER_MODULE(BatchNorm1d);

// input (N, C, H, W)
class EMBER_API BatchNorm2dImpl : public BatchNormImplBase {
public:
    explicit BatchNorm2dImpl(const BatchNorm2dOptions& options) : BatchNormImplBase(options) {}

protected:
    void check_input_dim(const Tensor& input) const override;
};
EMBER_MODULE(BatchNorm2d);

}  // namespace nn
}  // namespace ember
