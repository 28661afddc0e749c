"""[Trap]: may ``if <tensor test>: raise E(message)`` (or an ``assert`` on ``.item()``) become a
graph-native check?"""

from __future__ import annotations

import ast
import builtins
import copy
import dataclasses
import re
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING, AbstractSet, Callable, Dict, FrozenSet, Iterator, List, Optional, Sequence,
    Set, Tuple, Union,
)

from ..analysis.hooks import code_given_to_modules
from ..analysis.index import (
    TRY_STATEMENTS, assignment_targets, loops_around, node_memo, parameter_names, parent_map,
    root_name, run_nodes, walk,
)
from ..analysis.inplace import short_name
from ..analysis.purity import impurity
from ..analysis.regions import GRAPHMEND_HELPER_PREFIX
from ..analysis.symbols import (
    ClassInfo, FunctionNode, ModuleSymbols, attribute_stores, is_staticmethod,
    is_self, is_super_call, locals_from_self, self_attribute, self_chain, taken_from_self,
)
from ..analysis.values import Kind, is_size, parameter_defaults
from . import Plan, Planned, Position, declined, formatted_values, position
from .aliasing import caller_visible, may_alias, statement_blocks
from .conditions import split_condition, tensor_condition_problem
from .foreign import (
    BUILTIN_EXCEPTIONS, foreign_callee, known_method, unknown_held_method, unknown_method,
)
from .items import compared_item, item_of
from .module_state import (
    advanced_iterator, body_changes_state, call_changes_state, class_method, held_classes,
    RUNS_MODULE, implicit_call_changes_state, iterates_held_iterator, lineage, module_call_targets,
    module_expression, stored_objects, stored_roots, updated_by_call,
)
from .per_call import changes_between_calls, class_name_of_self, per_call_problem
from .submodules import FOREIGN, HOLDING_MODULES, NAMESPACE_CALLS, loosely_built
from .presence import (
    may_pass_none, none_attributes, none_locals, optional_parameter, tests_none,
)
from .totals import (
    initialised_attribute, maybe_unbound, metadata_receiver, names_read,
    plain_argument,
)

if TYPE_CHECKING:
    from ..rules.base import FunctionContext


@dataclass(frozen=True)
class TrapPlan(Plan):
    """The guard becomes ``_graphmend_check(failed, Error, message)``.

    The guard is a lone ``raise Error(message)`` of a builtin exception, without ``else``.
    """

    ordered = True

    #: Leading conjuncts of the test that are Python values: they stay an ``if``.
    static_conjuncts: int
    #: The tensor part is one ``torch.equal(a, b)`` call (compared shapes first, as it does).
    torch_equal: bool = False
    #: ... written ``not torch.equal(a, b)``: the guard raises when they differ.
    negated: bool = False
    #: The tensor part is ``<whole reduction>.item() <op> <int>`` (``planning/items.py``): its
    #: ``.item()`` call becomes ``_graphmend_item(<reduction>)``.
    item_compared: bool = False
    #: The tensor part is a flag assigned such a comparison just before (``flagged_guard``),
    #: whose ``.item()`` (this position) is kept a tensor by the ``ItemKeptPlan`` of its GM401.
    flag_item: Optional[Position] = None
    #: The message is an f-string that formats tensors (``f"{n_tokens} tokens"``) or values
    #: that may fail to compute (``f"{x.shape[0]} rows"``): a helper of its own receives the
    #: formatted values and builds the message only when the check fails, as the original
    #: built it only when raising.
    lazy_message: bool = False
    #: The indices of the message's formatted values (in source order) that the helper
    #: computes itself, only when the check fails, from ``carried`` local names and
    #: ``self``'s attribute chains that it is passed (``x.shape[0]`` from ``x``).
    evaluated: FrozenSet[int] = frozenset()
    carried: FrozenSet[str] = frozenset()
    #: The carried names that the message reads only for metadata (``h.shape[-1]``): the
    #: helper's parameter says so, and a tensor that requires grad still goes to the op.
    measured: FrozenSet[str] = frozenset()
    #: The ``.item()`` calls (GM401) that the check removes with the guard: the compared one
    #: of the test, those of the ``evaluated`` formatted values.
    items: FrozenSet[Position] = frozenset()

    def covers(self) -> FrozenSet[Position]:
        flag = frozenset() if self.flag_item is None else frozenset({self.flag_item})
        return self.items | flag


@dataclass(frozen=True)
class ItemKeptPlan(Plan):
    """``flag = <reduction>.item() <op> <int>`` before ``if flag: raise ...``: the ``.item()``
    call becomes ``_graphmend_item(<reduction>)`` (the flag a 0-d bool tensor that only the
    guard reads, with the same truth), and the guard at ``guard`` a check."""

    ordered = True

    guard: Position

    def covers(self) -> FrozenSet[Position]:
        return frozenset({self.guard})


@dataclass(frozen=True)
class AssertPlan(Plan):
    """``assert <reduction>.item() <op> <int>[, message]`` becomes ``if __debug__:
    _graphmend_assert(<the test, the number kept a tensor>[, message])`` (``python -O`` strips
    it as it strips the ``assert``)."""

    ordered = True

    #: Where the compared ``.item()`` call is (its GM401 is fixed with the ``assert``).
    item: Position

    def covers(self) -> FrozenSet[Position]:
        return frozenset({self.item})


def trap_plan(node: ast.If, code: str, ctx: FunctionContext) -> Planned[TrapPlan]:
    """Whether the guard ``node`` (reported as ``code``) may become a graph-native check."""
    raise_stmt = node.body[0]
    assert isinstance(raise_stmt, ast.Raise)
    tested = _tested(node.test, ctx)
    exc = raise_stmt.exc
    message = exc.args[0] if isinstance(exc, ast.Call) and exc.args else None
    evaluated, carried = _evaluated_pieces(message, node, ctx, tested)
    problem = (
        _exception_problem(raise_stmt, ctx, tested, evaluated)
        or _unbound_problem(message, node, ctx)
        or state_change_problem(node, ctx)
    )
    if problem:
        return declined(problem)
    plan, reason = _guard_plan(node, code, ctx)
    assert message is not None  # _exception_problem checked it
    if plan is not None and (evaluated or _formats_tensor(message, ctx)):
        problem = rebuilt_message_problem(message, ctx)
        if problem:
            return declined(problem)
        plan = dataclasses.replace(
            plan,
            lazy_message=True,
            evaluated=frozenset(evaluated),
            carried=carried,
            measured=_measured(message, evaluated, carried),
            items=plan.items | _items_of(message, evaluated, ctx),
        )
    return plan, reason


def _items_of(
    message: ast.expr, evaluated: AbstractSet[int], ctx: FunctionContext
) -> FrozenSet[Position]:
    """Where the ``.item()`` calls of the ``evaluated`` formatted values of ``message`` are."""
    if not isinstance(message, ast.JoinedStr):
        return frozenset()
    pieces = formatted_values(message)
    return frozenset(
        position(node, ctx)
        for index in evaluated
        for node in walk(pieces[index])
        if isinstance(node, ast.Call) and item_of(node) is not None
    )


def _evaluated_pieces(
    message: Optional[ast.expr], at: ast.stmt, ctx: FunctionContext, tested: AbstractSet[str]
) -> Tuple[FrozenSet[int], FrozenSet[str]]:
    """The formatted values of an f-string ``message`` that may fail to compute on a passing
    call (``x.shape[0]`` of a 0-d tensor, ``n / total``) but that the check's helper can
    compute only when the check fails (``_evaluable``), and the local names they read."""
    if not isinstance(message, ast.JoinedStr):
        return frozenset(), frozenset()
    evaluated: Set[int] = set()
    carried: Set[str] = set()
    for index, piece in enumerate(formatted_values(message)):
        # a tensor is formatted by the helper, from what it is computed of: computed in the
        # graph, one that requires grad would show the graph's `grad_fn`, not its own
        tensor = ctx.values.kind(piece.value) in (Kind.TENSOR, Kind.DATA)
        passed = _always_computed(piece.value, ctx, tested) and not tensor
        if passed and not impurity(piece, ctx.values, ctx.symbols, static_indexing=False):
            continue
        names = _evaluable(piece.value, at, ctx)
        if names is not None:
            evaluated.add(index)
            carried |= names
    return frozenset(evaluated), frozenset(carried)


def _measured(
    message: ast.expr, evaluated: AbstractSet[int], carried: AbstractSet[str]
) -> FrozenSet[str]:
    """The ``carried`` names that the ``evaluated`` pieces of ``message`` read only for
    metadata (``h.shape``, ``h.size(1)``, ``h.dim()``, ``h.dtype``)."""
    if not isinstance(message, ast.JoinedStr):
        return frozenset()
    pieces = [p for i, p in enumerate(formatted_values(message)) if i in evaluated]
    other: Set[str] = set()
    for piece in pieces:
        parents = parent_map(piece)
        for node in walk(piece):
            if not (isinstance(node, ast.Name) and node.id in carried):
                continue
            parent = parents.get(id(node))
            call = parents.get(id(parent))
            read = call if isinstance(call, ast.Call) and call.func is parent else parent
            if isinstance(read, ast.expr) and (
                metadata_receiver(read) is node  # `h.shape`, `h.dtype`, `h.dim()`
                or isinstance(read, ast.Call) and is_size(read)  # `h.size(1)`
            ):
                continue
            other.add(node.id)
    return frozenset(carried) - other


class _DataReads(ast.NodeTransformer):
    """``t.item()`` and ``t.tolist()`` as ``t``: reading data has no effect, and the check's
    helper reads it only when it fails (inside the op under compile, on real tensors)."""

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("item", "tolist"):
            if not (node.args or node.keywords):
                return func.value
        return node


#: The parameters of the check's helper (``fixers/trap.py``): ``failed``, ``value1``, ...
_HELPER_PARAMETER = re.compile(r"failed|value\d+")


