// ember::data: datasets, Stack, samplers, random_split and the DataLoader (order, coverage,
// drop_last, seeds, workers giving the same batches as workers(0), errors from workers,
// shutdown mid-epoch).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ember/data.h"
#include "ember/ember.h"

namespace {

using ember::Tensor;
namespace data = ember::data;
using data::DataLoaderOptions;
using data::Example;
using data::datasets::TensorDataset;

// n samples: data row i is [i, i + 0.5] (float), target i (long), so a batch tells which
// samples it holds.
TensorDataset numbered(int64_t n) {
    Tensor idx = ember::arange(n);
    Tensor x = ember::stack({idx.to(ember::kFloat), idx.to(ember::kFloat) + 0.5f}, 1);
    return TensorDataset(x, idx);
}

std::vector<int64_t> ids(const Example<>& batch) {
    Tensor t = batch.target.contiguous();
    return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
}

template <typename Loader>
std::vector<std::vector<int64_t>> epoch_ids(Loader& loader) {
    std::vector<std::vector<int64_t>> out;
    for (Example<>& batch : loader) out.push_back(ids(batch));
    return out;
}

std::vector<int64_t> flatten(const std::vector<std::vector<int64_t>>& batches) {
    std::vector<int64_t> all;
    for (const auto& b : batches) all.insert(all.end(), b.begin(), b.end());
    return all;
}

// ------------------------------------------------------------------------------ datasets

TEST(TensorDataset, GetAndSize) {
    TensorDataset ds = numbered(5);
    EXPECT_EQ(ds.size(), 5u);
    Example<> e = ds.get(3);
    EXPECT_TRUE(e.data.equal(ember::tensor({3.0f, 3.5f})));
    EXPECT_EQ(e.target.item<int64_t>(), 3);
    EXPECT_THROW(ds.get(5), ember::IndexError);

    TensorDataset only_data(ember::zeros({4, 2}));
    EXPECT_FALSE(only_data.get(0).target.defined());
    EXPECT_EQ(TensorDataset(std::vector<Tensor>{ember::zeros({3}), ember::ones({3})}).size(), 3u);
}

TEST(TensorDataset, Checks) {
    try {
        TensorDataset(ember::zeros({4, 2}), ember::zeros({3}));
        FAIL() << "no error";
    } catch (const ember::ValueError& e) {
        EXPECT_STREQ(e.what(), "Size mismatch between tensors");
    }
    EXPECT_THROW(TensorDataset(std::vector<Tensor>{}), ember::ValueError);
    EXPECT_THROW(TensorDataset(std::vector<Tensor>{ember::zeros({2}), ember::zeros({2}),
                                                   ember::zeros({2})}),
                 ember::ValueError);
    EXPECT_THROW(TensorDataset(ember::scalar_tensor(1.0)), ember::ValueError);
}

TEST(Stack, StacksDataAndTargets) {
    TensorDataset ds = numbered(6);
    Example<> batch = data::transforms::Stack<>().apply_batch(ds.get_batch({4, 1, 2}));
    EXPECT_EQ(batch.data.sizes().vec(), (std::vector<int64_t>{3, 2}));
    EXPECT_EQ(ids(batch), (std::vector<int64_t>{4, 1, 2}));
    EXPECT_TRUE(batch.data.select(0, 0).equal(ember::tensor({4.0f, 4.5f})));

    std::vector<Example<>> no_targets{{ember::ones({2}), Tensor()}, {ember::zeros({2}), Tensor()}};
    Example<> stacked = data::transforms::Stack<>().apply_batch(no_targets);
    EXPECT_FALSE(stacked.target.defined());
    std::vector<Example<>> mixed{{ember::ones({2}), ember::ones({1})}, {ember::zeros({2}), Tensor()}};
    EXPECT_THROW(data::transforms::Stack<>().apply_batch(mixed), ember::Error);
    EXPECT_THROW(data::transforms::Stack<>().apply_batch({}), ember::Error);

    std::vector<data::TensorExample> xs{ember::ones({3}), ember::zeros({3})};
    data::TensorExample t = data::transforms::Stack<data::TensorExample>().apply_batch(xs);
    EXPECT_EQ(t.data.sizes().vec(), (std::vector<int64_t>{2, 3}));
}

TEST(MapDataset, MapStack) {
    auto mapped = numbered(8).map(data::transforms::Stack<>());
    EXPECT_EQ(mapped.size(), 8u);
    Example<> batch = mapped.get_batch({0, 7});
    EXPECT_EQ(ids(batch), (std::vector<int64_t>{0, 7}));
}

// A dataset of squares: Example<> from get(), with a custom size.
struct Squares : data::datasets::Dataset<Squares> {
    explicit Squares(std::size_t n) : n(n) {}
    Example<> get(std::size_t i) override {
        const double v = static_cast<double>(i);
        return {ember::full({1}, v, ember::kDouble), ember::full({1}, v * v, ember::kDouble)};
    }
    std::optional<std::size_t> size() const override { return n; }
    std::size_t n;
};

TEST(Dataset, CustomDatasetThroughTheLoader) {
    auto loader = data::make_data_loader(Squares(10), DataLoaderOptions().batch_size(4));
    std::vector<int64_t> sizes;
    for (auto& batch : *loader) {
        sizes.push_back(batch.data.size(0));
        EXPECT_TRUE(batch.target.equal(batch.data * batch.data));
    }
    EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4, 2}));
}

