"""Presence: may a value that a fix computes on the path the original did not take be None
there, or an attribute be unset?

[Where] computes both sides of a selection. A side that computes with an optional ``mask``,
``self.gamma = ... if scale else None`` or an attribute set only in some configurations fails
(``add(FakeTensor, None)``, ``AttributeError``) where the original took the other path. These
judgements are made from the file: the sources of None it shows (defaults, annotations,
``None`` literals, ``.get()``, callers that pass None), and the code that rules None out
before the selection (``if mask is None: mask = ...``; not an ``assert``, which ``python -O``
drops), and what the file's own functions may return (a helper that falls off its end), its
constructor calls pass (``Block(None)``) and its ``nn`` layers leave unset (``nn.Linear(...,
bias=False).bias``). What the file does not show (a caller in another file, a method inherited
from one) is a known problem of GM201.
"""

from __future__ import annotations

import ast
from typing import (
    TYPE_CHECKING, Callable, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple,
    Union,
)

from ..analysis.index import assignment_targets, child_nodes, node_memo, walk
from ..analysis.layers import holds_setting, holds_tensor
from ..analysis.purity import held_locals
from ..analysis.symbols import (
    FunctionNode, ModuleSymbols, is_self, is_super_call, self_attribute, self_chain,
    attribute_stores,
)
from ..analysis.values import Kind, is_shape, parameter_defaults, registered_name
from .aliasing import alternatives, reaching_bindings, statement_blocks
from .module_state import module_call_targets

if TYPE_CHECKING:
    from ..rules.base import FunctionContext


def may_be_none(
    node: ast.expr,
    at: ast.AST,
    ctx: FunctionContext,
    passed_none: Callable[[str], bool] = lambda name: False,
    depth: int = 0,
) -> bool:
    """Whether ``node``, a name or ``self.X`` read at ``at``, may hold None there: a parameter
    that defaults to None or is annotated ``Optional``/``... | None`` (``passed_none``: or that
    a caller may pass None for), a local that a binding reaching ``at`` may give None (``None``,
    ``kwargs.get("mask")``, an element of ``(None, None)``, another name that may be None, what
    a loop or ``with`` binds), an attribute that the file may set to None (``self.gamma = ...
    if scale else None``, ``self.scale = scale`` of a parameter that may be None,
    ``register_buffer("b", None)``), an attribute of one of ``self``'s objects that may be
    (``self.proj.bias``, ``_attribute_may_be_none``); not where code before ``at`` rules it
    out (``if mask is None: mask = torch.ones(...)``) and nothing after that may bind None
    again."""
    if isinstance(node, ast.Name):
        if depth > 3:
            return True
        bindings, on_entry = reaching_bindings(node.id, at, ctx)
        narrowing = _narrowing_before(node.id, at, ctx)
        if narrowing is not None:  # only what binds the name after the narrowing counts
            end = narrowing.end_lineno or narrowing.lineno
            inside = {id(sub) for sub in walk(narrowing)}
            bindings = [b for b in bindings if getattr(b, "lineno", 0) > end or id(b) in inside]
            on_entry = False
        if on_entry and ctx.values.is_parameter(node.id):
            if optional_parameter(ctx.region.function, node.id) or passed_none(node.id):
                return True
        if on_entry and node.id not in ctx.local_names:  # a global: `SCALE = None`
            return node.id in none_attributes(ctx.symbols.tree)
        return any(
            _binding_may_give_none(binding, ctx, passed_none, depth) for binding in bindings
        )
    attribute = self_attribute(node)
    if attribute is not None:
        return attribute in none_attributes(ctx.symbols.tree)
    return isinstance(node, ast.Attribute) and _attribute_may_be_none(node, ctx.symbols)


def _attribute_may_be_none(node: ast.Attribute, symbols: ModuleSymbols) -> bool:
    """Whether ``self.a.b`` may be None (or not be there): ``b`` is a gradient; ``self.a`` is
    an ``nn`` layer that holds a tensor ``b`` (``layers.holds_tensor``: not ``bias=False``,
    not ``nn.Identity()``) and the file stores None into ``b`` of an object other than
    ``self`` (``layer.bias = None``: another class's ``self.bias = None`` is not this
    layer's); else the file stores None into attributes named ``b``, or ``self.a`` is not an
    object of a class of this file (whose None stores ``none_attributes`` knows)."""
    if not self_chain(node):
        return False
    if node.attr == "grad":
        return True
    holder = self_attribute(node.value)
    if holds_setting(node, symbols):  # `self.proj.out_features`
        return node.attr in _none_stored_into_others(symbols.tree)
    if holder is not None and holds_tensor(node, symbols):  # only a store into the layer
        return node.attr in _none_stored_into_others(symbols.tree)  # (`layer.bias = None`)
    if node.attr in none_attributes(symbols.tree):
        return True
    if holder is None:  # `self.a.b.c`: judged by the names the file stores None into
        return False
    builds = attribute_stores(symbols.tree).get(holder, ())
    of_this_file = bool(builds) and all(
        isinstance(b, ast.Call) and isinstance(b.func, ast.Name) and b.func.id in symbols.classes
        for b in builds
    )
    return not of_this_file and not holds_tensor(node, symbols)


