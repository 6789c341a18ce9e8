// Discrete Fourier transforms (torch::fft): the functions of torch.fft with its arguments
// and semantics (n / s pad with zeros or trim; dim; norm "backward" (default), "forward",
// "ortho"), and the short-time Fourier transform (torch::stft / torch::istft).
//
// One FFT computes them all: iterative radix-2 for powers of two, mixed radix for lengths
// whose prime factors are at most 13, Bluestein's chirp-z for the others, in double
// precision; results are rounded to the result's dtype
// (float32 input: complex64; float64: complex128; integers: the default float's complex
// type). Half tensors are refused, as PyTorch's CPU FFT refuses them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "export.h"
#include "tensor.h"

namespace ember {
namespace fft {

using OptionalInt = std::optional<int64_t>;
using OptionalInts = std::optional<std::vector<int64_t>>;
using OptionalNorm = std::optional<std::string>;

EMBER_API Tensor fft(const Tensor& input, OptionalInt n = std::nullopt, int64_t dim = -1, OptionalNorm norm = std::nullopt);
EMBER_API Tensor ifft(const Tensor& input, OptionalInt n = std::nullopt, int64_t dim = -1, OptionalNorm norm = std::nullopt);
EMBER_API Tensor rfft(const Tensor& input, OptionalInt n = std::nullopt, int64_t dim = -1, OptionalNorm norm = std::nullopt);
EMBER_API Tensor irfft(const Tensor& input, OptionalInt n = std::nullopt, int64_t dim = -1, OptionalNorm norm = std::nullopt);
EMBER_API Tensor hfft(const Tensor& input, OptionalInt n = std::nullopt, int64_t dim = -1, OptionalNorm norm = std::nullopt);
EMBER_API Tensor ihfft(const Tensor& input, OptionalInt n = std::nullopt, int64_t dim = -1, OptionalNorm norm = std::nullopt);

// n-dimensional forms: dim defaults to all dims (or the last s.size() dims when s is given);
// -1 in s keeps that dim's size.
EMBER_API Tensor fftn(const Tensor& input, OptionalInts s = std::nullopt, OptionalInts dim = std::nullopt, OptionalNorm norm = std::nullopt);
EMBER_API Tensor ifftn(const Tensor& input, OptionalInts s = std::nullopt, OptionalInts dim = std::nullopt, OptionalNorm norm = std::nullopt);
EMBER_API Tensor rfftn(const Tensor& input, OptionalInts s = std::nullopt, OptionalInts dim = std::nullopt, OptionalNorm norm = std::nullopt);
EMBER_API Tensor irfftn(const Tensor& input, OptionalInts s = std::nullopt, OptionalInts dim = std::nullopt, OptionalNorm norm = std::nullopt);
EMBER_API Tensor hfftn(const Tensor& input, OptionalInts s = std::nullopt, OptionalInts dim = std::nullopt, OptionalNorm norm = std::nullopt);
EMBER_API Tensor ihfftn(const Tensor& input, OptionalInts s = std::nullopt, OptionalInts dim = std::nullopt, OptionalNorm norm = std::nullopt);

// 2-d forms: the n-d forms with dim = {-2, -1} by default.
EMBER_API Tensor fft2(const Tensor& input, OptionalInts s = std::nullopt, std::vector<int64_t> dim = {-2, -1}, OptionalNorm norm = std::nullopt);
EMBER_API Tensor ifft2(const Tensor& input, OptionalInts s = std::nullopt, std::vector<int64_t> dim = {-2, -1}, OptionalNorm norm = std::nullopt);
EMBER_API Tensor rfft2(const Tensor& input, OptionalInts s = std::nullopt, std::vector<int64_t> dim = {-2, -1}, OptionalNorm norm = std::nullopt);
EMBER_API Tensor irfft2(const Tensor& input, OptionalInts s = std::nullopt, std::vector<int64_t> dim = {-2, -1}, OptionalNorm norm = std::nullopt);
EMBER_API Tensor hfft2(const Tensor& input, OptionalInts s = std::nullopt, std::vector<int64_t> dim = {-2, -1}, OptionalNorm norm = std::nullopt);
EMBER_API Tensor ihfft2(const Tensor& input, OptionalInts s = std::nullopt, std::vector<int64_t> dim = {-2, -1}, OptionalNorm norm = std::nullopt);

namespace detail {
// The unnormalized DFT of `n` points of `data` in place (forward: exp(-2 pi i jk / n)); the
// engine under every transform, exposed for the tests.
EMBER_API void transform(std::complex<double>* data, int64_t n, bool forward);
}  // namespace detail

}  // namespace fft

struct StftOptions {
    std::optional<int64_t> hop_length;   // default n_fft / 4
    std::optional<int64_t> win_length;   // default n_fft
    Tensor window;                       // undefined: a rectangular window
    bool center = true;
    std::string pad_mode = "reflect";    // "reflect", "constant", "replicate", "circular"
    bool normalized = false;
    std::optional<bool> onesided;        // default: true for real input and window
    std::optional<bool> return_complex;  // required for real input, as PyTorch
    std::optional<bool> align_to_window;
};

// torch.stft: (B?, L) -> (B?, N, T) complex (return_complex=false: its real view (B?, N, T, 2)).
EMBER_API Tensor stft(const Tensor& input, int64_t n_fft, const StftOptions& options = {});

struct IstftOptions {
    std::optional<int64_t> hop_length;
    std::optional<int64_t> win_length;
    Tensor window;
    bool center = true;
    bool normalized = false;
    std::optional<bool> onesided;
    std::optional<int64_t> length;
    bool return_complex = false;
};

// torch.istft: the inverse of stft by overlap-add (the window's overlap-added square must not
// vanish anywhere in the kept span).
EMBER_API Tensor istft(const Tensor& input, int64_t n_fft, const IstftOptions& options = {});

}  // namespace ember
