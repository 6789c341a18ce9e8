// Conv1d, Conv2d, Conv3d (with their padding modes) and ConvTranspose1d, ConvTranspose2d,
// ConvTranspose3d.
#include "ember/nn/modules/conv.h"

#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "ember/factories.h"
#include "ember/nn/functional.h"
#include "nn/functional/common.h"
#include "nn/functional/conv_transpose.h"
#include "nn/modules/utils.h"

namespace ember {
namespace nn {

namespace F = functional;

namespace {

template <size_t D>
bool all_equal(const ExpandingArray<D>& values, int64_t v) {
    for (size_t i = 0; i < D; ++i) {
        if (values[i] != v) return false;
    }
    return true;
}

// Python's _ConvNd checks (ValueError), shared by the convolutions and the transposed ones.
void check_channels(int64_t in_channels, int64_t out_channels, int64_t groups) {
    EMBER_CHECK_VALUE(groups > 0, "groups must be a positive integer");
    EMBER_CHECK_VALUE(in_channels % groups == 0, "in_channels must be divisible by groups");
    EMBER_CHECK_VALUE(out_channels % groups == 0, "out_channels must be divisible by groups");
}

// weight (first, second, *kernel_size) and bias (out_channels) or undefined, registered.
template <size_t D>
std::pair<Tensor, Tensor> register_weight_and_bias(Module& m, int64_t first, int64_t second,
                                                   const ExpandingArray<D>& kernel_size, bool bias,
                                                   int64_t out_channels) {
    std::vector<int64_t> shape = {first, second};
    for (size_t i = 0; i < D; ++i) shape.push_back(kernel_size[i]);
    Tensor w = m.register_parameter("weight", ember::empty(shape));
    Tensor b = m.register_parameter("bias", bias ? ember::empty({out_channels}) : Tensor());
    return {w, b};
}

// Python's _ConvNd.extra_repr: "1, 16, kernel_size=(3, 3), stride=(1, 1)" then padding,
// dilation, output_padding, groups, bias and padding_mode where not their defaults.
template <size_t D>
std::string conv_repr(int64_t in_channels, int64_t out_channels, const ExpandingArray<D>& kernel_size,
                      const ExpandingArray<D>& stride, const std::string& padding, const ExpandingArray<D>& dilation,
                      const ExpandingArray<D>& output_padding, int64_t groups, bool has_bias,
                      const detail::conv_padding_mode_t& padding_mode) {
    using detail::py_tuple_repr;
    std::string s = std::to_string(in_channels) + ", " + std::to_string(out_channels) +
                    ", kernel_size=" + py_tuple_repr(kernel_size.vec()) + ", stride=" + py_tuple_repr(stride.vec());
    if (!padding.empty()) s += ", padding=" + padding;
    if (!all_equal(dilation, 1)) s += ", dilation=" + py_tuple_repr(dilation.vec());
    if (!all_equal(output_padding, 0)) s += ", output_padding=" + py_tuple_repr(output_padding.vec());
    if (groups != 1) s += ", groups=" + std::to_string(groups);
    if (!has_bias) s += ", bias=False";
    if (!std::holds_alternative<enumtype::kZeros>(padding_mode)) {
        s += std::string(", padding_mode=") + enumtype::enum_name(padding_mode);
    }
    return s;
}

// F::pad's mode for a convolution's padding_mode (not kZeros).
F::PadFuncOptions::mode_t pad_mode_of(const detail::conv_padding_mode_t& padding_mode) {
    if (std::holds_alternative<enumtype::kReflect>(padding_mode)) return kReflect;
    if (std::holds_alternative<enumtype::kReplicate>(padding_mode)) return kReplicate;
    return kCircular;
}

}  // namespace

// ---- Conv1d / Conv2d / Conv3d -------------------------------------------------------------

template <size_t D>
ConvNdImpl<D>::ConvNdImpl(const ConvOptions<D>& options_)
    : Module("Conv" + std::to_string(D) + "d"), options(options_) {
    check_channels(options.in_channels(), options.out_channels(), options.groups());
    if (options.padding().is_same()) {
        for (size_t i = 0; i < D; ++i) {
            EMBER_CHECK_VALUE(options.stride()[i] == 1, "padding='same' is not supported for strided convolutions");
        }
    }
    std::tie(weight, bias) =
        register_weight_and_bias<D>(*this, options.out_channels(), options.in_channels() / options.groups(),
                                    options.kernel_size(), options.bias(), options.out_channels());
    reset_parameters();
}

template <size_t D>
void ConvNdImpl<D>::reset_parameters() {
    detail::reset_kaiming_uniform(weight, bias, true);
}

template <size_t D>
std::string ConvNdImpl<D>::extra_repr() const {
    std::string padding;
    if (const auto* numbers = std::get_if<ExpandingArray<D>>(&options.padding())) {
        if (!all_equal(*numbers, 0)) padding = detail::py_tuple_repr(numbers->vec());
    } else {
        padding = options.padding().name();  // Python prints padding=same
    }
    return conv_repr<D>(options.in_channels(), options.out_channels(), options.kernel_size(), options.stride(),
                        padding, options.dilation(), ExpandingArray<D>(0), options.groups(), bias.defined(),
                        options.padding_mode());
}

template <size_t D>
Tensor ConvNdImpl<D>::forward(const Tensor& input) {
    auto o = F::ConvFuncOptions<D>().bias(bias).stride(options.stride()).padding(options.padding())
                 .dilation(options.dilation()).groups(options.groups());
    Tensor x = input;
    if (!std::holds_alternative<enumtype::kZeros>(options.padding_mode())) {
        // PyTorch's _reversed_padding_repeated_twice: (left, right) pairs from the last dim
        // backwards; 'same' puts an odd total's extra element on the right, 'valid' pads none
        std::vector<int64_t> pads(2 * D, 0);
        for (size_t i = 0; i < D; ++i) {
            const size_t at = 2 * (D - 1 - i);
            if (const auto* numbers = std::get_if<ExpandingArray<D>>(&options.padding())) {
                pads[at] = pads[at + 1] = (*numbers)[i];
            } else if (options.padding().is_same()) {
                const int64_t total = options.dilation()[i] * (options.kernel_size()[i] - 1);
                pads[at] = total / 2;
                pads[at + 1] = total - total / 2;
            }
        }
        x = F::pad(input, F::PadFuncOptions(pads).mode(pad_mode_of(options.padding_mode())));
        o.padding(0);
    }
    if constexpr (D == 1) {
        return F::conv1d(x, weight, o);
    } else if constexpr (D == 2) {
        return F::conv2d(x, weight, o);
    } else {
        return F::conv3d(x, weight, o);
    }
}

template class ConvNdImpl<1>;
template class ConvNdImpl<2>;
template class ConvNdImpl<3>;

// ---- ConvTranspose1d / ConvTranspose2d / ConvTranspose3d ----------------------------------

template <size_t D>
ConvTransposeNdImpl<D>::ConvTransposeNdImpl(const ConvTransposeOptions<D>& options_)
    : Module("ConvTranspose" + std::to_string(D) + "d"), options(options_) {
    EMBER_CHECK_VALUE(std::holds_alternative<enumtype::kZeros>(options.padding_mode()),
                      "Only \"zeros\" padding mode is supported for ConvTranspose", D, "d");
    check_channels(options.in_channels(), options.out_channels(), options.groups());
    std::tie(weight, bias) =
        register_weight_and_bias<D>(*this, options.in_channels(), options.out_channels() / options.groups(),
                                    options.kernel_size(), options.bias(), options.out_channels());
    reset_parameters();
}

template <size_t D>
void ConvTransposeNdImpl<D>::reset_parameters() {
    detail::reset_kaiming_uniform(weight, bias, true);
}

template <size_t D>
std::string ConvTransposeNdImpl<D>::extra_repr() const {
    const std::string padding =
        all_equal(options.padding(), 0) ? std::string() : detail::py_tuple_repr(options.padding().vec());
    return conv_repr<D>(options.in_channels(), options.out_channels(), options.kernel_size(), options.stride(),
                        padding, options.dilation(), options.output_padding(), options.groups(), bias.defined(),
                        options.padding_mode());
}

template <size_t D>
std::vector<int64_t> ConvTransposeNdImpl<D>::output_padding_for(const Tensor& input,
                                                                const std::optional<IntArrayRef>& output_size) const {
    if (!output_size) return options.output_padding().vec();
    const auto k = static_cast<int64_t>(D);
    const int64_t non_spatial = input.dim() == k + 2 ? 2 : 1;
    std::vector<int64_t> size = output_size->vec();
    if (static_cast<int64_t>(size.size()) == non_spatial + k) size.erase(size.begin(), size.begin() + non_spatial);
    EMBER_CHECK_VALUE(size.size() == D, "ConvTranspose", D, "D: for ", input.dim(), "D input, output_size must have ",
                      D, " or ", non_spatial + k, " elements (got ", size.size(), ")");
    EMBER_CHECK(input.dim() >= non_spatial + k, "Expected ", k + 1, "D (unbatched) or ", k + 2,
                "D (batched) input to conv_transpose", k, "d, but got input of size: ", input.sizes());
    std::vector<int64_t> min_sizes, max_sizes, result;
    for (size_t d = 0; d < D; ++d) {
        const int64_t in = input.size(non_spatial + static_cast<int64_t>(d));
        const int64_t lo = (in - 1) * options.stride()[d] - 2 * options.padding()[d] +
                           options.dilation()[d] * (options.kernel_size()[d] - 1) + 1;
        min_sizes.push_back(lo);
        max_sizes.push_back(lo + options.stride()[d] - 1);
    }
    for (size_t d = 0; d < D; ++d) {
        if (size[d] < min_sizes[d] || size[d] > max_sizes[d]) {
            const std::vector<int64_t> spatial(input.sizes().begin() + 2, input.sizes().end());
            EMBER_CHECK_VALUE(false, "requested an output size of ", IntArrayRef(size), ", but valid sizes range from ",
                              IntArrayRef(min_sizes), " to ", IntArrayRef(max_sizes), " (for an input of ",
                              F::detail::torch_size(spatial), ")");
        }
        result.push_back(size[d] - min_sizes[d]);
    }
    return result;
}

template <size_t D>
Tensor ConvTransposeNdImpl<D>::forward(const Tensor& input, const std::optional<IntArrayRef>& output_size) {
    EMBER_CHECK_VALUE(std::holds_alternative<enumtype::kZeros>(options.padding_mode()),
                      "Only `zeros` padding mode is supported for ConvTranspose", D, "d");
    const std::vector<int64_t> output_padding = output_padding_for(input, output_size);
    return F::detail::conv_transpose(static_cast<int64_t>(D), input, weight, bias, options.stride(), options.padding(),
                                     output_padding, options.groups(), options.dilation());
}

template class ConvTransposeNdImpl<1>;
template class ConvTransposeNdImpl<2>;
template class ConvTransposeNdImpl<3>;

}  // namespace nn
}  // namespace ember
