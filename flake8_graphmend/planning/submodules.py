"""What a call of a submodule defined in the same file returns: a new tensor nothing else holds?

``hidden_states = self.layer[-1](hidden_states)`` hands on what the submodule's ``forward``
returns. When every class the attribute can hold there is known (``self.layer`` built in the
class's own methods, from classes of this file or ``torch.nn``), and each ``forward`` returns,
at the element the caller takes (``outputs[:2][0]``), a tensor it computed (``x + y``) and kept
nowhere else, then the caller holds the only reference, and a ``torch.where`` selection in its
place cannot be told apart. Forward hooks that hand back another tensor are not seen, as for the
``torch.nn`` modules of ``FRESH_MODULES``.
"""

from __future__ import annotations

import ast
from collections import Counter
from typing import Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple, Union

from ..analysis.hooks import code_given_to_modules
from ..analysis.index import (
    MATCH_STATEMENTS, assignment_targets, child_blocks, child_nodes, node_memo, parameter_names,
    parent_map, root_name, walk,
)
from ..analysis.inplace import builds_in_place_module, short_name
from ..analysis.layers import holds_setting
from ..analysis.purity import ALIASING_OPERATIONS, FRESH_OPERATIONS, fresh_torch_call
from ..analysis.symbols import ClassInfo, FunctionNode, ModuleSymbols, is_self, self_attribute
from ..analysis.values import constant_int

#: ``nn`` modules whose call returns a new tensor (unless built with ``inplace=True``).
FRESH_MODULES = frozenset({
    "Linear", "LayerNorm", "RMSNorm", "GroupNorm", "BatchNorm1d", "BatchNorm2d", "Conv1d",
    "Conv2d", "Conv3d", "Embedding", "GELU", "ReLU", "SiLU", "Tanh", "Sigmoid", "Softmax",
    "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
})
#: Tensor attributes and methods that read metadata or compute a new value (never hand the
#: tensor on).
_READS = frozenset({
    "dtype", "shape", "device", "ndim", "size", "dim", "numel", "requires_grad", "is_cuda",
    "layout", "is_floating_point", "element_size",
}) | FRESH_OPERATIONS
#: Calls that read or change a function's locals by name.
NAMESPACE_CALLS = frozenset({"locals", "vars", "eval", "exec", "globals"})
#: How deep submodule calls are followed.
_DEPTH = 3

Path = Tuple[int, ...]


def returns_new_tensor(
    call: ast.Call, path: Path, owner: Optional[ClassInfo], symbols: ModuleSymbols, depth: int = 0
) -> bool:
    """Whether ``self.<sub>(...)`` or ``self.<subs>[k](...)`` returns, at ``path`` (element
    indices into returned tuples; ``()`` for the value itself), a new tensor (or a new tuple of
    such tensors) that the submodule keeps nowhere: true for every class it may hold that
    accepts the call's arguments, in a file that gives modules no code to run (a forward hook
    may keep the output, or replace it with a tensor held elsewhere)."""
    candidates = submodule_classes(call.func, owner, symbols)
    if not candidates or depth > _DEPTH or code_given_to_modules(symbols.tree) is not None:
        return False
    accepted = 0
    for name in candidates:
        if name.startswith("torch.nn."):
            short = name.rsplit(".", 1)[-1].removesuffix(WITHOUT_STATISTICS)
            if path or short not in FRESH_MODULES:
                return False
            accepted += 1
            continue
        forward = forward_of(symbols.classes[name], symbols)
        if forward is None:
            return False
        if not _accepts(forward, call):
            continue  # the call would raise TypeError with this class
        if not _Callee(forward, symbols.classes[name], symbols, depth).new_at_return(path):
            return False
        accepted += 1
    return accepted > 0


def method_returns_new_tensor(
    function: FunctionNode, owner: ClassInfo, call: ast.Call, symbols: ModuleSymbols
) -> bool:
    """Whether the method ``function`` of ``owner``, run by ``call`` (``self.project(x)``,
    ``super().forward(x)``), returns a new tensor (or a tuple of new ones, or no tensor) that
    it keeps nowhere; a decorated one (a static method, a wrapper) is not judged."""
    return (
        not function.decorator_list
        and _accepts(function, call)
        and _Callee(function, owner, symbols, 0).new_at_return(())
    )


def submodule_classes(
    func: ast.expr, owner: Optional[ClassInfo], symbols: ModuleSymbols
) -> Optional[List[str]]:
    """The classes ``self.<attr>`` (or, for ``self.<attr>[k]``, its element ``k``) may hold:
    names of classes of this file, or qualified ``torch.nn`` names; None when not known (an
    assignment from anything else, a store into an element, a module built with
    ``inplace=True``)."""
    element = func.slice if isinstance(func, ast.Subscript) else None
    attribute = self_attribute(func.value if isinstance(func, ast.Subscript) else func)
    if owner is None or attribute is None:
        return None
    answers = _classes_held(owner.node)
    key = (attribute, None if element is None else ast.dump(element))
    if key not in answers:
        answers[key] = _submodule_classes(attribute, element, owner, symbols)
    found = answers[key]
    return None if found is None else list(found)


@node_memo
def _classes_held(owner: ast.ClassDef) -> Dict[Tuple[str, Optional[str]], Optional[List[str]]]:
    """``submodule_classes`` of the attributes (and elements) of ``owner`` asked so far."""
    return {}


def _submodule_classes(
    attribute: str, element: Optional[ast.expr], owner: ClassInfo, symbols: ModuleSymbols
) -> Optional[List[str]]:
    if not _only_built_and_called(attribute, owner, symbols):
        return None
    added: List[Tuple[List[str], bool]] = []  # the classes of each module added, in order
    ordered = True  # one list, built once in one method, each module added once, in this order
    methods_adding = 0
    for method in owner.methods.values():
        found = list(additions(method, attribute, element is not None, symbols))
        if any(classes is None for classes, _ in found):
            return None
        if found:
            methods_adding += 1
            resets = sum(place.endswith("assigned") for _, place in found)
            ordered = (
                ordered
                and all("loop" not in place for _, place in found)
                and resets == 1
                and found[0][1].endswith("assigned")
                and not any(isinstance(n, ast.Return) for n in walk(method))
            )
            added += [
                (classes, place.startswith("body")) for classes, place in found if classes
            ]
    if not added:
        return None
    if element is None or methods_adding > 1 or not ordered:
        return sorted({name for classes, _ in added for name in classes})
    index = constant_int(element)
    if index is None:
        return sorted({name for classes, _ in added for name in classes})
    return sorted({name for classes in _at_index(added, index) for name in classes})


#: Methods of a module list (or module) that read it or change no element.
_READING_METHODS = frozenset({
    "parameters", "named_parameters", "buffers", "named_buffers", "modules", "named_modules",
    "children", "named_children", "to", "train", "eval", "float", "half", "double", "cuda",
    "cpu", "requires_grad_", "zero_grad", "state_dict", "extra_repr", "__len__", "__iter__",
})
#: Calls that may set an attribute of a module or an element of a list by name.
_SETTING_CALLS = frozenset({
    "setattr", "add_module", "register_module", "__setattr__", "__setitem__", "vars",
})


def _only_built_and_called(attribute: str, owner: ClassInfo, symbols: ModuleSymbols) -> bool:
    """Whether ``self.<attribute>`` is, in ``owner``, its bases and subclasses of this file,
    only built in ``owner`` (assigned, appended to) and otherwise only called, indexed,
    iterated or read: not handed on, deleted, replaced elementwise or set by name."""
    used_otherwise = _attributes_used_otherwise(owner.node)
    if owner.node not in used_otherwise:  # filled for every attribute in one pass
        used_otherwise[owner.node] = _find_attributes_used_otherwise(owner, symbols)
    found = used_otherwise[owner.node]
    return found is not None and attribute not in found


@node_memo
def _attributes_used_otherwise(owner: ast.ClassDef) -> Dict[ast.ClassDef, Optional[Set[str]]]:
    """The answer of ``_find_attributes_used_otherwise`` for ``owner``, once computed."""
    return {}


def _find_attributes_used_otherwise(owner: ClassInfo, symbols: ModuleSymbols) -> Optional[Set[str]]:
    """The attributes of ``self`` that ``owner``'s related classes use otherwise than
    ``_only_built_and_called`` allows; None where a call may set any of them by name."""
    # what `additions` reads: the statements of the owner's methods, not of functions in them
    read = {id(node) for method in owner.methods.values() for node, _ in _method_nodes(method)}
    found: Set[str] = set()
    for info in related_classes(owner, symbols):
        parents = parent_map(info.node)
        for node in walk(info.node):
            if isinstance(node, ast.Call) and short_name(node) in _SETTING_CALLS:
                return None
            attribute = self_attribute(node) if isinstance(node, ast.expr) else None
            if attribute is None or attribute in found:
                continue
            if info is not owner and not isinstance(getattr(node, "ctx", None), ast.Load):
                found.add(attribute)
            elif _setting_read(parents.get(id(node)), symbols):
                continue  # `self.o.in_features` of an `nn` layer: a number read
            elif not _plain_use(node, parents, builds=info is owner and id(node) in read):
                found.add(attribute)
    return found


