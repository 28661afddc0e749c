"""Whether an expression may be evaluated on a path where the original code did not evaluate it.

Predication ([Where]) computes both branches and lowering ``a or b`` to ``torch.logical_or``
computes both operands. That is only sound for expressions without side effects that cannot
raise where the original would not have run them. This module says which ones qualify, and
names the culprit when one does not.
"""

from __future__ import annotations

import ast
from typing import AbstractSet, List, Optional, Sequence, Set, Tuple

from .symbols import ModuleSymbols
from .values import Kind, ValueAnalysis

#: Operations that have no effects and whose only failures come from shapes, dtypes or devices,
#: never from the values: what may run on a path where the original did not run it. A
#: positive list: an operation that is not here is not speculated. Not here on purpose: ops
#: that take sizes or indices (view, reshape, expand, narrow, split, gather, index_select,
#: embedding, indexing), that fail on values (linalg decompositions and solvers, integer
#: ``//`` and ``%``, ``div(rounding_mode=...)``), random ones, data-dependent shapes, and
#: ``max``/``min``/``amax``/``amin``/``argmax``/``argmin``, which raise on an empty tensor (how
#: many elements a tensor has is data: detections, masked rows), ``std``/``var``, which warn
#: when there are no more elements than the correction (a batch of one), and ``torch.tensor``
#: of anything but number literals (of a tensor it warns; of a list it fails on ragged rows).
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
    "relu", "gelu", "silu", "mish", "softplus", "elu", "leaky_relu", "hardtanh", "relu6",
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
#: Whole-tensor extrema: left out of ``SAFE_OPERATIONS``, they raise on an empty tensor only.
_EXTREMA = frozenset({"max", "min", "amax", "amin"})
#: Reductions left out of ``SAFE_OPERATIONS`` because they raise on an empty tensor.
_EMPTY_RAISING_REDUCTIONS = _EXTREMA | {"argmax", "argmin"}
#: Operations of ``SAFE_OPERATIONS`` that warn when called without a ``dim``.
_NEEDS_DIM = frozenset({"softmax", "log_softmax"})
#: The modules whose functions ``SAFE_OPERATIONS`` names.
_TORCH_NAMESPACES = ("torch", "torch.nn.functional", "torch.special")
#: Operations that may return their input itself or a view of it, not a new tensor.
ALIASING_OPERATIONS = frozenset({
    "transpose", "permute", "t", "unsqueeze", "squeeze", "flatten", "contiguous", "detach", "to",
    "type_as", "float", "half", "double", "bfloat16", "bool", "long", "int", "short", "view",
    "view_as", "reshape", "reshape_as", "expand", "expand_as", "narrow", "select", "unflatten",
    "as_strided", "movedim", "swapaxes", "diagonal",
})


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
) -> Optional[str]:
    """None when ``node`` is safe to evaluate unconditionally, else a short reason.

    ``nonempty``: local names whose extremum (``extremum_of``) code that always runs before
    ``node`` has already taken. The extrema fail only on an empty tensor, and all for the same
    elements and dtypes, so another extremum of the same tensor cannot fail there: in
    ``x.min() < lo or x.max() > hi``, ``x.max()`` may be computed on every call.
    ``static_indexing``: whether indexing a value known while tracing (``x.shape[1]``) counts
    as safe; it fails for some shapes only, and speculated code reads the same shapes on both
    paths, but a message built on every call reads them where the original never did."""
    for sub in ast.walk(node):
        if isinstance(sub, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)):
            return f"`{ast.unparse(sub)}` is not a plain expression"
        if isinstance(sub, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return f"the comprehension `{ast.unparse(sub)}` is not proven pure"
        if isinstance(sub, ast.Subscript) and not is_slice_index(sub.slice):
            if not static_indexing or values.kind(sub.value) is not Kind.STATIC:
                return (
                    f"the indexing `{ast.unparse(sub)}` could fail on the branch that did not run"
                )
        if isinstance(sub, ast.FormattedValue) and sub.format_spec is not None:
            if not isinstance(sub.value, ast.Constant):
                return (
                    f"formatting `{ast.unparse(sub.value)}` with a format spec fails for some "
                    "values (`None`)"
                )
        if isinstance(sub, ast.Attribute) and symbols.may_run_code(sub):
            return f"`{ast.unparse(sub)}` may be a property, which runs code"
        if isinstance(sub, ast.Attribute) and sub.attr == "T" and isinstance(sub.ctx, ast.Load):
            receiver = sub.value  # `self.T` is the module's own attribute (a temperature, say)
            module_attribute = isinstance(receiver, ast.Name) and receiver.id == "self"
            if not module_attribute and values.kind(receiver) is not Kind.STATIC:
                return f"`{ast.unparse(sub)}` warns on a tensor that is not 2-D"
        if isinstance(sub, ast.BinOp) and isinstance(sub.op, (ast.FloorDiv, ast.Mod)):
            if values.kind(sub) is not Kind.STATIC:
                return f"`{ast.unparse(sub)}` fails on integer zeros, which the other path may hold"
        if isinstance(sub, ast.Call) and extremum_of(sub, symbols) not in nonempty:
            reason = _call_impurity(sub, values, symbols)
            if reason:
                return reason
    return None


def extremum_of(call: ast.Call, symbols: ModuleSymbols) -> Optional[str]:
    """``x`` of a whole-tensor extremum of a local name: ``x.max()``, ``x.amin()``,
    ``torch.min(x)``; None for anything else (a ``dim``, ``torch.max(a, b)``)."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in _EXTREMA or call.keywords:
        return None
    if symbols.qualified_name(func.value) in _TORCH_NAMESPACES:
        operands = call.args
    else:
        operands = [func.value] if not call.args else []
    return operands[0].id if len(operands) == 1 and isinstance(operands[0], ast.Name) else None


def extrema_taken(node: ast.expr, symbols: ModuleSymbols) -> Set[str]:
    """The names whose extremum evaluating ``node`` always takes (``extremum_of``): none where a
    part of ``node`` may be skipped (``and``/``or``, ``if``-expressions, chained comparisons,
    comprehensions, lambdas), or where a name is rebound (``:=``)."""
    skipping = (ast.BoolOp, ast.IfExp, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                ast.GeneratorExp, ast.NamedExpr)
    parts = list(ast.walk(node))
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
        return len(call.args) == 1 and _number_literal(call.args[0]) and all(
            k.arg in ("dtype", "device") for k in call.keywords
        )
    if not isinstance(func, ast.Attribute) or func.attr not in SAFE_OPERATIONS:
        return False
    if any(k.arg in ("out", "rounding_mode", "inplace") for k in call.keywords):
        return False
    receiver = symbols.qualified_name(func.value)
    dim_position = 1 if receiver in _TORCH_NAMESPACES else 0  # F.softmax(x, dim) / x.softmax(dim)
    if func.attr in _NEEDS_DIM and len(call.args) <= dim_position and not any(
        k.arg == "dim" for k in call.keywords
    ):
        return False  # `F.softmax(x)` warns: "Implicit dimension choice ... deprecated"
    if receiver is not None and receiver.split(".")[0] == "torch":
        return receiver in _TORCH_NAMESPACES
    return receiver != "self"  # `self.norm(x)` calls a submodule, not Tensor.norm


def _number_literal(node: ast.expr) -> bool:
    """``2``, ``-1.5``, ``True``: a literal number, maybe negated."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float, complex))


def _empty_raising_reduction(call: ast.Call, symbols: ModuleSymbols) -> bool:
    """``x.max()``, ``x.amin(dim=1)``, ``torch.argmax(x)``: not ``torch.max(a, b)``, which is
    elementwise."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in _EMPTY_RAISING_REDUCTIONS:
        return False
    return symbols.qualified_name(func.value) not in _TORCH_NAMESPACES or len(call.args) < 2


def _call_impurity(call: ast.Call, values: ValueAnalysis, symbols: ModuleSymbols) -> Optional[str]:
    func = call.func
    if safe_operation(call, symbols):
        if isinstance(func, ast.Attribute) and values.kind(func.value) is Kind.STATIC:
            if symbols.qualified_name(func.value) not in _TORCH_NAMESPACES:
                return (
                    f"it calls `{ast.unparse(func)}()` on a Python object, "
                    "which would run on both paths"
                )
        return None
    if (
        isinstance(func, ast.Name)
        and func.id in ("min", "max", "abs", "len")
        and func.id not in symbols.defined_here()
    ):
        if all(values.kind(a) is Kind.STATIC for a in call.args):
            return None
    if _empty_raising_reduction(call, symbols):
        return (
            f"`{ast.unparse(call)}` raises on an empty tensor, which the path that did not "
            "run it may hold"
        )
    return (
        f"it calls `{ast.unparse(func)}()`, which is not known to be free of effects and errors "
        "on the path that did not run it"
    )


# ---------------------------------------------------------------- speculative calls
#: Builtins without effects that do not raise on the values configuration code passes them.
_SPECULATION_BUILTINS = {
    "abs", "bool", "dict", "enumerate", "float", "getattr", "hasattr", "int", "isinstance", "len",
    "list", "max", "min", "range", "round", "str", "sum", "tuple", "zip",
}
#: Statements that only compute (raises are accepted only where provably unreachable).
_COMPUTING_STATEMENTS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return, ast.If, ast.For)


def speculation_problem(call: ast.Call, symbols: ModuleSymbols) -> Optional[str]:
    """None when ``call`` may run on a path where the original did not run it, else why not.

    The callee must be this module's code: a function called by name, or ``obj.attr(...)``
    resolved through the module-level dispatch tables (dicts of module functions, such as
    transformers' ``ROPE_INIT_FUNCTIONS``) whose functions accept the call's arguments. Every
    candidate must only compute: local assignments, returns, ``if``/``for``, calls of pure
    builtins, ``math``, effect-free torch functions, common tensor methods, ``dict.get`` and
    other such functions, with a ``raise`` only under a test of a ``**kwargs`` the call leaves
    empty. Arithmetic and configuration lookups are assumed not to raise, as in the original
    call on the other path.
    """
    candidates = _callees(call, symbols)
    if not candidates:
        return f"`{ast.unparse(call.func)}()` is not a function of this module"
    for function in candidates:
        problem = _function_problem(function, call, symbols, set(), None)
        if problem:
            return f"`{function.name}` {problem}"
    return None


def _callees(call: ast.Call, symbols: ModuleSymbols) -> List[ast.FunctionDef]:
    func = call.func
    if isinstance(func, ast.Name):
        found = symbols.functions.get(func.id)
        return [found] if isinstance(found, ast.FunctionDef) else []
    if not isinstance(func, ast.Attribute):
        return []
    candidates: List[ast.FunctionDef] = []
    for table in symbols.assignments.values():
        if not (isinstance(table, ast.Dict) and table.values):
            continue
        entries = [
            symbols.functions.get(value.id) if isinstance(value, ast.Name) else None
            for value in table.values
        ]
        functions = [entry for entry in entries if isinstance(entry, ast.FunctionDef)]
        if len(functions) == len(entries):
            candidates += [function for function in functions if _accepts(function, call)]
    return candidates


def _accepts(function: ast.FunctionDef, call: ast.Call) -> bool:
    """Whether ``function``'s signature binds ``call``'s arguments (without ``*`` unpacking)."""
    arguments = function.args
    if any(isinstance(a, ast.Starred) for a in call.args):
        return False
    if any(k.arg is None for k in call.keywords):
        return False
    positional = [*arguments.posonlyargs, *arguments.args]
    if len(call.args) > len(positional) and arguments.vararg is None:
        return False
    named = {a.arg for a in [*arguments.args, *arguments.kwonlyargs]}
    return all(k.arg in named for k in call.keywords) or arguments.kwarg is not None


def _function_problem(
    function: ast.FunctionDef,
    call: ast.Call,
    symbols: ModuleSymbols,
    seen: Set[Tuple[str, Optional[str]]],
    caller_empty_kwargs: Optional[str],
) -> Optional[str]:
    """Why ``function``, called by ``call``, may not run speculatively (None: it may)."""
    named = {a.arg for a in [*function.args.args, *function.args.kwonlyargs]}

    def extra(keyword: ast.keyword) -> bool:
        if keyword.arg is None:  # `**kwargs` passed on: empty when the caller's own is empty
            value = keyword.value
            return not (isinstance(value, ast.Name) and value.id == caller_empty_kwargs)
        return keyword.arg not in named

    kwarg = function.args.kwarg
    empty_kwargs = kwarg.arg if kwarg and not any(extra(k) for k in call.keywords) else None
    if (function.name, empty_kwargs) in seen:  # recursion: the first visit decides
        return None
    seen.add((function.name, empty_kwargs))
    nested = {n.name for n in ast.walk(function) if isinstance(n, ast.FunctionDef)}
    nested.discard(function.name)
    checker = _SpeculationChecker(symbols, nested, empty_kwargs, seen)
    return checker.block(function.body)


class _SpeculationChecker:
    """Walks one candidate function's statements (see ``speculation_problem``)."""

    def __init__(
        self,
        symbols: ModuleSymbols,
        nested: Set[str],
        empty_kwargs: Optional[str],
        seen: Set[Tuple[str, Optional[str]]],
    ):
        self.symbols, self.nested, self.empty_kwargs = symbols, nested, empty_kwargs
        self.seen = seen

    def block(self, statements: List[ast.stmt]) -> Optional[str]:
        for index, statement in enumerate(statements):
            value = getattr(statement, "value", None)
            if index == 0 and isinstance(statement, ast.Expr) and isinstance(value, ast.Constant):
                continue
            problem = self.statement(statement)
            if problem:
                return problem
        return None

    def statement(self, statement: ast.stmt) -> Optional[str]:
        if isinstance(statement, ast.FunctionDef):
            return self.block(statement.body)
        if not isinstance(statement, _COMPUTING_STATEMENTS):
            return f"contains `{ast.unparse(statement).splitlines()[0]}`"
        if isinstance(statement, ast.If):
            if self._unreachable(statement.test):
                return self.block(statement.orelse)
            return (
                self.expression(statement.test)
                or self.block(statement.body)
                or self.block(statement.orelse)
            )
        if isinstance(statement, ast.For):
            if statement.orelse:
                return "contains a `for ... else`"
            return (
                self.targets([statement.target])
                or self.expression(statement.iter)
                or self.block(statement.body)
            )
        if isinstance(statement, ast.Return):
            return self.expression(statement.value) if statement.value else None
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        value = statement.value
        return self.targets(targets) or (self.expression(value) if value else None)

    def targets(self, targets: Sequence[ast.expr]) -> Optional[str]:
        for target in targets:
            for element in target.elts if isinstance(target, ast.Tuple) else [target]:
                if not isinstance(element, ast.Name):
                    return f"assigns `{ast.unparse(element)}`, not a local name"
        return None

    def _unreachable(self, test: ast.expr) -> bool:
        """Whether ``test`` is false because a conjunct tests the empty ``**kwargs``."""
        if self.empty_kwargs is None:
            return False
        operands = [test]
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            operands = test.values
        return any(self._tests_kwargs(operand) for operand in operands)

    def _tests_kwargs(self, node: ast.expr) -> bool:
        operators = [type(op) for op in getattr(node, "ops", ())]
        if isinstance(node, ast.Compare) and operators in ([ast.Gt], [ast.NotEq]):
            right = node.comparators[0]
            if not (isinstance(right, ast.Constant) and right.value == 0):
                return False
            node = node.left
        if isinstance(node, ast.Call) and len(node.args) == 1:
            func = node.func
            if isinstance(func, ast.Name) and func.id == "len":
                node = node.args[0]
        return isinstance(node, ast.Name) and node.id == self.empty_kwargs

    def expression(self, node: ast.expr) -> Optional[str]:
        for sub in ast.walk(node):
            if isinstance(sub, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)):
                return f"contains `{ast.unparse(sub)}`"
            if isinstance(sub, ast.Call):
                problem = self.call(sub)
                if problem:
                    return problem
        return None

    def call(self, call: ast.Call) -> Optional[str]:
        func = call.func
        if isinstance(func, ast.Name):
            if func.id in self.nested:
                return None
            if func.id in _SPECULATION_BUILTINS and func.id not in self.symbols.defined_here():
                return None
            callee = self.symbols.functions.get(func.id)
            if isinstance(callee, ast.FunctionDef):
                problem = _function_problem(
                    callee, call, self.symbols, self.seen, self.empty_kwargs
                )
                return f"calls `{func.id}`, which {problem}" if problem else None
        qualified = self.symbols.qualified_name(func) or ""
        if qualified.startswith("math."):
            return None
        if safe_operation(call, self.symbols):
            return None
        if qualified == "torch.tensor":  # of configuration (lists of numbers), assumed well-formed
            return None
        if isinstance(func, ast.Attribute) and func.attr == "get":
            return None
        return f"calls `{ast.unparse(func)}()`, not known to be free of effects"
