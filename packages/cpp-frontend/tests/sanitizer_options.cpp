// Sanitizer settings of the EMBER_SANITIZE=ON test programs, compiled into each of them so
// that they apply however the program is started (ctest, by hand, under a debugger).
// ASAN_OPTIONS / UBSAN_OPTIONS in the environment still override them.

extern "C" {

// Leaks are errors; the rest tightens the defaults: every stack variable gets a redzone after
// its scope ends, static initializers in the wrong order and mismatched new/delete are caught.
const char* __asan_default_options() {
    return "detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:"
           "strict_init_order=1:alloc_dealloc_mismatch=1:abort_on_error=0";
}

// A UB report stops the program (with -fno-sanitize-recover=all it would anyway) and shows
// where it happened.
const char* __ubsan_default_options() { return "print_stacktrace=1:halt_on_error=1"; }

}  // extern "C"
