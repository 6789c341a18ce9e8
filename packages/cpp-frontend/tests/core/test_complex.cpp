// Complex tensors: the dtypes and their promotion, conversions, the views between complex
// and real, arithmetic, printing, the refusal of real-only kernels, safetensors C64, and the
// FFT engine and torch.fft's semantics against a naive DFT; stft/istft round trips.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>
#include <string>
#include <vector>

#include "common/complex.h"
#include "common/error_of.h"
#include "ember/checkpoint.h"
#include "ember/complex.h"
#include "ember/fft.h"
#include "ember/serialize.h"
#include "ember/tensor.h"

namespace {

using namespace ember;
using ember::testing::error_of;
using cd = std::complex<double>;

using ember::testing::complex_tensor;
using ember::testing::values_of;

std::vector<cd> random_values(int64_t n, unsigned seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<double> d;
    std::vector<cd> v(static_cast<size_t>(n));
    for (cd& z : v) z = cd(d(gen), d(gen));
    return v;
}

// The O(n^2) DFT (forward: exp(-2 pi i jk / n)), with angles reduced exactly (jk mod n).
std::vector<cd> naive_dft(const std::vector<cd>& x, bool forward) {
    const int64_t n = static_cast<int64_t>(x.size());
    std::vector<cd> out(x.size());
    const double sign = forward ? -1.0 : 1.0;
    for (int64_t k = 0; k < n; ++k) {
        cd acc(0, 0);
        for (int64_t j = 0; j < n; ++j) {
            const double a = sign * 2.0 * M_PI * static_cast<double>((j * k) % n) / static_cast<double>(n);
            acc += x[static_cast<size_t>(j)] * cd(std::cos(a), std::sin(a));
        }
        out[static_cast<size_t>(k)] = acc;
    }
    return out;
}

double max_rel_error(const std::vector<cd>& got, const std::vector<cd>& want) {
    double err = 0, scale = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        err = std::max(err, std::abs(got[i] - want[i]));
        scale = std::max(scale, std::abs(want[i]));
    }
    return err / std::max(scale, 1e-300);
}

// ------------------------------------------------------------------------- dtypes

TEST(ComplexDtype, NamesSizesAndCodes) {
    EXPECT_EQ(static_cast<int>(kComplexFloat), 9);  // c10::ScalarType's codes
    EXPECT_EQ(static_cast<int>(kComplexDouble), 10);
    EXPECT_EQ(kComplex64, kComplexFloat);
    EXPECT_EQ(kComplex128, kComplexDouble);
    EXPECT_EQ(element_size(kComplexFloat), 8u);
    EXPECT_EQ(element_size(kComplexDouble), 16u);
    EXPECT_TRUE(is_complex(kComplexFloat));
    EXPECT_FALSE(is_complex(kDouble));
    EXPECT_FALSE(is_floating_point(kComplexFloat));
    EXPECT_FALSE(is_integral(kComplexDouble, true));
    EXPECT_EQ(dtype_name(kComplexFloat), "complex64");
    EXPECT_EQ(dtype_name(kComplexDouble), "complex128");
    EXPECT_EQ(scalar_type_name(kComplexFloat), "ComplexFloat");
    EXPECT_EQ(ember::zeros({2}, kComplexFloat).toString(), "CPUComplexFloatType");
    EXPECT_EQ(to_complex_type(kFloat), kComplexFloat);
    EXPECT_EQ(to_real_type(kComplexDouble), kDouble);
    EXPECT_TRUE(ember::zeros({1}, kComplexDouble).is_complex());
    EXPECT_FALSE(ember::zeros({1}).is_complex());
}

