"""A spectrogram with ``torch.stft``: a synthetic chirp and a steady tone, their magnitude
spectrogram drawn as a PNG, the chirp's frequency read back from it, the signal rebuilt with
``torch.istft``, and the tone removed by editing the spectrogram. The walk-through is
docs/tutorials/spectrogram.md, whose code blocks are this file. Needs Pillow."""

import math

import numpy as np
from PIL import Image

import ember as torch

torch.manual_seed(0)
sample_rate = 8000                       # samples per second
duration = 2.0                           # seconds
t = torch.arange(int(sample_rate * duration), dtype=torch.float32) / sample_rate

f_start, f_end = 200.0, 3000.0           # the chirp sweeps linearly between these (Hz)
chirp_phase = 2 * math.pi * (f_start * t + (f_end - f_start) / (2 * duration) * t ** 2)
tone_hz = 1000.0
signal = (torch.sin(chirp_phase)
          + 0.5 * torch.sin(2 * math.pi * tone_hz * t)
          + 0.05 * torch.randn(t.shape))
print(f"signal: {signal.shape[0]} samples, {duration:.0f} s at {sample_rate} Hz")

n_fft = 512                              # 64 ms frames: 15.6 Hz per frequency bin
hop_length = 128                         # a new frame every 16 ms
window = torch.hann_window(n_fft)
spec = torch.stft(signal, n_fft, hop_length=hop_length, window=window, return_complex=True)
print(f"stft: {tuple(spec.shape)} {spec.dtype} (frequency bins x frames)")

freqs = torch.fft.rfftfreq(n_fft, d=1.0 / sample_rate)      # the frequency of each bin (Hz)
times = torch.arange(spec.shape[1]) * hop_length / sample_rate  # the centre of each frame (s)
magnitude = spec.abs()
db = 20 * torch.log10(magnitude.clamp(min=1e-5))
db = db - db.max()                       # 0 dB: the loudest bin

print("   time   chirp (Hz)   loudest bin (Hz)")
for frame in range(8, spec.shape[1] - 8, 15):
    expected = f_start + (f_end - f_start) * times[frame].item() / duration
    loudest = freqs[magnitude[:, frame].argmax()].item()
    print(f"{times[frame].item():6.2f} s {expected:10.0f} {loudest:16.0f}")

floor_db = -60.0                         # draw the top 60 dB
level = ((db.clamp(min=floor_db) - floor_db) / -floor_db).numpy()   # 0 (quiet) .. 1 (loud)
level = np.flipud(level)                 # low frequencies at the bottom
anchors = np.linspace(0.0, 1.0, 5)       # black, purple, red, orange, pale yellow
colours = np.array([[0, 0, 4], [87, 16, 110], [188, 55, 84], [249, 142, 9], [252, 255, 164]])
rgb = np.stack([np.interp(level, anchors, colours[:, c]) for c in range(3)], axis=-1)
image = Image.fromarray(rgb.astype(np.uint8))
image = image.resize((image.width * 4, image.height), Image.NEAREST)
image.save("spectrogram.png")
print(f"wrote spectrogram.png ({image.width}x{image.height})")

rebuilt = torch.istft(spec, n_fft, hop_length=hop_length, window=window,
                      length=signal.shape[0])
error = (rebuilt - signal).abs().max().item()
print(f"istft(stft(signal)): largest difference {error:.1e}")


def tone_amplitude(x):
    """The amplitude of the tone_hz component of x (from its Fourier transform)."""
    k = round(tone_hz * x.shape[0] / sample_rate)
    return (2 * torch.fft.rfft(x)[k].abs() / x.shape[0]).item()


notch = ((freqs - tone_hz).abs() > 40).to(spec.dtype)        # 0 within 40 Hz of the tone
filtered = torch.istft(spec * notch[:, None], n_fft, hop_length=hop_length, window=window,
                       length=signal.shape[0])
before, after = tone_amplitude(signal), tone_amplitude(filtered)
print(f"the {tone_hz:.0f} Hz tone: amplitude {before:.3f} before the notch, {after:.3f} after")
