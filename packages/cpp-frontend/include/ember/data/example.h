// ember::data::Example: one sample of a dataset, a data part and a target part
// (libtorch's torch::data::Example). Example<> holds two tensors; Example<Tensor, NoTarget>
// (TensorExample) holds only data.
#pragma once

#include <utility>

#include "../tensor.h"

namespace ember {
namespace data {

// The target type of examples that have none.
struct NoTarget {};

template <typename Data = Tensor, typename Target = Tensor>
struct Example {
    using DataType = Data;
    using TargetType = Target;

    Example() = default;
    Example(Data data, Target target) : data(std::move(data)), target(std::move(target)) {}

    Data data;
    Target target;
};

template <typename Data>
struct Example<Data, NoTarget> {
    using DataType = Data;
    using TargetType = NoTarget;

    Example() = default;
    Example(Data data) : data(std::move(data)) {}  // NOLINT: implicit, as libtorch
    operator Data&() { return data; }              // NOLINT
    operator const Data&() const { return data; }  // NOLINT

    Data data;
};

using TensorExample = Example<Tensor, NoTarget>;

}  // namespace data
}  // namespace ember
