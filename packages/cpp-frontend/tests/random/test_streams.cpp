// The random streams are Python Ember's, which are PyTorch's CPU streams: each case makes the
// calls of its twin in golden_random.py under the same seed and compares the results bit for
// bit (orthogonal_ with a tolerance: its QR is other code). Plus the engine itself against
// std::mt19937 and MT19937's reference words, and the state bytes' round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/golden.h"
#include "ember/data.h"
#include "ember/ember.h"

namespace {

using namespace ember;
namespace F = ember::nn::functional;
namespace init = ember::nn::init;

// Bitwise equality of dtype, shape and every element (NaNs included).
::testing::AssertionResult same_bits(const Tensor& got, const Tensor& want) {
    if (got.scalar_type() != want.scalar_type()) {
        return ::testing::AssertionFailure() << "dtype " << scalar_type_name(got.scalar_type()) << " != "
                                             << scalar_type_name(want.scalar_type());
    }
    if (got.sizes().vec() != want.sizes().vec()) {
        return ::testing::AssertionFailure() << "shape " << got.sizes() << " != " << want.sizes();
    }
    const Tensor a = got.contiguous(), b = want.contiguous();
    const size_t bytes = static_cast<size_t>(a.numel()) * element_size(a.scalar_type());
    if (std::memcmp(a.data_ptr(), b.data_ptr(), bytes) != 0) {
        return ::testing::AssertionFailure() << "values differ:\n" << got << "\nwant:\n" << want;
    }
    return ::testing::AssertionSuccess();
}

class Golden {
public:
    explicit Golden(std::string name) : name_(std::move(name)) {}
    Tensor next() { return ember::testing::golden_tensor("random.safetensors", name_ + "." + std::to_string(i_++)); }
    // The next golden tensor must be `got`, bit for bit.
    void expect(const Tensor& got) {
        const int i = i_;
        EXPECT_TRUE(same_bits(got, next())) << name_ << "." << i;
    }

private:
    std::string name_;
    int i_ = 0;
};

#define SKIP_WITHOUT_GOLDEN() \
    if (!EMBER_GOLDEN_AVAILABLE) GTEST_SKIP() << "no Python to write the golden files"

TEST(Engine, IsStdMt19937SeededWithTheLow32Bits) {
    for (uint64_t seed : {uint64_t(0), uint64_t(5489), uint64_t(67280421310721ULL), (uint64_t(1) << 40) + 5}) {
        std::mt19937 reference(static_cast<uint32_t>(seed & 0xffffffffu));
        Generator g(seed);
        for (int i = 0; i < 2000; ++i) ASSERT_EQ(g.random(), reference()) << seed << " word " << i;
        EXPECT_EQ(g.current_seed(), seed);
    }
    std::mt19937 reference(5489);  // the 10000th word of the reference MT19937
    reference.discard(9999);
    EXPECT_EQ(reference(), 4123659995u);
    Generator g(5489);
    for (int i = 0; i < 9999; ++i) g.random();
    EXPECT_EQ(g.random(), 4123659995u);
    Generator h(1);
    const uint64_t hi = Generator(1).random();
    EXPECT_EQ(h.random64() >> 32, hi);  // random64: the first word is the high half
}

TEST(Engine, TheDefaultGeneratorsSeedIsPerProcessUnlessEmberSeedFixesIt) {
    // libtorch seeds its default CPU generator non-deterministically; EMBER_SEED fixes it
    // (CMakeLists.txt sets it for every test, so the default streams are reproducible here)
    EXPECT_EQ(detail::process_seed("5"), 5u);
    EXPECT_EQ(detail::process_seed(" 0x10 "), 16u);
    EXPECT_EQ(detail::process_seed("-1"), UINT64_MAX);
    EXPECT_EQ(detail::process_seed("+18446744073709551615"), UINT64_MAX);
    EXPECT_EQ(detail::process_seed("-9223372036854775808"), uint64_t(1) << 63);
    EXPECT_NE(detail::process_seed(nullptr), detail::process_seed(nullptr));
    EXPECT_NE(detail::process_seed("  "), detail::process_seed(""));
    for (const char* bad : {"x", "18446744073709551616", "-9223372036854775809", "1.5", "0x",
                            "-", "12a"}) {
        try {
            detail::process_seed(bad);
            ADD_FAILURE() << bad << " was taken";
        } catch (const std::runtime_error& e) {
            EXPECT_EQ(std::string(e.what()),
                      std::string("EMBER_SEED must be an integer in [-2**63, 2**64), got '") +
                          bad + "'");
        }
    }
    const char* env = std::getenv("EMBER_SEED");
    ASSERT_NE(env, nullptr) << "the tests run with EMBER_SEED set (tests/CMakeLists.txt)";
    EXPECT_EQ(Generator(detail::process_seed(env)).current_seed(),
              detail::process_seed(env));
    EXPECT_EQ(Generator().current_seed(), default_rng_seed_val);
}

TEST(Engine, StateBytesRoundTrip) {
    Generator g(123);
    const Tensor fresh = g.get_state();
    ASSERT_EQ(fresh.numel(), 5056);
    EXPECT_EQ(fresh.scalar_type(), kByte);
    randn({3}, g);  // caches a pair normal
    const Tensor mid = g.get_state();
    const Tensor a = randn({5}, g), b = rand({700}, g);
    g.set_state(mid);
    EXPECT_TRUE(randn({5}, g).equal(a));
    EXPECT_TRUE(rand({700}, g).equal(b));
    Generator twin = g.clone();
    EXPECT_TRUE(rand({9}, g).equal(rand({9}, twin)));
    g.set_state(fresh);
    EXPECT_TRUE(g.get_state().equal(fresh));
    EXPECT_EQ(g.current_seed(), 123u);

    const std::string size_error = [&] {
        try {
            g.set_state(zeros({10}, kByte));
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string();
    }();
    EXPECT_NE(size_error.find("Expected a CPUGeneratorImplState of size 5056 but found the input RNG state size to be 10"),
              std::string::npos)
        << size_error;
    Tensor bad = fresh.clone();
    bad.index_put_({8}, 0);  // left = 0
    EXPECT_THROW(g.set_state(bad), Error);
}

TEST(Streams, Uniform) {
    SKIP_WITHOUT_GOLDEN();
    Golden want("uniform");
    manual_seed(0);
    want.expect(rand({5, 7}));
    want.expect(rand({13}, kDouble));
    want.expect(rand({10}, kHalf));
    want.expect(empty({20}).uniform_(-2, 3));
    want.expect(empty({9}, kDouble).uniform_(-0.5, 0.25));
    want.expect(empty({6, 4}).t().uniform_(1, 2));
}

TEST(Streams, Normal) {
    SKIP_WITHOUT_GOLDEN();
    Golden want("normal");
    manual_seed(1);
    want.expect(randn({37}));
    want.expect(randn({5}));
    want.expect(randn({3}));
    want.expect(randn({16}));
    want.expect(randn({40}, kDouble));
    want.expect(randn({7}, kDouble));
    want.expect(randn({20}, kHalf));
    want.expect(empty({4, 5}).normal_(1.5, 0.5));
    want.expect(empty({5, 4}).t().normal_(-1, 2));
    using namespace indexing;
    want.expect(empty({3, 40}).index({Slice(), Slice(None, None, 2)}).normal_());
}

TEST(Streams, Integers) {
    SKIP_WITHOUT_GOLDEN();
    Golden want("integers");
    manual_seed(2);
    want.expect(randint(0, 10, {20}));
    want.expect(randint(-5, int64_t(1) << 40, {6}));
    want.expect(randint(7, {3, 4}));
    want.expect(randperm(50));
    want.expect(randperm(3));
    want.expect(randperm(1));
    want.expect(empty({10}, kLong).random_(3, 100));
    want.expect(empty({4, 3}, kFloat).random_(0, int64_t(1) << 20));
}

TEST(Streams, BernoulliExponential) {
    SKIP_WITHOUT_GOLDEN();
    Golden want("bernoulli_exponential");
    manual_seed(3);
    want.expect(empty({30}).bernoulli_(0.3));
    const Tensor p32 = rand({4, 6}), p64 = rand({9}, kDouble);
    want.expect(p32);
    want.expect(p64);
    want.expect(bernoulli(p32));
    want.expect(bernoulli(p64));
    want.expect(empty({10}, kDouble).exponential_(2.0));
    want.expect(empty({10}).exponential_());
}

TEST(Streams, Dropout) {
    SKIP_WITHOUT_GOLDEN();
    Golden want("dropout");
    manual_seed(4);
    const Tensor x = randn({4, 8}), y = randn({8, 6}, kDouble);
    want.expect(x);
    want.expect(y);
    want.expect(F::dropout(x, 0.3, true));
    want.expect(F::dropout(y, 0.5, true));
    want.expect(F::dropout(x.t(), 0.25, true));
    const Tensor z = randn({2, 3, 4, 4});
    want.expect(z);
    want.expect(F::dropout2d(z, 0.5, true));
    want.expect(rand({3}));
}

TEST(Streams, Multinomial) {
    SKIP_WITHOUT_GOLDEN();
    Golden want("multinomial");
    manual_seed(5);
    const Tensor p = tensor({0.1, 0.2, 0.3, 0.15, 0.25, 1.0, 0.0, 3.0, 2.0, 0.5}, kFloat).view({2, 5});
    want.expect(multinomial(p, 3));
    want.expect(multinomial(p, 10, true));
    want.expect(multinomial(p.select(0, 0), 1));
    want.expect(multinomial(p.to(kDouble), 4));
}

TEST(Streams, InitFunctions) {
    SKIP_WITHOUT_GOLDEN();
    Golden want("init_functions");
    manual_seed(6);
    want.expect(init::kaiming_uniform_(empty({8, 5}), std::sqrt(5.0)));
    want.expect(init::kaiming_normal_(empty({6, 20})));
    want.expect(init::xavier_uniform_(empty({4, 7})));
    want.expect(init::xavier_normal_(empty({3, 5})));
    want.expect(init::uniform_(empty({11}), -1, 1));
    want.expect(init::normal_(empty({17}), 0.5, 2.0));
    want.expect(init::trunc_normal_(empty({40}), 0.0, 1.0, -2.0, 2.0));
    want.expect(init::trunc_normal_(empty({30}), 0.0, 1.0, 1.0, 3.0));
    want.expect(init::sparse_(empty({6, 4}), 0.5));
    // rejections in a transposed tensor: each round draws in its memory order
    want.expect(init::trunc_normal_(empty({8, 5}).t(), 0.0, 0.5, -0.5, 0.5));
    want.expect(init::trunc_normal_(empty({30, 7}, kDouble).t(), 0.0, 1.0, -1.0, 1.0));
    want.expect(init::sparse_(empty({5, 3}), 0.25, 0.01, Generator(9)));
    const Tensor q = init::orthogonal_(empty({4, 6}));
    EXPECT_TRUE(q.allclose(want.next(), 1e-5, 1e-6)) << q;
}

TEST(Streams, ModuleInitialisation) {
    SKIP_WITHOUT_GOLDEN();
    Golden want("modules");
    manual_seed(7);
    nn::Linear lin(5, 3);
    nn::Conv2d conv(nn::Conv2dOptions(2, 4, 3));
    nn::Embedding emb(10, 4);
    nn::LSTM lstm(3, 4);
    want.expect(lin->weight.detach());
    want.expect(lin->bias.detach());
    want.expect(conv->weight.detach());
    want.expect(conv->bias.detach());
    want.expect(emb->weight.detach());
    for (const Tensor& p : lstm->parameters()) want.expect(p.detach());
    want.expect(rand({2}));
}

std::vector<int64_t> epoch(data::samplers::Sampler& s) {
    std::vector<int64_t> out;
    s.reset();
    while (auto batch = s.next(4)) out.insert(out.end(), batch->begin(), batch->end());
    return out;
}

Tensor as_tensor(std::vector<int64_t> v) {
    return from_blob(v.data(), {static_cast<int64_t>(v.size())}, kLong).clone();
}

TEST(Streams, Samplers) {
    SKIP_WITHOUT_GOLDEN();
    Golden want("samplers");
    manual_seed(8);
    data::samplers::RandomSampler s(10);
    want.expect(as_tensor(epoch(s)));
    want.expect(as_tensor(epoch(s)));
    data::samplers::RandomSampler s2(12, 9);
    want.expect(as_tensor(epoch(s2)));
    want.expect(as_tensor(epoch(s2)));
    auto loader = data::make_data_loader(data::datasets::TensorDataset(arange(11)),
                                         data::DataLoaderOptions(3).shuffle(true));
    for (int e = 0; e < 2; ++e) {
        std::vector<int64_t> order;
        for (auto& batch : *loader) {
            const Tensor b = batch.data.contiguous();
            order.insert(order.end(), b.data_ptr<int64_t>(), b.data_ptr<int64_t>() + b.numel());
        }
        want.expect(as_tensor(order));
    }
    want.expect(rand({2}));
}

TEST(Streams, StateBytesArePythons) {
    SKIP_WITHOUT_GOLDEN();
    Golden want("state");
    manual_seed(10);
    randn({3});
    const Tensor saved = get_rng_state();
    want.expect(saved);
    want.expect(randn({4}));
    want.expect(rand({3}));
    Generator g((uint64_t(1) << 40) + 5);
    want.expect(rand({4}, g));
    set_rng_state(ember::testing::golden_tensor("random.safetensors", "state.0"));  // Python's bytes
    want.expect(randn({4}));
}

}  // namespace
