"""The Python examples in README.md run as written."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_examples():
    assert BLOCKS


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index, capsys):
    source = BLOCKS[index]
    if "ember.vision" in source:
        pytest.importorskip("ember.vision")
    exec(compile(source, f"README.md example {index}", "exec"), {})
