// Convolution and pooling on NCHW tensors: im2col/col2im (F.unfold / F.fold), conv2d and
// conv1d (im2col + one BLAS gemm per group), max_pool2d (with indices), avg_pool2d and
// adaptive_avg_pool2d. Every backward is written with differentiable ops (im2col and col2im
// are each other's adjoint), so second derivatives work.
#include <array>
#include <cmath>
#include <limits>

#include "blas.h"
#include "op_common.h"

namespace ember {

using namespace native;

namespace {

struct Window {
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
};

std::array<int64_t, 2> pair_of(IntArrayRef v, const char* name) {
    EMBER_CHECK(v.size() == 1 || v.size() == 2, name, " must be a single int or a pair of ints, got ", v);
    return {v[0], v.size() == 2 ? v[1] : v[0]};
}

Window make_window(IntArrayRef kernel, IntArrayRef dilation, IntArrayRef padding, IntArrayRef stride) {
    const auto k = pair_of(kernel, "kernel_size"), d = pair_of(dilation, "dilation"), p = pair_of(padding, "padding"),
               s = pair_of(stride, "stride");
    EMBER_CHECK(k[0] > 0 && k[1] > 0, "kernel size should be greater than zero, but got kernel_size=", kernel);
    EMBER_CHECK(s[0] > 0 && s[1] > 0, "stride should be greater than zero, but got stride=", stride);
    EMBER_CHECK(d[0] > 0 && d[1] > 0, "dilation should be greater than zero, but got dilation=", dilation);
    EMBER_CHECK(p[0] >= 0 && p[1] >= 0, "padding should be non-negative, but got padding=", padding);
    return {k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1]};
}

int64_t conv_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; }

// PyTorch's pooling_output_shape
int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
    const int64_t eff = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
    int64_t out = eff / s + 1;
    if (ceil_mode && (out - 1) * s >= in + p) --out;
    return out;
}

// The output columns xo in [lo, hi) whose input column xo * s - p + j * d lies in [0, size).
inline void valid_range(int64_t size, int64_t out, int64_t s, int64_t p, int64_t off, int64_t& lo, int64_t& hi) {
    // need 0 <= xo * s + (off - p) < size
    const int64_t base = off - p;
    lo = base >= 0 ? 0 : (-base + s - 1) / s;
    hi = size - base <= 0 ? 0 : (size - base + s - 1) / s;
    lo = std::min(lo, out);
    hi = std::max(lo, std::min(hi, out));
}

// One image: (C, H, W) -> cols (C*kh*kw, oh*ow)
template <typename T>
void im2col_image(const T* img, T* cols, int64_t c, int64_t h, int64_t wd, const Window& w, int64_t oh, int64_t ow) {
    const T zero = convert<T>(0);
    for (int64_t ch = 0; ch < c; ++ch) {
        const T* plane = img + ch * h * wd;
        for (int64_t i = 0; i < w.kh; ++i) {
            for (int64_t j = 0; j < w.kw; ++j) {
                T* row = cols + ((ch * w.kh + i) * w.kw + j) * oh * ow;
                int64_t xlo, xhi;
                valid_range(wd, ow, w.sw, w.pw, j * w.dw, xlo, xhi);
                const int64_t xbase = j * w.dw - w.pw;
                for (int64_t y = 0; y < oh; ++y) {
                    const int64_t iy = y * w.sh - w.ph + i * w.dh;
                    T* out = row + y * ow;
                    if (iy < 0 || iy >= h) {
                        std::fill(out, out + ow, zero);
                        continue;
                    }
                    const T* in_row = plane + iy * wd;
                    std::fill(out, out + xlo, zero);
                    if (w.sw == 1) {
                        const T* src = in_row + xbase;
                        for (int64_t xo = xlo; xo < xhi; ++xo) out[xo] = src[xo];
                    } else {
                        for (int64_t xo = xlo; xo < xhi; ++xo) out[xo] = in_row[xo * w.sw + xbase];
                    }
                    std::fill(out + xhi, out + ow, zero);
                }
            }
        }
    }
}