def _evaluable(value: ast.expr, at: ast.stmt, ctx: FunctionContext) -> Optional[FrozenSet[str]]:
    """The local names that ``value`` reads, where a module-level helper can compute it from
    them and from ``self``'s attribute chains (passed on every call, as a plain name would be:
    so not indexed or called), or None: it has an effect, reads ``self`` otherwise, or a
    local that may be unbound or None at ``at``."""
    if impurity(_DataReads().visit(copy.deepcopy(value)), ctx.values, ctx.symbols, again=True):
        return None
    function = ctx.region.function
    local = ctx.local_names
    module = ctx.symbols.defined_here() | set(vars(builtins))
    bound = [*parameter_defaults(function.args).items()] + [
        (name, assigned) for name in local for assigned in ctx.values.assignments_of(name)
    ]
    none_bound = {
        name
        for name, assigned in bound
        if isinstance(assigned, ast.Constant) and assigned.value is None
    }
    names: Set[str] = set()
    parents = parent_map(value)
    pending: List[ast.AST] = [value]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Attribute) and self_chain(node):
            parent = parents.get(id(node))  # passed whole, read on every call: one that
            if isinstance(parent, (ast.Call, ast.Subscript)) or not initialised_attribute(
                node, ctx  # `__init__` sets, not what would be indexed or called
            ):
                return None
            continue
        if isinstance(node, ast.Name):
            if node.id == "self":
                return None
            if node.id in local or node.id not in module:
                # passed on every call: it must be bound there, and be a value the op carries
                # (else the call is made as written, break included)
                if maybe_unbound(node.id, at, ctx) or node.id in none_bound:
                    return None
                names.add(node.id)
            elif _HELPER_PARAMETER.fullmatch(node.id):
                return None  # a global that the helper's parameter of that name would hide
            continue
        pending.extend(ast.iter_child_nodes(node))
    return frozenset(names)


def _unbound_problem(
    message: Optional[ast.expr], at: ast.stmt, ctx: FunctionContext
) -> Optional[str]:
    """Why the check, which passes what the message reads on every call, would fail where the
    guard passes: a local that may be unbound there (bound by a ``for`` that ran no time, an
    ``except ... as``, an ``if``), which the original read only when it raised."""
    unbound = sorted(
        name for name in (names_read(message) if message else ()) if maybe_unbound(name, at, ctx)
    )
    if unbound:
        return (
            f"the message reads `{unbound[0]}`, which may be unbound where the check runs, on "
            "every call"
        )
    return None


def rebuilt_message_problem(message: ast.expr, ctx: FunctionContext) -> Optional[str]:
    """Why a helper cannot build the f-string ``message`` from its values: a format spec that
    names a value (``{x:{width}}``), which the helper would not have, or a ``{x=}`` that writes
    the expression's own text (the helper's would be its parameter's name)."""
    assert isinstance(message, ast.JoinedStr)
    for piece in message.values:
        spec = piece.format_spec if isinstance(piece, ast.FormattedValue) else None
        if spec is not None and any(isinstance(n, ast.FormattedValue) for n in walk(spec)):
            return f"the message's format spec `{ast.unparse(spec)}` reads a value"
    lines = ctx.lines[message.lineno - 1: message.end_lineno]
    text = "\n".join(lines).encode("utf-8")
    end = len(text) - len(lines[-1].encode("utf-8")) + (message.end_col_offset or 0)
    if _SELF_DOCUMENTING.search(text[message.col_offset:end].decode("utf-8", "replace")):
        return "the message writes an expression's text (`{x=}`)"
    return None


#: ``{x=}``, ``{x=!r}``, ``{x = :>4}`` of an f-string (and, on the safe side, look-alikes).
_SELF_DOCUMENTING = re.compile(r"[^=!<>]=\s*(![rsa])?\s*(:[^{}]*)?}")


def _guard_plan(node: ast.If, code: str, ctx: FunctionContext) -> Planned[TrapPlan]:
    """The shape of the check (the message aside)."""
    static, tensor_part = split_condition(node.test, ctx)
    if code == "GM302":
        return _equal_plan(tensor_part, len(static), ctx)
    compared = compared_item(tensor_part[0], ctx) if len(tensor_part) == 1 else None
    if compared is not None:
        taken = frozenset({position(compared, ctx)})
        return TrapPlan(static_conjuncts=len(static), item_compared=True, items=taken), None
    flagged = flagged_guard(node, ctx)
    if len(tensor_part) == 1 and flagged is not None:
        item = compared_item(flagged[0].value, ctx)
        assert item is not None  # flagged_guard checked it
        return TrapPlan(static_conjuncts=len(static), flag_item=position(item, ctx)), None
    problem = tensor_condition_problem(tensor_part, ctx)
    if problem:
        return declined(problem)
    return TrapPlan(static_conjuncts=len(static)), None


def item_kept_plan(
    call: ast.Call, statement: ast.stmt, ctx: FunctionContext
) -> Planned[ItemKeptPlan]:
    """Whether the ``.item()`` ``call`` (GM401) of ``statement`` is that of ``flag =
    <reduction>.item() <op> <int>`` before a guard ``if flag: raise ...`` that [Trap] fixes;
    None, None when it is not in that form (no fix to offer)."""
    pair = flagged_guard(statement, ctx)
    if pair is None or compared_item(pair[0].value, ctx) is not call:
        return None, None
    plan, decline = trap_plan(pair[1], "GM301", ctx)
    if plan is None:
        return declined(f"the guard of line {pair[1].lineno} is not fixed: {decline}")
    return ItemKeptPlan(guard=position(pair[1], ctx)), None


def flagged_guard(node: ast.stmt, ctx: FunctionContext) -> Optional[Tuple[ast.Assign, ast.If]]:
    """For ``flag = <reduction>.item() <op> <int>`` (alone on its line) followed by ``if
    [static and] flag: raise ...`` (either statement as ``node``), with ``flag`` a local that
    nothing else reads, binds or deletes: the pair."""
    block = statement_blocks(ctx.region.function.body, node.lineno)[0][-1]
    index = next((i for i, s in enumerate(block) if s is node), None)
    if index is None:
        return None
    first = index if isinstance(node, ast.Assign) else index - 1
    if not 0 <= first < len(block) - 1:
        return None
    assign, guard = block[first], block[first + 1]
    if not (
        isinstance(assign, ast.Assign)
        and len(assign.targets) == 1
        and isinstance(assign.targets[0], ast.Name)
        and compared_item(assign.value, ctx) is not None
        and isinstance(guard, ast.If)
        and not guard.orelse
        and len(guard.body) == 1
        and isinstance(guard.body[0], ast.Raise)
    ):
        return None
    flag = assign.targets[0].id
    _, tensor_part = split_condition(guard.test, ctx)
    tested = tensor_part[0] if len(tensor_part) == 1 else None
    if not (isinstance(tested, ast.Name) and tested.id == flag):
        return None  # `not flag` would need the flag a tensor: torch.logical_not(bool) fails
    function = ctx.region.function
    uses = [n for n in walk(function) if isinstance(n, ast.Name) and n.id == flag]
    hidden = any(  # a read the names do not show
        (isinstance(n, (ast.Global, ast.Nonlocal)) and flag in n.names)
        or (isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
            and n.func.id in NAMESPACE_CALLS)
        for n in walk(function)
    )
    shares_line = first > 0 and (block[first - 1].end_lineno or 0) >= assign.lineno
    if hidden or shares_line or len(uses) != 2 or not any(n is tested for n in uses):
        return None  # read, bound or deleted elsewhere (`flag += 1`, `del flag`), `a; flag = ...`
    return assign, guard


def assert_plan(node: ast.Assert, ctx: FunctionContext) -> Planned[AssertPlan]:
    """Whether ``assert <test>[, message]``, a test of ``compared_item``, may become a check."""
    problem = (
        (_message_problem(node.msg, ctx, _tested(node.test, ctx)) if node.msg else None)
        or _unbound_problem(node.msg, node, ctx)
        or state_change_problem(node, ctx)
    )
    item = compared_item(node.test, ctx)
    assert item is not None  # check_assert asks only for such a test
    return declined(problem) if problem else (AssertPlan(position(item, ctx)), None)


def state_change_problem(
    node: ast.stmt, ctx: FunctionContext, subject: str = "the guard"
) -> Optional[str]:
    """Why ``node`` (``subject``) raising inside the graph would not leave the state that the
    original leaves: code around it that handles or cleans up, state changed before it."""
    sites = _loose_call_sites(ctx)
    decorated = _context_decorator(ctx.region.function, ctx) or next(
        (d for site in sites for d in [_context_decorator(site.caller, ctx)] if d is not None),
        None,
    )
    if decorated is not None:
        return (
            f"{subject} runs under the decorator `@{ast.unparse(decorated)}`: under compile an "
            "exception raised inside the graph skips its exit or its handler (after "
            "`@torch.no_grad()` grad mode would stay off), and loses what it changed before"
        )
    block = _enclosing_block(node, ctx)
    where = f"{subject} is"
    if block is None:
        block = _calling_block(sites)
        where = f"a call that leads to {subject} is"
    if isinstance(block, TRY_STATEMENTS):
        return (
            f"{where} inside the `try` of line {block.lineno}: under compile an exception "
            "raised inside the graph is not handled there"
        )
    if block is not None:
        return (
            f"{where} inside `{ast.unparse(block).splitlines()[0]}` (line {block.lineno}): "
            "under compile an exception raised inside the graph skips the block's exit "
            "(`torch.no_grad()` would leave grad mode off)"
        )
    chain = [(ctx.region.function, ctx.region.owner)] + [
        (site.caller, site.caller_owner) for site in sites
    ]
    for function, owner in chain:
        value = _handed_on(function, owner, ctx)
        if value is not None:
            return (
                f"`{function.name}` is handed on as a value (line {value.lineno}: "
                f"`{ast.unparse(value)}`), so what runs before its calls is not known; under "
                f"compile a change made there would be lost when {subject} raises"
            )
    hooked = _pre_hook_of(ctx)
    if hooked is not None:
        return (
            f"a forward pre-hook that the file registers (line {hooked.lineno}: "
            f"`{ast.unparse(hooked)}`) runs before {subject} and may change state; under "
            "compile that is applied after the graph, so an exception raised inside it would "
            "lose it"
        )
    change, where = _state_change_before(node, ctx), ""
    if change is None:
        change, where = _caller_change(sites, ctx) or (None, "")
    if change is None:
        return None
    unread = _unread_code(change, chain, ctx)
    return (
        f"`{ast.unparse(change).splitlines()[0]}` (line {change.lineno}{where}){unread} may "
        f"change Python state or update a tensor in place before {subject}; under compile that "
        "is applied after the graph, so an exception raised inside it would lose it"
    )


#: What registers code that a module runs before its ``forward``.
_PRE_HOOKS = frozenset({"register_forward_pre_hook", "register_module_forward_pre_hook"})


