"""An ``if`` whose branches print, log or warn and compute: the deferred ``if`` of its calls and
the selection of the rest (``SplitIfPlan``), each written by its own rewrite."""

from __future__ import annotations

from typing import List, Optional, Tuple

import libcst as cst

from flake8_graphmend.planning.split import SplitIfPlan

from .base import (
    GraphMendCommand,
    PlanMismatch,
    expect,
    rewrite_statement,
    rewrites_statement,
)


@rewrites_statement(SplitIfPlan)
def rewrite_split(
    command: GraphMendCommand,
    original: cst.If,
    updated: cst.If,
    plan: SplitIfPlan,
    following: Optional[cst.BaseStatement],
) -> Tuple[List[cst.BaseStatement], bool]:
    """The deferred ``if`` of the calls, then the selection of the rest; the comments of the
    ``if`` go with the first (each rewrite keeps the comments of what it removes)."""
    calls, rest = _parts(command, original, updated, plan)
    deferred, _ = rewrite_statement(command, original, calls, plan.calls, None)
    selected, consumed = rewrite_statement(
        command, original, _without_comments(rest), plan.selection, following
    )
    return deferred + selected, consumed


def _parts(
    command: GraphMendCommand, original: cst.If, updated: cst.If, plan: SplitIfPlan
) -> Tuple[cst.If, cst.If]:
    """``updated`` with its print, log and warn calls only, and with the other statements only
    (an ``else`` left without calls is dropped from the calls' part). The calls are those of
    the plan, found at their places in ``original``, whose lines ``updated`` has in order."""
    pairs = [(original.body, updated.body)]
    if original.orelse is not None:
        pairs.append(
            (
                expect(original.orelse, cst.Else, "the `else` branch").body,
                expect(updated.orelse, cst.Else, "the `else` branch").body,
            )
        )
    parts: List[List[cst.IndentedBlock]] = [[], []]
    for before, after in pairs:
        block = expect(after, cst.IndentedBlock, "a branch block")
        old = expect(before, cst.IndentedBlock, "a branch block").body
        if len(old) != len(block.body):
            raise PlanMismatch("a branch")
        called = [_is_planned_call(command, line, plan) for line in old]
        blocks = (
            [line for line, call in zip(block.body, called) if call],
            [line for line, call in zip(block.body, called) if not call],
        )
        for part, body in zip(parts, blocks):
            part.append(block.with_changes(body=body))
    orelse = updated.orelse
    calls_else = None
    if isinstance(orelse, cst.Else) and parts[0][1].body:
        calls_else = orelse.with_changes(body=parts[0][1])
    rest_else = orelse.with_changes(body=parts[1][1]) if isinstance(orelse, cst.Else) else None
    return (
        updated.with_changes(body=parts[0][0], orelse=calls_else),
        updated.with_changes(body=parts[1][0], orelse=rest_else),
    )


def _is_planned_call(command: GraphMendCommand, line: cst.BaseStatement, plan: SplitIfPlan) -> bool:
    """Whether ``line`` (an original branch line) is one of the calls the plan defers."""
    if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1):
        return False
    small = line.body[0]
    if not (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)):
        return False
    start = command.position(small.value).start
    return (start.line, start.column) in plan.calls.call_sites


def _without_comments(node: cst.If) -> cst.If:
    """``node`` without the comments that the other part keeps: above it, after its ``:``, at
    the end of its blocks and above its ``else``."""
    bare = {"header": cst.TrailingWhitespace(), "footer": []}
    body = GraphMendCommand.indented(node.body).with_changes(**bare)
    orelse = node.orelse
    if isinstance(orelse, cst.Else):
        orelse = orelse.with_changes(
            leading_lines=[], body=GraphMendCommand.indented(orelse.body).with_changes(**bare)
        )
    return node.with_changes(leading_lines=[], body=body, orelse=orelse)
