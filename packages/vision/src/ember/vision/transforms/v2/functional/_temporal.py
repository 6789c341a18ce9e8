"""Temporal functionals (videos ``(..., T, C, H, W)``)."""

from __future__ import annotations

import ember
from ember import Tensor
from ember.vision import tv_tensors

from ._utils import _get_kernel, _register_kernel_internal


def uniform_temporal_subsample(inpt, num_samples: int):
    """``num_samples`` frames evenly spaced over the video's ``T`` dimension."""
    return _get_kernel(uniform_temporal_subsample, type(inpt))(inpt, num_samples=num_samples)


@_register_kernel_internal(uniform_temporal_subsample, Tensor)
@_register_kernel_internal(uniform_temporal_subsample, tv_tensors.Video)
def uniform_temporal_subsample_video(video: Tensor, num_samples: int) -> Tensor:
    t_max = video.shape[-4] - 1
    indices = ember.linspace(0, t_max, num_samples, device=video.device).long()
    return ember.index_select(video, -4, indices)
