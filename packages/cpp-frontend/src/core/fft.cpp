// torch.fft and stft/istft (include/ember/fft.h) over one FFT engine: an iterative radix-2
// transform for powers of two, a recursive mixed-radix one for lengths whose prime factors
// are at most 13, and Bluestein's chirp-z transform (three power-of-two transforms) for every
// other length, all in double precision. The public functions follow
// Python Ember's ember/ops/fft_ops.py (PyTorch's semantics) through three primitives:
// c2c (complex to complex over some dims), r2c (real to complex, one-sided or full) and c2r
// (a one-sided Hermitian spectrum to real).
#include "ember/fft.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>

#include "ember/complex.h"
#include "op_common.h"

namespace ember {

using namespace native;
using cd = std::complex<double>;

namespace fft {
namespace {

constexpr double kPi = 3.141592653589793238462643383279502884;

bool is_pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// a * b without the C library's NaN/inf recovery (__muldc3, which std::complex's operator*
// calls and which dominates a transform's time); finite inputs give the same result.
inline cd mul(cd a, cd b) {
    return cd(a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real());
}

// A radix-2 plan: the bit-reversal permutation and the twiddles exp(-2 pi i k / n), k < n/2.
struct Radix2 {
    int64_t n = 0;
    std::vector<int64_t> rev;
    std::vector<cd> twiddle;

    explicit Radix2(int64_t size) : n(size), rev(static_cast<size_t>(size)), twiddle(static_cast<size_t>(size / 2)) {
        int bits = 0;
        while ((int64_t{1} << bits) < n) ++bits;
        for (int64_t i = 0; i < n; ++i) {
            int64_t r = 0;
            for (int b = 0; b < bits; ++b) r |= ((i >> b) & 1) << (bits - 1 - b);
            rev[static_cast<size_t>(i)] = r;
        }
        for (int64_t k = 0; k < n / 2; ++k) {
            const double a = -2.0 * kPi * static_cast<double>(k) / static_cast<double>(n);
            twiddle[static_cast<size_t>(k)] = cd(std::cos(a), std::sin(a));
        }
    }

    void run(cd* x, bool forward) const {
        for (int64_t i = 0; i < n; ++i) {
            const int64_t r = rev[static_cast<size_t>(i)];
            if (i < r) std::swap(x[i], x[r]);
        }
        for (int64_t len = 2; len <= n; len <<= 1) {
            const int64_t half = len / 2, step = n / len;
            for (int64_t start = 0; start < n; start += len) {
                for (int64_t k = 0; k < half; ++k) {
                    cd w = twiddle[static_cast<size_t>(k * step)];
                    if (!forward) w = std::conj(w);
                    const cd u = x[start + k], v = mul(x[start + k + half], w);
                    x[start + k] = u + v;
                    x[start + k + half] = u - v;
                }
            }
        }
    }
};

// Bluestein: X[k] = conj(c[k]) * sum_j (x[j] conj(c[j])) c[k - j], c[m] = exp(i pi m^2 / n):
// a convolution of length m >= 2n - 1 done by power-of-two FFTs.
struct Bluestein {
    int64_t n = 0, m = 0;
    std::shared_ptr<const Radix2> inner;
    std::vector<cd> chirp;     // exp(-i pi k^2 / n), k < n
    std::vector<cd> kernel_f;  // the FFT of the conjugate chirp, wrapped to length m

    explicit Bluestein(int64_t size) : n(size) {
        m = 1;
        while (m < 2 * n - 1) m <<= 1;
        inner = std::make_shared<Radix2>(m);
        chirp.resize(static_cast<size_t>(n));
        int64_t k2 = 0;  // k^2 mod 2n (kept exact and small: k^2 = (k - 1)^2 + 2k - 1)
        for (int64_t k = 0; k < n; ++k) {
            if (k > 0) k2 = (k2 + 2 * k - 1) % (2 * n);
            const double a = -kPi * static_cast<double>(k2) / static_cast<double>(n);
            chirp[static_cast<size_t>(k)] = cd(std::cos(a), std::sin(a));
        }
        kernel_f.assign(static_cast<size_t>(m), cd(0, 0));
        kernel_f[0] = std::conj(chirp[0]);
        for (int64_t k = 1; k < n; ++k) {
            kernel_f[static_cast<size_t>(k)] = kernel_f[static_cast<size_t>(m - k)] = std::conj(chirp[static_cast<size_t>(k)]);
        }
        inner->run(kernel_f.data(), true);
    }