def _pre_hook_of(ctx: FunctionContext) -> Optional[ast.expr]:
    """A forward pre-hook the file registers that may run before the region's ``forward``: for
    every module, or on a module that may be of the region's class (``self`` in a method of
    its lineage, an attribute that may hold it, any other object), by a registering call or
    into the hook dict (``m._forward_pre_hooks[k] = f``)."""
    owner = ctx.region.owner
    if owner is None or ctx.region.function.name not in RUNS_MODULE:
        return None
    names = {info.node.name for info in lineage(owner, ctx.symbols)}
    registrations, made_in = _pre_hook_registrations(ctx.symbols)
    for node in registrations:
        receiver: Optional[ast.expr] = None
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and (
            isinstance(node.value, ast.Attribute) and node.value.attr == "_forward_pre_hooks"
        ):
            receiver = node.value.value
        elif isinstance(node, ast.Call) and short_name(node) in _PRE_HOOKS:
            func = node.func
            if short_name(node) == "register_module_forward_pre_hook":
                return node  # for every module
            receiver = func.value if isinstance(func, ast.Attribute) else node
        else:
            continue
        if id(node) not in made_in:
            return node  # at the module's top level: on any module
        caller, caller_owner = made_in[id(node)]
        if is_self(receiver):
            if caller_owner is None or names & {
                info.node.name for info in lineage(caller_owner, ctx.symbols)
            }:
                return node
            continue
        module = module_expression(receiver, caller) if caller_owner is not None else None
        held = None
        if module is not None and caller_owner is not None:
            held = held_classes(module, caller_owner, ctx.symbols)
        if held is None or names & set(held):
            return node
    return None


def _pre_hook_registrations(
    symbols: ModuleSymbols,
) -> Tuple[List[ast.AST], Dict[int, Tuple[FunctionNode, Optional[ClassInfo]]]]:
    """The module's calls and stores that may register a forward pre-hook, and for each, the
    function (with its class) it is made in; found once per module."""
    kept = vars(symbols).get("_pre_hook_registrations")  # like a cached_property's value
    if kept is None:
        found: List[ast.AST] = [
            node for node in walk(symbols.tree)
            if isinstance(node, ast.Call) and short_name(node) in _PRE_HOOKS
            or isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute)
            and node.value.attr == "_forward_pre_hooks"
        ]
        wanted = {id(node) for node in found}
        made_in = {
            id(node): (function, function_owner)
            for function, function_owner in _module_functions(symbols) if found
            for node in walk(function) if id(node) in wanted
        }
        kept = vars(symbols)["_pre_hook_registrations"] = (found, made_in)
    return kept


def _unread_code(
    change: Union[ast.stmt, ast.expr],
    chain: Sequence[Tuple[FunctionNode, Optional[ClassInfo]]],
    ctx: FunctionContext,
) -> str:
    """Why the analysis cannot tell what ``change``, a call made by a function of ``chain``,
    runs, where that is why it may change state: code of another module (``foreign``) or one
    that this module binds, a method of an object of a class it does not know, or a module
    call in a file that gives modules code to run (a hook); "" otherwise."""
    if not isinstance(change, ast.Call):
        return ""
    function, owner = next(
        ((f, o) for f, o in chain if any(sub is change for sub in run_nodes(f))), (None, None)
    )
    if function is None:
        return ""
    func = change.func
    module = module_expression(func, function)
    held = module if module is not None else (
        func.value if isinstance(func, ast.Attribute) and self_attribute(func.value) else None
    )
    callee, method = foreign_callee(change, function, owner, ctx.symbols), None
    if callee is None and held is not None and owner is not None:
        classes = held_classes(held, owner, ctx.symbols)
        callee = next((n[len(FOREIGN):] for n in classes or () if n.startswith(FOREIGN)), None)
        if callee is None and classes is None and module is None:
            method = ast.unparse(func)  # `self.tracker.record(x)` of a tracker handed in
    elif callee is None:
        method = unknown_held_method(change, function, ctx.symbols) or (
            unknown_method(change, function, ctx.values)
            if function is ctx.region.function
            else None
        )
    if callee is not None and _bound_by_module(callee, ctx.symbols):  # `step()`, not `a.b()`
        return (
            f" calls `{callee}`, which this module binds to code the analysis does not follow: it"
        )
    if isinstance(func, ast.Name) and any(  # a closure
        isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and sub.name == func.id
        for sub in walk(function)
        if sub is not function
    ):
        return (
            f" calls `{func.id}`, which {function.name}() binds to code the analysis does not "
            "follow: it"
        )
    if callee is not None:
        return f" runs code of another module (`{callee}`), which the analysis does not read: it"
    if method is not None:
        return (
            f" calls `{method}`, a method of an object whose class the analysis does not know: it"
        )
    given = code_given_to_modules(ctx.symbols.tree) if module is not None else None
    if given is not None:
        return (
            ", a call of a module in a file that gives modules code to run (line "
            f"{given.lineno}: `{ast.unparse(given)}`),"
        )
    return ""


def _bound_by_module(name: str, symbols: ModuleSymbols) -> bool:
    """Whether this module itself binds ``name``, not imported: at its top level
    (``step, total = make_counter()``) or in a function that declares it ``global``."""
    if name in symbols.imports or name in symbols.functions or name in symbols.classes:
        return False
    top_level = (
        node
        for statement in symbols.tree.body
        if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        for node in walk(statement)
    )
    return any(
        isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store)
        for node in top_level
    ) or any(isinstance(node, ast.Global) and name in node.names for node in walk(symbols.tree))


#: Decorators that run the function inside a context manager (grad mode, autocast).
_CONTEXT_DECORATORS = ("no_grad", "inference_mode", "enable_grad", "set_grad_enabled", "autocast")


def _handed_on(
    function: FunctionNode, owner: Optional[ClassInfo], ctx: FunctionContext
) -> Optional[ast.expr]:
    """Where ``function`` is taken as a value rather than called (``functools.partial(check)``,
    ``map(check, xs)``, ``self.check`` stored): a caller the analysis cannot follow may then
    call it."""
    tree = ctx.symbols.tree
    parents = parent_map(tree)
    for node in walk(tree):
        if owner is None:
            named = isinstance(node, ast.Name) and node.id == function.name
        else:
            named = (
                isinstance(node, ast.Attribute)
                and node.attr == function.name
                and (
                    isinstance(node.value, ast.Name)
                    and node.value.id in ("self", "cls", owner.node.name)
                    or is_super_call(node.value)
                )
            )
        if not named or not isinstance(getattr(node, "ctx", None), ast.Load):
            continue
        parent = parents.get(id(node))
        if isinstance(parent, ast.Call) and parent.func is node:
            continue
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue  # a decorator
        assert isinstance(node, ast.expr)
        return node
    return None


def _context_decorator(function: ast.AST, ctx: FunctionContext) -> Optional[ast.expr]:
    """A decorator of ``function`` that enters a context manager around its calls, or one of
    this file whose code handles exceptions (a ``try`` or ``with`` in it) or may change state
    before it calls the function (``self.calls += 1`` in its wrapper)."""
    for decorator in getattr(function, "decorator_list", []):
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        qualified = ctx.symbols.qualified_name(target) or ""
        if qualified.startswith("torch.") and qualified.endswith(
            _CONTEXT_DECORATORS
        ):
            return decorator
        defined = ctx.symbols.functions.get(target.id) if isinstance(target, ast.Name) else None
        if defined is not None and (
            any(
                isinstance(node, (*TRY_STATEMENTS, ast.With, ast.AsyncWith))
                for node in walk(defined)
            )
            or body_changes_state(defined, None, ctx.symbols)
        ):
            return decorator
    return None


def _enclosing_block(node: ast.stmt, ctx: FunctionContext) -> Optional[ast.stmt]:
    """The innermost ``try`` or ``with`` statement of the function around ``node``."""
    found = None
    for sub in walk(ctx.region.function):
        if isinstance(sub, (*TRY_STATEMENTS, ast.With, ast.AsyncWith)) and _holds(sub, node):
            if found is None or sub.lineno > found.lineno:
                found = sub
    return found


@dataclass(frozen=True)
class _CallSite:
    """A call in this module that leads to the guard's function: ``call`` in ``caller`` (a
    method of ``caller_owner``) runs ``callee`` (a method of ``callee_owner``)."""

    caller: FunctionNode
    caller_owner: Optional[ClassInfo]
    call: ast.Call
    callee: FunctionNode
    callee_owner: Optional[ClassInfo]

    @property
    def where(self) -> str:
        owner = f"{self.caller_owner.node.name}." if self.caller_owner else ""
        return f", in {owner}{self.caller.name}()"


def _calling_block(sites: Sequence[_CallSite]) -> Optional[ast.stmt]:
    """A ``try`` or ``with`` statement of the module around a call that leads to the guard's
    function (``sites``: ``_call_sites``)."""
    for site in sites:
        for block in walk(site.caller):
            if isinstance(block, (*TRY_STATEMENTS, ast.With, ast.AsyncWith)) and _holds(
                block, site.call
            ):
                return block
    return None


def try_problem(node: ast.AST, ctx: FunctionContext) -> Optional[str]:
    """Why no fix may go at ``node``: it is inside a ``try`` of its function, or a call of the
    module that leads to the function is. A break there makes Dynamo run the frame eagerly,
    where the ``try`` handles what its body raises; fixed, Dynamo compiles the body, and an
    exception raised inside the graph at run time (an index out of range) is not handled."""
    found = [
        sub for sub in walk(ctx.region.function)
        if isinstance(sub, TRY_STATEMENTS) and _holds(sub, node)
    ]
    where = ""
    if not found:
        for site in _loose_call_sites(ctx):
            found = [
                sub for sub in walk(site.caller)
                if isinstance(sub, TRY_STATEMENTS) and _holds(sub, site.call)
            ]
            if found:
                where = f" around a call that leads here{site.where}"
                break
    if not found:
        return None
    return (
        f"the `try` of line {found[0].lineno}{where}: a break inside it makes Dynamo run the "
        "frame eagerly, where the `try` handles what its body raises; fixed, its body is "
        "compiled, and an exception raised inside the graph at run time is not handled there"
    )


def _caller_change(
    sites: Sequence[_CallSite], ctx: FunctionContext
) -> Optional[Tuple[Union[ast.stmt, ast.expr], str]]:
    """A change of ``self``'s or the module's state, or an update in place of a tensor, that a
    function of the module makes (itself, or by a call that may) before it calls on towards
    the guard's function, or anywhere in a loop around that call (where the callee also ran
    whole on an earlier pass); with ``", in <Class.caller>()"`` to say where."""
    module_names = ctx.symbols.defined_here()
    for site in sites:
        caller = site.caller
        loops = loops_around(site.caller, site.call)
        # what outlives the call: `self`, the module's names, and the caller's locals bound to
        # what `self` holds (`h = self.hist`, `me = self`)
        held = module_names | {"self"} | locals_from_self(caller)
        for sub in _run_before(site):
            if isinstance(sub, ast.Global) or _updates_tensor_in_place(
                sub, ctx, lambda root: root == "self" or root in _parameters(caller)
            ):
                return sub, site.where
            if stored_roots(sub) & held or any(
                taken_from_self(stored) for stored in stored_objects(sub)
            ):  # `getattr(self, "hist").append(1)`
                return sub, site.where
            if isinstance(sub, ast.Call) and _sets_attribute(sub, held, ctx):
                return sub, site.where
            if isinstance(sub, ast.Call) and call_changes_state(
                sub, caller, site.caller_owner, ctx.symbols
            ):
                return sub, site.where
            if implicit_call_changes_state(sub, site.caller_owner, ctx.symbols):
                return sub, site.where
        if loops and body_changes_state(site.callee, site.callee_owner, ctx.symbols):
            return site.call, f"{site.where}, in a loop, after a pass through the whole call"
    return None


