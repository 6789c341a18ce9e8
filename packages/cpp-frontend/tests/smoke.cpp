// Smoke test: the umbrella header compiles as C++17, libember links and loads (with its
// OpenBLAS), and the headers, the library and the project agree on the version.
#include <ember/ember.h>

#include <cstdio>
#include <string>

int main() {
    const std::string expected = EMBER_EXPECTED_VERSION;
    const std::string composed = std::to_string(ember::version_major) + "." +
                                 std::to_string(ember::version_minor) + "." +
                                 std::to_string(ember::version_patch);
    if (ember::version() != expected || composed != expected) {
        std::fprintf(stderr, "ember::version() is %.*s (parts %s), expected %s\n",
                     static_cast<int>(ember::version().size()), ember::version().data(),
                     composed.c_str(), expected.c_str());
        return 1;
    }
    if (ember::library_version() != ember::version()) {
        std::fprintf(stderr, "libember is %.*s, the headers %s\n",
                     static_cast<int>(ember::library_version().size()),
                     ember::library_version().data(), expected.c_str());
        return 1;
    }
    const std::string config = ember::show_config();
    // show_config() asks OpenBLAS for its build and CPU core: the library resolved and loaded.
    if (ember::has_openblas() && config.find("OpenBLAS") == std::string::npos) {
        std::fprintf(stderr, "has_openblas() but show_config() names no OpenBLAS:\n%s",
                     config.c_str());
        return 1;
    }
    std::printf("%s", config.c_str());
    return 0;
}
