// The basic Tensor methods: metadata, data access, autograd accessors.
#include "ember/tensor.h"

#include <iostream>

#include "../autograd/accumulate_grad.h"
#include "op_common.h"

namespace ember {

using namespace native;

bool Tensor::is_alias_of(const Tensor& other) const {
    return storage().is_alias_of(other.storage());
}

int64_t Tensor::size(int64_t d) const {
    const int64_t w = wrap_dim(d, dim(), /*wrap_scalar=*/false);
    return impl().sizes()[static_cast<size_t>(w)];
}

int64_t Tensor::stride(int64_t d) const {
    const int64_t w = wrap_dim(d, dim(), /*wrap_scalar=*/false);
    return impl().strides()[static_cast<size_t>(w)];
}

bool Tensor::is_signed() const {
    const ScalarType t = scalar_type();
    return t != kByte && t != kBool;
}

Tensor Tensor::_base() const {
    return impl().is_view() ? Tensor(impl().base()) : Tensor();
}

std::string Tensor::toString() const { return std::string(cpu_type_string(scalar_type())); }

TensorOptions Tensor::options() const { return TensorOptions().dtype(scalar_type()); }

template <typename T>
T* Tensor::data_ptr() const {
    EMBER_CHECK(scalar_type() == scalar_type_of<T>(), "expected scalar type ", scalar_type_of<T>(),
                " but found ", scalar_type());
    return static_cast<T*>(impl().data());
}
template uint8_t* Tensor::data_ptr<uint8_t>() const;
template int8_t* Tensor::data_ptr<int8_t>() const;
template int16_t* Tensor::data_ptr<int16_t>() const;
template int32_t* Tensor::data_ptr<int32_t>() const;
template int64_t* Tensor::data_ptr<int64_t>() const;
template Half* Tensor::data_ptr<Half>() const;
template float* Tensor::data_ptr<float>() const;
template double* Tensor::data_ptr<double>() const;
template bool* Tensor::data_ptr<bool>() const;
template std::complex<float>* Tensor::data_ptr<std::complex<float>>() const;
template std::complex<double>* Tensor::data_ptr<std::complex<double>>() const;

Scalar Tensor::item() const {
    EMBER_CHECK(numel() == 1, "a Tensor with ", numel(), " elements cannot be converted to Scalar");
    return dispatch_all(scalar_type(), "item", [&](auto tag) -> Scalar {
        using T = typename decltype(tag)::type;
        return Scalar(*static_cast<const T*>(impl().data()));
    });
}

// ---- autograd accessors --------------------------------------------------------------------
bool Tensor::requires_grad() const {
    const autograd::AutogradMeta* meta = impl().autograd_meta();
    if (!meta) return false;
    if (meta->requires_grad_) return true;
    return static_cast<bool>(grad_fn());
}

Tensor& Tensor::requires_grad_(bool requires_grad) const {
    TensorImpl* impl = unsafeGetTensorImpl();
    EMBER_CHECK(impl, "Expected a proper Tensor but got None (or an undefined Tensor in C++)");
    if (!is_leaf()) {
        EMBER_CHECK(requires_grad,
                    "you can only change requires_grad flags of leaf variables. If you want to use a computed "
                    "variable in a subgraph that doesn't require differentiation use var_no_grad = "
                    "var.detach().");
        return const_cast<Tensor&>(*this);
    }
    EMBER_CHECK(!requires_grad || is_floating_point(), "only Tensors of floating point dtype can require gradients");
    impl->ensure_autograd_meta().requires_grad_ = requires_grad;
    return const_cast<Tensor&>(*this);
}

const Tensor& Tensor::grad() const {
    static const Tensor undefined;
    const autograd::AutogradMeta* meta = impl().autograd_meta();
    return meta ? meta->grad_ : undefined;
}

Tensor& Tensor::mutable_grad() const { return unsafeGetTensorImpl()->ensure_autograd_meta().grad_; }

void Tensor::set_grad(const Tensor& grad) const {
    if (grad.defined()) {
        EMBER_CHECK(grad.sizes() == sizes(), "assigned grad has data of a different size");
        EMBER_CHECK(grad.scalar_type() == scalar_type(), "assigned grad has data of a different type");
    }
    unsafeGetTensorImpl()->ensure_autograd_meta().grad_ = grad;
}

const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const {
    static const std::shared_ptr<autograd::Node> none;
    if (!impl().autograd_meta()) return none;
    // a view whose base was modified in place gets a fresh grad_fn (gradient_edge does it)
    if (impl().is_view()) (void)autograd::gradient_edge(*this);
    return impl().autograd_meta()->grad_fn_;
}

bool Tensor::is_leaf() const { return !grad_fn(); }

uint32_t Tensor::output_nr() const {
    const autograd::AutogradMeta* meta = impl().autograd_meta();
    return meta ? meta->output_nr_ : 0;
}

void Tensor::retain_grad() const {
    EMBER_CHECK(requires_grad(), "can't retain_grad on Tensor that has requires_grad=False");
    if (is_leaf()) return;  // leaves keep their grad anyway
    autograd::AutogradMeta& meta = unsafeGetTensorImpl()->ensure_autograd_meta();
    if (meta.retains_grad_) return;
    meta.grad_fn_->set_retain_grad_hook(meta.output_nr_, std::weak_ptr<TensorImpl>(getIntrusivePtr()));
    meta.retains_grad_ = true;
}

bool Tensor::retains_grad() const {
    const autograd::AutogradMeta* meta = impl().autograd_meta();
    return meta && meta->retains_grad_;
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph,
                      std::optional<std::vector<Tensor>> inputs) const {
    std::vector<Tensor> grads;
    if (gradient.defined()) grads.push_back(gradient);
    autograd::backward({*this}, grads, retain_graph, create_graph, inputs.value_or(std::vector<Tensor>{}));
}

unsigned Tensor::_register_hook(std::function<Tensor(const Tensor&)> hook) const {
    EMBER_CHECK(requires_grad(), "cannot register a hook on a tensor that doesn't require gradient");
    autograd::AutogradMeta& meta = unsafeGetTensorImpl()->ensure_autograd_meta();
    if (!meta.grad_fn_) {
        const unsigned h = autograd::next_hook_handle();
        meta.hooks_.emplace_back(h, std::move(hook));
        return h;
    }
    return meta.grad_fn_->add_tensor_pre_hook(meta.output_nr_, std::move(hook));
}

void Tensor::remove_hook(unsigned handle) const {
    autograd::AutogradMeta* meta = unsafeGetTensorImpl()->autograd_meta();
    if (!meta) return;
    for (auto it = meta->hooks_.begin(); it != meta->hooks_.end(); ++it) {
        if (it->first == handle) {
            meta->hooks_.erase(it);
            return;
        }
    }
    if (meta->grad_fn_) meta->grad_fn_->remove_tensor_pre_hook(handle);
}

void Tensor::print() const { std::cout << *this << std::endl; }

}  // namespace ember
