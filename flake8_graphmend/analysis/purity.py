"""Whether an expression may be evaluated on a path where the original code did not evaluate it.

Predication ([Where]) computes both branches and lowering ``a or b`` to ``torch.logical_or``
computes both operands. That is only sound for expressions without side effects that cannot
raise where the original would not have run them. This module says which ones qualify, and
names the culprit when one does not.
"""

from __future__ import annotations

import ast
import math
import operator
from typing import AbstractSet, Callable, Dict, FrozenSet, List, Optional, Set, Tuple

from .dtypes import TORCH_NAMESPACES, Dtypes
from .index import names_bound_by, node_memo, scope_names, walk
from .inplace import updates_first_argument
from .layers import computed_on_read, holds_tensor
from .symbols import FunctionNode, ModuleSymbols, is_self, is_staticmethod, taken_from_self
from .values import Kind, ValueAnalysis

#: Operations that have no effects and whose only failures come from shapes, dtypes or devices,
#: never from the values (but for the arguments of ``_VALUED_ARGUMENTS``, weighed apart): what
#: may run on a path where the original did not run it. A
#: positive list: an operation that is not here is not speculated. Not here on purpose: ops
#: that take sizes or indices (view, reshape, expand, narrow, split, gather, index_select,
#: embedding, indexing), that fail on values (linalg decompositions and solvers, integer
#: ``//`` and ``%``, ``div(rounding_mode=...)``), random ones, data-dependent shapes, and
#: ``max``/``min``/``amax``/``amin``/``argmax``/``argmin``, which raise on an empty tensor (how
#: many elements a tensor has is data: detections, masked rows), ``std``/``var``, which warn
#: when there are no more elements than the correction (a batch of one), and ``torch.tensor``
#: of anything but number literals (of a tensor it warns; of a list it fails on ragged rows),
#: and ``hardtanh``, which raises for an unsigned tensor where a limit is negative (its
#: default).
SAFE_OPERATIONS = frozenset({
    # elementwise arithmetic, comparisons and logic
    "abs", "absolute", "neg", "negative", "add", "sub", "subtract", "mul", "multiply", "div",
    "divide", "true_divide", "pow", "float_power", "square", "reciprocal", "sqrt", "rsqrt", "exp",
    "exp2", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "asin", "acos",
    "atan", "atan2", "sinh", "cosh", "tanh", "sigmoid", "erf", "erfc", "sign", "sgn",
    "signbit", "floor", "ceil", "round", "trunc", "frac", "clamp", "clamp_min", "clamp_max",
    "clip", "where", "masked_fill", "lerp", "maximum", "minimum", "fmax", "fmin", "nan_to_num",
    "eq", "ne", "lt", "le", "gt", "ge", "greater", "less", "isinf", "isnan", "isfinite",
    "isposinf", "isneginf", "logical_and", "logical_or", "logical_not", "logical_xor",
    # activations
    "relu", "gelu", "silu", "mish", "softplus", "elu", "leaky_relu", "relu6",
    "hardsigmoid", "hardswish", "softmax", "log_softmax",
    # reductions
    "sum", "mean", "nansum", "nanmean", "prod", "any", "all",
    "cumsum", "cumprod", "logsumexp", "norm",
    # products, layout and conversions
    "matmul", "mm", "bmm", "linear", "transpose", "permute", "t", "unsqueeze", "squeeze",
    "flatten", "contiguous", "clone", "detach", "to", "type_as", "float", "half", "double",
    "bfloat16", "bool", "long", "int", "short", "size", "dim", "numel",
    # new tensors from static arguments
    "zeros_like", "ones_like", "full_like", "zeros", "ones", "full", "arange", "linspace",
    "finfo", "iinfo",
})
#: Factories of ``SAFE_OPERATIONS`` whose arguments set the size: safe only with sizes that
#: cannot be negative (``torch.arange(n - 1)`` fails for ``n < 1``, tensor or int).
_FACTORIES = frozenset({"zeros", "ones", "full", "arange", "linspace"})
_SIZE_KEYWORDS = frozenset({"size", "start", "end", "step", "steps"})
#: Whole-tensor extrema: left out of ``SAFE_OPERATIONS``, they raise on an empty tensor only.
_EXTREMA = frozenset({"max", "min", "amax", "amin"})
#: Reductions left out of ``SAFE_OPERATIONS`` because they raise on an empty tensor.
_EMPTY_RAISING_REDUCTIONS = _EXTREMA | {"argmax", "argmin"}
#: Operations that warn when called without a ``dim`` (``softmax`` and ``log_softmax`` are
#: of ``SAFE_OPERATIONS``).
_NEEDS_DIM = frozenset({"softmax", "log_softmax", "softmin"})
#: Operations that may return their input itself or a view of it, not a new tensor.
ALIASING_OPERATIONS = frozenset({
    "transpose", "permute", "t", "unsqueeze", "squeeze", "flatten", "contiguous", "detach", "to",
    "type_as", "float", "half", "double", "bfloat16", "bool", "long", "int", "short", "view",
    "view_as", "reshape", "reshape_as", "expand", "expand_as", "narrow", "select", "unflatten",
    "as_strided", "movedim", "swapaxes", "diagonal", "chunk", "split", "unbind", "tensor_split",
    "unfold",
})