// One image: adds cols (C*kh*kw, oh*ow) into img (C, H, W)
template <typename T>
void col2im_image(const T* cols, T* img, int64_t c, int64_t h, int64_t wd, const Window& w, int64_t oh, int64_t ow) {
    using O = opmath_t<T>;
    for (int64_t ch = 0; ch < c; ++ch) {
        T* plane = img + ch * h * wd;
        for (int64_t i = 0; i < w.kh; ++i) {
            for (int64_t j = 0; j < w.kw; ++j) {
                const T* row = cols + ((ch * w.kh + i) * w.kw + j) * oh * ow;
                int64_t xlo, xhi;
                valid_range(wd, ow, w.sw, w.pw, j * w.dw, xlo, xhi);
                const int64_t xbase = j * w.dw - w.pw;
                for (int64_t y = 0; y < oh; ++y) {
                    const int64_t iy = y * w.sh - w.ph + i * w.dh;
                    if (iy < 0 || iy >= h) continue;
                    T* out_row = plane + iy * wd;
                    const T* in = row + y * ow;
                    for (int64_t xo = xlo; xo < xhi; ++xo) {
                        T& dst = out_row[xo * w.sw + xbase];
                        dst = static_cast<T>(static_cast<O>(dst) + static_cast<O>(in[xo]));
                    }
                }
            }
        }
    }
}

// (N, C, H, W) -> (N, C*kh*kw, oh*ow)
Tensor im2col_kernel(const Tensor& input, const Window& w, int64_t oh, int64_t ow) {
    const Tensor x = contiguous_data(input);
    const int64_t n = x.size(0), c = x.size(1), h = x.size(2), wd = x.size(3);
    const int64_t k = c * w.kh * w.kw;
    Tensor cols = empty_tensor({n, k, oh * ow}, x.scalar_type());
    dispatch_all(x.scalar_type(), "im2col", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* src = static_cast<const T*>(x.data_ptr());
        T* dst = static_cast<T*>(cols.data_ptr());
        for (int64_t b = 0; b < n; ++b) im2col_image(src + b * c * h * wd, dst + b * k * oh * ow, c, h, wd, w, oh, ow);
    });
    return cols;
}

// (N, C*kh*kw, oh*ow) -> (N, C, H, W), overlapping patches summed
Tensor col2im_kernel(const Tensor& cols_in, int64_t c, int64_t h, int64_t wd, const Window& w, int64_t oh, int64_t ow) {
    const Tensor cols = contiguous_data(cols_in);
    const int64_t n = cols.size(0);
    Tensor out = zeros({n, c, h, wd}, cols.scalar_type());
    dispatch_numeric(cols.scalar_type(), "col2im", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* src = static_cast<const T*>(cols.data_ptr());
        T* dst = static_cast<T*>(out.data_ptr());
        const int64_t k = c * w.kh * w.kw;
        for (int64_t b = 0; b < n; ++b) col2im_image(src + b * k * oh * ow, dst + b * c * h * wd, c, h, wd, w, oh, ow);
    });
    return out;
}

Tensor im2col_op(const Tensor& input, const Window& w, IntArrayRef kernel, IntArrayRef dilation, IntArrayRef padding,
                 IntArrayRef stride);

Tensor col2im_op(const Tensor& cols, int64_t h, int64_t wd, const Window& w, IntArrayRef kernel, IntArrayRef dilation,
                 IntArrayRef padding, IntArrayRef stride) {
    EMBER_CHECK(cols.dim() == 3, "Expected 3D (batched) input to col2im, but got input of size ", cols.sizes());
    const int64_t oh = conv_out(h, w.kh, w.sh, w.ph, w.dh), ow = conv_out(wd, w.kw, w.sw, w.pw, w.dw);
    EMBER_CHECK(cols.size(1) % (w.kh * w.kw) == 0, "Expected size of input's dimension 1 to be divisible by the product "
                                                   "of kernel_size, but got input.size(1)=", cols.size(1),
                " and kernel_size=", kernel);
    EMBER_CHECK(cols.size(2) == oh * ow, "Given output_size=(", h, ", ", wd, "), kernel_size=", kernel, ", dilation=",
                dilation, ", padding=", padding, ", stride=", stride, ", expected size of input's dimension 2 to match "
                "the calculated number of sliding blocks ", oh, " * ", ow, " = ", oh * ow, ", but got input.size(2)=",
                cols.size(2), ".");
    const int64_t c = cols.size(1) / (w.kh * w.kw);
    Tensor out = col2im_kernel(cols, c, h, wd, w, oh, ow);
    const auto k = kernel.vec(), d = dilation.vec(), p = padding.vec(), s = stride.vec();
    record_unary(out, cols, "Col2ImBackward0", [w, k, d, p, s](const Tensor& g) { return im2col_op(g, w, k, d, p, s); });
    return out;
}

