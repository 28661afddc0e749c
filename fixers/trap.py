"""[Trap]: `if <tensor condition>: raise E("...")` becomes a graph-native check.

Fixes GM301 and GM302 sites as planned by ``rules/control_flow.py::trap_plan``.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

import libcst as cst

from flake8_graphmend.rules.base import Finding

from .base import (
    Decline,
    IfRewriteCommand,
    comment_lines,
    conjuncts,
    tensor_condition,
    with_static_prefix,
)
from .helpers import CHECK, DIFFER


class TrapGuards(IfRewriteCommand):
    """Turn validation guards on tensor values into checks that stay inside the compiled graph.

    Eager code raises the same exception with the same message. Under torch.compile the check
    runs in the graph (torch._assert_async) and a failure raises RuntimeError with the message.
    torch.equal guards compare shapes first, as torch.equal does.
    """

    DESCRIPTION = __doc__.splitlines()[0]
    CODES = frozenset({"GM301", "GM302"})

    def rewrite_if(
        self,
        original: cst.If,
        updated: cst.If,
        finding: Finding,
        following: Optional[cst.BaseStatement],
    ) -> Tuple[List[cst.BaseStatement], bool]:
        plan = finding.plan
        static = plan["static_conjuncts"]
        branch = self.branch(updated.body)
        if updated.orelse is not None or len(branch) != 1:
            raise Decline("the guard is not a lone `raise`")
        raise_statement, line = branch[0]
        exception = raise_statement.exc if isinstance(raise_statement, cst.Raise) else None
        if not isinstance(exception, cst.Call):
            raise Decline("the guard's body is not `raise Error(message)`")
        indent = self.indentation(original)
        block = self.indented(updated.body)
        if static:
            indent += block.indent or self.module.default_indent
        if plan["kind"] == "equal":
            failed = self._differ(conjuncts(updated.test)[static], plan["negated"], indent)
        else:
            failed = self.condition_text(tensor_condition(updated.test, static), "", indent)
        arguments = [failed, self.code(exception.func), self.code(exception.args[0].value)]
        check = self.statement(self.call_text("", self.helper(CHECK), arguments, indent))
        if static:  # the `if` line stays
            check = check.with_changes(leading_lines=comment_lines([line] if line else []))
            guard = with_static_prefix(updated, static)
            return [guard.with_changes(body=block.with_changes(body=[check]))], False
        comments = comment_lines([node for node in (updated.body, line) if node is not None])
        return [check.with_changes(leading_lines=(*updated.leading_lines, *comments))], False

    def _differ(self, test: cst.BaseExpression, negated: bool, indent: str) -> str:
        """The failure condition of ``if not torch.equal(a, b)`` (or ``if torch.equal(a, b)``)."""
        call = test.expression if negated and isinstance(test, cst.UnaryOperation) else test
        if not (isinstance(call, cst.Call) and len(call.args) == 2):
            raise Decline("the torch.equal() call is not in the planned form")
        differ = self.call_text(
            "", self.helper(DIFFER), [self.code(arg.value) for arg in call.args], indent
        )
        return differ if negated else f"torch.logical_not({differ})"
