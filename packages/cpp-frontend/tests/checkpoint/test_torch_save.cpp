// ember::save to .pt/.pth/.bin paths: a PyTorch zip checkpoint of the state dict (what
// torch.save(model.state_dict(), path) writes), read back by ember::load for every dtype,
// in the state dict's order; modules; errors that leave no file behind. (Python reading
// these files: tests/serialize/test_torch_writer.cpp.)
#include <dirent.h>
#include <sys/stat.h>

#include <complex>
#include <set>

#include "checkpoint/checkpoint_test_util.h"
#include "ember/checkpoint.h"
#include "ember/complex.h"
#include "ember/factories.h"
#include "ember/nn.h"
#include "ember/ops.h"

namespace {

using namespace ember_checkpoint_test;  // NOLINT
using ember::StateDict;
using ember::Tensor;
namespace nn = ember::nn;

// Every dtype of the C++ frontend, 0-d and empty tensors, and views (non-contiguous, and
// two sharing one storage), in an order that is not sorted.
StateDict every_dtype() {
    StateDict sd;
    ember::manual_seed(5);
    sd.insert("f32", ember::randn({3, 4}));
    sd.insert("f64", ember::randn({2, 2}, ember::kFloat64));
    sd.insert("f16", ember::randn({5}).to(ember::kFloat16));
    sd.insert("i64", ember::tensor({int64_t(-3), int64_t(1) << 40, INT64_MIN}, ember::kInt64));
    sd.insert("i32", ember::arange(6, ember::kInt32).reshape({2, 3}));
    sd.insert("i16", ember::tensor({-7, 8}, ember::kInt16));
    sd.insert("i8", ember::tensor({-128, 127}, ember::kInt8));
    sd.insert("u8", ember::tensor({0, 255}, ember::kUInt8));
    sd.insert("bool", ember::tensor({true, false, true}));
    sd.insert("c64", ember::complex(ember::randn({2, 2}), ember::randn({2, 2})));
    sd.insert("c128", ember::complex(ember::randn({3}, ember::kFloat64), ember::randn({3}, ember::kFloat64)));
    sd.insert("scalar", ember::tensor(2.5));
    sd.insert("empty", ember::zeros({0, 3}));
    Tensor base = ember::arange(24, ember::kFloat32).reshape({4, 6});
    sd.insert("t", base.t());                   // strides (1, 6)
    sd.insert("cols", base.slice(1, 1, 5, 2));  // a strided slice of the same storage
    sd.insert("a_last", ember::ones({2}));
    return sd;
}

std::set<std::string> files_in(const std::string& dir) {
    std::set<std::string> names;
    if (DIR* d = ::opendir(dir.c_str())) {
        while (const dirent* e = ::readdir(d)) names.insert(e->d_name);
        ::closedir(d);
    }
    return names;
}

TEST(TorchSave, EveryDtypeRoundTripsInOrder) {
    TempDir dir;
    StateDict sd = every_dtype();
    sd["f32"].requires_grad_(true);  // written as a state dict's tensor: requires_grad False
    for (const char* file : {"all.pt", "all.pth", "all.bin"}) {
        SCOPED_TRACE(file);
        const std::string path = dir.file(file);
        ember::save(sd, path);
        EXPECT_EQ(es::detect_checkpoint_format(path), es::CheckpointFormat::TorchZip);
        StateDict back = ember::load_state_dict(path);
        EXPECT_EQ(back.keys(), sd.keys());  // the state dict's order, not sorted
        for (const auto& item : sd) {
            SCOPED_TRACE(item.key());
            ASSERT_TRUE(back.contains(item.key()));
            const Tensor& got = back[item.key()];
            EXPECT_TRUE(same_bits(got, item.value()));
            EXPECT_TRUE(got.is_contiguous());
            EXPECT_EQ(got.storage_offset(), 0);
            EXPECT_FALSE(got.requires_grad());
        }
        // the two views of one storage are written as storages of their own
        EXPECT_NE(back["t"].storage().data(), back["cols"].storage().data());
        EXPECT_EQ(back["cols"].storage().nbytes(), 8u * 4u);
        // mapped and CRC-checked reads agree
        es::ReadOptions mapped;
        mapped.mmap = true;
        StateDict m = ember::load_state_dict(path, mapped);
        for (const auto& item : sd) EXPECT_TRUE(same_bits(m[item.key()], item.value())) << item.key();
    }
    // other paths keep getting safetensors (which has no complex128)
    StateDict plain;
    plain.insert("w", sd["f32"]);
    ember::save(plain, dir.file("all.safetensors"));
    EXPECT_EQ(es::detect_checkpoint_format(dir.file("all.safetensors")), es::CheckpointFormat::Safetensors);
    ember::save(plain, dir.file("all.ptx"));
    EXPECT_EQ(es::detect_checkpoint_format(dir.file("all.ptx")), es::CheckpointFormat::Safetensors);
    // no temporaries left behind
    EXPECT_EQ(files_in(dir.path()), (std::set<std::string>{".", "..", "all.pt", "all.pth", "all.bin",
                                                            "all.safetensors", "all.ptx"}));
}

TEST(TorchSave, EmptyStateDict) {
    TempDir dir;
    ember::save(StateDict(), dir.file("none.pt"));
    EXPECT_EQ(ember::load_state_dict(dir.file("none.pt")).size(), 0u);
}

TEST(TorchSave, ModuleRoundTrip) {
    TempDir dir;
    ember::manual_seed(1);
    nn::Sequential net(nn::Conv2d(nn::Conv2dOptions(1, 2, 3)), nn::BatchNorm2d(2), nn::Flatten(),
                       nn::Linear(2 * 4 * 4, 3));
    net->train();
    (void)net->forward(ember::randn({2, 1, 6, 6}));  // running statistics move
    const std::string path = dir.file("generator-checkpoint.pt");
    ember::save(net, path);

    ember::manual_seed(2);
    nn::Sequential other(nn::Conv2d(nn::Conv2dOptions(1, 2, 3)), nn::BatchNorm2d(2), nn::Flatten(),
                         nn::Linear(2 * 4 * 4, 3));
    EXPECT_TRUE(ember::load(other, path).empty());
    const StateDict a = net->state_dict(), b = other->state_dict();
    ASSERT_EQ(a.keys(), b.keys());
    for (const auto& item : a) EXPECT_TRUE(same_bits(item.value(), b[item.key()])) << item.key();
    EXPECT_EQ(ember::load_state_dict(path).keys(), a.keys());
    net->eval();
    other->eval();
    const Tensor x = ember::randn({1, 1, 6, 6});
    EXPECT_TRUE(ember::equal(net->forward(x), other->forward(x)));
}

TEST(TorchSave, OverwritesAtomically) {
    TempDir dir;
    const std::string path = dir.file("m.pt");
    StateDict one;
    one.insert("a", ember::ones({2}));
    ember::save(one, path);
    StateDict two;
    two.insert("b", ember::zeros({3}));
    two.insert("c", ember::arange(4));
    ember::save(two, path);
    EXPECT_EQ(ember::load_state_dict(path).keys(), (std::vector<std::string>{"b", "c"}));
    // a failed save (an undefined tensor) leaves the old file as it was
    const auto before = read_bytes(path);
    StateDict hole;
    hole.insert("w", Tensor());
    EXPECT_EMBER_ERROR([&] { ember::save(hole, path); }, "the state dict's tensor 'w'", "undefined");
    EXPECT_TRUE(read_bytes(path) == before);
    EXPECT_EQ(files_in(dir.path()), (std::set<std::string>{".", "..", "m.pt"}));
}

TEST(TorchSave, Errors) {
    TempDir dir;
    StateDict sd;
    sd.insert("w", ember::ones({2, 2}));
    // a folder that does not exist: the error names the path and the reason, nothing is made
    const std::string missing = dir.file("no/such/dir/m.pt");
    EXPECT_EMBER_ERROR([&] { ember::save(sd, missing); }, missing + ": ",
                       "cannot create a temporary file in '" + dir.file("no/such/dir") +
                           "': No such file or directory");
    EXPECT_FALSE(file_exists(missing));
    // a directory in the way of the rename
    const std::string folder = dir.file("taken.pt");
    ASSERT_EQ(::mkdir(folder.c_str(), 0755), 0);
    EXPECT_EMBER_ERROR([&] { ember::save(sd, folder); }, folder + ": ", "cannot replace the file");
    EXPECT_EQ(files_in(dir.path()), (std::set<std::string>{".", "..", "taken.pt"}));
    // metadata has no place in a PyTorch checkpoint
    EXPECT_EMBER_ERROR([&] { ember::save(sd, dir.file("m.pt"), {{"k", "v"}}); }, dir.file("m.pt") + ": ",
                       "has no place for metadata");
    EXPECT_FALSE(file_exists(dir.file("m.pt")));
    // names must be UTF-8, as a pickled str
    StateDict bad;
    bad.insert("w\xff", ember::ones({1}));
    EXPECT_EMBER_ERROR([&] { ember::save(bad, dir.file("bad.pt")); }, dir.file("bad.pt") + ": ",
                       "is not valid UTF-8");
    EXPECT_EQ(files_in(dir.path()), (std::set<std::string>{".", "..", "taken.pt"}));
}

}  // namespace
