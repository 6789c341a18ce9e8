// ember::data::datasets::MNIST (idx files written here: values, modes, sizes, errors for a
// missing, truncated or malformed file) and the per-example transforms (Normalize,
// TensorLambda) as mnist.cpp uses them: MNIST(root).map(Normalize<>(m, s)).map(Stack<>()).
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/error_of.h"
#include "ember/ember.h"

namespace {

using ember::Tensor;
namespace datasets = ember::data::datasets;
namespace transforms = ember::data::transforms;
namespace fs = std::filesystem;
using ember::testing::error_of;

void put_u32(std::string& out, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

void write_file(const fs::path& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// n images of rows x cols whose pixel j of image i is (i * 7 + j) % 256, labels i % 10.
std::string images_file(uint32_t n, uint32_t rows, uint32_t cols, uint32_t magic = 2051) {
    std::string s;
    put_u32(s, magic);
    put_u32(s, n);
    put_u32(s, rows);
    put_u32(s, cols);
    for (uint32_t i = 0; i < n; ++i) {
        for (uint32_t j = 0; j < rows * cols; ++j) s.push_back(static_cast<char>((i * 7 + j) % 256));
    }
    return s;
}

std::string labels_file(uint32_t n, uint32_t magic = 2049) {
    std::string s;
    put_u32(s, magic);
    put_u32(s, n);
    for (uint32_t i = 0; i < n; ++i) s.push_back(static_cast<char>(i % 10));
    return s;
}

class MNISTTest : public ::testing::Test {
protected:
    void SetUp() override {
        root_ = fs::path(EMBER_TEST_BINARY_DIR) /
                ("mnist_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
        fs::remove_all(root_);
        fs::create_directories(root_);
        write_file(root_ / "train-images-idx3-ubyte", images_file(5, 28, 28));
        write_file(root_ / "train-labels-idx1-ubyte", labels_file(5));
        write_file(root_ / "t10k-images-idx3-ubyte", images_file(3, 28, 28));
        write_file(root_ / "t10k-labels-idx1-ubyte", labels_file(3));
    }
    std::string root() const { return root_.string(); }
    fs::path root_;
};

TEST_F(MNISTTest, ReadsImagesAndTargetsOfBothModes) {
    datasets::MNIST train(root());
    EXPECT_TRUE(train.is_train());
    ASSERT_EQ(train.size().value(), 5u);
    EXPECT_EQ(train.images().sizes().vec(), (std::vector<int64_t>{5, 1, 28, 28}));
    EXPECT_EQ(train.images().scalar_type(), ember::kFloat32);
    EXPECT_EQ(train.targets().scalar_type(), ember::kInt64);
    EXPECT_EQ(train.targets().sizes().vec(), (std::vector<int64_t>{5}));
    // pixel j of image i is (i * 7 + j) % 256, scaled to [0, 1]
    EXPECT_FLOAT_EQ(train.images()[2][0][1][3].item<float>(), static_cast<float>((2 * 7 + 31) % 256) / 255.0f);
    EXPECT_FLOAT_EQ(train.images()[4][0][27][27].item<float>(), static_cast<float>((4 * 7 + 783) % 256) / 255.0f);
    EXPECT_EQ(train.targets()[4].item<int64_t>(), 4);

    ember::data::Example<> example = train.get(3);
    EXPECT_EQ(example.data.sizes().vec(), (std::vector<int64_t>{1, 28, 28}));
    EXPECT_EQ(example.target.item<int64_t>(), 3);
    EXPECT_TRUE(ember::equal(example.data, train.images()[3]));

    datasets::MNIST test(root(), datasets::MNIST::Mode::kTest);
    EXPECT_FALSE(test.is_train());
    EXPECT_EQ(test.size().value(), 3u);
    EXPECT_EQ(error_of([&] { (void)test.get(3); }), "index 3 is out of range for MNIST of size 3");
}

TEST_F(MNISTTest, RootWithTrailingSlashAndOtherImageSizes) {
    write_file(root_ / "t10k-images-idx3-ubyte", images_file(3, 4, 6));
    datasets::MNIST test(root() + "/", datasets::MNIST::Mode::kTest);
    EXPECT_EQ(test.images().sizes().vec(), (std::vector<int64_t>{3, 1, 4, 6}));
}

TEST_F(MNISTTest, ClearErrors) {
    const std::string images = (root_ / "train-images-idx3-ubyte").string();
    const std::string labels = (root_ / "train-labels-idx1-ubyte").string();
    EXPECT_EQ(error_of([&] { datasets::MNIST(root() + "/missing"); }),
              "Error opening images file at " + root() + "/missing/train-images-idx3-ubyte");

    std::string truncated = images_file(5, 28, 28);
    truncated.resize(truncated.size() - 10);
    write_file(images, truncated);
    EXPECT_EQ(error_of([&] { datasets::MNIST{root()}; }),
              "MNIST images file " + images + " is truncated: expected 3920 bytes of pixels, read 3910");
    write_file(images, images_file(5, 28, 28).substr(0, 6));
    EXPECT_EQ(error_of([&] { datasets::MNIST{root()}; }),
              "MNIST images file " + images + " is truncated: expected 4 bytes of image count, read 2");

    write_file(images, images_file(5, 28, 28, /*magic=*/0x1f8b0808));  // gzip's first bytes
    EXPECT_EQ(error_of([&] { datasets::MNIST{root()}; }),
              "MNIST images file " + images + ": expected the magic number 2051 but found 529205256"
              " (not an uncompressed idx file?)");

    write_file(images, images_file(5, 28, 28));
    write_file(labels, labels_file(4));
    EXPECT_EQ(error_of([&] { datasets::MNIST{root()}; }),
              "MNIST in " + root() + ": the images file holds 5 images but the labels file 4 labels");
    write_file(labels, labels_file(4, /*magic=*/2051));
    EXPECT_EQ(error_of([&] { datasets::MNIST{root()}; }),
              "MNIST labels file " + labels + ": expected the magic number 2049 but found 2051"
              " (not an uncompressed idx file?)");
    fs::remove(labels);
    EXPECT_EQ(error_of([&] { datasets::MNIST{root()}; }), "Error opening labels file at " + labels);
}

TEST_F(MNISTTest, NormalizeAndStackAsTheMnistExample) {
    auto dataset = datasets::MNIST(root())
                       .map(transforms::Normalize<>(0.1307, 0.3081))
                       .map(transforms::Stack<>());
    EXPECT_EQ(dataset.size().value(), 5u);
    auto loader = ember::data::make_data_loader<ember::data::samplers::SequentialSampler>(std::move(dataset), 2);
    std::vector<int64_t> sizes;
    datasets::MNIST raw(root());
    int64_t first = 0;
    for (auto& batch : *loader) {
        const int64_t n = batch.data.size(0);
        sizes.push_back(n);
        EXPECT_EQ(batch.data.sizes().vec(), (std::vector<int64_t>{n, 1, 28, 28}));
        Tensor expected = (raw.images().narrow(0, first, n) - 0.1307) / 0.3081;
        EXPECT_TRUE(ember::allclose(batch.data, expected, 1e-6, 1e-6));
        EXPECT_TRUE(ember::equal(batch.target, raw.targets().narrow(0, first, n)));
        first += n;
    }
    EXPECT_EQ(sizes, (std::vector<int64_t>{2, 2, 1}));
}

TEST(Transforms, NormalizePerChannelAndTensorLambda) {
    transforms::Normalize<> normalize({1.0, 2.0}, {2.0, 4.0});
    Tensor x = ember::ones({2, 1, 2});
    Tensor y = normalize(x);
    EXPECT_TRUE(ember::allclose(y, ember::tensor({0.0f, 0.0f, -0.25f, -0.25f}).view({2, 1, 2})));

    transforms::TensorLambda<> twice([](Tensor t) { return t * 2; });
    std::vector<ember::data::Example<>> batch{{ember::ones({1}), ember::zeros({1})}};
    auto out = twice.apply_batch(batch);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FLOAT_EQ(out[0].data.item<float>(), 2.0f);
    EXPECT_FLOAT_EQ(out[0].target.item<float>(), 0.0f);
}

}  // namespace
