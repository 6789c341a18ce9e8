// Issue 14's second batch of op table entries (src/jit/ops_more2.cpp ...): the programs of
// golden_more_ops2.py run in C++ against Python's results (every output tensor; float32
// within 1e-5 absolute + 1e-5 relative, integers exactly), and the entries called directly
// for what a program cannot show: in-place views change the tensor itself, the errors of bad
// arguments, and properties that hold whatever Python computes.

#include "jit_test_util.h"
#include "op_call.h"

namespace {

using jit_ops::call;
using jit_ops::error_of;
using jit_ops::ints;
using jit_ops::Value;
using namespace jit_test;

const std::vector<std::string> kPrograms = {
    "more2_views_products", "more2_windows_activations", "more2_losses", "more2_distances_bags",
    "more2_scatter_index",  "more2_sampling",            "more2_pools",  "more2_order_counts",
    "more2_special",        "more2_integers_floats",     "more2_linalg_solvers", "more2_linalg_factorizations",
    "more2_rest",           "more2_windows_export",      "more2_linalg_vectors", "more2_factories_export",
    "more2_linalg_ldl",
};

class MoreOps2Program : public ::testing::TestWithParam<std::string> {};

TEST_P(MoreOps2Program, MatchesPython) {
    EMBER_JIT_NEED_GOLDEN();
    const std::string name = GetParam();
#ifndef EMBER_HAVE_OPENBLAS
    // without LAPACK the singular and eigen vectors come from Jacobi rotations: the same
    // factorization (MoreOps2.LinalgFactorizations checks it), its vectors' signs not LAPACK's
    if (name == "more2_linalg_vectors") GTEST_SKIP() << "signs of singular/eigen vectors are LAPACK's convention";
#endif
    expect_runs_match_python(name);
}

INSTANTIATE_TEST_SUITE_P(Golden, MoreOps2Program, ::testing::ValuesIn(kPrograms),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// The list above is golden_more_ops2.py's.
TEST(MoreOps2Programs, AreTheGoldenWritersPrograms) {
    EMBER_JIT_NEED_GOLDEN();
    expect_written_programs("programs_more2.txt", kPrograms);
}

Tensor call1(const std::string& op, std::vector<Value> args, jit_ops::Kwargs kwargs = {}) {
    return call(op, std::move(args), std::move(kwargs)).at(0);
}

Value of(const Tensor& t) { return Value::of(t); }

double max_diff(const Tensor& a, const Tensor& b) {
    return (a.to(ember::kDouble) - b.to(ember::kDouble)).abs().max().item<double>();
}

TEST(MoreOps2, InPlaceViewsChangeTheTensorItself) {
    Tensor x = ember::arange(6.0).view({2, 3});
    Tensor y = x.clone();
    Tensor r = call1("Tensor.t_", {of(y)});
    EXPECT_TRUE(r.is_same(y));
    EXPECT_EQ(y.sizes(), (std::vector<int64_t>{3, 2}));
    EXPECT_TRUE(ember::equal(y, x.t()));
    call1("Tensor.unsqueeze_", {of(y), Value::integer(-1)});
    EXPECT_EQ(y.sizes(), (std::vector<int64_t>{3, 2, 1}));
    call1("Tensor.squeeze_", {of(y)});
    EXPECT_EQ(y.sizes(), (std::vector<int64_t>{3, 2}));
    call1("Tensor.transpose_", {of(y), Value::integer(0), Value::integer(1)});
    EXPECT_TRUE(ember::equal(y, x));
    // the storage is shared: a write through the view is a write into the tensor
    Tensor z = ember::zeros({2, 3});
    call1("as_strided_", {of(z), ints({3}), ints({1}), Value::integer(2)});
    z.fill_(1.0);
    EXPECT_EQ(z.sizes(), (std::vector<int64_t>{3}));
    EXPECT_NE(error_of("Tensor.t_", {of(ember::zeros({1, 2, 3}))}).find("t_() expects a tensor with <= 2 dimensions"),
              std::string::npos);
    EXPECT_NE(error_of("Tensor.unsqueeze_", {of(x), Value::integer(3)}).find("Dimension out of range"), std::string::npos);
}

TEST(MoreOps2, ProductsAndStatistics) {
    ember::manual_seed(3);
    Tensor b1 = ember::randn({4, 2, 3}, ember::kDouble), b2 = ember::randn({4, 3, 5}, ember::kDouble);
    Tensor input = ember::randn({2, 5}, ember::kDouble);
    Tensor got = call1("addbmm", {of(input), of(b1), of(b2)}, {{"beta", Value::number(0.5)}, {"alpha", Value::integer(2)}});
    EXPECT_TRUE(ember::allclose(got, input * 0.5 + ember::bmm(b1, b2).sum({0}) * 2, 1e-12, 1e-12));
    EXPECT_NE(error_of("addbmm", {of(input), of(b1), of(b1)}).find("Incompatible matrix sizes for bmm (2x3 and 2x3)"),
              std::string::npos);
    // a x b is orthogonal to a and b
    Tensor a = ember::randn({5, 3}, ember::kDouble), b = ember::randn({5, 3}, ember::kDouble);
    Tensor c = call1("cross", {of(a), of(b), Value::integer(1)});
    EXPECT_LT((c * a).sum({1}).abs().max().item<double>(), 1e-12);
    EXPECT_EQ(error_of("cross", {of(a), of(b.t()), Value::integer(0)}), "linalg.cross: inputs dimension 0 must have length 3. Got 5 and 3");
    // cov of the rows: the diagonal is the unbiased variance
    Tensor cv = call1("cov", {of(a.t())});
    EXPECT_TRUE(ember::allclose(cv.diagonal(), a.var(std::vector<int64_t>{0}), 1e-12, 1e-12));
    EXPECT_EQ(call1("vander", {of(ember::tensor({2, 3}))}).scalar_type(), ember::kLong);
    EXPECT_EQ(error_of("renorm", {of(a[0]), Value::integer(2), Value::integer(0), Value::number(1.0)}),
              "renorm: input needs at least 2 dimensions, got 1 dimensions");
    // mm/bmm's out_dtype: float32 products of half matrices, or the inputs' own dtype
    Tensor h1 = ember::randn({3, 4}).to(ember::kHalf), h2 = ember::randn({4, 2}).to(ember::kHalf);
    Tensor wide = call1("mm", {of(h1), of(h2)}, {{"out_dtype", Value::of_dtype(ember::kFloat)}});
    EXPECT_EQ(wide.scalar_type(), ember::kFloat);
    EXPECT_TRUE(ember::allclose(wide, ember::mm(h1.to(ember::kFloat), h2.to(ember::kFloat)), 1e-6, 1e-6));
    EXPECT_EQ(call1("bmm", {of(h1.unsqueeze(0)), of(h2.unsqueeze(0)), Value::of_dtype(ember::kFloat)}).scalar_type(),
              ember::kFloat);
    EXPECT_EQ(call1("mm", {of(h1), of(h2), Value::of_dtype(ember::kHalf)}).scalar_type(), ember::kHalf);
    EXPECT_EQ(error_of("mm", {of(a), of(b.t()), Value::of_dtype(ember::kHalf)}),
              "out_dtype must be the same as input dtype or fp32 for fp16/bf16 inputs");
    EXPECT_EQ(error_of("mm", {of(h1), of(h2.to(ember::kFloat)), Value::of_dtype(ember::kFloat)}),
              "expected scalar type Half but found Float");
}

TEST(MoreOps2, WindowsAndLosses) {
    Tensor w = call1("hann_window", {Value::integer(8)});
    EXPECT_EQ(w.scalar_type(), ember::kFloat);
    EXPECT_NEAR(w[4].item<double>(), 1.0, 1e-7);  // the periodic window's peak
    EXPECT_EQ(call1("bartlett_window", {Value::integer(0)}).numel(), 0);
    EXPECT_NE(error_of("hann_window", {Value::integer(-1)}).find("requires non-negative window_length"), std::string::npos);
    EXPECT_NE(error_of("hann_window", {Value::integer(3)}, {{"dtype", Value::of_dtype(ember::kLong)}})
                  .find("hann_window expects floating point dtypes"),
              std::string::npos);
    Tensor x = ember::tensor({{0.1, 0.2, 0.4}});
    EXPECT_EQ(error_of("multi_margin_loss", {of(x), of(ember::tensor({3}))}), "target out of range");
    EXPECT_EQ(error_of("gaussian_nll_loss", {of(x), of(x), of(-x)}), "var has negative entry/entries");
    // a perfect ranking with a wide margin has no triplet loss
    Tensor zero = call1("triplet_margin_with_distance_loss", {of(x), of(x), of(x + 10)});
    EXPECT_EQ(zero.item<double>(), 0.0);
}

TEST(MoreOps2, DistancesAndBags) {
    ember::manual_seed(4);
    Tensor x = ember::randn({5, 3}, ember::kDouble);
    Tensor d = call1("cdist", {of(x), of(x)});
    EXPECT_LT(d.diagonal().abs().max().item<double>(), 1e-12);
    // pdist is cdist's upper triangle, row by row
    Tensor p = call1("pdist", {of(x)});
    ASSERT_EQ(p.numel(), 10);
    EXPECT_NEAR(p[0].item<double>(), d[0][1].item<double>(), 1e-12);
    EXPECT_NEAR(p[9].item<double>(), d[3][4].item<double>(), 1e-12);
    EXPECT_EQ(error_of("cdist", {of(x), of(ember::ones({2, 4}, ember::kDouble))}),
              "X1 and X2 must have the same number of columns. X1: 3 X2: 4");
    // mean bags of one row each are the rows
    Tensor w = ember::randn({4, 2});
    Tensor bag = call1("nn.functional.embedding_bag", {of(ember::tensor({3, 1})), of(w), of(ember::tensor({0, 1}))});
    EXPECT_TRUE(ember::equal(bag, w.index_select(0, ember::tensor({3, 1}))));
    EXPECT_EQ(error_of("embedding_bag", {of(w), of(ember::tensor({4})), of(ember::tensor({0}))}),
              "Index 0 of input takes value 4 which is not in the valid range [0, 4)");
    EXPECT_EQ(error_of("embedding_bag", {of(w), of(ember::tensor({1})), of(ember::tensor({1}))}),
              "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. However, "
              "got 1");
}

// The factorizations are factorizations whatever signs their vectors take (LAPACK's with
// OpenBLAS, Jacobi's without): A = U S Vh with orthonormal U, Vh; A = V diag(w) V^T.
TEST(MoreOps2, LinalgFactorizations) {
    ember::manual_seed(5);
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{5, 3}, {3, 5}, {2, 4, 4}}) {
        Tensor a = ember::randn(shape, ember::kDouble);
        std::vector<Tensor> r = call("linalg.svd", {of(a)}, {{"full_matrices", Value::boolean(false)}});
        EXPECT_LT(max_diff(ember::matmul(r[0] * r[1].unsqueeze(-2), r[2]), a), 1e-12);
        std::vector<Tensor> full = call("linalg.svd", {of(a)});
        Tensor U = full[0];
        EXPECT_LT(max_diff(ember::matmul(U.transpose(-1, -2), U), ember::eye(U.size(-1), ember::kDouble).expand(U.sizes())), 1e-12);
        std::vector<Tensor> qr = call("linalg.qr", {of(a)});
        EXPECT_LT(max_diff(ember::matmul(qr[0], qr[1]), a), 1e-12);
    }
    Tensor m = ember::randn({4, 4}, ember::kDouble);
    Tensor spd = ember::matmul(m, m.t()) + ember::eye(4, ember::kDouble);
    std::vector<Tensor> e = call("linalg.eigh", {of(spd)});
    EXPECT_LT(max_diff(ember::matmul(e[1] * e[0].unsqueeze(0), e[1].t()), spd), 1e-11);
    Tensor x = call1("linalg.solve", {of(spd), of(m)});
    EXPECT_LT(max_diff(ember::matmul(spd, x), m), 1e-12);
    Tensor L = call1("linalg.cholesky", {of(spd)});
    EXPECT_LT(max_diff(ember::matmul(L, L.t()), spd), 1e-12);
    EXPECT_EQ(error_of("linalg.cholesky", {of(-spd)}),
              "linalg.cholesky: The factorization could not be completed because the input is not positive-definite (the "
              "leading minor of order 1 is not positive-definite).");
    EXPECT_EQ(error_of("linalg.inv", {of(ember::zeros({2, 2}))}),
              "linalg.inv: The diagonal element 1 is zero, the inversion could not be completed because the input matrix is "
              "singular.");
    EXPECT_EQ(error_of("linalg.det", {of(ember::zeros({2, 3}))}),
              "linalg.det: A must be batches of square matrices, but they are 2 by 3 matrices");
}