@node_memo
def _none_stored_into_others(tree: ast.Module) -> FrozenSet[str]:
    """The names the file stores None into on an object other than ``self`` itself:
    ``layer.bias = None``, ``self.proj.bias = None``, ``setattr(layer, "bias", None)``,
    ``layer.register_parameter("bias", None)``."""
    names: Set[str] = set()
    for node in walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and none_value(node.value):
            names |= {
                t.attr for t in assignment_targets(node)
                if isinstance(t, ast.Attribute) and not is_self(t.value)
            }
        elif isinstance(node, ast.Call) and len(node.args) >= 2:
            receiver = node.args[0] if getattr(node.func, "id", "") == "setattr" else (
                node.func.value if isinstance(node.func, ast.Attribute) else None
            )
            if receiver is not None and not is_self(receiver):
                names |= _stored_none(node, tree)
    return frozenset(names)


def _pairs(target: ast.expr, value: ast.expr) -> List[Tuple[ast.expr, ast.expr]]:
    """What each part of ``target`` is given by ``target = value``: element by element for a
    tuple given a tuple of the same length, else the whole value."""
    if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)):
        if len(target.elts) == len(value.elts):
            return [p for t, v in zip(target.elts, value.elts) for p in _pairs(t, v)]
    return [(target, value)]


def optional_parameter(function: FunctionNode, name: str) -> bool:
    """A parameter of ``function`` that defaults to None or is annotated optional."""
    arguments = function.args
    if none_value(parameter_defaults(arguments).get(name)):
        return True
    annotation = next(
        (
            a.annotation
            for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
            if a.arg == name
        ),
        None,
    )
    return annotation is not None and _optional(annotation)


