"""[Defer]: may a print, logger or warnings.warn call go through a deferred helper?

The helper the fixer emits makes the call at the same point of the compiled graph (an ordered
custom op, ``fixers/helpers.py``). Module-level names are written into the helper; every other
argument is passed to it and must be a value the op carries.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass
from typing import TYPE_CHECKING, FrozenSet, List, Optional

from ..analysis.purity import impurity
from ..analysis.values import Kind
from . import Plan, Planned, declined

if TYPE_CHECKING:
    from ..rules.base import FunctionContext

#: Logger methods whose records are attributed through ``stacklevel`` (the stdlib ones).
_STDLIB_LOGGER_METHODS = {"debug", "info", "warning", "warn", "error", "critical", "fatal", "log"}
#: Literal types the deferred call carries under compile (others are written into the helper).
_PASSED_CONSTANTS = (str, int, float, bool)
_CONTAINERS = {"tuple", "list", "dict", "set", "frozenset", "sorted", "zip", "enumerate", "range"}


@dataclass(frozen=True)
class DeferPlan(Plan):
    """The call becomes a call of a registered helper that makes it."""

    #: The callee as written (``logger.warning``, ``warnings.warn``, ``print``).
    callee: str
    #: Positional arguments written into the helper (module-level names, literals the op
    #: cannot carry); the others are passed to it.
    baked_args: FrozenSet[int]
    #: Positional arguments passed as ``str(value)``: what ``print`` writes for tensor metadata.
    str_args: FrozenSet[int]
    #: The ``stacklevel`` the helper's call passes, counting the helper's own frame (None: the
    #: callee takes none).
    stacklevel: Optional[int]


def defer_plan(
    code: str, node: ast.Call, statement: ast.stmt, ctx: FunctionContext
) -> Planned[DeferPlan]:
    """Whether [Defer] may rewrite the call ``node`` (reported as ``code``)."""
    problem = _call_form_problem(code, node, statement, ctx) or _keywords_problem(code, node, ctx)
    if problem:
        return declined(problem)
    baked: List[int] = []
    printed: List[int] = []
    for index, arg in enumerate(node.args):
        if _fixed_in_source(arg, ctx):
            baked.append(index)
            continue
        problem = _passed_problem(arg, ctx)
        if problem and code == "GM101" and _tensor_metadata(arg):
            printed.append(index)  # print writes str(arg): pass that text instead
        elif problem:
            return declined(problem)
    plan = DeferPlan(
        callee=ast.unparse(node.func),
        baked_args=frozenset(baked),
        str_args=frozenset(printed),
        stacklevel=_helper_stacklevel(code, node),
    )
    return plan, None


def _call_form_problem(
    code: str, node: ast.Call, statement: ast.stmt, ctx: FunctionContext
) -> Optional[str]:
    """Why the call as a whole cannot be deferred (its value is used, it unpacks, ...)."""
    if not (isinstance(statement, ast.Expr) and statement.value is node):
        return "the call's value is used"
    if any(isinstance(a, ast.Starred) for a in node.args) or any(
        k.arg is None for k in node.keywords
    ):
        return "it unpacks *args or **kwargs"
    func = node.func
    if code != "GM102" or not isinstance(func, ast.Attribute):
        return None
    if not _is_module_global(func.value, ctx):
        return (
            f"the logger `{ast.unparse(func.value)}` is not a module-level name "
            "the helper can reach"
        )
    if func.attr == "isEnabledFor":
        return "its result is used to decide what runs"
    if func.attr == "exception" or any(k.arg in ("exc_info", "stack_info") for k in node.keywords):
        return "exception and stack information are not available inside the compiled graph"
    return None


def _keywords_problem(code: str, node: ast.Call, ctx: FunctionContext) -> Optional[str]:
    """Keywords are written into the helper: they must be literals or module-level names."""
    for keyword in node.keywords:
        if keyword.arg == "stacklevel" and not (
            isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, int)
        ):
            return "`stacklevel=` is computed at run time"
        if not (isinstance(keyword.value, ast.Constant) or _fixed_in_source(keyword.value, ctx)):
            return f"keyword `{keyword.arg}=` is computed at run time"
    if code == "GM103" and len(node.args) > 2:
        return "`stacklevel` is passed positionally"
    return None


def _helper_stacklevel(code: str, node: ast.Call) -> Optional[int]:
    """``stacklevel`` for the helper's call: the caller's, plus the helper's own frame."""
    method = node.func.attr if isinstance(node.func, ast.Attribute) else ""
    if code == "GM101" or (code == "GM102" and method not in _STDLIB_LOGGER_METHODS):
        return None
    level = _stacklevel(node)
    return level + 1 if level is not None else None


def _is_module_global(node: ast.expr, ctx: FunctionContext) -> bool:
    """A name or dotted name whose root is a module-level name or a builtin, seen from here.

    A helper at module level can refer to it by the same spelling. Locals, closure variables,
    ``except ... as`` names and modules imported inside the function cannot be reached there.
    """
    while isinstance(node, ast.Attribute):
        node = node.value
    if not isinstance(node, ast.Name) or node.id in ctx.local_names:
        return False
    return node.id in ctx.symbols.defined_here() or hasattr(builtins, node.id)


