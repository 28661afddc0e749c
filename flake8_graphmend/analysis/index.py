"""Per-function facts (calls, bindings, nested functions), gathered once and only where asked.

Linting large trees must stay cheap (flake8 already paid for the parse). Most of a module is
never traced, so its functions are walked only when the region analysis reaches them, each once.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Union

FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_BINDINGS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)


@dataclass
class FunctionFacts:
    """What one function's own body contains (nested functions, lambdas and classes excluded)."""

    node: FunctionNode
    parent: Optional[FunctionNode] = None
    nested: Dict[str, FunctionNode] = field(default_factory=dict)
    calls: List[ast.Call] = field(default_factory=list)
    #: Statements and expressions that bind names or store into targets.
    bindings: List[ast.AST] = field(default_factory=list)


class ModuleIndex:
    """Lazily computed facts about the functions of one module."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        self._facts: Dict[FunctionNode, FunctionFacts] = {}
        self._parents: Dict[FunctionNode, FunctionNode] = {}

    def facts(self, function: FunctionNode) -> FunctionFacts:
        found = self._facts.get(function)
        if found is None:
            found = self._facts[function] = self._collect(function)
        return found

    def parent_of(self, function: FunctionNode) -> Optional[FunctionNode]:
        return self._parents.get(function)

    def _collect(self, function: FunctionNode) -> FunctionFacts:
        facts = FunctionFacts(function, parent=self._parents.get(function))
        stack: List[ast.AST] = list(function.body)
        while stack:
            node = stack.pop()
            if isinstance(node, _SCOPES):
                if isinstance(node, _FUNCTIONS):
                    facts.nested[node.name] = node
                    self._parents[node] = function
                    stack.extend(node.decorator_list)
                    stack.extend(node.args.defaults)
                continue
            if isinstance(node, ast.Call):
                facts.calls.append(node)
            elif isinstance(node, _BINDINGS):
                facts.bindings.append(node)
            stack.extend(ast.iter_child_nodes(node))
        return facts

    def all_functions(self) -> Iterator[FunctionNode]:
        """Every function of the module, nested ones included (a full walk)."""
        for node in ast.walk(self.tree):
            if isinstance(node, _FUNCTIONS):
                yield node

    def all_calls(self) -> Iterator[ast.Call]:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call):
                yield node
