"""DC and VG: Python control flow on tensor values ([Where] and [Trap])."""

from __future__ import annotations

import ast
import builtins
from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple

from ..analysis.purity import ALIASING_OPERATIONS, impurity
from ..analysis.values import Kind
from .base import Finding, FunctionContext
from .hoisting import attributes_read, attributes_written, hoisting_problem

BUILTIN_EXCEPTIONS = {
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}
_TORCH_BOOL_DATA = {"torch.equal", "torch.allclose"}
#: Why an ``elif`` is not rewritten (the rewrite replaces statements of a block; an ``elif`` is
#: the ``else`` clause of the ``if`` before it).
ELIF_DECLINE = "an `elif` is rewritten only as a plain `if` (move it into an `else:` block)"


def split_condition(test: ast.expr, ctx: FunctionContext) -> Tuple[List[ast.expr], List[ast.expr]]:
    """Split ``static and ... and tensor ...`` into its leading static conjuncts and the rest."""
    operands = (
        list(test.values)
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)
        else [test]
    )
    count = 0
    while count < len(operands) - 1 and not ctx.values.is_data_dependent(operands[count]):
        count += 1
    return operands[:count], operands[count:]


def _lowering_problem(
    node: ast.expr, ctx: FunctionContext, always_evaluated: bool
) -> Optional[str]:
    """Why ``and``/``or``/``not`` in a tensor condition cannot become ``torch.logical_*``.

    Every operand must be a tensor. Lowering evaluates all of them, so an operand that Python
    might have skipped by short-circuiting must also be pure.
    """
    if isinstance(node, ast.BoolOp):
        for position, value in enumerate(node.values):
            problem = _lowering_problem(value, ctx, always_evaluated and position == 0)
            if problem:
                return problem
        return None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _lowering_problem(node.operand, ctx, always_evaluated)
    kind = ctx.values.kind(node)
    if kind is Kind.DATA:
        return (
            f"`{ast.unparse(node)}` turns tensor data into a Python value; "
            "that is the break to fix first"
        )
    if kind is not Kind.TENSOR:
        return (
            f"`{ast.unparse(node)}` is not a tensor, "
            "so it cannot be combined with torch.logical_*"
        )
    return None if always_evaluated else impurity(node, ctx.values, ctx.symbols)


def _tensor_condition_problem(operands: Sequence[ast.expr], ctx: FunctionContext) -> Optional[str]:
    """Problems of the tensor conjuncts of a test (those after the static prefix)."""
    for position, operand in enumerate(operands):
        problem = _lowering_problem(operand, ctx, always_evaluated=position == 0)
        if problem:
            return problem
    return None


def _contains_call_to(node: ast.expr, names: Set[str], ctx: FunctionContext) -> bool:
    return any(
        isinstance(sub, ast.Call) and ctx.symbols.qualified_name(sub.func) in names
        for sub in ast.walk(node)
    )


