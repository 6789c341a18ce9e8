// ember::ArrayRef<T>: a non-owning view of a contiguous list (c10::ArrayRef), and
// IntArrayRef = ArrayRef<int64_t>, the type of shape and dim arguments. It binds to a
// std::vector, a braced list ({2, 3}), a C array or a single value, so zeros({2, 3}),
// t.sum(1) and t.view(shape_vector) all work. It must not outlive what it refers to: use
// it for arguments, and .vec() to keep a copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <ostream>
#include <vector>

#include "error.h"

namespace ember {

template <typename T>
class ArrayRef {
public:
    using value_type = T;
    using iterator = const T*;
    using const_iterator = const T*;
    using size_type = std::size_t;

    constexpr ArrayRef() noexcept = default;
    constexpr ArrayRef(const T& one) noexcept : data_(&one), size_(1) {}  // NOLINT
    constexpr ArrayRef(const T* data, std::size_t size) noexcept : data_(data), size_(size) {}
    constexpr ArrayRef(const T* begin, const T* end) noexcept
        : data_(begin), size_(static_cast<std::size_t>(end - begin)) {}
    template <typename A>
    ArrayRef(const std::vector<T, A>& v) noexcept : data_(v.data()), size_(v.size()) {}  // NOLINT
    template <std::size_t N>
    constexpr ArrayRef(const T (&arr)[N]) noexcept : data_(arr), size_(N) {}  // NOLINT
    constexpr ArrayRef(const std::initializer_list<T>& list) noexcept  // NOLINT
        : data_(std::begin(list) == std::end(list) ? static_cast<const T*>(nullptr) : std::begin(list)),
          size_(list.size()) {}

    constexpr const T* begin() const noexcept { return data_; }
    constexpr const T* end() const noexcept { return data_ + size_; }
    constexpr const T* data() const noexcept { return data_; }
    constexpr std::size_t size() const noexcept { return size_; }
    constexpr bool empty() const noexcept { return size_ == 0; }
    constexpr const T& front() const { return data_[0]; }
    constexpr const T& back() const { return data_[size_ - 1]; }
    constexpr const T& operator[](std::size_t i) const noexcept { return data_[i]; }
    const T& at(std::size_t i) const {
        EMBER_CHECK_INDEX(i < size_, "ArrayRef: invalid index ", i, " for length ", size_);
        return data_[i];
    }
    ArrayRef slice(std::size_t start, std::size_t n) const {
        EMBER_CHECK(start + n <= size_, "ArrayRef: invalid slice");
        return ArrayRef(data_ + start, n);
    }
    ArrayRef slice(std::size_t start) const { return slice(start, size_ - start); }

    std::vector<T> vec() const { return std::vector<T>(begin(), end()); }
    operator std::vector<T>() const { return vec(); }  // NOLINT

    bool equals(ArrayRef other) const {
        if (size_ != other.size_) return false;
        for (std::size_t i = 0; i < size_; ++i) {
            if (!(data_[i] == other.data_[i])) return false;
        }
        return true;
    }

private:
    const T* data_ = nullptr;
    std::size_t size_ = 0;
};

template <typename T>
bool operator==(ArrayRef<T> a, ArrayRef<T> b) { return a.equals(b); }
template <typename T>
bool operator!=(ArrayRef<T> a, ArrayRef<T> b) { return !a.equals(b); }
template <typename T>
bool operator==(ArrayRef<T> a, const std::vector<T>& b) { return a.equals(b); }
template <typename T>
bool operator!=(ArrayRef<T> a, const std::vector<T>& b) { return !a.equals(b); }
template <typename T>
bool operator==(const std::vector<T>& a, ArrayRef<T> b) { return b.equals(a); }
template <typename T>
bool operator!=(const std::vector<T>& a, ArrayRef<T> b) { return !b.equals(a); }

using IntArrayRef = ArrayRef<int64_t>;

// An optional list of dims (libtorch's OptionalIntArrayRef): std::nullopt, a braced list, a
// vector or a single dim. (Use it rather than std::optional<IntArrayRef>, whose converting
// constructor would leave a single converted int dangling.)
class OptionalIntArrayRef {
public:
    OptionalIntArrayRef() = default;
    OptionalIntArrayRef(std::nullopt_t) {}  // NOLINT
    OptionalIntArrayRef(IntArrayRef r) : ref_(r), has_(true) {}  // NOLINT
    OptionalIntArrayRef(const std::initializer_list<int64_t>& l) : ref_(l), has_(true) {}  // NOLINT
    template <typename A>
    OptionalIntArrayRef(const std::vector<int64_t, A>& v) : ref_(v), has_(true) {}  // NOLINT
    OptionalIntArrayRef(const int64_t& one) : ref_(one), has_(true) {}  // NOLINT

    bool has_value() const noexcept { return has_; }
    explicit operator bool() const noexcept { return has_; }
    IntArrayRef operator*() const noexcept { return ref_; }
    IntArrayRef value_or(IntArrayRef other) const noexcept { return has_ ? ref_ : other; }

private:
    IntArrayRef ref_;
    bool has_ = false;
};

// Prints as libtorch prints sizes: [2, 3]
template <typename T>
std::ostream& operator<<(std::ostream& os, ArrayRef<T> list) {
    os << "[";
    for (std::size_t i = 0; i < list.size(); ++i) {
        if (i) os << ", ";
        os << list[i];
    }
    return os << "]";
}

}  // namespace ember
