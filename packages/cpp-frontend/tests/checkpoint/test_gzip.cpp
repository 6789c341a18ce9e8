// ember::io: gzip and raw deflate against what Python's gzip and zlib write and accept.
#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "checkpoint/checkpoint_test_util.h"
#include "ember/io.h"
#include "serialize/common.h"
#include "serialize/inflate.h"

namespace {

using namespace ember_checkpoint_test;  // NOLINT
namespace io = ember::io;
using ember::serialize::detail::crc32;
using ember::serialize::detail::InflateError;

std::vector<std::vector<std::string>> read_tsv(const std::string& path) {
    std::vector<std::vector<std::string>> rows;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty()) rows.push_back(split_tabs(line));
    }
    return rows;
}

std::vector<std::byte> gzip_of(const std::vector<std::byte>& bytes, const std::string& name) {
    return io::gunzip(bytes.data(), bytes.size(), name);
}

uint32_t crc_of(const std::vector<std::byte>& bytes) { return crc32(bytes.data(), bytes.size()); }

// A gzip member by hand: a 10-byte header with `flags` and `fields` after it, the deflate
// stream, the trailer of `data`.
std::vector<std::byte> member(const std::vector<std::byte>& deflate, const std::vector<std::byte>& data,
                              uint8_t flags = 0, const std::string& fields = "") {
    std::vector<std::byte> out = from_hex("1f8b08");
    out.push_back(std::byte{flags});
    for (int i = 0; i < 4; ++i) out.push_back(std::byte{0});
    out.push_back(std::byte{0});
    out.push_back(std::byte{3});
    auto f = bytes_of(fields);
    out.insert(out.end(), f.begin(), f.end());
    out.insert(out.end(), deflate.begin(), deflate.end());
    uint32_t crc = crc_of(data), size = static_cast<uint32_t>(data.size());
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::byte>(crc >> (8 * i)));
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::byte>(size >> (8 * i)));
    return out;
}

// One stored deflate block holding `data` (at most 65535 bytes).
std::vector<std::byte> stored_block(const std::vector<std::byte>& data, bool final = true) {
    std::vector<std::byte> out;
    auto n = static_cast<uint32_t>(data.size());
    out.push_back(std::byte{static_cast<uint8_t>(final ? 1 : 0)});
    out.push_back(static_cast<std::byte>(n & 0xff));
    out.push_back(static_cast<std::byte>(n >> 8));
    out.push_back(static_cast<std::byte>(~n & 0xff));
    out.push_back(static_cast<std::byte>((~n >> 8) & 0xff));
    out.insert(out.end(), data.begin(), data.end());
    return out;
}

TEST(Gzip, ReadsWhatPythonWrites) {
    EMBER_CHECKPOINT_GOLDEN(golden);
    auto rows = read_tsv(golden + "/gzip/cases.tsv");
    ASSERT_GE(rows.size(), 60u);
    int gz = 0, raw = 0;
    for (const auto& row : rows) {
        SCOPED_TRACE(row[1]);
        const std::string path = golden + "/gzip/" + row[1];
        auto expected = read_bytes(golden + "/gzip/" + row[2]);
        std::vector<std::byte> got;
        if (row[0] == "gzip") {
            got = io::read_gzip(path);
            ++gz;
        } else {
            auto compressed = read_bytes(path);
            got = io::inflate(compressed.data(), compressed.size(), row[1]);
            ++raw;
        }
        ASSERT_EQ(got.size(), expected.size());
        EXPECT_TRUE(got == expected);
    }
    EXPECT_GT(gz, 30);
    EXPECT_GT(raw, 20);
}

TEST(Gzip, ReadsTheExamplesDigitsFile) {
    EMBER_CHECKPOINT_GOLDEN(golden);
    const std::string path = golden + "/gzip/digits.csv.gz";
    if (!file_exists(path)) GTEST_SKIP() << "examples/data/digits.csv.gz not in this tree";
    auto start = std::chrono::steady_clock::now();
    auto csv = io::read_gzip(path);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    EXPECT_TRUE(csv == read_bytes(path + ".bin"));
    std::string text(reinterpret_cast<const char*>(csv.data()), csv.size());
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1797);
    std::cout << "digits.csv.gz: " << csv.size() << " bytes in " << ms << " ms\n";
}

TEST(Gzip, AgreesWithZlibOnMutatedDeflateStreams) {
    EMBER_CHECKPOINT_GOLDEN(golden);
    auto rows = read_tsv(golden + "/gzip/fuzz_deflate.tsv");
    ASSERT_GT(rows.size(), 2000u);
    int ok = 0, failed = 0, same_kind = 0;
    for (const auto& row : rows) {
        auto input = from_hex(row[0]);
        std::vector<std::byte> out;
        std::string status = "ok";
        std::size_t used = 0;
        try {
            used = ember::serialize::detail::inflate(input.data(), input.size(), out, 1u << 24);
        } catch (const InflateError& e) {
            status = e.kind() == InflateError::Kind::Truncated ? "truncated" : "error";
        }
        if (row[1] == "ok") {
            ++ok;
            ASSERT_EQ(status, "ok") << row[0];
            EXPECT_EQ(used, std::stoull(row[2])) << row[0];
            EXPECT_EQ(out.size(), std::stoull(row[3])) << row[0];
            EXPECT_EQ(crc_of(out), std::stoul(row[4])) << row[0];
        } else {
            ++failed;
            ASSERT_NE(status, "ok") << "zlib: " << row[1] << " for " << row[0];
            same_kind += status == row[1];
        }
    }
    EXPECT_GT(ok, 500);
    EXPECT_GT(failed, 500);
    // truncated versus corrupt is decided where the input ends; nearly always as zlib does
    EXPECT_GT(same_kind, failed * 95 / 100);
}

