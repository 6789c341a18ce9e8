// Finite-difference gradient checks (float64) for every differentiable op, and
// second-order checks (create_graph) for a selection.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "common/gradcheck.h"
#include "ember/autograd.h"
#include "ember/tensor.h"

namespace {

using namespace ember;
using ember::testing::gradcheck;
using ember::testing::gradgradcheck;
using In = std::vector<Tensor>;

Generator& gen() {
    static Generator g(42);
    return g;
}
Tensor rnd(IntArrayRef shape) { return randn(shape, gen(), kDouble); }
// values in [lo, hi)
Tensor uni(IntArrayRef shape, double lo, double hi) { return rand(shape, gen(), kDouble) * (hi - lo) + lo; }
// random values kept at least `gap` away from 0 (for kinks at 0)
Tensor away(IntArrayRef shape, double gap = 0.2) {
    Tensor r = rnd(shape);
    return r + r.sign() * gap;
}
// distinct values (no ties for max/sort)
Tensor distinct(IntArrayRef shape) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    Tensor perm = randperm(n, gen(), kLong).to(kDouble);
    return (perm * 0.37 - static_cast<double>(n) * 0.15).reshape(shape);
}

struct Case {
    std::string name;
    std::function<Tensor(const In&)> fn;
    In inputs;
};

