// PyTorch zip checkpoints (torch.save, ember.save) read in C++.
#include <cstring>
#include <functional>

#include <gtest/gtest.h>

#include "ember/error.h"
#include "ember/serialize.h"
#include "serialize_test_util.h"

namespace {

using namespace ember_serialize_test;

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const ember::Error& e) {
        return e.what();
    }
    return "<no error>";
}

void expect_matches(const es::TensorRecords& got, const std::vector<Expected>& expected,
                    const std::string& prefix = "") {
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        const auto& [name, r] = got[i];
        const auto& e = expected[i];
        SCOPED_TRACE(e.file + ": " + e.name);
        EXPECT_EQ(prefix + name, e.name);  // file order
        EXPECT_EQ(ember::dtype_name(r.dtype), e.dtype);
        EXPECT_EQ(r.shape, e.shape);
        if (r.numel() > 0) {  // an empty tensor's strides can be anything
            EXPECT_EQ(r.strides, e.strides);
        }
        EXPECT_EQ(r.storage_offset, e.offset);
        EXPECT_EQ(r.requires_grad, e.requires_grad);
        EXPECT_NO_THROW(es::check_record(r));
        EXPECT_EQ(to_hex(es::contiguous_bytes(r)), to_hex(e.bytes));
    }
}

const es::TensorRecord& named(const es::TensorRecords& records, const std::string& name) {
    for (const auto& [n, r] : records) {
        if (n == name) return r;
    }
    throw std::runtime_error("no record " + name);
}

const char* kTorchFiles[] = {"torch_state_dict.pt", "torch_tensors.pt", "torch_tensors_proto4.pt",
                             "torch_scalars.pt", "ember_state_dict.pt", "ember_tensors.pt"};

TEST(TorchCheckpoint, ReadsWhatTorchAndEmberSave) {
    for (const char* file : kTorchFiles) {
        for (bool mmap : {false, true}) {
            SCOPED_TRACE(std::string(file) + (mmap ? " (mmap)" : ""));
            es::ReadOptions options;
            options.mmap = mmap;
            auto records = es::read_torch_checkpoint(fixture(file), options);
            expect_matches(records, manifest().of(file));
            for (const auto& [name, r] : records) {
                if (r.numel() == 0) continue;
                // mapped storages view the file, except bfloat16 ones (widened copies)
                EXPECT_EQ(r.storage->is_mapped(), mmap && name != "d_bfloat16") << name;
                EXPECT_EQ(reinterpret_cast<std::uintptr_t>(r.data()) % ember::element_size(r.dtype), 0u);
            }
        }
    }
}

TEST(TorchCheckpoint, ViewsOfOneStorageShareOneBuffer) {
    int checked = 0;
    for (const auto& [file, a, b] : manifest().shares) {
        SCOPED_TRACE(file + ": " + a + " / " + b);
        auto records = es::read_torch_checkpoint(fixture(file));
        EXPECT_EQ(named(records, a).storage.get(), named(records, b).storage.get());
        ++checked;
    }
    EXPECT_GE(checked, 6);
    auto records = es::read_torch_checkpoint(fixture("torch_tensors.pt"));
    EXPECT_NE(named(records, "d_float32").storage.get(), named(records, "x").storage.get());
    // bfloat16 storages are widened to float32, exactly
    const auto& bf = named(records, "d_bfloat16");
    EXPECT_EQ(bf.dtype, ember::kFloat32);
    std::vector<float> values(5);
    std::memcpy(values.data(), es::contiguous_bytes(bf).data(), 20);
    EXPECT_EQ(values, (std::vector<float>{-2.5f, -1.5f, -0.5f, 0.5f, 1.5f}));
}

TEST(TorchCheckpoint, NestedDictsAreReadByKey) {
    std::vector<Expected> model;
    for (const auto& e : manifest().of("torch_nested.pt")) model.push_back(e);
    expect_matches(es::read_torch_checkpoint(fixture("torch_nested.pt"), "model"), model, "model/");
    std::string path = fixture("torch_nested.pt");
    EXPECT_EQ(error_of([&] { es::read_torch_checkpoint(path); }),
              path + ": entry 'model' is a collections.OrderedDict, not a tensor (read a nested "
                     "state dict with read_torch_checkpoint(path, 'model'))");
    EXPECT_EQ(error_of([&] { es::read_torch_checkpoint(path, "weights"); }),
              path + ": the checkpoint has no key 'weights' (its keys: 'model', 'epoch', 'best', "
                     "'name', 'optimizer')");
    EXPECT_EQ(error_of([&] { es::read_torch_checkpoint(path, "epoch"); }),
              path + ": entry 'epoch' is a int, not a state dict (a dict of tensors)");
    EXPECT_EQ(error_of([&] { es::read_torch_checkpoint(path, "optimizer"); }),
              path + ": entry 'state' is a dict, not a tensor (read a nested state dict with "
                     "read_torch_checkpoint(path, 'state'))");
}

