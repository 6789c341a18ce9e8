// Option structs of ember::nn::functional (libtorch's F::*FuncOptions), the EMBER_ARG
// chained-setter macro, ExpandingArray (one int or D ints), the loss Reduction and the
// padding modes (ember::kZeros, kConstant, kReflect, kReplicate, kCircular).
//
//   namespace F = ember::nn::functional;
//   F::conv2d(x, w, F::Conv2dFuncOptions().bias(b).stride(2).padding({1, 0}));
//   F::conv_transpose2d(x, w, F::ConvTranspose2dFuncOptions().stride(2).output_padding(1));
//   F::pad(x, F::PadFuncOptions({1, 1, 2, 0}).mode(ember::kReflect));
//   F::cross_entropy(logits, target,
//                    F::CrossEntropyFuncOptions().ignore_index(-100).reduction(ember::kMean)
//                        .label_smoothing(0.1));
//   F::mse_loss(x, y, ember::kSum);        // a loss's options convert from a reduction
//   F::mse_loss(x, y, "sum");              // ... given as an enum value or as Python's string
#pragma once

#include "../../export.h"
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "../../array_ref.h"
#include "../../error.h"
#include "../../tensor.h"

// EMBER_ARG(T, name): a private member `name_` of type T with a chained setter `name(value)`
// returning *this and getters `name()` (libtorch's TORCH_ARG). Write the default after it:
//   struct FooOptions { EMBER_ARG(double, eps) = 1e-5; };
#ifndef EMBER_ARG
#define EMBER_ARG(T, name)                                                     \
public:                                                                        \
    inline auto name(const T& new_##name)->decltype(*this) {                   \
        this->name##_ = new_##name;                                            \
        return *this;                                                          \
    }                                                                          \
    inline auto name(T&& new_##name)->decltype(*this) {                        \
        this->name##_ = std::move(new_##name);                                 \
        return *this;                                                          \
    }                                                                          \
    inline const T& name() const noexcept { return this->name##_; }            \
    inline T& name() noexcept { return this->name##_; }                        \
                                                                               \
private:                                                                       \
    T name##_
#endif

namespace ember {
namespace nn {

// How a loss reduces its per-element values (PyTorch's reduction="none"|"mean"|"sum").
enum class Reduction { None, Mean, Sum };

// Python's name of a reduction ("none", "mean", "sum").
EMBER_API std::string_view reduction_name(Reduction r);
// The Reduction named s; PyTorch's error "<s> is not a valid value for reduction" otherwise.
EMBER_API Reduction reduction_from_string(std::string_view s);

}  // namespace nn

// libtorch's spelling: ember::kNone, ember::kMean, ember::kSum.
inline constexpr nn::Reduction kNone = nn::Reduction::None;
inline constexpr nn::Reduction kMean = nn::Reduction::Mean;
inline constexpr nn::Reduction kSum = nn::Reduction::Sum;

// The string paddings of a convolution (libtorch's torch::kValid and torch::kSame, Python's
// padding="valid" and padding="same").
namespace enumtype {
struct kValid {
    constexpr bool operator==(const kValid&) const noexcept { return true; }
};
struct kSame {
    constexpr bool operator==(const kSame&) const noexcept { return true; }
};
}  // namespace enumtype
inline constexpr enumtype::kValid kValid{};
inline constexpr enumtype::kSame kSame{};

// The padding modes (libtorch's torch::kZeros, kConstant, kReflect, kReplicate, kCircular):
// F::pad's mode (PadFuncOptions::mode_t: constant, reflect, replicate, circular) and a
// convolution's padding_mode (ConvOptions::padding_mode_t: zeros, reflect, replicate,
// circular). name() is Python's string ("reflect").
namespace enumtype {
#define EMBER_PADDING_ENUM_(Name, text)                                              \
    struct Name {                                                                    \
        constexpr bool operator==(const Name&) const noexcept { return true; }       \
        constexpr bool operator!=(const Name&) const noexcept { return false; }      \
        static constexpr const char* name() noexcept { return text; }                \
    }
EMBER_PADDING_ENUM_(kZeros, "zeros");
EMBER_PADDING_ENUM_(kConstant, "constant");
EMBER_PADDING_ENUM_(kReflect, "reflect");
EMBER_PADDING_ENUM_(kReplicate, "replicate");
EMBER_PADDING_ENUM_(kCircular, "circular");
#undef EMBER_PADDING_ENUM_

// Python's string of the mode a std::variant of these holds: enum_name(options.mode()) is
// "reflect" for ember::kReflect.
template <typename... Modes>
const char* enum_name(const std::variant<Modes...>& mode) noexcept {
    return std::visit([](const auto& m) { return m.name(); }, mode);
}
}  // namespace enumtype
inline constexpr enumtype::kZeros kZeros{};
inline constexpr enumtype::kConstant kConstant{};
inline constexpr enumtype::kReflect kReflect{};
inline constexpr enumtype::kReplicate kReplicate{};
inline constexpr enumtype::kCircular kCircular{};

namespace nn {
namespace functional {

// A reduction given as an enum value (ember::kMean) or as Python's string ("mean").
class ReductionType {
public:
    ReductionType(Reduction r = Reduction::Mean) : value_(r) {}  // NOLINT
    ReductionType(std::string_view s) : value_(reduction_from_string(s)) {}  // NOLINT
    ReductionType(const char* s) : value_(reduction_from_string(s)) {}  // NOLINT
    ReductionType(const std::string& s) : value_(reduction_from_string(s)) {}  // NOLINT
    Reduction value() const noexcept { return value_; }
    operator Reduction() const noexcept { return value_; }  // NOLINT
    bool operator==(Reduction r) const noexcept { return value_ == r; }
    bool operator!=(Reduction r) const noexcept { return value_ != r; }

private:
    Reduction value_;
};

// D ints given as one int (repeated) or as a braced list / vector of exactly D ints
// (libtorch's ExpandingArray). Converts to IntArrayRef.
template <size_t D>
class ExpandingArray {
public:
    ExpandingArray(int64_t single) { values_.fill(single); }  // NOLINT
    ExpandingArray(std::initializer_list<int64_t> list) : ExpandingArray(IntArrayRef(list)) {}  // NOLINT
    ExpandingArray(const std::vector<int64_t>& list) : ExpandingArray(IntArrayRef(list)) {}  // NOLINT
    ExpandingArray(IntArrayRef list) {  // NOLINT
        EMBER_CHECK(list.size() == D, "Expected ", D, " values, but instead got ", list.size());
        for (size_t i = 0; i < D; ++i) values_[i] = list[i];
    }
    IntArrayRef ref() const noexcept { return IntArrayRef(values_.data(), D); }
    operator IntArrayRef() const noexcept { return ref(); }  // NOLINT
    std::vector<int64_t> vec() const { return std::vector<int64_t>(values_.begin(), values_.end()); }
    int64_t operator[](size_t i) const { return values_.at(i); }
    int64_t* data() noexcept { return values_.data(); }
    const int64_t* data() const noexcept { return values_.data(); }
    static constexpr size_t size() noexcept { return D; }
    bool operator==(const ExpandingArray& o) const noexcept { return values_ == o.values_; }
    bool operator!=(const ExpandingArray& o) const noexcept { return values_ != o.values_; }

private:
    std::array<int64_t, D> values_{};
};

}  // namespace functional

namespace detail {

// A convolution's padding (libtorch's conv_padding_t): D ints (one int repeats), or
// ember::kValid (no padding) or ember::kSame (the output keeps the input's size; stride 1
// only), Python's padding="valid" / "same". A std::variant of the three, so std::get,
// std::get_if, std::holds_alternative and std::visit work on it:
//   Conv2dOptions(3, 8, 3).padding(1)        .padding({1, 2})        .padding(ember::kSame)
template <size_t D>
class conv_padding_t : public std::variant<functional::ExpandingArray<D>, enumtype::kValid, enumtype::kSame> {
    using Base = std::variant<functional::ExpandingArray<D>, enumtype::kValid, enumtype::kSame>;

public:
    conv_padding_t(int64_t single) : Base(functional::ExpandingArray<D>(single)) {}  // NOLINT
    conv_padding_t(std::initializer_list<int64_t> list) : Base(functional::ExpandingArray<D>(list)) {}  // NOLINT
    conv_padding_t(const std::vector<int64_t>& list) : Base(functional::ExpandingArray<D>(list)) {}  // NOLINT
    conv_padding_t(const functional::ExpandingArray<D>& values) : Base(values) {}  // NOLINT
    conv_padding_t(enumtype::kValid v) : Base(v) {}  // NOLINT
    conv_padding_t(enumtype::kSame v) : Base(v) {}  // NOLINT

    // Python's padding="same" / "valid" ...
    bool is_same() const noexcept { return std::holds_alternative<enumtype::kSame>(*this); }
    bool is_valid() const noexcept { return std::holds_alternative<enumtype::kValid>(*this); }
    // ... and its string ("same", "valid"; "" for numbers)
    const char* name() const noexcept { return is_same() ? "same" : is_valid() ? "valid" : ""; }

    friend bool operator==(const conv_padding_t& a, const conv_padding_t& b) {
        return static_cast<const Base&>(a) == static_cast<const Base&>(b);
    }
    friend bool operator!=(const conv_padding_t& a, const conv_padding_t& b) { return !(a == b); }
};

}  // namespace detail

namespace functional {

// ---- linear / convolution --------------------------------------------------------------
template <size_t D>
struct ConvFuncOptions {
    using padding_t = ::ember::nn::detail::conv_padding_t<D>;
    EMBER_ARG(Tensor, bias);
    EMBER_ARG(ExpandingArray<D>, stride) = 1;
    // numbers, or ember::kSame / ember::kValid
    EMBER_ARG(padding_t, padding) = 0;
    EMBER_ARG(ExpandingArray<D>, dilation) = 1;
    EMBER_ARG(int64_t, groups) = 1;
};
using Conv1dFuncOptions = ConvFuncOptions<1>;
using Conv2dFuncOptions = ConvFuncOptions<2>;
using Conv3dFuncOptions = ConvFuncOptions<3>;

// F::conv_transpose{1,2,3}d (libtorch's ConvTransposeFuncOptions<D>; Python's
// F.conv_transpose*d arguments, in its order):
//   F::conv_transpose2d(x, w, F::ConvTranspose2dFuncOptions().bias(b).stride(2).padding(1)
//                                 .output_padding(1));
template <size_t D>
struct ConvTransposeFuncOptions {
    // (out_channels) or undefined
    EMBER_ARG(Tensor, bias);
    EMBER_ARG(ExpandingArray<D>, stride) = 1;
    // dilation * (kernel_size - 1) - padding zeros on both sides of the input: the output
    // loses `padding` elements at each end
    EMBER_ARG(ExpandingArray<D>, padding) = 0;
    // extra elements at the end of each output dim (smaller than stride or dilation)
    EMBER_ARG(ExpandingArray<D>, output_padding) = 0;
    EMBER_ARG(int64_t, groups) = 1;
    EMBER_ARG(ExpandingArray<D>, dilation) = 1;
};
using ConvTranspose1dFuncOptions = ConvTransposeFuncOptions<1>;
using ConvTranspose2dFuncOptions = ConvTransposeFuncOptions<2>;
using ConvTranspose3dFuncOptions = ConvTransposeFuncOptions<3>;

// ---- padding ---------------------------------------------------------------------------
// F::pad (libtorch's PadFuncOptions):
//   F::pad(x, F::PadFuncOptions({1, 2, 2, 1}).mode(ember::kReflect));
//   F::pad(x, F::PadFuncOptions({1, 1}).value(-1.0));            // constant padding with -1
struct PadFuncOptions {
    using mode_t = std::variant<enumtype::kConstant, enumtype::kReflect, enumtype::kReplicate, enumtype::kCircular>;
    // explicit (unlike libtorch's), so that F::pad(x, some_vector) picks Python's spelling
    explicit PadFuncOptions(std::vector<int64_t> pad) : pad_(std::move(pad)) {}
    // (left, right) pairs from the last dim backwards: {left, right, top, bottom, front, back};
    // negative values crop
    EMBER_ARG(std::vector<int64_t>, pad);
    EMBER_ARG(mode_t, mode) = kConstant;
    // the fill value of constant padding (the other modes take none: a non-zero value is
    // PyTorch's error)
    EMBER_ARG(double, value) = 0;
};

// ---- pooling ---------------------------------------------------------------------------
// The window of a pooling: kernel_size (the constructor's argument), stride (defaulting to
// kernel_size), padding and ceil_mode.
#define EMBER_POOL2D_WINDOW_ARGS_(Name)                                                    \
    explicit Name(ExpandingArray<2> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {} \
    EMBER_ARG(ExpandingArray<2>, kernel_size);                                             \
    EMBER_ARG(ExpandingArray<2>, stride);                                                  \
    EMBER_ARG(ExpandingArray<2>, padding) = 0;                                             \
    EMBER_ARG(bool, ceil_mode) = false

struct MaxPool2dFuncOptions {
    EMBER_POOL2D_WINDOW_ARGS_(MaxPool2dFuncOptions);
    EMBER_ARG(ExpandingArray<2>, dilation) = 1;
};

struct AvgPool2dFuncOptions {
    EMBER_POOL2D_WINDOW_ARGS_(AvgPool2dFuncOptions);
    EMBER_ARG(bool, count_include_pad) = true;
    EMBER_ARG(std::optional<int64_t>, divisor_override) = std::nullopt;
};

#undef EMBER_POOL2D_WINDOW_ARGS_

struct AdaptiveAvgPool2dFuncOptions {
    explicit AdaptiveAvgPool2dFuncOptions(ExpandingArray<2> output_size) : output_size_(output_size) {}
    EMBER_ARG(ExpandingArray<2>, output_size);
};

// ---- activations -----------------------------------------------------------------------
struct LeakyReLUFuncOptions {
    EMBER_ARG(double, negative_slope) = 0.01;
    EMBER_ARG(bool, inplace) = false;
};

struct ELUFuncOptions {
    EMBER_ARG(double, alpha) = 1.0;
    EMBER_ARG(bool, inplace) = false;
};

struct HardtanhFuncOptions {
    EMBER_ARG(double, min_val) = -1.0;
    EMBER_ARG(double, max_val) = 1.0;
    EMBER_ARG(bool, inplace) = false;
};

struct SoftplusFuncOptions {
    EMBER_ARG(double, beta) = 1.0;
    EMBER_ARG(double, threshold) = 20.0;
};

struct GELUFuncOptions {
    // "none" (exact, with erf) or "tanh"
    EMBER_ARG(std::string, approximate) = "none";
};

struct SoftmaxFuncOptions {
    SoftmaxFuncOptions(int64_t dim) : dim_(dim) {}  // NOLINT
    EMBER_ARG(int64_t, dim);
    EMBER_ARG(std::optional<ScalarType>, dtype) = std::nullopt;
};
using LogSoftmaxFuncOptions = SoftmaxFuncOptions;

// ---- dropout, embedding, normalization ---------------------------------------------------
struct DropoutFuncOptions {
    DropoutFuncOptions() = default;
    DropoutFuncOptions(double p) : p_(p) {}  // NOLINT
    EMBER_ARG(double, p) = 0.5;
    EMBER_ARG(bool, training) = true;
    EMBER_ARG(bool, inplace) = false;
};

struct EmbeddingFuncOptions {
    // the row of weight whose gradient stays zero (negative: counted from the end)
    EMBER_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};

struct BatchNormFuncOptions {
    EMBER_ARG(Tensor, weight);
    EMBER_ARG(Tensor, bias);
    EMBER_ARG(bool, training) = false;
    EMBER_ARG(double, momentum) = 0.1;
    EMBER_ARG(double, eps) = 1e-5;
};

struct LayerNormFuncOptions {
    explicit LayerNormFuncOptions(std::vector<int64_t> normalized_shape)
        : normalized_shape_(std::move(normalized_shape)) {}
    EMBER_ARG(std::vector<int64_t>, normalized_shape);
    EMBER_ARG(Tensor, weight);
    EMBER_ARG(Tensor, bias);
    EMBER_ARG(double, eps) = 1e-5;
};

struct GroupNormFuncOptions {
    GroupNormFuncOptions(int64_t num_groups) : num_groups_(num_groups) {}  // NOLINT
    EMBER_ARG(int64_t, num_groups);
    EMBER_ARG(Tensor, weight);
    EMBER_ARG(Tensor, bias);
    EMBER_ARG(double, eps) = 1e-5;
};

struct NormalizeFuncOptions {
    EMBER_ARG(double, p) = 2.0;
    EMBER_ARG(int64_t, dim) = 1;
    EMBER_ARG(double, eps) = 1e-12;
};

// ---- losses ----------------------------------------------------------------------------
// A loss's options convert implicitly from a reduction (ember::kSum or "sum").
#define EMBER_LOSS_OPTIONS_CTOR_(Name)                                                   \
    Name() = default;                                                                    \
    template <typename R, std::enable_if_t<std::is_constructible_v<ReductionType, R>, int> = 0> \
    Name(R reduction) : reduction_(ReductionType(reduction)) {}  // NOLINT

struct MSELossFuncOptions {
    EMBER_LOSS_OPTIONS_CTOR_(MSELossFuncOptions)
    EMBER_ARG(ReductionType, reduction) = Reduction::Mean;
};

struct L1LossFuncOptions {
    EMBER_LOSS_OPTIONS_CTOR_(L1LossFuncOptions)
    EMBER_ARG(ReductionType, reduction) = Reduction::Mean;
};

struct SmoothL1LossFuncOptions {
    EMBER_LOSS_OPTIONS_CTOR_(SmoothL1LossFuncOptions)
    EMBER_ARG(ReductionType, reduction) = Reduction::Mean;
    EMBER_ARG(double, beta) = 1.0;
};

struct HuberLossFuncOptions {
    EMBER_LOSS_OPTIONS_CTOR_(HuberLossFuncOptions)
    EMBER_ARG(ReductionType, reduction) = Reduction::Mean;
    EMBER_ARG(double, delta) = 1.0;
};

struct NLLLossFuncOptions {
    EMBER_LOSS_OPTIONS_CTOR_(NLLLossFuncOptions)
    // per-class weights (C,) or undefined
    EMBER_ARG(Tensor, weight);
    EMBER_ARG(int64_t, ignore_index) = -100;
    EMBER_ARG(ReductionType, reduction) = Reduction::Mean;
};

struct CrossEntropyFuncOptions {
    EMBER_LOSS_OPTIONS_CTOR_(CrossEntropyFuncOptions)
    // per-class weights (C,) or undefined
    EMBER_ARG(Tensor, weight);
    EMBER_ARG(int64_t, ignore_index) = -100;
    EMBER_ARG(ReductionType, reduction) = Reduction::Mean;
    EMBER_ARG(double, label_smoothing) = 0.0;
};

struct BinaryCrossEntropyFuncOptions {
    EMBER_LOSS_OPTIONS_CTOR_(BinaryCrossEntropyFuncOptions)
    // rescales each element's loss; broadcast to the input's shape
    EMBER_ARG(Tensor, weight);
    EMBER_ARG(ReductionType, reduction) = Reduction::Mean;
};

struct BinaryCrossEntropyWithLogitsFuncOptions {
    EMBER_LOSS_OPTIONS_CTOR_(BinaryCrossEntropyWithLogitsFuncOptions)
    EMBER_ARG(Tensor, weight);
    EMBER_ARG(ReductionType, reduction) = Reduction::Mean;
    // weight of the positive examples, broadcast along the class (last) dim
    EMBER_ARG(Tensor, pos_weight);
};

#undef EMBER_LOSS_OPTIONS_CTOR_

// ---- attention -------------------------------------------------------------------------
struct ScaledDotProductAttentionFuncOptions {
    // bool (true = attend) or float (added to the scores); broadcast to (..., L, S)
    EMBER_ARG(Tensor, attn_mask);
    EMBER_ARG(double, dropout_p) = 0.0;
    EMBER_ARG(bool, is_causal) = false;
    // default 1 / sqrt(E)
    EMBER_ARG(std::optional<double>, scale) = std::nullopt;
};

}  // namespace functional
}  // namespace nn
}  // namespace ember
