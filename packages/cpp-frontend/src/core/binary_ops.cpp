// Binary and ternary pointwise ops (arithmetic, comparisons, logical/bitwise ops, where,
// clamp, lerp, masked_fill) and their gradients.
#include <cmath>
#include <limits>

#include "pointwise_kernels.h"

namespace ember {

using namespace native;

namespace {

template <typename T>
constexpr bool is_float_like = std::is_floating_point_v<T>;

Tensor wrap(const Scalar& s, ScalarType dtype) { return scalar_to_tensor(s, dtype); }

void check_sub(ScalarType a, ScalarType b) {
    EMBER_CHECK(!(a == kBool && b == kBool),
                "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                "`logical_xor()` operator instead.");
    EMBER_CHECK(a != kBool && b != kBool,
                "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert "
                "a mask, use the `~` or `logical_not()` operator instead.");
}

void check_alpha(ScalarType compute, const Scalar& alpha) {
    EMBER_CHECK(!(is_integral(compute, true) && alpha.isFloatingPoint()),
                "For integral input tensors, argument alpha must not be a floating point number.");
    EMBER_CHECK(!(compute == kBool && !alpha.isBoolean() && alpha.toLong() != 1 && alpha.toLong() != 0),
                "Boolean alpha only supported for Boolean results.");
}

// out = a + alpha * b in dtype `compute` (out may be defined: in-place)
Tensor add_kernel(const Tensor& a, const Tensor& b, const Scalar& alpha, ScalarType compute, Tensor out = {}) {
    const bool unit = !alpha.isFloatingPoint() && alpha.toLong() == 1;
    if (unit) {
        return run_binary<Kinds::AllAndComplex>(a, b, compute, compute, "add", [](auto tag) {
            using T = opmath_t<typename decltype(tag)::type>;
            return [](T x, T y) -> T { return static_cast<T>(x + y); };
        }, std::move(out));
    }
    return run_binary<Kinds::AllAndComplex>(a, b, compute, compute, "add", [&](auto tag) {
        using T = opmath_t<typename decltype(tag)::type>;
        const T al = alpha.to<T>();
        return [al](T x, T y) -> T { return static_cast<T>(x + al * y); };
    }, std::move(out));
}

Tensor mul_kernel(const Tensor& a, const Tensor& b, ScalarType compute, Tensor out = {}) {
    return run_binary<Kinds::AllAndComplex>(a, b, compute, compute, "mul", [](auto tag) {
        using T = opmath_t<typename decltype(tag)::type>;
        return [](T x, T y) -> T {
            if constexpr (std::is_same_v<T, bool>) return x && y;
            else return x * y;
        };
    }, std::move(out));
}

void check_int_div_by_zero(const Tensor& b) {
    if (is_integral(b.scalar_type(), true)) {
        NoGradGuard g;
        EMBER_CHECK(!(b == 0).any().item<bool>(), "ZeroDivisionError");
    }
}

template <typename T>
T floor_div_float(T a, T b) {
    if (b == T(0)) return a / b;
    const T mod = std::fmod(a, b);
    T div = (a - mod) / b;
    if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div -= T(1);
    T floordiv;
    if (div != T(0)) {
        floordiv = std::floor(div);
        if (div - floordiv > T(0.5)) floordiv += T(1);
    } else {
        floordiv = std::copysign(T(0), a / b);
    }
    return floordiv;
}

// mode 0: true division, 1: trunc, 2: floor
Tensor div_kernel(const Tensor& a, const Tensor& b, int mode, ScalarType compute, Tensor out = {}) {
    if (mode == 0) {
        return run_binary<Kinds::FloatingAndComplex>(a, b, compute, compute, "div_true", [](auto tag) {
            using T = opmath_t<typename decltype(tag)::type>;
            return [](T x, T y) -> T { return x / y; };
        }, std::move(out));
    }
    EMBER_CHECK(compute != kBool, "\"", mode == 1 ? "div_trunc_cpu" : "div_floor_cpu", "\" not implemented for 'Bool'");
    if (is_integral(compute, false)) check_int_div_by_zero(b);
    return run_binary<Kinds::Numeric>(a, b, compute, compute, mode == 1 ? "div_trunc_cpu" : "div_floor_cpu", [mode](auto tag) {
        using T = opmath_t<typename decltype(tag)::type>;
        return [mode](T x, T y) -> T {
            if constexpr (is_float_like<T>) {
                return mode == 1 ? std::trunc(x / y) : floor_div_float(x, y);
            } else {
                T q = static_cast<T>(x / y);
                if (mode == 2 && (x % y != 0) && ((x < 0) != (y < 0))) q = static_cast<T>(q - 1);
                return q;
            }
        };
    }, std::move(out));
}

Tensor remainder_kernel(const Tensor& a, const Tensor& b, ScalarType compute, bool python_mod) {
    if (is_integral(compute, false)) check_int_div_by_zero(b);
    return run_binary<Kinds::Numeric>(a, b, compute, compute, python_mod ? "remainder" : "fmod", [python_mod](auto tag) {
        using T = opmath_t<typename decltype(tag)::type>;
        return [python_mod](T x, T y) -> T {
            if constexpr (is_float_like<T>) {
                T r = std::fmod(x, y);
                if (python_mod && r != T(0) && ((y < T(0)) != (r < T(0)))) r += y;
                return r;
            } else {
                T r = static_cast<T>(x % y);
                if constexpr (std::is_signed_v<T>) {
                    if (python_mod && r != 0 && ((r < 0) != (y < 0))) r = static_cast<T>(r + y);
                }
                return r;
            }
        };
    });
}

template <typename T>
T int_pow(T base, T exp) {
    T result = 1;
    while (exp) {
        if (exp & 1) result = static_cast<T>(result * base);
        exp = static_cast<T>(exp >> 1);
        base = static_cast<T>(base * base);
    }
    return result;
}

Tensor pow_kernel(const Tensor& a, const Tensor& b, ScalarType compute, Tensor out = {}) {
    if (is_integral(compute, false)) {
        NoGradGuard g;
        EMBER_CHECK(!(is_integral(b.scalar_type(), false) && (b < 0).any().item<bool>()),
                    "Integers to negative integer powers are not allowed.");
    }
    return run_binary<Kinds::NumericAndComplex>(a, b, compute, compute, "pow", [](auto tag) {
        using T = opmath_t<typename decltype(tag)::type>;
        return [](T x, T y) -> T {
            if constexpr (is_complex_v<T>) {  // PyTorch: z * z for the exponent 2, else std::pow
                if (y == T(2)) return x * x;
                if (y == T(1)) return x;
                return std::pow(x, y);
            } else if constexpr (is_float_like<T>) {
                if (y == T(2)) return x * x;
                if (y == T(1)) return x;
                return std::pow(x, y);
            } else {
                return int_pow<T>(x, y);
            }
        };
    }, std::move(out));
}

// K: All for the orderings (a complex operand gets PyTorch's '"lt_cpu" not implemented for
// 'ComplexFloat''), AllAndComplex for eq and ne
template <Kinds K, typename Op>
Tensor compare_with(const Tensor& a, const Tensor& b, const char* name, Op op) {
    const ScalarType compute = result_type(a, b);
    return run_binary<K>(a, b, compute, kBool, name, [op](auto tag) {
        using T = opmath_t<typename decltype(tag)::type>;
        return [op](T x, T y) -> bool { return op(x, y); };
    });
}

// the op is chosen outside the element loop so that the loop vectorises
Tensor compare_kernel(const Tensor& a, const Tensor& b, int op, const char* name) {
    switch (op) {
        case 0: return compare_with<Kinds::AllAndComplex>(a, b, name, [](auto x, auto y) { return x == y; });
        case 1: return compare_with<Kinds::AllAndComplex>(a, b, name, [](auto x, auto y) { return x != y; });
        case 2: return compare_with<Kinds::All>(a, b, name, [](auto x, auto y) { return x < y; });
        case 3: return compare_with<Kinds::All>(a, b, name, [](auto x, auto y) { return x <= y; });
        case 4: return compare_with<Kinds::All>(a, b, name, [](auto x, auto y) { return x > y; });
        default: return compare_with<Kinds::All>(a, b, name, [](auto x, auto y) { return x >= y; });
    }
}

Tensor logical_kernel(const Tensor& a, const Tensor& b, int op, const char* /*name*/) {
    Tensor ba = cast(a, kBool), bb = cast(b, kBool);
    auto run = [&](auto f) {
        return run_binary<Kinds::All>(ba, bb, kBool, kBool, "logical", [f](auto) { return f; });
    };
    if (op == 0) return run([](bool x, bool y) -> bool { return x && y; });
    if (op == 1) return run([](bool x, bool y) -> bool { return x || y; });
    return run([](bool x, bool y) -> bool { return x != y; });
}

Tensor bitwise_kernel(const Tensor& a, const Tensor& b, int op, const char* name) {
    const ScalarType compute = result_type(a, b);
    return run_binary<Kinds::Integral>(a, b, compute, compute, name, [op](auto tag) {
        using T = opmath_t<typename decltype(tag)::type>;
        return [op](T x, T y) -> T {
            if constexpr (std::is_same_v<T, bool>) {
                return op == 0 ? (x && y) : op == 1 ? (x || y) : (x != y);
            } else {
                return static_cast<T>(op == 0 ? (x & y) : op == 1 ? (x | y) : (x ^ y));
            }
        };
    });
}

template <bool kMax>
Tensor max_min_impl(const Tensor& a, const Tensor& b) {
    const ScalarType compute = result_type(a, b);
    return run_binary<Kinds::All>(a, b, compute, compute, kMax ? "maximum" : "minimum", [](auto tag) {
        using T = opmath_t<typename decltype(tag)::type>;
        return [](T x, T y) -> T {
            if constexpr (is_float_like<T>) {
                if (x != x) return x;
                if (y != y) return y;
            }
            if constexpr (kMax) return x > y ? x : y;
            else return x < y ? x : y;
        };
    });
}

Tensor max_min_kernel(const Tensor& a, const Tensor& b, bool is_max) {
    return is_max ? max_min_impl<true>(a, b) : max_min_impl<false>(a, b);
}

// ternary: where(cond, a, b) with a, b of dtype T
Tensor where_kernel(const Tensor& cond, const Tensor& a, const Tensor& b, ScalarType compute, Tensor out = {}) {
    Tensor ca = cast(a, compute), cb = cast(b, compute);
    TensorIter iter = TensorIter::elementwise(out, compute, {cond, ca, cb});
    dispatch_all_and_complex(compute, "where_cpu", [&](auto tag) {
        using T = typename decltype(tag)::type;
        iter.for_each([](char** d, const int64_t* s, int64_t n) {
            constexpr int64_t es = static_cast<int64_t>(sizeof(T));
            // (complex128's 16 bytes take the plain loop)
            if (es <= 8 && s[0] == es && s[1] == 1 && (s[2] == es || s[2] == 0) && (s[3] == es || s[3] == 0)) {
                // contiguous output and condition; each value contiguous or broadcast
                // a bitwise select on same-size unsigned integers (vectorises; exact for any value)
                using U = std::conditional_t<sizeof(T) == 1, uint8_t,
                          std::conditional_t<sizeof(T) == 2, uint16_t,
                          std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
                U* __restrict__ o = reinterpret_cast<U*>(d[0]);
                const uint8_t* __restrict__ c = reinterpret_cast<const uint8_t*>(d[1]);
                const U* a = reinterpret_cast<const U*>(d[2]);
                const U* b = reinterpret_cast<const U*>(d[3]);
                auto sel = [](uint8_t cond, U x, U y) {
                    const U m = static_cast<U>(U(0) - static_cast<U>(cond));
                    return static_cast<U>((x & m) | (y & static_cast<U>(~m)));
                };
                if (s[2] && s[3]) {
                    for (int64_t i = 0; i < n; ++i) o[i] = sel(c[i], a[i], b[i]);
                } else if (s[3]) {
                    const U av = *a;
                    for (int64_t i = 0; i < n; ++i) o[i] = sel(c[i], av, b[i]);
                } else if (s[2]) {
                    const U bv = *b;
                    for (int64_t i = 0; i < n; ++i) o[i] = sel(c[i], a[i], bv);
                } else {
                    const U av = *a, bv = *b;
                    for (int64_t i = 0; i < n; ++i) o[i] = sel(c[i], av, bv);
                }
                return;
            }
            for (int64_t i = 0; i < n; ++i) {
                const bool c = *reinterpret_cast<const bool*>(d[1] + i * s[1]);
                *reinterpret_cast<T*>(d[0] + i * s[0]) = *reinterpret_cast<const T*>(d[c ? 2 : 3] + i * s[c ? 2 : 3]);
            }
        });
    });
    return iter.output();
}

template <typename F>
void record_binary(const Tensor& out, const char* name, const Tensor& a, const Tensor& b, F&& setup) {
    if (auto n = make_node(name, {a, b})) {
        set_history(out, n, 0);
        setup(*n);
    }
}

}  // namespace

// ---- arithmetic --------------------------------------------------------------------------------------
Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha) {
    const ScalarType ct = result_type(self, other);
    check_alpha(ct, alpha);
    check_complex_autograd(ct, "add", self, other);
    Tensor out = add_kernel(self, other, alpha, ct);
    record_binary(out, "AddBackward0", self, other, [&](FunctionNode& n) {
        const auto sa = self.sizes().vec(), sb = other.sizes().vec();
        const bool unit = !alpha.isFloatingPoint() && alpha.toLong() == 1;
        const double al = alpha.toDouble();
        n.set_formula([sa, sb, unit, al](FunctionNode& node, variable_list&& g) -> variable_list {
            Tensor ga = node.needs(0) ? reduce_grad(g[0], sa) : Tensor();
            Tensor gb = node.needs(1) ? reduce_grad(unit ? g[0] : g[0] * al, sb) : Tensor();
            return {ga, gb};
        });
    });
    return out;
}

Tensor add(const Tensor& self, const Scalar& other, const Scalar& alpha) {
    const ScalarType ct = result_type(self, other);
    check_alpha(ct, alpha);
    Tensor out = add_kernel(self, wrap(other, ct), alpha, ct);
    if (auto n = make_node("AddBackward0", {self})) {
        set_history(out, n, 0);
        n->set_formula([](FunctionNode&, variable_list&& g) -> variable_list { return {g[0]}; });
    }
    return out;
}

Tensor sub(const Tensor& self, const Tensor& other, const Scalar& alpha) {
    check_sub(self.scalar_type(), other.scalar_type());
    const ScalarType ct = result_type(self, other);
    check_alpha(ct, alpha);
    check_complex_autograd(ct, "sub", self, other);
    Tensor out = add_kernel(self, other, -alpha, ct);
    record_binary(out, "SubBackward0", self, other, [&](FunctionNode& n) {
        const auto sa = self.sizes().vec(), sb = other.sizes().vec();
        const double al = alpha.toDouble();
        n.set_formula([sa, sb, al](FunctionNode& node, variable_list&& g) -> variable_list {
            Tensor ga = node.needs(0) ? reduce_grad(g[0], sa) : Tensor();
            Tensor gb = node.needs(1) ? reduce_grad(al == 1 ? -g[0] : g[0] * -al, sb) : Tensor();
            return {ga, gb};
        });
    });
    return out;
}

Tensor sub(const Tensor& self, const Scalar& other, const Scalar& alpha) {
    check_sub(self.scalar_type(), other.isBoolean() ? kBool : kLong);
    const ScalarType ct = result_type(self, other);
    check_alpha(ct, alpha);
    Tensor out = add_kernel(self, wrap(other, ct), -alpha, ct);
    if (auto n = make_node("SubBackward0", {self})) {
        set_history(out, n, 0);
        n->set_formula([](FunctionNode&, variable_list&& g) -> variable_list { return {g[0]}; });
    }
    return out;
}

Tensor rsub(const Tensor& self, const Tensor& other, const Scalar& alpha) { return sub(other, self, alpha); }

Tensor rsub(const Tensor& self, const Scalar& other, const Scalar& alpha) {
    check_sub(self.scalar_type(), other.isBoolean() ? kBool : kLong);
    const ScalarType ct = result_type(self, other);
    check_alpha(ct, alpha);
    Tensor out = add_kernel(wrap(other, ct), self, -alpha, ct);
    if (auto n = make_node("RsubBackward1", {self})) {
        set_history(out, n, 0);
        const double al = alpha.toDouble();
        n->set_formula([al](FunctionNode&, variable_list&& g) -> variable_list { return {g[0] * -al}; });
    }
    return out;
}

Tensor mul(const Tensor& self, const Tensor& other) {
    const ScalarType ct = result_type(self, other);
    check_complex_autograd(ct, "mul", self, other);
    Tensor out = mul_kernel(self, other, ct);
    record_binary(out, "MulBackward0", self, other, [&](FunctionNode& n) {
        const auto sa = self.sizes().vec(), sb = other.sizes().vec();
        n.save(n.needs(1) ? self : Tensor());
        n.save(n.needs(0) ? other : Tensor());
        n.set_formula([sa, sb](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor(), Tensor()};
            Tensor ga = node.needs(0) ? reduce_grad(g[0] * node.saved(1), sa) : Tensor();
            Tensor gb = node.needs(1) ? reduce_grad(g[0] * node.saved(0), sb) : Tensor();
            return {ga, gb};
        });
    });
    return out;
}

