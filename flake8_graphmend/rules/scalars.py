"""DO/TI: tensor data turned into Python scalars (.item(), .tolist(), int(t), float(t), bool(t)),
and tensors used where Python needs an int (sizes, bounds, slice bounds)."""

from __future__ import annotations

import ast
from typing import Iterator, List, Optional, Tuple

from ..analysis.values import Kind
from ..analysis.index import parent_map
from ..planning.defer import defer_plan
from ..planning import position
from ..planning.items import compared_item
from ..planning.trap import assert_plan, item_kept_plan, trap_plan
from .base import Finding, FunctionContext

_SCALAR_BUILTINS = ("int", "float", "bool")
#: torch factories whose positional arguments are sizes (or a size sequence).
_SIZED_FACTORIES = {
    "torch.zeros", "torch.ones", "torch.empty", "torch.rand", "torch.randn", "torch.randperm",
    "torch.eye",
}
#: torch functions that make more than one element, or random ones, from Python scalars.
_NOT_SCALAR_FACTORIES = {
    "zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "eye", "rand", "randn",
    "randint", "randperm", "normal", "bernoulli", "poisson", "multinomial", "empty_strided",
    "tril_indices", "triu_indices",
}
#: Reductions that, without a ``dim``, make a 0-d tensor usable as an index.
_WHOLE_REDUCTIONS = {
    "argmax", "argmin", "sum", "max", "min", "amax", "amin", "prod", "count_nonzero",
}
#: Tensor methods whose positional arguments are sizes (or a size sequence).
_SIZED_METHODS = {"view", "reshape", "expand", "repeat", "new_zeros", "new_ones", "new_empty"}
#: The last parts of the names of every call ``_integer_arguments`` looks at.
_INTEGER_CALLS = {
    "arange", "linspace", "logspace", "full", "range",
    *(name.rsplit(".", 1)[-1] for name in _SIZED_FACTORIES), *_SIZED_METHODS,
}


def check_call(node: ast.Call, statement: ast.stmt, ctx: FunctionContext) -> Iterator[Finding]:
    func = node.func
    if isinstance(func, ast.Attribute) and not node.args and not node.keywords:
        if func.attr == "item" and ctx.values.kind(func.value) is not Kind.STATIC:
            plan, decline = item_kept_plan(node, statement, ctx)
            if plan is None and decline is None:
                decline = _taken_by_its_statement(node, statement, ctx)
            yield ctx.finding("GM401", node, plan=plan, decline=decline)
        elif func.attr == "tolist" and ctx.values.kind(func.value) is not Kind.STATIC:
            yield ctx.finding("GM402", node)
    elif (
        isinstance(func, ast.Name)
        and func.id in _SCALAR_BUILTINS
        and func.id not in ctx.symbols.defined_here()
        and len(node.args) == 1
        and ctx.values.kind(node.args[0]) is Kind.TENSOR
    ):
        yield ctx.finding("GM403", node, call=func.id)
    for use, value in _integer_arguments(node, ctx):
        if ctx.values.kind(value) is Kind.TENSOR and not _from_constants(value, ctx):
            condition = _tensor_only_when(value, ctx)
            yield ctx.finding(
                "GM404", node, call=f"`{ast.unparse(value)}` as {use}", condition=condition
            )
            return


def _tensor_only_when(value: ast.expr, ctx: FunctionContext) -> Optional[str]:
    """The condition, known while tracing, under which a local is a tensor, when its one
    tensor-valued assignment is ``a if test else b`` with a static ``test`` and one tensor side
    (``n = mask.shape[-1] if isinstance(mask, torch.Tensor) else pos[0] + 1``); else None."""
    if not isinstance(value, ast.Name) or ctx.values.is_parameter(value.id):
        return None
    values = ctx.values
    tensors = [v for v in values.assignments_of(value.id) if values.kind(v) is Kind.TENSOR]
    if len(tensors) != 1 or not isinstance(tensors[0], ast.IfExp):
        return None
    choice = tensors[0]
    if values.is_data_dependent(choice.test):
        return None
    body, orelse = (values.kind(side) is Kind.TENSOR for side in (choice.body, choice.orelse))
    if body == orelse:
        return None
    test = ast.unparse(choice.test)
    return f"`{test}`" if body else f"`not ({test})`"


