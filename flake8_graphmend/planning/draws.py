"""A branch on a uniform random draw: ``if r < p`` with ``r = torch.rand([])`` cannot hold when
``p <= 0``.

LayerDrop is written so in training code (transformers' BART family, Whisper, wav2vec2, ...):
``dropout_probability = torch.rand([])`` then ``if dropout_probability < self.layerdrop:`` skip
the layer. The comparison is a tensor, so Dynamo breaks the graph at every layer, also with
``layerdrop = 0``, the default. The branch cannot be predicated (it skips a layer, or
``continue``s). What can be done exactly is to compare only when ``p > 0``:
``_graphmend_draw_below(r, p)`` is ``r < p`` then, and ``False`` otherwise (``torch.rand`` draws
from [0, 1), so ``r < p`` cannot hold when ``p <= 0``, nor when ``p`` is NaN). Dynamo reads ``p``
(a Python number) as a constant: with ``p <= 0`` the graph no longer breaks there; with ``p > 0``
the break stays, since a random draw decides.

With ``p <= 0`` the draw is then used by no comparison, and AOTAutograd and Inductor would drop
it from the graph, changing every number drawn after it (the original's comparison, an output of
the graph at its break, keeps it). The helper hands it to ``_graphmend_keep``, an ordered op that
does nothing with it, at the point where the comparison took it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Sequence

from ..analysis.index import walk
from ..analysis.values import Kind
from . import Plan, Planned, declined
from .aliasing import reaching_bindings, updated_in_place

if TYPE_CHECKING:
    from ..rules.base import FunctionContext

#: Sizes of a draw with one element (a comparison with more raises in ``if``).
_ONE_ELEMENT = ("[]", "()", "1", "[1]", "(1,)")
#: The dtypes a draw may be made in: real floating point, where ``<`` is defined (a complex
#: draw raises there); the device is left to the default (a ``meta`` draw raises at the
#: test, which the fix would skip).
_DRAW_DTYPES = frozenset({
    "torch.float", "torch.float32", "torch.float16", "torch.half", "torch.bfloat16",
    "torch.float64", "torch.double",
})


@dataclass(frozen=True)
class DrawGuard(Plan):
    """``if <static conjuncts> and _graphmend_draw_below(r, p):`` in place of
    ``if ... and r < p:`` (or in the test of ``A if ... and r < p else B``, LayerDrop's
    ``skip_the_layer = True if self.training and r < p else False``)."""

    ordered = True

    #: Conjuncts before the comparison, kept in place.
    static_conjuncts: int
    #: The source of ``r``, a name.
    draw: str
    #: The source of ``p``.
    probability: str

    def caveat(self) -> Optional[str]:
        return f"the break stays while `{self.probability}` > 0, where a random draw decides"


def draw_guard_plan(
    node: ast.stmt,
    static: Sequence[ast.expr],
    tensor_part: Sequence[ast.expr],
    ctx: FunctionContext,
) -> Planned[DrawGuard]:
    """A ``DrawGuard`` when the test of ``node`` (an ``if``, or the statement of a conditional
    expression) compares a one-element ``torch.rand`` draw against a Python probability (``r <
    p`` or ``p > r``), else why not: an empty reason when the test does not compare a random
    draw at all."""
    compare = tensor_part[0] if len(tensor_part) == 1 else None
    if not (isinstance(compare, ast.Compare) and len(compare.ops) == 1):
        return declined("")
    draw, probability = compare.left, compare.comparators[0]
    if isinstance(compare.ops[0], (ast.Gt, ast.GtE)):
        draw, probability = probability, draw
    if not _random(draw, node, ctx):
        return declined("")
    if not isinstance(compare.ops[0], (ast.Lt, ast.Gt)):
        return declined(
            "the test is not `draw < p`; `torch.rand` may return 0.0, so `draw <= 0` may hold"
        )
    shown = ast.unparse(probability)
    problem = _draw_problem(draw, node, ctx) or _probability_problem(probability, ctx)
    if problem:
        return declined(problem)
    if any(ast.dump(operand) == ast.dump(_guard(probability)) for operand in static):
        return declined(
            f"it is guarded by `{shown} > 0`; the break stays while `{shown}` > 0, where a "
            "random draw decides"
        )
    return DrawGuard(len(static), ast.unparse(draw), shown), None


def _guard(probability: ast.expr) -> ast.expr:
    """``p > 0``, a conjunct that already keeps the comparison from being made at 0."""
    return ast.Compare(left=probability, ops=[ast.Gt()], comparators=[ast.Constant(0)])


def _random(value: ast.expr, node: ast.stmt, ctx: FunctionContext) -> bool:
    """Whether ``value`` is a ``torch.rand*`` call, or a name bound to one before ``node``."""
    if isinstance(value, ast.Name):
        values = [
            binding.value
            for binding in reaching_bindings(value.id, node, ctx)[0]
            if isinstance(binding, (ast.Assign, ast.AnnAssign)) and binding.value is not None
        ]
    else:
        values = [value]
    return any(
        isinstance(v, ast.Call)
        and (ctx.symbols.qualified_name(v.func) or "").startswith("torch.rand")
        for v in values
    )


def _draw_problem(draw: ast.expr, node: ast.stmt, ctx: FunctionContext) -> Optional[str]:
    if isinstance(draw, ast.Call):
        return "the draw is made in the test, which a guard in front of it would skip"
    if not isinstance(draw, ast.Name):
        return f"`{ast.unparse(draw)}` is not a name bound to a random draw"
    bindings, from_caller = reaching_bindings(draw.id, node, ctx)
    if from_caller or not bindings:
        return f"`{draw.id}` may hold a value from the caller"
    for binding in bindings:
        value = binding.value if isinstance(binding, (ast.Assign, ast.AnnAssign)) else None
        if value is None or not _is_uniform_draw(value, ctx):
            return (
                f"`{draw.id}` is not always `torch.rand` of one element, of a real floating "
                "dtype, on the default device"
            )
    updated = updated_in_place(draw.id, ctx)
    if updated is not None:
        return f"`{draw.id}` is updated in place (line {updated}): it may leave [0, 1)"
    first = min(getattr(binding, "lineno", node.lineno) for binding in bindings)
    handed = next(
        (
            sub for sub in walk(ctx.region.function)
            if isinstance(sub, ast.Name) and sub.id == draw.id and isinstance(sub.ctx, ast.Load)
            and first <= sub.lineno < node.lineno
        ),
        None,
    )
    if handed is not None:
        return (
            f"`{draw.id}` is read before the test (line {handed.lineno}), where it may be "
            "changed or handed on"
        )
    return None


def _is_uniform_draw(value: ast.expr, ctx: FunctionContext) -> bool:
    """``torch.rand(size)`` with one element, of a real floating dtype, on the default device
    (a ``generator`` keyword too): a value in [0, 1)."""
    return (
        isinstance(value, ast.Call)
        and ctx.symbols.qualified_name(value.func) == "torch.rand"
        and len(value.args) == 1
        and ast.unparse(value.args[0]) in _ONE_ELEMENT
        and all(
            keyword.arg == "generator"
            or keyword.arg == "dtype"
            and (ctx.symbols.qualified_name(keyword.value) or "") in _DRAW_DTYPES
            for keyword in value.keywords
        )
    )


def _probability_problem(probability: ast.expr, ctx: FunctionContext) -> Optional[str]:
    """``p`` must be a number, or a name or attribute that Dynamo reads as a constant, not a
    tensor."""
    shown = ast.unparse(probability)
    if ctx.values.kind(probability) in (Kind.TENSOR, Kind.DATA):
        return f"`{shown}` is a tensor value: testing it would break the graph too"
    if isinstance(probability, ast.Constant):
        number = probability.value
        if isinstance(number, (int, float)) and not isinstance(number, bool):
            return None
        return f"`{shown}` is not a number"
    node = probability
    while isinstance(node, ast.Attribute):
        node = node.value
    if not isinstance(node, ast.Name):
        return f"`{shown}` is not a plain name or attribute"
    return None