def _sets_attribute(call: ast.Call, held: AbstractSet[str], ctx: FunctionContext) -> bool:
    """``setattr(self, "calls", n)`` or ``delattr`` of what ``held`` names hold."""
    return (
        short_name(call) in ("setattr", "delattr")
        and isinstance(call.func, ast.Name)
        and call.func.id not in ctx.symbols.defined_here()
        and bool(call.args)
        and (root_name(call.args[0]) in held or taken_from_self(call.args[0]))
    )


def _run_before(site: _CallSite) -> Iterator[Union[ast.stmt, ast.expr]]:
    """What the caller of ``site`` may run before its call: earlier lines, the call's own
    arguments, and a loop around it."""
    loops = loops_around(site.caller, site.call)
    before = {id(inner) for loop in loops for inner in walk(loop)}
    before |= {id(inner) for inner in walk(site.call)} - {id(site.call)}
    for sub in run_nodes(site.caller):
        if not isinstance(sub, (ast.stmt, ast.expr)) or sub is site.call:
            continue
        if sub.lineno < site.call.lineno or id(sub) in before:
            yield sub


def run_by_callers(ctx: FunctionContext) -> Iterator[Tuple[Union[ast.stmt, ast.expr], str]]:
    """What the functions of this module that call on towards the region's function may run
    before they do (``_run_before``), each with ``", in <Class.caller>()"``."""
    for site in _call_sites(ctx):
        for sub in _run_before(site):
            yield sub, site.where


def reached_from(
    symbols: ModuleSymbols, holds: Callable[[FunctionNode], bool], key: str
) -> FrozenSet[int]:
    """The ids of the functions of the module that a function that ``holds`` calls on towards
    (by ``_leads_to``, as the callers' chains are found), computed once per module under
    ``key``: a function is called on towards from one that holds only if it is in there, so
    its callers' chains need not be found otherwise (``run_by_callers``)."""
    cache = vars(symbols).setdefault("_reached_from", {})  # like a cached_property's value
    if key in cache:
        return cache[key]
    functions = _module_functions(symbols)
    calls: Dict[int, List[ast.Call]] = {}
    for caller, _, call in _module_calls(symbols):
        calls.setdefault(id(caller), []).append(call)
    frontier = [(f, o) for f, o in functions if holds(f)]
    reached: Set[int] = set()
    while frontier:
        caller, owner = frontier.pop()
        for call in calls.get(id(caller), []):
            for callee, callee_owner in functions:
                if id(callee) not in reached and _leads_to(
                    call, caller, owner, callee, callee_owner, symbols
                ):
                    reached.add(id(callee))
                    frontier.append((callee, callee_owner))
    cache[key] = frozenset(reached)
    return cache[key]


def _call_sites(ctx: FunctionContext) -> List[_CallSite]:
    """The calls in this module that lead to the guard's function, up the chain of callers:
    ``check(x)``, ``self.check(x)`` in its class, and, for a ``forward``, ``self.inner(x)``,
    ``self.layers[i](x)`` or ``layer(x)`` over ``self.layers`` in any class whose attribute
    may hold the guard's class (or a subclass that keeps its ``forward``), or a module whose
    class is not known where the guard's class is built so (``submodules.loosely_built``:
    ``copy.deepcopy(layer)``, ``CLASSES[kind](config)``). Callers in other files are not
    seen."""
    memo = vars(ctx).setdefault("_call_sites", [])  # kept like a cached_property's value
    if not memo:
        memo.append(_find_call_sites(ctx))
    return memo[0]


def _loose_call_sites(ctx: FunctionContext) -> List[_CallSite]:
    """``_call_sites`` and the calls that may lead to the guard's function in a form the
    analysis does not follow (a property, ``partial(self.block)``, ``self.seq[0](x)``): where
    an exception raised inside the graph must not pass a caller's ``try``, or lose what it
    changed before, such a call counts as leading there."""
    memo = vars(ctx).setdefault("_loose_call_sites", [])
    if not memo:
        memo.append(_find_call_sites(ctx, loose=True))
    return memo[0]


def passed_none(name: str, ctx: FunctionContext) -> bool:
    """Whether a call of this module that runs the region's function may pass None for its
    parameter ``name``: None itself or a value that may be it (``_may_pass_none``), or arguments
    it unpacks (``*args``, ``**kwargs``), which may hold anything (transformers' layers get
    `attention_mask=attention_mask` from a model whose own defaults to None); calls made
    through ``checkpoint`` or ``functools.partial`` count (``_handing_calls``)."""
    function = ctx.region.function
    positional = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
    bound = ctx.region.owner is not None and not is_staticmethod(function)
    if bound:
        positional = positional[1:]  # `self` is bound
    index = positional.index(name) if name in positional else None
    calls = [(site, site.call) for site in _sites_calling(function, ctx.region.owner, ctx.symbols)]
    for caller, caller_owner, wrapper, handed in _handing_calls(ctx.symbols):
        if _leads_to(handed, caller, caller_owner, function, ctx.region.owner, ctx.symbols):
            calls.append((_CallSite(caller, caller_owner, wrapper, function, ctx.region.owner),
                          handed))
    for site, call in calls:
        if any(isinstance(a, ast.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords
        ):
            return True
        through_class = (  # `Layer.forward(self, x, None)` hands `self` too
            bound
            and isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Name)
            and call.func.value.id in ctx.symbols.classes
        )
        at = None if index is None else index + int(through_class)
        given = [k.value for k in call.keywords if k.arg == name]
        given += [call.args[at]] if at is not None and at < len(call.args) else []
        if any(_may_pass_none(value, site, ctx) for value in given):
            return True
    return False


def _handing_calls(
    symbols: ModuleSymbols,
) -> List[Tuple[FunctionNode, Optional[ClassInfo], ast.Call, ast.Call]]:
    """The calls of the module that call what they are handed with the arguments after it
    (``checkpoint(self.layer, h, None)``, ``functools.partial(self.layer, mask=None)``,
    transformers' ``self._gradient_checkpointing_func(layer.__call__, h, None)``), each with
    its function and class, and the call it makes (``self.layer(h, None)``)."""
    kept = vars(symbols).get("_handing_calls")  # like a cached_property's value
    if kept is None:
        kept = vars(symbols)["_handing_calls"] = []
        for caller, owner, call in _module_calls(symbols):
            if short_name(call) not in _CALLS_OF_ARGUMENT or not call.args:
                continue
            target = call.args[0]
            if isinstance(target, ast.Starred):
                continue
            if isinstance(target, ast.Attribute) and target.attr == "__call__":
                target = target.value
            keywords = [k for k in call.keywords if k.arg not in _CHECKPOINT_OPTIONS]
            handed = ast.copy_location(
                ast.Call(func=target, args=call.args[1:], keywords=keywords), call
            )
            kept.append((caller, owner, call, handed))
    return kept


#: Calls that call their first argument with the arguments after it.
_CALLS_OF_ARGUMENT = frozenset({"checkpoint", "partial", "_gradient_checkpointing_func"})
#: ``torch.utils.checkpoint.checkpoint``'s own keywords, which it does not hand on.
_CHECKPOINT_OPTIONS = frozenset({
    "use_reentrant", "preserve_rng_state", "context_fn", "determinism_check", "debug",
})


def _may_pass_none(value: ast.expr, site: _CallSite, ctx: FunctionContext) -> bool:
    """Whether ``value``, handed on by ``site``, may be None: a value that may be (``None``,
    ``m if c else None``, ``kw.get("m")``, ``may_pass_none``: a call that may return None, a
    list), an attribute the file may set to None, or a name
    that an optional parameter of the caller or an assignment of it may give None, unless the
    call is made under ``if name is not None:``."""
    if may_pass_none(value, ctx.symbols):
        return True
    attribute = self_attribute(value)
    if attribute is not None:
        return attribute in none_attributes(ctx.symbols.tree)
    if not isinstance(value, ast.Name):
        return False
    guards = [
        statement for statement in walk(site.caller)
        if isinstance(statement, ast.If)
        and _tests_name_not_none(statement.test, value.id)
        and any(sub is site.call for inner in statement.body for sub in walk(inner))
    ]
    if guards:
        return False
    return optional_parameter(site.caller, value.id) or value.id in none_locals(
        walk(site.caller)
    )


