// Ember's errors: exceptions carrying PyTorch's message text, in the style of c10::Error
// and TORCH_CHECK.
//
//   EMBER_CHECK(a.dim() == 2, "expected a 2-D tensor, got ", a.dim(), "-D");
//   EMBER_ERROR("unsupported dtype ", dtype);
//
// The message parts are streamed with operator<< (like TORCH_CHECK), and are only
// evaluated when the check fails. what() is the message itself, without file/line
// decoration, so tests can compare it with PyTorch's text.
#pragma once

#include "export.h"
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace ember {

// The base class of every exception Ember throws (like c10::Error).
class EMBER_API Error : public std::runtime_error {
public:
    explicit Error(const std::string& msg) : std::runtime_error(msg) {}
    explicit Error(const char* msg) : std::runtime_error(msg) {}
    // The message (identical to what()).
    std::string msg() const { return what(); }
};

// Like c10::IndexError / ValueError / TypeError / NotImplementedError: subclasses of Error,
// so catching ember::Error catches them all.
class EMBER_API IndexError : public Error {
public:
    using Error::Error;
};
class EMBER_API ValueError : public Error {
public:
    using Error::Error;
};
class EMBER_API TypeError : public Error {
public:
    using Error::Error;
};
class EMBER_API NotImplementedError : public Error {
public:
    using Error::Error;
};

namespace detail {

inline void stream_parts(std::ostringstream&) {}

template <typename T, typename... Rest>
void stream_parts(std::ostringstream& os, const T& first, const Rest&... rest) {
    os << first;
    stream_parts(os, rest...);
}

// Concatenates the parts as operator<< prints them ("" when there are none).
template <typename... Args>
std::string str_cat(const Args&... args) {
    std::ostringstream os;
    stream_parts(os, args...);
    return os.str();
}

template <typename E, typename... Args>
[[noreturn]] void throw_error(const char* cond, const Args&... args) {
    std::string msg = str_cat(args...);
    if (msg.empty()) {
        msg = std::string("Expected ") + cond + " to be true, but got false.";
    }
    throw E(msg);
}

}  // namespace detail

// c10::str: the parts concatenated as operator<< prints them (str("a", 1) == "a1").
template <typename... Args>
std::string str(const Args&... args) {
    return detail::str_cat(args...);
}

}  // namespace ember

#define EMBER_LIKELY_(x) __builtin_expect(static_cast<bool>(x), 1)

// (The helper macros append an empty message part so that a check without a message
// is valid ISO C++17 without the GNU ", ##__VA_ARGS__" extension.)
#define EMBER_CHECK_IMPL_(ExcType, cond, ...)                                          \
    do {                                                                               \
        if (!EMBER_LIKELY_(cond)) {                                                    \
            ::ember::detail::throw_error<::ember::ExcType>(#cond, __VA_ARGS__);        \
        }                                                                              \
    } while (0)

// EMBER_CHECK(cond, msg parts...): throws ember::Error with the streamed message parts
// when cond is false ("Expected cond to be true, but got false." without parts).
#define EMBER_CHECK(...) EMBER_CHECK_IMPL_(Error, __VA_ARGS__, "")

// The same, throwing a subclass of ember::Error.
#define EMBER_CHECK_INDEX(...) EMBER_CHECK_IMPL_(IndexError, __VA_ARGS__, "")
#define EMBER_CHECK_VALUE(...) EMBER_CHECK_IMPL_(ValueError, __VA_ARGS__, "")
#define EMBER_CHECK_TYPE(...) EMBER_CHECK_IMPL_(TypeError, __VA_ARGS__, "")

// EMBER_ERROR(msg parts...): throws ember::Error unconditionally.
#define EMBER_ERROR(...) ::ember::detail::throw_error<::ember::Error>("false", __VA_ARGS__, "")
