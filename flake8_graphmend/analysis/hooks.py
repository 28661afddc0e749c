"""Code a file gives modules to run: hooks, parametrizations, patches of torch's classes.

Where a file registers ``self.lin.register_forward_hook(keep)`` or ``spectral_norm(self.lin)``,
calling a module or reading its weight runs code the analysis does not see at the call: a hook
may keep the output or replace it, a parametrization recomputes the weight (and may update its
own buffers) on every read.
"""

from __future__ import annotations

import ast
from typing import Optional

from .index import node_memo, root_name, walk
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
    .prune``); or a patch of an imported class or module (``nn.Linear.forward = counted``,
    ``setattr(nn.Linear, ...)``). A call of any submodule may then run code that changes
    state."""
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
        elif isinstance(node, ast.Attribute) and (
            _registers_hook(node.attr)  # `hook = m.register_forward_pre_hook`, then `hook(f)`
            or node.attr.endswith("_hooks")
            or not isinstance(node.ctx, ast.Load) and root_name(node) in imports.imports
        ):
            return node
        elif isinstance(node, ast.Name) and _registers_hook(
            (imports.qualified_name(node) or node.id).rsplit(".", 1)[-1]
        ):
            return node
    return None


def _registers_hook(name: str) -> bool:
    return name.startswith("register_") and name.endswith("hook")


#: Calls that make a module run code of its caller's choice (the hooks apart), by name, and
#: the torch modules whose functions do (``torch.nn.utils.spectral_norm`` and the like).
_REGISTERS_CODE = frozenset({
    "register_parametrization", "spectral_norm", "weight_norm", "orthogonal",
})
_CODE_REGISTERING_MODULES = (
    "torch.nn.utils.spectral_norm", "torch.nn.utils.weight_norm", "torch.nn.utils.parametriz",
    "torch.nn.utils.prune.",
)
