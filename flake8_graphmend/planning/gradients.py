"""[Where] under autograd: is a selection exact for gradients too, not only for values?

``torch.where(c, A, B)`` computes both sides and hands the upstream gradient to the side it
selected and zeros to the other. The original ran one side only, so the selection is exact for
gradients when, whatever the values (inf and NaN included):

1. the side that was not selected turns its zero gradient into exact zeros all the way back
   (``0 * inf`` is NaN: ``x * w``, ``x / w``, ``log``, ``sqrt``, ``exp``, ``tanh``, matmul and
   the like do not qualify; ``clamp``, ``where``, ``relu`` and additions do);
2. both sides reach the same tensors that may require grad, so no parameter or input that the
   original left without a gradient (``.grad is None``; optimizers skip it) gets a zero one,
   and the result requires grad exactly when the original's did;
3. no tensor the caller holds is saved for backward by a side that the original did not run
   (an update in place of it between forward and backward would raise only in the fixed code).

``gradient_problem`` checks these on the ``ast`` and names the first culprit. Where it finds
one, the ``if`` stays as written while autograd records through what the sides compute with
(``if _graphmend_keeps_branch(h):``, ``gradient_inputs``; its ``else`` selects), since under
compile a side computed in the graph gets a zero gradient from AOTAutograd even when a helper
then branches on it; where it finds none, the fixer emits the helper that selects with
``torch.where`` under autograd too.
"""

from __future__ import annotations

import ast
from typing import (
    TYPE_CHECKING, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple,
)

from ..analysis.hooks import code_given_to_modules
from ..analysis.index import walk
from ..analysis.layers import layer_tensor
from ..analysis.purity import is_slice_index
from ..analysis.values import Kind
from .aliasing import hands_on_caller_tensor, updated_in_place

if TYPE_CHECKING:
    from ..rules.base import FunctionContext

#: Operations whose backward turns a zero upstream gradient into exact zeros for any input
#: values, inf and NaN included (measured on torch 2.13, float32, float16 and bfloat16: their
#: backward is a mask, a selection, a sum or a reshaping of the gradient, never a product with
#: the values). ``sub``/``neg`` give ``-0.0``, which adds exactly to the selected side's gradient.
ZERO_GRADIENT_OPERATIONS = frozenset({
    "add", "sub", "subtract", "neg", "negative", "clamp", "clamp_min", "clamp_max", "clip",
    "where", "masked_fill", "relu", "relu6", "hardtanh", "leaky_relu", "nan_to_num", "maximum",
    "minimum", "fmax", "fmin", "sum", "mean", "cumsum", "transpose", "permute", "t", "unsqueeze",
    "squeeze", "flatten", "contiguous", "clone", "float", "half", "double", "bfloat16",
})
#: Operations that return bool tensors: no gradient flows through them.
_BOOLEAN_OPERATIONS = frozenset({
    "eq", "ne", "lt", "le", "gt", "ge", "greater", "less", "isinf", "isnan", "isfinite",
    "isposinf", "isneginf", "signbit", "logical_and", "logical_or", "logical_not",
    "logical_xor", "any", "all",
})
#: Of those, the ones whose backward keeps input tensors: the inputs its mask is computed from,
#: or the condition or mask itself (``where``, ``masked_fill``).
_SAVING_OPERATIONS = frozenset({
    "clamp", "clamp_min", "clamp_max", "clip", "relu6", "hardtanh", "leaky_relu", "nan_to_num",
    "maximum", "minimum", "fmax", "fmin", "where", "masked_fill",
})
#: Keyword arguments that keep the operation differentiable (``dtype=`` may make it integer).
_KEYWORDS = frozenset({
    "min", "max", "dim", "keepdim", "value", "negative_slope", "nan", "posinf", "neginf", "input",
    "other", "mask", "condition", "dim0", "dim1",
})
_TORCH_NAMESPACES = ("torch", "torch.nn.functional")

#: The hoisted setup statements of one side of a selection (``name -> value``): its values may
#: read those names, which stand for what the setups compute.
Setups = Dict[str, ast.expr]


