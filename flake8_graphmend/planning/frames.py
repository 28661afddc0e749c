"""Fixes that would cost a graph: a break in a loop must not become the first of its frame.

Dynamo compiles the code before a break as a graph and goes on in a new frame after it,
except when the break is in a loop: then it runs the whole frame eagerly (torch 2.13: "graph
break in a for/while loop", GB7000). A function that prints, then breaks in a loop, compiles
the code before the print; fix the print, and the break in the loop is the frame's first, so
nothing of the function is compiled. The fixes of the sites between the last certain break
and the first break left in a loop are declined (after all sites are planned, since which
sites stay depends on every plan of the function). Where the break in the loop happens only
under a condition (``self.training``), the fixes stay, each with a caveat that names the cost.

A call of a function of the same file that keeps a break breaks the caller's frame at the call
(Dynamo inlines the callee and gives up on it there): such calls count as breaks of the
caller, in a loop (``for layer in self.layers: h = layer(h)``) or not. Functions are settled
again with their callees' breaks until none changes.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import (
    TYPE_CHECKING, AbstractSet, Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional,
    Tuple, Union,
)

from ..analysis.index import child_blocks, encloses, loops_around, walk
from ..analysis.purity import implicit_dim
from ..analysis.symbols import FunctionNode, is_self
from . import Position, position
from .module_state import module_call_targets

if TYPE_CHECKING:
    from ..rules.base import Finding, FunctionContext, Site

#: The helper whose call keeps a break where a fix needs one (``FrameGuard``).
EAGER_FRAME = "_graphmend_eager_frame"

#: What a function of the file calls: each call with the function of the file it runs.
Callees = Callable[[FunctionNode], Iterable[Tuple[ast.Call, FunctionNode]]]


@dataclass(frozen=True)
class _Break:
    """A place where the fixed code may still break: a site, or a call of a function that
    keeps a break."""

    position: Position
    in_loop: bool
    #: It breaks whenever Dynamo traces its line.
    certain: bool
    #: How the messages name it (``line 13 (GM401)``).
    name: str
    condition: Optional[str]
    #: The site, when it is one (its fix may be declined or cautioned).
    site: Optional["Site"] = None
    #: The site whose break makes Dynamo run this one's line eagerly, if any.
    shadowed_by: Optional[Position] = None
    #: The function whose names ``condition`` reads, when not this one (a callee's).
    holder: str = ""

    def when(self) -> str:
        """The condition, as the caveat says it."""
        if self.condition is None:
            return "the data say so"
        return f"{self.condition} (in `{self.holder}`)" if self.holder else self.condition


@dataclass(frozen=True)
class FrameGuard:
    """A statement of a loop before which a fix calls ``_graphmend_eager_frame()``, a break when
    Dynamo traces it: the statement runs code that Dynamo traces otherwise than Python runs it
    (activation checkpointing), and runs only where the break the fix removes would have made
    Dynamo run the whole frame eagerly. The kept break makes Dynamo do so again there; where
    the statement does not run, the fix gains the graph."""

    #: Where the statement starts.
    position: Position
    #: The static conjuncts under which it runs, as findings show them.
    condition: str
    #: The line of what Dynamo would trace there.
    line: int
    #: What it is: ``checkpoint(...)``.
    shown: str

    def note(self) -> str:
        """What the fix says of the break it keeps."""
        return (
            f"when {self.condition}, it keeps a break before line {self.line} "
            f"(`{self.shown}`), so that Dynamo runs this function eagerly there as before"
        )


@dataclass(frozen=True)
class _Outcome:
    """A function's findings once its frames are kept, and whether calling it breaks: its
    first break left that is certain, else its first one left (None: no break left)."""

    findings: List["Finding"]
    breaks: Optional[_Break]
    #: A break left in a loop is certain.
    loop_breaks: bool = False


#: Rounds of settling a module's functions with what their callees' last round left.
_ROUNDS = 8


def keep_frames(
    contexts: Dict[FunctionNode, "FunctionContext"],
    callees: Callees,
    disabled: Callable[[FunctionNode], bool],
) -> List["Finding"]:
    """The findings of every function of ``contexts``, with the fixes declined (or, where that
    break is conditional, cautioned) that would leave a break in a loop the first of its
    frame. A call of a function that is ``disabled`` (``@torch.compiler.disable``) breaks.

    Each round settles every function with the breaks its callees kept in the round before,
    until no function's first break changes (call cycles included)."""
    called = {function: list(callees(function)) for function in contexts}
    sites = {function: list(ctx.sites) for function, ctx in contexts.items()}
    while True:
        outcomes = _settle(sites, called, disabled, contexts)
        exposed = _exposed(sites, called, outcomes, contexts)
        if not exposed:
            return [finding for outcome in outcomes.values() for finding in outcome.findings]
        for function, reasons in exposed.items():
            sites[function] = [
                replace(site, finding=site.declined(reasons[site.position]))
                if site.position in reasons else site
                for site in sites[function]
            ]


