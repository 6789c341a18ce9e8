// Pointwise ops of the C++ op table: unary math and activations, binary arithmetic,
// comparisons and logic, clamps and selects, with their in-place variants ("add_").
#include <cmath>
#include <limits>

#include "ember/error.h"
#include "ember/nn/functional.h"
#include "jit/ops_common.h"

namespace ember::jit::detail {

namespace F = ember::nn::functional;

namespace {

using Unary = Tensor (*)(const Tensor&);
using UnaryInplace = Tensor& (Tensor::*)() const;

struct UnaryOp {
    const char* name;
    Unary fn;
    UnaryInplace inplace;  // nullptr: no in-place variant in the registry
};

// erfinv: Giles' single-precision approximation refined by two Newton steps on erf.
double erfinv_double(double y) {
    if (std::isnan(y) || y < -1 || y > 1) return std::numeric_limits<double>::quiet_NaN();
    if (y == 1) return std::numeric_limits<double>::infinity();
    if (y == -1) return -std::numeric_limits<double>::infinity();
    double w = -std::log((1.0 - y) * (1.0 + y));
    double x;
    if (w < 5.0) {
        w -= 2.5;
        double p = 2.81022636e-08;
        p = 3.43273939e-07 + p * w; p = -3.5233877e-06 + p * w; p = -4.39150654e-06 + p * w;
        p = 0.00021858087 + p * w; p = -0.00125372503 + p * w; p = -0.00417768164 + p * w;
        p = 0.246640727 + p * w; p = 1.50140941 + p * w;
        x = p * y;
    } else {
        w = std::sqrt(w) - 3.0;
        double p = -0.000200214257;
        p = 0.000100950558 + p * w; p = 0.00134934322 + p * w; p = -0.00367342844 + p * w;
        p = 0.00573950773 + p * w; p = -0.0076224613 + p * w; p = 0.00943887047 + p * w;
        p = 1.00167406 + p * w; p = 2.83297682 + p * w;
        x = p * y;
    }
    for (int k = 0; k < 2; ++k) {
        const double err = std::erf(x) - y;
        x -= err / (2.0 / std::sqrt(M_PI) * std::exp(-x * x));
    }
    return x;
}

Tensor positive(const Tensor& x) {
    if (x.scalar_type() == kBool) {
        throw Error("The `+` operator, on a bool tensor is not supported.");
    }
    return x;
}

Tensor sgn(const Tensor& x) { return ember::sign(x); }
Tensor frac(const Tensor& x) { return x - ember::trunc(x); }
Tensor deg2rad(const Tensor& x) { return x * (M_PI / 180.0); }
Tensor rad2deg(const Tensor& x) { return x * (180.0 / M_PI); }
Tensor softsign(const Tensor& x) { return x / (ember::abs(x) + 1); }
Tensor tanhshrink(const Tensor& x) { return x - ember::tanh(x); }
// PyTorch's hardswish and hardsigmoid: x * relu6(x + 3) / 6 and relu6(x + 3) / 6
Tensor hardsigmoid(const Tensor& x) { return ember::clamp(x + 3, 0, 6) / 6; }
Tensor hardswish(const Tensor& x) { return x * ember::clamp(x + 3, 0, 6) / 6; }
Tensor mish(const Tensor& x) { return x * ember::tanh(F::softplus(x)); }
Tensor logsigmoid(const Tensor& x) { return F::logsigmoid(x); }
Tensor silu(const Tensor& x) { return ember::silu(x); }

// The float math family without a library kernel: computed in double (map_float).
#define EMBER_JIT_FLOAT_UNARY_(NAME, EXPR) \
    Tensor NAME(const Tensor& x) { return map_float(x, [](double v) { return EXPR; }); }
EMBER_JIT_FLOAT_UNARY_(acos_f, std::acos(v))
EMBER_JIT_FLOAT_UNARY_(asin_f, std::asin(v))
EMBER_JIT_FLOAT_UNARY_(atan_f, std::atan(v))
EMBER_JIT_FLOAT_UNARY_(acosh_f, std::acosh(v))
EMBER_JIT_FLOAT_UNARY_(asinh_f, std::asinh(v))
EMBER_JIT_FLOAT_UNARY_(atanh_f, std::atanh(v))
EMBER_JIT_FLOAT_UNARY_(sinh_f, std::sinh(v))
EMBER_JIT_FLOAT_UNARY_(cosh_f, std::cosh(v))
EMBER_JIT_FLOAT_UNARY_(erfc_f, std::erfc(v))
EMBER_JIT_FLOAT_UNARY_(lgamma_f, std::lgamma(v))
EMBER_JIT_FLOAT_UNARY_(erfinv_f, erfinv_double(v))
EMBER_JIT_FLOAT_UNARY_(sinc_f, v == 0 ? 1.0 : std::sin(M_PI * v) / (M_PI * v))
#undef EMBER_JIT_FLOAT_UNARY_

// A bool result per element (signbit, isposinf, isneginf).
template <typename Fn>
Tensor map_bool(const Tensor& x, Fn fn) {
    const Tensor src = x.to(kDouble).contiguous();
    Tensor r = ember::empty(src.sizes(), kBool);
    const double* in = src.data_ptr<double>();
    bool* o = r.data_ptr<bool>();
    for (int64_t i = 0, n = src.numel(); i < n; ++i) o[i] = fn(in[i]);
    return r;
}

double finfo_max(ScalarType t) {
    switch (t) {
        case kDouble: return std::numeric_limits<double>::max();
        case kHalf: return 65504.0;
        default: return static_cast<double>(std::numeric_limits<float>::max());
    }
}

void def_unary(OpTable& t, const UnaryOp& op) {
    Unary fn = op.fn;
    def(t, op.name, "input", [fn](const Args& a) { return one(fn(a.tensor("input"))); });
    if (op.inplace) {
        UnaryInplace inplace = op.inplace;
        def(t, std::string(op.name) + "_", "input", [inplace](const Args& a) {
            Tensor self = a.tensor("input");
            (self.*inplace)();
            return one(self);
        });
    }
}


}  // namespace

void register_pointwise_ops(OpTable& t) {
    static const UnaryOp unary[] = {
        {"neg", &ember::neg, &Tensor::neg_},
        {"abs", &ember::abs, &Tensor::abs_},
        {"exp", &ember::exp, &Tensor::exp_},
        {"exp2", &ember::exp2, &Tensor::exp2_},
        {"log", &ember::log, &Tensor::log_},
        {"log2", &ember::log2, &Tensor::log2_},
        {"log10", &ember::log10, &Tensor::log10_},
        {"log1p", &ember::log1p, &Tensor::log1p_},
        {"expm1", &ember::expm1, &Tensor::expm1_},
        {"sqrt", &ember::sqrt, &Tensor::sqrt_},
        {"rsqrt", &ember::rsqrt, &Tensor::rsqrt_},
        {"sin", &ember::sin, &Tensor::sin_},
        {"cos", &ember::cos, &Tensor::cos_},
        {"tan", &ember::tan, &Tensor::tan_},
        {"tanh", &ember::tanh, &Tensor::tanh_},
        {"sigmoid", &ember::sigmoid, &Tensor::sigmoid_},
        {"relu", &ember::relu, &Tensor::relu_},
        {"erf", &ember::erf, &Tensor::erf_},
        {"floor", &ember::floor, &Tensor::floor_},
        {"ceil", &ember::ceil, &Tensor::ceil_},
        {"trunc", &ember::trunc, &Tensor::trunc_},
        {"sign", &ember::sign, &Tensor::sign_},
        {"reciprocal", &ember::reciprocal, &Tensor::reciprocal_},
        {"square", &ember::square, &Tensor::square_},
        {"logical_not", &ember::logical_not, &Tensor::logical_not_},
        {"isnan", &ember::isnan, nullptr},
        {"isinf", &ember::isinf, nullptr},
        {"isfinite", &ember::isfinite, nullptr},
        {"bitwise_not", &ember::bitwise_not, nullptr},
        {"positive", &positive, nullptr},
        {"sgn", &sgn, nullptr},
        {"frac", &frac, nullptr},
        {"deg2rad", &deg2rad, nullptr},
        {"rad2deg", &rad2deg, nullptr},
        {"softsign", &softsign, nullptr},
        {"tanhshrink", &tanhshrink, nullptr},
    };
    for (const UnaryOp& op : unary) def_unary(t, op);
    static const UnaryOp activations[] = {
        {"silu", &silu, nullptr},
        {"hardswish", &hardswish, nullptr},
        {"hardsigmoid", &hardsigmoid, nullptr},
        {"mish", &mish, nullptr},
        {"logsigmoid", &logsigmoid, nullptr},
    };
    for (const UnaryOp& op : activations) def_unary(t, op);  // the registry's (input)
    static const UnaryOp float_math[] = {
        {"acos", &acos_f, nullptr},   {"asin", &asin_f, nullptr},   {"atan", &atan_f, nullptr},
        {"acosh", &acosh_f, nullptr}, {"asinh", &asinh_f, nullptr}, {"atanh", &atanh_f, nullptr},
        {"sinh", &sinh_f, nullptr},   {"cosh", &cosh_f, nullptr},   {"erfc", &erfc_f, nullptr},
        {"erfinv", &erfinv_f, nullptr}, {"lgamma", &lgamma_f, nullptr}, {"sinc", &sinc_f, nullptr},
    };
    for (const UnaryOp& op : float_math) {
        def_unary(t, op);
        def_inplace_by_copy(t, op.name);
    }
    def(t, "signbit", "input", [](const Args& a) {
        return one(map_bool(a.tensor("input"), [](double v) { return std::signbit(v); }));
    });
    def(t, "isposinf", "input", [](const Args& a) {
        return one(map_bool(a.tensor("input"), [](double v) { return std::isinf(v) && v > 0; }));
    });
    def(t, "isneginf", "input", [](const Args& a) {
        return one(map_bool(a.tensor("input"), [](double v) { return std::isinf(v) && v < 0; }));
    });
    def(t, "logit", "input, eps=None", [](const Args& a) {
        std::optional<double> eps = a.optional_number("eps");
        return one(map_float(a.tensor("input"), [eps](double v) {
            if (eps) v = std::min(std::max(v, *eps), 1.0 - *eps);
            return std::log(v / (1.0 - v));
        }));
    });
    def_inplace_by_copy(t, "logit");
    def(t, "nan_to_num", "input, nan=0.0, posinf=None, neginf=None", [](const Args& a) {
        Tensor x = a.tensor("input");
        if (!x.is_floating_point()) return one(x.clone());
        const double big = finfo_max(x.scalar_type());
        const double nan = a.number("nan");
        const double pos = a.optional_number("posinf").value_or(big);
        const double neg = a.optional_number("neginf").value_or(-big);
        return one(map_float(x, [=](double v) { return std::isnan(v) ? nan : v == INFINITY ? pos : v == -INFINITY ? neg : v; }));
    });
    def_inplace_by_copy(t, "nan_to_num");

    def(t, "round", "input, *, decimals=0", [](const Args& a) {
        Tensor x = a.tensor("input");
        int64_t decimals = a.integer("decimals");
        if (decimals == 0) return one(ember::round(x));
        const double scale = std::pow(10.0, static_cast<double>(decimals));
        return one(ember::round(x * scale) / scale);
    });
    def(t, "gelu", "input, approximate='none'", [](const Args& a) {
        return one(ember::gelu(a.tensor("input"), a.string("approximate")));
    });

    // ---- binary arithmetic
    def(t, "add", "input, other, *, alpha=1, out=None", [](const Args& a) {
        Scalar alpha = a.scalar("alpha");
        return one(to_out(a, binary(
            a, "input", "other", [&](const Tensor& x, const Tensor& y) { return ember::add(x, y, alpha); },
            [&](const Tensor& x, const Scalar& y) { return ember::add(x, y, alpha); })));
    });
    def(t, "sub", "input, other, *, alpha=1, out=None", [](const Args& a) {
        Scalar alpha = a.scalar("alpha");
        return one(to_out(a, binary(
            a, "input", "other", [&](const Tensor& x, const Tensor& y) { return ember::sub(x, y, alpha); },
            [&](const Tensor& x, const Scalar& y) { return ember::sub(x, y, alpha); })));
    });
    def(t, "rsub", "input, other, *, alpha=1", [](const Args& a) {
        Scalar alpha = a.scalar("alpha");
        return one(binary(
            a, "input", "other", [&](const Tensor& x, const Tensor& y) { return ember::rsub(x, y, alpha); },
            [&](const Tensor& x, const Scalar& y) { return ember::rsub(x, y, alpha); }));
    });
    def(t, "mul", "input, other", [](const Args& a) {
        return one(binary(
            a, "input", "other", [](const Tensor& x, const Tensor& y) { return ember::mul(x, y); },
            [](const Tensor& x, const Scalar& y) { return ember::mul(x, y); }));
    });
    def(t, "div", "input, other, *, rounding_mode=None, out=None", [](const Args& a) {
        std::optional<std::string> mode = a.optional_string("rounding_mode");
        std::optional<std::string_view> m;
        if (mode) m = *mode;
        return one(to_out(a, binary(
            a, "input", "other", [&](const Tensor& x, const Tensor& y) { return ember::div(x, y, m); },
            [&](const Tensor& x, const Scalar& y) { return ember::div(x, y, m); })));
    });
    def(t, "true_divide", "input, other", [](const Args& a) {
        return one(binary(
            a, "input", "other", [](const Tensor& x, const Tensor& y) { return ember::div(x, y); },
            [](const Tensor& x, const Scalar& y) { return ember::div(x, y); }));
    });
    def(t, "floor_divide", "input, other", [](const Args& a) {
        return one(binary(
            a, "input", "other", [](const Tensor& x, const Tensor& y) { return ember::floor_divide(x, y); },
            [](const Tensor& x, const Scalar& y) { return ember::floor_divide(x, y); }));
    });
    def(t, "remainder", "input, other", [](const Args& a) {
        return one(binary(
            a, "input", "other", [](const Tensor& x, const Tensor& y) { return ember::remainder(x, y); },
            [](const Tensor& x, const Scalar& y) { return ember::remainder(x, y); }));
    });
    def(t, "fmod", "input, other", [](const Args& a) {
        return one(binary(
            a, "input", "other", [](const Tensor& x, const Tensor& y) { return ember::fmod(x, y); },
            [](const Tensor& x, const Scalar& y) { return ember::fmod(x, y); }));
    });
    def(t, "pow", "input, exponent", [](const Args& a) {
        if (!a["input"].is_tensor() && a["exponent"].is_tensor()) {
            return one(ember::pow(a.scalar("input"), a.tensor("exponent")));
        }
        return one(binary(
            a, "input", "exponent", [](const Tensor& x, const Tensor& y) { return ember::pow(x, y); },
            [](const Tensor& x, const Scalar& y) { return ember::pow(x, y); }));
    });
    def(t, "float_power", "input, exponent", [](const Args& a) {
        auto wide = [&](const char* name) {
            const Value& v = a[name];
            return v.is_tensor() ? v.tensor.to(kDouble) : scalar_tensor(a.scalar(name), kDouble);
        };
        return one(ember::pow(wide("input"), wide("exponent")));
    });
    def(t, "maximum", "input, other", [](const Args& a) {
        return one(ember::maximum(a.tensor("input"), a.tensor("other")));
    });
    def(t, "minimum", "input, other", [](const Args& a) {
        return one(ember::minimum(a.tensor("input"), a.tensor("other")));
    });

#define EMBER_JIT_BINARY_(NAME)                                                                          \
    def(t, #NAME, "input, other", [](const Args& a) {                                                    \
        return one(binary(                                                                               \
            a, "input", "other", [](const Tensor& x, const Tensor& y) { return ember::NAME(x, y); },       \
            [](const Tensor& x, const Scalar& y) { return ember::NAME(x, y); }));                         \
    });
    EMBER_JIT_BINARY_(eq)
    EMBER_JIT_BINARY_(ne)
    EMBER_JIT_BINARY_(lt)
    EMBER_JIT_BINARY_(le)
    EMBER_JIT_BINARY_(gt)
    EMBER_JIT_BINARY_(ge)
    EMBER_JIT_BINARY_(logical_and)
    EMBER_JIT_BINARY_(logical_or)
    EMBER_JIT_BINARY_(logical_xor)
    EMBER_JIT_BINARY_(bitwise_and)
    EMBER_JIT_BINARY_(bitwise_or)
    EMBER_JIT_BINARY_(bitwise_xor)
#undef EMBER_JIT_BINARY_

