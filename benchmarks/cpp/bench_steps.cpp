// Training steps in C++ (libember), for benchmarks/bench_cpp.py: the MLP 784-512-256-10 and
// LeNet-5, batch 64, cross-entropy, SGD(lr 0.01, momentum 0.9). One step is zero_grad,
// forward, loss, backward, step, as Python's benchmarks/bench_nn.py times it.
//
//   bench_steps [--threads N] [--data DIR] [--number K] [--repeat R] [--only mlp|lenet]
//               [--phases]
//
// Prints one JSON line per workload: {"workload": "mlp", "threads": 1, "loss0": 2.31,
// "step_s": 0.00123, ...}. step_s is seconds per step, the best of R rounds of K steps after
// K/10 warm-up steps (benchmarks/harness.py's best_time). loss0 is the loss of the first step,
// on the initial weights: with --data DIR the weights are DIR/mlp.safetensors and
// DIR/lenet.safetensors (Python state_dict names: "0.weight", ...) and the batches are the
// tensors mlp.x, mlp.y, lenet.x, lenet.y of DIR/data.safetensors, so that Python can check that
// C++ computes the loss it computes; without it, default initialisation and random batches.
//
// --phases adds "phases": seconds per step of zero_grad, forward (per layer and in all), loss,
// backward (per layer, from gradient hooks on each layer's output, and in all) and step, the
// best of R rounds each: where the time of a step goes.
#include <ember/checkpoint.h>
#include <ember/ember.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iomanip>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace nn = ember::nn;
namespace F = ember::nn::functional;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Args {
    int threads = 1;
    std::string data_dir;
    int number = 0;  // 0: the workload's own
    int repeat = 7;
    std::string only;
    bool phases = false;
};

Args parse_args(int argc, char** argv) {
    Args args;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw std::runtime_error(arg + " needs a value");
            return argv[++i];
        };
        if (arg == "--threads") args.threads = std::stoi(value());
        else if (arg == "--data") args.data_dir = value();
        else if (arg == "--number") args.number = std::stoi(value());
        else if (arg == "--repeat") args.repeat = std::stoi(value());
        else if (arg == "--only") args.only = value();
        else if (arg == "--phases") args.phases = true;
        else throw std::runtime_error("unknown argument " + arg);
    }
    if (args.threads < 1 || args.repeat < 1 || args.number < 0)
        throw std::runtime_error("--threads and --repeat must be >= 1, --number >= 0");
    return args;
}

nn::Sequential mlp() {
    return nn::Sequential(nn::Linear(784, 512), nn::ReLU(), nn::Linear(512, 256), nn::ReLU(),
                          nn::Linear(256, 10));
}

nn::Sequential lenet() {
    return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 6, 5).padding(2)), nn::ReLU(), nn::MaxPool2d(2),
                          nn::Conv2d(6, 16, 5), nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(),
                          nn::Linear(16 * 5 * 5, 120), nn::ReLU(), nn::Linear(120, 84), nn::ReLU(),
                          nn::Linear(84, 10));
}

struct Workload {
    std::string name;
    nn::Sequential model;
    std::vector<int64_t> input_shape;
    int number;  // steps per round by default (bench_nn.py's)
};

// The workload's batch: DIR/data.safetensors' <name>.x and <name>.y, or random.
std::pair<ember::Tensor, ember::Tensor> batch(const Workload& w, const ember::StateDict* data) {
    if (data != nullptr) {
        return {(*data)[w.name + ".x"].contiguous(), (*data)[w.name + ".y"].to(ember::kLong)};
    }
    return {ember::randn(w.input_shape), ember::randint(0, 10, {w.input_shape[0]})};
}

// The phase timings of one step, seconds.
struct Phases {
    double zero_grad = 0, forward = 0, loss = 0, backward = 0, step = 0;
    std::vector<double> layers_forward, layers_backward;

    // op(mine, theirs) on every timing, `o` holding the same model's timings
    template <typename Op>
    void combine(const Phases& o, Op op) {
        op(zero_grad, o.zero_grad);
        op(forward, o.forward);
        op(loss, o.loss);
        op(backward, o.backward);
        op(step, o.step);
        for (size_t i = 0; i < layers_forward.size(); ++i) {
            op(layers_forward[i], o.layers_forward[i]);
            op(layers_backward[i], o.layers_backward[i]);
        }
    }
    void min_with(const Phases& o) {
        combine(o, [](double& mine, double theirs) { mine = std::min(mine, theirs); });
    }
    void add(const Phases& o) {
        combine(o, [](double& mine, double theirs) { mine += theirs; });
    }
    void scale(double f) {
        combine(*this, [f](double& mine, double) { mine *= f; });
    }
};

