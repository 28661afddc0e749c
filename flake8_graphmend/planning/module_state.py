"""May a call change state that outlives it: a module's buffers, its inputs, Python state?

Under ``aot_eager`` and Inductor an update in place of a buffer, a parameter or an input made
inside the graph is written back after the graph, and Dynamo applies changes of Python state
after it too; a check that raises inside the graph loses them. A call of a submodule runs its
``forward`` in that graph: a batch norm in training updates its running statistics, a class of
this file may update its buffers, its inputs or a cache it is handed. A call counts as changing
nothing only where every class of this file or of ``torch.nn`` it may reach is known and changes
nothing: a submodule built by a factory (``norm_layer(dim)``) or a container (``nn.Sequential``)
may change state, and so may what another module defines (``OtherBlock(...)``, an imported
function, a method inherited from a base of another module): it is not read, and counts as
changing nothing only where ``foreign.pure_library`` knows its library (``ACT2FN[name]`` of
``transformers.activations``).
"""

from __future__ import annotations

import ast
import functools
from typing import Dict, FrozenSet, Iterator, List, Optional, Set, Tuple, Union

from ..analysis.hooks import code_given_to_modules
from ..analysis.index import node_memo, parameter_names, root_name, run_nodes, walk
from ..analysis.inplace import short_name, updated_arguments, updates_first_argument
from ..analysis.regions import GRAPHMEND_HELPER_PREFIX
from ..analysis.symbols import (
    ClassInfo, FunctionNode, ModuleSymbols, attribute_stores, is_own_class, is_self,
    is_super_call, self_attribute, sets_attributes_by_computed_name,
)
from .foreign import (
    aliased_function, foreign_callee, handed_callee, inherited_from_another_file,
    known_callable, known_method, pure_library, unknown_held_method,
)
from .submodules import (
    FOREIGN, IN_PLACE, Path, additions, binds_locally, call_kind, call_sources,
    changed_after_built, classes_of_call, element_path, file_bases, forward_of, loosely_built,
    returns_new_tensor, runs_when_called, with_bases,
)

#: ``torch.nn`` modules whose call updates buffers in place (in training).
STATEFUL_MODULES = frozenset({
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "InstanceNorm1d",
    "InstanceNorm2d", "InstanceNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
    "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d",
})
#: ``torch.nn`` modules that run modules they hold, which are not followed.
_CONTAINERS = frozenset({"ModuleList", "ModuleDict"})
#: Methods that change the Python container (or iterator) they are called on.
CONTAINER_UPDATES = frozenset({
    "append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "add",
    "discard", "popitem", "sort", "reverse", "popleft", "appendleft", "extendleft", "rotate",
    "__next__", "send", "__setitem__", "__delitem__", "move_to_end", "subtract",
    "intersection_update", "difference_update", "symmetric_difference_update",
    "__iadd__", "__isub__", "__imul__", "__ior__", "__iand__", "__ixor__",
})
#: Calls that make an iterator, which iterating, or ``next()``, advances.
_ITERATOR_MAKERS = frozenset({"iter", "map", "filter", "zip", "enumerate", "reversed"})
#: ``nn.Module`` methods that change the module they are called on (``self``, a submodule).
MODULE_UPDATES = frozenset({
    "register_buffer", "register_parameter", "add_module", "register_module", "apply",
    "requires_grad_", "train", "eval", "zero_grad", "load_state_dict", "set_extra_state",
    "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
    "register_full_backward_pre_hook", "register_backward_hook", "share_memory", "to_empty",
})
#: torch functions that change the process's state when called (not as a context manager),
#: by the last part of their names: the setters (``torch.set_grad_enabled(False)``, also as
#: ``torch.autograd.grad_mode.set_grad_enabled``, ``torch._C._set_grad_enabled``,
#: ``torch.cuda.set_device``), the seeds, and the calls that write what outlives the process
#: or accumulate gradients; and torch's namespaces whose functions do (collectives update
#: the tensors they are handed).
_TORCH_STATE_SETTERS = ("set_", "_set_")
_TORCH_STATE_CHANGES = frozenset({
    "manual_seed", "manual_seed_all", "seed", "seed_all", "use_deterministic_algorithms",
    "save", "backward",
})
_TORCH_STATE_NAMESPACES = ("torch.distributed.",)


def torch_changes_state(qualified: str) -> bool:
    """Whether ``qualified``, a function of torch, changes the process's state when called."""
    name = qualified.rpartition(".")[2]
    return qualified.startswith("torch.") and (
        name.startswith(_TORCH_STATE_SETTERS)
        or name in _TORCH_STATE_CHANGES
        or qualified.startswith(_TORCH_STATE_NAMESPACES)
    )


#: How deep calls are followed; deeper ones count as changing state.
_DEPTH = 4


def call_changes_state(
    call: ast.Call,
    function: FunctionNode,
    owner: Optional[ClassInfo],
    symbols: ModuleSymbols,
    depth: int = 0,
) -> bool:
    """Whether ``call``, made in ``function`` (a method of ``owner``, or a function), may change
    state that outlives it: a method of ``self`` or a function of this file whose body does, or
    a submodule (``self.norm(x)``, ``self.layers[i](x)``, ``layer(x)`` over ``self.layers``)
    that may hold a module that does; a local callable it cannot name may, and so may code of
    another module that no pure library defines (``foreign.foreign_callee``), and a method
    of an object held where the analysis does not know its class
    (``foreign.unknown_held_method``)."""
    if depth > _DEPTH:
        return True
    func = call.func
    if isinstance(func, ast.Call):
        return True  # a callee computed at run time (`getattr(self, name)(x)`): not followed
    if owner is not None:
        name = self_attribute(func) or class_method(func, owner)
        methods = _methods_named(name, owner, symbols) if name else []
        if methods:  # `self.m()`: the method of the class, a base or a subclass of this file
            return any(body_changes_state(m, cls, symbols, depth + 1) for m, cls in methods)
        inherited = _super_method(func, owner, symbols)
        if inherited is not None:
            return body_changes_state(inherited[0], inherited[1], symbols, depth + 1)
        if isinstance(func, ast.Attribute) and func.attr in MODULE_UPDATES:
            if root_name(func.value) == "self":  # `self.register_buffer(...)`, a submodule's
                return True
        held = _held_method_changes_state(func, owner, symbols, depth)
        if held is not None:
            return held
        module = module_expression(func, function)
        if module is not None:
            return _module_call_changes_state(call, function, module, owner, symbols, depth)
    named = _named_call_changes_state(func, function, symbols, depth) if isinstance(
        func, ast.Name
    ) else None
    if named is not None:
        return named
    if torch_changes_state(symbols.qualified_name(func) or ""):
        return True  # `torch.set_grad_enabled(False)` as a call: grad mode stays changed
    return (
        _module_object_method_changes_state(func, function, symbols, depth)
        or foreign_callee(call, function, owner, symbols) is not None
        or unknown_held_method(call, function, symbols) is not None
        or handed_callee(call, function, symbols) is not None
    )


