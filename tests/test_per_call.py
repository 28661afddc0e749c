"""Values that change from one call to the next must not become constants of the fixed graph
(``planning/per_call.py``).

A str or float that a deferred call or a check is given is a constant of the graph, guarded by
its value, and so is a text made in the graph from an int (a size formatted into a message).
Where it changes with every call, each call compiles the graph again, and past torch's
recompile limit the function runs eagerly, where the original (which broke the graph at the
call) stayed compiled. Sizes are passed to the helper as they are and formatted there; an
argument that is not known to be an int or a bool, and that the function computes nothing
else with, is declined.
"""

from __future__ import annotations

import contextlib
import io
import logging
from pathlib import Path
from textwrap import dedent
from typing import Optional

import pytest

from flake8_graphmend.engine import analyze_source

HEADER = "import logging\n\nimport torch\nfrom torch import nn\n\nlog = logging.getLogger('m')\n\n"

DECLINED = {
    "a float argument printed": (
        """
        class Model(nn.Module):
            def forward(self, x, lr):
                print("lr", lr)
                return x * 2
        """,
        "the call passes `lr`, an argument of forward()",
    ),
    "a str argument logged": (
        """
        class Model(nn.Module):
            def forward(self, x, name):
                log.info("batch %s", name)
                return x * 2
        """,
        "the call passes `name`",
    ),
    "a str argument in a guard's message": (
        """
        class Model(nn.Module):
            def forward(self, x, path):
                if torch.isnan(x).any():
                    raise ValueError(f"nan in the batch of {path}")
                return x * 2
        """,
        "the check passes `path`",
    ),
    "an argument formatted into a printed text": (
        """
        class Model(nn.Module):
            def forward(self, x, temperature: float):
                print(f"temperature {temperature:.2f}")
                return x * 2
        """,
        "the call passes `temperature`",
    ),
    "a float computed from a size": (
        """
        class Model(nn.Module):
            def forward(self, x):
                fill = x.shape[1] / 16
                print("fill", fill)
                return x * 2
        """,
        "a float computed from values that change between calls",
    ),
    "a size turned into a float": (
        """
        class Model(nn.Module):
            def forward(self, x):
                print("width", float(x.shape[1]))
                return x * 2
        """,
        "a float computed from values that change between calls",
    ),
    "an argument bound again where it is None": (
        """
        class Model(nn.Module):
            def forward(self, x, temperature=None):
                if temperature is None:
                    temperature = 1.0
                print("temperature", temperature)
                return x * 2
        """,
        "the call passes `temperature`",
    ),
    "an argument only compared before it is logged": (
        """
        class Model(nn.Module):
            def forward(self, x, lr):
                if lr > 1.0:
                    log.warning("large learning rate %s", lr)
                return x * 2
        """,
        "the call passes `lr`",
    ),
    "an element of *args": (
        """
        class Model(nn.Module):
            def forward(self, x, *extra):
                print("extra", extra[0])
                return x * 2
        """,
        "the call passes `extra`",
    ),
}

FIXED = {
    "an argument the function computes with": """
        class Model(nn.Module):
            def forward(self, x, scale):
                print("scale", scale)
                return x * scale
        """,
    "an argument declared an int": """
        class Model(nn.Module):
            def forward(self, x, step: int):
                print(f"step {step}")
                return x * 2
        """,
    "an argument used as a tensor": """
        class Model(nn.Module):
            def forward(self, ids):
                negative = (ids < 0).sum()
                print("ids:", ids)
                return ids + negative
        """,
}


def _decline(source: str) -> Optional[str]:
    findings = [
        f for f in analyze_source(HEADER + dedent(source), "m.py") if f.code[2] in "13"
    ]
    assert len(findings) == 1, [f.text for f in findings]
    return findings[0].decline


@pytest.mark.parametrize("name", DECLINED)
def test_a_value_that_changes_with_each_call_is_declined(name: str) -> None:
    source, reason = DECLINED[name]
    decline = _decline(source)
    assert decline is not None and reason in decline, decline
    assert "each new value would compile it again" in decline


@pytest.mark.parametrize("name", FIXED)
def test_a_value_the_graph_holds_anyway_is_fixed(name: str) -> None:
    assert _decline(FIXED[name]) is None


torch = pytest.importorskip("torch")

from libcst.codemod import CodemodContext, TransformSuccess, transform_module  # noqa: E402
from test_fixers_dynamo import load  # noqa: E402

from fixers.fix_all import FixAll  # noqa: E402

#: Sizes formatted into a printed text, a logged one and a guard's message.
SIZES = HEADER + dedent(
    """
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(50, 8)

        def forward(self, ids):
            batch, n = ids.shape
            if (ids < 0).any():
                raise ValueError(f"negative id in a batch of length {n}")
            if torch.isnan(self.embed.weight).any():
                print(f"nan weights for {batch} rows")
            h = self.embed(ids)
            print(f"length {h.shape[1]} in {ids.size(0)} rows")
            log.warning(f"{n} tokens")
            return h.relu().mean(1)
    """
)


def _graphs(module: object, lengths: range) -> int:
    graphs = [0]

    def backend(gm: "torch.fx.GraphModule", example: object) -> object:
        graphs[0] += 1
        return gm.forward

    torch.manual_seed(0)
    model = module.Model()  # type: ignore[attr-defined]
    torch._dynamo.reset()
    compiled = torch.compile(model, backend=backend)
    logging.disable(logging.CRITICAL)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            for n in lengths:
                compiled(torch.randint(0, 50, (2, n)))
    finally:
        logging.disable(logging.NOTSET)
    return graphs[0]


def test_sizes_formatted_by_the_helper_do_not_compile_each_length_again(tmp_path: Path) -> None:
    result = transform_module(FixAll(CodemodContext(filename="model.py")), SIZES)
    assert isinstance(result, TransformSuccess)
    assert "_graphmend_print(h.shape[1], ids.size(0))" in result.code
    lengths = range(3, 15)  # more lengths than torch's recompile limit (8)
    original = _graphs(load(SIZES, tmp_path / "original"), lengths)
    fixed = _graphs(load(result.code, tmp_path / "fixed"), lengths)
    # static, then dynamic: the text made in the graph had fixed each length (8 graphs, then
    # the function ran eagerly)
    assert fixed == 2 and fixed < original, (original, fixed)
