// The op table's resampling, transposed / 3-D convolution, 3-D pooling and einsum entries
// (src/jit/ops_nn_extra.cpp) called directly: properties that hold whatever Python computes
// (a transposed convolution is the adjoint of the convolution, max_pool3d's indices point
// at its maxima, einsum agrees with matmul) and the errors of bad arguments. Python's values
// are checked by the golden programs (test_programs.cpp: ops_nn_resampling, decoder_*,
// video_export).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ember/ember.h"
#include "op_call.h"

namespace {

using namespace jit_ops;  // Tensor, Value, Kwargs, op_table, ints, call, error_of

double inner(const Tensor& a, const Tensor& b) { return (a.to(ember::kDouble) * b.to(ember::kDouble)).sum().item<double>(); }

// <conv(y), x> == <y, conv_transpose(x)> for the same stride, padding, dilation and groups.
TEST(ResamplingOps, TransposedConvolutionIsTheAdjoint) {
    ember::manual_seed(0);
    struct Case {
        const char* conv;
        const char* transposed;
        std::vector<int64_t> y_shape, w_shape;
        std::vector<int64_t> stride, padding, dilation;
        int64_t groups;
    };
    const std::vector<Case> cases = {
        {"conv2d", "conv_transpose2d", {2, 4, 9, 8}, {6, 2, 3, 2}, {2, 1}, {1, 0}, {1, 2}, 2},
        {"conv1d", "conv_transpose1d", {2, 3, 11}, {4, 3, 3}, {3}, {1}, {2}, 1},
        {"conv3d", "conv_transpose3d", {1, 2, 7, 6, 5}, {3, 2, 3, 2, 3}, {2, 1, 2}, {1, 1, 0}, {1, 2, 1}, 1},
    };
    for (const Case& c : cases) {
        Tensor y = ember::randn(c.y_shape, ember::kDouble);
        Tensor w = ember::randn(c.w_shape, ember::kDouble);
        Tensor cy = call(c.conv, {Value::of(y), Value::of(w), Value::none(), ints(c.stride), ints(c.padding),
                                  ints(c.dilation), Value::integer(c.groups)})
                        .at(0);
        Tensor x = ember::randn(cy.sizes(), ember::kDouble);
        // output_padding recovers the input size that the strided convolution rounded away
        std::vector<int64_t> output_padding;
        for (std::size_t i = 0; i < c.stride.size(); ++i) {
            const int64_t n = y.size(static_cast<int64_t>(i) + 2), k = w.size(static_cast<int64_t>(i) + 2);
            const int64_t span = (cy.size(static_cast<int64_t>(i) + 2) - 1) * c.stride[i] - 2 * c.padding[i] +
                                 c.dilation[i] * (k - 1) + 1;
            output_padding.push_back(n - span);
        }
        Tensor tx = call(c.transposed, {Value::of(x), Value::of(w), Value::none(), ints(c.stride), ints(c.padding),
                                        ints(output_padding), Value::integer(c.groups), ints(c.dilation)})
                        .at(0);
        ASSERT_EQ(tx.sizes(), y.sizes()) << c.transposed;
        EXPECT_NEAR(inner(cy, x), inner(y, tx), 1e-9 * (1 + std::abs(inner(cy, x)))) << c.transposed;
    }
}

TEST(ResamplingOps, MaxPool3dIndicesPointAtTheMaxima) {
    ember::manual_seed(1);
    Tensor x = ember::randn({2, 3, 5, 6, 7});
    auto r = call("max_pool3d", {Value::of(x), Value::integer(3), Value::integer(2), Value::integer(1)},
                  {{"return_indices", Value::boolean(true)}});
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].sizes(), (std::vector<int64_t>{2, 3, 3, 3, 4}));
    Tensor picked = x.flatten(2).gather(2, r[1].flatten(2)).view(r[0].sizes());
    EXPECT_TRUE(ember::equal(picked, r[0]));
}

TEST(ResamplingOps, EinsumAgreesWithMatmul) {
    ember::manual_seed(2);
    Tensor a = ember::randn({3, 4, 5}), b = ember::randn({3, 5, 2});
    EXPECT_TRUE(ember::allclose(call("einsum", {Value::string("bij,bjk->bik"), Value::of(a), Value::of(b)}).at(0),
                                ember::bmm(a, b), 1e-5, 1e-6));
    // implicit output: the labels that appear once, sorted (b appears twice: it is summed)
    EXPECT_TRUE(ember::allclose(call("einsum", {Value::string("bij,bjk"), Value::of(a), Value::of(b)}).at(0),
                                ember::bmm(a, b).sum({0}), 1e-5, 1e-5));
    // "...": the batch dims broadcast
    Tensor c = ember::randn({5, 2});
    EXPECT_TRUE(ember::allclose(call("einsum", {Value::string("...ij,jk->...ik"), Value::of(a), Value::of(c)}).at(0),
                                ember::matmul(a, c), 1e-5, 1e-6));
}

