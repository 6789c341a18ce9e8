# <prefix>/lib/cmake/Torch/TorchConfig.cmake: for CMAKE_PREFIX_PATH=<prefix>, as libtorch
# users give it. Ember's TorchConfig.cmake lives beside EmberConfig.cmake.
include("${CMAKE_CURRENT_LIST_DIR}/../Ember/TorchConfig.cmake")
