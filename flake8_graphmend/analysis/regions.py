"""Which functions of a module Dynamo traces: the compiled regions.

Entry points are ``forward`` of ``nn.Module`` subclasses, functions decorated with or passed to
``torch.compile``, and the names given by the user. A region also holds everything an entry calls
in the same module, transitively: ``self.method()``, module functions, nested helpers, and the
inner functions of decorators applied to region functions.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Sequence, Set

from .index import ModuleIndex
from .symbols import ClassInfo, FunctionNode, ModuleSymbols

#: Decorators that keep a function out of Dynamo's trace (it runs eagerly).
_EAGER_DECORATORS = {"torch.compiler.disable", "torch._dynamo.disable"}
#: Prefix of the helpers that the graphmend fixers emit (fixers/helpers.py). They are built to
#: compile (or, for [Defer], to run after the graph), so they are never analysed or rewritten.
GRAPHMEND_HELPER_PREFIX = "_graphmend_"


@dataclass(frozen=True)
class Region:
    """A function traced by Dynamo."""

    function: FunctionNode
    #: The class the function is a method of, if any.
    owner: Optional[ClassInfo]
    #: True for entry points (their parameters receive the compiled call's inputs).
    entry: bool


@dataclass
class ExternalReferences:
    """Names that compiled code calls but its own module does not define."""

    #: ``self.name()`` / ``super().name()`` with no such method in the module's classes.
    methods: Set[str] = field(default_factory=set)
    #: Imported functions called by their plain name.
    functions: Set[str] = field(default_factory=set)
    #: Imported decorators applied to compiled functions (their inner functions run compiled).
    decorators: Set[str] = field(default_factory=set)

    def update(self, other: "ExternalReferences") -> None:
        self.methods |= other.methods
        self.functions |= other.functions
        self.decorators |= other.decorators


def _is_super_call(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


class RegionFinder:
    """Computes the compiled regions of one module."""

    def __init__(
        self,
        symbols: ModuleSymbols,
        index: ModuleIndex,
        entry_points: Sequence[str] = (),
        whole_module: bool = False,
        mentions_compile: bool = True,
    ):
        self.symbols = symbols
        self.index = index
        #: False when the source never says "compile": no ``torch.compile(...)`` site to look for.
        self.mentions_compile = mentions_compile
        self.entry_points = tuple(entry_points)
        self.whole_module = whole_module
        self._owner: Dict[FunctionNode, ClassInfo] = {}
        for info in symbols.classes.values():
            for method in info.methods.values():
                self._owner[method] = info
        self.module_classes = self._module_classes()

    @classmethod
    def for_module(
        cls,
        symbols: ModuleSymbols,
        index: ModuleIndex,
        lines: Sequence[str],
        filename: str,
        options,
        entry_points: Optional[Sequence[str]] = None,
    ) -> "RegionFinder":
        """The finder for one module analysed with ``options`` (an ``engine.Options``)."""
        return cls(
            symbols,
            index,
            options.entry_points if entry_points is None else entry_points,
            whole_module=options.whole_module(filename) and symbols.imports_torch,
            mentions_compile=any("compile" in line for line in lines),
        )

    # ------------------------------------------------------------------ nn.Module classes
    def _module_classes(self) -> Set[str]:
        """Local classes that are nn.Module subclasses.

        A class is one when a base is ``torch.nn.<anything>`` or a local module class, or when it
        defines ``forward`` (itself or through local bases) on top of an imported base we cannot
        see (``PreTrainedModel``, a mixin from another file).
        """
        classes = self.symbols.classes
        result: Set[str] = set()
        changed = True
        while changed:
            changed = False
            for name, info in classes.items():
                if name in result:
                    continue
                if self._has_module_base(info, result) or (
                    self._local_lookup(name, "forward") and self._has_foreign_base(name, set())
                ):
                    result.add(name)
                    changed = True
        return result

    def _has_module_base(self, info: ClassInfo, known: Set[str]) -> bool:
        for base in info.node.bases:
            qualified = self.symbols.qualified_name(base) or ""
            if qualified.startswith("torch.nn.") or qualified in known:
                return True
        return False

    def _has_foreign_base(self, class_name: str, seen: Set[str]) -> bool:
        if class_name in seen:
            return False
        seen.add(class_name)
        for base in self.symbols.classes[class_name].node.bases:
            qualified = self.symbols.qualified_name(base) or ""
            if qualified in self.symbols.classes:
                if self._has_foreign_base(qualified, seen):
                    return True
            elif qualified not in ("object", "") and not qualified.startswith(("typing.", "abc.", "enum.")):
                return True
        return False

    def _local_lookup(self, class_name: str, method: str) -> bool:
        return self._lookup_method(class_name, method) is not None

    # ------------------------------------------------------------------ entry points
    def _compile_targets(self) -> Iterator[FunctionNode]:
        """Functions named by ``torch.compile(...)`` calls and decorators."""
        symbols = self.symbols
        methods = [m for info in symbols.classes.values() for m in info.methods.values()]
        for function in list(symbols.functions.values()) + methods:
            for decorator in function.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if symbols.qualified_name(target) == "torch.compile":
                    yield function
        if not self.mentions_compile:
            return
        instances = self._instance_classes()
        for node in self.index.all_calls():
            if symbols.qualified_name(node.func) != "torch.compile":
                continue
            args = list(node.args) + [k.value for k in node.keywords if k.arg == "model"]
            for arg in args[:1]:
                yield from self._functions_named_by(arg, instances)

    def _instance_classes(self) -> Dict[str, str]:
        """Names bound to an instance of a local class anywhere in the module (``model = Net()``)."""
        bound: Dict[str, str] = {}
        for node in ast.walk(self.symbols.tree):
            if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
                continue
            cls = node.value.func
            if isinstance(cls, ast.Name) and cls.id in self.symbols.classes:
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        bound[target.id] = cls.id
        return bound

    def _functions_named_by(self, expr: ast.expr, instances: Dict[str, str]) -> Iterator[FunctionNode]:
        classes = self.symbols.classes
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in classes:
            yield from self._forward_of(expr.func.id)
        elif isinstance(expr, ast.Name):
            if expr.id in self.symbols.functions:
                yield self.symbols.functions[expr.id]
            elif expr.id in instances:
                yield from self._forward_of(instances[expr.id])
        elif isinstance(expr, ast.Attribute):
            for info in classes.values():
                if expr.attr in info.methods:
                    yield info.methods[expr.attr]

    def _forward_of(self, class_name: str) -> Iterator[FunctionNode]:
        method = self._lookup_method(class_name, "forward")
        if method is not None:
            yield method

    def _lookup_method(self, class_name: str, method: str, seen: Optional[Set[str]] = None) -> Optional[FunctionNode]:
        """A method of a local class or of its local bases (first match in base order)."""
        seen = seen if seen is not None else set()
        info = self.symbols.classes.get(class_name)
        if info is None or class_name in seen:
            return None
        seen.add(class_name)
        if method in info.methods:
            return info.methods[method]
        for base in info.node.bases:
            if isinstance(base, ast.Name):
                found = self._lookup_method(base.id, method, seen)
                if found is not None:
                    return found
        return None

    def _user_entry_points(self) -> Iterator[FunctionNode]:
        for spec in self.entry_points:
            owner, _, method = spec.partition(".")
            if spec.startswith("@"):  # a decorator of compiled code: its inner functions run
                decorator = self.symbols.functions.get(spec[1:])
                if decorator is not None:
                    yield from self.index.facts(decorator).nested.values()
            elif method:
                found = self._lookup_method(owner, method)
                if found is not None:
                    yield found
            elif spec in self.symbols.functions:
                yield self.symbols.functions[spec]
            elif spec in self.symbols.classes:
                yield from self._forward_of(spec)

    def _entries(self) -> Iterator[FunctionNode]:
        if self.whole_module:
            functions = list(self.index.all_functions())
            for function in functions:  # outer functions first, so nested ones know their parent
                self.index.facts(function)
            yield from functions
            return
        for name in self.module_classes:
            yield from self._forward_of(name)
        yield from self._compile_targets()
        yield from self._user_entry_points()

    # ------------------------------------------------------------------ closure
    def _is_eager(self, function: FunctionNode) -> bool:
        if function.name.startswith(GRAPHMEND_HELPER_PREFIX):
            return True
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
        owner = self._owner.get(function)
        for node in self.index.facts(function).calls:
            func = node.func
            if isinstance(func, ast.Name):
                yield from self._resolve_plain_call(function, func.id)
            elif isinstance(func, ast.Attribute):
                receiver = func.value
                if isinstance(receiver, ast.Name) and receiver.id in ("self", "cls") and owner is not None:
                    found = self._lookup_method(owner.node.name, func.attr)
                elif _is_super_call(receiver) and owner is not None:
                    found = self._lookup_in_bases(owner, func.attr)
                elif isinstance(receiver, ast.Name) and receiver.id in self.symbols.classes:
                    found = self._lookup_method(receiver.id, func.attr)
                else:
                    found = None
                if found is not None:
                    yield found
        # Decorators defined here that wrap this function: their inner functions run on each call.
        for decorator in function.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if isinstance(target, ast.Name) and target.id in self.symbols.functions:
                yield from self.index.facts(self.symbols.functions[target.id]).nested.values()

    def _resolve_plain_call(self, function: FunctionNode, name: str) -> Iterator[FunctionNode]:
        for scope in self._enclosing_nested(function):
            if name in scope:
                yield scope[name]
                return
        if name in self.symbols.functions:
            yield self.symbols.functions[name]

    def _lookup_in_bases(self, owner: ClassInfo, method: str) -> Optional[FunctionNode]:
        for base in owner.node.bases:
            if isinstance(base, ast.Name):
                found = self._lookup_method(base.id, method)
                if found is not None:
                    return found
        return None

    def external_references(self, regions: Dict[FunctionNode, Region]) -> "ExternalReferences":
        """What the regions call that this module does not define (defined in another file)."""
        found = ExternalReferences()
        for function, region in regions.items():
            owner = region.owner
            for node in self.index.facts(function).calls:
                func = node.func
                if isinstance(func, ast.Name):
                    if not any(self._resolve_plain_call(function, func.id)):
                        imported = self.symbols.imports.get(func.id)
                        if imported is not None:
                            found.functions.add(imported.rpartition(".")[2])
                elif isinstance(func, ast.Attribute) and owner is not None:
                    receiver = func.value
                    if isinstance(receiver, ast.Name) and receiver.id in ("self", "cls"):
                        if self._lookup_method(owner.node.name, func.attr) is None:
                            found.methods.add(func.attr)
                    elif _is_super_call(receiver) and self._lookup_in_bases(owner, func.attr) is None:
                        found.methods.add(func.attr)
            for decorator in function.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if isinstance(target, ast.Name) and target.id not in self.symbols.functions:
                    imported = self.symbols.imports.get(target.id)
                    if imported is not None:
                        found.decorators.add(imported.rpartition(".")[2])
        return found

    def entry_points_for(self, references: "ExternalReferences") -> Set[str]:
        """The entry-point specs under which this module defines what other modules call."""
        specs = {name for name in references.functions if name in self.symbols.functions}
        specs |= {f"@{name}" for name in references.decorators if name in self.symbols.functions}
        for class_name, info in self.symbols.classes.items():
            specs |= {f"{class_name}.{name}" for name in references.methods if name in info.methods}
        return specs

    def regions(self) -> Dict[FunctionNode, Region]:
        result: Dict[FunctionNode, Region] = {}
        work: List[FunctionNode] = []
        for function in self._entries():
            if function not in result and not self._is_eager(function):
                result[function] = Region(function, self._owner.get(function), entry=True)
                work.append(function)
        while work:
            function = work.pop()
            for callee in self._callees(function):
                if callee not in result and not self._is_eager(callee):
                    result[callee] = Region(callee, self._owner.get(callee), entry=False)
                    work.append(callee)
        return result