#: Attributes of a module that are the module's own state (its submodules, buffers, flags).
_MODULE_STATE = frozenset({"_modules", "_buffers", "_parameters", "__dict__"})
#: Builtins that read a module they are handed and keep no reference to it.
_INSPECTING = frozenset({"len", "isinstance", "id", "type", "repr", "str", "print", "hasattr"})


def changed_after_built(attribute: str, tree: ast.Module) -> bool:
    """Whether code of ``tree`` may change, after it is built, a module that some object
    keeps as ``.<attribute>``, or hand it on: a store into it or its parts
    (``self.seq[1] = m``, ``m.seq.inplace = True``, ``self.seq._modules[k] = m``), a method
    of it other than one that reads (``self.seq.append(m)``, ``self.norm.__init__(3)``), a
    call it is handed to (``nn.Sequential.append(self.seq, m)``, ``setattr(self.seq, ...)``),
    another name or place it is put (``seq = self.seq``), a store of the attribute outside
    a class (``model.seq = ...`` in a module function), or a walk over all modules that sets
    their attributes."""
    return _sets_walked_modules(tree) or attribute in _changed_attributes(tree)


@node_memo
def _changed_attributes(tree: ast.Module) -> FrozenSet[str]:
    """The attribute names whose modules ``changed_after_built`` finds changed or handed on."""
    parents = parent_map(tree)
    in_class = {
        id(node)
        for statement in tree.body
        if isinstance(statement, ast.ClassDef)
        for node in walk(statement)
    }
    changed: Set[str] = set()
    for node in walk(tree):
        if not isinstance(node, ast.Attribute) or node.attr in changed:
            continue
        if isinstance(node.ctx, ast.Store):
            if id(node) not in in_class:
                changed.add(node.attr)  # an assignment that no class makes
        elif _changes_or_hands_on(node, parents):
            changed.add(node.attr)
    return frozenset(changed)


#: Methods of a module that walk its submodules.
_WALKS = frozenset({"modules", "children", "named_modules", "named_children"})


@node_memo
def _sets_walked_modules(tree: ast.Module) -> bool:
    """Whether code of ``tree`` sets an attribute of each module it walks, whichever module
    that is (``for m in self.modules(): m.inplace = True``, ``self.apply(fn)`` with a ``fn``
    that sets one)."""
    for node in walk(tree):
        walked: Set[str] = set()
        body: List[ast.AST] = []
        if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.iter, ast.Call):
            if short_name(node.iter) in _WALKS:
                walked = {n.id for n in walk(node.target) if isinstance(n, ast.Name)}
                body = list(getattr(node, "body", [])) or [node]
        elif isinstance(node, ast.Call) and short_name(node) == "apply" and node.args:
            applied = _applied_function(node.args[0], tree)
            if applied is None:
                return True  # a function applied to every module, not found in the file
            positional = [a.arg for a in applied.args.args]
            walked = set(positional[1:2] if positional[:1] == ["self"] else positional[:1])
            body = [applied.body] if isinstance(applied, ast.Lambda) else list(applied.body)
        for inner in (sub for part in body for sub in walk(part)):
            targets = getattr(inner, "targets", None) or [getattr(inner, "target", None)]
            if any(
                isinstance(t, (ast.Attribute, ast.Subscript)) and root_name(t) in walked
                for t in targets
            ) or (
                isinstance(inner, ast.Call) and short_name(inner) == "setattr" and inner.args
                and root_name(inner.args[0]) in walked
            ):
                return True
    return False


def _applied_function(
    value: ast.expr, tree: ast.Module
) -> Optional[Union[ast.Lambda, FunctionNode]]:
    """The lambda, module function or method (``self._init_weights``, by its name in any
    class of ``tree``) that ``module.apply(value)`` runs on each module; None if not one."""
    if isinstance(value, ast.Lambda):
        return value
    name = value.id if isinstance(value, ast.Name) else self_attribute(value)
    found = [
        node for node in walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name
    ]
    return found[0] if len(found) == 1 else None


def _changes_or_hands_on(node: ast.expr, parents: Dict[int, ast.AST]) -> bool:
    """Whether the use of the module ``node`` (loaded) may change it or hand it on."""
    parent = parents.get(id(node))
    while isinstance(parent, ast.Subscript) and parent.value is node or (
        isinstance(parent, ast.Attribute) and parent.attr in _MODULE_STATE
    ):
        node, parent = parent, parents.get(id(parent))  # an element, or its own namespace
    if isinstance(getattr(node, "ctx", None), (ast.Store, ast.Del)):
        return True
    if isinstance(parent, ast.Call):
        if parent.func is node:
            return False  # called
        if _iterated_through(parent, parents):
            return False  # `for i, m in enumerate(self.X)`: as `for m in self.X`
        return not (isinstance(parent.func, ast.Name) and parent.func.id in _INSPECTING)
    if isinstance(parent, ast.Attribute):
        call = parents.get(id(parent))
        if isinstance(call, ast.Call) and call.func is parent:
            return parent.attr not in _READING_METHODS and parent.attr != "forward"
        return isinstance(parent.ctx, (ast.Store, ast.Del))  # `self.act.inplace = True`
    return not isinstance(parent, (ast.For, ast.comprehension, ast.Compare, ast.Expr))


#: Calls that hand on the elements of what they are given, one by one, when iterated over.
_ITERATING = frozenset({"enumerate", "zip", "reversed"})


def _iterated_through(call: ast.Call, parents: Dict[int, ast.AST]) -> bool:
    """Whether ``call`` is ``enumerate(...)``, ``zip(...)`` or ``reversed(...)`` iterated over
    by a ``for`` or a comprehension, which binds its target to the elements."""
    loop = parents.get(id(call))
    return (
        isinstance(call.func, ast.Name)
        and call.func.id in _ITERATING
        and not call.keywords
        and isinstance(loop, (ast.For, ast.AsyncFor, ast.comprehension))
        and loop.iter is call
    )


@node_memo
def _method_nodes(method: FunctionNode) -> Tuple[Tuple[ast.AST, str], ...]:
    """The nodes of ``method``'s own statements (not of functions or classes in it), each
    with where its statement is (``_statements``)."""
    return tuple(
        (node, place)
        for statement, place in _statements(method.body, "body")
        for node in _own_nodes(statement)
    )


def _setting_read(parent: Optional[ast.AST], symbols: ModuleSymbols) -> bool:
    """Whether ``parent`` reads a number setting of an ``nn`` layer (``self.o.in_features``)."""
    return (
        isinstance(parent, ast.Attribute)
        and isinstance(parent.ctx, ast.Load)
        and holds_setting(parent, symbols)
    )


def _plain_use(node: ast.AST, parents: Dict[int, ast.AST], builds: bool) -> bool:
    parent = parents.get(id(node))
    if isinstance(parent, ast.Assign):
        return builds and parent.targets == [node]
    if isinstance(parent, ast.Subscript) and parent.value is node:
        return isinstance(parent.ctx, ast.Load)
    if isinstance(parent, ast.Call):
        return parent.func is node or short_name(parent) in ("len", "enumerate", "zip")
    call = parents.get(id(parent))
    if isinstance(parent, ast.Attribute) and isinstance(call, ast.Call) and call.func is parent:
        return parent.attr in _READING_METHODS or (builds and parent.attr == "append")
    if isinstance(parent, (ast.For, ast.comprehension)):
        return parent.iter is node
    return False


def file_bases(info: ClassInfo, symbols: ModuleSymbols) -> List[str]:
    """The names of the classes of this file that ``info`` names as its bases."""
    names = [b.id for b in info.node.bases if isinstance(b, ast.Name)]
    return [name for name in names if name in symbols.classes]


def related_classes(owner: ClassInfo, symbols: ModuleSymbols) -> List[ClassInfo]:
    """``owner``, and the classes of this file it derives from or that derive from it."""
    known = symbols.classes.get(owner.node.name)
    if known is None or known.node is not owner.node:
        return [owner]  # a class nested in a function or class: not among the file's classes
    related = {owner.node.name}
    changed = True
    while changed:
        changed = False
        for name, info in symbols.classes.items():
            linked = name not in related and (
                any(base in related for base in file_bases(info, symbols))  # a subclass
                or any(  # a base (a nested `owner` is not among the file's classes)
                    name in file_bases(symbols.classes[r], symbols)
                    for r in related
                    if r in symbols.classes
                )
            )
            if linked:
                related.add(name)
                changed = True
    return [symbols.classes[name] for name in sorted(related)]


