import ember.hub


def test_hub_is_importable_with_its_version() -> None:
    assert ember.hub.__version__ == "0.1.0"
