// Nodes, edges, saved variables, AccumulateGrad and history bookkeeping.
#include <cxxabi.h>

#include <atomic>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "../core/tensor_utils.h"
#include "accumulate_grad.h"
#include "ember/autograd.h"
#include "function_node.h"

namespace ember {
namespace autograd {

namespace {
std::atomic<uint64_t> g_sequence_nr{0};
std::atomic<unsigned> g_hook_handle{1};

const char* const kFreedMsg =
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward.";

std::string legacy_type_name(ScalarType t) {
    std::string n(scalar_type_name(t));
    return n + "Tensor";
}

}  // namespace

// "Exp" for "ExpBackward0", as PyTorch names the op in its messages.
std::string op_name(const std::string& node_name) {
    size_t end = node_name.size();
    while (end > 0 && node_name[end - 1] >= '0' && node_name[end - 1] <= '9') --end;
    static const std::string suffix = "Backward";
    if (end >= suffix.size() && node_name.compare(end - suffix.size(), suffix.size(), suffix) == 0) {
        return node_name.substr(0, end - suffix.size());
    }
    return node_name;
}

unsigned next_hook_handle() { return g_hook_handle.fetch_add(1); }

// ---- Node ----------------------------------------------------------------------------------
Node::Node(edge_list next_edges)
    : next_edges_(std::move(next_edges)), sequence_nr_(g_sequence_nr.fetch_add(1)) {}

// Releases the graph below this node iteratively: a long chain of nodes (an unrolled RNN)
// would otherwise be destroyed by a recursion as deep as the graph.
Node::~Node() {
    thread_local bool draining = false;
    thread_local std::vector<std::shared_ptr<Node>> pending;
    for (Edge& e : next_edges_) {
        if (e.function && e.function.use_count() == 1) pending.push_back(std::move(e.function));
    }
    next_edges_.clear();
    if (draining) return;
    draining = true;
    while (!pending.empty()) {
        std::shared_ptr<Node> n = std::move(pending.back());
        pending.pop_back();
        n.reset();  // its destructor queues its own children
    }
    draining = false;
}

std::string Node::name() const { return detail::demangle(typeid(*this).name()); }

uint32_t Node::add_input_metadata(const Tensor& t) {
    input_metadata_.push_back(InputMetadata{t.sizes().vec(), t.scalar_type()});
    return static_cast<uint32_t>(input_metadata_.size() - 1);
}

unsigned Node::add_tensor_pre_hook(uint32_t input_nr, TensorHook hook) {
    const unsigned h = next_hook_handle();
    pre_hooks_.push_back(PreHook{h, input_nr, std::move(hook)});
    return h;
}

bool Node::remove_tensor_pre_hook(unsigned handle) {
    for (auto it = pre_hooks_.begin(); it != pre_hooks_.end(); ++it) {
        if (it->handle == handle) {
            pre_hooks_.erase(it);
            return true;
        }
    }
    return false;
}

void Node::set_retain_grad_hook(uint32_t input_nr, std::weak_ptr<TensorImpl> tensor) {
    for (auto& r : retain_grad_) {
        if (r.first == input_nr) {
            r.second = std::move(tensor);
            return;
        }
    }
    retain_grad_.emplace_back(input_nr, std::move(tensor));
}

variable_list Node::call_tensor_pre_hooks(variable_list grads) {
    for (const PreHook& h : pre_hooks_) {
        if (h.input_nr < grads.size() && grads[h.input_nr].defined()) {
            Tensor r = h.fn(grads[h.input_nr]);
            if (r.defined()) grads[h.input_nr] = std::move(r);
        }
    }
    for (const auto& [nr, weak] : retain_grad_) {
        auto impl = weak.lock();
        if (!impl || nr >= grads.size() || !grads[nr].defined()) continue;
        AutogradMeta& meta = impl->ensure_autograd_meta();
        if (!meta.grad_.defined()) {
            meta.grad_ = grads[nr].clone();
        } else {
            meta.grad_ = meta.grad_ + grads[nr];
        }
    }
    return grads;
}

void Node::call_post_hooks(const variable_list& grad_inputs, const variable_list& grad_outputs) {
    for (const PostHook& h : post_hooks_) h(grad_inputs, grad_outputs);
}

// ---- SavedVariable ---------------------------------------------------------------------------
static Tensor alias_without_history(const Tensor& t) {
    TensorImpl* impl = t.unsafeGetTensorImpl();
    return native::make_tensor(impl->storage(), impl->dtype(), impl->sizes().vec(), impl->strides().vec(),
                               impl->storage_offset(), impl->version_counter());
}

SavedVariable::SavedVariable(const Tensor& t, bool is_output) {
    if (!t.defined()) return;
    was_defined_ = true;
    saved_version_ = t._version();
    requires_grad_ = t.requires_grad();
    is_leaf_ = t.is_leaf();
    output_nr_ = t.output_nr();
    is_output_ = is_output && !is_leaf_;
    if (is_output_) {
        weak_grad_fn_ = t.grad_fn();
        data_ = alias_without_history(t);
    } else {
        data_ = t;
    }
}

void SavedVariable::reset_data() {
    if (!was_defined_) return;
    released_ = true;
    data_.reset();
}

Tensor SavedVariable::unpack(const std::shared_ptr<Node>& saved_for) const {
    if (!was_defined_) return Tensor();
    EMBER_CHECK(!released_, kFreedMsg);
    const uint32_t current = data_._version();
    if (current != saved_version_) {
        std::ostringstream os;
        os << "one of the variables needed for gradient computation has been modified by an inplace "
              "operation: [ember."
           << legacy_type_name(data_.scalar_type()) << " " << data_.sizes() << "]";
        std::shared_ptr<Node> fn = is_output_ ? weak_grad_fn_.lock() : (data_.defined() ? data_.grad_fn() : nullptr);
        if (is_output_ && !fn) fn = saved_for;
        if (fn) os << ", which is output " << output_nr_ << " of " << op_name(fn->name()) << ",";
        os << " is at version " << current << "; expected version " << saved_version_
           << " instead. Hint: enable anomaly detection to find the operation that failed to compute "
              "its gradient, with ember.autograd.set_detect_anomaly(True, check_nan=False).";
        EMBER_ERROR(os.str());
    }
    if (!is_output_) return data_;
    Tensor r = alias_without_history(data_);
    if (requires_grad_) {
        std::shared_ptr<Node> fn = saved_for ? saved_for : weak_grad_fn_.lock();
        if (fn) {
            AutogradMeta& m = r.unsafeGetTensorImpl()->ensure_autograd_meta();
            m.grad_fn_ = std::move(fn);
            m.output_nr_ = output_nr_;
        }
    }
    return r;
}

// ---- AccumulateGrad --------------------------------------------------------------------------
AccumulateGrad::AccumulateGrad(Tensor variable) : variable_(std::move(variable)) {
    sequence_nr_ = std::numeric_limits<uint64_t>::max();
}

variable_list AccumulateGrad::call_tensor_pre_hooks(variable_list grads) {
    AutogradMeta* meta = variable_.unsafeGetTensorImpl()->autograd_meta();
    if (meta && !grads.empty()) {
        // copy: a hook may register or remove hooks
        auto hooks = meta->hooks_;
        for (auto& [handle, fn] : hooks) {
            (void)handle;
            if (!grads[0].defined()) break;
            Tensor r = fn(grads[0]);
            if (r.defined()) grads[0] = std::move(r);
        }
    }
    return Node::call_tensor_pre_hooks(std::move(grads));
}

void AccumulateGrad::accumulate(const Tensor& variable, Tensor new_grad) {
    AutogradMeta& meta = variable.unsafeGetTensorImpl()->ensure_autograd_meta();
    // threads running backward through a shared leaf add into its grad one at a time
    std::lock_guard<std::mutex> lock(meta.grad_mutex_);
    if (!meta.grad_.defined()) {
        if (!GradMode::is_enabled()) {
            // steal the buffer when nothing else can see it, else copy
            // (a view is stolen too when nothing else holds its base: the gradient of a
            // weight used as w.t() arrives as the transpose of a fresh transposed result)
            TensorImpl* gi = new_grad.unsafeGetTensorImpl();
            const bool sole_owner =
                new_grad.use_count() == 1 &&
                (gi->is_view() ? gi->base().use_count() == 1 && gi->storage().use_count() == 2
                               : gi->storage().use_count() == 1);
            if (sole_owner && gi->is_contiguous() && variable.is_contiguous()) {
                meta.grad_ = new_grad.detach();
            } else {
                meta.grad_ = new_grad.clone();
            }
        } else {
            meta.grad_ = new_grad;
        }
    } else if (!GradMode::is_enabled()) {
        meta.grad_.add_(new_grad);
    } else {
        meta.grad_ = meta.grad_ + new_grad;
    }
}

variable_list AccumulateGrad::apply(variable_list&& grads) {
    if (grads.empty() || !grads[0].defined()) return {};
    accumulate(variable_, std::move(grads[0]));
    return {};
}

// ---- edges and history -----------------------------------------------------------------------
static void maybe_regenerate_view_grad_fn(const Tensor& t);

Edge gradient_edge(const Tensor& t) {
    if (!t.defined()) return Edge();
    maybe_regenerate_view_grad_fn(t);
    AutogradMeta* meta = t.unsafeGetTensorImpl()->autograd_meta();
    if (!meta) return Edge();
    if (meta->grad_fn_) return Edge(meta->grad_fn_, meta->output_nr_);
    if (meta->requires_grad_) return Edge(grad_accumulator(t), 0);
    return Edge();
}

edge_list collect_next_edges(const variable_list& tensors) {
    edge_list edges;
    edges.reserve(tensors.size());
    for (const Tensor& t : tensors) edges.push_back(gradient_edge(t));
    return edges;
}

bool any_variable_requires_grad(const variable_list& tensors) {
    for (const Tensor& t : tensors) {
        if (t.defined() && t.requires_grad()) return true;
    }
    return false;
}

bool any_requires_grad(std::initializer_list<Tensor> tensors) {
    for (const Tensor& t : tensors) {
        if (t.defined() && t.requires_grad()) return true;
    }
    return false;
}

void set_history(const Tensor& t, const std::shared_ptr<Node>& fn, uint32_t output_nr) {
    TensorImpl* impl = t.unsafeGetTensorImpl();
    // only floating point outputs are differentiable (indices, masks never require grad)
    if (!is_floating_point(impl->dtype())) return;
    AutogradMeta& meta = impl->ensure_autograd_meta();
    meta.grad_fn_ = fn;
    meta.output_nr_ = output_nr;
    if (fn) {
        while (fn->num_inputs() < output_nr) fn->add_input_metadata(InputMetadata{});
        if (fn->num_inputs() == output_nr) fn->add_input_metadata(t);
    }
    if (impl->is_view()) impl->set_view_attr_version(impl->version());
}

std::shared_ptr<Node> grad_accumulator(const Tensor& leaf) {
    AutogradMeta& meta = leaf.unsafeGetTensorImpl()->ensure_autograd_meta();
    std::lock_guard<std::mutex> lock(meta.accumulator_mutex_);
    if (auto p = meta.grad_accumulator_.lock()) return p;
    auto acc = std::make_shared<AccumulateGrad>(Tensor(leaf.getIntrusivePtr()));
    acc->add_input_metadata(leaf);
    meta.grad_accumulator_ = acc;
    return acc;
}

std::shared_ptr<FunctionNode> make_node(const char* name, std::initializer_list<Tensor> inputs) {
    if (!GradMode::is_enabled()) return nullptr;
    bool any = false;
    for (const Tensor& t : inputs) any = any || (t.defined() && t.requires_grad());
    if (!any) return nullptr;
    edge_list edges;
    edges.reserve(inputs.size());
    for (const Tensor& t : inputs) edges.push_back(gradient_edge(t));
    return std::make_shared<FunctionNode>(name, std::move(edges));
}

std::shared_ptr<FunctionNode> make_node(const char* name, const variable_list& inputs) {
    if (!GradMode::is_enabled() || !any_variable_requires_grad(inputs)) return nullptr;
    return std::make_shared<FunctionNode>(name, collect_next_edges(inputs));
}

// ---- views and in-place ops ------------------------------------------------------------------
struct ViewGeometry {
    std::vector<int64_t> sizes, strides;
    int64_t offset = 0;
    ScalarType dtype = kFloat;
    explicit ViewGeometry(const Tensor& t)
        : sizes(t.sizes().vec()), strides(t.strides().vec()), offset(t.storage_offset()), dtype(t.scalar_type()) {}
};

// A zero tensor laid out as `base` (same strides), so a view's geometry applies to it.
static Tensor zeros_like_layout(const ViewGeometry& base) {
    Tensor r = native::empty_strided_tensor(base.sizes, base.strides, base.dtype);
    NoGradGuard g;
    r.zero_();
    return r;
}

// The gradient of the base for the gradient g of a view (geometry `view`) of `base`:
// zeros with g added into the view's elements (overlapping elements accumulate).
static Tensor as_strided_backward(const Tensor& g, const ViewGeometry& base, const ViewGeometry& view) {
    Tensor result = zeros_like_layout(base);
    // the view's offset is in storage elements; result starts at offset 0 of its storage
    Tensor slot = result.as_strided(view.sizes, view.strides, view.offset - base.offset);
    slot.add_(g);
    return result;
}

static std::shared_ptr<Node> make_as_strided_node(const Tensor& view, const Tensor& base) {
    auto node = std::make_shared<FunctionNode>("AsStridedBackward0", edge_list{gradient_edge(base)});
    ViewGeometry bg(base), vg(view);
    node->set_formula([bg, vg](FunctionNode&, variable_list&& g) -> variable_list {
        if (!g[0].defined()) return {Tensor()};
        return {as_strided_backward(g[0], bg, vg)};
    });
    return node;
}

static void maybe_regenerate_view_grad_fn(const Tensor& t) {
    TensorImpl* impl = t.unsafeGetTensorImpl();
    if (!impl->is_view()) return;
    AutogradMeta* meta = impl->autograd_meta();
    if (!meta || !meta->grad_fn_) return;
    const uint32_t current = impl->version();
    if (impl->view_attr_version() == current) return;
    Tensor base(impl->base());
    impl->set_view_attr_version(current);
    if (!base.requires_grad()) return;
    auto node = make_as_strided_node(t, base);
    node->add_input_metadata(t);
    meta->grad_fn_ = node;
    meta->output_nr_ = 0;
}

void rebase_history(const Tensor& self, const std::shared_ptr<Node>& fn, uint32_t output_nr) {
    TensorImpl* impl = self.unsafeGetTensorImpl();
    if (!impl->is_view()) {
        AutogradMeta& meta = impl->ensure_autograd_meta();
        meta.grad_fn_ = fn;
        meta.output_nr_ = output_nr;
        return;
    }
    // self is a view of base: base becomes CopySlices(old base, result), and self a view of it
    Tensor base(impl->base());
    auto copy_slices = std::make_shared<FunctionNode>(
        "CopySlices", edge_list{gradient_edge(base), fn ? Edge(fn, output_nr) : Edge()});
    ViewGeometry bg(base), vg(self);
    copy_slices->set_formula([bg, vg](FunctionNode& n, variable_list&& g) -> variable_list {
        if (!g[0].defined()) return {Tensor(), Tensor()};
        // the gradient laid out as the base, so the view's geometry applies to it
        Tensor gb = native::empty_strided_tensor(bg.sizes, bg.strides, bg.dtype);
        gb.copy_(g[0]);
        const int64_t rel = vg.offset - bg.offset;
        Tensor grad_result = n.needs(1) ? gb.as_strided(vg.sizes, vg.strides, rel).clone() : Tensor();
        Tensor grad_base;
        if (n.needs(0)) {
            // the overwritten elements get no gradient
            Tensor mask = native::empty_strided_tensor(bg.sizes, bg.strides, bg.dtype);
            {
                NoGradGuard guard;
                mask.fill_(1);
                mask.as_strided(vg.sizes, vg.strides, rel).fill_(0);
            }
            grad_base = gb * mask;
        }
        return {grad_base, grad_result};
    });
    {
        AutogradMeta& bmeta = base.unsafeGetTensorImpl()->ensure_autograd_meta();
        bmeta.grad_fn_ = copy_slices;
        bmeta.output_nr_ = 0;
        copy_slices->add_input_metadata(base);
    }
    auto view_node = make_as_strided_node(self, base);
    view_node->add_input_metadata(self);
    AutogradMeta& meta = impl->ensure_autograd_meta();
    meta.grad_fn_ = view_node;
    meta.output_nr_ = 0;
    impl->set_view_attr_version(impl->version());
}

}  // namespace autograd

namespace native {

bool compute_requires_grad(std::initializer_list<const Tensor*> tensors) {
    if (!GradMode::is_enabled()) return false;
    for (const Tensor* t : tensors) {
        if (t->defined() && t->requires_grad()) return true;
    }
    return false;
}

void check_inplace(const Tensor& self) {
    if (!GradMode::is_enabled()) return;
    TensorImpl* impl = self.unsafeGetTensorImpl();
    const autograd::AutogradMeta* meta = impl->autograd_meta();
    if (!impl->is_view()) {
        EMBER_CHECK(!(meta && meta->requires_grad_ && !meta->grad_fn_),
                    "a leaf Variable that requires grad is being used in an in-place operation.");
        return;
    }
    const TensorImpl* base = impl->base().get();
    const autograd::AutogradMeta* bmeta = base->autograd_meta();
    const bool base_requires_grad = bmeta && (bmeta->requires_grad_ || bmeta->grad_fn_);
    EMBER_CHECK(!(bmeta && bmeta->requires_grad_ && !bmeta->grad_fn_),
                "a view of a leaf Variable that requires grad is being used in an in-place operation.");
    const auto cm = static_cast<autograd::CreationMeta>(impl->view_creation_meta());
    if (cm == autograd::CreationMeta::MULTI_OUTPUT_NODE && base_requires_grad) {
        std::string fn_name = meta && meta->grad_fn_ ? meta->grad_fn_->name() : std::string("a function");
        fn_name = autograd::op_name(fn_name);
        EMBER_ERROR("Output ", meta ? meta->output_nr_ : 0, " of ", fn_name,
                    " is a view and is being modified inplace. This view is the output of a function that "
                    "returns multiple views. Such functions do not allow the output views to be modified "
                    "inplace. You should replace the inplace operation by an out-of-place one.");
    }
    if (cm == autograd::CreationMeta::NO_GRAD_MODE && base_requires_grad) {
        EMBER_ERROR("A view was created in no_grad mode and is being modified inplace with grad mode "
                    "enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You "
                    "can clarify your code by moving both the view and the inplace either both inside the "
                    "no_grad block (if you don't want the inplace to be tracked) or both outside (if you "
                    "want the inplace to be tracked).");
    }
}

}  // namespace native

namespace autograd {
namespace detail {

std::string demangle(const char* name) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> res(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
    return status == 0 && res ? std::string(res.get()) : std::string(name);
}

}  // namespace detail
}  // namespace autograd
}  // namespace ember
