"""LC: print, logging and warnings calls inside compiled code ([Defer])."""

from __future__ import annotations

import ast
import re
from typing import Iterator, Optional

from ..planning.defer import defer_plan, deferred_if
from ..planning.split import split_if_of_call
from .base import Finding, FunctionContext

#: Methods of ``logging.Logger`` and of transformers' logger that break the graph.
LOGGER_METHODS = {
    "debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log",
    "isEnabledFor", "warning_once", "warning_advice", "info_once",
}
_WARN_FUNCTIONS = {"warnings.warn"}
_LOGGER_NAME = re.compile(r"(^|_)(logger|log)$", re.IGNORECASE)
_LOGGER_FACTORIES = ("getLogger", "get_logger", "LoggerAdapter")


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
                (symbols.qualified_name(value.func) or "").endswith(_LOGGER_FACTORIES)
                or isinstance(value.func, ast.Attribute) and value.func.attr == "getChild"
            ):
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


def check_call(node: ast.Call, statement: ast.stmt, ctx: FunctionContext) -> Iterator[Finding]:
    code = classify_call(node, ctx)
    if code is None:
        return
    plan, decline = defer_plan(code, node, statement, ctx)
    deferred, _ = deferred_if(statement, ctx, classify_call) or (None, None)
    own_statement = isinstance(statement, ast.Expr) and statement.value is node
    split = split_if_of_call(statement, ctx, classify_call) if own_statement else None
    if deferred is not None and own_statement:
        plan, decline = None, (
            f"the `if` on line {deferred.line} is deferred as a whole, this call with it "
            "(GM201: graphmend.PredicateControlFlow)"
        )
    elif split is not None:
        plan, decline = None, (
            f"the `if` on line {split.calls.line} defers its calls as a whole, this one with "
            "them, and selects the rest (GM201: graphmend.PredicateControlFlow)"
        )
    yield ctx.finding(code, node, call=ast.unparse(node.func), plan=plan, decline=decline)
