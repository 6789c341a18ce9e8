// torch.stft / torch.istft (include/ember/fft.h) after Python Ember's ember/ops/fft_ops.py:
// frames of the (centre-padded) signal times the window, one FFT per frame; the inverse by
// inverse FFTs, windowing and overlap-add divided by the overlap-added squared window.
// Computed in double precision (complex128), rounded to the result's dtype at the end.
#include <algorithm>
#include <cmath>
#include <complex>
#include <sstream>

#include "ember/complex.h"
#include "ember/fft.h"
#include "op_common.h"

namespace ember {

using namespace native;
using cd = std::complex<double>;

namespace {

std::string shape_list(IntArrayRef s) {
    std::ostringstream os;
    os << "[";
    for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
    os << "]";
    return os.str();
}

std::string type_str(const Tensor& t) { return "torch." + std::string(scalar_type_name(t.scalar_type())) + "Tensor"; }

std::string window_str(const Tensor& w) { return w.defined() ? type_str(w) + "{" + shape_list(w.sizes()) + "}" : "None"; }

std::string opt_bool(const std::optional<bool>& b, bool as_int) {
    if (!b) return "None";
    if (as_int) return *b ? "1" : "0";
    return *b ? "True" : "False";
}

// The index into [0, n) that padding position i (in [-lo, n + hi)) reads.
int64_t pad_index(const std::string& mode, int64_t i, int64_t n) {
    if (i >= 0 && i < n) return i;
    if (mode == "reflect") {
        const int64_t period = 2 * (n - 1);
        int64_t j = period == 0 ? 0 : ((i % period) + period) % period;
        return j < n ? j : period - j;
    }
    if (mode == "replicate") return i < 0 ? 0 : n - 1;
    return ((i % n) + n) % n;  // circular
}

// (rows, L) complex128 -> (rows, L + 2 pad), padded on both sides with pad_mode.
Tensor center_pad(const Tensor& x, int64_t pad, const std::string& mode, const std::vector<int64_t>& shape3) {
    const int64_t rows = x.size(0), n = x.size(1);
    if (mode == "reflect") {
        EMBER_CHECK(pad < n, "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (",
                    pad, ", ", pad, ") at dimension 2 of input ", shape_list(shape3));
    } else if (mode == "circular") {
        EMBER_CHECK(pad <= n, "Padding value causes wrapping around more than once.");
    } else if (mode != "constant" && mode != "replicate") {
        throw NotImplementedError("Unrecognised padding mode " + mode);
    }
    Tensor out = empty_tensor({rows, n + 2 * pad}, kComplexDouble, /*zero=*/true);
    const cd* src = x.data_ptr<cd>();
    cd* dst = out.data_ptr<cd>();
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t i = -pad; i < n + pad; ++i) {
            if (mode == "constant" && (i < 0 || i >= n)) continue;
            dst[r * (n + 2 * pad) + i + pad] = src[r * n + pad_index(mode, i, n)];
        }
    }
    return out;
}

// The window of win_length points centred in n_fft points, as complex128 (rectangular when
// undefined).
std::vector<cd> padded_window(const Tensor& window, int64_t win_length, int64_t n_fft) {
    std::vector<cd> w(static_cast<size_t>(n_fft), cd(0, 0));
    const int64_t left = (n_fft - win_length) / 2;
    if (!window.defined()) {
        for (int64_t i = 0; i < win_length; ++i) w[static_cast<size_t>(left + i)] = 1;
        return w;
    }
    Tensor c = empty_tensor(window.sizes(), kComplexDouble);
    copy_kernel(c, window);
    const cd* p = c.data_ptr<cd>();
    for (int64_t i = 0; i < win_length; ++i) w[static_cast<size_t>(left + i)] = p[i];
    return w;
}

