// Factories (ember.zeros, ember.arange, ... recorded when a size is symbolic) and the
// Tensor methods that are not registry ops (Tensor.to, Tensor.float, Tensor.copy_,
// Tensor.new_zeros, ...) of the C++ op table.
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
    def(t, name, "input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=ember.preserve_format",
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

void def_cast(OpTable& t, const char* name, ScalarType dtype) {
    def(t, name, "self", [dtype](const Args& a) { return one(a.tensor("self").to(dtype)); });
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
    def_like_factory(t, "ember.zeros_like", &zeros_like_f);
    def_like_factory(t, "ember.ones_like", &ones_like_f);
    def_like_factory(t, "ember.empty_like", &empty_like_f);
    def_like_factory(t, "ember.rand_like", &rand_like_f);
    def_like_factory(t, "ember.randn_like", &randn_like_f);
    def(t, "ember.full_like",
        "input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=ember.preserve_format",
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
    auto new_factory = [&t](const char* name, SizeFactory fn) {
        def(t, name, "self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False", [fn](const Args& a) {
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
