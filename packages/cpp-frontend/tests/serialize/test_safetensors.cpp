// safetensors: Python-written files read in C++, C++-written files byte-for-byte what Python
// writes (and read back by Python), validation of malformed headers.
#include <dirent.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <set>

#include <gtest/gtest.h>

#include "ember/error.h"
#include "ember/serialize.h"
#include "serialize_test_util.h"

namespace {

using namespace ember_serialize_test;

ember::ScalarType dtype_named(const std::string& name) {
    for (auto t : {ember::kBool, ember::kUInt8, ember::kInt8, ember::kInt16, ember::kInt32,
                   ember::kInt64, ember::kFloat16, ember::kFloat32, ember::kFloat64}) {
        if (ember::dtype_name(t) == name) return t;
    }
    throw std::runtime_error("unknown dtype " + name);
}

// The records of a fixture file, built from expected.tsv (contiguous copies).
es::TensorRecords records_of(const std::string& file) {
    es::TensorRecords out;
    for (const auto& e : manifest().of(file)) {
        out.emplace_back(e.name, es::make_record(dtype_named(e.dtype), e.shape,
                                                 e.bytes.empty() ? nullptr : e.bytes.data()));
    }
    return out;
}

void expect_matches_manifest(const es::TensorRecords& got, const std::string& file) {
    auto expected = manifest().of(file);
    ASSERT_FALSE(expected.empty()) << "no fixture lines for " << file;
    ASSERT_EQ(got.size(), expected.size()) << file;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const auto& [name, r] = got[i];
        const auto& e = expected[i];
        SCOPED_TRACE(file + ": " + e.name);
        EXPECT_EQ(name, e.name);
        EXPECT_EQ(ember::dtype_name(r.dtype), e.dtype);
        EXPECT_EQ(r.shape, e.shape);
        EXPECT_EQ(r.strides, es::contiguous_strides(e.shape));
        EXPECT_EQ(r.storage_offset, 0);
        EXPECT_FALSE(r.requires_grad);
        EXPECT_EQ(to_hex(es::contiguous_bytes(r)), to_hex(e.bytes));
        if (r.numel() > 0) {
            EXPECT_EQ(reinterpret_cast<std::uintptr_t>(r.data()) % ember::element_size(r.dtype), 0u);
        }
    }
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const ember::Error& e) {
        return e.what();
    }
    return "<no error>";
}

// A safetensors file from a header text and a data size (zero bytes).
std::vector<std::byte> st_file(const std::string& header, std::size_t data_bytes) {
    std::vector<std::byte> out(8);
    uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out[i] = static_cast<std::byte>((n >> (8 * i)) & 0xff);
    auto h = bytes_of(header);
    out.insert(out.end(), h.begin(), h.end());
    out.resize(out.size() + data_bytes);
    return out;
}

std::string st_error(const std::string& header, std::size_t data_bytes) {
    return error_of([&] { es::deserialize_safetensors(buffer_of(st_file(header, data_bytes)), "m.st"); });
}

