// The ops as free functions in namespace ember (libtorch's at::/torch:: names). Each has a
// Tensor method of the same name where libtorch has one (tensor.h). All of them record
// autograd history when grad mode is on and an input requires grad.
#pragma once

#include "export.h"
#include <cstdint>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "factories.h"
#include "tensor.h"

namespace ember {

// ---- type promotion and broadcasting ----------------------------------------------------
// PyTorch's result_type: dims>0 tensors, then 0-dim tensors, then Scalars (which act as
// Python numbers: they only move the result to a higher category bool < int < float).
EMBER_API ScalarType result_type(const Tensor& a, const Tensor& b);
EMBER_API ScalarType result_type(const Tensor& a, const Scalar& b);
EMBER_API ScalarType result_type(const Scalar& a, const Tensor& b);
EMBER_API ScalarType result_type(const Scalar& a, const Scalar& b);
EMBER_API ScalarType result_type(TensorList tensors);
// The broadcast shape of a and b (PyTorch's error when they do not broadcast).
EMBER_API std::vector<int64_t> infer_size(IntArrayRef a, IntArrayRef b);
EMBER_API std::vector<int64_t> broadcast_shapes(const std::vector<std::vector<int64_t>>& shapes);
EMBER_API std::vector<Tensor> broadcast_tensors(TensorList tensors);
// Sums grad over the dims that broadcasting added or expanded, giving shape `shape`.
EMBER_API Tensor sum_to(const Tensor& grad, IntArrayRef shape);

// ---- pointwise ---------------------------------------------------------------------------
EMBER_API Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
EMBER_API Tensor add(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
EMBER_API Tensor sub(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
EMBER_API Tensor sub(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
EMBER_API Tensor rsub(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
EMBER_API Tensor rsub(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
EMBER_API Tensor mul(const Tensor& self, const Tensor& other);
EMBER_API Tensor mul(const Tensor& self, const Scalar& other);
EMBER_API Tensor div(const Tensor& self, const Tensor& other, std::optional<std::string_view> rounding_mode = std::nullopt);
EMBER_API Tensor div(const Tensor& self, const Scalar& other, std::optional<std::string_view> rounding_mode = std::nullopt);
EMBER_API Tensor floor_divide(const Tensor& self, const Tensor& other);
EMBER_API Tensor floor_divide(const Tensor& self, const Scalar& other);
EMBER_API Tensor remainder(const Tensor& self, const Tensor& other);
EMBER_API Tensor remainder(const Tensor& self, const Scalar& other);
EMBER_API Tensor remainder(const Scalar& self, const Tensor& other);
EMBER_API Tensor fmod(const Tensor& self, const Tensor& other);
EMBER_API Tensor fmod(const Tensor& self, const Scalar& other);
EMBER_API Tensor pow(const Tensor& self, const Tensor& exponent);
EMBER_API Tensor pow(const Tensor& self, const Scalar& exponent);
EMBER_API Tensor pow(const Scalar& self, const Tensor& exponent);
EMBER_API Tensor maximum(const Tensor& self, const Tensor& other);
EMBER_API Tensor minimum(const Tensor& self, const Tensor& other);
EMBER_API Tensor lerp(const Tensor& self, const Tensor& end, const Scalar& weight);
EMBER_API Tensor lerp(const Tensor& self, const Tensor& end, const Tensor& weight);
EMBER_API Tensor clamp(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max = std::nullopt);
EMBER_API Tensor clamp(const Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max = std::nullopt);
EMBER_API Tensor clamp_min(const Tensor& self, const Scalar& min);
EMBER_API Tensor clamp_max(const Tensor& self, const Scalar& max);
EMBER_API Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value);
EMBER_API Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value);
// self where condition else other
EMBER_API Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other);
EMBER_API Tensor where(const Tensor& condition, const Tensor& self, const Scalar& other);
EMBER_API Tensor where(const Tensor& condition, const Scalar& self, const Tensor& other);
EMBER_API Tensor where(const Tensor& condition, const Scalar& self, const Scalar& other);

EMBER_API Tensor neg(const Tensor& self);
EMBER_API Tensor negative(const Tensor& self);
EMBER_API Tensor abs(const Tensor& self);
EMBER_API Tensor exp(const Tensor& self);
EMBER_API Tensor exp2(const Tensor& self);
EMBER_API Tensor log(const Tensor& self);
EMBER_API Tensor log2(const Tensor& self);
EMBER_API Tensor log10(const Tensor& self);
EMBER_API Tensor log1p(const Tensor& self);
EMBER_API Tensor expm1(const Tensor& self);
EMBER_API Tensor sqrt(const Tensor& self);
EMBER_API Tensor rsqrt(const Tensor& self);
EMBER_API Tensor sin(const Tensor& self);
EMBER_API Tensor cos(const Tensor& self);
EMBER_API Tensor tan(const Tensor& self);
EMBER_API Tensor tanh(const Tensor& self);
EMBER_API Tensor sinh(const Tensor& self);
EMBER_API Tensor cosh(const Tensor& self);
EMBER_API Tensor sigmoid(const Tensor& self);
EMBER_API Tensor relu(const Tensor& self);
EMBER_API Tensor erf(const Tensor& self);
// approximate: "none" (exact, with erf) or "tanh"
EMBER_API Tensor gelu(const Tensor& self, std::string_view approximate = "none");
EMBER_API Tensor silu(const Tensor& self);
EMBER_API Tensor floor(const Tensor& self);
EMBER_API Tensor ceil(const Tensor& self);
EMBER_API Tensor round(const Tensor& self);
EMBER_API Tensor trunc(const Tensor& self);
EMBER_API Tensor sign(const Tensor& self);
// z / |z| (0 at 0) for a complex tensor; sign() for a real one
EMBER_API Tensor sgn(const Tensor& self);
EMBER_API Tensor reciprocal(const Tensor& self);
EMBER_API Tensor square(const Tensor& self);
EMBER_API Tensor isnan(const Tensor& self);
EMBER_API Tensor isinf(const Tensor& self);
EMBER_API Tensor isfinite(const Tensor& self);
EMBER_API Tensor logical_not(const Tensor& self);
EMBER_API Tensor bitwise_not(const Tensor& self);

#define EMBER_COMPARE_FN_(name)                                          \
    EMBER_API Tensor name(const Tensor& self, const Tensor& other);      \
    EMBER_API Tensor name(const Tensor& self, const Scalar& other);
EMBER_COMPARE_FN_(eq)
EMBER_COMPARE_FN_(ne)
EMBER_COMPARE_FN_(lt)
EMBER_COMPARE_FN_(le)
EMBER_COMPARE_FN_(gt)
EMBER_COMPARE_FN_(ge)
EMBER_COMPARE_FN_(logical_and)
EMBER_COMPARE_FN_(logical_or)
EMBER_COMPARE_FN_(logical_xor)
EMBER_COMPARE_FN_(bitwise_and)
EMBER_COMPARE_FN_(bitwise_or)
EMBER_COMPARE_FN_(bitwise_xor)
#undef EMBER_COMPARE_FN_
EMBER_API bool equal(const Tensor& self, const Tensor& other);
EMBER_API bool allclose(const Tensor& self, const Tensor& other, double rtol = 1e-05, double atol = 1e-08, bool equal_nan = false);
EMBER_API Tensor isclose(const Tensor& self, const Tensor& other, double rtol = 1e-05, double atol = 1e-08, bool equal_nan = false);

// ---- reductions --------------------------------------------------------------------------
// An empty dim list reduces over all dims (as PyTorch).
EMBER_API Tensor sum(const Tensor& self, std::optional<ScalarType> dtype = std::nullopt);
EMBER_API Tensor sum(const Tensor& self, IntArrayRef dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
EMBER_API Tensor mean(const Tensor& self, std::optional<ScalarType> dtype = std::nullopt);
EMBER_API Tensor mean(const Tensor& self, IntArrayRef dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
EMBER_API Tensor prod(const Tensor& self, std::optional<ScalarType> dtype = std::nullopt);
EMBER_API Tensor prod(const Tensor& self, int64_t dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
EMBER_API Tensor max(const Tensor& self);
EMBER_API std::tuple<Tensor, Tensor> max(const Tensor& self, int64_t dim, bool keepdim = false);
EMBER_API Tensor min(const Tensor& self);
EMBER_API std::tuple<Tensor, Tensor> min(const Tensor& self, int64_t dim, bool keepdim = false);
EMBER_API Tensor amax(const Tensor& self, IntArrayRef dim = {}, bool keepdim = false);
EMBER_API Tensor amin(const Tensor& self, IntArrayRef dim = {}, bool keepdim = false);
EMBER_API Tensor argmax(const Tensor& self, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
EMBER_API Tensor argmin(const Tensor& self, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
inline Tensor var(const Tensor& self) { return self.var(); }
template <typename B, std::enable_if_t<std::is_same_v<B, bool>, int> = 0>
Tensor var(const Tensor& self, B unbiased) { return self.var(unbiased); }
EMBER_API Tensor var(const Tensor& self, IntArrayRef dim, bool unbiased = true, bool keepdim = false);
EMBER_API Tensor var(const Tensor& self, OptionalIntArrayRef dim, const std::optional<Scalar>& correction, bool keepdim = false);
inline Tensor std(const Tensor& self) { return self.std(); }
template <typename B, std::enable_if_t<std::is_same_v<B, bool>, int> = 0>
Tensor std(const Tensor& self, B unbiased) { return self.std(unbiased); }
EMBER_API Tensor std(const Tensor& self, IntArrayRef dim, bool unbiased = true, bool keepdim = false);
EMBER_API Tensor std(const Tensor& self, OptionalIntArrayRef dim, const std::optional<Scalar>& correction, bool keepdim = false);
EMBER_API Tensor norm(const Tensor& self, const Scalar& p = 2);
EMBER_API Tensor norm(const Tensor& self, const std::optional<Scalar>& p, IntArrayRef dim, bool keepdim = false);
EMBER_API Tensor all(const Tensor& self);
EMBER_API Tensor all(const Tensor& self, int64_t dim, bool keepdim = false);
EMBER_API Tensor any(const Tensor& self);
EMBER_API Tensor any(const Tensor& self, int64_t dim, bool keepdim = false);
EMBER_API Tensor logsumexp(const Tensor& self, IntArrayRef dim, bool keepdim = false);
EMBER_API Tensor cumsum(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
EMBER_API Tensor cumprod(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
EMBER_API Tensor softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
EMBER_API Tensor log_softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);

// ---- shape ops ---------------------------------------------------------------------------
EMBER_API Tensor view(const Tensor& self, IntArrayRef size);
EMBER_API Tensor reshape(const Tensor& self, IntArrayRef shape);
EMBER_API Tensor as_strided(const Tensor& self, IntArrayRef size, IntArrayRef stride, std::optional<int64_t> storage_offset = std::nullopt);
EMBER_API Tensor permute(const Tensor& self, IntArrayRef dims);
EMBER_API Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1);
EMBER_API Tensor t(const Tensor& self);
EMBER_API Tensor unsqueeze(const Tensor& self, int64_t dim);
EMBER_API Tensor squeeze(const Tensor& self);
EMBER_API Tensor squeeze(const Tensor& self, int64_t dim);
EMBER_API Tensor flatten(const Tensor& self, int64_t start_dim = 0, int64_t end_dim = -1);
EMBER_API Tensor unflatten(const Tensor& self, int64_t dim, IntArrayRef sizes);
EMBER_API Tensor expand(const Tensor& self, IntArrayRef size);
EMBER_API Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length);
EMBER_API Tensor select(const Tensor& self, int64_t dim, int64_t index);
EMBER_API Tensor slice(const Tensor& self, int64_t dim = 0, std::optional<int64_t> start = std::nullopt,
             std::optional<int64_t> end = std::nullopt, int64_t step = 1);
EMBER_API std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim = 0);
EMBER_API std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim = 0);
EMBER_API std::vector<Tensor> split(const Tensor& self, IntArrayRef split_sizes, int64_t dim = 0);
EMBER_API std::vector<Tensor> split_with_sizes(const Tensor& self, IntArrayRef split_sizes, int64_t dim = 0);
EMBER_API std::vector<Tensor> unbind(const Tensor& self, int64_t dim = 0);
EMBER_API Tensor diagonal(const Tensor& self, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);
EMBER_API Tensor cat(TensorList tensors, int64_t dim = 0);
EMBER_API Tensor concat(TensorList tensors, int64_t dim = 0);
EMBER_API Tensor stack(TensorList tensors, int64_t dim = 0);
EMBER_API Tensor repeat(const Tensor& self, IntArrayRef repeats);
EMBER_API Tensor tril(const Tensor& self, int64_t diagonal = 0);
EMBER_API Tensor triu(const Tensor& self, int64_t diagonal = 0);
EMBER_API Tensor flip(const Tensor& self, IntArrayRef dims);

// ---- indexing ----------------------------------------------------------------------------
EMBER_API Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index);
EMBER_API Tensor gather(const Tensor& self, int64_t dim, const Tensor& index);
EMBER_API Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
EMBER_API Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value);
EMBER_API Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
EMBER_API Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1);
EMBER_API Tensor masked_select(const Tensor& self, const Tensor& mask);
EMBER_API Tensor nonzero(const Tensor& self);
// aten::index: one optional index tensor per leading dim (bool tensors act as masks).
EMBER_API Tensor index(const Tensor& self, const std::vector<std::optional<Tensor>>& indices);
EMBER_API Tensor index_put(const Tensor& self, const std::vector<std::optional<Tensor>>& indices,
                 const Tensor& values, bool accumulate = false);
// one_hot(tensor, num_classes=-1): kLong, num_classes inferred as max + 1 when -1.
EMBER_API Tensor one_hot(const Tensor& self, int64_t num_classes = -1);

// ---- linear algebra (BLAS sgemm/dgemm for float32/float64) --------------------------------
EMBER_API Tensor matmul(const Tensor& self, const Tensor& other);
EMBER_API Tensor mm(const Tensor& self, const Tensor& mat2);
EMBER_API Tensor bmm(const Tensor& self, const Tensor& mat2);
EMBER_API Tensor mv(const Tensor& self, const Tensor& vec);
EMBER_API Tensor dot(const Tensor& self, const Tensor& other);
// sum(conj(self) * other) (dot for real vectors)
EMBER_API Tensor vdot(const Tensor& self, const Tensor& other);
EMBER_API Tensor outer(const Tensor& self, const Tensor& vec2);
EMBER_API Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1, const Scalar& alpha = 1);
// input @ weight.T + bias (bias may be undefined)
EMBER_API Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {});

