"""LC: print, logging and warnings calls inside compiled code ([Defer])."""

from __future__ import annotations

import ast
import builtins
import re
from typing import Iterator, Optional

from ..analysis.purity import impurity
from ..analysis.values import Kind
from .base import Finding, FunctionContext

#: Methods of ``logging.Logger`` and of transformers' logger that break the graph.
LOGGER_METHODS = {
    "debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log",
    "isEnabledFor", "warning_once", "warning_advice", "info_once",
}
#: Logger methods whose records are attributed through ``stacklevel`` (the stdlib ones).
_STDLIB_LOGGER_METHODS = {"debug", "info", "warning", "warn", "error", "critical", "fatal", "log"}
_WARN_FUNCTIONS = {"warnings.warn"}
_LOGGER_NAME = re.compile(r"(^|_)(logger|log)$", re.IGNORECASE)
_LOGGER_FACTORIES = ("getLogger", "get_logger")
#: Literal types the deferred call carries under compile (others are written into the helper).
_PASSED_CONSTANTS = (str, int, float, bool)
_CONTAINERS = {"tuple", "list", "dict", "set", "frozenset", "sorted", "zip", "enumerate", "range"}


def _is_logger(receiver: ast.expr, ctx: FunctionContext) -> bool:
    symbols = ctx.symbols
    if isinstance(receiver, ast.Name):
        if symbols.imports.get(receiver.id) == "logging":
            return True
        bound = list(ctx.values.assignments_of(receiver.id)) + (
            [symbols.assignments[receiver.id]] if receiver.id in symbols.assignments else []
        )
        for value in bound:
            if isinstance(value, ast.Call) and (
                symbols.qualified_name(value.func) or ""
            ).endswith(_LOGGER_FACTORIES):
                return True
        return bool(_LOGGER_NAME.search(receiver.id))
    if isinstance(receiver, ast.Attribute):
        return bool(_LOGGER_NAME.search(receiver.attr))
    return False


def classify_call(node: ast.Call, ctx: FunctionContext) -> Optional[str]:
    """The LC code of a call (GM101/GM102/GM103), or None."""
    func = node.func
    if isinstance(func, ast.Name) and func.id == "print":
        shadowed = (
            func.id in ctx.symbols.defined_here()
            or ctx.values.assignments_of("print")
            or ctx.values.is_parameter("print")
        )
        return None if shadowed else "GM101"
    qualified = ctx.symbols.qualified_name(func) or ""
    if qualified in _WARN_FUNCTIONS:
        return "GM103"
    if (
        isinstance(func, ast.Attribute)
        and func.attr in LOGGER_METHODS
        and _is_logger(func.value, ctx)
    ):
        return "GM102"
    return None


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
        root = node
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


def defer_plan(code: str, node: ast.Call, statement: ast.stmt, ctx: FunctionContext):
    """(plan, None) when [Defer] may rewrite the call, else (None, reason).

    The helper the fixer emits makes the call at the same point of the compiled graph. Module-level
    names are written into the helper; every other argument is passed to it and must be a value
    the op carries (``_passed_problem``).
    """
    if not (isinstance(statement, ast.Expr) and statement.value is node):
        return None, "the call's value is used"
    if any(isinstance(a, ast.Starred) for a in node.args) or any(
        k.arg is None for k in node.keywords
    ):
        return None, "it unpacks *args or **kwargs"
    func = node.func
    method = func.attr if isinstance(func, ast.Attribute) else func.id
    if code == "GM102":
        if not _is_module_global(func.value, ctx):
            return None, (
                f"the logger `{ast.unparse(func.value)}` is not a module-level name "
                "the helper can reach"
            )
        if method == "isEnabledFor":
            return None, "its result is used to decide what runs"
        if method == "exception" or any(k.arg in ("exc_info", "stack_info") for k in node.keywords):
            return None, (
                "exception and stack information are not available inside the compiled graph"
            )
    for keyword in node.keywords:
        if keyword.arg == "stacklevel" and not (
            isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, int)
        ):
            return None, "`stacklevel=` is computed at run time"
        if not (isinstance(keyword.value, ast.Constant) or _fixed_in_source(keyword.value, ctx)):
            return None, f"keyword `{keyword.arg}=` is computed at run time"
    if code == "GM103" and len(node.args) > 2:
        return None, "`stacklevel` is passed positionally"
    baked, printed = [], []
    for index, arg in enumerate(node.args):
        if _fixed_in_source(arg, ctx):
            baked.append(index)
            continue
        problem = _passed_problem(arg, ctx)
        if problem and code == "GM101" and _tensor_metadata(arg):
            printed.append(index)  # print writes str(arg): pass that text instead
        elif problem:
            return None, problem
    if code == "GM101":
        stacklevel = None
    elif code == "GM103" or method in _STDLIB_LOGGER_METHODS:
        level = _stacklevel(node)
        stacklevel = level + 1 if level is not None else None
    else:
        stacklevel = None
    plan = {
        "callee": ast.unparse(func),
        "baked_args": baked,
        "str_args": printed,
        "stacklevel": stacklevel,
    }
    return plan, None


def check_call(node: ast.Call, statement: ast.stmt, ctx: FunctionContext) -> Iterator[Finding]:
    code = classify_call(node, ctx)
    if code is None:
        return
    plan, decline = defer_plan(code, node, statement, ctx)
    yield ctx.finding(code, node, call=ast.unparse(node.func), plan=plan, decline=decline)
