// Private: the node type of Ember's built-in ops, and the helpers ops use to record history.
//
//   Tensor exp(const Tensor& self) {
//       Tensor out = ...kernel...;
//       if (auto node = autograd::make_node("ExpBackward0", {self})) {
//           node->set_formula([](FunctionNode& n, variable_list&& g) -> variable_list {
//               return {g[0] * n.saved(0)};
//           });
//           autograd::set_history(out, node, 0);
//           node->save(out, /*is_output=*/true);
//       }
//       return out;
//   }
//
// The formula is written with differentiable ops, so it records its own graph when run
// with create_graph=true.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "ember/autograd.h"

namespace ember {
namespace autograd {

class FunctionNode final : public Node {
public:
    using Formula = std::function<variable_list(FunctionNode&, variable_list&&)>;

    FunctionNode(const char* name, edge_list edges) : Node(std::move(edges)), name_(name) {}

    variable_list apply(variable_list&& grads) override { return formula_(*this, std::move(grads)); }
    std::string name() const override { return name_; }
    void release_variables() override {
        for (SavedVariable& s : saved_) s.reset_data();
    }

    void set_formula(Formula f) { formula_ = std::move(f); }
    // Saves t (may be undefined) for backward; returns its slot.
    size_t save(const Tensor& t, bool is_output = false) {
        saved_.emplace_back(t, is_output);
        return saved_.size() - 1;
    }
    // The tensor in slot i (PyTorch's errors when freed or modified in place).
    Tensor saved(size_t i) { return saved_.at(i).unpack(shared_from_this()); }
    // Whether the gradient of forward input i is needed.
    bool needs(size_t i) const { return should_compute_output(i); }

private:
    const char* name_;
    Formula formula_;
    std::vector<SavedVariable> saved_;
};

// A node for an op with these inputs when grad mode is on and one of them requires grad;
// nullptr otherwise (then the op records nothing).
std::shared_ptr<FunctionNode> make_node(const char* name, std::initializer_list<Tensor> inputs);
std::shared_ptr<FunctionNode> make_node(const char* name, const variable_list& inputs);

// Sets the history of the result of an in-place op on self: self now is output output_nr
// of fn (rebasing a view's base through CopySlices when self is a view).
void rebase_history(const Tensor& self, const std::shared_ptr<Node>& fn, uint32_t output_nr);

// Whether some tensor requires grad (ignores grad mode).
bool any_requires_grad(std::initializer_list<Tensor> tensors);

}  // namespace autograd
}  // namespace ember