TEST(ComplexDtype, PromotionFollowsPyTorch) {
    EXPECT_EQ(promote_types(kComplexFloat, kFloat), kComplexFloat);
    EXPECT_EQ(promote_types(kComplexFloat, kDouble), kComplexDouble);
    EXPECT_EQ(promote_types(kLong, kComplexFloat), kComplexFloat);
    EXPECT_EQ(promote_types(kBool, kComplexDouble), kComplexDouble);
    EXPECT_EQ(promote_types(kComplexFloat, kComplexDouble), kComplexDouble);
    EXPECT_FALSE(can_cast(kComplexFloat, kDouble));
    EXPECT_TRUE(can_cast(kDouble, kComplexFloat));
    const Tensor z = ember::zeros({2}, kComplexFloat);
    EXPECT_EQ(result_type(z, Scalar(2.5)), kComplexFloat);
    // a 0-d float64 tensor does not widen a complex64 tensor; a 0-d complex128 tensor makes a
    // float32 tensor complex64 (its float width is kept)
    EXPECT_EQ(result_type(z, ember::zeros({}, kDouble)), kComplexFloat);
    EXPECT_EQ(result_type(ember::zeros({2}), ember::zeros({}, kComplexDouble)), kComplexFloat);
    EXPECT_EQ(result_type(ember::zeros({2}, kLong), ember::zeros({}, kComplexDouble)), kComplexDouble);
}

// ------------------------------------------------------------------------- conversions and views

TEST(ComplexTensor, ConversionsKeepOrDropTheImaginaryPart) {
    const Tensor r = ember::tensor({1.5, -2.0});
    const Tensor c = r.to(kComplexFloat);
    EXPECT_EQ(c.scalar_type(), kComplexFloat);
    EXPECT_EQ(values_of(c), (std::vector<cd>{{1.5, 0}, {-2.0, 0}}));
    const Tensor z = complex_tensor({{1.25, 2}, {-3, 0.5}}, {2});
    EXPECT_EQ(values_of(z.to(kComplexFloat)), values_of(z));
    const Tensor back = z.to(kFloat);  // PyTorch's C++ cast: the real part
    EXPECT_EQ(back.scalar_type(), kFloat);
    EXPECT_FLOAT_EQ(back[0].item<float>(), 1.25f);
    EXPECT_FLOAT_EQ(back[1].item<float>(), -3.0f);
    Tensor filled = ember::zeros({3}, kComplexDouble);
    filled.fill_(2);
    EXPECT_EQ(values_of(filled), (std::vector<cd>{{2, 0}, {2, 0}, {2, 0}}));
    EXPECT_EQ(values_of(ember::cat({z, c.to(kComplexDouble)})),
              (std::vector<cd>{{1.25, 2}, {-3, 0.5}, {1.5, 0}, {-2, 0}}));
    EXPECT_EQ(values_of(z.flip({0}).clone()), (std::vector<cd>{{-3, 0.5}, {1.25, 2}}));
}

TEST(ComplexTensor, ViewAsRealSharesMemory) {
    Tensor z = complex_tensor({{1, 2}, {3, 4}, {5, 6}}, {3}, kComplexFloat);
    Tensor r = view_as_real(z);
    EXPECT_EQ(r.sizes(), IntArrayRef({3, 2}));
    EXPECT_EQ(r.scalar_type(), kFloat);
    EXPECT_TRUE(r.is_alias_of(z));
    r.select(1, 1).fill_(-1);  // writes the imaginary parts through the view
    EXPECT_EQ(values_of(z), (std::vector<cd>{{1, -1}, {3, -1}, {5, -1}}));
    Tensor back = view_as_complex(r);
    EXPECT_EQ(back.scalar_type(), kComplexFloat);
    EXPECT_EQ(values_of(back), values_of(z));
    EXPECT_EQ(values_of(real(z).to(kComplexDouble)), (std::vector<cd>{{1, 0}, {3, 0}, {5, 0}}));
    imag(z).fill_(7);
    EXPECT_EQ(values_of(z), (std::vector<cd>{{1, 7}, {3, 7}, {5, 7}}));
    // a strided complex view: view_as_real of z[::2]
    Tensor every_other = z.slice(0, 0, 3, 2);
    EXPECT_EQ(view_as_real(every_other).strides(), IntArrayRef({4, 1}));
    EXPECT_EQ(error_of([] { (void)view_as_real(ember::zeros({2})); }),
              "view_as_real is only supported for complex tensors");
    EXPECT_EQ(error_of([] { (void)view_as_complex(ember::zeros({2, 3})); }), "Tensor must have a last dimension of size 2");
    EXPECT_EQ(error_of([] { (void)view_as_complex(ember::zeros({2, 2}).t()); }),
              "Tensor must have a last dimension with stride 1");
    EXPECT_EQ(error_of([] { (void)imag(ember::zeros({2})); }), "imag is not implemented for tensors with non-complex dtypes.");
}