#: Tensor operations (functions of ``torch`` and ``torch.nn.functional``, and tensor methods)
#: that always return a new tensor, never their input (checked on torch 2.13; ``contiguous``,
#: ``to``, ``float``, ``F.dropout`` in eval mode and ``as_tensor`` may return the input itself).
FRESH_OPERATIONS = frozenset({
    "abs", "add", "sub", "mul", "div", "matmul", "mm", "bmm", "baddbmm", "addmm",
    "exp", "log", "sqrt", "rsqrt", "pow", "clamp", "clamp_min", "clamp_max", "clip", "where",
    "masked_fill", "relu", "gelu", "silu", "sigmoid", "tanh", "softmax", "log_softmax",
    "layer_norm", "group_norm", "rms_norm", "linear", "conv1d", "conv2d", "conv3d", "embedding",
    "cat", "stack", "sum", "mean", "amax", "amin", "cumsum", "nan_to_num", "neg", "reciprocal",
    "square", "tril", "triu", "zeros_like", "ones_like", "full_like", "clone", "maximum",
    "minimum", "isnan", "isinf", "isfinite", "sign", "floor", "ceil", "round", "norm", "erf",
    "cos", "sin", "roll", "flip", "repeat", "tile", "logical_not", "logical_and", "logical_or",
    "eq", "ne", "lt", "le", "gt", "ge", "pad", "normalize", "zeros", "ones", "full", "arange",
    "new_zeros", "new_ones", "new_full", "new_empty", "empty_like", "scaled_dot_product_attention",
    "max", "min", "prod", "std", "var", "argmax", "argmin", "any", "all", "logsumexp",
    "count_nonzero",
    # gathers and scatters out of place, and other elementwise operations
    "index_add", "index_copy", "index_fill", "index_put", "index_select", "index_reduce",
    "scatter", "scatter_add", "scatter_reduce", "gather", "take", "take_along_dim",
    "masked_scatter", "masked_select", "bincount", "one_hot", "outer", "addcmul", "addcdiv",
    "lerp", "atan2", "fmod", "remainder", "log1p", "expm1", "log2", "log10", "softplus",
    "leaky_relu", "elu", "cumprod", "diff",
    # losses (any reduction)
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "cosine_similarity",
})


def fresh_torch_call(call: ast.Call, qualified: str) -> bool:
    """Whether ``call`` of the torch function ``qualified`` returns a new tensor: one of
    ``FRESH_OPERATIONS``, without ``out=`` or ``inplace`` (``F.relu(x, True)``)."""
    name = qualified.rsplit(".", 1)[-1]
    in_place = updates_first_argument(call) or any(k.arg == "out" for k in call.keywords)
    return name in FRESH_OPERATIONS and not in_place


def is_slice_index(index: ast.expr) -> bool:
    """Whether a subscript's index holds only slices, ``None`` and ``...`` (no values)."""
    elements = index.elts if isinstance(index, ast.Tuple) else [index]
    return all(
        isinstance(e, ast.Slice) or (isinstance(e, ast.Constant) and e.value in (None, Ellipsis))
        for e in elements
    )


