// Private: the C++ op table of ember::jit: op name (FORMAT.md, "Op names") -> the function
// that runs it. Loading a program resolves every node's op here and nowhere else, so a file
// can only name what this table holds; ember::jit::supported_ops() lists it.
//
// Each entry carries Python's signature of the op (the parameter list of the registry op,
// Tensor method, functional kernel or factory of that name, as inspect.signature prints it
// without annotations): the call's positional and keyword arguments bind to it by Python's
// rules before the body runs, and the tests check it against the Python registry.
//
// The ops live in ops_*.cpp, one file per family, each adding its entries in a
// register_*_ops function.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ember/tensor.h"
#include "jit/value.h"

namespace ember::jit::detail {

// The op's results: one tensor for a "tensor" node, the items of a "tuple"/"list" node
// (an undefined Tensor where Python's item is not a tensor), the leaves of a "nested" node in
// depth-first order (histogramdd: hist, then each dimension's edges), none for a "none" node.
using OpResult = std::vector<Tensor>;
// What the interpreter calls: the decoded positional and keyword arguments of one call.
using OpFn = std::function<OpResult(const std::vector<Value>& args, const Kwargs& kwargs)>;

struct OpEntry {
    std::string name;
    Signature signature;
    OpFn fn;
    // Whether the body takes complex tensors (and complex numbers). The others are wrapped,
    // once the table is built, by a check that refuses them with PyTorch's error
    // ('"<op>" not implemented for 'ComplexFloat''), so a real-only body never sees one.
    bool complex_ok = false;
};

using OpTable = std::map<std::string, OpEntry, std::less<>>;

// The table (built once, on first use; thread-safe).
const OpTable& op_table();

// Adds `name` with Python's `signature` and a body over the bound arguments.
void def(OpTable& table, const std::string& name, const std::string& signature,
         std::function<OpResult(const Args&)> body);
// Adds `name` with a body over the raw arguments (it binds them itself).
void def_raw(OpTable& table, const std::string& name, const std::string& signature, OpFn fn);
// Adds `alias` running `name`'s entry (same signature unless one is given).
void alias(OpTable& table, const std::string& alias, const std::string& name,
           const std::string& signature = "");

void register_pointwise_ops(OpTable& table);
void register_reduction_ops(OpTable& table);
void register_shape_ops(OpTable& table);
void register_index_ops(OpTable& table);
void register_nn_ops(OpTable& table);
void register_nn_extra_ops(OpTable& table);
void register_factory_ops(OpTable& table);
void register_tensor_methods(OpTable& table);
void register_more2_ops(OpTable& table);
void register_more3_ops(OpTable& table);
void register_more4_ops(OpTable& table);
void register_more5_ops(OpTable& table);
void register_more6_ops(OpTable& table);
// ops_complex.cpp: the complex dtypes (FFTs, stft/istft, complex/polar/view_as_complex, the
// complex family, arithmetic) and the dtype-agnostic ops that take complex tensors. Runs
// last: it replaces the bodies of ops registered before it by ones that take complex inputs
// too (real inputs still reach the original body).
void register_complex_ops(OpTable& table);
// Marks `name` as taking complex tensors (complex_ok).
void allow_complex(OpTable& table, const std::string& name);

}  // namespace ember::jit::detail
