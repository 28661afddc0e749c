"""The module-level helpers that fixed code calls, and their insertion into a module.

Each helper is emitted once per module, after the leading imports (or after the helpers an
earlier run emitted), with ``import torch`` added when the module lacks it. A helper is reused
when a module-level function of the same name has exactly the same source; a name that the
module uses for something else is never taken.
"""

from __future__ import annotations

import ast
from typing import Dict, Sequence, Set, Tuple

import libcst as cst

PREFIX = "_graphmend_"

DEFERRED = f"{PREFIX}deferred"
WHERE = f"{PREFIX}where"
CHECK = f"{PREFIX}check"
DIFFER = f"{PREFIX}differ"

#: Frames that ``_graphmend_deferred``'s wrapper (torch.compiler.disable) adds between the
#: caller and the helper: ``stacklevel`` counts them.
DEFERRED_WRAPPER_FRAMES = 1

_DEFERRED_SOURCE = f'''\
def {DEFERRED}(function):
    """Have Dynamo call `function` after the compiled graph (graphmend [Defer]).

    The wrapper is never traced itself, so its arguments may be tensors.
    """
    function = torch.compiler.disable(function)
    deferred = getattr(torch._dynamo.config, "reorderable_logging_functions", None)
    if deferred is not None:  # a torch without this setting keeps the break
        deferred.add(function)
    return function
'''

_WHERE_SOURCE = f'''\
def {WHERE}(condition, if_true, if_false):
    """Select like `if condition:` without a branch on data (graphmend [Where]).

    torch.where is used only where it is exact: a 0-d bool tensor condition,
    two tensors of the same shape, dtype and device, and no autograd recording.
    Otherwise it branches in Python, exactly as the original code did.
    """
    if (
        isinstance(condition, torch.Tensor)
        and condition.dim() == 0
        and condition.dtype == torch.bool
        and isinstance(if_true, torch.Tensor)
        and isinstance(if_false, torch.Tensor)
        and if_true.shape == if_false.shape
        and if_true.dtype == if_false.dtype
        and if_true.device == if_false.device
        and not (
            torch.is_grad_enabled()
            and (if_true.requires_grad or if_false.requires_grad)
        )
    ):
        return torch.where(condition, if_true, if_false)
    return if_true if condition else if_false
'''

_CHECK_SOURCE = f'''\
def {CHECK}(failed, error, message):
    """Raise `error(message)` if `failed`, inside the graph when compiled.

    Eager code raises exactly as the original `if ...: raise` did. Compiled
    code checks in the graph with torch._assert_async, which raises
    RuntimeError(message) instead (graphmend [Trap]).
    """
    if torch.compiler.is_compiling():
        torch._assert_async(torch.logical_not(failed), message)
    elif failed:
        raise error(message)
'''

_DIFFER_SOURCE = f'''\
def {DIFFER}(a, b):
    """`not torch.equal(a, b)` as a 0-d bool tensor (graphmend [Trap]).

    Compiled, the shapes are compared first (`a != b` would broadcast); as in
    torch.equal, values compare after type promotion and NaN differs from NaN.
    """
    if not torch.compiler.is_compiling():
        return torch.tensor(not torch.equal(a, b))
    if a.shape != b.shape:
        return torch.ones((), dtype=torch.bool, device=a.device)
    return (a != b).any()
'''

#: The fixed helpers, in the order they are emitted.
FIXED_HELPERS: Dict[str, str] = {
    DEFERRED: _DEFERRED_SOURCE,
    WHERE: _WHERE_SOURCE,
    CHECK: _CHECK_SOURCE,
    DIFFER: _DIFFER_SOURCE,
}


def deferred_helper_source(name: str, parameters: Sequence[str], call: str) -> str:
    """A registered helper ``name(parameters)`` whose body makes the call ``call``."""
    return f"@{DEFERRED}\ndef {name}({', '.join(parameters)}):\n    {call}\n"


def _bound_names(tree: ast.Module) -> Set[str]:
    """Every name the module binds or reads anywhere (a new helper must not take one)."""
    names: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    return names


