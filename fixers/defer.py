"""[Defer]: print, logger and warnings.warn calls go through a helper that runs in the graph.

Applies the ``DeferPlan`` of ``flake8_graphmend/planning/defer.py`` to a call, and its
``DeferIfPlan`` to an ``if`` on a tensor whose branches only make such calls: one helper runs
the whole ``if`` (GM201, applied by ``PredicateControlFlow`` and ``FixAll``).
"""

from __future__ import annotations

import re
from typing import AbstractSet, Callable, List, Optional, Sequence, Set, Tuple

import libcst as cst

from flake8_graphmend.planning.defer import DeferIfPlan, DeferPlan

from .base import (
    Decline,
    GraphMendCommand,
    comment_lines,
    conjuncts,
    expect,
    names_in,
    rewrites_call,
    rewrites_statement,
    with_static_prefix,
)
from .base import shifted
from .helpers import (
    DEFERRED_WRAPPER_FRAMES,
    IN_GRAPH,
    METADATA,
    NUMBER,
    PREFIX,
    call_source,
)

#: Callees whose first positional argument is the message.
_MESSAGE_FIRST = re.compile(
    r"(^|\.)(warn|debug|info|warning|warning_once|warning_advice|info_once|error|critical|fatal)$"
)


class DeferSideEffects(GraphMendCommand):
    """Defer print, logging and warnings.warn calls in compiled code until after the graph runs.

    Each call becomes a call of a module-level helper that, under torch.compile, runs as an
    ordered custom op inside the graph: at the same point, in every frame Dynamo inlines, with
    the tensors as they are at the call. Arguments written in the source (messages, the
    category of warnings.warn, keywords) are built into the helper; only tensors are passed.
    `stacklevel` is raised past the helper's frames, so that eager records and warnings keep
    the caller's location; run by the graph, they are made from the helper's line, in the
    caller's module (each warnings.warn call has a helper of its own).
    """

    DESCRIPTION = __doc__.splitlines()[0]


@rewrites_call(DeferPlan)
def rewrite_call(command: GraphMendCommand, call: cst.Call, plan: DeferPlan) -> cst.Call:
    """The call of the helper, which makes ``call`` with the baked arguments built in."""
    taken: List[str] = []
    reserved = names_in(call)
    parameters, inner, kept = _helper_arguments(
        command, call, plan, lambda name: _fresh(name, taken, reserved)
    )
    name = command.deferred_helper(
        PREFIX + plan.callee.replace(".", "_"),
        parameters + _located([plan], reserved),
        call_source(plan.callee, inner, "    "),
        shared=not plan.own_helper,
    )
    if not kept:
        return call.with_changes(
            func=cst.Name(name), args=[], whitespace_before_args=cst.SimpleWhitespace("")
        )
    last = call.args[-1]  # the end of the argument list keeps its formatting
    kept[-1] = kept[-1].with_changes(
        comma=last.comma, whitespace_after_arg=last.whitespace_after_arg
    )
    return call.with_changes(func=cst.Name(name), args=kept)


def _located(plans: Sequence[DeferPlan], reserved: AbstractSet[str]) -> List[str]:
    """The helper's ``in_graph`` keyword, where a call passes ``stacklevel``: the graph sets it,
    and the call is then attributed to the helper's own line."""
    if all(plan.stacklevel is None for plan in plans):
        return []
    if IN_GRAPH in reserved:
        raise Decline(f"the call reads `{IN_GRAPH}`, the name of the helper's keyword")
    return ["*", f"{IN_GRAPH}=False"]


def _helper_arguments(
    command: GraphMendCommand, call: cst.Call, plan: DeferPlan, named: Callable[[str], str]
) -> Tuple[List[str], List[str], List[cst.Arg]]:
    """The helper's parameters for ``call`` (each named by ``named``), the arguments of its
    call of the callee, and the arguments of ``call`` that are passed to it."""
    positional = [arg for arg in call.args if arg.keyword is None]
    keywords = [arg for arg in call.args if arg.keyword is not None]
    parameters: List[str] = []
    inner: List[str] = []
    kept: List[cst.Arg] = []
    for index, arg in enumerate(positional):
        if index in plan.baked_args:
            inner.append(command.code(arg.value))
        elif index in plan.formatted_args:
            message, names, passed = _built_message(arg.value, index, plan, named)
            parameters += names
            inner.append(command.code(message))
            kept += passed
        else:
            parameters.append(named(_parameter_name(plan, index)))
            inner.append(parameters[-1] + _read_in_helper(arg.value, index, plan))
            kept.append(_passed(arg, index, plan))
    for arg in keywords:
        name = arg.keyword.value if arg.keyword else ""
        if plan.stacklevel is None or name != "stacklevel":
            inner.append(f"{name}={command.code(arg.value)}")
    if plan.stacklevel is not None:  # the plan counts the helper's frame; add its wrapper's
        level = plan.stacklevel + DEFERRED_WRAPPER_FRAMES
        inner.append(f"stacklevel=1 if {IN_GRAPH} else {level}")
    return parameters, inner, kept


