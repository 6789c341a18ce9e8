// Indexing (index / index_put_ with ember::indexing, aten-style index, gather/scatter/...)
// against Python Ember (the expected values were computed with ember's __getitem__ /
// __setitem__ on the same tensors).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "common/error_of.h"
#include "ember/autograd.h"
#include "ember/tensor.h"

namespace {

using namespace ember;
using namespace ember::indexing;

struct IndexCase {
    const char* name;
    std::function<Tensor(const Tensor&)> fn;
    std::vector<int64_t> shape;
    std::vector<int64_t> values;
};

struct PutCase {
    const char* name;
    std::function<void(Tensor&)> fn;
    std::vector<int64_t> values;
};

const IndexCase kIndexCases[] = {
    {"A.index({0})", [](const Tensor& A) { return A.index({0}); }, {3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
    {"A.index({-1, 2})", [](const Tensor& A) { return A.index({-1, 2}); }, {4}, {20, 21, 22, 23}},
    {"A.index({Slice(), 1})", [](const Tensor& A) { return A.index({Slice(), 1}); }, {2, 4}, {4, 5, 6, 7, 16, 17, 18, 19}},
    {"A.index({Slice(None, None, 2)})", [](const Tensor& A) { return A.index({Slice(None, None, 2)}); }, {1, 3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
    {"A.index({'...', 1})", [](const Tensor& A) { return A.index({"...", 1}); }, {2, 3}, {1, 5, 9, 13, 17, 21}},
    {"A.index({Ellipsis, Slice(1, None)})", [](const Tensor& A) { return A.index({Ellipsis, Slice(1, None)}); }, {2, 3, 3}, {1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 14, 15, 17, 18, 19, 21, 22, 23}},
    {"A.index({None, 0, Slice(0, 2)})", [](const Tensor& A) { return A.index({None, 0, Slice(0, 2)}); }, {1, 2, 4}, {0, 1, 2, 3, 4, 5, 6, 7}},
    {"A.index({1, None, Slice(-2)})", [](const Tensor& A) { return A.index({1, None, Slice(-2)}); }, {1, 2, 4}, {16, 17, 18, 19, 20, 21, 22, 23}},
    {"A.index({Slice(), Slice(), Slice(1, 10, 2)})", [](const Tensor& A) { return A.index({Slice(), Slice(), Slice(1, 10, 2)}); }, {2, 3, 2}, {1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23}},
    {"A.index({tensor({1, 0, 1})})", [](const Tensor& A) { return A.index({tensor({1, 0, 1})}); }, {3, 3, 4}, {12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}},
    {"A.index({Slice(), tensor({2, 0})})", [](const Tensor& A) { return A.index({Slice(), tensor({2, 0})}); }, {2, 2, 4}, {8, 9, 10, 11, 0, 1, 2, 3, 20, 21, 22, 23, 12, 13, 14, 15}},
    {"A.index({0, tensor({2, 0}), tensor({1, 3})})", [](const Tensor& A) { return A.index({0, tensor({2, 0}), tensor({1, 3})}); }, {2}, {9, 3}},
    {"A.index({tensor({1, 0}), Slice(), tensor({3, 2})})", [](const Tensor& A) { return A.index({tensor({1, 0}), Slice(), tensor({3, 2})}); }, {2, 3}, {15, 19, 23, 2, 6, 10}},
    {"A.index({Slice(), tensor({{0, 1}, {2, 2}}), Slice(1, 3)})", [](const Tensor& A) { return A.index({Slice(), tensor({{0, 1}, {2, 2}}), Slice(1, 3)}); }, {2, 2, 2, 2}, {1, 2, 5, 6, 9, 10, 9, 10, 13, 14, 17, 18, 21, 22, 21, 22}},
    {"A.index({A > 20})", [](const Tensor& A) { return A.index({A > 20}); }, {3}, {21, 22, 23}},
    {"A.index({0, A.index({0}).sum(1) > 10})", [](const Tensor& A) { return A.index({0, A.index({0}).sum(1) > 10}); }, {2, 4}, {4, 5, 6, 7, 8, 9, 10, 11}},
    {"A.index({tensor({true, false})})", [](const Tensor& A) { return A.index({tensor({true, false})}); }, {1, 3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
    {"A.index({Slice(), Slice(), tensor(2)})", [](const Tensor& A) { return A.index({Slice(), Slice(), tensor(2)}); }, {2, 3}, {2, 6, 10, 14, 18, 22}},
    {"A.index({-1, -1, tensor({-1, 0})})", [](const Tensor& A) { return A.index({-1, -1, tensor({-1, 0})}); }, {2}, {23, 20}},
    {"A.index({true})", [](const Tensor& A) { return A.index({true}); }, {1, 2, 3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}},
    {"A.index({tensor({0, 1}), None, tensor({0, 2})})", [](const Tensor& A) { return A.index({tensor({0, 1}), None, tensor({0, 2})}); }, {2, 1, 4}, {0, 1, 2, 3, 20, 21, 22, 23}},
};
const PutCase kPutCases[] = {
    {"b.index_put_({0}, 5)", [](Tensor& b) { b.index_put_({0}, 5); }, {5, 5, 5, 5, 0, 0, 0, 0, 0, 0, 0, 0}},
    {"b.index_put_({Slice(), 1}, tensor({1, 2, 3}))", [](Tensor& b) { b.index_put_({Slice(), 1}, tensor({1, 2, 3})); }, {0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0}},
    {"b.index_put_({tensor({0, 2}), tensor({1, 3})}, 7)", [](Tensor& b) { b.index_put_({tensor({0, 2}), tensor({1, 3})}, 7); }, {0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7}},
    {"b.index_put_({Ellipsis, Slice(2)}, tensor({{9, 8}}))", [](Tensor& b) { b.index_put_({Ellipsis, Slice(2)}, tensor({{9, 8}})); }, {0, 0, 9, 8, 0, 0, 9, 8, 0, 0, 9, 8}},
    {"b.index_put_({b == 0}, 4)", [](Tensor& b) { b.index_put_({b == 0}, 4); }, {4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4}},
    {"b.index_put_({1, Slice(None, None, 2)}, tensor({6}))", [](Tensor& b) { b.index_put_({1, Slice(None, None, 2)}, tensor({6})); }, {0, 0, 0, 0, 6, 0, 6, 0, 0, 0, 0, 0}},
    {"b.index_put_(std::vector<std::optional<Tensor>>{tensor({0, 0, 1})}, tensor({1}), true)", [](Tensor& b) { b.index_put_(std::vector<std::optional<Tensor>>{tensor({0, 0, 1})}, tensor({1}), true); }, {2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0}},
};

std::vector<int64_t> values_of(const Tensor& t) {
    Tensor c = t.contiguous().reshape({-1});
    const int64_t* p = c.data_ptr<int64_t>();
    return std::vector<int64_t>(p, p + c.numel());
}

using ember::testing::error_of;

TEST(Indexing, MatchesPythonGetitem) {
    const Tensor A = arange(24).reshape({2, 3, 4});
    for (const IndexCase& c : kIndexCases) {
        SCOPED_TRACE(c.name);
        Tensor r = c.fn(A);
        EXPECT_EQ(r.sizes(), IntArrayRef(c.shape));
        EXPECT_EQ(values_of(r), c.values);
    }
}

TEST(Indexing, MatchesPythonSetitem) {
    for (const PutCase& c : kPutCases) {
        SCOPED_TRACE(c.name);
        Tensor b = zeros({3, 4}, kLong);
        c.fn(b);
        EXPECT_EQ(values_of(b), c.values);
    }
}

TEST(Indexing, BasicIndicesGiveViews) {
    Tensor a = arange(12, kFloat).view({3, 4});
    Tensor v = a.index({Slice(1), Slice(None, None, 2)});
    EXPECT_TRUE(v.is_alias_of(a));
    v.fill_(0);
    EXPECT_EQ(a[1][2].item<float>(), 0.0f);
    Tensor adv = a.index({tensor({0, 1})});
    EXPECT_FALSE(adv.is_alias_of(a));  // advanced indexing copies
    EXPECT_TRUE(a[2].is_alias_of(a));
    EXPECT_TRUE(a.index({"..."}).is_alias_of(a));
}

TEST(Indexing, Errors) {
    Tensor a = arange(12).view({3, 4});
    EXPECT_EQ(error_of([&] { (void)a.index({3}); }), "index 3 is out of bounds for dimension 0 with size 3");
    EXPECT_THROW((void)a.index({3}), IndexError);
    EXPECT_EQ(error_of([&] { (void)a.index({tensor({0, 5})}); }), "index 5 is out of bounds for dimension 0 with size 3");
    EXPECT_EQ(error_of([&] { (void)a.index({0, 0, 0}); }), "too many indices for tensor of dimension 2");
    EXPECT_EQ(error_of([&] { (void)a.index({tensor({1.0})}); }),
              "tensors used as indices must be long, int, byte or bool tensors");
    EXPECT_EQ(error_of([&] { (void)a.index({tensor({true, false})}); }),
              "The shape of the mask [2] at index 0 does not match the shape of the indexed tensor [3, 4] at index 0");
    EXPECT_EQ(error_of([&] { (void)tensor(5).index({0}); }),
              "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to convert a "
              "0-dim tensor to a number");
    EXPECT_EQ(error_of([&] { a.index_put_({tensor({0, 1})}, tensor({1, 2, 3})); }),
              "shape mismatch: value tensor of shape [3] cannot be broadcast to indexing result of shape [2, 4]");
    EXPECT_EQ(error_of([&] { (void)a.gather(1, tensor({{4}, {0}, {0}})); }),
              "index 4 is out of bounds for dimension 1 with size 4");
}

TEST(Indexing, GatherScatterFamily) {
    Tensor a = arange(12, kFloat).view({3, 4});
    Tensor idx = tensor({{3, 0}, {1, 1}, {2, 3}});
    EXPECT_TRUE(a.gather(1, idx).equal(tensor({{3.0, 0.0}, {5.0, 5.0}, {10.0, 11.0}})));
    Tensor s = zeros({3, 4}).scatter(1, idx, ones({3, 2}));
    EXPECT_EQ(s.sum().item<float>(), 5.0f);  // row 1 writes the same place twice
    Tensor sa = zeros({3, 4}).scatter_add(1, idx, ones({3, 2}));
    EXPECT_EQ(sa[1][1].item<float>(), 2.0f);
    EXPECT_TRUE(a.index_select(0, tensor({2, 2})).equal(tensor({{8.0, 9.0, 10.0, 11.0}, {8.0, 9.0, 10.0, 11.0}})));
    EXPECT_TRUE(zeros({3}).index_add(0, tensor({0, 0, 2}), tensor({1.0, 2.0, 3.0})).equal(tensor({3.0, 0.0, 3.0})));
    EXPECT_TRUE(a.masked_select(a > 9).equal(tensor({10.0, 11.0})));
    EXPECT_TRUE(tensor({{0, 1}, {2, 0}}).nonzero().equal(tensor({{0, 1}, {1, 0}})));
    EXPECT_TRUE(one_hot(tensor({1, 0})).equal(tensor({{0, 1}, {1, 0}})));
    EXPECT_EQ(error_of([] { (void)one_hot(tensor({1.0})); }), "one_hot is only applicable to index tensor of type LongTensor.");
    Tensor t = zeros({2, 3});
    t.scatter_add_(1, tensor({{0, 0}, {2, 1}}), ones({2, 2}));
    EXPECT_TRUE(t.equal(tensor({{2.0, 0.0, 0.0}, {0.0, 1.0, 1.0}})));
    Tensor x = arange(6, kFloat).view({2, 3});
    EXPECT_TRUE(x[tensor({1})].equal(tensor({{3.0, 4.0, 5.0}})));
}

}  // namespace
