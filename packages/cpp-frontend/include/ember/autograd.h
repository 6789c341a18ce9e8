// Reverse-mode automatic differentiation (libtorch's torch::autograd).
//
// Every op that gets an input requiring grad (while grad mode is on) records a Node (its
// grad_fn) with edges to the nodes of its inputs; leaves get an AccumulateGrad node that
// adds into .grad(). backward()/grad() run the graph from the outputs in dependency order,
// each node once, and free the saved tensors unless retain_graph. With create_graph the
// backward formulas themselves are recorded, so gradients can be differentiated again.
//
// Grad mode is thread-local (NoGradGuard / AutoGradMode affect the current thread only).
//
// Custom functions, as in libtorch:
//
//   struct MulConst : public ember::autograd::Function<MulConst> {
//       static ember::Tensor forward(ember::autograd::AutogradContext* ctx,
//                                    ember::Tensor x, double c) {
//           ctx->saved_data["c"] = c;
//           return x * c;
//       }
//       static ember::autograd::variable_list backward(ember::autograd::AutogradContext* ctx,
//                                                      ember::autograd::variable_list g) {
//           return {g[0] * ctx->saved_data["c"].toDouble(), ember::Tensor()};
//       }
//   };
//   ember::Tensor y = MulConst::apply(x, 2.0);
#pragma once

#include "export.h"
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "error.h"
#include "ivalue.h"
#include "tensor.h"

namespace ember {

// ---- grad mode ---------------------------------------------------------------------------
struct EMBER_API GradMode {
    static bool is_enabled() noexcept;
    static void set_enabled(bool enabled) noexcept;
};

// Sets grad mode for its scope (restores the previous mode on exit).
class AutoGradMode {
public:
    explicit AutoGradMode(bool enabled) : prev_(GradMode::is_enabled()) {
        GradMode::set_enabled(enabled);
    }
    ~AutoGradMode() { GradMode::set_enabled(prev_); }
    AutoGradMode(const AutoGradMode&) = delete;
    AutoGradMode& operator=(const AutoGradMode&) = delete;

private:
    bool prev_;
};

// Disables gradient recording in its scope (torch::NoGradGuard).
class NoGradGuard : public AutoGradMode {
public:
    NoGradGuard() : AutoGradMode(false) {}
};

namespace autograd {

using variable_list = std::vector<Tensor>;
using tensor_list = std::vector<Tensor>;  // libtorch's other name for it
using Variable = Tensor;
class Node;

// An input of a node's backward: (the node, which of its inputs).
struct Edge {
    Edge() = default;
    Edge(std::shared_ptr<Node> fn, uint32_t nr) : function(std::move(fn)), input_nr(nr) {}
    bool is_valid() const noexcept { return static_cast<bool>(function); }
    std::shared_ptr<Node> function;
    uint32_t input_nr = 0;
};
using edge_list = std::vector<Edge>;

// The shape and dtype of a node's input (the forward output it is the gradient of).
struct InputMetadata {
    std::vector<int64_t> shape;
    ScalarType dtype = kFloat;
};

using TensorHook = std::function<Tensor(const Tensor&)>;

// A backward function in the graph (libtorch's torch::autograd::Node).
class EMBER_API Node : public std::enable_shared_from_this<Node> {
public:
    explicit Node(edge_list next_edges = {});
    virtual ~Node();
    Node(const Node&) = delete;
    Node& operator=(const Node&) = delete;

    // Gradients of the forward outputs in, gradients of the forward inputs out.
    virtual variable_list apply(variable_list&& grads) = 0;
    variable_list operator()(variable_list&& grads) { return apply(std::move(grads)); }
    // PyTorch's name: "MulBackward0", "AccumulateGrad", the class name for custom functions.
    virtual std::string name() const;

    const edge_list& next_edges() const noexcept { return next_edges_; }
    const Edge& next_edge(size_t i) const { return next_edges_.at(i); }
    uint32_t num_outputs() const noexcept { return static_cast<uint32_t>(next_edges_.size()); }
    void set_next_edges(edge_list edges) { next_edges_ = std::move(edges); }
    void add_next_edge(Edge edge) { next_edges_.push_back(std::move(edge)); }
    // Whether output i (the gradient of forward input i) is needed.
    bool should_compute_output(size_t i) const {
        return i < next_edges_.size() && next_edges_[i].is_valid();
    }

