"""What a ``torch.where`` selection changes about tensor identity and memory layout.

The original binds a name to one of two existing tensors; the selection returns a new one. That
is only exact when nothing afterwards can tell: no update in place reaches the source, the
caller does not hold the source, and both sides have the same layout.
"""

from __future__ import annotations

import ast
import builtins
from typing import (
    TYPE_CHECKING, AbstractSet, Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple,
    Union,
)

from ..analysis.index import (
    assignment_targets, child_blocks, encloses, functions_by_name, loops_around, node_memo,
    names_bound_by, outer_names, parameter_names, parent_map, root_name, scope_names, walk,
)
from ..analysis.dtypes import Reaching
from ..analysis.inplace import builds_in_place_module, short_name
from ..analysis.symbols import (
    ClassInfo, FunctionNode, ModuleSymbols, is_self, is_staticmethod, taken_from_self,
)
from ..analysis.values import Kind, constant_int
from .module_state import (
    RUNS_MODULE, attribute_of, call_changes_state, called_through, hands_on, held_classes,
    holders, in_place_name, methods_called, module_expression, updated_by_call,
    updates_in_place,
)
from .foreign import CALLING
from .submodules import (
    binds_locally,
    call_kind,
    call_sources,
    element_path,
    forward_of,
    is_torch_function,
    method_returns_new_tensor,
    returns_new_tensor,
    submodule_classes,
    with_bases,
)

if TYPE_CHECKING:
    from ..rules.base import FunctionContext


#: What a call may run: a function of the file, or a lambda bound to a module-level name.
Callee = Union[FunctionNode, ast.Lambda]
#: How far the origin of a value is followed back through assignments.
_DEPTH = 6


def may_alias(value: ast.expr, ctx: FunctionContext) -> bool:
    """Whether ``value`` may be an existing tensor or a view of one (not a new tensor).

    Arithmetic and the operations known to allocate (``FRESH_OPERATIONS``, ``FRESH_MODULES``)
    give new tensors; a view or cast, or a call that may hand back one of its arguments
    (``nn.Dropout`` in eval mode, ``x.contiguous()``), is what those are
    (``x.float().div(y).long()`` is new); any other call may hand back anything (a helper
    that returns ``self``'s state).
    """
    if isinstance(value, (ast.BinOp, ast.Compare, ast.Constant)):
        return False
    if isinstance(value, ast.UnaryOp):
        return isinstance(value.op, ast.UAdd) and may_alias(value.operand, ctx)
    if isinstance(value, ast.Call):
        kind = _call_kind(value, ctx)
        if kind == "unknown":
            return True
        return any(may_alias(source, ctx) for source in call_sources(value, kind))
    return True


def _call_kind(call: ast.Call, ctx: FunctionContext) -> str:
    """``submodules.call_kind`` of ``call`` in the region (answered once per call)."""
    kinds = vars(ctx).setdefault("_call_kinds", {})  # kept like a cached_property's value
    kept = kinds.get(id(call))
    if kept is None or kept[0] is not call:
        func = call.func
        tensor_method = (
            isinstance(func, ast.Attribute)
            and ctx.values.kind(func.value) is not Kind.STATIC
            and not is_self(func.value)  # `self.clone(x)`, `self.norm(x)`: module methods
        )
        kind = call_kind(call, ctx.region.owner, ctx.symbols, tensor_method)
        methods = methods_called(call, ctx.region.owner, ctx.symbols) if kind == "unknown" else []
        if methods and all(
            method_returns_new_tensor(method, owner, call, ctx.symbols) for method, owner in methods
        ):
            kind = "fresh"  # `self.project(x)`, `super().forward(x)` returning `self.fc(x)`
        kept = kinds[id(call)] = (call, kind)
    return kept[1]


def _call_sources(call: ast.Call, ctx: FunctionContext) -> List[ast.expr]:
    """``submodules.call_sources`` of ``call`` in the region."""
    return call_sources(call, _call_kind(call, ctx))


def updated_in_place(name: str, ctx: FunctionContext) -> Optional[int]:
    """A line of the function that updates ``name``'s tensor in place: a method or store
    (``ctx.mutations``), an ``inplace=True`` call or submodule, a helper that mutates its
    argument; None if there is none."""
    if name in ctx.mutations:
        return ctx.mutations[name][0]
    call = _mutating_call(name, ctx)
    return None if call is None else call.lineno


def _mutating_call(name: str, ctx: FunctionContext, after: int = 0) -> Optional[ast.Call]:
    """A call after line ``after`` that is handed ``name``'s tensor or a view of it
    (``self.act(h.view(-1))``) and may update it in place."""
    for call in ctx.facts.calls:
        arguments = [*call.args, *(k.value for k in call.keywords)]
        if (
            call.lineno > after
            and any(_hands_on(a, name, ctx) for a in arguments)
            and any(_hands_on(a, name, ctx) for a in _mutated_arguments(call, ctx))
        ):
            return call
    return None


def graph_input_update(ctx: FunctionContext) -> Optional[str]:
    """Why the ordered op of the deferred calls may not go into this function's graph: the
    function updates in place a tensor that may be an input of the graph (a parameter's,
    through the names that may share its storage, an attribute's, a global's or a closure's:
    not one it made), and torch 2.13's AOTAutograd, which AOT backends and Inductor run, then
    fails where the caller passes inputs that share memory (a cache and a view of it): the
    op's effect token goes missing (``StopIteration``, "Expected positional argument for
    parameter tangents_token"). The original, whose call broke the graph, compiles."""
    memo = vars(ctx).setdefault("_graph_input_update", [])  # kept like a cached_property's
    if not memo:
        memo.append(_graph_input_update(ctx))
    return memo[0]


def _updated_values(node: ast.AST, ctx: FunctionContext) -> List[ast.expr]:
    """The values ``node`` may update in place as tensors: what a call updates
    (``updated_by_call``), the target of ``+=`` (in place for a tensor; a number is rebound, a
    tuple too, a list is extended: ``outputs += (weights,)``), the object of an item store
    (not ``cache["k"] = v``: a tensor takes no str key)."""
    if isinstance(node, ast.Call):
        return updated_by_call(node, ctx.symbols)
    if isinstance(node, ast.AugAssign):
        sequence = isinstance(node.value, (ast.Tuple, ast.List)) and (
            ctx.values.kind(node.target) is not Kind.TENSOR
        )
        return [] if sequence or _number(node.target, ctx) else [node.target]
    if isinstance(node, ast.Assign):
        return [
            target.value for target in node.targets
            if isinstance(target, ast.Subscript) and not _keyed(target)
        ]
    return []


def updates_visible_tensor(
    node: ast.AST, ctx: FunctionContext, outlives: Optional[Callable[[str], bool]] = None
) -> bool:
    """``x.add_(1)``, ``self.steps += 1`` on a tensor, ``x[i] = v``, an ``inplace=True`` call,
    ``out=x``, ``F.batch_norm(h, x, ...)`` (``module_state.updated_by_call``), of a tensor that
    outlives the call (``outlives`` of its root name; by default an input or
    ``self``'s state, ``aliasing.caller_visible``): with Inductor and ``aot_eager`` such
    updates are written back after the graph. A tensor made in the call is not, nor one made
    where it is updated (``x.new_empty(shape).bernoulli_(p)``)."""
    if outlives is None:
        outlives = lambda root: caller_visible(root, node, ctx)  # noqa: E731
    updated: List[ast.expr] = []
    if isinstance(node, ast.Call):
        updated = updated_by_call(node, ctx.symbols)
    elif isinstance(node, (ast.Assign, ast.AugAssign)):
        for target in assignment_targets(node):
            if isinstance(target, ast.Subscript) and ctx.values.kind(target.value) is Kind.TENSOR:
                updated.append(target.value)
            elif isinstance(node, ast.AugAssign) and ctx.values.kind(target) is Kind.TENSOR:
                updated.append(target)
    return any(may_alias(value, ctx) and outlives(root_name(value)) for value in updated)


def joined_update(node: Union[ast.stmt, ast.expr], ctx: FunctionContext) -> Optional[str]:
    """Why a fix at ``node`` may make the compiled call fail where the original runs: the
    function then updates in place, after it (or in a loop around it), a tensor it already
    held (an input, ``self``'s, one made before) and that it may have read before it, also
    through another name that may share its storage (``k = cache[:2]``, ``g = h``) or a call
    that updates what it is handed (``self.act(h)`` of an ``nn.ReLU(inplace=True)``, a method
    of the file). The fix joins the graphs before and after the break; where autograd
    records, AOTAutograd (AOT backends, Inductor) traces the backward of the joined graph when
    it compiles it, and fails on a tensor saved for the backward and updated after (eager
    fails only on a ``backward()`` the program may never call)."""
    function = ctx.region.function
    end = node.end_lineno or node.lineno
    loops = {id(inner) for loop in loops_around(function, node) for inner in walk(loop)}
    inside = {id(inner) for inner in walk(node)}
    skipped = inside | _function_reads(ctx)[0]
    for sub in walk(function):
        if id(sub) in inside or not (getattr(sub, "lineno", 0) > end or id(sub) in loops):
            continue
        values = _updated_values(sub, ctx)
        if isinstance(sub, ast.Call):
            values += _mutated_arguments(sub, ctx)
        updated = [_held_tensor(value) for value in values]
        updated += [name for value in values for name in _receiver_names(value, ctx)]
        for held in updated:
            if held is None:
                continue
            names = _sharing_names(held, ctx)
            if any(_held_before(name, node, sub, ctx) for name in names) and (
                _used_before(held, names, node, loops, skipped, ctx)
                or _made_saved_before(names, node, loops, ctx)
            ):
                return (
                    f"line {held.lineno} updates `{ast.unparse(held)}` in place after it: the "
                    "fix joins the graphs before and after the break, and where autograd "
                    "records, AOTAutograd (AOT backends, Inductor) fails compiling the joined "
                    "graph on a tensor saved for the backward and updated after"
                )
    return None