def _named_call_changes_state(
    func: ast.Name, function: FunctionNode, symbols: ModuleSymbols, depth: int
) -> Optional[bool]:
    """For ``name(...)`` in ``function``: whether a local callable (not named), a function or
    class of this file (or a module-level name bound to one), or a module-level callable the
    analysis does not follow may change state; None for other names."""
    if binds_locally(function, func.id):
        return True  # a local callable it cannot name (`for norm in zip(self.a, self.b)`)
    if func.id in symbols.functions:
        return body_changes_state(symbols.functions[func.id], None, symbols, depth + 1)
    aliased = aliased_function(func, symbols)
    if aliased is not None:  # `gelu = _gelu_tanh` at module level, then `gelu(x)`
        return body_changes_state(aliased, None, symbols, depth + 1)
    value = symbols.assignments.get(func.id)
    if isinstance(value, (ast.Lambda, ast.Call)):
        # a module-level callable not followed: `record = lambda s: SEEN.append(s)`, a closure
        # a factory made (`tick = make_counter()`)
        return True
    if isinstance(value, (ast.Name, ast.Attribute)) and func.id not in symbols.imports:
        # `OFF = torch.set_grad_enabled`: judged as what it names
        qualified = symbols.qualified_name(value)
        return qualified is None or torch_changes_state(qualified) or not pure_library(qualified)
    if func.id in symbols.classes:
        # building it, or what Python runs on it later (`Wrap(x) * 2`, `with Obj():`)
        built = symbols.classes[func.id]
        return constructor_changes_state(built, symbols, depth + 1) or (
            _implicit_code_changes_state(built, symbols)
        )
    return None


def _module_object_method_changes_state(
    func: ast.expr, function: FunctionNode, symbols: ModuleSymbols, depth: int
) -> bool:
    """For ``HOLDER.m(...)`` where the module binds ``HOLDER`` to an object of a class of this
    file (``HOLDER = Holder()``): whether ``m`` may change state, as a method of the class (or
    of a base of another module, or a value it holds: not followed)."""
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return False
    made = symbols.assignments.get(func.value.id)
    if binds_locally(function, func.value.id) or not (
        isinstance(made, ast.Call)
        and isinstance(made.func, ast.Name)
        and made.func.id in symbols.classes
    ):
        return False
    methods = _methods_named(func.attr, symbols.classes[made.func.id], symbols)
    if not methods:
        return not known_method(func.attr)
    return any(body_changes_state(m, cls, symbols, depth + 1) for m, cls in methods)


def callees_in_file(
    call: ast.Call, owner: Optional[ClassInfo], symbols: ModuleSymbols
) -> List[Tuple[FunctionNode, Optional[ClassInfo]]]:
    """The functions of this file ``call`` (made in a method of ``owner``) runs, with their
    class: a module function (``silence()``), or ``self.m()`` / ``type(self).m()`` of the
    class's lineage."""
    func = call.func
    if isinstance(func, ast.Name) and func.id in symbols.functions:
        return [(symbols.functions[func.id], None)]
    name = (self_attribute(func) or class_method(func, owner)) if owner is not None else None
    return list(_methods_named(name, owner, symbols)) if name and owner is not None else []


def _methods_named(
    name: str, info: ClassInfo, symbols: ModuleSymbols
) -> List[Tuple[FunctionNode, ClassInfo]]:
    """The methods ``name`` of ``info`` and of the classes of its lineage, with their class."""
    return [(cls.methods[name], cls) for cls in lineage(info, symbols) if name in cls.methods]


def _module_call_changes_state(
    call: ast.Call,
    function: FunctionNode,
    module: ast.expr,
    owner: ClassInfo,
    symbols: ModuleSymbols,
    depth: int,
) -> bool:
    """Whether ``call`` in ``function``, of the module ``module`` of ``self`` or a method of
    it, may change state: where a module it may hold may, or works in place on a tensor that
    may outlive the call, or what it holds is not known, or nothing is built into it and it
    is a method of a base of another file (``self.get_head_mask``)."""
    func = call.func
    if changed_after_built(attribute_of(module) or "", symbols.tree):
        return True  # `self.seq.append(m)`, `seq = self.seq`, `model.seq = m` in a function
    classes = held_classes(module, owner, symbols)
    if any(name.endswith(IN_PLACE) for name in classes or ()):
        first = call.args[0] if call.args else None
        if first is None or isinstance(first, ast.Starred):
            return True
        held = holders(function, callers_values(function, owner, symbols), owner, symbols)
        if hands_on(first, held, owner, symbols):
            return True  # `self.act(x)` of `nn.ReLU(inplace=True)` updates the input `x`
    if classes == [] and (
        inherited_from_another_file(func, owner, symbols)
        or _set_in_class_body(attribute_of(module) or "", owner, symbols)
    ):
        return True  # `self.get_head_mask(...)` of a base of another file; `fn = partial(f)`
    return classes is None or code_given_to_modules(symbols.tree) is not None or any(
        _class_changes_state(name, symbols, depth + 1) for name in classes
    )


def _set_in_class_body(attribute: str, owner: ClassInfo, symbols: ModuleSymbols) -> bool:
    """Whether the body of ``owner`` or of a class of its lineage binds ``attribute`` other
    than by one ``def`` (``fn = staticmethod(note)``, ``bound_otherwise``): a value the
    analysis does not follow."""
    return any(bound_otherwise(attribute, cls.node) for cls in lineage(owner, symbols))


def _class_body_bindings(
    attribute: str, classes: List[ClassInfo]
) -> Iterator[Union[ast.Assign, ast.AnnAssign]]:
    """The statements of the bodies of ``classes`` that assign ``attribute`` (``scale =
    Counted()``, ``fn: Callable``)."""
    for cls in classes:
        for statement in cls.node.body:
            if isinstance(statement, ast.Assign):
                targets = statement.targets
            elif isinstance(statement, ast.AnnAssign):
                targets = [statement.target]
            else:
                continue
            if any(isinstance(t, ast.Name) and t.id == attribute for t in targets):
                yield statement


def constructor_changes_state(info: ClassInfo, symbols: ModuleSymbols, depth: int = 0) -> bool:
    """Whether building an object of ``info`` (a class of this file) may change state other
    than the new object's own: its ``__init__``, ``__post_init__`` or ``__new__`` (of it or
    its bases of this file) stores into a class attribute, a global or an argument, or calls
    what does (``Output.created += 1``)."""
    for cls in with_bases(info, symbols):
        for name in ("__init__", "__post_init__", "__new__"):
            method = cls.methods.get(name)
            if method is not None and body_changes_state(
                method, cls, symbols, depth, own_self=False
            ):
                return True
        for factory in _default_factories(cls):  # `field(default_factory=next_id)`
            function = symbols.functions.get(factory)
            if function is not None and body_changes_state(function, None, symbols, depth + 1):
                return True
    return False


def _default_factories(info: ClassInfo) -> List[str]:
    """The functions a class's fields name as ``default_factory``."""
    return [
        keyword.value.id
        for node in walk(info.node)
        if isinstance(node, ast.Call)
        for keyword in node.keywords
        if keyword.arg == "default_factory" and isinstance(keyword.value, ast.Name)
    ]


def implicit_call_changes_state(
    node: ast.AST, owner: Optional[ClassInfo], symbols: ModuleSymbols, depth: int = 0
) -> bool:
    """Whether reading ``node`` runs code of this file that may change state: a property of
    ``self`` whose getter does (``self.table`` that counts its builds), or ``self.X`` holding
    an object of this file whose special methods or properties may (``self.cache[0]`` with a
    counting ``__getitem__``, ``len(self.stats)``, ``if self.flags:``), or a descriptor of
    the class."""
    if owner is None or not isinstance(getattr(node, "ctx", None), ast.Load):
        return False
    if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)):
        return False
    if node.value.id != "self":
        return False
    for cls in lineage(owner, symbols):
        getter = cls.methods.get(node.attr)
        if getter is not None and _is_property(getter):
            return body_changes_state(getter, cls, symbols, depth + 1)
        lookup = cls.methods.get("__getattr__") or cls.methods.get("__getattribute__")
        if lookup is not None and body_changes_state(lookup, cls, symbols, depth + 1):
            return True  # an attribute lookup of the class's own that changes state
    # what `self.X` holds, or a descriptor of the class (`scale = Counted()` in its body)
    classes = list(held_classes(node, owner, symbols) or []) + _class_level(
        node.attr, owner, symbols
    )
    return any(
        name.startswith(FOREIGN) and _class_changes_state(name, symbols, depth)
        or name in symbols.classes
        and _implicit_code_changes_state(symbols.classes[name], symbols)
        for name in classes
    )


