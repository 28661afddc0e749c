"""DC and VG: Python control flow on tensor values (fixed by [Where] and [Trap])."""

from __future__ import annotations

import ast
from typing import Iterator, Optional, Sequence, Set

from ..analysis.values import Kind
from ..planning import Plan
from ..planning.trap import trap_plan
from ..planning.where import where_plan
from .base import Finding, FunctionContext

_TORCH_BOOL_DATA = {"torch.equal", "torch.allclose"}
#: Why an ``elif`` is not rewritten (the rewrite replaces statements of a block; an ``elif`` is
#: the ``else`` clause of the ``if`` before it).
ELIF_DECLINE = "an `elif` is rewritten only as a plain `if` (move it into an `else:` block)"


def _contains_call_to(node: ast.expr, names: Set[str], ctx: FunctionContext) -> bool:
    return any(
        isinstance(sub, ast.Call) and ctx.symbols.qualified_name(sub.func) in names
        for sub in ast.walk(node)
    )


def _is_elif(node: ast.If, ctx: FunctionContext) -> bool:
    return ctx.lines[node.lineno - 1].lstrip().startswith("elif")


def check_if(node: ast.If, block: Sequence[ast.stmt], ctx: FunctionContext) -> Iterator[Finding]:
    if not ctx.values.is_data_dependent(node.test):
        return
    uses_equal = _contains_call_to(node.test, _TORCH_BOOL_DATA, ctx)
    is_guard = len(node.body) == 1 and isinstance(node.body[0], ast.Raise) and not node.orelse
    plan: Optional[Plan]
    decline: Optional[str]
    if is_guard:
        code = "GM302" if uses_equal else "GM301"
        plan, decline = trap_plan(node, code, ctx)
    elif uses_equal:
        code, plan, decline = "GM302", None, "only guards that raise are rewritten"
    elif ctx.values.kind(node.test) is Kind.TENSOR:
        code = "GM201"
        plan, decline = where_plan(node, block, ctx)
    else:
        # A condition that is only data-dependent through .item()/int(t) is reported at the
        # materialising call (GM401/GM403): that call is the break.
        return
    if plan is not None and _is_elif(node, ctx):
        plan, decline = None, ELIF_DECLINE
    yield ctx.finding(code, node, plan=plan, decline=decline, end_node=node.test)


def check_while(node: ast.While, ctx: FunctionContext) -> Iterator[Finding]:
    if ctx.values.kind(node.test) is Kind.TENSOR:
        yield ctx.finding("GM202", node, end_node=node.test)


def check_if_expression(node: ast.IfExp, ctx: FunctionContext) -> Iterator[Finding]:
    if ctx.values.kind(node.test) is Kind.TENSOR:
        yield ctx.finding("GM203", node)
