// Options of the padding modules (libtorch's torch::nn::ReflectionPadOptions<D>, ...):
// ReflectionPad1d/2d/3d, ReplicationPad1d/2d/3d, ZeroPad1d/2d/3d, ConstantPad1d/2d/3d and
// CircularPad1d/2d/3d. F::pad's own options are functional::PadFuncOptions
// (nn/functional/options.h).
//
//   ember::nn::ReflectionPad2d pad(ember::nn::ReflectionPad2dOptions({1, 1, 2, 0}));
//   ember::nn::ConstantPad1d fill(ember::nn::ConstantPad1dOptions({3, 1}, 3.5));
//   ember::nn::ZeroPad2d zeros(2);                      // 2 on every side of the last 2 dims
//
// padding: one int (every side) or 2 * D ints, (left, right) pairs from the last dim
// backwards: (left, right) for 1-D, (left, right, top, bottom) for 2-D, (left, right, top,
// bottom, front, back) for 3-D. Negative values crop (where the mode allows it, as F::pad).
#pragma once

#include <cstddef>

#include "common.h"

namespace ember {
namespace nn {

#define EMBER_PAD_OPTIONS_(Name)                                                          \
    template <size_t D>                                                                   \
    struct Name {                                                                         \
        Name(ExpandingArray<D * 2> padding) : padding_(padding) {} /* NOLINT */           \
        EMBER_ARG(ExpandingArray<D * 2>, padding);                                        \
    }

// the padding's mirror image, its edge not repeated (F::pad's kReflect)
EMBER_PAD_OPTIONS_(ReflectionPadOptions);
// the edge values repeated (kReplicate)
EMBER_PAD_OPTIONS_(ReplicationPadOptions);
// zeros (kConstant with value 0)
EMBER_PAD_OPTIONS_(ZeroPadOptions);
// the input wrapped around (kCircular)
EMBER_PAD_OPTIONS_(CircularPadOptions);

#undef EMBER_PAD_OPTIONS_

// value (kConstant)
template <size_t D>
struct ConstantPadOptions {
    ConstantPadOptions(ExpandingArray<D * 2> padding, double value) : padding_(padding), value_(value) {}
    EMBER_ARG(ExpandingArray<D * 2>, padding);
    EMBER_ARG(double, value);
};

using ReflectionPad1dOptions = ReflectionPadOptions<1>;
using ReflectionPad2dOptions = ReflectionPadOptions<2>;
using ReflectionPad3dOptions = ReflectionPadOptions<3>;
using ReplicationPad1dOptions = ReplicationPadOptions<1>;
using ReplicationPad2dOptions = ReplicationPadOptions<2>;
using ReplicationPad3dOptions = ReplicationPadOptions<3>;
using ZeroPad1dOptions = ZeroPadOptions<1>;
using ZeroPad2dOptions = ZeroPadOptions<2>;
using ZeroPad3dOptions = ZeroPadOptions<3>;
using ConstantPad1dOptions = ConstantPadOptions<1>;
using ConstantPad2dOptions = ConstantPadOptions<2>;
using ConstantPad3dOptions = ConstantPadOptions<3>;
using CircularPad1dOptions = CircularPadOptions<1>;
using CircularPad2dOptions = CircularPadOptions<2>;
using CircularPad3dOptions = CircularPadOptions<3>;

}  // namespace nn
}  // namespace ember
