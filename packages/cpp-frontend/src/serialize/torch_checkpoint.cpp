// PyTorch zip checkpoints: read_torch_checkpoint (include/ember/serialize.h), and the
// format detection of read_checkpoint.
//
// An archive <name>/ holds data.pkl (the pickled object, protocol 2 by default), one record
// data/<key> per storage (raw elements in the byte order of the byteorder record), and
// version, .format_version, .storage_alignment, .data/serialization_id.
#include <cstring>
#include <unordered_map>

#include "ember/serialize.h"
#include "serialize/common.h"
#include "serialize/file_io.h"
#include "serialize/pickle.h"
#include "serialize/zip_reader.h"

namespace ember::serialize {

using detail::fail;
using detail::quoted;

namespace {

const char* storage_dtype_name(int code) {
    if (code == detail::kBFloat16Code) return "bfloat16";
    return dtype_name(static_cast<ScalarType>(code)).data();
}

std::string trimmed(std::string_view s) {
    const char* ws = " \t\r\n";
    auto b = s.find_first_not_of(ws);
    if (b == std::string_view::npos) return "";
    auto e = s.find_last_not_of(ws);
    return std::string(s.substr(b, e - b + 1));
}

// Opens the archive in `data` and returns unpickle(pickle text, storage loader).
template <typename Unpickle>
auto unpickle_archive(std::shared_ptr<const Buffer> data, const std::string& name,
                      bool check_crc32, Unpickle&& unpickle) {
    EMBER_CHECK(data != nullptr, name, ": no data");
    detail::ZipReader zip(data, name, check_crc32);
    if (zip.has("constants.pkl")) {
        fail(name, "is a TorchScript archive (torch.jit.save), not a torch.save checkpoint: "
                   "Ember has no TorchScript runtime");
    }
    if (!zip.has("data.pkl")) {
        fail(name, "not a PyTorch checkpoint: the archive has no ", quoted(zip.prefix() + "/data.pkl"),
             " record");
    }
    bool big_endian = false;
    if (zip.has("byteorder")) {
        auto rec = zip.read("byteorder", 1024);
        std::string order = trimmed(
            std::string_view(reinterpret_cast<const char*>(rec->data()), rec->size()));
        if (order != "little" && order != "big") {
            fail(name, "invalid byteorder record ", quoted(order, 40));
        }
        big_endian = order == "big";
    }
    auto pickle = zip.read("data.pkl");

    struct Cached {
        int code;
        uint64_t numel;
        detail::LoadedStorage storage;
    };
    std::unordered_map<std::string, Cached> cache;
    detail::StorageLoader loader = [&](const detail::StorageRequest& req) {
        auto found = cache.find(req.key);
        if (found != cache.end()) {
            if (found->second.code != req.dtype_code || found->second.numel != req.numel) {
                fail(name, "storage ", quoted(req.key), " is declared as ", found->second.numel,
                     " elements of ", storage_dtype_name(found->second.code), " and as ",
                     req.numel, " elements of ", storage_dtype_name(req.dtype_code));
            }
            return found->second.storage;
        }
        const std::string record = "data/" + req.key;
        if (!zip.has(record)) {
            fail(name, "the checkpoint refers to storage ", quoted(req.key), " but the archive has no ",
                 quoted(zip.prefix() + "/" + record), " record");
        }
        const bool bf16 = req.dtype_code == detail::kBFloat16Code;
        const std::size_t item = bf16 ? 2 : element_size(static_cast<ScalarType>(req.dtype_code));
        uint64_t nbytes = 0;
        if (!detail::checked_mul(req.numel, item, &nbytes) || zip.size_of(record) != nbytes) {
            fail(name, "record ", quoted(zip.prefix() + "/" + record), " holds ",
                 zip.size_of(record), " bytes but the checkpoint declares ", req.numel,
                 " elements of ", storage_dtype_name(req.dtype_code));
        }
        std::shared_ptr<const Buffer> bytes = zip.read(record);
        if (big_endian && item > 1) {
            auto swapped = Buffer::allocate(bytes->size());
            std::byte* out = swapped->mutable_data();
            const std::byte* in = bytes->data();
            for (std::size_t i = 0; i < bytes->size(); i += item) {
                for (std::size_t k = 0; k < item; ++k) out[i + k] = in[i + item - 1 - k];
            }
            bytes = std::move(swapped);
        }
        detail::LoadedStorage loaded;
        loaded.numel = req.numel;
        if (bf16) {  // widened to float32: exact (bfloat16 is float32's top half)
            auto wide = Buffer::allocate(static_cast<std::size_t>(req.numel) * 4);
            std::byte* out = wide->mutable_data();
            const std::byte* in = bytes->data();
            for (uint64_t i = 0; i < req.numel; ++i) {
                uint32_t bits = uint32_t(detail::load_le16(in + 2 * i)) << 16;
                std::memcpy(out + 4 * i, &bits, 4);
            }
            loaded.buffer = std::move(wide);
            loaded.dtype = ScalarType::Float;
        } else {
            loaded.dtype = static_cast<ScalarType>(req.dtype_code);
            auto address = reinterpret_cast<std::uintptr_t>(bytes->data());
            if (bytes->size() != 0 && address % item != 0) {  // not where torch puts it
                bytes = Buffer::copy_of(bytes->data(), bytes->size());
            }
            loaded.buffer = std::move(bytes);
        }
        cache.emplace(req.key, Cached{req.dtype_code, req.numel, loaded});
        return loaded;
    };
    std::string_view text(reinterpret_cast<const char*>(pickle->data()), pickle->size());
    return unpickle(text, loader);
}

}  // namespace

TensorRecords deserialize_torch_checkpoint(std::shared_ptr<const Buffer> data,
                                           const std::string& name,
                                           const std::optional<std::string>& key,
                                           bool check_crc32) {
    return unpickle_archive(std::move(data), name, check_crc32,
                            [&](std::string_view text, const detail::StorageLoader& loader) {
                                return detail::unpickle_state_dict(text, loader, key, name);
                            });
}

Value deserialize_torch_object(std::shared_ptr<const Buffer> data, const std::string& name,
                               bool check_crc32) {
    return unpickle_archive(std::move(data), name, check_crc32,
                            [&](std::string_view text, const detail::StorageLoader& loader) {
                                return detail::unpickle_object(text, loader, name);
                            });
}

Value read_torch_object(const std::string& path, const ReadOptions& options) {
    std::shared_ptr<const Buffer> data =
        options.mmap ? Buffer::map_file(path) : Buffer::read_file(path);
    return deserialize_torch_object(std::move(data), path, options.check_crc32);
}

TensorRecords read_torch_checkpoint(const std::string& path, const ReadOptions& options) {
    std::shared_ptr<const Buffer> data =
        options.mmap ? Buffer::map_file(path) : Buffer::read_file(path);
    return deserialize_torch_checkpoint(std::move(data), path, std::nullopt, options.check_crc32);
}

TensorRecords read_torch_checkpoint(const std::string& path, const std::string& key,
                                    const ReadOptions& options) {
    std::shared_ptr<const Buffer> data =
        options.mmap ? Buffer::map_file(path) : Buffer::read_file(path);
    return deserialize_torch_checkpoint(std::move(data), path, key, options.check_crc32);
}

CheckpointFormat detect_checkpoint_format(const std::string& path) {
    std::size_t size = 0;
    detail::UniqueFd fd = detail::open_for_reading(path, &size);
    unsigned char head[64] = {};
    std::size_t n = size < sizeof head ? size : sizeof head;
    detail::read_exact(fd.get(), path, 0, head, n);
    if (n >= 4 && std::memcmp(head, "PK\x03\x04", 4) == 0) return CheckpointFormat::TorchZip;
    if (n >= 10) {
        uint64_t len = detail::load_le64(reinterpret_cast<const std::byte*>(head));
        if (len >= 2 && len <= 100000000 && len <= size - 8) {
            std::size_t i = 8;
            while (i < n && (head[i] == ' ' || head[i] == '\t' || head[i] == '\n' || head[i] == '\r')) ++i;
            if (i < n && head[i] == '{') return CheckpointFormat::Safetensors;
        }
    }
    return CheckpointFormat::Unknown;
}

TensorRecords read_checkpoint(const std::string& path, const ReadOptions& options) {
    switch (detect_checkpoint_format(path)) {
        case CheckpointFormat::Safetensors: return read_safetensors(path, options).tensors;
        case CheckpointFormat::TorchZip: return read_torch_checkpoint(path, options);
        case CheckpointFormat::Unknown: break;
    }
    fail(path, "neither a safetensors file nor a PyTorch zip checkpoint (legacy torch.save files, "
               "written with _use_new_zipfile_serialization=False, are not supported: load and "
               "save them again in Python)");
}

}  // namespace ember::serialize
