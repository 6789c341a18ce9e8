// ember::Scalar: a number that is not a tensor (c10::Scalar): an integer (int64), a floating
// value (double) or a bool. In type promotion a Scalar acts like a Python number: it does
// not change a tensor's dtype within its category (float32 tensor * 2.5 stays float32).
#pragma once

#include <cstdint>
#include <ostream>
#include <type_traits>

#include "dtype.h"
#include "error.h"

namespace ember {

class Scalar {
public:
    Scalar() : Scalar(int64_t(0)) {}

    template <typename T,
              std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
    Scalar(T v) : tag_(Tag::Int) {  // NOLINT: implicit like c10::Scalar
        v_.i = static_cast<int64_t>(v);
    }
    template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
    Scalar(T v) : tag_(Tag::Double) {  // NOLINT
        v_.d = static_cast<double>(v);
    }
    template <typename T, std::enable_if_t<std::is_same_v<T, bool>, int> = 0>
    Scalar(T v) : tag_(Tag::Bool) {  // NOLINT
        v_.i = v ? 1 : 0;
    }
    Scalar(Half v) : Scalar(static_cast<double>(static_cast<float>(v))) {}  // NOLINT

    bool isFloatingPoint() const noexcept { return tag_ == Tag::Double; }
    bool isIntegral(bool include_bool) const noexcept {
        return tag_ == Tag::Int || (include_bool && tag_ == Tag::Bool);
    }
    bool isBoolean() const noexcept { return tag_ == Tag::Bool; }

    // kDouble, kLong or kBool (as c10::Scalar::type()).
    ScalarType type() const noexcept {
        return tag_ == Tag::Double ? kDouble : tag_ == Tag::Int ? kLong : kBool;
    }

    double toDouble() const noexcept { return tag_ == Tag::Double ? v_.d : static_cast<double>(v_.i); }
    int64_t toLong() const noexcept {
        return tag_ == Tag::Double ? static_cast<int64_t>(v_.d) : v_.i;
    }
    bool toBool() const noexcept { return tag_ == Tag::Double ? v_.d != 0.0 : v_.i != 0; }

    // The value converted to T (an element type: int64_t, float, Half, bool, ...).
    template <typename T>
    T to() const {
        if constexpr (std::is_same_v<T, bool>) {
            return toBool();
        } else if constexpr (std::is_same_v<T, Half>) {
            return Half(static_cast<float>(toDouble()));
        } else if constexpr (std::is_floating_point_v<T>) {
            return static_cast<T>(toDouble());
        } else if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
            return T(static_cast<typename T::value_type>(toDouble()), typename T::value_type(0));
        } else {
            return tag_ == Tag::Double ? static_cast<T>(static_cast<int64_t>(v_.d))
                                       : static_cast<T>(v_.i);
        }
    }

    Scalar operator-() const {
        if (tag_ == Tag::Double) return Scalar(-v_.d);
        EMBER_CHECK(tag_ != Tag::Bool, "torch boolean negative, the `-` operator, is not supported.");
        return Scalar(-v_.i);
    }

    bool equal(const Scalar& other) const noexcept {
        if (isFloatingPoint() || other.isFloatingPoint()) return toDouble() == other.toDouble();
        return v_.i == other.v_.i;
    }

private:
    enum class Tag : uint8_t { Int, Double, Bool };
    Tag tag_;
    union {
        int64_t i;
        double d;
    } v_{};
};

inline std::ostream& operator<<(std::ostream& os, const Scalar& s) {
    if (s.isFloatingPoint()) return os << s.toDouble();
    if (s.isBoolean()) return os << (s.toBool() ? "true" : "false");
    return os << s.toLong();
}

}  // namespace ember