std::vector<Case> cases() {
    const Tensor idx2 = tensor({{2, 0}, {1, 1}, {0, 2}});
    return {
        // unary
        {"neg", [](const In& x) { return -x[0]; }, {rnd({3, 4})}},
        {"abs", [](const In& x) { return x[0].abs(); }, {away({3, 4})}},
        {"exp", [](const In& x) { return x[0].exp(); }, {rnd({3, 4})}},
        {"exp2", [](const In& x) { return x[0].exp2(); }, {rnd({3, 4})}},
        {"log", [](const In& x) { return x[0].log(); }, {uni({3, 4}, 0.5, 2)}},
        {"log2", [](const In& x) { return x[0].log2(); }, {uni({3, 4}, 0.5, 2)}},
        {"log10", [](const In& x) { return x[0].log10(); }, {uni({3, 4}, 0.5, 2)}},
        {"log1p", [](const In& x) { return x[0].log1p(); }, {uni({3, 4}, -0.5, 2)}},
        {"expm1", [](const In& x) { return x[0].expm1(); }, {rnd({3, 4})}},
        {"sqrt", [](const In& x) { return x[0].sqrt(); }, {uni({3, 4}, 0.5, 2)}},
        {"rsqrt", [](const In& x) { return x[0].rsqrt(); }, {uni({3, 4}, 0.5, 2)}},
        {"sin", [](const In& x) { return x[0].sin(); }, {rnd({3, 4})}},
        {"cos", [](const In& x) { return x[0].cos(); }, {rnd({3, 4})}},
        {"tan", [](const In& x) { return x[0].tan(); }, {uni({3, 4}, -1, 1)}},
        {"tanh", [](const In& x) { return x[0].tanh(); }, {rnd({3, 4})}},
        {"sigmoid", [](const In& x) { return x[0].sigmoid(); }, {rnd({3, 4})}},
        {"relu", [](const In& x) { return x[0].relu(); }, {away({3, 4})}},
        {"gelu", [](const In& x) { return gelu(x[0]); }, {rnd({3, 4})}},
        {"gelu_tanh", [](const In& x) { return gelu(x[0], "tanh"); }, {rnd({3, 4})}},
        {"silu", [](const In& x) { return silu(x[0]); }, {rnd({3, 4})}},
        {"erf", [](const In& x) { return x[0].erf(); }, {rnd({3, 4})}},
        {"reciprocal", [](const In& x) { return x[0].reciprocal(); }, {uni({3, 4}, 0.5, 2)}},
        {"square", [](const In& x) { return x[0].square(); }, {rnd({3, 4})}},
        {"floor", [](const In& x) { return x[0].floor() + x[0]; }, {uni({3, 4}, 0.1, 0.9)}},
        {"ceil", [](const In& x) { return x[0].ceil() * x[0]; }, {uni({3, 4}, 0.1, 0.9)}},
        {"round", [](const In& x) { return x[0].round() + x[0]; }, {uni({3, 4}, 0.1, 0.4)}},
        {"trunc", [](const In& x) { return x[0].trunc() + x[0]; }, {uni({3, 4}, 0.1, 0.9)}},
        {"sign", [](const In& x) { return x[0].sign() * x[0]; }, {away({3, 4})}},
        // binary, with broadcasting
        {"add", [](const In& x) { return x[0] + x[1]; }, {rnd({3, 4}), rnd({4})}},
        {"add_alpha", [](const In& x) { return x[0].add(x[1], 2.5); }, {rnd({3, 1}), rnd({1, 4})}},
        {"add_scalar", [](const In& x) { return x[0] + 3; }, {rnd({3, 4})}},
        {"sub", [](const In& x) { return x[0] - x[1]; }, {rnd({3, 4}), rnd({3, 1})}},
        {"sub_alpha", [](const In& x) { return x[0].sub(x[1], 0.5); }, {rnd({3, 4}), rnd({3, 4})}},
        {"rsub", [](const In& x) { return 2 - x[0]; }, {rnd({3, 4})}},
        {"mul", [](const In& x) { return x[0] * x[1]; }, {rnd({2, 3, 4}), rnd({3, 1})}},
        {"mul_scalar", [](const In& x) { return x[0] * 1.5; }, {rnd({3, 4})}},
        {"div", [](const In& x) { return x[0] / x[1]; }, {rnd({3, 4}), uni({4}, 0.5, 2)}},
        {"div_scalar", [](const In& x) { return x[0] / 4; }, {rnd({3, 4})}},
        {"rdiv", [](const In& x) { return 2 / x[0]; }, {uni({3, 4}, 0.5, 2)}},
        {"div_floor", [](const In& x) { return x[0].div(x[1], "floor") + x[0]; }, {uni({3}, 0.1, 0.9), uni({3}, 2, 3)}},
        {"pow_scalar", [](const In& x) { return x[0].pow(3); }, {rnd({3, 4})}},
        {"pow_frac", [](const In& x) { return x[0].pow(1.7); }, {uni({3, 4}, 0.5, 2)}},
        {"pow_tensor", [](const In& x) { return x[0].pow(x[1]); }, {uni({3, 4}, 0.5, 2), rnd({3, 4})}},
        {"rpow", [](const In& x) { return pow(2.0, x[0]); }, {rnd({3, 4})}},
        {"maximum", [](const In& x) { return maximum(x[0], x[1]); }, {distinct({3, 4}), distinct({3, 4}) + 0.1}},
        {"minimum", [](const In& x) { return minimum(x[0], x[1]); }, {distinct({3, 4}), distinct({4}) + 0.1}},
        {"remainder", [](const In& x) { return x[0].remainder(x[1]); }, {uni({3, 4}, 0.1, 0.9), uni({3, 4}, 1.5, 2)}},
        {"fmod", [](const In& x) { return x[0].fmod(x[1]); }, {uni({3, 4}, 2.1, 2.9), uni({3, 4}, 1.5, 2)}},
        {"lerp", [](const In& x) { return x[0].lerp(x[1], 0.3); }, {rnd({3, 4}), rnd({3, 4})}},
        {"lerp_tensor", [](const In& x) { return x[0].lerp(x[1], x[2]); }, {rnd({3, 4}), rnd({3, 4}), rnd({3, 4})}},
        {"clamp", [](const In& x) { return x[0].clamp(-0.5, 0.5); }, {distinct({3, 4}) * 0.3 + 0.05}},
        {"clamp_min", [](const In& x) { return x[0].clamp_min(0.1); }, {distinct({3, 4}) * 0.3 + 0.05}},
        {"clamp_max", [](const In& x) { return x[0].clamp_max(0.1); }, {distinct({3, 4}) * 0.3 + 0.05}},
        {"clamp_tensor",
         [](const In& x) { return x[0].clamp(std::optional<Tensor>(x[1]), std::optional<Tensor>(x[1] + 1)); },
         {distinct({3, 4}) * 0.3, distinct({3, 4}) * 0.3 + 0.05}},
        {"where", [](const In& x) { return where(x[0] > 0, x[0], x[1]); }, {away({3, 4}), rnd({4})}},
        {"masked_fill", [](const In& x) { return x[0].masked_fill(x[0] > 0, 2.0); }, {away({3, 4})}},
        {"masked_fill_tensor", [](const In& x) { return x[0].masked_fill(x[0] > 0, x[1]); }, {away({3, 4}), rnd({})}},
        // reductions
        {"sum", [](const In& x) { return x[0].sum(); }, {rnd({3, 4})}},
        {"sum_dim", [](const In& x) { return x[0].sum({0, 2}); }, {rnd({2, 3, 4})}},
        {"sum_keepdim", [](const In& x) { return x[0].sum(1, true); }, {rnd({2, 3, 4})}},
        {"mean", [](const In& x) { return x[0].mean(); }, {rnd({3, 4})}},
        {"mean_dim", [](const In& x) { return x[0].mean({-1}); }, {rnd({3, 4})}},
        {"prod", [](const In& x) { return x[0].prod(); }, {uni({2, 3}, 0.5, 1.5)}},
        {"prod_dim", [](const In& x) { return x[0].prod(1); }, {uni({2, 3}, 0.5, 1.5)}},
        {"prod_with_zero", [](const In& x) { return x[0].prod(1) + (x[0] * 0).sum(); }, {tensor({{0.0, 2.0, 3.0}, {1.5, 0.5, 0.0}}, kDouble)}},
        {"max", [](const In& x) { return x[0].max(); }, {distinct({3, 4})}},
        {"min", [](const In& x) { return x[0].min(); }, {distinct({3, 4})}},
        {"max_dim", [](const In& x) { return std::get<0>(x[0].max(1)); }, {distinct({3, 4})}},
        {"min_dim_keep", [](const In& x) { return std::get<0>(x[0].min(0, true)); }, {distinct({3, 4})}},
        {"amax", [](const In& x) { return x[0].amax({1}); }, {distinct({3, 4})}},
        {"amin", [](const In& x) { return x[0].amin({0, 1}); }, {distinct({3, 4})}},
        {"var", [](const In& x) { return x[0].var(); }, {rnd({3, 4})}},
        {"var_dim", [](const In& x) { return x[0].var({1}, false, true); }, {rnd({3, 4})}},
        {"std", [](const In& x) { return x[0].std(); }, {rnd({3, 4})}},
        {"std_dim", [](const In& x) { return x[0].std({0}, Scalar(2)); }, {rnd({4, 3})}},
        {"norm", [](const In& x) { return x[0].norm(); }, {rnd({3, 4})}},
        {"norm1", [](const In& x) { return x[0].norm(1, {1}); }, {away({3, 4})}},
        {"norm3", [](const In& x) { return x[0].norm(3, {0}, true); }, {away({3, 4})}},
        {"norm_inf", [](const In& x) { return x[0].norm(INFINITY); }, {distinct({3, 4})}},
        {"logsumexp", [](const In& x) { return x[0].logsumexp({1}); }, {rnd({3, 4})}},
        {"cumsum", [](const In& x) { return x[0].cumsum(1); }, {rnd({3, 4})}},
        {"softmax", [](const In& x) { return x[0].softmax(1); }, {rnd({3, 4})}},
        {"softmax0", [](const In& x) { return x[0].softmax(0); }, {rnd({3, 4})}},
        {"log_softmax", [](const In& x) { return x[0].log_softmax(-1); }, {rnd({3, 4})}},
        // shape ops
        {"view", [](const In& x) { return x[0].view({4, 3}) * 2; }, {rnd({3, 4})}},
        {"reshape_copy", [](const In& x) { return x[0].t().reshape({12}); }, {rnd({3, 4})}},
        {"permute", [](const In& x) { return x[0].permute({2, 0, 1}); }, {rnd({2, 3, 4})}},
        {"transpose", [](const In& x) { return x[0].transpose(0, 2); }, {rnd({2, 3, 4})}},
        {"t", [](const In& x) { return x[0].t(); }, {rnd({3, 4})}},
        {"unsqueeze", [](const In& x) { return x[0].unsqueeze(1); }, {rnd({3, 4})}},
        {"squeeze", [](const In& x) { return x[0].squeeze(); }, {rnd({3, 1, 4})}},
        {"squeeze_dim", [](const In& x) { return x[0].squeeze(1); }, {rnd({3, 1, 4})}},
        {"flatten", [](const In& x) { return x[0].flatten(1); }, {rnd({2, 3, 4})}},
        {"unflatten", [](const In& x) { return x[0].unflatten(1, {2, 2}); }, {rnd({3, 4})}},
        {"expand", [](const In& x) { return x[0].expand({2, 3, 4}); }, {rnd({3, 1})}},
        {"narrow", [](const In& x) { return x[0].narrow(1, 1, 2); }, {rnd({3, 4})}},
        {"select", [](const In& x) { return x[0].select(1, -1); }, {rnd({3, 4})}},
        {"slice_step", [](const In& x) { return x[0].slice(1, 0, 4, 2); }, {rnd({3, 4})}},
        {"chunk", [](const In& x) { auto c = x[0].chunk(2, 1); return c[0] * 2 + c[1]; }, {rnd({3, 4})}},
        {"split_sizes", [](const In& x) { auto c = x[0].split({1, 3}, 1); return c[1].sum(1) * c[0].squeeze(1); }, {rnd({3, 4})}},
        {"split_unused", [](const In& x) { return x[0].split(2, 0)[1]; }, {rnd({3, 4})}},
        {"unbind", [](const In& x) { auto u = x[0].unbind(1); return u[0] * u[3]; }, {rnd({3, 4})}},
        {"diagonal", [](const In& x) { return x[0].diagonal(1); }, {rnd({3, 4})}},
        {"as_strided", [](const In& x) { return x[0].as_strided({2, 2}, {1, 2}); }, {rnd({3, 4})}},
        {"cat", [](const In& x) { return cat({x[0], x[1]}, 1); }, {rnd({3, 2}), rnd({3, 4})}},
        {"stack", [](const In& x) { return stack({x[0], x[1]}, 1); }, {rnd({3, 4}), rnd({3, 4})}},
        {"repeat", [](const In& x) { return x[0].repeat({2, 1, 3}); }, {rnd({3, 2})}},
        {"tril", [](const In& x) { return x[0].tril(); }, {rnd({3, 4})}},
        {"triu", [](const In& x) { return x[0].triu(1); }, {rnd({3, 4})}},
        {"flip", [](const In& x) { return x[0].flip({0, 1}); }, {rnd({3, 4})}},
        {"contiguous", [](const In& x) { return x[0].t().contiguous(); }, {rnd({3, 4})}},
        {"clone", [](const In& x) { return x[0].clone(); }, {rnd({3, 4})}},
        // indexing
        {"index_select", [](const In& x) { return x[0].index_select(0, tensor({2, 0, 2})); }, {rnd({3, 4})}},
        {"gather", [idx2](const In& x) { return x[0].gather(1, idx2); }, {rnd({3, 4})}},
        {"scatter", [idx2](const In& x) { return x[0].scatter(1, idx2.narrow(1, 0, 1), x[1]); }, {rnd({3, 4}), rnd({3, 1})}},
        {"scatter_value", [idx2](const In& x) { return x[0].scatter(1, idx2, 1.5); }, {rnd({3, 4})}},
        {"scatter_add", [idx2](const In& x) { return x[0].scatter_add(1, idx2, x[1]); }, {rnd({3, 4}), rnd({3, 2})}},
        {"index_add", [](const In& x) { return x[0].index_add(0, tensor({2, 0, 2}), x[1], 0.5); }, {rnd({3, 4}), rnd({3, 4})}},
        {"index_tensor", [](const In& x) { return x[0].index({tensor({2, 0, 2})}); }, {rnd({3, 4})}},
        {"index_mixed",
         [](const In& x) { return x[0].index({indexing::Slice(1), tensor({0, 2}), indexing::None}); }, {rnd({3, 4})}},
        {"index_mask", [](const In& x) { return x[0].index({x[0] > 0}); }, {away({3, 4})}},
        {"index_put", [](const In& x) { return x[0].index_put({tensor({0, 2})}, x[1]); }, {rnd({3, 4}), rnd({4})}},
        {"index_put_acc", [](const In& x) { return x[0].index_put({tensor({0, 0})}, x[1], true); }, {rnd({3, 4}), rnd({2, 4})}},
        {"masked_select", [](const In& x) { return x[0].masked_select(x[0] > 0); }, {away({3, 4})}},
        // linear algebra
        {"mm", [](const In& x) { return x[0].mm(x[1]); }, {rnd({3, 4}), rnd({4, 2})}},
        {"mm_transposed", [](const In& x) { return x[0].t().mm(x[1].t()); }, {rnd({4, 3}), rnd({2, 4})}},
        {"bmm", [](const In& x) { return x[0].bmm(x[1]); }, {rnd({2, 3, 4}), rnd({2, 4, 2})}},
        {"mv", [](const In& x) { return x[0].mv(x[1]); }, {rnd({3, 4}), rnd({4})}},
        {"dot", [](const In& x) { return x[0].dot(x[1]); }, {rnd({4}), rnd({4})}},
        {"outer", [](const In& x) { return x[0].outer(x[1]); }, {rnd({3}), rnd({4})}},
        {"addmm", [](const In& x) { return addmm(x[0], x[1], x[2], 0.5, 2); }, {rnd({2}), rnd({3, 4}), rnd({4, 2})}},
        {"matmul_1d_2d", [](const In& x) { return x[0].matmul(x[1]); }, {rnd({4}), rnd({4, 2})}},
        {"matmul_3d_2d", [](const In& x) { return x[0].matmul(x[1]); }, {rnd({2, 3, 4}), rnd({4, 2})}},
        {"matmul_batched", [](const In& x) { return x[0].matmul(x[1]); }, {rnd({2, 1, 3, 4}), rnd({3, 4, 2})}},
        {"matmul_2d_3d", [](const In& x) { return x[0].matmul(x[1]); }, {rnd({3, 4}), rnd({2, 4, 2})}},
        {"linear", [](const In& x) { return linear(x[0], x[1], x[2]); }, {rnd({3, 4}), rnd({2, 4}), rnd({2})}},
        {"linear_3d", [](const In& x) { return linear(x[0], x[1], x[2]); }, {rnd({2, 3, 4}), rnd({2, 4}), rnd({2})}},
        {"linear_nobias", [](const In& x) { return linear(x[0], x[1]); }, {rnd({3, 4}), rnd({2, 4})}},
        // convolution and pooling
        {"conv2d", [](const In& x) { return conv2d(x[0], x[1], x[2], {2, 1}, 1, 1, 1); }, {rnd({2, 2, 5, 4}), rnd({3, 2, 3, 2}), rnd({3})}},
        {"conv2d_groups_dilation", [](const In& x) { return conv2d(x[0], x[1], {}, 1, {1, 2}, 2, 2); },
         {rnd({1, 4, 5, 5}), rnd({2, 2, 2, 2})}},
        {"conv1d", [](const In& x) { return conv1d(x[0], x[1], x[2], 2, 1); }, {rnd({2, 3, 7}), rnd({2, 3, 3}), rnd({2})}},
        {"im2col", [](const In& x) { return im2col(x[0], {2, 3}, {1, 1}, {1, 0}, {2, 1}); }, {rnd({2, 2, 4, 5})}},
        {"col2im", [](const In& x) { return col2im(x[0], {4, 4}, {2, 2}, {1, 1}, {0, 0}, {1, 1}); }, {rnd({1, 8, 9})}},
        {"max_pool2d", [](const In& x) { return max_pool2d(x[0], {2, 2}, {1, 1}, {1, 1}); }, {distinct({2, 2, 4, 4})}},
        {"avg_pool2d", [](const In& x) { return avg_pool2d(x[0], {3, 3}, {2, 2}, {1, 1}, true, false); }, {rnd({2, 2, 5, 5})}},
        {"adaptive_avg_pool2d", [](const In& x) { return adaptive_avg_pool2d(x[0], {3, 2}); }, {rnd({2, 2, 5, 5})}},
        {"adaptive_avg_pool2d_1", [](const In& x) { return adaptive_avg_pool2d(x[0], {1, 1}); }, {rnd({2, 2, 3, 3})}},
        // sorting
        {"topk", [](const In& x) { return std::get<0>(x[0].topk(2, 1)); }, {distinct({3, 4})}},
        {"kthvalue", [](const In& x) { return std::get<0>(kthvalue(x[0], 2, 1)); }, {distinct({3, 4})}},
        {"mode", [](const In& x) { return std::get<0>(x[0].mode(0, true)); }, {distinct({3, 4})}},
        {"median.dim", [](const In& x) { return std::get<0>(median(x[0], 1)); }, {distinct({3, 4})}},
        {"nanmedian.dim", [](const In& x) { return std::get<0>(x[0].nanmedian(0)); }, {distinct({3, 4})}},
        {"median", [](const In& x) { return x[0].median(); }, {distinct({3, 4})}},
        {"nanmedian", [](const In& x) { return nanmedian(x[0]); }, {distinct({3, 5})}},
        {"sort", [](const In& x) { return std::get<0>(x[0].sort(0, true)); }, {distinct({3, 4})}},
    };
}