def impurity(
    node: ast.expr,
    values: ValueAnalysis,
    symbols: ModuleSymbols,
    nonempty: AbstractSet[str] = frozenset(),
    static_indexing: bool = True,
    again: bool = False,
    dtypes: Optional[Dtypes] = None,
) -> Optional[str]:
    """None when ``node`` is safe to evaluate unconditionally, else a short reason.

    ``nonempty``: local names (or operations of them, ``extremum_key``) whose extremum
    (``extremum_of``) code that always runs before ``node`` has already taken. The extrema
    fail only on an empty tensor, and all for the same
    elements and dtypes, so another extremum of the same tensor cannot fail there: in
    ``x.min() < lo or x.max() > hi``, ``x.max()`` may be computed on every call.
    ``static_indexing``: whether indexing a value known while tracing (``x.shape[1]``) counts
    as safe; it fails for some shapes only, and speculated code reads the same shapes on both
    paths, but a message built on every call reads them where the original never did.
    ``again``: ``node`` is computed a second time, on the values the first computation
    succeeded on, so what fails only on some values (indexing, an extremum of an empty tensor)
    cannot fail; effects and warnings still count. ``dtypes``: what is known of the dtypes
    of the tensors ``node`` computes with (by default, from how the function binds them)."""
    for sub in walk(node):
        if isinstance(sub, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)):
            return f"`{ast.unparse(sub)}` is not a plain expression"
        if isinstance(sub, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return f"the comprehension `{ast.unparse(sub)}` is not proven pure"
        reason = None if again else _failure(sub, values, static_indexing)
        if reason:
            return reason
        if isinstance(sub, (ast.Constant, ast.Call, ast.Name)):
            module = _module_value(sub, values, symbols)  # `BIG = 2 ** 70` of the module
            number = _literal_int(module[0]) if module else _literal_number(sub, symbols)
            if type(number) is int and not -(2**63) <= number < 2**63:
                return f"`{ast.unparse(sub)}` does not fit int64: an operation with it fails"
        if isinstance(sub, ast.Attribute) and symbols.may_run_code(sub):
            return (
                f"`{ast.unparse(sub)}` may be a property, which runs code (or a descriptor, or "
                "`__getattr__`)"
            )
        if not again and isinstance(sub, ast.Attribute) and symbols.may_be_unset(sub):
            return (
                f"`{ast.unparse(sub)}` may not be set (the file tests for it, deletes it, or "
                "sets it only on some paths or outside `__init__`), and reading it then fails"
            )
        if isinstance(sub, ast.Attribute) and sub.attr == "T" and isinstance(sub.ctx, ast.Load):
            receiver = sub.value  # `self.T` is the module's own attribute (a temperature, say)
            module_attribute = isinstance(receiver, ast.Name) and receiver.id == "self"
            if not module_attribute and values.kind(receiver) is not Kind.STATIC:
                return f"`{ast.unparse(sub)}` warns on a tensor that is not 2-D"
        if isinstance(sub, ast.Call) and extremum_of(sub, symbols) not in nonempty:
            reason = _call_impurity(sub, values, symbols, again, nonempty)
            if reason:
                return reason
    if again:
        return None
    judged = dtypes or Dtypes(values, symbols, {})
    return next(filter(None, (judged.failure(sub) for sub in walk(node))), None)


def _failure(sub: ast.AST, values: ValueAnalysis, static_indexing: bool) -> Optional[str]:
    """How an indexing, a formatting or an integer division may fail on some values."""
    if isinstance(sub, ast.Subscript) and not is_slice_index(sub.slice):
        if not static_indexing or values.kind(sub.value) is not Kind.STATIC:
            return f"the indexing `{ast.unparse(sub)}` could fail on the branch that did not run"
    if isinstance(sub, ast.FormattedValue) and sub.format_spec is not None:
        if not isinstance(sub.value, ast.Constant):
            return (
                f"formatting `{ast.unparse(sub.value)}` with a format spec fails for some "
                "values (`None`)"
            )
    if isinstance(sub, ast.BinOp) and isinstance(sub.op, (ast.FloorDiv, ast.Mod)):
        if values.kind(sub) is not Kind.STATIC:
            return f"`{ast.unparse(sub)}` fails on integer zeros, which the other path may hold"
    if isinstance(sub, ast.BinOp):
        reason = _arithmetic_failure(sub, values)
        if reason:
            return reason
    truths = (  # what Python takes the truth of: `bool()` of a tensor of several elements fails
        sub.values[:-1] if isinstance(sub, ast.BoolOp)
        else [sub.test] if isinstance(sub, ast.IfExp)
        else [sub.operand] if isinstance(sub, ast.UnaryOp) and isinstance(sub.op, ast.Not)
        else []
    )
    if any(values.kind(truth) is not Kind.STATIC for truth in truths):
        return (
            f"`{ast.unparse(sub)}` takes the truth of a value that may be a tensor, which fails "
            "for several elements"
        )
    return None


def _arithmetic_failure(node: ast.BinOp, values: ValueAnalysis) -> Optional[str]:
    """Why ``node`` may raise for some values of its operands. Python numbers raise where a
    tensor would give inf or NaN: ``/``, ``//`` and ``%`` of a Python value by one that may be
    zero (anything but a nonzero number literal or a tensor), ``**`` of a number by a negative
    exponent (ZeroDivisionError at zero) or by one that is not a literal (OverflowError: ``10
    ** k``), shifts by what may be a negative count; an integer tensor cannot be raised to a
    negative int. What is divided may be a Python number as ``_may_be_number`` says. Such a
    value is the same on both paths, but the original computes it on one."""
    left, right = values.kind(node.left), values.kind(node.right)
    tensors = (Kind.TENSOR, Kind.DATA)
    divisor = _number_literal_value(node.right)
    if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)):
        if not _may_be_number(node.left, left, values) or right in tensors or divisor not in (
            None, 0
        ):
            return None
        return (
            f"`{ast.unparse(node)}` raises ZeroDivisionError where `{ast.unparse(node.right)}` "
            "is a Python zero, on the path that did not run it too"
        )
    if isinstance(node.op, ast.Pow):
        base, exponent = _number_literal_value(node.left), divisor
        if base is not None and exponent is not None:
            try:
                power = base ** exponent
            except (ArithmeticError, ValueError):
                pass
            else:
                if type(power) is not int or -(2**63) <= power < 2**63:
                    return None
                return f"`{ast.unparse(node)}` does not fit int64: an operation with it fails"
        elif isinstance(exponent, (int, float)) and (
            exponent >= 0 or left in tensors and isinstance(exponent, float)
        ):
            if left is Kind.STATIC or _fits_every_dtype("pow", exponent):
                return None  # `h ** 2`, `d ** 0.5`, `h ** -0.5` of a tensor
            return _unfit(node, node.right)
        elif right in tensors:
            return None  # `2 ** t`: a tensor exponent gives 0 where an int cannot be raised
        return (
            f"`{ast.unparse(node)}` may raise for some values: ZeroDivisionError for a zero "
            "base and a negative exponent, OverflowError, a negative int exponent of an integer "
            "tensor; on the path that did not run it too"
        )
    if isinstance(node.op, (ast.LShift, ast.RShift)) and left not in tensors:
        if type(divisor) is int and divisor >= 0:
            return None
        return f"`{ast.unparse(node)}` raises ValueError for a negative shift count"
    return None


def _may_be_number(node: ast.expr, kind: Kind, values: ValueAnalysis) -> bool:
    """Whether ``node`` (of ``kind``) may be a Python number: a value known while tracing, an
    attribute or a call of unknown kind (``self.alpha``), a name of unknown kind (a parameter,
    ``n=0`` or ``step``) but one the function uses as a tensor (``_used_as_tensors``)."""
    if kind is not Kind.UNKNOWN:
        return kind is Kind.STATIC
    if not isinstance(node, ast.Name):
        return True
    return node.id not in _used_as_tensors(values.function)


#: What Python numbers have, of the attributes code may read.
_NUMBER_ATTRIBUTES = frozenset({
    "real", "imag", "conjugate", "is_integer", "as_integer_ratio", "hex", "bit_length",
    "numerator", "denominator", "bit_count", "to_bytes",
})


@node_memo
def _used_as_tensors(function: ast.AST) -> FrozenSet[str]:
    """The names ``function`` uses as no Python number can be used: an attribute a number
    does not have read of them (``x.sum()``, ``x.shape``), or an item taken (``x[0]``), of
    them or of what comparing or combining them with number literals gives (``(x > 0).all()``:
    a number compared is a bool)."""
    found: Set[str] = set()
    for sub in walk(function):
        if not isinstance(sub, (ast.Attribute, ast.Subscript)) or (
            isinstance(sub, ast.Attribute) and sub.attr in _NUMBER_ATTRIBUTES
        ):
            continue
        value = sub.value
        operands = (
            [value.left, *value.comparators] if isinstance(value, ast.Compare)
            else [value.left, value.right] if isinstance(value, ast.BinOp)
            else [value]
        )
        names = [o for o in operands if isinstance(o, ast.Name)]
        if len(names) == 1 and all(o is names[0] or number_literal(o) for o in operands):
            found.add(names[0].id)
    return frozenset(found)


