"""A fix must not leave a break in a loop the first of its frame (``planning/frames.py``).

Dynamo runs a frame whose first break is in a loop wholly eagerly. Fixing the last break
before such a loop would lose the graph compiled before it (torch 2.13, measured below):
those fixes are declined, or, where the break in the loop is conditional, kept with a caveat.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Dict, Tuple

import pytest

from flake8_graphmend.engine import analyze_source

HEADER = "import torch\nfrom torch import nn\n"
#: An ``.item()`` in a loop: a break no fixer takes.
LOOP_BREAK = """\
        for i in range(2):
            n = int(h.abs().sum().item()) % 3 + 1
            h = h[:n] * 2
        return h
"""


def _model(body: str, loop: str = LOOP_BREAK) -> str:
    return HEADER + "class Model(nn.Module):\n    def forward(self, x):\n" + body + loop


#: name -> (source, {line of a fixable site: "fixed" | "declined" | "cautioned"})
CASES: Dict[str, Tuple[str, Dict[int, str]]] = {
    "the last print before the loop": (
        _model(
            "        h = torch.relu(x) * 3\n"
            '        print("first")\n'  # 6
            "        h = h.sin()\n"
            '        print("second")\n'  # 8
            "        h = h.cos()\n"
        ),
        {6: "fixed", 8: "declined"},
    ),
    "a deferred if before the loop, and its print": (
        _model(
            "        h = torch.relu(x) * 3\n"
            '        print("first")\n'  # 6
            "        if h.sum() > 0:\n"  # 7
            '            print("positive")\n'  # 8
            "        h = h.cos()\n"
        ),
        {6: "fixed", 7: "declined", 8: "declined"},
    ),
    "a log call whose helper takes an .item()": (
        _model(
            "        h = torch.relu(x) * 3\n"
            '        print("mean", h.mean().item())\n'  # 6
            "        h = h.cos()\n"
        ),
        {6: "declined"},
    ),
    "prints fixed in an earlier loop": (
        _model(
            "        h = torch.relu(x) * 3\n"
            '        print("start")\n'  # 6
            "        for i in range(2):\n"
            '            print("step", i)\n'  # 8
            "            h = h * 2\n"
        ),
        {6: "declined", 8: "fixed"},
    ),
    "a break in the loop's else": (
        _model(
            "        h = torch.relu(x) * 3\n"
            '        print("start")\n'  # 6
            "        for i in range(2):\n"
            "            h = h * 2\n"
            "        else:\n"
            "            n = int(h.abs().sum().item()) % 3 + 1\n",
            "        return h[:n]\n",
        ),
        {6: "fixed"},
    ),
    "a break in the loop only in training": (
        _model(
            "        h = torch.relu(x) * 3\n"
            '        print("start")\n'  # 6
            "        h = h.sin()\n",
            "        for i in range(2):\n"
            "            if self.training:\n"
            "                n = int(h.abs().sum().item()) % 3 + 1\n"
            "                h = h[:n]\n"
            "            h = h * 2\n"
            "        return h\n",
        ),
        {6: "cautioned"},
    ),
    "no break left in the loop": (
        _model(
            "        h = torch.relu(x) * 3\n"
            '        print("start")\n',  # 6
            "        for i in range(2):\n"
            '            print("step", i)\n'  # 8
            "            h = h * 2\n"
            "        return h\n",
        ),
        {6: "fixed", 8: "fixed"},
    ),
}


def _outcome(finding) -> str:  # type: ignore[no-untyped-def]
    if finding.fixer is None:
        return "declined"
    return "cautioned" if finding.caveat and "is in a loop" in finding.caveat else "fixed"


@pytest.mark.parametrize("name", CASES)
def test_fixes_before_a_break_in_a_loop(name: str) -> None:
    source, expected = CASES[name]
    findings = analyze_source(source, "model.py")
    got = {f.line: _outcome(f) for f in findings if f.code.startswith(("GM1", "GM2"))}
    assert got == expected, [f.text for f in findings]
    for finding in findings:
        if finding.line in expected and expected[finding.line] == "declined":
            assert "is in a loop" in (finding.decline or ""), finding.text


def test_the_decline_and_the_caveat_name_the_break_in_the_loop() -> None:
    source, _ = CASES["the last print before the loop"]
    (declined,) = [f for f in analyze_source(source, "model.py") if f.line == 8]
    assert "the next break left, line 11 (GM401), is in a loop" in declined.message
    source, _ = CASES["a break in the loop only in training"]
    (cautioned,) = [f for f in analyze_source(source, "model.py") if f.line == 6]
    assert "when `self.training`, the break of line 10 (GM401) is in a loop" in cautioned.message
    assert cautioned.message.count("; fix: graphmend.DeferSideEffects (when") == 1


torch = pytest.importorskip("torch")

from libcst.codemod import CodemodContext, TransformSuccess, transform_module  # noqa: E402
from test_fixers_dynamo import load  # noqa: E402

from fixers.fix_all import FixAll  # noqa: E402


def _fixed(source: str) -> str:
    result = transform_module(FixAll(CodemodContext(filename="model.py")), source)
    return result.code if isinstance(result, TransformSuccess) else source


def _compiled(model: "torch.nn.Module", x: "torch.Tensor") -> Tuple[int, int]:
    """(graphs, torch calls in them) of one compiled call."""
    graphs, calls = [0], [0]

    def backend(gm: "torch.fx.GraphModule", example: object) -> object:
        graphs[0] += 1
        calls[0] += sum(
            1
            for node in gm.graph.nodes
            if node.op in ("call_function", "call_method") and "graphmend" not in str(node.target)
        )
        return gm.forward

    torch._dynamo.reset()
    with contextlib.redirect_stdout(io.StringIO()):
        torch.compile(model, backend=backend)(x)
    return graphs[0], calls[0]


@pytest.mark.parametrize("name", CASES)
def test_the_fixed_code_compiles_no_less(name: str, tmp_path: Path) -> None:
    """Fixed, a function compiles in no more graphs, and none of its torch calls leaves
    them (in eval mode; a caveat's condition is training)."""
    source, _ = CASES[name]
    original = load(source, tmp_path / "original").Model().eval()
    fixed = load(_fixed(source), tmp_path / "fixed").Model().eval()
    x = torch.randn(6)
    before, after = _compiled(original, x), _compiled(fixed, x)
    assert after[0] <= before[0] and after[1] >= before[1], (before, after)
    assert after[1] > 0


def test_the_caveat_is_what_training_costs(tmp_path: Path) -> None:
    """Where the break in the loop happens only in training, the fix removes a graph break in
    eval mode and, in training, leaves the function to run eagerly, as its caveat says."""
    source, _ = CASES["a break in the loop only in training"]
    original = load(source, tmp_path / "original").Model()
    fixed = load(_fixed(source), tmp_path / "fixed").Model()
    x = torch.randn(6)
    assert _compiled(original.eval(), x)[0] == 2 and _compiled(fixed.eval(), x)[0] == 1
    assert _compiled(original.train(), x)[0] == 1 and _compiled(fixed.train(), x) == (0, 0)