def _is_property(method: FunctionNode) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "property" for d in method.decorator_list)


def _class_level(attribute: str, owner: ClassInfo, symbols: ModuleSymbols) -> List[str]:
    """The classes whose objects the class body assigns to ``attribute`` (``scale =
    Counted()``): a class of this file by its name, another module's as ``FOREIGN`` and its
    qualified name (torch's left out)."""
    makers = [
        statement.value.func
        for statement in _class_body_bindings(attribute, [owner])
        if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call)
    ]
    names = []
    for maker in makers:
        qualified = symbols.qualified_name(maker) or ast.unparse(maker)
        if isinstance(maker, ast.Name) and maker.id in symbols.classes:
            names.append(maker.id)
        elif not qualified.startswith("torch."):
            names.append(FOREIGN + qualified)
    return names


#: Special methods that no operation on an object runs implicitly (building it is weighed
#: by ``constructor_changes_state``).
_NOT_IMPLICIT = frozenset({"__init__", "__new__", "__post_init__", "__init_subclass__"})


def _implicit_code_changes_state(info: ClassInfo, symbols: ModuleSymbols) -> bool:
    """Whether an object of ``info`` runs code that may change state when Python operates on
    it: a special method (``__len__``, ``__bool__``, ``__iter__``, ``__eq__``, ``__add__``,
    ``__getitem__``, ``__getattr__``, ``__str__``, a descriptor's ``__get__``...) or a
    property whose body does."""
    for cls in with_bases(info, symbols):
        for name, method in cls.methods.items():
            special = name.startswith("__") and name.endswith("__") and name not in _NOT_IMPLICIT
            if (special or _is_property(method)) and body_changes_state(method, cls, symbols, 1):
                return True
    return False


#: The base of another file whose methods ``methods_called`` knows not to come first.
_MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})


def plain_lineage(
    owner: Optional[ClassInfo], symbols: ModuleSymbols
) -> Optional[List[ClassInfo]]:
    """``owner``'s lineage (``lineage``) where attribute lookup on its objects runs no code
    and finds what the file shows: every class has at most one base, of this file or
    ``nn.Module``, and no keywords (a metaclass), decorator or ``__getattribute__``, and the
    file builds no class that ``lineage`` cannot see (``_classes_built_elsewhere``); None
    otherwise (the MRO, a metaclass or a wrapper may decide). A subclass in another file is
    not seen (a known problem)."""
    if owner is None or _classes_built_elsewhere(symbols.tree):
        return None
    classes = lineage(owner, symbols)
    if any(
        len(cls.node.bases) > 1
        or cls.node.keywords
        or cls.node.decorator_list
        or "__getattribute__" in cls.methods
        or any(
            not (isinstance(base, ast.Name) and base.id in symbols.classes)
            and symbols.qualified_name(base) not in _MODULE_BASES
            for base in cls.node.bases
        )
        for cls in classes
    ):
        return None
    return classes


@node_memo
def _classes_built_elsewhere(tree: ast.Module) -> bool:
    """Whether the file builds classes that ``lineage`` does not see: a ``class`` statement
    inside a function or a class, or ``type(name, bases, namespace)``."""
    nested = {
        id(inner)
        for node in walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        for inner in walk(node)
        if inner is not node and isinstance(inner, ast.ClassDef)
    }
    return bool(nested) or any(
        isinstance(node, ast.Call)
        and getattr(node.func, "id", None) == "type"
        and len(node.args) == 3
        for node in walk(tree)
    )


def methods_called(
    call: ast.Call, owner: Optional[ClassInfo], symbols: ModuleSymbols
) -> List[Tuple[FunctionNode, ClassInfo]]:
    """The methods of this file that ``call`` may run, each with its class: for ``self.m(...)``
    (or ``type(self).m``) those of ``owner``'s lineage (a subclass may override it), for
    ``super().m(...)`` the nearest base's; none where another may run: ``m`` is also an
    attribute the file stores (a module, a callable; or it sets attributes by computed
    names), a class body binds ``m`` otherwise (``m = other``), a class of the lineage has a
    base of another file (but ``nn.Module``), whose ``m`` may come first, several bases (the
    order of its MRO), a ``__getattribute__``, keywords (a metaclass) or a decorator; and
    for ``super(Cls, self).m``. A subclass in another file is not seen (a known problem)."""
    func = call.func
    lineage_classes = plain_lineage(owner, symbols)
    if owner is None or lineage_classes is None:
        return []
    name = self_attribute(func) or class_method(func, owner) or getattr(func, "attr", None)
    if (
        name is None
        or name in attribute_stores(symbols.tree)
        or sets_attributes_by_computed_name(symbols.tree)
        or any(bound_otherwise(name, cls.node) for cls in lineage_classes)
    ):
        return []
    if self_attribute(func) or class_method(func, owner):
        return _methods_named(name, owner, symbols)
    through = getattr(func, "value", None)
    if isinstance(through, ast.Call) and (through.args or through.keywords):
        return []  # `super(Cls, self).m`: from past `Cls`
    inherited = _super_method(func, owner, symbols)
    return [inherited] if inherited is not None else []


def bound_otherwise(name: str, cls: ast.ClassDef) -> bool:
    """Whether the class body binds ``name`` other than by one ``def`` of its own level
    (``project = Base.skip``, a second ``def`` or a lambda under an ``if``, an import)."""
    defined = 0
    stack: List[ast.AST] = list(cls.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                defined += 1 if any(node is top for top in cls.body) else 2
            stack.extend(node.decorator_list)
            continue  # a method's body binds its own locals
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name).partition(".")[0] == name:
            return True
        stack.extend(ast.iter_child_nodes(node))
    return defined > 1


def _super_method(
    func: ast.expr, owner: ClassInfo, symbols: ModuleSymbols
) -> Optional[Tuple[FunctionNode, ClassInfo]]:
    """For ``super().m``: the method ``m`` of the nearest base of this file that has it."""
    if not (isinstance(func, ast.Attribute) and is_super_call(func.value)):
        return None
    for base in with_bases(owner, symbols)[1:]:
        if func.attr in base.methods:
            return base.methods[func.attr], base
    return None


def class_method(func: ast.expr, owner: ClassInfo) -> Optional[str]:
    """``m`` where ``func`` is ``type(self).m``, ``self.__class__.m`` or ``Owner.m``: the
    owner's method, called through its class."""
    if not isinstance(func, ast.Attribute):
        return None
    through = func.value
    if is_own_class(through) or isinstance(through, ast.Name) and through.id == owner.node.name:
        return func.attr
    return None


def _held_method_changes_state(
    func: ast.expr, owner: ClassInfo, symbols: ModuleSymbols, depth: int
) -> Optional[bool]:
    """For ``self.X.m(...)`` where ``self.X`` holds objects of classes of this file (a tracker,
    a cache, a submodule): whether their method ``m``, or the module ``m`` they hold, may
    change state, and True where it may hold one of a class another module defines (not
    torch's); None for other calls, and where what ``self.X`` holds is not known."""
    if not (isinstance(func, ast.Attribute) and attribute_of(func.value) is not None):
        return None
    classes = held_classes(func.value, owner, symbols)
    if any(name.startswith(FOREIGN) and _class_changes_state(name, symbols, depth) for name in (
        classes or ()
    )):
        return True  # `self.tracker.record(n)` of a `Tracker` that another module defines
    infos = [symbols.classes[name] for name in classes or () if name in symbols.classes]
    methods = [found for held in infos for found in _methods_named(func.attr, held, symbols)]
    if methods:
        return any(body_changes_state(m, info, symbols, depth + 1) for m, info in methods)
    if not infos or len(infos) != len(classes or ()):
        return None
    inner = ast.Attribute(value=ast.Name(id="self", ctx=ast.Load()), attr=func.attr)
    if any(inherited_from_another_file(inner, info, symbols) for info in infos):
        return True  # `class Tracker(helpers.Tracker): pass`: its `record` is another module's
    # `self.encoder.embed(x)`: a module that the classes of this file held there hold
    found = [held_classes(inner, info, symbols) for info in infos]
    return any(names is None for names in found) or any(
        _class_changes_state(name, symbols, depth + 1) for names in found for name in names or ()
    )


