// ember::Tensor: a cheap, reference-counted handle to a TensorImpl (libtorch's at::Tensor).
// Copying a Tensor copies the handle, not the data (use clone() for a copy). A
// default-constructed Tensor is undefined (defined() is false), which autograd uses for
// "no gradient".
//
// The methods mirror libtorch's (names, arguments, defaults). Ops that return views
// (view, reshape when possible, permute, transpose, narrow, select, slice, expand, squeeze,
// unsqueeze, diagonal, chunk/split/unbind, index with basic indices) share the storage and
// the version counter of their input. Methods ending in '_' modify the tensor in place and
// return it.
#pragma once

#include "export.h"
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "array_ref.h"
#include "device.h"
#include "dtype.h"
#include "error.h"
#include "generator.h"
#include "scalar.h"
#include "storage.h"
#include "tensor_impl.h"
#include "tensor_options.h"

namespace ember {

class Tensor;
using TensorList = ArrayRef<Tensor>;

namespace indexing {
struct TensorIndex;
}
namespace autograd {
class Node;
}

class EMBER_API Tensor {
public:
    Tensor() = default;
    explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
    Tensor(const Tensor&) = default;
    Tensor(Tensor&&) noexcept = default;
    ~Tensor() = default;

    // Assigning to a named tensor rebinds the handle; assigning to a temporary (the result of
    // an indexing or view call) writes into it, as libtorch: t[0] = other; t.index({...}) = 5;
    Tensor& operator=(const Tensor& other) & {
        impl_ = other.impl_;
        return *this;
    }
    Tensor& operator=(Tensor&& other) & noexcept {
        impl_ = std::move(other.impl_);
        return *this;
    }
    Tensor& operator=(const Tensor& other) && { return copy_(other); }
    Tensor& operator=(const Scalar& value) && { return fill_(value); }

    // ---- handle ------------------------------------------------------------------------
    bool defined() const noexcept { return static_cast<bool>(impl_); }
    void reset() noexcept { impl_.reset(); }
    TensorImpl* unsafeGetTensorImpl() const noexcept { return impl_.get(); }
    const std::shared_ptr<TensorImpl>& getIntrusivePtr() const noexcept { return impl_; }
    long use_count() const noexcept { return impl_.use_count(); }
    // Whether both handles point to the same TensorImpl.
    bool is_same(const Tensor& other) const noexcept { return impl_ == other.impl_; }
    // Whether both tensors use the same storage.
    bool is_alias_of(const Tensor& other) const;

    // ---- metadata ----------------------------------------------------------------------
    IntArrayRef sizes() const { return impl().sizes(); }
    IntArrayRef strides() const { return impl().strides(); }
    // size(dim) and stride(dim) accept negative dims (-1 is the last).
    int64_t size(int64_t dim) const;
    int64_t stride(int64_t dim) const;
    int64_t dim() const { return impl().dim(); }
    int64_t ndimension() const { return dim(); }
    int64_t numel() const { return impl().numel(); }
    int64_t storage_offset() const { return impl().storage_offset(); }
    ScalarType dtype() const { return impl().dtype(); }
    ScalarType scalar_type() const { return impl().dtype(); }
    int64_t element_size() const { return static_cast<int64_t>(impl().itemsize()); }
    int64_t itemsize() const { return element_size(); }
    int64_t nbytes() const { return numel() * element_size(); }
    TensorOptions options() const;
    Device device() const { return Device(kCPU); }
    bool is_cpu() const { return true; }
    bool is_cuda() const { return false; }
    bool is_contiguous() const { return impl().is_contiguous(); }
    bool is_floating_point() const { return ember::is_floating_point(dtype()); }
    bool is_complex() const { return ember::is_complex(dtype()); }
    bool is_signed() const;
    const Storage& storage() const { return impl().storage(); }
    bool is_view() const { return impl().is_view(); }
    // The tensor this is a view of (undefined when it is not a view).
    Tensor _base() const;
    // The version counter's value (bumped by every in-place modification).
    uint32_t _version() const { return impl().version(); }
    // libtorch's type string: "CPUFloatType".
    std::string toString() const;

