// Helpers of the serialization tests: the fixture folder and its expected.tsv, temporary
// folders, a small zip writer for hand-made archives, hex, and running Python.
#pragma once

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ember/serialize.h"

namespace ember_serialize_test {

namespace es = ember::serialize;

// The folder of this file (tests/serialize/ in the source tree).
inline std::string source_dir() {
#ifdef EMBER_TEST_SOURCE_DIR
    return EMBER_TEST_SOURCE_DIR;
#else
    std::string here = __FILE__;
    return here.substr(0, here.rfind('/'));
#endif
}

// Where golden_serialize.py wrote its files (ctest runs it first), or "".
inline std::string golden_dir() {
#if defined(EMBER_GOLDEN_DIR) && defined(EMBER_GOLDEN_AVAILABLE)
    if (EMBER_GOLDEN_AVAILABLE) return EMBER_GOLDEN_DIR;
#endif
    return "";
}

inline bool file_exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

// The fixtures: $EMBER_SERIALIZE_FIXTURES; else those golden_serialize.py wrote with this
// commit's Python Ember and the installed PyTorch; else the checked-in copies (fixtures/).
inline std::string fixture_dir() {
    if (const char* env = std::getenv("EMBER_SERIALIZE_FIXTURES"); env && *env) return env;
    std::string golden = golden_dir();
    if (!golden.empty() && file_exists(golden + "/fixtures/expected.tsv")) return golden + "/fixtures";
    return source_dir() + "/fixtures";
}

inline std::string fixture(const std::string& name) { return fixture_dir() + "/" + name; }

inline std::string make_fixtures_script() { return source_dir() + "/make_fixtures.py"; }

inline std::vector<std::byte> from_hex(const std::string& hex) {
    std::vector<std::byte> out;
    if (hex == "-") return out;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
        out.push_back(static_cast<std::byte>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    }
    return out;
}

inline std::string to_hex(const std::vector<std::byte>& bytes) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (std::byte b : bytes) {
        auto v = std::to_integer<unsigned>(b);
        out += digits[v >> 4];
        out += digits[v & 15];
    }
    return out.empty() ? "-" : out;
}

inline std::vector<int64_t> parse_ints(const std::string& text) {
    std::vector<int64_t> out;
    if (text == "-") return out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) out.push_back(std::stoll(item));
    return out;
}

inline std::vector<std::string> split_tabs(const std::string& line) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : line) {
        if (c == '\t') {
            out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    out.push_back(cur);
    return out;
}

struct Expected {
    std::string file, name, dtype;
    bool requires_grad = false;
    std::vector<int64_t> shape, strides;
    int64_t offset = 0;
    std::vector<std::byte> bytes;
};

struct Manifest {
    std::vector<Expected> tensors;
    std::vector<std::array<std::string, 3>> shares;  // file, a, b

    std::vector<Expected> of(const std::string& file) const {
        std::vector<Expected> out;
        for (const auto& e : tensors) {
            if (e.file == file) out.push_back(e);
        }
        return out;
    }
};

inline Manifest parse_manifest(std::istream& in) {
    Manifest m;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        auto f = split_tabs(line);
        if (f[0] == "share" && f.size() == 4) {
            m.shares.push_back({f[1], f[2], f[3]});
        } else if (f.size() == 8) {
            Expected e;
            e.file = f[0];
            e.name = f[1];
            e.dtype = f[2];
            e.requires_grad = f[3] == "1";
            e.shape = parse_ints(f[4]);
            e.strides = parse_ints(f[5]);
            e.offset = std::stoll(f[6]);
            e.bytes = from_hex(f[7]);
            m.tensors.push_back(std::move(e));
        }
    }
    return m;
}

inline const Manifest& manifest() {
    static const Manifest m = [] {
        std::ifstream in(fixture("expected.tsv"));
        return parse_manifest(in);
    }();
    return m;
}

inline std::vector<std::byte> read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::byte> out(chars.size());
    if (!chars.empty()) std::memcpy(out.data(), chars.data(), chars.size());
    return out;
}

