"""Shared pytest configuration."""

import os
import sys
import tempfile
from typing import Callable, Iterator, Tuple

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


@pytest.fixture(autouse=True)
def _torch_grad_mode() -> Iterator[None]:
    """Each test starts in the grad mode the session had: a program under test may leave it
    off (a check that fails after `torch.set_grad_enabled(False)`, as the original does)."""
    torch = sys.modules.get("torch")
    enabled = torch.is_grad_enabled() if torch is not None else True
    yield
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_grad_enabled(enabled)
