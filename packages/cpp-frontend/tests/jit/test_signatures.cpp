// The C++ op table against the Python registry (signatures.json from golden_jit.py): every
// op name the table runs is one that Python resolves (FORMAT.md "Op names"), and its
// signature is Python's, so that a call's positional and keyword arguments bind as in Python.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "jit_test_util.h"
#include "serialize/json.h"

namespace {

using namespace jit_test;

TEST(OpTable, SignaturesAreThePythonRegistrys) {
    EMBER_JIT_NEED_GOLDEN();
    std::ifstream f(golden("signatures.json"));
    std::stringstream text;
    text << f.rdbuf();
    Json python = ember::jit::detail::parse_json(text.str(), "signatures.json");
    int compared = 0;
    std::vector<std::string> ops = ember::jit::supported_ops();
    EXPECT_GT(ops.size(), 250u);
    for (const std::string& op : ops) {
        const Json* sig = python.find(op);
        ASSERT_NE(sig, nullptr) << "the C++ op table runs '" << op << "', a name Python never records";
        if (!sig->is_string()) continue;
        const std::string& py = sig->as_string(op);
        // a registry wrapper that takes (input, *args, **kwargs) does not say its parameters
        if (py.find("*args, **kwargs") != std::string::npos && ember::jit::op_signature(op).find("*args") == std::string::npos) {
            continue;
        }
        EXPECT_EQ(ember::jit::op_signature(op), py) << op;
        ++compared;
    }
    EXPECT_GT(compared, 200);
}

// op_signatures.json (checked in beside this file) is this table: every op name and its
// signature. tests/integration/test_cpp_op_table.py checks the same file against the Python
// registry in the Python suite, so that a Python signature change that the table must follow
// fails there too, without a C++ build. EMBER_WRITE_OP_SIGNATURES=1 rewrites the file.
TEST(OpTable, SnapshotIsTheTable) {
    const std::string path = std::string(EMBER_TEST_SOURCE_DIR) + "/op_signatures.json";
    std::vector<std::string> ops = ember::jit::supported_ops();
    std::sort(ops.begin(), ops.end());
    if (const char* env = std::getenv("EMBER_WRITE_OP_SIGNATURES"); env && *env == '1') {
        std::string text = "{\n";
        for (size_t i = 0; i < ops.size(); ++i) {
            ember::serialize::detail::append_json_string(text, ops[i]);
            text += ": ";
            ember::serialize::detail::append_json_string(text, ember::jit::op_signature(ops[i]));
            text += i + 1 < ops.size() ? ",\n" : "\n";
        }
        text += "}\n";
        std::ofstream out(path);
        out << text;
        ASSERT_TRUE(out.good()) << "cannot write " << path;
        return;
    }
    std::ifstream f(path);
    ASSERT_TRUE(f.good()) << path << " is missing: write it with EMBER_WRITE_OP_SIGNATURES=1";
    std::stringstream text;
    text << f.rdbuf();
    Json snapshot = ember::jit::detail::parse_json(text.str(), "op_signatures.json");
    const char* fix = " (op_signatures.json is out of date: rewrite it with EMBER_WRITE_OP_SIGNATURES=1 ctest -R SnapshotIsTheTable)";
    for (const std::string& op : ops) {
        const Json* sig = snapshot.find(op);
        ASSERT_NE(sig, nullptr) << "the table runs '" << op << "', which the snapshot lacks" << fix;
        EXPECT_EQ(sig->as_string(op), ember::jit::op_signature(op)) << op << fix;
    }
    EXPECT_EQ(snapshot.as_object("op_signatures.json").size(), ops.size()) << "the snapshot names ops the table lacks" << fix;
}

TEST(OpTable, UnknownOpSignatureThrows) {
    EXPECT_THROW(ember::jit::op_signature("frobnicate"), ember::Error);
}

}  // namespace