# ---------------------------------------------------------------------------- [Trap]
def trap_plan(node: ast.If, code: str, ctx: FunctionContext):
    raise_stmt = node.body[0]
    exc = raise_stmt.exc
    if raise_stmt.cause is not None:
        return None, "`raise ... from ...` cannot be rebuilt by a graph-native check"
    if not (isinstance(exc, ast.Call) and isinstance(exc.func, ast.Name)):
        return None, "the raised exception is not built as `Name(message)`"
    name = exc.func.id
    if (
        name not in BUILTIN_EXCEPTIONS
        or name in ctx.symbols.defined_here()
        or ctx.values.assignments_of(name)
    ):
        return None, f"`{name}` is not a builtin exception class"
    if len(exc.args) != 1 or exc.keywords or isinstance(exc.args[0], ast.Starred):
        return None, "the exception takes other than exactly one message argument"
    message = exc.args[0]
    if isinstance(message, ast.JoinedStr):
        # the check builds its message on every call, where the original built it on failure
        for piece in message.values:
            if isinstance(piece, ast.FormattedValue):
                if ctx.values.kind(piece.value) in (Kind.TENSOR, Kind.DATA):
                    return None, f"the message formats tensor data `{ast.unparse(piece.value)}`"
                problem = impurity(piece.value, ctx.values, ctx.symbols)
                if problem:
                    return None, f"the message would be built on every call: {problem}"
    elif not (isinstance(message, ast.Constant) and isinstance(message.value, str)):
        return None, "the message is not a string literal or an f-string of plain values"
    change = _state_change_before(node, ctx)
    if change is not None:
        return None, (
            f"`{ast.unparse(change).splitlines()[0]}` (line {change.lineno}) changes Python state "
            "before the guard; under compile that is applied after the graph, so a failing check "
            "would lose it"
        )
    static, tensor_part = split_condition(node.test, ctx)
    if code == "GM302":
        if len(tensor_part) != 1:
            return None, "the torch.equal() test is combined with other tensor tests"
        test = tensor_part[0]
        negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        call = test.operand if negated else test
        if not (
            isinstance(call, ast.Call) and ctx.symbols.qualified_name(call.func) == "torch.equal"
        ):
            return None, (
                "only `torch.equal(a, b)` and `not torch.equal(a, b)` guards "
                "have an exact graph-native form"
            )
        if len(call.args) != 2 or call.keywords:
            return None, "torch.equal() is not called with two positional tensors"
        for arg in call.args:
            problem = impurity(arg, ctx.values, ctx.symbols)
            if problem:
                return None, problem
        return {"kind": "equal", "static_conjuncts": len(static), "negated": negated}, None
    problem = _tensor_condition_problem(tensor_part, ctx)
    if problem:
        return None, problem
    return {"kind": "raise", "static_conjuncts": len(static)}, None


#: Methods that change the Python container they are called on.
_CONTAINER_UPDATES = {
    "append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "add",
    "discard", "popitem", "sort", "reverse",
}


def _state_change_before(node: ast.If, ctx: FunctionContext) -> Optional[ast.AST]:
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
        if getattr(sub, "lineno", node.lineno) >= node.lineno:
            continue
        if isinstance(sub, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
            for target in targets:
                if (
                    isinstance(target, (ast.Attribute, ast.Subscript))
                    and ctx.values.kind(target.value) is not Kind.TENSOR
                ):
                    return sub
                if isinstance(target, ast.Name) and target.id in outer:
                    return sub
        elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute):
            if (
                sub.func.attr in _CONTAINER_UPDATES
                and ctx.values.kind(sub.func.value) is not Kind.TENSOR
            ):
                return sub
    return None


# ---------------------------------------------------------------------------- [Where]
def _names_read(node: ast.AST) -> Set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _reads_outside(name: str, node: ast.If, ctx: FunctionContext) -> bool:
    """Whether ``name`` is read anywhere in the function outside the ``if`` statement."""
    inside = {id(n) for n in ast.walk(node)}
    for sub in ast.walk(ctx.region.function):
        if (
            isinstance(sub, ast.Name)
            and sub.id == name
            and isinstance(sub.ctx, ast.Load)
            and id(sub) not in inside
        ):
            return True
    return False


def _assigns(statement: ast.stmt, name: str) -> bool:
    """Whether ``statement`` binds ``name`` on every path through it that goes on."""
    if isinstance(statement, ast.Assign):
        return any(
            isinstance(n, ast.Name) and n.id == name
            for t in statement.targets
            for n in ast.walk(t)
        )
    if isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        return (
            getattr(statement, "value", None) is not None
            and isinstance(statement.target, ast.Name)
            and statement.target.id == name
        )
    if isinstance(statement, ast.If):
        return _block_assigns(statement.body, name) and _block_assigns(statement.orelse, name)
    if isinstance(statement, (ast.With, ast.AsyncWith)):
        return _block_assigns(statement.body, name)
    return False


def _block_assigns(block: Sequence[ast.stmt], name: str) -> bool:
    return any(
        _assigns(statement, name) or isinstance(statement, (ast.Return, ast.Raise))
        for statement in block
    )


