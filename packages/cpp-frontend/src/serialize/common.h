// Private helpers of src/serialize: error messages that name the file, checked arithmetic,
// little-endian reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "ember/error.h"

namespace ember::serialize::detail {

// Throws ember::Error("<where>: <parts...>").
template <typename... Args>
[[noreturn]] void fail(const std::string& where, const Args&... parts) {
    throw ::ember::Error(where + ": " + ::ember::detail::str_cat(parts...));
}

// `text` quoted for a message: '...' with non-printable bytes as \xNN and backslashes and
// quotes escaped, cut to `limit` bytes (then "...").
std::string quoted(std::string_view text, std::size_t limit = 200);

// The message of errno `err` (thread-safe).
std::string errno_message(int err);

inline bool checked_mul(uint64_t a, uint64_t b, uint64_t* out) noexcept {
    return !__builtin_mul_overflow(a, b, out);
}
inline bool checked_add(uint64_t a, uint64_t b, uint64_t* out) noexcept {
    return !__builtin_add_overflow(a, b, out);
}

inline uint16_t load_le16(const std::byte* p) noexcept {
    return static_cast<uint16_t>(std::to_integer<uint16_t>(p[0]) |
                                 (std::to_integer<uint16_t>(p[1]) << 8));
}
inline uint32_t load_le32(const std::byte* p) noexcept {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | std::to_integer<uint32_t>(p[i]);
    return v;
}
inline uint64_t load_le64(const std::byte* p) noexcept {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | std::to_integer<uint64_t>(p[i]);
    return v;
}
inline void store_le64(std::byte* p, uint64_t v) noexcept {
    for (int i = 0; i < 8; ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

// Whether `text` is valid UTF-8 (no overlong forms, no code point above U+10FFFF; surrogate
// code points U+D800..U+DFFF are accepted only when `allow_surrogates`, as Python's
// "surrogatepass" decoding of pickled strings accepts them).
bool valid_utf8(std::string_view text, bool allow_surrogates = false) noexcept;

// Append code point ``cp`` (at most 0x10FFFF) to ``out`` as UTF-8.
void append_utf8(std::string& out, uint32_t cp);

// The CRC-32 (ISO-HDLC, zlib's crc32) of `size` bytes, continuing from `crc`.
uint32_t crc32(const std::byte* data, std::size_t size, uint32_t crc = 0) noexcept;

}  // namespace ember::serialize::detail
