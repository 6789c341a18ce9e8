// Tensor factories, random numbers and ember::tensor from braced lists.
#include <cmath>
#include <mutex>
#include <numeric>

#include "op_common.h"

namespace ember {

using namespace native;

namespace {

Tensor finish(Tensor t, const TensorOptions& options) {
    if (options.requires_grad()) t.requires_grad_(true);
    return t;
}

ScalarType dtype_for_fill(const Scalar& v, const TensorOptions& options) {
    if (options.has_dtype()) return options.dtype();
    if (v.isBoolean()) return kBool;
    if (v.isIntegral(false)) return kLong;
    return get_default_dtype();
}

}  // namespace

Tensor empty(IntArrayRef size, const TensorOptions& options) {
    return finish(empty_tensor(size, options.dtype()), options);
}

Tensor empty_strided(IntArrayRef size, IntArrayRef stride, const TensorOptions& options) {
    return finish(empty_strided_tensor(size, stride, options.dtype()), options);
}

Tensor zeros(IntArrayRef size, const TensorOptions& options) {
    return finish(empty_tensor(size, options.dtype(), /*zero=*/true), options);
}

Tensor ones(IntArrayRef size, const TensorOptions& options) { return full(size, 1, options.dtype(options.dtype())); }

Tensor full(IntArrayRef size, const Scalar& fill_value, const TensorOptions& options) {
    Tensor t = empty_tensor(size, dtype_for_fill(fill_value, options));
    fill_kernel(t, fill_value);
    return finish(t, options);
}

Tensor scalar_tensor(const Scalar& s, const TensorOptions& options) {
    return finish(scalar_to_tensor(s, dtype_for_fill(s, options)), options);
}

Tensor arange(const Scalar& end, const TensorOptions& options) { return arange(0, end, 1, options); }
Tensor arange(const Scalar& start, const Scalar& end, const TensorOptions& options) {
    return arange(start, end, 1, options);
}

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& options) {
    const bool all_int = start.isIntegral(true) && end.isIntegral(true) && step.isIntegral(true);
    const ScalarType dtype = options.has_dtype() ? options.dtype() : (all_int ? kLong : get_default_dtype());
    int64_t n = 0;
    if (all_int && !is_floating_point(dtype)) {
        const int64_t s = start.toLong(), e = end.toLong(), st = step.toLong();
        EMBER_CHECK(st != 0, "step must be nonzero");
        EMBER_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), "upper bound and larger bound inconsistent with step sign");
        const int64_t sgn = (st > 0) - (st < 0);
        n = (e - s + st - sgn) / st;
    } else {
        const double s = start.toDouble(), e = end.toDouble(), st = step.toDouble();
        EMBER_CHECK(st != 0, "step must be nonzero");
        EMBER_CHECK(std::isfinite(s) && std::isfinite(e), "unsupported range: ", s, " -> ", e);
        EMBER_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), "upper bound and larger bound inconsistent with step sign");
        n = static_cast<int64_t>(std::ceil((e - s) / st));
    }
    Tensor t = empty_tensor({n}, dtype);
    dispatch_numeric(dtype, "arange_cpu", [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* p = static_cast<T*>(t.data_ptr());
        if constexpr (std::is_integral_v<T>) {
            const int64_t s = start.toLong(), st = step.toLong();
            if (start.isFloatingPoint() || step.isFloatingPoint()) {
                const double sd = start.toDouble(), std_ = step.toDouble();
                for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(static_cast<int64_t>(sd + std_ * static_cast<double>(i)));
            } else {
                for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(s + st * i);
            }
        } else {
            const double s = start.toDouble(), st = step.toDouble();
            for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(static_cast<float>(s + st * static_cast<double>(i)));
        }
    });
    return finish(t, options);
}

Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, const TensorOptions& options) {
    EMBER_CHECK(steps >= 0, "number of steps must be non-negative");
    const ScalarType dtype = options.dtype();
    Tensor t = empty_tensor({steps}, dtype);
    const double s = start.toDouble(), e = end.toDouble();
    const double step = steps > 1 ? (e - s) / static_cast<double>(steps - 1) : 0.0;
    const int64_t half = steps / 2;
    dispatch_numeric(dtype, "linspace_cpu", [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* p = static_cast<T*>(t.data_ptr());
        for (int64_t i = 0; i < steps; ++i) {
            const double v = i < half ? s + step * static_cast<double>(i) : e - step * static_cast<double>(steps - 1 - i);
            p[i] = convert<T>(v);
        }
    });
    return finish(t, options);
}

Tensor eye(int64_t n, const TensorOptions& options) { return eye(n, n, options); }

Tensor eye(int64_t n, int64_t m, const TensorOptions& options) {
    EMBER_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
    EMBER_CHECK(m >= 0, "m must be greater or equal to 0, got ", m);
    Tensor t = zeros({n, m}, options.dtype());
    dispatch_all(t.scalar_type(), "eye", [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* p = static_cast<T*>(t.data_ptr());
        for (int64_t i = 0; i < std::min(n, m); ++i) p[i * m + i] = convert<T>(1);
    });
    return finish(t, options);
}