def _at_index(added: List[Tuple[List[str], bool]], index: int) -> Iterator[List[str]]:
    """The classes of the additions that may be element ``index`` of the list: the k-th module
    added is addition i when i runs and exactly k of those before it do (all unconditional
    ones, some conditional ones)."""
    if index < 0:
        added = added[::-1]
        index = -index - 1
    unconditional_before = 0
    for position, (classes, unconditional) in enumerate(added):
        if unconditional_before <= index <= position:
            yield classes
        unconditional_before += unconditional


def additions(
    method: FunctionNode,
    attribute: str,
    element: bool,
    symbols: ModuleSymbols,
    imported: bool = False,
) -> Iterator[Tuple[Optional[List[str]], str]]:
    """Each module ``method`` adds to ``self.<attribute>`` (``element``: to the list it holds),
    with its classes (None: not known) and where it is added: ``body`` (a statement of the
    method's own body), ``branch`` (under an ``if``, ``with``, ``try``) or ``loop``, followed
    by `` assigned`` for the first module of an assignment (which starts the list anew; an
    empty list is an addition of no class)."""
    for node, place in _storing_nodes(method, attribute):
        for value in _stores_into(node, attribute):
            if value is None:
                yield None, place
                continue
            for position, (classes, many) in enumerate(
                _built(value, element, method, symbols, imported)
            ):
                kind = "loop" if many else place
                yield classes, kind + (" assigned" if position == 0 else "")
            if element and not _builds_elements(value):
                yield [], place + " assigned"  # an empty list
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and _is_self_attribute(node.func.value, attribute)
            and node.func.attr in _ADDING_METHODS
        ):
            if not element or node.func.attr != "append" or len(node.args) != 1:
                yield None, place
                continue
            yield classes_of_call(node.args[0], method, symbols, imported), place


def _storing_nodes(method: FunctionNode, attribute: str) -> List[Tuple[ast.AST, str]]:
    """The assignments and calls of ``method`` that may store into or add to
    ``self.<attribute>``, in their order, each with where it is (``_statements``): those that
    name it (``self.<attribute>``) and those that may set any attribute
    (``self.add_module(name, m)``, ``self._modules[k] = m``)."""
    index = _index_storing_nodes(method)
    named, anywhere = index.get(attribute, []), index.get("", [])
    merged = sorted(named + anywhere, key=lambda n: n[0]) if named and anywhere else None
    return [(node, place) for _, node, place in merged or named or anywhere]


@node_memo
def _index_storing_nodes(method: FunctionNode) -> Dict[str, List[Tuple[int, ast.AST, str]]]:
    """``_storing_nodes`` of every attribute: each assignment or call of ``method`` with its
    position, under every ``X`` of ``self.X`` it names ("": it may set any attribute)."""
    index: Dict[str, List[Tuple[int, ast.AST, str]]] = {}
    if not any(isinstance(node, _STORING) and _attributes_set(node) for node in walk(method)):
        return index  # most methods (`forward`) store into no attribute: no need to place
    nodes = (
        (node, place)
        for node, place in _method_nodes(method)
        if isinstance(node, _STORING)
    )
    for position, (node, place) in enumerate(nodes):
        for attribute in _attributes_set(node):
            index.setdefault(attribute, []).append((position, node, place))
    return index


_STORING = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Call)


def _attributes_set(node: ast.AST) -> Set[str]:
    """Every ``X`` such that ``node`` (an assignment or a call) may store into ``self.X`` or
    add to it (``_stores_into``, and the adding methods of ``additions``); "" where it may
    set any attribute (``self.add_module(name, m)``, ``self._modules[k] = m``)."""
    named: Set[Optional[str]] = set()
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        for target in assignment_targets(node):
            named.add(self_attribute(target))
            if isinstance(target, ast.Subscript):
                named.add(self_attribute(target.value))
    elif isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute):
            named.add(self_attribute(node.func.value))
        if short_name(node) == "setattr" and node.args:
            named.add(self_attribute(node.args[0]))
        if _registers_on_self(node):
            named.add("")
    if named & _NAMESPACES:
        named.add("")
    return {attribute for attribute in named if attribute is not None}


def _stores_into(node: ast.AST, attribute: str) -> Iterator[Optional[ast.expr]]:
    """The value ``node`` stores into ``self.<attribute>`` (by assignment, or by name:
    ``self.add_module("<attribute>", m)``), or None for a change of it that is not known
    (``+=``, an element replaced, ``setattr`` or ``self._modules`` with a computed name)."""
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        for target in assignment_targets(node):
            named = _constant_key(target) if isinstance(target, ast.Subscript) else None
            if _is_self_attribute(target, attribute):
                yield node.value if isinstance(node, ast.Assign) else None
            elif isinstance(target, ast.Subscript) and _is_self_attribute(target.value, attribute):
                if node.value is None or not _moved_element(node.value, attribute):
                    yield None  # an element replaced
            elif isinstance(target, ast.Subscript) and self_attribute(target.value) in _NAMESPACES:
                if named is None or named == attribute:  # `self._modules[name] = m`
                    yield node.value if named and isinstance(node, ast.Assign) else None
    elif (
        isinstance(node, ast.Call) and short_name(node) == "setattr" and node.args
        and _is_self_attribute(node.args[0], attribute)
    ):
        yield None  # `setattr(self.seq, "norm", m)`
    elif isinstance(node, ast.Call) and _registers_on_self(node):
        if short_name(node) == "update" and not node.args and all(k.arg for k in node.keywords):
            # `self.__dict__.update(calls=n)`: the names are written out
            yield from (k.value for k in node.keywords if k.arg == attribute)
            return
        named, value = _registered(node)
        if named is None or value is None:
            yield None  # a name computed at run time: any attribute
        elif named == attribute:
            yield value


#: ``nn.Module`` methods that return the module itself (moved, cast or switched).
_RETURNING_MODULE = frozenset({
    "to", "cuda", "cpu", "half", "float", "double", "bfloat16", "type", "train", "eval",
    "requires_grad_",
})


def _moved_element(value: ast.expr, attribute: str) -> bool:
    """Whether ``value`` is an element of ``self.<attribute>`` moved or cast
    (``self.block[i].to(device)``, transformers' ``parallelize``): the same module."""
    return (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
        and value.func.attr in _RETURNING_MODULE
        and isinstance(value.func.value, ast.Subscript)
        and _is_self_attribute(value.func.value.value, attribute)
    )


def _constant_key(target: ast.Subscript) -> Optional[str]:
    """``"calls"`` of ``self.__dict__["calls"]``; None for a key computed at run time."""
    key = target.slice
    return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None


#: Methods of a module list or sequential (of any module) that add a module to it.
_ADDING_METHODS = frozenset({
    "append", "extend", "insert", "add_module", "register_module", "__setattr__",
})
#: Methods of ``nn.Module`` that set a submodule (or any attribute) by name.
_REGISTERING_METHODS = frozenset({"add_module", "register_module", "__setattr__"})
#: Attributes of a module that hold its submodules (or attributes) by name.
_NAMESPACES = frozenset({"_modules", "__dict__"})


def _registers_on_self(call: ast.Call) -> bool:
    """``self.add_module(name, m)``, ``self.register_module(...)``, ``self.__setattr__(...)``,
    ``setattr(self, name, m)`` or a method of ``self._modules`` (``update``)."""
    func = call.func
    if isinstance(func, ast.Attribute) and self_attribute(func.value) in _NAMESPACES:
        return True  # `self._modules.update(...)`
    if isinstance(func, ast.Attribute):
        return func.attr in _REGISTERING_METHODS and is_self(func.value)
    return (
        isinstance(func, ast.Name) and func.id == "setattr" and bool(call.args)
        and is_self(call.args[0])
    )


def _registered(call: ast.Call) -> Tuple[Optional[str], Optional[ast.expr]]:
    """The constant name and the value that ``_registers_on_self`` call sets (None where the
    name is computed or the arguments are not written out)."""
    arguments = call.args[1:] if isinstance(call.func, ast.Name) else call.args
    if len(arguments) != 2 or call.keywords or any(
        isinstance(a, ast.Starred) for a in arguments
    ):
        return None, None
    name, value = arguments
    if isinstance(name, ast.Constant) and isinstance(name.value, str):
        return name.value, value
    return None, value


