// Private: the restricted unpickler of PyTorch checkpoints' data.pkl.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "ember/serialize.h"

namespace ember::serialize::detail {

// The dtype code of a bfloat16 storage (PyTorch's c10::ScalarType::BFloat16).
inline constexpr int kBFloat16Code = 15;

// A storage a pickle asks for: ('storage', <storage type>, key, location, numel[, view]).
struct StorageRequest {
    std::string key;
    int dtype_code = 0;  // a ScalarType value, or kBFloat16Code
    std::string location;
    uint64_t numel = 0;
};

// A loaded storage: `numel` elements of `dtype` (bfloat16 widened to float32).
struct LoadedStorage {
    std::shared_ptr<const Buffer> buffer;
    ScalarType dtype = ScalarType::Float;
    uint64_t numel = 0;
};

using StorageLoader = std::function<LoadedStorage(const StorageRequest&)>;

// Runs `pickle` (a protocol 0-5 pickle) in a restricted virtual machine, as Python Ember's
// weights_only unpickler does: only allow-listed globals resolve, only the rebuild
// functions and plain containers are called, BUILD sets state only on tensors and
// OrderedDicts, opcodes that run code by other routes are refused, and every length is
// checked against what is left of the pickle. Returns the tensors of the state dict it
// holds (or of the dict under `key` of a top-level dict), in insertion order. Errors are
// ember::Error "<where>: ...".
TensorRecords unpickle_state_dict(std::string_view pickle, const StorageLoader& loader,
                                  const std::optional<std::string>& key, const std::string& where);

// The same machine; returns the whole object as a Value tree (see read_torch_object).
Value unpickle_object(std::string_view pickle, const StorageLoader& loader, const std::string& where);

}  // namespace ember::serialize::detail
