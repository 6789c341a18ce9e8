// Conv1d, Conv2d, Conv3d.
#include "ember/nn/modules/conv.h"

#include <vector>

#include "ember/factories.h"
#include "ember/nn/functional.h"
#include "nn/modules/utils.h"

namespace ember {
namespace nn {

namespace {

template <size_t D>
bool all_equal(const ExpandingArray<D>& values, int64_t v) {
    for (size_t i = 0; i < D; ++i) {
        if (values[i] != v) return false;
    }
    return true;
}

}  // namespace

template <size_t D>
ConvNdImpl<D>::ConvNdImpl(const ConvOptions<D>& options_)
    : Module("Conv" + std::to_string(D) + "d"), options(options_) {
    const int64_t groups = options.groups();
    EMBER_CHECK_VALUE(groups > 0, "groups must be a positive integer");
    if (options.padding().is_same()) {
        for (size_t i = 0; i < D; ++i) {
            EMBER_CHECK_VALUE(options.stride()[i] == 1, "padding='same' is not supported for strided convolutions");
        }
    }
    EMBER_CHECK_VALUE(options.in_channels() % groups == 0, "in_channels must be divisible by groups");
    EMBER_CHECK_VALUE(options.out_channels() % groups == 0, "out_channels must be divisible by groups");
    std::vector<int64_t> shape = {options.out_channels(), options.in_channels() / groups};
    for (size_t i = 0; i < D; ++i) shape.push_back(options.kernel_size()[i]);
    weight = this->register_parameter("weight", ember::empty(shape));
    bias = this->register_parameter("bias", options.bias() ? ember::empty({options.out_channels()}) : Tensor());
    reset_parameters();
}

template <size_t D>
void ConvNdImpl<D>::reset_parameters() {
    detail::reset_kaiming_uniform(weight, bias, true);
}

template <size_t D>
std::string ConvNdImpl<D>::extra_repr() const {
    using detail::py_tuple_repr;
    std::string s = std::to_string(options.in_channels()) + ", " + std::to_string(options.out_channels()) +
                    ", kernel_size=" + py_tuple_repr(options.kernel_size().vec()) +
                    ", stride=" + py_tuple_repr(options.stride().vec());
    if (const auto* numbers = std::get_if<ExpandingArray<D>>(&options.padding())) {
        if (!all_equal(*numbers, 0)) s += ", padding=" + py_tuple_repr(numbers->vec());
    } else {
        s += std::string(", padding=") + options.padding().name();  // Python prints padding=same
    }
    if (!all_equal(options.dilation(), 1)) s += ", dilation=" + py_tuple_repr(options.dilation().vec());
    if (options.groups() != 1) s += ", groups=" + std::to_string(options.groups());
    if (!bias.defined()) s += ", bias=False";
    return s;
}

template <size_t D>
Tensor ConvNdImpl<D>::forward(const Tensor& input) {
    auto o = functional::ConvFuncOptions<D>().bias(bias).stride(options.stride()).padding(options.padding())
                 .dilation(options.dilation()).groups(options.groups());
    if constexpr (D == 1) {
        return functional::conv1d(input, weight, o);
    } else if constexpr (D == 2) {
        return functional::conv2d(input, weight, o);
    } else {
        return functional::conv3d(input, weight, o);
    }
}

template class ConvNdImpl<1>;
template class ConvNdImpl<2>;
template class ConvNdImpl<3>;

}  // namespace nn
}  // namespace ember
