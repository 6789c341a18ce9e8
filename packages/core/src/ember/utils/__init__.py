"""``ember.utils``: PyTorch's ``torch.utils`` import paths."""


def __getattr__(name: str):
    # ``torch.utils.checkpoint`` and ``torch.utils.data`` work after a plain ``import torch``
    if name in ("checkpoint", "data"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
