"""[Where]: a Python `if` on a tensor value becomes a selection without a data-dependent branch.

Applies the plans of ``flake8_graphmend/planning/where.py``: ``ReturnSelection``,
``CallSelection``, ``AssignSelection`` and ``ExpressionSelection`` (``a if c else b``).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import libcst as cst

from flake8_graphmend.planning.draws import DrawGuard
from flake8_graphmend.planning.where import (
    AssignSelection,
    CallSelection,
    ExpressionSelection,
    ReturnSelection,
    Selection,
)

from .base import (
    Branch,
    GraphMendCommand,
    PlanMismatch,
    comment_lines,
    conjuncts,
    expect,
    item_kept,
    rewrites_statement,
    shifted,
    tensor_condition,
    with_static_prefix,
)
from .helpers import DRAW_BELOW, KEEPS_BRANCH, WHERE, WHERE_GRAD

Lines = List[Optional[cst.SimpleStatementLine]]
Rewritten = Tuple[List[cst.BaseStatement], bool]


class PredicateControlFlow(GraphMendCommand):
    """Predicate data-dependent `if` statements: both sides are computed and one is selected.

    The selection goes through an emitted helper that uses torch.where only where that is exact
    and branches as before otherwise. Leading static conjuncts (`x.dtype == torch.float16`) stay
    a plain `if`; `and`/`or`/`not` in the tensor condition become torch.logical_*.
    """

    DESCRIPTION = __doc__.splitlines()[0]


@rewrites_statement(ReturnSelection)
def rewrite_return(
    command: GraphMendCommand,
    original: cst.If,
    updated: cst.If,
    plan: ReturnSelection,
    following: Optional[cst.BaseStatement],
) -> Rewritten:
    """``return _graphmend_where(c, A, B)`` in place of both returns."""
    indent, condition = _selection_setup(command, original, updated, plan)
    body = command.branch(updated.body)
    written: List[cst.BaseStatement] = [updated]
    if plan.trailing_return:  # `if c: return A` then `return B`
        line = expect(following, cst.SimpleStatementLine, "the `return` after the `if`")
        orelse: Branch = [(small, line) for small in line.body]
        written.append(line)
    else:
        orelse = command.branch(expect(updated.orelse, cst.Else, "the `else` branch").body)
    arguments = [command.condition_text(condition, "", indent)]
    arguments += [command.code(_single_return(side)) for side in (body, orelse)]
    text = command.call_text("return ", _helper(command, plan), arguments, indent)
    removed = {"body": [line for _, line in body], "orelse": [line for _, line in orelse]}
    selection = [command.statement(text)]
    replaced = _replace(updated, plan, selection, removed)
    return _kept_in_training(command, plan, original, written, replaced), plan.trailing_return


@rewrites_statement(AssignSelection)
def rewrite_assignments(
    command: GraphMendCommand,
    original: cst.If,
    updated: cst.If,
    plan: AssignSelection,
    following: Optional[cst.BaseStatement],
) -> Rewritten:
    """Hoisted setups, the condition temporary and one selection per result name."""
    indent, condition = _selection_setup(command, original, updated, plan)
    where = _helper(command, plan)
    sides = {"body": command.branch(updated.body), "orelse": _orelse_branch(command, updated)}
    hoisted_by_side = {"body": plan.hoisted_body, "orelse": plan.hoisted_orelse}
    values: Dict[str, Dict[str, cst.BaseExpression]] = {}
    removed: Dict[str, Lines] = {}
    hoisted: List[cst.BaseStatement] = []
    for side, branch in sides.items():
        values[side], removed[side] = {}, []
        for index, (small, line) in enumerate(branch):
            if index in hoisted_by_side[side]:
                hoisted.append(command.as_line(small, line))
            else:
                name, value = _assignment(small)
                values[side][name] = value
                removed[side].append(line)
    statements: List[cst.BaseStatement] = []
    selector = command.condition_text(condition, "", indent)
    if plan.condition_temp:
        selector = command.fresh_name("_graphmend_cond")
        statements.append(
            command.statement(command.condition_text(condition, f"{selector} = ", indent))
        )
    statements += hoisted
    for name in plan.results:
        if_true = command.code(values["body"][name]) if name in values["body"] else name
        if_false = command.code(values["orelse"][name]) if name in values["orelse"] else name
        text = command.call_text(f"{name} = ", where, [selector, if_true, if_false], indent)
        statements.append(command.statement(text))
    replaced = _replace(updated, plan, statements, removed)
    return _kept_in_training(command, plan, original, [updated], replaced), False


@rewrites_statement(CallSelection)
def rewrite_common_call(
    command: GraphMendCommand,
    original: cst.If,
    updated: cst.If,
    plan: CallSelection,
    following: Optional[cst.BaseStatement],
) -> Rewritten:
    """The condition temporary and the one call."""
    indent, condition = _selection_setup(command, original, updated, plan)
    where = _helper(command, plan)
    orelse = expect(updated.orelse, cst.Else, "the `else` branch")
    sides = [_statements(updated.body), _statements(orelse.body)]
    calls = [_final_call(side[-1]) for side in sides]
    selector = command.fresh_name("_graphmend_cond")
    statements = [
        command.statement(command.condition_text(condition, f"{selector} = ", indent))
    ]
    arguments = []
    for index, (first, second) in enumerate(zip(calls[0].args, calls[1].args)):
        value = command.code(first.value)
        if index in plan.differing:
            value = f"{where}({selector}, {value}, {command.code(second.value)})"
        arguments.append(f"{first.keyword.value}={value}" if first.keyword else value)
    function = command.code(calls[0].func)
    statements.append(command.statement(command.call_text("", function, arguments, indent)))
    if _kept(plan):
        return _kept_in_training(command, plan, original, [updated], statements), False
    removed: List[cst.CSTNode] = [updated.body, orelse, sides[0][-1], sides[1][-1]]
    first_statement = statements[0]
    # every statement is a line or a compound statement (libcst's BaseStatement has no others)
    assert isinstance(first_statement, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
    statements[0] = first_statement.with_changes(
        leading_lines=(
            *updated.leading_lines,
            *comment_lines(removed),
            *first_statement.leading_lines,
        )
    )
    return statements, False


@rewrites_statement(ExpressionSelection)
def rewrite_expression(
    command: GraphMendCommand,
    original: cst.SimpleStatementLine,
    updated: cst.SimpleStatementLine,
    plan: ExpressionSelection,
    following: Optional[cst.BaseStatement],
) -> Rewritten:
    """``_graphmend_where(c, A, B)`` in place of the value ``A if c else B`` of a ``return`` or
    an assignment; ``(_graphmend_where(c, A, B) if s else B)`` behind static conjuncts ``s``."""
    small, value = _conditional_value(updated)
    indent = command.indentation(original) + (command.module.default_indent if _kept(plan) else "")
    arguments = [
        command.condition_text(tensor_condition(value.test, plan.static_conjuncts), "", indent),
        command.code(value.body),
        command.code(value.orelse),
    ]
    prefix = command.code(small.with_changes(value=cst.Name("_")))[:-1]  # `y = `, `return `
    static = conjuncts(value.test)[: plan.static_conjuncts]
    if static:
        text = _behind_static(command, prefix, static, arguments, plan, indent)
    else:
        text = command.call_text(prefix, _helper(command, plan), arguments, indent)
    emitted = expect(command.statement(text), cst.SimpleStatementLine, "the emitted statement")
    selected = getattr(emitted.body[0], "value")
    lost = [
        cst.EmptyLine(indent=True, comment=comment)
        for comment in _comments(value)
        if comment.value not in text
    ]
    statement = updated.with_changes(
        body=[small.with_changes(value=selected)],
        leading_lines=(*updated.leading_lines, *lost),
    )
    if not _kept(plan):
        return [statement], False
    selection = statement.with_changes(leading_lines=())  # the statement kept has the comments
    return _kept_in_training(command, plan, original, [updated], [selection]), False


def _behind_static(
    command: GraphMendCommand,
    prefix: str,
    static: Sequence[cst.BaseExpression],
    arguments: Sequence[str],
    plan: ExpressionSelection,
    indent: str,
) -> str:
    """``prefix (_graphmend_where(c, A, B) if s else B)``, on one line where it fits, else with
    the selection, the test and the other side each on a line of its own."""
    tests = " and ".join(command.code(operand) for operand in static)
    where = _helper(command, plan)
    one_line = f"{prefix}({where}({', '.join(arguments)}) if {tests} else {arguments[2]})"
    if len(indent) + len(one_line) <= command.line_length and "\n" not in one_line:
        return one_line
    unit = command.module.default_indent
    selection = shifted(command.call_text("", where, arguments, indent + unit), unit)
    parts = [selection, f"if {shifted(tests, unit)}", f"else {shifted(arguments[2], unit)}"]
    return prefix + "(\n" + "".join(f"{unit}{part}\n" for part in parts) + ")"


def _conditional_value(line: cst.BaseStatement) -> Tuple[cst.BaseSmallStatement, cst.IfExp]:
    """The statement of ``line`` (``return``, an assignment) and its value, ``a if c else b``."""
    line = expect(line, cst.SimpleStatementLine, "the statement")
    if len(line.body) != 1:
        raise PlanMismatch("a line of one statement")
    small = line.body[0]
    return small, expect(getattr(small, "value", None), cst.IfExp, "the conditional expression")


def _comments(node: cst.CSTNode) -> List[cst.Comment]:
    """The comments inside ``node`` (an expression spanning lines)."""
    found: List[cst.Comment] = []

    class Comments(cst.CSTVisitor):
        def visit_Comment(self, comment: cst.Comment) -> None:
            found.append(comment)

    node.visit(Comments())
    return found


@rewrites_statement(DrawGuard)
def rewrite_draw_guard(
    command: GraphMendCommand,
    original: cst.BaseStatement,
    updated: cst.BaseStatement,
    plan: DrawGuard,
    following: Optional[cst.BaseStatement],
) -> Rewritten:
    """``_graphmend_draw_below(draw, p)`` in place of the comparison ``draw < p`` (the last
    conjunct) of an ``if`` or of the value ``a if ... else b`` of a statement; one argument a
    line where the statement would get longer than the file's lines."""
    small: Optional[cst.BaseSmallStatement] = None
    extra = ""  # the test of a conditional expression may start on a line of its own
    if isinstance(updated, cst.If):
        test = updated.test
    else:
        small, value = _conditional_value(updated)
        test = value.test
        start = command.line_indentation(_conditional_value(original)[1].test)
        extra = start[len(command.indentation(original)):]
    operands = conjuncts(test)
    if len(operands) != plan.static_conjuncts + 1:
        raise PlanMismatch("the comparison with the random draw")
    if plan.static_conjuncts and not (  # `s and draw < p`: its last operand is replaced
        isinstance(test, cst.BooleanOperation) and test.right is operands[-1]
    ):
        raise PlanMismatch("the `and` chain of the test")
    helper, arguments = command.helper(DRAW_BELOW), [plan.draw, plan.probability]
    for text in (
        command.call_text("", helper, arguments, ""),
        shifted(command.split_call_text("", helper, arguments), extra),
    ):
        header = command.statement(f"if {text}:\n    pass")
        assert isinstance(header, cst.If)
        guarded = test.with_changes(right=header.test) if plan.static_conjuncts else header.test
        if small is None:
            statement = updated.with_changes(test=guarded)
        else:
            condition = getattr(small, "value").with_changes(test=guarded)
            statement = updated.with_changes(body=[small.with_changes(value=condition)])
        if command.fits(statement, original):
            break
    return [statement], False


