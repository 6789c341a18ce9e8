// ember::IValue: a small tagged value (libtorch's c10::IValue, reduced to what custom
// autograd Functions keep in ctx->saved_data): none, int, double, bool, string, int list,
// double list, Tensor and tensor list.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "error.h"
#include "tensor.h"

namespace ember {

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

    std::string tagKind() const {
        static const char* const names[] = {"None", "Int", "Double", "Bool", "String",
                                            "IntList", "DoubleList", "Tensor", "TensorList"};
        return names[v_.index()];
    }

private:
    template <typename T>
    const T& get(const char* want) const {
        const T* p = std::get_if<T>(&v_);
        EMBER_CHECK(p, "Expected ", want, " but got ", tagKind());
        return *p;
    }
    std::variant<std::monostate, int64_t, double, bool, std::string, std::vector<int64_t>,
                 std::vector<double>, Tensor, std::vector<Tensor>>
        v_;
};

}  // namespace ember
