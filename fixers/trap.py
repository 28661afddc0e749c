"""[Trap]: `if <tensor condition>: raise E("...")` becomes a graph-native check.

Applies the ``TrapPlan`` of ``flake8_graphmend/planning/trap.py``.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

import libcst as cst

from flake8_graphmend.planning.trap import TrapPlan

from .base import (
    GraphMendCommand,
    comment_lines,
    conjuncts,
    expect,
    rewrites_if,
    tensor_condition,
    with_static_prefix,
)
from .helpers import CHECK, DIFFER


class TrapGuards(GraphMendCommand):
    """Turn validation guards on tensor values into checks that stay inside the compiled graph.

    Eager code raises the same exception with the same message. Under torch.compile the check
    runs in the graph as an ordered custom op and a failure raises the same exception type with
    the same message. torch.equal guards compare shapes first, as torch.equal does.
    """

    DESCRIPTION = __doc__.splitlines()[0]


@rewrites_if(TrapPlan)
def rewrite_guard(
    command: GraphMendCommand,
    original: cst.If,
    updated: cst.If,
    plan: TrapPlan,
    following: Optional[cst.BaseStatement],
) -> Tuple[List[cst.BaseStatement], bool]:
    """``_graphmend_check(failed, Error, message)`` in place of the guard."""
    static = plan.static_conjuncts
    ((raise_statement, line),) = command.branch(updated.body)
    raised = expect(raise_statement, cst.Raise, "the guard's `raise`")
    exception = expect(raised.exc, cst.Call, "the raised exception")
    indent = command.indentation(original)
    block = command.indented(updated.body)
    if static:
        indent += block.indent or command.module.default_indent
    if plan.torch_equal:
        failed = _differ(command, conjuncts(updated.test)[static], plan.negated, indent)
    else:
        failed = command.condition_text(tensor_condition(updated.test, static), "", indent)
    arguments = [failed, command.code(exception.func), command.code(exception.args[0].value)]
    check = command.statement(command.call_text("", command.helper(CHECK), arguments, indent))
    if static:  # the `if` line stays
        check = check.with_changes(leading_lines=comment_lines([line] if line else []))
        guard = with_static_prefix(updated, static)
        return [guard.with_changes(body=block.with_changes(body=[check]))], False
    comments = comment_lines([node for node in (updated.body, line) if node is not None])
    return [check.with_changes(leading_lines=(*updated.leading_lines, *comments))], False


def _differ(
    command: GraphMendCommand, test: cst.BaseExpression, negated: bool, indent: str
) -> str:
    """The failure condition of ``if not torch.equal(a, b)`` (or ``if torch.equal(a, b)``)."""
    if negated:
        test = expect(test, cst.UnaryOperation, "the negated torch.equal() test").expression
    call = expect(test, cst.Call, "the torch.equal() call")
    arguments = [command.code(arg.value) for arg in call.args]
    differ = command.call_text("", command.helper(DIFFER), arguments, indent)
    return differ if negated else f"torch.logical_not({differ})"