def _binding_may_give_none(
    binding: ast.AST, ctx: FunctionContext, passed_none: Callable[[str], bool], depth: int
) -> bool:
    """Whether ``binding`` may give the name None: a value that may be None or hold one that
    unpacking gives (``k, v = (None, None)``), a name or attribute that may be None, a call of
    a function of this file that may return None (``returns_none``), or a binding whose value
    is not known (a loop, ``with ... as``)."""
    if isinstance(binding, ast.AugAssign):
        return False  # `h += self.bias` gives what the operation computes, or raises
    if isinstance(binding, (ast.For, ast.AsyncFor)):
        return not _over_module_containers(binding.iter, ctx.symbols)
    if not isinstance(binding, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
        return True
    value = binding.value
    if value is None or none_value(value):
        return value is not None
    # `(y := x)` binds a name, never a tuple to unpack
    targets = [] if isinstance(binding, ast.NamedExpr) else assignment_targets(binding)
    tuples = _none_returning(ctx.symbols)[1]
    if any(isinstance(t, (ast.Tuple, ast.List)) for t in targets):
        if isinstance(value, ast.Call):  # `out, weights = self.attn(x)` of `return out, None`
            return any(id(f) in tuples for f in _called_functions(value, ctx))
        if isinstance(value, (ast.Tuple, ast.List)):
            return any(isinstance(s, ast.Constant) and s.value is None for s in walk(value))
        if isinstance(value, ast.Subscript):  # `h, kv = outputs[:2]`, `h, w = x.shape[1:]`
            return unknown_item(value, ctx)
        if isinstance(value, ast.Name):  # `h, kv = outputs` of `outputs = self.attn(x)`
            found, _ = reaching_bindings(value.id, binding, ctx)
            calls = all(isinstance(getattr(b, "value", None), ast.Call) for b in found)
            return not (calls and found) and ctx.values.kind(value) is not Kind.TENSOR
        return ctx.values.kind(value) is not Kind.TENSOR  # `w, b = self.affine`: not seen into
    if isinstance(value, ast.Attribute) and unknown_attribute(value, ctx):
        return True  # `s = cfg.scale`
    parts = alternatives(value) or [value]  # `self.a or self.b`: either may be the value
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        if value.func.attr in ("get", "pop", "setdefault") and len(value.args) == 2:
            parts = [value.args[1]]  # `d.get(k, self.fallback)`: the default may be given
    if any(
        isinstance(part, (ast.Name, ast.Attribute))  # `b = bias`, `m = self.mask`
        and may_be_none(part, binding, ctx, passed_none, depth + 1)
        for part in parts
    ):
        return True
    if isinstance(value, ast.Subscript):  # `g = self.gammas[0]`, `s = cfg["scale"]`
        return unknown_item(value, ctx)
    return isinstance(value, ast.Call) and _call_may_give_none(value, ctx)


def _call_may_give_none(call: ast.Call, ctx: FunctionContext) -> bool:
    """Whether ``call`` may return None: a function, method or module of the file that may
    (``_none_returning``), a callable stored into an attribute that may (``self.scale_fn =
    lambda x: None``, ``= get_scale``, ``= partial(...)``), ``getattr(self, "gain")`` of a
    name the file stores None into."""
    stored = attribute_stores(ctx.symbols.tree).get(self_attribute(call.func) or "", ())
    if any(_callable_may_return_none(v, ctx.symbols) for v in stored):
        return True
    if getattr(call.func, "id", "") == "getattr" and len(call.args) == 2:
        key = call.args[1]
        return isinstance(key, ast.Constant) and key.value in none_attributes(ctx.symbols.tree)
    nones = _none_returning(ctx.symbols)[0]
    return any(id(f) in nones for f in _called_functions(call, ctx))


#: What reading a tensor gives without running code of the program, and never None.
_TENSOR_METADATA = frozenset({
    "shape", "dtype", "device", "ndim", "T", "mT", "H", "mH", "layout", "is_cuda", "real",
    "imag", "requires_grad", "is_sparse", "is_quantized", "is_meta", "data",
})


def unknown_attribute(node: ast.Attribute, ctx: FunctionContext) -> bool:
    """Whether ``node`` is an attribute of an object the analysis does not know, other than
    ``self`` (whose attributes ``may_be_none`` and ``impurity`` judge): ``cfg.scale`` of a
    parameter, ``blk.gamma`` of ``blk = self.blocks[0]``, ``CONFIG.scale``, which may be None,
    missing or a property. Not: metadata (``x.shape``) of what may be a tensor (not an object
    ``self`` holds or a class of the file makes: ``enc.dtype`` of ``enc = self.encoder``,
    ``spec.imag`` of ``spec = Spectrum(...)``), a name of an imported module
    (``torch.float16``, ``math.pi``), an attribute of what a torch call returns
    (``torch.finfo(x.dtype).min``)."""
    root = node.value
    while isinstance(root, (ast.Attribute, ast.Subscript)):
        root = root.value
    if is_self(root):
        return False
    if isinstance(root, ast.Call):
        return not (ctx.symbols.qualified_name(root.func) or "").startswith("torch.")
    if not isinstance(root, ast.Name):
        return False
    if root.id in ctx.symbols.imports and root.id not in ctx.local_names:
        return False
    if node.value is root and _class_constant(root.id, node.attr, ctx):
        return False  # `Model.SCALE` of `SCALE = 0.5` in the class body
    return not (
        node.attr in _TENSOR_METADATA
        and ctx.values.kind(root) is not Kind.STATIC
        and not _object_local(root.id, ctx)
    )


def _class_constant(name: str, attribute: str, ctx: FunctionContext) -> bool:
    """Whether ``name.attribute`` is a constant of a class of the file: its body binds it once
    to a number or string literal, and nothing else in the file stores into it."""
    info = ctx.symbols.classes.get(name)
    if info is None or name in ctx.local_names:
        return False
    values = [
        statement.value
        for statement in info.node.body
        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None
        and any(getattr(t, "id", "") == attribute for t in assignment_targets(statement))
    ]
    return (
        len(values) == 1
        and isinstance(values[0], ast.Constant)
        and isinstance(values[0].value, (int, float, str))
        and attribute not in attribute_stores(ctx.symbols.tree)
    )


def _object_local(name: str, ctx: FunctionContext) -> bool:
    """Whether the local ``name`` may hold an object other than a tensor: one ``self`` holds
    (``enc = self.encoder``), or one a class of the file makes, directly or as what a function
    of the file returns (``spec = self.encode(x)`` of ``return Spectrum(x)``)."""
    if name in held_locals(ctx.region.function):
        return True
    classes = ctx.symbols.classes
    return any(
        isinstance(value, ast.Call) and (
            getattr(value.func, "id", "") in classes
            or any(
                isinstance(r, ast.Return) and isinstance(r.value, ast.Call)
                and getattr(r.value.func, "id", "") in classes
                for function in _called_functions(value, ctx)
                for r in _own_nodes(function)
            )
        )
        for value in ctx.values.assignments_of(name)
    )


def may_pass_none(value: ast.expr, symbols: ModuleSymbols) -> bool:
    """Whether ``value``, handed to a call, may be None or a container rather than a tensor:
    None itself (``none_value``), a call of a function of the file that may return None, a
    display (``[0.5, 2.0]``), or ``CFG["scale"]`` of a key a dict of the file maps to None."""
    if none_value(value) or isinstance(value, (ast.List, ast.Tuple, ast.Dict, ast.Set)):
        return True
    if isinstance(value, ast.Subscript):
        return none_key(value, symbols.tree)
    nones = _none_returning(symbols)[0]
    return isinstance(value, ast.Call) and any(
        id(f) in nones for f in _file_callees(value, symbols)
    )


def unknown_item(value: ast.Subscript, ctx: FunctionContext) -> bool:
    """Whether ``value``, an item of a container, may be None or not a tensor: not an index
    of a tensor or of its shape, an item of an ``nn`` container, nor an item of what a call
    returned (``outputs[0]`` of a module's outputs):
    an item of a list, dict or tuple the analysis does not see into (``self.gammas[0]`` of
    ``[None, 0.5]``, ``cfg["scale"]``, ``kwargs["scale"]``)."""
    container = value.value
    if ctx.values.kind(container) in (Kind.TENSOR, Kind.DATA) or is_shape(container):
        return False
    if _over_module_containers(container, ctx.symbols):
        return False  # `blk = self.blocks[0]` of an `nn.ModuleList`
    if isinstance(container, ast.Call):
        return False  # `self.act(h).to(dtype)[:, None]`, `self.attn(x)[0]`
    if not isinstance(container, ast.Name) or ctx.values.is_parameter(container.id):
        return True  # `self.gammas[0]`, `cfg["scale"]`, `kwargs["scale"]`
    bindings, _ = reaching_bindings(container.id, value, ctx)
    return not bindings or not all(
        isinstance(getattr(b, "value", None), ast.Call) for b in bindings
    )


def _callable_may_return_none(stored: ast.expr, symbols: ModuleSymbols) -> bool:
    """Whether ``stored``, a callable stored into an attribute, may return None: a lambda of
    None, a function of the file that may (``_none_returning``), or ``functools.partial`` of
    one."""
    if isinstance(stored, ast.Lambda):
        return none_value(stored.body)
    if isinstance(stored, ast.Call) and getattr(stored.func, "attr", getattr(
        stored.func, "id", ""
    )) == "partial" and stored.args:
        stored = stored.args[0]
    function = symbols.functions.get(getattr(stored, "id", ""))
    return function is not None and id(function) in _none_returning(symbols)[0]


def _over_module_containers(iterated: ast.expr, symbols: ModuleSymbols) -> bool:
    """Whether a loop over ``iterated`` binds only elements of ``nn`` containers, which hold no
    None: ``self.blocks`` (and ``enumerate``/``zip``/``reversed`` of such) where the file
    builds ``self.blocks`` as an ``nn.ModuleList``, ``nn.Sequential`` or ``nn.ParameterList``
    on every build."""
    if isinstance(iterated, ast.Call) and getattr(iterated.func, "id", "") in (
        "enumerate", "zip", "reversed",
    ):
        held = [a for a in iterated.args if not isinstance(a, ast.Constant)]
        return bool(held) and all(_over_module_containers(a, symbols) for a in held)
    builds = attribute_stores(symbols.tree).get(self_attribute(iterated) or "", ())
    made = [symbols.qualified_name(b.func) or "" if isinstance(b, ast.Call) else "" for b in builds]
    return bool(made) and all(
        name.startswith("torch.nn.") and name.rpartition(".")[2] in _CONTAINERS for name in made
    )


_CONTAINERS = frozenset({"ModuleList", "Sequential", "ParameterList"})


def _called_functions(call: ast.Call, ctx: FunctionContext) -> List[FunctionNode]:
    """The functions of this file that ``call`` may run: a module-level function it names,
    every method of the file's classes named as ``self.m(...)`` (or ``super().m``), else what
    calling a module of ``self`` runs (``self.gate(x)``: its class's ``forward``)."""
    func, symbols = call.func, ctx.symbols
    if isinstance(func, ast.Name):
        found = symbols.functions.get(func.id)
        return [found] if found is not None and func.id not in ctx.local_names else []
    if not isinstance(func, ast.Attribute):
        return []
    methods = _methods_by_name(func, symbols)
    if methods:
        return methods
    owner = ctx.region.owner
    if owner is None:
        return []
    return module_call_targets(func, ctx.region.function, owner, symbols) or []


def _methods_by_name(func: ast.Attribute, symbols: ModuleSymbols) -> List[FunctionNode]:
    """Every method of the file's classes named as ``self.m``, ``self.block.m``, ``cls.m``,
    ``super().m``, ``type(self).m`` or ``Model.m`` calls it (by name: a subclass may override
    it)."""
    receiver = func.value
    own = (
        self_chain(receiver)  # `self.m()`, `self.block.m()`: a method of a class of the file
        or is_self(receiver)
        or is_super_call(receiver)
        or isinstance(receiver, ast.Name)
        and (receiver.id == "cls" or receiver.id in symbols.classes)
        or isinstance(receiver, ast.Call) and getattr(receiver.func, "id", "") == "type"
    )
    if not own:
        return []
    return [
        info.methods[func.attr] for info in symbols.classes.values() if func.attr in info.methods
    ]


def _none_returning(symbols: ModuleSymbols) -> Tuple[FrozenSet[int], FrozenSet[int]]:
    """The ids of the file's functions that may return None (``_may_return_none``), and of
    those that may return a tuple holding None (``return out, None``), following the calls of
    the file they return (``return self._scale()``) until nothing changes."""
    kept = vars(symbols).get("_none_returning")  # like a cached_property's value
    if kept is not None:
        return kept
    functions = [node for node in walk(symbols.tree)
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    nones = {id(f) for f in functions if _may_return_none(f, symbols)}
    tuples = {id(f) for f in functions if _returns_none_element(f, symbols)}
    while True:
        more = {
            id(f) for f in functions
            if id(f) not in nones
            and any(
                isinstance(node, ast.Return) and isinstance(node.value, ast.Call)
                and any(id(g) in nones for g in _file_callees(node.value, symbols))
                for node in _own_nodes(f)
            )
        }
        if not more:
            break
        nones |= more
    kept = vars(symbols)["_none_returning"] = (frozenset(nones), frozenset(tuples))
    return kept


def _file_callees(call: ast.Call, symbols: ModuleSymbols) -> List[FunctionNode]:
    """The functions of the file a call names: a module-level function, or methods named as
    ``_methods_named`` takes them."""
    func = call.func
    if isinstance(func, ast.Name):
        found = symbols.functions.get(func.id)
        return [found] if found is not None else []
    return _methods_by_name(func, symbols) if isinstance(func, ast.Attribute) else []


def _may_return_none(function: FunctionNode, symbols: ModuleSymbols) -> bool:
    """Whether a call of ``function`` may return None by its own code: a ``return`` of None
    (bare, ``return None``, a value that may be None, a local bound to None, an optional
    parameter, an attribute that may be None: ``return self.proj.bias``), an end of its body
    that running it may reach, or a decorator of the file whose wrapper may. A generator
    returns a generator."""
    own = _own_nodes(function)
    if any(isinstance(node, (ast.Yield, ast.YieldFrom)) for node in own):
        return False
    if plainly_returns_none(function):
        return True
    if any(
        isinstance(node, ast.Return) and isinstance(node.value, ast.Attribute) and (
            self_attribute(node.value) in none_attributes(symbols.tree)
            or _attribute_may_be_none(node.value, symbols)
        )
        for node in own
    ):
        return True
    for decorator in function.decorator_list:
        wrapper = symbols.functions.get(getattr(decorator, "id", ""))
        if wrapper is not None and any(
            isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef))
            and _may_return_none(inner, symbols)
            for inner in wrapper.body
        ):
            return True
    return False