def _number_literal_value(node: ast.expr) -> Optional[complex]:
    """The value of a number literal (``2``, ``-1.5``), or None."""
    if not number_literal(node):
        return None
    value = ast.literal_eval(node)
    return None if isinstance(value, bool) else value


def extremum_of(call: ast.Call, symbols: ModuleSymbols) -> Optional[str]:
    """What a whole-tensor extremum is taken of (``extremum_key``): ``x`` of ``x.max()``,
    ``x.amin()``, ``torch.min(x)``, ``x.abs()`` of ``x.abs().max()``; None for anything else
    (a ``dim``, ``torch.max(a, b)``)."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in _EXTREMA or call.keywords:
        return None
    if symbols.qualified_name(func.value) in TORCH_NAMESPACES:
        operands = call.args
    else:
        operands = [func.value] if not call.args else []
    return extremum_key(operands[0]) if len(operands) == 1 else None


def extremum_key(operand: ast.expr) -> Optional[str]:
    """How an extremum's operand is named among those taken: a local name (``x``), or an
    operation of ``SAFE_OPERATIONS`` without arguments of one (``x.abs()``), which computes
    the same values wherever the name holds the same tensor."""
    if isinstance(operand, ast.Name):
        return operand.id
    func = operand.func if isinstance(operand, ast.Call) else None
    if (
        isinstance(operand, ast.Call)
        and isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.attr in SAFE_OPERATIONS
        and not operand.args
        and not operand.keywords
    ):
        return ast.unparse(operand)
    return None


def extrema_outside(taken: AbstractSet[str], names: AbstractSet[str]) -> Set[str]:
    """The extrema of ``taken`` (``extremum_key``) that do not read one of ``names`` (which
    code between them and the code judged binds again)."""
    return {key for key in taken if key.partition(".")[0] not in names}


def extrema_taken(node: ast.expr, symbols: ModuleSymbols) -> Set[str]:
    """The names whose extremum evaluating ``node`` always takes (``extremum_of``): none where a
    part of ``node`` may be skipped (``and``/``or``, ``if``-expressions, chained comparisons,
    comprehensions, lambdas), or where a name is rebound (``:=``)."""
    skipping = (ast.BoolOp, ast.IfExp, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                ast.GeneratorExp, ast.NamedExpr)
    parts = list(walk(node))
    if any(isinstance(p, skipping) or (isinstance(p, ast.Compare) and len(p.ops) > 1)
           for p in parts):
        return set()
    names = {extremum_of(p, symbols) for p in parts if isinstance(p, ast.Call)}
    return {name for name in names if name is not None}


def safe_operation(call: ast.Call, symbols: ModuleSymbols) -> bool:
    """Whether ``call`` is one of ``SAFE_OPERATIONS``, a torch function or a method by that name,
    or ``torch.tensor`` of a number literal."""
    func = call.func
    if symbols.qualified_name(func) == "torch.tensor":
        return _literal_tensor(call, symbols)
    if not isinstance(func, ast.Attribute) or func.attr not in SAFE_OPERATIONS:
        return False
    if any(k.arg in ("out", "rounding_mode", "inplace") for k in call.keywords):
        return False
    if updates_first_argument(call):
        return False  # `F.relu(x, True)`
    receiver = symbols.qualified_name(func.value)
    if func.attr == "where" and len(call.args) + len(call.keywords) < (
        3 if receiver in TORCH_NAMESPACES else 2
    ):
        return False  # `torch.where(c)`: the indices where it holds, a size that is data
    if implicit_dim(call, symbols):
        return False
    if receiver is not None and receiver.split(".")[0] == "torch":
        return receiver in TORCH_NAMESPACES
    if receiver is not None and receiver.split(".")[0] in _PURE_MODULES:
        # `math.sqrt(d)`, `np.log(p)`: on Python numbers, which raise or warn for some values
        return not call.keywords and all(number_literal(a) for a in call.args)
    return receiver != "self"  # `self.norm(x)` calls a submodule, not Tensor.norm


#: Arguments of ``SAFE_OPERATIONS`` that may fail on some values: operation -> (its keyword,
#: its position in a method call, in a torch function call) for each (99: keyword only). A
#: fill value, a bound or a factor is converted to the tensor's dtype, which fails where it
#: does not fit (`inf` into int64, `1e5` into float16, measured on torch 2.13: `clamp`,
#: `masked_fill`, `full_like`, `add(alpha=)`, the numbers `torch.where` selects, the ends of
#: `linspace`, an exponent: `h ** 300` of int8); an integer tensor cannot be raised
#: to a negative int; a norm's order `"nuc"` takes an SVD, which fails to converge on NaN, and
#: a negative or infinite one has no value for an empty tensor, where it raises.
_VALUED_ARGUMENTS: Dict[str, Tuple[Tuple[str, int, int], ...]] = {
    "masked_fill": (("value", 1, 2),), "full_like": (("fill_value", 1, 1),),
    "full": (("fill_value", 1, 1),), "norm": (("p", 0, 1),),
    **{bounded: (("min", 0, 1), ("max", 1, 2)) for bounded in ("clamp", "clip")},
    "clamp_min": (("min", 0, 1),), "clamp_max": (("max", 0, 1),),
    **{scaled: (("alpha", 99, 99),) for scaled in ("add", "sub", "subtract")},
    "pow": (("exponent", 0, 1),),
    "where": (("input", 99, 1), ("other", 1, 2)), "linspace": (("start", 99, 0), ("end", 99, 1)),
}


def _held_object(node: ast.expr, values: ValueAnalysis, symbols: ModuleSymbols) -> bool:
    """Whether ``node``, the receiver of a call named like a tensor method, may be another
    object: what ``self`` holds (``self.head``, ``self.layers[i]``, not a tensor of an ``nn``
    layer: ``self.proj.weight``), a local taken from it (``_held_locals``), or what the module
    defines (a class ``F``, ``OPS = Ops()``). A module's child named like a tensor method
    (``self.head.relu``) is a module, not ``Tensor.relu``. (A module passed as a parameter is
    not seen.)"""
    if values.kind(node) in (Kind.TENSOR, Kind.DATA) or holds_tensor(node, symbols):
        return False
    root = _held_root(node)
    function = values.function
    if is_self(root) or _first_parameter(root, function):
        return True
    if not isinstance(root, ast.Name):
        return False
    if root.id in held_locals(function) or _made_object(root.id, values, symbols):
        return True
    local = values.is_parameter(root.id) or bool(values.assignments_of(root.id))
    defined = set(symbols.functions) | set(symbols.classes) | set(symbols.assignments)
    imported = symbols.imports.get(root.id, "").split(".")[0]
    return not local and (root.id in defined or imported not in ("", *_PURE_MODULES))


#: Modules whose functions named like tensor operations compute without effects
#: (``math.sqrt``, ``np.log``); another import's (``wandb.log``) may have some.
_PURE_MODULES = ("torch", "math", "cmath", "numpy", "operator")


def _made_object(name: str, values: ValueAnalysis, symbols: ModuleSymbols) -> bool:
    """Whether the local ``name`` may hold an object of a class of the file: one built here
    (``ema = Ema()``) or what a method of the file returns that ``self`` holds (``head =
    self.get_head()`` of ``return self.heads["a"]``)."""
    for value in values.assignments_of(name):
        if not isinstance(value, ast.Call):
            continue
        func = value.func
        if isinstance(func, ast.Name) and func.id in symbols.classes:
            return True
        if isinstance(func, ast.Attribute) and is_self(func.value):
            methods = [i.methods[func.attr] for i in symbols.classes.values()
                       if func.attr in i.methods]
            if any(
                isinstance(r, ast.Return) and r.value is not None
                and is_self(_held_root(r.value)) and r.value is not _held_root(r.value)
                for method in methods
                for r in walk(method)
            ):
                return True
    return False


def _first_parameter(node: ast.expr, function: FunctionNode) -> bool:
    """The first parameter of a method whose owner spells it otherwise (``this.linear(x)``)."""
    arguments = [*function.args.posonlyargs, *function.args.args]
    return (
        isinstance(node, ast.Name) and bool(arguments) and not is_staticmethod(function)
        and node.id == arguments[0].arg and node.id in ("this", "module", "me", "obj")
    )


def _held_root(node: ast.expr) -> ast.expr:
    """What ``node`` is taken from through attributes and items (``self`` of ``self.a[0]``)."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node


