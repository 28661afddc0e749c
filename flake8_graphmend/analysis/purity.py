"""Whether an expression may be evaluated on a path where the original code did not evaluate it.

Predication ([Where]) computes both branches and lowering ``a or b`` to ``torch.logical_or``
computes both operands. That is only sound for expressions without side effects that cannot
raise where the original would not have run them. This module says which ones qualify, and
names the culprit when one does not.
"""

from __future__ import annotations

import ast
from typing import Optional

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
