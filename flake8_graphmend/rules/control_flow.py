"""DC and VG: Python control flow on tensor values (fixed by [Where], [Trap] and, for an `if`
whose branches only print, log or warn, [Defer] of the whole `if`; an `if` whose branches do
both is split in two; `a if c else b` is selected like an `if`)."""

from __future__ import annotations

import ast
from typing import Iterator, Optional, Sequence, Set

from ..analysis.index import walk
from ..analysis.values import Kind
from ..planning import Plan
from ..planning.conditions import is_elif, split_condition
from ..planning.defer import DeferIfPlan, deferred_if
from ..planning.items import compared_item
from ..planning.split import split_if
from ..planning.trap import assert_plan, trap_plan
from ..planning.where import expression_plan, is_item_test, selection_plan, where_plan
from .base import Finding, FunctionContext
from .side_effects import classify_call

_TORCH_BOOL_DATA = {"torch.equal", "torch.allclose"}
#: Why an ``elif`` is not rewritten (the rewrite replaces statements of a block; an ``elif`` is
#: the ``else`` clause of the ``if`` before it).
ELIF_DECLINE = "an `elif` is rewritten only as a plain `if` (move it into an `else:` block)"


def _contains_call_to(node: ast.expr, names: Set[str], ctx: FunctionContext) -> bool:
    return any(
        isinstance(sub, ast.Call) and ctx.symbols.qualified_name(sub.func) in names
        for sub in walk(node)
    )


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
        deferred = deferred_if(node, ctx, classify_call)
        if deferred is not None and deferred[0] is not None:
            # A chain that only prints, logs or warns: its `if` and `elif` findings carry the
            # plan; the rewrite of the `if` replaces the whole chain.
            plan, decline = deferred
        else:
            plan, decline = where_plan(node, block, ctx)
            split = split_if(node, ctx, classify_call) if plan is None else None
            if split is not None and split[0] is not None:
                plan, decline = split  # its calls deferred as a whole, the rest selected
            elif split is not None and decline and decline in (split[1] or ""):
                decline = f"{decline}; so does splitting its calls from the rest"
            elif split is not None:
                decline = f"{decline}; splitting its calls from the rest declines too: {split[1]}"
            elif deferred is not None and plan is None:
                decline = f"{decline}; deferring the whole `if` declines too: {deferred[1]}"
    else:
        # A condition that is only data-dependent through .item()/int(t) is reported at the
        # materialising call (GM401/GM403): that call is the break. Where [Where] can keep
        # the number a tensor (`if x.abs().max().item() > 100:`), the `if` is reported too,
        # with that fix.
        if is_elif(node, ctx) or not is_item_test(split_condition(node.test, ctx)[1], ctx):
            return
        code, (plan, decline) = "GM201", selection_plan(node, block, ctx)
        if plan is None:
            return
    if plan is not None and not isinstance(plan, DeferIfPlan) and is_elif(node, ctx):
        plan, decline = None, ELIF_DECLINE
    yield ctx.finding(code, node, plan=plan, decline=decline, end_node=node.test)


def check_assert(node: ast.Assert, ctx: FunctionContext) -> Iterator[Finding]:
    """``assert x.max().item() <= n``: a validation guard whose ``.item()`` breaks the graph,
    reported as a guard when [Trap] can keep the number a tensor (otherwise the ``.item()``
    alone is reported, GM401). An ``assert`` on a tensor (``assert mask.all()``) does not break:
    Dynamo turns it into ``torch._assert_async``."""
    if compared_item(node.test, ctx) is not None:
        plan, decline = assert_plan(node, ctx)
        yield ctx.finding("GM301", node, plan=plan, decline=decline, end_node=node.test)


def check_while(node: ast.While, ctx: FunctionContext) -> Iterator[Finding]:
    if ctx.values.kind(node.test) is Kind.TENSOR:
        yield ctx.finding("GM202", node, end_node=node.test)


def check_if_expression(
    node: ast.IfExp, statement: ast.stmt, block: Sequence[ast.stmt], ctx: FunctionContext
) -> Iterator[Finding]:
    """``A if c else B`` on a tensor ``c`` (in ``statement`` of ``block``)."""
    if ctx.values.kind(node.test) is Kind.TENSOR:
        plan, decline = expression_plan(node, statement, block, ctx)
        yield ctx.finding("GM203", node, plan=plan, decline=decline)


def check_call(node: ast.Call, statement: ast.stmt, ctx: FunctionContext) -> Iterator[Finding]:
    """``any()`` or ``all()`` over tensors, which branches on the truth of each."""
    func = node.func
    if (
        isinstance(func, ast.Name)
        and func.id in ("any", "all")
        and func.id not in ctx.symbols.defined_here()
        and len(node.args) == 1
        and not node.keywords
        and _tensor_elements(node.args[0], ctx)
    ):
        # Dynamo runs the generator in a loop of its own, where the branch is a break in a
        # loop (the frame runs eagerly); over a list or tuple it is an ordinary break
        looping = isinstance(node.args[0], ast.GeneratorExp)
        yield ctx.finding("GM204", node, call=func.id, loops=looping)


def _tensor_elements(iterated: ast.expr, ctx: FunctionContext) -> bool:
    """Whether iterating ``iterated`` gives tensors (whose truth ``any()``/``all()`` take): a
    comprehension or display of tensor values (``t.sum() > 0 for t in xs``,
    ``[a.any(), b.any()]``), or a tensor (its rows)."""
    if isinstance(iterated, (ast.GeneratorExp, ast.ListComp, ast.SetComp)):
        return ctx.values.kind(iterated.elt) is Kind.TENSOR
    if isinstance(iterated, (ast.List, ast.Tuple, ast.Set)):
        return any(ctx.values.kind(element) is Kind.TENSOR for element in iterated.elts)
    return ctx.values.kind(iterated) is Kind.TENSOR