def _sharing_names(held: ast.expr, ctx: FunctionContext) -> Set[str]:
    """The names of the function that may share ``held``'s storage: its root, and the names
    bound to a view or alias of one of them, or that one of them is bound to (``k =
    cache[:2]``, ``g = h``, ``d = h.detach()``)."""
    names = {root_name(held)} - {""}
    bindings = _function_reads(ctx)[1]
    grown = True
    while grown:
        grown = False
        for name, sources in bindings:
            linked = {name} | sources
            if (name in names or sources & names) and not linked <= names:
                names |= linked
                grown = True
    return names


#: Tensor methods that give a view of their tensor, or the tensor itself.
_VIEWING_METHODS = frozenset({
    "view", "view_as", "reshape", "reshape_as", "detach", "t", "transpose", "permute",
    "expand", "expand_as", "narrow", "select", "squeeze", "unsqueeze", "flatten", "unflatten",
    "as_strided", "diagonal", "unfold", "movedim", "swapaxes", "chunk", "split", "unbind",
    "contiguous", "type_as", "to",
})


def _viewed_name(value: ast.expr) -> str:
    """The name whose tensor ``value`` may be or view: ``h`` of ``h``, ``h[:2]``, ``h.T``,
    ``h.view(-1)``, ``h.detach()``; "" for anything else (a new tensor)."""
    while True:
        if isinstance(value, ast.Subscript):
            value = value.value
        elif isinstance(value, ast.Attribute) and value.attr in _VIEW_ATTRIBUTES:
            value = value.value
        elif (
            isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and value.func.attr in _VIEWING_METHODS
        ):
            value = value.func.value
        else:
            return value.id if isinstance(value, ast.Name) else ""


def _function_reads(
    ctx: FunctionContext,
) -> Tuple[Set[int], List[Tuple[str, Set[str]]]]:
    """What ``joined_update`` asks of the whole function, once per function: the ids of the
    nodes that are no reads that may save a tensor for the backward (the receivers of updates
    in place, ``cache[:2] = v``; the values that only bind a view or an alias, ``z = y``,
    ``flat = h.view(-1)``), and each name bound to such a value with the name it views."""
    memo = vars(ctx).setdefault("_function_reads", [])  # kept like a cached_property's value
    if not memo:
        function = ctx.region.function
        skipped = {
            id(inner)
            for node in walk(function)
            for value in _updated_values(node, ctx)
            for inner in walk(value)
        }
        skipped |= {
            id(inner)
            for node in walk(function)
            if isinstance(node, ast.Assign) and _viewed_name(node.value)
            for inner in walk(node.value)
        }
        bindings = [
            (target.id, {_viewed_name(statement.value)} - {""})
            for statement in walk(function)
            if isinstance(statement, ast.Assign)
            for target in statement.targets
            if isinstance(target, ast.Name)
        ] + _holding_bindings(function, ctx)
        memo.append((skipped, bindings))
    return memo[0]


def _holding_bindings(function: FunctionNode, ctx: FunctionContext) -> List[Tuple[str, Set[str]]]:
    """Each name ``function`` binds to a value that may hold or be what other names hold,
    with those names: ``ts = [h]``, ``d = {"h": h}``, ``t, = (h,)``, ``for row in h``, ``(g
    := h)``, ``f = h.mul_``; not to a new tensor (``y = h * 2``), and not ``self`` or a module
    (whose updates are weighed where they are made)."""
    found: List[Tuple[str, Set[str]]] = []
    for node in walk(function):
        targets: List[ast.expr] = []
        value: Optional[ast.expr] = None
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets, value = assignment_targets(node), node.value
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            targets, value = [node.target], node.iter
        elif isinstance(node, ast.NamedExpr):
            targets, value = [node.target], node.value
        if value is None or not may_alias(value, ctx):
            continue
        sources = {
            sub.id for sub in walk(value)
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load)
            and sub.id != "self" and sub.id not in ctx.symbols.imports
        }
        found += [
            (name.id, sources) for target in targets for name in walk(target)
            if isinstance(name, ast.Name) and sources
        ]
    return found


def _used_before(
    held: ast.expr,
    names: Set[str],
    site: Union[ast.stmt, ast.expr],
    loops: Set[int],
    skipped: Set[int],
    ctx: FunctionContext,
) -> bool:
    """Whether an operation may have read ``held`` (``x``, ``self.cache``) or a name that may
    share its storage (``names``) before ``site``, or in a loop around it (the ids of
    ``loops``' nodes), and so may have saved it for the backward: a read that is not one of
    the ``skipped`` nodes (the site's own, ``_function_reads``)."""
    shown = ast.unparse(held)
    return any(
        isinstance(node, (ast.Name, ast.Attribute))
        and isinstance(node.ctx, ast.Load)
        and (node.lineno < site.lineno or id(node) in loops)
        and id(node) not in skipped
        and (ast.unparse(node) == shown or isinstance(node, ast.Name) and node.id in names)
        for node in walk(ctx.region.function)
    )


def _made_saved_before(
    names: Set[str], site: Union[ast.stmt, ast.expr], loops: Set[int], ctx: FunctionContext
) -> bool:
    """Whether a name of ``names`` is bound before ``site`` (or in a loop around it) to the
    result of an operation that may save its own output for the backward (``torch.sigmoid``,
    ``exp``, ``softmax``, a module whose ``forward`` ends in one), or to a part of one
    (``h, g = torch.sigmoid(a), b``, ``for row in torch.softmax(s, -1)``): every call but
    those of ``_OUTPUT_NOT_SAVED``, and ``**``."""
    for node in walk(ctx.region.function):
        bound = _bound_value(node)
        if bound is None or not (
            getattr(node, "lineno", 0) < site.lineno or id(node) in loops
        ):
            continue
        targets, value = bound
        if any(
            isinstance(n, ast.Name) and n.id in names for t in targets for n in walk(t)
        ) and _may_save_output(value):
            return True
    return False


def _bound_value(node: ast.AST) -> Optional[Tuple[List[ast.expr], ast.expr]]:
    """The targets and the value of an assignment, a walrus or a loop (its iterable)."""
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        return assignment_targets(node), node.value
    if isinstance(node, ast.NamedExpr):
        return [node.target], node.value
    if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        return [node.target], node.iter
    return None


#: Operations that make a new tensor and whose backward does not use their output:
#: factories, copies, joins, sums and products (which save their inputs), reductions to a sum
#: or a mean. Not here: those that may return their input itself (``to``, the dtype casts,
#: ``type_as``, ``as_tensor``, ``contiguous``, ``einsum("bi->bi", t)``: ``_PASSING_ON``).
_OUTPUT_NOT_SAVED = frozenset({
    "zeros", "ones", "empty", "full", "arange", "linspace", "eye", "tensor",
    "zeros_like", "ones_like", "empty_like", "full_like", "rand", "randn", "randint",
    "rand_like", "randn_like", "randint_like", "new_zeros", "new_ones", "new_empty",
    "new_full", "new_tensor", "clone", "cat", "concat", "concatenate", "stack", "add", "sub",
    "mul", "div", "matmul", "mm", "bmm", "linear", "sum", "mean", "masked_fill", "where",
})
#: Operations that may return what they are given (their receiver, or their first argument)
#: itself: what that is decides.
_PASSING_ON = frozenset({
    "to", "float", "half", "double", "bfloat16", "long", "int", "bool", "type_as",
    "as_tensor", "asarray", "contiguous", "cpu", "cuda", "detach", "view_as", "reshape",
    "view", "expand", "expand_as", "flatten", "squeeze", "unsqueeze", "transpose", "permute",
})


def _may_save_output(value: ast.expr) -> bool:
    """Whether ``value`` may be, or hold, the output of an operation that saves it for the
    backward (``_made_saved_before``): also through an operation that may hand back what it
    is given (``torch.softmax(s, -1).to(q.dtype)``)."""
    if isinstance(value, (ast.Tuple, ast.List)):
        return any(_may_save_output(element) for element in value.elts)
    if isinstance(value, (ast.Subscript, ast.Starred, ast.Attribute)):
        return _may_save_output(value.value)  # `self.attn(x)[1]`, `torch.sort(x)[0]`, `w.T`
    options = alternatives(value)
    if options:
        return any(_may_save_output(option) for option in options)
    if isinstance(value, ast.BinOp):
        return isinstance(value.op, ast.Pow)
    if not isinstance(value, ast.Call):
        return False
    name = short_name(value)
    if name in _PASSING_ON:
        given = value.func.value if isinstance(value.func, ast.Attribute) else None
        if given is None or isinstance(given, ast.Name) and given.id == "torch":
            given = value.args[0] if value.args else None
        return given is not None and _may_save_output(given)
    return name not in _OUTPUT_NOT_SAVED


def _held_before(
    name: str, site: Union[ast.stmt, ast.expr], update: ast.AST, ctx: FunctionContext
) -> bool:
    """Whether ``name`` may hold, where ``update`` is, a tensor made before ``site``:
    ``self``'s, a parameter's or a global's not bound anew on the way, or one bound on an
    earlier line (``global_attention_mask = torch.zeros_like(ids)`` after the site holds a
    new tensor)."""
    if name == "self":
        return True
    bindings, entry = reaching_bindings(name, update, ctx)
    local = name in scope_names(ctx.region.function)
    return entry and (not local or name in parameter_names(ctx.region.function)) or any(
        getattr(binding, "lineno", 0) < site.lineno for binding in bindings
    )


def _graph_input_update(ctx: FunctionContext) -> Optional[str]:
    for node in walk(ctx.region.function):
        for value in _updated_values(node, ctx):
            held = _held_tensor(value)
            if held is None:  # `cache.is_updated[i] = True`: an object's, Python state
                continue
            inputs = _input_names(ctx)  # only where something is updated in place
            if _state_of_self(held, ctx) or any(
                _holds_input(name, node, inputs, ctx)
                for name in sorted(_handed_names(value, ctx, unknown=False) & inputs)
            ):
                return _input_update_reason(value.lineno, ast.unparse(held))
    for call in ctx.facts.calls:  # `self.act(h)` of an `nn.ReLU(inplace=True)`, a helper
        if not call.args and not call.keywords:
            continue
        arguments = _mutated_arguments(call, ctx)
        inputs = _input_names(ctx) if arguments else set()
        handed = {n for a in arguments for n in _handed_names(a, ctx, unknown=False)} & inputs
        if not handed:
            continue
        held_name = next((n for n in sorted(handed) if _holds_input(n, call, inputs, ctx)), None)
        if held_name is not None:
            return _input_update_reason(call.lineno, held_name)
    return None


