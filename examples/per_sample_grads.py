"""Per-sample gradients and model ensembling with ember.func, after PyTorch's two tutorials:
the gradient of the loss of every example of a batch at once, with vmap(grad(...)) and
functional_call, checked against one backward pass per example; then ten MLPs run as one
with stack_module_state and vmap.

docs/tutorials/per_sample_grads.md walks through this program: its python blocks are this
file, in order (tests/integration/test_tutorial_per_sample_grads.py checks that they agree and
runs them). Runs in a few seconds on a CPU with ember-core and ember-nn.
"""

import copy
import time

import ember as torch
import ember.nn as nn
import ember.nn.functional as F
from ember.func import functional_call, grad, stack_module_state, vmap

torch.manual_seed(0)
torch.set_num_threads(1)  # steady timings on a shared machine


class SimpleCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def loss_fn(predictions, targets):
    return F.nll_loss(predictions, targets)


batch_size = 64
data = torch.randn(batch_size, 1, 28, 28)
targets = torch.randint(10, (batch_size,))
model = SimpleCNN()
print(f"a batch of {batch_size} MNIST-shaped images, a CNN with "
      f"{sum(p.numel() for p in model.parameters()):,} parameters")


def compute_grad(sample, target):
    sample = sample.unsqueeze(0)  # prepend a batch dimension of one
    target = target.unsqueeze(0)
    prediction = model(sample)
    loss = loss_fn(prediction, target)
    return torch.autograd.grad(loss, list(model.parameters()))


def compute_sample_grads(data, targets):
    """One forward and backward pass per example."""
    sample_grads = [compute_grad(data[i], targets[i]) for i in range(batch_size)]
    sample_grads = zip(*sample_grads)
    return [torch.stack(shards) for shards in sample_grads]


def best_time(fn, repeat=3):
    """Seconds of the fastest of ``repeat`` calls, after one warm-up call."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


per_sample_grads = compute_sample_grads(data, targets)
loop_seconds = best_time(lambda: compute_sample_grads(data, targets))
print(f"loop: {len(per_sample_grads)} gradients, the first of shape "
      f"{tuple(per_sample_grads[0].shape)}, in {loop_seconds * 1e3:.0f} ms")

params = {k: v.detach() for k, v in model.named_parameters()}
buffers = {k: v.detach() for k, v in model.named_buffers()}


def compute_loss(params, buffers, sample, target):
    batch = sample.unsqueeze(0)
    targets = target.unsqueeze(0)
    predictions = functional_call(model, (params, buffers), (batch,))
    loss = loss_fn(predictions, targets)
    return loss


ft_compute_grad = grad(compute_loss)
ft_compute_sample_grad = vmap(ft_compute_grad, in_dims=(None, None, 0, 0))

ft_per_sample_grads = ft_compute_sample_grad(params, buffers, data, targets)
vmap_seconds = best_time(lambda: ft_compute_sample_grad(params, buffers, data, targets))
print(f"vmap: the same gradients in {vmap_seconds * 1e3:.0f} ms "
      f"({loop_seconds / vmap_seconds:.1f}x the loop's speed)")

max_diff = max(float((per_sample_grad - ft_per_sample_grad).abs().max())
               for per_sample_grad, ft_per_sample_grad
               in zip(per_sample_grads, ft_per_sample_grads.values()))
print(f"largest difference from the loop: {max_diff:.1e}")
assert max_diff < 1e-5


class SimpleMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 128)
        self.fc2 = nn.Linear(128, 128)
        self.fc3 = nn.Linear(128, 10)

    def forward(self, x):
        x = x.flatten(1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        x = F.relu(x)
        x = self.fc3(x)
        return x


num_models = 10
minibatches = torch.randn(num_models, 64, 1, 28, 28)
models = [SimpleMLP() for _ in range(num_models)]

params, buffers = stack_module_state(models)
base_model = copy.deepcopy(models[0])


def fmodel(params, buffers, x):
    return functional_call(base_model, (params, buffers), (x,))


minibatch = minibatches[0]
predictions_same_minibatch = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
predictions_diff_minibatch = vmap(fmodel)(params, buffers, minibatches)

expected_same = torch.stack([m(minibatch) for m in models])
expected_diff = torch.stack([m(minibatches[i]) for i, m in enumerate(models)])
ensemble_diff = max(float((predictions_same_minibatch - expected_same).abs().max()),
                    float((predictions_diff_minibatch - expected_diff).abs().max()))
print(f"ensemble of {num_models} MLPs: predictions of shape "
      f"{tuple(predictions_diff_minibatch.shape)}, largest difference from the loop "
      f"{ensemble_diff:.1e}")
assert ensemble_diff < 1e-6
