// Helpers of the nn_functional tests: the golden file written by golden_functional.py, value
// comparisons and error-message capture.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "common/error_of.h"
#include "common/golden.h"
#include "ember/autograd.h"
#include "ember/nn/functional.h"
#include "ember/tensor.h"

namespace ember_test {

// The golden array `name` of EMBER_GOLDEN_DIR/functional.safetensors (read once; a fresh
// copy, so tests may modify it).
inline ember::Tensor golden(const std::string& name) {
    return ember::testing::golden_tensor("functional.safetensors", name);
}

#define EMBER_REQUIRE_GOLDEN()                                                            \
    do {                                                                                  \
        if (!EMBER_GOLDEN_AVAILABLE) GTEST_SKIP() << "no Python to write the golden files"; \
    } while (0)

// |actual - expected| <= atol + rtol * |expected| everywhere (NaN matches NaN), same shape.
inline ::testing::AssertionResult close(const ember::Tensor& actual, const ember::Tensor& expected,
                                        double rtol = 1e-5, double atol = 1e-6) {
    if (actual.sizes() != expected.sizes()) {
        return ::testing::AssertionFailure() << "shape " << actual.sizes() << " vs expected " << expected.sizes();
    }
    const ember::Tensor a = actual.detach().to(ember::kDouble).contiguous();
    const ember::Tensor e = expected.detach().to(ember::kDouble).contiguous();
    const double* pa = a.data_ptr<double>();
    const double* pe = e.data_ptr<double>();
    for (int64_t i = 0; i < a.numel(); ++i) {
        if (pa[i] == pe[i] || (std::isnan(pe[i]) && std::isnan(pa[i]))) continue;  // (infinities too)
        if (!(std::abs(pa[i] - pe[i]) <= atol + rtol * std::abs(pe[i]))) {
            return ::testing::AssertionFailure() << "element " << i << ": " << pa[i] << " vs expected " << pe[i];
        }
    }
    return ::testing::AssertionSuccess();
}

using ember::testing::error_of;  // the message of the ember::Error f throws (common/error_of.h)

}  // namespace ember_test
