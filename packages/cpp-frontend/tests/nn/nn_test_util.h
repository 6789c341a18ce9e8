// Helpers of the nn tests: golden files as tensors, tensor comparison, error text, and a
// finite-difference check of a module's parameter gradients.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "common/error_of.h"
#include "common/golden.h"
#include "common/gradcheck.h"
#include "ember/autograd.h"
#include "ember/nn.h"

namespace nn_test {

using ember::Tensor;

// The tensors of the golden file EMBER_GOLDEN_DIR/<name>.safetensors by name, and its
// metadata (read anew: the tests may modify them).
using Golden = ember::testing::GoldenTensors;

inline Golden read_golden(const std::string& name) {
    return ember::testing::read_tensors(std::string(EMBER_GOLDEN_DIR) + "/" + name + ".safetensors");
}

// Whether actual equals expected (shape, dtype) within the tolerance of its dtype (float32:
// rtol 1e-5, atol 1e-6 scaled by the largest magnitude; float64: 1e-10).
inline ::testing::AssertionResult close(const Tensor& actual, const Tensor& expected, double scale_atol = 1.0) {
    if (!actual.defined()) return ::testing::AssertionFailure() << "undefined tensor";
    if (actual.sizes() != expected.sizes()) {
        return ::testing::AssertionFailure() << "shape " << actual.sizes() << " vs " << expected.sizes();
    }
    if (actual.scalar_type() != expected.scalar_type()) {
        return ::testing::AssertionFailure() << "dtype " << actual.scalar_type() << " vs " << expected.scalar_type();
    }
    const bool f64 = expected.scalar_type() == ember::kDouble;
    const Tensor a = actual.detach().to(ember::kDouble).contiguous().reshape({-1});
    const Tensor e = expected.to(ember::kDouble).contiguous().reshape({-1});
    const double* pa = a.data_ptr<double>();
    const double* pe = e.data_ptr<double>();
    double largest = 0;
    for (int64_t i = 0; i < e.numel(); ++i) largest = std::max(largest, std::abs(pe[i]));
    const double rtol = f64 ? 1e-10 : 1e-5;
    const double atol = (f64 ? 1e-12 : 1e-6) * std::max(1.0, largest) * scale_atol;
    for (int64_t i = 0; i < e.numel(); ++i) {
        const bool both_inf = std::isinf(pa[i]) && pa[i] == pe[i];
        if (!both_inf && !(std::abs(pa[i] - pe[i]) <= atol + rtol * std::abs(pe[i]))) {
            return ::testing::AssertionFailure() << "element " << i << ": " << pa[i] << " vs " << pe[i];
        }
    }
    return ::testing::AssertionSuccess();
}

using ember::testing::error_of;  // the message of the ember::Error f throws (common/error_of.h)

// Compares d(sum(f() * w))/d(p), from autograd, with central differences for every
// element of every parameter p of module (float64), perturbing p in place.
inline ::testing::AssertionResult check_parameter_grads(ember::nn::Module& module, const std::function<Tensor()>& f,
                                                        double eps = 1e-6, double atol = 1e-5, double rtol = 1e-3) {
    const std::vector<Tensor> params = module.parameters();
    Tensor y = f();
    const Tensor w = ember::testing::detail::projection(y.sizes(), 77);
    const std::vector<Tensor> analytic =
        ember::autograd::grad({(y * w).sum()}, params, {}, std::nullopt, false, /*allow_unused=*/true);
    auto value = [&]() {
        ember::NoGradGuard no_grad;
        return (f() * w).sum().item<double>();
    };
    for (size_t k = 0; k < params.size(); ++k) {
        const Tensor g = analytic[k].defined() ? analytic[k].contiguous().reshape({-1})
                                               : ember::zeros({params[k].numel()}, ember::kDouble);
        double* p = params[k].data_ptr<double>();
        for (int64_t j = 0; j < params[k].numel(); ++j) {
            const double saved = p[j];
            p[j] = saved + eps;
            const double plus = value();
            p[j] = saved - eps;
            const double minus = value();
            p[j] = saved;
            const double numeric = (plus - minus) / (2 * eps);
            const double an = g[j].item<double>();
            if (!(std::abs(an - numeric) <= atol + rtol * std::abs(numeric))) {
                return ::testing::AssertionFailure() << "parameter " << k << " element " << j << ": analytic " << an
                                                     << " vs numeric " << numeric;
            }
        }
    }
    return ::testing::AssertionSuccess();
}

}  // namespace nn_test