Tensor mul(const Tensor& self, const Scalar& other) {
    const ScalarType ct = result_type(self, other);
    Tensor out = mul_kernel(self, wrap(other, ct), ct);
    if (auto n = make_node("MulBackward0", {self})) {
        set_history(out, n, 0);
        n->set_formula([other](FunctionNode&, variable_list&& g) -> variable_list { return {g[0] * other}; });
    }
    return out;
}

static int rounding(std::optional<std::string_view> mode) {
    if (!mode) return 0;
    if (*mode == "trunc") return 1;
    if (*mode == "floor") return 2;
    EMBER_ERROR("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", *mode, "'");
}

// The dtype div computes in (true division of integers: the default dtype).
static ScalarType div_type(ScalarType result, int mode) {
    return mode == 0 && is_integral(result, true) ? get_default_dtype() : result;
}

Tensor div(const Tensor& self, const Tensor& other, std::optional<std::string_view> rounding_mode) {
    const int mode = rounding(rounding_mode);
    const ScalarType ct = div_type(result_type(self, other), mode);
    check_complex_autograd(ct, "div", self, other);
    Tensor out = div_kernel(self, other, mode, ct);
    if (mode != 0) {
        record_binary(out, "DivBackward2", self, other, [&](FunctionNode& n) {
            n.set_formula([](FunctionNode&, variable_list&& g) -> variable_list {
                return {zeros_like(g[0]), zeros_like(g[0])};
            });
        });
        return out;
    }
    record_binary(out, "DivBackward0", self, other, [&](FunctionNode& n) {
        const auto sa = self.sizes().vec(), sb = other.sizes().vec();
        n.save(n.needs(1) ? self : Tensor());
        n.save(other);
        n.set_formula([sa, sb](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor(), Tensor()};
            const Tensor b = node.saved(1);
            Tensor ga = node.needs(0) ? reduce_grad(g[0] / b, sa) : Tensor();
            Tensor gb = node.needs(1) ? reduce_grad(-g[0] * node.saved(0) / (b * b), sb) : Tensor();
            return {ga, gb};
        });
    });
    return out;
}

