// Complex tensors from and to std::complex<double> values, for the complex kernels' tests:
//
//   Tensor z = ember::testing::complex_tensor({{1, 2}, {3, -1}}, {2}, ember::kComplexFloat);
//   std::vector<std::complex<double>> v = ember::testing::values_of(z.exp());
#pragma once

#include <complex>
#include <cstdint>
#include <vector>

#include "ember/complex.h"
#include "ember/tensor.h"

namespace ember {
namespace testing {

// A tensor of `shape` holding `values` (row-major), converted to `dtype`.
inline Tensor complex_tensor(const std::vector<std::complex<double>>& values,
                             std::vector<int64_t> shape, ScalarType dtype = kComplexDouble) {
    Tensor t = ember::empty(shape, kComplexDouble);
    std::complex<double>* p = t.data_ptr<std::complex<double>>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
    return t.to(dtype);
}

// The elements of `t` (any dtype) as complex doubles, row-major.
inline std::vector<std::complex<double>> values_of(const Tensor& t) {
    Tensor c = t.to(kComplexDouble).contiguous();
    const std::complex<double>* p = c.data_ptr<std::complex<double>>();
    return std::vector<std::complex<double>>(p, p + c.numel());
}

}  // namespace testing
}  // namespace ember