def _tests_name_not_none(test: ast.expr, name: str) -> bool:
    """``name is not None``, alone or as a conjunct of an ``and``."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    return any(tests_none(part, name, ast.IsNot) for part in parts)


def _find_call_sites(ctx: FunctionContext, loose: bool = False) -> List[_CallSite]:
    sites: List[_CallSite] = []
    frontier = [(ctx.region.function, ctx.region.owner)]
    reached = {id(ctx.region.function)}
    while frontier:
        callee, callee_owner = frontier.pop()
        found = _sites_calling(callee, callee_owner, ctx.symbols)
        if loose:
            found = found + _sites_maybe_calling(callee, callee_owner, ctx.symbols, found)
        for site in found:
            sites.append(site)
            if id(site.caller) not in reached:
                reached.add(id(site.caller))
                frontier.append((site.caller, site.caller_owner))
    return _traced_sites(sites, ctx.symbols) if loose else sites


def _traced_sites(sites: List[_CallSite], symbols: ModuleSymbols) -> List[_CallSite]:
    """The ``sites`` whose callers Dynamo may trace: not those of a function of the module
    that only the module's top level or untraced functions call (``evaluate(model, x)`` of a
    script that compiles the model runs its ``try`` and ``with`` eagerly, around the compiled
    call). All where the compiled regions are not known (``scope=all``)."""
    if symbols.traced is None:
        return sites
    untraced = _untraced_functions(symbols)
    return [site for site in sites if site.caller not in untraced]


def _untraced_functions(symbols: ModuleSymbols) -> FrozenSet[FunctionNode]:
    """The module's functions that no compiled region runs: not a region, never used as a
    value (a hook, a callback) nor named by a string (``getattr(module, "f")``), and called,
    but only by the module's top level (a script's ``main()``) or by such functions; not a
    function no code of the file calls, which other files may call (a library's API)."""
    memo = vars(symbols).get("_untraced")  # like a cached_property's value
    if memo is not None:
        return memo
    parents = parent_map(symbols.tree)
    callers: Dict[str, Set[Optional[str]]] = {name: set() for name in symbols.functions}
    for node in walk(symbols.tree):
        if isinstance(node, ast.Constant) and node.value in callers:
            callers[str(node.value)].add(None)  # named by a string: may run anywhere
        if not (isinstance(node, ast.Name) and node.id in callers):
            continue
        parent = parents.get(id(node))
        if not (isinstance(parent, ast.Call) and parent.func is node):
            callers[node.id].add(None)  # used as a value: may run anywhere
            continue
        enclosing: Optional[ast.AST] = parent
        while enclosing is not None and not isinstance(
            enclosing, (ast.FunctionDef, ast.AsyncFunctionDef)
        ):
            enclosing = parents.get(id(enclosing))
        if enclosing is None:
            callers[node.id].add("")  # the module's top level, which runs eagerly
        else:
            top = symbols.functions.get(getattr(enclosing, "name", ""))
            callers[node.id].add(enclosing.name if top is enclosing else None)
    traced = symbols.traced or frozenset()
    untraced = {
        name for name, function in symbols.functions.items()
        if function not in traced and callers[name] and None not in callers[name]
    }
    shrunk = True
    while shrunk:  # a function called by one that may be traced may be traced too
        kept = {name for name in untraced if callers[name] <= untraced | {""}}
        shrunk = kept != untraced
        untraced = kept
    memo = vars(symbols)["_untraced"] = frozenset(symbols.functions[name] for name in untraced)
    return memo


def _sites_calling(
    callee: FunctionNode, callee_owner: Optional[ClassInfo], symbols: ModuleSymbols
) -> List[_CallSite]:
    """The calls of the module that run ``callee`` (``_leads_to``), in the order of
    ``_module_calls``; answered once per callee of a module (the searches up the chains of
    callers of a file's guards and log calls meet the same callees)."""
    answers = vars(symbols).setdefault("_sites_by_callee", {})  # like a cached_property's
    key = (id(callee), id(callee_owner))
    if key not in answers:
        answers[key] = (callee, callee_owner, [  # both kept alive: their ids stay theirs
            _CallSite(caller, caller_owner, call, callee, callee_owner)
            for caller, caller_owner, call in _module_calls(symbols)
            if _leads_to(call, caller, caller_owner, callee, callee_owner, symbols)
        ])
    return answers[key][2]


def _sites_maybe_calling(
    callee: FunctionNode,
    callee_owner: Optional[ClassInfo],
    symbols: ModuleSymbols,
    known: Sequence[_CallSite],
) -> List[_CallSite]:
    """The calls of the module that may run ``callee``, a module's ``forward``, in a form the
    analysis does not follow (``_may_run_modules``), beside the ``known`` ones."""
    if callee_owner is None or callee.name not in RUNS_MODULE:
        return []
    seen = {id(site.call) for site in known}
    names = {info.node.name for info in lineage(callee_owner, symbols)}  # a subclass, a mixin
    return [
        _CallSite(caller, caller_owner, call, callee, callee_owner)
        for caller, caller_owner, call in _loose_calls(symbols)
        if id(call) not in seen
        and caller is not callee
        and (caller_owner is None or not names.isdisjoint(_classes_held(caller_owner, symbols)))
    ]


def _loose_calls(
    symbols: ModuleSymbols,
) -> List[Tuple[FunctionNode, Optional[ClassInfo], ast.Call]]:
    """The calls of the module (``_module_calls``) that may run a module in a form the
    analysis does not follow (``_may_run_modules``), found once per module: not those of the
    fixes' own helpers (functions of the module), nor of ``__init__``, which runs when a module
    is built, not called."""
    kept = vars(symbols).get("_loose_calls")  # like a cached_property's value
    if kept is None:
        kept = vars(symbols)["_loose_calls"] = [
            (caller, owner, call)
            for caller, owner, call in _module_calls(symbols)
            if not (owner is None and caller.name.startswith(GRAPHMEND_HELPER_PREFIX))
            and caller.name != "__init__"
            and _may_run_modules(call, caller, owner, symbols)
        ]
    return kept


def _classes_held(owner: ClassInfo, symbols: ModuleSymbols) -> FrozenSet[str]:
    """The classes of the file whose objects ``owner`` may hold, itself or through what it
    holds: each built in its methods or its bases' of the file (``Block(...)``), followed on
    through theirs, and those that may sit where the analysis cannot name them
    (``loosely_built``)."""
    memo = vars(symbols).setdefault("_classes_held", {})  # like a cached_property's value
    if owner.node.name not in memo:
        names = set(loosely_built(symbols.tree))
        frontier = [owner]
        while frontier:
            for info in lineage(frontier.pop(), symbols):
                for method in info.methods.values():
                    for node in walk(method):
                        built = node.func if isinstance(node, ast.Call) else None
                        if isinstance(built, ast.Name) and built.id in symbols.classes and (
                            built.id not in names
                        ):
                            names.add(built.id)
                            frontier.append(symbols.classes[built.id])
        memo[owner.node.name] = frozenset(names)
    return memo[owner.node.name]


def _module_calls(
    symbols: ModuleSymbols,
) -> List[Tuple[FunctionNode, Optional[ClassInfo], ast.Call]]:
    """Every call in the module's functions and methods, each with its function and class."""
    kept = vars(symbols).get("_module_calls")
    if kept is None:
        kept = vars(symbols)["_module_calls"] = [
            (caller, owner, sub)
            for caller, owner in _module_functions(symbols)
            for sub in walk(caller)
            if isinstance(sub, ast.Call)
        ]
    return kept


def _module_functions(symbols: ModuleSymbols) -> List[Tuple[FunctionNode, Optional[ClassInfo]]]:
    """The module's functions and the methods of its classes, each with its class."""
    return [
        *((function, None) for function in symbols.functions.values()),
        *((m, info) for info in symbols.classes.values() for m in info.methods.values()),
    ]


def _leads_to(
    call: ast.Call,
    caller: FunctionNode,
    caller_owner: Optional[ClassInfo],
    callee: FunctionNode,
    callee_owner: Optional[ClassInfo],
    symbols: ModuleSymbols,
) -> bool:
    """Whether ``call`` (in ``caller``, a method of ``caller_owner``) runs ``callee``."""
    func = call.func
    if callee_owner is None:
        return isinstance(func, ast.Name) and func.id == callee.name
    if isinstance(func, ast.Attribute) and func.attr == callee.name:
        receiver = func.value
        named = {info.node.name for info in lineage(callee_owner, symbols)}
        if isinstance(receiver, ast.Name) and receiver.id in named:
            return True  # `Model._validate(x)`, a static or class method through its class
        if caller_owner is not None and is_super_call(receiver):  # `super().forward(x)`
            return any(info is callee_owner for info in lineage(caller_owner, symbols))
    if (
        callee.name == "forward"
        and caller.name == "__call__"
        and caller_owner is not None
        and isinstance(func, ast.Attribute)
        and func.attr == "__call__"
        and is_super_call(func.value)
    ):  # an own `__call__` that goes on to `nn.Module.__call__`, which runs `forward`
        return any(info is callee_owner for info in lineage(caller_owner, symbols))
    if caller_owner is None:
        return False
    method = self_attribute(func) or class_method(func, caller_owner)  # `type(self).m(self)`
    if method == callee.name and any(
        info is callee_owner for info in lineage(caller_owner, symbols)
    ):
        return True
    if callee.name not in ("forward", "__call__"):
        return False
    targets = module_call_targets(func, caller, caller_owner, symbols)  # once per call
    if targets is None:
        # a module the call reaches in a way not followed (`getattr(self, name)(x)`, a local
        # bound otherwise: `for m in (self.a, self.b)`) may be of the guard's class
        return _unnamed_module_call(func, caller)
    return any(target is callee for target in targets)


def _may_run_modules(
    call: ast.Call,
    caller: FunctionNode,
    owner: Optional[ClassInfo],
    symbols: ModuleSymbols,
    resolving: FrozenSet[str] = frozenset(),
) -> bool:
    """Whether ``call`` may call a module object in a form the analysis does not follow: what
    ``caller`` is given (``m(x)`` of a parameter), an item, a conditional expression, a walrus
    or another call gives (``self.seq[0](x)``, ``next(iter(self.children()))(x)``,
    ``type(self.block).forward(self.block, x)``), an attribute of ``self`` that is no plain
    method of the file's classes (a property, a bound method stored in ``__init__``, what
    ``__getattr__`` gives); or it hands ``self``, what ``self`` holds or such a local to code
    the analysis does not follow (``partial(self.block)``, ``map(f, self.blocks)``,
    ``checkpoint(self.block, x)``). Not a local bound only to what an imported class or
    function makes (``loss_fct = MSELoss()``), nor the file's own functions and methods,
    which the search follows by name; a function defined inside ``caller`` is judged by its
    calls (``resolving``: the names of those being judged)."""
    func = call.func
    module = module_expression(func, caller) if owner is not None else None
    if owner is not None and module is not None and held_classes(module, owner, symbols):
        return False  # `self.block(x)`, `layer(x)` over `self.layers`: followed exactly
    unbound = False  # `nn.Module.__call__(self.block, x)`: the module is an argument
    while isinstance(func, ast.Attribute) and func.attr in RUNS_MODULE:
        func, unbound = func.value, True
    if isinstance(func, (ast.IfExp, ast.Call)) and _made_by_import(func, symbols) and (
        _torch_layer(func, symbols) or _computes_only(symbols.qualified_name(func.func) or "")
        if isinstance(func, ast.Call) else True
    ):
        return False  # `nn.Softmax(self.axis)(h)`: runs what torch makes
    if isinstance(func, (ast.Subscript, ast.IfExp, ast.NamedExpr, ast.Call)):
        return True
    if isinstance(func, ast.Name):
        if func.id in symbols.functions or func.id in symbols.classes:
            return unbound
        if func.id in symbols.imports:
            if _calls_nothing_handed(func, symbols):
                return False  # `sqrt(self.dim)`
            # else code of another module: judged by what it is handed
        elif func.id in vars(builtins):
            if func.id not in _HANDING_BUILTINS:
                return False  # `len(self.blocks)`, `isinstance(m, nn.Linear)`
            call = _called_by_builtin(call)  # `map(f, xs)` calls `f`, `max(xs)` nothing
        elif _nested_functions(caller, func.id):
            # a function defined inside the caller: its calls are the caller's, but they run
            # where it is called (`def step(h): return self.block(h)`, `try: step(x)`)
            return _nested_runs_code(func.id, caller, owner, symbols, resolving)
        else:
            if func.id in parameter_names(caller):
                return True  # `m(x)` of a module handed in
            # a local of a method (`step = self.step`), not of a module-level function, which
            # is handed modules as parameters only
            return owner is not None and not _made_by_imports(func.id, caller, symbols)
    elif isinstance(func, ast.Attribute):
        answer = _attribute_may_run_modules(func, unbound, symbols)
        if answer is not None:
            return answer
    own = _module_locals(caller)
    handed = [
        argument.value if isinstance(argument, ast.Starred) else argument
        for argument in [*call.args, *(k.value for k in call.keywords)]
    ]
    return any(
        _may_be_module(argument, own) and not _holds_no_module(argument, owner, symbols)
        or isinstance(argument, ast.Name)  # `map(step, xs)` of a function defined inside
        and _nested_runs_code(argument.id, caller, owner, symbols, resolving)
        or isinstance(argument, ast.Attribute)  # `map(self.runner.run, xs)`
        and self_attribute(argument) is None
        and _attribute_may_run_modules(argument, False, symbols) is True
        for argument in handed
    )


def _nested_runs_code(
    name: str,
    caller: FunctionNode,
    owner: Optional[ClassInfo],
    symbols: ModuleSymbols,
    resolving: FrozenSet[str],
) -> bool:
    """Whether a function ``name`` defined inside ``caller`` may run code of the file."""
    return name not in resolving and any(
        _runs_file_code(sub, caller, owner, symbols, resolving | {name})
        for nested in _nested_functions(caller, name)
        for sub in walk(nested)
        if isinstance(sub, ast.Call)
    )


def _nested_functions(caller: FunctionNode, name: str) -> List[FunctionNode]:
    """The functions named ``name`` defined inside ``caller``."""
    return _nested_by_name(caller).get(name, [])


@node_memo
def _nested_by_name(caller: FunctionNode) -> Dict[str, List[FunctionNode]]:
    """The functions defined inside ``caller``, by name (asked for each call of the module)."""
    found: Dict[str, List[FunctionNode]] = {}
    for node in walk(caller):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.setdefault(node.name, []).append(node)
    return found


def _runs_file_code(
    call: ast.Call,
    caller: FunctionNode,
    owner: Optional[ClassInfo],
    symbols: ModuleSymbols,
    resolving: FrozenSet[str],
) -> bool:
    """Whether ``call``, in a function defined inside ``caller``, may run code of the file: a
    module or method of ``self``, a function or class of the file, or a module in a form
    ``_may_run_modules`` finds."""
    func = call.func
    if taken_from_self(func) or isinstance(func, ast.Name) and (
        func.id in symbols.functions or func.id in symbols.classes
    ):
        return True
    if owner is not None and module_expression(func, caller) is not None:
        return True  # `layer(h)` over `self.layers`
    return _may_run_modules(call, caller, owner, symbols, resolving)


def _attribute_may_run_modules(
    func: ast.Attribute, unbound: bool, symbols: ModuleSymbols
) -> Optional[bool]:
    """``_may_run_modules`` of a call of ``func``, an attribute, where the name tells (None:
    where it depends on what the call is handed)."""
    attribute = self_attribute(func)
    if attribute is not None:
        methods = [
            info.methods[attribute] for info in symbols.classes.values()
            if attribute in info.methods
        ]
        if methods:  # a property or a static method may give or call a module
            return any(method.decorator_list for method in methods)
        # a callable stored in the file (`self.step = self.block.forward`), or what
        # `__getattr__` gives; else a method of a base of another file (not followed)
        stores = attribute_stores(symbols.tree).get(attribute, ())
        return any(_stores_callable(store, symbols) for store in stores) or any(
            "__getattr__" in info.methods for info in symbols.classes.values()
        )
    if root_name(func) in symbols.imports:  # another module's code: judged by what it is handed
        qualified = symbols.qualified_name(func) or ""
        if not unbound and (  # `nn.Softmax(self.axis)` builds, runs nothing
            _computes_only(qualified) or _torch_layer_class(qualified)
        ) or _calls_nothing_handed(func, symbols):
            return False  # `torch.cat([self.a, x])`, `math.sqrt(self.dim)`: calls no module
        return None
    if is_super_call(func.value):
        return None
    if any(func.attr in info.methods for info in symbols.classes.values()):
        return True  # `runner.run(x)`: a method of an object of a class of the file
    stores = attribute_stores(symbols.tree).get(func.attr, ())
    if any(not _plain_value(store) for store in stores) or func.attr in _fields(symbols):
        return True  # `model.block(x)`, `self.holder.m(x)`: the file stores objects there
    if known_method(func.attr) and func.attr not in _CALLING_METHODS:
        return False  # `h.view(-1, self.dim)`, `"{}".format(self.name)`: calls no module
    return None


#: Libraries whose functions call nothing they are handed (``math.sqrt(self.dim)``), and the
#: functions of theirs that do.
_NOT_CALLING_LIBRARIES = ("math.", "cmath.", "numpy.", "einops.", "os.path.", "logging.",
                          "warnings.", "re.", "string.", "textwrap.")
_CALLING_FUNCTIONS = frozenset({
    "vectorize", "frompyfunc", "apply_along_axis", "apply_over_axes", "piecewise", "sub",
    "subn",
})
#: Methods of tensors and builtin types that call what they are handed.
_CALLING_METHODS = frozenset({"apply_", "map_", "map2_", "register_hook", "sort"})


def _computes_only(qualified: str) -> bool:
    """A function of torch that calls no module or function it is given: one of ``torch``
    itself (``torch.cat``, not ``torch.cond``) or of its computing namespaces (not
    ``torch.utils.checkpoint.checkpoint``, ``torch.utils._pytree.tree_map``,
    ``nn.Module.__call__``)."""
    if qualified.startswith(_CALLING_TORCH):
        return False
    return qualified.startswith(_COMPUTING_TORCH) or (
        qualified.startswith("torch.") and qualified.count(".") == 1
    )


#: The namespaces of torch whose functions compute (and call nothing they are handed).
_COMPUTING_TORCH = (
    "torch.nn.functional.", "torch.linalg.", "torch.fft.", "torch.special.", "torch.nn.init.",
    "torch.Tensor.",
)


def _calls_nothing_handed(func: ast.expr, symbols: ModuleSymbols) -> bool:
    """Whether ``func`` is a function of a library that calls nothing it is handed (also
    through what it returns: ``logging.getLogger(name).debug``)."""
    library = symbols.imports.get(root_name(func), "") + "."
    name = func.attr if isinstance(func, ast.Attribute) else library[:-1].rpartition(".")[2]
    return library.startswith(_NOT_CALLING_LIBRARIES) and name not in _CALLING_FUNCTIONS


def _called_by_builtin(call: ast.Call) -> ast.Call:
    """``call`` of a builtin that calls what it is handed, reduced to the arguments it calls:
    the function of ``map``/``filter``, the ``key=`` of ``max``/``min``/``sorted``, the
    callable of ``iter(f, sentinel)``, the iterator ``next`` advances."""
    name = call.func.id if isinstance(call.func, ast.Name) else ""
    called: List[ast.expr] = []
    if name in ("map", "filter", "next") or name == "iter" and len(call.args) == 2:
        called = call.args[:1]
    keys = [k for k in call.keywords if k.arg == "key"]
    return ast.Call(func=call.func, args=called, keywords=keys)


def _fields(symbols: ModuleSymbols) -> FrozenSet[str]:
    """The fields the file's classes declare in their bodies (``enc: nn.Module`` of a
    dataclass), whose values the calls that build the objects give; found once per module."""
    kept = vars(symbols).get("_fields")  # like a cached_property's value
    if kept is None:
        kept = vars(symbols)["_fields"] = frozenset(
            statement.target.id
            for info in symbols.classes.values()
            for statement in info.node.body
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
        )
    return kept


def _holds_no_module(value: ast.expr, owner: Optional[ClassInfo], symbols: ModuleSymbols) -> bool:
    """``self.num_labels``: an attribute into which the file stores no module or callable
    (``self.num_labels = config.num_labels``)."""
    attribute = self_attribute(value)
    if owner is None or attribute is None:
        return False
    stores = attribute_stores(symbols.tree).get(attribute, ())
    return bool(stores) and all(_plain_value(store) for store in stores)


def _plain_value(value: ast.expr) -> bool:
    """A number, a string, arithmetic, a display of those, or a read of another object than
    ``self`` (``config.num_labels``): no module."""
    if isinstance(value, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp,
                          ast.JoinedStr)):
        return True
    if isinstance(value, (ast.Tuple, ast.List)):
        return all(_plain_value(element) for element in value.elts)
    return isinstance(value, (ast.Attribute, ast.Subscript)) and root_name(value) not in (
        "self", ""
    )


