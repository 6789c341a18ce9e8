// Ember C++17 frontend. Placeholder: the API (the same names as the Python
// package, generated from core's op registry) is a later issue.
#pragma once

#include <string_view>

namespace ember {

inline constexpr int version_major = 0;
inline constexpr int version_minor = 1;
inline constexpr int version_patch = 0;

// The frontend's version, "major.minor.patch", matching the Python distributions.
constexpr std::string_view version() noexcept { return "0.1.0"; }

}  // namespace ember