TEST(ComplexTensor, MakeAndTakeApart) {
    const Tensor re = ember::tensor({1.0, 0.0, -2.0}).to(kDouble), im = ember::tensor({0.5}).to(kDouble);
    EXPECT_EQ(values_of(ember::complex(re, im)), (std::vector<cd>{{1, 0.5}, {0, 0.5}, {-2, 0.5}}));
    EXPECT_EQ(ember::complex(re.to(kFloat), im.to(kFloat)).scalar_type(), kComplexFloat);
    EXPECT_EQ(error_of([&] { (void)ember::complex(re.to(kFloat), im); }),
              "Expected object of scalar type Float but got scalar type Double for second argument");
    const Tensor p = polar(ember::full({1}, 2.0, kDouble), ember::full({1}, M_PI / 2, kDouble));
    EXPECT_NEAR(values_of(p)[0].real(), 0.0, 4e-16);
    EXPECT_NEAR(values_of(p)[0].imag(), 2.0, 4e-16);
    const Tensor z = complex_tensor({{3, 4}, {0, -1}}, {2}, kComplexFloat);
    const Tensor a = complex_abs(z);
    EXPECT_EQ(a.scalar_type(), kFloat);
    EXPECT_FLOAT_EQ(a[0].item<float>(), 5.0f);
    EXPECT_FLOAT_EQ(complex_angle(z)[1].item<float>(), static_cast<float>(-M_PI / 2));
    EXPECT_FLOAT_EQ(z.abs()[0].item<float>(), 5.0f);
    EXPECT_EQ(values_of(-z), (std::vector<cd>{{-3, -4}, {0, 1}}));
    EXPECT_EQ(values_of(conj(z)), (std::vector<cd>{{3, -4}, {0, 1}}));
    EXPECT_EQ(values_of(z), (std::vector<cd>{{3, 4}, {0, -1}}));  // conj copies
}

TEST(ComplexTensor, Arithmetic) {
    const Tensor a = complex_tensor({{1, 2}, {-0.5, 3}}, {2});
    const Tensor b = complex_tensor({{2, -1}, {0.25, 0.75}}, {2});
    const std::vector<cd> va = values_of(a), vb = values_of(b);
    EXPECT_EQ(values_of(a + b), (std::vector<cd>{va[0] + vb[0], va[1] + vb[1]}));
    EXPECT_EQ(values_of(a - b), (std::vector<cd>{va[0] - vb[0], va[1] - vb[1]}));
    EXPECT_EQ(values_of(a * b), (std::vector<cd>{va[0] * vb[0], va[1] * vb[1]}));
    const std::vector<cd> q = values_of(a / b);
    EXPECT_LT(std::abs(q[0] - va[0] / vb[0]), 1e-15);
    EXPECT_LT(std::abs(q[1] - va[1] / vb[1]), 1e-15);
    // with real tensors and numbers: promoted to complex
    EXPECT_EQ(values_of(a * 2), (std::vector<cd>{va[0] * 2.0, va[1] * 2.0}));
    EXPECT_EQ((a + ember::tensor({1.0f, 2.0f})).scalar_type(), kComplexDouble);
    EXPECT_EQ((a.to(kComplexFloat) + ember::tensor({1.0, 2.0}).to(kDouble)).scalar_type(), kComplexDouble);
    EXPECT_EQ((a.to(kComplexFloat) + ember::tensor({1.0, 2.0})).scalar_type(), kComplexFloat);
    EXPECT_EQ((ember::tensor({1, 2}) * a.to(kComplexFloat)).scalar_type(), kComplexFloat);
}