    void run(cd* x, bool forward) const {
        std::vector<cd> a(static_cast<size_t>(m), cd(0, 0));
        for (int64_t k = 0; k < n; ++k) {
            const cd c = forward ? chirp[static_cast<size_t>(k)] : std::conj(chirp[static_cast<size_t>(k)]);
            a[static_cast<size_t>(k)] = mul(x[k], c);
        }
        inner->run(a.data(), true);
        for (int64_t k = 0; k < m; ++k) {
            const cd kf = forward ? kernel_f[static_cast<size_t>(k)]
                                  // the inverse's kernel is the conjugate chirp's conjugate:
                                  // its FFT is conj(kernel_f) reversed
                                  : std::conj(kernel_f[static_cast<size_t>((m - k) % m)]);
            a[static_cast<size_t>(k)] = mul(a[static_cast<size_t>(k)], kf);
        }
        inner->run(a.data(), false);
        const double inv_m = 1.0 / static_cast<double>(m);
        for (int64_t k = 0; k < n; ++k) {
            const cd c = forward ? chirp[static_cast<size_t>(k)] : std::conj(chirp[static_cast<size_t>(k)]);
            x[k] = mul(a[static_cast<size_t>(k)], c) * inv_m;
        }
    }
};

// Mixed radix for lengths whose prime factors are all small (<= 13): recursive decimation
// in time, one radix-p butterfly per factor p, twiddles exp(-2 pi i j / n) from one table.
struct MixedRadix {
    static constexpr int64_t kLargestFactor = 13;
    int64_t n = 0;
    std::vector<int64_t> factors;
    std::vector<cd> twiddle;          // exp(-2 pi i j / n), j < n
    std::vector<cd> twiddle_inverse;  // their conjugates

    static std::vector<int64_t> factorize(int64_t n) {
        std::vector<int64_t> f;
        for (int64_t p : {4, 2, 3, 5, 7, 11, 13}) {
            while (n % p == 0) {
                f.push_back(p);
                n /= p;
            }
        }
        if (n != 1) f.clear();  // a larger prime factor: not for this plan
        return f;
    }

    explicit MixedRadix(int64_t size) : n(size), factors(factorize(size)), twiddle(static_cast<size_t>(size)) {
        for (int64_t j = 0; j < n; ++j) {
            const double a = -2.0 * kPi * static_cast<double>(j) / static_cast<double>(n);
            twiddle[static_cast<size_t>(j)] = cd(std::cos(a), std::sin(a));
        }
        for (const cd& w : twiddle) twiddle_inverse.push_back(std::conj(w));
    }

    // out[0 .. len) = DFT of in[0], in[stride], ... (len points); `level` indexes factors.
    void rec(const cd* in, int64_t stride, cd* out, int64_t len, size_t level, bool forward, cd* scratch) const {
        if (len == 1) {
            out[0] = in[0];
            return;
        }
        const int64_t p = factors[level], m = len / p;
        for (int64_t q = 0; q < p; ++q) rec(in + q * stride, stride * p, out + q * m, m, level + 1, forward, scratch);
        const int64_t step = n / len;  // twiddle of this level: W_len^x = W_n^(x * step)
        const int64_t root = n / p;    // W_p = W_n^(n / p)
        const std::vector<cd>& tw = forward ? twiddle : twiddle_inverse;
        for (int64_t k = 0; k < m; ++k) {
            for (int64_t q = 0; q < p; ++q) {  // q k step < n: no reduction needed
                scratch[q] = mul(out[q * m + k], tw[static_cast<size_t>(q * k * step)]);
            }
            for (int64_t r = 0; r < p; ++r) {
                cd acc = scratch[0];
                int64_t qr = 0;  // q r mod p
                for (int64_t q = 1; q < p; ++q) {
                    qr += r;
                    if (qr >= p) qr -= p;
                    acc += mul(scratch[q], tw[static_cast<size_t>(qr * root)]);
                }
                out[k + r * m] = acc;
            }
        }
    }

