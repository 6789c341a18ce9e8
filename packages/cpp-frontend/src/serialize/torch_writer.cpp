// PyTorch zip checkpoints: write_torch_checkpoint / serialize_torch_checkpoint
// (include/ember/serialize.h), what Python's torch.save(state_dict, path) writes.
//
// The archive <name>/ holds, in torch.save's order: data.pkl (a protocol 2 pickle of an
// OrderedDict of name -> torch._utils._rebuild_tensor_v2(persistent storage, offset, size,
// stride, False, OrderedDict())), .format_version ("1"), .storage_alignment ("64"),
// byteorder, data/<key> (each tensor's elements, packed, the data 64-byte aligned in the
// file), version ("3\n") and .data/serialization_id. Records are stored (uncompressed) with
// their CRC-32 and sizes in the local headers; the end of the archive is a ZIP64 end of
// central directory record, its locator and the classic end record, as torch writes them.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <random>
#include <set>
#include <string_view>

#include "ember/serialize.h"
#include "serialize/common.h"
#include "serialize/file_io.h"

namespace ember::serialize {

using detail::fail;
using detail::quoted;

namespace {

constexpr std::size_t kAlignment = 64;  // torch's config.save.storage_alignment
constexpr uint64_t kMax32 = 0xffffffffu;
constexpr uint64_t kUtf8Names = 0x0800;  // general purpose flag 11: names are UTF-8 (as torch sets it)

// torch.<X>Storage of each dtype Ember has.
const char* storage_class(ScalarType t, const std::string& where, const std::string& name) {
    switch (t) {
        case ScalarType::Byte: return "ByteStorage";
        case ScalarType::Char: return "CharStorage";
        case ScalarType::Short: return "ShortStorage";
        case ScalarType::Int: return "IntStorage";
        case ScalarType::Long: return "LongStorage";
        case ScalarType::Half: return "HalfStorage";
        case ScalarType::Float: return "FloatStorage";
        case ScalarType::Double: return "DoubleStorage";
        case ScalarType::ComplexFloat: return "ComplexFloatStorage";
        case ScalarType::ComplexDouble: return "ComplexDoubleStorage";
        case ScalarType::Bool: return "BoolStorage";
    }
    fail(where, "tensor ", quoted(name), " has an unknown dtype code ", static_cast<int>(t));
}

// ---------------------------------------------------------------------------- pickle

// The opcodes of pickle protocol 2 this writer uses (Python's pickle.py names).
class Pickler {
public:
    Pickler() { out_ += "\x80\x02"; }  // PROTO 2

    void global(std::string_view module, std::string_view name) {
        out_ += 'c';
        out_ += module;
        out_ += '\n';
        out_ += name;
        out_ += '\n';
    }
    void mark() { out_ += '('; }
    void empty_tuple() { out_ += ')'; }
    void tuple() { out_ += 't'; }
    void reduce() { out_ += 'R'; }
    void binpersid() { out_ += 'Q'; }
    void setitems() { out_ += 'u'; }
    void newfalse() { out_ += '\x89'; }
    void boolean(bool b) { out_ += b ? '\x88' : '\x89'; }  // NEWTRUE, NEWFALSE
    void none() { out_ += 'N'; }
    void empty_list() { out_ += ']'; }
    void empty_dict() { out_ += '}'; }
    void append() { out_ += 'a'; }
    void appends() { out_ += 'e'; }
    void setitem() { out_ += 's'; }
    void stop() { out_ += '.'; }

    void binfloat(double d) {  // BINFLOAT: 8 bytes, big-endian IEEE 754
        uint64_t bits = 0;
        std::memcpy(&bits, &d, 8);
        out_ += 'G';
        for (int i = 7; i >= 0; --i) out_ += static_cast<char>((bits >> (8 * i)) & 0xff);
    }

    void str(std::string_view s) {  // BINUNICODE: 4-byte length, UTF-8
        out_ += 'X';
        le(s.size(), 4);
        out_ += s;
    }

    void integer(int64_t v) {
        if (v >= 0 && v < 0x100) {  // BININT1
            out_ += 'K';
            le(static_cast<uint64_t>(v), 1);
        } else if (v >= 0 && v < 0x10000) {  // BININT2
            out_ += 'M';
            le(static_cast<uint64_t>(v), 2);
        } else if (v >= INT32_MIN && v <= INT32_MAX) {  // BININT: signed 32-bit
            out_ += 'J';
            le(static_cast<uint64_t>(static_cast<uint32_t>(static_cast<int32_t>(v))), 4);
        } else {  // LONG1: 8 bytes, two's complement, little-endian
            out_ += '\x8a';
            out_ += '\x08';
            le(static_cast<uint64_t>(v), 8);
        }
    }