// The random factories Python records by name draw from C++'s stream: their shapes, dtypes,
// ranges and moments, and PyTorch's errors (the golden program checks their arguments bind
// as Python's, where each draw has one possible value).
TEST(MoreOps2, RandomFactories) {
    ember::manual_seed(11);
    const Tensor mean = ember::full({20000}, 3.0, ember::kDouble);
    const Tensor n = call1("ember.normal", {of(mean), Value::number(2.0)});
    EXPECT_EQ(n.scalar_type(), ember::kDouble);
    EXPECT_NEAR(n.mean().item<double>(), 3.0, 0.05);
    EXPECT_NEAR(n.std().item<double>(), 2.0, 0.05);
    const Tensor n2 = call1("ember.normal", {Value::number(0.0), Value::number(1.0), ints({3, 4})});
    EXPECT_EQ(n2.sizes(), ember::IntArrayRef({3, 4}));
    EXPECT_EQ(n2.scalar_type(), ember::kFloat);
    const Tensor n3 = call1("ember.normal", {of(ember::zeros({2, 1})), of(ember::ones({3}))});
    EXPECT_EQ(n3.sizes(), ember::IntArrayRef({2, 3}));
    EXPECT_EQ(error_of("ember.normal", {of(ember::zeros({2})), Value::number(-1.0)}),
              "normal expects std >= 0.0, but found std -1");
    EXPECT_EQ(error_of("ember.normal", {of(ember::zeros({2})), of(-ember::ones({2}))}), "normal expects all elements of std >= 0.0");
    EXPECT_EQ(error_of("ember.normal", {of(ember::zeros({2}, ember::kLong)), Value::number(1.0)}),
              "\"normal_kernel_cpu\" not implemented for 'Long'");
    EXPECT_NE(error_of("ember.normal", {Value::number(0.0), Value::number(1.0)}).find("invalid combination"), std::string::npos);

    const Tensor p = call1("ember.poisson", {of(ember::full({20000}, 4.0))});
    EXPECT_EQ(p.scalar_type(), ember::kFloat);
    EXPECT_TRUE(ember::equal(p, p.round()));
    EXPECT_NEAR(p.mean().item<double>(), 4.0, 0.08);
    EXPECT_NEAR(p.var().item<double>(), 4.0, 0.2);
    EXPECT_EQ(error_of("ember.poisson", {of(-ember::ones({2}))}), "invalid Poisson rate, expected rate to be non-negative");
    EXPECT_EQ(error_of("ember.poisson", {of(ember::ones({2}, ember::kLong))}), "\"poisson_cpu\" not implemented for 'Long'");

    const Tensor r = call1("ember.randint", {Value::integer(3), Value::integer(7), ints({1000})});
    EXPECT_EQ(r.scalar_type(), ember::kLong);
    EXPECT_EQ(r.min().item<int64_t>(), 3);
    EXPECT_EQ(r.max().item<int64_t>(), 6);
    const Tensor r2 = call1("ember.randint", {Value::integer(5), ints({2, 3})}, {{"dtype", Value::of_dtype(ember::kFloat)}});
    EXPECT_EQ(r2.sizes(), ember::IntArrayRef({2, 3}));
    EXPECT_EQ(r2.scalar_type(), ember::kFloat);
    const Tensor r3 = call1("ember.randint", {}, {{"high", Value::integer(2)}, {"size", ints({4})}});
    EXPECT_EQ(r3.sizes(), ember::IntArrayRef({4}));
    EXPECT_EQ(error_of("ember.randint", {Value::integer(5), Value::integer(5), ints({2})}),
              "random_ expects 'from' to be less than 'to', but got from=5 >= to=5");
    EXPECT_EQ(error_of("ember.randint", {Value::integer(0), Value::integer(3), ints({2})}, {{"dtype", Value::of_dtype(ember::kBool)}}),
              "to - 1 is out of bounds for bool");

    const Tensor perm = call1("ember.randperm", {Value::integer(50)});
    EXPECT_TRUE(ember::equal(std::get<0>(perm.sort()), ember::arange(50)));
    EXPECT_EQ(error_of("ember.randperm", {Value::integer(-1)}), "Trying to create tensor with negative dimension -1: [-1]");

    const Tensor e = call1("ember.empty_strided", {ints({2, 3}), ints({1, 2})});
    EXPECT_EQ(e.strides(), ember::IntArrayRef({1, 2}));
    EXPECT_EQ(error_of("ember.empty_strided", {ints({2, 3}), ints({1})}), "mismatch in length of strides and shape");
    EXPECT_EQ(error_of("ember.empty_strided", {ints({2, -3}), ints({1, 2})}),
              "Trying to create tensor with negative dimension -3: [2, -3]");
    EXPECT_EQ(error_of("ember.logspace", {Value::integer(0), Value::integer(1), Value::integer(-1)}),
              "number of steps must be non-negative");
    EXPECT_EQ(error_of("ember.range", {Value::integer(1), Value::integer(2), Value::integer(0)}), "step must be nonzero");
    EXPECT_EQ(error_of("ember.range", {Value::integer(1), Value::integer(2), Value::integer(-1)}),
              "upper bound and lower bound inconsistent with step sign");
}

