// Unary pointwise ops and their gradients.
#include <cmath>

#include "ember/complex.h"
#include "pointwise_kernels.h"

namespace ember {

using namespace native;

namespace {

constexpr double kLn2 = 0.693147180559945309417232121458;
constexpr double kLn10 = 2.302585092994045684017646509218;
constexpr double kTwoOverSqrtPi = 1.128379167095512573896158903122;
constexpr double kSqrtHalf = 0.707106781186547524400844362105;
constexpr double kInvSqrt2Pi = 0.398942280401432677939946059934;
constexpr double kSqrt2OverPi = 0.797884560802865355879892119869;

// A float-valued unary op (integers compute in the default dtype); with_complex: complex
// tensors compute in their own dtype (the op's expression then takes std::complex too).
template <bool with_complex = false, typename Make>
Tensor float_unary(const Tensor& self, const char* name, Make make, Tensor out = {}) {
    if constexpr (with_complex) {
        if (self.is_complex()) {
            return run_unary<Kinds::FloatingAndComplex>(self, self.scalar_type(), self.scalar_type(), name, make,
                                                         std::move(out));
        }
    }
    check_not_complex(self, name);
    const ScalarType ct = float_compute_type(self);
    return run_unary<Kinds::Floating>(self, ct, ct, name, make, std::move(out));
}

// The functions the C++ library has for real numbers only, for complex ones too (each part in
// double, as PyTorch computes them without the cancellation of log(1 + z) and exp(z) - 1).
template <typename T>
T log1p_(T x) {
    if constexpr (is_complex_v<T>) {
        const double re = x.real(), im = x.imag();
        // |1 + z|^2 = 1 + (2 re + re^2 + im^2)
        return T(static_cast<typename T::value_type>(0.5 * std::log1p(re * (2 + re) + im * im)),
                 static_cast<typename T::value_type>(std::atan2(im, 1 + re)));
    } else {
        return std::log1p(x);
    }
}
template <typename T>
T expm1_(T x) {
    if constexpr (is_complex_v<T>) {
        const double re = x.real(), im = x.imag(), s = std::sin(im / 2);
        // exp(re) cos(im) - 1 = expm1(re) cos(im) - 2 sin^2(im / 2)
        return T(static_cast<typename T::value_type>(std::expm1(re) * std::cos(im) - 2 * s * s),
                 static_cast<typename T::value_type>(std::exp(re) * std::sin(im)));
    } else {
        return std::expm1(x);
    }
}
template <typename T>
T exp2_(T x) {
    if constexpr (is_complex_v<T>) return std::exp(x * typename T::value_type(kLn2));
    else return std::exp2(x);
}
template <typename T>
T log2_(T x) {
    if constexpr (is_complex_v<T>) return std::log(x) / typename T::value_type(kLn2);
    else return std::log2(x);
}

#define EMBER_FLOAT_UNARY_OP(fn, kname, expr, node_name, save, grad_expr)                                      \
    EMBER_FLOAT_UNARY_OP_(fn, kname, false, expr, node_name, save, grad_expr)
// (the same for an op that takes complex tensors)
#define EMBER_FLOAT_COMPLEX_UNARY_OP(fn, kname, expr, node_name, save, grad_expr)                              \
    EMBER_FLOAT_UNARY_OP_(fn, kname, true, expr, node_name, save, grad_expr)
#define EMBER_FLOAT_UNARY_OP_(fn, kname, with_complex, expr, node_name, save, grad_expr)                        \
    Tensor fn(const Tensor& self) {                                                                             \
        Tensor out = float_unary<with_complex>(self, kname, [](auto) { return [](auto x) { return expr; }; });   \
        record_unary(                                                                                           \
            out, self, node_name,                                                                               \
            [](FunctionNode& n, const Tensor& g) -> Tensor {                                                    \
                (void)n;                                                                                        \
                return grad_expr;                                                                               \
            },                                                                                                  \
            save);                                                                                              \
        return out;                                                                                             \
    }

}  // namespace

// x: the float (or complex) value; n.saved(0): self or the result
EMBER_FLOAT_COMPLEX_UNARY_OP(exp, "exp", std::exp(x), "ExpBackward0", Save::Result, g * n.saved(0))
EMBER_FLOAT_COMPLEX_UNARY_OP(exp2, "exp2", exp2_(x), "Exp2Backward0", Save::Result, g * n.saved(0) * kLn2)
EMBER_FLOAT_COMPLEX_UNARY_OP(log, "log", std::log(x), "LogBackward0", Save::Self, g / n.saved(0))
EMBER_FLOAT_COMPLEX_UNARY_OP(log2, "log2", log2_(x), "Log2Backward0", Save::Self, g / (n.saved(0) * kLn2))
EMBER_FLOAT_COMPLEX_UNARY_OP(log10, "log10", std::log10(x), "Log10Backward0", Save::Self, g / (n.saved(0) * kLn10))
EMBER_FLOAT_COMPLEX_UNARY_OP(log1p, "log1p", log1p_(x), "Log1PBackward0", Save::Self, g / (n.saved(0) + 1))
EMBER_FLOAT_COMPLEX_UNARY_OP(expm1, "expm1", expm1_(x), "Expm1Backward0", Save::Result, g * (n.saved(0) + 1))
EMBER_FLOAT_COMPLEX_UNARY_OP(sqrt, "sqrt", std::sqrt(x), "SqrtBackward0", Save::Result, g / (2 * n.saved(0)))
EMBER_FLOAT_COMPLEX_UNARY_OP(rsqrt, "rsqrt", decltype(x)(1) / std::sqrt(x), "RsqrtBackward0", Save::Result,
                             -0.5 * g * n.saved(0).pow(3))
EMBER_FLOAT_COMPLEX_UNARY_OP(sin, "sin", std::sin(x), "SinBackward0", Save::Self, g * n.saved(0).cos())
EMBER_FLOAT_COMPLEX_UNARY_OP(cos, "cos", std::cos(x), "CosBackward0", Save::Self, g * -n.saved(0).sin())
EMBER_FLOAT_COMPLEX_UNARY_OP(tan, "tan", std::tan(x), "TanBackward0", Save::Result, g * (1 + n.saved(0).square()))
EMBER_FLOAT_COMPLEX_UNARY_OP(tanh, "tanh", std::tanh(x), "TanhBackward0", Save::Result, g * (1 - n.saved(0).square()))
EMBER_FLOAT_COMPLEX_UNARY_OP(sinh, "sinh", std::sinh(x), "SinhBackward0", Save::Self, g * n.saved(0).cosh())
EMBER_FLOAT_COMPLEX_UNARY_OP(cosh, "cosh", std::cosh(x), "CoshBackward0", Save::Self, g * n.saved(0).sinh())
EMBER_FLOAT_COMPLEX_UNARY_OP(sigmoid, "sigmoid", decltype(x)(1) / (decltype(x)(1) + std::exp(-x)), "SigmoidBackward0",
                             Save::Result, g * (1 - n.saved(0)) * n.saved(0))
EMBER_FLOAT_UNARY_OP(erf, "erf", std::erf(x), "ErfBackward0", Save::Self,
                     g * kTwoOverSqrtPi * (-n.saved(0).square()).exp())
EMBER_FLOAT_COMPLEX_UNARY_OP(reciprocal, "reciprocal", decltype(x)(1) / x, "ReciprocalBackward0", Save::Result,
                             -g * n.saved(0).square())

#undef EMBER_FLOAT_UNARY_OP
#undef EMBER_FLOAT_COMPLEX_UNARY_OP
#undef EMBER_FLOAT_UNARY_OP_

// fn() and fn_() of Tensor (float_result: fn's result is floating even for an integer self,
// which then cannot hold it in place)
#define EMBER_UNARY_METHODS(fn, float_result)                                                    \
    Tensor Tensor::fn() const { return ember::fn(*this); }                                       \
    Tensor& Tensor::fn##_() const {                                                              \
        if (float_result) check_inplace_dtype(float_compute_type(*this), scalar_type());         \
        return inplace_from(*this, {}, [](const Tensor& t) { return ember::fn(t); });            \
    }
