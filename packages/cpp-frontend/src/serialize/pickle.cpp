// The restricted unpickler of data.pkl (see pickle.h), after Python Ember's
// ember/serialization/_unpickler.py (WeightsUnpickler) and _pickle.py (the allow-list).
//
// Objects live in an arena (a deque, so their addresses are stable) and refer to each other
// by plain pointers: a pickle can build cycles and deep nests through its memo, and neither
// leaks nor recurses when the arena is destroyed. The arena's memory is budgeted, so copies
// a pickle asks for over and over (OrderedDict(d), _codecs.encode(s)) cannot exhaust memory.
#include "serialize/pickle.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <deque>
#include <unordered_map>
#include <vector>

#include "serialize/common.h"

namespace ember::serialize::detail {

namespace {

constexpr uint64_t kMaxOps = 50000000;     // opcodes run by one pickle (as Python Ember)
constexpr std::size_t kMaxMarks = 10000;   // MARK nesting (as Python Ember)
constexpr int kMaxKeyDepth = 100;          // nesting of a dict key (tuples in tuples...)
constexpr std::size_t kMaxDims = 64;       // dimensions of a tensor (as Python Ember)

enum class Kind : uint8_t {
    None, Bool, Int, BigInt, Float, Str, Bytes, Tuple, List, Dict, Set, FrozenSet, Complex,
    Slice, Global, Storage, Tensor, Device,
};

enum class G : uint8_t {  // the allow-listed globals
    OrderedDict, Counter, Set, FrozenSet, Complex, Slice, Bytearray, Encode, RebuildTensorV2,
    RebuildTensor, RebuildParameter, RebuildFromTypeV2, TensorType, ParameterType, Device,
    Size, StorageType, Dtype,
};

enum class DictKind : uint8_t { Plain, Ordered, Counter };

struct Obj;
using Index = std::unordered_multimap<uint64_t, std::size_t>;

struct Obj {
    Kind kind = Kind::None;
    bool boolean = false;
    DictKind dict_kind = DictKind::Plain;
    G global = G::OrderedDict;
    int code = 0;                         // Global: the dtype code of a storage type or dtype
    int64_t integer = 0;                  // Int
    double real = 0, imag = 0;            // Float, Complex
    std::string text;                     // Str, Bytes, BigInt (raw bytes), Device, Global name
    std::vector<Obj*> items;              // Tuple/List/Set/FrozenSet/Slice; Dict: k0, v0, k1, ...
    std::unique_ptr<Index> index;         // Dict, Set, FrozenSet: key hash -> position
    std::unique_ptr<TensorRecord> tensor;  // Tensor
    std::shared_ptr<const Buffer> buffer;  // Storage
    ScalarType dtype = ScalarType::Float;  // Storage
    uint64_t numel = 0;                    // Storage
};

bool is_floating(ScalarType t) { return ::ember::is_floating_point(t); }

// The Python-side name of a dtype code, for messages and the allow-list.
struct DtypeName {
    int code;
    const char* dtype;    // torch.<dtype>
    const char* storage;  // torch.<storage>
};
constexpr DtypeName kDtypeNames[] = {
    {int(ScalarType::Float), "float32", "FloatStorage"},
    {int(ScalarType::Double), "float64", "DoubleStorage"},
    {int(ScalarType::Half), "float16", "HalfStorage"},
    {int(ScalarType::Long), "int64", "LongStorage"},
    {int(ScalarType::Int), "int32", "IntStorage"},
    {int(ScalarType::Short), "int16", "ShortStorage"},
    {int(ScalarType::Char), "int8", "CharStorage"},
    {int(ScalarType::Byte), "uint8", "ByteStorage"},
    {int(ScalarType::Bool), "bool", "BoolStorage"},
    {int(ScalarType::ComplexFloat), "complex64", "ComplexFloatStorage"},
    {int(ScalarType::ComplexDouble), "complex128", "ComplexDoubleStorage"},
    {kBFloat16Code, "bfloat16", "BFloat16Storage"},
};

struct Allowed {
    G global;
    int code;
};

const std::unordered_map<std::string, Allowed>& allowed_globals() {
    static const std::unordered_map<std::string, Allowed> table = [] {
        std::unordered_map<std::string, Allowed> t = {
            {"collections.OrderedDict", {G::OrderedDict, 0}},
            {"collections.Counter", {G::Counter, 0}},
            {"builtins.set", {G::Set, 0}},
            {"builtins.frozenset", {G::FrozenSet, 0}},
            {"builtins.complex", {G::Complex, 0}},
            {"builtins.slice", {G::Slice, 0}},
            {"builtins.bytearray", {G::Bytearray, 0}},
            {"_codecs.encode", {G::Encode, 0}},
            {"torch._utils._rebuild_tensor_v2", {G::RebuildTensorV2, 0}},
            {"torch._utils._rebuild_tensor", {G::RebuildTensor, 0}},
            {"torch._utils._rebuild_parameter", {G::RebuildParameter, 0}},
            {"torch._utils._rebuild_parameter_with_state", {G::RebuildParameter, 0}},
            {"torch._tensor._rebuild_from_type_v2", {G::RebuildFromTypeV2, 0}},
            {"torch.Tensor", {G::TensorType, 0}},
            {"torch._tensor.Tensor", {G::TensorType, 0}},
            {"torch.nn.parameter.Parameter", {G::ParameterType, 0}},
            {"torch.device", {G::Device, 0}},
            {"torch.Size", {G::Size, 0}},
            {"torch.storage.UntypedStorage", {G::StorageType, int(ScalarType::Byte)}},
        };
        for (const auto& d : kDtypeNames) {
            t.emplace(std::string("torch.") + d.dtype, Allowed{G::Dtype, d.code});
            t.emplace(std::string("torch.") + d.storage, Allowed{G::StorageType, d.code});
        }
        return t;
    }();
    return table;
}

constexpr const char* kAllowedSummary =
    "collections.OrderedDict, collections.Counter, builtins.set, builtins.frozenset, "
    "builtins.complex, builtins.slice, builtins.bytearray, _codecs.encode, "
    "torch._utils._rebuild_tensor_v2, torch._utils._rebuild_tensor, "
    "torch._utils._rebuild_parameter, torch._utils._rebuild_parameter_with_state, "
    "torch._tensor._rebuild_from_type_v2, torch.Tensor, torch.nn.parameter.Parameter, "
    "torch.device, torch.Size, torch.storage.UntypedStorage, torch.<X>Storage and the torch "
    "dtypes for X in Float, Double, Half, BFloat16, Long, Int, Short, Char, Byte, Bool, "
    "ComplexFloat, ComplexDouble";

bool is_callable(G g) {
    return g != G::TensorType && g != G::StorageType && g != G::Dtype;
}

uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

uint64_t hash_bytes(std::string_view s, uint64_t seed) {
    uint64_t h = 1469598103934665603ULL ^ seed;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
    return mix(h);
}

// An integral double that fits in int64, as that integer.
bool integral_value(double d, int64_t* out) {
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return false;
    auto i = static_cast<int64_t>(d);
    if (static_cast<double>(i) != d) return false;
    *out = i;
    return true;
}

class Machine {
public:
    Machine(std::string_view pickle, const StorageLoader& loader, std::string where)
        : data_(reinterpret_cast<const unsigned char*>(pickle.data())), size_(pickle.size()),
          loader_(loader), where_(std::move(where)) {
        // 64 MiB, plus 64 bytes of objects per byte of pickle, at most 2 GiB.
        budget_ = std::min<uint64_t>((uint64_t(64) << 20) + 64 * uint64_t(size_), uint64_t(2) << 30);
        none_ = make(Kind::None);
        true_ = make(Kind::Bool);
        true_->boolean = true;
        false_ = make(Kind::Bool);
    }