Tensor im2col_op(const Tensor& input, const Window& w, IntArrayRef kernel, IntArrayRef dilation, IntArrayRef padding,
                 IntArrayRef stride) {
    EMBER_CHECK(input.dim() == 4, "Expected 4D (batched) input to im2col, but got input of size ", input.sizes());
    const int64_t h = input.size(2), wd = input.size(3);
    const int64_t oh = conv_out(h, w.kh, w.sh, w.ph, w.dh), ow = conv_out(wd, w.kw, w.sw, w.pw, w.dw);
    EMBER_CHECK(oh > 0 && ow > 0, "Given input with spatial size (", h, ", ", wd, "), kernel_size=", kernel,
                ", dilation=", dilation, ", padding=", padding, ", calculated shape of the array of sliding blocks as (",
                oh, ", ", ow, "), but its components must be at least one.");
    Tensor out = im2col_kernel(input, w, oh, ow);
    const auto k = kernel.vec(), d = dilation.vec(), p = padding.vec(), s = stride.vec();
    record_unary(out, input, "Im2ColBackward0",
                 [w, h, wd, k, d, p, s](const Tensor& g) { return col2im_op(g, h, wd, w, k, d, p, s); });
    return out;
}

// out[n] = weight2d @ cols[n] (+ bias): one gemm over all images, (O, K) @ (K, N*L)
Tensor conv_forward(const Tensor& cols, const Tensor& w2, const Tensor& bias) {
    const int64_t n = cols.size(0), k = cols.size(1), l = cols.size(2), o = w2.size(0);
    NoGradGuard g;
    const Tensor stacked = cols.permute({1, 0, 2}).reshape({k, n * l});  // (K, N*L)
    Tensor out = w2.mm(stacked);                                           // (O, N*L)
    out = out.view({o, n, l}).permute({1, 0, 2});
    if (bias.defined()) out = out + bias.view({1, o, 1});
    return out.contiguous();
}

// Fast paths for float32/float64: per image and group, im2col into one reused buffer and one
// gemm straight into the output (no stacked copies).
template <typename T>
void conv2d_forward_fast(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& out, int64_t groups,
                         const Window& w, int64_t oh, int64_t ow) {
    const int64_t n = x.size(0), c = x.size(1), h = x.size(2), wd = x.size(3), o = weight.size(0);
    const int64_t cg = c / groups, og = o / groups, k = cg * w.kh * w.kw, l = oh * ow;
    std::vector<T> cols(static_cast<size_t>(k * l));
    const T* xp = static_cast<const T*>(x.data_ptr());
    const T* wp = static_cast<const T*>(weight.data_ptr());
    T* op = static_cast<T*>(out.data_ptr());
    for (int64_t b = 0; b < n; ++b) {
        for (int64_t g = 0; g < groups; ++g) {
            im2col_image(xp + (b * c + g * cg) * h * wd, cols.data(), cg, h, wd, w, oh, ow);
            blas::gemm(false, false, og, l, k, T(1), wp + g * og * k, k, cols.data(), l, T(0), op + (b * o + g * og) * l, l);
        }
        if (bias.defined()) {
            const T* bp = static_cast<const T*>(bias.data_ptr());
            for (int64_t oc = 0; oc < o; ++oc) {
                T* row = op + (b * o + oc) * l;
                const T bv = bp[oc];
                for (int64_t i = 0; i < l; ++i) row[i] += bv;
            }
        }
    }
}