@node_memo
def held_locals(function: FunctionNode) -> FrozenSet[str]:
    """The locals ``function`` binds to objects ``self`` holds: loop targets over them (``for
    block in self.blocks``, ``enumerate(self.layers)``), ``head = self.heads[task]``, ``head,
    tail = self.head, self.tail``, ``p = self.a if c else self.b``, ``getattr(self.heads,
    task)``, and, in turn, what is taken from those (``first = blocks[0]``); not what calling
    them returns (``h = self.fc(h)``)."""
    names: Set[str] = set()

    def held(value: ast.expr) -> bool:
        if isinstance(value, (ast.Tuple, ast.List)):
            return any(held(element) for element in value.elts)
        if isinstance(value, ast.IfExp):
            return held(value.body) or held(value.orelse)
        if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "getattr":
            return bool(value.args) and (is_self(value.args[0]) or held(value.args[0]))
        root = _held_root(value)
        taken = root is not value or isinstance(value, ast.Name)
        return taken and (is_self(root) and root is not value or getattr(root, "id", "") in names)

    while True:
        before = len(names)
        for node in walk(function):
            if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                if taken_from_self(node.iter) or held(node.iter):
                    names |= {n.id for n in walk(node.target) if isinstance(n, ast.Name)}
            elif isinstance(node, ast.Assign) and held(node.value):
                names |= {n.id for t in node.targets for n in walk(t) if isinstance(n, ast.Name)}
        if len(names) == before:
            return frozenset(names)


def _value_failure(call: ast.Call, values: ValueAnalysis, symbols: ModuleSymbols) -> Optional[str]:
    """Why ``call``, an operation of ``SAFE_OPERATIONS``, may fail on some values of an
    argument (``_VALUED_ARGUMENTS``)."""
    func = call.func
    assert isinstance(func, ast.Attribute)
    in_torch = symbols.qualified_name(func.value) in TORCH_NAMESPACES
    receiver = (call.args[0] if call.args else None) if in_torch else func.value
    for keyword, in_method, in_function in _VALUED_ARGUMENTS.get(func.attr, ()):
        position = in_function if in_torch else in_method
        given = [k.value for k in call.keywords if k.arg == keyword]
        value = given[0] if given else call.args[position] if len(call.args) > position else None
        if value is not None:
            reason = _argument_failure(call, func.attr, value, receiver, values, symbols)
            if reason:
                return reason
    return None


