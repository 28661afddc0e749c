"""Baselines for ``graphmend check``: accept the findings a code base has today, fail on new ones.

A baseline is a JSON file (``graphmend check --write-baseline FILE PATH...``)::

    {
      "version": 1,
      "tool": "flake8-graphmend",
      "findings": [
        {"path": "src/model.py", "code": "GM102", "function": "Model.forward",
         "statement": "logger.warning(\\"slowpath\\")", "count": 1}
      ]
    }

Each entry is a key and how many findings share it (a multiset: two identical ``print`` calls
in one function are two findings). ``path`` is the file relative to the baseline's folder, with
``/``; ``function`` the dotted name of the innermost ``def`` or ``class`` around the finding
(``""`` at module level); ``statement`` the source text the finding spans, with all whitespace
removed. No line numbers: a finding still matches after the code around it moves or is
re-indented. Entries are sorted, so the file diffs well under version control.
"""

from __future__ import annotations

import ast
import json
import os
from collections import Counter
from pathlib import Path
from typing import Dict, List, Sequence, Set, Tuple

from .engine import Finding

#: The baseline format; a file with another version is refused.
VERSION = 1
_FIELDS = ("path", "code", "function", "statement")

#: ``(path, code, function, statement)``.
Key = Tuple[str, str, str, str]
_Scope = Tuple[int, int, str]


class BaselineError(ValueError):
    """A baseline file that cannot be used; the message says why, in one line."""


def _scopes(tree: ast.AST) -> List[_Scope]:
    """``(first line, last line, dotted name)`` of every def and class, outer ones first."""
    found: List[_Scope] = []
    stack: List[Tuple[ast.AST, str]] = [(tree, "")]
    while stack:
        node, prefix = stack.pop()
        for child in ast.iter_child_nodes(node):
            name = prefix
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}.{child.name}" if prefix else child.name
                found.append((child.lineno, child.end_lineno or child.lineno, name))
            stack.append((child, name))
    return found


def _enclosing(scopes: Sequence[_Scope], line: int) -> str:
    """The innermost def or class that covers ``line`` (the one that starts last)."""
    covering = [scope for scope in scopes if scope[0] <= line <= scope[1]]
    innermost = max(covering, key=lambda scope: (scope[0], -scope[1]), default=(0, 0, ""))
    return innermost[2]


def _statement(finding: Finding, lines: Sequence[str]) -> str:
    """The source text from the finding's start to its end, without any whitespace."""
    span = list(lines[finding.line - 1:finding.end_line])
    if not span:
        return ""
    if len(span) == 1:
        span[0] = span[0][finding.col:finding.end_col]
    else:
        span[0], span[-1] = span[0][finding.col:], span[-1][:finding.end_col]
    return "".join("".join(span).split())


def path_key(path: Path, root: Path) -> str:
    """``path`` relative to ``root``, with ``/`` (absolute where no relative path exists)."""
    absolute = os.path.abspath(path)
    try:
        relative = os.path.relpath(absolute, os.path.abspath(root))
    except ValueError:  # another drive on Windows
        relative = absolute
    return Path(relative).as_posix()


def finding_keys(
    path: Path, root: Path, tree: ast.AST, lines: Sequence[str], findings: Sequence[Finding]
) -> List[Key]:
    """The baseline key of each finding of one file (``root``: the baseline's folder)."""
    where = path_key(path, root)
    scopes = _scopes(tree)
    return [
        (where, f.code, _enclosing(scopes, f.line), _statement(f, lines)) for f in findings
    ]


class Baseline:
    """The accepted findings, as a multiset of keys."""

    def __init__(self, counts: Counter[Key]) -> None:
        self.counts = counts

    @classmethod
    def load(cls, path: Path) -> Baseline:
        """Read a baseline file; BaselineError on a missing, unreadable or malformed one."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise BaselineError(
                f"baseline {path}: no such file (write one with --write-baseline {path})"
            ) from None
        except OSError as exc:
            raise BaselineError(f"baseline {path}: cannot read: {exc.strerror or exc}") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BaselineError(f"baseline {path}: not valid JSON: {exc}") from None
        if not isinstance(data, dict) or "findings" not in data:
            raise BaselineError(f"baseline {path}: not a graphmend baseline (no 'findings')")
        if data.get("version") != VERSION:
            raise BaselineError(
                f"baseline {path}: version {data.get('version')!r} is not supported "
                f"(this graphmend reads version {VERSION}); write it again with --write-baseline"
            )
        counts: Counter[Key] = Counter()
        entries = data["findings"]
        for index, entry in enumerate(entries if isinstance(entries, list) else [None]):
            if not (
                isinstance(entry, dict)
                and all(isinstance(entry.get(name), str) for name in _FIELDS)
                and isinstance(entry.get("count", 1), int)
                and entry.get("count", 1) > 0
            ):
                raise BaselineError(
                    f"baseline {path}: finding {index} is malformed: expected strings "
                    f"{', '.join(_FIELDS)} and a positive integer count"
                )
            key = (entry["path"], entry["code"], entry["function"], entry["statement"])
            counts[key] += entry.get("count", 1)
        return cls(counts)

    @staticmethod
    def write(path: Path, keys: Sequence[Key]) -> None:
        """Write the baseline of ``keys`` (sorted, one entry per distinct key with its count)."""
        entries: List[Dict[str, object]] = [
            {**dict(zip(_FIELDS, key)), "count": count}
            for key, count in sorted(Counter(keys).items())
        ]
        payload = {"version": VERSION, "tool": "flake8-graphmend", "findings": entries}
        try:
            Path(path).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            raise BaselineError(f"baseline {path}: cannot write: {exc.strerror or exc}") from None

    def split(self, keys: Sequence[Key], checked: Set[str]) -> Tuple[List[int], int, int]:
        """Match ``keys`` against the baseline: the indices of the new ones, how many matched,
        and how many entries of the ``checked`` files (path keys) matched nothing (fixed since,
        or changed). Entries of files not checked in this run (pre-commit names only the
        staged files) are not counted."""
        left = Counter(self.counts)
        new = []
        for index, key in enumerate(keys):
            if left[key] > 0:
                left[key] -= 1
            else:
                new.append(index)
        unmatched = sum(count for key, count in left.items() if key[0] in checked)
        return new, len(keys) - len(new), unmatched
