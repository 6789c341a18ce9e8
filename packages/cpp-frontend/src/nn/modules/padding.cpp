// The padding modules: ReflectionPad, ReplicationPad, ZeroPad, ConstantPad and CircularPad in
// 1-D, 2-D and 3-D, each F::pad in its mode.
#include "ember/nn/modules/padding.h"

#include <string>

#include "ember/nn/functional.h"

namespace ember {
namespace nn {

namespace F = functional;

namespace {

// Python's nn.CircularPad*d._check_input_dim.
void check_input_dim(const Tensor& input, int64_t d) {
    EMBER_CHECK_VALUE(input.dim() == d + 1 || input.dim() == d + 2, "expected ", d + 1, "D or ", d + 2, "D input (got ",
                      input.dim(), "D input)");
}

std::string name_of(const char* kind, size_t d) { return std::string(kind) + std::to_string(d) + "d"; }

}  // namespace

// ---- ReflectionPad ---------------------------------------------------------------------------

template <size_t D>
ReflectionPadImpl<D>::ReflectionPadImpl(const ReflectionPadOptions<D>& options_)
    : Module(name_of("ReflectionPad", D)), options(options_) {}

template <size_t D>
Tensor ReflectionPadImpl<D>::forward(const Tensor& input) {
    return F::pad(input, F::PadFuncOptions(options.padding().vec()).mode(kReflect));
}

template <size_t D>
std::string ReflectionPadImpl<D>::extra_repr() const {
    return detail::py_tuple_repr(options.padding().vec());
}

// ---- ReplicationPad --------------------------------------------------------------------------

template <size_t D>
ReplicationPadImpl<D>::ReplicationPadImpl(const ReplicationPadOptions<D>& options_)
    : Module(name_of("ReplicationPad", D)), options(options_) {}

template <size_t D>
Tensor ReplicationPadImpl<D>::forward(const Tensor& input) {
    return F::pad(input, F::PadFuncOptions(options.padding().vec()).mode(kReplicate));
}

template <size_t D>
std::string ReplicationPadImpl<D>::extra_repr() const {
    return detail::py_tuple_repr(options.padding().vec());
}

// ---- ZeroPad ---------------------------------------------------------------------------------

template <size_t D>
ZeroPadImpl<D>::ZeroPadImpl(const ZeroPadOptions<D>& options_) : Module(name_of("ZeroPad", D)), options(options_) {}

template <size_t D>
Tensor ZeroPadImpl<D>::forward(const Tensor& input) {
    return F::pad(input, F::PadFuncOptions(options.padding().vec()));
}

template <size_t D>
std::string ZeroPadImpl<D>::extra_repr() const {
    return detail::py_tuple_repr(options.padding().vec());
}

// ---- CircularPad -----------------------------------------------------------------------------

template <size_t D>
CircularPadImpl<D>::CircularPadImpl(const CircularPadOptions<D>& options_)
    : Module(name_of("CircularPad", D)), options(options_) {}

template <size_t D>
Tensor CircularPadImpl<D>::forward(const Tensor& input) {
    check_input_dim(input, static_cast<int64_t>(D));
    return F::pad(input, F::PadFuncOptions(options.padding().vec()).mode(kCircular));
}

template <size_t D>
std::string CircularPadImpl<D>::extra_repr() const {
    return detail::py_tuple_repr(options.padding().vec());
}

// ---- ConstantPad -----------------------------------------------------------------------------

template <size_t D>
ConstantPadImpl<D>::ConstantPadImpl(const ConstantPadOptions<D>& options_)
    : Module(name_of("ConstantPad", D)), options(options_) {}

template <size_t D>
Tensor ConstantPadImpl<D>::forward(const Tensor& input) {
    return F::pad(input, F::PadFuncOptions(options.padding().vec()).value(options.value()));
}

template <size_t D>
std::string ConstantPadImpl<D>::extra_repr() const {
    return "padding=" + detail::py_tuple_repr(options.padding().vec()) +
           ", value=" + detail::py_float_repr(options.value());
}

template class ReflectionPadImpl<1>;
template class ReflectionPadImpl<2>;
template class ReflectionPadImpl<3>;
template class ReplicationPadImpl<1>;
template class ReplicationPadImpl<2>;
template class ReplicationPadImpl<3>;
template class ZeroPadImpl<1>;
template class ZeroPadImpl<2>;
template class ZeroPadImpl<3>;
template class CircularPadImpl<1>;
template class CircularPadImpl<2>;
template class CircularPadImpl<3>;
template class ConstantPadImpl<1>;
template class ConstantPadImpl<2>;
template class ConstantPadImpl<3>;

}  // namespace nn
}  // namespace ember
