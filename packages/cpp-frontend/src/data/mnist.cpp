// datasets::MNIST: the idx files of the MNIST digits (big-endian int32 header: magic 2051
// for images with count, rows and cols; magic 2049 for labels with count; then one unsigned
// byte per pixel or label).
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>

#include "ember/data/datasets.h"
#include "ember/factories.h"

namespace ember {
namespace data {
namespace datasets {
namespace {

constexpr uint32_t kImageMagicNumber = 2051;
constexpr uint32_t kTargetMagicNumber = 2049;

std::string join_path(const std::string& root, const char* name) {
    if (root.empty() || root.back() == '/') return root + name;
    return root + "/" + name;
}

class IdxReader {
public:
    IdxReader(std::string path, const char* what) : path_(std::move(path)), what_(what) {
        in_.open(path_, std::ios::binary);
        EMBER_CHECK(in_.is_open(), "Error opening ", what_, " file at ", path_);
    }

    uint32_t read_uint32(const char* field) {
        unsigned char bytes[4];
        read_exactly(bytes, 4, field);
        return (uint32_t{bytes[0]} << 24) | (uint32_t{bytes[1]} << 16) | (uint32_t{bytes[2]} << 8) | bytes[3];
    }

    void expect_magic(uint32_t expected) {
        const uint32_t magic = read_uint32("magic number");
        EMBER_CHECK(magic == expected, "MNIST ", what_, " file ", path_, ": expected the magic number ", expected,
                    " but found ", magic, " (not an uncompressed idx file?)");
    }

    void read_exactly(void* out, std::size_t n, const char* field) {
        in_.read(static_cast<char*>(out), static_cast<std::streamsize>(n));
        const auto got = static_cast<std::size_t>(in_.gcount());
        EMBER_CHECK(got == n, "MNIST ", what_, " file ", path_, " is truncated: expected ", n, " bytes of ", field,
                    ", read ", got);
    }

private:
    std::string path_;
    const char* what_;
    std::ifstream in_;
};

Tensor read_images(const std::string& root, bool train) {
    IdxReader reader(join_path(root, train ? "train-images-idx3-ubyte" : "t10k-images-idx3-ubyte"), "images");
    reader.expect_magic(kImageMagicNumber);
    const int64_t count = reader.read_uint32("image count");
    const int64_t rows = reader.read_uint32("row count");
    const int64_t cols = reader.read_uint32("column count");
    Tensor images = empty({count, 1, rows, cols}, kByte);
    reader.read_exactly(images.data_ptr<uint8_t>(), static_cast<std::size_t>(images.numel()), "pixels");
    return images.to(kFloat32).div_(255);
}

Tensor read_targets(const std::string& root, bool train) {
    IdxReader reader(join_path(root, train ? "train-labels-idx1-ubyte" : "t10k-labels-idx1-ubyte"), "labels");
    reader.expect_magic(kTargetMagicNumber);
    const int64_t count = reader.read_uint32("label count");
    Tensor targets = empty({count}, kByte);
    reader.read_exactly(targets.data_ptr<uint8_t>(), static_cast<std::size_t>(count), "labels");
    return targets.to(kInt64);
}

}  // namespace

MNIST::MNIST(const std::string& root, Mode mode)
    : images_(read_images(root, mode == Mode::kTrain)),
      targets_(read_targets(root, mode == Mode::kTrain)),
      is_train_(mode == Mode::kTrain) {
    EMBER_CHECK(images_.size(0) == targets_.size(0), "MNIST in ", root, ": the images file holds ", images_.size(0),
                " images but the labels file ", targets_.size(0), " labels");
}

Example<> MNIST::get(std::size_t index) {
    const auto n = static_cast<std::size_t>(images_.size(0));
    EMBER_CHECK_INDEX(index < n, "index ", index, " is out of range for MNIST of size ", n);
    const auto i = static_cast<int64_t>(index);
    return {images_[i], targets_[i]};
}

std::optional<std::size_t> MNIST::size() const { return static_cast<std::size_t>(images_.size(0)); }

}  // namespace datasets
}  // namespace data
}  // namespace ember
