// Complex tensors: views between complex and real (view_as_real / view_as_complex, real,
// imag), conj, complex(re, im), polar, and |z| / arg(z). None records autograd: a complex
// tensor cannot require grad, and a real input that does is refused (check_no_grad).
#include <cmath>
#include <complex>

#include "ember/complex.h"
#include "op_common.h"

namespace ember {

using namespace native;

namespace {

void check_no_grad(const char* op, const Tensor& a, const Tensor& b = {}) {
    if (!GradMode::is_enabled()) return;
    EMBER_CHECK(!(a.defined() && a.requires_grad()) && !(b.defined() && b.requires_grad()), op,
                ": autograd through complex tensors is not supported by Ember's C++ frontend");
}

// a and b broadcast, as contiguous tensors of dtype t.
std::pair<Tensor, Tensor> broadcast_as(const Tensor& a, const Tensor& b, ScalarType t) {
    std::vector<int64_t> shape = infer_size(a.sizes(), b.sizes());
    Tensor x = empty_tensor(shape, t), y = empty_tensor(shape, t);
    copy_kernel(x, a);
    copy_kernel(y, b);
    return {x, y};
}

// The two real inputs of complex() and polar(): both float32 or both float64.
ScalarType check_parts(const Tensor& a, const Tensor& b, const char* first, const char* second) {
    const ScalarType ta = a.scalar_type(), tb = b.scalar_type();
    EMBER_CHECK(ta == kFloat || ta == kDouble || ta == kHalf, "Expected both inputs to be Half, Float or Double tensors but got ",
                scalar_type_name(ta), " and ", scalar_type_name(tb));
    EMBER_CHECK(tb == kFloat || tb == kDouble || tb == kHalf, "Expected both inputs to be Half, Float or Double tensors but got ",
                scalar_type_name(ta), " and ", scalar_type_name(tb));
    EMBER_CHECK(ta == tb, "Expected object of scalar type ", scalar_type_name(ta), " but got scalar type ",
                scalar_type_name(tb), " for second argument");
    EMBER_CHECK(ta != kHalf, "\"", first, "\" not implemented for 'ComplexHalf' (Ember has no complex32; ", second,
                " takes float32 or float64 parts)");
    return ta;
}

// out[i] = f(a[i], b[i]) over broadcast float64 copies, rounded to complex `out`.
template <typename F>
Tensor make_complex(const Tensor& a, const Tensor& b, ScalarType out, F f) {
    auto [x, y] = broadcast_as(a, b, kDouble);
    Tensor r = empty_tensor(x.sizes(), kComplexDouble);
    const double* px = x.data_ptr<double>();
    const double* py = y.data_ptr<double>();
    auto* pr = r.data_ptr<std::complex<double>>();
    for (int64_t i = 0, n = r.numel(); i < n; ++i) pr[i] = f(px[i], py[i]);
    return cast(r, out);
}

// out[i] = f(z[i]) (a real result) over a complex128 copy, rounded to `out`.
template <typename F>
Tensor complex_to_real(const Tensor& z, F f) {
    Tensor c = contiguous_data(cast(z, kComplexDouble));
    Tensor r = empty_tensor(c.sizes(), kDouble);
    const auto* pc = c.data_ptr<std::complex<double>>();
    double* pr = r.data_ptr<double>();
    for (int64_t i = 0, n = r.numel(); i < n; ++i) pr[i] = f(pc[i]);
    Tensor out = empty_tensor(c.sizes(), to_real_type(z.scalar_type()));
    copy_kernel(out, r);
    return out;
}

}  // namespace

Tensor view_as_real(const Tensor& self) {
    EMBER_CHECK(self.is_complex(), "view_as_real is only supported for complex tensors");
    std::vector<int64_t> sizes = self.sizes().vec(), strides;
    for (int64_t s : self.strides()) strides.push_back(2 * s);
    sizes.push_back(2);
    strides.push_back(1);
    return make_view(self, sizes, strides, 2 * self.storage_offset(), to_real_type(self.scalar_type()));
}

Tensor view_as_complex(const Tensor& self) {
    const ScalarType t = self.scalar_type();
    EMBER_CHECK(t == kFloat || t == kDouble || t == kHalf,
                "view_as_complex is only supported for floating point tensors, but got a tensor of scalar type: ",
                scalar_type_name(t));
    EMBER_CHECK(t != kHalf, "view_as_complex of a Half tensor: Ember has no complex32");
    EMBER_CHECK(self.dim() != 0, "Input tensor must have one or more dimensions");
    EMBER_CHECK(self.size(-1) == 2, "Tensor must have a last dimension of size 2");
    EMBER_CHECK(self.stride(-1) == 1, "Tensor must have a last dimension with stride 1");
    std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end() - 1), strides;
    for (int64_t i = 0; i + 1 < self.dim(); ++i) {
        EMBER_CHECK(self.stride(i) % 2 == 0, "Tensor must have a stride divisible by 2 for all but last dimension");
        strides.push_back(self.stride(i) / 2);
    }
    EMBER_CHECK(self.storage_offset() % 2 == 0, "Tensor must have a storage_offset divisible by 2");
    return make_view(self, sizes, strides, self.storage_offset() / 2, to_complex_type(t));
}

Tensor real(const Tensor& self) {
    if (!self.is_complex()) return self;
    return view_as_real(self).select(-1, 0);
}

Tensor imag(const Tensor& self) {
    EMBER_CHECK(self.is_complex(), "imag is not implemented for tensors with non-complex dtypes.");
    return view_as_real(self).select(-1, 1);
}

Tensor conj_physical(const Tensor& self) {
    if (!self.is_complex()) return self;
    Tensor out = empty_tensor(self.sizes(), self.scalar_type());
    copy_kernel(out, self);
    Tensor im = view_as_real(out).select(-1, 1);
    NoGradGuard g;
    im.mul_(-1);
    return out;
}

Tensor conj(const Tensor& self) { return conj_physical(self); }

Tensor complex(const Tensor& re, const Tensor& im) {
    const ScalarType t = check_parts(re, im, "complex_cpu", "complex");
    check_no_grad("complex", re, im);
    return make_complex(re, im, to_complex_type(t), [](double a, double b) { return std::complex<double>(a, b); });
}

Tensor polar(const Tensor& abs, const Tensor& angle) {
    const ScalarType t = check_parts(abs, angle, "polar_cpu", "polar");
    check_no_grad("polar", abs, angle);
    return make_complex(abs, angle, to_complex_type(t), [](double r, double a) { return std::polar(r, a); });
}

Tensor complex_abs(const Tensor& self) {
    EMBER_CHECK(self.is_complex(), "complex_abs expects a complex tensor, got ", scalar_type_name(self.scalar_type()));
    return complex_to_real(self, [](std::complex<double> z) { return std::abs(z); });
}

Tensor complex_angle(const Tensor& self) {
    EMBER_CHECK(self.is_complex(), "complex_angle expects a complex tensor, got ", scalar_type_name(self.scalar_type()));
    return complex_to_real(self, [](std::complex<double> z) { return std::arg(z); });
}

}  // namespace ember