    void run(cd* x, bool forward) const {
        std::vector<cd> in(x, x + n), scratch(static_cast<size_t>(kLargestFactor));
        rec(in.data(), 1, x, n, 0, forward, scratch.data());
    }
};

// Plans are cached by length (a few per program; guarded for concurrent callers).
struct PlanCache {
    std::mutex mutex;
    std::map<int64_t, std::shared_ptr<const Radix2>> radix2;
    std::map<int64_t, std::shared_ptr<const MixedRadix>> mixed;
    std::map<int64_t, std::shared_ptr<const Bluestein>> bluestein;
};

PlanCache& cache() {
    static PlanCache c;
    return c;
}

template <typename Plan>
std::shared_ptr<const Plan> plan_for(std::map<int64_t, std::shared_ptr<const Plan>>& plans, int64_t n) {
    std::lock_guard<std::mutex> lock(cache().mutex);
    auto it = plans.find(n);
    if (it != plans.end()) return it->second;
    if (plans.size() > 64) plans.clear();
    auto p = std::make_shared<const Plan>(n);
    plans.emplace(n, p);
    return p;
}

// ------------------------------------------------------------------------- primitives

// Transforms a contiguous complex128 tensor in place along `dim` (unnormalized).
void transform_dim(Tensor& t, int64_t dim, bool forward) {
    const int64_t n = t.size(dim);
    if (n <= 1 || t.numel() == 0) return;
    int64_t inner = 1;
    for (int64_t d = dim + 1; d < t.dim(); ++d) inner *= t.size(d);
    const int64_t outer = t.numel() / (n * inner);
    cd* base = t.data_ptr<cd>();
    std::vector<cd> line(static_cast<size_t>(n));
    for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
            cd* p = base + o * n * inner + i;
            for (int64_t k = 0; k < n; ++k) line[static_cast<size_t>(k)] = p[k * inner];
            detail::transform(line.data(), n, forward);
            for (int64_t k = 0; k < n; ++k) p[k * inner] = line[static_cast<size_t>(k)];
        }
    }
}

double norm_scale(const std::string& norm, bool forward, double points) {
    if (norm == "ortho") return 1.0 / std::sqrt(points);
    if (norm == "forward") return forward ? 1.0 / points : 1.0;
    return forward ? 1.0 : 1.0 / points;  // "backward"
}

// A complex128 contiguous copy of x (real or complex).
Tensor as_cd(const Tensor& x) {
    Tensor c = empty_tensor(x.sizes(), kComplexDouble);
    copy_kernel(c, x);
    return c;
}

Tensor rounded(const Tensor& c, ScalarType dtype) {
    if (dtype == kComplexDouble && c.is_contiguous()) return c;
    Tensor out = empty_tensor(c.sizes(), dtype);
    copy_kernel(out, c);
    return out;
}

void scale_in_place(Tensor& c, double s) {
    if (s == 1.0) return;
    cd* p = c.data_ptr<cd>();
    for (int64_t i = 0, n = c.numel(); i < n; ++i) p[i] *= s;
}

void scale_in_place_real(Tensor& r, double s) {
    if (s == 1.0) return;
    double* p = r.data_ptr<double>();
    for (int64_t i = 0, n = r.numel(); i < n; ++i) p[i] *= s;
}

double points_of(const Tensor& t, const std::vector<int64_t>& dims) {
    double n = 1;
    for (int64_t d : dims) n *= static_cast<double>(t.size(d));
    return n;
}

// complex -> complex over dims (forward: exp(-2 pi i jk/n)), in x's (complex) dtype.
Tensor c2c(const Tensor& x, const std::vector<int64_t>& dims, bool forward, const std::string& norm) {
    Tensor c = as_cd(x);
    for (int64_t d : dims) transform_dim(c, d, forward);
    scale_in_place(c, norm_scale(norm, forward, points_of(c, dims)));
    return rounded(c, x.scalar_type());
}

// The lines of a tensor along `dim`: `outer` blocks of `n * inner` elements, each holding
// `inner` lines of stride `inner`.
struct Lines {
    int64_t outer = 1, inner = 1;
};

Lines lines_of(const Tensor& t, int64_t dim) {
    Lines l;
    for (int64_t d = 0; d < dim; ++d) l.outer *= t.size(d);
    for (int64_t d = dim + 1; d < t.dim(); ++d) l.inner *= t.size(d);
    return l;
}

// exp(-2 pi i k / n) for k <= n / 2: the twiddles that split or join an even-length real
// transform's half-length complex one.
std::vector<cd> half_twiddles(int64_t n) {
    std::vector<cd> w(static_cast<size_t>(n / 2 + 1));
    for (int64_t k = 0; k <= n / 2; ++k) w[static_cast<size_t>(k)] = std::polar(1.0, -2.0 * kPi * static_cast<double>(k) / static_cast<double>(n));
    return w;
}

// The one-sided forward transform (n / 2 + 1 bins) of the real lines of x (double,
// contiguous) along dim, n = x.size(dim) even: the even and odd samples as one complex line of
// n / 2 points, one transform of that, then X[k] = E[k] + W^k O[k] with
// E[k] = (Z[k] + conj(Z[m - k])) / 2, O[k] = (Z[k] - conj(Z[m - k])) / 2i: half the work
// of transforming the whole line.
Tensor r2c_even_lines(const Tensor& x, int64_t dim) {
    const int64_t n = x.size(dim), m = n / 2;
    std::vector<int64_t> shape = x.sizes().vec();
    shape[static_cast<size_t>(dim)] = m + 1;
    Tensor out = empty_tensor(shape, kComplexDouble);
    if (out.numel() == 0) return out;
    const Lines l = lines_of(x, dim);
    const std::vector<cd> w = half_twiddles(n);
    std::vector<cd> z(static_cast<size_t>(m));
    const double* src = x.data_ptr<double>();
    cd* dst = out.data_ptr<cd>();
    for (int64_t o = 0; o < l.outer; ++o) {
        for (int64_t i = 0; i < l.inner; ++i) {
            const double* p = src + o * n * l.inner + i;
            cd* q = dst + o * (m + 1) * l.inner + i;
            for (int64_t k = 0; k < m; ++k) z[static_cast<size_t>(k)] = cd(p[2 * k * l.inner], p[(2 * k + 1) * l.inner]);
            detail::transform(z.data(), m, true);
            for (int64_t k = 0; k <= m; ++k) {
                const cd zk = z[static_cast<size_t>(k % m)], zc = std::conj(z[static_cast<size_t>((m - k) % m)]);
                const cd e = 0.5 * (zk + zc), od = cd(0, -0.5) * (zk - zc);
                q[k * l.inner] = e + mul(w[static_cast<size_t>(k)], od);
            }
        }
    }
    return out;
}

// The inverse of that: real lines of length n (even) along dim from the one-sided spectra
// (bins along dim; missing bins are zeros, extra ones ignored), unnormalized. The imaginary
// parts of bins 0 and n / 2 do not reach a real result (PyTorch's c2r drops them too).
Tensor c2r_even_lines(const Tensor& c, int64_t dim, int64_t n) {
    const int64_t m = n / 2, bins = c.size(dim);
    std::vector<int64_t> shape = c.sizes().vec();
    shape[static_cast<size_t>(dim)] = n;
    Tensor out = empty_tensor(shape, kDouble);
    if (out.numel() == 0) return out;
    const Lines l = lines_of(c, dim);
    const std::vector<cd> w = half_twiddles(n);
    std::vector<cd> X(static_cast<size_t>(m + 1)), z(static_cast<size_t>(m));
    const cd* src = c.data_ptr<cd>();
    double* dst = out.data_ptr<double>();
    for (int64_t o = 0; o < l.outer; ++o) {
        for (int64_t i = 0; i < l.inner; ++i) {
            const cd* p = src + o * bins * l.inner + i;
            double* q = dst + o * n * l.inner + i;
            for (int64_t k = 0; k <= m; ++k) X[static_cast<size_t>(k)] = k < bins ? p[k * l.inner] : cd(0);
            X[0] = X[0].real();
            X[static_cast<size_t>(m)] = X[static_cast<size_t>(m)].real();
            for (int64_t k = 0; k < m; ++k) {
                const cd a = X[static_cast<size_t>(k)], b = std::conj(X[static_cast<size_t>(m - k)]);  // X[k + m]
                const cd e = a + b, od = mul(a - b, std::conj(w[static_cast<size_t>(k)]));
                z[static_cast<size_t>(k)] = e + cd(-od.imag(), od.real());  // e + i od
            }
            detail::transform(z.data(), m, false);
            for (int64_t k = 0; k < m; ++k) {
                q[2 * k * l.inner] = z[static_cast<size_t>(k)].real();
                q[(2 * k + 1) * l.inner] = z[static_cast<size_t>(k)].imag();
            }
        }
    }
    return out;
}

// real -> complex, forward, over dims; onesided keeps n/2 + 1 bins of the last dim.
Tensor r2c(const Tensor& x, const std::vector<int64_t>& dims, const std::string& norm, bool onesided) {
    const int64_t last = dims.back();
    if (onesided && x.size(last) >= 2 && x.size(last) % 2 == 0) {
        // the last dim first, as half-length complex transforms; then the others on its bins
        Tensor real_x = empty_tensor(x.sizes(), kDouble);
        copy_kernel(real_x, x);
        Tensor c = r2c_even_lines(real_x, last);
        for (size_t i = 0; i + 1 < dims.size(); ++i) transform_dim(c, dims[i], true);
        scale_in_place(c, norm_scale(norm, true, points_of(x, dims)));
        return rounded(c, to_complex_type(x.scalar_type()));
    }
    Tensor c = as_cd(x);
    for (int64_t d : dims) transform_dim(c, d, true);
    scale_in_place(c, norm_scale(norm, true, points_of(c, dims)));
    if (onesided) {
        const int64_t last = dims.back();
        c = c.narrow(last, 0, c.size(last) / 2 + 1);
    }
    return rounded(c, to_complex_type(x.scalar_type()));
}

// A one-sided Hermitian spectrum (last dim: last_size / 2 + 1 bins) -> real, inverse.
Tensor c2r(const Tensor& x, const std::vector<int64_t>& dims, int64_t last_size, const std::string& norm) {
    Tensor c = as_cd(x);
    for (size_t i = 0; i + 1 < dims.size(); ++i) transform_dim(c, dims[i], false);
    const int64_t last = dims.back();
    if (last_size >= 2 && last_size % 2 == 0) {
        Tensor re = c2r_even_lines(c, last, last_size);
        scale_in_place_real(re, norm_scale(norm, false, points_of(re, dims)));
        Tensor out = empty_tensor(re.sizes(), to_real_type(x.scalar_type()));
        copy_kernel(out, re);
        return out;
    }
    std::vector<int64_t> shape = c.sizes().vec();
    const int64_t bins = shape[static_cast<size_t>(last)];
    shape[static_cast<size_t>(last)] = last_size;
    Tensor full = empty_tensor(shape, kComplexDouble, /*zero=*/true);
    int64_t inner = 1;
    for (int64_t d = last + 1; d < c.dim(); ++d) inner *= c.size(d);
    const int64_t outer = c.numel() / std::max<int64_t>(1, bins * inner);
    const cd* src = c.data_ptr<cd>();
    cd* dst = full.data_ptr<cd>();
    for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
            const cd* s = src + o * bins * inner + i;
            cd* f = dst + o * last_size * inner + i;
            for (int64_t k = 0; k < std::min(bins, last_size / 2 + 1); ++k) f[k * inner] = s[k * inner];
            for (int64_t k = 1; k < (last_size + 1) / 2; ++k) f[(last_size - k) * inner] = std::conj(s[k * inner]);
        }
    }
    transform_dim(full, last, false);
    Tensor points = full;  // for the scale: the signal sizes
    scale_in_place(full, norm_scale(norm, false, points_of(points, dims)));
    Tensor re = real(full);
    Tensor out = empty_tensor(re.sizes(), to_real_type(x.scalar_type()));
    copy_kernel(out, re);
    return out;
}