// ---- convolution and pooling (NCHW; a 3-D input is one unbatched image) --------------------
// im2col: F.unfold, (N, C, H, W) -> (N, C*kh*kw, L); col2im: F.fold, its adjoint.
EMBER_API Tensor im2col(const Tensor& input, IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding,
                        IntArrayRef stride);
EMBER_API Tensor col2im(const Tensor& input, IntArrayRef output_size, IntArrayRef kernel_size, IntArrayRef dilation,
                        IntArrayRef padding, IntArrayRef stride);
// weight (O, C/groups, kh, kw); stride, padding and dilation as one value or a pair
EMBER_API Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = 1,
                        IntArrayRef padding = 0, IntArrayRef dilation = 1, int64_t groups = 1);
EMBER_API Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = 1,
                        IntArrayRef padding = 0, IntArrayRef dilation = 1, int64_t groups = 1);
// input (N, C_in, D, H, W) or (C_in, D, H, W); weight (O, C/groups, kd, kh, kw)
EMBER_API Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, IntArrayRef stride = 1,
                        IntArrayRef padding = 0, IntArrayRef dilation = 1, int64_t groups = 1);

namespace detail {
// conv{dims}d with Python's string padding: "valid" (none) or "same" (the output keeps the
// input's size; stride must be 1; an even total padding d * (k - 1) puts the extra element
// on the right, as PyTorch). Other strings: "Invalid padding string: '...'".
EMBER_API Tensor conv_string_padding(int64_t dims, const Tensor& input, const Tensor& weight, const Tensor& bias,
                                     IntArrayRef stride, std::string_view padding, IntArrayRef dilation,
                                     int64_t groups);
// A string-like argument (not an integer: a literal 0 stays a padding of zero).
template <typename S>
using if_padding_string_t =
    std::enable_if_t<std::is_convertible_v<const S&, std::string_view> && !std::is_arithmetic_v<S>, int>;
}  // namespace detail