def _bound_before(name: str, node: ast.If, block: Sequence[ast.stmt], ctx: FunctionContext) -> bool:
    """Whether ``name`` surely has a value when the ``if`` starts (parameter or earlier
    assignment)."""
    if ctx.values.is_parameter(name):
        return True
    function = ctx.region.function
    earlier = list(block[: block.index(node)]) + [
        s for s in function.body if s.end_lineno < node.lineno
    ]
    return any(_assigns(statement, name) for statement in earlier)


def _branch_assignments(
    branch: Sequence[ast.stmt],
) -> Tuple[Optional[Dict[str, ast.expr]], Optional[str]]:
    assigned: Dict[str, ast.expr] = {}
    for statement in branch:
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            name, value = statement.targets[0].id, statement.value
        elif (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and statement.value is not None
        ):
            name, value = statement.target.id, statement.value
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
            target = statement.targets[0] if isinstance(statement, ast.Assign) else statement.target
            return None, f"it assigns `{ast.unparse(target)}`, which is not a plain local name"
        elif isinstance(statement, ast.AugAssign):
            return None, f"it updates `{ast.unparse(statement.target)}` in place"
        else:
            return None, f"a branch contains `{ast.unparse(statement).splitlines()[0]}`"
        if name in assigned:
            return None, f"`{name}` is assigned twice in one branch"
        assigned[name] = value
    return assigned, None


def where_plan(node: ast.If, block: Sequence[ast.stmt], ctx: FunctionContext):
    if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
        return None, "an elif chain has more than two outcomes"
    static, tensor_part = split_condition(node.test, ctx)
    problem = _tensor_condition_problem(tensor_part, ctx)
    if problem:
        return None, problem
    plan = {"static_conjuncts": len(static)}
    # Shape 1: a return in both branches (or a return right after an else-less `if`).
    body, orelse = node.body, node.orelse
    following = block[block.index(node) + 1] if block.index(node) + 1 < len(block) else None
    if len(body) == 1 and isinstance(body[0], ast.Return):
        other = orelse[0] if len(orelse) == 1 and isinstance(orelse[0], ast.Return) else None
        trailing = False
        if not orelse and isinstance(following, ast.Return):
            other, trailing = following, True
        if other is None:
            return None, "the branch returns early while the other path goes on"
        if static and trailing:
            return None, "a static conjunct guards an early return"
        for value in (body[0].value, other.value):
            if value is None or (isinstance(value, ast.Constant) and value.value is None):
                return None, "one path returns None"
            problem = _returned_value_problem(value, ctx) or impurity(
                value, ctx.values, ctx.symbols
            )
            if problem:
                return None, problem
        problem = _layout_problem([(body[0].value, other.value)])
        if problem:
            return None, problem
        return {**plan, "shape": "return", "trailing_return": trailing}, None
    # Shape 2: the same call at the end of both branches, with different arguments.
    if _common_call(body, orelse) is not None:
        return _call_plan(node, ctx, plan)
    # Shape 3: assignments to local names (if/else, or an else-less update).
    true_assigned, problem = _branch_assignments(body)
    if problem:
        return None, problem
    false_assigned, problem = _branch_assignments(orelse)
    if problem:
        return None, problem
    both = set(true_assigned) & set(false_assigned)
    condition_reads = _names_read(ast.BoolOp(op=ast.And(), values=list(tensor_part)))
    hoisted: Dict[str, List[int]] = {"body": [], "orelse": []}
    results: List[str] = []
    branches = (("body", true_assigned, orelse), ("orelse", false_assigned, body))
    for branch_name, assigned, other_branch in branches:
        other_reads = (
            set().union(*(_names_read(s) for s in other_branch)) if other_branch else set()
        )
        setups: Set[str] = set()
        earlier: Set[str] = set()
        for index, (name, value) in enumerate(assigned.items()):
            problem = impurity(value, ctx.values, ctx.symbols)
            if problem:
                return None, problem
            if isinstance(value, ast.Constant) and value.value is None:
                return None, f"`{name}` is None on one path"
            reads = _names_read(value)
            # A setup value used only inside its own branch runs unconditionally before the
            # selection: it must not be read elsewhere, nor read this branch's other results.
            confined = (
                name not in both
                and name not in other_reads
                and name not in condition_reads
                and not _reads_outside(name, node, ctx)
            )
            earlier_results = reads & (earlier - setups)
            earlier.add(name)
            if confined and not earlier_results:
                setups.add(name)
                hoisted[branch_name].append(index)
                continue
            if earlier_results:
                return None, (
                    f"`{name}` reads `{sorted(earlier_results)[0]}`, "
                    "assigned earlier in the same branch"
                )
            if name not in results:
                results.append(name)
    if not results:
        return None, "the branch computes nothing that is used afterwards"
    for name in results:
        for value in (true_assigned.get(name), false_assigned.get(name)):
            if value is not None and ctx.values.kind(value) is Kind.STATIC:
                # the helper would branch in Python as before: nothing to gain, say so instead
                plain = ast.unparse(value)
                return None, f"`{name}` is the Python value `{plain}` on one path, not a tensor"
        if name not in true_assigned or name not in false_assigned:
            if not _bound_before(name, node, block, ctx):
                return None, f"`{name}` is not defined on both paths"
    aliased = set(results)
    for value in list(true_assigned.values()) + list(false_assigned.values()):
        if isinstance(value, ast.Name):
            aliased.add(value.id)
    for name in sorted(aliased):
        if name in ctx.mutations:
            return None, (
                f"`{name}` is mutated in place (line {ctx.mutations[name][0]}); "
                "torch.where returns a new tensor, not the same one"
            )
    problem = _aliasing_problem(
        results, [true_assigned, false_assigned], node, ctx
    ) or _layout_problem(
        [(true_assigned.get(name), false_assigned.get(name)) for name in results]
    )
    if problem:
        return None, problem
    # Results assigned later must not read results assigned before them (they would see new values).
    for position, name in enumerate(results):
        for value in (true_assigned.get(name), false_assigned.get(name)):
            if value is not None and _names_read(value) & set(results[:position]):
                return None, f"`{name}` reads a name that the same `if` reassigns"
    plan.update(
        shape="assign",
        results=results,
        hoisted=hoisted,
        condition_temp=len(results) > 1 or bool(condition_reads & set(results)),
    )
    return plan, None