    Obj* run();

    TensorRecords state_dict(Obj* root, const std::optional<std::string>& key);
    Value to_value(const Obj* root);

private:
    void convert(const Obj* o, Value& out, std::string& path, int depth, uint64_t& nodes);

    // -- errors, memory -------------------------------------------------------------------
    template <typename... Args>
    [[noreturn]] void error(const Args&... parts) const {
        fail(where_, "data.pkl: ", parts...);
    }
    [[noreturn]] void truncated() const { error("pickle data was truncated"); }

    void charge(uint64_t bytes) {
        used_ += bytes;
        if (used_ > budget_) {
            error("unpickling needs more than ", budget_ >> 20,
                  " MiB of memory (a malformed or malicious pickle)");
        }
    }
    Obj* make(Kind kind) {
        charge(sizeof(Obj));
        arena_.emplace_back();
        Obj* o = &arena_.back();
        o->kind = kind;
        return o;
    }
    Obj* make_int(int64_t v) {
        Obj* o = make(Kind::Int);
        o->integer = v;
        return o;
    }
    Obj* make_text(Kind kind, std::string text) {
        charge(text.size());
        Obj* o = make(kind);
        o->text = std::move(text);
        return o;
    }
    Obj* make_seq(Kind kind, std::vector<Obj*> items) {
        charge(items.size() * sizeof(Obj*));
        Obj* o = make(kind);
        o->items = std::move(items);
        return o;
    }
    Obj* make_dict(DictKind k) {
        Obj* o = make(Kind::Dict);
        o->dict_kind = k;
        o->index = std::make_unique<Index>();
        return o;
    }
    Obj* make_set(Kind kind) {
        Obj* o = make(kind);
        o->index = std::make_unique<Index>();
        return o;
    }

    // -- reading the stream ----------------------------------------------------------------
    const unsigned char* take(uint64_t n) {
        if (n > size_ - pos_) truncated();
        const unsigned char* p = data_ + pos_;
        pos_ += static_cast<std::size_t>(n);
        return p;
    }
    uint8_t u8() { return *take(1); }
    uint64_t uint_le(int n) {
        const unsigned char* p = take(static_cast<uint64_t>(n));
        uint64_t v = 0;
        for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
        return v;
    }
    std::string_view readline() {
        const void* nl = std::memchr(data_ + pos_, '\n', size_ - pos_);
        if (nl == nullptr) truncated();
        std::size_t end = static_cast<std::size_t>(static_cast<const unsigned char*>(nl) - data_);
        std::string_view line(reinterpret_cast<const char*>(data_ + pos_), end - pos_);
        pos_ = end + 1;
        return line;
    }
    std::string_view bytes(uint64_t n) {
        return {reinterpret_cast<const char*>(take(n)), static_cast<std::size_t>(n)};
    }
    std::string utf8(std::string_view raw, const char* what) {
        if (!valid_utf8(raw, /*allow_surrogates=*/true)) error(what, " is not valid UTF-8");
        return std::string(raw);
    }

    // -- the stack -------------------------------------------------------------------------
    std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
    Obj* pop() {
        if (stack_.size() <= floor()) error("unpickling stack underflow");
        Obj* o = stack_.back();
        stack_.pop_back();
        return o;
    }
    Obj* top() {
        if (stack_.size() <= floor()) error("unpickling stack underflow");
        return stack_.back();
    }
    void push(Obj* o) { stack_.push_back(o); }
    std::vector<Obj*> pop_mark() {
        if (marks_.empty()) error("could not find MARK");
        std::size_t m = marks_.back();
        marks_.pop_back();
        std::vector<Obj*> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
        stack_.resize(m);
        return items;
    }

    // -- opcodes ---------------------------------------------------------------------------
    void step(uint8_t op);
    void memo_put(uint64_t index);
    Obj* memo_get(uint64_t index);
    Obj* long_from_bytes(std::string_view raw);
    Obj* int_from_text(std::string_view text, bool is_long);
    Obj* find_global(const std::string& module, const std::string& name);
    Obj* call(Obj* func, Obj* args);
    Obj* new_object(Obj* cls, Obj* args);
    void build(Obj* inst, Obj* state);
    Obj* persistent_load(Obj* pid);

    // -- containers ------------------------------------------------------------------------
    uint64_t key_hash(const Obj* o, int depth);
    bool key_eq(const Obj* a, const Obj* b, int depth);
    void dict_set(Obj* dict, Obj* key, Obj* value);
    Obj* dict_get(Obj* dict, const std::string& key);
    void set_add(Obj* set, Obj* item);
    void fill(Obj* target, const std::vector<Obj*>& items);  // set/frozenset from items
    std::vector<Obj*> iterate(Obj* iterable, const char* what);

    // -- torch -----------------------------------------------------------------------------
    Obj* rebuild_tensor(const std::vector<Obj*>& args, bool v2);
    Obj* rebuild_parameter(Obj* data, Obj* requires_grad, Obj* state);
    void set_state(Obj* obj, Obj* state);
    void set_requires_grad(Obj* tensor, Obj* value);
    bool truthy(Obj* o, const char* what);
    std::vector<int64_t> int_list(Obj* o, const char* what);
    int64_t non_negative_int(Obj* o, const char* what);

public:
    std::string type_name(const Obj* o) const;
    std::string describe(const Obj* o) const;

private:
    const unsigned char* data_;
    std::size_t size_;
    std::size_t pos_ = 0;
    const StorageLoader& loader_;
    std::string where_;
    std::deque<Obj> arena_;
    uint64_t used_ = 0, budget_ = 0;
    std::vector<Obj*> stack_;
    std::vector<std::size_t> marks_;
    std::vector<Obj*> memo_;
    Obj* none_ = nullptr;
    Obj* true_ = nullptr;
    Obj* false_ = nullptr;
};

std::string Machine::type_name(const Obj* o) const {
    switch (o->kind) {
        case Kind::None: return "NoneType";
        case Kind::Bool: return "bool";
        case Kind::Int:
        case Kind::BigInt: return "int";
        case Kind::Float: return "float";
        case Kind::Str: return "str";
        case Kind::Bytes: return "bytes";
        case Kind::Tuple: return "tuple";
        case Kind::List: return "list";
        case Kind::Dict:
            return o->dict_kind == DictKind::Ordered ? "collections.OrderedDict"
                   : o->dict_kind == DictKind::Counter ? "collections.Counter" : "dict";
        case Kind::Set: return "set";
        case Kind::FrozenSet: return "frozenset";
        case Kind::Complex: return "complex";
        case Kind::Slice: return "slice";
        case Kind::Global: return o->text;
        case Kind::Storage: return "torch.storage.TypedStorage";
        case Kind::Tensor: return "torch.Tensor";
        case Kind::Device: return "torch.device";
    }
    return "object";
}

std::string Machine::describe(const Obj* o) const {
    switch (o->kind) {
        case Kind::None: return "None";
        case Kind::Bool: return o->boolean ? "True" : "False";
        case Kind::Int: return std::to_string(o->integer);
        case Kind::Str: return quoted(o->text, 80);
        case Kind::Bytes: return "b" + quoted(o->text, 80);
        case Kind::Global: return o->text;
        case Kind::Device: return "device(" + quoted(o->text) + ")";
        default: return "a " + type_name(o);
    }
}

// ------------------------------------------------------------------------------- opcodes

Obj* Machine::run() {
    for (uint64_t ops = 0; ops < kMaxOps; ++ops) {
        if (pos_ >= size_) error("the pickle ended before its STOP opcode (ran out of input)");
        uint8_t op = data_[pos_++];
        if (op == '.') {  // STOP
            return pop();
        }
        step(op);
    }
    error("the pickle has more than ", kMaxOps, " opcodes");
}

void Machine::memo_put(uint64_t index) {
    Obj* value = top();
    if (index > memo_.size()) {
        error("invalid pickle memo index ", index, ": ", memo_.size(), " objects are memoized");
    }
    if (index == memo_.size()) {
        charge(sizeof(Obj*));
        memo_.push_back(value);
    } else {
        memo_[static_cast<std::size_t>(index)] = value;
    }
}

Obj* Machine::memo_get(uint64_t index) {
    if (index >= memo_.size()) error("memo value not found at index ", index);
    return memo_[static_cast<std::size_t>(index)];
}

Obj* Machine::long_from_bytes(std::string_view raw) {
    // Two's complement, little-endian. Values that fit in int64 become ints.
    std::size_t n = raw.size();
    if (n == 0) return make_int(0);
    const auto* b = reinterpret_cast<const unsigned char*>(raw.data());
    bool negative = (b[n - 1] & 0x80) != 0;
    unsigned char fill = negative ? 0xff : 0x00;
    std::size_t significant = n;
    while (significant > 1 && b[significant - 1] == fill &&
           ((b[significant - 2] & 0x80) != 0) == negative) {
        --significant;
    }
    if (significant <= 8) {
        uint64_t v = negative ? ~uint64_t(0) : 0;
        for (std::size_t i = 0; i < significant; ++i) {
            v &= ~(uint64_t(0xff) << (8 * i));
            v |= uint64_t(b[i]) << (8 * i);
        }
        return make_int(static_cast<int64_t>(v));
    }
    return make_text(Kind::BigInt, std::string(raw.substr(0, significant)));
}

Obj* Machine::int_from_text(std::string_view text, bool is_long) {
    if (is_long && !text.empty() && text.back() == 'L') text.remove_suffix(1);
    if (!is_long && (text == "00" || text == "01")) return text == "01" ? true_ : false_;
    std::string_view digits = text;
    if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) digits.remove_prefix(1);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) {
        error("invalid integer literal ", quoted(text, 40));
    }
    int64_t v = 0;
    const char* first = text.data() + (text[0] == '+' ? 1 : 0);
    auto [ptr, ec] = std::from_chars(first, text.data() + text.size(), v);
    if (ec == std::errc() && ptr == text.data() + text.size()) return make_int(v);
    return make_text(Kind::BigInt, std::string(text));  // too large for int64
}

