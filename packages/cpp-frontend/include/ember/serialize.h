// Checkpoint formats as raw tensor records: safetensors (read and write) and PyTorch zip
// checkpoints (read: what torch.save and Python Ember's ember.save write; write: a state
// dict as torch.save writes it), with no Python and no pickle code execution at run time.
//
//   auto file = ember::serialize::read_safetensors("model.safetensors");
//   for (const auto& [name, record] : file.tensors) { ... record.dtype, record.shape ... }
//   ember::serialize::write_safetensors("copy.safetensors", file.tensors, file.metadata);
//
//   // torch.save(model.state_dict(), "m.pt") in Python:
//   ember::serialize::TensorRecords sd = ember::serialize::read_torch_checkpoint("m.pt");
//   // torch.save({"model": model.state_dict(), "epoch": 3}, "ckpt.pt"):
//   auto model_sd = ember::serialize::read_torch_checkpoint("ckpt.pt", "model");
//
// This layer knows nothing of ember::Tensor: a TensorRecord is a dtype, a shape, strides
// and an offset (in elements) over a shared byte Buffer, as a tensor's storage is. Every
// problem with a file is an ember::Error whose message starts with the file's path (or the
// name given for in-memory data) and says what is wrong; no length read from a file is
// allocated before it has been checked against the size of the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ember/dtype.h"
#include "ember/export.h"

namespace ember::serialize {

// ---------------------------------------------------------------------------- Buffer

// A block of bytes that tensor records view: memory it owns (64-byte aligned), a
// memory-mapped file (copy-on-write, so writes never reach the file), memory another object
// owns (wrap), or a slice of any of these. Copies of the shared_ptr share the bytes; the
// memory lives as long as the last Buffer (or slice) viewing it.
class EMBER_API Buffer {
public:
    // `nbytes` zero bytes, owned, 64-byte aligned.
    static std::shared_ptr<Buffer> allocate(std::size_t nbytes);
    // A copy of `nbytes` bytes at `data`.
    static std::shared_ptr<Buffer> copy_of(const void* data, std::size_t nbytes);
    // Adopts `bytes` (no copy).
    static std::shared_ptr<Buffer> from_vector(std::vector<std::byte> bytes);
    // Views `nbytes` bytes at `data` without copying; `owner` keeps them alive (a Tensor's
    // storage, say). `writable` says whether mutable_data() may be used.
    static std::shared_ptr<Buffer> wrap(void* data, std::size_t nbytes,
                                        std::shared_ptr<const void> owner, bool writable);
    static std::shared_ptr<const Buffer> wrap(const void* data, std::size_t nbytes,
                                              std::shared_ptr<const void> owner);
    // The whole file at `path`, read into owned memory.
    static std::shared_ptr<Buffer> read_file(const std::string& path);
    // The whole file at `path`, memory-mapped copy-on-write (MAP_PRIVATE). The mapping
    // reflects the file as it changes on disk until a page is written; a file truncated by
    // another process while mapped faults on access (SIGBUS): map only files nobody
    // rewrites in place (ember's and torch's writers replace files by renaming).
    static std::shared_ptr<Buffer> map_file(const std::string& path);

    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ~Buffer() = default;

    const std::byte* data() const noexcept { return data_; }
    // The bytes, for writing: throws ember::Error for a read-only buffer (a const wrap).
    std::byte* mutable_data() const;
    std::size_t size() const noexcept { return size_; }
    bool writable() const noexcept { return writable_; }
    bool is_mapped() const noexcept { return mapped_; }

    // `nbytes` bytes from `offset`, sharing this buffer's memory (bounds checked).
    std::shared_ptr<const Buffer> slice(std::size_t offset, std::size_t nbytes) const;

private:
    // Keeps the constructor to the factories (which use make_shared).
    class Token {
        friend class Buffer;
        explicit Token() = default;
    };

public:
    Buffer(Token, std::byte* data, std::size_t size, std::shared_ptr<const void> owner,
           bool writable, bool mapped) noexcept
        : data_(data), size_(size), owner_(std::move(owner)), writable_(writable),
          mapped_(mapped) {}

private:
    std::byte* data_ = nullptr;
    std::size_t size_ = 0;
    std::shared_ptr<const void> owner_;
    bool writable_ = false;
    bool mapped_ = false;
};

// ------------------------------------------------------------------------ TensorRecord

// One tensor as a checkpoint stores it: `shape`, `strides` and `storage_offset` are in
// elements of `dtype` over `storage`, as in PyTorch (strides are never negative). Records
// read from one torch checkpoint that viewed one storage in Python share one Buffer.
struct EMBER_API TensorRecord {
    ScalarType dtype = ScalarType::Float;
    std::vector<int64_t> shape;
    std::vector<int64_t> strides;
    int64_t storage_offset = 0;
    std::shared_ptr<const Buffer> storage;  // may be null only when numel() == 0
    bool requires_grad = false;

