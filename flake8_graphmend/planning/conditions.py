"""Tests of ``if`` statements that a fix may lower into tensor operations, and branch layout."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, AbstractSet, List, Optional, Sequence, Tuple

from ..analysis.dtypes import Dtypes, proven_by
from ..analysis.purity import extrema_taken, extremum_of, impurity
from ..analysis.values import Kind
from .aliasing import alternatives, reaching_bindings
from .items import is_zero_dim, item_comparison_problem
from .totals import total_test, unsure_names

if TYPE_CHECKING:
    from ..rules.base import FunctionContext


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


def is_elif(node: ast.If, ctx: FunctionContext) -> bool:
    """Whether ``node`` is written ``elif`` (ast shows ``else: if`` alike)."""
    return ctx.lines[node.lineno - 1].lstrip().startswith("elif")


def tensor_condition_problem(operands: Sequence[ast.expr], ctx: FunctionContext) -> Optional[str]:
    """Why the tensor conjuncts of a test (those after the static prefix) cannot be lowered."""
    first = _first_operand(operands[0]) if operands else None
    nonempty = extrema_taken(first, ctx.symbols) if first is not None else set()
    for position, operand in enumerate(operands):
        assert first is not None  # there is an operand
        problem = _lowering_problem(operand, ctx, position == 0, nonempty, first)
        lowered = len(operands) > 1 or isinstance(operand, (ast.BoolOp, ast.UnaryOp))
        if problem is None and lowered:
            problem = _python_operand(operand, ctx)
        if problem:
            return problem
    return None


def _python_operand(node: ast.expr, ctx: FunctionContext) -> Optional[str]:
    """Why an operand that the lowering hands to ``torch.logical_*`` may be a Python value
    there: a local that a binding reaching the test may give one (``has_pad = mask.any() if
    mask is not None else False``), which ``torch.logical_not`` does not take."""
    if isinstance(node, ast.BoolOp):
        return next(filter(None, (_python_operand(value, ctx) for value in node.values)), None)
    if isinstance(node, ast.UnaryOp):
        return _python_operand(node.operand, ctx)
    if not isinstance(node, ast.Name) or ctx.values.is_parameter(node.id):
        return None
    for binding in reaching_bindings(node.id, node, ctx)[0]:
        value = getattr(binding, "value", None)
        for each in [value, *alternatives(value)] if value is not None else []:
            if ctx.values.kind(each) is Kind.STATIC:
                return (
                    f"`{node.id}` may be the Python value `{ast.unparse(each)}` (line "
                    f"{getattr(binding, 'lineno', 0)}), which torch.logical_* does not take"
                )
    return None


def _first_operand(node: ast.expr) -> ast.expr:
    """The part of a test that Python always evaluates first: ``a`` of ``a or b``, ``not a``."""
    while isinstance(node, ast.BoolOp) or (
        isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)
    ):
        node = node.values[0] if isinstance(node, ast.BoolOp) else node.operand
    return node


def _lowering_problem(
    node: ast.expr,
    ctx: FunctionContext,
    always_evaluated: bool,
    nonempty: AbstractSet[str],
    first: ast.expr,
) -> Optional[str]:
    """Why ``and``/``or``/``not`` in a tensor condition cannot become ``torch.logical_*``.

    Every operand must be a tensor. Lowering evaluates all of them, so an operand that Python
    might have skipped by short-circuiting must also be pure (``impurity``; ``nonempty``: the
    names whose extremum the first operand takes), compute for every shape and dtype
    (``totals.total_test``, or an extremum the first operand took compared with a number) and
    read no local that may not hold a tensor there (one that ``first`` does not read).
    """
    if isinstance(node, ast.BoolOp):
        for position, value in enumerate(node.values):
            problem = _lowering_problem(
                value, ctx, always_evaluated and position == 0, nonempty, first
            )
            if problem:
                return problem
        return None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _lowering_problem(node.operand, ctx, always_evaluated, nonempty, first)
    kind = ctx.values.kind(node)
    if isinstance(node, ast.Compare) and len(node.ops) > 1 and kind is not Kind.STATIC:
        return (
            f"`{ast.unparse(node)}` is a chained comparison: Python takes the truth of its "
            "first comparison to go on (`a < b and b < c`), which breaks the graph in the "
            "fixed code too"
        )
    if kind is Kind.DATA:
        return item_comparison_problem(node, ctx) or (
            f"`{ast.unparse(node)}` turns tensor data into a Python value; "
            "that is the break to fix first"
        )
    if kind is not Kind.TENSOR:
        return (
            f"`{ast.unparse(node)}` is not a tensor, "
            "so it cannot be combined with torch.logical_*"
        )
    if always_evaluated:
        return None
    if not is_zero_dim(node, ctx):
        return (
            f"`{ast.unparse(node)}` may hold several elements: Python does not test its truth "
            "when `and`/`or` stops early, the lowered test would on every call, and fail"
        )
    dtypes = Dtypes(ctx.values, ctx.symbols, proven_by(first, ctx.symbols))
    problem = impurity(node, ctx.values, ctx.symbols, nonempty, dtypes=dtypes)
    unsure = unsure_names(node, first, node, ctx)
    if problem is None and unsure:  # the first operand computes with its names: tensors
        problem = (
            f"`{ast.unparse(node)}` would be computed on every call, where Python may have "
            f"stopped before it, and `{unsure[0]}`, which the first operand does not compute "
            "with, may be None or unbound there"
        )
    if problem is None and not (total_test(node, ctx) or _extremum_test(node, nonempty, ctx)):
        problem = (
            f"`{ast.unparse(node)}` would be computed on every call, where Python may have "
            "stopped before it, and may fail for some shapes or dtypes there; only tests such "
            "as `(x == 0).any()`, `torch.isnan(x).any()` of a name are known not to"
        )
    return problem


def _extremum_test(node: ast.expr, nonempty: AbstractSet[str], ctx: FunctionContext) -> bool:
    """``x.max() > hi`` where the first operand already took an extremum of ``x`` (which
    then cannot fail), compared with a Python value."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
        return False
    left = node.left
    return (
        isinstance(left, ast.Call)
        and extremum_of(left, ctx.symbols) in nonempty
        and ctx.values.kind(node.comparators[0]) is Kind.STATIC
    )


