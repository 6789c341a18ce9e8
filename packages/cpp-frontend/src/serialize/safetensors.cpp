// safetensors: read_safetensors / write_safetensors (include/ember/serialize.h).
//
// The format: 8 bytes (little-endian u64) N, N bytes of UTF-8 JSON
//   {"__metadata__": {"k": "v"}, "name": {"dtype": "F32", "shape": [2, 3],
//    "data_offsets": [begin, end]}, ...}
// then the data: each tensor's packed little-endian elements at [begin, end) of it.
#include <algorithm>
#include <cstring>
#include <set>
#include <string_view>

#include "ember/serialize.h"
#include "serialize/common.h"
#include "serialize/file_io.h"
#include "serialize/json.h"

namespace ember::serialize {

using detail::fail;
using detail::quoted;

namespace {

constexpr uint64_t kMaxHeaderSize = 100000000;  // the reference implementation's limit

struct DtypeInfo {
    ScalarType type;
    const char* name;
    int rank;  // the safetensors Dtype enum's order: files lay tensors out by descending rank
};

constexpr DtypeInfo kDtypes[] = {
    {ScalarType::Bool, "BOOL", 0},  {ScalarType::Byte, "U8", 4},   {ScalarType::Char, "I8", 5},
    {ScalarType::Short, "I16", 9},  {ScalarType::Half, "F16", 11}, {ScalarType::Int, "I32", 13},
    {ScalarType::Float, "F32", 15}, {ScalarType::ComplexFloat, "C64", 16},
    {ScalarType::Double, "F64", 17}, {ScalarType::Long, "I64", 18},
};

// The safetensors dtypes Ember has no counterpart for (the reference's other variants).
constexpr const char* kOtherDtypes[] = {"F4",         "F6_E2M3",     "F6_E3M2", "F8_E5M2",
                                        "F8_E4M3",    "F8_E8M0",     "F8_E4M3FNUZ",
                                        "F8_E5M2FNUZ", "U16",        "BF16",    "U32",
                                        "U64"};

const DtypeInfo& info_of(ScalarType t, const std::string& where, const std::string& name) {
    for (const auto& d : kDtypes) {
        if (d.type == t) return d;
    }
    if (t == ScalarType::ComplexDouble) {
        fail(where, "tensor ", quoted(name), " is complex128, which safetensors cannot store (its only complex "
             "dtype is C64: convert with .to(kComplexFloat), or store view_as_real(t), which is float64)");
    }
    fail(where, "tensor ", quoted(name), " has an unknown dtype code ", static_cast<int>(t));
}

constexpr const char* kSupported = "BOOL, U8, I8, I16, I32, I64, F16, F32, F64, C64";

std::string dtype_advice(std::string_view dtype) {
    const std::string convert =
        "convert it first, e.g. with safetensors.torch: save_file({k: ";
    const std::string rest = " for k, v in load_file(path).items()}, new_path)";
    if (dtype == "BF16") {
        return "bfloat16 arrives with Ember's mixed-precision support; " + convert +
               "v.float()" + rest +
               ", or torch.save the tensors and read them with read_torch_checkpoint, which "
               "widens bfloat16 to float32 exactly";
    }
    if (dtype[0] == 'F') return "Ember has no floats narrower than 16 bits; " + convert + "v.float()" + rest;
    if (dtype[0] == 'C') return "Ember has no complex dtypes; " + convert + "torch.view_as_real(v)" + rest;
    return "Ember's only unsigned integer dtype is uint8; " + convert + "v.long()" + rest;
}

ScalarType parse_dtype(const std::string& text, const std::string& where,
                       const std::string& name) {
    for (const auto& d : kDtypes) {
        if (text == d.name) return d.type;
    }
    for (const char* other : kOtherDtypes) {
        if (text == other) {
            fail(where, "tensor ", quoted(name), " has dtype ", text,
                 ", which Ember does not support (supported: ", kSupported, "; ",
                 dtype_advice(text), ")");
        }
    }
    fail(where, "tensor ", quoted(name), " has an unknown dtype ", quoted(text),
         " (safetensors dtypes: BOOL, F4, F6_E2M3, F6_E3M2, U8, I8, F8_E5M2, F8_E4M3, "
         "F8_E8M0, F8_E4M3FNUZ, F8_E5M2FNUZ, I16, U16, F16, BF16, I32, U32, F32, C64, F64, "
         "I64, U64)");
}

struct HeaderEntry {
    std::string name;
    ScalarType dtype;
    std::vector<uint64_t> shape;
    uint64_t begin = 0, end = 0;
};

struct Header {
    std::vector<HeaderEntry> entries;
    std::map<std::string, std::string> metadata;
};

HeaderEntry parse_entry(detail::JsonCursor& json, std::string name, const std::string& where) {
    HeaderEntry e;
    e.name = std::move(name);
    bool has_dtype = false, has_shape = false, has_offsets = false;
    json.expect('{', "an object describing the tensor");
    if (!json.consume('}')) {
        do {
            std::string field = json.read_string();
            json.expect(':', "':'");
            if (field == "dtype" || field == "shape" || field == "data_offsets") {
                bool& seen = field == "dtype" ? has_dtype : field == "shape" ? has_shape : has_offsets;
                if (seen) json.error("duplicate field " + quoted(field) + " in tensor " + quoted(e.name));
                seen = true;
            }
            if (field == "dtype") {
                e.dtype = parse_dtype(json.read_string(), where, e.name);
            } else if (field == "shape") {
                json.expect('[', "the shape (an array)");
                if (!json.consume(']')) {
                    do {
                        e.shape.push_back(json.read_u64("a dimension size"));
                    } while (json.consume(','));
                    json.expect(']', "',' or ']'");
                }
            } else if (field == "data_offsets") {
                json.expect('[', "data_offsets (an array of 2 integers)");
                e.begin = json.read_u64("a data offset");
                json.expect(',', "',' (data_offsets has 2 elements)");
                e.end = json.read_u64("a data offset");
                json.expect(']', "']' (data_offsets has 2 elements)");
            } else {
                json.skip_value(2);  // unknown fields are ignored, as the reference does
            }
        } while (json.consume(','));
        json.expect('}', "',' or '}'");
    }
    if (!has_dtype || !has_shape || !has_offsets) {
        json.error("tensor " + quoted(e.name) + " has no " +
                   (!has_dtype ? "dtype" : !has_shape ? "shape" : "data_offsets") + " field");
    }
    return e;
}

Header parse_header(std::string_view text, const std::string& where) {
    if (!detail::valid_utf8(text)) fail(where, "the safetensors header is not valid UTF-8");
    detail::JsonCursor json(text, where);
    Header h;
    std::set<std::string> names;
    bool has_metadata = false;
    json.expect('{', "'{' (the header is a JSON object)");
    if (!json.consume('}')) {
        do {
            std::string key = json.read_string();
            json.expect(':', "':'");
            if (key == "__metadata__") {
                if (has_metadata) json.error("duplicate field '__metadata__'");
                has_metadata = true;
                if (json.consume_null()) continue;
                json.expect('{', "__metadata__ as an object of strings");
                if (json.consume('}')) continue;
                do {
                    std::string k = json.read_string();
                    json.expect(':', "':'");
                    if (json.peek() != '"') {
                        json.error("the value of __metadata__ key " + quoted(k) + " is not a string");
                    }
                    h.metadata[k] = json.read_string();  // a repeated key: the last wins
                } while (json.consume(','));
                json.expect('}', "',' or '}'");
                continue;
            }
            if (!names.insert(key).second) fail(where, "duplicate tensor name ", quoted(key));
            h.entries.push_back(parse_entry(json, std::move(key), where));
        } while (json.consume(','));
        json.expect('}', "',' or '}'");
    }
    if (!json.at_end()) json.error("trailing characters after the header object");
    return h;
}

// A slice of `data` for a tensor of `dtype`, copied to an aligned buffer when the file puts
// it at an address that is not a multiple of its element size.
std::shared_ptr<const Buffer> tensor_storage(const std::shared_ptr<const Buffer>& data,
                                             std::size_t offset, std::size_t nbytes,
                                             ScalarType dtype) {
    auto slice = data->slice(offset, nbytes);
    auto address = reinterpret_cast<std::uintptr_t>(slice->data());
    if (nbytes != 0 && address % element_size(dtype) != 0) {
        return Buffer::copy_of(slice->data(), nbytes);
    }
    return slice;
}

}  // namespace

SafetensorsFile deserialize_safetensors(std::shared_ptr<const Buffer> data,
                                        const std::string& name) {
    EMBER_CHECK(data != nullptr, name, ": no data");
    const std::size_t size = data->size();
    if (size < 8) {
        fail(name, "not a safetensors file: ", size, " bytes, fewer than the 8 of the header length");
    }
    const uint64_t n = detail::load_le64(data->data());
    if (n > size - 8) {
        fail(name, "safetensors header length ", n, " exceeds the file size ", size);
    }
    if (n > kMaxHeaderSize) {
        fail(name, "safetensors header length ", n, " exceeds the limit of ", kMaxHeaderSize,
             " bytes");
    }
    std::string_view text(reinterpret_cast<const char*>(data->data()) + 8,
                          static_cast<std::size_t>(n));
    Header header = parse_header(text, name);

    // Validate as the reference does: in offset order, each tensor starts where the previous
    // one ended, holds exactly shape x itemsize bytes, and the last ends at the file's end.
    std::vector<const HeaderEntry*> order;
    order.reserve(header.entries.size());
    for (const auto& e : header.entries) order.push_back(&e);
    std::sort(order.begin(), order.end(), [](const HeaderEntry* a, const HeaderEntry* b) {
        return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
    });
    uint64_t expected = 0;
    for (const HeaderEntry* e : order) {
        if (e->begin != expected || e->end < e->begin) {
            fail(name, "invalid data_offsets [", e->begin, ", ", e->end, "] for tensor ",
                 quoted(e->name), ": tensors must tile the data without gaps or overlaps (",
                 "this one should start at byte ", expected, ")");
        }
        uint64_t numel = 1, nbytes = 0;
        bool ok = true;
        for (uint64_t d : e->shape) {
            ok = ok && d <= static_cast<uint64_t>(INT64_MAX) && detail::checked_mul(numel, d, &numel);
        }
        ok = ok && numel <= static_cast<uint64_t>(INT64_MAX) &&
             detail::checked_mul(numel, element_size(e->dtype), &nbytes);
        if (!ok) {
            fail(name, "the shape of tensor ", quoted(e->name),
                 " overflows when computing its size in bytes");
        }
        if (nbytes != e->end - e->begin) {
            std::string shape;
            for (std::size_t i = 0; i < e->shape.size(); ++i) {
                shape += (i ? ", " : "") + std::to_string(e->shape[i]);
            }
            fail(name, "tensor ", quoted(e->name), " of dtype ",
                 info_of(e->dtype, name, e->name).name, " and shape [", shape, "] needs ",
                 nbytes, " bytes, but its data_offsets [", e->begin, ", ", e->end, "] span ",
                 e->end - e->begin);
        }
        expected = e->end;
    }
    const uint64_t data_size = size - 8 - n;
    if (expected != data_size) {
        fail(name, "the tensors' data_offsets cover ", expected, " bytes but the file has ",
             data_size, " bytes of data after the header (incomplete metadata, file not fully "
             "covered)");
    }

    SafetensorsFile out;
    out.metadata = std::move(header.metadata);
    out.tensors.reserve(header.entries.size());
    const std::size_t data_start = 8 + static_cast<std::size_t>(n);
    for (auto& e : header.entries) {
        TensorRecord r;
        r.dtype = e.dtype;
        r.shape.assign(e.shape.begin(), e.shape.end());
        r.strides = contiguous_strides(r.shape);
        r.storage = tensor_storage(data, data_start + static_cast<std::size_t>(e.begin),
                                   static_cast<std::size_t>(e.end - e.begin), e.dtype);
        out.tensors.emplace_back(std::move(e.name), std::move(r));
    }
    std::sort(out.tensors.begin(), out.tensors.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    return out;
}

SafetensorsFile read_safetensors(const std::string& path, const ReadOptions& options) {
    std::shared_ptr<const Buffer> data =
        options.mmap ? Buffer::map_file(path) : Buffer::read_file(path);
    return deserialize_safetensors(std::move(data), path);
}

// ----------------------------------------------------------------------------- writing

namespace {

struct Prepared {
    std::string header;                // the 8-byte length, the JSON and its padding
    std::vector<std::size_t> order;    // indices into the records, in file order
};

Prepared prepare(const TensorRecords& tensors, const std::map<std::string, std::string>& metadata,
                 const std::string& where) {
    std::set<std::string_view> names;
    for (const auto& [name, record] : tensors) {
        if (name == "__metadata__") fail(where, "a tensor cannot be named '__metadata__'");
        if (!detail::valid_utf8(name)) fail(where, "tensor name ", quoted(name), " is not valid UTF-8");
        if (!names.insert(name).second) fail(where, "duplicate tensor name ", quoted(name));
        check_record(record, where + ": tensor " + quoted(name));
        info_of(record.dtype, where, name);
    }
    for (const auto& [k, v] : metadata) {
        if (!detail::valid_utf8(k) || !detail::valid_utf8(v)) {
            fail(where, "metadata entry ", quoted(k), " is not valid UTF-8");
        }
    }
    Prepared p;
    p.order.resize(tensors.size());
    for (std::size_t i = 0; i < tensors.size(); ++i) p.order[i] = i;
    std::sort(p.order.begin(), p.order.end(), [&](std::size_t a, std::size_t b) {
        int ra = info_of(tensors[a].second.dtype, where, tensors[a].first).rank;
        int rb = info_of(tensors[b].second.dtype, where, tensors[b].first).rank;
        return ra != rb ? ra > rb : tensors[a].first < tensors[b].first;
    });

    std::string json = "{";
    bool first = true;
    if (!metadata.empty()) {
        json += "\"__metadata__\":{";
        for (const auto& [k, v] : metadata) {
            if (!first) json += ',';
            first = false;
            detail::append_json_string(json, k);
            json += ':';
            detail::append_json_string(json, v);
        }
        json += '}';
        first = false;
    }
    uint64_t offset = 0;
    for (std::size_t i : p.order) {
        const auto& [name, r] = tensors[i];
        if (!first) json += ',';
        first = false;
        detail::append_json_string(json, name);
        json += ":{\"dtype\":\"";
        json += info_of(r.dtype, where, name).name;
        json += "\",\"shape\":[";
        for (std::size_t d = 0; d < r.shape.size(); ++d) {
            if (d) json += ',';
            json += std::to_string(r.shape[d]);
        }
        uint64_t end = offset + r.nbytes();
        json += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(end) + "]}";
        offset = end;
    }
    json += '}';
    json.append((8 - json.size() % 8) % 8, ' ');
    p.header.resize(8);
    detail::store_le64(reinterpret_cast<std::byte*>(p.header.data()), json.size());
    p.header += json;
    return p;
}

template <typename Sink>
void emit(const TensorRecords& tensors, const Prepared& p, Sink&& sink) {
    sink(p.header.data(), p.header.size());
    std::vector<std::byte> scratch;
    for (std::size_t i : p.order) {
        const TensorRecord& r = tensors[i].second;
        std::size_t n = r.nbytes();
        if (n == 0) continue;
        if (r.is_contiguous()) {
            sink(r.data(), n);
        } else {
            scratch.resize(n);
            copy_contiguous_bytes(r, scratch.data(), n);
            sink(scratch.data(), n);
        }
    }
}

}  // namespace

std::vector<std::byte> serialize_safetensors(const TensorRecords& tensors,
                                             const std::map<std::string, std::string>& metadata) {
    Prepared p = prepare(tensors, metadata, "serialize_safetensors");
    std::vector<std::byte> out;
    std::size_t total = p.header.size();
    for (const auto& t : tensors) total += t.second.nbytes();
    out.reserve(total);
    emit(tensors, p, [&](const void* data, std::size_t n) {
        const auto* b = static_cast<const std::byte*>(data);
        out.insert(out.end(), b, b + n);
    });
    return out;
}

void write_safetensors(const std::string& path, const TensorRecords& tensors,
                       const std::map<std::string, std::string>& metadata) {
    Prepared p = prepare(tensors, metadata, path);
    detail::AtomicFile file(path);
    emit(tensors, p, [&](const void* data, std::size_t n) { file.write(data, n); });
    file.commit();
}

}  // namespace ember::serialize