def _input_update_reason(line: int, value: str) -> str:
    return (
        f"line {line} updates `{value}` in place, which may be an input of the graph: with "
        "the ordered op of the deferred calls there, torch 2.13's AOTAutograd (AOT backends, "
        "Inductor) fails where the caller passes inputs that share memory"
    )


#: Attributes of a tensor that are views of it.
_VIEW_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "data", "real", "imag"})


def _held_tensor(value: ast.expr) -> Optional[ast.expr]:
    """What an update of ``value`` updates, through its indexing and method calls
    (``self.memory`` of ``self.memory[:4].mul_(0.5)``, ``h`` of ``h.view(-1)``); None for an
    attribute of an object other than ``self`` (``cache.is_updated``), whose update is of
    Python state or not followed."""
    while True:
        if isinstance(value, ast.Subscript):
            value = value.value
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
            value = value.func.value
        elif isinstance(value, ast.Attribute) and value.attr in _VIEW_ATTRIBUTES:
            value = value.value
        else:
            break
    if isinstance(value, ast.Attribute) and root_name(value) != "self":
        return None
    return value


def _receiver_names(value: ast.expr, ctx: FunctionContext) -> List[ast.expr]:
    """The names an update of ``value`` may update where ``value`` is computed, not a name:
    ``h`` of ``torch.as_tensor(h).mul_(2)``, of ``(g := h).mul_(2)``, of ``getattr(h,
    "mul_")(2)``, ``h`` and ``x`` of ``(h if c else x).mul_(2)`` (not the modules it calls
    through: ``torch``)."""
    if not isinstance(value, (ast.Call, ast.IfExp, ast.NamedExpr, ast.BoolOp)):
        return []
    return [
        sub for sub in walk(value)
        if isinstance(sub, ast.Name)
        and isinstance(sub.ctx, ast.Load)
        and sub.id not in ctx.symbols.imports
        and not (hasattr(builtins, sub.id) and sub.id not in ctx.local_names)
    ]


def _state_of_self(value: ast.expr, ctx: FunctionContext) -> bool:
    """A tensor that an attribute chain of ``self`` holds (``self.memory``, ``self.mem.state``,
    an element or a view of one: ``self.memory[:4]``, ``self.buf.view(-1)``): a buffer, a
    parameter, a tensor of a held object; not what a call of a submodule makes."""
    sides = alternatives(value)
    if sides:
        return any(_state_of_self(side, ctx) for side in sides)
    if isinstance(value, ast.Call):  # a view of its receiver, or one of its tensors handed
        kind = _call_kind(value, ctx)  # back (not `p=self.p` of `F.dropout(h, p=self.p)`)
        keywords = {id(k.value) for k in value.keywords}
        return kind in ("view", "through") and any(
            _state_of_self(source, ctx)
            for source in call_sources(value, kind)
            if id(source) not in keywords
        )
    if isinstance(value, ast.Subscript):
        return _state_of_self(value.value, ctx)
    return (
        isinstance(value, ast.Attribute)
        and root_name(value) == "self"
        and ctx.values.kind(value) is not Kind.STATIC
    )


def _input_names(ctx: FunctionContext) -> Set[str]:
    """The names that may hold a tensor that is an input of the function's graph, or a view of
    one: its parameters (not ``self``, nor the tuple and dict of ``*args`` and ``**kwargs``),
    the globals and closures' names it reads (not imported modules), and the locals some
    binding gives one of those, a view of it or a container holding it, or a tensor of
    ``self``'s (``z = y[0]``, ``a, b = x.chunk(2)``, ``for t in (q, k)``, ``h = self.buffer``).
    The bindings that reach an update then decide (``_holds_input``)."""
    memo = vars(ctx).setdefault("_input_names", [])  # kept like a cached_property's value
    if memo:
        return memo[0]
    function = ctx.region.function
    own = scope_names(function) - parameter_names(function)
    named = {node.id for node in walk(function) if isinstance(node, ast.Name)}
    packed = {a.arg for a in (function.args.vararg, function.args.kwarg) if a is not None}
    found = (named | parameter_names(function)) - own - packed - set(ctx.symbols.imports)
    found.discard("self")
    bindings = [
        (
            {n.id for t in targets for n in walk(t) if isinstance(n, ast.Name)} & own,
            _state_of_self(value, ctx),
            _handed_names(value, ctx, unknown=False),
        )
        for targets, value in map(_bound, walk(function))
        if targets
    ]
    grown = True
    while grown:
        grown = False
        for names, of_self, handed in bindings:
            if names - found and (of_self or handed & found):
                found |= names
                grown = True
    memo.append(found)
    return found


def _bound(node: ast.AST) -> Tuple[List[ast.expr], ast.expr]:
    """The targets and the value of a binding (``a = v``, ``a: T = v``, ``(a := v)``, ``for a
    in v``); no targets for other nodes."""
    if isinstance(node, ast.Assign):
        return list(node.targets), node.value
    if isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
        return [node.target], node.value
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return [node.target], node.iter
    return [], ast.Constant(None)


def _holds_input(
    name: str, at: ast.AST, inputs: Set[str], ctx: FunctionContext, depth: int = 0
) -> bool:
    """Whether ``name`` may hold one of the ``inputs`` (``_input_names``) where ``at`` updates
    it: its value on entry (a parameter's, a global's) reaches there, or a binding that reaches
    there gives it one (a view of one, a container holding one) or is not followed (unpacked,
    a loop's, a ``with``'s); not where every reaching binding makes a new tensor (``mask =
    torch.zeros_like(ids)`` before ``mask[:, 0] = 1``). An update in place (``mask += 1``,
    ``mask[:, 0] = 1``) keeps the tensor that reached it."""
    if name not in inputs or depth > 3:
        return name in inputs
    bindings, on_entry = reaching_bindings(name, at, ctx)
    if on_entry and name not in scope_names(ctx.region.function) - parameter_names(
        ctx.region.function
    ):
        return True
    for binding in bindings:
        stores = isinstance(binding, ast.Assign) and not any(
            _rebinds(target, name) for target in binding.targets
        )  # `mask[:, 0] = 1`: the name keeps its tensor
        if isinstance(binding, ast.AugAssign) or stores:
            if _holds_input(name, binding, inputs, ctx, depth + 1):
                return True
            continue
        targets, value = _bound(binding)
        if not (len(targets) == 1 and isinstance(targets[0], ast.Name)):
            return True
        if _state_of_self(value, ctx) or _handed_names(value, ctx, unknown=False) & inputs:
            return True
    return False


def _keyed(target: ast.Subscript) -> bool:
    """``d["key"]``: an item of a mapping (a tensor takes no str index)."""
    return isinstance(target.slice, ast.Constant) and isinstance(target.slice.value, str)


