// conv3d (each depth tap a batch of 2-D convolutions through the conv2d kernel, so autograd
// and double backward come from conv2d, index_select and add) and the convolutions with
// Python's string padding ("valid", "same": aten's _convolution_mode), for 1, 2 and 3 dims.
#include <string>

#include "op_common.h"

namespace ember {

namespace {

Tensor long_tensor(const std::vector<int64_t>& v) {
    Tensor t = empty({static_cast<int64_t>(v.size())}, kLong);
    std::copy(v.begin(), v.end(), t.data_ptr<int64_t>());
    return t;
}

// One value per spatial dim from one value or `dims` values (PyTorch's expand_param_if_needed).
std::vector<int64_t> expand_param(IntArrayRef v, int64_t dims, const char* name) {
    EMBER_CHECK(v.size() == 1 || static_cast<int64_t>(v.size()) == dims, "expected ", name, " to be a single integer value or a list of ",
                dims, " values to match the convolution dimensions, but got ", name, "=", v);
    if (v.size() == 1) return std::vector<int64_t>(static_cast<std::size_t>(dims), v[0]);
    return v.vec();
}

Tensor conv_nd(int64_t dims, const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
               IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
    if (dims == 1) return conv1d(input, weight, bias, stride, padding, dilation, groups);
    if (dims == 2) return conv2d(input, weight, bias, stride, padding, dilation, groups);
    return conv3d(input, weight, bias, stride, padding, dilation, groups);
}

}  // namespace

Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride_in, IntArrayRef padding_in,
              IntArrayRef dilation_in, int64_t groups) {
    EMBER_CHECK(input.dim() == 4 || input.dim() == 5,
                "Expected 4D (unbatched) or 5D (batched) input to conv3d, but got input of size: ", input.sizes());
    EMBER_CHECK(weight.dim() == 5, "weight should have 5 dimensions, but got weight of size ", weight.sizes());
    EMBER_CHECK(groups > 0, "non-positive groups is not supported");
    const std::vector<int64_t> stride = expand_param(stride_in, 3, "stride");
    const std::vector<int64_t> padding = expand_param(padding_in, 3, "padding");
    const std::vector<int64_t> dilation = expand_param(dilation_in, 3, "dilation");
    const bool unbatched = input.dim() == 4;
    Tensor x = unbatched ? input.unsqueeze(0) : input;
    const int64_t n = x.size(0), c = x.size(1), d = x.size(2), h = x.size(3), w = x.size(4);
    const int64_t kd = weight.size(2);
    EMBER_CHECK(weight.size(1) * groups == c, "Given groups=", groups, ", weight of size ", weight.sizes(),
                ", expected input", x.sizes(), " to have ", weight.size(1) * groups, " channels, but got ", c,
                " channels instead");
    EMBER_CHECK(stride[0] > 0 && stride[1] > 0 && stride[2] > 0, "non-positive stride is not supported");
    EMBER_CHECK(dilation[0] > 0 && dilation[1] > 0 && dilation[2] > 0, "dilation should be greater than zero");
    EMBER_CHECK(padding[0] >= 0 && padding[1] >= 0 && padding[2] >= 0, "negative padding is not supported");
    const int64_t pd = padding[0];
    EMBER_CHECK(d + 2 * pd >= dilation[0] * (kd - 1) + 1 && h + 2 * padding[1] >= dilation[1] * (weight.size(3) - 1) + 1 &&
                    w + 2 * padding[2] >= dilation[2] * (weight.size(4) - 1) + 1,
                "Calculated padded input size per channel: (", d + 2 * pd, " x ", h + 2 * padding[1], " x ",
                w + 2 * padding[2], "). Kernel size: (", dilation[0] * (kd - 1) + 1, " x ",
                dilation[1] * (weight.size(3) - 1) + 1, " x ", dilation[2] * (weight.size(4) - 1) + 1,
                "). Kernel size can't be greater than actual input size");
    if (pd > 0) {
        const Tensor zeros_slab = zeros({n, c, pd, h, w}, x.scalar_type());
        x = cat({zeros_slab, x, zeros_slab}, 2);
    }
    const int64_t dout = (d + 2 * pd - dilation[0] * (kd - 1) - 1) / stride[0] + 1;
    Tensor sum;
    for (int64_t j = 0; j < kd; ++j) {
        std::vector<int64_t> at;
        for (int64_t o = 0; o < dout; ++o) at.push_back(o * stride[0] + j * dilation[0]);
        const Tensor xj = x.index_select(2, long_tensor(at)).permute({0, 2, 1, 3, 4}).reshape({n * dout, c, h, w});
        const Tensor yj = conv2d(xj, weight.select(2, j), Tensor(), {stride[1], stride[2]}, {padding[1], padding[2]},
                                 {dilation[1], dilation[2]}, groups);
        sum = sum.defined() ? sum + yj : yj;
    }
    Tensor out = sum.reshape({n, dout, sum.size(1), sum.size(2), sum.size(3)}).permute({0, 2, 1, 3, 4});
    if (bias.defined()) {
        EMBER_CHECK(bias.dim() == 1 && bias.size(0) == weight.size(0), "Given weight of size ", weight.sizes(),
                    ", expected bias to be 1-dimensional with ", weight.size(0), " elements, but got bias of size ",
                    bias.sizes(), " instead");
        out = out + bias.view({1, -1, 1, 1, 1});
    }
    return unbatched ? out.squeeze(0) : out.contiguous();
}

namespace detail {

Tensor conv_string_padding(int64_t dims, const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                           std::string_view padding, IntArrayRef dilation_in, int64_t groups) {
    EMBER_CHECK(dims >= 1 && dims <= 3, "conv_string_padding: dims must be 1, 2 or 3, got ", dims);
    if (padding == "valid") return conv_nd(dims, input, weight, bias, stride, 0, dilation_in, groups);
    EMBER_CHECK(padding == "same", "Invalid padding string: '", std::string(padding), "'");
    for (int64_t s : stride) EMBER_CHECK(s == 1, "padding='same' is not supported for strided convolutions");
    EMBER_CHECK(weight.dim() == dims + 2, "Expected ", dims + 2, "-dimensional weight for ", dims + 2,
                "-dimensional input, but got ", weight.dim(), "-dimensional weight of size ", weight.sizes());
    EMBER_CHECK(input.dim() == dims + 1 || input.dim() == dims + 2, "Expected ", dims + 1, "D (unbatched) or ", dims + 2,
                "D (batched) input to conv", dims, "d, but got input of size: ", input.sizes());
    const std::vector<int64_t> dilation = expand_param(dilation_in, dims, "dilation");
    // aten's _convolution_mode: the symmetric part as the convolution's padding, the extra
    // element of an odd total as zeros after the input
    std::vector<int64_t> left(static_cast<std::size_t>(dims));
    Tensor x = input;
    for (int64_t i = 0; i < dims; ++i) {
        const auto k = static_cast<std::size_t>(i);
        const int64_t total = dilation[k] * (weight.size(2 + i) - 1);
        left[k] = total / 2;
        const int64_t extra = total - 2 * left[k];
        if (extra == 0) continue;
        const int64_t dim = x.dim() - dims + i;
        std::vector<int64_t> shape = x.sizes().vec();
        shape[static_cast<std::size_t>(dim)] = extra;
        x = cat({x, zeros(shape, x.scalar_type())}, dim);
    }
    return conv_nd(dims, x, weight, bias, stride, left, dilation, groups);
}

}  // namespace detail

}  // namespace ember
