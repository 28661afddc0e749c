"""Where a function mutates values in place (which decides whether a rewrite may copy or defer)."""

from __future__ import annotations

import ast
from typing import Dict, List

from .index import FunctionFacts


def _root_name(node: ast.expr) -> str:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def in_place_mutations(facts: FunctionFacts) -> Dict[str, List[int]]:
    """Names mutated in place, with the lines where it happens.

    Counts in-place tensor methods (``x.add_(1)``, ``x.copy_(y)``), stores into items or
    attributes (``x[0] = 1``, ``x.data = y``) and augmented assignments (``x += 1``, which is in
    place for tensors).
    """
    found: Dict[str, List[int]] = {}

    def note(name: str, line: int) -> None:
        if name:
            found.setdefault(name, []).append(line)

    for call in facts.calls:
        if isinstance(call.func, ast.Attribute):
            attr = call.func.attr
            if attr.endswith("_") and not attr.startswith("_"):
                note(_root_name(call.func.value), call.lineno)
    for node in facts.bindings:
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, (ast.Subscript, ast.Attribute)):
                    note(_root_name(target), node.lineno)
                elif isinstance(node, ast.AugAssign) and isinstance(target, ast.Name):
                    note(target.id, node.lineno)
    return found
