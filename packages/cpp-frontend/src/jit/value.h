// Private: the values that a node's arguments take when the program runs (FORMAT.md,
// "Arguments"), and op signatures that bind them by Python's rules.
//
// A node's JSON arguments are compiled once at load (program.h); each call turns them into
// Values: tensor references become the Tensors of that call, {"symint": E} the int E gives
// for the call's sizes. An op's Signature (Python's parameter list, as text) binds the
// positional and keyword arguments to names, filling defaults, so an op body asks for
// "kernel_size" whatever way the call passed it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ember/dtype.h"
#include "ember/scalar.h"
#include "ember/tensor.h"

namespace ember::jit::detail {

struct Value {
    enum class Kind {
        None, Bool, Int, Float, String, Tensor, List, Tuple, Slice, Ellipsis, Dtype, Device,
        MemoryFormat, Layout, Complex
    };

    Kind kind = Kind::None;
    bool b = false;
    int64_t i = 0;
    double f = 0;                  // Float; Complex: the real part
    double im = 0;                 // Complex: the imaginary part
    std::string s;                 // String, Device, MemoryFormat, Layout
    ScalarType dtype = kFloat;     // Dtype
    ember::Tensor tensor;          // Tensor
    std::vector<Value> items;      // List, Tuple; Slice: start, stop, step

    static Value none() { return Value(); }
    static Value boolean(bool v);
    static Value integer(int64_t v);
    static Value number(double v);
    static Value complex_number(double re, double im);
    static Value string(std::string v, Kind kind = Kind::String);
    static Value of(ember::Tensor t);
    static Value list(std::vector<Value> items, Kind kind = Kind::List);
    static Value of_dtype(ScalarType t);

    bool is_none() const noexcept { return kind == Kind::None; }
    bool is_tensor() const noexcept { return kind == Kind::Tensor; }
    bool is_number() const noexcept {
        return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool;
    }
    bool is_sequence() const noexcept { return kind == Kind::List || kind == Kind::Tuple; }
};

// Python's spelling of a value's type, for messages: "int", "Tensor", "list", ...
const char* type_name(const Value& v) noexcept;
// A short Python-like rendering: 3, 2.5, None, [1, 2], Tensor(float32[2, 3]).
std::string describe(const Value& v);

// ----------------------------------------------------------------- scalar values (2.1)

// Python's `operator.<name>` on numbers (FORMAT.md version 2.1, "Scalar values"): the ops that
// a program applies to the scalars Tensor.item reads, as Python's `operator` module.
enum class PyOp { Add, Sub, Mul, TrueDiv, FloorDiv, Mod, Pow, Neg, Pos, Abs, Eq, Ne, Lt, Le, Gt, Ge };

// The op of `operator.<name>` ("add" -> Add), or nullopt.
std::optional<PyOp> py_op(std::string_view name) noexcept;
const char* py_op_name(PyOp op) noexcept;
// 1 for neg/pos/abs, 2 for the others.
int py_op_arity(PyOp op) noexcept;
// `op(a)` / `op(a, b)` on bools, ints and floats with Python's results: bool/int operands
// give an int (True + True is 2), any float gives a float, `/` a float, `//` and `%` floor
// with Python's signs (-7 // 2 is -4, -7 % 3 is 2, 7.5 % -2 is -0.5), `**` of ints a float
// for a negative exponent, comparisons a bool (ints against floats exactly). Python's
// errors: "ZeroDivisionError: integer division or modulo by zero"..., an int that leaves
// int64 (Python's ints have no bound; the C++ runner's are int64) or a complex result
// ((-8.0) ** 0.5) is an error naming the expression.
Value py_apply(PyOp op, const Value& a, const Value& b = Value());

// ------------------------------------------------------------------------- signatures

struct Param {
    enum class Kind { Positional, KeywordOnly, VarPositional, VarKeyword };
    std::string name;
    Kind kind = Kind::Positional;
    bool has_default = false;
    Value default_value;
};

// A parameter list in Python's syntax, without annotations: "input, other, *, alpha=1",
// "self, *args, **kwargs". Defaults are literals: None, True, False, ints, floats, 'strings',
// tuples/lists of those, and ember.<name> (a memory format: kept as its name).
class Signature {
public:
    Signature() = default;
    explicit Signature(std::string text);

    const std::string& text() const noexcept { return text_; }
    const std::vector<Param>& params() const noexcept { return params_; }
    // The index of parameter `name`, or -1.
    int index_of(std::string_view name) const noexcept;
    // Raises when a call with `nargs` positional arguments and these keyword names cannot
    // bind (too many positionals, an unknown or repeated keyword, a missing argument):
    // Python's TypeError text, prefixed by `op`.
    void check_call(std::size_t nargs, const std::vector<std::string>& keywords,
                    const std::string& op) const;

private:
    std::string text_;
    std::vector<Param> params_;
};

using Kwargs = std::map<std::string, Value, std::less<>>;

// A call's arguments bound to a signature (the values stay owned by the caller).
class Args {
public:
    Args(const Signature& signature, const std::vector<Value>& args, const Kwargs& kwargs,
         const std::string& op);

    const std::string& op() const noexcept { return *op_; }
    const Value& operator[](std::string_view name) const;
    bool is_none(std::string_view name) const { return (*this)[name].is_none(); }
    // Whether the signature has a parameter `name`.
    bool has(std::string_view name) const noexcept { return signature_->index_of(name) >= 0; }

    // Typed reads; each raises "<op>(): argument '<name>' must be <type>, not <type>".
    Tensor tensor(std::string_view name) const;
    Tensor optional_tensor(std::string_view name) const;  // None: an undefined Tensor
    int64_t integer(std::string_view name) const;          // an int (a bool is refused)
    std::optional<int64_t> optional_integer(std::string_view name) const;
    double number(std::string_view name) const;            // an int or a float
    std::optional<double> optional_number(std::string_view name) const;
    bool boolean(std::string_view name) const;
    std::string string(std::string_view name) const;
    std::optional<std::string> optional_string(std::string_view name) const;
    Scalar scalar(std::string_view name) const;             // a bool, int or float
    // An int list; a single int gives a list of `repeat` copies of it (Python's _pair).
    std::vector<int64_t> ints(std::string_view name, std::size_t repeat = 1) const;
    // None: nullopt; otherwise as ints().
    std::optional<std::vector<int64_t>> optional_ints(std::string_view name) const;
    std::optional<ScalarType> dtype(std::string_view name) const;  // None: nullopt
    std::vector<Tensor> tensors(std::string_view name) const;     // a list of tensors

    const std::vector<Value>& varargs() const noexcept { return varargs_; }
    const Kwargs& varkwargs() const noexcept { return varkwargs_; }

    [[noreturn]] void type_error(std::string_view name, const char* expected) const;

private:
    const std::string* op_;
    const Signature* signature_;
    std::vector<const Value*> bound_;
    std::vector<Value> varargs_;
    Kwargs varkwargs_;
};

// Conversions shared by the ops.
int64_t to_int(const Value& v, const std::string& what);
std::vector<int64_t> to_ints(const Value& v, const std::string& what);
Scalar to_scalar(const Value& v, const std::string& what);
// The ember dtype named as Python names it ("float32"), or an error naming the name.
ScalarType dtype_from_name(const std::string& name, const std::string& where);

}  // namespace ember::jit::detail
