"""Other untraceable calls: clocks, deepcopy of tensors, global seeding, storage pointers,
random draws Dynamo cannot trace."""

from __future__ import annotations

import ast
from typing import Iterator

from ..analysis.values import Kind
from .base import Finding, FunctionContext

_CLOCKS = {
    "time.time", "time.time_ns", "time.perf_counter", "time.perf_counter_ns", "time.monotonic",
    "time.monotonic_ns", "time.process_time", "time.process_time_ns",
}
_SEEDS = {
    "torch.manual_seed",
    "torch.random.manual_seed",
    "torch.cuda.manual_seed",
    "torch.cuda.manual_seed_all",
    "torch.seed",
}


def check_call(node: ast.Call, statement: ast.stmt, ctx: FunctionContext) -> Iterator[Finding]:
    func = node.func
    qualified = ctx.symbols.qualified_name(func) or ""
    if qualified in _CLOCKS:
        yield ctx.finding("GM601", node, call=ast.unparse(func))
    elif qualified in _SEEDS:
        yield ctx.finding("GM603", node, call=ast.unparse(func))
    elif qualified == "copy.deepcopy" and node.args and ctx.values.may_hold_tensor(node.args[0]):
        yield from _deepcopy(node, node.args[0], ctx)
    elif isinstance(func, ast.Attribute) and func.attr == "data_ptr" and not node.args:
        yield ctx.finding("GM604", node)
    elif qualified.startswith("numpy.random.") or qualified == "random.random":
        yield ctx.finding("GM605", node, call=ast.unparse(func))


def _deepcopy(node: ast.Call, value: ast.expr, ctx: FunctionContext) -> Iterator[Finding]:
    """GM602 for ``copy.deepcopy(value)``: a tensor breaks; a value not known to be one (a
    module, a list of dicts) breaks when it holds one, and the finding says so."""
    if ctx.values.kind(value) is Kind.TENSOR:
        yield ctx.finding("GM602", node, call="a tensor value")
    else:
        shown = ast.unparse(value)
        condition = f"`{shown}` holds a tensor"
        yield ctx.finding("GM602", node, call=f"`{shown}`", condition=condition)
