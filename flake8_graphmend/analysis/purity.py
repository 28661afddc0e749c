"""Whether an expression may be evaluated on a path where the original code did not evaluate it.

Predication ([Where]) computes both branches and lowering ``a or b`` to ``torch.logical_or``
computes both operands. That is only sound for expressions without side effects that cannot
raise where the original would not have run them. This module says which ones qualify, and
names the culprit when one does not.
"""

from __future__ import annotations

import ast
from typing import List, Optional, Set, Tuple

from .symbols import ModuleSymbols
from .values import Kind, ValueAnalysis

#: torch functions with effects (global state, I/O, checks) or data-dependent output shapes.
_IMPURE_TORCH = {
    "torch.manual_seed", "torch.seed", "torch.save", "torch.load", "torch.set_rng_state",
    "torch.set_default_dtype", "torch.set_default_device", "torch.set_grad_enabled",
    "torch.nonzero", "torch.argwhere", "torch.unique", "torch.unique_consecutive",
    "torch.masked_select", "torch.equal", "torch.allclose", "torch._assert", "torch._assert_async",
    "torch.cond", "torch.multinomial", "torch.bernoulli", "torch.rand", "torch.randn",
    "torch.randint", "torch.randperm", "torch.rand_like", "torch.randn_like", "torch.randint_like",
    "torch.normal", "torch.poisson", "torch.nn.functional.dropout",
}
#: Tensor methods that read data into Python, change shape with the data, or draw random numbers.
_IMPURE_METHODS = {
    "item", "tolist", "numpy", "backward", "register_hook", "nonzero", "unique", "masked_select",
    "equal", "allclose", "data_ptr", "record_stream", "uniform_", "normal_", "bernoulli",
    "multinomial", "cpu", "cuda", "pin_memory",
}
#: Methods accepted on receivers of unknown type: the common pure tensor methods.
_TENSOR_METHODS = {
    "to", "float", "half", "double", "bfloat16", "bool", "long", "int", "type_as", "view",
    "view_as", "reshape", "reshape_as", "transpose", "permute", "contiguous", "clone", "detach",
    "clamp", "clamp_min", "clamp_max", "clip", "masked_fill", "abs", "exp", "log", "sqrt",
    "rsqrt", "pow", "sum", "mean", "max", "min", "amax", "amin", "any", "all", "softmax",
    "log_softmax", "matmul", "mm", "bmm", "unsqueeze", "squeeze", "expand", "expand_as", "repeat",
    "flatten", "new_zeros", "new_ones", "new_full", "new_tensor", "new_empty", "sigmoid", "tanh",
    "relu", "neg", "sign", "round", "floor", "ceil", "isinf", "isnan", "isfinite", "eq", "ne",
    "gt", "lt", "ge", "le", "logical_and", "logical_or", "logical_not", "logical_xor", "size",
    "dim", "mul", "add", "sub", "div", "norm", "square", "reciprocal", "where", "argmax",
    "argmin", "cumsum", "prod", "t",
}


def _is_slice_index(index: ast.expr) -> bool:
    elements = index.elts if isinstance(index, ast.Tuple) else [index]
    return all(
        isinstance(e, ast.Slice) or (isinstance(e, ast.Constant) and e.value in (None, Ellipsis))
        for e in elements
    )


