// Complex tensors (kComplexFloat = complex64, kComplexDouble = complex128, elements stored as
// std::complex<float> / std::complex<double>): the functions of PyTorch's that make, take
// apart and transform them (torch::view_as_real, torch::complex, torch::polar, ...).
//
// Copies (to, copy_, clone, contiguous), views (view, reshape, permute, select, ...), fills,
// cat/stack-style copies, add/sub/mul/div and these functions take complex tensors; other ops
// raise PyTorch's '"<op>" not implemented for 'ComplexFloat'' rather than compute on the real
// parts. Autograd does not run through complex tensors here (they cannot require grad).
#pragma once

#include "export.h"
#include "tensor.h"

namespace ember {

// The real view of a complex tensor: shape (..., 2), sharing its memory.
EMBER_API Tensor view_as_real(const Tensor& self);
// The complex view of a real tensor of shape (..., 2) (last dim contiguous, other strides
// even, storage offset even), sharing its memory.
EMBER_API Tensor view_as_complex(const Tensor& self);
// The real / imaginary part of a complex tensor, as views; real() of a real tensor is itself,
// imag() of one an error (as PyTorch).
EMBER_API Tensor real(const Tensor& self);
EMBER_API Tensor imag(const Tensor& self);
// The complex conjugate (a new tensor; a real tensor is returned as is). PyTorch's conj()
// is a lazy view; here conj() and conj_physical() both copy, and is_conj() is always false.
EMBER_API Tensor conj(const Tensor& self);
EMBER_API Tensor conj_physical(const Tensor& self);
// real + i imag from two float32 (or two float64) tensors, broadcast.
EMBER_API Tensor complex(const Tensor& real, const Tensor& imag);
// abs * (cos(angle) + i sin(angle)), broadcast; both float32 or both float64.
EMBER_API Tensor polar(const Tensor& abs, const Tensor& angle);
// |z| and arg(z) of a complex tensor, in its real dtype.
EMBER_API Tensor complex_abs(const Tensor& self);
EMBER_API Tensor complex_angle(const Tensor& self);

}  // namespace ember
