// ember::Half: IEEE 754 binary16 storage type (PyTorch's c10::Half). Arithmetic on Half
// tensors runs in float32 and the result is rounded back to half (round to nearest even).
#pragma once

#include <cstdint>
#include <cstring>
#include <ostream>

namespace ember {

namespace detail {

inline float half_bits_to_float(uint16_t h) noexcept {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else {  // subnormal: normalise
            exp = 127 - 15 + 1;
            while ((mant & 0x400u) == 0) {
                mant <<= 1;
                --exp;
            }
            mant &= 0x3ffu;
            bits = sign | (exp << 23) | (mant << 13);
        }
    } else if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

inline uint16_t float_to_half_bits(float f) noexcept {
    uint32_t x;
    std::memcpy(&x, &f, sizeof x);
    const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
    const uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) {  // inf or nan
        return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
    }
    if (absx >= 0x477ff000u) {  // rounds to >= 65520: overflow to inf
        return static_cast<uint16_t>(sign | 0x7c00u);
    }
    if (absx < 0x38800000u) {  // below the smallest normal half (2^-14): subnormal or zero
        if (absx < 0x33000000u) return sign;  // < 2^-25 rounds to zero
        // value = m * 2^(e - 150) with the implicit bit; the half subnormal unit is 2^-24
        const uint32_t e = absx >> 23;
        const uint32_t m = (absx & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126 - e;  // in [14, 24]
        uint32_t res = m >> shift;
        const uint32_t dropped = m & ((1u << shift) - 1u);
        const uint32_t halfway = 1u << (shift - 1);
        if (dropped > halfway || (dropped == halfway && (res & 1u))) ++res;
        return static_cast<uint16_t>(sign | res);
    }
    // normal: rebias exponent, round mantissa to 10 bits (nearest even)
    uint32_t h = ((absx >> 13) - ((127 - 15) << 10));
    const uint32_t dropped = absx & 0x1fffu;
    if (dropped > 0x1000u || (dropped == 0x1000u && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
}

}  // namespace detail

struct alignas(2) Half {
    uint16_t x = 0;

    struct from_bits_t {};
    static constexpr from_bits_t from_bits() { return from_bits_t(); }

    Half() = default;
    constexpr Half(uint16_t bits, from_bits_t) : x(bits) {}
    Half(float value) : x(detail::float_to_half_bits(value)) {}  // NOLINT: implicit like c10::Half
    operator float() const { return detail::half_bits_to_float(x); }  // NOLINT
};

inline std::ostream& operator<<(std::ostream& os, const Half& h) {
    return os << static_cast<float>(h);
}

}  // namespace ember