// ------------------------------------------------------------------------- arguments

std::string check_norm(const OptionalNorm& norm) {
    if (!norm) return "backward";
    EMBER_CHECK(*norm == "backward" || *norm == "forward" || *norm == "ortho", "Invalid normalization mode: \"", *norm,
                "\"");
    return *norm;
}

const std::string& swap_norm(const std::string& norm) {
    static const std::string b = "backward", f = "forward", o = "ortho";
    return norm == "backward" ? f : norm == "forward" ? b : o;
}

void check_points(int64_t n) { EMBER_CHECK(n >= 1, "Invalid number of data points (", n, ") specified"); }

int64_t wrap(const Tensor& x, int64_t d) {
    EMBER_CHECK_INDEX(x.dim() != 0, "Dimension specified as ", d, " but tensor has no dimensions");
    return wrap_dim(d, x.dim());
}

void check_no_grad(const Tensor& x, const char* fname) {
    EMBER_CHECK(!(GradMode::is_enabled() && x.requires_grad()), "fft_", fname,
                ": autograd through complex tensors is not supported by Ember's C++ frontend");
}

// PyTorch's promote_tensor_fft: complex stays, integers take the default float, Half is refused.
Tensor promote(const Tensor& x, bool require_complex) {
    const ScalarType dt = x.scalar_type();
    if (is_complex(dt)) return x;
    ScalarType target = dt;
    if (!is_floating_point(dt)) {
        target = get_default_dtype();
    } else {
        EMBER_CHECK(dt != kHalf, "Unsupported dtype Half");
    }
    if (require_complex) target = to_complex_type(target);
    return target == dt ? x : x.to(target);
}

