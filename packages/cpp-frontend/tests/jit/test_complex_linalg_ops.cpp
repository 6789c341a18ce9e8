// The op table's complex linear algebra (src/jit/ops_more5.cpp), complex variances, complex
// alpha / beta of the addmm family and the complex in-place ops (src/jit/ops_complex.cpp):
// the programs of golden_complex_linalg.py run in C++ against Python's results, then the
// entries called directly against PyTorch's values (hard-coded, from PyTorch 2.13), the
// factorizations by their defining identities (in builds with and without LAPACK), and
// PyTorch's errors.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/complex.h"
#include "complex_golden.h"
#include "ember/ember.h"
#include "op_call.h"

namespace {

using namespace ember;
using complex_golden::expect_close;
using complex_golden::golden;
using complex_golden::GoldenRun;
using complex_golden::read_run;
using ember::testing::complex_tensor;
using ember::testing::values_of;
using jit_ops::call;
using jit_ops::error_of;
using jit_ops::Kwargs;
using jit_ops::Value;
using cd = std::complex<double>;

// ------------------------------------------------------------------------- golden programs

const std::vector<std::string> kPrograms = {"complex_linalg_solves", "complex_linalg_spectral",
                                            "complex_linalg_scaled_products", "complex_linalg_inplace"};

class ComplexLinalgProgram : public ::testing::TestWithParam<std::string> {};

TEST_P(ComplexLinalgProgram, MatchesPython) {
    if (!EMBER_GOLDEN_AVAILABLE) GTEST_SKIP() << "no Python with NumPy: no golden files";
    const std::string name = GetParam();
    jit::Module m = jit::load(golden(name + ".ember"));
    std::ifstream list(golden("programs_complex_linalg.txt"));
    std::string program;
    int runs = 0;
    while (list >> program >> runs) {
        if (program == name) break;
    }
    ASSERT_EQ(program, name);
    ASSERT_EQ(runs, 2);  // complex64 and complex128
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

INSTANTIATE_TEST_SUITE_P(Golden, ComplexLinalgProgram, ::testing::ValuesIn(kPrograms),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(ComplexLinalgPrograms, AreTheGoldenWritersPrograms) {
    if (!EMBER_GOLDEN_AVAILABLE) GTEST_SKIP() << "no Python with NumPy: no golden files";
    std::ifstream list(golden("programs_complex_linalg.txt"));
    std::vector<std::string> written;
    std::string name;
    int runs = 0;
    while (list >> name >> runs) written.push_back(name);
    EXPECT_EQ(written, kPrograms);
}

// ------------------------------------------------------------------------- helpers

Tensor crandn(std::vector<int64_t> shape, unsigned seed, ScalarType dtype = kComplexDouble) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    std::mt19937 gen(seed);
    std::normal_distribution<double> d;
    std::vector<cd> v(static_cast<std::size_t>(n));
    for (cd& x : v) x = cd(d(gen), d(gen));
    return complex_tensor(v, shape, dtype);
}

double max_abs(const Tensor& z) { return z.numel() ? z.abs().max().to(kDouble).item<double>() : 0.0; }

void expect_values(const Tensor& t, const std::vector<cd>& want, double tol, const std::string& what) {
    const std::vector<cd> got = values_of(t);
    ASSERT_EQ(got.size(), want.size()) << what;
    for (std::size_t i = 0; i < want.size(); ++i) {
        EXPECT_LE(std::abs(got[i] - want[i]), tol * (1 + std::abs(want[i]))) << what << " element " << i;
    }
}

// A (3 x 3) and B (3 x 2), the values PyTorch's are computed from below
Tensor matrix_a(ScalarType dt) {
    return complex_tensor({{2, 1}, {-1, 0.5}, {0, 0.5}, {1, -1}, {3, 0}, {-2, 1}, {0.25, 0}, {1, 2}, {1, -0.5}}, {3, 3}, dt);
}
Tensor matrix_b(ScalarType dt) { return complex_tensor({{1, 0}, {2, -1}, {0, 0.5}, {-1, 0}, {3, 1}, {0.25, -0.25}}, {3, 2}, dt); }

Value kw(bool b) { return Value::boolean(b); }

// ------------------------------------------------------------------------- var / std

TEST(ComplexLinalgOps, VarianceOfComplexIsRealAsPyTorchs) {
    const std::vector<cd> zv = {{1, 2}, {-0.5, 1}, {3, -1}, {0.25, -2}, {2, 0.5}, {-1, -1}};
    for (const ScalarType dt : {kComplexFloat, kComplexDouble}) {
        const double tol = dt == kComplexFloat ? 1e-6 : 1e-14;
        const ScalarType rt = dt == kComplexFloat ? kFloat : kDouble;
        const Tensor z = complex_tensor(zv, {2, 3}, dt);
        const Tensor all = call("var", {Value::of(z)}).at(0);
        EXPECT_EQ(all.scalar_type(), rt);
        expect_values(all, {4.55208333333333393}, tol, "var()");
        expect_values(call("var", {Value::of(z), Value::integer(0)}).at(0), {8.28125, 3.25, 8.0}, tol, "var(0)");
        const Tensor v1 = call("var", {Value::of(z), Value::integer(1)}, {{"correction", Value::integer(0)}, {"keepdim", kw(true)}}).at(0);
        EXPECT_EQ(v1.sizes().vec(), (std::vector<int64_t>{2, 1}));
        expect_values(v1, {3.61111111111111116, 2.56944444444444420}, tol, "var(1, correction=0, keepdim)");
        expect_values(call("std", {Value::of(z), Value::integer(1)}).at(0), {2.32737334062815693, 1.96320316489829083}, tol, "std(1)");
        expect_values(call("std", {Value::of(z)}).at(0), {2.13356118574868470}, tol, "std()");
        const std::vector<Tensor> vm = call("var_mean", {Value::of(z), Value::integer(1)});
        EXPECT_EQ(vm.at(0).scalar_type(), rt);
        EXPECT_EQ(vm.at(1).scalar_type(), dt);
        expect_values(vm[0], {5.41666666666666607, 3.85416666666666607}, tol, "var_mean var");
        expect_values(vm[1], {{1.16666666666666652, 0.66666666666666663}, {0.41666666666666663, -0.83333333333333337}}, tol,
                      "var_mean mean");
        // no degrees of freedom: inf, or NaN where a part is constant (0 / 0), as PyTorch's
        const std::vector<Tensor> sm = call("std_mean", {Value::of(z), Value::integer(0)}, {{"correction", Value::integer(2)}});
        EXPECT_TRUE(std::isinf(sm.at(0)[0].item<double>()));
        EXPECT_TRUE(std::isinf(sm.at(0)[1].item<double>()));
        EXPECT_TRUE(std::isnan(sm.at(0)[2].item<double>()));
        expect_values(sm.at(1), {{0.625, 0}, {0.75, 0.75}, {1, -1}}, tol, "std_mean mean");
        // unbiased=False is correction 0
        const Tensor u = call("var", {Value::of(z), Value::integer(1)}, {{"unbiased", kw(false)}}).at(0);
        expect_values(u, {3.61111111111111116, 2.56944444444444420}, tol, "var(unbiased=False)");
    }
}

// ------------------------------------------------------------------------- solves, inverses, determinants

TEST(ComplexLinalgOps, SolveInverseAndDeterminantsAsPyTorchs) {
    for (const ScalarType dt : {kComplexFloat, kComplexDouble}) {
        const double tol = dt == kComplexFloat ? 2e-6 : 1e-13;
        const Tensor A = matrix_a(dt), B = matrix_b(dt);
        const Tensor X = call("linalg.solve", {Value::of(A), Value::of(B)}).at(0);
        EXPECT_EQ(X.scalar_type(), dt);
        expect_values(X, {{0.51923875432525957, -1.00892733564013826}, {0.63224913494809698, -0.85453287197231842},
                          {1.20197231833910001, -0.05505190311418662}, {0.06553633217993080, 0.23038062283737029},
                          {1.68515570934256043, -0.25408304498269879}, {0.54885813148788931, -0.12339100346020761}},
                      tol, "solve");
        const std::vector<cd> inv = {{0.43487889273356406, -0.19460207612456748}, {-0.03307958477508648, -0.01702422145328722},
                                     {-0.05702422145328719, -0.24692041522491348}, {0.01508650519031141, 0.13328719723183394},
                                     {0.12934256055363327, -0.10498269896193768}, {0.31501730103806219, -0.18934256055363313},
                                     {0.16013840830449827, -0.03474048442906574}, {-0.20505190311418678, -0.25197231833910033},
                                     {0.40802768166089964, -0.17494809688581309}};
        for (const char* op : {"linalg.inv", "inverse"}) expect_values(call(op, {Value::of(A)}).at(0), inv, tol, op);
        const std::vector<Tensor> ie = call("linalg.inv_ex", {Value::of(A)});
        expect_values(ie.at(0), inv, tol, "inv_ex");
        EXPECT_EQ(ie.at(1).item<int32_t>(), 0);
        for (const char* op : {"linalg.det", "det"}) expect_values(call(op, {Value::of(A)}).at(0), {{12.125, 8.875}}, tol, op);
        const std::vector<Tensor> sl = call("linalg.slogdet", {Value::of(A)});
        EXPECT_EQ(sl.at(0).scalar_type(), dt);
        EXPECT_EQ(sl.at(1).scalar_type(), dt == kComplexFloat ? kFloat : kDouble);
        expect_values(sl[0], {{0.80693362088347209, 0.59064213487346906}}, tol, "slogdet sign");
        expect_values(sl[1], {2.70978330509045318}, tol, "slogdet logabsdet");
        expect_values(call("logdet", {Value::of(A)}).at(0), {{2.70978330509045318, 0.63185438085789203}}, tol, "logdet");
        // a batch (broadcast against B's) and left=False (X A = B^T)
        const Tensor Ab = ember::stack({A, A.transpose(0, 1).contiguous()});
        const Tensor Xb = call("linalg.solve", {Value::of(Ab), Value::of(B)}).at(0);
        EXPECT_LE(max_abs(Ab.matmul(Xb) - B), 10 * tol);
        const Tensor Bt = B.transpose(0, 1).contiguous();
        const Tensor Xl = call("linalg.solve", {Value::of(A), Value::of(Bt)}, {{"left", kw(false)}}).at(0);
        EXPECT_LE(max_abs(Xl.matmul(A) - Bt), 10 * tol);
        const Tensor b = B.select(1, 0).contiguous();  // a vector right-hand side
        const Tensor xv = call("linalg.solve", {Value::of(A), Value::of(b)}).at(0);
        EXPECT_EQ(xv.dim(), 1);
        EXPECT_LE(max_abs(A.matmul(xv) - b), 10 * tol);
    }
}

TEST(ComplexLinalgOps, SingularComplexMatricesAsPyTorchs) {
    const Tensor S = complex_tensor({{1, 1}, {2, 0}, {0, 0}, {0, 1}, {0, 0}, {0, 0}, {1, 0}, {1, -1}, {0, 0}}, {3, 3});
    const std::vector<Tensor> sl = call("linalg.slogdet", {Value::of(S)});
    EXPECT_EQ(values_of(sl.at(0))[0], cd(0, 0));
    EXPECT_EQ(sl.at(1).item<double>(), -std::numeric_limits<double>::infinity());
    EXPECT_EQ(values_of(call("det", {Value::of(S)}).at(0))[0], cd(0, 0));
    const cd ld = values_of(call("logdet", {Value::of(S)}).at(0))[0];  // -inf + nan i
    EXPECT_EQ(ld.real(), -std::numeric_limits<double>::infinity());
    EXPECT_TRUE(std::isnan(ld.imag()));
    const std::vector<Tensor> ie = call("linalg.inv_ex", {Value::of(S)});
    EXPECT_EQ(ie.at(1).item<int32_t>(), 3);
    for (const cd& v : values_of(ie.at(0))) EXPECT_TRUE(std::isnan(v.real()) && std::isnan(v.imag()));
    EXPECT_EQ(error_of("linalg.inv", {Value::of(S)}),
              "linalg.inv: The diagonal element 3 is zero, the inversion could not be completed because the input matrix is "
              "singular.");
    EXPECT_EQ(error_of("linalg.solve", {Value::of(S), Value::of(matrix_b(kComplexDouble))}),
              "torch.linalg.solve: The solver failed because the input matrix is singular.");
    const std::vector<Tensor> se = call("linalg.solve_ex", {Value::of(S), Value::of(matrix_b(kComplexDouble))});
    EXPECT_EQ(se.at(1).item<int32_t>(), 3);
    for (const cd& v : values_of(se.at(0))) EXPECT_TRUE(std::isnan(v.real()) && std::isnan(v.imag()));
    // the dtypes must agree
    EXPECT_EQ(error_of("linalg.solve", {Value::of(matrix_a(kComplexFloat)), Value::of(matrix_b(kComplexDouble))}),
              "linalg.solve: Expected A and B to have the same dtype, but found A of type ComplexFloat and B of type "
              "ComplexDouble instead");
}

// ------------------------------------------------------------------------- SVD and norms

// A = U diag(S) Vh with orthonormal columns / rows, S real, descending, for every shape.
TEST(ComplexLinalgOps, SvdFactorsComplexMatrices) {
    for (const ScalarType dt : {kComplexFloat, kComplexDouble}) {
        const double tol = dt == kComplexFloat ? 2e-5 : 1e-12;
        const ScalarType rt = dt == kComplexFloat ? kFloat : kDouble;
        unsigned seed = 3;
        for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{5, 3}, {3, 6}, {2, 4, 4}, {1, 1}}) {
            const Tensor A = crandn(shape, seed++, dt);
            const int64_t m = shape[shape.size() - 2], n = shape.back(), k = std::min(m, n);
            for (const bool full : {false, true}) {
                const std::vector<Tensor> r = call("linalg.svd", {Value::of(A)}, {{"full_matrices", kw(full)}});
                const Tensor &U = r.at(0), &S = r.at(1), &Vh = r.at(2);
                EXPECT_EQ(U.scalar_type(), dt);
                EXPECT_EQ(S.scalar_type(), rt);
                EXPECT_EQ(Vh.scalar_type(), dt);
                EXPECT_EQ(U.size(-1), full ? m : k);
                EXPECT_EQ(Vh.size(-2), full ? n : k);
                const Tensor Uk = U.narrow(-1, 0, k), Vk = Vh.narrow(-2, 0, k);
                const Tensor rebuilt = (Uk * S.unsqueeze(-2).to(dt)).matmul(Vk);
                EXPECT_LE(max_abs(rebuilt - A), tol * 10) << scalar_type_name(dt);
                const Tensor UhU = ember::conj_physical(U.transpose(-2, -1)).matmul(U);
                EXPECT_LE(max_abs(UhU - ember::eye(U.size(-1), kDouble).to(dt)), tol * 10);
                const Tensor VVh = Vh.matmul(ember::conj_physical(Vh.transpose(-2, -1)));
                EXPECT_LE(max_abs(VVh - ember::eye(Vh.size(-2), kDouble).to(dt)), tol * 10);
                const Tensor s = S.to(kDouble);
                if (k > 1) {
                    EXPECT_TRUE((s.narrow(-1, 0, k - 1) >= s.narrow(-1, 1, k - 1)).all().item<bool>());
                }
            }
            const Tensor sv = call("linalg.svdvals", {Value::of(A)}).at(0);
            EXPECT_EQ(sv.scalar_type(), rt);
            // torch.svd: V, not Vh (the conjugate transpose), and A = U S V^H
            const std::vector<Tensor> tv = call("svd", {Value::of(A)});
            const Tensor back = (tv.at(0) * tv.at(1).unsqueeze(-2).to(dt)).matmul(ember::conj_physical(tv.at(2).transpose(-2, -1)));
            EXPECT_LE(max_abs(back - A), tol * 10);
            EXPECT_LE(max_abs(tv.at(1) - sv), tol * 10);
        }
    }
}

