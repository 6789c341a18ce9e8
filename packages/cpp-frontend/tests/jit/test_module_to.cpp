// jit::Module::to (libtorch's torch::jit::Module::to): a float64 program converted to
// float32 computes in float32 with Python's converted module's outputs; the conversion is in
// place (handles taken before see it; copies of the Module share it), keeps requires_grad
// and integer buffers; an exported program keeps checking its inputs' dtypes, as Python's.
#include "jit_test_util.h"

namespace {

using namespace jit_test;

TEST(ModuleTo, Float64ProgramToFloat32MatchesPython) {
    EMBER_JIT_NEED_GOLDEN();
    ember::jit::Module m = ember::jit::load(golden("f64_trace.ember"));
    ember::jit::Module copy = m;  // shares the program
    const Tensor weight = m.named_parameters()["0.weight"];
    ASSERT_EQ(weight.scalar_type(), ember::kDouble);
    const Tensor tracked = m.named_buffers()["1.num_batches_tracked"];
    m.to(ember::kFloat32);
    for (const auto& item : m.named_parameters()) {
        EXPECT_EQ(item.value().scalar_type(), ember::kFloat) << item.key();
        EXPECT_TRUE(item.value().requires_grad()) << item.key();
    }
    EXPECT_EQ(m.named_buffers()["1.running_var"].scalar_type(), ember::kFloat);
    EXPECT_EQ(tracked.scalar_type(), ember::kLong);  // integer buffers stay
    EXPECT_EQ(weight.scalar_type(), ember::kFloat);  // converted in place: earlier handles see it
    EXPECT_EQ(copy.parameters()[0].scalar_type(), ember::kFloat);

    ember::StateDict file = ember::load_state_dict(golden("f64_trace.float32.safetensors"));
    const Tensor x = file["in.0"];
    const Tensor expected = file["out.0"];
    ember::NoGradGuard no_grad;
    const Tensor y = m.forward({x}).toTensor();
    EXPECT_EQ(y.scalar_type(), ember::kFloat);
    Closeness c = compare(y, expected);
    EXPECT_TRUE(c.ok) << c.detail;
    RecordProperty("max_abs_difference", std::to_string(c.max_abs));

    // and back: the float64 run of the golden file again, now from float32-rounded weights
    m.to(ember::kCPU, ember::kFloat64);
    EXPECT_EQ(weight.scalar_type(), ember::kDouble);
    GoldenRun run = read_run("f64_trace", 0);
    const Tensor y64 = m.forward({run.inputs[0]}).toTensor();
    EXPECT_EQ(y64.scalar_type(), ember::kDouble);
    EXPECT_TRUE(y64.allclose(run.outputs[0], 1e-5, 1e-5));
}

TEST(ModuleTo, GradientsReachTheConvertedParameters) {
    EMBER_JIT_NEED_GOLDEN();
    ember::jit::Module m = ember::jit::load(golden("mlp_trace.ember"));
    m.to(ember::kDouble);
    Tensor y = m.forward({ember::randn({3, 8}, ember::kDouble)}).toTensor();
    EXPECT_EQ(y.scalar_type(), ember::kDouble);
    y.sum().backward();
    const Tensor g = m.named_parameters()["0.weight"].grad();
    ASSERT_TRUE(g.defined());
    EXPECT_EQ(g.scalar_type(), ember::kDouble);
}

TEST(ModuleTo, ExportedProgramsStillCheckInputDtypes) {
    EMBER_JIT_NEED_GOLDEN();
    ember::jit::Module m = ember::jit::load(golden("mlp_export.ember"));
    m.to(ember::kDouble);
    EXPECT_EQ(m.parameters()[0].scalar_type(), ember::kDouble);
    try {
        m.forward({ember::randn({2, 8}, ember::kDouble)});
        FAIL() << "no GuardError";
    } catch (const ember::jit::GuardError& e) {
        EXPECT_EQ(std::string(e.what()), "Expected input input to have dtype float32, but got float64");
    }
    m.to(ember::kCPU);  // the CPU is the only device: nothing moves
    EXPECT_EQ(m.parameters()[0].scalar_type(), ember::kDouble);
    EXPECT_THROW(m.to(ember::kInt64), ember::TypeError);
    EXPECT_THROW(ember::jit::Module().to(ember::kFloat), ember::Error);
}

TEST(ModuleTo, ModesAndParameterListings) {
    EMBER_JIT_NEED_GOLDEN();
    ember::jit::Module m = ember::jit::load(golden("gaps_export.ember"));
    EXPECT_FALSE(m.is_training());
    m.eval();  // already in eval mode: a no-op
    EXPECT_THROW(m.train(), ember::NotImplementedError);
    EXPECT_EQ(m.parameters().size(), m.named_parameters().size());
    EXPECT_EQ(m.named_parameters().keys().front(), "0.weight");
}

}  // namespace
