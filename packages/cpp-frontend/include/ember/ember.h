// Ember's C++17 frontend: everything in one include, like <torch/torch.h>.
//
//   #include <ember/ember.h>
//
// The finer-grained headers (<ember/dtype.h>, <ember/error.h>, ...) can be included on
// their own.
#pragma once

#include <ember/export.h>
#include <ember/version.h>
#include <ember/dtype.h>
#include <ember/error.h>
#include <ember/tensor.h>
#include <ember/factories.h>
#include <ember/ops.h>
#include <ember/complex.h>
#include <ember/fft.h>
#include <ember/indexing.h>
#include <ember/autograd.h>
#include <ember/nn.h>
#include <ember/nn_ops.h>
#include <ember/optim.h>
#include <ember/data.h>
#include <ember/serialize.h>
#include <ember/io.h>
#include <ember/checkpoint.h>
#include <ember/jit.h>