// grad_input (N, C, H, W) and grad_weight (O, C/g, kh, kw) (either may be skipped)
template <typename T>
void conv2d_backward_fast(const Tensor& x, const Tensor& weight, const Tensor& gout, Tensor* gx, Tensor* gw,
                          int64_t groups, const Window& w, int64_t oh, int64_t ow) {
    const int64_t n = x.size(0), c = x.size(1), h = x.size(2), wd = x.size(3), o = weight.size(0);
    const int64_t cg = c / groups, og = o / groups, k = cg * w.kh * w.kw, l = oh * ow;
    std::vector<T> cols(static_cast<size_t>(k * l));
    const T* xp = static_cast<const T*>(x.data_ptr());
    const T* wp = static_cast<const T*>(weight.data_ptr());
    const T* gp = static_cast<const T*>(gout.data_ptr());
    T* gxp = gx ? static_cast<T*>(gx->data_ptr()) : nullptr;
    T* gwp = gw ? static_cast<T*>(gw->data_ptr()) : nullptr;
    for (int64_t b = 0; b < n; ++b) {
        for (int64_t g = 0; g < groups; ++g) {
            const T* gblock = gp + (b * o + g * og) * l;  // (O/g, L)
            if (gwp) {
                im2col_image(xp + (b * c + g * cg) * h * wd, cols.data(), cg, h, wd, w, oh, ow);
                blas::gemm(false, true, og, k, l, T(1), gblock, l, cols.data(), l, T(1), gwp + g * og * k, k);
            }
            if (gxp) {
                blas::gemm(true, false, k, l, og, T(1), wp + g * og * k, k, gblock, l, T(0), cols.data(), l);
                col2im_image(cols.data(), gxp + (b * c + g * cg) * h * wd, cg, h, wd, w, oh, ow);
            }
        }
    }
}

}  // namespace

Tensor im2col(const Tensor& input, IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding, IntArrayRef stride) {
    return im2col_op(input, make_window(kernel_size, dilation, padding, stride), kernel_size, dilation, padding, stride);
}

Tensor col2im(const Tensor& input, IntArrayRef output_size, IntArrayRef kernel_size, IntArrayRef dilation,
              IntArrayRef padding, IntArrayRef stride) {
    const auto os = pair_of(output_size, "output_size");
    return col2im_op(input, os[0], os[1], make_window(kernel_size, dilation, padding, stride), kernel_size, dilation,
                     padding, stride);
}