def _mangled(node: ast.expr, ctx: FunctionContext) -> bool:
    """A ``__name`` inside a class, which Python mangles there (but not in a module-level
    helper)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    name = node.id if isinstance(node, ast.Name) else ""
    return ctx.region.owner is not None and name.startswith("__") and not name.endswith("__")


def _fixed_in_source(node: ast.expr, ctx: FunctionContext) -> bool:
    """A module-level name, or a literal the op cannot carry (None), to write into the helper."""
    if isinstance(node, ast.Constant):
        return not isinstance(node.value, _PASSED_CONSTANTS)
    return (
        isinstance(node, (ast.Name, ast.Attribute))
        and _is_module_global(node, ctx)
        and not _mangled(node, ctx)
    )


def _passed_problem(node: ast.expr, ctx: FunctionContext) -> Optional[str]:
    """Why ``node`` cannot be passed to the deferred call under compile (None: it can).

    The op carries tensors and str, int, float and bool values (an f-string of Python values is
    a str when Dynamo traces it). A value of unknown type is passed too: when it turns out to be
    something else at run time, the helper makes the call as written, graph break included.
    """
    if isinstance(node, ast.JoinedStr):  # a str only if Dynamo can format every piece itself
        for piece in node.values:
            if isinstance(piece, ast.FormattedValue):
                kind = ctx.values.kind(piece.value)
                if kind in (Kind.TENSOR, Kind.DATA):
                    return f"the message formats tensor `{ast.unparse(piece.value)}`"
                plain = kind is Kind.STATIC or _configuration_value(piece.value, ctx)
                if not plain or _is_exception(piece.value, ctx):
                    return (
                        f"the message formats `{ast.unparse(piece.value)}`, which is not known "
                        "to be a plain Python value"
                    )
                problem = impurity(piece.value, ctx.values, ctx.symbols)
                if problem:
                    return problem
        return None
    if _is_exception(node, ctx):
        return f"`{ast.unparse(node)}` is the exception object of an `except` clause"
    if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)) or (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _CONTAINERS
        and node.func.id not in ctx.symbols.defined_here()
    ):
        return (
            f"`{ast.unparse(node)}` is a container; "
            "the deferred call carries only scalars and tensors"
        )
    if isinstance(node, ast.Constant) or ctx.values.kind(node) in (Kind.TENSOR, Kind.UNKNOWN):
        return None
    if _is_size(node):
        return None
    if isinstance(node, ast.Name):
        bound = ctx.values.assignments_of(node.id)
        if bound and all(
            isinstance(v, ast.Constant) and isinstance(v.value, _PASSED_CONSTANTS) for v in bound
        ):
            return None
    return (
        f"`{ast.unparse(node)}` is a Python value that is neither a str, int, float nor bool "
        "as far as the analysis can tell; the deferred call carries only those and tensors"
    )


def _is_size(node: ast.expr) -> bool:
    """An int from a tensor's shape: ``x.shape[0]``, ``x.size(1)``, ``x.dim()``, ``len(x)``."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        node = node.value
        return isinstance(node, ast.Attribute) and node.attr == "shape"
    if isinstance(node, ast.Attribute):
        return node.attr == "ndim"
    if not isinstance(node, ast.Call):
        return False
    if isinstance(node.func, ast.Name):
        return node.func.id == "len" and len(node.args) == 1
    if isinstance(node.func, ast.Attribute) and node.func.attr == "size":
        return len(node.args) == 1  # `x.size()` alone is a torch.Size
    return isinstance(node.func, ast.Attribute) and node.func.attr in ("dim", "numel")


def _tensor_metadata(node: ast.expr) -> bool:
    """``x.shape``, ``x.size()``, ``x.dtype``, ``x.device``: values whose ``str()`` Dynamo
    computes exactly while tracing (not so for every object: a KeyError loses its quotes)."""
    if isinstance(node, ast.Call) and not node.args and not node.keywords:
        node = node.func
        return isinstance(node, ast.Attribute) and node.attr == "size"
    return isinstance(node, ast.Attribute) and node.attr in ("shape", "dtype", "device")


_SCALAR_BUILTINS = {"max", "min", "len", "int", "float", "str", "abs", "round", "bool"}


def _configuration_value(node: ast.expr, ctx: FunctionContext, depth: int = 0) -> bool:
    """A Python value built from literals and ``self``'s (non-tensor) attributes, such as
    ``self.config.window if ... else max(self.config.window)``, through local names."""
    if depth > 3:
        return False
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Attribute):
        root: ast.expr = node
        while isinstance(root, ast.Attribute):
            root = root.value
        return isinstance(root, ast.Name) and root.id == "self" and (
            ctx.values.kind(node) is not Kind.TENSOR
        )
    if isinstance(node, ast.Name):
        bound = ctx.values.assignments_of(node.id)
        return bool(bound) and not ctx.values.is_parameter(node.id) and all(
            _configuration_value(value, ctx, depth + 1) for value in bound
        )
    if isinstance(node, ast.IfExp):
        return all(_configuration_value(v, ctx, depth + 1) for v in (node.body, node.orelse))
    if isinstance(node, ast.BinOp):
        return all(_configuration_value(v, ctx, depth + 1) for v in (node.left, node.right))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return (
            node.func.id in _SCALAR_BUILTINS
            and node.func.id not in ctx.symbols.defined_here()
            and all(_configuration_value(a, ctx, depth + 1) for a in node.args)
        )
    return False


def _is_exception(node: ast.expr, ctx: FunctionContext) -> bool:
    """The name bound by an ``except ... as`` clause of the function."""
    function = ctx.region.function
    return isinstance(node, ast.Name) and any(
        isinstance(n, ast.ExceptHandler) and n.name == node.id for n in ast.walk(function)
    )


def _stacklevel(node: ast.Call) -> Optional[int]:
    for keyword in node.keywords:
        if keyword.arg == "stacklevel":
            value = keyword.value
            return (
                value.value
                if isinstance(value, ast.Constant) and isinstance(value.value, int)
                else None
            )
    return 1
