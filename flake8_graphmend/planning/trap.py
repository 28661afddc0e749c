"""[Trap]: may ``if <tensor test>: raise E(message)`` (or an ``assert`` on ``.item()``) become a
graph-native check?"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass
from typing import TYPE_CHECKING, List, Optional, Sequence, Set, Union

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
#: ``try`` statements (``try``/``except*`` is its own node from Python 3.11).
_TRY_STATEMENTS = (ast.Try, getattr(ast, "TryStar", ast.Try))
#: Methods that change the Python container they are called on.
CONTAINER_UPDATES = {
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
    problem = state_change_problem(node, ctx)
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
    ) or state_change_problem(node, ctx)
    return declined(problem) if problem else (AssertPlan(), None)


def state_change_problem(
    node: ast.stmt, ctx: FunctionContext, subject: str = "the guard"
) -> Optional[str]:
    """Why ``node`` (``subject``) raising inside the graph would not leave the state that the
    original leaves: code around it that handles or cleans up, state changed before it."""
    block = _enclosing_block(node, ctx) or _calling_block(ctx)
    if isinstance(block, _TRY_STATEMENTS):
        return (
            f"{subject} is inside the `try` of line {block.lineno}: under compile an exception "
            "raised inside the graph is not handled there"
        )
    if block is not None:
        return (
            f"{subject} is inside `{ast.unparse(block).splitlines()[0]}` (line {block.lineno}): "
            "under compile an exception raised inside the graph skips the block's exit "
            "(`torch.no_grad()` would leave grad mode off)"
        )
    change = _state_change_before(node, ctx)
    if change is None:
        return None
    return (
        f"`{ast.unparse(change).splitlines()[0]}` (line {change.lineno}) changes Python state "
        f"before {subject}; under compile that is applied after the graph, so an exception "
        "raised inside it would lose it"
    )


def _enclosing_block(node: ast.stmt, ctx: FunctionContext) -> Optional[ast.stmt]:
    """The innermost ``try`` or ``with`` statement of the function around ``node``."""
    found = None
    for sub in ast.walk(ctx.region.function):
        if isinstance(sub, (*_TRY_STATEMENTS, ast.With, ast.AsyncWith)) and _holds(sub, node):
            if found is None or sub.lineno > found.lineno:
                found = sub
    return found


def _calling_block(ctx: FunctionContext) -> Optional[ast.stmt]:
    """A ``try`` or ``with`` statement of the module around a call of the guard's function
    (``check(x)``, or ``self.check(x)`` in its class); callers in other files are not seen."""
    function = ctx.region.function
    owner = ctx.region.owner
    scope: ast.AST = owner.node if owner else ctx.symbols.tree
    for block in ast.walk(scope):
        if not isinstance(block, (*_TRY_STATEMENTS, ast.With, ast.AsyncWith)):
            continue
        for sub in ast.walk(block):
            if isinstance(sub, ast.Call) and _calls(sub, function.name, method=owner is not None):
                return block
    return None


def _calls(call: ast.Call, name: str, method: bool) -> bool:
    func = call.func
    if method:
        return (
            isinstance(func, ast.Attribute)
            and func.attr == name
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
        )
    return isinstance(func, ast.Name) and func.id == name


def _holds(outer: ast.stmt, node: ast.AST) -> bool:
    return outer is not node and any(inner is node for inner in ast.walk(outer))


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
            problem = impurity(piece.value, ctx.values, ctx.symbols, static_indexing=False)
            if problem is None and piece.format_spec is not None:
                problem = impurity(piece, ctx.values, ctx.symbols)
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
    """A statement or call that may run before ``node`` in its function and changes Python (not
    tensor) state: one on an earlier line, or anywhere in a loop around ``node``.

    Dynamo applies such changes after the graph, so they are lost when a check inside it fails:
    stores into attributes and items of non-tensors, ``global``/``nonlocal`` stores, updates of
    containers (``self.seen.append(x)``), calls of ``self``'s methods that make such changes.
    """
    function = ctx.region.function
    outer = {
        name
        for sub in ast.walk(function)
        if isinstance(sub, (ast.Global, ast.Nonlocal))
        for name in sub.names
    }
    loops = [
        sub
        for sub in ast.walk(function)
        if isinstance(sub, (ast.For, ast.AsyncFor, ast.While)) and _holds(sub, node)
    ]
    in_loops = {id(inner) for loop in loops for inner in ast.walk(loop)}
    for sub in ast.walk(function):
        # only statements and expressions change state (assignments, calls: `_changes_state`)
        if (
            isinstance(sub, (ast.stmt, ast.expr))
            and (sub.lineno < node.lineno or id(sub) in in_loops)
            and (_changes_state(sub, outer, ctx) or _calls_state_changing_method(sub, ctx))
        ):
            return sub
    return None


def _calls_state_changing_method(node: ast.AST, ctx: FunctionContext) -> bool:
    """``self.track(x)``, where the class's ``track`` stores into ``self`` (``self.seen += 1``,
    ``self.cache.append(x)``): one level of calls is followed."""
    owner = ctx.region.owner
    if not (
        owner
        and isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "self"
    ):
        return False
    method = owner.methods.get(node.func.attr)
    return method is not None and any(_stores_into_self(sub) for sub in ast.walk(method))


def _stores_into_self(node: ast.AST) -> bool:
    return "self" in stored_roots(node)


def stored_roots(node: ast.AST) -> Set[str]:
    """The names whose value ``node`` changes in place: the root of an attribute or item it
    stores into (``self.seen += 1``, ``cache[k] = v``), or of a container whose updating
    method it calls (``self.cache.append(x)``)."""
    targets: List[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in CONTAINER_UPDATES
    ):
        targets = [node.func]
    roots = set()
    for target in targets:
        if not isinstance(target, (ast.Attribute, ast.Subscript, ast.Starred)):
            continue
        while isinstance(target, (ast.Attribute, ast.Subscript, ast.Starred)):
            target = target.value
        if isinstance(target, ast.Name):
            roots.add(target.id)
    return roots


def _changes_state(node: ast.AST, outer: Set[str], ctx: FunctionContext) -> bool:
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return any(
            (
                isinstance(target, (ast.Attribute, ast.Subscript))
                and _outlives_the_call(target.value, ctx)
            )
            or (isinstance(target, ast.Name) and target.id in outer)
            for target in targets
        )
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in CONTAINER_UPDATES
        and _outlives_the_call(node.func.value, ctx)
    )


def _outlives_the_call(value: ast.expr, ctx: FunctionContext) -> bool:
    """Whether a change of ``value`` is seen after the call raises: not for a tensor (Dynamo
    applies no such change after the graph), nor for the function's own ``**kwargs`` dict,
    which no one else holds while it is only read, unpacked and updated by name."""
    if ctx.values.kind(value) is Kind.TENSOR:
        return False
    keywords = ctx.region.function.args.kwarg
    return not (
        isinstance(value, ast.Name)
        and keywords is not None
        and value.id == keywords.arg
        and _kept_private(value.id, ctx)
    )


def _kept_private(name: str, ctx: FunctionContext) -> bool:
    """``name`` is only subscripted, unpacked (``**name``), called a method of, compared,
    formatted or measured (``len(name)``): never bound again, stored or handed on as it is."""
    parents = {
        id(child): parent
        for parent in ast.walk(ctx.region.function)
        for child in ast.iter_child_nodes(parent)
    }
    for node in ast.walk(ctx.region.function):
        if not (isinstance(node, ast.Name) and node.id == name):
            continue
        parent = parents.get(id(node))
        if isinstance(node.ctx, ast.Store) or not (
            isinstance(parent, (ast.Subscript, ast.Attribute)) and parent.value is node
            or isinstance(parent, ast.keyword) and parent.arg is None
            or isinstance(parent, (ast.Compare, ast.FormattedValue))
            or isinstance(parent, ast.Call) and _inspects(parent, node)
        ):
            return False
    return True


def _inspects(call: ast.Call, argument: ast.Name) -> bool:
    """``len(d)``, ``list(d)``, ``sorted(d)``, ``str(d)``: builtins that read or copy, and
    keep nothing."""
    func = call.func
    return (
        isinstance(func, ast.Name)
        and func.id in {"len", "list", "tuple", "sorted", "set", "dict", "str", "repr", "bool"}
        and argument in call.args
    )
