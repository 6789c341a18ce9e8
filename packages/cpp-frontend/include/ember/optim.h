// ember::optim: optimizers and learning-rate schedulers (libtorch's torch::optim).
//
//   #include <ember/optim.h>
//   ember::optim::Adam opt(model->parameters(), ember::optim::AdamOptions(1e-3));
//   ember::optim::CosineAnnealingLR sched(opt, /*T_max=*/100);
#pragma once

#include <ember/optim/optimizer.h>
#include <ember/optim/sgd.h>
#include <ember/optim/adam.h>
#include <ember/optim/lr_scheduler.h>