TEST(TorchCheckpoint, ReadCheckpointDetectsTheFormat) {
    EXPECT_EQ(es::detect_checkpoint_format(fixture("torch_tensors.pt")), es::CheckpointFormat::TorchZip);
    EXPECT_EQ(es::detect_checkpoint_format(fixture("ember_tensors.pt")), es::CheckpointFormat::TorchZip);
    EXPECT_EQ(es::detect_checkpoint_format(fixture("st_all_dtypes.safetensors")),
              es::CheckpointFormat::Safetensors);
    EXPECT_EQ(es::detect_checkpoint_format(fixture("expected.tsv")), es::CheckpointFormat::Unknown);
    EXPECT_EQ(es::read_checkpoint(fixture("torch_state_dict.pt")).size(),
              manifest().of("torch_state_dict.pt").size());
    EXPECT_EQ(es::read_checkpoint(fixture("ember_model.safetensors")).size(), 2u);
    EXPECT_NE(error_of([] { es::read_checkpoint(fixture("expected.tsv")); })
                  .find("neither a safetensors file nor a PyTorch zip checkpoint"),
              std::string::npos);
}

// ------------------------------------------------------------------- hand-made archives

std::string one_tensor_pickle(const std::string& storage = "FloatStorage", int numel = 2,
                              int offset = 0, std::vector<int64_t> size = {2},
                              std::vector<int64_t> stride = {1}) {
    PickleWriter p;
    p.proto().op('}').mark().str("w").tensor(storage, "0", numel, offset, size, stride).op('u').op('.');
    return p.bytes();
}

std::vector<std::byte> floats(std::vector<float> v) {
    std::vector<std::byte> out(v.size() * 4);
    std::memcpy(out.data(), v.data(), out.size());
    return out;
}

std::string load_error(const std::vector<std::byte>& archive, bool crc = true) {
    return error_of([&] { es::deserialize_torch_checkpoint(buffer_of(archive), "ckpt.pt", {}, crc); });
}

TEST(TorchCheckpoint, HandMadeArchive) {
    auto archive = make_checkpoint(one_tensor_pickle(), {{"0", floats({1.5f, -2})}});
    auto records = es::deserialize_torch_checkpoint(buffer_of(archive), "ckpt.pt");
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].first, "w");
    std::vector<float> got(2);
    std::memcpy(got.data(), records[0].second.data(), 8);
    EXPECT_EQ(got, (std::vector<float>{1.5f, -2}));
    // without the ZIP64 records (Python's zipfile writes none for small archives)
    std::vector<ZipEntry> entries = {{"a/data.pkl", bytes_of(one_tensor_pickle())},
                                     {"a/data/0", floats({3, 4})}};
    EXPECT_EQ(es::deserialize_torch_checkpoint(buffer_of(make_zip(entries, false)), "x").size(), 1u);
    // sizes and offsets in ZIP64 extra fields, as torch writes them for records over 4 GiB
    for (auto& e : entries) e.zip64_fields = true;
    auto z64 = es::deserialize_torch_checkpoint(buffer_of(make_zip(entries)), "x");
    ASSERT_EQ(z64.size(), 1u);
    std::memcpy(got.data(), z64[0].second.data(), 8);
    EXPECT_EQ(got, (std::vector<float>{3, 4}));
}

TEST(TorchCheckpoint, BigEndianArchivesAreSwapped) {
    std::vector<std::byte> be = {std::byte{0x3f}, std::byte{0xc0}, std::byte{0}, std::byte{0},
                                 std::byte{0xc0}, std::byte{0}, std::byte{0}, std::byte{0}};
    auto archive = make_checkpoint(one_tensor_pickle(), {{"0", be}}, "big\n");
    auto records = es::deserialize_torch_checkpoint(buffer_of(archive), "ckpt.pt");
    std::vector<float> got(2);
    std::memcpy(got.data(), records.at(0).second.data(), 8);
    EXPECT_EQ(got, (std::vector<float>{1.5f, -2}));
    EXPECT_NE(load_error(make_checkpoint(one_tensor_pickle(), {{"0", be}}, "middle")).find(
                  "invalid byteorder record 'middle'"),
              std::string::npos);
}