// ldl_factor / ldl_solve (the golden program compares values): A = P L D L^T P^T solves,
// and PyTorch's errors.
TEST(MoreOps2, LdlFactorAndSolve) {
    ember::manual_seed(3);
    Tensor m = ember::randn({5, 5}, ember::kDouble);
    Tensor a = m + m.t();
    std::vector<Tensor> f = call("linalg.ldl_factor", {of(a)});
    Tensor b = ember::randn({5, 2}, ember::kDouble);
    Tensor x = call1("linalg.ldl_solve", {of(f[0]), of(f[1]), of(b)});
    EXPECT_LT(max_diff(ember::matmul(a, x), b), 1e-10);
    EXPECT_EQ(f[1].scalar_type(), ember::kInt);
    EXPECT_EQ(error_of("linalg.ldl_factor", {of(ember::zeros({2, 2}, ember::kDouble))}),
              "torch.linalg.ldl_factor: The factorization could not be completed because the block diagonal matrix D is "
              "singular (D[1,1] is zero).");
    std::vector<Tensor> ex = call("linalg.ldl_factor_ex", {of(ember::zeros({2, 2, 2}, ember::kDouble))});
    EXPECT_TRUE(ember::equal(ex[2], ember::tensor({1, 1}).to(ember::kInt)));
    EXPECT_EQ(error_of("linalg.ldl_factor", {of(ember::zeros({2, 2}, ember::kLong))}),
              "torch.linalg.ldl_factor_ex: Expected a floating point or complex tensor as input. Got Long");
    EXPECT_EQ(error_of("linalg.ldl_factor", {of(ember::zeros({2, 2}, ember::kHalf))}),
              "\"ldl_factor_kernel_cpu\" not implemented for 'Half'");
    EXPECT_EQ(error_of("linalg.ldl_solve", {of(f[0]), of(f[1]), of(ember::ones({5}, ember::kDouble))}),
              "Dimension out of range (expected to be in range of [-1, 0], but got -2)");
    EXPECT_EQ(error_of("linalg.ldl_solve", {of(f[0]), of(f[1].to(ember::kFloat)), of(b)}),
              "torch.linalg.ldl_solve: Expected pivots to be integers. Got Float");
    EXPECT_EQ(error_of("linalg.ldl_solve", {of(f[0]), of(f[1].narrow(0, 0, 2)), of(b)}),
              "torch.linalg.ldl_solve: Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots with shape [2] "
              "instead");
    EXPECT_EQ(error_of("linalg.ldl_solve", {of(f[0]), of(f[1]), of(ember::ones({2, 1}, ember::kDouble))}),
              "Incompatible matrix sizes for torch.linalg.ldl_solve: each A matrix is 5 by 5 but each b matrix is 2 by 1");
    EXPECT_EQ(error_of("linalg.ldl_solve", {of(f[0]), of(f[1]), of(b.to(ember::kFloat))}),
              "Expected b and A to have the same dtype, but found b of type Float and A of type Double instead.");
}

