#include "jit/value.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "ember/error.h"

namespace ember::jit::detail {

Value Value::boolean(bool v) {
    Value x;
    x.kind = Kind::Bool;
    x.b = v;
    return x;
}

Value Value::integer(int64_t v) {
    Value x;
    x.kind = Kind::Int;
    x.i = v;
    return x;
}

Value Value::number(double v) {
    Value x;
    x.kind = Kind::Float;
    x.f = v;
    return x;
}

Value Value::complex_number(double re, double im) {
    Value x;
    x.kind = Kind::Complex;
    x.f = re;
    x.im = im;
    return x;
}

Value Value::string(std::string v, Kind kind) {
    Value x;
    x.kind = kind;
    x.s = std::move(v);
    return x;
}

Value Value::of(ember::Tensor t) {
    Value x;
    x.kind = Kind::Tensor;
    x.tensor = std::move(t);
    return x;
}

Value Value::list(std::vector<Value> items, Kind kind) {
    Value x;
    x.kind = kind;
    x.items = std::move(items);
    return x;
}

Value Value::of_dtype(ScalarType t) {
    Value x;
    x.kind = Kind::Dtype;
    x.dtype = t;
    return x;
}

const char* type_name(const Value& v) noexcept {
    switch (v.kind) {
        case Value::Kind::None: return "NoneType";
        case Value::Kind::Bool: return "bool";
        case Value::Kind::Int: return "int";
        case Value::Kind::Float: return "float";
        case Value::Kind::String: return "str";
        case Value::Kind::Tensor: return "Tensor";
        case Value::Kind::List: return "list";
        case Value::Kind::Tuple: return "tuple";
        case Value::Kind::Slice: return "slice";
        case Value::Kind::Ellipsis: return "ellipsis";
        case Value::Kind::Dtype: return "dtype";
        case Value::Kind::Device: return "device";
        case Value::Kind::MemoryFormat: return "memory_format";
        case Value::Kind::Layout: return "layout";
        case Value::Kind::Complex: return "complex";
    }
    return "value";
}

std::string describe(const Value& v) {
    switch (v.kind) {
        case Value::Kind::None: return "None";
        case Value::Kind::Bool: return v.b ? "True" : "False";
        case Value::Kind::Int: return std::to_string(v.i);
        case Value::Kind::Float: {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.17g", v.f);
            return buf;
        }
        case Value::Kind::String: return "'" + v.s + "'";
        case Value::Kind::Complex: {  // Python's repr: (1+2j)
            char buf[80];
            std::snprintf(buf, sizeof buf, "(%.17g%+.17gj)", v.f, v.im);
            return buf;
        }
        case Value::Kind::Tensor: {
            if (!v.tensor.defined()) return "Tensor(undefined)";
            std::ostringstream os;
            os << "Tensor(" << dtype_name(v.tensor.scalar_type()) << v.tensor.sizes() << ")";
            return os.str();
        }
        case Value::Kind::List:
        case Value::Kind::Tuple: {
            std::string out = v.kind == Value::Kind::List ? "[" : "(";
            for (std::size_t k = 0; k < v.items.size(); ++k) {
                if (k) out += ", ";
                out += describe(v.items[k]);
            }
            if (v.kind == Value::Kind::Tuple && v.items.size() == 1) out += ",";
            return out + (v.kind == Value::Kind::List ? "]" : ")");
        }
        case Value::Kind::Slice: {
            std::string out = "slice(";
            for (std::size_t k = 0; k < v.items.size(); ++k) {
                if (k) out += ", ";
                out += describe(v.items[k]);
            }
            return out + ")";
        }
        case Value::Kind::Ellipsis: return "Ellipsis";
        case Value::Kind::Dtype: return "ember." + std::string(dtype_name(v.dtype));
        case Value::Kind::Device: return "device('" + v.s + "')";
        case Value::Kind::MemoryFormat:
        case Value::Kind::Layout: return "ember." + v.s;
    }
    return "?";
}

ScalarType dtype_from_name(const std::string& name, const std::string& where) {
    static const ScalarType all[] = {kBool,    kUInt8,   kInt8,   kInt16,     kInt32,     kInt64,
                                     kFloat16, kFloat32, kFloat64, kComplex64, kComplex128};
    for (ScalarType t : all) {
        if (name == dtype_name(t)) return t;
    }
    throw Error(where + ": dtype '" + name + "' is not one of Ember's C++ dtypes (bool, uint8, "
                "int8, int16, int32, int64, float16, float32, float64, complex64, complex128)");
}

// ----------------------------------------------------------------- scalar values (2.1)

namespace {

constexpr const char* kPyOpNames[] = {"add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "neg",
                                      "pos", "abs", "eq",  "ne",  "lt",  "le",      "gt",       "ge"};
constexpr const char* kPyOpSymbols[] = {"+", "-", "*", "/", "//", "%", "**", "-",
                                        "+", "abs", "==", "!=", "<", "<=", ">", ">="};

// An operand as Python sees it: a bool is an int, an int stays exact, a float is a double.
struct Number {
    bool is_float = false;
    int64_t i = 0;
    double f = 0;
    double as_double() const { return is_float ? f : static_cast<double>(i); }
};

std::string op_text(PyOp op, const Value& a, const Value& b) {
    const int k = static_cast<int>(op);
    if (py_op_arity(op) == 1) {
        return op == PyOp::Abs ? "abs(" + describe(a) + ")" : kPyOpSymbols[k] + describe(a);
    }
    return describe(a) + " " + kPyOpSymbols[k] + " " + describe(b);
}

Number number_of(PyOp op, const Value& v, const Value& a, const Value& b) {
    Number n;
    switch (v.kind) {
        case Value::Kind::Bool: n.i = v.b ? 1 : 0; return n;
        case Value::Kind::Int: n.i = v.i; return n;
        case Value::Kind::Float: n.is_float = true; n.f = v.f; return n;
        default: break;
    }
    const int k = static_cast<int>(op);
    if (py_op_arity(op) == 1) {
        throw TypeError(std::string("bad operand type for ") + (op == PyOp::Abs ? "abs()" : std::string("unary ") + kPyOpSymbols[k]) +
                        ": '" + type_name(v) + "'");
    }
    if (op >= PyOp::Eq) {
        throw TypeError(std::string("'") + kPyOpSymbols[k] + "' not supported between instances of '" + type_name(a) +
                        "' and '" + type_name(b) + "'");
    }
    throw TypeError(std::string("unsupported operand type(s) for ") + kPyOpSymbols[k] + ": '" + type_name(a) + "' and '" +
                    type_name(b) + "'");
}

[[noreturn]] void int_overflow(PyOp op, const Value& a, const Value& b) {
    throw ValueError(op_text(op, a, b) + " does not fit in an int64: Python's ints have no bound, but the C++ runner "
                     "holds a program's ints in 64 bits");
}

[[noreturn]] void zero_division(const char* what) { throw Error(std::string("ZeroDivisionError: ") + what); }

int64_t floor_div_int(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}

// CPython's float floor division and remainder (floatobject.c: float_floor_div, float_rem):
// the remainder takes the divisor's sign, the quotient is rounded to the exact floor.
double float_mod(double a, double b) {
    double mod = std::fmod(a, b);
    if (mod != 0) {
        if ((b < 0) != (mod < 0)) mod += b;
    } else {
        mod = std::copysign(0.0, b);
    }
    return mod;
}

double float_floordiv(double a, double b) {
    double mod = std::fmod(a, b);
    double div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1.0;
    if (div == 0) return std::copysign(0.0, a / b);
    double floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
    return floordiv;
}

// CPython's float_pow: its errors, C's pow (Annex F) for the values.
double float_pow(double a, double b, PyOp op, const Value& va, const Value& vb) {
    if (a == 0 && b < 0 && std::isfinite(b)) zero_division("0.0 cannot be raised to a negative power");
    if (std::isfinite(a) && a < 0 && std::isfinite(b) && b != std::floor(b)) {
        throw ValueError(op_text(op, va, vb) + " is a complex number (a negative number raised to a fractional "
                         "power), which a program's scalars cannot hold");
    }
    const double r = std::pow(a, b);
    if (std::isinf(r) && std::isfinite(a) && std::isfinite(b)) {
        throw Error("OverflowError: (34, 'Numerical result out of range') in " + op_text(op, va, vb));
    }
    return r;
}

// -1, 0, 1 as `i` is below, equal to or above `d` (not NaN), exactly, as Python compares.
int compare_int_double(int64_t i, double d) {
    if (d >= 9223372036854775808.0) return -1;
    if (d < -9223372036854775808.0) return 1;
    const double t = std::trunc(d);
    const auto ti = static_cast<int64_t>(t);
    if (i != ti) return i < ti ? -1 : 1;
    const double frac = d - t;
    return frac > 0 ? -1 : frac < 0 ? 1 : 0;
}

Value compare(PyOp op, const Number& x, const Number& y) {
    int c;
    if (x.is_float || y.is_float) {
        if ((x.is_float && std::isnan(x.f)) || (y.is_float && std::isnan(y.f))) return Value::boolean(op == PyOp::Ne);
        if (x.is_float && y.is_float) c = x.f < y.f ? -1 : x.f > y.f ? 1 : 0;
        else if (x.is_float) c = -compare_int_double(y.i, x.f);
        else c = compare_int_double(x.i, y.f);
    } else {
        c = x.i < y.i ? -1 : x.i > y.i ? 1 : 0;
    }
    switch (op) {
        case PyOp::Eq: return Value::boolean(c == 0);
        case PyOp::Ne: return Value::boolean(c != 0);
        case PyOp::Lt: return Value::boolean(c < 0);
        case PyOp::Le: return Value::boolean(c <= 0);
        case PyOp::Gt: return Value::boolean(c > 0);
        default: return Value::boolean(c >= 0);
    }
}

// int / int, correctly rounded where both are exact doubles (|n| <= 2**53), as Python's.
double int_truediv(int64_t a, int64_t b) {
    constexpr int64_t exact = int64_t{1} << 53;
    if (a >= -exact && a <= exact && b >= -exact && b <= exact) return static_cast<double>(a) / static_cast<double>(b);
    return static_cast<double>(static_cast<long double>(a) / static_cast<long double>(b));
}

Value int_pow(int64_t base, int64_t exp, PyOp op, const Value& a, const Value& b) {
    if (exp < 0) {
        if (base == 0) zero_division("0.0 cannot be raised to a negative power");
        return Value::number(float_pow(static_cast<double>(base), static_cast<double>(exp), op, a, b));
    }
    int64_t result = 1;
    while (exp > 0) {
        if ((exp & 1) && __builtin_mul_overflow(result, base, &result)) int_overflow(op, a, b);
        exp >>= 1;
        if (exp > 0 && __builtin_mul_overflow(base, base, &base)) int_overflow(op, a, b);
    }
    return Value::integer(result);
}

}  // namespace

std::optional<PyOp> py_op(std::string_view name) noexcept {
    for (std::size_t k = 0; k < std::size(kPyOpNames); ++k) {
        if (name == kPyOpNames[k]) return static_cast<PyOp>(k);
    }
    return std::nullopt;
}

const char* py_op_name(PyOp op) noexcept { return kPyOpNames[static_cast<int>(op)]; }

int py_op_arity(PyOp op) noexcept { return op == PyOp::Neg || op == PyOp::Pos || op == PyOp::Abs ? 1 : 2; }

Value py_apply(PyOp op, const Value& a, const Value& b) {
    const Number x = number_of(op, a, a, b);
    if (py_op_arity(op) == 1) {
        if (x.is_float) return Value::number(op == PyOp::Neg ? -x.f : op == PyOp::Abs ? std::fabs(x.f) : x.f);
        if (op == PyOp::Pos || (op == PyOp::Abs && x.i >= 0)) return Value::integer(x.i);
        if (x.i == std::numeric_limits<int64_t>::min()) int_overflow(op, a, b);
        return Value::integer(-x.i);
    }
    const Number y = number_of(op, b, a, b);
    if (op >= PyOp::Eq) return compare(op, x, y);
    if (x.is_float || y.is_float) {
        const double u = x.as_double(), v = y.as_double();
        switch (op) {
            case PyOp::Add: return Value::number(u + v);
            case PyOp::Sub: return Value::number(u - v);
            case PyOp::Mul: return Value::number(u * v);
            case PyOp::TrueDiv:
                if (v == 0) zero_division("float division by zero");
                return Value::number(u / v);
            case PyOp::FloorDiv:
                if (v == 0) zero_division("float floor division by zero");
                return Value::number(float_floordiv(u, v));
            case PyOp::Mod:
                if (v == 0) zero_division("float modulo");
                return Value::number(float_mod(u, v));
            default: return Value::number(float_pow(u, v, op, a, b));
        }
    }
    int64_t r = 0;
    switch (op) {
        case PyOp::Add:
            if (__builtin_add_overflow(x.i, y.i, &r)) int_overflow(op, a, b);
            return Value::integer(r);
        case PyOp::Sub:
            if (__builtin_sub_overflow(x.i, y.i, &r)) int_overflow(op, a, b);
            return Value::integer(r);
        case PyOp::Mul:
            if (__builtin_mul_overflow(x.i, y.i, &r)) int_overflow(op, a, b);
            return Value::integer(r);
        case PyOp::TrueDiv:
            if (y.i == 0) zero_division("division by zero");
            return Value::number(int_truediv(x.i, y.i));
        case PyOp::FloorDiv:
            if (y.i == 0) zero_division("integer division or modulo by zero");
            if (y.i == -1 && x.i == std::numeric_limits<int64_t>::min()) int_overflow(op, a, b);
            return Value::integer(floor_div_int(x.i, y.i));
        case PyOp::Mod:
            if (y.i == 0) zero_division("integer modulo by zero");
            if (y.i == -1) return Value::integer(0);
            {
                // C's remainder moved to the divisor's sign (Python's): x - floor(x / y) * y
                // overflows for y = INT64_MIN (5 % -2**63), this never does (r and y differ
                // in sign where they are added)
                int64_t m = x.i % y.i;
                if (m != 0 && ((m < 0) != (y.i < 0))) m += y.i;
                return Value::integer(m);
            }
        default: return int_pow(x.i, y.i, op, a, b);
    }
}

// ------------------------------------------------------------------------- signatures

namespace {

std::string trim(std::string_view s) {
    std::size_t a = 0, b = s.size();
    while (a < b && s[a] == ' ') ++a;
    while (b > a && s[b - 1] == ' ') --b;
    return std::string(s.substr(a, b - a));
}

// Splits at the commas that are not inside brackets or quotes.
std::vector<std::string> split_top(std::string_view text) {
    std::vector<std::string> out;
    int depth = 0;
    char quote = 0;
    std::size_t start = 0;
    for (std::size_t k = 0; k < text.size(); ++k) {
        char c = text[k];
        if (quote) {
            if (c == quote) quote = 0;
        } else if (c == '\'' || c == '"') {
            quote = c;
        } else if (c == '(' || c == '[') {
            ++depth;
        } else if (c == ')' || c == ']') {
            --depth;
        } else if (c == ',' && depth == 0) {
            out.push_back(trim(text.substr(start, k - start)));
            start = k + 1;
        }
    }
    std::string last = trim(text.substr(start));
    if (!last.empty() || !out.empty()) out.push_back(last);
    return out;
}

Value parse_default(const std::string& text) {
    if (text == "None") return Value::none();
    if (text == "True") return Value::boolean(true);
    if (text == "False") return Value::boolean(false);
    if (text.size() >= 2 && (text.front() == '\'' || text.front() == '"') && text.back() == text.front()) {
        return Value::string(text.substr(1, text.size() - 2));
    }
    if (text.rfind("ember.", 0) == 0) return Value::string(text.substr(6), Value::Kind::MemoryFormat);
    if (text.size() >= 2 && (text.front() == '(' || text.front() == '[')) {
        std::vector<Value> items;
        for (const std::string& part : split_top(std::string_view(text).substr(1, text.size() - 2))) {
            if (!part.empty()) items.push_back(parse_default(part));
        }
        return Value::list(std::move(items), text.front() == '(' ? Value::Kind::Tuple : Value::Kind::List);
    }
    const bool is_float = text.find_first_of(".eE") != std::string::npos || text == "inf" || text == "-inf";
    try {
        std::size_t used = 0;
        if (is_float) {
            double v = std::stod(text, &used);
            if (used == text.size()) return Value::number(v);
        } else {
            long long v = std::stoll(text, &used);
            if (used == text.size()) return Value::integer(v);
        }
    } catch (const std::exception&) {
    }
    throw Error("ember::jit: bad default '" + text + "' in an op signature");
}

}  // namespace

Signature::Signature(std::string text) : text_(std::move(text)) {
    bool keyword_only = false;
    for (const std::string& part : split_top(text_)) {
        if (part.empty()) throw Error("ember::jit: empty parameter in signature '" + text_ + "'");
        Param p;
        if (part == "*") {
            keyword_only = true;
            continue;
        }
        if (part.rfind("**", 0) == 0) {
            p.name = part.substr(2);
            p.kind = Param::Kind::VarKeyword;
        } else if (part[0] == '*') {
            p.name = part.substr(1);
            p.kind = Param::Kind::VarPositional;
            keyword_only = true;
        } else {
            std::size_t eq = part.find('=');
            p.name = trim(std::string_view(part).substr(0, eq));
            p.kind = keyword_only ? Param::Kind::KeywordOnly : Param::Kind::Positional;
            if (eq != std::string::npos) {
                p.has_default = true;
                p.default_value = parse_default(trim(std::string_view(part).substr(eq + 1)));
            }
        }
        params_.push_back(std::move(p));
    }
}

int Signature::index_of(std::string_view name) const noexcept {
    for (std::size_t k = 0; k < params_.size(); ++k) {
        if (params_[k].name == name && (params_[k].kind == Param::Kind::Positional ||
                                        params_[k].kind == Param::Kind::KeywordOnly)) {
            return static_cast<int>(k);
        }
    }
    return -1;
}

void Signature::check_call(std::size_t nargs, const std::vector<std::string>& keywords,
                           const std::string& op) const {
    std::vector<bool> filled(params_.size(), false);
    bool var_positional = false, var_keyword = false;
    std::size_t positional = 0;
    for (const Param& p : params_) {
        if (p.kind == Param::Kind::Positional) ++positional;
        var_positional |= p.kind == Param::Kind::VarPositional;
        var_keyword |= p.kind == Param::Kind::VarKeyword;
    }
    if (nargs > positional && !var_positional) {
        throw TypeError(op + "() takes " + std::to_string(positional) + " positional argument" +
                        (positional == 1 ? "" : "s") + " but " + std::to_string(nargs) +
                        (nargs == 1 ? " was" : " were") + " given (signature: (" + text_ + "))");
    }
    std::size_t k = 0;
    for (std::size_t p = 0; p < params_.size() && k < nargs; ++p) {
        if (params_[p].kind != Param::Kind::Positional) break;
        filled[p] = true;
        ++k;
    }
    for (const std::string& kw : keywords) {
        int at = index_of(kw);
        if (at < 0) {
            if (var_keyword) continue;
            throw TypeError(op + "() got an unexpected keyword argument '" + kw + "' (signature: (" + text_ + "))");
        }
        if (filled[static_cast<std::size_t>(at)]) {
            throw TypeError(op + "() got multiple values for argument '" + kw + "'");
        }
        filled[static_cast<std::size_t>(at)] = true;
    }
    for (std::size_t p = 0; p < params_.size(); ++p) {
        const Param& param = params_[p];
        if ((param.kind == Param::Kind::Positional || param.kind == Param::Kind::KeywordOnly) &&
            !filled[p] && !param.has_default) {
            throw TypeError(op + "() missing required argument: '" + param.name + "'");
        }
    }
}

Args::Args(const Signature& signature, const std::vector<Value>& args, const Kwargs& kwargs,
           const std::string& op)
    : op_(&op), signature_(&signature), bound_(signature.params().size(), nullptr) {
    const auto& params = signature.params();
    std::size_t k = 0;
    for (std::size_t p = 0; p < params.size(); ++p) {
        if (params[p].kind == Param::Kind::Positional && k < args.size()) {
            bound_[p] = &args[k++];
        } else if (params[p].kind == Param::Kind::VarPositional) {
            varargs_.assign(args.begin() + static_cast<std::ptrdiff_t>(k), args.end());
            k = args.size();
        }
    }
    std::vector<std::string> keywords;
    for (const auto& [name, value] : kwargs) {
        keywords.push_back(name);
        int at = signature.index_of(name);
        if (at >= 0 && !bound_[static_cast<std::size_t>(at)]) {
            bound_[static_cast<std::size_t>(at)] = &value;
        } else if (at < 0) {
            varkwargs_.emplace(name, value);
        }
    }
    signature.check_call(args.size(), keywords, op);
    for (std::size_t p = 0; p < params.size(); ++p) {
        if (!bound_[p] && params[p].has_default) bound_[p] = &params[p].default_value;
    }
}

const Value& Args::operator[](std::string_view name) const {
    int at = signature_->index_of(name);
    if (at < 0 || !bound_[static_cast<std::size_t>(at)]) {
        throw Error("ember::jit: op " + *op_ + " has no parameter '" + std::string(name) + "'");
    }
    return *bound_[static_cast<std::size_t>(at)];
}

void Args::type_error(std::string_view name, const char* expected) const {
    const Value& v = (*this)[name];
    throw TypeError(*op_ + "(): argument '" + std::string(name) + "' must be " + expected +
                    ", not " + type_name(v) + " (" + describe(v) + ")");
}

Tensor Args::tensor(std::string_view name) const {
    const Value& v = (*this)[name];
    if (!v.is_tensor()) type_error(name, "Tensor");
    return v.tensor;
}

Tensor Args::optional_tensor(std::string_view name) const {
    const Value& v = (*this)[name];
    if (v.is_none()) return Tensor();
    if (!v.is_tensor()) type_error(name, "Tensor or None");
    return v.tensor;
}

int64_t to_int(const Value& v, const std::string& what) {
    if (v.kind == Value::Kind::Int) return v.i;
    if (v.kind == Value::Kind::Tensor && v.tensor.defined() && v.tensor.numel() == 1 &&
        !v.tensor.is_floating_point() && v.tensor.scalar_type() != kBool) {
        return v.tensor.item<int64_t>();  // a 0-d integer tensor used as an index, as Python's __index__
    }
    throw TypeError(what + " must be int, not " + type_name(v) + " (" + describe(v) + ")");
}

std::vector<int64_t> to_ints(const Value& v, const std::string& what) {
    if (v.kind == Value::Kind::Int) return {v.i};
    if (!v.is_sequence()) {
        throw TypeError(what + " must be a sequence of ints, not " + std::string(type_name(v)) +
                        " (" + describe(v) + ")");
    }
    std::vector<int64_t> out;
    out.reserve(v.items.size());
    for (const Value& item : v.items) out.push_back(to_int(item, what + " item"));
    return out;
}

Scalar to_scalar(const Value& v, const std::string& what) {
    switch (v.kind) {
        case Value::Kind::Bool: return Scalar(v.b);
        case Value::Kind::Int: return Scalar(v.i);
        case Value::Kind::Float: return Scalar(v.f);
        default:
            throw TypeError(what + " must be a number, not " + std::string(type_name(v)) + " (" +
                            describe(v) + ")");
    }
}

int64_t Args::integer(std::string_view name) const {
    const Value& v = (*this)[name];
    if (v.kind == Value::Kind::Bool) type_error(name, "int");
    return to_int(v, *op_ + "(): argument '" + std::string(name) + "'");
}

std::optional<int64_t> Args::optional_integer(std::string_view name) const {
    if (is_none(name)) return std::nullopt;
    return integer(name);
}

double Args::number(std::string_view name) const {
    const Value& v = (*this)[name];
    if (v.kind == Value::Kind::Float) return v.f;
    if (v.kind == Value::Kind::Int) return static_cast<double>(v.i);
    if (v.kind == Value::Kind::Bool) return v.b ? 1.0 : 0.0;
    if (v.is_tensor() && v.tensor.defined() && v.tensor.numel() == 1) return v.tensor.item<double>();
    type_error(name, "a number");
}

std::optional<double> Args::optional_number(std::string_view name) const {
    if (is_none(name)) return std::nullopt;
    return number(name);
}

bool Args::boolean(std::string_view name) const {
    const Value& v = (*this)[name];
    if (v.kind == Value::Kind::Bool) return v.b;
    if (v.kind == Value::Kind::Int) return v.i != 0;
    type_error(name, "bool");
}

std::string Args::string(std::string_view name) const {
    const Value& v = (*this)[name];
    if (v.kind != Value::Kind::String) type_error(name, "str");
    return v.s;
}

std::optional<std::string> Args::optional_string(std::string_view name) const {
    if (is_none(name)) return std::nullopt;
    return string(name);
}

Scalar Args::scalar(std::string_view name) const {
    const Value& v = (*this)[name];
    if (v.is_tensor() && v.tensor.defined() && v.tensor.numel() == 1) return v.tensor.item();
    if (!v.is_number()) type_error(name, "a number");
    return to_scalar(v, *op_ + "(): argument '" + std::string(name) + "'");
}

std::vector<int64_t> Args::ints(std::string_view name, std::size_t repeat) const {
    const Value& v = (*this)[name];
    if (v.kind == Value::Kind::Int) return std::vector<int64_t>(repeat, v.i);
    if (!v.is_sequence()) type_error(name, "a sequence of ints");
    return to_ints(v, *op_ + "(): argument '" + std::string(name) + "'");
}

std::optional<std::vector<int64_t>> Args::optional_ints(std::string_view name) const {
    if (is_none(name)) return std::nullopt;
    return ints(name);
}

std::optional<ScalarType> Args::dtype(std::string_view name) const {
    const Value& v = (*this)[name];
    if (v.is_none()) return std::nullopt;
    if (v.kind != Value::Kind::Dtype) type_error(name, "ember.dtype");
    return v.dtype;
}

std::vector<Tensor> Args::tensors(std::string_view name) const {
    const Value& v = (*this)[name];
    if (!v.is_sequence()) type_error(name, "a sequence of Tensors");
    std::vector<Tensor> out;
    out.reserve(v.items.size());
    for (const Value& item : v.items) {
        if (!item.is_tensor()) type_error(name, "a sequence of Tensors");
        out.push_back(item.tensor);
    }
    return out;
}

}  // namespace ember::jit::detail
