"""What the names of one module refer to: imports, classes, functions, module-level bindings."""

from __future__ import annotations

import ast
import functools
import os
import re
from dataclasses import dataclass, field
from typing import (
    AbstractSet, Dict, FrozenSet, Iterable, Iterator, List, Optional, Sequence, Set, Tuple, Union,
)

from .index import assignment_targets, node_memo, root_name, walk

FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]
#: The ``torch.jit`` APIs of code meant for ``torch.jit.script`` (tracing alone is not matched).
_SCRIPTING = re.compile(
    r"\btorch\.jit\.(script|is_scripting|ignore|unused|export|interface|annotate|Final)\b"
)


@dataclass
class ClassInfo:
    node: ast.ClassDef
    methods: Dict[str, FunctionNode] = field(default_factory=dict)


@dataclass
class ModuleSymbols:
    """Module-level facts the detectors need, gathered in one pass over the top level."""

    tree: ast.Module
    #: local name -> qualified name, from imports (``np`` -> ``numpy``,
    #: ``F`` -> ``torch.nn.functional``).
    imports: Dict[str, str] = field(default_factory=dict)
    functions: Dict[str, FunctionNode] = field(default_factory=dict)
    classes: Dict[str, ClassInfo] = field(default_factory=dict)
    #: module-level names bound by assignment, with the assigned value.
    assignments: Dict[str, ast.expr] = field(default_factory=dict)
    imports_torch: bool = False
    #: local name -> every qualified name an import binds it to (``try``/``except`` imports).
    import_sources: Dict[str, Set[str]] = field(default_factory=dict)
    #: The modules imported with ``from <module> import *`` (resolved as other imports are).
    star_imports: List[str] = field(default_factory=list)
    #: The functions of the module that Dynamo is known to trace (the compiled regions), set by
    #: the engine where that is known; None where any function may be compiled (``scope=all``).
    traced: Optional[FrozenSet[FunctionNode]] = field(default=None, repr=False, compare=False)
    #: The dotted package relative imports are resolved from ("": not known).
    _package: str = field(default="", repr=False, compare=False)
    #: ``scripting_marker``'s answer, once computed.
    _scripting: Optional[Tuple[str, ...]] = field(default=None, repr=False, compare=False)

    @classmethod
    def collect(cls, tree: ast.Module, package: str = "") -> "ModuleSymbols":
        """The symbols of ``tree``, a module of ``package`` (dotted; "" where not known: its
        relative imports keep the names they import)."""
        symbols = cls(tree)
        symbols._package = package
        for node in tree.body:
            symbols._collect_statement(node)
        return symbols

    def _collect_statement(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Import):
            self._collect_import(node)
        elif isinstance(node, ast.ImportFrom):
            self._collect_import_from(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.functions[node.name] = node
        elif isinstance(node, ast.ClassDef):
            info = ClassInfo(node)
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    info.methods[item.name] = item
            self.classes[node.name] = info
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.assignments[target.id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            self.assignments[node.target.id] = node.value
        elif isinstance(node, (ast.If, ast.Try)):
            self._collect_guarded(node)

    def _collect_guarded(self, node: Union[ast.If, ast.Try]) -> None:
        """Imports guarded by availability checks (``if is_torch_available(): import torch``)."""
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                self._collect_statement(child)
        for handler in getattr(node, "handlers", []):
            for child in handler.body:
                self._collect_statement(child)

    def _collect_import(self, node: ast.Import) -> None:
        for alias in node.names:
            local = alias.asname or alias.name.split(".")[0]
            self.imports[local] = alias.name if alias.asname else local
            self.import_sources.setdefault(local, set()).add(self.imports[local])
            self.imports_torch |= alias.name.split(".")[0] == "torch"

    def _collect_import_from(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        base = module
        if node.level:  # resolved only in a known package: else the names stay as imported
            base = resolve_relative(module, node.level, self._package) if self._package else ""
        for alias in node.names:
            if alias.name == "*":
                self.star_imports.append(base or module or ".")
                continue
            qualified = f"{base}.{alias.name}" if base else alias.name
            self.imports[alias.asname or alias.name] = qualified
            self.import_sources.setdefault(alias.asname or alias.name, set()).add(qualified)
        self.imports_torch |= module.split(".")[0] == "torch" and not node.level

    def qualified_name(self, node: ast.expr) -> Optional[str]:
        """Dotted name of an expression built from names and attributes, resolved through imports.

        ``torch.nn.functional.relu`` for ``F.relu`` after ``import torch.nn.functional as F``;
        a name that is not imported keeps its own spelling (``logger.warning``).
        """
        parts: List[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        parts.append(self.imports.get(node.id, node.id))
        return ".".join(reversed(parts))

    def may_run_code(self, node: ast.expr) -> bool:
        """Whether reading ``node`` (``self.name``, or ``self.cfg.name`` of what ``self``
        holds) may run code of this module: one of its classes defines a method ``name``
        (which may be a property), gives ``name`` an object made by a call, in its body or
        after it (a descriptor: ``scale = property(get)``, ``alpha = Tracked()``,
        ``Model.gain = property(get)``), serves ``name`` from its ``__getattr__``, or defines
        ``__getattribute__``, or ``__getattr__`` where the module sets no attribute ``name``."""
        if not (isinstance(node, ast.Attribute) and self_chain(node)):
            return False
        names, every_read, lookup = _attribute_code(self.tree)
        return node.attr in names or every_read or (
            lookup and node.attr not in _attributes_stored(self.tree)
        )

    def may_be_unset(self, node: ast.expr) -> bool:
        """Whether ``node`` (``self.name``, or ``self.block.name`` of what ``self`` holds) may
        not be set when it is read: the module deletes
        attributes of that name, probes for them (``hasattr(self, "name")``,
        ``getattr(self, "name", None)``), or sets them in an ``__init__`` only on some paths
        (``if use_layer_scale: self.register_buffer("gamma", ...)``)."""
        attribute = node.attr if isinstance(node, ast.Attribute) and self_chain(node) else None
        unset = deleted_attributes(self.tree) | probed_attributes(self.tree)
        return attribute is not None and not attribute.startswith("__") and bool(
            (unset | conditionally_set_attributes(self.tree)) & {attribute, "*"}
        )

    def scripting_marker(self, lines: Sequence[str]) -> Optional[str]:
        """The first ``torch.jit`` scripting API the module uses (``torch.jit.is_scripting``...).

        Such a module is written to be compiled by ``torch.jit.script`` too, which cannot compile
        the helpers that fixes emit; computed from the source lines once per module.
        """
        if self._scripting is None:
            found = next(
                (m.group(0) for line in lines for m in [_SCRIPTING.search(line)] if m), None
            )
            self._scripting = (found,) if found else ()
        return self._scripting[0] if self._scripting else None

    def defined_here(self) -> Set[str]:
        """Names this module defines itself (which shadow builtins such as ``print``)."""
        return set(self.functions) | set(self.classes) | set(self.assignments) | set(self.imports)


def resolve_relative(module: str, level: int, package: str) -> str:
    """The absolute name of ``from <level dots><module> import ...`` in a module of
    ``package`` (a file outside any package, ``package`` "", is taken to sit with the modules
    it imports so); "" where ``package`` is too short for ``level``."""
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return ""
    parts = parts[: len(parts) - (level - 1)]
    return ".".join([*parts, *([module] if module else [])])


def package_of(name: str, path: str) -> str:
    """The package of the module ``name`` (dotted) whose file is ``path``."""
    return name if os.path.basename(path) == "__init__.py" else name.rpartition(".")[0]


@node_memo
def deleted_attributes(tree: ast.Module) -> FrozenSet[str]:
    """Attribute names that the file may delete from an object: ``del obj.X``,
    ``delattr(obj, "X")`` (a parent may delete its layers' ``layer_idx``)."""
    names: Set[str] = set()
    for node in walk(tree):
        if isinstance(node, ast.Delete):
            names |= {t.attr for t in node.targets if isinstance(t, ast.Attribute)}
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "delattr":
            name = node.args[1] if len(node.args) == 2 else None
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                names.add(name.value)
            elif name is not None:
                names.add("*")  # a computed name: any attribute
    return frozenset(names)


@node_memo
def probed_attributes(tree: ast.Module) -> FrozenSet[str]:
    """Attribute names that the file tests ``self`` for: ``hasattr(self, "X")``,
    ``getattr(self, "X", default)`` (a name computed at run time is a generic lookup, not
    counted)."""
    names: Set[str] = set()
    for node in walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        arity = {"hasattr": 2, "getattr": 3}.get(node.func.id)
        if arity is None or len(node.args) != arity or not is_self(node.args[0]):
            continue  # another object's attribute is not `self`'s
        name = node.args[1]
        if isinstance(name, ast.Constant) and isinstance(name.value, str):
            names.add(name.value)
    return frozenset(names)


@node_memo
def conditionally_set_attributes(tree: ast.Module) -> FrozenSet[str]:
    """Attribute names that a class of ``tree`` sets on ``self`` in its methods where neither
    its ``__init__`` nor those of its bases of this file set them on every path (set under an
    ``if``, a loop or a ``try``, after an early ``return``, or only in another method:
    ``enable_lora()``), and no class body of theirs gives a value; judged class by class
    (another class that always sets the name does not make it set), and for functions outside
    classes against every class."""
    classes = [node for node in walk(tree) if isinstance(node, ast.ClassDef)]
    by_name = {node.name: node for node in classes}

    def surely(node: ast.ClassDef, seen: FrozenSet[str]) -> Set[str]:
        found = _class_values(node)
        found |= {
            name
            for statement in node.body
            if isinstance(statement, ast.FunctionDef) and statement.name == "__init__"
            for name in _surely_set(statement.body)
        }
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id in by_name and base.id not in seen:
                found |= surely(by_name[base.id], seen | {base.id})
        return found

    names: Set[str] = set()
    in_methods: Set[int] = set()
    every_class: Set[str] = set()
    for node in classes:
        methods = [s for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
        in_methods |= {id(sub) for method in methods for sub in walk(method)}
        kept = surely(node, frozenset({node.name}))
        every_class |= kept
        names |= {n for m in methods for sub in walk(m) for n in _set_on_self(sub)} - kept
    loose = {  # `def init_weights(self): self.w = ...` outside a class
        name
        for function in walk(tree)
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
        and id(function) not in in_methods
        for sub in walk(function)
        for name in _set_on_self(sub)
    }
    return frozenset(names | (loose - every_class))


def _class_values(node: ast.ClassDef) -> Set[str]:
    """The names a class body gives a value (``gamma = None``, ``scale: float = 1.0``)."""
    return {
        target.id
        for statement in node.body
        if isinstance(statement, ast.Assign)
        or isinstance(statement, ast.AnnAssign) and statement.value is not None
        for target in (
            statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        )
        if isinstance(target, ast.Name)
    }


@node_memo
def _attribute_code(tree: ast.Module) -> Tuple[FrozenSet[str], bool, bool]:
    """For ``may_run_code``: the names whose reads may run code (the methods of the classes,
    their class-level objects made by calls other than a dataclass ``field()``, also when
    attached after the body, the names a ``__getattr__`` tests for), whether a class defines
    ``__getattribute__``, and whether one defines ``__getattr__``."""
    names: Set[str] = set()
    every_read = lookup = False
    classes = {node.name for node in walk(tree) if isinstance(node, ast.ClassDef)}
    for node in walk(tree):
        attached = _attached_to_class(node, classes)  # `Model.gain = property(getter)`
        if attached is not None:
            names.add(attached)
        if not isinstance(node, ast.ClassDef):
            continue
        for statement in node.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                every_read |= statement.name == "__getattribute__"
                lookup |= statement.name == "__getattr__"
                names.add(statement.name)
                if statement.name == "__getattr__":  # `if name == "alpha":` serves `alpha`
                    names |= {
                        c.value for c in walk(statement)
                        if isinstance(c, ast.Constant) and isinstance(c.value, str)
                    }
            elif isinstance(statement, (ast.Assign, ast.AnnAssign)) and isinstance(
                statement.value, ast.Call
            ):
                maker = statement.value.func
                if getattr(maker, "id", getattr(maker, "attr", "")) != "field":
                    names |= {t.id for t in assignment_targets(statement)
                              if isinstance(t, ast.Name)}
    return frozenset(names), every_read, lookup


def _attached_to_class(node: ast.AST, classes: AbstractSet[str]) -> Optional[str]:
    """The name that ``node`` gives a class of the file an object made by a call outside its
    body: ``Model.gain = property(getter)``, ``setattr(Model, "gain", property(getter))``."""
    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
        for target in node.targets:
            if isinstance(target, ast.Attribute) and getattr(target.value, "id", "") in classes:
                return target.attr
    if isinstance(node, ast.Call) and _is_setattr(node) and len(node.args) == 3:
        owner, key, value = node.args
        if getattr(owner, "id", "") in classes and isinstance(value, ast.Call):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                return key.value
    return None


@node_memo
def _attributes_stored(tree: ast.Module) -> FrozenSet[str]:
    """The attribute names the module gives a value: stored into an object, set on ``self``
    by name (``register_buffer``), or bound in a class body."""
    names: Set[str] = set()
    for node in walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            names |= {t.attr for t in assignment_targets(node) if isinstance(t, ast.Attribute)}
        names |= set(_set_on_self(node))
        if isinstance(node, ast.ClassDef):
            names |= _class_values(node) | {
                s.name for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
    return frozenset(names)


@node_memo
def attribute_stores(tree: ast.Module) -> Dict[str, Tuple[ast.expr, ...]]:
    """For each name ``X``, the values the file stores into ``<object>.X``: ``self.proj =
    nn.Linear(4, 4)`` in a class, ``model.fc = nn.Identity()`` in a function that builds a
    model, ``setattr(model, "fc", layer)``, ``self.add_module("fc", layer)``, an element of
    ``self.a, self.b = a, b``; ``UNKNOWN_STORE`` for a value not seen (``self.a, self.b =
    pair``, ``self.n += 1``, ``del self.m``, ``for self.i in ...``, ``with ... as self.f``)."""
    found: Dict[str, List[ast.expr]] = {}
    plain: Set[int] = set()  # the ids of the targets whose values are recorded
    for node in walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            for target in assignment_targets(node):
                for stored, value in _stored_parts(target, node.value):
                    found.setdefault(stored.attr, []).append(value)
                    plain.add(id(stored))
        elif isinstance(node, ast.Call) and _is_setattr(node) and len(node.args) == 3:
            key = node.args[1]
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                found.setdefault(key.value, []).append(node.args[2])
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _SETTING_METHODS
            and len(node.args) >= 2
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):  # `self.add_module("proj", nn.Identity())`, `self.register_buffer("mask", m)`
            found.setdefault(node.args[0].value, []).append(node.args[1])
    for node in walk(tree):
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            if id(node) not in plain:
                found.setdefault(node.attr, []).append(UNKNOWN_STORE)
    return {name: tuple(values) for name, values in found.items()}


def known_stores(tree: ast.Module, name: Optional[str]) -> Tuple[ast.expr, ...]:
    """The values ``attribute_stores`` knows the file stores into an attribute ``name``; none
    where the file may store into any attribute by a name it computes (then no judgement of
    "each value stored into ``self.X``" can be made)."""
    if name is None or sets_attributes_by_computed_name(tree):
        return ()
    return attribute_stores(tree).get(name, ())


#: What ``attribute_stores`` gives for a value it does not see: a name no code can bind.
UNKNOWN_STORE = ast.Name(
    id="<a store not followed>", ctx=ast.Load(), lineno=0, col_offset=0, end_lineno=0,
    end_col_offset=0,
)


def _stored_parts(target: ast.expr, value: ast.expr) -> List[Tuple[ast.Attribute, ast.expr]]:
    """The attributes ``target = value`` stores into, each with its value: ``self.a`` of
    ``self.a = v``, and of ``self.a, self.b = v, w`` (a display of as many values)."""
    if isinstance(target, ast.Attribute):
        return [(target, value)]
    if (
        isinstance(target, (ast.Tuple, ast.List))
        and isinstance(value, (ast.Tuple, ast.List))
        and len(target.elts) == len(value.elts)
        and not any(isinstance(e, ast.Starred) for e in [*target.elts, *value.elts])
    ):
        return [part for t, v in zip(target.elts, value.elts) for part in _stored_parts(t, v)]
    return []


#: Functions that store into, or delete, an attribute named by their second argument.
SETTERS = ("setattr", "delattr")
#: Attributes through which code stores into any attribute of an object.
GENERIC_STORES = frozenset({"__dict__", "__setattr__", "__delattr__", "__setstate__"})


@node_memo
def sets_attributes_by_computed_name(tree: ast.Module) -> bool:
    """Whether ``tree`` may store into any attribute of an object, by a name it computes:
    ``vars(self).update(kw)``, ``self.__dict__[k] = v``, ``object.__setattr__(self, k, v)``,
    ``setattr``/``delattr`` given anything but a string literal or not called (``map(setattr,
    ...)``)."""
    named = named_setters(tree)  # `setattr(obj, "X", v)`: stores `X` only
    return any(
        isinstance(node, ast.Attribute) and node.attr in GENERIC_STORES
        or isinstance(node, ast.Name) and node.id == "vars"
        or isinstance(node, ast.Name) and node.id in SETTERS and id(node) not in named
        or _registered_by_computed_name(node)
        or isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load)
        and isinstance(node.value, ast.Attribute) and node.value.attr in _REGISTRIES
        for node in walk(tree)
    )


@node_memo
def named_setters(tree: ast.Module) -> Dict[int, str]:
    """The ``setattr``/``delattr`` calls of ``tree`` given a string literal for a name
    (``setattr(obj, "X", v)``): the id of each call's function, with that name."""
    return {
        id(node.func): node.args[1].value
        for node in walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", None) in SETTERS
        and len(node.args) > 1
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    }


#: Where ``nn.Module`` keeps what it registers: ``self._modules["lin"] = layer`` stores ``lin``.
_REGISTRIES = frozenset({"_modules", "_parameters", "_buffers"})


def _registered_by_computed_name(node: ast.AST) -> bool:
    """``self.register_buffer(name, t)``, ``nn.Module.register_buffer(self, "buf", t)``,
    ``add_module(**kw)``: a registration whose name is not the first argument's string
    literal (``attribute_stores`` reads only that form)."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _SETTING_METHODS
    ):
        return False
    first = node.args[0] if node.args else None
    return not (
        isinstance(first, ast.Constant) and isinstance(first.value, str)
        and not any(isinstance(a, ast.Starred) for a in node.args)
        and not any(k.arg in (None, "name") for k in node.keywords)
    )


def _surely_set(block: Sequence[ast.stmt]) -> Set[str]:
    """The attributes of ``self`` that running ``block`` sets on every path that goes on (up
    to a statement that may return)."""
    found: Set[str] = set()
    for statement in block:
        if isinstance(statement, (ast.Assign, ast.AnnAssign)):
            found |= set(_set_on_self(statement))
        elif isinstance(statement, ast.Expr):
            found |= set(_set_on_self(statement.value))
        elif isinstance(statement, ast.If):
            found |= _surely_set(statement.body) & _surely_set(statement.orelse)
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            found |= _surely_set(statement.body)
        if any(isinstance(sub, ast.Return) for sub in walk(statement)):
            break  # what follows an early return may not run
    return found


def _set_on_self(node: ast.AST) -> List[str]:
    """The attributes of ``self`` that ``node`` sets: ``self.X = ...`` (and ``self.X: T =
    ...``), ``self.register_buffer("X", ...)``, ``self.add_module("X", ...)``, ``setattr(self,
    "X", ...)``."""
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = assignment_targets(node)
        return [name for target in targets if (name := self_attribute(target)) is not None]
    if not isinstance(node, ast.Call) or len(node.args) < 2:
        return []
    func, key = node.func, node.args[1 if _is_setattr(node) else 0]
    on_self = is_self(node.args[0]) if _is_setattr(node) else (
        isinstance(func, ast.Attribute) and is_self(func.value) and func.attr in _SETTING_METHODS
    )
    if on_self and isinstance(key, ast.Constant) and isinstance(key.value, str):
        return [key.value]
    return []


#: Methods of a module that set an attribute by name.
_SETTING_METHODS = frozenset({
    "register_buffer", "register_parameter", "add_module", "register_module",
})


def _is_setattr(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Name) and call.func.id == "setattr"


def is_staticmethod(function: FunctionNode) -> bool:
    """Whether ``function`` is decorated ``@staticmethod`` (a call through an instance binds
    no ``self``)."""
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in function.decorator_list)


def is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def self_attribute(node: ast.expr) -> Optional[str]:
    """``name`` where ``node`` is ``self.name``."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.attr if node.value.id == "self" else None
    return None


def self_chain(node: ast.expr) -> bool:
    """An attribute chain of ``self`` (``self.config.window``), through attributes only."""
    root = node
    while isinstance(root, ast.Attribute):
        root = root.value
    return isinstance(node, ast.Attribute) and is_self(root)


@functools.lru_cache(maxsize=4096)
def locals_from_self(caller: FunctionNode) -> FrozenSet[str]:
    """The locals ``caller`` binds to what ``self`` holds: what it iterates over or takes
    from ``self`` (``for block in self.blocks``, ``head = self.heads[task]``)."""
    names: Set[str] = set()
    for node in walk(caller):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            if taken_from_self(node.iter):
                names |= {n.id for n in walk(node.target) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Assign) and taken_from_self(node.value):
            names |= {
                n.id for t in node.targets for n in walk(t) if isinstance(n, ast.Name)
            }
    return frozenset(names)


#: Calls that hand on (the elements of) what they are given.
_HANDING_ON = frozenset({
    "enumerate", "zip", "reversed", "list", "tuple", "sorted", "getattr", "dict",
})


def taken_from_self(value: ast.expr) -> bool:
    """An attribute or item rooted at ``self``, or what holds or hands on one: a display
    (``(self.a, self.b)``), ``getattr(self, ...)``, ``zip(self.layers, ...)``,
    ``self.blocks.values()``, ``list(self.modules())[1:2]``."""
    if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Call):
        return taken_from_self(value.value)
    if isinstance(value, (ast.Name, ast.Attribute, ast.Subscript)):
        return root_name(value) == "self"
    if isinstance(value, (ast.Tuple, ast.List)):
        return any(taken_from_self(element) for element in value.elts)
    if isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Name) and func.id in _HANDING_ON:
            return any(taken_from_self(argument) for argument in value.args)
        return isinstance(func, ast.Attribute) and taken_from_self(func.value)
    return False


def is_super_call(node: ast.AST) -> bool:
    """``super()`` (with or without arguments)."""
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def is_own_class(node: ast.expr) -> bool:
    """``type(self)`` or ``self.__class__``: the class of the instance a method runs on."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type":
        return len(node.args) == 1 and not node.keywords and is_self(node.args[0])
    return self_attribute(node) == "__class__"


def self_call_assignments(nodes: Iterable[ast.AST]) -> Iterator[Tuple[str, ast.Call]]:
    """``(name, call)`` for each ``self.<name> = <call>(...)`` among ``nodes``."""
    for node in nodes:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            for name in filter(None, map(self_attribute, node.targets)):
                yield name, node.value