def _settle(
    sites: Dict[FunctionNode, List["Site"]],
    called: Dict[FunctionNode, List[Tuple[ast.Call, FunctionNode]]],
    disabled: Callable[[FunctionNode], bool],
    contexts: Dict[FunctionNode, "FunctionContext"],
) -> Dict[FunctionNode, _Outcome]:
    """``_Outcome`` of every function, settled round by round (``keep_frames``)."""
    outcomes = {function: _keep(sites[function], []) for function in contexts}
    for _ in range(_ROUNDS):
        settled = {
            function: _keep(
                sites[function], _call_breaks(function, called, outcomes, disabled, contexts)
            )
            for function in contexts
        }
        stable = all(_key(settled[f].breaks) == _key(outcomes[f].breaks) for f in contexts)
        outcomes = settled
        if stable:
            break
    return outcomes


def _exposed(
    sites: Dict[FunctionNode, List["Site"]],
    called: Dict[FunctionNode, List[Tuple[ast.Call, FunctionNode]]],
    outcomes: Dict[FunctionNode, _Outcome],
    contexts: Dict[FunctionNode, "FunctionContext"],
) -> Dict[FunctionNode, Dict[Position, str]]:
    """The fixed sites to decline, by function, with why: those of the functions a call runs
    (and of what they call), where the call may break no more once they are fixed, and the
    call is one of checkpoint that Dynamo would trace, or is in a loop of a function with such
    code (``traced_anew``) and no break kept before it. Their break made Dynamo run the
    checkpoint eagerly, or the caller's whole frame (a print in a layer checkpointed in the
    loop: fixed, checkpoint is traced, its warnings are lost, and what backward recomputes
    prints once)."""
    exposed: Dict[FunctionNode, Dict[Position, Tuple[int, str]]] = {}
    for caller in sorted(contexts, key=lambda function: (function.lineno, function.col_offset)):
        ctx, outcome = contexts[caller], outcomes[caller]
        if outcome.loop_breaks:
            continue  # a break left in a loop: Dynamo runs the frame eagerly anyway
        below = [  # the calls in a loop, and of checkpoint, whose break the fixes may remove
            (call, [
                (function, depth, site) for function, depth in _reached_from(callee, called)
                for site in sites.get(function, ()) if site.finding.plan is not None
            ])
            for call, callee in called[caller]
            if callee is not caller and (ctx.runs_in(call)[0] or _checkpointed(call, ctx))
            and not _breaks_always(callee, outcomes)
        ]
        if not any(fixed for _, fixed in below):
            continue
        kept = {g.position for f in outcome.findings if f.plan for g in f.frame_guards}
        traced = list(_traced_values(ctx, kept))
        if not traced:
            continue
        owner = ctx.region.owner
        name = f"{owner.node.name}.{caller.name}" if owner else caller.name
        for call, fixed in below:
            reason = _exposure(call, name, traced, ctx)
            for function, depth, site in fixed if reason else ():  # the nearest call names it
                known = exposed.setdefault(function, {}).get(site.position)
                if known is None or depth < known[0]:
                    exposed[function][site.position] = (depth, reason)
    return {
        function: {place: reason for place, (_, reason) in reasons.items()}
        for function, reasons in exposed.items()
    }


def _exposure(
    call: ast.Call, name: str, traced: List[Tuple[ast.expr, str]], ctx: "FunctionContext"
) -> str:
    """Why the fixes of what ``call`` runs are declined (``_exposed``), or "": ``call`` is a
    call of checkpoint that Dynamo would trace (its break makes it run the checkpoint eagerly),
    or a call in a loop of a function with such code."""
    own = next((why for value, why in traced if value is call), "")
    if own:
        return (
            f"it runs in `{_shown(call)}` (line {call.lineno}, in `{name}`), which its break "
            f"makes Dynamo run eagerly; fixed, Dynamo traces it, {own}, and what backward "
            "recomputes prints, logs and warns otherwise"
        )
    if not ctx.runs_in(call)[0]:
        return ""
    value, why = traced[0]
    return (
        f"it runs in a call in a loop of `{name}` (line {call.lineno}), whose frame its break "
        f"keeps Dynamo from tracing; fixed, Dynamo traces line {value.lineno} "
        f"(`{_shown(value)}`) there, {why}"
    )


