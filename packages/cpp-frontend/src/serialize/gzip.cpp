// ember::io (include/ember/io.h): gzip files (RFC 1952) and raw DEFLATE streams, decoded by
// serialize/inflate.cpp.
//
// A gzip member: ID1 ID2 (1f 8b), CM (8: deflate), FLG, MTIME (4), XFL, OS; then, by FLG,
// FEXTRA (2-byte length + data), FNAME and FCOMMENT (zero-terminated), FHCRC (the low 16
// bits of the CRC-32 of the header so far); the deflate stream; CRC32 and ISIZE (4 bytes
// each, little-endian) of the member's decompressed data.
#include "ember/io.h"

#include <cstdio>
#include <cstring>

#include "ember/serialize.h"
#include "serialize/common.h"
#include "serialize/inflate.h"

namespace ember::io {

namespace {

using serialize::detail::crc32;
using serialize::detail::fail;
using serialize::detail::InflateError;
using serialize::detail::load_le16;
using serialize::detail::load_le32;

constexpr uint8_t kFText = 1, kFHcrc = 2, kFExtra = 4, kFName = 8, kFComment = 16;

std::string hex32(uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", v);
    return buf;
}

// Decodes the gzip members of data[0, size) into `out`.
class GzipReader {
public:
    GzipReader(const std::byte* data, std::size_t size, const std::string& name,
               std::size_t max_size)
        : data_(data), size_(size), name_(name), max_size_(max_size) {}

    std::vector<std::byte> run() {
        if (size_ == 0) fail(name_, "not a gzip file: the file is empty");
        std::vector<std::byte> out;
        for (member_ = 1;; ++member_) {
            read_member(out);
            while (pos_ < size_ && data_[pos_] == std::byte{0}) ++pos_;  // padding
            if (pos_ == size_) return out;
        }
    }

private:
    // The member's position in messages: nothing for the first member.
    std::string where() const {
        return member_ == 1 ? std::string() : " (member " + std::to_string(member_) + ")";
    }

    [[noreturn]] void truncated(const char* what) const {
        fail(name_, "truncated gzip file: it ends inside ", what, where());
    }

    // The next `n` header bytes (the file must hold them).
    const std::byte* take(std::size_t n, const char* what) {
        if (size_ - pos_ < n) truncated(what);
        const std::byte* p = data_ + pos_;
        pos_ += n;
        return p;
    }

    void skip_zero_terminated(const char* what) {
        const void* end = std::memchr(data_ + pos_, 0, size_ - pos_);
        if (end == nullptr) truncated(what);
        pos_ = static_cast<std::size_t>(static_cast<const std::byte*>(end) - data_) + 1;
    }

    void read_member(std::vector<std::byte>& out) {
        const std::size_t header_start = pos_;
        if (size_ - pos_ < 2 || data_[pos_] != std::byte{0x1f} || data_[pos_ + 1] != std::byte{0x8b}) {
            if (member_ == 1) {
                fail(name_, "not a gzip file (it does not start with the gzip magic bytes 1f 8b)");
            }
            fail(name_, "trailing garbage after gzip member ", member_ - 1, " at byte ", pos_,
                 " (neither zero padding nor another gzip member)");
        }
        const std::byte* h = take(10, "the header");
        if (h[2] != std::byte{8}) {
            fail(name_, "unknown gzip compression method ", std::to_integer<int>(h[2]),
                 " (only 8, deflate, exists)", where());
        }
        const auto flags = std::to_integer<uint8_t>(h[3]);
        if (flags & ~(kFText | kFHcrc | kFExtra | kFName | kFComment)) {
            fail(name_, "invalid gzip header: reserved flag bits are set (flags ",
                 static_cast<int>(flags), ")", where());
        }
        if (flags & kFExtra) take(load_le16(take(2, "the header")), "the header's extra field");
        if (flags & kFName) skip_zero_terminated("the header's file name");
        if (flags & kFComment) skip_zero_terminated("the header's comment");
        if (flags & kFHcrc) {
            const uint32_t want = crc32(data_ + header_start, pos_ - header_start) & 0xffff;
            const uint32_t got = load_le16(take(2, "the header"));
            if (want != got) fail(name_, "corrupt gzip header: header CRC mismatch", where());
        }

        const std::size_t start = out.size();
        try {
            pos_ += serialize::detail::inflate(data_ + pos_, size_ - pos_, out, max_size_);
        } catch (const InflateError& e) {
            fail(name_, e.what(), where());
        }
        const std::byte* trailer = take(8, "the trailer (CRC-32 and length)");
        const uint32_t crc = crc32(out.data() + start, out.size() - start);
        if (crc != load_le32(trailer)) {
            fail(name_, "corrupt gzip data: CRC-32 mismatch", where(), ": the data decompresses to ",
                 hex32(crc), ", the trailer records ", hex32(load_le32(trailer)));
        }
        const auto length = static_cast<uint32_t>(out.size() - start);  // mod 2^32
        if (length != load_le32(trailer + 4)) {
            fail(name_, "corrupt gzip data: length mismatch", where(), ": ", out.size() - start,
                 " bytes decompressed, the trailer records ", load_le32(trailer + 4),
                 " (mod 2^32)");
        }
    }

    const std::byte* data_;
    std::size_t size_;
    const std::string& name_;
    std::size_t max_size_;
    std::size_t pos_ = 0;
    int member_ = 0;
};

}  // namespace

std::vector<std::byte> gunzip(const void* data, std::size_t size, const std::string& name,
                              std::size_t max_size) {
    EMBER_CHECK(data != nullptr || size == 0, name, ": no data");
    return GzipReader(static_cast<const std::byte*>(data), size, name, max_size).run();
}

std::vector<std::byte> read_gzip(const std::string& path, std::size_t max_size) {
    auto file = serialize::Buffer::read_file(path);
    return gunzip(file->data(), file->size(), path, max_size);
}

std::vector<std::byte> inflate(const void* data, std::size_t size, const std::string& name,
                               std::size_t max_size) {
    EMBER_CHECK(data != nullptr || size == 0, name, ": no data");
    std::vector<std::byte> out;
    std::size_t used = 0;
    try {
        used = serialize::detail::inflate(static_cast<const std::byte*>(data), size, out, max_size);
    } catch (const InflateError& e) {
        fail(name, e.what());
    }
    if (used != size) {
        fail(name, size - used, " bytes follow the end of the deflate stream");
    }
    return out;
}

}  // namespace ember::io
