// ember::data::DataLoader: batches of a dataset, in the order of a sampler, stacked into
// tensors, optionally prepared ahead by worker threads (libtorch's torch::data::DataLoader,
// with the options of Python's DataLoader).
//
//   auto ds = ember::data::datasets::TensorDataset(images, labels);
//   auto loader = ember::data::make_data_loader(
//       ds, ember::data::DataLoaderOptions().batch_size(64).shuffle(true).seed(0).workers(2));
//   for (int epoch = 0; epoch < 10; ++epoch) {
//       for (ember::data::Example<>& batch : *loader) {
//           train_step(batch.data, batch.target);  // (64, ...) and (64)
//       }
//   }
//
// Batches: the dataset's get_batch(indices), then collated. The default collation stacks a
// std::vector of Example<> (or TensorExample) into one Example of stacked tensors, like
// Python's default_collate; any other batch type (a dataset.map(Stack<>()), a custom
// BatchDataset) is yielded as the dataset returns it.
//
// Workers: with workers(0) each batch is made in the iterating thread when it is needed.
// With workers(n), n std::threads, each with its own copy of the dataset, prepare up to
// max_jobs batches ahead (default 2 n); batches are yielded in the sampler's order whatever
// the order they finish in, so the batches are identical to workers(0)'s. A batch whose
// making throws is rethrown in the iterating thread as a DataLoaderError naming the batch
// and its sample indices (the original exception nested in it: std::rethrow_if_nested).
// Starting a new iteration (begin()) mid-epoch abandons the rest of the previous epoch;
// destroying the loader mid-epoch stops and joins the workers (a batch being made is
// finished first).
//
// Shuffling: shuffle(true) uses a RandomSampler with the options' seed (a new permutation
// per epoch, the same sequence of epochs on every run with the same seed); otherwise a
// SequentialSampler. Each begin() draws one 64-bit number from ember::default_generator(), as
// Python's DataLoader draws its base seed, so that a seeded C++ loop sees Python's streams:
// make_data_loader(ds, DataLoaderOptions(b).shuffle(true)) after ember::manual_seed(s) gives
// the batches of Python's DataLoader(ds, batch_size=b, shuffle=True) after manual_seed(s),
// and .seed(k) those of DataLoader(ds, batch_size=b, sampler=RandomSampler(ds,
// generator=Generator().manual_seed(k))). Unlike libtorch, make_data_loader(dataset, options) does not shuffle
// unless asked (Python's default); make_data_loader<SamplerType>(dataset, options) and
// make_data_loader(dataset, sampler, options) take the sampler explicitly.
#pragma once

#include "../export.h"
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../error.h"
#include "../optim/arg.h"
#include "datasets.h"
#include "example.h"
#include "samplers.h"
#include "transforms.h"

namespace ember {
namespace data {

class DataLoaderOptions {
public:
    DataLoaderOptions() = default;
    DataLoaderOptions(std::size_t batch_size) : batch_size_(batch_size) {}  // NOLINT: as libtorch

    EMBER_OPTIM_ARG_(std::size_t, batch_size) = 1;
    // Worker threads (0: batches are made in the iterating thread).
    EMBER_OPTIM_ARG_(std::size_t, workers) = 0;
    // Batches in preparation at most (with workers); default 2 * workers.
    EMBER_OPTIM_ARG_(std::optional<std::size_t>, max_jobs);
    // Drop the last batch of an epoch when it is smaller than batch_size.
    EMBER_OPTIM_ARG_(bool, drop_last) = false;
    // A RandomSampler instead of a SequentialSampler.
    EMBER_OPTIM_ARG_(bool, shuffle) = false;
    // The RandomSampler's seed (drawn from ember::default_generator() when not given).
    EMBER_OPTIM_ARG_(std::optional<uint64_t>, seed);
};

// A batch could not be made: the dataset (or the collation) threw while making batch
// batch_index() (0-based, in the epoch) of the samples indices(), in worker thread worker()
// (nullopt with workers(0)). The original exception is nested (std::rethrow_if_nested).
class EMBER_API DataLoaderError : public Error {
public:
    DataLoaderError(const std::string& message, std::optional<std::size_t> worker,
                    std::size_t batch_index, std::vector<std::size_t> indices);

