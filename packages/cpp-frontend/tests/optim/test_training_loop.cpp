// ember::optim with ember::data: the loop a C++ user writes (libtorch's spelling), minibatches
// from a shuffling DataLoader with workers, an optimizer and a scheduler.
#include <gtest/gtest.h>

#include <vector>

#include "ember/data.h"
#include "ember/ember.h"
#include "ember/optim.h"

namespace {

using ember::Tensor;

TEST(TrainingLoop, LinearRegressionWithLoaderOptimizerAndScheduler) {
    ember::manual_seed(3);
    const Tensor x = ember::randn({256, 4});
    const Tensor true_w = ember::tensor({{1.5f}, {-2.0f}, {0.25f}, {3.0f}});
    const Tensor y = x.matmul(true_w) - 0.5f;
    auto loader = ember::data::make_data_loader(
        ember::data::datasets::TensorDataset(x, y),
        ember::data::DataLoaderOptions().batch_size(32).shuffle(true).seed(0).workers(2));

    Tensor w = ember::zeros({4, 1}).requires_grad_();
    Tensor b = ember::zeros({1}).requires_grad_();
    ember::optim::Adam opt({w, b}, ember::optim::AdamOptions(0.1));
    ember::optim::StepLR sched(opt, /*step_size=*/10, /*gamma=*/0.5);
    double last = 0;
    for (int epoch = 0; epoch < 40; ++epoch) {
        double total = 0;
        for (auto& batch : *loader) {
            opt.zero_grad();
            Tensor diff = batch.data.matmul(w) + b - batch.target;
            Tensor loss = (diff * diff).mean();
            loss.backward();
            opt.step();
            total += loss.item<double>();
        }
        sched.step();
        last = total / 8;
    }
    EXPECT_LT(last, 1e-3);
    EXPECT_TRUE(w.detach().allclose(true_w, 0.02, 0.02));
    EXPECT_NEAR(b.item<double>(), -0.5, 0.02);
    EXPECT_DOUBLE_EQ(sched.get_last_lr()[0], 0.1 * 0.5 * 0.5 * 0.5 * 0.5);
}

TEST(TrainingLoop, BracedParameterLists) {
    Tensor a = ember::ones({2}).requires_grad_(), c = ember::ones({3}).requires_grad_();
    ember::optim::SGD sgd({a, c}, 0.5);  // SGDOptions from the lr, as libtorch
    a.set_grad(ember::ones({2}));
    sgd.step();
    EXPECT_TRUE(a.detach().equal(ember::full({2}, 0.5)));
    EXPECT_TRUE(c.detach().equal(ember::ones({3})));  // no gradient: untouched
    ember::optim::AdamW adamw({a, c});
    EXPECT_EQ(adamw.size(), 2u);
}

}  // namespace
