// Reading the complex golden programs' runs (golden_complex.py's format: complex tensors stored
// as their view_as_real, listed in the metadata's complex_in / complex_out) and comparing a
// program's outputs with them. Used by test_complex_ops.cpp and test_complex_linalg_ops.cpp.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/golden.h"
#include "ember/ember.h"
#include "jit/json.h"

namespace complex_golden {

using ember::Tensor;

inline std::string golden(const std::string& file) { return std::string(EMBER_GOLDEN_DIR) + "/" + file; }

struct GoldenRun {
    std::vector<Tensor> inputs, outputs;
};

inline std::vector<int64_t> int_list(const std::string& json_text) {
    std::vector<int64_t> out;
    const ember::jit::detail::Json json = ember::jit::detail::parse_json(json_text, "metadata");
    for (const auto& v : json.as_array("metadata")) out.push_back(v.as_int("item"));
    return out;
}

// A golden run: in.<i> and out.<j>, the complex ones turned back from their real views.
inline GoldenRun read_run(const std::string& program, int k) {
    const ember::testing::GoldenTensors file =
        ember::testing::read_tensors(golden(program + ".run" + std::to_string(k) + ".safetensors"));
    const std::vector<int64_t> cin = int_list(file.metadata.at("complex_in"));
    const std::vector<int64_t> cout = int_list(file.metadata.at("complex_out"));
    auto take = [&](const std::string& prefix, const std::vector<int64_t>& complex) {
        std::vector<Tensor> out;
        for (int64_t i = 0; file.has(prefix + std::to_string(i)); ++i) {
            const Tensor& t = file.at(prefix + std::to_string(i));
            const bool c = std::find(complex.begin(), complex.end(), i) != complex.end();
            out.push_back(c ? ember::view_as_complex(t) : t);
        }
        return out;
    };
    return {take("in.", cin), take("out.", cout)};
}

// |actual - expected| <= tol * (1 + max |expected|) elementwise, tol by the expected's
// precision (float32/complex64: 2e-5; float64/complex128: 1e-11); dtypes and shapes equal,
// NaNs and infinities where the expected has them.
inline void expect_close(const Tensor& actual, const Tensor& expected, const std::string& what) {
    using namespace ember;
    ASSERT_EQ(actual.scalar_type(), expected.scalar_type()) << what;
    ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
    if (expected.numel() == 0) return;
    const ScalarType t = expected.scalar_type();
    if (!is_complex(t) && !is_floating_point(t)) {
        EXPECT_TRUE(actual.equal(expected)) << what;
        return;
    }
    const bool wide = t == kDouble || t == kComplexDouble;
    const double tol = wide ? 1e-11 : 2e-5;
    Tensor a = (is_complex(t) ? view_as_real(actual.contiguous()) : actual).to(kDouble);
    Tensor e = (is_complex(t) ? view_as_real(expected.contiguous()) : expected).to(kDouble);
    const Tensor special = ember::isnan(e).logical_or(ember::isinf(e));
    EXPECT_TRUE((ember::isnan(a) == ember::isnan(e)).all().item<bool>()) << what << ": NaNs differ";
    EXPECT_TRUE(((a == e) == ember::isinf(e)).logical_or(ember::isfinite(e)).all().item<bool>()) << what << ": infinities differ";
    a = a.masked_fill(special, 0);
    e = e.masked_fill(special, 0);
    const double scale = 1.0 + e.abs().max().item<double>();
    const double err = (a - e).abs().max().item<double>();
    EXPECT_LE(err, tol * scale) << what << ": max error " << err << " (scale " << scale << ")";
}

}  // namespace complex_golden