@node_memo
def plainly_returns_none(function: FunctionNode) -> bool:
    """Whether ``function``'s own code may return None: a ``return`` of None (bare, ``return
    None``, a value that may be None, a local bound to None, an optional parameter) or an end
    of its body that running it may reach; not a generator."""
    own = _own_nodes(function)
    if any(isinstance(node, (ast.Yield, ast.YieldFrom)) for node in own):
        return False
    nones = none_locals(own)
    for node in own:
        if isinstance(node, ast.Return):
            value = node.value
            if value is None or none_value(value):
                return True
            if isinstance(value, ast.Name) and (
                value.id in nones or optional_parameter(function, value.id)
            ):
                return True
    return _may_complete(function.body)


def none_locals(nodes: Iterable[ast.AST]) -> Set[str]:
    """The names that assignments among ``nodes`` bind to a value that may be None."""
    return {
        target.id
        for node in nodes
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and none_value(node.value)
        for target in assignment_targets(node)
        if isinstance(target, ast.Name)
    }


def _own_nodes(function: FunctionNode) -> List[ast.AST]:
    """What ``function``'s body holds, less nested functions, classes and lambdas."""
    found: List[ast.AST] = []
    pending: List[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        found.append(node)
        pending.extend(
            child for child in child_nodes(node)
            if not isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
            )
        )
    return found


