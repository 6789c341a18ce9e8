// Random numbers: the generator's state, the random factories and the in-place fills, drawn
// as PyTorch's CPU kernels draw them (ATen's DistributionsHelper.h, TransformationHelper.h,
// cpu/DistributionTemplates.h, cpu/DistributionKernels.cpp), so that a seed gives PyTorch's
// numbers, and Python Ember's (its ember/_torch_rng.py is the same arithmetic):
//
//   uniform      float: the low 24 bits of one word * 2^-24 (Half: that float, rounded, a
//                value that rounds up to `to` becomes `from`); double: the low 53 bits of a
//                64-bit draw * 2^-53; then fma(x, to - from, from)
//   normal       16 or more contiguous float: Box-Muller over blocks of 16 uniforms (the first
//                8 give the radii, the last 8 the angles) with PyTorch's AVX2 log/sincos
//                (Cephes' polynomials) and its fused multiply-adds, the last partial block
//                redone from 16 new uniforms; the same in double with the C library's
//                log/cos/sin; anything else: normal_distribution<double> pairs (the second
//                sample cached in the generator for the next draw), fma(z, std, mean)
//   random_(a, b), randint   a word (a 64-bit draw from a range of 2^28 up) modulo the range
//   randperm     Fisher-Yates, element i swapped with i + word % (n - i)
//   bernoulli    a double uniform below p (float uniforms for a non-double p tensor)
//   exponential  -1 / lambda * log1p(-u), u a double uniform
//
// Strided outputs are filled in memory order (the order of PyTorch's TensorIterator).
//
// This file is compiled with -ffp-contract=off (CMakeLists.txt): every fused multiply-add is
// the std::fma written here, and no other expression may be contracted, or bits would differ.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

#include "op_common.h"
#include "random.h"

