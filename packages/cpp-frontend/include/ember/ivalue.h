// ember::IValue: a small tagged value (libtorch's c10::IValue, reduced to what custom
// autograd Functions keep in ctx->saved_data and what exported programs take and return,
// ember::jit::Module::forward): none, int, double, bool, string, int list, double list,
// Tensor, tensor list, tuple (ivalue::Tuple, optionally with field names: a namedtuple) and
// list of any values.
//
//   IValue out = module.forward({x});
//   Tensor y = out.toTuple()->elements()[0].toTensor();   // as libtorch
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "error.h"
#include "tensor.h"

namespace ember {

namespace ivalue {
struct Tuple;
}

class IValue {
public:
    IValue() = default;
    template <typename T,
              std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
    IValue(T v) : v_(static_cast<int64_t>(v)) {}  // NOLINT
    template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
    IValue(T v) : v_(static_cast<double>(v)) {}  // NOLINT
    template <typename T, std::enable_if_t<std::is_same_v<T, bool>, int> = 0>
    IValue(T v) : v_(v) {}  // NOLINT
    IValue(std::string v) : v_(std::move(v)) {}  // NOLINT
    IValue(const char* v) : v_(std::string(v)) {}  // NOLINT
    IValue(std::vector<int64_t> v) : v_(std::move(v)) {}  // NOLINT
    IValue(std::vector<double> v) : v_(std::move(v)) {}  // NOLINT
    IValue(Tensor v) : v_(std::move(v)) {}  // NOLINT
    IValue(std::vector<Tensor> v) : v_(std::move(v)) {}  // NOLINT
    IValue(std::shared_ptr<ivalue::Tuple> v);  // NOLINT
    // A tuple of `elements`; `names` (empty, or one per element) makes it a named tuple.
    static IValue tuple(std::vector<IValue> elements, std::vector<std::string> names = {});
    // A list of values of any kinds (c10::List<IValue>); lists of one kind (ints, doubles,
    // tensors) have their own constructors.
    static IValue list(std::vector<IValue> elements);
    IValue(const Scalar& s) {  // NOLINT
        if (s.isFloatingPoint()) v_ = s.toDouble();
        else if (s.isBoolean()) v_ = s.toBool();
        else v_ = s.toLong();
    }

    bool isNone() const noexcept { return v_.index() == 0; }
    bool isInt() const noexcept { return std::holds_alternative<int64_t>(v_); }
    bool isDouble() const noexcept { return std::holds_alternative<double>(v_); }
    bool isBool() const noexcept { return std::holds_alternative<bool>(v_); }
    bool isString() const noexcept { return std::holds_alternative<std::string>(v_); }
    bool isIntList() const noexcept { return std::holds_alternative<std::vector<int64_t>>(v_); }
    bool isDoubleList() const noexcept { return std::holds_alternative<std::vector<double>>(v_); }
    bool isTensor() const noexcept { return std::holds_alternative<Tensor>(v_); }
    bool isTensorList() const noexcept { return std::holds_alternative<std::vector<Tensor>>(v_); }
    bool isTuple() const noexcept { return std::holds_alternative<std::shared_ptr<ivalue::Tuple>>(v_); }
    // Any list: of ints, of doubles, of tensors, or of any values (IValue::list).
    bool isList() const noexcept {
        return isIntList() || isDoubleList() || isTensorList() || isGenericList();
    }
    bool isGenericList() const noexcept { return std::holds_alternative<GenericList>(v_); }

