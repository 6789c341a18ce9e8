// What the digits programs share: the DigitsCNN of examples/train_digits.py (the same
// layers, so the same state_dict names), the embedded digits file, batched predictions, and
// the command line of the programs that read `train_digits.py --export DIR`.
#pragma once

#include <ember/checkpoint.h>
#include <ember/data.h>
#include <ember/ember.h>
#include <ember/io.h>
#include <ember/nn.h>
#include <ember/optim.h>

#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#ifndef DIGITS_DATA  // CMakeLists.txt sets it to examples/data/digits.csv.gz
#define DIGITS_DATA "digits.csv.gz"
#endif

namespace digits {

namespace nn = ember::nn;

// Python's DigitsCNN: features.0 ... features.11, classifier.0 (Dropout), classifier.1.
struct DigitsCNNImpl : nn::Module {
    DigitsCNNImpl() {
        features = register_module(
            "features",
            nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 16, 3).padding(1)), nn::BatchNorm2d(16), nn::ReLU(),
                           nn::Conv2d(nn::Conv2dOptions(16, 32, 3).padding(1)), nn::BatchNorm2d(32), nn::ReLU(),
                           nn::MaxPool2d(2),  // 32 x 4 x 4
                           nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)), nn::BatchNorm2d(64), nn::ReLU(),
                           nn::AdaptiveAvgPool2d(1), nn::Flatten()));
        classifier = register_module("classifier", nn::Sequential(nn::Dropout(0.2), nn::Linear(64, 10)));
    }

    ember::Tensor forward(const ember::Tensor& x) { return classifier->forward(features->forward(x)); }

    nn::Sequential features{nullptr}, classifier{nullptr};
};
EMBER_MODULE(DigitsCNN);

// The UCI optdigits images, as float32 (N, 1, 8, 8) scaled to [0, 1], and int64 labels (N).
struct Digits {
    ember::Tensor images;
    ember::Tensor labels;
};

// Reads the gzip'ed CSV (64 pixel values 0..16, then the label, per line).
inline Digits load_digits(const std::string& path) {
    const std::vector<std::byte> bytes = ember::io::read_gzip(path);
    const std::string text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    std::vector<float> pixels;
    std::vector<int64_t> labels;
    const char* p = text.c_str();
    while (*p != '\0') {
        for (int column = 0; column < 65; ++column) {
            char* end = nullptr;
            const long value = std::strtol(p, &end, 10);
            EMBER_CHECK(end != p && (*end == (column < 64 ? ',' : '\n') || (column == 64 && *end == '\0')),
                        path, ": line ", labels.size() + 1, " is not 65 comma-separated integers");
            if (column < 64) {
                pixels.push_back(static_cast<float>(value) / 16.0f);
            } else {
                labels.push_back(value);
            }
            p = *end == '\0' ? end : end + 1;
        }
    }
    const auto n = static_cast<int64_t>(labels.size());
    return {ember::tensor(pixels).reshape({n, 1, 8, 8}), ember::tensor(labels)};
}

// The model's class for each image (eval mode, no autograd), in batches of 256 as the Python
// demo evaluates.
inline ember::Tensor predict(DigitsCNN& model, const ember::Tensor& images) {
    model->eval();
    ember::NoGradGuard no_grad;
    std::vector<ember::Tensor> parts;
    for (int64_t start = 0; start < images.size(0); start += 256) {
        parts.push_back(model->forward(images.slice(0, start, start + 256)).argmax(1));
    }
    return ember::cat(parts);
}

// The fraction of predictions equal to the labels.
inline double accuracy(const ember::Tensor& predictions, const ember::Tensor& labels) {
    return predictions.eq(labels).sum().item<double>() / static_cast<double>(labels.numel());
}

// `program DIR [--data FILE]` (DIR written by `python examples/train_digits.py --export DIR`):
// calls run(dir, data) and returns its exit code; 2 with a usage line or the error's message.
template <typename Run>
int main_on_export_dir(int argc, char** argv, const char* program, Run run) {
    std::string dir, data = DIGITS_DATA;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--data" && i + 1 < argc) {
            data = argv[++i];
        } else if (dir.empty() && arg.rfind("--", 0) != 0) {
            dir = arg;
        } else {
            dir.clear();
            break;
        }
    }
    if (dir.empty()) {
        std::cerr << "usage: " << program
                  << " DIR [--data FILE]   (DIR: python examples/train_digits.py --export DIR)\n";
        return 2;
    }
    try {
        return run(dir, data);
    } catch (const std::exception& e) {
        std::cerr << program << ": " << e.what() << "\n";
        return 2;
    }
}

}  // namespace digits