def _taken_by_its_statement(
    item: ast.Call, statement: ast.stmt, ctx: FunctionContext
) -> Optional[str]:
    """Why the fix of ``statement`` removes the break of ``item`` (``t.item()``) with its own,
    else None: the deferred call whose helper takes the number, the guard or ``assert`` whose
    check keeps it a tensor, or builds its message, with the number, only when it fails."""
    from .side_effects import classify_call  # the rules share one registry of side effects

    where = position(item, ctx)
    call = statement.value if isinstance(statement, ast.Expr) else None
    code = classify_call(call, ctx) if isinstance(call, ast.Call) else None
    if isinstance(call, ast.Call) and code is not None:
        deferred, _ = defer_plan(code, call, statement, ctx)
        if deferred is not None and where in deferred.covers():
            return (
                f"the `{ast.unparse(call.func)}()` call of line {call.lineno} is deferred with "
                f"it, and its helper takes the number ({code}: graphmend.DeferSideEffects)"
            )
        return None
    if isinstance(statement, ast.Assert):
        asserted, _ = assert_plan(statement, ctx) if compared_item(statement.test, ctx) else (
            None, None
        )
        if asserted is not None and where in asserted.covers():
            return (
                f"the `assert` of line {statement.lineno} keeps the number a tensor in its "
                "check (GM301: graphmend.TrapGuards)"
            )
        return None
    guard = statement if isinstance(statement, ast.If) else parent_map(
        ctx.region.function
    ).get(id(statement))
    if not (
        isinstance(guard, ast.If)
        and len(guard.body) == 1
        and isinstance(guard.body[0], ast.Raise)
        and not guard.orelse
    ):
        return None
    trapped, _ = trap_plan(guard, "GM301", ctx)
    if trapped is None or where not in trapped.covers():
        return None
    if guard is statement:
        return (
            f"the guard of line {guard.lineno} keeps the number a tensor in its check "
            "(GM301: graphmend.TrapGuards)"
        )
    return (
        f"the guard of line {guard.lineno} builds its message in its check, with the "
        "number, only when it fails (GM301: graphmend.TrapGuards)"
    )


