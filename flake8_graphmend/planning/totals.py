"""Values that compute on every call without failing or acting, whatever the shapes, dtypes
and values: what a fix may compute where the original computed it only sometimes (the tests
and arguments of an ``if`` deferred as a whole, the message of a check).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Dict, FrozenSet, Iterator, List, Optional, Set, Union

from ..analysis.index import assignment_targets, node_memo, walk
from ..analysis.purity import number_literal
from ..analysis.symbols import (
    SETTERS, deleted_attributes, is_self, named_setters, self_attribute, self_chain,
    sets_attributes_by_computed_name,
)
from ..analysis.values import Kind, registered_name
from . import formatted_values
from .aliasing import reaching_bindings
from .items import whole_reduction

if TYPE_CHECKING:
    from ..rules.base import FunctionContext


def tensor_metadata(node: ast.expr) -> bool:
    """``x.shape``, ``x.size()``, ``x.dtype``, ``x.device``: values whose ``str()`` Dynamo
    computes exactly while tracing (not so for every object: a KeyError loses its quotes)."""
    if isinstance(node, ast.Call) and not node.args and not node.keywords:
        node = node.func
        return isinstance(node, ast.Attribute) and node.attr == "size"
    return isinstance(node, ast.Attribute) and node.attr in ("shape", "dtype", "device")


#: Reductions defined for every dtype and shape (an empty tensor included).
_TOTAL_REDUCTIONS = frozenset({"any", "all", "count_nonzero", "sum", "prod"})
#: Elementwise tests defined for every dtype.
_TOTAL_TESTS = frozenset({"isnan", "isinf", "isfinite"})


def total_test(node: ast.expr, ctx: FunctionContext) -> bool:
    """A test that computes for every dtype and shape of its tensors: a total reduction of a
    total value (``(mask == 0).any()``, ``torch.isnan(x).any()``), its negation, or its
    comparison with a Python value (an ordering of a complex sum fails: a known problem)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return total_test(node.operand, ctx)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:  # known problem: complex `<`
        return (
            _total_reduction(node.left, ctx) is not None
            and ctx.values.kind(node.comparators[0]) is Kind.STATIC
        )
    return _total_reduction(node, ctx) is not None


def _total_reduction(node: ast.expr, ctx: FunctionContext) -> Optional[str]:
    """``any`` for ``v.any()`` or ``torch.any(v)`` of a total value ``v``; else None."""
    reduced = whole_reduction(node, _TOTAL_REDUCTIONS, ctx)
    return reduced[0] if reduced is not None and _total_value(reduced[1], ctx) else None


def _total_value(node: ast.expr, ctx: FunctionContext) -> bool:
    """A tensor that is there on every path and whose making cannot fail: a name, an
    ``isnan``/``isinf``/``isfinite`` of one, a name compared with a constant or an attribute
    that holds a number (an ordering of a complex tensor fails: a known problem)."""
    if isinstance(node, ast.Name):  # a tensor, unless the analysis knows it is not one
        return ctx.values.kind(node) is not Kind.STATIC
    if isinstance(node, ast.Compare) and len(node.ops) == 1:  # known problem: complex `<`
        bound = node.comparators[0]
        if isinstance(bound, ast.UnaryOp) and isinstance(bound.op, (ast.USub, ast.UAdd)):
            bound = bound.operand
        return _total_value(node.left, ctx) and (
            isinstance(bound, ast.Constant) or number_attribute(bound, ctx)
        )
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        name = ctx.symbols.qualified_name(node.func) or ""
        return name[len("torch."):] in _TOTAL_TESTS and _total_value(node.args[0], ctx)
    if isinstance(node, ast.Call) and not (node.args or node.keywords):  # `x.isnan()`
        method = node.func
        return (
            isinstance(method, ast.Attribute)
            and method.attr in _TOTAL_TESTS
            and isinstance(method.value, ast.Name)
            and _total_value(method.value, ctx)
        )
    return False


def plain_argument(node: ast.expr, ctx: FunctionContext) -> bool:
    """An argument that computes on every path: a literal, a name, an attribute of ``self``
    that ``__init__`` sets, tensor metadata (``x.shape``), a total reduction of a name
    (``y.sum()``), or an f-string of those."""
    if isinstance(node, (ast.Constant, ast.Name)) or _metadata(node, ctx):
        return True
    if initialised_attribute(node, ctx):
        return True
    if isinstance(node, ast.JoinedStr):
        return all(plain_argument(piece.value, ctx) for piece in formatted_values(node))
    return _total_reduction(node, ctx) is not None


