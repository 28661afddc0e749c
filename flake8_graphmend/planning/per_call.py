"""Python values that may change from one call to the next, and what a graph makes of them.

A str, float or int that a deferred call or a check is given becomes a constant of the graph
that Dynamo guards by its value (an int only until it has changed once: then Dynamo takes it
as a size that may change). Where such a value changes between calls (an argument of the
function, a size formatted into a text), each new one compiles the graph again, and past
torch's recompile limit the function runs eagerly: the original, which broke the graph there,
never put the value in one.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional

from ..analysis.index import parameter_names, parent_map, walk
from ..analysis.purity import type_call
from ..analysis.symbols import is_self
from ..analysis.values import Kind, is_size, parameter_defaults
from .items import unpacked_size
from .module_state import bound_otherwise, plain_lineage
from .totals import self_configuration

if TYPE_CHECKING:
    from ..rules.base import FunctionContext

#: The constants a deferred call carries as they are.
PASSED_CONSTANTS = (str, int, float, bool)

#: Builtins that make an int or a float of ints and floats.
_NUMBER_BUILTINS = frozenset({"int", "float", "max", "min", "abs", "round"})
#: Arithmetic that keeps sizes and number literals ints and floats.
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod)


def python_scalar(node: ast.expr, ctx: FunctionContext, depth: int = 0) -> bool:
    """A str, int, float or bool that the call computes where it did: a literal (``-0.0``
    too), a size (``x.shape[0]``, a name unpacked from ``x.shape``), arithmetic of numbers and
    sizes (``x.size(0) // 2``, ``int(...)``, ``max(...)``, a conditional expression of them),
    an identity test (``mask is not None``), the name of ``self``'s class,
    or a local only ever assigned one (``n = x.shape[0]``, ``for i in range(n)``), through at
    most 3 names."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, PASSED_CONSTANTS)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return isinstance(node.operand, ast.Constant) and python_scalar(node.operand, ctx)
    if is_size(node) or ctx.values.counted_range(node) is not None:
        return True
    if isinstance(node, ast.Name) and unpacked_size(node.id, ctx):
        return True  # `batch, length, width = x.shape`
    if isinstance(node, ast.IfExp):
        return all(python_scalar(side, ctx, depth) for side in (node.body, node.orelse))
    if isinstance(node, ast.Compare) and all(isinstance(o, (ast.Is, ast.IsNot)) for o in node.ops):
        return True  # `mask is not None`: identity gives a bool, whatever the operands
    if class_name_of_self(node, ctx):
        return True  # `type(self).__name__`
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _NUMBER_BUILTINS
        and node.func.id not in ctx.symbols.defined_here()
        and node.args
        and not node.keywords
    ):  # `int(x.shape[1])`, `max(x.size(1), 4)`
        return all(python_scalar(argument, ctx, depth) for argument in node.args)
    if isinstance(node, ast.BinOp) and isinstance(node.op, _ARITHMETIC):
        return all(
            not isinstance(side, ast.Constant) or isinstance(side.value, (int, float))
            for side in (node.left, node.right)
        ) and all(python_scalar(side, ctx, depth) for side in (node.left, node.right))
    if isinstance(node, ast.Name) and depth < 3:
        return ctx.values.only_assigned(node.id, lambda value: _scalar_value(value, ctx, depth))
    return False


def class_name_of_self(value: ast.expr, ctx: FunctionContext) -> bool:
    """``type(self).__name__`` or ``self.__class__.__name__`` (or ``__qualname__``): every
    class has them, whatever ``self`` holds, and reading them runs no code, where the classes
    of ``self``'s lineage are plain (``module_state.plain_lineage``: no metaclass, which may
    make them properties, nor a base of another file that may have one) and none binds
    ``__class__``. A subclass in another file with a metaclass of its own is not seen."""
    if not (isinstance(value, ast.Attribute) and value.attr in ("__name__", "__qualname__")):
        return False
    classes = plain_lineage(ctx.region.owner, ctx.symbols)
    if classes is None or any(
        "__class__" in cls.methods or bound_otherwise("__class__", cls.node) for cls in classes
    ):
        return False
    owner = value.value
    if isinstance(owner, ast.Attribute):
        return owner.attr == "__class__" and is_self(owner.value)
    return (
        isinstance(owner, ast.Call)
        and type_call(owner, ctx.values, ctx.symbols)
        and is_self(owner.args[0])
    )


def _scalar_value(value: ast.expr, ctx: FunctionContext, depth: int) -> bool:
    """``python_scalar`` of one value a name is assigned; for ``n += v`` (``n = 0`` then
    ``n += 1``), arithmetic with a scalar ``v`` keeps the name's other values scalars."""
    operand = ctx.values.augmented_operand(value)
    if operand is None:
        return python_scalar(value, ctx, depth + 1)
    return (
        isinstance(value, ast.BinOp)
        and isinstance(value.op, _ARITHMETIC)
        and python_scalar(operand, ctx, depth + 1)
    )


def changes_between_calls(value: ast.expr, ctx: FunctionContext) -> bool:
    """Whether ``value``, a Python scalar, may differ from one call to the next: one computed
    from sizes, loop counters or arguments (``x.shape[1]``, ``n - 1``), not a literal or
    configuration (``self.config.hidden_size``), which stays the same."""
    if isinstance(value, ast.Constant) or self_configuration(value, ctx):
        return False
    return python_scalar(value, ctx) or argument_read(value, ctx) is not None