// Examples that are not tensors: the loader yields the dataset's batches uncollated.
struct Words : data::datasets::Dataset<Words, Example<std::string, int>> {
    Example<std::string, int> get(std::size_t i) override {
        return {"w" + std::to_string(i), static_cast<int>(i)};
    }
    std::optional<std::size_t> size() const override { return 5; }
};

TEST(Dataset, NonTensorExamplesAreNotCollated) {
    data::DataLoader<Words> loader(Words(), DataLoaderOptions(2).workers(2));
    std::vector<std::string> words;
    for (std::vector<Example<std::string, int>>& batch : loader) {
        for (auto& e : batch) words.push_back(e.data);
    }
    EXPECT_EQ(words, (std::vector<std::string>{"w0", "w1", "w2", "w3", "w4"}));
}

// ------------------------------------------------------------------------------ samplers

TEST(Samplers, Sequential) {
    data::samplers::SequentialSampler s(5);
    EXPECT_EQ(*s.next(2), (std::vector<std::size_t>{0, 1}));
    EXPECT_EQ(*s.next(2), (std::vector<std::size_t>{2, 3}));
    EXPECT_EQ(*s.next(2), (std::vector<std::size_t>{4}));
    EXPECT_FALSE(s.next(2).has_value());
    s.reset();
    EXPECT_EQ(*s.next(10), (std::vector<std::size_t>{0, 1, 2, 3, 4}));
    s.reset(2);
    EXPECT_EQ(*s.next(10), (std::vector<std::size_t>{0, 1}));
}

std::vector<std::size_t> drain(data::samplers::Sampler& s, std::size_t batch) {
    std::vector<std::size_t> all;
    while (auto b = s.next(batch)) all.insert(all.end(), b->begin(), b->end());
    return all;
}

