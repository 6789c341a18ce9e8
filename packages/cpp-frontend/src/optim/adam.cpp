// Adam and AdamW: the update of Python Ember's ember.optim.adam._single_tensor_adam (AdamW is
// Adam with decoupled weight decay), one pass per parameter over its contiguous data.
#include "ember/optim/adam.h"

#include <algorithm>
#include <cmath>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <tuple>
#include <type_traits>

#include "ember/factories.h"
#include "optim/param_group.h"
#include "optim/update.h"

namespace ember {
namespace optim {

namespace {

enum class Decay { None, Coupled, Decoupled };

// The per-step scalars, in double as Python computes them.
struct AdamScalars {
    double weight_decay;  // coupled: g += wd * d
    double shrink;        // decoupled: d *= 1 - lr * wd
    double beta1, beta2, eps;
    double step_size;              // lr / (1 - beta1^step)
    double bias_correction2_sqrt;  // (1 - beta2^step)^0.5
};

// Square roots in place, correctly rounded (NumPy's sqrt). Compilers keep sqrt a scalar libm
// call wherever it may have to set errno, which stops a loop around it from vectorizing; so
// Adam's loop leaves the roots to this pass, which uses the SIMD square root where there is
// one (SSE2 is part of x86-64).
template <typename T>
void sqrt_in_place(T* x, int64_t n) {
    int64_t i = 0;
#if defined(__SSE2__)
    if constexpr (std::is_same_v<T, float>) {
        for (; i + 4 <= n; i += 4) _mm_storeu_ps(x + i, _mm_sqrt_ps(_mm_loadu_ps(x + i)));
    } else {
        for (; i + 2 <= n; i += 2) _mm_storeu_pd(x + i, _mm_sqrt_pd(_mm_loadu_pd(x + i)));
    }
#endif
    for (; i < n; ++i) x[i] = std::sqrt(x[i]);
}

// One Adam step on n elements, each operation in T as NumPy does it on T arrays:
//   m.lerp_(g, 1 - beta1)  (PyTorch's two-sided lerp formula)
//   v = v * beta2 + (g * g) * (1 - beta2)
//   v_max = maximum(v_max, v) with amsgrad, used in place of v
//   d -= m / (sqrt(v) / bias_correction2_sqrt + eps) * step_size
// in blocks that stay in the L1 cache: the moments, then the square roots, then the update.
template <typename T, Decay kDecay, bool kAmsgrad, bool kLerpFromEnd>
void adam_loop(T* d, const T* g, T* m, T* v, T* v_max, int64_t n, const AdamScalars& s) {
    const double weight = 1 - s.beta1;
    const T lerp_weight = static_cast<T>(kLerpFromEnd ? 1 - weight : weight);
    const T wd = static_cast<T>(s.weight_decay);
    const T shrink = static_cast<T>(s.shrink);
    const T beta2 = static_cast<T>(s.beta2);
    const T one_minus_beta2 = static_cast<T>(1 - s.beta2);
    const T bc2 = static_cast<T>(s.bias_correction2_sqrt);
    const T eps = static_cast<T>(s.eps);
    const T step_size = static_cast<T>(s.step_size);
    constexpr int64_t kBlock = 512;
    T root[kBlock];
    for (int64_t start = 0; start < n; start += kBlock) {
        const int64_t len = std::min(kBlock, n - start);
        T* db = d + start;
        const T* gb = g + start;
        T* mb = m + start;
        T* vb = v + start;
        for (int64_t i = 0; i < len; ++i) {
            T gi = gb[i];
            if constexpr (kDecay == Decay::Coupled) gi = gi + wd * db[i];
            const T mi = mb[i];
            const T t = gi - mi;
            if constexpr (kLerpFromEnd) {
                mb[i] = gi - t * lerp_weight;
            } else {
                mb[i] = mi + t * lerp_weight;
            }
            T vi = vb[i] * beta2 + (gi * gi) * one_minus_beta2;
            vb[i] = vi;
            if constexpr (kAmsgrad) {  // NumPy's maximum: NaN when either is
                const T vm = v_max[start + i];
                vi = (vm != vm || vm >= vi) ? vm : vi;
                v_max[start + i] = vi;
            }
            root[i] = vi;
        }
        sqrt_in_place(root, len);
        for (int64_t i = 0; i < len; ++i) {
            T di = db[i];
            if constexpr (kDecay == Decay::Decoupled) di = di * shrink;
            const T denom = root[i] / bc2 + eps;
            db[i] = di - (mb[i] / denom) * step_size;
        }
    }
}

// PyTorch's checks of the Adam family, in its order, before anything else (as Python's
// constructor makes them).
template <typename Options>
std::unique_ptr<OptimizerOptions> checked(const Options& o) {
    EMBER_CHECK_VALUE(o.lr() >= 0, "Invalid learning rate: ", o.lr());
    EMBER_CHECK_VALUE(o.eps() >= 0, "Invalid epsilon value: ", o.eps());
    const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
    EMBER_CHECK_VALUE(0 <= beta1 && beta1 < 1, "Invalid beta parameter at index 0: ", beta1);
    EMBER_CHECK_VALUE(0 <= beta2 && beta2 < 1, "Invalid beta parameter at index 1: ", beta2);
    EMBER_CHECK_VALUE(o.weight_decay() >= 0, "Invalid weight_decay value: ", o.weight_decay());
    return std::make_unique<Options>(o);
}

}  // namespace

namespace detail {

template <typename Options>
AdamFamily<Options>::AdamFamily(std::vector<OptimizerParamGroup> param_groups, Options defaults)
    : Optimizer(std::move(param_groups), checked(defaults)) {}

template <typename Options>
AdamFamily<Options>::AdamFamily(std::vector<Tensor> params, Options defaults)
    : Optimizer(single_group(std::move(params)), checked(defaults)) {}

template <typename Options>
void AdamFamily<Options>::step_group(OptimizerParamGroup& group) {
    constexpr bool decoupled = std::is_same_v<Options, AdamWOptions>;
    const char* name = decoupled ? "AdamW" : "Adam";
    const auto& o = detail::group_options<Options>(group, name);
    const double lr = o.lr();
    const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
    const double wd = o.weight_decay();
    Decay decay = Decay::None;
    if (wd != 0) decay = decoupled ? Decay::Decoupled : Decay::Coupled;
    for (const Tensor& p : group.params()) {
        if (!p.grad().defined()) continue;
        detail::ParamUpdate update(p, name);
        bool fresh = false;
        auto& st = detail::param_state<AdamParamState>(state_, p, fresh);
        if (fresh) {
            st.exp_avg(update.zeros_like_param());
            st.exp_avg_sq(update.zeros_like_param());
            if (o.amsgrad()) st.max_exp_avg_sq(update.zeros_like_param());
        }
        st.step(st.step() + 1);
        const auto step = static_cast<double>(st.step());
        const AdamScalars s{wd,
                            1 - lr * wd,
                            beta1,
                            beta2,
                            o.eps(),
                            lr / (1 - std::pow(beta1, step)),
                            std::pow(1 - std::pow(beta2, step), 0.5)};
        const bool amsgrad = o.amsgrad() && st.max_exp_avg_sq().defined();
        detail::dispatch_float(update.dtype(), [&](auto tag) {
            using T = decltype(tag);
            T* m = st.exp_avg().template data_ptr<T>();
            T* v = st.exp_avg_sq().template data_ptr<T>();
            T* v_max = amsgrad ? st.max_exp_avg_sq().template data_ptr<T>() : nullptr;
            detail::dispatch_bool(amsgrad, [&](auto ams) {
                detail::dispatch_bool(1 - beta1 >= 0.5, [&](auto from_end) {
                    auto run = [&](auto decay_tag) {
                        adam_loop<T, decltype(decay_tag)::value, ams(), from_end()>(
                            update.data<T>(), update.grad<T>(), m, v, v_max, update.numel(), s);
                    };
                    if (decay == Decay::Coupled) {
                        run(std::integral_constant<Decay, Decay::Coupled>{});
                    } else if (decay == Decay::Decoupled) {
                        run(std::integral_constant<Decay, Decay::Decoupled>{});
                    } else {
                        run(std::integral_constant<Decay, Decay::None>{});
                    }
                });
            });
        });
        update.finish();
    }
}

template class AdamFamily<AdamOptions>;
template class AdamFamily<AdamWOptions>;

}  // namespace detail
// ------------------------------------------------------------------- state for save/load

namespace {

template <typename Options>
serialize::Value adam_param_group(const Options& o, bool decoupled) {
    serialize::Value g = serialize::Value::dict();
    g.set("lr", detail::number(o.lr()));
    g.set("betas", serialize::Value::tuple({detail::number(std::get<0>(o.betas())),
                                            detail::number(std::get<1>(o.betas()))}));
    g.set("eps", detail::number(o.eps()));
    g.set("weight_decay", detail::number(o.weight_decay(), true));
    g.set("amsgrad", serialize::Value::from_bool(o.amsgrad()));
    g.set("maximize", serialize::Value::from_bool(false));
    g.set("foreach", serialize::Value());
    g.set("capturable", serialize::Value::from_bool(false));
    g.set("differentiable", serialize::Value::from_bool(false));
    g.set("fused", serialize::Value());
    g.set("decoupled_weight_decay", serialize::Value::from_bool(decoupled));
    return g;
}

template <typename Options>
void set_adam_param_group(Options& out, const serialize::Value& group, bool decoupled) {
    const char* name = decoupled ? "AdamW" : "Adam";
    Options o(detail::group_number(group, "lr", name));
    o.betas(detail::group_pair(group, "betas", name));
    o.eps(detail::group_number(group, "eps", name));
    o.weight_decay(detail::group_number(group, "weight_decay", name));
    o.amsgrad(detail::group_bool(group, "amsgrad", name, false));
    detail::require_false(group, "maximize", name);
    // absent before PyTorch 2.6 (AdamW was its own class): then the optimizer's own kind
    const bool saved = detail::group_bool(group, "decoupled_weight_decay", name, decoupled);
    EMBER_CHECK_VALUE(saved == decoupled, "loaded state dict is not a state dict of ", name,
                      ": its parameter group has decoupled_weight_decay=", saved ? "True" : "False",
                      " (", saved ? "AdamW" : "Adam", "'s)");
    out = o;
}

}  // namespace

serialize::Value AdamOptions::param_group() const { return adam_param_group(*this, false); }
void AdamOptions::set_param_group(const serialize::Value& group) { set_adam_param_group(*this, group, false); }
serialize::Value AdamWOptions::param_group() const { return adam_param_group(*this, true); }
void AdamWOptions::set_param_group(const serialize::Value& group) { set_adam_param_group(*this, group, true); }

std::string AdamParamState::missing_entry() const {
    if (!exp_avg().defined()) return "exp_avg";
    if (!exp_avg_sq().defined()) return "exp_avg_sq";
    return "";
}

std::vector<std::pair<std::string, Tensor>> AdamParamState::named_tensors() const {
    std::vector<std::pair<std::string, Tensor>> named{{"step", scalar_tensor(static_cast<double>(step()), kFloat32)}};
    for (const auto& [name, t] : {std::pair<const char*, const Tensor*>{"exp_avg", &exp_avg()},
                                  {"exp_avg_sq", &exp_avg_sq()},
                                  {"max_exp_avg_sq", &max_exp_avg_sq()}}) {
        if (t->defined()) named.emplace_back(name, *t);
    }
    return named;
}

bool AdamParamState::set_named_tensor(const std::string& name, const Tensor& value) {
    if (name == "step") {
        const double saved = value.item<double>();
        EMBER_CHECK_VALUE(saved >= 0 && saved <= 9007199254740992.0 && saved == std::floor(saved),
                          "an Adam step count must be a whole number in [0, 2^53], got ", saved);
        step(static_cast<int64_t>(saved));
    } else if (name == "exp_avg") {
        exp_avg(value);
    } else if (name == "exp_avg_sq") {
        exp_avg_sq(value);
    } else if (name == "max_exp_avg_sq") {
        max_exp_avg_sq(value);
    } else {
        return false;
    }
    return true;
}

}  // namespace optim
}  // namespace ember