def _fits(
    operation: str,
    value: ast.expr,
    tensor: Optional[ast.expr],
    values: ValueAnalysis,
    symbols: ModuleSymbols,
    depth: int = 0,
) -> bool:
    """Whether ``value``, given to ``operation`` on ``tensor``, is a number that fits its dtype:
    a number literal that fits every dtype (``_fits_every_dtype``), a number of
    ``torch.finfo(tensor.dtype)`` (``tensor`` a plain name), its ``max`` less a number literal
    up to 1000 (``min`` plus one), a limit divided by a literal at least 1 or multiplied by
    one in [0, 1], negated or not, or a local bound only to those (transformers' fp16 clamp:
    ``clamp_value = torch.finfo(hidden_states.dtype).max - 1000``)."""
    number = _literal_number(value, symbols)
    if number is not None:
        return _fits_every_dtype(operation, number)
    while isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub):
        value = value.operand
    if isinstance(value, ast.Name) and depth < 2 and not values.is_parameter(value.id):
        bound = values.assignments_of(value.id) or _module_value(value, values, symbols)
        return bool(bound) and all(
            _fits(operation, each, tensor, values, symbols, depth + 1) for each in bound
        )
    limits = {"max", "min", "eps", "tiny", "smallest_normal"}
    if isinstance(value, ast.BinOp):
        step = _number_literal_value(value.right)
        if not isinstance(step, (int, float)):
            return False
        inward = {  # a limit moved towards zero: within float16's range (65504) from it
            ast.Sub: ("max", 0 <= step <= 1000), ast.Add: ("min", 0 <= step <= 1000),
            ast.Div: ("max min", step >= 1), ast.Mult: ("max min", 0 <= step <= 1),
        }.get(type(value.op), ("", False))
        if not inward[1]:
            return False
        limits = set(inward[0].split())
        value = value.left
    if not (isinstance(value, ast.Attribute) and value.attr in limits):
        return False
    info = value.value
    return (
        isinstance(info, ast.Call)
        and symbols.qualified_name(info.func) == "torch.finfo"
        and len(info.args) == 1
        and not info.keywords
        and isinstance(info.args[0], ast.Attribute)
        and info.args[0].attr == "dtype"
        and isinstance(info.args[0].value, ast.Name)
        and isinstance(tensor, ast.Name)
        and info.args[0].value.id == tensor.id
    )


def _literal_int(node: ast.expr) -> Optional[int]:
    """The int a literal computes (``2 ** 70``, ``-(1 << 64)``), or None: ints and ``+``, ``-``,
    ``*``, ``**`` and ``<<`` of them, with exponents and shifts small enough to compute."""
    if isinstance(node, ast.Constant):
        return node.value if type(node.value) is int else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        operand = _literal_int(node.operand)
        return None if operand is None else -operand
    if not isinstance(node, ast.BinOp):
        return None
    left, right = _literal_int(node.left), _literal_int(node.right)
    if left is None or right is None:
        return None
    if isinstance(node.op, (ast.Pow, ast.LShift)) and not 0 <= right <= 4096:
        return None
    compute = _INT_OPERATIONS.get(type(node.op))
    return compute(left, right) if compute else None


_INT_OPERATIONS: Dict[type, Callable[[int, int], int]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
}


def _module_value(
    node: ast.expr, values: ValueAnalysis, symbols: ModuleSymbols
) -> List[ast.expr]:
    """The value of a constant of the module that ``node`` names, where the function does not
    bind the name (``BIG = 1e39`` at the top of the file); else none."""
    if not isinstance(node, ast.Name):
        return []
    bound = _module_constants(symbols.tree).get(node.id)
    if bound is None or node.id in scope_names(values.function):
        return []  # (the function's names are walked only for a name the module binds once)
    return [bound]


@node_memo
def _module_constants(tree: ast.Module) -> Dict[str, ast.expr]:
    """The names the module binds once, by a plain assignment of its own body, and nothing
    else binds (no other statement of the module, no ``global`` declaration in a function),
    each with its value. (Another module's ``mod.NAME = ...`` is not seen.)"""
    bindings: Dict[str, int] = {}
    for statement in tree.body:
        for node in ([statement] if isinstance(statement, _SCOPE_STATEMENTS) else walk(statement)):
            for name in names_bound_by(node):
                bindings[name] = bindings.get(name, 0) + 1
    declared = {name for node in walk(tree) if isinstance(node, ast.Global) for name in node.names}
    return {
        target.id: statement.value
        for statement in tree.body
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1
        for target in statement.targets
        if isinstance(target, ast.Name) and bindings.get(target.id) == 1
        and target.id not in declared
    }


_SCOPE_STATEMENTS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _argument_failure(
    call: ast.Call,
    operation: str,
    value: ast.expr,
    receiver: Optional[ast.expr],
    values: ValueAnalysis,
    symbols: ModuleSymbols,
) -> Optional[str]:
    """Why ``value``, given to ``operation`` (``_VALUED_ARGUMENTS``), may make it fail: a norm
    of an order other than ``"fro"`` or a finite number literal, not negative; an exponent
    that may be a negative int (an integer tensor cannot be raised to one); a fill value, a
    bound or a factor that is not known to fit the tensor's dtype (``_fits``: a Python number
    is converted to it, which fails where it does not fit: `inf` or `1000` into int8, `1e5`
    into float16)."""
    if operation == "norm":
        if _plain_order(value):
            return None
        return (
            f"`{ast.unparse(call)}` takes an order that fails on some values: `\"nuc\"` (an "
            "SVD) on NaN, a negative or infinite one on an empty tensor"
        )
    number = _literal_number(value, symbols)
    if operation == "pow":
        if _may_be_negative_int(value, number, values):
            return _negative_exponent(call, value)
        return None if number is None or _fits_every_dtype(operation, number) else _unfit(
            call, value
        )
    if operation == "where" and values.kind(value) is not Kind.STATIC and not (
        _module_value(value, values, symbols)
    ):
        return None  # a tensor selected, not a number converted (a caller's number: not seen)
    if _fits(operation, value, receiver, values, symbols):
        return None
    if number is not None:
        return (
            f"`{ast.unparse(call)}` takes `{ast.unparse(value)}`, which does not fit "
            "every dtype (integers, float16), and the path that did not run it may hold one"
        )
    if _literal_tensor(value, symbols):
        assert isinstance(value, ast.Call)
        literal = _literal_number(value.args[0], symbols)
        if literal is not None and _fits_every_dtype(operation, literal):
            return None
    return _unfit(call, value)


