"""``torchtext.functional``'s path for the functional forms of the transforms."""

from .transforms import add_token, str_to_int, to_tensor, truncate

__all__ = ["to_tensor", "truncate", "add_token", "str_to_int"]