TEST(ComplexTensor, RealOnlyKernelsRefuseComplex) {
    const Tensor z = complex_tensor({{1, 2}}, {1}, kComplexFloat);
    int k = 0;
    for (auto f : std::vector<std::function<void()>>{
             [&] { (void)z.erf(); }, [&] { (void)z.relu(); }, [&] { (void)z.amax({0}); }, [&] { (void)z.maximum(z); },
             [&] { (void)(z < z); }, [&] { (void)z.item(); }, [&] { (void)z.argmax(); }, [&] { (void)z.floor(); },
             [&] { (void)z.clamp(0, 1); }, [&] { (void)z.logsumexp({0}); }}) {
        const std::string msg = error_of(f);
        EXPECT_NE(msg.find("ComplexFloat"), std::string::npos) << "op " << k << ": " << msg;
        ++k;
    }
    EXPECT_EQ(error_of([&] { (void)z.div(z, "floor"); }), "\"div_floor_cpu\" not implemented for 'ComplexFloat'");
    EXPECT_EQ(error_of([&] { (void)z.floor(); }), "\"floor\" not implemented for 'ComplexFloat'");
    const Tensor nan_im = complex_tensor({{1, NAN}, {INFINITY, 0}, {1, 1}}, {3});
    EXPECT_TRUE(nan_im.isnan().equal(ember::tensor({true, false, false})));
    EXPECT_TRUE(nan_im.isinf().equal(ember::tensor({false, true, false})));
    EXPECT_TRUE(nan_im.isfinite().equal(ember::tensor({false, false, true})));
    EXPECT_EQ(error_of([&] { z.requires_grad_(); }), "only Tensors of floating point dtype can require gradients");
    const Tensor w = ember::ones({1}, TensorOptions().requires_grad(true));
    EXPECT_EQ(error_of([&] { (void)(w * z); }), "mul: autograd through complex tensors is not supported by Ember's C++ frontend");
}

TEST(ComplexTensor, ReprIsPythons) {
    EXPECT_EQ(repr(complex_tensor({{1, 2}, {-0.5, -1}, {0, 3}}, {3}, kComplexFloat)),
              "tensor([ 1.0000+2.j, -0.5000-1.j,  0.0000+3.j])");
    EXPECT_EQ(repr(complex_tensor({{1.25, 2}, {0, -1}}, {1, 2})), "tensor([[1.2500+2.j, 0.0000-1.j]], dtype=ember.complex128)");
    EXPECT_EQ(repr(complex_tensor({{1, -2}}, {}, kComplexFloat)), "tensor(1.-2.j)");
    std::ostringstream os;
    os << complex_tensor({{1, 2}}, {1}, kComplexFloat);
    EXPECT_NE(os.str().find("[ CPUComplexFloatType{1} ]"), std::string::npos) << os.str();
}

TEST(ComplexTensor, SafetensorsStoresC64) {
    const std::string path = std::string(EMBER_TEST_BINARY_DIR) + "/complex.safetensors";
    const Tensor z = complex_tensor({{1, 2}, {3, -4}}, {2}, kComplexFloat);
    serialize::write_safetensors(path, {{"z", to_record(z)}, {"r", to_record(ember::ones({2}))}});
    const serialize::SafetensorsFile f = serialize::read_safetensors(path);
    ASSERT_EQ(f.tensors.size(), 2u);
    const Tensor back = to_tensor(f.tensors[0].first == "z" ? f.tensors[0].second : f.tensors[1].second, true);
    EXPECT_EQ(back.scalar_type(), kComplexFloat);
    EXPECT_EQ(values_of(back), values_of(z));
    const std::string msg = error_of([&] { serialize::write_safetensors(path, {{"w", to_record(z.to(kComplexDouble))}}); });
    EXPECT_NE(msg.find("complex128, which safetensors cannot store"), std::string::npos) << msg;
}

