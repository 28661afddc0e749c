"""``dtypes.proven_before``: what the code before an ``if`` proved of the dtypes of its names,
where it ran on every path to the ``if`` and the name was not bound again."""

from __future__ import annotations

import ast
from textwrap import dedent, indent

import pytest

from flake8_graphmend.analysis.dtypes import (
    INEXACT, REAL, RUN_INEXACT, names_surely_read, proven_before,
)
from flake8_graphmend.analysis.symbols import ModuleSymbols

#: name -> (the body of ``f(x, flag)`` before and around ``if x.sum() > 0:``, proved of ``x``).
#: ``std`` checks the dtype only when the graph runs (``RUN_INEXACT``), ``mean`` while Dynamo
#: traces too.
BODIES = {
    # what only `std` proves holds only where the `if`'s test reads it: a value nothing reads
    # is dropped from the graph, and its failure with it (sweep 38)
    "a std before it, unread": ("s = x.std()\n{if}", set()),
    "a std before it that the test reads": ("s = x.std()\nif s > 0:\n    y = x.mean()",
                                            {RUN_INEXACT}),
    "a mean before it": ("m = x.mean()\n{if}", {INEXACT}),
    "a std bound again after": ("s = x.std()\nx = x.long()\n{if}", set()),
    "a std in an expression statement": ("print(x.std())\n{if}", set()),
    "a mean compared in an enclosing if": ("if x.mean() > 0:\n{if_}", {INEXACT, REAL}),
    "a std in the else of an enclosing if": ("if flag:\n    pass\nelse:\n    s = x.std()\n{if}",
                                             set()),
    "a std under a Python condition": ("if flag:\n    s = x.std()\n{if}", set()),
    "a std after `or`": ("ok = flag or x.std() > 0\n{if}", set()),
    "a std before `and`": ("ok = x.std() > 0 and flag\nif ok:\n    y = x.mean()",
                           {RUN_INEXACT}),
    "a std after a chained comparison's first": ("ok = 0 < flag < x.std()\n{if}", set()),
    "a std in a chained comparison's first": (
        "ok = x.std() < flag < 1\nif ok:\n    y = x.mean()", {RUN_INEXACT}
    ),
    "a std after a chained comparison's first, not ordering": (
        "ok = flag == 0 < x.std()\n{if}", set()
    ),
    "a mean of a max with another tensor (it promotes)": ("m = x.max(flag).mean()\n{if}", set()),
    "a mean of a max over a dim": ("m = x.max(-1).values\nn = x.amax(0).mean()\n{if}",
                                   {INEXACT}),
    "a std in a local's annotation": ("s: x.std() = 1.0\n{if}", set()),
    "a std of a view to a dtype": ("s = x.view(torch.float32).std()\n{if}", set()),
    "a std of a view to a shape": ("s = x.view(-1).std()\nif s > 0:\n    y = x.mean()",
                                   {RUN_INEXACT}),
    "a softmax given a dtype by position": ("p = x.softmax(-1, torch.float32)\n{if}", set()),
    "a std before an if whose test binds it": (
        "s = x.std()\nif (x := x.long()).sum() > 5:\n{if_}", set()
    ),
    "a std before a with that binds it": ("s = x.std()\nwith flag as x:\n{if_}", set()),
    "a std in a conditional expression": ("s = x.std() if flag else 0\n{if}", set()),
    "a std in a lambda": ("f = lambda: x.std()\n{if}", set()),
    "a std in an assert (python -O)": ("assert x.std() > 0\n{if}", set()),
    "a std before a loop that binds it": (
        "s = x.std()\nfor _ in range(2):\n{if_}\n    x = flag", set()
    ),
    "a mean before a loop that does not": (
        "m = x.mean()\nfor _ in range(2):\n{if_}\n    y = flag", {INEXACT}
    ),
    "a std in an enclosing test": ("if x.std() > 0:\n{if_}", {RUN_INEXACT}),
    # a value read only for its metadata need not be computed by the graph (sweep 41)
    "a std an enclosing test reads for its metadata only": (
        "if x.std().dim() == 0:\n{if_}", set()
    ),
    "a mean an enclosing test reads for its metadata only": (
        "if x.mean().numel() > 0:\n{if_}", {INEXACT}  # checked while Dynamo traces
    ),
    "a std in a try, the if in its handler": (
        "try:\n    s = x.std()\nexcept RuntimeError:\n{if_}", set()
    ),
    "a std before a try that binds it, the if in its handler": (
        "s = x.std()\ntry:\n    x = x.long()\nexcept RuntimeError:\n{if_}", set()
    ),
    "a std before a try* that binds it, the if in its handler": (
        "s = x.std()\ntry:\n    x = x.long()\nexcept* RuntimeError:\n{if_}", set()
    ),
    "a std before a match that binds it in its pattern": (
        "s = x.std()\nmatch flag:\n    case [x]:\n{if_case}", set()
    ),
    "a std of a global": ("global x\ns = x.std()\n{if}", set()),
    "a std in a nested function": ("def g():\n    s = x.std()\n{if}", set()),
}
IF = "if x.sum() > 0:\n    y = x.mean()"


@pytest.mark.parametrize("name", BODIES)
def test_what_code_before_an_if_proves(name: str) -> None:
    body, expected = BODIES[name]
    text = body.format(
        **{"if": IF, "if_": indent(IF, "    "), "if_case": indent(IF, "        ")}
    )
    source = "def f(x, flag):\n" + indent(dedent(text), "    ") + "\n"
    tree = ast.parse(source)
    function = tree.body[0]
    tested = next(  # the `if` whose body computes `x.mean()`
        node for node in ast.walk(function)
        if isinstance(node, ast.If) and ast.unparse(node.body[0]) == "y = x.mean()"
    )
    read = {node.id for node in ast.walk(tested.test) if isinstance(node, ast.Name)}
    proven = proven_before(tested, function, ModuleSymbols.collect(tree), read)
    assert proven.get("x", frozenset()) == expected


@pytest.mark.parametrize(
    ("test", "read"),
    [
        ("s > 1.5", {"s"}),
        ("(s > 1.5 if flag else x.sum() > 0)", {"flag"}),  # an arm may not run
        ("flag and s > 1.5", {"flag"}),
        ("0 < s < t", {"s"}),
        ("any(v > s for v in values)", {"any"}),  # not what the generator reads
        ("f(s, t=u)", {"f", "s", "u"}),
        ("s.numel() > 2", set()),  # its metadata only
        ("len(s) > t", {"t"}),
        ("torch.zeros_like(s).sum() > 0", set()),
    ],
)
def test_names_a_test_surely_reads(test: str, read: set) -> None:
    """What the test of an ``if`` reads on every evaluation: a value read only there stays in
    the graph, with the failure of the operation that computed it."""
    assert names_surely_read(ast.parse(test, mode="eval").body) == read
