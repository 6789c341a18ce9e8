// Copies and conversions: copy_, to(dtype), clone, contiguous, detach, fill_, zero_.
#include <cstring>

#include "op_common.h"

namespace ember {
namespace native {

void copy_kernel(const Tensor& dst, const Tensor& src) {
    if (dst.numel() == 0) return;
    if (!(src.sizes() == dst.sizes())) {
        const std::vector<int64_t> shape = infer_size(dst.sizes(), src.sizes());
        EMBER_CHECK(IntArrayRef(shape) == dst.sizes(), "output with shape ", dst.sizes(),
                    " doesn't match the broadcast shape ", IntArrayRef(shape));
    }
    if (dst.scalar_type() == src.scalar_type() && dst.is_contiguous() && src.is_contiguous() &&
        src.sizes() == dst.sizes()) {
        if (dst.data_ptr() != src.data_ptr()) {
            std::memmove(dst.data_ptr(), src.data_ptr(), static_cast<size_t>(dst.nbytes()));
        }
        return;
    }
    // view src with dst's shape (stride 0 on broadcast dims)
    Tensor s = src;
    if (!(src.sizes() == dst.sizes())) {
        const int64_t nd = dst.dim(), sd = src.dim();
        std::vector<int64_t> strides(static_cast<size_t>(nd), 0);
        for (int64_t i = 0; i < sd; ++i) {
            const int64_t j = nd - sd + i;
            strides[static_cast<size_t>(j)] = src.size(i) == 1 ? 0 : src.stride(i);
        }
        s = make_tensor(src.storage(), src.scalar_type(), dst.sizes().vec(), strides, src.storage_offset());
    }
    TensorIter iter = TensorIter::nullary({dst, s});
    dispatch_all_and_complex(dst.scalar_type(), "copy_", [&](auto out_tag) {
        using out_t = typename decltype(out_tag)::type;
        dispatch_all_and_complex(src.scalar_type(), "copy_", [&](auto in_tag) {
            using in_t = typename decltype(in_tag)::type;
            unary_kernel<out_t, in_t>(iter, [](opmath_t<in_t> v) { return convert<out_t>(v); });
        });
    });
}

Tensor cast(const Tensor& t, ScalarType dtype) {
    if (t.scalar_type() == dtype) return t;
    // a kernel's conversion never drops imaginary parts (Tensor::to does, when asked to)
    EMBER_CHECK(!t.is_complex() || is_complex(dtype), "a ", scalar_type_name(t.scalar_type()),
                " tensor cannot be converted to ", scalar_type_name(dtype),
                " here: this op is not implemented for complex tensors in Ember's C++ frontend");
    Tensor out;
    TensorIter::elementwise(out, dtype, {t});
    copy_kernel(out, t);
    return out;
}

Tensor scalar_to_tensor(const Scalar& s, ScalarType dtype) {
    Tensor t = empty_tensor({}, dtype);
    dispatch_all_and_complex(dtype, "scalar_tensor", [&](auto tag) {
        using T = typename decltype(tag)::type;
        *static_cast<T*>(t.data_ptr()) = s.to<T>();
    });
    return t;
}

Tensor contiguous_data(const Tensor& t) {
    if (t.is_contiguous()) return t;
    Tensor out = empty_tensor(t.sizes(), t.scalar_type());
    copy_kernel(out, t);
    return out;
}

void inplace_record(const Tensor& self, Tensor result) {
    EMBER_CHECK(result.sizes() == self.sizes(), "output with shape ", self.sizes(),
                " doesn't match the broadcast shape ", result.sizes());
    check_inplace_dtype(result.scalar_type(), self.scalar_type());
    if (result.scalar_type() != self.scalar_type()) result = result.to(self.scalar_type());
    copy_kernel(self, result);
    bump_version(self);
    autograd::rebase_history(self, result.grad_fn(), result.output_nr());
}

// Records an in-place op whose gradient w.r.t. self's old value is given by `node` (already
// made with its edges); self becomes its output 0.
static void rebase_with_node(const Tensor& self, const std::shared_ptr<FunctionNode>& node) {
    node->add_input_metadata(self);
    autograd::rebase_history(self, node, 0);
}

void fill_kernel(const Tensor& self, const Scalar& value) {
    if (self.numel() == 0) return;
    dispatch_all_and_complex(self.scalar_type(), "fill_", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T v = value.to<T>();
        if (self.is_contiguous()) {
            T* p = static_cast<T*>(self.data_ptr());
            const int64_t n = self.numel();
            if constexpr (std::is_same_v<T, Half>) {
                for (int64_t i = 0; i < n; ++i) p[i] = v;
            } else {
                std::fill(p, p + n, v);
            }
            return;
        }
        TensorIter iter = TensorIter::nullary({self});
        iter.for_each([&](char** data, const int64_t* strides, int64_t n) {
            for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(data[0] + i * strides[0]) = v;
        });
    });
}

}  // namespace native

