"""[Defer]: print, logger and warnings.warn calls go through a helper that runs in the graph.

Applies the ``DeferPlan`` of ``flake8_graphmend/planning/defer.py``.
"""

from __future__ import annotations

import re
from typing import List

import libcst as cst

from flake8_graphmend.planning.defer import DeferPlan

from .base import GraphMendCommand, rewrites_call
from .helpers import DEFERRED_WRAPPER_FRAMES, PREFIX

#: Callees whose first positional argument is the message.
_MESSAGE_FIRST = re.compile(
    r"(^|\.)(warn|debug|info|warning|warning_once|warning_advice|info_once|error|critical|fatal)$"
)


class DeferSideEffects(GraphMendCommand):
    """Defer print, logging and warnings.warn calls in compiled code until after the graph runs.

    Each call becomes a call of a module-level helper that, under torch.compile, runs as an
    ordered custom op inside the graph: at the same point, in every frame Dynamo inlines, with
    the tensors as they are at the call. Arguments written in the source (messages, the
    category of warnings.warn, keywords) are built into the helper; only tensors are passed.
    `stacklevel` is raised past the helper's frames, so that eager records and warnings keep
    the caller's location.
    """

    DESCRIPTION = __doc__.splitlines()[0]


@rewrites_call(DeferPlan)
def rewrite_call(command: GraphMendCommand, call: cst.Call, plan: DeferPlan) -> cst.Call:
    """The call of the helper, which makes ``call`` with the baked arguments built in."""
    positional = [arg for arg in call.args if arg.keyword is None]
    keywords = [arg for arg in call.args if arg.keyword is not None]
    parameters: List[str] = []
    inner: List[str] = []
    for index, arg in enumerate(positional):
        if index in plan.baked_args:
            inner.append(command.code(arg.value))
        else:
            parameters.append(_parameter_name(plan.callee, index))
            inner.append(parameters[-1])
    for arg in keywords:
        name = arg.keyword.value if arg.keyword else ""
        if plan.stacklevel is None or name != "stacklevel":
            inner.append(f"{name}={command.code(arg.value)}")
    if plan.stacklevel is not None:  # the plan counts the helper's frame; add its wrapper's
        inner.append(f"stacklevel={plan.stacklevel + DEFERRED_WRAPPER_FRAMES}")
    name = command.deferred_helper(
        PREFIX + plan.callee.replace(".", "_"), parameters, plan.callee, inner
    )
    kept = [
        arg.with_changes(value=_str_of(arg.value)) if index in plan.str_args else arg
        for index, arg in enumerate(positional)
        if index not in plan.baked_args
    ]
    if not kept:
        return call.with_changes(
            func=cst.Name(name), args=[], whitespace_before_args=cst.SimpleWhitespace("")
        )
    last = call.args[-1]  # the end of the argument list keeps its formatting
    kept[-1] = kept[-1].with_changes(
        comma=last.comma, whitespace_after_arg=last.whitespace_after_arg
    )
    return call.with_changes(func=cst.Name(name), args=kept)


def _str_of(value: cst.BaseExpression) -> cst.Call:
    """``str(value)``: what print writes for a value the deferred call cannot carry."""
    return cst.Call(func=cst.Name("str"), args=[cst.Arg(value=value)])


def _parameter_name(callee: str, index: int) -> str:
    return "message" if index == 0 and _MESSAGE_FIRST.search(callee) else f"arg{index}"
