"""Other untraceable calls: clocks, deepcopy of tensors, global seeding, storage pointers,
random draws Dynamo cannot trace, parameters made inside compiled code, `requires_grad`
changed on a tensor computed there."""

from __future__ import annotations

import ast
from typing import Iterator

from ..analysis.index import assignment_targets, root_name, walk
from ..analysis.symbols import self_attribute, self_call_assignments
from ..analysis.values import Kind
from ..planning.aliasing import reaching_bindings
from .base import Finding, FunctionContext

_CLOCKS = {
    "time.time", "time.time_ns", "time.perf_counter", "time.perf_counter_ns", "time.monotonic",
    "time.monotonic_ns", "time.process_time", "time.process_time_ns",
}
#: torch.nn module classes (name prefixes) whose construction makes parameters.
_MODULES_WITH_PARAMETERS = (
    "Linear", "Bilinear", "LazyLinear", "Conv", "LazyConv", "Embedding", "LayerNorm", "GroupNorm",
    "BatchNorm", "LazyBatchNorm", "InstanceNorm", "RMSNorm", "MultiheadAttention", "LSTM", "GRU",
    "RNN", "PReLU", "Transformer",
)
#: Module methods that convert parameters in place of the module.
_CONVERSIONS = {"to", "half", "float", "double", "bfloat16", "cuda", "cpu", "type"}
_SEEDS = {
    "torch.manual_seed",
    "torch.random.manual_seed",
    "torch.cuda.manual_seed",
    "torch.cuda.manual_seed_all",
    "torch.seed",
}


def check_call(node: ast.Call, statement: ast.stmt, ctx: FunctionContext) -> Iterator[Finding]:
    func = node.func
    qualified = ctx.symbols.qualified_name(func) or ""
    if qualified in _CLOCKS:
        yield ctx.finding("GM601", node, call=ast.unparse(func))
    elif qualified in _SEEDS:
        yield ctx.finding("GM603", node, call=ast.unparse(func))
    elif qualified == "copy.deepcopy" and node.args and ctx.values.may_hold_tensor(node.args[0]):
        yield from _deepcopy(node, node.args[0], ctx)
    elif isinstance(func, ast.Attribute) and func.attr == "data_ptr" and not node.args:
        yield ctx.finding("GM604", node)
    elif qualified.startswith("numpy.random.") or qualified == "random.random":
        yield ctx.finding("GM605", node, call=ast.unparse(func))
    elif qualified == "torch.nn.Parameter" or _builds_parameters(qualified):
        yield ctx.finding("GM606", node, call=f"`{ast.unparse(func)}(...)`")
    elif isinstance(func, ast.Attribute) and func.attr in _CONVERSIONS:
        yield from _module_conversion(node, func, statement, ctx)
    elif (
        isinstance(func, ast.Attribute)
        and func.attr == "requires_grad_"
        and _computed_tensor(func.value, ctx)
    ):
        shown = ast.unparse(func.value)
        condition = f"`{shown}`, or a tensor computed from it, is an output of the graph"
        yield ctx.finding("GM607", node, call=f"`{ast.unparse(func)}()`", condition=condition)


def check_statement(statement: ast.stmt, ctx: FunctionContext) -> Iterator[Finding]:
    """GM607 for ``h.requires_grad = value`` of a tensor the function computes."""
    if isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        for target in assignment_targets(statement):
            if (
                isinstance(target, ast.Attribute)
                and target.attr == "requires_grad"
                and _computed_tensor(target.value, ctx)
            ):
                yield ctx.finding("GM607", target, call=f"`{ast.unparse(target)} = ...`")


def _computed_tensor(node: ast.expr, ctx: FunctionContext) -> bool:
    """A local that may be a tensor the function computes (``h = x[:, None]``, ``x =
    x.detach()``), on every binding that reaches ``node``: not an input, a parameter or a
    buffer (``h = self.w``, ``p = self.params[0]``, ``p = self.weight_for(k)``), whose
    ``requires_grad`` Dynamo changes without a break."""
    if not isinstance(node, ast.Name) or ctx.values.value_kind(node) in (Kind.STATIC, Kind.DATA):
        return False
    bindings, on_entry = reaching_bindings(node.id, node, ctx)
    values = [getattr(binding, "value", None) for binding in bindings]
    return bool(values) and not on_entry and all(
        isinstance(value, ast.expr)
        and not isinstance(value, (ast.Name, ast.Attribute))
        and root_name(value) != "self"
        for value in values
    )


def _builds_parameters(qualified: str) -> bool:
    """``torch.nn.Linear`` and the other torch.nn modules that make parameters when built."""
    if not qualified.startswith("torch.nn."):
        return False
    name = qualified.rsplit(".", 1)[-1]
    return qualified.count(".") == 2 and name.startswith(_MODULES_WITH_PARAMETERS)


def _module_conversion(
    node: ast.Call, func: ast.Attribute, statement: ast.stmt, ctx: FunctionContext
) -> Iterator[Finding]:
    """``self.sub = self.sub.to(dtype)`` or ``self.sub.half()`` as a statement: a submodule
    converted in compiled code. Converting builds new parameters when the dtype or device
    changes (a tensor's ``.to`` is not used that way: its result would be dropped)."""
    name = self_attribute(func.value)
    if name is None or not _is_submodule(name, ctx):
        return
    reassigned = isinstance(statement, ast.Assign) and statement.value is node and any(
        self_attribute(target) == name for target in statement.targets
    )
    alone = isinstance(statement, ast.Expr) and statement.value is node
    if reassigned or alone:
        shown = f"`self.{name}.{func.attr}(...)`"
        condition = f"it converts `self.{name}`"
        yield ctx.finding("GM606", node, call=shown, condition=condition)


def _is_submodule(name: str, ctx: FunctionContext) -> bool:
    """Whether the class's ``__init__`` assigns ``self.<name>`` an instance of a class
    (``nn.Linear(...)``, ``Router(config)``) other than a tensor or parameter."""
    owner = ctx.region.owner
    init = owner.methods.get("__init__") if owner else None
    if init is None:
        return False
    for attribute, value in self_call_assignments(walk(init)):
        if attribute != name:
            continue
        qualified = ctx.symbols.qualified_name(value.func) or ""
        last = qualified.rsplit(".", 1)[-1]
        if last[:1].isupper() and not last.endswith(("Tensor", "Parameter")):
            return True
    return False


def _deepcopy(node: ast.Call, value: ast.expr, ctx: FunctionContext) -> Iterator[Finding]:
    """GM602 for ``copy.deepcopy(value)``: a tensor breaks; a value not known to be one (a
    module, a list of dicts) breaks when it holds one, and the finding says so."""
    if ctx.values.kind(value) is Kind.TENSOR:
        yield ctx.finding("GM602", node, call="a tensor value")
    else:
        shown = ast.unparse(value)
        condition = f"`{shown}` holds a tensor"
        yield ctx.finding("GM602", node, call=f"`{shown}`", condition=condition)