def gradient_problem(
    pairs: Iterable[Tuple[ast.expr, ast.expr]],
    ctx: FunctionContext,
    setups: Sequence[Setups] = ({}, {}),
) -> Optional[str]:
    """Why selecting between each ``(if_true, if_false)`` pair may change gradients (see the
    module docstring), or None. ``setups`` holds the hoisted ``name = value`` statements of the
    true and the false side: they now run on both paths."""
    for value in (value for side in setups for value in side.values()):
        problem = _expression_problem(value, ctx)
        if problem:
            return problem
    for if_true, if_false in pairs:
        for value in (if_true, if_false):
            problem = _expression_problem(value, ctx)
            if problem:
                return problem
        reached = [
            _tensor_roots(value, side, ctx) for value, side in zip((if_true, if_false), setups)
        ]
        if reached[0] != reached[1]:
            one = 0 if reached[0] - reached[1] else 1
            only = sorted(reached[one] - reached[1 - one])[0]
            return (
                f"only one path reads `{only}`, which would get a zero gradient "
                "where the original gives it none"
            )
    return None


#: Attributes that tell a selected tensor from the one the branch computed.
_HISTORY_ATTRIBUTES = frozenset({"grad_fn", "is_leaf", "_base", "_version", "output_nr"})
#: Builtins that turn a tensor into text (its repr names its autograd node).
_FORMATTERS = frozenset({"str", "repr", "format", "ascii"})


def shown_problem(names: Iterable[str], ctx: FunctionContext) -> Optional[str]:
    """Why a tensor selected into one of ``names`` may show its autograd history: the
    function prints, logs or formats it whole, reads its ``grad_fn``, or returns it from a
    file that registers module hooks (a forward hook may print it). Eager, the selection
    helper returns the branch's own tensor; compiled, the selection is a new graph output
    (``WhereBackward0`` with the ``eager`` backend, a compiled node where the branch kept a
    leaf), so the text could differ."""
    from ..rules.side_effects import classify_call  # the rules import the planners

    wanted = set(names)
    hooked = code_given_to_modules(ctx.symbols.tree) is not None
    for node in walk(ctx.region.function):
        how = "shows"
        if isinstance(node, ast.Attribute) and node.attr in _HISTORY_ATTRIBUTES:
            shown: List[ast.expr] = [node.value]
        elif isinstance(node, ast.Return) and hooked and node.value is not None:
            shown, how = [node.value], "returns, to module hooks of the file,"
        elif isinstance(node, ast.Call) and (classify_call(node, ctx) or _formats(node)):
            shown = [*node.args, *(keyword.value for keyword in node.keywords)]
        elif isinstance(node, ast.FormattedValue):
            shown = [node.value]
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            shown = [node.right] if isinstance(node.left, (ast.Constant, ast.JoinedStr)) else []
        else:
            continue
        for name in sorted(set().union(*(_whole_names(value) for value in shown)) & wanted):
            return (
                f"line {node.lineno} {how} `{name}` whole, and a selected tensor names another "
                "autograd node (`grad_fn`) under torch.compile"
            )
    return None


def shown_returned_problem(node: ast.stmt, ctx: FunctionContext) -> Optional[str]:
    """Why a selection that ``node`` returns may show its autograd history: the file registers
    module hooks, and a forward hook may print what ``forward`` returns (``shown_problem``)."""
    if code_given_to_modules(ctx.symbols.tree) is None:
        return None
    return (
        f"line {node.lineno} returns the selection, to module hooks of the file, and a "
        "selected tensor names another autograd node (`grad_fn`) under torch.compile"
    )


def _formats(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in _FORMATTERS
    return isinstance(func, ast.Attribute) and func.attr in ("format", "format_map")


def _whole_names(value: ast.expr) -> Set[str]:
    """Names that ``value`` shows whole: not through an attribute, an index or a call of theirs
    (``h.shape``, ``h[0]``, ``h.sum()`` name their own autograd nodes)."""
    if isinstance(value, ast.Name):
        return {value.id}
    if isinstance(value, (ast.Attribute, ast.Subscript)):
        return set()
    if isinstance(value, ast.Call):
        inner = [*value.args, *(keyword.value for keyword in value.keywords)]
        return set().union(*(_whole_names(child) for child in inner))
    children = [child for child in ast.iter_child_nodes(value) if isinstance(child, ast.expr)]
    return set().union(*(_whole_names(child) for child in children))


def _expression_problem(value: ast.expr, ctx: FunctionContext) -> Optional[str]:
    """Why the backward of ``value`` may turn a zero gradient into something else."""
    if ctx.values.kind(value) in (Kind.STATIC, Kind.DATA):
        return None  # a Python value: no gradient flows through it
    if ctx.symbols.may_run_code(value):
        return f"`{ast.unparse(value)}` runs a property, whose backward is not checked"
    if isinstance(value, (ast.Name, ast.Attribute, ast.Constant, ast.Compare)):
        return None  # a Compare gives bools, through which no gradient flows
    if isinstance(value, ast.Subscript) and is_slice_index(value.slice):
        return _expression_problem(value.value, ctx)
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, (ast.USub, ast.UAdd)):
        return _expression_problem(value.operand, ctx)
    if isinstance(value, (ast.Tuple, ast.List)):  # `dim=(0, 1)`: its elements' backward
        return next(filter(None, (_expression_problem(e, ctx) for e in value.elts)), None)
    if isinstance(value, ast.BinOp):
        return _binary_problem(value, ctx)
    if isinstance(value, ast.Call):
        return _call_problem(value, ctx)
    return _culprit(value)


