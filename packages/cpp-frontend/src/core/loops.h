// Private: elementwise kernels over a TensorIter.
//
//   cpu_kernel<out_t, in_t>(iter, [](opmath a, opmath b) { return a + b; });
//
// Every input has element type in_t and is read as opmath_t<in_t> (float for Half); the
// result is converted to out_t. The inner loop has fast paths for contiguous operands and
// for a broadcast (stride 0) operand, which the compiler vectorises.
#pragma once

#include <cstdint>
#include <utility>

#include "dispatch.h"
#include "tensor_iterator.h"

namespace ember {
namespace native {

namespace loops_detail {

template <typename T>
inline opmath_t<T> load(const char* p) {
    return static_cast<opmath_t<T>>(*reinterpret_cast<const T*>(p));
}

template <typename out_t, typename in_t, typename F, size_t... I>
inline void strided_loop(char** data, const int64_t* strides, int64_t n, F& f, std::index_sequence<I...>) {
    char* out = data[0];
    const int64_t os = strides[0];
    for (int64_t i = 0; i < n; ++i) {
        *reinterpret_cast<out_t*>(out + i * os) =
            static_cast<out_t>(f(load<in_t>(data[I + 1] + i * strides[I + 1])...));
    }
}

template <typename out_t, typename in_t, typename F, size_t... I>
inline void contiguous_loop(char** data, int64_t n, F& f, std::index_sequence<I...>) {
    out_t* __restrict__ out = reinterpret_cast<out_t*>(data[0]);
    for (int64_t i = 0; i < n; ++i) {
        out[i] = static_cast<out_t>(f(static_cast<opmath_t<in_t>>(reinterpret_cast<const in_t*>(data[I + 1])[i])...));
    }
}

}  // namespace loops_detail

template <typename out_t, typename in_t, int N, typename F>
void cpu_kernel_n(const TensorIter& iter, F f) {
    using idx = std::make_index_sequence<N>;
    iter.for_each([&](char** data, const int64_t* strides, int64_t n) {
        bool contiguous = strides[0] == static_cast<int64_t>(sizeof(out_t));
        for (int a = 1; a <= N; ++a) contiguous = contiguous && strides[a] == static_cast<int64_t>(sizeof(in_t));
        if (contiguous) {
            loops_detail::contiguous_loop<out_t, in_t>(data, n, f, idx());
            return;
        }
        if constexpr (N == 2) {
            using op_t = opmath_t<in_t>;
            const bool out_c = strides[0] == static_cast<int64_t>(sizeof(out_t));
            if (out_c && strides[1] == static_cast<int64_t>(sizeof(in_t)) && strides[2] == 0) {
                out_t* __restrict__ out = reinterpret_cast<out_t*>(data[0]);
                const in_t* __restrict__ a = reinterpret_cast<const in_t*>(data[1]);
                const op_t b = loops_detail::load<in_t>(data[2]);
                for (int64_t i = 0; i < n; ++i) out[i] = static_cast<out_t>(f(static_cast<op_t>(a[i]), b));
                return;
            }
            if (out_c && strides[1] == 0 && strides[2] == static_cast<int64_t>(sizeof(in_t))) {
                out_t* __restrict__ out = reinterpret_cast<out_t*>(data[0]);
                const op_t a = loops_detail::load<in_t>(data[1]);
                const in_t* __restrict__ b = reinterpret_cast<const in_t*>(data[2]);
                for (int64_t i = 0; i < n; ++i) out[i] = static_cast<out_t>(f(a, static_cast<op_t>(b[i])));
                return;
            }
        }
        loops_detail::strided_loop<out_t, in_t>(data, strides, n, f, idx());
    });
}

template <typename out_t, typename in_t, typename F>
void unary_kernel(const TensorIter& iter, F f) {
    cpu_kernel_n<out_t, in_t, 1>(iter, f);
}
template <typename out_t, typename in_t, typename F>
void binary_kernel(const TensorIter& iter, F f) {
    cpu_kernel_n<out_t, in_t, 2>(iter, f);
}
template <typename out_t, typename in_t, typename F>
void ternary_kernel(const TensorIter& iter, F f) {
    cpu_kernel_n<out_t, in_t, 3>(iter, f);
}

}  // namespace native
}  // namespace ember
