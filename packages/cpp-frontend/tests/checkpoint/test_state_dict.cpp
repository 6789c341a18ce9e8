// Tensors <-> records, plain state dicts in and out of files, and deflated zip checkpoints.
#include <algorithm>
#include <cstring>
#include <random>

#include "checkpoint/checkpoint_test_util.h"
#include "ember/checkpoint.h"
#include "ember/factories.h"
#include "ember/ops.h"

namespace {

using namespace ember_checkpoint_test;  // NOLINT
using ember::StateDict;
using ember::Tensor;

StateDict every_dtype() {
    StateDict sd;
    ember::manual_seed(3);
    sd.insert("f32", ember::randn({3, 4}));
    sd.insert("f64", ember::randn({2, 2}, ember::kFloat64));
    sd.insert("f16", ember::randn({5}).to(ember::kFloat16));
    sd.insert("i64", ember::arange(-3, 3));
    sd.insert("i32", ember::arange(6, ember::kInt32).reshape({2, 3}));
    sd.insert("i16", ember::tensor({-7, 8}, ember::kInt16));
    sd.insert("i8", ember::tensor({-128, 127}, ember::kInt8));
    sd.insert("u8", ember::tensor({0, 255}, ember::kUInt8));
    sd.insert("bool", ember::tensor({true, false, true}));
    sd.insert("scalar", ember::tensor(2.5));
    sd.insert("empty", ember::zeros({0, 3}));
    Tensor base = ember::arange(24, ember::kFloat32).reshape({4, 6});
    sd.insert("t", base.t());                                        // strides (1, 6)
    sd.insert("cols", base.slice(1, 1, 5, 2));                       // a strided slice
    return sd;
}

TEST(StateDict, SafetensorsRoundTripIsBitExact) {
    TempDir dir;
    StateDict sd = every_dtype();
    sd["f32"].requires_grad_(true);
    ember::save(sd, dir.file("all.safetensors"));
    StateDict back = ember::load_state_dict(dir.file("all.safetensors"));
    ASSERT_EQ(back.size(), sd.size());
    std::vector<std::string> keys = back.keys();
    EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));  // safetensors lists them by name
    for (const auto& item : sd) {
        SCOPED_TRACE(item.key());
        ASSERT_TRUE(back.contains(item.key()));
        EXPECT_TRUE(same_bits(back[item.key()], item.value()));
        EXPECT_TRUE(back[item.key()].is_contiguous());
        EXPECT_FALSE(back[item.key()].requires_grad());
    }
    // the bytes are what a second save writes: a load/save cycle changes nothing
    ember::save(back, dir.file("again.safetensors"));
    EXPECT_TRUE(read_bytes(dir.file("all.safetensors")) == read_bytes(dir.file("again.safetensors")));
    // metadata goes into the header
    ember::save(sd, dir.file("meta.safetensors"), {{"format", "pt"}});
    EXPECT_EQ(es::read_safetensors(dir.file("meta.safetensors")).metadata.at("format"), "pt");
}

TEST(StateDict, RecordsAndTensors) {
    float values[6] = {1, 2, 3, 4, 5, 6};
    es::TensorRecord record = es::make_record(ember::kFloat32, {2, 3}, values);
    Tensor shared = ember::to_tensor(record);
    EXPECT_EQ(shared.data_ptr(), static_cast<const void*>(record.data()));  // no copy
    Tensor copied = ember::to_tensor(record, /*copy=*/true);
    EXPECT_NE(copied.data_ptr(), static_cast<const void*>(record.data()));
    EXPECT_TRUE(same_bits(shared, copied));
    EXPECT_TRUE(shared.equal(ember::tensor({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}})));
    // the tensor keeps the record's memory alive
    record = {};
    EXPECT_EQ(shared.sum().item<float>(), 21.f);

    // a read-only buffer gives a copy; a strided record keeps its strides
    auto readonly = es::Buffer::wrap(values, sizeof values, nullptr);
    es::TensorRecord strided;
    strided.dtype = ember::kFloat32;
    strided.shape = {3, 2};
    strided.strides = {1, 3};
    strided.storage = readonly;
    Tensor t = ember::to_tensor(strided);
    EXPECT_NE(t.data_ptr(), static_cast<void*>(values));
    EXPECT_TRUE(t.equal(ember::tensor({{1.f, 4.f}, {2.f, 5.f}, {3.f, 6.f}})));
    auto writable = es::Buffer::copy_of(values, sizeof values);
    strided.storage = writable;
    strided.storage_offset = 1;
    strided.shape = {2, 2};
    Tensor view = ember::to_tensor(strided);
    EXPECT_EQ(view.strides(), (std::vector<int64_t>{1, 3}));
    EXPECT_EQ(view.storage_offset(), 1);
    EXPECT_TRUE(view.equal(ember::tensor({{2.f, 5.f}, {3.f, 6.f}})));

    // a bad record: the error names it
    strided.storage_offset = 5;
    EXPECT_EMBER_ERROR([&] { ember::to_tensor(strided, false, "tensor 'w'"); }, "tensor 'w': ", "");

    // tensors to records view the tensor's storage, strides and all
    Tensor base = ember::arange(12, ember::kFloat64).reshape({3, 4});
    Tensor col = base.select(1, 2);
    es::TensorRecord r = ember::to_record(col);
    EXPECT_EQ(r.shape, (std::vector<int64_t>{3}));
    EXPECT_EQ(r.strides, (std::vector<int64_t>{4}));
    EXPECT_EQ(r.storage_offset, 2);
    EXPECT_EQ(static_cast<const void*>(r.data()), col.data_ptr());
    EXPECT_TRUE(same_bits(ember::to_tensor(r, true), col));
    EXPECT_EMBER_ERROR([&] { ember::to_record(Tensor()); }, "to_record: ", "undefined");
}

