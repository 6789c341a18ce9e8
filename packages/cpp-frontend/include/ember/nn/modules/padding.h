// The padding modules (libtorch's torch::nn::ReflectionPad1d, ...; Python's nn.ReflectionPad1d,
// ...): ReflectionPad1d/2d/3d, ReplicationPad1d/2d/3d, ZeroPad1d/2d/3d, ConstantPad1d/2d/3d
// and CircularPad1d/2d/3d, each F::pad of its last 1, 2 or 3 dims in its mode.
//
//   ember::nn::ReflectionPad2d pad(ember::nn::ReflectionPad2dOptions({1, 1, 2, 0}));
//   ember::nn::ReplicationPad1d rep(2);                       // 2 on both sides
//   ember::nn::ConstantPad3d fill(ember::nn::ConstantPad3dOptions(1, -1.0));
//   ember::Tensor y = pad(x);                                 // x (N, C, H, W) or (C, H, W)
//
// They print as Python's repr: "ReflectionPad2d((1, 1, 2, 0))", "ZeroPad2d((2, 2, 2, 2))",
// "ConstantPad1d(padding=(3, 1), value=3.5)". CircularPad*d checks the input's dims as Python
// (ValueError "expected 3D or 4D input (got 2D input)"); the others leave that to F::pad.
#pragma once

#include "../../export.h"
#include <cstddef>
#include <string>

#include "../module.h"
#include "../options/padding.h"
#include "../pimpl.h"

namespace ember {
namespace nn {

// ReflectionPad<D>d, ReplicationPad<D>d, ZeroPad<D>d and CircularPad<D>d: options (padding)
// and forward, the mode fixed by the class.
#define EMBER_PAD_MODULE_(Name, OptionsName)                                                 \
    template <size_t D>                                                                      \
    class EMBER_API Name : public Module {                                                   \
    public:                                                                                  \
        Name(ExpandingArray<D * 2> padding) : Name(OptionsName<D>(padding)) {} /* NOLINT */  \
        explicit Name(const OptionsName<D>& options);                                        \
        Tensor forward(const Tensor& input);                                                 \
        std::string extra_repr() const override;                                             \
        OptionsName<D> options;                                                              \
    };                                                                                       \
    extern template class Name<1>;                                                           \
    extern template class Name<2>;                                                           \
    extern template class Name<3>

EMBER_PAD_MODULE_(ReflectionPadImpl, ReflectionPadOptions);
EMBER_PAD_MODULE_(ReplicationPadImpl, ReplicationPadOptions);
EMBER_PAD_MODULE_(ZeroPadImpl, ZeroPadOptions);
EMBER_PAD_MODULE_(CircularPadImpl, CircularPadOptions);

#undef EMBER_PAD_MODULE_

// ConstantPad<D>d: padding and the fill value.
template <size_t D>
class EMBER_API ConstantPadImpl : public Module {
public:
    ConstantPadImpl(ExpandingArray<D * 2> padding, double value)
        : ConstantPadImpl(ConstantPadOptions<D>(padding, value)) {}
    explicit ConstantPadImpl(const ConstantPadOptions<D>& options);
    Tensor forward(const Tensor& input);
    // "padding=(3, 1), value=3.5"
    std::string extra_repr() const override;
    ConstantPadOptions<D> options;
};
extern template class ConstantPadImpl<1>;
extern template class ConstantPadImpl<2>;
extern template class ConstantPadImpl<3>;

using ReflectionPad1dImpl = ReflectionPadImpl<1>;
EMBER_MODULE(ReflectionPad1d);
using ReflectionPad2dImpl = ReflectionPadImpl<2>;
EMBER_MODULE(ReflectionPad2d);
using ReflectionPad3dImpl = ReflectionPadImpl<3>;
EMBER_MODULE(ReflectionPad3d);

using ReplicationPad1dImpl = ReplicationPadImpl<1>;
EMBER_MODULE(ReplicationPad1d);
using ReplicationPad2dImpl = ReplicationPadImpl<2>;
EMBER_MODULE(ReplicationPad2d);
using ReplicationPad3dImpl = ReplicationPadImpl<3>;
EMBER_MODULE(ReplicationPad3d);

using ZeroPad1dImpl = ZeroPadImpl<1>;
EMBER_MODULE(ZeroPad1d);
using ZeroPad2dImpl = ZeroPadImpl<2>;
EMBER_MODULE(ZeroPad2d);
using ZeroPad3dImpl = ZeroPadImpl<3>;
EMBER_MODULE(ZeroPad3d);

using ConstantPad1dImpl = ConstantPadImpl<1>;
EMBER_MODULE(ConstantPad1d);
using ConstantPad2dImpl = ConstantPadImpl<2>;
EMBER_MODULE(ConstantPad2d);
using ConstantPad3dImpl = ConstantPadImpl<3>;
EMBER_MODULE(ConstantPad3d);

using CircularPad1dImpl = CircularPadImpl<1>;
EMBER_MODULE(CircularPad1d);
using CircularPad2dImpl = CircularPadImpl<2>;
EMBER_MODULE(CircularPad2d);
using CircularPad3dImpl = CircularPadImpl<3>;
EMBER_MODULE(CircularPad3d);

}  // namespace nn
}  // namespace ember