TEST(Gzip, AgreesWithPythonOnMutatedGzipFiles) {
    EMBER_CHECKPOINT_GOLDEN(golden);
    auto rows = read_tsv(golden + "/gzip/fuzz_gzip.tsv");
    ASSERT_GT(rows.size(), 1000u);
    for (const auto& row : rows) {
        auto input = from_hex(row[0]);
        std::string msg;
        std::vector<std::byte> out;
        try {
            out = gzip_of(input, "f.gz");
        } catch (const ember::Error& e) {
            msg = e.what();
        }
        if (row[1] == "ok") {
            ASSERT_EQ(msg, "") << row[0];
            EXPECT_EQ(out.size(), std::stoull(row[2]));
            EXPECT_EQ(crc_of(out), std::stoul(row[3]));
        } else {
            ASSERT_NE(msg, "") << "Python rejects " << row[0];
            EXPECT_EQ(msg.rfind("f.gz: ", 0), 0u) << msg;
        }
    }
}

// Random edits of valid files, many more than the golden cases: only ember::Error may come
// out (the sanitizer build catches any out-of-bounds access or leak on the way).
TEST(Gzip, SurvivesRandomCorruption) {
    EMBER_CHECKPOINT_GOLDEN(golden);
    std::vector<std::vector<std::byte>> seeds;
    for (const char* name : {"text.6.gz", "repeats.9.gz", "floats.1.gz", "header_fields.gz",
                             "members.gz", "one.0.gz"}) {
        auto bytes = read_bytes(golden + "/gzip/" + name);
        if (bytes.size() > 20000) bytes.resize(20000);  // a truncated file is a case too
        seeds.push_back(std::move(bytes));
    }
    std::mt19937_64 rng(42);
    int accepted = 0, rejected = 0;
    for (int iter = 0; iter < 6000; ++iter) {
        auto data = seeds[iter % seeds.size()];
        const int edits = 1 + static_cast<int>(rng() % 4);
        for (int e = 0; e < edits; ++e) {
            std::size_t pos = rng() % data.size();
            switch (rng() % 4) {
                case 0: data[pos] ^= static_cast<std::byte>(1u << (rng() % 8)); break;
                case 1: data[pos] = static_cast<std::byte>(rng()); break;
                case 2: data.resize(pos + 1); break;
                default: data.insert(data.begin() + static_cast<long>(pos), static_cast<std::byte>(rng())); break;
            }
        }
        try {
            gzip_of(data, "fuzz.gz");
            ++accepted;
        } catch (const ember::Error& e) {
            ++rejected;
            ASSERT_EQ(std::string(e.what()).rfind("fuzz.gz: ", 0), 0u) << e.what();
        }
        // the raw inflater on the same bytes (from past the header)
        if (data.size() > 10) {
            try {
                io::inflate(data.data() + 10, data.size() - 10, "raw", 1u << 22);
            } catch (const ember::Error&) {
            }
        }
    }
    EXPECT_GT(rejected, 5000);
    std::cout << accepted << " accepted, " << rejected << " rejected\n";
}

TEST(Gzip, ReadsHandMadeMembers) {
    auto hello = bytes_of("hello, world");
    EXPECT_TRUE(gzip_of(member(stored_block(hello), hello), "a") == hello);
    // two stored blocks, then an empty final one
    auto two = stored_block(bytes_of("hello, "), false);
    auto rest = stored_block(bytes_of("world"), false);
    two.insert(two.end(), rest.begin(), rest.end());
    auto last = stored_block({}, true);
    two.insert(two.end(), last.begin(), last.end());
    EXPECT_TRUE(gzip_of(member(two, hello), "b") == hello);
    // FTEXT and an FEXTRA field are accepted
    EXPECT_TRUE(gzip_of(member(stored_block(hello), hello, 1 | 4, std::string("\x03\x00xyz", 5)), "c") == hello);
    // members concatenated, zero padding between and after
    auto a = member(stored_block(bytes_of("ab")), bytes_of("ab"));
    auto b = member(stored_block(bytes_of("cd")), bytes_of("cd"));
    std::vector<std::byte> both = a;
    both.insert(both.end(), 3, std::byte{0});
    both.insert(both.end(), b.begin(), b.end());
    both.insert(both.end(), 5, std::byte{0});
    EXPECT_TRUE(gzip_of(both, "d") == bytes_of("abcd"));
}

