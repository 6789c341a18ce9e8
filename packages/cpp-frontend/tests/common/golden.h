// Golden files: the safetensors files that an area's golden*.py writers put in EMBER_GOLDEN_DIR
// (see tests/CMakeLists.txt), read as tensors.
//
//   const auto& file = ember::testing::golden_file("conv_pool.safetensors");   // read once
//   Tensor x = ember::testing::golden_tensor("conv_pool.safetensors", "same2d.input");
//   ember::testing::GoldenTensors run = ember::testing::read_tensors(path);    // any file, uncached
#pragma once

#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include "ember/checkpoint.h"
#include "ember/serialize.h"
#include "ember/tensor.h"

namespace ember {
namespace testing {

// The tensors of a safetensors file by name (copies that own their data) and its metadata.
struct GoldenTensors {
    std::string path;
    std::map<std::string, Tensor> tensors;
    std::map<std::string, std::string> metadata;

    bool has(const std::string& name) const { return tensors.count(name) != 0; }
    // The tensor `name`; an error naming the file when it has none.
    const Tensor& at(const std::string& name) const {
        const auto it = tensors.find(name);
        if (it == tensors.end()) throw std::runtime_error(path + " has no tensor " + name);
        return it->second;
    }
};

inline GoldenTensors read_tensors(const std::string& path) {
    serialize::SafetensorsFile file = serialize::read_safetensors(path);
    GoldenTensors out;
    out.path = path;
    out.metadata = file.metadata;
    for (const auto& [name, record] : file.tensors) out.tensors.emplace(name, to_tensor(record, /*copy=*/true));
    return out;
}

#ifdef EMBER_GOLDEN_DIR
// EMBER_GOLDEN_DIR/`file`, read on first use (from any thread) and kept for the run.
inline const GoldenTensors& golden_file(const std::string& file) {
    static std::mutex mutex;
    static std::map<std::string, GoldenTensors> files;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = files.find(file);
    if (it == files.end()) it = files.emplace(file, read_tensors(std::string(EMBER_GOLDEN_DIR) + "/" + file)).first;
    return it->second;
}

// A fresh copy of the tensor `name` of golden file `file` (tests may modify it).
inline Tensor golden_tensor(const std::string& file, const std::string& name) {
    return golden_file(file).at(name).clone();
}
#endif

}  // namespace testing
}  // namespace ember