// x zero-padded or trimmed (from the end) to sizes along dims.
Tensor resize(Tensor x, const std::vector<int64_t>& dims, const std::vector<int64_t>& sizes) {
    for (size_t i = 0; i < dims.size(); ++i) {
        const int64_t d = dims[i], n = sizes[i], have = x.size(d);
        if (n == have) continue;
        if (n < have) {
            x = x.narrow(d, 0, n);
        } else {
            std::vector<int64_t> shape = x.sizes().vec();
            shape[static_cast<size_t>(d)] = n;
            Tensor padded = empty_tensor(shape, x.scalar_type(), /*zero=*/true);
            copy_kernel(padded.narrow(d, 0, have), x);
            x = padded;
        }
    }
    return x;
}

struct ShapeDims {
    std::vector<int64_t> shape, dims;
};

// PyTorch's canonicalize_fft_shape_and_dim.
ShapeDims shape_and_dims(const Tensor& x, const OptionalInts& s, const OptionalInts& dim) {
    const int64_t nd = x.dim();
    ShapeDims r;
    if (dim) {
        for (int64_t d : *dim) r.dims.push_back(wrap(x, d));
        std::set<int64_t> seen(r.dims.begin(), r.dims.end());
        EMBER_CHECK(seen.size() == r.dims.size(), "FFT dims must be unique");
    }
    if (s) {
        EMBER_CHECK(!dim || dim->size() == s->size(), "When given, dim and shape arguments must have the same length");
        EMBER_CHECK(static_cast<int64_t>(s->size()) <= nd, "Got shape with ", s->size(),
                    " values but input tensor only has ", nd, " dimensions.");
        if (!dim) {
            for (int64_t d = nd - static_cast<int64_t>(s->size()); d < nd; ++d) r.dims.push_back(d);
        }
        for (size_t i = 0; i < s->size(); ++i) {
            const int64_t n = (*s)[i];
            r.shape.push_back(n == -1 ? x.size(r.dims[i]) : n);
        }
    } else if (!dim) {
        for (int64_t d = 0; d < nd; ++d) {
            r.dims.push_back(d);
            r.shape.push_back(x.size(d));
        }
    } else {
        for (int64_t d : r.dims) r.shape.push_back(x.size(d));
    }
    for (int64_t n : r.shape) check_points(n);
    return r;
}