TEST(StateDict, ReadsPythonTensorFiles) {
    EMBER_CHECKPOINT_GOLDEN(golden);
    StateDict st = ember::load_state_dict(golden + "/modules/tensors.safetensors");
    StateDict pt = ember::load_state_dict(golden + "/modules/tensors.pt");
    for (const auto& item : st) {
        SCOPED_TRACE(item.key());
        ASSERT_TRUE(pt.contains(item.key()));
        EXPECT_TRUE(same_bits(item.value(), pt[item.key()]));
    }
    EXPECT_EQ(st["f16"].scalar_type(), ember::kFloat16);
    EXPECT_TRUE(st["i8"].equal(ember::tensor({-128, 127}, ember::kInt8)));
    EXPECT_TRUE(st["u8"].equal(ember::tensor({0, 255}, ember::kUInt8)));
    EXPECT_TRUE(st["bool"].equal(ember::tensor({true, false, true})));
    EXPECT_EQ(st["scalar"].dim(), 0);
    EXPECT_EQ(st["scalar"].item<double>(), 2.5);
    EXPECT_EQ(st["empty"].sizes(), (std::vector<int64_t>{0, 3}));
    // the .pt keeps Python's views: row and t share base's storage
    Tensor base = pt["base"], row = pt["row"], t = pt["t"];
    EXPECT_TRUE(base.is_alias_of(row));
    EXPECT_TRUE(base.is_alias_of(t));
    EXPECT_EQ(row.storage_offset(), 6);
    EXPECT_EQ(t.strides(), (std::vector<int64_t>{1, 6}));
    EXPECT_TRUE(t.equal(base.t()));
    base.index_put_({1, 0}, 100.0);
    EXPECT_EQ(row.index({0}).item<float>(), 100.f);
    // the keys in file order (Python's dict order)
    EXPECT_EQ(pt.keys().back(), "t");
    EXPECT_EQ(pt.keys().front(), "f32");
}

TEST(StateDict, ReadsDeflatedAndTorchWrittenCheckpoints) {
    EMBER_CHECKPOINT_GOLDEN(golden);
    StateDict st = ember::load_state_dict(golden + "/modules/net.safetensors");
    // (one initializer list, not a push_back: GCC 12 at -O1 warns falsely about that push_back,
    // -Warray-bounds inside std::string's move, once the headers come precompiled)
    const std::vector<std::string> files =
        file_exists(golden + "/modules/net_torch.pt")
            ? std::vector<std::string>{"net.pt", "net_deflated.pt", "net_torch.pt"}
            : std::vector<std::string>{"net.pt", "net_deflated.pt"};
    for (const auto& name : files) {
        SCOPED_TRACE(name);
        StateDict sd = ember::load_state_dict(golden + "/modules/" + name);
        ASSERT_EQ(sd.size(), st.size());
        for (const auto& item : sd) {
            ASSERT_TRUE(st.contains(item.key())) << item.key();
            EXPECT_TRUE(same_bits(item.value(), st[item.key()])) << item.key();
        }
        EXPECT_EQ(sd.keys().front(), "features.0.weight");  // state_dict order
    }
    EXPECT_EQ(st["features.1.num_batches_tracked"].scalar_type(), ember::kInt64);
    EXPECT_EQ(st["features.1.num_batches_tracked"].item<int64_t>(), 1);
    // mapped: the deflated records are inflated into memory of their own
    es::ReadOptions mapped;
    mapped.mmap = true;
    StateDict m = ember::load_state_dict(golden + "/modules/net_deflated.pt", mapped);
    EXPECT_TRUE(same_bits(m["head.weight"], st["head.weight"]));
}

