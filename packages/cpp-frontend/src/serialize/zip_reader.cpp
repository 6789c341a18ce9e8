#include "serialize/zip_reader.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "serialize/common.h"
#include "serialize/inflate.h"

namespace ember::serialize::detail {

namespace {

constexpr std::size_t kEndSize = 22;         // end of central directory record
constexpr std::size_t kLocatorSize = 20;     // ZIP64 end of central directory locator
constexpr std::size_t kEnd64Size = 56;       // ZIP64 end of central directory record
constexpr std::size_t kCentralSize = 46;     // central directory file header
constexpr std::size_t kLocalSize = 30;       // local file header
constexpr std::size_t kMaxComment = 0xffff;
constexpr uint64_t kMaxDeflateRatio = 1032;  // 258 bytes from two 1-bit codes

bool has_signature(const std::byte* p, uint32_t sig) { return load_le32(p) == sig; }

template <typename... Args>
[[noreturn]] void zip_corrupt(const std::string& name, const Args&... what) {
    fail(name, "corrupt zip archive: ", what...);
}

std::string hex32(uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", v);
    return buf;
}

}  // namespace

ZipReader::ZipReader(std::shared_ptr<const Buffer> data, std::string name, bool check_crc32)
    : data_(std::move(data)), name_(std::move(name)), check_crc32_(check_crc32) {
    const std::byte* base = data_->data();
    const uint64_t size = data_->size();
    if (size < 4 || !has_signature(base, 0x04034b50)) {
        fail(name_, "not a zip archive (a PyTorch checkpoint written by torch.save since "
                    "PyTorch 1.6, or by ember.save, starts with \"PK\\x03\\x04\"; legacy "
                    "torch.save files are not supported by the C++ reader)");
    }
    if (size < kEndSize) zip_corrupt(name_, "too short for an end of central directory record");

    // The end of central directory record: the last signature whose comment fits the file.
    uint64_t end_pos = UINT64_MAX;
    uint64_t lowest = size - kEndSize > kMaxComment ? size - kEndSize - kMaxComment : 0;
    for (uint64_t pos = size - kEndSize + 1; pos-- > lowest;) {
        if (has_signature(base + pos, 0x06054b50) &&
            pos + kEndSize + load_le16(base + pos + 20) <= size) {
            end_pos = pos;
            break;
        }
    }
    if (end_pos == UINT64_MAX) zip_corrupt(name_, "no end of central directory record (truncated file?)");
    const std::byte* end = base + end_pos;
    uint64_t disk = load_le16(end + 4), cd_disk = load_le16(end + 6);
    uint64_t entries_here = load_le16(end + 8), entries = load_le16(end + 10);
    uint64_t cd_size = load_le32(end + 12), cd_offset = load_le32(end + 16);
    uint64_t cd_limit = end_pos;  // the central directory ends before this

    if (end_pos >= kLocatorSize && has_signature(end - kLocatorSize, 0x07064b50)) {
        const std::byte* loc = end - kLocatorSize;
        uint64_t end64_pos = load_le64(loc + 8);
        if (load_le32(loc + 4) != 0 || load_le32(loc + 16) > 1) {
            fail(name_, "multi-disk zip archives are not supported");
        }
        if (end64_pos > end_pos - kLocatorSize || end_pos - kLocatorSize - end64_pos < kEnd64Size) {
            zip_corrupt(name_, "the ZIP64 end of central directory record lies outside the file");
        }
        const std::byte* e64 = base + end64_pos;
        if (!has_signature(e64, 0x06064b50)) zip_corrupt(name_, "bad ZIP64 end of central directory record");
        disk = load_le32(e64 + 16);
        cd_disk = load_le32(e64 + 20);
        entries_here = load_le64(e64 + 24);
        entries = load_le64(e64 + 32);
        cd_size = load_le64(e64 + 40);
        cd_offset = load_le64(e64 + 48);
        cd_limit = end64_pos;
    }
    if (disk != 0 || cd_disk != 0 || entries_here != entries) {
        fail(name_, "multi-disk zip archives are not supported");
    }
    if (cd_offset > cd_limit || cd_size > cd_limit - cd_offset) {
        zip_corrupt(name_, "the central directory (", cd_size, " bytes at offset ", cd_offset,
                ") runs past its end record at offset ", cd_limit);
    }
    if (entries == 0) zip_corrupt(name_, "the archive holds no records");

    struct Span {
        uint64_t start, end;
        std::string name;
    };
    std::vector<Span> spans;
    const uint64_t cd_end = cd_offset + cd_size;
    uint64_t p = cd_offset;
    for (uint64_t i = 0; i < entries; ++i) {
        if (cd_end - p < kCentralSize) {
            zip_corrupt(name_, "the central directory ends after ", i, " of its ", entries, " records");
        }
        const std::byte* h = base + p;
        if (!has_signature(h, 0x02014b50)) zip_corrupt(name_, "bad central directory record ", i);
        uint32_t flags = load_le16(h + 8), method = load_le16(h + 10), crc = load_le32(h + 16);
        uint64_t csize = load_le32(h + 20), usize = load_le32(h + 24);
        uint64_t name_len = load_le16(h + 28), extra_len = load_le16(h + 30);
        uint64_t comment_len = load_le16(h + 32), local = load_le32(h + 42);
        if (cd_end - p - kCentralSize < name_len + extra_len + comment_len) {
            zip_corrupt(name_, "central directory record ", i, " runs past the central directory");
        }
        std::string record(reinterpret_cast<const char*>(h + kCentralSize), name_len);
        // ZIP64 extended information: the 64-bit values of the fields set to 0xffffffff.
        const std::byte* x = h + kCentralSize + name_len;
        const std::byte* x_end = x + extra_len;
        bool need_u = usize == 0xffffffffu, need_c = csize == 0xffffffffu,
             need_o = local == 0xffffffffu;
        while (x_end - x >= 4) {
            uint32_t tag = load_le16(x), len = load_le16(x + 2);
            if (static_cast<uint64_t>(x_end - x - 4) < len) {
                zip_corrupt(name_, "bad extra field in the central directory record of ", quoted(record));
            }
            if (tag == 0x0001) {
                const std::byte* f = x + 4;
                uint32_t left = len;
                auto take = [&](uint64_t* field) {
                    if (left < 8) zip_corrupt(name_, "short ZIP64 extra field for ", quoted(record));
                    *field = load_le64(f);
                    f += 8;
                    left -= 8;
                };
                if (need_u) take(&usize);
                if (need_c) take(&csize);
                if (need_o) take(&local);
                need_u = need_c = need_o = false;
            }
            x += 4 + len;
        }
        if (need_u || need_c || need_o) zip_corrupt(name_, "missing ZIP64 extra field for ", quoted(record));
        p += kCentralSize + name_len + extra_len + comment_len;

        if (flags & 0x1) fail(name_, "record ", quoted(record), " is encrypted");
        if (method != 0 && method != 8) {
            fail(name_, "record ", quoted(record), " uses unsupported compression method ", method,
                 " (only stored and deflate records are read)");
        }
        if (method == 0 && csize != usize) {
            zip_corrupt(name_, "record ", quoted(record), " is stored with ", csize,
                    " bytes but declares ", usize);
        }
        uint64_t inflatable = 0;  // deflate cannot expand data more than 1032-fold
        if (method == 8 && (!checked_mul(csize, kMaxDeflateRatio, &inflatable) ||
                            usize > inflatable + kMaxDeflateRatio)) {
            zip_corrupt(name_, "record ", quoted(record), " declares ", usize,
                    " bytes, more than its ", csize, " bytes of deflate data can hold");
        }
        // The local header: the same name, and the data after it, before the directory.
        if (local > cd_offset || cd_offset - local < kLocalSize) {
            zip_corrupt(name_, "the local header of ", quoted(record), " lies outside the records");
        }
        const std::byte* lh = base + local;
        if (!has_signature(lh, 0x04034b50)) zip_corrupt(name_, "bad local header for ", quoted(record));
        uint64_t lname = load_le16(lh + 26), lextra = load_le16(lh + 28);
        uint64_t data_offset = local + kLocalSize + lname + lextra;
        if (data_offset > cd_offset || cd_offset - data_offset < csize) {
            zip_corrupt(name_, "the data of ", quoted(record), " runs past the start of the central directory");
        }
        if (lname != name_len ||
            std::string_view(reinterpret_cast<const char*>(lh + kLocalSize), lname) != record) {
            zip_corrupt(name_, "record ", quoted(record), " has another name in its local header");
        }

        if (i == 0) {
            auto slash = record.find('/');
            if (slash == std::string::npos || slash == 0) {
                zip_corrupt(name_, "record ", quoted(record), " is not in a folder (a PyTorch checkpoint "
                        "keeps its records in <name>/)");
            }
            prefix_ = record.substr(0, slash);
        }
        if (record.size() <= prefix_.size() + 1 ||
            record.compare(0, prefix_.size() + 1, prefix_ + "/") != 0) {
            zip_corrupt(name_, "file in archive is not in the folder ", quoted(prefix_ + "/"), ": ",
                    quoted(record));
        }
        std::string key = record.substr(prefix_.size() + 1);
        if (!entries_.emplace(key, Entry{data_offset, usize, csize, crc, method == 8}).second) {
            zip_corrupt(name_, "duplicate record ", quoted(record));
        }
        spans.push_back({local, data_offset + csize, record});
    }
    std::sort(spans.begin(), spans.end(),
              [](const Span& a, const Span& b) { return a.start < b.start; });
    for (std::size_t i = 1; i < spans.size(); ++i) {
        if (spans[i - 1].end > spans[i].start) {
            zip_corrupt(name_, "record ", quoted(spans[i - 1].name), " overlaps ", quoted(spans[i].name));
        }
    }
}

bool ZipReader::has(const std::string& record) const { return entries_.count(record) != 0; }

const ZipReader::Entry& ZipReader::entry(const std::string& record) const {
    auto it = entries_.find(record);
    if (it == entries_.end()) {
        fail(name_, "the archive has no record ", quoted(prefix_ + "/" + record));
    }
    return it->second;
}

std::size_t ZipReader::size_of(const std::string& record) const {
    return static_cast<std::size_t>(entry(record).size);
}

std::shared_ptr<const Buffer> ZipReader::read(const std::string& record, std::size_t limit) const {
    const Entry& e = entry(record);
    if (e.size > limit) {
        fail(name_, "record ", quoted(prefix_ + "/" + record), " is too large (", e.size,
             " bytes; at most ", limit, " expected)");
    }
    auto bytes = data_->slice(static_cast<std::size_t>(e.data_offset),
                              static_cast<std::size_t>(e.csize));
    if (e.deflated) bytes = inflate_record(record, e, *bytes);
    if (check_crc32_ && e.crc != 0) {
        uint32_t got = crc32(bytes->data(), bytes->size());
        if (got != e.crc) {
            fail(name_, "record ", quoted(prefix_ + "/" + record), " is corrupted: CRC-32 ",
                 hex32(got), " differs from the recorded ", hex32(e.crc),
                 " (ReadOptions::check_crc32 = false skips the check)");
        }
    }
    return bytes;
}

std::shared_ptr<const Buffer> ZipReader::inflate_record(const std::string& record, const Entry& e,
                                                        const Buffer& compressed) const {
    std::vector<std::byte> out;
    out.reserve(static_cast<std::size_t>(e.size));
    try {
        inflate(compressed.data(), compressed.size(), out, static_cast<std::size_t>(e.size));
    } catch (const InflateError& err) {
        fail(name_, "record ", quoted(prefix_ + "/" + record),
             " is compressed (deflate) and cannot be read: ", err.what(),
             err.kind() == InflateError::Kind::TooLarge ? " (the size the zip directory declares)" : "");
    }
    if (out.size() != e.size) {
        zip_corrupt(name_, "record ", quoted(prefix_ + "/" + record), " inflates to ", out.size(),
                    " bytes but declares ", e.size);
    }
    return Buffer::from_vector(std::move(out));
}

}  // namespace ember::serialize::detail