    int64_t dim() const noexcept { return static_cast<int64_t>(shape.size()); }
    // The number of elements (1 for a 0-d tensor; assumes a checked record).
    int64_t numel() const noexcept;
    // numel() * element_size(dtype).
    std::size_t nbytes() const noexcept;
    // Whether the elements lie in row-major order without gaps (dimensions of size 1 and
    // empty tensors count as contiguous, as in PyTorch).
    bool is_contiguous() const noexcept;
    // The first element's address (storage->data() + storage_offset * element size), or
    // nullptr without a storage.
    const std::byte* data() const noexcept;
};

// An ordered list of named records: file order for torch checkpoints, sorted by name for
// safetensors (safe_open(...).keys() order). Names are unique.
using TensorRecords = std::vector<std::pair<std::string, TensorRecord>>;

// Row-major strides of `shape`, in elements (PyTorch's contiguous strides).
EMBER_API std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape);

// A contiguous record of `dtype` and `shape` over a copy of `data` (numel * element size
// bytes; may be null when numel is 0).
EMBER_API TensorRecord make_record(ScalarType dtype, std::vector<int64_t> shape,
                                   const void* data, bool requires_grad = false);
// A contiguous record viewing `storage` from its start (its size must be at least numel *
// element size bytes).
EMBER_API TensorRecord make_record(ScalarType dtype, std::vector<int64_t> shape,
                                   std::shared_ptr<const Buffer> storage,
                                   bool requires_grad = false);

// Throws ember::Error ("<what>: ...") unless the record is consistent: a known dtype, as
// many strides as dimensions, no negative size, stride or offset, every element within
// its storage, sizes that fit in memory.
EMBER_API void check_record(const TensorRecord& record, const std::string& what = "tensor");

// The record's elements in row-major order, packed (numel * element size bytes), honouring
// its strides and offset. Checks the record first (check_record).
EMBER_API std::vector<std::byte> contiguous_bytes(const TensorRecord& record);
// The same into `out`, which must hold exactly record.nbytes() bytes.
EMBER_API void copy_contiguous_bytes(const TensorRecord& record, std::byte* out,
                                     std::size_t out_size);

// ---------------------------------------------------------------------------- Value

// A Python object as a checkpoint's pickle holds it, for what is more than a flat state dict
// (an optimizer's state_dict(): {"state": {0: {...}}, "param_groups": [{...}]}): None, bool,
// int (64-bit), float, str, tuple, list, dict (insertion order, keys of any of these kinds
// but list and dict) and tensor.
struct EMBER_API Value {
    enum class Kind : uint8_t { None, Bool, Int, Float, Str, Tuple, List, Dict, Tensor };

    Kind kind = Kind::None;
    bool boolean = false;        // Bool
    int64_t integer = 0;         // Int
    double real = 0;             // Float
    std::string text;            // Str (UTF-8)
    std::vector<Value> items;    // Tuple, List; Dict: key 0, value 0, key 1, value 1, ...
    TensorRecord tensor;         // Tensor

    static Value from_bool(bool b);
    static Value from_int(int64_t i);
    static Value from_float(double d);
    static Value from_str(std::string s);
    static Value from_tensor(TensorRecord t);
    static Value tuple(std::vector<Value> items = {});
    static Value list(std::vector<Value> items = {});
    static Value dict();

    bool is_none() const noexcept { return kind == Kind::None; }
    // Python's name of the type ("NoneType", "int", "dict", "torch.Tensor"...), for messages.
    const char* type_name() const noexcept;
    // A dict's number of entries, and its i-th key and value.
    std::size_t dict_size() const noexcept { return kind == Kind::Dict ? items.size() / 2 : 0; }
    const Value& key(std::size_t i) const { return items.at(2 * i); }
    const Value& value(std::size_t i) const { return items.at(2 * i + 1); }
    // Appends the entry (key, value) to a dict (keys are not checked for duplicates).
    Value& set(Value key, Value value);
    Value& set(std::string key, Value value) { return set(from_str(std::move(key)), std::move(value)); }
    // The value of a dict's str key / int key (a bool or an integral float key equals the
    // int, as in Python); nullptr when absent or when this is not a dict.
    const Value* find(std::string_view key) const noexcept;
    const Value* find(int64_t key) const noexcept;
    // A number (int, bool or float) as a double; false for another kind.
    bool to_double(double* out) const noexcept;
};

// --------------------------------------------------------------------------- reading

