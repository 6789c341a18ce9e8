// Random number generators: PyTorch's CPU generator, bit for bit.
//
// A Generator is libtorch's CPUGeneratorImpl: a 32-bit Mersenne Twister seeded the classic
// way (init_genrand with the seed's low 32 bits; std::mt19937(seed & 0xffffffff) gives the
// same words), behind a mutex (so one generator may be shared by threads), plus the cached
// second Box-Muller samples of normal_distribution. The random ops (rand, randn, randint,
// randperm, bernoulli, multinomial, dropout, the in-place fills, nn::init and the layers'
// initialisation) turn its words into samples as PyTorch's CPU kernels do, so
// ember::manual_seed(s) followed by the same calls gives the numbers of Python Ember's and
// PyTorch's manual_seed(s) (src/core/random.cpp says how). get_state() is PyTorch's
// 5056-byte CPUGeneratorImplState: a state saved by torch.get_rng_state() (or Python
// Ember's) loads here, and the other way round.
#pragma once

#include "export.h"
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <random>

namespace ember {

class Tensor;

// PyTorch's default seed for the CPU generator.
inline constexpr uint64_t default_rng_seed_val = 67280421310721ULL;

// at::mt19937: the reference MT19937 with PyTorch's bookkeeping (left_/next_), so that its
// state is PyTorch's field for field. Not locked: a GeneratorImpl holds it under its mutex.
class MT19937Engine {
public:
    static constexpr int kStateN = 624;
    static constexpr int kStateM = 397;

    explicit MT19937Engine(uint64_t seed = 5489) { seed_engine(seed); }

    // init_genrand(seed & 0xffffffff); the full 64-bit seed is kept (current_seed()).
    void seed_engine(uint64_t seed) noexcept {
        seed_ = seed;
        seeded_ = true;
        state_[0] = static_cast<uint32_t>(seed & 0xffffffffu);
        for (int j = 1; j < kStateN; ++j) {
            state_[j] = 1812433253u * (state_[j - 1] ^ (state_[j - 1] >> 30)) + static_cast<uint32_t>(j);
        }
        left_ = 1;
        next_ = 0;
    }

    // One tempered 32-bit word.
    uint32_t operator()() noexcept {
        if (--left_ == 0) next_state();
        uint32_t y = state_[next_++];
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c5680u;
        y ^= (y << 15) & 0xefc60000u;
        return y ^ (y >> 18);
    }

    uint64_t seed() const noexcept { return seed_; }
    int left() const noexcept { return left_; }
    bool seeded() const noexcept { return seeded_; }
    uint32_t next() const noexcept { return next_; }
    const std::array<uint32_t, kStateN>& state() const noexcept { return state_; }

    // at::mt19937::set_data + is_valid(): false (and nothing changed) for an invalid state.
    bool set_data(uint64_t seed, int left, bool seeded, uint32_t next,
                  const std::array<uint32_t, kStateN>& state) noexcept {
        if (!(seeded && left > 0 && left <= kStateN && next <= static_cast<uint32_t>(kStateN))) return false;
        seed_ = seed;
        left_ = left;
        seeded_ = seeded;
        next_ = next;
        state_ = state;
        return true;
    }

private:
    static uint32_t twist(uint32_t u, uint32_t v) noexcept {
        const uint32_t y = (u & 0x80000000u) | (v & 0x7fffffffu);
        return (y >> 1) ^ ((v & 1u) ? 0x9908b0dfu : 0u);
    }
    void next_state() noexcept {
        left_ = kStateN;
        next_ = 0;
        int k = 0;
        for (; k < kStateN - kStateM; ++k) state_[k] = state_[k + kStateM] ^ twist(state_[k], state_[k + 1]);
        for (; k < kStateN - 1; ++k) state_[k] = state_[k + kStateM - kStateN] ^ twist(state_[k], state_[k + 1]);
        state_[kStateN - 1] = state_[kStateM - 1] ^ twist(state_[kStateN - 1], state_[0]);
    }