// ------------------------------------------------------------------------- 1-d forms

Tensor c2c_1d(const char* fname, const Tensor& input, OptionalInt n, int64_t dim, const OptionalNorm& norm_arg,
              bool forward) {
    (void)fname;
    const std::string norm = check_norm(norm_arg);
    Tensor x = promote(input, false);
    const int64_t d = wrap(x, dim);
    const int64_t size = n ? *n : x.size(d);
    check_points(size);
    x = resize(x, {d}, {size});
    if (x.is_complex()) return c2c(x, {d}, forward, norm);
    if (forward) return r2c(x, {d}, norm, false);
    return conj_physical(r2c(x, {d}, swap_norm(norm), false));
}

Tensor r2c_1d(const char* fname, const Tensor& input, OptionalInt n, int64_t dim, const OptionalNorm& norm_arg,
              bool forward) {
    const std::string norm = check_norm(norm_arg);
    EMBER_CHECK(!input.is_complex(), fname, " expects a real input tensor, but got ", scalar_type_name(input.scalar_type()));
    Tensor x = promote(input, false);
    const int64_t d = wrap(x, dim);
    const int64_t size = n ? *n : x.size(d);
    check_points(size);
    x = resize(x, {d}, {size});
    if (forward) return r2c(x, {d}, norm, true);
    return conj_physical(r2c(x, {d}, swap_norm(norm), true));
}