def _stores_callable(value: ast.expr, symbols: ModuleSymbols) -> bool:
    """Whether ``self.X = value`` may store a module or a callable that the search does not
    follow through the classes ``self.X`` holds: not a built object (``T5Model(config)``,
    ``nn.Linear(4, 4)``), a number, a display of numbers, or a read of another object than
    ``self`` (``config.num_labels``); a bound method of what ``self`` holds
    (``self.block.forward``), a name or what a call returns may be one."""
    if isinstance(value, ast.Call):
        return not (
            isinstance(value.func, ast.Name) and value.func.id in symbols.classes
            or (symbols.qualified_name(value.func) or "").startswith("torch.nn.")
        )
    return not _plain_value(value)


def _iterates_modules(value: ast.expr) -> bool:
    """``self.blocks``, ``self.blocks.values()``, ``self.children()``, ``zip(self.layers,
    masks)``: an iteration that may give modules of ``self`` (not ``zip(self.config.kernel,
    ...)``)."""
    if isinstance(value, ast.Call):
        if isinstance(value.func, ast.Name):
            return any(_iterates_modules(argument) for argument in value.args)
        return isinstance(value.func, ast.Attribute) and _may_be_module(
            value.func.value, frozenset()
        )
    return _may_be_module(value, frozenset())