def _built(
    value: ast.expr,
    element: bool,
    method: FunctionNode,
    symbols: ModuleSymbols,
    imported: bool = False,
) -> Iterator[Tuple[Optional[List[str]], bool]]:
    """The classes of the modules ``self.<attribute> = value`` stores: one module, or (for an
    element) those of a ``nn.ModuleList`` built from a list display or comprehension (which
    adds any number: ``True``), none for ``None``."""
    if not element:
        yield classes_of_call(value, method, symbols, imported), False
        return
    if isinstance(value, ast.Constant) and value.value is None:
        return  # no list: calling an element fails
    qualified = (
        symbols.qualified_name(value.func) if isinstance(value, ast.Call) else None
    ) or ""
    if not (isinstance(value, ast.Call) and qualified.endswith("ModuleList")) or value.keywords:
        yield None, False
        return
    if not value.args:
        return
    modules = value.args[0]
    if len(value.args) != 1:
        yield None, False
    elif isinstance(modules, (ast.List, ast.Tuple)):
        for module in modules.elts:
            yield classes_of_call(module, method, symbols, imported), False
    elif isinstance(modules, (ast.ListComp, ast.GeneratorExp)):
        yield classes_of_call(modules.elt, method, symbols, imported), True
    else:
        yield None, False


def is_torch_function(qualified: str) -> bool:
    """Whether ``qualified`` names a function of torch (not a method of ``nn.Module``)."""
    return qualified.startswith("torch.") and not qualified.startswith("torch.nn.Module")


#: ``nn`` modules that may return their input itself (dropout in eval mode, identity).
PASS_THROUGH_MODULES = frozenset({
    "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "Identity",
})


def call_kind(
    call: ast.Call, owner: Optional[ClassInfo], symbols: ModuleSymbols, tensor_method: bool
) -> str:
    """``fresh`` (a new tensor), ``view`` (of its receiver), ``through`` (may return one of its
    tensor arguments) or ``unknown`` (may return anything, ``self``'s state included).
    ``tensor_method``: whether a method named like an operation of ``FRESH_OPERATIONS``
    (``x.clone()``) is called on a tensor."""
    func = call.func
    qualified = symbols.qualified_name(func) or ""
    if is_torch_function(qualified) and qualified.rsplit(".", 1)[-1] in ALIASING_OPERATIONS:
        return "through"  # `torch.flatten(x)`: a view of its argument, not of `torch`
    if isinstance(func, ast.Attribute) and func.attr in ALIASING_OPERATIONS:
        return "view"
    if is_torch_function(qualified):
        return "fresh" if fresh_torch_call(call, qualified) else "through"
    if isinstance(func, ast.Attribute) and func.attr in FRESH_OPERATIONS and tensor_method:
        return "fresh"
    if returns_new_tensor(call, (), owner, symbols):
        return "fresh"
    classes = submodule_classes(call.func, owner, symbols) or [""]
    if all(
        c.startswith("torch.nn.")
        and (c.rsplit(".", 1)[-1] in PASS_THROUGH_MODULES or c.endswith(IN_PLACE))
        for c in classes
    ):  # a module that works in place returns its input
        return "through"
    return "unknown"


def call_sources(call: ast.Call, kind: str) -> List[ast.expr]:
    """The expressions whose tensor ``call`` (of ``call_kind`` ``kind``) may return: none for a
    new tensor, the receiver of a view, the arguments of a call that may hand one back (and
    the receiver, when unknown)."""
    receiver = [call.func.value] if isinstance(call.func, ast.Attribute) else []
    arguments = [
        *(a.value if isinstance(a, ast.Starred) else a for a in call.args),
        *(k.value for k in call.keywords),
    ]
    if kind == "fresh":
        return []
    if kind == "view":
        return receiver
    return arguments + (receiver if kind == "unknown" else [])


def _builds_elements(value: ast.expr) -> bool:
    """Whether ``nn.ModuleList(value)`` starts with modules (not ``ModuleList()``/``([])``)."""
    if not (isinstance(value, ast.Call) and value.args):
        return False
    modules = value.args[0]
    return not isinstance(modules, (ast.List, ast.Tuple)) or bool(modules.elts)


#: The mark of a class name that ``classes_of_call`` gives for a module another file builds.
FOREIGN = "<another file>:"
#: ``torch.nn`` embeddings, with the position of ``max_norm`` (1-based) among their arguments.
_RENORMING = {"Embedding": 4, "EmbeddingBag": 3}


def classes_of_call(
    value: ast.expr,
    method: FunctionNode,
    symbols: ModuleSymbols,
    imported: bool = False,
    resolving: FrozenSet[str] = frozenset(),
) -> Optional[List[str]]:
    """``[Block]`` for ``Block(...)``, ``[A, B]`` for ``layer(...)`` where the method binds
    ``layer`` only to classes ``A`` and ``B`` of the file, ``[torch.nn.Linear]`` for
    ``nn.Linear(...)``, the classes of a local bound only to such calls (``head = Head(...)``
    then ``[head for _ in range(n)]``), those of both values of ``A(...) if c else B(...)``,
    no class for ``None``; with ``imported``, ``FOREIGN`` and the qualified name of what
    builds a module that another file defines (``ACT2FN[name]``, ``OtherBlock(...)``: not
    followed); None otherwise, and for a local whose value is built of itself (``stem =
    nn.Sequential(stem, block)``: ``resolving`` holds the locals being followed)."""
    if isinstance(value, ast.Constant) and value.value is None:
        return []
    if isinstance(value, ast.Call) and _copies(value):
        return None  # a copy of a module of any class, of this file too
    elsewhere = _built_elsewhere(value, symbols) if imported else None
    if elsewhere is not None:
        return [FOREIGN + elsewhere]
    if isinstance(value, ast.IfExp):
        return _classes_of_either(value, method, symbols, imported, resolving)
    if isinstance(value, ast.Name) and value.id in resolving:
        return None
    if isinstance(value, ast.Name) and _changed_locally(method, value.id):
        return None  # `inner = nn.Sequential(...)` then `inner.append(m)`
    if isinstance(value, ast.Name) and not binds_locally(method, value.id, assignments=False):
        bound = [
            node.value
            for node in walk(method)
            if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == value.id for t in node.targets)
        ]
        inner = resolving | {value.id}
        found = [
            classes_of_call(v, method, symbols, imported, inner)
            for v in bound
            if isinstance(v, ast.Call)
        ]
        if not bound or len(found) != len(bound) or any(f is None for f in found):
            return None
        return sorted({name for classes in found if classes for name in classes})
    if not isinstance(value, ast.Call):
        return None
    func = value.func
    qualified = symbols.qualified_name(func) or ""
    if qualified.startswith("torch.nn.") and qualified.count(".") == 2:
        return _torch_module(value, qualified, method, symbols, imported, resolving)
    if any(k.arg == "inplace" for k in value.keywords) or not isinstance(func, ast.Name):
        return _classes_of_table(value, method, symbols)
    if func.id in symbols.classes and not binds_locally(method, func.id):
        return None if _rebound(func.id, symbols) else [func.id]
    values = [
        node.value
        for node in walk(method)
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == func.id for t in node.targets)
    ]
    if not values or not all(
        isinstance(v, ast.Name) and v.id in symbols.classes for v in values
    ):
        return None
    if binds_locally(method, func.id, assignments=False) or any(
        isinstance(v, ast.Name) and _rebound(v.id, symbols) for v in values
    ):
        return None
    return sorted({v.id for v in values if isinstance(v, ast.Name)})


def _classes_of_table(
    call: ast.Call, method: FunctionNode, symbols: ModuleSymbols
) -> Optional[List[str]]:
    """The classes of ``CLASSES[key](...)`` (no ``inplace`` given) for a table of
    ``_class_tables`` (``ATTENTION_CLASSES[config.attn_implementation](...)``); None for any
    other call."""
    func = call.func
    if not (isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name)):
        return None
    table = func.value.id
    classes = _class_tables(symbols.tree).get(table)
    if (
        classes is None
        or any(k.arg == "inplace" for k in call.keywords)
        or binds_locally(method, table)
        or any(_rebound(name, symbols) for name in classes)
    ):
        return None
    return sorted(set(classes))


