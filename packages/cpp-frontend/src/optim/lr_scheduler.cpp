// The schedulers of Python Ember's ember.optim.lr_scheduler, formula for formula (PyTorch's
// recursive forms), so that the lr sequences agree to the last bit.
#include "ember/optim/lr_scheduler.h"

#include <cmath>

#include "ember/error.h"

namespace ember {
namespace optim {

namespace {

constexpr double kPi = 3.141592653589793;  // Python's math.pi

// Python's a % b for b > 0 (never negative).
int64_t python_mod(int64_t a, int64_t b) { return ((a % b) + b) % b; }

int64_t positive(int64_t value, const char* what) {
    EMBER_CHECK_VALUE(value > 0, what, " must be positive, got ", value);
    return value;
}

}  // namespace

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
    base_lrs_ = get_current_lrs();
}

LRScheduler::~LRScheduler() = default;

void LRScheduler::initial_step() {
    step_count_ = 0;
    is_initial_ = true;
    try {
        step();
    } catch (...) {
        is_initial_ = false;
        throw;
    }
    is_initial_ = false;
}

void LRScheduler::step() {
    ++step_count_;
    ++last_epoch_;
    set_optimizer_lrs(get_lrs());
}

std::vector<double> LRScheduler::get_current_lrs() const {
    std::vector<double> lrs;
    lrs.reserve(optimizer_.param_groups().size());
    for (const OptimizerParamGroup& group : optimizer_.param_groups()) {
        lrs.push_back(group.options().get_lr());
    }
    return lrs;
}

void LRScheduler::set_optimizer_lrs(const std::vector<double>& lrs) {
    auto& groups = optimizer_.param_groups();
    EMBER_CHECK(lrs.size() == groups.size(), "the scheduler computed ", lrs.size(),
                " learning rates for ", groups.size(), " parameter groups");
    for (std::size_t i = 0; i < groups.size(); ++i) groups[i].options().set_lr(lrs[i]);
    last_lr_ = get_current_lrs();
}

// ------------------------------------------------------------------------------- StepLR

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(positive(step_size, "StepLR: step_size")), gamma_(gamma) {
    initial_step();
}

std::vector<double> StepLR::get_lrs() {
    std::vector<double> lrs = get_current_lrs();
    if (last_epoch() > 0 && last_epoch() % step_size_ == 0) {
        for (double& lr : lrs) lr = lr * gamma_;
    }
    return lrs;
}

// -------------------------------------------------------------------- CosineAnnealingLR

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), T_max_(positive(T_max, "CosineAnnealingLR: T_max")), eta_min_(eta_min) {
    initial_step();
}

std::vector<double> CosineAnnealingLR::get_lrs() {
    if (is_initial()) return get_current_lrs();
    std::vector<double> lrs = get_current_lrs();
    const int64_t epoch = last_epoch();
    const auto T = static_cast<double>(T_max_);
    if (python_mod(epoch - 1 - T_max_, 2 * T_max_) == 0) {
        for (std::size_t i = 0; i < lrs.size(); ++i) {
            lrs[i] = lrs[i] + (base_lrs()[i] - eta_min_) * (1 - std::cos(kPi / T)) / 2;
        }
        return lrs;
    }
    const double ratio = (1 + std::cos(kPi * static_cast<double>(epoch) / T)) /
                         (1 + std::cos(kPi * static_cast<double>(epoch - 1) / T));
    for (double& lr : lrs) lr = ratio * (lr - eta_min_) + eta_min_;
    return lrs;
}

}  // namespace optim
}  // namespace ember