Tensor div(const Tensor& self, const Scalar& other, std::optional<std::string_view> rounding_mode) {
    const int mode = rounding(rounding_mode);
    const ScalarType ct = div_type(result_type(self, other), mode);
    if (mode != 0 && is_integral(ct, false)) {
        EMBER_CHECK(!(other.isIntegral(true) && other.toLong() == 0), "ZeroDivisionError");
    }
    Tensor out = div_kernel(self, wrap(other, ct), mode, ct);
    if (auto n = make_node(mode == 0 ? "DivBackward0" : "DivBackward2", {self})) {
        set_history(out, n, 0);
        n->set_formula([other, mode](FunctionNode&, variable_list&& g) -> variable_list {
            if (mode != 0) return {zeros_like(g[0])};
            return {g[0] / other};
        });
    }
    return out;
}

Tensor floor_divide(const Tensor& self, const Tensor& other) { return div(self, other, "floor"); }
Tensor floor_divide(const Tensor& self, const Scalar& other) { return div(self, other, "floor"); }

// remainder (python_mod: the sign of the divisor, Python's %) and fmod (the sign of the dividend)
static Tensor remainder_fmod(const Tensor& self, const Tensor& other, bool python_mod) {
    const ScalarType ct = result_type(self, other);
    Tensor out = remainder_kernel(self, other, ct, python_mod);
    record_binary(out, python_mod ? "RemainderBackward1" : "FmodBackward1", self, other, [&](FunctionNode& n) {
        const auto sb = other.sizes().vec();
        n.save(n.needs(1) ? self : Tensor());
        n.save(n.needs(1) ? other : Tensor());
        n.set_formula([sb, python_mod](FunctionNode& node, variable_list&& g) -> variable_list {
            Tensor gb;
            if (node.needs(1)) gb = reduce_grad(-g[0] * div(node.saved(0), node.saved(1), python_mod ? "floor" : "trunc"), sb);
            return {node.needs(0) ? g[0] : Tensor(), gb};
        });
    });
    return out;
}

