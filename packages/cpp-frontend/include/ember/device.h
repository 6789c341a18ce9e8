// ember::Device: where a tensor lives. Ember's C++ frontend runs on the CPU only; the type
// exists so that code written for libtorch (t.to(ember::kCPU), t.device()) compiles.
// kCUDA names the device type so that libtorch's `if (cuda::is_available()) device =
// Device(kCUDA);` compiles; cuda::is_available() is false and a CUDA Device is refused when
// it is made.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "error.h"

namespace ember {

enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
inline constexpr DeviceType kCPU = DeviceType::CPU;
inline constexpr DeviceType kCUDA = DeviceType::CUDA;

namespace cuda {
// torch::cuda::is_available(), device_count(): Ember's C++ frontend has no CUDA backend.
inline bool is_available() noexcept { return false; }
inline int64_t device_count() noexcept { return 0; }
}  // namespace cuda

class Device {
public:
    Device(DeviceType type = DeviceType::CPU, int index = -1) : type_(type), index_(index) {  // NOLINT
        EMBER_CHECK(type == DeviceType::CPU,
                    "Cannot use a CUDA device: Ember's C++ frontend runs on the CPU only "
                    "(ember::cuda::is_available() is false)");
    }
    // "cpu" (other device strings are rejected: only the CPU is available).
    explicit Device(const std::string& spec) : type_(DeviceType::CPU), index_(-1) {
        EMBER_CHECK(spec == "cpu" || spec == "cpu:0", "Unsupported device '", spec,
                    "': Ember's C++ frontend only runs on the CPU");
    }
    DeviceType type() const noexcept { return type_; }
    int index() const noexcept { return index_; }
    bool is_cpu() const noexcept { return true; }
    std::string str() const { return "cpu"; }
    bool operator==(const Device& o) const noexcept { return type_ == o.type_; }
    bool operator!=(const Device& o) const noexcept { return !(*this == o); }

private:
    DeviceType type_;
    int index_;
};

inline std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

}  // namespace ember