// (C, T, size) frames hop apart, overlap-added: (C, size + hop (T - 1)).
std::vector<cd> overlap_add(const std::vector<cd>& frames, int64_t channels, int64_t count, int64_t size, int64_t hop) {
    const int64_t length = size + hop * (count - 1);
    std::vector<cd> out(static_cast<size_t>(channels * length), cd(0, 0));
    for (int64_t c = 0; c < channels; ++c) {
        for (int64_t t = 0; t < count; ++t) {
            for (int64_t j = 0; j < size; ++j) {
                out[static_cast<size_t>(c * length + t * hop + j)] += frames[static_cast<size_t>((c * count + t) * size + j)];
            }
        }
    }
    return out;
}

void check_no_grad(const char* op, const Tensor& a, const Tensor& b) {
    if (!GradMode::is_enabled()) return;
    EMBER_CHECK(!a.requires_grad() && !(b.defined() && b.requires_grad()), op,
                ": autograd through complex tensors is not supported by Ember's C++ frontend");
}

}  // namespace

Tensor stft(const Tensor& input, int64_t n_fft, const StftOptions& o) {
    EMBER_CHECK(!(o.align_to_window && o.center), "stft align_to_window should only be set when center = false");
    check_no_grad("stft", input, o.window);
    const int64_t hop = o.hop_length.value_or(n_fft / 4);
    const int64_t win_length = o.win_length.value_or(n_fft);
    const Tensor& window = o.window;
    const int64_t in_dim = input.dim();
    std::vector<int64_t> shown = input.sizes().vec();
    if (o.center && !shown.empty()) shown.back() += 2 * (n_fft / 2);  // the padded signal's size
    auto error = [&](const std::string& msg) {
        std::ostringstream os;
        os << "stft(" << type_str(input) << shape_list(shown) << ", n_fft=" << n_fft << ", hop_length=" << hop
           << ", win_length=" << win_length << ", window=" << window_str(window)
           << ", normalized=" << (o.normalized ? 1 : 0) << ", onesided=" << opt_bool(o.onesided, false)
           << ", return_complex=" << opt_bool(o.return_complex, true)
           << ", align_to_window=" << opt_bool(o.align_to_window, false) << ") : " << msg;
        return Error(os.str());
    };
    const bool complex_input = input.is_complex() || (window.defined() && window.is_complex());
    bool return_complex = true;
    if (!o.return_complex) {
        EMBER_CHECK(complex_input,
                    "stft requires the return_complex parameter be given for real inputs, and will further require that "
                    "return_complex=True in a future PyTorch release.");
    } else {
        return_complex = *o.return_complex;
    }
    // the centring padding first (PyTorch pads 1-D and 2-D signals before its checks)
    const bool pads = o.center && (in_dim == 1 || in_dim == 2);
    if (!(is_floating_point(input.scalar_type()) || input.is_complex())) throw error("expected a tensor of floating point or complex values");
    if (in_dim != 1 && in_dim != 2) throw error("expected a 1D or 2D tensor");
    const int64_t rows = in_dim == 2 ? input.size(0) : 1;
    Tensor x = empty_tensor({rows, input.size(-1)}, kComplexDouble);
    copy_kernel(x, input.reshape({rows, input.size(-1)}));
    if (pads) {
        std::vector<int64_t> shape3 = {1, rows, input.size(-1)};
        if (in_dim == 1) shape3 = {1, 1, input.size(-1)};
        x = center_pad(x, n_fft / 2, o.pad_mode, shape3);
    }
    int64_t length = x.size(1);
    if (n_fft <= 0 || n_fft > length) throw error("expected 0 < n_fft < " + std::to_string(length) + ", but got n_fft=" + std::to_string(n_fft));
    if (hop <= 0) throw error("expected hop_length > 0, but got hop_length=" + std::to_string(hop));
    if (win_length <= 0 || win_length > n_fft) {
        throw error("expected 0 < win_length <= n_fft, but got win_length=" + std::to_string(win_length));
    }
    if (window.defined() && (window.dim() != 1 || window.size(0) != win_length)) {
        throw error("expected a 1D window tensor of size equal to win_length=" + std::to_string(win_length) +
                    ", but got window with size " + shape_list(window.sizes()));
    }
    if (o.align_to_window.value_or(false) && win_length < n_fft) {
        // frames start where their window does: the signal shifted right, zero-filled
        const int64_t shift = (n_fft - win_length) / 2;
        Tensor shifted = empty_tensor({rows, length + n_fft - win_length}, kComplexDouble, /*zero=*/true);
        copy_kernel(shifted.narrow(1, shift, std::min(length, length + n_fft - win_length - shift)),
                    x.narrow(1, 0, std::min(length, length + n_fft - win_length - shift)));
        x = shifted;
        length = x.size(1);
    }
    const int64_t count = 1 + (length - n_fft) / hop;
    const std::vector<cd> w = padded_window(window, win_length, n_fft);
    Tensor frames = empty_tensor({rows, count, n_fft}, kComplexDouble);
    const cd* px = x.data_ptr<cd>();
    cd* pf = frames.data_ptr<cd>();
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t t = 0; t < count; ++t) {
            for (int64_t j = 0; j < n_fft; ++j) {
                pf[(r * count + t) * n_fft + j] = px[r * length + t * hop + j] * w[static_cast<size_t>(j)];
            }
        }
    }
    // the result's dtype: the frames' (input times window), complex
    ScalarType real_type = to_real_type(input.scalar_type());
    if (window.defined()) real_type = promote_types(real_type, to_real_type(window.scalar_type()));
    EMBER_CHECK(real_type != kHalf, "Unsupported dtype Half");
    const std::string norm = o.normalized ? "ortho" : "backward";
    Tensor spec;
    if (complex_input) {
        EMBER_CHECK(!o.onesided.value_or(false), "Cannot have onesided output if window or input is complex");
        spec = fft::fft(frames, std::nullopt, -1, norm);
    } else {
        Tensor real_frames = real(frames);
        spec = o.onesided.value_or(true) ? fft::rfft(real_frames, std::nullopt, -1, norm)
                                         : fft::fft(real_frames, std::nullopt, -1, norm);
    }
    spec = spec.transpose(-1, -2);  // (rows, N, T)
    if (in_dim == 1) spec = spec.squeeze(0);
    Tensor out = empty_tensor(spec.sizes(), to_complex_type(real_type));
    copy_kernel(out, spec);
    return return_complex ? out : view_as_real(out);
}