TEST(ComplexLinalgOps, SpectralNormsAsPyTorchs) {
    const Tensor R = complex_tensor({{1, 1}, {2, 0}, {0.5, -1}, {-1, 0.5}, {0, 2}, {1, -1}}, {3, 2});
    for (const ScalarType dt : {kComplexFloat, kComplexDouble}) {
        const double tol = dt == kComplexFloat ? 2e-6 : 1e-13;
        const Tensor r = R.to(dt);
        expect_values(call("linalg.svdvals", {Value::of(r)}).at(0), {3.47909786578890268, 1.54786240999098501}, tol, "svdvals");
        const Tensor nuc = call("linalg.matrix_norm", {Value::of(r), Value::string("nuc")}).at(0);
        EXPECT_EQ(nuc.scalar_type(), dt == kComplexFloat ? kFloat : kDouble);
        expect_values(nuc, {5.02696027577988769}, tol, "nuc");
        expect_values(call("linalg.matrix_norm", {Value::of(r), Value::integer(2)}).at(0), {3.47909786578890268}, tol, "2");
        expect_values(call("linalg.matrix_norm", {Value::of(r), Value::integer(-2)}).at(0), {1.54786240999098501}, tol, "-2");
        expect_values(call("linalg.norm", {Value::of(r), Value::string("nuc")}).at(0), {5.02696027577988769}, tol, "norm nuc");
        const Tensor A = matrix_a(dt);
        expect_values(call("linalg.cond", {Value::of(A)}).at(0), {3.51876278682920773}, tol * 4, "cond");
        expect_values(call("linalg.cond", {Value::of(A), Value::integer(1)}).at(0), {6.76656410225574856}, tol * 4, "cond 1");
        const Tensor k = call("linalg.matrix_norm", {Value::of(r.unsqueeze(0)), Value::string("nuc")}, {{"keepdim", kw(true)}}).at(0);
        EXPECT_EQ(k.sizes().vec(), (std::vector<int64_t>{1, 1, 1}));
    }
}