// ------------------------------------------------------------------------- the FFT engine

TEST(Fft, EngineMatchesTheNaiveDft) {
    std::vector<int64_t> lengths;
    for (int64_t n = 1; n <= 40; ++n) lengths.push_back(n);
    for (int64_t n : {64, 97, 100, 128, 243, 256, 1000, 1024}) lengths.push_back(n);
    for (int64_t n : lengths) {
        const std::vector<cd> x = random_values(n, static_cast<unsigned>(n));
        for (bool forward : {true, false}) {
            std::vector<cd> y = x;
            fft::detail::transform(y.data(), n, forward);
            EXPECT_LT(max_rel_error(y, naive_dft(x, forward)), 1e-12) << "n=" << n << " forward=" << forward;
        }
    }
}

TEST(Fft, OneDimensionalFormsAndNorms) {
    const int64_t n = 12;
    const std::vector<cd> x = random_values(n, 7);
    const Tensor z = complex_tensor(x, {n});
    const std::vector<cd> want = naive_dft(x, true);
    EXPECT_LT(max_rel_error(values_of(fft::fft(z)), want), 1e-13);
    std::vector<cd> scaled = want;
    for (cd& v : scaled) v /= std::sqrt(static_cast<double>(n));
    EXPECT_LT(max_rel_error(values_of(fft::fft(z, std::nullopt, -1, "ortho")), scaled), 1e-13);
    for (cd& v : scaled) v /= std::sqrt(static_cast<double>(n));
    EXPECT_LT(max_rel_error(values_of(fft::fft(z, std::nullopt, 0, "forward")), scaled), 1e-13);
    std::vector<cd> inv = naive_dft(x, false);
    for (cd& v : inv) v /= static_cast<double>(n);
    EXPECT_LT(max_rel_error(values_of(fft::ifft(z)), inv), 1e-13);
    // n pads with zeros or trims
    std::vector<cd> padded = x;
    padded.resize(16, cd(0, 0));
    EXPECT_LT(max_rel_error(values_of(fft::fft(z, 16)), naive_dft(padded, true)), 1e-13);
    const std::vector<cd> trimmed(x.begin(), x.begin() + 5);
    EXPECT_LT(max_rel_error(values_of(fft::fft(z, 5)), naive_dft(trimmed, true)), 1e-13);
    // real input: rfft is the first n/2 + 1 bins; irfft inverts it; dtypes follow PyTorch
    const Tensor r = ember::randn({2, 9});
    const Tensor spec = fft::rfft(r);
    EXPECT_EQ(spec.scalar_type(), kComplexFloat);
    EXPECT_EQ(spec.sizes(), IntArrayRef({2, 5}));
    const Tensor full = fft::fft(r);
    EXPECT_TRUE(view_as_real(spec).allclose(view_as_real(full.narrow(1, 0, 5)), 1e-5, 1e-5));
    EXPECT_TRUE(fft::irfft(spec, 9).allclose(r, 1e-5, 1e-5));
    EXPECT_TRUE(fft::hfft(fft::ihfft(r), 9).allclose(r, 1e-5, 1e-5));
    EXPECT_EQ(fft::fft(ember::arange(4)).scalar_type(), kComplexFloat);  // integers: the default float's
    EXPECT_EQ(fft::rfft(r.to(kDouble)).scalar_type(), kComplexDouble);
    EXPECT_EQ(error_of([&] { (void)fft::fft(z, std::nullopt, -1, "sideways"); }), "Invalid normalization mode: \"sideways\"");
    EXPECT_EQ(error_of([&] { (void)fft::fft(z, 0); }), "Invalid number of data points (0) specified");
    EXPECT_EQ(error_of([&] { (void)fft::rfft(z); }), "rfft expects a real input tensor, but got ComplexDouble");
    EXPECT_EQ(error_of([&] { (void)fft::fft(ember::zeros({4}, kHalf)); }), "Unsupported dtype Half");
}

