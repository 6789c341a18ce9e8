// ember::TensorOptions: the dtype, device and requires_grad of a new tensor, as libtorch's
// builder: ember::TensorOptions().dtype(ember::kFloat64).requires_grad(true). A bare dtype
// converts implicitly: ember::zeros({2, 3}, ember::kInt64).
#pragma once

#include <optional>
#include <ostream>

#include "device.h"
#include "dtype.h"

namespace ember {

class TensorOptions {
public:
    TensorOptions() = default;
    TensorOptions(ScalarType dtype) : dtype_(dtype) {}        // NOLINT: implicit as libtorch
    TensorOptions(Device device) : device_(device) {}         // NOLINT
    TensorOptions(DeviceType device) : device_(device) {}     // NOLINT

    TensorOptions dtype(ScalarType dtype) const noexcept {
        TensorOptions r = *this;
        r.dtype_ = dtype;
        return r;
    }
    TensorOptions dtype(std::optional<ScalarType> dtype) const noexcept {
        TensorOptions r = *this;
        r.dtype_ = dtype;
        return r;
    }
    TensorOptions device(Device device) const noexcept {
        TensorOptions r = *this;
        r.device_ = device;
        return r;
    }
    TensorOptions requires_grad(bool requires_grad) const noexcept {
        TensorOptions r = *this;
        r.requires_grad_ = requires_grad;
        return r;
    }

    // The dtype: the one set, else the default dtype (kFloat).
    ScalarType dtype() const noexcept { return dtype_ ? *dtype_ : get_default_dtype(); }
    bool has_dtype() const noexcept { return dtype_.has_value(); }
    std::optional<ScalarType> dtype_opt() const noexcept { return dtype_; }
    Device device() const noexcept { return device_; }
    bool requires_grad() const noexcept { return requires_grad_; }

private:
    std::optional<ScalarType> dtype_;
    Device device_;
    bool requires_grad_ = false;
};

// Shorthands as libtorch's: ember::dtype(ember::kInt64), ember::requires_grad().
inline TensorOptions dtype(ScalarType d) { return TensorOptions().dtype(d); }
inline TensorOptions device(Device d) { return TensorOptions().device(d); }
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }

inline std::ostream& operator<<(std::ostream& os, const TensorOptions& o) {
    return os << "TensorOptions(dtype=" << o.dtype() << ", device=" << o.device()
              << ", requires_grad=" << (o.requires_grad() ? "true" : "false") << ")";
}

}  // namespace ember
