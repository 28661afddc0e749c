"""Per-function facts (calls, bindings, nested functions), gathered once and only where asked.

Linting large trees must stay cheap (flake8 already paid for the parse). Most of a module is
never traced, so its functions are walked only when the region analysis reaches them, each once.
"""

from __future__ import annotations

import ast
import functools
import weakref
from dataclasses import dataclass, field
from typing import (
    Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional, Set, Tuple, TypeVar, Union,
)

FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_BINDINGS = (
    ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr,
    ast.For, ast.AsyncFor, ast.With, ast.AsyncWith,
)


def _defaults(arguments: ast.arguments) -> List[ast.expr]:
    """The default values of a function's parameters (``kw_defaults`` less its Nones)."""
    return [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)]


@dataclass
class FunctionFacts:
    """What one function's own body contains (nested functions, lambdas and classes excluded)."""

    node: FunctionNode
    parent: Optional[FunctionNode] = None
    nested: Dict[str, FunctionNode] = field(default_factory=dict)
    calls: List[ast.Call] = field(default_factory=list)
    #: Statements and expressions that bind names or store into targets.
    bindings: List[ast.AST] = field(default_factory=list)
    #: The ``for`` clauses of comprehensions (their targets are local to the comprehension).
    comprehensions: List[ast.comprehension] = field(default_factory=list)


@dataclass
class ModuleScan:
    """Definitions and calls of a whole module, with the function each one is in.

    "The function it is in" is the innermost enclosing ``def`` (class bodies are not scopes for
    the functions inside them), or None at module level and in module-level classes.
    """

    #: Every function, outer ones before the functions nested in them.
    functions: List[FunctionNode] = field(default_factory=list)
    #: Every class: (class, the function or class whose body holds it (None: the module),
    #: the function it is in).
    classes: List[Tuple[ast.ClassDef, Optional[ast.AST], Optional[FunctionNode]]] = field(
        default_factory=list
    )
    #: Every call, with the function it is in.
    calls: List[Tuple[ast.Call, Optional[FunctionNode]]] = field(default_factory=list)
    #: ``name = Callee(...)`` assignments: (targets, call, the function they are in).
    call_assignments: List[Tuple[List[ast.expr], ast.Call, Optional[FunctionNode]]] = field(
        default_factory=list
    )


