"""Property-based semantics of FixAll: generated modules mixing every fixable pattern.

Hypothesis builds a ``forward`` from random blocks (logging, print, warnings, an `if` on a
tensor that only logs, data-dependent if/else and else-less updates, validation guards, static
conjuncts in front of tensor tests) and random inputs (shapes including empty ones, float32 and
float16, zeros, ties, inf, nan). For each example: the fix leaves no fixable finding and no
decline, its output parses, a second run changes nothing; eager(original) == eager(fixed)
(values bitwise, exception type and message, stdout, log records, warnings) == compiled(fixed)
(values, and a failed guard raises the same exception with the same message), with grad mode on
and off; and the compiled fixed code is one graph when no autograd is recorded. Examples are
derandomized, so CI sees the same ones every run.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, List

import pytest

torch = pytest.importorskip("torch")
hypothesis = pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from libcst.codemod import CodemodContext, TransformSuccess, transform_module  # noqa: E402
from test_fixers_dynamo import load, outcome, same, side_effects  # noqa: E402

from fixers.fix_all import FixAll  # noqa: E402
from flake8_graphmend.engine import analyze_source  # noqa: E402
from flake8_graphmend.verify.dynamo import recorded_graph_breaks  # noqa: E402

pytestmark = pytest.mark.slow

HEADER = (
    "import logging\nimport warnings\n\nimport torch\nfrom torch import nn\n\n"
    'logger = logging.getLogger("graphmend.fixture")\n\n\n'
    "class Model(nn.Module):\n    def forward(self, x):\n"
)
THRESHOLDS = ["0", "0.5", "-1.0", "2.0"]


@st.composite
def tensor_tests(draw: Any) -> str:
    """A tensor-valued condition on ``x`` (well defined for empty tensors too)."""
    threshold = draw(st.sampled_from(THRESHOLDS))
    atom = st.sampled_from(
        [
            f"x.sum() > {threshold}",
            f"(x > {threshold}).any()",
            f"(x >= {threshold}).all()",
            f"x.sum() == {threshold}",  # ties
            "torch.isnan(x).any()",
            "torch.isinf(x).any()",
        ]
    )
    first, second = draw(atom), draw(atom)
    return draw(
        st.sampled_from(
            [first, f"not ({first})", f"({first}) and ({second})", f"({first}) or ({second})"]
        )
    )


@st.composite
def blocks(draw: Any, index: int) -> List[str]:
    """One statement group of ``forward``; ``index`` keeps messages and names distinct."""
    test = draw(tensor_tests())
    scale = draw(st.sampled_from(["2", "0.5", "-1"]))
    kind = draw(
        st.sampled_from(
            ["log", "print", "warn", "log_if", "if_else", "update", "static", "guard", "return"]
        )
    )
    if kind == "log":
        return [f'logger.warning("step %d of %s", {index}, "forward")']
    if kind == "print":
        return [f'print("block", {index}, sep=": ")']
    if kind == "warn":
        return [f'warnings.warn("block {index} is deprecated", FutureWarning)']
    if kind == "log_if":  # deferred as a whole, tensor printed, the warning once a location
        return [f"if {test}:", f'    logger.warning("block %d holds", {index})',
                '    print("x:", x)', "else:",
                f'    warnings.warn("block {index} does not hold", FutureWarning)']
    if kind == "if_else":
        return [f"if {test}:", f"    y{index} = x * {scale}", "else:", f"    y{index} = x - 1",
                f"x = y{index} + 0"]
    if kind == "update":
        return [f"if {test}:", f"    x = x + {scale}"]
    if kind == "static":
        return [f"if x.dim() == 1 and ({test}):", f"    x = x * {scale}"]
    if kind == "guard":
        return [f"if {test}:", f'    raise ValueError("guard {index} failed")']
    return [f"if {test}:", f"    return x * {scale}"]


@st.composite
def modules(draw: Any) -> str:
    count = draw(st.integers(1, 4))
    lines: List[str] = []
    for index in range(count):
        block = draw(blocks(index))
        lines += block
        if block[-1].startswith("    return"):
            break  # a return in a branch needs the statement after it to be `return`
    lines.append("return x + 1")
    return HEADER + "".join(f"        {line}\n" for line in lines)


VALUES = st.sampled_from([0.0, 1.0, -1.0, 0.5, 2.0, -2.5, *map(float, ("inf", "-inf", "nan"))])


@st.composite
def inputs(draw: Any) -> torch.Tensor:
    shape = draw(st.sampled_from([(0,), (1,), (3,), (4,)]))
    dtype = draw(st.sampled_from([torch.float32, torch.float16]))
    values = [draw(VALUES) for _ in range(shape[0])]
    return torch.tensor(values, dtype=dtype).reshape(shape)


def fixed_source(source: str) -> str:
    result = transform_module(FixAll(CodemodContext(filename="model.py")), source)
    assert isinstance(result, TransformSuccess), result
    declines = [w for w in result.warning_messages if " not fixed: " in w]
    assert declines == [], declines
    ast.parse(result.code)
    assert [f for f in analyze_source(result.code, "model.py") if f.fixer or f.decline] == []
    again = transform_module(FixAll(CodemodContext(filename="model.py")), result.code)
    assert not isinstance(again, TransformSuccess) or again.code == result.code
    return result.code


def observed(fn: Any, x: torch.Tensor) -> tuple:
    """(outcome, stdout, log records, warnings) of one call."""
    with side_effects() as (stdout, handler, caught):
        result = outcome(fn, x)
    records = [(r.levelname, r.getMessage()) for r in handler.records]
    return result, stdout.getvalue(), records, [(str(w.message), w.category) for w in caught]


def equal_outcomes(a: Any, b: Any) -> bool:
    if isinstance(a, tuple) and len(a) == 2 and isinstance(a[0], type):
        return a == b
    return same(a, b)


@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(source=modules(), xs=st.lists(inputs(), min_size=2, max_size=3), grad=st.booleans())
def test_fixed_code_computes_what_the_original_computes(
    tmp_path_factory: pytest.TempPathFactory, source: str, xs: List[torch.Tensor], grad: bool
) -> None:
    folder = tmp_path_factory.mktemp("property")
    fixed_code = fixed_source(source)
    original = load(source, folder / "original").Model()
    fixed = load(fixed_code, folder / "fixed").Model()
    torch._dynamo.reset()
    graphs: List[Any] = []

    def counting_backend(graph_module: Any, example_inputs: Any) -> Any:
        graphs.append(graph_module)
        return graph_module.forward

    compiled = torch.compile(fixed, backend=counting_backend)
    with torch.set_grad_enabled(grad):
        for x in xs:
            expected = observed(original, x)
            eager = observed(fixed, x)
            assert equal_outcomes(eager[0], expected[0]) and eager[1:] == expected[1:], (
                source, fixed_code, x, expected, eager)
            graphs.clear()
            with recorded_graph_breaks() as sites:
                got = observed(compiled, x)
            assert equal_outcomes(got[0], expected[0]), (source, fixed_code, x, expected, got)
            assert got[1:] == expected[1:], (source, fixed_code, x, expected, got)
            if graphs:  # compiled this call (not a cache hit): no break in the fixed code
                breaks = [str(site) for site in sites]
                assert breaks == [] and len(graphs) == 1, (source, fixed_code, breaks)


def test_regression_path_of_a_generated_module_is_a_real_file(tmp_path: Path) -> None:
    """The generator's header is a valid module whose forward the fixer reaches."""
    source = HEADER + '        print("only")\n        return x\n'
    assert "_graphmend_print" in fixed_source(source)
