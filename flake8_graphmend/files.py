"""Finding and reading the Python files a command was pointed at."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, Optional, Sequence, Set

#: Folders never entered when a directory is given (tools, caches, virtual environments).
SKIPPED_DIRS = {
    ".git",
    ".hg",
    ".svn",
    ".tox",
    ".nox",
    ".venv",
    "venv",
    "__pycache__",
    "build",
    "dist",
    "node_modules",
    ".eggs",
}


#: The message for a source whose nesting exceeds Python's parser (a RecursionError).
TOO_DEEP = "expressions nested too deeply for Python's parser"
#: The message for a source that parses but whose nesting exceeds the analysis's recursion.
TOO_DEEP_TO_ANALYSE = "code nested too deeply for the analysis"


class UnreadableSource(Exception):
    """A file that cannot be read or decoded; the message says why, in one line."""


def parse_failure(error: BaseException) -> Optional[str]:
    """One line saying why ``ast.parse`` failed with ``error``; None for any other exception."""
    if isinstance(error, SyntaxError):
        return f"syntax error: {error.msg} (line {error.lineno or 0})"
    if isinstance(error, RecursionError):
        return TOO_DEEP
    if isinstance(error, ValueError):  # NUL bytes
        return f"cannot parse: {error}"
    return None


def iter_python_files(paths: Sequence[Path]) -> Iterator[Path]:
    """The ``.py`` files named or contained (recursively) in ``paths``, each once, sorted per
    folder.

    Raises FileNotFoundError for a path that does not exist.
    """
    seen = set()
    for path in paths:
        path = Path(path)
        if not path.exists() and not path.is_symlink():
            raise FileNotFoundError(f"{path}: no such file or directory")
        candidates = [path] if not path.is_dir() else _walk(path)
        for candidate in candidates:
            key = str(candidate)
            if key not in seen:
                seen.add(key)
                yield candidate


def _walk(folder: Path, visited: Optional[Set[Path]] = None) -> Iterator[Path]:
    """Depth-first, sorted; each real folder once (symlink loops end here)."""
    visited = visited if visited is not None else set()
    try:
        real = folder.resolve(strict=True)
        entries = sorted(folder.iterdir())
    except (OSError, RuntimeError):  # unreadable, a broken link or a symlink loop
        return
    if real in visited:
        return
    visited.add(real)
    for entry in entries:
        if entry.is_dir():
            if entry.name not in SKIPPED_DIRS and not entry.name.endswith(".egg-info"):
                yield from _walk(entry, visited)
        elif entry.suffix == ".py" and entry.is_file():
            yield entry


def read_source(path: Path) -> str:
    """The text of a source file (UTF-8, with or without BOM); raises UnreadableSource."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise UnreadableSource(f"cannot read: {exc.strerror or exc}") from exc
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UnreadableSource(
            f"not UTF-8 (byte {exc.start}): only UTF-8 sources are supported"
        ) from exc
