// Tensor basics: handles, metadata, data access, conversions, storage sharing, views and the
// version counter, TensorOptions, Scalar, errors.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "common/error_of.h"
#include "ember/autograd.h"
#include "ember/tensor.h"

namespace {

using namespace ember;

using ember::testing::error_of;

TEST(Error, CheckMacros) {
    EXPECT_EQ(error_of([] { EMBER_CHECK(1 + 1 == 3, "math is ", 2, " broken"); }), "math is 2 broken");
    EXPECT_EQ(error_of([] { EMBER_CHECK(false); }), "Expected false to be true, but got false.");
    EXPECT_THROW(EMBER_CHECK_INDEX(false, "x"), IndexError);
    EXPECT_THROW(EMBER_CHECK_VALUE(false, "x"), ValueError);
    EXPECT_THROW(EMBER_ERROR("boom"), Error);
    try {
        EMBER_CHECK_INDEX(false, "idx");
    } catch (const std::runtime_error& e) {  // an ember::Error is a std::runtime_error
        EXPECT_STREQ(e.what(), "idx");
    }
}

TEST(Tensor, UndefinedHandle) {
    Tensor t;
    EXPECT_FALSE(t.defined());
    EXPECT_EQ(error_of([&] { (void)t.sizes(); }),
              "Expected a proper Tensor but got None (or an undefined Tensor in C++)");
    Tensor u = ones({2});
    EXPECT_TRUE(u.defined());
    Tensor v = u;  // a handle copy: same tensor
    EXPECT_TRUE(v.is_same(u));
    EXPECT_EQ(u.use_count(), 2);
    v.reset();
    EXPECT_FALSE(v.defined());
}

TEST(Tensor, Metadata) {
    Tensor t = zeros({2, 3, 4});
    EXPECT_EQ(t.dim(), 3);
    EXPECT_EQ(t.numel(), 24);
    EXPECT_EQ(t.sizes(), (std::vector<int64_t>{2, 3, 4}));
    EXPECT_EQ(t.strides(), (std::vector<int64_t>{12, 4, 1}));
    EXPECT_EQ(t.size(-1), 4);
    EXPECT_EQ(t.size(0), 2);
    EXPECT_EQ(t.stride(-2), 4);
    EXPECT_EQ(error_of([&] { (void)t.size(3); }), "Dimension out of range (expected to be in range of [-3, 2], but got 3)");
    EXPECT_EQ(t.dtype(), kFloat);
    EXPECT_EQ(t.scalar_type(), kFloat32);
    EXPECT_EQ(t.element_size(), 4);
    EXPECT_EQ(t.nbytes(), 96);
    EXPECT_TRUE(t.is_contiguous());
    EXPECT_TRUE(t.is_floating_point());
    EXPECT_EQ(t.toString(), "CPUFloatType");
    EXPECT_EQ(t.device(), Device(kCPU));
    EXPECT_EQ(t.options().dtype(), kFloat);
    std::ostringstream os;
    os << t.sizes();
    EXPECT_EQ(os.str(), "[2, 3, 4]");
    EXPECT_EQ(ones({}).dim(), 0);
    EXPECT_EQ(ones({}).numel(), 1);
    EXPECT_EQ(ones({0, 3}).numel(), 0);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(ones({3}).data_ptr()) % 64, 0u);  // 64-byte aligned storage
}

TEST(Tensor, DataAccess) {
    Tensor t = tensor({1.5, 2.5});
    float* p = t.data_ptr<float>();
    p[0] = 7;
    EXPECT_EQ(t[0].item<float>(), 7.0f);
    EXPECT_EQ(error_of([&] { (void)t.data_ptr<double>(); }), "expected scalar type Double but found Float");
    EXPECT_EQ(tensor({3}).item<int64_t>(), 3);
    EXPECT_EQ(tensor(2.5).item().toDouble(), 2.5);
    EXPECT_TRUE(tensor({true}).item<bool>());
    EXPECT_EQ(error_of([&] { (void)t.item(); }), "a Tensor with 2 elements cannot be converted to Scalar");
    EXPECT_EQ(t.const_data_ptr<float>(), p);
}