static Tensor remainder_fmod(const Tensor& self, const Scalar& other, bool python_mod) {
    const ScalarType ct = result_type(self, other);
    if (is_integral(ct, false)) EMBER_CHECK(!(other.isIntegral(true) && other.toLong() == 0), "ZeroDivisionError");
    Tensor out = remainder_kernel(self, wrap(other, ct), ct, python_mod);
    record_unary(out, self, python_mod ? "RemainderBackward0" : "FmodBackward0", [](const Tensor& g) { return g; });
    return out;
}

Tensor remainder(const Tensor& self, const Tensor& other) { return remainder_fmod(self, other, true); }
Tensor remainder(const Tensor& self, const Scalar& other) { return remainder_fmod(self, other, true); }

Tensor remainder(const Scalar& self, const Tensor& other) {
    const ScalarType ct = result_type(self, other);
    return remainder(wrap(self, ct), other);
}

Tensor fmod(const Tensor& self, const Tensor& other) { return remainder_fmod(self, other, false); }
Tensor fmod(const Tensor& self, const Scalar& other) { return remainder_fmod(self, other, false); }

// ---- pow -------------------------------------------------------------------------------------------
Tensor pow(const Tensor& self, const Tensor& exponent) {
    const ScalarType ct = result_type(self, exponent);
    check_complex_autograd(ct, "pow", self, exponent);
    Tensor out = pow_kernel(self, exponent, ct);
    record_binary(out, "PowBackward1", self, exponent, [&](FunctionNode& n) {
        const auto sa = self.sizes().vec(), sb = exponent.sizes().vec();
        n.save(self);
        n.save(exponent);
        if (n.needs(1)) n.save(out, true);
        n.set_formula([sa, sb](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor(), Tensor()};
            const Tensor x = node.saved(0), e = node.saved(1);
            Tensor ga, gb;
            if (node.needs(0)) {
                ga = reduce_grad(where(e == 0, zeros_like(g[0]), g[0] * e * x.pow(e - 1)), sa);
            }
            if (node.needs(1)) {
                const Tensor r = node.saved(2);
                gb = reduce_grad(where((x == 0) & (e >= 0), zeros_like(g[0]), g[0] * r * x.log()), sb);
            }
            return {ga, gb};
        });
    });
    return out;
}

Tensor pow(const Tensor& self, const Scalar& exponent) {
    ScalarType ct = result_type(self, exponent);
    if (self.scalar_type() == kBool && !exponent.isFloatingPoint()) ct = kLong;
    check_complex_autograd(ct, "pow", self, Tensor());
    if (is_integral(ct, false) && exponent.isIntegral(false)) {
        EMBER_CHECK(exponent.toLong() >= 0, "Integers to negative integer powers are not allowed.");
    }
    Tensor out = pow_kernel(self, wrap(exponent, ct), ct);
    if (auto n = make_node("PowBackward0", {self})) {
        set_history(out, n, 0);
        n->save(self);
        n->set_formula([exponent](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            const double e = exponent.toDouble();
            if (e == 0.0) return {zeros_like(g[0])};
            const Tensor x = node.saved(0);
            if (e == 1.0) return {g[0]};
            if (e == 2.0) return {g[0] * 2 * x};
            return {g[0] * (e * x.pow(e - 1))};
        });
    }
    return out;
}

Tensor pow(const Scalar& self, const Tensor& exponent) {
    const ScalarType ct = result_type(self, exponent);
    check_complex_autograd(ct, "pow", Tensor(), exponent);
    Tensor out = pow_kernel(wrap(self, ct), exponent, ct);
    if (auto n = make_node("PowBackward2", {exponent})) {
        set_history(out, n, 0);
        n->save(out, true);
        const double lb = std::log(self.toDouble());
        const bool base_zero = self.toDouble() == 0.0;
        n->save(base_zero ? exponent : Tensor());
        n->set_formula([lb, base_zero](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            if (base_zero) {
                const Tensor e = node.saved(1);
                return {where(e >= 0, zeros_like(g[0]), g[0] * node.saved(0) * lb)};
            }
            return {g[0] * node.saved(0) * lb};
        });
    }
    return out;
}

