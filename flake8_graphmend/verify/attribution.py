"""Attribute runtime break sites to the linter: the GM findings on a break site's statement.

A break is reported at the line of the instruction that broke; a finding spans its expression.
They match when the finding overlaps the statement that holds the break line (for an
``if``/``while``/``with``/``def``/``for``, its header only), so multi-line statements match too.
Files are linted with scope ``all``: the runtime has shown that the code is traced.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Any, Dict, List, Tuple


class LintFailure(Exception):
    """A site's file could not be linted; the message says why."""


def findings_at(path: str, line: int) -> List[Dict[str, Any]]:
    """The GM findings of ``path`` that overlap the statement containing ``line`` (JSON-ready).

    Raises ``LintFailure`` when the file cannot be read, parsed or analysed.
    """
    findings, tree = _analyzed(path)
    first, last = _statement_span(tree, line)
    return [
        {
            "code": f.code,
            "line": f.line,
            "message": f.message,
            "fixer": f.fixer,
            "decline": f.decline,
        }
        for f in findings
        if f.line <= last and f.end_line >= first
    ]


def statement_span(path: str, line: int) -> Tuple[int, int]:
    """First and last line of the innermost statement of ``path`` that holds ``line`` (for a
    compound statement, its header): a finding that starts or ends there is at that line.
    Raises ``LintFailure`` when the file cannot be read or parsed."""
    return _statement_span(_tree(path), line)


@functools.lru_cache(maxsize=None)
def _tree(path: str) -> ast.Module:
    try:
        return ast.parse(Path(path).read_bytes(), filename=path)
    except Exception as error:
        raise LintFailure(f"{type(error).__name__}: {error}") from None


@functools.lru_cache(maxsize=None)
def _analyzed(path: str) -> Tuple[List[Any], ast.Module]:
    tree = _tree(path)
    try:
        from flake8_graphmend.engine import analyze_file

        return analyze_file(Path(path), scope="all"), tree
    except Exception as error:  # whatever stops the linter, the runtime results still stand
        raise LintFailure(f"{type(error).__name__}: {error}") from None


def _statement_span(tree: ast.Module, line: int) -> Tuple[int, int]:
    """First and last line of the innermost statement (header) that contains ``line``."""
    spans = [_header_span(node) for node in ast.walk(tree) if isinstance(node, ast.stmt)]
    containing = [span for span in spans if span[0] <= line <= span[1]]
    return max(containing, key=lambda span: span[0], default=(line, line))


def _header_span(node: ast.stmt) -> Tuple[int, int]:
    """A simple statement's lines; for a compound statement, the lines before its body."""
    body = getattr(node, "body", None)
    if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
        return node.lineno, max(node.lineno, body[0].lineno - 1)
    return node.lineno, node.end_lineno or node.lineno