Tensor c2r_1d(const Tensor& input, OptionalInt n, int64_t dim, const OptionalNorm& norm_arg, bool forward) {
    const std::string norm = check_norm(norm_arg);
    Tensor x = promote(input, true);
    const int64_t d = wrap(x, dim);
    const int64_t last = n ? *n : 2 * (x.size(d) - 1);
    check_points(last);
    x = resize(x, {d}, {last / 2 + 1});
    if (forward) return c2r(conj_physical(x), {d}, last, swap_norm(norm));
    return c2r(x, {d}, last, norm);
}

// ------------------------------------------------------------------------- n-d forms

Tensor c2c_nd(const Tensor& input, const OptionalInts& s, const OptionalInts& dim, const OptionalNorm& norm_arg,
              bool forward) {
    const std::string norm = check_norm(norm_arg);
    ShapeDims sd = shape_and_dims(input, s, dim);
    Tensor x = resize(promote(input, false), sd.dims, sd.shape);
    if (x.is_complex() || sd.dims.empty()) {
        return c2c(x.is_complex() ? x : x.to(to_complex_type(x.scalar_type())), sd.dims, forward, norm);
    }
    if (forward) return r2c(x, sd.dims, norm, false);
    return conj_physical(r2c(x, sd.dims, swap_norm(norm), false));
}

Tensor r2c_nd(const char* fname, const Tensor& input, const OptionalInts& s, const OptionalInts& dim,
              const OptionalNorm& norm_arg, bool forward) {
    const std::string norm = check_norm(norm_arg);
    EMBER_CHECK(!(forward && input.is_complex()), fname, " expects a real-valued input tensor, but got ",
                scalar_type_name(input.scalar_type()));
    ShapeDims sd = shape_and_dims(input, s, dim);
    EMBER_CHECK(!sd.dims.empty(), fname, " must transform at least one axis");
    EMBER_CHECK(!input.is_complex(), "Only supports floating-point dtypes, but found: ", scalar_type_name(input.scalar_type()));
    Tensor x = resize(promote(input, false), sd.dims, sd.shape);
    if (forward) return r2c(x, sd.dims, norm, true);
    return conj_physical(r2c(x, sd.dims, swap_norm(norm), true));
}