@node_memo
def _class_tables(tree: ast.Module) -> Dict[str, List[str]]:
    """The module-level names bound once to a dict display whose values are classes of this
    file (``ATTENTION_CLASSES = {"eager": Attention, "sdpa": SdpaAttention}``) and that the
    file only reads an item of (nothing stores into it, updates it or hands it on), with
    those classes."""
    classes = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    tables = {
        target.id: [v.id for v in node.value.values if isinstance(v, ast.Name)]
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
        and None not in node.value.keys
        and all(isinstance(v, ast.Name) and v.id in classes for v in node.value.values)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    parents = parent_map(tree)
    stores: Counter[str] = Counter()
    for node in walk(tree):
        if not (isinstance(node, ast.Name) and node.id in tables):
            continue
        parent = parents.get(id(node))
        if not isinstance(node.ctx, ast.Load):
            stores[node.id] += 1
        elif not (
            isinstance(parent, ast.Subscript) and parent.value is node
            and isinstance(parent.ctx, ast.Load)
        ):
            stores[node.id] += 2  # `TABLE.update(...)`, `f(TABLE)`, `TABLE[k] = v`
    return {name: table for name, table in tables.items() if stores[name] == 1 and table}


#: Marks that ``classes_of_call`` adds to the name of a ``torch.nn`` module built to work in
#: place (which updates its input: ``nn.ReLU(inplace=True)``), or of a norm built to keep no
#: running statistics (which changes no buffer: ``nn.InstanceNorm2d(n)``).
IN_PLACE = "[in place]"
WITHOUT_STATISTICS = "[without running statistics]"
#: ``torch.nn`` norms that may keep running statistics: the position of ``track_running_stats``
#: among their arguments, and its default (torch 2.13; the lazy ones change their parameters
#: on the first call, whatever they keep).
RUNNING_STATISTICS = {
    **dict.fromkeys(("BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"), (4, True)),
    **dict.fromkeys(("InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"), (4, False)),
}
SEQUENTIAL = "torch.nn.Sequential"
#: ``torch.nn`` modules that run the modules they are given (other than ``nn.Sequential``, whose
#: modules are followed), and the containers that hold them.
WRAPPING_MODULES = frozenset({
    "DataParallel", "Transformer", "TransformerEncoder", "TransformerDecoder",
})
HOLDING_MODULES = WRAPPING_MODULES | {"Sequential", "ModuleList", "ModuleDict"}
#: Attributes of a norm that make it keep, or use, running statistics.
_STATISTICS = frozenset({"track_running_stats", "running_mean", "running_var"})


def _torch_module(
    call: ast.Call,
    qualified: str,
    method: FunctionNode,
    symbols: ModuleSymbols,
    imported: bool,
    resolving: FrozenSet[str],
) -> Optional[List[str]]:
    """The classes of the ``torch.nn`` module that ``call`` builds: its name (marked
    ``IN_PLACE`` or ``WITHOUT_STATISTICS``), or for ``nn.Sequential`` its name and those of the
    modules it runs; None for an embedding that renorms its weight in place on each call, and
    for a sequential whose modules are not known."""
    short = qualified.rsplit(".", 1)[-1]
    if qualified == SEQUENTIAL:
        return _sequential(call, method, symbols, imported, resolving)
    if short in WRAPPING_MODULES:
        return None  # `nn.DataParallel(Block())` runs the module it wraps
    if short in _RENORMING and (
        len(call.args) >= _RENORMING[short] or any(k.arg == "max_norm" for k in call.keywords)
    ):
        return None
    if builds_in_place_module(call):
        return [qualified + IN_PLACE]
    if short in RUNNING_STATISTICS and not _keeps_statistics(call, short, symbols.tree):
        return [qualified + WITHOUT_STATISTICS]
    return [qualified]


def _keeps_statistics(call: ast.Call, short: str, tree: ast.Module) -> bool:
    """Whether the norm ``call`` builds may keep running statistics: unless it is told not to
    with a literal (or, for an instance norm, not told to), and no code of ``tree`` sets
    ``track_running_stats`` or the statistics (by attribute, or names them)."""
    position, default = RUNNING_STATISTICS[short]
    if any(k.arg is None for k in call.keywords) or any(
        isinstance(a, ast.Starred) for a in call.args[:position + 1]
    ):
        return True
    told = [k.value for k in call.keywords if k.arg == "track_running_stats"]
    told += call.args[position:position + 1]
    if any(
        isinstance(node, ast.Attribute)
        and node.attr in _STATISTICS
        and not isinstance(node.ctx, ast.Load)
        or isinstance(node, ast.Constant) and node.value in _STATISTICS
        for node in walk(tree)
    ):
        return True  # statistics set or registered later (an instance norm updates them)
    if not told:
        return default
    return not (isinstance(told[0], ast.Constant) and told[0].value is False)


def _sequential(
    call: ast.Call,
    method: FunctionNode,
    symbols: ModuleSymbols,
    imported: bool,
    resolving: FrozenSet[str],
) -> Optional[List[str]]:
    """``SEQUENTIAL`` and the classes of the modules it runs: its arguments, the elements of a
    list it is handed as ``*layers`` (``_listed_modules``), the values of an ``OrderedDict``
    display; None where one is not known. ``SEQUENTIAL`` is marked ``IN_PLACE`` where a module
    that works in place may get the sequential's own input: no module that returns a new
    tensor surely runs before it. None where one works in place and another is not of
    ``torch.nn`` (which might hand on a tensor that outlives the call)."""
    if call.keywords:
        return None
    members: List[Tuple[ast.expr, Optional[ast.stmt]]] = []
    for argument in call.args:
        listed = _listed_modules(argument, method, symbols)
        if listed is None:
            return None
        members += listed
    found = [
        classes_of_call(member, method, symbols, imported, resolving) for member, _ in members
    ]
    if any(classes is None for classes in found):
        return None
    names = {name for classes in found if classes for name in classes}
    if not any(name.endswith(IN_PLACE) for name in names):
        return sorted(names | {SEQUENTIAL})
    if not all(name.startswith("torch.nn.") for name in names):
        return None
    parents = parent_map(method)
    gets_input = any(
        any(name.endswith(IN_PLACE) for name in classes or ())
        and not any(
            _modules_return_new_tensors(found[before])
            and _runs_before(members[before][1], added, parents)
            for before in range(position)
        )
        for position, (classes, (_, added)) in enumerate(zip(found, members))
    )
    # the modules' own marks are left out: only what the sequential is handed may outlive it
    names = {name.removesuffix(IN_PLACE) for name in names}
    return sorted(names | {SEQUENTIAL + IN_PLACE if gets_input else SEQUENTIAL})


def _modules_return_new_tensors(classes: Optional[List[str]]) -> bool:
    """Whether a module of each of ``classes`` (of ``torch.nn``) returns a new tensor."""
    return bool(classes) and all(
        name.startswith("torch.nn.")
        and name.rsplit(".", 1)[-1].removesuffix(WITHOUT_STATISTICS) in FRESH_MODULES
        for name in classes or ()
    )


def _runs_before(
    first: Optional[ast.stmt], then: Optional[ast.stmt], parents: Dict[int, ast.AST]
) -> bool:
    """Whether a module added to a sequential's list by statement ``first`` (None: written in
    the call, in order) surely comes before one added by ``then``, given that it is listed
    earlier: both in the call or in one statement, or ``first`` earlier in a block that holds
    ``then`` or a statement around it."""
    if first is then or first is None:
        return True
    if then is None:
        return False
    holder = parents.get(id(first))
    blocks = child_blocks(holder) if isinstance(holder, ast.stmt) else [getattr(holder, "body", [])]
    block = next((b for b in blocks if any(s is first for s in b)), [])
    around: Optional[ast.AST] = then
    while around is not None:
        if any(s is around for s in block):
            return _index(block, first) < _index(block, around)
        around = parents.get(id(around))
    return False


def _index(block: List[ast.stmt], statement: ast.AST) -> int:
    return next(i for i, s in enumerate(block) if s is statement)


def _listed_modules(
    argument: ast.expr, method: FunctionNode, symbols: ModuleSymbols
) -> Optional[List[Tuple[ast.expr, Optional[ast.stmt]]]]:
    """The modules an argument of ``nn.Sequential`` stands for, with the statement that adds
    each (None: written in the call): itself; for ``*layers``, the elements of the list display
    or comprehension, or of the local list that ``method`` builds only by displays and
    comprehensions, ``append`` and ``extend``/``+=`` of displays (and otherwise only reads);
    for ``OrderedDict([(name, module), ...])``, the modules. None where they are not
    known."""
    listed: List[ast.expr] = [argument]
    if isinstance(argument, ast.Call) and (
        symbols.qualified_name(argument.func) == "collections.OrderedDict"
    ):
        pairs = argument.args[0] if len(argument.args) == 1 and not argument.keywords else None
        if not isinstance(pairs, (ast.List, ast.Tuple)) or not all(
            isinstance(p, ast.Tuple) and len(p.elts) == 2 for p in pairs.elts
        ):
            return None
        listed = [p.elts[1] for p in pairs.elts if isinstance(p, ast.Tuple)]
    elif isinstance(argument, ast.Starred):
        value = argument.value
        if isinstance(value, (ast.List, ast.Tuple)):
            if any(isinstance(e, ast.Starred) for e in value.elts):
                return None
            listed = value.elts
        elif isinstance(value, (ast.ListComp, ast.GeneratorExp)):
            listed = [value.elt]
        elif isinstance(value, ast.Name) and value.id not in parameter_names(method):
            return _elements_of_local_list(value.id, value, method)
        else:
            return None
    return [(element, None) for element in listed]


def _elements_of_local_list(
    name: str, used: ast.Name, method: FunctionNode
) -> Optional[List[Tuple[ast.expr, Optional[ast.stmt]]]]:
    parents = parent_map(method)
    elements: List[Tuple[ast.expr, ast.stmt]] = []
    made = False
    for node in walk(method):
        if not (isinstance(node, ast.Name) and node.id == name) or node is used:
            continue
        parent = parents.get(id(node))
        added: Optional[ast.expr] = None
        statement: Optional[ast.AST] = parent
        if isinstance(parent, (ast.Assign, ast.AugAssign)) and node is not parent.value:
            added = parent.value
            if isinstance(parent, ast.Assign) and parent.targets != [node]:
                return None  # unpacked, or bound twice
        elif isinstance(parent, ast.Attribute) and parent.attr in ("append", "extend"):
            call = parents.get(id(parent))
            if not (isinstance(call, ast.Call) and call.func is parent and len(call.args) == 1):
                return None
            added = call.args[0] if parent.attr == "extend" else ast.List(elts=call.args)
            statement = parents.get(id(call))
        elif isinstance(parent, ast.Call) and short_name(parent) == "len":
            continue
        if isinstance(added, ast.ListComp):
            added = ast.List(elts=[added.elt])  # any number of modules of these classes
        if not isinstance(added, (ast.List, ast.Tuple)) or not isinstance(
            statement, ast.stmt
        ) or any(isinstance(e, ast.Starred) for e in added.elts):
            return None  # built otherwise, handed on, or read in another way
        elements += [(element, statement) for element in added.elts]
        made = made or isinstance(parent, ast.Assign)
    if not made:
        return None  # a list the method does not make (a module-level `LAYERS`)
    ordered = sorted(elements, key=lambda pair: (pair[1].lineno, pair[1].col_offset))
    return [(element, statement) for element, statement in ordered]


def _changed_locally(method: FunctionNode, name: str) -> bool:
    """Whether ``method`` may change the module its local ``name`` holds after building it, or
    hand it on elsewhere than to the attribute being weighed (``_changes_or_hands_on``, but for
    a store into an attribute of ``self``)."""
    parents = parent_map(method)
    for node in walk(method):
        if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)):
            continue
        parent = parents.get(id(node))
        if isinstance(parent, ast.Assign) and parent.value is node and all(
            self_attribute(target) for target in parent.targets
        ):
            continue  # `self.seq = inner`: what is weighed
        if isinstance(parent, (ast.List, ast.Tuple, ast.Starred)) or (
            isinstance(parent, ast.Call) and parent.func is not node
            and short_name(parent) in ("ModuleList", "Sequential", "append")
        ):
            continue  # put into a list of modules, which `additions` weighs
        if _changes_or_hands_on(node, parents):
            return True
    return False