EMBER_UNARY_METHODS(exp, true)
EMBER_UNARY_METHODS(exp2, true)
EMBER_UNARY_METHODS(log, true)
EMBER_UNARY_METHODS(log2, true)
EMBER_UNARY_METHODS(log10, true)
EMBER_UNARY_METHODS(log1p, true)
EMBER_UNARY_METHODS(expm1, true)
EMBER_UNARY_METHODS(sqrt, true)
EMBER_UNARY_METHODS(rsqrt, true)
EMBER_UNARY_METHODS(sin, true)
EMBER_UNARY_METHODS(cos, true)
EMBER_UNARY_METHODS(tan, true)
EMBER_UNARY_METHODS(tanh, true)
EMBER_UNARY_METHODS(sinh, true)
EMBER_UNARY_METHODS(cosh, true)
EMBER_UNARY_METHODS(sigmoid, true)
EMBER_UNARY_METHODS(erf, true)
EMBER_UNARY_METHODS(reciprocal, true)

// ---- same-dtype unary ops --------------------------------------------------------------------------
namespace {

template <typename T>
constexpr bool is_float_like = std::is_floating_point_v<T> || std::is_same_v<T, Half>;

template <Kinds K, typename Make>
Tensor same_unary(const Tensor& self, const char* name, Make make, Tensor out = {}) {
    return run_unary<K>(self, self.scalar_type(), self.scalar_type(), name, make, std::move(out));
}

// Zero-gradient ops (floor, ceil, round, trunc, sign): integers are copied unchanged.
template <typename Make>
Tensor rounding_op(const Tensor& self, const char* kname, const char* node_name, Make make) {
    EMBER_CHECK(self.scalar_type() != kBool, "\"", kname, "\" not implemented for 'Bool'");
    check_not_complex(self, kname);
    Tensor out = is_floating_point(self.scalar_type()) ? same_unary<Kinds::Floating>(self, kname, make)
                                                       : self.clone();
    record_unary(out, self, node_name, [](const Tensor& g) { return zeros_like(g); });
    return out;
}

}  // namespace