def computed_by(node: ast.expr, tests: List[ast.expr], ctx: FunctionContext) -> bool:
    """Whether computing ``tests`` computes ``node`` itself, whatever their values
    (``evaluated_parts``: ``x.abs().max()`` of ``x.abs().max() > 100``), or a total reduction
    of such a part (``(x > 10).sum()`` of ``(x > 10).any()``). Computed again with the same
    names, right after, it gives the same value without failing where they did not fail; one
    that binds a name (``:=``) or yields is never taken."""
    if any(isinstance(sub, (ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)) for sub in walk(
        node
    )):
        return False
    reduced = whole_reduction(node, _TOTAL_REDUCTIONS, ctx)
    if reduced is not None and computed_by(reduced[1], tests, ctx):
        return True
    wanted = ast.dump(node)
    return any(ast.dump(part) == wanted for part in evaluated_parts(tests))


def evaluated_parts(tests: List[ast.expr]) -> Iterator[ast.expr]:
    """The expressions that computing ``tests`` computes whatever the values: those that
    neither an ``and``/``or`` (after its first operand), an ``a if c else b`` (but its test)
    nor a chained comparison (after its first) may skip, outside lambdas and comprehensions."""
    pending = list(tests)
    while pending:
        part = pending.pop()
        yield part
        if isinstance(part, ast.BoolOp):
            pending.append(part.values[0])
        elif isinstance(part, ast.IfExp):
            pending.append(part.test)
        elif isinstance(part, ast.Compare):  # `a < b < c` stops after `a < b`
            pending += [part.left, part.comparators[0]]
        elif not isinstance(part, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                                   ast.GeneratorExp)):
            pending.extend(
                child for child in ast.iter_child_nodes(part) if isinstance(child, ast.expr)
            )


def _metadata(node: ast.expr, ctx: FunctionContext) -> bool:
    """Metadata of a tensor name, always there: ``tensor_metadata``, ``x.ndim``, ``x.dim()``,
    ``x.numel()``."""
    receiver = metadata_receiver(node)
    return receiver is not None and ctx.values.kind(receiver) is Kind.TENSOR


def metadata_receiver(node: ast.expr) -> Optional[ast.Name]:
    """``x`` of metadata that every tensor ``x`` has (``_metadata``), else None."""
    called = isinstance(node, ast.Call) and not (node.args or node.keywords)
    attribute = node.func if isinstance(node, ast.Call) else node
    if not (isinstance(attribute, ast.Attribute) and isinstance(attribute.value, ast.Name)):
        return None
    name = attribute.attr
    if tensor_metadata(node) or (called and name in ("dim", "numel")) or (
        not isinstance(node, ast.Call) and name == "ndim"
    ):
        return attribute.value
    return None


def initialised_attribute(node: ast.expr, ctx: FunctionContext) -> bool:
    """``self.X`` that the class of the function sets up on every instance: a class-level
    assignment, or a statement of ``__init__``'s own body (not under an ``if``): ``self.X =
    ...``, ``self.register_buffer("X", ...)``, ``self.register_parameter("X", ...)``."""
    attribute = self_attribute(node)
    owner = ctx.region.owner
    if attribute is None or owner is None or ctx.symbols.may_run_code(node):
        return False
    if deleted_attributes(ctx.symbols.tree) & {attribute, "*"}:
        return False
    for statement in owner.node.body:
        targets = statement.targets if isinstance(statement, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == attribute for t in targets):
            return True
    init = owner.methods.get("__init__")
    for statement in init.body if init is not None else []:
        if isinstance(statement, ast.Assign):
            if any(self_attribute(target) == attribute for target in statement.targets):
                return True
        call = statement.value if isinstance(statement, ast.Expr) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
            if is_self(call.func.value) and registered_name(call) == attribute:
                return True
    return False


