// What the optimizers' update loops share (private to libember): the typed, contiguous view
// of a parameter and its gradient that the loops write through, the lookup of a parameter's
// state, the options of a group as the optimizer's own type, and dispatch on the float dtype
// and on compile-time flags.
//
// The loops reproduce Python Ember's NumPy arithmetic operation by operation: every step is
// done in the parameter's dtype T, with Python's double hyper-parameters cast to T first (as
// NumPy casts a Python float against a float32 array), so float32 trajectories match Python's
// bit for bit on IEEE hardware without fused multiply-adds.
#pragma once

#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include "ember/error.h"
#include "ember/ops.h"
#include "ember/optim/optimizer.h"
#include "ember/tensor.h"

namespace ember {
namespace optim {
namespace detail {

// A parameter about to be updated in place: data<T>() is its elements (the parameter's own
// memory when it is contiguous, else a contiguous copy that finish() writes back), grad<T>()
// its gradient's, contiguous and of the parameter's dtype. finish() bumps the version counter
// as any in-place op does. Only float32 and float64 parameters are supported.
class ParamUpdate {
public:
    ParamUpdate(const Tensor& param, const char* optimizer);
    ParamUpdate(const ParamUpdate&) = delete;
    ParamUpdate& operator=(const ParamUpdate&) = delete;

    ScalarType dtype() const { return data_.scalar_type(); }
    int64_t numel() const { return data_.numel(); }
    template <typename T>
    T* data() const { return data_.data_ptr<T>(); }
    template <typename T>
    const T* grad() const { return grad_.data_ptr<T>(); }
    // A new zero tensor shaped like the parameter (for state such as momentum buffers).
    Tensor zeros_like_param() const;
    void finish();

private:
    Tensor param_;
    Tensor data_;
    Tensor grad_;
};

// Calls f(T{}) with T = float or double for dtype.
template <typename F>
void dispatch_float(ScalarType dtype, F&& f) {
    if (dtype == kFloat) {
        f(float{});
    } else {
        f(double{});  // ParamUpdate admits only float32 and float64
    }
}

// Calls f(std::integral_constant<bool, b>{}): turns a runtime flag into a template argument
// so that each combination of a loop's options gets its own branch-free loop.
template <typename F>
void dispatch_bool(bool b, F&& f) {
    if (b) {
        f(std::true_type{});
    } else {
        f(std::false_type{});
    }
}

// The state of parameter p as S (made, default-constructed, on first use); `fresh` says
// whether it was just made.
template <typename S>
S& param_state(Optimizer::StateMap& state, const Tensor& p, bool& fresh) {
    std::unique_ptr<OptimizerParamState>& slot = state[p.unsafeGetTensorImpl()];
    fresh = !slot;
    if (fresh) slot = std::make_unique<S>();
    S* s = dynamic_cast<S*>(slot.get());
    EMBER_CHECK(s, "the optimizer state of a parameter has the wrong type");
    return *s;
}

// The group's options as Options (an Error naming `optimizer` when they are of another kind).
template <typename Options>
const Options& group_options(const OptimizerParamGroup& group, const char* optimizer) {
    const auto* o = dynamic_cast<const Options*>(&group.options());
    EMBER_CHECK(o, optimizer, ": a parameter group has options of another optimizer");
    return *o;
}

}  // namespace detail
}  // namespace optim
}  // namespace ember
