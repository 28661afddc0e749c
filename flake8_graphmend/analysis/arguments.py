"""What the parameters of a compiled helper receive: tensor-ness through calls in one module.

A helper's bare parameter says nothing about its type (``def pad(x, n)``), so the value analysis
does not take it for a tensor. When every call of the helper in compiled code of the module
passes a tensor for it (``pad(h, lengths.max())``, ``self.get_reference_points(shapes, ...)``
with ``shapes = torch.as_tensor(...)``, a submodule's ``self.rotary(x, seq_len=pos[-1] + 1)``),
Dynamo traces the helper with a tensor there, and the parameter is one. Kinds flow down call
chains (a forward passes its tensor to a helper, which passes it on), to a fixpoint.

A kind is inferred only when all the calls agree: a parameter that one call gives an int and
another a tensor stays unknown. Calls that agree on a Python value (``STATIC``) overrule only an
annotation that says Tensor (``output_attentions: Optional[torch.Tensor] = None`` passed a bool);
see ``ValueAnalysis._parameter_kind``.
"""

from __future__ import annotations

import ast
from typing import Callable, Dict, List, Optional

from .regions import Region, RegionFinder
from .symbols import FunctionNode
from .values import Kind, ValueAnalysis, parameter_defaults

#: Rounds of propagation down call chains (a forward, a submodule's forward, its helper, ...).
_ROUNDS = 4
#: The kinds that calls can agree on.
_AGREED = (Kind.TENSOR, Kind.STATIC)

ArgumentKinds = Dict[FunctionNode, Dict[str, Kind]]


def argument_kinds(
    finder: RegionFinder,
    regions: Dict[FunctionNode, Region],
    analysis: Callable[[FunctionNode, Dict[str, Kind]], ValueAnalysis],
) -> ArgumentKinds:
    """The parameters of ``regions`` that every call from compiled code passes a tensor, or
    every call a Python value known while tracing, by function; ``analysis(function, kinds)``
    builds a function's value analysis."""
    calls = {
        caller: finder.call_targets(caller)
        for caller, region in regions.items()
        if region.compiled
    }
    if not any(calls.values()):
        return {}
    known: ArgumentKinds = {}
    for _ in range(_ROUNDS):
        passed: Dict[FunctionNode, Dict[str, List[Kind]]] = {}
        for caller, targets in calls.items():
            if not targets:
                continue
            values = analysis(caller, known.get(caller, {}))
            for call, callee, skipped in targets:
                if callee in regions:
                    _record(call, callee, skipped, values, passed.setdefault(callee, {}))
        inferred: ArgumentKinds = {}
        for callee, kinds in passed.items():
            agreed = {
                name: seen[0]
                for name, seen in kinds.items()
                if seen[0] in _AGREED and all(kind is seen[0] for kind in seen)
            }
            if agreed:
                inferred[callee] = agreed
        if inferred == known:
            break
        known = inferred
    return known


def _record(
    call: ast.Call,
    callee: FunctionNode,
    skipped: int,
    values: ValueAnalysis,
    passed: Dict[str, List[Kind]],
) -> None:
    """Add what ``call`` passes to each parameter of ``callee`` (after the ``skipped`` bound
    ones) to ``passed``; a parameter it leaves to its default gets the default's kind, one it
    may fill through ``*args``/``**kwargs`` gets UNKNOWN."""
    arguments = callee.args
    positional = [*arguments.posonlyargs, *arguments.args][skipped:]
    given: Dict[str, Optional[ast.expr]] = {}
    for index, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            for rest in positional[index:]:
                given.setdefault(rest.arg, None)
            break
        if index < len(positional):
            given[positional[index].arg] = arg
    for keyword in call.keywords:
        if keyword.arg is None:  # ``**kwargs``: any parameter may come from it
            for parameter in [*positional, *arguments.kwonlyargs]:
                given.setdefault(parameter.arg, None)
        else:
            given[keyword.arg] = keyword.value
    defaults = parameter_defaults(arguments)
    for parameter in [*positional, *arguments.kwonlyargs]:
        name = parameter.arg
        if name in given:
            value = given[name]
            kind = values.value_kind(value) if value is not None else Kind.UNKNOWN
        elif name in defaults:
            kind = values.kind(defaults[name])
        else:
            kind = Kind.UNKNOWN
        passed.setdefault(name, []).append(kind)
