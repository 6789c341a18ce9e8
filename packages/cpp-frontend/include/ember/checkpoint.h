// Weights in and out of C++: a model trained in Python runs in C++ and back.
//
//   // Python: ember.safetensors.save_file(model.state_dict(), "m.safetensors")
//   //     or: ember.save(model.state_dict(), "m.pt")   (torch.save writes the same format)
//   DigitsCNN model;
//   ember::load(model, "m.safetensors");      // or "m.pt": the format is read from the file
//   ember::save(model, "trained.safetensors");
//   ember::save(model, "trained.pt");          // a PyTorch zip checkpoint, as torch.save writes
//   // Python: model.load_state_dict(ember.safetensors.load_file("trained.safetensors"))
//   //     or: model.load_state_dict(torch.load("trained.pt", weights_only=True))
//
//   ember::StateDict sd = ember::load_state_dict("m.pt");   // name -> Tensor, file order
//   for (const auto& item : sd) std::cout << item.key() << " " << item.value().sizes() << "\n";
//
// Names are Python's state_dict keys (Module::state_dict(): parameters and buffers, dotted,
// "features.0.weight", "features.1.running_mean"), so the files are interchangeable with
// Python Ember and PyTorch. Reading goes through ember::serialize (include/ember/serialize.h):
// safetensors files, and PyTorch zip checkpoints (torch.save / ember.save) with no code
// execution (the restricted unpickler's allow-list, as Python Ember's weights_only loader).
// Writing produces safetensors, byte for byte what Python's safetensors package writes, or,
// for a path ending in .pt, .pth or .bin, a PyTorch zip checkpoint of the state dict (what
// torch.save(model.state_dict(), path) writes: serialize::write_torch_checkpoint).
//
// load(module, path) follows Python's module.load_state_dict(state_dict, strict=True): every
// parameter and buffer of the module is copied in place (under NoGradGuard, converted to the
// module tensor's dtype; the module's tensors keep their identity, so an optimizer holding
// them sees the new values) and, when strict, missing keys, unexpected keys and shape
// mismatches are collected and raised together in one ember::Error with PyTorch's wording,
// prefixed by the file:
//
//   m.pt: Error(s) in loading state_dict for DigitsCNN:
//   	Missing key(s) in state_dict: "classifier.1.bias".
//   	size mismatch for classifier.1.weight: copying a param with shape ember.Size([5, 64])
//   from checkpoint, the shape in current model is ember.Size([10, 64]).
//
// Nothing is copied when a strict load fails. Every problem with a file (missing, not a
// checkpoint, corrupt, truncated, an unsupported dtype) is an ember::Error naming the file.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "ember/export.h"
#include "ember/nn/module.h"
#include "ember/nn/ordered_dict.h"
#include "ember/optim/optimizer.h"
#include "ember/serialize.h"
#include "ember/tensor.h"

