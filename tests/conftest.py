"""Shared pytest configuration."""

import os
import tempfile
from typing import Callable, Tuple

import pytest


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: takes more than a few seconds (inductor, real transformers models)"
    )
    # The tools cache their cross-file links in the current folder; tests keep theirs apart
    # (the commands they run in subprocesses inherit it).
    os.environ.setdefault("GRAPHMEND_CACHE_DIR", tempfile.mkdtemp(prefix="graphmend-cache-"))


@pytest.fixture
def graphmend(capsys: pytest.CaptureFixture[str]) -> Callable[..., Tuple[int, str, str]]:
    """Run the ``graphmend`` command in this process: ``graphmend("fix", "--check", path)``
    gives (exit status, stdout, stderr)."""
    from flake8_graphmend.cli import main

    def run(*args: object) -> Tuple[int, str, str]:
        code = main([str(arg) for arg in args])
        out, err = capsys.readouterr()
        return code, out, err

    return run
