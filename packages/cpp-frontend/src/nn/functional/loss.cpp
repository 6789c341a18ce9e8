// Losses of ember::nn::functional, with Python Ember's checks and messages.
//
// cross_entropy with class-index targets and no label smoothing is one fused node
// (NllLossBackward0): log-softmax and the pick in one pass, the gradient
// (softmax - one_hot) * weight in one pass (written with ops under create_graph, so that it
// is differentiable again). The other losses are compositions of differentiable ops, with a
// node of their own where PyTorch's gradient differs from the composition's
// (binary_cross_entropy's clamped logs).
#include <cmath>
#include <limits>

#include "common.h"

namespace ember {
namespace nn {

std::string_view reduction_name(Reduction r) {
    switch (r) {
        case Reduction::None: return "none";
        case Reduction::Mean: return "mean";
        case Reduction::Sum: return "sum";
    }
    return "mean";
}

Reduction reduction_from_string(std::string_view s) {
    if (s == "none") return Reduction::None;
    if (s == "mean") return Reduction::Mean;
    if (s == "sum") return Reduction::Sum;
    throw ValueError(std::string(s) + " is not a valid value for reduction");
}

namespace functional {

using namespace detail;

namespace {

// ---- regression losses ----------------------------------------------------------------

Tensor difference(const Tensor& input, const Tensor& target, const char* kernel) {
    check_floating(input, kernel);
    return input - target;
}

// 0.5 d^2 / divisor where |d| < limit, else limit / divisor * (|d| - limit / 2)
Tensor quadratic_then_linear(const Tensor& input, const Tensor& target, double limit, double divisor,
                             Reduction reduction, const char* kernel) {
    const Tensor d = difference(input, target, kernel);
    const Tensor z = d.abs();
    const Tensor loss = where(lt(z, limit), d * d * (0.5 / divisor), (z - 0.5 * limit) * (limit / divisor));
    return apply_reduction(loss, reduction);
}

// ---- class-index targets ----------------------------------------------------------------

int64_t class_axis(const Tensor& input) { return input.dim() == 1 ? 0 : 1; }

void check_class_weight(const Tensor& weight, int64_t classes) {
    if (weight.defined() && !(weight.dim() == 1 && weight.size(0) == classes)) {
        EMBER_ERROR("weight tensor should be defined either for all ", classes,
                    " classes or no classes but got weight tensor of shape: ", shape_str(weight.sizes()));
    }
}

// The targets with ignored entries as 0 (kLong, contiguous) and each entry's class weight
// (0 where ignored), in the input's dtype; with nll_loss's checks and messages.
struct ClassTargets {
    Tensor index;  // target's shape
    Tensor weight_row;
    int64_t axis = 1;
    int64_t classes = 0;
};

ClassTargets class_targets(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t ignore_index) {
    EMBER_CHECK(input.dim() >= 1, "input tensor should be 1D or 2D");
    ClassTargets r;
    r.axis = class_axis(input);
    r.classes = input.size(r.axis);
    const ScalarType tt = target.scalar_type();
    EMBER_CHECK(tt == kLong || tt == kByte, "expected target dtype to be Long or Byte, but got ", tt);
    if (input.dim() >= 2) {
        if (target.dim() == 0 || target.size(0) != input.size(0)) {
            throw ValueError(::ember::detail::str_cat("Expected input batch_size (", input.size(0),
                                                      ") to match target batch_size (",
                                                      target.dim() ? target.size(0) : 0, ")."));
        }
        std::vector<int64_t> expected = input.sizes().vec();
        expected.erase(expected.begin() + r.axis);
        if (target.sizes() != IntArrayRef(expected)) {
            EMBER_CHECK(input.dim() != 2, "0D or 1D target tensor expected, multi-target not supported");
            EMBER_ERROR("Expected target size ", shape_str(expected), ", got ", shape_str(target.sizes()));
        }
    } else {
        EMBER_CHECK(target.dim() == 0, "0D or 1D target tensor expected, multi-target not supported");
    }
    check_class_weight(weight, r.classes);
    check_floating(input, "nll_loss_out_frame");
    not_differentiable("nll_loss_forward", "weight", weight);
    NoGradGuard guard;
    const Tensor valid = ne(target, ignore_index);
    r.index = where(valid, target.to(kLong), Scalar(int64_t(0))).contiguous();
    const Tensor bad = logical_or(lt(r.index, 0), ge(r.index, r.classes));
    if (bad.any().item<bool>()) {
        throw IndexError("Target " + std::to_string(target.masked_select(bad).reshape({-1})[0].item<int64_t>()) +
                         " is out of bounds.");
    }
    if (weight.defined()) {
        r.weight_row = weight.detach().to(input.scalar_type()).index_select(0, r.index.reshape({-1})).view(
                           r.index.sizes()) * valid;
    } else {
        r.weight_row = valid.to(input.scalar_type());
    }
    r.weight_row = r.weight_row.contiguous();
    return r;
}

// -weight_row * input at every row's target, reduced (mean: divided by the weights' sum).
Tensor nll_reduce(const Tensor& picked, const ClassTargets& t, Reduction reduction) {
    const Tensor row = -(picked * t.weight_row);
    switch (reduction) {
        case Reduction::None: return row;
        case Reduction::Sum: return row.sum();
        case Reduction::Mean: break;
    }
    return row.sum() / t.weight_row.sum();
}

// ---- fused cross entropy -----------------------------------------------------------------

// The input viewed as (outer, C, inner), contiguous.
struct ClassGeometry {
    int64_t outer = 1, classes = 1, inner = 1;
};

ClassGeometry class_geometry(const Tensor& input, int64_t axis) {
    ClassGeometry g;
    g.classes = input.size(axis);
    for (int64_t d = 0; d < axis; ++d) g.outer *= input.size(d);
    for (int64_t d = axis + 1; d < input.dim(); ++d) g.inner *= input.size(d);
    return g;
}

// Per row (o, i): lse = logsumexp over the classes; loss_row = -w * (x[target] - lse).
template <typename T>
void cross_entropy_forward_kernel(const T* x, const int64_t* target, const T* w, const ClassGeometry& g, T* lse,
                                  T* loss_row) {
    for (int64_t o = 0; o < g.outer; ++o) {
        for (int64_t i = 0; i < g.inner; ++i) {
            const T* base = x + o * g.classes * g.inner + i;
            T m = -std::numeric_limits<T>::infinity();
            for (int64_t c = 0; c < g.classes; ++c) m = std::max(m, base[c * g.inner]);
            T z = 0;
            for (int64_t c = 0; c < g.classes; ++c) z += std::exp(base[c * g.inner] - m);
            const int64_t r = o * g.inner + i;
            const T logz = std::log(z);
            lse[r] = m + logz;
            loss_row[r] = -(((base[target[r] * g.inner] - m) - logz) * w[r]);
        }
    }
}

// gx[o, c, i] = coef[o, i] * (exp(x - lse) - [c == target])
template <typename T>
void cross_entropy_backward_kernel(const T* x, const int64_t* target, const T* coef, const T* lse,
                                   const ClassGeometry& g, T* gx) {
    for (int64_t o = 0; o < g.outer; ++o) {
        for (int64_t i = 0; i < g.inner; ++i) {
            const int64_t r = o * g.inner + i;
            const int64_t off = o * g.classes * g.inner + i;
            const T k = coef[r], l = lse[r];
            for (int64_t c = 0; c < g.classes; ++c) {
                gx[off + c * g.inner] = k * std::exp(x[off + c * g.inner] - l);
            }
            gx[off + target[r] * g.inner] -= k;
        }
    }
}

Tensor fused_cross_entropy(const Tensor& input_in, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                           Reduction reduction) {
    const ClassTargets t = class_targets(input_in, target, weight, ignore_index);
    const Tensor input = input_in.contiguous();
    const ScalarType dt = input.scalar_type();
    const ClassGeometry geo = class_geometry(input, t.axis);
    Tensor lse = new_empty(t.index.sizes(), dt), row = new_empty(t.index.sizes(), dt);
    dispatch_float_double(dt, "cross_entropy", [&](auto tag) {
        using scalar_t = typename decltype(tag)::type;
        cross_entropy_forward_kernel(input.data_ptr<scalar_t>(), t.index.data_ptr<int64_t>(),
                                     t.weight_row.data_ptr<scalar_t>(), geo, lse.data_ptr<scalar_t>(),
                                     row.data_ptr<scalar_t>());
    });
    Tensor out;
    Tensor denom;
    {
        NoGradGuard guard;
        if (reduction == Reduction::None) {
            out = row;
        } else if (reduction == Reduction::Sum) {
            out = row.sum();
        } else {
            denom = t.weight_row.sum();
            out = row.sum() / denom;
        }
    }
    if (auto node = make_node("NllLossBackward0", {input_in})) {
        set_history(out, node, 0);
        node->save(input);
        node->save(t.index);
        node->save(t.weight_row);
        node->save(lse);
        node->save(denom);
        const int64_t axis = t.axis;
        node->set_formula([axis, geo, reduction](FunctionNode& n, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor()};
            const Tensor x = n.saved(0), index = n.saved(1), w = n.saved(2);
            // each row's coefficient: the incoming gradient times its weight (mean: / the sum)
            Tensor coef = g[0] * w;
            if (reduction == Reduction::Mean) coef = coef / n.saved(4);
            if (GradMode::is_enabled()) {  // create_graph: with ops, differentiable again
                const Tensor one_hot_t = zeros_like(x).scatter(axis, index.unsqueeze(axis), 1.0);
                return {(x.softmax(axis) - one_hot_t) * coef.unsqueeze(axis)};
            }
            coef = coef.expand(index.sizes()).contiguous();
            Tensor gx = new_empty(x.sizes(), x.scalar_type());
            const Tensor lse_t = n.saved(3);
            dispatch_float_double(x.scalar_type(), "cross_entropy_backward", [&](auto tag) {
                using scalar_t = typename decltype(tag)::type;
                cross_entropy_backward_kernel(x.data_ptr<scalar_t>(), index.data_ptr<int64_t>(),
                                              coef.data_ptr<scalar_t>(), lse_t.data_ptr<scalar_t>(), geo,
                                              gx.data_ptr<scalar_t>());
            });
            return {gx};
        });
    }
    return out;
}

// ---- cross entropy: probabilities and label smoothing --------------------------------------

std::vector<int64_t> class_view(int64_t classes, int64_t axis, int64_t ndim) {
    std::vector<int64_t> shape(static_cast<size_t>(ndim - axis), 1);
    shape[0] = classes;
    return shape;
}

// -(logp * target * weight) summed over the classes (PyTorch's cross_entropy_loss_prob_target)
Tensor probability_loss(const Tensor& logp, Tensor target, const Tensor& weight, Reduction reduction, double eps,
                        int64_t axis) {
    const int64_t classes = logp.size(axis);
    if (eps > 0) target = target * (1 - eps) + eps / static_cast<double>(classes);
    Tensor prod = logp * target;
    if (weight.defined()) prod = prod * weight.view(class_view(classes, axis, logp.dim()));
    if (reduction == Reduction::None) return -prod.sum({axis});
    const Tensor total = -prod.sum();
    if (reduction == Reduction::Sum) return total;
    const int64_t rows = classes ? logp.numel() / classes : 0;
    return rows ? total / static_cast<double>(rows) : total * std::numeric_limits<double>::quiet_NaN();
}

// (1 - eps) * nll + eps / C * smooth, smooth the loss of a uniform target (PyTorch's
// cross_entropy_loss_label_smoothing)
Tensor smoothed_loss(const Tensor& nll, const Tensor& logp, const Tensor& target, const Tensor& weight,
                     int64_t ignore_index, Reduction reduction, double eps, int64_t axis) {
    const int64_t classes = logp.size(axis);
    const Tensor w_logp = weight.defined() ? logp * weight.view(class_view(classes, axis, logp.dim())) : logp;
    const Tensor ignored = eq(target, ignore_index);
    Tensor smooth = (-w_logp.sum({axis})).masked_fill(ignored, 0.0);
    if (reduction == Reduction::Mean) {
        const Tensor kept = logical_not(ignored);
        const Tensor denom = weight.defined()
                                 ? weight.gather(0, target.masked_select(kept).reshape({-1}).to(kLong)).sum()
                                 : kept.sum();
        smooth = smooth.sum() / denom;
    } else if (reduction == Reduction::Sum) {
        smooth = smooth.sum();
    }
    return nll * (1 - eps) + smooth * (eps / static_cast<double>(classes));
}

std::string format_g(double v) {
    std::ostringstream os;
    os << v;  // the default stream format is printf's %g
    return os.str();
}

// ---- binary losses -------------------------------------------------------------------------

std::string ember_size(IntArrayRef sizes) { return "ember.Size(" + shape_str(sizes) + ")"; }

// weight in like's dtype; PyTorch's error when it would broadcast the loss to a larger shape.
Tensor loss_weight(const Tensor& weight, const Tensor& like, IntArrayRef loss_shape) {
    if (!weight.defined()) return weight;
    const std::vector<int64_t> shape = infer_size(loss_shape, weight.sizes());
    if (IntArrayRef(shape) != loss_shape) {
        EMBER_ERROR("output with shape ", shape_str(loss_shape), " doesn't match the broadcast shape ",
                    shape_str(shape));
    }
    return weight.to(like.scalar_type());
}

void check_unit_interval(const Tensor& t, const char* name) {
    NoGradGuard guard;
    EMBER_CHECK(logical_and(ge(t, 0), le(t, 1)).all().item<bool>(), "all elements of ", name,
                " should be between 0 and 1");
}

constexpr double kBceEps = 1e-12;  // PyTorch's floor of x (1 - x) in binary_cross_entropy's gradient

}  // namespace

Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& options) {
    const Tensor d = difference(input, target, "mse_cpu");
    return apply_reduction(d * d, options.reduction());
}

Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& options) {
    return apply_reduction(difference(input, target, "l1_cpu").abs(), options.reduction());
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& options) {
    const double beta = options.beta();
    EMBER_CHECK(beta >= 0, "smooth_l1_loss does not support negative values for beta.");
    if (beta == 0) return apply_reduction(difference(input, target, "smooth_l1_cpu").abs(), options.reduction());
    return quadratic_then_linear(input, target, beta, beta, options.reduction(), "smooth_l1_cpu");
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, ReductionType reduction, double beta) {
    return smooth_l1_loss(input, target, SmoothL1LossFuncOptions(reduction).beta(beta));
}

Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& options) {
    const double delta = options.delta();
    EMBER_CHECK(delta > 0, "huber_loss does not support non-positive values for delta.");
    return quadratic_then_linear(input, target, delta, 1.0, options.reduction(), "huber_cpu");
}

Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& options) {
    const ClassTargets t = class_targets(input, target, options.weight(), options.ignore_index());
    const Tensor picked = input.gather(t.axis, t.index.unsqueeze(t.axis)).squeeze(t.axis);
    return nll_reduce(picked, t, options.reduction());
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& options) {
    const Reduction reduction = options.reduction();
    const double eps = options.label_smoothing();
    if (!(eps >= 0.0 && eps <= 1.0)) EMBER_ERROR("label_smoothing must be between 0.0 and 1.0. Got: ", format_g(eps));
    EMBER_CHECK(input.dim() >= 1, "input tensor should be 1D or 2D");
    const int64_t axis = class_axis(input);
    Tensor weight = options.weight();
    const bool probabilities = target.sizes() == input.sizes();
    if (probabilities) {
        EMBER_CHECK(target.is_floating_point(), "Expected floating point type for target with class probabilities, got ",
                    target.scalar_type());
        EMBER_CHECK(options.ignore_index() < 0, "ignore_index is not supported for floating point target");
        check_class_weight(weight, input.size(axis));
    } else if (eps == 0.0 && input.is_floating_point() && input.numel() > 0 && input.scalar_type() != kHalf) {
        return fused_cross_entropy(input, target, weight, options.ignore_index(), reduction);
    }
    const Tensor logp = ember::log_softmax(input, axis);
    if (weight.defined()) weight = weight.to(logp.scalar_type());
    if (probabilities) return probability_loss(logp, target, weight, reduction, eps, axis);
    const Tensor nll = nll_loss(logp, target,
                                NLLLossFuncOptions(reduction).weight(weight).ignore_index(options.ignore_index()));
    if (eps == 0.0) return nll;
    return smoothed_loss(nll, logp, target, weight, options.ignore_index(), reduction, eps, axis);
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BinaryCrossEntropyFuncOptions& options) {
    if (target.sizes() != input.sizes()) {
        throw ValueError("Using a target size (" + ember_size(target.sizes()) +
                         ") that is different to the input size (" + ember_size(input.sizes()) +
                         ") is deprecated. Please ensure they have the same size.");
    }
    EMBER_CHECK(target.scalar_type() == input.scalar_type(), "Found dtype ", target.scalar_type(), " but expected ",
                input.scalar_type());
    check_unit_interval(input, "input");
    check_unit_interval(target, "target");
    not_differentiable("binary_cross_entropy", "weight", options.weight());
    check_floating(input, "binary_cross_entropy");
    const Tensor w = loss_weight(options.weight(), input, input.sizes());
    Tensor loss;
    {
        NoGradGuard guard;
        loss = (target - 1) * input.neg().log1p().clamp_min(-100) - target * input.log().clamp_min(-100);
        if (w.defined()) loss = loss * w;
    }
    if (auto node = make_node("BinaryCrossEntropyBackward0", {input, target})) {
        set_history(loss, node, 0);
        node->save(input);
        node->save(target);
        node->save(w);
        node->set_formula([](FunctionNode& n, variable_list&& g) -> variable_list {
            if (!g[0].defined()) return {Tensor(), Tensor()};
            const Tensor x = n.saved(0), t = n.saved(1), weight = n.saved(2);
            const Tensor scale = weight.defined() ? g[0] * weight : g[0];
            variable_list grads(2);
            if (n.needs(0)) grads[0] = (x - t) / ((1 - x) * x).clamp_min(kBceEps) * scale;
            if (n.needs(1)) grads[1] = -(x.log() - x.neg().log1p()) * scale;
            return grads;
        });
    }
    return apply_reduction(loss, options.reduction());
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& options) {
    if (target.sizes() != input.sizes()) {
        throw ValueError("Target size (" + ember_size(target.sizes()) + ") must be the same as input size (" +
                         ember_size(input.sizes()) + ")");
    }
    not_differentiable("binary_cross_entropy_with_logits", "weight", options.weight());
    not_differentiable("binary_cross_entropy_with_logits", "pos_weight", options.pos_weight());
    check_floating(input, "log_sigmoid_cpu");
    const ScalarType dt = promote_types(input.scalar_type(), target.scalar_type());
    const Tensor x = input.to(dt), t = target.to(dt);
    Tensor log_sig = logsigmoid(x);
    const Tensor pw = loss_weight(options.pos_weight(), x, x.sizes());
    if (pw.defined()) log_sig = log_sig * ((pw - 1) * t + 1);
    Tensor loss = (1 - t) * x - log_sig;
    const Tensor w = loss_weight(options.weight(), x, loss.sizes());
    if (w.defined()) loss = loss * w;
    return apply_reduction(loss, options.reduction());
}

}  // namespace functional
}  // namespace nn
}  // namespace ember