struct ReadOptions {
    // Map the file (copy-on-write) instead of reading it into memory: records then view
    // the mapping. See Buffer::map_file for the caveat.
    bool mmap = false;
    // Torch zip checkpoints: verify the CRC-32 of each record read (a recorded CRC of 0
    // means none was computed, as torch.save writes under set_crc32_options(False)). With
    // mmap, verifying reads every page of the storages once: pass false to keep a mapped
    // load lazy.
    bool check_crc32 = true;
};

// ----------------------------------------------------------------------- safetensors

struct SafetensorsFile {
    TensorRecords tensors;                        // contiguous records, sorted by name
    std::map<std::string, std::string> metadata;  // the header's "__metadata__"
};

// Reads a safetensors file, validated as the reference implementation (the `safetensors`
// package) validates it: the header length (8 bytes, little-endian, at most 100,000,000
// and within the file), a well-formed UTF-8 JSON object, each tensor's dtype, shape and
// data_offsets (shape x itemsize == its byte range; ranges in order, neither overlapping
// nor leaving gaps, and covering the data exactly), unique names. Dtypes: BOOL, U8, I8,
// I16, I32, I64, F16, F32, F64; the others (BF16, F8_*, U16, C64...) raise an
// "unsupported dtype" error naming the tensor. Records view the file's bytes (one buffer
// for the whole file; a tensor whose data is not aligned to its element size gets its own
// aligned copy).
EMBER_API SafetensorsFile read_safetensors(const std::string& path,
                                           const ReadOptions& options = {});
// The same from bytes in memory (`name` prefixes the error messages).
EMBER_API SafetensorsFile deserialize_safetensors(std::shared_ptr<const Buffer> data,
                                                  const std::string& name = "<memory>");

// Writes `tensors` to `path` byte-for-byte as the Python `safetensors` package writes them
// (safetensors.numpy.save_file / safetensors.torch.save_file): tensors laid out by
// descending dtype (I64, F64, F32, I32, F16, I16, I8, U8, BOOL) then by name, the compact
// JSON header listing them in that order after "__metadata__" (written only when
// `metadata` is not empty; its keys sorted, where Python's order is arbitrary), padded with
// spaces to a multiple of 8 bytes. Each record's elements are written packed in row-major
// order (a non-contiguous record or a view of a shared storage is written as its own
// contiguous copy). Names must be unique, valid UTF-8 and not "__metadata__". The file is
// replaced atomically and durably, as Python Ember's save_file does: written to a temporary
// file beside it (.<name>.<host>.<pid>.<random>.tmp), fsync'ed, renamed over `path`, and
// the directory fsync'ed; temporaries that killed saves to the same path left behind (on
// this host, by processes that are gone) are removed first.
EMBER_API void write_safetensors(const std::string& path, const TensorRecords& tensors,
                                 const std::map<std::string, std::string>& metadata = {});
// The bytes write_safetensors would write.
EMBER_API std::vector<std::byte> serialize_safetensors(
    const TensorRecords& tensors, const std::map<std::string, std::string>& metadata = {});

// -------------------------------------------------------------- PyTorch zip checkpoints

// Reads the tensors of a PyTorch zip checkpoint (torch.save since PyTorch 1.6, and Python
// Ember's ember.save): a state dict (dict or OrderedDict of name -> tensor or Parameter),
// in file order. Nothing in the pickle is executed: a restricted unpickler resolves only
// the globals Python Ember's weights_only loader allows (collections.OrderedDict/Counter,
// torch._utils._rebuild_tensor_v2/_rebuild_tensor/_rebuild_parameter(_with_state),
// torch._tensor._rebuild_from_type_v2, torch.nn.parameter.Parameter, torch.<X>Storage,
// torch.storage.UntypedStorage, the torch dtypes, torch.device, torch.Size, builtins
// set/frozenset/complex/slice/bytearray, _codecs.encode); any other global raises, naming
// it (os, posix, nt and sys globals are refused as blocked modules). bfloat16 storages are
// widened to float32, exactly, as ember.load does. Tensors that shared a storage in Python
// share one Buffer; records keep PyTorch's strides and offsets.
//
// Values of the state dict that are None, bool, int, float, str or bytes are skipped (an
// "epoch": 3 beside the tensors); any other value (a nested dict, a list...) raises,
// naming its key. The OrderedDict's `_metadata` attribute (module versions, set by BUILD)
// is accepted and dropped. Legacy (pre-1.6, non-zip) files and TorchScript archives raise
// with a clear message. Records are stored, as torch.save writes them, or deflated (an
// archive re-packed by another zip tool): those are inflated (ember::io's inflate) into
// memory of their own, even with ReadOptions::mmap.
EMBER_API TensorRecords read_torch_checkpoint(const std::string& path,
                                              const ReadOptions& options = {});
