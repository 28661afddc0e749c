"""LC: print, logging and warnings calls inside compiled code ([Defer])."""

from __future__ import annotations

import ast
import re
from typing import Iterator, Optional

from ..analysis.mutation import storage_root
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


def _is_logger(receiver: ast.expr, ctx: FunctionContext) -> bool:
    symbols = ctx.symbols
    if isinstance(receiver, ast.Name):
        if symbols.imports.get(receiver.id) == "logging":
            return True
        bound = list(ctx.values.assignments_of(receiver.id)) + (
            [symbols.assignments[receiver.id]] if receiver.id in symbols.assignments else []
        )
        for value in bound:
            if isinstance(value, ast.Call) and (symbols.qualified_name(value.func) or "").endswith(_LOGGER_FACTORIES):
                return True
        return bool(_LOGGER_NAME.search(receiver.id))
    if isinstance(receiver, ast.Attribute):
        return bool(_LOGGER_NAME.search(receiver.attr))
    return False


def classify_call(node: ast.Call, ctx: FunctionContext) -> Optional[str]:
    """The LC code of a call (GM101/GM102/GM103), or None."""
    func = node.func
    if isinstance(func, ast.Name) and func.id == "print":
        shadowed = func.id in ctx.symbols.defined_here() or ctx.values.assignments_of("print") or ctx.values.is_parameter("print")
        return None if shadowed else "GM101"
    qualified = ctx.symbols.qualified_name(func) or ""
    if qualified in _WARN_FUNCTIONS:
        return "GM103"
    if isinstance(func, ast.Attribute) and func.attr in LOGGER_METHODS and _is_logger(func.value, ctx):
        return "GM102"
    return None


def _is_global_reference(node: ast.expr, ctx: FunctionContext) -> bool:
    """A name or dotted name that refers to a module-level object or a builtin, not a local."""
    while isinstance(node, ast.Attribute):
        node = node.value
    if not isinstance(node, ast.Name) or node.id == "self":
        return False
    return not ctx.values.assignments_of(node.id) and not ctx.values.is_parameter(node.id)


def _mangled(node: ast.expr, ctx: FunctionContext) -> bool:
    """A ``__name`` inside a class, which Python mangles there (but not in a module-level helper)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    name = node.id if isinstance(node, ast.Name) else ""
    return ctx.region.owner is not None and name.startswith("__") and not name.endswith("__")


def _formats_tensor(arg: ast.expr, ctx: FunctionContext) -> Optional[str]:
    """Source of a tensor that ``arg`` formats into a string at the call site, if any."""
    pieces = []
    if isinstance(arg, ast.JoinedStr):
        pieces = [v.value for v in arg.values if isinstance(v, ast.FormattedValue)]
    elif isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Mod):
        pieces = list(arg.right.elts) if isinstance(arg.right, ast.Tuple) else [arg.right]
    elif isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr == "format":
        pieces = list(arg.args) + [k.value for k in arg.keywords]
    for piece in pieces:
        if ctx.values.kind(piece) is Kind.TENSOR:
            return ast.unparse(piece)
    return None


def _stacklevel(node: ast.Call) -> Optional[int]:
    for keyword in node.keywords:
        if keyword.arg == "stacklevel":
            value = keyword.value
            return value.value if isinstance(value, ast.Constant) and isinstance(value.value, int) else None
    return 1


def defer_plan(code: str, node: ast.Call, statement: ast.stmt, ctx: FunctionContext):
    """(plan, None) when [Defer] may rewrite the call, else (None, reason)."""
    if not (isinstance(statement, ast.Expr) and statement.value is node):
        return None, "the call's value is used"
    if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
        return None, "it unpacks *args or **kwargs"
    func = node.func
    method = func.attr if isinstance(func, ast.Attribute) else func.id
    if code == "GM102":
        if not _is_global_reference(func.value, ctx):
            return None, f"the logger `{ast.unparse(func.value)}` is not a module-level name the helper can reach"
        if method == "isEnabledFor":
            return None, "its result is used to decide what runs"
        if method == "exception" or any(k.arg in ("exc_info", "stack_info") for k in node.keywords):
            return None, "exception and stack information are not available after the graph"
    for keyword in node.keywords:
        if keyword.arg == "stacklevel" and not (isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, int)):
            return None, "`stacklevel=` is computed at run time"
        if not isinstance(keyword.value, ast.Constant) and not _is_global_reference(keyword.value, ctx):
            return None, f"keyword `{keyword.arg}=` is computed at run time"
    if code == "GM103" and len(node.args) > 2:
        return None, "`stacklevel` is passed positionally"
    baked = []
    mutations = ctx.mutations
    for index, arg in enumerate(node.args):
        if isinstance(arg, (ast.Name, ast.Attribute)) and _is_global_reference(arg, ctx) and not _mangled(arg, ctx):
            baked.append(index)
            continue
        formatted = _formats_tensor(arg, ctx)
        if formatted:
            return None, f"the message formats tensor `{formatted}`, which still breaks the graph"
        # the storage a later update in place may change (`y` for `y`, `y[0]`, `y.view(-1)`)
        root = storage_root(arg, ctx.values, ctx.symbols) if ctx.values.kind(arg) is not Kind.STATIC else ""
        later = [line for line in mutations.get(root, []) if line > node.lineno]
        if later:
            return None, f"`{root}` is mutated in place after the call (line {later[0]}); the deferred call would see the new value"
    if code == "GM101":
        stacklevel = None
    elif code == "GM103" or method in _STDLIB_LOGGER_METHODS:
        level = _stacklevel(node)
        stacklevel = level + 1 if level is not None else None
    else:
        stacklevel = None
    return {"callee": ast.unparse(func), "baked_args": baked, "stacklevel": stacklevel}, None


def check_call(node: ast.Call, statement: ast.stmt, ctx: FunctionContext) -> Iterator[Finding]:
    code = classify_call(node, ctx)
    if code is None:
        return
    plan, decline = defer_plan(code, node, statement, ctx)
    yield ctx.finding(code, node, call=ast.unparse(node.func), plan=plan, decline=decline)