def _built_message(
    value: cst.BaseExpression, index: int, plan: DeferPlan, named: Callable[[str], str]
) -> Tuple[cst.FormattedString, List[str], List[cst.Arg]]:
    """For the f-string argument ``index`` that the helper builds: the f-string the helper
    formats, its parameters, and what the call passes for them. A number's value is passed as
    the tensor (of ``t.item()``: ``t``), and the helper formats it as the original did (taking
    ``.item()`` again); a value that changes between calls (a size) is passed as it is, and
    formatted by the helper too; any other value is passed as its own text, an f-string of it
    alone."""
    message = expect(value, cst.FormattedString, "an f-string")
    parts: List[cst.BaseFormattedStringContent] = []
    parameters: List[str] = []
    passed: List[cst.Arg] = []
    values = iter(range(len(message.parts)))
    for part in message.parts:
        if not isinstance(part, cst.FormattedStringExpression):
            parts.append(part)
            continue
        position = (index, next(values))
        if position in plan.passed_values:  # formatted by the helper, as the original did
            parameters.append(named(f"value{index}_{position[1]}"))
            passed.append(cst.Arg(value=part.expression))
            parts.append(part.with_changes(expression=cst.Name(parameters[-1])))
            continue
        if position not in plan.numbers:
            parameters.append(named(f"text{index}_{position[1]}"))
            passed.append(cst.Arg(value=message.with_changes(parts=[part])))
            parts.append(cst.FormattedStringExpression(expression=cst.Name(parameters[-1])))
            continue
        parameters.append(named(f"{NUMBER}{index}_{position[1]}"))
        read: cst.BaseExpression = cst.Name(parameters[-1])
        tensor = part.expression
        if position in plan.item_numbers:
            item = expect(tensor, cst.Call, "the `.item()` call")
            tensor = expect(item.func, cst.Attribute, "the `.item` attribute").value
            read = cst.Call(func=cst.Attribute(value=read, attr=cst.Name("item")))
        passed.append(cst.Arg(value=tensor))
        parts.append(
            cst.FormattedStringExpression(
                expression=read, conversion=part.conversion, format_spec=part.format_spec
            )
        )
    return message.with_changes(parts=parts), parameters, passed


def _read_in_helper(value: cst.BaseExpression, index: int, plan: DeferPlan) -> str:
    """What the helper reads of the tensor passed for positional argument ``index``:
    ``.item()``, the metadata ``value`` reads (``.shape``, ``.size()``), or nothing."""
    if index in plan.item_args:
        return ".item()"
    if index in plan.metadata_args:
        return f".{_metadata(value).attr.value}" + ("()" if isinstance(value, cst.Call) else "")
    return ""


def _metadata(value: cst.BaseExpression) -> cst.Attribute:
    """``t.shape`` of ``t.shape``, ``t.size`` of ``t.size()``."""
    return expect(value.func if isinstance(value, cst.Call) else value, cst.Attribute, "metadata")


def _passed(arg: cst.Arg, index: int, plan: DeferPlan) -> cst.Arg:
    """What the call of the helper passes for the positional argument ``arg``: ``str(value)``
    of tensor metadata printed, ``t`` of ``t.item()`` (the helper takes the number),
    ``t`` of ``t.shape`` logged (the helper reads it), else ``arg``."""
    if index in plan.str_args:
        return arg.with_changes(value=_str_of(arg.value))
    if index in plan.item_args:
        item = expect(arg.value, cst.Call, "the `.item()` call")
        method = expect(item.func, cst.Attribute, "the `.item` attribute")
        return arg.with_changes(value=method.value)
    if index in plan.metadata_args:
        return arg.with_changes(value=_metadata(arg.value).value)
    return arg