def _returned_value_problem(value: ast.expr, ctx: FunctionContext) -> Optional[str]:
    """Why a returned value cannot be one ``torch.where`` selection (None: it can)."""
    if isinstance(value, (ast.Tuple, ast.List, ast.Dict, ast.Set)):
        return f"a path returns `{ast.unparse(value)}`, a container, not one tensor"
    if ctx.values.kind(value) is Kind.STATIC:
        return f"a path returns the Python value `{ast.unparse(value)}`, not a tensor"
    return None


def may_alias(value: ast.expr, ctx: FunctionContext) -> bool:
    """Whether ``value`` may be an existing tensor or a view of one (not a new tensor)."""
    if isinstance(value, (ast.Name, ast.Attribute, ast.Subscript)):
        return True
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        return value.func.attr in ALIASING_OPERATIONS
    return False


def _aliasing_problem(
    results: Sequence[str], sides: Sequence[Dict[str, ast.expr]], node: ast.If, ctx: FunctionContext
) -> Optional[str]:
    """Why selecting a tensor that may be an existing one changes what code after the ``if`` sees.

    The original binds the name to that very tensor, so an update in place afterwards (a method,
    an ``inplace=True`` call or submodule, a helper that mutates its argument) also changes the
    source (a buffer, an input); ``torch.where`` returns a new tensor, which breaks that link.
    """
    for name in results:
        values = [side[name] for side in sides if name in side]
        if not any(may_alias(value, ctx) for value in values) and len(values) == 2:
            continue
        for call in ctx.facts.calls:
            if call.lineno <= (node.end_lineno or node.lineno):
                continue
            arguments = [*call.args, *(k.value for k in call.keywords)]
            if any(
                isinstance(a, ast.Name) and a.id == name for a in arguments
            ) and _may_mutate_arguments(call, ctx):
                return (
                    f"`{name}` may be an existing tensor on one path and "
                    f"`{ast.unparse(call.func)}()` "
                    f"(line {call.lineno}) may update it in place; torch.where returns a new tensor"
                )
        kept = values if len(values) == 2 else [*values, ast.Name(id=name, ctx=ast.Load())]
        for value in kept:
            root = _root(value)
            if root in ctx.mutations and may_alias(value, ctx):
                line = ctx.mutations[root][0]
                return (
                    f"`{ast.unparse(value)}` is updated in place (line {line}); "
                    "torch.where returns a new tensor, not the same one"
                )
            escape = _escape_after(name, node, ctx)
            if may_alias(value, ctx) and _caller_visible(root, node, ctx) and escape:
                return (
                    f"one path keeps `{ast.unparse(value)}`, a tensor the caller can hold, and "
                    f"line {escape} hands the result on; torch.where returns a new tensor"
                )
    return None


