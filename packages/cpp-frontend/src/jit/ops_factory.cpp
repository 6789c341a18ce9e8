// Factories (ember.zeros, ember.arange, ... recorded when a size is symbolic) and the
// Tensor methods that are not registry ops (Tensor.to, Tensor.float, Tensor.copy_,
// Tensor.new_zeros, ...) of the C++ op table.
#include <cmath>
#include <random>
#include <sstream>

#include "ember/error.h"
#include "jit/ops_common.h"

namespace ember::jit::detail {

namespace {

// A device argument: Ember's C++ frontend has the CPU only (a program saved from another
// device is loaded with a map_location, which rewrites its device arguments to the CPU).
void check_device(const Value& v, const std::string& op) {
    std::string name;
    if (v.is_none()) return;
    if (v.kind == Value::Kind::Device || v.kind == Value::Kind::String) name = v.s;
    else if (v.kind == Value::Kind::Int) name = "cuda:" + std::to_string(v.i);
    else throw TypeError(op + "(): expected a device, got " + describe(v));
    if (name != "cpu" && name != "cpu:0") {
        throw Error(op + "(): device '" + name + "' is not available: Ember's C++ frontend runs on the CPU");
    }
}

void check_layout(const Args& a) {
    if (a.has("layout") && !a.is_none("layout") && a["layout"].s != "strided") {
        throw NotImplementedError(a.op() + "(): layout " + describe(a["layout"]) + " is not supported (strided only)");
    }
}

// What the factories share: dtype, device, layout, requires_grad and out.
Tensor finish(const Args& a, Tensor t) {
    if (a.has("device")) check_device(a["device"], a.op());
    check_layout(a);
    if (a.has("requires_grad") && a.boolean("requires_grad")) t.requires_grad_(true);
    return a.has("out") ? to_out(a, t) : t;
}

TensorOptions options_of(const Args& a) {
    TensorOptions o;
    if (auto d = a.dtype("dtype")) o = o.dtype(*d);
    return o;
}

// A size given as varargs (zeros(2, 3)), as one sequence (zeros((2, 3))) or as size=.
std::vector<int64_t> size_of(const Args& a) {
    const std::vector<Value>& v = a.varargs();
    if (v.empty()) {
        if (a.has("size") && !a.is_none("size")) return a.ints("size");
        return {};
    }
    if (v.size() == 1 && v[0].is_sequence()) return to_ints(v[0], a.op() + "(): size");
    std::vector<int64_t> out;
    for (const Value& x : v) out.push_back(to_int(x, a.op() + "(): size"));
    return out;
}

using SizeFactory = Tensor (*)(IntArrayRef, const TensorOptions&);

void def_size_factory(OpTable& t, const char* name, SizeFactory fn, const char* signature) {
    def(t, name, signature, [fn](const Args& a) { return one(finish(a, fn(size_of(a), options_of(a)))); });
}

Tensor zeros_f(IntArrayRef s, const TensorOptions& o) { return ember::zeros(s, o); }
Tensor ones_f(IntArrayRef s, const TensorOptions& o) { return ember::ones(s, o); }
Tensor empty_f(IntArrayRef s, const TensorOptions& o) { return ember::empty(s, o); }
Tensor rand_f(IntArrayRef s, const TensorOptions& o) { return ember::rand(s, o); }
Tensor randn_f(IntArrayRef s, const TensorOptions& o) { return ember::randn(s, o); }

using LikeFactory = Tensor (*)(const Tensor&, const TensorOptions&);

void def_like_factory(OpTable& t, const char* name, LikeFactory fn) {
    def(t, name, "input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=ember.preserve_format, pin_memory=False",
        [fn](const Args& a) { return one(finish(a, fn(a.tensor("input"), options_of(a)))); });
}

Tensor zeros_like_f(const Tensor& x, const TensorOptions& o) { return ember::zeros_like(x, o); }
Tensor ones_like_f(const Tensor& x, const TensorOptions& o) { return ember::ones_like(x, o); }
Tensor empty_like_f(const Tensor& x, const TensorOptions& o) { return ember::empty_like(x, o); }
Tensor rand_like_f(const Tensor& x, const TensorOptions& o) { return ember::rand_like(x, o); }
Tensor randn_like_f(const Tensor& x, const TensorOptions& o) { return ember::randn_like(x, o); }

// Tensor.to(*args, **kwargs) as Python Ember parses it: a tensor gives its dtype, a dtype is
// the dtype, a string/device/int a device, bools (non_blocking) are ignored.
Tensor tensor_to(const Args& a) {
    Tensor x = a.tensor("self");
    std::optional<ScalarType> dtype;
    bool copy = false;
    for (const Value& v : a.varargs()) {
        switch (v.kind) {
            case Value::Kind::Tensor: dtype = v.tensor.scalar_type(); break;
            case Value::Kind::Dtype: dtype = v.dtype; break;
            case Value::Kind::Device:
            case Value::Kind::String:
            case Value::Kind::Int: check_device(v, "Tensor.to"); break;
            case Value::Kind::None:
            case Value::Kind::Bool: break;
            default: throw TypeError("to() received an invalid combination of arguments - got " + describe(v));
        }
    }
    for (const auto& [key, v] : a.varkwargs()) {
        if (key == "dtype") {
            if (!v.is_none()) {
                if (v.kind != Value::Kind::Dtype) throw TypeError("to(): dtype must be an ember.dtype, got " + describe(v));
                dtype = v.dtype;
            }
        } else if (key == "device") {
            check_device(v, "Tensor.to");
        } else if (key == "copy") {
            copy = v.kind == Value::Kind::Bool && v.b;
        } else if (key != "non_blocking") {
            throw TypeError("to() got an unexpected keyword argument '" + key + "'");
        }
    }
    if (!dtype) return copy ? x.clone() : x;
    return x.to(*dtype, false, copy);
}

// -- the random and spaced factories Python Ember records by name (ember.normal, ...) ------

std::string number_text(double v) {  // as C++'s ostream prints a double (PyTorch's messages)
    std::ostringstream os;
    os << v;
    return os.str();
}

// ember.normal's four overloads: (Tensor mean, Tensor std), (Tensor mean, float std),
// (float mean, Tensor std), (float mean, float std, size). Values: mean + std * N(0, 1) from
// the default generator (Python's draws, rounded as randn * std + mean, not normal_'s fma).
Tensor normal(const Args& a) {
    const Value& mean = a["mean"];
    const Value& std_ = a["std"];
    auto check_float = [](const Tensor& x) {
        if (!x.is_floating_point()) {
            throw NotImplementedError("\"normal_kernel_cpu\" not implemented for '" +
                                      std::string(scalar_type_name(x.scalar_type())) + "'");
        }
    };
    auto check_std_tensor = [](const Tensor& s) {
        if (s.numel() > 0 && (s < 0).any().item<bool>()) throw Error("normal expects all elements of std >= 0.0");
    };
    auto check_std_number = [](double s) {
        if (!(s >= 0.0)) throw Error("normal expects std >= 0.0, but found std " + number_text(s));
    };
    if (!mean.is_tensor() && !std_.is_tensor()) {
        if (a.is_none("size")) {
            throw TypeError("normal() received an invalid combination of arguments - got (float, float), but expected one "
                            "of: (Tensor mean, Tensor std), (Tensor mean, float std), (float mean, Tensor std), (float "
                            "mean, float std, tuple of ints size)");
        }
        const double s = a.number("std");
        check_std_number(s);
        Tensor r = ember::randn(a.ints("size"), options_of(a));
        check_float(r);
        return r.mul_(s).add_(a.number("mean"));
    }
    Tensor m = mean.is_tensor() ? mean.tensor : Tensor();
    Tensor sd = std_.is_tensor() ? std_.tensor : Tensor();
    if (m.defined()) check_float(m);
    if (sd.defined()) check_float(sd);
    if (sd.defined()) check_std_tensor(sd);
    else check_std_number(a.number("std"));
    const ScalarType dt = m.defined() && sd.defined() ? promote_types(m.scalar_type(), sd.scalar_type())
                          : m.defined()               ? m.scalar_type()
                                                      : sd.scalar_type();
    Shape shape;
    if (m.defined() && sd.defined()) {
        shape = infer_size(m.sizes(), sd.sizes());
    } else {
        const Tensor& x = m.defined() ? m : sd;
        shape.assign(x.sizes().begin(), x.sizes().end());
    }
    Tensor z = ember::randn(shape, TensorOptions().dtype(dt));
    Tensor scale = sd.defined() ? sd.to(dt) : ember::scalar_tensor(a.number("std"), dt);
    Tensor shift = m.defined() ? m.to(dt) : ember::scalar_tensor(a.number("mean"), dt);
    return z * scale + shift;
}

// The generator as a UniformRandomBitGenerator (for the standard library's distributions).
struct GeneratorBits {
    using result_type = uint64_t;
    Generator& g;
    static constexpr result_type min() { return 0; }
    static constexpr result_type max() { return ~result_type(0); }
    result_type operator()() { return g.random64(); }
};

// ember.poisson: one Poisson draw per rate (a float tensor of non-negative rates).
Tensor poisson(const Tensor& rates) {
    if (!rates.is_floating_point()) {
        throw NotImplementedError("\"poisson_cpu\" not implemented for '" + std::string(scalar_type_name(rates.scalar_type())) +
                                  "'");
    }
    const Tensor r = rates.to(kDouble).contiguous();
    const double* in = r.data_ptr<double>();
    const int64_t n = r.numel();
    for (int64_t i = 0; i < n; ++i) {
        if (!(in[i] >= 0)) throw Error("invalid Poisson rate, expected rate to be non-negative");
    }
    Tensor out = ember::empty(r.sizes(), kDouble);
    double* o = out.data_ptr<double>();
    GeneratorBits bits{default_generator()};
    for (int64_t i = 0; i < n; ++i) {
        if (in[i] == 0) {
            o[i] = 0;
            continue;
        }
        std::poisson_distribution<int64_t> draw(in[i]);
        o[i] = static_cast<double>(draw(bits));
    }
    return out.to(rates.scalar_type());
}

// ember.randint(high, size) / randint(low, high, size), also by keyword.
Tensor randint(const Args& a) {
    const std::vector<Value>& v = a.varargs();
    std::optional<int64_t> low = a.optional_integer("low"), high = a.optional_integer("high");
    std::optional<std::vector<int64_t>> size = a.optional_ints("size");
    std::vector<const Value*> rest;
    for (const Value& x : v) rest.push_back(&x);
    if (!rest.empty() && rest.back()->is_sequence()) {
        size = to_ints(*rest.back(), "randint(): size");
        rest.pop_back();
    }
    if (rest.size() == 1) {
        high = to_int(*rest[0], "randint(): high");
    } else if (rest.size() == 2) {
        low = to_int(*rest[0], "randint(): low");
        high = to_int(*rest[1], "randint(): high");
    } else if (rest.size() > 2) {
        throw TypeError("randint() received an invalid combination of arguments");
    }
    if (!high || !size) throw TypeError("randint() missing required arguments 'high' and 'size'");
    const ScalarType dt = a.dtype("dtype").value_or(kLong);
    const int64_t lo = low.value_or(0);
    if (dt == kBool && *high > 2) throw Error("to - 1 is out of bounds for bool");
    return ember::randint(lo, *high, *size, TensorOptions().dtype(kLong)).to(dt);
}

// PyTorch's symmetric spacing (linspace): the first half counts up from s, the rest down from e.
std::vector<double> spaced(double s, double e, int64_t steps) {
    std::vector<double> x(static_cast<std::size_t>(steps));
    const double step = (e - s) / static_cast<double>(steps - 1);
    for (int64_t i = 0; i < steps; ++i) {
        x[static_cast<std::size_t>(i)] = i < steps / 2 ? s + step * static_cast<double>(i) : e - step * static_cast<double>(steps - 1 - i);
    }
    return x;
}

// ember.logspace: base ** linspace(start, end, steps), the exponents in double (float
// dtypes from ends rounded to the dtype, integer dtypes from truncated ends and a float32 base).
Tensor logspace(const Args& a) {
    const int64_t steps = a.integer("steps");
    if (steps < 0) throw Error("number of steps must be non-negative");
    const ScalarType dt = a.dtype("dtype").value_or(get_default_dtype());
    double s = a.number("start"), e = a.number("end"), base = a.number("base");
    if (is_floating_point(dt)) {
        s = ember::scalar_tensor(s, kDouble).to(dt).to(kDouble).item<double>();
        e = ember::scalar_tensor(e, kDouble).to(dt).to(kDouble).item<double>();
    } else {
        s = std::trunc(s);
        e = std::trunc(e);
        base = static_cast<double>(static_cast<float>(base));
    }
    std::vector<double> x;
    if (steps == 1) x = {std::pow(base, a.number("start"))};
    else if (steps > 1) x = spaced(s, e, steps);
    if (steps > 1) {
        for (double& v : x) v = std::pow(base, v);
    }
    Tensor r = ember::empty({steps}, kDouble);
    std::copy(x.begin(), x.end(), r.data_ptr<double>());
    return r.to(dt);
}

// ember.range (deprecated in PyTorch): start to end inclusive by step, default float dtype.
Tensor range(const Args& a) {
    std::vector<Scalar> v;
    for (const Value& x : a.varargs()) v.push_back(to_scalar(x, "range()"));
    if (v.size() > 3) throw TypeError("range() takes at most 3 positional arguments (" + std::to_string(v.size()) + " given)");
    double start = 0, end = 0, step = 1;
    if (v.size() == 1 && a.is_none("end")) {
        end = v[0].toDouble();
        if (!a.is_none("start")) start = a.number("start");
    } else {
        std::vector<std::optional<double>> slots = {a.optional_number("start"), a.optional_number("end"), a.optional_number("step")};
        for (std::size_t i = 0; i < v.size(); ++i) slots[i] = v[i].toDouble();
        if (!slots[1]) throw TypeError("range() missing required argument 'end'");
        start = slots[0].value_or(0.0);
        end = *slots[1];
        step = slots[2].value_or(1.0);
    }
    if (step == 0) throw Error("step must be nonzero");
    if (!std::isfinite(start) || !std::isfinite(end)) {
        throw Error("unsupported range: " + number_text(start) + " -> " + number_text(end));
    }
    if (!((step > 0 && end >= start) || (step < 0 && end <= start))) {
        throw Error("upper bound and lower bound inconsistent with step sign");
    }
    const ScalarType dt = a.dtype("dtype").value_or(get_default_dtype());
    const int64_t n = static_cast<int64_t>(std::floor((end - start) / step)) + 1;
    Tensor r;
    if (is_floating_point(dt)) {
        r = ember::empty({n}, kDouble);
        double* p = r.data_ptr<double>();
        for (int64_t i = 0; i < n; ++i) p[i] = start + static_cast<double>(i) * step;
    } else {
        r = ember::empty({n}, kLong);
        int64_t* p = r.data_ptr<int64_t>();
        const auto s0 = static_cast<int64_t>(start), st = static_cast<int64_t>(step);
        for (int64_t i = 0; i < n; ++i) p[i] = s0 + i * st;
    }
    return r.to(dt);
}

void def_cast(OpTable& t, const char* name, ScalarType dtype) {
    // memory_format: a layout, not values (the C++ tensors are dense row-major)
    def(t, name, "self, *, memory_format=ember.preserve_format",
        [dtype](const Args& a) { return one(a.tensor("self").to(dtype)); });
}

}  // namespace

void register_factory_ops(OpTable& t) {
    const char* common = "*args, size=None, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False";
    def_size_factory(t, "ember.zeros", &zeros_f, common);
    def_size_factory(t, "ember.ones", &ones_f, common);
    def_size_factory(t, "ember.empty", &empty_f,
                     "*args, size=None, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False, "
                     "memory_format=None");
    // random factories draw from the C++ generator: values differ from Python's stream
    def_size_factory(t, "ember.rand", &rand_f,
                     "*args, size=None, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False, "
                     "pin_memory=False");
    def_size_factory(t, "ember.randn", &randn_f,
                     "*args, size=None, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False, "
                     "pin_memory=False");
    def(t, "ember.full", "size, fill_value, *, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False",
        [](const Args& a) { return one(finish(a, ember::full(a.ints("size"), a.scalar("fill_value"), options_of(a)))); });
    def(t, "ember.arange",
        "*args, start=None, end=None, step=None, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False",
        [](const Args& a) {
            std::vector<Scalar> v;
            for (const Value& x : a.varargs()) v.push_back(to_scalar(x, "arange()"));
            if (v.empty()) {
                // keyword form: arange(start=0, end=..., step=1)
                v.push_back(a.is_none("start") ? Scalar(int64_t(0)) : a.scalar("start"));
                if (a.is_none("end")) throw TypeError("arange() missing required argument 'end'");
                v.push_back(a.scalar("end"));
                if (!a.is_none("step")) v.push_back(a.scalar("step"));
            } else if (v.size() == 1 && !a.is_none("end")) {
                v.push_back(a.scalar("end"));
            }
            if (v.size() == 2 && !a.is_none("step")) v.push_back(a.scalar("step"));
            Tensor r;
            if (v.size() == 1) r = ember::arange(v[0], options_of(a));
            else if (v.size() == 2) r = ember::arange(v[0], v[1], options_of(a));
            else if (v.size() == 3) r = ember::arange(v[0], v[1], v[2], options_of(a));
            else throw TypeError("arange() takes from 1 to 3 positional arguments but " + std::to_string(v.size()) + " were given");
            return one(finish(a, r));
        });
    def(t, "ember.linspace", "start, end, steps, *, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False",
        [](const Args& a) {
            return one(finish(a, ember::linspace(a.scalar("start"), a.scalar("end"), a.integer("steps"), options_of(a))));
        });
    def(t, "ember.eye", "n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False",
        [](const Args& a) {
            Tensor r = a.is_none("m") ? ember::eye(a.integer("n"), options_of(a))
                                      : ember::eye(a.integer("n"), a.integer("m"), options_of(a));
            return one(finish(a, r));
        });
    def(t, "ember.scalar_tensor", "s, *, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False",
        [](const Args& a) { return one(finish(a, ember::scalar_tensor(a.scalar("s"), options_of(a)))); });
    def(t, "ember.normal",
        "mean, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None, pin_memory=False, "
        "requires_grad=False",
        [](const Args& a) { return one(finish(a, normal(a))); });
    def(t, "ember.poisson", "input, generator=None", [](const Args& a) { return one(poisson(a.tensor("input"))); });
    def(t, "ember.randint",
        "*args, size=None, low=None, high=None, generator=None, out=None, dtype=None, layout=None, device=None, "
        "requires_grad=False, pin_memory=False",
        [](const Args& a) { return one(finish(a, randint(a))); });
    def(t, "ember.randperm",
        "n, *, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False",
        [](const Args& a) {
            const int64_t n = a.integer("n");
            if (n < 0) throw Error("Trying to create tensor with negative dimension " + std::to_string(n) + ": [" + std::to_string(n) + "]");
            return one(finish(a, ember::randperm(n, TensorOptions().dtype(a.dtype("dtype").value_or(kLong)))));
        });
    def(t, "ember.logspace",
        "start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False",
        [](const Args& a) { return one(finish(a, logspace(a))); });
    def(t, "ember.range",
        "*args, start=None, end=None, step=None, out=None, dtype=None, layout=None, device=None, requires_grad=False",
        [](const Args& a) { return one(finish(a, range(a))); });
    def(t, "ember.empty_strided",
        "size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False", [](const Args& a) {
            const std::vector<int64_t> size = a.ints("size"), stride = a.ints("stride");
            if (size.size() != stride.size()) throw Error("mismatch in length of strides and shape");
            for (int64_t d : size) {
                if (d < 0) {
                    std::string dims;
                    for (int64_t x : size) dims += (dims.empty() ? "" : ", ") + std::to_string(x);
                    throw Error("Trying to create tensor with negative dimension " + std::to_string(d) + ": [" + dims + "]");
                }
            }
            return one(finish(a, ember::empty_strided(size, stride, options_of(a))));
        });
    def_like_factory(t, "ember.zeros_like", &zeros_like_f);
    def_like_factory(t, "ember.ones_like", &ones_like_f);
    def_like_factory(t, "ember.empty_like", &empty_like_f);
    def_like_factory(t, "ember.rand_like", &rand_like_f);
    def_like_factory(t, "ember.randn_like", &randn_like_f);
    def(t, "ember.full_like",
        "input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=ember.preserve_format, pin_memory=False",
        [](const Args& a) { return one(finish(a, ember::full_like(a.tensor("input"), a.scalar("fill_value"), options_of(a)))); });
}

void register_tensor_methods(OpTable& t) {
    def(t, "Tensor.to", "self, *args, memory_format=ember.preserve_format, **kwargs", [](const Args& a) {
        return one(tensor_to(a));
    });
    def_cast(t, "Tensor.float", kFloat);
    def_cast(t, "Tensor.double", kDouble);
    def_cast(t, "Tensor.half", kHalf);
    def_cast(t, "Tensor.long", kLong);
    def_cast(t, "Tensor.int", kInt);
    def_cast(t, "Tensor.short", kShort);
    def_cast(t, "Tensor.char", kChar);
    def_cast(t, "Tensor.byte", kByte);
    def_cast(t, "Tensor.bool", kBool);
    def(t, "Tensor.type_as", "self, other", [](const Args& a) {
        return one(a.tensor("self").to(a.tensor("other").scalar_type()));
    });
    def(t, "Tensor.type", "self, dtype=None, non_blocking=False", [](const Args& a) {
        if (a["dtype"].kind != Value::Kind::Dtype) {
            throw NotImplementedError("Tensor.type(" + describe(a["dtype"]) + "): only an ember.dtype argument is supported by "
                                      "Ember's C++ frontend");
        }
        return one(a.tensor("self").to(*a.dtype("dtype")));
    });
    def(t, "Tensor.cpu", "self, memory_format=ember.preserve_format", [](const Args& a) { return one(a.tensor("self")); });
    def(t, "Tensor.copy_", "self, src, non_blocking=False", [](const Args& a) {
        Tensor self = a.tensor("self");
        self.copy_(a.tensor("src"));
        return one(self);
    });
    def(t, "Tensor.fill_", "self, value", [](const Args& a) {
        Tensor self = a.tensor("self");
        if (a["value"].is_tensor()) self.fill_(a.tensor("value"));
        else self.fill_(a.scalar("value"));
        return one(self);
    });
    def(t, "fill", "input, value", [](const Args& a) {
        Tensor r = ember::empty_like(a.tensor("input"));
        if (a["value"].is_tensor()) r.fill_(a.tensor("value"));
        else r.fill_(a.scalar("value"));
        return one(r);
    });
    def(t, "zero_", "input", [](const Args& a) {
        Tensor self = a.tensor("input");
        self.zero_();
        return one(self);
    });
    def(t, "Tensor.zero_", "self", [](const Args& a) {
        Tensor self = a.tensor("self");
        self.zero_();
        return one(self);
    });
    def(t, "Tensor.requires_grad_", "self, requires_grad=True", [](const Args& a) {
        Tensor self = a.tensor("self");
        self.requires_grad_(a.boolean("requires_grad"));
        return one(self);
    });
    // the size as varargs or size= (Python's size_args); neither is Python's TypeError
    auto new_factory = [&t](const char* name, SizeFactory fn) {
        def(t, name, "self, *args, size=None, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False", [fn](const Args& a) {
            if (a.varargs().empty() && a.is_none("size")) {
                throw TypeError(a.op().substr(a.op().rfind('.') + 1) + "() missing 1 required positional arguments: \"size\"");
            }
            Tensor self = a.tensor("self");
            TensorOptions o = TensorOptions().dtype(a.dtype("dtype").value_or(self.scalar_type()));
            return one(finish(a, fn(size_of(a), o)));
        });
    };
    new_factory("Tensor.new_zeros", &zeros_f);
    new_factory("Tensor.new_ones", &ones_f);
    new_factory("Tensor.new_empty", &empty_f);
    def(t, "Tensor.new_full", "self, size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False",
        [](const Args& a) {
            Tensor self = a.tensor("self");
            TensorOptions o = TensorOptions().dtype(a.dtype("dtype").value_or(self.scalar_type()));
            return one(finish(a, ember::full(a.ints("size"), a.scalar("fill_value"), o)));
        });

    // in-place variants of ops of the other families (registered before this one)
    for (const char* name : {"round", "cumsum", "addmm", "addmv", "baddbmm", "selu", "celu", "threshold"}) {
        if (!t.count(std::string(name) + "_")) def_inplace_by_copy(t, name);
    }
}

}  // namespace ember::jit::detail
