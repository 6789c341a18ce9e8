// What the module options share: EMBER_ARG (chained setters, libtorch's TORCH_ARG) and
// ExpandingArray (one int or D ints) from nn/functional/options.h, and
// ExpandingArrayWithOptional (D ints, any of which may be std::nullopt, as Python's None in
// AdaptiveAvgPool2d((2, None))).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <vector>

#include "../../error.h"
#include "../functional/options.h"

namespace ember {
namespace nn {

// One int (repeated) or D ints: kernel_size, stride, padding, dilation.
template <size_t D>
using ExpandingArray = functional::ExpandingArray<D>;

// D optional ints given as one int, one std::nullopt, or D values ({2, std::nullopt}).
template <size_t D>
class ExpandingArrayWithOptional {
public:
    ExpandingArrayWithOptional(int64_t single) { values_.fill(single); }  // NOLINT
    ExpandingArrayWithOptional(std::nullopt_t) {}  // NOLINT
    ExpandingArrayWithOptional(std::initializer_list<std::optional<int64_t>> list) {  // NOLINT
        EMBER_CHECK(list.size() == D, "Expected ", D, " values, but instead got ", list.size());
        size_t i = 0;
        for (const auto& v : list) values_[i++] = v;
    }
    ExpandingArrayWithOptional(const ExpandingArray<D>& values) {  // NOLINT
        for (size_t i = 0; i < D; ++i) values_[i] = values[i];
    }
    const std::optional<int64_t>& operator[](size_t i) const { return values_.at(i); }
    static constexpr size_t size() noexcept { return D; }
    const std::array<std::optional<int64_t>, D>& values() const noexcept { return values_; }

private:
    std::array<std::optional<int64_t>, D> values_{};
};

}  // namespace nn
}  // namespace ember
