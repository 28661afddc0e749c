"""Statements that [Where] may move out of a branch, so that they run on both paths.

When both branches of a data-dependent ``if`` end in the same call with different arguments
(``self.register_buffer("inv_freq", A)`` / ``(..., B)``), the call can be made once with the
selected argument, provided what comes before it in each branch can run unconditionally. Two
forms qualify, each with its own proof that running it on the other path changes nothing the
program can observe:

* a **memoised initialisation** ``if not hasattr(X, "k"): X.k = init(...)``: the slot ``k`` is
  used nowhere else in the module, and ``init`` is safe to run speculatively
  (``analysis.purity.speculation_problem``). It only fills the slot earlier;
* an **idempotent move** ``X.a = X.a.to(device)``: every read of ``X.a`` in the module comes after
  the same move, so an extra move is never observed.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterator, List, Optional, Sequence, Set

from ..analysis.index import child_blocks
from ..analysis.purity import impurity, speculation_problem

if TYPE_CHECKING:
    from ..rules.base import FunctionContext


def hoisting_problem(statement: ast.stmt, outer: ast.If, ctx: FunctionContext) -> Optional[str]:
    """None when ``statement`` (in a branch of ``outer``) may run on both paths, else why not."""
    if isinstance(statement, ast.If):
        slot = memoised_slot(statement)
        if slot is not None:
            return _memoised_init_problem(statement, slot, outer, ctx)
    attribute = moved_attribute(statement)
    if attribute is not None:
        assert isinstance(statement, ast.Assign)  # moved_attribute matched `X.a = X.a.to(...)`
        return _move_problem(statement, attribute, ctx)
    return f"a branch contains `{ast.unparse(statement).splitlines()[0]}` before the common call"


def attributes_written(nodes: Sequence[ast.AST]) -> Set[str]:
    """Names of the attributes that ``nodes`` assign."""
    return _attributes(nodes, ast.Store)


def attributes_read(nodes: Sequence[ast.AST]) -> Set[str]:
    """Names of the attributes that ``nodes`` read."""
    return _attributes(nodes, ast.Load)


def _attributes(nodes: Sequence[ast.AST], context: type) -> Set[str]:
    found = (node for tree in nodes for node in ast.walk(tree))
    return {n.attr for n in found if isinstance(n, ast.Attribute) and isinstance(n.ctx, context)}


# ---------------------------------------------------------------- memoised initialisation
def memoised_slot(node: ast.If) -> Optional[str]:
    """``k`` for ``if not hasattr(X, "k"):`` without ``else``, else None."""
    test = node.test
    if node.orelse or not (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)):
        return None
    call = test.operand
    if not (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id == "hasattr"
        and len(call.args) == 2
        and not call.keywords
        and isinstance(call.args[0], ast.Name)
        and isinstance(call.args[1], ast.Constant)
        and isinstance(call.args[1].value, str)
    ):
        return None
    return call.args[1].value


def _memoised_init_problem(
    node: ast.If, slot: str, outer: ast.If, ctx: FunctionContext
) -> Optional[str]:
    """``slot``: ``memoised_slot(node)``, so ``node.test`` is ``not hasattr(owner, slot)``."""
    test = node.test
    assert isinstance(test, ast.UnaryOp) and isinstance(test.operand, ast.Call)
    owner_name = test.operand.args[0]
    assert isinstance(owner_name, ast.Name)
    owner = owner_name.id
    stores_slot = False
    for statement in node.body:
        if not isinstance(statement, ast.Assign):
            return f"the initialisation of `{owner}.{slot}` does more than assign"
        for target in statement.targets:
            for element in target.elts if isinstance(target, ast.Tuple) else [target]:
                if isinstance(element, ast.Attribute) and isinstance(element.value, ast.Name):
                    if (element.value.id, element.attr) != (owner, slot):
                        return f"the initialisation of `{owner}.{slot}` also sets `{element.attr}`"
                    stores_slot = True
                elif not (isinstance(element, ast.Name) and _never_read(element.id, ctx)):
                    used = ast.unparse(element)
                    return f"the initialisation of `{owner}.{slot}` binds `{used}`, which is used"
        for call in (sub for sub in ast.walk(statement.value) if isinstance(sub, ast.Call)):
            for argument in [*call.args, *(keyword.value for keyword in call.keywords)]:
                problem = impurity(argument, ctx.values, ctx.symbols)
                if problem:
                    return problem
            if impurity(call, ctx.values, ctx.symbols):
                problem = speculation_problem(call, ctx.symbols)
                if problem:
                    what = f"the initialisation of `{owner}.{slot}`"
                    return f"{what} cannot run on both paths: {problem}"
    if not stores_slot:
        return f"the `hasattr` test guards no assignment to `{owner}.{slot}`"
    use = _use_outside(slot, outer, ctx.symbols.tree)
    if use is not None:
        return f"`{slot}` is also used on line {use.lineno}, so its initialisation cannot move"
    return None


def _never_read(name: str, ctx: FunctionContext) -> bool:
    return not any(
        isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)
        for node in ast.walk(ctx.region.function)
    )


def _use_outside(slot: str, inside: ast.AST, tree: ast.Module) -> Optional[ast.expr]:
    """A mention of attribute ``slot`` (or the string ``"slot"``) outside ``inside``."""
    excluded = {id(node) for node in ast.walk(inside)}
    for node in ast.walk(tree):
        if id(node) in excluded:
            continue
        if (isinstance(node, ast.Attribute) and node.attr == slot) or (
            isinstance(node, ast.Constant) and node.value == slot
        ):
            return node
    return None


# ---------------------------------------------------------------- idempotent moves
def moved_attribute(statement: ast.stmt) -> Optional[str]:
    """``a`` for ``X.a = X.a.to(...)``, else None."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
        return None
    target, value = statement.targets[0], statement.value
    if not (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "to"
        and isinstance(value.func.value, ast.Attribute)
        and ast.dump(value.func.value.value) == ast.dump(target.value)
        and value.func.value.attr == target.attr
    ):
        return None
    return target.attr


def _move_problem(statement: ast.Assign, attribute: str, ctx: FunctionContext) -> Optional[str]:
    """``attribute``: ``moved_attribute(statement)``, so ``statement.value`` is a call."""
    call = statement.value
    assert isinstance(call, ast.Call)
    for argument in [*call.args, *(keyword.value for keyword in call.keywords)]:
        problem = impurity(argument, ctx.values, ctx.symbols)
        if problem:
            return problem
    for node in _unnormalised_uses(attribute, ctx.symbols.tree):
        return f"`{attribute}` is used on line {node.lineno} without the same `.to()` before it"
    return None


def _unnormalised_uses(attribute: str, tree: ast.Module) -> Iterator[ast.Attribute]:
    """Reads of ``attribute`` that no move precedes in their block or an enclosing one."""
    yield from _block_uses(attribute, tree.body, moved=False)


def _block_uses(attribute: str, block: List[ast.stmt], moved: bool) -> Iterator[ast.Attribute]:
    for statement in block:
        if moved_attribute(statement) == attribute:
            moved = True
            continue
        blocks = child_blocks(statement)
        inner = {id(node) for child in blocks for s in child for node in ast.walk(s)}
        for node in ast.walk(statement):
            if id(node) not in inner and isinstance(node, ast.Attribute) and node.attr == attribute:
                if isinstance(node.ctx, ast.Load) and not moved:
                    yield node
        fresh = isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        for child in blocks:
            yield from _block_uses(attribute, child, moved and not fresh)