def _breaks_always(function: FunctionNode, outcomes: Dict[FunctionNode, _Outcome]) -> bool:
    """Whether a call of ``function`` still breaks whenever it runs, once the fixes are made."""
    breaks = outcomes[function].breaks if function in outcomes else None
    return breaks is not None and breaks.certain


def _reached_from(
    function: FunctionNode, called: Dict[FunctionNode, List[Tuple[ast.Call, FunctionNode]]]
) -> List[Tuple[FunctionNode, int]]:
    """``function`` and the functions of the file it may call, directly or not, each with how
    many calls away it is, nearest first."""
    reached: List[Tuple[FunctionNode, int]] = [(function, 0)]
    for known, depth in reached:  # breadth first: the list grows as it is read
        for _, callee in called.get(known, ()):
            if all(callee is not seen for seen, _ in reached):
                reached.append((callee, depth + 1))
    return reached


def _key(point: Optional[_Break]) -> Optional[Tuple[Position, bool, Optional[str]]]:
    return None if point is None else (point.position, point.certain, point.condition)


def _call_breaks(
    function: FunctionNode,
    called: Dict[FunctionNode, List[Tuple[ast.Call, FunctionNode]]],
    outcomes: Dict[FunctionNode, _Outcome],
    disabled: Callable[[FunctionNode], bool],
    contexts: Dict[FunctionNode, "FunctionContext"],
) -> List[_Break]:
    """The breaks at the calls of ``function``: of functions whose outcome keeps a break, and
    of functions run eagerly."""
    ctx = contexts[function]
    calls: Dict[int, _Break] = {}
    for call, callee in called[function]:
        if callee is function or id(call) in calls:
            continue
        if callee in outcomes:
            breaks = outcomes[callee].breaks
            if breaks is not None:
                calls[id(call)] = _call_break(call, breaks, ctx, contexts[callee])
        elif disabled(callee) or callee.name == EAGER_FRAME:
            calls[id(call)] = _eager_call(call, ctx)
    return list(calls.values())


def _eager_call(call: ast.Call, ctx: "FunctionContext") -> _Break:
    """The break at ``call`` of a function that runs eagerly (``@torch.compiler.disable``), or
    that breaks on purpose (a break an earlier fix kept, ``FrameGuard``)."""
    in_loop, in_tensor_branch = ctx.runs_in(call)
    condition = ctx.static_condition(call)
    shown = ast.unparse(call.func)
    what = "a break kept" if shown == EAGER_FRAME else "which runs eagerly"
    return _Break(
        position(call, ctx),
        in_loop,
        condition is None and not in_tensor_branch,
        f"line {call.lineno} (`{shown}()`, {what})",
        condition,
    )


def _call_break(
    call: ast.Call, breaks: _Break, ctx: "FunctionContext", callee: "FunctionContext"
) -> _Break:
    """The break at ``call`` of a function (``callee``) whose first break left is ``breaks``."""
    in_loop, in_tensor_branch = ctx.runs_in(call)
    condition, holder = ctx.static_condition(call), ""
    if condition is None and breaks.condition is not None:
        owner = callee.region.owner
        function = f"{owner.node.name}.{callee.function_name}" if owner else callee.function_name
        condition, holder = breaks.condition, breaks.holder or function
    return _Break(
        position(call, ctx),
        in_loop,
        breaks.certain and condition is None and not in_tensor_branch,
        f"line {call.lineno} (`{ast.unparse(call.func)}()`, which breaks at line "
        f"{breaks.position[0]})",
        condition,
        holder=holder,
    )


def _site_break(site: "Site") -> _Break:
    finding = site.finding
    name = f"line {finding.line} ({finding.code})"
    return _Break(
        site.position, site.in_loop, site.certain, name, finding.condition, site,
        site.shadowed_by,
    )


def _guard_break(guard: FrameGuard) -> _Break:
    """The break a fix keeps (``FrameGuard``), in a loop, under the guard's condition."""
    return _Break(
        guard.position, True, False, f"line {guard.line} (kept before `{guard.shown}`)",
        guard.condition,
    )


