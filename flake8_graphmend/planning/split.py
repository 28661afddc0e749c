"""[Defer] and [Where] together: an ``if`` on a tensor whose branches both log and compute.

``if torch.isinf(h).any(): logger.warning("clamping"); h = h.clamp(-1e4, 1e4)`` is neither an
``if`` that only prints, logs or warns (deferred as a whole, ``defer.py``) nor one that only
selects values (``where.py``). It becomes two statements on the same test, each planned by its
own planner on the original nodes: first the calls, deferred as a whole, then the selection of
the rest. The test has been computed before any branch runs and the selection can neither fail
nor change anything, so running the calls first is exact when

* every call comes before the other statements of its branch (what they compute may fail,
  and the selection makes a new tensor, whose ``repr`` under autograd names another
  ``grad_fn``);
* computing the test again gives the same value: it changes nothing (``analysis/purity.py``;
  a random draw, an update in place). If it fails, the first computation fails as the
  original did.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, FrozenSet, List, Optional, Sequence

from ..analysis.index import child_blocks, parent_map
from ..analysis.purity import impurity
from . import Plan, Planned, Position, declined
from .conditions import is_elif, on_header_line, shared_line_problem
from .defer import Classify, DeferIfPlan, deferred_if_plan
from .where import WherePlan, selection_plan

if TYPE_CHECKING:
    from ..rules.base import FunctionContext


@dataclass(frozen=True)
class SplitIfPlan(Plan):
    """Two statements in place of the ``if``: the deferred ``if`` of its print, log and warn
    calls, then the selection of the rest."""

    ordered = True

    #: The ``if`` of the calls (the other statements left out of its branches).
    calls: DeferIfPlan
    #: The selection of the other statements (the calls left out of the branches).
    selection: WherePlan

    def caveat(self) -> Optional[str]:
        return self.selection.caveat()

    def covers(self) -> FrozenSet[Position]:
        return self.calls.covers()


def split_if(
    node: ast.If, ctx: FunctionContext, classify: Classify
) -> Optional[Planned[SplitIfPlan]]:
    """Whether the ``if`` may be split into a deferred ``if`` and a selection; None when its
    branches do not both hold print, log or warn calls and other statements."""
    memo = vars(ctx).setdefault("_split_ifs", {})  # kept like a cached_property's value
    if id(node) not in memo:
        memo[id(node)] = _plan(node, ctx, classify)
    planned: Optional[Planned[SplitIfPlan]] = memo[id(node)]
    return planned


def split_if_of_call(
    statement: ast.stmt, ctx: FunctionContext, classify: Classify
) -> Optional[SplitIfPlan]:
    """The plan of the split ``if`` whose branch holds ``statement`` (a call's statement)."""
    parent = parent_map(ctx.region.function).get(id(statement))
    if not isinstance(parent, ast.If) or not ctx.values.is_data_dependent(parent.test):
        return None
    return (split_if(parent, ctx, classify) or (None, None))[0]


def _plan(node: ast.If, ctx: FunctionContext, classify: Classify) -> Optional[Planned[SplitIfPlan]]:
    if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If) or is_elif(node, ctx):
        return None  # an `elif` chain, or a clause of one: no selection of more outcomes
    if on_header_line(node, ctx) or shared_line_problem(node, ctx, one_line_suites=False):
        return None  # the rewrites move whole lines
    calls: List[ast.stmt] = []
    others: List[List[ast.stmt]] = [[], []]
    for branch, rest in zip((node.body, node.orelse), others):
        for statement in branch:
            if not (
                isinstance(statement, ast.Expr)
                and isinstance(statement.value, ast.Call)
                and classify(statement.value, ctx) is not None
            ):
                rest.append(statement)
                continue
            if rest:
                return declined(
                    f"the call of line {statement.lineno} follows other statements of its "
                    "branch: the calls go first, before what may fail or bind a new tensor"
                )
            calls.append(statement)
    if not calls or not any(others):
        return None
    if not any(statement in calls for statement in node.body):
        return declined("only the `else` branch prints, logs or warns")
    problem = impurity(node.test, ctx.values, ctx.symbols, again=True)
    if problem:
        return declined(f"its test would be computed twice: {problem}")
    deferred, reason = deferred_if_plan(node, ctx, classify, only=calls) or (None, "")
    if deferred is None:
        return declined(f"the deferred `if` of its calls declines: {reason}")
    selection, reason = _selection(node, others, ctx)
    if selection is None:
        return declined(f"the selection of its other statements declines: {reason}")
    return SplitIfPlan(deferred, selection), None


def _selection(
    node: ast.If, others: Sequence[List[ast.stmt]], ctx: FunctionContext
) -> Planned[WherePlan]:
    """The [Where] plan of ``node`` without its calls (a copy at the same place: the analyses
    find its statements by identity and the code around it by line)."""
    part = ast.If(test=node.test, body=others[0], orelse=others[1])
    ast.copy_location(part, node)
    block = _block_of(node, ctx)
    in_place = [part if statement is node else statement for statement in block]
    return selection_plan(part, in_place, ctx)


def _block_of(node: ast.If, ctx: FunctionContext) -> List[ast.stmt]:
    """The statement list that holds ``node``."""
    function = ctx.region.function
    parent = parent_map(function).get(id(node), function)
    assert isinstance(parent, ast.stmt)  # an `if` is a statement of a block
    return next(b for b in child_blocks(parent) if any(s is node for s in b))