def _root(value: ast.expr) -> str:
    while isinstance(value, (ast.Attribute, ast.Subscript, ast.Call)):
        value = value.func if isinstance(value, ast.Call) else value.value
    return value.id if isinstance(value, ast.Name) else ""


def _caller_visible(root: str, node: ast.If, ctx: FunctionContext, depth: int = 0) -> bool:
    """Whether ``root`` may name a tensor from outside the call when ``node`` runs: ``self``'s
    state, a module global, a parameter not rebound before, or a local bound before only to
    such a tensor or a view of it (``h = x``)."""
    if root == "self" or (root and root not in ctx.local_names):
        return True
    bound = [
        binding.value
        for binding in ctx.facts.bindings
        if binding.lineno < node.lineno
        and isinstance(binding, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == root for t in binding.targets)
    ]
    if not bound:
        return ctx.values.is_parameter(root)
    return depth < 5 and all(
        may_alias(value, ctx) and _caller_visible(_root(value), node, ctx, depth + 1)
        for value in bound
    )


def _escape_after(name: str, node: ast.If, ctx: FunctionContext) -> Optional[int]:
    """The line after ``node`` where ``name`` leaves the function (a return, a store into an
    attribute or an item, a yield), or None."""
    end = node.end_lineno or node.lineno
    for sub in ast.walk(ctx.region.function):
        if getattr(sub, "lineno", 0) <= end:
            continue
        value = None
        if isinstance(sub, (ast.Return, ast.Yield, ast.YieldFrom)):
            value = sub.value
        elif isinstance(sub, ast.Assign) and any(
            isinstance(t, (ast.Attribute, ast.Subscript)) for t in sub.targets
        ):
            value = sub.value
        if value is not None and _hands_on(value, name, ctx):
            return sub.lineno
    return None


def _hands_on(value: ast.expr, name: str, ctx: FunctionContext) -> bool:
    """Whether ``value`` is ``name``'s tensor itself or a view of it, alone or in a container
    (not a new tensor computed from it)."""
    if isinstance(value, ast.Name):
        return value.id == name
    if isinstance(value, (ast.Tuple, ast.List, ast.Set)):
        return any(_hands_on(element, name, ctx) for element in value.elts)
    if isinstance(value, ast.Dict):
        return any(_hands_on(element, name, ctx) for element in value.values)
    if isinstance(value, ast.Starred):
        return _hands_on(value.value, name, ctx)
    if may_alias(value, ctx) and not isinstance(value, ast.Name):
        inner = value.func.value if isinstance(value, ast.Call) else getattr(value, "value", None)
        return isinstance(inner, ast.expr) and _hands_on(inner, name, ctx)
    return False


_TRANSPOSING = {"t", "transpose", "permute", "T", "mT", "H", "mH", "movedim", "swapaxes"}


