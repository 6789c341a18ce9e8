// Runs the program the Python demo exported, in C++, without any C++ model class: `python
// examples/train_digits.py --export DIR` captures the trained CNN with ember.export and
// writes DIR/digits.ember (the graph and its weights in one file), plus DIR/heldout.safetensors
// (the held-out sample indices and Python's predictions). This program loads the program
// with ember::jit::load, classifies the same held-out images and checks that its predictions
// are identical to Python's. Exits non-zero when they are not.
//
//   run_exported DIR [--data FILE]
#include <cstdio>
#include <iostream>
#include <string>

#include "digits.h"

namespace {

int run(const std::string& dir, const std::string& data) {
    ember::jit::Module module = ember::jit::load(dir + "/digits.ember");
    ember::StateDict heldout = ember::load_state_dict(dir + "/heldout.safetensors");
    const ember::Tensor indices = heldout["indices"], python = heldout["predictions"];

    const digits::Digits all = digits::load_digits(data);
    const ember::Tensor images = all.images.index_select(0, indices);
    ember::NoGradGuard no_grad;
    // the program was exported with a dynamic batch: all held-out images in one call
    const ember::Tensor predictions = module.forward({images}).toTensor().argmax(1);
    const int64_t n = predictions.numel();
    const double accuracy = digits::accuracy(predictions, all.labels.index_select(0, indices));
    const int64_t differ = predictions.ne(python).sum().item<int64_t>();
    std::printf("exported program on %lld held-out images: accuracy %.2f%%; predictions %s "
                "Python's\n", static_cast<long long>(n), 100 * accuracy,
                differ == 0 ? "identical to" : "DIFFER from");
    return differ == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) { return digits::main_on_export_dir(argc, argv, "run_exported", run); }
