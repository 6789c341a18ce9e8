// Runs the model the Python demo trained, in C++: `python examples/train_digits.py --export
// DIR` writes DIR/digits_cnn.safetensors (the state dict) and DIR/heldout.safetensors (the
// held-out sample indices and Python's predictions for them, int64); this program loads the
// weights into the C++ DigitsCNN, predicts the same held-out images, prints its predictions
// and whether they are identical to Python's. Exits non-zero when they are not.
//
//   predict_digits DIR [--data FILE]
#include <cstdio>
#include <iostream>
#include <string>

#include "digits.h"

namespace {

int run(const std::string& dir, const std::string& data) {
    digits::DigitsCNN model;
    ember::load(model, dir + "/digits_cnn.safetensors");
    ember::StateDict heldout = ember::load_state_dict(dir + "/heldout.safetensors");
    const ember::Tensor indices = heldout["indices"], python = heldout["predictions"];

    const digits::Digits all = digits::load_digits(data);
    const ember::Tensor predictions = digits::predict(model, all.images.index_select(0, indices));
    const int64_t n = predictions.numel();
    std::printf("predictions for the %lld held-out images:\n", static_cast<long long>(n));
    const auto* p = predictions.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
        std::printf("%lld%s", static_cast<long long>(p[i]), (i + 1) % 40 == 0 || i + 1 == n ? "\n" : " ");
    }
    const double accuracy = digits::accuracy(predictions, all.labels.index_select(0, indices));
    const int64_t differ = predictions.ne(python).sum().item<int64_t>();
    std::printf("held-out accuracy %.2f%%; predictions %s Python's", 100 * accuracy,
                differ == 0 ? "identical to" : "DIFFER from");
    if (differ != 0) std::printf(" (%lld of %lld)", static_cast<long long>(differ), static_cast<long long>(n));
    std::printf("\n");
    return differ == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) { return digits::main_on_export_dir(argc, argv, "predict_digits", run); }
