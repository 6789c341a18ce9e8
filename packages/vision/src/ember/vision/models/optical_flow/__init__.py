"""Optical flow models (torchvision's ``models.optical_flow``): RAFT, with its weights enums;
the builders register in the model registry."""

from .raft import *  # noqa: F403
