// Private: the zip container of PyTorch checkpoints, read from bytes in memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "ember/serialize.h"

namespace ember::serialize::detail {

// A PyTorch-style zip archive (<prefix>/data.pkl, <prefix>/data/<key>, ...), its whole
// directory validated when constructed, before any record is read: the end of central
// directory record (ZIP64 where present, as torch.save always writes it), every central
// directory entry and its local header (names that agree, stored records whose data lies
// before the central directory and overlaps no other record), unique names under one
// top-level folder. Records are stored (torch.save writes every record so) or deflated (a
// checkpoint re-packed by another zip tool), inflated when read; encrypted records and other
// compression methods raise. Errors are ember::Error "<name>: ...".
class ZipReader {
public:
    ZipReader(std::shared_ptr<const Buffer> data, std::string name, bool check_crc32);

    // The folder every record is in ("archive" for archive/data.pkl).
    const std::string& prefix() const noexcept { return prefix_; }
    // Whether <prefix>/<record> exists.
    bool has(const std::string& record) const;
    // The size of <prefix>/<record> in bytes, uncompressed (it must exist).
    std::size_t size_of(const std::string& record) const;
    // The bytes of <prefix>/<record>: a slice of the archive, or for a deflated record its
    // inflated bytes (CRC-32 checked unless disabled or recorded as 0). `limit`: raise if the
    // record is larger.
    std::shared_ptr<const Buffer> read(const std::string& record,
                                       std::size_t limit = SIZE_MAX) const;

private:
    struct Entry {
        uint64_t data_offset = 0;
        uint64_t size = 0;   // uncompressed
        uint64_t csize = 0;  // in the archive
        uint32_t crc = 0;
        bool deflated = false;
    };

    const Entry& entry(const std::string& record) const;
    std::shared_ptr<const Buffer> inflate_record(const std::string& record, const Entry& e,
                                                 const Buffer& compressed) const;

    std::shared_ptr<const Buffer> data_;
    std::string name_;
    bool check_crc32_;
    std::string prefix_;
    std::unordered_map<std::string, Entry> entries_;
};

}  // namespace ember::serialize::detail