TEST(Safetensors, ReadsWhatPythonWrites) {
    for (std::string file : {"st_all_dtypes.safetensors", "st_metadata.safetensors",
                             "ember_model.safetensors"}) {
        auto f = es::read_safetensors(fixture(file));
        expect_matches_manifest(f.tensors, file);
        auto mapped = es::read_safetensors(fixture(file), {/*mmap=*/true});
        expect_matches_manifest(mapped.tensors, file);
        EXPECT_TRUE(mapped.tensors[0].second.storage->is_mapped());
    }
    auto all = es::read_safetensors(fixture("st_all_dtypes.safetensors"));
    EXPECT_EQ(all.metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
    auto empty = es::read_safetensors(fixture("st_empty.safetensors"));
    EXPECT_TRUE(empty.tensors.empty());
    EXPECT_TRUE(empty.metadata.empty());
    auto meta = es::read_safetensors(fixture("st_metadata.safetensors"));
    EXPECT_EQ(meta.metadata.at("note"), "quote\" back\\slash /\xc3\xa9\n\t\x01\x1f\x7f");
}

TEST(Safetensors, WritesByteForByteWhatPythonWrites) {
    struct Case {
        std::string file;
        std::map<std::string, std::string> metadata;
    };
    std::vector<Case> cases = {
        {"st_all_dtypes.safetensors", {{"format", "pt"}}},
        {"st_metadata.safetensors", {{"note", "quote\" back\\slash /\xc3\xa9\n\t\x01\x1f\x7f"}}},
        {"ember_model.safetensors", {}},
        {"st_empty.safetensors", {}},
    };
    TempDir dir;
    for (const auto& c : cases) {
        SCOPED_TRACE(c.file);
        auto expected = read_bytes(fixture(c.file));
        ASSERT_FALSE(expected.empty());
        auto records = records_of(c.file);
        EXPECT_EQ(to_hex(es::serialize_safetensors(records, c.metadata)), to_hex(expected));
        es::write_safetensors(dir.file(c.file), records, c.metadata);
        EXPECT_EQ(to_hex(read_bytes(dir.file(c.file))), to_hex(expected));
        // the order of the records given does not matter
        std::reverse(records.begin(), records.end());
        EXPECT_EQ(to_hex(es::serialize_safetensors(records, c.metadata)), to_hex(expected));
    }
}

// Records of every dtype, with views: non-contiguous, offset, shared storage, 0-d, empty.
es::TensorRecords varied_records() {
    es::TensorRecords out;
    int k = 0;
    for (auto t : {ember::kBool, ember::kUInt8, ember::kInt8, ember::kInt16, ember::kInt32,
                   ember::kInt64, ember::kFloat16, ember::kFloat32, ember::kFloat64}) {
        std::vector<std::byte> data(6 * ember::element_size(t));
        for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>((i * 29 + k) % 251);
        if (t == ember::kBool) {
            for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>(i % 2);
        }
        out.emplace_back("d_" + std::string(ember::dtype_name(t)), es::make_record(t, {2, 3}, data.data()));
        ++k;
    }
    std::vector<double> base(12);
    for (int i = 0; i < 12; ++i) base[static_cast<std::size_t>(i)] = i * 0.5 - 2;
    auto storage = es::Buffer::copy_of(base.data(), base.size() * 8);
    es::TensorRecord x = es::make_record(ember::kFloat64, {3, 4}, storage);
    es::TensorRecord xt = x;
    xt.shape = {4, 3};
    xt.strides = {1, 4};
    es::TensorRecord row = x;
    row.shape = {4};
    row.strides = {1};
    row.storage_offset = 8;
    es::TensorRecord scalar = x;
    scalar.shape = {};
    scalar.strides = {};
    scalar.storage_offset = 5;
    out.emplace_back("x", x);
    out.emplace_back("x.t", xt);
    out.emplace_back("x.row", row);
    out.emplace_back("scalar", scalar);
    out.emplace_back("empty", es::make_record(ember::kInt64, {0, 2}, nullptr));
    out.emplace_back("unicode \xe2\x88\x91/\"q\"", es::make_record(ember::kFloat32, {1}, std::vector<float>{3}.data()));
    return out;
}

TEST(Safetensors, RoundTripsEveryDtypeAndView) {
    TempDir dir;
    auto records = varied_records();
    std::map<std::string, std::string> meta = {{"a", "1"}, {"b", "two"}, {"\xc3\xa9", "\n"}};
    es::write_safetensors(dir.file("m.safetensors"), records, meta);
    auto back = es::read_safetensors(dir.file("m.safetensors"));
    EXPECT_EQ(back.metadata, meta);
    ASSERT_EQ(back.tensors.size(), records.size());
    std::map<std::string, const es::TensorRecord*> by_name;
    for (const auto& [name, r] : records) by_name[name] = &r;
    std::string previous;
    for (const auto& [name, r] : back.tensors) {
        SCOPED_TRACE(name);
        EXPECT_LT(previous, name);  // sorted by name
        previous = name;
        const es::TensorRecord& want = *by_name.at(name);
        EXPECT_EQ(r.dtype, want.dtype);
        EXPECT_EQ(r.shape, want.shape);
        EXPECT_TRUE(r.is_contiguous());
        EXPECT_EQ(es::contiguous_bytes(r), es::contiguous_bytes(want));
    }
    // no temporary file is left beside it
    std::set<std::string> names;
    std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.path().c_str()), ::closedir);
    while (const dirent* e = ::readdir(d.get())) names.insert(e->d_name);
    EXPECT_EQ(names, (std::set<std::string>{".", "..", "m.safetensors"}));
    // overwriting replaces the file
    es::write_safetensors(dir.file("m.safetensors"), {records[0]});
    EXPECT_EQ(es::read_safetensors(dir.file("m.safetensors")).tensors.size(), 1u);
}

