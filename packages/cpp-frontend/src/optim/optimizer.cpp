#include "ember/optim/optimizer.h"

#include <unordered_set>

#include "ember/autograd.h"
#include "ember/factories.h"
#include "optim/update.h"
#include "autograd/zero_grad.h"

namespace ember {
namespace optim {

OptimizerOptions::~OptimizerOptions() = default;
OptimizerParamState::~OptimizerParamState() = default;

std::vector<std::pair<std::string, Tensor>> OptimizerParamState::named_tensors() const { return {}; }

bool OptimizerParamState::set_named_tensor(const std::string& /*name*/, const Tensor& /*value*/) { return false; }

std::unique_ptr<OptimizerParamState> Optimizer::make_param_state() const {
    EMBER_ERROR("this optimizer cannot make a parameter state (it does not override make_param_state)");
}

// ---------------------------------------------------------------------- OptimizerParamGroup

OptimizerParamGroup::OptimizerParamGroup(const OptimizerParamGroup& other)
    : params_(other.params_), options_(other.has_options() ? other.options_->clone() : nullptr) {}

OptimizerParamGroup& OptimizerParamGroup::operator=(const OptimizerParamGroup& other) {
    if (this != &other) {
        params_ = other.params_;
        options_ = other.has_options() ? other.options_->clone() : nullptr;
    }
    return *this;
}

OptimizerOptions& OptimizerParamGroup::options() {
    EMBER_CHECK(options_, "this parameter group has no options");
    return *options_;
}

const OptimizerOptions& OptimizerParamGroup::options() const {
    EMBER_CHECK(options_, "this parameter group has no options");
    return *options_;
}

// -------------------------------------------------------------------------------- Optimizer

Optimizer::Optimizer(std::vector<OptimizerParamGroup> param_groups,
                     std::unique_ptr<OptimizerOptions> defaults)
    : defaults_(std::move(defaults)) {
    EMBER_CHECK(defaults_, "an optimizer needs default options");
    EMBER_CHECK_VALUE(!param_groups.empty(), "optimizer got an empty parameter list");
    for (const OptimizerParamGroup& group : param_groups) add_param_group(group);
}

Optimizer::Optimizer(std::vector<Tensor> parameters, std::unique_ptr<OptimizerOptions> defaults)
    : Optimizer(single_group(std::move(parameters)), std::move(defaults)) {}

std::vector<OptimizerParamGroup> Optimizer::single_group(std::vector<Tensor> params) {
    EMBER_CHECK_VALUE(!params.empty(), "optimizer got an empty parameter list");
    std::vector<OptimizerParamGroup> groups;
    groups.emplace_back(std::move(params));
    return groups;
}

Optimizer::~Optimizer() = default;

namespace {

// Python's checks of the parameters added to an optimizer.
void check_new_params(const std::vector<OptimizerParamGroup>& groups,
                      const std::vector<Tensor>& params) {
    std::unordered_set<const TensorImpl*> seen;
    for (const OptimizerParamGroup& group : groups) {
        for (const Tensor& p : group.params()) seen.insert(p.unsafeGetTensorImpl());
    }
    for (const Tensor& p : params) {
        EMBER_CHECK_TYPE(p.defined(),
                         "optimizer can only optimize Tensors, but one of the params is undefined");
        EMBER_CHECK_VALUE(p.is_leaf() || p.retains_grad(), "can't optimize a non-leaf Tensor");
        EMBER_CHECK_VALUE(!seen.count(p.unsafeGetTensorImpl()),
                          "some parameters appear in more than one parameter group");
    }
}

}  // namespace

void Optimizer::add_param_group(const OptimizerParamGroup& param_group) {
    check_new_params(param_groups_, param_group.params());
    param_groups_.emplace_back(param_group.params(), param_group.has_options()
                                                         ? param_group.options().clone()
                                                         : defaults_->clone());
}

void Optimizer::add_parameters(const std::vector<Tensor>& parameters) {
    EMBER_CHECK(!param_groups_.empty(), "the optimizer has no parameter group");
    check_new_params(param_groups_, parameters);
    auto& params = param_groups_.front().params();
    params.insert(params.end(), parameters.begin(), parameters.end());
}

void Optimizer::zero_grad(bool set_to_none) {
    for (OptimizerParamGroup& group : param_groups_) {
        for (const Tensor& p : group.params()) autograd::zero_grad_of(p, set_to_none);
    }
}

Tensor Optimizer::step(LossClosure closure) {
    Tensor loss;
    if (closure) {
        AutoGradMode enable_grad(true);
        loss = closure();
    }
    NoGradGuard no_grad;
    for (OptimizerParamGroup& group : param_groups_) step_group(group);
    return loss;
}

const std::vector<Tensor>& Optimizer::parameters() const noexcept {
    return param_groups_.front().params();
}

std::vector<Tensor>& Optimizer::parameters() noexcept { return param_groups_.front().params(); }

std::size_t Optimizer::size() const noexcept {
    std::size_t n = 0;
    for (const OptimizerParamGroup& group : param_groups_) n += group.params().size();
    return n;
}

// ------------------------------------------------------------------- detail::ParamUpdate

namespace detail {

ParamUpdate::ParamUpdate(const Tensor& param, const char* optimizer) : param_(param) {
    const ScalarType dtype = param.scalar_type();
    EMBER_CHECK(dtype == kFloat || dtype == kDouble, optimizer,
                " supports float32 and float64 parameters, got ", dtype);
    data_ = param.is_contiguous() ? param : param.contiguous();
    grad_ = param.grad();
    if (grad_.scalar_type() != dtype) grad_ = grad_.to(dtype);
    if (!grad_.is_contiguous()) grad_ = grad_.contiguous();
    EMBER_CHECK(grad_.sizes() == data_.sizes(), optimizer, ": a gradient of shape ",
                grad_.sizes(), " for a parameter of shape ", data_.sizes());
}

Tensor ParamUpdate::zeros_like_param() const { return zeros(data_.sizes(), data_.scalar_type()); }

void ParamUpdate::finish() {
    if (data_.is_same(param_)) {
        param_.unsafeGetTensorImpl()->bump_version();
    } else {
        param_.copy_(data_);
    }
}

}  // namespace detail
}  // namespace optim
}  // namespace ember
