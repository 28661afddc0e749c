"""Shared pytest configuration."""

from typing import Callable, Tuple

import pytest


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: takes more than a few seconds (inductor, real transformers models)"
    )


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
