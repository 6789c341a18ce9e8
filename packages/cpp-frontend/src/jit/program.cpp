// Compiling a program's JSON (FORMAT.md) into a Program, with every check a reader must
// make: known kinds, dtypes and devices, unique value names, ops of the op table (the
// unknown ones all named in one error), arguments that bind to each op's signature,
// references only to values defined earlier, well-formed size expressions and specs.
#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>

#include "jit/program.h"

namespace ember::jit::detail {

namespace {

[[noreturn]] void format_error(const std::string& where, const std::string& what) {
    throw FormatError(where + ": " + what);
}

const std::set<std::string>& binary_ops() {
    static const std::set<std::string> ops = {"add", "sub", "mul", "floordiv", "mod", "max", "min"};
    return ops;
}

// The scalar ops of version 2.1 (FORMAT.md "Scalar values"), which the interpreter runs itself:
// Tensor.item and operator.<f> for Python's operators on numbers.
bool is_scalar_op(std::string_view op) {
    constexpr std::string_view prefix = "operator.";
    return op == "Tensor.item" || (op.substr(0, prefix.size()) == prefix && py_op(op.substr(prefix.size())));
}

// Python's sym.fmt: batch*4, sym_size(%conv2d, 2), max(a, b); inner binaries parenthesized.
std::string expr_text(const SizeExpr& e, bool top = true) {
    switch (e.op) {
        case SizeExpr::Op::Const: return std::to_string(e.value);
        case SizeExpr::Op::Sym:
        case SizeExpr::Op::Size: return e.text;
        case SizeExpr::Op::Max: return "max(" + expr_text(*e.a) + ", " + expr_text(*e.b) + ")";
        case SizeExpr::Op::Min: return "min(" + expr_text(*e.a) + ", " + expr_text(*e.b) + ")";
        default: break;
    }
    const char* symbol = e.op == SizeExpr::Op::Add ? "+" : e.op == SizeExpr::Op::Sub ? "-"
                       : e.op == SizeExpr::Op::Mul ? "*" : e.op == SizeExpr::Op::FloorDiv ? "//" : "%";
    std::string text = expr_text(*e.a, false) + symbol + expr_text(*e.b, false);
    return top ? text : "(" + text + ")";
}

class Compiler {
public:
    Compiler(std::string where, std::optional<std::string> device_map)
        : where_(std::move(where)), device_map_(std::move(device_map)) {}

    std::shared_ptr<Program> compile(const Json& program);

private:
    // ---- pieces
    const Json& member(const Json& obj, const char* key, const std::string& what) const;
    ExprPtr expr(const Json& j, const std::string& what, bool need_defined_now);
    std::string device(const std::string& name, const std::string& what) const;
    ScalarType dtype(const Json& j, const std::string& what) const;
    Arg arg(const Json& j, const std::string& what);
    Spec spec(const Json& j, const std::string& what, bool outputs);
    Spec structure(const Json& j, const std::string& what, const std::vector<std::string>& outputs);
    Value literal(std::string_view tag, const Json& v, const std::string& what) const;
    int slot_of(const std::string& name, const std::string& what, bool need_defined_now) const;
    int scalar_of(const std::string& name, const std::string& what) const;
    void scalar_step(Step& step, const Json& node, const std::string& what);

    void symbols(const Json& graph);
    void inputs(const Json& graph, const Json& program);
    void check_ops(const Json& nodes);
    void nodes(const Json& nodes);
    void guards(const Json& graph);
    void in_spec(const Json& graph);