// ------------------------------------------------------------------------- addmm family, in place

TEST(ComplexLinalgOps, AddmmFamilyTakesComplexScalars) {
    const Tensor A = matrix_a(kComplexDouble), B = matrix_b(kComplexDouble);
    const Tensor C = B.narrow(0, 0, 2).contiguous(), M = A.narrow(0, 0, 2).contiguous();
    const Tensor r = call("addmm", {Value::of(C), Value::of(M), Value::of(B)},
                          {{"beta", Value::complex_number(0, 1)}, {"alpha", Value::complex_number(2, -1)}}).at(0);
    expect_values(r, {{4.5, 3.75}, {12.875, -4.875}, {-11, 9}, {-6.75, -3.25}}, 1e-14, "addmm");
    // the same as beta * C + alpha * (M @ B) for the others, complex64 and complex128
    for (const ScalarType dt : {kComplexFloat, kComplexDouble}) {
        const double tol = dt == kComplexFloat ? 1e-5 : 1e-13;
        const cd beta(0.5, -2), alpha(-1, 0.25);
        const Kwargs scalars{{"beta", Value::complex_number(beta.real(), beta.imag())},
                             {"alpha", Value::complex_number(alpha.real(), alpha.imag())}};
        auto number = [dt](cd v) { return complex_tensor({v}, {}, dt); };
        const Tensor v = crandn({3}, 1, dt), m = crandn({3, 4}, 2, dt), x = crandn({4}, 3, dt);
        const Tensor mv = call("addmv", {Value::of(v), Value::of(m), Value::of(x)}, scalars).at(0);
        EXPECT_LE(max_abs(mv - (number(beta) * v + number(alpha) * m.mv(x))), tol * 10);
        const Tensor in = crandn({2, 3, 5}, 4, dt), b1 = crandn({2, 3, 4}, 5, dt), b2 = crandn({2, 4, 5}, 6, dt);
        const Tensor bb = call("baddbmm", {Value::of(in), Value::of(b1), Value::of(b2)}, scalars).at(0);
        EXPECT_LE(max_abs(bb - (number(beta) * in + number(alpha) * b1.bmm(b2))), tol * 10);
        const Tensor ab = call("addbmm", {Value::of(in.select(0, 0)), Value::of(b1), Value::of(b2)}, scalars).at(0);
        EXPECT_LE(max_abs(ab - (number(beta) * in.select(0, 0) + number(alpha) * b1.bmm(b2).sum(0))), tol * 10);
        // beta == 0 ignores the input, NaNs too
        const Tensor nan_in = ember::full({3, 5}, std::nan(""), kDouble).to(dt);
        const Tensor z = call("addbmm", {Value::of(nan_in), Value::of(b1), Value::of(b2)},
                              {{"beta", Value::integer(0)}, {"alpha", Value::complex_number(0, 1)}}).at(0);
        EXPECT_LE(max_abs(z - number({0, 1}) * b1.bmm(b2).sum(0)), tol * 10);
        // in place: addbmm_ writes into its input
        Tensor self = in.select(0, 0).clone();
        call("addbmm_", {Value::of(self), Value::of(b1), Value::of(b2)}, scalars);
        EXPECT_LE(max_abs(self - ab), tol * 10);
    }
    // a complex scalar with real tensors: PyTorch's error
    const Tensor f = ember::ones({2, 2});
    EXPECT_EQ(jit_ops::error_of("addmm", {Value::of(f), Value::of(f), Value::of(f)}, {{"beta", Value::complex_number(0, 1)}}),
              "value cannot be converted to type float without overflow");
    EXPECT_EQ(jit_ops::error_of("addmv", {Value::of(f.to(kDouble).select(0, 0)), Value::of(f.to(kDouble)),
                                          Value::of(f.to(kDouble).select(0, 0))},
                                {{"alpha", Value::complex_number(1, 1)}}),
              "value cannot be converted to type double without overflow");
}

