// Private helpers of the core: making tensors and views, dim wrapping, shape checks.
#pragma once

#include <cstdint>
#include <vector>

#include "ember/error.h"
#include "ember/tensor.h"

namespace ember {
namespace native {

// Contiguous (row-major) strides of sizes.
inline std::vector<int64_t> contiguous_strides(IntArrayRef sizes) {
    std::vector<int64_t> strides(sizes.size());
    int64_t s = 1;
    for (size_t i = sizes.size(); i-- > 0;) {
        strides[i] = s;
        s *= sizes[i] > 1 ? sizes[i] : 1;
    }
    return strides;
}

inline int64_t prod(IntArrayRef sizes) {
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    return n;
}

// A new tensor over storage with the given geometry.
Tensor make_tensor(Storage storage, ScalarType dtype, std::vector<int64_t> sizes,
                   std::vector<int64_t> strides, int64_t offset,
                   std::shared_ptr<VersionCounter> version = nullptr);
// A new contiguous tensor (uninitialised unless zero).
Tensor empty_tensor(IntArrayRef sizes, ScalarType dtype, bool zero = false);
// A new tensor with the given strides (dense: the storage holds exactly the elements).
Tensor empty_strided_tensor(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype);
// The elements a storage needs for a tensor of these sizes and strides (1 + the largest offset;
// 0 when a size is 0), PyTorch's errors on a negative size or mismatched lengths.
int64_t storage_extent(IntArrayRef sizes, IntArrayRef strides);
// A view of self (same storage and version counter, base = self's base or self) with the
// given geometry; no autograd history (the caller records it).
Tensor make_view(const Tensor& self, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                 int64_t offset);
// The same with another element type over the same bytes (view_as_real, view_as_complex):
// sizes, strides and offset count elements of `dtype`.
Tensor make_view(const Tensor& self, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                 int64_t offset, ScalarType dtype);

// PyTorch's maybe_wrap_dim: -1 is the last dim; a 0-dim tensor accepts dims -1 and 0.
inline int64_t wrap_dim(int64_t dim, int64_t ndim, bool wrap_scalar = true) {
    if (ndim <= 0) {
        EMBER_CHECK_INDEX(wrap_scalar, "dimension specified as ", dim, " but tensor has no dimensions");
        ndim = 1;
    }
    const int64_t min = -ndim, max = ndim - 1;
    EMBER_CHECK_INDEX(dim >= min && dim <= max, "Dimension out of range (expected to be in range of [",
                      min, ", ", max, "], but got ", dim, ")");
    return dim < 0 ? dim + ndim : dim;
}

// A bitmask of the dims in `dims` (all dims when empty), PyTorch's messages on repeats.
std::vector<bool> dim_mask(IntArrayRef dims, int64_t ndim);

// The shape after reducing the masked dims (keeping them as 1 when keepdim).
std::vector<int64_t> reduced_shape(IntArrayRef sizes, const std::vector<bool>& mask, bool keepdim);

// Whether a tensor requires grad while grad mode is on (an op must record history).
bool compute_requires_grad(std::initializer_list<const Tensor*> tensors);

// Checks that an in-place op may modify self (PyTorch's leaf / view errors) in grad mode.
void check_inplace(const Tensor& self);
// Bumps the version counter after an in-place modification.
inline void bump_version(const Tensor& t) { t.unsafeGetTensorImpl()->bump_version(); }

// The element at flat index i of a contiguous tensor as double (slow; for tests/printing).
double element_as_double(const Tensor& contiguous_t, int64_t i);

// The result dtype of an op on a tensor of dtype t (with dims) and a Scalar (result_type).
ScalarType promote_with_scalar(ScalarType t, const Scalar& s);

// "[2, 3]"
std::string shape_str(IntArrayRef sizes);

// The C++ element type's name as PyTorch's messages print it ("float", "long int", "c10::Half").
constexpr const char* cpp_type_name(ScalarType t) noexcept {
    switch (t) {
        case kFloat: return "float";
        case kDouble: return "double";
        case kHalf: return "c10::Half";
        case kLong: return "long int";
        case kInt: return "int";
        case kShort: return "short int";
        case kChar: return "signed char";
        case kByte: return "unsigned char";
        case kBool: return "bool";
        case kComplexFloat: return "c10::complex<float>";
        case kComplexDouble: return "c10::complex<double>";
    }
    return "unknown";
}

}  // namespace native
}  // namespace ember
