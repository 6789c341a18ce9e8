// Helpers of the checkpoint tests: the golden folder, the message of an exception, and the
// serialization tests' helpers (temporary folders, byte files, a zip writer).
#pragma once

#include <cstring>
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "ember/error.h"
#include "ember/tensor.h"
#include "serialize/serialize_test_util.h"

namespace ember_checkpoint_test {

using namespace ember_serialize_test;  // NOLINT: TempDir, read_bytes, make_zip, ...

// Where golden_checkpoint.py wrote its files; skips the test when there are none.
#define EMBER_CHECKPOINT_GOLDEN(dir)                                                    \
    const std::string dir = ::ember_checkpoint_test::golden_dir();                      \
    if (dir.empty()) GTEST_SKIP() << "no golden files (no Python with ember and NumPy)"

// The message of the ember::Error that `fn` throws ("" when it throws nothing; another
// exception type fails the test).
inline std::string error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const ember::Error& e) {
        return e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "not an ember::Error: " << e.what();
        return e.what();
    }
    return "";
}

// Whether a and b have the same dtype, shape and elements, bit for bit.
inline bool same_bits(const ember::Tensor& a, const ember::Tensor& b) {
    if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes()) return false;
    ember::Tensor ca = a.contiguous(), cb = b.contiguous();
    return std::memcmp(ca.data_ptr(), cb.data_ptr(), static_cast<std::size_t>(ca.nbytes())) == 0;
}

// Expects `fn` to throw an ember::Error whose message starts with `prefix` and contains
// `part`.
#define EXPECT_EMBER_ERROR(fn, prefix, part)                                            \
    do {                                                                                \
        const std::string msg_ = ::ember_checkpoint_test::error_of(fn);                 \
        EXPECT_EQ(msg_.rfind(prefix, 0), 0u) << msg_;                                   \
        EXPECT_NE(msg_.find(part), std::string::npos) << msg_;                          \
    } while (0)

}  // namespace ember_checkpoint_test