    // ---- data access -------------------------------------------------------------------
    void* data_ptr() const { return impl().data(); }
    // Typed pointer to the first element; T must be the tensor's element type.
    template <typename T>
    T* data_ptr() const;
    template <typename T>
    const T* const_data_ptr() const { return data_ptr<T>(); }
    template <typename T>
    T* mutable_data_ptr() const { return data_ptr<T>(); }
    // The value of a one-element tensor.
    Scalar item() const;
    template <typename T>
    T item() const { return item().to<T>(); }

    // ---- conversion and copies ---------------------------------------------------------
    Tensor to(ScalarType dtype, bool non_blocking = false, bool copy = false) const;
    Tensor to(const TensorOptions& options, bool non_blocking = false, bool copy = false) const;
    Tensor to(Device device, ScalarType dtype, bool non_blocking = false, bool copy = false) const;
    Tensor to(Device device, bool non_blocking = false, bool copy = false) const;
    Tensor to(const Tensor& other, bool non_blocking = false, bool copy = false) const;
    Tensor cpu() const { return *this; }
    Tensor clone() const;
    Tensor contiguous() const;
    // Copies src (broadcast to this tensor's shape, converted to its dtype) into this tensor.
    Tensor& copy_(const Tensor& src, bool non_blocking = false) const;
    Tensor detach() const;
    Tensor& detach_() const;
    // libtorch's .data(): the tensor without autograd history (an alias, as detach()).
    Tensor data() const { return detach(); }
    bool is_same_size(const Tensor& other) const { return sizes() == other.sizes(); }

    // ---- autograd ----------------------------------------------------------------------
    bool requires_grad() const;
    Tensor& requires_grad_(bool requires_grad = true) const;
    Tensor& set_requires_grad(bool requires_grad) const { return requires_grad_(requires_grad); }
    // The accumulated gradient (undefined until backward reaches this tensor).
    const Tensor& grad() const;
    Tensor& mutable_grad() const;
    void set_grad(const Tensor& grad) const;
    const std::shared_ptr<autograd::Node>& grad_fn() const;
    bool is_leaf() const;
    uint32_t output_nr() const;
    // Makes backward store this non-leaf tensor's gradient in grad().
    void retain_grad() const;
    bool retains_grad() const;
    // Computes the gradient of this tensor w.r.t. the graph leaves (see autograd::backward).
    void backward(const Tensor& gradient = {}, std::optional<bool> retain_graph = std::nullopt,
                  bool create_graph = false,
                  std::optional<std::vector<Tensor>> inputs = std::nullopt) const;
    // Registers a hook called with this tensor's gradient during backward; a hook returning
    // a Tensor replaces the gradient, a void hook only observes it. Returns a handle for
    // remove_hook.
    template <typename F>
    unsigned register_hook(F&& hook) const;
    void remove_hook(unsigned handle) const;
    unsigned _register_hook(std::function<Tensor(const Tensor&)> hook) const;

    // ---- fills and random in-place -----------------------------------------------------
    Tensor& fill_(const Scalar& value) const;
    Tensor& fill_(const Tensor& value) const;
    Tensor& zero_() const;
    Tensor& uniform_(double from = 0, double to = 1, std::optional<Generator> gen = std::nullopt) const;
    Tensor& normal_(double mean = 0, double std = 1, std::optional<Generator> gen = std::nullopt) const;
    Tensor& bernoulli_(double p = 0.5, std::optional<Generator> gen = std::nullopt) const;
    Tensor bernoulli(std::optional<Generator> gen = std::nullopt) const;
    Tensor bernoulli(double p, std::optional<Generator> gen = std::nullopt) const;
    // -1 / lambd * log(1 - U) per element (U a double uniform).
    Tensor& exponential_(double lambd = 1, std::optional<Generator> gen = std::nullopt) const;
    // Integers uniform in [from, to) (as random_(from, to)); random_(to): in [0, to).
    Tensor& random_(int64_t from, int64_t to, std::optional<Generator> gen = std::nullopt) const;
    Tensor& random_(int64_t to, std::optional<Generator> gen = std::nullopt) const;

    // new tensors with this tensor's dtype (unless options say otherwise)
    Tensor new_empty(IntArrayRef size, const TensorOptions& options = {}) const;
    Tensor new_zeros(IntArrayRef size, const TensorOptions& options = {}) const;
    Tensor new_ones(IntArrayRef size, const TensorOptions& options = {}) const;
    Tensor new_full(IntArrayRef size, const Scalar& fill_value, const TensorOptions& options = {}) const;

