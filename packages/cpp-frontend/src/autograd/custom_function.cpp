// AutogradContext and the output wrapping of ember::autograd::Function<T>.
#include <sstream>

#include "../core/tensor_utils.h"
#include "ember/autograd.h"
#include "function_node.h"

namespace ember {
namespace autograd {

namespace {
bool contains(const std::vector<const TensorImpl*>& v, const Tensor& t) {
    for (const TensorImpl* p : v) {
        if (p == t.unsafeGetTensorImpl()) return true;
    }
    return false;
}

Tensor alias_of(const Tensor& t) {
    TensorImpl* impl = t.unsafeGetTensorImpl();
    return native::make_view(t, impl->sizes().vec(), impl->strides().vec(), impl->storage_offset());
}
}  // namespace

variable_list AutogradContext::get_saved_variables() const {
    EMBER_CHECK(!saved_released_,
                "Trying to backward through the graph a second time (or directly access saved tensors after "
                "they have already been freed). Saved intermediate values of the graph are freed when you call "
                ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
                "graph a second time or if you need to access saved tensors after calling backward.");
    if (saved_.empty() && !to_save_.empty()) return to_save_;  // not recorded (no grad needed)
    auto fn = grad_fn_.lock();
    variable_list out;
    out.reserve(saved_.size());
    for (const SavedVariable& s : saved_) out.push_back(s.unpack(fn));
    return out;
}

void AutogradContext::mark_dirty(const variable_list& inputs) {
    for (const Tensor& t : inputs) {
        if (t.defined()) dirty_.push_back(t.unsafeGetTensorImpl());
    }
}

void AutogradContext::mark_non_differentiable(const variable_list& outputs) {
    for (const Tensor& t : outputs) {
        if (t.defined()) non_differentiable_.push_back(t.unsafeGetTensorImpl());
    }
}

bool AutogradContext::needs_input_grad(size_t index) const {
    auto fn = grad_fn_.lock();
    return fn && fn->should_compute_output(index);
}

bool AutogradContext::is_dirty(const Tensor& t) const { return contains(dirty_, t); }
bool AutogradContext::is_non_differentiable(const Tensor& t) const { return contains(non_differentiable_, t); }

void AutogradContext::save_variables(const variable_list& outputs) {
    saved_.clear();
    for (const Tensor& t : to_save_) {
        bool is_output = false;
        for (const Tensor& o : outputs) is_output = is_output || (t.defined() && o.is_same(t));
        saved_.emplace_back(t, is_output);
    }
    to_save_.clear();
}

namespace detail {

variable_list wrap_outputs(const variable_list& inputs, variable_list outputs, AutogradContext& ctx,
                           const std::shared_ptr<Node>& node, bool is_executable) {
    for (size_t i = 0; i < outputs.size(); ++i) {
        Tensor& out = outputs[i];
        const auto nr = static_cast<uint32_t>(i);
        if (!out.defined()) {
            if (is_executable) node->add_input_metadata(InputMetadata{});
            continue;
        }
        bool is_input = false;
        for (const Tensor& in : inputs) is_input = is_input || (in.defined() && in.is_same(out));
        const bool dirty = ctx.is_dirty(out);
        if (!is_executable) {
            if (is_input && !dirty) out = alias_of(out);
            continue;
        }
        if (ctx.is_non_differentiable(out)) {
            if (is_input && !dirty) out = alias_of(out);
            node->add_input_metadata(out);
            continue;
        }
        if (dirty) {
            native::check_inplace(out);
            node->add_input_metadata(out);
            rebase_history(out, node, nr);
        } else {
            if (is_input) out = alias_of(out);
            set_history(out, node, nr);
        }
    }
    return outputs;
}

void throw_incorrect_number_of_gradients(const std::string& name, size_t expected, size_t got) {
    EMBER_ERROR("function ", name, " returned an incorrect number of gradients (expected ", expected, ", got ", got,
                ")");
}

void throw_gradient_for_non_tensor(const std::string& name, size_t position) {
    EMBER_ERROR("function ", name, " returned a gradient different that is defined at position ", position,
                ", but the corresponding forward input was not a Variable");
}

}  // namespace detail
}  // namespace autograd
}  // namespace ember
