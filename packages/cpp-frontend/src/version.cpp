// ember::library_version(), has_openblas() and show_config(): what libember was built as.
#include <ember/version.h>

#include <sstream>
#include <string>
#include <string_view>

#ifdef EMBER_HAVE_OPENBLAS
#include <cblas.h>  // scipy_openblas_get_config, scipy_openblas_get_corename, ...
#endif

#ifndef EMBER_PROJECT_VERSION
#error "EMBER_PROJECT_VERSION is defined by CMakeLists.txt (project(VERSION ...))"
#endif
#ifndef EMBER_BUILD_TYPE
#define EMBER_BUILD_TYPE ""
#endif
#ifndef EMBER_SANITIZERS  // CMake defines it for EMBER_SANITIZE=ON builds
#define EMBER_SANITIZERS "none"
#endif

static_assert(ember::version() == std::string_view(EMBER_PROJECT_VERSION),
              "include/ember/version.h and CMakeLists.txt's project(VERSION) disagree");

namespace ember {

std::string_view library_version() noexcept { return EMBER_PROJECT_VERSION; }

bool has_openblas() noexcept {
#ifdef EMBER_HAVE_OPENBLAS
    return true;
#else
    return false;
#endif
}

namespace {

std::string compiler() {
    std::ostringstream os;
#if defined(__clang__)
    os << "Clang " << __clang_major__ << '.' << __clang_minor__ << '.' << __clang_patchlevel__;
#elif defined(__GNUC__)
    os << "GCC " << __GNUC__ << '.' << __GNUC_MINOR__ << '.' << __GNUC_PATCHLEVEL__;
#elif defined(_MSC_VER)
    os << "MSVC " << _MSC_VER;
#else
    os << "unknown";
#endif
    return os.str();
}

#ifdef EMBER_HAVE_OPENBLAS  // (unused without it: -Werror=unused-function)
// OpenBLAS's strings, trimmed ("OpenBLAS 0.3.29 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64").
std::string trimmed(const char* text) {
    std::string s = text == nullptr ? "" : text;
    const auto first = s.find_first_not_of(' ');
    const auto last = s.find_last_not_of(' ');
    return first == std::string::npos ? std::string() : s.substr(first, last - first + 1);
}
#endif

}  // namespace

std::string show_config() {
    std::ostringstream os;
    os << "Ember " << library_version() << " (C++ frontend)\n"
       << "  - compiler: " << compiler() << ", C++ standard " << __cplusplus << '\n';
    const std::string_view build_type = EMBER_BUILD_TYPE;
    os << "  - build type: " << (build_type.empty() ? "none" : build_type) << '\n'
       << "  - sanitizers: " << EMBER_SANITIZERS << '\n';
#ifdef EMBER_HAVE_OPENBLAS
    os << "  - BLAS: " << trimmed(scipy_openblas_get_config())
       << " (scipy-openblas32), core " << trimmed(scipy_openblas_get_corename()) << ", "
       << scipy_openblas_get_num_threads() << " threads\n";
#else
    os << "  - BLAS: none (Ember's own matmul kernels)\n";
#endif
    return os.str();
}

}  // namespace ember
