"""Sample photos shipped with ember-vision (see ATTRIBUTION.md in this folder).

``chelsea.jpg`` (a tabby cat), ``coffee.jpg`` (an espresso cup) and ``rocket.jpg``
(a Falcon 9 launch): downsized copies of scikit-image's CC0 / public-domain samples.
"""

from importlib import resources

SAMPLE_IMAGES = ("chelsea.jpg", "coffee.jpg", "rocket.jpg")


def sample_image_path(name: str) -> str:
    """Filesystem path of one of :data:`SAMPLE_IMAGES` (e.g. ``"chelsea.jpg"``)."""
    if name not in SAMPLE_IMAGES:
        raise ValueError(f"Unknown sample image '{name}'; available: {', '.join(SAMPLE_IMAGES)}")
    return str(resources.files(__name__).joinpath(name))