// ---- maximum / minimum / lerp / clamp --------------------------------------------------------------
static Tensor max_min(const Tensor& self, const Tensor& other, bool is_max) {
    Tensor out = max_min_kernel(self, other, is_max);
    record_binary(out, is_max ? "MaximumBackward0" : "MinimumBackward0", self, other, [&](FunctionNode& n) {
        const auto sa = self.sizes().vec(), sb = other.sizes().vec();
        n.save(self);
        n.save(other);
        n.set_formula([sa, sb, is_max](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor(), Tensor()};
            const Tensor a = node.saved(0), b = node.saved(1);
            const Tensor half = g[0] / 2;
            const Tensor z = zeros_like(g[0]);
            const Tensor a_wins = is_max ? a > b : a < b;
            const Tensor eq = a == b;
            Tensor ga = node.needs(0) ? reduce_grad(where(eq, half, where(a_wins, g[0], z)), sa) : Tensor();
            Tensor gb = node.needs(1) ? reduce_grad(where(eq, half, where(a_wins, z, g[0])), sb) : Tensor();
            return {ga, gb};
        });
    });
    return out;
}
Tensor maximum(const Tensor& self, const Tensor& other) { return max_min(self, other, true); }
Tensor minimum(const Tensor& self, const Tensor& other) { return max_min(self, other, false); }

Tensor lerp(const Tensor& self, const Tensor& end, const Scalar& weight) {
    EMBER_CHECK(self.scalar_type() == end.scalar_type(), "expected dtype ", self.scalar_type(),
                " for `end` but got dtype ", end.scalar_type());
    EMBER_CHECK(self.is_floating_point(), "\"lerp_kernel_scalar\" not implemented for '", self.scalar_type(), "'");
    const ScalarType ct = self.scalar_type();
    Tensor out = run_binary<Kinds::Floating>(self, end, ct, ct, "lerp_kernel_scalar", [&](auto tag) {
        using T = opmath_t<typename decltype(tag)::type>;
        const T w = weight.to<T>();
        return [w](T a, T b) -> T { return std::abs(w) < T(0.5) ? a + w * (b - a) : b - (b - a) * (T(1) - w); };
    });
    record_binary(out, "LerpBackward0", self, end, [&](FunctionNode& n) {
        const auto sa = self.sizes().vec(), sb = end.sizes().vec();
        const double w = weight.toDouble();
        n.set_formula([sa, sb, w](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor(), Tensor()};
            Tensor ga = node.needs(0) ? reduce_grad(g[0] * (1 - w), sa) : Tensor();
            Tensor gb = node.needs(1) ? reduce_grad(g[0] * w, sb) : Tensor();
            return {ga, gb};
        });
    });
    return out;
}

Tensor lerp(const Tensor& self, const Tensor& end, const Tensor& weight) {
    EMBER_CHECK(self.scalar_type() == end.scalar_type(), "expected dtype ", self.scalar_type(),
                " for `end` but got dtype ", end.scalar_type());
    EMBER_CHECK(self.scalar_type() == weight.scalar_type(), "expected dtype ", self.scalar_type(),
                " for `weight` but got dtype ", weight.scalar_type());
    Tensor out;
    {
        NoGradGuard guard;
        out = self + weight * (end - self);
    }
    if (auto n = make_node("LerpBackward1", {self, end, weight})) {
        set_history(out, n, 0);
        const auto sa = self.sizes().vec(), sb = end.sizes().vec(), sw = weight.sizes().vec();
        n->save(weight);
        n->save(n->needs(2) ? self : Tensor());
        n->save(n->needs(2) ? end : Tensor());
        n->set_formula([sa, sb, sw](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor(), Tensor(), Tensor()};
            const Tensor w = node.saved(0);
            Tensor ga = node.needs(0) ? reduce_grad(g[0] * (1 - w), sa) : Tensor();
            Tensor gb = node.needs(1) ? reduce_grad(g[0] * w, sb) : Tensor();
            Tensor gw = node.needs(2) ? reduce_grad(g[0] * (node.saved(2) - node.saved(1)), sw) : Tensor();
            return {ga, gb, gw};
        });
    }
    return out;
}

Tensor clamp(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
    EMBER_CHECK(min || max, "torch.clamp: At least one of 'min' or 'max' must not be None");
    ScalarType ct = self.scalar_type();
    if (min) ct = promote_with_scalar(ct, *min);
    if (max) ct = promote_with_scalar(ct, *max);
    EMBER_CHECK(ct != kBool, "\"clamp_cpu\" not implemented for 'Bool'");
    Tensor in = cast(self, ct);
    Tensor out;
    TensorIter iter = TensorIter::elementwise(out, ct, {in});
    dispatch_numeric(ct, "clamp_cpu", [&](auto tag) {
        using T = typename decltype(tag)::type;
        using O = opmath_t<T>;
        const bool has_lo = min.has_value(), has_hi = max.has_value();
        const O lo = has_lo ? min->to<O>() : O(0), hi = has_hi ? max->to<O>() : O(0);
        unary_kernel<T, T>(iter, [=](O x) -> O {
            if constexpr (is_float_like<O>) {
                if (x != x) return x;
            }
            if (has_lo && x < lo) x = lo;
            if (has_hi && x > hi) x = hi;
            return x;
        });
    });
    if (auto n = make_node("ClampBackward1", {self})) {
        set_history(out, n, 0);
        n->save(self);
        n->set_formula([min, max](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            const Tensor x = node.saved(0);
            Tensor mask;
            if (min && max) mask = (x >= *min).logical_and(x <= *max);
            else if (min) mask = x >= *min;
            else mask = x <= *max;
            return {where(mask, g[0], zeros_like(g[0]))};
        });
    }
    return out;
}