Obj* Machine::find_global(const std::string& module_in, const std::string& name) {
    std::string module = module_in;
    if (module == "__builtin__") module = "builtins";  // protocol 2 names Python 2's modules
    if (module == "copy_reg") module = "copyreg";
    std::string full = module + "." + name;
    if (module == "os" || module == "posix" || module == "nt" || module == "sys") {
        error("unsupported global ", quoted(full), ": module ", quoted(module),
              " is blocked (allowed: ", kAllowedSummary, ")");
    }
    const auto& table = allowed_globals();
    auto it = table.find(full);
    if (it == table.end()) {
        error("unsupported global ", quoted(full), " (allowed: ", kAllowedSummary,
              "); nothing in a checkpoint is ever imported or run");
    }
    Obj* g = make_text(Kind::Global, full);
    g->global = it->second.global;
    g->code = it->second.code;
    return g;
}

void Machine::step(uint8_t op) {
    switch (op) {
        case 0x80: {  // PROTO
            uint8_t proto = u8();
            if (proto > 5) error("unsupported pickle protocol: ", int(proto));
            return;
        }
        case 0x95: {  // FRAME: only a buffering hint; its length must fit
            uint64_t n = uint_le(8);
            if (n == 0 || n > size_ - pos_) {
                error("invalid FRAME of ", n, " bytes in a pickle of ", size_, " bytes");
            }
            return;
        }
        case '(':  // MARK
            if (marks_.size() >= kMaxMarks) error("pickle nesting is too deep");
            marks_.push_back(stack_.size());
            return;

        // -- numbers and constants
        case 'N': push(none_); return;
        case 0x88: push(true_); return;   // NEWTRUE
        case 0x89: push(false_); return;  // NEWFALSE
        case 'J': push(make_int(static_cast<int32_t>(static_cast<uint32_t>(uint_le(4))))); return;
        case 'K': push(make_int(u8())); return;
        case 'M': push(make_int(static_cast<int64_t>(uint_le(2)))); return;
        case 'I': push(int_from_text(readline(), false)); return;
        case 'L': push(int_from_text(readline(), true)); return;
        case 0x8a: {  // LONG1
            uint64_t n = u8();
            push(long_from_bytes(bytes(n)));
            return;
        }
        case 0x8b: {  // LONG4
            auto n = static_cast<int32_t>(static_cast<uint32_t>(uint_le(4)));
            if (n < 0) error("LONG pickle has negative byte count");
            push(long_from_bytes(bytes(static_cast<uint64_t>(n))));
            return;
        }
        case 'G': {  // BINFLOAT: big-endian IEEE 754
            const unsigned char* p = take(8);
            uint64_t bits = 0;
            for (int i = 0; i < 8; ++i) bits = (bits << 8) | p[i];
            double d;
            std::memcpy(&d, &bits, sizeof d);
            Obj* o = make(Kind::Float);
            o->real = d;
            push(o);
            return;
        }
        case 'F': {  // FLOAT (text)
            std::string_view line = readline();
            double d = 0;
            auto [ptr, ec] = std::from_chars(line.data(), line.data() + line.size(), d);
            if (ec != std::errc() || ptr != line.data() + line.size()) {
                error("invalid float literal ", quoted(line, 40));
            }
            Obj* o = make(Kind::Float);
            o->real = d;
            push(o);
            return;
        }

        // -- strings and bytes
        case 'X': push(make_text(Kind::Str, utf8(bytes(uint_le(4)), "a pickled str"))); return;
        case 0x8c: push(make_text(Kind::Str, utf8(bytes(u8()), "a pickled str"))); return;
        case 0x8d: push(make_text(Kind::Str, utf8(bytes(uint_le(8)), "a pickled str"))); return;
        case 'T': {  // BINSTRING (Python 2 str, decoded as UTF-8)
            auto n = static_cast<int32_t>(static_cast<uint32_t>(uint_le(4)));
            if (n < 0) error("BINSTRING pickle has negative byte count");
            push(make_text(Kind::Str, utf8(bytes(static_cast<uint64_t>(n)), "a pickled str")));
            return;
        }
        case 'U': push(make_text(Kind::Str, utf8(bytes(u8()), "a pickled str"))); return;
        case 'B': push(make_text(Kind::Bytes, std::string(bytes(uint_le(4))))); return;
        case 'C': push(make_text(Kind::Bytes, std::string(bytes(u8())))); return;
        case 0x8e: push(make_text(Kind::Bytes, std::string(bytes(uint_le(8))))); return;
        case 0x96: push(make_text(Kind::Bytes, std::string(bytes(uint_le(8))))); return;
        case 'S': {  // STRING: a quoted Python 2 str literal with escapes
            std::string_view line = readline();
            if (line.size() < 2 || line.front() != line.back() ||
                (line.front() != '\'' && line.front() != '"')) {
                error("the STRING opcode argument must be quoted");
            }
            line = line.substr(1, line.size() - 2);
            std::string out;
            for (std::size_t i = 0; i < line.size(); ++i) {
                char c = line[i];
                if (c != '\\') {
                    out += c;
                    continue;
                }
                if (++i >= line.size()) error("invalid \\ escape at the end of a STRING");
                char e = line[i];
                auto hexval = [](char h) -> int {
                    if (h >= '0' && h <= '9') return h - '0';
                    if (h >= 'a' && h <= 'f') return h - 'a' + 10;
                    if (h >= 'A' && h <= 'F') return h - 'A' + 10;
                    return -1;
                };
                switch (e) {
                    case '\n': break;
                    case '\\': out += '\\'; break;
                    case '\'': out += '\''; break;
                    case '"': out += '"'; break;
                    case 'a': out += '\a'; break;
                    case 'b': out += '\b'; break;
                    case 'f': out += '\f'; break;
                    case 'n': out += '\n'; break;
                    case 'r': out += '\r'; break;
                    case 't': out += '\t'; break;
                    case 'v': out += '\v'; break;
                    case 'x': {
                        if (i + 2 >= line.size() || hexval(line[i + 1]) < 0 ||
                            hexval(line[i + 2]) < 0) {
                            error("invalid \\x escape in a STRING");
                        }
                        out += static_cast<char>(hexval(line[i + 1]) * 16 + hexval(line[i + 2]));
                        i += 2;
                        break;
                    }
                    default:
                        if (e >= '0' && e <= '7') {
                            int v = e - '0';
                            for (int k = 0; k < 2 && i + 1 < line.size() && line[i + 1] >= '0' &&
                                            line[i + 1] <= '7'; ++k) {
                                v = v * 8 + (line[++i] - '0');
                            }
                            out += static_cast<char>(v & 0xff);
                        } else {
                            out += '\\';
                            out += e;
                        }
                }
            }
            push(make_text(Kind::Str, utf8(out, "a pickled str")));
            return;
        }
        case 'V': {  // UNICODE: raw-unicode-escape (\uXXXX, \UXXXXXXXX; other bytes Latin-1)
            std::string_view line = readline();
            std::string out;
            auto put = [&](uint32_t cp) { append_utf8(out, cp); };
            for (std::size_t i = 0; i < line.size(); ++i) {
                auto c = static_cast<unsigned char>(line[i]);
                if (c == '\\' && i + 1 < line.size() && (line[i + 1] == 'u' || line[i + 1] == 'U')) {
                    std::size_t digits = line[i + 1] == 'u' ? 4 : 8;
                    if (i + 2 + digits > line.size()) error("truncated \\u escape in a UNICODE");
                    uint32_t cp = 0;
                    for (std::size_t k = 0; k < digits; ++k) {
                        char h = line[i + 2 + k];
                        int v = (h >= '0' && h <= '9') ? h - '0'
                                : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                                : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
                        if (v < 0) error("invalid \\u escape in a UNICODE");
                        cp = cp * 16 + static_cast<uint32_t>(v);
                    }
                    if (cp > 0x10ffff) error("\\U escape out of range in a UNICODE");
                    put(cp);
                    i += 1 + digits;
                } else {
                    put(c);
                }
            }
            push(make_text(Kind::Str, std::move(out)));
            return;
        }

        // -- containers
        case ')': push(make_seq(Kind::Tuple, {})); return;
        case 't': push(make_seq(Kind::Tuple, pop_mark())); return;
        case 0x85: {  // TUPLE1
            Obj* a = pop();
            push(make_seq(Kind::Tuple, {a}));
            return;
        }
        case 0x86: {  // TUPLE2
            Obj* b = pop();
            Obj* a = pop();
            push(make_seq(Kind::Tuple, {a, b}));
            return;
        }
        case 0x87: {  // TUPLE3
            Obj* c = pop();
            Obj* b = pop();
            Obj* a = pop();
            push(make_seq(Kind::Tuple, {a, b, c}));
            return;
        }
        case ']': push(make_seq(Kind::List, {})); return;
        case 'l': push(make_seq(Kind::List, pop_mark())); return;
        case 'a': {  // APPEND
            Obj* value = pop();
            Obj* target = top();
            if (target->kind != Kind::List) error("Can only append to lists, but got ", type_name(target));
            charge(sizeof(Obj*));
            target->items.push_back(value);
            return;
        }
        case 'e': {  // APPENDS
            std::vector<Obj*> items = pop_mark();
            Obj* target = top();
            if (target->kind != Kind::List) error("Can only extend lists, but got ", type_name(target));
            charge(items.size() * sizeof(Obj*));
            target->items.insert(target->items.end(), items.begin(), items.end());
            return;
        }
        case '}': push(make_dict(DictKind::Plain)); return;
        case 'd': {  // DICT
            std::vector<Obj*> items = pop_mark();
            if (items.size() % 2) error("DICT with an odd number of items");
            Obj* d = make_dict(DictKind::Plain);
            for (std::size_t i = 0; i < items.size(); i += 2) dict_set(d, items[i], items[i + 1]);
            push(d);
            return;
        }
        case 's': {  // SETITEM
            Obj* value = pop();
            Obj* key = pop();
            Obj* target = top();
            if (target->kind != Kind::Dict) {
                error("Can only SETITEM for dict, collections.OrderedDict, collections.Counter, "
                      "but got ", type_name(target));
            }
            dict_set(target, key, value);
            return;
        }
        case 'u': {  // SETITEMS
            std::vector<Obj*> items = pop_mark();
            Obj* target = top();
            if (target->kind != Kind::Dict) {
                error("Can only SETITEMS for dict, collections.OrderedDict, collections.Counter, "
                      "but got ", type_name(target));
            }
            if (items.size() % 2) error("SETITEMS with an odd number of items");
            for (std::size_t i = 0; i < items.size(); i += 2) dict_set(target, items[i], items[i + 1]);
            return;
        }
        case 0x8f: push(make_set(Kind::Set)); return;  // EMPTY_SET
        case 0x90: {  // ADDITEMS
            std::vector<Obj*> items = pop_mark();
            Obj* target = top();
            if (target->kind != Kind::Set) error("Can only ADDITEMS for set, but got ", type_name(target));
            fill(target, items);
            return;
        }
        case 0x91: {  // FROZENSET
            std::vector<Obj*> items = pop_mark();
            Obj* s = make_set(Kind::FrozenSet);
            fill(s, items);
            push(s);
            return;
        }

        // -- the memo
        case 'p': {  // PUT
            std::string_view line = readline();
            uint64_t index = 0;
            auto [ptr, ec] = std::from_chars(line.data(), line.data() + line.size(), index);
            if (ec != std::errc() || ptr != line.data() + line.size()) error("invalid PUT index");
            memo_put(index);
            return;
        }
        case 'q': memo_put(u8()); return;
        case 'r': memo_put(uint_le(4)); return;
        case 0x94: memo_put(memo_.size()); return;  // MEMOIZE
        case 'g': {  // GET
            std::string_view line = readline();
            uint64_t index = 0;
            auto [ptr, ec] = std::from_chars(line.data(), line.data() + line.size(), index);
            if (ec != std::errc() || ptr != line.data() + line.size()) error("invalid GET index");
            push(memo_get(index));
            return;
        }
        case 'h': push(memo_get(u8())); return;
        case 'j': push(memo_get(uint_le(4))); return;

        // -- globals, calls, state, storages
        case 'c': {  // GLOBAL
            std::string module = utf8(readline(), "a GLOBAL module name");
            std::string name = utf8(readline(), "a GLOBAL name");
            push(find_global(module, name));
            return;
        }
        case 0x93: {  // STACK_GLOBAL
            Obj* name = pop();
            Obj* module = pop();
            if (name->kind != Kind::Str || module->kind != Kind::Str) {
                error("STACK_GLOBAL requires str");
            }
            push(find_global(module->text, name->text));
            return;
        }
        case 'R': {  // REDUCE
            Obj* args = pop();
            Obj* func = pop();
            push(call(func, args));
            return;
        }
        case 0x81: {  // NEWOBJ
            Obj* args = pop();
            Obj* cls = pop();
            push(new_object(cls, args));
            return;
        }
        case 'b': {  // BUILD
            Obj* state = pop();
            build(top(), state);
            return;
        }
        case 'Q': push(persistent_load(pop())); return;  // BINPERSID
        case 'P': {                                      // PERSID: a text id, never a storage
            std::string_view line = readline();
            error("Unknown saved id: ", quoted(line, 80), " (only storage tuples are allowed)");
        }

        // -- refused: they run code by other routes, or do nothing a checkpoint needs
        case 'i': error("unsupported pickle opcode 'i' (INST: calls a class)");
        case 'o': error("unsupported pickle opcode 'o' (OBJ: calls a class)");
        case 0x92: error("unsupported pickle opcode 0x92 (NEWOBJ_EX: calls a class)");
        case 0x82:
        case 0x83:
        case 0x84: error("unsupported pickle opcode 0x", std::hex, int(op), " (EXT: resolves an extension code)");
        case 0x97:
        case 0x98: error("unsupported pickle opcode 0x", std::hex, int(op), " (reads an out-of-band buffer)");
        case '0':
        case '1':
        case '2': error("unsupported pickle opcode '", char(op), "' (POP, POP_MARK, DUP: a checkpoint never holds it)");
        default:
            error("invalid pickle opcode 0x", std::hex, int(op), std::dec, " at byte ", pos_ - 1,
                  " (not a pickle, or a corrupted one)");
    }
}

