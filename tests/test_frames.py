"""A fix must not leave a break in a loop the first of its frame (``planning/frames.py``).

Dynamo runs a frame whose first break is in a loop wholly eagerly. Fixing the last break
before such a loop would lose the graph compiled before it (torch 2.13, measured below):
those fixes are declined, or, where the break in the loop is conditional, kept with a caveat.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from textwrap import dedent, indent
from typing import Dict, Tuple

import pytest

from flake8_graphmend.engine import analyze_source
from flake8_graphmend.registry import RULES_BY_CODE

HEADER = "import torch\nfrom torch import nn\n\n"
#: A loop with an ``.item()``: a break no fixer takes.
LOOP_BREAK = """
        for i in range(2):
            n = int(h.abs().sum().item()) % 3 + 1
            h = h[:n] * 2
        return h
"""
#: A submodule whose ``forward`` keeps a break, and a helper method that does.
LAYER = """class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Linear(6, 6)

    def forward(self, h):
        h = self.scale(h).relu()
        return h * (int(h.abs().sum().item()) % 3 + 1)


"""
LAYERS = (
    "        self.embed = nn.Linear(6, 6)\n"
    "        self.layers = nn.ModuleList([Layer() for _ in range(2)])"
)
STEP = """
    def step(self, h):
        return h * (int(h.abs().sum().item()) % 3 + 1)
"""
#: The outcomes a line's marker comment states.
OUTCOMES = ("fixed", "declined", "cautioned")


def _model(body: str, loop: str = LOOP_BREAK, before: str = "", init: str = "") -> str:
    """A module: ``before`` (classes), then ``Model`` whose forward is ``body`` and ``loop``
    (``init``: its ``__init__`` body, ``step``: its helper method)."""
    constructor = f"    def __init__(self):\n        super().__init__()\n{init}\n\n" if init else ""
    forward = "    def forward(self, x):\n" + indent(dedent(body), " " * 8)
    source = f"{before}class Model(nn.Module):\n{constructor}{forward.rstrip()}{loop}{STEP}"
    return HEADER + source


#: A loop whose break happens only in training.
TRAINING_BREAK = """
        for i in range(2):
            if self.training:
                n = int(h.abs().sum().item()) % 3 + 1
                h = h[:n]
            h = h * 2
        return h
