// Datasets of ember::data (libtorch's torch::data::datasets): the BatchDataset and Dataset
// bases, MapDataset (dataset.map(transform)), TensorDataset, MNIST, Subset and random_split.
//
//   struct Squares : ember::data::datasets::Dataset<Squares> {
//       ember::data::Example<> get(size_t i) override {
//           auto x = ember::full({1}, double(i));
//           return {x, x * x};
//       }
//       std::optional<size_t> size() const override { return 100; }
//   };
//
// A DataLoader with workers gives each worker thread its own copy of the dataset, so a
// dataset must be copyable (TensorDataset copies share the tensors' storage).
#pragma once

#include "../export.h"
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../array_ref.h"
#include "../error.h"
#include "../tensor.h"
#include "example.h"

namespace ember {
namespace data {
namespace datasets {

template <typename SourceDataset, typename AppliedTransform>
class MapDataset;

// A dataset that returns whole batches: get_batch(indices) and size() (nullopt when the
// size is unknown).
template <typename Self, typename Batch = std::vector<Example<>>,
          typename BatchRequest = ArrayRef<std::size_t>>
class BatchDataset {
public:
    using SelfType = Self;
    using BatchType = Batch;
    using BatchRequestType = BatchRequest;

    virtual ~BatchDataset() = default;
    virtual Batch get_batch(BatchRequest request) = 0;
    virtual std::optional<std::size_t> size() const = 0;

    // This dataset with `transform` applied to each batch (a copy of the dataset).
    template <typename Transform>
    MapDataset<Self, Transform> map(Transform transform) & {
        return MapDataset<Self, Transform>(static_cast<Self&>(*this), std::move(transform));
    }
    template <typename Transform>
    MapDataset<Self, Transform> map(Transform transform) && {
        return MapDataset<Self, Transform>(std::move(static_cast<Self&>(*this)),
                                           std::move(transform));
    }
};

// A dataset of single examples: get(index); a batch is the vector of its examples.
template <typename Self, typename SingleExample = Example<>>
class Dataset : public BatchDataset<Self, std::vector<SingleExample>> {
public:
    using ExampleType = SingleExample;

    virtual ExampleType get(std::size_t index) = 0;

    std::vector<ExampleType> get_batch(ArrayRef<std::size_t> indices) override {
        std::vector<ExampleType> batch;
        batch.reserve(indices.size());
        for (std::size_t i : indices) batch.push_back(get(i));
        return batch;
    }
};

// `dataset` with `transform.apply_batch` applied to each of its batches.
template <typename SourceDataset, typename AppliedTransform>
class MapDataset
    : public BatchDataset<MapDataset<SourceDataset, AppliedTransform>,
                          typename AppliedTransform::OutputBatchType,
                          typename SourceDataset::BatchRequestType> {
public:
    using DatasetType = SourceDataset;
    using TransformType = AppliedTransform;
    using BatchRequestType = typename SourceDataset::BatchRequestType;
    using OutputBatchType = typename AppliedTransform::OutputBatchType;

    MapDataset(SourceDataset dataset, AppliedTransform transform)
        : dataset_(std::move(dataset)), transform_(std::move(transform)) {}

    OutputBatchType get_batch(BatchRequestType indices) override {
        return transform_.apply_batch(dataset_.get_batch(std::move(indices)));
    }
    std::optional<std::size_t> size() const override { return dataset_.size(); }

    const SourceDataset& dataset() const noexcept { return dataset_; }
    const AppliedTransform& transform() const noexcept { return transform_; }

private:
    SourceDataset dataset_;
    AppliedTransform transform_;
};

// Sample i is (data[i], target[i]): the first dim of the tensors indexes the samples.
// Made of one tensor (the target is then undefined) or two; the tensors must have the same
// size in dim 0 (Python's "Size mismatch between tensors").
class EMBER_API TensorDataset : public Dataset<TensorDataset, Example<>> {
public:
    explicit TensorDataset(std::vector<Tensor> tensors);
    TensorDataset(Tensor data, Tensor target);
    explicit TensorDataset(const Tensor& data) : TensorDataset(std::vector<Tensor>{data}) {}