def _rebinds(target: ast.expr, name: str) -> bool:
    """Whether assigning to ``target`` binds ``name`` anew (``name``, ``a, name``), not
    stores into its object (``name[0]``, ``name.data``)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_rebinds(element, name) for element in target.elts)
    if isinstance(target, ast.Starred):
        return _rebinds(target.value, name)
    return isinstance(target, ast.Name) and target.id == name


def _number(target: ast.expr, ctx: FunctionContext) -> bool:
    """A Python value, an attribute the file only ever sets to number literals
    (``self.calls``), an item of a mapping of numbers (``self.counters["calls"]``), or a global
    that the module binds to a literal (``CALLS = 0``)."""
    from .totals import number_attribute, number_mapping_element  # they use its bindings

    if ctx.values.kind(target) is Kind.STATIC or number_attribute(target, ctx):
        return True
    if number_mapping_element(target, ctx):  # `self.counters["calls"] += 1`
        return True
    bound = ctx.symbols.assignments.get(target.id) if isinstance(target, ast.Name) else None
    return isinstance(bound, ast.Constant)


def aliasing_problem(
    results: Sequence[str],
    sides: Sequence[Dict[str, ast.expr]],
    node: ast.stmt,
    ctx: FunctionContext,
) -> Optional[str]:
    """Why selecting a tensor that may be an existing one changes what code after the ``if`` sees.

    The original binds the name to that very tensor, so an update in place afterwards (a method,
    an ``inplace=True`` call or submodule, a helper that mutates its argument) also changes the
    source (a buffer, an input); ``torch.where`` returns a new tensor, which breaks that link.
    """
    end = node.end_lineno or node.lineno
    for name in results:
        values = [side[name] for side in sides if name in side]
        if not any(may_alias(value, ctx) for value in values) and len(values) == 2:
            continue
        aliases = aliases_after(name, end, ctx)
        for other in aliases:
            call = _mutating_call(other, ctx, after=end)
            line = next((ln for ln in ctx.mutations.get(other, []) if ln > end), None)
            if call is not None or (other != name and line is not None):
                shown = f"`{ast.unparse(call.func)}()`" if call is not None else "an update"
                via = "" if other == name else f" (through `{other}`)"
                return (
                    f"`{name}` may be an existing tensor on one path and {shown} "
                    f"(line {call.lineno if call is not None else line}) may update it in "
                    f"place{via}; torch.where returns a new tensor"
                )
        kept = values if len(values) == 2 else [*values, ast.Name(id=name, ctx=ast.Load())]
        escape = min(
            (line for other in aliases if (line := escape_after(other, node, ctx))),
            default=None,
        )
        for value in (inner for each in kept for inner in _kept_tensors(each, ctx)):
            root = root_name(value)
            if root in ctx.mutations and may_alias(value, ctx):
                line = ctx.mutations[root][0]
                return (
                    f"`{ast.unparse(value)}` is updated in place (line {line}); "
                    "torch.where returns a new tensor, not the same one"
                )
            visible = may_alias(value, ctx) and caller_visible(root, node, ctx)
            if visible and escape:
                return (
                    f"one path keeps `{ast.unparse(value)}`, a tensor the caller can hold, and "
                    f"line {escape} hands the result on; torch.where returns a new tensor"
                )
            changing = _changing_call_after(node, ctx) if visible else None
            if changing is not None:
                return (
                    f"one path keeps `{ast.unparse(value)}`, a tensor the caller can hold, and "
                    f"`{ast.unparse(changing.func)}()` (line {changing.lineno}) may update it "
                    "in place; torch.where returns a new tensor"
                )
            alias = _aliased_before(value, node, ctx)
            if alias and escape:
                return (
                    f"one path keeps `{ast.unparse(value)}`, which line {alias} also hands to "
                    f"another name or container, and line {escape} hands the result on; "
                    "torch.where returns a new tensor"
                )
    return None


def _kept_tensors(value: ast.expr, ctx: FunctionContext) -> List[ast.expr]:
    """The tensors that ``value`` may be as they are, or views of: ``x`` of ``+x``
    (``Tensor.__pos__`` returns its tensor itself), of each side of ``x if flag else y`` and
    each operand of ``a and b`` (which give back one of them), and, for a call that may not
    make a new tensor, ``value`` and what it may be of (``x`` of
    ``(x if flag else y).float()``, whose own root is no name); else ``value``."""
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.UAdd):
        return _kept_tensors(value.operand, ctx)
    if isinstance(value, ast.IfExp):
        return [*_kept_tensors(value.body, ctx), *_kept_tensors(value.orelse, ctx)]
    if isinstance(value, ast.BoolOp):
        return [kept for operand in value.values for kept in _kept_tensors(operand, ctx)]
    if isinstance(value, ast.Call):
        kind = _call_kind(value, ctx)
        if kind != "fresh":
            sources = call_sources(value, kind)
            return [value, *(kept for source in sources for kept in _kept_tensors(source, ctx))]
    return [value]


def _changing_call_after(node: ast.stmt, ctx: FunctionContext) -> Optional[ast.Call]:
    """A call after ``node``, or in a loop around it, that may change state the caller holds
    (``module_state.call_changes_state``: ``self._decay()`` updating a buffer in place)."""
    function = ctx.region.function
    around = {id(inner) for loop in loops_around(function, node) for inner in walk(loop)}
    end = node.end_lineno or node.lineno
    return next(
        (
            call for call in ctx.facts.calls
            if (call.lineno > end or id(call) in around)
            and call_changes_state(call, function, ctx.region.owner, ctx.symbols)
        ),
        None,
    )


def aliases_after(name: str, end: int, ctx: FunctionContext) -> List[str]:
    """``name`` and the locals bound after line ``end`` to its tensor or a view of it, directly
    or through one another (``y = x``, ``y = x.view(-1)``, ``a, y = h, x``; not a container
    of it, ``outputs = (x,)``, which ``escape_after`` follows)."""
    found = [name]
    changed = True
    while changed:
        changed = False
        for binding in ctx.facts.bindings:
            if getattr(binding, "lineno", 0) <= end:
                continue
            for target in _bound_names(binding):
                value = _assigned_value(binding, target)
                if target in found or value is None:
                    continue
                if any(_hands_on(value, alias, ctx, containers=False) for alias in found):
                    found.append(target)
                    changed = True
    return found


def _bound_names(binding: ast.AST) -> List[str]:
    """The plain names an assignment binds (``a`` and ``b`` of ``a, b = ...``)."""
    targets: List[ast.expr] = []
    if isinstance(binding, ast.Assign):
        targets = list(binding.targets)
    elif isinstance(binding, ast.AnnAssign):
        targets = [binding.target]
    return [n.id for t in targets for n in walk(t) if isinstance(n, ast.Name)]


def _aliased_before(value: ast.expr, node: ast.stmt, ctx: FunctionContext) -> Optional[int]:
    """A line between the binding of the local ``value`` and ``node`` that hands its tensor to
    another name, an attribute, an item or a container (``residual = hidden_states``)."""
    if not (isinstance(value, ast.Name) and value.id in ctx.local_names):
        return None
    reaching, _ = reaching_bindings(value.id, node, ctx)
    start = max((getattr(b, "lineno", 0) for b in reaching), default=0)
    before = [  # the statements on the way to `node` that run before it
        statement
        for block in statement_blocks(ctx.region.function.body, node.lineno)[0]
        for statement in block
        if (statement.end_lineno or statement.lineno) < node.lineno
    ]
    return _handed_on_between(value.id, before, start, None, ctx)


def caller_visible(
    root: str,
    before: ast.AST,
    ctx: FunctionContext,
    depth: int = 0,
    following: FrozenSet[int] = frozenset(),
) -> bool:
    """Whether ``root`` may name a tensor from outside the call where ``before`` runs: ``self``'s
    state, a module global, a parameter that may not be rebound, or a local whose reaching
    assignment may hand such a tensor on (``h = x``, ``h = self.dropout(x)``, ``h = helper(x)``).
    ``following``: the augmented assignments weighed already (a loop reaches one again)."""
    if root == "self" or (root and root not in ctx.local_names):
        return True
    if depth > _DEPTH:
        return True
    reaching, parameter_reaches = reaching_bindings(root, before, ctx)
    for binding in reaching:
        if isinstance(binding, ast.AugAssign) and isinstance(binding.target, ast.Name):
            if id(binding) in following:
                continue  # `total += t` in a loop: it keeps what the other bindings give
            if caller_visible(  # `h += 1` keeps the tensor
                root, binding, ctx, depth + 1, following | {id(binding)}
            ):
                return True
            continue
        value = _assigned_value(binding, root)
        if value is None or hands_on_caller_tensor(value, binding, ctx, depth):
            return True  # a starred target, a loop variable, `with ... as`: not followed
    return parameter_reaches and ctx.values.is_parameter(root)


def _assigned_value(binding: ast.AST, name: str) -> Optional[ast.expr]:
    """The value ``binding`` gives ``name``: ``value`` of ``name = value`` or ``name: T = value``,
    ``value[1]`` of ``other, name = value`` (``b`` of ``a, name = a, b``); else None."""
    if isinstance(binding, ast.Assign) and len(binding.targets) == 1:
        target = binding.targets[0]
        if isinstance(target, ast.Name):
            return binding.value
        elements = target.elts if isinstance(target, ast.Tuple) else []
        if any(isinstance(e, ast.Starred) for e in elements):
            return None
        position = next(
            (i for i, e in enumerate(elements) if isinstance(e, ast.Name) and e.id == name), None
        )
        if position is None:
            return None
        value = binding.value
        if isinstance(value, ast.Tuple) and len(value.elts) == len(elements):
            return value.elts[position]
        element = ast.Subscript(value=value, slice=ast.Constant(value=position), ctx=ast.Load())
        return ast.copy_location(element, value)
    if isinstance(binding, ast.AnnAssign) and isinstance(binding.target, ast.Name):
        return binding.value
    return None


def hands_on_caller_tensor(
    value: ast.expr, at: ast.AST, ctx: FunctionContext, depth: int = 0
) -> bool:
    """Whether ``value``, evaluated at ``at``, may be a tensor from outside the call."""
    if not may_alias(value, ctx):
        return False
    if isinstance(value, ast.IfExp):
        return any(
            hands_on_caller_tensor(side, at, ctx, depth) for side in (value.body, value.orelse)
        )
    if isinstance(value, ast.UnaryOp):
        return hands_on_caller_tensor(value.operand, at, ctx, depth)
    if isinstance(value, ast.Call):
        if _call_kind(value, ctx) == "unknown":
            return True  # it may return anything: `self`'s state, a global
        return any(
            hands_on_caller_tensor(source, at, ctx, depth) for source in _call_sources(value, ctx)
        )
    if isinstance(value, ast.Subscript):
        if _element_read_again(value, ctx):
            return True  # the tuple or tensor it comes from hands it on too
        if _new_element(value, at, ctx, depth):
            return False
        if _element_of_layer_output(value, ctx):
            return True  # what the layer returns as a whole may be new, its elements not
    if isinstance(value, (ast.Name, ast.Attribute, ast.Subscript, ast.Starred)):
        return caller_visible(root_name(value), at, ctx, depth + 1)
    return True


def _element_read_again(value: ast.Subscript, ctx: FunctionContext) -> bool:
    """Whether ``value`` (``outputs[0]``, ``outputs[:2][0]``) takes an element of a local that
    another read may take too (``return h, outputs``)."""
    base, path = _element_base(value)
    return (
        isinstance(base, ast.Name)
        and bool(path)
        and base.id in ctx.local_names
        and _readers_of_element(base.id, path[0], ctx) > 1
    )


def _element_of_layer_output(value: ast.Subscript, ctx: FunctionContext) -> bool:
    """Whether ``value`` takes an element of what a submodule of this file returned, directly
    (``self.layer(x)[0]``) or through a local (``outputs[0]``)."""
    base, path = _element_base(value)
    if not path:
        return False
    calls = [base] if isinstance(base, ast.Call) else []
    if isinstance(base, ast.Name):
        for binding in ctx.facts.bindings:
            if _binds(binding, base.id):
                assigned = _assigned_value(binding, base.id)
                while isinstance(assigned, ast.Subscript):
                    assigned = assigned.value
                calls += [assigned] if isinstance(assigned, ast.Call) else []
    return any(
        not c.startswith("torch.")
        for call in calls
        if isinstance(call, ast.Call)
        for c in submodule_classes(call.func, ctx.region.owner, ctx.symbols) or []
    )


def _element_base(value: ast.expr) -> Tuple[Optional[ast.expr], Tuple[int, ...]]:
    """``outputs`` and ``(0,)`` for ``outputs[:2][0]``; None when a subscript is not constant."""
    path: Tuple[int, ...] = ()
    while isinstance(value, ast.Subscript):
        inner = element_path(value, path)
        if inner is None:
            return None, ()
        value, path = value.value, inner
    return value, path


def _new_element(value: ast.Subscript, at: ast.AST, ctx: FunctionContext, depth: int) -> bool:
    """Whether ``value``, an element of a tuple (``outputs[0]``, ``outputs[:2][0]``), is a new
    tensor that only this reference holds: the tuple is what a submodule of this file returned
    (``submodules.returns_new_tensor``), kept in a local from which nothing else reads that
    element."""
    base, path = _element_base(value)
    if base is None:
        return False
    while isinstance(base, ast.Tuple) and path and path[0] < len(base.elts):
        base, path = base.elts[path[0]], path[1:]
    if not path or depth > _DEPTH or isinstance(base, ast.Starred):
        return not path and not hands_on_caller_tensor(base, at, ctx, depth + 1)
    if isinstance(base, ast.Call):
        return returns_new_tensor(base, path, ctx.region.owner, ctx.symbols)
    if not (isinstance(base, ast.Name) and base.id in ctx.local_names):
        return False
    if _readers_of_element(base.id, path[0], ctx) > 1:
        return False
    reaching, parameter_reaches = reaching_bindings(base.id, at, ctx)
    if not reaching or (parameter_reaches and ctx.values.is_parameter(base.id)):
        return False
    for binding in reaching:
        assigned = _assigned_value(binding, base.id)
        if assigned is None:
            return False
        element = assigned
        for index in path:
            element = ast.Subscript(value=element, slice=ast.Constant(value=index), ctx=ast.Load())
        if not (
            isinstance(element, ast.Subscript) and _new_element(element, binding, ctx, depth + 1)
        ):
            return False
    return True


def _readers_of_element(name: str, index: int, ctx: FunctionContext) -> int:
    """How many reads of ``name`` may take its element ``index``: a subscript that covers it
    (``name[0]``, ``name[:2]``), or any use but ``isinstance``/``len`` (counted as many)."""
    count = 0
    parents = parent_map(ctx.region.function)
    for node in walk(ctx.region.function):
        if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)):
            continue
        parent = parents.get(id(node))
        if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name):
            if parent.func.id in ("isinstance", "len") and node is not parent.func:
                continue
        if isinstance(parent, ast.Subscript) and parent.value is node:
            taken = parent.slice
            if not isinstance(taken, ast.Slice):
                position = constant_int(taken)
                if position is not None and 0 <= position != index:
                    continue
            elif taken.step is None:
                low = 0 if taken.lower is None else constant_int(taken.lower)
                high = constant_int(taken.upper) if taken.upper is not None else None
                if low is not None and low >= 0 and (
                    low > index or (high is not None and 0 <= high <= index)
                ):
                    continue
        count += 1 if isinstance(parent, ast.Subscript) else 2
    return count


def reaching_bindings(
    root: str, before: ast.AST, ctx: FunctionContext
) -> Tuple[List[ast.AST], bool]:
    """The bindings of ``root`` that may give its value where ``before`` starts, and whether its
    value on entry may still be there (no binding before it on every path).

    Flow-insensitive below the last binding on the path to ``before``: every later binding,
    and every binding in a loop around ``before``, counts.
    """
    line = getattr(before, "lineno", 0)
    blocks, loops = statement_blocks(ctx.region.function.body, line)
    bindings = [b for b in ctx.facts.bindings if _binds(b, root)]
    in_loops = [b for b in bindings if any(_within(b, loop) for loop in loops)]
    earlier = [b for b in bindings if getattr(b, "lineno", 0) < line]
    dominating = [b for b in earlier if any(any(b is s for s in block) for block in blocks)]
    if not dominating:
        return _unique(earlier + in_loops), True
    last = max(getattr(b, "lineno", 0) for b in dominating)
    later = [b for b in earlier if getattr(b, "lineno", 0) >= last]
    return _unique(later + in_loops), False


def reaching_values(ctx: FunctionContext) -> Reaching:
    """For ``dtypes.Dtypes``: the values that may give a name its value where a node starts,
    each with its binding (``reaching_bindings``); None where its value on entry may still be
    there, or a binding does not assign a value (``for``, ``+=``, ``with``)."""

    def reaching(name: str, at: ast.AST) -> Optional[List[Tuple[ast.expr, ast.AST]]]:
        bindings, entry = reaching_bindings(name, at, ctx)
        values = [(_assigned_value(binding, name), binding) for binding in bindings]
        if entry or not values or any(value is None for value, _ in values):
            return None
        return [(value, binding) for value, binding in values if value is not None]

    return reaching


def statement_blocks(
    block: List[ast.stmt], line: int
) -> Tuple[List[List[ast.stmt]], List[ast.stmt]]:
    """The statement lists from ``block`` down to the statement at ``line`` (outermost first:
    the last one holds it), and the loops on the way."""
    blocks: List[List[ast.stmt]] = [block]
    loops: List[ast.stmt] = []
    while True:
        holder = next((s for s in block if s.lineno <= line <= (s.end_lineno or s.lineno)), None)
        if holder is None or holder.lineno == line:
            return blocks, loops
        inner = next(
            (b for b in child_blocks(holder) if b[0].lineno <= line <= (b[-1].end_lineno or 0)),
            None,
        )
        if inner is None:
            return blocks, loops
        if isinstance(holder, (ast.For, ast.AsyncFor, ast.While)):
            loops.append(holder)
        blocks.append(inner)
        block = inner


def _binds(binding: ast.AST, root: str) -> bool:
    targets: List[ast.AST] = []
    if isinstance(binding, ast.Assign):
        targets = list(binding.targets)
    elif isinstance(binding, ast.AnnAssign):
        targets = [binding.target] if binding.value is not None else []  # `z: T` binds nothing
    elif isinstance(binding, (ast.AugAssign, ast.NamedExpr, ast.For, ast.AsyncFor)):
        targets = [binding.target]
    elif isinstance(binding, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in binding.items if item.optional_vars]
    return any(
        isinstance(n, ast.Name) and n.id == root for target in targets for n in walk(target)
    )


def _within(node: ast.AST, outer: ast.stmt) -> bool:
    line = getattr(node, "lineno", 0)
    return outer.lineno < line <= (outer.end_lineno or outer.lineno)


def _unique(nodes: List[ast.AST]) -> List[ast.AST]:
    return list({id(node): node for node in nodes}.values())


#: Methods that keep their arguments in the container they are called on.
_KEEPING_METHODS = frozenset({"append", "extend", "insert", "add", "update", "setdefault"})


def escape_after(name: str, node: ast.stmt | ast.expr, ctx: FunctionContext) -> Optional[int]:
    """The line after ``node`` where ``name`` leaves the function (a return, a store into an
    attribute or an item, a yield), or goes into a container that may (``states + (h,)``,
    ``[h]``, ``cache.append(h)``), or None."""
    end = node.end_lineno or node.lineno
    return _handed_on_between(name, [ctx.region.function], end, None, ctx, locals_too=False)


def _handed_on_between(
    name: str,
    roots: Sequence[ast.AST],
    start: int,
    end: Optional[int],
    ctx: FunctionContext,
    locals_too: bool = True,
) -> Optional[int]:
    """A line of ``roots`` after ``start`` (and before ``end``) that hands ``name``'s tensor
    on: a return or yield, a store into an attribute, an item or a global or nonlocal name
    (``locals_too``: any name), a container display, a method or function that keeps its
    argument; None."""
    outer = outer_names(ctx.region.function)
    consumed = {  # `torch.cat((h, x))`: a display that a new tensor is made of
        id(argument)
        for root in roots
        for node in walk(root)
        if isinstance(node, ast.Call) and _call_kind(node, ctx) == "fresh"
        for argument in node.args
    }
    for sub in (node for root in roots for node in walk(root)):
        line = getattr(sub, "lineno", 0)
        if line <= start or (end is not None and line >= end) or id(sub) in consumed:
            continue
        values = _kept_values(sub, outer, locals_too)
        if isinstance(sub, (ast.Return, ast.Yield, ast.YieldFrom)) and sub.value is not None:
            values = [sub.value]
        elif isinstance(sub, (ast.Tuple, ast.List, ast.Set, ast.Dict)) and not isinstance(
            getattr(sub, "ctx", None), ast.Store
        ):
            values = [sub]
        elif isinstance(sub, ast.Call) and _keeps_argument(sub, ctx):
            values = [*sub.args, *(k.value for k in sub.keywords)]
        if any(_hands_on(value, name, ctx) for value in values):
            return line
    return None


def _hands_on(
    value: ast.expr, name: str, ctx: FunctionContext, containers: bool = True
) -> bool:
    """Whether ``value`` is ``name``'s tensor itself or a view of it (``name.view(-1)``,
    ``name[0]``, a call that may hand it back), or (``containers``) holds one in a container;
    not a new tensor computed from it."""
    return name in _handed_names(value, ctx, containers)


def alternatives(value: ast.expr) -> List[ast.expr]:
    """The values ``value`` may be: both sides of ``a if c else b``, each operand of
    ``and``/``or``, the value of ``(y := x)``; none for other expressions."""
    if isinstance(value, ast.IfExp):
        return [value.body, value.orelse]
    if isinstance(value, ast.BoolOp):
        return list(value.values)
    return [value.value] if isinstance(value, ast.NamedExpr) else []


def _handed_names(
    value: ast.expr, ctx: FunctionContext, containers: bool = True, unknown: bool = True
) -> Set[str]:
    """The names whose tensor ``value`` may be or hold (``_hands_on``); with ``unknown``
    false, a call that ``call_kind`` cannot place (another file's module or function) is
    taken to make a new tensor."""
    if isinstance(value, ast.Name):
        return {value.id}
    if isinstance(value, (ast.Tuple, ast.List, ast.Set, ast.Dict, ast.Starred)):
        if not containers:
            return set()
        if isinstance(value, ast.Starred):
            return _handed_names(value.value, ctx, unknown=unknown)
        elements = value.values if isinstance(value, ast.Dict) else value.elts
        return {n for element in elements for n in _handed_names(element, ctx, unknown=unknown)}
    parts = alternatives(value)  # either value of `a if c else b`, `(y := x)`
    if isinstance(value, ast.Call):
        kind = _call_kind(value, ctx)
        parts = call_sources(value, kind) if unknown or kind != "unknown" else []
    elif isinstance(value, (ast.Attribute, ast.Subscript)):
        parts = [value.value]
    return {n for part in parts for n in _handed_names(part, ctx, containers, unknown)}


_TRANSPOSING = {"t", "transpose", "permute", "T", "mT", "H", "mH", "movedim", "swapaxes"}


def _transposes(value: Optional[ast.expr]) -> bool:
    """Whether ``value`` ends in an operation that reorders its input's dimensions."""
    if isinstance(value, ast.Call):
        value = value.func
    return isinstance(value, ast.Attribute) and value.attr in _TRANSPOSING


#: Views that leave gaps between their elements (or repeat them): torch.where of them is dense.
_STRIDED_VIEWS = {"expand", "expand_as", "narrow", "select", "diagonal", "unfold", "as_strided"}


def _strided_view(value: ast.expr) -> bool:
    """Whether ``value`` is a view with gaps between its elements: a slice or an int index
    after the first dimension (``h[:, :half]``, ``x[..., 0]``), a step (``x[::2]``), or
    ``expand``, ``narrow``, ``select`` and the like."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        return value.func.attr in _STRIDED_VIEWS
    if not isinstance(value, ast.Subscript):
        return False
    index = value.slice
    elements = index.elts if isinstance(index, ast.Tuple) else [index]
    for position, element in enumerate(elements):
        later = position > 0 or any(
            isinstance(e, ast.Constant) and e.value is Ellipsis for e in elements[:position]
        )
        if isinstance(element, ast.Slice) and (element.step is not None or later and (
            element.lower is not None or element.upper is not None
        )):
            return True
        if later and isinstance(element, ast.Constant) and type(element.value) is int:
            return True
    return False


def layout_problem(
    pairs: Sequence[Tuple[Optional[ast.expr], Optional[ast.expr]]],
) -> Optional[str]:
    """Why the two paths' tensors may differ in memory layout, or from the dense tensor that
    torch.where makes (the helper would keep the Python branch: a second break)."""
    for if_true, if_false in pairs:
        if _transposes(if_true) != _transposes(if_false):
            value = if_true if _transposes(if_true) else if_false
            assert value is not None  # the two differ, so one transposes: not None
            return f"`{ast.unparse(value)}` has another memory layout than the other path's tensor"
        for value in (if_true, if_false):
            if value is not None and _strided_view(value):
                return (
                    f"`{ast.unparse(value)}` is a view with gaps between its elements, and "
                    "torch.where makes a dense tensor: the helper would keep the branch"
                )
    return None


def _mutated_arguments(call: ast.Call, ctx: FunctionContext) -> List[ast.expr]:
    """The arguments ``call`` may update in place: what an ``inplace=True`` call, one with
    ``out=`` or given running statistics updates (``module_state.updated_by_call``); all it is
    handed where it calls a submodule built with ``inplace=True`` (also as an element of a
    container: ``self.acts[0](h)``, ``for act in self.acts: h = act(h)``) or, in a file that
    builds modules that work in place (``_builds_in_place``), a module whose classes the
    analysis does not know (``getattr(self, "act")(h)``, one taken from a module-level dict);
    and the arguments of the parameters that a function or module ``forward`` of the file it
    runs updates in place (also through ``checkpoint`` and ``partial``)."""
    func = call.func
    receiver = func.value if isinstance(func, ast.Attribute) else None
    updated = [value for value in updated_by_call(call, ctx.symbols) if value is not receiver]
    made = called_through(call)  # `checkpoint(layer, h)` runs `layer(h)`
    handed = [a.value if isinstance(a, ast.Starred) else a for a in made.args]
    handed += [k.value for k in made.keywords]
    if _built_in_place(made) and is_torch_function(ctx.symbols.qualified_name(made.func) or ""):
        updated += handed[:1]  # `F.relu(h, **{"inplace": True})`
    owner, function = ctx.region.owner, ctx.region.function
    if _runs_unknown_module(made, function, owner, ctx.symbols) or _runs_unknown_code(made, ctx):
        return updated + handed + _callee_holders(made.func, ctx)
    for callee, bound in _callees_in_file(made, ctx):
        changed = _parameters_updated(callee, ctx.symbols) & _bound_parameters(callee, bound)
        for parameter, argument in _arguments_by_parameter(made, callee, bound):
            if parameter in changed or parameter is None and changed:
                updated.append(argument)
    return updated


def _callee_holders(func: ast.expr, ctx: FunctionContext) -> List[ast.expr]:
    """What a callable the analysis cannot name may update besides what it is handed: the
    object of ``getattr(h, "mul_")``, a local bound to a bound method (``f = h.mul_``; not
    one bound to a module of ``self``)."""
    if isinstance(func, ast.Call) and short_name(func) == "getattr" and func.args:
        return func.args[:1]
    function = ctx.region.function
    local = isinstance(func, ast.Name) and binds_locally(function, func.id)
    return [func] if local and module_expression(func, function) is None else []


def _runs_unknown_module(
    call: ast.Call, function: FunctionNode, owner: Optional[ClassInfo], symbols: ModuleSymbols
) -> bool:
    """Whether ``call``, in ``function`` (a method of ``owner``), runs a module of ``self``
    that may update what it is handed and whose code the analysis does not read
    (``_mutated_arguments``): one built with ``inplace=True``, or, in a file that builds
    modules that work in place (``_builds_in_place``), one whose class is not known
    (``self.act = ACTS["relu"]``), a class of the file whose ``forward`` is inherited from
    another module (a subclass of ``nn.ReLU``), a torch module where the file sets
    ``inplace`` after building (``m.inplace = True``), or one reached through another
    (``self.encoder.act(h)``)."""
    # `module_expression` reads `act.forward(h)` as `act(h)`
    module = module_expression(call.func, function) if owner is not None else None
    if owner is None:
        return False
    if module is None:
        return _through_other_module(call.func, function) and _builds_in_place(symbols)
    if attribute_of(module) in _in_place_submodules(owner.node):
        return True
    if not _builds_in_place(symbols):
        return False
    classes = held_classes(module, owner, symbols)
    return classes is None or any(
        name in symbols.classes and _forward_read(symbols.classes[name], symbols) is None
        or name not in symbols.classes and _sets_in_place_later(symbols.tree)
        for name in classes
    )


def _through_other_module(func: ast.expr, function: FunctionNode) -> bool:
    """``self.encoder.act``, ``self.blocks[0].norm``: what a module of ``self`` holds; also a
    local bound to one (``norm = self.block.norm``)."""
    if isinstance(func, ast.Name) and binds_locally(function, func.id):
        return any(
            _through_other_module(node.value, function)
            for node in walk(function)
            if isinstance(node, ast.Assign) and node.value is not func and any(
                isinstance(t, ast.Name) and t.id == func.id for t in node.targets
            )
        )
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, (ast.Attribute, ast.Subscript))
        and root_name(func.value) == "self"
    )


def _runs_unknown_code(call: ast.Call, ctx: FunctionContext) -> bool:
    """Whether ``call`` runs code that may update what it is handed and that the analysis
    cannot name: an in-place method taken by name or as a value (``getattr(h, "mul_")(2)``,
    ``f = h.mul_``), a module-level object built to work in place (``ACT =
    nn.ReLU(inplace=True)``), and, in a file that builds modules that work in place
    (``_builds_in_place``), a module of ``self`` computed at run time (``next(iter(
    self.acts))(h)``) or handed to a function that calls what it is handed
    (``functools.reduce(lambda t, m: m(t), self.acts, h)``)."""
    func, symbols = call.func, ctx.symbols
    function = ctx.region.function
    if _names_in_place_method(func, ctx):
        return True
    if isinstance(func, ast.Name) and not binds_locally(function, func.id):
        value = symbols.assignments.get(func.id)
        if isinstance(value, ast.Call) and _built_in_place(value):
            return True  # `ACT(h)` of `ACT = nn.ReLU(inplace=True)`
    if not _builds_in_place(symbols):
        return False
    if isinstance(func, (ast.Call, ast.Subscript)) and taken_from_self(func):
        return ctx.region.owner is None or module_expression(func, function) is None
    return short_name(call) in CALLING and any(
        isinstance(argument, ast.Lambda) or taken_from_self(argument)
        for argument in call.args
    )  # `functools.reduce(lambda t, m: m(t), self.acts, h)`


@node_memo
def _forwards_replaced(tree: ast.Module) -> bool:
    """Whether the file puts other code in the place of a ``forward`` or a ``__call__``: a
    class body binds the name (``forward = _fast``), or the file stores into such an
    attribute (``Scale.forward = f``, ``self.block.forward = f``) or names one to
    ``setattr``: no ``forward`` of the file is then known to be the one that runs."""
    special = ("forward", "__call__")
    return any(
        isinstance(node, ast.ClassDef) and any(
            isinstance(statement, (ast.Assign, ast.AnnAssign)) and any(
                isinstance(target, ast.Name) and target.id in special
                for target in assignment_targets(statement)
            )
            for statement in node.body
        )
        or isinstance(node, ast.Attribute) and node.attr in special
        and isinstance(node.ctx, ast.Store)
        or isinstance(node, ast.Call) and short_name(node) == "setattr" and any(
            isinstance(argument, ast.Constant) and argument.value in special
            for argument in node.args
        )
        for node in walk(tree)
    )


def _names_in_place_method(func: ast.expr, ctx: FunctionContext) -> bool:
    """``getattr(h, "mul_")``, or a local bound to ``h.mul_``: an in-place method of a tensor
    called under another name."""
    if isinstance(func, ast.Call) and short_name(func) == "getattr" and len(func.args) > 1:
        name = func.args[1]
        return isinstance(name, ast.Constant) and isinstance(name.value, str) and (
            in_place_name(name.value)
        )
    return isinstance(func, ast.Name) and any(
        isinstance(value, ast.Attribute) and in_place_name(value.attr)
        for value in ctx.values.assignments_of(func.id)
    )


def _built_in_place(call: ast.Call) -> bool:
    """``nn.ReLU(inplace=True)``, ``nn.LeakyReLU(0.2, True)``, ``nn.ReLU(**{"inplace":
    True})`` (not options unpacked from a name, whose keys are not seen)."""
    return builds_in_place_module(call) or any(
        k.arg == "inplace" and not _false(k.value)
        or k.arg is None and isinstance(k.value, ast.Dict) and any(
            isinstance(key, ast.Constant) and key.value == "inplace" for key in k.value.keys
        )
        for k in call.keywords
    )


def _nested_function(function: FunctionNode, name: str) -> Optional[FunctionNode]:
    """The function named ``name`` that ``function`` defines inside it, if one."""
    return next(
        (node for node in functions_by_name(function).get(name, []) if node is not function),
        None,
    )


@node_memo
def _sets_in_place_later(tree: ast.Module) -> bool:
    """Whether the file sets ``inplace`` on modules after building them (``m.inplace = True``,
    ``setattr(m, "inplace", True)``, in a loop over ``self.modules()`` or a function handed to
    ``apply``); found once per module."""
    return any(
        isinstance(node, ast.Attribute) and node.attr == "inplace"
        and isinstance(node.ctx, ast.Store)
        or isinstance(node, ast.Constant) and node.value == "inplace"
        for node in walk(tree)
    )


def _arguments_by_parameter(
    call: ast.Call, function: Callee, bound: bool
) -> List[Tuple[Optional[str], ast.expr]]:
    """Each argument of ``call`` with the parameter of ``function`` that receives it (after
    ``self`` where it is ``bound``; its ``*args`` or ``**kwargs`` for the others); None where
    that is not known (what ``*xs`` or ``**options`` unpacks)."""
    arguments = function.args
    positional = [a.arg for a in arguments.posonlyargs + arguments.args][int(bound):]
    named = {a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs}
    rest = arguments.vararg.arg if arguments.vararg else None
    options = arguments.kwarg.arg if arguments.kwarg else None
    pairs: List[Tuple[Optional[str], ast.expr]] = []
    for index, argument in enumerate(call.args):
        if isinstance(argument, ast.Starred):
            pairs.append((None, argument.value))
        else:
            pairs.append((positional[index] if index < len(positional) else rest, argument))
    for keyword in call.keywords:
        known = keyword.arg if keyword.arg in named else options
        pairs.append((None if keyword.arg is None else known, keyword.value))
    return pairs


def _parameters_updated(
    function: Union[FunctionNode, ast.Lambda], symbols: ModuleSymbols, through_holders: bool = True
) -> FrozenSet[str]:
    """The parameters of ``function`` (``*args`` and ``**kwargs`` too) whose objects it
    updates in place (``_updates_handed_tensor``): by their own name, unless bound to another
    value first (``mask = torch.ones(n)``, then ``mask[i] = 0``, updates a new tensor), or
    (``through_holders``) through a name it binds to what they hold (``holders``)."""
    memo = vars(symbols).setdefault("_parameters_updated", {})  # like a cached_property's
    key = (id(function), through_holders)
    if key not in memo:
        owner = next(
            (info for info in symbols.classes.values() if function in info.methods.values()),
            None,
        )  # its class: what its modules return is known
        memo[key] = (function, frozenset())  # a recursive call adds nothing
        updated = set()
        for name in parameter_names(function):
            names = {name}
            if through_holders and not isinstance(function, ast.Lambda):
                names = holders(function, frozenset({name}), owner, symbols)
            if any(
                _updates_handed_tensor(sub, names, owner, symbols) and any(
                    _updates_handed_tensor(sub, {held}, owner, symbols)
                    and not _bound_anew_before(sub, held, function, names, owner, symbols)
                    for held in names
                )
                or _hands_to_updating_function(sub, names, owner, symbols)
                or _hands_to_updating_module(sub, names, function, owner, symbols, through_holders)
                for sub in walk(function)
            ):
                updated.add(name)
        memo[key] = (function, frozenset(updated))
    return memo[key][1]


def _hands_to_updating_function(
    node: ast.AST, names: AbstractSet[str], owner: Optional[ClassInfo], symbols: ModuleSymbols
) -> bool:
    """``bump_(t)`` of a function of the file that updates that parameter in place by its own
    name, handed what a name of ``names`` holds (``bump_(t[0].view(-1))``), in a method of
    ``owner``."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return False
    callee = symbols.functions.get(node.func.id)
    if callee is None:
        return False
    changed = _parameters_updated(callee, symbols, through_holders=False)
    return any(
        (parameter in changed or parameter is None and changed)
        and hands_on(argument, set(names), owner, symbols)
        for parameter, argument in _arguments_by_parameter(node, callee, False)
    )


def _hands_to_updating_module(
    node: ast.AST,
    names: AbstractSet[str],
    function: Union[FunctionNode, ast.Lambda],
    owner: Optional[ClassInfo],
    symbols: ModuleSymbols,
    unknown_too: bool,
) -> bool:
    """``self.block(t)`` (also ``checkpoint(self.block, t)``, ``layer(t)`` over
    ``self.layers``), in a method of ``owner``, handed a name of ``names``: a module of a
    class of this file whose ``forward`` updates that parameter in place, or (``unknown_too``)
    a module that ``_runs_unknown_module`` cannot read (``_builds_in_place`` asks without:
    what the file's own forwards update decides it)."""
    if owner is None or not isinstance(node, ast.Call) or isinstance(function, ast.Lambda):
        return False
    made = called_through(node)
    if unknown_too and _runs_unknown_module(made, function, owner, symbols):
        return any(
            hands_on(argument, set(names), owner, symbols)
            for argument in [*made.args, *(k.value for k in made.keywords)]
        )
    for forward, bound in _module_forwards(made, function, owner, symbols):
        changed = _parameters_updated(forward, symbols, unknown_too)
        changed &= _bound_parameters(forward, bound)
        if any(
            (parameter in changed or parameter is None and changed)
            and hands_on(argument, set(names), owner, symbols)
            for parameter, argument in _arguments_by_parameter(made, forward, bound)
        ):
            return True
    return False


def _bound_anew_before(
    node: ast.AST,
    name: str,
    function: ast.AST,
    held: AbstractSet[str],
    owner: Optional[ClassInfo],
    symbols: ModuleSymbols,
) -> bool:
    """Whether ``name`` holds, at ``node``, a value of its own: an earlier statement of a
    block that holds ``node`` binds it to a value that holds nothing of what the names of
    ``held`` hold (``mask = torch.ones(n)`` before ``mask[i] = 0``; not under an ``if`` of
    its own, nor ``h = h.view(-1)``, a view of the caller's tensor), and nothing on the way
    (in a loop that holds ``node`` too) binds it otherwise."""
    for parent in walk(function):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(parent, field, None)
            if not isinstance(block, list):
                continue
            for index, statement in enumerate(block):
                if not _binds_new_value(statement, name, held, owner, symbols):
                    continue
                way = next(
                    (
                        block[index + 1:end + 1]
                        for end, later in enumerate(block[index + 1:], index + 1)
                        if later is node or encloses(later, node)
                    ),
                    None,
                )
                if way is not None and not _binds_otherwise(way, node, name, held, owner, symbols):
                    return True
    return False


def _binds_new_value(
    statement: ast.AST,
    name: str,
    held: AbstractSet[str],
    owner: Optional[ClassInfo],
    symbols: ModuleSymbols,
) -> bool:
    """``name = <value>`` of a value that holds nothing of what the names of ``held`` hold."""
    return (
        isinstance(statement, (ast.Assign, ast.AnnAssign))
        and statement.value is not None
        and any(isinstance(t, ast.Name) and t.id == name for t in assignment_targets(statement))
        and not hands_on(statement.value, set(held), owner, symbols)
    )


def _binds_otherwise(
    statements: List[ast.stmt],
    node: ast.AST,
    name: str,
    held: AbstractSet[str],
    owner: Optional[ClassInfo],
    symbols: ModuleSymbols,
) -> bool:
    """Whether ``statements`` bind ``name`` (outside ``node``) otherwise than to a value of
    its own (``_binds_new_value``): to a view, in a loop, with ``+=``."""
    inside = {id(sub) for sub in walk(node)}
    fresh = {
        id(target)
        for statement in statements
        for sub in walk(statement)
        if isinstance(sub, (ast.Assign, ast.AnnAssign))
        and _binds_new_value(sub, name, held, owner, symbols)
        for target in assignment_targets(sub)
    }
    return any(
        name in names_bound_by(sub) and id(sub) not in fresh | inside
        for statement in statements
        for sub in walk(statement)
    )


def _builds_in_place(symbols: ModuleSymbols) -> bool:
    """Whether the file builds a module that works in place (``nn.ReLU(inplace=True)``,
    ``nn.LeakyReLU(0.2, True)``, ``act_layer(inplace=True)``, ``nn.ReLU(**options)``), sets
    ``inplace`` later (``_sets_in_place_later``), defines a ``forward``, a ``__call__`` or a
    lambda that updates what it is handed in place, or puts other code in a ``forward``'s
    place (``_forwards_replaced``): only then may a module the analysis cannot name update
    its arguments (a module of another file handed in is not seen)."""
    kept = vars(symbols).get("_builds_in_place")  # like a cached_property's value
    if kept is None:
        kept = vars(symbols)["_builds_in_place"] = _sets_in_place_later(symbols.tree) or any(
            isinstance(node, ast.Call) and _built_in_place(node)
            for node in walk(symbols.tree)
        ) or _forwards_replaced(symbols.tree) or any(
            _parameters_updated(forward, symbols, through_holders=False)
            & _bound_parameters(forward, not is_staticmethod(forward))
            for info in symbols.classes.values()
            for forward in [info.methods.get("forward"), info.methods.get("__call__")]
            if forward is not None
        ) or any(  # `self.fn = lambda t: t.mul_(2)`
            isinstance(node, ast.Lambda) and _parameters_updated(node, symbols, False)
            for node in walk(symbols.tree)
        )
    return kept


def _false(value: ast.expr) -> bool:
    return isinstance(value, ast.Constant) and not value.value


def _updates_handed_tensor(
    node: ast.AST, names: AbstractSet[str], owner: Optional[ClassInfo], symbols: ModuleSymbols
) -> bool:
    """``t.mul_(0.5)``, ``F.relu(t, inplace=True)``, ``t += 1``, ``t[m] = 0``, ``t[i][j] -= 1``
    of a name in ``names`` (in a method of ``owner``): an update in place of what may be a
    tensor (``module_state.updates_in_place``; not ``outputs += (w,)``, which extends a
    tuple, nor ``cache.flags[i] = True``, a store into another object's attribute)."""
    if isinstance(node, ast.Call):
        return updates_in_place(node, set(names), owner, symbols)
    if isinstance(node, ast.AugAssign):
        return _element_of(node.target) in names and not isinstance(
            node.value, (ast.Tuple, ast.List)
        )
    return isinstance(node, ast.Assign) and any(
        isinstance(target, ast.Subscript)
        and _element_of(target) in names
        and not _keyed(target)
        for target in node.targets
    )


def _element_of(value: ast.expr) -> str:
    """``t`` of ``t``, ``t[i]`` or ``t[i][j]``: the name whose object an update of ``value``
    updates ("" through an attribute: ``cache.flags[i]``)."""
    while isinstance(value, ast.Subscript):
        value = value.value
    return value.id if isinstance(value, ast.Name) else ""


def _callees_in_file(call: ast.Call, ctx: FunctionContext) -> List[Tuple[Callee, bool]]:
    """The functions of this file that ``call`` may run, each with whether ``self`` is bound
    (its first parameter receives no argument): a module function, a method of the class
    (``self.norm_(h)``), or the ``forward`` of a module of a class of this file that ``self``
    holds (``self.scale(h)``, ``layer(h)`` over ``self.layers``)."""
    func, symbols = call.func, ctx.symbols
    found: List[Tuple[Callee, bool]] = []
    if isinstance(func, ast.Name) and func.id in symbols.functions:
        found.append((symbols.functions[func.id], False))
    value = symbols.assignments.get(func.id) if isinstance(func, ast.Name) else None
    if isinstance(func, ast.Name) and isinstance(value, ast.Lambda) and not binds_locally(
        ctx.region.function, func.id
    ):
        found.append((value, False))  # `halve_ = lambda t: t.mul_(0.5)`
    nested = _nested_function(ctx.region.function, func.id) if isinstance(
        func, ast.Name
    ) else None
    if nested is not None:  # `def step(t): t.mul_(0.5)`, then `checkpoint(step, h)`
        found.append((nested, False))
    found += _module_forwards(call, ctx.region.function, ctx.region.owner, symbols)
    return found


def _module_forwards(
    call: ast.Call, function: FunctionNode, owner: Optional[ClassInfo], symbols: ModuleSymbols
) -> List[Tuple[FunctionNode, bool]]:
    """The methods of ``owner`` and its bases of this file (``self.norm_(h)``,
    ``super().forward(h)``), the ``forward``s of the modules of classes of this file that
    ``self`` holds (``self.scale(h)``, ``layer(h)`` over ``self.layers``), and, for a method
    of another object (``self.helper.scale(h)``, ``cache.update(h)``), every method of a
    class of this file named so, that ``call``, in ``function``, may run, each with whether
    ``self`` is bound."""
    func = call.func
    chain = with_bases(owner, symbols) if owner is not None else []
    if _self_getattr(func) and owner is not None:  # `getattr(self, self.mode)(h)`
        return [(m, not is_staticmethod(m)) for c in chain for m in c.methods.values()]
    if isinstance(func, ast.Attribute) and (_is_super(func.value) or is_self(func.value)):
        classes = chain[1:] if _is_super(func.value) else chain
        own = next((c.methods[func.attr] for c in classes if func.attr in c.methods), None)
        if _is_super(func.value):
            return [] if own is None else [(own, not is_staticmethod(own))]
        if own is not None:  # or what a subclass puts in its place
            return [(own, not is_staticmethod(own)), *_methods_named(func, symbols)]
    while isinstance(func, ast.Attribute) and func.attr in RUNS_MODULE:
        func = func.value  # `layer.forward(h)`
    module = module_expression(func, function) if owner is not None else None
    attribute = attribute_of(module) if module is not None else None
    if owner is None or module is None or attribute is None:
        return _methods_named(call.func, symbols)
    methods = []
    for name in held_classes(module, owner, symbols) or []:
        forward = _forward_read(symbols.classes[name], symbols) if name in symbols.classes else None
        methods += [forward] if forward is not None else []
    return [(method, not is_staticmethod(method)) for method in methods]


def _self_getattr(func: ast.expr) -> bool:
    """``getattr(self, name)`` of a name that is not a constant."""
    return (
        isinstance(func, ast.Call) and isinstance(func.func, ast.Name)
        and func.func.id == "getattr" and len(func.args) > 1 and is_self(func.args[0])
        and not isinstance(func.args[1], ast.Constant)
    )


def _methods_named(func: ast.expr, symbols: ModuleSymbols) -> List[Tuple[FunctionNode, bool]]:
    """``obj.scale`` of an object the analysis does not type: every method of a class of this
    file named ``scale`` (a tensor's in-place methods are weighed apart)."""
    if not isinstance(func, ast.Attribute):
        return []
    by_name = vars(symbols).get("_methods_by_name")  # like a cached_property's value
    if by_name is None:
        by_name = vars(symbols)["_methods_by_name"] = {}
        for info in symbols.classes.values():
            for name, method in info.methods.items():
                by_name.setdefault(name, []).append((method, not is_staticmethod(method)))
            for statement in info.node.body:  # `halve = _halve`: a function of the file
                if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Name):
                    aliased = symbols.functions.get(statement.value.id)
                    for target in statement.targets:
                        if aliased is not None and isinstance(target, ast.Name):
                            by_name.setdefault(target.id, []).append((aliased, True))
    return list(by_name.get(func.attr, []))