def body_changes_state(
    function: FunctionNode,
    owner: Optional[ClassInfo],
    symbols: ModuleSymbols,
    depth: int = 0,
    own_self: bool = True,
) -> bool:
    """Whether running ``function`` may change ``self``, its inputs or the module's names: a
    store into them (``setattr`` too), an update of a container they hold (a module-level
    dict), an update in place of a tensor they hold, a ``global`` store, or a call that may
    (``call_changes_state``), also one made by reading an attribute of ``self``
    (``implicit_call_changes_state``). ``own_self=False``:
    ``self`` is an object being built (``__init__``), whose stores change nothing a caller
    holds, where stores into its class do (``Output.created += 1``)."""
    if depth > _DEPTH or _decorated_here(function, symbols):
        return True  # too deep to follow, or a decorator's wrapper the analysis does not weigh
    held = holders(function, callers_values(function, owner, symbols, own_self), owner, symbols)
    for node in run_nodes(function):
        if isinstance(node, (ast.Global, ast.Nonlocal)) or any(
            hands_on(changed, held, owner, symbols) for changed in stored_objects(node)
        ):
            return True
        if _sets_attribute_of(node, held, owner, symbols):
            return True
        if iterates_held_iterator(node, owner, symbols):
            return True
        if own_self and implicit_call_changes_state(node, owner, symbols, depth):
            return True
        if updates_in_place(node, held, owner, symbols):
            return True
        if isinstance(node, ast.Call) and call_changes_state(
            node, function, owner, symbols, depth
        ):
            return True
    return False


def _decorated_here(function: FunctionNode, symbols: ModuleSymbols) -> bool:
    """Whether a decorator of ``function`` is a function or class of this file (``@counted``,
    ``@retry(3)``), whose wrapper, which a call runs, may change state; not the fixers' own
    (``@_graphmend_deferred``, which runs the function in order)."""
    return any(
        isinstance(name, ast.Name)
        and name.id in (*symbols.functions, *symbols.classes)
        and not name.id.startswith(GRAPHMEND_HELPER_PREFIX)
        for decorator in function.decorator_list
        for name in [decorator.func if isinstance(decorator, ast.Call) else decorator]
    )


def callers_values(
    function: FunctionNode, owner: Optional[ClassInfo], symbols: ModuleSymbols,
    own_self: bool = True,
) -> FrozenSet[str]:
    """The names through which ``function`` reaches what its caller holds: its parameters,
    ``self`` (with ``own_self=False``, of an object being built: its class instead) and the
    module's names."""
    names = parameter_names(function) | {"self"} | symbols.defined_here()
    if not own_self:
        names = (names - {"self"}) | {owner.node.name if owner else ""}
    return frozenset(names)


def holders(
    function: FunctionNode,
    roots: FrozenSet[str],
    owner: Optional[ClassInfo],
    symbols: ModuleSymbols,
) -> Set[str]:
    """``roots`` and the names ``function`` binds to what they hold, or to a part or a view of
    it (``v = t.view(-1)``, ``cache = self.cache``, ``for layer in self.layers``, ``a, b =
    pair``, ``h = helper(t)``): an update in place through one of them changes what the
    caller holds. A name bound to a new value (arithmetic, an operation that allocates, a
    metadata read, a display of new values) is not one."""
    bindings = list(_bindings(function))
    tensors = _new_tensors(bindings, owner, symbols)
    held = set(roots) | _inner_parameters(function)
    imported = _named_code(symbols)
    changed = True
    while changed:
        changed = False
        for names, value, stored in bindings:
            if stored and names <= tensors:
                continue  # an element of a new tensor set: the value is copied
            if not names <= held and hands_on(value, held - imported, owner, symbols):
                held |= names
                changed = True
    return held


def _named_code(symbols: ModuleSymbols) -> Set[str]:
    """The module's names of code (imports, functions, classes): no value of the caller's
    passes through them."""
    return set(symbols.imports) | set(symbols.functions) | set(symbols.classes)


def _new_tensors(
    bindings: List[Tuple[Set[str], ast.expr, bool]],
    owner: Optional[ClassInfo],
    symbols: ModuleSymbols,
) -> Set[str]:
    """The names bound only to new tensors or to constants, which keep no reference to what is
    stored into them or added to them (``out = x.new_zeros(shape)``, ``torch.cat(...)``,
    ``x * 2``, ``total = 0``)."""
    values: Dict[str, List[ast.expr]] = {}
    for names, value, stored in bindings:
        for name in names:
            values.setdefault(name, []).extend([] if stored else [value])
    return {
        name
        for name, bound in values.items()
        if bound and all(
            isinstance(value, (ast.Constant, ast.JoinedStr))
            or isinstance(value, ast.BinOp) and not _sequence(value.left)
            or isinstance(value, ast.Call)
            and call_kind(value, owner, symbols, tensor_method=True) == "fresh"
            for value in bound
        )
    }


def _inner_parameters(function: FunctionNode) -> Set[str]:
    """The parameters of the lambdas and functions ``function`` defines: what they are
    handed is not known (``map(lambda b: b.mul_(0.5), module.buffers())``)."""
    arguments = [
        node.args for node in run_nodes(function)
        if isinstance(node, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    return {
        a.arg
        for args in arguments
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
        if a is not None
    }


def _bindings(function: FunctionNode) -> Iterator[Tuple[Set[str], ast.expr, bool]]:
    """The names each binding of ``function`` gives a value, with the value they take all or
    part of (the iterable of a loop, the context manager of ``with ... as``); and the local
    containers and objects it puts a value into (``box.state = v``, ``stats[k] = v``,
    ``tensors += [v]``, ``tensors.append(v)``), which then hold it (marked ``True``)."""
    for node in run_nodes(function):
        pairs: List[Tuple[ast.expr, ast.expr]] = []
        if isinstance(node, ast.Assign):
            pairs = [(target, node.value) for target in node.targets]
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr, ast.AugAssign)) and node.value:
            pairs = [(node.target, node.value)]
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            pairs = [(node.target, node.iter)]
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            pairs = [(node.optional_vars, node.context_expr)]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in CONTAINER_UPDATES
        ):
            pairs = [(node.func.value, a) for a in [*node.args, *(k.value for k in node.keywords)]]
        for target, value in pairs:
            unpacked = _unpacked_names(target, node)
            for index, name in enumerate(unpacked):  # `h, weights = self.attn(x)`: each its own
                part = ast.Subscript(value=value, slice=ast.Constant(index), ctx=ast.Load())
                yield {name}, part, False
            if unpacked:
                continue
            stored = isinstance(target, (ast.Attribute, ast.Subscript)) or isinstance(
                node, (ast.Call, ast.AugAssign)
            )
            names = {root_name(target)} - {""} if stored else {
                n.id for n in walk(target)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            }
            if names:
                yield names, value, stored


def _unpacked_names(target: ast.expr, node: ast.AST) -> List[str]:
    """``[a, b]`` of ``a, b = value`` (plain names, none starred); none for other bindings."""
    if not (isinstance(node, ast.Assign) and isinstance(target, (ast.Tuple, ast.List))):
        return []
    names = [element.id for element in target.elts if isinstance(element, ast.Name)]
    return names if len(names) == len(target.elts) else []


