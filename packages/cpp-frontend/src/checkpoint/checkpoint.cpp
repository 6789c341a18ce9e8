// ember::save / ember::load / ember::load_state_dict (include/ember/checkpoint.h): tensors
// to and from ember::serialize's records, and Python's load_state_dict over nn::Module.
#include "ember/checkpoint.h"

#include <sstream>
#include <unordered_map>
#include <utility>

#include "ember/autograd.h"
#include "ember/factories.h"

namespace ember {

namespace {

// Python Ember's repr of a shape: "ember.Size([2, 3])".
std::string size_repr(IntArrayRef sizes) {
    std::ostringstream os;
    os << "ember.Size([";
    for (std::size_t i = 0; i < sizes.size(); ++i) os << (i ? ", " : "") << sizes[i];
    os << "])";
    return os.str();
}

bool ends_with(const std::string& text, const std::string& suffix) {
    return text.size() >= suffix.size() &&
           text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Storages made for the buffers of one batch of records, so that records viewing one buffer
// give tensors sharing one storage.
using StorageCache = std::unordered_map<const serialize::Buffer*, Storage>;

Tensor record_to_tensor(const serialize::TensorRecord& record, bool copy, const std::string& what,
                        StorageCache* cache) {
    serialize::check_record(record, what);
    Tensor t;
    const auto& buffer = record.storage;
    if (copy || buffer == nullptr || !buffer->writable()) {
        t = empty(record.shape, record.dtype);
        serialize::copy_contiguous_bytes(record, static_cast<std::byte*>(t.data_ptr()),
                                         static_cast<std::size_t>(t.nbytes()));
    } else {
        Storage storage;
        if (cache != nullptr) {
            auto found = cache->find(buffer.get());
            if (found != cache->end()) storage = found->second;
        }
        if (!storage.defined()) {
            // The deleter keeps the buffer (a file's bytes, a mapping) alive with the storage.
            storage = Storage::from_blob(buffer->mutable_data(), buffer->size(),
                                         [keep = buffer](void*) {});
            if (cache != nullptr) cache->emplace(buffer.get(), storage);
        }
        t = Tensor(std::make_shared<TensorImpl>(std::move(storage), record.dtype, record.shape,
                                                record.strides, record.storage_offset));
    }
    if (record.requires_grad && is_floating_point(record.dtype)) t.requires_grad_(true);
    return t;
}

// A module tensor to fill from a checkpoint tensor of the same shape.
struct Copy {
    std::string key;
    Tensor destination;
    Tensor source;
};

// Python's Module._load_from_state_dict (called with strict=True, as load_state_dict calls
// it), over `module` and its children (recursively, every path to a shared child visited,
// as Python does): fills `copies`, the missing and unexpected keys, and the errors.
void collect(const nn::Module& module, const std::string& prefix, const StateDict& state_dict,
             std::vector<Copy>& copies, IncompatibleKeys& keys, std::vector<std::string>& errors) {
    StateDict local = module.named_parameters(/*recurse=*/false);
    for (const auto& item : module.named_buffers(/*recurse=*/false)) {
        local.insert(item.key(), item.value());
    }
    const auto children = module.named_children();
    for (const auto& item : local) {
        const std::string key = prefix + item.key();
        const Tensor& param = item.value();
        const Tensor* found = state_dict.find(key);
        if (found == nullptr) {
            keys.missing_keys.push_back(key);
            continue;
        }
        Tensor input = *found;
        if (!input.defined()) {
            errors.push_back("While copying the parameter named \"" + key +
                             "\", expected ember.Tensor or Tensor-like object from checkpoint "
                             "but received an undefined Tensor");
            continue;
        }
        if (param.dim() == 0 && input.dim() == 1 && input.size(0) == 1) input = input.reshape({});
        if (input.sizes() != param.sizes()) {
            errors.push_back("size mismatch for " + key + ": copying a param with shape " +
                             size_repr(input.sizes()) + " from checkpoint, the shape in current "
                             "model is " + size_repr(param.sizes()) + ".");
            continue;
        }
        copies.push_back({key, param, input});
    }
    for (const auto& item : state_dict) {
        const std::string& key = item.key();
        if (key.compare(0, prefix.size(), prefix) != 0) continue;
        const std::string rest = key.substr(prefix.size());
        const auto dot = rest.find('.');
        const bool known = dot != std::string::npos ? children.contains(rest.substr(0, dot))
                                                    : local.contains(rest);
        if (!known) keys.unexpected_keys.push_back(key);
    }
    for (const auto& child : children) {
        collect(*child.value(), prefix + child.key() + ".", state_dict, copies, keys, errors);
    }
}

std::string quoted_list(const std::vector<std::string>& keys) {
    std::string out;
    for (std::size_t i = 0; i < keys.size(); ++i) out += (i ? ", \"" : "\"") + keys[i] + "\"";
    return out;
}

[[noreturn]] void raise_load_errors(const nn::Module& module, const std::string& source,
                                    const std::vector<std::string>& errors) {
    std::string message = source.empty() ? "" : source + ": ";
    message += "Error(s) in loading state_dict for " + module.name() + ":";
    for (const auto& e : errors) message += "\n\t" + e;
    throw Error(message);
}

}  // namespace

// ------------------------------------------------------------------ Tensor <-> record

Tensor to_tensor(const serialize::TensorRecord& record, bool copy, const std::string& what) {
    return record_to_tensor(record, copy, what, nullptr);
}

serialize::TensorRecord to_record(const Tensor& tensor) {
    EMBER_CHECK(tensor.defined(), "to_record: the tensor is undefined");
    const Storage& storage = tensor.storage();
    serialize::TensorRecord record;
    record.dtype = tensor.scalar_type();
    record.shape = tensor.sizes().vec();
    record.strides = tensor.strides().vec();
    record.storage_offset = tensor.storage_offset();
    record.requires_grad = tensor.requires_grad();
    // The tensor's impl owns the storage: holding it keeps the bytes alive.
    record.storage = serialize::Buffer::wrap(static_cast<const void*>(storage.data()),
                                             storage.nbytes(),
                                             std::shared_ptr<const void>(tensor.getIntrusivePtr()));
    return record;
}

StateDict to_state_dict(const serialize::TensorRecords& records, bool copy) {
    StateDict out;
    out.reserve(records.size());
    StorageCache cache;
    for (const auto& [name, record] : records) {
        out.insert(name, record_to_tensor(record, copy, "tensor '" + name + "'", &cache));
    }
    return out;
}

serialize::TensorRecords to_records(const StateDict& state_dict) {
    serialize::TensorRecords out;
    out.reserve(state_dict.size());
    for (const auto& item : state_dict) {
        EMBER_CHECK(item.value().defined(), "the state dict's tensor '", item.key(),
                    "' is undefined");
        out.emplace_back(item.key(), to_record(item.value()));
    }
    return out;
}

// --------------------------------------------------------------------- state dicts

StateDict load_state_dict(const std::string& path, const serialize::ReadOptions& options) {
    return to_state_dict(serialize::read_checkpoint(path, options));
}

void save(const StateDict& state_dict, const std::string& path,
          const std::map<std::string, std::string>& metadata) {
    for (const char* ext : {".pt", ".pth", ".bin"}) {
        if (!ends_with(path, ext)) continue;
        EMBER_CHECK(metadata.empty(), path, ": a PyTorch checkpoint (", ext, ") has no place for "
                    "metadata; name the file *.safetensors to write it in the header");
        serialize::write_torch_checkpoint(path, to_records(state_dict));
        return;
    }
    serialize::write_safetensors(path, to_records(state_dict), metadata);
}

// ------------------------------------------------------------------------- modules

IncompatibleKeys load_state_dict(nn::Module& module, const StateDict& state_dict, bool strict,
                                 const std::string& source) {
    std::vector<Copy> copies;
    IncompatibleKeys keys;
    std::vector<std::string> errors;
    collect(module, "", state_dict, copies, keys, errors);
    // Python's order: missing keys, unexpected keys (when strict), then the per-tensor errors.
    if (strict && !keys.unexpected_keys.empty()) {
        errors.insert(errors.begin(), "Unexpected key(s) in state_dict: " +
                                          quoted_list(keys.unexpected_keys) + ". ");
    }
    if (strict && !keys.missing_keys.empty()) {
        errors.insert(errors.begin(), "Missing key(s) in state_dict: " +
                                          quoted_list(keys.missing_keys) + ". ");
    }
    if (!errors.empty()) raise_load_errors(module, source, errors);

    NoGradGuard no_grad;
    for (const Copy& c : copies) {
        try {
            c.destination.copy_(c.source);
        } catch (const Error& e) {
            std::ostringstream os;
            os << "While copying the parameter named \"" << c.key
               << "\", whose dimensions in the model are " << size_repr(c.destination.sizes())
               << " and whose dimensions in the checkpoint are " << size_repr(c.source.sizes())
               << ", an exception occurred : ('" << e.what() << "',).";
            raise_load_errors(module, source, {os.str()});
        }
    }
    return keys;
}

void save(const nn::Module& module, const std::string& path,
          const std::map<std::string, std::string>& metadata) {
    save(module.state_dict(), path, metadata);
}

IncompatibleKeys load(nn::Module& module, const std::string& path, bool strict,
                      const serialize::ReadOptions& options) {
    return load_state_dict(module, load_state_dict(path, options), strict, path);
}

}  // namespace ember
