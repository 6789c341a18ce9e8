// Nodes with nested results (FORMAT.md version 2): histogramdd returns (hist, (edges, ...)), so
// its node has one output per leaf and a "structure" that keeps the nesting. The programs of
// golden_nested.py run in C++ against Python's results (float32 within 1e-5 absolute + 1e-5
// relative, counts exactly); the loader refuses a structure that is not the node's outputs,
// and a run whose result has other leaves than the capture's is an error.
#include <algorithm>
#include <functional>

#include "jit_test_util.h"

namespace {

using namespace jit_test;

const std::vector<std::string> kPrograms = {"nested_histograms", "nested_no_dimensions", "nested_export"};

class NestedProgram : public ::testing::TestWithParam<std::string> {};

TEST_P(NestedProgram, MatchesPython) {
    EMBER_JIT_NEED_GOLDEN();
    expect_runs_match_python(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Golden, NestedProgram, ::testing::ValuesIn(kPrograms),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// The list above is golden_nested.py's.
TEST(NestedPrograms, AreTheGoldenWritersPrograms) {
    EMBER_JIT_NEED_GOLDEN();
    expect_written_programs("programs_nested.txt", kPrograms);
}

std::string with_graph(const std::string& name, const std::string& from, const std::string& to) {
    return rewrite("nested_histograms", name, [&](ember::serialize::SafetensorsFile& f) {
        f.metadata["graph"] = replace_once(f.metadata.at("graph"), from, to);
    });
}

TEST(NestedOutputs, FilesWithNestedResultsAreVersion2AndOthersStayVersion1) {
    EMBER_JIT_NEED_GOLDEN();
    ember::serialize::SafetensorsFile nested = ember::serialize::read_safetensors(golden("nested_histograms.ember"));
    EXPECT_EQ(nested.metadata.at("format_version"), "2");
    const std::string& graph = nested.metadata.at("graph");
    EXPECT_NE(graph.find("\"result\":\"nested\",\"structure\":{\"tuple\":[{\"tensor\":\"histogramdd_0\"},{\"tuple\":["
                         "{\"tensor\":\"histogramdd_1_0\"},{\"tensor\":\"histogramdd_1_1\"}]}]}"),
              std::string::npos);
    ember::serialize::SafetensorsFile flat = ember::serialize::read_safetensors(golden("mlp_export.ember"));
    EXPECT_EQ(flat.metadata.at("format_version"), "1");
    ember::jit::Module m = ember::jit::load(golden("mlp_export.ember"));  // version 1 still loads
    EXPECT_FALSE(m.node_ops().empty());
    std::vector<std::string> ops = ember::jit::load(golden("nested_histograms.ember")).node_ops();
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "histogramdd"), 6);
}

TEST(NestedOutputs, AStructureThatIsNotTheOutputsIsRefused) {
    EMBER_JIT_NEED_GOLDEN();
    const std::string swapped = with_graph("nested_swapped.ember",
                                           "{\"tensor\":\"histogramdd_1_0\"},{\"tensor\":\"histogramdd_1_1\"}",
                                           "{\"tensor\":\"histogramdd_1_1\"},{\"tensor\":\"histogramdd_1_0\"}");
    EXPECT_EQ(error_as<ember::jit::FormatError>([&] { ember::jit::load(swapped); }),
              swapped + ": node %histogramdd (histogramdd): the leaves of the structure ['histogramdd_0', 'histogramdd_1_1', "
                        "'histogramdd_1_0'] are not the outputs ['histogramdd_0', 'histogramdd_1_0', 'histogramdd_1_1']");
    const std::string leaf = with_graph("nested_leaf.ember", "\"structure\":{\"tuple\":[{\"tensor\":\"histogramdd_0\"},",
                                        "\"structure\":{\"tuple\":[{\"tensor\":\"histogramdd_0\"},7,");
    EXPECT_EQ(error_as<ember::jit::FormatError>([&] { ember::jit::load(leaf); }),
              leaf + ": node %histogramdd (histogramdd): a nested result needs a structure of tuple/list containers with "
                     "tensor and null leaves, not 7");
    const std::string top = with_graph("nested_top.ember", "\"structure\":{\"tuple\":[{\"tensor\":\"histogramdd_0\"},",
                                       "\"structure\":{\"tensor\":\"histogramdd_0\"},\"was\":{\"tuple\":[");
    EXPECT_NE(error_as<ember::jit::FormatError>([&] { ember::jit::load(top); })
                  .find(": node %histogramdd (histogramdd): a nested result needs a structure of tuple/list containers"),
              std::string::npos);
    const std::string missing = with_graph("nested_missing.ember", "\"structure\":", "\"was\":");
    EXPECT_NE(error_as<ember::jit::FormatError>([&] { ember::jit::load(missing); })
                  .find("a nested result needs a structure of tuple/list containers with tensor and null leaves, not null"),
              std::string::npos);
}

TEST(NestedOutputs, OtherLeavesThanTheCapturesAreAnError) {
    EMBER_JIT_NEED_GOLDEN();
    // traced over points of no dimensions (one leaf); points of two give three
    ember::jit::Module m = ember::jit::load(golden("nested_no_dimensions.ember"));
    const std::string msg = error_as<ember::jit::GuardError>([&] { m.forward({ember::zeros({4, 2})}); });
    EXPECT_NE(msg.find("node %histogramdd (histogramdd) returned 3 tensors, but the capture recorded 1"), std::string::npos)
        << msg;
}

}  // namespace