def _classes_of_either(
    value: ast.IfExp,
    method: FunctionNode,
    symbols: ModuleSymbols,
    imported: bool,
    resolving: FrozenSet[str],
) -> Optional[List[str]]:
    """The classes of both values of ``A(...) if c else B(...)``; None if one is not known."""
    either = [
        classes_of_call(v, method, symbols, imported, resolving) for v in (value.body, value.orelse)
    ]
    if any(classes is None for classes in either):
        return None
    return sorted({name for classes in either if classes for name in classes})


#: Where an object built by ``Class(...)`` stays in reach of ``held_classes``: a binding, a
#: display or comprehension, a conditional value, the arguments of these calls.
_FOLLOWED_PARENTS = (
    ast.Assign, ast.AnnAssign, ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp, ast.IfExp,
    ast.Expr,
)
_FOLLOWED_CALLS = frozenset({"ModuleList", "Sequential", "append", "deepcopy", "copy"})
#: Where a class named as a value tells nothing about its objects.
_TYPE_TESTS = frozenset({"isinstance", "issubclass", "super"})


@node_memo
def loosely_built(tree: ast.Module) -> FrozenSet[str]:
    """The classes of ``tree`` whose objects may sit in a module attribute that
    ``held_classes`` cannot name: a class handed on as a value (``CLASSES = {"eager":
    Attention}``), an object of it returned (a factory method), put in a dict or handed to a
    function, or copied (``copy.deepcopy(self.block)``, ``type(self.block)()``, a module
    function that copies its parameter, as ``_get_clones(layer, n)``), or handed to code of
    the file that may keep it (``Runner(self.block)``, ``self.runner.attach(self)``), built
    outside the classes' bodies (``BLOCK = Block()``, ``def make(): b = Block(); return b``),
    or by ``cls()`` in a class method (with the classes derived from it)."""
    classes = {n.name for n in walk(tree) if isinstance(n, ast.ClassDef)}
    parents = parent_map(tree)
    keepers = _file_code_names(tree)
    loose: Set[str] = set()
    for node in walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            loose |= _built_by_class_method(node.func, parents, tree)
        if isinstance(node, ast.Call) and node.args and _copies(node, parents):
            loose |= _classes_copied(node.args[0], node, tree, parents, classes, 0)
        if isinstance(node, ast.Call) and short_name(node) in keepers:
            for argument in [*node.args, *(keyword.value for keyword in node.keywords)]:
                handed = argument.value if isinstance(argument, ast.Starred) else argument
                loose |= _classes_copied(handed, node, tree, parents, classes, 0)
                loose |= _own_class(handed, parents)
        if not (isinstance(node, ast.Name) and node.id in classes):
            continue
        parent = parents.get(id(node))
        if isinstance(parent, ast.Call) and parent.func is node:
            holder = parents.get(id(parent))
            if (isinstance(holder, _FOLLOWED_PARENTS) or (
                isinstance(holder, ast.Call) and short_name(holder) in _FOLLOWED_CALLS
            )) and _enclosing_class(node, parents) is not None:
                continue
        elif isinstance(parent, (ast.ClassDef, ast.Attribute, ast.arg)) or _type_test(
            parent, parents
        ):
            continue  # a base, `Block.method`, an annotation, `isinstance(m, (A, Block))`
        loose.add(node.id)
    return frozenset(loose)


def _enclosing_class(node: ast.AST, parents: Dict[int, ast.AST]) -> Optional[ast.ClassDef]:
    """The innermost class statement around ``node``, if any."""
    parent = parents.get(id(node))
    while parent is not None and not isinstance(parent, ast.ClassDef):
        parent = parents.get(id(parent))
    return parent


def _built_by_class_method(
    func: ast.Name, parents: Dict[int, ast.AST], tree: ast.Module
) -> Set[str]:
    """The class whose class method calls ``func``, its first parameter (``cls()``), and the
    classes of ``tree`` derived from it; empty for another call."""
    method = parents.get(id(func))
    while method is not None and not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
        method = parents.get(id(method))
    owner = parents.get(id(method)) if method is not None else None
    if not (
        isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))
        and isinstance(owner, ast.ClassDef)
        and any(getattr(d, "id", None) == "classmethod" for d in method.decorator_list)
        and method.args.args
        and method.args.args[0].arg == func.id
    ):
        return set()
    found = {owner.name}
    grown = True
    while grown:
        derived = {
            node.name for node in walk(tree)
            if isinstance(node, ast.ClassDef)
            and any(getattr(base, "id", None) in found for base in node.bases)
        }
        grown = not derived <= found
        found |= derived
    return found


def _file_code_names(tree: ast.Module) -> FrozenSet[str]:
    """The names by which a call may hand its arguments to code of ``tree`` that keeps them:
    its classes (built), its functions and its classes' methods other than those that run a
    module, and ``setattr``."""
    names = {"setattr"}
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            names |= {
                method.name for method in node.body
                if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))
                and method.name not in ("forward", "__call__", "__init__")
            }
    return frozenset(names)


def _own_class(value: ast.expr, parents: Dict[int, ast.AST]) -> Set[str]:
    """``{C}`` where ``value`` is ``self`` in a method of class ``C``; else empty."""
    owner = _enclosing_class(value, parents) if is_self(value) else None
    return {owner.name} if owner is not None else set()


def _type_test(node: Optional[ast.AST], parents: Dict[int, ast.AST]) -> bool:
    """Whether ``node`` (or the tuple it is in) is an argument of ``isinstance`` and the like."""
    if isinstance(node, ast.Tuple):
        node = parents.get(id(node))
    return isinstance(node, ast.Call) and short_name(node) in _TYPE_TESTS