namespace ember {

// A state dict: name -> tensor in order (file order for torch checkpoints, sorted by name
// for safetensors files, Python's state_dict order for a module).
using StateDict = OrderedDict<std::string, Tensor>;

// -------------------------------------------------------------- Tensor <-> TensorRecord

// A tensor of the record's dtype, shape, strides and storage offset. Without `copy` it
// shares the record's memory when that memory is writable (a file read into memory, or a
// copy-on-write mapping; several records viewing one buffer give tensors sharing one
// storage, as torch.load gives), keeping the buffer alive; otherwise, or with `copy`, it is
// a new contiguous tensor holding a copy of the elements. requires_grad is the record's
// (floating dtypes only). Checks the record first (serialize::check_record; errors start
// with `what`).
EMBER_API Tensor to_tensor(const serialize::TensorRecord& record, bool copy = false,
                           const std::string& what = "tensor");

// A record viewing the tensor's storage (no copy: the record keeps the tensor's storage
// alive; its shape, strides and offset are the tensor's). The tensor must be defined.
EMBER_API serialize::TensorRecord to_record(const Tensor& tensor);

// The records as a state dict (to_tensor of each, sharing memory as described there), and
// back (to_record of each).
EMBER_API StateDict to_state_dict(const serialize::TensorRecords& records, bool copy = false);
EMBER_API serialize::TensorRecords to_records(const StateDict& state_dict);

// ------------------------------------------------------------------- plain state dicts

// The tensors of the safetensors file or PyTorch zip checkpoint at `path` (the format is
// read from its first bytes), sharing the memory the file was read into.
EMBER_API StateDict load_state_dict(const std::string& path,
                                    const serialize::ReadOptions& options = {});

// Writes `state_dict` to `path` as a safetensors file (atomically: see
// serialize::write_safetensors), with `metadata` in its header when not empty. A path
// ending in .pt, .pth or .bin gets a PyTorch zip checkpoint instead (atomically as well:
// serialize::write_torch_checkpoint), which Python reads with torch.load(path,
// weights_only=True) or ember.load(path): an OrderedDict of name -> tensor in the state
// dict's order, each tensor written contiguous with its own storage (tensors that shared
// memory are written separately); `metadata` must then be empty (the format has no place
// for it).
EMBER_API void save(const StateDict& state_dict, const std::string& path,
                    const std::map<std::string, std::string>& metadata = {});

// --------------------------------------------------------------------------- modules

// What a non-strict load found: the module's keys missing from the state dict and the
// state dict's keys the module does not have (Python's _IncompatibleKeys).
struct IncompatibleKeys {
    std::vector<std::string> missing_keys;
    std::vector<std::string> unexpected_keys;
    bool empty() const noexcept { return missing_keys.empty() && unexpected_keys.empty(); }
};

// Python's module.load_state_dict(state_dict, strict): copies each tensor of `state_dict`
// into the module's parameter or buffer of that name (in place, converted to its dtype; a
// 0-d tensor accepts a checkpoint tensor of shape [1]). Shape mismatches and undefined
// tensors are always errors; missing and unexpected keys are returned, and are errors when
// `strict`. All errors are raised together, before anything is copied, in one
// ember::Error: "Error(s) in loading state_dict for <module name>:\n\t...", prefixed by
// "<source>: " when `source` is not empty.
EMBER_API IncompatibleKeys load_state_dict(nn::Module& module, const StateDict& state_dict,
                                           bool strict = true, const std::string& source = "");

// Writes the module's state_dict() to `path` (safetensors, or a PyTorch checkpoint for
// .pt/.pth/.bin; see save above).
EMBER_API void save(const nn::Module& module, const std::string& path,
                    const std::map<std::string, std::string>& metadata = {});

// Loads the safetensors file or PyTorch zip checkpoint at `path` into the module (see
// load_state_dict above; errors are prefixed by the path).
EMBER_API IncompatibleKeys load(nn::Module& module, const std::string& path, bool strict = true,
                                const serialize::ReadOptions& options = {});

// The same for module holders (EMBER_MODULE types) and shared pointers to modules.
template <typename ModuleType>
void save(const nn::ModuleHolder<ModuleType>& module, const std::string& path,
          const std::map<std::string, std::string>& metadata = {}) {
    save(static_cast<const nn::Module&>(*module.ptr()), path, metadata);
}
template <typename ModuleType, std::enable_if_t<std::is_base_of_v<nn::Module, ModuleType>, int> = 0>
void save(const std::shared_ptr<ModuleType>& module, const std::string& path,
          const std::map<std::string, std::string>& metadata = {}) {
    save(static_cast<const nn::Module&>(*module), path, metadata);
}
template <typename ModuleType>
IncompatibleKeys load(const nn::ModuleHolder<ModuleType>& module, const std::string& path,
                      bool strict = true, const serialize::ReadOptions& options = {}) {
    return load(static_cast<nn::Module&>(*module.ptr()), path, strict, options);
}
template <typename ModuleType, std::enable_if_t<std::is_base_of_v<nn::Module, ModuleType>, int> = 0>
IncompatibleKeys load(const std::shared_ptr<ModuleType>& module, const std::string& path,
                      bool strict = true, const serialize::ReadOptions& options = {}) {
    return load(static_cast<nn::Module&>(*module), path, strict, options);
}

// ------------------------------------------------------------- optimizers and tensors

// Writes the optimizer's state (libtorch's torch::save(optimizer, path)) as a safetensors
// file in the layout of Python's optimizer.state_dict(), flattened to names:
// "state.<i>.<name>" for the state of parameter i, numbered across the groups in order
// (SGD's "momentum_buffer"; Adam's "step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"), and
// per group g "param_groups.<g>.params" (int64 parameter numbers) and "param_groups.<g>.lr".
// The other options of a group are not written. A path ending in .pt, .pth or .bin gets a
// PyTorch zip checkpoint of optimizer.state_dict() instead: Python's nested layout, exactly
// ({"state": {0: {"step": ..., "exp_avg": ...}}, "param_groups": [{"lr": ..., "betas": ...,
// ..., "params": [0, 1]}]}), which Python's optimizer.load_state_dict(torch.load(path,
// weights_only=True)) takes, in PyTorch and in Python Ember.
EMBER_API void save(const optim::Optimizer& optimizer, const std::string& path);

// Loads what save(optimizer, path) wrote into an optimizer of the same kind over parameters of
// the same shapes in groups of the same sizes (Python's optimizer.load_state_dict): the
// state is replaced as a whole and each group's lr is set (all its options, from a PyTorch
// checkpoint: what torch.save(optimizer.state_dict(), path) writes in Python is read too;
// see Optimizer::load_state_dict). Errors, raised before anything changes, are prefixed by
// the path: Python's "loaded state dict has a different number of parameter groups",
// "loaded state dict contains a parameter group that doesn't match the size of optimizer's
// group", a state dict of another optimizer, and a state whose shape is not its parameter's.
EMBER_API void load(optim::Optimizer& optimizer, const std::string& path);

// One tensor (libtorch's torch::save(tensor, path) / torch::load(tensor, path)): a
// safetensors file (or, for .pt/.pth/.bin, a PyTorch checkpoint of a dict) holding it
// under the name "tensor". load reads that name, or the one
// tensor of a file that holds only one, into `tensor` (which then owns a copy).
EMBER_API void save(const Tensor& tensor, const std::string& path);
EMBER_API void load(Tensor& tensor, const std::string& path);

}  // namespace ember
