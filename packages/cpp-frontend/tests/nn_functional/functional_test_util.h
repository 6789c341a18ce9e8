// Helpers of the nn_functional tests: the golden file written by golden_functional.py, value
// comparisons and error-message capture.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "ember/autograd.h"
#include "ember/nn/functional.h"
#include "ember/serialize.h"
#include "ember/tensor.h"

namespace ember_test {

// The arrays of EMBER_GOLDEN_DIR/functional.safetensors by name (read once).
inline const std::map<std::string, ember::Tensor>& goldens() {
    static std::once_flag once;
    static std::map<std::string, ember::Tensor> tensors;
    std::call_once(once, [] {
        const auto file = ember::serialize::read_safetensors(std::string(EMBER_GOLDEN_DIR) + "/functional.safetensors");
        for (const auto& [name, record] : file.tensors) {
            ember::Tensor t = ember::empty(record.shape, ember::TensorOptions(record.dtype));
            ember::serialize::copy_contiguous_bytes(record, static_cast<std::byte*>(t.data_ptr()), record.nbytes());
            tensors.emplace(name, t);
        }
    });
    return tensors;
}

// The golden array `name` (a fresh copy, so tests may modify it).
inline ember::Tensor golden(const std::string& name) {
    const auto& all = goldens();
    const auto it = all.find(name);
    if (it == all.end()) throw std::runtime_error("no golden array " + name);
    return it->second.clone();
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

// The message of the ember::Error f throws ("" when it throws none).
inline std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const ember::Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace ember_test
