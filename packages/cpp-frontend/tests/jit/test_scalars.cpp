// Scalar values (FORMAT.md version 2.1): `x.item()` in ember.export is a Tensor.item node whose
// value goes into ops as a scalar argument and into Python arithmetic and comparisons as
// operator.* nodes. The programs of golden_scalars.py run in C++ on each run's inputs against
// the outputs of Python's loaded program (tensors within 1e-5, scalars of Python's type: ints
// and bools exactly, floats within 1e-9 relative); operator.* matches Python's `operator` over a
// grid of bools, ints and floats bit for bit (scalar_ops.json); malformed scalar nodes and
// arguments are refused with errors that say what is wrong.
#include <cmath>
#include <cstdlib>

#include "jit/value.h"
#include "jit_test_util.h"

namespace {

using namespace jit_test;
using ember::testing::error_of;
using ember::jit::detail::PyOp;
using ember::jit::detail::Value;

const std::vector<std::string> kPrograms = {"scalars_chain", "scalars_dynamic", "scalars_module"};

Value decode(const Json& j) {
    const std::string_view tag = j.single_key();
    const Json& v = j.single_value();
    if (tag == "bool") return Value::boolean(v.as_bool("bool"));
    if (tag == "int") return Value::integer(v.as_int("int"));
    if (tag == "float") return Value::number(std::strtod(v.as_string("float").c_str(), nullptr));
    throw std::runtime_error("not a scalar: " + j.dump());
}

std::string text(const Value& v) {
    return std::string(ember::jit::detail::type_name(v)) + " " + ember::jit::detail::describe(v);
}

std::string shown(const IValue& v) {
    if (v.isBool()) return v.toBool() ? "True" : "False";
    if (v.isInt()) return std::to_string(v.toInt());
    if (v.isDouble()) return text(Value::number(v.toDouble()));
    return v.tagKind();
}

// The output against Python's structure: golden_jit.py's check_output, with scalar leaves.
std::string check(const IValue& out, const Json& structure, const std::vector<Tensor>& expected, std::size_t& next,
                  const std::string& path = "output") {
    if (structure.is_string()) {
        if (!out.isTensor()) return path + ": expected a Tensor, got " + out.tagKind();
        if (next >= expected.size()) return path + ": more tensors than Python's";
        Closeness c = compare(out.toTensor(), expected[next++]);
        return c.ok ? "" : path + ": " + c.detail;
    }
    const std::string_view tag = structure.single_key();
    if (tag == "bool" || tag == "int" || tag == "float") {
        const Value want = decode(structure);
        const bool ok = tag == "bool"  ? out.isBool() && out.toBool() == want.b
                        : tag == "int" ? out.isInt() && out.toInt() == want.i
                                       : out.isDouble() && (std::abs(out.toDouble() - want.f) <= 1e-9 * (1 + std::abs(want.f)) ||
                                                            (std::isnan(want.f) && std::isnan(out.toDouble())));
        return ok ? "" : path + ": expected the " + text(want) + ", got " + out.tagKind() + " " + shown(out);
    }
    if (tag != "tuple" && tag != "list") return path + ": unknown structure " + structure.dump();
    if (tag == "tuple" ? !out.isTuple() : !out.isList()) return path + ": expected a " + std::string(tag) + ", got " + out.tagKind();
    const std::vector<IValue> items = out.isTuple() ? out.toTuple()->elements() : out.toList();
    const std::vector<Json>& parts = structure.single_value().as_array(path);
    if (items.size() != parts.size()) return path + ": " + std::to_string(items.size()) + " items, Python has " + std::to_string(parts.size());
    for (std::size_t k = 0; k < items.size(); ++k) {
        std::string why = check(items[k], parts[k], expected, next, path + "[" + std::to_string(k) + "]");
        if (!why.empty()) return why;
    }
    return "";
}

class ScalarProgram : public ::testing::TestWithParam<std::string> {};

// Every run's inputs give Python's outputs (golden_scalars.py checks that the runs' scalars
// differ, so a value baked in at capture cannot pass).
TEST_P(ScalarProgram, MatchesPython) {
    EMBER_JIT_NEED_GOLDEN();
    const std::string program = GetParam();
    ember::jit::Module m = ember::jit::load(golden(program + ".ember"));
    int runs = 0;
    for (int k = 0; std::ifstream(run_file(program, k)).good(); ++k, ++runs) {
        GoldenRun run = read_run(program, k);
        IValue out = m.forward(std::vector<IValue>(run.inputs.begin(), run.inputs.end()));
        std::size_t next = 0;
        EXPECT_EQ(check(out, run.structure, run.outputs, next), "") << program << " run " << k;
        EXPECT_EQ(next, run.outputs.size()) << program << " run " << k;
    }
    EXPECT_EQ(runs, 3) << program;
}

INSTANTIATE_TEST_SUITE_P(Golden, ScalarProgram, ::testing::ValuesIn(kPrograms),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(ScalarPrograms, AreTheGoldenWritersPrograms) {
    EMBER_JIT_NEED_GOLDEN();
    expect_written_programs("programs_scalars.txt", kPrograms);
}

TEST(ScalarPrograms, AreVersion2_1WithScalarNodes) {
    EMBER_JIT_NEED_GOLDEN();
    ember::serialize::SafetensorsFile file = ember::serialize::read_safetensors(golden("scalars_chain.ember"));
    EXPECT_EQ(file.metadata.at("format_version"), "2.1");
    const std::string& graph = file.metadata.at("graph");
    EXPECT_NE(graph.find("\"op\":\"Tensor.item\""), std::string::npos);
    EXPECT_NE(graph.find("{\"scalar\":\"item\"}"), std::string::npos);
    std::vector<std::string> ops = ember::jit::load(golden("scalars_chain.ember")).node_ops();
    for (const char* op : {"Tensor.item", "operator.floordiv", "operator.mod", "operator.truediv", "operator.pow",
                           "operator.gt", "operator.neg", "operator.pos", "operator.abs", "operator.eq"}) {
        EXPECT_NE(std::count(ops.begin(), ops.end(), op), 0) << op;
    }
}

// A program's scalars come from each call: two calls with other data give other scalars.
TEST(ScalarPrograms, ReplayWithEachCallsValues) {
    EMBER_JIT_NEED_GOLDEN();
    ember::jit::Module m = ember::jit::load(golden("scalars_dynamic.ember"));
    const Tensor x = ember::arange(6, ember::kFloat).reshape({2, 3}) - 2;
    const Tensor some = ember::tensor({1.0f, 0.0f, 0.0f, 1.0f, 1.0f, 0.0f}).reshape({2, 3}) > 0.5;
    const Tensor one = ember::tensor({0.0f, 0.0f, 0.0f, 0.0f, 1.0f, 0.0f}).reshape({2, 3}) > 0.5;
    auto outputs = [&](const Tensor& mask) { return m.forward({x, mask}).toTuple()->elements(); };
    std::vector<IValue> a = outputs(some), b = outputs(one);
    EXPECT_EQ(a[5].toInt(), 3 * 2);  // n * batch: 3 items true, batch 2
    EXPECT_EQ(b[5].toInt(), 1 * 2);
    EXPECT_TRUE(a[2].toTensor().equal(ember::full({2, 3}, 6.0f)));
    EXPECT_TRUE(a[1].toTensor().equal(x));                              // n >= 2: x * True
    EXPECT_TRUE(b[1].toTensor().equal(ember::zeros({2, 3})));           // x * False
    EXPECT_TRUE(b[3].toTensor().equal(x.clamp_max(1.0 / 3)));           // clamp(max=n / 3)
    EXPECT_TRUE(a[4].toTensor().allclose(x / 3));                       // x / x.abs().max().item()
}

// ---- operator.* against Python's operator module

Json read_json(const std::string& path) {
    std::ifstream f(path);
    std::stringstream text;
    text << f.rdbuf();
    return ember::jit::detail::parse_json(text.str(), path);
}

bool identical(const Value& a, const Value& b) {
    if (a.kind != b.kind) return false;
    if (a.kind == Value::Kind::Bool) return a.b == b.b;
    if (a.kind == Value::Kind::Int) return a.i == b.i;
    if (std::isnan(a.f) || std::isnan(b.f)) return std::isnan(a.f) && std::isnan(b.f);
    return a.f == b.f && std::signbit(a.f) == std::signbit(b.f);  // -0.0 is not 0.0 (0.0 % -5 is -0.0)
}

TEST(ScalarOps, ArePythonsOperators) {
    EMBER_JIT_NEED_GOLDEN();
    const Json cases = read_json(golden("scalar_ops.json"));
    std::size_t checked = 0, errors = 0;
    for (const Json& c : cases.as_array("cases")) {
        const auto& parts = c.as_array("case");
        const std::string& name = parts[0].as_string("op");
        const std::optional<PyOp> op = ember::jit::detail::py_op(name);
        ASSERT_TRUE(op) << name;
        const Value a = decode(parts[1]);
        const Value b = parts[2].is_null() ? Value() : decode(parts[2]);
        const std::string expr = name + "(" + text(a) + (parts[2].is_null() ? "" : ", " + text(b)) + ")";
        const Json& want = parts[3];
        const std::string_view tag = want.single_key();
        if (tag == "error" || tag == "overflow" || tag == "complex") {
            const std::string got = error_of([&] { ember::jit::detail::py_apply(*op, a, b); });
            const std::string expected = tag == "error"      ? want.single_value().as_string("error")
                                         : tag == "overflow" ? "does not fit in an int64"
                                                             : "is a complex number";
            EXPECT_NE(got.find(expected), std::string::npos) << expr << ": " << got << " (Python: " << want.dump() << ")";
            ++errors;
        } else {
            Value got;
            try {
                got = ember::jit::detail::py_apply(*op, a, b);
            } catch (const ember::Error& e) {
                ADD_FAILURE() << expr << " raised " << e.what() << "; Python gives " << want.dump();
                continue;
            }
            EXPECT_TRUE(identical(got, decode(want))) << expr << " = " << text(got) << "; Python gives " << want.dump();
        }
        ++checked;
    }
    EXPECT_GT(checked, 9000u);
    EXPECT_GT(errors, 100u);
}

TEST(ScalarOps, NamesAndArities) {
    EXPECT_EQ(ember::jit::detail::py_op("floordiv"), PyOp::FloorDiv);
    EXPECT_FALSE(ember::jit::detail::py_op("xor"));
    EXPECT_EQ(ember::jit::detail::py_op_arity(PyOp::Neg), 1);
    EXPECT_EQ(ember::jit::detail::py_op_arity(PyOp::Pow), 2);
    EXPECT_STREQ(ember::jit::detail::py_op_name(PyOp::TrueDiv), "truediv");
    // Python's TypeError for what is not a number
    EXPECT_EQ(error_as<ember::TypeError>([] { ember::jit::detail::py_apply(PyOp::Add, Value::integer(1), Value::string("a")); }),
              "unsupported operand type(s) for +: 'int' and 'str'");
    EXPECT_EQ(error_as<ember::TypeError>([] { ember::jit::detail::py_apply(PyOp::Lt, Value(), Value::integer(1)); }),
              "'<' not supported between instances of 'NoneType' and 'int'");
    EXPECT_EQ(error_as<ember::TypeError>([] { ember::jit::detail::py_apply(PyOp::Neg, Value()); }),
              "bad operand type for unary -: 'NoneType'");
}

// ---- errors

std::string with_graph(const std::string& name, const std::string& from, const std::string& to) {
    return rewrite("scalars_chain", name, [&](ember::serialize::SafetensorsFile& f) {
        f.metadata["graph"] = replace_once(f.metadata.at("graph"), from, to);
    });
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(ScalarErrors, MalformedScalarArgumentsAndNodesAreRefused) {
    EMBER_JIT_NEED_GOLDEN();
    const std::pair<std::string, std::string> edits[] = {
        {"{\"scalar\":\"item\"}", "{\"scalar\":7}"},
        {"{\"scalar\":\"item\"}", "{\"scalar\":\"ghost\"}"},
        {"{\"scalar\":\"item\"}", "{\"scalar\":\"x\"}"},
        {"{\"scalar\":\"item\"}", "{\"tensor\":\"item\"}"},
        {"\"op\":\"Tensor.item\",\"args\":[{\"tensor\":\"sum\"}]", "\"op\":\"Tensor.item\",\"args\":[{\"scalar\":\"sum\"}]"},
        {"\"op\":\"Tensor.item\",\"args\":[{\"tensor\":\"sum\"}]", "\"op\":\"Tensor.item\",\"args\":[3]"},
        {"\"op\":\"operator.floordiv\",\"args\":[{\"scalar\":\"item_1\"},-3]", "\"op\":\"operator.floordiv\",\"args\":[{\"scalar\":\"item_1\"},\"three\"]"},
        {"\"op\":\"operator.floordiv\",\"args\":[{\"scalar\":\"item_1\"},-3]", "\"op\":\"operator.floordiv\",\"args\":[{\"scalar\":\"item_1\"}]"},
        {"\"op\":\"operator.floordiv\",\"args\":[{\"scalar\":\"item_1\"},-3]", "\"op\":\"operator.floordiv\",\"args\":[{\"tensor\":\"x\"},-3]"},
        {"\"op\":\"operator.floordiv\",\"args\":[{\"scalar\":\"item_1\"},-3],\"kwargs\":{}", "\"op\":\"operator.floordiv\",\"args\":[{\"scalar\":\"item_1\"},-3],\"kwargs\":{\"b\":1}"},
        {"\"op\":\"operator.floordiv\"", "\"op\":\"operator.xor\""},
        {"\"name\":\"item\",\"dtype\":\"float64\"", "\"name\":\"item\",\"dtype\":\"float32\""},
        {"\"outputs\":[{\"name\":\"item\",\"dtype\":\"float64\",\"shape\":[]", "\"outputs\":[{\"name\":\"item\",\"dtype\":\"float64\",\"shape\":[1]"},
        {"\"result\":\"scalar\"", "\"result\":\"tensor\""},
        {"\"result\":\"tensor\"", "\"result\":\"scalar\""},
    };
    const char* expected[] = {
        "bad argument {\"scalar\": 7} (a scalar argument is {\"scalar\": \"<name of a scalar value>\"})",
        "refers to value %ghost, which no earlier node or input defines",
        "{\"scalar\": \"x\"} refers to %x, which is a tensor, not a scalar value (the output of a Tensor.item or "
        "operator.* node); a tensor is {\"tensor\": \"x\"}",
        "refers to %item as a tensor, but it is a scalar value (the output of a Tensor.item or operator.* node), which "
        "an argument names as {\"scalar\": \"item\"}",
        "Tensor.item takes one argument, a tensor ({\"tensor\": name}), not [{\"scalar\": \"sum\"}]",
        "Tensor.item takes one argument, a tensor ({\"tensor\": name}), not [3]",
        "argument 1 of operator.floordiv must be a number, a scalar value ({\"scalar\": name}) or a symint, not \"three\"",
        "operator.floordiv takes 2 arguments, not 1",
        "argument 0 of operator.floordiv must be a number, a scalar value ({\"scalar\": name}) or a symint, not "
        "{\"tensor\": \"x\"}",
        "operator.floordiv takes no keyword arguments, got {\"b\": 1}",
        "the program uses 1 op that Ember's C++ frontend cannot run: 'operator.xor' (node %floordiv)",
        "node %item (Tensor.item): a scalar result needs one output of dtype bool/int64/float64, shape [] and device 'cpu'",
        "node %item (Tensor.item): a scalar result needs one output of dtype bool/int64/float64, shape [] and device 'cpu'",
        "node %item (Tensor.item): a Tensor.item node's result is 'scalar', not 'tensor'",
        "node %sum (sum): only Tensor.item and the operator.* scalar ops have a scalar result, not sum",
    };
    for (std::size_t k = 0; k < std::size(edits); ++k) {
        const std::string path = with_graph("scalar_malformed" + std::to_string(k) + ".ember", edits[k].first, edits[k].second);
        const std::string msg = error_as<ember::jit::FormatError>([&] { ember::jit::load(path); });
        EXPECT_TRUE(contains(msg, path + ": ")) << k << ": " << msg;
        EXPECT_TRUE(contains(msg, expected[k])) << k << ": " << msg;
    }
}

// (%pow_1, n ** -1, is used only as an output)
TEST(ScalarErrors, AScalarOutputMustBeAScalarValue) {
    EMBER_JIT_NEED_GOLDEN();
    const std::string path = with_graph("scalar_bad_output.ember", "{\"scalar\":\"pow_1\"}", "{\"scalar\":\"x\"}");
    EXPECT_TRUE(contains(error_as<ember::jit::FormatError>([&] { ember::jit::load(path); }),
                         "graph output %x is not a scalar value of the graph"));
    const std::string tensor = with_graph("scalar_as_tensor_output.ember", "{\"scalar\":\"pow_1\"}", "{\"tensor\":\"pow_1\"}");
    EXPECT_TRUE(contains(error_as<ember::jit::FormatError>([&] { ember::jit::load(tensor); }),
                         "graph output %pow_1 is a scalar value, which a spec names as {\"scalar\": \"pow_1\"}"));
}

// Run-time errors name the node, as an op's do: Tensor.item of several elements; a division
// by zero, in Python's words.
TEST(ScalarErrors, RunTimeErrorsNameTheNode) {
    EMBER_JIT_NEED_GOLDEN();
    ember::jit::Module m = ember::jit::load(golden("scalars_chain.ember"));
    GoldenRun run = read_run("scalars_chain", 0);
    std::vector<IValue> inputs(run.inputs.begin(), run.inputs.end());
    inputs[1] = IValue(ember::zeros({5}, ember::kLong));  // n = 0: n ** -1
    const std::string msg = error_of([&] { m.forward(inputs); });
    EXPECT_TRUE(contains(msg, "ZeroDivisionError: 0.0 cannot be raised to a negative power\n(in the exported graph, node %pow_1 = "
                              "operator.pow(...), captured at ")) << msg;
    const std::string wide = with_graph("scalar_item_wide.ember", "\"op\":\"Tensor.item\",\"args\":[{\"tensor\":\"sum\"}]",
                                        "\"op\":\"Tensor.item\",\"args\":[{\"tensor\":\"x\"}]");
    const std::string msg2 = error_of([&] { ember::jit::load(wide).forward(std::vector<IValue>(run.inputs.begin(), run.inputs.end())); });
    EXPECT_TRUE(contains(msg2, "a Tensor with 12 elements cannot be converted to Scalar\n(in the exported graph, node %item = "
                               "Tensor.item(...)")) << msg2;
}

}  // namespace
