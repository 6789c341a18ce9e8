// The nn ops in libtorch's top-level (ATen) spelling: torch::dropout(x, p, train),
// torch::nll_loss(x, y, weight, torch::Reduction::Sum), torch::smooth_l1_loss(x, y), ...
// Their home is ember::nn::functional; these take ATen's positional arguments, the
// reduction as an int64_t from ember::Reduction (None, Mean, Sum), as libtorch's do.
//
//   auto loss = ember::nll_loss(log_probs, target, /*weight=*/{}, ember::Reduction::Sum);
#pragma once

#include <cstdint>
#include <optional>

#include "error.h"
#include "nn/functional.h"
#include "tensor.h"

namespace ember {

// at::Reduction: the reduction of a loss as an int64_t (ATen's loss ops take it so).
namespace Reduction {
enum Reduction : int64_t { None = 0, Mean = 1, Sum = 2, END = 3 };
}  // namespace Reduction

namespace detail {
inline nn::Reduction reduction_of(int64_t reduction) {
    switch (reduction) {
        case Reduction::None: return nn::Reduction::None;
        case Reduction::Mean: return nn::Reduction::Mean;
        case Reduction::Sum: return nn::Reduction::Sum;
        default: EMBER_ERROR(reduction, " is not a valid value for reduction");
    }
}
}  // namespace detail

inline Tensor dropout(const Tensor& input, double p, bool train) {
    return nn::functional::dropout(input, p, train);
}

inline Tensor feature_dropout(const Tensor& input, double p, bool train) {
    return nn::functional::dropout2d(input, p, train);
}

inline Tensor mse_loss(const Tensor& self, const Tensor& target, int64_t reduction = Reduction::Mean) {
    return nn::functional::mse_loss(self, target, detail::reduction_of(reduction));
}

inline Tensor smooth_l1_loss(const Tensor& self, const Tensor& target, int64_t reduction = Reduction::Mean,
                             double beta = 1.0) {
    return nn::functional::smooth_l1_loss(self, target, detail::reduction_of(reduction), beta);
}

inline Tensor nll_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight = {},
                       int64_t reduction = Reduction::Mean, int64_t ignore_index = -100) {
    return nn::functional::nll_loss(self, target,
                                    nn::functional::NLLLossFuncOptions()
                                        .weight(weight.value_or(Tensor()))
                                        .reduction(detail::reduction_of(reduction))
                                        .ignore_index(ignore_index));
}

inline Tensor binary_cross_entropy(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight = {},
                                   int64_t reduction = Reduction::Mean) {
    return nn::functional::binary_cross_entropy(self, target,
                                                nn::functional::BinaryCrossEntropyFuncOptions()
                                                    .weight(weight.value_or(Tensor()))
                                                    .reduction(detail::reduction_of(reduction)));
}

}  // namespace ember
