// Printing: ember::repr against Python Ember's repr (expected strings produced by Python
// Ember for the same tensors) and operator<< in libtorch's layout.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <sstream>
#include <string>

#include "ember/autograd.h"
#include "ember/tensor.h"

namespace {

using namespace ember;

struct ReprCase {
    std::function<Tensor()> make;
    const char* expected;
};

const ReprCase kReprCases[] = {
    {[] { return tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}); },
     "tensor([[1., 2., 3.],\n        [4., 5., 6.]])"},
    {[] { return tensor({{1.5, -2.25}, {3.125, 4.0}}); },
     "tensor([[ 1.5000, -2.2500],\n        [ 3.1250,  4.0000]])"},
    {[] { return tensor({1, -20, 300}); },
     "tensor([  1, -20, 300])"},
    {[] { return tensor({1, 2, 3}, kInt); },
     "tensor([1, 2, 3], dtype=ember.int32)"},
    {[] { return tensor({true, false}); },
     "tensor([ True, False])"},
    {[] { return tensor({1e-5, 1.0, 1e5}); },
     "tensor([1.0000e-05, 1.0000e+00, 1.0000e+05])"},
    {[] { return tensor({123456789.0, 1.0}); },
     "tensor([1.2346e+08, 1.0000e+00])"},
    {[] { return zeros({0, 3}); },
     "tensor([], size=(0, 3))"},
    {[] { return zeros({0}); },
     "tensor([])"},
    {[] { return zeros({0}, kLong); },
     "tensor([], dtype=ember.int64)"},
    {[] { return tensor(3.5); },
     "tensor(3.5000)"},
    {[] { return tensor(7); },
     "tensor(7)"},
    {[] { return arange(2000.0); },
     "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n        1.9990e+03])"},
    {[] { return arange(1001, kLong); },
     "tensor([   0,    1,    2,  ...,  998,  999, 1000])"},
    {[] { return tensor({NAN, INFINITY, -1.0}); },
     "tensor([nan, inf, -1.])"},
    {[] { return tensor({NAN, -INFINITY}); },
     "tensor([nan, -inf])"},
    {[] { return tensor({1.0, 2.0}, kHalf); },
     "tensor([1., 2.], dtype=ember.float16)"},
    {[] { return ones({2}, kDouble); },
     "tensor([1., 1.], dtype=ember.float64)"},
    {[] { return arange(24.0).reshape({2, 3, 4}); },
     "tensor([[[ 0.,  1.,  2.,  3.],\n         [ 4.,  5.,  6.,  7.],\n         [ 8.,  9., 10., 11.]],\n\n        [[12., 13., 14., 15.],\n         [16., 17., 18., 19.],\n         [20., 21., 22., 23.]]])"},
    {[] { return arange(30.0).reshape({1, 30}) / 7; },
     "tensor([[0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000, 1.1429,\n         1.2857, 1.4286, 1.5714, 1.7143, 1.8571, 2.0000, 2.1429, 2.2857, 2.4286,\n         2.5714, 2.7143, 2.8571, 3.0000, 3.1429, 3.2857, 3.4286, 3.5714, 3.7143,\n         3.8571, 4.0000, 4.1429]])"},
    {[] { return arange(2, 60, 3, kDouble).reshape({4, 5}) * 1.5; },
     "tensor([[ 3.0000,  7.5000, 12.0000, 16.5000, 21.0000],\n        [25.5000, 30.0000, 34.5000, 39.0000, 43.5000],\n        [48.0000, 52.5000, 57.0000, 61.5000, 66.0000],\n        [70.5000, 75.0000, 79.5000, 84.0000, 88.5000]], dtype=ember.float64)"},
    {[] { return ones({2, 2}, TensorOptions().requires_grad(true)); },
     "tensor([[1., 1.],\n        [1., 1.]], requires_grad=True)"},
    {[] { return ones({2}, TensorOptions().requires_grad(true)) * 2; },
     "tensor([2., 2.], grad_fn=<MulBackward0>)"},
    {[] { return arange(40.0).reshape({10, 4}) - 20; },
     "tensor([[-20., -19., -18., -17.],\n        [-16., -15., -14., -13.],\n        [-12., -11., -10.,  -9.],\n        [ -8.,  -7.,  -6.,  -5.],\n        [ -4.,  -3.,  -2.,  -1.],\n        [  0.,   1.,   2.,   3.],\n        [  4.,   5.,   6.,   7.],\n        [  8.,   9.,  10.,  11.],\n        [ 12.,  13.,  14.,  15.],\n        [ 16.,  17.,  18.,  19.]])"},
    {[] { return tensor({0.0, -0.0, 0.5}); },
     "tensor([0.0000, -0.0000, 0.5000])"},
    {[] { return zeros({3}); },
     "tensor([0., 0., 0.])"},
    {[] { return arange(8.0).reshape({2, 2, 2}).permute({2, 0, 1}); },
     "tensor([[[0., 2.],\n         [4., 6.]],\n\n        [[1., 3.],\n         [5., 7.]]])"},
    {[] { return tensor({1e10, -3e-3}); },
     "tensor([ 1.0000e+10, -3.0000e-03])"},
};

