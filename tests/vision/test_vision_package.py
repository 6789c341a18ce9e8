import ember.vision


def test_vision_is_importable_with_its_version() -> None:
    assert ember.vision.__version__ == "0.1.0"
