// Tensor factories (libtorch's names and arguments): zeros, ones, full, empty, arange,
// linspace, eye, rand, randn, randint, randperm, the *_like variants, from_blob and
// ember::tensor from (nested) braced lists or std::vectors.
#pragma once

#include "export.h"
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <vector>

#include "generator.h"
#include "tensor.h"

namespace ember {

EMBER_API Tensor empty(IntArrayRef size, const TensorOptions& options = {});
EMBER_API Tensor empty_strided(IntArrayRef size, IntArrayRef stride, const TensorOptions& options = {});
EMBER_API Tensor zeros(IntArrayRef size, const TensorOptions& options = {});
EMBER_API Tensor ones(IntArrayRef size, const TensorOptions& options = {});
// dtype: options' dtype, else the fill value's (a bool gives kBool, an integer kLong, a
// float the default dtype), as torch.full.
EMBER_API Tensor full(IntArrayRef size, const Scalar& fill_value, const TensorOptions& options = {});
// A 0-dim tensor holding s (options' dtype, else s's as full()).
EMBER_API Tensor scalar_tensor(const Scalar& s, const TensorOptions& options = {});

// arange(end), arange(start, end), arange(start, end, step): numel is
// ceil((end - start) / step); the dtype is kLong when all of start, end and step are
// integers, else the default dtype (unless options give one).
EMBER_API Tensor arange(const Scalar& end, const TensorOptions& options = {});
EMBER_API Tensor arange(const Scalar& start, const Scalar& end, const TensorOptions& options = {});
EMBER_API Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& options = {});
EMBER_API Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, const TensorOptions& options = {});
EMBER_API Tensor eye(int64_t n, const TensorOptions& options = {});
EMBER_API Tensor eye(int64_t n, int64_t m, const TensorOptions& options = {});

// Uniform [0, 1), standard normal, integers in [low, high), a permutation of 0..n-1
// (kLong unless options say otherwise), from the default generator unless one is given.
EMBER_API Tensor rand(IntArrayRef size, const TensorOptions& options = {});
EMBER_API Tensor rand(IntArrayRef size, std::optional<Generator> generator, const TensorOptions& options = {});
EMBER_API Tensor randn(IntArrayRef size, const TensorOptions& options = {});
EMBER_API Tensor randn(IntArrayRef size, std::optional<Generator> generator, const TensorOptions& options = {});
EMBER_API Tensor randint(int64_t high, IntArrayRef size, const TensorOptions& options = kLong);
EMBER_API Tensor randint(int64_t low, int64_t high, IntArrayRef size, const TensorOptions& options = kLong);
EMBER_API Tensor randint(int64_t low, int64_t high, IntArrayRef size, std::optional<Generator> generator,
               const TensorOptions& options = kLong);
EMBER_API Tensor randperm(int64_t n, const TensorOptions& options = kLong);
EMBER_API Tensor randperm(int64_t n, std::optional<Generator> generator, const TensorOptions& options = kLong);
EMBER_API Tensor bernoulli(const Tensor& p, std::optional<Generator> generator = std::nullopt);
EMBER_API Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement = false,
                   std::optional<Generator> generator = std::nullopt);

// *_like: the shape of t, and its dtype unless options give one.
EMBER_API Tensor empty_like(const Tensor& t, const TensorOptions& options = {});
EMBER_API Tensor zeros_like(const Tensor& t, const TensorOptions& options = {});
EMBER_API Tensor ones_like(const Tensor& t, const TensorOptions& options = {});
EMBER_API Tensor full_like(const Tensor& t, const Scalar& fill_value, const TensorOptions& options = {});
EMBER_API Tensor rand_like(const Tensor& t, const TensorOptions& options = {});
EMBER_API Tensor randn_like(const Tensor& t, const TensorOptions& options = {});
EMBER_API Tensor randint_like(const Tensor& t, int64_t low, int64_t high, const TensorOptions& options = {});

// A tensor over memory the caller owns (not copied, not freed) unless a deleter is given,
// which is called with data when the last tensor using it goes away. Strides default to
// contiguous; options' dtype (default kFloat) says what the memory holds.
EMBER_API Tensor from_blob(void* data, IntArrayRef sizes, const TensorOptions& options = {});
EMBER_API Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const TensorOptions& options = {});
EMBER_API Tensor from_blob(void* data, IntArrayRef sizes, const std::function<void(void*)>& deleter,
                 const TensorOptions& options = {});
EMBER_API Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides,
                 const std::function<void(void*)>& deleter, const TensorOptions& options = {});

namespace detail {

// The argument of ember::tensor(): a scalar, a (nested) braced list, or a std::vector
// (libtorch's TensorDataContainer). Integer data gives kLong, floating data the default
// dtype and bools kBool, as Python's ember.tensor, unless options give a dtype.
class EMBER_API TensorDataContainer {
public:
    // {}: an empty list
    TensorDataContainer();
    template <typename T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
    TensorDataContainer(T value) : TensorDataContainer(Scalar(value), scalar_type_of_value<T>()) {}  // NOLINT
    TensorDataContainer(Half value) : TensorDataContainer(Scalar(value), kHalf) {}  // NOLINT
    TensorDataContainer(std::initializer_list<TensorDataContainer> list);  // NOLINT
    template <typename T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
    TensorDataContainer(const std::vector<T>& values) : TensorDataContainer(from_vector(values)) {}  // NOLINT
    template <typename T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
    TensorDataContainer(ArrayRef<T> values) : TensorDataContainer(from_vector(values.vec())) {}  // NOLINT

    const std::vector<int64_t>& sizes() const { return sizes_; }
    ScalarType scalar_type() const { return scalar_type_; }
    Tensor convert_to_tensor(const TensorOptions& options) const;

private:
    TensorDataContainer(Scalar value, ScalarType type);
    template <typename T>
    static constexpr ScalarType scalar_type_of_value() {
        if constexpr (std::is_same_v<T, bool>) return kBool;
        else if constexpr (std::is_floating_point_v<T>) return std::is_same_v<T, float> ? kFloat : kDouble;
        else return kLong;
    }
    template <typename T>
    static TensorDataContainer from_vector(const std::vector<T>& values) {
        TensorDataContainer c;
        c.sizes_ = {static_cast<int64_t>(values.size())};
        c.scalar_type_ = scalar_type_of_value<T>();
        c.values_.reserve(values.size());
        for (const T& v : values) c.values_.emplace_back(v);
        return c;
    }
    void flatten_into(std::vector<Scalar>& out) const;

    std::vector<int64_t> sizes_;
    ScalarType scalar_type_ = kFloat;
    std::vector<Scalar> values_;  // flattened, row-major
};

}  // namespace detail

// ember::tensor({1.0, 2.0}), ember::tensor({{1, 2}, {3, 4}}, ember::kFloat64), ember::tensor(vec)
EMBER_API Tensor tensor(detail::TensorDataContainer data, const TensorOptions& options = {});

}  // namespace ember
