"""``.item()`` compared with an int: the number may stay a tensor in a guard's test.

``lengths.max().item() <= seq_len`` is a Python bool made from tensor data, which breaks the
graph. Python compares the float or int that ``.item()`` gives exactly with an int; so does a
0-d tensor promoted to float64 (a floating dtype) or int64 (bool, integer), as long as the int
is exactly a float64 (below 2**53). The emitted helper (``_graphmend_item``, in
``fixers/helpers.py``) makes that promotion, and gives ``value.item()`` itself for the values
where it would not be exact (complex, unsigned 64-bit, MPS, meta, not 0-d), so the test then
holds either a 0-d bool tensor or the original Python bool. Only a test whose value is used as
a truth value by code that takes both is rewritten: a [Trap] guard, an ``assert``, or the whole
tensor test of a [Where] selection (whose helper branches in Python on a Python bool).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, AbstractSet, Optional, Tuple

from ..analysis.index import walk
from ..analysis.values import Kind, is_shape, is_size

if TYPE_CHECKING:
    from ..rules.base import FunctionContext

#: Arithmetic that keeps 0-d operands 0-d.
ELEMENTWISE_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
#: Reductions that, called without arguments, always make a 0-d tensor.
WHOLE_REDUCTIONS = {
    "sum", "max", "min", "amax", "amin", "any", "all", "mean", "prod", "count_nonzero",
    "argmax", "argmin", "nansum", "nanmean", "norm", "std", "var",
}
_COMPARISONS = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)
#: Ints up to this magnitude are exact float64 values.
_EXACT_FLOAT_INT = 2**53


def compared_item(test: ast.expr, ctx: FunctionContext) -> Optional[ast.Call]:
    """The ``.item()`` call of ``test`` when ``test`` is ``<whole reduction>.item() <op> <int>``
    (either side, one comparison) and the comparison keeps its result as a 0-d tensor, or the
    bare ``<whole reduction>.item()``, whose truth the 0-d tensor has too (``if
    torch.isnan(x).any().item():``); else None. The int is a literal below 2**53 or a size
    (``x.size(0)``, ``x.shape[-1]``, ``len(x)``, a local unpacked from ``x.size()``)."""
    if _is_whole_item(test, ctx):
        assert isinstance(test, ast.Call)
        return test
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], _COMPARISONS)
    ):
        return None
    left, right = test.left, test.comparators[0]
    for item, other in ((left, right), (right, left)):
        if _is_whole_item(item, ctx) and _exact_int(other, ctx):
            assert isinstance(item, ast.Call)
            return item
    return None


def item_comparison_problem(test: ast.expr, ctx: FunctionContext) -> Optional[str]:
    """Why a comparison of an ``.item()`` number, inside a test, cannot stay a tensor (None:
    ``test`` is not such a comparison). A comparison that ``compared_item`` takes can, but only
    as the whole tensor test of a guard."""
    if not isinstance(test, ast.Compare):
        return None
    if compared_item(test, ctx) is not None:
        return (
            f"`{ast.unparse(test)}` stays a tensor only as the whole tensor test of a guard "
            "(`raise`, `assert`) or a selection: its number may remain a Python value (a "
            "complex one, say), which torch.logical_* does not take"
        )
    operands = [test.left, *test.comparators]
    items = [operand for operand in operands if item_of(operand) is not None]
    if not items:
        return None
    shown = ast.unparse(items[0])
    if len(operands) != 2 or not isinstance(test.ops[0], _COMPARISONS):
        return f"`{shown}` is compared in a chain or by identity; only one `<`, `==`, ... is kept"
    if not _is_whole_item(items[0], ctx):
        return (
            f"`{shown}` is not the number of a whole reduction (`x.sum().item()`), "
            "which is 0-d whatever `x` is"
        )
    other = operands[1] if operands[0] is items[0] else operands[0]
    return (
        f"`{shown}` is compared with `{ast.unparse(other)}`, which is not known to be an int "
        "literal below 2**53 or a size; a tensor compares with anything else in another "
        "precision than Python does"
    )


def item_of(node: ast.AST) -> Optional[ast.expr]:
    """``t`` of ``t.item()``, or None when ``node`` is not such a call."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "item"
        and not node.args
        and not node.keywords
    ):
        return node.func.value
    return None


def _is_whole_item(node: ast.expr, ctx: FunctionContext) -> bool:
    """``x.sum().item()`` or ``torch.sum(x).item()``: the number of a 0-d reduction (of a tensor,
    unless the analysis knows ``x`` to be a Python value; the helper gives ``value.item()``
    itself for anything that turns out not to be a 0-d tensor)."""
    receiver = item_of(node)
    if receiver is None:
        return False
    reduced = whole_reduction(receiver, WHOLE_REDUCTIONS, ctx)
    return reduced is not None and ctx.values.kind(reduced[1]) is not Kind.STATIC


def whole_reduction(
    node: ast.expr, names: AbstractSet[str], ctx: FunctionContext
) -> Optional[Tuple[str, ast.expr]]:
    """``(name, x)`` for ``x.name()`` or ``torch.name(x)``, a reduction of ``names`` over the
    whole of ``x`` (no ``dim``, no keyword); else None."""
    if not isinstance(node, ast.Call) or node.keywords:
        return None
    qualified = ctx.symbols.qualified_name(node.func) or ""
    if qualified.startswith("torch.") and len(node.args) == 1:
        name, reduced = qualified[len("torch."):], node.args[0]
    elif isinstance(node.func, ast.Attribute) and not node.args:
        name, reduced = node.func.attr, node.func.value
    else:
        return None
    return (name, reduced) if name in names else None


