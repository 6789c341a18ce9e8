#include "autograd/zero_grad.h"

#include <ember/autograd.h>

namespace ember {
namespace autograd {

void zero_grad_of(const Tensor& p, bool set_to_none) {
    if (!p.grad().defined()) return;
    if (set_to_none) {
        p.set_grad(Tensor());
        return;
    }
    NoGradGuard no_grad;
    Tensor& grad = p.mutable_grad();
    if (grad.grad_fn()) {
        grad.detach_();
    } else {
        grad.requires_grad_(false);
    }
    grad.zero_();
}

}  // namespace autograd
}  // namespace ember