namespace ember {

using namespace native;

// ---- generators --------------------------------------------------------------------------------
uint64_t detail::process_seed(const char* env) {
    std::string text = env == nullptr ? std::string() : std::string(env);
    const auto first = text.find_first_not_of(" \t\n\r\f\v");
    if (first == std::string::npos) {
        std::random_device device;
        return (uint64_t(device()) << 32) ^ uint64_t(device());
    }
    text = text.substr(first, text.find_last_not_of(" \t\n\r\f\v") - first + 1);
    const std::string bad = "EMBER_SEED must be an integer in [-2**63, 2**64), got '" +
                            std::string(env) + "'";
    size_t i = 0;
    const bool negative = text[0] == '-';
    if (text[0] == '-' || text[0] == '+') i = 1;
    unsigned base = 10;
    if (text.size() > i + 2 && text[i] == '0' && (text[i + 1] == 'x' || text[i + 1] == 'X')) {
        base = 16;
        i += 2;
    }
    if (i == text.size()) throw std::runtime_error(bad);
    uint64_t value = 0;
    for (; i < text.size(); ++i) {
        const char ch = text[i];
        unsigned digit;
        if (ch >= '0' && ch <= '9') {
            digit = unsigned(ch - '0');
        } else if (base == 16 && ch >= 'a' && ch <= 'f') {
            digit = unsigned(ch - 'a' + 10);
        } else if (base == 16 && ch >= 'A' && ch <= 'F') {
            digit = unsigned(ch - 'A' + 10);
        } else {
            throw std::runtime_error(bad);
        }
        if (value > (UINT64_MAX - digit) / base) throw std::runtime_error(bad);
        value = value * base + digit;
    }
    if (negative) {
        if (value > (uint64_t(1) << 63)) throw std::runtime_error(bad);
        value = uint64_t(0) - value;  // modulo 2^64, as manual_seed(-1) is 2^64 - 1
    }
    return value;
}

Generator& default_generator() {
    static Generator gen(detail::process_seed(std::getenv("EMBER_SEED")));
    return gen;
}

void manual_seed(uint64_t seed) { default_generator().set_current_seed(seed); }

namespace {

// CPUGeneratorImplState's layout (64-bit platforms): THGeneratorState (the initial seed, left,
// seeded, next, the 624 words as uint64, normal_x, normal_y, normal_rho, normal_is_valid),
// then the cached float sample and its flag.
constexpr size_t kLeftAt = 8, kSeededAt = 12, kNextAt = 16, kStateAt = 24;
constexpr size_t kNormalYAt = 5024, kNormalValidAt = 5040, kFloatAt = 5048, kFloatValidAt = 5052;

template <typename T>
void put(uint8_t* buf, size_t at, T v) {
    std::memcpy(buf + at, &v, sizeof(T));
}
template <typename T>
T get(const uint8_t* buf, size_t at) {
    T v;
    std::memcpy(&v, buf + at, sizeof(T));
    return v;
}

}  // namespace

Tensor Generator::get_state() const {
    Tensor out = empty_tensor({kCPUGeneratorStateSize}, kByte, /*zero=*/true);
    uint8_t* buf = static_cast<uint8_t*>(out.data_ptr());
    impl_->with_engine([&](CPUGeneratorState& s) {
        const MT19937Engine& e = s.engine;
        put<uint64_t>(buf, 0, e.seed());
        put<int32_t>(buf, kLeftAt, e.left());
        put<int32_t>(buf, kSeededAt, e.seeded() ? 1 : 0);
        put<uint64_t>(buf, kNextAt, e.next());
        for (int i = 0; i < MT19937Engine::kStateN; ++i) put<uint64_t>(buf, kStateAt + 8 * i, e.state()[i]);
        if (s.next_double_normal_sample) {
            put<double>(buf, kNormalYAt, *s.next_double_normal_sample);
            put<int32_t>(buf, kNormalValidAt, 1);
        }
        if (s.next_float_normal_sample) {
            put<float>(buf, kFloatAt, *s.next_float_normal_sample);
            buf[kFloatValidAt] = 1;
        }
        return 0;
    });
    return out;
}

void Generator::set_state(const Tensor& new_state) {
    EMBER_CHECK(new_state.scalar_type() == kByte, "RNG state must be a torch.ByteTensor");
    const Tensor data = contiguous_data(new_state);
    EMBER_CHECK(data.numel() == kCPUGeneratorStateSize, "Expected a CPUGeneratorImplState of size ",
                kCPUGeneratorStateSize, " but found the input RNG state size to be ", data.numel());
    const uint8_t* buf = static_cast<const uint8_t*>(data.data_ptr());
    std::array<uint32_t, MT19937Engine::kStateN> words{};
    for (int i = 0; i < MT19937Engine::kStateN; ++i) {
        words[i] = static_cast<uint32_t>(get<uint64_t>(buf, kStateAt + 8 * i));
    }
    impl_->with_engine([&](CPUGeneratorState& s) {
        const bool ok = s.engine.set_data(get<uint64_t>(buf, 0), get<int32_t>(buf, kLeftAt),
                                          get<int32_t>(buf, kSeededAt) != 0,
                                          static_cast<uint32_t>(get<uint64_t>(buf, kNextAt)), words);
        EMBER_CHECK(ok, "Invalid mt19937 state");
        s.next_double_normal_sample.reset();
        s.next_float_normal_sample.reset();
        if (get<int32_t>(buf, kNormalValidAt)) s.next_double_normal_sample = get<double>(buf, kNormalYAt);
        if (buf[kFloatValidAt]) s.next_float_normal_sample = get<float>(buf, kFloatAt);
        return 0;
    });
}

Generator Generator::clone() const {
    Generator twin;
    twin.set_state(get_state());
    return twin;
}

Tensor get_rng_state() { return default_generator().get_state(); }
void set_rng_state(const Tensor& new_state) { default_generator().set_state(new_state); }

// ---- the samplers --------------------------------------------------------------------------------
namespace native {

// PyTorch's AVX2 log256_ps / sincos256_ps (avx_mathfun.h: Cephes' logf and sincosf), one lane,
// with the multiply-adds fused where PyTorch's AVX2 build fuses them.
static float torch_log256(float x) {
    const bool invalid = x <= 0.0f;
    x = x < 1.17549435e-38f ? 1.17549435e-38f : x;
    uint32_t bits;
    std::memcpy(&bits, &x, 4);
    float e = static_cast<float>(static_cast<int32_t>(bits >> 23) - 0x7f) + 1.0f;
    bits = (bits & ~0x7f800000u) | 0x3f000000u;  // the mantissa with 0.5's exponent
    std::memcpy(&x, &bits, 4);
    const bool small = x < 0.707106781186547524f;
    x = (x - 1.0f) + (small ? x : 0.0f);
    e = e - (small ? 1.0f : 0.0f);
    const float z = x * x;
    float y = 7.0376836292e-2f;
    y = std::fma(y, x, -1.1514610310e-1f);
    y = std::fma(y, x, 1.1676998740e-1f);
    y = std::fma(y, x, -1.2420140846e-1f);
    y = std::fma(y, x, 1.4249322787e-1f);
    y = std::fma(y, x, -1.6668057665e-1f);
    y = std::fma(y, x, 2.0000714765e-1f);
    y = std::fma(y, x, -2.4999993993e-1f);
    y = std::fma(y, x, 3.3333331174e-1f);
    y = std::fma(y * x, z, e * -2.12194440e-4f);
    y = std::fma(z, -0.5f, y);
    const float r = std::fma(e, 0.693359375f, x + y);
    return invalid ? std::nanf("") : r;
}

static void torch_sincos256(float x, float* s, float* c) {
    bool sign_sin = std::signbit(x);
    x = std::fabs(x);
    const int32_t j = (static_cast<int32_t>(x * 1.27323954473516f) + 1) & ~1;
    const float y = static_cast<float>(j);
    sign_sin ^= (j & 4) != 0;
    const bool poly = (j & 2) == 0;
    const bool sign_cos = (~(j - 2) & 4) != 0;
    x = std::fma(y, -0.78515625f, x);
    x = std::fma(y, -2.4187564849853515625e-4f, x);
    x = std::fma(y, -3.77489497744594108e-8f, x);
    const float z = x * x;
    float yc = std::fma(2.443315711809948e-05f, z, -1.388731625493765e-03f);
    yc = std::fma(yc, z, 4.166664568298827e-02f);
    yc = std::fma(yc * z, z, -(z * 0.5f)) + 1.0f;
    float ys = std::fma(-1.9515295891e-4f, z, 8.3321608736e-3f);
    ys = std::fma(ys, z, -1.6666654611e-1f);
    ys = std::fma(ys * z, x, x);
    const float sv = poly ? ys : yc, cv = poly ? yc : ys;
    *s = sign_sin ? -sv : sv;
    *c = sign_cos ? -cv : cv;
}

// normal_fill_16_AVX2 over `blocks` rows of 16 float uniforms, in place.
static void box_muller_f32(float* d, int64_t blocks, float mean, float std) {
    for (int64_t b = 0; b < blocks; ++b, d += 16) {
        for (int j = 0; j < 8; ++j) {
            const float radius = std::sqrt(-2.0f * torch_log256(1.0f - d[j]));
            float s, c;
            torch_sincos256(6.28318530717958647692f * d[j + 8], &s, &c);
            d[j] = std::fma(radius * c, std, mean);
            d[j + 8] = std::fma(radius * s, std, mean);
        }
    }
}

// normal_fill_16<double>, in place.
static void box_muller_f64(double* d, int64_t blocks, double mean, double std) {
    for (int64_t b = 0; b < blocks; ++b, d += 16) {
        for (int j = 0; j < 8; ++j) {
            const double radius = std::sqrt(-2.0 * std::log(1.0 - d[j]));
            const double theta = 6.28318530717958647692 * d[j + 8];
            d[j] = std::fma(radius * std::cos(theta), std, mean);
            d[j + 8] = std::fma(radius * std::sin(theta), std, mean);
        }
    }
}

void random_uniform_f32(CPUGeneratorState& s, float* out, int64_t n, float from, float range, bool affine) {
    for (int64_t i = 0; i < n; ++i) {
        const float x = uniform_float(s.random());
        out[i] = affine ? std::fma(x, range, from) : x;
    }
}

void random_uniform_f64(CPUGeneratorState& s, double* out, int64_t n, double from, double range, bool affine) {
    for (int64_t i = 0; i < n; ++i) {
        const double x = uniform_double(s.random64());
        out[i] = affine ? std::fma(x, range, from) : x;
    }
}

void random_normal_pairs(CPUGeneratorState& s, double* out, int64_t n) {
    int64_t i = 0;
    if (n > 0 && s.next_double_normal_sample) {
        out[i++] = *s.next_double_normal_sample;
        s.next_double_normal_sample.reset();
    }
    constexpr double two_pi = 6.28318530717958647692;
    for (; i < n; i += 2) {
        const double u1 = uniform_double(s.random64());
        const double u2 = uniform_double(s.random64());
        const double r = std::sqrt(-2.0 * std::log1p(-u2));
        const double theta = two_pi * u1;
        out[i] = r * std::cos(theta);
        if (i + 1 < n) {
            out[i + 1] = r * std::sin(theta);
        } else {
            s.next_double_normal_sample = r * std::sin(theta);
        }
    }
}

void random_normal_f32_blocks(CPUGeneratorState& s, float* out, int64_t n, float mean, float std) {
    random_uniform_f32(s, out, n, 0, 1, false);
    box_muller_f32(out, n / 16, mean, std);
    if (n % 16) {
        float tail[16];
        random_uniform_f32(s, tail, 16, 0, 1, false);
        box_muller_f32(tail, 1, mean, std);
        std::copy(tail, tail + 16, out + n - 16);
    }
}

void random_normal_f64_blocks(CPUGeneratorState& s, double* out, int64_t n, double mean, double std) {
    random_uniform_f64(s, out, n, 0, 1, false);
    box_muller_f64(out, n / 16, mean, std);
    if (n % 16) {
        double tail[16];
        random_uniform_f64(s, tail, 16, 0, 1, false);
        box_muller_f64(tail, 1, mean, std);
        std::copy(tail, tail + 16, out + n - 16);
    }
}

// random_(from, to): span = to - from > 0 (as uint64), the result from + word % span.
void random_from_to(CPUGeneratorState& s, int64_t* out, int64_t n, uint64_t span, int64_t low) {
    const bool wide = span >= (uint64_t(1) << 28);
    for (int64_t i = 0; i < n; ++i) {
        const uint64_t r = wide ? s.random64() : static_cast<uint64_t>(s.random());
        out[i] = static_cast<int64_t>(r % span + static_cast<uint64_t>(low));
    }
}

// The order PyTorch's TensorIterator visits t's elements in: its axes from the outermost in
// memory (PyTorch's infer_dense_strides: stride-0 axes stay in place; of equal strides the
// longer axis is outer); empty when that is t's own order.
std::vector<int64_t> memory_order(const Tensor& t) {
    const int64_t nd = t.dim();
    if (nd < 2 || t.is_contiguous()) return {};
    std::vector<int64_t> strides = t.strides().vec();
    const std::vector<int64_t> sizes = t.sizes().vec();
    auto outer_than = [&](int64_t a, int64_t b) {  // 1: a outside b, -1: inside, 0: undecided
        if (strides[a] == 0 || strides[b] == 0) return 0;
        if (strides[a] != strides[b]) return strides[a] > strides[b] ? 1 : -1;
        return sizes[a] > sizes[b] ? 1 : 0;
    };
    std::vector<int64_t> inner_first(nd);
    for (int64_t i = 0; i < nd; ++i) inner_first[i] = nd - 1 - i;
    for (int64_t i = 1; i < nd; ++i) {
        int64_t moving = i;
        for (int64_t j = i - 1; j >= 0; --j) {
            const int cmp = outer_than(inner_first[j], inner_first[moving]);
            if (cmp > 0) {
                std::swap(inner_first[j], inner_first[moving]);
                moving = j;
            } else if (cmp < 0) {
                break;
            }
        }
    }
    std::vector<int64_t> order(inner_first.rbegin(), inner_first.rend());
    for (int64_t i = 0; i < nd; ++i) {
        if (order[i] != i) return order;
    }
    return {};
}

bool dense_in_order(const Tensor& t, const std::vector<int64_t>& order) {
    int64_t expected = 1;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        if (t.size(*it) != 1 && t.stride(*it) != expected) return false;
        expected *= t.size(*it);
    }
    return true;
}

namespace {

Generator pick(const std::optional<Generator>& g) { return g ? *g : default_generator(); }

// Fills t with draw(state, T* p, n, contiguous), the values in t's memory order: directly when
// t is contiguous, else through a buffer laid out as t's axes are in memory.
template <typename T, typename Draw>
void fill_in_memory_order(const Tensor& t, Generator gen, Draw draw) {
    const int64_t n = t.numel();
    if (n == 0) return;
    const bool contiguous = t.is_contiguous();
    if (contiguous) {
        gen.with_engine([&](CPUGeneratorState& s) { draw(s, static_cast<T*>(t.data_ptr()), n, true); return 0; });
        return;
    }
    const std::vector<int64_t> order = memory_order(t);
    const Tensor dst = order.empty() ? t : t.permute(order);
    Tensor buf = empty_tensor(dst.sizes(), t.scalar_type());
    gen.with_engine([&](CPUGeneratorState& s) { draw(s, static_cast<T*>(buf.data_ptr()), n, false); return 0; });
    copy_kernel(dst, buf);
}

// uniform_(from, to) in T's arithmetic.
template <typename T>
void uniform_draw(CPUGeneratorState& s, T* p, int64_t n, double from, double to) {
    const bool affine = !(from == 0.0 && to == 1.0);
    if constexpr (std::is_same_v<T, double>) {
        random_uniform_f64(s, p, n, from, to - from, affine);
    } else if constexpr (std::is_same_v<T, float>) {
        random_uniform_f32(s, p, n, static_cast<float>(from), static_cast<float>(to) - static_cast<float>(from), affine);
    } else {  // Half: the float sample rounded; one that rounds up to `to` is `from`
        const float f = static_cast<float>(from), range = static_cast<float>(to) - f;
        const T top = convert<T>(to), bottom = convert<T>(from);
        for (int64_t i = 0; i < n; ++i) {
            const float x = uniform_float(s.random());
            const T v = convert<T>(affine ? std::fma(x, range, f) : x);
            p[i] = static_cast<float>(v) == static_cast<float>(top) ? bottom : v;
        }
    }
}

// normal_(mean, std) in T: the block fill for 16 or more contiguous float/double elements,
// normal_distribution<double> pairs otherwise.
template <typename T>
void normal_draw(CPUGeneratorState& s, T* p, int64_t n, bool contiguous, double mean, double std) {
    if constexpr (std::is_same_v<T, float>) {
        if (n >= 16 && contiguous) {
            return random_normal_f32_blocks(s, p, n, static_cast<float>(mean), static_cast<float>(std));
        }
    } else if constexpr (std::is_same_v<T, double>) {
        if (n >= 16 && contiguous) return random_normal_f64_blocks(s, p, n, mean, std);
    } else {  // Half: float blocks of 16, each rounded down; a partial last block draws 16
        if (n >= 16 && contiguous) {  // fresh uniforms after the whole blocks (its own fill)
            const float m = static_cast<float>(mean), sd = static_cast<float>(std);
            const int64_t head = n / 16 * 16;
            std::vector<float> x(static_cast<size_t>(n));
            random_normal_f32_blocks(s, x.data(), head, m, sd);
            if (head != n) random_normal_f32_blocks(s, x.data() + n - 16, 16, m, sd);
            for (int64_t i = 0; i < n; ++i) p[i] = convert<T>(x[static_cast<size_t>(i)]);
            return;
        }
    }
    std::vector<double> z(static_cast<size_t>(n));
    random_normal_pairs(s, z.data(), n);
    for (int64_t i = 0; i < n; ++i) p[i] = convert<T>(std::fma(z[static_cast<size_t>(i)], std, mean));
}

void check_uniform_bounds(ScalarType dtype, double from, double to) {
    EMBER_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from, " > to=", to);
    const char* name = dtype == kDouble ? "double" : dtype == kFloat ? "float" : "c10::Half";
    const double top = dtype == kDouble ? 1.7976931348623157e308 : dtype == kFloat ? 3.4028234663852886e38 : 65504.0;
    EMBER_CHECK(from >= -top && from <= top, "from is out of bounds for ", name);
    EMBER_CHECK(to >= -top && to <= top, "to is out of bounds for ", name);
    EMBER_CHECK(to - from <= top, "uniform_ expects to-from <= std::numeric_limits<", scalar_type_name(dtype),
                ">::max(), but found to=", to, " and from=", from, " which result in to-from to exceed the limit");
}

void uniform_kernel(const Tensor& t, double from, double to, const std::optional<Generator>& gen) {
    dispatch_floating(t.scalar_type(), "check_uniform_bounds", [&](auto tag) {
        using T = typename decltype(tag)::type;
        check_uniform_bounds(t.scalar_type(), from, to);
        fill_in_memory_order<T>(t, pick(gen), [&](CPUGeneratorState& s, T* p, int64_t n, bool) {
            uniform_draw<T>(s, p, n, from, to);
        });
    });
}

void normal_kernel(const Tensor& t, double mean, double std, const std::optional<Generator>& gen) {
    EMBER_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
    dispatch_floating(t.scalar_type(), "normal_kernel_cpu", [&](auto tag) {
        using T = typename decltype(tag)::type;
        fill_in_memory_order<T>(t, pick(gen), [&](CPUGeneratorState& s, T* p, int64_t n, bool contiguous) {
            normal_draw<T>(s, p, n, contiguous, mean, std);
        });
    });
}

// Writes the 0/1 (or 1/0 for `keep`) outcomes of draw(state, bool* hits, n) into t, in t's
// memory order.
template <typename Draw>
void fill_hits(const Tensor& t, Generator gen, Draw draw) {
    const int64_t n = t.numel();
    if (n == 0) return;
    const std::vector<int64_t> order = memory_order(t);
    const Tensor dst = order.empty() ? t : t.permute(order);
    Tensor hits = empty_tensor(dst.sizes(), kBool);
    gen.with_engine([&](CPUGeneratorState& s) { draw(s, static_cast<bool*>(hits.data_ptr()), n); return 0; });
    copy_kernel(dst, hits);
}

}  // namespace
}  // namespace native