    // ---- binary float math (map_float, a number operand wrapped as Python does)
#define EMBER_JIT_FLOAT_BINARY_(NAME, EXPR)                                                        \
    def(t, NAME, "input, other", [](const Args& a) {                                               \
        return one(binary(a, "input", "other", [](const Tensor& x, const Tensor& y) {              \
            return map_float(x, y, [](double u, double v) { return EXPR; });                        \
        }));                                                                                       \
    });
    EMBER_JIT_FLOAT_BINARY_("atan2", std::atan2(u, v))
    EMBER_JIT_FLOAT_BINARY_("hypot", std::hypot(u, v))
    EMBER_JIT_FLOAT_BINARY_("copysign", std::copysign(u, v))
    EMBER_JIT_FLOAT_BINARY_("ldexp", u * std::exp2(v))
    EMBER_JIT_FLOAT_BINARY_("logaddexp", (std::isinf(u) && u == v) ? u : std::max(u, v) + std::log1p(std::exp(-std::abs(u - v))))
    EMBER_JIT_FLOAT_BINARY_("logaddexp2", (std::isinf(u) && u == v) ? u : std::max(u, v) + std::log2(1.0 + std::exp2(-std::abs(u - v))))
    EMBER_JIT_FLOAT_BINARY_("xlogy", std::isnan(v) ? v : u == 0 ? 0.0 : u * std::log(v))
#undef EMBER_JIT_FLOAT_BINARY_
    // fmax / fmin: maximum / minimum that ignore a NaN operand
    def(t, "fmax", "input, other", [](const Args& a) {
        return one(binary(a, "input", "other", [](const Tensor& x, const Tensor& y) {
            Tensor m = ember::maximum(x, y);
            if (!is_floating_point(m.scalar_type())) return m;
            return ember::where(ember::isnan(x), y.to(m.scalar_type()), ember::where(ember::isnan(y), x.to(m.scalar_type()), m));
        }));
    });
    def(t, "fmin", "input, other", [](const Args& a) {
        return one(binary(a, "input", "other", [](const Tensor& x, const Tensor& y) {
            Tensor m = ember::minimum(x, y);
            if (!is_floating_point(m.scalar_type())) return m;
            return ember::where(ember::isnan(x), y.to(m.scalar_type()), ember::where(ember::isnan(y), x.to(m.scalar_type()), m));
        }));
    });
    def(t, "heaviside", "input, values", [](const Args& a) {
        Tensor x = a.tensor("input");
        Tensor v = a.tensor("values");
        const ScalarType dt = result_type(x, v);
        return one(ember::where(x == 0, v.to(dt), (x > 0).to(dt)));
    });
    def(t, "isclose", "input, other, rtol=1e-05, atol=1e-08, equal_nan=False", [](const Args& a) {
        return one(ember::isclose(a.tensor("input"), a.tensor("other"), a.number("rtol"), a.number("atol"),
                                  a.boolean("equal_nan")));
    });

