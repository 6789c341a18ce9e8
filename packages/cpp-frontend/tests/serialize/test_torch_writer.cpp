// write_torch_checkpoint / serialize_torch_checkpoint: the archive's records, their order,
// alignment and CRCs, the exact pickle, the archive name; read back by the C++ reader and
// by Python (torch.load(weights_only=True) and ember.load, through make_fixtures.py
// --dump-torch) for every dtype, views, 0-d, empty and large-dimension tensors.
#include <complex>
#include <cstring>
#include <functional>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "ember/error.h"
#include "ember/serialize.h"
#include "serialize/common.h"
#include "serialize/zip_reader.h"
#include "serialize_test_util.h"

namespace {

using namespace ember_serialize_test;  // NOLINT
using namespace std::string_literals;

std::string error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const ember::Error& e) {
        return e.what();
    }
    return "";
}

// Records of every dtype, views sharing one storage (transposed, offset), 0-d, empty, a
// dimension past 2^32 (an empty tensor), sizes past 255 and 65535, a UTF-8 name.
es::TensorRecords varied_records() {
    es::TensorRecords out;
    int k = 0;
    for (auto t : {ember::kBool, ember::kUInt8, ember::kInt8, ember::kInt16, ember::kInt32, ember::kInt64,
                   ember::kFloat16, ember::kFloat32, ember::kFloat64, ember::ScalarType::ComplexFloat,
                   ember::ScalarType::ComplexDouble}) {
        std::vector<std::byte> data(6 * ember::element_size(t));
        for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>((i * 29 + k) % 251);
        if (t == ember::kBool) {
            for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>(i % 2);
        }
        if (t == ember::kFloat16) {  // no NaN patterns: exponent bits below all-ones
            for (std::size_t i = 1; i < data.size(); i += 2) data[i] &= std::byte{0x3f};
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
    out.emplace_back("x.row2", row);
    out.emplace_back("scalar", scalar);
    out.emplace_back("empty", es::make_record(ember::kFloat32, {0, 3}, nullptr));
    out.emplace_back("huge_dim", es::make_record(ember::kInt16, {0, int64_t(5) << 30}, nullptr));
    std::vector<uint8_t> big(70000);
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 7);
    out.emplace_back("big", es::make_record(ember::kUInt8, {300, 2, 1, 1, 1, 0}, nullptr));
    out.emplace_back("bigger", es::make_record(ember::kUInt8, {70000}, big.data()));
    out.emplace_back("caf\xc3\xa9", es::make_record(ember::kInt32, {1}, &k));
    return out;
}

// The local header fields of the record named `name` in `bytes` (walking the archive).
struct Local {
    std::string name;
    uint16_t flags, method;
    uint64_t data_offset, size;
};

std::vector<Local> locals(const std::vector<std::byte>& bytes) {
    std::vector<Local> out;
    std::size_t p = 0;
    while (p + 30 <= bytes.size() && es::detail::load_le32(bytes.data() + p) == 0x04034b50) {
        const std::byte* h = bytes.data() + p;
        Local l;
        l.flags = es::detail::load_le16(h + 6);
        l.method = es::detail::load_le16(h + 8);
        l.size = es::detail::load_le32(h + 22);
        uint16_t name_len = es::detail::load_le16(h + 26), extra_len = es::detail::load_le16(h + 28);
        l.name.assign(reinterpret_cast<const char*>(h + 30), name_len);
        l.data_offset = p + 30 + name_len + extra_len;
        p = static_cast<std::size_t>(l.data_offset + l.size);
        out.push_back(l);
    }
    return out;
}

std::string text_of(const std::shared_ptr<const es::Buffer>& b) {
    return std::string(reinterpret_cast<const char*>(b->data()), b->size());
}

TEST(TorchWriter, LayoutAsTorchSaveWritesIt) {
    float w[6] = {0, 1, 2, 3, 4, 5};
    int64_t b[2] = {7, -1};
    es::TensorRecords records;
    records.emplace_back("w", es::make_record(ember::kFloat32, {2, 3}, w));
    records.emplace_back("b", es::make_record(ember::kInt64, {2}, b));
    const auto bytes = es::serialize_torch_checkpoint(records, "model");

    const auto ls = locals(bytes);
    std::vector<std::string> names;
    for (const auto& l : ls) {
        SCOPED_TRACE(l.name);
        names.push_back(l.name);
        EXPECT_EQ(l.method, 0);  // stored
        EXPECT_EQ(l.flags, 0x800);  // UTF-8 names; sizes and CRC in the local header
        EXPECT_EQ(l.data_offset % 64, 0u);
    }
    EXPECT_EQ(names, (std::vector<std::string>{"model/data.pkl", "model/.format_version",
                                               "model/.storage_alignment", "model/byteorder",
                                               "model/data/0", "model/data/1", "model/version",
                                               "model/.data/serialization_id"}));

    es::detail::ZipReader zip(buffer_of(bytes), "m.pt", /*check_crc32=*/true);
    EXPECT_EQ(zip.prefix(), "model");
    EXPECT_EQ(text_of(zip.read("version")), "3\n");
    EXPECT_EQ(text_of(zip.read("byteorder")), "little");
    EXPECT_EQ(text_of(zip.read(".format_version")), "1");
    EXPECT_EQ(text_of(zip.read(".storage_alignment")), "64");
    const std::string id = text_of(zip.read(".data/serialization_id"));
    EXPECT_EQ(id.size(), 40u);
    EXPECT_EQ(id.find_first_not_of("0123456789"), std::string::npos) << id;
    auto w_bytes = zip.read("data/0");  // CRC-checked
    ASSERT_EQ(w_bytes->size(), sizeof w);
    EXPECT_EQ(std::memcmp(w_bytes->data(), w, sizeof w), 0);
    EXPECT_EQ(zip.size_of("data/1"), sizeof b);

    // torch.save's pickle (protocol 2) without its memo: what pickletools shows for
    // torch.save(OrderedDict(w=..., b=...)) less the BINPUT/BINGET opcodes
    const std::string rebuild = "ctorch._utils\n_rebuild_tensor_v2\n((X\x07\0\0\0storage"s;
    const std::string hooks = "ccollections\nOrderedDict\n)R"s;
    const std::string expected =
        "\x80\x02"s + "ccollections\nOrderedDict\n)R(" +                        //
        "X\x01\0\0\0w"s + rebuild + "ctorch\nFloatStorage\n" + "X\x01\0\0\0"s + "0" +
        "X\x03\0\0\0"s + "cpu" + "K\x06tQ" + "K\x00"s + "K\x02K\x03\x86" + "K\x03K\x01\x86" +
        "\x89" + hooks + "tR" +                                                 //
        "X\x01\0\0\0b"s + rebuild + "ctorch\nLongStorage\n" + "X\x01\0\0\0"s + "1" +
        "X\x03\0\0\0"s + "cpu" + "K\x02tQ" + "K\x00"s + "K\x02\x85" + "K\x01\x85" +
        "\x89" + hooks + "tR" + "u.";
    EXPECT_EQ(to_hex(bytes_of(text_of(zip.read("data.pkl")))), to_hex(bytes_of(expected)));

    // the reader gives the tensors back, in order
    auto back = es::deserialize_torch_checkpoint(buffer_of(bytes), "m.pt");
    ASSERT_EQ(back.size(), 2u);
    EXPECT_EQ(back[0].first, "w");
    EXPECT_EQ(back[1].first, "b");
    EXPECT_EQ(back[1].second.dtype, ember::kInt64);
    EXPECT_EQ(std::memcmp(back[1].second.data(), b, sizeof b), 0);
}

TEST(TorchWriter, EveryRecordRoundTripsThroughTheReader) {
    const auto records = varied_records();
    const auto bytes = es::serialize_torch_checkpoint(records);
    auto back = es::deserialize_torch_checkpoint(buffer_of(bytes), "v.pt");
    ASSERT_EQ(back.size(), records.size());
    for (std::size_t i = 0; i < records.size(); ++i) {
        SCOPED_TRACE(records[i].first);
        const auto& [name, r] = back[i];
        EXPECT_EQ(name, records[i].first);
        EXPECT_EQ(r.dtype, records[i].second.dtype);
        EXPECT_EQ(r.shape, records[i].second.shape);
        EXPECT_EQ(r.strides, es::contiguous_strides(r.shape));
        EXPECT_EQ(r.storage_offset, 0);
        EXPECT_FALSE(r.requires_grad);
        EXPECT_EQ(to_hex(es::contiguous_bytes(r)), to_hex(es::contiguous_bytes(records[i].second)));
    }
    // every local header's data is 64-byte aligned, every record stored
    for (const auto& l : locals(bytes)) {
        EXPECT_EQ(l.data_offset % 64, 0u) << l.name;
        EXPECT_EQ(l.method, 0) << l.name;
    }
    EXPECT_EQ(locals(bytes).size(), records.size() + 6);
}

TEST(TorchWriter, ArchiveNameIsTheFileStem) {
    TempDir dir;
    es::TensorRecords one;
    one.emplace_back("a", es::make_record(ember::kFloat32, {1}, es::Buffer::allocate(4)));
    auto prefix_of = [&](const std::string& file) {
        es::write_torch_checkpoint(dir.file(file), one);
        return es::detail::ZipReader(es::Buffer::read_file(dir.file(file)), file, true).prefix();
    };
    EXPECT_EQ(prefix_of("generator-checkpoint.pt"), "generator-checkpoint");
    EXPECT_EQ(prefix_of("x.tar.pth"), "x.tar");
    EXPECT_EQ(prefix_of("noext"), "noext");
    EXPECT_EQ(prefix_of(".pt"), "archive");
    EXPECT_EQ(prefix_of("caf\xc3\xa9 1.pt"), "caf\xc3\xa9 1");
    EXPECT_EQ(prefix_of("caf\xe9.pt"), "archive");  // not UTF-8
    EXPECT_EQ(es::read_torch_checkpoint(dir.file("x.tar.pth")).size(), 1u);
}

TEST(TorchWriter, Errors) {
    TempDir dir;
    es::TensorRecords dup;
    dup.emplace_back("a", es::make_record(ember::kFloat32, {0}, nullptr));
    dup.emplace_back("a", es::make_record(ember::kFloat32, {0}, nullptr));
    EXPECT_EQ(error_of([&] { es::write_torch_checkpoint(dir.file("d.pt"), dup); }),
              dir.file("d.pt") + ": duplicate tensor name 'a'");
    es::TensorRecords bad;
    es::TensorRecord short_storage;  // 2 elements over 4 bytes
    short_storage.shape = {2};
    short_storage.strides = {1};
    short_storage.storage = es::Buffer::allocate(4);
    bad.emplace_back("a", short_storage);
    EXPECT_EQ(error_of([&] { es::write_torch_checkpoint(dir.file("b.pt"), bad); }).rfind(dir.file("b.pt") + ": tensor 'a'", 0), 0u);
    EXPECT_EQ(error_of([&] { es::serialize_torch_checkpoint({}, "a/b"); }),
              "serialize_torch_checkpoint: invalid archive name 'a/b'");
    const std::string missing = dir.file("nope/x.pt");
    EXPECT_EQ(error_of([&] { es::write_torch_checkpoint(missing, {}); }),
              missing + ": cannot create a temporary file in '" + dir.file("nope") +
                  "': No such file or directory");
    EXPECT_FALSE(file_exists(dir.file("d.pt")));
    EXPECT_FALSE(file_exists(dir.file("b.pt")));
}

TEST(TorchWriter, PythonReadsWhatCppWrites) {
    std::string python = test_python();
    if (python.empty()) {
        GTEST_SKIP() << "no Python with ember and torch (golden_serialize.py found none; "
                        "EMBER_TEST_PYTHON is not set)";
    }
    TempDir dir;
    const auto records = varied_records();
    es::write_torch_checkpoint(dir.file("cpp.pt"), records);
    std::string out;
    int rc = run_command(python + " '" + make_fixtures_script() + "' --dump-torch '" +
                             dir.file("cpp.pt") + "'",
                         &out);
    ASSERT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("# type OrderedDict OrderedDict\n"), std::string::npos) << out;
    std::istringstream in(out);
    Manifest m = parse_manifest(in);
    ASSERT_EQ(m.tensors.size(), records.size()) << out;
    for (std::size_t i = 0; i < records.size(); ++i) {
        const auto& e = m.tensors[i];
        const es::TensorRecord& r = records[i].second;
        SCOPED_TRACE(records[i].first);
        EXPECT_EQ(e.name, records[i].first);  // in the order written
        EXPECT_EQ(e.dtype, ember::dtype_name(r.dtype));
        EXPECT_EQ(e.shape, r.shape);
        EXPECT_EQ(e.strides, es::contiguous_strides(r.shape));
        EXPECT_EQ(e.offset, 0);
        EXPECT_FALSE(e.requires_grad);
        EXPECT_EQ(to_hex(e.bytes), to_hex(es::contiguous_bytes(r)));
    }
}

}  // namespace