TEST(Safetensors, PythonReadsWhatCppWrites) {
    std::string python = test_python();
    if (python.empty()) {
        GTEST_SKIP() << "no Python with ember and safetensors (golden_serialize.py found none; "
                        "EMBER_TEST_PYTHON is not set): the byte-for-byte comparison with the "
                        "files Python wrote covers the format";
    }
    TempDir dir;
    auto records = varied_records();
    es::write_safetensors(dir.file("cpp.safetensors"), records, {{"k", "v\n\xc3\xa9"}});
    std::string out;
    int rc = run_command(python + " '" + make_fixtures_script() + "' --dump '" +
                             dir.file("cpp.safetensors") + "'",
                         &out);
    ASSERT_EQ(rc, 0) << out;
    std::istringstream in(out);
    Manifest m = parse_manifest(in);
    ASSERT_EQ(m.tensors.size(), records.size()) << out;
    std::map<std::string, const es::TensorRecord*> by_name;
    for (const auto& [name, r] : records) by_name[name] = &r;
    for (const auto& e : m.tensors) {
        SCOPED_TRACE(e.name);
        ASSERT_TRUE(by_name.count(e.name));
        const es::TensorRecord& r = *by_name.at(e.name);
        EXPECT_EQ(e.dtype, ember::dtype_name(r.dtype));
        EXPECT_EQ(e.shape, r.shape);
        EXPECT_EQ(to_hex(e.bytes), to_hex(es::contiguous_bytes(r)));
    }
    EXPECT_NE(out.find("meta\tcpp.safetensors\tk\tv\\n\\xe9"), std::string::npos) << out;
}

TEST(Safetensors, RejectsMalformedHeadersAsTheReferenceDoes) {
    const std::string f32 = R"("dtype":"F32","shape":[1],"data_offsets":[0,4])";
    struct Case {
        std::string header;
        std::size_t data;
        std::string error;  // a part of the message ("" = no error)
    };
    std::vector<Case> cases = {
        {"{\"a\":{" + f32 + "}}", 4, ""},
        {"{\"a\":{" + f32 + ",\"x\":[1,{\"y\":null}]}}", 4, ""},  // unknown fields: ignored
        {" {\"a\":{" + f32 + "}}  ", 4, ""},
        {"{\"__metadata__\":null,\"a\":{" + f32 + "}}", 4, ""},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[0,5],\"data_offsets\":[0,0]}}", 0, ""},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}", 4, ""},
        {"{\"\\u00e9\\ud83d\\ude00\":{" + f32 + "}}", 4, ""},
        {"{}", 0, ""},
        {"{\"a\":{" + f32 + "},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8,
         "duplicate tensor name 'a'"},
        {"{\"__metadata__\":{\"k\":1}}", 0, "is not a string"},
        {"{\"__metadata__\":{},\"__metadata__\":{}}", 0, "duplicate field '__metadata__'"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", 4, "floating point"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1e0],\"data_offsets\":[0,4]}}", 4, "floating point"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, "negative"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[01],\"data_offsets\":[0,4]}}", 4, "leading zero"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "invalid data_offsets [4, 8] for tensor 'a'"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,0]}}", 4, "invalid data_offsets"},
        {"{\"a\":{" + f32 + "},\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[2,6]}}", 6,
         "for tensor 'b'"},
        {"{\"a\":{" + f32 + "}}", 8, "cover 4 bytes but the file has 8 bytes of data"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, "needs 8 bytes"},
        {"{\"a\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[0,2]}}", 2,
         "tensor 'a' has dtype BF16, which Ember does not support"},
        {"{\"a\":{\"dtype\":\"X9\",\"shape\":[1],\"data_offsets\":[0,2]}}", 2, "unknown dtype 'X9'"},
        {"{\"a\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "unknown dtype 'f32'"},
        {"{} x", 0, "trailing characters"},
        {std::string("{}\0\0", 4), 0, "trailing characters"},
        {"[]", 0, "'{'"},
        {"{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "has no shape field"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,4]}}", 4, "data_offsets has 2 elements"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[18446744073709551615,2],\"data_offsets\":[0,4]}}", 4, "overflows"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[18446744073709551616],\"data_offsets\":[0,4]}}", 4, "64 bits"},
        {"{\"a\\u0001\":{" + f32 + "},}", 4, "expected"},
        {"{\"a\x01\":{" + f32 + "}}", 4, "control character"},
        {"{\"\\ud83d\":{" + f32 + "}}", 4, "lone surrogate"},
        {"{\"\xff\":{" + f32 + "}}", 4, "not valid UTF-8"},
        {"{\"__metadata__\":{\"a\":" + std::string(200, '[') + std::string(200, ']') + "}}", 0, "not a string"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":" +
             std::string(200, '[') + std::string(200, ']') + "}}", 4, "nesting deeper than 128"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"dtype\":\"F32\"}}", 4,
         "duplicate field 'dtype'"},
        {"{\"a\"", 0, "unexpected end"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}", 4, "unexpected end"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.header.substr(0, 120));
        std::string got = st_error(c.header, c.data);
        if (c.error.empty()) {
            EXPECT_EQ(got, "<no error>");
        } else {
            EXPECT_NE(got.find(c.error), std::string::npos) << got;
            EXPECT_EQ(got.rfind("m.st: ", 0), 0u) << got;
        }
    }
}