def _keep(sites: List["Site"], calls: List[_Break]) -> _Outcome:
    """``_Outcome`` of one function: its ``sites`` and its ``calls`` of functions that break."""
    by_position = {site.position: site for site in sites}
    owners: Dict[Position, "Site"] = {}  # a covered site: the site whose fix rewrites it
    for site in sites:
        if site.finding.plan is not None:
            for covered in site.finding.plan.covers():
                owners.setdefault(covered, site)
    guards = {
        guard.position: _guard_break(guard)
        for site in sites if site.finding.plan is not None
        for guard in site.finding.frame_guards
    }
    ordered = sorted(
        [*map(_site_break, sites), *calls, *guards.values()], key=lambda b: b.position
    )

    def fixed(point: _Break) -> bool:
        site = point.site
        return site is not None and (site.finding.plan is not None or site.position in owners)

    changed: Dict[Position, "Finding"] = {}
    first = _first_break_left_in_loop(ordered, fixed)
    if first is not None:
        for point in _fixes_before(ordered, first, fixed):
            fixed_site = point.site
            assert fixed_site is not None  # only sites are fixed
            plan = fixed_site.finding.plan
            owner = fixed_site if plan is not None else owners[fixed_site.position]
            _change(owner, first, by_position, changed)

    def stays(point: _Break) -> bool:
        now = changed.get(point.position)
        return not fixed(point) or (now is not None and now.plan is None)

    left = [point for point in ordered if stays(point)]
    certain = [point for point in left if point.certain]
    first_left = certain[0] if certain else left[0] if left else None
    return _Outcome(
        [changed.get(site.position, site.finding) for site in sites],
        first_left,
        any(point.in_loop for point in certain),
    )


def _first_break_left_in_loop(
    ordered: List[_Break], fixed: Callable[[_Break], bool]
) -> Optional[_Break]:
    """The first break in a loop that the fixes leave, where Dynamo traces it (not after a
    break left where Dynamo stops tracing the function); the first certain one, if any: a
    conditional one before it (``checkpoint(layer, h)`` under ``if self.gradient_checkpointing``,
    ``layer(h)`` in its ``else``) runs eagerly only what the certain one does anyway."""
    by_position = {point.position: point for point in ordered}

    def traced(point: _Break) -> bool:
        shadow = by_position.get(point.shadowed_by) if point.shadowed_by else None
        return shadow is None or fixed(shadow)

    left = [point for point in ordered if point.in_loop and not fixed(point) and traced(point)]
    certain = [point for point in left if point.certain]
    return certain[0] if certain else left[0] if left else None


def _fixes_before(
    ordered: List[_Break], first: _Break, fixed: Callable[[_Break], bool]
) -> Iterator[_Break]:
    """The fixed sites, from ``first`` back to the last break that stays before it (a site
    whose fix is declined stays; one that is only cautioned does not)."""
    for point in reversed(ordered[: ordered.index(first)]):
        if point.in_loop and fixed(point):
            continue  # in the original too, a break in a loop starts the eager frame
        if fixed(point):
            yield point
        if point.certain and not point.in_loop and (first.certain or not fixed(point)):
            return  # a break that stays: the frame of the loop starts there


_FRAME = (
    "the first break of its frame, and Dynamo runs such a frame wholly eagerly, the graph "
    "before this line included"
)


def _change(
    owner: "Site",
    first: _Break,
    by_position: Dict[Position, "Site"],
    done: Dict[Position, "Finding"],
) -> None:
    """Decline ``owner``'s fix, with those of the sites it rewrites along with its own, for a
    certain ``first`` break in a loop; caution it for a conditional one."""
    if owner.position in done:
        return
    if not first.certain and _implies(owner.finding.condition, first):
        reason = (
            f"the break of {first.name} is in a loop and happens whenever this one does (when "
            f"{first.when()}): fixed, this one would leave it "
        )
        _decline(owner, reason + _FRAME, by_position, done)
        return
    if not first.certain:  # the fix costs the graph only when that break happens
        done[owner.position] = owner.cautioned(
            f"when {first.when()}, the break of {first.name} is in a loop and becomes {_FRAME}"
        )
        return
    reason = f"the next break left, {first.name}, is in a loop: fixed, this one would leave it "
    _decline(owner, reason + _FRAME, by_position, done)


def _implies(condition: Optional[str], point: _Break) -> bool:
    """Whether a site that runs only when ``condition`` holds (conjuncts of a test of the same
    function: ``self.gradient_checkpointing and self.training and use_cache``) runs only when
    ``point`` breaks too: each conjunct of ``point``'s condition is one of them
    (``self.training``)."""
    if condition is None or point.condition is None or point.holder:
        return False
    return _conjuncts(point.condition) <= _conjuncts(condition)


