// Samplers of ember::data (libtorch's torch::data::samplers): the order in which a
// DataLoader visits a dataset's indices. reset() starts a new epoch; next(batch_size) gives
// the next batch's indices (fewer at the end of the epoch, nullopt once it is over).
#pragma once

#include "../export.h"
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "../generator.h"

namespace ember {
namespace data {
namespace samplers {

class EMBER_API Sampler {
public:
    virtual ~Sampler();

    // Starts over (a new epoch), over new_size indices when given.
    virtual void reset(std::optional<std::size_t> new_size = std::nullopt) = 0;
    virtual std::optional<std::vector<std::size_t>> next(std::size_t batch_size) = 0;
};

// 0, 1, ..., size - 1.
class EMBER_API SequentialSampler : public Sampler {
public:
    explicit SequentialSampler(std::size_t size) : size_(size) {}

    void reset(std::optional<std::size_t> new_size = std::nullopt) override;
    std::optional<std::vector<std::size_t>> next(std::size_t batch_size) override;
    // How many indices this epoch has given so far.
    std::size_t index() const noexcept { return index_; }

private:
    std::size_t size_;
    std::size_t index_ = 0;
};

// A random permutation of 0..size-1 per epoch, drawn at the epoch's first next() as Python
// Ember's (PyTorch's) RandomSampler draws it, so the orders are theirs under the same seeds:
//   RandomSampler(size, seed)  Python's RandomSampler(ds, generator=Generator().manual_seed(seed)):
//                              each epoch a randperm from that generator's continuing stream
//                              (and, once the epoch is over, the one more randperm that
//                              Python's draws for its empty remainder)
//   RandomSampler(size)        Python's RandomSampler(ds): each epoch a seed drawn from
//                              ember::default_generator() (an int64 random_(): a 64-bit draw
//                              modulo 2^63), then a randperm from a new generator with that seed
//                              (so ember::manual_seed fixes the sequence of epochs)
class EMBER_API RandomSampler : public Sampler {
public:
    explicit RandomSampler(std::size_t size, std::optional<uint64_t> seed = std::nullopt);

    void reset(std::optional<std::size_t> new_size = std::nullopt) override;
    std::optional<std::vector<std::size_t>> next(std::size_t batch_size) override;
    std::size_t index() const noexcept { return index_; }
    // The given seed; without one, the seed of the current epoch (0 before the first).
    uint64_t seed() const noexcept { return seed_; }

private:
    std::size_t size_;
    uint64_t seed_;
    bool fixed_seed_;
    Generator generator_;
    std::vector<std::size_t> permutation_;
    std::size_t index_ = 0;
    bool drawn_ = false;
    bool tail_drawn_ = false;
};

}  // namespace samplers
}  // namespace data
}  // namespace ember