def _is_super(value: ast.expr) -> bool:
    """``super()`` or ``super(Block, self)``."""
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and (
        value.func.id == "super"
    )


def _forward_read(info: ClassInfo, symbols: ModuleSymbols) -> Optional[FunctionNode]:
    """The ``forward`` whose updates of what it is handed the check reads: ``forward_of``'s,
    or the one ``info`` defines itself under code of another module (a decorator such as
    ``@torch.no_grad()`` or one that converts the output, a base such as transformers'
    ``PreTrainedModel``), which the check takes, as any function of another module, to
    update nothing it is handed; not where it reaches a base's own code (``super()``, a base
    named: ``nn.ReLU``'s may work in place), a decorator of this file, or a class of this
    file on the way defines ``__call__``. Found once per class (every call of its modules
    asks)."""
    memo = vars(symbols).setdefault("_forward_read", {})  # like a cached_property's value
    kept = memo.get(id(info.node))
    if kept is None or kept[0] is not info.node:
        kept = memo[id(info.node)] = (info.node, _find_forward_read(info, symbols))
    return kept[1]


def _find_forward_read(info: ClassInfo, symbols: ModuleSymbols) -> Optional[FunctionNode]:
    if _forwards_replaced(symbols.tree):
        return None
    found = forward_of(info, symbols)
    forward = info.methods.get("forward")
    if found is not None or forward is None:
        return found
    foreign = set(symbols.imports) - set(symbols.functions) - set(symbols.classes)
    if any("__call__" in cls.methods for cls in with_bases(info, symbols)) or not all(
        root_name(decorator) in foreign for decorator in forward.decorator_list
    ):
        return None
    bases = {ast.dump(base) for base in info.node.bases}
    reaches_base = any(
        isinstance(node, ast.Name) and node.id == "super"
        or isinstance(node, (ast.Name, ast.Attribute)) and ast.dump(node) in bases
        for node in walk(forward)
    )
    return None if reaches_base else forward


