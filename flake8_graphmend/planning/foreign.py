"""Code the analysis cannot read: which of it is known to change no state a caller sees.

The analysis reads the file it rewrites. What another module defines (a function or class of
the user's package, a method inherited from a base of another file, a module or object built
by one) it cannot read: a call of it may bump a counter, fill a cache or update a buffer in
place, which a check failing inside the graph would lose. Such a call counts as changing
nothing only where its library is known to change nothing of the caller's: torch and Python's
builtins and pure standard modules (their updates in place of tensors, ``setattr``, iterator
steps and torch's process-wide setters are weighed apart), numpy but ``numpy.random``, einops,
transformers' activations, the probes of the tracing state that Dynamo folds to constants
(``is_torchdynamo_compiling()``), and transformers' and diffusers' availability probes
(``is_torch_xla_available()``). A name imported relatively (``from .layers import Block``) is
of the user's own package, and not known. So is a method that no tensor and no builtin type
has, of an object whose class the analysis does not find in the file (``self.tracker.record``
of a tracker handed to ``__init__``, ``cache.store`` of an argument), and a function of another
module handed to what calls it (``map(helpers.f, xs)``).
"""

from __future__ import annotations

import ast
import builtins
from typing import Optional

from ..analysis.index import root_name, walk
from ..analysis.inplace import OPERATOR_UPDATES, short_name
from ..analysis.symbols import (
    ClassInfo, FunctionNode, ModuleSymbols, is_own_class, is_self, is_super_call,
)
from ..analysis.tensor_methods import TENSOR_METHODS
from ..analysis.values import DYNAMO_PROBES, FX_PROXY_TESTS, Kind, ValueAnalysis
from .submodules import binds_locally, with_bases

#: Modules (and their submodules) whose functions and classes change no state that outlives
#: a call: torch, Python's pure standard modules, numpy, einops, transformers' activations.
_PURE_LIBRARIES = frozenset({
    "torch", "math", "cmath", "operator", "numbers", "typing", "typing_extensions", "einops",
    "numpy", "functools", "itertools", "collections", "dataclasses", "copy", "enum", "abc",
    "warnings", "logging", "inspect", "re", "string", "textwrap", "builtins", "contextlib",
    "time", "os.path", "transformers.activations",
})
#: Of those, the modules whose callable objects (a module ``ACT2FN[name]`` builds) are known to
#: change nothing when called; others make objects that run what they are given
#: (``functools.partial(note)``).
_PURE_OBJECT_MAKERS = ("transformers.activations",)
#: Modules whose ``is_<library>_available()`` functions only read the environment (cached):
#: transformers' and diffusers' availability probes.
_PROBING_MODULES = frozenset({
    "transformers.utils", "transformers.utils.import_utils", "diffusers.utils",
    "diffusers.utils.import_utils",
})
#: Parts of those that keep state of their own (a random generator's).
_STATEFUL_PARTS = ("numpy.random",)
#: Builtins that change nothing a caller holds; ``setattr``, ``delattr`` and ``next`` are
#: weighed where they are made (what they change may be the caller's own), others (``exec``,
#: ``open``, ``globals``) count as changing state.
_PURE_BUILTINS = frozenset({
    "abs", "all", "any", "ascii", "bin", "bool", "bytes", "callable", "chr", "complex", "dict",
    "dir", "divmod", "enumerate", "filter", "float", "format", "frozenset", "getattr",
    "hasattr", "hash", "hex", "id", "int", "isinstance", "issubclass", "iter", "len", "list",
    "map", "max", "min", "object", "oct", "ord", "pow", "print", "range", "repr", "reversed",
    "round", "set", "slice", "sorted", "str", "sum", "super", "tuple", "type", "zip",
    "setattr", "delattr", "next",
})
#: The methods of Python's builtin types (those that update a container are weighed apart).
_BUILTIN_METHODS = frozenset(
    name
    for kind in (str, bytes, int, float, complex, tuple, list, dict, set, frozenset, range, slice)
    for name in dir(kind)
    if not name.startswith("_")
)
#: The builtin exceptions (``ValueError``), which building changes nothing.
BUILTIN_EXCEPTIONS = frozenset(
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
)


def pure_library(qualified: str) -> bool:
    """Whether ``qualified`` (``torch.nn.functional.relu``, ``math.sqrt``) names what a library
    known to change no caller's state defines, or an availability probe."""
    parts = qualified.split(".")
    modules = {".".join(parts[:length]) for length in range(1, len(parts) + 1)}
    if parts[-1].startswith("is_") and parts[-1].endswith("_available"):
        return bool(modules & _PROBING_MODULES)
    return not qualified.startswith(_STATEFUL_PARTS) and bool(modules & _PURE_LIBRARIES)


