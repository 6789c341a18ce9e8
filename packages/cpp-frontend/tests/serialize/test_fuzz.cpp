// Malformed files: every fixture truncated at every length, with a bit flipped at every
// byte, and randomly corrupted, must load or raise ember::Error, never crash, read out of
// bounds (run this suite under AddressSanitizer + UBSan) or throw anything else.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>

#include <gtest/gtest.h>

#include "ember/error.h"
#include "ember/serialize.h"
#include "serialize_test_util.h"

namespace {

using namespace ember_serialize_test;

struct Outcome {
    int loaded = 0;
    int refused = 0;
};

// Parses `bytes` as the fixture `file`'s format; records what happened. Touches every byte
// of what loaded (contiguous_bytes), so a record pointing outside its buffer would be seen.
void parse(const std::string& file, const std::vector<std::byte>& bytes, Outcome* out) {
    auto buf = buffer_of(bytes);
    try {
        es::TensorRecords records;
        if (file.find(".safetensors") != std::string::npos) {
            records = es::deserialize_safetensors(buf, file).tensors;
        } else {
            // with the CRC check off, corrupted pickles reach the unpickler
            records = es::deserialize_torch_checkpoint(buf, file, std::nullopt, false);
        }
        for (const auto& [name, r] : records) {
            es::check_record(r, name);
            auto data = es::contiguous_bytes(r);
            ASSERT_EQ(data.size(), r.nbytes());
        }
        ++out->loaded;
    } catch (const ember::Error& e) {
        std::string what = e.what();
        ASSERT_EQ(what.rfind(file + ": ", 0), 0u) << what;  // names the file
        ++out->refused;
    } catch (const std::exception& e) {
        FAIL() << file << ": unexpected " << typeid(e).name() << ": " << e.what();
    }
}

// Rounds of random corruption per file: $EMBER_FUZZ_ROUNDS, else 1500 (a longer local run:
// EMBER_FUZZ_ROUNDS=100000 under the sanitizers).
int fuzz_rounds() {
    const char* env = std::getenv("EMBER_FUZZ_ROUNDS");
    return env && *env ? std::max(1, std::atoi(env)) : 1500;
}

const char* kFiles[] = {"st_all_dtypes.safetensors", "st_metadata.safetensors",
                        "st_empty.safetensors",      "ember_model.safetensors",
                        "torch_state_dict.pt",       "torch_tensors.pt",
                        "torch_tensors_proto4.pt",   "torch_nested.pt",
                        "torch_scalars.pt",          "ember_state_dict.pt",
                        "ember_tensors.pt"};

TEST(SerializeFuzz, Truncations) {
    for (const char* file : kFiles) {
        auto bytes = read_bytes(fixture(file));
        ASSERT_FALSE(bytes.empty()) << file;
        Outcome outcome;
        for (std::size_t n = 0; n < bytes.size(); ++n) {
            parse(file, std::vector<std::byte>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n)), &outcome);
            if (::testing::Test::HasFatalFailure()) return;
        }
        EXPECT_EQ(outcome.loaded, 0) << file << ": a truncated file loaded";
    }
}

TEST(SerializeFuzz, BitFlips) {
    for (const char* file : kFiles) {
        auto bytes = read_bytes(fixture(file));
        Outcome outcome;
        for (std::size_t i = 0; i < bytes.size(); ++i) {
            auto copy = bytes;
            copy[i] ^= static_cast<std::byte>(1 << (i % 8));  // every bit, over the bytes
            parse(file, copy, &outcome);
            if (::testing::Test::HasFatalFailure()) return;
        }
        EXPECT_GT(outcome.refused, 0) << file;
    }
}