// ----------------------------------------------------------------------------- containers

uint64_t Machine::key_hash(const Obj* o, int depth) {
    if (depth > kMaxKeyDepth) error("a dict key is nested too deeply");
    switch (o->kind) {
        case Kind::None: return 0x6e6f6e65ULL;
        case Kind::Bool: return mix(o->boolean ? 1 : 0);
        case Kind::Int: return mix(static_cast<uint64_t>(o->integer));
        case Kind::Float:
        case Kind::Complex: {
            int64_t i;
            if ((o->kind == Kind::Float || o->imag == 0) && integral_value(o->real, &i)) {
                return mix(static_cast<uint64_t>(i));
            }
            uint64_t a, b;
            std::memcpy(&a, &o->real, 8);
            std::memcpy(&b, &o->imag, 8);
            return mix(a) ^ (o->kind == Kind::Complex && o->imag != 0 ? mix(b * 31) : 0);
        }
        case Kind::Str: return hash_bytes(o->text, 1);
        case Kind::Bytes: return hash_bytes(o->text, 2);
        case Kind::BigInt: return hash_bytes(o->text, 3);
        case Kind::Global: return hash_bytes(o->text, 4);
        case Kind::Device: return hash_bytes(o->text, 5);
        case Kind::Tuple: {
            uint64_t h = 0x345678;
            for (const Obj* item : o->items) h = mix(h * 1000003 ^ key_hash(item, depth + 1));
            return h;
        }
        case Kind::FrozenSet: {
            uint64_t h = 0x6672;
            for (const Obj* item : o->items) h += mix(key_hash(item, depth + 1));
            return h;
        }
        case Kind::Tensor:
        case Kind::Storage: return mix(reinterpret_cast<std::uintptr_t>(o));
        default: error("unhashable type: '", type_name(o), "' used as a dict key or set item");
    }
}