def known_callable(qualified: str) -> bool:
    """Whether calling what ``qualified`` (a maker another module defines) makes is known to
    change nothing: transformers' activations (``ACT2FN[name]``), not ``functools.partial``."""
    return qualified.startswith(_PURE_OBJECT_MAKERS) and pure_library(qualified)


def foreign_callee(
    call: ast.Call, function: FunctionNode, owner: Optional[ClassInfo], symbols: ModuleSymbols
) -> Optional[str]:
    """The callee of ``call`` (made in ``function``, a method of ``owner``) that another module
    defines and that is not known to change nothing: a function or class imported from
    another module than those of ``pure_library`` (``normalize(x)``, ``mylib.bump()``), a
    method of a module-level object built by one (``TRACKER.record(x)``), a method that
    ``self``, ``super()`` or ``type(self)`` inherits from a base of another module. None for
    what the analysis follows (the file's functions, classes and methods), for builtins, the
    libraries above and loggers."""
    func = call.func
    called = short_name(call)
    if called in DYNAMO_PROBES or called in FX_PROXY_TESTS:
        return None  # `is_torchdynamo_compiling()`: Dynamo folds it to a constant
    if isinstance(func, ast.Name):
        return None if binds_locally(function, func.id) else _named_callee(func.id, symbols)
    if owner is not None and inherited_from_another_file(func, owner, symbols):
        return ast.unparse(func)
    root = root_name(func)
    if not root or root in ("self", "super") or binds_locally(function, root):
        return None
    if root in symbols.imports:
        qualified = symbols.qualified_name(func) or symbols.imports[root]
        return None if pure_library(qualified) and not _bound_elsewhere(root, symbols) else (
            qualified
        )
    made = symbols.assignments.get(root)
    if isinstance(made, ast.Call) and not _known_maker(made.func, symbols):
        return ast.unparse(func)  # `TRACKER.record(x)` of `TRACKER = Tracker()`
    return None


def unknown_held_method(call: ast.Call, function: FunctionNode, symbols: ModuleSymbols) -> (
    Optional[str]
):
    """``self.tracker.record(x)``, ``Model.tracker.record(x)``, ``TRACKERS[0].record(x)``,
    ``HOOKS["note"](x)``: a callee held by ``self``, a class or the module, not made by a call
    of a known maker, where ``call_changes_state`` found no class of this file that it is of,
    and that is no method of tensors or builtin types; it may change state."""
    func = call.func
    root = root_name(func)
    if isinstance(func, ast.Name) or isinstance(func, ast.Attribute) and known_method(func.attr):
        return None
    if root and (root == "super" or root != "self" and binds_locally(function, root)):
        return None  # `super().m` of a base of this file or torch's; a local's: `unknown_method`
    made = symbols.assignments.get(root)
    own = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
    if root in symbols.imports or own and isinstance(made, ast.Call) and _known_maker(
        made.func, symbols
    ):
        return None  # weighed by `foreign_callee`; a logger's, a method of a class of this file
    return ast.unparse(func)


#: Functions that call a function they are handed (matched by the called name's last part).
CALLING = frozenset({
    "map", "filter", "sorted", "min", "max", "reduce", "partial", "starmap", "filterfalse",
    "takewhile", "dropwhile", "accumulate", "groupby", "iter", "apply",
})


def handed_callee(call: ast.Call, function: FunctionNode, symbols: ModuleSymbols) -> (
    Optional[str]
):
    """A function of another module that ``call`` hands to what calls it (``map(helpers.f,
    xs)``, ``sorted(xs, key=helpers.key)``), not known to change nothing."""
    if short_name(call) not in CALLING:
        return None
    for value in [*call.args, *(k.value for k in call.keywords)]:
        if not isinstance(value, (ast.Name, ast.Attribute)):
            continue
        if _updating_callable(value, symbols):  # `map(operator.iadd, ...)`, `map(setattr, ...)`
            return ast.unparse(value)
        root = root_name(value)
        if not root or binds_locally(function, root) or root not in symbols.imports:
            continue
        qualified = symbols.qualified_name(value) or symbols.imports[root]
        if not pure_library(qualified):
            return qualified
    return None


def _updating_callable(value: ast.expr, symbols: ModuleSymbols) -> bool:
    """A callable that changes what it is handed: ``setattr``/``delattr``, an in-place
    function of ``operator`` (``operator.iadd``, ``operator.setitem``), a method that updates
    in place (``torch.Tensor.add_``)."""
    if isinstance(value, ast.Name) and value.id in ("setattr", "delattr"):
        return value.id not in symbols.defined_here()
    qualified = symbols.qualified_name(value) or ""
    return (
        qualified.startswith("operator.") and qualified.rsplit(".", 1)[-1] in OPERATOR_UPDATES
        or isinstance(value, ast.Attribute) and value.attr.endswith("_")
        and not value.attr.startswith("_")
    )