Tensor c2r_nd(const char* fname, const Tensor& input, const OptionalInts& s, const OptionalInts& dim,
              const OptionalNorm& norm_arg, bool forward) {
    const std::string norm = check_norm(norm_arg);
    ShapeDims sd = shape_and_dims(input, s, dim);
    EMBER_CHECK(!sd.dims.empty(), fname, " must transform at least one axis");
    const bool keep = !s || s->back() == -1;
    const int64_t last = keep ? 2 * (input.size(sd.dims.back()) - 1) : sd.shape.back();
    check_points(last);
    std::vector<int64_t> shape = sd.shape;
    shape.back() = last / 2 + 1;
    Tensor x = resize(promote(input, true), sd.dims, shape);
    if (forward) return c2r(conj_physical(x), sd.dims, last, swap_norm(norm));
    return c2r(x, sd.dims, last, norm);
}

}  // namespace

namespace detail {
void transform(cd* data, int64_t n, bool forward) {
    if (n <= 1) return;
    if (is_pow2(n)) {
        plan_for(cache().radix2, n)->run(data, forward);
    } else if (!MixedRadix::factorize(n).empty()) {
        plan_for(cache().mixed, n)->run(data, forward);
    } else {
        plan_for(cache().bluestein, n)->run(data, forward);
    }
}
}  // namespace detail

#define EMBER_FFT_1D(name, kind, forward)                                                    \
    Tensor name(const Tensor& input, OptionalInt n, int64_t dim, OptionalNorm norm) {        \
        check_no_grad(input, #name);                                                         \
        return kind;                                                                         \
    }
EMBER_FFT_1D(fft, c2c_1d("fft", input, n, dim, norm, true), true)
EMBER_FFT_1D(ifft, c2c_1d("ifft", input, n, dim, norm, false), false)
EMBER_FFT_1D(rfft, r2c_1d("rfft", input, n, dim, norm, true), true)
EMBER_FFT_1D(ihfft, r2c_1d("ihfft", input, n, dim, norm, false), false)
EMBER_FFT_1D(irfft, c2r_1d(input, n, dim, norm, false), false)
EMBER_FFT_1D(hfft, c2r_1d(input, n, dim, norm, true), true)
#undef EMBER_FFT_1D

#define EMBER_FFT_ND(name, kind)                                                              \
    Tensor name(const Tensor& input, OptionalInts s, OptionalInts dim, OptionalNorm norm) {  \
        check_no_grad(input, #name);                                                         \
        return kind;                                                                         \
    }
EMBER_FFT_ND(fftn, c2c_nd(input, s, dim, norm, true))
EMBER_FFT_ND(ifftn, c2c_nd(input, s, dim, norm, false))
EMBER_FFT_ND(rfftn, r2c_nd("rfftn", input, s, dim, norm, true))
EMBER_FFT_ND(ihfftn, r2c_nd("ihfftn", input, s, dim, norm, false))
EMBER_FFT_ND(irfftn, c2r_nd("irfftn", input, s, dim, norm, false))
EMBER_FFT_ND(hfftn, c2r_nd("hfftn", input, s, dim, norm, true))
#undef EMBER_FFT_ND

Tensor fft2(const Tensor& input, OptionalInts s, std::vector<int64_t> dim, OptionalNorm norm) { return fftn(input, s, dim, norm); }
Tensor ifft2(const Tensor& input, OptionalInts s, std::vector<int64_t> dim, OptionalNorm norm) { return ifftn(input, s, dim, norm); }
Tensor rfft2(const Tensor& input, OptionalInts s, std::vector<int64_t> dim, OptionalNorm norm) { return rfftn(input, s, dim, norm); }
Tensor irfft2(const Tensor& input, OptionalInts s, std::vector<int64_t> dim, OptionalNorm norm) { return irfftn(input, s, dim, norm); }
Tensor hfft2(const Tensor& input, OptionalInts s, std::vector<int64_t> dim, OptionalNorm norm) { return hfftn(input, s, dim, norm); }
Tensor ihfft2(const Tensor& input, OptionalInts s, std::vector<int64_t> dim, OptionalNorm norm) { return ihfftn(input, s, dim, norm); }

}  // namespace fft
}  // namespace ember
