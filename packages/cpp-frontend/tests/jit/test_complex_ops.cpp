// The complex entries of the C++ op table (src/jit/ops_complex.cpp): the programs of
// golden_complex.py (FFTs, stft/istft, the complex family, arithmetic with complex numbers,
// an exported filter with complex64 weights) run in C++ against Python's results, and the
// entries called directly: the refusal of complex arguments by real-only ops, complex
// numbers as arguments, and the op list against the Python registry's FFT names.
//
// The golden files store complex tensors as their view_as_real (safetensors has no
// complex128), read with tests/common/golden.h and turned back here.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "common/golden.h"
#include "ember/ember.h"
#include "complex_golden.h"
#include "jit/json.h"
#include "op_call.h"

namespace {

using namespace ember;
using jit_ops::call;
using jit_ops::Value;

using complex_golden::expect_close;
using complex_golden::golden;
using complex_golden::GoldenRun;
using complex_golden::read_run;

#define EMBER_COMPLEX_NEED_GOLDEN()                                                          \
    do {                                                                                     \
        if (!EMBER_GOLDEN_AVAILABLE) GTEST_SKIP() << "no Python with NumPy: no golden files"; \
    } while (0)

const std::vector<std::string> kPrograms = {"complex_fft_1d", "complex_fft_nd", "complex_family", "complex_spectrogram",
                                            "complex_eig", "complex_filter_export",
                                            // complex_kernel_programs.py
                                            "complex_reductions", "complex_products", "complex_tests",
                                            "complex_pointwise", "complex_ldl"};

class ComplexProgram : public ::testing::TestWithParam<std::string> {};

TEST_P(ComplexProgram, MatchesPython) {
    EMBER_COMPLEX_NEED_GOLDEN();
    const std::string name = GetParam();
#ifndef EMBER_HAVE_OPENBLAS
    if (name == "complex_eig" || name == "complex_ldl") GTEST_SKIP() << "needs LAPACK (zgeev, zsytf2/zhetf2)";
#endif
    jit::Module m = jit::load(golden(name + ".ember"));
    std::ifstream list(golden("programs_complex.txt"));
    std::string program;
    int runs = 0;
    while (list >> program >> runs) {
        if (program == name) break;
    }
    ASSERT_EQ(program, name);
    ASSERT_GT(runs, 0);
    for (int k = 0; k < runs; ++k) {
        const GoldenRun run = read_run(name, k);
        NoGradGuard no_grad;
        const std::vector<Tensor> out = m.forward_tensors(run.inputs);
        ASSERT_EQ(out.size(), run.outputs.size()) << name << " run " << k;
        for (std::size_t j = 0; j < out.size(); ++j) {
            expect_close(out[j], run.outputs[j], name + " run " + std::to_string(k) + " output " + std::to_string(j));
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Golden, ComplexProgram, ::testing::ValuesIn(kPrograms),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(ComplexPrograms, AreTheGoldenWritersPrograms) {
    EMBER_COMPLEX_NEED_GOLDEN();
    std::ifstream list(golden("programs_complex.txt"));
    std::vector<std::string> written;
    std::string name;
    int runs = 0;
    while (list >> name >> runs) written.push_back(name);
    EXPECT_EQ(written, kPrograms);
}

Tensor crandn(std::vector<int64_t> shape) { return ember::complex(ember::randn(shape), ember::randn(shape)); }

std::string error_of(const std::string& op, std::vector<Value> args, jit::detail::Kwargs kwargs = {}) {
    try {
        call(op, std::move(args), std::move(kwargs));
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(ComplexOps, RealOnlyOpsRefuseComplexArguments) {
    const Tensor z = crandn({2, 3});
    EXPECT_EQ(error_of("relu", {Value::of(z)}),
              "\"relu\" not implemented for 'ComplexFloat' (Ember's C++ frontend runs this op on real tensors only)");
    EXPECT_EQ(error_of("amax", {Value::of(z.to(kComplexDouble))}),
              "\"amax\" not implemented for 'ComplexDouble' (Ember's C++ frontend runs this op on real tensors only)");
    // a complex tensor inside a list, a complex number as an argument
    EXPECT_NE(error_of("cat", {Value::list({Value::of(ember::zeros({1, 3})), Value::of(z)})}).find("(no error)"),
              std::string::npos);  // cat takes complex tensors (the list is looked into)
    EXPECT_NE(error_of("softmax", {Value::of(z), Value::integer(0)}).find("not implemented for 'ComplexFloat'"),
              std::string::npos);
    EXPECT_NE(error_of("maximum", {Value::of(ember::zeros({2})), Value::of(z.select(1, 0))}).find("ComplexFloat"),
              std::string::npos);
    EXPECT_NE(error_of("clamp", {Value::of(ember::zeros({2})), Value::complex_number(1, 2)}).find("'ComplexDouble'"),
              std::string::npos);
    // real calls of the ops that take complex ones still run their real bodies
    const Tensor x = ember::tensor({-1.0f, 2.0f});
    EXPECT_TRUE(call("abs", {Value::of(x)}).at(0).equal(ember::tensor({1.0f, 2.0f})));
    EXPECT_TRUE(call("add", {Value::of(x), Value::number(1.5)}).at(0).equal(ember::tensor({0.5f, 3.5f})));
}

TEST(ComplexOps, ComplexNumbersAsArguments) {
    const Tensor x = ember::tensor({1.0f, -2.0f});
    const Tensor r = call("mul", {Value::of(x), Value::complex_number(0, 1)}).at(0);
    EXPECT_EQ(r.scalar_type(), kComplexFloat);  // a float32 tensor times a complex number
    EXPECT_TRUE(view_as_real(r).equal(ember::tensor({{0.0f, 1.0f}, {0.0f, -2.0f}})));
    const Tensor s = call("add", {Value::complex_number(0.5, -1), Value::of(x.to(kDouble))}).at(0);
    EXPECT_EQ(s.scalar_type(), kComplexDouble);
    EXPECT_TRUE(view_as_real(s).equal(ember::tensor({{1.5, -1.0}, {-1.5, -1.0}}).to(kDouble)));
    const Tensor i = call("mul", {Value::of(ember::tensor({2, 3})), Value::complex_number(1, 1)}).at(0);
    EXPECT_EQ(i.scalar_type(), kComplexFloat);  // integers: the default float's complex type
    EXPECT_EQ(error_of("div", {Value::of(crandn({2})), Value::of(crandn({2}))}, {{"rounding_mode", Value::string("floor")}}),
              "\"div_floor_cpu\" not implemented for 'ComplexFloat'");
}

TEST(ComplexOps, CastsAndLikeFactories) {
    const Tensor z = crandn({2, 3});
    const Tensor c = call("Tensor.cdouble", {Value::of(z)}).at(0);
    EXPECT_EQ(c.scalar_type(), kComplexDouble);
    EXPECT_TRUE(view_as_real(c).equal(view_as_real(z).to(kDouble)));
    EXPECT_EQ(call("Tensor.cfloat", {Value::of(ember::ones({2}))}).at(0).scalar_type(), kComplexFloat);
    EXPECT_TRUE(call("Tensor.float", {Value::of(z)}).at(0).equal(real(z)));  // the real part, as PyTorch
    const Tensor zeros = call("ember.zeros_like", {Value::of(z)}).at(0);
    EXPECT_EQ(zeros.scalar_type(), kComplexFloat);
    EXPECT_TRUE(view_as_real(zeros).equal(ember::zeros({2, 3, 2})));
    const Tensor full = call("ember.full_like", {Value::of(z), Value::number(2.5)}).at(0);
    EXPECT_TRUE(view_as_real(full).select(-1, 0).equal(ember::full({2, 3}, 2.5)));
    EXPECT_TRUE(view_as_real(full).select(-1, 1).equal(ember::zeros({2, 3})));
}

TEST(ComplexOps, FftArgumentsAndErrors) {
    const Tensor x = ember::randn({4, 6});
    const Tensor spec = call("fft_rfft", {Value::of(x)}, {{"norm", Value::string("ortho")}}).at(0);
    EXPECT_EQ(spec.sizes(), IntArrayRef({4, 4}));
    EXPECT_TRUE(view_as_real(spec).allclose(view_as_real(fft::rfft(x, std::nullopt, -1, "ortho"))));
    EXPECT_EQ(error_of("fft_fft", {Value::of(x)}, {{"norm", Value::string("nope")}}), "Invalid normalization mode: \"nope\"");
    EXPECT_EQ(error_of("fft_rfft", {Value::of(crandn({3}))}), "rfft expects a real input tensor, but got ComplexFloat");
    EXPECT_EQ(error_of("fft_fft", {Value::of(x)}, {{"out", Value::of(ember::zeros({4, 6}))}}),
              "fft expects a complex output tensor, but got Float");
    Tensor out = ember::zeros({4, 6}, kComplexFloat);
    call("fft_fft", {Value::of(x)}, {{"out", Value::of(out)}});
    EXPECT_TRUE(view_as_real(out).allclose(view_as_real(fft::fft(x))));
    EXPECT_EQ(error_of("fft_fftn", {Value::of(x)}, {{"dim", jit_ops::ints({1, 1})}}), "FFT dims must be unique");
}

// linalg.eig / eigvals: A V = V diag(w) with unit eigenvectors, whatever the batch and dtype;
// empty batches; PyTorch's errors (the programs above compare the values with Python's).
TEST(ComplexOps, EigDecomposesAndRefusesWhatPyTorchRefuses) {
#ifndef EMBER_HAVE_OPENBLAS
    GTEST_SKIP() << "linalg.eig needs LAPACK (geev): this build has no OpenBLAS";
#endif
    for (ScalarType dt : {kFloat, kDouble, kComplexFloat, kComplexDouble}) {
        const Tensor a = is_complex(dt) ? crandn({2, 5, 5}).to(dt) : ember::randn({2, 5, 5}, dt);
        const std::vector<Tensor> r = call("linalg.eig", {Value::of(a)});
        const ScalarType ct = to_complex_type(dt);
        ASSERT_EQ(r.at(0).scalar_type(), ct);
        ASSERT_EQ(r.at(1).sizes(), a.sizes());
        // A V - V diag(w) in real arithmetic (double)
        const Tensor ac = a.to(kComplexDouble), w = r.at(0).to(kComplexDouble), v = r.at(1).to(kComplexDouble);
        const Tensor ar = real(ac), ai = imag(ac), vr = real(v), vi = imag(v);
        const Tensor wr = real(w).unsqueeze(-2), wi = imag(w).unsqueeze(-2);
        const Tensor res_re = ember::matmul(ar, vr) - ember::matmul(ai, vi) - (vr * wr - vi * wi);
        const Tensor res_im = ember::matmul(ar, vi) + ember::matmul(ai, vr) - (vr * wi + vi * wr);
        const double tol = (dt == kFloat || dt == kComplexFloat) ? 1e-4 : 1e-11;
        EXPECT_LT(std::max(res_re.abs().max().item<double>(), res_im.abs().max().item<double>()), tol) << dt;
        const Tensor norms = view_as_real(v).pow(2).sum({-1, -3});  // |v_j|^2 per column
        EXPECT_LT((norms - 1).abs().max().item<double>(), tol) << dt;
        const Tensor vals = call("linalg.eigvals", {Value::of(a)}).at(0);
        EXPECT_TRUE(view_as_real(vals).equal(view_as_real(w))) << dt;
    }
    const std::vector<Tensor> empty = call("linalg.eig", {Value::of(ember::zeros({3, 0, 0}, kDouble))});
    EXPECT_EQ(empty.at(0).sizes(), IntArrayRef({3, 0}));
    EXPECT_EQ(empty.at(0).scalar_type(), kComplexDouble);
    EXPECT_EQ(error_of("linalg.eig", {Value::of(ember::zeros({3}))}),
              "linalg.eig: The input tensor A must have at least 2 dimensions.");
    EXPECT_EQ(error_of("linalg.eig", {Value::of(ember::zeros({2, 3}))}),
              "linalg.eig: A must be batches of square matrices, but they are 2 by 3 matrices");
    EXPECT_EQ(error_of("linalg.eigvals", {Value::of(ember::zeros({2, 2}, kLong))}), "Unknown Complex ScalarType for Long");
    EXPECT_EQ(error_of("linalg.eig", {Value::of(ember::zeros({2, 2}, kHalf))}),
              "\"linalg_eig_out_cpu\" not implemented for 'Half'");
    Tensor nan = ember::zeros({2, 2});
    nan.select(0, 0).select(0, 1).fill_(std::nan(""));
    EXPECT_EQ(error_of("linalg.eig", {Value::of(nan)}), "torch.linalg.eig: input tensor should not contain infs or NaNs.");
}

// Every FFT of the Python registry (and stft, istft, complex, polar, view_as_complex) is in
// the C++ table with Python's signature (test_signatures.cpp compares the signatures).
TEST(ComplexOps, TheTableHasEveryTransform) {
    const std::vector<std::string> ops = jit::supported_ops();
    for (const char* base : {"fft", "ifft", "rfft", "irfft", "hfft", "ihfft"}) {
        for (const char* form : {"", "2", "n"}) {
            const std::string op = "fft_" + std::string(base) + form;
            EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
        }
    }
    for (const char* op : {"stft", "istft", "complex", "polar", "view_as_complex", "view_as_real", "imag"}) {
        EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
    }
    EXPECT_EQ(jit::op_signature("fft_hfft2"), "input, s=None, dim=(-2, -1), norm=None, *, out=None");
}

}  // namespace