def _transposes(value: Optional[ast.expr]) -> bool:
    """Whether ``value`` ends in an operation that reorders its input's dimensions."""
    if isinstance(value, ast.Call):
        value = value.func
    return isinstance(value, ast.Attribute) and value.attr in _TRANSPOSING


def _layout_problem(
    pairs: Sequence[Tuple[Optional[ast.expr], Optional[ast.expr]]],
) -> Optional[str]:
    """Why the two paths' tensors may differ in memory layout (the helper would keep the break)."""
    for if_true, if_false in pairs:
        if _transposes(if_true) != _transposes(if_false):
            value = if_true if _transposes(if_true) else if_false
            return f"`{ast.unparse(value)}` has another memory layout than the other path's tensor"
    return None


def _may_mutate_arguments(call: ast.Call, ctx: FunctionContext) -> bool:
    """An ``inplace=True`` call, a submodule built with ``inplace=True``, or a module function
    that updates a parameter in place."""
    if any(
        k.arg == "inplace" and not (isinstance(k.value, ast.Constant) and k.value.value is False)
        for k in call.keywords
    ):
        return True
    func = call.func
    if (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "self"
    ):
        return func.attr in _in_place_submodules(ctx)
    if isinstance(func, ast.Name) and isinstance(
        ctx.symbols.functions.get(func.id), ast.FunctionDef
    ):
        return _updates_parameters(ctx.symbols.functions[func.id])
    return False


def _in_place_submodules(ctx: FunctionContext) -> Set[str]:
    """Attributes of the region's class assigned a call with ``inplace=True`` anywhere in it."""
    owner = ctx.region.owner
    names: Set[str] = set()
    for sub in ast.walk(owner.node) if owner else ():
        if isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Call):
            if any(k.arg == "inplace" for k in ast.walk(sub.value) if isinstance(k, ast.keyword)):
                names |= {t.attr for t in sub.targets if isinstance(t, ast.Attribute)}
    return names


def _updates_parameters(function: ast.FunctionDef) -> bool:
    parameters = {
        a.arg for a in [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]
    }
    for sub in ast.walk(function):
        target = None
        if (
            isinstance(sub, ast.Call)
            and isinstance(sub.func, ast.Attribute)
            and sub.func.attr.endswith("_")
        ):
            target = sub.func.value
        elif isinstance(sub, (ast.Assign, ast.AugAssign)):
            stores = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
            target = next((t.value for t in stores if isinstance(t, ast.Subscript)), None)
            if isinstance(sub, ast.AugAssign) and isinstance(sub.target, ast.Name):
                target = sub.target
        if isinstance(target, ast.Name) and target.id in parameters:
            return True
    return False


def _common_call(
    body: Sequence[ast.stmt], orelse: Sequence[ast.stmt]
) -> Optional[Tuple[ast.Call, ast.Call]]:
    """The last statements of both branches when they are calls of one callee, same arity."""
    if not (body and orelse):
        return None
    last = [branch[-1] for branch in (body, orelse)]
    if not all(isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) for s in last):
        return None
    first, second = (s.value for s in last)
    if ast.dump(first.func) != ast.dump(second.func) or len(first.args) != len(second.args):
        return None
    if [k.arg for k in first.keywords] != [k.arg for k in second.keywords]:
        return None
    return first, second