def _unfit(node: ast.expr, value: ast.expr) -> str:
    return (
        f"`{ast.unparse(node)}` takes `{ast.unparse(value)}`, which fails where its value "
        "does not fit the tensor's dtype (`inf` into integers, `1e5` into float16, `300` "
        "into int8)"
    )


#: Operations whose bounds promote an integer tensor to float where they are floats.
_BOUNDED = frozenset({"clamp", "clip", "clamp_min", "clamp_max"})
#: Those, and others that take a float on a tensor of any dtype where float16 holds it (an
#: integer tensor becomes a float one; `torch.where(m, x, 1e39)` fails for float32).
_FLOATS_FIT = _BOUNDED | {"where", "pow", "linspace"}


def _fits_every_dtype(operation: str, number: float) -> bool:
    """Whether ``operation`` (``_VALUED_ARGUMENTS``) takes the number literal ``number`` on a
    tensor of any dtype (measured on torch 2.13): a bound, a number selected, an end of
    ``linspace`` or an exponent that is an int in [-128, 127], or a float that float16 holds
    (an integer tensor clamped by a float becomes a float one); a factor that is an int in
    [-128, 127] (an integer tensor takes no float ``alpha``); a fill value in [-128, 127], or
    a bool."""
    if isinstance(number, bool):
        return operation not in _BOUNDED
    if isinstance(number, float) and operation in _FLOATS_FIT:
        return not math.isfinite(number) or abs(number) <= 65504
    if isinstance(number, float) and operation in ("add", "sub", "subtract"):
        return False
    return math.isfinite(number) and -128 <= number <= 127


def _may_be_negative_int(
    exponent: ast.expr, number: Optional[complex], values: ValueAnalysis
) -> bool:
    """Whether an exponent (``number``: its literal value) may be a negative Python int, to
    which an integer tensor cannot be raised (a tensor exponent gives 0 there, not an error)."""
    if number is not None:
        return type(number) is int and number < 0
    return values.kind(exponent) not in (Kind.TENSOR, Kind.DATA)


def _negative_exponent(power: ast.expr, exponent: ast.expr) -> str:
    return (
        f"`{ast.unparse(power)}` raises on an integer tensor where the exponent "
        f"`{ast.unparse(exponent)}` is a negative int, and the path that did not run it may hold "
        "one"
    )


def _literal_number(value: ast.expr, symbols: ModuleSymbols) -> Optional[float]:
    """The number a literal is (``-1e9``, ``float("-inf")``, ``-float("nan")``, ``True``), or
    None for another value."""
    sign = 1
    while isinstance(value, ast.UnaryOp) and isinstance(value.op, (ast.USub, ast.UAdd)):
        sign = -sign if isinstance(value.op, ast.USub) else sign
        value = value.operand
    if isinstance(value, ast.Constant) and isinstance(value.value, (int, float)):
        return value.value if isinstance(value.value, bool) else sign * value.value
    if isinstance(value, ast.Call) and _number_of_literal(value, symbols):
        assert isinstance(value.func, ast.Name) and isinstance(value.args[0], ast.Constant)
        return sign * {"float": float, "int": int}[value.func.id](value.args[0].value)
    return None


def implicit_dim(call: ast.Call, symbols: ModuleSymbols) -> bool:
    """``F.softmax(x)`` (``log_softmax``, ``softmin``; of torch, or a tensor's method) without
    ``dim``: torch warns on every call ("Implicit dimension choice ... deprecated")."""
    func = call.func
    qualified = symbols.qualified_name(func) or ""
    name = func.attr if isinstance(func, ast.Attribute) else qualified.rsplit(".", 1)[-1]
    if name not in _NEEDS_DIM:
        return False
    namespace = (
        symbols.qualified_name(func.value) if isinstance(func, ast.Attribute)
        else qualified.rpartition(".")[0]
    )
    dim_position = 1 if namespace in TORCH_NAMESPACES else 0  # F.softmax(x, dim) / x.softmax(dim)
    return len(call.args) <= dim_position and not any(k.arg == "dim" for k in call.keywords)


def _literal_tensor(value: ast.expr, symbols: ModuleSymbols) -> bool:
    """``torch.tensor`` of a number literal (``torch.tensor(-1e4)``), with a dtype or device
    at most: a value known while tracing, which fails for no data."""
    return (
        isinstance(value, ast.Call)
        and symbols.qualified_name(value.func) == "torch.tensor"
        and len(value.args) == 1
        and number_literal(value.args[0])
        and all(k.arg in ("dtype", "device") for k in value.keywords)
    )


def _plain_order(value: ast.expr) -> bool:
    """A norm's order that computes on every value: ``"fro"``, or a finite number literal that
    is not negative."""
    order = value.value if isinstance(value, ast.Constant) else None
    if isinstance(order, bool) or not isinstance(order, (int, float)):
        return order == "fro"
    return 0 <= order < math.inf