    // ---- ternary and selects
    def(t, "lerp", "input, end, weight", [](const Args& a) {
        if (a["weight"].is_tensor()) return one(ember::lerp(a.tensor("input"), a.tensor("end"), a.tensor("weight")));
        return one(ember::lerp(a.tensor("input"), a.tensor("end"), a.scalar("weight")));
    });
    def(t, "addcmul", "input, tensor1, tensor2, *, value=1", [](const Args& a) {
        return one(a.tensor("input") + a.tensor("tensor1") * a.tensor("tensor2") * a.scalar("value"));
    });
    def(t, "addcdiv", "input, tensor1, tensor2, *, value=1", [](const Args& a) {
        return one(a.tensor("input") + a.tensor("tensor1") / a.tensor("tensor2") * a.scalar("value"));
    });
    def(t, "where", "condition, input=None, other=None", [](const Args& a) {
        Tensor cond = a.tensor("condition");
        if (a.is_none("input") && a.is_none("other")) {
            return ember::unbind(ember::nonzero(cond), 1);  // where(condition): nonzero as a tuple
        }
        const Value& x = a["input"];
        const Value& y = a["other"];
        if (x.is_tensor() && y.is_tensor()) return one(ember::where(cond, x.tensor, y.tensor));
        if (x.is_tensor()) return one(ember::where(cond, x.tensor, a.scalar("other")));
        if (y.is_tensor()) return one(ember::where(cond, a.scalar("input"), y.tensor));
        return one(ember::where(cond, a.scalar("input"), a.scalar("other")));
    });
    def(t, "masked_fill", "input, mask, value", [](const Args& a) {
        if (a["value"].is_tensor()) return one(ember::masked_fill(a.tensor("input"), a.tensor("mask"), a.tensor("value")));
        return one(ember::masked_fill(a.tensor("input"), a.tensor("mask"), a.scalar("value")));
    });
    def(t, "masked_fill_", "input, mask, value", [](const Args& a) {
        Tensor self = a.tensor("input");
        if (a["value"].is_tensor()) self.masked_fill_(a.tensor("mask"), a.tensor("value"));
        else self.masked_fill_(a.tensor("mask"), a.scalar("value"));
        return one(self);
    });

