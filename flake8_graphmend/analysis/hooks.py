"""Code a file gives modules to run: hooks, parametrizations, patches of torch's classes.

Where a file registers ``self.lin.register_forward_hook(keep)`` or ``spectral_norm(self.lin)``,
calling a module or reading its weight runs code the analysis does not see at the call: a hook
may keep the output or replace it, a parametrization recomputes the weight (and may update its
own buffers) on every read.
"""

from __future__ import annotations

import ast
from typing import List, Optional, Tuple

from .index import node_memo, parent_map, root_name, walk
from .inplace import short_name
from .symbols import ModuleSymbols


@node_memo
def code_given_to_modules(tree: ast.Module) -> Optional[ast.expr]:
    """A place where the file gives modules code of its own to run when they are called or
    their parameters read (None: there is none): a module hook, registered on a module
    (``self.lin.register_forward_hook(f)``), for all modules
    (``register_module_forward_pre_hook(f)``) or through the hook dicts
    (``m._forward_pre_hooks[k] = f``); a parametrization or a norm that works by a hook
    (``register_parametrization``, ``spectral_norm(m)``, ``weight_norm``, ``torch.nn.utils
    .prune``); a patch of an imported class or module (``nn.Linear.forward = counted``,
    ``setattr(nn.Linear, ...)``) or of what a module runs (``m.lin.forward = f``,
    ``m.lin.__class__ = Keeping``); or any of those named by a string (``getattr(m,
    "register_forward_hook")``, ``setattr(m, "forward", f)``) or reached through ``__dict__``
    or ``vars()``. A call of any submodule may then run code that changes state. (Known
    problem: a name computed at run time, ``getattr(m, "register_" + kind)``, is not seen.)"""
    imports = ModuleSymbols.collect(tree)
    for node in walk(tree):
        if isinstance(node, ast.Call):
            qualified = imports.qualified_name(node.func) or short_name(node)
            name = qualified.rsplit(".", 1)[-1]  # `register_module_forward_hook as register`
            if _registers_hook(name):
                return node
            if name in _REGISTERS_CODE or qualified.startswith(_CODE_REGISTERING_MODULES):
                return node
            if name == "setattr" and node.args and root_name(node.args[0]) in imports.imports:
                return node
            if _names_code(node, imports):  # `getattr(m, "register_forward_hook")(f)`
                return node
        elif isinstance(node, ast.Attribute) and (
            _registers_hook(node.attr)  # `hook = m.register_forward_pre_hook`, then `hook(f)`
            or node.attr.endswith("_hooks")
            or node.attr == "__dict__"  # `m.__dict__["_forward_hooks"]`
            or not isinstance(node.ctx, ast.Load)
            and (root_name(node) in imports.imports or node.attr in _CALLED)
        ):
            return node
        elif isinstance(node, ast.Name) and (
            _registers_hook((imports.qualified_name(node) or node.id).rsplit(".", 1)[-1])
            or node.id == "vars" and "vars" not in imports.imports  # `vars(m)["_forward_hooks"]`
        ):
            return node
    return None


@node_memo
def forward_pre_hooks(tree: ast.Module) -> List[Tuple[ast.expr, Optional[ast.expr]]]:
    """Where the file registers a forward pre-hook, code a module runs before its ``forward``,
    each with the module it goes on (None: every module, or one the analysis cannot tell): a
    registering call (``m.register_forward_pre_hook(f)``, the global
    ``register_module_forward_pre_hook(f)`` under any name it is imported as), the method taken
    as a value (``register = m.register_forward_pre_hook``) or by name (any string that names
    one: ``getattr(m, "register_forward_pre_hook")``, ``object.__setattr__(m,
    "_forward_pre_hooks", d)``, ``operator.methodcaller(...)``, a module constant, on any
    module where it is not handed one first), the hook dicts (``m._forward_pre_hooks[k] =
    f``), and the module's ``__dict__`` or ``vars(m)`` at a key that names one
    (``_hook_key``)."""
    imports = ModuleSymbols.collect(tree)
    found: List[Tuple[ast.expr, Optional[ast.expr]]] = []
    for node in walk(tree):
        if isinstance(node, ast.Name):
            qualified = imports.qualified_name(node) or node.id
            if qualified.rsplit(".", 1)[-1] == _GLOBAL_PRE_HOOK:
                found.append((_used(node, tree), None))
        elif isinstance(node, ast.Attribute):
            if node.attr == _GLOBAL_PRE_HOOK:
                found.append((_used(node, tree), None))
            elif node.attr == "register_forward_pre_hook" or node.attr.startswith(
                "_forward_pre_hooks"
            ):
                found.append((_used(node, tree), node.value))
            elif node.attr == "__dict__" and _hook_key(node, tree):
                found.append((node, node.value))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            if node.func.id == "vars" and "vars" not in imports.imports and _hook_key(node, tree):
                found.append((node, node.args[0]))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and (
            "pre_hook" in node.value
        ):  # `getattr(m, "register_forward_pre_hook")`, `object.__setattr__(m,
            # "_forward_pre_hooks", d)`, `methodcaller("register_forward_pre_hook", f)`, a name
            parent = parent_map(tree).get(id(node))
            if isinstance(parent, ast.Expr):
                continue  # a docstring
            on = parent.args[0] if isinstance(parent, ast.Call) and parent.args and (
                parent.args[0] is not node
            ) else None
            found.append((parent if isinstance(parent, ast.Call) else node, on))
    return found