def argument_read(value: ast.expr, ctx: FunctionContext) -> Optional[str]:
    """The argument of the function that ``value`` is, or computes with Python numbers
    (``lr * 100``, not ``x @ w`` of two names, nor ``ids.size(0)``), where the function does
    not otherwise compute with it as a tensor: a value that the graph would hold for
    ``value`` alone (the original, computing with it, already holds it)."""
    if isinstance(value, ast.UnaryOp):
        return argument_read(value.operand, ctx)
    if isinstance(value, ast.BinOp):  # `lr * 100`; not `x @ w` of two names, a tensor's
        sides = (value.left, value.right)
        if not any(isinstance(side, ast.Constant) or is_size(side) for side in sides):
            return None
        return argument_read(value.left, ctx) or argument_read(value.right, ctx)
    if isinstance(value, (ast.Subscript, ast.Attribute)) and not is_size(value):
        root: ast.expr = value  # `extra[0]` of `*extra`, `opts.lr`: what the argument holds
        while isinstance(root, (ast.Subscript, ast.Attribute)):
            root = root.value
        return argument_read(root, ctx) if isinstance(root, ast.Name) else None
    if (
        isinstance(value, ast.Name)
        and value.id not in ("self", "cls")
        and value.id in parameter_names(ctx.region.function)
        and ctx.values.kind(value) is not Kind.TENSOR
        and not _computed_with(value.id, value, ctx)
    ):
        return value.id  # also where it is bound again (`temp = 1.0` when None): it may not be
    return None


def _computed_with(name: str, outside: ast.expr, ctx: FunctionContext) -> bool:
    """Whether the function computes with ``name`` outside ``outside`` (``x * scale``,
    ``(ids < 0).any()``, ``self.proj(h, scale)``), where the graph holds it already; a test
    (``scale is None``, ``lr > 1.0``) holds only its outcome, and another message is not
    computed with."""
    inside = {id(node) for node in walk(outside)}
    parents = parent_map(ctx.region.function)
    for node in walk(ctx.region.function):
        if not (
            isinstance(node, ast.Name)
            and node.id == name
            and isinstance(node.ctx, ast.Load)
            and id(node) not in inside
        ):
            continue
        parent = parents.get(id(node))
        if isinstance(parent, (ast.Compare, ast.BoolOp, ast.If, ast.IfExp, ast.While)):
            continue  # a test: the graph holds its outcome, not the value (`lr > 1.0`)
        if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
            continue
        if isinstance(parent, (ast.FormattedValue, ast.Expr)) or _message_argument(parent):
            continue
        return True
    return False


def _message_argument(parent: Optional[ast.AST]) -> bool:
    """A call that only shows its arguments (``print``, a logger's, ``warnings.warn``)."""
    if not isinstance(parent, ast.Call):
        return False
    func = parent.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in _SHOWING_CALLS


#: Calls that show their arguments, and compute nothing with them.
_SHOWING_CALLS = frozenset({
    "print", "warn", "debug", "info", "warning", "warning_once", "info_once", "error",
    "critical", "exception", "log",
})


def per_call_problem(
    value: ast.expr, ctx: FunctionContext, receiver: str = "the call"
) -> Optional[str]:
    """Why ``value``, passed to ``receiver`` (the deferred call, the check), could make each
    call compile again: it is an argument of the function not known to be an int or a bool
    (a float or a str becomes a constant of the graph, guarded by its value), which the
    function does not compute with otherwise (``argument_read``)."""
    if ctx.values.kind(value) is Kind.TENSOR:
        return None
    if _makes_float(value, ctx) and changes_between_calls(value, ctx):
        return (
            f"{receiver} passes `{ast.unparse(value)}`, a float computed from values that "
            "change between calls: a float becomes a constant of the graph, so each new value "
            "would compile it again (past torch's recompile limit, the function runs eagerly)"
        )
    name = argument_read(value, ctx)
    if name is None or declared_int(name, ctx):
        return None
    return (
        f"{receiver} passes `{name}`, an argument of {ctx.region.function.name}(), which is not "
        "known to be an int or a bool: a float or str becomes a constant of the graph, so "
        "each new value would compile it again (past torch's recompile limit, the function "
        "runs eagerly)"
    )


def declared_int(name: str, ctx: FunctionContext) -> bool:
    """Whether parameter ``name`` is annotated ``int`` or ``bool``, or defaults to one: Dynamo
    takes an int as a size that may change (after one more compile), a bool has two values."""
    arguments = ctx.region.function.args
    for parameter in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
        if parameter.arg == name and parameter.annotation is not None:
            return ast.unparse(parameter.annotation) in ("int", "bool")
    default = parameter_defaults(arguments).get(name)
    return isinstance(default, ast.Constant) and type(default.value) in (int, bool)


def _makes_float(value: ast.AST, ctx: FunctionContext, depth: int = 0) -> bool:
    """Whether ``value`` makes a float (``/``, ``float()``), also through the locals it reads
    (at most 3 deep); not a size read of whatever tensor (``k_cache.shape[1]``, ``len(x)``: an
    int)."""
    if isinstance(value, ast.expr) and is_size(value):
        return False
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Div):
        return True
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == (
        "float"
    ):
        return True
    if isinstance(value, ast.Name) and depth < 3 and not ctx.values.is_parameter(value.id):
        if any(_makes_float(v, ctx, depth + 1) for v in ctx.values.assignments_of(value.id)):
            return True
    return any(_makes_float(child, ctx, depth) for child in ast.iter_child_nodes(value))
