// Transposed convolutions: F::conv_transpose1d/2d/3d (and, through conv_transpose.h, the op
// table's conv_transpose1d/2d/3d). See conv_transpose.h for how they are computed.
#include "nn/functional/conv_transpose.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "common.h"

namespace ember {
namespace nn {
namespace functional {

namespace detail {

namespace {

using Dims = std::vector<int64_t>;

Tensor long_tensor(const Dims& v) {
    Tensor t = empty({static_cast<int64_t>(v.size())}, kLong);
    std::copy(v.begin(), v.end(), t.data_ptr<int64_t>());
    return t;
}

// One value per spatial dim from one value or `dims` values (PyTorch's expand_param_if_needed).
Dims expand_param(IntArrayRef v, int64_t dims, const char* name) {
    EMBER_CHECK(v.size() == 1 || static_cast<int64_t>(v.size()) == dims, "expected ", name,
                " to be a single integer value or a list of ", dims,
                " values to match the convolution dimensions, but got ", name, "=", v);
    if (v.size() == 1) return Dims(static_cast<size_t>(dims), v[0]);
    return v.vec();
}

// "output_padding_height: 1 output_padding_width: 0" (sep " "), as PyTorch's shape checks
// print their per-dim values.
std::string per_dim(const char* what, const Dims& v, const char* sep) {
    static const char* const names3[] = {"depth", "height", "width"};
    const char* const* names = v.size() == 3 ? names3 : names3 + 1;
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) {
        s += (i ? sep : "") + std::string(what) + "_" + names[i] + ": " + std::to_string(v[i]);
    }
    return s;
}

// "(4 x 4)"
std::string by(const Dims& v) {
    std::string s = "(";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? " x " : "") + std::to_string(v[i]);
    return s + ")";
}

// t[start : start + length] along dim, t being zero beyond its end (output_padding's
// elements, and those a padding larger than the uncropped output asks for).
Tensor window(const Tensor& t, int64_t dim, int64_t start, int64_t length) {
    const int64_t missing = start + length - t.size(dim);
    Tensor full = t;
    if (missing > 0) {
        std::vector<int64_t> shape = t.sizes().vec();
        shape[static_cast<size_t>(dim)] = missing;
        full = cat({t, zeros(shape, t.scalar_type())}, dim);
    }
    return start == 0 && length == full.size(dim) ? full : full.narrow(dim, start, length);
}

// The 2-D transposed convolution of x (N, C_in, H, W) with w (C_in, C_out / g, kh, kw), no
// bias, arguments already checked: the columns W_g^T @ x_g (each image's product written in
// its place: measured single-threaded, this beat one product over the stacked batch, which
// needs two more copies) summed by col2im into the uncropped output
// ((H - 1) * stride + dilation * (k - 1) + 1 per dim), then cropped.
Tensor transposed2d(const Tensor& x, const Tensor& w, const Dims& stride, const Dims& padding, const Dims& out_size,
                    int64_t groups, const Dims& dilation) {
    const int64_t n = x.size(0), cin = x.size(1), h = x.size(2), wd = x.size(3);
    const int64_t cog = w.size(1), kh = w.size(2), kw = w.size(3), cg = cin / groups;
    const Tensor xg = x.reshape({n, groups, cg, h * wd});
    const Tensor wg = w.reshape({groups, cg, cog * kh * kw}).transpose(1, 2);
    const Tensor cols = matmul(wg, xg).reshape({n, groups * cog * kh * kw, h * wd});
    const int64_t fh = (h - 1) * stride[0] + dilation[0] * (kh - 1) + 1;
    const int64_t fw = (wd - 1) * stride[1] + dilation[1] * (kw - 1) + 1;
    // The output is the uncropped one from `padding` on, zero past its end. col2im with that
    // padding writes it directly up to the uncropped end (at most `padding` elements of
    // output_padding are still inside it) when its shape check allows (the elements taken
    // from the output padding fewer than the stride); the rest are zeros appended.
    const int64_t eh = std::min(out_size[0] + 2 * padding[0] - fh, padding[0]);
    const int64_t ew = std::min(out_size[1] + 2 * padding[1] - fw, padding[1]);
    const int64_t lh = fh - 2 * padding[0] + eh, lw = fw - 2 * padding[1] + ew;
    if (lh > 0 && lw > 0 && eh < stride[0] && ew < stride[1]) {
        const Tensor cropped = col2im(cols, {lh, lw}, {kh, kw}, dilation, padding, stride);
        return window(window(cropped, 2, 0, out_size[0]), 3, 0, out_size[1]);
    }
    // otherwise: the uncropped output, cropped
    const Tensor full = col2im(cols, {fh, fw}, {kh, kw}, dilation, {0, 0}, stride);
    return window(window(full, 2, padding[0], out_size[0]), 3, padding[1], out_size[1]);
}

// 3-D: the 2-D transposed convolution of every depth slice with each depth tap j of the
// weight, added at depth i * stride + j * dilation of the uncropped output, then cropped.
Tensor transposed3d(const Tensor& x, const Tensor& w, const Dims& stride, const Dims& padding, const Dims& out_size,
                    int64_t groups, const Dims& dilation) {
    const int64_t n = x.size(0), cin = x.size(1), d = x.size(2), h = x.size(3), wd = x.size(4);
    const int64_t kd = w.size(2);
    const int64_t dfull = std::max((d - 1) * stride[0] + dilation[0] * (kd - 1) + 1, padding[0] + out_size[0]);
    const Tensor slices = x.permute({0, 2, 1, 3, 4}).reshape({n * d, cin, h, wd});
    const Dims s2 = {stride[1], stride[2]}, p2 = {padding[1], padding[2]}, o2 = {out_size[1], out_size[2]};
    const Dims d2 = {dilation[1], dilation[2]};
    Tensor acc;
    for (int64_t j = 0; j < kd; ++j) {
        Tensor y = transposed2d(slices, w.select(2, j), s2, p2, o2, groups, d2);
        y = y.reshape({n, d, y.size(1), y.size(2), y.size(3)});
        if (!acc.defined()) acc = zeros({n, dfull, y.size(2), y.size(3), y.size(4)}, y.scalar_type());
        Dims at;
        for (int64_t i = 0; i < d; ++i) at.push_back(i * stride[0] + j * dilation[0]);
        acc = acc.index_add(1, long_tensor(at), y);
    }
    return acc.narrow(1, padding[0], out_size[0]).permute({0, 2, 1, 3, 4});
}

}  // namespace

Tensor conv_transpose(int64_t dims, const Tensor& input, const Tensor& weight, const Tensor& bias,
                      IntArrayRef stride_in, IntArrayRef padding_in, IntArrayRef output_padding_in, int64_t groups,
                      IntArrayRef dilation_in, const std::string& op) {
    EMBER_CHECK(dims >= 1 && dims <= 3, "conv_transpose: dims must be 1, 2 or 3, got ", dims);
    const std::string prefix = op.empty() ? std::string() : op + "(): ";
    EMBER_CHECK(input.dim() == dims + 1 || input.dim() == dims + 2, prefix, "Expected ", dims + 1, "D (unbatched) or ",
                dims + 2, "D (batched) input to conv_transpose", dims, "d, but got input of size: ", input.sizes());
    EMBER_CHECK(weight.dim() == dims + 2, prefix, "weight should have ", dims + 2,
                " dimensions, but got weight of size ", weight.sizes());
    Dims stride = expand_param(stride_in, dims, "stride");
    Dims padding = expand_param(padding_in, dims, "padding");
    Dims output_padding = expand_param(output_padding_in, dims, "output_padding");
    Dims dilation = expand_param(dilation_in, dims, "dilation");
    EMBER_CHECK(groups > 0, prefix, "non-positive groups is not supported");
    EMBER_CHECK(input.scalar_type() == weight.scalar_type(), "Input type (", input.toString(), ") and weight type (",
                weight.toString(), ") should be the same");
    for (int64_t i = 0; i < dims; ++i) {
        const auto k = static_cast<size_t>(i);
        EMBER_CHECK(padding[k] >= 0, prefix, "negative padding is not supported");
        EMBER_CHECK(output_padding[k] >= 0, prefix, "negative output_padding is not supported");
        EMBER_CHECK(stride[k] > 0, prefix, "non-positive stride is not supported");
    }

    const bool unbatched = input.dim() == dims + 1;
    const Tensor x = unbatched ? input.unsqueeze(0) : input;
    EMBER_CHECK(weight.size(0) % groups == 0, "Given groups=", groups, ", expected weight to be divisible by ", groups,
                " at dimension 0, but got weight of size ", weight.sizes(), " instead");
    EMBER_CHECK(x.size(1) == weight.size(0), "Given transposed=1, weight of size ", weight.sizes(), ", expected input",
                x.sizes(), " to have ", weight.size(0), " channels, but got ", x.size(1), " channels instead");
    const int64_t out_channels = weight.size(1) * groups;
    if (bias.defined()) {
        EMBER_CHECK(bias.dim() == 1 && bias.size(0) == out_channels, "Given transposed=1, weight of size ",
                    weight.sizes(), ", expected bias to be 1-dimensional with ", out_channels,
                    " elements, but got bias of size ", bias.sizes(), " instead");
    }

    // PyTorch's shape checks run on a 1-D convolution as on 2-D with a height of 1
    Tensor xs = x, ws = weight;
    if (dims == 1) {
        xs = x.unsqueeze(2);
        ws = weight.unsqueeze(2);
        stride.insert(stride.begin(), 1);
        padding.insert(padding.begin(), 0);
        output_padding.insert(output_padding.begin(), 0);
        dilation.insert(dilation.begin(), 1);
    }
    const int64_t sd = std::max<int64_t>(dims, 2);
    Dims in_size, out_size;
    bool dilation_ok = true, output_padding_ok = true, out_ok = true;
    for (int64_t i = 0; i < sd; ++i) {
        const auto k = static_cast<size_t>(i);
        dilation_ok = dilation_ok && dilation[k] > 0;
        output_padding_ok = output_padding_ok && (output_padding[k] < stride[k] || output_padding[k] < dilation[k]);
        in_size.push_back(xs.size(2 + i));
        out_size.push_back((in_size[k] - 1) * stride[k] - 2 * padding[k] + dilation[k] * (ws.size(2 + i) - 1) +
                           output_padding[k] + 1);
        out_ok = out_ok && out_size[k] > 0;
    }
    EMBER_CHECK(dilation_ok, prefix, "dilation should be greater than zero, but got ",
                per_dim("dilation", dilation, ", "));
    EMBER_CHECK(output_padding_ok, "output padding must be smaller than either stride or dilation, but got ",
                per_dim("output_padding", output_padding, " "), " ", per_dim("stride", stride, " "), " ",
                per_dim("dilation", dilation, " "));
    EMBER_CHECK(out_ok, prefix, "Given input size per channel: ", by(in_size), ". Calculated output size per channel: ",
                by(out_size), ". Output size is too small");

    Tensor out = sd == 2 ? transposed2d(xs, ws, stride, padding, out_size, groups, dilation)
                         : transposed3d(xs, ws, stride, padding, out_size, groups, dilation);
    if (dims == 1) out = out.squeeze(2);
    if (bias.defined()) {
        std::vector<int64_t> shape(static_cast<size_t>(dims + 2), 1);
        shape[1] = -1;
        out = out + bias.to(out.scalar_type()).view(shape);
    } else {
        out = out.contiguous();
    }
    return unbatched ? out.squeeze(0) : out;
}

}  // namespace detail

namespace {

template <size_t D>
Tensor conv_transpose_with_options(const Tensor& input, const Tensor& weight, const ConvTransposeFuncOptions<D>& o) {
    return detail::conv_transpose(static_cast<int64_t>(D), input, weight, o.bias(), o.stride(), o.padding(),
                                  o.output_padding(), o.groups(), o.dilation());
}

}  // namespace

Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
    return detail::conv_transpose(1, input, weight, bias, stride, padding, output_padding, groups, dilation);
}

Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const ConvTranspose1dFuncOptions& options) {
    return conv_transpose_with_options(input, weight, options);
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
    return detail::conv_transpose(2, input, weight, bias, stride, padding, output_padding, groups, dilation);
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const ConvTranspose2dFuncOptions& options) {
    return conv_transpose_with_options(input, weight, options);
}

Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
    return detail::conv_transpose(3, input, weight, bias, stride, padding, output_padding, groups, dilation);
}

Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const ConvTranspose3dFuncOptions& options) {
    return conv_transpose_with_options(input, weight, options);
}

}  // namespace functional
}  // namespace nn
}  // namespace ember