"""
#: name -> source whose fixable sites say, in a comment, what becomes of their fix
CASES: Dict[str, str] = {
    "the last print before the loop": _model(
        """\
        h = torch.relu(x) * 3
        print("first")  # fixed
        h = h.sin()
        print("second")  # declined
        h = h.cos()"""
    ),
    "a deferred if before the loop, and its print": _model(
        """\
        h = torch.relu(x) * 3
        print("first")  # fixed
        if h.sum() > 0:  # declined
            print("positive")  # declined
        h = h.cos()"""
    ),
    "a log call whose helper takes an .item()": _model(
        """\
        h = torch.relu(x) * 3
        print("mean", h.mean().item())  # declined
        h = h.cos()"""
    ),
    "prints fixed in an earlier loop": _model(
        """\
        h = torch.relu(x) * 3
        print("start")  # declined
        for i in range(2):
            print("step", i)  # fixed
            h = h * 2"""
    ),
    "a break in the loop's else": _model(
        """\
        h = torch.relu(x) * 3
        print("start")  # fixed
        for i in range(2):
            h = h * 2
        else:
            n = int(h.abs().sum().item()) % 3 + 1""",
        "\n        return h[:n]\n",
    ),
    "a break in the loop only in training": _model(
        """\
        h = torch.relu(x) * 3
        print("start")  # cautioned
        h = h.sin()""",
        TRAINING_BREAK,
    ),
    # a site that runs only in training, before a loop that breaks in training: fixed, it
    # would only ever leave the loop's break the first of its frame
    "a training-only site before a break in the loop in training": _model(
        """\
        h = torch.relu(x) * 3
        if self.training:
            print("training")  # declined
        h = h.sin()""",
        TRAINING_BREAK,
    ),
    "no break left in the loop": _model(
        """\
        h = torch.relu(x) * 3
        print("start")  # fixed""",
        """
        for i in range(2):
            print("step", i)  # fixed
            h = h * 2
        return h
""",
    ),
    "any() over a generator of tensors": _model(
        """\
        h = torch.relu(x) * 3
        print("start")  # declined""",
        """
        if any(t.isnan().any() for t in (x, h)):
            h = h.nan_to_num()
        return h * 2
""",
    ),
    "max() of the numbers of a generator": _model(
        """\
        h = torch.relu(x) * 3
        print("start")  # declined""",
        """
        peak = max(t.abs().max().item() for t in (x, h))
        return h / peak
""",
    ),
    "all() over a list of tensors": _model(
        """\
        h = torch.relu(x) * 3
        print("start")  # fixed""",
        """
        if all([x.sum() > 0, h.mean() < 1]):
            h = h * 3
        return h * 2
""",
    ),
    "a sequential whose layer breaks, called in a loop": _model(
        """\
        h = torch.relu(self.embed(x)) * 3
        print("start")  # declined
        h = h.sin()""",
        """
        for _ in range(2):
            h = self.seq(h)
        return h
""",
        before=LAYER,
        init=LAYERS + "\n        self.seq = nn.Sequential(nn.Linear(6, 6), Layer())",
    ),
    "a loop over layers whose forward breaks": _model(
        """\
        h = torch.relu(self.embed(x)) * 3
        print("start")  # declined
        h = h.sin()""",
        """
        for layer in self.layers:
            h = layer(h)
        return h
""",
        before=LAYER,
        init=LAYERS,
    ),
    "the children of a module list, copied into a list": _model(
        """\
        h = torch.relu(self.embed(x)) * 3
        print("start")  # declined
        h = h.sin()""",
        """
        for layer in list(self.layers.children()):
            h = layer(h)
        return h
""",
        before=LAYER,
        init=LAYERS,
    ),
    "layers zipped with norms": _model(
        """\
        h = torch.relu(self.embed(x)) * 3
        print("start")  # declined
        h = h.sin()""",
        """
        for layer, norm in zip(self.layers, self.norms):
            h = norm(layer(h))
        return h
""",
        before=LAYER,
        init=LAYERS + "\n        self.norms = nn.ModuleList([nn.LayerNorm(6) for _ in range(2)])",
    ),
    "layers called by index": _model(
        """\
        h = torch.relu(self.embed(x)) * 3
        print("start")  # declined
        h = h.sin()""",
        """
        for i in range(len(self.layers)):
            h = self.layers[i](h)
        return h
""",
        before=LAYER,
        init=LAYERS,
    ),
    "a slice of the layers, by position": _model(
        """\
        h = torch.relu(self.embed(x)) * 3
        print("start")  # declined
        h = h.sin()""",
        """
        for i, layer in enumerate(self.layers[1:]):
            h = layer(h) + i
        return h
""",
        before=LAYER,
        init=LAYERS,
    ),
    "the values of a module dict, reversed": _model(
        """\
        h = torch.relu(self.embed(x)) * 3
        print("start")  # declined
        h = h.sin()""",
        """
        for block in self.blocks.values():
            h = block(h)
        for layer in reversed(self.layers):
            h = layer.forward(h)
        return h
""",
        before=LAYER,
        init=LAYERS + "\n        self.blocks = nn.ModuleDict({'a': Layer()})",
    ),
    "layers that are copies of one": _model(
        """\
        h = torch.relu(self.embed(x)) * 3
        print("start")  # declined
        h = h.sin()""",
        """
        for layer in self.layers:
            h = layer(h)
        return h
""",
        before="import copy\n\n" + LAYER,
        init="        self.embed = nn.Linear(6, 6)\n"
        "        self.layers = nn.ModuleList([copy.deepcopy(Layer()) for _ in range(2)])",
    ),
    "a function run eagerly, called in the loop": _model(
        """\
        h = torch.relu(x) * 3
        print("start")  # declined
        h = h.sin()""",
        """
        for i in range(2):
            h = record(h * 2)
        return h
""",
        before="@torch.compiler.disable\ndef record(h):\n    return h.clone()\n\n\n",
    ),
    "a loop that calls a helper method that breaks": _model(
        """\
        h = torch.relu(x) * 3
        print("start")  # declined
        h = h.sin()""",
        """
        for i in range(2):
            h = self.step(h)
        return h
""",
    ),
    # checkpointing and not, both break: the conditional break comes first, but the loop
    # always breaks
    "a layer checkpointed or not, both breaking": _model(
        """\
        h = torch.relu(x) * 3
        print("start")  # declined
        h = h.sin()""",
        """
        for layer in self.layers:
            if self.training:
                h = torch.utils.checkpoint.checkpoint(layer, h, use_reentrant=False)
            else:
                h = layer(h)
        return h
""",
        before=LAYER,
        init=LAYERS,
    ).replace("import torch\n", "import torch\nimport torch.utils.checkpoint\n", 1),
    "a helper that breaks between the fix and the loop": _model(
        """\
        h = torch.relu(x) * 3
        print("start")  # fixed
        h = self.step(h.sin())"""
    ),
}


