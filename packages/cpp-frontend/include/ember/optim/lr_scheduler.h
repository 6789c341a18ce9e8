// Learning-rate schedulers (libtorch's torch::optim::LRScheduler / StepLR, plus
// CosineAnnealingLR), with the lr sequences of Python Ember's ember.optim.lr_scheduler
// (PyTorch's recursive, chainable forms).
//
//   ember::optim::SGD opt(params, ember::optim::SGDOptions(0.1));
//   ember::optim::StepLR sched(opt, /*step_size=*/30, /*gamma=*/0.1);
//   for (int epoch = 0; epoch < 90; ++epoch) {
//       train_one_epoch(opt);
//       sched.step();  // after the optimizer's steps, as in PyTorch >= 1.1
//   }
//
// Constructing a scheduler performs its initial step (last_epoch() becomes 0), as in Python;
// each step() then advances last_epoch() by one and writes the new lr of every parameter
// group into the optimizer. The base lrs are the groups' lrs at construction.
#pragma once

#include "../export.h"
#include <cstdint>
#include <vector>

#include "optimizer.h"

namespace ember {
namespace optim {

class EMBER_API LRScheduler {
public:
    explicit LRScheduler(Optimizer& optimizer);
    LRScheduler(const LRScheduler&) = delete;
    LRScheduler& operator=(const LRScheduler&) = delete;
    virtual ~LRScheduler();

    // Advances one epoch and sets the optimizer's lrs.
    void step();
    // The lr of each group after the last step (Python's get_last_lr()).
    const std::vector<double>& get_last_lr() const noexcept { return last_lr_; }
    // The groups' lrs when the scheduler was made.
    const std::vector<double>& base_lrs() const noexcept { return base_lrs_; }
    int64_t last_epoch() const noexcept { return last_epoch_; }

protected:
    // Performs the initial step: a subclass calls it at the end of its constructor, once its
    // own members are set (get_lrs() is virtual, so the base constructor cannot).
    void initial_step();
    // The new lr of each group for last_epoch() (already advanced), from the current ones.
    virtual std::vector<double> get_lrs() = 0;
    // The groups' current lrs.
    std::vector<double> get_current_lrs() const;
    // Whether this is the initial step (made by initial_step()).
    bool is_initial() const noexcept { return is_initial_; }

    Optimizer& optimizer_;
    unsigned step_count_ = 0;

private:
    void set_optimizer_lrs(const std::vector<double>& lrs);

    std::vector<double> base_lrs_;
    std::vector<double> last_lr_;
    int64_t last_epoch_ = -1;
    bool is_initial_ = false;
};

// Multiplies each group's lr by gamma every step_size epochs.
class EMBER_API StepLR : public LRScheduler {
public:
    StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

protected:
    std::vector<double> get_lrs() override;

private:
    int64_t step_size_;
    double gamma_;
};

// Cosine annealing from each group's initial lr to eta_min over T_max epochs (and back up
// over the next T_max, periodically), in PyTorch's recursive form: each lr is computed from
// the group's current one, so changes made to the lrs by other code carry on.
class EMBER_API CosineAnnealingLR : public LRScheduler {
public:
    CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0.0);

protected:
    std::vector<double> get_lrs() override;

private:
    int64_t T_max_;
    double eta_min_;
};

}  // namespace optim
}  // namespace ember
