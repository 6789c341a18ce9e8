// Private: a DEFLATE (RFC 1951) decoder, written for Ember (no zlib), used by the gzip
// reader (src/serialize/gzip.cpp, ember::io) and by the zip reader for deflated records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

namespace ember::serialize::detail {

// What inflate() throws; its callers turn it into an ember::Error that names the file and
// says where in it the stream lies (a gzip member, a zip record). what() is the whole
// problem: "corrupt deflate data: invalid block type" (zlib's wording after the colon),
// "truncated: the compressed data ends before its last deflate block", "the data inflates
// to more than N bytes".
class InflateError : public std::exception {
public:
    enum class Kind {
        Corrupt,    // not a valid deflate stream (zlib's wording: "invalid block type", ...)
        Truncated,  // the input ends before the final block does
        TooLarge,   // the output would exceed the caller's limit
    };
    InflateError(Kind kind, std::string problem) : kind_(kind), problem_(std::move(problem)) {}
    Kind kind() const noexcept { return kind_; }
    const char* what() const noexcept override { return problem_.c_str(); }

private:
    Kind kind_;
    std::string problem_;
};

// Decodes the raw deflate stream that starts at `data` (at most `size` bytes), appending
// the decompressed bytes to `out`, and returns how many input bytes the stream used (the
// partial last byte counted): what follows (a gzip trailer, the next member) starts there.
// Back-references may not reach before the bytes this call appends. Throws InflateError
// when the stream is invalid or truncated, or when `out` would grow past `max_out` bytes in
// all; `out` then holds what was decoded so far.
std::size_t inflate(const std::byte* data, std::size_t size, std::vector<std::byte>& out,
                    std::size_t max_out = SIZE_MAX);

}  // namespace ember::serialize::detail