    // ---- clamps and activations with parameters
    auto clamp_bound = [](const Args& a, const char* name) -> std::optional<Scalar> {
        if (a.is_none(name)) return std::nullopt;
        return a.scalar(name);
    };
    def(t, "clamp", "input, min=None, max=None", [clamp_bound](const Args& a) {
        if (a["min"].is_tensor() || a["max"].is_tensor()) {
            std::optional<Tensor> lo, hi;
            if (!a.is_none("min")) lo = a["min"].is_tensor() ? a.tensor("min") : wrap_number(a.scalar("min"), a.tensor("input"));
            if (!a.is_none("max")) hi = a["max"].is_tensor() ? a.tensor("max") : wrap_number(a.scalar("max"), a.tensor("input"));
            return one(ember::clamp(a.tensor("input"), lo, hi));
        }
        return one(ember::clamp(a.tensor("input"), clamp_bound(a, "min"), clamp_bound(a, "max")));
    });
    def(t, "clamp_min", "input, min", [](const Args& a) {
        return one(ember::clamp_min(a.tensor("input"), a.scalar("min")));
    });
    def(t, "clamp_max", "input, max", [](const Args& a) {
        return one(ember::clamp_max(a.tensor("input"), a.scalar("max")));
    });
    def(t, "clamp_", "input, min=None, max=None", [clamp_bound](const Args& a) {
        Tensor self = a.tensor("input");
        self.clamp_(clamp_bound(a, "min"), clamp_bound(a, "max"));
        return one(self);
    });
    def(t, "clamp_min_", "input, min", [](const Args& a) {
        Tensor self = a.tensor("input");
        self.clamp_min_(a.scalar("min"));
        return one(self);
    });
    def(t, "clamp_max_", "input, max", [](const Args& a) {
        Tensor self = a.tensor("input");
        self.clamp_max_(a.scalar("max"));
        return one(self);
    });
    // F's activations with an inplace flag (F.relu6(x, inplace=True) is recorded with the flag)
    def(t, "hardtanh", "input, min_val=-1.0, max_val=1.0, inplace=False", [](const Args& a) {
        return one(F::hardtanh(a.tensor("input"), a.number("min_val"), a.number("max_val"), a.boolean("inplace")));
    });
    def(t, "relu6", "input, inplace=False", [](const Args& a) {
        return one(F::relu6(a.tensor("input"), a.boolean("inplace")));
    });
    def(t, "leaky_relu", "input, negative_slope=0.01, inplace=False", [](const Args& a) {
        return one(F::leaky_relu(a.tensor("input"), a.number("negative_slope"), a.boolean("inplace")));
    });
    def(t, "elu", "input, alpha=1.0, inplace=False", [](const Args& a) {
        return one(F::elu(a.tensor("input"), a.number("alpha"), a.boolean("inplace")));
    });
    def(t, "softplus", "input, beta=1.0, threshold=20.0", [](const Args& a) {
        return one(F::softplus(a.tensor("input"), a.number("beta"), a.number("threshold")));
    });
    def(t, "threshold", "input, threshold, value, inplace=False", [](const Args& a) {
        Tensor x = a.tensor("input");
        // PyTorch's x <= threshold ? value : x (NaN is not below the threshold: it stays NaN)
        Tensor out = ember::where(x <= a.scalar("threshold"), wrap_number(a.scalar("value"), x), x);
        if (a.boolean("inplace")) return one(write_into(x, out, "threshold_"));
        return one(out);
    });

