#include "tensor_iterator.h"

#include <algorithm>

#include "ember/ops.h"
#include "tensor_utils.h"

namespace ember {
namespace native {

int64_t TensorIter::numel() const noexcept {
    int64_t n = 1;
    for (int64_t s : shape_) n *= s;
    return n;
}

// Byte strides of t aligned (right-justified) to `shape`, 0 on broadcast dims.
static void broadcast_strides(const Tensor& t, IntArrayRef shape, int64_t* out) {
    const int64_t nd = static_cast<int64_t>(shape.size());
    const int64_t td = t.dim();
    const int64_t es = t.element_size();
    for (int64_t i = 0; i < nd; ++i) {
        const int64_t j = i - (nd - td);
        if (j < 0 || t.sizes()[static_cast<size_t>(j)] == 1) {
            out[i] = 0;
        } else {
            out[i] = t.strides()[static_cast<size_t>(j)] * es;
        }
    }
}

void TensorIter::init(const std::vector<Tensor>& ops, IntArrayRef shape, int first_ordering_operand) {
    ntensors_ = static_cast<int>(ops.size());
    EMBER_CHECK(ntensors_ <= kMaxOperands, "TensorIter: too many operands");
    const size_t nd = shape.size();
    // original-order strides: orig[dim][arg]
    std::vector<int64_t> orig(nd * static_cast<size_t>(ntensors_));
    std::vector<int64_t> tmp(nd);
    for (int a = 0; a < ntensors_; ++a) {
        broadcast_strides(ops[static_cast<size_t>(a)], shape, tmp.data());
        for (size_t d = 0; d < nd; ++d) orig[d * static_cast<size_t>(ntensors_) + static_cast<size_t>(a)] = tmp[d];
        data_[a] = static_cast<char*>(ops[static_cast<size_t>(a)].data_ptr());
    }
    shape_.assign(shape.begin(), shape.end());
    strides_ = std::move(orig);
    reorder(first_ordering_operand);
    coalesce();
}

void TensorIter::reorder(int first) {
    const int nd = static_cast<int>(shape_.size());
    perm_.resize(static_cast<size_t>(nd));
    for (int i = 0; i < nd; ++i) perm_[static_cast<size_t>(i)] = nd - 1 - i;
    auto st = [&](int dim, int arg) { return strides_[static_cast<size_t>(dim * ntensors_ + arg)]; };
    // PyTorch's should_swap: 1 if dim0 should come after dim1 (be more outer), -1 before.
    auto should_swap = [&](int dim0, int dim1) {
        for (int a = first; a < ntensors_; ++a) {
            const int64_t s0 = st(dim0, a), s1 = st(dim1, a);
            if (s0 == 0 || s1 == 0) continue;
            if (s0 < s1) return -1;
            if (s0 > s1) return 1;
            if (shape_[static_cast<size_t>(dim0)] > shape_[static_cast<size_t>(dim1)]) return 1;
        }
        return 0;
    };
    for (int i = 1; i < nd; ++i) {
        int dim1 = i;
        for (int dim0 = i - 1; dim0 >= 0; --dim0) {
            const int cmp = should_swap(perm_[static_cast<size_t>(dim0)], perm_[static_cast<size_t>(dim1)]);
            if (cmp > 0) {
                std::swap(perm_[static_cast<size_t>(dim0)], perm_[static_cast<size_t>(dim1)]);
                dim1 = dim0;
            } else if (cmp < 0) {
                break;
            }
        }
    }
    std::vector<int64_t> shape(static_cast<size_t>(nd));
    std::vector<int64_t> strides(strides_.size());
    for (int i = 0; i < nd; ++i) {
        const int src = perm_[static_cast<size_t>(i)];
        shape[static_cast<size_t>(i)] = shape_[static_cast<size_t>(src)];
        for (int a = 0; a < ntensors_; ++a) {
            strides[static_cast<size_t>(i * ntensors_ + a)] = strides_[static_cast<size_t>(src * ntensors_ + a)];
        }
    }
    shape_ = std::move(shape);
    strides_ = std::move(strides);
}

void TensorIter::coalesce() {
    const int nd = static_cast<int>(shape_.size());
    if (nd <= 1) return;
    // drop size-1 dims first
    int prev = 0;
    auto st = [&](int dim, int arg) -> int64_t& { return strides_[static_cast<size_t>(dim * ntensors_ + arg)]; };
    for (int d = 1; d < nd; ++d) {
        const int64_t s_prev = shape_[static_cast<size_t>(prev)], s_d = shape_[static_cast<size_t>(d)];
        bool can = s_prev == 1 || s_d == 1;
        if (!can) {
            can = true;
            for (int a = 0; a < ntensors_; ++a) {
                if (s_prev * st(prev, a) != st(d, a)) {
                    can = false;
                    break;
                }
            }
        }
        if (can) {
            if (s_prev == 1) {
                for (int a = 0; a < ntensors_; ++a) st(prev, a) = st(d, a);
            }
            shape_[static_cast<size_t>(prev)] = s_prev * s_d;
        } else {
            ++prev;
            if (prev != d) {
                shape_[static_cast<size_t>(prev)] = s_d;
                for (int a = 0; a < ntensors_; ++a) st(prev, a) = st(d, a);
            }
        }
    }
    shape_.resize(static_cast<size_t>(prev + 1));
    strides_.resize(static_cast<size_t>((prev + 1) * ntensors_));
}

TensorIter TensorIter::elementwise(Tensor& out, ScalarType out_dtype, std::initializer_list<Tensor> inputs) {
    std::vector<int64_t> shape;
    bool first = true;
    for (const Tensor& t : inputs) {
        if (first) {
            shape = t.sizes().vec();
            first = false;
        } else if (!(t.sizes() == IntArrayRef(shape))) {
            shape = infer_size(shape, t.sizes());
        }
    }
    TensorIter it;
    if (!out.defined()) {
        // allocate with the layout of the inputs: order dims by the inputs' strides
        std::vector<Tensor> ins(inputs.begin(), inputs.end());
        it.ntensors_ = static_cast<int>(ins.size());
        const size_t nd = shape.size();
        it.shape_ = shape;
        it.strides_.assign(nd * ins.size(), 0);
        std::vector<int64_t> tmp(nd);
        for (size_t a = 0; a < ins.size(); ++a) {
            broadcast_strides(ins[a], shape, tmp.data());
            for (size_t d = 0; d < nd; ++d) it.strides_[d * ins.size() + a] = tmp[d];
        }
        bool all_contig = true;
        for (const Tensor& t : ins) all_contig = all_contig && t.is_contiguous();
        if (all_contig || nd <= 1) {
            out = empty_tensor(shape, out_dtype);
        } else {
            it.reorder(0);
            std::vector<int64_t> strides(nd);
            int64_t s = 1;
            for (size_t i = 0; i < nd; ++i) {
                const size_t d = static_cast<size_t>(it.perm_[i]);
                strides[d] = s;
                s *= shape[d] > 1 ? shape[d] : 1;
            }
            out = empty_strided_tensor(shape, strides, out_dtype);
        }
    } else {
        EMBER_CHECK(out.sizes() == IntArrayRef(shape), "output with shape ", out.sizes(),
                    " doesn't match the broadcast shape ", IntArrayRef(shape));
    }
    std::vector<Tensor> ops;
    ops.reserve(inputs.size() + 1);
    ops.push_back(out);
    ops.insert(ops.end(), inputs.begin(), inputs.end());
    TensorIter result;
    result.init(ops, shape, 0);
    result.out_ = out;
    return result;
}

TensorIter TensorIter::reduction(const Tensor& out, const Tensor& input) {
    EMBER_CHECK(out.dim() == input.dim(), "TensorIter::reduction: rank mismatch");
    // the output is viewed with stride 0 on the reduced dims
    std::vector<int64_t> ostrides = out.strides().vec();
    for (int64_t d = 0; d < out.dim(); ++d) {
        if (out.size(d) == 1 && input.size(d) != 1) ostrides[static_cast<size_t>(d)] = 0;
    }
    Tensor o = make_tensor(out.storage(), out.dtype(), input.sizes().vec(), ostrides, out.storage_offset());
    TensorIter it;
    // order by the input's strides (operand 1) so the inner loop is contiguous in the input
    it.init({o, input}, input.sizes(), 1);
    it.out_ = out;
    return it;
}

TensorIter TensorIter::nullary(std::initializer_list<Tensor> tensors) {
    std::vector<Tensor> ops(tensors.begin(), tensors.end());
    TensorIter it;
    it.init(ops, ops.front().sizes(), 0);
    return it;
}

}  // namespace native
}  // namespace ember