Tensor conv2d(const Tensor& input_in, const Tensor& weight, const Tensor& bias, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, int64_t groups) {
    EMBER_CHECK(input_in.dim() == 3 || input_in.dim() == 4, "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got "
                                                          "input of size: ", input_in.sizes());
    EMBER_CHECK(weight.dim() == 4, "weight should have at least three dimensions");
    EMBER_CHECK(groups > 0, "non-positive groups is not supported");
    const bool unbatched = input_in.dim() == 3;
    const Tensor input = unbatched ? input_in.unsqueeze(0) : input_in;
    const int64_t n = input.size(0), c = input.size(1), h = input.size(2), wd = input.size(3);
    const int64_t o = weight.size(0), cg = weight.size(1);
    EMBER_CHECK(o % groups == 0, "Given groups=", groups, ", expected weight to be divisible by ", groups,
                " at dimension 0, but got weight of size ", weight.sizes(), " instead");
    EMBER_CHECK(c == cg * groups, "Given groups=", groups, ", weight of size ", weight.sizes(), ", expected input",
                input.sizes(), " to have ", cg * groups, " channels, but got ", c, " channels instead");
    if (bias.defined()) {
        EMBER_CHECK(bias.dim() == 1 && bias.size(0) == o, "Given weight of size ", weight.sizes(),
                    ", expected bias to be 1-dimensional with ", o, " elements, but got bias of size ", bias.sizes(),
                    " instead");
    }
    EMBER_CHECK(input.scalar_type() == weight.scalar_type(), "Input type (", input.toString(),
                ") and weight type (", weight.toString(), ") should be the same");
    const Window w = make_window({weight.size(2), weight.size(3)}, dilation, padding, stride);
    const int64_t ph = h + 2 * w.ph, pw = wd + 2 * w.pw;
    const int64_t ekh = w.dh * (w.kh - 1) + 1, ekw = w.dw * (w.kw - 1) + 1;
    EMBER_CHECK(ph >= ekh && pw >= ekw, "Calculated padded input size per channel: (", ph, " x ", pw,
                "). Kernel size: (", ekh, " x ", ekw, "). Kernel size can't be greater than actual input size");
    const int64_t oh = conv_out(h, w.kh, w.sh, w.ph, w.dh), ow = conv_out(wd, w.kw, w.sw, w.pw, w.dw);
    const int64_t og = o / groups;

    Tensor out;
    const ScalarType dt = input.scalar_type();
    if (dt == kFloat || dt == kDouble) {
        const Tensor xc = contiguous_data(input), wc = contiguous_data(weight);
        const Tensor bc = bias.defined() ? contiguous_data(cast(bias, dt)) : Tensor();
        out = empty_tensor({n, o, oh, ow}, dt);
        if (dt == kFloat) conv2d_forward_fast<float>(xc, wc, bc, out, groups, w, oh, ow);
        else conv2d_forward_fast<double>(xc, wc, bc, out, groups, w, oh, ow);
    } else {
        NoGradGuard guard;
        std::vector<Tensor> parts;
        for (int64_t g = 0; g < groups; ++g) {
            const Tensor xg = groups == 1 ? input : input.narrow(1, g * cg, cg);
            const Tensor wg = groups == 1 ? weight : weight.narrow(0, g * og, og);
            const Tensor bg = !bias.defined() ? Tensor() : (groups == 1 ? bias : bias.narrow(0, g * og, og));
            const Tensor cols = im2col_kernel(xg, w, oh, ow);
            parts.push_back(conv_forward(cols, wg.reshape({og, -1}), bg));
        }
        out = (groups == 1 ? parts[0] : cat(parts, 1)).view({n, o, oh, ow});
    }
    if (auto node = make_node("ConvolutionBackward0", {input, weight, bias})) {
        set_history(out, node, 0);
        node->save(input);
        node->save(weight);
        const std::vector<int64_t> k{w.kh, w.kw}, d{w.dh, w.dw}, p{w.ph, w.pw}, s{w.sh, w.sw};
        node->set_formula([w, k, d, p, s, groups, og, cg, h, wd, n, oh, ow](FunctionNode& nd, variable_list&& gr) -> variable_list {
            if (!gr[0].defined()) return {Tensor(), Tensor(), Tensor()};
            const Tensor x = nd.saved(0), weight_s = nd.saved(1);
            const ScalarType dt = x.scalar_type();
            if (!GradMode::is_enabled() && (dt == kFloat || dt == kDouble)) {
                // first-order backward: direct kernels
                const Tensor xc = contiguous_data(x), wc = contiguous_data(weight_s), gc = contiguous_data(gr[0]);
                Tensor gx, gw, gb;
                if (nd.needs(0)) gx = zeros(x.sizes(), dt);
                if (nd.needs(1)) gw = zeros(weight_s.sizes(), dt);
                if (nd.needs(0) || nd.needs(1)) {
                    if (dt == kFloat) {
                        conv2d_backward_fast<float>(xc, wc, gc, nd.needs(0) ? &gx : nullptr, nd.needs(1) ? &gw : nullptr,
                                                    groups, w, oh, ow);
                    } else {
                        conv2d_backward_fast<double>(xc, wc, gc, nd.needs(0) ? &gx : nullptr, nd.needs(1) ? &gw : nullptr,
                                                     groups, w, oh, ow);
                    }
                }
                if (nd.needs(2)) gb = gr[0].sum({0, 2, 3});
                return {gx, gw, gb};
            }
            const int64_t l = oh * ow;
            const Tensor go = gr[0].reshape({n, og * groups, l});
            std::vector<Tensor> gx_parts, gw_parts;
            for (int64_t g = 0; g < groups; ++g) {
                const Tensor gog = groups == 1 ? go : go.narrow(1, g * og, og);      // (N, O/g, L)
                const Tensor g_stack = gog.permute({1, 0, 2}).reshape({og, n * l});  // (O/g, N*L)
                const Tensor wg = (groups == 1 ? weight_s : weight_s.narrow(0, g * og, og)).reshape({og, -1});
                const int64_t kk = wg.size(1);
                if (nd.needs(0)) {
                    // d/dx: col2im(W^T @ g), one gemm for the whole batch
                    const Tensor gcols = wg.t().mm(g_stack).view({kk, n, l}).permute({1, 0, 2});
                    gx_parts.push_back(col2im_op(gcols, h, wd, w, k, d, p, s));
                }
                if (nd.needs(1)) {
                    // d/dW: g @ im2col(x)^T summed over the batch, one gemm
                    const Tensor xg = groups == 1 ? x : x.narrow(1, g * cg, cg);
                    const Tensor cols = im2col_op(xg, w, k, d, p, s).permute({1, 0, 2}).reshape({kk, n * l});
                    gw_parts.push_back(g_stack.mm(cols.t()).view({og, cg, w.kh, w.kw}));
                }
            }
            Tensor gx, gw, gb;
            if (nd.needs(0)) gx = groups == 1 ? gx_parts[0] : cat(gx_parts, 1);
            if (nd.needs(1)) gw = groups == 1 ? gw_parts[0] : cat(gw_parts, 0);
            if (nd.needs(2)) gb = gr[0].sum({0, 2, 3});
            return {gx, gw, gb};
        });
    }
    return unbatched ? out.squeeze(0) : out;
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, int64_t groups) {
    EMBER_CHECK(input.dim() == 2 || input.dim() == 3, "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got "
                                                    "input of size: ", input.sizes());
    EMBER_CHECK(weight.dim() == 3, "weight should have at least three dimensions");
    EMBER_CHECK(stride.size() == 1 && padding.size() == 1 && dilation.size() == 1,
                "conv1d expects single-int stride, padding and dilation");
    const Tensor x = input.unsqueeze(-2);  // (..., C, 1, L)
    Tensor out = conv2d(x, weight.unsqueeze(2), bias, {1, stride[0]}, {0, padding[0]}, {1, dilation[0]}, groups);
    return out.squeeze(-2);
}

