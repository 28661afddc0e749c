"""[Trap]: `if <tensor condition>: raise E("...")` becomes a graph-native check, and so does
`assert <reduction>.item() <op> <int>`.

Applies the ``TrapPlan`` and ``AssertPlan`` of ``flake8_graphmend/planning/trap.py``.
"""

from __future__ import annotations

from typing import AbstractSet, Dict, List, Optional, Set, Tuple

import libcst as cst

from flake8_graphmend.planning.trap import AssertPlan, ItemKeptPlan, TrapPlan

from .base import (
    GraphMendCommand,
    comment_lines,
    conjuncts,
    expect,
    item_kept,
    literal_spans_lines,
    rewrites_statement,
    tensor_condition,
    with_static_prefix,
)
from .helpers import ASSERT, CHECK, DIFFER, METADATA, PREFIX


class TrapGuards(GraphMendCommand):
    """Turn validation guards on tensor values into checks that stay inside the compiled graph.

    Eager code raises the same exception with the same message. Under torch.compile the check
    runs in the graph as an ordered custom op and a failure raises the same exception type with
    the same message. torch.equal guards compare shapes first, as torch.equal does.
    """

    DESCRIPTION = __doc__.splitlines()[0]


@rewrites_statement(TrapPlan)
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
    elif plan.item_compared:
        failed = command.code(item_kept(command, conjuncts(updated.test)[static]))
    else:
        failed = command.condition_text(tensor_condition(updated.test, static), "", indent)
    message = exception.args[0].value
    if plan.lazy_message:
        name, values = _lazy_check(command, exception, message, plan)
        arguments = [failed, *values]
    else:
        name = command.helper(CHECK)
        arguments = [failed, command.code(exception.func), command.code(message)]
    check = command.statement(command.call_text("", name, arguments, indent))
    if static:  # the `if` line stays
        check = check.with_changes(leading_lines=comment_lines([line] if line else []))
        guard = with_static_prefix(updated, static)
        return [guard.with_changes(body=block.with_changes(body=[check]))], False
    comments = comment_lines([node for node in (updated.body, line) if node is not None])
    return [check.with_changes(leading_lines=(*updated.leading_lines, *comments))], False


class _Parameters(cst.CSTTransformer):
    """Each formatted expression of an f-string (or of f-strings joined) becomes a parameter,
    ``value1``, ``value2``..., in source order; ``values`` holds the expressions' code. In the
    ``evaluated`` ones (by index) only the ``carried`` local names and ``self``'s attribute
    chains become parameters: the helper computes the rest."""

    def __init__(
        self,
        command: GraphMendCommand,
        evaluated: AbstractSet[int],
        carried: AbstractSet[str],
        measured: AbstractSet[str] = frozenset(),
    ) -> None:
        super().__init__()
        self.command = command
        self.evaluated, self.carried, self.measured = evaluated, carried, measured
        self.values: List[str] = []
        self.names: List[str] = []
        self.pieces = 0
        self._names: Dict[str, cst.Name] = {}

    def parameter(self, value: cst.BaseExpression, prefix: str = "value") -> cst.Name:
        self.values.append(self.command.code(value))
        self.names.append(f"{prefix}{len(self.values)}")
        return cst.Name(self.names[-1])

    def carried_name(self, name: cst.Name) -> cst.Name:
        """The parameter for a carried local; one read only for its metadata is named so
        (``METADATA``), which lets a tensor that requires grad go to the op."""
        if name.value not in self._names:
            prefix = METADATA if name.value in self.measured else "value"
            self._names[name.value] = self.parameter(name, prefix)
        return self._names[name.value]

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> bool:
        return False  # its expression is replaced here, whole or in parts

    def leave_FormattedStringExpression(
        self, original: cst.FormattedStringExpression, updated: cst.FormattedStringExpression
    ) -> cst.FormattedStringExpression:
        index, self.pieces = self.pieces, self.pieces + 1
        if index in self.evaluated:
            expression = original.expression.visit(_Carried(self))
        else:
            expression = self.parameter(original.expression)
        assert isinstance(expression, cst.BaseExpression)
        return updated.with_changes(expression=expression)