// The convolutions with a string padding (aten's conv*d.padding overloads):
//   ember::conv2d(x, w, b, 1, "same");   ember::conv1d(x, w, {}, 1, "valid", 2);
template <typename S, detail::if_padding_string_t<S> = 0>
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, const S& padding,
              IntArrayRef dilation = 1, int64_t groups = 1) {
    return detail::conv_string_padding(1, input, weight, bias, stride, padding, dilation, groups);
}
template <typename S, detail::if_padding_string_t<S> = 0>
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, const S& padding,
              IntArrayRef dilation = 1, int64_t groups = 1) {
    return detail::conv_string_padding(2, input, weight, bias, stride, padding, dilation, groups);
}
template <typename S, detail::if_padding_string_t<S> = 0>
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, const S& padding,
              IntArrayRef dilation = 1, int64_t groups = 1) {
    return detail::conv_string_padding(3, input, weight, bias, stride, padding, dilation, groups);
}
// stride defaults to kernel_size; indices are flat positions in each H*W plane (as PyTorch)
EMBER_API std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& self, IntArrayRef kernel_size,
                                                             IntArrayRef stride = {}, IntArrayRef padding = 0,
                                                             IntArrayRef dilation = 1, bool ceil_mode = false);
EMBER_API Tensor max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = 0,
                            IntArrayRef dilation = 1, bool ceil_mode = false);