@node_memo
def _module_locals(caller: FunctionNode) -> FrozenSet[str]:
    """The locals of ``caller`` that may hold a module of ``self``: bound by iterating over what
    ``self`` holds, or to ``self``, what it holds itself (``block = self.block``) or what
    ``getattr(self, ...)`` gives; not to a deeper read (``pad = self.config.pad_token_id``) or
    to what a call returns."""
    names: Set[str] = set()
    for node in walk(caller):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            if _iterates_modules(node.iter):
                names |= {n.id for n in walk(node.target) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Assign) and (
            _may_be_module(node.value, frozenset())
            or isinstance(node.value, ast.Call) and short_name(node.value) == "getattr"
            and bool(node.value.args) and _may_be_module(node.value.args[0], frozenset())
        ):
            names |= {n.id for t in node.targets for n in walk(t) if isinstance(n, ast.Name)}
    return frozenset(names)


def _may_be_module(value: ast.expr, own: FrozenSet[str]) -> bool:
    """``self``, what it holds itself (``self.block``, ``self.blocks[0]``, a bound method
    ``self.block.forward``) or a local taken from it: not a deeper read such as
    ``self.config.initializer_range``."""
    if isinstance(value, ast.Attribute) and value.attr in RUNS_MODULE:
        value = value.value
    if isinstance(value, ast.Subscript):
        value = value.value
    if isinstance(value, ast.Name):
        return value.id == "self" or value.id in own
    return self_attribute(value) is not None


def _made_by_imports(name: str, function: FunctionNode, symbols: ModuleSymbols) -> bool:
    """Whether ``function`` binds ``name`` only to what an imported class or function makes
    from arguments that are not ``self``'s (``loss_fct = nn.MSELoss()``)."""
    bindings = [
        node for node in walk(function)
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load)
    ]
    values = [
        statement.value for statement in walk(function)
        if isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and statement.targets[0].id == name
    ]
    return bool(values) and len(values) == len(bindings) and all(
        _made_by_import(value, symbols) for value in values
    )


def _made_by_import(value: ast.expr, symbols: ModuleSymbols) -> bool:
    """``nn.MSELoss()``, ``nn.CrossEntropyLoss(self.weight)``, ``torch.relu if c else
    torch.tanh``: what an imported class or function makes or is, from arguments that are not
    ``self``'s (a ``torch.nn`` class that holds no module may be given them)."""
    if isinstance(value, ast.IfExp):
        return all(_made_by_import(side, symbols) for side in (value.body, value.orelse))
    if isinstance(value, ast.Attribute):  # `torch.relu`: a function of torch
        return root_name(value) in symbols.imports and _computes_only(
            symbols.qualified_name(value) or ""
        )
    if not isinstance(value, ast.Call) or root_name(value.func) not in symbols.imports:
        return False  # not `self.pick()`, which may give a module
    return _torch_layer(value, symbols) or all(
        isinstance(argument, ast.Constant) for argument in value.args
    )


def _torch_layer(call: ast.Call, symbols: ModuleSymbols) -> bool:
    """``nn.CrossEntropyLoss(self.weight)``: a ``torch.nn`` module built that holds no module."""
    return _torch_layer_class(symbols.qualified_name(call.func) or "")


def _torch_layer_class(qualified: str) -> bool:
    """A ``torch.nn`` module class that holds no module (not ``nn.Sequential``)."""
    return qualified.startswith("torch.nn.") and qualified.count(".") == 2 and (
        qualified.rpartition(".")[2] not in HOLDING_MODULES | {"Module"}
    )


#: Builtins that call what they are given (``map(f, xs)``), or hand it to code that may.
_HANDING_BUILTINS = frozenset({"map", "filter", "sorted", "max", "min", "iter", "next"})
#: Functions of torch that call a module or function they are given.
_CALLING_TORCH = (
    "torch.utils.checkpoint", "torch.func", "torch.vmap", "torch.autograd.functional",
    "torch.nn.utils.stateless", "torch.cond", "torch.while_loop", "torch._higher_order_ops",
    "torch.compile", "torch.compiler", "torch.jit",
)


def _unnamed_module_call(func: ast.expr, caller: FunctionNode) -> bool:
    """Whether ``func`` may be a module of ``self`` that the analysis cannot name: one taken
    by name at run time (``getattr(self, name)``), or a local that the caller binds to what it
    iterates over or takes from ``self`` or by ``getattr`` (``for m in (self.a, self.b)``,
    ``head = self.heads[task]``); not a local bound to a new object (``loss_fct =
    MSELoss()``), nor a parameter (whose modules come from the caller's own callers)."""
    if isinstance(func, ast.Attribute) and func.attr in RUNS_MODULE:
        func = func.value
    if isinstance(func, (ast.Call, ast.Subscript)):  # `getattr(self, name)(x)`,
        return taken_from_self(func)  # `self.head_for(task)(x)`, `list(self.modules())[1](x)`
    if not isinstance(func, ast.Name):
        return False  # `self.a.b(x)`: a method, or a module named as `module_expression` does
    return func.id in locals_from_self(caller)


def _parameters(function: ast.AST) -> Set[str]:
    """The parameters of ``function`` that it never binds again (they hold its caller's
    values throughout)."""
    arguments = getattr(function, "args", None)
    if not isinstance(arguments, ast.arguments):
        return set()
    rebound = {
        node.id
        for node in walk(function)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    }
    names = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
    return names - rebound


def _updates_tensor_in_place(
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


def _holds(outer: ast.stmt, node: ast.AST) -> bool:
    return outer is not node and any(inner is node for inner in walk(outer))


def _exception_problem(
    raise_stmt: ast.Raise,
    ctx: FunctionContext,
    tested: AbstractSet[str],
    evaluated: AbstractSet[int],
) -> Optional[str]:
    """Why ``raise E(message)`` cannot be rebuilt by the check (None: it can); ``tested``: the
    names the guard's test computed with as tensors; ``evaluated``: the formatted values that
    the check's helper computes itself."""
    exc = raise_stmt.exc
    if raise_stmt.cause is not None:
        return "`raise ... from ...` cannot be rebuilt by a graph-native check"
    if not (isinstance(exc, ast.Call) and isinstance(exc.func, ast.Name)):
        return "the raised exception is not built as `Name(message)`"
    name = exc.func.id
    if (
        name not in BUILTIN_EXCEPTIONS
        or name in ctx.symbols.defined_here()
        or ctx.values.assignments_of(name)
    ):
        return f"`{name}` is not a builtin exception class"
    if len(exc.args) != 1 or exc.keywords or isinstance(exc.args[0], ast.Starred):
        return "the exception takes other than exactly one message argument"
    return _message_problem(exc.args[0], ctx, tested, lazy=True, evaluated=evaluated)


def _formats_tensor(message: ast.expr, ctx: FunctionContext) -> bool:
    """Whether ``message`` formats tensors, or values that change between calls (a text made
    in the graph would fix them there: ``per_call``)."""
    return isinstance(message, ast.JoinedStr) and any(
        ctx.values.kind(piece.value) in (Kind.TENSOR, Kind.DATA)
        or changes_between_calls(piece.value, ctx)
        for piece in formatted_values(message)
    )


def _tested(test: ast.expr, ctx: FunctionContext) -> FrozenSet[str]:
    """The names that ``test`` computes with, other than Python values: once it has passed,
    they are tensors (a Python value of another type would have failed there); and the
    ``self`` chains it reads, as written (``self.config.vocab_size``): the check reads them
    first, on every call, as the original did."""
    names = {
        n.id
        for n in walk(test)
        if isinstance(n, ast.Name) and ctx.values.kind(n) is not Kind.STATIC
    }
    chains = {ast.unparse(n) for n in walk(test) if isinstance(n, ast.Attribute)}
    return frozenset(names | {chain for chain in chains if chain.startswith("self.")})


def _constant_text(name: str, ctx: FunctionContext) -> bool:
    """Whether ``name`` is a module-level string constant (``ERR = "bad input"``): the only
    binding of that name anywhere in the file (no other store, ``del``, import or ``global``
    declaration of it), a statement of the module's top level (not under an ``if`` or in a
    ``try``, which may leave it unbound)."""
    tree = ctx.symbols.tree
    value = ctx.symbols.assignments.get(name)
    if name in ctx.local_names or not (
        isinstance(value, ast.Constant) and isinstance(value.value, str)
    ):
        return False
    stores = [
        node for node in walk(tree)
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load)
        or isinstance(node, ast.Global) and name in node.names
        or isinstance(node, ast.alias) and (node.asname or node.name) == name
    ]
    return len(stores) == 1 and any(  # at the top level: not under an `if`, in a `try`
        isinstance(statement, ast.Assign) and stores[0] in statement.targets
        for statement in tree.body
    )


def _message_problem(
    message: ast.expr,
    ctx: FunctionContext,
    tested: AbstractSet[str],
    lazy: bool = False,
    evaluated: AbstractSet[int] = frozenset(),
) -> Optional[str]:
    """The check builds its message on every call, where the original built it on failure;
    with ``lazy`` (a guard's), a message that formats tensors is built by the check's own
    helper only on failure, and its values are passed on every call. Either way each value
    must compute on every call without failing (``_always_computed``), and a tensor be
    formatted without a spec (``str()`` of a tensor cannot fail); but the ``evaluated`` ones
    (by index), which the helper computes itself on failure."""
    if isinstance(message, ast.Constant) and isinstance(message.value, str):
        return None
    if isinstance(message, ast.Name) and _constant_text(message.id, ctx):
        return None
    if not isinstance(message, ast.JoinedStr):
        return "the message is not a string literal or an f-string of plain values"
    for index, piece in enumerate(formatted_values(message)):
        if index in evaluated:
            continue  # the helper computes it when the check fails
        if ctx.values.kind(piece.value) in (Kind.TENSOR, Kind.DATA):
            if not lazy:
                return f"the message formats tensor data `{ast.unparse(piece.value)}`"
            if piece.format_spec is not None:
                return (
                    f"the message formats tensor data `{ast.unparse(piece.value)}` with a "
                    "format spec, which fails for a tensor of several elements"
                )
        problem = impurity(piece.value, ctx.values, ctx.symbols, static_indexing=False)
        if problem is None and _formats_own_object(piece.value, ctx):
            problem = (
                f"formatting `{ast.unparse(piece.value)}` runs the `__str__` (or `__format__`, "
                "`__repr__`) of a class of this file"
            )
        if problem is None and not _always_computed(piece.value, ctx, tested):
            problem = (
                f"`{ast.unparse(piece.value)}` may fail for some shapes, dtypes or values, "
                "where the original built the message only when the check failed"
            )
        if problem is None and piece.format_spec is not None:
            problem = impurity(piece, ctx.values, ctx.symbols)
        if problem:
            return f"the message would be built on every call: {problem}"
        problem = per_call_problem(piece.value, ctx, "the check")
        if problem:
            return problem
    return None