def impurity(node: ast.expr, values: ValueAnalysis, symbols: ModuleSymbols) -> Optional[str]:
    """None when ``node`` is safe to evaluate unconditionally, else a short reason."""
    for sub in ast.walk(node):
        if isinstance(sub, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)):
            return f"`{ast.unparse(sub)}` is not a plain expression"
        if isinstance(sub, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return f"the comprehension `{ast.unparse(sub)}` is not proven pure"
        if isinstance(sub, ast.Subscript) and not _is_slice_index(sub.slice):
            if values.kind(sub.value) is not Kind.STATIC:
                return f"the indexing `{ast.unparse(sub)}` could fail on the branch that did not run"
        if isinstance(sub, ast.Call):
            reason = _call_impurity(sub, values, symbols)
            if reason:
                return reason
    return None


def _call_impurity(call: ast.Call, values: ValueAnalysis, symbols: ModuleSymbols) -> Optional[str]:
    func = call.func
    text = ast.unparse(func)
    qualified = symbols.qualified_name(func) or ""
    if qualified.startswith("torch.") and isinstance(func, ast.Attribute) and symbols.qualified_name(func.value) in (
        "torch", "torch.nn.functional", "torch.special", "torch.linalg", "torch.fft"
    ):
        if qualified in _IMPURE_TORCH or func.attr.endswith("_"):
            return f"it calls `{text}()`, which has effects or a data-dependent shape"
        return None
    if qualified == "torch.finfo" or qualified == "torch.iinfo":
        return None
    if isinstance(func, ast.Attribute):
        receiver_kind = values.kind(func.value)
        method = func.attr
        if method in _IMPURE_METHODS or (method.endswith("_") and not method.startswith("_")):
            return f"it calls `{text}()`, which has effects or reads tensor data into Python"
        if receiver_kind is Kind.TENSOR or (method in _TENSOR_METHODS and receiver_kind is not Kind.STATIC):
            return None
    if isinstance(func, ast.Name) and func.id in ("min", "max", "abs", "len") and func.id not in symbols.defined_here():
        if all(values.kind(a) is Kind.STATIC for a in call.args):
            return None
    return f"it calls `{text}()`, which would run on both paths"


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
    candidates = []
    for table in symbols.assignments.values():
        if not (isinstance(table, ast.Dict) and table.values):
            continue
        entries = [symbols.functions.get(getattr(value, "id", None)) for value in table.values]
        if all(isinstance(entry, ast.FunctionDef) for entry in entries):
            candidates += [entry for entry in entries if _accepts(entry, call)]
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

    def targets(self, targets: List[ast.expr]) -> Optional[str]:
        for target in targets:
            for element in target.elts if isinstance(target, ast.Tuple) else [target]:
                if not isinstance(element, ast.Name):
                    return f"assigns `{ast.unparse(element)}`, not a local name"
        return None

    def _unreachable(self, test: ast.expr) -> bool:
        """Whether ``test`` is false because a conjunct tests the empty ``**kwargs``."""
        if self.empty_kwargs is None:
            return False
        conjunction = isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)
        operands = test.values if conjunction else [test]
        return any(self._tests_kwargs(operand) for operand in operands)

    def _tests_kwargs(self, node: ast.expr) -> bool:
        operators = [type(op) for op in getattr(node, "ops", ())]
        if isinstance(node, ast.Compare) and operators in ([ast.Gt], [ast.NotEq]):
            right = node.comparators[0]
            if not (isinstance(right, ast.Constant) and right.value == 0):
                return False
            node = node.left
        func = getattr(node, "func", None)
        if isinstance(func, ast.Name) and func.id == "len" and len(node.args) == 1:
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
            if isinstance(self.symbols.functions.get(func.id), ast.FunctionDef):
                callee = self.symbols.functions[func.id]
                problem = _function_problem(
                    callee, call, self.symbols, self.seen, self.empty_kwargs
                )
                return f"calls `{func.id}`, which {problem}" if problem else None
        qualified = self.symbols.qualified_name(func) or ""
        if qualified.startswith("math."):
            return None
        if qualified.startswith("torch.") and isinstance(func, ast.Attribute):
            if qualified in _IMPURE_TORCH or func.attr.endswith("_"):
                return f"calls `{ast.unparse(func)}()`, which has effects"
            return None
        if isinstance(func, ast.Attribute) and (func.attr == "get" or func.attr in _TENSOR_METHODS):
            return None
        return f"calls `{ast.unparse(func)}()`, not known to be free of effects"