class _Carried(cst.CSTTransformer):
    """The carried names and ``self``'s attribute chains of an evaluated expression become
    the parameters that the helper receives."""

    def __init__(self, parameters: _Parameters) -> None:
        super().__init__()
        self.parameters = parameters
        self.not_names: Set[int] = set()  # attribute names and keywords, not variables

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        self.not_names.add(id(node.attr))
        return not _self_chain(node)

    def leave_Attribute(
        self, original: cst.Attribute, updated: cst.Attribute
    ) -> cst.BaseExpression:
        return self.parameters.parameter(original) if _self_chain(original) else updated

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.not_names.add(id(node.keyword))

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        if id(original) in self.not_names or original.value not in self.parameters.carried:
            return updated
        return self.parameters.carried_name(original)


def _self_chain(node: cst.BaseExpression) -> bool:
    """``self.a.b``: attributes only, down to ``self``."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name) and node.value == "self"


def _lazy_check(
    command: GraphMendCommand, exception: cst.Call, message: cst.BaseExpression, plan: TrapPlan
) -> Tuple[str, List[str]]:
    """A check of its own, ``(failed, value1, ...)``, that raises with the f-string ``message``
    built from the values only when ``failed``; its name, and the values it is passed (each
    formatted expression of the message, or what an evaluated one reads, in order)."""
    parameters = _Parameters(command, plan.evaluated, plan.carried, plan.measured)
    built = message.visit(parameters)
    assert isinstance(built, cst.BaseExpression)
    values = parameters.values
    taken = ["failed", *parameters.names]
    error = command.code(exception.func)
    text = command.code(built.with_changes(lpar=[], rpar=[]))
    if not literal_spans_lines(text):  # one literal a line, as the message was
        text = "\n".join(" " * 12 + line.strip() for line in text.split("\n"))
    else:  # a line break inside a literal is text: leave the lines as they are
        text = " " * 12 + text
    body = f"    if failed:\n        raise {error}(\n{text}\n        )\n"
    name = command.deferred_helper(PREFIX + "check_" + error.lower(), taken, body, shared=False)
    return name, values


@rewrites_statement(AssertPlan)
def rewrite_assert(
    command: GraphMendCommand,
    original: cst.SimpleStatementLine,
    updated: cst.SimpleStatementLine,
    plan: AssertPlan,
    following: Optional[cst.BaseStatement],
) -> Tuple[List[cst.BaseStatement], bool]:
    """``if __debug__: _graphmend_assert(<test>[, message])`` in place of the ``assert``."""
    (small,) = updated.body
    statement = expect(small, cst.Assert, "the `assert`")
    indent = command.indentation(original) + command.module.default_indent
    arguments = [command.code(item_kept(command, statement.test))]
    if statement.msg is not None:
        arguments.append(command.code(statement.msg))
    check = command.call_text("", command.helper(ASSERT), arguments, indent)
    unit = command.module.default_indent
    text = f"if __debug__:{command.module.default_newline}{unit}" + check.replace(
        command.module.default_newline, command.module.default_newline + unit
    )
    guard = expect(command.statement(text), cst.If, "the emitted `if __debug__:`")
    block = expect(guard.body, cst.IndentedBlock, "the emitted block")
    # `assert ...  # why`: the comment ends the `if __debug__:` line
    block = block.with_changes(header=updated.trailing_whitespace)
    return [guard.with_changes(body=block, leading_lines=updated.leading_lines)], False


@rewrites_statement(ItemKeptPlan)
def rewrite_flag(
    command: GraphMendCommand,
    original: cst.SimpleStatementLine,
    updated: cst.SimpleStatementLine,
    plan: ItemKeptPlan,
    following: Optional[cst.BaseStatement],
) -> Tuple[List[cst.BaseStatement], bool]:
    """``flag = <the comparison, the number kept a tensor>``; the value in parentheses on a
    line of its own when the line would be too long."""
    (small,) = updated.body
    assign = expect(small, cst.Assign, "the flag's assignment")
    targets = "".join(command.code(target) for target in assign.targets)
    value = command.code(item_kept(command, assign.value))
    indent = command.indentation(original)
    text = f"{targets}{value}"
    if len(indent) + len(text) > command.line_length:
        newline, unit = command.module.default_newline, command.module.default_indent
        text = f"{targets}({newline}{unit}{value}{newline})"
    statement = command.statement(text).with_changes(
        leading_lines=updated.leading_lines, trailing_whitespace=updated.trailing_whitespace
    )
    return [statement], False


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