    // ---- pointwise ---------------------------------------------------------------------
    Tensor add(const Tensor& other, const Scalar& alpha = 1) const;
    Tensor add(const Scalar& other, const Scalar& alpha = 1) const;
    Tensor& add_(const Tensor& other, const Scalar& alpha = 1) const;
    Tensor& add_(const Scalar& other, const Scalar& alpha = 1) const;
    Tensor sub(const Tensor& other, const Scalar& alpha = 1) const;
    Tensor sub(const Scalar& other, const Scalar& alpha = 1) const;
    Tensor& sub_(const Tensor& other, const Scalar& alpha = 1) const;
    Tensor& sub_(const Scalar& other, const Scalar& alpha = 1) const;
    Tensor mul(const Tensor& other) const;
    Tensor mul(const Scalar& other) const;
    Tensor& mul_(const Tensor& other) const;
    Tensor& mul_(const Scalar& other) const;
    // rounding_mode: none (true division), "trunc" or "floor".
    Tensor div(const Tensor& other, std::optional<std::string_view> rounding_mode = std::nullopt) const;
    Tensor div(const Scalar& other, std::optional<std::string_view> rounding_mode = std::nullopt) const;
    Tensor& div_(const Tensor& other, std::optional<std::string_view> rounding_mode = std::nullopt) const;
    Tensor& div_(const Scalar& other, std::optional<std::string_view> rounding_mode = std::nullopt) const;
    Tensor remainder(const Tensor& other) const;
    Tensor remainder(const Scalar& other) const;
    Tensor fmod(const Tensor& other) const;
    Tensor fmod(const Scalar& other) const;
    Tensor pow(const Tensor& exponent) const;
    Tensor pow(const Scalar& exponent) const;
    Tensor& pow_(const Tensor& exponent) const;
    Tensor& pow_(const Scalar& exponent) const;
    Tensor maximum(const Tensor& other) const;
    Tensor minimum(const Tensor& other) const;
    Tensor lerp(const Tensor& end, const Scalar& weight) const;
    Tensor lerp(const Tensor& end, const Tensor& weight) const;
    Tensor& lerp_(const Tensor& end, const Scalar& weight) const;
    Tensor& lerp_(const Tensor& end, const Tensor& weight) const;
    Tensor clamp(const std::optional<Scalar>& min, const std::optional<Scalar>& max = std::nullopt) const;
    Tensor clamp(const std::optional<Tensor>& min, const std::optional<Tensor>& max = std::nullopt) const;
    Tensor& clamp_(const std::optional<Scalar>& min, const std::optional<Scalar>& max = std::nullopt) const;
    Tensor& clamp_(const std::optional<Tensor>& min, const std::optional<Tensor>& max = std::nullopt) const;
    Tensor clamp_min(const Scalar& min) const;
    Tensor clamp_max(const Scalar& max) const;
    Tensor& clamp_min_(const Scalar& min) const;
    Tensor& clamp_max_(const Scalar& max) const;
    Tensor masked_fill(const Tensor& mask, const Scalar& value) const;
    Tensor masked_fill(const Tensor& mask, const Tensor& value) const;
    Tensor& masked_fill_(const Tensor& mask, const Scalar& value) const;
    Tensor& masked_fill_(const Tensor& mask, const Tensor& value) const;
    // self where condition is true, other elsewhere.
    Tensor where(const Tensor& condition, const Tensor& other) const;
    Tensor where(const Tensor& condition, const Scalar& other) const;

#define EMBER_UNARY_METHOD_(name) \
    Tensor name() const;          \
    Tensor& name##_() const;
    EMBER_UNARY_METHOD_(neg)
    EMBER_UNARY_METHOD_(abs)
    EMBER_UNARY_METHOD_(exp)
    EMBER_UNARY_METHOD_(exp2)
    EMBER_UNARY_METHOD_(log)
    EMBER_UNARY_METHOD_(log2)
    EMBER_UNARY_METHOD_(log10)
    EMBER_UNARY_METHOD_(log1p)
    EMBER_UNARY_METHOD_(expm1)
    EMBER_UNARY_METHOD_(sqrt)
    EMBER_UNARY_METHOD_(rsqrt)
    EMBER_UNARY_METHOD_(sin)
    EMBER_UNARY_METHOD_(cos)
    EMBER_UNARY_METHOD_(tan)
    EMBER_UNARY_METHOD_(tanh)
    EMBER_UNARY_METHOD_(sinh)
    EMBER_UNARY_METHOD_(cosh)
    EMBER_UNARY_METHOD_(sigmoid)
    EMBER_UNARY_METHOD_(relu)
    EMBER_UNARY_METHOD_(erf)
    EMBER_UNARY_METHOD_(floor)
    EMBER_UNARY_METHOD_(ceil)
    EMBER_UNARY_METHOD_(round)
    EMBER_UNARY_METHOD_(trunc)
    EMBER_UNARY_METHOD_(sign)
    EMBER_UNARY_METHOD_(sgn)
    EMBER_UNARY_METHOD_(reciprocal)
    EMBER_UNARY_METHOD_(square)
    EMBER_UNARY_METHOD_(logical_not)
#undef EMBER_UNARY_METHOD_
    Tensor negative() const { return neg(); }
    Tensor absolute() const { return abs(); }
    Tensor isnan() const;
    Tensor isinf() const;
    Tensor isfinite() const;
    Tensor bitwise_not() const;

#define EMBER_COMPARE_METHOD_(name)            \
    Tensor name(const Tensor& other) const;    \
    Tensor name(const Scalar& other) const;
    EMBER_COMPARE_METHOD_(eq)
    EMBER_COMPARE_METHOD_(ne)
    EMBER_COMPARE_METHOD_(lt)
    EMBER_COMPARE_METHOD_(le)
    EMBER_COMPARE_METHOD_(gt)
    EMBER_COMPARE_METHOD_(ge)
    EMBER_COMPARE_METHOD_(logical_and)
    EMBER_COMPARE_METHOD_(logical_or)
    EMBER_COMPARE_METHOD_(logical_xor)
    EMBER_COMPARE_METHOD_(bitwise_and)
    EMBER_COMPARE_METHOD_(bitwise_or)
    EMBER_COMPARE_METHOD_(bitwise_xor)
#undef EMBER_COMPARE_METHOD_
    // Whether both tensors have the same shape and elements.
    bool equal(const Tensor& other) const;
    bool allclose(const Tensor& other, double rtol = 1e-05, double atol = 1e-08, bool equal_nan = false) const;