#: The function that registers a forward pre-hook for every module.
_GLOBAL_PRE_HOOK = "register_module_forward_pre_hook"


def _used(node: ast.expr, tree: ast.Module) -> ast.expr:
    """The call or item access that uses ``node`` (``m.register_forward_pre_hook(f)``,
    ``m._forward_pre_hooks[k]``), or ``node`` itself."""
    parent = parent_map(tree).get(id(node))
    if isinstance(parent, ast.Call) and parent.func is node or isinstance(
        parent, ast.Subscript
    ) and parent.value is node:
        return parent
    return node


def _hook_key(mapping: ast.expr, tree: ast.Module) -> bool:
    """``m.__dict__["_forward_pre_hooks"]``, ``vars(m).update(_forward_pre_hooks=d)``: the
    attributes ``mapping`` holds, reached at a key written out that names a hook dict (a key
    computed at run time is not seen, as ``getattr(m, "register_" + kind)`` is not)."""
    parents = parent_map(tree)
    parent = parents.get(id(mapping))
    keys: List[ast.expr] = []
    if isinstance(parent, ast.Subscript) and parent.value is mapping:
        keys = [parent.slice]
    elif isinstance(parent, ast.Attribute):
        call = parents.get(id(parent))
        if isinstance(call, ast.Call) and call.func is parent:
            keys = [argument for argument in call.args if isinstance(argument, ast.Constant)]
            keys += [key for d in call.args if isinstance(d, ast.Dict) for key in d.keys if key]
            keys += [ast.Constant(k.arg) for k in call.keywords if k.arg]
    return any(
        isinstance(key, ast.Constant) and isinstance(key.value, str) and "hook" in key.value
        for key in keys
    )


def _names_code(call: ast.Call, imports: ModuleSymbols) -> bool:
    """``getattr(m, "register_forward_hook")``, ``getattr(P, "spectral_norm")``,
    ``setattr(m, "forward", f)``: the builtin given the name of a way to give a module code
    as a string."""
    func = call.func
    if not (
        isinstance(func, ast.Name)
        and func.id in ("getattr", "setattr")
        and func.id not in imports.imports
        and len(call.args) > 1
        and isinstance(call.args[1], ast.Constant)
        and isinstance(call.args[1].value, str)
    ):
        return False
    text = call.args[1].value
    return (
        _registers_hook(text) or text in _REGISTERS_CODE or text.endswith("_hooks")
        or func.id == "setattr" and text in _CALLED
    )


def _registers_hook(name: str) -> bool:
    return name.startswith("register_") and name.endswith("hook")


#: Calls that make a module run code of its caller's choice (the hooks apart), by name, and
#: the torch modules whose functions do (``torch.nn.utils.spectral_norm`` and the like).
_REGISTERS_CODE = frozenset({
    "register_parametrization", "spectral_norm", "weight_norm", "orthogonal",
})
#: What a module call runs, which a store replaces (``m.lin.forward = f``, ``type(m).forward =
#: f``, ``m.lin.__class__ = Keeping``).
_CALLED = frozenset({"forward", "__call__", "__class__", "_call_impl", "_wrapped_call_impl"})
_CODE_REGISTERING_MODULES = (
    "torch.nn.utils.spectral_norm", "torch.nn.utils.weight_norm", "torch.nn.utils.parametriz",
    "torch.nn.utils.prune.",
)
