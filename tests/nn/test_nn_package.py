import ember.nn
import ember.optim


def test_nn_is_importable_with_its_version() -> None:
    assert ember.nn.__version__ == "0.1.0"


def test_optim_is_importable_with_its_version() -> None:
    assert ember.optim.__version__ == "0.1.0"