TEST(Fft, NDimensionalIsTheOneDimensionalOverEachDim) {
    const Tensor x = ember::randn({3, 4, 5}, kDouble).to(kComplexDouble) + ember::randn({3, 4, 5}, kDouble) * 0;
    const Tensor all = fft::fftn(x);
    const Tensor step = fft::fft(fft::fft(fft::fft(x, std::nullopt, 0), std::nullopt, 1), std::nullopt, 2);
    EXPECT_LT(max_rel_error(values_of(all), values_of(step)), 1e-13);
    const Tensor two = fft::fft2(x);
    EXPECT_LT(max_rel_error(values_of(two), values_of(fft::fft(fft::fft(x, std::nullopt, 1), std::nullopt, 2))), 1e-13);
    const Tensor r = ember::randn({4, 6}, kDouble);
    EXPECT_TRUE(fft::irfftn(fft::rfftn(r), std::vector<int64_t>{4, 6}).allclose(r, 1e-12, 1e-12));
    EXPECT_TRUE(fft::irfft2(fft::rfft2(r), std::vector<int64_t>{4, 6}).allclose(r, 1e-12, 1e-12));
    EXPECT_TRUE(fft::hfftn(fft::ihfftn(r), std::vector<int64_t>{4, 6}).allclose(r, 1e-12, 1e-12));
    EXPECT_EQ(fft::rfftn(r, std::vector<int64_t>{3, 8}).sizes(), IntArrayRef({3, 5}));
    EXPECT_EQ(error_of([&] { (void)fft::fftn(r, std::vector<int64_t>{2, 2, 2}); }),
              "Got shape with 3 values but input tensor only has 2 dimensions.");
    EXPECT_EQ(error_of([&] { (void)fft::fftn(r, std::nullopt, std::vector<int64_t>{0, 0}); }), "FFT dims must be unique");
}

// Even lengths take the half-length path (the real line as n / 2 complex points, split after
// one transform; joined before one for the inverse): the same bins as the full complex
// transform, along the last dim or a strided one, for every norm; irfft drops the imaginary
// parts of bins 0 and n / 2 and pads or trims the spectrum as the full path does.
TEST(Fft, RealTransformsOfEvenLengthsAreTheFullTransformsBins) {
    for (int64_t n : {2, 4, 6, 8, 10, 12, 18, 64, 98, 100, 1000, 1024, 4098}) {
        const Tensor r = ember::randn({3, n}, kDouble);
        const int64_t bins = n / 2 + 1;
        const Tensor full = fft::fft(r.to(kComplexDouble));
        EXPECT_LT(max_rel_error(values_of(fft::rfft(r)), values_of(full.narrow(1, 0, bins).contiguous())), 1e-12) << n;
        const Tensor rt = r.t();  // the transform's lines are strided
        EXPECT_LT(max_rel_error(values_of(fft::rfft(rt, std::nullopt, 0, "ortho")),
                                values_of(fft::fft(rt.to(kComplexDouble), std::nullopt, 0, "ortho").narrow(0, 0, bins).contiguous())),
                  1e-12) << n;
        Tensor spec = fft::rfft(r);
        EXPECT_TRUE(fft::irfft(spec, n).allclose(r, 1e-12, 1e-12)) << n;
        EXPECT_TRUE(fft::irfft(fft::rfft(rt, std::nullopt, 0, "forward"), n, 0, "forward").allclose(rt, 1e-12, 1e-12)) << n;
        // imaginary parts of bins 0 and n / 2 are dropped
        Tensor noisy = spec.clone();
        view_as_real(noisy).select(-1, 1).select(1, 0).fill_(3.0);
        view_as_real(noisy).select(-1, 1).select(1, bins - 1).fill_(-2.0);
        EXPECT_TRUE(fft::irfft(noisy, n).allclose(r, 1e-12, 1e-12)) << n;
    }
    // a spectrum shorter or longer than n / 2 + 1 bins: zeros added, extra bins ignored
    const Tensor r = ember::randn({2, 10}, kDouble);
    const Tensor spec = fft::rfft(r);  // 6 bins
    for (int64_t n : {4, 8, 14, 20}) {
        const Tensor even = fft::irfft(spec, n);
        // the full path's answer: n odd is n + 1's neighbour, so compare with a direct inverse
        Tensor hermitian = ember::zeros({2, n}, kComplexDouble);
        const int64_t keep = std::min<int64_t>(6, n / 2 + 1);
        hermitian.narrow(1, 0, keep).copy_(spec.narrow(1, 0, keep));
        for (int64_t k = 1; k < (n + 1) / 2 && k < keep; ++k) {
            hermitian.narrow(1, n - k, 1).copy_(conj(spec.narrow(1, k, 1)));
        }
        view_as_real(hermitian).select(-1, 1).select(1, 0).zero_();
        view_as_real(hermitian).select(-1, 1).select(1, n / 2).zero_();
        const Tensor want = real(fft::ifft(hermitian));
        EXPECT_TRUE(even.allclose(want, 1e-12, 1e-12)) << n;
    }
    // rfftn / irfftn: the last dim halves, the others transform the bins
    const Tensor x = ember::randn({4, 6, 8}, kDouble);
    EXPECT_LT(max_rel_error(values_of(fft::rfftn(x)), values_of(fft::fftn(x.to(kComplexDouble)).narrow(2, 0, 5).contiguous())),
              1e-12);
    EXPECT_TRUE(fft::irfftn(fft::rfftn(x), std::vector<int64_t>{4, 6, 8}).allclose(x, 1e-12, 1e-12));
    const Tensor f32 = ember::randn({5, 16});
    EXPECT_EQ(fft::rfft(f32).scalar_type(), kComplexFloat);
    EXPECT_TRUE(fft::irfft(fft::rfft(f32), 16).allclose(f32, 1e-5, 1e-5));
}