bool Machine::key_eq(const Obj* a, const Obj* b, int depth) {
    if (a == b) return true;
    if (depth > kMaxKeyDepth) error("a dict key is nested too deeply");
    auto numeric = [](const Obj* o, double* re, double* im, int64_t* i, bool* is_int) {
        *im = 0;
        switch (o->kind) {
            case Kind::Bool: *i = o->boolean; *is_int = true; return true;
            case Kind::Int: *i = o->integer; *is_int = true; return true;
            case Kind::Float: *re = o->real; *is_int = false; return true;
            case Kind::Complex: *re = o->real; *im = o->imag; *is_int = false; return true;
            default: return false;
        }
    };
    double ra = 0, ia = 0, rb = 0, ib = 0;
    int64_t xa = 0, xb = 0;
    bool inta = false, intb = false;
    if (numeric(a, &ra, &ia, &xa, &inta) && numeric(b, &rb, &ib, &xb, &intb)) {
        if (inta && intb) return xa == xb;
        if (inta) {
            int64_t v;
            return ib == 0 && integral_value(rb, &v) && v == xa;
        }
        if (intb) {
            int64_t v;
            return ia == 0 && integral_value(ra, &v) && v == xb;
        }
        return ra == rb && ia == ib;
    }
    if (a->kind != b->kind) return false;
    switch (a->kind) {
        case Kind::None: return true;
        case Kind::Str:
        case Kind::Bytes:
        case Kind::BigInt:
        case Kind::Global:
        case Kind::Device: return a->text == b->text;
        case Kind::Tuple:
            if (a->items.size() != b->items.size()) return false;
            for (std::size_t i = 0; i < a->items.size(); ++i) {
                if (!key_eq(a->items[i], b->items[i], depth + 1)) return false;
            }
            return true;
        case Kind::FrozenSet: {
            if (a->items.size() != b->items.size()) return false;
            for (const Obj* item : a->items) {
                uint64_t h = key_hash(item, depth + 1);
                auto range = b->index->equal_range(h);
                bool found = false;
                for (auto it = range.first; it != range.second && !found; ++it) {
                    found = key_eq(item, b->items[it->second], depth + 1);
                }
                if (!found) return false;
            }
            return true;
        }
        default: return false;
    }
}

void Machine::dict_set(Obj* dict, Obj* key, Obj* value) {
    uint64_t h = key_hash(key, 0);
    auto range = dict->index->equal_range(h);
    for (auto it = range.first; it != range.second; ++it) {
        if (key_eq(key, dict->items[it->second], 0)) {
            dict->items[it->second + 1] = value;
            return;
        }
    }
    charge(2 * sizeof(Obj*) + 48);  // the items, and an index node
    dict->index->emplace(h, dict->items.size());
    dict->items.push_back(key);
    dict->items.push_back(value);
}

Obj* Machine::dict_get(Obj* dict, const std::string& key) {
    for (std::size_t i = 0; i < dict->items.size(); i += 2) {
        const Obj* k = dict->items[i];
        if (k->kind == Kind::Str && k->text == key) return dict->items[i + 1];
    }
    return nullptr;
}

void Machine::set_add(Obj* set, Obj* item) {
    uint64_t h = key_hash(item, 0);
    auto range = set->index->equal_range(h);
    for (auto it = range.first; it != range.second; ++it) {
        if (key_eq(item, set->items[it->second], 0)) return;
    }
    charge(sizeof(Obj*) + 32);
    set->index->emplace(h, set->items.size());
    set->items.push_back(item);
}

void Machine::fill(Obj* target, const std::vector<Obj*>& items) {
    for (Obj* item : items) set_add(target, item);
}

std::vector<Obj*> Machine::iterate(Obj* iterable, const char* what) {
    switch (iterable->kind) {
        case Kind::Tuple:
        case Kind::List:
        case Kind::Set:
        case Kind::FrozenSet: return iterable->items;
        case Kind::Dict: {
            std::vector<Obj*> keys;
            for (std::size_t i = 0; i < iterable->items.size(); i += 2) keys.push_back(iterable->items[i]);
            return keys;
        }
        default: error(what, " expects a list, tuple, set or dict, got ", type_name(iterable));
    }
}

