"""[Where]: a Python `if` on a tensor value becomes a selection without a data-dependent branch.

Fixes GM201 sites as planned by ``rules/control_flow.py::where_plan``.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import libcst as cst

from flake8_graphmend.rules.base import Finding

from .base import (
    Branch,
    Decline,
    IfRewriteCommand,
    comment_lines,
    tensor_condition,
    with_static_prefix,
)
from .helpers import WHERE

Lines = List[Optional[cst.BaseStatement]]


class PredicateControlFlow(IfRewriteCommand):
    """Predicate data-dependent `if` statements: both sides are computed and one is selected.

    The selection goes through an emitted helper that uses torch.where only where that is exact
    and branches as before otherwise. Leading static conjuncts (`x.dtype == torch.float16`) stay
    a plain `if`; `and`/`or`/`not` in the tensor condition become torch.logical_*.
    """

    DESCRIPTION = __doc__.splitlines()[0]
    CODES = frozenset({"GM201"})

    def rewrite_if(
        self,
        original: cst.If,
        updated: cst.If,
        finding: Finding,
        following: Optional[cst.BaseStatement],
    ) -> Tuple[List[cst.BaseStatement], bool]:
        plan = finding.plan
        static = plan["static_conjuncts"]
        if isinstance(updated.orelse, cst.If):
            raise Decline("an elif chain has more than two outcomes")
        indent = self.indentation(original)
        block = self.indented(updated.body)
        if static:
            indent += block.indent or self.module.default_indent
        condition = tensor_condition(updated.test, static)
        where = self.helper(WHERE)
        if plan["shape"] == "call":
            return self._merged_call(updated, plan, condition, where, indent), False
        sides = {
            "body": self.branch(updated.body),
            "orelse": self.branch(updated.orelse.body) if updated.orelse else [],
        }
        consumed = plan["shape"] == "return" and plan["trailing_return"]
        if plan["shape"] == "return":
            if consumed:  # `if c: return A` then `return B`
                if not isinstance(following, cst.SimpleStatementLine):
                    raise Decline("the statement after the `if` is not a plain `return`")
                sides["orelse"] = [(small, following) for small in following.body]
            values = [_single_return(sides["body"]), _single_return(sides["orelse"])]
            arguments = [self.condition_text(condition, "", indent)]
            arguments += [self.code(value) for value in values]
            predicated = [self.statement(self.call_text("return ", where, arguments, indent))]
            removed = {side: [line for _, line in branch] for side, branch in sides.items()}
        else:
            predicated, removed = self._selections(sides, plan, condition, where, indent)
        if static:  # the `if` line and the else branch stay
            comments = comment_lines([line for line in removed["body"] if line is not None])
            first = predicated[0]
            predicated[0] = first.with_changes(leading_lines=(*comments, *first.leading_lines))
            rewritten = with_static_prefix(updated, static).with_changes(
                body=block.with_changes(body=predicated)
            )
            return [rewritten], consumed
        gone = [updated.body, updated.orelse, *removed["body"], *removed["orelse"]]
        comments = comment_lines([node for node in gone if node is not None])
        first = predicated[0]
        predicated[0] = first.with_changes(
            leading_lines=(*updated.leading_lines, *comments, *first.leading_lines)
        )
        return predicated, consumed

    def _selections(
        self,
        sides: Dict[str, Branch],
        plan: dict,
        condition: cst.BaseExpression,
        where: str,
        indent: str,
    ) -> Tuple[List[cst.BaseStatement], Dict[str, Lines]]:
        """Hoisted setups, the condition temporary and one selection per result name."""
        values: Dict[str, Dict[str, cst.BaseExpression]] = {}
        removed: Dict[str, Lines] = {}
        hoisted: List[cst.BaseStatement] = []
        for side, branch in sides.items():
            values[side], removed[side] = {}, []
            for index, (small, line) in enumerate(branch):
                if index in plan["hoisted"][side]:
                    hoisted.append(self.as_line(small, line))
                else:
                    name, value = _assignment(small)
                    values[side][name] = value
                    removed[side].append(line)
        statements: List[cst.BaseStatement] = []
        selector = self.condition_text(condition, "", indent)
        if plan["condition_temp"]:
            selector = self.fresh_name("_graphmend_cond")
            statements.append(
                self.statement(self.condition_text(condition, f"{selector} = ", indent))
            )
        statements += hoisted
        for name in plan["results"]:
            if_true = self.code(values["body"][name]) if name in values["body"] else name
            if_false = self.code(values["orelse"][name]) if name in values["orelse"] else name
            text = self.call_text(f"{name} = ", where, [selector, if_true, if_false], indent)
            statements.append(self.statement(text))
        return statements, removed

    def _merged_call(
        self, node: cst.If, plan: dict, condition: cst.BaseExpression, where: str, indent: str
    ) -> List[cst.BaseStatement]:
        """The condition temporary, both branches' moved statements, and the one call."""
        sides = [_statements(node.body), _statements(node.orelse.body)]
        calls = [_final_call(side[-1]) for side in sides]
        selector = self.fresh_name("_graphmend_cond")
        statements = [self.statement(self.condition_text(condition, f"{selector} = ", indent))]
        statements += [*sides[0][:-1], *sides[1][:-1]]
        arguments = []
        for index, (first, second) in enumerate(zip(calls[0].args, calls[1].args)):
            value = self.code(first.value)
            if index in plan["differing"]:
                value = f"{where}({selector}, {value}, {self.code(second.value)})"
            arguments.append(f"{first.keyword.value}={value}" if first.keyword else value)
        function = self.code(calls[0].func)
        statements.append(self.statement(self.call_text("", function, arguments, indent)))
        removed = [node.body, node.orelse, sides[0][-1], sides[1][-1]]
        first = statements[0]
        statements[0] = first.with_changes(
            leading_lines=(*node.leading_lines, *comment_lines(removed), *first.leading_lines)
        )
        return statements


def _statements(block: cst.BaseSuite) -> List[cst.BaseStatement]:
    """The statements of a branch, a one-line suite as a line of its own."""
    if isinstance(block, cst.IndentedBlock):
        return list(block.body)
    if len(block.body) != 1:
        raise Decline("a branch holds several statements on one line")
    small = block.body[0].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
    return [cst.SimpleStatementLine(body=[small])]


def _final_call(statement: cst.BaseStatement) -> cst.Call:
    """The call of a branch's last line, ``f(...)`` alone on it."""
    if (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, cst.Call)
    ):
        return statement.body[0].value
    raise Decline("the common call shares its line with other statements")


def _single_return(branch: Branch) -> cst.BaseExpression:
    """The value of a branch that is one ``return <value>``."""
    if len(branch) != 1 or not isinstance(branch[0][0], cst.Return) or branch[0][0].value is None:
        raise Decline("a branch is not a single `return <value>`")
    return branch[0][0].value


def _assignment(small: cst.BaseSmallStatement) -> Tuple[str, cst.BaseExpression]:
    """(name, value) of ``name = value`` or ``name: T = value``."""
    if (
        isinstance(small, cst.Assign)
        and len(small.targets) == 1
        and isinstance(small.targets[0].target, cst.Name)
    ):
        return small.targets[0].target.value, small.value
    if (
        isinstance(small, cst.AnnAssign)
        and isinstance(small.target, cst.Name)
        and small.value is not None
    ):
        return small.target.value, small.value
    raise Decline("a branch statement is not an assignment to a plain name")
