// Calling the jit op table's entries directly, for the tests of its op families
// (test_more_ops.cpp, test_resampling_ops.cpp).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ember/ember.h"
#include "jit/op_table.h"
#include "jit/value.h"

namespace jit_ops {

using ember::Tensor;
using ember::jit::detail::Kwargs;
using ember::jit::detail::op_table;
using ember::jit::detail::Value;

inline Value ints(std::vector<int64_t> v) {
    std::vector<Value> items;
    for (int64_t i : v) items.push_back(Value::integer(i));
    return Value::list(std::move(items));
}

inline std::vector<Tensor> call(const std::string& op, std::vector<Value> args, Kwargs kwargs = {}) {
    return op_table().at(op).fn(args, kwargs);
}

// The message of the error that the op raises, or "(no error)".
inline std::string error_of(const std::string& op, std::vector<Value> args, Kwargs kwargs = {}) {
    try {
        call(op, std::move(args), std::move(kwargs));
    } catch (const ember::Error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace jit_ops