using namespace native;

// ---- Tensor methods ------------------------------------------------------------------------------
Tensor& Tensor::copy_(const Tensor& src, bool /*non_blocking*/) const {
    check_inplace(*this);
    const bool record = GradMode::is_enabled() && (requires_grad() || src.requires_grad());
    if (!record) {
        copy_kernel(*this, src);
        bump_version(*this);
        return const_cast<Tensor&>(*this);
    }
    auto node = std::make_shared<FunctionNode>("CopyBackwards", autograd::edge_list{autograd::gradient_edge(src)});
    const std::vector<int64_t> src_shape = src.sizes().vec();
    const ScalarType src_dtype = src.scalar_type();
    node->set_formula([src_shape, src_dtype](FunctionNode&, variable_list&& g) -> variable_list {
        if (!g[0].defined()) return {Tensor()};
        return {reduce_grad(g[0].to(src_dtype), src_shape)};
    });
    copy_kernel(*this, src);
    bump_version(*this);
    rebase_with_node(*this, node);
    return const_cast<Tensor&>(*this);
}

Tensor& Tensor::fill_(const Scalar& value) const {
    check_inplace(*this);
    if (GradMode::is_enabled() && requires_grad()) {
        auto node = make_node("FillBackward0", {*this});
        node->set_formula([](FunctionNode&, variable_list&& g) -> variable_list { return {zeros_like(g[0])}; });
        fill_kernel(*this, value);
        bump_version(*this);
        rebase_with_node(*this, node);
        return const_cast<Tensor&>(*this);
    }
    fill_kernel(*this, value);
    bump_version(*this);
    return const_cast<Tensor&>(*this);
}

Tensor& Tensor::fill_(const Tensor& value) const {
    EMBER_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ", value.dim(),
                " dimensions.");
    if (GradMode::is_enabled() && value.requires_grad()) {
        return copy_(value.expand(sizes()));
    }
    return fill_(value.item());
}

Tensor& Tensor::zero_() const { return fill_(0); }

Tensor Tensor::to(ScalarType dtype, bool /*non_blocking*/, bool copy) const {
    if (scalar_type() == dtype && !copy) return *this;
    Tensor out;
    TensorIter::elementwise(out, dtype, {*this});
    copy_kernel(out, *this);
    if (auto node = make_node("ToCopyBackward0", {*this})) {
        const ScalarType self_dtype = scalar_type();
        node->set_formula([self_dtype](FunctionNode&, variable_list&& g) -> variable_list {
            return {g[0].to(self_dtype)};
        });
        set_history(out, node, 0);
    }
    return out;
}

Tensor Tensor::to(const TensorOptions& options, bool non_blocking, bool copy) const {
    Tensor r = to(options.dtype_opt().value_or(scalar_type()), non_blocking, copy);
    if (options.requires_grad()) r.requires_grad_(true);
    return r;
}
Tensor Tensor::to(Device, ScalarType dtype, bool non_blocking, bool copy) const { return to(dtype, non_blocking, copy); }
Tensor Tensor::to(Device, bool non_blocking, bool copy) const {
    return copy ? to(scalar_type(), non_blocking, true) : *this;
}
Tensor Tensor::to(const Tensor& other, bool non_blocking, bool copy) const {
    return to(other.scalar_type(), non_blocking, copy);
}

Tensor Tensor::clone() const {
    Tensor out;
    TensorIter::elementwise(out, scalar_type(), {*this});
    copy_kernel(out, *this);
    record_unary(out, *this, "CloneBackward0", [](const Tensor& g) { return g; });
    return out;
}

Tensor Tensor::contiguous() const {
    if (is_contiguous()) return *this;
    Tensor out = empty_tensor(sizes(), scalar_type());
    copy_kernel(out, *this);
    record_unary(out, *this, "CloneBackward0", [](const Tensor& g) { return g; });
    return out;
}

Tensor Tensor::detach() const {
    TensorImpl* impl = unsafeGetTensorImpl();
    return make_tensor(impl->storage(), impl->dtype(), impl->sizes().vec(), impl->strides().vec(),
                       impl->storage_offset(), impl->version_counter());
}

Tensor& Tensor::detach_() const {
    TensorImpl* impl = unsafeGetTensorImpl();
    EMBER_CHECK(!impl->is_view() || !requires_grad(),
                "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) "
                "for training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and "
                "hence detach_() cannot be called on these gradients. To fix this error, please refer to the "
                "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.");
    if (auto* meta = impl->autograd_meta()) {
        meta->grad_fn_.reset();
        meta->requires_grad_ = false;
        meta->output_nr_ = 0;
    }
    return const_cast<Tensor&>(*this);
}

Tensor clone(const Tensor& self) { return self.clone(); }
Tensor detach(const Tensor& self) { return self.detach(); }

}  // namespace ember