// The random fills are not recorded by autograd (as PyTorch: they are initialisations).
Tensor& Tensor::uniform_(double from, double to, std::optional<Generator> gen) const {
    check_inplace(*this);
    uniform_kernel(*this, from, to, gen);
    bump_version(*this);
    return const_cast<Tensor&>(*this);
}

Tensor& Tensor::normal_(double mean, double std, std::optional<Generator> gen) const {
    check_inplace(*this);
    normal_kernel(*this, mean, std, gen);
    bump_version(*this);
    return const_cast<Tensor&>(*this);
}

Tensor& Tensor::bernoulli_(double p, std::optional<Generator> gen) const {
    EMBER_CHECK(p >= 0 && p <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", p);
    check_inplace(*this);
    fill_hits(*this, pick(gen), [p](CPUGeneratorState& s, bool* hits, int64_t n) {
        for (int64_t i = 0; i < n; ++i) hits[i] = uniform_double(s.random64()) < p;
    });
    bump_version(*this);
    return const_cast<Tensor&>(*this);
}

Tensor& Tensor::exponential_(double lambd, std::optional<Generator> gen) const {
    EMBER_CHECK(is_floating_point(), "Exponential distribution is a continuous probability distribution. dtype must "
                "be a floating point but you specified ", scalar_type_name(scalar_type()));
    EMBER_CHECK(lambd > 0.0, "exponential_ expects lambda > 0.0, but found lambda=", lambd);
    check_inplace(*this);
    dispatch_floating(scalar_type(), "exponential_", [&](auto tag) {
        using T = typename decltype(tag)::type;
        fill_in_memory_order<T>(*this, pick(gen), [lambd](CPUGeneratorState& s, T* p, int64_t n, bool) {
            for (int64_t i = 0; i < n; ++i) p[i] = convert<T>(-1.0 / lambd * std::log1p(-uniform_double(s.random64())));
        });
    });
    bump_version(*this);
    return const_cast<Tensor&>(*this);
}

Tensor& Tensor::random_(int64_t from, int64_t to, std::optional<Generator> gen) const {
    EMBER_CHECK(from < to, "random_ expects 'from' to be less than 'to', but got from=", from, " >= to=", to);
    check_inplace(*this);
    const uint64_t span = static_cast<uint64_t>(to) - static_cast<uint64_t>(from);
    Tensor self = *this;
    const std::vector<int64_t> order = memory_order(self);
    const Tensor dst = order.empty() ? self : self.permute(order);
    Tensor buf = empty_tensor(dst.sizes(), kLong);
    pick(gen).with_engine([&](CPUGeneratorState& s) {
        random_from_to(s, static_cast<int64_t*>(buf.data_ptr()), buf.numel(), span, from);
        return 0;
    });
    if (numel() > 0) copy_kernel(dst, buf);
    bump_version(*this);
    return const_cast<Tensor&>(*this);
}

Tensor& Tensor::random_(int64_t to, std::optional<Generator> gen) const { return random_(0, to, std::move(gen)); }

Tensor Tensor::bernoulli(std::optional<Generator> gen) const { return ember::bernoulli(*this, gen); }

Tensor Tensor::bernoulli(double p, std::optional<Generator> gen) const {
    Tensor out = empty_like(*this);
    out.bernoulli_(p, gen);
    return out;
}

// bernoulli(probabilities): PyTorch's tensor-p kernel, in the probabilities' (logical) order:
// double uniforms for double p, float uniforms otherwise.
Tensor bernoulli(const Tensor& p, std::optional<Generator> generator) {
    NoGradGuard guard;
    EMBER_CHECK(p.is_floating_point(), "bernoulli expects a floating point probability tensor");
    const bool dbl = p.scalar_type() == kDouble;
    const Tensor probs = contiguous_data(cast(p, dbl ? kDouble : kFloat));
    const int64_t n = probs.numel();
    if (n > 0) {
        const Tensor lo = probs.min(), hi = probs.max();
        EMBER_CHECK(lo.item<double>() >= 0 && hi.item<double>() <= 1,
                    "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message be "
                    "improved?  If so, please report an enhancement request to PyTorch.)");
    }
    Tensor hits = empty_tensor(p.sizes(), kBool);
    bool* h = static_cast<bool*>(hits.data_ptr());
    pick(generator).with_engine([&](CPUGeneratorState& s) {
        if (dbl) {
            const double* q = static_cast<const double*>(probs.data_ptr());
            for (int64_t i = 0; i < n; ++i) h[i] = uniform_double(s.random64()) < q[i];
        } else {
            const float* q = static_cast<const float*>(probs.data_ptr());
            for (int64_t i = 0; i < n; ++i) h[i] = uniform_float(s.random()) < q[i];
        }
        return 0;
    });
    return cast(hits, p.scalar_type());
}

Tensor rand(IntArrayRef size, const TensorOptions& options) { return rand(size, std::nullopt, options); }
Tensor rand(IntArrayRef size, std::optional<Generator> generator, const TensorOptions& options) {
    Tensor t = empty_tensor(size, options.dtype());
    uniform_kernel(t, 0, 1, generator);
    if (options.requires_grad()) t.requires_grad_(true);
    return t;
}

Tensor randn(IntArrayRef size, const TensorOptions& options) { return randn(size, std::nullopt, options); }
Tensor randn(IntArrayRef size, std::optional<Generator> generator, const TensorOptions& options) {
    Tensor t = empty_tensor(size, options.dtype());
    normal_kernel(t, 0, 1, generator);
    if (options.requires_grad()) t.requires_grad_(true);
    return t;
}

Tensor randint(int64_t high, IntArrayRef size, const TensorOptions& options) { return randint(0, high, size, options); }
Tensor randint(int64_t low, int64_t high, IntArrayRef size, const TensorOptions& options) {
    return randint(low, high, size, std::nullopt, options);
}
Tensor randint(int64_t low, int64_t high, IntArrayRef size, std::optional<Generator> generator,
               const TensorOptions& options) {
    EMBER_CHECK(low < high, "random_ expects 'from' to be less than 'to', but got from=", low, " >= to=", high);
    const ScalarType dtype = options.has_dtype() ? options.dtype() : kLong;
    Tensor buf = empty_tensor(size, kLong);
    const uint64_t span = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
    pick(generator).with_engine([&](CPUGeneratorState& s) {
        random_from_to(s, static_cast<int64_t*>(buf.data_ptr()), buf.numel(), span, low);
        return 0;
    });
    Tensor t = cast(buf, dtype);
    if (options.requires_grad()) t.requires_grad_(true);
    return t;
}

Tensor randperm(int64_t n, const TensorOptions& options) { return randperm(n, std::nullopt, options); }
Tensor randperm(int64_t n, std::optional<Generator> generator, const TensorOptions& options) {
    EMBER_CHECK(n >= 0, "n must be non-negative, got", n);
    Tensor buf = empty_tensor({n}, kLong);
    int64_t* p = static_cast<int64_t*>(buf.data_ptr());
    std::iota(p, p + n, int64_t(0));
    if (n >= 2) {
        // randperm_cpu: element i swaps with one of i..n-1 (64-bit draws for a huge n)
        const bool wide = n >= static_cast<int64_t>(0xFFFFFFFFu / 20);
        pick(generator).with_engine([&](CPUGeneratorState& s) {
            for (int64_t i = 0; i < n - 1; ++i) {
                const uint64_t r = wide ? s.random64() : static_cast<uint64_t>(s.random());
                const int64_t z = i + static_cast<int64_t>(r % static_cast<uint64_t>(n - i));
                std::swap(p[i], p[z]);
            }
            return 0;
        });
    }
    Tensor t = cast(buf, options.has_dtype() ? options.dtype() : kLong);
    if (options.requires_grad()) t.requires_grad_(true);
    return t;
}

// multinomial as Python Ember's (PyTorch's CPU kernel): without replacement (or one sample)
// the Gumbel-max trick in exponential form, argmax / top-k of p / q with q ~ Exp(1) drawn in
// p's dtype; with replacement, double uniforms searched in the normalised cumulative sums.
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement, std::optional<Generator> generator) {
    EMBER_CHECK(probs.dim() == 1 || probs.dim() == 2, "prob_dist must be 1 or 2 dim");
    EMBER_CHECK(probs.is_floating_point(), "multinomial only supports floating-point dtypes for input, got: ",
                scalar_type_name(probs.scalar_type()));
    EMBER_CHECK(num_samples > 0, "cannot sample n_sample <= 0 samples");
    NoGradGuard guard;
    const Tensor p2 = contiguous_data(probs.dim() == 1 ? probs.unsqueeze(0) : probs);
    const int64_t rows = p2.size(0), k = p2.size(1);
    EMBER_CHECK(replacement || num_samples <= k, "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
    EMBER_CHECK(k <= (int64_t(1) << 24), "number of categories cannot exceed 2^24");
    Tensor out = empty_tensor({rows, num_samples}, kLong);
    if (rows == 0 || k == 0) return probs.dim() == 1 ? out.squeeze(0) : out;
    int64_t* op = static_cast<int64_t*>(out.data_ptr());
    Generator gen = pick(generator);
    dispatch_floating(p2.scalar_type(), "multinomial", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* pp = static_cast<const T*>(p2.data_ptr());
        const int64_t total = rows * k;
        if (!replacement || num_samples == 1) {
            for (int64_t i = 0; i < total; ++i) {
                const double v = static_cast<double>(pp[i]);
                EMBER_CHECK(v >= 0 && v < INFINITY, "probability tensor contains either `inf`, `nan` or element < 0");
            }
            for (int64_t r = 0; r < rows; ++r) {
                double sum = 0;
                for (int64_t j = 0; j < k; ++j) sum += static_cast<double>(pp[r * k + j]);
                EMBER_CHECK(sum != 0, "invalid multinomial distribution (sum of probabilities <= 0)");
            }
            std::vector<double> q(static_cast<size_t>(total));
            gen.with_engine([&](CPUGeneratorState& s) {
                for (double& v : q) v = -1.0 / 1.0 * std::log1p(-uniform_double(s.random64()));
                return 0;
            });
            std::vector<T> keys(static_cast<size_t>(total));
            for (int64_t i = 0; i < total; ++i) {
                const double qi = q[static_cast<size_t>(i)];
                if constexpr (std::is_same_v<T, double>) {
                    keys[static_cast<size_t>(i)] = pp[i] / qi;
                } else if constexpr (std::is_same_v<T, float>) {
                    keys[static_cast<size_t>(i)] = pp[i] / static_cast<float>(qi);
                } else {  // Half: q rounded to Half, the quotient in float rounded once
                    keys[static_cast<size_t>(i)] = convert<T>(static_cast<float>(pp[i]) / static_cast<float>(convert<T>(qi)));
                }
            }
            std::vector<int64_t> idx(static_cast<size_t>(k));
            for (int64_t r = 0; r < rows; ++r) {
                const T* key = keys.data() + r * k;
                std::iota(idx.begin(), idx.end(), int64_t(0));
                // descending by key, ties in index order (NumPy's stable argsort of -keys)
                std::stable_sort(idx.begin(), idx.end(), [key](int64_t a, int64_t b) {
                    return static_cast<double>(key[a]) > static_cast<double>(key[b]);
                });
                for (int64_t s = 0; s < num_samples; ++s) op[r * num_samples + s] = idx[static_cast<size_t>(s)];
            }
            return;
        }
        using W = std::conditional_t<std::is_same_v<T, double>, double, float>;  // the cumulative sums' dtype
        for (int64_t r = 0; r < rows; ++r) {
            W sum = 0;
            for (int64_t j = 0; j < k; ++j) {
                const double v = static_cast<double>(pp[r * k + j]);
                if (v < 0 || !std::isfinite(v)) {
                    EMBER_ERROR("invalid multinomial distribution (encountering probability entry ",
                                v < 0 ? "< 0" : "= infinity or NaN", ")");
                }
                sum += static_cast<W>(pp[r * k + j]);
            }
            EMBER_CHECK(sum > 0, "invalid multinomial distribution (sum of probabilities <= 0)");
        }
        std::vector<double> u(static_cast<size_t>(rows * num_samples));
        gen.with_engine([&](CPUGeneratorState& s) {
            for (double& v : u) v = uniform_double(s.random64());
            return 0;
        });
        std::vector<W> cum(static_cast<size_t>(k));
        for (int64_t r = 0; r < rows; ++r) {
            W acc = 0;
            for (int64_t j = 0; j < k; ++j) cum[static_cast<size_t>(j)] = acc = acc + static_cast<W>(pp[r * k + j]);
            const W last = cum[static_cast<size_t>(k - 1)];
            for (W& c : cum) c = c / last;
            cum[static_cast<size_t>(k - 1)] = 1;
            for (int64_t s = 0; s < num_samples; ++s) {
                const double v = u[static_cast<size_t>(r * num_samples + s)];
                // the first bucket whose cumulative sum reaches v
                const auto it = std::lower_bound(cum.begin(), cum.end(), v,
                                                 [](W c, double x) { return static_cast<double>(c) < x; });
                op[r * num_samples + s] = std::min<int64_t>(it - cum.begin(), k - 1);
            }
        }
    });
    return probs.dim() == 1 ? out.squeeze(0) : out;
}

}  // namespace ember