def _kept(plan: Selection) -> bool:
    """Whether the ``if`` stays as written while autograd records (``_kept_in_training``)."""
    return bool(plan.training_problem or plan.kept_branch)


def _helper(command: GraphMendCommand, plan: Selection) -> str:
    """The selection helper: the one that selects under autograd too where that is exact."""
    return command.helper(WHERE if _kept(plan) else WHERE_GRAD)


def _kept_in_training(
    command: GraphMendCommand,
    plan: Selection,
    original: cst.BaseStatement,
    written: List[cst.BaseStatement],
    selection: List[cst.BaseStatement],
) -> List[cst.BaseStatement]:
    """``selection`` as it is, or, for a selection that may change gradients or show another
    autograd node, ``if _graphmend_keeps_branch(<what the sides compute with>):`` with the
    statements as ``written`` (eager, and while autograd records through those), ``else:``
    with the selection."""
    if not _kept(plan):
        return selection
    first = written[0]
    assert isinstance(first, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
    kept = [first.with_changes(leading_lines=()), *written[1:]]
    indent = command.indentation(original)
    test = command.call_text("if ", command.helper(KEEPS_BRANCH), plan.grad_inputs, indent)
    statement = command.statement(f"{test}:\n{indent}    pass")
    assert isinstance(statement, cst.If)
    return [
        statement.with_changes(
            body=cst.IndentedBlock(body=kept),
            orelse=cst.Else(body=cst.IndentedBlock(body=selection)),
            leading_lines=first.leading_lines,
        )
    ]


def _selection_setup(
    command: GraphMendCommand, original: cst.If, updated: cst.If, plan: Selection
) -> Tuple[str, cst.BaseExpression]:
    """The indentation of the emitted statements and the lowered tensor condition (a number
    from ``.item()`` kept a tensor: ``_graphmend_item``)."""
    indent = command.indentation(original)
    static = plan.static_conjuncts
    if static:
        block = command.indented(updated.body)
        indent += block.indent or command.module.default_indent
    if _kept(plan):  # in the `else` of `if _graphmend_keeps_branch(...):`
        indent += command.module.default_indent
    condition = tensor_condition(updated.test, static)
    return indent, item_kept(command, condition) if plan.item_test else condition


def _orelse_branch(command: GraphMendCommand, node: cst.If) -> Branch:
    if node.orelse is None:
        return []
    return command.branch(expect(node.orelse, cst.Else, "the `else` branch").body)


def _replace(
    updated: cst.If,
    plan: Selection,
    selection: List[cst.BaseStatement],
    removed: Dict[str, Lines],
) -> List[cst.BaseStatement]:
    """The statements that replace the ``if``, comments of the removed code kept above them
    (none where the code as written stays beside the selection: ``_kept_in_training``).

    With static conjuncts the ``if`` line (and the ``else`` branch) stay, around the selection.
    """
    first = selection[0]
    # every statement is a line or a compound statement (libcst's BaseStatement has no others)
    assert isinstance(first, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
    static, kept = plan.static_conjuncts, _kept(plan)
    if static:
        lines = [] if kept else [line for line in removed["body"] if line is not None]
        selection[0] = first.with_changes(
            leading_lines=(*comment_lines(lines), *first.leading_lines)
        )
        block = GraphMendCommand.indented(updated.body)
        rewritten = with_static_prefix(updated, static).with_changes(
            body=block.with_changes(body=selection)
        )
        return [rewritten.with_changes(leading_lines=())] if kept else [rewritten]
    if kept:
        return selection
    gone: List[Optional[cst.CSTNode]] = [
        updated.body, updated.orelse, *removed["body"], *removed["orelse"]
    ]
    comments = comment_lines([node for node in gone if node is not None])
    selection[0] = first.with_changes(
        leading_lines=(*updated.leading_lines, *comments, *first.leading_lines)
    )
    return selection


def _statements(block: cst.BaseSuite) -> List[cst.BaseStatement]:
    """The statements of a branch, a one-line suite as a line of its own."""
    if isinstance(block, cst.IndentedBlock):
        return list(block.body)
    suite = expect(block, cst.SimpleStatementSuite, "a branch")
    if len(suite.body) != 1:
        raise PlanMismatch("a one-line branch")
    small = suite.body[0].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
    return [cst.SimpleStatementLine(body=[small])]


def _final_call(statement: cst.BaseStatement) -> cst.Call:
    """The call of a branch's last line, ``f(...)`` alone on it."""
    line = expect(statement, cst.SimpleStatementLine, "the common call's line")
    if len(line.body) != 1:
        raise PlanMismatch("the common call's line")
    return expect(expect(line.body[0], cst.Expr, "the common call").value, cst.Call, "the call")


def _single_return(branch: Branch) -> cst.BaseExpression:
    """The value of a branch that is one ``return <value>``."""
    if len(branch) != 1:
        raise PlanMismatch("a returning branch")
    value = expect(branch[0][0], cst.Return, "a `return`").value
    if value is None:
        raise PlanMismatch("a `return` value")
    return value


def _assignment(small: cst.BaseSmallStatement) -> Tuple[str, cst.BaseExpression]:
    """(name, value) of ``name = value`` or ``name: T = value``."""
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target: cst.BaseExpression = small.targets[0].target
        value: Optional[cst.BaseExpression] = small.value
    else:
        annotated = expect(small, cst.AnnAssign, "an assignment")
        target, value = annotated.target, annotated.value
    if value is None:
        raise PlanMismatch("an assignment")
    return expect(target, cst.Name, "an assignment's target").value, value
