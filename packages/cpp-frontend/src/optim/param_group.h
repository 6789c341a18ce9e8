// Private to libember: reading and writing the options of a parameter group as Python's
// optimizer.state_dict()["param_groups"][g] holds them (OptimizerOptions::param_group and
// set_param_group of each optimizer).
#pragma once

#include <string>
#include <tuple>

#include "ember/serialize.h"

namespace ember {
namespace optim {
namespace detail {

// The number `key` of a saved group: an int, float or bool. Missing: "loaded state dict is
// not a state dict of <optimizer>: its parameter group has no '<key>'"; of another type:
// "... has '<key>' of type <type>, <optimizer> expects a number" (ember::ValueError).
double group_number(const serialize::Value& group, const char* key, const char* optimizer);
// The bool `key`, or `fallback` when the group has none (PyTorch's __setstate__ defaults
// for options that older versions did not save).
bool group_bool(const serialize::Value& group, const char* key, const char* optimizer, bool fallback);
// A (float, float) tuple or list such as Adam's betas.
std::tuple<double, double> group_pair(const serialize::Value& group, const char* key,
                                      const char* optimizer);
// Throws unless the option `key`, which C++ does not have, is absent or False ("maximize").
void require_false(const serialize::Value& group, const char* key, const char* optimizer);

// A number as PyTorch's defaults write it: the int 0 when `int_zero` and v is 0 (SGD's
// momentum=0, Adam's weight_decay=0), else a float.
serialize::Value number(double v, bool int_zero = false);

}  // namespace detail
}  // namespace optim
}  // namespace ember
