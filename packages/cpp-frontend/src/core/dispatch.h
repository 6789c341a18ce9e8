// Private: calling a generic lambda with the C++ element type of a runtime dtype.
//
//   dispatch_all(dtype, "add", [&](auto tag) {
//       using scalar_t = typename decltype(tag)::type;
//       ...
//   });
//
// opmath_t<T> is the type arithmetic runs in (float for Half, T otherwise).
#pragma once

#include <type_traits>

#include "ember/dtype.h"
#include "ember/error.h"

namespace ember {
namespace native {

template <typename T>
struct TypeTag {
    using type = T;
};

template <typename T>
using opmath_t = std::conditional_t<std::is_same_v<T, Half>, float, T>;

// A floating type for computations on T (float for Half and float, double for double).
template <typename T>
using acc_float_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

[[noreturn]] inline void dispatch_error(const char* name, ScalarType t) {
    EMBER_ERROR("\"", name, "\" not implemented for '", scalar_type_name(t), "'");
}

template <typename F>
decltype(auto) dispatch_all(ScalarType t, const char* name, F&& f) {
    switch (t) {
        case ScalarType::Byte: return f(TypeTag<uint8_t>());
        case ScalarType::Char: return f(TypeTag<int8_t>());
        case ScalarType::Short: return f(TypeTag<int16_t>());
        case ScalarType::Int: return f(TypeTag<int32_t>());
        case ScalarType::Long: return f(TypeTag<int64_t>());
        case ScalarType::Half: return f(TypeTag<Half>());
        case ScalarType::Float: return f(TypeTag<float>());
        case ScalarType::Double: return f(TypeTag<double>());
        case ScalarType::Bool: return f(TypeTag<bool>());
    }
    dispatch_error(name, t);
}

// All but bool.
template <typename F>
decltype(auto) dispatch_numeric(ScalarType t, const char* name, F&& f) {
    switch (t) {
        case ScalarType::Byte: return f(TypeTag<uint8_t>());
        case ScalarType::Char: return f(TypeTag<int8_t>());
        case ScalarType::Short: return f(TypeTag<int16_t>());
        case ScalarType::Int: return f(TypeTag<int32_t>());
        case ScalarType::Long: return f(TypeTag<int64_t>());
        case ScalarType::Half: return f(TypeTag<Half>());
        case ScalarType::Float: return f(TypeTag<float>());
        case ScalarType::Double: return f(TypeTag<double>());
        default: break;
    }
    dispatch_error(name, t);
}

template <typename F>
decltype(auto) dispatch_floating(ScalarType t, const char* name, F&& f) {
    switch (t) {
        case ScalarType::Half: return f(TypeTag<Half>());
        case ScalarType::Float: return f(TypeTag<float>());
        case ScalarType::Double: return f(TypeTag<double>());
        default: break;
    }
    dispatch_error(name, t);
}

// Integer types including bool.
template <typename F>
decltype(auto) dispatch_integral(ScalarType t, const char* name, F&& f) {
    switch (t) {
        case ScalarType::Byte: return f(TypeTag<uint8_t>());
        case ScalarType::Char: return f(TypeTag<int8_t>());
        case ScalarType::Short: return f(TypeTag<int16_t>());
        case ScalarType::Int: return f(TypeTag<int32_t>());
        case ScalarType::Long: return f(TypeTag<int64_t>());
        case ScalarType::Bool: return f(TypeTag<bool>());
        default: break;
    }
    dispatch_error(name, t);
}

}  // namespace native
}  // namespace ember