TEST(Samplers, RandomIsAPermutationPerEpochAndReproducible) {
    const std::size_t n = 50;
    data::samplers::RandomSampler a(n, 42), b(n, 42), c(n, 43);
    std::vector<std::size_t> a1 = drain(a, 7), b1 = drain(b, 5), c1 = drain(c, 7);
    std::vector<std::size_t> sorted = a1;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(sorted[i], i);
    EXPECT_EQ(a1, b1);  // same seed, same order (whatever the batch size)
    EXPECT_NE(a1, c1);
    a.reset();
    b.reset();
    std::vector<std::size_t> a2 = drain(a, 7);
    EXPECT_NE(a1, a2);  // a new permutation each epoch...
    EXPECT_EQ(a2, drain(b, 9));  // ... the same sequence of them for the same seed
    a.reset(3);
    EXPECT_EQ(drain(a, 2).size(), 3u);
    EXPECT_EQ(a.seed(), 42u);

    // unseeded: each epoch's seed is drawn from the default generator (at its first next())
    ember::manual_seed(7);
    data::samplers::RandomSampler d(n);
    const std::vector<std::size_t> d1 = drain(d, 8);
    ember::manual_seed(7);
    data::samplers::RandomSampler e(n);
    EXPECT_EQ(drain(e, 8), d1);
    EXPECT_EQ(d.seed(), e.seed());
    EXPECT_NE(d.seed(), 0u);
    e.reset();
    EXPECT_NE(drain(e, 8), d1);  // the next epoch: a new seed, a new permutation
}

// --------------------------------------------------------------------------- random_split

TEST(RandomSplit, LengthsAndFractions) {
    auto parts = data::datasets::random_split(10, {7, 3}, 0);
    ASSERT_EQ(parts.size(), 2u);
    EXPECT_EQ(parts[0].size(), 7u);
    EXPECT_EQ(parts[1].size(), 3u);
    std::set<std::size_t> all(parts[0].begin(), parts[0].end());
    all.insert(parts[1].begin(), parts[1].end());
    EXPECT_EQ(all.size(), 10u);
    EXPECT_EQ(*all.rbegin(), 9u);
    EXPECT_EQ(parts, data::datasets::random_split(10, {7, 3}, 0));  // reproducible
    EXPECT_NE(parts, data::datasets::random_split(10, {7, 3}, 1));

    // fractions: floor(n * f), then the remainder round robin (Python's rule)
    auto thirds = data::datasets::random_split(10, {0.3, 0.3, 0.4}, 5);
    EXPECT_EQ(thirds[0].size(), 3u);
    EXPECT_EQ(thirds[1].size(), 3u);
    EXPECT_EQ(thirds[2].size(), 4u);
    auto odd = data::datasets::random_split(11, {0.5, 0.5}, 5);
    EXPECT_EQ(odd[0].size(), 6u);
    EXPECT_EQ(odd[1].size(), 5u);

    try {
        data::datasets::random_split(10, {5, 4}, 0);
        FAIL() << "no error";
    } catch (const ember::ValueError& e) {
        EXPECT_STREQ(e.what(), "Sum of input lengths does not equal the length of the input dataset!");
    }
    try {
        data::datasets::random_split(10, {1.5, -0.5}, 0);
        FAIL() << "no error";
    } catch (const ember::ValueError& e) {
        EXPECT_STREQ(e.what(), "Fraction at index 0 is not between 0 and 1");
    }
    EXPECT_THROW(data::datasets::random_split(10, {2.5, 7.5}, 0), ember::ValueError);
}

TEST(RandomSplit, SubsetsOfADataset) {
    auto subsets = data::datasets::random_split(numbered(20), {0.75, 0.25}, 3);
    ASSERT_EQ(subsets.size(), 2u);
    EXPECT_EQ(subsets[0].size(), 15u);
    EXPECT_EQ(subsets[1].size(), 5u);
    std::set<int64_t> seen;
    for (auto& subset : subsets) {
        for (std::size_t i = 0; i < *subset.size(); ++i) {
            const int64_t id = subset.get(i).target.item<int64_t>();
            EXPECT_EQ(static_cast<std::size_t>(id), subset.indices()[i]);
            seen.insert(id);
        }
    }
    EXPECT_EQ(seen.size(), 20u);
    EXPECT_THROW(subsets[1].get(5), ember::IndexError);

    auto loader = data::make_data_loader(subsets[1], DataLoaderOptions(2));
    std::vector<int64_t> got = flatten(epoch_ids(*loader));
    EXPECT_EQ(got, std::vector<int64_t>(subsets[1].indices().begin(), subsets[1].indices().end()));
}