    // A tuple of integers (TUPLE1/2/3 as Python's pickler writes them, else MARK ... TUPLE).
    void int_tuple(const std::vector<int64_t>& values) {
        if (values.empty()) return empty_tuple();
        if (values.size() > 3) mark();
        for (int64_t v : values) integer(v);
        if (values.size() > 3) return tuple();
        tuple_of_size(values.size());
    }
    // TUPLE1, TUPLE2 or TUPLE3 (n in 1..3): the last n items on the stack.
    void tuple_of_size(std::size_t n) { out_ += static_cast<char>(0x84 + n); }

    const std::string& bytes() const noexcept { return out_; }

private:
    void le(uint64_t v, int n) {
        for (int i = 0; i < n; ++i) out_ += static_cast<char>((v >> (8 * i)) & 0xff);
    }
    std::string out_;
};

// ------------------------------------------------------------------------------- zip

// One record of the archive: its name (under the archive folder) and its bytes.
struct Record {
    std::string name;           // "<archive>/<record>"
    const std::byte* data = nullptr;
    std::size_t size = 0;
    uint32_t crc = 0;
    uint64_t offset = 0;        // of its local header
    std::string local_header;   // the header, its name and its extra fields
};

void put16(std::string& s, uint64_t v) {
    for (int i = 0; i < 2; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
}
void put32(std::string& s, uint64_t v) {
    for (int i = 0; i < 4; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
}
void put64(std::string& s, uint64_t v) {
    for (int i = 0; i < 8; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
}

// The local header of `r` at `offset`: sizes and CRC in place (no data descriptor), a ZIP64
// field when the record reaches 4 GiB, and an "FB" padding field that puts the data at a
// multiple of kAlignment, as torch's writer does.
std::string local_header(const Record& r, uint64_t offset) {
    const bool zip64 = r.size >= kMax32;
    std::string h;
    put32(h, 0x04034b50);
    put16(h, zip64 ? 45 : 20);  // version needed to extract
    put16(h, kUtf8Names);
    put16(h, 0);                // method: stored
    put16(h, 0);                // time
    put16(h, 0x21);             // date: 1980-01-01
    put32(h, r.crc);
    put32(h, zip64 ? kMax32 : r.size);
    put32(h, zip64 ? kMax32 : r.size);
    put16(h, r.name.size());
    std::string extra;
    if (zip64) {
        put16(extra, 0x0001);
        put16(extra, 16);
        put64(extra, r.size);
        put64(extra, r.size);
    }
    const uint64_t start = offset + 30 + r.name.size() + extra.size();
    std::size_t pad = static_cast<std::size_t>((kAlignment - start % kAlignment) % kAlignment);
    if (pad != 0 && pad < 4) pad += kAlignment;
    if (pad != 0) {
        extra += "FB";
        put16(extra, pad - 4);
        extra.append(pad - 4, 'Z');
    }
    put16(h, extra.size());
    h += r.name;
    h += extra;
    return h;
}

std::string central_header(const Record& r) {
    const bool big_size = r.size >= kMax32, big_offset = r.offset >= kMax32;
    std::string extra;
    if (big_size || big_offset) {
        put16(extra, 0x0001);
        put16(extra, (big_size ? 16 : 0) + (big_offset ? 8 : 0));
        if (big_size) {
            put64(extra, r.size);
            put64(extra, r.size);
        }
        if (big_offset) put64(extra, r.offset);
    }
    std::string h;
    put32(h, 0x02014b50);
    put16(h, 45);  // version made by
    put16(h, big_size || big_offset ? 45 : 20);
    put16(h, kUtf8Names);
    put16(h, 0);
    put16(h, 0);
    put16(h, 0x21);
    put32(h, r.crc);
    put32(h, big_size ? kMax32 : r.size);
    put32(h, big_size ? kMax32 : r.size);
    put16(h, r.name.size());
    put16(h, extra.size());
    put16(h, 0);  // comment
    put16(h, 0);  // disk
    put16(h, 0);  // internal attributes
    put32(h, 0);  // external attributes
    put32(h, big_offset ? kMax32 : r.offset);
    h += r.name;
    h += extra;
    return h;
}

// The central directory and the end records, for a directory starting at `cd_offset`.
std::string directory(const std::vector<Record>& records, uint64_t cd_offset) {
    std::string cd;
    for (const Record& r : records) cd += central_header(r);
    const uint64_t cd_size = cd.size(), end64_offset = cd_offset + cd_size, n = records.size();
    put32(cd, 0x06064b50);  // ZIP64 end of central directory
    put64(cd, 44);
    put16(cd, 45);
    put16(cd, 45);
    put32(cd, 0);
    put32(cd, 0);
    put64(cd, n);
    put64(cd, n);
    put64(cd, cd_size);
    put64(cd, cd_offset);
    put32(cd, 0x07064b50);  // its locator
    put32(cd, 0);
    put64(cd, end64_offset);
    put32(cd, 1);
    put32(cd, 0x06054b50);  // end of central directory
    put16(cd, 0);
    put16(cd, 0);
    put16(cd, n < 0xffff ? n : 0xffff);
    put16(cd, n < 0xffff ? n : 0xffff);
    put32(cd, cd_size < kMax32 ? cd_size : kMax32);
    put32(cd, cd_offset < kMax32 ? cd_offset : kMax32);
    put16(cd, 0);
    return cd;
}

bool little_endian_host() {
    const uint16_t one = 1;
    unsigned char first = 0;
    std::memcpy(&first, &one, 1);
    return first == 1;
}

// 40 decimal digits, as torch's serialization ids.
std::string serialization_id() {
    std::random_device rd;
    std::string id;
    while (id.size() < 40) id += static_cast<char>('0' + rd() % 10);
    return id;
}

// The archive's records and the bytes it owns (the records of `tensors` point into theirs).
struct Archive {
    std::vector<Record> records;
    std::deque<std::string> texts;                // data.pkl and the small records (a deque: they never move)
    std::vector<std::vector<std::byte>> copies;   // packed copies of non-contiguous tensors
};

void check_archive_name(const std::string& archive, const std::string& where) {
    EMBER_CHECK(!archive.empty() && archive.find('/') == std::string::npos &&
                    archive.find('\0') == std::string::npos && archive != "." && archive != ".." &&
                    detail::valid_utf8(archive),
                where, ": invalid archive name ", quoted(archive));
}

// torch._utils._rebuild_tensor_v2(persistent storage `key`, 0, size, stride, False,
// OrderedDict()): the record `r` (checked) as its own packed storage.
void pickle_tensor(Pickler& p, const TensorRecord& r, std::size_t key, const char* storage) {
    p.global("torch._utils", "_rebuild_tensor_v2");
    p.mark();
    p.mark();  // the persistent id ('storage', torch.<X>Storage, key, 'cpu', numel)
    p.str("storage");
    p.global("torch", storage);
    p.str(std::to_string(key));
    p.str("cpu");
    p.integer(r.numel());
    p.tuple();
    p.binpersid();
    p.integer(0);  // storage offset: each tensor is written as its own packed storage
    p.int_tuple(r.shape);
    p.int_tuple(contiguous_strides(r.shape));
    p.newfalse();  // requires_grad
    p.global("collections", "OrderedDict");  // backward hooks
    p.empty_tuple();
    p.reduce();
    p.tuple();
    p.reduce();
}

constexpr std::size_t kBatch = 1000;  // Python's pickler appends and sets items in batches of 1000

// Python's pickler's appends/setitems batching: one item with APPEND/SETITEM, more between
// MARK and APPENDS/SETITEMS, kBatch at a time. `write(i)` writes the i-th item (or pair).
template <typename Write>
void batched(Pickler& p, std::size_t n, bool dict, Write&& write) {
    for (std::size_t start = 0; start < n; start += kBatch) {
        const std::size_t end = std::min(n, start + kBatch);
        if (end - start == 1) {
            write(start);
            dict ? p.setitem() : p.append();
            continue;
        }
        p.mark();
        for (std::size_t i = start; i < end; ++i) write(i);
        dict ? p.setitems() : p.appends();
    }
}

// A dict key's identity under Python's equality (1 == 1.0 == True), for the duplicate check;
// throws for a key Python cannot hash.
std::string key_identity(const Value& k, const std::string& where) {
    switch (k.kind) {
        case Value::Kind::None: return "N";
        case Value::Kind::Bool: return "i" + std::to_string(int(k.boolean));
        case Value::Kind::Int: return "i" + std::to_string(k.integer);
        case Value::Kind::Float: {
            if (std::trunc(k.real) == k.real && std::fabs(k.real) < 9.2e18) {
                return "i" + std::to_string(static_cast<int64_t>(k.real));
            }
            uint64_t bits = 0;
            std::memcpy(&bits, &k.real, 8);
            return "f" + std::to_string(bits);
        }
        case Value::Kind::Str: return "s" + std::to_string(k.text.size()) + ":" + k.text;
        case Value::Kind::Tuple: {
            std::string id = "(";
            for (const Value& item : k.items) id += key_identity(item, where) + ",";
            return id + ")";
        }
        default: fail(where, "a dict key of type ", k.type_name(), " (unhashable in Python)");
    }
}

constexpr int kMaxDepth = 500;  // as read_torch_object

// Pickles `v`, checking it, and lists its tensors in the order met.
void pickle_value(Pickler& p, const Value& v, std::vector<const TensorRecord*>& tensors,
                  const std::string& where, int depth) {
    if (depth > kMaxDepth) fail(where, "the object is nested more than ", kMaxDepth, " levels deep");
    switch (v.kind) {
        case Value::Kind::None: p.none(); return;
        case Value::Kind::Bool: p.boolean(v.boolean); return;
        case Value::Kind::Int: p.integer(v.integer); return;
        case Value::Kind::Float: p.binfloat(v.real); return;
        case Value::Kind::Str:
            if (!detail::valid_utf8(v.text)) fail(where, "the str ", quoted(v.text), " is not valid UTF-8");
            p.str(v.text);
            return;
        case Value::Kind::Tensor: {
            const std::string name = "#" + std::to_string(tensors.size());
            check_record(v.tensor, where + ": tensor " + name);
            pickle_tensor(p, v.tensor, tensors.size(), storage_class(v.tensor.dtype, where, name));
            tensors.push_back(&v.tensor);
            return;
        }
        case Value::Kind::Tuple: {
            const std::size_t n = v.items.size();
            if (n == 0) return p.empty_tuple();
            if (n > 3) p.mark();
            for (const Value& item : v.items) pickle_value(p, item, tensors, where, depth + 1);
            if (n > 3) return p.tuple();
            return p.tuple_of_size(n);
        }
        case Value::Kind::List:
            p.empty_list();
            batched(p, v.items.size(), false,
                    [&](std::size_t i) { pickle_value(p, v.items[i], tensors, where, depth + 1); });
            return;
        case Value::Kind::Dict: {
            EMBER_CHECK(v.items.size() % 2 == 0, where, ": a dict Value with an odd number of items");
            std::set<std::string> keys;
            for (std::size_t i = 0; i < v.dict_size(); ++i) {
                if (!keys.insert(key_identity(v.key(i), where)).second) {
                    fail(where, "a dict whose key ", i, " (a ", v.key(i).type_name(), ") equals an earlier one");
                }
            }
            p.empty_dict();
            batched(p, v.dict_size(), true, [&](std::size_t i) {
                pickle_value(p, v.key(i), tensors, where, depth + 1);
                pickle_value(p, v.value(i), tensors, where, depth + 1);
            });
            return;
        }
    }
    fail(where, "a Value of unknown kind ", static_cast<int>(v.kind));
}

Archive prepare_pickled(std::string pickle, const std::vector<const TensorRecord*>& tensors,
                        const std::string& archive);

Archive prepare(const TensorRecords& tensors, const std::string& archive, const std::string& where) {
    check_archive_name(archive, where);
    std::set<std::string_view> names;
    for (const auto& [name, record] : tensors) {
        if (!detail::valid_utf8(name)) fail(where, "tensor name ", quoted(name), " is not valid UTF-8");
        if (!names.insert(name).second) fail(where, "duplicate tensor name ", quoted(name));
        check_record(record, where + ": tensor " + quoted(name));
        storage_class(record.dtype, where, name);
    }

    Pickler p;
    p.global("collections", "OrderedDict");
    p.empty_tuple();
    p.reduce();
    if (!tensors.empty()) p.mark();
    std::vector<const TensorRecord*> records;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const auto& [name, r] = tensors[i];
        p.str(name);
        pickle_tensor(p, r, i, storage_class(r.dtype, where, name));
        records.push_back(&r);
    }
    if (!tensors.empty()) p.setitems();
    p.stop();
    return prepare_pickled(p.bytes(), records, archive);
}

Archive prepare_object(const Value& object, const std::string& archive, const std::string& where) {
    check_archive_name(archive, where);
    Pickler p;
    std::vector<const TensorRecord*> records;
    pickle_value(p, object, records, where, 0);
    p.stop();
    return prepare_pickled(p.bytes(), records, archive);
}

// The archive of data.pkl `pickle` whose persistent storage i is tensors[i] (checked).
Archive prepare_pickled(std::string pickle, const std::vector<const TensorRecord*>& tensors,
                        const std::string& archive) {
    Archive a;
    const std::string prefix = archive + "/";
    auto text_record = [&](const std::string& name, std::string text) {
        a.texts.push_back(std::move(text));
        const std::string& t = a.texts.back();
        Record r;
        r.name = prefix + name;
        r.data = reinterpret_cast<const std::byte*>(t.data());
        r.size = t.size();
        a.records.push_back(std::move(r));
    };
    text_record("data.pkl", std::move(pickle));
    text_record(".format_version", "1");
    text_record(".storage_alignment", std::to_string(kAlignment));
    text_record("byteorder", little_endian_host() ? "little" : "big");
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const TensorRecord& t = *tensors[i];
        Record r;
        r.name = prefix + "data/" + std::to_string(i);
        r.size = t.nbytes();
        if (r.size != 0 && t.is_contiguous()) {
            r.data = t.data();
        } else if (r.size != 0) {
            a.copies.push_back(contiguous_bytes(t));
            r.data = a.copies.back().data();
        }
        a.records.push_back(std::move(r));
    }
    text_record("version", "3\n");
    text_record(".data/serialization_id", serialization_id());
    uint64_t offset = 0;
    for (Record& r : a.records) {
        r.crc = r.size == 0 ? 0 : detail::crc32(r.data, r.size);
        r.offset = offset;
        r.local_header = local_header(r, offset);
        offset += r.local_header.size() + r.size;
    }
    return a;
}

template <typename Sink>
void emit(const Archive& a, Sink&& sink) {
    uint64_t offset = 0;
    for (const Record& r : a.records) {
        sink(r.local_header.data(), r.local_header.size());
        if (r.size != 0) sink(r.data, r.size);
        offset += r.local_header.size() + r.size;
    }
    const std::string end = directory(a.records, offset);
    sink(end.data(), end.size());
}

// torch.save's archive name: the file's name without its extension ("archive" when that is
// empty, or not UTF-8: the records' names are flagged as UTF-8).
std::string archive_name_of(const std::string& path) {
    const auto slash = path.rfind('/');
    std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    const auto dot = base.rfind('.');
    if (dot != std::string::npos) base.resize(dot);
    const bool usable = !base.empty() && base != "." && base != ".." && detail::valid_utf8(base);
    return usable ? base : "archive";
}

}  // namespace

std::vector<std::byte> serialize_torch_checkpoint(const TensorRecords& tensors,
                                                  const std::string& archive_name) {
    Archive a = prepare(tensors, archive_name, "serialize_torch_checkpoint");
    std::vector<std::byte> out;
    emit(a, [&](const void* data, std::size_t n) {
        const auto* b = static_cast<const std::byte*>(data);
        out.insert(out.end(), b, b + n);
    });
    return out;
}

std::vector<std::byte> serialize_torch_object(const Value& object, const std::string& archive_name) {
    Archive a = prepare_object(object, archive_name, "serialize_torch_object");
    std::vector<std::byte> out;
    emit(a, [&](const void* data, std::size_t n) {
        const auto* b = static_cast<const std::byte*>(data);
        out.insert(out.end(), b, b + n);
    });
    return out;
}

void write_torch_object(const std::string& path, const Value& object) {
    Archive a = prepare_object(object, archive_name_of(path), path);
    detail::AtomicFile file(path);
    emit(a, [&](const void* data, std::size_t n) { file.write(data, n); });
    file.commit();
}

void write_torch_checkpoint(const std::string& path, const TensorRecords& tensors) {
    Archive a = prepare(tensors, archive_name_of(path), path);
    detail::AtomicFile file(path);
    emit(a, [&](const void* data, std::size_t n) { file.write(data, n); });
    file.commit();
}

}  // namespace ember::serialize