    std::optional<std::size_t> worker() const noexcept { return worker_; }
    std::size_t batch_index() const noexcept { return batch_index_; }
    const std::vector<std::size_t>& indices() const noexcept { return indices_; }

private:
    std::optional<std::size_t> worker_;
    std::size_t batch_index_;
    std::vector<std::size_t> indices_;
};

namespace detail {

// The type-erased machinery of DataLoader: the worker threads and the ordered hand-over of
// their batches. fetch(worker, indices) makes a batch (worker is 0 with no workers);
// next_indices(), called only from the iterating thread, gives the indices of the epoch's
// next batch or nullopt at its end.
class EMBER_API BatchEngine {
public:
    using Fetch =
        std::function<std::shared_ptr<void>(std::size_t worker, const std::vector<std::size_t>&)>;
    using NextIndices = std::function<std::optional<std::vector<std::size_t>>()>;

    BatchEngine(std::size_t workers, std::size_t max_jobs, Fetch fetch);
    BatchEngine(const BatchEngine&) = delete;
    BatchEngine& operator=(const BatchEngine&) = delete;
    // Stops and joins the workers.
    ~BatchEngine();

    // Starts an epoch, abandoning what is left of the previous one.
    void start_epoch(NextIndices next_indices);
    // The epoch's next batch in order, or null at its end; a failed batch throws
    // DataLoaderError.
    std::shared_ptr<void> next();

private:
    struct State;
    std::unique_ptr<State> state_;
};

// The default collation: Stack for vectors of Example<> / TensorExample, else the batch as is.
template <typename Batch>
struct DefaultCollate {
    Batch operator()(Batch batch) const { return batch; }
};
template <>
struct DefaultCollate<std::vector<Example<>>> {
    Example<> operator()(std::vector<Example<>> batch) const {
        return transforms::Stack<Example<>>().apply_batch(std::move(batch));
    }
};
template <>
struct DefaultCollate<std::vector<TensorExample>> {
    TensorExample operator()(std::vector<TensorExample> batch) const {
        return transforms::Stack<TensorExample>().apply_batch(std::move(batch));
    }
};

// Checks the options (Python's messages) and returns the dataset's size.
EMBER_API std::size_t check_loader_setup(const DataLoaderOptions& options,
                                         std::optional<std::size_t> dataset_size,
                                         bool explicit_sampler);
EMBER_API std::unique_ptr<samplers::Sampler> default_sampler(const DataLoaderOptions& options,
                                                             std::size_t size);

}  // namespace detail

template <typename Dataset, typename Collate = detail::DefaultCollate<typename Dataset::BatchType>>
class DataLoader {
public:
    using DatasetType = Dataset;
    using BatchType =
        std::decay_t<std::invoke_result_t<const Collate&, typename Dataset::BatchType>>;

    class Iterator {
    public:
        using iterator_category = std::input_iterator_tag;
        using value_type = BatchType;
        using difference_type = std::ptrdiff_t;
        using pointer = BatchType*;
        using reference = BatchType&;

        Iterator() = default;  // the end
        BatchType& operator*() const {
            EMBER_CHECK(batch_, "dereferencing the end of a DataLoader");
            return *batch_;
        }
        BatchType* operator->() const { return &**this; }
        Iterator& operator++() {
            EMBER_CHECK(batch_, "incrementing the end of a DataLoader");
            batch_ = loader_->next_batch();
            return *this;
        }
        bool operator==(const Iterator& other) const noexcept { return batch_ == other.batch_; }
        bool operator!=(const Iterator& other) const noexcept { return !(*this == other); }

    private:
        friend class DataLoader;
        Iterator(DataLoader* loader, std::shared_ptr<BatchType> batch)
            : loader_(loader), batch_(std::move(batch)) {}

        DataLoader* loader_ = nullptr;
        std::shared_ptr<BatchType> batch_;
    };

    DataLoader(Dataset dataset, DataLoaderOptions options)
        : DataLoader(std::move(dataset), nullptr, std::move(options)) {}