def _copies(call: ast.Call, parents: Optional[Dict[int, ast.AST]] = None) -> bool:
    """``copy.deepcopy(x)``, ``copy.copy(x)``, ``deepcopy(x)``, or (given the ``parents`` of
    the tree) ``type(x)`` called: a copy of ``x``, of its class."""
    func = call.func
    if isinstance(func, ast.Attribute):
        return (
            func.attr in ("deepcopy", "copy")
            and isinstance(func.value, ast.Name)
            and func.value.id == "copy"
        )
    if isinstance(func, ast.Name) and func.id == "type" and parents is not None:
        caller = parents.get(id(call))
        return isinstance(caller, ast.Call) and caller.func is call
    return isinstance(func, ast.Name) and func.id == "deepcopy"


def _classes_copied(
    value: ast.expr,
    at: ast.AST,
    tree: ast.Module,
    parents: Dict[int, ast.AST],
    classes: Set[str],
    depth: int,
) -> Set[str]:
    """The classes of this file whose object ``value`` (at ``at``) may be: ``Block(...)``, a
    local bound to one, ``self.X`` (what any class stores into ``.X``), or a parameter of a
    module function (the arguments its calls in the file pass)."""
    if depth > _DEPTH:
        return set()
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        return {value.func.id} & classes
    if isinstance(value, ast.Attribute):
        return {
            name
            for node in walk(tree)
            if isinstance(node, ast.Assign)
            for target in node.targets
            if isinstance(target, ast.Attribute) and target.attr == value.attr
            for name in _classes_copied(node.value, node, tree, parents, classes, depth + 1)
        }
    function = parents.get(id(at))
    while function is not None and not isinstance(
        function, (ast.FunctionDef, ast.AsyncFunctionDef)
    ):
        function = parents.get(id(function))
    if not isinstance(value, ast.Name) or function is None:
        return set()
    found: Set[str] = set()
    for node in walk(function):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == value.id for t in node.targets
        ):
            found |= _classes_copied(node.value, node, tree, parents, classes, depth + 1)
    positional = [a.arg for a in function.args.posonlyargs + function.args.args]
    if value.id not in positional or not isinstance(parents.get(id(function)), ast.Module):
        return found
    index = positional.index(value.id)
    for call in walk(tree):
        if isinstance(call, ast.Call) and short_name(call) == function.name:
            passed = [k.value for k in call.keywords if k.arg == value.id]
            passed += call.args[index:index + 1]
            for argument in passed:
                found |= _classes_copied(argument, call, tree, parents, classes, depth + 1)
    return found


def _built_elsewhere(value: ast.expr, symbols: ModuleSymbols) -> Optional[str]:
    """The qualified name of what builds ``value`` where it is a call or item of a name
    imported from another module than torch (``ACT2FN`` of ``ACT2FN[config.hidden_act]``,
    ``transformers.AutoModel.from_config``, ``Block``); None otherwise."""
    if not isinstance(value, (ast.Call, ast.Subscript)):
        return None
    root = root_name(value)
    if root not in symbols.imports:
        return None
    qualified = symbols.imports[root]
    if qualified == "torch" or qualified.startswith("torch."):
        return None
    maker = value.func if isinstance(value, ast.Call) else value.value
    return symbols.qualified_name(maker) or qualified


def _rebound(name: str, symbols: ModuleSymbols) -> bool:
    """Whether the module binds ``name`` other than by its class statement (``FF = Other`` in
    a ``try``, an import, a ``global`` store, a second ``class``)."""
    return name in _rebound_names(symbols.tree)


@node_memo
def _rebound_names(tree: ast.Module) -> FrozenSet[str]:
    """The names ``tree`` binds more than once, or by anything but a ``class``/``def``."""
    definitions: Counter[str] = Counter()
    other: Set[str] = set()
    for node in walk(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            definitions[node.name] += 1
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            other.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            other.update(a.asname or a.name.split(".")[0] for a in node.names)
    return frozenset(other | {name for name, count in definitions.items() if count > 1})


def binds_locally(method: FunctionNode, name: str, assignments: bool = True) -> bool:
    """Whether ``method`` binds ``name`` (a parameter, or any binding but a plain assignment
    unless ``assignments``; a ``del`` makes the name local too)."""
    if name in parameter_names(method):
        return True
    for node in walk(method):
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            if assignments:
                return True
            parent_is_assignment = any(
                isinstance(a, ast.Assign) and node in a.targets for a in walk(method)
            )
            if not parent_is_assignment:
                return True
    return False


def _statements(block: Sequence[ast.stmt], place: str) -> Iterator[Tuple[ast.stmt, str]]:
    """Every statement under ``block`` (not in nested functions or classes), with where it
    is: ``body``, ``branch`` or ``loop`` (the outermost kind wins over ``body``)."""
    for statement in block:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield statement, place
        inner = "loop" if isinstance(statement, (ast.For, ast.AsyncFor, ast.While)) else "branch"
        for child in child_blocks(statement):
            yield from _statements(child, "loop" if place == "loop" else inner)


def _own_nodes(node: ast.AST) -> List[ast.AST]:
    """``node`` and what is under it, depth first, leaving out nested statements (visited on
    their own by ``_statements``), functions, classes and lambdas."""
    found: List[ast.AST] = []
    pending = [node]
    while pending:
        current = pending.pop()
        found.append(current)
        children = [c for c in child_nodes(current) if not isinstance(c, _NESTED)]
        pending.extend(reversed(children))
    return found


_NESTED = (ast.stmt, ast.Lambda)  # statements include functions and classes


def _is_self_attribute(node: ast.AST, attribute: str) -> bool:
    return isinstance(node, ast.expr) and self_attribute(node) == attribute


def forward_of(info: ClassInfo, symbols: ModuleSymbols, depth: int = 0) -> Optional[FunctionNode]:
    """The ``forward`` a call of an instance of ``info`` runs, found in it or in its bases of
    this file; None when a class on the way defines ``__call__``, derives from a class of
    another module (but ``nn.Module``), or decorates ``forward``."""
    if "__call__" in info.methods or depth > _DEPTH:
        return None
    found = info.methods.get("forward")
    for base in info.node.bases:
        if isinstance(base, ast.Name) and base.id in symbols.classes:
            inherited = forward_of(symbols.classes[base.id], symbols, depth + 1)
            if inherited is None:
                return None
            found = found or inherited
        elif symbols.qualified_name(base) not in ("torch.nn.Module", "torch.nn.modules.Module"):
            return None
    return None if found is None or found.decorator_list else found


def runs_when_called(info: ClassInfo, symbols: ModuleSymbols) -> Optional[FunctionNode]:
    """What calling an object of ``info`` may run: the nearest ``__call__`` among the class and
    its bases of this file, else the nearest ``forward`` (decorated, or under a base of
    another module that wraps the call, as transformers' ``GradientCheckpointingLayer``: it
    still runs). For questions of what a call may reach; ``forward_of`` is the exact one."""
    chain = with_bases(info, symbols)
    for method in ("__call__", "forward"):
        found = next((c.methods[method] for c in chain if method in c.methods), None)
        if found is not None:
            return found
    return None


def with_bases(info: ClassInfo, symbols: ModuleSymbols) -> List[ClassInfo]:
    """``info`` and its bases of this file, nearest first."""
    chain, seen = [info], {info.node.name}
    for cls in chain:
        for name in file_bases(cls, symbols):
            if name not in seen:
                seen.add(name)
                chain.append(symbols.classes[name])
    return chain


def _accepts(function: FunctionNode, call: ast.Call) -> bool:
    """Whether ``function``, called as a bound method with ``call``'s arguments, binds them
    (else the call raises TypeError, and the class is not the one called). A decorated
    ``forward`` may take other arguments than it names (``@deprecate_kwarg``): it accepts."""
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args][1:]
    if (
        function.decorator_list
        or any(isinstance(a, ast.Starred) for a in call.args)
        or any(k.arg is None for k in call.keywords)
    ):
        return True
    if len(call.args) > len(positional) and arguments.vararg is None:
        return False
    by_name = {a.arg for a in [*arguments.args[1:], *arguments.kwonlyargs]}
    given = {k.arg for k in call.keywords}
    if arguments.kwarg is None and not given <= by_name:
        return False
    required = positional[: len(positional) - len(arguments.defaults)]
    missing = [a.arg for a in required[len(call.args):] if a.arg not in given]
    keyword_required = [
        a.arg
        for a, default in zip(arguments.kwonlyargs, arguments.kw_defaults)
        if default is None and a.arg not in given
    ]
    return not missing and not keyword_required


