// The C++ op table against the Python registry (signatures.json from golden_jit.py): every
// op name the table runs is one that Python resolves (FORMAT.md "Op names"), and its
// signature is Python's, so that a call's positional and keyword arguments bind as in Python.
#include <fstream>
#include <sstream>

#include "jit_test_util.h"

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

TEST(OpTable, UnknownOpSignatureThrows) {
    EXPECT_THROW(ember::jit::op_signature("frobnicate"), ember::Error);
}

}  // namespace