def number_attribute(node: ast.expr, ctx: FunctionContext) -> bool:
    """``self.X`` (``cls.X`` in a classmethod) that holds a number on every instance: the class
    sets it up (in its body, ``SCALE = 2.0``, or in ``__init__``: ``initialised_attribute``),
    and every store of the file into an attribute ``X`` of any object stores a number literal
    (``self.num_train_timesteps = 1000``). Comparing a tensor with it, or keeping it, cannot
    fail or show a later update."""
    if not (
        isinstance(node, ast.Attribute)
        and _own_receiver(node.value, ctx)
        and node.attr in _number_attributes(ctx.symbols.tree)
    ):
        return False
    mirrored = ast.Attribute(value=ast.Name(id="self", ctx=ast.Load()), attr=node.attr)
    return initialised_attribute(mirrored, ctx)  # the class body or `__init__`; no property


def _own_receiver(node: ast.expr, ctx: FunctionContext) -> bool:
    """``self``, or the first parameter of the function where it is a classmethod."""
    if is_self(node):
        return True
    function = ctx.region.function
    arguments = function.args.posonlyargs + function.args.args
    return (
        isinstance(node, ast.Name)
        and bool(arguments)
        and node.id == arguments[0].arg
        and any(getattr(d, "id", None) == "classmethod" for d in function.decorator_list)
    )


@node_memo
def _number_attributes(tree: ast.Module) -> FrozenSet[str]:
    """The attribute names that ``tree`` binds only to number literals: class-level names and
    ``obj.X = <number>`` stores (``+=`` too), where no other store, ``del`` or ``setattr`` of
    ``X`` is made."""
    if sets_attributes_by_computed_name(tree):
        return frozenset()  # `vars(self).update(kw)`, `map(setattr, ...)`: any attribute
    literal: Dict[int, bool] = {}  # attribute targets of assignments: a number literal?
    numbers: Set[str] = set()
    others: Set[str] = set()
    setters = named_setters(tree)  # `setattr(obj, "X", v)`: its `setattr` is weighed with "X"
    for node in walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            number = node.value is not None and number_literal(node.value, _REAL)
            stored = assignment_targets(node)
            literal.update((id(t), number) for t in stored if isinstance(t, ast.Attribute))
        if isinstance(node, ast.ClassDef):
            for statement in node.body:
                if isinstance(statement, (ast.Assign, ast.AnnAssign)):
                    names = {t.id for t in assignment_targets(statement) if isinstance(t, ast.Name)}
                    number = statement.value is not None and number_literal(statement.value, _REAL)
                    (numbers if number else others).update(names)
        elif isinstance(node, ast.Call) and id(node.func) in setters:
            others.add(setters[id(node.func)])
    for node in walk(tree):  # every store, `del`, `for obj.X in ...`, `with ... as obj.X`
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            (numbers if literal.get(id(node), False) else others).add(node.attr)
    return frozenset(numbers - others)


def number_mapping_element(node: ast.expr, ctx: FunctionContext) -> bool:
    """``self.X[k]`` where ``X`` is a mapping of numbers: every store of the file into an
    attribute ``X`` is a dict display of number literals (``self.counters = {"calls": 0}``),
    every store into an item of it a number literal (``+= 1`` too), and no call but a reading
    one (``.get()``, ``.items()``) is made on it. Its items are Python numbers, never
    tensors."""
    return (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Attribute)
        and _own_receiver(node.value.value, ctx)
        and node.value.attr in _number_mappings(ctx.symbols.tree)
    )


@node_memo
def _number_mappings(tree: ast.Module) -> FrozenSet[str]:
    found: Set[str] = set()
    others: Set[str] = set()
    for node in walk(tree):
        if isinstance(node, ast.Name) and node.id in ("vars", *SETTERS):
            return frozenset()  # any attribute may be set by name
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for target in assignment_targets(node):
                number = node.value is not None and number_literal(node.value, _REAL)
                if isinstance(target, ast.Attribute):
                    mapping = isinstance(node, ast.Assign) and _numbers_display(node.value)
                    (found if mapping else others).add(target.attr)
                elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Attribute):
                    (found if number else others).add(target.value.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            holder = node.func.value
            if isinstance(holder, ast.Attribute) and node.func.attr not in _READING_CALLS:
                others.add(holder.attr)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Del):
            others.add(node.attr)
    return frozenset(found - others)


#: Methods of a mapping that change none of its items.
_READING_CALLS = frozenset({"get", "keys", "values", "items", "copy", "__contains__", "__len__"})


