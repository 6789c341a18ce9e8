import ember.text


def test_text_is_importable_with_its_version() -> None:
    assert ember.text.__version__ == "0.1.0"