TEST(ComplexLinalgOps, InPlaceOpsOnComplexTensors) {
    const Tensor z0 = crandn({2, 3}, 7), w = crandn({2, 3}, 8);
    auto inplace = [&](const std::string& op, std::vector<Value> rest, const Tensor& expected) {
        Tensor z = z0.clone();
        std::vector<Value> args{Value::of(z)};
        args.insert(args.end(), rest.begin(), rest.end());
        const Tensor r = call(op, args).at(0);
        EXPECT_LE(max_abs(z - expected), 1e-12) << op;  // written into self
        EXPECT_LE(max_abs(r - expected), 1e-12) << op;
    };
    inplace("add_", {Value::of(w)}, z0 + w);
    inplace("sub_", {Value::complex_number(0, 1)}, z0 - complex_tensor({{0, 1}}, {}));
    inplace("mul_", {Value::of(w)}, z0 * w);
    inplace("div_", {Value::of(w)}, z0 / w);
    inplace("neg_", {}, -z0);
    inplace("exp_", {}, z0.exp());
    inplace("sqrt_", {}, ember::sqrt(z0));
    inplace("reciprocal_", {}, ember::reciprocal(z0));
    inplace("pow_", {Value::integer(2)}, z0 * z0);
    inplace("conj_physical_", {}, ember::conj_physical(z0));
    {  // the dtype-agnostic in-place methods
        Tensor z = z0.clone();
        call("Tensor.copy_", {Value::of(z), Value::of(w)});
        EXPECT_EQ(max_abs(z - w), 0.0);
        call("Tensor.zero_", {Value::of(z)});
        EXPECT_EQ(max_abs(z), 0.0);
    }
    // complex64 self, complex128 other: rounded into self, as PyTorch's
    Tensor s = z0.to(kComplexFloat);
    call("add_", {Value::of(s), Value::of(w)});
    EXPECT_EQ(s.scalar_type(), kComplexFloat);
    EXPECT_LE(max_abs(s.to(kComplexDouble) - (z0 + w)), 1e-5);
    // a real self cannot hold a complex result
    Tensor x = ember::ones({2, 3});
    for (const char* op : {"add_", "mul_", "sub_", "div_"}) {
        EXPECT_EQ(error_of(op, {Value::of(x), Value::complex_number(0, 1)}),
                  "result type ComplexFloat can't be cast to the desired output type Float")
            << op;
    }
    EXPECT_EQ(error_of("div_", {Value::of(x), Value::of(w)}),
              "result type ComplexDouble can't be cast to the desired output type Float");
    EXPECT_EQ(max_abs(x - ember::ones({2, 3})), 0.0);  // untouched
    EXPECT_EQ(error_of("abs_", {Value::of(z0.clone())}), "In-place abs is not supported for complex tensors.");
    // real calls keep their bodies
    Tensor y = ember::ones({2});
    call("add_", {Value::of(y), Value::number(0.5)});
    EXPECT_EQ(y[0].item<float>(), 1.5f);
}

}  // namespace
