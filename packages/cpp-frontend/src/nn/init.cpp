// ember::nn::init: PyTorch's initialisation schemes, in place under NoGradGuard.
#include "ember/nn/init.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "ember/autograd.h"
#include "ember/error.h"
#include "ember/indexing.h"
#include "ember/ops.h"
#include "core/random.h"

namespace ember {
namespace nn {
namespace init {

namespace {

constexpr double kSqrt2 = 1.414213562373095048801688724209698;
constexpr double kTwoOverSqrtPi = 1.128379167095512573896158903121545;

bool is_linear_fn(std::string_view name) {
    for (const char* f : {"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                          "conv_transpose3d", "sigmoid"}) {
        if (name == f) return true;
    }
    return false;
}

double norm_cdf(double x) { return (1.0 + std::erf(x / kSqrt2)) / 2.0; }

bool is_empty(const Tensor& tensor) {
    for (int64_t s : tensor.sizes()) {
        if (s == 0) {
            std::cerr << "UserWarning: Initializing zero-element tensors is a no-op\n";
            return true;
        }
    }
    return false;
}

double kaiming_std(const Tensor& tensor, double a, std::string_view mode, std::string_view nonlinearity) {
    const int64_t fan = calculate_correct_fan(tensor, mode);
    return calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan));
}

double xavier_std(const Tensor& tensor, double gain) {
    const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
    return gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
}

// Q of the thin QR decomposition of the (m x n, m >= n) row-major matrix a with R's diagonal
// positive (modified Gram-Schmidt, each column orthogonalised twice), in place.
void orthonormalize_columns(std::vector<double>& a, int64_t m, int64_t n) {
    auto at = [&](int64_t i, int64_t j) -> double& { return a[static_cast<size_t>(i * n + j)]; };
    for (int64_t j = 0; j < n; ++j) {
        for (int pass = 0; pass < 2; ++pass) {
            for (int64_t k = 0; k < j; ++k) {
                double dot = 0;
                for (int64_t i = 0; i < m; ++i) dot += at(i, k) * at(i, j);
                for (int64_t i = 0; i < m; ++i) at(i, j) -= dot * at(i, k);
            }
        }
        double norm = 0;
        for (int64_t i = 0; i < m; ++i) norm += at(i, j) * at(i, j);
        norm = std::sqrt(norm);
        for (int64_t i = 0; i < m; ++i) at(i, j) = norm > 0 ? at(i, j) / norm : 0.0;
    }
}

}  // namespace

double calculate_gain(std::string_view nonlinearity, std::optional<double> param) {
    if (is_linear_fn(nonlinearity)) return 1.0;
    if (nonlinearity == "tanh") return 5.0 / 3;
    if (nonlinearity == "relu") return std::sqrt(2.0);
    if (nonlinearity == "leaky_relu") {
        const double slope = param.value_or(0.01);
        return std::sqrt(2.0 / (1 + slope * slope));
    }
    if (nonlinearity == "selu") return 3.0 / 4;
    throw ValueError("Unsupported nonlinearity " + std::string(nonlinearity));
}

std::tuple<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor) {
    if (tensor.dim() < 2) {
        throw ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions");
    }
    int64_t receptive = 1;
    for (int64_t d = 2; d < tensor.dim(); ++d) receptive *= tensor.size(d);
    return {tensor.size(1) * receptive, tensor.size(0) * receptive};
}

int64_t calculate_correct_fan(const Tensor& tensor, std::string_view mode) {
    std::string lower(mode);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (lower != "fan_in" && lower != "fan_out") {
        throw ValueError("Mode " + lower + " not supported, please use one of ['fan_in', 'fan_out']");
    }
    const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
    return lower == "fan_in" ? fan_in : fan_out;
}

Tensor uniform_(Tensor tensor, double a, double b, std::optional<Generator> generator) {
    NoGradGuard guard;
    tensor.uniform_(a, b, std::move(generator));
    return tensor;
}

Tensor normal_(Tensor tensor, double mean, double std, std::optional<Generator> generator) {
    NoGradGuard guard;
    tensor.normal_(mean, std, std::move(generator));
    return tensor;
}

namespace {

// empty_like(t) as PyTorch's preserve format makes it: t's axes in t's memory order, so a
// random fill into it draws what one into t would (the same stream, element for element).
Tensor empty_like_preserved(const Tensor& t) {
    const std::vector<int64_t> order = native::memory_order(t);
    if (order.empty()) return empty(t.sizes(), TensorOptions(t.scalar_type()));
    std::vector<int64_t> sizes, inverse(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
        sizes.push_back(t.size(order[i]));
        inverse[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
    }
    return empty(sizes, TensorOptions(t.scalar_type())).permute(inverse);
}

}  // namespace

// PyTorch's sampler (Python Ember's), draw for draw: where [a, b] holds more than 30% of
// N(mean, std^2), normal draws outside it are redrawn; else uniform draws on [a, b] are
// accepted with probability pdf(x) / pdf(mode). Each round draws a whole tensor's worth (the
// rejected elements take theirs), as PyTorch's does, so a seed gives PyTorch's values.
Tensor trunc_normal_(Tensor tensor, double mean, double std, double a, double b, std::optional<Generator> generator) {
    if (mean < a - 2 * std || mean > b + 2 * std) {
        std::cerr << "UserWarning: mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution "
                     "of values may be incorrect.\n";
    }
    NoGradGuard guard;
    const ScalarType dtype = tensor.scalar_type();
    const double p = norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std);
    if (p > 0.3) {
        // the bounds in the tensor's dtype: the test agrees with the values it can hold
        const Scalar lo = scalar_tensor(a, TensorOptions(dtype)).item();
        const Scalar hi = scalar_tensor(b, TensorOptions(dtype)).item();
        Tensor result = tensor.normal_(mean, std, generator);
        while (true) {
            const Tensor mask = (result < lo) | (result > hi);
            if (!mask.any().item<bool>()) break;
            result = where(mask, empty_like_preserved(result).normal_(mean, std, generator), result);
        }
        if (!result.is_same(tensor)) tensor.copy_(result);
        return tensor;
    }
    const double mode = std::max(a, std::min(mean, b));
    const double log_peak = -0.5 * ((mode - mean) / std) * ((mode - mean) / std);
    Tensor candidates = empty_like_preserved(tensor);
    Tensor accept = empty_like_preserved(tensor);
    tensor.uniform_(a, b, generator);
    candidates.copy_(tensor);
    candidates.sub_(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak);  // log pdf / peak
    Tensor pending = accept.uniform_(0, 1, generator).log_().gt(candidates);
    if (pending.any().item<bool>()) {
        Tensor result = tensor;
        while (true) {
            candidates.uniform_(a, b, generator);
            result = where(pending, candidates, result);
            candidates.sub_(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak);
            pending = where(pending, accept.uniform_(0, 1, generator).log_().gt(candidates), pending);
            if (!pending.any().item<bool>()) break;
        }
        tensor.copy_(result);
    }
    return tensor;
}

Tensor constant_(Tensor tensor, const Scalar& value) {
    NoGradGuard guard;
    tensor.fill_(value);
    return tensor;
}

Tensor ones_(Tensor tensor) { return constant_(std::move(tensor), 1.0); }

Tensor zeros_(Tensor tensor) {
    NoGradGuard guard;
    tensor.zero_();
    return tensor;
}

Tensor eye_(Tensor tensor) {
    if (tensor.dim() != 2) throw ValueError("Only tensors with 2 dimensions are supported");
    NoGradGuard guard;
    tensor.copy_(eye(tensor.size(0), tensor.size(1), TensorOptions(tensor.scalar_type())));
    return tensor;
}

Tensor dirac_(Tensor tensor, int64_t groups) {
    const int64_t dims = tensor.dim();
    if (dims < 3 || dims > 5) throw ValueError("Only tensors with 3, 4, or 5 dimensions are supported");
    if (groups <= 0 || tensor.size(0) % groups != 0) throw ValueError("dim 0 must be divisible by groups");
    const int64_t out_per_group = tensor.size(0) / groups;
    const int64_t min_dim = std::min(out_per_group, tensor.size(1));
    NoGradGuard guard;
    tensor.zero_();
    for (int64_t g = 0; g < groups; ++g) {
        for (int64_t d = 0; d < min_dim; ++d) {
            std::vector<indexing::TensorIndex> index{g * out_per_group + d, d};
            for (int64_t k = 2; k < dims; ++k) index.emplace_back(tensor.size(k) / 2);
            tensor.index_put_(index, Scalar(1));
        }
    }
    return tensor;
}

Tensor xavier_uniform_(Tensor tensor, double gain, std::optional<Generator> generator) {
    const double a = std::sqrt(3.0) * xavier_std(tensor, gain);
    return uniform_(std::move(tensor), -a, a, std::move(generator));
}

Tensor xavier_normal_(Tensor tensor, double gain, std::optional<Generator> generator) {
    const double std = xavier_std(tensor, gain);
    return normal_(std::move(tensor), 0.0, std, std::move(generator));
}

Tensor kaiming_uniform_(Tensor tensor, double a, std::string_view mode, std::string_view nonlinearity,
                        std::optional<Generator> generator) {
    if (is_empty(tensor)) return tensor;
    const double bound = std::sqrt(3.0) * kaiming_std(tensor, a, mode, nonlinearity);
    return uniform_(std::move(tensor), -bound, bound, std::move(generator));
}

Tensor kaiming_normal_(Tensor tensor, double a, std::string_view mode, std::string_view nonlinearity,
                       std::optional<Generator> generator) {
    if (is_empty(tensor)) return tensor;
    const double std = kaiming_std(tensor, a, mode, nonlinearity);
    return normal_(std::move(tensor), 0.0, std, std::move(generator));
}

Tensor orthogonal_(Tensor tensor, double gain, std::optional<Generator> generator) {
    if (tensor.dim() < 2) throw ValueError("Only tensors with 2 or more dimensions are supported");
    if (tensor.numel() == 0) return tensor;
    const int64_t rows = tensor.size(0), cols = tensor.numel() / rows;
    NoGradGuard guard;
    // drawn in the tensor's dtype (Python Ember's, PyTorch's draws), orthonormalised in double
    Tensor flat = empty({rows, cols}, TensorOptions(tensor.scalar_type()));
    flat.normal_(0, 1, std::move(generator));
    flat = flat.to(kDouble);
    // Q of the tall matrix (the transpose when there are fewer rows than columns)
    const bool wide = rows < cols;
    const Tensor tall = (wide ? flat.t() : flat).contiguous();
    const int64_t m = tall.size(0), n = tall.size(1);
    std::vector<double> a(tall.data_ptr<double>(), tall.data_ptr<double>() + m * n);
    orthonormalize_columns(a, m, n);
    Tensor q = from_blob(a.data(), {m, n}, TensorOptions(kDouble)).clone();
    if (wide) q = q.t();
    tensor.copy_(q.reshape(tensor.sizes()) * gain);
    return tensor;
}

Tensor sparse_(Tensor tensor, double sparsity, double std, std::optional<Generator> generator) {
    if (tensor.dim() != 2) throw ValueError("Only tensors with 2 dimensions are supported");
    const int64_t rows = tensor.size(0), cols = tensor.size(1);
    const auto num_zeros = static_cast<int64_t>(std::ceil(sparsity * static_cast<double>(rows)));
    NoGradGuard guard;
    tensor.normal_(0, std, generator);
    // as PyTorch's: the rows to zero are a randperm per column from the global generator
    // (`generator` draws the normal values only), so a seed gives PyTorch's tensor
    for (int64_t col = 0; col < cols; ++col) {
        const Tensor zero_rows = randperm(rows).slice(0, 0, num_zeros);
        tensor.index_put_({zero_rows, col}, Scalar(0));
    }
    return tensor;
}

}  // namespace init
}  // namespace nn
}  // namespace ember