TEST(TorchCheckpoint, RejectsBrokenArchives) {
    auto good = make_checkpoint(one_tensor_pickle(), {{"0", floats({1, 2})}});
    struct Case {
        std::vector<std::byte> archive;
        std::string error;
    };
    std::vector<ZipEntry> deflated = {{"a/data.pkl", bytes_of(one_tensor_pickle()), 8}};
    std::vector<ZipEntry> encrypted = {{"a/data.pkl", bytes_of(one_tensor_pickle()), 0, true, 1}};
    std::vector<ZipEntry> script = {{"a/data.pkl", bytes_of(one_tensor_pickle())},
                                    {"a/constants.pkl", bytes_of("x")}};
    std::vector<ZipEntry> no_pickle = {{"a/version", bytes_of("3\n")}};
    std::vector<ZipEntry> two_folders = {{"a/data.pkl", bytes_of("x")}, {"b/data/0", bytes_of("y")}};
    std::vector<ZipEntry> no_folder = {{"data.pkl", bytes_of("x")}};
    std::vector<ZipEntry> twice = {{"a/data.pkl", bytes_of("x")}, {"a/data.pkl", bytes_of("y")}};
    std::vector<Case> cases = {
        {make_zip(deflated), "is compressed (deflate)"},
        {make_zip(encrypted), "is encrypted"},
        {make_zip(script), "TorchScript archive"},
        {make_zip(no_pickle), "the archive has no 'a/data.pkl' record"},
        {make_zip(two_folders), "not in the folder 'a/'"},
        {make_zip(no_folder), "is not in a folder"},
        {make_zip(twice), "duplicate record 'a/data.pkl'"},
        {make_checkpoint(one_tensor_pickle()), "refers to storage '0' but the archive has no 'archive/data/0'"},
        {make_checkpoint(one_tensor_pickle(), {{"0", floats({1, 2, 3})}}),
         "'archive/data/0' holds 12 bytes but the checkpoint declares 2 elements of float32"},
        {make_checkpoint(one_tensor_pickle("FloatStorage", 2, 1, {2}, {1}), {{"0", floats({1, 2})}}),
         "tensor of size [2], stride [1] and storage offset 1 is out of bounds for a storage of 2 elements"},
        {make_checkpoint(one_tensor_pickle("FloatStorage", 2, 0, {2, 2}, {1}), {{"0", floats({1, 2})}}),
         "size and stride differ in length"},
        {bytes_of("\x80\x02}q\x00."), "not a zip archive"},
        {std::vector<std::byte>(good.begin(), good.begin() + 100), "no end of central directory record"},
        {bytes_of("PK\x03\x04"), "corrupt zip archive"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.error);
        std::string got = load_error(c.archive);
        EXPECT_NE(got.find(c.error), std::string::npos) << got;
        EXPECT_EQ(got.rfind("ckpt.pt: ", 0), 0u) << got;
    }
}

TEST(TorchCheckpoint, ChecksCrc32UnlessAskedNotTo) {
    auto archive = read_bytes(fixture("torch_state_dict.pt"));
    // the first storage record holds 0.weight: change one byte of it
    auto records = es::deserialize_torch_checkpoint(buffer_of(archive), "a");
    std::string needle = "torch_state_dict/data/0";
    std::size_t local = 0;
    for (std::size_t i = 0; i + needle.size() < archive.size(); ++i) {
        if (std::memcmp(archive.data() + i, needle.data(), needle.size()) == 0) {
            local = i;
            break;
        }
    }
    ASSERT_GT(local, 0u);
    // the data follows the local header's name and extra field
    ASSERT_GE(local, 30u);
    std::size_t extra = std::to_integer<std::size_t>(archive[local - 2]) |
                        std::to_integer<std::size_t>(archive[local - 1]) << 8;
    std::size_t data = local + needle.size() + extra;
    archive[data + 1] ^= std::byte{0x40};
    std::string got = error_of([&] { es::deserialize_torch_checkpoint(buffer_of(archive), "s.pt"); });
    EXPECT_NE(got.find("s.pt: record 'torch_state_dict/data/0' is corrupted: CRC-32"), std::string::npos) << got;
    auto unchecked = es::deserialize_torch_checkpoint(buffer_of(archive), "s.pt", {}, false);
    EXPECT_EQ(unchecked.size(), records.size());
    // a CRC of 0 means none was computed
    std::vector<ZipEntry> entries = {{"a/data.pkl", bytes_of(one_tensor_pickle()), 0, false},
                                     {"a/data/0", floats({1, 2}), 0, false}};
    EXPECT_EQ(es::deserialize_torch_checkpoint(buffer_of(make_zip(entries)), "z").size(), 1u);
}

TEST(TorchCheckpoint, StorageDeclaredTwiceDifferently) {
    PickleWriter p;
    p.proto().op('}').mark();
    p.str("a").tensor("FloatStorage", "0", 2, 0, {2}, {1});
    p.str("b").tensor("IntStorage", "0", 2, 0, {2}, {1});
    p.op('u').op('.');
    std::string got = load_error(make_checkpoint(p.bytes(), {{"0", floats({1, 2})}}));
    EXPECT_NE(got.find("storage '0' is declared as 2 elements of float32 and as 2 elements of int32"),
              std::string::npos)
        << got;
}

TEST(TorchCheckpoint, RequiresGradOnlyForFloatingPoint) {
    PickleWriter p;
    p.proto().op('}').mark();
    p.str("f").tensor("FloatStorage", "0", 2, 0, {2}, {1}, true);
    p.str("i").tensor("LongStorage", "1", 1, 0, {}, {}, true);  // ignored, as PyTorch would
    p.op('u').op('.');
    std::vector<std::byte> one(8);
    auto records = es::deserialize_torch_checkpoint(
        buffer_of(make_checkpoint(p.bytes(), {{"0", floats({1, 2})}, {"1", one}})), "x");
    EXPECT_TRUE(named(records, "f").requires_grad);
    EXPECT_FALSE(named(records, "i").requires_grad);
    EXPECT_EQ(named(records, "i").dim(), 0);
}

}  // namespace
