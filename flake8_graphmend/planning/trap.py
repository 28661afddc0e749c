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
    TYPE_CHECKING, AbstractSet, FrozenSet, List, Optional, Sequence, Set, Tuple, Union,
)

from ..analysis.hooks import code_given_to_modules
from ..analysis.index import (
    encloses, TRY_STATEMENTS, loops_around, parent_map, root_name, run_nodes, walk,
)
from ..analysis.purity import impurity
from ..analysis.symbols import (
    ClassInfo, FunctionNode, ModuleSymbols, attribute_stores, self_attribute, self_chain,
)
from ..analysis.values import Kind, is_size, parameter_defaults
from . import Plan, Planned, Position, declined, formatted_values, position
from .aliasing import caller_visible, statement_blocks, updates_visible_tensor
from .conditions import split_condition, tensor_condition_problem
from .foreign import BUILTIN_EXCEPTIONS, foreign_callee, unknown_held_method, unknown_method
from .items import compared_item, item_of
from .module_state import (
    advanced_iterator, call_changes_state, held_classes, implicit_call_changes_state,
    iterates_held_iterator, lineage, module_expression, stored_objects,
)
from .per_call import changes_between_calls, class_name_of_self, per_call_problem
from .submodules import FOREIGN, NAMESPACE_CALLS
from .totals import (
    initialised_attribute, maybe_unbound, metadata_receiver, names_read,
    plain_argument,
)
from .callers import (
    calling_block, caller_change, context_decorator, handed_on, loose_call_sites, pre_hook_of,
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
    sites = loose_call_sites(ctx)
    decorated = context_decorator(ctx.region.function, ctx) or next(
        (d for site in sites for d in [context_decorator(site.caller, ctx)] if d is not None),
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
        block = calling_block(sites)
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
        value = handed_on(function, owner, ctx)
        if value is not None:
            return (
                f"`{function.name}` is handed on as a value (line {value.lineno}: "
                f"`{ast.unparse(value)}`), so what runs before its calls is not known; under "
                f"compile a change made there would be lost when {subject} raises"
            )
    hooked = pre_hook_of(ctx)
    if hooked is not None:
        return (
            f"a forward pre-hook that the file registers (line {hooked.lineno}: "
            f"`{ast.unparse(hooked)}`) runs before {subject} and may change state; under "
            "compile that is applied after the graph, so an exception raised inside it would "
            "lose it"
        )
    change, where = _state_change_before(node, ctx), ""
    if change is None:
        change, where = caller_change(sites, ctx) or (None, "")
    if change is None:
        return None
    unread = _unread_code(change, chain, ctx)
    return (
        f"`{ast.unparse(change).splitlines()[0]}` (line {change.lineno}{where}){unread} may "
        f"change Python state or update a tensor in place before {subject}; under compile that "
        "is applied after the graph, so an exception raised inside it would lose it"
    )


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


def _enclosing_block(node: ast.stmt, ctx: FunctionContext) -> Optional[ast.stmt]:
    """The innermost ``try`` or ``with`` statement of the function around ``node``."""
    found = None
    for sub in walk(ctx.region.function):
        if isinstance(sub, (*TRY_STATEMENTS, ast.With, ast.AsyncWith)) and encloses(sub, node):
            if found is None or sub.lineno > found.lineno:
                found = sub
    return found


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
                or updates_visible_tensor(sub, ctx)
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
