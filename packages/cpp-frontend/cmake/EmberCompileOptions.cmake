# Warning, sanitizer and optimization settings shared by libember and its tests.
#
# Optimization comes from the build type: Release is CMake's -O3 -DNDEBUG, with no -march:
# the wheel's libember must run on any x86-64 machine, so it targets the baseline ISA (the
# heavy lifting, matmul, runs in OpenBLAS, which picks its kernels for the CPU at run time).
# For a library only ever run on the build machine, add -DCMAKE_CXX_FLAGS=-march=native.

option(EMBER_SANITIZE
       "Build the library and the tests with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(EMBER_WERROR "Treat warnings in the library as errors (the tests always do)" OFF)

set(EMBER_WARNING_FLAGS
    "$<$<CXX_COMPILER_ID:GNU,Clang,AppleClang>:-Wall;-Wextra>"
    "$<$<CXX_COMPILER_ID:MSVC>:/W4>")
set(EMBER_SANITIZER_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer
                          -fno-sanitize-recover=all)

if(EMBER_SANITIZE AND NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    message(FATAL_ERROR "EMBER_SANITIZE needs GCC or Clang (found ${CMAKE_CXX_COMPILER_ID})")
endif()

# ember_target_compile_options(<target> [WERROR <bool>] [SANITIZE <bool>])
#   -Wall -Wextra (and -Werror when WERROR is true); with SANITIZE (default: EMBER_SANITIZE),
#   the sanitizer flags for compiling and linking, plus libstdc++'s cheap precondition checks
#   (_GLIBCXX_ASSERTIONS: bounds-checked operator[], front() on empty containers, ...; it
#   does not change the ABI, so sanitized and plain objects still link together).
function(ember_target_compile_options target)
    cmake_parse_arguments(PARSE_ARGV 1 arg "" "WERROR;SANITIZE" "")
    if(NOT DEFINED arg_SANITIZE)
        set(arg_SANITIZE ${EMBER_SANITIZE})
    endif()
    target_compile_options(${target} PRIVATE ${EMBER_WARNING_FLAGS})
    if(arg_WERROR)
        target_compile_options(${target} PRIVATE
            "$<$<CXX_COMPILER_ID:GNU,Clang,AppleClang>:-Werror>"
            "$<$<CXX_COMPILER_ID:MSVC>:/WX>")
    endif()
    if(arg_SANITIZE)
        target_compile_options(${target} PRIVATE ${EMBER_SANITIZER_FLAGS})
        target_compile_definitions(${target} PRIVATE _GLIBCXX_ASSERTIONS
                                                     EMBER_SANITIZERS="address,undefined")
        target_link_options(${target} PRIVATE -fsanitize=address,undefined)
    endif()
endfunction()