#: Tensor attributes and methods that give a new value (metadata, a Python number or list).
_NEW_READS = frozenset({
    "shape", "dtype", "device", "ndim", "requires_grad", "is_cuda", "layout", "size", "dim",
    "numel", "item", "tolist", "element_size", "is_floating_point", "is_contiguous",
})
#: Builtins that give a new value, not one of their arguments.
_NEW_VALUE_BUILTINS = frozenset({
    "len", "int", "float", "bool", "str", "repr", "range", "isinstance", "issubclass",
    "hasattr", "callable", "id", "hash", "format", "abs", "round", "sum", "any", "all", "ord",
    "chr", "divmod", "pow",
})


def hands_on(
    value: ast.expr, held: Set[str], owner: Optional[ClassInfo], symbols: ModuleSymbols
) -> bool:
    """Whether ``value`` may be, hold, or be a part or a view of what a name of ``held``
    names."""
    if isinstance(value, ast.Name):
        return value.id in held
    if isinstance(value, ast.Attribute) and value.attr in _NEW_READS:
        return False
    if isinstance(value, ast.Subscript) and _new_element(value, owner, symbols):
        return False
    if isinstance(value, (ast.Attribute, ast.Subscript, ast.Starred, ast.NamedExpr)):
        return hands_on(value.value, held, owner, symbols)
    if isinstance(value, ast.UnaryOp):
        return isinstance(value.op, ast.UAdd) and hands_on(value.operand, held, owner, symbols)
    if isinstance(value, ast.BinOp):  # a new tensor; a new list or tuple of the elements
        return any(
            _sequence(side) and hands_on(side, held, owner, symbols)
            for side in (value.left, value.right)
        )
    if isinstance(value, ast.Call):
        return _call_hands_on(value, held, owner, symbols)
    if isinstance(value, (ast.Constant, ast.JoinedStr, ast.Compare, ast.Lambda)):
        return False
    parts = [n for n in ast.iter_child_nodes(value) if isinstance(n, ast.expr)]
    if isinstance(value, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        parts = [n for n in walk(value) if isinstance(n, ast.Name)]
    return any(hands_on(part, held, owner, symbols) for part in parts)  # displays, `a or b`


def _new_element(value: ast.Subscript, owner: Optional[ClassInfo], symbols: ModuleSymbols) -> bool:
    """``self.attn(h)[0]``: an element of what a submodule returns that is a new tensor
    (``submodules.returns_new_tensor`` at its path)."""
    path: Optional[Path] = ()
    base: ast.expr = value
    while isinstance(base, ast.Subscript) and path is not None:
        path = element_path(base, path)
        base = base.value
    return path is not None and isinstance(base, ast.Call) and (
        returns_new_tensor(base, path, owner, symbols)
    )


#: Builtins that make a sequence of what they are given.
_SEQUENCE_MAKERS = frozenset({"list", "tuple", "sorted", "reversed"})


def _sequence(value: ast.expr) -> bool:
    """Whether ``value`` is surely a list or tuple, which ``+`` and ``*`` join or repeat
    (elements and all): a display, a comprehension, ``list(...)``, ``tuple(...)``."""
    if isinstance(value, (ast.List, ast.Tuple, ast.ListComp)):
        return True
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in _SEQUENCE_MAKERS
    )


#: Functions of this file whose return values are being weighed (a recursion holds).
_FOLLOWING: Set[int] = set()


def _returns_module_state(function: FunctionNode, symbols: ModuleSymbols) -> bool:
    """Whether ``function``, of this file, may return (a part of) a module-level value
    (``def get_stats(): return STATS``)."""
    if id(function) in _FOLLOWING:
        return True
    _FOLLOWING.add(id(function))
    try:
        outer = callers_values(function, None, symbols) - parameter_names(function)
        held = holders(function, frozenset(outer), None, symbols) - {"self"}
        return any(
            hands_on(node.value, held - _named_code(symbols), None, symbols)
            for node in run_nodes(function)
            if isinstance(node, ast.Return) and node.value is not None
        )
    finally:
        _FOLLOWING.discard(id(function))


def _call_hands_on(
    call: ast.Call, held: Set[str], owner: Optional[ClassInfo], symbols: ModuleSymbols
) -> bool:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in _NEW_READS:
        return False
    if isinstance(func, ast.Name) and func.id in _NEW_VALUE_BUILTINS:
        return func.id in symbols.defined_here()
    if isinstance(func, ast.Name) and func.id in symbols.functions and (
        _returns_module_state(symbols.functions[func.id], symbols)
    ):
        return True  # `stats = get_stats()` of `return STATS`
    # a method named like a tensor operation is taken to be one, but on `self` (`self.norm`)
    kind = call_kind(call, owner, symbols, tensor_method=not is_self(getattr(func, "value", func)))
    return any(hands_on(source, held, owner, symbols) for source in call_sources(call, kind))