def _may_complete(block: Sequence[ast.stmt]) -> bool:
    """Whether running ``block`` may reach its end (not every path returns or raises)."""
    return all(_statement_may_complete(statement) for statement in block)


def _statement_may_complete(statement: ast.stmt) -> bool:
    if isinstance(statement, (ast.Return, ast.Raise)):
        return False
    if isinstance(statement, ast.If):
        return _may_complete(statement.body) or _may_complete(statement.orelse)
    if isinstance(statement, (ast.With, ast.AsyncWith)):
        return _may_complete(statement.body)
    if isinstance(statement, ast.Try):
        return _may_complete(statement.finalbody) and (
            _may_complete([*statement.body, *statement.orelse])
            or any(_may_complete(handler.body) for handler in statement.handlers)
        )
    if isinstance(statement, ast.While):
        endless = isinstance(statement.test, ast.Constant) and bool(statement.test.value)
        return not endless or any(
            isinstance(node, ast.Break) for node in _loop_nodes(statement.body)
        )
    return True


def _loop_nodes(block: Sequence[ast.stmt]) -> List[ast.AST]:
    """The nodes of a loop's body whose ``break`` leaves that loop (not an inner loop's)."""
    found: List[ast.AST] = []
    pending: List[ast.AST] = list(block)
    while pending:
        node = pending.pop()
        found.append(node)
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            pending.extend(node.orelse)  # a `break` in an inner loop's `else` leaves this one
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            pending.extend(child_nodes(node))
    return found