@rewrites_statement(DeferIfPlan)
def rewrite_if(
    command: GraphMendCommand,
    original: cst.If,
    updated: cst.If,
    plan: DeferIfPlan,
    following: Optional[cst.BaseStatement],
) -> Tuple[List[cst.BaseStatement], bool]:
    """One call of a helper that runs the whole ``if`` (``elif``, ``else``) in place of it.

    The call passes the operands of the tests and the passed arguments of the branches' calls,
    in source order; the helper's ``if`` tests its parameters as the original tested them.
    """
    static = plan.static_conjuncts
    taken: List[str] = []  # the helper's parameters, in order
    reserved = names_in(updated)  # what the helper's body may read by name
    passed: List[str] = []
    moved: Set[int] = set()  # the indices in `passed` of the calls' arguments
    body: List[str] = []
    removed: List[cst.CSTNode] = [] if static else [updated.body]
    calls = iter(plan.calls)
    for keyword, tests, suite, commented in _clauses(updated, static):
        removed += commented
        if tests:
            skeleton = " and ".join(
                _skeleton(test, command, taken, passed, reserved) for test in tests
            )
            body.append(f"    {keyword} {skeleton}:\n")
        else:
            body.append("    else:\n")
        for small, line in command.branch(suite):
            statement = expect(small, cst.Expr, "a branch's call")
            call = expect(statement.value, cst.Call, "a branch's call")
            call_plan = next(calls)
            _, inner, kept = _helper_arguments(
                command, call, call_plan, lambda name: _fresh(name, taken, reserved)
            )
            body.append(call_source(call_plan.callee, inner, "        "))
            moved.update(range(len(passed), len(passed) + len(kept)))
            passed += [command.code(arg.value) for arg in kept]
            removed += [line] if line is not None else []
    base = PREFIX + "if_" + plan.calls[0].callee.replace(".", "_")
    parameters = taken + _located(plan.calls, reserved)
    own = any(call.own_helper for call in plan.calls)
    name = command.deferred_helper(base, parameters, "".join(body), shared=not own)
    indent = command.indentation(original)
    block = command.indented(updated.body)
    if static:
        unit = block.indent or command.module.default_indent
        indent += unit
        # the calls' arguments keep their depth: the call is in the block they were in
        passed = [_shallower(text, unit) if i in moved else text for i, text in enumerate(passed)]
    call_statement = command.statement(command.call_text("", name, passed, indent))
    comments = comment_lines(removed)
    if static:  # the `if` line stays, with its leading Python test
        guard = with_static_prefix(updated, static)
        call_statement = call_statement.with_changes(leading_lines=comments)
        return [guard.with_changes(body=block.with_changes(body=[call_statement]))], False
    return [call_statement.with_changes(leading_lines=(*updated.leading_lines, *comments))], False


#: One clause of an ``if``: its keyword, its ``and``-ed tests, its branch, and the nodes whose
#: comments stay when it is removed (an ``elif``'s or ``else``'s own; none for the ``if``).
Clause = Tuple[str, List[cst.BaseExpression], cst.BaseSuite, List[cst.CSTNode]]


def _clauses(node: cst.If, static: int) -> List[Clause]:
    """The ``if``, each ``elif`` and the ``else``; the ``if``'s tests without its ``static``
    leading Python ones."""
    found: List[Clause] = [("if", conjuncts(node.test)[static:], node.body, [])]
    while isinstance(node.orelse, cst.If):
        node = node.orelse
        found.append(("elif", [node.test], node.body, [node, node.body]))
    if isinstance(node.orelse, cst.Else):  # its comments include its block's
        found.append(("else", [], node.orelse.body, [node.orelse]))
    return found


def _skeleton(
    test: cst.BaseExpression,
    command: GraphMendCommand,
    taken: List[str],
    passed: List[str],
    reserved: AbstractSet[str],
) -> str:
    """``test`` with each operand of its ``and``/``or``/``not`` replaced by a new parameter,
    whose argument (the operand) is added to ``passed``."""
    if isinstance(test, cst.BooleanOperation):
        word = "and" if isinstance(test.operator, cst.And) else "or"
        left = _skeleton(test.left, command, taken, passed, reserved)
        text = f"{left} {word} {_skeleton(test.right, command, taken, passed, reserved)}"
    elif isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        text = f"not {_skeleton(test.expression, command, taken, passed, reserved)}"
    else:
        bare = test if isinstance(test, (cst.Tuple, cst.GeneratorExp)) else test.with_changes(
            lpar=[], rpar=[]
        )
        passed.append(command.code(bare))
        return _fresh("condition", taken, reserved)
    return f"({text})" if getattr(test, "lpar", None) else text


def _str_of(value: cst.BaseExpression) -> cst.Call:
    """``str(value)``: what print writes for a value the deferred call cannot carry."""
    return cst.Call(func=cst.Name("str"), args=[cst.Arg(value=value)])


def _parameter_name(plan: DeferPlan, index: int) -> str:
    """The helper's parameter for positional argument ``index``: a tensor of which it reads
    only the number or metadata is named so (``NUMBER``, ``METADATA``): ``_graphmend_deferred``
    then passes it to the op when it requires grad, which only a tensor shown whole prevents."""
    if index in plan.item_args:
        return f"{NUMBER}{index}"
    if index in plan.metadata_args:
        return f"{METADATA}{index}"
    return "message" if index == 0 and _MESSAGE_FIRST.search(plan.callee) else f"arg{index}"


def _fresh(name: str, taken: List[str], reserved: AbstractSet[str] = frozenset()) -> str:
    """``name``, or ``name_2``, ``name_3``... if taken or ``reserved`` (a name the helper's
    body reads: a module-level name written into it) or the helper's keyword; the result is
    taken from now on."""
    number, fresh = 1, name
    while fresh in taken or fresh in reserved or fresh == IN_GRAPH:
        number += 1
        fresh = f"{name}_{number}"
    taken.append(fresh)
    return fresh


def _shallower(text: str, unit: str) -> str:
    """``text`` with its continuation lines indented by ``unit`` less, where each has it and no
    string spans lines (``shifted`` leaves such text as it is)."""
    lines = text.split("\n")
    if shifted(text, unit) == text or not all(line.startswith(unit) for line in lines[1:]):
        return text
    return "\n".join([lines[0], *(line[len(unit):] for line in lines[1:])])