// The state dict stored under `key` of a top-level dict: {"model": state_dict, "epoch": 3}
// is read with key "model" (the other entries are not inspected).
EMBER_API TensorRecords read_torch_checkpoint(const std::string& path, const std::string& key,
                                              const ReadOptions& options = {});
// The same from the bytes of a checkpoint in memory (`name` prefixes error messages).
EMBER_API TensorRecords deserialize_torch_checkpoint(std::shared_ptr<const Buffer> data,
                                                     const std::string& name = "<memory>",
                                                     const std::optional<std::string>& key = {},
                                                     bool check_crc32 = true);

// Writes `tensors` to `path` as a PyTorch zip checkpoint of a state dict: what Python's
// torch.save(state_dict, path) writes (the zip format of PyTorch >= 1.6), read by
// torch.load(path, weights_only=True), ember.load and read_torch_checkpoint. The archive
// folder is the file's name without its extension (as torch.save names it; "archive" when
// that is empty) and holds data.pkl (a protocol 2 pickle of an OrderedDict of name ->
// torch._utils._rebuild_tensor_v2(storage, 0, size, stride, False, OrderedDict()), in the
// order of `tensors`), .format_version, .storage_alignment, byteorder, data/<i> (the i-th
// tensor's elements, packed row-major in this machine's byte order, 64-byte aligned in the
// file), version ("3\n") and .data/serialization_id, every record stored (uncompressed) with
// its CRC-32, ending in ZIP64 and classic end of central directory records. Each record is
// written as its own contiguous storage: a non-contiguous record is packed, and records
// viewing one buffer are written separately (torch.load gives tensors that share no memory).
// Dtypes: every Ember dtype (torch.<X>Storage for float32/64/16, int8/16/32/64, uint8, bool,
// complex64/128); requires_grad is written as False (a state dict's tensors are detached).
// Names must be unique and valid UTF-8. The file is replaced atomically, as
// write_safetensors replaces it (a temporary beside it, fsync, rename): a failed write
// leaves `path` as it was and no temporary behind.
EMBER_API void write_torch_checkpoint(const std::string& path, const TensorRecords& tensors);
// The bytes write_torch_checkpoint would write, under the archive folder `archive_name` (a
// non-empty UTF-8 name without '/'; the serialization id is random: two calls differ in
// those 40 bytes).
EMBER_API std::vector<std::byte> serialize_torch_checkpoint(
    const TensorRecords& tensors, const std::string& archive_name = "archive");

// Any object of a PyTorch zip checkpoint, as a Value tree: what torch.save(obj) wrote for
// an obj made of None, bool, int, float, str, tuple, list, dict, OrderedDict and tensors
// (an optimizer's state_dict(); a dict of state dicts). The same restricted unpickler as
// read_torch_checkpoint (nothing is executed); an OrderedDict is read as a dict (its
// _metadata dropped), a Parameter as its tensor; other objects (a set, complex, bytes, an
// int beyond 64 bits, torch.device...) raise, naming where they are ("['state'][0]['x']").
// Nesting is limited to 500 levels, and a tree that shares containers (one list referenced
// twice) must not expand to more nodes than the pickle has objects and bytes.
EMBER_API Value read_torch_object(const std::string& path, const ReadOptions& options = {});
EMBER_API Value deserialize_torch_object(std::shared_ptr<const Buffer> data,
                                         const std::string& name = "<memory>",
                                         bool check_crc32 = true);

// Writes `object` as torch.save(obj, path) writes it (see write_torch_checkpoint for the
// archive): dicts as {} (a dict written by write_torch_checkpoint is an OrderedDict), tuples,
// lists, None, bools, ints, floats (BINFLOAT, exact) and strs as Python's pickler (protocol
// 2) writes them, each tensor as its own packed storage, numbered in the order met.
// Dict keys must be None, bool, int, float, str or a tuple of these, unique.
EMBER_API void write_torch_object(const std::string& path, const Value& object);
EMBER_API std::vector<std::byte> serialize_torch_object(const Value& object,
                                                        const std::string& archive_name = "archive");

// ------------------------------------------------------------------------ any format

enum class CheckpointFormat {
    Safetensors,  // 8-byte header length, then a JSON object
    TorchZip,     // a zip archive ("PK\x03\x04"): torch.save / ember.save
    Unknown,      // anything else, legacy torch.save pickles included
};

// The format of the file at `path`, from its first bytes (the extension is not looked at).
EMBER_API CheckpointFormat detect_checkpoint_format(const std::string& path);

// The tensors of a safetensors file (sorted by name) or of a torch zip checkpoint's state
// dict (file order), by detect_checkpoint_format; other files raise.
EMBER_API TensorRecords read_checkpoint(const std::string& path, const ReadOptions& options = {});

}  // namespace ember::serialize
