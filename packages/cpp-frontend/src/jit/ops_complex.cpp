// The complex dtypes in the C++ op table: the FFTs (fft_fft ... fft_ihfftn), stft/istft,
// complex, polar, view_as_complex, the complex family (view_as_real, real, imag, conj,
// conj_physical, resolve_conj, resolve_neg, angle, isreal), arithmetic, pointwise functions,
// comparisons (eq, ne), selects, reductions and variances, products and the LDL^T family on
// complex tensors (the library's kernels, which take them), ops_more5.cpp's complex linear
// algebra (solves, inverses, determinants, the SVD and the norms through it), complex alpha /
// beta of the addmm family, the in-place twins of the ops with complex bodies, and the
// dtype-agnostic ops (views, copies, cat, roll, fftshift, ...) that take complex tensors
// unchanged.
//
// Registered last (op_table.cpp): def_complex gives an op registered before a second body
// for calls with a complex argument, real calls still reach the first. Every op not marked
// here refuses complex arguments with PyTorch's '"<op>" not implemented for 'ComplexFloat''
// (op_table.cpp, refuse_complex), so a real-only body never computes on real parts alone.
#include <cmath>
#include <complex>
#include <limits>

#include "ember/complex.h"
#include "ember/error.h"
#include "ember/fft.h"
#include "jit/ops_common.h"