TEST(Tensor, TensorFromData) {
    Tensor a = tensor({1.0, 2.0});
    EXPECT_EQ(a.scalar_type(), kFloat);  // floating data: the default dtype
    EXPECT_EQ(tensor({1, 2}).scalar_type(), kLong);
    EXPECT_EQ(tensor({true, false}).scalar_type(), kBool);
    EXPECT_EQ(tensor(3.0).dim(), 0);
    Tensor m = tensor({{1, 2, 3}, {4, 5, 6}}, kFloat64);
    EXPECT_EQ(m.sizes(), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(m.scalar_type(), kDouble);
    EXPECT_EQ(m[1][2].item<double>(), 6.0);
    Tensor v = tensor(std::vector<float>{1.f, 2.f, 3.f});
    EXPECT_EQ(v.numel(), 3);
    EXPECT_EQ(tensor(std::vector<int>{1, 2}).scalar_type(), kLong);
    Tensor e = tensor({});
    EXPECT_EQ(e.sizes(), (std::vector<int64_t>{0}));
    Tensor r = tensor({1.0}, TensorOptions().requires_grad(true));
    EXPECT_TRUE(r.requires_grad());
    EXPECT_THROW(tensor({{1, 2}, {3}}), Error);
}

TEST(Tensor, ConversionsAndCopies) {
    Tensor a = tensor({1.7, -2.2, 3.0});
    Tensor i = a.to(kInt64);
    EXPECT_EQ(i.scalar_type(), kLong);
    EXPECT_TRUE(i.equal(tensor({1, -2, 3})));
    EXPECT_TRUE(a.to(kFloat).is_same(a));  // same dtype: no copy
    EXPECT_FALSE(a.to(kFloat, false, /*copy=*/true).is_same(a));
    EXPECT_TRUE(tensor({0.0, 0.5}).to(kBool).equal(tensor({false, true})));
    EXPECT_TRUE(tensor({-1.0, 300.0}).to(kInt32).equal(tensor({-1, 300}, kInt)));
    Tensor c = a.clone();
    EXPECT_FALSE(c.is_alias_of(a));
    c.zero_();
    EXPECT_EQ(a[0].item<float>(), 1.7f);
    Tensor t = arange(6, kFloat).view({2, 3}).t();
    EXPECT_FALSE(t.is_contiguous());
    Tensor tc = t.contiguous();
    EXPECT_TRUE(tc.is_contiguous());
    EXPECT_TRUE(tc.equal(t));
    EXPECT_TRUE(tc.contiguous().is_same(tc));
    Tensor dst = zeros({2, 3}, kDouble);
    dst.copy_(tensor({1, 2, 3}));  // broadcast + dtype conversion
    EXPECT_TRUE(dst.equal(tensor({{1.0, 2.0, 3.0}, {1.0, 2.0, 3.0}}, kDouble)));
    EXPECT_EQ(error_of([&] { dst.copy_(ones({4})); }),
              "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1");
    Tensor h = a.to(kHalf);
    EXPECT_EQ(h.scalar_type(), kHalf);
    EXPECT_NEAR(h.to(kFloat)[1].item<float>(), -2.2f, 1e-3);
}

TEST(Tensor, TensorOptionsAndFactories) {
    auto o = TensorOptions().dtype(kFloat64).requires_grad(true);
    EXPECT_EQ(o.dtype(), kDouble);
    EXPECT_TRUE(o.requires_grad());
    Tensor t = ones({2}, o);
    EXPECT_TRUE(t.requires_grad());
    EXPECT_TRUE(t.is_leaf());
    EXPECT_EQ(zeros({2}, kInt8).scalar_type(), kChar);
    EXPECT_EQ(ones({2}, dtype(kHalf)).scalar_type(), kHalf);
    EXPECT_EQ(full({2}, 3).scalar_type(), kLong);
    EXPECT_EQ(full({2}, 3.5).scalar_type(), kFloat);
    EXPECT_EQ(full({2}, true).scalar_type(), kBool);
    EXPECT_EQ(full({2}, 3, kFloat)[1].item<float>(), 3.0f);
    EXPECT_EQ(empty({3, 0}).numel(), 0);
    EXPECT_EQ(scalar_tensor(2).scalar_type(), kLong);
    Tensor like = zeros_like(t);
    EXPECT_EQ(like.scalar_type(), kDouble);
    EXPECT_FALSE(like.requires_grad());
    EXPECT_EQ(ones_like(t, kInt).scalar_type(), kInt);
    EXPECT_EQ(full_like(t, 7).sum().item<double>(), 14.0);
    EXPECT_EQ(t.new_zeros({3}).scalar_type(), kDouble);
    EXPECT_EQ(error_of([] { (void)zeros({-1}); }), "Trying to create tensor with negative dimension -1: [-1]");
    EXPECT_EQ(ones({2})._version(), 0u);
}

TEST(Tensor, ScalarType) {
    Scalar i = 3, d = 2.5, b = true;
    EXPECT_TRUE(i.isIntegral(false));
    EXPECT_TRUE(d.isFloatingPoint());
    EXPECT_TRUE(b.isBoolean());
    EXPECT_EQ(i.type(), kLong);
    EXPECT_EQ(d.type(), kDouble);
    EXPECT_EQ(b.type(), kBool);
    EXPECT_EQ(d.to<int64_t>(), 2);
    EXPECT_EQ(i.toDouble(), 3.0);
    EXPECT_EQ((-d).toDouble(), -2.5);
    EXPECT_EQ(Scalar(Half(1.5f)).toDouble(), 1.5);
}

TEST(Tensor, FromBlob) {
    float data[6] = {1, 2, 3, 4, 5, 6};
    Tensor t = from_blob(data, {2, 3});
    EXPECT_EQ(t.data_ptr<float>(), data);
    t.mul_(2);  // writes through to the caller's memory
    EXPECT_EQ(data[5], 12.0f);
    Tensor s = from_blob(data, {3}, {2});
    EXPECT_TRUE(s.equal(tensor({2.0, 6.0, 10.0})));
    int deleted = 0;
    {
        auto* buf = new double[2]{1.0, 2.0};
        Tensor owned = from_blob(buf, {2}, [&deleted](void* p) {
            delete[] static_cast<double*>(p);
            ++deleted;
        }, kDouble);
        Tensor view = owned.view({1, 2});
        owned.reset();
        EXPECT_EQ(deleted, 0);  // the view keeps the storage alive
        EXPECT_EQ(view.sum().item<double>(), 3.0);
    }
    EXPECT_EQ(deleted, 1);
}

TEST(Views, ShareStorageAndVersion) {
    Tensor base = arange(12, kFloat);
    Tensor v = base.view({3, 4});
    Tensor row = v[1];
    Tensor col = v.select(1, 2);
    Tensor sl = v.slice(1, 1, 4, 2);
    Tensor tr = v.t();
    Tensor ex = base.narrow(0, 0, 1).expand({5});
    for (const Tensor& x : {v, row, col, sl, tr, ex}) {
        EXPECT_TRUE(x.is_alias_of(base));
        EXPECT_TRUE(x.is_view());
        EXPECT_TRUE(x._base().is_same(base));
    }
    EXPECT_EQ(row.storage_offset(), 4);
    EXPECT_EQ(sl.strides(), (std::vector<int64_t>{4, 2}));
    row.fill_(-1);  // a write through a view is seen by the base and by other views
    EXPECT_EQ(base[5].item<float>(), -1.0f);
    EXPECT_EQ(col[1].item<float>(), -1.0f);
    EXPECT_EQ(base._version(), 1u);
    EXPECT_EQ(col._version(), 1u);
    base.add_(1);
    EXPECT_EQ(v._version(), 2u);
    EXPECT_EQ(tr[2][1].item<float>(), 0.0f);
    // chunks / split / unbind / diagonal / unflatten are views too
    auto chunks = v.chunk(2, 1);
    EXPECT_TRUE(chunks[1].is_alias_of(base));
    EXPECT_EQ(chunks[1].sizes(), (std::vector<int64_t>{3, 2}));
    EXPECT_TRUE(v.diagonal().is_alias_of(base));
    EXPECT_TRUE(v.unbind(1)[3].is_alias_of(base));
    EXPECT_TRUE(base.unflatten(0, {2, -1}).is_alias_of(base));
    EXPECT_TRUE(v.permute({1, 0}).is_alias_of(base));
    EXPECT_TRUE(v.unsqueeze(0).squeeze(0).is_alias_of(base));
    // reshape: a view when possible, a copy otherwise
    EXPECT_TRUE(v.reshape({2, 6}).is_alias_of(base));
    EXPECT_FALSE(tr.reshape({12}).is_alias_of(base));
    EXPECT_FALSE(v.flatten().is_same(v));
}

TEST(Views, AssignmentToTemporariesWrites) {
    Tensor a = zeros({2, 3});
    Tensor keep = a;
    a[0] = 5;                                  // fill through a view
    a.index({indexing::Slice(), 2}) = tensor({7.0, 8.0});
    EXPECT_TRUE(a.equal(tensor({{5.0, 5.0, 7.0}, {0.0, 0.0, 8.0}})));
    EXPECT_TRUE(keep.is_same(a));
    Tensor b = ones({1});
    b = zeros({4});                            // a named tensor is rebound, not written
    EXPECT_EQ(b.numel(), 4);
    EXPECT_TRUE(a.data().is_alias_of(a));
    EXPECT_TRUE(a.is_same_size(zeros({2, 3})));
}

TEST(Views, Errors) {
    Tensor t = arange(6, kFloat).view({2, 3}).t();
    EXPECT_EQ(error_of([&] { (void)t.view({6}); }),
              "view size is not compatible with input tensor's size and stride (at least one dimension spans across two "
              "contiguous subspaces). Use .reshape(...) instead.");
    EXPECT_EQ(error_of([&] { (void)ones({6}).view({4, -1}); }), "shape '[4, -1]' is invalid for input of size 6");
    EXPECT_EQ(error_of([&] { (void)ones({6}).view({-1, -1}); }), "only one dimension can be inferred");
    EXPECT_EQ(error_of([&] { (void)ones({3}).expand({2, 4}); }),
              "The expanded size of the tensor (4) must match the existing size (3) at non-singleton dimension 1.  "
              "Target sizes: [2, 4].  Tensor sizes: [3]");
    EXPECT_EQ(error_of([&] { (void)ones({3, 4}).narrow(1, 3, 2); }), "start (3) + length (2) exceeds dimension size (4).");
    EXPECT_EQ(error_of([&] { (void)ones({3, 4}).select(0, 3); }),
              "select(): index 3 out of range for tensor of size [3, 4] at dimension 0");
    EXPECT_EQ(error_of([&] { (void)ones({2, 2, 2}).t(); }), "t() expects a tensor with <= 2 dimensions, but self is 3D");
    EXPECT_EQ(error_of([&] { (void)ones({2, 3}).permute({0, 0}); }), "permute(): duplicate dims are not allowed.");
    EXPECT_EQ(error_of([&] { (void)cat({ones({2, 3}), ones({2, 4})}); }),
              "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor number 1 "
              "in the list.");
    EXPECT_EQ(error_of([&] { (void)stack({ones({2}), ones({3})}); }),
              "stack expects each tensor to be equal size, but got [2] at entry 0 and [3] at entry 1");
    EXPECT_EQ(error_of([&] { (void)ones({3}).split({1, 1}); }),
              "split_with_sizes expects split_sizes to sum exactly to 3 (input tensor's size at dimension 0), but got "
              "split_sizes=[1, 1]");
    EXPECT_EQ(error_of([&] { (void)ones({2, 3}).flatten(1, 0); }),
              "flatten() has invalid args: start_dim cannot come after end_dim");
}

TEST(Views, ShapeOps) {
    Tensor x = arange(24, kLong).view({2, 3, 4});
    EXPECT_EQ(x.transpose(0, 2).sizes(), (std::vector<int64_t>{4, 3, 2}));
    EXPECT_EQ(x.permute({2, 0, 1}).strides(), (std::vector<int64_t>{1, 12, 4}));
    EXPECT_EQ(x.flatten(1).sizes(), (std::vector<int64_t>{2, 12}));
    EXPECT_EQ(x.unsqueeze(-1).sizes(), (std::vector<int64_t>{2, 3, 4, 1}));
    EXPECT_EQ(ones({1, 3, 1}).squeeze().sizes(), (std::vector<int64_t>{3}));
    EXPECT_EQ(ones({1, 3, 1}).squeeze(1).sizes(), (std::vector<int64_t>{1, 3, 1}));
    auto parts = x.split(3, 2);
    ASSERT_EQ(parts.size(), 2u);
    EXPECT_EQ(parts[1].sizes(), (std::vector<int64_t>{2, 3, 1}));
    auto chunks = arange(5, kLong).chunk(3);
    ASSERT_EQ(chunks.size(), 3u);
    EXPECT_EQ(chunks[2].numel(), 1);
    EXPECT_EQ(x.unbind(1).size(), 3u);
    EXPECT_TRUE(x.select(2, -1).equal(tensor({{3, 7, 11}, {15, 19, 23}})));
    EXPECT_TRUE(arange(4, kLong).repeat({2, 2}).equal(tensor({{0, 1, 2, 3, 0, 1, 2, 3}, {0, 1, 2, 3, 0, 1, 2, 3}})));
    EXPECT_TRUE(cat({tensor({1, 2}), tensor({3})}).equal(tensor({1, 2, 3})));
    EXPECT_EQ(cat({tensor({1.0}), tensor({2})}).scalar_type(), kFloat);
    EXPECT_TRUE(stack({tensor({1, 2}), tensor({3, 4})}, 1).equal(tensor({{1, 3}, {2, 4}})));
    EXPECT_TRUE(x.view({-1}).flip({0})[0].equal(tensor(23)));
    EXPECT_EQ(x.diagonal(0, 1, 2).sizes(), (std::vector<int64_t>{2, 3}));
    EXPECT_TRUE(arange(4, kLong).as_strided({2, 2}, {1, 1}).equal(tensor({{0, 1}, {1, 2}})));
}

TEST(Factories, ArangeRules) {
    EXPECT_EQ(arange(5).scalar_type(), kLong);
    EXPECT_EQ(arange(5).numel(), 5);
    EXPECT_EQ(arange(0, 1, 0.1).scalar_type(), kFloat);
    EXPECT_EQ(arange(0, 1, 0.1).numel(), 10);
    EXPECT_EQ(arange(1, 2.5, 0.5).numel(), 3);
    EXPECT_EQ(arange(10, 0, -3).numel(), 4);
    EXPECT_TRUE(arange(10, 0, -3).equal(tensor({10, 7, 4, 1})));
    EXPECT_EQ(arange(5, kDouble).scalar_type(), kDouble);
    EXPECT_EQ(arange(-1.0, 1.0, 0.5)[3].item<float>(), 0.5f);
    EXPECT_EQ(error_of([] { (void)arange(0, 1, 0); }), "step must be nonzero");
    EXPECT_EQ(error_of([] { (void)arange(0, 5, -1); }), "upper bound and larger bound inconsistent with step sign");
}

TEST(Factories, LinspaceEye) {
    Tensor l = linspace(0, 1, 5);
    EXPECT_TRUE(l.equal(tensor({0.0, 0.25, 0.5, 0.75, 1.0})));
    EXPECT_EQ(linspace(-1, 1, 1).numel(), 1);
    EXPECT_EQ(linspace(2, 3, 0).numel(), 0);
    EXPECT_TRUE(eye(2).equal(tensor({{1.0, 0.0}, {0.0, 1.0}})));
    EXPECT_EQ(eye(2, 3, kLong).sum().item<int64_t>(), 2);
}

TEST(Factories, RandomAndSeeding) {
    manual_seed(123);
    Tensor a = rand({1000});
    manual_seed(123);
    Tensor b = rand({1000});
    EXPECT_TRUE(a.equal(b));
    EXPECT_GE(a.min().item<float>(), 0.0f);
    EXPECT_LT(a.max().item<float>(), 1.0f);
    EXPECT_NEAR(a.mean().item<float>(), 0.5, 0.05);
    Tensor n = randn({20000}, kDouble);
    EXPECT_NEAR(n.mean().item<double>(), 0.0, 0.03);
    EXPECT_NEAR(n.std().item<double>(), 1.0, 0.03);
    Tensor r = randint(3, 7, {1000});
    EXPECT_EQ(r.scalar_type(), kLong);
    EXPECT_EQ(r.min().item<int64_t>(), 3);
    EXPECT_EQ(r.max().item<int64_t>(), 6);
    Tensor p = randperm(50);
    EXPECT_TRUE(std::get<0>(p.sort()).equal(arange(50)));
    Generator g1(7), g2(7);
    EXPECT_TRUE(randn({5}, g1).equal(randn({5}, g2)));
    EXPECT_FALSE(rand({5}).equal(rand({5})));
    EXPECT_EQ(rand_like(ones({2}, kDouble)).scalar_type(), kDouble);
    EXPECT_EQ(randn_like(ones({3})).numel(), 3);
    Tensor bern = ones({2000}).bernoulli_(0.25);
    EXPECT_NEAR(bern.mean().item<float>(), 0.25, 0.05);
    Tensor u = empty({1000}).uniform_(-2, 2);
    EXPECT_GE(u.min().item<float>(), -2.0f);
    EXPECT_TRUE(multinomial(tensor({0.0, 1.0, 0.0}), 3, true).equal(tensor({1, 1, 1})));
    EXPECT_EQ(default_generator().current_seed(), 123u);
}

}  // namespace