// (the random factories and fills are in random.cpp)

// ---- *_like ------------------------------------------------------------------------------------
static TensorOptions like(const Tensor& t, const TensorOptions& options) {
    return options.has_dtype() ? options : options.dtype(t.scalar_type());
}
Tensor empty_like(const Tensor& t, const TensorOptions& options) { return empty(t.sizes(), like(t, options)); }
Tensor zeros_like(const Tensor& t, const TensorOptions& options) { return zeros(t.sizes(), like(t, options)); }
Tensor ones_like(const Tensor& t, const TensorOptions& options) { return ones(t.sizes(), like(t, options)); }
Tensor full_like(const Tensor& t, const Scalar& v, const TensorOptions& options) {
    return full(t.sizes(), v, like(t, options));
}
Tensor rand_like(const Tensor& t, const TensorOptions& options) { return rand(t.sizes(), like(t, options)); }
Tensor randn_like(const Tensor& t, const TensorOptions& options) { return randn(t.sizes(), like(t, options)); }
Tensor randint_like(const Tensor& t, int64_t low, int64_t high, const TensorOptions& options) {
    return randint(low, high, t.sizes(), like(t, options));
}

Tensor Tensor::new_empty(IntArrayRef size, const TensorOptions& options) const { return empty(size, like(*this, options)); }
Tensor Tensor::new_zeros(IntArrayRef size, const TensorOptions& options) const { return zeros(size, like(*this, options)); }
Tensor Tensor::new_ones(IntArrayRef size, const TensorOptions& options) const { return ones(size, like(*this, options)); }
Tensor Tensor::new_full(IntArrayRef size, const Scalar& v, const TensorOptions& options) const {
    return full(size, v, like(*this, options));
}

// ---- from_blob -----------------------------------------------------------------------------------
Tensor from_blob(void* data, IntArrayRef sizes, const TensorOptions& options) {
    return from_blob(data, sizes, contiguous_strides(sizes), std::function<void(void*)>(), options);
}
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const TensorOptions& options) {
    return from_blob(data, sizes, strides, std::function<void(void*)>(), options);
}
Tensor from_blob(void* data, IntArrayRef sizes, const std::function<void(void*)>& deleter,
                 const TensorOptions& options) {
    return from_blob(data, sizes, contiguous_strides(sizes), deleter, options);
}
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const std::function<void(void*)>& deleter,
                 const TensorOptions& options) {
    const ScalarType dtype = options.dtype();
    const int64_t extent = storage_extent(sizes, strides);
    Storage storage = Storage::from_blob(data, static_cast<size_t>(extent) * element_size(dtype), deleter);
    return finish(make_tensor(std::move(storage), dtype, sizes.vec(), strides.vec(), 0), options);
}

// ---- ember::tensor -------------------------------------------------------------------------------
namespace detail {

TensorDataContainer::TensorDataContainer() : sizes_({0}), scalar_type_(kFloat) {}

TensorDataContainer::TensorDataContainer(Scalar value, ScalarType type) : scalar_type_(type) {
    values_.push_back(value);
}

TensorDataContainer::TensorDataContainer(std::initializer_list<TensorDataContainer> list) {
    if (list.size() == 0) {
        sizes_ = {0};
        return;
    }
    const TensorDataContainer& first = *list.begin();
    scalar_type_ = first.scalar_type_;
    for (const TensorDataContainer& e : list) {
        EMBER_CHECK(e.sizes_ == first.sizes_, "Expected all sub-lists to have sizes: ", IntArrayRef(first.sizes_),
                    ", but got sub-list with sizes: ", IntArrayRef(e.sizes_));
        scalar_type_ = promote_types(scalar_type_, e.scalar_type_);
    }
    sizes_.push_back(static_cast<int64_t>(list.size()));
    sizes_.insert(sizes_.end(), first.sizes_.begin(), first.sizes_.end());
    for (const TensorDataContainer& e : list) e.flatten_into(values_);
}

void TensorDataContainer::flatten_into(std::vector<Scalar>& out) const {
    out.insert(out.end(), values_.begin(), values_.end());
}

Tensor TensorDataContainer::convert_to_tensor(const TensorOptions& options) const {
    ScalarType dtype;
    if (options.has_dtype()) {
        dtype = options.dtype();
    } else if (is_floating_point(scalar_type_) && scalar_type_ != kHalf) {
        dtype = get_default_dtype();
    } else if (is_integral(scalar_type_, false)) {
        dtype = kLong;
    } else {
        dtype = scalar_type_;
    }
    Tensor t = empty_tensor(sizes_, dtype);
    dispatch_all(dtype, "tensor", [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* p = static_cast<T*>(t.data_ptr());
        for (size_t i = 0; i < values_.size(); ++i) p[i] = values_[i].to<T>();
    });
    return finish(t, options);
}

}  // namespace detail

Tensor tensor(detail::TensorDataContainer data, const TensorOptions& options) { return data.convert_to_tensor(options); }

}  // namespace ember