EMBER_API Tensor avg_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = 0,
                            bool ceil_mode = false, bool count_include_pad = true,
                            std::optional<int64_t> divisor_override = std::nullopt);
EMBER_API Tensor adaptive_avg_pool2d(const Tensor& self, IntArrayRef output_size);
// Adaptive max pooling over the last 1, 2 or 3 dims of a (N, C, *) or (C, *) input:
// (output, indices), indices being flat positions in each input plane (L, H*W, D*H*W),
// as aten's; output_size: one value per pooled dim, or one for all. Window i of an axis of size X pooled to Y spans [floor(i*X/Y), ceil((i+1)*X/Y));
// the first maximum wins (a NaN, the last NaN). The gradient goes to each window's maximum.
EMBER_API std::tuple<Tensor, Tensor> adaptive_max_pool1d(const Tensor& self, IntArrayRef output_size);
EMBER_API std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& self, IntArrayRef output_size);
EMBER_API std::tuple<Tensor, Tensor> adaptive_max_pool3d(const Tensor& self, IntArrayRef output_size);

// ---- sorting -----------------------------------------------------------------------------
EMBER_API std::tuple<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true);
EMBER_API std::tuple<Tensor, Tensor> sort(const Tensor& self, int64_t dim = -1, bool descending = false);
// libtorch's overload: stable=true keeps equal elements in their order; false or nullopt (the
// default above) orders them as PyTorch's CPU std::sort does.
EMBER_API std::tuple<Tensor, Tensor> sort(const Tensor& self, std::optional<bool> stable, int64_t dim = -1,
                                          bool descending = false);