class _Callee:
    """The return values of one ``forward``: are they new tensors nothing else holds?"""

    def __init__(
        self, function: FunctionNode, owner: ClassInfo, symbols: ModuleSymbols, depth: int
    ) -> None:
        self.function = function
        self.owner = owner
        self.symbols = symbols
        self.depth = depth
        self.parents = parent_map(function)
        self.statements = list(_statements(function.body, "body"))
        self.following: List[Tuple[str, Path]] = []

    def new_at_return(self, path: Path) -> bool:
        if any(
            isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal))
            or isinstance(node, MATCH_STATEMENTS)  # a capture binds names unseen (`case x:`)
            or (isinstance(node, ast.Call) and short_name(node) in NAMESPACE_CALLS)
            for node in walk(self.function)
        ):
            return False
        returns = [s for s, _ in self.statements if isinstance(s, ast.Return)]
        return all(
            self._new(r.value or ast.Constant(value=None), path, r) for r in returns
        )

    def _new(self, value: ast.expr, path: Path, at: ast.stmt) -> bool:
        """Whether ``value`` at ``path`` is a new tensor, a new tuple of new ones, or no tensor."""
        if isinstance(value, ast.Constant):
            return True
        if isinstance(value, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in value.elts):
                return False
            if not path:
                return all(self._new(e, (), at) for e in value.elts)
            return path[0] < len(value.elts) and self._new(value.elts[path[0]], path[1:], at)
        if isinstance(value, ast.BinOp):
            length = _length(value.left)
            if isinstance(value.op, ast.Add) and length is not None:  # tuples joined
                if not path:
                    return self._new(value.left, (), at) and self._new(value.right, (), at)
                if path[0] >= length:
                    return self._new(value.right, (path[0] - length, *path[1:]), at)
                return self._new(value.left, path, at)
            return not path  # arithmetic on tensors: a new tensor
        if isinstance(value, (ast.Compare, ast.UnaryOp)):
            return not path and not isinstance(getattr(value, "op", None), ast.UAdd)
        if isinstance(value, ast.IfExp):
            return self._new(value.body, path, at) and self._new(value.orelse, path, at)
        if isinstance(value, ast.Subscript):
            inner = element_path(value, path)
            return inner is not None and self._new(value.value, inner, at)
        if isinstance(value, ast.Call):
            return self._call_new(value, path, at)
        if isinstance(value, ast.Name):
            return self._name_new(value.id, path, at)
        return False

    def _call_new(self, call: ast.Call, path: Path, at: ast.stmt) -> bool:
        qualified = self.symbols.qualified_name(call.func) or ""
        if is_torch_function(qualified):
            return not path and fresh_torch_call(call, qualified)
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in FRESH_OPERATIONS and not path:
            # `self.fc(x).relu()`: a tensor's method that makes a new one, of a new tensor
            receiver = func.value
            return not isinstance(receiver, (ast.Constant, ast.Tuple, ast.List)) and self._new(
                receiver, (), at
            )
        return returns_new_tensor(call, path, self.owner, self.symbols, self.depth + 1)

    def _name_new(self, name: str, path: Path, at: ast.stmt) -> bool:
        """Every value ``name`` may hold at ``at`` is new at ``path``, and ``name`` hands its
        value nowhere but towards the return."""
        if (name, path) in self.following or len(self.following) > 8:
            return False  # a binding that refers to itself (`out = (out, extra)`)
        bindings = self._bindings(name)
        if bindings is None or not bindings or not self._rebound_before(name, at):
            return False
        self.following.append((name, path))
        try:
            for value, extra in bindings:
                if not self._new(value, (*extra, *path), at):
                    return False
        finally:
            self.following.pop()
        first = min(value.lineno for value, _ in bindings)
        container = bool(path) or any(
            isinstance(value, (ast.Tuple, ast.List)) or _length(value) is not None
            for value, _ in bindings
        )
        return self._kept_only_for_return(name, first, container)

    def _bindings(self, name: str) -> Optional[List[Tuple[ast.expr, Path]]]:
        """The values assigned to ``name`` with the element of each that it takes; None when
        a binding is not an assignment (a loop variable, ``with ... as``) or sits in a loop."""
        found: List[Tuple[ast.expr, Path]] = []
        for statement, place in self.statements:
            for node in _own_nodes(statement):
                if not (isinstance(node, ast.Name) and node.id == name):
                    continue
                if not isinstance(node.ctx, ast.Store):
                    continue
                binding = self.parents.get(id(node))
                if place == "loop":
                    return None
                if isinstance(binding, ast.Assign) and binding.targets == [node]:
                    found.append((binding.value, ()))
                elif isinstance(binding, ast.AnnAssign) and binding.value is not None:
                    found.append((binding.value, ()))
                elif isinstance(binding, ast.AugAssign):
                    continue  # the same object, updated
                elif isinstance(binding, ast.Tuple) and _targets(statement) == [binding]:
                    elements = binding.elts
                    if any(isinstance(e, ast.Starred) for e in elements):
                        return None
                    assert isinstance(statement, ast.Assign)
                    found.append((statement.value, (elements.index(node),)))
                else:
                    return None
        return found

    def _rebound_before(self, name: str, at: ast.stmt) -> bool:
        """Not a parameter, or one that a statement of the body rebinds before ``at``."""
        if name not in parameter_names(self.function):
            return True
        return any(
            place == "body"
            and statement.lineno < at.lineno
            and isinstance(statement, ast.Assign)
            and any(
                isinstance(t, ast.Name) and t.id == name
                for target in statement.targets
                for t in [target, *getattr(target, "elts", [])]
            )
            for statement, place in self.statements
        )

    def _kept_only_for_return(self, name: str, first: int, container: bool) -> bool:
        """Whether the value bound from line ``first`` on is only read (metadata, arithmetic,
        torch functions that compute a new tensor) or put into what is returned; a
        ``container`` (a tuple) is not consumed by ``+``, which copies its elements on."""
        if any(
            isinstance(n, ast.Name) and n.id == name
            for node in walk(self.function)
            if isinstance(node, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef))
            and node is not self.function
            for n in walk(node)
        ):
            return False  # a closure may keep it
        kept = 0  # reads that put it into what is returned: one at most (`return h, h`)
        for statement, _ in self.statements:
            for node in _own_nodes(statement):
                if not (
                    isinstance(node, ast.Name)
                    and node.id == name
                    and isinstance(node.ctx, ast.Load)
                    and node.lineno >= first
                ):
                    continue
                if not self._consumed(node, container):
                    return False
                kept += isinstance(self.parents.get(id(node)), (ast.Return, ast.Tuple))
        return kept <= 1

    def _consumed(self, node: ast.expr, container: bool) -> bool:
        parent = self.parents.get(id(node))
        if isinstance(parent, ast.Compare) or (isinstance(parent, ast.BinOp) and not container):
            return True
        if isinstance(parent, ast.UnaryOp):
            return not isinstance(parent.op, ast.UAdd)
        if isinstance(parent, ast.Attribute):
            return parent.attr in _READS
        if isinstance(parent, ast.Call) and node is not parent.func:
            qualified = self.symbols.qualified_name(parent.func) or ""
            if qualified in ("isinstance", "len"):
                return True
            return qualified.startswith("torch.") and fresh_torch_call(parent, qualified)
        if isinstance(parent, ast.Return):
            return True
        if isinstance(parent, ast.Tuple):
            holder = self.parents.get(id(parent))
            while isinstance(holder, ast.BinOp):
                holder = self.parents.get(id(holder))
            if isinstance(holder, ast.Return):
                return True
            return (
                isinstance(holder, ast.Assign)
                and len(holder.targets) == 1
                and isinstance(holder.targets[0], ast.Name)
                and self._kept_only_for_return(holder.targets[0].id, holder.lineno, True)
                and self._returned(holder.targets[0].id)
            )
        return False

    def _returned(self, name: str) -> bool:
        return any(
            isinstance(s, ast.Return) and isinstance(s.value, ast.Name) and s.value.id == name
            for s, _ in self.statements
        )


def _targets(statement: ast.stmt) -> List[ast.expr]:
    return list(statement.targets) if isinstance(statement, ast.Assign) else []


def _length(value: ast.expr) -> Optional[int]:
    """The length of a tuple display, or of tuple displays joined by ``+``; None otherwise."""
    if isinstance(value, ast.Tuple):
        if any(isinstance(e, ast.Starred) for e in value.elts):
            return None
        return len(value.elts)
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        left, right = _length(value.left), _length(value.right)
        return None if left is None or right is None else left + right
    return None


def element_path(value: ast.Subscript, path: Path) -> Optional[Path]:
    """The path into ``value.value`` that ``value`` at ``path`` reads: ``v[2]`` at ``()`` is
    ``v`` at ``(2,)``; ``v[:2]`` at ``(0,)`` is ``v`` at ``(0,)``; None for other subscripts."""
    index = value.slice
    if not isinstance(index, ast.Slice):
        position = constant_int(index)
        return None if position is None or position < 0 else (position, *path)
    if not path or index.step is not None:
        return None
    start = 0 if index.lower is None else constant_int(index.lower)
    stop = constant_int(index.upper) if index.upper is not None else None
    if start is None or start < 0 or stop is None or start + path[0] >= stop:
        return None
    return (start + path[0], *path[1:])