    Example<> get(std::size_t index) override;
    std::optional<std::size_t> size() const override;
    const std::vector<Tensor>& tensors() const noexcept { return tensors_; }

private:
    std::vector<Tensor> tensors_;
};

// The MNIST digits (libtorch's torch::data::datasets::MNIST) from the idx files in `root`:
// train-images-idx3-ubyte and train-labels-idx1-ubyte (Mode::kTrain), t10k-images-idx3-ubyte
// and t10k-labels-idx1-ubyte (Mode::kTest), uncompressed. Example i is (image (1, rows,
// cols) float32 in [0, 1], label int64 scalar). The image count and size come from the files'
// headers (libtorch insists on 60000 / 10000 images of 28 x 28); a missing, truncated or
// malformed file, or label and image counts that differ, raise an Error naming the file.
class EMBER_API MNIST : public Dataset<MNIST> {
public:
    enum class Mode { kTrain, kTest };

    explicit MNIST(const std::string& root, Mode mode = Mode::kTrain);

    Example<> get(std::size_t index) override;
    std::optional<std::size_t> size() const override;
    bool is_train() const noexcept { return is_train_; }
    // (N, 1, rows, cols) float32 in [0, 1]
    const Tensor& images() const noexcept { return images_; }
    // (N,) int64
    const Tensor& targets() const noexcept { return targets_; }

private:
    Tensor images_, targets_;
    bool is_train_;
};

// The samples of `dataset` at `indices` (sample i of the subset is indices[i] of dataset).
template <typename SourceDataset>
class Subset : public Dataset<Subset<SourceDataset>, typename SourceDataset::ExampleType> {
public:
    using ExampleType = typename SourceDataset::ExampleType;

    Subset(SourceDataset dataset, std::vector<std::size_t> indices)
        : dataset_(std::move(dataset)), indices_(std::move(indices)) {}

    ExampleType get(std::size_t index) override { return dataset_.get(source_index(index)); }
    std::vector<ExampleType> get_batch(ArrayRef<std::size_t> indices) override {
        std::vector<std::size_t> source;
        source.reserve(indices.size());
        for (std::size_t i : indices) source.push_back(source_index(i));
        return dataset_.get_batch(source);
    }
    std::optional<std::size_t> size() const override { return indices_.size(); }

    const SourceDataset& dataset() const noexcept { return dataset_; }
    const std::vector<std::size_t>& indices() const noexcept { return indices_; }

private:
    std::size_t source_index(std::size_t index) const {
        EMBER_CHECK_INDEX(index < indices_.size(), "index ", index,
                          " is out of range for a Subset of size ", indices_.size());
        return indices_[index];
    }

    SourceDataset dataset_;
    std::vector<std::size_t> indices_;
};

// Python's random_split over n samples: the index lists of non-overlapping random subsets,
// given their lengths ({800, 200}) or fractions of n summing to 1 ({0.8, 0.2}: floor(n *
// fraction) each, the remainder dealt out one by one, round robin). The permutation comes
// from a Generator seeded with `seed` (the default generator without one), so a seed gives
// the same split on every run. Errors as Python's: "Sum of input lengths does not equal the
// length of the input dataset!", "Fraction at index 1 is not between 0 and 1".
EMBER_API std::vector<std::vector<std::size_t>> random_split(
    std::size_t n, const std::vector<double>& lengths,
    std::optional<uint64_t> seed = std::nullopt);

// random_split(dataset.size(), ...) as Subsets of (copies of) `dataset`.
template <typename SourceDataset,
          std::enable_if_t<!std::is_arithmetic_v<SourceDataset>, int> = 0>
std::vector<Subset<SourceDataset>> random_split(const SourceDataset& dataset,
                                                const std::vector<double>& lengths,
                                                std::optional<uint64_t> seed = std::nullopt) {
    const std::optional<std::size_t> n = dataset.size();
    EMBER_CHECK(n.has_value(), "random_split needs a dataset with a known size");
    std::vector<Subset<SourceDataset>> subsets;
    for (std::vector<std::size_t>& indices : random_split(*n, lengths, seed)) {
        subsets.emplace_back(dataset, std::move(indices));
    }
    return subsets;
}

}  // namespace datasets
}  // namespace data
}  // namespace ember