TEST(Safetensors, RejectsBadLengthsNamingTheFile) {
    TempDir dir;
    auto bytes = st_file("{}", 0);
    bytes[0] = std::byte{0x15};  // 123456789 = 0x075bcd15
    bytes[1] = std::byte{0xcd};
    bytes[2] = std::byte{0x5b};
    bytes[3] = std::byte{0x07};
    bytes.resize(1024);
    write_bytes(dir.file("big.safetensors"), bytes);
    EXPECT_EQ(error_of([&] { es::read_safetensors(dir.file("big.safetensors")); }),
              dir.file("big.safetensors") +
                  ": safetensors header length 123456789 exceeds the file size 1024");
    auto huge = st_file("{}", 0);
    huge[7] = std::byte{0x7f};
    EXPECT_NE(error_of([&] { es::deserialize_safetensors(buffer_of(huge), "h"); }).find("exceeds the file size"),
              std::string::npos);
    // a header within the file but over the reference's 100,000,000-byte limit
    auto over = es::Buffer::allocate(8 + 100000001);
    over->mutable_data()[0] = std::byte{0x01};  // 100000001 = 0x05f5e101
    over->mutable_data()[1] = std::byte{0xe1};
    over->mutable_data()[2] = std::byte{0xf5};
    over->mutable_data()[3] = std::byte{0x05};
    EXPECT_EQ(error_of([&] { es::deserialize_safetensors(over, "o"); }),
              "o: safetensors header length 100000001 exceeds the limit of 100000000 bytes");
    EXPECT_NE(error_of([&] { es::deserialize_safetensors(buffer_of(bytes_of("abc")), "s"); })
                  .find("s: not a safetensors file"),
              std::string::npos);
    EXPECT_NE(error_of([&] { es::read_safetensors(dir.file("nope")); }).find("cannot open"), std::string::npos);
}

TEST(Safetensors, WriterRejectsBadInput) {
    auto one = es::make_record(ember::kFloat32, {1}, std::vector<float>{1}.data());
    EXPECT_NE(error_of([&] { es::serialize_safetensors({{"a", one}, {"a", one}}); }).find("duplicate tensor name 'a'"),
              std::string::npos);
    EXPECT_NE(error_of([&] { es::serialize_safetensors({{"__metadata__", one}}); }).find("__metadata__"),
              std::string::npos);
    EXPECT_NE(error_of([&] { es::serialize_safetensors({{"\xff", one}}); }).find("UTF-8"), std::string::npos);
    EXPECT_NE(error_of([&] { es::serialize_safetensors({}, {{"k", "\xc3"}}); }).find("UTF-8"), std::string::npos);
    auto bad = one;
    bad.storage_offset = 1;
    EXPECT_NE(error_of([&] { es::serialize_safetensors({{"b", bad}}); }).find("tensor 'b'"), std::string::npos);
    TempDir dir;
    EXPECT_NE(error_of([&] { es::write_safetensors(dir.file("x/"), {{"a", one}}); }).find("directory"),
              std::string::npos);
    EXPECT_NE(error_of([&] { es::write_safetensors(dir.file("no/such/dir/f"), {{"a", one}}); })
                  .find("cannot create a temporary file"),
              std::string::npos);
    // a failed write leaves the old file
    es::write_safetensors(dir.file("keep"), {{"a", one}});
    EXPECT_THROW(es::write_safetensors(dir.file("keep"), {{"b", bad}}), ember::Error);
    EXPECT_EQ(es::read_safetensors(dir.file("keep")).tensors.at(0).first, "a");
}

std::string host_tag() {
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    std::string out;
    for (const char* p = name; *p && out.size() < 40; ++p) {
        bool ok = std::isalnum(static_cast<unsigned char>(*p)) || *p == '-';
        out += ok ? *p : '-';
    }
    return out.empty() ? "host" : out;
}

TEST(Safetensors, SaveRemovesTemporariesOfKilledSaves) {
    TempDir dir;
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) ::_exit(0);
    ::waitpid(child, nullptr, 0);  // a pid that is gone
    std::string stale = dir.file(".m.safetensors." + host_tag() + "." + std::to_string(child) + ".0badf00d.tmp");
    std::string live = dir.file(".m.safetensors." + host_tag() + "." + std::to_string(::getpid()) + ".0badf00d.tmp");
    std::string other = dir.file(".m.safetensors.otherhost." + std::to_string(child) + ".0badf00d.tmp");
    for (const auto& f : {stale, live, other}) {
        write_bytes(f, bytes_of("partial"));
        struct timeval old[2] = {{1000, 0}, {1000, 0}};
        ::utimes(f.c_str(), old);
    }
    es::write_safetensors(dir.file("m.safetensors"),
                          {{"a", es::make_record(ember::kInt8, {2}, std::vector<int8_t>{1, 2}.data())}});
    EXPECT_NE(::access(stale.c_str(), F_OK), 0);
    EXPECT_EQ(::access(live.c_str(), F_OK), 0);
    EXPECT_EQ(::access(other.c_str(), F_OK), 0);
}

}  // namespace