    uint32_t num_inputs() const noexcept { return static_cast<uint32_t>(input_metadata_.size()); }
    uint32_t add_input_metadata(const Tensor& t);
    void add_input_metadata(InputMetadata meta) { input_metadata_.push_back(std::move(meta)); }
    const InputMetadata& input_metadata(size_t i) const { return input_metadata_.at(i); }
    void clear_input_metadata() { input_metadata_.clear(); }

    // Ordering: later nodes (higher numbers) run first when several are ready.
    uint64_t sequence_nr() const noexcept { return sequence_nr_; }

    // Frees saved tensors (called after backward unless retain_graph).
    virtual void release_variables() {}

    // Hooks on the gradient of input input_nr (run before apply; a defined result replaces
    // the gradient). Tensor::register_hook on a non-leaf registers here.
    unsigned add_tensor_pre_hook(uint32_t input_nr, TensorHook hook);
    bool remove_tensor_pre_hook(unsigned handle);
    // retain_grad(): stores the gradient of input input_nr into the tensor's .grad().
    void set_retain_grad_hook(uint32_t input_nr, std::weak_ptr<TensorImpl> tensor);
    // Hooks run after apply with (grad_inputs, grad_outputs), as Node::register_hook.
    using PostHook = std::function<void(const variable_list&, const variable_list&)>;
    void add_post_hook(PostHook hook) { post_hooks_.push_back(std::move(hook)); }

    // Used by the engine (AccumulateGrad adds the leaf's own hooks).
    virtual variable_list call_tensor_pre_hooks(variable_list grads);
    void call_post_hooks(const variable_list& grad_inputs, const variable_list& grad_outputs);
    bool has_post_hooks() const noexcept { return !post_hooks_.empty(); }

protected:
    edge_list next_edges_;
    std::vector<InputMetadata> input_metadata_;
    uint64_t sequence_nr_;

private:
    struct PreHook {
        unsigned handle;
        uint32_t input_nr;
        TensorHook fn;
    };
    std::vector<PreHook> pre_hooks_;
    std::vector<std::pair<uint32_t, std::weak_ptr<TensorImpl>>> retain_grad_;
    std::vector<PostHook> post_hooks_;
};

// Why a view was made (PyTorch's CreationMeta): in-place ops on some views are errors.
enum class CreationMeta : uint8_t { DEFAULT, MULTI_OUTPUT_NODE, NO_GRAD_MODE, IN_CUSTOM_FUNCTION };

// What autograd keeps on a tensor (libtorch's AutogradMeta).
struct AutogradMeta {
    Tensor grad_;
    std::shared_ptr<Node> grad_fn_;
    std::weak_ptr<Node> grad_accumulator_;
    std::mutex accumulator_mutex_;  // creating the grad accumulator
    std::mutex grad_mutex_;         // adding into grad_ (AccumulateGrad)
    uint32_t output_nr_ = 0;
    bool requires_grad_ = false;
    bool retains_grad_ = false;
    CreationMeta creation_meta_ = CreationMeta::DEFAULT;
    // hooks of a leaf (run by its AccumulateGrad before accumulation)
    std::vector<std::pair<unsigned, TensorHook>> hooks_;
};

// A tensor saved for backward. Records the version counter at save time (a later in-place
// change is reported at backward with PyTorch's message), and for a node's own output keeps
// the data without the grad_fn (no reference cycle), rebuilding it on unpack.
class EMBER_API SavedVariable {
public:
    SavedVariable() = default;
    SavedVariable(const Tensor& t, bool is_output);
    // The saved tensor; saved_for is the node unpacking (for an output's grad_fn).
    Tensor unpack(const std::shared_ptr<Node>& saved_for = nullptr) const;
    void reset_data();
    bool defined() const noexcept { return was_defined_; }

private:
    Tensor data_;                  // the tensor itself, or (outputs) an alias without history
    uint32_t saved_version_ = 0;
    uint32_t output_nr_ = 0;
    bool was_defined_ = false;
    bool is_output_ = false;
    bool is_leaf_ = false;
    bool requires_grad_ = false;
    bool released_ = false;
    std::weak_ptr<Node> weak_grad_fn_;  // outputs: the node that produced it
};

// ---- running backward --------------------------------------------------------------------
// Computes the gradients of tensors (scalars unless grad_tensors are given) and accumulates
// them into the leaves' .grad() (or only those in inputs, when given).
EMBER_API void backward(const variable_list& tensors, const variable_list& grad_tensors = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
              const variable_list& inputs = {});
// Returns the gradients of outputs w.r.t. inputs (no .grad() accumulation). An input that
// outputs do not depend on is an error unless allow_unused (then its gradient is undefined).
EMBER_API variable_list grad(const variable_list& outputs, const variable_list& inputs,
                   const variable_list& grad_outputs = {}, std::optional<bool> retain_graph = std::nullopt,
                   bool create_graph = false, bool allow_unused = false);

// ---- helpers for ops and custom nodes ----------------------------------------------------
// (grad_fn, output_nr) for a non-leaf; (grad accumulator, 0) for a leaf requiring grad;
// an invalid edge otherwise.
EMBER_API Edge gradient_edge(const Tensor& t);
EMBER_API edge_list collect_next_edges(const variable_list& tensors);
// Whether any of the tensors requires grad.
EMBER_API bool any_variable_requires_grad(const variable_list& tensors);
// Makes t (a fresh op output) the output output_nr of fn.
EMBER_API void set_history(const Tensor& t, const std::shared_ptr<Node>& fn, uint32_t output_nr);
// The AccumulateGrad node of a leaf (created on demand, held weakly by the leaf).
EMBER_API std::shared_ptr<Node> grad_accumulator(const Tensor& leaf);

// ---- custom functions --------------------------------------------------------------------
class EMBER_API AutogradContext {
public:
    AutogradContext() = default;
    AutogradContext(const AutogradContext&) = delete;
    AutogradContext& operator=(const AutogradContext&) = delete;