TEST(Repr, MatchesPythonEmber) {
    for (const ReprCase& c : kReprCases) {
        EXPECT_EQ(repr(c.make()), c.expected);
    }
}

TEST(Repr, PrintOptions) {
    PrintOptions saved = get_printoptions();
    PrintOptions o = saved;
    o.precision = 2;
    set_printoptions(o);
    EXPECT_EQ(repr(tensor({1.0 / 3, 2.5})), "tensor([0.33, 2.50])");
    o.sci_mode = true;
    set_printoptions(o);
    EXPECT_EQ(repr(tensor({1.5})), "tensor([1.50e+00])");
    set_printoptions(saved);
    EXPECT_EQ(repr(Tensor()), "None");
}

std::string printed(const Tensor& t) {
    std::ostringstream os;
    os << t;
    return os.str();
}

TEST(Print, LibtorchLayout) {
    EXPECT_EQ(printed(ones({2, 3})), " 1  1  1\n 1  1  1\n[ CPUFloatType{2,3} ]");
    EXPECT_EQ(printed(tensor({1.5, 2.25})), " 1.5000\n 2.2500\n[ CPUFloatType{2} ]");
    EXPECT_EQ(printed(tensor(3.5)), "3.5\n[ CPUFloatType{} ]");
    EXPECT_EQ(printed(tensor({1, 2, 3})), " 1\n 2\n 3\n[ CPULongType{3} ]");
    EXPECT_EQ(printed(arange(8, kDouble).view({2, 2, 2})),
              "(1,.,.) = \n  0  1\n  2  3\n\n(2,.,.) = \n  4  5\n  6  7\n[ CPUDoubleType{2,2,2} ]");
    EXPECT_EQ(printed(tensor({1000.5, 2.0})), " 1000.5000\n    2.0000\n[ CPUFloatType{2} ]");
    EXPECT_EQ(printed(tensor({123456.7, 1.5})), " 1.2346e+05\n 1.5000e+00\n[ CPUFloatType{2} ]");
    EXPECT_EQ(printed(tensor({123456.7, 100000.5}, kDouble)), "1e+05 *\n 1.2346\n 1.0000\n[ CPUDoubleType{2} ]");
    EXPECT_EQ(printed(tensor({true, false})), " 1\n 0\n[ CPUBoolType{2} ]");
    EXPECT_EQ(printed(zeros({0})), "[ CPUFloatType{0} ]");
    EXPECT_EQ(printed(Tensor()), "[ Tensor (undefined) ]");
    // the stream's own format is restored afterwards
    std::ostringstream os;
    os << tensor({0.5}) << " " << 0.125;
    EXPECT_EQ(os.str(), " 0.5000\n[ CPUFloatType{1} ] 0.125");
}

TEST(Print, WideMatrixSplitsColumns) {
    const std::string s = printed(ones({1, 30}));
    EXPECT_NE(s.find("Columns 1 to 26"), std::string::npos);
    EXPECT_NE(s.find("Columns 27 to 30"), std::string::npos);
}

}  // namespace