    std::string where_;
    std::optional<std::string> device_map_;
    std::shared_ptr<Program> p_;
    std::unordered_map<std::string, int> symbol_index_;
    std::unordered_map<std::string, int> slots_;      // every value of the graph
    std::unordered_map<std::string, int> produced_;   // value -> step that defines it (-1: input)
    std::unordered_map<std::string, int> scalars_;    // scalar value (version 2.1) -> its scalar index
    std::size_t defined_steps_ = 0;                   // while compiling nodes: the current step
    bool in_nodes_ = false;
};

const Json& Compiler::member(const Json& obj, const char* key, const std::string& what) const {
    const Json* m = obj.find(key);
    if (!m) format_error(where_, what + " has no \"" + key + "\"");
    return *m;
}

int Compiler::slot_of(const std::string& name, const std::string& what, bool need_defined_now) const {
    auto it = slots_.find(name);
    bool defined = it != slots_.end();
    if (defined && need_defined_now && in_nodes_) {
        auto at = produced_.find(name);
        defined = at->second < static_cast<int>(defined_steps_);
    }
    if (!defined) {
        format_error(where_, what + ": refers to value %" + name + ", which no earlier node or input defines");
    }
    if (scalars_.count(name)) {
        format_error(where_, what + ": refers to %" + name + " as a tensor, but it is a scalar value (the output of a "
                     "Tensor.item or operator.* node), which an argument names as {\"scalar\": \"" + name + "\"}");
    }
    return it->second;
}

// A {"scalar": name} reference (version 2.1): a scalar value defined by an earlier node.
int Compiler::scalar_of(const std::string& name, const std::string& what) const {
    auto it = scalars_.find(name);
    if (it == scalars_.end()) {
        (void)slot_of(name, what, true);  // undefined, or defined later: that error
        format_error(where_, what + ": {\"scalar\": \"" + name + "\"} refers to %" + name + ", which is a tensor, not "
                     "a scalar value (the output of a Tensor.item or operator.* node); a tensor is {\"tensor\": \"" +
                     name + "\"}");
    }
    if (in_nodes_ && produced_.at(name) >= static_cast<int>(defined_steps_)) {
        format_error(where_, what + ": refers to value %" + name + ", which no earlier node or input defines");
    }
    return it->second;
}

ExprPtr Compiler::expr(const Json& j, const std::string& what, bool need_defined_now) {
    auto e = std::make_shared<SizeExpr>();
    if (j.is_int()) {
        e->op = SizeExpr::Op::Const;
        e->value = j.as_int(what);
        e->text = std::to_string(e->value);
        return e;
    }
    const std::string_view key = j.single_key();
    if (key == "sym" && j.single_value().is_string()) {
        const std::string& name = j.single_value().as_string(what);
        auto it = symbol_index_.find(name);
        if (it == symbol_index_.end()) format_error(where_, what + ": refers to symbol '" + name + "', which the graph does not declare");
        e->op = SizeExpr::Op::Sym;
        e->index = it->second;
        e->text = name;
        return e;
    }
    if (key == "size" && j.single_value().is_array() && j.single_value().as_array(what).size() == 2 &&
        j.single_value().as_array(what)[0].is_string() && j.single_value().as_array(what)[1].is_int()) {
        const auto& pair = j.single_value().as_array(what);
        const std::string& name = pair[0].as_string(what);
        e->op = SizeExpr::Op::Size;
        e->index = slot_of(name, what + " (a size reference)", need_defined_now);
        e->value = pair[1].as_int(what);
        e->text = "sym_size(%" + name + ", " + std::to_string(e->value) + ")";
        return e;
    }
    if (!key.empty() && binary_ops().count(std::string(key)) && j.single_value().is_array() &&
        j.single_value().as_array(what).size() == 2) {
        static const std::map<std::string_view, SizeExpr::Op> ops = {
            {"add", SizeExpr::Op::Add}, {"sub", SizeExpr::Op::Sub}, {"mul", SizeExpr::Op::Mul},
            {"floordiv", SizeExpr::Op::FloorDiv}, {"mod", SizeExpr::Op::Mod}, {"max", SizeExpr::Op::Max},
            {"min", SizeExpr::Op::Min}};
        e->op = ops.at(key);
        e->a = expr(j.single_value().as_array(what)[0], what, need_defined_now);
        e->b = expr(j.single_value().as_array(what)[1], what, need_defined_now);
        e->text = expr_text(*e);
        return e;
    }
    format_error(where_, what + ": bad size expression " + j.dump());
}

std::string Compiler::device(const std::string& name, const std::string& what) const {
    if (device_map_) return *device_map_;
    if (name == "cpu" || name == "cpu:0") return name;
    format_error(where_, what + " is on device '" + name + "', but Ember's C++ frontend runs on the CPU: load it with "
                 "a device (ember::jit::load(path, ember::kCPU)), as Python's map_location='cpu'");
}

ScalarType Compiler::dtype(const Json& j, const std::string& what) const {
    const std::string& name = j.as_string(what + ": dtype");
    try {
        return dtype_from_name(name, what);
    } catch (const Error& e) {
        throw FormatError(where_ + ": " + e.what());
    }
}

Value Compiler::literal(std::string_view tag, const Json& v, const std::string& what) const {
    const std::string bad = what + ": bad literal {\"" + std::string(tag) + "\": " + v.dump() + "}";
    if (tag == "dtype") {
        if (!v.is_string()) format_error(where_, bad);
        return Value::of_dtype(dtype(v, what));
    }
    if (tag == "device") {
        if (!v.is_string()) format_error(where_, bad);
        return Value::string(device(v.as_string(what), what), Value::Kind::Device);
    }
    if (tag == "memory_format") {
        static const std::set<std::string> formats = {"contiguous_format", "preserve_format", "channels_last",
                                                      "channels_last_3d"};
        if (!v.is_string() || !formats.count(v.as_string(what))) format_error(where_, bad);
        return Value::string(v.as_string(what), Value::Kind::MemoryFormat);
    }
    if (tag == "layout") {
        static const std::set<std::string> layouts = {"strided", "sparse_coo", "sparse_csr", "sparse_csc",
                                                      "sparse_bsr", "sparse_bsc", "jagged"};
        if (!v.is_string() || !layouts.count(v.as_string(what))) format_error(where_, bad);
        return Value::string(v.as_string(what), Value::Kind::Layout);
    }
    if (tag == "float") {
        if (v.is_string()) {
            const std::string& s = v.as_string(what);
            if (s == "inf") return Value::number(std::numeric_limits<double>::infinity());
            if (s == "-inf") return Value::number(-std::numeric_limits<double>::infinity());
            if (s == "nan") return Value::number(std::numeric_limits<double>::quiet_NaN());
        }
        format_error(where_, bad);
    }
    if (tag == "ellipsis") return Value::list({}, Value::Kind::Ellipsis);
    if (tag == "complex") {  // [re, im], each a number or {"float": "inf" | "-inf" | "nan"}
        if (!v.is_array() || v.as_array(what).size() != 2) format_error(where_, bad);
        double parts[2];
        for (std::size_t k = 0; k < 2; ++k) {
            const Json& p = v.as_array(what)[k];
            if (p.is_object() && p.single_key() == "float") {
                const Value special = literal(p.single_key(), p.single_value(), what);
                parts[k] = special.f;
            } else if (p.kind() == Json::Kind::Int) {
                parts[k] = static_cast<double>(p.as_int(what));
            } else if (p.kind() == Json::Kind::Float) {
                parts[k] = p.as_float(what);
            } else {
                format_error(where_, bad);
            }
        }
        return Value::complex_number(parts[0], parts[1]);
    }
    format_error(where_, bad);
}

Arg Compiler::arg(const Json& j, const std::string& what) {
    Arg a;
    switch (j.kind()) {
        case Json::Kind::Null: a.literal = Value::none(); return a;
        case Json::Kind::Bool: a.literal = Value::boolean(j.as_bool(what)); return a;
        case Json::Kind::Int: a.literal = Value::integer(j.as_int(what)); return a;
        case Json::Kind::Float: a.literal = Value::number(j.as_float(what)); return a;
        case Json::Kind::String: a.literal = Value::string(j.as_string(what)); return a;
        case Json::Kind::Array: {
            a.kind = Arg::Kind::List;
            std::vector<Value> values;
            for (const Json& item : j.as_array(what)) {
                a.items.push_back(arg(item, what));
                a.constant = a.constant && a.items.back().constant;
                if (a.constant) values.push_back(a.items.back().literal);
            }
            if (a.constant) a.literal = Value::list(std::move(values));
            return a;
        }
        case Json::Kind::Object: break;
    }
    const std::string_view tag = j.single_key();
    if (tag.empty()) format_error(where_, what + ": bad argument " + j.dump());
    const Json& v = j.single_value();
    if (tag == "tensor") {
        if (!v.is_string()) format_error(where_, what + ": bad argument " + j.dump());
        a.kind = Arg::Kind::Tensor;
        a.slot = slot_of(v.as_string(what), what, true);
        a.constant = false;
        return a;
    }
    if (tag == "scalar") {  // version 2.1: the value of a Tensor.item or operator.* node
        if (!v.is_string()) {
            format_error(where_, what + ": bad argument " + j.dump() + " (a scalar argument is {\"scalar\": \"<name of "
                         "a scalar value>\"})");
        }
        a.kind = Arg::Kind::Scalar;
        a.slot = scalar_of(v.as_string(what), what);
        a.constant = false;
        return a;
    }
    if (tag == "symint") {
        a.kind = Arg::Kind::SymInt;
        a.expr = expr(v, what, true);
        a.constant = false;
        return a;
    }
    if (tag == "slice" || tag == "tuple") {
        if (!v.is_array() || (tag == "slice" && v.as_array(what).size() != 3)) {
            format_error(where_, what + ": bad " + std::string(tag) + " " + v.dump());
        }
        a.kind = tag == "slice" ? Arg::Kind::Slice : Arg::Kind::Tuple;
        std::vector<Value> values;
        for (const Json& item : v.as_array(what)) {
            a.items.push_back(arg(item, what));
            a.constant = a.constant && a.items.back().constant;
            if (a.constant) values.push_back(a.items.back().literal);
        }
        if (a.constant) a.literal = Value::list(std::move(values), tag == "slice" ? Value::Kind::Slice : Value::Kind::Tuple);
        return a;
    }
    a.literal = literal(tag, v, what);
    return a;
}

Spec Compiler::spec(const Json& j, const std::string& what, bool outputs) {
    Spec s;
    const std::string_view tag = j.single_key();
    if (tag == "tensor" && j.single_value().is_string()) {
        s.kind = Spec::Kind::Tensor;
        s.tensor_name = j.single_value().as_string(what);
        auto it = slots_.find(s.tensor_name);
        if (it == slots_.end()) {
            format_error(where_, what + " %" + s.tensor_name + " is not a value of the graph");
        }
        if (scalars_.count(s.tensor_name)) {
            format_error(where_, what + " %" + s.tensor_name + " is a scalar value, which a spec names as {\"scalar\": \"" +
                         s.tensor_name + "\"}");
        }
        s.slot = it->second;
        return s;
    }
    if (tag == "scalar" && outputs && j.single_value().is_string()) {  // version 2.1: a program returns a scalar
        s.kind = Spec::Kind::Scalar;
        s.tensor_name = j.single_value().as_string(what);
        auto it = scalars_.find(s.tensor_name);
        if (it == scalars_.end()) {
            format_error(where_, what + " %" + s.tensor_name + " is not a scalar value of the graph");
        }
        s.slot = it->second;
        return s;
    }
    if ((tag == "tuple" || tag == "list") && j.single_value().is_array()) {
        s.kind = tag == "tuple" ? Spec::Kind::Tuple : Spec::Kind::List;
        for (const Json& item : j.single_value().as_array(what)) s.items.push_back(spec(item, what, outputs));
        return s;
    }
    if (tag == "dict" && j.single_value().is_array()) {
        s.kind = Spec::Kind::Dict;
        for (const Json& pair : j.single_value().as_array(what)) {
            if (!pair.is_array() || pair.as_array(what).size() != 2) format_error(where_, what + ": bad dict entry " + pair.dump());
            const Json& key = pair.as_array(what)[0];
            s.names.push_back(key.is_string() ? key.as_string(what) : key.dump());
            s.items.push_back(spec(pair.as_array(what)[1], what, outputs));
        }
        return s;
    }
    if (tag == "namedtuple" && j.single_value().is_object()) {
        const Json& v = j.single_value();
        s.kind = Spec::Kind::NamedTuple;
        s.type_name = member(v, "name", what).as_string(what + ": namedtuple name");
        for (const Json& f : member(v, "fields", what).as_array(what)) s.names.push_back(f.as_string(what + ": field"));
        for (const Json& item : member(v, "items", what).as_array(what)) s.items.push_back(spec(item, what, outputs));
        if (s.names.size() != s.items.size()) format_error(where_, what + ": a namedtuple needs one item per field");
        return s;
    }
    if (tag == "record" && j.single_value().is_object()) {
        const Json& v = j.single_value();
        s.kind = Spec::Kind::Record;
        s.type_name = member(v, "name", what).as_string(what + ": record name");
        for (const Json& f : member(v, "fields", what).as_array(what)) {
            if (!f.is_array() || f.as_array(what).size() != 2) format_error(where_, what + ": bad record field " + f.dump());
            s.names.push_back(f.as_array(what)[0].as_string(what + ": field"));
            s.items.push_back(spec(f.as_array(what)[1], what, outputs));
        }
        return s;
    }
    if (tag == "symint" && outputs) {
        s.kind = Spec::Kind::SymInt;
        s.expr = expr(j.single_value(), what, false);
        return s;
    }
    // a literal (an argument the call passes as a constant, or a constant output)
    Arg a = arg(j, what);
    if (!a.constant) format_error(where_, what + ": bad spec " + j.dump());
    s.kind = Spec::Kind::Literal;
    s.literal = a.literal;
    return s;
}

// A nested result's "structure" (FORMAT.md "Nodes", version 2): tuples and lists (the outermost
// one a container) of {"tensor": output} and null, whose leaves are the node's outputs in order
// ("" for a null leaf, as `outputs` has it).
Spec Compiler::structure(const Json& j, const std::string& what, const std::vector<std::string>& outputs) {
    std::vector<std::string> leaves;
    std::function<Spec(const Json&, bool)> walk = [&](const Json& s, bool top) -> Spec {
        Spec out;
        const std::string_view tag = s.is_object() ? s.single_key() : std::string_view();
        if (s.is_null() && !top) {
            leaves.emplace_back();
            return out;  // a Literal (None): an item that is not a tensor
        }
        if (tag == "tensor" && s.single_value().is_string() && !top) {
            out.kind = Spec::Kind::Tensor;
            out.tensor_name = s.single_value().as_string(what);
            auto it = slots_.find(out.tensor_name);
            out.slot = it == slots_.end() ? -1 : it->second;
            leaves.push_back(out.tensor_name);
            return out;
        }
        if ((tag == "tuple" || tag == "list") && s.single_value().is_array()) {
            out.kind = tag == "tuple" ? Spec::Kind::Tuple : Spec::Kind::List;
            for (const Json& item : s.single_value().as_array(what)) out.items.push_back(walk(item, false));
            return out;
        }
        format_error(where_, what + ": a nested result needs a structure of tuple/list containers with tensor and null "
                                    "leaves, not " + s.dump());
    };
    Spec out = walk(j, true);
    if (leaves != outputs) {
        auto names = [](const std::vector<std::string>& v) {
            std::string text;
            for (const std::string& n : v) text += (text.empty() ? "" : ", ") + (n.empty() ? std::string("None") : "'" + n + "'");
            return "[" + text + "]";
        };
        format_error(where_, what + ": the leaves of the structure " + names(leaves) + " are not the outputs " + names(outputs));
    }
    return out;
}

void Compiler::symbols(const Json& graph) {
    const Json* symbols = graph.find("symbols");
    if (!symbols || symbols->is_null()) return;
    if (!symbols->is_object()) format_error(where_, "graph: symbols must be an object");
    for (const auto& [name, range] : symbols->as_object("graph: symbols")) {
        const Json* lo = range.find("min");
        const Json* hi = range.find("max");
        if (!lo || !lo->is_int() || (hi && !hi->is_null() && !hi->is_int())) {
            format_error(where_, "graph: symbol '" + name + "' needs an int min and an int/null max");
        }
        Symbol s;
        s.name = name;
        s.min = lo->as_int(name);
        if (hi && hi->is_int()) s.max = hi->as_int(name);
        const Json* unbacked = range.find("unbacked");
        s.unbacked = unbacked && unbacked->is_bool() && unbacked->as_bool(name);
        symbol_index_[name] = static_cast<int>(p_->symbols.size());
        p_->symbols.push_back(std::move(s));
    }
}

void Compiler::inputs(const Json& graph, const Json& program) {
    std::set<std::string> mutated_constants;
    if (const Json* m = program.find("mutations"); m && m->is_object()) {
        if (const Json* c = m->find("constants"); c && c->is_array()) {
            for (const Json& name : c->as_array("mutations")) {
                if (name.is_string()) mutated_constants.insert(name.as_string("mutations"));
            }
        }
    }
    const Json& list = member(graph, "inputs", "graph");
    std::size_t k = 0;
    for (const Json& j : list.as_array("graph: inputs")) {
        const std::string what = "graph input " + std::to_string(k++);
        if (!j.is_object()) format_error(where_, what + ": expected an object");
        Input in;
        const Json* name = j.find("name");
        const Json* kind = j.find("kind");
        static const std::set<std::string> kinds = {"user_input", "parameter", "buffer", "constant"};
        if (!name || !name->is_string() || !kind || !kind->is_string() || !kinds.count(kind->as_string(what))) {
            format_error(where_, what + ": needs a name and a kind in ('user_input', 'parameter', 'buffer', 'constant')");
        }
        in.name = name->as_string(what);
        in.kind = kind->as_string(what);
        const std::string named = what + " (" + in.name + ")";
        if (in.kind != "user_input") {
            const Json* target = j.find("target");
            if (!target || !target->is_string()) format_error(where_, named + ": a " + in.kind + " needs a target");
            in.target = target->as_string(what);
        }
        if (const Json* persistent = j.find("persistent"); persistent && persistent->is_bool()) {
            in.persistent = persistent->as_bool(what);
        }
        if (const Json* rg = j.find("requires_grad"); rg && rg->is_bool()) in.requires_grad = rg->as_bool(what);
        in.dtype = dtype(member(j, "dtype", named), named);
        in.device = device(member(j, "device", named).as_string(named + ": device"), "graph input %" + in.name);
        std::string dims;
        for (const Json& d : member(j, "shape", named).as_array(named + ": shape")) {
            Dim dim;
            ExprPtr e = expr(d, named + ": shape", false);
            dim.text = e->text;
            if (e->op == SizeExpr::Op::Const) {
                dim.kind = Dim::Kind::Static;
                dim.size = e->value;
            } else if (e->op == SizeExpr::Op::Sym) {
                dim.kind = Dim::Kind::Symbol;
                dim.symbol = e->index;
            }
            dims += (dims.empty() ? "" : ", ") + dim.text;
            in.shape.push_back(dim);
        }
        in.meta_text = std::string(dtype_name(in.dtype)) + "[" + dims + "]";
        in.mutated_constant = mutated_constants.count(in.name) != 0;
        if (slots_.count(in.name)) format_error(where_, what + ": the value name %" + in.name + " is used twice");
        in.slot = static_cast<int>(p_->num_slots++);
        slots_[in.name] = in.slot;
        produced_[in.name] = -1;
        p_->slot_names.push_back(in.name);
        p_->inputs.push_back(std::move(in));
    }
}

void Compiler::check_ops(const Json& nodes) {
    const OpTable& table = op_table();
    std::vector<std::string> unknown;
    std::set<std::string> seen;
    std::size_t k = 0;
    for (const Json& node : nodes.as_array("graph: nodes")) {
        const std::string what = "graph node " + std::to_string(k++);
        const Json* op = node.find("op");
        const Json* name = node.find("name");
        if (!node.is_object() || !op || !op->is_string() || !name || !name->is_string()) {
            format_error(where_, what + ": needs a name and an op");
        }
        const std::string& op_name = op->as_string(what);
        if (!table.count(op_name) && !is_scalar_op(op_name) && seen.insert(op_name).second) {
            unknown.push_back("'" + op_name + "' (node %" + name->as_string(what) + ")");
        }
    }
    if (unknown.empty()) return;
    std::string list;
    for (const std::string& u : unknown) list += (list.empty() ? "" : ", ") + u;
    format_error(where_, "the program uses " + std::to_string(unknown.size()) + " op" + (unknown.size() == 1 ? "" : "s") +
                             " that Ember's C++ frontend cannot run: " + list +
                             " (ember::jit::supported_ops() lists the ops it runs)");
}

void Compiler::nodes(const Json& nodes) {
    const OpTable& table = op_table();
    // every output name first, so that a reference to a later value says "no earlier node"
    std::vector<std::vector<std::string>> output_names;
    std::size_t k = 0;
    for (const Json& node : nodes.as_array("graph: nodes")) {
        const std::string what = "graph node " + std::to_string(k) + " (" + node.find("name")->as_string("name") + ")";
        const Json* result = node.find("result");
        const bool scalar = result && result->is_string() && result->as_string(what) == "scalar";
        output_names.emplace_back();
        const Json* outs = node.find("outputs");
        if (outs && !outs->is_null()) {
            for (const Json& o : outs->as_array(what + ": outputs")) {
                if (o.is_null()) {
                    output_names.back().emplace_back();
                    continue;
                }
                const Json* name = o.find("name");
                if (!name || !name->is_string()) format_error(where_, what + ": bad output " + o.dump());
                const std::string& n = name->as_string(what);
                if (slots_.count(n)) format_error(where_, what + ": the value name %" + n + " is used twice");
                slots_[n] = static_cast<int>(p_->num_slots++);
                produced_[n] = static_cast<int>(k);
                p_->slot_names.push_back(n);
                output_names.back().push_back(n);
                if (scalar) scalars_[n] = static_cast<int>(p_->num_scalars++);
                // the output's dtype and device are checked as the inputs' are
                (void)dtype(member(o, "dtype", what), what);
                (void)device(member(o, "device", what).as_string(what + ": device"), what + " output %" + n);
            }
        }
        ++k;
    }
    in_nodes_ = true;
    k = 0;
    for (const Json& node : nodes.as_array("graph: nodes")) {
        Step step;
        step.name = node.find("name")->as_string("name");
        step.op = node.find("op")->as_string("op");
        const std::string what = "node %" + step.name + " (" + step.op + ")";
        defined_steps_ = k;
        if (const Json* s = node.find("source"); s && s->is_string()) step.source = s->as_string(what);
        step.result = "tensor";
        if (const Json* r = node.find("result"); r && !r->is_null()) step.result = r->as_string(what + ": result");
        if (step.result != "tensor" && step.result != "tuple" && step.result != "list" && step.result != "nested" &&
            step.result != "none" && step.result != "scalar") {
            format_error(where_, what + ": result must be one of tensor, tuple, list, nested, none, scalar (got '" +
                                     step.result + "')");
        }
        if (is_scalar_op(step.op) || step.result == "scalar") {
            scalar_step(step, node, what);
            p_->steps.push_back(std::move(step));
            ++k;
            continue;
        }
        step.entry = &table.find(step.op)->second;
        if (step.result == "nested") {
            const Json* s = node.find("structure");
            step.structure = structure(s ? *s : Json(), what, output_names[k]);
        }
        const Json* args = node.find("args");
        const Json* kwargs = node.find("kwargs");
        if ((args && !args->is_array()) || (kwargs && !kwargs->is_object())) {
            format_error(where_, what + ": args must be a list and kwargs an object");
        }
        std::vector<std::string> keywords;
        if (args) {
            for (const Json& a : args->as_array(what)) step.args.push_back(arg(a, what));
        }
        if (kwargs) {
            for (const auto& [key, value] : kwargs->as_object(what)) {
                keywords.push_back(key);
                step.kwargs.emplace_back(key, arg(value, what));
            }
        }
        try {
            step.entry->signature.check_call(step.args.size(), keywords, step.op);
        } catch (const Error& e) {
            format_error(where_, what + ": the arguments do not fit the op: " + e.what());
        }
        for (const std::string& n : output_names[k]) step.outputs.push_back(n.empty() ? -1 : slots_.at(n));
        if (step.result == "tensor" && step.outputs.size() != 1) {
            format_error(where_, what + ": a node with result 'tensor' has one output, not " + std::to_string(step.outputs.size()));
        }
        p_->steps.push_back(std::move(step));
        ++k;
    }
    in_nodes_ = false;
}

// A scalar node (version 2.1): `Tensor.item(tensor)` or `operator.<f>(a[, b])` on numbers
// (literals, scalar values, symints), with one output of a scalar's dtype, as FORMAT.md's
// "Scalar values" says a reader must check.
void Compiler::scalar_step(Step& step, const Json& node, const std::string& what) {
    if (!is_scalar_op(step.op)) {
        format_error(where_, what + ": only Tensor.item and the operator.* scalar ops have a scalar result, not " + step.op);
    }
    if (step.result != "scalar") {
        format_error(where_, what + ": a " + step.op + " node's result is 'scalar', not '" + step.result + "'");
    }
    const Json* outs = node.find("outputs");
    const std::vector<Json>* list = outs && outs->is_array() ? &outs->as_array(what) : nullptr;
    const Json* out = list && list->size() == 1 ? &(*list)[0] : nullptr;
    const Json* dtype = out ? out->find("dtype") : nullptr;
    const Json* shape = out ? out->find("shape") : nullptr;
    const Json* device = out ? out->find("device") : nullptr;
    const bool ok = dtype && dtype->is_string() &&
                    (dtype->as_string(what) == "bool" || dtype->as_string(what) == "int64" ||
                     dtype->as_string(what) == "float64") &&
                    shape && shape->is_array() && shape->as_array(what).empty() && device && device->is_string() &&
                    device->as_string(what) == "cpu";
    if (!ok) {
        format_error(where_, what + ": a scalar result needs one output of dtype bool/int64/float64, shape [] and "
                     "device 'cpu'");
    }
    step.scalar.out = scalars_.at(out->find("name")->as_string(what));
    const Json* args = node.find("args");
    const Json* kwargs = node.find("kwargs");
    if ((args && !args->is_array()) || (kwargs && !kwargs->is_object())) {
        format_error(where_, what + ": args must be a list and kwargs an object");
    }
    if (kwargs && !kwargs->as_object(what).empty()) {
        format_error(where_, what + ": " + step.op + " takes no keyword arguments, got " + kwargs->dump());
    }
    const std::vector<Json> none;
    const std::vector<Json>& items = args ? args->as_array(what) : none;
    if (step.op == "Tensor.item") {
        step.scalar.item = true;
        if (items.size() != 1 || items[0].single_key() != "tensor") {
            format_error(where_, what + ": Tensor.item takes one argument, a tensor ({\"tensor\": name}), not " +
                                     (args ? args->dump() : std::string("[]")));
        }
    } else {
        step.scalar.op = *py_op(std::string_view(step.op).substr(std::string_view("operator.").size()));
        const std::size_t arity = static_cast<std::size_t>(py_op_arity(step.scalar.op));
        if (items.size() != arity) {
            format_error(where_, what + ": " + step.op + " takes " + std::to_string(arity) + " argument" +
                                     (arity == 1 ? "" : "s") + ", not " + std::to_string(items.size()));
        }
    }
    for (std::size_t i = 0; i < items.size(); ++i) {
        Arg a = arg(items[i], what);
        const bool number = a.kind == Arg::Kind::Scalar || a.kind == Arg::Kind::SymInt ||
                            (a.kind == Arg::Kind::Literal && a.literal.is_number());
        if (!step.scalar.item && !number) {
            format_error(where_, what + ": argument " + std::to_string(i) + " of " + step.op + " must be a number, a "
                         "scalar value ({\"scalar\": name}) or a symint, not " + items[i].dump());
        }
        step.args.push_back(std::move(a));
    }
    step.outputs.push_back(slots_.at(out->find("name")->as_string(what)));
}

void Compiler::guards(const Json& graph) {
    const Json* list = graph.find("guards");
    if (!list || list->is_null()) return;
    std::size_t k = 0;
    for (const Json& g : list->as_array("graph: guards")) {
        const std::string what = "guard " + std::to_string(k++);
        Guard guard;
        guard.lhs = expr(member(g, "lhs", what), what, false);
        guard.rhs = expr(member(g, "rhs", what), what, false);
        guard.op = member(g, "op", what).as_string(what + ": op");
        static const std::map<std::string, std::string> text = {{"eq", "=="}, {"ne", "!="}, {"lt", "<"},
                                                                {"le", "<="}, {"gt", ">"}, {"ge", ">="}};
        auto it = text.find(guard.op);
        if (it == text.end()) format_error(where_, what + ": op must be one of eq ne lt le gt ge");
        const Json* expected = g.find("expected");
        guard.expected = !expected || !expected->is_bool() || expected->as_bool(what);
        if (const Json* s = g.find("source"); s && s->is_string()) guard.source = s->as_string(what);
        guard.text = guard.lhs->text + " " + it->second + " " + guard.rhs->text;
        if (!guard.expected) guard.text = "not (" + guard.text + ")";
        // checked as soon as every size it reads exists
        int at = -1;
        std::vector<const SizeExpr*> stack = {guard.lhs.get(), guard.rhs.get()};
        while (!stack.empty()) {
            const SizeExpr* e = stack.back();
            stack.pop_back();
            if (e->op == SizeExpr::Op::Size) {
                at = std::max(at, produced_.at(p_->slot_names[static_cast<std::size_t>(e->index)]));
            } else if (e->a) {
                stack.push_back(e->a.get());
                stack.push_back(e->b.get());
            }
        }
        (at < 0 ? p_->pre_guards : p_->steps[static_cast<std::size_t>(at)].guards).push_back(std::move(guard));
    }
}

void Compiler::in_spec(const Json& graph) {
    const Json& list = member(graph, "in_spec", "graph");
    static const std::set<std::string> kinds = {"POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD", "VAR_POSITIONAL",
                                                "KEYWORD_ONLY", "VAR_KEYWORD"};
    for (const Json& j : list.as_array("graph: in_spec")) {
        InSpec s;
        const Json* name = j.find("name");
        if (!name || !name->is_string()) format_error(where_, "graph: bad input spec " + j.dump());
        s.name = name->as_string("in_spec");
        s.kind = "POSITIONAL_OR_KEYWORD";
        if (const Json* kind = j.find("kind"); kind && kind->is_string()) s.kind = kind->as_string("in_spec");
        if (!kinds.count(s.kind)) format_error(where_, "graph: bad input spec " + j.dump());
        const Json* sp = j.find("spec");
        s.spec = spec(sp ? *sp : Json(), "input spec of " + s.name, false);
        std::vector<const Spec*> stack = {&s.spec};
        while (!stack.empty()) {
            const Spec* x = stack.back();
            stack.pop_back();
            if (x->kind == Spec::Kind::Tensor &&
                p_->inputs[static_cast<std::size_t>(x->slot)].kind != "user_input") {
                format_error(where_, "input spec of " + s.name + ": %" + x->tensor_name + " is not a user input");
            }
            for (const Spec& item : x->items) stack.push_back(&item);
        }
        p_->in_spec.push_back(std::move(s));
    }
}

std::shared_ptr<Program> Compiler::compile(const Json& program) {
    p_ = std::make_shared<Program>();
    p_->path = where_;
    if (!program.is_object()) format_error(where_, "the program JSON must be an object");
    const Json* kind = program.find("kind");
    if (!kind || !kind->is_string() || (kind->as_string("kind") != "export" && kind->as_string("kind") != "jit")) {
        format_error(where_, "the program JSON needs a kind ('export' or 'jit')");
    }
    p_->kind = kind->as_string("kind");
    if (const Json* t = program.find("training"); t && t->is_bool()) p_->training = t->as_bool("training");
    const Json* graph = program.find("graph");
    if (!graph || !graph->is_object()) format_error(where_, "graph: expected a JSON object");
    const Json* nodes_json = graph->find("nodes");
    static const Json no_nodes = Json::array({});
    const Json& node_list = nodes_json && !nodes_json->is_null() ? *nodes_json : no_nodes;
    if (!node_list.is_array()) format_error(where_, "graph: nodes must be a list");
    check_ops(node_list);  // first: one error naming every op this library lacks
    symbols(*graph);
    inputs(*graph, program);
    nodes(node_list);
    guards(*graph);
    in_spec(*graph);
    const Json* outputs = graph->find("outputs");
    p_->outputs = spec(outputs ? *outputs : Json(), "graph output", true);
    return p_;
}

}  // namespace

std::shared_ptr<Program> compile_program(const Json& program, const std::string& where,
                                         const std::optional<std::string>& device_map) {
    return Compiler(where, device_map).compile(program);
}

}  // namespace ember::jit::detail