// ---- max pooling -------------------------------------------------------------------------------------------
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& self_in, IntArrayRef kernel_size, IntArrayRef stride_in,
                                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
    EMBER_CHECK(self_in.dim() == 3 || self_in.dim() == 4, "max_pool2d: Expected 3D or 4D tensor, but got ", self_in.sizes());
    const bool unbatched = self_in.dim() == 3;
    const Tensor self = unbatched ? self_in.unsqueeze(0) : self_in;
    const Window w = make_window(kernel_size, dilation, padding, stride_in.empty() ? kernel_size : stride_in);
    EMBER_CHECK(w.ph <= w.kh / 2 && w.pw <= w.kw / 2, "pad should be at most half of effective kernel size, but got pad=",
                w.ph, ", kernel_size=", w.kh, " and dilation=", w.dh);
    const int64_t n = self.size(0), c = self.size(1), h = self.size(2), wd = self.size(3);
    const int64_t oh = pool_out(h, w.kh, w.sh, w.ph, w.dh, ceil_mode), ow = pool_out(wd, w.kw, w.sw, w.pw, w.dw, ceil_mode);
    EMBER_CHECK(oh > 0 && ow > 0, "max_pool2d: Given input size: (", c, "x", h, "x", wd, "). Calculated output size: (",
                c, "x", oh, "x", ow, "). Output size is too small");
    const Tensor x = contiguous_data(self);
    Tensor out = empty_tensor({n, c, oh, ow}, x.scalar_type());
    Tensor idx = empty_tensor({n, c, oh, ow}, kLong);
    dispatch_numeric(x.scalar_type(), "max_pool2d", [&](auto tag) {
        using T = typename decltype(tag)::type;
        using O = opmath_t<T>;
        const T* src = static_cast<const T*>(x.data_ptr());
        T* dst = static_cast<T*>(out.data_ptr());
        int64_t* ip = static_cast<int64_t*>(idx.data_ptr());
        // the kernel taps inside the input, per output row / column
        std::vector<int64_t> ilo(static_cast<size_t>(oh)), ihi(static_cast<size_t>(oh));
        std::vector<int64_t> jlo(static_cast<size_t>(ow)), jhi(static_cast<size_t>(ow));
        auto taps = [](int64_t start, int64_t size, int64_t k, int64_t d, int64_t& lo, int64_t& hi) {
            lo = start >= 0 ? 0 : (-start + d - 1) / d;
            hi = std::min<int64_t>(k, (size - start + d - 1) / d);
            if (hi < lo) hi = lo;
        };
        for (int64_t y = 0; y < oh; ++y) taps(y * w.sh - w.ph, h, w.kh, w.dh, ilo[static_cast<size_t>(y)], ihi[static_cast<size_t>(y)]);
        for (int64_t x = 0; x < ow; ++x) taps(x * w.sw - w.pw, wd, w.kw, w.dw, jlo[static_cast<size_t>(x)], jhi[static_cast<size_t>(x)]);
        // locals (not the captured Window) so stores through the outputs cannot alias them
        const int64_t sh = w.sh, sw = w.sw, ph = w.ph, pw = w.pw, dh = w.dh, dw = w.dw;
        const int64_t* ilo_p = ilo.data();
        const int64_t* ihi_p = ihi.data();
        const int64_t* jlo_p = jlo.data();
        const int64_t* jhi_p = jhi.data();
        O lowest;
        if constexpr (std::is_floating_point_v<O>) lowest = -std::numeric_limits<O>::infinity();
        else lowest = std::numeric_limits<O>::lowest();
        const int64_t planes = n * c, hw = h * wd, ohw = oh * ow;
        for (int64_t b = 0; b < planes; ++b) {
            const T* __restrict__ plane = src + b * hw;
            T* __restrict__ orow = dst + b * ohw;
            int64_t* __restrict__ irow = ip + b * ohw;
            for (int64_t y = 0; y < oh; ++y) {
                const int64_t y0 = y * sh - ph;
                const int64_t i0 = ilo_p[y], i1 = ihi_p[y];
                for (int64_t xo = 0; xo < ow; ++xo) {
                    // branch-free (random data would defeat the branch predictor); the first
                    // NaN wins, as PyTorch; -inf everywhere gives the first tap
                    const int64_t x0 = xo * sw - pw;
                    const int64_t j0 = jlo_p[xo], j1 = jhi_p[xo];
                    int64_t bi = (y0 + i0 * dh) * wd + (x0 + j0 * dw);
                    O best = lowest;
                    for (int64_t i = i0; i < i1; ++i) {
                        const int64_t rowoff = (y0 + i * dh) * wd;
                        for (int64_t j = j0; j < j1; ++j) {
                            const int64_t off = rowoff + x0 + j * dw;
                            const O v = static_cast<O>(plane[off]);
                            const bool take = (v > best) | ((v != v) & (best == best));
                            best = take ? v : best;
                            bi = take ? off : bi;
                        }
                    }
                    orow[y * ow + xo] = static_cast<T>(best);
                    irow[y * ow + xo] = bi;
                }
            }
        }
    });
    if (auto node = make_node("MaxPool2DWithIndicesBackward0", {self})) {
        set_history(out, node, 0);
        node->save(idx);
        node->set_formula([n, c, h, wd](FunctionNode& nd, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            const Tensor ix = nd.saved(0).reshape({n, c, -1});
            return {zeros({n, c, h * wd}, g[0].scalar_type()).scatter_add(2, ix, g[0].reshape({n, c, -1})).view({n, c, h, wd})};
        });
    }
    if (unbatched) return {out.squeeze(0), idx.squeeze(0)};
    return {out, idx};
}