def _kept_values(node: ast.AST, outer: Set[str], locals_too: bool = False) -> List[ast.expr]:
    """The values ``node`` keeps beyond itself: stored into an attribute, an item or a global
    or nonlocal name (``locals_too``: any name), or handed to a container's updating method
    (``cache.append(h)``) or to ``setattr``."""
    if isinstance(node, ast.Assign) and any(
        locals_too
        or isinstance(t, (ast.Attribute, ast.Subscript))
        or isinstance(t, ast.Name) and t.id in outer
        for t in node.targets
    ):
        return [node.value]
    if isinstance(node, ast.Call) and (
        isinstance(node.func, ast.Attribute) and node.func.attr in _KEEPING_METHODS
        or isinstance(node.func, ast.Name) and node.func.id == "setattr"
    ):
        return [*node.args, *(k.value for k in node.keywords)]
    return []


def _keeps_argument(call: ast.Call, ctx: FunctionContext) -> bool:
    """A function of this file that keeps a parameter (``_kept_values``)."""
    return any(
        root_name(value) in _bound_parameters(function, bound)
        for function, bound in _callees_in_file(call, ctx)
        for sub in walk(function)
        for value in _kept_values(
            sub, set() if isinstance(function, ast.Lambda) else outer_names(function)
        )
    )


def _bound_parameters(function: Callee, bound: bool) -> Set[str]:
    """The parameters of ``function`` that receive a call's arguments (not ``self`` where it
    is ``bound``)."""
    positional = [a.arg for a in function.args.posonlyargs + function.args.args]
    return parameter_names(function) - set(positional[:1] if bound else [])


@node_memo
def _in_place_submodules(owner: ast.ClassDef) -> Set[str]:
    """Attributes of the class ``owner`` assigned a call with ``inplace=True`` anywhere in it,
    or a module built in place by position (``nn.LeakyReLU(0.2, True)``)."""
    names: Set[str] = set()
    for sub in walk(owner):
        if isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Call):
            if any(isinstance(k, ast.Call) and _built_in_place(k) for k in walk(sub.value)):
                names |= {t.attr for t in sub.targets if isinstance(t, ast.Attribute)}
    return names