    // Values kept for backward (ints, doubles, bools, strings, tensors, ...).
    std::unordered_map<std::string, IValue> saved_data;

    void save_for_backward(variable_list to_save) { to_save_ = std::move(to_save); }
    // The tensors saved by save_for_backward (checked against in-place modification).
    variable_list get_saved_variables() const;
    // Inputs modified in place by forward (returned as outputs).
    void mark_dirty(const variable_list& inputs);
    // Outputs that are not differentiable (no grad_fn, no gradient flows back).
    void mark_non_differentiable(const variable_list& outputs);
    // Whether undefined output gradients are replaced by zeros before backward (default true).
    void set_materialize_grads(bool value) { materialize_grads_ = value; }
    // Whether the gradient of the index-th tensor input is needed.
    bool needs_input_grad(size_t index) const;

    // Used by Function<T>::apply and CppNode<T>.
    void save_variables(const variable_list& outputs);
    bool materialize_grads() const noexcept { return materialize_grads_; }
    bool is_dirty(const Tensor& t) const;
    bool is_non_differentiable(const Tensor& t) const;
    void set_grad_fn(const std::weak_ptr<Node>& fn) { grad_fn_ = fn; }
    void release() {
        saved_.clear();
        saved_released_ = true;
    }

private:
    variable_list to_save_;
    std::vector<SavedVariable> saved_;
    bool saved_released_ = false;
    std::vector<const TensorImpl*> dirty_;
    std::vector<const TensorImpl*> non_differentiable_;
    bool materialize_grads_ = true;
    std::weak_ptr<Node> grad_fn_;
};

namespace detail {
EMBER_API std::string demangle(const char* name);
// Applies the output wrapping of a custom function: history, dirty inputs, non-differentiable
// outputs. is_executable: whether any input requires grad in grad mode.
EMBER_API variable_list wrap_outputs(const variable_list& inputs, variable_list outputs,
                           AutogradContext& ctx, const std::shared_ptr<Node>& node,
                           bool is_executable);
[[noreturn]] EMBER_API void throw_incorrect_number_of_gradients(const std::string& name, size_t expected,
                                                     size_t got);
[[noreturn]] EMBER_API void throw_gradient_for_non_tensor(const std::string& name, size_t position);

struct ExtractVariables {
    std::vector<bool>& is_var;
    variable_list& list;
    void operator()(const Tensor& t) {
        is_var.push_back(true);
        list.push_back(t);
    }
    void operator()(const std::optional<Tensor>& t) {
        is_var.push_back(true);
        list.push_back(t.value_or(Tensor()));
    }
    void operator()(const std::vector<Tensor>& ts) {
        for (const Tensor& t : ts) (*this)(t);
    }
    void operator()(TensorList ts) {
        for (const Tensor& t : ts) (*this)(t);
    }
    template <typename T>
    void operator()(const T&) {
        is_var.push_back(false);
    }
};

template <typename R>
R to_output_type(variable_list& outputs);
template <>
inline Tensor to_output_type<Tensor>(variable_list& outputs) {
    return outputs.at(0);
}
template <>
inline variable_list to_output_type<variable_list>(variable_list& outputs) {
    return outputs;
}
}  // namespace detail

template <class T>
class CppNode : public Node {
public:
    variable_list apply(variable_list&& inputs) override {
        variable_list backward_inputs;
        backward_inputs.reserve(inputs.size());
        for (size_t i = 0; i < inputs.size(); ++i) {
            if (inputs[i].defined() || !ctx_.materialize_grads()) {
                backward_inputs.push_back(std::move(inputs[i]));
            } else {
                const InputMetadata& m = input_metadata(i);
                backward_inputs.push_back(zeros(m.shape, m.dtype));
            }
        }
        std::lock_guard<std::mutex> lock(mutex_);
        variable_list outputs = T::backward(&ctx_, backward_inputs);
        const size_t num_forward_inputs = is_variable_input_.size();
        if (outputs.size() > num_forward_inputs) {
            bool all_undefined = true;
            for (size_t i = num_forward_inputs; i < outputs.size(); ++i) {
                all_undefined = all_undefined && !outputs[i].defined();
            }
            if (all_undefined) outputs.resize(num_forward_inputs);
        }
        if (outputs.size() != num_forward_inputs) {
            detail::throw_incorrect_number_of_gradients(name(), num_forward_inputs, outputs.size());
        }
        variable_list results;
        results.reserve(outputs.size());
        for (size_t i = 0; i < outputs.size(); ++i) {
            if (!is_variable_input_[i]) {
                if (outputs[i].defined()) detail::throw_gradient_for_non_tensor(name(), i + 1);
                continue;
            }
            results.push_back(std::move(outputs[i]));
        }
        return results;
    }
    std::string name() const override { return detail::demangle(typeid(T).name()); }
    void release_variables() override {
        std::lock_guard<std::mutex> lock(mutex_);
        ctx_.release();
    }