// ---------------------------------------------------------------------------- DataLoader

TEST(DataLoader, SequentialOrderAndLastBatch) {
    auto loader = data::make_data_loader(numbered(10), DataLoaderOptions().batch_size(4));
    auto batches = epoch_ids(*loader);
    ASSERT_EQ(batches.size(), 3u);
    EXPECT_EQ(batches[0], (std::vector<int64_t>{0, 1, 2, 3}));
    EXPECT_EQ(batches[2], (std::vector<int64_t>{8, 9}));
    for (Example<>& batch : *loader) {  // the stacked shapes
        EXPECT_EQ(batch.data.dim(), 2);
        EXPECT_EQ(batch.data.size(1), 2);
        EXPECT_EQ(batch.target.dim(), 1);
        EXPECT_TRUE(batch.data.select(1, 0).equal(batch.target.to(ember::kFloat)));
    }
    EXPECT_EQ(epoch_ids(*loader), batches);  // epoch after epoch
}

TEST(DataLoader, DropLast) {
    for (std::size_t workers : {0, 2}) {
        auto loader = data::make_data_loader(
            numbered(10), DataLoaderOptions().batch_size(4).drop_last(true).workers(workers));
        auto batches = epoch_ids(*loader);
        ASSERT_EQ(batches.size(), 2u);
        EXPECT_EQ(batches[1], (std::vector<int64_t>{4, 5, 6, 7}));
        auto exact = data::make_data_loader(numbered(8), DataLoaderOptions(4).drop_last(true));
        EXPECT_EQ(epoch_ids(*exact).size(), 2u);
    }
}

TEST(DataLoader, ShuffleCoversEveryIndexOncePerEpoch) {
    const int64_t n = 103;
    auto loader = data::make_data_loader(
        numbered(n), DataLoaderOptions().batch_size(10).shuffle(true).seed(11));
    std::vector<std::vector<int64_t>> orders;
    for (int epoch = 0; epoch < 4; ++epoch) {
        auto batches = epoch_ids(*loader);
        EXPECT_EQ(batches.size(), 11u);
        EXPECT_EQ(batches.back().size(), 3u);
        std::vector<int64_t> all = flatten(batches);
        std::vector<int64_t> sorted = all;
        std::sort(sorted.begin(), sorted.end());
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(sorted[i], i) << "epoch " << epoch;
        orders.push_back(all);
    }
    EXPECT_NE(orders[0], orders[1]);  // a new permutation per epoch
    EXPECT_NE(orders[1], orders[2]);
}

TEST(DataLoader, SeedReproducibility) {
    auto run = [](uint64_t seed) {
        auto loader = data::make_data_loader(
            numbered(40), DataLoaderOptions().batch_size(8).shuffle(true).seed(seed));
        std::vector<std::vector<int64_t>> epochs;
        for (int e = 0; e < 3; ++e) epochs.push_back(flatten(epoch_ids(*loader)));
        return epochs;
    };
    EXPECT_EQ(run(5), run(5));
    EXPECT_NE(run(5), run(6));
}