    int64_t toInt() const { return get<int64_t>("Int"); }
    // An int converts to double (as c10::IValue::toDouble does not, but is convenient).
    double toDouble() const {
        if (isInt()) return static_cast<double>(std::get<int64_t>(v_));
        return get<double>("Double");
    }
    bool toBool() const { return get<bool>("Bool"); }
    const std::string& toStringRef() const { return get<std::string>("String"); }
    std::string toString() const { return toStringRef(); }
    const std::vector<int64_t>& toIntList() const { return get<std::vector<int64_t>>("IntList"); }
    std::vector<int64_t> toIntVector() const { return toIntList(); }
    const std::vector<double>& toDoubleList() const { return get<std::vector<double>>("DoubleList"); }
    std::vector<double> toDoubleVector() const { return toDoubleList(); }
    const Tensor& toTensor() const { return get<Tensor>("Tensor"); }
    const std::vector<Tensor>& toTensorList() const { return get<std::vector<Tensor>>("TensorList"); }
    std::vector<Tensor> toTensorVector() const { return toTensorList(); }
    const std::shared_ptr<ivalue::Tuple>& toTuple() const {
        return get<std::shared_ptr<ivalue::Tuple>>("Tuple");
    }
    const ivalue::Tuple& toTupleRef() const { return *toTuple(); }
    // The elements of any list (isList()) as IValues.
    std::vector<IValue> toList() const;

    std::string tagKind() const {
        static const char* const names[] = {"None",       "Int",    "Double",     "Bool",
                                            "String",     "IntList", "DoubleList", "Tensor",
                                            "TensorList", "Tuple",  "GenericList"};
        return names[v_.index()];
    }

private:
    struct GenericList {
        std::shared_ptr<const std::vector<IValue>> elements;
    };
    template <typename T>
    const T& get(const char* want) const {
        const T* p = std::get_if<T>(&v_);
        EMBER_CHECK(p, "Expected ", want, " but got ", tagKind());
        return *p;
    }
    std::variant<std::monostate, int64_t, double, bool, std::string, std::vector<int64_t>,
                 std::vector<double>, Tensor, std::vector<Tensor>, std::shared_ptr<ivalue::Tuple>,
                 GenericList>
        v_;
};

namespace ivalue {

// A tuple of values (libtorch's c10::ivalue::Tuple). A named tuple (a Python namedtuple,
// a model's output record) has one name per element.
struct Tuple {
    explicit Tuple(std::vector<IValue> elements, std::vector<std::string> names = {})
        : elements_(std::move(elements)), names_(std::move(names)) {
        EMBER_CHECK(names_.empty() || names_.size() == elements_.size(), "a named tuple needs ",
                    elements_.size(), " names, got ", names_.size());
    }
    const std::vector<IValue>& elements() const noexcept { return elements_; }
    std::size_t size() const noexcept { return elements_.size(); }
    const IValue& operator[](std::size_t i) const {
        EMBER_CHECK(i < elements_.size(), "tuple index ", i, " out of range for a tuple of ",
                    elements_.size(), " elements");
        return elements_[i];
    }
    // The field names (empty for a plain tuple).
    const std::vector<std::string>& names() const noexcept { return names_; }
    // The element named `name` (a named tuple's field).
    const IValue& at(const std::string& name) const {
        for (std::size_t i = 0; i < names_.size(); ++i) {
            if (names_[i] == name) return elements_[i];
        }
        EMBER_ERROR("the tuple has no field '", name, "'");
    }

private:
    std::vector<IValue> elements_;
    std::vector<std::string> names_;
};

}  // namespace ivalue

inline IValue::IValue(std::shared_ptr<ivalue::Tuple> v) : v_(std::move(v)) {
    EMBER_CHECK(std::get<std::shared_ptr<ivalue::Tuple>>(v_) != nullptr, "IValue: a null tuple");
}

inline IValue IValue::tuple(std::vector<IValue> elements, std::vector<std::string> names) {
    return IValue(std::make_shared<ivalue::Tuple>(std::move(elements), std::move(names)));
}

inline IValue IValue::list(std::vector<IValue> elements) {
    IValue v;
    v.v_ = GenericList{std::make_shared<const std::vector<IValue>>(std::move(elements))};
    return v;
}

inline std::vector<IValue> IValue::toList() const {
    if (isGenericList()) return *std::get<GenericList>(v_).elements;
    std::vector<IValue> out;
    if (isIntList()) {
        for (int64_t x : toIntList()) out.emplace_back(x);
    } else if (isDoubleList()) {
        for (double x : toDoubleList()) out.emplace_back(x);
    } else {
        for (const Tensor& x : get<std::vector<Tensor>>("List")) out.emplace_back(x);
    }
    return out;
}

}  // namespace ember