def _conjuncts(condition: str) -> FrozenSet[str]:
    """The conjuncts of ``a and b and c`` (as findings show it, in backticks), normalised by
    ``ast``."""
    try:
        test = ast.parse(condition.strip("`"), mode="eval").body
    except SyntaxError:
        return frozenset({condition})
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [
        test
    ]
    return frozenset(ast.unparse(part) for part in parts)


def _decline(
    owner: "Site", reason: str, by_position: Dict[Position, "Site"], done: Dict[Position, "Finding"]
) -> None:
    """Decline ``owner``'s fix and those of the sites it rewrites along with its own."""
    if owner.position in done:
        return
    plan = owner.finding.plan
    done[owner.position] = owner.declined(reason)
    for covered in sorted(plan.covers() if plan is not None else ()):
        site = by_position.get(covered)
        if site is None or covered in done:
            continue
        if site.finding.plan is not None:
            _decline(site, reason, by_position, done)
        else:
            done[covered] = site.declined(
                f"the fix of line {owner.finding.line} that would take it is declined: {reason}"
            )


def module_calls(ctx: "FunctionContext") -> Iterator[Tuple[ast.Call, FunctionNode]]:
    """The calls of a method that run a module of ``self`` (``self.head(h)``, an element of a
    module list, called by index or by the name a loop binds it to: ``for layer, norm in
    zip(self.layers, self.norms)``), each with what it may run
    (``module_state.module_call_targets``), also through activation checkpointing
    (``checkpoint(layer.__call__, h)``, ``checkpoint(step, h)`` of a function of the file)."""
    owner = ctx.region.owner
    for call in ctx.facts.calls:
        for func in [call.func, *_checkpointed(call, ctx)]:
            if isinstance(func, ast.Name) and func is not call.func and (
                func.id in ctx.symbols.functions
            ):
                yield call, ctx.symbols.functions[func.id]  # `checkpoint(step, h)`
            if owner is not None:
                found = module_call_targets(func, ctx.region.function, owner, ctx.symbols)
                yield from ((call, target) for target in found or ())


def _checkpointed(call: ast.Call, ctx: "FunctionContext") -> List[ast.expr]:
    """What a call of activation checkpointing may run: what it is handed (``layer`` of
    ``checkpoint(layer.__call__, h)`` or ``checkpoint(layer.forward, h)``), and, since that
    may call them, what it is handed with it (``checkpoint(step, layer, h)``) and what makes
    it (``checkpoint(create_custom_forward(layer), h)``, ``partial(layer, mask=m)``); nothing
    for other calls."""
    if not call.args or not _checkpoints(call, ctx):
        return []
    handed = [*call.args, *(keyword.value for keyword in call.keywords)]
    if isinstance(call.args[0], ast.Call):
        maker = call.args[0]
        handed += [*maker.args, *(keyword.value for keyword in maker.keywords)]
    return [  # `layer.__call__`, `layer.forward`: the module's forward
        value.value if isinstance(value, ast.Attribute) and value.attr in _RUNS_MODULE else value
        for value in handed
    ]


#: Attributes of a module that run its ``forward`` when called.
_RUNS_MODULE = frozenset({"__call__", "forward"})


#: ``str`` methods that pad to a width.
_PADDING = frozenset({"rjust", "ljust", "center", "zfill"})


