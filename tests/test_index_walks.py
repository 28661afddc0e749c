"""The analysis' own walks give what Python's ``ast`` walks give, in the same order.

``analysis.index.walk``, ``child_nodes`` and ``parent_map`` replace ``ast.walk``,
``ast.iter_child_nodes`` and a parent map built from them (for speed, and kept while a tree
lives); every decline message that names "the first" of something depends on that order.
"""

from __future__ import annotations

import ast
import gc
import weakref
from pathlib import Path
from typing import FrozenSet, List

import pytest

from flake8_graphmend.analysis.index import child_nodes, node_memo, parent_map, walk

SOURCE = '''
import torch
from torch import nn

class Block(nn.Module):
    def __init__(self, n, *, act=None, **kw):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(n, n) for _ in range(2)])
        self.act = act or (lambda t: t)

    def forward(self, x, mask=None):
        for i, layer in enumerate(self.layers):
            x = layer(x) if mask is None else layer(x) * mask[i:]
        with torch.no_grad():
            if (x < 0).any():
                raise ValueError(f"negative {x.min().item():.3f}")
        match x.dim():
            case 2:
                return {k: v for k, v in zip("ab", x.unbind(0))}
            case _:
                return x @ x.T
'''

TREES = [
    ast.parse(SOURCE),
    ast.parse(Path(ast.__file__).read_text(encoding="utf-8")),
]


@pytest.mark.parametrize("tree", TREES, ids=["model", "stdlib-ast"])
def test_walk_is_ast_walk_in_order(tree: ast.Module) -> None:
    roots = [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.stmt, ast.expr)))]
    for root in roots[:400]:
        assert list(walk(root)) == list(ast.walk(root))
        assert child_nodes(root) == list(ast.iter_child_nodes(root))


@pytest.mark.parametrize("tree", TREES, ids=["model", "stdlib-ast"])
def test_parent_map_names_each_node_s_holder(tree: ast.Module) -> None:
    expected = {id(c): n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
    assert parent_map(tree) == expected


def test_node_memo_answers_once_per_live_node() -> None:
    calls: List[ast.AST] = []

    @node_memo
    def names(node: ast.AST) -> FrozenSet[str]:
        calls.append(node)
        return frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name))

    tree = ast.parse("a = b + c")
    assert names(tree) == {"a", "b", "c"}
    assert names(tree) == {"a", "b", "c"}
    assert len(calls) == 1
    other = ast.parse("a = b + c")  # equal source, another tree: answered on its own
    assert names(other) == {"a", "b", "c"}
    assert len(calls) == 2


def test_node_memo_keeps_no_tree_alive() -> None:
    @node_memo
    def size(node: ast.AST) -> int:
        return sum(1 for _ in ast.walk(node))

    tree = ast.parse(SOURCE)
    assert size(tree) > 0
    alive = weakref.ref(tree)
    del tree
    gc.collect()
    assert alive() is None