// One step, layer by layer, timing each phase. The backward of layer i is the time between
// the gradient hook of its output firing and the hook of its input's (the previous layer's
// output) firing; layer 0's ends with backward() itself.
Phases timed_step(nn::Sequential& model, ember::optim::SGD& opt, const ember::Tensor& x,
                  const ember::Tensor& y) {
    const size_t n = model->size();
    Phases p;
    p.layers_forward.assign(n, 0.0);
    p.layers_backward.assign(n, 0.0);
    std::vector<Clock::time_point> grad_ready(n);

    auto t0 = Clock::now();
    opt.zero_grad();
    p.zero_grad = seconds_since(t0);

    t0 = Clock::now();
    ember::Tensor h = x;
    size_t i = 0;
    for (const auto& layer : *model) {
        auto tl = Clock::now();
        h = layer.forward(h);
        p.layers_forward[i] = seconds_since(tl);
        h.register_hook([&grad_ready, i](const ember::Tensor&) { grad_ready[i] = Clock::now(); });
        ++i;
    }
    p.forward = seconds_since(t0);

    t0 = Clock::now();
    ember::Tensor loss = F::cross_entropy(h, y);
    p.loss = seconds_since(t0);

    t0 = Clock::now();
    loss.backward();
    auto t_end = Clock::now();
    p.backward = std::chrono::duration<double>(t_end - t0).count();
    for (size_t k = 0; k < n; ++k) {
        auto stop = k == 0 ? t_end : grad_ready[k - 1];
        p.layers_backward[k] = std::chrono::duration<double>(stop - grad_ready[k]).count();
    }

    t0 = Clock::now();
    opt.step();
    p.step = seconds_since(t0);
    return p;
}

std::string json_list(const std::vector<double>& values) {
    std::ostringstream out;
    out << std::setprecision(6) << "[";
    for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
    out << "]";
    return out.str();
}

void run(Workload& w, const Args& args, const ember::StateDict* data) {
    if (!args.data_dir.empty()) ember::load(w.model, args.data_dir + "/" + w.name + ".safetensors");
    auto [x, y] = batch(w, data);
    ember::optim::SGD opt(w.model->parameters(), ember::optim::SGDOptions(0.01).momentum(0.9));
    auto step = [&]() -> ember::Tensor {
        opt.zero_grad();
        ember::Tensor loss = F::cross_entropy(w.model(x), y);
        loss.backward();
        opt.step();
        return loss;
    };
    const double loss0 = step().item<double>();

    const int number = args.number > 0 ? args.number : w.number;
    for (int i = 0; i < std::max(1, number / 10); ++i) step();
    double best = std::numeric_limits<double>::infinity();
    for (int r = 0; r < args.repeat; ++r) {
        auto t0 = Clock::now();
        for (int i = 0; i < number; ++i) step();
        best = std::min(best, seconds_since(t0) / number);
    }

    std::ostringstream out;
    out << std::setprecision(9) << "{\"workload\": \"" << w.name << "\", \"threads\": " << args.threads
        << ", \"loss0\": " << loss0 << ", \"step_s\": " << best << ", \"number\": " << number
        << ", \"repeat\": " << args.repeat;
    if (args.phases) {
        Phases best_phases;
        for (int r = 0; r < args.repeat; ++r) {
            Phases round = timed_step(w.model, opt, x, y);
            for (int i = 1; i < number; ++i) round.add(timed_step(w.model, opt, x, y));
            round.scale(1.0 / number);
            if (r == 0) best_phases = round;
            else best_phases.min_with(round);
        }
        const Phases& p = best_phases;
        out << std::setprecision(6) << ", \"phases\": {\"zero_grad\": " << p.zero_grad
            << ", \"forward\": " << p.forward << ", \"loss\": " << p.loss << ", \"backward\": " << p.backward
            << ", \"step\": " << p.step << ", \"layers\": [";
        size_t i = 0;
        for (const auto& layer : *w.model) {
            out << (i ? ", " : "") << "\"" << i << " " << layer.ptr()->name() << "\"";
            ++i;
        }
        out << "], \"layers_forward\": " << json_list(p.layers_forward)
            << ", \"layers_backward\": " << json_list(p.layers_backward) << "}";
    }
    out << "}";
    std::cout << out.str() << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const Args args = parse_args(argc, argv);
        ember::set_num_threads(args.threads);
        ember::manual_seed(0);
        ember::StateDict data;
        if (!args.data_dir.empty()) data = ember::load_state_dict(args.data_dir + "/data.safetensors");
        std::vector<Workload> workloads;
        workloads.push_back({"mlp", mlp(), {64, 784}, 50});
        workloads.push_back({"lenet", lenet(), {64, 1, 28, 28}, 20});
        for (Workload& w : workloads) {
            if (!args.only.empty() && args.only != w.name) continue;
            run(w, args, args.data_dir.empty() ? nullptr : &data);
        }
    } catch (const std::exception& e) {
        std::cerr << "bench_steps: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