def _exact_int(node: ast.expr, ctx: FunctionContext) -> bool:
    """An int that a float64 holds exactly: a literal below 2**53, or a size."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    if isinstance(node, ast.Constant):
        value = node.value
        return type(value) is int and abs(value) < _EXACT_FLOAT_INT
    if is_size(node):
        return True
    return isinstance(node, ast.Name) and unpacked_size(node.id, ctx)


def unpacked_size(name: str, ctx: FunctionContext) -> bool:
    """A local whose every binding is a size, or a part of ``x.size()``/``x.shape`` (or of a
    slice of one) unpacked into names: ``bs, seq_len = input_ids.size()``."""
    values = ctx.values
    if values.is_parameter(name):
        return False
    found = 0
    for node in walk(ctx.region.function):
        if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)) and any(
            isinstance(target, ast.Name) and target.id == name
            for target in walk(node.target)
        ):
            return False
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if not any(isinstance(n, ast.Name) and n.id == name for n in walk(target)):
                continue
            found += 1
            if isinstance(target, ast.Name):
                if not is_size(node.value):
                    return False
            elif not (
                isinstance(target, (ast.Tuple, ast.List))
                and all(isinstance(part, ast.Name) for part in target.elts)
                and _is_shape(node.value)
            ):
                return False
    # every binding the analysis knows of (loops, `with`, comprehensions too) was seen here
    return found > 0 and found == len(values.assignments_of(name))


def _is_shape(node: ast.expr) -> bool:
    """``x.size()``, ``x.shape``, or a slice of one (``x.size()[:-1]``): a tuple of ints."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
        node = node.value
    return is_shape(node)


def is_zero_dim(operand: ast.expr, ctx: FunctionContext, depth: int = 0) -> bool:
    """A test whose truth cannot fail for having several elements: a whole reduction
    (``mask.any()``, ``torch.isnan(x).any()``), a comparison of one with Python values, its
    negation (``not``, ``-``), arithmetic of such values and Python numbers (``mse / mae``),
    or a local only ever assigned one."""
    if depth > 3:
        return False
    if isinstance(operand, ast.UnaryOp) and isinstance(operand.op, (ast.Not, ast.USub, ast.UAdd)):
        return is_zero_dim(operand.operand, ctx, depth)  # `-ratio.mean()` too
    if isinstance(operand, ast.Name):
        return ctx.values.only_assigned(
            operand.id, lambda value: is_zero_dim(value, ctx, depth + 1)
        )
    if isinstance(operand, ast.Compare):
        parts = [operand.left, *operand.comparators]
        tensors = [part for part in parts if ctx.values.kind(part) is not Kind.STATIC]
        return all(is_zero_dim(part, ctx, depth) for part in tensors)
    if isinstance(operand, ast.BinOp) and isinstance(operand.op, ELEMENTWISE_OPERATORS):
        # `mse / mae`, `loss * 0.5`: 0-d operands (or Python numbers) broadcast to 0-d
        sides = [operand.left, operand.right]
        tensors = [side for side in sides if ctx.values.kind(side) is not Kind.STATIC]
        return bool(tensors) and all(is_zero_dim(side, ctx, depth + 1) for side in tensors)
    return whole_reduction(operand, WHOLE_REDUCTIONS, ctx) is not None or _reduced_loss(
        operand, ctx
    )


#: ``torch.nn.functional`` losses, reduced to one value by default (``reduction="mean"``).
_LOSSES = frozenset({
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss",
    "gaussian_nll_loss", "cosine_embedding_loss", "margin_ranking_loss", "soft_margin_loss",
    "multilabel_soft_margin_loss", "hinge_embedding_loss", "multi_margin_loss",
    "triplet_margin_loss", "ctc_loss",
})
#: The keywords that leave the loss reduced (``size_average=`` and ``reduce=``, deprecated,
#: may not; ``reduction=`` only as a literal other than "none").
_LOSS_KEYWORDS = frozenset({
    "weight", "ignore_index", "label_smoothing", "pos_weight", "beta", "delta", "log_target",
    "eps", "full", "margin", "p", "swap", "blank", "zero_infinity", "reduction",
})


def _reduced_loss(node: ast.expr, ctx: FunctionContext) -> bool:
    """``F.cross_entropy(logits, labels)``: a loss reduced to a 0-d tensor (by default, or
    ``reduction="mean"``/``"sum"``/``"batchmean"``), given its two tensors by position."""
    if not isinstance(node, ast.Call) or len(node.args) != 2:
        return False
    qualified = ctx.symbols.qualified_name(node.func) or ""
    if not qualified.startswith("torch.nn.functional.") or qualified.rsplit(".", 1)[-1] not in (
        _LOSSES
    ):
        return False
    for keyword in node.keywords:
        if keyword.arg not in _LOSS_KEYWORDS:
            return False
        value = keyword.value
        if keyword.arg == "reduction" and not (
            isinstance(value, ast.Constant) and value.value in ("mean", "sum", "batchmean")
        ):
            return False
    return True
