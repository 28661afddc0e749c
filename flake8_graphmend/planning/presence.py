"""Presence: may a value that a fix computes on the path the original did not take be None
there, or an attribute be unset?

[Where] computes both sides of a selection. A side that computes with an optional ``mask``,
``self.gamma = ... if scale else None`` or an attribute set only in some configurations fails
(``add(FakeTensor, None)``, ``AttributeError``) where the original took the other path. These
judgements are made from the file: the sources of None it shows (defaults, annotations,
``None`` literals, ``.get()``, callers that pass None), and the code that rules None out
before the selection (``if mask is None: mask = ...``; not an ``assert``, which ``python -O``
drops). What the file does not show (a caller in another file, a method that returns None) is
a known problem of GM201.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Callable, FrozenSet, List, Optional, Set, Tuple

from ..analysis.index import node_memo, walk
from ..analysis.symbols import FunctionNode, self_attribute
from ..analysis.values import parameter_defaults, registered_name
from .aliasing import alternatives, reaching_bindings, statement_blocks
from .totals import assignment_targets

if TYPE_CHECKING:
    from ..rules.base import FunctionContext


def may_be_none(
    node: ast.expr,
    at: ast.AST,
    ctx: FunctionContext,
    passed_none: Callable[[str], bool] = lambda name: False,
    depth: int = 0,
) -> bool:
    """Whether ``node``, a name or ``self.X`` read at ``at``, may hold None there: a parameter
    that defaults to None or is annotated ``Optional``/``... | None`` (``passed_none``: or that
    a caller may pass None for), a local that a binding reaching ``at`` may give None (``None``,
    ``kwargs.get("mask")``, an element of ``(None, None)``, another name that may be None, what
    a loop or ``with`` binds), an attribute that the file may set to None (``self.gamma = ...
    if scale else None``, ``self.scale = scale`` of a parameter that may be None,
    ``register_buffer("b", None)``); not where code before ``at`` rules it out (``if mask is
    None: mask = torch.ones(...)``) and nothing after that may bind None again."""
    if isinstance(node, ast.Name):
        if depth > 3:
            return True
        bindings, on_entry = reaching_bindings(node.id, at, ctx)
        narrowing = _narrowing_before(node.id, at, ctx)
        if narrowing is not None:  # only what binds the name after the narrowing counts
            end = narrowing.end_lineno or narrowing.lineno
            inside = {id(sub) for sub in walk(narrowing)}
            bindings = [b for b in bindings if getattr(b, "lineno", 0) > end or id(b) in inside]
            on_entry = False
        if on_entry and ctx.values.is_parameter(node.id):
            if optional_parameter(ctx.region.function, node.id) or passed_none(node.id):
                return True
        return any(
            _binding_may_give_none(binding, ctx, passed_none, depth) for binding in bindings
        )
    attribute = self_attribute(node)
    return attribute is not None and attribute in none_attributes(ctx.symbols.tree)


def _pairs(target: ast.expr, value: ast.expr) -> List[Tuple[ast.expr, ast.expr]]:
    """What each part of ``target`` is given by ``target = value``: element by element for a
    tuple given a tuple of the same length, else the whole value."""
    if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)):
        if len(target.elts) == len(value.elts):
            return [p for t, v in zip(target.elts, value.elts) for p in _pairs(t, v)]
    return [(target, value)]


def optional_parameter(function: FunctionNode, name: str) -> bool:
    """A parameter of ``function`` that defaults to None or is annotated optional."""
    arguments = function.args
    if none_value(parameter_defaults(arguments).get(name)):
        return True
    annotation = next(
        (
            a.annotation
            for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
            if a.arg == name
        ),
        None,
    )
    return annotation is not None and _optional(annotation)


def _binding_may_give_none(
    binding: ast.AST, ctx: FunctionContext, passed_none: Callable[[str], bool], depth: int
) -> bool:
    """Whether ``binding`` may give the name None: a value that may be None or hold one that
    unpacking gives (``k, v = (None, None)``), a name or attribute that may be None, or a
    binding whose value is not known (a loop, ``with ... as``)."""
    if not isinstance(binding, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
        return True
    value = binding.value
    if value is None or none_value(value):
        return value is not None
    # `(y := x)` binds a name, never a tuple to unpack
    targets = [] if isinstance(binding, ast.NamedExpr) else assignment_targets(binding)
    if any(isinstance(t, (ast.Tuple, ast.List)) for t in targets):
        return any(isinstance(sub, ast.Constant) and sub.value is None for sub in walk(value))
    if isinstance(value, (ast.Name, ast.Attribute)):  # `b = bias`, `m = self.mask`
        return may_be_none(value, binding, ctx, passed_none, depth + 1)
    return False


def _narrowing_before(name: str, at: ast.AST, ctx: FunctionContext) -> Optional[ast.stmt]:
    """The last statement on the way to ``at`` that leaves ``name`` not None: ``if name is
    None:`` whose body binds it to a new value (a call, arithmetic) or leaves; None if there is
    none. (``assert name is not None`` is not one: ``python -O`` runs without it.)"""
    line = getattr(at, "lineno", 0)
    blocks, _ = statement_blocks(ctx.region.function.body, line)
    found: Optional[ast.stmt] = None
    for statement in (s for block in blocks for s in block if (s.end_lineno or 0) < line):
        if (
            isinstance(statement, ast.If)
            and not statement.orelse
            and tests_none(statement.test, name, ast.Is)
            and statement.body
            and _gives_a_value(statement.body[-1], name)
        ):
            found = statement
    return found


def tests_none(test: ast.expr, name: str, operator: type) -> bool:
    """``name is None`` (``operator`` ``ast.Is``) or ``name is not None`` (``ast.IsNot``)."""
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == name
        and len(test.ops) == 1
        and isinstance(test.ops[0], operator)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    )


def _gives_a_value(statement: ast.stmt, name: str) -> bool:
    """``raise``/``return``, or ``name = <a call or arithmetic>`` that is not a lookup that may
    give None (``getattr(..., None)``, ``d.get(k)``): after it, ``name`` is not None."""
    if isinstance(statement, (ast.Raise, ast.Return)):
        return True
    value = statement.value if isinstance(statement, ast.Assign) else None
    return (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and statement.targets[0].id == name
        and isinstance(value, (ast.Call, ast.BinOp))
        and not none_value(value)
        and not (isinstance(value, ast.Call) and getattr(value.func, "id", "") == "getattr")
    )


def none_value(value: Optional[ast.expr]) -> bool:
    """Whether ``value`` may be None: the literal, ``d.get(k)`` / ``d.pop(k)`` without a
    default other than None, or one of the values of ``a if c else b``, ``a or b``, ``(y :=
    x)`` that is."""
    if isinstance(value, ast.Constant):
        return value.value is None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        if value.func.attr in ("get", "pop") and len(value.args) in (1, 2):
            return len(value.args) == 1 or none_value(value.args[1])
    return value is not None and any(none_value(part) for part in alternatives(value))


def _optional(annotation: ast.expr) -> bool:
    """``Optional[T]``, ``T | None``, ``Union[..., None]``, ``None``, or a string of one."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return "None" in annotation.value or "Optional" in annotation.value
    return any(
        isinstance(part, ast.Constant) and part.value is None
        or isinstance(part, (ast.Name, ast.Attribute))
        and getattr(part, "id", getattr(part, "attr", "")) == "Optional"
        for part in walk(annotation)
    )


@node_memo
def none_attributes(tree: ast.Module) -> FrozenSet[str]:
    """The attribute names that ``tree`` may store None into: ``obj.X = <may be None>``,
    ``X = None`` in a class body, ``register_buffer("X", None)`` and the like."""
    names: Set[str] = set()
    for function in walk(tree):  # `self.scale = scale` of `__init__(self, scale=None)`
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names |= {
                target.attr
                for node in walk(function)
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name)
                and optional_parameter(function, node.value.id)
                for target in node.targets
                if isinstance(target, ast.Attribute)
            }
    for node in walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            for target in assignment_targets(node):
                for element, value in _pairs(target, node.value):  # `self.g, self.h = None, x`
                    if not none_value(value):
                        continue
                    if isinstance(element, ast.Attribute):
                        names.add(element.attr)
                    elif isinstance(element, ast.Name):
                        names.add(element.id)  # a class-level default (or a global: harmless)
        elif isinstance(node, ast.Call) and len(node.args) >= 2 and none_value(node.args[1]):
            name = registered_name(node)
            if name is not None:
                names.add(name)
    return frozenset(names)