def traced_anew(
    node: Union[ast.stmt, ast.expr], ctx: "FunctionContext"
) -> Tuple[Optional[str], Tuple[FrameGuard, ...]]:
    """Why fixing ``node``, in a loop of its function, may make the compiled call differ where
    the original ran, or the breaks its fix must keep so that it does not. While its break
    stays, Dynamo runs the whole frame eagerly; fixed, it traces it, and torch 2.13's Dynamo
    formats with a format spec wrongly or fails: a size that may be dynamic
    (``f"{x.shape[0]:05d}"``, ``:,``, ``:e``: ``InternalTorchDynamoError``), a width
    (``f"{n:5}"`` pads on the wrong side), ``format(v, spec)`` (the spec is dropped, even for a
    constant), padding to a size
    (``s.rjust(n)``); and it runs activation checkpointing (``checkpoint(layer, h)``,
    transformers' ``self._gradient_checkpointing_func``) as an operator of its own, which gives
    none of checkpoint's warnings (no input requires grad) and sums the gradients of what several
    checkpointed calls share in another order. Where such code runs, in the same loop, only
    when the site's break happens and not always then (``if self.gradient_checkpointing and
    self.training:`` after a LayerDrop draw under ``if self.training:``), the fix keeps a break
    before it (``FrameGuard``)."""
    if not loops_around(ctx.region.function, node):
        return None, ()
    inside = {id(sub) for sub in walk(node)}  # the site's own text is made by its helper
    guards: Dict[Position, FrameGuard] = {}
    for value, why in _traced_values(ctx, frozenset()):
        if id(value) in inside:
            continue
        shown = _shown(value)
        guard = _frame_guard(node, value, shown, ctx)
        if guard is None:
            return (
                "the break keeps Dynamo from tracing this function (a break in a loop); fixed, "
                f"Dynamo traces line {value.lineno} (`{shown}`), {why}"
            ), ()
        guards.setdefault(guard.position, guard)
    return None, tuple(guards.values())


def _traced_values(
    ctx: "FunctionContext", kept: AbstractSet[Position]
) -> Iterator[Tuple[ast.expr, str]]:
    """The code of the function that Dynamo traces otherwise than Python runs it, each with
    how (``_traced_differently``), but for what a kept break precedes: a call of
    ``_graphmend_eager_frame()`` in the source, or one a fix puts before a statement at a
    position of ``kept``."""
    for value in walk(ctx.region.function):
        if not isinstance(value, ast.expr):
            continue
        why = _traced_differently(value, ctx)
        if why and not _after_guard(value, ctx) and not (
            kept and position(ctx.statement_path(value)[-1], ctx) in kept
        ):
            yield value, why


def _shown(value: ast.expr) -> str:
    """How messages show ``value``: ``checkpoint(...)`` for a call."""
    return f"{ast.unparse(value.func)}(...)" if isinstance(value, ast.Call) else ast.unparse(value)


def _frame_guard(
    node: Union[ast.stmt, ast.expr], value: ast.expr, shown: str, ctx: "FunctionContext"
) -> Optional[FrameGuard]:
    """The guard before the statement of ``value`` that keeps the site ``node``'s fix exact, if
    there is one: both in the body of the innermost loop around the site, the site's statement
    first in the block that holds both, reached whenever that statement is, given its static
    conjuncts (only the bodies of ``if`` statements and ``with`` blocks on the way, nothing on
    tensors); ``value``'s statement starting its line, not in a lambda or a generator, and run
    only under all of the site's static conjuncts and more, which the loop leaves as they
    are."""
    site_path, value_path = ctx.statement_path(node), ctx.statement_path(value)
    common = 0
    while common < min(len(site_path), len(value_path)) and (
        site_path[common] is value_path[common]
    ):
        common += 1
    loops = [
        outer for outer, inner in zip(site_path, site_path[1:])
        if isinstance(outer, (ast.For, ast.AsyncFor, ast.While)) and _holds(outer.body, inner)
    ]
    if not loops or common == len(site_path) or common == len(value_path):
        return None
    if not any(loops[-1] is outer for outer in site_path[:common]):
        return None
    block = _block_holding(site_path, common, ctx)
    order = [id(statement) for statement in block]
    if id(value_path[common]) not in order or (
        order.index(id(site_path[common])) > order.index(id(value_path[common]))
    ):
        return None
    if not _reached(site_path[common:], ctx) or not _guardable(value, value_path, ctx):
        return None
    conditions = ctx.static_conjuncts(node)
    if not _texts(conditions) < _texts(ctx.static_conjuncts(value)) or not all(
        _settled(condition, loops[-1], ctx) for condition in conditions
    ):
        return None
    condition = ctx.static_condition(value)
    assert condition is not None  # it holds more conjuncts than the site's
    return FrameGuard(position(value_path[-1], ctx), condition, value.lineno, shown)


def _holds(block: List[ast.stmt], statement: ast.stmt) -> bool:
    return any(statement is inner for inner in block)


def _block_holding(path: List[ast.stmt], index: int, ctx: "FunctionContext") -> List[ast.stmt]:
    """The block that holds ``path[index]``: the function's body or one of ``path[index -
    1]``'s."""
    if index == 0:
        return ctx.region.function.body
    return next(block for block in child_blocks(path[index - 1]) if _holds(block, path[index]))


