#include "ember/autograd.h"

namespace ember {

namespace {
thread_local bool t_grad_enabled = true;
}

bool GradMode::is_enabled() noexcept { return t_grad_enabled; }
void GradMode::set_enabled(bool enabled) noexcept { t_grad_enabled = enabled; }

}  // namespace ember