def known_method(name: str) -> bool:
    """Whether ``name`` is a method of tensors or of a builtin type (whose updates, in place or
    of a container, are weighed apart)."""
    return name in TENSOR_METHODS or name in _BUILTIN_METHODS or name.endswith("_")


def inherited_from_another_file(func: ast.expr, owner: ClassInfo, symbols: ModuleSymbols) -> bool:
    """Whether ``func`` is ``self.m``, ``type(self).m`` or ``super().m`` for an ``m`` that no
    class of this file among ``owner``'s bases (for ``super()``, past ``owner`` itself)
    defines, where one of them derives from a class that another module defines and no pure
    library does (``PreTrainedModel``; not ``nn.Module``)."""
    if not isinstance(func, ast.Attribute):
        return False
    through = func.value
    classes = with_bases(owner, symbols)
    if is_super_call(through):
        searched = classes[1:]
    elif is_self(through) or is_own_class(through):
        searched = classes
    else:
        return False
    if any(func.attr in cls.methods for cls in searched):
        return False
    return any(
        not (isinstance(base, ast.Name) and base.id in symbols.classes)
        and not pure_library(symbols.qualified_name(base) or "")
        for cls in classes
        for base in cls.node.bases
    )


def aliased_function(func: ast.expr, symbols: ModuleSymbols) -> Optional[FunctionNode]:
    """The function of this file that ``func``, a name the module binds once, and only to
    it, stands for (``gelu = _gelu_tanh``)."""
    if not isinstance(func, ast.Name):
        return None
    value = symbols.assignments.get(func.id)
    if not (isinstance(value, ast.Name) and value.id in symbols.functions):
        return None
    bindings = sum(
        isinstance(node, ast.Name) and node.id == func.id and not isinstance(node.ctx, ast.Load)
        or isinstance(node, (ast.Global, ast.Nonlocal)) and func.id in node.names
        for node in walk(symbols.tree)
    )
    return symbols.functions[value.id] if bindings == 1 else None


def _named_callee(name: str, symbols: ModuleSymbols) -> Optional[str]:
    if _bound_elsewhere(name, symbols):
        return name  # `from .utils import *`, `try: from a import f` / `except: from b ...`
    if name in symbols.imports:
        return None if pure_library(symbols.imports[name]) else symbols.imports[name]
    if name in symbols.functions or name in symbols.classes:
        return None  # followed where it is called
    if aliased_function(ast.Name(id=name), symbols) is not None:
        return None  # `gelu = _gelu_tanh`: followed where it is called
    value = symbols.assignments.get(name)
    if value is not None:
        qualified = symbols.qualified_name(value) if isinstance(value, ast.Attribute) else None
        return None if qualified is not None and pure_library(qualified) else name
    return None if name in _PURE_BUILTINS or name in BUILTIN_EXCEPTIONS else name


def _bound_elsewhere(name: str, symbols: ModuleSymbols) -> bool:
    """Whether the module may bind ``name``, imported or a builtin, to something else than the
    library it names: imported from two places (a ``try``/``except`` import), also assigned or
    defined, or any name after a ``from <module> import *`` of a module not known pure."""
    if any(not pure_library(module) for module in symbols.star_imports):
        return True
    if name not in symbols.imports:
        return False
    return len(symbols.import_sources.get(name, ())) > 1 or any(
        name in bound for bound in (symbols.assignments, symbols.functions, symbols.classes)
    )


def _known_maker(func: ast.expr, symbols: ModuleSymbols) -> bool:
    """Whether objects made by calling ``func`` are known: a class of this file (followed),
    what a pure library makes, transformers' logger (``logging.get_logger(__name__)``, whose
    calls [Defer] makes in order)."""
    if isinstance(func, ast.Name) and func.id in symbols.classes:
        return True
    qualified = symbols.qualified_name(func) or ""
    return pure_library(qualified) or qualified == "transformers.utils.logging.get_logger"


def unknown_method(call: ast.Call, function: FunctionNode, values: ValueAnalysis) -> Optional[str]:
    """``cache.store(x)``, where ``function`` was handed ``cache`` or made it, and ``store`` is
    a method of no tensor and no builtin type: an object whose class the analysis does not
    know, so the method may change state (the object may be held elsewhere). None for
    methods of tensors and Python values (updates in place are weighed apart), of ``self``
    and of what the module names."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    root = root_name(func.value)
    if root in ("", "self") or not binds_locally(function, root):
        return None
    if func.attr in TENSOR_METHODS or func.attr in _BUILTIN_METHODS or func.attr.endswith("_"):
        return None
    if values.kind(func.value) in (Kind.TENSOR, Kind.STATIC):
        return None
    return ast.unparse(func)