def _binary_problem(value: ast.BinOp, ctx: FunctionContext) -> Optional[str]:
    if isinstance(value.op, (ast.Add, ast.Sub)):
        return _expression_problem(value.left, ctx) or _expression_problem(value.right, ctx)
    if isinstance(value.op, ast.Mult) and _finite_number(value.left):
        return _expression_problem(value.right, ctx)
    if isinstance(value.op, (ast.Mult, ast.Div)) and _finite_number(
        value.right, divisor=isinstance(value.op, ast.Div)
    ):
        return _expression_problem(value.left, ctx)
    return _culprit(value)


def _call_problem(call: ast.Call, ctx: FunctionContext) -> Optional[str]:
    func = call.func
    if not isinstance(func, ast.Attribute):
        return _culprit(call)
    receiver = ctx.symbols.qualified_name(func.value)
    is_function = receiver is not None and receiver.split(".")[0] == "torch"
    if (is_function and receiver not in _TORCH_NAMESPACES) or receiver == "self":
        return _culprit(call)  # another torch namespace, or a submodule
    if func.attr in _BOOLEAN_OPERATIONS:
        return None
    if func.attr not in ZERO_GRADIENT_OPERATIONS:
        return _culprit(call)
    if any(k.arg not in _KEYWORDS for k in call.keywords):
        return _culprit(call)
    operands = _positional_operands(call, ctx) + [k.value for k in call.keywords]
    for operand in operands:
        problem = _expression_problem(operand, ctx)
        if problem:
            return problem
    if func.attr in _SAVING_OPERATIONS:
        for operand in operands:
            kind = ctx.values.kind(operand)
            if kind in (Kind.STATIC, Kind.DATA):
                continue
            if hands_on_caller_tensor(operand, call, ctx):
                return (
                    f"`{ast.unparse(call)}` keeps `{ast.unparse(operand)}`, a tensor the caller "
                    "can hold, for backward, even on the path where the original did not run it"
                )
            name = operand.id if isinstance(operand, ast.Name) else None
            line = updated_in_place(name, ctx) if name else None
            if line is not None:
                return (
                    f"`{ast.unparse(call)}` keeps `{name}` for backward, even on the path "
                    f"where the original did not run it, and line {line} updates it in place"
                )
    return None


def _culprit(value: ast.expr) -> str:
    return (
        f"the backward of `{ast.unparse(value)}` may turn the zero gradient of the path not "
        "taken into NaN (0 * inf)"
    )


#: The largest float16 value, and its smallest positive one: a literal outside them becomes
#: inf or 0 in a float16 tensor's arithmetic (``x * 1e39`` is ``x * inf`` in float32 too).
_FLOAT16_MAX = 65504.0
_FLOAT16_TINY = 2.0**-24


def _finite_number(value: ast.expr, divisor: bool = False) -> bool:
    """A number literal that stays finite (and, as a ``divisor``, nonzero) in every floating
    dtype, so that a zero gradient times it, or divided by it, stays zero."""
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, (ast.USub, ast.UAdd)):
        value = value.operand
    number = value.value if isinstance(value, ast.Constant) else None
    if not isinstance(number, (int, float)) or isinstance(number, bool):
        return False
    if divisor:
        return _FLOAT16_TINY <= abs(number) <= _FLOAT16_MAX
    return abs(number) <= _FLOAT16_MAX


def _tensor_roots(value: ast.expr, setups: Setups, ctx: FunctionContext) -> Set[str]:
    """The names and ``self`` attributes through which ``value`` may reach tensors that require
    grad, with hoisted setup names replaced by what their values reach."""
    roots: Set[str] = set()
    pending = [value]
    expanded: Set[str] = set()
    while pending:
        for root in _roots(pending.pop(), ctx):
            if root in setups and root not in expanded:
                expanded.add(root)
                pending.append(setups[root])
            elif root not in setups:
                roots.add(root)
    return roots


