// Ember's version, and what the library it runs with was built with.
#pragma once

#include <ember/export.h>

#include <string>
#include <string_view>

namespace ember {

// The version of these headers, matching the Python distributions (ember-core 0.1.0, ...).
inline constexpr int version_major = 0;
inline constexpr int version_minor = 1;
inline constexpr int version_patch = 0;

// The headers' version, "major.minor.patch".
constexpr std::string_view version() noexcept { return "0.1.0"; }

// The version libember was built as. It equals version() when the headers and the library
// come from one installation (the build checks that they agree).
EMBER_API std::string_view library_version() noexcept;

// Whether libember runs matmul through OpenBLAS (like at::hasMKL() / at::hasLAPACK()).
EMBER_API bool has_openblas() noexcept;

// A description of the build, like torch::show_config(): version, compiler, C++ standard,
// build type, sanitizers, and the BLAS with the CPU kernels it picked, one item a line.
EMBER_API std::string show_config();

}  // namespace ember
