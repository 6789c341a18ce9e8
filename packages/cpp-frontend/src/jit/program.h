// Private: a loaded program (FORMAT.md), compiled for running: every value of the graph
// has a slot (inputs first, then node outputs), every reference to a value is its slot,
// every op is its entry of the op table, every size expression a small tree over symbol
// indices and slots. Building it (program.cpp) performs all the load-time checks; running
// it (interpreter.cpp) binds the inputs, checks them, and calls the nodes in order.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ember/jit.h"
#include "jit/json.h"
#include "jit/op_table.h"
#include "jit/value.h"

namespace ember::jit::detail {

// ---- size expressions

struct SizeExpr {
    enum class Op { Const, Sym, Size, Add, Sub, Mul, FloorDiv, Mod, Max, Min };
    Op op = Op::Const;
    int64_t value = 0;  // Const: the int; Size: the dim
    int index = -1;     // Sym: the symbol; Size: the value's slot
    std::shared_ptr<const SizeExpr> a, b;
    std::string text;   // as Python prints it: batch*4, sym_size(%conv2d, 2)
};
using ExprPtr = std::shared_ptr<const SizeExpr>;

struct Symbol {
    std::string name;
    int64_t min = 0;
    std::optional<int64_t> max;  // nullopt: unbounded
    bool unbacked = false;
};

// ---- arguments and specs

// A node argument (FORMAT.md "Arguments"), compiled: literals are ready Values; tensor
// references, scalar references (version 2.1) and {"symint": E} are filled in per call.
struct Arg {
    enum class Kind { Literal, Tensor, Scalar, SymInt, List, Tuple, Slice };
    Kind kind = Kind::Literal;
    Value literal;             // Literal
    int slot = -1;             // Tensor: the value's slot; Scalar: its scalar index
    ExprPtr expr;              // SymInt
    std::vector<Arg> items;    // List, Tuple, Slice (start, stop, step)
    bool constant = true;      // no tensor and no symint inside: `literal` holds the value
};

// A spec (FORMAT.md "Specs"): the structure of the arguments and of the result.
struct Spec {
    enum class Kind { Tensor, Tuple, List, Dict, NamedTuple, Record, SymInt, Literal, Scalar };
    Kind kind = Kind::Literal;
    int slot = -1;                        // Tensor: the value's slot; Scalar: its scalar index
    std::string tensor_name;              // Tensor, Scalar: the value's name
    ExprPtr expr;                         // SymInt
    Value literal;                        // Literal
    std::string type_name;                // NamedTuple, Record
    std::vector<std::string> names;       // Dict keys, NamedTuple/Record fields
    std::vector<Spec> items;
};

struct InSpec {
    std::string name;
    std::string kind;  // POSITIONAL_ONLY, POSITIONAL_OR_KEYWORD, VAR_POSITIONAL, KEYWORD_ONLY, VAR_KEYWORD
    Spec spec;
};

// A dimension of a user input's shape: a static size, a symbol, or an expression that
// only a node computes (not checked).
struct Dim {
    enum class Kind { Static, Symbol, Other };
    Kind kind = Kind::Other;
    int64_t size = 0;
    int symbol = -1;
    std::string text;
};

struct Input {
    std::string name;
    std::string kind;  // user_input, parameter, buffer, constant
    std::string target;
    bool persistent = true;
    bool requires_grad = false;
    ScalarType dtype = kFloat;
    std::vector<Dim> shape;
    std::string device;
    std::string meta_text;  // float32[batch, 784]
    int slot = -1;
    bool mutated_constant = false;  // a constant the graph writes: a fresh copy per call
};

struct Guard {
    ExprPtr lhs, rhs;
    std::string op;  // eq ne lt le gt ge
    bool expected = true;
    std::string source;
    std::string text;  // sym_size(%x, 1) == 3
};

// A "scalar" node (FORMAT.md version 2.1, "Scalar values"): Tensor.item, or operator.<f> on
// Python numbers. The interpreter runs these itself; they are not entries of the op table.
struct ScalarStep {
    bool item = false;  // Tensor.item; else `op`
    PyOp op = PyOp::Add;
    int out = -1;       // the scalar index it writes
};

struct Step {
    std::string name;
    std::string op;
    std::string source;
    std::string result;  // tensor, tuple, list, nested (FORMAT.md version 2), none, scalar (2.1)
    const OpEntry* entry = nullptr;  // null for a scalar node
    ScalarStep scalar;               // a scalar node's op
    std::vector<Arg> args;
    std::vector<std::pair<std::string, Arg>> kwargs;
    std::vector<int> outputs;  // slots; -1 for an item that is not a tensor
    // a "nested" result: its tuples/lists (Tensor leaves: the outputs; Literal: a non-tensor
    // leaf). The op returns the leaves flat, in depth-first order, as `outputs` lists them.
    Spec structure;
    std::vector<Guard> guards;  // checked after this step (when their sizes exist)
};

struct Program {
    std::string path;
    std::string kind;  // export, jit
    bool training = false;
    std::vector<Symbol> symbols;
    std::vector<Input> inputs;
    std::vector<InSpec> in_spec;
    std::vector<Step> steps;
    std::vector<Guard> pre_guards;
    Spec outputs;
    std::size_t num_slots = 0;
    std::vector<std::string> slot_names;
    // the scalar values (version 2.1: outputs of scalar nodes), apart from the tensor slots
    std::size_t num_scalars = 0;
    // the weights by target (parameters, buffers, constants), as forward() uses them
    std::map<std::string, Tensor> weights;
};

// Builds the program from the program JSON (the metadata's "graph"), with every check of
// FORMAT.md's "A reader must refuse"; `where` prefixes the errors (the path). Weights are
// attached by load(). `device_map`: rewrite every device to this one (map_location).
std::shared_ptr<Program> compile_program(const Json& program, const std::string& where,
                                         const std::optional<std::string>& device_map);

// ---- running (interpreter.cpp)

IValue run(const Program& program, std::vector<IValue> inputs, const ember::jit::Kwargs& kwargs);

}  // namespace ember::jit::detail