def _call_plan(node: ast.If, ctx: FunctionContext, plan: dict):
    """``f(.., A, ..)`` / ``f(.., B, ..)``: one call of ``f(.., where(c, A, B), ..)``.

    What precedes the call in each branch is moved before it (``rules/hoisting.py``); the
    condition is computed first, as the ``if`` did.
    """
    if plan["static_conjuncts"]:
        return None, "a static conjunct guards the common call (its else branch runs without it)"
    first, second = _common_call(node.body, node.orelse)
    pairs = list(zip(first.args, second.args)) + [
        (a.value, b.value) for a, b in zip(first.keywords, second.keywords)
    ]
    if any(isinstance(a, ast.Starred) or isinstance(b, ast.Starred) for a, b in pairs) or any(
        k.arg is None for k in first.keywords
    ):
        return None, "the common call unpacks `*args` or `**kwargs`"
    differing = [index for index, (a, b) in enumerate(pairs) if ast.dump(a) != ast.dump(b)]
    if not differing:
        return None, "both branches make the same call; it does not depend on the condition"
    prefixes = {"body": node.body[:-1], "orelse": node.orelse[:-1]}
    for statement in (*prefixes["body"], *prefixes["orelse"]):
        problem = hoisting_problem(statement, node, ctx)
        if problem:
            return None, problem
    for index in differing:
        for value in pairs[index]:
            if isinstance(value, ast.Constant) and value.value is None:
                return None, "the calls differ in an argument that is None on one path"
            if ctx.values.kind(value) is Kind.STATIC:
                return None, f"the calls differ in `{ast.unparse(value)}`, which is not a tensor"
            problem = impurity(value, ctx.values, ctx.symbols)
            if problem:
                return None, problem
    # Each branch's argument is now read after both branches' moved statements.
    for side, index in (("body", 0), ("orelse", 1)):
        other = "orelse" if side == "body" else "body"
        written = attributes_written(prefixes[other])
        read = attributes_read([pairs[i][index] for i in differing] + list(prefixes[side]))
        if written & read:
            shared = sorted(written & read)[0]
            return None, f"`{shared}` is set on one path and read on the other"
    stored = {value.value for value in first.args if isinstance(value, ast.Constant)}
    selected = attributes_read([value for i in differing for value in pairs[i]])
    for name in sorted(stored | selected):
        line = _in_place_write(name, ctx.symbols.tree)
        if line:
            return None, f"`{name}` is modified in place (line {line}); the selection is new"
    return {**plan, "shape": "call", "differing": differing}, None


def _in_place_write(attribute: str, tree: ast.Module) -> Optional[int]:
    """The line of an in-place method call (``x.attribute.copy_(...)``) on ``attribute``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            receiver = node.func.value
            method = node.func.attr
            if isinstance(receiver, ast.Attribute) and receiver.attr == attribute:
                if method.endswith("_") and not method.startswith("_"):
                    return node.lineno
    return None


# ---------------------------------------------------------------------------- detectors
def _is_elif(node: ast.If, ctx: FunctionContext) -> bool:
    return ctx.lines[node.lineno - 1].lstrip().startswith("elif")


def check_if(node: ast.If, block: Sequence[ast.stmt], ctx: FunctionContext) -> Iterator[Finding]:
    if not ctx.values.is_data_dependent(node.test):
        return
    uses_equal = _contains_call_to(node.test, _TORCH_BOOL_DATA, ctx)
    is_guard = len(node.body) == 1 and isinstance(node.body[0], ast.Raise) and not node.orelse
    if is_guard:
        code = "GM302" if uses_equal else "GM301"
        plan, decline = trap_plan(node, code, ctx)
    elif uses_equal:
        code, plan, decline = "GM302", None, "only guards that raise are rewritten"
    elif ctx.values.kind(node.test) is Kind.TENSOR:
        code = "GM201"
        plan, decline = where_plan(node, block, ctx)
    else:
        # A condition that is only data-dependent through .item()/int(t) is reported at the
        # materialising call (GM401/GM403): that call is the break.
        return
    if plan is not None and _is_elif(node, ctx):
        plan, decline = None, ELIF_DECLINE
    yield ctx.finding(code, node, plan=plan, decline=decline, end_node=node.test)


def check_while(node: ast.While, ctx: FunctionContext) -> Iterator[Finding]:
    if ctx.values.kind(node.test) is Kind.TENSOR:
        yield ctx.finding("GM202", node, end_node=node.test)


def check_if_expression(node: ast.IfExp, ctx: FunctionContext) -> Iterator[Finding]:
    if ctx.values.kind(node.test) is Kind.TENSOR:
        yield ctx.finding("GM203", node)