def _numbers_display(value: Optional[ast.expr]) -> bool:
    """``{"a": 0, "b": 0.0}`` or ``{}``: a dict of number literals."""
    return isinstance(value, ast.Dict) and all(
        key is not None and number_literal(item, _REAL)
        for key, item in zip(value.keys, value.values)
    )


#: The literals a number attribute may hold: real numbers, which a tensor compares with.
_REAL = (int, float)


def self_configuration(node: ast.expr, ctx: FunctionContext) -> bool:
    """A non-tensor attribute chain of ``self`` (``self.num_heads``, ``self.config.window``):
    configuration that Dynamo reads while tracing."""
    return self_chain(node) and ctx.values.kind(node) is not Kind.TENSOR


def names_read(node: ast.expr) -> Set[str]:
    return {n.id for n in walk(node) if isinstance(n, ast.Name)}


def unsure_names(
    operand: ast.expr, first: ast.expr, at: ast.AST, ctx: FunctionContext
) -> List[str]:
    """The locals that ``operand``, a test computed on every call after ``first``, reads and
    that may not hold a tensor there (None, unbound): those that ``first`` does not compute
    with and that are not bound to a tensor on every path to ``at`` (Python values, such as a
    bound `hi: float` compared with, aside)."""
    unseen = sorted(names_read(operand) - names_read(first))
    shown = [
        _unsure_read(name, operand, ctx)
        for name in unseen
        if name in ctx.local_names
        and ctx.values.kind(ast.Name(id=name, ctx=ast.Load())) is not Kind.STATIC
        and not _surely_tensor(name, at, ctx)
    ]
    return [text for text in shown if text is not None]


def _unsure_read(name: str, operand: ast.expr, ctx: FunctionContext) -> Optional[str]:
    """How ``operand`` reads ``name``, where that may not give a tensor or number: the name,
    or, for ``self`` read only through attributes, the first attribute that may not hold a
    number (``number_attribute``: ``(t >= self.num_train_timesteps).any()`` reads none)."""
    reads = [n for n in walk(operand) if isinstance(n, ast.Name) and n.id == name]
    attributes = {
        id(node.value): node
        for node in walk(operand)
        if isinstance(node, ast.Attribute) and _own_receiver(node.value, ctx)
    }
    if not all(id(read) in attributes for read in reads):
        return name
    read = [attributes[id(read)] for read in reads]
    unsure = [attribute for attribute in read if not number_attribute(attribute, ctx)]
    return ast.unparse(unsure[0]) if unsure else None


def _surely_tensor(name: str, at: ast.AST, ctx: FunctionContext) -> bool:
    """A local name bound on every path to ``at``, only ever to a tensor."""
    if ctx.values.is_parameter(name):
        return False
    return not maybe_unbound(name, at, ctx) and ctx.values.only_assigned(
        name, lambda value: ctx.values.kind(value) is Kind.TENSOR
    )


def maybe_unbound(name: str, at: ast.AST, ctx: FunctionContext) -> bool:
    """A local of the function (not a parameter) that no binding before ``at`` sets on every
    path (``stats`` bound only under ``if self.debug:``), or one bound by a ``for`` (a loop
    that runs no time binds nothing) or an ``except ... as`` (unbound after the handler)."""
    if name not in ctx.local_names or ctx.values.is_parameter(name):
        return False
    loops = [
        node for node in walk(ctx.region.function)
        if isinstance(node, (ast.For, ast.AsyncFor)) and name in names_read(node.target)
    ]
    if loops and _bound_by_loop_around(name, at, loops, ctx):
        return False
    if loops:
        return True
    for node in walk(ctx.region.function):
        if isinstance(node, ast.ExceptHandler) and node.name == name:
            return True
    return reaching_bindings(name, at, ctx)[1]


def _bound_by_loop_around(
    name: str, at: ast.AST, loops: List[Union[ast.For, ast.AsyncFor]], ctx: FunctionContext
) -> bool:
    """Whether ``at`` lies in the body of one of ``loops`` (which bind ``name`` at each pass),
    and nothing of the function unbinds the name (``del``, an ``except ... as`` of it)."""
    unbinding = any(
        isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Del)
        or isinstance(node, ast.ExceptHandler) and node.name == name
        for node in walk(ctx.region.function)
    )
    return not unbinding and any(
        sub is at for loop in loops for statement in loop.body for sub in walk(statement)
    )
