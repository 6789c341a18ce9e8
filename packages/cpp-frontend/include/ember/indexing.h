// Python-style indexing in C++, with libtorch's names (torch::indexing):
//
//   using namespace ember::indexing;
//   t.index({Slice(0, 2), None, Ellipsis, 1, idx_tensor, bool_mask})   // t[0:2, None, ..., 1, idx, mask]
//   t.index_put_({Slice(), 0}, 5.0)                                     // t[:, 0] = 5
//
// Integers, slices, None and Ellipsis ("...") give views; integer/bool tensors give
// advanced (copying) indexing with NumPy/PyTorch placement rules.
#pragma once

#include "export.h"
#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>
#include <string_view>
#include <type_traits>

#include "error.h"
#include "tensor.h"

namespace ember {
namespace indexing {

// None inserts a new dimension of size 1 (as Python's None / np.newaxis).
constexpr std::nullopt_t None = std::nullopt;

struct EllipsisIndexType {
    constexpr EllipsisIndexType() = default;
};
inline constexpr EllipsisIndexType Ellipsis = EllipsisIndexType();

// Slice(start, stop, step) as Python's start:stop:step; omitted parts are None.
class Slice {
public:
    Slice(std::optional<int64_t> start = std::nullopt, std::optional<int64_t> stop = std::nullopt,
          std::optional<int64_t> step = std::nullopt)
        : step_(step.value_or(1)) {
        EMBER_CHECK(step_ != 0, "slice step cannot be zero");
        start_ = start.value_or(step_ < 0 ? std::numeric_limits<int64_t>::max() : 0);
        stop_ = stop.value_or(step_ < 0 ? std::numeric_limits<int64_t>::min()
                                        : std::numeric_limits<int64_t>::max());
    }
    int64_t start() const noexcept { return start_; }
    int64_t stop() const noexcept { return stop_; }
    int64_t step() const noexcept { return step_; }

private:
    int64_t start_;
    int64_t stop_;
    int64_t step_;
};

inline std::ostream& operator<<(std::ostream& os, const Slice& s) {
    return os << s.start() << ":" << s.stop() << ":" << s.step();
}

enum class TensorIndexType { None, Ellipsis, Integer, Boolean, Slice, Tensor };

struct TensorIndex {
    TensorIndex(std::nullopt_t) : type_(TensorIndexType::None) {}  // NOLINT
    TensorIndex(EllipsisIndexType) : type_(TensorIndexType::Ellipsis) {}  // NOLINT
    // "..." is Ellipsis (as in libtorch)
    TensorIndex(const char* str) : type_(TensorIndexType::Ellipsis) {  // NOLINT
        EMBER_CHECK(std::string_view(str) == "...",
                    "Expected \"...\" to represent an ellipsis index, but got \"", str, "\"");
    }
    template <typename T,
              std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
    TensorIndex(T integer) : type_(TensorIndexType::Integer), integer_(integer) {}  // NOLINT
    template <typename T, std::enable_if_t<std::is_same_v<T, bool>, int> = 0>
    TensorIndex(T boolean) : type_(TensorIndexType::Boolean), boolean_(boolean) {}  // NOLINT
    TensorIndex(Slice slice) : type_(TensorIndexType::Slice), slice_(slice) {}  // NOLINT
    TensorIndex(Tensor tensor) : type_(TensorIndexType::Tensor), tensor_(std::move(tensor)) {}  // NOLINT

    TensorIndexType type() const noexcept { return type_; }
    bool is_none() const noexcept { return type_ == TensorIndexType::None; }
    bool is_ellipsis() const noexcept { return type_ == TensorIndexType::Ellipsis; }
    bool is_integer() const noexcept { return type_ == TensorIndexType::Integer; }
    bool is_boolean() const noexcept { return type_ == TensorIndexType::Boolean; }
    bool is_slice() const noexcept { return type_ == TensorIndexType::Slice; }
    bool is_tensor() const noexcept { return type_ == TensorIndexType::Tensor; }
    int64_t integer() const noexcept { return integer_; }
    bool boolean() const noexcept { return boolean_; }
    const Slice& slice() const noexcept { return slice_; }
    const Tensor& tensor() const noexcept { return tensor_; }

private:
    TensorIndexType type_;
    int64_t integer_ = 0;
    bool boolean_ = false;
    Slice slice_;
    Tensor tensor_;
};

EMBER_API std::ostream& operator<<(std::ostream& os, const TensorIndex& index);

}  // namespace indexing
}  // namespace ember