def _formats_own_object(value: ast.expr, ctx: FunctionContext) -> bool:
    """Whether formatting ``value`` may run code of this file: ``self.spec`` (or a local) that
    the file builds from a class of its own that defines ``__str__``, ``__format__`` or
    ``__repr__`` (or inherits one from a class of the file)."""
    classes = ctx.symbols.classes
    rendering = {
        name for name, info in classes.items()
        if any(
            {"__str__", "__format__", "__repr__"} & set(base.methods)
            for base in lineage(info, ctx.symbols)
        )
    }
    if not rendering:
        return False
    attribute = self_attribute(value)
    built = attribute_stores(ctx.symbols.tree).get(attribute, ()) if attribute else (
        ctx.values.assignments_of(value.id) if isinstance(value, ast.Name) else ()
    )
    return any(
        isinstance(b, ast.Call) and getattr(b.func, "id", "") in rendering for b in built
    )


def _always_computed(value: ast.expr, ctx: FunctionContext, tested: AbstractSet[str]) -> bool:
    """A value of a message that computes without failing whatever the shapes, dtypes and
    values: ``totals.plain_argument`` (a literal, a name, metadata of a tensor, a total
    reduction, an attribute of ``self`` that ``__init__`` sets: ``self.num_heads``), metadata
    of a name the test computed with, a ``self`` chain the test reads, or a tuple or list of
    those. Another deeper chain (``self.config.window``) is not: a link may be None, missing
    or a property."""
    if plain_argument(value, ctx):
        return True
    receiver = metadata_receiver(value)
    if receiver is not None:
        return receiver.id in tested
    if isinstance(value, (ast.Tuple, ast.List)):
        return all(_always_computed(element, ctx, tested) for element in value.elts)
    return (self_chain(value) and ast.unparse(value) in tested) or class_name_of_self(value, ctx)


def _equal_plan(
    tensor_part: Sequence[ast.expr], static_conjuncts: int, ctx: FunctionContext
) -> Planned[TrapPlan]:
    """A ``torch.equal(a, b)`` guard: only it (or its negation) has an exact graph-native form."""
    if len(tensor_part) != 1:
        return declined("the torch.equal() test is combined with other tensor tests")
    test = tensor_part[0]
    call, negated = test, False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        call, negated = test.operand, True
    if not (isinstance(call, ast.Call) and ctx.symbols.qualified_name(call.func) == "torch.equal"):
        return declined(
            "only `torch.equal(a, b)` and `not torch.equal(a, b)` guards "
            "have an exact graph-native form"
        )
    if len(call.args) != 2 or call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
        return declined("torch.equal() is not called with two positional tensors")
    for arg in call.args:
        problem = impurity(arg, ctx.values, ctx.symbols)
        if problem:
            return declined(problem)
    return TrapPlan(static_conjuncts, torch_equal=True, negated=negated), None


def _state_change_before(
    node: ast.stmt, ctx: FunctionContext
) -> Optional[Union[ast.stmt, ast.expr]]:
    """A statement or call that may run before ``node`` in its function and changes Python (not
    tensor) state: one on an earlier line, or anywhere in a loop around ``node``.

    Dynamo applies such changes after the graph, so they are lost when a check inside it fails:
    stores into attributes and items of non-tensors, ``global``/``nonlocal`` stores, updates of
    containers (``self.seen.append(x)``), calls of ``self``'s methods, of functions of the
    module and of submodules that may make such changes (``module_state.call_changes_state``).
    """
    function = ctx.region.function
    outer = {
        name
        for sub in walk(function)
        if isinstance(sub, (ast.Global, ast.Nonlocal))
        for name in sub.names
    }
    loops = loops_around(function, node)
    # what runs before the check: earlier lines, a loop around it, and its own test
    before = {id(inner) for loop in loops for inner in walk(loop)}
    before |= {id(inner) for inner in walk(getattr(node, "test", node))}
    for sub in run_nodes(function):
        # only statements and expressions change state (assignments, calls: `_changes_state`)
        if (
            isinstance(sub, (ast.stmt, ast.expr))
            and (sub.lineno < node.lineno or id(sub) in before)
            and (
                _changes_state(sub, outer, ctx)
                or isinstance(sub, ast.Call)
                and call_changes_state(sub, function, ctx.region.owner, ctx.symbols)
                or implicit_call_changes_state(sub, ctx.region.owner, ctx.symbols)
                or _updates_tensor_in_place(sub, ctx)
                or isinstance(sub, ast.Call) and unknown_method(sub, function, ctx.values)
            )
        ):
            return sub
    return None


def _changes_state(node: ast.AST, outer: Set[str], ctx: FunctionContext) -> bool:
    """A store into (or ``del`` of) what outlives the call: an attribute or item of a
    non-tensor, a tensor's ``.data`` or ``.grad``, a ``global``/``nonlocal`` name, a container
    the caller holds (``ids += [n]`` of ``ids = self.ids``, ``self.seen.append(x)``),
    ``setattr``/``delattr``; or a step of an iterator that does (``next(self.steps)``, a loop
    over one: ``module_state.iterates_held_iterator``)."""
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        return any(_stores_state(target, node, outer, ctx) for target in targets)
    if iterates_held_iterator(node, ctx.region.owner, ctx.symbols):
        return True
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and node.args:
        return func.id not in ctx.symbols.defined_here() and _outlives_the_call(node.args[0], ctx)
    advanced = advanced_iterator(node)
    if advanced is not None and "next" not in ctx.symbols.defined_here():
        return _outlives_the_call(advanced, ctx)
    # `self.seen.append(x)`, `dict.update(self.cache, ...)`, `nn.Module.__setattr__(self, ...)`
    return any(_outlives_the_call(o, ctx) for o in stored_objects(node) if o is not advanced)


def _stores_state(
    target: ast.expr, statement: ast.stmt, outer: Set[str], ctx: FunctionContext
) -> bool:
    if isinstance(target, ast.Attribute) and target.attr in ("data", "grad"):
        if caller_visible(root_name(target.value), statement, ctx):
            return True  # the tensor's storage or gradient is replaced
    if isinstance(target, (ast.Attribute, ast.Subscript)):
        return _outlives_the_call(target.value, ctx)
    if not isinstance(target, ast.Name):
        return False
    if target.id in outer:
        return True
    # `ids += [n]` extends, in place, the list that `ids = self.ids` holds
    kind = ctx.values.kind(target)
    return (
        isinstance(statement, ast.AugAssign)
        and kind not in (Kind.TENSOR, Kind.STATIC)
        and caller_visible(target.id, statement, ctx)
        and not _made_here(target.id, ctx)
    )


def _outlives_the_call(value: ast.expr, ctx: FunctionContext) -> bool:
    """Whether a change of ``value`` is seen after the call raises: not for a tensor (Dynamo
    applies no such change after the graph), nor for the function's own ``**kwargs`` dict,
    which no one else holds while it is only read, unpacked and updated by name."""
    if ctx.values.kind(value) is Kind.TENSOR:
        return False
    if isinstance(value, ast.Name) and _made_here(value.id, ctx):
        return False
    keywords = ctx.region.function.args.kwarg
    return not (
        isinstance(value, ast.Name)
        and keywords is not None
        and value.id == keywords.arg
        and _kept_private(value.id, ctx)
    )


#: Builtins and torch functions that read a container they are handed (or copy it), and keep
#: no reference to it.
_READING_BUILTINS = frozenset({
    "len", "list", "tuple", "set", "dict", "sorted", "sum", "min", "max", "any", "all",
    "enumerate", "zip", "reversed", "isinstance", "str", "repr", "bool",
})
_READING_TORCH = frozenset({"stack", "cat", "concat", "concatenate", "hstack", "vstack"})


def _reads_only(call: ast.Call, ctx: FunctionContext) -> bool:
    func = call.func
    if isinstance(func, ast.Name) and func.id not in ctx.symbols.defined_here():
        return func.id in _READING_BUILTINS
    qualified = ctx.symbols.qualified_name(func) or ""
    return qualified.startswith("torch.") and qualified.rsplit(".", 1)[-1] in _READING_TORCH


def _uses(name: str, ctx: FunctionContext) -> Optional[List[Tuple[ast.Name, ast.AST]]]:
    """Each use of the local ``name`` in the function, with the node that holds it; None
    where a nested function or lambda uses it (and may keep it)."""
    function = ctx.region.function
    parents = parent_map(function)
    nested = {
        id(inner)
        for node in walk(function)
        if node is not function
        and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for inner in walk(node)
    }
    uses = [
        (node, parents[id(node)])
        for node in walk(function)
        if isinstance(node, ast.Name) and node.id == name
    ]
    return None if any(id(node) in nested for node, _ in uses) else uses


def _private_use(node: ast.Name, parent: ast.AST, ctx: FunctionContext) -> bool:
    """Whether this read of a local keeps no reference to its object: it is indexed, called a
    method of, iterated, compared, formatted, returned, unpacked (``*x``, ``**x``), or read
    by a builtin or torch function that copies it (``len``, ``torch.stack``)."""
    return (
        isinstance(parent, (ast.Subscript, ast.Attribute)) and parent.value is node
        or isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is node
        or isinstance(parent, (ast.Compare, ast.FormattedValue, ast.Return, ast.Starred))
        or isinstance(parent, ast.keyword) and parent.arg is None
        or isinstance(parent, ast.Call) and node in parent.args and _reads_only(parent, ctx)
    )


def _made_here(name: str, ctx: FunctionContext) -> bool:
    """``name`` is a container or a number the function makes (``feats = []``, ``{}``, a
    comprehension, ``aux_loss = 0``) and no one else can hold: it is only bound so, updated
    (``+=``, ``feats.append(h)``) and read privately (``_private_use``)."""
    uses = _uses(name, ctx)
    if uses is None:
        return False
    made = False
    for node, parent in uses:
        if isinstance(node.ctx, ast.Store):
            if isinstance(parent, ast.Assign) and parent.targets == [node] and isinstance(
                parent.value, (*_NEW_CONTAINERS, ast.Constant)
            ):
                made = True
            elif not isinstance(parent, ast.AugAssign):
                return False
        elif not _private_use(node, parent, ctx):
            return False
    return made


#: Displays and comprehensions: each makes a new container.
_NEW_CONTAINERS = (
    ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp,
)


def _kept_private(name: str, ctx: FunctionContext) -> bool:
    """``name`` is never bound again, and only read privately (``_private_use``): indexed,
    unpacked (``**name``), called a method of, compared, formatted or measured."""
    uses = _uses(name, ctx)
    return uses is not None and all(
        not isinstance(node.ctx, ast.Store) and _private_use(node, parent, ctx)
        for node, parent in uses
    )