    // ---- reductions --------------------------------------------------------------------
    Tensor sum(std::optional<ScalarType> dtype = std::nullopt) const;
    Tensor sum(IntArrayRef dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
    Tensor mean(std::optional<ScalarType> dtype = std::nullopt) const;
    Tensor mean(IntArrayRef dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
    Tensor prod(std::optional<ScalarType> dtype = std::nullopt) const;
    Tensor prod(int64_t dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
    Tensor max() const;
    std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
    Tensor min() const;
    std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
    Tensor amax(IntArrayRef dim = {}, bool keepdim = false) const;
    Tensor amin(IntArrayRef dim = {}, bool keepdim = false) const;
    Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
    Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
    // var()/std(): unbiased over all elements; var(false): biased. (The bool overload is a
    // template so that a braced dim list, t.var({1}), is never taken for a bool.)
    Tensor var() const { return var_all(true); }
    template <typename B, std::enable_if_t<std::is_same_v<B, bool>, int> = 0>
    Tensor var(B unbiased) const { return var_all(unbiased); }
    Tensor var(IntArrayRef dim, bool unbiased = true, bool keepdim = false) const;
    Tensor var(OptionalIntArrayRef dim, const std::optional<Scalar>& correction, bool keepdim = false) const;
    Tensor std() const { return std_all(true); }
    template <typename B, std::enable_if_t<std::is_same_v<B, bool>, int> = 0>
    Tensor std(B unbiased) const { return std_all(unbiased); }
    Tensor var_all(bool unbiased) const;
    Tensor std_all(bool unbiased) const;
    Tensor std(IntArrayRef dim, bool unbiased = true, bool keepdim = false) const;
    Tensor std(OptionalIntArrayRef dim, const std::optional<Scalar>& correction, bool keepdim = false) const;
    Tensor norm(const Scalar& p = 2) const;
    Tensor norm(const std::optional<Scalar>& p, IntArrayRef dim, bool keepdim = false) const;
    Tensor all() const;
    Tensor all(int64_t dim, bool keepdim = false) const;
    Tensor any() const;
    Tensor any(int64_t dim, bool keepdim = false) const;
    Tensor logsumexp(IntArrayRef dim, bool keepdim = false) const;
    Tensor cumsum(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
    Tensor cumprod(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
    Tensor softmax(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
    Tensor log_softmax(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;

    // ---- shape and views ---------------------------------------------------------------
    Tensor view(IntArrayRef size) const;
    Tensor view_as(const Tensor& other) const;
    Tensor reshape(IntArrayRef shape) const;
    Tensor reshape_as(const Tensor& other) const;
    Tensor as_strided(IntArrayRef size, IntArrayRef stride, std::optional<int64_t> storage_offset = std::nullopt) const;
    Tensor permute(IntArrayRef dims) const;
    Tensor transpose(int64_t dim0, int64_t dim1) const;
    Tensor t() const;
    Tensor unsqueeze(int64_t dim) const;
    Tensor squeeze() const;
    Tensor squeeze(int64_t dim) const;
    Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
    Tensor unflatten(int64_t dim, IntArrayRef sizes) const;
    Tensor expand(IntArrayRef size, bool implicit = false) const;
    Tensor expand_as(const Tensor& other) const;
    Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
    Tensor select(int64_t dim, int64_t index) const;
    Tensor slice(int64_t dim = 0, std::optional<int64_t> start = std::nullopt,
                 std::optional<int64_t> end = std::nullopt, int64_t step = 1) const;
    std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
    std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
    std::vector<Tensor> split(IntArrayRef split_sizes, int64_t dim = 0) const;
    std::vector<Tensor> split_with_sizes(IntArrayRef split_sizes, int64_t dim = 0) const;
    std::vector<Tensor> unbind(int64_t dim = 0) const;
    Tensor diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const;
    Tensor repeat(IntArrayRef repeats) const;
    Tensor tril(int64_t diagonal = 0) const;
    Tensor triu(int64_t diagonal = 0) const;
    Tensor flip(IntArrayRef dims) const;

    // ---- indexing ----------------------------------------------------------------------
    Tensor index_select(int64_t dim, const Tensor& index) const;
    Tensor gather(int64_t dim, const Tensor& index) const;
    Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const;
    Tensor scatter(int64_t dim, const Tensor& index, const Scalar& value) const;
    Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src) const;
    Tensor& scatter_(int64_t dim, const Tensor& index, const Scalar& value) const;
    Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
    Tensor& scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) const;
    Tensor index_add(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1) const;
    Tensor& index_add_(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1) const;
    Tensor masked_select(const Tensor& mask) const;
    Tensor nonzero() const;
    // t.index({Slice(0, 2), None, Ellipsis, 1, idx_tensor, bool_mask}) as Python's t[...]
    Tensor index(ArrayRef<indexing::TensorIndex> indices) const;
    Tensor index(std::initializer_list<indexing::TensorIndex> indices) const;
    // t[...] = value
    Tensor& index_put_(ArrayRef<indexing::TensorIndex> indices, const Tensor& value) const;
    Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& value) const;
    Tensor& index_put_(ArrayRef<indexing::TensorIndex> indices, const Scalar& value) const;
    Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Scalar& value) const;
    // aten::index_put_ with one (optional) index tensor per leading dim
    Tensor& index_put_(const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                       bool accumulate = false) const;
    Tensor index_put(const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                     bool accumulate = false) const;
    Tensor operator[](int64_t index) const;
    Tensor operator[](const Tensor& index) const;

    // ---- linear algebra ----------------------------------------------------------------
    Tensor matmul(const Tensor& other) const;
    Tensor mm(const Tensor& mat2) const;
    Tensor bmm(const Tensor& mat2) const;
    Tensor mv(const Tensor& vec) const;
    Tensor dot(const Tensor& other) const;
    Tensor vdot(const Tensor& other) const;
    Tensor outer(const Tensor& vec2) const;
    Tensor ger(const Tensor& vec2) const { return outer(vec2); }
    // beta * self + alpha * (mat1 @ mat2)
    Tensor addmm(const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1, const Scalar& alpha = 1) const;

    // ---- sorting -----------------------------------------------------------------------
    std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;
    std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false) const;
    Tensor argsort(int64_t dim = -1, bool descending = false) const;
    std::tuple<Tensor, Tensor> kthvalue(int64_t k, int64_t dim = -1, bool keepdim = false) const;
    std::tuple<Tensor, Tensor> mode(int64_t dim = -1, bool keepdim = false) const;
    Tensor median() const;
    std::tuple<Tensor, Tensor> median(int64_t dim, bool keepdim = false) const;
    Tensor nanmedian() const;
    std::tuple<Tensor, Tensor> nanmedian(int64_t dim, bool keepdim = false) const;

    // ---- in-place operators --------------------------------------------------------------
    Tensor& operator+=(const Tensor& other) { return add_(other); }
    Tensor& operator+=(const Scalar& other) { return add_(other); }
    Tensor& operator-=(const Tensor& other) { return sub_(other); }
    Tensor& operator-=(const Scalar& other) { return sub_(other); }
    Tensor& operator*=(const Tensor& other) { return mul_(other); }
    Tensor& operator*=(const Scalar& other) { return mul_(other); }
    Tensor& operator/=(const Tensor& other) { return div_(other); }
    Tensor& operator/=(const Scalar& other) { return div_(other); }

    // Prints libtorch's format to std::cout.
    void print() const;

private:
    const TensorImpl& impl() const {
        EMBER_CHECK(impl_, "Expected a proper Tensor but got None (or an undefined Tensor in C++)");
        return *impl_;
    }
    std::shared_ptr<TensorImpl> impl_;
};

template <typename F>
unsigned Tensor::register_hook(F&& hook) const {
    using Ret = std::invoke_result_t<F&, Tensor>;
    if constexpr (std::is_void_v<Ret>) {
        return _register_hook([fn = std::forward<F>(hook)](const Tensor& g) mutable {
            fn(g);
            return Tensor();
        });
    } else {
        static_assert(std::is_convertible_v<Ret, Tensor>,
                      "a tensor hook must return void or a Tensor");
        return _register_hook([fn = std::forward<F>(hook)](const Tensor& g) mutable -> Tensor {
            return fn(g);
        });
    }
}

// ---- operators (Scalars on either side) ---------------------------------------------------
EMBER_API Tensor operator-(const Tensor& t);
EMBER_API Tensor operator~(const Tensor& t);
#define EMBER_BINARY_OPERATOR_(op)                                 \
    EMBER_API Tensor operator op(const Tensor& a, const Tensor& b); \
    EMBER_API Tensor operator op(const Tensor& a, const Scalar& b); \
    EMBER_API Tensor operator op(const Scalar& a, const Tensor& b);
EMBER_BINARY_OPERATOR_(+)
EMBER_BINARY_OPERATOR_(-)
EMBER_BINARY_OPERATOR_(*)
EMBER_BINARY_OPERATOR_(/)
EMBER_BINARY_OPERATOR_(%)
EMBER_BINARY_OPERATOR_(==)
EMBER_BINARY_OPERATOR_(!=)
EMBER_BINARY_OPERATOR_(<)
EMBER_BINARY_OPERATOR_(<=)
EMBER_BINARY_OPERATOR_(>)
EMBER_BINARY_OPERATOR_(>=)
EMBER_BINARY_OPERATOR_(&)
EMBER_BINARY_OPERATOR_(|)
EMBER_BINARY_OPERATOR_(^)
#undef EMBER_BINARY_OPERATOR_

// libtorch's printing: the values, then "[ CPUFloatType{2,3} ]".
EMBER_API std::ostream& operator<<(std::ostream& os, const Tensor& t);
// Python Ember's repr(t): "tensor([[1., 2.],\n        [3., 4.]], dtype=ember.float64)".
EMBER_API std::string repr(const Tensor& t);
// Print options of repr (as ember.set_printoptions; process-wide, guarded by a mutex).
struct PrintOptions {
    int precision = 4;
    double threshold = 1000;
    int edgeitems = 3;
    int linewidth = 80;
    std::optional<bool> sci_mode;
};
EMBER_API void set_printoptions(const PrintOptions& options);
EMBER_API PrintOptions get_printoptions();

}  // namespace ember

#include "indexing.h"  // NOLINT: TensorIndex must be complete for t.index({...})
#include "ops.h"       // NOLINT: the free functions (ember::zeros, ember::matmul, ...)