    uint64_t seed_ = 0;
    int left_ = 1;
    bool seeded_ = false;
    uint32_t next_ = 0;
    std::array<uint32_t, kStateN> state_{};
};

// What the kernels draw from, under the generator's lock: the engine and the cached second
// samples of normal_distribution<double> (and PyTorch's float twin, kept in the state).
struct CPUGeneratorState {
    MT19937Engine engine;
    std::optional<double> next_double_normal_sample;
    std::optional<float> next_float_normal_sample;

    // CPUGeneratorImpl::random(): one word.
    uint32_t random() noexcept { return engine(); }
    // CPUGeneratorImpl::random64(): two words, the first the high half.
    uint64_t random64() noexcept {
        const uint64_t hi = engine();
        return (hi << 32) | engine();
    }
};

class GeneratorImpl {
public:
    explicit GeneratorImpl(uint64_t seed) { state_.engine.seed_engine(seed); }

    void set_current_seed(uint64_t seed) {
        std::lock_guard<std::mutex> lock(mutex_);
        state_.next_double_normal_sample.reset();
        state_.next_float_normal_sample.reset();
        state_.engine.seed_engine(seed);
    }
    uint64_t current_seed() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return state_.engine.seed();
    }
    // Locks the generator and calls f(state) (a whole tensor is filled under one lock).
    template <typename F>
    decltype(auto) with_engine(F&& f) {
        std::lock_guard<std::mutex> lock(mutex_);
        return f(state_);
    }
    uint32_t random() {
        std::lock_guard<std::mutex> lock(mutex_);
        return state_.random();
    }
    uint64_t random64() {
        std::lock_guard<std::mutex> lock(mutex_);
        return state_.random64();
    }

private:
    mutable std::mutex mutex_;
    CPUGeneratorState state_;
};

// PyTorch's sizeof(CPUGeneratorImplState): the bytes of get_state()/set_state().
inline constexpr int64_t kCPUGeneratorStateSize = 5056;

class EMBER_API Generator {
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
    // One 32-bit word / one 64-bit draw (two words, the first the high half).
    uint32_t random() { return impl_->random(); }
    uint64_t random64() { return impl_->random64(); }
    template <typename F>
    decltype(auto) with_engine(F&& f) {
        return impl_->with_engine(std::forward<F>(f));
    }
    // PyTorch's CPUGeneratorImplState as a uint8 tensor of 5056 bytes (torch.get_rng_state()'s
    // layout), and its restoration (PyTorch's checks and messages).
    Tensor get_state() const;
    void set_state(const Tensor& new_state);
    // A new generator in this one's state (at::Generator::clone).
    Generator clone() const;
    bool operator==(const Generator& other) const noexcept { return impl_ == other.impl_; }

private:
    std::shared_ptr<GeneratorImpl> impl_;
};

// The process-wide default generator. As libtorch's default CPU generator, it starts from a
// non-deterministic 64-bit seed (a fresh Generator() from default_rng_seed_val); the
// environment variable EMBER_SEED, where set, fixes that seed (as in Python Ember).
EMBER_API Generator& default_generator();
namespace detail {
// The default generator's seed for the value of EMBER_SEED (nullptr: unset): a decimal or
// 0x-hexadecimal integer in [-2^63, 2^64), taken modulo 2^64 as manual_seed takes it; unset or
// blank, a non-deterministic one (std::random_device). Throws std::runtime_error otherwise.
EMBER_API uint64_t process_seed(const char* env);
}  // namespace detail
// Seeds the default generator (torch::manual_seed).
EMBER_API void manual_seed(uint64_t seed);
// The default generator's state, and its restoration (torch.get_rng_state / set_rng_state).
EMBER_API Tensor get_rng_state();
EMBER_API void set_rng_state(const Tensor& new_state);
// A new generator with its own stream.
inline Generator make_generator(uint64_t seed = default_rng_seed_val) { return Generator(seed); }

// PyTorch's uniform_real_distribution on one draw: a float from the low 24 bits of a word,
// a double from the low 53 bits of a 64-bit draw.
inline float uniform_float(uint32_t r) noexcept {
    return static_cast<float>(r & 0xffffffu) * (1.0f / 16777216.0f);
}
inline double uniform_double(uint64_t r) noexcept {
    return static_cast<double>(r & 0x1fffffffffffffULL) * (1.0 / 9007199254740992.0);
}

}  // namespace ember