// ---------------------------------------------------------------------- calls and state

bool Machine::truthy(Obj* o, const char* what) {
    switch (o->kind) {
        case Kind::None: return false;
        case Kind::Bool: return o->boolean;
        case Kind::Int: return o->integer != 0;
        case Kind::BigInt: return true;
        case Kind::Float: return o->real != 0;
        default: error(what, " must be a bool, got ", type_name(o));
    }
}

int64_t Machine::non_negative_int(Obj* o, const char* what) {
    if (o->kind != Kind::Int || o->integer < 0) error("invalid tensor ", what, ": ", describe(o));
    return o->integer;
}

std::vector<int64_t> Machine::int_list(Obj* o, const char* what) {
    if ((o->kind != Kind::Tuple && o->kind != Kind::List) || o->items.size() > kMaxDims) {
        error("invalid tensor ", what, ": ", describe(o));
    }
    std::vector<int64_t> out;
    for (Obj* item : o->items) {
        if (item->kind != Kind::Int || item->integer < 0) {
            error("invalid tensor ", what, ": element ", describe(item));
        }
        out.push_back(item->integer);
    }
    return out;
}

Obj* Machine::rebuild_tensor(const std::vector<Obj*>& args, bool v2) {
    // _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False,
    //                    backward_hooks=None, metadata=None); _rebuild_tensor: the first four
    if (args.size() < 4 || args.size() > (v2 ? 7u : 4u)) {
        error(v2 ? "_rebuild_tensor_v2" : "_rebuild_tensor", " takes ", v2 ? "4 to 7" : "4",
              " arguments, got ", args.size());
    }
    Obj* storage = args[0];
    if (storage->kind != Kind::Storage) error("expected a storage, got ", type_name(storage));
    int64_t offset = non_negative_int(args[1], "storage offset");
    std::vector<int64_t> size = int_list(args[2], "size");
    std::vector<int64_t> stride = int_list(args[3], "stride");
    if (size.size() != stride.size()) {
        error("tensor size and stride differ in length (", size.size(), " and ", stride.size(), ")");
    }
    bool requires_grad = args.size() > 4 && truthy(args[4], "requires_grad");
    // Bounds, as PyTorch's set_() checks them (in exact arithmetic).
    bool empty = false;
    for (int64_t s : size) empty |= s == 0;
    const uint64_t numel = storage->numel;
    if (!empty) {
        uint64_t extent = static_cast<uint64_t>(offset);
        bool overflow = false;
        for (std::size_t i = 0; i < size.size(); ++i) {
            uint64_t step = 0;
            overflow |= !checked_mul(static_cast<uint64_t>(size[i] - 1),
                                     static_cast<uint64_t>(stride[i]), &step);
            overflow |= !checked_add(extent, step, &extent);
        }
        if (overflow || extent >= numel) {
            std::string s, t;
            for (std::size_t i = 0; i < size.size(); ++i) {
                s += (i ? ", " : "") + std::to_string(size[i]);
                t += (i ? ", " : "") + std::to_string(stride[i]);
            }
            fail(where_, "tensor of size [", s, "], stride [", t, "] and storage offset ",
                 offset, " is out of bounds for a storage of ", numel, " elements");
        }
        // The element count must fit in int64 too (sizes can be huge with stride 0).
        uint64_t count = 1;
        for (int64_t d : size) overflow |= !checked_mul(count, static_cast<uint64_t>(d), &count);
        if (overflow || count > uint64_t(INT64_MAX) / 8) {
            fail(where_, "tensor has too many elements");
        }
    } else if (static_cast<uint64_t>(offset) > numel) {
        fail(where_, "storage offset ", offset, " is past the end of a storage of ", numel,
             " elements");
    }
    charge(sizeof(TensorRecord) + 16 * size.size());
    Obj* t = make(Kind::Tensor);
    t->tensor = std::make_unique<TensorRecord>();
    TensorRecord& r = *t->tensor;
    r.dtype = storage->dtype;
    r.shape = std::move(size);
    r.strides = std::move(stride);
    r.storage_offset = offset;
    r.storage = storage->buffer;
    r.requires_grad = requires_grad && is_floating(r.dtype);
    return t;
}

void Machine::set_requires_grad(Obj* tensor, Obj* value) {
    if (value->kind != Kind::Bool) fail(where_, "requires_grad must be a bool");
    if (value->boolean && !is_floating(tensor->tensor->dtype)) {
        fail(where_, "only Tensors of floating point dtype can require gradients");
    }
    tensor->tensor->requires_grad = value->boolean;
}

void Machine::set_state(Obj* obj, Obj* state) {
    // A dict, or PyTorch's (dict_state, slots_state); keys are str. For a tensor only
    // requires_grad has an effect; other attributes (and an OrderedDict's _metadata) are
    // accepted and dropped: no C++ object has them.
    std::vector<Obj*> parts;
    if (state->kind == Kind::Tuple) {
        parts = state->items;
    } else {
        parts.push_back(state);
    }
    if (parts.size() > 2) error("invalid object state of type ", type_name(state));
    for (Obj* part : parts) {
        if (part->kind == Kind::None) continue;
        if (part->kind != Kind::Dict) error("invalid object state of type ", type_name(state));
        for (std::size_t i = 0; i < part->items.size(); i += 2) {
            Obj* key = part->items[i];
            if (key->kind != Kind::Str) error("invalid object state key ", describe(key));
            if (key->text == "requires_grad" && obj->kind == Kind::Tensor) {
                set_requires_grad(obj, part->items[i + 1]);
            }
        }
    }
}

Obj* Machine::rebuild_parameter(Obj* data, Obj* requires_grad, Obj* state) {
    if (data->kind != Kind::Tensor) error("expected a tensor, got ", type_name(data));
    charge(sizeof(TensorRecord) + 16 * data->tensor->shape.size());
    Obj* p = make(Kind::Tensor);
    p->tensor = std::make_unique<TensorRecord>(*data->tensor);
    bool rg = requires_grad == nullptr || truthy(requires_grad, "requires_grad");
    p->tensor->requires_grad = rg && is_floating(p->tensor->dtype);
    if (state != nullptr && state->kind != Kind::None) set_state(p, state);
    return p;
}

