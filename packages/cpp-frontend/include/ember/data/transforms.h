// Batch transforms of ember::data (libtorch's torch::data::transforms): a transform turns
// the batch a dataset returns into another, applied by dataset.map(transform). Transform,
// TensorTransform, TensorLambda and Normalize work on each example of a batch.
//
//   auto ds = ember::data::datasets::TensorDataset(x, y).map(ember::data::transforms::Stack<>());
//   ember::data::Example<> batch = ds.get_batch({0, 1, 2});  // data (3, ...), target (3, ...)
#pragma once

#include "../export.h"
#include <functional>
#include <utility>
#include <vector>

#include "../array_ref.h"
#include "../factories.h"
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

// A transform of single examples: apply(example), applied to each example of a batch.
template <typename Input, typename Output = Input>
class Transform : public BatchTransform<std::vector<Input>, std::vector<Output>> {
public:
    using InputType = Input;
    using OutputType = Output;

    virtual OutputType apply(InputType input) = 0;

    std::vector<Output> apply_batch(std::vector<Input> input_batch) override {
        std::vector<Output> output_batch;
        output_batch.reserve(input_batch.size());
        for (auto& input : input_batch) output_batch.push_back(apply(std::move(input)));
        return output_batch;
    }
};

// A transform of each example's data tensor (the target is kept): operator()(data).
template <typename Target = Tensor>
class TensorTransform : public Transform<Example<Tensor, Target>, Example<Tensor, Target>> {
public:
    using E = Example<Tensor, Target>;

    virtual Tensor operator()(Tensor input) = 0;

    E apply(E input) override {
        input.data = (*this)(std::move(input.data));
        return input;
    }
};

// A TensorTransform made of a function of the data tensor.
template <typename Target = Tensor>
class TensorLambda : public TensorTransform<Target> {
public:
    using FunctionType = std::function<Tensor(Tensor)>;

    explicit TensorLambda(FunctionType function) : function_(std::move(function)) {}
    Tensor operator()(Tensor input) override { return function_(std::move(input)); }

private:
    FunctionType function_;
};

// (data - mean) / stddev per channel (dim 0 of a (C, H, W) image): mean and stddev are one
// value for every channel or one per channel, as libtorch's Normalize<>(0.1307, 0.3081).
template <typename Target = Tensor>
struct Normalize : public TensorTransform<Target> {
    Normalize(ArrayRef<double> mean, ArrayRef<double> stddev)
        : mean(channel_values(mean)), stddev(channel_values(stddev)) {}

    Tensor operator()(Tensor input) override { return input.sub(mean).div(stddev); }

    Tensor mean, stddev;

private:
    static Tensor channel_values(ArrayRef<double> values) {
        return ember::tensor(std::vector<double>(values.begin(), values.end()), kFloat32).view({-1, 1, 1});
    }
};

}  // namespace transforms
}  // namespace data
}  // namespace ember
