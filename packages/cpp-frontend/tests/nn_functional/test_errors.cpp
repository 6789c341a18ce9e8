// Error messages of ember::nn::functional for bad input (Python Ember's / PyTorch's text and
// exception class).
#include <gtest/gtest.h>

#include "common/error_of.h"
#include "functional_test_util.h"

namespace {

using namespace ember;
namespace F = ember::nn::functional;
using ember_test::error_of;
using ember::testing::error_as;


TEST(FunctionalErrors, Reduction) {
    EXPECT_EQ(error_as<ValueError>([] { F::mse_loss(zeros({2}), zeros({2}), "bad"); }),
              "bad is not a valid value for reduction");
    EXPECT_EQ(error_as<ValueError>([] { F::CrossEntropyFuncOptions().reduction("avg"); }),
              "avg is not a valid value for reduction");
    EXPECT_EQ(nn::reduction_name(kSum), "sum");
    EXPECT_EQ(nn::reduction_from_string("none"), kNone);
}

TEST(FunctionalErrors, Activations) {
    EXPECT_EQ(error_as<ValueError>([] { F::hardtanh(zeros({2}), 1.0, 0.0); }), "min_val cannot be greater than max_val");
    const Tensor leaf = zeros({2}).requires_grad_(true);
    EXPECT_EQ(error_of([&] { F::leaky_relu(leaf, 0.1, true); }),
              "a leaf Variable that requires grad is being used in an in-place operation.");
}

TEST(FunctionalErrors, Dropout) {
    EXPECT_EQ(error_as<ValueError>([] { F::dropout(zeros({2}), 1.5); }),
              "dropout probability has to be between 0 and 1, but got 1.5");
    EXPECT_EQ(error_as<ValueError>([] { F::dropout(zeros({2}), F::DropoutFuncOptions(-0.1)); }),
              "dropout probability has to be between 0 and 1, but got -0.1");
    EXPECT_EQ(error_of([] { F::dropout(zeros({2}, kLong), 0.5); }),
              "result type Float can't be cast to the desired output type Long");
}

TEST(FunctionalErrors, Embedding) {
    const Tensor w = zeros({5, 3});
    EXPECT_EQ(error_of([&] { F::embedding(zeros({2}), w); }),
              "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got "
              "ember.FloatTensor instead (while checking arguments for embedding)");
    EXPECT_EQ(error_as<IndexError>([&] { F::embedding(tensor({0, 5}), w); }), "index out of range in self");
    EXPECT_EQ(error_of([&] { F::embedding(tensor({0}), w, 5); }), "Padding_idx must be within num_embeddings");
    EXPECT_EQ(error_of([&] { F::embedding(tensor({0}), w, -6); }), "Padding_idx must be within num_embeddings");
}

TEST(FunctionalErrors, Normalization) {
    EXPECT_EQ(error_as<ValueError>([] { F::batch_norm(zeros({1, 3}), {}, {}, {}, {}, true); }),
              "Expected more than 1 value per channel when training, got input size torch.Size([1, 3])");
    EXPECT_EQ(error_of([] { F::batch_norm(zeros({2, 3}), zeros({4}), ones({3})); }),
              "running_mean should contain 3 elements not 4");
    EXPECT_EQ(error_of([] { F::batch_norm(zeros({2, 3}), {}, ones({3})); }),
              "running_mean must be defined in evaluation mode");
    EXPECT_EQ(error_of([] { F::batch_norm(zeros({2, 3}), zeros({3}), ones({3}), ones({3}, kDouble)); }),
              "mixed dtype (CPU): expect parameter to have scalar type of Float");
    EXPECT_EQ(error_of([] { F::batch_norm(zeros({2, 3}, kLong), zeros({3}), ones({3})); }),
              "\"batch_norm\" not implemented for 'Long'");
    EXPECT_EQ(error_of([] { F::layer_norm(zeros({2, 3}), {4}); }),
              "Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[2, 3]");
    EXPECT_EQ(error_of([] { F::layer_norm(zeros({2, 3}), {3}, ones({4})); }),
              "Expected weight to be of same shape as normalized_shape, but got weight of shape [4] and "
              "normalized_shape = [3]");
    EXPECT_EQ(error_of([] { F::layer_norm(zeros({2, 3}), std::vector<int64_t>{}); }),
              "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but "
              "got normalized_shape = []");
    EXPECT_EQ(error_of([] { F::group_norm(zeros({2, 6, 3}), 4); }),
              "Expected number of channels in input to be divisible by num_groups, but got input of shape [2, 6, 3] "
              "and num_groups=4");
}

TEST(FunctionalErrors, Losses) {
    const Tensor x = zeros({2, 3}), t = tensor({0, 1});
    EXPECT_EQ(error_of([&] { F::cross_entropy(x, t, F::CrossEntropyFuncOptions().label_smoothing(1.5)); }),
              "label_smoothing must be between 0.0 and 1.0. Got: 1.5");
    EXPECT_EQ(error_of([&] { F::nll_loss(x, t.to(kFloat)); }), "expected target dtype to be Long or Byte, but got Float");
    EXPECT_EQ(error_as<ValueError>([&] { F::cross_entropy(x, tensor({{0, 1}})); }),
              "Expected input batch_size (2) to match target batch_size (1).");
    EXPECT_EQ(error_of([&] { F::cross_entropy(x, tensor({{0}, {1}})); }),
              "0D or 1D target tensor expected, multi-target not supported");
    EXPECT_EQ(error_of([&] { F::cross_entropy(zeros({2, 3, 4}), tensor({{0, 1}, {1, 1}})); }),
              "Expected target size [2, 4], got [2, 2]");
    EXPECT_EQ(error_as<IndexError>([&] { F::cross_entropy(x, tensor({0, 5})); }), "Target 5 is out of bounds.");
    EXPECT_EQ(error_as<IndexError>([&] { F::nll_loss(x, tensor({-3, 0})); }), "Target -3 is out of bounds.");
    EXPECT_EQ(error_of([&] { F::cross_entropy(x, t, F::CrossEntropyFuncOptions().weight(ones({2}))); }),
              "weight tensor should be defined either for all 3 classes or no classes but got weight tensor of shape: [2]");
    EXPECT_EQ(error_of([&] { F::cross_entropy(x, zeros({2, 3}, kLong)); }),
              "Expected floating point type for target with class probabilities, got Long");
    EXPECT_EQ(error_of([&] { F::cross_entropy(x, zeros({2, 3}), F::CrossEntropyFuncOptions().ignore_index(0)); }),
              "ignore_index is not supported for floating point target");
    EXPECT_EQ(error_of([&] {
                  F::nll_loss(x, t, F::NLLLossFuncOptions().weight(ones({3}).requires_grad_(true)));
              }),
              "The function 'nll_loss_forward' is not differentiable with respect to argument 'weight'. This input "
              "cannot have requires_grad True.");
    EXPECT_EQ(error_of([&] { F::nll_loss(zeros({2, 3}, kLong), t); }), "\"nll_loss_out_frame\" not implemented for 'Long'");
    EXPECT_EQ(error_of([] { F::mse_loss(zeros({2}, kLong), zeros({2}, kLong)); }), "\"mse_cpu\" not implemented for 'Long'");
    EXPECT_EQ(error_of([] { F::smooth_l1_loss(zeros({2}), zeros({2}), F::SmoothL1LossFuncOptions().beta(-1)); }),
              "smooth_l1_loss does not support negative values for beta.");
    EXPECT_EQ(error_of([] { F::huber_loss(zeros({2}), zeros({2}), F::HuberLossFuncOptions().delta(0)); }),
              "huber_loss does not support non-positive values for delta.");
    EXPECT_EQ(error_as<ValueError>([] { F::binary_cross_entropy(zeros({2, 3}), zeros({3})); }),
              "Using a target size (ember.Size([3])) that is different to the input size (ember.Size([2, 3])) is "
              "deprecated. Please ensure they have the same size.");
    EXPECT_EQ(error_of([] { F::binary_cross_entropy(full({2}, 1.5), zeros({2})); }),
              "all elements of input should be between 0 and 1");
    EXPECT_EQ(error_of([] { F::binary_cross_entropy(zeros({2}), full({2}, -1.0)); }),
              "all elements of target should be between 0 and 1");
    EXPECT_EQ(error_of([] { F::binary_cross_entropy(zeros({2}), zeros({2}, kDouble)); }),
              "Found dtype Double but expected Float");
    EXPECT_EQ(error_as<ValueError>([] { F::binary_cross_entropy_with_logits(zeros({2, 3}), zeros({3})); }),
              "Target size (ember.Size([3])) must be the same as input size (ember.Size([2, 3]))");
    EXPECT_EQ(error_of([] {
                  F::binary_cross_entropy_with_logits(zeros({2, 3}), zeros({2, 3}),
                                                      F::BinaryCrossEntropyWithLogitsFuncOptions().pos_weight(ones({2})));
              }),
              "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1");
}

TEST(FunctionalErrors, Attention) {
    const Tensor q = zeros({2, 3, 4});
    EXPECT_EQ(error_of([&] { F::scaled_dot_product_attention(zeros({4}), q, q); }),
              "Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: 1 key.dim: 3 and "
              "value.dim: 3 instead.");
    EXPECT_EQ(error_of([&] { F::scaled_dot_product_attention(q, q.to(kDouble), q); }),
              "Expected query, key, and value to have the same dtype, but got query.dtype: float key.dtype: double and "
              "value.dtype: float instead.");
    EXPECT_EQ(error_of([&] { F::scaled_dot_product_attention(q, q, q, zeros({3, 3}, kLong)); }),
              "Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: long int "
              "and  query.dtype: float instead.");
    EXPECT_EQ(error_of([&] { F::scaled_dot_product_attention(q, q, q, ones({3, 3}, kBool), 0.0, true); }),
              "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True");
    EXPECT_EQ(error_of([&] { F::scaled_dot_product_attention(q, zeros({2, 3, 5}), q); }),
              "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 5].");
    EXPECT_EQ(error_of([&] { F::scaled_dot_product_attention(q, q, q, {}, 1.5); }),
              "dropout probability has to be between 0 and 1, but got 1.5");
}

}  // namespace