def number_literal(
    node: ast.expr, kinds: Tuple[type, ...] = (int, float, complex)
) -> bool:
    """``2``, ``-1.5``, ``True``: a literal number (of ``kinds``), maybe negated."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, kinds)


def _number_of_literal(call: ast.Call, symbols: ModuleSymbols) -> bool:
    """``float("-inf")``, ``float("nan")``, ``int(2.0)``: a builtin number made of one literal
    that it converts (known here by converting it), the same on every path."""
    func = call.func
    if not (
        isinstance(func, ast.Name)
        and func.id in ("float", "int")
        and func.id not in symbols.defined_here()
        and len(call.args) == 1
        and not call.keywords
        and isinstance(call.args[0], ast.Constant)
        and type(call.args[0].value) in (str, int, float)
    ):
        return False
    try:
        {"float": float, "int": int}[func.id](call.args[0].value)
    except (ValueError, OverflowError):
        return False
    return True


def _empty_raising_reduction(call: ast.Call, symbols: ModuleSymbols) -> bool:
    """``x.max()``, ``x.amin(dim=1)``, ``torch.argmax(x)``: not ``torch.max(a, b)``, which is
    elementwise."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in _EMPTY_RAISING_REDUCTIONS:
        return False
    return symbols.qualified_name(func.value) not in TORCH_NAMESPACES or len(call.args) < 2


def _reduced_name(call: ast.Call, symbols: ModuleSymbols) -> Optional[str]:
    """``x`` of a reduction ``x.amax(-1)`` or ``torch.amax(x, -1)`` (``extremum_key``)."""
    func = call.func
    assert isinstance(func, ast.Attribute)
    torch_function = symbols.qualified_name(func.value) in TORCH_NAMESPACES
    operand = (call.args[0] if call.args else None) if torch_function else func.value
    return extremum_key(operand) if operand is not None else None


def _sized_by_data(call: ast.Call) -> Optional[ast.expr]:
    """The argument of a factory of ``SAFE_OPERATIONS`` (``torch.arange(n)``, ``zeros(n, 2)``)
    that sets its size and may be negative; None when each such argument is a literal count or
    a read of a shape (``x.shape``, ``x.size(1)``), alone or in a tuple or list."""
    name = call.func.attr if isinstance(call.func, ast.Attribute) else ""
    if name not in _FACTORIES:
        return None
    positional = {"full": call.args[:1], "linspace": call.args[2:3]}.get(name, call.args)
    sizing = [*positional, *(k.value for k in call.keywords if k.arg in _SIZE_KEYWORDS)]
    if name == "arange" and len(sizing) > 1:  # `arange(start, end)` fails when end < start
        return sizing[0]
    return next((value for value in sizing if not _never_negative(value)), None)


def _never_negative(value: ast.expr) -> bool:
    if isinstance(value, (ast.Tuple, ast.List)):
        return all(_never_negative(element) for element in value.elts)
    if isinstance(value, ast.Constant):
        return type(value.value) is int and value.value >= 0
    if isinstance(value, ast.Subscript):
        value = value.value
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        return value.func.attr == "size" and len(value.args) <= 1 and not value.keywords
    return isinstance(value, ast.Attribute) and value.attr == "shape"


def _call_impurity(
    call: ast.Call,
    values: ValueAnalysis,
    symbols: ModuleSymbols,
    again: bool = False,
    nonempty: AbstractSet[str] = frozenset(),
) -> Optional[str]:
    func = call.func
    sized = None if again else _sized_by_data(call)
    if sized is not None:
        return (
            f"`{ast.unparse(call)}` takes its size from `{ast.unparse(sized)}`, which is not "
            "known to be a count: it fails for a negative value, which the path that did not "
            "run it may hold"
        )
    if safe_operation(call, symbols):
        if isinstance(func, ast.Attribute) and values.kind(func.value) is Kind.STATIC:
            if symbols.qualified_name(func.value) not in TORCH_NAMESPACES:
                return (
                    f"it calls `{ast.unparse(func)}()` on a Python object, "
                    "which would run on both paths"
                )
        given = computed_on_read(func.value, symbols) if isinstance(func, ast.Attribute) else None
        if given is not None:
            assert isinstance(func, ast.Attribute)
            return (
                f"`{ast.unparse(func.value)}` is read through code that the file gives modules "
                f"(line {given.lineno}: `{ast.unparse(given)}`): a parametrization computes a "
                "weight on every read, and may update its own state, which would happen on both "
                "paths"
            )
        if isinstance(func, ast.Attribute) and _held_object(func.value, values, symbols):
            return (
                f"`{ast.unparse(func.value)}` may not be a tensor: `{ast.unparse(func)}()` may "
                "call a module or a method of another object, which would run on both paths"
            )
        return None if again else _value_failure(call, values, symbols)
    if (
        isinstance(func, ast.Name)
        and func.id in ("min", "max", "abs", "len")
        and func.id not in symbols.defined_here()
    ):
        if all(values.kind(a) is Kind.STATIC for a in call.args):
            return None
    if type_call(call, values, symbols) or _number_of_literal(call, symbols):
        return None
    if _empty_raising_reduction(call, symbols):
        # it succeeded on these values the first time, or reduces (along a dim, say) a name
        # whose whole extremum was taken before: `h.amax(-1)` after `if h.max() > 50:`
        if again or _reduced_name(call, symbols) in nonempty:
            return None
        return (
            f"`{ast.unparse(call)}` raises on an empty tensor, which the path that did not "
            "run it may hold"
        )
    return (
        f"it calls `{ast.unparse(func)}()`, which is not known to be free of effects and errors "
        "on the path that did not run it"
    )


def type_call(call: ast.Call, values: ValueAnalysis, symbols: ModuleSymbols) -> bool:
    """``type(x)``: the builtin reads the object's type, runs none of its code, cannot fail."""
    func = call.func
    return (
        isinstance(func, ast.Name)
        and func.id == "type"
        and func.id not in symbols.defined_here()
        and not values.assignments_of("type")
        and not values.is_parameter("type")
        and len(call.args) == 1
        and not isinstance(call.args[0], ast.Starred)
        and not call.keywords
    )
