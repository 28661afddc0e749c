"""Which functions of a module Dynamo traces: the compiled regions.

Entry points are ``forward`` of ``nn.Module`` subclasses, functions decorated with or passed to
``torch.compile``, and the names given by the user, wherever they are defined (a class or a
compiled function may be defined inside a factory function). A region also holds everything an
entry calls in the same module, transitively: ``self.method()`` (resolved on the class, its bases
and its subclasses defined in the module, since ``self`` may be an instance of any of them),
module functions, nested helpers, and the wrappers of decorators applied to region functions
(their inner functions that call the decorated function).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING, Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple,
)

from .index import ModuleIndex, ModuleScan
from .symbols import (
    ClassInfo, FunctionNode, ModuleSymbols, is_own_class, is_staticmethod, is_super_call,
    self_attribute, self_call_assignments,
)

if TYPE_CHECKING:
    from ..engine import Options

#: Decorators that keep a function out of Dynamo's trace (it runs eagerly).
_EAGER_DECORATORS = {"torch.compiler.disable", "torch._dynamo.disable"}
#: Prefix of the helpers that the graphmend fixers emit (fixers/helpers.py). They are built to
#: compile (or, for [Defer], to run after the graph), so they are never analysed or rewritten.
GRAPHMEND_HELPER_PREFIX = "_graphmend_"
#: A ``class`` statement below the top level (the module is then scanned for nested classes).
#: Bases that do not make a class a possible nn.Module subclass.
_NOT_FOREIGN = ("typing.", "abc.", "enum.")
_NESTED_CLASS = re.compile(r"^[ \t]+class[ \t]+\w+[ \t]*[(:]", re.MULTILINE)


@dataclass(frozen=True)
class Region:
    """A function traced by Dynamo."""

    function: FunctionNode
    #: The class the function is a method of, if any.
    owner: Optional[ClassInfo]
    #: True for entry points (their parameters receive the compiled call's inputs).
    entry: bool
    #: True when the function is known to run compiled (an entry point or reached from one);
    #: False when it is analysed only because its whole file is (``scope=all``, compiled modules).
    compiled: bool = True
    #: The compiled function of another file whose call makes this one compiled
    #: (``modeling_x.py: Model.forward``); empty when this module's own code does.
    through: str = ""


@dataclass
class ExternalReferences:
    """What compiled code calls that its own module does not define, each with its caller
    (``Class.method`` or ``function``, for the findings' "compiled through")."""

    #: ``(class, method, from_bases)``: ``self.method()`` in a method of the module-level
    #: ``class`` that no class of the module defines; ``super().method()`` (``from_bases``)
    #: when none of the class's bases in the module does.
    methods: Dict[Tuple[str, str, bool], str] = field(default_factory=dict)
    #: Local names of imported functions called by their plain name.
    functions: Dict[str, str] = field(default_factory=dict)
    #: Local names of imported decorators applied to compiled functions (their inner
    #: functions run compiled).
    decorators: Dict[str, str] = field(default_factory=dict)


def _bound_through_class(method: FunctionNode) -> int:
    """How many parameters a call through the class binds: ``cls`` of a classmethod."""
    return int(any(getattr(d, "id", None) == "classmethod" for d in method.decorator_list))


class RegionFinder:
    """Computes the compiled regions of one module."""

    def __init__(
        self,
        symbols: ModuleSymbols,
        index: ModuleIndex,
        entry_points: Sequence[str] = (),
        whole_module: bool = False,
        mentions_compile: bool = True,
        mentions_nested_class: bool = True,
        links: Optional[Dict[str, str]] = None,
    ):
        self.symbols = symbols
        self.index = index
        #: False when the source never says "compile": no ``torch.compile(...)`` site to look for.
        self.mentions_compile = mentions_compile
        #: Entry points that compiled code of other files reaches, with what reaches them.
        self.links = dict(links or {})
        self.entry_points = tuple(dict.fromkeys([*entry_points, *self.links]))
        self.whole_module = whole_module
        # The module-wide scan is needed for torch.compile sites, classes below the top level and
        # whole-module analysis; most modules need none of them and are never walked as a whole.
        needs_scan = mentions_compile or mentions_nested_class or whole_module
        self._scan: Optional[ModuleScan] = index.scan() if needs_scan else None
        #: Every class of the module, top-level ones first, by their ``ClassDef``.
        self._classes: Dict[ast.ClassDef, ClassInfo] = {
            info.node: info for info in symbols.classes.values()
        }
        #: Classes below the top level: where their ``class`` statement runs (a function or class
        #: body) and the function it is in, for resolving the names of their bases.
        self._nested: Dict[ast.ClassDef, Tuple[Optional[ast.AST], Optional[FunctionNode]]] = {}
        for node, container, scope in self._scan.classes if self._scan else ():
            if node not in self._classes:
                info = ClassInfo(node)
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        info.methods[item.name] = item
                self._classes[node] = info
                self._nested[node] = (container, scope)
        self._owner: Dict[FunctionNode, ClassInfo] = {}
        for info in self._classes.values():
            for method in info.methods.values():
                self._owner[method] = info
        self._bases: Dict[ast.ClassDef, List[ClassInfo]] = {}
        self._subclasses: Optional[Dict[ast.ClassDef, List[ClassInfo]]] = None
        self._all_subclasses: Dict[ast.ClassDef, List[ClassInfo]] = {}
        self._submodules: Dict[ast.ClassDef, Dict[str, List[ClassInfo]]] = {}
        self._call_targets: Dict[FunctionNode, List[Tuple[ast.Call, FunctionNode, int]]] = {}
        #: The entry point each compiled function was first reached from (by ``regions``).
        self._entry_of: Dict[FunctionNode, FunctionNode] = {}
        self.module_classes = self._module_classes()

    @classmethod
    def for_module(
        cls,
        symbols: ModuleSymbols,
        index: ModuleIndex,
        lines: Sequence[str],
        filename: str,
        options: Options,
        links: Optional[Dict[str, str]] = None,
    ) -> "RegionFinder":
        """The finder for one module analysed with ``options``; ``links`` (entry point ->
        what reaches it) overrides ``options.links``."""
        text = "\n".join(lines)
        return cls(
            symbols,
            index,
            options.entry_points,
            whole_module=options.whole_module(filename) and symbols.imports_torch,
            mentions_compile="compile" in text,
            mentions_nested_class=_NESTED_CLASS.search(text) is not None,
            links=dict(options.links) if links is None else links,
        )

    # ------------------------------------------------------------------ classes
    def _class_named(
        self, name: str, where: Optional[ast.AST], scope: Optional[FunctionNode]
    ) -> Optional[ClassInfo]:
        """The class that ``name`` refers to in a block (``where``) inside function ``scope``.

        Classes of the same block first, then those of the enclosing functions, then the module's.
        """
        if self._nested:
            blocks: List[Optional[ast.AST]] = [where] if where is not None else []
            current = scope
            while current is not None:
                blocks.append(current)
                current = self.index.parent_of(current)
            for block in blocks:
                for node, (container, _) in self._nested.items():
                    if container is block and node.name == name:
                        return self._classes[node]
        return self.symbols.classes.get(name)

    def _classes_named(self, name: str) -> List[ClassInfo]:
        """Classes of that name: the module-level one, else those defined below the top level."""
        if name in self.symbols.classes:
            return [self.symbols.classes[name]]
        return [self._classes[node] for node in self._nested if node.name == name]

    def _local_bases(self, info: ClassInfo) -> List[ClassInfo]:
        """The bases of a class that are classes of this module, in base order."""
        found = self._bases.get(info.node)
        if found is None:
            where, scope = self._nested.get(info.node, (None, None))
            found = []
            for base in info.node.bases:
                if isinstance(base, ast.Name):
                    resolved = self._class_named(base.id, where, scope)
                    if resolved is not None and resolved is not info:
                        found.append(resolved)
            self._bases[info.node] = found
        return found

    def _subclasses_of(self, info: ClassInfo) -> List[ClassInfo]:
        """Classes of this module that derive from ``info``, directly or not."""
        if self._subclasses is None:
            direct: Dict[ast.ClassDef, List[ClassInfo]] = {}
            for candidate in self._classes.values():
                for base in self._local_bases(candidate):
                    direct.setdefault(base.node, []).append(candidate)
            self._subclasses = direct
        found = self._all_subclasses.get(info.node)
        if found is None:
            found = self._all_subclasses[info.node] = []
            seen = {info.node}
            stack = list(self._subclasses.get(info.node, ()))
            while stack:
                candidate = stack.pop()
                if candidate.node not in seen:
                    seen.add(candidate.node)
                    found.append(candidate)
                    stack.extend(self._subclasses.get(candidate.node, ()))
        return found

    # ------------------------------------------------------------------ nn.Module classes
    def _module_classes(self) -> Set[ast.ClassDef]:
        """Classes of this module that are nn.Module subclasses.

        A class is one when a base is ``torch.nn.<anything>`` or a local module class, or when it
        defines ``forward`` (itself or through local bases) on top of an imported base we cannot
        see (``PreTrainedModel``, a mixin from another file).
        """
        result: Set[ast.ClassDef] = set()
        changed = True
        while changed:
            changed = False
            for node, info in self._classes.items():
                if node in result:
                    continue
                if self._has_module_base(info, result) or (
                    self._lookup_method(info, "forward") and self._has_foreign_base(info, set())
                ):
                    result.add(node)
                    changed = True
        return result

    def _has_module_base(self, info: ClassInfo, known: Set[ast.ClassDef]) -> bool:
        if any(base.node in known for base in self._local_bases(info)):
            return True
        for base in info.node.bases:
            if (self.symbols.qualified_name(base) or "").startswith("torch.nn."):
                return True
        return False

    def _has_foreign_base(self, info: ClassInfo, seen: Set[ast.ClassDef]) -> bool:
        if info.node in seen:
            return False
        seen.add(info.node)
        local = self._local_bases(info)
        local_names = {base.node.name for base in local}
        if any(self._has_foreign_base(base, seen) for base in local):
            return True
        for base in info.node.bases:
            if isinstance(base, ast.Name) and base.id in local_names:
                continue
            qualified = self.symbols.qualified_name(base) or ""
            if qualified not in ("object", "") and not qualified.startswith(_NOT_FOREIGN):
                return True
        return False

    # ------------------------------------------------------------------ entry points
    def _compile_targets(self) -> Iterator[FunctionNode]:
        """Functions named by ``torch.compile(...)`` calls and decorators, at any depth."""
        symbols = self.symbols
        if self._scan is not None:
            functions: Sequence[FunctionNode] = self._scan.functions
        else:
            functions = list(symbols.functions.values()) + list(self._owner)
        for function in functions:
            for decorator in function.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if symbols.qualified_name(target) == "torch.compile":
                    yield function
        if not self.mentions_compile or self._scan is None:
            return
        instances = self._instance_classes(self._scan)
        for node, scope in self._scan.calls:
            if symbols.qualified_name(node.func) != "torch.compile":
                continue
            args = list(node.args) + [k.value for k in node.keywords if k.arg == "model"]
            for arg in args[:1]:
                yield from self._functions_named_by(arg, scope, instances)

    def _instance_classes(self, scan: ModuleScan) -> Dict[str, ClassInfo]:
        """Names bound to an instance of a local class anywhere in the module (``m = Net()``)."""
        bound: Dict[str, ClassInfo] = {}
        for targets, call, scope in scan.call_assignments:
            cls = call.func
            if isinstance(cls, ast.Name):
                info = self._class_named(cls.id, scope, scope)
                if info is not None:
                    for target in targets:
                        if isinstance(target, ast.Name):
                            bound[target.id] = info
        return bound

    def _functions_named_by(
        self, expr: ast.expr, scope: Optional[FunctionNode], instances: Dict[str, ClassInfo]
    ) -> Iterator[FunctionNode]:
        """What ``torch.compile(expr)`` compiles, for a call made inside function ``scope``."""
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name):
            info = self._class_named(expr.func.id, scope, scope)
            if info is not None:
                yield from self._forward_of(info)
        elif isinstance(expr, ast.Name):
            functions = list(self._resolve_name(scope, expr.id)) if scope is not None else []
            if not functions and expr.id in self.symbols.functions:
                functions = [self.symbols.functions[expr.id]]
            if functions:
                yield from functions
            elif expr.id in instances:
                yield from self._forward_of(instances[expr.id])
        elif isinstance(expr, ast.Attribute):
            for info in self._classes.values():
                if expr.attr in info.methods:
                    yield info.methods[expr.attr]

    def _forward_of(self, info: ClassInfo) -> Iterator[FunctionNode]:
        method = self._lookup_method(info, "forward")
        if method is not None:
            yield method

    def _lookup_method(
        self, info: ClassInfo, method: str, seen: Optional[Set[ast.ClassDef]] = None
    ) -> Optional[FunctionNode]:
        """A method of a local class or of its local bases (first match in base order)."""
        seen = seen if seen is not None else set()
        if info.node in seen:
            return None
        seen.add(info.node)
        if method in info.methods:
            return info.methods[method]
        for base in self._local_bases(info):
            found = self._lookup_method(base, method, seen)
            if found is not None:
                return found
        return None

    def _dispatch(self, owner: ClassInfo, method: str) -> List[FunctionNode]:
        """What ``self.method()`` in a method of ``owner`` may run: ``self`` is an instance of
        ``owner`` or of one of its subclasses, which may override the method."""
        found: List[FunctionNode] = []
        for info in [owner, *self._subclasses_of(owner)]:
            resolved = self._lookup_method(info, method)
            if resolved is not None and all(resolved is not f for f in found):
                found.append(resolved)
        return found

    def _entry_point(self, spec: str) -> Iterator[FunctionNode]:
        owner, _, method = spec.partition(".")
        if spec.startswith("@"):  # a decorator of compiled code: its wrappers run
            decorator = self.symbols.functions.get(spec[1:])
            if decorator is not None:
                yield from self._wrappers(decorator)
        elif method:
            for info in self._classes_named(owner):
                found = self._lookup_method(info, method)
                if found is not None:
                    yield found
        elif spec in self.symbols.functions:
            yield self.symbols.functions[spec]
        else:
            for info in self._classes_named(spec):
                yield from self._forward_of(info)

    def _entries(self) -> Iterator[Tuple[FunctionNode, str]]:
        """The entry points known to be compiled, each with what reaches it from another file
        (empty for this module's own entry points)."""
        for node in self.module_classes:
            yield from ((f, "") for f in self._forward_of(self._classes[node]))
        yield from ((f, "") for f in self._compile_targets())
        for spec in self.entry_points:
            through = self.links.get(spec, "")
            yield from ((f, through) for f in self._entry_point(spec))

    # ------------------------------------------------------------------ closure
    def _is_eager(self, function: FunctionNode) -> bool:
        return function.name.startswith(GRAPHMEND_HELPER_PREFIX) or self.disabled(function)

    def disabled(self, function: FunctionNode) -> bool:
        """Whether ``function`` is decorated to run eagerly (``@torch.compiler.disable``):
        compiled code that calls it breaks the graph there."""
        for decorator in function.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if self.symbols.qualified_name(target) in _EAGER_DECORATORS:
                return True
        return False

    def _enclosing_nested(self, function: FunctionNode) -> Iterator[Dict[str, FunctionNode]]:
        current: Optional[FunctionNode] = function
        while current is not None:
            yield self.index.facts(current).nested
            current = self.index.parent_of(current)

    def _callees(self, function: FunctionNode) -> Iterator[FunctionNode]:
        for _, callee, _ in self.call_targets(function):
            yield callee
        # Decorators defined here that wrap this function: their wrappers run on each call.
        for decorator in function.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if isinstance(target, ast.Name) and target.id in self.symbols.functions:
                yield from self._wrappers(self.symbols.functions[target.id])

    def call_targets(self, function: FunctionNode) -> List[Tuple[ast.Call, FunctionNode, int]]:
        """The calls of ``function`` to functions of this module, each with the function it
        runs and how many of that function's parameters the call does not pass (1 for ``self``
        of ``self.m()``, ``super().m()``, a submodule's ``self.sub()`` and the methods of
        attributes that ``__init__`` assigns, ``self.sub.m()``; else 0). Computed once per
        function (``regions`` and the argument kinds both ask)."""
        found = self._call_targets.get(function)
        if found is None:
            found = self._call_targets[function] = []
            owner = self._owner.get(function)
            for node in self.index.facts(function).calls:
                func = node.func
                if isinstance(func, ast.Name):
                    for callee in self._resolve_plain_call(function, func.id):
                        found.append((node, callee, 0))
                elif isinstance(func, ast.Attribute):
                    for callee, skipped in self._method_targets(func, owner):
                        found.append((node, callee, skipped))
        return found

    def _method_targets(
        self, func: ast.Attribute, owner: Optional[ClassInfo]
    ) -> Iterator[Tuple[FunctionNode, int]]:
        """What ``receiver.name(...)`` runs, in a method of ``owner``, with the parameters the
        call does not pass."""
        receiver = func.value
        if owner is not None and isinstance(receiver, ast.Name) and receiver.id in ("self", "cls"):
            methods = self._dispatch(owner, func.attr)
            for callee in methods:
                yield callee, self._bound_parameters(callee)
            if not methods:
                # ``self.encoder(...)``: what calling the instance ``__init__`` assigned runs
                # (an nn.Module's forward, another class's __call__).
                for info in self._submodule_classes(owner).get(func.attr, ()):
                    method = "forward" if info.node in self.module_classes else "__call__"
                    instance_call = self._lookup_method(info, method)
                    if instance_call is not None:
                        yield instance_call, 1
        elif owner is not None and is_own_class(receiver):  # `type(self).m(self, x)`
            for callee in self._dispatch(owner, func.attr):
                yield callee, _bound_through_class(callee)
        elif owner is not None and is_super_call(receiver):
            found = self._lookup_in_bases(owner, func.attr)
            if found is not None:
                yield found, self._bound_parameters(found)
        elif isinstance(receiver, ast.Name) and receiver.id in self.symbols.classes:
            found = self._lookup_method(self.symbols.classes[receiver.id], func.attr)
            if found is not None:
                yield found, _bound_through_class(found)
        elif owner is not None:
            # ``self.structure.init_inputs(...)``: a method of what ``__init__`` assigned
            attribute = self_attribute(receiver)
            for info in self._submodule_classes(owner).get(attribute or "", ()):
                found = self._lookup_method(info, func.attr)
                if found is not None:
                    yield found, self._bound_parameters(found)

    def _bound_parameters(self, method: FunctionNode) -> int:
        """How many parameters a call through an instance binds: none for a staticmethod."""
        return 0 if is_staticmethod(method) else 1

    def _submodule_classes(self, owner: ClassInfo) -> Dict[str, List[ClassInfo]]:
        """``self.<name> = LocalClass(...)`` in the initialisers of ``owner`` and its bases."""
        found = self._submodules.get(owner.node)
        if found is None:
            found = self._submodules[owner.node] = {}
            for info in [owner, *self._local_bases(owner)]:
                init = info.methods.get("__init__")
                if init is None:
                    continue
                for name, value in self_call_assignments(self.index.facts(init).bindings):
                    cls = value.func
                    if isinstance(cls, ast.Name):
                        found.setdefault(name, []).extend(self._classes_named(cls.id))
        return found

    def _wrappers(self, decorator: FunctionNode) -> Iterator[FunctionNode]:
        """The functions nested in ``decorator`` (at any depth: decorator factories) that call
        a parameter of a function around them: the wrappers that run in place of the decorated
        function. The others (``docstring_decorator(fn)``, which returns ``fn``) run when the
        decorator is applied, not when the decorated function is called."""
        stack: List[Tuple[FunctionNode, FrozenSet[str]]] = [(decorator, frozenset())]
        while stack:
            outer, parameters = stack.pop()
            arguments = outer.args
            every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
            parameters = parameters | {a.arg for a in every}
            for inner in self.index.facts(outer).nested.values():
                calls = self.index.facts(inner).calls
                if any(isinstance(c.func, ast.Name) and c.func.id in parameters for c in calls):
                    yield inner
                stack.append((inner, parameters))

    def _resolve_name(self, function: FunctionNode, name: str) -> Iterator[FunctionNode]:
        """The function ``name`` names inside ``function``: its own nested functions or those of
        the functions around it, innermost first."""
        for scope in self._enclosing_nested(function):
            if name in scope:
                yield scope[name]
                return

    def _resolve_plain_call(self, function: FunctionNode, name: str) -> Iterator[FunctionNode]:
        found = False
        for resolved in self._resolve_name(function, name):
            found = True
            yield resolved
        if not found and name in self.symbols.functions:
            yield self.symbols.functions[name]

    def _lookup_in_bases(self, owner: ClassInfo, method: str) -> Optional[FunctionNode]:
        for base in self._local_bases(owner):
            found = self._lookup_method(base, method)
            if found is not None:
                return found
        return None

    def external_references(
        self, regions: Dict[FunctionNode, Region], label: str
    ) -> "ExternalReferences":
        """What the regions call that this module (``label``: its file name) does not define,
        each with the entry point it is reached through: ``label: Class.forward`` for this
        module's own, or what reached the caller from another file."""
        found = ExternalReferences()
        for function, region in regions.items():
            if not region.compiled:
                continue
            owner = region.owner
            entry = self._entry_of.get(function, function)
            entry_owner = self._owner.get(entry)
            name = f"{entry_owner.node.name}.{entry.name}" if entry_owner else entry.name
            caller = region.through or f"{label}: {name}"
            top_level = owner is not None and self.symbols.classes.get(owner.node.name) is owner
            for node in self.index.facts(function).calls:
                func = node.func
                if isinstance(func, ast.Name):
                    if func.id in self.symbols.imports and not any(
                        self._resolve_plain_call(function, func.id)
                    ):
                        found.functions.setdefault(func.id, caller)
                elif isinstance(func, ast.Attribute) and owner is not None and top_level:
                    receiver = func.value
                    if isinstance(receiver, ast.Name) and receiver.id in ("self", "cls"):
                        if self._lookup_method(owner, func.attr) is None:
                            found.methods.setdefault((owner.node.name, func.attr, False), caller)
                    elif is_super_call(receiver) and not self._lookup_in_bases(owner, func.attr):
                        found.methods.setdefault((owner.node.name, func.attr, True), caller)
            for decorator in function.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if isinstance(target, ast.Name) and target.id not in self.symbols.functions:
                    if target.id in self.symbols.imports:
                        found.decorators.setdefault(target.id, caller)
        return found

    def regions(self) -> Dict[FunctionNode, Region]:
        """The compiled regions; with ``whole_module``, every other function too (not known to
        be compiled: ``Region.compiled`` is False)."""
        result: Dict[FunctionNode, Region] = {}
        work: List[FunctionNode] = []
        for function, through in self._entries():
            if function not in result and not self._is_eager(function):
                owner = self._owner.get(function)
                result[function] = Region(function, owner, entry=True, through=through)
                self._entry_of[function] = function
                work.append(function)
        while work:
            function = work.pop()
            through = result[function].through
            for callee in self._callees(function):
                if callee not in result and not self._is_eager(callee):
                    owner = self._owner.get(callee)
                    result[callee] = Region(callee, owner, entry=False, through=through)
                    self._entry_of[callee] = self._entry_of[function]
                    work.append(callee)
        if self.whole_module and self._scan is not None:
            for function in self._scan.functions:
                if function not in result and not self._is_eager(function):
                    owner = self._owner.get(function)
                    result[function] = Region(function, owner, entry=True, compiled=False)
        return result
