"""Where a function mutates values in place (which decides whether a rewrite may copy or defer)."""

from __future__ import annotations

import ast
from typing import Dict, Iterator, List, Set, Tuple

from .index import FunctionFacts, assignment_targets, parameter_names, walk
from .inplace import updated_arguments
from .purity import fresh_torch_call
from .symbols import ModuleSymbols
from .values import Kind, ValueAnalysis


def _torch_function(func: ast.expr, symbols: ModuleSymbols) -> bool:
    qualified = symbols.qualified_name(func) or ""
    return qualified.startswith("torch.") and isinstance(func, ast.Attribute)


def _root_name(node: ast.expr) -> str:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def _tensor_like(node: ast.expr, values: ValueAnalysis) -> bool:
    """A tensor, or a local of unknown kind (not ``self``, whose attributes are other objects)."""
    kind = values.kind(node)
    if kind is Kind.UNKNOWN:
        return isinstance(node, ast.Name) and node.id != "self"
    return kind is Kind.TENSOR


def storage_root(node: ast.expr, values: ValueAnalysis, symbols: ModuleSymbols) -> str:
    """The name whose storage ``node`` may share, or "".

    ``y`` for ``y``, ``y[0]``, any attribute or method of a tensor ``y`` (``y.T`` and
    ``y.view(-1)`` are views, ``y.float()`` may be ``y`` itself) and any torch function of ``y``
    (``torch.flatten(y)``) but those that always make a new tensor (``F.mse_loss(y, t)``,
    ``FRESH_OPERATIONS``); ``buf`` for ``torch.mul(y, 2, out=buf)``.
    """
    while True:
        if isinstance(node, ast.Call) and _torch_function(node.func, symbols):
            out = next((k.value for k in node.keywords if k.arg == "out"), None)
            if out is not None:  # `torch.mul(q, 2, out=buf)` returns `buf`
                node = out
                continue
            qualified = symbols.qualified_name(node.func) or ""
            if not node.args or fresh_torch_call(node, qualified):
                return ""
            node = node.args[0]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if not _tensor_like(node.func.value, values):
                return ""
            node = node.func.value
        elif isinstance(node, ast.Attribute):
            if not _tensor_like(node.value, values):
                return ""
            node = node.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            return node.id if isinstance(node, ast.Name) else ""


def _aliases(
    facts: FunctionFacts, values: ValueAnalysis, symbols: ModuleSymbols
) -> Iterator[Tuple[str, str]]:
    """Pairs of names that may share storage: ``z = y``, ``z = y[0]``, ``for row in y``,
    ``z = same(y)`` (a function of this file that returns a parameter), ..."""
    for node in facts.bindings:
        if isinstance(node, ast.Assign):
            pairs = [(target, node.value) for target in node.targets]
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            pairs = [(node.target, node.value)]
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            pairs = [(node.target, node.iter)]
        else:
            continue
        while pairs:
            target, value = pairs.pop()
            if isinstance(target, (ast.Tuple, ast.List)):
                if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                    pairs += zip(target.elts, value.elts)
                else:
                    pairs += [(element, value) for element in target.elts]
            elif isinstance(target, ast.Starred):
                pairs.append((target.value, value))
            elif isinstance(target, ast.Name) and isinstance(value, ast.Call) and (
                _returns_an_argument(value, symbols)
            ):
                pairs += [(target, argument) for argument in value.args]  # `g = same(h)`
            elif isinstance(target, ast.Name) and (
                isinstance(value, ast.Name) or values.kind(value) in (Kind.TENSOR, Kind.UNKNOWN)
            ):  # `n = x.dim()` binds a new Python value
                root = storage_root(value, values, symbols)
                if root and root != target.id:
                    yield target.id, root


