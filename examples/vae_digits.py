"""A variational autoencoder on the embedded 8x8 handwritten digits, written with
ember.distributions: a Normal posterior sampled with rsample, a Bernoulli likelihood over the
pixels (binarized afresh each step), Independent to make one event of each image, and
kl_divergence against the prior.

docs/tutorials/vae.md walks through this program: its python blocks are this file, in order
(tests/integration/test_tutorial_vae.py checks that they agree and runs them). Trains for a few
seconds on a CPU, printing the ELBO per epoch, and writes vae_digits.png (held-out digits, their
reconstructions and new samples) to the current directory. Needs ember-vision and Pillow.
"""

import time

import numpy as np
from PIL import Image

import ember as torch
import ember.nn as nn
import ember.nn.functional as F
import ember.vision as torchvision
from ember.distributions import Bernoulli, Independent, Normal, kl_divergence
from ember.utils.data import DataLoader, TensorDataset
from ember.vision import transforms

torch.manual_seed(0)
torch.set_num_threads(1)  # matrices this small run fastest on one thread
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

train_set = torchvision.datasets.Digits(train=True, transform=transforms.ToTensor())
test_set = torchvision.datasets.Digits(train=False, transform=transforms.ToTensor())
# 64 intensities in [0, 1] per image, one image per row
train_images = torch.stack([image for image, _ in train_set]).flatten(1).to(device)
test_images = torch.stack([image for image, _ in test_set]).flatten(1).to(device)
train_loader = DataLoader(TensorDataset(train_images), batch_size=64, shuffle=True)
# binary pixels: each one on with probability its intensity (the held-out set drawn once)
test_binary = torch.bernoulli(test_images, generator=torch.Generator(device).manual_seed(1))
print(f"{len(train_images)} training and {len(test_images)} held-out images of "
      f"{train_images.shape[1]} pixels")


class VAE(nn.Module):
    def __init__(self, latent_dim=8, hidden=256):
        super().__init__()
        self.latent_dim = latent_dim
        self.encoder = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(),
                                     nn.Linear(hidden, 2 * latent_dim))
        self.decoder = nn.Sequential(nn.Linear(latent_dim, hidden), nn.ReLU(),
                                     nn.Linear(hidden, 64))

    def posterior(self, x):
        """q(z | x): a diagonal Normal, one 8-dimensional event per image."""
        loc, scale = self.encoder(x).chunk(2, dim=-1)
        return Independent(Normal(loc, F.softplus(scale) + 1e-4), 1)

    def prior(self):
        """p(z): a standard Normal."""
        zeros = torch.zeros(self.latent_dim, device=device)
        return Independent(Normal(zeros, torch.ones_like(zeros)), 1)

    def likelihood(self, z):
        """p(x | z): a Bernoulli per pixel, one 64-pixel event per image."""
        return Independent(Bernoulli(logits=self.decoder(z)), 1)

    def forward(self, x):
        """The ELBO of each image: E_q[log p(x | z)] - KL(q(z | x) || p(z))."""
        q = self.posterior(x)
        z = q.rsample()  # reparameterised: gradients reach the encoder through z
        return self.likelihood(z).log_prob(x) - kl_divergence(q, self.prior())


def heldout_elbo(model, samples=8):
    """The held-out ELBO per image, averaged over a few posterior draws."""
    model.eval()
    with torch.no_grad():
        return torch.stack([model(test_binary) for _ in range(samples)]).mean().item()


model = VAE().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
epochs = 30
elbos = [heldout_elbo(model)]
print(f"before training: held-out ELBO {elbos[0]:8.2f} nats per image")
start = time.perf_counter()
for epoch in range(1, epochs + 1):
    model.train()
    total = 0.0
    for (intensities,) in train_loader:
        x = torch.bernoulli(intensities)  # a fresh binarization every step
        optimizer.zero_grad()
        loss = -model(x).mean()  # maximise the ELBO
        loss.backward()
        optimizer.step()
        total += loss.item() * len(x)
    elbos.append(heldout_elbo(model))
    print(f"epoch {epoch:2d}  loss {total / len(train_images):8.2f}  "
          f"held-out ELBO {elbos[-1]:8.2f}")
print(f"trained in {time.perf_counter() - start:.1f} s")

with torch.no_grad():
    model.eval()
    originals = test_binary[:10]
    # reconstruct from the posterior mean; decode new codes drawn from the prior; show each
    # pixel's probability of being on
    reconstructions = model.likelihood(model.posterior(originals).mean).mean
    samples = model.likelihood(model.prior().sample((20,))).mean


def grid(rows, scale=4, gap=2):
    """Rows of 8x8 images (each a (n, 64) tensor in [0, 1]) as one grayscale PIL image."""
    tiles = [r.reshape(-1, 8, 8).cpu().numpy() for r in rows]
    width = max(len(t) for t in tiles)
    canvas = np.ones((len(tiles) * (8 + gap) + gap, width * (8 + gap) + gap))
    for i, row in enumerate(tiles):
        for j, tile in enumerate(row):
            y, x = gap + i * (8 + gap), gap + j * (8 + gap)
            canvas[y:y + 8, x:x + 8] = 1 - tile  # dark ink on white
    image = Image.fromarray((canvas * 255).round().astype(np.uint8), mode="L")
    return image.resize((image.width * scale, image.height * scale), Image.NEAREST)


picture = grid([originals, reconstructions, samples[:10], samples[10:]])
picture.save("vae_digits.png")
print(f"wrote vae_digits.png ({picture.width}x{picture.height}): held-out digits, their "
      "reconstructions, and 20 samples from the prior")