def _reached(path: List[ast.stmt], ctx: "FunctionContext") -> bool:
    """Whether the innermost statement of ``path`` runs whenever its first does, given the
    static tests on the way: only ``if`` bodies on tests of no tensor, and ``with`` blocks."""
    for outer, inner in zip(path, path[1:]):
        if isinstance(outer, (ast.With, ast.AsyncWith)):
            continue
        if not (isinstance(outer, ast.If) and _holds(outer.body, inner)) or (
            ctx.values.is_data_dependent(outer.test)
        ):
            return False
    return True


def _guardable(value: ast.expr, path: List[ast.stmt], ctx: "FunctionContext") -> bool:
    """Whether a call put before the statement of ``value`` runs whenever ``value`` does,
    just before it: the statement starts its line (not after ``if c:`` or ``;``), is in no
    nested function, and ``value`` is in no lambda or generator that runs later."""
    statement = path[-1]
    if any(isinstance(outer, _DEFINITIONS) for outer in path):
        return False
    line = ctx.lines[statement.lineno - 1].encode("utf-8")[: statement.col_offset]
    if line.strip():
        return False
    return not any(
        isinstance(outer, (ast.Lambda, ast.GeneratorExp)) and encloses(outer, value)
        for outer in walk(statement)
    )


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
#: Methods that set attributes of a module (``self.training``).
_SETTING_METHODS = frozenset({"train", "eval", "__setattr__"})
#: Calls that a static condition may make and that change nothing.
_PURE_CALLS = frozenset({"isinstance", "hasattr", "callable", "len"})


def _settled(condition: ast.expr, loop: ast.stmt, ctx: "FunctionContext") -> bool:
    """Whether ``condition`` has the same value wherever ``loop`` tests it: it calls nothing
    but ``isinstance``-like builtins, binds nothing, and reads no name the loop binds nor an
    attribute the function sets (nor any attribute, where the loop calls ``train()``,
    ``eval()`` or ``setattr()``)."""
    stored = {
        ast.unparse(target)
        for statement in walk(ctx.region.function)
        if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Delete))
        for target in (
            statement.targets if isinstance(statement, (ast.Assign, ast.Delete))
            else [statement.target]
        )
        if isinstance(target, ast.Attribute)
    }
    bound = {
        name.id for name in walk(loop)
        if isinstance(name, ast.Name) and not isinstance(name.ctx, ast.Load)
    }
    sets_attributes = any(
        isinstance(call, ast.Call) and (
            isinstance(call.func, ast.Attribute) and call.func.attr in _SETTING_METHODS
            or isinstance(call.func, ast.Name) and call.func.id == "setattr"
        )
        for call in walk(loop)
    )
    for part in walk(condition):
        if isinstance(part, ast.NamedExpr) or isinstance(part, ast.Call) and not (
            isinstance(part.func, ast.Name) and part.func.id in _PURE_CALLS
        ):
            return False
        if isinstance(part, ast.Name) and part.id in bound:
            return False
        if isinstance(part, ast.Attribute) and (sets_attributes or ast.unparse(part) in stored):
            return False
    return True


def _texts(conditions: List[ast.expr]) -> FrozenSet[str]:
    """The conjuncts of ``conditions``, ``and``s split, as text."""
    texts = set()
    for condition in conditions:
        parts = condition.values if isinstance(condition, ast.BoolOp) and isinstance(
            condition.op, ast.And
        ) else [condition]
        texts |= {ast.unparse(part) for part in parts}
    return frozenset(texts)


def _after_guard(value: ast.expr, ctx: "FunctionContext") -> bool:
    """Whether the statement of ``value``, in a loop, follows a call of
    ``_graphmend_eager_frame()`` (an earlier fix kept a break there: Dynamo does not trace
    it)."""
    path = ctx.statement_path(value)
    if not path or not loops_around(ctx.region.function, value):
        return False
    block = _block_holding(path, len(path) - 1, ctx)
    index = next(i for i, statement in enumerate(block) if statement is path[-1])
    before = block[index - 1] if index else None
    return (
        isinstance(before, ast.Expr) and isinstance(before.value, ast.Call)
        and isinstance(before.value.func, ast.Name) and before.value.func.id == EAGER_FRAME
    )


