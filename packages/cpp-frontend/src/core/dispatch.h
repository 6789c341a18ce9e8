// Private: calling a generic lambda with the C++ element type of a runtime dtype.
//
//   dispatch_all(dtype, "add", [&](auto tag) {
//       using scalar_t = typename decltype(tag)::type;
//       ...
//   });
//
// opmath_t<T> is the type arithmetic runs in (float for Half, T otherwise).
#pragma once

#include <complex>
#include <type_traits>
#include <utility>

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

// The dtype sets a kernel accepts (bit flags, combined with |).
enum DtypeSet : unsigned {
    kIntegerTypes = 1u,   // uint8, int8, int16, int32, int64
    kFloatingTypes = 2u,  // float16, float32, float64
    kBoolType = 4u,
    kComplexTypes = 8u,   // complex64, complex128 (std::complex<float>, std::complex<double>)
};

// Calls f(TypeTag<C++ type of t>()) when t is in Set; PyTorch's "not implemented" error otherwise.
template <unsigned Set, typename F>
decltype(auto) dispatch_set(ScalarType t, const char* name, F&& f) {
    constexpr bool ints = (Set & kIntegerTypes) != 0, floats = (Set & kFloatingTypes) != 0, bools = (Set & kBoolType) != 0;
    constexpr bool complexes = (Set & kComplexTypes) != 0;
    switch (t) {
        case ScalarType::Byte: if constexpr (ints) return f(TypeTag<uint8_t>()); break;
        case ScalarType::Char: if constexpr (ints) return f(TypeTag<int8_t>()); break;
        case ScalarType::Short: if constexpr (ints) return f(TypeTag<int16_t>()); break;
        case ScalarType::Int: if constexpr (ints) return f(TypeTag<int32_t>()); break;
        case ScalarType::Long: if constexpr (ints) return f(TypeTag<int64_t>()); break;
        case ScalarType::Half: if constexpr (floats) return f(TypeTag<Half>()); break;
        case ScalarType::Float: if constexpr (floats) return f(TypeTag<float>()); break;
        case ScalarType::Double: if constexpr (floats) return f(TypeTag<double>()); break;
        case ScalarType::ComplexFloat: if constexpr (complexes) return f(TypeTag<std::complex<float>>()); break;
        case ScalarType::ComplexDouble: if constexpr (complexes) return f(TypeTag<std::complex<double>>()); break;
        case ScalarType::Bool: if constexpr (bools) return f(TypeTag<bool>()); break;
    }
    dispatch_error(name, t);
}

// Every dtype but the complex ones: the kernels written for real numbers (a complex tensor
// gets PyTorch's error, '"add" not implemented for 'ComplexFloat'', never a wrong result).
template <typename F>
decltype(auto) dispatch_all(ScalarType t, const char* name, F&& f) {
    return dispatch_set<kIntegerTypes | kFloatingTypes | kBoolType>(t, name, std::forward<F>(f));
}

// All but bool.
template <typename F>
decltype(auto) dispatch_numeric(ScalarType t, const char* name, F&& f) {
    return dispatch_set<kIntegerTypes | kFloatingTypes>(t, name, std::forward<F>(f));
}

template <typename F>
decltype(auto) dispatch_floating(ScalarType t, const char* name, F&& f) {
    return dispatch_set<kFloatingTypes>(t, name, std::forward<F>(f));
}

// Every dtype, the complex ones included (copies and fills).
template <typename F>
decltype(auto) dispatch_all_and_complex(ScalarType t, const char* name, F&& f) {
    return dispatch_set<kIntegerTypes | kFloatingTypes | kBoolType | kComplexTypes>(t, name, std::forward<F>(f));
}

// Integer types including bool.
template <typename F>
decltype(auto) dispatch_integral(ScalarType t, const char* name, F&& f) {
    return dispatch_set<kIntegerTypes | kBoolType>(t, name, std::forward<F>(f));
}

}  // namespace native
}  // namespace ember