Tensor clamp(const Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
    const bool has_lo = min && min->defined(), has_hi = max && max->defined();
    EMBER_CHECK(has_lo || has_hi, "torch.clamp: At least one of 'min' or 'max' must not be None");
    Tensor out;
    {
        NoGradGuard guard;
        out = self;
        if (has_lo) out = maximum(out, *min);
        if (has_hi) out = minimum(out, *max);
        // NaN in self propagates through maximum/minimum already
    }
    std::vector<Tensor> inputs{self, has_lo ? *min : Tensor(), has_hi ? *max : Tensor()};
    if (auto n = make_node("ClampBackward0", inputs)) {
        set_history(out, n, 0);
        n->save(self);
        n->save(has_lo ? *min : Tensor());
        n->save(has_hi ? *max : Tensor());
        const auto s0 = self.sizes().vec();
        const auto s1 = has_lo ? min->sizes().vec() : std::vector<int64_t>{};
        const auto s2 = has_hi ? max->sizes().vec() : std::vector<int64_t>{};
        n->set_formula([s0, s1, s2](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor(), Tensor(), Tensor()};
            const Tensor x = node.saved(0), lo = node.saved(1), hi = node.saved(2);
            const Tensor z = zeros_like(g[0]);
            Tensor in_range = ones_like(g[0], kBool);
            if (lo.defined()) in_range = in_range.logical_and(x >= lo);
            if (hi.defined()) in_range = in_range.logical_and(x <= hi);
            Tensor g0 = node.needs(0) ? reduce_grad(where(in_range, g[0], z), s0) : Tensor();
            Tensor g1 = lo.defined() && node.needs(1) ? reduce_grad(where(x < lo, g[0], z), s1) : Tensor();
            Tensor g2;
            if (hi.defined() && node.needs(2)) {
                Tensor above = x > hi;
                if (lo.defined()) above = above.logical_and(x >= lo);
                g2 = reduce_grad(where(above, g[0], z), s2);
            }
            return {g0, g1, g2};
        });
    }
    return out;
}

Tensor clamp_min(const Tensor& self, const Scalar& min) {
    Tensor out;
    {
        NoGradGuard guard;
        out = clamp(self, std::optional<Scalar>(min), std::nullopt);
    }
    if (auto n = make_node("ClampMinBackward0", {self})) {
        set_history(out, n, 0);
        n->save(self);
        n->set_formula([min](FunctionNode& node, variable_list&& g) -> variable_list {
            return {where(node.saved(0) >= min, g[0], zeros_like(g[0]))};
        });
    }
    return out;
}

Tensor clamp_max(const Tensor& self, const Scalar& max) {
    Tensor out;
    {
        NoGradGuard guard;
        out = clamp(self, std::nullopt, std::optional<Scalar>(max));
    }
    if (auto n = make_node("ClampMaxBackward0", {self})) {
        set_history(out, n, 0);
        n->save(self);
        n->set_formula([max](FunctionNode& node, variable_list&& g) -> variable_list {
            return {where(node.saved(0) <= max, g[0], zeros_like(g[0]))};
        });
    }
    return out;
}

// ---- where / masked_fill -----------------------------------------------------------------------------
static void check_where_cond(const Tensor& c) {
    EMBER_CHECK(c.scalar_type() == kBool, "where expected condition to be a boolean tensor, but got a tensor with dtype ",
                c.scalar_type());
}

Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other) {
    check_where_cond(condition);
    const ScalarType ct = result_type(self, other);
    check_complex_autograd(ct, "where", self, other);
    Tensor out = where_kernel(condition, self, other, ct);
    record_binary(out, "WhereBackward0", self, other, [&](FunctionNode& n) {
        const auto sa = self.sizes().vec(), sb = other.sizes().vec();
        n.save(condition);
        n.set_formula([sa, sb](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor(), Tensor()};
            const Tensor c = node.saved(0);
            const Tensor z = zeros_like(g[0]);
            Tensor ga = node.needs(0) ? reduce_grad(where(c, g[0], z), sa) : Tensor();
            Tensor gb = node.needs(1) ? reduce_grad(where(c, z, g[0]), sb) : Tensor();
            return {ga, gb};
        });
    });
    return out;
}

Tensor where(const Tensor& condition, const Tensor& self, const Scalar& other) {
    return where(condition, self, scalar_to_tensor(other, result_type(self, other)));
}
Tensor where(const Tensor& condition, const Scalar& self, const Tensor& other) {
    return where(condition, scalar_to_tensor(self, result_type(other, self)), other);
}
Tensor where(const Tensor& condition, const Scalar& self, const Scalar& other) {
    const ScalarType ct = result_type(self, other);
    return where(condition, scalar_to_tensor(self, ct), scalar_to_tensor(other, ct));
}

static void check_mask(const Tensor& mask) {
    EMBER_CHECK(mask.scalar_type() == kBool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
                dtype_name(mask.scalar_type()));
}

Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value) {
    check_mask(mask);
    Tensor out = where_kernel(mask, scalar_to_tensor(value, self.scalar_type()), self, self.scalar_type());
    if (auto n = make_node("MaskedFillBackward0", {self})) {
        set_history(out, n, 0);
        n->save(mask);
        const auto sa = self.sizes().vec();
        n->set_formula([sa](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            return {reduce_grad(g[0].masked_fill(node.saved(0), 0), sa)};
        });
    }
    return out;
}

Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value) {
    check_mask(mask);
    EMBER_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
                value.dim(), " dimension(s).");
    Tensor out = where_kernel(mask, value, self, self.scalar_type());
    if (auto n = make_node("MaskedFillBackward1", {self, value})) {
        set_history(out, n, 0);
        n->save(mask);
        const auto sa = self.sizes().vec();
        n->set_formula([sa](FunctionNode& node, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor(), Tensor()};
            const Tensor m = node.saved(0);
            Tensor ga = node.needs(0) ? reduce_grad(g[0].masked_fill(m, 0), sa) : Tensor();
            Tensor gv = node.needs(1) ? where(m, g[0], zeros_like(g[0])).sum() : Tensor();
            return {ga, gv};
        });
    }
    return out;
}