namespace ember::jit::detail {

namespace {

using cd = std::complex<double>;

bool complex_value(const Value& v) {
    if (v.kind == Value::Kind::Complex) return true;
    if (v.is_tensor()) return v.tensor.defined() && v.tensor.is_complex();
    for (const Value& item : v.items) {
        if (complex_value(item)) return true;
    }
    return false;
}

bool complex_call(const std::vector<Value>& args, const Kwargs& kwargs) {
    for (const Value& v : args) {
        if (complex_value(v)) return true;
    }
    for (const auto& kv : kwargs) {
        if (complex_value(kv.second)) return true;
    }
    return false;
}

// Gives `name` (registered before) a body for calls with a complex argument.
void def_complex(OpTable& t, const std::string& name, std::function<OpResult(const Args&)> body) {
    auto it = t.find(name);
    if (it == t.end()) throw std::logic_error("ember::jit: def_complex of unknown op " + name);
    const Signature* sig = &it->second.signature;
    const std::string* op = &it->first;
    OpFn real_body = std::move(it->second.fn);
    it->second.fn = [sig, op, real_body, body = std::move(body)](const std::vector<Value>& args, const Kwargs& kwargs) {
        if (!complex_call(args, kwargs)) return real_body(args, kwargs);
        return body(Args(*sig, args, kwargs, *op));
    };
    it->second.complex_ok = true;
}

// A new op that takes complex arguments.
void def_c(OpTable& t, const std::string& name, const std::string& signature, std::function<OpResult(const Args&)> body) {
    def(t, name, signature, std::move(body));
    allow_complex(t, name);
}

// A Python complex number next to a tensor: a 0-d tensor of the complex dtype PyTorch gives
// (a complex tensor's own, a float tensor's complex counterpart, else the default's).
Tensor wrap_complex(const Value& v, const Tensor& like) {
    ScalarType t = like.scalar_type();
    if (!is_complex(t)) t = to_complex_type(is_floating_point(t) && t != kHalf ? t : get_default_dtype());
    Tensor z = ember::empty({}, kComplexDouble);
    *z.data_ptr<cd>() = cd(v.f, v.im);
    return z.to(t);
}

// An operand of a binary op as a tensor: tensors as they are, numbers wrapped next to `like`.
Tensor operand(const Args& a, const char* name, const Tensor& like) {
    const Value& v = a[name];
    if (v.is_tensor()) return v.tensor;
    if (v.kind == Value::Kind::Complex) return wrap_complex(v, like);
    return wrap_number(a.scalar(name), like);
}

// The binary op's two operands (at least one is a tensor).
std::pair<Tensor, Tensor> operands(const Args& a, const char* lhs, const char* rhs) {
    const Value& x = a[lhs];
    const Value& y = a[rhs];
    if (!x.is_tensor() && !y.is_tensor()) a.type_error(lhs, "Tensor");
    const Tensor& like = x.is_tensor() ? x.tensor : y.tensor;
    return {operand(a, lhs, like), operand(a, rhs, like)};
}

// A real dtype's C++ element type as PyTorch's conversion errors name it.
const char* element_type_name(ScalarType t) {
    switch (t) {
        case kDouble: return "double";
        case kHalf: return "c10::Half";
        case kLong: return "int64_t";
        case kInt: return "int";
        case kShort: return "int16_t";
        case kChar: return "int8_t";
        case kByte: return "uint8_t";
        default: return "float";
    }
}

// `out=` of an FFT: a complex result needs a complex out (PyTorch's message), then to_out.
Tensor fft_out(const Args& a, const std::string& fname, Tensor result) {
    if (a.has("out") && !a.is_none("out") && result.is_complex() && !a.tensor("out").is_complex()) {
        throw Error(fname + " expects a complex output tensor, but got " +
                    std::string(scalar_type_name(a.tensor("out").scalar_type())));
    }
    return to_out(a, std::move(result));
}

Tensor same_dtype_out(const Args& a, Tensor result) {
    if (a.has("out") && !a.is_none("out") && a.tensor("out").scalar_type() != result.scalar_type()) {
        throw Error("Expected object of scalar type " + std::string(scalar_type_name(result.scalar_type())) +
                    " but got scalar type " + std::string(scalar_type_name(a.tensor("out").scalar_type())) +
                    " for argument 'out'");
    }
    return to_out(a, std::move(result));
}

void check_fft_input(const Args& a) {
    if (!a["input"].is_tensor()) {
        throw TypeError(a.op() + "(): argument 'input' (position 1) must be Tensor, not " + type_name(a["input"]));
    }
}

fft::OptionalInts optional_dims(const Args& a, const char* name) {
    if (a.is_none(name)) return std::nullopt;
    return a.ints(name);
}

void register_ffts(OpTable& t) {
    using Fn1 = Tensor (*)(const Tensor&, fft::OptionalInt, int64_t, fft::OptionalNorm);
    static const std::pair<const char*, Fn1> one_d[] = {
        {"fft", &fft::fft},   {"ifft", &fft::ifft},   {"rfft", &fft::rfft},
        {"irfft", &fft::irfft}, {"hfft", &fft::hfft}, {"ihfft", &fft::ihfft},
    };
    for (const auto& [name, fn] : one_d) {
        const std::string fname = name;
        def_c(t, "fft_" + fname, "input, n=None, dim=-1, norm=None, *, out=None", [fn = fn, fname](const Args& a) {
            check_fft_input(a);
            return one(fft_out(a, fname, fn(a.tensor("input"), a.optional_integer("n"), a.integer("dim"),
                                             a.optional_string("norm"))));
        });
    }
    using FnN = Tensor (*)(const Tensor&, fft::OptionalInts, fft::OptionalInts, fft::OptionalNorm);
    static const std::pair<const char*, FnN> n_d[] = {
        {"fft", &fft::fftn},   {"ifft", &fft::ifftn},   {"rfft", &fft::rfftn},
        {"irfft", &fft::irfftn}, {"hfft", &fft::hfftn}, {"ihfft", &fft::ihfftn},
    };
    for (const auto& [name, fn] : n_d) {
        const std::string base = name;
        for (const bool two : {false, true}) {
            const std::string fname = base + (two ? "2" : "n");
            const std::string sig = std::string("input, s=None, dim=") + (two ? "(-2, -1)" : "None") +
                                    ", norm=None, *, out=None";
            def_c(t, "fft_" + fname, sig, [fn = fn, fname](const Args& a) {
                check_fft_input(a);
                return one(fft_out(a, fname, fn(a.tensor("input"), optional_dims(a, "s"), optional_dims(a, "dim"),
                                                 a.optional_string("norm"))));
            });
        }
    }
}

// The arguments stft and istft share: the frames, the window and the normalization.
template <typename Options>
Options window_options(const Args& a) {
    Options o;
    o.hop_length = a.optional_integer("hop_length");
    o.win_length = a.optional_integer("win_length");
    o.window = a.optional_tensor("window");
    o.center = a.boolean("center");
    o.normalized = a.boolean("normalized");
    if (!a.is_none("onesided")) o.onesided = a.boolean("onesided");
    return o;
}

void register_stft(OpTable& t) {
    def_c(t, "stft",
          "input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode='reflect', "
          "normalized=False, onesided=None, return_complex=None, align_to_window=None",
          [](const Args& a) {
              auto o = window_options<StftOptions>(a);
              o.pad_mode = a.string("pad_mode");
              if (!a.is_none("return_complex")) o.return_complex = a.boolean("return_complex");
              if (!a.is_none("align_to_window")) o.align_to_window = a.boolean("align_to_window");
              return one(ember::stft(a.tensor("input"), a.integer("n_fft"), o));
          });
    def_c(t, "istft",
          "input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False, "
          "onesided=None, length=None, return_complex=False",
          [](const Args& a) {
              auto o = window_options<IstftOptions>(a);
              o.length = a.optional_integer("length");
              o.return_complex = a.boolean("return_complex");
              return one(ember::istft(a.tensor("input"), a.integer("n_fft"), o));
          });
}

// The complex family: on a real tensor what PyTorch does for one (most are identities).
void register_family(OpTable& t) {
    // out= of the result's dtype only (PyTorch's kernels; Python's _write_same_dtype)
    def_c(t, "complex", "real, imag, *, out=None", [](const Args& a) {
        return one(same_dtype_out(a, ember::complex(a.tensor("real"), a.tensor("imag"))));
    });
    def_c(t, "polar", "abs, angle, *, out=None", [](const Args& a) {
        return one(same_dtype_out(a, ember::polar(a.tensor("abs"), a.tensor("angle"))));
    });
    def_c(t, "view_as_complex", "input", [](const Args& a) { return one(ember::view_as_complex(a.tensor("input"))); });
    def_c(t, "view_as_real", "input", [](const Args& a) { return one(ember::view_as_real(a.tensor("input"))); });
    def_c(t, "real", "input", [](const Args& a) { return one(ember::real(a.tensor("input"))); });
    def_c(t, "imag", "input", [](const Args& a) { return one(ember::imag(a.tensor("input"))); });
    // conj is a lazy view in PyTorch; here a copy (resolve_conj then has nothing to resolve)
    for (const char* name : {"conj", "conj_physical"}) {
        def_c(t, name, "input", [](const Args& a) { return one(ember::conj_physical(a.tensor("input"))); });
    }
    def_c(t, "conj_physical_", "input", [](const Args& a) {
        Tensor x = a.tensor("input");
        if (x.is_complex()) x.copy_(ember::conj_physical(x));
        return one(x);
    });
    for (const char* name : {"resolve_conj", "resolve_neg"}) {
        def_c(t, name, "input", [](const Args& a) { return one(a.tensor("input")); });
    }
    def_c(t, "angle", "input", [](const Args& a) {
        Tensor x = a.tensor("input");
        if (x.is_complex()) return one(ember::complex_angle(x));
        return one(map_float(x, [](double v) { return std::isnan(v) ? v : (v < 0 ? M_PI : 0.0); }));
    });
    def_c(t, "Tensor.cfloat", "self, *, memory_format=ember.preserve_format", [](const Args& a) { return one(a.tensor("self").to(kComplexFloat)); });
    def_c(t, "Tensor.cdouble", "self, *, memory_format=ember.preserve_format", [](const Args& a) { return one(a.tensor("self").to(kComplexDouble)); });
    def_c(t, "isreal", "input", [](const Args& a) {
        Tensor x = a.tensor("input");
        if (x.is_complex()) return one(ember::imag(x) == 0);
        return one(ember::ones(x.sizes(), kBool));
    });
}

// Arithmetic and pointwise functions with a complex argument (real calls keep their bodies).
void register_complex_math(OpTable& t) {
    def_complex(t, "add", [](const Args& a) {
        auto [x, y] = operands(a, "input", "other");
        return one(to_out(a, ember::add(x, y, a.scalar("alpha"))));
    });
    def_complex(t, "sub", [](const Args& a) {
        auto [x, y] = operands(a, "input", "other");
        return one(to_out(a, ember::sub(x, y, a.scalar("alpha"))));
    });
    def_complex(t, "rsub", [](const Args& a) {
        auto [x, y] = operands(a, "input", "other");
        return one(ember::sub(y, x, a.scalar("alpha")));
    });
    def_complex(t, "mul", [](const Args& a) {
        auto [x, y] = operands(a, "input", "other");
        return one(ember::mul(x, y));
    });
    def_complex(t, "div", [](const Args& a) {
        auto [x, y] = operands(a, "input", "other");
        if (!a.is_none("rounding_mode")) {
            const std::string mode = a.string("rounding_mode");
            throw Error("\"div_" + mode + "_cpu\" not implemented for '" +
                        std::string(scalar_type_name(ember::result_type(x, y))) + "'");
        }
        return one(to_out(a, ember::div(x, y)));
    });
    def_complex(t, "true_divide", [](const Args& a) {
        auto [x, y] = operands(a, "input", "other");
        return one(ember::div(x, y));
    });
    def_complex(t, "abs", [](const Args& a) { return one(ember::complex_abs(a.tensor("input"))); });
    // the library's pointwise functions take complex tensors (computed in their dtype, as PyTorch)
    struct Fn {
        const char* name;
        Tensor (*f)(const Tensor&);
    };
    static const Fn fns[] = {
        {"neg", &ember::neg},       {"exp", &ember::exp},         {"exp2", &ember::exp2},   {"log", &ember::log},
        {"log2", &ember::log2},     {"log10", &ember::log10},     {"log1p", &ember::log1p}, {"expm1", &ember::expm1},
        {"sqrt", &ember::sqrt},     {"rsqrt", &ember::rsqrt},     {"sin", &ember::sin},     {"cos", &ember::cos},
        {"tan", &ember::tan},       {"tanh", &ember::tanh},       {"sinh", &ember::sinh},   {"cosh", &ember::cosh},
        {"sigmoid", &ember::sigmoid}, {"reciprocal", &ember::reciprocal}, {"square", &ember::square},
        {"sgn", &ember::sgn},
    };
    for (const Fn& fn : fns) {
        Tensor (*f)(const Tensor&) = fn.f;
        def_complex(t, fn.name, [f](const Args& a) { return one(f(a.tensor("input"))); });
    }
    // comparisons: eq and ne take complex numbers; the orderings give PyTorch's
    // '"lt_cpu" not implemented for 'ComplexFloat''
    using Compare = Tensor (*)(const Tensor&, const Tensor&);
    static const std::pair<const char*, Compare> compares[] = {
        {"eq", &ember::eq}, {"ne", &ember::ne}, {"lt", &ember::lt}, {"le", &ember::le}, {"gt", &ember::gt}, {"ge", &ember::ge},
    };
    for (const auto& [name, fn] : compares) {
        Compare f = fn;
        def_complex(t, name, [f](const Args& a) {
            auto [x, y] = operands(a, "input", "other");
            return one(f(x, y));
        });
    }
    def_complex(t, "pow", [](const Args& a) {
        auto [x, y] = operands(a, "input", "exponent");
        return one(ember::pow(x, y));
    });
    def_complex(t, "where", [](const Args& a) -> OpResult {
        const Tensor cond = a.tensor("condition");
        if (a.is_none("input") && a.is_none("other")) return ember::unbind(ember::nonzero(cond), 1);
        // two numbers: wrapped next to a 0-d tensor of the default dtype
        const Tensor like = a["input"].is_tensor() ? a.tensor("input")
                            : a["other"].is_tensor() ? a.tensor("other") : ember::empty({}, get_default_dtype());
        return one(ember::where(cond, operand(a, "input", like), operand(a, "other", like)));
    });
    for (const bool inplace : {false, true}) {
        def_complex(t, inplace ? "masked_fill_" : "masked_fill", [inplace](const Args& a) {
            Tensor x = a.tensor("input");
            const Tensor mask = a.tensor("mask");
            const Value& v = a["value"];
            if (v.kind == Value::Kind::Complex && !x.is_complex() && x.scalar_type() != kBool) {
                throw Error(std::string("value cannot be converted to type ") + element_type_name(x.scalar_type()) +
                            " without overflow");
            }
            const Tensor value = v.is_tensor() ? v.tensor : operand(a, "value", x);
            if (inplace) {
                x.masked_fill_(mask, value);
                return one(x);
            }
            return one(ember::masked_fill(x, mask, value));
        });
    }
    // the conjugate transposes (real tensors: the transposes)
    for (const std::string name : {"Tensor.mH", "adjoint"}) {
        const std::string what = name == "adjoint" ? "tensor.adjoint()" : "tensor.mH";
        def_complex(t, name, [what](const Args& a) {
            const Tensor x = a[a.has("self") ? "self" : "input"].tensor;
            if (x.dim() < 2) {
                throw Error(what + " is only supported on matrices or batches of matrices. Got " +
                            std::to_string(x.dim()) + "-D tensor.");
            }
            return one(ember::conj_physical(x.transpose(-2, -1)));
        });
    }
    def_complex(t, "vdot", [](const Args& a) { return one(ember::vdot(a.tensor("input"), a.tensor("other"))); });
    def_complex(t, "cumprod", [](const Args& a) {
        return one(ember::cumprod(a.tensor("input"), a.integer("dim"), a.dtype("dtype")));
    });
}

// beta * input + alpha * product with Python numbers alpha and beta, complex ones too (the
// addmm family's scalars; beta == 0 ignores input, its NaNs too, as PyTorch's). A complex
// scalar needs a complex product: else PyTorch's "value cannot be converted" error.
Tensor scaled_sum(const Args& a, const Tensor& input, const Tensor& product) {
    auto equals = [&](const char* name, double x) {
        const Value& v = a[name];
        if (v.kind == Value::Kind::Complex) return v.f == x && v.im == 0;
        return a.scalar(name).toDouble() == x;
    };
    for (const char* name : {"beta", "alpha"}) {
        if (a[name].kind == Value::Kind::Complex && !product.is_complex()) {
            throw Error(std::string("value cannot be converted to type ") + element_type_name(product.scalar_type()) +
                        " without overflow");
        }
    }
    Tensor r = equals("alpha", 1) ? product : product * operand(a, "alpha", product);
    if (equals("beta", 0)) return r;
    const Tensor x = input.expand(shape_of(r));
    return r + (equals("beta", 1) ? x : x * operand(a, "beta", product));
}

// addmm / addmv / baddbmm / addbmm: calls with a complex alpha or beta compute
// alpha * product + beta * input (scaled_sum), the others keep the op's body (which takes
// complex tensors). `product` gets the bound arguments and the op's own body.
using Product = std::function<Tensor(const Args&, const OpFn&, const std::vector<Value>&, const Kwargs&)>;
void def_complex_scalars(OpTable& t, const std::string& name, const char* input, Product product) {
    auto it = t.find(name);
    if (it == t.end()) throw std::logic_error("ember::jit: def_complex_scalars of unknown op " + name);
    const Signature* sig = &it->second.signature;
    const std::string* op = &it->first;
    OpFn body = std::move(it->second.fn);
    it->second.fn = [sig, op, body, input, product = std::move(product)](const std::vector<Value>& args, const Kwargs& kwargs) {
        const Args a(*sig, args, kwargs, *op);
        if (a["alpha"].kind != Value::Kind::Complex && a["beta"].kind != Value::Kind::Complex) return body(args, kwargs);
        return one(scaled_sum(a, a.tensor(input), product(a, body, args, kwargs)));
    };
    it->second.complex_ok = true;
}

// The op's own body with alpha = 1 and beta = 0: its product, with its checks and messages.
Tensor product_of_body(const OpFn& body, const std::vector<Value>& args, Kwargs kwargs) {
    kwargs.insert_or_assign("alpha", Value::integer(1));
    kwargs.insert_or_assign("beta", Value::integer(0));
    return body(args, kwargs).at(0);
}

void register_complex_scalars(OpTable& t) {
    def_complex_scalars(t, "addmm", "input", [](const Args&, const OpFn& body, const std::vector<Value>& args, const Kwargs& kw) {
        return product_of_body(body, args, kw);
    });
    def_complex_scalars(t, "addbmm", "input", [](const Args&, const OpFn& body, const std::vector<Value>& args, const Kwargs& kw) {
        return product_of_body(body, args, kw);
    });
    def_complex_scalars(t, "addmv", "input", [](const Args& a, const OpFn&, const std::vector<Value>&, const Kwargs&) {
        return ember::mv(a.tensor("mat"), a.tensor("vec"));
    });
    def_complex_scalars(t, "baddbmm", "input", [](const Args& a, const OpFn&, const std::vector<Value>&, const Kwargs&) {
        return ember::bmm(a.tensor("batch1"), a.tensor("batch2"));
    });
}

// The in-place ops "<op>_" whose out-of-place twin takes complex arguments: a call with a
// complex argument computes the twin and writes it into self (write_into: PyTorch's "result
// type ComplexFloat can't be cast to the desired output type Float" for a real self). Real
// calls keep their bodies. Only twins whose parameters include the in-place op's.
std::vector<std::string> def_complex_inplace(OpTable& t) {
    std::vector<std::string> done;
    for (auto& [name, entry] : t) {
        if (entry.complex_ok || name.size() < 2 || name.back() != '_') continue;
        auto twin = t.find(name.substr(0, name.size() - 1));
        if (twin == t.end() || !twin->second.complex_ok) continue;
        bool same_params = !entry.signature.params().empty();
        for (const Param& p : entry.signature.params()) {
            if (twin->second.signature.index_of(p.name) < 0) same_params = false;
        }
        if (!same_params) continue;
        const Signature* sig = &entry.signature;
        const std::string* op = &name;
        OpFn real_body = std::move(entry.fn);
        const OpEntry* out_of_place = &twin->second;  // the map's nodes do not move
        entry.fn = [sig, op, real_body, out_of_place](const std::vector<Value>& args, const Kwargs& kwargs) -> OpResult {
            if (!complex_call(args, kwargs)) return real_body(args, kwargs);
            const Tensor self = Args(*sig, args, kwargs, *op).tensor(sig->params().at(0).name);
            if (*op == "abs_" && self.is_complex()) throw Error("In-place abs is not supported for complex tensors.");
            return one(write_into(self, out_of_place->fn(args, kwargs).at(0), *op));
        };
        entry.complex_ok = true;
        done.push_back(name);
    }
    return done;
}

}  // namespace

void register_complex_ops(OpTable& t) {
    register_ffts(t);
    register_stft(t);
    register_family(t);
    register_complex_math(t);
    // ops that only move, view or copy elements (their bodies go through views and copies,
    // which take every dtype) and so take complex tensors as they are
    static const char* const agnostic[] = {
        "reshape", "permute", "transpose", "t", "unsqueeze", "squeeze", "flatten", "unflatten", "narrow",
        "select", "getitem", "clone", "detach", "Tensor.T", "Tensor.mT", "cat", "stack", "flip", "movedim", "chunk", "split",
        "unbind", "Tensor.squeeze_", "Tensor.unsqueeze_", "Tensor.t_", "Tensor.transpose_",
        "Tensor.swapaxes_", "Tensor.swapdims_", "Tensor.copy_", "Tensor.zero_", "swapaxes", "swapdims", "roll", "hstack", "vstack",
        "tensor_split", "split_with_sizes", "unsafe_chunk", "fft_fftshift", "fft_ifftshift", "Tensor.to",
        "Tensor.view", "Tensor.view_as", "Tensor.contiguous", "Tensor.expand", "Tensor.type_as",
        // casts to real dtypes keep the real part (PyTorch's, which also warns)
        "Tensor.float", "Tensor.double", "Tensor.half", "Tensor.long", "Tensor.int", "Tensor.short",
        "Tensor.char", "Tensor.byte", "Tensor.bool",
        // new tensors like a complex one (a real fill value)
        "ember.zeros_like", "ember.ones_like", "ember.empty_like", "ember.full_like",
        // the library's kernels take complex tensors: reductions (a real norm), products
        // (cgemm / zgemm), tests, and LAPACK's complex LDL^T (zsytf2 / zhetf2, zsytrs / zhetrs)
        "sum", "mean", "prod", "cumsum", "norm", "linalg.vector_norm", "linalg.matrix_norm", "linalg.norm", "mm", "bmm", "matmul", "mv", "dot",
        "outer", "addmm", "addmv", "baddbmm", "linear", "isclose", "isnan", "isinf", "isfinite",
        "linalg.ldl_factor", "linalg.ldl_factor_ex", "linalg.ldl_solve",
        // variances of complex tensors (real results), and ops_more5.cpp's complex kernels:
        // pivoted LU in complex128 (solves, inverses, determinants), the complex SVD (gesdd or
        // one-sided Jacobi) and the norms and condition numbers through it
        "var", "std", "var_mean", "std_mean", "inverse", "linalg.inv", "linalg.inv_ex", "det", "linalg.det",
        "slogdet", "linalg.slogdet", "logdet", "linalg.solve", "linalg.solve_ex", "linalg.svd", "svd",
        "linalg.svdvals", "linalg.cond",
    };
    std::string missing;
    for (const char* name : agnostic) {
        if (t.count(name)) allow_complex(t, name);
        else missing += std::string(missing.empty() ? "" : ", ") + name;
    }
    if (!missing.empty()) throw std::logic_error("ember::jit: allow_complex of unknown ops " + missing);
    register_complex_scalars(t);
    def_complex_inplace(t);  // last: every out-of-place op's complex body is known
}

}  // namespace ember::jit::detail
