"""DO/TI: tensor data turned into Python scalars (.item(), .tolist(), int(t), float(t), bool(t))."""

from __future__ import annotations

import ast
from typing import Iterator

from ..analysis.values import Kind
from .base import Finding, FunctionContext

_SCALAR_BUILTINS = ("int", "float", "bool")


def check_call(node: ast.Call, statement: ast.stmt, ctx: FunctionContext) -> Iterator[Finding]:
    func = node.func
    if isinstance(func, ast.Attribute) and not node.args and not node.keywords:
        if func.attr in ("item", "tolist") and ctx.values.kind(func.value) is not Kind.STATIC:
            yield ctx.finding("GM401" if func.attr == "item" else "GM402", node)
    elif (
        isinstance(func, ast.Name)
        and func.id in _SCALAR_BUILTINS
        and func.id not in ctx.symbols.defined_here()
        and len(node.args) == 1
        and ctx.values.kind(node.args[0]) is Kind.TENSOR
    ):
        yield ctx.finding("GM403", node, call=func.id)