def _expected(source: str) -> Dict[int, str]:
    return {
        number: line.rsplit("# ", 1)[1]
        for number, line in enumerate(source.splitlines(), start=1)
        if line.rsplit("# ", 1)[-1] in OUTCOMES
    }


def _outcome(finding) -> str:  # type: ignore[no-untyped-def]
    if finding.fixer is None:
        return "declined"
    return "cautioned" if finding.caveat and "is in a loop" in finding.caveat else "fixed"


@pytest.mark.parametrize("name", CASES)
def test_fixes_before_a_break_in_a_loop(name: str) -> None:
    source = CASES[name]
    expected = _expected(source)
    findings = analyze_source(source, "model.py")
    fixable = [
        f for f in findings if f.code.startswith(("GM1", "GM2")) and RULES_BY_CODE[f.code].fixer
    ]
    got = {f.line: _outcome(f) for f in fixable}
    assert got == expected, [f.text for f in findings]
    for finding in findings:
        if expected.get(finding.line) == "declined":
            assert "is in a loop" in (finding.decline or ""), finding.text


def test_the_decline_and_the_caveat_name_the_break_in_the_loop() -> None:
    def finding_at(name: str, text: str):  # type: ignore[no-untyped-def]
        source = CASES[name]
        line = next(n for n, t in enumerate(source.splitlines(), start=1) if text in t)
        return next(f for f in analyze_source(source, "model.py") if f.line == line), line

    declined, line = finding_at("the last print before the loop", 'print("second")')
    assert f"the next break left, line {line + 3} (GM401), is in a loop" in declined.message
    cautioned, line = finding_at("a break in the loop only in training", 'print("start")')
    assert (
        f"when `self.training`, the break of line {line + 4} (GM401) is in a loop"
        in cautioned.message
    )
    assert cautioned.message.count("; fix: graphmend.DeferSideEffects (when") == 1
    declined, line = finding_at("a loop over layers whose forward breaks", 'print("start")')
    assert f"line {line + 3} (`layer()`, which breaks at line 11), is in a loop" in declined.message


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
    source = CASES[name]
    # the same weights in both arms: a layer's `int(h.abs().sum().item())` compiles again
    # for each new value, so arms of other weights may compile a different number of times
    torch.manual_seed(0)
    original = load(source, tmp_path / "original").Model().eval()
    torch.manual_seed(0)
    fixed = load(_fixed(source), tmp_path / "fixed").Model().eval()
    x = torch.randn(6)
    before, after = _compiled(original, x), _compiled(fixed, x)
    assert after[0] <= before[0] and after[1] >= before[1], (before, after)
    assert after[1] > 0


def test_the_caveat_is_what_training_costs(tmp_path: Path) -> None:
    """Where the break in the loop happens only in training, the fix removes a graph break in
    eval mode and, in training, leaves the function to run eagerly, as its caveat says."""
    source = CASES["a break in the loop only in training"]
    original = load(source, tmp_path / "original").Model()
    fixed = load(_fixed(source), tmp_path / "fixed").Model()
    x = torch.randn(6)
    assert _compiled(original.eval(), x)[0] == 2 and _compiled(fixed.eval(), x)[0] == 1
    assert _compiled(original.train(), x)[0] == 1 and _compiled(fixed.train(), x) == (0, 0)