def _sets_attribute_of(
    node: ast.AST, held: Set[str], owner: Optional[ClassInfo], symbols: ModuleSymbols
) -> bool:
    """``setattr(obj, ...)`` or ``delattr(obj, ...)`` of a value that ``held`` names hold."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("setattr", "delattr")
        and bool(node.args)
        and hands_on(node.args[0], held, owner, symbols)
    )


def updates_in_place(
    node: ast.AST, roots: Set[str], owner: Optional[ClassInfo], symbols: ModuleSymbols
) -> bool:
    """``x.add_(1)``, ``x[i] = v``, ``x += v``, ``f(x, inplace=True)``, ``torch.add(a, b,
    out=x)`` or ``F.batch_norm(h, x, ...)`` of a value whose root name is in ``roots``
    (whatever its type: a tensor is updated in place, a number is only rebound); not of a
    new tensor made from one (``x.new_empty(shape).bernoulli_(p)``), in a method of
    ``owner``."""
    if isinstance(node, ast.Call):
        return any(
            hands_on(value, roots, owner, symbols) for value in updated_by_call(node, symbols)
        )
    if isinstance(node, ast.AugAssign):
        return root_name(node.target) in roots
    if isinstance(node, ast.Assign):
        return any(
            isinstance(target, ast.Subscript) and root_name(target.value) in roots
            for target in node.targets
        )
    return False


def _statistics_arguments(callee: str) -> Tuple[Tuple[int, str], ...]:
    """Where a norm function (``callee``: its qualified or plain name) takes the running
    statistics it updates, by position and keyword: second and third for torch.nn.functional's
    ``batch_norm``/``instance_norm``; for the others, those and the two after (torch's own
    take them after the weight and the bias: ``torch.batch_norm``, ``torch.native_batch_norm``,
    ``torch.ops.aten...``; ``torch.batch_norm_update_stats`` second and third)."""
    if not any("batch_norm" in part or "instance_norm" in part for part in callee.split(".")):
        return ()
    functional = (1, "running_mean"), (2, "running_var")
    if callee in ("torch.nn.functional.batch_norm", "torch.nn.functional.instance_norm"):
        return functional
    return functional + ((3, "running_mean"), (4, "running_var"))


#: Functions that renorm their weight (argument 1) in place when given ``max_norm`` (at the
#: position shown, or by keyword) other than None.
_RENORMING_FUNCTIONS = {"embedding": 3, "embedding_bag": 3}


def handed_call(call: ast.Call) -> Optional[ast.Call]:
    """The call that ``call`` makes of what it is handed first, with the arguments after it:
    ``self.layer(h, None)`` for ``checkpoint(self.layer, h, None)``,
    ``functools.partial(self.layer, mask=None)`` or transformers'
    ``self._gradient_checkpointing_func(layer.__call__, h, None)``; None for other calls."""
    if short_name(call) not in _CALLS_OF_ARGUMENT or not call.args:
        return None
    target = call.args[0]
    if isinstance(target, ast.Starred):
        return None
    if isinstance(target, ast.Attribute) and target.attr == "__call__":
        target = target.value
    keywords = [k for k in call.keywords if k.arg not in _CHECKPOINT_OPTIONS]
    return ast.copy_location(ast.Call(func=target, args=call.args[1:], keywords=keywords), call)


def called_through(call: ast.Call) -> ast.Call:
    """The call ``call`` makes in the end through calls that call what they are handed
    (``handed_call``), also of a ``partial`` it calls (``partial(layer, mask=m)(h)``):
    ``layer(h, mask=m)`` for ``checkpoint(partial(layer.__call__, mask=m), h)``."""
    while True:
        handed = handed_call(call)
        inner = handed_call(call.func) if isinstance(call.func, ast.Call) else None
        if handed is None and inner is not None:
            handed = ast.copy_location(ast.Call(
                func=inner.func, args=inner.args + call.args,
                keywords=inner.keywords + call.keywords,
            ), call)
        if handed is None:
            return call
        call = handed


#: Calls that call their first argument with the arguments after it.
_CALLS_OF_ARGUMENT = frozenset({"checkpoint", "partial", "_gradient_checkpointing_func"})
#: ``torch.utils.checkpoint.checkpoint``'s own keywords, which it does not hand on.
_CHECKPOINT_OPTIONS = frozenset({
    "use_reentrant", "preserve_rng_state", "context_fn", "determinism_check", "debug",
})


def updated_by_call(call: ast.Call, symbols: ModuleSymbols) -> List[ast.expr]:
    """The values ``call`` (of a module of ``symbols``) may update in place: the tensor of a
    method named like ``add_``, the first argument of an imported function so named
    (``torch.nn.init.zeros_(w)``, ``torch.Tensor.add_(t, 1)``, ``torch.ops.aten.add_.Tensor``),
    what a call is handed along with such a function (``map(torch.Tensor.zero_, ts)``), the
    first argument of an ``inplace=True`` call (``F.relu(x, True)`` too), an ``out=``
    argument, the running statistics handed to ``F.batch_norm``/``F.instance_norm``
    (``torch.batch_norm`` too: ``_statistics_arguments``), and the weight that
    ``F.embedding`` renorms when given ``max_norm``."""
    updated: List[ast.expr] = []
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    named = _module_alias(func, symbols)  # `norm_fn(...)` of `norm_fn = F.batch_norm`
    imported = symbols.qualified_name(named) if root_name(named) in symbols.imports else None
    name = imported.rsplit(".", 1)[-1] if imported else name  # `act(x, True)`, `relu as act`
    if _in_place_function(imported or ""):
        updated += call.args[:1]
    elif isinstance(func, ast.Attribute) and in_place_name(name):
        updated.append(func.value)
    if any(
        root_name(a) in symbols.imports and _in_place_function(symbols.qualified_name(a) or "")
        for a in call.args
        if isinstance(a, (ast.Name, ast.Attribute))
    ):  # `map(torch.Tensor.zero_, module.buffers())`
        updated += [a for a in call.args if not isinstance(a, (ast.Name, ast.Attribute))]
    updated += [keyword.value for keyword in call.keywords if keyword.arg == "out"]
    if updates_first_argument(call, name):
        updated += call.args[:1]
    updated += updated_arguments(call, name)
    for position, keyword_name in _statistics_arguments(imported or name):
        updated += call.args[position:position + 1]
        updated += [k.value for k in call.keywords if k.arg == keyword_name]
    if name in _RENORMING_FUNCTIONS:
        position = _RENORMING_FUNCTIONS[name]
        norms = call.args[position:position + 1] + [
            k.value for k in call.keywords if k.arg == "max_norm"
        ]
        if any(not (isinstance(v, ast.Constant) and v.value is None) for v in norms):
            updated += call.args[1:2] + [k.value for k in call.keywords if k.arg == "weight"]
    return [value for value in updated if not isinstance(value, ast.Starred)]


def _module_alias(func: ast.expr, symbols: ModuleSymbols) -> ast.expr:
    """What a module-level name that ``func`` is bound to (``norm_fn = F.batch_norm``),
    else ``func``."""
    if isinstance(func, ast.Name) and func.id not in symbols.imports:
        value = symbols.assignments.get(func.id)
        if isinstance(value, (ast.Name, ast.Attribute)):
            return value
    return func


def in_place_name(name: str) -> bool:
    return name.endswith("_") and not name.startswith("_")


def _in_place_function(qualified: str) -> bool:
    """A function of torch that works in place on its first argument (``torch.relu_``,
    ``torch.nn.init.zeros_``, ``torch.Tensor.add_``, ``torch.ops.aten.add_.Tensor``)."""
    parts = qualified.split(".")
    if qualified.startswith("torch.ops."):
        return any(in_place_name(part) for part in parts[2:])
    return qualified.startswith("torch.") and in_place_name(parts[-1])


def stored_objects(node: ast.AST) -> List[ast.expr]:
    """The objects ``node`` changes in place: one it stores an attribute or item into or
    deletes one of (``self`` of ``self.seen += 1``, ``cache`` of ``cache[k] = v``, ``type(self)``
    of ``type(self).count += 1``), a container whose updating method it calls, also through
    the type (``self.cache`` of ``self.cache.append(x)`` and ``dict.update(self.cache, ...)``),
    one a special method that sets or deletes is called on or through a class for
    (``self`` of ``object.__setattr__(self, ...)``, ``nn.Module.__setattr__(self, ...)``,
    ``super().__setattr__(...)``), an iterator it advances (``next(self.steps)``), or one whose
    updating method it hands on (``self.seen`` of ``map(self.seen.add, xs)``)."""
    targets: List[ast.expr] = []
    if isinstance(node, (ast.Assign, ast.Delete)):
        targets = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    while any(isinstance(t, (ast.Tuple, ast.List, ast.Starred)) for t in targets):
        targets = [  # `self.a, *self.rest = pair`
            inner
            for t in targets
            for inner in (
                t.elts if isinstance(t, (ast.Tuple, ast.List))
                else [t.value] if isinstance(t, ast.Starred) else [t]
            )
        ]
    objects = [t.value for t in targets if isinstance(t, (ast.Attribute, ast.Subscript))]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        func = node.func
        if func.attr in CONTAINER_UPDATES:
            objects.append(func.value)
        if (
            isinstance(func.value, ast.Name)
            and func.value.id in _BUILTIN_TYPES
            and func.attr in CONTAINER_UPDATES
            and node.args
        ):
            objects.append(node.args[0])  # `dict.update(d, ...)`
        if func.attr in _SETTING_METHODS:  # `self.__setattr__(...)`, `super().__setattr__(...)`
            receiver = func.value
            objects.append(
                ast.Name(id="self", ctx=ast.Load()) if is_super_call(receiver) else receiver
            )
            objects.extend(node.args[:1])  # through a class: `nn.Module.__setattr__(self, ...)`
    advanced = advanced_iterator(node) if isinstance(node, ast.Call) else None
    if advanced is not None:
        objects.append(advanced)
    if isinstance(node, ast.Call):  # `map(self.seen.add, xs)`: an updating method handed on
        objects.extend(
            argument.value
            for argument in [*node.args, *(keyword.value for keyword in node.keywords)]
            if isinstance(argument, ast.Attribute) and argument.attr in CONTAINER_UPDATES
        )
    return objects


#: Builtin types whose container methods, called through the type, change the object they are
#: handed.
_BUILTIN_TYPES = frozenset({"object", "dict", "list", "set", "bytearray"})
#: Special methods that set or delete an attribute or an item.
_SETTING_METHODS = frozenset({"__setattr__", "__delattr__", "__setitem__", "__delitem__"})


def stored_roots(node: ast.AST) -> Set[str]:
    """The root names of ``stored_objects``: the names whose value ``node`` changes in
    place."""
    return {root_name(target) for target in stored_objects(node) if root_name(target)}


def advanced_iterator(call: ast.Call) -> Optional[ast.expr]:
    """``it`` of ``next(it)`` or ``next(it, default)``, which advances it."""
    func = call.func
    if isinstance(func, ast.Name) and func.id == "next" and call.args and not call.keywords:
        return call.args[0]
    return None


def iterates_held_iterator(
    node: ast.AST, owner: Optional[ClassInfo], symbols: ModuleSymbols
) -> bool:
    """Whether ``node`` (a ``for`` or a comprehension) iterates over an iterator that outlives
    the call, which iterating advances: an attribute of ``self`` or a module-level name that
    the class or the module binds to one (``self.steps = itertools.count()``,
    ``STREAM = iter(...)``, a generator)."""
    clauses: List[ast.expr] = []
    if isinstance(node, (ast.For, ast.AsyncFor)):
        clauses = [node.iter]
    elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        clauses = [generator.iter for generator in node.generators]
    for iterated in clauses:
        values: List[ast.expr] = []
        attribute = self_attribute(iterated)
        if attribute is not None and owner is not None:
            values = [
                sub.value
                for method in owner.methods.values()
                for sub in walk(method)
                if isinstance(sub, ast.Assign)
                and any(self_attribute(target) == attribute for target in sub.targets)
            ]
        elif isinstance(iterated, ast.Name) and iterated.id in symbols.assignments:
            values = [symbols.assignments[iterated.id]]
        if any(_makes_iterator(value, symbols) for value in values):
            return True
    return False


def _makes_iterator(value: ast.expr, symbols: ModuleSymbols) -> bool:
    """``iter(...)``, ``map``/``filter``/``zip``/``enumerate``/``reversed``, anything of
    ``itertools``, a generator expression, or a call of a generator function of this file."""
    if isinstance(value, ast.GeneratorExp):
        return True
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    if isinstance(func, ast.Name) and func.id in _ITERATOR_MAKERS:
        return func.id not in symbols.defined_here()
    if (symbols.qualified_name(func) or "").startswith("itertools."):
        return True
    function = symbols.functions.get(func.id) if isinstance(func, ast.Name) else None
    return function is not None and any(
        isinstance(sub, (ast.Yield, ast.YieldFrom)) for sub in walk(function)
    )


def _class_changes_state(name: str, symbols: ModuleSymbols, depth: int) -> bool:
    """Whether calling a module of class ``name`` (of this file, or a qualified ``torch.nn``
    name) may change state."""
    if name.startswith("torch.nn."):
        short = name.rsplit(".", 1)[-1]
        return short in STATEFUL_MODULES or short in _CONTAINERS
    if name.startswith(FOREIGN):
        return not known_callable(name[len(FOREIGN):])
    info = symbols.classes.get(name)
    forward = forward_of(info, symbols) if info is not None else None
    if info is None or forward is None:
        return True
    return body_changes_state(forward, info, symbols, depth)


@functools.lru_cache(maxsize=65_536)
def module_expression(func: ast.expr, function: FunctionNode) -> Optional[ast.expr]:
    """``self.X`` or ``self.X[k]`` for a call of ``self.X``, ``self.X[k]`` (or their
    ``.forward`` or ``.__call__``), or of a local name that ``function`` binds only by
    iterating over ``self.X`` (``for layer in self.layers``, in a comprehension too, through
    ``enumerate``, ``zip``, ``reversed``, a slice, ``.values()`` or ``.items()``: an element
    ``self.X[?]`` of an unknown index) or by assigning one such value (``layer =
    self.layers[0]``)."""
    if isinstance(func, ast.Attribute) and func.attr in RUNS_MODULE:
        return module_expression(func.value, function)  # `layer.forward(h)`
    if attribute_of(func) is not None:
        return func
    if not isinstance(func, ast.Name) or func.id in parameter_names(function):
        return None
    bindings = _bindings_by_name(function).get(func.id, 0)
    if not bindings:
        return None  # a global or builtin (`len(x)`, `torch.cat`), not a local bound here
    sources: List[ast.expr] = []
    for node in walk(function):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and _names(
            node.target, func.id
        ):
            listed = _iterated_list(node.target, node.iter, func.id)
            if listed is None:
                return None  # bound to something else than an element of one list
            sources.append(ast.Subscript(value=listed, slice=ast.Name(id="?"), ctx=ast.Load()))
        elif isinstance(node, ast.Assign) and any(_is_named(t, func.id) for t in node.targets):
            sources.append(node.value)
    if not sources or bindings != len(sources):
        return None  # also bound otherwise (unpacked, in a `with`, a comprehension)
    if len({ast.unparse(source) for source in sources}) != 1:
        return None
    return sources[0] if attribute_of(sources[0]) is not None else None


@node_memo
def _bindings_by_name(function: FunctionNode) -> Dict[str, int]:
    """How many times ``function`` binds each name (stores and deletes of a plain name,
    nested functions and comprehensions included)."""
    counts: Dict[str, int] = {}
    for node in walk(function):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            counts[node.id] = counts.get(node.id, 0) + 1
    return counts


def module_call_targets(
    func: ast.expr, caller: FunctionNode, owner: ClassInfo, symbols: ModuleSymbols
) -> Optional[List[FunctionNode]]:
    """What a call of ``func`` in ``caller`` (a method of ``owner``) may run where it calls a
    module of ``self`` that ``module_expression`` names: for each class of this file the
    module may be (``held_classes``; where those are not known, every class whose objects may
    sit anywhere, ``submodules.loosely_built``), what calling it runs
    (``submodules.runs_when_called``). None where the call is not of a module named so.
    Answered once per call of a module tree."""
    answers = _targets_by_call(symbols.tree)
    kept = answers.get(id(func))
    if kept is None or kept[0] is not func or kept[1] is not caller:
        found = _module_call_targets(func, caller, owner, symbols)
        kept = answers[id(func)] = (func, caller, found)
    return kept[2]


@node_memo
def _targets_by_call(
    tree: ast.Module,
) -> Dict[int, Tuple[ast.expr, FunctionNode, Optional[List[FunctionNode]]]]:
    """``module_call_targets`` of the calls of ``tree`` asked so far, by the callee's id
    (filled by it)."""
    return {}


def _module_call_targets(
    func: ast.expr, caller: FunctionNode, owner: ClassInfo, symbols: ModuleSymbols
) -> Optional[List[FunctionNode]]:
    module = module_expression(func, caller)
    if module is None:
        return None
    held = held_classes(module, owner, symbols)
    if attribute_of(module) in _REGISTRIES:  # `self._modules["block"]`: any of the file's
        held = list(symbols.classes)
    names = loosely_built(symbols.tree) if held is None else held
    targets = (
        runs_when_called(symbols.classes[name], symbols)
        for name in sorted(names)
        if name in symbols.classes
    )
    return [target for target in targets if target is not None]


def _iterated_list(target: ast.expr, iterated: ast.expr, name: str) -> Optional[ast.expr]:
    """``self.X`` when ``for <target> in <iterated>`` binds ``name`` to an element of
    ``self.X`` (``for m in self.X``, ``enumerate``, ``zip``, ``reversed``, ``list``,
    ``tuple``, ``self.X[a:b]``, ``self.X.values()``, ``.children()``, ``.items()``,
    ``.named_children()``); None when it binds it to something else."""
    if isinstance(iterated, ast.Call) and isinstance(target, ast.Tuple) and not iterated.keywords:
        arguments, elements = iterated.args, target.elts
        if _is_named(iterated.func, "enumerate") and len(arguments) == len(elements) - 1 == 1:
            return _iterated_list(elements[1], arguments[0], name)
        if _is_named(iterated.func, "zip") and len(arguments) == len(elements):
            for each, argument in zip(elements, arguments):
                if _names(each, name):
                    return _iterated_list(each, argument, name)
        if (
            isinstance(iterated.func, ast.Attribute)
            and iterated.func.attr in ("items", "named_children")
            and not arguments
            and len(elements) == 2
            and _is_named(elements[1], name)
        ):
            return _listed(iterated.func.value)
        return None
    if not _is_named(target, name):
        return None
    if isinstance(iterated, ast.Call) and not iterated.keywords and len(iterated.args) <= 1:
        copies = ("reversed", "list", "tuple")
        if any(_is_named(iterated.func, copy) for copy in copies) and iterated.args:
            return _iterated_list(target, iterated.args[0], name)
        if isinstance(iterated.func, ast.Attribute) and iterated.func.attr in (
            "values", "children"
        ):
            return None if iterated.args else _listed(iterated.func.value)
    return _listed(iterated)


def _listed(value: ast.expr) -> Optional[ast.expr]:
    """``self.X`` of ``self.X`` or a slice of it; None for anything else."""
    if isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Slice):
        value = value.value
    return value if self_attribute(value) is not None else None


#: A module's own tables of what it holds, whose items are any of its submodules.
_REGISTRIES = frozenset({"_modules", "__dict__"})
#: What a module object runs when called: ``m.forward(x)``, ``m.__call__(x)``.
RUNS_MODULE = frozenset({"forward", "__call__", "_call_impl", "_wrapped_call_impl"})


def attribute_of(value: ast.expr) -> Optional[str]:
    """``X`` of ``self.X`` or ``self.X[k]``."""
    return self_attribute(value.value if isinstance(value, ast.Subscript) else value)


def held_classes(
    module: ast.expr,
    owner: ClassInfo,
    symbols: ModuleSymbols,
    resolving: FrozenSet[Tuple[str, str]] = frozenset(),
) -> Optional[List[str]]:
    """The classes of the modules that ``self.X`` (or an element of it, for ``self.X[k]``)
    may hold: every module that ``owner``, its bases or its subclasses of this file build into
    it, and every module that a class of this file stores into ``.X`` of another object
    (``self.model.decoder.bbox_embed = self.bbox_embed``), except in a setter (``def
    set_input_embeddings(self, value): self.embed_tokens = value``, taken to hand in a module
    of the class built). Empty when nothing is built into it (a method inherited from another
    file); None when one of them is not known. ``resolving``: the (class, attribute) pairs
    whose modules are being found already (their own modules add nothing new)."""
    attribute = attribute_of(module) or ""
    element = isinstance(module, ast.Subscript)
    key = (owner.node.name, attribute, element)
    answers = _held_by_tree(symbols.tree)
    if not resolving and key in answers:
        return answers[key]
    held = _held(attribute, element, owner, symbols, resolving | {(owner.node.name, attribute)})
    if not resolving:
        answers[key] = held
    return held


@node_memo
def _held_by_tree(tree: ast.Module) -> Dict[Tuple[str, str, bool], Optional[List[str]]]:
    """``held_classes`` answers of ``tree`` by (class, attribute, element), filled by it."""
    return {}


def _held(
    attribute: str,
    element: bool,
    owner: ClassInfo,
    symbols: ModuleSymbols,
    resolving: FrozenSet[Tuple[str, str]],
) -> Optional[List[str]]:
    if attribute in _REGISTRIES:
        return None  # `self._modules["block"]`: any submodule
    held: Set[str] = set()
    for info in lineage(owner, symbols):
        for method in info.methods.values():
            if _sets(method, attribute):
                continue
            for classes, _ in additions(method, attribute, element, symbols, imported=True):
                if classes is None:
                    return None
                held.update(classes)
    for definition, method, value in _stored_from_outside(symbols.tree).get(attribute, ()):
        if _sets(method, attribute):
            continue
        holder = symbols.classes.get(definition.name)
        if holder is None or holder.node is not definition:
            return None  # a class statement that a later one of the same name shadows
        classes = _classes_of_value(value, element, holder, method, symbols, resolving)
        if classes is None:
            return None
        held.update(classes)
    return sorted(held)


@node_memo
def _stored_from_outside(
    tree: ast.Module,
) -> Dict[str, List[Tuple[ast.ClassDef, FunctionNode, ast.expr]]]:
    """attribute -> (class statement, method, value) of each store of a method of a class of
    ``tree`` into ``<object>.<attribute>`` of an object not ``self``
    (``self.model.decoder.head = ...``)."""
    stores: Dict[str, List[Tuple[ast.ClassDef, FunctionNode, ast.expr]]] = {}
    for statement in tree.body:
        if not isinstance(statement, ast.ClassDef):
            continue
        for method in statement.body:
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in walk(method):
                if not isinstance(node, ast.Assign):
                    continue
                for target in node.targets:
                    if isinstance(target, ast.Attribute) and not (
                        isinstance(target.value, ast.Name) and target.value.id == "self"
                    ):
                        stores.setdefault(target.attr, []).append(
                            (statement, method, node.value)
                        )
    return stores


def _classes_of_value(
    value: ast.expr,
    element: bool,
    info: ClassInfo,
    method: FunctionNode,
    symbols: ModuleSymbols,
    resolving: FrozenSet[Tuple[str, str]],
) -> Optional[List[str]]:
    """The classes of the module (or of its elements) that ``value`` is, in ``method`` of
    ``info``: those that ``self.Y`` (or ``self.Y[k]``) holds, or of the module a call builds."""
    attribute = attribute_of(value)
    if attribute is not None:
        if (info.node.name, attribute) in resolving:
            return []
        held: ast.expr = value
        if element:
            if isinstance(value, ast.Subscript):
                return None  # an element of an element
            held = ast.Subscript(value=value, slice=ast.Name(id="?"), ctx=ast.Load())
        return held_classes(held, info, symbols, resolving)
    return None if element else classes_of_call(value, method, symbols, imported=True)


def lineage(owner: ClassInfo, symbols: ModuleSymbols) -> List[ClassInfo]:
    """``owner`` and the classes of this file it derives from or that derive from it (not
    their other subclasses: an instance of a sibling never runs ``owner``'s methods)."""
    known = symbols.classes.get(owner.node.name)
    if known is None or known.node is not owner.node:
        return [owner]  # a class nested in a function or class: not among the file's classes
    ancestors, descendants = {owner.node.name}, {owner.node.name}
    for found, step in (
        (ancestors, lambda name: set(file_bases(symbols.classes[name], symbols))),
        (
            descendants,
            lambda name: {n for n, i in symbols.classes.items() if name in file_bases(i, symbols)},
        ),
    ):
        frontier = set(found)
        while frontier:
            frontier = {linked for name in frontier for linked in step(name)} - found
            found |= frontier
    return [symbols.classes[name] for name in sorted(ancestors | descendants)]


def _sets(method: FunctionNode, attribute: Optional[str]) -> bool:
    """Whether ``method`` (not ``__init__``) only stores a parameter into ``<object>.<attribute>``
    (``self.embed_tokens = value``, ``self.model.embed_tokens = value``): a setter."""
    body = [
        statement
        for statement in method.body
        if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant))
    ]
    if method.name == "__init__" or len(body) != 1 or not isinstance(body[0], ast.Assign):
        return False
    statement = body[0]
    return (
        len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Attribute)
        and statement.targets[0].attr == attribute
        and isinstance(statement.value, ast.Name)
        and statement.value.id in parameter_names(method)
    )


def _names(target: ast.expr, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in walk(target))


def _is_named(func: ast.expr, name: str) -> bool:
    return isinstance(func, ast.Name) and func.id == name
