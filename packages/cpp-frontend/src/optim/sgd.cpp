// SGD: the update of Python Ember's ember.optim.sgd._single_tensor_sgd, one pass per
// parameter over its contiguous data.
#include "ember/optim/sgd.h"

#include "optim/param_group.h"
#include "optim/update.h"

namespace ember {
namespace optim {

namespace {

struct SGDScalars {
    double lr, momentum, dampening, weight_decay;
};

// d -= lr * g, after (in order) coupled weight decay g += wd * d, and momentum:
// buf = g on the first step, else buf = momentum * buf + (1 - dampening) * g; then g = buf,
// or g += momentum * buf with Nesterov. Every operation in T, as NumPy on T arrays.
template <typename T, bool kDecay, bool kMomentum, bool kNesterov>
void sgd_loop(T* d, const T* g, T* buf, bool first, int64_t n, const SGDScalars& s) {
    const T lr = static_cast<T>(s.lr);
    const T wd = static_cast<T>(s.weight_decay);
    const T momentum = static_cast<T>(s.momentum);
    const T keep = static_cast<T>(1 - s.dampening);
    const bool dampened = s.dampening != 0;
    for (int64_t i = 0; i < n; ++i) {
        T gi = g[i];
        if constexpr (kDecay) gi = gi + wd * d[i];
        if constexpr (kMomentum) {
            T b;
            if (first) {
                b = gi;
            } else {
                b = buf[i] * momentum;
                b = dampened ? b + gi * keep : b + gi;
            }
            buf[i] = b;
            if constexpr (kNesterov) {
                gi = gi + momentum * b;
            } else {
                gi = b;
            }
        }
        d[i] = d[i] - gi * lr;
    }
}

}  // namespace

namespace {

// PyTorch's checks, before anything else (as Python's constructor makes them).
std::unique_ptr<OptimizerOptions> checked(const SGDOptions& defaults) {
    EMBER_CHECK_VALUE(defaults.lr() >= 0, "Invalid learning rate: ", defaults.lr());
    EMBER_CHECK_VALUE(defaults.momentum() >= 0, "Invalid momentum value: ", defaults.momentum());
    EMBER_CHECK_VALUE(defaults.weight_decay() >= 0, "Invalid weight_decay value: ",
                      defaults.weight_decay());
    EMBER_CHECK_VALUE(!defaults.nesterov() || (defaults.momentum() > 0 && defaults.dampening() == 0),
                      "Nesterov momentum requires a momentum and zero dampening");
    return std::make_unique<SGDOptions>(defaults);
}

}  // namespace

SGD::SGD(std::vector<OptimizerParamGroup> param_groups, SGDOptions defaults)
    : Optimizer(std::move(param_groups), checked(defaults)) {}

SGD::SGD(std::vector<Tensor> params, SGDOptions defaults)
    : Optimizer(single_group(std::move(params)), checked(defaults)) {}

void SGD::step_group(OptimizerParamGroup& group) {
    const auto& o = detail::group_options<SGDOptions>(group, "SGD");
    const SGDScalars s{o.lr(), o.momentum(), o.dampening(), o.weight_decay()};
    const bool momentum = o.momentum() != 0;
    for (const Tensor& p : group.params()) {
        if (!p.grad().defined()) continue;
        detail::ParamUpdate update(p, "SGD");
        Tensor buffer;
        bool first = false;
        if (momentum) {  // the state exists only with momentum, as in PyTorch
            auto& st = detail::param_state<SGDParamState>(state_, p, first);
            if (first) st.momentum_buffer(update.zeros_like_param());
            buffer = st.momentum_buffer();
        }
        detail::dispatch_float(update.dtype(), [&](auto tag) {
            using T = decltype(tag);
            T* buf = momentum ? buffer.data_ptr<T>() : nullptr;
            detail::dispatch_bool(o.weight_decay() != 0, [&](auto decay) {
                detail::dispatch_bool(momentum, [&](auto with_momentum) {
                    detail::dispatch_bool(o.nesterov(), [&](auto nesterov) {
                        sgd_loop<T, decay(), with_momentum(), nesterov() && with_momentum()>(
                            update.data<T>(), update.grad<T>(), buf, first, update.numel(), s);
                    });
                });
            });
        });
        update.finish();
    }
}

// ------------------------------------------------------------------- state for save/load

std::vector<std::pair<std::string, Tensor>> SGDParamState::named_tensors() const {
    if (!momentum_buffer().defined()) return {};
    return {{"momentum_buffer", momentum_buffer()}};
}

bool SGDParamState::set_named_tensor(const std::string& name, const Tensor& value) {
    if (name != "momentum_buffer") return false;
    momentum_buffer(value);
    return true;
}

serialize::Value SGDOptions::param_group() const {
    serialize::Value g = serialize::Value::dict();
    g.set("lr", detail::number(lr()));
    g.set("momentum", detail::number(momentum(), true));
    g.set("dampening", detail::number(dampening(), true));
    g.set("weight_decay", detail::number(weight_decay(), true));
    g.set("nesterov", serialize::Value::from_bool(nesterov()));
    g.set("maximize", serialize::Value::from_bool(false));
    g.set("foreach", serialize::Value());
    g.set("differentiable", serialize::Value::from_bool(false));
    g.set("fused", serialize::Value());
    return g;
}

void SGDOptions::set_param_group(const serialize::Value& group) {
    SGDOptions o(detail::group_number(group, "lr", "SGD"));
    o.momentum(detail::group_number(group, "momentum", "SGD"));
    o.dampening(detail::group_number(group, "dampening", "SGD"));
    o.weight_decay(detail::group_number(group, "weight_decay", "SGD"));
    o.nesterov(detail::group_bool(group, "nesterov", "SGD", false));
    detail::require_false(group, "maximize", "SGD");
    *this = o;
}

std::unique_ptr<OptimizerParamState> SGD::make_param_state() const { return std::make_unique<SGDParamState>(); }

}  // namespace optim
}  // namespace ember
