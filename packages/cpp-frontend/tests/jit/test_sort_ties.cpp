// Tied elements in PyTorch's CPU order: sort/argsort (stable=False, and stable=True kept
// stable), topk, kthvalue, median, nanmedian and mode pick among equal keys as Python Ember
// does, which is PyTorch's choice (ember/ops/sorting.py). golden_sort_ties.py writes tie-heavy
// inputs of each dtype (NaNs, signed zeros, an all-NaN slice; lengths 1 to 1000, a dim of
// stride 0, 1-D integer sorts of 32768+ elements) and Python's results; each is compared
// here bit for bit, computed by the public functions (ember::sort, ember::topk) and by the
// graph runner's ops.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/error_of.h"
#include "common/golden.h"
#include "ember/ember.h"
#include "op_call.h"

namespace {

using namespace jit_ops;  // Tensor, Value, Kwargs, call
using ember::ScalarType;

#define SKIP_WITHOUT_GOLDEN() \
    if (!EMBER_GOLDEN_AVAILABLE) GTEST_SKIP() << "no Python to write the golden files"

const ember::testing::GoldenTensors& golden() { return ember::testing::golden_file("sort_ties.safetensors"); }

ScalarType dtype_named(const std::string& name) {
    static const std::map<std::string, ScalarType> dtypes = {
        {"float32", ember::kFloat}, {"float64", ember::kDouble}, {"float16", ember::kHalf},
        {"int64", ember::kLong},    {"int32", ember::kInt},      {"int16", ember::kShort},
        {"int8", ember::kChar},     {"uint8", ember::kByte},     {"bool", ember::kBool}};
    return dtypes.at(name);
}

// Equal dtype, shape and bytes (NaN payloads and the sign of zero included); `got` is first
// converted to `want`'s dtype (int32/16/8 results are stored as int64).
::testing::AssertionResult same_bits(const Tensor& got, const Tensor& want) {
    const Tensor a = got.to(want.scalar_type()).contiguous(), b = want.contiguous();
    if (a.sizes().vec() != b.sizes().vec()) {
        return ::testing::AssertionFailure() << "shape " << a.sizes() << " != " << b.sizes();
    }
    const size_t bytes = static_cast<size_t>(a.numel()) * ember::element_size(a.scalar_type());
    if (std::memcmp(a.data_ptr(), b.data_ptr(), bytes) != 0) {
        return ::testing::AssertionFailure() << "differ:\n" << got << "\nwant:\n" << want;
    }
    return ::testing::AssertionSuccess();
}

struct Case {
    std::string name;
    Tensor input;  // in its dtype, expanded where the case says
    int64_t dim = -1;
};

std::vector<Case> cases() {
    std::vector<Case> out;
    for (const auto& [name, spec] : golden().metadata) {
        std::istringstream in(spec);
        std::string dtype;
        int64_t dim = 0, expand = 0;
        in >> dtype >> dim >> expand;
        Tensor x = golden().at(name + "/input").to(dtype_named(dtype));
        if (expand) x = x.expand({x.size(0), expand});
        out.push_back({name, x, dim});
    }
    return out;
}

// The ops golden_sort_ties.py ran on case `name`, from its tensor names.
std::set<std::string> ops_of(const std::string& name) {
    std::set<std::string> ops;
    const std::string prefix = name + "/";
    for (const auto& [key, tensor] : golden().tensors) {
        if (key.compare(0, prefix.size(), prefix) != 0) continue;
        const std::string rest = key.substr(prefix.size());
        const auto slash = rest.find('/');
        if (slash != std::string::npos) ops.insert(rest.substr(0, slash));
    }
    return ops;
}

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> parts;
    std::istringstream in(s);
    for (std::string p; std::getline(in, p, '_');) parts.push_back(p);
    return parts;
}

// Compares (values, indices) with the golden ones that exist; counts the comparisons.
void expect_golden(const std::string& key, const Tensor& values, const Tensor& indices, const std::string& how,
                   int& compared) {
    if (golden().has(key + "/values")) {
        EXPECT_TRUE(same_bits(values, golden().at(key + "/values"))) << key << " values (" << how << ")";
        ++compared;
    }
    if (golden().has(key + "/indices")) {
        EXPECT_TRUE(same_bits(indices, golden().at(key + "/indices"))) << key << " indices (" << how << ")";
        ++compared;
    }
}

Value of(const Tensor& t) { return Value::of(t); }

TEST(SortTies, PublicFunctionsGivePythonsIndices) {
    SKIP_WITHOUT_GOLDEN();
    int compared = 0;
    for (const Case& c : cases()) {
        for (const std::string& op : ops_of(c.name)) {
            const auto p = split(op);
            const std::string key = c.name + "/" + op;
            if (p[0] == "sort") {
                const bool stable = op.find("stable") != std::string::npos;
                const bool descending = op.find("desc") != std::string::npos;
                auto [v, i] = stable ? ember::sort(c.input, std::optional<bool>(true), c.dim, descending)
                                     : ember::sort(c.input, c.dim, descending);
                expect_golden(key, v, i, "ember::sort", compared);
                if (!stable) {
                    auto [v2, i2] = ember::sort(c.input, std::optional<bool>(false), c.dim, descending);
                    expect_golden(key, v2, i2, "ember::sort(stable=false)", compared);
                }
            } else if (p[0] == "argsort") {
                expect_golden(key, Tensor(), ember::argsort(c.input, c.dim, true), "ember::argsort", compared);
            } else if (p[0] == "topk") {
                auto [v, i] = ember::topk(c.input, std::stoll(p[1]), c.dim, p[2] == "largest", p[3] == "sorted");
                expect_golden(key, v, i, "ember::topk", compared);
            }
        }
    }
    EXPECT_GT(compared, 1500);  // the golden file's sorts and topks
}

