// Forward values of the ops against Python Ember. The expected numbers were computed by
// running the same expressions with Python Ember (ember 0.1, float32 inputs) and pasted here.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "common/error_of.h"
#include "ember/autograd.h"
#include "ember/tensor.h"

namespace {

using namespace ember;
using ember::testing::error_of;

struct In {
    Tensor X = tensor({{0.5, -1.25, 2.0}, {1.5, 0.25, -0.75}});
    Tensor Y = tensor({{1.0, 2.0, -0.5}, {0.75, -1.5, 3.0}});
    Tensor P = tensor({{0.5, 1.25, 2.0}, {1.5, 0.25, 0.75}});
    Tensor V = tensor({1.0, -2.0, 0.5});
    Tensor I = tensor({{7, -7, 5}, {-3, 4, 9}});
    Tensor J = tensor({{2, 2, -3}, {2, -3, 4}});
};

struct OpCase {
    const char* name;
    std::function<Tensor(const In&)> fn;
    std::vector<int64_t> shape;
    std::vector<double> values;
    ScalarType dtype;
};

#define EMBER_UNPAREN(...) __VA_ARGS__
#define OP_CASE(name, expr, shape, values, dtype)                                                   \
    OpCase {                                                                                        \
        name,                                                                                       \
            [](const In& in) -> Tensor {                                                            \
                const Tensor &X = in.X, &Y = in.Y, &P = in.P, &V = in.V, &I = in.I, &J = in.J;      \
                (void)X, (void)Y, (void)P, (void)V, (void)I, (void)J;                               \
                return expr;                                                                        \
            },                                                                                      \
            std::vector<int64_t> EMBER_UNPAREN shape, std::vector<double> EMBER_UNPAREN values, dtype \
    }

const OpCase kOpCases[] = {
    OP_CASE("exp", X.exp(), ({2, 3}), ({1.6487212181091309, 0.2865047752857208, 7.3890557289123535, 4.481688976287842, 1.2840255498886108, 0.4723665416240692}), kFloat),
    OP_CASE("log", P.log(), ({2, 3}), ({-0.6931471824645996, 0.2231435477733612, 0.6931471824645996, 0.40546509623527527, -1.3862943649291992, -0.28768208622932434}), kFloat),
    OP_CASE("log2", P.log2(), ({2, 3}), ({-1.0, 0.32192808389663696, 1.0, 0.5849624872207642, -2.0, -0.41503751277923584}), kFloat),
    OP_CASE("log10", P.log10(), ({2, 3}), ({-0.3010300099849701, 0.0969100147485733, 0.3010300099849701, 0.176091268658638, -0.6020600199699402, -0.12493874132633209}), kFloat),
    OP_CASE("log1p", P.log1p(), ({2, 3}), ({0.40546512603759766, 0.8109301924705505, 1.0986123085021973, 0.9162907600402832, 0.2231435626745224, 0.5596157908439636}), kFloat),
    OP_CASE("expm1", X.expm1(), ({2, 3}), ({0.6487212777137756, -0.7134951949119568, 6.389056205749512, 3.481688976287842, 0.2840254306793213, -0.5276334285736084}), kFloat),
    OP_CASE("exp2", X.exp2(), ({2, 3}), ({1.4142135381698608, 0.4204482138156891, 4.0, 2.8284270763397217, 1.1892070770263672, 0.5946035385131836}), kFloat),
    OP_CASE("sqrt", P.sqrt(), ({2, 3}), ({0.7071067690849304, 1.1180340051651, 1.4142135381698608, 1.2247449159622192, 0.5, 0.8660253882408142}), kFloat),
    OP_CASE("rsqrt", P.rsqrt(), ({2, 3}), ({1.4142135381698608, 0.8944271802902222, 0.7071067690849304, 0.8164965510368347, 2.0, 1.154700517654419}), kFloat),
    OP_CASE("sin", X.sin(), ({2, 3}), ({0.4794255495071411, -0.9489846229553223, 0.9092974066734314, 0.9974949955940247, 0.24740396440029144, -0.681638777256012}), kFloat),
    OP_CASE("cos", X.cos(), ({2, 3}), ({0.8775825500488281, 0.3153223693370819, -0.41614681482315063, 0.07073719799518585, 0.9689124226570129, 0.7316888570785522}), kFloat),
    OP_CASE("tan", X.tan(), ({2, 3}), ({0.5463024973869324, -3.0095696449279785, -2.18503999710083, 14.101420402526855, 0.25534191727638245, -0.9315964579582214}), kFloat),
    OP_CASE("tanh", X.tanh(), ({2, 3}), ({0.46211719512939453, -0.8482836484909058, 0.9640275835990906, 0.9051482081413269, 0.24491865932941437, -0.6351490020751953}), kFloat),
    OP_CASE("sigmoid", X.sigmoid(), ({2, 3}), ({0.622459352016449, 0.22270013391971588, 0.8807970285415649, 0.8175745010375977, 0.562176525592804, 0.32082128524780273}), kFloat),
    OP_CASE("relu", X.relu(), ({2, 3}), ({0.5, 0.0, 2.0, 1.5, 0.25, 0.0}), kFloat),
    OP_CASE("gelu", ember::gelu(X), ({2, 3}), ({0.3457311987876892, -0.13206231594085693, 1.9544999599456787, 1.3997890949249268, 0.14967657625675201, -0.16997042298316956}), kFloat),
    OP_CASE("gelu_tanh", ember::gelu(X, "tanh"), ({2, 3}), ({0.3457140326499939, -0.13228577375411987, 1.9545977115631104, 1.3995716571807861, 0.14967535436153412, -0.17003944516181946}), kFloat),
    OP_CASE("silu", ember::silu(X), ({2, 3}), ({0.3112296760082245, -0.27837517857551575, 1.7615940570831299, 1.2263617515563965, 0.140544131398201, -0.24061596393585205}), kFloat),
    OP_CASE("erf", X.erf(), ({2, 3}), ({0.5204998850822449, -0.9229001402854919, 0.9953222870826721, 0.9661051630973816, 0.27632638812065125, -0.7111556529998779}), kFloat),
    OP_CASE("floor", (X * 1.5).floor(), ({2, 3}), ({0.0, -2.0, 3.0, 2.0, 0.0, -2.0}), kFloat),
    OP_CASE("ceil", (X * 1.5).ceil(), ({2, 3}), ({1.0, -1.0, 3.0, 3.0, 1.0, -1.0}), kFloat),
    OP_CASE("round", (X * 3).round(), ({2, 3}), ({2.0, -4.0, 6.0, 4.0, 1.0, -2.0}), kFloat),
    OP_CASE("trunc", (X * 1.5).trunc(), ({2, 3}), ({0.0, -1.0, 3.0, 2.0, 0.0, -1.0}), kFloat),
    OP_CASE("sign", X.sign(), ({2, 3}), ({1.0, -1.0, 1.0, 1.0, 1.0, -1.0}), kFloat),
    OP_CASE("reciprocal", X.reciprocal(), ({2, 3}), ({2.0, -0.800000011920929, 0.5, 0.6666666865348816, 4.0, -1.3333333730697632}), kFloat),
    OP_CASE("square", X.square(), ({2, 3}), ({0.25, 1.5625, 4.0, 2.25, 0.0625, 0.5625}), kFloat),
    OP_CASE("abs", X.abs(), ({2, 3}), ({0.5, 1.25, 2.0, 1.5, 0.25, 0.75}), kFloat),
    OP_CASE("neg", -X, ({2, 3}), ({-0.5, 1.25, -2.0, -1.5, -0.25, 0.75}), kFloat),
    OP_CASE("add", X + Y, ({2, 3}), ({1.5, 0.75, 1.5, 2.25, -1.25, 2.25}), kFloat),
    OP_CASE("add_alpha", X.add(Y, 2.5), ({2, 3}), ({3.0, 3.75, 0.75, 3.375, -3.5, 6.75}), kFloat),
    OP_CASE("sub", X - Y, ({2, 3}), ({-0.5, -3.25, 2.5, 0.75, 1.75, -3.75}), kFloat),
    OP_CASE("mul", X * Y, ({2, 3}), ({0.5, -2.5, -1.0, 1.125, -0.375, -2.25}), kFloat),
    OP_CASE("div", X / Y, ({2, 3}), ({0.5, -0.625, -4.0, 2.0, -0.1666666716337204, -0.25}), kFloat),
    OP_CASE("rsub_scalar", 2 - X, ({2, 3}), ({1.5, 3.25, 0.0, 0.5, 1.75, 2.75}), kFloat),
    OP_CASE("rdiv_scalar", 2 / X, ({2, 3}), ({4.0, -1.600000023841858, 1.0, 1.3333333730697632, 8.0, -2.6666667461395264}), kFloat),
    OP_CASE("add_bcast", X + V, ({2, 3}), ({1.5, -3.25, 2.5, 2.5, -1.75, -0.25}), kFloat),
    OP_CASE("mul_col", X * V.unsqueeze(0), ({2, 3}), ({0.5, 2.5, 1.0, 1.5, -0.5, -0.375}), kFloat),
    OP_CASE("pow_scalar", X.pow(3), ({2, 3}), ({0.125, -1.953125, 8.0, 3.375, 0.015625, -0.421875}), kFloat),
    OP_CASE("pow_tensor", P.pow(Y), ({2, 3}), ({0.5, 1.5625, 0.7071067690849304, 1.3554030656814575, 8.0, 0.421875}), kFloat),
    OP_CASE("rpow", ember::pow(2.0, X), ({2, 3}), ({1.4142135381698608, 0.4204482138156891, 4.0, 2.8284270763397217, 1.1892070770263672, 0.5946035385131836}), kFloat),
    OP_CASE("maximum", ember::maximum(X, Y), ({2, 3}), ({1.0, 2.0, 2.0, 1.5, 0.25, 3.0}), kFloat),
    OP_CASE("minimum", ember::minimum(X, Y), ({2, 3}), ({0.5, -1.25, -0.5, 0.75, -1.5, -0.75}), kFloat),
    OP_CASE("remainder", X.remainder(Y), ({2, 3}), ({0.5, 0.75, -0.0, 0.0, -1.25, 2.25}), kFloat),
    OP_CASE("fmod", X.fmod(Y), ({2, 3}), ({0.5, -1.25, 0.0, 0.0, 0.25, -0.75}), kFloat),
    OP_CASE("div_floor", X.div(Y, "floor"), ({2, 3}), ({0.0, -1.0, -4.0, 2.0, -1.0, -1.0}), kFloat),
    OP_CASE("div_trunc", X.div(Y, "trunc"), ({2, 3}), ({0.0, -0.0, -4.0, 2.0, -0.0, -0.0}), kFloat),
    OP_CASE("idiv_floor", I.div(J, "floor"), ({2, 3}), ({3, -4, -2, -2, -2, 2}), kLong),
    OP_CASE("iremainder", I.remainder(J), ({2, 3}), ({1, 1, -1, 1, -2, 1}), kLong),
    OP_CASE("ifmod", I.fmod(J), ({2, 3}), ({1, -1, 2, -1, 1, 1}), kLong),
    OP_CASE("itruediv", I / J, ({2, 3}), ({3.5, -3.5, -1.6666666269302368, -1.5, -1.3333333730697632, 2.25}), kFloat),
    OP_CASE("ipow", J.abs().pow(3), ({2, 3}), ({8, 8, 27, 8, 27, 64}), kLong),
    OP_CASE("lerp", X.lerp(Y, 0.3), ({2, 3}), ({0.6499999761581421, -0.2749999761581421, 1.25, 1.274999976158142, -0.27500003576278687, 0.375}), kFloat),
    OP_CASE("lerp_t", X.lerp(Y, P), ({2, 3}), ({0.75, 2.8125, -3.0, 0.375, -0.1875, 2.0625}), kFloat),
    OP_CASE("clamp", X.clamp(-1, 1), ({2, 3}), ({0.5, -1.0, 1.0, 1.0, 0.25, -0.75}), kFloat),
    OP_CASE("clamp_min", X.clamp_min(0.3), ({2, 3}), ({0.5, 0.30000001192092896, 2.0, 1.5, 0.30000001192092896, 0.30000001192092896}), kFloat),
    OP_CASE("clamp_t", X.clamp(Y, std::optional<Tensor>(Y + 1)), ({2, 3}), ({1.0, 2.0, 0.5, 1.5, -0.5, 3.0}), kFloat),
    OP_CASE("where", ember::where(X > 0, X, Y), ({2, 3}), ({0.5, 2.0, 2.0, 1.5, 0.25, 3.0}), kFloat),
    OP_CASE("masked_fill", X.masked_fill(X < 0, 9.5), ({2, 3}), ({0.5, 9.5, 2.0, 1.5, 0.25, 9.5}), kFloat),
    OP_CASE("sum", X.sum(), ({}), ({2.25}), kFloat),
    OP_CASE("sum0", X.sum(0), ({3}), ({2.0, -1.0, 1.25}), kFloat),
    OP_CASE("sum1k", X.sum(1, true), ({2, 1}), ({1.25, 1.0}), kFloat),
    OP_CASE("mean", X.mean(), ({}), ({0.375}), kFloat),
    OP_CASE("mean1", X.mean(1), ({2}), ({0.4166666567325592, 0.3333333432674408}), kFloat),
    OP_CASE("prod", X.prod(), ({}), ({0.3515625}), kFloat),
    OP_CASE("prod1", X.prod(1), ({2}), ({-1.25, -0.28125}), kFloat),
    OP_CASE("max", X.max(), ({}), ({2.0}), kFloat),
    OP_CASE("max1v", std::get<0>(X.max(1)), ({2}), ({2.0, 1.5}), kFloat),
    OP_CASE("max1i", std::get<1>(X.max(1)), ({2}), ({2, 0}), kLong),
    OP_CASE("min0v", std::get<0>(X.min(0)), ({3}), ({0.5, -1.25, -0.75}), kFloat),
    OP_CASE("min", X.min(), ({}), ({-1.25}), kFloat),
    OP_CASE("argmax", X.argmax(), ({}), ({2}), kLong),
    OP_CASE("argmin1", X.argmin(1), ({2}), ({1, 2}), kLong),
    OP_CASE("amax0", X.amax({0}), ({3}), ({1.5, 0.25, 2.0}), kFloat),
    OP_CASE("amin1", X.amin({1}), ({2}), ({-1.25, -0.75}), kFloat),
    OP_CASE("var", X.var(), ({}), ({1.568750023841858}), kFloat),
    OP_CASE("var1", X.var({1}), ({2}), ({2.6458334922790527, 1.2708332538604736}), kFloat),
    OP_CASE("var0c0", X.var(IntArrayRef{0}, false), ({3}), ({0.25, 0.5625, 1.890625}), kFloat),
    OP_CASE("std0", X.std({0}), ({3}), ({0.7071067690849304, 1.0606601238250732, 1.9445436000823975}), kFloat),
    OP_CASE("std", X.std(), ({}), ({1.2524975538253784}), kFloat),
    OP_CASE("norm", X.norm(), ({}), ({2.9474565982818604}), kFloat),
    OP_CASE("norm1d1", X.norm(1, {1}), ({2}), ({3.75, 2.5}), kFloat),
    OP_CASE("norm3d0", X.norm(3, {0}), ({3}), ({1.5182945728302002, 1.2533245086669922, 2.0345559120178223}), kFloat),
    OP_CASE("norminf", X.norm(INFINITY), ({}), ({2.0}), kFloat),
    OP_CASE("logsumexp1", X.logsumexp({1}), ({2}), ({2.232621908187866, 1.8306726217269897}), kFloat),
    OP_CASE("cumsum1", X.cumsum(1), ({2, 3}), ({0.5, -0.75, 1.25, 1.5, 1.75, 1.0}), kFloat),
    OP_CASE("cumsum0", X.cumsum(0), ({2, 3}), ({0.5, -1.25, 2.0, 2.0, -1.0, 1.25}), kFloat),
    OP_CASE("softmax1", X.softmax(1), ({2, 3}), ({0.17682017385959625, 0.030726740136742592, 0.7924531102180481, 0.7184403538703918, 0.20583659410476685, 0.07572305202484131}), kFloat),
    OP_CASE("softmax0", X.softmax(0), ({2, 3}), ({0.26894140243530273, 0.18242552876472473, 0.9399133324623108, 0.7310585975646973, 0.8175745010375977, 0.060086652636528015}), kFloat),
    OP_CASE("log_softmax1", X.log_softmax(1), ({2, 3}), ({-1.7326220273971558, -3.482621908187866, -0.23262198269367218, -0.33067259192466736, -1.5806726217269897, -2.5806725025177}), kFloat),
    OP_CASE("log_softmax0", X.log_softmax(0), ({2, 3}), ({-1.31326162815094, -1.7014132738113403, -0.06196761131286621, -0.31326165795326233, -0.20141322910785675, -2.811967611312866}), kFloat),
    OP_CASE("mm", X.mm(Y.t()), ({2, 2}), ({-3.0, 8.25, 2.375, -1.5}), kFloat),
    OP_CASE("mmT", X.t().mm(Y), ({3, 3}), ({1.625, -1.25, 4.25, -1.0625, -2.875, 1.375, 1.4375, 5.125, -3.25}), kFloat),
    OP_CASE("matmul_mv", X.matmul(V), ({2}), ({4.0, 0.625}), kFloat),
    OP_CASE("dot", V.dot(V), ({}), ({5.25}), kFloat),
    OP_CASE("outer", V.outer(V), ({3, 3}), ({1.0, -2.0, 0.5, -2.0, 4.0, -1.0, 0.5, -1.0, 0.25}), kFloat),
    OP_CASE("addmm", ember::addmm(V, X.t(), Y, 0.5, 2), ({3, 3}), ({3.75, -3.5, 8.75, -1.625, -6.75, 3.0, 3.375, 9.25, -6.25}), kFloat),
    OP_CASE("bmm", X.view({2, 3, 1}).bmm(Y.view({2, 1, 3})), ({2, 3, 3}), ({0.5, 1.0, -0.25, -1.25, -2.5, 0.625, 2.0, 4.0, -1.0, 1.125, -2.25, 4.5, 0.1875, -0.375, 0.75, -0.5625, 1.125, -2.25}), kFloat),
    OP_CASE("matmul_b", X.view({2, 1, 3}).matmul(Y.t()), ({2, 1, 2}), ({-3.0, 8.25, 2.375, -1.5}), kFloat),
    OP_CASE("linear", ember::linear(X, Y, V.narrow(0, 0, 2)), ({2, 2}), ({-2.0, 6.25, 3.375, -3.5}), kFloat),
    OP_CASE("topk_v", std::get<0>(X.topk(2)), ({2, 2}), ({2.0, 0.5, 1.5, 0.25}), kFloat),
    OP_CASE("topk_i", std::get<1>(X.topk(2)), ({2, 2}), ({2, 0, 0, 1}), kLong),
    OP_CASE("sort0_v", std::get<0>(X.sort(0)), ({2, 3}), ({0.5, -1.25, -0.75, 1.5, 0.25, 2.0}), kFloat),
    OP_CASE("sortd_i", std::get<1>(X.sort(1, true)), ({2, 3}), ({2, 0, 1, 0, 1, 2}), kLong),
    OP_CASE("argsort", X.argsort(), ({2, 3}), ({1, 0, 2, 2, 1, 0}), kLong),
    OP_CASE("tril", X.tril(), ({2, 3}), ({0.5, 0.0, 0.0, 1.5, 0.25, 0.0}), kFloat),
    OP_CASE("triu1", X.triu(1), ({2, 3}), ({0.0, -1.25, 2.0, 0.0, 0.0, -0.75}), kFloat),
    OP_CASE("flip", X.flip({0, 1}), ({2, 3}), ({-0.75, 0.25, 1.5, 2.0, -1.25, 0.5}), kFloat),
    OP_CASE("repeat", V.repeat({2, 2}), ({2, 6}), ({1.0, -2.0, 0.5, 1.0, -2.0, 0.5, 1.0, -2.0, 0.5, 1.0, -2.0, 0.5}), kFloat),
    OP_CASE("cat1", ember::cat({X, Y}, 1), ({2, 6}), ({0.5, -1.25, 2.0, 1.0, 2.0, -0.5, 1.5, 0.25, -0.75, 0.75, -1.5, 3.0}), kFloat),
    OP_CASE("stack", ember::stack({V, V * 2}, 1), ({3, 2}), ({1.0, 2.0, -2.0, -4.0, 0.5, 1.0}), kFloat),
    OP_CASE("gather", X.gather(1, ember::tensor({{2, 0}, {1, 1}})), ({2, 2}), ({2.0, 0.5, 0.25, 0.25}), kFloat),
    OP_CASE("scatter_add", ember::zeros({2, 4}).scatter_add(1, ember::tensor({{0, 0, 3}, {1, 2, 1}}), X), ({2, 4}), ({-0.75, 0.0, 0.0, 2.0, 0.0, 0.75, 0.25, 0.0}), kFloat),
    OP_CASE("index_select", X.index_select(1, ember::tensor({2, 0, 2})), ({2, 3}), ({2.0, 0.5, 2.0, -0.75, 1.5, -0.75}), kFloat),
    OP_CASE("one_hot", ember::one_hot(ember::tensor({2, 0, 1}), 4), ({3, 4}), ({0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0}), kLong),
    OP_CASE("diagonal", X.diagonal(1), ({2}), ({-1.25, -0.75}), kFloat),
    OP_CASE("index_add", ember::zeros({3, 3}).index_add(0, ember::tensor({2, 0}), X), ({3, 3}), ({1.5, 0.25, -0.75, 0.0, 0.0, 0.0, 0.5, -1.25, 2.0}), kFloat),
    OP_CASE("masked_select", X.masked_select(X > 0), ({4}), ({0.5, 2.0, 1.5, 0.25}), kFloat),
};

TEST(OpValues, MatchPythonEmber) {
    In in;
    for (const OpCase& c : kOpCases) {
        SCOPED_TRACE(c.name);
        Tensor r = c.fn(in);
        ASSERT_EQ(r.sizes(), IntArrayRef(c.shape));
        ASSERT_EQ(r.scalar_type(), c.dtype);
        Tensor d = r.to(kDouble).contiguous().reshape({-1});
        ASSERT_EQ(d.numel(), static_cast<int64_t>(c.values.size()));
        const double* p = d.data_ptr<double>();
        for (size_t i = 0; i < c.values.size(); ++i) {
            const double want = c.values[i];
            if (std::isnan(want)) {
                EXPECT_TRUE(std::isnan(p[i])) << "element " << i;
            } else {
                EXPECT_NEAR(p[i], want, 1e-5 * std::max(1.0, std::abs(want))) << "element " << i;
            }
        }
    }
}

TEST(OpValues, InPlaceVariantsMatchOutOfPlace) {
    In in;
    auto check = [](const Tensor& a, const Tensor& b) { EXPECT_TRUE(a.allclose(b)) << repr(a) << " vs " << repr(b); };
    Tensor t = in.X.clone();
    t.add_(in.Y, 2);
    check(t, in.X + 2 * in.Y);
    t = in.X.clone();
    t.mul_(in.Y).sub_(1).div_(2);
    check(t, (in.X * in.Y - 1) / 2);
    t = in.P.clone();
    t.sqrt_().log_().exp_();
    check(t, in.P.sqrt());
    t = in.X.clone();
    t.relu_().clamp_(0.3, 1.8);
    check(t, in.X.relu().clamp(0.3, 1.8));
    t = in.X.clone();
    t.masked_fill_(in.X > 0, 0.0);
    check(t, in.X.masked_fill(in.X > 0, 0.0));
    t = in.X.clone();
    t.pow_(2).neg_().abs_().sigmoid_().tanh_();
    check(t, in.X.pow(2).sigmoid().tanh());
    t = in.X.clone();
    t += in.Y;
    t -= 1;
    t *= 2;
    t /= in.P;
    check(t, (in.X + in.Y - 1) * 2 / in.P);
    t = in.X.clone();
    t.lerp_(in.Y, 0.25);
    check(t, in.X.lerp(in.Y, 0.25));
    t = zeros({2, 4});
    t.scatter_(1, tensor({{0, 3}, {2, 1}}), 5.0);
    check(t, tensor({{5.0, 0.0, 0.0, 5.0}, {0.0, 5.0, 5.0, 0.0}}));
}

TEST(OpValues, ComparisonsAndLogical) {
    In in;
    EXPECT_TRUE((in.X > in.Y).equal(tensor({{false, false, true}, {true, true, false}})));
    EXPECT_TRUE((in.X <= 0.5).equal(tensor({{true, true, false}, {false, true, true}})));
    EXPECT_TRUE((0.5 < in.X).equal(tensor({{false, false, true}, {true, false, false}})));
    EXPECT_TRUE((in.X == in.X.clone()).all().item<bool>());
    EXPECT_TRUE((in.X != in.Y).any().item<bool>());
    Tensor a = tensor({true, true, false, false}), b = tensor({true, false, true, false});
    EXPECT_TRUE(a.logical_and(b).equal(tensor({true, false, false, false})));
    EXPECT_TRUE(a.logical_or(b).equal(tensor({true, true, true, false})));
    EXPECT_TRUE(a.logical_xor(b).equal(tensor({false, true, true, false})));
    EXPECT_TRUE((~a).equal(tensor({false, false, true, true})));
    EXPECT_TRUE((a & b).equal(tensor({true, false, false, false})));
    EXPECT_TRUE((a | b).equal(tensor({true, true, true, false})));
    EXPECT_TRUE((a ^ b).equal(tensor({false, true, true, false})));
    EXPECT_TRUE(tensor({1.0, 0.0}).logical_not().equal(tensor({false, true})));
    EXPECT_TRUE((tensor({6, 5}) & 3).equal(tensor({2, 1})));
    EXPECT_TRUE((~tensor({0, 5})).equal(tensor({-1, -6})));
    Tensor nan = tensor({1.0, NAN, INFINITY});
    EXPECT_TRUE(nan.isnan().equal(tensor({false, true, false})));
    EXPECT_TRUE(nan.isinf().equal(tensor({false, false, true})));
    EXPECT_TRUE(nan.isfinite().equal(tensor({true, false, false})));
    EXPECT_TRUE(tensor({1.0, 2.0}).allclose(tensor({1.0, 2.0 + 1e-7})));
    EXPECT_FALSE(tensor({1.0, 2.0}).allclose(tensor({1.0, 2.1})));
}

TEST(OpValues, SpecialValues) {
    // NaN propagation and rounding as PyTorch
    Tensor n = tensor({1.0, NAN, 3.0});
    EXPECT_TRUE(std::isnan(n.max().item<double>()));
    EXPECT_EQ(n.argmax().item<int64_t>(), 1);
    EXPECT_TRUE(std::isnan(maximum(n, zeros({3}))[1].item<double>()));
    EXPECT_TRUE(std::isnan(n.relu()[1].item<double>()));
    EXPECT_TRUE(tensor({0.5, 1.5, 2.5, -0.5}).round().equal(tensor({0.0, 2.0, 2.0, -0.0})));
    EXPECT_TRUE(tensor({NAN, -0.0, 2.0}).sign().equal(tensor({0.0, 0.0, 1.0})));
    EXPECT_TRUE(tensor({-7.0, 7.0}).div(tensor({2.0, -2.0}), "floor").equal(tensor({-4.0, -4.0})));
    EXPECT_TRUE(tensor({-7, 7}).div(tensor({2, -2}), "trunc").equal(tensor({-3, -3})));
    EXPECT_TRUE(tensor({1.0, 2.0}).div(0.0, "floor").isinf().all().item<bool>());
    EXPECT_EQ(tensor({1, 2}, kByte).sub(3).scalar_type(), kByte);
    EXPECT_TRUE((tensor({1, 2}, kByte) - 3).equal(tensor({254, 255}, kByte)));
    EXPECT_TRUE(tensor({0.0, 2.0}).pow(tensor({0.0, -1.0})).equal(tensor({1.0, 0.5})));
    EXPECT_TRUE(tensor({true, false}).square().equal(tensor({1, 0})));
    Tensor soft = tensor({-INFINITY, -INFINITY}).softmax(0);
    EXPECT_TRUE(soft.isnan().all().item<bool>());
    EXPECT_TRUE(tensor({1000.0, 1000.0}).softmax(0).allclose(tensor({0.5, 0.5})));
    EXPECT_TRUE(tensor({-1000.0, 0.0}).log_softmax(0).allclose(tensor({-1000.0, 0.0})));
}

TEST(OpValues, HalfComputesInFloat) {
    Tensor h = tensor({0.1, 0.2, 1000.0}, kHalf);
    EXPECT_EQ(h.scalar_type(), kHalf);
    Tensor s = h + h;
    EXPECT_EQ(s.scalar_type(), kHalf);
    EXPECT_FLOAT_EQ(s[2].item<float>(), 2000.0f);
    EXPECT_FLOAT_EQ(h[0].item<float>(), 0.0999755859375f);
    Tensor e = tensor({1.0, 2.0}, kHalf).exp();
    EXPECT_EQ(e.scalar_type(), kHalf);
    EXPECT_NEAR(e[1].item<float>(), 7.3890561f, 4e-3);
    EXPECT_NEAR(tensor({1.0, 2.0, 3.0}, kHalf).sum().item<float>(), 6.0f, 0);
    EXPECT_NEAR(tensor({1.0, 2.0}, kHalf).matmul(tensor({3.0, 4.0}, kHalf)).item<float>(), 11.0f, 0);
    EXPECT_TRUE((ones({2}, kHalf) * 65504.0 * 2).isinf().all().item<bool>());
}

TEST(OpValues, ErrorsHavePyTorchMessages) {
    Tensor b = tensor({true, false});
    Tensor i = tensor({1, 2});
    EXPECT_EQ(error_of([&] { (void)-b; }),
              "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use "
              "the `~` or `logical_not()` operator instead.");
    EXPECT_EQ(error_of([&] { (void)(b - b); }),
              "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` "
              "operator instead.");
    EXPECT_EQ(error_of([&] { (void)i.add(i, 0.5); }),
              "For integral input tensors, argument alpha must not be a floating point number.");
    EXPECT_EQ(error_of([&] { (void)(i / 0).sum(); (void)i.div(0, "floor"); }), "ZeroDivisionError");
    EXPECT_EQ(error_of([&] { (void)i.pow(-1); }), "Integers to negative integer powers are not allowed.");
    EXPECT_EQ(error_of([&] { (void)silu(i); }), "\"silu_cpu\" not implemented for 'Long'");
    EXPECT_EQ(error_of([&] { (void)where(tensor({1.0}), i, i); }),
              "where expected condition to be a boolean tensor, but got a tensor with dtype Float");
    EXPECT_EQ(error_of([&] { (void)i.mean(); }),
              "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
              "Got: Long");
    EXPECT_EQ(error_of([&] { (void)zeros({0}).max(); }),
              "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with "
              "the 'dim' argument.");
    EXPECT_EQ(error_of([&] { (void)ones({2, 3}).sum({0, 0}); }), "dim 0 appears multiple times in the list of dims");
    EXPECT_EQ(error_of([&] { (void)ones({2, 3}).sum(2); }),
              "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
    EXPECT_EQ(error_of([&] { (void)ones({2}).masked_fill(ones({2}), 1.0); }),
              "masked_fill_ only supports boolean masks, but got mask with dtype float32");
    EXPECT_EQ(error_of([&] { (void)i.var(); }), "std and var only support floating point and complex dtypes");
    EXPECT_EQ(error_of([&] { (void)ones({2, 3}).topk(4); }), "selected index k out of range");
    EXPECT_THROW((void)i.softmax(0), Error);
}

}  // namespace