Tensor max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                  bool ceil_mode) {
    return std::get<0>(max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode));
}

// ---- average pooling -----------------------------------------------------------------------------------------
namespace {

struct AvgPoolParams {
    Window w;
    int64_t h, wd, oh, ow;
    bool count_include_pad;
    std::optional<int64_t> divisor_override;

    // One output element's window: rows [hs, he) x columns [ws, we) clipped to the input,
    // its divisor, the offset of its input plane and its own offset in the output.
    struct Span {
        int64_t hs, he, ws, we, div, plane, out;
    };

    // Calls f(span) for every output element of nc planes.
    template <typename F>
    void for_each_window(int64_t nc, F&& f) const {
        for (int64_t b = 0; b < nc; ++b) {
            for (int64_t y = 0; y < oh; ++y) {
                for (int64_t x = 0; x < ow; ++x) {
                    Span s;
                    s.hs = y * w.sh - w.ph;
                    s.ws = x * w.sw - w.pw;
                    s.he = std::min(s.hs + w.kh, h + w.ph);
                    s.we = std::min(s.ws + w.kw, wd + w.pw);
                    const int64_t pool = (s.he - s.hs) * (s.we - s.ws);
                    s.hs = std::max<int64_t>(s.hs, 0);
                    s.ws = std::max<int64_t>(s.ws, 0);
                    s.he = std::min(s.he, h);
                    s.we = std::min(s.we, wd);
                    s.div = divisor_override ? *divisor_override
                                             : count_include_pad ? pool : (s.he - s.hs) * (s.we - s.ws);
                    s.plane = b * h * wd;
                    s.out = (b * oh + y) * ow + x;
                    f(s);
                }
            }
        }
    }
};

// Average pooling of x (Adjoint false), or its adjoint applied to x (Adjoint true: each
// output gradient spread over its window); each is the other's backward.
template <bool Adjoint>
Tensor avg_pool_op(const Tensor& x_in, const AvgPoolParams& p) {
    const Tensor x = contiguous_data(x_in);
    const int64_t n = x.size(0), c = x.size(1);
    Tensor out = Adjoint ? zeros({n, c, p.h, p.wd}, x.scalar_type()) : empty_tensor({n, c, p.oh, p.ow}, x.scalar_type());
    dispatch_floating(x.scalar_type(), Adjoint ? "avg_pool2d_backward" : "avg_pool2d", [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = acc_float_t<T>;
        const T* src = static_cast<const T*>(x.data_ptr());
        T* dst = static_cast<T*>(out.data_ptr());
        p.for_each_window(n * c, [&](const AvgPoolParams::Span& s) {
            if constexpr (Adjoint) {
                const A v = static_cast<A>(src[s.out]) / static_cast<A>(s.div);
                for (int64_t i = s.hs; i < s.he; ++i) {
                    T* row = dst + s.plane + i * p.wd;
                    for (int64_t j = s.ws; j < s.we; ++j) row[j] = static_cast<T>(static_cast<A>(row[j]) + v);
                }
            } else {
                A sum = 0;
                for (int64_t i = s.hs; i < s.he; ++i) {
                    const T* row = src + s.plane + i * p.wd;
                    for (int64_t j = s.ws; j < s.we; ++j) sum += static_cast<A>(row[j]);
                }
                dst[s.out] = static_cast<T>(sum / static_cast<A>(s.div));
            }
        });
    });
    record_unary(out, x_in, Adjoint ? "AvgPool2DBackwardBackward0" : "AvgPool2DBackward0",
                 [p](const Tensor& g) { return avg_pool_op<!Adjoint>(g, p); });
    return out;
}

}  // namespace