def _narrowing_before(name: str, at: ast.AST, ctx: FunctionContext) -> Optional[ast.stmt]:
    """The last statement on the way to ``at`` that leaves ``name`` not None: ``if name is
    None:`` whose body binds it to a new value (a call, arithmetic) or leaves; None if there is
    none. (``assert name is not None`` is not one: ``python -O`` runs without it.)"""
    line = getattr(at, "lineno", 0)
    blocks, _ = statement_blocks(ctx.region.function.body, line)
    found: Optional[ast.stmt] = None
    for statement in (s for block in blocks for s in block if (s.end_lineno or 0) < line):
        if (
            isinstance(statement, ast.If)
            and not statement.orelse
            and tests_none(statement.test, name, ast.Is)
            and statement.body
            and _gives_a_value(statement.body[-1], name)
        ):
            found = statement
    return found


def tests_none(test: ast.expr, name: str, operator: type) -> bool:
    """``name is None`` (``operator`` ``ast.Is``) or ``name is not None`` (``ast.IsNot``)."""
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == name
        and len(test.ops) == 1
        and isinstance(test.ops[0], operator)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    )


def _gives_a_value(statement: ast.stmt, name: str) -> bool:
    """``raise``/``return``, or ``name = <a call or arithmetic>`` that is not a lookup that may
    give None (``getattr(..., None)``, ``d.get(k)``): after it, ``name`` is not None."""
    if isinstance(statement, (ast.Raise, ast.Return)):
        return True
    value = statement.value if isinstance(statement, ast.Assign) else None
    return (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and statement.targets[0].id == name
        and isinstance(value, (ast.Call, ast.BinOp))
        and not none_value(value)
        and not (isinstance(value, ast.Call) and getattr(value.func, "id", "") == "getattr")
    )


def none_value(value: Optional[ast.expr]) -> bool:
    """Whether ``value`` may be None: the literal, ``d.get(k)`` / ``d.pop(k)`` /
    ``d.setdefault(k)`` / ``getattr(o, name, None)`` / ``next(it, None)`` without a default
    other than None, or one of the values of ``a
    if c else b``, ``a or b``, ``(y := x)`` that is."""
    if isinstance(value, ast.Constant):
        return value.value is None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        if value.func.attr in ("get", "pop", "setdefault") and len(value.args) in (1, 2):
            return len(value.args) == 1 or none_value(value.args[1])
    called = getattr(value.func, "id", "") if isinstance(value, ast.Call) else ""
    if isinstance(value, ast.Call) and called in ("getattr", "next"):
        default = 2 if called == "getattr" else 1
        return len(value.args) == default + 1 and none_value(value.args[default])
    return value is not None and any(none_value(part) for part in alternatives(value))


