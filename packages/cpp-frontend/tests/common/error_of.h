// The message of the ember::Error a callable throws, for comparing with PyTorch's text:
//
//   EXPECT_EQ(ember::testing::error_of([] { (void)ember::ones({2}).view({3}); }), "shape '[3]' is invalid ...");
#pragma once

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

}  // namespace testing
}  // namespace ember