TEST(DataLoader, WorkersGiveTheBatchesOfWorkersZero) {
    const auto options = DataLoaderOptions().batch_size(7).shuffle(true).seed(99);
    auto reference = data::make_data_loader(numbered(200), DataLoaderOptions(options).workers(0));
    std::vector<std::vector<std::vector<int64_t>>> expected;
    std::vector<std::vector<Tensor>> expected_data;
    for (int e = 0; e < 3; ++e) {
        expected.push_back(epoch_ids(*reference));
    }
    for (std::size_t workers : {1, 2, 4}) {
        for (std::size_t max_jobs : {1, 3, 16}) {
            auto loader = data::make_data_loader(
                numbered(200), DataLoaderOptions(options).workers(workers).max_jobs(max_jobs));
            for (int e = 0; e < 3; ++e) {
                EXPECT_EQ(epoch_ids(*loader), expected[e])
                    << workers << " workers, max_jobs " << max_jobs << ", epoch " << e;
            }
        }
    }
    // the data tensors too, not only the ids
    auto a = data::make_data_loader(numbered(30), DataLoaderOptions(4).workers(0));
    auto b = data::make_data_loader(numbered(30), DataLoaderOptions(4).workers(3));
    auto ia = a->begin(), ib = b->begin();
    for (; ia != a->end(); ++ia, ++ib) {
        ASSERT_NE(ib, b->end());
        EXPECT_TRUE(ia->data.equal(ib->data));
        EXPECT_TRUE(ia->target.equal(ib->target));
    }
    EXPECT_EQ(ib, b->end());
}

TEST(DataLoader, MakeDataLoaderSpellings) {
    const std::size_t n = 12;
    auto seq = data::make_data_loader<data::samplers::SequentialSampler>(numbered(n), DataLoaderOptions(5));
    EXPECT_EQ(flatten(epoch_ids(*seq)), flatten(epoch_ids(*data::make_data_loader(numbered(n), 5))));
    auto rnd = data::make_data_loader<data::samplers::RandomSampler>(numbered(n), DataLoaderOptions(5).seed(3));
    auto shuffled = data::make_data_loader(numbered(n), DataLoaderOptions(5).shuffle(true).seed(3));
    EXPECT_EQ(epoch_ids(*rnd), epoch_ids(*shuffled));
    auto given = data::make_data_loader(numbered(n), data::samplers::RandomSampler(n, 3), DataLoaderOptions(5));
    EXPECT_EQ(epoch_ids(*given), epoch_ids(*data::make_data_loader(numbered(n), DataLoaderOptions(5).shuffle(true).seed(3))));
    auto mapped = data::make_data_loader(numbered(n).map(data::transforms::Stack<>()), DataLoaderOptions(5).workers(2));
    EXPECT_EQ(epoch_ids(*mapped), epoch_ids(*seq));

    data::DataLoader<TensorDataset> direct(numbered(n), DataLoaderOptions(6));
    EXPECT_EQ(epoch_ids(direct).size(), 2u);
}

TEST(DataLoader, OptionChecks) {
    try {
        data::make_data_loader(numbered(4), DataLoaderOptions().batch_size(0));
        FAIL() << "no error";
    } catch (const ember::ValueError& e) {
        EXPECT_STREQ(e.what(), "batch_size should be a positive integer value, but got batch_size=0");
    }
    try {
        data::make_data_loader(numbered(4), data::samplers::SequentialSampler(4),
                               DataLoaderOptions().shuffle(true));
        FAIL() << "no error";
    } catch (const ember::ValueError& e) {
        EXPECT_STREQ(e.what(), "sampler option is mutually exclusive with shuffle");
    }
    EXPECT_THROW(data::make_data_loader(numbered(4), DataLoaderOptions().workers(2).max_jobs(0)),
                 ember::ValueError);
    auto loader = data::make_data_loader(numbered(4), DataLoaderOptions(2));
    EXPECT_THROW(*loader->end(), ember::Error);
}

// A dataset whose sample `bad` throws.
struct Faulty : data::datasets::Dataset<Faulty> {
    Faulty(std::size_t n, std::size_t bad) : n(n), bad(bad) {}
    Example<> get(std::size_t i) override {
        if (i == bad) throw std::out_of_range("sample " + std::to_string(i) + " is corrupt");
        return {ember::full({2}, static_cast<double>(i)), ember::full({1}, static_cast<double>(i))};
    }
    std::optional<std::size_t> size() const override { return n; }
    std::size_t n, bad;
};

