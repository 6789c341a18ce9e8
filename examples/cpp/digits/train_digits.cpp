// examples/train_digits.py in C++: train the small CNN on the embedded 8x8 handwritten digits
// (UCI optdigits, 1,797 images; examples/data/digits.csv.gz, read with ember::io's gzip
// reader), 80% train / 20% held out, with SGD (momentum 0.9, weight decay 1e-4) and a cosine
// schedule. One line per epoch with the loss and the held-out accuracy; then the model is
// saved as safetensors (Python loads it with ember.safetensors.load_file), reloaded into a
// fresh model and its predictions checked. Exits non-zero below 97% held-out accuracy.
//
//   train_digits [--epochs 12] [--batch-size 32] [--lr 0.05] [--seed 0] [--data FILE]
//                [--save FILE.safetensors]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "digits.h"

namespace {

struct Args {
    int64_t epochs = 12;
    int64_t batch_size = 32;
    double lr = 0.05;
    uint64_t seed = 0;
    std::string data = DIGITS_DATA;
    std::string save;
};

Args parse(int argc, char** argv) {
    Args args;
    for (int i = 1; i < argc; ++i) {
        const std::string flag = argv[i];
        EMBER_CHECK(i + 1 < argc, "usage: train_digits [--epochs N] [--batch-size N] [--lr X] [--seed N] "
                                  "[--data FILE] [--save FILE.safetensors]; ", flag, " needs a value");
        const std::string value = argv[++i];
        if (flag == "--epochs") {
            args.epochs = std::stoll(value);
        } else if (flag == "--batch-size") {
            args.batch_size = std::stoll(value);
        } else if (flag == "--lr") {
            args.lr = std::stod(value);
        } else if (flag == "--seed") {
            args.seed = std::stoull(value);
        } else if (flag == "--data") {
            args.data = value;
        } else if (flag == "--save") {
            args.save = value;
        } else {
            EMBER_ERROR("unknown option ", flag);
        }
    }
    return args;
}

int run(const Args& args) {
    ember::manual_seed(args.seed);
    const digits::Digits all = digits::load_digits(args.data);
    namespace data = ember::data;
    const auto split = data::datasets::random_split(static_cast<std::size_t>(all.labels.size(0)), {0.8, 0.2},
                                                    /*seed=*/0);
    auto index_tensor = [](const std::vector<std::size_t>& indices) {
        return ember::tensor(std::vector<int64_t>(indices.begin(), indices.end()));
    };
    const ember::Tensor train_idx = index_tensor(split[0]), test_idx = index_tensor(split[1]);
    const ember::Tensor test_images = all.images.index_select(0, test_idx);
    const ember::Tensor test_labels = all.labels.index_select(0, test_idx);
    data::datasets::TensorDataset train_set(all.images.index_select(0, train_idx),
                                            all.labels.index_select(0, train_idx));
    const auto train_size = static_cast<double>(split[0].size());
    auto loader = data::make_data_loader(
        train_set, data::DataLoaderOptions().batch_size(static_cast<std::size_t>(args.batch_size))
                       .shuffle(true).seed(args.seed));

    digits::DigitsCNN model;
    ember::optim::SGD optimizer(model->parameters(),
                                ember::optim::SGDOptions(args.lr).momentum(0.9).weight_decay(1e-4));
    ember::optim::CosineAnnealingLR scheduler(optimizer, args.epochs);

    const auto start = std::chrono::steady_clock::now();
    for (int64_t epoch = 1; epoch <= args.epochs; ++epoch) {
        model->train();
        double total = 0;
        for (data::Example<>& batch : *loader) {
            optimizer.zero_grad();
            ember::Tensor loss = ember::nn::functional::cross_entropy(model->forward(batch.data), batch.target);
            loss.backward();
            optimizer.step();
            total += loss.item<double>() * static_cast<double>(batch.target.size(0));
        }
        scheduler.step();
        const double accuracy = digits::accuracy(digits::predict(model, test_images), test_labels);
        std::printf("epoch %2lld  loss %.4f  held-out accuracy %.2f%%\n", static_cast<long long>(epoch),
                    total / train_size, 100 * accuracy);
        std::fflush(stdout);
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const ember::Tensor predictions = digits::predict(model, test_images);
    const double accuracy = digits::accuracy(predictions, test_labels);
    std::printf("trained in %.1f s; held-out accuracy %.2f%%\n", elapsed, 100 * accuracy);

    // Save (to --save, else into a temporary folder), reload into a fresh model, and check
    // that the predictions survive.
    namespace fs = std::filesystem;
    std::string tmp_dir;
    if (args.save.empty()) {
        std::string pattern = (fs::temp_directory_path() / "digits.XXXXXX").string();
        EMBER_CHECK(::mkdtemp(pattern.data()) != nullptr, "cannot create a temporary folder");
        tmp_dir = pattern;
    }
    const fs::path path = tmp_dir.empty() ? fs::path(args.save) : fs::path(tmp_dir) / "digits_cnn.safetensors";
    ember::save(model, path.string());
    digits::DigitsCNN restored;
    ember::load(restored, path.string());
    const bool same = digits::predict(restored, test_images).equal(predictions);
    std::printf("saved to %s (%lld KiB) and reloaded: predictions %s\n", path.filename().c_str(),
                static_cast<long long>(fs::file_size(path) / 1024), same ? "identical" : "DIFFER");
    if (!tmp_dir.empty()) fs::remove_all(tmp_dir);
    if (!same) return 1;
    return accuracy >= 0.97 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(parse(argc, argv));
    } catch (const std::exception& e) {
        std::cerr << "train_digits: " << e.what() << "\n";
        return 2;
    }
}