inline void write_bytes(const std::string& path, const std::vector<std::byte>& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline std::vector<std::byte> bytes_of(const std::string& s) {
    std::vector<std::byte> out(s.size());
    if (!s.empty()) std::memcpy(out.data(), s.data(), s.size());
    return out;
}

inline std::shared_ptr<const es::Buffer> buffer_of(const std::vector<std::byte>& bytes) {
    return es::Buffer::copy_of(bytes.data(), bytes.size());
}

// A temporary folder, removed with its files.
class TempDir {
public:
    TempDir() {
        std::string tmpl = "/tmp/ember_serialize_test.XXXXXX";
        std::vector<char> buf(tmpl.begin(), tmpl.end());
        buf.push_back('\0');
        char* made = ::mkdtemp(buf.data());
        if (made == nullptr) throw std::runtime_error("mkdtemp failed");
        path_ = made;
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    ~TempDir() {
        std::string cmd = "rm -rf '" + path_ + "'";
        int rc = std::system(cmd.c_str());
        (void)rc;
    }
    std::string file(const std::string& name) const { return path_ + "/" + name; }
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

// ------------------------------------------------------------------------ a zip writer

inline uint32_t test_crc32(const std::vector<std::byte>& data) {
    uint32_t c = 0xffffffffu;
    for (std::byte b : data) {
        c ^= std::to_integer<uint32_t>(b);
        for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
    }
    return ~c;
}

struct ZipEntry {
    std::string name;
    std::vector<std::byte> data;
    uint16_t method = 0;     // 0 stored, 8 deflate (the data is written as given)
    bool crc = true;         // false: record a CRC of 0 (none computed)
    uint16_t flags = 0;
    bool zip64_fields = false;  // sizes and offset as 0xffffffff + a ZIP64 extra field
};

// A zip archive of `entries`, stored, each record's data 64-byte aligned as torch writes
// it; `zip64` adds a ZIP64 end of central directory record and locator as torch does.
inline std::vector<std::byte> make_zip(const std::vector<ZipEntry>& entries, bool zip64 = true) {
    std::vector<std::byte> out;
    auto u8 = [&](uint32_t v) { out.push_back(static_cast<std::byte>(v & 0xff)); };
    auto u16 = [&](uint32_t v) { u8(v); u8(v >> 8); };
    auto u32 = [&](uint32_t v) { u16(v & 0xffff); u16(v >> 16); };
    auto u64 = [&](uint64_t v) { u32(static_cast<uint32_t>(v)); u32(static_cast<uint32_t>(v >> 32)); };
    auto str = [&](const std::string& s) {
        for (char c : s) out.push_back(static_cast<std::byte>(c));
    };
    std::vector<uint32_t> offsets, crcs;
    for (const auto& e : entries) {
        offsets.push_back(static_cast<uint32_t>(out.size()));
        uint32_t crc = e.crc ? test_crc32(e.data) : 0;
        crcs.push_back(crc);
        std::size_t z64 = e.zip64_fields ? 20 : 0;
        std::size_t data_start = out.size() + 30 + e.name.size() + z64;
        std::size_t pad = (64 - data_start % 64) % 64;
        if (pad != 0 && pad < 4) pad += 64;
        uint32_t size32 = e.zip64_fields ? 0xffffffffu : static_cast<uint32_t>(e.data.size());
        u32(0x04034b50); u16(20); u16(e.flags); u16(e.method); u16(0); u16(0x21);
        u32(crc); u32(size32); u32(size32);
        u16(static_cast<uint32_t>(e.name.size())); u16(static_cast<uint32_t>(pad + z64));
        str(e.name);
        if (z64) {
            u16(1); u16(16); u64(e.data.size()); u64(e.data.size());
        }
        if (pad) {
            u16(0x4246); u16(static_cast<uint32_t>(pad - 4));
            for (std::size_t i = 0; i < pad - 4; ++i) u8('Z');
        }
        out.insert(out.end(), e.data.begin(), e.data.end());
    }
    uint64_t cd_start = out.size();
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const auto& e = entries[i];
        uint32_t size32 = e.zip64_fields ? 0xffffffffu : static_cast<uint32_t>(e.data.size());
        u32(0x02014b50); u16(20); u16(20); u16(e.flags); u16(e.method); u16(0); u16(0x21);
        u32(crcs[i]); u32(size32); u32(size32);
        u16(static_cast<uint32_t>(e.name.size())); u16(e.zip64_fields ? 8 + 28 : 0);
        u16(0); u16(0); u16(0); u32(0);
        u32(e.zip64_fields ? 0xffffffffu : offsets[i]);
        str(e.name);
        if (e.zip64_fields) {  // an unrelated extra field first, then the ZIP64 one
            u16(0x5455); u16(4); u32(0);
            u16(1); u16(24); u64(e.data.size()); u64(e.data.size()); u64(offsets[i]);
        }
    }
    uint64_t cd_size = out.size() - cd_start;
    if (zip64) {
        uint64_t e64 = out.size();
        u32(0x06064b50); u64(44); u16(45); u16(45); u32(0); u32(0);
        u64(entries.size()); u64(entries.size()); u64(cd_size); u64(cd_start);
        u32(0x07064b50); u32(0); u64(e64); u32(1);
    }
    u32(0x06054b50); u16(0); u16(0); u16(static_cast<uint32_t>(entries.size()));
    u16(static_cast<uint32_t>(entries.size())); u32(static_cast<uint32_t>(cd_size));
    u32(static_cast<uint32_t>(cd_start)); u16(0);
    return out;
}

// A torch-style checkpoint archive "archive/" holding `pickle` as data.pkl and `storages`
// (key -> bytes) as data/<key>.
inline std::vector<std::byte> make_checkpoint(const std::string& pickle,
                                              const std::map<std::string, std::vector<std::byte>>& storages = {},
                                              const std::string& byteorder = "little") {
    std::vector<ZipEntry> entries;
    entries.push_back({"archive/data.pkl", bytes_of(pickle)});
    entries.push_back({"archive/byteorder", bytes_of(byteorder)});
    for (const auto& [key, data] : storages) entries.push_back({"archive/data/" + key, data});
    entries.push_back({"archive/version", bytes_of("3\n")});
    return make_zip(entries);
}

// --------------------------------------------------------------------- a pickle writer

// Writes pickle opcodes by hand (protocol 2 style), for archives the tests craft.
class PickleWriter {
public:
    PickleWriter& proto(int v = 2) { return raw("\x80").byte(v); }
    PickleWriter& op(char c) { s_ += c; return *this; }
    PickleWriter& raw(const std::string& bytes) { s_ += bytes; return *this; }
    PickleWriter& byte(int v) { s_ += static_cast<char>(v & 0xff); return *this; }
    PickleWriter& u32(uint32_t v) {
        for (int i = 0; i < 4; ++i) byte(static_cast<int>(v >> (8 * i)));
        return *this;
    }
    PickleWriter& mark() { return op('('); }
    PickleWriter& str(const std::string& text) { return op('X').u32(static_cast<uint32_t>(text.size())).raw(text); }
    PickleWriter& integer(int32_t v) {
        if (v >= 0 && v < 256) return op('K').byte(v);
        return op('J').u32(static_cast<uint32_t>(v));
    }
    PickleWriter& global(const std::string& module, const std::string& name) {
        return op('c').raw(module + "\n" + name + "\n");
    }
    PickleWriter& ints(const std::vector<int64_t>& values) {  // a tuple of small ints
        mark();
        for (int64_t v : values) integer(static_cast<int32_t>(v));
        return op('t');
    }
    // _rebuild_tensor_v2(('storage', torch.<storage>, key, 'cpu', numel), offset, size,
    //                    stride, requires_grad, OrderedDict())
    PickleWriter& tensor(const std::string& storage, const std::string& key, int numel,
                         int offset, const std::vector<int64_t>& size,
                         const std::vector<int64_t>& stride, bool requires_grad = false) {
        global("torch._utils", "_rebuild_tensor_v2");
        mark();
        mark().str("storage").global("torch", storage).str(key).str("cpu").integer(numel).op('t');
        op('Q');
        integer(offset).ints(size).ints(stride);
        op(requires_grad ? '\x88' : '\x89');
        global("collections", "OrderedDict").op(')').op('R');
        op('t').op('R');
        return *this;
    }
    const std::string& bytes() const { return s_; }

private:
    std::string s_;
};

// ---------------------------------------------------------------------------- Python

// How to run Python with Ember and safetensors: "PYTHONPATH='...' '<python>'", from
// $EMBER_TEST_PYTHON (an interpreter that imports them as it is), else from the
// python_env.txt golden_serialize.py wrote; "" when there is none.
inline std::string test_python() {
    if (const char* env = std::getenv("EMBER_TEST_PYTHON"); env && *env) {
        return "'" + std::string(env) + "'";
    }
    std::string golden = golden_dir();
    if (golden.empty()) return "";
    std::ifstream in(golden + "/python_env.txt");
    std::string python, pythonpath;
    if (!std::getline(in, python) || python.empty()) return "";
    std::getline(in, pythonpath);
    return "PYTHONPATH='" + pythonpath + "' '" + python + "'";
}

// Runs `command`, returning its exit status and stdout.
inline int run_command(const std::string& command, std::string* output) {
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) return -1;
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) output->append(buf, n);
    int status = ::pclose(pipe);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace ember_serialize_test