Tensor neg(const Tensor& self) {
    EMBER_CHECK(self.scalar_type() != kBool,
                "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, "
                "use the `~` or `logical_not()` operator instead.");
    Tensor out = same_unary<Kinds::NumericAndComplex>(self, "neg", [](auto) { return [](auto x) { return -x; }; });
    record_unary(out, self, "NegBackward0", [](const Tensor& g) { return -g; });
    return out;
}
Tensor negative(const Tensor& self) { return neg(self); }

Tensor abs(const Tensor& self) {
    EMBER_CHECK(self.scalar_type() != kBool, "\"abs_cpu\" not implemented for 'Bool'");
    if (self.is_complex()) return complex_abs(self);  // |z|, in the real dtype
    Tensor out = same_unary<Kinds::Numeric>(self, "abs", [](auto tag) {
        using T = opmath_t<typename decltype(tag)::type>;
        return [](T x) -> T {
            if constexpr (std::is_unsigned_v<T>) return x;
            else return x < T(0) ? T(-x) : x;
        };
    });
    record_unary(
        out, self, "AbsBackward0", [](FunctionNode& n, const Tensor& g) { return g * n.saved(0).sign(); }, Save::Self);
    return out;
}

Tensor sign(const Tensor& self) {
    Tensor out = same_unary<Kinds::All>(self, "sign", [](auto tag) {
        using T = opmath_t<typename decltype(tag)::type>;
        return [](T x) -> T {
            if constexpr (std::is_same_v<T, bool>) return x;
            else return static_cast<T>((T(0) < x) - (x < T(0)));
        };
    });
    record_unary(out, self, "SignBackward0", [](const Tensor& g) { return zeros_like(g); });
    return out;
}