def _returns_an_argument(value: ast.Call, symbols: ModuleSymbols) -> bool:
    """A call of a function of this file that may return one of its parameters."""
    if not isinstance(value.func, ast.Name):
        return False
    function = symbols.functions.get(value.func.id)
    if function is None:
        return False
    parameters = parameter_names(function)
    return any(
        isinstance(node, ast.Return) and node.value is not None
        and _root_name(node.value) in parameters
        for node in walk(function)
    )


def in_place_mutations(
    facts: FunctionFacts, values: ValueAnalysis, symbols: ModuleSymbols
) -> Dict[str, List[int]]:
    """Names mutated in place, with the lines where it happens.

    Counts in-place tensor methods (``x.add_(1)``, ``x.copy_(y)``) and torch functions
    (``torch.relu_(x)``), stores into items or attributes (``x[0] = 1``, ``x.data = y``) and
    augmented assignments (``x += 1``, which is in place for tensors). A mutation counts for
    every name that may share the mutated storage (``z = y`` then ``z.add_(1)`` mutates ``y``).
    """
    direct = _direct_mutations(facts, values, symbols)
    parent: Dict[str, str] = {name: name for name in direct}

    def find(name: str) -> str:
        while parent.setdefault(name, name) != name:
            name = parent[name]
        return name

    for first, second in _aliases(facts, values, symbols):
        parent[find(first)] = find(second)
    lines_of_group: Dict[str, List[int]] = {}
    for name, lines in direct.items():
        lines_of_group.setdefault(find(name), []).extend(lines)
    return {
        name: sorted(lines_of_group[find(name)])
        for name in list(parent)
        if find(name) in lines_of_group
    }


def _direct_mutations(
    facts: FunctionFacts, values: ValueAnalysis, symbols: ModuleSymbols
) -> Dict[str, List[int]]:
    """``in_place_mutations`` of the mutated names themselves, before aliases are followed;
    an update of an element of a container display (``hs = [h]`` then ``hs[0].add_(1)``)
    counts for the names it holds."""
    direct: Dict[str, List[int]] = {}
    elements = _displayed_elements(facts)

    def note(node: ast.expr, line: int, element: bool = False) -> None:
        # `self.cache[0] = 1` changes `self` (as does any store into an attribute chain)
        name = storage_root(node, values, symbols) or _root_name(node)
        if name:
            direct.setdefault(name, []).append(line)
        if element or isinstance(node, ast.Subscript):
            for held in elements.get(_root_name(node), ()):
                direct.setdefault(held, []).append(line)

    for call in facts.calls:
        for updated, element in _call_updates(call, symbols):
            note(updated, call.lineno, element)
    for node in facts.bindings:
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for target in assignment_targets(node):
                if isinstance(target, (ast.Subscript, ast.Attribute)):
                    # `hs[0] += 1` updates the element in place before storing it back
                    note(target.value, node.lineno, isinstance(node, ast.AugAssign))
                elif isinstance(node, ast.AugAssign) and isinstance(target, ast.Name):
                    note(target, node.lineno)
    return direct


def _call_updates(call: ast.Call, symbols: ModuleSymbols) -> Iterator[Tuple[ast.expr, bool]]:
    """What ``call`` updates in place (``x.add_(1)``, ``torch.add_(x, 1)``, the tensors of
    ``torch._foreach_mul_([g], 0.9)``), each with whether it may be an element of a display
    (the names that display holds are updated too)."""
    for updated in updated_arguments(call):
        yield updated, True
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr.endswith("_"):
        if func.attr.startswith("_"):
            return
        if not _torch_function(func, symbols):
            yield func.value, False
        elif call.args:
            yield call.args[0], False


def _displayed_elements(facts: FunctionFacts) -> Dict[str, Set[str]]:
    """The names each local bound to a tuple, list or set display holds (``hs = [h, g]``)."""
    held: Dict[str, Set[str]] = {}
    for node in facts.bindings:
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Tuple, ast.List, ast.Set)):
            names = {_root_name(e) for e in node.value.elts} - {""}
            for target in node.targets:
                if isinstance(target, ast.Name):
                    held.setdefault(target.id, set()).update(names)
    return held
