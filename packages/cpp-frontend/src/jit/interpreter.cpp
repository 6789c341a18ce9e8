// Running a compiled Program: bind the call's arguments to the captured signature, check
// them (export programs: dtypes, ranks, sizes, dynamic dimensions' ranges; every program:
// the guards), run the nodes in order through the op table, rebuild the output structure.
// The messages are Python's (ember/export/_program.py).
#include <algorithm>
#include <set>
#include <sstream>

#include "jit/program.h"

namespace ember::jit::detail {

namespace {

struct Env {
    std::vector<Tensor> slots;
    std::vector<std::optional<int64_t>> symbols;
    std::vector<Value> scalars;  // version 2.1: the scalar values, by scalar index
};

const char* ivalue_kind(const IValue& v) {
    if (v.isTensor()) return "Tensor";
    if (v.isTuple()) return "tuple";
    if (v.isList()) return "list";
    if (v.isNone()) return "NoneType";
    if (v.isInt()) return "int";
    if (v.isDouble()) return "float";
    if (v.isBool()) return "bool";
    if (v.isString()) return "str";
    return "value";
}

std::string shape_list(IntArrayRef sizes) {
    std::string out = "[";
    for (std::size_t k = 0; k < sizes.size(); ++k) out += (k ? ", " : "") + std::to_string(sizes[k]);
    return out + "]";
}

// ---- size expressions

int64_t floor_div(int64_t a, int64_t b) {
    if (b == 0) throw Error("ember::jit: integer division by zero in a size expression");
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}

int64_t evaluate(const Program& p, const SizeExpr& e, const Env& env) {
    switch (e.op) {
        case SizeExpr::Op::Const: return e.value;
        case SizeExpr::Op::Sym: {
            const auto& v = env.symbols[static_cast<std::size_t>(e.index)];
            if (!v) {
                const Symbol& s = p.symbols[static_cast<std::size_t>(e.index)];
                throw GuardError("the program needs the size '" + s.name + "', which no input binds" +
                                 (s.unbacked ? " (a data-dependent size of the capture)" : ""));
            }
            return *v;
        }
        case SizeExpr::Op::Size: {
            const Tensor& t = env.slots[static_cast<std::size_t>(e.index)];
            if (!t.defined()) {
                throw Error("ember::jit: " + e.text + " reads a value that is not a tensor in this run");
            }
            return t.size(e.value);
        }
        default: break;
    }
    const int64_t a = evaluate(p, *e.a, env), b = evaluate(p, *e.b, env);
    switch (e.op) {
        case SizeExpr::Op::Add: return a + b;
        case SizeExpr::Op::Sub: return a - b;
        case SizeExpr::Op::Mul: return a * b;
        case SizeExpr::Op::FloorDiv: return floor_div(a, b);
        case SizeExpr::Op::Mod: return a - floor_div(a, b) * b;
        case SizeExpr::Op::Max: return std::max(a, b);
        case SizeExpr::Op::Min: return std::min(a, b);
        default: return 0;
    }
}

void check_guard(const Program& p, const Guard& g, const Env& env) {
    const int64_t lhs = evaluate(p, *g.lhs, env), rhs = evaluate(p, *g.rhs, env);
    bool holds = false;
    if (g.op == "eq") holds = lhs == rhs;
    else if (g.op == "ne") holds = lhs != rhs;
    else if (g.op == "lt") holds = lhs < rhs;
    else if (g.op == "le") holds = lhs <= rhs;
    else if (g.op == "gt") holds = lhs > rhs;
    else holds = lhs >= rhs;
    if (holds == g.expected) return;
    std::string values;
    for (const auto& [e, v] : {std::pair<const SizeExpr*, int64_t>{g.lhs.get(), lhs}, {g.rhs.get(), rhs}}) {
        if (e->op == SizeExpr::Op::Const) continue;
        values += (values.empty() ? "" : " and ") + e->text + " = " + std::to_string(v);
    }
    throw GuardError("Guard failed: " + g.text + (g.source.empty() ? "" : " (assumed at " + g.source + ")") + "; here " +
                     values + ". The program was captured for inputs where it held: capture it again for these inputs");
}

// ---- binding the inputs

std::string hi_text(const Symbol& s) { return s.max ? std::to_string(*s.max) : "inf"; }

void check_tensor(const Program& p, const Tensor& t, const Input& in, const std::string& path, Env& env) {
    const bool check = p.kind == "export";
    if (check && t.scalar_type() != in.dtype) {
        throw GuardError("Expected input " + path + " to have dtype " + std::string(dtype_name(in.dtype)) + ", but got " +
                         std::string(dtype_name(t.scalar_type())));
    }
    if (check && t.dim() != static_cast<int64_t>(in.shape.size())) {
        throw GuardError("Expected input " + path + " to have " + std::to_string(in.shape.size()) + " dimensions (" +
                         in.meta_text + "), but got shape " + shape_list(t.sizes()));
    }
    for (std::size_t d = 0; d < in.shape.size() && d < static_cast<std::size_t>(t.dim()); ++d) {
        const Dim& dim = in.shape[d];
        const int64_t n = t.size(static_cast<int64_t>(d));
        const std::string where = path + ".shape[" + std::to_string(d) + "]";
        if (dim.kind == Dim::Kind::Static) {
            if (check && n != dim.size) {
                throw GuardError("Expected input " + where + " to be equal to " + std::to_string(dim.size) + ", but got " +
                                 std::to_string(n));
            }
            continue;
        }
        if (dim.kind != Dim::Kind::Symbol) continue;
        const Symbol& s = p.symbols[static_cast<std::size_t>(dim.symbol)];
        auto& bound = env.symbols[static_cast<std::size_t>(dim.symbol)];
        if (bound) {
            if (check && n != *bound) {
                throw GuardError("Expected input " + where + " to be equal to " + std::to_string(*bound) + " (dim '" + s.name +
                                 "', as bound by an earlier input), but got " + std::to_string(n));
            }
            continue;
        }
        if (check && n < s.min) {
            throw GuardError("Expected input " + where + " to be >= " + std::to_string(s.min) + ", but got " + std::to_string(n) +
                             " (dim '" + s.name + "' in [" + std::to_string(s.min) + ", " + hi_text(s) + "])");
        }
        if (check && s.max && n > *s.max) {
            throw GuardError("Expected input " + where + " to be <= " + std::to_string(*s.max) + ", but got " + std::to_string(n) +
                             " (dim '" + s.name + "' in [" + std::to_string(s.min) + ", " + hi_text(s) + "])");
        }
        bound = n;
    }
}

std::vector<IValue> items_of(const IValue& v) {
    if (v.isTuple()) return v.toTuple()->elements();
    return v.toList();
}

std::string describe_ivalue(const IValue& v) {
    if (v.isTuple() || v.isList()) {
        return std::string("a ") + ivalue_kind(v) + " of " + std::to_string(items_of(v).size()) + " items";
    }
    return ivalue_kind(v);
}

// A literal of the spec against the value passed (None, bool, int, float, str).
bool equal_literal(const IValue& v, const Value& expected) {
    switch (expected.kind) {
        case Value::Kind::None: return v.isNone();
        case Value::Kind::Bool: return v.isBool() && v.toBool() == expected.b;
        case Value::Kind::Int: return (v.isInt() && v.toInt() == expected.i) || (v.isDouble() && v.toDouble() == static_cast<double>(expected.i));
        case Value::Kind::Float: return (v.isDouble() || v.isInt()) && v.toDouble() == expected.f;
        case Value::Kind::String: return v.isString() && v.toStringRef() == expected.s;
        default: return false;
    }
}

std::string ivalue_text(const IValue& v) {
    if (v.isNone()) return "None";
    if (v.isBool()) return v.toBool() ? "True" : "False";
    if (v.isInt()) return std::to_string(v.toInt());
    if (v.isDouble()) {
        std::ostringstream os;
        os << v.toDouble();
        return os.str();
    }
    if (v.isString()) return "'" + v.toStringRef() + "'";
    return describe_ivalue(v);
}

void match(const Program& p, const Spec& spec, const IValue& value, const std::string& path, Env& env) {
    switch (spec.kind) {
        case Spec::Kind::Tensor: {
            if (!value.isTensor() || !value.toTensor().defined()) {
                throw GuardError("Expected input " + path + " to be a Tensor, but got " + ivalue_kind(value));
            }
            const Tensor& t = value.toTensor();
            check_tensor(p, t, p.inputs[static_cast<std::size_t>(spec.slot)], path, env);
            env.slots[static_cast<std::size_t>(spec.slot)] = t;
            return;
        }
        case Spec::Kind::Tuple:
        case Spec::Kind::List: {
            const char* tag = spec.kind == Spec::Kind::Tuple ? "tuple" : "list";
            if (!(value.isTuple() || value.isList()) || items_of(value).size() != spec.items.size()) {
                throw GuardError("Expected input " + path + " to be a " + tag + " of " + std::to_string(spec.items.size()) +
                                 " items, but got " + describe_ivalue(value));
            }
            std::vector<IValue> items = items_of(value);
            for (std::size_t k = 0; k < items.size(); ++k) {
                match(p, spec.items[k], items[k], path + "[" + std::to_string(k) + "]", env);
            }
            return;
        }
        case Spec::Kind::Dict: {
            // a dict argument is passed as a named tuple with the dict's keys
            std::string keys;
            for (const std::string& k : spec.names) keys += (keys.empty() ? "'" : ", '") + k + "'";
            bool ok = value.isTuple() && value.toTuple()->names().size() == spec.names.size();
            for (std::size_t k = 0; ok && k < spec.names.size(); ++k) {
                ok = std::find(value.toTuple()->names().begin(), value.toTuple()->names().end(), spec.names[k]) !=
                     value.toTuple()->names().end();
            }
            if (!ok) {
                throw GuardError("Expected input " + path + " to be a dict with keys [" + keys + "] (in C++: a tuple "
                                 "named by those keys, IValue::tuple(values, names)), but got " + describe_ivalue(value));
            }
            for (std::size_t k = 0; k < spec.names.size(); ++k) {
                match(p, spec.items[k], value.toTuple()->at(spec.names[k]), path + "['" + spec.names[k] + "']", env);
            }
            return;
        }
        default: {
            if (!equal_literal(value, spec.literal)) {
                throw GuardError("Expected input " + path + " to be equal to " + describe(spec.literal) + ", but got " +
                                 ivalue_text(value));
            }
            return;
        }
    }
}

std::string argument_names(const Program& p) {
    std::string names;
    for (const InSpec& s : p.in_spec) names += (names.empty() ? "" : ", ") + s.name;
    return names.empty() ? "no arguments" : names;
}

// inspect.Signature.bind over the captured arguments, then match each against its spec.
void bind(const Program& p, std::vector<IValue>& args, const ember::jit::Kwargs& kwargs, Env& env) {
    const std::string captured = " (the program was captured with inputs: " + argument_names(p) + ")";
    std::vector<const IValue*> bound(p.in_spec.size(), nullptr);
    std::vector<IValue> rest;  // *args
    std::size_t next = 0;
    std::set<std::string> kw_used;
    for (std::size_t k = 0; k < p.in_spec.size(); ++k) {
        const InSpec& s = p.in_spec[k];
        if (s.kind == "POSITIONAL_ONLY" || s.kind == "POSITIONAL_OR_KEYWORD") {
            if (next < args.size()) {
                bound[k] = &args[next++];
                if (kwargs.count(s.name) && s.kind == "POSITIONAL_OR_KEYWORD") {
                    throw TypeError("multiple values for argument '" + s.name + "'" + captured);
                }
            } else if (s.kind == "POSITIONAL_OR_KEYWORD" && kwargs.count(s.name)) {
                bound[k] = &kwargs.at(s.name);
                kw_used.insert(s.name);
            } else {
                throw TypeError("missing a required argument: '" + s.name + "'" + captured);
            }
        } else if (s.kind == "VAR_POSITIONAL") {
            rest.assign(args.begin() + static_cast<std::ptrdiff_t>(next), args.end());
            next = args.size();
        } else if (s.kind == "KEYWORD_ONLY") {
            if (!kwargs.count(s.name)) throw TypeError("missing a required argument: '" + s.name + "'" + captured);
            bound[k] = &kwargs.at(s.name);
            kw_used.insert(s.name);
        }
    }
    if (next < args.size()) throw TypeError("too many positional arguments" + captured);
    std::vector<std::string> extra_keys;
    std::vector<IValue> extra_values;
    bool has_var_keyword = false;
    for (const InSpec& s : p.in_spec) has_var_keyword |= s.kind == "VAR_KEYWORD";
    for (const auto& [key, value] : kwargs) {
        if (kw_used.count(key)) continue;
        if (!has_var_keyword) throw TypeError("got an unexpected keyword argument '" + key + "'" + captured);
        extra_keys.push_back(key);
        extra_values.push_back(value);
    }
    IValue var_positional = IValue::tuple(rest);
    IValue var_keyword = IValue::tuple(extra_values, extra_keys);
    for (std::size_t k = 0; k < p.in_spec.size(); ++k) {
        const InSpec& s = p.in_spec[k];
        const IValue& v = s.kind == "VAR_POSITIONAL" ? var_positional : s.kind == "VAR_KEYWORD" ? var_keyword : *bound[k];
        match(p, s.spec, v, s.name, env);
    }
}

// ---- running the nodes

Value evaluate(const Program& p, const Arg& a, const Env& env) {
    if (a.constant) return a.literal;
    switch (a.kind) {
        case Arg::Kind::Tensor: return Value::of(env.slots[static_cast<std::size_t>(a.slot)]);
        case Arg::Kind::Scalar: return env.scalars[static_cast<std::size_t>(a.slot)];
        case Arg::Kind::SymInt: return Value::integer(evaluate(p, *a.expr, env));
        default: {
            std::vector<Value> items;
            items.reserve(a.items.size());
            for (const Arg& item : a.items) items.push_back(evaluate(p, item, env));
            const Value::Kind kind = a.kind == Arg::Kind::List ? Value::Kind::List
                                     : a.kind == Arg::Kind::Tuple ? Value::Kind::Tuple
                                                                  : Value::Kind::Slice;
            return Value::list(std::move(items), kind);
        }
    }
}

// Rethrows an op's error with the node it came from, keeping its class.
[[noreturn]] void rethrow_in_node(const Error& e, const Step& step) {
    const std::string msg = std::string(e.what()) + "\n(in the exported graph, node %" + step.name + " = " + step.op +
                            "(...)" + (step.source.empty() ? ")" : ", captured at " + step.source + ")");
    if (dynamic_cast<const GuardError*>(&e)) throw GuardError(msg);
    if (dynamic_cast<const IndexError*>(&e)) throw IndexError(msg);
    if (dynamic_cast<const ValueError*>(&e)) throw ValueError(msg);
    if (dynamic_cast<const TypeError*>(&e)) throw TypeError(msg);
    if (dynamic_cast<const NotImplementedError*>(&e)) throw NotImplementedError(msg);
    throw Error(msg);
}

// Tensor.item: the one element as a Python number (a float, an int, a bool by the dtype).
Value item(const Tensor& t) {
    if (!t.defined()) throw Error("Tensor.item of a value that is not a tensor in this run");
    if (t.numel() != 1) {
        throw Error("a Tensor with " + std::to_string(t.numel()) + " elements cannot be converted to Scalar");
    }
    if (is_complex(t.scalar_type())) {
        throw ValueError("Tensor.item of a " + std::string(dtype_name(t.scalar_type())) + " tensor is a complex number, "
                         "which a program's scalars cannot hold");
    }
    const Scalar s = t.item();
    if (s.isBoolean()) return Value::boolean(s.toBool());
    if (s.isFloatingPoint()) return Value::number(s.toDouble());
    return Value::integer(s.toLong());
}

// A scalar node (version 2.1): its value from this call's values, by Python's rules.
void run_scalar_step(const Step& step, const std::vector<Value>& args, Env& env) {
    Value out;
    try {
        out = step.scalar.item ? item(args[0].tensor)
                               : py_apply(step.scalar.op, args[0], args.size() > 1 ? args[1] : Value());
    } catch (const Error& e) {
        rethrow_in_node(e, step);
    }
    env.scalars[static_cast<std::size_t>(step.scalar.out)] = std::move(out);
}

void run_step(const Program& p, const Step& step, Env& env) {
    std::vector<Value> args;
    args.reserve(step.args.size());
    for (const Arg& a : step.args) args.push_back(evaluate(p, a, env));
    if (!step.entry) {
        run_scalar_step(step, args, env);
        return;
    }
    Kwargs kwargs;
    for (const auto& [key, a] : step.kwargs) kwargs.emplace(key, evaluate(p, a, env));
    OpResult out;
    try {
        out = step.entry->fn(args, kwargs);
    } catch (const Error& e) {
        rethrow_in_node(e, step);
    }
    if (step.result == "tensor" || step.result == "none" || step.op == "setitem") {
        if (!step.outputs.empty() && step.outputs[0] >= 0) {
            env.slots[static_cast<std::size_t>(step.outputs[0])] = out.empty() ? Tensor() : out[0];
        }
        return;
    }
    if (out.size() != step.outputs.size()) {
        throw GuardError("node %" + step.name + " (" + step.op + ") returned " + std::to_string(out.size()) +
                         " tensors, but the capture recorded " + std::to_string(step.outputs.size()) +
                         (step.source.empty() ? "" : " (at " + step.source + ")") +
                         ": the trace specialized its inputs' sizes");
    }
    for (std::size_t k = 0; k < out.size(); ++k) {
        if (step.outputs[k] >= 0) env.slots[static_cast<std::size_t>(step.outputs[k])] = out[k];
    }
}

IValue literal_ivalue(const Value& v) {
    switch (v.kind) {
        case Value::Kind::None: return IValue();
        case Value::Kind::Bool: return IValue(v.b);
        case Value::Kind::Int: return IValue(v.i);
        case Value::Kind::Float: return IValue(v.f);
        case Value::Kind::String:
        case Value::Kind::Device:
        case Value::Kind::MemoryFormat:
        case Value::Kind::Layout: return IValue(v.s);
        case Value::Kind::Dtype: return IValue(std::string(dtype_name(v.dtype)));
        case Value::Kind::Tensor: return IValue(v.tensor);
        case Value::Kind::List:
        case Value::Kind::Tuple: {
            std::vector<IValue> items;
            bool ints = true;
            for (const Value& x : v.items) {
                items.push_back(literal_ivalue(x));
                ints = ints && x.kind == Value::Kind::Int;
            }
            if (v.kind == Value::Kind::Tuple) return IValue::tuple(std::move(items));
            if (ints) {
                std::vector<int64_t> values;
                for (const Value& x : v.items) values.push_back(x.i);
                return IValue(values);
            }
            return IValue::list(std::move(items));
        }
        default: return IValue(describe(v));
    }
}

IValue build(const Program& p, const Spec& spec, const Env& env) {
    switch (spec.kind) {
        case Spec::Kind::Tensor: return IValue(env.slots[static_cast<std::size_t>(spec.slot)]);
        case Spec::Kind::SymInt: return IValue(evaluate(p, *spec.expr, env));
        case Spec::Kind::Scalar: return literal_ivalue(env.scalars[static_cast<std::size_t>(spec.slot)]);
        case Spec::Kind::Literal: return literal_ivalue(spec.literal);
        case Spec::Kind::List: {
            std::vector<IValue> items;
            bool tensors = true;
            for (const Spec& s : spec.items) {
                items.push_back(build(p, s, env));
                tensors = tensors && items.back().isTensor();
            }
            if (tensors) {
                std::vector<Tensor> ts;
                for (const IValue& v : items) ts.push_back(v.toTensor());
                return IValue(ts);
            }
            return IValue::list(std::move(items));
        }
        case Spec::Kind::Record: {
            // a dataclass output keeps the fields that are not None, as its to_tuple()
            std::vector<IValue> items;
            std::vector<std::string> names;
            for (std::size_t k = 0; k < spec.items.size(); ++k) {
                IValue v = build(p, spec.items[k], env);
                if (v.isNone()) continue;
                items.push_back(std::move(v));
                names.push_back(spec.names[k]);
            }
            return IValue::tuple(std::move(items), std::move(names));
        }
        default: {  // Tuple, Dict, NamedTuple
            std::vector<IValue> items;
            for (const Spec& s : spec.items) items.push_back(build(p, s, env));
            return IValue::tuple(std::move(items), spec.names);
        }
    }
}

}  // namespace

IValue run(const Program& p, std::vector<IValue> inputs, const ember::jit::Kwargs& kwargs) {
    Env env;
    env.slots.resize(p.num_slots);
    env.symbols.resize(p.symbols.size());
    env.scalars.resize(p.num_scalars);
    bind(p, inputs, kwargs, env);
    for (const Input& in : p.inputs) {
        if (in.kind == "user_input") continue;
        const Tensor& w = p.weights.at(in.target);
        env.slots[static_cast<std::size_t>(in.slot)] = in.mutated_constant ? w.clone() : w;
    }
    for (const Guard& g : p.pre_guards) check_guard(p, g, env);
    for (const Step& step : p.steps) {
        run_step(p, step, env);
        for (const Guard& g : step.guards) check_guard(p, g, env);
    }
    return build(p, p.outputs, env);
}

}  // namespace ember::jit::detail
