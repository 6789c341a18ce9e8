// The message of the ember::Error a callable throws, for comparing with PyTorch's text:
//
//   EXPECT_EQ(ember::testing::error_of([] { (void)ember::ones({2}).view({3}); }), "shape '[3]' is invalid ...");
//   EXPECT_EQ(ember::testing::error_as<ember::ValueError>([] { ... }), "...");   // and its class
#pragma once

#include <exception>
#include <functional>
#include <string>

#include "ember/error.h"

namespace ember {
namespace testing {

// What f throws as an ember::Error; "<no error>" when it returns normally.
inline std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "<no error>";
}

// The message of the exception of type E that f throws ("<no error>" or "<other: ...>").
template <typename E>
std::string error_as(const std::function<void()>& f) {
    try {
        f();
    } catch (const E& e) {
        return e.what();
    } catch (const std::exception& e) {
        return std::string("<other: ") + e.what() + ">";
    }
    return "<no error>";
}

}  // namespace testing
}  // namespace ember