Tensor avg_pool2d(const Tensor& self_in, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
    EMBER_CHECK(self_in.dim() == 3 || self_in.dim() == 4, "avg_pool2d: Expected 3D or 4D tensor, but got ", self_in.sizes());
    EMBER_CHECK(!divisor_override || *divisor_override != 0, "divisor must be not zero");
    const bool unbatched = self_in.dim() == 3;
    const Tensor self = unbatched ? self_in.unsqueeze(0) : self_in;
    AvgPoolParams p;
    p.w = make_window(kernel_size, {1}, padding, stride.empty() ? kernel_size : stride);
    EMBER_CHECK(p.w.ph <= p.w.kh / 2 && p.w.pw <= p.w.kw / 2, "pad should be at most half of kernel size, but got pad=",
                p.w.ph, " and kernel_size=", p.w.kh);
    p.h = self.size(2);
    p.wd = self.size(3);
    p.oh = pool_out(p.h, p.w.kh, p.w.sh, p.w.ph, 1, ceil_mode);
    p.ow = pool_out(p.wd, p.w.kw, p.w.sw, p.w.pw, 1, ceil_mode);
    EMBER_CHECK(p.oh > 0 && p.ow > 0, "avg_pool2d: Output size is too small");
    p.count_include_pad = count_include_pad;
    p.divisor_override = divisor_override;
    Tensor out = avg_pool_op<false>(self, p);
    return unbatched ? out.squeeze(0) : out;
}

Tensor adaptive_avg_pool2d(const Tensor& self, IntArrayRef output_size) {
    EMBER_CHECK(self.dim() == 3 || self.dim() == 4, "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got ", self.sizes());
    const auto os = pair_of(output_size, "output_size");
    const int64_t h = self.size(-2), wd = self.size(-1);
    EMBER_CHECK(os[0] >= 0 && os[1] >= 0, "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0");
    if (os[0] == 1 && os[1] == 1) return self.mean({-2, -1}, /*keepdim=*/true);
    // out = P_h @ x @ P_w^T with averaging matrices (PyTorch's adaptive windows)
    auto pool_matrix = [&](int64_t out_size, int64_t in_size) {
        Tensor m = zeros({out_size, in_size}, self.scalar_type());
        NoGradGuard g;
        for (int64_t i = 0; i < out_size; ++i) {
            const int64_t start = (i * in_size) / out_size;
            const int64_t end = ((i + 1) * in_size + out_size - 1) / out_size;
            m[i].narrow(0, start, end - start).fill_(1.0 / static_cast<double>(end - start));
        }
        return m;
    };
    const Tensor ph = pool_matrix(os[0], h), pw = pool_matrix(os[1], wd);
    return ph.matmul(self).matmul(pw.t());
}

}  // namespace ember