    AutogradContext ctx_;
    std::vector<bool> is_variable_input_;
    std::mutex mutex_;
};

template <class T>
struct Function {
    template <typename X = T, typename... Args>
    static auto apply(Args&&... args)
        -> std::enable_if_t<std::is_same_v<X, T>,
                            decltype(X::forward(static_cast<AutogradContext*>(nullptr),
                                                std::forward<Args>(args)...))> {
        using forward_return_t =
            decltype(X::forward(static_cast<AutogradContext*>(nullptr), std::forward<Args>(args)...));
        static_assert(std::is_same_v<forward_return_t, Tensor> ||
                          std::is_same_v<forward_return_t, variable_list>,
                      "forward must return a Tensor or a variable_list");
        auto node = std::make_shared<CppNode<T>>();
        variable_list input_vars;
        input_vars.reserve(sizeof...(Args));
        detail::ExtractVariables extract{node->is_variable_input_, input_vars};
        (extract(args), ...);

        const bool is_executable = GradMode::is_enabled() && any_variable_requires_grad(input_vars);
        if (is_executable) node->set_next_edges(collect_next_edges(input_vars));
        node->ctx_.set_grad_fn(node);

        forward_return_t outputs;
        {
            AutoGradMode grad_mode(false);
            outputs = T::forward(&node->ctx_, std::forward<Args>(args)...);
        }
        variable_list out_list;
        if constexpr (std::is_same_v<forward_return_t, Tensor>) {
            out_list.push_back(std::move(outputs));
        } else {
            out_list = std::move(outputs);
        }
        variable_list wrapped =
            detail::wrap_outputs(input_vars, std::move(out_list), node->ctx_, node, is_executable);
        if (is_executable) node->ctx_.save_variables(wrapped);
        return detail::to_output_type<forward_return_t>(wrapped);
    }
};

}  // namespace autograd
}  // namespace ember
