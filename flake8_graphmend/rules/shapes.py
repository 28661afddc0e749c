"""DS: operations whose output shape depends on tensor data."""

from __future__ import annotations

import ast
from typing import Iterator

from .base import Finding, FunctionContext

_FUNCTIONS = {
    "torch.nonzero": "GM501",
    "torch.argwhere": "GM501",
    "torch.unique": "GM503",
    "torch.unique_consecutive": "GM503",
    "torch.masked_select": "GM504",
}
_METHODS = {
    "nonzero": "GM501",
    "argwhere": "GM501",
    "unique": "GM503",
    "unique_consecutive": "GM503",
    "masked_select": "GM504",
}


def check_call(node: ast.Call, statement: ast.stmt, ctx: FunctionContext) -> Iterator[Finding]:
    func = node.func
    qualified = ctx.symbols.qualified_name(func) or ""
    if qualified in _FUNCTIONS:
        yield ctx.finding(_FUNCTIONS[qualified], node, call=ast.unparse(func))
    elif qualified == "torch.where" and len(node.args) == 1 and not node.keywords:
        yield ctx.finding("GM501", node, call=ast.unparse(func))
    elif ctx.may_be_tensor_method(func, _METHODS.keys()):
        assert isinstance(func, ast.Attribute)
        yield ctx.finding(_METHODS[func.attr], node, call=ast.unparse(func))


def check_subscript(node: ast.Subscript, ctx: FunctionContext) -> Iterator[Finding]:
    """``x[mask]`` with a boolean tensor mask (read, not assigned to)."""
    if not isinstance(node.ctx, ast.Load):
        return
    index = node.slice
    elements = index.elts if isinstance(index, ast.Tuple) else [index]
    if any(ctx.values.is_bool_mask(element) for element in elements):
        yield ctx.finding("GM502", node)
