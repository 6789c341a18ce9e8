// Compressed files without zlib: gzip (RFC 1952) and raw DEFLATE (RFC 1951), decoded by
// Ember's own inflate (the one that also reads deflated records of zip checkpoints).
//
//   std::vector<std::byte> csv = ember::io::read_gzip("data/digits.csv.gz");
//   std::string text(reinterpret_cast<const char*>(csv.data()), csv.size());
//
// A gzip file may hold several members (`cat a.gz b.gz`): they are decompressed one after
// the other and their bytes concatenated, as `gzip -d` and Python's gzip module do; zero
// bytes after a member are padding and skipped, as Python skips them. Each member's header
// is checked (magic bytes, method 8, no reserved flag bits; the header CRC-16 when FHCRC is
// set) and so is its trailer: the CRC-32 and the length (mod 2^32) of its data.
//
// Every problem is an ember::Error whose message starts with the file's path (or the name
// given for data in memory) and says what is wrong: not a gzip file, a truncated file, a
// corrupt deflate stream (zlib's wording: "invalid block type", "invalid distance too far
// back", ...), a CRC-32 or length mismatch, trailing garbage, or output beyond `max_size`
// (a guard against decompression bombs; the default is no limit).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ember/export.h"

namespace ember::io {

// The decompressed contents of the gzip file at `path`.
EMBER_API std::vector<std::byte> read_gzip(const std::string& path,
                                           std::size_t max_size = SIZE_MAX);

// The same for `size` bytes of gzip data at `data` (`name` prefixes the error messages).
EMBER_API std::vector<std::byte> gunzip(const void* data, std::size_t size,
                                        const std::string& name = "<memory>",
                                        std::size_t max_size = SIZE_MAX);

// Decompresses one raw DEFLATE stream (no gzip or zlib wrapper: Python's
// zlib.decompress(data, wbits=-15)); bytes after the stream's final block are an error
// (where Python ignores them).
EMBER_API std::vector<std::byte> inflate(const void* data, std::size_t size,
                                         const std::string& name = "<memory>",
                                         std::size_t max_size = SIZE_MAX);

}  // namespace ember::io