TEST(Gzip, ErrorsNameTheFileAndTheProblem) {
    auto hello = bytes_of("hello, world");
    auto good = member(stored_block(hello), hello);
    auto with = [&](std::size_t pos, uint8_t value) {
        auto copy = good;
        copy[pos] = std::byte{value};
        return copy;
    };
    auto flip = [&](std::size_t pos) {
        auto copy = good;
        copy[pos] ^= std::byte{0x5a};
        return copy;
    };
    auto cut = [&](std::size_t n) { return std::vector<std::byte>(good.begin(), good.begin() + static_cast<long>(n)); };
    auto garbage = good;
    garbage.push_back(std::byte{'x'});
    auto hcrc = member(stored_block(hello), hello, 2, "\x12\x34");
    auto name_cut = member({}, {}, 8, "file-name-without-end");
    name_cut.resize(name_cut.size() - 8);
    auto bad_type = member(from_hex("07"), {});
    auto far = member(from_hex("63004200"), {});  // fixed block: literal 0, then distance 2
    struct Case {
        std::vector<std::byte> data;
        std::string error;
    };
    std::vector<Case> cases = {
        {{}, "f.gz: not a gzip file: the file is empty"},
        {bytes_of("PK\x03\x04 not gzip"), "f.gz: not a gzip file (it does not start with the gzip magic bytes 1f 8b)"},
        {with(2, 7), "f.gz: unknown gzip compression method 7"},
        {with(3, 0x20), "f.gz: invalid gzip header: reserved flag bits are set"},
        {hcrc, "f.gz: corrupt gzip header: header CRC mismatch"},
        {name_cut, "f.gz: truncated gzip file: it ends inside the header's file name"},
        {cut(6), "f.gz: truncated gzip file: it ends inside the header"},
        {cut(14), "f.gz: truncated: the compressed data ends before its last deflate block"},
        {cut(good.size() - 3), "f.gz: truncated gzip file: it ends inside the trailer"},
        {flip(good.size() - 8), "f.gz: corrupt gzip data: CRC-32 mismatch: the data decompresses to"},
        {with(good.size() - 4, 99), "f.gz: corrupt gzip data: length mismatch: 12 bytes decompressed, the trailer records 99"},
        {garbage, "f.gz: trailing garbage after gzip member 1 at byte"},
        {bad_type, "f.gz: corrupt deflate data: invalid block type"},
        {with(11, 13), "f.gz: corrupt deflate data: invalid stored block lengths"},
        {far, "f.gz: corrupt deflate data: invalid distance too far back"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.error);
        std::string msg = error_of([&] { gzip_of(c.data, "f.gz"); });
        EXPECT_EQ(msg.rfind(c.error, 0), 0u) << msg;
    }
    // a second member's problems say which member
    auto two = good;
    auto bad = flip(good.size() - 8);
    two.insert(two.end(), bad.begin(), bad.end());
    EXPECT_EMBER_ERROR([&] { gzip_of(two, "f.gz"); }, "f.gz: corrupt gzip data: CRC-32 mismatch (member 2)", "");
    // the size limit
    EXPECT_EMBER_ERROR([&] { io::gunzip(good.data(), good.size(), "f.gz", 5); },
                       "f.gz: the data inflates to more than 5 bytes", "");
    EXPECT_EQ(io::gunzip(good.data(), good.size(), "f.gz", 12).size(), 12u);
    // files
    TempDir dir;
    EXPECT_EMBER_ERROR([&] { io::read_gzip(dir.file("missing.gz")); }, dir.file("missing.gz") + ": ",
                       "cannot open the file");
    write_bytes(dir.file("cut.gz"), cut(20));
    EXPECT_EMBER_ERROR([&] { io::read_gzip(dir.file("cut.gz")); }, dir.file("cut.gz") + ": truncated", "");
}

TEST(Gzip, RawInflateErrors) {
    auto block = stored_block(bytes_of("abc"));
    EXPECT_TRUE(io::inflate(block.data(), block.size()) == bytes_of("abc"));
    auto extra = block;
    extra.push_back(std::byte{0});
    EXPECT_EMBER_ERROR([&] { io::inflate(extra.data(), extra.size(), "r"); }, "r: 1 bytes follow the end", "");
    EXPECT_EMBER_ERROR([&] { io::inflate(block.data(), 3, "r"); }, "r: truncated: ", "");
    struct Case {
        std::string hex, error;
    };
    // dynamic blocks with bad tables (bit strings written by hand, LSB first)
    std::vector<Case> cases = {
        {"07", "invalid block type"},
        {"f50000", "too many length or distance symbols"},  // HLIT = 30 (287 codes)
        {"051e00", "too many length or distance symbols"},  // HDIST = 30 (31 codes)
        {"05000000", "invalid code lengths set"},           // no code-length code at all
        {"1b03", "invalid literal/length code"},            // fixed: length symbol 286
        {"63004200", "invalid distance too far back"},      // literal 0, then distance 2
        {"03", "truncated: "},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.hex);
        auto data = from_hex(c.hex);
        std::string msg = error_of([&] { io::inflate(data.data(), data.size(), "r"); });
        EXPECT_NE(msg.find(c.error), std::string::npos) << msg;
    }
}

}  // namespace
