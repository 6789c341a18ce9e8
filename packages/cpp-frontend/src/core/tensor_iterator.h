// Private: a small TensorIterator. It broadcasts its operands (output first) to a common
// shape, orders the dims so the innermost is the fastest-moving in memory, merges dims that
// are contiguous in every operand, and calls a loop over the innermost dim:
//
//   loop(char** data, const int64_t* strides /*bytes, one per operand*/, int64_t n)
//
// An output that is undefined is allocated with the layout of the inputs (as PyTorch).
// Operands must already have the dtypes the kernel expects.
#pragma once

#include <cstdint>
#include <vector>

#include "ember/tensor.h"

namespace ember {
namespace native {

class TensorIter {
public:
    static constexpr int kMaxOperands = 5;

    // Elementwise: out (may be undefined: allocated as out_dtype) and the inputs.
    static TensorIter elementwise(Tensor& out, ScalarType out_dtype, std::initializer_list<Tensor> inputs);
    // Reduction: out has the input's rank with size 1 on the reduced dims (keepdim shape);
    // the iterator visits every input element with the output element it reduces into.
    static TensorIter reduction(const Tensor& out, const Tensor& input);
    // Visits the elements of one or more same-shape tensors (no broadcasting, no output).
    static TensorIter nullary(std::initializer_list<Tensor> tensors);

    int ntensors() const noexcept { return ntensors_; }
    int ndim() const noexcept { return static_cast<int>(shape_.size()); }
    int64_t numel() const noexcept;
    const std::vector<int64_t>& shape() const noexcept { return shape_; }
    int64_t stride(int dim, int arg) const noexcept { return strides_[static_cast<size_t>(dim * ntensors_ + arg)]; }
    char* data(int arg) const noexcept { return data_[arg]; }

    template <typename Loop>
    void for_each(Loop&& loop) const {
        const int nd = ndim();
        char* ptrs[kMaxOperands];
        for (int a = 0; a < ntensors_; ++a) ptrs[a] = data_[a];
        if (nd == 0) {
            int64_t zero[kMaxOperands] = {0, 0, 0, 0, 0};
            loop(ptrs, zero, int64_t(1));
            return;
        }
        if (numel() == 0) return;
        const int64_t inner = shape_[0];
        const int64_t* s0 = &strides_[0];
        if (nd == 1) {
            loop(ptrs, s0, inner);
            return;
        }
        int64_t counter[16] = {0};
        std::vector<int64_t> big_counter;
        int64_t* cnt = counter;
        if (nd > 16) {
            big_counter.assign(static_cast<size_t>(nd), 0);
            cnt = big_counter.data();
        }
        while (true) {
            loop(ptrs, s0, inner);
            int d = 1;
            for (; d < nd; ++d) {
                const int64_t* sd = &strides_[static_cast<size_t>(d * ntensors_)];
                ++cnt[d];
                for (int a = 0; a < ntensors_; ++a) ptrs[a] += sd[a];
                if (cnt[d] < shape_[static_cast<size_t>(d)]) break;
                for (int a = 0; a < ntensors_; ++a) ptrs[a] -= sd[a] * shape_[static_cast<size_t>(d)];
                cnt[d] = 0;
            }
            if (d == nd) break;
        }
    }

    const Tensor& output() const noexcept { return out_; }

private:
    void init(const std::vector<Tensor>& ops, IntArrayRef shape, int first_ordering_operand);
    void reorder(int first_ordering_operand);
    void coalesce();

    int ntensors_ = 0;
    std::vector<int64_t> shape_;    // innermost dim first
    std::vector<int64_t> strides_;  // [dim * ntensors + operand], in bytes
    std::vector<int> perm_;         // perm_[i]: original dim of iteration dim i
    char* data_[kMaxOperands] = {};
    Tensor out_;
};

}  // namespace native
}  // namespace ember
