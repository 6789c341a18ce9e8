"""Models of installed distributions through the ``ember.hub`` entry-point group."""

from __future__ import annotations

import importlib.metadata
import sys

import pytest

import ember.hub
from ember.hub import OfflineError, _installed

FAKE_HUBCONF = '''
"""A fake provider's hub module."""
dependencies = ["os"]


class TinyNet:
    """A stand-in model that records how it was built."""

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs, self.training = args, kwargs, True

    def eval(self):
        self.training = False
        return self


def tinynet(*args, weights=None, **kwargs):
    """Build a TinyNet."""
    return TinyNet(*args, weights=weights, **kwargs)


def needs_missing():
    return None


def _helper():
    return None
'''


@pytest.fixture
def fake_provider(tmp_path, monkeypatch):
    """Install a distribution ``fakeprov`` declaring ``fake = fake_hub_module``."""
    site = tmp_path / "site"
    dist_info = site / "fakeprov-0.1.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: fakeprov\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text("[ember.hub]\nfake = fake_hub_module\n")
    (site / "fake_hub_module.py").write_text(FAKE_HUBCONF)
    monkeypatch.syspath_prepend(str(site))
    yield
    sys.modules.pop("fake_hub_module", None)


def test_fake_entry_point_is_found(fake_provider):
    eps = importlib.metadata.entry_points(group="ember.hub")
    assert "fake" in eps.names


def test_load_installed_model_passes_arguments_and_sets_eval(fake_provider):
    model = ember.hub.load("tinynet", 3, weights="DEFAULT", depth=2)
    assert type(model).__name__ == "TinyNet"
    assert model.args == (3,)
    assert model.kwargs == {"weights": "DEFAULT", "depth": 2}
    assert model.training is False


def test_list_without_argument_lists_installed_models(fake_provider):
    names = ember.hub.list()
    assert {"tinynet", "needs_missing", "TinyNet"} <= set(names)
    assert "_helper" not in names and names == sorted(names)


def test_help_of_an_installed_model(fake_provider):
    assert ember.hub.help("tinynet") == "Build a TinyNet."


def test_installed_dependencies_are_checked(fake_provider, monkeypatch):
    import fake_hub_module

    monkeypatch.setattr(fake_hub_module, "dependencies", ["os", "no_such_module_abc"])
    with pytest.raises(RuntimeError, match="Missing dependencies: no_such_module_abc"):
        ember.hub.load("tinynet")


def test_unknown_model_names_the_installed_providers(fake_provider):
    with pytest.raises(RuntimeError, match=r"Unknown model 'nosuchnet'\. Installed providers: "
                                           r".*fake \(fakeprov\).*\."):
        ember.hub.load("nosuchnet")


def test_unknown_model_without_providers_says_what_to_install(monkeypatch):
    monkeypatch.setattr(_installed, "entry_points", lambda group: [])
    with pytest.raises(RuntimeError) as info:
        ember.hub.load("resnet18", weights="IMAGENET1K_V1")
    assert str(info.value) == (
        "Unknown model 'resnet18'. Installed providers: none. pip install ember-vision to get "
        "torchvision's models. pip install ember-text to get torchtext's models.")
    assert ember.hub.list() == []


def test_a_directory_name_is_not_an_installed_model(tmp_path, monkeypatch, fake_provider,
                                                    hub_dir):
    (tmp_path / "tinynet").mkdir()
    monkeypatch.chdir(tmp_path)
    # "tinynet" is now a directory: torch's GitHub parsing applies, not the entry points.
    with pytest.raises(ValueError, match="Invalid GitHub repository"):
        ember.hub.load("tinynet", trust_repo=True)


# --- the real ember-vision provider ------------------------------------------------------

@pytest.fixture
def vision():
    pytest.importorskip("ember.vision.hubconf")
    if "vision" not in importlib.metadata.entry_points(group="ember.hub").names:
        pytest.skip("ember-vision is importable but not installed with its entry point")


def test_vision_models_are_listed(vision):
    names = ember.hub.list()
    assert {"resnet18", "mobilenet_v2", "vgg16_bn"} <= set(names)


def test_vision_resnet18_is_built_in_eval_mode(vision):
    model = ember.hub.load("resnet18")
    assert type(model).__name__ == "ResNet"
    assert model.training is False
    assert model.fc.out_features == 1000


def test_vision_weights_offline_with_empty_cache(vision, hub_dir, offline):
    with pytest.raises(OfflineError) as info:
        ember.hub.load("resnet18", weights="IMAGENET1K_V1")
    message = str(info.value)
    assert "https://download.pytorch.org/models/resnet18-f37072fd.pth" in message
    assert str(hub_dir / "checkpoints" / "resnet18-f37072fd.pth") in message
