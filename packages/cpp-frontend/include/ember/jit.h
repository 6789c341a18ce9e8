// Running a program saved from Python: ember::jit::load (libtorch's torch::jit::load).
//
//   // Python: ember.export.save(ember.export.export(model, (x,)), "m.ember")
//   //     or: ember.jit.save(ember.jit.trace(model, x), "m.ember")
//   ember::jit::Module m = ember::jit::load("m.ember");
//   ember::Tensor y = m.forward({x}).toTensor();
//   auto out = m.forward({ids, mask}).toTuple();          // a tuple or a model's output record
//   ember::Tensor hidden = out->elements()[0].toTensor();  // or out->at("last_hidden_state")
//
// The file (packages/core/src/ember/export/FORMAT.md) is a safetensors file: the weights
// are its tensors, the program (a graph of op calls, in JSON) sits in its metadata. Loading
// checks it all and runs nothing from it: each node's op must be one of this library's
// ops (supported_ops(); the unknown ones are named together in one error), every weight
// the graph reads must be in the file with the dtype and shape the graph expects, and
// every reference must name a value defined before it. A file that is truncated, of
// another format or format version, or broken in any of those ways raises a FormatError
// that says which.
//
// forward() binds its inputs to the program's arguments (by position, or by name through
// kwargs), checks them when the program was made by ember.export.export (dtypes, ranks,
// static sizes, the range of each dynamic dimension, the capture's guards: a GuardError
// names the input and dimension, in Python's words), then runs the nodes in order. Views
// share memory and in-place ops write through them as in Python. The program is fixed to
// the mode it was captured in (eval() on a program captured in eval mode is a no-op;
// train() raises). Parameters keep requires_grad, so outputs carry autograd history unless
// an ember::NoGradGuard is active.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "device.h"
#include "error.h"
#include "export.h"
#include "ivalue.h"
#include "nn/ordered_dict.h"
#include "tensor.h"

namespace ember {
namespace jit {

// A file that is not a readable program (ember.export.FormatError).
class EMBER_API FormatError : public Error {
public:
    using Error::Error;
};

// Inputs that break an assumption of the capture: a dtype, a rank, a size, a dynamic
// dimension's range, a guard (ember.export.GuardError).
class EMBER_API GuardError : public Error {
public:
    using Error::Error;
};

// name -> content of the files stored with save(..., extra_files=...).
using ExtraFilesMap = std::unordered_map<std::string, std::string>;
// Keyword arguments of forward().
using Kwargs = std::unordered_map<std::string, IValue>;

namespace detail {
struct Program;
}

// A loaded program. Copies share the program and its weights (as libtorch's Module).
class EMBER_API Module {
public:
    Module() = default;
    // (What load() returns; the program is internal.)
    explicit Module(std::shared_ptr<detail::Program> program) : program_(std::move(program)) {}

    // Runs the program. Arguments bind to the captured signature (positionally, then by
    // keyword); the result has the structure of the Python result: a Tensor, a tuple
    // (IValue::toTuple), a list of tensors (toTensorList) or of other values (toList), an
    // int for a size; a dict, a namedtuple or a model's output record becomes a tuple
    // with field names (toTuple()->names(), ->at("logits")); a record keeps its fields
    // that are not None, as its to_tuple() does.
    IValue forward(std::vector<IValue> inputs, const Kwargs& kwargs = {}) const;
    IValue operator()(std::vector<IValue> inputs, const Kwargs& kwargs = {}) const {
        return forward(std::move(inputs), kwargs);
    }
    // forward over tensors only, its result flattened to its tensors in order (the leaves
    // of the output structure, depth first).
    std::vector<Tensor> forward_tensors(const std::vector<Tensor>& inputs) const;

    // The parameters, buffers (persistent and not) and both (state_dict: parameters and
    // persistent buffers), by the names of Python's state_dict, in the program's order.
    // The tensors are the ones forward() uses: changing them in place changes the program.
    OrderedDict<std::string, Tensor> named_parameters() const;
    std::vector<Tensor> parameters() const;
    OrderedDict<std::string, Tensor> named_buffers() const;
    std::vector<Tensor> buffers() const;
    OrderedDict<std::string, Tensor> state_dict() const;

    // Converts the floating parameters and buffers to `dtype` in place, as libtorch's
    // torch::jit::Module::to (every handle from parameters(), buffers(), state_dict() and
    // every copy of this Module sees the converted tensors; requires_grad is kept). forward
    // then computes in that dtype. Integer and bool buffers, the graph's constants and the
    // dtypes the graph names itself (x.to(ember.float64), factories with dtype=) stay as
    // captured, and a program from ember.export.export still checks its inputs' dtypes
    // against the capture's, as Python's converted GraphModule does: convert a traced program
    // (ember.jit.trace) to feed it inputs of another dtype. to(Device) keeps the tensors
    // where they are (ember::Device is the CPU only).
    void to(ScalarType dtype, bool non_blocking = false);
    void to(Device device, bool non_blocking = false);
    void to(Device device, ScalarType dtype, bool non_blocking = false);

    // The mode the program was captured in (training is false for a function).
    bool is_training() const;
    // The program's graph is fixed to one mode: switching raises (as Python's GraphModule).
    void train(bool on = true);
    void eval() { train(false); }

    // "export" (ember.export.export: inputs are checked) or "jit" (ember.jit.trace).
    const std::string& kind() const;
    // The argument names of forward, in order.
    std::vector<std::string> argument_names() const;
    // The op names of the program's nodes, in execution order (one per node).
    std::vector<std::string> node_ops() const;
    // The file it was read from.
    const std::string& path() const;

    bool defined() const noexcept { return static_cast<bool>(program_); }

private:
    const detail::Program& program() const;
    std::shared_ptr<detail::Program> program_;
};

// Reads the program at `path` (written by ember.export.save or ember.jit.save; any
// extension). `device` maps every device of the program onto that device (Python's
// map_location): a program saved from a GPU loads with device=ember::kCPU; without it, a
// program that names another device than the CPU raises. When `extra_files` is given, each
// of its keys is filled with the stored file of that name ("" when absent).
EMBER_API Module load(const std::string& path, std::optional<Device> device = std::nullopt,
                      ExtraFilesMap* extra_files = nullptr);
inline Module load(const std::string& path, std::optional<Device> device, ExtraFilesMap& extra_files) {
    return load(path, device, &extra_files);
}

// The op names a program may use (FORMAT.md "Op names"), sorted.
EMBER_API std::vector<std::string> supported_ops();
// Python's signature of a supported op, as inspect.signature prints it without
// annotations ("input, other, *, alpha=1, out=None"); throws for an unknown op.
EMBER_API std::string op_signature(const std::string& op);

}  // namespace jit
}  // namespace ember