def _traced_differently(value: ast.expr, ctx: "FunctionContext") -> str:
    """How torch 2.13 runs ``value`` otherwise traced than eagerly (``traced_anew_problem``);
    "" where it is not known to."""
    if isinstance(value, ast.FormattedValue) and value.format_spec is not None or isinstance(
        value, ast.Call
    ) and (
        isinstance(value.func, ast.Name) and value.func.id == "format" and len(value.args) > 1
        or isinstance(value.func, ast.Attribute) and value.func.attr in _PADDING
    ):
        return (
            "where torch 2.13 fails formatting a size that may be dynamic, or formats with a "
            "format spec otherwise than Python"
        )
    if isinstance(value, ast.Call) and _warns_when_run(value, ctx):
        return (
            "which torch may warn about when it runs: compiled, torch gives such warnings "
            "while tracing, if at all, not on every call"
        )
    if isinstance(value, ast.Call) and _checkpoints(value, ctx):
        return (
            "which it runs as an operator of its own: checkpoint's warnings are lost and the "
            "gradients of what the checkpointed calls share are summed in another order"
        )
    return ""


def _checkpoints(call: ast.Call, ctx: "FunctionContext") -> bool:
    """Whether ``call`` may run activation checkpointing: a callee named so
    (``checkpoint``, ``self._gradient_checkpointing_func``), imported so under another name
    (``from torch.utils.checkpoint import checkpoint as ckpt``), or a local, a global or an
    attribute of ``self`` bound to such a value (``ck = cp.checkpoint``, ``self.gc =
    functools.partial(checkpoint, use_reentrant=True)``)."""
    func = call.func
    texts = [ast.unparse(func), ctx.symbols.qualified_name(func) or ""]
    if isinstance(func, ast.Name):
        values = [*ctx.values.assignments_of(func.id)]
        if func.id in ctx.symbols.assignments:  # `remat = partial(checkpoint, ...)`
            values.append(ctx.symbols.assignments[func.id])
        texts += [ast.unparse(v) for v in values]
        texts += [ctx.symbols.qualified_name(v) or "" for v in values]
    owner = ctx.region.owner
    if owner is not None and isinstance(func, ast.Attribute) and is_self(func.value):
        texts += [
            ast.unparse(node.value)
            for node in walk(owner.node)
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Attribute) and is_self(t.value) and t.attr == func.attr
                for t in node.targets
            )
        ]
    return any("checkpoint" in text.lower() for text in texts)


#: torch functions that warn on every call (deprecated; measured on torch 2.13, where
#: ``F.sigmoid`` and ``F.tanh`` no longer warn).
_DEPRECATED = frozenset({
    "torch.nn.functional.upsample", "torch.nn.functional.upsample_nearest",
    "torch.nn.functional.upsample_bilinear", "torch.cpu.amp.autocast", "torch.cuda.amp.autocast",
})
#: Reductions that warn when a tensor has no more elements than the correction.
_CORRECTED = frozenset({"std", "var", "std_mean", "var_mean"})
#: Losses that warn when the target's size differs from the input's (it broadcasts).
_BROADCASTING_LOSSES = frozenset({
    "torch.nn.functional.mse_loss", "torch.nn.functional.l1_loss",
    "torch.nn.functional.smooth_l1_loss", "torch.nn.functional.huber_loss",
})
#: Deprecated keywords of the losses, which warn whenever given.
_DEPRECATED_KEYWORDS = frozenset({"size_average", "reduce"})


def _warns_when_run(call: ast.Call, ctx: "FunctionContext") -> bool:
    """Whether torch may warn when ``call`` runs, on every call: a deprecated function
    (``F.upsample``, ``torch.cuda.amp.autocast``) or keyword (``size_average=``), a softmax of
    ``torch`` without ``dim``, a standard deviation or variance (too few elements), a loss
    that may broadcast its target (``F.mse_loss``), ``torch.tensor`` or ``t.new_tensor`` of a
    value that may be a tensor (not a number or a display of numbers)."""
    qualified = ctx.symbols.qualified_name(call.func) or ""
    name = qualified.rsplit(".", 1)[-1] if qualified.startswith("torch.") else ""
    if qualified in _DEPRECATED or qualified in _BROADCASTING_LOSSES:
        return True
    if name and any(keyword.arg in _DEPRECATED_KEYWORDS for keyword in call.keywords):
        return True
    if implicit_dim(call, ctx.symbols):
        return True
    method = call.func.attr if isinstance(call.func, ast.Attribute) else ""
    if (name == "tensor" or method == "new_tensor" and not name) and call.args:
        return not all(
            isinstance(node, (ast.Constant, ast.List, ast.Tuple, ast.UnaryOp, ast.unaryop,
                              ast.Load))
            for node in walk(call.args[0])
        )
    return name in _CORRECTED or method in _CORRECTED
