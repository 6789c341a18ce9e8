// Random number generators. A Generator wraps an mt19937_64 engine behind a mutex (so one
// generator may be shared by threads); the process-wide default generator feeds rand,
// randn, randint, randperm, dropout and the random in-place fills unless a Generator is
// passed.
//
// NOTE: the streams are Ember C++'s own: a given seed gives the same numbers on every
// platform and run (the engine and the conversions are specified here, std::*_distribution
// is not used), but NOT the numbers PyTorch or Python Ember produce for that seed.
#pragma once

#include "export.h"
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>

namespace ember {

// PyTorch's default seed for the CPU generator.
inline constexpr uint64_t default_rng_seed_val = 67280421310721ULL;

class GeneratorImpl {
public:
    explicit GeneratorImpl(uint64_t seed) : seed_(seed), engine_(seed) {}

    void set_current_seed(uint64_t seed) {
        std::lock_guard<std::mutex> lock(mutex_);
        seed_ = seed;
        engine_.seed(seed);
    }
    uint64_t current_seed() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return seed_;
    }
    // Locks the generator and calls f(engine) (for filling a whole tensor under one lock).
    template <typename F>
    decltype(auto) with_engine(F&& f) {
        std::lock_guard<std::mutex> lock(mutex_);
        return f(engine_);
    }
    uint64_t random64() {
        std::lock_guard<std::mutex> lock(mutex_);
        return engine_();
    }

private:
    mutable std::mutex mutex_;
    uint64_t seed_;
    std::mt19937_64 engine_;
};

class Generator {
public:
    explicit Generator(uint64_t seed = default_rng_seed_val)
        : impl_(std::make_shared<GeneratorImpl>(seed)) {}

    void set_current_seed(uint64_t seed) { impl_->set_current_seed(seed); }
    uint64_t current_seed() const { return impl_->current_seed(); }
    // Reseeds from std::random_device and returns the new seed.
    uint64_t seed() {
        std::random_device rd;
        const uint64_t s = (static_cast<uint64_t>(rd()) << 32) ^ rd();
        impl_->set_current_seed(s);
        return s;
    }
    uint64_t random64() { return impl_->random64(); }
    template <typename F>
    decltype(auto) with_engine(F&& f) {
        return impl_->with_engine(std::forward<F>(f));
    }
    bool operator==(const Generator& other) const noexcept { return impl_ == other.impl_; }

private:
    std::shared_ptr<GeneratorImpl> impl_;
};

// The process-wide default generator (seeded with default_rng_seed_val).
EMBER_API Generator& default_generator();
// Seeds the default generator (torch::manual_seed).
EMBER_API void manual_seed(uint64_t seed);
// A new generator with its own stream.
inline Generator make_generator(uint64_t seed = default_rng_seed_val) { return Generator(seed); }

// The conversions every random op uses (so the streams are specified):
// uniform float in [0, 1) from the top 24 bits, double from the top 53 bits.
inline float uniform_float(uint64_t r) noexcept {
    return static_cast<float>(r >> 40) * (1.0f / 16777216.0f);
}
inline double uniform_double(uint64_t r) noexcept {
    return static_cast<double>(r >> 11) * (1.0 / 9007199254740992.0);
}

}  // namespace ember
