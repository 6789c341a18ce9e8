// <torch/torch.h> over Ember: PyTorch C++ programs build against libember unchanged.
//
//   #include <torch/torch.h>      // instead of libtorch's
//   find_package(Torch REQUIRED)  // TorchConfig.cmake, installed beside EmberConfig.cmake
//
// The names are Ember's (which are libtorch's): torch::, at:: and c10:: see everything in
// namespace ember, so torch::Tensor is ember::Tensor, torch::nn::Linear is
// ember::nn::Linear and so on. Nothing is copied here; what a PyTorch program uses and
// Ember lacks belongs in Ember. README.md ("PyTorch C++ programs") lists what maps to what.
#pragma once

#include <ember/ember.h>

namespace torch {
using namespace ::ember;  // NOLINT(google-build-using-namespace): the point of this header
}  // namespace torch

namespace at {
using namespace ::ember;  // NOLINT(google-build-using-namespace)
}  // namespace at

namespace c10 {
using namespace ::ember;  // NOLINT(google-build-using-namespace)
}  // namespace c10

// libtorch's macros under their names.
#define TORCH_MODULE(Name) EMBER_MODULE(Name)
#define TORCH_MODULE_IMPL(Name, ImplType) EMBER_MODULE_IMPL(Name, ImplType)
#define TORCH_ARG(T, name) EMBER_ARG(T, name)
#define TORCH_CHECK(...) EMBER_CHECK(__VA_ARGS__)
#define TORCH_CHECK_INDEX(...) EMBER_CHECK_INDEX(__VA_ARGS__)
#define TORCH_CHECK_VALUE(...) EMBER_CHECK_VALUE(__VA_ARGS__)
#define TORCH_CHECK_TYPE(...) EMBER_CHECK_TYPE(__VA_ARGS__)
#define AT_ASSERT(...) EMBER_CHECK(__VA_ARGS__)