Obj* Machine::call(Obj* func, Obj* args) {
    if (func->kind != Kind::Global || !is_callable(func->global)) {
        error("Trying to call reduce for unrecognized function ", describe(func),
              " (only the allow-listed functions and classes may be called)");
    }
    if (args->kind != Kind::Tuple) error("REDUCE arguments must be a tuple");
    const std::vector<Obj*>& a = args->items;
    auto arity = [&](std::size_t lo, std::size_t hi) {
        if (a.size() < lo || a.size() > hi) {
            error(func->text, " called with ", a.size(), " arguments");
        }
    };
    switch (func->global) {
        case G::OrderedDict:
        case G::Counter: {
            arity(0, 1);
            Obj* d = make_dict(func->global == G::Counter ? DictKind::Counter : DictKind::Ordered);
            if (a.empty()) return d;
            Obj* src = a[0];
            if (src->kind == Kind::Dict) {
                for (std::size_t i = 0; i < src->items.size(); i += 2) {
                    dict_set(d, src->items[i], src->items[i + 1]);
                }
            } else if (func->global == G::OrderedDict &&
                       (src->kind == Kind::List || src->kind == Kind::Tuple)) {
                for (Obj* pair : src->items) {
                    if ((pair->kind != Kind::Tuple && pair->kind != Kind::List) ||
                        pair->items.size() != 2) {
                        error("OrderedDict() expects (key, value) pairs, got ", describe(pair));
                    }
                    dict_set(d, pair->items[0], pair->items[1]);
                }
            } else {
                error(func->text, "() cannot be built from ", type_name(src));
            }
            return d;
        }
        case G::Set:
        case G::FrozenSet: {
            arity(0, 1);
            Obj* s = make_set(func->global == G::Set ? Kind::Set : Kind::FrozenSet);
            if (!a.empty()) fill(s, iterate(a[0], func->text.c_str()));
            return s;
        }
        case G::Complex: {
            arity(0, 2);
            double parts[2] = {0, 0};
            for (std::size_t i = 0; i < a.size(); ++i) {
                if (a[i]->kind == Kind::Int) parts[i] = static_cast<double>(a[i]->integer);
                else if (a[i]->kind == Kind::Bool) parts[i] = a[i]->boolean;
                else if (a[i]->kind == Kind::Float) parts[i] = a[i]->real;
                else error("complex() argument must be a number, got ", type_name(a[i]));
            }
            Obj* c = make(Kind::Complex);
            c->real = parts[0];
            c->imag = parts[1];
            return c;
        }
        case G::Slice: {
            arity(1, 3);
            std::vector<Obj*> items = a.size() == 1 ? std::vector<Obj*>{none_, a[0], none_} : a;
            while (items.size() < 3) items.push_back(none_);
            return make_seq(Kind::Slice, std::move(items));
        }
        case G::Bytearray: {
            arity(0, 1);
            if (a.empty()) return make_text(Kind::Bytes, "");
            if (a[0]->kind == Kind::Bytes) return make_text(Kind::Bytes, a[0]->text);
            if (a[0]->kind == Kind::List) {
                std::string out;
                for (Obj* v : a[0]->items) {
                    if (v->kind != Kind::Int || v->integer < 0 || v->integer > 255) {
                        error("bytearray() items must be integers in range(0, 256)");
                    }
                    out += static_cast<char>(v->integer);
                }
                return make_text(Kind::Bytes, std::move(out));
            }
            error("bytearray() is only allowed from bytes");
        }
        case G::Encode: {
            arity(1, 3);
            std::string encoding = "utf-8";
            if (a.size() > 1) {
                if (a[1]->kind != Kind::Str) error("_codecs.encode: the encoding must be a str");
                encoding = a[1]->text;
            }
            if (a[0]->kind != Kind::Str ||
                (encoding != "latin1" && encoding != "latin-1" && encoding != "utf-8" &&
                 encoding != "utf8")) {
                error("_codecs.encode is only allowed for text (got ", quoted(encoding), ")");
            }
            const std::string& s = a[0]->text;
            if (encoding[0] == 'u') {
                if (!valid_utf8(s)) error("_codecs.encode: surrogates not allowed");
                return make_text(Kind::Bytes, s);
            }
            std::string out;  // Latin-1: every code point below 256
            for (std::size_t i = 0; i < s.size();) {
                auto c = static_cast<unsigned char>(s[i]);
                if (c < 0x80) {
                    out += static_cast<char>(c);
                    ++i;
                } else if ((c == 0xc2 || c == 0xc3) && i + 1 < s.size()) {
                    out += static_cast<char>(((c & 0x1f) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3f));
                    i += 2;
                } else {
                    error("'latin-1' codec can't encode a character of ", quoted(s, 40));
                }
            }
            return make_text(Kind::Bytes, std::move(out));
        }
        case G::RebuildTensorV2: return rebuild_tensor(a, true);
        case G::RebuildTensor: return rebuild_tensor(a, false);
        case G::RebuildParameter:
            // _rebuild_parameter(data, requires_grad, backward_hooks) and
            // _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state)
            arity(1, 4);
            return rebuild_parameter(a[0], a.size() > 1 ? a[1] : nullptr, a.size() > 3 ? a[3] : nullptr);
        case G::ParameterType:  // Parameter(data=None, requires_grad=True)
            arity(0, 2);
            if (a.empty()) error("expected a tensor, got NoneType");
            return rebuild_parameter(a[0], a.size() > 1 ? a[1] : nullptr, nullptr);
        case G::RebuildFromTypeV2: {
            // _rebuild_from_type_v2(func, new_type, args, state)
            arity(4, 4);
            Obj* f = a[0];
            if (f->kind != Kind::Global ||
                (f->global != G::RebuildTensorV2 && f->global != G::RebuildTensor) ||
                a[2]->kind != Kind::Tuple) {
                error("invalid _rebuild_from_type_v2 arguments");
            }
            Obj* t = rebuild_tensor(a[2]->items, f->global == G::RebuildTensorV2);
            Obj* type = a[1];
            if (type->kind == Kind::Global && type->global == G::ParameterType) {
                t = rebuild_parameter(t, t->tensor->requires_grad ? true_ : false_, nullptr);
            } else if (type->kind != Kind::Global || type->global != G::TensorType) {
                error("unsupported tensor type ", describe(type));
            }
            Obj* state = a[3];
            if (state->kind == Kind::Dict || state->kind == Kind::Tuple) {
                if (!state->items.empty()) set_state(t, state);
            } else if (state->kind != Kind::None) {
                error("invalid object state of type ", type_name(state));
            }
            return t;
        }
        case G::Device: {  // torch.device("cuda:0") or torch.device("cuda", 0)
            arity(1, 2);
            if (a[0]->kind != Kind::Str) error("torch.device() expects a str, got ", type_name(a[0]));
            std::string text = a[0]->text;
            if (a.size() == 2) {
                if (a[1]->kind != Kind::Int) error("torch.device() index must be an int");
                text += ":" + std::to_string(a[1]->integer);
            }
            return make_text(Kind::Device, std::move(text));
        }
        case G::Size: {
            arity(0, 1);
            if (a.empty()) return make_seq(Kind::Tuple, {});
            if (a[0]->kind != Kind::Tuple && a[0]->kind != Kind::List) {
                error("torch.Size() expects a tuple, got ", type_name(a[0]));
            }
            for (Obj* d : a[0]->items) {
                if (d->kind != Kind::Int) error("torch.Size() expects ints, got ", type_name(d));
            }
            return make_seq(Kind::Tuple, a[0]->items);
        }
        case G::TensorType:
        case G::StorageType:
        case G::Dtype: break;
    }
    error("Trying to call reduce for unrecognized function ", describe(func));
}

Obj* Machine::new_object(Obj* cls, Obj* args) {
    if (cls->kind == Kind::Global && args->kind == Kind::Tuple) {
        switch (cls->global) {
            case G::ParameterType:
            case G::FrozenSet:
            case G::Complex:
            case G::Size: return call(cls, args);
            case G::OrderedDict: return make_dict(DictKind::Ordered);  // __new__ ignores args
            case G::Counter: return make_dict(DictKind::Counter);
            case G::Set: return make_set(Kind::Set);
            default: break;
        }
    }
    error("Can only create new object for nn.Parameter or the allow-listed classes, but got ",
          describe(cls));
}

void Machine::build(Obj* inst, Obj* state) {
    if (inst->kind == Kind::Tensor) {
        // Tensor.__setstate__: (requires_grad, _, backward_hooks)
        if (state->kind != Kind::Tuple || state->items.size() != 3) {
            error("invalid tensor state of type ", type_name(state),
                  " (a tensor's pickled state is (requires_grad, None, backward_hooks))");
        }
        set_requires_grad(inst, state->items[0]);
        return;
    }
    if (inst->kind == Kind::Dict && inst->dict_kind != DictKind::Plain) {
        set_state(inst, state);  // an OrderedDict's _metadata: checked, then dropped
        return;
    }
    error("Can only build Tensor, Parameter or OrderedDict, but got ", type_name(inst));
}

