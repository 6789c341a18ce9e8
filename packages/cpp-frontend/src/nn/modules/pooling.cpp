// MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, AdaptiveMaxPool1d/2d/3d.
#include "ember/nn/modules/pooling.h"

#include <vector>

#include "ember/nn/functional.h"
#include "nn/modules/utils.h"

namespace ember {
namespace nn {

using detail::py_bool;
using detail::size_repr;

MaxPool2dImpl::MaxPool2dImpl(const MaxPool2dOptions& options_) : options(options_) {}

Tensor MaxPool2dImpl::forward(const Tensor& input) {
    return functional::max_pool2d(input, options.kernel_size(), options.stride(), options.padding(),
                                  options.dilation(), options.ceil_mode());
}

std::tuple<Tensor, Tensor> MaxPool2dImpl::forward_with_indices(const Tensor& input) {
    return functional::max_pool2d_with_indices(input, options.kernel_size(), options.stride(), options.padding(),
                                               options.dilation(), options.ceil_mode());
}

std::string MaxPool2dImpl::extra_repr() const {
    return "kernel_size=" + size_repr(options.kernel_size()) + ", stride=" + size_repr(options.stride()) +
           ", padding=" + size_repr(options.padding()) + ", dilation=" + size_repr(options.dilation()) +
           ", ceil_mode=" + py_bool(options.ceil_mode());
}

AvgPool2dImpl::AvgPool2dImpl(const AvgPool2dOptions& options_) : options(options_) {}

Tensor AvgPool2dImpl::forward(const Tensor& input) {
    return functional::avg_pool2d(input, options.kernel_size(), options.stride(), options.padding(),
                                  options.ceil_mode(), options.count_include_pad(), options.divisor_override());
}

std::string AvgPool2dImpl::extra_repr() const {
    return "kernel_size=" + size_repr(options.kernel_size()) + ", stride=" + size_repr(options.stride()) +
           ", padding=" + size_repr(options.padding());
}

AdaptiveAvgPool2dImpl::AdaptiveAvgPool2dImpl(const AdaptiveAvgPool2dOptions& options_) : options(options_) {}

Tensor AdaptiveAvgPool2dImpl::forward(const Tensor& input) {
    std::vector<int64_t> size(2);
    for (size_t i = 0; i < 2; ++i) {
        const auto& v = options.output_size()[i];
        // None keeps the input's size along that dim (one of the last two)
        size[i] = v ? *v : input.size(static_cast<int64_t>(i) - 2);
    }
    return functional::adaptive_avg_pool2d(input, size);
}

std::string AdaptiveAvgPool2dImpl::extra_repr() const {
    const auto& v = options.output_size();
    auto one = [](const std::optional<int64_t>& x) { return x ? std::to_string(*x) : std::string("None"); };
    if (v[0] == v[1]) return "output_size=" + one(v[0]);
    return "output_size=(" + one(v[0]) + ", " + one(v[1]) + ")";
}

namespace {

std::string optional_repr(const std::optional<int64_t>& x) { return x ? std::to_string(*x) : std::string("None"); }

// Python prints the output size as given: one value when all are equal, else a tuple.
template <size_t D>
std::string output_size_repr(const ExpandingArrayWithOptional<D>& v) {
    bool same = true;
    for (size_t i = 1; i < D; ++i) same = same && v[i] == v[0];
    if (same) return optional_repr(v[0]);
    std::string s = "(";
    for (size_t i = 0; i < D; ++i) s += (i ? ", " : "") + optional_repr(v[i]);
    return s + ")";
}

template <size_t D>
std::string output_size_repr(const ExpandingArray<D>& v) {
    return size_repr(v);
}

}  // namespace

template <size_t D, typename output_size_t>
AdaptiveMaxPoolImpl<D, output_size_t>::AdaptiveMaxPoolImpl(const AdaptiveMaxPoolOptions<output_size_t>& options_)
    : Module("AdaptiveMaxPool" + std::to_string(D) + "d"), options(options_) {}

template <size_t D, typename output_size_t>
Tensor AdaptiveMaxPoolImpl<D, output_size_t>::forward(const Tensor& input) {
    return std::get<0>(forward_with_indices(input));
}

template <size_t D, typename output_size_t>
std::tuple<Tensor, Tensor> AdaptiveMaxPoolImpl<D, output_size_t>::forward_with_indices(const Tensor& input) {
    if constexpr (D == 1) {
        return functional::adaptive_max_pool1d_with_indices(input, options);
    } else if constexpr (D == 2) {
        return functional::adaptive_max_pool2d_with_indices(input, options);
    } else {
        return functional::adaptive_max_pool3d_with_indices(input, options);
    }
}

template <size_t D, typename output_size_t>
std::string AdaptiveMaxPoolImpl<D, output_size_t>::extra_repr() const {
    return "output_size=" + output_size_repr(options.output_size());
}

template class AdaptiveMaxPoolImpl<1, ExpandingArray<1>>;
template class AdaptiveMaxPoolImpl<2, ExpandingArrayWithOptional<2>>;
template class AdaptiveMaxPoolImpl<3, ExpandingArrayWithOptional<3>>;

}  // namespace nn
}  // namespace ember
