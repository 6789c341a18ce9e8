// Private: the sink node of a leaf tensor, adding incoming gradients into its .grad().
#pragma once

#include <string>

#include "ember/autograd.h"

namespace ember {
namespace autograd {

class AccumulateGrad final : public Node {
public:
    explicit AccumulateGrad(Tensor variable);
    variable_list apply(variable_list&& grads) override;
    std::string name() const override { return "AccumulateGrad"; }
    // Runs the leaf's own hooks (Tensor::register_hook) and then the node's.
    variable_list call_tensor_pre_hooks(variable_list grads) override;
    const Tensor& variable() const noexcept { return variable_; }

    // Adds new_grad into variable.grad() (steals the buffer when it is not shared; records
    // the addition when grad mode is on, i.e. with create_graph).
    static void accumulate(const Tensor& variable, Tensor new_grad);

private:
    Tensor variable_;
};

unsigned next_hook_handle();
// "Exp" for "ExpBackward0": the op name PyTorch's messages use.
std::string op_name(const std::string& node_name);

}  // namespace autograd
}  // namespace ember
