// EMBER_API: marks the classes, functions and variables that libember exports.
//
//   class EMBER_API Tensor { ... };
//   EMBER_API Tensor zeros(IntArrayRef size, TensorOptions options = {});
//
// Today libember is built with default visibility (every non-static symbol is exported), so
// a missing EMBER_API breaks nothing yet. Configuring with -DEMBER_HIDDEN_VISIBILITY=ON
// builds it with -fvisibility=hidden -fvisibility-inlines-hidden, and then only what carries
// EMBER_API is visible to applications: a smaller, faster-loading library whose internals
// cannot clash with the application's symbols. Before that switch becomes the default,
// every public class and free function needs the macro; in particular every exception class
// (ember::Error and its subclasses: a hidden type_info makes `catch (const ember::Error&)`
// in the application miss exceptions thrown inside libember), and every class whose
// vtable or type_info crosses the library boundary (Module, autograd::Node, ...).
// Templates and inline functions defined entirely in headers need nothing.
#pragma once

#if defined(_WIN32) || defined(__CYGWIN__)
#  if defined(EMBER_BUILDING_LIBRARY)  // CMake defines it while compiling libember
#    define EMBER_API __declspec(dllexport)
#  else
#    define EMBER_API __declspec(dllimport)
#  endif
#  define EMBER_HIDDEN
#elif defined(__GNUC__) || defined(__clang__)
#  define EMBER_API __attribute__((visibility("default")))
#  define EMBER_HIDDEN __attribute__((visibility("hidden")))
#else
#  define EMBER_API
#  define EMBER_HIDDEN
#endif