TEST(SerializeFuzz, RandomCorruption) {
    std::mt19937_64 rng(20240601);
    const std::byte interesting[] = {std::byte{0x00}, std::byte{0xff}, std::byte{0x7f},
                                     std::byte{0x80}, std::byte{'('},  std::byte{'.'},
                                     std::byte{'}'},  std::byte{'R'},  std::byte{'"'},
                                     std::byte{'['},  std::byte{'9'},  std::byte{'q'}};
    for (const char* file : kFiles) {
        auto bytes = read_bytes(fixture(file));
        Outcome outcome;
        for (int round = 0, rounds = fuzz_rounds(); round < rounds; ++round) {
            auto copy = bytes;
            int edits = 1 + static_cast<int>(rng() % 4);
            for (int k = 0; k < edits; ++k) {
                std::size_t at = rng() % copy.size();
                switch (rng() % 4) {
                    case 0: copy[at] = static_cast<std::byte>(rng() & 0xff); break;
                    case 1: copy[at] = interesting[rng() % sizeof interesting]; break;
                    case 2:  // a 4-byte field set to a large or small value
                        for (std::size_t j = at; j < copy.size() && j < at + 4; ++j) {
                            copy[j] = (rng() & 1) ? std::byte{0xff} : std::byte{0};
                        }
                        break;
                    default:  // delete or duplicate a run
                        if (rng() & 1) {
                            copy.erase(copy.begin() + static_cast<std::ptrdiff_t>(at),
                                       copy.begin() + static_cast<std::ptrdiff_t>(std::min(copy.size(), at + 1 + rng() % 16)));
                        } else {
                            std::vector<std::byte> run(copy.begin() + static_cast<std::ptrdiff_t>(at),
                                                       copy.begin() + static_cast<std::ptrdiff_t>(std::min(copy.size(), at + 1 + rng() % 16)));
                            copy.insert(copy.begin() + static_cast<std::ptrdiff_t>(at), run.begin(), run.end());
                        }
                }
                if (copy.empty()) break;
            }
            parse(file, copy, &outcome);
            if (::testing::Test::HasFatalFailure()) return;
        }
        EXPECT_GT(outcome.refused, 0) << file;
    }
}

// The pickle alone, corrupted: an archive rebuilt around each mutated data.pkl (so the zip
// layer always passes and every mutation reaches the unpickler).
TEST(SerializeFuzz, CorruptedPickles) {
    PickleWriter p;
    p.proto().op('}').mark();
    p.str("a").tensor("FloatStorage", "0", 6, 0, {2, 3}, {3, 1}, true);
    p.str("b").tensor("FloatStorage", "0", 6, 1, {2, 2}, {1, 3});
    p.str("c").tensor("LongStorage", "1", 1, 0, {}, {});
    p.str("n").integer(3);
    p.op('u').op('.');
    const std::string pickle = p.bytes();
    std::map<std::string, std::vector<std::byte>> storages = {
        {"0", std::vector<std::byte>(24, std::byte{1})}, {"1", std::vector<std::byte>(8, std::byte{2})}};
    Outcome outcome;
    parse("x.pt", make_checkpoint(pickle, storages), &outcome);
    ASSERT_EQ(outcome.loaded, 1);
    std::mt19937_64 rng(7);
    for (std::size_t i = 0; i < pickle.size(); ++i) {
        for (int v : {0x00, 0xff, 0x01, 0x7f, 0x80, int('('), int('t'), int('R'), int('h'), int('q'), int('.')}) {
            std::string copy = pickle;
            copy[i] = static_cast<char>(v);
            parse("x.pt", make_checkpoint(copy, storages), &outcome);
            if (::testing::Test::HasFatalFailure()) return;
        }
    }
    for (int round = 0, rounds = 2 * fuzz_rounds(); round < rounds; ++round) {
        std::string copy = pickle;
        for (int k = 0; k < 3; ++k) copy[rng() % copy.size()] = static_cast<char>(rng() & 0xff);
        if (rng() & 1) copy.resize(rng() % copy.size());
        parse("x.pt", make_checkpoint(copy, storages), &outcome);
        if (::testing::Test::HasFatalFailure()) return;
    }
    EXPECT_GT(outcome.refused, 1000);
    EXPECT_GT(outcome.loaded, 1);
}

}  // namespace
