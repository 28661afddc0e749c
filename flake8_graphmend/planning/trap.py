"""[Trap]: may ``if <tensor test>: raise E(message)`` (or an ``assert`` on ``.item()``) become a
graph-native check?"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Sequence, Set, Union

from ..analysis.purity import impurity
from ..analysis.values import Kind
from . import Plan, Planned, declined
from .conditions import split_condition, tensor_condition_problem
from .items import compared_item

if TYPE_CHECKING:
    from ..rules.base import FunctionContext

BUILTIN_EXCEPTIONS = {
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}
#: Methods that change the Python container they are called on.
_CONTAINER_UPDATES = {
    "append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "add",
    "discard", "popitem", "sort", "reverse",
}


@dataclass(frozen=True)
class TrapPlan(Plan):
    """The guard becomes ``_graphmend_check(failed, Error, message)``.

    The guard is a lone ``raise Error(message)`` of a builtin exception, without ``else``.
    """

    #: Leading conjuncts of the test that are Python values: they stay an ``if``.
    static_conjuncts: int
    #: The tensor part is one ``torch.equal(a, b)`` call (compared shapes first, as it does).
    torch_equal: bool = False
    #: ... written ``not torch.equal(a, b)``: the guard raises when they differ.
    negated: bool = False
    #: The tensor part is ``<whole reduction>.item() <op> <int>`` (``planning/items.py``): its
    #: ``.item()`` call becomes ``_graphmend_item(<reduction>)``.
    item_compared: bool = False


@dataclass(frozen=True)
class AssertPlan(Plan):
    """``assert <reduction>.item() <op> <int>[, message]`` becomes ``if __debug__:
    _graphmend_assert(<the test, the number kept a tensor>[, message])`` (``python -O`` strips
    it as it strips the ``assert``)."""


def trap_plan(node: ast.If, code: str, ctx: FunctionContext) -> Planned[TrapPlan]:
    """Whether the guard ``node`` (reported as ``code``) may become a graph-native check."""
    raise_stmt = node.body[0]
    assert isinstance(raise_stmt, ast.Raise)
    problem = _exception_problem(raise_stmt, ctx)
    if problem:
        return declined(problem)
    problem = _state_change_problem(node, ctx)
    if problem:
        return declined(problem)
    static, tensor_part = split_condition(node.test, ctx)
    if code == "GM302":
        return _equal_plan(tensor_part, len(static), ctx)
    if len(tensor_part) == 1 and compared_item(tensor_part[0], ctx):
        return TrapPlan(static_conjuncts=len(static), item_compared=True), None
    problem = tensor_condition_problem(tensor_part, ctx)
    if problem:
        return declined(problem)
    return TrapPlan(static_conjuncts=len(static)), None


def assert_plan(node: ast.Assert, ctx: FunctionContext) -> Planned[AssertPlan]:
    """Whether ``assert <test>[, message]``, a test of ``compared_item``, may become a check."""
    problem = (
        _message_problem(node.msg, ctx) if node.msg is not None else None
    ) or _state_change_problem(node, ctx)
    return declined(problem) if problem else (AssertPlan(), None)


def _state_change_problem(node: ast.stmt, ctx: FunctionContext) -> Optional[str]:
    change = _state_change_before(node, ctx)
    if change is None:
        return None
    return (
        f"`{ast.unparse(change).splitlines()[0]}` (line {change.lineno}) changes Python state "
        "before the guard; under compile that is applied after the graph, so a failing check "
        "would lose it"
    )


def _exception_problem(raise_stmt: ast.Raise, ctx: FunctionContext) -> Optional[str]:
    """Why ``raise E(message)`` cannot be rebuilt by the check (None: it can)."""
    exc = raise_stmt.exc
    if raise_stmt.cause is not None:
        return "`raise ... from ...` cannot be rebuilt by a graph-native check"
    if not (isinstance(exc, ast.Call) and isinstance(exc.func, ast.Name)):
        return "the raised exception is not built as `Name(message)`"
    name = exc.func.id
    if (
        name not in BUILTIN_EXCEPTIONS
        or name in ctx.symbols.defined_here()
        or ctx.values.assignments_of(name)
    ):
        return f"`{name}` is not a builtin exception class"
    if len(exc.args) != 1 or exc.keywords or isinstance(exc.args[0], ast.Starred):
        return "the exception takes other than exactly one message argument"
    return _message_problem(exc.args[0], ctx)


def _message_problem(message: ast.expr, ctx: FunctionContext) -> Optional[str]:
    """The check builds its message on every call, where the original built it on failure."""
    if isinstance(message, ast.Constant) and isinstance(message.value, str):
        return None
    if not isinstance(message, ast.JoinedStr):
        return "the message is not a string literal or an f-string of plain values"
    for piece in message.values:
        if isinstance(piece, ast.FormattedValue):
            if ctx.values.kind(piece.value) in (Kind.TENSOR, Kind.DATA):
                return f"the message formats tensor data `{ast.unparse(piece.value)}`"
            problem = impurity(piece.value, ctx.values, ctx.symbols)
            if problem:
                return f"the message would be built on every call: {problem}"
    return None


def _equal_plan(
    tensor_part: Sequence[ast.expr], static_conjuncts: int, ctx: FunctionContext
) -> Planned[TrapPlan]:
    """A ``torch.equal(a, b)`` guard: only it (or its negation) has an exact graph-native form."""
    if len(tensor_part) != 1:
        return declined("the torch.equal() test is combined with other tensor tests")
    test = tensor_part[0]
    call, negated = test, False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        call, negated = test.operand, True
    if not (isinstance(call, ast.Call) and ctx.symbols.qualified_name(call.func) == "torch.equal"):
        return declined(
            "only `torch.equal(a, b)` and `not torch.equal(a, b)` guards "
            "have an exact graph-native form"
        )
    if len(call.args) != 2 or call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
        return declined("torch.equal() is not called with two positional tensors")
    for arg in call.args:
        problem = impurity(arg, ctx.values, ctx.symbols)
        if problem:
            return declined(problem)
    return TrapPlan(static_conjuncts, torch_equal=True, negated=negated), None


def _state_change_before(
    node: ast.stmt, ctx: FunctionContext
) -> Optional[Union[ast.stmt, ast.expr]]:
    """A statement or call before ``node`` in its function that changes Python (not tensor) state.

    Dynamo applies such changes after the graph, so they are lost when a check inside it fails:
    stores into attributes and items of non-tensors, ``global``/``nonlocal`` stores, updates of
    containers (``self.seen.append(x)``).
    """
    function = ctx.region.function
    outer = {
        name
        for sub in ast.walk(function)
        if isinstance(sub, (ast.Global, ast.Nonlocal))
        for name in sub.names
    }
    for sub in ast.walk(function):
        # only statements and expressions change state (assignments, calls: `_changes_state`)
        if (
            isinstance(sub, (ast.stmt, ast.expr))
            and sub.lineno < node.lineno
            and _changes_state(sub, outer, ctx)
        ):
            return sub
    return None


def _changes_state(node: ast.AST, outer: Set[str], ctx: FunctionContext) -> bool:
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return any(
            (
                isinstance(target, (ast.Attribute, ast.Subscript))
                and ctx.values.kind(target.value) is not Kind.TENSOR
            )
            or (isinstance(target, ast.Name) and target.id in outer)
            for target in targets
        )
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _CONTAINER_UPDATES
        and ctx.values.kind(node.func.value) is not Kind.TENSOR
    )
