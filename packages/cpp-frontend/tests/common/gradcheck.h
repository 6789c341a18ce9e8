// Finite-difference gradient checks in float64 (as torch.autograd.gradcheck / gradgradcheck).
//
//   EXPECT_TRUE(ember::testing::gradcheck(
//       [](const std::vector<ember::Tensor>& in) { return in[0].exp() * in[1]; },
//       {ember::randn({3, 4}, ember::kFloat64), ember::randn({3, 4}, ember::kFloat64)}));
//
// The function's output is reduced to a scalar with a fixed random weighting (so every output
// element's gradient is checked), the analytic gradient comes from autograd::grad and the
// numeric one from central differences on each input element. Inputs must be float64; every
// floating input is checked (pass integer tensors for non-differentiable arguments).
// gradgradcheck checks the gradient of the gradient (backward formulas recorded with
// create_graph=true).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "ember/autograd.h"
#include "ember/tensor.h"

namespace ember {
namespace testing {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

namespace detail {

// Deterministic weights in [0.5, 1.5) for an output of the given shape.
inline Tensor projection(IntArrayRef shape, uint64_t seed) {
    Generator g(seed);
    return rand(shape, g, kFloat64) + 0.5;
}

inline std::vector<Tensor> leaves(const std::vector<Tensor>& inputs) {
    std::vector<Tensor> out;
    for (const Tensor& t : inputs) {
        if (t.is_floating_point()) {
            out.push_back(t.detach().clone().requires_grad_(true));
        } else {
            out.push_back(t);
        }
    }
    return out;
}

inline double scalar_value(const Fn& f, const std::vector<Tensor>& inputs, const Tensor& w) {
    NoGradGuard g;
    Tensor y = f(inputs);
    return (y.to(kFloat64) * w).sum().item<double>();
}

}  // namespace detail

inline ::testing::AssertionResult gradcheck(const Fn& f, const std::vector<Tensor>& inputs, double eps = 1e-6,
                                            double atol = 1e-5, double rtol = 1e-3) {
    std::vector<Tensor> in = detail::leaves(inputs);
    std::vector<Tensor> diff;
    for (const Tensor& t : in) {
        if (t.requires_grad()) diff.push_back(t);
    }
    if (diff.empty()) return ::testing::AssertionFailure() << "gradcheck: no floating point input";
    Tensor y = f(in);
    if (!y.requires_grad()) return ::testing::AssertionFailure() << "gradcheck: output does not require grad";
    const Tensor w = detail::projection(y.sizes(), 1234);
    Tensor loss = (y * w).sum();
    std::vector<Tensor> analytic = autograd::grad({loss}, diff, {}, std::nullopt, false, /*allow_unused=*/true);

    size_t k = 0;
    for (size_t i = 0; i < in.size(); ++i) {
        if (!in[i].requires_grad()) continue;
        Tensor a = analytic[k++];
        if (!a.defined()) a = zeros_like(in[i]);
        Tensor base = in[i].detach().clone().contiguous();
        Tensor a_flat = a.contiguous().reshape({-1});
        const int64_t n = base.numel();
        for (int64_t j = 0; j < n; ++j) {
            std::vector<Tensor> plus = in, minus = in;
            Tensor p = base.clone(), m = base.clone();
            {
                NoGradGuard g;
                double* pp = p.data_ptr<double>();
                double* mp = m.data_ptr<double>();
                pp[j] += eps;
                mp[j] -= eps;
            }
            plus[i] = p;
            minus[i] = m;
            const double numeric = (detail::scalar_value(f, plus, w) - detail::scalar_value(f, minus, w)) / (2 * eps);
            const double an = a_flat[j].item<double>();
            if (!(std::abs(an - numeric) <= atol + rtol * std::abs(numeric))) {
                return ::testing::AssertionFailure()
                       << "gradcheck: input " << i << " element " << j << ": analytic " << an << " vs numeric "
                       << numeric;
            }
        }
    }
    return ::testing::AssertionSuccess();
}

// Checks the gradients of the gradients: the function (inputs, v) -> d(sum(f * v))/d(inputs)
// must itself pass gradcheck (v, the output weighting, is an input too, as PyTorch's
// gradgradcheck does with grad_outputs, so linear functions are covered).
inline ::testing::AssertionResult gradgradcheck(const Fn& f, const std::vector<Tensor>& inputs, double eps = 1e-6,
                                                double atol = 1e-5, double rtol = 1e-3) {
    Tensor y0;
    {
        NoGradGuard g;
        y0 = f(inputs);
    }
    const size_t n_in = inputs.size();
    Fn first = [f, n_in](const std::vector<Tensor>& in) {
        AutoGradMode mode(true);
        std::vector<Tensor> use(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n_in));
        std::vector<Tensor> diff;
        for (Tensor& t : use) {
            if (!t.is_floating_point()) continue;
            if (!t.requires_grad()) t = t.detach().requires_grad_(true);
            diff.push_back(t);
        }
        const Tensor& v = in[n_in];
        Tensor y = f(use);
        std::vector<Tensor> g = autograd::grad({(y * v).sum()}, diff, {}, true, /*create_graph=*/true, true);
        std::vector<Tensor> flat;
        for (size_t i = 0; i < g.size(); ++i) {
            flat.push_back(g[i].defined() ? g[i].reshape({-1}) : zeros({diff[i].numel()}, kFloat64));
        }
        return cat(flat);
    };
    std::vector<Tensor> all = inputs;
    all.push_back(detail::projection(y0.sizes(), 99));
    return gradcheck(first, all, eps, atol, rtol);
}

}  // namespace testing
}  // namespace ember
