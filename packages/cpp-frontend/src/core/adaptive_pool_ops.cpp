// Adaptive max pooling over the last 1, 2 or 3 dims (aten's adaptive_max_pool{1,2,3}d):
// one kernel for every dimensionality (missing leading spatial dims have size 1), the
// indices flat in each input plane, and a backward that scatters the gradient to each
// window's maximum (scatter_add, itself differentiable).
#include <cmath>
#include <limits>
#include <string>

#include "op_common.h"

namespace ember {

using namespace native;

namespace {

std::tuple<Tensor, Tensor> adaptive_max_pool(int64_t n, const Tensor& self, IntArrayRef output_size) {
    const std::string name = "adaptive_max_pool" + std::to_string(n) + "d";
    const int64_t nd = self.dim();
    if (n == 1) {
        EMBER_CHECK(nd == 2 || nd == 3, "Expected 2 to 3 dimensions, but got ", nd,
                    "-dimensional tensor for argument #1 'self' (while checking arguments for adaptive_max_pool1d)");
    } else {
        EMBER_CHECK(nd == n + 1 || nd == n + 2, name, "(): Expected ", n + 1, "D or ", n + 2, "D tensor, but got: ",
                    self.sizes());
    }
    // one value stands for all (Python's int output_size)
    EMBER_CHECK(output_size.size() == 1 || static_cast<int64_t>(output_size.size()) == n, name,
                "(): internal error: output_size.size() must be ", n);
    const std::vector<int64_t> sizes = output_size.size() == 1
                                           ? std::vector<int64_t>(static_cast<std::size_t>(n), output_size[0])
                                           : output_size.vec();
    for (int64_t d = 1; d < nd; ++d) {
        EMBER_CHECK(self.size(d) > 0, name, "(): Expected input to have non-zero size for non-batch dimensions, but input "
                    "has sizes ", self.sizes(), " with dimension ", d, " being empty");
    }
    for (int64_t y : sizes) {
        EMBER_CHECK(y >= 0, name, "(): elements of output_size must be greater than or equal to 0 but received ",
                    output_size);
    }
    const bool unbatched = nd == n + 1;
    const Tensor input = unbatched ? self.unsqueeze(0) : self;
    // (planes, X0, X1, X2) -> (planes, Y0, Y1, Y2), absent leading axes of size 1
    int64_t xs[3] = {1, 1, 1}, ys[3] = {1, 1, 1};
    for (int64_t i = 0; i < n; ++i) {
        xs[3 - n + i] = input.size(input.dim() - n + i);
        ys[3 - n + i] = sizes[static_cast<std::size_t>(i)];
    }
    std::vector<int64_t> out_shape = input.sizes().vec();
    for (int64_t i = 0; i < n; ++i) out_shape[static_cast<std::size_t>(input.dim() - n + i)] = ys[3 - n + i];
    const int64_t volume = xs[0] * xs[1] * xs[2], out_volume = ys[0] * ys[1] * ys[2];
    const int64_t planes = input.numel() / volume;
    const Tensor x = contiguous_data(input);
    Tensor out = empty_tensor(out_shape, x.scalar_type());
    Tensor idx = empty_tensor(out_shape, kLong);
    // window i of an axis of size X pooled to Y: [floor(i X / Y), ceil((i + 1) X / Y))
    std::vector<int64_t> lo[3], hi[3];
    for (int a = 0; a < 3; ++a) {
        for (int64_t i = 0; i < ys[a]; ++i) {
            lo[a].push_back(i * xs[a] / ys[a]);
            hi[a].push_back(((i + 1) * xs[a] + ys[a] - 1) / ys[a]);
        }
    }
    dispatch_floating(x.scalar_type(), name.c_str(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        using O = opmath_t<T>;
        const T* src = static_cast<const T*>(x.data_ptr());
        T* dst = static_cast<T*>(out.data_ptr());
        int64_t* ip = static_cast<int64_t*>(idx.data_ptr());
        for (int64_t p = 0; p < planes; ++p) {
            const T* plane = src + p * volume;
            int64_t o = p * out_volume;
            for (int64_t a = 0; a < ys[0]; ++a) {
                for (int64_t b = 0; b < ys[1]; ++b) {
                    for (int64_t c = 0; c < ys[2]; ++c, ++o) {
                        const int64_t a0 = lo[0][a], a1 = hi[0][a], b0 = lo[1][b], b1 = hi[1][b];
                        const int64_t c0 = lo[2][c], c1 = hi[2][c];
                        O best = -std::numeric_limits<O>::infinity();
                        int64_t bi = (a0 * xs[1] + b0) * xs[2] + c0;
                        for (int64_t i = a0; i < a1; ++i) {
                            for (int64_t j = b0; j < b1; ++j) {
                                const int64_t row = (i * xs[1] + j) * xs[2];
                                for (int64_t k = c0; k < c1; ++k) {
                                    const O v = static_cast<O>(plane[row + k]);
                                    // the first maximum; a NaN always (so the last NaN), as PyTorch
                                    if (v > best || std::isnan(v)) {
                                        best = v;
                                        bi = row + k;
                                    }
                                }
                            }
                        }
                        dst[o] = static_cast<T>(best);
                        ip[o] = bi;
                    }
                }
            }
        }
    });
    static const char* const kNodes[] = {"AdaptiveMaxPool1DBackward0", "AdaptiveMaxPool2DBackward0",
                                         "AdaptiveMaxPool3DBackward0"};
    if (auto node = make_node(kNodes[n - 1], {input})) {
        set_history(out, node, 0);
        node->save(idx);
        const std::vector<int64_t> in_shape = input.sizes().vec();
        node->set_formula([planes, volume, in_shape](FunctionNode& nd_, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            const Tensor ix = nd_.saved(0).reshape({planes, -1});
            return {zeros({planes, volume}, g[0].scalar_type())
                        .scatter_add(1, ix, g[0].reshape({planes, -1}))
                        .view(in_shape)};
        });
    }
    if (unbatched) return {out.squeeze(0), idx.squeeze(0)};
    return {out, idx};
}

}  // namespace

std::tuple<Tensor, Tensor> adaptive_max_pool1d(const Tensor& self, IntArrayRef output_size) {
    return adaptive_max_pool(1, self, output_size);
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& self, IntArrayRef output_size) {
    return adaptive_max_pool(2, self, output_size);
}

std::tuple<Tensor, Tensor> adaptive_max_pool3d(const Tensor& self, IntArrayRef output_size) {
    return adaptive_max_pool(3, self, output_size);
}

}  // namespace ember