TEST(MoreOps2, HistogramddAndRandomOps) {
    // histogramdd: (hist, edges...) ; the points on the grid's corners land in its corner bins
    Tensor pts = ember::tensor({{0.0, 0.0}, {1.0, 1.0}, {0.0, 1.0}, {0.4, 0.6}});
    std::vector<Tensor> h = call("histogramdd", {of(pts), Value::integer(2)});
    ASSERT_EQ(h.size(), 3u);
    EXPECT_TRUE(ember::equal(h[0], ember::tensor({{1.0f, 2.0f}, {0.0f, 1.0f}}).to(ember::kDouble)));
    EXPECT_EQ(h[1].numel(), 3);
    // the random ops draw from Ember C++'s generator: their distributions, not Python's numbers
    ember::manual_seed(6);
    Tensor p = ember::full({2000}, 0.25, ember::kDouble);
    const double mean = call1("bernoulli", {of(p)}).mean().item<double>();
    EXPECT_NEAR(mean, 0.25, 0.05);
    Tensor counts = call1("binomial", {of(ember::full({200}, 10.0)), of(ember::full({200}, 0.5))});
    EXPECT_NEAR(counts.mean().item<double>(), 5.0, 0.6);
    EXPECT_LE(counts.max().item<double>(), 10.0);
    Tensor soft = call1("gumbel_softmax", {of(ember::randn({3, 5}))});
    EXPECT_LT(max_diff(soft.sum(std::vector<int64_t>{1}), ember::ones({3})), 1e-6);
    Tensor hard = call1("gumbel_softmax", {of(ember::randn({3, 5}))}, {{"hard", Value::boolean(true)}});
    EXPECT_EQ(max_diff(hard.sum(std::vector<int64_t>{1}), ember::ones({3})), 0);
    EXPECT_NE(error_of("bernoulli", {of(p)}, {{"generator", Value::integer(0)}}).find("generator"), std::string::npos);
}

}  // namespace