def _optional(annotation: ast.expr) -> bool:
    """``Optional[T]``, ``T | None``, ``Union[..., None]``, ``None``, or a string of one."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return "None" in annotation.value or "Optional" in annotation.value
    return any(
        isinstance(part, ast.Constant) and part.value is None
        or isinstance(part, (ast.Name, ast.Attribute))
        and getattr(part, "id", getattr(part, "attr", "")) == "Optional"
        for part in walk(annotation)
    )


@node_memo
def none_attributes(tree: ast.Module) -> FrozenSet[str]:
    """The attribute names that ``tree`` may store None into: ``obj.X = <may be None>``,
    ``X = None`` in a class body, ``register_buffer("X", None)`` and the like, ``obj.X =
    scale`` of a parameter that defaults to None or that a constructor call of the file passes
    None for (``Block(None)``), a field given None when a record is made (``Config(scale=None)``
    of a dataclass of the file, ``SimpleNamespace(scale=None)``), ``setattr(m, "X", None)``,
    ``obj.X = make_scale(flag)`` of a function of the file that may return None, and ``obj.X =
    config.Y`` of a name ``Y`` that may be None."""
    names: Set[str] = _field_nones(tree)
    passed = _constructor_nones(tree)
    for function in walk(tree):  # `self.scale = scale` of `__init__(self, scale=None)`
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names |= {
                target.attr
                for node in walk(function)
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name)
                and (
                    optional_parameter(function, node.value.id)
                    or (id(function), node.value.id) in passed
                )
                for target in node.targets
                if isinstance(target, ast.Attribute)
            }
    for node in walk(tree):
        names |= _stored_none(node, tree)
    copies = [  # `self.scale = config.attention_scale`
        (target.attr, node.value.attr)
        for node in walk(tree)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute)
        for target in node.targets
        if isinstance(target, ast.Attribute)
    ] + [  # `self.gain = self._default_gain()` of `return self.base_gain`
        (target.attr, returned.value.attr)
        for node in walk(tree)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
        for function in _named_functions(node.value.func, tree)
        for returned in _own_nodes(function)
        if isinstance(returned, ast.Return) and isinstance(returned.value, ast.Attribute)
        for target in node.targets
        if isinstance(target, ast.Attribute)
    ]
    while True:
        more = {stored for stored, read in copies if read in names} - names
        if not more:
            return frozenset(names)
        names |= more


def _stored_none(node: ast.AST, tree: ast.Module) -> Set[str]:
    """The names ``node`` may store None into: an assignment (``_assigned_none``),
    ``register_buffer("X", None)``, ``setattr(m, "X", None)``, ``object.__setattr__(self,
    "X", None)``."""
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        return _assigned_none(node, node.value, tree)
    names: Set[str] = set()
    if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "__setattr__":
        given = node.args[-2:]  # `object.__setattr__(self, "g", None)`, `self.__setattr__(...)`
        if len(given) == 2 and isinstance(given[0], ast.Constant) and none_value(given[1]):
            names.add(str(given[0].value))
    elif isinstance(node, ast.Call) and len(node.args) >= 2:
        name = registered_name(node)
        if name is not None and none_value(node.args[1]):
            names.add(name)
        key = node.args[1] if len(node.args) == 3 else None
        if getattr(node.func, "id", "") == "setattr" and isinstance(key, ast.Constant):
            if isinstance(key.value, str) and none_value(node.args[2]):
                names.add(key.value)
    return names


def _assigned_none(
    node: Union[ast.Assign, ast.AnnAssign], value: ast.expr, tree: ast.Module
) -> Set[str]:
    """The names an assignment may store None into: ``obj.X = <may be None>`` (``self.g,
    self.h = None, x`` too), ``X = None`` in a class body, ``obj.X = make_scale(flag)`` of a
    function that may return None (or a tuple holding None, unpacked), ``obj.X =
    CFG["scale"]`` of a key a dict of the file maps to None, ``self._buffers["X"] = None``."""
    names: Set[str] = set()
    for target in assignment_targets(node):
        for element, part in _pairs(target, value):
            if not none_value(part):
                continue
            if isinstance(element, ast.Attribute):
                names.add(element.attr)
            elif isinstance(element, ast.Name):
                names.add(element.id)  # a class-level default (or a global: harmless)
            elif isinstance(element, ast.Subscript) and isinstance(element.slice, ast.Constant):
                names.add(str(element.slice.value))  # `self._buffers["shift"] = None`
    called = _named_functions(value.func, tree) if isinstance(value, ast.Call) else []
    if any(plainly_returns_none(f) or _returns_none_element(f) for f in called) or (
        isinstance(value, ast.Subscript) and none_key(value, tree)
    ):
        names |= {
            element.attr
            for t in assignment_targets(node)
            for element in walk(t)
            if isinstance(element, ast.Attribute)
        }
    return names


def _returns_none_element(
    function: FunctionNode, symbols: Optional[ModuleSymbols] = None
) -> bool:
    """Whether ``function`` may return a tuple holding None: ``return None, None``, ``return
    boxes, scores`` of ``scores = None`` before, ``return out, self.cached`` of an attribute
    that may be None (with ``symbols``)."""
    own = _own_nodes(function)
    nones = none_locals(own)

    def may_be_none_element(element: ast.expr) -> bool:
        if none_value(element) or isinstance(element, ast.Name) and element.id in nones:
            return True
        attribute = self_attribute(element)
        return symbols is not None and attribute is not None and attribute in none_attributes(
            symbols.tree
        )

    return any(
        isinstance(node, ast.Return) and isinstance(node.value, (ast.Tuple, ast.List))
        and any(may_be_none_element(element) for element in node.value.elts)
        for node in own
    )


def none_key(item: ast.Subscript, tree: ast.Module) -> bool:
    """Whether ``item`` (``CFG["scale"]``) looks up a key that a dict of the file maps to
    None (``{"scale": None}``, ``dict(scale=None)``)."""
    key = item.slice
    return isinstance(key, ast.Constant) and key.value in _none_keys(tree)


@node_memo
def _none_keys(tree: ast.Module) -> FrozenSet[object]:
    """The keys that a dict display or ``dict(...)`` call of the file maps to None."""
    keys: Set[object] = set()
    for node in walk(tree):
        if isinstance(node, ast.Dict):
            keys |= {
                k.value for k, v in zip(node.keys, node.values)
                if isinstance(k, ast.Constant) and none_value(v)
            }
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "dict":
            keys |= {k.arg for k in node.keywords if k.arg and none_value(k.value)}
    return frozenset(keys)


def _named_functions(func: ast.expr, tree: ast.Module) -> List[FunctionNode]:
    """The functions of ``tree`` a call of ``func`` may run, by name: a module-level function
    (``make_scale``), or the methods of its classes named as ``self.m``/``cls.m``."""
    if isinstance(func, ast.Name):
        return [
            s for s in tree.body
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == func.id
        ]
    if isinstance(func, ast.Attribute) and getattr(func.value, "id", "") in ("self", "cls"):
        return [
            s for node in walk(tree) if isinstance(node, ast.ClassDef)
            for s in node.body
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == func.attr
        ]
    return []


def _field_nones(tree: ast.Module) -> Set[str]:
    """The fields that a call of the file gives None when it makes a record: by keyword or
    position for a class of the file without an ``__init__`` (a dataclass, a ``NamedTuple``:
    its annotated fields in order), by keyword for ``SimpleNamespace``/``Namespace`` and
    ``dataclasses.replace``."""
    fields = {
        node.name: [
            s.target.id for s in node.body
            if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
        ]
        for node in walk(tree)
        if isinstance(node, ast.ClassDef)
        and not any(isinstance(s, ast.FunctionDef) and s.name == "__init__" for s in node.body)
    }
    names: Set[str] = set()
    for call in walk(tree):
        if not isinstance(call, ast.Call):
            continue
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in fields and isinstance(func, ast.Name):
            given = [*zip(fields[name], call.args), *((k.arg, k.value) for k in call.keywords)]
        elif name in ("SimpleNamespace", "Namespace", "replace"):  # `dataclasses.replace`
            given = [(k.arg, k.value) for k in call.keywords]
        else:
            continue
        names |= {str(field) for field, value in given if field and none_value(value)}
    return names


def _constructor_nones(tree: ast.Module) -> Set[Tuple[int, str]]:
    """(id of an ``__init__``, parameter) for each parameter that a call of the file may pass
    None for: ``Block(None)``, ``Block(scale=scale)`` of a caller's optional parameter or of a
    local it binds to None, ``super().__init__(None)``, ``Base.__init__(self, None)``,
    ``cls(None)`` and ``type(self)(None)`` (each reaching the nearest ``__init__`` of the
    file up the class's bases), or unpacked arguments (``Block(*args)``)."""
    classes = {node.name: node for node in walk(tree) if isinstance(node, ast.ClassDef)}

    def initialiser(name: str, seen: FrozenSet[str] = frozenset()) -> Optional[ast.FunctionDef]:
        node = classes.get(name)
        if node is None or name in seen:
            return None
        own = next((s for s in node.body
                    if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
        if own is not None:
            return own
        bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
        return next((i for b in bases if (i := initialiser(b, seen | {name})) is not None), None)

    owner_of = {  # a method's id: its class
        id(statement): node
        for node in classes.values()
        for statement in node.body
        if isinstance(statement, ast.FunctionDef)
    }
    found: Set[Tuple[int, str]] = set()
    # the module's walk sees every call; a function's, the parameters its calls hand on
    callers = [node for node in walk(tree) if isinstance(node, ast.FunctionDef)]
    for caller in [tree, *callers]:
        owner = owner_of.get(id(caller))
        for call in walk(caller):
            if isinstance(call, ast.Call):
                called, skipped = _initialiser_called(call, owner, initialiser)
                if called is not None:
                    found |= _nones_passed(call, called, caller, skipped)
    return found


def _initialiser_called(
    call: ast.Call,
    owner: Optional[ast.ClassDef],
    initialiser: Callable[[str], Optional[ast.FunctionDef]],
) -> Tuple[Optional[ast.FunctionDef], int]:
    """The ``__init__`` of the file that ``call`` (in a method of ``owner``) runs, and how many
    of its first arguments are not parameters after ``self`` (1 for ``Base.__init__(self,
    ...)``)."""
    func = call.func
    if isinstance(func, ast.Name):  # `Block(...)`, `cls(...)` in a classmethod
        name = owner.name if owner is not None and func.id == "cls" else func.id
        return initialiser(name), 0
    if isinstance(func, ast.Call) and getattr(func.func, "id", "") == "type" and owner:
        return initialiser(owner.name), 0  # `type(self)(...)`
    if not (isinstance(func, ast.Attribute) and func.attr == "__init__"):
        return None, 0
    if is_super_call(func.value):
        bases = [b.id for b in owner.bases if isinstance(b, ast.Name)] if owner else []
        return next((i for b in bases if (i := initialiser(b)) is not None), None), 0
    if isinstance(func.value, ast.Name):  # `Base.__init__(self, ...)`
        return initialiser(func.value.id), 1
    return None, 0


def _nones_passed(
    call: ast.Call, initialiser: ast.FunctionDef, caller: ast.AST, skipped: int = 0
) -> Set[Tuple[int, str]]:
    """The parameters of ``initialiser`` that ``call``, in ``caller``, may pass None for
    (``skipped``: leading arguments that are not parameters after ``self``)."""
    parameters = [a.arg for a in [*initialiser.args.posonlyargs, *initialiser.args.args]][1:]
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return {(id(initialiser), name) for name in parameters}
    given = [*zip(parameters, call.args[skipped:]), *((k.arg, k.value) for k in call.keywords)]
    # the caller's locals bound to None (`g = None; Block(g)`)
    nones = none_locals(walk(caller)) if isinstance(caller, ast.FunctionDef) else set()
    return {
        (id(initialiser), str(name))
        for name, value in given
        if none_value(value) or isinstance(value, ast.Name) and (
            value.id in nones
            or isinstance(caller, ast.FunctionDef) and optional_parameter(caller, value.id)
        )
    }