def shared_line_problem(
    node: ast.If, ctx: FunctionContext, one_line_suites: bool = True
) -> Optional[str]:
    """Why the branches of ``node`` cannot be taken apart statement by statement.

    The rewrite moves whole lines. Several statements on one line of an indented block
    (``a = 1; b = 2``) are declined; so are those of a one-line suite (``if c: a = 1; b = 2``)
    unless ``one_line_suites``.
    """
    for branch, header_line in ((node.body, node.test.end_lineno), (node.orelse, None)):
        lines = [statement.lineno for statement in branch]
        if len(set(lines)) == len(lines):
            continue
        suite = (
            lines[0] == header_line
            if header_line is not None
            else _after_else(branch[0], ctx)
        )
        if not (suite and one_line_suites and len(set(lines)) == 1):
            return "a branch holds several statements on one line"
    return None


def on_header_line(node: ast.If, ctx: FunctionContext) -> bool:
    """Whether a branch of ``node`` is written on the line of its ``if`` or ``else``."""
    return bool(node.body[0].lineno == node.test.end_lineno) or bool(
        node.orelse and _after_else(node.orelse[0], ctx)
    )


def _after_else(statement: ast.stmt, ctx: FunctionContext) -> bool:
    """Whether ``statement`` follows ``else:`` on its line (a one-line ``else`` suite)."""
    text = ctx.lines[statement.lineno - 1].encode("utf-8")[: statement.col_offset]
    return text.decode("utf-8", errors="ignore").strip().startswith("else")


def shares_line(statement: ast.stmt, block: Sequence[ast.stmt]) -> bool:
    """Whether another statement of ``block`` starts or ends on ``statement``'s lines."""
    return any(
        other is not statement
        and other.lineno <= (statement.end_lineno or statement.lineno)
        and (other.end_lineno or other.lineno) >= statement.lineno
        for other in block
    )