    // ---- in-place binary ops (Tensor methods with native kernels)
    def(t, "add_", "input, other, *, alpha=1, out=None", [](const Args& a) {
        Tensor self = a.tensor("input");
        if (a["other"].is_tensor()) self.add_(a.tensor("other"), a.scalar("alpha"));
        else self.add_(a.scalar("other"), a.scalar("alpha"));
        return one(self);
    });
    def(t, "sub_", "input, other, *, alpha=1, out=None", [](const Args& a) {
        Tensor self = a.tensor("input");
        if (a["other"].is_tensor()) self.sub_(a.tensor("other"), a.scalar("alpha"));
        else self.sub_(a.scalar("other"), a.scalar("alpha"));
        return one(self);
    });
    def(t, "mul_", "input, other", [](const Args& a) {
        Tensor self = a.tensor("input");
        if (a["other"].is_tensor()) self.mul_(a.tensor("other"));
        else self.mul_(a.scalar("other"));
        return one(self);
    });
    def(t, "div_", "input, other, *, rounding_mode=None, out=None", [](const Args& a) {
        Tensor self = a.tensor("input");
        std::optional<std::string> mode = a.optional_string("rounding_mode");
        std::optional<std::string_view> m;
        if (mode) m = *mode;
        if (a["other"].is_tensor()) self.div_(a.tensor("other"), m);
        else self.div_(a.scalar("other"), m);
        return one(self);
    });
    def(t, "pow_", "input, exponent", [](const Args& a) {
        Tensor self = a.tensor("input");
        if (a["exponent"].is_tensor()) self.pow_(a.tensor("exponent"));
        else self.pow_(a.scalar("exponent"));
        return one(self);
    });
    def(t, "lerp_", "input, end, weight", [](const Args& a) {
        Tensor self = a.tensor("input");
        if (a["weight"].is_tensor()) self.lerp_(a.tensor("end"), a.tensor("weight"));
        else self.lerp_(a.tensor("end"), a.scalar("weight"));
        return one(self);
    });
    // the others: computed, then written back
    for (const char* name : {"true_divide", "floor_divide", "remainder", "fmod", "eq", "ne", "lt", "le", "gt", "ge",
                             "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
                             "bitwise_not", "addcmul", "addcdiv", "sgn", "frac", "deg2rad", "rad2deg", "float_power",
                             "atan2", "hypot", "copysign", "ldexp", "xlogy", "heaviside"}) {
        def_inplace_by_copy(t, name);
    }
}

}  // namespace ember::jit::detail
