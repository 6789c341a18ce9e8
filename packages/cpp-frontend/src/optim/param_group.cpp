#include "optim/param_group.h"

#include "ember/error.h"

namespace ember {
namespace optim {
namespace detail {

namespace {

const serialize::Value& required(const serialize::Value& group, const char* key, const char* optimizer) {
    const serialize::Value* v = group.find(key);
    EMBER_CHECK_VALUE(v != nullptr, "loaded state dict is not a state dict of ", optimizer,
                      ": its parameter group has no '", key, "'");
    return *v;
}

[[noreturn]] void wrong_type(const serialize::Value& v, const char* key, const char* optimizer, const char* expected) {
    ::ember::detail::throw_error<ValueError>("false", "loaded state dict has a parameter group whose '", key,
                                             "' is of type ", v.type_name(), ": ", optimizer, " expects ", expected);
}

}  // namespace

double group_number(const serialize::Value& group, const char* key, const char* optimizer) {
    const serialize::Value& v = required(group, key, optimizer);
    double out = 0;
    if (!v.to_double(&out)) wrong_type(v, key, optimizer, "a number");
    return out;
}

bool group_bool(const serialize::Value& group, const char* key, const char* optimizer, bool fallback) {
    const serialize::Value* v = group.find(key);
    if (v == nullptr) return fallback;
    if (v->kind != serialize::Value::Kind::Bool) wrong_type(*v, key, optimizer, "a bool");
    return v->boolean;
}

std::tuple<double, double> group_pair(const serialize::Value& group, const char* key,
                                      const char* optimizer) {
    const serialize::Value& v = required(group, key, optimizer);
    const bool sequence = v.kind == serialize::Value::Kind::Tuple || v.kind == serialize::Value::Kind::List;
    double first = 0, second = 0;
    if (!sequence || v.items.size() != 2 || !v.items[0].to_double(&first) || !v.items[1].to_double(&second)) {
        wrong_type(v, key, optimizer, "a tuple of two numbers");
    }
    return {first, second};
}

void require_false(const serialize::Value& group, const char* key, const char* optimizer) {
    EMBER_CHECK_VALUE(!group_bool(group, key, optimizer, false), "loaded state dict has a parameter group with ",
                      key, "=True, which ember's C++ ", optimizer, " does not support");
}

serialize::Value number(double v, bool int_zero) {
    if (int_zero && v == 0) return serialize::Value::from_int(0);
    return serialize::Value::from_float(v);
}

}  // namespace detail
}  // namespace optim
}  // namespace ember