TEST(DataLoader, WorkerErrorsAreRethrownWithTheIndex) {
    for (std::size_t workers : {0, 1, 3}) {
        auto loader = data::make_data_loader(Faulty(20, 13), DataLoaderOptions(4).workers(workers));
        std::size_t good = 0;
        try {
            for (auto& batch : *loader) {
                (void)batch;
                ++good;
            }
            FAIL() << "no error";
        } catch (const data::DataLoaderError& e) {
            EXPECT_EQ(good, 3u);
            EXPECT_EQ(e.batch_index(), 3u);
            EXPECT_EQ(e.indices(), (std::vector<std::size_t>{12, 13, 14, 15}));
            const std::string what = e.what();
            EXPECT_NE(what.find("batch 3 (sample indices [12, 13, 14, 15])"), std::string::npos) << what;
            EXPECT_NE(what.find("sample 13 is corrupt"), std::string::npos) << what;
            if (workers == 0) {
                EXPECT_FALSE(e.worker().has_value());
                EXPECT_EQ(what.rfind("DataLoader: ", 0), 0u) << what;
            } else {
                ASSERT_TRUE(e.worker().has_value());
                EXPECT_LT(*e.worker(), workers);
                EXPECT_EQ(what.rfind("DataLoader worker ", 0), 0u) << what;
            }
            try {
                std::rethrow_if_nested(e);
                FAIL() << "nothing nested";
            } catch (const std::out_of_range& original) {
                EXPECT_STREQ(original.what(), "sample 13 is corrupt");
            }
        }
        // the loader is still usable: a new epoch starts from the beginning
        auto it = loader->begin();
        EXPECT_EQ(it->target.select(0, 0).item<double>(), 0.0);
    }
}

// A dataset that takes its time and counts the samples made.
struct Slow : data::datasets::Dataset<Slow> {
    explicit Slow(std::shared_ptr<std::atomic<int>> made) : made(std::move(made)) {}
    Example<> get(std::size_t i) override {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        made->fetch_add(1);
        return {ember::full({1}, static_cast<double>(i)), ember::full({1}, 0.0)};
    }
    std::optional<std::size_t> size() const override { return 1000; }
    std::shared_ptr<std::atomic<int>> made;
};

TEST(DataLoader, ShutdownMidEpoch) {
    auto made = std::make_shared<std::atomic<int>>(0);
    {
        auto loader = data::make_data_loader(Slow(made), DataLoaderOptions(4).workers(4).max_jobs(8));
        int seen = 0;
        for (auto& batch : *loader) {
            EXPECT_EQ(batch.data.size(0), 4);
            if (++seen == 3) break;
        }
        // a new epoch mid-epoch abandons the old one and starts over
        auto it = loader->begin();
        EXPECT_EQ(it->data.select(0, 0).item<double>(), 0.0);
        ++it;
        EXPECT_EQ(it->data.select(0, 0).item<double>(), 4.0);
    }  // destroyed with batches in flight: the workers stop and are joined
    const int after = made->load();
    EXPECT_LT(after, 1000);  // the workers did not run through the epoch
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(made->load(), after);  // and nothing runs any more
}

TEST(DataLoader, DestroyedBeforeIterating) {
    auto made = std::make_shared<std::atomic<int>>(0);
    { auto loader = data::make_data_loader(Slow(made), DataLoaderOptions(4).workers(3)); }
    EXPECT_EQ(made->load(), 0);
}

TEST(DataLoader, ManyEpochsWithWorkers) {
    auto loader = data::make_data_loader(
        numbered(37), DataLoaderOptions().batch_size(5).shuffle(true).seed(1).workers(3).max_jobs(2));
    auto reference = data::make_data_loader(
        numbered(37), DataLoaderOptions().batch_size(5).shuffle(true).seed(1));
    for (int e = 0; e < 30; ++e) ASSERT_EQ(epoch_ids(*loader), epoch_ids(*reference)) << e;
}

}  // namespace