// ---- comparisons / logical / bitwise -----------------------------------------------------------------
// fn(Tensor, Tensor), fn(Tensor, Scalar) and their methods for an op without a gradient:
// kernel(self, other, op, "<fn>_cpu"), a Scalar other as a 0-dim tensor of dtype scalar_dtype.
#define EMBER_NOGRAD_BINARY_(fn, kernel, op, scalar_dtype)                                              \
    Tensor fn(const Tensor& self, const Tensor& other) { return kernel(self, other, op, #fn "_cpu"); } \
    Tensor fn(const Tensor& self, const Scalar& other) {                                                \
        return kernel(self, scalar_to_tensor(other, scalar_dtype), op, #fn "_cpu");                     \
    }                                                                                                   \
    Tensor Tensor::fn(const Tensor& other) const { return ember::fn(*this, other); }                   \
    Tensor Tensor::fn(const Scalar& other) const { return ember::fn(*this, other); }
EMBER_NOGRAD_BINARY_(eq, compare_kernel, 0, result_type(self, other))
EMBER_NOGRAD_BINARY_(ne, compare_kernel, 1, result_type(self, other))
EMBER_NOGRAD_BINARY_(lt, compare_kernel, 2, result_type(self, other))
EMBER_NOGRAD_BINARY_(le, compare_kernel, 3, result_type(self, other))
EMBER_NOGRAD_BINARY_(gt, compare_kernel, 4, result_type(self, other))
EMBER_NOGRAD_BINARY_(ge, compare_kernel, 5, result_type(self, other))
EMBER_NOGRAD_BINARY_(logical_and, logical_kernel, 0, kBool)
EMBER_NOGRAD_BINARY_(logical_or, logical_kernel, 1, kBool)
EMBER_NOGRAD_BINARY_(logical_xor, logical_kernel, 2, kBool)
EMBER_NOGRAD_BINARY_(bitwise_and, bitwise_kernel, 0, result_type(self, other))
EMBER_NOGRAD_BINARY_(bitwise_or, bitwise_kernel, 1, result_type(self, other))
EMBER_NOGRAD_BINARY_(bitwise_xor, bitwise_kernel, 2, result_type(self, other))
#undef EMBER_NOGRAD_BINARY_

bool equal(const Tensor& self, const Tensor& other) {
    if (!(self.sizes() == other.sizes())) return false;
    NoGradGuard g;
    return eq(self, other).all().item<bool>();
}

Tensor isclose(const Tensor& self, const Tensor& other, double rtol, double atol, bool equal_nan) {
    NoGradGuard g;
    const ScalarType ct = promote_types(result_type(self, other), get_default_dtype());
    const Tensor a = cast(self, ct), b = cast(other, ct);
    Tensor close = (a == b).logical_or((a - b).abs() <= atol + rtol * b.abs());
    if (equal_nan) close = close.logical_or(a.isnan().logical_and(b.isnan()));
    return close;
}

bool allclose(const Tensor& self, const Tensor& other, double rtol, double atol, bool equal_nan) {
    return isclose(self, other, rtol, atol, equal_nan).all().item<bool>();
}

// ---- Tensor methods ----------------------------------------------------------------------------------
Tensor Tensor::add(const Tensor& other, const Scalar& alpha) const { return ember::add(*this, other, alpha); }
Tensor Tensor::add(const Scalar& other, const Scalar& alpha) const { return ember::add(*this, other, alpha); }
Tensor Tensor::sub(const Tensor& other, const Scalar& alpha) const { return ember::sub(*this, other, alpha); }
Tensor Tensor::sub(const Scalar& other, const Scalar& alpha) const { return ember::sub(*this, other, alpha); }
Tensor Tensor::mul(const Tensor& other) const { return ember::mul(*this, other); }
Tensor Tensor::mul(const Scalar& other) const { return ember::mul(*this, other); }
Tensor Tensor::div(const Tensor& other, std::optional<std::string_view> m) const { return ember::div(*this, other, m); }
Tensor Tensor::div(const Scalar& other, std::optional<std::string_view> m) const { return ember::div(*this, other, m); }
Tensor Tensor::remainder(const Tensor& other) const { return ember::remainder(*this, other); }
Tensor Tensor::remainder(const Scalar& other) const { return ember::remainder(*this, other); }
Tensor Tensor::fmod(const Tensor& other) const { return ember::fmod(*this, other); }
Tensor Tensor::fmod(const Scalar& other) const { return ember::fmod(*this, other); }
Tensor Tensor::pow(const Tensor& e) const { return ember::pow(*this, e); }
Tensor Tensor::pow(const Scalar& e) const { return ember::pow(*this, e); }
Tensor Tensor::maximum(const Tensor& other) const { return ember::maximum(*this, other); }
Tensor Tensor::minimum(const Tensor& other) const { return ember::minimum(*this, other); }
Tensor Tensor::lerp(const Tensor& end, const Scalar& w) const { return ember::lerp(*this, end, w); }
Tensor Tensor::lerp(const Tensor& end, const Tensor& w) const { return ember::lerp(*this, end, w); }
Tensor Tensor::clamp(const std::optional<Scalar>& min, const std::optional<Scalar>& max) const {
    return ember::clamp(*this, min, max);
}
Tensor Tensor::clamp(const std::optional<Tensor>& min, const std::optional<Tensor>& max) const {
    return ember::clamp(*this, min, max);
}
Tensor Tensor::clamp_min(const Scalar& min) const { return ember::clamp_min(*this, min); }
Tensor Tensor::clamp_max(const Scalar& max) const { return ember::clamp_max(*this, max); }
Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& v) const { return ember::masked_fill(*this, mask, v); }
Tensor Tensor::masked_fill(const Tensor& mask, const Tensor& v) const { return ember::masked_fill(*this, mask, v); }
Tensor Tensor::where(const Tensor& condition, const Tensor& other) const { return ember::where(condition, *this, other); }
Tensor Tensor::where(const Tensor& condition, const Scalar& other) const { return ember::where(condition, *this, other); }
bool Tensor::equal(const Tensor& other) const { return ember::equal(*this, other); }
bool Tensor::allclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
    return ember::allclose(*this, other, rtol, atol, equal_nan);
}

// in-place arithmetic: direct kernels when nothing records, else out of place + rebase
Tensor& Tensor::add_(const Tensor& other, const Scalar& alpha) const {
    const Tensor& self = *this;
    const ScalarType ct = result_type(self, other);
    check_inplace_dtype(ct, self.scalar_type());
    return inplace_op(self, {other}, [&](const Tensor& s_) { return ember::add(s_, other, alpha); }, [&] {
        check_alpha(ct, alpha);
        if (ct == self.scalar_type()) add_kernel(self, other, alpha, ct, self);
        else write_into(self, add_kernel(self, other, alpha, ct));
    });
}
Tensor& Tensor::add_(const Scalar& other, const Scalar& alpha) const {
    const ScalarType ct = result_type(*this, other);
    check_inplace_dtype(ct, scalar_type());
    return add_(scalar_to_tensor(other, ct), alpha);
}
Tensor& Tensor::sub_(const Tensor& other, const Scalar& alpha) const {
    check_sub(scalar_type(), other.scalar_type());
    return add_(other, -alpha);
}
Tensor& Tensor::sub_(const Scalar& other, const Scalar& alpha) const {
    check_sub(scalar_type(), other.isBoolean() ? kBool : kLong);
    return add_(other, -alpha);
}
Tensor& Tensor::mul_(const Tensor& other) const {
    const Tensor& self = *this;
    const ScalarType ct = result_type(self, other);
    check_inplace_dtype(ct, self.scalar_type());
    return inplace_op(self, {other}, [&](const Tensor& s_) { return ember::mul(s_, other); }, [&] {
        if (ct == self.scalar_type()) mul_kernel(self, other, ct, self);
        else write_into(self, mul_kernel(self, other, ct));
    });
}
Tensor& Tensor::mul_(const Scalar& other) const {
    const ScalarType ct = result_type(*this, other);
    check_inplace_dtype(ct, scalar_type());
    const Tensor& self = *this;
    return inplace_op(self, {}, [&](const Tensor& s_) { return ember::mul(s_, other); }, [&] {
        if (ct == self.scalar_type()) mul_kernel(self, scalar_to_tensor(other, ct), ct, self);
        else write_into(self, mul_kernel(self, scalar_to_tensor(other, ct), ct));
    });
}
Tensor& Tensor::div_(const Tensor& other, std::optional<std::string_view> m) const {
    const Tensor& self = *this;
    const int mode = rounding(m);
    const ScalarType ct = div_type(result_type(self, other), mode);
    check_inplace_dtype(ct, self.scalar_type());
    return inplace_op(self, {other}, [&](const Tensor& s_) { return ember::div(s_, other, m); }, [&] {
        if (ct == self.scalar_type()) div_kernel(self, other, mode, ct, self);
        else write_into(self, div_kernel(self, other, mode, ct));
    });
}
Tensor& Tensor::div_(const Scalar& other, std::optional<std::string_view> m) const {
    check_inplace_dtype(div_type(result_type(*this, other), rounding(m)), scalar_type());
    return inplace_from(*this, {}, [&](const Tensor& s) { return ember::div(s, other, m); });
}
Tensor& Tensor::pow_(const Tensor& e) const {
    const Tensor& self = *this;
    check_inplace_dtype(result_type(self, e), self.scalar_type());
    return inplace_from(self, {e}, [&](const Tensor& s) { return ember::pow(s, e); });
}
Tensor& Tensor::pow_(const Scalar& e) const {
    const Tensor& self = *this;
    check_inplace_dtype(result_type(self, e), self.scalar_type());
    return inplace_from(self, {}, [&](const Tensor& s) { return ember::pow(s, e); });
}
Tensor& Tensor::lerp_(const Tensor& end, const Scalar& w) const {
    const Tensor& self = *this;
    return inplace_from(self, {end}, [&](const Tensor& s) { return ember::lerp(s, end, w); });
}
Tensor& Tensor::lerp_(const Tensor& end, const Tensor& w) const {
    const Tensor& self = *this;
    return inplace_from(self, {end, w}, [&](const Tensor& s) { return ember::lerp(s, end, w); });
}
Tensor& Tensor::clamp_(const std::optional<Scalar>& min, const std::optional<Scalar>& max) const {
    const Tensor& self = *this;
    return inplace_from(self, {}, [&](const Tensor& s) { return ember::clamp(s, min, max); });
}
Tensor& Tensor::clamp_(const std::optional<Tensor>& min, const std::optional<Tensor>& max) const {
    const Tensor& self = *this;
    return inplace_from(self, {min.value_or(Tensor()), max.value_or(Tensor())},
                        [&](const Tensor& s) { return ember::clamp(s, min, max); });
}
Tensor& Tensor::clamp_min_(const Scalar& min) const { return clamp_(std::optional<Scalar>(min), std::nullopt); }
Tensor& Tensor::clamp_max_(const Scalar& max) const { return clamp_(std::nullopt, std::optional<Scalar>(max)); }
Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& v) const {
    const Tensor& self = *this;
    check_mask(mask);
    return inplace_op(self, {}, [&](const Tensor& s_) { return ember::masked_fill(s_, mask, v); }, [&] {
        Tensor out = self;
        where_kernel(mask, scalar_to_tensor(v, self.scalar_type()), self, self.scalar_type(), out);
    });
}
Tensor& Tensor::masked_fill_(const Tensor& mask, const Tensor& v) const {
    const Tensor& self = *this;
    check_mask(mask);
    return inplace_op(self, {v}, [&](const Tensor& s_) { return ember::masked_fill(s_, mask, v); }, [&] {
        EMBER_CHECK(v.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
                    v.dim(), " dimension(s).");
        Tensor out = self;
        where_kernel(mask, cast(v, self.scalar_type()), self, self.scalar_type(), out);
    });
}