// sgn: z / |z| (0 at 0) for complex tensors, sign for real ones
Tensor sgn(const Tensor& self) {
    if (!self.is_complex()) return sign(self);
    return same_unary<Kinds::FloatingAndComplex>(self, "sgn", [](auto tag) {
        using T = typename decltype(tag)::type;
        return [](T z) -> T {
            if constexpr (is_complex_v<T>) {
                const auto r = std::abs(z);
                return r == 0 ? T(0) : z / r;
            } else {
                return z;
            }
        };
    });
}

Tensor floor(const Tensor& self) {
    return rounding_op(self, "floor", "FloorBackward0", [](auto) { return [](auto x) { return std::floor(x); }; });
}
Tensor ceil(const Tensor& self) {
    return rounding_op(self, "ceil", "CeilBackward0", [](auto) { return [](auto x) { return std::ceil(x); }; });
}
Tensor round(const Tensor& self) {
    return rounding_op(self, "round", "RoundBackward0", [](auto) { return [](auto x) { return std::nearbyint(x); }; });
}
Tensor trunc(const Tensor& self) {
    return rounding_op(self, "trunc", "TruncBackward0", [](auto) { return [](auto x) { return std::trunc(x); }; });
}

Tensor relu(const Tensor& self) {
    EMBER_CHECK(self.scalar_type() != kBool, "Boolean inputs not supported for relu");
    Tensor out = same_unary<Kinds::Numeric>(self, "relu", [](auto tag) {
        using T = opmath_t<typename decltype(tag)::type>;
        // NaN propagates (x > 0 is false for NaN, so test x <= 0)
        return [](T x) -> T { return x <= T(0) ? T(0) : x; };
    });
    record_unary(
        out, self, "ReluBackward0", [](FunctionNode& n, const Tensor& g) { return g.masked_fill(n.saved(0) <= 0, 0); },
        Save::Result);
    return out;
}

Tensor square(const Tensor& self) {
    if (self.scalar_type() == kBool) return pow(self.to(kLong), 2);
    if (self.is_complex()) return mul(self, self);
    return pow(self, 2);
}

Tensor gelu(const Tensor& self, std::string_view approximate) {
    EMBER_CHECK(approximate == "none" || approximate == "tanh", "approximate argument must be either none or tanh.");
    const bool tanh_mode = approximate == "tanh";
    Tensor out = run_unary<Kinds::Floating>(self, self.scalar_type(), self.scalar_type(), "GeluKernelImpl",
                                             [tanh_mode](auto tag) {
        using T = opmath_t<typename decltype(tag)::type>;
        return [tanh_mode](T x) -> T {
            if (tanh_mode) {
                const T inner = T(kSqrt2OverPi) * (x + T(0.044715) * x * x * x);
                return T(0.5) * x * (T(1) + std::tanh(inner));
            }
            return T(0.5) * x * (T(1) + std::erf(x * T(kSqrtHalf)));
        };
    });
    if (auto n = make_node("GeluBackward0", {self})) {
        set_history(out, n, 0);
        n->save(self);
        n->set_formula([tanh_mode](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            const Tensor x = node.saved(0);
            if (tanh_mode) {
                const Tensor inner = kSqrt2OverPi * (x + 0.044715 * x.pow(3));
                const Tensor t = inner.tanh();
                const Tensor dinner = kSqrt2OverPi * (1 + 3 * 0.044715 * x.square());
                return {g[0] * (0.5 * (1 + t) + 0.5 * x * (1 - t.square()) * dinner)};
            }
            const Tensor cdf = 0.5 * (1 + (x * kSqrtHalf).erf());
            const Tensor pdf = kInvSqrt2Pi * (-0.5 * x.square()).exp();
            return {g[0] * (cdf + x * pdf)};
        });
    }
    return out;
}