TEST(StateDict, FileErrorsNameTheFile) {
    TempDir dir;
    StateDict sd = every_dtype();
    const std::string path = dir.file("m.safetensors");
    ember::save(sd, path);
    auto bytes = read_bytes(path);
    write_bytes(dir.file("cut.safetensors"), std::vector<std::byte>(bytes.begin(), bytes.end() - 10));
    write_bytes(dir.file("junk.bin"), bytes_of("this is not a checkpoint at all"));
    EXPECT_EMBER_ERROR([&] { ember::load_state_dict(dir.file("nope.pt")); }, dir.file("nope.pt") + ": ",
                       "cannot open");
    EXPECT_EMBER_ERROR([&] { ember::load_state_dict(dir.file("cut.safetensors")); },
                       dir.file("cut.safetensors") + ": ", "");
    EXPECT_EMBER_ERROR([&] { ember::load_state_dict(dir.file("junk.bin")); }, dir.file("junk.bin") + ": ",
                       "neither a safetensors file nor a PyTorch zip checkpoint");
    EXPECT_EMBER_ERROR([&] { ember::save(sd, dir.file("m.pt"), {{"k", "v"}}); }, dir.file("m.pt") + ": ",
                       "has no place for metadata");  // .pt: a PyTorch checkpoint (test_torch_save.cpp)
    StateDict with_hole;
    with_hole.insert("w", Tensor());
    EXPECT_EMBER_ERROR([&] { ember::save(with_hole, dir.file("h.safetensors")); }, "the state dict's tensor 'w'", "");
    EXPECT_FALSE(file_exists(dir.file("h.safetensors")));
}

// Patches the uncompressed size of the first central directory record of a make_zip archive.
void set_declared_size(std::vector<std::byte>& zip, uint32_t size) {
    for (std::size_t i = 0; i + 4 <= zip.size(); ++i) {
        if (zip[i] == std::byte{0x50} && zip[i + 1] == std::byte{0x4b} && zip[i + 2] == std::byte{1} &&
            zip[i + 3] == std::byte{2}) {
            for (int k = 0; k < 4; ++k) zip[i + 24 + k] = static_cast<std::byte>(size >> (8 * k));
            return;
        }
    }
    FAIL() << "no central directory record";
}

TEST(StateDict, DeflatedZipRecordErrors) {
    // a deflate stream of one stored block holding "hello"
    auto hello = bytes_of(std::string("\x01\x05\x00\xfa\xffhello", 10));
    auto load = [](const std::vector<std::byte>& zip) {
        return error_of([&] { es::deserialize_torch_checkpoint(buffer_of(zip), "z.pt"); });
    };
    ZipEntry entry{"a/data.pkl", hello, 8, false};
    auto declared_more = make_zip({entry});  // declares 10 bytes, the stream holds 5
    EXPECT_NE(load(declared_more).find("z.pt: corrupt zip archive: record 'a/data.pkl' inflates to 5 bytes "
                                       "but declares 10"),
              std::string::npos)
        << load(declared_more);
    auto declared_less = make_zip({entry});
    set_declared_size(declared_less, 3);
    EXPECT_NE(load(declared_less).find("z.pt: record 'a/data.pkl' is compressed (deflate) and cannot be read: "
                                       "the data inflates to more than 3 bytes"),
              std::string::npos)
        << load(declared_less);
    auto bomb = make_zip({entry});
    set_declared_size(bomb, 0xfffffff0u);
    EXPECT_NE(load(bomb).find("declares 4294967280 bytes, more than its 10 bytes of deflate data can hold"),
              std::string::npos)
        << load(bomb);
    ZipEntry broken{"a/data.pkl", bytes_of("\x07garbage!!"), 8, false};
    EXPECT_NE(load(make_zip({broken})).find("z.pt: record 'a/data.pkl' is compressed (deflate) and cannot be "
                                            "read: corrupt deflate data: invalid block type"),
              std::string::npos);
    ZipEntry other{"a/data.pkl", hello, 12, false};  // bzip2
    EXPECT_NE(load(make_zip({other})).find("uses unsupported compression method 12"), std::string::npos);
    // right-sized: "hello" inflates and reaches the unpickler (which finds no pickle in it)
    auto right = make_zip({entry});
    set_declared_size(right, 5);
    EXPECT_EQ(load(right).rfind("z.pt: data.pkl: ", 0), 0u) << load(right);
}

TEST(StateDict, DeflatedCheckpointCorruptionIsAnError) {
    EMBER_CHECKPOINT_GOLDEN(golden);
    auto bytes = read_bytes(golden + "/modules/net_deflated.pt");
    std::mt19937 rng(7);
    int rejected = 0;
    for (int i = 0; i < 300; ++i) {
        auto copy = bytes;
        copy[rng() % copy.size()] ^= static_cast<std::byte>(1u << (rng() % 8));
        std::string msg = error_of([&] { es::deserialize_torch_checkpoint(buffer_of(copy), "d.pt"); });
        if (!msg.empty()) {
            ++rejected;
            EXPECT_EQ(msg.rfind("d.pt: ", 0), 0u) << msg;
        }
    }
    EXPECT_GT(rejected, 200);
}

}  // namespace