// ---- operators ---------------------------------------------------------------------------------------
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
Tensor operator-(const Scalar& a, const Tensor& b) { return rsub(b, a); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b); }
Tensor operator/(const Scalar& a, const Tensor& b) { return mul(reciprocal(b), a); }
Tensor operator%(const Tensor& a, const Tensor& b) { return remainder(a, b); }
Tensor operator%(const Tensor& a, const Scalar& b) { return remainder(a, b); }
Tensor operator%(const Scalar& a, const Tensor& b) { return remainder(a, b); }
Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator==(const Tensor& a, const Scalar& b) { return eq(a, b); }
Tensor operator==(const Scalar& a, const Tensor& b) { return eq(b, a); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator!=(const Tensor& a, const Scalar& b) { return ne(a, b); }
Tensor operator!=(const Scalar& a, const Tensor& b) { return ne(b, a); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<(const Tensor& a, const Scalar& b) { return lt(a, b); }
Tensor operator<(const Scalar& a, const Tensor& b) { return gt(b, a); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator<=(const Tensor& a, const Scalar& b) { return le(a, b); }
Tensor operator<=(const Scalar& a, const Tensor& b) { return ge(b, a); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>(const Tensor& a, const Scalar& b) { return gt(a, b); }
Tensor operator>(const Scalar& a, const Tensor& b) { return lt(b, a); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator>=(const Tensor& a, const Scalar& b) { return ge(a, b); }
Tensor operator>=(const Scalar& a, const Tensor& b) { return le(b, a); }
Tensor operator&(const Tensor& a, const Tensor& b) { return bitwise_and(a, b); }
Tensor operator&(const Tensor& a, const Scalar& b) { return bitwise_and(a, b); }
Tensor operator&(const Scalar& a, const Tensor& b) { return bitwise_and(b, a); }
Tensor operator|(const Tensor& a, const Tensor& b) { return bitwise_or(a, b); }
Tensor operator|(const Tensor& a, const Scalar& b) { return bitwise_or(a, b); }
Tensor operator|(const Scalar& a, const Tensor& b) { return bitwise_or(b, a); }
Tensor operator^(const Tensor& a, const Tensor& b) { return bitwise_xor(a, b); }
Tensor operator^(const Tensor& a, const Scalar& b) { return bitwise_xor(a, b); }
Tensor operator^(const Scalar& a, const Tensor& b) { return bitwise_xor(b, a); }

}  // namespace ember