def _integer_arguments(node: ast.Call, ctx: FunctionContext) -> List[Tuple[str, ast.expr]]:
    """The arguments of a call that Python needs as ints, each with what it is for."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if called not in _INTEGER_CALLS:
        return []  # most calls: no need for their qualified name
    qualified = ctx.symbols.qualified_name(func) or ""
    name = ast.unparse(func)
    if qualified == "torch.arange":
        bounds = [k.value for k in node.keywords if k.arg in ("start", "end", "step")]
        return [(f"a bound of {name}()", value) for value in [*node.args, *bounds]]
    if qualified in ("torch.linspace", "torch.logspace"):
        steps = _argument(node, 2, "steps")
        return [(f"the steps of {name}()", steps)] if steps is not None else []
    if qualified in _SIZED_FACTORIES:
        return [(f"a size of {name}()", value) for value in _sizes(node.args)]
    if qualified == "torch.full":
        size = _argument(node, 0, "size")
        return [(f"a size of {name}()", value) for value in _sizes([size] if size else [])]
    builtin = isinstance(func, ast.Name) and func.id not in ctx.symbols.defined_here()
    if builtin and name == "range":
        return [("a bound of range()", value) for value in node.args]
    if ctx.may_be_tensor_method(func, _SIZED_METHODS):
        assert isinstance(func, ast.Attribute)
        return [(f"a size of .{func.attr}()", value) for value in _sizes(node.args)]
    return []


def _from_constants(node: ast.expr, ctx: FunctionContext, depth: int = 0) -> bool:
    """A tensor computed from Python scalars known while tracing alone
    (``torch.div(seq_len, window, rounding_mode="trunc")`` with ``seq_len`` from a shape):
    Dynamo's fake tensors carry such a one-element value, so a size or a bound given it needs
    no data. (A slice bound still calls ``.item()`` and breaks.)"""
    if depth > 4:
        return False
    if isinstance(node, ast.Call):
        qualified = ctx.symbols.qualified_name(node.func) or ""
        name = qualified.rsplit(".", 1)[-1]
        arguments = [*node.args, *(k.value for k in node.keywords if k.arg != "device")]
        return (
            qualified.startswith("torch.")
            and name not in _NOT_SCALAR_FACTORIES
            and bool(arguments)
            and all(_scalar_constant(a, ctx, depth) for a in arguments)
        )
    if isinstance(node, ast.BinOp):
        return all(_scalar_constant(side, ctx, depth) for side in (node.left, node.right))
    if isinstance(node, ast.Name):
        return ctx.values.only_assigned(node.id, lambda v: _from_constants(v, ctx, depth + 1))
    return False


def _scalar_constant(node: ast.expr, ctx: FunctionContext, depth: int) -> bool:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict, ast.Starred)):
        return False
    return ctx.values.kind(node) is Kind.STATIC or _from_constants(node, ctx, depth + 1)


def _argument(node: ast.Call, position: int, keyword: str) -> Optional[ast.expr]:
    if len(node.args) > position and not any(
        isinstance(arg, ast.Starred) for arg in node.args[: position + 1]
    ):
        return node.args[position]
    return next((k.value for k in node.keywords if k.arg == keyword), None)


def _sizes(arguments: List[ast.expr]) -> List[ast.expr]:
    """The sizes among ``arguments``: each argument, or the elements of a tuple or list."""
    sizes: List[ast.expr] = []
    for argument in arguments:
        if isinstance(argument, (ast.Tuple, ast.List)):
            sizes.extend(argument.elts)
        elif not isinstance(argument, ast.Starred):
            sizes.append(argument)
    return sizes


def check_subscript(node: ast.Subscript, ctx: FunctionContext) -> Iterator[Finding]:
    """``x[start:end]`` with a tensor bound (an element of a ``cumsum``, a loop over a tensor
    of offsets): the slice calls ``.item()`` on it; ``x[t.argmax()]``: a 0-d tensor index is
    turned into an int too."""
    index = node.slice
    elements = index.elts if isinstance(index, ast.Tuple) else [index]
    for element in elements:
        if not isinstance(element, ast.Slice):
            if _zero_dim(element, ctx):
                yield ctx.finding("GM404", node, call=f"`{ast.unparse(element)}` as an index")
                return
            continue
        for bound in (element.lower, element.upper, element.step):
            if bound is not None and ctx.values.kind(bound) is Kind.TENSOR:
                use = f"`{ast.unparse(bound)}` as a slice bound"
                yield ctx.finding("GM404", node, call=use, stops_tracing="a tensor slice bound")
                return


def _zero_dim(node: ast.expr, ctx: FunctionContext, depth: int = 0) -> bool:
    """A 0-d integer-valued tensor: a whole-tensor reduction (``t.argmax()``, ``t.sum()``), or
    a local only ever assigned one."""
    if isinstance(node, ast.Call):
        func = node.func
        return (
            ctx.may_be_tensor_method(func, _WHOLE_REDUCTIONS)
            and not node.args
            and not node.keywords
        )
    if isinstance(node, ast.Name) and depth < 4:
        return ctx.values.only_assigned(node.id, lambda v: _zero_dim(v, ctx, depth + 1))
    return False
