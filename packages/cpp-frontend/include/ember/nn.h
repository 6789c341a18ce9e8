// ember::nn: modules, their options, functional and init (libtorch's <torch/nn.h>).
//
//   #include <ember/nn.h>
//   namespace nn = ember::nn;
//   namespace F = ember::nn::functional;
//
//   nn::Sequential model(nn::Conv2d(nn::Conv2dOptions(1, 16, 3).padding(1)), nn::ReLU(),
//                        nn::AdaptiveAvgPool2d(1), nn::Flatten(), nn::Linear(16, 10));
//   ember::Tensor loss = F::cross_entropy(model(x), y);
//
// Module names, parameter names, defaults, initialisation schemes and printing are Python
// Ember's (and PyTorch's), so a state dict saved by Python loads by name
// (Module::named_parameters / named_buffers / state_dict).
#pragma once

#include "nn/functional.h"
#include "nn/init.h"
#include "nn/module.h"
#include "nn/modules/activation.h"
#include "nn/modules/batchnorm.h"
#include "nn/modules/container.h"
#include "nn/modules/conv.h"
#include "nn/modules/dropout.h"
#include "nn/modules/embedding.h"
#include "nn/modules/linear.h"
#include "nn/modules/loss.h"
#include "nn/modules/normalization.h"
#include "nn/modules/padding.h"
#include "nn/modules/pooling.h"
#include "nn/modules/rnn.h"
#include "nn/modules/transformer.h"
#include "nn/ordered_dict.h"
#include "nn/pimpl.h"
