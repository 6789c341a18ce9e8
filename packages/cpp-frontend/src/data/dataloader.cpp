// The DataLoader's worker threads and ordered hand-over (detail::BatchEngine), its errors
// and option checks.
#include "ember/data/dataloader.h"

#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

namespace ember {
namespace data {

DataLoaderError::DataLoaderError(const std::string& message, std::optional<std::size_t> worker,
                                 std::size_t batch_index, std::vector<std::size_t> indices)
    : Error(message), worker_(worker), batch_index_(batch_index), indices_(std::move(indices)) {}

namespace detail {

namespace {

// Rethrows `error` as a DataLoaderError naming the batch, with the original nested.
[[noreturn]] void rethrow_batch_error(const std::exception_ptr& error,
                                      std::optional<std::size_t> worker, std::size_t batch,
                                      const std::vector<std::size_t>& indices) {
    try {
        std::rethrow_exception(error);
    } catch (...) {
        std::string what = "unknown exception";
        try {
            throw;
        } catch (const std::exception& e) {
            what = e.what();
        } catch (...) {
        }
        std::ostringstream msg;
        msg << "DataLoader";
        if (worker) msg << " worker " << *worker;
        msg << ": making batch " << batch << " (sample indices [";
        constexpr std::size_t kShown = 16;
        for (std::size_t i = 0; i < indices.size() && i < kShown; ++i) {
            msg << (i ? ", " : "") << indices[i];
        }
        if (indices.size() > kShown) msg << ", ... (" << indices.size() << " in all)";
        msg << "]) failed: " << what;
        std::throw_with_nested(DataLoaderError(msg.str(), worker, batch, indices));
    }
}

}  // namespace

struct BatchEngine::State {
    struct Job {
        uint64_t epoch;
        std::size_t seq;
        std::vector<std::size_t> indices;
    };
    struct Result {
        std::shared_ptr<void> batch;
        std::exception_ptr error;
        std::size_t worker = 0;
        std::vector<std::size_t> indices;
    };

    State(std::size_t workers, std::size_t max_jobs, Fetch fetch)
        : workers(workers), max_jobs(max_jobs), fetch(std::move(fetch)) {}

    void worker_loop(std::size_t worker);
    // Queues jobs (with workers) until max_jobs are in flight or the epoch has no more.
    void refill();

    const std::size_t workers;
    const std::size_t max_jobs;
    const Fetch fetch;

    // iterating thread only
    NextIndices next_indices;
    bool sampler_done = true;
    std::size_t next_seq = 0;     // the sequence number of the next batch queued or made
    std::size_t expected_seq = 0;  // the sequence number of the next batch handed out

    // shared, under mutex
    std::mutex mutex;
    std::condition_variable job_ready;
    std::condition_variable result_ready;
    bool stop = false;
    uint64_t epoch = 0;
    std::deque<Job> jobs;
    std::map<std::size_t, Result> results;  // this epoch's finished batches by sequence
    std::size_t in_flight = 0;                // this epoch's batches queued or being made

