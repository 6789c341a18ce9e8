// ember::serialize::Value (include/ember/serialize.h): a Python object of a checkpoint.
#include <cmath>

#include "ember/serialize.h"

namespace ember::serialize {

Value Value::from_bool(bool b) {
    Value v;
    v.kind = Kind::Bool;
    v.boolean = b;
    return v;
}

Value Value::from_int(int64_t i) {
    Value v;
    v.kind = Kind::Int;
    v.integer = i;
    return v;
}

Value Value::from_float(double d) {
    Value v;
    v.kind = Kind::Float;
    v.real = d;
    return v;
}

Value Value::from_str(std::string s) {
    Value v;
    v.kind = Kind::Str;
    v.text = std::move(s);
    return v;
}

Value Value::from_tensor(TensorRecord t) {
    Value v;
    v.kind = Kind::Tensor;
    v.tensor = std::move(t);
    return v;
}

Value Value::tuple(std::vector<Value> items) {
    Value v;
    v.kind = Kind::Tuple;
    v.items = std::move(items);
    return v;
}

Value Value::list(std::vector<Value> items) {
    Value v;
    v.kind = Kind::List;
    v.items = std::move(items);
    return v;
}

Value Value::dict() {
    Value v;
    v.kind = Kind::Dict;
    return v;
}

const char* Value::type_name() const noexcept {
    switch (kind) {
        case Kind::None: return "NoneType";
        case Kind::Bool: return "bool";
        case Kind::Int: return "int";
        case Kind::Float: return "float";
        case Kind::Str: return "str";
        case Kind::Tuple: return "tuple";
        case Kind::List: return "list";
        case Kind::Dict: return "dict";
        case Kind::Tensor: return "torch.Tensor";
    }
    return "object";
}

Value& Value::set(Value key, Value value) {
    items.push_back(std::move(key));
    items.push_back(std::move(value));
    return *this;
}

const Value* Value::find(std::string_view key) const noexcept {
    for (std::size_t i = 0; i < dict_size(); ++i) {
        const Value& k = items[2 * i];
        if (k.kind == Kind::Str && k.text == key) return &items[2 * i + 1];
    }
    return nullptr;
}

const Value* Value::find(int64_t key) const noexcept {
    for (std::size_t i = 0; i < dict_size(); ++i) {
        const Value& k = items[2 * i];
        const bool equal = (k.kind == Kind::Int && k.integer == key) ||
                           (k.kind == Kind::Bool && int64_t(k.boolean) == key) ||
                           (k.kind == Kind::Float && k.real == static_cast<double>(key) &&
                            std::trunc(k.real) == k.real);
        if (equal) return &items[2 * i + 1];
    }
    return nullptr;
}

bool Value::to_double(double* out) const noexcept {
    switch (kind) {
        case Kind::Bool: *out = boolean ? 1 : 0; return true;
        case Kind::Int: *out = static_cast<double>(integer); return true;
        case Kind::Float: *out = real; return true;
        default: return false;
    }
}

}  // namespace ember::serialize
