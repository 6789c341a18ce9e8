// Bad files and bad calls give clear errors (FORMAT.md, "A reader must refuse", and the
// checks an export program makes on a call), in Python's words where Python has them.
#include "common/error_of.h"
#include "jit_test_util.h"

namespace {

using namespace jit_test;
using ember::testing::error_of;

::testing::AssertionResult contains(const std::string& text, const std::string& part) {
    if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

std::string with_graph(const std::string& name, const std::string& from, const std::string& to) {
    return rewrite("mlp_export", name, [&](ember::serialize::SafetensorsFile& f) {
        f.metadata["graph"] = replace_once(f.metadata.at("graph"), from, to);
    });
}

// ---- the file

TEST(LoadErrors, TruncatedFile) {
    EMBER_JIT_NEED_GOLDEN();
    std::vector<std::byte> bytes = read_bytes(golden("mlp_export.ember"));
    const std::string path = scratch("truncated.ember");
    write_bytes(path, bytes, bytes.size() - 100);
    const std::string msg = error_as<ember::jit::FormatError>([&] { ember::jit::load(path); });
    EXPECT_TRUE(contains(msg, path + " is truncated: its weights need "));
    EXPECT_TRUE(contains(msg, "(it was cut short, e.g. by an interrupted copy)"));
    write_bytes(path, bytes, 500);  // inside the header
    EXPECT_TRUE(contains(error_as<ember::jit::FormatError>([&] { ember::jit::load(path); }),
                         " is truncated: its header says "));
    write_bytes(path, bytes, 5);
    EXPECT_EQ(error_as<ember::jit::FormatError>([&] { ember::jit::load(path); }),
              path + " is truncated: 5 bytes, fewer than the 8 of a safetensors header length");
}

TEST(LoadErrors, MissingFile) {
    EXPECT_TRUE(contains(error_of([] { ember::jit::load(scratch("no_such_file.ember")); }), "cannot open the file"));
}

TEST(LoadErrors, UnknownFormatVersion) {
    EMBER_JIT_NEED_GOLDEN();
    const std::string path = rewrite("mlp_export", "version3.ember", [](ember::serialize::SafetensorsFile& f) {
        f.metadata["format_version"] = "3";
    });
    EXPECT_EQ(error_as<ember::jit::FormatError>([&] { ember::jit::load(path); }),
              path + " has format_version '3'; this Ember reads format_version 1, 2, 2.1: upgrade ember-cpp to load it");
}

TEST(LoadErrors, NotAnEmberProgram) {
    EMBER_JIT_NEED_GOLDEN();
    const std::string plain = rewrite("mlp_export", "plain.safetensors", [](ember::serialize::SafetensorsFile& f) {
        f.metadata.clear();
    });
    EXPECT_TRUE(contains(error_as<ember::jit::FormatError>([&] { ember::jit::load(plain); }),
                         "is a safetensors file but not an Ember program (its metadata has format=None"));
    const std::string zip = scratch("model.pt");
    write_bytes(zip, {std::byte{'P'}, std::byte{'K'}, std::byte{3}, std::byte{4}, std::byte{0}, std::byte{0},
                      std::byte{0}, std::byte{0}, std::byte{0}}, 9);
    EXPECT_TRUE(contains(error_as<ember::jit::FormatError>([&] { ember::jit::load(zip); }),
                         "is a zip archive (a TorchScript or torch.save file), not an Ember program"));
    const std::string broken = rewrite("mlp_export", "broken_json.ember", [](ember::serialize::SafetensorsFile& f) {
        f.metadata["graph"] = f.metadata.at("graph").substr(0, 200);
    });
    EXPECT_TRUE(contains(error_as<ember::jit::FormatError>([&] { ember::jit::load(broken); }),
                         ": the program JSON is broken ("));
}

TEST(LoadErrors, MissingWeight) {
    EMBER_JIT_NEED_GOLDEN();
    const std::string path = rewrite("mlp_export", "missing_weight.ember", [](ember::serialize::SafetensorsFile& f) {
        f.tensors.erase(std::remove_if(f.tensors.begin(), f.tensors.end(), [](const auto& t) { return t.first == "2.weight"; }),
                        f.tensors.end());
    });
    EXPECT_EQ(error_as<ember::jit::FormatError>([&] { ember::jit::load(path); }),
              path + ": graph input %p_2_weight (parameter) references the weight '2.weight', which is not in the file");
}

TEST(LoadErrors, WeightOfAnotherShapeOrDtype) {
    EMBER_JIT_NEED_GOLDEN();
    const std::string shape = rewrite("mlp_export", "wrong_shape.ember", [](ember::serialize::SafetensorsFile& f) {
        for (auto& [name, record] : f.tensors) {
            if (name == "0.bias") record = ember::to_record(ember::zeros({3}));
        }
    });
    EXPECT_EQ(error_as<ember::jit::FormatError>([&] { ember::jit::load(shape); }),
              shape + ": weight '0.bias' is float32[3] in the file, but the graph expects float32[32]");
    const std::string dtype = rewrite("mlp_export", "wrong_dtype.ember", [](ember::serialize::SafetensorsFile& f) {
        for (auto& [name, record] : f.tensors) {
            if (name == "0.bias") record = ember::to_record(ember::zeros({32}, ember::kDouble));
        }
    });
    EXPECT_EQ(error_as<ember::jit::FormatError>([&] { ember::jit::load(dtype); }),
              dtype + ": weight '0.bias' is float64[32] in the file, but the graph expects float32[32]");
}

TEST(LoadErrors, UnknownOpsAreNamedTogether) {
    EMBER_JIT_NEED_GOLDEN();
    const std::string path = rewrite("mlp_export", "unknown_ops.ember", [](ember::serialize::SafetensorsFile& f) {
        std::string g = replace_once(f.metadata.at("graph"), "\"op\":\"relu\"", "\"op\":\"frobnicate\"");
        f.metadata["graph"] = replace_once(g, "\"op\":\"gelu\"", "\"op\":\"os.system\"");
    });
    EXPECT_EQ(error_as<ember::jit::FormatError>([&] { ember::jit::load(path); }),
              path + ": the program uses 2 ops that Ember's C++ frontend cannot run: 'frobnicate' (node %relu), "
                     "'os.system' (node %gelu) (ember::jit::supported_ops() lists the ops it runs)");
}

TEST(LoadErrors, ReferencesMustBeDefinedBeforeUse) {
    EMBER_JIT_NEED_GOLDEN();
    const std::string unknown = with_graph("undefined_ref.ember", "{\"tensor\":\"relu\"}", "{\"tensor\":\"nope\"}");
    EXPECT_TRUE(contains(error_as<ember::jit::FormatError>([&] { ember::jit::load(unknown); }),
                         ": node %linear_1 (linear): refers to value %nope, which no earlier node or input defines"));
    // a node that reads a value a later node defines
    const std::string later = with_graph("later_ref.ember", "\"args\":[{\"tensor\":\"input\"}", "\"args\":[{\"tensor\":\"relu\"}");
    EXPECT_TRUE(contains(error_as<ember::jit::FormatError>([&] { ember::jit::load(later); }),
                         ": node %linear (linear): refers to value %relu, which no earlier node or input defines"));
}

TEST(LoadErrors, ArgumentsMustFitTheOp) {
    EMBER_JIT_NEED_GOLDEN();
    const std::string path = with_graph("bad_kwarg.ember", "\"op\":\"relu\",\"args\":[{\"tensor\":\"linear\"}],\"kwargs\":{}",
                                        "\"op\":\"relu\",\"args\":[{\"tensor\":\"linear\"}],\"kwargs\":{\"inplace\":true}");
    EXPECT_TRUE(contains(error_as<ember::jit::FormatError>([&] { ember::jit::load(path); }),
                         ": node %relu (relu): the arguments do not fit the op: relu() got an unexpected keyword argument "
                         "'inplace'"));
}

// Broken programs are refused with an error that says what is wrong (never a crash: the
// sanitizer build runs these too).
TEST(LoadErrors, MalformedPrograms) {
    EMBER_JIT_NEED_GOLDEN();
    const std::pair<const char*, const char*> edits[][1] = {
        {{"\"result\":\"tensor\"", "\"result\":\"blob\""}},
        {{"{\"sym\":\"batch\"}", "{\"sym\":\"nope\"}"}},
        {{"\"kwargs\":{\"_stacklevel\":5}", "\"kwargs\":{\"dtype\":{\"dtype\":\"bfloat16\"}}"}},
        {{"\"kwargs\":{\"_stacklevel\":5}", "\"kwargs\":{\"dtype\":{\"layout\":\"banana\"}}"}},
        {{"\"kwargs\":{\"_stacklevel\":5}", "\"kwargs\":{\"dtype\":{\"float\":\"big\"}}"}},
        {{"\"kwargs\":{\"_stacklevel\":5}", "\"kwargs\":{\"dtype\":{\"symint\":{\"pow\":[2,3]}}}"}},
        {{"\"kwargs\":{\"_stacklevel\":5}", "\"kwargs\":{\"dtype\":{\"complex\":[1]}}"}},
        {{"\"kind\":\"export\"", "\"kind\":\"script\""}},
        {{"\"outputs\":{\"tensor\":\"log_softmax\"}", "\"outputs\":{\"tensor\":\"ghost\"}"}},
        {{"\"guards\":[]", "\"guards\":[{\"lhs\":{\"size\":[\"ghost\",0]},\"op\":\"eq\",\"rhs\":1}]"}},
        {{"\"guards\":[]", "\"guards\":[{\"lhs\":1,\"op\":\"approx\",\"rhs\":1}]"}},
        {{"\"op\":\"nn.functional.log_softmax\",\"args\":[", "\"op\":\"nn.functional.log_softmax\",\"args\":7,\"ignored\":["}},
        {{"\"name\":\"p_0_bias\",\"kind\":\"parameter\"", "\"name\":\"p_0_weight\",\"kind\":\"parameter\""}},
        {{"\"symbols\":{\"batch\":{\"min\":1,", "\"symbols\":{\"batch\":{\"min\":\"one\","}},
    };
    const char* expected[] = {
        "result must be one of tensor, tuple, list, nested, none, scalar (got 'blob')",
        "refers to symbol 'nope', which the graph does not declare",
        "dtype 'bfloat16' is not one of Ember's C++ dtypes",
        "bad literal {\"layout\": \"banana\"}",
        "bad literal {\"float\": \"big\"}",
        "bad size expression {\"pow\": [2, 3]}",
        "bad literal {\"complex\": [1]}",
        "the program JSON needs a kind ('export' or 'jit')",
        "graph output %ghost is not a value of the graph",
        "refers to value %ghost, which no earlier node or input defines",
        "op must be one of eq ne lt le gt ge",
        "args must be a list and kwargs an object",
        "the value name %p_0_weight is used twice",
        "symbol 'batch' needs an int min and an int/null max",
    };
    for (std::size_t k = 0; k < std::size(edits); ++k) {
        const std::string path = with_graph("malformed" + std::to_string(k) + ".ember", edits[k][0].first, edits[k][0].second);
        EXPECT_TRUE(contains(error_as<ember::jit::FormatError>([&] { ember::jit::load(path); }), expected[k])) << k;
    }
}

TEST(LoadErrors, OtherDevicesNeedAMapLocation) {
    EMBER_JIT_NEED_GOLDEN();
    const std::string path = rewrite("mlp_export", "cuda.ember", [](ember::serialize::SafetensorsFile& f) {
        std::string g = f.metadata.at("graph");
        for (std::size_t at; (at = g.find("\"device\":\"cpu\"")) != std::string::npos;) g.replace(at, 14, "\"device\":\"cuda:0\"");
        f.metadata["graph"] = g;
    });
    EXPECT_TRUE(contains(error_as<ember::jit::FormatError>([&] { ember::jit::load(path); }),
                         ": graph input %p_0_weight is on device 'cuda:0', but Ember's C++ frontend runs on the CPU: load "
                         "it with a device (ember::jit::load(path, ember::kCPU))"));
    ember::jit::Module m = ember::jit::load(path, ember::kCPU);  // map_location
    GoldenRun run = read_run("mlp_export", 0);
    double max_abs = 0;
    std::size_t next = 0;
    EXPECT_EQ(check_output(m.forward({run.inputs[0]}), run.structure, run.outputs, next, max_abs), "");
}

// ---- the call

TEST(CallErrors, DynamicDimensionOutOfRange) {
    EMBER_JIT_NEED_GOLDEN();
    ember::jit::Module m = ember::jit::load(golden("mlp_export.ember"));
    EXPECT_EQ(error_as<ember::jit::GuardError>([&] { m.forward({ember::randn({65, 8})}); }),
              "Expected input input.shape[0] to be <= 64, but got 65 (dim 'batch' in [1, 64])");
    EXPECT_EQ(error_as<ember::jit::GuardError>([&] { m.forward({ember::randn({0, 8})}); }),
              "Expected input input.shape[0] to be >= 1, but got 0 (dim 'batch' in [1, 64])");
    EXPECT_EQ(error_as<ember::jit::GuardError>([&] { m.forward({ember::randn({3, 9})}); }),
              "Expected input input.shape[1] to be equal to 8, but got 9");
}

TEST(CallErrors, StaticDimensionsAreChecked) {
    EMBER_JIT_NEED_GOLDEN();
    ember::jit::Module m = ember::jit::load(golden("bert_export.ember"));
    EXPECT_EQ(m.forward({ember::randint(0, 50, {3, 9})}).toTuple()->size(), 2u);
    EXPECT_EQ(error_as<ember::jit::GuardError>([&] { m.forward({ember::randint(0, 50, {3, 10})}); }),
              "Expected input input_ids.shape[1] to be equal to 9, but got 10");
}

TEST(CallErrors, GuardViolation) {
    EMBER_JIT_NEED_GOLDEN();
    ember::jit::Module m = ember::jit::load(golden("transformer_trace.ember"));
    const std::string msg = error_as<ember::jit::GuardError>([&] { m.forward({ember::randn({2, 7, 8})}); });
    EXPECT_TRUE(contains(msg, "Guard failed: sym_size(%src, 2) == 16 (assumed at _mha.py:"));
    EXPECT_TRUE(contains(msg, "; here sym_size(%src, 2) = 8. The program was captured for inputs where it held: capture it "
                              "again for these inputs"));
}

TEST(CallErrors, WrongNumberOfInputs) {
    EMBER_JIT_NEED_GOLDEN();
    ember::jit::Module m = ember::jit::load(golden("mlp_export.ember"));
    Tensor x = ember::randn({3, 8});
    EXPECT_EQ(error_as<ember::TypeError>([&] { m.forward({}); }),
              "missing a required argument: 'input' (the program was captured with inputs: input)");
    EXPECT_EQ(error_as<ember::TypeError>([&] { m.forward({x, x}); }),
              "too many positional arguments (the program was captured with inputs: input)");
    EXPECT_EQ(error_as<ember::TypeError>([&] { m.forward({x}, {{"mask", IValue(x)}}); }),
              "got an unexpected keyword argument 'mask' (the program was captured with inputs: input)");
    EXPECT_EQ(m.forward({}, {{"input", IValue(x)}}).toTensor().sizes(), (std::vector<int64_t>{3, 4}));  // by name
}

TEST(CallErrors, WrongDtypeRankOrKind) {
    EMBER_JIT_NEED_GOLDEN();
    ember::jit::Module m = ember::jit::load(golden("mlp_export.ember"));
    EXPECT_EQ(error_as<ember::jit::GuardError>([&] { m.forward({ember::randn({3, 8}, ember::kDouble)}); }),
              "Expected input input to have dtype float32, but got float64");
    EXPECT_EQ(error_as<ember::jit::GuardError>([&] { m.forward({ember::randn({3})}); }),
              "Expected input input to have 2 dimensions (float32[batch, 8]), but got shape [3]");
    EXPECT_EQ(error_as<ember::jit::GuardError>([&] { m.forward({IValue(3)}); }),
              "Expected input input to be a Tensor, but got int");
}

TEST(CallErrors, KeywordLiteralsMustMatchTheCapture) {
    EMBER_JIT_NEED_GOLDEN();
    ember::jit::Module m = ember::jit::load(golden("ops_factories.ember"));
    Tensor x = ember::randn({4, 3});
    EXPECT_EQ(error_as<ember::TypeError>([&] { m.forward({x}); }),
              "missing a required argument: 'scale' (the program was captured with inputs: x, scale)");
    EXPECT_EQ(error_as<ember::jit::GuardError>([&] { m.forward({x}, {{"scale", IValue(0.7)}}); }),
              "Expected input scale to be equal to 0.5, but got 0.7");
    EXPECT_EQ(error_as<ember::jit::GuardError>([&] { m.forward({ember::randn({1, 3})}, {{"scale", IValue(0.5)}}); }),
              "Expected input x.shape[0] to be >= 2, but got 1 (dim 'n' in [2, 32])");
}

TEST(CallErrors, ATraceChecksNoInputsButTheOpsDo) {
    EMBER_JIT_NEED_GOLDEN();
    // jit programs check no input shapes (as TorchScript); the op that cannot run says where
    ember::jit::Module m = ember::jit::load(golden("mlp_trace.ember"));
    const std::string msg = error_of([&] { m.forward({ember::randn({3, 9})}); });
    EXPECT_TRUE(contains(msg, "mat1 and mat2 shapes cannot be multiplied (3x9 and 8x32)"));
    EXPECT_TRUE(contains(msg, "(in the exported graph, node %linear = linear(...)"));
}

TEST(CallErrors, TheModeIsFixed) {
    EMBER_JIT_NEED_GOLDEN();
    ember::jit::Module m = ember::jit::load(golden("digits_export.ember"));
    EXPECT_FALSE(m.is_training());
    m.eval();  // already in eval mode
    EXPECT_EQ(error_as<ember::NotImplementedError>([&] { m.train(); }),
              "Calling train() is not supported yet. (The program was exported with training=False: its graph is fixed "
              "to that mode; export the model again after model.train()/model.eval().)");
    EXPECT_THROW(ember::jit::Module().forward({}), ember::Error);
}

}  // namespace