    std::vector<std::thread> threads;
};

void BatchEngine::State::worker_loop(std::size_t worker) {
    for (;;) {
        Job job;
        {
            std::unique_lock<std::mutex> lock(mutex);
            job_ready.wait(lock, [this] { return stop || !jobs.empty(); });
            if (stop) return;
            job = std::move(jobs.front());
            jobs.pop_front();
        }
        Result result;
        result.worker = worker;
        try {
            result.batch = fetch(worker, job.indices);
        } catch (...) {
            result.error = std::current_exception();
        }
        result.indices = std::move(job.indices);
        {
            std::lock_guard<std::mutex> lock(mutex);
            if (job.epoch != epoch) continue;  // an abandoned epoch's batch
            results.emplace(job.seq, std::move(result));
        }
        result_ready.notify_all();
    }
}

void BatchEngine::State::refill() {
    while (!sampler_done) {
        {
            std::lock_guard<std::mutex> lock(mutex);
            if (in_flight >= max_jobs) return;
        }
        std::optional<std::vector<std::size_t>> indices = next_indices();
        if (!indices) {
            sampler_done = true;
            return;
        }
        {
            std::lock_guard<std::mutex> lock(mutex);
            jobs.push_back(Job{epoch, next_seq++, std::move(*indices)});
            ++in_flight;
        }
        job_ready.notify_one();
    }
}

BatchEngine::BatchEngine(std::size_t workers, std::size_t max_jobs, Fetch fetch)
    : state_(std::make_unique<State>(workers, max_jobs, std::move(fetch))) {
    EMBER_CHECK_VALUE(workers == 0 || max_jobs > 0,
                      "DataLoader: max_jobs must be positive with workers, got ", max_jobs);
    state_->threads.reserve(workers);
    try {
        for (std::size_t w = 0; w < workers; ++w) {
            state_->threads.emplace_back([state = state_.get(), w] { state->worker_loop(w); });
        }
    } catch (...) {
        {
            std::lock_guard<std::mutex> lock(state_->mutex);
            state_->stop = true;
        }
        state_->job_ready.notify_all();
        for (std::thread& t : state_->threads) t.join();
        throw;
    }
}

BatchEngine::~BatchEngine() {
    {
        std::lock_guard<std::mutex> lock(state_->mutex);
        state_->stop = true;
        state_->jobs.clear();
    }
    state_->job_ready.notify_all();
    for (std::thread& t : state_->threads) t.join();
}

void BatchEngine::start_epoch(NextIndices next_indices) {
    State& s = *state_;
    {
        std::lock_guard<std::mutex> lock(s.mutex);
        ++s.epoch;
        s.jobs.clear();
        s.results.clear();
        s.in_flight = 0;
    }
    s.next_indices = std::move(next_indices);
    s.sampler_done = false;
    s.next_seq = 0;
    s.expected_seq = 0;
}

std::shared_ptr<void> BatchEngine::next() {
    State& s = *state_;
    if (s.workers == 0) {  // made here, now
        if (s.sampler_done) return nullptr;
        std::optional<std::vector<std::size_t>> indices = s.next_indices();
        if (!indices) {
            s.sampler_done = true;
            return nullptr;
        }
        const std::size_t seq = s.expected_seq++;
        try {
            return s.fetch(0, *indices);
        } catch (...) {
            rethrow_batch_error(std::current_exception(), std::nullopt, seq, *indices);
        }
    }
    s.refill();
    State::Result result;
    {
        std::unique_lock<std::mutex> lock(s.mutex);
        if (s.in_flight == 0) return nullptr;  // the epoch is over
        s.result_ready.wait(lock, [&s] { return s.results.count(s.expected_seq) > 0; });
        auto it = s.results.find(s.expected_seq);
        result = std::move(it->second);
        s.results.erase(it);
        --s.in_flight;
    }
    const std::size_t seq = s.expected_seq++;
    s.refill();  // keep the workers busy while this batch is used
    if (result.error) rethrow_batch_error(result.error, result.worker, seq, result.indices);
    return result.batch;
}

// -------------------------------------------------------------------------------- options

std::size_t check_loader_setup(const DataLoaderOptions& options,
                               std::optional<std::size_t> dataset_size, bool explicit_sampler) {
    EMBER_CHECK_VALUE(options.batch_size() > 0,
                      "batch_size should be a positive integer value, but got batch_size=",
                      options.batch_size());
    EMBER_CHECK_VALUE(!(explicit_sampler && options.shuffle()),
                      "sampler option is mutually exclusive with shuffle");
    EMBER_CHECK_VALUE(!options.max_jobs() || *options.max_jobs() > 0 || options.workers() == 0,
                      "DataLoader: max_jobs must be positive");
    EMBER_CHECK(dataset_size.has_value(), "DataLoader needs a dataset with a known size");
    return *dataset_size;
}

std::unique_ptr<samplers::Sampler> default_sampler(const DataLoaderOptions& options,
                                                   std::size_t size) {
    if (options.shuffle()) return std::make_unique<samplers::RandomSampler>(size, options.seed());
    return std::make_unique<samplers::SequentialSampler>(size);
}

}  // namespace detail
}  // namespace data
}  // namespace ember