Tensor silu(const Tensor& self) {
    Tensor out = run_unary<Kinds::Floating>(self, self.scalar_type(), self.scalar_type(), "silu_cpu", [](auto tag) {
        using T = opmath_t<typename decltype(tag)::type>;
        return [](T x) -> T { return x / (T(1) + std::exp(-x)); };
    });
    if (auto n = make_node("SiluBackward0", {self})) {
        set_history(out, n, 0);
        n->save(self);
        n->set_formula([](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            const Tensor x = node.saved(0);
            const Tensor s = x.sigmoid();
            return {g[0] * s * (1 + x * (1 - s))};
        });
    }
    return out;
}

// ---- bool-valued unary ops ----------------------------------------------------------------------
Tensor isnan(const Tensor& self) {
    if (self.is_complex()) return isnan(real(self)).logical_or(isnan(imag(self)));  // either part / both parts
    if (!self.is_floating_point()) return zeros(self.sizes(), kBool);
    return run_unary<Kinds::Floating>(self, self.scalar_type(), kBool, "isnan",
                                      [](auto) { return [](auto x) { return x != x; }; });
}
Tensor isinf(const Tensor& self) {
    if (self.is_complex()) return isinf(real(self)).logical_or(isinf(imag(self)));  // either part / both parts
    if (!self.is_floating_point()) return zeros(self.sizes(), kBool);
    return run_unary<Kinds::Floating>(self, self.scalar_type(), kBool, "isinf",
                                      [](auto) { return [](auto x) { return std::isinf(x); }; });
}
Tensor isfinite(const Tensor& self) {
    if (self.is_complex()) return isfinite(real(self)).logical_and(isfinite(imag(self)));  // either part / both parts
    if (!self.is_floating_point()) return ones(self.sizes(), kBool);
    return run_unary<Kinds::Floating>(self, self.scalar_type(), kBool, "isfinite",
                                      [](auto) { return [](auto x) { return std::isfinite(x); }; });
}
Tensor logical_not(const Tensor& self) {
    return run_unary<Kinds::All>(self, self.scalar_type(), kBool, "logical_not",
                                 [](auto tag) {
                                     using T = opmath_t<typename decltype(tag)::type>;
                                     return [](T x) { return !(x != T(0)); };
                                 });
}
Tensor bitwise_not(const Tensor& self) {
    EMBER_CHECK(!self.is_floating_point(), "~ (operator.invert) is only implemented on integer and Boolean-type tensors");
    return same_unary<Kinds::Integral>(self, "bitwise_not", [](auto tag) {
        using T = opmath_t<typename decltype(tag)::type>;
        return [](T x) -> T {
            if constexpr (std::is_same_v<T, bool>) return !x;
            else return static_cast<T>(~x);
        };
    });
}

// ---- methods and in-place variants ----------------------------------------------------------------
EMBER_UNARY_METHODS(neg, false)
EMBER_UNARY_METHODS(abs, false)
EMBER_UNARY_METHODS(sign, false)
EMBER_UNARY_METHODS(sgn, false)
EMBER_UNARY_METHODS(floor, false)
EMBER_UNARY_METHODS(ceil, false)
EMBER_UNARY_METHODS(round, false)
EMBER_UNARY_METHODS(trunc, false)
EMBER_UNARY_METHODS(relu, false)
EMBER_UNARY_METHODS(square, false)
#undef EMBER_UNARY_METHODS

Tensor Tensor::logical_not() const { return ember::logical_not(*this); }
Tensor& Tensor::logical_not_() const {
    return inplace_from(*this, {}, [](const Tensor& t) { return ember::logical_not(t); });
}
Tensor Tensor::isnan() const { return ember::isnan(*this); }
Tensor Tensor::isinf() const { return ember::isinf(*this); }
Tensor Tensor::isfinite() const { return ember::isfinite(*this); }
Tensor Tensor::bitwise_not() const { return ember::bitwise_not(*this); }
Tensor operator~(const Tensor& t) { return bitwise_not(t); }
Tensor operator-(const Tensor& t) { return neg(t); }

}  // namespace ember