TEST(Gradcheck, EveryDifferentiableOp) {
    for (const Case& c : cases()) {
        SCOPED_TRACE(c.name);
        try {
            EXPECT_TRUE(gradcheck(c.fn, c.inputs)) << c.name;
        } catch (const std::exception& e) {
            ADD_FAILURE() << c.name << ": " << e.what();
        }
    }
}

TEST(Gradcheck, SecondOrder) {
    const std::vector<std::string> names = {"exp",     "log",      "tanh",  "sigmoid", "gelu",   "silu",
                                            "mul",     "div",      "pow_scalar", "pow_tensor", "softmax",
                                            "log_softmax", "logsumexp", "mm",  "addmm",   "sum_dim", "var",
                                            "norm",    "index_select", "select", "narrow", "cat", "matmul_batched",
                                            "maximum", "where",    "expand", "gather", "std", "prod", "sqrt", "conv2d",
                                            "conv2d_groups_dilation", "max_pool2d", "avg_pool2d", "im2col", "col2im"};
    for (const Case& c : cases()) {
        if (std::find(names.begin(), names.end(), c.name) == names.end()) continue;
        SCOPED_TRACE(c.name);
        try {
            EXPECT_TRUE(gradgradcheck(c.fn, c.inputs)) << c.name;
        } catch (const std::exception& e) {
            ADD_FAILURE() << c.name << ": " << e.what();
        }
    }
}

}  // namespace