TEST(Stft, InverseRecoversTheSignal) {
    const Tensor x = ember::randn({2, 64}, kDouble);
    const int64_t n_fft = 16;
    // the periodic Hann window, 0.5 - 0.5 cos(2 pi k / n)
    Tensor w = ember::empty({n_fft}, kDouble);
    for (int64_t k = 0; k < n_fft; ++k) w.data_ptr<double>()[k] = 0.5 - 0.5 * std::cos(2 * M_PI * k / n_fft);
    StftOptions o;
    o.window = w;
    o.return_complex = true;
    const Tensor spec = stft(x, n_fft, o);
    EXPECT_EQ(spec.sizes(), IntArrayRef({2, 9, 17}));
    EXPECT_EQ(spec.scalar_type(), kComplexDouble);
    // frame 3 (centred at sample 12) by hand: the reflect-padded signal times the window
    const int64_t t = 3, hop = n_fft / 4;
    std::vector<cd> frame(static_cast<size_t>(n_fft));
    const double* px = x.contiguous().data_ptr<double>();
    for (int64_t j = 0; j < n_fft; ++j) {
        int64_t i = t * hop + j - n_fft / 2;
        if (i < 0) i = -i;
        frame[static_cast<size_t>(j)] = px[i] * w.data_ptr<double>()[j];
    }
    const std::vector<cd> want = naive_dft(frame, true);
    const std::vector<cd> got = values_of(spec.select(0, 0).select(1, t));
    EXPECT_LT(max_rel_error(got, std::vector<cd>(want.begin(), want.begin() + 9)), 1e-12);
    IstftOptions io;
    io.window = w;
    io.length = 64;
    EXPECT_TRUE(istft(spec, n_fft, io).allclose(x, 1e-10, 1e-10));
    StftOptions no_flag;
    EXPECT_EQ(error_of([&] { (void)stft(x, n_fft, no_flag); }),
              "stft requires the return_complex parameter be given for real inputs, and will further require that "
              "return_complex=True in a future PyTorch release.");
    EXPECT_EQ(error_of([&] { (void)istft(x, n_fft); }),
              "istft requires a complex-valued input tensor matching the output from stft with return_complex=True.");
}

}  // namespace
