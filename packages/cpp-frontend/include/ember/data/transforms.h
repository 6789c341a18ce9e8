// Batch transforms of ember::data (libtorch's torch::data::transforms): a transform turns
// the batch a dataset returns into another, applied by dataset.map(transform).
//
//   auto ds = ember::data::datasets::TensorDataset(x, y).map(ember::data::transforms::Stack<>());
//   ember::data::Example<> batch = ds.get_batch({0, 1, 2});  // data (3, ...), target (3, ...)
#pragma once

#include "../export.h"
#include <vector>

#include "../tensor.h"
#include "example.h"

namespace ember {
namespace data {
namespace transforms {

template <typename InputBatch, typename OutputBatch>
class BatchTransform {
public:
    using InputBatchType = InputBatch;
    using OutputBatchType = OutputBatch;

    virtual ~BatchTransform() = default;
    virtual OutputBatch apply_batch(InputBatch input_batch) = 0;
};

// A transform that makes one example of a list of them.
template <typename T = Example<>>
using Collation = BatchTransform<std::vector<T>, T>;

// Stacks the examples' data (and targets) along a new first dim: ember::stack, so every
// example's data must have the same shape. Examples without targets (undefined tensors)
// give an undefined target.
template <typename ExampleType = Example<>>
struct Stack;

template <>
struct EMBER_API Stack<Example<>> : public Collation<Example<>> {
    Example<> apply_batch(std::vector<Example<>> examples) override;
};

template <>
struct EMBER_API Stack<TensorExample> : public Collation<TensorExample> {
    TensorExample apply_batch(std::vector<TensorExample> examples) override;
};

}  // namespace transforms
}  // namespace data
}  // namespace ember
