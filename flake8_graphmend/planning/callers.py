"""Who calls a region's function in its file, and what runs around those calls.

A fix moves where an exception raised inside the graph surfaces, and what Dynamo applies after
the graph. Whether that is exact depends on the region's callers as much as on the region: a
``try`` or ``with`` around a call that leads to it, a change of state a caller makes before the
call, a decorator or a forward pre-hook that runs first. This module finds those callers: the
calls of the file that run the function (``_CallSite``: ``check(x)``, ``self.block(x)``, a layer
over ``self.layers``), up the chain; the calls that may run a module in a form that is not
followed (``loose_call_sites``: a property, ``partial(self.block)``, a module handed in), less
those of functions that only the file's eager code calls (a script's ``evaluate()``); and what
such callers run before the call. Callers in other files are not seen.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING, AbstractSet, Callable, Dict, FrozenSet, Iterator, List, Optional, Sequence,
    Set, Tuple, Union,
)

from ..analysis.index import (
    TRY_STATEMENTS, encloses, functions_by_name, loops_around, node_memo, parameter_names,
    parent_map, root_name, run_nodes, walk,
)
from ..analysis.hooks import forward_pre_hooks
from ..analysis.inplace import short_name
from ..analysis.regions import GRAPHMEND_HELPER_PREFIX
from ..analysis.symbols import (
    ClassInfo, FunctionNode, ModuleSymbols, attribute_stores, is_staticmethod, is_self,
    is_super_call, locals_from_self, self_attribute, taken_from_self,
)
from .aliasing import updates_visible_tensor
from .foreign import known_method
from .module_state import (
    body_changes_state, call_changes_state, class_method, handed_call, held_classes, RUNS_MODULE,
    implicit_call_changes_state, lineage, module_call_targets, module_expression, stored_objects,
    stored_roots,
)
from .submodules import HOLDING_MODULES, loosely_built
from .presence import (
    may_pass_none, none_attributes, none_locals, optional_parameter, tests_none,
)

if TYPE_CHECKING:
    from ..rules.base import FunctionContext


def pre_hook_of(ctx: FunctionContext) -> Optional[ast.expr]:
    """A forward pre-hook the file registers that may run before the region's ``forward``
    (``hooks.forward_pre_hooks``): for every module, at the module's top level, or on a module
    that may be of the region's class (``self`` in a method of its lineage, an attribute that
    may hold it, any other object)."""
    owner = ctx.region.owner
    if owner is None or ctx.region.function.name not in RUNS_MODULE:
        return None
    names = {info.node.name for info in lineage(owner, ctx.symbols)}
    made_in = _made_in(ctx.symbols)
    for node, receiver in forward_pre_hooks(ctx.symbols.tree):
        if receiver is None or id(node) not in made_in:
            return node  # for every module, or at the module's top level: on any module
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


def _made_in(symbols: ModuleSymbols) -> Dict[int, Tuple[FunctionNode, Optional[ClassInfo]]]:
    """For each place the module registers a forward pre-hook, by its id, the function (with
    its class) it is made in; found once per module."""
    kept = vars(symbols).get("_pre_hooks_made_in")  # like a cached_property's value
    if kept is None:
        wanted = {id(node) for node, _ in forward_pre_hooks(symbols.tree)}
        kept = vars(symbols)["_pre_hooks_made_in"] = {
            id(node): (function, function_owner)
            for function, function_owner in _module_functions(symbols) if wanted
            for node in walk(function) if id(node) in wanted
        }
    return kept


#: Decorators that run the function inside a context manager (grad mode, autocast).
_CONTEXT_DECORATORS = ("no_grad", "inference_mode", "enable_grad", "set_grad_enabled", "autocast")


def handed_on(
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


def context_decorator(function: ast.AST, ctx: FunctionContext) -> Optional[ast.expr]:
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


def calling_block(sites: Sequence[_CallSite]) -> Optional[ast.stmt]:
    """A ``try`` or ``with`` statement of the module around a call that leads to the guard's
    function (``sites``: ``_call_sites``)."""
    for site in sites:
        for block in walk(site.caller):
            if isinstance(block, (*TRY_STATEMENTS, ast.With, ast.AsyncWith)) and encloses(
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
        if isinstance(sub, TRY_STATEMENTS) and encloses(sub, node)
    ]
    where = ""
    if not found:
        for site in loose_call_sites(ctx):
            found = [
                sub for sub in walk(site.caller)
                if isinstance(sub, TRY_STATEMENTS) and encloses(sub, site.call)
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


def caller_change(
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
            if isinstance(sub, ast.Global) or updates_visible_tensor(
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


def loose_call_sites(ctx: FunctionContext) -> List[_CallSite]:
    """``_call_sites`` and the calls that may lead to the guard's function in a form the
    analysis does not follow (a property, ``partial(self.block)``, ``self.seq[0](x)``): where
    an exception raised inside the graph must not pass a caller's ``try``, or lose what it
    changed before, such a call counts as leading there."""
    memo = vars(ctx).setdefault("loose_call_sites", [])
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
    (``module_state.handed_call``), each with its function and class, and the call it makes
    (``self.layer(h, None)``)."""
    kept = vars(symbols).get("_handing_calls")  # like a cached_property's value
    if kept is None:
        kept = vars(symbols)["_handing_calls"] = [
            (caller, owner, call, handed)
            for caller, owner, call in _module_calls(symbols)
            for handed in [handed_call(call)]
            if handed is not None
        ]
    return kept


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
    return functions_by_name(caller).get(name, [])


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