TEST(ResamplingOps, EinsumErrors) {
    Tensor a = ember::ones({2, 3});
    EXPECT_EQ(error_of("einsum", {Value::string("ij,jk->ik"), Value::of(a)}),
              "einsum(): more operands were provided than specified in the equation");
    EXPECT_EQ(error_of("einsum", {Value::string("ij->iz"), Value::of(a)}),
              "einsum(): output subscript z does not appear in the equation for any input operand");
    EXPECT_EQ(error_of("einsum", {Value::string("ii->i"), Value::of(a)}),
              "einsum(): subscript i is repeated for operand but the sizes don't match, 2 != 3");
}

TEST(ResamplingOps, InterpolateErrors) {
    Tensor x = ember::ones({1, 2, 4, 4});
    EXPECT_EQ(error_of("interpolate", {Value::of(x), Value::integer(3), Value::integer(2)}),
              "only one of size or scale_factor should be defined");
    EXPECT_EQ(error_of("interpolate", {Value::of(x)}), "either size or scale_factor should be defined");
    EXPECT_EQ(error_of("interpolate", {Value::of(x), Value::integer(3)}, {{"align_corners", Value::boolean(true)}}),
              "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | "
              "trilinear");
    EXPECT_EQ(error_of("interpolate", {Value::of(x), Value::integer(3)}, {{"mode", Value::string("linear")}}),
              "Got 4D input, but linear mode needs 3D input");
    EXPECT_EQ(error_of("interpolate", {Value::of(x), ints({3, 3, 3})}),
              "Input and output must have the same number of spatial dimensions, but got input with spatial dimensions "
              "of [4, 4] and output size of [3, 3, 3]. Please provide input tensor in (N, C, d1, d2, ...,dK) format "
              "and output size in (o1, o2, ...,oK) format.");
    EXPECT_EQ(error_of("interpolate", {Value::of(x), Value::integer(3)},
                       {{"mode", Value::string("linear")}, {"antialias", Value::boolean(true)}}),
              "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D tensor as "
              "input");
    EXPECT_EQ(error_of("interpolate", {Value::of(x), Value::integer(3)}, {{"mode", Value::string("lanczos")}}),
              "Lanczos mode requires antialias=True");
    EXPECT_EQ(error_of("interpolate", {Value::of(x), ints({3, 0})}, {{"mode", Value::string("bilinear")}}),
              "Input and output sizes should be greater than 0, but got input (H: 4, W: 4) output (H: 3, W: 0)");
    EXPECT_EQ(error_of("interpolate", {Value::of(x.to(ember::kShort)), Value::integer(3)},
                       {{"mode", Value::string("bilinear")}, {"antialias", Value::boolean(true)}}),
              "\"compute_index_ranges_weights\" not implemented for 'Short'");
    EXPECT_EQ(error_of("interpolate", {Value::of(x), Value::integer(3)}, {{"mode", Value::string("bogus")}}),
              "Input Error: Only 3D, 4D and 5D input Tensors supported (got 4D) for the modes: nearest | linear | "
              "bilinear | bicubic | trilinear | lanczos | area | nearest-exact (got bogus)");
    // nearest upsampling by 2 repeats each pixel
    Tensor y = ember::arange(4.0).view({1, 1, 2, 2});
    Tensor up = call("interpolate", {Value::of(y)}, {{"scale_factor", Value::integer(2)}}).at(0);
    Tensor twice = ember::floor(ember::arange(4.0) / 2).to(ember::kLong);  // 0, 0, 1, 1
    EXPECT_TRUE(ember::equal(up, y.index_select(2, twice).index_select(3, twice)));
}

TEST(ResamplingOps, ConvTransposeErrors) {
    Tensor x = ember::ones({1, 4, 3, 3});
    Tensor w = ember::ones({3, 2, 3, 3});
    EXPECT_EQ(error_of("conv_transpose2d", {Value::of(x), Value::of(w)}),
              "Given transposed=1, weight of size [3, 2, 3, 3], expected input[1, 4, 3, 3] to have 3 channels, but got 4 "
              "channels instead");
    Tensor x3 = ember::ones({1, 3, 3, 3});
    EXPECT_EQ(error_of("conv_transpose2d", {Value::of(x3), Value::of(w)},
                       {{"output_padding", Value::integer(1)}}),
              "output padding must be smaller than either stride or dilation, but got output_padding_height: 1 "
              "output_padding_width: 1 stride_height: 1 stride_width: 1 dilation_height: 1 dilation_width: 1");
}

}  // namespace