Obj* Machine::persistent_load(Obj* pid) {
    if (pid->kind == Kind::Tuple && !pid->items.empty()) {
        Obj* tag = pid->items[0];
        if ((tag->kind != Kind::Str && tag->kind != Kind::Bytes) || tag->text != "storage") {
            error("Only persistent_load of storage is allowed, but got ", describe(tag));
        }
    }
    if (pid->kind != Kind::Tuple || (pid->items.size() != 5 && pid->items.size() != 6)) {
        error("Unknown saved id: ", describe(pid));
    }
    Obj* type = pid->items[1];
    Obj* key = pid->items[2];
    Obj* location = pid->items[3];
    Obj* numel = pid->items[4];
    if (type->kind != Kind::Global || (type->global != G::StorageType && type->global != G::Dtype)) {
        error("invalid storage type ", describe(type));
    }
    StorageRequest request;
    request.dtype_code = type->code;
    if (key->kind == Kind::Str || key->kind == Kind::Bytes) {
        request.key = key->text;
    } else if (key->kind == Kind::Int) {
        request.key = std::to_string(key->integer);
    } else {
        error("invalid storage record: key ", describe(key));
    }
    if (location->kind != Kind::Str && location->kind != Kind::Bytes) {
        error("invalid storage record: location ", describe(location));
    }
    request.location = location->text;
    if (numel->kind != Kind::Int || numel->integer < 0) {
        error("invalid storage record: numel ", describe(numel));
    }
    request.numel = static_cast<uint64_t>(numel->integer);
    LoadedStorage loaded = loader_(request);
    Obj* s = make(Kind::Storage);
    s->buffer = std::move(loaded.buffer);
    s->dtype = loaded.dtype;
    s->numel = loaded.numel;
    return s;
}

// ------------------------------------------------------------------------- the state dict

TensorRecords Machine::state_dict(Obj* root, const std::optional<std::string>& key) {
    Obj* dict = root;
    std::string what = "the checkpoint";
    if (key) {
        if (root->kind != Kind::Dict) {
            fail(where_, "the checkpoint holds a ", type_name(root), ", not a dict with the key ",
                 quoted(*key));
        }
        dict = dict_get(root, *key);
        if (dict == nullptr) {
            std::string keys;
            std::size_t shown = 0;
            for (std::size_t i = 0; i < root->items.size(); i += 2) {
                if (shown == 20) {
                    keys += ", ...";
                    break;
                }
                keys += (shown++ ? ", " : "") + describe(root->items[i]);
            }
            fail(where_, "the checkpoint has no key ", quoted(*key), " (its keys: ", keys, ")");
        }
        what = "entry " + quoted(*key);
    }
    if (dict->kind != Kind::Dict) {
        fail(where_, what, " is a ", type_name(dict), ", not a state dict (a dict of tensors)");
    }
    TensorRecords out;
    out.reserve(dict->items.size() / 2);
    for (std::size_t i = 0; i < dict->items.size(); i += 2) {
        Obj* k = dict->items[i];
        Obj* v = dict->items[i + 1];
        if (k->kind != Kind::Str) {
            fail(where_, "state dict key ", describe(k), " is a ", type_name(k), ", not a str");
        }
        switch (v->kind) {
            case Kind::Tensor: out.emplace_back(k->text, *v->tensor); break;
            case Kind::None:
            case Kind::Bool:
            case Kind::Int:
            case Kind::BigInt:
            case Kind::Float:
            case Kind::Str:
            case Kind::Bytes: break;  // a scalar beside the tensors ("epoch": 3): skipped
            case Kind::Dict:
                fail(where_, "entry ", quoted(k->text), " is a ", type_name(v),
                     ", not a tensor (read a nested state dict with read_torch_checkpoint(path, ",
                     quoted(k->text), "))");
            default:
                fail(where_, "entry ", quoted(k->text), " is a ", type_name(v), ", not a tensor");
        }
    }
    return out;
}

// ---------------------------------------------------------------------- any object

constexpr int kMaxValueDepth = 500;  // nesting of the converted tree (Python's recursion is 1000)

Value Machine::to_value(const Obj* root) {
    Value out;
    std::string path;
    uint64_t nodes = 0;
    convert(root, out, path, 0, nodes);
    return out;
}

// `o` as a Value; `path` says where it is ("['state'][0]"), for messages. A shared container
// is converted once per reference: `nodes` keeps the expansion within the pickle's size.
void Machine::convert(const Obj* o, Value& out, std::string& path, int depth, uint64_t& nodes) {
    auto where = [&]() { return path.empty() ? std::string("the checkpoint") : "the object at " + path; };
    if (++nodes > arena_.size() + size_ + 1024) {
        fail(where_, "the checkpoint's objects share containers so that they expand to more than ",
             arena_.size() + size_ + 1024, " values");
    }
    if (depth > kMaxValueDepth) fail(where_, where(), " is nested more than ", kMaxValueDepth, " levels deep");
    switch (o->kind) {
        case Kind::None: out.kind = Value::Kind::None; return;
        case Kind::Bool: out = Value::from_bool(o->boolean); return;
        case Kind::Int: out = Value::from_int(o->integer); return;
        case Kind::Float: out = Value::from_float(o->real); return;
        case Kind::Str: out = Value::from_str(o->text); return;
        case Kind::Tensor: out = Value::from_tensor(*o->tensor); return;
        case Kind::Tuple:
        case Kind::List: {
            out.kind = o->kind == Kind::Tuple ? Value::Kind::Tuple : Value::Kind::List;
            out.items.resize(o->items.size());
            const std::size_t n = path.size();
            for (std::size_t i = 0; i < o->items.size(); ++i) {
                path += "[" + std::to_string(i) + "]";
                convert(o->items[i], out.items[i], path, depth + 1, nodes);
                path.resize(n);
            }
            return;
        }
        case Kind::Dict: {
            out.kind = Value::Kind::Dict;
            out.items.resize(o->items.size());
            const std::size_t n = path.size();
            for (std::size_t i = 0; i < o->items.size(); i += 2) {
                const Obj* k = o->items[i];
                if (k->kind == Kind::List || k->kind == Kind::Dict) {
                    fail(where_, where(), " has a key of type ", type_name(k));
                }
                path += "[" + std::string(k->kind == Kind::Str ? quoted(k->text, 40) : describe(k)) + "]";
                convert(k, out.items[i], path, depth + 1, nodes);
                convert(o->items[i + 1], out.items[i + 1], path, depth + 1, nodes);
                path.resize(n);
            }
            return;
        }
        default:
            fail(where_, where(), " is a ", type_name(o),
                 ", which a checkpoint of None, bool, int, float, str, tuple, list, dict and tensors cannot hold");
    }
}

}  // namespace

Value unpickle_object(std::string_view pickle, const StorageLoader& loader, const std::string& where) {
    Machine machine(pickle, loader, where);
    Obj* top = machine.run();
    return machine.to_value(top);
}

TensorRecords unpickle_state_dict(std::string_view pickle, const StorageLoader& loader,
                                  const std::optional<std::string>& key, const std::string& where) {
    Machine machine(pickle, loader, where);
    Obj* top = machine.run();
    return machine.state_dict(top, key);
}

}  // namespace ember::serialize::detail