    // With `sampler` (nullptr: the options' default), which shuffle(true) may not accompany.
    DataLoader(Dataset dataset, std::unique_ptr<samplers::Sampler> sampler,
               DataLoaderOptions options, Collate collate = Collate())
        : options_(std::move(options)),
          size_(detail::check_loader_setup(options_, dataset.size(), sampler != nullptr)),
          sampler_(sampler ? std::move(sampler) : detail::default_sampler(options_, size_)),
          collate_(std::move(collate)) {
        const std::size_t copies = options_.workers() > 0 ? options_.workers() : 1;
        datasets_.reserve(copies);
        for (std::size_t w = 1; w < copies; ++w) datasets_.push_back(dataset);
        datasets_.push_back(std::move(dataset));
        engine_ = std::make_unique<detail::BatchEngine>(
            options_.workers(), options_.max_jobs().value_or(2 * options_.workers()),
            [this](std::size_t worker, const std::vector<std::size_t>& indices) {
                return std::static_pointer_cast<void>(std::make_shared<BatchType>(
                    collate_(datasets_[worker].get_batch(indices))));
            });
    }
    DataLoader(const DataLoader&) = delete;  // the workers refer to this loader
    DataLoader& operator=(const DataLoader&) = delete;
    ~DataLoader() { engine_.reset(); }  // join the workers before the datasets go

    // Starts an epoch (resets the sampler) and makes its first batch.
    Iterator begin() {
        // Python's DataLoader draws its workers' base seed (an int64 random_()) from the default
        // generator as each iteration starts: drawn here too, so that the default generator's
        // stream (dropout, the RandomSampler's epoch seeds) stays Python's.
        default_generator().random64();
        sampler_->reset(size_);
        engine_->start_epoch([this]() -> std::optional<std::vector<std::size_t>> {
            std::optional<std::vector<std::size_t>> indices = sampler_->next(options_.batch_size());
            if (!indices || indices->empty()) return std::nullopt;
            if (options_.drop_last() && indices->size() < options_.batch_size()) return std::nullopt;
            return indices;
        });
        return Iterator(this, next_batch());
    }
    Iterator end() { return Iterator(); }

    const DataLoaderOptions& options() const noexcept { return options_; }
    samplers::Sampler& sampler() noexcept { return *sampler_; }
    // The dataset (the copy of the iterating thread, or of worker 0).
    const Dataset& dataset() const noexcept { return datasets_.back(); }

private:
    std::shared_ptr<BatchType> next_batch() {
        return std::static_pointer_cast<BatchType>(engine_->next());
    }

    DataLoaderOptions options_;
    std::size_t size_;
    std::unique_ptr<samplers::Sampler> sampler_;
    Collate collate_;
    std::vector<Dataset> datasets_;
    std::unique_ptr<detail::BatchEngine> engine_;
};

// make_data_loader(dataset, options): shuffled or not as options.shuffle() says.
// make_data_loader<SamplerType>(dataset, options): with SamplerType(dataset size) (a
// RandomSampler gets the options' seed too).
template <typename SamplerType = void, typename Dataset>
std::unique_ptr<DataLoader<Dataset>> make_data_loader(Dataset dataset,
                                                      DataLoaderOptions options = {}) {
    if constexpr (std::is_void_v<SamplerType>) {
        return std::make_unique<DataLoader<Dataset>>(std::move(dataset), std::move(options));
    } else {
        static_assert(std::is_base_of_v<samplers::Sampler, SamplerType>,
                      "make_data_loader<SamplerType>: SamplerType must derive from Sampler");
        const std::optional<std::size_t> size = dataset.size();
        EMBER_CHECK(size.has_value(), "DataLoader needs a dataset with a known size");
        std::unique_ptr<samplers::Sampler> sampler;
        if constexpr (std::is_same_v<SamplerType, samplers::RandomSampler>) {
            sampler = std::make_unique<samplers::RandomSampler>(*size, options.seed());
        } else {
            sampler = std::make_unique<SamplerType>(*size);
        }
        return std::make_unique<DataLoader<Dataset>>(std::move(dataset), std::move(sampler),
                                                     std::move(options));
    }
}

// make_data_loader(dataset, sampler, options): with a sampler of the caller's.
template <typename Dataset, typename SamplerType,
          std::enable_if_t<std::is_base_of_v<samplers::Sampler, std::decay_t<SamplerType>>, int> = 0>
std::unique_ptr<DataLoader<Dataset>> make_data_loader(Dataset dataset, SamplerType sampler,
                                                      DataLoaderOptions options = {}) {
    return std::make_unique<DataLoader<Dataset>>(
        std::move(dataset), std::make_unique<SamplerType>(std::move(sampler)), std::move(options));
}

}  // namespace data
}  // namespace ember
