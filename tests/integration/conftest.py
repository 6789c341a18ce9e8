"""Fixtures of the integration tests: running a tutorial page as a program."""

import pytest
from testutils import python_blocks


@pytest.fixture
def run_tutorial(tmp_path, monkeypatch):
    """Execute a tutorial's blocks in order in one namespace; return the namespace.

    The program runs in a fresh working directory (``run_tutorial.workdir``) with
    ``EMBER_HOME`` pointing at an empty cache (``run_tutorial.ember_home``).
    """
    workdir = tmp_path / "work"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("EMBER_HOME", str(tmp_path / "ember_home"))

    def run(page: str) -> dict:
        namespace = {"__name__": "__main__"}
        for index, source in enumerate(python_blocks(page)):
            exec(compile(source, f"{page} block {index + 1}", "exec"), namespace)
        return namespace

    run.workdir = workdir
    run.ember_home = tmp_path / "ember_home"
    return run
