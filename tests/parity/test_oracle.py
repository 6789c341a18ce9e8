"""The PyTorch oracle used by the parity tests is the pinned release."""

import pytest

pytestmark = pytest.mark.parity

torch = pytest.importorskip("torch")


def test_oracle_is_pytorch_2_13_0() -> None:
    # Parity expectations are recorded against this release; another one may differ.
    assert torch.__version__.split("+")[0] == "2.13.0"