EMBER_API Tensor argsort(const Tensor& self, int64_t dim = -1, bool descending = false);
// One element of each lane along dim, (values, indices) with dim dropped unless keepdim; of
// tied elements the one PyTorch's CPU kernels pick. kthvalue: the kth smallest (1-based, NaN
// greatest); mode: the most frequent (the smallest of equally frequent ones); median: the lower
// median (the first NaN where there is one); nanmedian: the lower median of the non-NaN ones.
// The gradient goes to the picked element.
EMBER_API std::tuple<Tensor, Tensor> kthvalue(const Tensor& self, int64_t k, int64_t dim = -1, bool keepdim = false);
EMBER_API std::tuple<Tensor, Tensor> mode(const Tensor& self, int64_t dim = -1, bool keepdim = false);
EMBER_API std::tuple<Tensor, Tensor> median(const Tensor& self, int64_t dim, bool keepdim = false);
EMBER_API std::tuple<Tensor, Tensor> nanmedian(const Tensor& self, int64_t dim, bool keepdim = false);
// Of all elements, as a 0-dim tensor; the gradient is shared among the elements equal to it.
EMBER_API Tensor median(const Tensor& self);
EMBER_API Tensor nanmedian(const Tensor& self);

// ---- misc --------------------------------------------------------------------------------
// Threads used by matrix products (OpenBLAS's pool; as torch::set_num_threads). Elementwise
// ops run on the calling thread.
EMBER_API void set_num_threads(int n);
EMBER_API int get_num_threads();

EMBER_API Tensor clone(const Tensor& self);
EMBER_API Tensor detach(const Tensor& self);

}  // namespace ember