def _imports_torch(statement: ast.stmt) -> bool:
    """``import torch`` or ``import torch.x``: both bind the name ``torch``."""
    return isinstance(statement, ast.Import) and any(
        alias.asname is None and alias.name.split(".")[0] == "torch" for alias in statement.names
    )


def _same_code(first: str, second: str) -> bool:
    return ast.dump(ast.parse(first)) == ast.dump(ast.parse(second))


class HelperSet:
    """The helpers one module needs: reuses those already there, names new ones, inserts them."""

    def __init__(self, module: cst.Module, source: str) -> None:
        tree = ast.parse(source)
        self._existing: Dict[str, str] = {
            statement.name.value: module.code_for_node(statement.with_changes(leading_lines=()))
            for statement in module.body
            if isinstance(statement, cst.FunctionDef) and statement.name.value.startswith(PREFIX)
        }
        self._taken = _bound_names(tree) - set(self._existing)
        self._has_torch = any(_imports_torch(statement) for statement in tree.body)
        self._new: Dict[str, str] = {}

    def fixed(self, name: str) -> str:
        """Request one of ``FIXED_HELPERS`` by name; returns the name."""
        if name in self._taken:
            raise HelperNameTaken(name)
        if name not in self._existing:
            self._new.setdefault(name, FIXED_HELPERS[name])
        return name

    def deferred(self, base: str, parameters: Sequence[str], call: str) -> str:
        """The name of a registered helper making ``call``: an identical existing one, or new."""
        self.fixed(DEFERRED)
        for number in range(1, 100):
            name = base if number == 1 else f"{base}_{number}"
            source = deferred_helper_source(name, parameters, call)
            if name in self._taken:
                continue
            known = self._new.get(name, self._existing.get(name))
            if known is None:
                self._new[name] = source
                return name
            if _same_code(known, source):
                return name
        raise HelperNameTaken(base)

    def insert(self, module: cst.Module) -> cst.Module:
        """``module`` with the new helpers (and ``import torch`` if missing) after its imports."""
        if not self._new:
            return module
        order = list(FIXED_HELPERS)  # fixed helpers first, then the deferred ones as requested
        names = sorted(
            self._new, key=lambda name: order.index(name) if name in order else len(order)
        )
        text = "\n\n".join(self._new[name] for name in names)
        if not self._has_torch:
            text = "import torch\n\n\n" + text
        config = module.config_for_parsing
        statements = list(
            cst.parse_module(text.replace("\n", module.default_newline), config=config).body
        )
        position = _insertion_index(module)
        blank = (cst.EmptyLine(), cst.EmptyLine())
        statements = [statement.with_changes(leading_lines=blank) for statement in statements]
        if position == 0 or not self._has_torch:  # it starts the module, or follows an import
            statements[0] = statements[0].with_changes(leading_lines=())
        body = list(module.body)
        if position < len(body):
            following = body[position]
            body[position] = following.with_changes(
                leading_lines=_two_blank_lines_first(following.leading_lines)
            )
        body[position:position] = statements
        return module.with_changes(body=body)


class HelperNameTaken(Exception):
    """The module already uses a helper's name for something else."""

    def __init__(self, name: str) -> None:
        super().__init__(f"the module already uses the name `{name}`")


def _two_blank_lines_first(lines: Sequence[cst.EmptyLine]) -> Tuple[cst.EmptyLine, ...]:
    blank = 0
    while blank < len(lines) and lines[blank].comment is None:
        blank += 1
    return (cst.EmptyLine(),) * max(0, 2 - blank) + tuple(lines)


def _is_docstring(statement: cst.CSTNode) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _insertion_index(module: cst.Module) -> int:
    """After the helpers of an earlier run, else after the last import before any def or class."""
    index = 1 if module.body and _is_docstring(module.body[0]) else 0
    for position, statement in enumerate(module.body):
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            break
        if isinstance(statement, cst.SimpleStatementLine) and any(
            isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
        ):
            index = position + 1
    for position, statement in enumerate(module.body):
        if isinstance(statement, cst.FunctionDef) and statement.name.value.startswith(PREFIX):
            index = max(index, position + 1)
    return index
