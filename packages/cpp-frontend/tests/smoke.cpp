// Smoke test: the header compiles as C++17 and reports the project's version.
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
    std::printf("ember C++ frontend %s\n", expected.c_str());
    return 0;
}
