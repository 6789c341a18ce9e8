#include "ember/data/samplers.h"

#include <algorithm>

#include "ember/error.h"
#include "ember/factories.h"

namespace ember {
namespace data {
namespace samplers {

namespace {

// The next min(batch_size, left) of `order` from `index` (nullopt when none is left).
template <typename IndexOf>
std::optional<std::vector<std::size_t>> take(std::size_t size, std::size_t& index,
                                             std::size_t batch_size, IndexOf index_of) {
    EMBER_CHECK_VALUE(batch_size > 0, "a sampler's batch size must be positive");
    if (index >= size) return std::nullopt;
    const std::size_t end = std::min(size, index + batch_size);
    std::vector<std::size_t> batch;
    batch.reserve(end - index);
    for (; index < end; ++index) batch.push_back(index_of(index));
    return batch;
}

}  // namespace

Sampler::~Sampler() = default;

void SequentialSampler::reset(std::optional<std::size_t> new_size) {
    if (new_size) size_ = *new_size;
    index_ = 0;
}

std::optional<std::vector<std::size_t>> SequentialSampler::next(std::size_t batch_size) {
    return take(size_, index_, batch_size, [](std::size_t i) { return i; });
}

RandomSampler::RandomSampler(std::size_t size, std::optional<uint64_t> seed)
    : size_(size), seed_(seed.value_or(0)), fixed_seed_(seed.has_value()), generator_(seed_) {}

void RandomSampler::reset(std::optional<std::size_t> new_size) {
    if (new_size) size_ = *new_size;
    index_ = 0;
    drawn_ = false;
    tail_drawn_ = false;
}

std::optional<std::vector<std::size_t>> RandomSampler::next(std::size_t batch_size) {
    if (!drawn_) {  // a new epoch: a new permutation
        if (!fixed_seed_) {  // Python's torch.empty((), dtype=torch.int64).random_().item()
            seed_ = default_generator().random64() % (uint64_t(1) << 63);
            generator_ = Generator(seed_);
        }
        const Tensor perm = randperm(static_cast<int64_t>(size_), generator_).contiguous();
        const int64_t* p = perm.data_ptr<int64_t>();
        permutation_.assign(p, p + size_);
        drawn_ = true;
    }
    auto batch = take(size_, index_, batch_size, [this](std::size_t i) { return permutation_[i]; });
    if (fixed_seed_ && index_ >= size_ && !tail_drawn_) {
        // Python's RandomSampler then draws randperm(n)[:num_samples % n], an empty slice of
        // one more permutation: drawn too, so that the next epoch's is Python's
        randperm(static_cast<int64_t>(size_), generator_);
        tail_drawn_ = true;
    }
    return batch;
}

}  // namespace samplers
}  // namespace data
}  // namespace ember