Tensor istft(const Tensor& input, int64_t n_fft, const IstftOptions& o) {
    EMBER_CHECK(input.is_complex(),
                "istft requires a complex-valued input tensor matching the output from stft with return_complex=True.");
    check_no_grad("istft", input, o.window);
    const int64_t hop = o.hop_length.value_or(n_fft / 4);
    const int64_t win_length = o.win_length.value_or(n_fft);
    std::ostringstream shown;
    shown << "istft(CPU" << scalar_type_name(input.scalar_type()) << "Type" << shape_list(input.sizes())
          << ", n_fft=" << n_fft << ", hop_length=" << hop << ", win_length=" << win_length
          << ", window=" << window_str(o.window) << ", center=" << (o.center ? 1 : 0)
          << ", normalized=" << (o.normalized ? 1 : 0) << ", onesided=" << opt_bool(o.onesided, true)
          << ", length=" << (o.length ? std::to_string(*o.length) : "None")
          << ", return_complex=" << (o.return_complex ? 1 : 0) << ")";
    auto error = [&](const std::string& msg, const char* sep = " : ") { return Error(shown.str() + sep + msg); };
    const int64_t in_dim = input.dim();
    if (in_dim != 2 && in_dim != 3) throw error("expected a tensor with 3 or 4 dimensions, but got " + std::to_string(in_dim + 1));
    const int64_t n_frames = input.size(-1), fft_size = input.size(-2);
    const int64_t expected_len = n_fft + hop * (n_frames - 1);
    const bool onesided = o.onesided.value_or(fft_size != n_fft);
    if (onesided && n_fft / 2 + 1 != fft_size) {
        throw error("expected the frequency dimension (3rd to the last) of the input tensor to match n_fft / 2 + 1 when "
                    "onesided=True, but got " + std::to_string(fft_size));
    }
    if (!onesided && n_fft != fft_size) {
        throw error("expected the frequency dimension (3rd to the last) of the input tensor to match n_fft when "
                    "onesided=False, but got " + std::to_string(fft_size));
    }
    if (!(0 < hop && hop <= win_length)) throw error("expected 0 < hop_length <= win_length");
    if (!(0 < win_length && win_length <= n_fft)) throw error("expected 0 < win_length <= n_fft");
    if (o.window.defined() && (o.window.dim() != 1 || o.window.size(0) != win_length)) {
        throw error("Invalid window shape. window has to be 1D and length of `win_length`");
    }
    const std::vector<cd> w = padded_window(o.window, win_length, n_fft);
    const int64_t channels = in_dim == 3 ? input.size(0) : 1;
    Tensor x = input.reshape({channels, fft_size, n_frames}).transpose(1, 2);  // (C, T, N)
    const std::string norm = o.normalized ? "ortho" : "backward";
    Tensor frames;
    if (o.return_complex) {
        EMBER_CHECK(!onesided, "Cannot have onesided output if window or input is complex");
        frames = fft::ifft(x, std::nullopt, -1, norm);
    } else {
        EMBER_CHECK(!(o.window.defined() && o.window.is_complex()), "Complex windows are incompatible with return_complex=False");
        Tensor half = onesided ? x : x.narrow(-1, 0, n_fft / 2 + 1);
        frames = fft::irfft(half, n_fft, -1, norm);
    }
    Tensor fc = empty_tensor(frames.sizes(), kComplexDouble);
    copy_kernel(fc, frames);
    const cd* pf = fc.data_ptr<cd>();
    std::vector<cd> windowed(static_cast<size_t>(fc.numel())), wsq(static_cast<size_t>(n_frames * n_fft));
    for (int64_t i = 0; i < fc.numel(); ++i) windowed[static_cast<size_t>(i)] = pf[i] * w[static_cast<size_t>(i % n_fft)];
    for (int64_t i = 0; i < n_frames * n_fft; ++i) wsq[static_cast<size_t>(i)] = w[static_cast<size_t>(i % n_fft)] * w[static_cast<size_t>(i % n_fft)];
    const std::vector<cd> y = overlap_add(windowed, channels, n_frames, n_fft, hop);
    const std::vector<cd> envelope = overlap_add(wsq, 1, n_frames, n_fft, hop);
    const int64_t start = o.center ? n_fft / 2 : 0;
    int64_t end = o.length ? start + *o.length : (o.center ? -(n_fft / 2) : expected_len);
    const int64_t stop = std::max(std::min(end >= 0 ? end : expected_len + end, expected_len), start);
    const int64_t kept = stop - start;
    for (int64_t i = start; i < stop; ++i) {
        if (std::abs(envelope[static_cast<size_t>(i)]) < 1e-11) throw error("1", " window overlap add min: ");
    }
    const int64_t out_len = end > expected_len ? end - start : kept;
    Tensor out = empty_tensor({channels, out_len}, kComplexDouble, /*zero=*/true);
    cd* po = out.data_ptr<cd>();
    for (int64_t c = 0; c < channels; ++c) {
        for (int64_t i = 0; i < kept; ++i) {
            po[c * out_len + i] = y[static_cast<size_t>(c * expected_len + start + i)] / envelope[static_cast<size_t>(start + i)];
        }
    }
    if (in_dim == 2) out = out.squeeze(0);
    ScalarType result = frames.scalar_type();
    if (o.window.defined()) result = promote_types(result, o.window.scalar_type());
    Tensor r = empty_tensor(out.sizes(), result);
    copy_kernel(r, out);
    return r;
}

}  // namespace ember