def _roots(value: ast.expr, ctx: FunctionContext) -> Set[str]:
    """Dotted names through which gradients of ``value`` flow (callees, Python values and bool
    operands excluded: a comparison, a ``where`` condition or a mask passes no gradient)."""
    return {ctx.symbols.qualified_name(node) or "" for node in _root_nodes(value, ctx)}


def _root_nodes(value: ast.expr, ctx: FunctionContext) -> List[ast.expr]:
    """The names and attribute chains of ``value`` that ``_roots`` names."""
    if ctx.values.kind(value) in (Kind.STATIC, Kind.DATA) or isinstance(value, ast.Compare):
        return []
    if isinstance(value, (ast.Name, ast.Attribute)):
        dotted = ctx.symbols.qualified_name(value)
        if dotted is not None:
            return [] if dotted.split(".")[0] == "torch" else [value]
    if isinstance(value, ast.Call):
        operands = _differentiable_operands(value, ctx)
    else:
        operands = [child for child in ast.iter_child_nodes(value) if isinstance(child, ast.expr)]
    return [node for operand in operands for node in _root_nodes(operand, ctx)]


def gradient_inputs(
    values: Iterable[ast.expr],
    setups: Sequence[Setups],
    bound: Callable[[str], bool],
    ctx: FunctionContext,
) -> Tuple[str, ...]:
    """What ``values`` (a selection's sides) compute with that may require grad, as written
    (``h``, ``self.w``), hoisted setups followed to theirs: the kept ``if`` passes them to
    ``_graphmend_keeps_branch``, which keeps the branch while autograd records through one of
    them. Nothing (the branch kept whenever grad mode is on) where one cannot be read before
    the ``if`` on every call: a local not ``bound`` there on every path, a name that a
    comprehension or a ``lambda`` binds; or where a value makes a tensor that requires grad.
    An ``nn`` layer's tensor is given as its layer (``self.proj`` for ``self.proj.weight``):
    the helper looks at its parameters, since reading the tensor may run a parametrization that
    another module registered (``spectral_norm``, which updates its state on every read)."""
    hoisted = {name: value for side in setups for name, value in side.items()}
    pending, seen, found = list(values), set(), []
    while pending:
        value = pending.pop(0)
        for node in walk(value):
            binds = isinstance(node, (ast.comprehension, ast.Lambda))
            made = isinstance(node, ast.keyword) and node.arg == "requires_grad"
            if binds or made or getattr(node, "attr", "") == "requires_grad_":
                return ()
        for node in _root_nodes(value, ctx):
            if isinstance(node, ast.Attribute) and layer_tensor(node, ctx.symbols):
                node = node.value  # `self.proj` for `self.proj.weight`: read without code
            text = ast.unparse(node)
            if text in hoisted:  # a setup the sides share is followed once
                if text not in seen:
                    pending.append(hoisted[text])
            elif isinstance(node, ast.Name) and node.id in ctx.local_names and not bound(node.id):
                return ()
            elif text not in found:
                found.append(text)
            seen.add(text)
    return tuple(found)


def _differentiable_operands(call: ast.Call, ctx: FunctionContext) -> List[ast.expr]:
    """The operands of ``call`` that gradients flow into (the receiver of a method first): not
    the condition of ``where``, nor the mask of ``masked_fill``, nor anything of an operation
    that returns bools."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr in _BOOLEAN_OPERATIONS:
        return []
    operands = _positional_operands(call, ctx)
    method = len(operands) > len(call.args)  # the receiver comes first
    # torch.where(condition, x, y) / x.where(condition, y); x.masked_fill(mask, value)
    bool_position = {"where": 1 if method else 0, "masked_fill": 1}.get(func.attr)
    if bool_position is not None and len(operands) > bool_position:
        del operands[bool_position]
    return operands + [k.value for k in call.keywords if k.arg not in ("condition", "mask")]


def _positional_operands(call: ast.Call, ctx: FunctionContext) -> List[ast.expr]:
    """The receiver of a tensor method (``x`` of ``x.clamp(...)``), then the positional
    arguments; a function of ``torch`` has no receiver operand."""
    func = call.func
    if isinstance(func, ast.Attribute):
        if ctx.symbols.qualified_name(func.value) not in _TORCH_NAMESPACES:
            return [func.value, *call.args]
    return list(call.args)