TEST(SortTies, GraphRunnerOpsGivePythonsIndices) {
    SKIP_WITHOUT_GOLDEN();
    int compared = 0;
    for (const Case& c : cases()) {
        const Value dim = Value::integer(c.dim);
        for (const std::string& op : ops_of(c.name)) {
            const auto p = split(op);
            const std::string key = c.name + "/" + op;
            std::vector<Tensor> r;
            Tensor values, indices;
            if (p[0] == "sort") {
                Kwargs kw = {{"dim", dim}, {"descending", Value::boolean(op.find("desc") != std::string::npos)}};
                if (op.find("stable") != std::string::npos) kw.emplace("stable", Value::boolean(true));
                r = call("sort", {of(c.input)}, kw);
                values = r.at(0), indices = r.at(1);
            } else if (p[0] == "argsort") {
                indices = call("argsort", {of(c.input)}, {{"dim", dim}, {"descending", Value::boolean(true)}}).at(0);
            } else if (p[0] == "msort") {
                values = call("msort", {of(c.input)}).at(0);
            } else if (p[0] == "topk") {
                r = call("topk", {of(c.input), Value::integer(std::stoll(p[1])), dim, Value::boolean(p[2] == "largest"),
                                  Value::boolean(p[3] == "sorted")});
                values = r.at(0), indices = r.at(1);
            } else if (p[0] == "kthvalue") {
                r = call("kthvalue", {of(c.input), Value::integer(std::stoll(p[1])), dim});
                values = r.at(0), indices = r.at(1);
            } else {  // median, nanmedian, mode
                r = call(p[0], {of(c.input), dim});
                values = r.at(0), indices = r.at(1);
            }
            expect_golden(key, values, indices, "graph runner " + p[0], compared);
        }
    }
    EXPECT_GT(compared, 2500);  // every op of the golden file
}

TEST(SortTies, StableSortKeepsTiesInOrder) {
    // stable=true is stable whatever the length; the default is PyTorch's std::sort, unstable
    // past 16 elements (this input's ties come out of order)
    Tensor x = ember::arange(40).remainder(2);
    auto [v, i] = ember::sort(x, std::optional<bool>(true));
    EXPECT_TRUE(ember::equal(i.slice(0, 0, 20), ember::arange(0, 40, 2)));
    EXPECT_TRUE(ember::equal(i.slice(0, 20, 40), ember::arange(1, 40, 2)));
    EXPECT_FALSE(ember::equal(std::get<1>(ember::sort(x)), i));
    // 16 elements or fewer: one insertion sort, stable in either case
    Tensor y = ember::arange(16).remainder(2);
    EXPECT_TRUE(ember::equal(std::get<1>(ember::sort(y)), std::get<1>(ember::sort(y, std::optional<bool>(true)))));
}

TEST(SortTies, EmptyDimsAndScalars) {
    // a selection along an empty dim is PyTorch's IndexError; a 0-dim input is its own pick
    Tensor e = ember::zeros({2, 0});
    for (const std::string op : {"mode", "median", "nanmedian"}) {
        EXPECT_EQ(error_of(op, {of(e), Value::integer(1)}),
                  op + "(): Expected reduction dim 1 to have non-zero size.");
    }
    EXPECT_EQ(error_of("kthvalue", {of(e), Value::integer(1), Value::integer(1)}),
              "kthvalue(): Expected reduction dim 1 to have non-zero size.");
    Tensor s = ember::scalar_tensor(2.5);
    for (const std::string op : {"mode", "median", "nanmedian"}) {
        auto r = call(op, {of(s), Value::integer(0)});
        EXPECT_EQ(r.at(0).dim(), 0);
        EXPECT_EQ(r.at(0).item<double>(), 2.5);
        EXPECT_EQ(r.at(1).item<int64_t>(), 0);
    }
    auto k = call("kthvalue", {of(s), Value::integer(1), Value::integer(0), Value::boolean(true)});
    EXPECT_EQ(k.at(1).dim(), 0);
    EXPECT_EQ(k.at(1).item<int64_t>(), 0);
}

TEST(SortTies, BoolAsPyTorchTakesIt) {
    // sort and mode order bools (false first); topk, kthvalue and median refuse them
    Tensor b = ember::arange(20).remainder(3).eq(0);
    EXPECT_TRUE(ember::equal(std::get<0>(ember::sort(b)), std::get<0>(ember::sort(b.to(ember::kByte))).to(ember::kBool)));
    EXPECT_TRUE(ember::equal(std::get<1>(ember::sort(b)), std::get<1>(ember::sort(b.to(ember::kByte)))));
    EXPECT_EQ(call("mode", {of(b)}).at(0).item<bool>(), false);
    EXPECT_EQ(ember::testing::error_of([&] { ember::topk(b, 2); }), "topk does not support bool dtypes on CPU");
    EXPECT_EQ(error_of("kthvalue", {of(b), Value::integer(1)}), "\"kthvalue_cpu\" not implemented for 'Bool'");
    EXPECT_EQ(error_of("median", {of(b), Value::integer(0)}), "\"median_out\" not implemented for 'Bool'");
    EXPECT_EQ(error_of("median", {of(b)}), "\"median_cpu\" not implemented for 'Bool'");
}

}  // namespace
