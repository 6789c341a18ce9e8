// Ember's dtypes in C++: the dtypes of the Python core, with PyTorch's C++ names.
#pragma once

#include "export.h"
#include <cstddef>
#include <complex>
#include <cstdint>
#include <ostream>
#include <string_view>
#include <type_traits>

#include "half.h"

namespace ember {

// The element types of a Tensor, in PyTorch's ScalarType order (the numeric values are
// PyTorch's c10::ScalarType codes, so they can be compared with what libtorch writes).
enum class ScalarType : int8_t {
    Byte = 0,    // uint8
    Char = 1,    // int8
    Short = 2,   // int16
    Int = 3,     // int32
    Long = 4,    // int64
    Half = 5,    // float16 (storage and conversion; arithmetic runs in float32)
    Float = 6,   // float32
    Double = 7,  // float64
    ComplexFloat = 9,   // complex64: std::complex<float> (real, imaginary)
    ComplexDouble = 10, // complex128: std::complex<double>
    Bool = 11,
};

using Dtype = ScalarType;

inline constexpr ScalarType kUInt8 = ScalarType::Byte;
inline constexpr ScalarType kByte = ScalarType::Byte;
inline constexpr ScalarType kInt8 = ScalarType::Char;
inline constexpr ScalarType kChar = ScalarType::Char;
inline constexpr ScalarType kInt16 = ScalarType::Short;
inline constexpr ScalarType kShort = ScalarType::Short;
inline constexpr ScalarType kInt32 = ScalarType::Int;
inline constexpr ScalarType kInt = ScalarType::Int;
inline constexpr ScalarType kInt64 = ScalarType::Long;
inline constexpr ScalarType kLong = ScalarType::Long;
inline constexpr ScalarType kFloat16 = ScalarType::Half;
inline constexpr ScalarType kHalf = ScalarType::Half;
inline constexpr ScalarType kFloat32 = ScalarType::Float;
inline constexpr ScalarType kFloat = ScalarType::Float;
inline constexpr ScalarType kFloat64 = ScalarType::Double;
inline constexpr ScalarType kDouble = ScalarType::Double;
inline constexpr ScalarType kBool = ScalarType::Bool;
inline constexpr ScalarType kComplexFloat = ScalarType::ComplexFloat;
inline constexpr ScalarType kComplex64 = ScalarType::ComplexFloat;
inline constexpr ScalarType kComplexDouble = ScalarType::ComplexDouble;
inline constexpr ScalarType kComplex128 = ScalarType::ComplexDouble;

// Bytes per element.
constexpr std::size_t element_size(ScalarType t) noexcept {
    switch (t) {
        case ScalarType::Byte:
        case ScalarType::Char:
        case ScalarType::Bool:
            return 1;
        case ScalarType::Short:
        case ScalarType::Half:
            return 2;
        case ScalarType::Int:
        case ScalarType::Float:
            return 4;
        case ScalarType::Long:
        case ScalarType::Double:
        case ScalarType::ComplexFloat:
            return 8;
        case ScalarType::ComplexDouble:
            return 16;
    }
    return 0;
}

constexpr bool is_floating_point(ScalarType t) noexcept {
    return t == ScalarType::Half || t == ScalarType::Float || t == ScalarType::Double;
}

constexpr bool is_complex(ScalarType t) noexcept {
    return t == ScalarType::ComplexFloat || t == ScalarType::ComplexDouble;
}

constexpr bool is_integral(ScalarType t, bool include_bool) noexcept {
    return (t == ScalarType::Bool && include_bool) ||
           (t != ScalarType::Bool && !is_floating_point(t) && !is_complex(t));
}

// The complex dtype of a real one (float32 -> complex64, float64 -> complex128; a complex
// dtype is its own), and the real dtype of a complex one (complex64 -> float32; a real dtype
// is its own). Other dtypes have no counterpart: they are returned unchanged.
constexpr ScalarType to_complex_type(ScalarType t) noexcept {
    return t == ScalarType::Float ? ScalarType::ComplexFloat
         : t == ScalarType::Double ? ScalarType::ComplexDouble : t;
}
constexpr ScalarType to_real_type(ScalarType t) noexcept {
    return t == ScalarType::ComplexFloat ? ScalarType::Float
         : t == ScalarType::ComplexDouble ? ScalarType::Double : t;
}

// Python's spelling without the module: "float32", "int64", "bool", ...
constexpr std::string_view dtype_name(ScalarType t) noexcept {
    switch (t) {
        case ScalarType::Byte: return "uint8";
        case ScalarType::Char: return "int8";
        case ScalarType::Short: return "int16";
        case ScalarType::Int: return "int32";
        case ScalarType::Long: return "int64";
        case ScalarType::Half: return "float16";
        case ScalarType::Float: return "float32";
        case ScalarType::Double: return "float64";
        case ScalarType::ComplexFloat: return "complex64";
        case ScalarType::ComplexDouble: return "complex128";
        case ScalarType::Bool: return "bool";
    }
    return "unknown";
}

// PyTorch's C++ ScalarType names, as libtorch prints them in messages: "Float", "Long", ...
constexpr std::string_view scalar_type_name(ScalarType t) noexcept {
    switch (t) {
        case ScalarType::Byte: return "Byte";
        case ScalarType::Char: return "Char";
        case ScalarType::Short: return "Short";
        case ScalarType::Int: return "Int";
        case ScalarType::Long: return "Long";
        case ScalarType::Half: return "Half";
        case ScalarType::Float: return "Float";
        case ScalarType::Double: return "Double";
        case ScalarType::ComplexFloat: return "ComplexFloat";
        case ScalarType::ComplexDouble: return "ComplexDouble";
        case ScalarType::Bool: return "Bool";
    }
    return "Undefined";
}

// Prints as libtorch prints a ScalarType: "Float", "Long", ...
inline std::ostream& operator<<(std::ostream& os, ScalarType t) {
    return os << scalar_type_name(t);
}

// The C++ element type of each ScalarType, and back.
template <ScalarType S> struct ScalarTypeToCpp;
template <> struct ScalarTypeToCpp<ScalarType::Byte> { using type = uint8_t; };
template <> struct ScalarTypeToCpp<ScalarType::Char> { using type = int8_t; };
template <> struct ScalarTypeToCpp<ScalarType::Short> { using type = int16_t; };
template <> struct ScalarTypeToCpp<ScalarType::Int> { using type = int32_t; };
template <> struct ScalarTypeToCpp<ScalarType::Long> { using type = int64_t; };
template <> struct ScalarTypeToCpp<ScalarType::Half> { using type = Half; };
template <> struct ScalarTypeToCpp<ScalarType::Float> { using type = float; };
template <> struct ScalarTypeToCpp<ScalarType::Double> { using type = double; };
template <> struct ScalarTypeToCpp<ScalarType::ComplexFloat> { using type = std::complex<float>; };
template <> struct ScalarTypeToCpp<ScalarType::ComplexDouble> { using type = std::complex<double>; };
template <> struct ScalarTypeToCpp<ScalarType::Bool> { using type = bool; };

template <typename T> struct CppTypeToScalarType;
template <> struct CppTypeToScalarType<uint8_t> { static constexpr ScalarType value = ScalarType::Byte; };
template <> struct CppTypeToScalarType<int8_t> { static constexpr ScalarType value = ScalarType::Char; };
template <> struct CppTypeToScalarType<int16_t> { static constexpr ScalarType value = ScalarType::Short; };
template <> struct CppTypeToScalarType<int32_t> { static constexpr ScalarType value = ScalarType::Int; };
template <> struct CppTypeToScalarType<int64_t> { static constexpr ScalarType value = ScalarType::Long; };
template <> struct CppTypeToScalarType<Half> { static constexpr ScalarType value = ScalarType::Half; };
template <> struct CppTypeToScalarType<float> { static constexpr ScalarType value = ScalarType::Float; };
template <> struct CppTypeToScalarType<double> { static constexpr ScalarType value = ScalarType::Double; };
template <> struct CppTypeToScalarType<std::complex<float>> { static constexpr ScalarType value = ScalarType::ComplexFloat; };
template <> struct CppTypeToScalarType<std::complex<double>> { static constexpr ScalarType value = ScalarType::ComplexDouble; };
template <> struct CppTypeToScalarType<bool> { static constexpr ScalarType value = ScalarType::Bool; };

// True for the C++ types that are the element type of some ScalarType.
template <typename T, typename = void> struct is_element_type : std::false_type {};
template <typename T>
struct is_element_type<T, std::void_t<decltype(CppTypeToScalarType<T>::value)>> : std::true_type {};

// The ScalarType of a C++ element type (kFloat for float, ...).
template <typename T>
constexpr ScalarType scalar_type_of() noexcept {
    return CppTypeToScalarType<T>::value;
}

// PyTorch's torch.promote_types over Ember's dtypes: bool < integers < floats < complex; two
// integer types promote to the smallest type that holds both (uint8 with int8 gives int16); a
// float with an integer gives the float; two floats give the wider; a complex type with
// anything gives the complex type of the wider float (complex64 with float64: complex128).
constexpr ScalarType promote_types(ScalarType a, ScalarType b) noexcept {
    if (a == b) return a;
    if (a == ScalarType::Bool) return b;
    if (b == ScalarType::Bool) return a;
    if (is_complex(a) || is_complex(b)) {
        const bool wide = a == ScalarType::ComplexDouble || b == ScalarType::ComplexDouble ||
                          a == ScalarType::Double || b == ScalarType::Double;
        return wide ? ScalarType::ComplexDouble : ScalarType::ComplexFloat;
    }
    const bool fa = is_floating_point(a), fb = is_floating_point(b);
    if (fa && fb) return element_size(a) >= element_size(b) ? a : b;
    if (fa) return a;
    if (fb) return b;
    // two integer types
    if (a == ScalarType::Byte || b == ScalarType::Byte) {
        const ScalarType other = a == ScalarType::Byte ? b : a;
        return other == ScalarType::Char ? ScalarType::Short : other;
    }
    return element_size(a) >= element_size(b) ? a : b;
}

// PyTorch's canCast: whether a value of type `from` may be written into a tensor of type
// `to` by an in-place op (no complex to non-complex, no float to integer, no non-bool to
// bool).
constexpr bool can_cast(ScalarType from, ScalarType to) noexcept {
    if (is_complex(from) && !is_complex(to)) return false;
    if (is_floating_point(from) && is_integral(to, /*include_bool=*/true)) return false;
    if (from != ScalarType::Bool && to == ScalarType::Bool) return false;
    return true;
}

// libtorch's Tensor::toString(): "CPUFloatType", "CPULongType", ...
inline std::string_view cpu_type_string(ScalarType t) noexcept {
    switch (t) {
        case ScalarType::Byte: return "CPUByteType";
        case ScalarType::Char: return "CPUCharType";
        case ScalarType::Short: return "CPUShortType";
        case ScalarType::Int: return "CPUIntType";
        case ScalarType::Long: return "CPULongType";
        case ScalarType::Half: return "CPUHalfType";
        case ScalarType::Float: return "CPUFloatType";
        case ScalarType::Double: return "CPUDoubleType";
        case ScalarType::ComplexFloat: return "CPUComplexFloatType";
        case ScalarType::ComplexDouble: return "CPUComplexDoubleType";
        case ScalarType::Bool: return "CPUBoolType";
    }
    return "UndefinedType";
}

// The default floating dtype (kFloat unless changed): the dtype of float factories
// (ones, rand, arange with a float step, tensor({1.0})) and of true division of integers.
// Process-wide like torch.set_default_dtype; only kFloat and kDouble (and kHalf) are allowed.
EMBER_API ScalarType get_default_dtype() noexcept;
EMBER_API void set_default_dtype(ScalarType t);

}  // namespace ember