class ModuleIndex:
    """Lazily computed facts about the functions of one module."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        self._facts: Dict[FunctionNode, FunctionFacts] = {}
        self._parents: Dict[FunctionNode, FunctionNode] = {}
        self._scan: Optional[ModuleScan] = None

    def scan(self) -> ModuleScan:
        """One walk over the whole module (cached); it also records every function's parent.

        Only modules that need it are scanned: those that mention ``compile``, define classes
        below the top level, or are analysed as a whole (see ``RegionFinder.for_module``).
        """
        if self._scan is not None:
            return self._scan
        scan = self._scan = ModuleScan()
        stack: List[Tuple[ast.AST, Optional[ast.AST], Optional[FunctionNode]]] = [
            (node, None, None) for node in reversed(self.tree.body)
        ]
        while stack:
            node, container, scope = stack.pop()
            if isinstance(node, _FUNCTIONS):
                scan.functions.append(node)
                if scope is not None:
                    self._parents[node] = scope
                outer = [*node.decorator_list, *_defaults(node.args)]
                stack.extend((child, container, scope) for child in outer)
                stack.extend((child, node, node) for child in reversed(node.body))
                continue
            if isinstance(node, ast.ClassDef):
                scan.classes.append((node, container, scope))
                outer = [*node.decorator_list, *node.bases]
                stack.extend((child, container, scope) for child in outer)
                stack.extend((child, node, scope) for child in reversed(node.body))
                continue
            if isinstance(node, ast.Call):
                scan.calls.append((node, scope))
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                scan.call_assignments.append((node.targets, node.value, scope))
            stack.extend((child, container, scope) for child in child_nodes(node))
        return scan

    def facts(self, function: FunctionNode) -> FunctionFacts:
        found = self._facts.get(function)
        if found is None:
            found = self._facts[function] = self._collect(function)
        return found

    def parent_of(self, function: FunctionNode) -> Optional[FunctionNode]:
        return self._parents.get(function)

    def _collect(self, function: FunctionNode) -> FunctionFacts:
        facts = FunctionFacts(function, parent=self._parents.get(function))
        stack: List[ast.AST] = list(function.body)
        while stack:
            node = stack.pop()
            if isinstance(node, _SCOPES):
                if isinstance(node, _FUNCTIONS):
                    facts.nested[node.name] = node
                    self._parents[node] = function
                    stack.extend(node.decorator_list)
                    stack.extend(node.args.defaults)
                continue
            if isinstance(node, ast.Call):
                facts.calls.append(node)
            elif isinstance(node, _BINDINGS):
                facts.bindings.append(node)
            elif isinstance(node, ast.comprehension):
                facts.comprehensions.append(node)
            stack.extend(child_nodes(node))
        return facts

    def all_functions(self) -> Iterator[FunctionNode]:
        """Every function of the module, nested ones included (a full walk)."""
        for node in walk(self.tree):
            if isinstance(node, _FUNCTIONS):
                yield node

    def all_calls(self) -> Iterator[ast.Call]:
        for node in walk(self.tree):
            if isinstance(node, ast.Call):
                yield node


_MATCH_CAPTURES = tuple(
    getattr(ast, name) for name in ("MatchAs", "MatchStar") if hasattr(ast, name)
)
_MATCH_RESTS = tuple(getattr(ast, name) for name in ("MatchMapping",) if hasattr(ast, name))
#: ``try`` statements, ``try``/``except*`` (Python 3.11) too where this Python has it.
TRY_STATEMENTS = (ast.Try, getattr(ast, "TryStar", ast.Try))
#: ``match`` statements where this Python has them (3.10); else none.
MATCH_STATEMENTS = tuple(getattr(ast, name) for name in ("Match",) if hasattr(ast, name))


def names_bound_by(node: ast.AST) -> List[str]:
    """The names that ``node`` itself binds or unbinds: a store or ``del`` of a name, ``except
    ... as``, an import, a ``def`` or ``class``, a ``case`` capture (``case [x]``, ``case
    {**rest}``)."""
    if isinstance(node, ast.Name):
        return [] if isinstance(node.ctx, ast.Load) else [node.id]
    if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.alias):
        return [(node.asname or node.name).split(".")[0]]
    if isinstance(node, (ast.ExceptHandler, *_MATCH_CAPTURES)):
        name = getattr(node, "name", None)
        return [name] if name else []
    if isinstance(node, _MATCH_RESTS):
        rest = getattr(node, "rest", None)
        return [rest] if rest else []
    return []


def parameter_names(function: Union[FunctionNode, ast.Lambda]) -> Set[str]:
    """The names of ``function``'s (or a lambda's) parameters, ``*args`` and ``**kwargs``
    included."""
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    return {a.arg for a in every}


def outer_names(function: FunctionNode) -> Set[str]:
    """Names that ``function`` declares ``global`` or ``nonlocal``: what it binds to them
    outlives the call."""
    return {
        name
        for node in walk(function)
        if isinstance(node, (ast.Global, ast.Nonlocal))
        for name in node.names
    }


def deleted_names(function: FunctionNode) -> Set[str]:
    """Names that a ``del`` in ``function`` unbinds."""
    return {
        node.id
        for node in walk(function)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Del)
    }


def scope_names(function: FunctionNode) -> Set[str]:
    """Names that are not module globals inside ``function``'s own body.

    Parameters, the names its statements bind (``names_bound_by``: assigned names, ``except
    ... as`` names, names imported inside the function, nested functions and classes, ``case``
    captures), and ``nonlocal`` names; less those declared ``global``.
    Comprehension variables are counted too (an over-approximation, on the safe side).
    """
    names = parameter_names(function)
    declared_global: Set[str] = set()
    for node in _own_nodes(function):
        names.update(names_bound_by(node))
        if isinstance(node, ast.Global):
            declared_global.update(node.names)
        elif isinstance(node, ast.Nonlocal):
            names.update(node.names)
    return names - declared_global


def _own_nodes(function: FunctionNode) -> Iterator[ast.AST]:
    """The nodes of ``function``'s own body: of a nested function, class or lambda only what
    runs where it is defined (its decorators and defaults)."""
    stack: List[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
            stack.extend(node.decorator_list)
            if isinstance(node, _FUNCTIONS):
                stack.extend(_defaults(node.args))
            continue
        if isinstance(node, ast.Lambda):
            stack.extend(node.args.defaults)
            continue
        stack.extend(child_nodes(node))


def enclosing_functions(tree: ast.Module, function: FunctionNode) -> List[FunctionNode]:
    """The functions whose bodies contain ``function``, innermost first."""
    path: List[FunctionNode] = []

    def search(node: ast.AST, chain: List[FunctionNode]) -> bool:
        for child in child_nodes(node):
            if child is function:
                path.extend(reversed(chain))
                return True
            inner = chain + [child] if isinstance(child, _FUNCTIONS) else chain
            if search(child, inner):
                return True
        return False

    search(tree, [])
    return path


def run_nodes(function: FunctionNode) -> Iterator[ast.AST]:
    """What a call of ``function`` runs: its body, not its decorators, defaults and
    annotations, which run once, where it is defined."""
    for statement in function.body:
        yield from walk(statement)


def loops_around(function: FunctionNode, node: ast.AST) -> List[ast.stmt]:
    """The loops of ``function`` that hold ``node``: code in them may run both before and
    after it."""
    return [
        loop
        for loop in walk(function)
        if isinstance(loop, (ast.For, ast.AsyncFor, ast.While))
        and encloses(loop, node)
    ]


def encloses(outer: ast.AST, node: ast.AST) -> bool:
    """Whether ``node`` lies inside ``outer`` (and is not ``outer`` itself)."""
    return outer is not node and any(inner is node for inner in walk(outer))


_Node = TypeVar("_Node", bound=ast.AST)
_Answer = TypeVar("_Answer")


def node_memo(compute: Callable[[_Node], _Answer]) -> Callable[[_Node], _Answer]:
    """``compute(node)`` computed once per node and kept while the node lives: the analyses
    ask the same questions of the same functions and modules many times over, and never
    change the trees they read."""
    answers: "weakref.WeakKeyDictionary[_Node, _Answer]" = weakref.WeakKeyDictionary()

    @functools.wraps(compute)
    def memo(node: _Node) -> _Answer:
        try:
            return answers[node]
        except KeyError:
            found = answers[node] = compute(node)
            return found

    return memo


@node_memo
def functions_by_name(function: FunctionNode) -> Dict[str, List[FunctionNode]]:
    """The functions that ``function`` holds (itself and those defined inside it), by name;
    asked for many calls of a module, so found once."""
    found: Dict[str, List[FunctionNode]] = {}
    for node in walk(function):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.setdefault(node.name, []).append(node)
    return found


def assignment_targets(
    node: Union[ast.Assign, ast.AugAssign, ast.AnnAssign],
) -> List[ast.expr]:
    """What an assignment stores into: ``targets`` of ``=``, ``target`` of the others."""
    return node.targets if isinstance(node, ast.Assign) else [node.target]


def walk(root: ast.AST) -> Iterable[ast.AST]:
    """The nodes of ``ast.walk(root)``, in its order; those of a module or a statement (a
    function, a class) computed once while it lives, an expression's afresh (small, and
    mostly walked once)."""
    return _walked(root) if isinstance(root, (ast.mod, ast.stmt)) else ast.walk(root)


@node_memo
def _walked(root: ast.AST) -> Tuple[ast.AST, ...]:
    return tuple(_breadth_first(root))


@functools.lru_cache(maxsize=256)
def parent_map(root: ast.AST) -> Dict[int, ast.AST]:
    """The node that holds each node under ``root``, by the id of the node (computed once per
    ``root``; do not change it)."""
    parents: Dict[int, ast.AST] = {}
    _breadth_first(root, parents)
    return parents


def _breadth_first(root: ast.AST, parents: Optional[Dict[int, ast.AST]] = None) -> List[ast.AST]:
    """``root`` and the nodes under it in ``ast.walk``'s order; with ``parents``, the node
    that holds each one is recorded there by its id."""
    nodes = [root]
    for node in nodes:  # the list grows as it is read: breadth first
        children = child_nodes(node)
        nodes.extend(children)
        if parents is not None:
            for child in children:
                parents[id(child)] = node
    return nodes


def child_nodes(node: ast.AST) -> List[ast.AST]:
    """``ast.iter_child_nodes(node)``, as a list (a few times faster)."""
    children: List[ast.AST] = []
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            children.append(value)
        elif isinstance(value, list):
            children.extend([item for item in value if isinstance(item, ast.AST)])
    return children


def child_blocks(statement: ast.stmt) -> List[List[ast.stmt]]:
    """The statement lists nested in ``statement`` (bodies, ``else``, handlers, cases)."""
    blocks = [
        getattr(statement, name)
        for name in ("body", "orelse", "finalbody")
        if isinstance(getattr(statement, name, None), list)
    ]
    blocks += [handler.body for handler in getattr(statement, "handlers", [])]
    blocks += [case.body for case in getattr(statement, "cases", [])]
    return [block for block in blocks if block and isinstance(block[0], ast.stmt)]


def root_name(value: ast.expr) -> str:
    while isinstance(value, (ast.Attribute, ast.Subscript, ast.Call)):
        value = value.func if isinstance(value, ast.Call) else value.value
    return value.id if isinstance(value, ast.Name) else ""


@node_memo
def bound_without_value(function: FunctionNode) -> FrozenSet[str]:
    """Names that ``function``'s own body binds or unbinds other than by an assignment, a loop
    or a ``with`` (``FunctionFacts.bindings``): an import, ``except ... as``, a ``case``
    capture, a nested ``def`` or ``class``, ``del``; and names it declares ``global`` or
    ``nonlocal`` (other code may bind them). What such a name holds is not what its
    assignments give it."""
    names: Set[str] = set()
    for node in _own_nodes(function):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        elif not isinstance(node, ast.Name) or isinstance(node.ctx, ast.Del):
            names.update(names_bound_by(node))
    return frozenset(names)
